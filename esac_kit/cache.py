"""The response cache: one file per request, keyed so that two replicates never share an entry (amendment 001 §5)."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from esac_kit.chat import ChatRequest, ModelRef, ModelReply, ToolCall
from esac_kit.records import write_atomic

CACHE_ENV = "ESAC_CACHE"


def default_cache_dir() -> Path:
    """$ESAC_CACHE, else ~/.cache/esac-kit/responses."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "esac-kit" / "responses")


def cache_key(ref: ModelRef, request: ChatRequest, role: str, replicate: int, salt: str = "",
              params: dict | None = None) -> str:
    """SHA-256 of provider, model, parameters, messages, tools and replicate index; never of a key or seed."""
    material = {"provider": ref.provider, "model": ref.model, "base_url": ref.base_url, "role": role,
                "replicate": replicate, "request": asdict(request), "salt": salt}
    if params:  # -M model parameters; absent when none are set, so earlier caches stay valid
        material["params"] = params
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()


class ResponseCache:
    """Replies stored as JSON files under a folder; unreadable entries are misses."""

    def __init__(self, folder: Path | None):
        self.folder = folder
        self.hits = 0

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> ModelReply | None:
        """The cached reply for a key, or None."""
        if self.folder is None:
            return None
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            data["tool_calls"] = tuple(ToolCall(**c) for c in data["tool_calls"])
            data["raw_turn"] = tuple(data.get("raw_turn") or ())
            reply = ModelReply(**data)
        except (OSError, ValueError, TypeError, KeyError):
            return None
        self.hits += 1
        return reply

    def put(self, key: str, reply: ModelReply) -> None:
        """Store a reply atomically."""
        if self.folder is None:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(asdict(reply)))
