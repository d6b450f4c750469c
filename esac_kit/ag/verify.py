"""`esac-kit verify --suite ag`: every task's scripted agents, driven through the real episode loop over a loopback
tool-calling server in both provider protocols, keep their guarantees over many seeds (amendment 001 §1, §3)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from esac_kit.ag.loop import Budgets, EpisodeResult, run_episode
from esac_kit.ag.policies import POLICIES, script_for, scripted_answer
from esac_kit.ag.task import AgTask, task_digest
from esac_kit.instances import build_task
from esac_kit.loopback import LoopbackServer
from esac_kit.pools import Pool
from esac_kit.chat import ModelRef
from esac_kit.providers import make_provider
from esac_kit.suite import Suite
from esac_kit.verify import FreshProcessDigests, verification_pools

MIN_REFERENCE_TOKEN_LEVEL = 5
CONCURRENCY = 8


@dataclass
class TaskVerification:
    """What verify observed for one AG task over its seeds."""

    item_id: str
    seeds: int = 0
    reference_ok: int = 0
    null_zero: int = 0
    wasteful_ok: int = 0
    unsafe_fail: int | None = None
    unique_prompts: int = 0
    reference_calls: tuple[int, int] = (0, 0)
    reference_tokens: tuple[int, int] = (0, 0)
    deterministic: bool | None = None
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every check held."""
        return not self.failures


async def _episodes(jobs: list[tuple[str, str, int, AgTask]], suite: Suite,
                    urls: dict[str, str]) -> dict[tuple[str, str, int], EpisodeResult]:
    """Run every (item, policy, seed) episode; even seeds speak OpenAI, odd seeds Anthropic."""
    limit = asyncio.Semaphore(CONCURRENCY)
    results: dict[tuple[str, str, int], EpisodeResult] = {}
    async with httpx.AsyncClient() as client:
        providers = {(policy, protocol): make_provider(ModelRef(protocol, f"scripted-{policy}", urls[policy]), client)
                     for policy in urls for protocol in ("openai", "anthropic")}

        async def one(item_id: str, policy: str, seed: int, task: AgTask) -> None:
            item = suite.item(item_id)
            provider = providers[(policy, "anthropic" if seed % 2 else "openai")]
            budgets = Budgets(item.step_budget, suite.manifest.episode_token_budget or 10**9,
                              item.time_budget_s or suite.manifest.time_budget_s, suite.manifest.output_budget_tokens)

            async def chat(request, turn, seconds_left):
                return await provider.chat(request, timeout_s=60)

            async with limit:
                results[(item_id, policy, seed)] = await run_episode(task, item_id, item.efficiency, provider, chat,
                                                                     budgets, 0.0)

        async with asyncio.TaskGroup() as group:
            for job in jobs:
                group.create_task(one(*job))
    return results


def verify_ag(suite: Suite, items: list, pool: Pool, n_seeds: int,
              progress: Callable[[str], None] | None = None) -> list[TaskVerification]:
    """Verify AG tasks over n seeds derived from the pool."""
    pools = verification_pools(pool, n_seeds)
    with FreshProcessDigests(suite, pools, [item.id for item in items],
                             "esac_kit.ag.verify:tasks_digest") as fresh_process:  # the second core's share
        return _verify_tasks(suite, items, pools, fresh_process, progress)


def _verify_tasks(suite: Suite, items: list, pools: list[Pool], fresh_process: FreshProcessDigests,
                  progress: Callable[[str], None] | None) -> list[TaskVerification]:
    tasks = {(item.id, k): build_task(suite, item, p) for item in items for k, p in enumerate(pools)}
    scripts: dict[str, dict[str, tuple]] = {policy: {} for policy in POLICIES}
    for (item_id, k), task in tasks.items():
        for policy in POLICIES:
            scripts[policy][task.prompt] = script_for(task, policy)
    jobs = [(item_id, policy, k, task) for (item_id, k), task in tasks.items() for policy in POLICIES
            if policy != "unsafe" or task.unsafe is not None]
    if progress:
        progress(f"{len(jobs)} episodes over {len(pools)} seeds")
    servers = {policy: LoopbackServer(scripted_answer(scripts[policy])) for policy in POLICIES}
    for server in servers.values():
        server.__enter__()
    try:
        episodes = asyncio.run(_episodes(jobs, suite, {p: s.url for p, s in servers.items()}))
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    digests = {item.id: task_digest([tasks[(item.id, k)] for k in range(len(pools))]) for item in items}
    fresh = fresh_process.result()
    return [_judge_task(suite, item.id, len(pools), tasks, episodes, digests[item.id] == fresh.get(item.id))
            for item in items]


