"""Model providers over async httpx, no SDKs: OpenAI-compatible Chat Completions and Anthropic Messages.

Every failure is classified here once (amendment 001 §8): a `ModelReply` is the model's own outcome and
is scored; a `TransientFailure` is infrastructure and is retried; a `ConfigError` stops the run at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import httpx

from esac_kit.answerers import ANSWERERS
from esac_kit.chat import ChatRequest, ModelRef, ModelReply, ToolCall, classify_outcome, utf8_safe
from esac_kit.errors import ConfigError
from esac_kit.model_params import ModelParams, openai_reasoning
from esac_kit.outcomes import TransientFailure, endpoint_answering
from esac_kit.streaming import AnthropicStream, OpenAIStream, ResponsesStream, read_stream

RETRYABLE_STATUS = {408, 409, 429}
CONFIG_STATUS = {400, 401, 403, 404}
KEY_ENV = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_URL = {"openai": "https://api.openai.com/v1", "openai-responses": "https://api.openai.com/v1",
               "anthropic": "https://api.anthropic.com/v1"}
ANTHROPIC_VERSION = "2023-06-01"
IDLE_TIMEOUT_S = 60.0  # a stream that sends no byte (not even a ping) this long is stalled: retried
VERDICT_TOOL = "verdict"  # the judge's forced tool on Anthropic: its input schema is the verdict schema
# How providers say a conversation outgrew the model's context window (OpenAI, Anthropic, llama.cpp, vLLM).
_CONTEXT_EXCEEDED = re.compile(r"context.length|context window|prompt is too long|maximum context", re.IGNORECASE)


@dataclass(frozen=True)
class ServedModels:
    """Models the kit serves itself on a loopback server, registered by a suite package under a prefix."""

    description: str
    names: tuple[str, ...]
    serve: Callable[[str, dict], AbstractContextManager[str]]  # (model, the run's tasks) -> the server's base URL


SERVED: dict[str, ServedModels] = {}


def register_served(prefix: str, models: ServedModels) -> None:
    """Accept `PREFIX:NAME` model strings served by `models.serve` (ESAC-AG registers its scripted agents)."""
    SERVED[prefix] = models


def parse_model(text: str) -> ModelRef:
    """Parse a model string or raise a ConfigError that shows the accepted forms."""
    if text == "local":
        return ModelRef("local", "SmolLM2-135M-Instruct")
    if text == "human":  # a person answers in the terminal (esac_kit.answerers)
        return ModelRef("human", "terminal")
    provider, sep, rest = text.partition(":")
    if provider in ("files", "replay"):  # an outside answerer: a folder of request/answer files, or a replay file
        if not rest:
            raise ConfigError(f"model string '{text}' names no {'folder' if provider == 'files' else 'file'}")
        return ModelRef(provider, rest)
    if provider in SERVED:
        served = SERVED[provider]
        if rest not in served.names:
            raise ConfigError(f"unknown {served.description} '{rest}': use one of {', '.join(served.names)}")
        return ModelRef(provider, rest)
    if not sep or provider not in KEY_ENV or not rest:
        served = "".join(f", {prefix}:NAME ({models.description}s)" for prefix, models in SERVED.items())
        raise ConfigError(f"unknown model '{text}': use local, openai:MODEL, openai-responses:MODEL, anthropic:MODEL "
                          f"(or add @BASE_URL), "
                          f"files:DIR, human, replay:FILE.jsonl{served}")
    model, _, base_url = rest.partition("@")
    if not model:
        raise ConfigError(f"model string '{text}' names no model")
    return ModelRef(provider, model, base_url.rstrip("/") or None)  # type: ignore[arg-type]


def api_key_for(ref: ModelRef) -> str:
    """The model's API key from its environment variable ('' where none is needed), or a ConfigError naming the
    variable when the provider's own endpoint needs a key that is not set (a model at its own URL may need none)."""
    env = KEY_ENV.get(ref.provider)
    key = os.environ.get(env, "") if env else ""
    if not key and env and ref.base_url is None:
        raise ConfigError(f"{ref.name} needs an API key: set {env}")
    return key


def model_title(text: str) -> str:
    """A recorded model string as a headline names the model (ModelRef.title), or as written if it does not parse
    here (a served prefix whose suite is not loaded)."""
    try:
        return parse_model(text).title
    except ConfigError:
        return text


class ContextExceeded(ConfigError):
    """HTTP 400 because the conversation outgrew the model's context: an AG episode ends on it as a budget."""


