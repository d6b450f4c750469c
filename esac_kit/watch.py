"""What a notebook needs of the command line and of run folders: its arguments, finding and reading runs while
they grow, and starting, resuming and watching a run in a worker thread beside the kernel's event loop."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from esac_kit.errors import ConfigError
from esac_kit.journal import CONFIG_FILE, JOURNAL_FILE, observations_frame, read_journal
from esac_kit.records import Observation, Report
from esac_kit.suite import Suite, default_items_dir, load_suite


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
    """Every run folder (a folder with run.json) under a reports folder, newest run first."""
    if not reports_dir.is_dir():
        return []
    return sorted((p.parent for p in reports_dir.rglob(CONFIG_FILE)), key=lambda p: p.name, reverse=True)


def run_label(folder: Path) -> str:
    """suite-version / model / run id: the last three parts of a run folder."""
    return " / ".join(folder.parts[-3:])


def read_observations(folder: Path) -> list[Observation]:
    """A run folder's observations so far, read-only: safe while a run appends (a torn last line is skipped)."""
    return read_journal(folder / JOURNAL_FILE, owner=False)


def run_frame(folder: Path) -> pd.DataFrame:
    """The tidy observation table of a run folder, from its journal (the source of truth)."""
    observations = read_observations(folder)
    if not observations:
        raise ConfigError(f"{folder}: no observations yet")
    return observations_frame(observations)




@dataclass
class RunPlan:
    """A run ready to execute: its folder, config, suite and pool, and how much of it is already done."""

    folder: Path
    config: object  # runs.RunConfig
    suite: Suite
    pool: object  # pools.Pool
    planned: int
    done: int
    resumed: bool


def _planned(suite: Suite, config) -> int:
    from esac_kit.kinds import plan

    return len(plan([i for i in suite.items if not config.items or i.id in config.items]))


def plan_new_run(suite_id: str = "gi", pool: str = "public", model: str = "local", judge: str | None = None,
                 concurrency: int = 4, temperature: float = 1.0, seed: str | None = None,
                 seed_file: Path | None = None, pack: Path | None = None, only: list[str] | None = None,
                 reports_dir: Path = Path("reports"), items_dir: Path | None = None) -> RunPlan:
    """Settle a new run as `esac-kit run` does: pool 'public', 'heldout' (seed from $ESAC_HELDOUT_SEED or seed_file)
    or 'custom' (an explicit seed); the judge defaults to the suite's pin, or 'local' when the model is local."""
    from esac_kit.pools import custom_pool, heldout_pool, public_pool
    from esac_kit.providers import parse_model
    from esac_kit.runs import new_config, run_folder

    suite = load_suite(suite_id, items_dir)
    if pool == "public":
        chosen = public_pool(suite.manifest.public_seed)
    elif pool == "heldout":
        chosen = heldout_pool(seed_file)
    elif pool == "custom":
        if not seed:
            raise ConfigError("a custom pool needs a seed")
        chosen = custom_pool(seed)
    else:
        raise ConfigError(f"unknown pool '{pool}': public, heldout or custom")
    model = model.strip()
    judge = (judge or "").strip() or ("local" if model == "local" else None)
    ref = parse_model(model)
    if judge:
        parse_model(judge)
    for item_id in only or []:
        suite.item(item_id)
    if concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    config = new_config(suite, chosen, model, judge, temperature, concurrency, pack, list(only) if only else None)
    return RunPlan(run_folder(reports_dir, config, ref), config, suite, chosen, _planned(suite, config), 0, False)


def plan_resume(folder: Path, seed_file: Path | None = None, items_dir: Path | None = None) -> RunPlan:
    """Settle the continuation of a run folder, as `esac-kit run --resume` does."""
    from esac_kit.pools import recorded_pool
    from esac_kit.runs import load_config

    config = load_config(folder)
    suite = load_suite(config.suite, items_dir)
    if suite.manifest.version != config.version:
        raise ConfigError(f"{folder}: run of {config.suite} {config.version} cannot resume under "
                          f"{suite.manifest.version}")
    pool = recorded_pool(config.pool, seed_file)
    return RunPlan(folder, config, suite, pool, _planned(suite, config), len(read_observations(folder)), True)


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
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="esac-run")
        self.future = executor.submit(execute, plan.folder, plan.config, plan.suite, plan.pool, policy, cache,
                                      self._on_progress)
        executor.shutdown(wait=False)

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
    return build_report(plan.suite, plan.config, observations)
