"""`esac-kit runs` and the --json of runs, leaderboard, compare and items: every run folder with its status, failed
starts that leave nothing behind, per-category intervals on the leaderboard, and judges that differ only by URL."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from esac_kit.cli import main
from esac_kit.loopback import LoopbackServer
from esac_kit.watch import find_runs
from runkit import esac_run, load_report, reference_answers, run_folder_of

QUANT = ("quant-tank-mixing", "quant-crew-work", "quant-tax-ledger")  # three items: the category has an interval
JUDGED = "calibration-expert-narrow-question"


def esac(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real command in a fresh process."""
    return subprocess.run([sys.executable, "-m", "esac_kit", *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def json_of(capsys, *argv: str) -> object:
    """Run a command in-process and parse its whole stdout as JSON (nothing else may be printed there)."""
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_files(reports: Path) -> list[Path]:
    return sorted(reports.rglob("*")) if reports.exists() else []


@pytest.fixture(scope="module")
def answers():
    return reference_answers()


# ---------------------------------------------------------------- failed starts leave nothing behind


def test_a_run_against_a_closed_port_exits_3_in_one_line_and_leaves_no_run(tmp_path, capsys):
    reports = tmp_path / "reports"
    url = f"http://127.0.0.1:{closed_port()}/v1"
    done = esac("run", "--model", f"openai:m@{url}", "--no-cache", "--reports", str(reports), "--only", *QUANT,
                "--outage-budget-s", "1", "--retry-base-s", "0.05")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert lines[-1].startswith("esac-kit: error:") and url in lines[-1] and "no run folder was kept" in lines[-1]
    assert "--resume" not in lines[-1]  # there is nothing to resume
    assert not [p for p in run_files(reports) if p.is_file()]  # not even an empty journal or a lock
    assert json_of(capsys, "runs", str(reports), "--json", "--all") == []
    assert find_runs(reports) == []


def test_a_run_with_a_missing_key_exits_2_in_one_line_and_leaves_no_folder(tmp_path, capsys):
    reports = tmp_path / "reports"
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    done = esac("run", "--model", "openai:gpt-4o", "--no-cache", "--reports", str(reports), env=env)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0] == "esac-kit: error: openai:gpt-4o needs an API key: set OPENAI_API_KEY"
    assert "folder" not in done.stdout  # no folder is announced that does not exist
    assert run_files(reports) == []
    assert json_of(capsys, "runs", str(reports), "--json", "--all") == []


def test_a_start_killed_before_its_first_observation_is_failed_and_no_picker_offers_it(tmp_path, capsys, answers):
    reports = tmp_path / "reports"
    with LoopbackServer(answers) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(reports),
                        "--only", QUANT[0]) == 0
    done = run_folder_of(reports)
    killed = done.parent / "20200101T000000Z-dead00"  # what a kill -9 during the start leaves
    killed.mkdir()
    shutil.copy(done / "run.json", killed / "run.json")
    (killed / "observations.jsonl").write_text("")
    pending = done.parent / "20200101T000000Z-batch0"  # killed while its submitted batch was being answered
    shutil.copytree(killed, pending)
    (pending / "batches.jsonl").write_text('{"id": "batch_1"}\n')
    garbled = done.parent / "20200101T000000Z-bad000"
    garbled.mkdir()
    (garbled / "run.json").write_text("{ not json")
    listed = json_of(capsys, "runs", str(reports), "--json")
    assert [(r["folder"], r["status"]) for r in listed] == [(str(done), "complete"), (str(pending), "incomplete")]
    everything = {r["folder"]: r for r in json_of(capsys, "runs", str(reports), "--json", "--all")}
    assert everything[str(killed)]["status"] == "failed" and everything[str(garbled)]["status"] == "failed"
    assert "run.json" in everything[str(garbled)]["reason"]
    assert find_runs(reports) == [done, pending]
    assert main(["runs", str(reports)]) == 0
    text = capsys.readouterr().out
    assert "2 failed start(s) not shown" in text and str(killed) not in text


# ---------------------------------------------------------------- statuses


