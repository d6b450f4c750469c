"""The run folder's journal: append-only observations, flushed as each one lands, chained by hash so an edit is
evident, and the one reader of it; and the lock that lets one process at a time write a run folder."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from esac_kit.errors import ConfigError
from esac_kit.records import Observation, first_problem, read_record, write_json

CONFIG_FILE = "run.json"
JOURNAL_FILE = "observations.jsonl"
LOCK_FILE = ".lock"
UNLANDED_FILE = "unlanded-retries.json"
ABORT_FILE = "abort.json"  # why the last session stopped on an error (RunAbort); removed when a writer resumes


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
        if number == len(lines) and not line.endswith(b"\n"):
            break  # the torn last line (a kill mid-write): its observation is redone on resume
        try:
            observations.append(read_record(Observation, line))
        except (ValueError, ValidationError) as error:
            reason = first_problem(error) if isinstance(error, ValidationError) else "not a JSON record"
            raise ConfigError(f"{path}: corrupt journal line {number}: {reason}") from None
        good_bytes += len(line)
    if owner and good_bytes < len(raw):
        with path.open("r+b") as handle:
            handle.truncate(good_bytes)
    return observations


def chain_hash(previous: str, observation: Observation) -> str:
    """The chain hash of a journal line: SHA-256 of the previous line's hash and this line without its own."""
    return hashlib.sha256((previous + observation.model_dump_json(exclude={"chain"})).encode()).hexdigest()


def broken_link(observations: list[Observation], chained_from: int) -> int | None:
    """The number of the first journal line (from `chained_from` on) that does not match its hash chain, or None."""
    previous = ""
    for number, observation in enumerate(observations, 1):
        if number <= chained_from:
            continue
        if observation.chain != chain_hash(previous, observation):
            return number
        previous = observation.chain
    return None


def check_slots(observations: list[Observation], known_items: set[str], where: Path | str) -> None:
    """A journal names each plan slot once and only items of its suite; anything else is a one-line ConfigError
    naming the line, never a silent drop or a double count."""
    first: dict[tuple, int] = {}
    for number, observation in enumerate(observations, 1):
        if observation.item_id not in known_items:
            raise ConfigError(f"{where}: journal line {number} names item '{observation.item_id}', which the suite "
                              f"does not hold")
        if observation.slot in first:
            raise ConfigError(f"{where}: journal line {number} repeats the observation of line "
                              f"{first[observation.slot]} ({observation.item_id}, model replicate "
                              f"{observation.model_replicate}, judge replicate {observation.judge_replicate})")
        first[observation.slot] = number


class Journal:
    """The run's own journal, open for appending; a torn last line from a kill is dropped on open. Lines from
    `chained_from` on carry the hash chain."""

    def __init__(self, folder: Path, chained_from: int = 0):
        self.path = folder / JOURNAL_FILE
        self.observations: list[Observation] = read_journal(self.path, owner=True)
        chained = self.observations[chained_from:]
        self._last_chain = chained[-1].chain if chained else ""
        self._handle = self.path.open("a", encoding="utf-8")

    def append(self, observation: Observation) -> None:
        """Write one observation, chained to the last, and flush it to the OS, so a killed run keeps it."""
        observation = observation.model_copy(update={"chain": ""})
        observation = observation.model_copy(update={"chain": chain_hash(self._last_chain, observation)})
        self._handle.write(observation.model_dump_json() + "\n")
        self._handle.flush()
        self._last_chain = observation.chain
        self.observations.append(observation)

    def close(self) -> None:
        """Close the journal file."""
        self._handle.close()


def read_unlanded_retries(folder: Path) -> dict[str, int]:
    """Retries by kind of calls that never landed in the journal (they aborted the run, or were cut off by it)."""
    path = folder / UNLANDED_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): int(v) for k, v in data.items()}
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(f"{path}: not a record of retries: delete it to count none") from None


def add_unlanded_retries(folder: Path, retries: dict[str, int]) -> None:
    """Add a session's unlanded retries to the folder's record, so the report counts every retry made."""
    total = read_unlanded_retries(folder)
    for kind, count in retries.items():
        total[kind] = total.get(kind, 0) + count
    write_json(folder / UNLANDED_FILE, total)


@contextlib.contextmanager
def writer_lock(folder: Path) -> Iterator[None]:
    """Hold the run folder's OS lock while writing it: a second writer (run, resume or notebook) stops at once with
    a one-line error naming the holder's pid; the kernel releases the lock when the holder dies, however it dies."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = (folder / LOCK_FILE).open("a+", encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{folder}: cannot write the run folder: {error.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise ConfigError(f"{folder}: the run folder is being written by pid {holder}: wait for it to finish or "
                          f"stop it, then resume") from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()  # closing releases the lock; the file stays, harmless, for the next writer


def writer_holds(folder: Path) -> bool:
    """Whether a writer holds the run folder's lock now (a run, resume or notebook is writing it)."""
    try:
        handle = (folder / LOCK_FILE).open("r", encoding="utf-8")
    except OSError:
        return False  # no lock file: no writer ever held it
    with handle:
        try:
            # a shared probe, released on close; a writer starting in that very instant is refused as by any holder
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def observations_frame(observations: list[Observation], model: str | None = None, judge: str | None = None):
    """The tidy observation table: one row per observation, nested fields as JSON text, with the run's model and
    judge (from run.json) beside the prompt digest, so rows of several runs stay apart."""
    import pandas as pd

    rows = [o.model_dump() for o in observations]
    frame = pd.DataFrame(rows, columns=list(Observation.model_fields))
    frame.insert(frame.columns.get_loc("pool") + 1, "model", model)
    frame.insert(frame.columns.get_loc("model") + 1, "judge", judge)
    for column in ("score_detail", "retries", "judge_levels"):
        frame[column] = frame[column].map(lambda value: json.dumps(value, sort_keys=True, default=str))
    frame["judge_replicate"] = frame["judge_replicate"].astype("Int64")
    return frame
