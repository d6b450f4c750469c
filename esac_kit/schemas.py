"""The pydantic schemas of ESAC: suite manifests, categories, item specs, answer keys, rubrics and instances."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from esac_kit.version import PATTERN as VERSION_PATTERN, major_of


class Strict(BaseModel):
    """Base for file-backed schemas: unknown fields are errors, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- answer keys
# Keys are computed from the seed by the item's generator at scoring time and never stored (amendment 001 §4).

AnswerType = Literal["number", "set", "list", "text"]


class ExactKey(Strict):
    """A single final answer on an `ANSWER:` line, compared after normalisation."""

    kind: Literal["exact"] = "exact"
    answer: str
    answer_type: AnswerType


class Constraint(Strict):
    """One verifiable constraint on a response; `check` names a function in esac_kit.gi.constraints."""

    id: str
    check: str
    params: dict[str, Any] = {}
    description: str


class ConstraintsKey(Strict):
    """Instruction following: score = share of constraints met, or 0 when a gate constraint fails."""

    kind: Literal["constraints"] = "constraints"
    gate: list[Constraint]
    constraints: list[Constraint] = Field(min_length=1)


class HonestyPart(Strict):
    """One labelled part of an honesty item: either answerable with an exact answer, or to be declined."""

    label: str = Field(pattern=r"^[A-H]$")
    answerable: bool
    answer: str | None = None
    answer_type: AnswerType = "number"

    @model_validator(mode="after")
    def _answer_iff_answerable(self) -> "HonestyPart":
        if self.answerable != (self.answer is not None):
            raise ValueError("an answerable part needs an answer and an unanswerable one must have none")
        return self


class HonestyKey(Strict):
    """Epistemic honesty: each part scores 1 for the right answer or for declining an unanswerable part."""

    kind: Literal["honesty"] = "honesty"
    parts: list[HonestyPart] = Field(min_length=2)

    @model_validator(mode="after")
    def _abstention_cannot_pass(self) -> "HonestyKey":
        declined = sum(not p.answerable for p in self.parts)
        if declined * 2 > len(self.parts):
            raise ValueError("blanket abstention would score above half: too many unanswerable parts")
        return self


class CodeTest(Strict):
    """One hidden test: call the entry point with literal arguments and compare with a literal result."""

    args: str
    expected: str


class CodeTestsKey(Strict):
    """Code writing: the response's last python block runs in the sandbox against hidden tests."""

    kind: Literal["code_tests"] = "code_tests"
    entry_point: str
    tests: list[CodeTest] = Field(min_length=1)


class JudgeKey(Strict):
    """Judge-graded items carry no key: the rubric in the item file is the standard (amendment 001 §2, §7)."""

    kind: Literal["judge"] = "judge"
    variant: str
    facts: list[str] = []


class AgenticKey(Strict):
    """An AG task's key is its environment and checks, rebuilt from the seed; this records what they are."""

    kind: Literal["agentic"] = "agentic"
    tools: list[str]
    checks: list[str]


AnswerKey = Annotated[ExactKey | ConstraintsKey | HonestyKey | CodeTestsKey | JudgeKey | AgenticKey,
                      Field(discriminator="kind")]


class Generated(Strict):
    """What a generator returns: the prompt the model sees, the key, a reference response that scores 1, and the
    instance's difficulty as the generator's own solver measured it (search nodes, trace steps, context tokens)."""

    prompt: str
    key: AnswerKey
    reference: str
    difficulty: dict[str, float] = {}


class Difficulty(Strict):
    """An item's declared difficulty: the drivers its generator takes and the band its solver's measure must hit.

    The generator is called as `generator(rng, **drivers)`; an instance whose `measure` falls outside `band` is
    redrawn from a fresh stream, at most `redraws` times (esac_kit.kinds.draw_in_band)."""

    drivers: dict[str, Any] = Field(min_length=1)
    measure: str = Field(min_length=1)
    band: tuple[float, float]
    redraws: int = Field(default=200, gt=0)
    note: str = Field(min_length=20)  # why these drivers and this band make the item hard, in a sentence

    @model_validator(mode="after")
    def _band_ordered(self) -> "Difficulty":
        if self.band[0] > self.band[1]:
            raise ValueError("band must be [low, high] with low <= high")
        return self


# ---------------------------------------------------------------- rubrics (authored items)


class Criterion(Strict):
    """One rubric criterion; levels[i] describes level i, and the top level earns the full weight."""

    id: str
    description: str
    weight: float = Field(gt=0)
    levels: list[str] = Field(min_length=2)
    gate: bool = False
    verified_in_code: str | None = None
    params: dict[str, Any] = {}

    @model_validator(mode="after")
    def _gate_is_judged(self) -> "Criterion":
        if self.gate and self.verified_in_code is not None:
            raise ValueError("the gate criterion is the judge's: it cannot be verified in code")
        return self


