"""The run folder's journal: append-only observations, flushed as each one lands, and the one reader of it."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from esac_kit.errors import ConfigError
from esac_kit.records import Observation, first_problem, read_record

CONFIG_FILE = "run.json"
JOURNAL_FILE = "observations.jsonl"


def read_journal(path: Path, owner: bool) -> list[Observation]:
    """A journal's observations: a torn last line (a kill, or the run writing it now) is truncated by the owner, who
    appends next, and skipped by a reader, who leaves the file alone; any other bad line is a ConfigError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = raw.splitlines(keepends=True)
    observations, good_bytes = [], 0
    for number, line in enumerate(lines, 1):
        try:
            if not line.endswith(b"\n"):
                raise ValueError("torn line")
            observations.append(read_record(Observation, line))
        except (ValueError, ValidationError) as error:
            if number < len(lines):
                reason = first_problem(error) if isinstance(error, ValidationError) else "not a JSON record"
                raise ConfigError(f"{path}: corrupt journal line {number}: {reason}") from None
            break  # the torn last line: its observation is redone on resume
        good_bytes += len(line)
    if owner and good_bytes < len(raw):
        with path.open("r+b") as handle:
            handle.truncate(good_bytes)
    return observations


class Journal:
    """The run's own journal, open for appending; a torn last line from a kill is dropped on open."""

    def __init__(self, folder: Path):
        self.path = folder / JOURNAL_FILE
        self.observations: list[Observation] = read_journal(self.path, owner=True)
        self._handle = self.path.open("a", encoding="utf-8")

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
