"""The notebooks as a person sees them: no traceback or stray output, numbers at a few decimals, wide tables that
keep every column, the model in the report's headline, one-line errors in app mode (where tracebacks only reach
the server log), an empty or failed run folder and an AG run that say why there is nothing to show."""

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from esac_kit import notebook_ui, variance, watch
from esac_kit.gi import workbench as bench
from esac_kit.providers import model_title
from esac_kit.suite import load_suite
from runkit import esac_run, run_folder_of
from test_notebooks import JUDGED, NOTEBOOKS, Pressed, notebook, runs, text_of  # noqa: F401 (runs: a fixture)

ROOT = NOTEBOOKS.parent
MOUNT = re.compile(r'__MARIMO_MOUNT_CONFIG__", \{\s*value: Object.freeze\((.*?)\),\s*writable', re.S)
TABLE_DATA = re.compile(r"<marimo-table[^>]*? data-data='([^']*)'")
LONG_DECIMAL = re.compile(r"\d\.\d{5,}")


def exported_outputs(name: str, tmp_path: Path, *arguments: str) -> str:
    """Every cell output of a notebook run headless in marimo's kernel (`marimo export html`), as HTML text."""
    target = tmp_path / f"{name}.html"
    done = subprocess.run([sys.executable, "-m", "marimo", "export", "html", str(NOTEBOOKS / f"{name}.py"),
                           "-o", str(target), "--", *arguments], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr  # 1 when a cell raised
    session = json.loads(MOUNT.search(target.read_text()).group(1))["session"]
    parts = []
    for cell in session["cells"]:
        for output in [*cell.get("outputs", []), *cell.get("console", [])]:
            data = output.get("data") or output.get("text") or ""
            parts.append(json.dumps(data) if isinstance(data, dict) else str(data))
    return html.unescape(html.unescape("\n".join(parts)))


def shown_tables(text: str) -> list[list[dict]]:
    """The rows each marimo table shows (its formatted data, not the raw copy kept for sorting)."""
    tables = []
    for data in TABLE_DATA.findall(text):
        value = json.loads(html.unescape(data))
        tables.append(json.loads(value) if isinstance(value, str) else value)
    return tables


def long_decimals(tables: list[list[dict]]) -> list:
    """The shown float cells written with more than four decimals."""
    return [value for rows in tables for row in rows for value in row.values()
            if isinstance(value, float) and LONG_DECIMAL.search(repr(value))
            or isinstance(value, str) and LONG_DECIMAL.fullmatch(value)]


@pytest.fixture(scope="module")
def ag_run(tmp_path_factory):
    """A finished AG run by a scripted agent: no judge-graded observation."""
    reports = tmp_path_factory.mktemp("ag")
    assert esac_run("--suite", "ag", "--model", "scripted:wasteful", "--no-cache", "--reports", str(reports)) == 0
    return run_folder_of(reports)


@pytest.fixture
def failed_start(runs, tmp_path):  # noqa: F811
    """A run folder as a failed start leaves it: run.json, an empty journal, no report."""
    folder = tmp_path / "reports" / "gi-2.0" / "openai-x" / "20990101T000000Z-failed"
    folder.mkdir(parents=True)
    shutil.copy(runs["flat"] / "run.json", folder / "run.json")
    (folder / "observations.jsonl").write_text("")
    return folder


# ---------------------------------------------------------------- exported outputs


@pytest.mark.parametrize("name", ["report", "variance", "rubrics"])
def test_exported_notebook_has_no_traceback_no_stray_output_and_short_numbers(name, runs, tmp_path):  # noqa: F811
    arguments = {"report": ["--run", str(runs["noisy"])], "variance": ["--run", str(runs["noisy"])],
                 "rubrics": ["--run", str(runs["noisy"]), "--item", JUDGED]}[name]
    text = exported_outputs(name, tmp_path, *arguments)
    assert "Traceback" not in text and "DataTransformerRegistry" not in text
    tables = shown_tables(text)
    assert tables and all(rows for rows in tables)
    assert long_decimals(tables) == []
    shown = json.dumps(tables)
    assert "NaN" not in shown and re.search(r'"\d+\.\d{3,4}"', shown)  # numbers are there, at 3 or 4 decimals


def test_report_tables_show_every_row_and_keep_their_columns_in_view(runs, tmp_path):  # noqa: F811
    text = exported_outputs("report", tmp_path, "--run", str(runs["noisy"]))
    categories = next(rows for rows in shown_tables(text) if rows and "category" in rows[0])
    assert [row["category"] for row in categories][-1] == "total" and len(categories) == 9  # every row, no pages
    assert "ci_exact" in categories[0] and "ci_exact_low" not in categories[0]  # one column per interval
    widths = json.loads(html.unescape(re.search(r"<marimo-table[^>]*? data-column-widths='([^']*)'", text)
                                      .group(1)))
    assert set(widths) == set(categories[0]) and sum(widths.values()) <= 1150  # fits the page: no column cut off


def test_report_headline_names_the_model_not_its_provider_string(runs, tmp_path):  # noqa: F811
    outputs, _ = notebook("report").run(defs={"args": {"run": str(runs["noisy"])}})
    headline = re.search(r"<h1[^>]*>(.*?)</h1>", text_of(outputs)).group(1)
    assert headline == "GI 2.0 · noisy (openai)"

    local = tmp_path / "local"
    shutil.copytree(runs["flat"], local)
    record = json.loads((local / "report.json").read_text())
    record["model"]["name"] = "local"
    (local / "report.json").write_text(json.dumps(record))
    outputs, _ = notebook("report").run(defs={"args": {"run": str(local)}})
    headline = re.search(r"<h1[^>]*>(.*?)</h1>", text_of(outputs)).group(1)
    assert "SmolLM2-135M-Instruct" in headline and "local)" in headline


def test_model_title_names_the_model():
    assert model_title("local") == "SmolLM2-135M-Instruct (local)"
    assert model_title("openai:gpt-4o@http://127.0.0.1:8000/v1") == "gpt-4o (openai)"
    assert model_title("anthropic:claude-sonnet-4-5") == "claude-sonnet-4-5 (anthropic)"
    assert model_title("nonsense") == "nonsense"  # a string this kit does not parse stays as recorded


# ---------------------------------------------------------------- an AG run and a failed start


def test_ag_run_says_why_it_has_no_judge_variance(ag_run, tmp_path):
    frame = watch.run_frame(ag_run)
    reason = variance.no_variance_reason(frame)
    assert reason and "no judge-graded observation" in reason
    text = exported_outputs("variance", tmp_path, "--run", str(ag_run))
    assert "no judge-graded observation" in text and "No judge-graded item to spread" in text
    assert "NaN" not in json.dumps(shown_tables(text)) and "Traceback" not in text
    outputs, _ = notebook("report").run(defs={"args": {"run": str(ag_run)}})
    assert "No variance section: this AG run has no judge-graded observation" in html.unescape(text_of(outputs))


def test_no_variance_reason_of_a_complete_and_of_a_one_answer_run(runs):  # noqa: F811
    frame = watch.run_frame(runs["noisy"])
    assert variance.no_variance_reason(frame) is None
    once = frame[frame["model_replicate"] == 0]  # an incomplete run: each judged item answered once
    assert "none answered at least twice" in variance.no_variance_reason(once)


def test_failed_start_shows_a_message_not_a_blank_page(failed_start, tmp_path):
    text = exported_outputs("variance", tmp_path, "--run", str(failed_start))
    assert "no observations yet" in text and "None of the chosen runs has observations" in text
    text = exported_outputs("report", tmp_path, "--run", str(failed_start))
    assert "Cannot show this run" in text and "no report: finish the run" in text
    text = exported_outputs("rubrics", tmp_path, "--run", str(failed_start), "--item", JUDGED)
    assert "the run's responses are not used" in text and "Traceback" not in text


def test_variance_leaves_out_a_failed_start_and_shows_the_other_run(runs, failed_start):  # noqa: F811
    outputs, defs = notebook("variance").run(defs={"args": {"run": [str(failed_start), str(runs["noisy"])]}})
    assert list(defs["frames"]) == [watch.run_label(runs["noisy"])]
    text = html.unescape(text_of(outputs))
    assert f"Left out {watch.run_label(failed_start)}" in text and "no observations yet" in text


# ---------------------------------------------------------------- rubrics.py: an invalid edit and its buttons


def test_judge_and_save_on_an_invalid_rubric_say_so_instead_of_raising(runs, tmp_path):  # noqa: F811
    items = tmp_path / "items"
    shutil.copytree(ROOT / "items", items)
    item = load_suite("gi", items).item(JUDGED)
    before = (items / "gi" / f"{JUDGED}.toml").read_text()
    invalid = {"answered": {"weight": 1.0}}  # the gate below half the weight
    outputs, defs = notebook("rubrics").run(defs={
        "args": {"item": JUDGED, "items": str(items), "judge": "openai:j@http://127.0.0.1:9/v1"},
        "form": SimpleNamespace(value=invalid), "frame": None, "item": item, "variant": item.variants[0]})
    assert defs.get("rubric") is None
    assert "Invalid rubric:" in text_of(outputs) and "at least half the rubric weight" in text_of(outputs)
    # marimo's kernel keeps rubric = None when its cell stops, and still runs the Judge and Save cells on a press
    outputs, defs = notebook("rubrics").run(defs={
        "args": {"item": JUDGED, "items": str(items), "judge": "openai:j@http://127.0.0.1:9/v1"},
        "rubric": None, "bump": None, "judge_button": Pressed(), "save_button": Pressed()})
    text = text_of(outputs)
    assert "Nothing judged:" in text and "Not saved:" in text and "Traceback" not in text
    assert defs.get("workbench") is None and defs.get("saved") is None
    assert (items / "gi" / f"{JUDGED}.toml").read_text() == before
    assert item.rubric == load_suite("gi", items).item(JUDGED).rubric


def test_rubric_form_is_labelled_fields_with_whole_text_areas():
    outputs, defs = notebook("rubrics").run(defs={"args": {"item": JUDGED}})
    text = text_of(outputs)
    assert "<marimo-json-output" not in text  # not a JSON tree
    item = load_suite("gi").item(JUDGED)
    fields = defs["form"].element
    assert list(fields.value) == [c.id for c in item.rubric.criteria]
    for criterion in item.rubric.criteria:
        levels = fields[criterion.id]["levels"]
        assert levels.value == "\n".join(criterion.levels)
        assert f"data-rows='{notebook_ui.text_rows(levels.value)}'" in levels.text
        assert notebook_ui.text_rows(levels.value) > len(criterion.levels)
    edit = {cid: dict(values) for cid, values in fields.value.items()}
    assert bench.edited_rubric(item.rubric, edit) == item.rubric  # the form's value is what edited_rubric takes


# ---------------------------------------------------------------- esac_kit.notebook_ui


def test_numbers_show_at_a_few_decimals_and_missing_values_as_a_dash():
    assert notebook_ui.number_text(0.6944444444444443) == "0.694"
    assert notebook_ui.number_text(0.6944444444444443, 4) == "0.6944"
    assert notebook_ui.number_text(float("nan")) == notebook_ui.MISSING == notebook_ui.number_text(None)
    assert notebook_ui.number_text(-0.00001) == "0.000"
    frame = pd.DataFrame({"score": [0.6944444444444443, float("nan")], "max": [15.0, 10.0], "ok": [True, False],
                          "note": ["x" * 60, None], "n": [1, 2]})
    formats = notebook_ui.format_mapping(frame)
    assert [formats["score"](v) for v in frame["score"]] == ["0.694", "—"]
    assert [formats["max"](v) for v in frame["max"]] == ["15", "10"]  # whole numbers stay whole
    assert "ok" not in formats and formats["note"](None) == "—" and formats["n"](2) == 2
    assert notebook_ui.wrapped_columns(frame) == ["note"]


def test_intervals_join_into_one_column_and_widths_fit_the_text():
    frame = pd.DataFrame({"icc1": [0.5], "icc1_low": [0.0912345], "icc1_high": [0.8353], "ci_boot_low": [None],
                          "ci_boot_high": [None], "label": ["PASS"]})
    shown = notebook_ui.joined_intervals(frame)
    assert list(shown.columns) == ["icc1", "icc1_ci", "ci_boot", "label"]
    assert shown.loc[0, "icc1_ci"] == "0.091–0.835" and shown.loc[0, "ci_boot"] == "—"
    widths = notebook_ui.column_widths(shown, notebook_ui.format_mapping(shown), [])
    assert widths["icc1_ci"] > widths["label"] and max(widths.values()) <= notebook_ui.WRAP_WIDTH_PX


def test_error_callout_is_one_line_of_escaped_text():
    import marimo as mo

    callout = notebook_ui.error_callout("Cannot start", ValueError("bad <b>model</b> a_b $x$ \\(y\\)\nsecond line"))
    assert "Cannot start" in callout.text and "second line" not in callout.text
    shown = mo.md(notebook_ui.plain_markdown("bad <b>model</b> a_b $x$ \\(y\\) [link](x)")).text
    assert "<b>" not in shown and "<a " not in shown and "<em>" not in shown and "marimo-tex" not in shown
    assert html.unescape(re.sub(r"<[^>]+>", "", shown)) == "bad <b>model</b> a_b $x$ \\(y\\) [link](x)"
    assert notebook_ui.text_rows("one\n" + "x" * 170) == 1 + 3 + 1
