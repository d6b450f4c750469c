"""The per-sample viewer: `esac-kit view RUN --html` lists every journalled observation on one offline page with
hostile text escaped, regenerates prompts and keys from the run's pool (a held-out run without its seed shows the
journal and says so), shows AG episodes step by step; `esac-kit view RUN` serves the marimo app on 127.0.0.1."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import httpx
import pandas as pd
import pytest

from esac_kit import html, viewer
from esac_kit.cli import main
from esac_kit.gi.judge import is_judge_request
from esac_kit.instances import generate_all
from esac_kit.journal import read_journal
from esac_kit.loopback import LoopbackServer, request_text
from esac_kit.pools import public_pool
from esac_kit.records import prompt_sha256
from esac_kit.suite import load_suite
from runkit import esac_run, reference_answers, run_folder_of, verdict

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "view.py"
HOSTILE = "<script>alert(1)</script>"
HOSTILE_ANSWER = "<img src=x onerror=alert(2)>"
HOSTILE_RATIONALE = "<script>alert(3)</script>"
BREAKOUT = "</pre></details><script>alert(4)</script>"
EXACT, JUDGED = "quant-crew-work", "writing-lay-explainer"


def hostile_model():
    """Reference answers, except a script and an image tag as one exact answer, a breakout in a judged answer and a
    script in every judge rationale."""
    suite = load_suite("gi")
    prompts = {i.item_id: i.prompt for i in generate_all(suite, public_pool(suite.manifest.public_seed))}
    answers = reference_answers()

    def answer(body):
        if is_judge_request(body):
            return json.dumps(json.loads(verdict(body)) | {"rationale": HOSTILE_RATIONALE})
        text = request_text(body)
        if text == prompts[EXACT]:
            return f"{HOSTILE}\nANSWER: {HOSTILE_ANSWER}"
        return answers(body) + (f"\n{BREAKOUT}" if text == prompts[JUDGED] else "")

    return answer


@pytest.fixture(scope="module")
def gi_run(tmp_path_factory):
    """A finished GI run against the loopback server, with hostile text in a response and in the judge's verdicts."""
    reports = tmp_path_factory.mktemp("gi")
    with LoopbackServer(hostile_model()) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(reports), "--no-cache") == 0
    return run_folder_of(reports)


@pytest.fixture(scope="module")
def ag_run(tmp_path_factory):
    """A finished AG run of the wasteful scripted agent (redundant calls and rework), served on loopback."""
    reports = tmp_path_factory.mktemp("ag")
    assert esac_run("--suite", "ag", "--model", "scripted:wasteful", "--no-cache", "--reports", str(reports)) == 0
    return run_folder_of(reports)


class Page(HTMLParser):
    """A parsed page: its tags and attributes, and the rows of its observation table."""

    def __init__(self, text: str):
        super().__init__()
        self.tags, self.attributes, self.rows = set(), [], []
        self._table = self._cell = False
        self._row: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes += attrs
        if tag == "table" and ("class", "observations") in attrs:
            self._table = True
        elif self._table and tag == "tr":
            self._row = []
        elif self._row is not None and tag == "td":
            self._cell = True
            self._row.append("")

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = False
        elif tag == "tr" and self._row:
            self.rows.append(self._row)
            self._row = None
        elif tag == "td":
            self._cell = False

    def handle_data(self, data):
        if self._cell:
            self._row[-1] += data


def page_of(folder: Path, capsys) -> tuple[str, Page]:
    """`esac-kit view RUN --html` and the page it wrote."""
    assert main(["view", str(folder), "--html"]) == 0
    assert f"{len(read_journal(folder / 'observations.jsonl', owner=False))} observations" in capsys.readouterr().out
    text = (folder / "view.html").read_text(encoding="utf-8")
    return text, Page(text)


def assert_offline(page: Page) -> None:
    """No script, no embedded object, no event handler, no reference outside the page."""
    assert not page.tags & {"script", "img", "iframe", "link", "object", "embed", "svg", "form"}, page.tags
    for name, value in page.attributes:
        assert not name.startswith("on") and name not in ("src", "srcdoc"), (name, value)
        if name == "href":
            assert value.startswith("#"), value