def retry_after_seconds(value: str | None) -> float | None:
    """Parse a Retry-After header given in seconds or as an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


class Provider:
    """A chat client for one model over a shared httpx.AsyncClient."""

    stream_assembler: type = OpenAIStream

    def __init__(self, ref: ModelRef, client: httpx.AsyncClient, base_url: str | None = None,
                 api_key: str | None = None, params: ModelParams | None = None,
                 idle_timeout_s: float = IDLE_TIMEOUT_S):
        self.ref = ref
        self.client = client
        self.params = params or ModelParams()
        self.idle_timeout_s = idle_timeout_s
        self.base_url = (base_url or ref.base_url or DEFAULT_URL.get(ref.provider, "")).rstrip("/")
        self._api_key = api_key if api_key is not None else api_key_for(ref)

    @property
    def endpoint(self) -> str:
        """The URL this provider posts to (never carries a key)."""
        raise NotImplementedError

    @property
    def streaming(self) -> bool:
        """Stream (SSE) unless -M stream=false; the embedded server answers whole."""
        if self.params.stream is not None:
            return self.params.stream
        return self.ref.provider in ("openai", "openai-responses", "anthropic")

    def stream_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload with streaming asked for (OpenAI also needs to be asked for the usage)."""
        return payload | {"stream": True}

    async def _send(self, payload: dict[str, Any], headers: dict[str, str], timeout_s: float,
                    time_budget_s: float | None) -> dict[str, Any]:
        """The reply body, streamed or whole; a stream idle for idle_timeout_s is a stalled connection (retried)."""
        if not self.streaming:
            return await self._post(payload, headers, timeout_s)
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout_s):
                async with self.client.stream("POST", self.endpoint, json=self.stream_payload(payload),
                                              headers=headers, timeout=httpx.Timeout(self.idle_timeout_s)) as response:
                    if response.status_code != 200 or "json" in response.headers.get("content-type", ""):
                        await response.aread()  # an error, or a server that answered whole: read it as one body
                        return self._body(response)
                    endpoint_answering()  # a live stream: the idle timeout guards it from here
                    return await read_stream(response, self.stream_assembler(self.endpoint), started, time_budget_s)
        except TimeoutError:
            raise TransientFailure("timeout", self.endpoint, detail=f"no reply within {timeout_s:.0f} s") from None
        except httpx.TimeoutException:
            raise TransientFailure("stall", self.endpoint, detail=f"no byte for {self.idle_timeout_s:g} s") from None
        except httpx.TransportError as error:
            raise TransientFailure("transport", self.endpoint, detail=type(error).__name__) from None

    async def _post(self, payload: dict[str, Any], headers: dict[str, str], timeout_s: float) -> dict[str, Any]:
        try:
            response = await self.client.post(self.endpoint, json=payload, headers=headers, timeout=timeout_s)
        except httpx.TimeoutException as error:
            raise TransientFailure("timeout", self.endpoint, detail=type(error).__name__) from None
        except httpx.TransportError as error:
            raise TransientFailure("transport", self.endpoint, detail=type(error).__name__) from None
        return self._body(response)

    def _body(self, response: httpx.Response) -> dict[str, Any]:
        """A whole response's JSON body, or the failure its status means (retried, or a configuration error)."""
        if response.status_code in RETRYABLE_STATUS or response.status_code >= 500:
            kind = "rate_limit" if response.status_code == 429 else "http_status"
            raise TransientFailure(kind, self.endpoint, response.status_code,
                                   retry_after=retry_after_seconds(response.headers.get("retry-after")))
        if response.status_code == 400 and _CONTEXT_EXCEEDED.search(_error_message(response)):
            raise ContextExceeded(f"{self.endpoint} answered HTTP 400 for {self.ref.name}: "
                                  f"{_error_message(response)}")
        if response.status_code in CONFIG_STATUS or response.status_code >= 300:
            raise ConfigError(f"{self.endpoint} answered HTTP {response.status_code} for {self.ref.name}: "
                              f"{_error_message(response)}")
        try:
            body = response.json()
        except ValueError:
            raise TransientFailure("malformed_body", self.endpoint, response.status_code,
                                   detail="response is not JSON") from None
        if not isinstance(body, dict):
            raise TransientFailure("malformed_body", self.endpoint, response.status_code, detail="not an object")
        return body

    async def chat(self, request: ChatRequest, timeout_s: float, time_budget_s: float | None = None) -> ModelReply:
        """Send one request and return the model's reply, or raise TransientFailure / ConfigError."""
        started = time.monotonic()
        body = await self._send(self.payload(request), self.headers, timeout_s, time_budget_s)
        return self.reply(request, body, time.monotonic() - started, time_budget_s)

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        """The API's request body for one chat request (not streamed; `_send` adds streaming)."""
        raise NotImplementedError

    @property
    def headers(self) -> dict[str, str]:
        """The API's authentication and version headers."""
        raise NotImplementedError

    def reply(self, request: ChatRequest, body: dict[str, Any], latency: float,
              time_budget_s: float | None) -> ModelReply:
        """The model's reply read from the API's response body (streamed bodies are assembled into the same)."""
        raise NotImplementedError

    def tool_turn(self, reply: ModelReply, results: list[tuple[ToolCall, str, bool]]) -> list[dict[str, Any]]:
        """The messages that append an assistant turn with tool calls and their results to the conversation."""
        raise NotImplementedError


