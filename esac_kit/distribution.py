"""A suite's distribution as its amendment fixes it, pinned in code per major and asserted at load, before and
besides the manifest's consistency with its item files (amendment 001 §6): a consistent edit of the manifest and
the items is still a hard failure."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from esac_kit.errors import ConfigError


@dataclass(frozen=True)
class Distribution:
    """Categories (id -> points, items) and totals of one major of a suite; the pass rule is not pinned here (a
    changed pass rule is a scoring change, caught by the scoring fingerprint)."""

    source: str  # where the figures are decided, e.g. "amendment 001 §6, specs/esac-gi.md"
    categories: dict[str, tuple[float, int]]
    total_items: int
    efficiency_points: float = 0.0  # ESAC-AG's modifier, outside the categories (amendment 001 §1)

    def __post_init__(self) -> None:
        if sum(items for _, items in self.categories.values()) != self.total_items:
            raise AssertionError(f"the pin from {self.source} does not add up to {self.total_items} items")

    @property
    def capability_points(self) -> float:
        """The categories' points."""
        return sum(points for points, _ in self.categories.values())

    @property
    def total_points(self) -> float:
        """The categories' points plus the efficiency modifier."""
        return self.capability_points + self.efficiency_points


def check_distribution(manifest, path: Path, pins: dict[int, Distribution]) -> None:
    """Raise a one-line ConfigError naming the file and field where the manifest departs from its major's pin."""
    where = f"{manifest.name} {manifest.major}.x"
    pin = pins.get(manifest.major)
    if pin is None:
        raise ConfigError(f"{path}: field 'version': {where} has no pinned distribution (pinned: "
                          f"{', '.join(f'{m}.x' for m in sorted(pins)) or 'none'})")
    seen = set()
    for n, category in enumerate(manifest.categories):
        if category.id in seen:
            raise ConfigError(f"{path}: field 'categories.{n}.id': '{category.id}' appears twice")
        if category.id not in pin.categories:
            raise ConfigError(f"{path}: field 'categories.{n}.id': '{category.id}' is not a category of {where} "
                              f"({pin.source})")
        points, items = pin.categories[category.id]
        if category.points != points:
            raise ConfigError(f"{path}: field 'categories.{n}.points': {category.id} has {category.points:g} points, "
                              f"but {where} pins {points:g} ({pin.source})")
        if category.items != items:
            raise ConfigError(f"{path}: field 'categories.{n}.items': {category.id} has {category.items} items, "
                              f"but {where} pins {items} ({pin.source})")
        seen.add(category.id)
    missing = [c for c in pin.categories if c not in seen]
    if missing:
        raise ConfigError(f"{path}: field 'categories': {where} pins the categories {', '.join(missing)}, missing "
                          f"here ({pin.source})")
    for field, value, pinned in (("total_points", manifest.total_points, pin.total_points),
                                 ("total_items", manifest.total_items, pin.total_items),
                                 ("efficiency_points", manifest.efficiency_points, pin.efficiency_points)):
        if value != pinned:
            raise ConfigError(f"{path}: field '{field}': {value:g}, but {where} pins {pinned:g} ({pin.source})")
