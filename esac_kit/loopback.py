"""A real loopback HTTP server that speaks the OpenAI and Anthropic chat protocols, replays scripted answers
and injects faults; tests, benchmarks and reference policies drive the kit against it."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[dict[str, Any]], "str | dict[str, Any]"]
Fault = Callable[[dict[str, Any], int], "str | None"]
FAULTS = ("429", "500", "503", "reset", "stall", "stall_stream", "malformed", "truncated", "400", "401", "404",
          "context")


def user_texts(body: dict[str, Any]) -> list[str]:
    """Every user message's text, in order, in either protocol."""
    texts = []
    for message in body.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            texts.append(content or "")
    return texts


def request_text(body: dict[str, Any]) -> str:
    """The last user message's text in either protocol."""
    return (user_texts(body) or [""])[-1]


def first_user_text(body: dict[str, Any]) -> str:
    """The first user message's text in either protocol: an AG episode's task prompt."""
    return (user_texts(body) or [""])[0]


def transient_faults(rate: float, kinds: tuple[str, ...] = ("429", "500", "503", "reset", "malformed", "truncated"),
                     max_failures: int = 2) -> Fault:
    """Fail a deterministic share of distinct requests on their first attempts, each with a fault kind."""

    def fault(body: dict[str, Any], attempt: int) -> str | None:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).digest()
        failures = 1 + digest[1] % max_failures
        if digest[0] / 256 < rate and attempt <= failures:
            return kinds[(digest[2] + attempt) % len(kinds)]
        return None

    return fault


def outage(after_requests: int, lasting_s: float, kind: str = "503") -> Fault:
    """Answer normally for a number of requests, then fail every request for `lasting_s` seconds (forever: inf)."""
    state = {"seen": 0, "began": None}
    lock = threading.Lock()

    def fault(body: dict[str, Any], attempt: int) -> str | None:
        with lock:
            state["seen"] += 1
            if state["seen"] <= after_requests:
                return None
            state["began"] = state["began"] or time.monotonic()
            return kind if time.monotonic() - state["began"] < lasting_s else None

    return fault


