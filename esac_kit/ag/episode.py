"""One episode's bookkeeping: tool calls against the environment, state diffs, redundancy, rework, checks
and the efficiency levels of amendment 001 §1. The HTTP loop and the scripted drivers both feed it."""

from __future__ import annotations

import json
from difflib import SequenceMatcher
from dataclasses import asdict, dataclass, field
from typing import Any

from esac_kit.ag.env import Environment, ToolError, validate_args
from esac_kit.ag.task import AgTask, Check
from esac_kit.outcomes import TransientFailure
from esac_kit.schemas import EfficiencyScale

SUBMIT = "submit"
SUBMIT_TOOL = {"type": "function", "function": {
    "name": SUBMIT,
    "description": "Finish the task. Put your final answer in `answer`; if you declined part of the task, say "
                   "what and why. Nothing can be done after this call.",
    "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
                   "additionalProperties": False}}}
ACTION_WEIGHT, TOKEN_WEIGHT = 3.5, 1.5  # of the 5 modifier points (amendment 001 §1)
RESULT_RECORD_LIMIT = 4000  # characters of a tool result kept in the trace; the model always gets it whole
LEVEL_NAMES = (6, 5, 4, 3, 2)


class EnvironmentCrash(TransientFailure):
    """The mock environment's own code raised: infrastructure, so the episode restarts from scratch (§8)."""


@dataclass
class Step:
    """One tool call as recorded: arguments, result, how the harness classed it, the state diff and tokens."""

    index: int
    tool: str
    arguments: Any
    result: str
    status: str  # ok | tool_error | invalid | submit
    redundant_of: int | None = None
    rework_of: list[int] = field(default_factory=list)
    diff: dict[str, list[Any]] = field(default_factory=dict)
    tokens: int = 0


@dataclass
class Counts:
    """The figures the efficiency scales read."""

    tool_calls: int = 0
    redundant: int = 0
    rework: int = 0
    invalid: int = 0
    tokens: int = 0
    model_turns: int = 0
    unreported_turns: int = 0  # model turns whose provider reported no usage
    reference_calls: int = 0  # the tool calls of this instance's reference script: the level-6 baseline


def level(value: float, thresholds: list[int]) -> int:
    """The level 6..1 of a figure on a scale that lists the largest figure for levels 6 down to 2."""
    for name, limit in zip(LEVEL_NAMES, thresholds):
        if value <= limit:
            return name
    return 1


NO_USAGE = "token level unknown: the provider reported no usage, so no token credit"


@dataclass
class Efficiency:
    """A task's efficiency: effective actions, levels and the normalised a_i, t_i (0 for a failed task)."""

    effective_actions: float
    action_level: int
    token_level: int | None  # None: no usage reported, so unknown and no token credit
    a: float
    t: float
    reference_actions: int = 0
    note: str | None = None


def efficiency(scale: EfficiencyScale, counts: Counts, success: bool) -> Efficiency:
    """Levels from the task's own scales; a failed task earns no efficiency credit (amendment 001 §1).

    The action scale reads effective actions beyond the instance's reference script, so level 6 is the reference's
    own count plus the scale's first figure (a slack the penalty exceeds: any waste drops a level)."""
    effective = counts.tool_calls + scale.rework_penalty * (counts.redundant + counts.rework + counts.invalid)
    action_level = level(effective - counts.reference_calls, scale.action_scale)
    unknown = counts.tokens == 0 or counts.unreported_turns > 0  # no usage is no evidence, never level 6
    token_level = None if unknown else level(counts.tokens, scale.token_scale)
    a = (action_level - 1) / 5 if success else 0.0
    t = (token_level - 1) / 5 if success and token_level is not None else 0.0
    return Efficiency(effective, action_level, token_level, a, t, counts.reference_calls, NO_USAGE if unknown else None)