def _error_message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
        message = error.get("message") if isinstance(error, dict) else str(error)
    except (ValueError, AttributeError):
        message = None
    return " ".join((message or response.reason_phrase or "no detail").split())[:200]


class OpenAIChat(Provider):
    """OpenAI-compatible Chat Completions: OpenAI, vLLM, llama.cpp's server, Ollama."""

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/chat/completions"

    def stream_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload | {"stream": True, "stream_options": {"include_usage": True}}

    @property
    def max_tokens_field(self) -> str:
        """`max_completion_tokens` for OpenAI's API and reasoning models (which refuse `max_tokens`); `max_tokens`
        for the other OpenAI-compatible servers (llama.cpp, Ollama, vLLM), unless -M max_tokens_field says."""
        if self.params.max_tokens_field:
            return self.params.max_tokens_field
        if self.ref.provider == "local":
            return "max_tokens"
        official = self.ref.base_url is None
        return "max_completion_tokens" if official or openai_reasoning(self.ref, self.params) else "max_tokens"

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        messages = list(request.messages)
        if request.system:
            messages.insert(0, {"role": "system", "content": request.system})
        payload: dict[str, Any] = {"model": self.ref.model, "messages": messages, self.max_tokens_field:
                                   request.max_tokens}
        reasoning = openai_reasoning(self.ref, self.params)
        if not reasoning:  # reasoning models take only the default temperature: sending one is an HTTP 400
            payload["temperature"] = request.temperature
        if reasoning and self.params.reasoning_effort:
            payload["reasoning_effort"] = self.params.reasoning_effort
        payload |= {k: v for k, v in (("top_p", self.params.top_p), ("seed", self.params.seed)) if v is not None}
        if request.tools:
            payload["tools"] = list(request.tools)
        if request.json_schema is not None:
            # llama.cpp's server enforces this schema by grammar; OpenAI enforces a strict json_schema.
            payload["response_format"] = ({"type": "json_object", "schema": request.json_schema}
                                          if self.ref.provider == "local" else
                                          {"type": "json_schema", "json_schema": {
                                              "name": "verdict", "strict": True, "schema": request.json_schema}})
        payload.update(request.extra)
        return payload

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def reply(self, request: ChatRequest, body: dict[str, Any], latency: float,
              time_budget_s: float | None) -> ModelReply:
        try:
            choice = body["choices"][0]
            message = choice["message"]
            text = utf8_safe(message.get("content") or "")
            calls = tuple(ToolCall(c.get("id") or f"call_{n}", utf8_safe(c["function"]["name"]),
                                   utf8_safe(c["function"].get("arguments") or "{}"))
                          for n, c in enumerate(message.get("tool_calls") or []))
            usage = body.get("usage") or {}
            finish = choice.get("finish_reason")
            refused = bool(message.get("refusal")) or finish == "content_filter"
            details = (usage.get("completion_tokens_details") or {}, usage.get("prompt_tokens_details") or {})
            return ModelReply(text, classify_outcome(text, finish, refused, latency, time_budget_s, bool(calls)),
                              int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                              latency, finish, calls, _reported(usage, "prompt_tokens", "completion_tokens"),
                              reasoning_tokens=int(details[0].get("reasoning_tokens") or 0),
                              cache_read_tokens=int(details[1].get("cached_tokens") or 0),
                              thinking=utf8_safe(message.get("reasoning_content") or ""))
        except (KeyError, IndexError, TypeError, AttributeError) as error:
            raise TransientFailure("malformed_body", self.endpoint, detail=f"missing {error}") from None

    def tool_turn(self, reply: ModelReply, results: list[tuple[ToolCall, str, bool]]) -> list[dict[str, Any]]:
        calls = [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                 for call, _, _ in results]
        return [{"role": "assistant", "content": reply.text, "tool_calls": calls},
                *({"role": "tool", "tool_call_id": call.id, "content": text} for call, text, _ in results)]


