"""The run report: scores from observations, the pass verdict with reasons, failures, retries and tokens."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timezone

from pydantic import BaseModel

from esac_kit import __version__
from esac_kit.journal import Observation
from esac_kit.scoring import aggregate
from esac_kit.suite import Suite


class ItemScore(BaseModel):
    """One item's score: the mean of its observations."""

    item_id: str
    category: str
    weight: float
    score: float
    observations: int
    outcomes: dict[str, int]


class CategoryScore(BaseModel):
    """One category's points and whether it clears 60 % (amendment 001 §10)."""

    id: str
    points: float
    max_points: float
    passed: bool


class Report(BaseModel):
    """What a finished run says: scores, pass/fail with reasons, failures by kind, retries by kind, tokens."""

    run_id: str
    suite: str
    version: str
    pool: str
    model: str
    judge: str | None
    official: bool
    notes: list[str]
    kit_version: str
    created_at: str
    rendered_at: str
    total: float
    max_total: float
    passed: bool
    reasons: list[str]
    categories: list[CategoryScore]
    items: list[ItemScore]
    model_outcomes: dict[str, int]
    retries: dict[str, int]
    tokens: dict[str, int]

    def scores(self) -> dict:
        """The part of a report that must not depend on how the run was interrupted or retried."""
        return {"total": self.total, "passed": self.passed, "reasons": self.reasons,
                "categories": [c.model_dump() for c in self.categories],
                "items": [(i.item_id, i.score, i.observations) for i in self.items]}


def build_report(suite: Suite, config, observations: list[Observation]) -> Report:
    """Aggregate a complete run's observations into its report."""
    by_item: dict[str, list[Observation]] = defaultdict(list)
    for observation in sorted(observations, key=lambda o: (o.item_id, o.model_replicate, o.judge_replicate or 0)):
        by_item[observation.item_id].append(observation)
    items, scores, weights, categories = [], {}, {}, {}
    for spec in suite.items:
        rows = by_item.get(spec.id, [])
        if not rows:
            continue
        score = sum(o.score for o in rows) / len(rows)
        answers = {o.model_replicate: o.outcome for o in rows}
        items.append(ItemScore(item_id=spec.id, category=spec.category, weight=spec.weight, score=score,
                               observations=len(rows), outcomes=dict(Counter(answers.values()))))
        scores[spec.id], weights[spec.id], categories[spec.id] = score, spec.weight, spec.category
    result = aggregate(suite.manifest, scores, weights, categories)
    answers = {(o.item_id, o.model_replicate): o for o in observations}
    retries: Counter = Counter()
    for observation in observations:
        retries.update(observation.retries)
    tokens = {"model_in": sum(o.tokens_in for o in answers.values()),
              "model_out": sum(o.tokens_out for o in answers.values()),
              "judge_in": sum(o.judge_tokens_in for o in observations),
              "judge_out": sum(o.judge_tokens_out for o in observations)}
    return Report(run_id=config.run_id, suite=config.suite, version=config.version, pool=config.pool_label,
                  model=config.model, judge=config.judge, official=not config.notes, notes=config.notes,
                  kit_version=__version__, created_at=config.created_at,
                  rendered_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  total=round(result.total, 6), max_total=result.max_total, passed=result.passed,
                  reasons=result.reasons,
                  categories=[CategoryScore(id=c.id, points=round(c.points, 6), max_points=c.max_points,
                                            passed=c.passed) for c in result.categories],
                  items=items, model_outcomes=dict(Counter(o.outcome for o in answers.values())),
                  retries=dict(retries), tokens=tokens)


def format_report(report: Report) -> str:
    """A terminal summary of a report."""
    lines = [f"{report.suite.upper()} {report.version} | model {report.model} | judge {report.judge or '-'} | "
             f"pool {report.pool}"]
    lines += [f"  NOTE: {note}" for note in report.notes]
    for category in report.categories:
        mark = "ok " if category.passed else "LOW"
        lines.append(f"  {category.id:14} {category.points:6.2f} / {category.max_points:g}  {mark}")
    verdict = "PASS" if report.passed else "FAIL"
    lines.append(f"  {'total':14} {report.total:6.2f} / {report.max_total:g}  {verdict}"
                 + (f" ({'; '.join(report.reasons)})" if report.reasons else ""))
    lines.append(f"  model outcomes: {report.model_outcomes}; retries: {report.retries or 'none'}; "
                 f"tokens: {report.tokens}")
    return "\n".join(lines)
