"""The failure taxonomy of amendment 001 §8 in one place: what a model did (scored by the task's rules, never
retried), how an AG episode ended, and the infrastructure failures that are retried and never scored."""

from __future__ import annotations

from dataclasses import dataclass
from contextvars import ContextVar
from typing import Literal

# One reply's outcome: the model's own, scored by the task (amendment 001 §8).
ReplyOutcome = Literal["answered", "empty", "refusal", "inability", "output_budget", "time_budget"]
# How an AG episode ended; the budgets are the model's to respect, so running out is a model failure.
EpisodeEnd = Literal["submit", "final_message", "step_budget", "token_budget", "time_budget", "context_budget"]
# An observation's outcome: a reply's, or the budget an episode ran out of.
ModelOutcome = Literal["answered", "empty", "refusal", "inability", "output_budget", "time_budget", "step_budget",
                       "token_budget", "context_budget"]
# Evaluator-side failures: retried under identical conditions, and a persisting one aborts the run (§8).
InfrastructureKind = Literal["timeout", "stall", "transport", "rate_limit", "http_status", "malformed_body",
                             "invalid_verdict", "sandbox", "environment"]


@dataclass
class TransientFailure(Exception):
    """An infrastructure failure: retried under identical conditions, never scored (amendment 001 §8)."""

    kind: InfrastructureKind
    endpoint: str
    status: int | None = None
    detail: str = ""
    retry_after: float | None = None

    def __str__(self) -> str:
        status = f" HTTP {self.status}" if self.status else ""
        return f"{self.kind}{status} from {self.endpoint}" + (f": {self.detail}" if self.detail else "")


# The deadline of an attempt made during an outage (esac_kit.runner.with_retries): it bounds the attempt in flight,
# and a provider lifts it once the endpoint starts answering (a stream's first event): from then on the stream's
# idle timeout guards it, and a slow but live answer is the model's time, not the outage's.
IN_FLIGHT_DEADLINE: ContextVar = ContextVar("in_flight_deadline", default=None)
OUTAGE_LEFT: ContextVar = ContextVar("outage_left", default=None)  # () -> seconds of outage budget left


def endpoint_answering() -> None:
    """Called by a provider when the endpoint has begun to answer: the outage deadline no longer applies."""
    deadline = IN_FLIGHT_DEADLINE.get()
    if deadline is not None:
        deadline.reschedule(None)
