"""The marimo notebooks: `marimo check --strict`, headless runs on fixture run folders (in-process with
app.run and in marimo's kernel with `marimo export html`), the report notebook's export (`--notebook-html`) and the
helpers they call."""

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from esac_kit import report_tables, variance, watch

from esac_kit.gi import workbench as bench
from esac_kit.cli import main
from esac_kit.errors import ConfigError
from esac_kit.fingerprints import check_versions
from esac_kit.loopback import LoopbackServer, request_text
from esac_kit.gi.judge import is_judge_request
from esac_kit.suite import load_suite
from runkit import esac_run, pin_as_released, reference_answers, run_folder_of

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NAMES = ("run", "variance", "rubrics", "report")
MARIMO = [sys.executable, "-m", "marimo"]
JUDGED = "writing-lay-explainer"


class Pressed:
    """A run button as if it had been pressed."""

    value = True


def notebook(name: str):
    """A notebook's marimo App, imported from its file."""
    spec = importlib.util.spec_from_file_location(f"notebook_{name}", NOTEBOOKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def text_of(outputs) -> str:
    """Every cell output's HTML, joined."""
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


def noisy(answers):
    """A model whose second answer to a prompt is cut in half, and a judge whose levels vary with the request."""
    seen = {}

    def answer(body):
        if is_judge_request(body):
            response_format = body["response_format"]
            schema = (response_format.get("schema") or response_format["json_schema"]["schema"])
            levels = schema["properties"]["levels"]["properties"]
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
            return json.dumps({"rationale": f"scripted verdict {digest[0]}",
                               "levels": {k: max(v["enum"]) - digest[n + 1] % 2 for n, (k, v) in
                                          enumerate(levels.items())}})
        text = request_text(body)
        seen[text] = seen.get(text, 0) + 1
        reference = answers(body)
        return reference if seen[text] % 2 else reference[: len(reference) // 2]

    return answer


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished GI runs against the loopback server: a noisy one and a flat one (every replicate equal)."""
    reports = tmp_path_factory.mktemp("reports")
    answers = reference_answers()
    folders = {}
    for name, script in (("noisy", noisy(answers)), ("flat", answers)):
        with LoopbackServer(script) as server:
            assert esac_run("--model", f"openai:{name}@{server.url}", "--judge", f"openai:j@{server.url}",
                            "--reports", str(reports / name), "--no-cache") == 0
        folders[name] = run_folder_of(reports / name)
    return folders


# ---------------------------------------------------------------- marimo check and the pinned series


def test_marimo_check_strict_passes_on_every_notebook():
    files = [str(NOTEBOOKS / f"{name}.py") for name in NAMES]
    done = subprocess.run([*MARIMO, "check", "--strict", *files], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_marimo_is_pinned_to_one_minor_series_and_test_cells_do_not_run_on_export():
    import tomllib

    import marimo

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "marimo>=0.25,<0.26" in project["project"]["dependencies"]
    assert marimo.__version__.startswith("0.25.")
    assert project["tool"]["marimo"]["runtime"]["reactive_tests"] is False
    assert "__marimo__/" in (ROOT / ".gitignore").read_text().splitlines()


# ---------------------------------------------------------------- run.py


def test_run_notebook_runs_a_suite_and_resumes_a_run(tmp_path):
    reports = tmp_path / "reports"
    with LoopbackServer(reference_answers()) as server:
        args = {"model": f"openai:m@{server.url}", "judge": f"openai:j@{server.url}", "reports": str(reports),
                "no-cache": "", "concurrency": 8}
        outputs, defs = notebook("run").run(defs={"args": args, "run_button": Pressed()})
        assert defs["failure"] is None and defs["report"].total == 100
        folder = run_folder_of(reports)
        assert defs["plan"].folder == folder and (folder / "report.json").is_file()
        assert "100.00 / 100" in text_of(outputs)

        # a killed run: the journal keeps 20 observations, no report; resuming finishes the other 37
        journal = folder / "observations.jsonl"
        journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:20]))
        (folder / "report.json").unlink()
        requests = server.requests
        _, defs = notebook("run").run(defs={"args": {"resume": str(folder), "no-cache": ""},
                                            "run_button": Pressed()})
    assert defs["plan"].resumed and defs["plan"].done == 20
    assert defs["report"].total == 100 and len(watch.read_observations(folder)) == 57
    assert server.requests - requests < 57  # the 20 finished observations were not asked again


def test_run_notebook_takes_model_parameters_as_the_command_does(tmp_path):
    with LoopbackServer(reference_answers()) as server:
        args = {"model": f"openai:o3@{server.url}", "judge": f"openai:j@{server.url}", "reports": str(tmp_path),
                "no-cache": "", "concurrency": 8, "M": "reasoning_effort=low"}
        _, defs = notebook("run").run(defs={"args": args, "run_button": Pressed()})
        assert server.rejected == []
    assert defs["plan"].config.model_params == {"reasoning_effort": "low"} and defs["report"].total == 100
    wrong = {"model": "openai:o3@http://127.0.0.1:9/v1", "reports": str(tmp_path / "w"), "M": "effort=low"}
    outputs, defs = notebook("run").run(defs={"args": wrong, "run_button": Pressed()})
    assert defs.get("plan") is None and "unknown model parameter" in text_of(outputs)


def test_run_notebook_waits_for_the_button_and_reports_bad_input(tmp_path):
    _, defs = notebook("run").run(defs={"args": {"reports": str(tmp_path)}})
    assert "plan" not in defs and not list(tmp_path.iterdir())
    _, defs = notebook("run").run(defs={"args": {"model": "nonsense:x", "reports": str(tmp_path)},
                                        "run_button": Pressed()})
    assert defs.get("plan") is None and not list(tmp_path.iterdir())


# ---------------------------------------------------------------- variance.py


def test_variance_notebook_opens_several_runs_flags_and_drills(runs):
    app = notebook("variance")
    _, defs = app.run(defs={"args": {"run": [str(runs["noisy"]), str(runs["flat"])]}})
    assert len(defs["frames"]) == 2
    stability = defs["stability"]
    assert set(stability["run_id"]) == {runs["noisy"].name, runs["flat"].name}
    noisy_rows = stability[stability["run_id"] == runs["noisy"].name]
    assert (noisy_rows["flag"] != "stable").any()  # the noisy judge and the cut answers are flagged
    assert (stability[stability["run_id"] == runs["flat"].name]["flag"] == "stable").all()

    chosen = noisy_rows[noisy_rows["item_id"] == JUDGED]  # as if this point were selected in the chart
    outputs, _ = app.run(defs={"args": {"run": str(runs["noisy"])}, "stability": stability,
                               "spread": SimpleNamespace(value=chosen)})
    html = text_of(outputs)
    assert f"{JUDGED} · {runs['noisy'].name}" in html
    assert html.count("answer 0 · answered") == 1 and html.count("scripted verdict") == 4


def test_item_stability_flags_judge_and_model_instability(runs):
    frame = watch.run_frame(runs["noisy"])
    strict = variance.item_stability(frame, judge_threshold=0.0, answer_threshold=1.0)
    assert strict["judge_unstable"].any() and not strict["model_unstable"].any()
    assert set(strict["flag"]) <= {"judge", "stable"}
    grid = variance.observation_grid(frame, JUDGED)
    assert len(grid) == 4 and list(grid["model_replicate"]) == [0, 0, 1, 1]
    table = variance.variance_table({"noisy": frame, "flat": watch.run_frame(runs["flat"])})
    assert list(table["items"]) == [7, 7] and table.loc[0, "var_judge"] > 0 and table.loc[1, "var_judge"] == 0


# ---------------------------------------------------------------- rubrics.py


def test_rubrics_notebook_judges_an_edit_and_saves_it(runs, tmp_path):
    items = tmp_path / "items"
    shutil.copytree(ROOT / "items", items)
    pin_as_released(items)  # a released 1.0, so the edit asks for 2.0
    suite = load_suite("gi", items)
    item = suite.item(JUDGED)
    frame = watch.run_frame(runs["noisy"])
    frame = frame[frame["item_id"] == JUDGED]
    edit = {"lay_clarity": {"weight": 1.0}}  # as if submitted in the form
    with LoopbackServer(reference_answers()) as server:
        outputs, defs = notebook("rubrics").run(defs={
            "args": {"run": str(runs["noisy"]), "item": JUDGED, "judge": f"openai:j@{server.url}",
                     "items": str(items)},
            "form": SimpleNamespace(value=edit), "frame": frame, "item": item,
            "variant": bench.run_variant(item, frame),
            "judge_button": Pressed(), "save_button": Pressed()})
    assert defs["bump"].edit_change == "major" and defs["bump"].next_version == "2.0"
    assert "major bump" in text_of(outputs)
    workbench = defs["workbench"]
    assert set(workbench.anchors()["anchor"]) == {"ideal", "padded", "terse", "off_topic", "empty", "injection"}
    assert len(workbench.relations()) == len(item.required_order)
    assert list(workbench.responses["response"]) == ["answer 0", "answer 1"]
    saved = load_suite("gi", items).item(JUDGED)
    assert {c.id: c.weight for c in saved.rubric.criteria}["lay_clarity"] == 1.0
    assert any("major change, release it as 2.0" in p for p in check_versions(load_suite("gi", items)))


def test_rubric_edits_are_validated_rescored_and_saved_in_place(runs, tmp_path):
    items = tmp_path / "items"
    shutil.copytree(ROOT / "items", items)
    suite = load_suite("gi", items)
    item = suite.item(JUDGED)
    with pytest.raises(ConfigError, match="at least half"):
        bench.edited_rubric(item.rubric, {"answered": {"weight": 1.0}})
    with pytest.raises(ConfigError, match="verified in code"):
        bench.edited_rubric(item.rubric, {"word_range": {"levels": "out\nin"}})
    unchanged = bench.edited_rubric(item.rubric, {})
    assert bench.rubric_bump(suite, JUDGED, unchanged).edit_change is None

    rubric = bench.edited_rubric(item.rubric, {"fidelity": {"weight": 0.25, "levels": "no\nsome\nmost\nall"}})
    moved = bench.rescore(watch.run_frame(runs["noisy"]), item, rubric)
    assert len(moved) == 4 and moved["edited"].notna().all()
    rescaled = bench.edited_rubric(item.rubric, {"fidelity": {"levels": "wrong\nright"}})
    assert bench.rescore(watch.run_frame(runs["noisy"]), item, rescaled)["edited"].isna().any()
    path = bench.save_rubric(suite, JUDGED, rubric)
    before = (ROOT / "items" / "gi" / f"{JUDGED}.toml").read_text().splitlines()
    after = path.read_text().splitlines()
    changed = [line for line in after if line not in before]
    assert changed == ["weight = 0.25", '  "no",', '  "some",', '  "most",', '  "all",']
    assert load_suite("gi", items).item(JUDGED).rubric == rubric


# ---------------------------------------------------------------- report.py and esac-kit report --notebook-html


def test_report_notebook_shows_every_section(runs):
    outputs, defs = notebook("report").run(defs={"args": {"run": str(runs["noisy"])}})
    html = text_of(outputs)
    for text in ("Not an AG run", "Provenance", "Failures and retries", "Variance of the judge-graded items",
                 defs["report"].fingerprints["scoring"], "pass_line"):
        assert text in html, text


def test_esac_report_notebook_html_exports_the_report_into_the_run_folder(runs, capsys):
    folder = runs["noisy"]
    assert main(["report", str(folder), "--notebook-html"]) == 0
    assert "report-notebook.html" in capsys.readouterr().out
    html = (folder / "report-notebook.html").read_text()
    assert html.count("application/vnd.vegalite") >= 2  # the category and item charts, as Vega-Lite specs
    assert "vega-lite/v" in html
    assert "Traceback" not in html and "MaxRowsError" not in html
    assert "Not an AG run: GI has no efficiency modifier" in html and folder.name in html


def test_esac_report_notebook_html_exports_an_ag_run_with_its_efficiency_breakdown(tmp_path, capsys):
    assert esac_run("--suite", "ag", "--model", "scripted:wasteful", "--no-cache", "--reports", str(tmp_path)) == 0
    folder = run_folder_of(tmp_path)
    assert main(["report", str(folder), "--notebook-html", "--html"]) == 0
    assert (folder / "report.html").is_file()  # the offline report beside the export, not overwritten by it
    html = (folder / "report-notebook.html").read_text()
    report = json.loads((folder / "report.json").read_text())
    assert html.count("application/vnd.vegalite") >= 2
    assert "Traceback" not in html and "MaxRowsError" not in html
    # outputs, not the notebook's source (which the export also embeds): the modifier and the listed calls
    assert f"{report['modifier']:.2f} / 5" in html and "repeats #" in html and "overwrites #" in html


def test_run_and_variance_notebooks_take_an_ag_run(tmp_path):
    args = {"suite": "ag", "model": "scripted:wasteful", "reports": str(tmp_path), "no-cache": ""}
    outputs, defs = notebook("run").run(defs={"args": args, "run_button": Pressed()})
    assert defs["failure"] is None and defs["report"].capability == 70 and 0 < defs["report"].modifier < 4.5
    _, defs = notebook("variance").run(defs={"args": {"run": str(run_folder_of(tmp_path))}})
    assert len(defs["frames"]) == 1 and defs["stability"].empty  # no judge-graded items: nothing to flag


def test_esac_report_notebook_html_fails_with_one_line(runs, tmp_path, monkeypatch, capsys):
    import esac_kit.cli as cli

    broken = tmp_path / "report.py"
    source = (NOTEBOOKS / "report.py").read_text()
    assert "load_report(run), watch.run_frame(run)" in source
    broken.write_text(source.replace("load_report(run), watch.run_frame(run)", "load_report(run), 1 / 0"))
    monkeypatch.setattr(cli, "REPORT_NOTEBOOK", broken)
    assert main(["report", str(runs["flat"]), "--notebook-html"]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith("esac-kit: error: marimo export html exited 1") and "\n" not in error
    monkeypatch.setattr(cli, "REPORT_NOTEBOOK", tmp_path / "absent.py")
    assert main(["report", str(runs["flat"]), "--notebook-html"]) == 2


# ---------------------------------------------------------------- the kernel: every notebook headless


@pytest.mark.parametrize("name", ["run", "variance", "rubrics"])
def test_notebook_runs_headless_in_the_marimo_kernel(name, runs, tmp_path):
    arguments = {"run": ["--resume", str(runs["flat"]), "--reports", str(tmp_path), "--no-cache"],
                 "variance": ["--run", str(runs["noisy"]), "--run", str(runs["flat"])],
                 "rubrics": ["--run", str(runs["noisy"]), "--item", JUDGED]}[name]
    target = tmp_path / f"{name}.html"
    done = subprocess.run([*MARIMO, "export", "html", str(NOTEBOOKS / f"{name}.py"), "-o", str(target), "--",
                           *arguments], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    html = target.read_text()
    assert "Traceback" not in html and "MaxRowsError" not in html


def test_readme_notebook_commands():
    readme = (ROOT / "README.md").read_text()
    for command in ("marimo edit notebooks/run.py", "marimo run notebooks/report.py -- --run RUN",
                    "esac-kit report RUN --html", "esac-kit report RUN --notebook-html",
                    "ESAC_RUN=$(realpath RUN) jupyter lab notebooks/report.ipynb"):
        assert command in readme, command
    assert readme.index("## Notebooks") < readme.index("## Layout")
    assert (NOTEBOOKS / "report.ipynb").is_file()  # executed by tests/test_jupyter.py


# ---------------------------------------------------------------- helpers


def test_read_observations_skips_a_torn_line_and_leaves_the_file_alone(runs, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(runs["flat"], folder)
    journal = folder / "observations.jsonl"
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"run_id": "torn')
    assert len(watch.read_observations(folder)) == 57
    assert journal.read_bytes().endswith(b'{"run_id": "torn')  # a reader never truncates a growing journal
    assert watch.read_observations(tmp_path / "nowhere") == []


def test_report_sections_of_a_gi_run(runs):
    from esac_kit.compare import load_report

    report = load_report(runs["noisy"])
    assert report_tables.efficiency_frame(report) is None  # GI has no efficiency modifier; AG is not built yet
    table = report_tables.category_table(report)
    assert list(table["category"])[-1] == "total" and (table["pass_line"] == 0.6 * table["max"]).all()
    provenance = dict(report_tables.provenance_frame(report).values)
    assert provenance["scoring fingerprint"] == report.fingerprints["scoring"]
    assert provenance["pool (seed or commitment)"].startswith("public")
    assert report_tables.failures_frame(watch.run_frame(runs["noisy"])).empty
    assert watch.arg_flag({"no-cache": ""}, "no-cache") and not watch.arg_flag({}, "no-cache")