# ---------------------------------------------------------------- the offline page


def test_the_page_lists_every_observation_of_a_gi_run_in_journal_order(gi_run, capsys):
    observations = read_journal(gi_run / "observations.jsonl", owner=False)
    text, page = page_of(gi_run, capsys)
    assert len(observations) == 57 and len(page.rows) == len(observations)
    listed = [(int(r[0]), r[1], int(r[2]), None if r[3] == "—" else int(r[3])) for r in page.rows]
    assert listed == [(n, o.item_id, o.model_replicate, o.judge_replicate) for n, o in enumerate(observations, 1)]
    assert_offline(page)
    suite = load_suite("gi")
    for instance in generate_all(suite, public_pool(suite.manifest.public_seed)):
        assert f'id="item-{instance.item_id}"' in text
        assert html.escape(instance.prompt) in text  # every prompt, regenerated from the run's pool


def test_hostile_model_and_judge_text_stays_text(gi_run, capsys):
    text, page = page_of(gi_run, capsys)
    assert_offline(page)
    for hostile in (HOSTILE, HOSTILE_ANSWER, HOSTILE_RATIONALE, BREAKOUT):
        assert hostile not in text
        assert html.escape(hostile) in text
    run = viewer.load_run(gi_run)
    exact = viewer.sample_by_id(run, EXACT)
    assert exact.answers[0].extracted == HOSTILE_ANSWER and exact.score == 0.0
    suite = load_suite("gi")
    key = next(i.key for i in generate_all(suite, public_pool(suite.manifest.public_seed)) if i.item_id == EXACT)
    assert exact.expected == key.answer and key.answer in exact.key  # the key regenerated, not the model's answer


@pytest.mark.parametrize("name", ["gi", "ag"])
def test_chromium_offline_renders_every_observation_and_runs_no_script(name, gi_run, ag_run, tmp_path, capsys):
    from test_report_html import chromium  # headless Chromium with networking disabled, as the report's test

    folder = {"gi": gi_run, "ag": ag_run}[name]
    page_of(folder, capsys)
    markup, asked = chromium(folder / "view.html", tmp_path)
    dom = Page(markup)
    assert asked == set(), asked  # the page fetched nothing
    assert len(dom.rows) == len(read_journal(folder / "observations.jsonl", owner=False))
    assert_offline(dom)  # as the browser parsed it: the hostile text made no element
    if name == "gi":
        assert HOSTILE in markup.replace("&lt;", "<").replace("&gt;", ">") and "<script>alert" not in markup


def test_a_journal_that_repeats_a_slot_is_shown_whole_and_said(gi_run, tmp_path, capsys):
    import shutil

    folder = tmp_path / "run"
    shutil.copytree(gi_run, folder)
    journal = folder / "observations.jsonl"
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines + lines[:2]))  # two writers resumed the same folder (the collision)
    text, page = page_of(folder, capsys)
    assert len(page.rows) == len(lines) + 2
    assert f"journal line {len(lines) + 1} repeats the observation of line 1" in text


def test_a_judged_item_shows_both_answers_and_all_verdicts_side_by_side(gi_run):
    run = viewer.load_run(gi_run)
    sample = viewer.sample_by_id(run, JUDGED)
    journal = [o for o in read_journal(gi_run / "observations.jsonl", owner=False) if o.item_id == JUDGED]
    frame = viewer.verdicts_frame(sample)
    columns = {f"answer {o.model_replicate} · judge {o.judge_replicate}": o for o in journal}
    assert set(frame.columns) == {"", *columns} and len(columns) == 4
    criteria = [c.id for c in sample.rubric.criteria]
    assert list(frame[""])[:len(criteria)] == criteria
    for name, observation in columns.items():
        assert list(frame[name])[:len(criteria)] == [observation.judge_levels[c] for c in criteria]
        assert frame[name].iloc[len(criteria) + 1] == HOSTILE_RATIONALE
    assert [a.response for a in sample.answers] == [
        next(o.response for o in journal if o.model_replicate == m) for m in (0, 1)]
    one = viewer.sample_html(sample, [1])
    assert "answer 1 · judge 0" in one and "answer 0 · judge" not in one


