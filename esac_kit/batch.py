"""`esac-kit run --batch`: each stage's independent requests go through the provider's own batch engine (OpenAI's
Batch API, Anthropic's Message Batches API) at its discount, and are scored exactly as an interactive run.

A `BatchQueue` stands in for a provider: the runner asks it as usual; it holds each request until no new one has
come for a moment (a stage: the answers, then the first judge calls, then the second), sends them as one batch,
polls, and hands each reply back. Every batch's id and custom ids are journalled in `batches.jsonl` the moment it
exists, so a killed run that resumes attaches to its batches instead of submitting a request twice. A request
the batch failed (errored, expired) is an infrastructure failure: the runner retries it in a later batch.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from esac_kit.chat import ChatRequest, ModelReply
from esac_kit.errors import ConfigError
from esac_kit.outcomes import TransientFailure

BATCHES_FILE = "batches.jsonl"
QUIET_S = 0.5  # a stage is complete when no new request has come for this long
BATCHED_PROVIDERS = ("openai", "anthropic")


def custom_id(slot_key: str) -> str:
    """A request's id inside a batch, from the runner's key of the call (model, request, role, replicate): the same
    call always has the same id, and two replicates of one prompt never share one (amendment 001 §5)."""
    return "esac-" + slot_key[:40]


def check_batchable(ref, judge, suite, items) -> None:
    """Refuse --batch where no batch engine applies, before anything is written."""
    for party in filter(None, (ref, judge)):
        if party.provider not in BATCHED_PROVIDERS:
            raise ConfigError(f"--batch needs OpenAI or Anthropic models (Chat Completions or Messages); "
                              f"{party.name} has no batch API")
    from esac_kit.kinds import kind_of

    if all(kind_of(i).episodic for i in items):
        raise ConfigError(f"--batch: {suite.manifest.name} is agentic, and AG episodes stay interactive (each turn "
                          f"depends on the last): run it without --batch")


class BatchLog:
    """The run folder's record of its batches: which custom ids each batch holds (appended, fsynced)."""

    def __init__(self, folder: Path):
        self.path = folder / BATCHES_FILE
        self.batches: list[dict[str, Any]] = []
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    self.batches.append(json.loads(line))
                except ValueError:
                    continue  # a torn last line: that batch was never confirmed, it is submitted again

    def add(self, api: str, batch_id: str, ids: list[str]) -> None:
        entry = {"api": api, "batch_id": batch_id, "custom_ids": ids, "submitted_at": time.time()}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.batches.append(entry)

    def holding(self, api: str, ids: set[str], spent: set[tuple[str, str]]) -> dict[str, set[str]]:
        """Earlier batches of this API that hold some of these ids (newest first), minus the (batch, id) pairs
        whose result was already used up (a failure that is being retried)."""
        found: dict[str, set[str]] = {}
        left = set(ids)
        for entry in reversed(self.batches):
            if entry["api"] != api:
                continue
            mine = {i for i in entry["custom_ids"] if i in left and (entry["batch_id"], i) not in spent}
            if mine:
                found[entry["batch_id"]] = mine
                left -= mine
        return found


class BatchQueue:
    """A provider whose requests go out in batches; replies come back as the provider would have returned them."""

    batched = True  # the runner sends it every request at once, without its per-endpoint concurrency limit

    def __init__(self, provider, folder: Path, poll_s: float = 30.0, say: Callable[[str], None] | None = None):
        self.provider = provider
        self.ref, self.params, self.endpoint = provider.ref, provider.params, provider.endpoint
        self.api = _OpenAIBatches(provider) if provider.ref.provider == "openai" else _AnthropicBatches(provider)
        self.log = BatchLog(folder)
        self.poll_s = poll_s
        self.say = say or (lambda text: None)
        self.pending: dict[str, tuple[ChatRequest, dict[str, Any], list[asyncio.Future]]] = {}
        self.spent: set[tuple[str, str]] = set()
        self._flush: asyncio.Task | None = None
        self._last = 0.0

    def tool_turn(self, reply, results):
        return self.provider.tool_turn(reply, results)

    async def chat(self, request: ChatRequest, timeout_s: float, time_budget_s: float | None = None,
                   slot_key: str = "") -> ModelReply:
        if not slot_key:
            raise ValueError("a batched call needs the runner's key of the call")
        payload = self.provider.payload(request)
        key = custom_id(slot_key)
        future = asyncio.get_running_loop().create_future()
        entry = self.pending.setdefault(key, (request, payload, []))
        entry[2].append(future)
        self._last = time.monotonic()
        if self._flush is None or self._flush.done():
            self._flush = asyncio.create_task(self._send_when_quiet())
        return await future

    async def _send_when_quiet(self) -> None:
        while time.monotonic() - self._last < QUIET_S:
            await asyncio.sleep(QUIET_S / 5)
        stage, self.pending = self.pending, {}
        try:
            await self._run_stage(stage)
        except Exception as error:  # any failure of the batch machinery is infrastructure: each request retries
            failure = error if isinstance(error, (TransientFailure, ConfigError)) else TransientFailure(
                "transport", self.endpoint, detail=f"batch: {type(error).__name__}")
            for _, _, futures in stage.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(failure)
        finally:
            if self.pending:  # requests that came while this stage was polling (retries) form the next stage
                self._flush = asyncio.create_task(self._send_when_quiet())

    async def _run_stage(self, stage: dict[str, tuple[ChatRequest, dict[str, Any], list[asyncio.Future]]]) -> None:
        started = time.monotonic()
        attached = self.log.holding(self.api.name, set(stage), self.spent)
        fresh = [key for key in stage if not any(key in ids for ids in attached.values())]
        for batch_id, ids in attached.items():
            self.say(f"batch {batch_id}: {len(ids)} requests attached again (submitted before), not resubmitted")
        if fresh:
            batch_id = await self.api.submit({key: stage[key][1] for key in fresh})
            self.log.add(self.api.name, batch_id, fresh)
            attached[batch_id] = set(fresh)
            self.say(f"batch {batch_id}: {len(fresh)} requests submitted")
        for batch_id, ids in attached.items():
            results = await self.api.wait(batch_id, self.poll_s, self.say)
            latency = time.monotonic() - started
            for key in ids:
                request, _, futures = stage[key]
                outcome = results.get(key)
                self.spent.add((batch_id, key))
                for future in futures:
                    if future.done():
                        continue
                    if isinstance(outcome, dict):
                        # A batch answers within its window, not the item's time budget: latency classes nothing
                        future.set_result(self.provider.reply(request, outcome, latency, None))
                    else:
                        future.set_exception(TransientFailure("http_status", self.endpoint,
                                                              detail=f"batch {batch_id}: {outcome or 'no result'}"))


