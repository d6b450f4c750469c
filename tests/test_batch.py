"""`esac-kit run --batch` against emulations of OpenAI's Batch API and Anthropic's Message Batches API: the same
scores as an interactive run, partial failures retried in a later batch, and a run killed (SIGKILL) while polling
resumes without submitting any request twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runkit import esac_run, load_report, reference_answers, run_folder_of, scores_of

from esac_kit.loopback import LoopbackServer
from test_bad_inputs import assert_one_line_exit_2, esac

ITEMS = ("quant-tank-mixing", "logic-zebra", "writing-lay-explainer")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_run_scores_exactly_as_the_interactive_run(provider, tmp_path):
    model = "gpt-4.1" if provider == "openai" else "claude-sonnet-4-5"
    with LoopbackServer(reference_answers()) as server:
        common = ("--model", f"{provider}:{model}@{server.url}", "--judge", f"{provider}:{model}@{server.url}",
                  "--no-cache", "--only", *ITEMS)
        assert esac_run(*common, "--reports", str(tmp_path / "live")) == 0
        live_requests = server.requests
        assert esac_run(*common, "--batch", "--batch-poll-s", "0.1", "--reports", str(tmp_path / "batch")) == 0
        submitted = server.batches.submitted
        assert server.requests == live_requests  # the batch run sent no interactive request
    assert sum(submitted.values()) == 2 + 2 + 4  # two exact answers, two judged answers, four judgements
    assert max(submitted.values()) == 1
    assert len(server.batches.batches) == 3  # the answers, the first judge calls, the second
    live, batch = (load_report(run_folder_of(tmp_path / n)) for n in ("live", "batch"))
    assert scores_of(live) == scores_of(batch)
    assert batch["cost"]["batch"] is True
    assert batch["cost"]["total_usd"] == pytest.approx(live["cost"]["total_usd"] * 0.5, abs=2e-6)
    entries = [json.loads(line) for line in (run_folder_of(tmp_path / "batch") / "batches.jsonl").read_text()
               .splitlines()]
    assert [len(e["custom_ids"]) for e in entries] == [4, 2, 2]


def test_requests_a_batch_errored_are_retried_in_a_later_batch(tmp_path):
    flaky = {"count": 0}

    def errors(custom_id: str) -> bool:  # the first request of the first batch fails
        flaky["count"] += 1
        return flaky["count"] == 1

    with LoopbackServer(reference_answers(), batch_errors=errors) as server:
        assert esac_run("--model", f"openai:gpt-4.1@{server.url}", "--no-cache", "--only", "quant-tank-mixing",
                        "logic-zebra", "--batch", "--batch-poll-s", "0.1", "--reports", str(tmp_path)) == 0
        assert max(server.batches.submitted.values()) == 2 and len(server.batches.batches) == 2
    report = load_report(run_folder_of(tmp_path))
    assert [i["score"] for i in report["items"]] == [1.0, 1.0] and report["retries"] == {"http_status": 1}


def test_a_run_killed_while_polling_resumes_without_submitting_a_request_twice(tmp_path):
    with LoopbackServer(reference_answers(), batch_s=4.0) as server:
        args = [sys.executable, "-m", "esac_kit", "run", "--model", f"anthropic:claude-sonnet-4-5@{server.url}",
                "--judge", f"anthropic:claude-sonnet-4-5@{server.url}", "--no-cache", "--only", *ITEMS,
                "--batch", "--batch-poll-s", "0.2", "--reports", str(tmp_path)]
        process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not list(tmp_path.rglob("batches.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # polling now
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        assert len(server.batches.batches) == 1  # the answers' batch, still running
        folder = run_folder_of(tmp_path)
        assert esac_run("--resume", str(folder), "--batch-poll-s", "0.2") == 0
        assert max(server.batches.submitted.values()) == 1  # nothing submitted twice
        assert sum(server.batches.submitted.values()) == 8
    assert load_report(folder)["items"][0]["score"] == 1.0


def test_batch_refuses_what_has_no_batch_engine(tmp_path):
    assert_one_line_exit_2(esac("run", "--model", "local", "--batch"), "has no batch API")
    assert_one_line_exit_2(esac("run", "--suite", "ag", "--model", "openai:gpt-4.1@http://127.0.0.1:9/v1",
                                "--batch"), "AG episodes stay interactive")
