"""The run report: scores from observations, pass/fail with reasons, failures, retries, tokens and provenance."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from esac_kit import __version__
from esac_kit.cost import cost_summary, load_prices, run_cost
from esac_kit.kinds import kind_of, plan
# The report's models live with every other record in esac_kit.records; ag.kind imports them from here.
from esac_kit.records import CategoryScore, ItemScore, Observation, Party, Report, RunConfig
from esac_kit.scoring import aggregate, item_score
from esac_kit.suite import Suite

if TYPE_CHECKING:
    from esac_kit.fingerprints import Fingerprints


def build_report(suite: Suite, config: RunConfig, observations: list[Observation],
                 unlanded_retries: dict[str, int] | None = None, fingerprints: Fingerprints | None = None) -> Report:
    """Aggregate a run's observations (in journal order) into its report, with the retries of calls that never
    landed; a journal that breaks its hash chain is reported as tampered, and the run as unofficial. The suite's
    fingerprints are computed here unless given (a run computes them before its first request)."""
    from esac_kit.fingerprints import compute
    from esac_kit.journal import JOURNAL_FILE, broken_link, check_slots

    check_slots(observations, {i.id for i in suite.items}, JOURNAL_FILE)
    chained_from = config.journal_chained_from
    broken = None if chained_from is None else broken_link(observations, chained_from)
    chained = observations[chained_from:] if chained_from is not None else []
    ordered = sorted(observations, key=lambda o: (o.item_id, o.model_replicate, o.judge_replicate or 0))
    by_item: dict[str, list[Observation]] = defaultdict(list)
    for observation in ordered:
        by_item[observation.item_id].append(observation)
    items, scores, weights, categories = [], {}, {}, {}
    for spec in suite.items:
        rows = by_item.get(spec.id, [])
        if not rows:
            continue
        score = item_score([o.score for o in rows])
        answers = {o.model_replicate: o.outcome for o in rows}
        items.append(ItemScore(item_id=spec.id, category=spec.category, weight=spec.weight, score=round(score, 9),
                               observations=len(rows), outcomes=dict(Counter(answers.values())),
                               instance_sha256=rows[0].prompt_sha256))
        scores[spec.id], weights[spec.id], categories[spec.id] = score, spec.weight, spec.category
    manifest = suite.manifest
    result = aggregate(manifest, scores, weights, categories)
    planned_items = [i for i in suite.items if not config.items or i.id in config.items]
    planned = len(plan(planned_items))
    notes = list(config.notes)
    if broken is not None:
        notes.append(f"tampered: journal line {broken} does not match its hash chain: the journal was edited after "
                     f"it was written")
    if len(ordered) < planned:
        notes.append(f"incomplete run: {len(ordered)} of {planned} observations; resume it to finish")
    answers = {(o.item_id, o.model_replicate): o for o in ordered}
    retries: Counter = Counter(unlanded_retries or {})
    for observation in ordered:
        retries.update(observation.retries)
    tokens = {"model_in": sum(o.tokens_in for o in answers.values()),
              "model_out": sum(o.tokens_out for o in answers.values()),
              "model_reasoning": sum(o.tokens_reasoning for o in answers.values()),
              "model_cache_read": sum(o.tokens_cache_read for o in answers.values()),
              "model_cache_write": sum(o.tokens_cache_write for o in answers.values()),
              "judge_in": sum(o.judge_tokens_in for o in ordered),
              "judge_out": sum(o.judge_tokens_out for o in ordered)}
    fingerprints = fingerprints or compute(suite)
    pin = suite.manifest.judge
    judge = None if config.judge is None else Party(name=config.judge, parameters={
        "temperature": config.judge_temperature, "max_tokens": config.judge_max_tokens,
        "template_version": pin.template_version if pin else None})
    report = Report(
        run_id=config.run_id, suite=config.suite, version=config.version,
        fingerprints={"content": fingerprints.content, "scoring": fingerprints.scoring}, pool=config.pool,
        model=Party(name=config.model, parameters={
            "temperature": config.temperature if config.sends_temperature else None,
            "max_tokens_cap": config.max_tokens_cap} | config.model_params | ({"batch": 1} if config.batch else {})
                    | ({"max_turns_cap": config.max_turns_cap} if config.max_turns_cap else {})),
        judge=judge, official=not notes, notes=notes, kit_version=__version__, tampered=broken is not None,
        journal_head=chained[-1].chain if chained else None,
        created_at=config.created_at, rendered_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        pass_fraction=manifest.pass_fraction,
        total=round(result.total, 9), max_total=manifest.total_points, passed=result.passed, reasons=result.reasons,
        categories=[CategoryScore(id=c.id, points=round(c.points, 9), max_points=c.max_points, passed=c.passed)
                    for c in result.categories],
        items=items, model_outcomes=dict(Counter(o.outcome for o in answers.values())), retries=dict(retries),
        tokens=tokens, cost=run_cost(config.model, config.judge, ordered, load_prices(), config.batch))
    for kind in dict.fromkeys(kind_of(i) for i in planned_items):
        report = kind.report_extras(report, suite, [i for i in planned_items if kind_of(i) is kind], by_item)
    report = add_uncertainty(report, suite, ordered)
    if len(ordered) < planned:  # no total from a run that has not finished: its missing items are not zeros
        report = report.model_copy(update={"total": None, "capability": None, "modifier": None, "passed": False,
                                           "total_ci_exact": None, "total_ci_bootstrap": None, "total_label": None,
                                           "reasons": [*report.reasons, "incomplete run: no total until it is resumed "
                                                                        "to the end"]})
    return report


def add_uncertainty(report: Report, suite: Suite, observations: list[Observation]) -> Report:
    """Fill replicate spreads and category intervals from esac_kit.statistics (SPEC §7)."""
    from esac_kit.journal import observations_frame
    from esac_kit.statistics import OVERALL, category_intervals, item_spread

    if not observations:
        return report
    frame = observations_frame(observations)
    weights = {i.id: i.weight for i in suite.items}
    present = {i.category for i in report.items}
    points = {c.id: c.points for c in suite.manifest.categories if c.id in present}
    spreads = item_spread(frame).set_index("item_id")
    items = [i.model_copy(update={"answer_spread": _finite(spreads.at[i.item_id, "answer_spread"]),
                                  "judge_spread": _finite(spreads.at[i.item_id, "judge_spread"])})
             if i.item_id in spreads.index else i for i in report.items]
    intervals = category_intervals(frame, weights, points, rule=report.pass_rule).set_index("category")

    def bounds(row, low: str, high: str):
        pair = (_finite(row[low]), _finite(row[high]))
        return None if None in pair else pair

    categories = []
    for category in report.categories:
        row = intervals.loc[category.id]
        categories.append(category.model_copy(update={
            "ci_exact": bounds(row, "low", "high"), "ci_bootstrap": bounds(row, "boot_low", "boot_high"),
            "se_fixed": _finite(row["se_fixed"]), "p_pass": _finite(row["p_pass"]), "label": row["label"],
            "note": row["note"] or None}))
    overall = intervals.loc[OVERALL]
    shift = report.modifier or 0.0  # AG: the interval is the capability's, moved by the modifier taken as fixed

    def total_bounds(low: str, high: str):
        pair = bounds(overall, low, high)
        return None if pair is None else (round(pair[0] + shift, 9), round(pair[1] + shift, 9))

    return report.model_copy(update={"items": items, "categories": categories,
                                     "total_ci_exact": total_bounds("low", "high"),
                                     "total_ci_bootstrap": total_bounds("boot_low", "boot_high"),
                                     "total_label": overall["label"]})


def _finite(value) -> float | None:
    """A float rounded for stable reports, or None for NaN (JSON has no NaN)."""
    value = float(value)
    return None if math.isnan(value) else round(value, 9)


def _uncertainty(ci, label: str | None, se_fixed: float | None = None, note: str | None = None) -> str:
    """The interval (or why there is none) and the label, as a report line ends."""
    if ci:
        text = f"  CI95 exact {ci[0]:.2f}–{ci[1]:.2f}"
    elif note and "no interval" in note:
        text = f"  no interval ({note.split(':')[0]})" + (f", SE fixed {se_fixed:.2f}" if se_fixed is not None else "")
    else:
        text = ""
    return text + (f"  {label}" if label else "")


def format_report(report: Report) -> str:
    """A terminal summary of a report, ending with the legend of its marks and labels."""
    from esac_kit.statistics import LEGEND

    judge = report.judge.name if report.judge else "-"
    lines = [f"{report.suite.upper()} {report.version} | model {report.model.name} | judge {judge} | "
             f"pool {report.pool.label}"]
    lines += [f"  NOTE: {note}" for note in report.notes]
    for category in report.categories:
        mark = "meets line" if category.passed else "below line"
        lines.append(f"  {category.id:14} {category.points:6.2f} / {category.max_points:g}  {mark}"
                     + _uncertainty(category.ci_exact, category.label, category.se_fixed, category.note))
    verdict = "PASS" if report.passed else "FAIL"
    reasons = f" ({'; '.join(report.reasons)})" if report.reasons else ""
    total = _uncertainty(report.total_ci_exact, None)
    if report.total is None:
        lines.append(f"  {'total':14} {'—':>6} / {report.max_total:g}  verdict {verdict}{reasons}")
    elif report.modifier is not None:
        shift = report.modifier  # the capability's interval is the total's without the fixed modifier
        capability = report.total_ci_exact and (report.total_ci_exact[0] - shift, report.total_ci_exact[1] - shift)
        lines.append(f"  {'capability':14} {report.capability:6.2f} / {report.max_capability:g}  verdict {verdict}"
                     f"{_uncertainty(capability, report.total_label)}{reasons}")
        lines.append(f"  {'efficiency':14} {report.modifier:6.2f} / {report.max_modifier:g}  (modifier, no threshold)")
        lines.append(f"  {'total':14} {report.total:6.2f} / {report.max_total:g}{total}")
        for task in report.efficiency or []:
            token = "token unknown (no usage reported)" if task.token_level is None else f"token L{task.token_level}"
            levels = (f"action L{task.action_level} {token}" if task.success
                      else "no efficiency credit (task failed)")
            lines.append(f"    {task.item_id:34} {'ok  ' if task.success else 'FAIL'} calls {task.tool_calls:3d} "
                         f"redundant {task.redundant} rework {task.rework} invalid {task.invalid} "
                         f"tokens {task.tokens:7d}  {levels}")
    else:
        lines.append(f"  {'total':14} {report.total:6.2f} / {report.max_total:g}  verdict {verdict}"
                     f"{_uncertainty(report.total_ci_exact, report.total_label)}{reasons}")
    lines.append(f"  model outcomes: {report.model_outcomes}; retries: {report.retries or 'none'}; "
                 f"tokens: {report.tokens}")
    lines.append(f"  {cost_summary(report.cost)}")
    lines.append(f"  {LEGEND}")
    return "\n".join(lines)
