"""The episode loop over native tool calling: the model sees the task, the tools and `submit`, and acts until it
submits, answers without a tool call, or exhausts a budget (steps, tokens, time); exhaustion is a model failure."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from esac_kit.ag.episode import Episode
from esac_kit.ag.task import AgTask
from esac_kit.outcomes import EpisodeEnd, ModelOutcome
from esac_kit.chat import ChatRequest, ModelReply
from esac_kit.providers import ContextExceeded, Provider
from esac_kit.schemas import EfficiencyScale

SYSTEM_PROMPT = ("You are an agent completing a user's task in a software environment by calling the tools "
                 "provided. Work carefully: every tool call has real effects on the environment. When the task "
                 "is done, call `submit` once with your answer.")

Chat = Callable[[ChatRequest, int, float], Awaitable[ModelReply]]


@dataclass(frozen=True)
class Budgets:
    """An episode's budgets: model turns, tokens (input and output), seconds of model time, tokens per turn."""

    steps: int
    tokens: int
    time_s: float
    turn_tokens: int


@dataclass
class EpisodeResult:
    """How an episode ended and what it scored: the observation's material."""

    end: EpisodeEnd
    outcome: ModelOutcome
    answer: str
    detail: dict[str, Any]
    tokens_in: int
    tokens_out: int
    latency_s: float


async def run_episode(task: AgTask, item_id: str, scale: EfficiencyScale, provider: Provider, chat: Chat,
                      budgets: Budgets, temperature: float) -> EpisodeResult:
    """Drive one episode from a fresh environment; `chat(request, turn, seconds_left)` makes one model call."""
    episode = Episode(task, item_id)
    tools = tuple(episode.tool_schemas())
    messages: list[dict[str, Any]] = [{"role": "user", "content": task.prompt}]
    tokens_in = tokens_out = 0
    model_time = 0.0
    end: EpisodeEnd = "step_budget"
    outcome: ModelOutcome = "step_budget"
    for turn in range(budgets.steps):
        if tokens_in + tokens_out >= budgets.tokens:
            end = outcome = "token_budget"
            break
        if model_time >= budgets.time_s:
            end = outcome = "time_budget"
            break
        request = ChatRequest(messages=tuple(messages), max_tokens=budgets.turn_tokens, temperature=temperature,
                              tools=tools, system=SYSTEM_PROMPT)
        try:
            reply = await chat(request, turn, budgets.time_s - model_time)
        except ContextExceeded:  # the conversation outgrew the model's window: its budget, not our outage
            end = outcome = "context_budget"
            break
        tokens_in, tokens_out = tokens_in + reply.tokens_in, tokens_out + reply.tokens_out
        model_time += reply.latency_s
        episode.counts.model_turns += 1
        episode.counts.unreported_turns += not reply.usage_reported
        episode.counts.tokens = tokens_in + tokens_out
        if reply.outcome == "time_budget":
            end = outcome = "time_budget"
            break
        if not reply.tool_calls:  # a final message: its text is the answer, judged by the same checks
            episode.answer = reply.text
            end, outcome = "final_message", reply.outcome
            break
        results = []
        for n, call in enumerate(reply.tool_calls):
            text, error = await asyncio.to_thread(episode.act, call.name, call.arguments,
                                                  reply.tokens_in + reply.tokens_out if n == 0 else 0)
            results.append((call, text, error))
            if episode.submitted:
                break
        if episode.submitted:
            end, outcome = "submit", "answered"
            break
        messages += provider.tool_turn(reply, results)
    detail = await asyncio.to_thread(episode.outcome, scale)
    detail["end"] = end
    return EpisodeResult(end, outcome, episode.answer or "", detail, tokens_in, tokens_out, round(model_time, 3))
