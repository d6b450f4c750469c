"""Outside answerers: anyone can stand in for the model. `files:DIR` writes each chat request to a file and waits
for the answer file, `human` asks in the terminal, and `replay:FILE.jsonl` serves answers produced elsewhere.

They are how benchmark authors take human baselines and calibrate difficulty against a stand-in model. They speak
the OpenAI message format (tool calls and tool results included), so a request file reads like an API request.
Usage absent from an answer is estimated at CHARS_PER_TOKEN characters a token, and the run's notes say so.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from esac_kit.errors import ConfigError
from esac_kit.model_params import ModelParams
from esac_kit.chat import (CHARS_PER_TOKEN, ChatRequest, ModelRef, ModelReply, ToolCall, classify_outcome,
                           estimate_tokens, utf8_safe)

POLL_S = 0.1


class AnswerToolCall(BaseModel):
    """One tool call in an answer file."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = {}


class Answer(BaseModel):
    """An answer file: the text, any tool calls, and optionally the usage it cost."""

    content: str = ""
    tool_calls: list[AnswerToolCall] = []
    usage: dict[str, int] | None = None  # {"input_tokens": n, "output_tokens": m}


def request_record(request: ChatRequest, time_budget_s: float | None) -> dict[str, Any]:
    """What an outside answerer is shown: the conversation, the tools and the budgets (never a key)."""
    messages = ([{"role": "system", "content": request.system}] if request.system else []) + list(request.messages)
    return {"messages": messages, "tools": list(request.tools), "max_tokens": request.max_tokens,
            "time_budget_s": time_budget_s, "answer_format": {
                "content": "your answer text", "tool_calls": [{"name": "TOOL", "arguments": {}}]}}


class OutsideAnswerer:
    """Base of the providers that are not HTTP endpoints; replies are scored like any model's."""

    params = ModelParams()  # -M parameters mean nothing to a person or a file

    def __init__(self, ref: ModelRef, wait_for_time_budget: bool = True):
        self.ref = ref
        self.wait_for_time_budget = wait_for_time_budget  # False: --no-time-budget, for slow answerers such as people

    @property
    def endpoint(self) -> str:
        """Where the answers come from (shown in errors)."""
        return self.ref.name

    async def chat(self, request: ChatRequest, timeout_s: float, time_budget_s: float | None = None) -> ModelReply:
        """Ask for one answer and return it as the model's reply."""
        started = time.monotonic()
        budget = time_budget_s if self.wait_for_time_budget else None
        answer = await self.answer(request, budget)
        latency = time.monotonic() - started
        if answer is None:  # the time budget ran out before an answer came: the model's failure (§8)
            return ModelReply("", "time_budget", estimate_tokens(request_record(request, budget)), 0, latency,
                              usage_reported=False)
        text = utf8_safe(answer.content)
        calls = tuple(ToolCall(f"call_{n}", utf8_safe(c.name), json.dumps(c.arguments))
                      for n, c in enumerate(answer.tool_calls))
        usage = answer.usage or {}
        tokens_in = usage.get("input_tokens") or estimate_tokens(request_record(request, budget))
        tokens_out = usage.get("output_tokens") or estimate_tokens({"content": text, "tool_calls": [
            {"name": c.name, "arguments": c.arguments} for c in answer.tool_calls]})
        outcome = classify_outcome(text, None, False, latency, budget, bool(calls))
        reported = bool(usage.get("input_tokens") and usage.get("output_tokens"))  # an estimate is no usage report
        return ModelReply(text, outcome, tokens_in, tokens_out, latency, None, calls, reported)

    async def answer(self, request: ChatRequest, time_budget_s: float | None) -> Answer | None:
        """The answer, or None when the time budget passed first."""
        raise NotImplementedError

    def tool_turn(self, reply: ModelReply, results: list[tuple[ToolCall, str, bool]]) -> list[dict[str, Any]]:
        """The assistant turn and its tool results, in the OpenAI message format the request files show."""
        calls = [{"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
                 for call, _, _ in results]
        return [{"role": "assistant", "content": reply.text, "tool_calls": calls},
                *({"role": "tool", "tool_call_id": call.id, "content": text} for call, text, _ in results)]


class FilesAnswerer(OutsideAnswerer):
    """`files:DIR`: DIR/NNNN.request.json out, DIR/NNNN.response.json in; numbering continues after a resume."""

    def __init__(self, ref: ModelRef, wait_for_time_budget: bool = True):
        super().__init__(ref, wait_for_time_budget)
        self.folder = Path(ref.model)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"{self.folder}: cannot use as the answer folder: {error.strerror}") from None
        taken = [int(p.name.split(".")[0]) for p in self.folder.glob("*.request.json") if p.name[:4].isdigit()]
        self._numbers = itertools.count(max(taken, default=0) + 1)
        self._lock = threading.Lock()

    async def answer(self, request: ChatRequest, time_budget_s: float | None) -> Answer | None:
        with self._lock:
            number = next(self._numbers)
        stem = self.folder / f"{number:04d}"
        _write_new(Path(f"{stem}.request.json"), json.dumps(request_record(request, time_budget_s), indent=2))
        response = Path(f"{stem}.response.json")
        deadline = None if time_budget_s is None else time.monotonic() + time_budget_s
        while not response.exists():
            if deadline is not None and time.monotonic() > deadline:
                return None
            await asyncio.sleep(POLL_S)
        return await _read_answer(response)


