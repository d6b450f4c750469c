"""The publishable report: `esac-kit report RUN --html` writes one offline HTML file that headless Chromium renders
with networking disabled (headline, every item row, every chart as SVG, nothing fetched, no code); `--latex` writes
booktabs tables with every string escaped; `--json` prints only the report's JSON."""

import hashlib
import json
import re
import socket
import subprocess
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from esac_kit import report_tables
from esac_kit.providers import model_title
from esac_kit.ag.policies import scripted_answer, script_for
from esac_kit.ag.task import Call
from esac_kit.cli import main
from esac_kit.compare import load_report
from esac_kit.gi.judge import is_judge_request
from esac_kit.instances import build_tasks
from esac_kit.loopback import LoopbackServer, transient_faults
from esac_kit.pools import public_pool
from esac_kit.report_html import report_page
from esac_kit.report_latex import latex_escape, report_latex
from esac_kit.suite import load_suite
from esac_kit.watch import run_frame
from runkit import esac_run, reference_answers, run_folder_of

CHROMIUM = "/usr/bin/chromium"
# Model output that would run or fetch if it ever became markup.
HOSTILE = '<script>alert("x")</script><img src="http://evil.invalid/pixel.png">'
# Chromium's own background traffic (time sync, accounts), not the page's.
CHROMIUM_OWN = re.compile(r"^(?:[\w-]+\.)*(?:google\.com|gstatic\.com|googleapis\.com)$")


def judged_noisily(answers):
    """Reference answers, and a judge whose levels vary with the request, so that judge replicates spread."""

    def answer(body):
        if not is_judge_request(body):
            return answers(body)
        response_format = body["response_format"]
        schema = response_format.get("schema") or response_format["json_schema"]["schema"]
        levels = schema["properties"]["levels"]["properties"]
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
        return json.dumps({"rationale": "scripted", "levels": {
            k: max(v["enum"]) - digest[n] % 2 for n, (k, v) in enumerate(levels.items())}})

    return answer


def hostile_agent():
    """On every AG task: first an unknown tool whose argument is markup, then the wasteful agent's calls."""
    suite = load_suite("ag")
    tasks = build_tasks(suite, suite.items, public_pool(suite.manifest.public_seed))
    return scripted_answer({task.prompt: (Call("no_such_tool", {"note": HOSTILE}), *script_for(task, "wasteful"))
                            for task in tasks.values()})


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A GI run (a noisy judge, transient faults retried) and an AG run (an agent that sends markup), both against
    the loopback server, each rendered with --html."""
    reports = tmp_path_factory.mktemp("reports")
    with LoopbackServer(judged_noisily(reference_answers()), fault=transient_faults(0.1)) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(reports / "gi"), "--no-cache") == 0
    with LoopbackServer(hostile_agent()) as server:
        assert esac_run("--suite", "ag", "--model", f"openai:agent@{server.url}", "--reports", str(reports / "ag"),
                        "--no-cache") == 0
    folders = {name: run_folder_of(reports / name) for name in ("gi", "ag")}
    for folder in folders.values():
        assert main(["report", str(folder), "--html"]) == 0
    return folders


class Recorder:
    """A TCP listener standing in for every proxy: it answers nothing and keeps each request's first line."""

    def __init__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(64)
        self.port = self.socket.getsockname()[1]
        self.lines: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            with connection:
                connection.settimeout(2)
                try:
                    self.lines.append(connection.recv(4096).decode("latin-1").split("\r\n")[0])
                except OSError:
                    pass

    def page_hosts(self) -> set[str]:
        """The hosts asked for that are not Chromium's own background services."""
        hosts = set()
        for line in self.lines:
            parts = line.split()
            if len(parts) >= 2:
                target = parts[1].split("://")[-1]
                hosts.add(target.split("/")[0].rsplit(":", 1)[0])
        return {host for host in hosts if not CHROMIUM_OWN.match(host)}

    def close(self) -> None:
        self.socket.close()


def chromium(page: Path, tmp_path: Path, *extra: str) -> tuple[str, set[str]]:
    """Open a page in headless Chromium with networking disabled: every host resolves to nothing and every request
    goes to a local recorder that answers nothing. Returns the rendered DOM and the hosts the page asked for."""
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install it with `make browser` (the test target runs it)")
    recorder = Recorder()
    try:
        done = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'chrome'}",
             f"--proxy-server=127.0.0.1:{recorder.port}", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             *extra, "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    finally:
        recorder.close()
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, recorder.page_hosts()


