"""Altair charts of a report; they render in marimo, JupyterLab and as PNG/SVG artefacts."""

from __future__ import annotations

import altair as alt
import pandas as pd

from esac_kit.providers import model_title
from esac_kit.records import Report


def category_frame(report: Report) -> pd.DataFrame:
    """One row per category: points, maximum, share, the pass line and the exact interval when there is one."""
    rows = []
    for c in report.categories:
        low, high = c.ci_exact if c.ci_exact else (None, None)
        rows.append({"category": c.id, "points": c.points, "max_points": c.max_points,
                     "share": c.points / c.max_points, "threshold": report.pass_fraction, "passed": c.passed,
                     "ci_low": None if low is None else low / c.max_points,
                     "ci_high": None if high is None else high / c.max_points})
    return pd.DataFrame(rows)


def category_chart(report: Report) -> alt.LayerChart:
    """Share of each category's points with its exact 95 % interval and the pass line (amendment 001 §10)."""
    frame = category_frame(report)
    base = alt.Chart(frame).encode(y=alt.Y("category:N", sort=None, title=None))
    bars = base.mark_bar().encode(
        x=alt.X("share:Q", scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%"), title="share of points"),
        color=alt.Color("passed:N", scale=alt.Scale(domain=[True, False], range=["#4c78a8", "#e45756"]),
                        legend=alt.Legend(title=f"≥ {report.pass_rule.percent}")),
        tooltip=["category", alt.Tooltip("points:Q", format=".2f"), "max_points", alt.Tooltip("share:Q", format=".1%")])
    layers = [bars]
    if frame["ci_low"].notna().any():
        layers.append(base.mark_rule(color="black").encode(x="ci_low:Q", x2="ci_high:Q"))
    line = alt.Chart(pd.DataFrame({"threshold": [report.pass_fraction]})).mark_rule(strokeDash=[4, 3], color="gray").encode(
        x="threshold:Q")
    total = "incomplete" if report.total is None else f"{report.total:.1f}/{report.max_total:g}"
    title = f"{report.suite.upper()} {report.version} · {model_title(report.model.name)} · {total}"
    return alt.layer(*layers, line).properties(title=title, width=420, height=22 * len(frame))


def item_chart(report: Report) -> alt.Chart:
    """Each item's score, grouped by category."""
    frame = pd.DataFrame([{"item": i.item_id, "category": i.category, "score": i.score,
                           "observations": i.observations} for i in report.items])
    return alt.Chart(frame).mark_circle(size=70).encode(
        x=alt.X("score:Q", scale=alt.Scale(domain=[0, 1])), y=alt.Y("item:N", sort=None, title=None),
        color="category:N", tooltip=["item", "category", alt.Tooltip("score:Q", format=".3f"), "observations"],
    ).properties(title="item scores", width=420, height=12 * len(frame))
