"""The JupyterLab report: notebooks/report.ipynb executed by nbclient in a kernel of this venv's python on GI and AG
runs made against the loopback server (its charts are images, its tables HTML, nothing loads from a CDN), the
README's API snippet run as written, and the esac_kit.jupyter helpers."""

import ast
import json
import re
import sys
from pathlib import Path

import altair as alt
import nbformat
import pandas as pd
import pytest
from nbclient import NotebookClient

from esac_kit import jupyter, variance, watch
from esac_kit.cli import main
from esac_kit.compare import load_report
from esac_kit.errors import ConfigError
from esac_kit.loopback import LoopbackServer
from esac_kit.runs import load_config
from runkit import esac_run, reference_answers, run_folder_of
from test_notebooks import noisy

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "report.ipynb"
KERNEL = "esac-kit-test"
PLACEHOLDER = "reports/gi-2.0/<model>/<run>"
OFFLINE_IMAGES = ("image/svg+xml", "image/png")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished GI run (a noisy model and judge on the loopback server) and an AG run of a scripted agent."""
    reports = tmp_path_factory.mktemp("reports")
    with LoopbackServer(noisy(reference_answers())) as server:
        assert esac_run("--model", f"openai:noisy@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(reports / "gi"), "--no-cache") == 0
    assert esac_run("--suite", "ag", "--model", "scripted:wasteful", "--reports", str(reports / "ag"),
                    "--no-cache") == 0
    return {"gi": run_folder_of(reports / "gi"), "ag": run_folder_of(reports / "ag")}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """A kernelspec running this venv's python, in a temporary JUPYTER_PATH: the user's Jupyter and IPython
    folders are neither read for kernels nor written."""
    home = tmp_path_factory.mktemp("jupyter")
    spec = home / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "esac-kit (tests)", "language": "python"}))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(home))
        for variable, folder in (("JUPYTER_DATA_DIR", "data"), ("JUPYTER_CONFIG_DIR", "config"),
                                 ("JUPYTER_RUNTIME_DIR", "runtime"), ("IPYTHONDIR", "ipython")):
            patch.setenv(variable, str(home / folder))
        yield KERNEL


@pytest.fixture
def altair_state():
    """Leave altair's renderer and data transformer as they were (offline_charts sets them process-wide)."""
    renderer, renderer_options = alt.renderers.active, dict(alt.renderers.options)
    transformer, transformer_options = alt.data_transformers.active, dict(alt.data_transformers.options)
    yield
    alt.renderers.enable(renderer, **renderer_options)
    alt.data_transformers.enable(transformer, **transformer_options)


def executed(folder: Path, kernel: str, cwd: Path, monkeypatch) -> dict[str, list[dict]]:
    """notebooks/report.ipynb executed on a run folder (given as $ESAC_RUN); each tagged cell's outputs."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    monkeypatch.setenv(jupyter.RUN_ENV, str(folder))
    NotebookClient(notebook, kernel_name=kernel, timeout=240, resources={"metadata": {"path": str(cwd)}}).execute()
    outputs = {tag: cell.outputs for cell in notebook.cells for tag in cell.metadata.get("tags", [])}
    outputs["*"] = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    return outputs


def data_of(outputs: list[dict], mime: str) -> list[str]:
    """The `mime` data of a cell's outputs (a display or an execute result), as text."""
    return ["".join(o["data"][mime]) if isinstance(o["data"][mime], list) else o["data"][mime]
            for o in outputs if mime in o.get("data", {})]


def images_of(outputs: list[dict]) -> list[str]:
    return [image for mime in OFFLINE_IMAGES for image in data_of(outputs, mime)]


def assert_offline(everything: list[dict]) -> None:
    """No output needs a network or a widget to show: no Vega-Lite spec for a CDN renderer, no script, no error,
    and no stray registry repr (altair's enable() returns one)."""
    assert not [o for o in everything if o["output_type"] == "error"]
    assert not [o for o in everything if any(m.startswith("application/vnd.vegalite") for m in o.get("data", {}))]
    assert not [html for html in data_of(everything, "text/html") if "<script" in html]
    assert not [text for text in data_of(everything, "text/plain") if "Registry" in text or "PluginEnabler" in text]


