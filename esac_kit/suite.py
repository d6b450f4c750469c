"""Loading a suite: the manifest and its item files, validated and asserted at load time (amendment 001 §6)."""

from __future__ import annotations

import os
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from esac_kit.distribution import check_distribution
from esac_kit.errors import ConfigError
from esac_kit.kinds import is_registered, kind_of, load_kinds, resolve
from esac_kit.schemas import ItemSpec, SuiteManifest

ITEMS_ENV = "ESAC_ITEMS"
MANIFEST = "manifest.toml"
NOT_ITEMS = {MANIFEST, "versions.toml"}


def default_items_dir() -> Path:
    """The items folder: $ESAC_ITEMS, else the repository's items/ beside the package."""
    return Path(os.environ.get(ITEMS_ENV) or Path(__file__).resolve().parent.parent / "items")


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its manifest and its items in manifest category order."""

    manifest: SuiteManifest
    items: tuple[ItemSpec, ...]
    folder: Path

    def item(self, item_id: str) -> ItemSpec:
        """The item with this id, or a ConfigError naming the suite."""
        for item in self.items:
            if item.id == item_id:
                return item
        raise ConfigError(f"no item '{item_id}' in {self.manifest.name} {self.manifest.version}: "
                          f"see `esac-kit items --suite {self.manifest.suite} --list`")

    def category_of(self, item: ItemSpec):
        """The manifest's category record for an item."""
        return next(c for c in self.manifest.categories if c.id == item.category)

    def summary(self) -> dict:
        """The suite as `esac-kit items --json` prints it: the manifest, its capability points and every item."""
        return self.manifest.model_dump(mode="json") | {
            "capability_points": self.manifest.capability_points,
            "items": [{"id": i.id, "category": i.category, "title": i.title, "scoring": i.scoring, "weight": i.weight}
                      for i in self.items]}


def read_model(path: Path, model: type[BaseModel]) -> Any:
    """Parse a TOML file into a schema, turning any failure into a one-line ConfigError naming file and field."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte {error.start}): save the file as UTF-8") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(file)"
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        raise ConfigError(f"{path}: field '{field}': {first['msg']}{more}") from None


def load_suite(suite: str = "gi", items_dir: Path | None = None) -> Suite:
    """Load and check a suite: the manifest against its pinned distribution, then against its item files; any drift
    is a ConfigError naming the file and field (amendment 001 §6)."""
    folder = (items_dir or default_items_dir()) / suite
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise ConfigError(f"{manifest_path}: no such manifest: is '{suite}' a suite of this kit?")
    manifest: SuiteManifest = read_model(manifest_path, SuiteManifest)
    try:
        kinds = load_kinds(manifest.kinds)
    except ConfigError as error:
        raise ConfigError(f"{manifest_path}: field 'kinds': {error}") from None
    pins = getattr(kinds, "DISTRIBUTIONS", {}).get(manifest.suite)
    if pins is not None:  # a suite the kinds module pins (ESAC-GI, ESAC-AG); a toy suite of its kinds is not pinned
        check_distribution(manifest, manifest_path, pins)
    items = [read_item(path) for path in sorted(folder.glob("*.toml")) if path.name not in NOT_ITEMS]
    _assert_figures(manifest, manifest_path, items, folder)
    for kind in dict.fromkeys(kind_of(item) for item in items):
        problem = kind.check_manifest(manifest)
        if problem:
            raise ConfigError(f"{manifest_path}: field '{problem.split(':', 1)[0]}':{problem.split(':', 1)[1]}")
    order = {c.id: n for n, c in enumerate(manifest.categories)}
    return Suite(manifest, tuple(sorted(items, key=lambda i: (order[i.category], i.id))), folder)


def read_item(path: Path) -> ItemSpec:
    """Read one item file and check it against its file name and its kind (fields it needs, a generator that imports)."""
    item: ItemSpec = read_model(path, ItemSpec)
    if item.id != path.stem:
        raise ConfigError(f"{path}: field 'id': '{item.id}' does not match the file name")
    if not item.id.startswith(item.category + "-"):
        raise ConfigError(f"{path}: field 'id': '{item.id}' must start with its category '{item.category}-'")
    manifest_path = path.parent / MANIFEST
    if not is_registered(item.scoring) and manifest_path.is_file():  # an item file read on its own, outside a suite
        load_kinds(read_model(manifest_path, SuiteManifest).kinds)
    try:
        kind_of(item).check_item(item)
    except ConfigError as error:
        raise ConfigError(f"{path}: field 'scoring': {error}") from None
    except ValueError as error:
        raise ConfigError(f"{path}: {error}") from None
    if item.generator:
        try:
            resolve(item.generator)
        except ConfigError as error:
            raise ConfigError(f"{path}: field 'generator': {error}") from None
    return item


def _assert_figures(manifest: SuiteManifest, manifest_path: Path, items: list[ItemSpec], folder: Path) -> None:
    where = manifest_path
    category_points = sum(c.points for c in manifest.categories)
    if abs(category_points + manifest.efficiency_points - manifest.total_points) > 1e-9:
        modifier = f" plus the efficiency modifier {manifest.efficiency_points:g}" if manifest.efficiency_points else ""
        raise ConfigError(f"{where}: field 'total_points': {manifest.total_points:g} but the categories sum to "
                          f"{category_points:g}{modifier}")
    declared_items = sum(c.items for c in manifest.categories)
    if declared_items != manifest.total_items:
        raise ConfigError(f"{where}: field 'total_items': {manifest.total_items} but the categories declare "
                          f"{declared_items}")
    if len(items) != manifest.total_items:
        raise ConfigError(f"{where}: field 'total_items': {manifest.total_items} but {folder} holds "
                          f"{len(items)} item files")
    duplicates = [i for i, n in Counter(item.id for item in items).items() if n > 1]
    if duplicates:
        raise ConfigError(f"{folder}: duplicate item ids: {', '.join(duplicates)}")
    known = {c.id for c in manifest.categories}
    for item in items:
        if item.category not in known:
            raise ConfigError(f"{folder / (item.id + '.toml')}: field 'category': '{item.category}' is not a "
                              f"category of {manifest_path}")
    counts = Counter(item.category for item in items)
    for n, category in enumerate(manifest.categories):
        if counts[category.id] != category.items:
            raise ConfigError(f"{where}: field 'categories.{n}.items': '{category.id}' declares {category.items} "
                              f"items but {folder} holds {counts[category.id]}")