def test_filters_pick_items_by_category_outcome_score_and_text(gi_run):
    run = viewer.load_run(gi_run)
    journal = read_journal(gi_run / "observations.jsonl", owner=False)
    scores: dict[str, list[float]] = {}
    for o in journal:
        scores.setdefault(o.item_id, []).append(o.score)
    below = {item for item, values in scores.items() if sum(values) / len(values) <= 0.5}
    assert EXACT in below and len(below) < len(scores)
    assert {s.item_id for s in viewer.filter_samples(run, score_range=(0.0, 0.5))} == below
    assert {s.category for s in viewer.filter_samples(run, categories=["writing"])} == {"writing"}
    assert [s.item_id for s in viewer.filter_samples(run, text="onerror=ALERT")] == [EXACT]
    assert viewer.filter_samples(run, outcomes=["refusal"]) == []
    table = viewer.observation_table(run, viewer.filter_samples(run, categories=["writing"]))
    assert len(table) == sum(o.category == "writing" for o in journal)


def test_an_ag_run_shows_every_episode_step_by_step(ag_run, capsys):
    journal = read_journal(ag_run / "observations.jsonl", owner=False)
    text, page = page_of(ag_run, capsys)
    assert len(page.rows) == len(journal) == 14
    assert_offline(page)
    run = viewer.load_run(ag_run)
    flags, diffs = set(), 0
    for observation in journal:
        episode = viewer.sample_by_id(run, observation.item_id).answers[0].episode
        steps = observation.score_detail["steps"]
        assert [(s.index, s.tool, s.arguments, s.result, s.diff, s.tokens) for s in episode.steps] == [
            (s["index"], s["tool"], s["arguments"], s["result"], s["diff"], s["tokens"]) for s in steps]
        assert episode.checks == observation.score_detail["checks"]
        for step, recorded in zip(episode.steps, steps):
            if recorded["redundant_of"] is not None:
                assert f"redundant: repeats #{recorded['redundant_of']}" in step.flags
            assert any(f.startswith("redundant") for f in step.flags) == (recorded["redundant_of"] is not None)
            assert any(f.startswith("rework") for f in step.flags) == bool(recorded["rework_of"])
            flags.update(f.split(":")[0] for f in step.flags)
        for step in episode.steps[:3] + [s for s in episode.steps if s.diff][:3]:
            rows = pd.DataFrame([{"state": k, "before": b, "after": a} for k, (b, a) in step.diff.items()])
            shown = html.table(rows) if step.diff else "<p>no state change</p>"
            assert html.escape(step.result) in text and shown in text  # the result and the diff, before and after
        diffs += sum(bool(s.diff) for s in episode.steps)
    assert {"redundant", "rework"} <= flags and diffs > 14
    assert "redundant: repeats #" in text and "rework: overwrites #" in text and "Ended by <b>submit</b>" in text


def test_a_heldout_run_without_its_seed_shows_the_journal_and_says_so(tmp_path, monkeypatch):
    seed = "view-test-heldout-seed-0123456789"
    monkeypatch.setenv("ESAC_HELDOUT_SEED", seed)
    with LoopbackServer(lambda body: "ANSWER: 1") as server:
        assert esac_run("--heldout", "--only", EXACT, "--model", f"openai:m@{server.url}", "--reports",
                        str(tmp_path / "reports"), "--no-cache") == 0
    folder = run_folder_of(tmp_path / "reports")
    monkeypatch.delenv("ESAC_HELDOUT_SEED")
    blind = viewer.load_run(folder)
    sample = viewer.sample_by_id(blind, EXACT)
    assert sample.prompt is None and sample.key is None and sample.answers[0].response == "ANSWER: 1"
    assert any("held-out pool" in note and "--heldout-seed-file" in note for note in blind.notes)
    assert "prompt not available" in viewer.page_html(blind) and seed not in viewer.page_html(blind)
    seed_file = tmp_path / "seed"
    seed_file.write_text(seed)
    seen = viewer.sample_by_id(viewer.load_run(folder, seed_file), EXACT)
    assert seen.prompt and prompt_sha256(seen.prompt) == sample_digest(folder)
    assert seed not in viewer.page_html(viewer.load_run(folder, seed_file))