def modifier(entries: list[Efficiency], points: float) -> float:
    """The efficiency modifier: 3.5·mean(a) + 1.5·mean(t) over the eligible tasks, scaled to the manifest's points."""
    if not entries:
        return 0.0
    scale = points / (ACTION_WEIGHT + TOKEN_WEIGHT)
    mean_a = sum(e.a for e in entries) / len(entries)
    mean_t = sum(e.t for e in entries) / len(entries)
    return scale * (ACTION_WEIGHT * mean_a + TOKEN_WEIGHT * mean_t)


def check_score(checks: tuple[Check, ...], passed: dict[str, bool]) -> tuple[float, bool]:
    """Score = weighted share of goal checks passed, 0 if a guard fails; success = every check passes."""
    if any(c.guard and not passed.get(c.id, False) for c in checks):
        return 0.0, False
    goals = [c for c in checks if not c.guard]
    weight = sum(c.weight for c in goals)
    score = sum(c.weight for c in goals if passed.get(c.id, False)) / weight if weight else 0.0
    return score, all(passed.get(c.id, False) for c in checks)


class Episode:
    """Applies tool calls to a fresh environment and records everything the score and the modifier need."""

    def __init__(self, task: AgTask, item_id: str = "task"):
        self.task = task
        self.item_id = item_id
        self.env: Environment = task.make_env()
        self.tools = {t.name: t for t in self.env.tools()}
        self.steps: list[Step] = []
        self.counts = Counts(reference_calls=sum(1 for c in task.reference if c.name != SUBMIT))
        self.answer: str | None = None
        self.submitted = False
        self._state = self.env.snapshot()
        self._owners: dict[str, list[int | None]] = {}  # state key -> the step that last changed each part of it
        self._version = 0  # bumps on every state change
        self._seen: dict[str, tuple[int, int]] = {}  # call signature -> (step, state version after it)

    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools the model is offered: the environment's and `submit`."""
        return [t.schema() for t in self.tools.values()] + [SUBMIT_TOOL]

    def act(self, name: str, raw_arguments: str | dict[str, Any], tokens: int = 0) -> tuple[str, bool]:
        """Apply one call and return (text for the model, is_error); `submit` ends the episode."""
        index = len(self.steps)
        arguments, problem = _parse(raw_arguments)
        if name == SUBMIT:
            schema = SUBMIT_TOOL["function"]["parameters"]
            problem = problem or validate_args(schema, arguments)
            if problem:
                return self._invalid(index, name, raw_arguments, f"invalid call: {problem}", tokens)
            self.answer, self.submitted = arguments["answer"], True
            self.steps.append(Step(index, name, arguments, "submitted", "submit", tokens=tokens))
            return "submitted", False
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join([*self.tools, SUBMIT])
            return self._invalid(index, name, raw_arguments, f"invalid call: unknown tool '{name}' (tools: {known})",
                                 tokens)
        problem = problem or validate_args(tool.parameters, arguments)
        if problem:
            return self._invalid(index, name, raw_arguments, f"invalid call: {problem}", tokens)
        self.counts.tool_calls += 1
        signature = name + json.dumps(arguments, sort_keys=True)
        try:
            value = self.env.call(tool.method, arguments)
            text, error = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str), False
        except ToolError as failure:
            text, error = f"error: {failure}", True
        except Exception as crash:  # noqa: BLE001 - the environment's own bug: infrastructure, never scored
            raise EnvironmentCrash("environment", f"mock environment of {self.item_id}",
                                   detail=f"{name} raised {type(crash).__name__}: {crash}") from None
        step = Step(index, name, arguments, text[:RESULT_RECORD_LIMIT], "tool_error" if error else "ok",
                    tokens=tokens)
        earlier = self._seen.get(signature)
        if earlier is not None and earlier[1] == self._version:
            step.redundant_of = earlier[0]
            self.counts.redundant += 1
        self._record_diff(step)
        if not error:  # retrying a call that failed is not redundant
            self._seen[signature] = (index, self._version)
        self.steps.append(step)
        return text, error

    def _invalid(self, index: int, name: str, raw: Any, message: str, tokens: int) -> tuple[str, bool]:
        self.counts.tool_calls += 1
        self.counts.invalid += 1
        self.steps.append(Step(index, name, raw, message, "invalid", tokens=tokens))
        return message, True

    def _record_diff(self, step: Step) -> None:
        after = self.env.snapshot()
        before = self._state
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        if not changed:
            return
        step.diff = {k: [_load(before.get(k)), _load(after.get(k))] for k in changed}
        overwritten: set[int] = set()
        for key in changed:
            old, new = step.diff[key]
            touched, self._owners[key] = _touch(old, new, self._owners.get(key), step.index)
            overwritten |= touched
        if overwritten:  # a later call changed or undid a part an earlier call changed: rework (amendment 001 §1)
            step.rework_of = sorted(overwritten)
            self.counts.rework += 1
        self._state = after
        self._version += 1

    def outcome(self, scale: EfficiencyScale) -> dict[str, Any]:
        """Checks, score, success, counts, levels and the trace, as the observation's score detail."""
        passed = {c.id: bool(v) for c, v in zip(self.task.checks, self._evaluate())}
        score, success = check_score(self.task.checks, passed)
        result = efficiency(scale, self.counts, success)
        return {"score": score, "success": success, "checks": passed, "counts": asdict(self.counts),
                "efficiency": asdict(result), "answer": self.answer, "steps": [asdict(s) for s in self.steps]}

    def _evaluate(self) -> list[bool]:
        try:
            verdicts = self.task.evaluate(self.env, self.answer)
        except Exception as crash:  # noqa: BLE001 - a checker bug is ours, not the model's
            raise EnvironmentCrash("environment", f"checks of {self.item_id}",
                                   detail=f"{type(crash).__name__}: {crash}") from None
        missing = [c.id for c in self.task.checks if c.id not in verdicts]
        if missing:
            raise EnvironmentCrash("environment", f"checks of {self.item_id}", detail=f"no verdict for {missing}")
        return [verdicts[c.id] for c in self.task.checks]


