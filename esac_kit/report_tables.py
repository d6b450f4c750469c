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
    """Each category and the total: points, the pass line (the report's pass rule), observed pass/fail (amendment 001
    §10), the exact 95 % interval, the fixed-items SE, the item bootstrap, P(score ≥ the line), the label and a note."""
    rule = report.pass_rule

    def pair(bounds, shift: float = 0.0):
        return (None, None) if bounds is None else (bounds[0] - shift, bounds[1] - shift)

    def row(name, points, maximum, line, passed, exact=(None, None), boot=(None, None), se_fixed=None, p_pass=None,
            label=None, note=None):
        return {"category": name, "points": points, "max": maximum, "pass_line": line, "passed": passed,
                "ci_exact_low": exact[0], "ci_exact_high": exact[1], "se_fixed": se_fixed, "ci_boot_low": boot[0],
                "ci_boot_high": boot[1], "p_pass": p_pass, "label": label, "note": note}

    rows = [row(c.id, c.points, c.max_points, rule.line(c.max_points), c.passed, pair(c.ci_exact),
                pair(c.ci_bootstrap), c.se_fixed, c.p_pass, c.label, c.note) for c in report.categories]
    exact, boot = pair(report.total_ci_exact), pair(report.total_ci_bootstrap)
    if report.modifier is not None:  # AG: the pass line is on the capability points; the modifier has none
        shift = report.modifier
        rows.append(row("capability", report.capability, report.max_capability, rule.line(report.max_capability),
                        report.passed, pair(report.total_ci_exact, shift), pair(report.total_ci_bootstrap, shift),
                        label=report.total_label))
        rows.append(row("efficiency modifier", report.modifier, report.max_modifier, None, None,
                        note="no threshold; taken as fixed in the total's interval"))
        rows.append(row("total", report.total, report.max_total, None, report.passed, exact, boot))
    else:
        rows.append(row("total", report.total, report.max_total, rule.line(report.max_total), report.passed, exact,
                        boot, label=report.total_label))
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
    """What a reader needs to reproduce or audit the run: versions, fingerprints, model, judge, the pool (for a
    held-out run, only the salted commitment of its seed), the journal head and the cost."""
    from esac_kit.cost import cost_summary

    judge = report.judge
    rows = [("suite", f"{report.suite.upper()} {report.version}"), ("run", report.run_id),
            ("kit version", report.kit_version),
            ("content fingerprint", report.fingerprints.get("content", "")),
            ("scoring fingerprint", report.fingerprints.get("scoring", "")),
            ("model", report.model.name), ("model parameters", _params(report.model.parameters)),
            ("judge", judge.name if judge else "-"), ("judge parameters", _params(judge.parameters) if judge else "-"),
            ("pool (seed or commitment)", report.pool.label), ("official", "yes" if report.official else "no"),
            ("created", report.created_at), ("rendered", report.rendered_at),
            ("journal head", report.journal_head or "-"), ("cost", cost_summary(report.cost).removeprefix("cost: "))]
    return pd.DataFrame(rows, columns=["field", "value"])


def _params(parameters: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in parameters.items())
