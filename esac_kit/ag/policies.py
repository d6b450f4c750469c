"""Scripted agents (reference, wasteful, null, unsafe) served by the loopback server, so they drive the very
episode loop a model does, over either provider protocol."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from esac_kit.ag.task import AgTask, Call
from esac_kit.loopback import first_user_text

POLICIES = ("reference", "wasteful", "null", "unsafe")


def script_for(task: AgTask, policy: str) -> tuple[Call, ...]:
    """A task's script for a policy; tasks without an unsafe variant run the reference as their unsafe agent."""
    scripts = task.scripts()
    return scripts.get(policy) or scripts["reference"]


def scripted_answer(scripts: Mapping[str, tuple[Call, ...]]):
    """A loopback answer function: for the task whose prompt opens the conversation, the next call of its script."""

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        script = scripts.get(first_user_text(body))
        if script is None:
            return {"text": "I have no script for this task."}
        turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        call = script[min(turn, len(script) - 1)]
        return {"text": "", "tool_calls": [{"id": f"call_{turn}", "name": call.name, "arguments": call.args}]}

    return answer