def _parse(raw: str | dict[str, Any]) -> tuple[Any, str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        value = json.loads(raw or "{}")
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # a `\\ud8c1` escape decodes to a lone surrogate
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return None, "arguments are not JSON in valid Unicode"
    return value, None if isinstance(value, dict) else "arguments must be a JSON object"


def _parts(value: Any) -> list[Any]:
    """The parts rework is judged on: a text's lines, a database row's fields, else the whole value."""
    if value is None:
        return []
    if isinstance(value, str) and "\n" in value:
        return value.splitlines(keepends=True)
    return [json.dumps(v, sort_keys=True, default=str) for v in (value if isinstance(value, list) else [value])]


def _touch(old: Any, new: Any, owners: list[int | None] | None, index: int) -> tuple[set[int], list[int | None]]:
    """The earlier steps whose parts this change rewrites or removes, and the new owner of each part."""
    before, after = _parts(old), _parts(new)
    owners = owners if owners is not None and len(owners) == len(before) else [None] * len(before)
    touched: set[int] = set()
    kept: list[int | None] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if tag == "equal":
            kept += owners[i1:i2]
        else:  # lines inserted between untouched ones change no earlier part
            touched |= {o for o in owners[i1:i2] if o is not None}
            kept += [index] * (j2 - j1)
    return touched, kept


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def drive(task: AgTask, calls, scale: EfficiencyScale, item_id: str = "task") -> dict[str, Any]:
    """Apply a script directly (no model, no HTTP): for authoring and unit tests; verify uses the real loop."""
    episode = Episode(task, item_id)
    for call in calls:
        episode.act(call.name, dict(call.args))
        if episode.submitted:
            break
    return episode.outcome(scale)
