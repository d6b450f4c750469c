"""Every record a run folder holds, typed and versioned in one place: run.json (RunConfig, its PoolRecord), the
journal's lines (Observation, an AG episode's EpisodeDetail), report.json (Report) and abort.json (RunAbort); and the
one atomic write."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from esac_kit.errors import ConfigError
from esac_kit.outcomes import EpisodeEnd, ModelOutcome
from esac_kit.scoring import AMENDMENT_001_PASS, PassRule

FORMAT_VERSION = 2  # of run.json and of the journal's lines
LEGACY_FORMAT = 1  # a stored record without format_version: written before records were versioned
REPORT_SCHEMA_VERSION = 3  # of report.json; 2: the pool as fields, no longer a label; 3: exact intervals
# replace the t intervals (a schema-2 report's ci_t is dropped on reading: it was not the exact interval)
# A stored response keeps at most this many characters per token of its output budget (a model cannot write more
# legitimately); its full length and SHA-256 are kept beside it, and it was scored whole before it was stored.
RESPONSE_CHARS_PER_TOKEN = 16


# ---------------------------------------------------------------- writing and reading


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace a file in one step: a kill or a failed write leaves the old file or the new one, never half of one."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")  # unique: two writers never share one
    try:
        temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically, keys sorted and indented."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


Stored = TypeVar("Stored", bound=BaseModel)


def read_record(model: type[Stored], text: str | bytes) -> Stored:
    """A record as stored: one without format_version is the legacy format (raises ValueError when it is not one)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return model.model_validate({"format_version": LEGACY_FORMAT, **data})


def read_record_file(model: type[Stored], path: Path) -> Stored:
    """A record file, or a one-line ConfigError naming the file and the first field that does not validate."""
    try:
        return read_record(model, path.read_bytes())
    except ValidationError as error:
        raise ConfigError(f"{path}: {first_problem(error)}") from None
    except ValueError as error:
        raise ConfigError(f"{path}: not a JSON record: {error}") from None


def first_problem(error: ValidationError) -> str:
    """`field: message` of a validation error's first problem, on one line."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]


def prompt_sha256(prompt: str) -> str:
    """The digest an observation keeps of the prompt it answered."""
    return hashlib.sha256(prompt.encode()).hexdigest()


class Versioned(BaseModel):
    """A record of a run folder: new ones are FORMAT_VERSION, and formats newer than this kit's are refused."""

    format_version: int = FORMAT_VERSION

    @field_validator("format_version")
    @classmethod
    def _not_newer(cls, version: int) -> int:
        if version > FORMAT_VERSION:
            raise ValueError(f"format {version} is newer than this kit reads ({FORMAT_VERSION}): upgrade esac-kit")
        return version


# ---------------------------------------------------------------- the pool


def describe_pool(name: str, shown: str | None) -> str:
    """A pool's display label from its name and what may be shown of it: the seed, or a held-out commitment."""
    return f"{name} ({'commitment' if name == 'heldout' else 'seed'} {shown})"


def _legacy_pool(label: str) -> dict[str, str]:
    """The pool fields of a legacy label: `custom (seed seed-(v2))` is custom with the seed `seed-(v2)`."""
    # The only place that parses a pool label: legacy run.json and report.json (schema 1) stored nothing else.
    name, _, rest = label.partition(" (")
    key, _, value = rest.removesuffix(")").partition(" ")  # one closing parenthesis is the label's, the rest the seed's
    return {"name": name, key: value}


class PoolRecord(BaseModel):
    """A run's pool as fields: public or custom with its seed, or held-out with its commitment, never its seed."""

    model_config = ConfigDict(frozen=True)

    name: Literal["public", "custom", "heldout"]
    seed: str | None = None
    commitment: str | None = None

    @model_validator(mode="after")
    def _heldout_keeps_its_seed_out(self) -> PoolRecord:
        if self.name == "heldout" and (self.seed is not None or not self.commitment):
            raise ValueError("a held-out pool is recorded by its commitment alone, never by its seed")
        if self.name != "heldout" and (self.seed is None or self.commitment is not None):
            raise ValueError(f"a {self.name} pool is recorded by its seed alone")
        return self

    @property
    def label(self) -> str:
        """For display only: `public (seed S)`, `custom (seed S)` or `heldout (commitment C)`."""
        return describe_pool(self.name, self.commitment if self.name == "heldout" else self.seed)


# ---------------------------------------------------------------- run.json


