"""After-run cost of the CLI: what `esac-kit run` spends after the last model response, its peak RSS, and a rerun
on a warm response cache.

A full ESAC-GI public run (71 requests) as a child process (`python -m esac_kit run`) against a loopback server in
this process answering each request after a fixed latency. The server notes the monotonic time at which it wrote the
last byte of its last reply; this process notes when the child exits (os.wait4, which also gives the child's own
peak RSS). Their difference is the after-run time: flushing the journal, building and writing the report, printing
it, and the interpreter's exit. The cached rerun is the same command on the warm cache, timed from spawn to exit.
If `inspect_ai` is importable, an equivalent Inspect run (71 single-turn samples against the same server) is timed
the same way. Usage: python benchmarks/after_run.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from runkit import reference_answers  # noqa: E402

from esac_kit.loopback import LoopbackServer  # noqa: E402

LATENCY_S = 0.050
CONCURRENCY = 8
AFTER_RUN_TARGET_S = 0.3
RSS_TARGET_MB = 150
CACHED_TARGET_S = 1.0


def child(argv: list[str], server: LoopbackServer | None = None, env: dict | None = None) -> dict:
    """Run a command to exit; its wall seconds, seconds after the server's last reply, peak RSS and exit code."""
    if server is not None:
        server.last_reply_at = None
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = process.stdout.read()  # drained as it is written, so the child never blocks on a full pipe
    _, status, usage = os.wait4(process.pid, 0)
    exited = time.monotonic()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{argv[2:4]} exited {process.returncode}:\n{output.decode(errors='replace')[-2000:]}")
    last = server.last_reply_at if server is not None else None
    return {"wall": exited - started, "after": None if last is None else exited - last,
            "rss_mb": usage.ru_maxrss / 1024, "requests": server.requests if server is not None else 0}


def esac_argv(url: str, reports: Path, cache: Path | None) -> list[str]:
    return [sys.executable, "-m", "esac_kit", "run", "--model", f"openai:bench@{url}", "--judge",
            f"openai:judge@{url}", "--concurrency", str(CONCURRENCY), "--reports", str(reports),
            *(["--cache", str(cache)] if cache else ["--no-cache"])]


INSPECT_TASK = textwrap.dedent('''
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate

    @task
    def loopback():
        return Task(dataset=[Sample(input=f"question {n}", target="ANSWER") for n in range({n})],
                    solver=generate(), scorer=includes())
''')


def inspect_argv(folder: Path, url: str, requests: int) -> tuple[list[str], dict]:
    """An Inspect eval of as many single-turn samples as the GI run makes requests, against the same server."""
    path = folder / "loopback_task.py"
    path.write_text(INSPECT_TASK.replace("{n}", str(requests)))
    env = os.environ | {"OPENAI_API_KEY": "loopback", "OPENAI_BASE_URL": url}
    return [sys.executable, "-m", "inspect_ai", "eval", str(path), "--model", "openai/bench",
            "--max-connections", str(CONCURRENCY), "--log-dir", str(folder / "logs"), "--display", "none",
            "--no-score-display"], env


def medians(rows: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in ("wall", "after", "rss_mb") if rows[0][k] is not None}


def spread(rows: list[dict], key: str) -> str:
    values = [r[key] for r in rows]
    return f"min {min(values):.3f}, max {max(values):.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch, LoopbackServer(reference_answers(), latency_s=LATENCY_S) as server:
        root = Path(scratch)
        runs = []
        for n in range(args.repeats):
            server.requests = 0
            runs.append(child(esac_argv(server.url, root / f"fresh{n}", None), server))
        cache, reports = root / "cache", root / "cached"
        child(esac_argv(server.url, reports, cache), server)  # fills the cache
        server.requests = 0
        reruns = [child(esac_argv(server.url, reports, cache), server) for _ in range(args.repeats)]
        inspect = None
        try:
            import inspect_ai  # noqa: F401
        except ImportError:
            pass
        else:
            command, env = inspect_argv(root, server.url, runs[0]["requests"])
            inspect = []
            for _ in range(args.repeats):
                server.requests = 0
                inspect.append(child(command, server, env))
    fresh, cached = medians(runs), medians(reruns)
    print(f"ESAC-GI public run through the CLI: {runs[0]['requests']} requests, latency {LATENCY_S * 1000:.0f} ms, "
          f"concurrency {CONCURRENCY}, {args.repeats} repeats (medians)")
    print(f"wall time, spawn to exit         {fresh['wall']:7.3f} s   ({spread(runs, 'wall')})")
    print(f"after the last response to exit  {fresh['after']:7.3f} s   ({spread(runs, 'after')}; target <= "
          f"{AFTER_RUN_TARGET_S} s)")
    print(f"peak RSS of the CLI process      {fresh['rss_mb']:7.1f} MB  ({spread(runs, 'rss_mb')}; target <= "
          f"{RSS_TARGET_MB} MB)")
    print(f"cached rerun, spawn to exit      {cached['wall']:7.3f} s   ({spread(reruns, 'wall')}; target <= "
          f"{CACHED_TARGET_S} s; {reruns[0]['requests']} requests reached the server)")
    print(f"cached rerun peak RSS            {cached['rss_mb']:7.1f} MB")
    if inspect is None:
        print("Inspect not installed")
        return 0
    theirs = medians(inspect)
    print(f"Inspect, {inspect[0]['requests']} requests: wall {theirs['wall']:.3f} s, after the last response "
          f"{theirs['after']:.3f} s, peak RSS {theirs['rss_mb']:.1f} MB")
    print(f"ratios ESAC / Inspect: wall {fresh['wall'] / theirs['wall']:.2f}, after-run "
          f"{fresh['after'] / theirs['after']:.2f}, peak RSS {fresh['rss_mb'] / theirs['rss_mb']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
