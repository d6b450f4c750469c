"""Instances: an item made concrete for a pool, a pure function of (suite, item id, major version, pool seed) (amendment 001 §3, §4)."""

from __future__ import annotations

from pathlib import Path

from esac_kit.errors import ConfigError
from esac_kit.kinds import kind_of, resolve
from esac_kit.pools import Pool
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.schemas import Generated, Instance, ItemSpec
from esac_kit.suite import Suite, read_item


def item_rng(suite: Suite, item: ItemSpec, pool: Pool) -> ItemRng:
    """The item's own random stream for this pool."""
    return ItemRng(derive_item_key(pool.seed, suite.manifest.suite, item.id, suite.manifest.major))


def generate(suite: Suite, item: ItemSpec, pool: Pool, pack: Path | None = None, task=None) -> Instance:
    """Make one instance; authored items in the held-out pool take their variants from the private pack.
    An AG task already built for this pool can be passed as `task`, so it is not generated twice."""
    held_out = (lambda: pack_item(suite, item, pack)) if pool.name == "heldout" else None
    try:
        generated = kind_of(item).generate(item, item_rng(suite, item, pool), held_out, task)
    except ConfigError:
        raise
    except Exception as error:  # a generator reference to the wrong function, or a generator bug: say which item
        raise ConfigError(f"{suite.folder / (item.id + '.toml')}: field 'generator': {item.generator} failed: "
                          f"{type(error).__name__}: {error}") from None
    if not isinstance(generated, Generated):
        raise ConfigError(f"{suite.folder / (item.id + '.toml')}: field 'generator': {item.generator} returned "
                          f"{type(generated).__name__}, not an instance")
    return Instance(suite=suite.manifest.suite, version=suite.manifest.version, item_id=item.id,
                    category=item.category, pool=pool.name, prompt=generated.prompt, key=generated.key,
                    reference=generated.reference, difficulty=generated.difficulty)


def build_task(suite: Suite, item: ItemSpec, pool: Pool):
    """The live task of an episodic item (environment factory, checks, scripts) for this pool."""
    try:
        return resolve(item.generator)(item_rng(suite, item, pool))
    except ConfigError:
        raise
    except Exception as error:  # as in generate: a wrong reference or a generator bug names its item file
        raise ConfigError(f"{suite.folder / (item.id + '.toml')}: field 'generator': {item.generator} failed: "
                          f"{type(error).__name__}: {error}") from None


def build_tasks(suite: Suite, items: list[ItemSpec], pool: Pool) -> dict[str, object]:
    """Every episodic item's live task for this pool, by item id."""
    return {i.id: build_task(suite, i, pool) for i in items if kind_of(i).episodic}


def pack_item(suite: Suite, item: ItemSpec, pack: Path | None) -> ItemSpec:
    """The held-out variants of an authored item from a private pack `<pack>/<suite>/<id>.toml`."""
    if pack is None:
        raise ConfigError(f"the held-out pool needs a private item pack for authored item '{item.id}': "
                          f"pass --pack DIR")
    path = pack / suite.manifest.suite / f"{item.id}.toml"
    if not path.is_file():
        raise ConfigError(f"{path}: missing from the item pack: the held-out pool needs a variant of '{item.id}'")
    held_out = read_item(path)
    if held_out.category != item.category or kind_of(held_out) is not kind_of(item):
        raise ConfigError(f"{path}: field 'category': the pack item must match the suite item '{item.id}'")
    return held_out


def generate_all(suite: Suite, pool: Pool, pack: Path | None = None) -> list[Instance]:
    """Every instance of a suite for one pool, in manifest order."""
    return [generate(suite, item, pool, pack) for item in suite.items]
