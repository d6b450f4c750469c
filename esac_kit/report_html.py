"""The publishable report of a run as one self-contained HTML file (SPEC §6): every table complete, the charts as
inline SVG, styles inline; it fetches nothing and shows no code, so it reads the same offline."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from esac_kit import html, report_tables
from esac_kit.cost import cost_summary
from esac_kit.providers import model_title
from esac_kit.records import Observation, Report, write_atomic

REPORT_HTML_FILE = "report.html"


def report_page(report: Report, frame: pd.DataFrame) -> str:
    """The whole report of a run (its report and its observation table) as one HTML document."""
    title = f"{report.suite.upper()} {report.version} · {model_title(report.model.name)}"  # the full name follows
    sections = [headline_section(report), category_section(report), chart_section(report), item_section(report),
                efficiency_section(report), failure_section(report, frame), variance_section(report, frame),
                provenance_section(report)]
    return html.page(title, sections, subtitle=f"Run {report.run_id} · rendered {report.rendered_at}")


def write_report_html(folder: Path, report: Report, observations: list[Observation]) -> Path:
    """Write <run>/report.html and return its path."""
    from esac_kit.journal import observations_frame

    target = folder / REPORT_HTML_FILE
    write_atomic(target, report_page(report, observations_frame(observations)).encode())
    return target


def headline_section(report: Report) -> str:
    """Total (capability and modifier for AG), the verdict with its reasons, the official status and the notes."""
    ci = report.total_ci_exact
    total = "incomplete" if report.total is None else f"{report.total:.2f} / {report.max_total:g}"
    cards = [_card("total", total, f"CI95 exact {ci[0]:.2f}–{ci[1]:.2f}" if ci else "no interval")]
    if report.modifier is not None:
        cards.append(_card("capability", f"{report.capability:.2f} / {report.max_capability:g}",
                           f"the pass line is {report.pass_rule.percent} of these points"))
        cards.append(_card("efficiency modifier", f"{report.modifier:.2f} / {report.max_modifier:g}",
                           "no threshold (amendment 001 §1)"))
    verdict = "PASS" if report.passed else "FAIL"
    cards.append(_card("verdict", verdict, report.total_label or "", css_class="pass" if report.passed else "fail"))
    judge = report.judge.name if report.judge else "no judge"
    lines = [f"Suite {report.suite.upper()} {report.version} · model {report.model.name} · judge {judge} · "
             f"pool {report.pool.label}"]
    reasons = report.reasons or [f"every category and the {'capability ' if report.modifier is not None else ''}"
                                 f"total reach {report.pass_rule.percent} of their points"]
    status = "Official result." if report.official else "Unofficial result: see the notes."
    body = (f"<p>{html.escape(lines[0])}</p><div class=\"cards\">{''.join(cards)}</div>"
            f"<h3>Why {verdict.lower()}</h3><ul class=\"reasons\">"
            + "".join(f"<li>{html.escape(reason)}</li>" for reason in reasons) + "</ul>"
            + f"<p class=\"{'pass' if report.official else 'fail'}\">{html.escape(status)}</p>"
            + "".join(f'<div class="note">{html.escape(note)}</div>' for note in report.notes))
    return html.section("Headline", body)


def category_section(report: Report) -> str:
    """Every category and the total with its points, the pass line, the verdict and the intervals; the notes on
    missing intervals listed under the table, once each."""
    from esac_kit.statistics import LEGEND

    table = report_tables.category_table(report)
    shown = pd.DataFrame({
        "category": table["category"], "points": table["points"], "max": table["max"],
        f"pass line ({report.pass_rule.percent})": table["pass_line"], "passed": table["passed"],
        "CI95 exact": _ranges(table["ci_exact_low"], table["ci_exact_high"]), "SE fixed": table["se_fixed"],
        "bootstrap 95 %": _ranges(table["ci_boot_low"], table["ci_boot_high"]), "P(≥ line)": table["p_pass"],
        "label": table["label"]})
    notes: dict[str, list[str]] = {}
    for category, note in zip(table["category"], table["note"]):
        if isinstance(note, str) and note:
            notes.setdefault(note, []).append(category)
    lead = (f"<p>The pass line is {report.pass_rule.percent} of each category's points and of the "
            f"{'capability ' if report.modifier is not None else ''}total (amendment 001 §10); <i>passed</i> is the "
            f"observed verdict, <i>CI95 exact</i> the exact 95 % interval, <i>SE fixed</i> the spread over replicates "
            f"with the items fixed and <i>bootstrap</i> the item bootstrap (secondary).</p>")
    listed = "".join(f"<li>{html.escape(', '.join(names))}: {html.escape(note)}</li>" for note, names in notes.items())
    return html.section("Categories", lead + html.table(_cells(shown), 2, "categories")
                        + (f"<ul class=\"notes\">{listed}</ul>" if listed else "")
                        + f"<p>{html.escape(LEGEND)}</p>")


def chart_section(report: Report) -> str:
    """The category chart (shares, intervals and the pass line) and the item chart, as inline SVG."""
    from esac_kit.charts import category_chart, item_chart

    return html.section("Charts", html.svg(category_chart(report)) + html.svg(item_chart(report)))


def item_section(report: Report) -> str:
    """Every scored item, one row each."""
    table = report_tables.item_table(report)
    return html.section("Items", f"<p>{len(table)} items scored; a score is the mean of the item's observations "
                                 f"(amendment 001 §5).</p>" + html.table(_cells(table), 3, "items"))


def efficiency_section(report: Report) -> str:
    """The AG efficiency breakdown per task, or a line saying the suite has none."""
    frame = report_tables.efficiency_frame(report)
    if frame is None:
        return html.section("Efficiency", f"<p>Not an AG run: {html.escape(report.suite.upper())} has no efficiency "
                                          f"modifier.</p>")
    lead = (f"<p>Modifier <b>{report.modifier:.2f} / {report.max_modifier:g}</b> = 3.5 × mean(a) + 1.5 × mean(t) "
            f"over the tasks, where a = (action level − 1)/5 and t = (token level − 1)/5 for a successful task "
            f"and 0 for a failed one (amendment 001 §1). Effective actions = tool calls + the task's penalty × "
            f"(redundant + rework + invalid calls).</p>")
    counts = frame.drop(columns=["redundant_calls", "rework_calls", "invalid_calls"]).rename(columns={
        "item_id": "task", "tool_calls": "calls", "effective_actions": "effective", "reference_actions": "reference",
        "action_level": "action level", "token_level": "token level"})
    costly = "".join(
        f"<li><b>{html.escape(task.item_id)}</b>: "
        + "; ".join(f"{kind} {html.escape(', '.join(calls))}" for kind, calls in
                    (("redundant", task.redundant_calls), ("rework", task.rework_calls),
                     ("invalid", task.invalid_calls)) if calls) + "</li>"
        for task in report.efficiency if task.redundant_calls or task.rework_calls or task.invalid_calls)
    listed = (f"<h3>Costly calls</h3><ul class=\"calls\">{costly}</ul>" if costly
              else "<p>No redundant, rework or invalid calls.</p>")
    return html.section("Efficiency", lead + html.table(_cells(counts), 2, "efficiency") + listed)


def failure_section(report: Report, frame: pd.DataFrame) -> str:
    """Model outcomes, infrastructure retries, tokens and cost, and every observation that was not a plain answer."""
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.model_outcomes.items())) or "none"
    retries = ", ".join(f"{k} {v}" for k, v in sorted(report.retries.items())) or "none"
    tokens = ", ".join(f"{k} {v:,}" for k, v in report.tokens.items())
    lead = (f"<p>Model outcomes (one per answer): {html.escape(outcomes)}. Retries of infrastructure failures: "
            f"{html.escape(retries)}. Tokens: {html.escape(tokens)}. "
            f"{html.escape(cost_summary(report.cost).replace('cost:', 'Cost:', 1))}.</p>")
    failures = report_tables.failures_frame(frame) if len(frame) else frame
    body = ("<p>Every observation was a plain answer on its first attempt.</p>" if failures.empty
            else html.table(_cells(failures), 3, "failures"))
    return html.section("Failures and retries", lead + body)


def variance_section(report: Report, frame: pd.DataFrame) -> str:
    """Replicate spreads of the judge-graded items, the nested variance components and the judge's reliability."""
    from esac_kit import variance

    stability = variance.item_stability(frame) if len(frame) else pd.DataFrame()
    if stability.empty:
        return html.section("Variance", "<p>No judge-graded items in this run: every item is observed once, so "
                                        "there are no replicate spreads or variance components.</p>")
    flagged = stability[stability["flag"] != "stable"]
    flagged_text = ", ".join(f"{r.item_id} ({r.flag})" for r in flagged.itertuples()) or "none"
    spreads = stability[["item_id", "category", "n_obs", "n_answers", "mean", "answer_spread", "judge_spread",
                         "flag"]]
    row = variance.variance_table({report.run_id: frame}).drop(columns=["run"]).astype(object).iloc[0]
    components = pd.DataFrame({"measure": row.index, "value": row.to_numpy()})  # one row a measure: no wide table
    lead = (f"<p>Per judge-graded item: the mean of its observations, the spread between model replicates "
            f"(answers) and within an answer between judge replicates, on the 0–1 scale. Unstable items (spread "
            f"&gt; 0.1): {html.escape(flagged_text)}.</p>")
    return html.section("Variance", lead + html.table(_cells(spreads), 3, "spreads")
                        + "<p>Nested variance components (items › answers › judge calls, method of moments) and "
                          "the judge's reliability: ICC(1) with its 95 % interval, ICC(1,k), Krippendorff's "
                          "alpha.</p>"
                        + html.table(_cells(components), 4, "components"))


def provenance_section(report: Report) -> str:
    """Versions, fingerprints, pool or commitment, model and judge with their parameters, times and cost."""
    return html.section("Provenance", html.table(_cells(report_tables.provenance_frame(report)), 2, "provenance"))


def _card(label: str, value: str, caption: str, css_class: str = "") -> str:
    """One headline figure."""
    return (f'<div class="card"><span>{html.escape(label)}</span><b class="{css_class}">{html.escape(value)}</b>'
            f"<small>{html.escape(caption)}</small></div>")


def _ranges(low: pd.Series, high: pd.Series) -> list[str | None]:
    """Interval bounds as 'low–high' text, None where there is no interval."""
    return [None if pd.isna(a) or pd.isna(b) else f"{a:.2f}–{b:.2f}" for a, b in zip(low, high)]


def _cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame whose missing values (NaN, pd.NA) are None, so that every table shows them as a dash."""
    return frame.astype(object).where(frame.notna(), None)
