"""The runner: the replication plan, bounded concurrency, retries of infrastructure failures, journal and cache.

Deterministic items run once; judge-graded items are answered twice and each answer is judged twice
(amendment 001 §5). Infrastructure failures are retried and never scored; one that persists aborts the run
with everything finished kept (amendment 001 §8).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from esac_kit.cache import ResponseCache, cache_key
from esac_kit.errors import ConfigError, EsacError, InfrastructureAbort
from esac_kit.journal import Journal, Observation
from esac_kit.judge import EMPTY_RATIONALE, empty_levels, judge_request, observation_levels, parse_verdict
from esac_kit.providers import ChatRequest, ModelReply, Provider, TransientFailure
from esac_kit.sandbox import SandboxError
from esac_kit.schemas import CodeTestsKey, Instance, ItemSpec
from esac_kit.scoring import score_response, score_verdict

T = TypeVar("T")
MODEL_REPLICATES_JUDGED = 2
JUDGE_REPLICATES = 2


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, honouring Retry-After, bounded by attempts and a deadline."""

    max_attempts: int = 6
    base_s: float = 1.0
    cap_s: float = 60.0
    deadline_s: float = 900.0
    request_timeout_s: float | None = None  # None: the item's time budget plus a margin

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before the next attempt."""
        backoff = random.uniform(0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))
        return max(backoff, retry_after or 0.0)


async def with_retries(attempt: Callable[[], Awaitable[T]], policy: RetryPolicy, item_id: str, role: str,
                       on_retry: Callable[[str], None] | None = None) -> tuple[T, int, Counter]:
    """Call until it succeeds; retry infrastructure failures under the policy, then abort (amendment 001 §8)."""
    retries: Counter = Counter()
    started = time.monotonic()
    for number in range(1, policy.max_attempts + 1):
        try:
            return await attempt(), number, retries
        except (TransientFailure, SandboxError) as failure:
            kind = getattr(failure, "kind", "sandbox")
            waited = time.monotonic() - started
            if number == policy.max_attempts or waited >= policy.deadline_s:
                raise InfrastructureAbort(f"{role} call for item {item_id} failed {number} times; last: {failure}; "
                                          f"run aborted, finished work kept: resume with `esac run --resume RUN`"
                                          ) from None
            retries[kind] += 1
            if on_retry:
                on_retry(kind)
            delay = policy.delay(number, getattr(failure, "retry_after", None))
            await asyncio.sleep(min(delay, max(0.0, policy.deadline_s - waited)))
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Slot:
    """One planned observation: an item, a model replicate and, for judged items, a judge replicate."""

    item_id: str
    model_replicate: int
    judge_replicate: int | None


def plan(items: list[ItemSpec]) -> list[Slot]:
    """The replication plan: one slot per deterministic item, 2 × 2 slots per judge-graded item (amendment 001 §5)."""
    slots = []
    for item in items:
        if item.scoring == "judge":
            slots += [Slot(item.id, m, j) for m in range(MODEL_REPLICATES_JUDGED) for j in range(JUDGE_REPLICATES)]
        else:
            slots.append(Slot(item.id, 0, None))
    return slots


@dataclass
class Progress:
    """Done / total, retries by kind and an ETA, reported to a callback as observations land."""

    total: int
    done: int = 0
    retries: Counter = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)
    resumed: int = 0
    turns: dict[str, int] = field(default_factory=dict)  # AG episodes under way: task -> model turns so far

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate of this session, or None before the first observation."""
        fresh = self.done - self.resumed
        if fresh <= 0:
            return None
        return (time.monotonic() - self.started) / fresh * (self.total - self.done)


@dataclass
class RunSettings:
    """What the runner needs beyond the instances: providers, sampling, budgets, concurrency, retry policy."""

    run_id: str
    model: Provider
    judge: Provider | None
    temperature: float
    judge_temperature: float
    judge_max_tokens: int
    concurrency: int
    policy: RetryPolicy
    cache: ResponseCache
    max_tokens_cap: int | None = None
    max_turns_cap: int | None = None
    on_progress: Callable[[Progress], None] | None = None


