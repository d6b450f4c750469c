"""Outages against the retry policy sized in time: a GI run on a loopback server that goes down mid-run for 30 s
(ridden out, identical scores) and, with --long, for 15 minutes (the run aborts with exit 3 after about the 600 s
outage budget). Prints the figures; takes about a minute, or about 11 minutes with --long.

    python benchmarks/outage.py [--long] [--outage-s 30] [--long-outage-s 900] [--budget-s 600]
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
from esac_kit.loopback import LoopbackServer, outage  # noqa: E402


def gi_run(server: LoopbackServer, reports: Path, budget_s: float) -> tuple[int, float]:
    started = time.monotonic()
    code = main(["run", "--model", f"openai:m@{server.url}", "--judge", f"openai:j@{server.url}", "--no-cache",
                 "--reports", str(reports), "--outage-budget-s", str(budget_s)])
    return code, time.monotonic() - started


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage-s", type=float, default=30.0)
    parser.add_argument("--long", action="store_true", help="also run the long outage (about budget + 1 minute)")
    parser.add_argument("--long-outage-s", type=float, default=900.0)
    parser.add_argument("--budget-s", type=float, default=600.0)
    args = parser.parse_args(argv)
    answers = reference_answers()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        with LoopbackServer(answers) as server:
            code, clean_s = gi_run(server, root / "clean", args.budget_s)
        clean = scores_of(json.loads((run_folder_of(root / "clean") / "report.json").read_text()))
        with LoopbackServer(answers, fault=outage(after_requests=10, lasting_s=args.outage_s)) as server:
            code, outage_s = gi_run(server, root / "outage", args.budget_s)
            failures = sum(server.faults.values())
        report = json.loads((run_folder_of(root / "outage") / "report.json").read_text())
        same = scores_of(report) == clean
        print(f"clean run: {clean_s:.1f} s")
        print(f"{args.outage_s:.0f} s outage after 10 requests: exit {code}, {outage_s:.1f} s "
              f"({outage_s - clean_s:+.1f} s against the clean run), {failures} failed attempts, retries "
              f"{report['retries']}, scores identical: {same}")
        if args.long:
            with LoopbackServer(answers, fault=outage(after_requests=10, lasting_s=args.long_outage_s)) as server:
                code, long_s = gi_run(server, root / "long", args.budget_s)
            print(f"{args.long_outage_s:.0f} s outage, budget {args.budget_s:.0f} s: exit {code} after {long_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main_())
