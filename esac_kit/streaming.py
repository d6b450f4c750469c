"""Server-sent events for both chat APIs: a stream read with an idle timeout, assembled into the body the
non-streaming API would have returned, so one parser reads both.

A stream that sends no byte (not even a ping) for the idle timeout is a stalled connection: infrastructure,
retried. A stream still flowing when the model's time budget ends is the model's failure (amendment 001 §8): the
reply so far is returned and classed by its latency.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from esac_kit.outcomes import TransientFailure


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str | None, str]]:
    """(event name, data) pairs from the lines of an SSE stream; comments and keep-alives are skipped."""
    event, data = None, []
    async for line in lines:
        if line == "":
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if data:
        yield event, "\n".join(data)


def _load(endpoint: str, data: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise TransientFailure("malformed_body", endpoint, detail="a stream event is not JSON") from None
    if not isinstance(value, dict):
        raise TransientFailure("malformed_body", endpoint, detail="a stream event is not an object")
    return value


class OpenAIStream:
    """Chat Completions chunks (`data: {...}` ... `data: [DONE]`) assembled into a chat.completion body."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish: str | None = None
        self.usage: dict[str, Any] = {}
        self.done = False

    def feed(self, event: str | None, data: str) -> None:
        if data.strip() == "[DONE]":
            self.done = True
            return
        chunk = _load(self.endpoint, data)
        if "error" in chunk:  # an error mid-stream: the server's side failed
            raise TransientFailure("http_status", self.endpoint, detail="the stream carried an error event")
        self.usage = chunk.get("usage") or self.usage
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            self.content.append(delta.get("content") or "")
            self.reasoning.append(delta.get("reasoning_content") or "")
            self.refusal.append(delta.get("refusal") or "")
            for call in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(call.get("index", 0), {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            self.finish = choice.get("finish_reason") or self.finish

    def body(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content),
                                   "reasoning_content": "".join(self.reasoning), "refusal": "".join(self.refusal)}
        if self.calls:
            message["tool_calls"] = [{"id": c["id"], "type": "function",
                                      "function": {"name": c["name"], "arguments": c["arguments"]}}
                                     for _, c in sorted(self.calls.items())]
        return {"choices": [{"message": message, "finish_reason": self.finish}], "usage": self.usage}


class AnthropicStream:
    """Messages API events (message_start, content_block_*, message_delta, ping) assembled into a message body."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage: dict[str, Any] = {}
        self.stop: str | None = None
        self.done = False

    def feed(self, event: str | None, data: str) -> None:
        message = _load(self.endpoint, data)
        kind = message.get("type", event)
        if kind == "error":  # e.g. overloaded_error mid-stream
            error = message.get("error") or {}
            raise TransientFailure("http_status", self.endpoint, detail=f"stream error {error.get('type')}")
        if kind == "message_start":
            self.usage |= (message.get("message") or {}).get("usage") or {}
        elif kind == "content_block_start":
            index = message["index"]
            self.blocks[index] = dict(message["content_block"])
            self.json_parts[index] = []
        elif kind == "content_block_delta":
            index, delta = message["index"], message["delta"]
            block = self.blocks.setdefault(index, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif delta.get("type") == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.get("signature", "")
            elif delta.get("type") == "input_json_delta":
                self.json_parts.setdefault(index, []).append(delta.get("partial_json", ""))
        elif kind == "message_delta":
            self.stop = (message.get("delta") or {}).get("stop_reason") or self.stop
            self.usage |= message.get("usage") or {}
        elif kind == "message_stop":
            self.done = True

    def body(self) -> dict[str, Any]:
        blocks = []
        for index, block in sorted(self.blocks.items()):
            if block.get("type") == "tool_use":
                text = "".join(self.json_parts.get(index, []))
                try:
                    block = block | {"input": json.loads(text) if text else block.get("input", {})}
                except ValueError:  # cut off mid-arguments by the time budget: an invalid call
                    block = block | {"input": {}}
            blocks.append(block)
        return {"content": blocks, "stop_reason": self.stop, "usage": self.usage}


class ResponsesStream:
    """Responses API events: deltas keep the connection alive, the terminal event carries the whole response."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.text: list[str] = []
        self.response: dict[str, Any] | None = None
        self.done = False

    def feed(self, event: str | None, data: str) -> None:
        message = _load(self.endpoint, data)
        kind = message.get("type", event)
        if kind == "response.output_text.delta":
            self.text.append(message.get("delta", ""))
        elif kind in ("response.completed", "response.incomplete"):
            self.response, self.done = message["response"], True
        elif kind in ("response.failed", "error"):
            raise TransientFailure("http_status", self.endpoint, detail=f"stream event {kind}")

    def body(self) -> dict[str, Any]:
        if self.response is not None:
            return self.response
        # Cut by the time budget: the text so far
        return {"output": [{"type": "message", "content": [{"type": "output_text", "text": "".join(self.text)}]}],
                "status": "incomplete", "usage": {}}


async def read_stream(response, assembler, started: float, time_budget_s: float | None) -> dict[str, Any]:
    """Feed a response's events to an assembler until the stream ends or the model's time budget is spent."""
    async for event, data in sse_events(response.aiter_lines()):
        assembler.feed(event, data)
        if assembler.done:
            break
        if time_budget_s is not None and time.monotonic() - started > time_budget_s:
            break  # the model's own budget: the reply so far, classed as time_budget by its latency
    else:
        if not assembler.done:
            raise TransientFailure("transport", assembler.endpoint, detail="the stream ended before its last event")
    return assembler.body()
