"""Frontier providers against loopback servers that enforce the real APIs' rules: an OpenAI reasoning model
(max_completion_tokens, no temperature, reasoning tokens), Anthropic extended thinking (temperature 1, thinking
blocks back unchanged in a tool loop), structured verdicts (a forced tool, a strict schema) and -M parameters."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import httpx
import pytest
from runkit import esac_run, load_report, reference_answers, run_folder_of, scores_of

from esac_kit.ag.policies import scripted_answer
from esac_kit.gi.judge import is_judge_request
from esac_kit.instances import build_task
from esac_kit.loopback import LoopbackServer, thinking_signature
from esac_kit.pools import public_pool
from esac_kit.streaming import sse_events
from esac_kit.suite import load_suite
from test_bad_inputs import assert_one_line_exit_2, esac

GI_ITEMS = ("quant-tank-mixing", "writing-lay-explainer")
ROOT = Path(__file__).resolve().parent.parent


def recording(answer, seen: list):
    """An answer function that keeps every request body it serves."""
    def serve(body):
        seen.append(body)
        return answer(body)
    return serve


def test_a_gi_run_completes_against_an_openai_reasoning_model_with_the_parameters_it_demands(tmp_path):
    seen = []
    with LoopbackServer(recording(reference_answers(), seen)) as server:
        code = esac_run("--model", f"openai:o3@{server.url}", "--judge", f"openai:gpt-4.1@{server.url}",
                        "-M", "reasoning_effort=high", "--no-cache", "--reports", str(tmp_path), "--only", *GI_ITEMS)
        assert server.rejected == []
    assert code == 0
    answers = [b for b in seen if b["model"] == "o3"]
    assert answers and all("max_completion_tokens" in b and "max_tokens" not in b and "temperature" not in b
                           and b["reasoning_effort"] == "high" for b in answers)
    judge = [b for b in seen if b["model"] == "gpt-4.1"]
    assert judge and all(b["temperature"] == 0.7 and "max_tokens" in b for b in judge)  # a custom URL: max_tokens
    schema = judge[0]["response_format"]["json_schema"]
    assert schema["strict"] is True and schema["schema"]["additionalProperties"] is False
    assert schema["schema"]["properties"]["levels"]["additionalProperties"] is False
    folder = run_folder_of(tmp_path)
    report = load_report(folder)
    assert report["tokens"]["model_reasoning"] == 100 * len(answers)  # the emulator's reported reasoning tokens
    assert report["model"]["parameters"]["reasoning_effort"] == "high"
    assert report["model"]["parameters"]["temperature"] is None  # none was sent
    assert json.loads((folder / "run.json").read_text())["model_params"] == {"reasoning_effort": "high"}
    assert report["items"][0]["score"] == 1.0


def test_an_ag_episode_completes_against_an_openai_reasoning_model_on_chat_completions(tmp_path):
    seen = []
    task, answer = thinking_tool_loop(seen)
    with LoopbackServer(answer) as server:
        assert esac_run("--suite", "ag", "--model", f"openai:gpt-5@{server.url}", "-M", "reasoning_effort=minimal",
                        "--no-cache", "--reports", str(tmp_path), "--only", "tools-order-fulfilment") == 0
        assert server.rejected == []
    assert all("max_completion_tokens" in b and "temperature" not in b for b in seen)
    report = load_report(run_folder_of(tmp_path))
    assert report["efficiency"][0]["success"] and report["tokens"]["model_reasoning"] == 100 * len(seen)


def test_the_emulated_reasoning_model_refuses_what_the_real_api_refuses():
    with LoopbackServer(lambda body: "hi") as server:
        url = f"{server.url}/chat/completions"
        base = {"model": "gpt-5.1", "messages": [{"role": "user", "content": "x"}]}
        old = httpx.post(url, json=base | {"max_tokens": 10})
        assert old.status_code == 400 and old.json()["error"]["param"] == "max_tokens"
        assert "Use 'max_completion_tokens' instead" in old.json()["error"]["message"]
        warm = httpx.post(url, json=base | {"max_completion_tokens": 10, "temperature": 0.7})
        assert warm.status_code == 400 and "Only the default (1) value is supported" in warm.json()["error"]["message"]
        loose = httpx.post(url, json={"model": "gpt-4.1", "messages": base["messages"], "response_format": {
            "type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": {
                "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}}}})
        assert loose.status_code == 400 and "additionalProperties" in loose.json()["error"]["message"]
        fine = httpx.post(url, json=base | {"max_completion_tokens": 10})
        assert fine.status_code == 200 and fine.json()["usage"]["completion_tokens_details"]["reasoning_tokens"] > 0


def thinking_tool_loop(seen: list):
    """Scripted AG tool calls for the public pool, each reply opened by a signed thinking block."""
    suite = load_suite("ag")
    task = build_task(suite, suite.item("tools-order-fulfilment"), public_pool(suite.manifest.public_seed))
    return task, recording(scripted_answer({task.prompt: task.reference}), seen)


def test_an_ag_episode_runs_with_anthropic_extended_thinking_and_passes_thinking_blocks_back(tmp_path):
    seen = []
    task, answer = thinking_tool_loop(seen)
    with LoopbackServer(answer) as server:
        code = esac_run("--suite", "ag", "--model", f"anthropic:claude-sonnet-4-5@{server.url}", "-M",
                        "thinking_budget=2048", "--no-cache", "--reports", str(tmp_path), "--only",
                        "tools-order-fulfilment")
        assert server.rejected == []
    assert code == 0
    assert all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} and b["temperature"] == 1 for b in seen)
    later = seen[-1]["messages"]
    assistant = [m for m in later if m["role"] == "assistant"]
    assert len(assistant) == len(task.reference) - 1
    assert all(m["content"][0]["type"] == "thinking" and m["content"][0]["signature"] ==
               thinking_signature(m["content"][0]["thinking"]) for m in assistant)
    assert load_report(run_folder_of(tmp_path))["efficiency"][0]["success"]


def test_a_gi_run_with_anthropic_thinking_journals_the_thinking_apart_from_the_answer(tmp_path):
    seen = []
    with LoopbackServer(recording(reference_answers(), seen)) as server:
        code = esac_run("--model", f"anthropic:claude-sonnet-4-5@{server.url}", "-M", "thinking_budget=2048",
                        "--judge", f"openai:j@{server.url}", "--no-cache", "--reports", str(tmp_path),
                        "--only", "quant-tank-mixing")
        assert server.rejected == []
    assert code == 0 and seen[0]["thinking"]["budget_tokens"] == 2048
    folder = run_folder_of(tmp_path)
    [observation] = [json.loads(line) for line in (folder / "observations.jsonl").read_text().splitlines()]
    assert observation["thinking"].startswith("Thinking about turn")
    assert "Thinking" not in observation["response"] and observation["score"] == 1.0  # extraction never reads it


def test_the_emulated_anthropic_api_refuses_a_tool_loop_whose_thinking_block_is_missing_or_altered():
    thought = "I should look up the customer."
    turn = [{"type": "thinking", "thinking": thought, "signature": thinking_signature(thought)},
            {"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    body = {"model": "claude", "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": turn}, result]}
    with LoopbackServer(lambda b: "done") as server:
        url = f"{server.url}/messages"
        assert httpx.post(url, json=body).status_code == 200
        missing = body | {"messages": [body["messages"][0], {"role": "assistant", "content": turn[1:]}, result]}
        refused = httpx.post(url, json=missing)
        assert refused.status_code == 400 and "must start with a thinking block" in refused.json()["error"]["message"]
        altered = [dict(turn[0], thinking=thought + " (edited)"), turn[1]]
        edited = body | {"messages": [body["messages"][0], {"role": "assistant", "content": altered}, result]}
        assert "Invalid `signature`" in httpx.post(url, json=edited).json()["error"]["message"]
        warm = httpx.post(url, json=body | {"temperature": 0.7})
        assert warm.status_code == 400 and "temperature" in warm.json()["error"]["message"]


def test_the_anthropic_judge_answers_through_a_forced_verdict_tool(tmp_path):
    seen = []
    with LoopbackServer(recording(reference_answers(), seen)) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--judge", f"anthropic:claude-judge@{server.url}",
                        "--no-cache", "--reports", str(tmp_path), "--only", "writing-lay-explainer")
    assert code == 0
    judged = [b for b in seen if b["model"] == "claude-judge"]
    assert len(judged) == 4
    for body in judged:
        assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
        [tool] = body["tools"]
        assert tool["name"] == "verdict" and tool["input_schema"]["additionalProperties"] is False
        assert "response_format" not in body
    assert load_report(run_folder_of(tmp_path))["items"][0]["score"] == 1.0


@pytest.mark.parametrize("args, fragment", [
    (["-M", "effort=high"], "unknown model parameter 'effort'"),
    (["-M", "reasoning_effort"], "write KEY=VALUE"),
    (["-M", "reasoning_effort=extreme"], "reasoning_effort"),
    (["-M", "thinking_budget=2048"], "Anthropic's extended thinking"),
    (["--temperature", "0.5"], "takes only the default temperature 1"),
    (["-M", "top_p=0.9"], "takes no top_p"),
])
def test_a_wrong_model_parameter_is_a_one_line_configuration_error(args, fragment):
    assert_one_line_exit_2(esac("run", "--model", "openai:o3@http://127.0.0.1:9/v1", "--no-cache", *args), fragment)


@pytest.mark.parametrize("args, fragment", [
    (["-M", "thinking_budget=2048", "--temperature", "0.7"], "temperature 1 only"),
    (["-M", "thinking_budget=20000"], "must be below the output budget"),
    (["-M", "thinking_budget=512"], "greater than or equal to 1024"),
    (["-M", "reasoning_effort=low"], "takes -M thinking_budget instead"),
])
def test_anthropic_thinking_rules_are_checked_before_any_request(args, fragment):
    assert_one_line_exit_2(esac("run", "--suite", "ag", "--model", "anthropic:claude@http://127.0.0.1:9/v1",
                                "--no-cache", *args), fragment)


# ---------------------------------------------------------------- streaming


def stall_streams_once(body, attempt):
    """The first streamed attempt of every model answer goes silent after its first events."""
    return "stall_stream" if attempt == 1 and not is_judge_request(body) else None


def test_a_stream_that_stalls_mid_answer_is_retried_after_the_idle_timeout_with_the_same_scores(tmp_path):
    items = ("quant-tank-mixing", "logic-zebra")
    with LoopbackServer(reference_answers()) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(tmp_path / "clean"),
                        "--only", *items) == 0
    with LoopbackServer(reference_answers(), fault=stall_streams_once, stall_s=30) as server:
        started = time.monotonic()
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(tmp_path / "stalled"),
                        "--only", *items, "--idle-timeout-s", "1") == 0
        elapsed = time.monotonic() - started
        assert server.faults["stall_stream"] == 2
    assert elapsed < 10  # about the idle timeout and a backoff, not the 30 s stall or the 600 s time budget
    clean, stalled = (load_report(run_folder_of(tmp_path / name)) for name in ("clean", "stalled"))
    assert scores_of(clean) == scores_of(stalled)
    assert stalled["retries"] == {"stall": 2}


def test_a_slow_stream_past_the_time_budget_is_the_models_failure_not_an_outage(tmp_path):
    items = tmp_path / "items"
    shutil.copytree(ROOT / "items", items)
    path = items / "gi" / "quant-tank-mixing.toml"
    path.write_text(path.read_text().replace('scoring = "exact"', 'scoring = "exact"\ntime_budget_s = 1'))
    with LoopbackServer(lambda body: "word " * 200, event_delay_s=0.05) as server:  # ~85 events, 4 s
        assert esac_run("--model", f"anthropic:claude@{server.url}", "--no-cache", "--reports", str(tmp_path / "r"),
                        "--items", str(items), "--only", "quant-tank-mixing") == 0
        assert server.requests == 1  # not retried
    report = load_report(run_folder_of(tmp_path / "r"))
    assert report["model_outcomes"] == {"time_budget": 1} and report["items"][0]["score"] == 0.0


async def collect(lines):
    async def feed():
        for line in lines:
            yield line
    return [event async for event in sse_events(feed())]


def test_sse_events_skip_comments_and_join_multi_line_data():
    lines = [": keep-alive", "event: ping", "data: {}", "", "data: {\"a\":", "data: 1}", "", "data: [DONE]", ""]
    assert asyncio.run(collect(lines)) == [("ping", "{}"), (None, "{\"a\":\n1}"), (None, "[DONE]")]


def test_a_streamed_anthropic_tool_call_and_thinking_assemble_like_the_whole_message(tmp_path):
    seen = []
    task, answer = thinking_tool_loop(seen)
    with LoopbackServer(answer) as server:
        code = esac_run("--suite", "ag", "--model", f"anthropic:claude@{server.url}", "-M", "thinking_budget=2048",
                        "-M", "stream=false", "--no-cache", "--reports", str(tmp_path / "whole"), "--only",
                        "tools-order-fulfilment")
        assert code == 0 and not any(b.get("stream") for b in seen)
        seen.clear()
        code = esac_run("--suite", "ag", "--model", f"anthropic:claude@{server.url}", "-M", "thinking_budget=2048",
                        "--no-cache", "--reports", str(tmp_path / "streamed"), "--only", "tools-order-fulfilment")
        assert code == 0 and all(b.get("stream") for b in seen) and server.rejected == []
    whole, streamed = (load_report(run_folder_of(tmp_path / n)) for n in ("whole", "streamed"))
    assert whole["efficiency"] == streamed["efficiency"] and streamed["efficiency"][0]["success"]


# ---------------------------------------------------------------- cost


def test_every_report_carries_its_cost_from_the_dated_price_table_and_unknown_is_never_zero(tmp_path):
    with LoopbackServer(reference_answers()) as server:
        assert esac_run("--model", f"openai:gpt-4.1@{server.url}", "--judge", f"anthropic:claude-haiku-4-5@{server.url}",
                        "--no-cache", "--reports", str(tmp_path / "known"), "--only", *GI_ITEMS) == 0
        assert esac_run("--model", f"openai:mystery@{server.url}", "--judge", f"openai:j@{server.url}",
                        "--no-cache", "--reports", str(tmp_path / "unknown"), "--only", *GI_ITEMS) == 0
    known = load_report(run_folder_of(tmp_path / "known"))
    tokens, cost = known["tokens"], known["cost"]
    assert cost["model_usd"] == pytest.approx((tokens["model_in"] * 2.00 + tokens["model_out"] * 8.00) / 1e6, abs=1e-6)
    assert cost["judge_usd"] == pytest.approx((tokens["judge_in"] * 1.00 + tokens["judge_out"] * 5.00) / 1e6, abs=1e-6)
    assert cost["total_usd"] == pytest.approx(cost["model_usd"] + cost["judge_usd"], abs=1e-6)
    assert cost["prices_dated"] and cost["batch"] is False
    unknown = load_report(run_folder_of(tmp_path / "unknown"))
    assert unknown["cost"]["model_usd"] is None and unknown["cost"]["total_usd"] is None
    board = esac("leaderboard", str(tmp_path))
    assert board.returncode == 0 and "unknown" in board.stdout and "$0.0" in board.stdout


def test_a_user_price_file_overrides_the_shipped_table(tmp_path, monkeypatch):
    prices = tmp_path / "prices.toml"
    prices.write_text('dated = "2026-12-01"\nsource = "test"\nbatch_discount = 0.5\n'
                      '[openai]\n"mystery" = { input = 1000.0, output = 1000.0 }\n')
    monkeypatch.setenv("ESAC_PRICES", str(prices))
    with LoopbackServer(reference_answers()) as server:
        assert esac_run("--model", f"openai:mystery@{server.url}", "--no-cache", "--reports", str(tmp_path / "r"),
                        "--only", "quant-tank-mixing") == 0
    report = load_report(run_folder_of(tmp_path / "r"))
    assert report["cost"]["prices_dated"] == "2026-12-01"
    assert report["cost"]["model_usd"] == pytest.approx(
        (report["tokens"]["model_in"] + report["tokens"]["model_out"]) * 1000 / 1e6)
    prices.write_text("dated = 3")
    assert_one_line_exit_2(esac("run", "--model", "openai:gpt-4.1", "--estimate"), "not a valid price table")


def test_estimate_prints_calls_tokens_and_cost_before_any_request(tmp_path):
    with LoopbackServer(reference_answers()) as server:
        done = esac("run", "--model", f"openai:gpt-4.1@{server.url}", "--judge", f"openai:gpt-4.1@{server.url}",
                    "--estimate", "--reports", str(tmp_path))
        assert server.requests == 0
    assert done.returncode == 0, done.stderr
    assert "model  calls    43" in done.stdout and "judge  calls    28" in done.stdout
    assert "cost ≤ $" in done.stdout and not list(tmp_path.iterdir())  # nothing written
    ag = esac("run", "--suite", "ag", "--model", "anthropic:mystery", "--estimate")
    assert ag.returncode == 0 and "cost unknown (no price listed)" in ag.stdout


# ---------------------------------------------------------------- the Responses API


def test_gi_and_ag_runs_complete_through_the_responses_api_with_reasoning_items_carried_across_turns(tmp_path):
    seen = []
    task, answer = thinking_tool_loop(seen)
    gi = recording(reference_answers(), seen)
    with LoopbackServer(lambda body: answer(body) if body["tools"] else gi(body)) as server:
        assert esac_run("--model", f"openai-responses:o3@{server.url}", "-M", "reasoning_effort=medium",
                        "--judge", f"openai-responses:gpt-4.1@{server.url}", "--no-cache", "--reports",
                        str(tmp_path / "gi"), "--only", *GI_ITEMS) == 0
        assert esac_run("--suite", "ag", "--model", f"openai-responses:o3@{server.url}", "--no-cache",
                        "--reports", str(tmp_path / "ag"), "--only", "tools-order-fulfilment") == 0
        assert server.rejected == [] and server.paths["/v1/responses"] > 0
    gi_report, ag_report = (load_report(run_folder_of(tmp_path / n)) for n in ("gi", "ag"))
    assert [i["score"] for i in gi_report["items"]] == [1.0, 1.0]
    assert gi_report["tokens"]["model_reasoning"] > 0 and ag_report["tokens"]["model_reasoning"] > 0
    assert ag_report["efficiency"][0]["success"]


def test_the_emulated_responses_api_refuses_a_function_call_without_its_reasoning_item():
    with LoopbackServer(lambda body: {"text": "", "tool_calls": [{"id": "c1", "name": "look", "arguments": {}}]}) as server:
        url = f"{server.url}/responses"
        first = httpx.post(url, json={"model": "o3", "input": [{"role": "user", "content": "go"}],
                                      "max_output_tokens": 100, "store": False}).json()
        reasoning, call = first["output"]
        assert reasoning["type"] == "reasoning" and call["type"] == "function_call"
        output = {"type": "function_call_output", "call_id": call["call_id"], "output": "ok"}
        kept = httpx.post(url, json={"model": "o3", "input": [{"role": "user", "content": "go"}, reasoning, call,
                                                               output], "max_output_tokens": 100})
        assert kept.status_code == 200
        dropped = httpx.post(url, json={"model": "o3", "input": [{"role": "user", "content": "go"}, call, output],
                                        "max_output_tokens": 100})
        assert dropped.status_code == 400 and "without its required 'reasoning' item" in dropped.json()["error"]["message"]
        old = httpx.post(url, json={"model": "o3", "input": "go", "max_tokens": 100})
        assert old.status_code == 400 and old.json()["error"]["param"] == "max_tokens"


def test_the_outage_deadline_bounds_an_attempt_in_flight_but_not_a_live_stream(tmp_path):
    def fail_then_hang(body, attempt):  # every first attempt fails; the retry hangs without a byte
        return "503" if attempt == 1 else "stall"

    with LoopbackServer(reference_answers(), fault=fail_then_hang, stall_s=30) as server:
        started = time.monotonic()
        code = esac_run("--model", f"openai:m@{server.url}", "-M", "stream=false", "--no-cache", "--reports",
                        str(tmp_path / "hung"), "--only", "quant-tank-mixing", "--outage-budget-s", "1.5",
                        "--request-timeout-s", "60")
        assert code == 3 and time.monotonic() - started < 10  # the 1.5 s budget, not the 30 s hang or 60 s timeout
    slow_but_live = lambda body, attempt: "503" if attempt == 1 else None  # noqa: E731
    with LoopbackServer(lambda body: "word " * 100 + "ANSWER: 1", fault=slow_but_live, event_delay_s=0.05) as server:
        code = esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(tmp_path / "live"),
                        "--only", "quant-tank-mixing", "--outage-budget-s", "0.5", "--request-timeout-s", "60")
        assert code == 0  # ~2 s of streaming after the retry: the stream's life, not an outage
