"""Item kinds: each family of items carries its replication plan, instances, scoring, verify and the modules of its
scoring protocol, so the harness asks the kind and never switches on a scoring string.

A suite's manifest names the module that defines its kinds (`kinds = "esac_kit.gi.kinds"`); loading the suite
imports it, and the module registers its kinds here. The core therefore imports no suite package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from esac_kit.chat import estimate_tokens
from esac_kit.errors import ConfigError
from esac_kit.rng import ItemRng
from esac_kit.schemas import Generated, Instance, ItemSpec

# Every kind's scores pass through these: the kinds and the schemas of keys, the report that rolls observations up
# through aggregation and the pass rule. Fingerprints take each root's import closure (esac_kit.fingerprints).
CORE_SCORING_MODULES = ("esac_kit.kinds", "esac_kit.scoring", "esac_kit.report")


@dataclass(frozen=True)
class Slot:
    """One planned observation: an item, a model replicate and, for judged items, a judge replicate."""

    item_id: str
    model_replicate: int
    judge_replicate: int | None

    @property
    def key(self) -> tuple[str, int, int | None]:
        """The slot as the journal names it."""
        return (self.item_id, self.model_replicate, self.judge_replicate)


@dataclass(frozen=True)
class VerifyOutcome:
    """What one kind's verify printed and which items failed."""

    table: str
    summary: str
    failed: list[str]
    method: str = ""  # how the items were exercised, printed before the table


@dataclass(frozen=True)
class CallBound:
    """Upper bounds of the calls one item makes in a run, for `esac-kit run --estimate`."""

    role: str  # model | judge
    calls: int
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True)
class RunBudgets:
    """The budgets an item's calls are bounded by: output per answer (per turn for AG), judge output, episodes."""

    output_tokens: int
    judge_max_tokens: int
    episode_tokens: int | None = None


class Kind:
    """An item family; subclasses set the class attributes and override what differs from a single scored answer."""

    name: ClassVar[str]
    model_replicates: ClassVar[int] = 1  # deterministic items run once (amendment 001 §5)
    judge_replicates: ClassVar[int] = 0  # 0: scored in code, not by the judge
    episodic: ClassVar[bool] = False  # AG: an episode in a mock environment instead of one answer
    scoring_modules: ClassVar[tuple[str, ...]] = ()  # roots of the scoring protocol; fingerprints take the closure
    generation_modules: ClassVar[tuple[str, ...]] = ()  # roots of instance generation besides the item's generator
    generators_score: ClassVar[bool] = False  # True when the item's checks live in its generator (AG): scoring too
    # Modules of the kind's self-checks (verify, rubric check, scripted agents): they decide no score, closures stop
    tool_modules: ClassVar[tuple[str, ...]] = ()
    verify_seeds: ClassVar[int] = 200  # `esac-kit verify`'s default number of pool seeds

    @property
    def judged(self) -> bool:
        """True when a judge grades this kind's answers."""
        return self.judge_replicates > 0

    def check_item(self, item: ItemSpec) -> None:
        """Raise ValueError when an item file lacks what this kind needs (the loader names the file)."""
        no_episode_fields(item)
        if item.generator is None:
            raise ValueError(f"a {self.name} item needs a generator 'module:function'")

    def check_manifest(self, manifest) -> str | None:
        """What is wrong with the suite's manifest for this kind, as 'field: problem', or None."""
        return None

    def slots(self, item: ItemSpec) -> list[Slot]:
        """The replication plan of one item (amendment 001 §5)."""
        if not self.judged:
            return [Slot(item.id, m, None) for m in range(self.model_replicates)]
        return [Slot(item.id, m, j) for m in range(self.model_replicates) for j in range(self.judge_replicates)]

    def generate(self, item: ItemSpec, rng: ItemRng, held_out: Callable[[], ItemSpec] | None,
                 task: object | None = None) -> Generated:
        """The prompt, key and reference of one instance; `held_out()` reads the private pack's item when needed."""
        return draw_in_band(item, rng)

    def call_bounds(self, item: ItemSpec, instance: Instance, budgets: RunBudgets) -> list[CallBound]:
        """The most calls and tokens this item can cost: one answer per model replicate, each within its budget."""
        n = self.model_replicates
        return [CallBound("model", n, n * estimate_tokens(instance.prompt), n * budgets.output_tokens)]

    def key_protocol(self, instance: Instance) -> object:
        """The part of an instance's key that decides how it is scored (not what the answer is): scoring material."""
        return instance.key.model_dump(exclude={"answer", "variant", "facts"})

    def instance_bytes(self, instance: Instance, task: object | None) -> bytes:
        """The generated bytes of one instance, as the suite's instances digest takes them."""
        return instance.model_dump_json().encode()

    async def observe(self, runner, item: ItemSpec, instance: Instance, replicate: int, slots: list[Slot]) -> None:
        """Fill the slots of one model replicate through the runner (esac_kit.runner.Runner: model_answer, chat,
        retried, record): answer, score and journal each observation."""
        raise NotImplementedError

    def show(self, instance: Instance, task: object | None, answer: bool) -> str:
        """What `esac-kit show` prints after the prompt; with `answer`, the key and the reference."""
        if not answer:
            return ""
        return (f"\n# key\n{instance.key.model_dump_json(indent=2)}\n{difficulty_shown(instance)}"
                f"\n# reference response\n{instance.reference}")

    def verify(self, suite, items: list[ItemSpec], pool, seeds: int,
               progress: Callable[[str], None] | None) -> VerifyOutcome | None:
        """Check the items' guarantees over seeds; None for kinds without a verify (authored items)."""
        return None

    def check_rubrics(self, suite, items: list[ItemSpec], judge: str, pack, policy,
                      say: Callable[[str], None], params=None) -> VerifyOutcome:
        """Judge the items' anchors and test their required orders (`esac-kit rubric check`)."""
        raise ConfigError(f"{self.name} items have no rubric to check")

    def report_extras(self, report, suite, planned: list[ItemSpec], by_item: dict[str, list]) -> Any:
        """The report with what this kind adds to it (AG: the efficiency modifier); the same report by default."""
        return report


