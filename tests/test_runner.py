"""Running models over real loopback HTTP servers: replication, failure rules, journal, resume and cache."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from esac_kit.loopback import LoopbackServer, transient_faults
from esac_kit.gi.judge import is_judge_request
from runkit import PACK, esac_run, load_report, reference_answers, run_folder_of, scores_of

JUDGED = 7
DETERMINISTIC = 29


@pytest.fixture(scope="module")
def answers():
    return reference_answers()


@pytest.fixture(scope="module")
def clean_run(answers, tmp_path_factory):
    """A fault-free run on the OpenAI protocol, the baseline other runs must reproduce."""
    reports = tmp_path_factory.mktemp("clean")
    with LoopbackServer(answers) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(reports), "--no-cache")
        requests = server.requests
    assert code == 0
    folder = run_folder_of(reports)
    return folder, load_report(folder), requests


def journal(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "observations.jsonl").read_text().splitlines()]


def test_replication_plan_stores_four_observations_per_judged_item(clean_run):
    folder, report, requests = clean_run
    per_item = Counter(o["item_id"] for o in journal(folder))
    judged = {i for i, n in per_item.items() if i.startswith(("calibration-", "writing-"))}
    assert len(judged) == JUDGED and all(per_item[i] == 4 for i in judged)
    assert sorted(n for i, n in per_item.items() if i not in judged) == [1] * DETERMINISTIC
    slots = {(o["item_id"], o["model_replicate"], o["judge_replicate"]) for o in journal(folder)}
    assert len(slots) == DETERMINISTIC + 4 * JUDGED
    # 29 + 2 answers per judged item, plus 2 judgements per answer: no replicate shares a request.
    assert requests == DETERMINISTIC + 2 * JUDGED + 4 * JUDGED


def test_reference_answers_score_full_marks_and_pass(clean_run):
    _, report, _ = clean_run
    assert report["total"] == pytest.approx(100) and report["passed"] and report["reasons"] == []
    row = journal(clean_run[0])[0]
    for field in ("run_id", "suite", "version", "pool", "item_id", "category", "model_replicate", "judge_replicate",
                  "outcome", "score", "tokens_in", "tokens_out", "latency_s", "attempts"):
        assert field in row


def test_thirty_percent_transient_faults_give_the_same_scores_and_count_retries(answers, clean_run, tmp_path):
    with LoopbackServer(answers, fault=transient_faults(0.3)) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path), "--no-cache")
        injected = sum(server.faults.values())
        faulted_kinds = set(server.faults)
    assert code == 0
    report = load_report(run_folder_of(tmp_path))
    assert scores_of(report) == scores_of(clean_run[1])
    assert injected >= 15 and sum(report["retries"].values()) == injected
    assert len(faulted_kinds) >= 4 and {"rate_limit", "http_status", "transport", "malformed_body"} & set(report["retries"])


def test_anthropic_protocol_gives_the_same_scores(answers, clean_run, tmp_path):
    with LoopbackServer(answers) as server:
        code = esac_run("--model", f"anthropic:claude-test@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path), "--no-cache")
        assert server.paths["/v1/messages"] == DETERMINISTIC + 2 * JUDGED
    assert code == 0
    assert scores_of(load_report(run_folder_of(tmp_path))) == scores_of(clean_run[1])


def test_persistent_outage_exits_3_keeps_work_and_resume_matches(answers, clean_run, tmp_path, capsys):
    served = Counter()
    outage = {"on": True}

    def outage_after_twenty(body, attempt):
        served["n"] += 1
        return "503" if outage["on"] and served["n"] > 20 else None

    with LoopbackServer(answers, fault=outage_after_twenty) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path), "--no-cache", "--concurrency", "1")
        assert code == 3
        message = capsys.readouterr().err.strip().splitlines()[-1]
        assert "HTTP 503" in message and server.url in message and "item " in message
        folder = run_folder_of(tmp_path)
        kept = journal(folder)
        # Judged answers go first, then single answers: 20 requests finish the first few single items.
        assert 1 <= len(kept) <= 20 and not (folder / "report.json").exists()
        outage["on"] = False  # the outage ends; the same endpoint answers again
        assert esac_run("--resume", str(folder), "--no-cache") == 0
    assert scores_of(load_report(folder)) == scores_of(clean_run[1])
    assert journal(folder)[: len(kept)] == kept


def test_configuration_errors_stop_at_once_with_exit_2(answers, tmp_path, capsys):
    def unauthorised(body, attempt):
        return "401"

    with LoopbackServer(answers, fault=unauthorised) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path), "--no-cache", "--concurrency", "1")
        assert server.requests <= 2
    assert code == 2 and "HTTP 401" in capsys.readouterr().err
    assert esac_run("--model", "mystery:model", "--reports", str(tmp_path)) == 2


def test_unparseable_verdicts_are_retried_then_abort_never_scored(tmp_path, capsys):
    answers = reference_answers(judge_level="unparseable")
    with LoopbackServer(answers) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path), "--no-cache")
    assert code == 3 and "invalid_verdict" in capsys.readouterr().err
    assert all(o["judge_replicate"] is None for o in journal(run_folder_of(tmp_path)))


def test_a_rerun_from_the_cache_makes_no_requests(answers, tmp_path):
    cache = tmp_path / "cache"
    with LoopbackServer(answers) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path / "a"), "--cache", str(cache)) == 0
        first = server.requests
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path / "b"), "--cache", str(cache)) == 0
        assert server.requests == first
    assert first == DETERMINISTIC + 2 * JUDGED + 4 * JUDGED
    assert scores_of(load_report(run_folder_of(tmp_path / "a"))) == scores_of(load_report(run_folder_of(tmp_path / "b")))


def test_model_failures_are_scored_not_retried(tmp_path):
    def empty_or_cut(body):
        if is_judge_request(body):
            return '{"rationale": "x", "levels": {}}'
        return {"text": "", "finish_reason": "length"} if "ANSWER" in str(body) else ""

    quant = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "items" / "gi").glob("quant-*.toml"))
    with LoopbackServer(empty_or_cut) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--reports", str(tmp_path), "--no-cache",
                        "--only", *quant[:2]) == 0
        assert server.requests == 2
    rows = journal(run_folder_of(tmp_path))
    assert {o["outcome"] for o in rows} <= {"empty", "output_budget"} and all(o["score"] == 0 for o in rows)
    assert all(o["attempts"] == 1 for o in rows)


def test_stalled_responses_time_out_and_are_retried(answers, tmp_path):
    def stall_first(body, attempt):
        return "stall" if attempt == 1 and not is_judge_request(body) else None

    quant = sorted(p.stem for p in (Path(__file__).resolve().parent.parent / "items" / "gi").glob("quant-*.toml"))
    with LoopbackServer(answers, fault=stall_first, stall_s=3) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--reports", str(tmp_path), "--no-cache",
                        "--only", quant[0]) == 0
    report = load_report(run_folder_of(tmp_path))
    assert report["retries"] == {"timeout": 1} and report["items"][0]["score"] == 1.0


@pytest.mark.parametrize("kill_after", [2, 17, 40])
def test_sigkill_then_resume_gives_the_uninterrupted_report(answers, clean_run, tmp_path, kill_after):
    with LoopbackServer(answers, latency_s=0.05) as server:
        command = [sys.executable, "-m", "esac_kit.cli", "run", "--model", f"openai:m@{server.url}",
                   "--judge", f"openai:j@{server.url}", "--reports", str(tmp_path), "--no-cache",
                   "--concurrency", "2"]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lines = list(tmp_path.rglob("observations.jsonl"))
            if lines and len(lines[0].read_text().splitlines()) >= kill_after:
                break
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
        folder = run_folder_of(tmp_path)
        assert not (folder / "report.json").exists()
        with (folder / "observations.jsonl").open("a") as handle:
            handle.write('{"run_id": "torn mid-wri')  # what a kill during a write leaves
        assert esac_run("--resume", str(folder), "--no-cache") == 0
    assert scores_of(load_report(folder)) == scores_of(clean_run[1])
    slots = [(o["item_id"], o["model_replicate"], o["judge_replicate"]) for o in journal(folder)]
    assert len(slots) == len(set(slots)) == DETERMINISTIC + 4 * JUDGED


def test_no_api_key_or_heldout_seed_reaches_any_file(tmp_path, monkeypatch, capsys):
    seed, key = "heldout-seed-" + os.urandom(8).hex(), "sk-test-" + os.urandom(8).hex()
    monkeypatch.setenv("ESAC_HELDOUT_SEED", seed)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    from esac_kit.pools import heldout_pool

    answers = reference_answers(heldout_pool(), PACK)
    with LoopbackServer(answers) as server:
        code = esac_run("--heldout", "--pack", str(PACK), "--model", f"openai:m@{server.url}",
                        "--judge", f"openai:j@{server.url}", "--reports", str(tmp_path / "reports"),
                        "--cache", str(tmp_path / "cache"))
    assert code == 0
    output = capsys.readouterr()
    assert seed not in output.out + output.err and key not in output.out + output.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 30
    for path in files:
        data = path.read_bytes()
        assert seed.encode() not in data and key.encode() not in data, path
    report = load_report(run_folder_of(tmp_path / "reports"))
    assert report["pool"]["name"] == "heldout" and report["pool"]["seed"] is None
    assert report["pool"]["commitment"].startswith("sha256:") and report["total"] == pytest.approx(100)


def test_an_invalid_verdict_is_never_cached_so_its_retry_asks_again(answers, tmp_path):
    from runkit import verdict

    attempts = Counter()

    def first_verdicts_garbled(body):
        if not is_judge_request(body):
            return answers(body)
        key = json.dumps(body, sort_keys=True)
        attempts[key] += 1
        return verdict(body, "unparseable" if attempts[key] == 1 else "top")

    cache = tmp_path / "cache"
    with LoopbackServer(first_verdicts_garbled) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path / "a"), "--cache", str(cache)) == 0
        first = server.requests
        assert esac_run("--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--reports", str(tmp_path / "b"), "--cache", str(cache)) == 0
        assert server.requests == first  # the retried, valid verdicts are what the cache holds
    report = load_report(run_folder_of(tmp_path / "a"))
    # Both answers are the same reference text, so 2 distinct judge requests per item, each garbled once.
    assert report["retries"] == {"invalid_verdict": 2 * JUDGED} and report["total"] == pytest.approx(100)


def test_a_verdict_with_a_raw_newline_in_its_rationale_parses():
    from esac_kit.gi.judge import parse_verdict
    from esac_kit.suite import load_suite

    rubric = load_suite("gi").item("calibration-usage-check").rubric
    levels = ", ".join(f'"{c.id}": 2' for c in rubric.criteria if c.verified_in_code is None)
    verdict = parse_verdict('{"rationale": "line one\nline two", "levels": {' + levels + "}}", rubric, "judge")
    assert verdict.rationale == "line one\nline two"


SEED_V2 = "seed-(v2)"  # a seed whose own closing parenthesis a label-parsing resume used to drop
SEED_ITEMS = ("quant-tank-mixing", "logic-zebra", "code-stack-machine", "context-grant-panel", "writing-lay-explainer",
              "calibration-usage-check")


def seed_digests(seed: str) -> dict[str, str]:
    """Each SEED_ITEMS item's prompt digest on a custom pool."""
    from esac_kit.instances import generate
    from esac_kit.pools import custom_pool
    from esac_kit.records import prompt_sha256
    from esac_kit.suite import load_suite

    suite = load_suite("gi")
    return {i: prompt_sha256(generate(suite, suite.item(i), custom_pool(seed)).prompt) for i in SEED_ITEMS}


