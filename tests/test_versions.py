"""Versions and fingerprints: content changes need a minor bump, scoring changes a major one (amendment 001 §9).
Code counts through each kind's import closure, and the public pool's instances are digested too, so a change to
any module a generator or a score depends on fails until it is released."""

import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

from esac_kit.cli import main
from esac_kit.fingerprints import (bank_status, check_versions, closure, compute, read_versions, release,
                                   required_bump, roots)
from esac_kit.suite import load_suite
from runkit import esac_run, load_report, pin_as_released, run_folder_of

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def items_copy(tmp_path):
    shutil.copytree(ROOT / "items", tmp_path / "items")
    return pin_as_released(tmp_path / "items")


@pytest.mark.parametrize("suite", ["gi", "ag"])
def test_the_suite_on_disk_is_the_recorded_version_or_its_open_draft(suite):
    loaded = load_suite(suite)
    problems = check_versions(loaded)
    assert problems == [], "\n".join(problems)
    history = read_versions(loaded)
    assert history[-1].version == loaded.manifest.version
    assert all(re.fullmatch(r"[0-9a-f]{16}", r.instances) for r in history if r.status == "released")
    assert all(r.status == "released" for r in history[:-1])  # only the newest entry may be a draft


def test_every_recorded_version_is_in_the_changelog_with_its_class():
    changelog = (ROOT / "specs" / "esac-gi.md").read_text()
    for record in read_versions(load_suite("gi")):
        assert re.search(rf"^\| {re.escape(record.version)} \| {record.change} \|", changelog, re.M), record.version


def test_closures_follow_imports_and_stop_at_the_self_checks():
    generation, scoring, stops = roots(load_suite("gi"))
    content_code, scoring_code = closure(generation, stops), closure(scoring, stops | {"esac_kit.rng"})
    assert {"esac_kit.rng", "esac_kit.instances", "esac_kit.gi.generators.quant"} <= set(content_code)
    assert {"esac_kit.gi.judge", "esac_kit.scoring", "esac_kit.sandbox", "esac_kit.report"} <= set(scoring_code)
    assert not {"esac_kit.gi.verify", "esac_kit.gi.rubric_check", "esac_kit.runner", "esac_kit.fingerprints",
                "esac_kit"} & set(content_code + scoring_code)
    generation, scoring, stops = roots(load_suite("ag"))
    assert "esac_kit.ag.tasks.data" in closure(scoring, stops)  # AG checks live in the task generators


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_a_changed_rubric_weight_is_a_major_change(items_copy):
    before = compute(load_suite("gi", items_copy))
    _edit(items_copy / "gi" / "calibration-usage-check.toml", "weight = 1.5", "weight = 1.25")
    after = compute(load_suite("gi", items_copy))
    assert required_bump(before, after) == "major" and after.content == before.content
    problems = check_versions(load_suite("gi", items_copy))
    assert len(problems) == 1 and "scoring fingerprint changed" in problems[0] and "2.0" in problems[0]
    assert problems[0].startswith("ESAC-GI: ")


def test_a_changed_prompt_wording_is_a_minor_change(items_copy):
    before = compute(load_suite("gi", items_copy))
    _edit(items_copy / "gi" / "writing-lay-explainer.toml", "Requirements:", "Requirements for the piece:")
    after = compute(load_suite("gi", items_copy))
    assert required_bump(before, after) == "minor" and after.scoring == before.scoring
    assert after.instances != before.instances
    assert "1.1" in check_versions(load_suite("gi", items_copy))[0]


@pytest.mark.parametrize("edit, change", [
    (("manifest.toml", "pass_fraction = 0.6", "pass_fraction = 0.65"), "major"),
    (("manifest.toml", "temperature = 0.7", "temperature = 0.5"), "major"),
    (("manifest.toml", "public_seed = \"esac-gi-public-2026-09-22\"", "public_seed = \"esac-gi-public-2027\""),
     "minor"),
])
def test_thresholds_and_the_judge_pin_are_scoring_and_the_seed_is_content(items_copy, edit, change):
    before = compute(load_suite("gi", items_copy))
    _edit(items_copy / "gi" / edit[0], edit[1], edit[2])
    assert required_bump(before, compute(load_suite("gi", items_copy))) == change


def test_release_records_the_bump_and_the_guard_then_passes(items_copy, tmp_path):
    _edit(items_copy / "gi" / "writing-lay-explainer.toml", "Requirements:", "Requirements for the piece:")
    changelog = tmp_path / "changelog.md"
    changelog.write_text("| version | class |\n")
    record = release(load_suite("gi", items_copy), changelog)
    assert (record.version, record.change) == ("1.1", "minor")
    suite = load_suite("gi", items_copy)
    assert suite.manifest.version == "1.1" and check_versions(suite) == []
    assert "| 1.1 | minor |" in changelog.read_text()


