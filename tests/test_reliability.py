"""Faults and concurrency through the real CLI: outages ridden out or aborting after the outage budget, retries of
calls that never landed still counted, one writer per run folder, a journal whose edits are evident, stored
responses capped, and SIGTERM exiting 143."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from esac_kit.cli import main
from esac_kit.loopback import LoopbackServer, outage, transient_faults
from runkit import esac_run, load_report, reference_answers, run_folder_of, scores_of

ITEMS = ("quant-tank-mixing", "quant-crew-work", "logic-zebra", "logic-knights-knaves", "context-grant-panel",
         "honesty-stock-sheet")


@pytest.fixture(scope="module")
def answers():
    return reference_answers()


def run(server, reports: Path, *extra: str) -> int:
    """A GI run of ITEMS against the server with quick backoff (esac_run adds 4 attempts unless told otherwise)."""
    return main(["run", "--model", f"openai:m@{server.url}", "--no-cache", "--retry-base-s", "0.05",
                 "--request-timeout-s", "5", "--reports", str(reports), "--only", *ITEMS, *extra])


@pytest.fixture(scope="module")
def clean(answers, tmp_path_factory):
    reports = tmp_path_factory.mktemp("clean")
    with LoopbackServer(answers) as server:
        assert run(server, reports) == 0
    return load_report(run_folder_of(reports))


def test_an_outage_within_the_budget_is_ridden_out_with_identical_scores(answers, clean, tmp_path):
    with LoopbackServer(answers, fault=outage(after_requests=2, lasting_s=3.0)) as server:
        started = time.monotonic()
        assert run(server, tmp_path, "--concurrency", "2") == 0
        elapsed = time.monotonic() - started
        failures = sum(server.faults.values())
    report = load_report(run_folder_of(tmp_path))
    assert scores_of(report) == scores_of(clean)
    assert failures >= 4 and 3.0 <= elapsed < 20  # the outage cost about its length, not an abort
    assert sum(report["retries"].values()) == failures  # every failed attempt was retried and counted


def test_an_outage_longer_than_the_budget_aborts_after_about_the_budget_and_counts_every_retry(answers, tmp_path,
                                                                                               capsys):
    with LoopbackServer(answers, fault=outage(after_requests=2, lasting_s=float("inf"))) as server:
        started = time.monotonic()
        assert run(server, tmp_path, "--concurrency", "1", "--outage-budget-s", "2") == 3
        elapsed = time.monotonic() - started
        failures = sum(server.faults.values())
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("esac-kit: error:") and "127.0.0.1" in error and "resume" in error
    assert 2.0 <= elapsed < 10
    folder = run_folder_of(tmp_path)
    assert len((folder / "observations.jsonl").read_text().splitlines()) == 2  # finished work kept
    assert main(["report", str(folder)]) == 0
    # One call failed until the budget ran out: all its failures but the last were retries, none landed.
    assert sum(load_report(folder)["retries"].values()) == failures - 1


def test_time_queued_for_a_concurrency_slot_never_counts_against_the_outage_budget(answers, tmp_path):
    # One slot, 0.25 s a request: a retried call waits seconds for the slot, far past the 0.6 s budget
    with LoopbackServer(answers, fault=transient_faults(0.5, kinds=("503",), max_failures=1),
                        latency_s=0.25) as server:
        assert run(server, tmp_path, "--concurrency", "1", "--outage-budget-s", "0.6") == 0
        assert sum(server.faults.values()) >= 1
    assert load_report(run_folder_of(tmp_path))["items"]


def slow_run_in_a_subprocess(server, reports: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "esac_kit", "run", "--model", f"openai:m@{server.url}",
                             "--no-cache", "--concurrency", "1", "--reports", str(reports), "--only", *ITEMS],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_lines(folder_root: Path, lines: int, timeout_s: float = 60) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        journals = list(folder_root.rglob("observations.jsonl"))
        if journals and len(journals[0].read_text().splitlines()) >= lines:
            return journals[0].parent
        time.sleep(0.05)
    raise AssertionError("the run never journalled")


def test_a_second_writer_of_a_run_folder_exits_2_naming_the_holder_and_nothing_is_duplicated(answers, tmp_path,
                                                                                           capsys):
    with LoopbackServer(answers, latency_s=0.4) as server:
        first = slow_run_in_a_subprocess(server, tmp_path)
        try:
            folder = wait_for_lines(tmp_path, 1)
            assert esac_run("--resume", str(folder)) == 2
            error = capsys.readouterr().err.strip().splitlines()[-1]
            assert f"being written by pid {first.pid}" in error
            assert first.wait(timeout=120) == 0
        finally:
            first.kill()
    slots = [(o["item_id"], o["model_replicate"], o["judge_replicate"])
             for o in map(json.loads, (folder / "observations.jsonl").read_text().splitlines())]
    assert len(slots) == len(set(slots)) == len(ITEMS)


def test_sigterm_ends_a_run_with_exit_143_and_keeps_its_work(answers, tmp_path):
    with LoopbackServer(answers, latency_s=0.4) as server:
        child = slow_run_in_a_subprocess(server, tmp_path)
        folder = wait_for_lines(tmp_path, 1)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=60) == 143
    kept = (folder / "observations.jsonl").read_text().splitlines()
    assert kept and all(json.loads(line)["chain"] for line in kept)
    assert not [p for p in os.listdir(folder) if p.endswith(".tmp")]


@pytest.fixture
def finished(answers, tmp_path):
    with LoopbackServer(answers) as server:
        assert run(server, tmp_path) == 0
    return run_folder_of(tmp_path)


def edit_line(folder: Path, number: int, change) -> None:
    path = folder / "observations.jsonl"
    lines = path.read_text().splitlines()
    record = json.loads(lines[number - 1])
    change(record)
    lines[number - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")


def test_an_edited_journal_score_makes_the_report_say_tampered(finished, capsys):
    assert main(["report", str(finished)]) == 0
    head = load_report(finished)["journal_head"]
    assert load_report(finished)["tampered"] is False and len(head) == 64
    capsys.readouterr()
    edit_line(finished, 3, lambda record: record.update(score=1.0 - record["score"]))
    assert main(["report", str(finished)]) == 0
    assert "tampered: journal line 3 does not match its hash chain" in capsys.readouterr().out
    report = load_report(finished)
    assert report["tampered"] is True and report["official"] is False


@pytest.mark.parametrize("damage, message", [
    ("duplicate", "journal line 7 repeats the observation of line 1"),
    ("unknown", "journal line 2 names item 'quant-no-such-item'"),
    ("garbage", "corrupt journal line 7"),
])
def test_a_journal_with_a_repeated_unknown_or_garbage_line_is_one_line_exit_2(finished, capsys, damage, message):
    path = finished / "observations.jsonl"
    lines = path.read_text().splitlines()
    if damage == "duplicate":
        lines.append(lines[0])
    elif damage == "unknown":
        record = json.loads(lines[1])
        lines[1] = json.dumps(record | {"item_id": "quant-no-such-item"})
    else:
        lines.append("this is not a record")
    path.write_text("\n".join(lines) + "\n")
    before = path.read_bytes()
    for command in (["report", str(finished)], ["run", "--resume", str(finished)]):
        assert main(command) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and message in error[0], error
    assert path.read_bytes() == before  # nothing read it away


def test_a_huge_answer_is_stored_capped_with_its_length_and_digest(answers, tmp_path):
    from esac_kit.records import RESPONSE_CHARS_PER_TOKEN
    from esac_kit.suite import load_suite

    cap = load_suite("gi").manifest.output_budget_tokens * RESPONSE_CHARS_PER_TOKEN
    huge = "ANSWER: 7\n" + "x" * (cap + 100_000)

    def answer(body):
        return huge

    with LoopbackServer(answer) as server:
        assert main(["run", "--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(tmp_path),
                     "--only", "quant-tank-mixing"]) == 0
    folder = run_folder_of(tmp_path)
    [record] = map(json.loads, (folder / "observations.jsonl").read_text().splitlines())
    import hashlib

    assert record["response_chars"] == len(huge) and len(record["response"]) == cap
    assert record["response_sha256"] == hashlib.sha256(huge.encode()).hexdigest()
    assert (folder / "observations.jsonl").stat().st_size < 2 * cap


def test_a_reply_after_the_time_budget_is_a_model_failure_scored_as_no_answer(answers, tmp_path):
    import shutil

    items = tmp_path / "items"
    shutil.copytree(Path(__file__).resolve().parent.parent / "items", items)
    path = items / "gi" / "quant-tank-mixing.toml"
    path.write_text(path.read_text().replace('\ncategory = "quant"\n', '\ncategory = "quant"\ntime_budget_s = 0.3\n', 1))
    with LoopbackServer(answers, latency_s=0.6) as server:  # the right answer, but too late
        for stream in ("false", "true"):
            assert main(["run", "--model", f"openai:m@{server.url}", "--no-cache", "--items", str(items), "-M",
                         f"stream={stream}", "--reports", str(tmp_path / stream), "--only", "quant-tank-mixing"]) == 0
    [whole] = map(json.loads, (run_folder_of(tmp_path / "false") / "observations.jsonl").read_text().splitlines())
    assert whole["outcome"] == "time_budget" and whole["score"] == 0.0 and "ANSWER:" in whole["response"]
    # Streamed, the reading stops at the budget: what came after it is not the model's answer
    [streamed] = map(json.loads, (run_folder_of(tmp_path / "true") / "observations.jsonl").read_text().splitlines())
    assert streamed["outcome"] == "time_budget" and streamed["score"] == 0.0


def test_a_notebook_run_stops_cooperatively_and_releases_the_folder(answers, tmp_path):
    from esac_kit import runs, watch
    from esac_kit.errors import RunStopped

    with LoopbackServer(answers, latency_s=0.4) as server:
        plan = runs.plan_run("gi", "public", f"openai:m@{server.url}", concurrency=1, only=list(ITEMS),
                             reports_dir=tmp_path)
        handle = watch.start_run(plan, use_cache=False)
        wait_for_lines(tmp_path, 1)
        assert handle.stop(timeout_s=30)
        with pytest.raises(RunStopped):
            handle.result()
        kept = len((plan.folder / "observations.jsonl").read_text().splitlines())
        assert 1 <= kept < len(ITEMS)
        assert esac_run("--resume", str(plan.folder)) == 0  # the lock is free and the run finishes
    assert len((plan.folder / "observations.jsonl").read_text().splitlines()) == len(ITEMS)
