"""Report artefacts, the published schema, re-rendering, comparisons and the leaderboard."""

import json
import shutil
from pathlib import Path

import jsonschema
import pandas as pd
import pytest

from esac_kit.artefacts import SCHEMA_PATH, report_schema
from esac_kit.cli import main
from esac_kit.suite import load_suite
from esac_kit.loopback import LoopbackServer
from esac_kit.gi.judge import is_judge_request
from runkit import esac_run, reference_answers, run_folder_of


def half_right(answers):
    """A model that answers every second prompt with its reference and the rest with nothing useful."""
    seen = {}

    def answer(body):
        if is_judge_request(body):
            return answers(body)
        text = json.dumps(body["messages"])
        seen.setdefault(text, len(seen))
        return answers(body) if seen[text] % 2 == 0 else "ANSWER: 0"

    return answer


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    answers = reference_answers()
    script = {"answer": answers}
    folders = []
    with LoopbackServer(lambda body: script["answer"](body)) as server:
        for model, answer in (("alpha", answers), ("beta", half_right(answers))):
            script["answer"] = answer
            assert esac_run("--model", f"openai:{model}@{server.url}", "--judge", f"openai:j@{server.url}",
                            "--reports", str(reports / model), "--no-cache") == 0
            folders.append(run_folder_of(reports / model))
    return reports, folders


CHARTS = ("categories.png", "categories.svg", "items.png", "items.svg")


