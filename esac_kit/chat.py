"""What one model call is, whoever answers it: the model reference, the request, the reply and its outcome class
(amendment 001 §8); HTTP providers (esac_kit.providers) and outside answerers (esac_kit.answerers) share them."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from esac_kit.outcomes import ReplyOutcome

CHARS_PER_TOKEN = 4  # the documented estimate wherever tokens are not counted by the provider


def estimate_tokens(material: object) -> int:
    """Tokens of text or JSON-able material at CHARS_PER_TOKEN characters a token."""
    text = material if isinstance(material, str) else json.dumps(material, sort_keys=True)
    return math.ceil(len(text) / CHARS_PER_TOKEN)


_INABILITY = re.compile(r"^\W*(i('| a)m (not able|unable)|i can(no|')t|i cannot|sorry, (but )?i can)", re.IGNORECASE)


@dataclass(frozen=True)
class ModelRef:
    """A parsed model string: `openai:MODEL`, `anthropic:MODEL`, either with `@BASE_URL`, or `local`."""

    provider: str  # openai | anthropic | local | files | human | replay, or a served prefix such as `scripted`
    model: str
    base_url: str | None = None

    @property
    def name(self) -> str:
        """The model string as written, without secrets (URLs carry none)."""
        if self.provider in ("local", "human"):
            return self.provider
        return f"{self.provider}:{self.model}" + (f"@{self.base_url}" if self.base_url else "")

    @property
    def title(self) -> str:
        """The model as a headline names it: 'SmolLM2-135M-Instruct (local)', 'gpt-4o (openai)'; no URL."""
        return f"{self.model} ({self.provider})"

    @property
    def slug(self) -> str:
        """A folder-safe name for report paths."""
        return re.sub(r"[^A-Za-z0-9._-]+", "_", self.provider + "-" + self.model).strip("_")


@dataclass(frozen=True)
class ToolCall:
    """One native tool call requested by the model."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    """A valid reply from the model: its text, tool calls, outcome class and usage."""

    text: str
    outcome: ReplyOutcome
    tokens_in: int
    tokens_out: int
    latency_s: float
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage_reported: bool = True  # False when the API returned no usage or the tokens are an estimate
    reasoning_tokens: int = 0  # of tokens_out: billed reasoning (OpenAI reasoning_tokens, Anthropic thinking)
    cache_read_tokens: int = 0  # of tokens_in: read from the provider's prompt cache
    cache_write_tokens: int = 0  # of tokens_in: written to it
    thinking: str = ""  # the model's visible thinking, kept apart from the answer text (never extracted from)
    # The assistant turn exactly as the API returned it, for APIs that require it back unchanged in a tool loop
    # (Anthropic thinking blocks with their signatures; OpenAI Responses reasoning items)
    raw_turn: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ChatRequest:
    """Everything that defines one model call; its JSON form is the response cache's key material."""

    messages: tuple[dict[str, Any], ...]
    max_tokens: int
    temperature: float
    tools: tuple[dict[str, Any], ...] = ()
    json_schema: dict[str, Any] | None = None
    system: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def classify_outcome(text: str, finish_reason: str | None, refused: bool, latency_s: float,
                     time_budget_s: float | None, tool_calls: bool = False) -> ReplyOutcome:
    """Classify a valid reply into the model outcomes of amendment 001 §8."""
    if time_budget_s is not None and latency_s > time_budget_s:
        return "time_budget"
    if refused:
        return "refusal"
    if finish_reason in ("length", "max_tokens"):
        return "output_budget"
    if not text.strip() and not tool_calls:
        return "empty"
    if _INABILITY.match(text) and len(text) < 400:
        return "inability"
    return "answered"


def utf8_safe(text: str) -> str:
    """A model's text with anything UTF-8 cannot carry (a lone surrogate from a `\\ud8c1` escape) replaced."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