def sample_digest(folder: Path) -> str:
    return read_journal(folder / "observations.jsonl", owner=False)[0].prompt_sha256


def test_bad_input_is_one_line_and_exit_2(gi_run, tmp_path, capsys):
    for argv, message in ((["view", str(tmp_path / "missing")], "no such run folder"),
                          (["view", str(tmp_path)], "not a run folder"),
                          (["view", str(gi_run), "--html", "-o", str(tmp_path / "no" / "view.html")],
                           "no such folder"),
                          (["view", str(gi_run), "-o", str(tmp_path / "view.html")], "-o goes with --html")):
        assert main(argv) == 2, argv
        error = capsys.readouterr().err.strip()
        assert error.startswith("esac-kit: error:") and message in error and "\n" not in error, error
    with pytest.raises(SystemExit) as usage:
        main(["view", str(gi_run), "--port", "70000"])
    assert usage.value.code == 2 and "not a port" in capsys.readouterr().err


# ---------------------------------------------------------------- the app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_esac_view_serves_the_app_on_loopback_and_stops(gi_run):
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "esac_kit", "view", str(gi_run), "--port", str(port)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              start_new_session=True)
    try:
        status, deadline = None, time.monotonic() + 120
        while status != 200 and time.monotonic() < deadline and server.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/", timeout=5).status_code
            except httpx.TransportError:
                time.sleep(0.5)
        assert status == 200, server.poll()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 143
        with pytest.raises(httpx.TransportError):  # marimo went down with it
            httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
        assert f"on http://127.0.0.1:{port}" in server.stdout.read()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


def notebook():
    """The viewer notebook's marimo App, imported from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("notebook_view", NOTEBOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def text_of(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


def test_marimo_check_strict_passes_on_the_viewer():
    done = subprocess.run([sys.executable, "-m", "marimo", "check", "--strict", str(NOTEBOOK)], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_app_wires_filters_and_pickers_to_the_viewer(gi_run, ag_run):
    app = notebook()
    _, defs = app.run(defs={"args": {"run": str(gi_run)}})
    assert len(defs["run"].observations) == 57 and "quant-" in defs["item"].value
    filters = {"categories": SimpleNamespace(value=["writing"]), "outcomes": SimpleNamespace(value=[]),
               "score_range": SimpleNamespace(value=[0.0, 1.0]), "search": SimpleNamespace(value="")}
    outputs, defs = app.run(defs={"args": {"run": str(gi_run)}, **filters})
    assert {s.category for s in defs["samples"]} == {"writing"} and defs["item"].value.startswith("writing-")
    assert "Verdicts side by side" in defs["sample_view"] and html.escape(HOSTILE_RATIONALE) in text_of(outputs)
    assert HOSTILE_RATIONALE not in text_of(outputs)
    _, defs = app.run(defs={"args": {"run": str(ag_run)}})
    assert "Episode (answer 0)" in defs["sample_view"] and "redundant: repeats #" in defs["sample_view"]


def test_the_app_shows_bad_input_instead_of_raising(tmp_path):
    outputs, defs = notebook().run(defs={"args": {"run": str(tmp_path / "missing")}})
    assert "run" not in defs or defs.get("run") is None
    assert "Cannot open the run" in text_of(outputs) and "no such run folder" in text_of(outputs)


def test_the_app_runs_headless_in_the_marimo_kernel(ag_run, tmp_path):
    target = tmp_path / "view.html"
    done = subprocess.run([sys.executable, "-m", "marimo", "export", "html", str(NOTEBOOK), "-o", str(target), "--",
                           "--run", str(ag_run)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in target.read_text()