class Runner:
    """Fills the plan's slots for one run, journalling each observation as it lands."""

    def __init__(self, settings: RunSettings, journal: Journal, items: dict[str, ItemSpec],
                 instances: dict[str, Instance], default_budget_tokens: int, default_budget_s: float,
                 tasks: dict | None = None, episode_token_budget: int | None = None):
        self.settings = settings
        self.tasks = tasks or {}
        self.episode_token_budget = episode_token_budget
        self.journal = journal
        self.items = items
        self.instances = instances
        self.default_budget_tokens = default_budget_tokens
        self.default_budget_s = default_budget_s
        self._limits: dict[str, asyncio.Semaphore] = {}
        self._episode_slots = asyncio.Semaphore(settings.concurrency)
        self.progress: Progress | None = None

    def _limit(self, provider: Provider) -> asyncio.Semaphore:
        # Bounded per provider endpoint, so model and judge on one server share its limit.
        return self._limits.setdefault(provider.endpoint, asyncio.Semaphore(self.settings.concurrency))

    async def run(self, slots: list[Slot]) -> list[Observation]:
        """Fill every slot not already journalled; raise InfrastructureAbort when a failure persists."""
        done = {o.slot for o in self.journal.observations}
        self.progress = Progress(total=len(slots), done=len(done & {(s.item_id, s.model_replicate,
                                                                     s.judge_replicate) for s in slots}))
        self.progress.resumed = self.progress.done
        self._report()
        pending: dict[tuple[str, int], list[Slot]] = {}
        for slot in slots:
            if (slot.item_id, slot.model_replicate, slot.judge_replicate) not in done:
                pending.setdefault((slot.item_id, slot.model_replicate), []).append(slot)
        # Longest chains first: answers that a judge must then grade start before single-call items.
        ordered = sorted(pending.items(), key=lambda entry: -len(entry[1]))
        try:
            async with asyncio.TaskGroup() as group:
                for (item_id, replicate), item_slots in ordered:
                    group.create_task(self._answer_and_score(item_id, replicate, item_slots))
        except* EsacError as failed:  # an abort or a configuration error: the first one speaks for the run
            raise failed.exceptions[0] from None
        return self.journal.observations

    async def _answer_and_score(self, item_id: str, replicate: int, slots: list[Slot]) -> None:
        item, instance = self.items[item_id], self.instances[item_id]
        if item.scoring == "agentic":
            async with self._episode_slots:  # whole episodes, not just requests: each keeps its conversation warm
                self.journal.append(await self._agentic(item, slots[0]))
            self.progress.turns.pop(item_id, None)
            self.progress.done += 1
            self._report()
            return
        reply, attempts, retries = await self._model_reply(item, instance, replicate)
        for n, slot in enumerate(slots):
            if n:  # the answer's own attempts and retries are counted once, on its first observation
                attempts, retries = 1, Counter()
            if slot.judge_replicate is None:
                scored, more_attempts, more = await with_retries(
                    lambda: _score(instance, reply.text), self.settings.policy, item_id, "scoring", self._count_retry)
                observation = self._observation(item, slot, reply, attempts + more_attempts - 1,
                                                retries + more, scored.score, scored.detail)
            else:
                observation = await self._judged(item, instance, slot, reply, attempts, retries)
            self.journal.append(observation)
            self.progress.done += 1
            self._report()

    async def _agentic(self, item: ItemSpec, slot: Slot) -> Observation:
        """One episode of an AG task; an environment crash restarts it from scratch (amendment 001 §8)."""
        from esac_kit.ag.loop import Budgets, run_episode

        provider, calls = self.settings.model, {"attempts": 0, "retries": Counter()}
        turn_tokens = item.output_budget_tokens or self.default_budget_tokens
        if self.settings.max_tokens_cap:
            turn_tokens = min(turn_tokens, self.settings.max_tokens_cap)
        steps = min(item.step_budget, self.settings.max_turns_cap or item.step_budget)
        budgets = Budgets(steps=steps, tokens=self.episode_token_budget or 10**9,
                          time_s=item.time_budget_s or self.default_budget_s, turn_tokens=turn_tokens)

        async def chat(request: ChatRequest, turn: int, seconds_left: float) -> ModelReply:
            reply, attempts, retries = await self._cached_chat(provider, request, "agent", slot.model_replicate,
                                                               item.id, seconds_left, salt=f"turn{turn}")
            calls["attempts"] += attempts - 1
            calls["retries"].update(retries)
            self.progress.turns[item.id] = turn + 1  # long episodes show life between observations
            self._report()
            return reply

        result, attempts, retries = await with_retries(
            lambda: run_episode(self.tasks[item.id], item.id, item.efficiency, provider, chat, budgets,
                                self.settings.temperature), self.settings.policy, item.id, "environment",
            self._count_retry)
        reply = ModelReply(result.answer, result.outcome, result.tokens_in, result.tokens_out,  # type: ignore[arg-type]
                           result.latency_s)
        observation = self._observation(item, slot, reply, attempts + calls["attempts"],
                                        retries + calls["retries"], result.detail["score"], result.detail)
        return observation

    async def _model_reply(self, item: ItemSpec, instance: Instance, replicate: int) -> tuple[ModelReply, int, Counter]:
        earlier = next((o for o in self.journal.observations
                        if o.item_id == item.id and o.model_replicate == replicate), None)
        if earlier is not None:  # resuming a judged item: reuse the journalled answer, ask nothing again
            return (ModelReply(earlier.response, earlier.outcome, earlier.tokens_in, earlier.tokens_out,  # type: ignore[arg-type]
                               earlier.latency_s), 1, Counter())
        budget = item.output_budget_tokens or self.default_budget_tokens
        if self.settings.max_tokens_cap:
            budget = min(budget, self.settings.max_tokens_cap)
        request = ChatRequest(messages=({"role": "user", "content": instance.prompt},), max_tokens=budget,
                              temperature=self.settings.temperature)
        time_budget = item.time_budget_s or self.default_budget_s
        return await self._cached_chat(self.settings.model, request, "model", replicate, item.id, time_budget)

    async def _judged(self, item: ItemSpec, instance: Instance, slot: Slot, reply: ModelReply, attempts: int,
                      retries: Counter) -> Observation:
        judge, rubric, facts = self.settings.judge, item.rubric, instance.key.facts
        if not reply.text.strip():
            levels, rationale, verdict_reply = empty_levels(rubric), EMPTY_RATIONALE, None
        else:
            if judge is None:
                raise ConfigError(f"item {item.id} is judge-graded but the run has no judge")
            request = judge_request(rubric, instance.prompt, reply.text, item.id, slot.judge_replicate,
                                    self.settings.judge_temperature, self.settings.judge_max_tokens)
            verdict_reply, judge_attempts, judge_retries = await self._cached_chat(
                judge, request, "judge", slot.judge_replicate, item.id, None, salt=f"{slot.model_replicate}",
                check=lambda answer: parse_verdict(answer.text, rubric, judge.endpoint))
            verdict = parse_verdict(verdict_reply.text, rubric, judge.endpoint)
            attempts, retries = attempts + judge_attempts - 1, retries + judge_retries
            levels = observation_levels(rubric, verdict.levels, reply.text, facts)
            rationale = verdict.rationale
        observation = self._observation(item, slot, reply, attempts, retries, score_verdict(rubric, levels),
                                        {"levels": levels})
        return observation.model_copy(update={
            "judge_levels": levels, "judge_rationale": rationale,
            "judge_tokens_in": verdict_reply.tokens_in if verdict_reply else 0,
            "judge_tokens_out": verdict_reply.tokens_out if verdict_reply else 0})

    async def _cached_chat(self, provider: Provider, request: ChatRequest, role: str, replicate: int, item_id: str,
                           time_budget_s: float | None, salt: str = "",
                           check: Callable[[ModelReply], object] | None = None) -> tuple[ModelReply, int, Counter]:
        """One call through the cache and the retry policy; `check` rejects a reply (e.g. an invalid verdict)
        before it is cached, so a retry asks again instead of rereading the bad reply."""
        cache = self.settings.cache
        key = cache_key(provider.ref, request, role, replicate, salt) if cache.folder else ""
        cached = cache.get(key) if key else None
        if cached is not None and _passes(check, cached):
            return cached, 1, Counter()
        timeout = self.settings.policy.request_timeout_s or (time_budget_s or self.default_budget_s) + 30

        async def once() -> ModelReply:
            async with self._limit(provider):
                reply = await provider.chat(request, timeout, time_budget_s)
            if check is not None:
                check(reply)
            return reply

        reply, attempts, retries = await with_retries(once, self.settings.policy, item_id, role, self._count_retry)
        if key and reply.outcome != "time_budget":
            cache.put(key, reply)
        return reply, attempts, retries

    def _count_retry(self, kind: str) -> None:
        self.progress.retries[kind] += 1
        self._report()

    def _observation(self, item: ItemSpec, slot: Slot, reply: ModelReply, attempts: int, retries: Counter,
                     score: float, detail: dict) -> Observation:
        instance = self.instances[item.id]
        return Observation(run_id=self.settings.run_id, suite=instance.suite, version=instance.version,
                           pool=instance.pool, item_id=item.id, category=item.category,
                           model_replicate=slot.model_replicate, judge_replicate=slot.judge_replicate,
                           outcome=reply.outcome, score=score, score_detail=_jsonable(detail), response=reply.text,
                           tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, latency_s=reply.latency_s,
                           attempts=attempts, retries=dict(retries),
                           prompt_sha256=hashlib.sha256(instance.prompt.encode()).hexdigest())

    def _report(self) -> None:
        if self.settings.on_progress and self.progress:
            self.settings.on_progress(self.progress)


async def _score(instance: Instance, response: str):
    """Score a response; sandboxed code runs in a worker thread so other calls go on meanwhile."""
    if isinstance(instance.key, CodeTestsKey):
        return await asyncio.to_thread(score_response, instance.key, response)
    return score_response(instance.key, response)


def _passes(check: Callable[[ModelReply], object] | None, reply: ModelReply) -> bool:
    """True when a cached reply passes the caller's check (an invalid entry counts as a miss)."""
    if check is None:
        return True
    try:
        check(reply)
    except TransientFailure:
        return False
    return True


def _jsonable(detail: dict) -> dict:
    """Keep score details JSON-friendly (Fractions and sets become strings)."""
    import json

    return json.loads(json.dumps(detail, default=str))
