"""Calibration tables: a stand-in's runs read back per item and seed, with each instance's measured difficulty.

`esac-kit calibration RUN [RUN ...]` prints what specs/calibration.md records (the headroom issue): per item, the
declared drivers and band, per seed the measured difficulty, the stand-in's score and the tokens it used, and
the objective share per category against the targets. Review verdicts of misses are added by the reviewer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from esac_kit.errors import ConfigError
from esac_kit.instances import generate
from esac_kit.kinds import kind_of
from esac_kit.pools import recorded_pool
from esac_kit.records import prompt_sha256
from esac_kit.runs import load_config
from esac_kit.suite import Suite, load_suite
from esac_kit.watch import read_observations

GI_OBJECTIVE_TARGET = 0.45  # the stand-in's share of GI objective points, overall (SPEC §9)
GI_CATEGORY_TARGET = 0.60  # ... and in every objective category
AG_SUCCESS_TARGET = 0.50  # the share of AG task runs that succeed


@dataclass(frozen=True)
class Calibration:
    """A calibration's rows (one per item and seed) and its verdict against the targets."""

    rows: pd.DataFrame
    categories: pd.DataFrame
    overall: float
    meets_targets: bool
    superseded: tuple[str, ...] = ()  # "RUN: ITEM" answered with a prompt the item bank no longer generates


def calibration_rows(folders: list[Path], items_dir: Path | None = None,
                     superseded: list[str] | None = None) -> pd.DataFrame:
    """One row per (item, pool seed): score averaged over model replicates, tokens summed, measured difficulty.
    An item whose prompt the bank no longer generates is an error, or, given a `superseded` list, left out and
    named there (its seed re-measured by a later run)."""
    rows, suites = [], {}
    for folder in folders:
        config = load_config(folder)
        if config.pool.name == "heldout":
            raise ConfigError(f"{folder}: a held-out run cannot be a calibration run (its seed must stay secret)")
        suite: Suite = suites.get(config.suite) or suites.setdefault(config.suite, load_suite(config.suite, items_dir))
        if suite.manifest.version != config.version:
            raise ConfigError(f"{folder}: a run of {config.suite} {config.version}, but the item bank is "
                              f"{suite.manifest.version}")
        pool = recorded_pool(config.pool)
        by_item: dict[str, list] = {}
        for observation in read_observations(folder):
            by_item.setdefault(observation.item_id, []).append(observation)
        for item_id, observations in by_item.items():
            item = suite.item(item_id)
            instance = None if kind_of(item).episodic else generate(suite, item, pool)
            if instance is not None and observations[0].prompt_sha256 != prompt_sha256(instance.prompt):
                if superseded is not None:
                    superseded.append(f"{folder}: {item_id}")
                    continue
                raise ConfigError(f"{folder}: item {item_id} generates another prompt now than the run answered: "
                                  f"the item bank changed since, so its difficulty cannot be re-measured")
            difficulty = instance.difficulty if instance is not None else {}
            judged = [o for o in observations if o.judge_replicate in (None, 0)]  # count a response once
            rows.append({
                "suite": config.suite, "item": item_id, "category": item.category, "seed": pool.seed,
                "objective": not kind_of(item).judged,
                "score": sum(o.score for o in observations) / len(observations),
                "success": all(o.score_detail.get("success", o.score == 1.0) for o in observations),
                "replicates": len(judged),
                "tokens_in": sum(o.tokens_in for o in judged), "tokens_out": sum(o.tokens_out for o in judged),
                "drivers": ", ".join(f"{k}={v}" for k, v in (item.difficulty.drivers.items() if item.difficulty
                                                             else [])),
                "measure": item.difficulty.measure if item.difficulty else "",
                "difficulty": difficulty.get(item.difficulty.measure) if item.difficulty else None,
            })
    if not rows:
        raise ConfigError("no observations in the calibration runs given")
    return pd.DataFrame(rows).sort_values(["suite", "category", "item", "seed"], ignore_index=True)


def calibrate(folders: list[Path], items_dir: Path | None = None, skip_superseded: bool = False) -> Calibration:
    """The calibration of one suite's runs against its targets (GI: objective share; AG: task success)."""
    left_out: list[str] | None = [] if skip_superseded else None
    rows = calibration_rows(folders, items_dir, left_out)
    twice = rows[rows.duplicated(["suite", "item", "seed"])]
    if not twice.empty:
        raise ConfigError(f"item {twice['item'].iloc[0]} at seed {twice['seed'].iloc[0]} is in two of the runs "
                          f"given: give each item and seed once")
    superseded = tuple(left_out or ())
    if rows["suite"].nunique() != 1:
        raise ConfigError("calibrate one suite at a time: the runs given mix GI and AG")
    if rows["suite"].iloc[0] == "ag":
        categories = rows.groupby("category").agg(runs=("success", "size"), share=("success", "mean"))
        overall = float(rows["success"].mean())
        return Calibration(rows, categories.reset_index(), overall, overall <= AG_SUCCESS_TARGET, superseded)
    objective = rows[rows["objective"]]
    if objective.empty:
        raise ConfigError("the GI runs given hold no objective item")
    categories = objective.groupby("category").agg(runs=("score", "size"), share=("score", "mean")).reset_index()
    overall = float(objective["score"].mean())
    meets = overall <= GI_OBJECTIVE_TARGET and bool((categories["share"] <= GI_CATEGORY_TARGET).all())
    return Calibration(rows, categories, overall, meets, superseded)


def format_calibration(calibration: Calibration) -> str:
    """The calibration as markdown: the per-seed table, the per-category shares and the verdict."""
    rows = calibration.rows
    ag = rows["suite"].iloc[0] == "ag"
    lines = ["| item | drivers | seed | measured difficulty | score | tokens in / out |", "|---|---|---|---|---|---|"]
    for row in rows.itertuples():
        measured = "-" if row.difficulty is None or pd.isna(row.difficulty) else f"{row.measure} {row.difficulty:g}"
        score = ("success" if row.success else "fail") + f" ({row.score:.2f})" if ag else f"{row.score:.2f}"
        lines.append(f"| {row.item} | {row.drivers or '-'} | {row.seed} | {measured} | {score} | "
                     f"{row.tokens_in} / {row.tokens_out} |")
    what = "task runs that succeed" if ag else "objective points"
    lines += ["", f"| category | runs | share of {what} |", "|---|---|---|"]
    lines += [f"| {c.category} | {c.runs} | {c.share:.0%} |" for c in calibration.categories.itertuples()]
    target = (f"target ≤ {AG_SUCCESS_TARGET:.0%}" if ag else
              f"targets ≤ {GI_OBJECTIVE_TARGET:.0%} overall, ≤ {GI_CATEGORY_TARGET:.0%} per category")
    verdict = "meets" if calibration.meets_targets else "MISSES"
    lines += ["", f"overall: {calibration.overall:.1%} of {what} ({target}): {verdict} the targets"]
    lines += [f"left out (the bank now generates another prompt): {entry}" for entry in calibration.superseded]
    return "\n".join(lines)