class RunConfig(Versioned):
    """Everything that defines a run, saved as run.json; it holds no secret (only the held-out commitment)."""

    run_id: str
    suite: str
    version: str
    pool: PoolRecord
    pack: str | None = None
    model: str
    judge: str | None
    judge_temperature: float
    judge_max_tokens: int
    temperature: float
    concurrency: int
    max_tokens_cap: int | None
    max_turns_cap: int | None = None
    items: list[str] | None = None
    journal_chained_from: int | None = 0  # journal lines from here on carry the hash chain (None: not yet opened)
    time_budgets: bool = True  # False: --no-time-budget, for slow outside answerers such as people (unofficial)
    unsafe_sandbox: bool = False  # True: --unsafe-sandbox let model code run without the kernel's wall (unofficial)
    model_params: dict[str, Any] = {}  # -M parameters of the evaluated model (esac_kit.model_params)
    sends_temperature: bool = True  # False for reasoning models, which take only the API's default temperature
    batch: bool = False  # --batch: single answers and judgements went through the providers' batch APIs
    notes: list[str]
    kit_version: str
    created_at: str

    @model_validator(mode="before")
    @classmethod
    def _from_legacy(cls, data: Any) -> Any:
        # A legacy run.json kept the pool as a name and a label; migrated, it is format 2 and is saved as such.
        if isinstance(data, dict) and data.get("format_version") == LEGACY_FORMAT and "pool_label" in data:
            data = {k: v for k, v in data.items() if k != "pool_label"} | {
                "format_version": FORMAT_VERSION, "pool": _legacy_pool(data["pool_label"]),
                "journal_chained_from": None}  # its journal's existing lines predate the chain
        return data


class RunAbort(BaseModel):
    """Why a run's last session stopped on an error (abort.json): an outage past its budget, a configuration error;
    the finished work stays journalled, and the record goes when the run is resumed."""

    error: str
    exit_code: int
    at: str


# ---------------------------------------------------------------- the journal


class EpisodeCounts(BaseModel):
    """The figures an AG episode's efficiency scales read."""

    tool_calls: int
    redundant: int
    rework: int
    invalid: int
    tokens: int
    model_turns: int = 0


class EpisodeEfficiency(BaseModel):
    """An AG task's efficiency: effective actions, its levels and the normalised a and t (0 for a failed task)."""

    effective_actions: float
    action_level: int
    token_level: int | None  # None: no usage reported (an outside answerer's estimate), so no token credit
    a: float
    t: float


class EpisodeStep(BaseModel):
    """One tool call as an episode recorded it."""

    index: int
    tool: str
    arguments: Any
    result: str
    status: Literal["ok", "tool_error", "invalid", "submit"]
    redundant_of: int | None = None
    rework_of: list[int] = []
    diff: dict[str, list[Any]] = {}
    tokens: int = 0


class EpisodeDetail(BaseModel):
    """An AG observation's score detail: checks, score, success, counts, efficiency, the steps and how it ended."""

    model_config = ConfigDict(extra="allow")  # journals before 2026-11-29 also kept step lists derived from steps

    score: float
    success: bool
    checks: dict[str, bool]
    counts: EpisodeCounts
    efficiency: EpisodeEfficiency
    steps: list[EpisodeStep]
    end: EpisodeEnd
    answer: str | None = None


class Observation(Versioned):
    """One scored observation: a model replicate of an item and, for judge-graded items, one judge replicate."""

    run_id: str
    suite: str
    version: str
    pool: str  # the pool's name; run.json holds the pool record
    item_id: str
    category: str
    model_replicate: int
    judge_replicate: int | None
    outcome: ModelOutcome
    score: float
    score_detail: dict[str, Any] = {}  # an AG episode's is an EpisodeDetail, kept as written
    response: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    attempts: int
    retries: dict[str, int] = {}
    judge_levels: dict[str, int] | None = None
    judge_rationale: str | None = None
    judge_tokens_in: int = 0
    judge_tokens_out: int = 0
    tokens_reasoning: int = 0  # of tokens_out: reasoning or thinking the provider billed and reported apart
    tokens_cache_read: int = 0  # of tokens_in: read from the provider's prompt cache
    tokens_cache_write: int = 0  # of tokens_in: written to it
    thinking: str = ""  # the model's visible thinking (Anthropic), kept apart from the response it is scored on
    prompt_sha256: str = ""
    response_sha256: str = ""  # of the whole response, stored or not
    response_chars: int | None = None  # the whole response's length when the stored one was cut to its cap
    chain: str = ""  # SHA-256 of the previous line's chain and this line: an edited journal is evident

    @field_validator("score_detail")
    @classmethod
    def _episode_detail_validates(cls, detail: dict[str, Any]) -> dict[str, Any]:
        if "efficiency" in detail:  # an AG episode's, the one detail the report reads
            EpisodeDetail.model_validate(detail)
        return detail

    @property
    def slot(self) -> tuple[str, int, int | None]:
        """The plan slot this observation fills."""
        return (self.item_id, self.model_replicate, self.judge_replicate)


# ---------------------------------------------------------------- report.json