# ---------------------------------------------------------------- notebooks/report.ipynb


def test_report_notebook_is_committed_without_outputs():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(not cell.outputs and cell.execution_count is None for cell in code)
    assert any("parameters" in cell.metadata.get("tags", []) for cell in code)


def test_report_notebook_renders_a_gi_run_offline(runs, kernel, tmp_path, monkeypatch):
    folder = runs["gi"]
    report = load_report(folder)
    outputs = executed(folder, kernel, tmp_path, monkeypatch)
    assert_offline(outputs["*"])

    headline = "".join(data_of(outputs["headline"], "text/markdown"))
    assert report.model.name in headline and ("PASS" if report.passed else "FAIL") in headline

    # the category chart is an image of every category
    (chart,) = images_of(outputs["category-chart"])
    assert chart.lstrip().startswith("<svg") and all(f">{c.id}<" in chart for c in report.categories)
    assert images_of(outputs["item-chart"])

    # the item table: an HTML table of every item, scores to three decimals
    (table,) = data_of(outputs["item-table"], "text/html")
    assert "<table" in table and table.count("<tr>") == len(report.items) + 1  # + the header row
    assert all(f">{item.item_id}<" in table for item in report.items)
    odd = [i.score for i in report.items if round(i.score, 3) != i.score]
    assert odd and all(f">{score:.3f}<" in table and str(score) not in table for score in odd)

    assert "<table" in "".join(data_of(outputs["category-table"], "text/html"))
    assert "Not an AG run" in "".join(data_of(outputs["efficiency"], "text/markdown"))
    variance_html = "".join(data_of(outputs["variance"], "text/html"))
    assert "icc1" in variance_html and images_of(outputs["variance"])  # the table and the D-study chart
    assert report.fingerprints["scoring"] in "".join(data_of(outputs["provenance"], "text/html"))


def test_report_notebook_renders_an_ag_run_with_its_efficiency(runs, kernel, tmp_path, monkeypatch):
    folder = runs["ag"]
    report = load_report(folder)
    outputs = executed(folder.parent.parent, kernel, tmp_path, monkeypatch)  # a reports folder: its newest run
    assert_offline(outputs["*"])
    assert f"`{report.run_id}`" in "".join(data_of(outputs["headline"], "text/markdown"))
    (chart,) = images_of(outputs["category-chart"])
    assert all(f">{c.id}<" in chart for c in report.categories)
    efficiency = "".join(data_of(outputs["efficiency"], "text/html"))
    assert all(f">{task.item_id}<" in efficiency for task in report.efficiency)
    assert f"{report.modifier:.2f} / 5" in "".join(data_of(outputs["efficiency"], "text/markdown"))
    assert "No judge-graded items" in "".join(data_of(outputs["variance"], "text/markdown"))


# ---------------------------------------------------------------- the README's API snippet