class _BatchAPI:
    """One provider's batch endpoints over its client, headers and base URL."""

    name = ""

    def __init__(self, provider):
        self.provider = provider
        self.client: httpx.AsyncClient = provider.client
        self.base = provider.base_url

    async def call(self, method: str, url: str, **kwargs) -> httpx.Response:
        try:
            response = await self.client.request(method, url, headers=self.provider.headers, timeout=60, **kwargs)
        except httpx.TransportError as error:
            raise TransientFailure("transport", url, detail=type(error).__name__) from None
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientFailure("http_status", url, response.status_code)
        if response.status_code >= 300:
            raise ConfigError(f"{url} answered HTTP {response.status_code}: {response.text[:200]}")
        return response

    async def wait(self, batch_id: str, poll_s: float, say: Callable[[str], None]) -> dict[str, Any]:
        """Poll until the batch ends; custom id -> the response body, or a failure's description."""
        last = None
        while True:
            status, done, counts = await self.status(batch_id)
            if counts != last:
                say(f"batch {batch_id}: {status} {counts}")
                last = counts
            if done:
                return await self.results(batch_id)
            await asyncio.sleep(poll_s)


class _OpenAIBatches(_BatchAPI):
    """OpenAI: upload a JSONL file (purpose batch), create a batch on /v1/chat/completions, read its output file."""

    name = "openai"

    async def submit(self, payloads: dict[str, dict[str, Any]]) -> str:
        lines = "".join(json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
                                    "body": body}) + "\n" for key, body in payloads.items())
        uploaded = await self.call("POST", f"{self.base}/files", data={"purpose": "batch"},
                                   files={"file": ("esac-batch.jsonl", lines.encode(), "application/jsonl")})
        created = await self.call("POST", f"{self.base}/batches", json={
            "input_file_id": uploaded.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"})
        return created.json()["id"]

    async def status(self, batch_id: str) -> tuple[str, bool, dict]:
        batch = (await self.call("GET", f"{self.base}/batches/{batch_id}")).json()
        self._batch = batch
        return batch["status"], batch["status"] in ("completed", "failed", "expired", "cancelled"), \
            batch.get("request_counts") or {}

    async def results(self, batch_id: str) -> dict[str, Any]:
        batch, out = self._batch, {}
        for field in ("output_file_id", "error_file_id"):
            if batch.get(field):
                text = (await self.call("GET", f"{self.base}/files/{batch[field]}/content")).text
                for line in filter(None, text.splitlines()):
                    row = json.loads(line)
                    response = row.get("response") or {}
                    ok = response.get("status_code") == 200 and not row.get("error")
                    out[row["custom_id"]] = response.get("body") if ok else \
                        str((row.get("error") or {}).get("message") or f"HTTP {response.get('status_code')}")
        return out


class _AnthropicBatches(_BatchAPI):
    """Anthropic: create a message batch from a request list, poll it, read its results_url."""

    name = "anthropic"

    async def submit(self, payloads: dict[str, dict[str, Any]]) -> str:
        created = await self.call("POST", f"{self.base}/messages/batches", json={
            "requests": [{"custom_id": key, "params": body} for key, body in payloads.items()]})
        return created.json()["id"]

    async def status(self, batch_id: str) -> tuple[str, bool, dict]:
        batch = (await self.call("GET", f"{self.base}/messages/batches/{batch_id}")).json()
        self._batch = batch
        return batch["processing_status"], batch["processing_status"] == "ended", batch.get("request_counts") or {}

    async def results(self, batch_id: str) -> dict[str, Any]:
        text = (await self.call("GET", self._batch["results_url"])).text
        out = {}
        for line in filter(None, text.splitlines()):
            row = json.loads(line)
            result = row["result"]
            out[row["custom_id"]] = result["message"] if result["type"] == "succeeded" else result["type"]
        return out