class ItemScore(BaseModel):
    """One item's score (the mean of its observations) and the spread between its replicates."""

    item_id: str
    category: str
    weight: float
    score: float
    observations: int
    outcomes: dict[str, int]
    answer_spread: float | None = None
    judge_spread: float | None = None
    instance_sha256: str


class CategoryScore(BaseModel):
    """One category's points, whether it clears the pass line (amendment 001 §10), and its uncertainty."""

    id: str
    points: float
    max_points: float
    passed: bool
    ci_exact: tuple[float, float] | None = None  # Clopper–Pearson 95 %; None for fewer than 3 items
    ci_bootstrap: tuple[float, float] | None = None  # secondary: the item bootstrap
    se_fixed: float | None = None  # SE over the replicates of these items, taken as fixed
    p_pass: float | None = None  # 1 − the exact one-sided p-value of "true score ≤ the pass line"
    label: str | None = None  # PASS / FAIL / INCONCLUSIVE from the exact bounds (statistics.LEGEND)
    note: str | None = None  # why an interval is missing


class TaskEfficiency(BaseModel):
    """One AG task's efficiency (amendment 001 §1): the harness's counts, the levels and which calls cost."""

    item_id: str
    success: bool
    tool_calls: int
    redundant: int
    rework: int
    invalid: int
    tokens: int
    effective_actions: float
    reference_actions: int = 0  # the instance's reference tool calls: the action scale reads the excess over them
    action_level: int
    token_level: int | None  # None: the provider reported no usage, so unknown and no token credit
    a: float
    t: float
    note: str | None = None
    redundant_calls: list[str]
    rework_calls: list[str]
    invalid_calls: list[str]


class Party(BaseModel):
    """A model or judge as the run used it: its name and its sampling parameters."""

    name: str
    parameters: dict[str, float | int | str | None]


class Report(BaseModel):
    """Everything a run says (SPEC §6): provenance, scores with uncertainty, pass/fail, failures, retries, tokens."""

    schema_version: int = REPORT_SCHEMA_VERSION
    run_id: str
    suite: str
    version: str
    fingerprints: dict[str, str]
    pool: PoolRecord
    model: Party
    judge: Party | None
    official: bool
    notes: list[str]
    journal_head: str | None = None  # the journal's last chain hash: the journal this report was rendered from
    tampered: bool = False  # a journal line does not match its hash chain: edited after it was written
    kit_version: str
    created_at: str
    rendered_at: str
    pass_fraction: float = AMENDMENT_001_PASS.fraction  # from the manifest: every label and chart uses this line
    total: float | None  # None for an incomplete run: what is missing is not a zero (amendment 001 §8)
    max_total: float
    passed: bool
    reasons: list[str]
    total_ci_exact: tuple[float, float] | None = None  # over the items with the categories as strata (+ modifier)
    total_ci_bootstrap: tuple[float, float] | None = None
    total_label: str | None = None  # of the capability total against its pass line
    categories: list[CategoryScore]
    items: list[ItemScore]
    model_outcomes: dict[str, int]
    retries: dict[str, int]
    tokens: dict[str, int]
    cost: dict[str, Any] | None = None  # USD of model, judge and total (None: a price unknown), prices' date
    capability: float | None = None  # ESAC-AG: the categories' points; total = capability + modifier
    max_capability: float | None = None
    modifier: float | None = None
    max_modifier: float | None = None
    efficiency: list[TaskEfficiency] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_schema_1(cls, data: Any) -> Any:
        # A schema-1 report kept the pool as a label; migrated, it is the current schema.
        if isinstance(data, dict) and data.get("schema_version") == 1 and isinstance(data.get("pool"), str):
            data = data | {"schema_version": REPORT_SCHEMA_VERSION, "pool": _legacy_pool(data["pool"])}
        return data

    @field_validator("schema_version")
    @classmethod
    def _not_newer(cls, version: int) -> int:
        if version > REPORT_SCHEMA_VERSION:
            raise ValueError(f"schema {version} is newer than this kit reads ({REPORT_SCHEMA_VERSION}): "
                             f"upgrade esac-kit")
        return version

    @property
    def pass_rule(self) -> PassRule:
        """The pass rule this report was scored under."""
        return PassRule(self.pass_fraction)

    def scores(self) -> dict:
        """The part of a report that must not depend on how the run was interrupted or retried, nor on the kit that
        re-rendered it: the scores, not the statistics of their uncertainty (a newer kit may compute those anew)."""
        return {"total": self.total, "passed": self.passed, "reasons": self.reasons, "modifier": self.modifier,
                "categories": [c.model_dump(include={"id", "points", "max_points", "passed"})
                               for c in self.categories],
                "items": [(i.item_id, i.score, i.observations) for i in self.items]}