class HumanAnswerer(OutsideAnswerer):
    """`human`: the request is shown in the terminal and the answer typed there, one request at a time."""


    def __init__(self, ref: ModelRef, wait_for_time_budget: bool = True, stdin=None, stdout=None):
        super().__init__(ref, wait_for_time_budget)
        self.stdin, self.stdout = stdin or sys.stdin, stdout or sys.stderr
        self._lock = threading.Lock()

    async def answer(self, request: ChatRequest, time_budget_s: float | None) -> Answer | None:
        return await asyncio.to_thread(self._ask, request, time_budget_s)

    def _ask(self, request: ChatRequest, time_budget_s: float | None) -> Answer | None:
        with self._lock:
            record = request_record(request, time_budget_s)
            out = self.stdout
            out.write("\n" + "=" * 78 + "\n")
            for message in record["messages"][-2:] if request.tools else record["messages"]:
                out.write(f"[{message['role']}]\n{message.get('content') or json.dumps(message.get('tool_calls'))}\n")
            for tool in record["tools"]:
                function = tool.get("function", tool)
                out.write(f"  tool {function['name']}: {json.dumps(function.get('parameters', {}))}\n")
            out.write("Answer below; end with a line holding only '.'. A tool call is a line "
                      "'CALL name {json arguments}'.\n")
            out.flush()
            lines, calls = [], []
            for line in self.stdin:
                line = line.rstrip("\n")
                if line == ".":
                    break
                if line.startswith("CALL "):
                    name, _, arguments = line[5:].strip().partition(" ")
                    calls.append({"name": name, "arguments": json.loads(arguments or "{}")})
                else:
                    lines.append(line)
            return Answer(content="\n".join(lines), tool_calls=calls)


class ReplayAnswerer(OutsideAnswerer):
    """`replay:FILE.jsonl`: lines {"prompt_sha256", "content", "tool_calls"?, "turn"?} answer the instance whose
    prompt (the conversation's first user message) has that SHA-256; AG episodes give one line per turn."""

    def __init__(self, ref: ModelRef, wait_for_time_budget: bool = True):
        super().__init__(ref, wait_for_time_budget)
        path = Path(ref.model)
        self.answers: dict[tuple[str, int], Answer] = {}
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{path}: cannot read the replay file: {error}") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                key = (str(data.pop("prompt_sha256")), int(data.pop("turn", 0)))
                self.answers[key] = Answer.model_validate(data)
            except (ValueError, KeyError, TypeError, ValidationError) as error:
                raise ConfigError(f"{path}: line {number}: not a replay answer "
                                  f"({type(error).__name__}): give prompt_sha256 and content") from None

    async def answer(self, request: ChatRequest, time_budget_s: float | None) -> Answer | None:
        users = [m for m in request.messages if m.get("role") == "user"]
        prompt = users[0]["content"] if users and isinstance(users[0].get("content"), str) else ""
        turn = sum(1 for m in request.messages if m.get("role") == "assistant")
        key = (hashlib.sha256(prompt.encode()).hexdigest(), turn)
        if key not in self.answers:
            raise ConfigError(f"{self.ref.model}: no replay answer for prompt sha256 {key[0][:12]}… turn {turn}")
        return self.answers[key]


ANSWERERS = {"files": FilesAnswerer, "human": HumanAnswerer, "replay": ReplayAnswerer}


def _write_new(path: Path, text: str) -> None:
    """Write a request file whole: it appears under its name only once complete."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text + "\n", encoding="utf-8")
    temporary.replace(path)


async def _read_answer(path: Path) -> Answer:
    """Read an answer file; a half-written one is read again, an invalid one stops the run (fix it and resume)."""
    for _ in range(30):
        try:
            return Answer.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValueError, ValidationError, OSError) as error:
            last = error
            await asyncio.sleep(POLL_S)  # the writer may still be writing: give it a moment
    raise ConfigError(f"{path}: not an answer ({type(last).__name__}: {str(last).splitlines()[0]}): write "
                      f'{{"content": "...", "tool_calls": [{{"name": "...", "arguments": {{}}}}]}}')
