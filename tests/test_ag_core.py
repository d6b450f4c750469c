"""The AG machinery on a toy task: bookkeeping, efficiency, the tool-calling loop over both protocols,
budgets, invalid calls, and an environment crash restarting the episode under the runner."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import httpx
import pytest

from ag_toy import Store, toy_task
from esac_kit.ag.env import validate_args
from esac_kit.ag.episode import Efficiency, Episode, check_score, drive, level, modifier
from esac_kit.ag.loop import Budgets, run_episode
from esac_kit.ag.policies import scripted_answer
from esac_kit.ag.task import Call, Check
from esac_kit.loopback import LoopbackServer
from esac_kit.chat import ModelRef
from esac_kit.providers import make_provider
from esac_kit.schemas import EfficiencyScale
from runkit import esac_run, load_report, run_folder_of

SCALE = EfficiencyScale(envelope="read the source once and write the goal once", action_scale=[0, 1, 2, 4, 6],
                        token_scale=[2000, 3000, 4000, 6000, 9000], rework_penalty=1.0)


def test_reference_wasteful_and_null_agents_on_the_toy_task():
    task = toy_task()
    reference = drive(task, task.reference, SCALE)
    assert reference["success"] and reference["score"] == 1.0
    assert reference["counts"]["tool_calls"] == 2 and reference["efficiency"]["action_level"] == 6
    wasteful = drive(task, task.wasteful, SCALE)
    assert wasteful["success"] and wasteful["counts"]["redundant"] == 1 and wasteful["counts"]["rework"] == 1
    assert [s["index"] for s in wasteful["steps"] if s["redundant_of"] is not None] == [1]
    assert [s["index"] for s in wasteful["steps"] if s["rework_of"]] == [3]
    assert wasteful["steps"][3]["rework_of"] == [2]
    assert wasteful["efficiency"]["effective_actions"] == 6 and wasteful["efficiency"]["action_level"] == 3
    null = drive(task, task.scripts()["null"], SCALE)
    assert null["score"] == 0.0 and not null["success"] and null["efficiency"]["a"] == 0


def test_partial_credit_is_the_weighted_share_of_goal_checks_and_a_guard_zeroes_it():
    checks = (Check("a", "a", 2.0), Check("b", "b", 1.0), Check("safe", "no unsafe step", guard=True))
    assert check_score(checks, {"a": True, "b": False, "safe": True}) == (pytest.approx(2 / 3), False)
    assert check_score(checks, {"a": True, "b": True, "safe": False}) == (0.0, False)
    assert check_score(checks, {"a": True, "b": True, "safe": True}) == (1.0, True)


def test_retrying_an_errored_call_is_not_redundant_but_repeating_a_good_read_is():
    episode = Episode(toy_task())
    assert episode.act("get", {"key": "missing"})[1] is True
    episode.act("get", {"key": "missing"})
    episode.act("get", {"key": "source"})
    episode.act("get", {"key": "source"})
    episode.act("put", {"key": "goal", "value": "1"})
    episode.act("get", {"key": "source"})  # the state changed in between: not redundant
    assert [s.redundant_of for s in episode.steps] == [None, None, None, 2, None, None]
    assert episode.steps[4].diff == {"values/goal": [None, "1"]}


def test_invalid_calls_are_counted_and_answered_never_raised():
    episode = Episode(toy_task())
    for name, arguments in [("nope", "{}"), ("get", "{not json"), ("get", "[1]"), ("get", {"key": 5}),
                            ("get", {}), ("put", {"key": "a", "value": "b", "extra": 1}), ("submit", {})]:
        text, error = episode.act(name, arguments)
        assert error and text.startswith("invalid call")
    assert episode.counts.invalid == 7 and episode.counts.tool_calls == 7 and not episode.submitted
    text, error = episode.act("get", '{"key": "\\ud8c1"}')  # a lone surrogate: not valid Unicode
    assert error and "valid Unicode" in text
    assert validate_args({"type": "object", "properties": {"n": {"type": "integer"}}}, {"n": True}) is not None


def test_levels_and_the_modifier_follow_amendment_001_section_1():
    assert [level(v, [5, 7, 9, 12, 16]) for v in (1, 5, 6, 9, 16, 17)] == [6, 6, 5, 4, 2, 1]
    best = [Efficiency(5, 6, 6, 1.0, 1.0)] * 14
    assert modifier(best, 5) == pytest.approx(5.0)
    assert modifier([Efficiency(5, 6, 1, 1.0, 0.0)] * 14, 5) == pytest.approx(3.5)
    mixed = [Efficiency(5, 6, 4, 1.0, 0.6), Efficiency(9, 3, 6, 0.4, 1.0), Efficiency(0, 1, 1, 0.0, 0.0)]
    assert modifier(mixed, 5) == pytest.approx(3.5 * (1.4 / 3) + 1.5 * (1.6 / 3))


def _episode_over_loopback(script, protocol: str, budgets: Budgets | None = None):
    task = toy_task()

    async def go():
        with LoopbackServer(scripted_answer({task.prompt: script})) as server:
            async with httpx.AsyncClient() as client:
                provider = make_provider(ModelRef(protocol, "toy", server.url), client)

                async def chat(request, turn, seconds_left):
                    return await provider.chat(request, timeout_s=10)

                return await run_episode(task, "toy", SCALE, provider, chat,
                                         budgets or Budgets(10, 10**6, 60, 512), 0.0)

    return asyncio.run(go())


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_the_loop_drives_the_reference_over_native_tool_calls(protocol):
    result = _episode_over_loopback(toy_task().reference, protocol)
    assert result.end == "submit" and result.outcome == "answered" and result.answer == "42"
    assert result.detail["success"] and result.detail["counts"]["model_turns"] == 3
    assert result.tokens_in > 0 and result.detail["counts"]["tokens"] == result.tokens_in + result.tokens_out
    assert result.detail["steps"][0]["tokens"] > 0 and result.detail["steps"][1]["result"] == "ok"


def test_budgets_end_an_episode_as_a_model_failure():
    looping = (Call("get", {"key": "source"}),) * 50
    steps = _episode_over_loopback(looping, "openai", Budgets(4, 10**6, 60, 512))
    assert steps.end == steps.outcome == "step_budget" and steps.detail["counts"]["model_turns"] == 4
    assert not steps.detail["success"]
    tokens = _episode_over_loopback(looping, "anthropic", Budgets(40, 500, 60, 512))
    assert tokens.end == "token_budget" and tokens.detail["counts"]["model_turns"] < 40


def test_a_context_overflow_ends_the_episode_as_a_model_budget_not_a_stop():
    task = toy_task()
    fault = lambda body, attempt: "context" if len(body["messages"]) > 3 else None  # noqa: E731

    async def go():
        with LoopbackServer(scripted_answer({task.prompt: task.reference}), fault=fault) as server:
            async with httpx.AsyncClient() as client:
                provider = make_provider(ModelRef("openai", "toy", server.url), client)
                return await run_episode(task, "toy", SCALE, provider,
                                         lambda r, t, s: provider.chat(r, timeout_s=10), Budgets(9, 10**6, 60, 64), 0)

    result = asyncio.run(go())
    assert result.end == result.outcome == "context_budget"
    assert [s["tool"] for s in result.detail["steps"]] == ["get"] and not result.detail["success"]


def test_a_hostile_model_sending_lone_surrogates_loses_nothing():
    task = toy_task()
    turns = iter([{"text": "", "tool_calls": [{"name": "get", "arguments": {"key": "\ud8c1"}}]},
                  {"text": "", "tool_calls": [{"name": "submit", "arguments": {"answer": "42 \udfff"}}]},
                  {"text": "done \ud800 42"}])

    async def go():
        with LoopbackServer(lambda body: next(turns)) as server:
            async with httpx.AsyncClient() as client:
                provider = make_provider(ModelRef("openai", "toy", server.url), client)
                return await run_episode(task, "toy", SCALE, provider,
                                         lambda r, t, s: provider.chat(r, timeout_s=10), Budgets(5, 10**6, 60, 64), 0)

    result = asyncio.run(go())
    assert result.end == "final_message" and result.answer == "done ? 42"
    assert result.detail["counts"]["invalid"] == 2 and result.detail["checks"]["answer"] is True
    json.dumps(result.detail, ensure_ascii=False).encode("utf-8")  # journal-safe


def test_a_final_message_without_tool_calls_ends_the_episode_with_its_text_as_the_answer():
    task = toy_task()

    async def go():
        with LoopbackServer(lambda body: "The value is 42.") as server:
            async with httpx.AsyncClient() as client:
                provider = make_provider(ModelRef("openai", "toy", server.url), client)
                return await run_episode(task, "toy", SCALE, provider,
                                         lambda r, t, s: provider.chat(r, timeout_s=10), Budgets(5, 10**6, 60, 64), 0)

    result = asyncio.run(go())
    assert result.end == "final_message" and result.answer == "The value is 42."
    assert result.detail["checks"] == {"goal": False, "answer": True} and result.detail["score"] == pytest.approx(1 / 3)


def _toy_suite(tmp_path: Path) -> Path:
    suite = tmp_path / "items" / "toy"
    suite.mkdir(parents=True)
    (suite / "manifest.toml").write_text(textwrap.dedent('''
        suite = "toy"
        name = "TOY-AG"
        version = "1.0"
        kinds = "esac_kit.ag.kind"
        public_seed = "toy-public"
        total_points = 15
        efficiency_points = 5
        total_items = 1
        pass_fraction = 0.6
        output_budget_tokens = 512
        episode_token_budget = 100000
        time_budget_s = 60
        [[categories]]
        id = "tools"
        name = "Tools"
        points = 10
        items = 1
        scoring = "state checks"
    '''))
    (suite / "tools-toy.toml").write_text(textwrap.dedent('''
        id = "tools-toy"
        category = "tools"
        title = "Copy a value"
        scoring = "agentic"
        generator = "ag_toy:toy_generator"
        difficulty_lever = "None at all: it exercises the machinery."
        step_budget = 10
        [efficiency]
        envelope = "read the source once and write the goal once"
        action_scale = [0, 1, 2, 4, 6]
        token_scale = [2000, 3000, 4000, 6000, 9000]
        rework_penalty = 1.0
    '''))
    return suite.parent


@pytest.mark.parametrize("policy, capability, modifier_at_least", [("reference", 10, 4.5), ("wasteful", 10, 0.0),
                                                                   ("null", 0, 0.0)])
def test_scripted_agents_run_end_to_end_and_report_the_modifier(tmp_path, policy, capability, modifier_at_least):
    items = _toy_suite(tmp_path)
    assert esac_run("--suite", "toy", "--items", str(items), "--model", f"scripted:{policy}", "--no-cache",
                    "--reports", str(tmp_path / "reports")) == 0
    report = load_report(run_folder_of(tmp_path / "reports"))
    assert report["capability"] == capability and report["max_total"] == 15 and report["max_capability"] == 10
    assert report["modifier"] >= modifier_at_least and report["total"] == report["capability"] + report["modifier"]
    assert report["passed"] is (capability == 10)
    efficiency = report["efficiency"][0]
    if policy == "wasteful":
        assert report["modifier"] < 4.5
        assert efficiency["redundant_calls"] == ['#1 get({"key": "source"}) repeats #0']
        assert efficiency["rework_calls"][0].startswith("#3 put(") and efficiency["rework_calls"][0].endswith("#2")
    if policy == "null":
        assert report["modifier"] == 0


def test_an_environment_crash_restarts_the_episode_and_is_never_scored(tmp_path):
    items = _toy_suite(tmp_path)
    Store.crashes_left = 1
    try:
        assert esac_run("--suite", "toy", "--items", str(items), "--model", "scripted:reference", "--no-cache",
                        "--reports", str(tmp_path / "reports")) == 0
    finally:
        Store.crashes_left = 0
    folder = run_folder_of(tmp_path / "reports")
    observation = json.loads((folder / "observations.jsonl").read_text().splitlines()[0])
    assert observation["retries"] == {"environment": 1} and observation["score"] == 1.0
    steps = observation["score_detail"]["steps"]
    assert [s["tool"] for s in steps] == ["get", "put", "submit"]  # the restarted episode, from scratch


def test_scripted_agents_refuse_suites_without_agentic_tasks(tmp_path):
    assert esac_run("--model", "scripted:reference", "--only", "quant-tank-mixing", "--no-cache",
                    "--reports", str(tmp_path)) == 2