def test_release_major_by_hand_writes_both_files_with_tomlkit_keeping_comments(items_copy, capsys):
    manifest, versions = items_copy / "gi" / "manifest.toml", items_copy / "gi" / "versions.toml"
    comments = [line for path in (manifest, versions) for line in path.read_text().splitlines()
                if line.lstrip().startswith("#") or "  # " in line]
    assert main(["fingerprints", "--items", str(items_copy), "--release"]) == 0
    assert "nothing changed: no release" in capsys.readouterr().out
    assert main(["fingerprints", "--items", str(items_copy), "--release", "--major"]) == 0
    assert "released 2.0 (major)" in capsys.readouterr().out
    text = manifest.read_text() + versions.read_text()
    assert all(line in text for line in comments)
    assert 'version = "2.0"' in manifest.read_text()
    suite = load_suite("gi", items_copy)
    history = read_versions(suite)
    assert [(r.version, r.change) for r in history] == [("1.0", "initial"), ("2.0", "major")]
    assert history[1].instances != history[0].instances  # the major enters every item's seed derivation
    assert check_versions(suite) == []


def test_major_without_release_is_refused(capsys):
    assert main(["fingerprints", "--major"]) == 2
    assert "--major goes with --release" in capsys.readouterr().err


def test_a_wrong_bump_in_the_history_is_reported(items_copy):
    versions = items_copy / "gi" / "versions.toml"
    first = read_versions(load_suite("gi", items_copy))[0]
    versions.write_text(versions.read_text() + f'\n[[versions]]\nversion = "1.1"\nchange = "minor"\n'
                        f'content = "{first.content}"\nscoring = "0000000000000000"\n'
                        f'instances = "{first.instances}"\n')
    _edit(items_copy / "gi" / "manifest.toml", 'version = "1.0"', 'version = "1.1"')
    problems = check_versions(load_suite("gi", items_copy))
    assert any("ESAC-GI 1.1" in p and "must be 2.0" in p for p in problems)


# ---------------------------------------------------------------- code changes, checked in a copy of the kit

def kit_copy(tmp_path: Path) -> Path:
    """A copy of the package and the items, to change code without touching the kit under test."""
    root = tmp_path / "kit"
    shutil.copytree(ROOT / "esac_kit", root / "esac_kit")  # with its bytecode, valid for every unchanged file
    shutil.copytree(ROOT / "items", root / "items")
    pin_as_released(root / "items")
    return root