def test_runs_lists_each_run_with_its_status_newest_first(tmp_path, capsys, answers, request):
    reports = tmp_path / "reports"
    with LoopbackServer(answers) as server:
        assert esac_run("--model", f"openai:gpt-4.1@{server.url}", "--no-cache", "--reports", str(reports),
                        "--only", *QUANT) == 0
        complete = run_folder_of(reports)
        time.sleep(1.1)  # run ids and start times have whole seconds: the next run starts later
    down = {"after": 1}  # requests answered before the outage; it ends when set to None
    served = []

    def fault(body, attempt):
        served.append(attempt)
        return "503" if down["after"] is not None and len(served) > down["after"] else None

    server = LoopbackServer(answers, fault=fault).__enter__()
    request.addfinalizer(lambda: server.__exit__(None, None, None))
    assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(reports),
                    "--only", *QUANT, "--concurrency", "1", "--outage-budget-s", "1") == 3
    aborted = next(p.parent for p in reports.rglob("run.json") if p.parent != complete)
    listed = json_of(capsys, "runs", str(reports), "--json")
    assert [r["folder"] for r in listed] == [str(aborted), str(complete)]  # newest first
    assert listed[0]["started"] > listed[1]["started"]
    first, second = listed
    assert second["status"] == "complete" and first["status"] == "aborted"
    report = load_report(complete)
    assert (second["total"], second["max_total"]) == (report["total"], report["max_total"])
    assert second["cost_usd"] == pytest.approx(report["cost"]["total_usd"]) and second["cost_usd"] > 0
    assert second["suite"] == "gi" and second["version"] == report["version"] and second["judge"] is None
    assert second["model"].startswith("openai:gpt-4.1@") and second["observations"] == len(QUANT)
    assert first["observations"] == 1 and first["total"] is None and "HTTP 503" in first["reason"]
    assert main(["runs", str(reports)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "openai:" in line]
    assert "aborted" in rows[0] and "complete" in rows[1] and f"{report['total']:.2f}/{report['max_total']:g}" in rows[1]
    down["after"] = None  # the outage is over: resumed, the run is complete and no longer aborted
    assert esac_run("--resume", str(aborted), "--no-cache") == 0
    assert {r["status"] for r in json_of(capsys, "runs", str(reports), "--json")} == {"complete"}
    assert not (aborted / "abort.json").exists()


def test_a_run_being_written_is_running_and_a_killed_one_incomplete(tmp_path, capsys, answers):
    reports = tmp_path / "reports"
    with LoopbackServer(answers, latency_s=0.4) as server:
        writer = subprocess.Popen([sys.executable, "-m", "esac_kit", "run", "--model", f"openai:m@{server.url}",
                                   "--no-cache", "--concurrency", "1", "--reports", str(reports), "--only", *QUANT],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not any(p.stat().st_size for p in reports.rglob("observations.jsonl")):
                assert time.monotonic() < deadline and writer.poll() is None, "the run never journalled"
                time.sleep(0.05)
            (running,) = json_of(capsys, "runs", str(reports), "--json")
            assert running["status"] == "running" and running["observations"] >= 1
        finally:
            writer.kill()
            writer.wait()
    (killed,) = json_of(capsys, "runs", str(reports), "--json")
    assert killed["status"] == "incomplete" and 1 <= killed["observations"] < len(QUANT), killed
    assert "--resume" in killed["reason"]


def test_runs_of_a_reports_path_that_is_a_file_is_one_line_exit_2(tmp_path):
    path = tmp_path / "reports"
    path.write_text("a file")
    done = esac("runs", str(path), timeout=60)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"esac-kit: error: {path}: the reports path is not a folder"]


# ---------------------------------------------------------------- --json, the leaderboard, judges by URL


@pytest.fixture(scope="module")
def judged_runs(tmp_path_factory, answers):
    """Two runs of three quant items and a judged item, judged by the same judge served at two URLs."""
    reports = tmp_path_factory.mktemp("judged")
    folders = []
    for model in ("alpha", "beta"):
        with LoopbackServer(answers) as server:
            assert esac_run("--model", f"openai:{model}@{server.url}", "--judge", f"openai:j@{server.url}",
                            "--no-cache", "--reports", str(reports / model), "--only", *QUANT, JUDGED) == 0
        folders.append(run_folder_of(reports / model))
    return reports, folders


def test_compare_takes_a_judge_at_another_url_as_the_same_judge_and_says_so(judged_runs, capsys):
    _, (a, b) = judged_runs
    judges = [load_report(folder)["judge"]["name"] for folder in (a, b)]
    assert judges[0] != judges[1] and judges[0].split("@")[0] == judges[1].split("@")[0] == "openai:j"
    compared = json_of(capsys, "compare", str(a), str(b), "--json")
    assert any("different URLs" in note for note in compared["notes"])
    assert compared["a"]["folder"] == str(a) and compared["b"]["model"].startswith("openai:beta@")
    categories = {row["category"] for row in compared["paired"]}
    assert {"quant", "calibration"} <= categories and all("diff" in row for row in compared["paired"])


def _with_judge(folder: Path, tmp_path: Path, **changes) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    report = json.loads((copy / "report.json").read_text())
    report["judge"] |= {k: v for k, v in changes.items() if k == "name"}
    report["judge"]["parameters"] |= {k: v for k, v in changes.items() if k != "name"}
    (copy / "report.json").write_text(json.dumps(report))
    return copy


def test_compare_refuses_a_judge_with_other_parameters_or_another_model(judged_runs, tmp_path, capsys):
    _, (a, b) = judged_runs
    hotter = _with_judge(b, tmp_path / "t", temperature=0.2)
    assert main(["compare", str(a), str(hotter)]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "different parameters" in error[0] and "temperature=0.2" in error[0]
    other = _with_judge(b, tmp_path / "m", name="openai:k@http://127.0.0.1:1/v1")
    assert main(["compare", str(a), str(other)]) == 2
    assert "different judges" in capsys.readouterr().err


def test_leaderboard_json_has_each_category_with_its_exact_interval(judged_runs, capsys):
    reports, folders = judged_runs
    board = json_of(capsys, "leaderboard", str(reports), "--json")
    assert {row["folder"] for row in board["runs"]} == {str(f) for f in folders} and isinstance(board["notes"], list)
    for row in board["runs"]:
        report = load_report(Path(row["folder"]))
        assert row["total"] == pytest.approx(report["total"]) and row["max"] == report["max_total"]
        assert [row["total_ci_low"], row["total_ci_high"]] == pytest.approx(report["total_ci_exact"])
        for category in report["categories"]:
            assert row[category["id"]] == pytest.approx(category["points"])
            interval = [row[f"{category['id']}_ci_low"], row[f"{category['id']}_ci_high"]]
            assert interval == ([None, None] if category["ci_exact"] is None else pytest.approx(category["ci_exact"]))
        assert row["quant_ci_low"] is not None  # three quant items: an exact interval
        assert "ag" not in json.dumps(row.get("modifier"))  # a GI row carries no AG modifier
    assert main(["leaderboard", str(reports)]) == 0
    text = capsys.readouterr().out
    quant = load_report(folders[0])["categories"]
    quant = next(c for c in quant if c["id"] == "quant")
    assert "quant" in text and f"{quant['points']:.2f} ({quant['ci_exact'][0]:.2f}–{quant['ci_exact'][1]:.2f})" in text


def test_items_json_lists_categories_and_every_item(capsys):
    data = json_of(capsys, "items", "--json")
    assert data["suite"] == "gi" and sum(c["points"] for c in data["categories"]) == pytest.approx(data["total_points"])
    assert len(data["items"]) == data["total_items"] and {"id", "category", "weight"} <= set(data["items"][0])
    assert json_of(capsys, "items", "--suite", "ag", "--json")["efficiency_points"] > 0


def test_json_commands_print_only_json_even_with_notes(judged_runs, tmp_path, capsys):
    reports, (a, _) = judged_runs
    board = tmp_path / "board"
    shutil.copytree(a, board / "alpha")
    cut = board / "cut"
    shutil.copytree(a, cut)
    report = json.loads((cut / "report.json").read_text())
    (cut / "report.json").write_text(json.dumps(report | {"total": None}))  # an incomplete run: left out, noted
    data = json_of(capsys, "leaderboard", str(board), "--json")
    assert len(data["runs"]) == 1 and any(str(cut) in note and "incomplete" in note for note in data["notes"])
    done = esac("leaderboard", str(board), "--json", timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["notes"] == data["notes"]
    done = esac("runs", str(reports), "--json", timeout=60)
    assert done.returncode == 0 and len(json.loads(done.stdout)) == 2


def test_json_piped_into_a_reader_that_has_left_exits_quietly():
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte (`esac-kit items --json | head -c0`)
    try:
        writer = subprocess.run([sys.executable, "-m", "esac_kit", "items", "--list", "--json"], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert "Traceback" not in writer.stderr and "BrokenPipeError" not in writer.stderr, writer.stderr
    assert writer.returncode == 141  # 128 + SIGPIPE, as a shell reports a writer whose reader left