class Dom(HTMLParser):
    """A rendered DOM read for what a reader sees: the title, each table's body rows by class, each chart's SVG,
    every tag and the visible text."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "source", "wbr", "area", "base", "col", "embed"}

    def __init__(self, markup: str):
        super().__init__()
        self.stack: list[tuple[str, str]] = []
        self.tags: set[str] = set()
        self.h1 = ""
        self.rows: dict[str, list[list[str]]] = {}
        self.charts: list[int] = []  # per chart: the SVG elements inside it
        self.cards: dict[str, str] = {}
        self.text: list[str] = []
        self._table = self._cell = self._card = None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        css = dict(attrs).get("class") or ""
        self.tags.add(tag)
        if tag == "table":
            self._table = css
            self.rows.setdefault(css, [])
        elif tag == "tr" and self._table is not None and self._inside("tbody"):
            self.rows[self._table].append([])
        elif tag == "td" and self._table is not None and self._inside("tbody"):
            self._cell = ""
        elif tag == "div" and css == "chart":
            self.charts.append(0)
        elif tag == "svg" and self._inside("div", "chart"):
            self.charts[-1] += 1
        elif tag == "div" and css == "card":
            self._card = []
        if tag not in self.VOID:
            self.stack.append((tag, css))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[self._table][-1].append(self._cell.strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag == "div" and self.stack and self.stack[-1] == ("div", "card") and self._card:
            self.cards[self._card[0]] = self._card[1]
            self._card = None
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.stack and self.stack[-1][0] == "h1":
            self.h1 += data
        if self._cell is not None:
            self._cell += data
        if self._card is not None and data.strip():
            self._card.append(data.strip())
        if not self._inside("style"):
            self.text.append(data)

    def _inside(self, tag: str, css: str | None = None) -> bool:
        return any(t == tag and (css is None or c == css) for t, c in self.stack)


# ---------------------------------------------------------------- the page as Chromium renders it


@pytest.mark.parametrize("suite", ["gi", "ag"])
def test_chromium_offline_renders_the_headline_every_item_and_every_chart(suite, runs, tmp_path):
    folder = runs[suite]
    report = load_report(folder)
    markup, asked = chromium(folder / "report.html", tmp_path)
    dom = Dom(markup)
    assert asked == set(), asked  # the page fetched nothing
    assert dom.h1 == f"{report.suite.upper()} {report.version} · {model_title(report.model.name)}"
    assert dom.cards["verdict"] == ("PASS" if report.passed else "FAIL")
    assert dom.cards["total"] == f"{report.total:.2f} / {report.max_total:g}"
    assert [row[0] for row in dom.rows["items"]] == [i.item_id for i in report.items]
    assert len(report.items) == len(load_suite(suite).items)  # every item, not the first ten
    assert [float(row[2]) for row in dom.rows["items"]] == [round(i.score, 3) for i in report.items]
    extra = 3 if report.modifier is not None else 1  # total; AG: capability, modifier and total
    assert [row[0] for row in dom.rows["categories"]] == [c.id for c in report.categories] + \
        (["capability", "efficiency modifier", "total"] if extra == 3 else ["total"])
    assert len(dom.charts) == 2 and all(count >= 1 for count in dom.charts), dom.charts
    assert {"svg", "path", "text"} <= dom.tags and not dom.tags & {"script", "link", "img", "iframe", "object"}
    provenance = {row[0]: row[1] for row in dom.rows["provenance"]}
    assert provenance["scoring fingerprint"] == report.fingerprints["scoring"]
    assert provenance["content fingerprint"] == report.fingerprints["content"]
    assert provenance["pool (seed or commitment)"] == report.pool.label
    assert provenance["model parameters"].startswith("temperature=") and provenance["cost"].startswith("unknown (")


def test_chromium_shows_the_ag_breakdown_and_the_agents_markup_as_text(runs, tmp_path):
    report = load_report(runs["ag"])
    dom = Dom(chromium(runs["ag"] / "report.html", tmp_path)[0])
    assert [row[0] for row in dom.rows["efficiency"]] == [t.item_id for t in report.efficiency]
    assert all(task.invalid >= 1 for task in report.efficiency)  # the unknown tool, on every task
    assert dom.cards["efficiency modifier"] == f"{report.modifier:.2f} / {report.max_modifier:g}"
    text = "".join(dom.text)
    assert text.count("no_such_tool") >= len(report.efficiency) and '{"note": "<script>alert(' in text
    assert "script" not in dom.tags and "img" not in dom.tags  # shown as text, never markup
    assert "Not an AG run" not in text and "No judge-graded items" in text


def test_chromium_shows_the_gi_variance_failures_and_retries(runs, tmp_path):
    report = load_report(runs["gi"])
    frame = run_frame(runs["gi"])
    dom = Dom(chromium(runs["gi"] / "report.html", tmp_path)[0])
    judged = sorted(set(frame.loc[frame["judge_replicate"].notna(), "item_id"]))
    assert sorted(row[0] for row in dom.rows["spreads"]) == judged
    assert any(row[6] not in ("—", "0.000") for row in dom.rows["spreads"])  # the noisy judge spreads
    components = dict(dom.rows["components"])
    assert int(components["items"]) == len(judged) and float(components["var_judge"]) > 0 and "alpha" in components
    assert report.retries and len(dom.rows["failures"]) == len(report_tables.failures_frame(frame)) > 0
    assert "Not an AG run" in "".join(dom.text)


def test_the_recorder_catches_a_page_that_fetches(tmp_path):
    page = tmp_path / "fetching.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://example.invalid/x.png"><p>x</p></body></html>')
    assert chromium(page, tmp_path)[1] == {"example.invalid"}


# ---------------------------------------------------------------- the file itself


@pytest.mark.parametrize("suite", ["gi", "ag"])
def test_the_file_references_nothing_outside_and_holds_no_code(suite, runs):
    page = (runs[suite] / "report.html").read_text()
    assert not re.search(r"<(script|link|iframe|object|embed|img)\b", page, re.I)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"url\(|@import", page, re.I)
    for code in (r"\bdef \w+\(", r"\bimport \w+", r"\bmo\.\w", r"\bfrom esac_kit\b", "Traceback"):
        assert not re.search(code, page), code
    numbers = re.findall(r'<td class="num">([^<]*)</td>', page)
    assert numbers and all(re.fullmatch(r"-?[\d,]+(?:\.\d{1,4})?|—", n) for n in numbers), numbers[:20]


def test_report_text_is_escaped_in_the_page(runs):
    report = load_report(runs["gi"])
    hostile = report.model_copy(update={"notes": [HOSTILE], "model": report.model.model_copy(update={"name": HOSTILE})})
    page = report_page(hostile, run_frame(runs["gi"]))
    assert "<script" not in page and "<img" not in page and "&lt;script&gt;" in page


# ---------------------------------------------------------------- --latex and --json


def test_latex_tables_are_booktabs_with_one_row_per_category_and_item(runs, capsys):
    folder = runs["ag"]
    assert main(["report", str(folder), "--latex"]) == 0
    assert "report.tex" in capsys.readouterr().out
    tex = (folder / "report.tex").read_text()
    report = load_report(folder)
    assert tex.splitlines()[1] == r"% needs \usepackage{booktabs} in the preamble"
    assert tex.count(r"\begin{tabular}") == tex.count(r"\bottomrule") == tex.count(r"\toprule") == 2
    tables = re.findall(r"\\begin\{tabular\}\{(\w+)\}(.*?)\\end\{tabular\}", tex, re.S)
    for (align, body), count in zip(tables, (len(report.categories) + 3, len(report.items))):
        rows = body.split(r"\midrule")[1].split(r"\bottomrule")[0].strip().splitlines()
        assert len(rows) == count
        assert all(len(re.findall(r"(?<!\\)&", row)) == len(align) - 1 and row.endswith(r" \\") for row in rows)
    assert f"{report.items[0].score:.3f}" in tex and r"tools-access-provisioning" in tex


def test_latex_escapes_every_special_in_every_string(runs):
    report = load_report(runs["gi"])
    evil = "m_1 & 50% $x$ #2 {a} ~b ^c \\d <e> |f\n\\input{/etc/passwd}"
    items = [report.items[0].model_copy(update={"item_id": "item_&_%"}), *report.items[1:]]
    tex = report_latex(report.model_copy(update={"model": report.model.model_copy(update={"name": evil}),
                                                 "items": items}))
    escaped = (r"m\_1 \& 50\% \$x\$ \#2 \{a\} \textasciitilde{}b \textasciicircum{}c \textbackslash{}d "
               r"\textless{}e\textgreater{} \textbar{}f \textbackslash{}input\{/etc/passwd\}")
    assert latex_escape(evil) == escaped
    assert tex.count(escaped) == 3  # the comment line and both captions
    assert r"item\_\&\_\%" in tex and not any(line.startswith(r"\input") for line in tex.splitlines())
    assert all(line.startswith("%") for line in tex.splitlines()[:2])


def test_report_json_prints_only_the_report(runs, capsys):
    folder = runs["gi"]
    assert main(["report", str(folder), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((folder / "report.json").read_text())
    assert printed == saved and printed["run_id"] == folder.name
    assert len(printed["items"]) == len(load_suite("gi").items)