def test_a_run_folder_holds_every_artefact_and_the_report_validates(two_runs):
    _, (folder, _) = two_runs
    for name in ("report.json", "run.json", "observations.jsonl"):
        assert (folder / name).stat().st_size > 0, name
    # the run leaves the renders (pyarrow ~35 MB; vl-convert ~1 s, ~100 MB) to `esac-kit report`, which writes them all
    renders = ("observations.parquet", *CHARTS)
    assert not [name for name in renders if (folder / name).exists()]
    assert main(["report", str(folder)]) == 0
    for name in renders:
        assert (folder / name).stat().st_size > 0, name
    report = json.loads((folder / "report.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    assert (folder / "categories.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (folder / "categories.svg").read_text()[:400]
    table = pd.read_parquet(folder / "observations.parquet")
    assert len(table) == 29 + 4 * 7 and {"model_replicate", "judge_replicate", "score"} <= set(table.columns)
    for field in ("fingerprints", "pool", "model", "judge", "kit_version", "created_at", "reasons", "model_outcomes",
                  "retries", "tokens", "total_ci_exact", "total_label"):
        assert report[field] is not None, field
    assert all(c["label"] in ("PASS", "FAIL", "INCONCLUSIVE") for c in report["categories"])


def test_the_published_schema_is_the_report_model():
    assert json.loads(SCHEMA_PATH.read_text()) == json.loads(json.dumps(report_schema()))


def test_report_rerenders_the_same_scores(two_runs, capsys):
    _, (folder, _) = two_runs
    before = json.loads((folder / "report.json").read_text())
    (folder / "categories.png").unlink(missing_ok=True)  # written by the test above when it ran first
    assert main(["report", str(folder)]) == 0
    after = json.loads((folder / "report.json").read_text())
    assert (folder / "categories.png").exists()
    for key in ("total", "categories", "items", "passed", "reasons"):
        assert after[key] == before[key]


def test_compare_gives_paired_statistics(two_runs, capsys):
    _, (a, b) = two_runs
    assert main(["compare", str(a), str(b)]) == 0
    output = capsys.readouterr().out
    assert "p_holm" in output and "overall" in output.lower() and "mde" in output


def test_compare_reads_the_journals_and_agrees_with_the_rendered_tables(two_runs, tmp_path):
    from esac_kit.compare import paired_table
    from esac_kit.statistics import paired_comparison

    _, runs = two_runs
    copies = []
    for n, folder in enumerate(runs):
        copies.append(tmp_path / str(n))
        shutil.copytree(folder, copies[-1])
        (copies[-1] / "observations.parquet").unlink(missing_ok=True)  # a run writes none; `report` does
    from_journals = paired_table(*copies)
    for folder in copies:
        assert main(["report", str(folder)]) == 0
    suite = load_suite("gi")
    points = {c.id: c.points for c in suite.manifest.categories}
    tables = [pd.read_parquet(folder / "observations.parquet") for folder in copies]
    from_tables = paired_comparison(*tables, {i.id: i.weight for i in suite.items}, points)
    pd.testing.assert_frame_equal(from_journals, from_tables)
    assert from_journals["diff"].abs().max() > 0  # the half-right run differs: the test compares real numbers


# The shipped suite's version (1.0, or a draft such as 2.0), its major and the neighbours compare must tell apart.
CURRENT = load_suite("gi").manifest.version
MAJOR = int(CURRENT.split(".")[0])
NEXT_MAJOR, NEXT_MINOR = f"{MAJOR + 1}.0", f"{MAJOR}.{int(CURRENT.split('.')[1]) + 1}"


def _copy_with_version(folder: Path, tmp_path: Path, version: str) -> Path:
    copy = tmp_path / f"copy-{version}"
    shutil.copytree(folder, copy)
    report = json.loads((copy / "report.json").read_text())
    report["version"] = version
    (copy / "report.json").write_text(json.dumps(report))
    return copy


def test_compare_refuses_across_major_versions(two_runs, tmp_path, capsys):
    _, (a, b) = two_runs
    assert main(["compare", str(a), str(_copy_with_version(b, tmp_path, NEXT_MAJOR))]) == 2
    assert "major version" in capsys.readouterr().err


def test_compare_allows_and_notes_minor_versions(two_runs, tmp_path, capsys):
    _, (a, b) = two_runs
    assert main(["compare", str(a), str(_copy_with_version(b, tmp_path, NEXT_MINOR))]) == 0
    assert "minor versions differ" in capsys.readouterr().out


def test_compare_refuses_runs_on_different_instances(two_runs, tmp_path, capsys):
    _, (a, b) = two_runs
    copy = _copy_with_version(b, tmp_path, CURRENT)
    report = json.loads((copy / "report.json").read_text())
    report["items"][0]["instance_sha256"] = "0" * 64
    (copy / "report.json").write_text(json.dumps(report))
    assert main(["compare", str(a), str(copy)]) == 2
    assert "different instances" in capsys.readouterr().err


def test_compare_refuses_runs_judged_by_different_judges(two_runs, tmp_path, capsys):
    _, (a, b) = two_runs
    copy = _copy_with_version(b, tmp_path, CURRENT)
    report = json.loads((copy / "report.json").read_text())
    report["judge"]["name"] = "local"
    (copy / "report.json").write_text(json.dumps(report))
    assert main(["compare", str(a), str(copy)]) == 2
    assert "different judges" in capsys.readouterr().err


def test_leaderboard_lists_comparable_runs(two_runs, capsys):
    reports, _ = two_runs
    assert main(["leaderboard", str(reports)]) == 0
    output = capsys.readouterr().out
    assert f"GI {MAJOR}.x" in output and "openai:alpha" in output and "openai:beta" in output
    lines = [line for line in output.splitlines() if "openai:" in line]
    assert "alpha" in lines[0]  # sorted by total: the full-marks run first


def _with_scoring(folder: Path, tmp_path: Path, scoring: str) -> Path:
    copy = _copy_with_version(folder, tmp_path, CURRENT)
    report = json.loads((copy / "report.json").read_text())
    report["fingerprints"]["scoring"] = scoring
    (copy / "report.json").write_text(json.dumps(report))
    return copy


def test_compare_refuses_runs_of_one_version_under_different_scoring_fingerprints(two_runs, tmp_path, capsys):
    _, (a, b) = two_runs
    assert main(["compare", str(a), str(_with_scoring(b, tmp_path, "0" * 16))]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "different scoring fingerprints" in lines[0] and "0" * 16 in lines[0]


def test_leaderboard_leaves_out_a_run_under_another_scoring_fingerprint_and_says_so(two_runs, tmp_path, capsys):
    reports, (a, b) = two_runs
    board = tmp_path / "board"
    shutil.copytree(a, board / "alpha")
    drifted = _with_scoring(b, tmp_path, "0" * 16)
    shutil.copytree(drifted, board / "beta")
    assert main(["leaderboard", str(board)]) == 0
    output = capsys.readouterr().out
    note = next(line for line in output.splitlines() if line.startswith("NOTE:"))
    assert str(board / "beta") in note and "0" * 16 in note and "left out" in note
    table = output.split(note, 1)[1]
    assert "openai:alpha" in table and "openai:beta" not in table


def test_a_pass_fraction_of_65_percent_is_every_label_line_and_chart(tmp_path):
    from esac_kit.charts import category_chart
    from esac_kit.records import Report
    from esac_kit.report import format_report
    from esac_kit.report_tables import category_table

    items = tmp_path / "items"
    shutil.copytree(Path(__file__).resolve().parent.parent / "items", items)
    manifest = items / "gi" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace("pass_fraction = 0.6 ", "pass_fraction = 0.65 ", 1))
    references = reference_answers()

    def answer(body):  # the tank and crew items right, the other quant items wrong: quant below its line
        return references(body) if "tank" in json.dumps(body) or "crew" in json.dumps(body) else "ANSWER: 0"

    with LoopbackServer(answer) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--items", str(items), "--reports",
                        str(tmp_path / "r"), "--only", "quant-tank-mixing", "quant-crew-work", "quant-tax-ledger",
                        "quant-urn-posterior", "quant-arrangement-count") == 0
    report = Report.model_validate_json((run_folder_of(tmp_path / "r") / "report.json").read_text())
    assert report.pass_fraction == 0.65
    printed = format_report(report)
    assert "below 65%" in printed and "60%" not in printed
    table = category_table(report)
    assert (table.dropna(subset=["pass_line"])["pass_line"] == 0.65 * table.dropna(subset=["pass_line"])["max"]).all()
    chart = json.dumps(category_chart(report).to_dict())
    assert '"threshold": 0.65' in chart and "0.6," not in chart.replace("0.65", "")


def test_the_paired_comparison_of_ag_runs_counts_the_modifier_in_the_total(tmp_path):
    from esac_kit.compare import paired_table
    from esac_kit.statistics import OVERALL

    folders = []
    for policy in ("reference", "wasteful"):
        reports = tmp_path / policy
        assert esac_run("--suite", "ag", "--model", f"scripted:{policy}", "--no-cache", "--reports", str(reports),
                        "--only", "tools-order-fulfilment", "data-revenue-report") == 0
        folders.append(run_folder_of(reports))
    a, b = (json.loads((folder / "report.json").read_text()) for folder in folders)
    table = paired_table(*folders).set_index("category")
    assert table.at[OVERALL, "score_a"] == pytest.approx(a["total"])
    assert table.at[OVERALL, "score_b"] == pytest.approx(b["total"])
    assert a["modifier"] > b["modifier"]  # the wasteful agent earned less efficiency credit
    assert table.at["efficiency modifier", "diff"] == pytest.approx(b["modifier"] - a["modifier"])


def test_a_rerendered_incomplete_run_shows_no_total_and_compare_refuses_it(two_runs, tmp_path, capsys):
    _, (a, b) = two_runs
    folder = tmp_path / "cut"
    shutil.copytree(b, folder)
    journal = folder / "observations.jsonl"
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:-3]))  # as if aborted
    assert main(["report", str(folder)]) == 0
    printed = capsys.readouterr().out
    report = json.loads((folder / "report.json").read_text())
    assert report["total"] is None and report["passed"] is False and "incomplete run" in " ".join(report["reasons"])
    assert "total               — /" in printed
    assert main(["compare", str(a), str(folder)]) == 2
    assert "incomplete" in capsys.readouterr().err