class LoopbackServer:
    """Serves /v1/chat/completions, /v1/messages and /v1/models on 127.0.0.1 on a free port."""

    def __init__(self, answer: Answer, fault: Fault | None = None, latency_s: float = 0.0, stall_s: float = 5.0,
                 event_delay_s: float = 0.0, batch_s: float = 0.3, batch_errors: Callable[[str], bool] | None = None):
        self.answer = answer
        self.fault = fault
        self.latency_s = latency_s
        self.stall_s = stall_s
        self.event_delay_s = event_delay_s  # pause between streamed events: a slow model that is still writing
        self.batch_s = batch_s  # how long a batch takes to end after it is created
        self.batch_errors = batch_errors  # custom_id -> True: that request errors on its first batch (partial failure)
        self.requests = 0
        self.faults: Counter = Counter()
        self.paths: Counter = Counter()
        self.rejected: list[dict] = []  # the 400 bodies sent for requests that broke an API rule
        self.last_reply_at: float | None = None  # time.monotonic() once a reply's last byte is written
        self.issued: dict[str, str | None] = {}  # Responses API: function_call item id -> its reasoning item's id
        self.batches = BatchEmulator(self)  # OpenAI's Batch API and Anthropic's Message Batches API
        self._attempts: Counter = Counter()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                if "/batches/" in self.path or "/files/" in self.path:
                    status, payload = server.batches.get(self.path, server.url)
                    if isinstance(payload, str):
                        return self._raw(status, payload.encode(), {"Content-Type": "application/jsonl"})
                    return self._send(status, payload)
                self._send(200, {"object": "list", "data": [{"id": "loopback"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if self.path.endswith(("/files", "/batches")):
                    status, payload = server.batches.post(self.path, raw, self.headers.get("content-type", ""),
                                                          server.url)
                    return self._send(status, payload)
                body = json.loads(raw or b"{}")
                # Attempts are counted per distinct request only when faults need them.
                key = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest() if server.fault else ""
                with server._lock:
                    server.requests += 1
                    server.paths[self.path] += 1
                    server._attempts[key] += 1
                    attempt = server._attempts[key]
                if server.latency_s:
                    time.sleep(server.latency_s)
                kind = server.fault(body, attempt) if server.fault else None
                stall_mid = kind == "stall_stream" and bool(body.get("stream"))
                if stall_mid:  # answered below: the stream starts, then goes silent mid-answer
                    kind = None
                    with server._lock:
                        server.faults["stall_stream"] += 1
                elif kind == "stall_stream":
                    kind = "stall"
                if kind:
                    with server._lock:
                        server.faults[kind] += 1
                    return self._fault(kind)
                broken = api_rule_broken(self.path, body)
                if broken:  # what the real API answers to a request that breaks its rules
                    with server._lock:
                        server.rejected.append(broken)
                    return self._send(400, broken)
                if self.path.endswith("/responses"):
                    return self._responses(body, stall_mid)
                reply = server.answer(body)
                reply = {"text": reply} if isinstance(reply, str) else reply
                anthropic = self.path.endswith("/messages")
                whole = _anthropic_body(body, reply) if anthropic else _openai_body(body, reply)
                if not body.get("stream"):
                    return self._send(200, whole)
                events = _anthropic_events(whole) if anthropic else _openai_events(whole, body)
                self._stream(events, 2 if stall_mid else None)

            def _responses(self, body: dict[str, Any], stall_mid: bool) -> None:
                """The Responses API: its rules on tool-loop items, then the answer as output items."""
                with server._lock:
                    broken = _responses_rule_broken(body, server.issued)
                    if broken:
                        server.rejected.append(broken)
                if broken:
                    return self._send(400, broken)
                reply = server.answer(responses_as_chat(body))
                reply = {"text": reply} if isinstance(reply, str) else reply
                with server._lock:
                    whole = _responses_body(body, reply, server.issued)
                if not body.get("stream"):
                    return self._send(200, whole)
                self._stream(_responses_events(whole), 2 if stall_mid else None)

            def _stream(self, events: list[str], stall_after: int | None) -> None:
                """Server-sent events, then close; `stall_after` events in, the stream goes silent instead."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for n, event in enumerate(events):
                    if n == stall_after:
                        time.sleep(server.stall_s)
                        break
                    self.wfile.write(event.encode())
                    self.wfile.flush()
                    time.sleep(server.event_delay_s)
                server.last_reply_at = time.monotonic()
                self.close_connection = True

            def _fault(self, kind: str) -> None:
                if kind == "context":
                    return self._send(400, {"error": {"message": "This model's maximum context length is 8192 "
                                                                 "tokens; the request has more."}})
                if kind in ("429", "500", "503", "400", "401", "404"):
                    headers = {"Retry-After": "0"} if kind == "429" else {}
                    return self._send(int(kind), {"error": {"message": f"injected {kind}"}}, headers)
                if kind == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return None
                if kind == "stall":
                    time.sleep(server.stall_s)
                    self.close_connection = True
                    return None
                if kind == "malformed":
                    return self._raw(200, b"{\"choices\": [ this is not json")
                if kind == "truncated":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "4000")
                    self.end_headers()
                    self.wfile.write(b"{\"choices\": [{\"message\": {\"content\": \"par")
                    self.wfile.flush()
                    self.close_connection = True
                    return None
                raise ValueError(f"unknown fault {kind}")

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                self._raw(status, json.dumps(payload).encode(), headers)

            def _raw(self, status: int, data: bytes, headers: dict | None = None) -> None:
                headers = dict(headers or {})
                self.send_response(status)
                self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                server.last_reply_at = time.monotonic()  # benchmarks time what a client does after its last reply

        return Handler


# ---------------------------------------------------------------- the real APIs' rules, enforced
# OpenAI's reasoning models (o-series, GPT-5 except -chat) and Anthropic's extended thinking, as their API references
# and their error messages state them; a loopback that accepted what the real API refuses would prove nothing.
OPENAI_REASONING = re.compile(r"^(o\d|gpt-5(?!.*-chat))")


def _openai_error(message: str, param: str | None, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def _anthropic_error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def thinking_signature(thinking: str) -> str:
    """The signature the emulated Anthropic API gives a thinking block: altering the text breaks it."""
    return "sig-" + hashlib.sha256(b"loopback-thinking/" + thinking.encode()).hexdigest()[:32]


def _strict_schema_error(schema: Any, where: str = "()") -> str | None:
    """Why OpenAI's strict mode refuses a schema: an object must close (additionalProperties false) and require all."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object":
        if schema.get("additionalProperties") is not False:
            return f"In context={where}, 'additionalProperties' is required to be supplied and to be false."
        missing = set(schema.get("properties", {})) - set(schema.get("required", []))
        if missing:
            return f"In context={where}, 'required' is required to be supplied and to include every key in properties. Missing '{sorted(missing)[0]}'."
    for key, child in schema.get("properties", {}).items():
        error = _strict_schema_error(child, f"('properties', '{key}')")
        if error:
            return error
    return None


def api_rule_broken(path: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The error body the real API sends for a request that breaks one of its rules, or None."""
    if path.endswith("/messages"):
        return _anthropic_rule_broken(body)
    model = str(body.get("model", ""))
    if OPENAI_REASONING.match(model):
        if "max_tokens" in body:
            return _openai_error("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                                 "'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        if "temperature" in body and body["temperature"] != 1:
            return _openai_error(f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                                 f"this model. Only the default (1) value is supported.", "temperature",
                                 "unsupported_value")
    elif "reasoning_effort" in body:
        return _openai_error("Unrecognized request argument supplied: reasoning_effort", "reasoning_effort", None)
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    if schema.get("strict"):
        error = _strict_schema_error(schema.get("schema"))
        if error:
            return _openai_error(f"Invalid schema for response_format '{schema.get('name')}': {error}",
                                 "response_format", "invalid_json_schema")
    return None


def _anthropic_rule_broken(body: dict[str, Any]) -> dict[str, Any] | None:
    thinking = body.get("thinking") or {}
    if thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens", 0)
    if budget < 1024:
        return _anthropic_error("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
    if body.get("max_tokens", 0) <= budget:
        return _anthropic_error("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                                "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
    if body.get("temperature", 1) != 1:
        return _anthropic_error("`temperature` may only be set to 1 when thinking is enabled. Please consult our "
                                "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
    if (body.get("tool_choice") or {}).get("type") in ("tool", "any"):
        return _anthropic_error("Thinking may not be enabled when tool_choice forces tool use.")
    messages = body.get("messages", [])
    for n, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list) or not content:
            continue
        first = content[0]
        if n == len(messages) - 2 and first.get("type") not in ("thinking", "redacted_thinking"):
            return _anthropic_error(
                f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                f"`{first.get('type')}`. When `thinking` is enabled, a final `assistant` message must start with a "
                f"thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend "
                f"you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`.")
        for m, block in enumerate(content):
            if block.get("type") == "thinking" and block.get("signature") != thinking_signature(block.get("thinking", "")):
                return _anthropic_error(f"messages.{n}.content.{m}: Invalid `signature` in `thinking` block")
    return None


def _sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


def _pieces(text: str, size: int = 12) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _openai_events(whole: dict[str, Any], body: dict[str, Any]) -> list[str]:
    """A chat.completion as the chunks of a stream, usage last when the request asked for it."""
    choice = whole["choices"][0]
    message = choice["message"]
    base = {"id": whole["id"], "object": "chat.completion.chunk", "model": whole["model"]}
    chunks = [base | {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}]
    chunks += [base | {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
               for piece in _pieces(message.get("content") or "")]
    for n, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        chunks.append(base | {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": n, "id": call["id"],
                      "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}]},
                      "finish_reason": None}]})
        chunks += [base | {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": n, "function": {
            "arguments": piece}}]}, "finish_reason": None}]} for piece in _pieces(arguments)]
    chunks.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(base | {"choices": [], "usage": whole["usage"]})
    return [_sse(c) for c in chunks] + [_sse("[DONE]")]


def _anthropic_events(whole: dict[str, Any]) -> list[str]:
    """A message as the Messages API streams it, pings included."""
    usage = whole["usage"]
    start = {key: whole[key] for key in ("id", "type", "role", "model")} | {
        "content": [], "stop_reason": None, "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 1}}
    events = [_sse({"type": "message_start", "message": start}, "message_start"), _sse({"type": "ping"}, "ping")]
    for n, block in enumerate(whole["content"]):
        kind = block["type"]
        opening = {"type": kind, **({"text": ""} if kind == "text" else {"thinking": ""} if kind == "thinking"
                                    else {"id": block["id"], "name": block["name"], "input": {}})}
        events.append(_sse({"type": "content_block_start", "index": n, "content_block": opening},
                           "content_block_start"))
        if kind == "text":
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        elif kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(json.dumps(block["input"]))]
        events += [_sse({"type": "content_block_delta", "index": n, "delta": d}, "content_block_delta")
                   for d in deltas]
        events.append(_sse({"type": "content_block_stop", "index": n}, "content_block_stop"))
    events.append(_sse({"type": "message_delta", "delta": {"stop_reason": whole["stop_reason"]},
                        "usage": {"output_tokens": usage["output_tokens"]}}, "message_delta"))
    events.append(_sse({"type": "message_stop"}, "message_stop"))
    return events


# ---------------------------------------------------------------- the Responses API


def responses_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as the chat-shaped view the answer functions read (messages, a verdict schema)."""
    messages = []
    for item in body.get("input", []):
        if item.get("type") == "function_call":
            messages.append({"role": "assistant", "content": "", "tool_calls": [item]})
        elif item.get("type") == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        elif "role" in item:
            messages.append({"role": item["role"], "content": item.get("content", "")})
    view = {"model": body.get("model"), "messages": messages, "tools": body.get("tools")}
    schema = ((body.get("text") or {}).get("format") or {}).get("schema")
    if schema is not None:
        view["response_format"] = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}}
    return view


def _responses_rule_broken(body: dict[str, Any], issued: dict[str, str | None]) -> dict[str, Any] | None:
    for unknown in ("max_tokens", "max_completion_tokens", "messages", "reasoning_effort"):
        if unknown in body:
            return _openai_error(f"Unsupported parameter: '{unknown}'.", unknown, "unsupported_parameter")
    if OPENAI_REASONING.match(str(body.get("model", ""))) and "temperature" in body:
        return _openai_error("Unsupported parameter: 'temperature' is not supported with this model.",
                             "temperature", "unsupported_parameter")
    fmt = (body.get("text") or {}).get("format") or {}
    if fmt.get("strict"):
        error = _strict_schema_error(fmt.get("schema"))
        if error:
            return _openai_error(f"Invalid schema for response_format '{fmt.get('name')}': {error}", "text.format.schema",
                                 "invalid_json_schema")
    seen_reasoning, calls = set(), set()
    for item in body.get("input", []):
        kind = item.get("type")
        if kind == "reasoning":
            seen_reasoning.add(item.get("id"))
        elif kind == "function_call":
            needed = issued.get(item.get("id"))
            if needed and needed not in seen_reasoning:
                return _openai_error(f"Item '{item.get('id')}' of type 'function_call' was provided without its "
                                     f"required 'reasoning' item: '{needed}'.", "input", None)
            calls.add(item.get("call_id"))
        elif kind == "function_call_output" and item.get("call_id") not in calls:
            return _openai_error(f"No tool call found for function call output with call_id {item.get('call_id')}.",
                                 "input", None)
    return None


def _responses_body(body: dict[str, Any], reply: dict[str, Any], issued: dict[str, str | None]) -> dict[str, Any]:
    text = reply.get("text", "")
    tokens_in, tokens_out = _usage(responses_as_chat(body), reply)
    turn = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
    reasoning_model = bool(OPENAI_REASONING.match(str(body.get("model", ""))))
    output: list[dict[str, Any]] = []
    reasoning_id = None
    if reasoning_model:
        reasoning_id = f"rs_{turn}"
        output.append({"type": "reasoning", "id": reasoning_id, "summary": [
            {"type": "summary_text", "text": reply.get("thinking", "Working out the next step.")}],
            "encrypted_content": f"enc-{turn}"})
    if text:
        output.append({"type": "message", "id": f"msg_{turn}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]})
    for n, call in enumerate(reply.get("tool_calls") or []):
        item_id = f"fc_{turn}_{n}"
        issued[item_id] = reasoning_id
        output.append({"type": "function_call", "id": item_id, "call_id": call.get("id", f"call_{turn}_{n}"),
                       "name": call["name"], "arguments": json.dumps(call.get("arguments", {})), "status": "completed"})
    reasoning = reply.get("reasoning_tokens", 100) if reasoning_model else 0
    return {"id": f"resp_{turn}", "object": "response", "model": body.get("model"), "status": "completed",
            "output": output, "usage": {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0},
                                        "output_tokens": tokens_out + reasoning,
                                        "output_tokens_details": {"reasoning_tokens": reasoning}}}


def _responses_events(whole: dict[str, Any]) -> list[str]:
    """A response as the Responses API streams it: created, text deltas, completed with the whole response."""
    created = whole | {"status": "in_progress", "output": []}
    events = [_sse({"type": "response.created", "response": created}, "response.created")]
    for item in whole["output"]:
        for part in item.get("content", []) if item["type"] == "message" else []:
            events += [_sse({"type": "response.output_text.delta", "delta": p}, "response.output_text.delta")
                       for p in _pieces(part["text"])]
    events.append(_sse({"type": "response.completed", "response": whole}, "response.completed"))
    return events


def _usage(body: dict[str, Any], reply: dict[str, Any]) -> tuple[int, int]:
    """Token counts at about four characters a token, over everything a real provider would count."""
    prompt = json.dumps([body.get("system"), body.get("messages", []), body.get("tools")])
    written = reply.get("text", "") + (json.dumps(reply["tool_calls"]) if reply.get("tool_calls") else "")
    return max(1, len(prompt) // 4), max(1, len(written) // 4) if written else 0


def _openai_body(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    text = reply.get("text", "")
    tokens_in, tokens_out = _usage(body, reply)
    message: dict[str, Any] = {"role": "assistant", "content": text}
    finish = reply.get("finish_reason", "stop")
    if reply.get("tool_calls"):
        message["tool_calls"] = [{"id": c.get("id", f"call_{n}"), "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                                 for n, c in enumerate(reply["tool_calls"])]
        finish = "tool_calls"
    usage: dict[str, Any] = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out}
    if OPENAI_REASONING.match(str(body.get("model", ""))):  # reasoning is billed as completion tokens
        reasoning = reply.get("reasoning_tokens", 100)
        usage = {"prompt_tokens": tokens_in, "completion_tokens": tokens_out + reasoning,
                 "completion_tokens_details": {"reasoning_tokens": reasoning}}
    return {"id": "loopback", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}


def _anthropic_body(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    text = reply.get("text", "")
    tokens_in, tokens_out = _usage(body, reply)
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    stop = {"stop": "end_turn", "length": "max_tokens"}.get(reply.get("finish_reason", "stop"), "end_turn")
    forced = (body.get("tool_choice") or {}).get("type") == "tool"
    if forced:  # the forced tool's input is the answer (a verdict): the API returns a tool_use block only
        try:
            given = json.loads(text[text.find("{"):text.rfind("}") + 1])
        except ValueError:  # a scripted unparseable verdict: the tool's input then lacks the levels
            given = {"rationale": text}
        content = [{"type": "tool_use", "id": "toolu_forced", "name": body["tool_choice"]["name"], "input": given}]
        stop = "tool_use"
    if (body.get("thinking") or {}).get("type") == "enabled":
        thought = reply.get("thinking", f"Thinking about turn {len(body.get('messages', []))}.")
        content.insert(0, {"type": "thinking", "thinking": thought, "signature": thinking_signature(thought)})
        tokens_out += len(thought) // 4
    for n, call in enumerate(reply.get("tool_calls") or []):
        content.append({"type": "tool_use", "id": call.get("id", f"toolu_{n}"), "name": call["name"],
                        "input": call.get("arguments", {})})
        stop = "tool_use"
    return {"id": "loopback", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": content, "stop_reason": stop,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}


# ---------------------------------------------------------------- the batch APIs


class BatchEmulator:
    """OpenAI's Batch API (upload a JSONL file, create a batch, poll, read the output and error files) and
    Anthropic's Message Batches API (create from a request list, poll, read results_url), with their rules: unique
    custom ids, one endpoint per OpenAI batch, no streaming inside a batch, Anthropic's custom_id pattern.
    `submitted` counts every request ever submitted by custom id: a resumed run must not submit one twice."""

    CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

    def __init__(self, server: "LoopbackServer"):
        self.server = server
        self.files: dict[str, str] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: Counter = Counter()
        self.polls = 0
        self.lock = threading.Lock()

    def post(self, path: str, raw: bytes, content_type: str, base: str) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if path.endswith("/files"):
                return self._upload(raw, content_type)
            if path.endswith("/messages/batches"):
                return self._create_anthropic(json.loads(raw or b"{}"))
            return self._create_openai(json.loads(raw or b"{}"))

    def _upload(self, raw: bytes, content_type: str) -> tuple[int, dict[str, Any]]:
        from email import message_from_bytes
        from email.policy import default

        message = message_from_bytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw, policy=default)
        fields = {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
                  for part in message.iter_parts()}
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return 400, _openai_error("'purpose' must be 'batch' and a 'file' is required", "purpose", None)
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = fields["file"].decode()
        return 200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "purpose": "batch",
                     "filename": "batch.jsonl", "created_at": int(time.time())}

    def _create_openai(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        text = self.files.get(body.get("input_file_id", ""))
        if text is None:
            return 404, _openai_error("No such File object", "input_file_id", None)
        if body.get("completion_window") != "24h" or body.get("endpoint") != "/v1/chat/completions":
            return 400, _openai_error("completion_window must be 24h and endpoint a supported one", None, None)
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        ids = [line.get("custom_id") for line in lines]
        if len(set(ids)) != len(ids):
            return 400, _openai_error("The custom_id values must be unique within a batch.", "custom_id", None)
        for line in lines:
            if line.get("method") != "POST" or line.get("url") != body["endpoint"] or line["body"].get("stream"):
                return 400, _openai_error("Each line's method must be POST, its url the batch's endpoint, and "
                                          "streaming is not allowed in a batch", None, None)
        return 200, self._new("openai", [(line["custom_id"], "/chat/completions", line["body"]) for line in lines])

    def _create_anthropic(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests") or []
        ids = [r.get("custom_id", "") for r in requests]
        if not requests or len(set(ids)) != len(ids) or not all(self.CUSTOM_ID.match(i) for i in ids):
            return 400, _anthropic_error("requests: custom_id values must be unique and match ^[a-zA-Z0-9_-]{1,64}$")
        if any(r["params"].get("stream") for r in requests):
            return 400, _anthropic_error("requests.params.stream: streaming is not supported in a batch")
        return 200, self._new("anthropic", [(r["custom_id"], "/messages", r["params"]) for r in requests])

    def _new(self, api: str, requests: list[tuple[str, str, dict]]) -> dict[str, Any]:
        batch_id = ("batch_" if api == "openai" else "msgbatch_") + f"{len(self.batches) + 1:04d}"
        self.submitted.update(custom for custom, _, _ in requests)
        self.batches[batch_id] = {"api": api, "created": time.monotonic(), "requests": requests, "results": None}
        return self._view(batch_id, "")

    def _done(self, batch_id: str) -> bool:
        batch = self.batches[batch_id]
        return time.monotonic() - batch["created"] >= self.server.batch_s

    def _results(self, batch_id: str) -> list[tuple[str, dict | None]]:
        """Each request's answer body, or None when it errors (first batch of an id in `batch_errors`)."""
        batch = self.batches[batch_id]
        if batch["results"] is None:
            out = []
            for custom, path, params in batch["requests"]:
                errors = self.server.batch_errors
                if errors and errors(custom) and self.submitted[custom] == 1:
                    out.append((custom, None))
                    continue
                broken = api_rule_broken(path, params)
                if broken:
                    out.append((custom, broken | {"status_code": 400}))
                    continue
                reply = self.server.answer(params)
                reply = {"text": reply} if isinstance(reply, str) else reply
                out.append((custom, _anthropic_body(params, reply) if path == "/messages"
                            else _openai_body(params, reply)))
            batch["results"] = out
        return batch["results"]

    def _view(self, batch_id: str, base: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        done = self._done(batch_id)
        results = self._results(batch_id) if done else []
        failed = sum(1 for _, body in results if body is None or "status_code" in body)
        if batch["api"] == "anthropic":
            return {"id": batch_id, "type": "message_batch", "processing_status": "ended" if done else "in_progress",
                    "request_counts": {"processing": 0 if done else len(batch["requests"]),
                                       "succeeded": len(results) - failed, "errored": failed, "canceled": 0,
                                       "expired": 0},
                    "results_url": f"{base}/messages/batches/{batch_id}/results" if done else None}
        return {"id": batch_id, "object": "batch", "endpoint": "/v1/chat/completions", "completion_window": "24h",
                "status": "completed" if done else "in_progress",
                "output_file_id": f"{batch_id}-output" if done else None,
                "error_file_id": f"{batch_id}-errors" if done and failed else None,
                "request_counts": {"total": len(batch["requests"]), "completed": len(results) - failed,
                                   "failed": failed}}

    def get(self, path: str, base: str) -> tuple[int, dict[str, Any] | str]:
        with self.lock:
            self.polls += 1
            parts = path.rstrip("/").split("/")
            if "files" in parts:  # /v1/files/{batch}-output/content
                batch_id, _, kind = parts[parts.index("files") + 1].rpartition("-")
                if batch_id not in self.batches or not self._done(batch_id):
                    return 404, _openai_error("No such File object", None, None)
                rows = []
                for custom, body in self._results(batch_id):
                    ok = body is not None and "status_code" not in body
                    if ok != (kind == "output"):
                        continue
                    response = ({"status_code": 200, "request_id": custom, "body": body} if ok else
                                {"status_code": (body or {}).get("status_code", 500), "body": body})
                    rows.append({"id": f"req_{custom}", "custom_id": custom, "response": response,
                                 "error": None if ok else {"code": "server_error", "message": "injected batch error"}})
                return 200, "".join(json.dumps(r) + "\n" for r in rows)
            if parts[-1] == "results":
                batch_id = parts[-2]
                if batch_id not in self.batches or not self._done(batch_id):
                    return 404, _anthropic_error("results are not ready")
                rows = [{"custom_id": custom, "result": {"type": "succeeded", "message": body}
                         if body is not None and "status_code" not in body else
                         {"type": "errored", "error": {"type": "error", "error": {"type": "api_error"}}}}
                        for custom, body in self._results(batch_id)]
                return 200, "".join(json.dumps(r) + "\n" for r in rows)
            batch_id = parts[-1]
            if batch_id not in self.batches:
                return 404, _openai_error("No such batch", None, None)
            return 200, self._view(batch_id, base)
