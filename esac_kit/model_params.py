"""Model parameters (`-M KEY=VALUE`): what a run asks of the evaluated model beyond the prompt, and the rules each API
states for them, checked before the first request so a wrong one is a one-line configuration error (exit 2)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from esac_kit.chat import ModelRef
from esac_kit.errors import ConfigError

OPENAI_PROTOCOLS = ("openai", "openai-responses")  # Chat Completions and the Responses API
ANTHROPIC_MIN_THINKING = 1024  # the Messages API's smallest `budget_tokens`

# OpenAI models that reason before answering: they take `reasoning_effort` and only the default temperature
# (Chat Completions answers a non-default one with HTTP 400). From the model name, as Inspect decides it;
# `-M reasoning=true|false` overrides the table for a model it misjudges.
_OPENAI_REASONING = re.compile(r"^(o\d|gpt-5(?!.*-chat)|codex)", re.IGNORECASE)


class ModelParams(BaseModel):
    """The evaluated model's parameters; None leaves a parameter to the API's default (and out of the request)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None  # OpenAI
    thinking_budget: int | None = Field(default=None, ge=ANTHROPIC_MIN_THINKING)  # Anthropic extended thinking
    top_p: float | None = Field(default=None, gt=0, le=1)
    seed: int | None = None
    stream: bool | None = None  # None: stream where the endpoint supports it
    reasoning: bool | None = None  # OpenAI: overrides the model-family table (a reasoning model or not)
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] | None = None  # OpenAI-compatible servers

    def recorded(self) -> dict[str, Any]:
        """The parameters set, as run.json, the report and the cache key hold them."""
        return self.model_dump(exclude_none=True)


def _value(text: str) -> Any:
    """A -M value as the type it spells: true/false, an integer, a number, else the text."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_model_params(pairs: list[str] | None) -> ModelParams:
    """Parse `-M KEY=VALUE` pairs, or raise a one-line ConfigError naming the bad one and the accepted keys."""
    values: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"-M {pair}: write KEY=VALUE (keys: {', '.join(ModelParams.model_fields)})")
        if key not in ModelParams.model_fields:
            raise ConfigError(f"-M {pair}: unknown model parameter '{key}' (keys: "
                              f"{', '.join(ModelParams.model_fields)})")
        values[key] = _value(text)
    try:
        return ModelParams(**values)
    except ValidationError as error:
        first = error.errors()[0]
        raise ConfigError(f"-M {first['loc'][0]}={values.get(first['loc'][0])}: {first['msg']}") from None


def openai_reasoning(ref: ModelRef, params: ModelParams) -> bool:
    """Whether an OpenAI-protocol model reasons (takes reasoning_effort and only the default temperature)."""
    if params.reasoning is not None:
        return params.reasoning
    return ref.provider in OPENAI_PROTOCOLS and bool(_OPENAI_REASONING.match(ref.model))


def check_model_params(ref: ModelRef, params: ModelParams, temperature: float, output_budget: int) -> None:
    """Raise a one-line ConfigError when the parameters break a rule of the model's API (before any request)."""
    anthropic = ref.provider == "anthropic"
    if params.thinking_budget is not None:
        if not anthropic:
            raise ConfigError(f"-M thinking_budget is Anthropic's extended thinking; {ref.name} takes "
                              f"-M reasoning_effort instead")
        if temperature != 1.0:
            raise ConfigError(f"-M thinking_budget: Anthropic's extended thinking takes temperature 1 only "
                              f"(--temperature {temperature:g} given)")
        if params.thinking_budget >= output_budget:
            raise ConfigError(f"-M thinking_budget={params.thinking_budget}: the thinking budget must be below the "
                              f"output budget ({output_budget} tokens), which it is part of")
        if params.top_p is not None and params.top_p < 0.95:
            raise ConfigError(f"-M top_p={params.top_p:g}: with extended thinking Anthropic takes top_p from 0.95 to 1")
    if params.reasoning_effort is not None and anthropic:
        raise ConfigError(f"-M reasoning_effort is OpenAI's; {ref.name} takes -M thinking_budget instead")
    if ref.provider in (*OPENAI_PROTOCOLS, "local") and openai_reasoning(ref, params):
        if params.top_p is not None:
            raise ConfigError(f"-M top_p: {ref.model} is a reasoning model, which takes no top_p")
        if temperature != 1.0:
            raise ConfigError(f"--temperature {temperature:g}: {ref.model} is a reasoning model, which takes only "
                              f"the default temperature 1 (or pass -M reasoning=false if it is not one)")
    elif params.reasoning_effort is not None:
        raise ConfigError(f"-M reasoning_effort: {ref.name} is not a reasoning model (pass -M reasoning=true if "
                          f"it is one)")


def sent_temperature(ref: ModelRef, params: ModelParams, temperature: float) -> float | None:
    """The temperature the model's requests carry: none for reasoning models (the API's default 1 applies)."""
    return None if ref.provider in (*OPENAI_PROTOCOLS, "local") and openai_reasoning(ref, params) else temperature