def difficulty_shown(instance: Instance) -> str:
    """The instance's measured difficulty as `esac-kit show --answer` prints it; empty when none was measured."""
    if not instance.difficulty:
        return ""
    figures = ", ".join(f"{name} {value:g}" for name, value in instance.difficulty.items())
    return f"\n# measured difficulty (the generator's solver)\n{figures}\n"


def draw_in_band(item: ItemSpec, rng: ItemRng) -> Generated:
    """Call the item's generator with its declared drivers, redrawing until its measured difficulty is in band."""
    generator = resolve(item.generator)
    spec = item.difficulty
    if spec is None:
        return generator(rng)
    low, high = spec.band
    seen = []
    for draw in range(spec.redraws):
        # The first draw reads the item's own stream; redraws read forks of it, so each is a pure function of the seed
        generated = generator(rng if draw == 0 else rng.fork(f"redraw-{draw}"), **spec.drivers)
        if spec.measure not in generated.difficulty:
            raise ValueError(f"the generator did not measure '{spec.measure}' (it measured "
                             f"{sorted(generated.difficulty) or 'nothing'})")
        value = generated.difficulty[spec.measure]
        if low <= value <= high:
            return generated.model_copy(update={"difficulty": {**generated.difficulty, "draws": draw + 1}})
        seen.append(value)
    raise ValueError(f"no draw in {spec.redraws} put '{spec.measure}' in the band [{low:g}, {high:g}] "
                     f"(seen {min(seen):g} to {max(seen):g}): widen the band or change the drivers")


def no_episode_fields(item: ItemSpec) -> None:
    """Only episodic items (AG tasks) take an efficiency scale and a step budget."""
    if item.efficiency is not None or item.step_budget is not None:
        raise ValueError("only agentic tasks take an efficiency scale and a step_budget")


_KINDS: dict[str, Kind] = {}


def register(*kinds: Kind) -> None:
    """Make kinds known by their names; a suite's kinds module calls this on import."""
    for kind in kinds:
        _KINDS[kind.name] = kind


def is_registered(name: str) -> bool:
    """True when a kind of this name is known."""
    return name in _KINDS


def kind_of(item: ItemSpec | str) -> Kind:
    """The kind of an item (or of a scoring name), or a ConfigError listing the kinds known."""
    name = item if isinstance(item, str) else item.scoring
    try:
        return _KINDS[name]
    except KeyError:
        raise ConfigError(f"unknown scoring kind '{name}': known kinds are {', '.join(sorted(_KINDS)) or 'none'} "
                          f"(is the suite's `kinds` module loaded?)") from None


def load_kinds(module_name: str) -> Any:
    """Import a suite's kinds module (it registers its kinds) and return it."""
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise ConfigError(f"cannot import the kinds module '{module_name}': {error}") from None


def resolve(reference: str | None) -> Callable:
    """Import `module:function` and return the function, or raise a ConfigError saying what is missing."""
    module_name, _, function_name = (reference or "").partition(":")
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError) as error:
        raise ConfigError(f"cannot import '{module_name}': {error}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ConfigError(f"'{module_name}' has no function '{function_name}'")
    return function


def plan(items: list[ItemSpec]) -> list[Slot]:
    """The replication plan of a run: every item's slots, in item order (amendment 001 §5)."""
    return [slot for item in items for slot in kind_of(item).slots(item)]