def test_a_custom_seed_run_killed_and_resumed_keeps_its_pool_and_gives_the_uninterrupted_report(tmp_path):
    from esac_kit.pools import custom_pool

    answers = reference_answers(custom_pool(SEED_V2))  # right on this pool's instances only
    with LoopbackServer(answers, latency_s=0.05) as server:
        run = ["--seed", SEED_V2, "--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}",
               "--no-cache", "--concurrency", "1", "--only", *SEED_ITEMS]
        assert esac_run(*run, "--reports", str(tmp_path / "whole")) == 0
        whole = load_report(run_folder_of(tmp_path / "whole"))
        command = [sys.executable, "-m", "esac_kit.cli", "run", *run, "--reports", str(tmp_path / "killed")]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lines = list((tmp_path / "killed").rglob("observations.jsonl"))
            if lines and len(lines[0].read_text().splitlines()) >= 2:
                break
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait()
        folder = run_folder_of(tmp_path / "killed")
        kept = [json.loads(line) for line in (folder / "observations.jsonl").read_text().splitlines(keepends=True)
                if line.endswith("\n")]  # a line the kill tore is redone on resume
        assert 2 <= len(kept) < 12 and not (folder / "report.json").exists()
        assert esac_run("--resume", str(folder), "--no-cache") == 0
    record = {"name": "custom", "seed": SEED_V2, "commitment": None}
    assert json.loads((folder / "run.json").read_text())["pool"] == record and load_report(folder)["pool"] == record
    digests = seed_digests(SEED_V2)
    assert all(o["prompt_sha256"] == digests[o["item_id"]] for o in journal(folder))
    assert journal(folder)[: len(kept)] == kept and len(journal(folder)) == 12
    assert scores_of(load_report(folder)) == scores_of(whole) and whole["total"] > 0


