"""The runner: the replication plan, bounded concurrency, retries of infrastructure failures, journal and cache.

Deterministic items run once; judge-graded items are answered twice and each answer is judged twice
(amendment 001 §5). Infrastructure failures are retried and never scored; one that persists aborts the run
with everything finished kept (amendment 001 §8).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from esac_kit.cache import ResponseCache, cache_key
from esac_kit.errors import EsacError, InfrastructureAbort, RunStopped
from esac_kit.journal import Journal
from esac_kit.kinds import Slot, kind_of
from esac_kit.outcomes import IN_FLIGHT_DEADLINE, OUTAGE_LEFT, TransientFailure
from esac_kit.chat import ChatRequest, ModelReply
from esac_kit.providers import Provider
from esac_kit.records import RESPONSE_CHARS_PER_TOKEN, Observation, prompt_sha256
from esac_kit.sandbox import SandboxError
from esac_kit.schemas import Instance, ItemSpec

T = TypeVar("T")
RESUME_HINT = "run aborted, finished work kept: resume with `esac-kit run --resume RUN`"  # ends an abort's message


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with full jitter for up to an outage budget per call, however many attempts that
    takes; Retry-After is honoured as given (amendment 001 §8: an outage is waited out, never scored)."""

    outage_budget_s: float = 600.0
    base_s: float = 1.0
    cap_s: float = 5.0  # the longest pause, so the first attempt after an outage ends comes within seconds
    max_attempts: int | None = None  # an optional extra bound (tests); None: the budget alone decides
    request_timeout_s: float | None = None  # None: the item's time budget plus a margin
    idle_timeout_s: float = 60.0  # a streamed reply silent this long (no byte, no ping) is a stalled connection
    batch_poll_s: float = 30.0  # --batch: how often a submitted batch is polled

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before the next attempt."""
        if retry_after is not None:
            return retry_after
        return random.uniform(0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))


async def with_retries(attempt: Callable[[], Awaitable[T]], policy: RetryPolicy, item_id: str, role: str,
                       on_retry: Callable[[str], None] | None = None,
                       queued_s: Callable[[], float] = lambda: 0.0, bound_in_flight: bool = True) -> tuple[T, int, Counter]:
    """Call until it succeeds; retry infrastructure failures for up to the policy's outage budget, counted from the
    first failure, then abort (amendment 001 §8). `queued_s()` is the time this call has spent waiting for a
    concurrency slot, which the budget does not count. After a first failure the budget also bounds the attempt
    in flight, unless `bound_in_flight` is False (a whole AG episode, which may rightly outlast it)."""
    retries: Counter = Counter()
    first_failure: tuple[float, float] | None = None  # when the outage began, and the queue time until then
    number = 0
    token = OUTAGE_LEFT.set(None)  # a call's outage is its own: later calls in this task start unbounded
    try:
        while True:
            number += 1
            try:
                return await attempt(), number, retries
            except (TransientFailure, SandboxError) as failure:
                kind = getattr(failure, "kind", "sandbox")
                first_failure = first_failure or (time.monotonic(), queued_s())
                outage = time.monotonic() - first_failure[0] - (queued_s() - first_failure[1])
                if outage >= policy.outage_budget_s or (policy.max_attempts and number >= policy.max_attempts):
                    raise InfrastructureAbort(
                        f"{role} call for item {item_id} failed {number} times over {outage:.0f} s; last: {failure}; "
                        + RESUME_HINT, retries) from None
                retries[kind] += 1
                if on_retry:
                    on_retry(kind)
                if bound_in_flight:  # from now on the outage's deadline bounds each attempt in flight, queue excluded
                    began, queued_then = first_failure
                    OUTAGE_LEFT.set(lambda: policy.outage_budget_s - (time.monotonic() - began
                                                                      - (queued_s() - queued_then)))
                delay = policy.delay(number, getattr(failure, "retry_after", None))
                await asyncio.sleep(max(0.0, min(delay, policy.outage_budget_s - outage)))
    finally:
        OUTAGE_LEFT.reset(token)


FINAL_ATTEMPT_S = 1.0  # the least an attempt made as the outage budget ends gets to reach the endpoint


async def _bounded(call: Awaitable[T], seconds: float, endpoint: str) -> T:
    """An attempt made during an outage, cut when the outage budget ends unless the endpoint began to answer."""
    token = None
    try:
        async with asyncio.timeout(max(seconds, FINAL_ATTEMPT_S)) as deadline:
            token = IN_FLIGHT_DEADLINE.set(deadline)
            return await call
    except TimeoutError:
        raise TransientFailure("timeout", endpoint, detail="the outage budget ended during the attempt") from None
    finally:
        if token is not None:
            IN_FLIGHT_DEADLINE.reset(token)


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
    time_budgets: bool = True  # False: --no-time-budget; answers are never cut or classed by time
    answers: Provider | None = None  # --batch: the single answers' provider (a BatchQueue); AG episodes use `model`
    on_progress: Callable[[Progress], None] | None = None



class Runner:
    """Fills the plan's slots for one run, journalling each observation as it lands; each item's kind decides how
    its slots are filled and calls back into the runner for model calls, retries and the journal."""

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
        self.episode_slots = asyncio.Semaphore(settings.concurrency)  # whole AG episodes, not single requests
        self.progress: Progress | None = None
        self._landed_retries: Counter = Counter()  # retries of the observations this session journalled

    def _limit(self, provider: Provider):
        # Bounded per provider endpoint, so model and judge on one server share its limit; a batch takes them all
        if getattr(provider, "batched", False):
            return contextlib.nullcontext()
        return self._limits.setdefault(provider.endpoint, asyncio.Semaphore(self.settings.concurrency))

    async def run(self, slots: list[Slot], stop: threading.Event | None = None) -> list[Observation]:
        """Fill every slot not already journalled; raise InfrastructureAbort when a failure persists, and RunStopped
        soon after `stop` is set (what finished is journalled)."""
        done = {o.slot for o in self.journal.observations}
        self.progress = Progress(total=len(slots), done=len(done & {s.key for s in slots}))
        self.progress.resumed = self.progress.done
        self._report()
        pending: dict[tuple[str, int], list[Slot]] = {}
        for slot in slots:
            if slot.key not in done:
                pending.setdefault((slot.item_id, slot.model_replicate), []).append(slot)
        # Longest chains first: answers that a judge must then grade start before single-call items.
        ordered = sorted(pending.items(), key=lambda entry: -len(entry[1]))
        try:
            async with asyncio.TaskGroup() as group:
                watcher = group.create_task(_watch(stop)) if stop is not None else None
                observers = [group.create_task(kind_of(self.items[item_id]).observe(
                    self, self.items[item_id], self.instances[item_id], replicate, item_slots))
                    for (item_id, replicate), item_slots in ordered]
                if watcher is not None:
                    await asyncio.gather(*observers)
                    watcher.cancel()
        except* EsacError as failed:  # an abort or a configuration error: the first one speaks for the run
            raise failed.exceptions[0] from None
        return self.journal.observations

    def output_budget(self, item: ItemSpec) -> int:
        """The item's output budget in tokens (per turn for AG), under the embedded model's development cap."""
        budget = item.output_budget_tokens or self.default_budget_tokens
        return min(budget, self.settings.max_tokens_cap) if self.settings.max_tokens_cap else budget

    def time_budget(self, item: ItemSpec) -> float | None:
        """The item's time budget in seconds (per episode for AG); None when the run takes no time budgets."""
        return (item.time_budget_s or self.default_budget_s) if self.settings.time_budgets else None

    async def model_answer(self, item: ItemSpec, instance: Instance, replicate: int) -> tuple[ModelReply, int, Counter]:
        """The model's answer to an instance; a resumed judged item reuses its journalled answer and asks nothing."""
        earlier = next((o for o in self.journal.observations
                        if o.item_id == item.id and o.model_replicate == replicate), None)
        if earlier is not None:
            return (ModelReply(earlier.response, earlier.outcome, earlier.tokens_in, earlier.tokens_out,  # type: ignore[arg-type]
                               earlier.latency_s), 1, Counter())
        request = ChatRequest(messages=({"role": "user", "content": instance.prompt},),
                              max_tokens=self.output_budget(item), temperature=self.settings.temperature)
        return await self.chat(self.settings.answers or self.settings.model, request, "model", replicate, item.id,
                               self.time_budget(item))

    async def chat(self, provider: Provider, request: ChatRequest, role: str, replicate: int, item_id: str,
                   time_budget_s: float | None, salt: str = "",
                   check: Callable[[ModelReply], object] | None = None) -> tuple[ModelReply, int, Counter]:
        """One call through the cache and the retry policy; `check` rejects a reply (e.g. an invalid verdict)
        before it is cached, so a retry asks again instead of rereading the bad reply."""
        cache = self.settings.cache
        batched = getattr(provider, "batched", False)
        key = (cache_key(provider.ref, request, role, replicate, salt, provider.params.recorded())
               if cache.folder or batched else "")
        cached = cache.get(key) if key and cache.folder else None
        if cached is not None and _passes(check, cached):
            return cached, 1, Counter()
        budget = time_budget_s if time_budget_s not in (None, float("inf")) else self.default_budget_s
        timeout = self.settings.policy.request_timeout_s or budget + 30
        queued = [0.0]

        async def once() -> ModelReply:
            waiting = time.monotonic()
            async with self._limit(provider):
                queued[0] += time.monotonic() - waiting
                left = OUTAGE_LEFT.get()
                if batched or left is None:
                    reply = await (provider.chat(request, timeout, time_budget_s, slot_key=key) if batched
                                   else provider.chat(request, timeout, time_budget_s))
                else:
                    reply = await _bounded(provider.chat(request, timeout, time_budget_s), left(), provider.endpoint)
            if check is not None:
                check(reply)
            return reply

        # A batch may rightly take hours: the outage deadline does not bound an attempt at it
        reply, attempts, retries = await self.retried(once, item_id, role, lambda: queued[0], not batched)
        if key and cache.folder and reply.outcome != "time_budget":
            cache.put(key, reply)
        return reply, attempts, retries

    async def retried(self, attempt: Callable[[], Awaitable[T]], item_id: str, role: str,
                      queued_s: Callable[[], float] = lambda: 0.0, bound_in_flight: bool = True
                      ) -> tuple[T, int, Counter]:
        """Call under the run's retry policy, counting retries in the progress."""
        return await with_retries(attempt, self.settings.policy, item_id, role, self._count_retry, queued_s,
                                  bound_in_flight)

    def record(self, item: ItemSpec, slot: Slot, reply: ModelReply, attempts: int, retries: Counter, score: float,
               detail: dict, **extra) -> Observation:
        """Journal one observation (flushed before this returns) and advance the progress; a response longer than
        its output budget could hold is stored cut to that size, with its whole length and digest."""
        instance = self.instances[item.id]
        cap = self.output_budget(item) * RESPONSE_CHARS_PER_TOKEN
        observation = Observation(
            run_id=self.settings.run_id, suite=instance.suite, version=instance.version, pool=instance.pool,
            item_id=item.id, category=item.category, model_replicate=slot.model_replicate,
            judge_replicate=slot.judge_replicate, outcome=reply.outcome, score=score, score_detail=_jsonable(detail),
            response=reply.text[:cap], response_sha256=prompt_sha256(reply.text),
            response_chars=len(reply.text) if len(reply.text) > cap else None, tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out, latency_s=reply.latency_s, attempts=attempts, retries=dict(retries),
            tokens_reasoning=reply.reasoning_tokens, tokens_cache_read=reply.cache_read_tokens,
            tokens_cache_write=reply.cache_write_tokens, thinking=reply.thinking[:cap],
            prompt_sha256=prompt_sha256(instance.prompt), **extra)
        self.journal.append(observation)
        self._landed_retries.update(retries)
        self.progress.turns.pop(item.id, None)
        self.progress.done += 1
        self._report()
        return observation

    def unlanded_retries(self) -> dict[str, int]:
        """Retries counted this session whose calls never reached the journal (an abort or a stop cut them off)."""
        return dict((self.progress.retries - self._landed_retries) if self.progress else Counter())

    def turn_started(self, item_id: str, turn: int) -> None:
        """Show life between observations: an AG episode reached another model turn."""
        self.progress.turns[item_id] = turn
        self._report()

    def _count_retry(self, kind: str) -> None:
        self.progress.retries[kind] += 1
        self._report()

    def _report(self) -> None:
        if self.settings.on_progress and self.progress:
            self.settings.on_progress(self.progress)


async def _watch(stop: threading.Event) -> None:
    """Raise RunStopped soon after another thread sets `stop` (a notebook's Stop): the task group then cancels."""
    while not stop.is_set():
        await asyncio.sleep(0.1)
    raise RunStopped("the run was stopped; finished work is kept: resume it to continue")


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
    return json.loads(json.dumps(detail, default=str))