def in_copy(root: Path, *commands: list[str]) -> tuple[int, str]:
    """Run `esac-kit` commands in a fresh interpreter that imports the copy; the worst exit code and the output.
    `-S` keeps out the editable install's finder (it maps esac_kit to this tree); the site folders come in by hand."""
    code = ("import os, sys; sys.path[:0] = [sys.argv[1], *sys.argv[2].split(os.pathsep)]\n"
            "import esac_kit; assert esac_kit.__file__.startswith(sys.argv[1]), esac_kit.__file__\n"
            "from esac_kit.cli import main\n"
            "sys.exit(max(main(command.split()) for command in sys.argv[3:]))")
    env = {k: v for k, v in os.environ.items() if k != "ESAC_ITEMS"}
    done = subprocess.run([sys.executable, "-S", "-c", code, str(root), os.pathsep.join(site.getsitepackages()),
                           *(" ".join(c) for c in commands)], capture_output=True, text=True, cwd=root, env=env,
                          timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout + done.stderr


def check_in(root: Path, *suites: str) -> tuple[int, str]:
    """`esac-kit fingerprints` on each suite of a copy of the kit."""
    return in_copy(root, *(["fingerprints", "--suite", suite] for suite in suites))


def test_the_copy_is_the_recorded_version_before_any_change(tmp_path):
    code, output = check_in(kit_copy(tmp_path), "gi", "ag")
    assert code == 0 and output.count("fingerprints match the recorded version") == 2, output


def test_a_one_line_rng_change_fails_both_suites_as_a_minor_change(tmp_path):
    root = kit_copy(tmp_path)
    _edit(root / "esac_kit" / "rng.py", 'f"{suite}/{item_id}/{major}"', 'f"{suite}:{item_id}/{major}"')
    code, output = check_in(root, "gi", "ag")
    assert code == 1, output
    for name in ("ESAC-GI", "ESAC-AG"):
        assert re.search(rf"PROBLEM: {name}: the content fingerprint and the public pool's instances changed since "
                         rf"1\.0: a minor change, release it as 1\.1", output), output


def test_a_change_in_a_helper_a_generator_imports_inside_a_function_is_a_minor_change(tmp_path):
    root = kit_copy(tmp_path)
    generators = root / "esac_kit" / "gi" / "generators"
    (generators / "wording.py").write_text('"""A helper of the quant generators."""\n\nPREFIX = ""\n')
    _edit(generators / "quant.py", "\ndef ", "\ndef _prefix() -> str:\n    from esac_kit.gi.generators.wording import "
          "PREFIX\n\n    return PREFIX\n\n\ndef ")
    code, output = check_in(root, "gi")
    assert code == 1 and "release it as 1.1" in output, output
    assert in_copy(root, ["fingerprints", "--release"])[0] == 0
    assert check_in(root, "gi")[0] == 0  # 1.1 is recorded
    _edit(generators / "wording.py", 'PREFIX = ""', 'PREFIX = "Note: "')
    code, output = check_in(root, "gi")
    assert code == 1 and "ESAC-GI: the content fingerprint changed since 1.1: a minor change, release it as 1.2" \
        in output, output


@pytest.mark.parametrize("module, old, new, suites", [
    ("gi/judge.py", "JUDGE_REPLICATES = 2", "JUDGE_REPLICATES = 3", ["ESAC-GI"]),
    ("scoring.py", "return sum(observation_scores) / len(observation_scores)", "return min(observation_scores)",
     ["ESAC-GI", "ESAC-AG"]),
    ("gi/generators/quant.py", 'key=ExactKey(answer=text, answer_type="number")',
     'key=ExactKey(answer=text, answer_type="text")', ["ESAC-GI"]),  # the key protocol changed
    ("ag/tasks/data.py", '"the database was not modified", guard=True', '"the database was not modified"',
     ["ESAC-AG"]),
])
def test_replication_aggregation_key_protocols_and_ag_checks_are_major_changes(tmp_path, module, old, new, suites):
    root = kit_copy(tmp_path)
    _edit(root / "esac_kit" / module, old, new)
    code, output = check_in(root, "gi", "ag")
    assert code == 1, output
    for name in ("ESAC-GI", "ESAC-AG"):
        problem = re.search(rf"PROBLEM: {name}: .*", output)
        if name in suites:
            assert problem and "scoring fingerprint" in problem[0] and "a major change, release it as 2.0" in \
                problem[0], output
        else:
            assert problem is None, output


# ---------------------------------------------------------------- runs on a bank that is no recorded version

@pytest.mark.parametrize("suite", ["gi", "ag"])
def test_the_shipped_bank_is_its_recorded_version_or_an_unofficial_draft(suite):
    loaded = load_suite(suite)
    status = bank_status(loaded)
    if read_versions(loaded)[-1].status == "draft":
        assert status == (f"{loaded.manifest.name} {loaded.manifest.version} is an unreleased draft: its scores are "
                          f"comparable with nothing until it is released (amendment 001 §9)")
    else:
        assert status is None


def test_a_draft_is_opened_checked_and_released(items_copy, capsys):
    assert main(["fingerprints", "--items", str(items_copy), "--draft"]) == 0
    assert "nothing changed: no draft" in capsys.readouterr().out
    assert main(["fingerprints", "--items", str(items_copy), "--draft", "--major"]) == 0
    assert "opened 2.0 (major) as a draft" in capsys.readouterr().out
    suite = load_suite("gi", items_copy)
    assert suite.manifest.version == "2.0" and check_versions(suite) == []
    assert bank_status(suite).startswith("ESAC-GI 2.0 is an unreleased draft")
    _edit(items_copy / "gi" / "calibration-usage-check.toml", "weight = 1.5", "weight = 1.25")
    assert check_versions(load_suite("gi", items_copy)) == []  # work on the draft is not a problem
    assert main(["fingerprints", "--items", str(items_copy), "--draft"]) == 2  # one draft at a time
    capsys.readouterr()
    assert main(["fingerprints", "--items", str(items_copy), "--release"]) == 0
    history = read_versions(load_suite("gi", items_copy))
    assert [(r.version, r.change, r.status) for r in history] == [("1.0", "initial", "released"),
                                                                  ("2.0", "major", "released")]
    assert history[1].scoring == compute(load_suite("gi", items_copy)).scoring
    assert bank_status(load_suite("gi", items_copy)) is None


def test_a_minor_draft_with_a_scoring_change_is_a_problem(items_copy):
    assert main(["fingerprints", "--items", str(items_copy), "--suite", "ag", "--draft"]) == 0  # nothing to open
    _edit(items_copy / "gi" / "writing-lay-explainer.toml", "Requirements:", "Requirements for the piece:")
    assert main(["fingerprints", "--items", str(items_copy), "--draft"]) == 0
    assert load_suite("gi", items_copy).manifest.version == "1.1"
    _edit(items_copy / "gi" / "calibration-usage-check.toml", "weight = 1.5", "weight = 1.25")
    [problem] = check_versions(load_suite("gi", items_copy))
    assert "ESAC-GI 1.1 (draft): the scoring fingerprint changed since 1.0: the draft must be a major" in problem


def test_a_run_on_a_drifted_bank_is_unofficial_and_official_refuses_it(items_copy, tmp_path, capsys):
    _edit(items_copy / "ag" / "data-revenue-report.toml", 'title = "', 'title = "Drifted: ')
    task = ["--suite", "ag", "--items", str(items_copy), "--model", "scripted:reference", "--only",
            "data-revenue-report", "--no-cache"]
    assert esac_run(*task, "--official", "--reports", str(tmp_path / "refused")) == 2
    error = capsys.readouterr().err
    assert "--official: this run would be unofficial: the item bank is not the recorded ESAC-AG 1.0" in error
    assert not (tmp_path / "refused").exists()
    assert esac_run(*task, "--reports", str(tmp_path / "reports")) == 0
    report = load_report(run_folder_of(tmp_path / "reports"))
    assert report["official"] is False
    assert report["notes"][0].startswith("the item bank is not the recorded ESAC-AG 1.0: the content fingerprint")
