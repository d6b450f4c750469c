"""Aggregation: items to categories to suite, and the pass rule (amendment 001 §2, §10)."""

from __future__ import annotations

from dataclasses import dataclass

from esac_kit.schemas import SuiteManifest


@dataclass(frozen=True)
class PassRule:
    """Amendment 001 §10: every capability category and the capability total reach `fraction` of their points."""

    fraction: float
    tolerance: float = 1e-9  # keeps 6/10 from failing on 5.999999 after float weighting

    def line(self, maximum: float) -> float:
        """The points a maximum must reach to pass."""
        return self.fraction * maximum

    def clears(self, earned: float, maximum: float) -> bool:
        """True when earned points reach the line."""
        return earned + self.tolerance >= self.line(maximum)

    @property
    def percent(self) -> str:
        """The threshold as reports print it, e.g. '60%'."""
        return f"{self.fraction:.0%}"


AMENDMENT_001_PASS = PassRule(0.6)  # amendment 001 §10, and what reports made before the rule was recorded used


def pass_rule(manifest: SuiteManifest) -> PassRule:
    """The suite's pass rule, from its manifest."""
    return PassRule(manifest.pass_fraction)


def item_score(observation_scores: list[float]) -> float:
    """An item's score: the mean of its observations, the 2 × 2 of a judged item included (amendment 001 §5)."""
    return sum(observation_scores) / len(observation_scores)



@dataclass(frozen=True)
class CategoryResult:
    """A category's points earned out of its maximum, and whether it clears the threshold."""

    id: str
    points: float
    max_points: float
    passed: bool


@dataclass(frozen=True)
class SuiteResult:
    """A suite's categories, total and pass verdict with the reasons for it (amendment 001 §10)."""

    categories: list[CategoryResult]
    total: float
    max_total: float
    passed: bool
    reasons: list[str]


def category_points(points: float, scores_and_weights: list[tuple[float, float]]) -> float:
    """Category score = points × Σ w·s / Σ w, so half-weight items do not shrink the category (amendment 001 §2)."""
    weight = sum(w for _, w in scores_and_weights)
    return points * sum(s * w for s, w in scores_and_weights) / weight


def aggregate(manifest: SuiteManifest, item_scores: dict[str, float], item_weights: dict[str, float],
              item_categories: dict[str, str]) -> SuiteResult:
    """Roll item scores up to categories and the capability total, and apply the pass rule; the AG modifier is not
    a category and is left out (amendment 001 §1, §10)."""
    rule, maximum = pass_rule(manifest), manifest.capability_points
    categories, reasons = [], []
    for category in manifest.categories:
        members = [(item_scores[i], item_weights[i]) for i, c in item_categories.items() if c == category.id]
        if not members:  # a partial run cannot pass: a category without scores is not a category at 0
            reasons.append(f"{category.id} has no scored items")
            continue
        earned = category_points(category.points, members)
        categories.append(CategoryResult(category.id, earned, category.points, rule.clears(earned, category.points)))
    total = sum(c.points for c in categories)
    reasons += [f"{c.id} {c.points:.2f}/{c.max_points:g} is below {rule.percent}" for c in categories if not c.passed]
    total_ok = rule.clears(total, maximum)
    if not total_ok:
        reasons.append(f"total {total:.2f}/{maximum:g} is below {rule.percent}")
    return SuiteResult(categories, total, maximum, total_ok and not reasons, reasons)