class AnthropicMessages(Provider):
    """Anthropic Messages API, with native tool use."""

    stream_assembler = AnthropicStream

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/messages"

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.ref.model, "messages": list(request.messages),
                                   "max_tokens": request.max_tokens, "temperature": request.temperature}
        if request.system:
            payload["system"] = request.system
        if request.tools:
            payload["tools"] = [_anthropic_tool(t) for t in request.tools]
        if self.params.thinking_budget:  # the run checked the API's rules up front (esac_kit.model_params)
            payload["thinking"] = {"type": "enabled", "budget_tokens": self.params.thinking_budget}
        payload |= {k: v for k, v in (("top_p", self.params.top_p),) if v is not None}
        if request.json_schema is not None:
            # A structured verdict: one forced tool whose input schema is the verdict schema, so the API
            # enforces the shape instead of the prompt asking for it.
            payload["tools"] = [{"name": VERDICT_TOOL, "description": "Record your verdict.",
                                 "input_schema": request.json_schema}]
            payload["tool_choice"] = {"type": "tool", "name": VERDICT_TOOL}
        payload.update(request.extra)
        return payload

    @property
    def headers(self) -> dict[str, str]:
        return {"x-api-key": self._api_key, "anthropic-version": ANTHROPIC_VERSION}

    def reply(self, request: ChatRequest, body: dict[str, Any], latency: float,
              time_budget_s: float | None) -> ModelReply:
        try:
            blocks = body["content"]
            text = utf8_safe("".join(b.get("text", "") for b in blocks if b.get("type") == "text"))
            calls = tuple(ToolCall(b["id"], utf8_safe(b["name"]), json.dumps(b.get("input", {})))
                          for b in blocks if b.get("type") == "tool_use")
            if request.json_schema is not None:  # the verdict arrives as the forced tool's input
                text = next((c.arguments for c in calls if c.name == VERDICT_TOOL), text)
                calls = ()
            thinking = utf8_safe("".join(b.get("thinking", "") for b in blocks if b.get("type") == "thinking"))
            usage = body.get("usage") or {}
            cache_read = int(usage.get("cache_read_input_tokens") or 0)
            cache_write = int(usage.get("cache_creation_input_tokens") or 0)
            stop = body.get("stop_reason")
            # Thinking blocks go back unchanged in a tool loop (signatures included), or the API refuses the turn
            keep = any(b.get("type") in ("thinking", "redacted_thinking") for b in blocks)
            return ModelReply(text, classify_outcome(text, stop, stop == "refusal", latency, time_budget_s,
                                                     bool(calls)),
                              int(usage.get("input_tokens") or 0) + cache_read + cache_write,
                              int(usage.get("output_tokens") or 0), latency, stop, calls,
                              _reported(usage, "input_tokens", "output_tokens"), cache_read_tokens=cache_read,
                              cache_write_tokens=cache_write, thinking=thinking,
                              raw_turn=tuple(blocks) if keep else ())
        except (KeyError, TypeError, AttributeError) as error:
            raise TransientFailure("malformed_body", self.endpoint, detail=f"missing {error}") from None

    def tool_turn(self, reply: ModelReply, results: list[tuple[ToolCall, str, bool]]) -> list[dict[str, Any]]:
        if reply.raw_turn:  # with thinking on, the assistant turn goes back exactly as it came
            content = list(reply.raw_turn)
        else:
            content = [{"type": "text", "text": reply.text}] if reply.text else []
            content += [{"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call.arguments)}
                        for call, _, _ in results]
        outcomes = [{"type": "tool_result", "tool_use_id": call.id, "content": text, "is_error": error}
                    for call, text, error in results]
        return [{"role": "assistant", "content": content}, {"role": "user", "content": outcomes}]


class OpenAIResponses(Provider):
    """OpenAI's Responses API: native function tools, and reasoning items carried across the turns of an episode
    (stateless: `store` is off, so each turn sends the reasoning items back, with their encrypted content)."""

    stream_assembler = ResponsesStream

    @property
    def endpoint(self) -> str:
        return f"{self.base_url}/responses"

    def payload(self, request: ChatRequest) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.ref.model, "input": [_responses_item(m) for m in request.messages],
                                   "max_output_tokens": request.max_tokens, "store": False}
        reasoning = openai_reasoning(self.ref, self.params)
        if reasoning:
            payload["include"] = ["reasoning.encrypted_content"]
            if self.params.reasoning_effort:
                payload["reasoning"] = {"effort": self.params.reasoning_effort}
        else:
            payload["temperature"] = request.temperature
        payload |= {k: v for k, v in (("top_p", self.params.top_p),) if v is not None}
        if request.system:
            payload["instructions"] = request.system
        if request.tools:
            payload["tools"] = [_responses_tool(t) for t in request.tools]
        if request.json_schema is not None:
            payload["text"] = {"format": {"type": "json_schema", "name": "verdict", "strict": True,
                                          "schema": request.json_schema}}
        payload.update(request.extra)
        return payload

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def reply(self, request: ChatRequest, body: dict[str, Any], latency: float,
              time_budget_s: float | None) -> ModelReply:
        try:
            output = body["output"]
            text = utf8_safe("".join(part.get("text", "") for item in output if item.get("type") == "message"
                                     for part in item.get("content", []) if part.get("type") == "output_text"))
            refused = any(part.get("type") == "refusal" for item in output if item.get("type") == "message"
                          for part in item.get("content", []))
            calls = tuple(ToolCall(item["call_id"], utf8_safe(item["name"]), utf8_safe(item.get("arguments") or "{}"))
                          for item in output if item.get("type") == "function_call")
            usage = body.get("usage") or {}
            incomplete = (body.get("incomplete_details") or {}).get("reason")
            finish = "length" if incomplete == "max_output_tokens" else incomplete or body.get("status")
            summary = "".join(part.get("text", "") for item in output if item.get("type") == "reasoning"
                              for part in item.get("summary", []))
            return ModelReply(text, classify_outcome(text, finish, refused, latency, time_budget_s, bool(calls)),
                              int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0), latency,
                              finish, calls, _reported(usage, "input_tokens", "output_tokens"),
                              reasoning_tokens=int((usage.get("output_tokens_details") or {}).get("reasoning_tokens")
                                                   or 0),
                              cache_read_tokens=int((usage.get("input_tokens_details") or {}).get("cached_tokens")
                                                    or 0),
                              thinking=utf8_safe(summary), raw_turn=tuple(output))
        except (KeyError, TypeError, AttributeError) as error:
            raise TransientFailure("malformed_body", self.endpoint, detail=f"missing {error}") from None

    def tool_turn(self, reply: ModelReply, results: list[tuple[ToolCall, str, bool]]) -> list[dict[str, Any]]:
        # The output items go back as they came (reasoning items first), then one output per call
        return [*reply.raw_turn, *({"type": "function_call_output", "call_id": call.id, "output": text}
                                   for call, text, _ in results)]


