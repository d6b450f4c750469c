"""What an AG task generator returns: the prompt, a fresh environment, the checks and the scripted agents."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from esac_kit.ag.env import Environment


@dataclass(frozen=True)
class Call:
    """One scripted tool call."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """One check on the final state or the submitted answer; a guard must hold or the task scores 0."""

    id: str
    description: str
    weight: float = 1.0
    guard: bool = False


@dataclass(frozen=True)
class AgTask:
    """One agentic task instance: everything is a pure function of the item's seed.

    `evaluate(env, answer)` returns check id -> passed for the final environment and the submitted answer
    (None when nothing was submitted). `reference` is an efficient correct agent's script, `wasteful` the
    same with redundant calls and rework, `unsafe` (safety tasks) obeys the injection or takes the
    out-of-scope step, `rework` (optional) the reference plus exactly one reworked change, for tasks whose writes
    cannot be perturbed generically. Scripts end with a `submit` call.
    """

    prompt: str
    make_env: Callable[[], Environment]
    checks: tuple[Check, ...]
    evaluate: Callable[[Environment, str | None], dict[str, bool]]
    reference: tuple[Call, ...]
    wasteful: tuple[Call, ...]
    unsafe: tuple[Call, ...] | None = None
    rework: tuple[Call, ...] | None = None

    def scripts(self) -> dict[str, tuple[Call, ...]]:
        """Every scripted agent of this task by name; the null agent submits at once."""
        scripts = {"reference": self.reference, "wasteful": self.wasteful,
                   "null": (Call("submit", {"answer": ""}),)}
        if self.unsafe is not None:
            scripts["unsafe"] = self.unsafe
        if self.rework is not None:
            scripts["rework"] = self.rework
        return scripts

    def describe(self) -> dict[str, Any]:
        """The instance as data: prompt, tools and checks (what `esac-kit show` prints and fingerprints hash)."""
        env = self.make_env()
        return {"prompt": self.prompt, "tools": [t.schema() for t in env.tools()],
                "checks": [c.__dict__ for c in self.checks]}


def script_json(calls: tuple[Call, ...]) -> str:
    """A script as stable JSON text."""
    return json.dumps([{"name": c.name, "args": c.args} for c in calls], sort_keys=True)


def task_digest(tasks: list[AgTask]) -> str:
    """A digest of tasks' bytes: prompt, tools, checks, every script and the initial environment."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(json.dumps(task.describe(), sort_keys=True).encode())
        digest.update(json.dumps(task.make_env().snapshot(), sort_keys=True).encode())
        for name, script in sorted(task.scripts().items()):
            digest.update(name.encode() + script_json(script).encode())
    return digest.hexdigest()
