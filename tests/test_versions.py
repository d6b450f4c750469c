"""Versions and fingerprints: content changes need a minor bump, scoring changes a major one (amendment 001 §9)."""

import re
import shutil
from pathlib import Path

import pytest

from esac_kit.fingerprints import check_versions, compute, read_versions, release, required_bump
from esac_kit.suite import load_suite

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def items_copy(tmp_path):
    shutil.copytree(ROOT / "items", tmp_path / "items")
    return tmp_path / "items"


def test_the_suite_on_disk_is_the_recorded_version():
    problems = check_versions(load_suite("gi"))
    assert problems == [], "\n".join(problems)


def test_every_recorded_version_is_in_the_changelog_with_its_class():
    changelog = (ROOT / "specs" / "esac-gi.md").read_text()
    for record in read_versions(load_suite("gi")):
        assert re.search(rf"^\| {re.escape(record.version)} \| {record.change} \|", changelog, re.M), record.version


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_changed_rubric_weight_is_a_major_change(items_copy):
    before = compute(load_suite("gi", items_copy))
    _edit(items_copy / "gi" / "calibration-usage-check.toml", "weight = 1.5", "weight = 1.25")
    after = compute(load_suite("gi", items_copy))
    assert required_bump(before, after) == "major" and after.content == before.content
    problems = check_versions(load_suite("gi", items_copy))
    assert len(problems) == 1 and "scoring fingerprint changed" in problems[0] and "2.0" in problems[0]


def test_a_changed_prompt_wording_is_a_minor_change(items_copy):
    before = compute(load_suite("gi", items_copy))
    _edit(items_copy / "gi" / "writing-lay-explainer.toml", "Requirements:", "Requirements for the piece:")
    after = compute(load_suite("gi", items_copy))
    assert required_bump(before, after) == "minor" and after.scoring == before.scoring
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


def test_a_wrong_bump_in_the_history_is_reported(items_copy):
    versions = items_copy / "gi" / "versions.toml"
    first = read_versions(load_suite("gi", items_copy))[0]
    versions.write_text(versions.read_text() + f'\n[[versions]]\nversion = "1.1"\nchange = "minor"\n'
                        f'content = "{first.content}"\nscoring = "0000000000000000"\n')
    _edit(items_copy / "gi" / "manifest.toml", 'version = "1.0"', 'version = "1.1"')
    problems = check_versions(load_suite("gi", items_copy))
    assert any("must be 2.0" in p for p in problems)
