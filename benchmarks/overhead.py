"""Harness overhead: a full ESAC-GI public run against a loopback server with fixed latency.

Prints the wall time of the run phase, the critical-path bound (the longest chain of dependent calls ×
latency, given the concurrency), their ratio, and the harness's CPU milliseconds per request. The server
runs in its own process so its CPU is not counted. Usage: python benchmarks/overhead.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx  # noqa: E402

from esac_kit.cache import ResponseCache  # noqa: E402
from esac_kit.instances import generate  # noqa: E402
from esac_kit.journal import Journal  # noqa: E402
from esac_kit.loopback import LoopbackServer  # noqa: E402
from esac_kit.pools import public_pool  # noqa: E402
from esac_kit.providers import make_provider, parse_model  # noqa: E402
from esac_kit.runner import RetryPolicy, Runner, RunSettings, plan  # noqa: E402
from esac_kit.suite import load_suite  # noqa: E402

LATENCY_S = 0.050
CONCURRENCY = 8


def serve(latency_s: float, ready, stop) -> None:
    from runkit import reference_answers

    with LoopbackServer(reference_answers(), latency_s=latency_s) as server:
        ready.put(server.url)
        stop.wait()


async def one_run(url: str, suite, items, instances) -> tuple[float, float, int]:
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=64)) as client:
        model = make_provider(parse_model(f"openai:bench@{url}"), client)
        judge = make_provider(parse_model(f"openai:judge@{url}"), client)
        settings = RunSettings(run_id="bench", model=model, judge=judge, temperature=1.0, judge_temperature=0.7,
                               judge_max_tokens=1024, concurrency=CONCURRENCY, policy=RetryPolicy(),
                               cache=ResponseCache(None))
        with tempfile.TemporaryDirectory() as folder:
            journal = Journal(Path(folder))
            runner = Runner(settings, journal, {i.id: i for i in items}, instances,
                            suite.manifest.output_budget_tokens, suite.manifest.time_budget_s)
            cpu_before = _cpu_s()
            started = time.perf_counter()
            observations = await runner.run(plan(items))
            wall = time.perf_counter() - started
            cpu = _cpu_s() - cpu_before
            journal.close()
    requests = len({(o.item_id, o.model_replicate) for o in observations}) + sum(
        o.judge_replicate is not None for o in observations)
    return wall, cpu, requests


async def transport_floor(url: str, requests: int) -> float:
    """The same number of requests through httpx alone at the same concurrency: what no harness can beat."""
    limit = asyncio.Semaphore(CONCURRENCY)
    body = {"model": "floor", "messages": [{"role": "user", "content": "floor"}]}
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=64)) as client:
        async def one() -> None:
            async with limit:
                await client.post(f"{url}/chat/completions", json=body)

        await asyncio.gather(*(one() for _ in range(CONCURRENCY)))  # open the connections first
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(requests)))
        return time.perf_counter() - started


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def critical_path_bound(items, latency_s: float, concurrency: int) -> tuple[float, int, int]:
    """max(longest chain, total calls / concurrency) × latency; model and judge share one endpoint here."""
    chain = 2 if any(i.scoring == "judge" for i in items) else 1  # an answer, then its judgement
    calls = sum(6 if i.scoring == "judge" else 1 for i in items)  # 2 answers + 4 judgements
    waves = max(chain, math.ceil(calls / concurrency))
    return waves * latency_s, chain, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    suite = load_suite("gi")
    items = list(suite.items)
    pool = public_pool(suite.manifest.public_seed)
    started = time.perf_counter()
    instances = {i.id: generate(suite, i, pool) for i in items}
    generation = time.perf_counter() - started
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Queue(), context.Event()
    server = context.Process(target=serve, args=(LATENCY_S, ready, stop), daemon=True)
    server.start()
    url = ready.get(timeout=120)
    try:
        asyncio.run(one_run(url, suite, items, instances))  # warm-up: imports, TLS context, first connections
        runs = [asyncio.run(one_run(url, suite, items, instances)) for _ in range(args.repeats)]
        floors = [asyncio.run(transport_floor(url, runs[0][2])) for _ in range(args.repeats)]
    finally:
        stop.set()
        server.join(timeout=10)
    bound, chain, calls = critical_path_bound(items, LATENCY_S, CONCURRENCY)
    walls = [w for w, _, _ in runs]
    cpu_per_request = [c / n * 1000 for _, c, n in runs]
    wall = statistics.median(walls)
    print(f"ESAC-GI public run, {len(items)} items, {runs[0][2]} requests, latency {LATENCY_S * 1000:.0f} ms, "
          f"concurrency {CONCURRENCY}, {args.repeats} repeats (medians)")
    print(f"instance generation (once)     {generation:8.3f} s")
    print(f"wall time of the run phase     {wall:8.3f} s   (min {min(walls):.3f}, max {max(walls):.3f})")
    print(f"critical-path bound            {bound:8.3f} s   (chain {chain}, {calls} calls / {CONCURRENCY})")
    print(f"ratio wall / bound             {wall / bound:8.3f}     (target <= 1.25)")
    floor = statistics.median(floors)
    print(f"transport floor (httpx only)   {floor:8.3f} s   (ratio {floor / bound:.3f}: loopback server + client)")
    print(f"harness CPU per request        {statistics.median(cpu_per_request):8.3f} ms  (target <= 5 ms; "
          f"includes scoring, sandbox runs are child processes)")


if __name__ == "__main__":
    main()
