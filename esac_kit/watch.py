"""What a notebook needs of the command line and of run folders: its arguments, finding and reading runs while
they grow, and executing a planned run (runs.plan_run, runs.plan_resume) in a worker thread beside the kernel's
event loop while the notebook watches it."""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from esac_kit.errors import ConfigError
from esac_kit.journal import CONFIG_FILE, JOURNAL_FILE, observations_frame, read_journal, read_unlanded_retries
from esac_kit.records import Observation, Report, RunConfig, read_record_file
from esac_kit.suite import default_items_dir

if TYPE_CHECKING:
    from esac_kit.runs import RunPlan


def notebook_args() -> dict:
    """`mo.cli_args()` as a dict (`marimo run nb.py -- --run DIR`), or {} outside a marimo runtime (JupyterLab)."""
    try:
        import marimo as mo

        return dict(mo.cli_args())
    except Exception:  # no marimo context: a Jupyter kernel or plain python
        return {}


def as_list(value) -> list[str]:
    """A CLI argument that may be given once, several times or not at all, as a list of strings."""
    if value is None or value == "":
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def arg_flag(args: Mapping, name: str) -> bool:
    """A flag argument: `-- --no-cache` arrives as {'no-cache': ''}; 'false' or False turn it off."""
    return name in args and args[name] not in (False, "false", "False", 0)


def suite_ids(items_dir: Path | None = None) -> list[str]:
    """The suites of an items folder (folders holding a manifest.toml)."""
    folder = items_dir or default_items_dir()
    return sorted(p.parent.name for p in folder.glob("*/manifest.toml"))


def find_runs(reports_dir: Path) -> list[Path]:
    """The run folders a notebook's picker offers, newest run first: every run but the failed starts (run_folders)."""
    from esac_kit.run_folders import list_runs

    return [listing.folder for listing in list_runs(reports_dir)] if reports_dir.is_dir() else []


def run_label(folder: Path) -> str:
    """suite-version / model / run id: the last three parts of a run folder."""
    return " / ".join(folder.parts[-3:])


def read_observations(folder: str | Path) -> list[Observation]:
    """A run folder's observations so far, read-only: safe while a run appends (a torn last line is skipped)."""
    return read_journal(Path(folder) / JOURNAL_FILE, owner=False)


def run_frame(folder: str | Path) -> pd.DataFrame:
    """The tidy observation table of a run folder, from its journal (the source of truth), with the model and
    judge of its run.json."""
    folder = Path(folder)
    observations = read_observations(folder)
    if not observations:
        raise ConfigError(f"{folder}: no observations yet")
    config_path = folder / CONFIG_FILE
    config = read_record_file(RunConfig, config_path) if config_path.is_file() else None
    return observations_frame(observations, config and config.model, config and config.judge)


@dataclass(frozen=True)
class ProgressView:
    """A copy of the runner's progress taken in the runner's thread, safe to read from another."""

    done: int
    total: int
    retries: dict[str, int]
    eta_s: float | None

    def text(self) -> str:
        """'12/43 observations · retries 0 · ETA 8 s'."""
        eta = "--" if self.eta_s is None else f"{self.eta_s:.0f} s"
        return f"{self.done}/{self.total} observations · retries {sum(self.retries.values())} · ETA {eta}"


class RunHandle:
    """A run executing in a worker thread (a marimo kernel runs an event loop in the cell's thread, so
    runs.execute cannot run there); the notebook polls it and redraws while observations land."""

    def __init__(self, plan: RunPlan, policy=None, cache=None):
        from esac_kit.cache import ResponseCache
        from esac_kit.runner import RetryPolicy
        from esac_kit.runs import execute

        self.plan = plan
        self.progress = ProgressView(plan.done, plan.planned, {}, None)
        policy = policy or RetryPolicy()
        cache = cache or ResponseCache(None)
        self._stop = threading.Event()
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="esac-run")
        self.future = executor.submit(execute, plan, policy, cache, self._on_progress, self._stop)
        executor.shutdown(wait=False)

    def stop(self, timeout_s: float = 30.0) -> bool:
        """Stop the run cooperatively (finished work stays journalled, the folder's lock is released); True once
        the worker has ended."""
        self._stop.set()
        return self.wait(timeout_s)

    def _on_progress(self, progress) -> None:
        self.progress = ProgressView(progress.done, progress.total, dict(progress.retries), progress.eta_s)

    def wait(self, timeout_s: float) -> bool:
        """Wait up to timeout_s; True once the run has finished (or failed)."""
        concurrent.futures.wait([self.future], timeout=timeout_s)
        return self.future.done()

    def observations(self) -> list[Observation]:
        """What the journal holds so far."""
        return read_observations(self.plan.folder)

    def result(self) -> Report:
        """The final report; re-raises the run's error (ConfigError, InfrastructureAbort, ...)."""
        return self.future.result()


def start_run(plan: RunPlan, policy=None, use_cache: bool = True, cache_dir: Path | None = None) -> RunHandle:
    """Start (or continue) a planned run in the background; the response cache is the user's unless disabled."""
    from esac_kit.cache import ResponseCache, default_cache_dir

    cache = ResponseCache((cache_dir or default_cache_dir()) if use_cache else None)
    return RunHandle(plan, policy, cache)


def live_report(plan: RunPlan, observations: list[Observation]) -> Report | None:
    """The report of the observations so far (None before the first); an incomplete run says so in its notes."""
    from esac_kit.report import build_report

    if not observations:
        return None
    return build_report(plan.suite, plan.config, observations, read_unlanded_retries(plan.folder))