def _responses_item(message: dict[str, Any]) -> dict[str, Any]:
    """A conversation entry as a Responses input item: chat messages keep their role, items pass as they are."""
    return message if "type" in message else {"role": message["role"], "content": message["content"]}


def _responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI Chat function tool in the Responses API's flat shape."""
    function = tool.get("function", tool)
    return {"type": "function", "name": function["name"], "description": function.get("description", ""),
            "parameters": function.get("parameters", {"type": "object", "properties": {}})}


def _input(arguments: str) -> dict[str, Any]:
    """A tool call's arguments as the object Anthropic echoes back (they arrived as one)."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _anthropic_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """Convert an OpenAI-style function tool into Anthropic's tool shape."""
    function = tool.get("function", tool)
    return {"name": function["name"], "description": function.get("description", ""),
            "input_schema": function.get("parameters", {"type": "object", "properties": {}})}


def make_provider(ref: ModelRef, client: httpx.AsyncClient, base_url: str | None = None,
                  wait_for_time_budget: bool = True, params: ModelParams | None = None,
                  idle_timeout_s: float = IDLE_TIMEOUT_S) -> Provider:
    """The provider client for a model reference (`local` speaks the OpenAI protocol to the embedded server;
    `files:`, `human` and `replay:` are outside answerers with the same interface)."""
    if ref.provider in ANSWERERS:
        return ANSWERERS[ref.provider](ref, wait_for_time_budget)
    if ref.provider == "anthropic":
        return AnthropicMessages(ref, client, base_url, params=params, idle_timeout_s=idle_timeout_s)
    if ref.provider == "openai-responses":
        return OpenAIResponses(ref, client, base_url, params=params, idle_timeout_s=idle_timeout_s)
    return OpenAIChat(ref, client, base_url, params=params, idle_timeout_s=idle_timeout_s)


def _reported(usage: dict[str, Any], *fields: str) -> bool:
    """Whether the API reported usage: every token field present and not all zero (amendment 001 §1)."""
    return all(isinstance(usage.get(f), int) for f in fields) and any(usage[f] for f in fields)
