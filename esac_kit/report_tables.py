"""The report's sections as DataFrames: items, categories with their pass lines and intervals, the AG efficiency
breakdown, failures and retries, and provenance; the same calls serve marimo and JupyterLab."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from esac_kit.records import Report, TaskEfficiency


def item_table(report: Report) -> pd.DataFrame:
    """One row per scored item: category, score, observations, outcomes and replicate spreads."""
    return pd.DataFrame([{"item": i.item_id, "category": i.category, "score": i.score, "weight": i.weight,
                          "observations": i.observations,
                          "outcomes": ", ".join(f"{k} {v}" for k, v in sorted(i.outcomes.items())),
                          "answer_spread": i.answer_spread, "judge_spread": i.judge_spread}
                         for i in report.items],
                        columns=["item", "category", "score", "weight", "observations", "outcomes",
                                 "answer_spread", "judge_spread"])




def category_table(report: Report) -> pd.DataFrame:
    """Each category and the total: points, the pass line (60 % unless the manifest says otherwise), pass/fail, t and bootstrap 95 % intervals,
    P(score ≥ 60 %) and the PASS / FAIL / INCONCLUSIVE label (amendment 001 §10)."""
    rule = report.pass_rule

    def pair(bounds):
        return (None, None) if bounds is None else bounds

    rows = []
    for c in report.categories:
        (t_low, t_high), (b_low, b_high) = pair(c.ci_t), pair(c.ci_bootstrap)
        rows.append({"category": c.id, "points": c.points, "max": c.max_points, "pass_line": rule.line(c.max_points),
                     "passed": c.passed, "ci_t_low": t_low, "ci_t_high": t_high, "ci_boot_low": b_low,
                     "ci_boot_high": b_high, "p_pass": c.p_pass, "label": c.label})
    (t_low, t_high), (b_low, b_high) = pair(report.total_ci_t), pair(report.total_ci_bootstrap)
    if report.modifier is not None:  # AG: the pass line is on the capability points; the modifier has none
        shift = report.modifier
        rows.append({"category": "capability", "points": report.capability, "max": report.max_capability,
                     "pass_line": rule.line(report.max_capability), "passed": report.passed,
                     "ci_t_low": None if t_low is None else t_low - shift,
                     "ci_t_high": None if t_high is None else t_high - shift,
                     "ci_boot_low": None if b_low is None else b_low - shift,
                     "ci_boot_high": None if b_high is None else b_high - shift, "p_pass": None, "label": None})
        rows.append({"category": "efficiency modifier", "points": report.modifier, "max": report.max_modifier,
                     "pass_line": None, "passed": None, "ci_t_low": None, "ci_t_high": None, "ci_boot_low": None,
                     "ci_boot_high": None, "p_pass": None, "label": None})
    rows.append({"category": "total", "points": report.total, "max": report.max_total,
                 "pass_line": None if report.modifier is not None else rule.line(report.max_total),
                 "passed": report.passed, "ci_t_low": t_low,
                 "ci_t_high": t_high, "ci_boot_low": b_low, "ci_boot_high": b_high, "p_pass": None, "label": None})
    return pd.DataFrame(rows)


def efficiency_frame(report: Report) -> pd.DataFrame | None:
    """The efficiency breakdown of an AG run, one row per task with the costly calls listed; None for GI."""
    if report.efficiency is None:
        return None
    rows = []
    for task in report.efficiency:
        row = task.model_dump()
        for column in ("redundant_calls", "rework_calls", "invalid_calls"):
            row[column] = "; ".join(row[column])
        rows.append(row)
    return pd.DataFrame(rows, columns=list(TaskEfficiency.model_fields))


def failures_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Observations that were not a plain answer, or that needed retries: outcome, attempts and retry kinds."""
    mask = frame["outcome"].ne("answered") | frame["attempts"].gt(1) | frame["retries"].ne("{}")
    columns = ["item_id", "model_replicate", "judge_replicate", "outcome", "score", "attempts", "retries"]
    return frame.loc[mask, columns].reset_index(drop=True)


def provenance_frame(report: Report) -> pd.DataFrame:
    """What a reader needs to reproduce or audit the run: versions, fingerprints, model, judge and the pool
    (for a held-out run, only the salted commitment of its seed)."""
    judge = report.judge
    rows = [("suite", f"{report.suite.upper()} {report.version}"), ("run", report.run_id),
            ("kit version", report.kit_version),
            ("content fingerprint", report.fingerprints.get("content", "")),
            ("scoring fingerprint", report.fingerprints.get("scoring", "")),
            ("model", report.model.name), ("model parameters", _params(report.model.parameters)),
            ("judge", judge.name if judge else "-"), ("judge parameters", _params(judge.parameters) if judge else "-"),
            ("pool (seed or commitment)", report.pool.label), ("official", "yes" if report.official else "no"),
            ("created", report.created_at), ("rendered", report.rendered_at)]
    return pd.DataFrame(rows, columns=["field", "value"])


def _params(parameters: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in parameters.items())