def test_resuming_on_other_instances_exits_2_naming_the_first_item_and_asks_nothing(tmp_path, capsys):
    from esac_kit.pools import custom_pool

    with LoopbackServer(reference_answers(custom_pool(SEED_V2))) as server:
        assert esac_run("--seed", SEED_V2, "--model", f"openai:m@{server.url}", "--reports", str(tmp_path),
                        "--no-cache", "--only", *SEED_ITEMS[:2]) == 0
        folder = run_folder_of(tmp_path)
        config = json.loads((folder / "run.json").read_text())
        config["pool"]["seed"] = "seed-(v2"  # the pool a label-parsing resume used to rebuild
        (folder / "run.json").write_text(json.dumps(config))
        (folder / "report.json").unlink()
        kept, requests = (folder / "observations.jsonl").read_bytes(), server.requests
        capsys.readouterr()
        assert esac_run("--resume", str(folder), "--no-cache") == 2
        assert server.requests == requests
    message = capsys.readouterr().err.strip()
    first = journal(folder)[0]["item_id"]  # the first journalled observation is the first to differ
    assert first in SEED_ITEMS[:2]
    assert message == (f"esac-kit: error: {folder / 'observations.jsonl'}: item '{first}' was answered on "
                       f"another instance (prompt digest differs): the pool or the item bank changed since the run "
                       f"started")
    assert (folder / "observations.jsonl").read_bytes() == kept and not (folder / "report.json").exists()
