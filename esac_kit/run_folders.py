"""Run folders as they stand on disk: each one's status, read from what it holds, for `esac-kit runs` and for the
notebooks' run pickers, which offer every run but the failed starts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from esac_kit.artefacts import REPORT_FILE
from esac_kit.errors import ConfigError
from esac_kit.journal import ABORT_FILE, CONFIG_FILE, JOURNAL_FILE, writer_holds
from esac_kit.records import Report, RunAbort, RunConfig, read_record_file

RunStatus = Literal["running", "complete", "aborted", "incomplete", "failed"]
# What each status means, in the order it is decided (the first that holds is the folder's status).
STATUS_RULES: dict[RunStatus, str] = {
    "running": "a writer (a run, a resume or a notebook) holds the folder's lock now",
    "failed": "run.json is unreadable, or the journal holds no observation and no batch was submitted: a start "
              "that never ran anything (pickers skip it)",
    "complete": "report.json holds a total: every planned observation was journalled and scored",
    "aborted": "abort.json records the error that ended the last session (an outage past its budget, a "
               "configuration error): resume it once that is fixed",
    "incomplete": "the journal holds some observations but not all (or a batch is pending), and nothing recorded "
                  "an abort: interrupted, killed or stopped; resume it",
}


@dataclass(frozen=True)
class RunListing:
    """One run folder as `esac-kit runs` lists it: what ran, its status and why, its score and cost so far."""

    folder: Path
    status: RunStatus
    reason: str
    run_id: str
    started: str  # run.json's created_at (the run id's time, or the folder's, when run.json is unreadable)
    suite: str | None = None
    version: str | None = None
    model: str | None = None
    judge: str | None = None
    observations: int = 0  # journal lines
    total: float | None = None  # None until the report holds every planned observation
    max_total: float | None = None
    cost_usd: float | None = None  # None: no report yet, or a price unknown

    def record(self) -> dict:
        """The listing as JSON-ready fields (`esac-kit runs --json`)."""
        return {"folder": str(self.folder), "status": self.status, "reason": self.reason, "run_id": self.run_id,
                "started": self.started, "suite": self.suite, "version": self.version, "model": self.model,
                "judge": self.judge, "observations": self.observations, "total": self.total,
                "max_total": self.max_total, "cost_usd": self.cost_usd}


def run_status(folder: Path) -> RunListing:
    """A run folder's status and listing from its run.json, journal, report.json, abort.json and lock."""
    observations = _journal_lines(folder)
    try:
        config = read_record_file(RunConfig, folder / CONFIG_FILE)
    except (ConfigError, OSError) as error:
        reason = str(error) if isinstance(error, ConfigError) else f"{folder / CONFIG_FILE}: {error.strerror}"
        status = "running" if writer_holds(folder) else "failed"
        return RunListing(folder, status, reason, folder.name, _started_of(folder), observations=observations)
    report = _report(folder)
    listed = dict(folder=folder, run_id=config.run_id, started=config.created_at, suite=config.suite,
                  version=config.version, model=config.model, judge=config.judge, observations=observations)
    if report is not None:
        listed |= dict(total=report.total, max_total=report.max_total,
                       cost_usd=report.cost.get("total_usd") if report.cost else None)
    if writer_holds(folder):
        return RunListing(status="running", reason=f"being written: {observations} observations so far", **listed)
    if report is not None and report.total is not None:
        return RunListing(status="complete", reason=f"{observations} observations, report rendered "
                                                    f"{report.rendered_at}", **listed)
    if observations == 0 and not _batch_submitted(folder):
        return RunListing(status="failed", reason="no observation journalled: the start failed or was killed before "
                                                  "the first one landed", **listed)
    abort = _abort(folder)
    if abort is not None:
        return RunListing(status="aborted", reason=f"aborted {abort.at} (exit {abort.exit_code}): {abort.error}",
                          **listed)
    return RunListing(status="incomplete", reason=f"{observations} observations journalled, not all: resume it with "
                                                  f"`esac-kit run --resume {folder}`", **listed)


def list_runs(reports_dir: Path, include_failed: bool = False) -> list[RunListing]:
    """Every run folder (a folder with run.json) under a reports folder, newest first; failed starts only when
    asked for."""
    if reports_dir.exists() and not reports_dir.is_dir():
        raise ConfigError(f"{reports_dir}: the reports path is not a folder")
    if not reports_dir.is_dir():
        return []
    listings = [run_status(path.parent) for path in reports_dir.rglob(CONFIG_FILE)]
    listings.sort(key=lambda listing: (listing.started, listing.run_id, listing.folder.name), reverse=True)
    return [listing for listing in listings if include_failed or listing.status != "failed"]


def format_runs(listings: list[RunListing]) -> str:
    """The listing as a text table: newest first, one row per run folder."""
    import pandas as pd

    from esac_kit.cost import usd

    rows = [{"started": listing.started, "suite": listing.suite or "?", "version": listing.version or "?",
             "model": listing.model or "?", "judge": listing.judge or "-", "status": listing.status,
             "score": "—" if listing.total is None else f"{listing.total:.2f}/{listing.max_total:g}",
             "cost": usd(listing.cost_usd) if listing.total is not None or listing.cost_usd is not None else "-",
             "obs": listing.observations, "folder": str(listing.folder)} for listing in listings]
    return pd.DataFrame(rows).to_string(index=False)


def _journal_lines(folder: Path) -> int:
    """How many whole observations the journal holds (a torn last line is not one)."""
    try:
        return (folder / JOURNAL_FILE).read_bytes().count(b"\n")
    except OSError:
        return 0


def _batch_submitted(folder: Path) -> bool:
    """Whether the run submitted a batch (--batch), whose answers a resume collects though none is journalled yet."""
    from esac_kit.batch import BATCHES_FILE

    return (folder / BATCHES_FILE).is_file()


def _report(folder: Path) -> Report | None:
    """The folder's report, or None when it has none this kit can read."""
    try:
        return Report.model_validate_json((folder / REPORT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None


def _abort(folder: Path) -> RunAbort | None:
    """The folder's abort record, or None when it has none (a record it cannot read still says it aborted)."""
    path = folder / ABORT_FILE
    if not path.is_file():
        return None
    try:
        return RunAbort.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return RunAbort(error=f"{path} is unreadable", exit_code=1, at="?")


def _started_of(folder: Path) -> str:
    """When a run whose run.json is unreadable started: its run id's time, else the folder's last change."""
    try:
        when = datetime.strptime(folder.name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        when = datetime.fromtimestamp(folder.stat().st_mtime, timezone.utc)
    return when.isoformat(timespec="seconds")
