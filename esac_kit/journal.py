"""The run folder: its config and an append-only journal of observations, flushed as each one lands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from esac_kit.errors import ConfigError
from esac_kit.outcomes import ModelOutcome

CONFIG_FILE = "run.json"
JOURNAL_FILE = "observations.jsonl"


class Observation(BaseModel):
    """One scored observation: a model replicate of an item and, for judge-graded items, one judge replicate."""

    run_id: str
    suite: str
    version: str
    pool: str
    item_id: str
    category: str
    model_replicate: int
    judge_replicate: int | None
    outcome: ModelOutcome
    score: float
    score_detail: dict[str, Any] = {}
    response: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    attempts: int
    retries: dict[str, int] = {}
    judge_levels: dict[str, int] | None = None
    judge_rationale: str | None = None
    judge_tokens_in: int = 0
    judge_tokens_out: int = 0
    prompt_sha256: str = ""

    @property
    def slot(self) -> tuple[str, int, int | None]:
        """The plan slot this observation fills."""
        return (self.item_id, self.model_replicate, self.judge_replicate)


class Journal:
    """Append-only JSON lines in the run folder; a torn last line from a kill is dropped on open."""

    def __init__(self, folder: Path):
        self.path = folder / JOURNAL_FILE
        self.observations: list[Observation] = self._read()
        self._handle = self.path.open("a", encoding="utf-8")

    def _read(self) -> list[Observation]:
        if not self.path.exists():
            return []
        raw = self.path.read_bytes()
        observations, good_bytes = [], 0
        for line in raw.splitlines(keepends=True):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("torn line")
                observations.append(Observation.model_validate_json(line))
            except (ValueError, ValidationError):
                if good_bytes + len(line) < len(raw):
                    raise ConfigError(f"{self.path}: corrupt journal line {len(observations) + 1}") from None
                break  # a torn last line: the kill came mid-write; that observation is redone
            good_bytes += len(line)
        if good_bytes < len(raw):
            with self.path.open("r+b") as handle:
                handle.truncate(good_bytes)
        return observations

    def append(self, observation: Observation) -> None:
        """Write one observation and flush it to the OS, so a killed run keeps it."""
        self._handle.write(observation.model_dump_json() + "\n")
        self._handle.flush()
        self.observations.append(observation)

    def close(self) -> None:
        """Close the journal file."""
        self._handle.close()


def observations_frame(observations: list[Observation]):
    """The tidy observation table: one row per observation, nested fields as JSON text."""
    import pandas as pd

    rows = [o.model_dump() for o in observations]
    frame = pd.DataFrame(rows, columns=list(Observation.model_fields))
    for column in ("score_detail", "retries", "judge_levels"):
        frame[column] = frame[column].map(lambda value: json.dumps(value, sort_keys=True, default=str))
    frame["judge_replicate"] = frame["judge_replicate"].astype("Int64")
    return frame
