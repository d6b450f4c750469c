"""The variance explorer's tables and charts: replicate spreads, nested variance components, judge reliability
and the D-study of a run's observations (SPEC §7), as DataFrames and altair charts."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping

import altair as alt
import pandas as pd


def item_stability(frame: pd.DataFrame, judge_threshold: float = 0.1,
                   answer_threshold: float = 0.1) -> pd.DataFrame:
    """statistics.item_spread of one run with flags: unstable across judge replicates (judge spread above its
    threshold) or across model replicates (answer spread above its threshold); spreads are on the 0–1 scale."""
    from esac_kit.statistics import item_spread

    spread = item_spread(frame)
    spread.insert(0, "run_id", frame["run_id"].iloc[0] if len(frame) else "")
    spread["judge_unstable"] = spread["judge_spread"].gt(judge_threshold)
    spread["model_unstable"] = spread["answer_spread"].gt(answer_threshold)
    spread["flag"] = [" + ".join(name for name, on in (("judge", j), ("model", m)) if on) or "stable"
                      for j, m in zip(spread["judge_unstable"], spread["model_unstable"])]
    return spread


def no_variance_reason(frame: pd.DataFrame) -> str | None:
    """Why a run has no judge variance to show (no judge-graded observation, or none in a complete design of
    answers × judge calls), or None when it has some."""
    from esac_kit.statistics import variance_components

    judged = frame[frame["judge_replicate"].notna()] if len(frame) else frame
    if judged.empty:
        suite = str(frame["suite"].iloc[0]).upper() if len(frame) else "this run"
        return (f"this {suite} run has no judge-graded observation (AG scores every task in code; a partial GI run may "
                f"leave the judged items out): no variance across answers or judge calls to estimate")
    components = variance_components(frame)
    if components.n_items == 0 or components.n_answers < 2 or components.n_judgements < 2:
        return (f"{judged['item_id'].nunique()} judge-graded item(s), but none answered at least twice and judged at "
                f"least twice each (an incomplete run): no variance components")
    return None


def observation_grid(frame: pd.DataFrame, item_id: str) -> pd.DataFrame:
    """An item's observations (model replicate × judge replicate) with responses, scores and rationales."""
    rows = frame[frame["item_id"] == item_id]
    columns = ["run_id", "item_id", "model_replicate", "judge_replicate", "outcome", "score", "response",
               "judge_rationale", "judge_levels", "attempts"]
    return rows[columns].sort_values(["model_replicate", "judge_replicate"]).reset_index(drop=True)


def observation_html(grid: pd.DataFrame) -> str:
    """The observations of one item side by side: one column per answer (model replicate), its response, and
    under it each judge replicate's score, levels and rationale. Text is escaped."""
    columns = []
    for replicate, rows in grid.groupby("model_replicate", sort=True):
        first = rows.iloc[0]
        verdicts = "".join(
            f"<div style='border-top:1px solid #ddd;padding:4px 0'><b>judge {_int_or_dash(r.judge_replicate)}</b>"
            f" · score {r.score:.3f}<br><code>{html.escape(str(r.judge_levels))}</code><br>"
            f"{html.escape(str(r.judge_rationale or ''))}</div>" for r in rows.itertuples())
        columns.append(
            f"<div style='flex:1;min-width:0'><h4>answer {replicate} · {html.escape(str(first.outcome))}</h4>"
            f"<div style='white-space:pre-wrap;max-height:22em;overflow:auto;background:#f6f6f6;padding:6px;"
            f"font-size:0.85em'>{html.escape(str(first.response))}</div>{verdicts}</div>")
    return "<div style='display:flex;gap:12px'>" + "".join(columns) + "</div>"


def _int_or_dash(value) -> str:
    return "-" if value is None or pd.isna(value) else str(int(value))


Frames = pd.DataFrame | Mapping[str, pd.DataFrame]


def _by_run(frames: Frames) -> Mapping[str, pd.DataFrame]:
    """Observation frames by label: a mapping as given, or one run's frame labelled with its run id."""
    if isinstance(frames, pd.DataFrame):
        return {str(frames["run_id"].iloc[0]) if len(frames) else "run": frames}
    return frames


