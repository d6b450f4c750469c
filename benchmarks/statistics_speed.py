"""Speed of the statistics of replicates (SPEC §7) on 50 synthetic ESAC-GI runs.

Each run has 36 items: 29 deterministic (1 observation) and 7 judge-graded (2 answers × 2 judge calls,
amendment 001 §5). For every run: item spread, variance components, judge reliability, a D-study and the
category intervals (2000 bootstrap replicates); and the paired comparison of each two consecutive runs.
Prints the median wall seconds over the repeats, per function and in all, against the target (< 0.5 s).
Usage: python benchmarks/statistics_speed.py [--repeats 7] [--runs 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from esac_kit import statistics as st

TARGET_S = 0.5
# ESAC-GI 1.0 (SPEC §2): category → (points, items, judge-graded); the calibration boundary item weighs 0.5.
GI = {"quant": (15, 5, False), "logic": (15, 5, False), "code": (15, 5, False), "instructions": (10, 5, False),
      "context": (15, 5, False), "honesty": (15, 4, False), "calibration": (5, 5, True), "writing": (10, 2, True)}
POINTS = {c: p for c, (p, _, _) in GI.items()}
ITEMS = [(c, f"{c}-{k}", judged) for c, (_, n, judged) in GI.items() for k in range(n)]
WEIGHTS = {i: (0.5 if i == "calibration-4" else 1.0) for _, i, _ in ITEMS}


def synthetic_run(rng: np.random.Generator, run_id: str) -> pd.DataFrame:
    """One run's tidy observation table, as journal.observations_frame lays it out (the columns used here)."""
    ability = rng.uniform(0.4, 0.9)
    rows = []
    for category, item, judged in ITEMS:
        if judged:
            base = np.clip(rng.normal(ability, 0.2), 0, 1)
            for model in (1, 2):
                answer = np.clip(base + rng.normal(0, 0.1), 0, 1)
                for judge in (1, 2):
                    score = float(np.clip(answer + rng.normal(0, 0.07), 0, 1))
                    rows.append((run_id, item, category, model, judge, score))
        else:
            rows.append((run_id, item, category, 1, None, float(rng.random() < ability)))
    frame = pd.DataFrame(rows, columns=list(st.REQUIRED_COLUMNS))
    frame["judge_replicate"] = frame["judge_replicate"].astype("Int64")
    return frame


def one_pass(runs: list[pd.DataFrame]) -> dict[str, float]:
    """Everything for every run, and the consecutive paired comparisons; seconds per function."""
    spent = dict.fromkeys(["item_spread", "variance_components", "judge_reliability", "d_study",
                           "category_intervals", "paired_comparison"], 0.0)
    clock = time.perf_counter
    for obs in runs:
        t0 = clock()
        st.item_spread(obs)
        t1 = clock()
        components = st.variance_components(obs)
        t2 = clock()
        st.judge_reliability(obs)
        t3 = clock()
        st.d_study(components)
        t4 = clock()
        st.category_intervals(obs, WEIGHTS, POINTS, n_boot=2000, seed=0)
        t5 = clock()
        for name, seconds in zip(spent, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            spent[name] += seconds
    t0 = clock()
    for a, b in zip(runs, runs[1:]):
        st.paired_comparison(a, b, WEIGHTS, POINTS)
    spent["paired_comparison"] = clock() - t0
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    runs = [synthetic_run(rng, f"run{k:02d}") for k in range(args.runs)]
    one_pass(runs[:2])  # warm-up: first calls pay for imports and caches
    passes = [one_pass(runs) for _ in range(args.repeats)]
    totals = [sum(p.values()) for p in passes]
    print(f"{args.runs} runs × 36 items (7 judge-graded × 4 observations, 29 × 1), "
          f"{args.runs - 1} paired comparisons, {args.repeats} repeats")
    for name in passes[0]:
        print(f"  {name:<20} {statistics.median(p[name] for p in passes):8.4f} s")
    median = statistics.median(totals)
    print(f"median total {median:.4f} s (min {min(totals):.4f}, max {max(totals):.4f}); "
          f"target < {TARGET_S} s: {'met' if median < TARGET_S else 'NOT met'}")


if __name__ == "__main__":
    main()
