"""A GI run under a 30 % fault storm that includes stalled streams, against the same run without faults.

A loopback server with a fixed latency per request plays the model and the judge; in the storm, 30 % of distinct
requests fail their first one or two attempts with 429, 500, 503, a reset connection, a malformed or truncated
body, or a stream that goes silent mid-answer (for `--stall-s`, far longer than the idle timeout). A stalled
stream costs the idle timeout, then a retry. Prints both wall times, their ratio (target ≤ 3) and whether the
scores are identical. Usage: python benchmarks/fault_storm.py [--latency-s 2] [--idle-timeout-s 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from runkit import reference_answers, run_folder_of, scores_of  # noqa: E402

from esac_kit.cli import main  # noqa: E402
from esac_kit.loopback import LoopbackServer, transient_faults  # noqa: E402

STORM = ("429", "500", "503", "reset", "malformed", "truncated", "stall_stream")


def gi_run(server: LoopbackServer, reports: Path, idle_s: float, concurrency: int) -> tuple[int, float]:
    started = time.monotonic()
    code = main(["run", "--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}", "--no-cache",
                 "--reports", str(reports), "--idle-timeout-s", str(idle_s), "--concurrency", str(concurrency)])
    return code, time.monotonic() - started


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-s", type=float, default=2.0, help="the loopback model's time per answer")
    parser.add_argument("--idle-timeout-s", type=float, default=10.0)
    parser.add_argument("--stall-s", type=float, default=120.0, help="how long a stalled stream stays silent")
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    answers = reference_answers()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with LoopbackServer(answers, latency_s=args.latency_s) as server:
            clean_code, clean_s = gi_run(server, root / "clean", args.idle_timeout_s, args.concurrency)
        clean = scores_of(json.loads((run_folder_of(root / "clean") / "report.json").read_text()))
        with LoopbackServer(answers, fault=transient_faults(args.rate, STORM), latency_s=args.latency_s,
                            stall_s=args.stall_s) as server:
            storm_code, storm_s = gi_run(server, root / "storm", args.idle_timeout_s, args.concurrency)
            faults = dict(server.faults)
        report = json.loads((run_folder_of(root / "storm") / "report.json").read_text())
    print(f"clean run: exit {clean_code}, {clean_s:.1f} s (latency {args.latency_s:g} s a request, concurrency "
          f"{args.concurrency})")
    print(f"storm of {args.rate:.0%} (faults {faults}): exit {storm_code}, {storm_s:.1f} s, ratio "
          f"{storm_s / clean_s:.2f} (target ≤ 3), retries {report['retries']}, scores identical: "
          f"{scores_of(report) == clean}")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