def variance_table(frames: Frames) -> pd.DataFrame:
    """Per run (one run's observation frame, or a mapping of label to frame): the nested variance components
    (items > answers > judge calls), their shares, and the judge's reliability (ICC(1) with its 95 % interval,
    ICC(1,k), Krippendorff's alpha)."""
    from esac_kit.statistics import judge_reliability, variance_components

    rows = []
    for label, frame in _by_run(frames).items():
        vc, rel = variance_components(frame), judge_reliability(frame)
        total = vc.var_item + vc.var_answer + vc.var_judge
        share = (lambda v: v / total) if total and not math.isnan(total) else (lambda v: float("nan"))
        rows.append({"run": label, "items": vc.n_items, "answers": vc.n_answers, "judgements": vc.n_judgements,
                     "excluded": vc.n_items_excluded, "var_item": vc.var_item, "var_answer": vc.var_answer,
                     "var_judge": vc.var_judge, "share_item": share(vc.var_item),
                     "share_answer": share(vc.var_answer), "share_judge": share(vc.var_judge),
                     "icc1": rel.icc1, "icc1_low": rel.icc1_low, "icc1_high": rel.icc1_high, "icc1k": rel.icc1k,
                     "alpha": rel.alpha})
    return pd.DataFrame(rows)


def d_study_frame(frames: Frames) -> pd.DataFrame:
    """statistics.d_study of each run (standard error of an item mean per design of answers × judge calls)."""
    from esac_kit.statistics import d_study, variance_components

    parts = []
    for label, frame in _by_run(frames).items():
        vc = variance_components(frame)
        if vc.n_items == 0:
            continue
        part = d_study(vc)
        part.insert(0, "run", label)
        parts.append(part)
    columns = ["run", "answers", "judgements", "observations", "var_error", "se_item", "g_coefficient"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def d_study_chart(study: Frames) -> alt.Chart:
    """SE of an item mean against answers per item, one line per number of judge calls (the current design
    is 2 × 2, amendment 001 §5); one panel per run. Takes a d_study_frame, or the observation frames to make it."""
    if not (isinstance(study, pd.DataFrame) and "se_item" in study.columns):
        study = d_study_frame(study)
    data = study.dropna(subset=["se_item"])
    chart = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("answers:O", title="answers (model replicates) per item"),
        y=alt.Y("se_item:Q", title="SE of an item mean"),
        color=alt.Color("judgements:O", title="judge calls per answer"),
        tooltip=["run:N", "answers:O", "judgements:O", alt.Tooltip("se_item:Q", format=".4f"),
                 alt.Tooltip("g_coefficient:Q", format=".3f")])
    if data["run"].nunique() > 1:
        return chart.properties(width=220, height=180).facet(column=alt.Column("run:N", title=None))
    return chart.properties(title="D-study", width=360, height=220)


def spread_chart(stability: pd.DataFrame) -> alt.Chart:
    """Each judge-graded item's answer spread against its judge spread, coloured by flag: select points to drill."""
    data = stability.dropna(subset=["answer_spread", "judge_spread"])[
        ["run_id", "item_id", "category", "mean", "answer_spread", "judge_spread", "flag"]]
    return alt.Chart(data).mark_circle(size=90, opacity=0.8).encode(
        x=alt.X("answer_spread:Q", title="spread across model replicates"),
        y=alt.Y("judge_spread:Q", title="spread across judge replicates"),
        color=alt.Color("flag:N", scale=alt.Scale(domain=["stable", "judge", "model", "judge + model"],
                                                  range=["#4c78a8", "#f58518", "#e45756", "#b279a2"])),
        shape="run_id:N",
        tooltip=["run_id:N", "item_id:N", "category:N", alt.Tooltip("mean:Q", format=".3f"),
                 alt.Tooltip("answer_spread:Q", format=".3f"), alt.Tooltip("judge_spread:Q", format=".3f")],
    ).properties(title="judge-graded items: replicate spreads", width=360, height=260)