def _judge_task(suite: Suite, item_id: str, n: int, tasks, episodes, deterministic: bool) -> TaskVerification:
    result = TaskVerification(item_id, seeds=n, deterministic=deterministic)
    calls, tokens, problems = [], [], []
    for k in range(n):
        reference, null = episodes[(item_id, "reference", k)].detail, episodes[(item_id, "null", k)].detail
        wasteful = episodes[(item_id, "wasteful", k)].detail
        calls.append(reference["counts"]["tool_calls"])
        tokens.append(reference["counts"]["tokens"])
        ref_eff, waste_eff = reference["efficiency"], wasteful["efficiency"]
        if reference["success"] and reference["score"] == 1 and ref_eff["action_level"] == 6 \
                and ref_eff["token_level"] >= MIN_REFERENCE_TOKEN_LEVEL:
            result.reference_ok += 1
        else:
            problems.append(f"seed {k}: reference success={reference['success']} action L{ref_eff['action_level']} "
                            f"token L{ref_eff['token_level']} checks {reference['checks']}")
        if null["score"] == 0 and not null["success"] and null["efficiency"]["a"] == 0 == null["efficiency"]["t"]:
            result.null_zero += 1
        if wasteful["success"] and waste_eff["action_level"] < ref_eff["action_level"] \
                and wasteful["counts"]["redundant"] + wasteful["counts"]["rework"] > 0:
            result.wasteful_ok += 1
        unsafe = episodes.get((item_id, "unsafe", k))
        if unsafe is not None:
            result.unsafe_fail = (result.unsafe_fail or 0) + (not unsafe.detail["success"])
    result.unique_prompts = len({tasks[(item_id, k)].prompt for k in range(n)})
    result.reference_calls, result.reference_tokens = (min(calls), max(calls)), (min(tokens), max(tokens))
    checks = [(result.reference_ok == n, f"reference efficient and correct on {result.reference_ok}/{n}"
               + (f" ({problems[0]})" if problems else "")),
              (result.null_zero == n, f"null agent scored 0 on {result.null_zero}/{n}"),
              (result.wasteful_ok == n, f"wasteful agent succeeded at a lower action level on {result.wasteful_ok}/{n}"),
              (result.unique_prompts == n, f"{n - result.unique_prompts} duplicate instances"),
              (bool(deterministic), "a fresh process generated different tasks")]
    if suite.item(item_id).category == "safety":
        checks.append((result.unsafe_fail == n, f"unsafe agent failed on {result.unsafe_fail or 0}/{n}"))
    result.failures = [message for ok, message in checks if not ok]
    return result


def tasks_digest(suite: Suite, item, pools: list[Pool]) -> str:
    """The digest of one task's instances over the pools (what the fresh process computes)."""
    return task_digest([build_task(suite, item, p) for p in pools])


def format_table(results: list[TaskVerification]) -> str:
    """A fixed-width table of AG verify figures, one row per task."""
    header = (f"{'task':34} {'seeds':>5} {'ref ok':>6} {'null=0':>6} {'waste':>5} {'unsafe':>6} {'unique':>6} "
              f"{'ref calls':>9} {'ref tokens':>13} {'fresh':>5}  result")
    rows = [header, "-" * len(header)]
    for r in results:
        unsafe = "-" if r.unsafe_fail is None else str(r.unsafe_fail)
        fresh = {True: "same", False: "DIFF", None: "-"}[r.deterministic]
        verdict = "PASS" if r.passed else "FAIL: " + "; ".join(r.failures)
        rows.append(f"{r.item_id:34} {r.seeds:5d} {r.reference_ok:6d} {r.null_zero:6d} {r.wasteful_ok:5d} "
                    f"{unsafe:>6} {r.unique_prompts:6d} {r.reference_calls[0]:4d}-{r.reference_calls[1]:<4d} "
                    f"{r.reference_tokens[0]:6d}-{r.reference_tokens[1]:<6d} {fresh:>5}  {verdict}")
    return "\n".join(rows)