class Rubric(Strict):
    """A judge rubric; the gate criterion "answered the actual question" holds at least half the weight."""

    criteria: list[Criterion] = Field(min_length=2)

    @model_validator(mode="after")
    def _gate_rules(self) -> "Rubric":
        gates = [c for c in self.criteria if c.gate]
        if len(gates) != 1:
            raise ValueError("a rubric needs exactly one gate criterion (answered the actual question)")
        total = sum(c.weight for c in self.criteria)
        if gates[0].weight * 2 < total:
            raise ValueError("the gate criterion must carry at least half the rubric weight (amendment 001 §2)")
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise ValueError("criterion ids must be unique")
        return self


class Anchor(Strict):
    """A fixed response used to validate a rubric: its kind says what it is meant to exercise."""

    kind: Literal["ideal", "padded", "terse", "off_topic", "empty", "injection"]
    response: str


class Variant(Strict):
    """One authored prompt of a family, with its own anchors."""

    id: str
    prompt: str
    facts: list[str] = []
    anchors: list[Anchor] = []


# ---------------------------------------------------------------- items and suites

class EfficiencyScale(Strict):
    """An AG task's efficiency rubric, authored before any run (amendment 001 §1).

    Each scale lists the largest figure that still earns levels 6, 5, 4, 3 and 2; anything above the last is 1.
    Effective actions = tool calls + rework_penalty × (redundant + rework + invalid calls); the action scale reads
    them beyond the instance's reference script's tool calls, the token scale reads total tokens.
    """

    envelope: str = Field(min_length=20)
    action_scale: list[int] = Field(min_length=5, max_length=5)
    token_scale: list[int] = Field(min_length=5, max_length=5)
    rework_penalty: float = Field(ge=0)

    @model_validator(mode="after")
    def _increasing(self) -> "EfficiencyScale":
        for name in ("action_scale", "token_scale"):
            values = getattr(self, name)
            if values[0] < (name == "token_scale") or any(b <= a for a, b in zip(values, values[1:])):
                raise ValueError(f"{name} must be strictly increasing from 0 (actions) or 1 (tokens), levels 6 to 2")
        return self


class ItemSpec(Strict):
    """One item file: either a parametrized generator or an authored prompt family with a rubric."""

    id: str = Field(pattern=r"^[a-z]+-[a-z0-9-]+$")
    category: str
    title: str
    scoring: str = Field(pattern=r"^[a-z_]+$")  # the item's kind (esac_kit.kinds); it checks the fields it needs
    difficulty_lever: str = Field(min_length=20)
    difficulty: Difficulty | None = None
    weight: float = Field(default=1.0, gt=0)
    output_budget_tokens: int | None = Field(default=None, gt=0)
    time_budget_s: float | None = Field(default=None, gt=0)
    generator: str | None = Field(default=None, pattern=r"^[\w.]+:\w+$")
    expected_depth: Literal["deep", "concise", "either"] | None = None
    rubric: Rubric | None = None
    variants: list[Variant] = []
    required_order: list[str] = []
    step_budget: int | None = Field(default=None, gt=0)
    efficiency: EfficiencyScale | None = None

    @property
    def parametrized(self) -> bool:
        """True for items whose instances come from a generator."""
        return self.generator is not None


class Category(Strict):
    """A capability category: its points and how many items it holds."""

    id: str
    name: str
    points: float = Field(gt=0)
    items: int = Field(gt=0)
    scoring: str


class JudgePin(Strict):
    """The pinned judge: exact model snapshot, stated sampling and the template version (amendment 001 §5)."""

    model: str
    temperature: float = Field(ge=0)
    max_tokens: int = Field(gt=0)
    template_version: str


class SuiteManifest(Strict):
    """A suite's manifest: version, categories, totals and defaults, asserted against the item files at load."""

    suite: str
    name: str
    version: str = Field(pattern=VERSION_PATTERN)
    kinds: str = Field(pattern=r"^[\w.]+$")  # the module that defines and registers the suite's item kinds
    public_seed: str
    total_points: float
    total_items: int
    pass_fraction: float = Field(gt=0, le=1)
    output_budget_tokens: int = Field(gt=0)
    time_budget_s: float = Field(gt=0)
    judge: JudgePin | None = None
    efficiency_points: float = Field(default=0.0, ge=0)  # ESAC-AG: 5, outside the categories (amendment 001 §1)
    episode_token_budget: int | None = Field(default=None, gt=0)
    categories: list[Category]

    @property
    def capability_points(self) -> float:
        """The categories' total, against which the pass rule is applied (amendment 001 §10)."""
        return self.total_points - self.efficiency_points

    @property
    def major(self) -> int:
        """The major version, part of every instance's seed derivation."""
        return major_of(self.version)


class Instance(BaseModel):
    """One item as generated for one pool; the key stays out of anything shown to a model."""

    model_config = ConfigDict(frozen=True)

    suite: str
    version: str
    item_id: str
    category: str
    pool: str
    prompt: str
    key: AnswerKey
    reference: str
    difficulty: dict[str, float] = {}  # the generator's measure of this instance (Generated.difficulty)
