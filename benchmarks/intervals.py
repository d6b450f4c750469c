"""Calibration of the exact category intervals and labels (esac_kit.statistics) at 2–5 items and for the GI total.

For n = 2..5 items and several kinds of item score in [0, 1] (binary; Beta; U-shaped Beta; {0, ½, 1}; the mean of a
judged 2 × 2), it draws categories whose true share is the pass line (false PASS, nominal ≤ 2.5 %) and the shares in
TRUE_SHARES (coverage of the two-sided 95 % interval, nominal ≥ 95 %). Run: .venv/bin/python benchmarks/intervals.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from esac_kit.scoring import AMENDMENT_001_PASS
from esac_kit.statistics import PASS, exact_bounds, exact_labels

TRUE_SHARES = (0.4, 0.6, 0.8, 0.95)
GI_STRATA = [(15, 5), (15, 5), (15, 5), (10, 5), (15, 5), (15, 4), (5, 5), (10, 2)]  # (points, items), 36 items


def draw(kind: str, mean: float, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Item scores in [0, 1] with expected value `mean`."""
    if kind == "binary":
        return (rng.random(shape) < mean).astype(float)
    if kind == "beta(k=4)":
        return rng.beta(4 * mean, 4 * (1 - mean), shape)
    if kind == "beta(k=1)":  # U-shaped: most mass near 0 and 1
        return rng.beta(mean, 1 - mean, shape)
    if kind == "{0,.5,1}":
        return (rng.random(shape + (2,)) < mean).mean(axis=-1)
    if kind == "judged 2x2":  # the item's own rate varies, four 0/1 observations of it
        rate = rng.beta(3 * mean, 3 * (1 - mean), shape)
        return (rng.random(shape + (4,)) < rate[..., None]).mean(axis=-1)
    raise ValueError(kind)


KINDS = ("binary", "beta(k=4)", "beta(k=1)", "{0,.5,1}", "judged 2x2")


def category(kind: str, n: int, mean: float, sims: int, rng) -> tuple[float, float]:
    """False-PASS share (at the line) or PASS share, and coverage, for `sims` categories of n equal-weight items."""
    share = draw(kind, mean, (sims, n), rng).mean(axis=1)
    low, high = exact_bounds(share, n)
    passed = (exact_labels(low, high, AMENDMENT_001_PASS.fraction) == PASS).mean()
    return float(passed), float(((low <= mean) & (mean <= high)).mean())


def total(kind: str, mean: float, sims: int, rng) -> tuple[float, float]:
    """The same for the GI total: 36 items in the category strata, each item worth its category's points / items."""
    weight = np.concatenate([np.full(n, p / n) for p, n in GI_STRATA])
    share = draw(kind, mean, (sims, len(weight)), rng) @ weight / weight.sum()
    low, high = exact_bounds(share, weight.sum() ** 2 / (weight ** 2).sum())
    passed = (exact_labels(low, high, AMENDMENT_001_PASS.fraction) == PASS).mean()
    return float(passed), float(((low <= mean) & (mean <= high)).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=40_000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    line = AMENDMENT_001_PASS.fraction
    started = time.perf_counter()
    print(f"exact intervals, {args.sims} simulated categories per cell; pass line {line:.0%}; "
          f"false PASS at a true share equal to the line (nominal ≤ 2.5 %), coverage of the 95 % interval")
    print(f"| n | items | false PASS at {line:.0%} | " + " | ".join(f"cover {m:g}" for m in TRUE_SHARES)
          + " | PASS at 0.95 |")
    print("|---|---|---|" + "---|" * len(TRUE_SHARES) + "---|")
    worst_pass, worst_cover = 0.0, 1.0
    for n in (2, 3, 4, 5, "GI total"):
        for kind in KINDS:
            run = (lambda m: total(kind, m, args.sims, rng)) if n == "GI total" else \
                (lambda m: category(kind, n, m, args.sims, rng))
            false_pass, _ = run(line)
            covers = [run(m)[1] for m in TRUE_SHARES]
            power, _ = run(0.95)
            worst_pass, worst_cover = max(worst_pass, false_pass), min(worst_cover, *covers)
            print(f"| {n} | {kind} | {false_pass:.2%} | " + " | ".join(f"{c:.1%}" for c in covers)
                  + f" | {power:.1%} |")
    print(f"worst false PASS {worst_pass:.2%} (≤ 2.5 %: {'yes' if worst_pass <= 0.025 else 'NO'}); "
          f"worst coverage {worst_cover:.1%}; {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