def readme_snippet() -> str:
    """The one fenced python block of the README's Notebooks section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Notebooks"):readme.index("## Layout")]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return block


def run_as_a_cell(source: str) -> tuple[dict, list]:
    """Execute code as a notebook cell would, statement by statement; returns its names and the value of every
    bare expression (what a notebook would show)."""
    names, shown = {}, []
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Expr):
            shown.append(eval(compile(ast.Expression(statement.value), "README.md", "eval"), names))
        else:
            exec(compile(ast.Module([statement], type_ignores=[]), "README.md", "exec"), names)
    return names, shown


def test_readme_api_snippet_runs_as_written(runs, altair_state):
    snippet = readme_snippet()
    assert PLACEHOLDER in snippet
    names, shown = run_as_a_cell(snippet.replace(PLACEHOLDER, str(runs["gi"])))
    category, items, components, study = shown[1:]  # shown[0] is offline_charts(), None
    assert shown[0] is None

    # the charts render as Jupyter would show them: an SVG from vl-convert, no Vega-Lite spec for a CDN
    for chart in (category, study):
        bundle = chart._repr_mimebundle_()
        bundle = bundle[0] if isinstance(bundle, tuple) else bundle
        assert set(bundle) == {"image/svg+xml"} and "<svg" in bundle["image/svg+xml"]
    assert "<table" in items.to_html()

    config = load_config(runs["gi"])
    frame = names["frame"]
    assert set(frame["model"]) == {config.model} and set(frame["judge"]) == {config.judge}
    assert frame["prompt_sha256"].str.fullmatch(r"[0-9a-f]{64}").all()
    judged = frame.loc[frame["judge_replicate"].notna(), "item_id"].nunique()
    assert len(components) == 1 and components.at[0, "items"] == judged > 0
    assert components.at[0, "run"] == names["report"].run_id


def test_run_folders_may_be_strings_and_single_frames_need_no_mapping(runs):
    folder = runs["gi"]
    assert load_report(str(folder)) == load_report(folder)
    frame = watch.run_frame(str(folder))
    pd.testing.assert_frame_equal(frame, watch.run_frame(folder))
    single, mapped = variance.variance_table(frame), variance.variance_table({"a": frame})
    pd.testing.assert_frame_equal(single.drop(columns="run"), mapped.drop(columns="run"))
    study = variance.d_study_frame(frame)
    assert variance.d_study_chart(frame).to_dict()["data"] == variance.d_study_chart(study).to_dict()["data"]
    with pytest.raises(ConfigError, match="no observations yet"):
        watch.run_frame(str(folder / "missing"))


def test_the_parquet_table_carries_model_and_judge(runs):
    for folder in runs.values():  # the table is a render: `esac-kit report` writes it, a run does not
        assert main(["report", str(folder)]) == 0
    table = pd.read_parquet(runs["gi"] / "observations.parquet")
    report = load_report(runs["gi"])
    assert set(table["model"]) == {report.model.name} and set(table["judge"]) == {report.judge.name}
    ag = pd.read_parquet(runs["ag"] / "observations.parquet")
    assert set(ag["model"]) == {"scripted:wasteful"} and ag["judge"].isna().all()


# ---------------------------------------------------------------- esac_kit.jupyter


def test_styled_tables_escape_text_and_format_numbers():
    frame = pd.DataFrame({"response": ["<script>alert(1)</script>", "plain"], "score": [0.6944444444444443, None],
                          "<b>": [1, 2]})
    html = jupyter.styled(frame).to_html()
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;" in html
    assert ">0.694<" in html and "0.6944" not in html and ">—<" in html


def test_offline_charts_renders_images_and_refuses_other_formats(runs, altair_state):
    from esac_kit.charts import category_chart

    report = load_report(runs["gi"])
    jupyter.offline_charts("png")
    bundle = category_chart(report)._repr_mimebundle_()
    assert "image/png" in (bundle[0] if isinstance(bundle, tuple) else bundle)
    with pytest.raises(ConfigError, match="use one of svg, png"):
        jupyter.offline_charts("html")


def test_report_folder_takes_a_run_or_the_newest_finished_run_of_a_reports_folder(runs, tmp_path):
    assert jupyter.report_folder(str(runs["gi"])) == runs["gi"]
    assert jupyter.report_folder(runs["gi"].parent.parent.parent) == runs["gi"]
    with pytest.raises(ConfigError, match="no finished run folder"):
        jupyter.report_folder(tmp_path)


def test_failures_summary_and_headline_of_a_gi_run(runs):
    report = load_report(runs["gi"])
    summary = jupyter.failures_summary(report)
    assert f"answered {report.model_outcomes['answered']}" in summary and "Cost:" in summary
    headline = jupyter.headline(report, runs["gi"])
    assert headline.startswith(f"# GI {report.version} · `{report.model.name}`")
