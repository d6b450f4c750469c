"""Runs: plan a new run or the resumption of a run folder (the CLI and the run notebook both plan here), start what
the run needs, drive the runner and write the report."""

from __future__ import annotations

import asyncio
import dataclasses
import contextlib
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import httpx

from esac_kit import __version__
from esac_kit.answerers import ANSWERERS, CHARS_PER_TOKEN
from esac_kit.artefacts import write_artefacts
from esac_kit.cache import ResponseCache
from esac_kit.errors import ConfigError, EsacError, InfrastructureAbort, RunStopped
from esac_kit.fingerprints import Fingerprints, bank_status, compute
from esac_kit.instances import build_tasks, generate
from esac_kit.journal import (ABORT_FILE, CONFIG_FILE, JOURNAL_FILE, LOCK_FILE, UNLANDED_FILE, Journal,
                              add_unlanded_retries, check_slots, read_journal, read_unlanded_retries, writer_lock)
from esac_kit.local import MAX_AGENT_TURN_TOKENS, MAX_AGENT_TURNS, MAX_OUTPUT_TOKENS, embedded_server
from esac_kit.pools import Pool, choose_pool, public_pool, recorded_pool
from esac_kit.kinds import kind_of, plan
from esac_kit.chat import ModelRef
from esac_kit.batch import BatchQueue, check_batchable
from esac_kit.model_params import ModelParams, check_model_params, parse_model_params, sent_temperature
from esac_kit.providers import SERVED, Provider, api_key_for, make_provider, parse_model
from esac_kit.records import Observation, Report, RunAbort, RunConfig, prompt_sha256, read_record_file, write_json
from esac_kit.report import build_report
from esac_kit.runner import RESUME_HINT, Progress, RetryPolicy, Runner, RunSettings
from esac_kit.sandbox import allow_unsafe_sandbox
from esac_kit.schemas import Instance, ItemSpec
from esac_kit.suite import Suite, load_suite


def run_folder(reports_dir: Path, config: RunConfig, model: ModelRef) -> Path:
    """reports/<suite>-<version>/<model>/<run>/."""
    return reports_dir / f"{config.suite}-{config.version}" / model.slug / config.run_id


def new_config(suite: Suite, pool: Pool, model: str, judge: str | None, temperature: float, concurrency: int,
               pack: Path | None, items: list[str] | None, time_budgets: bool = True,
               unsafe_sandbox: bool = False) -> RunConfig:
    """Settle the run's definition, noting every reason it is not an official result."""
    pin = suite.manifest.judge
    needs_judge = any(kind_of(i).judged for i in suite.items if not items or i.id in items)
    judge = judge or (pin.model if pin and needs_judge else None)
    if not any(kind_of(i).judged for i in suite.items):
        judge = None  # a suite without judge-graded items (ESAC-AG) never calls one
    notes = []
    bank = bank_status(suite)
    if bank:
        notes.append(bank)
    if not time_budgets:
        notes.append("--no-time-budget: answers took as long as they took; the time budgets decided nothing")
    if unsafe_sandbox:
        notes.append("--unsafe-sandbox: model code may have run without the kernel's sandbox wall")
    if judge == "local":
        notes.append("embedded judge: this run is unofficial and not comparable with official results")
    elif pin and judge and judge != pin.model:
        notes.append(f"unofficial judge {judge} (the pinned judge is {pin.model})")
    agentic = any(kind_of(i).episodic for i in suite.items)
    local_cap = MAX_AGENT_TURN_TOKENS if agentic else MAX_OUTPUT_TOKENS
    if model == "local":
        notes.append(f"embedded model: {'each turn' if agentic else 'answers'} capped at {local_cap} tokens")
        if agentic:
            notes.append(f"embedded model: each episode stops after {MAX_AGENT_TURNS} turns (the tasks' step "
                         f"budgets are larger)")
    if model == "local" and agentic and concurrency > 1:
        # The embedded server answers one request at a time and reuses the last prompt's prefix: interleaved
        # episodes would make it re-read every conversation from the start on every turn.
        concurrency = 1
        notes.append("embedded model: episodes run one at a time, so the server's prompt cache holds")
    if parse_model(model).provider in ANSWERERS:
        notes.append(f"{model} is an outside answerer: a baseline or calibration run; where an answer gives no usage, "
                     f"tokens are estimated at {CHARS_PER_TOKEN} characters a token")
    served = SERVED.get(parse_model(model).provider)
    if served:
        notes.append(f"{model} is a {served.description} of the kit: a self-check of tasks and scoring, not a model")
    if pool.name != "heldout":
        notes.append(f"{pool.name} pool: a self-check, not a held-out verification run (amendment 001 §3)")
    if items:
        notes.append(f"partial run: {len(items)} of {len(suite.items)} items")
    now = datetime.now(timezone.utc)
    return RunConfig(run_id=now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3), suite=suite.manifest.suite,
                     version=suite.manifest.version, pool=pool.record,
                     pack=str(pack) if pack else None, model=model, judge=judge,
                     judge_temperature=pin.temperature if pin else 0.0,
                     judge_max_tokens=pin.max_tokens if pin else 1024, temperature=temperature,
                     concurrency=concurrency, max_tokens_cap=local_cap if model == "local" else None,
                     max_turns_cap=MAX_AGENT_TURNS if model == "local" and agentic else None,
                     items=items, time_budgets=time_budgets, unsafe_sandbox=unsafe_sandbox, notes=notes,
                     kit_version=__version__, created_at=now.isoformat(timespec="seconds"))


def load_config(folder: Path) -> RunConfig:
    """Read a run folder's run.json (a legacy one is migrated on read), or say clearly why it cannot be used."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: not a run folder (no {CONFIG_FILE})")
    return read_record_file(RunConfig, path)


@dataclass
class RunPlan:
    """A run ready to execute: its folder, config, suite, pool and instances, and how much of it is already done."""

    folder: Path
    config: RunConfig
    suite: Suite
    pool: Pool
    items: list[ItemSpec]
    instances: dict[str, Instance]
    tasks: dict[str, object]  # AG items' live tasks, built once per run
    planned: int
    done: int
    resumed: bool


def plan_run(suite_id: str = "gi", pool: str = "public", model: str = "local", judge: str | None = None,
             concurrency: int = 4, temperature: float = 1.0, seed: str | None = None, seed_file: Path | None = None,
             pack: Path | None = None, only: list[str] | None = None, reports_dir: Path = Path("reports"),
             items_dir: Path | None = None, time_budgets: bool = True, unsafe_sandbox: bool = False,
             model_params: list[str] | None = None, batch: bool = False) -> RunPlan:
    """Settle a new run: pool 'public', 'heldout' (seed from $ESAC_HELDOUT_SEED or seed_file) or 'custom' (seed);
    the judge defaults to the suite's pin, or 'local' when the model is local; nothing is written yet."""
    if reports_dir.exists() and not reports_dir.is_dir():
        raise ConfigError(f"{reports_dir}: the reports path is not a folder: give --reports a folder")
    suite = load_suite(suite_id, items_dir)
    chosen = choose_pool(pool, suite.manifest.public_seed, seed, seed_file)
    model = model.strip()
    judge = (judge or "").strip() or ("local" if model == "local" else None)
    ref = parse_model(model)
    if judge:
        parse_model(judge)
    for item_id in only or []:
        suite.item(item_id)
    if concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    params = parse_model_params(model_params)
    planned = [i for i in suite.items if not only or i.id in only]
    smallest_budget = min(i.output_budget_tokens or suite.manifest.output_budget_tokens for i in planned)
    check_model_params(ref, params, temperature, smallest_budget)
    config = new_config(suite, chosen, model, judge, temperature, concurrency, pack, list(only) if only else None,
                        time_budgets, unsafe_sandbox)
    sends = sent_temperature(ref, params, temperature) is not None
    if batch:
        check_batchable(ref, parse_model(config.judge) if config.judge else None, suite, planned)
    config = config.model_copy(update={"model_params": params.recorded(), "sends_temperature": sends,
                                       "batch": batch})
    return _settle(run_folder(reports_dir, config, ref), config, suite, chosen, [], resumed=False)


def plan_resume(folder: Path, seed_file: Path | None = None, items_dir: Path | None = None) -> RunPlan:
    """Settle the continuation of a run folder: its own config, suite version and pool (a held-out seed must open
    the recorded commitment), and the same instances its journal answered."""
    config = load_config(folder)
    suite = load_suite(config.suite, items_dir)
    if suite.manifest.version != config.version:
        raise ConfigError(f"{folder}: run of {config.suite} {config.version} cannot resume under "
                          f"{suite.manifest.version}")
    pool = recorded_pool(config.pool, seed_file)
    return _settle(folder, config, suite, pool, read_journal(folder / JOURNAL_FILE, owner=False), resumed=True)


def _settle(folder: Path, config: RunConfig, suite: Suite, pool: Pool, journalled: list[Observation],
            resumed: bool) -> RunPlan:
    """Generate the run's instances (a missing pack stops here, before any write), which must be the very ones
    its journal answered."""
    items = [i for i in suite.items if not config.items or i.id in config.items]
    pack = Path(config.pack) if config.pack else None
    tasks = build_tasks(suite, items, pool)
    instances = {i.id: generate(suite, i, pool, pack, tasks.get(i.id)) for i in items}
    check_slots(journalled, {i.id for i in suite.items}, folder / JOURNAL_FILE)
    digests = {item_id: prompt_sha256(instance.prompt) for item_id, instance in instances.items()}
    for observation in journalled:
        expected = digests.get(observation.item_id)
        # a line written before observations kept their prompt's digest cannot be checked
        if observation.prompt_sha256 and expected and observation.prompt_sha256 != expected:
            raise ConfigError(f"{folder / JOURNAL_FILE}: item '{observation.item_id}' was answered on another "
                              f"instance (prompt digest differs): the pool or the item bank changed since the run "
                              f"started")
    return RunPlan(folder, config, suite, pool, items, instances, tasks, len(plan(items)), len(journalled), resumed)


@contextlib.contextmanager
def endpoints_for(models: list[str | None], tasks: dict | None = None) -> Iterator[dict[str, str]]:
    """Start what the models need (the embedded server for `local`, a loopback server for models the kit serves,
    such as ESAC-AG's `scripted:` agents), yield their base URLs by provider, and stop them afterwards."""
    with contextlib.ExitStack() as stack:
        urls = {}
        for model in filter(None, models):
            ref = parse_model(model)
            if ref.provider in urls:
                continue
            if ref.provider == "local":
                urls["local"] = stack.enter_context(embedded_server())
            elif ref.provider in SERVED:
                urls[ref.provider] = stack.enter_context(SERVED[ref.provider].serve(ref.model, tasks or {}))
        yield urls


def check_keys(config: RunConfig) -> None:
    """A ConfigError naming the variable when the model or the judge needs an API key that is not set."""
    for name in (config.model, config.judge):
        if name:
            api_key_for(parse_model(name))


def execute(run: RunPlan, policy: RetryPolicy, cache: ResponseCache,
            on_progress: Callable[[Progress], None] | None = None, stop: threading.Event | None = None) -> Report:
    """Run (or continue) a planned run in its folder, holding the folder's lock, and write its report; an abort
    keeps the journal and the retries of calls that never landed. Setting `stop` ends the run cooperatively.
    A new run whose session ends before its first observation lands leaves no folder behind."""
    check_keys(run.config)  # a missing key stops here, before the folder exists
    fresh = not run.folder.exists()
    try:
        return _execute_in_folder(run, policy, cache, on_progress, stop)
    except BaseException as error:
        if not (fresh and remove_unstarted(run.folder)):
            raise
        if isinstance(error, InfrastructureAbort):  # its hint to resume points at a folder that is gone
            raise InfrastructureAbort(str(error).removesuffix(RESUME_HINT) + "the run never started: no observation "
                                      "landed, so no run folder was kept", error.retries) from None
        raise


START_FILES = {CONFIG_FILE, JOURNAL_FILE, LOCK_FILE, UNLANDED_FILE, ABORT_FILE}  # what a run writes before its work


def remove_unstarted(folder: Path) -> bool:
    """Remove a run folder whose journal is empty and which holds only what a start writes, and the model and suite
    folders it leaves empty; True when it was removed."""
    journal = folder / JOURNAL_FILE
    try:
        if journal.is_file() and journal.stat().st_size > 0:
            return False
        names = {path.name for path in folder.iterdir()}
        if not names <= START_FILES:
            return False  # a file the start did not write (a submitted batch, a user's note): keep the folder
        for name in names:
            (folder / name).unlink()
        for empty in (folder, folder.parent, folder.parent.parent):  # run, model, suite-version; never the reports
            empty.rmdir()
    except OSError:
        pass  # a parent another run is using stays, and so does anything that cannot be removed
    return not folder.exists()


def _execute_in_folder(run: RunPlan, policy: RetryPolicy, cache: ResponseCache,
                       on_progress: Callable[[Progress], None] | None, stop: threading.Event | None) -> Report:
    """execute's work under the folder's lock: an error that ends the session is recorded in abort.json."""
    with writer_lock(run.folder):
        (run.folder / ABORT_FILE).unlink(missing_ok=True)  # a resumed run is no longer aborted
        config = run.config
        if config.journal_chained_from is None:  # a run begun before the chain: its existing lines stay unchained
            config = config.model_copy(update={"journal_chained_from": len(read_journal(
                run.folder / JOURNAL_FILE, owner=True))})
            run = dataclasses.replace(run, config=config)
        write_json(run.folder / CONFIG_FILE, config.model_dump(mode="json"))
        journal = Journal(run.folder, config.journal_chained_from)
        check_slots(journal.observations, {i.id for i in run.suite.items}, journal.path)
        session: dict = {}
        fingerprints = _fingerprints(run)  # before the first request, so none of it waits after the last reply
        release_generator_caches(run.suite)  # the run generates nothing after this
        threading.Thread(target=_import_report_modules, daemon=True).start()
        allow_unsafe_sandbox(config.unsafe_sandbox)
        try:
            with endpoints_for([config.model, config.judge], run.tasks) as urls:
                observations = asyncio.run(_drive(run, journal, policy, cache, urls, on_progress, session, stop))
        except EsacError as error:
            if not isinstance(error, RunStopped):  # a Stop is asked for: the run is incomplete, not aborted
                now = datetime.now(timezone.utc).isoformat(timespec="seconds")
                abort = RunAbort(error=str(error), exit_code=error.exit_code, at=now)
                write_json(run.folder / ABORT_FILE, abort.model_dump(mode="json"))
            raise
        finally:
            allow_unsafe_sandbox(False)
            journal.close()
            runner = session.get("runner")
            if runner is not None and runner.unlanded_retries():
                add_unlanded_retries(run.folder, runner.unlanded_retries())
        report = build_report(run.suite, config, observations, read_unlanded_retries(run.folder), fingerprints)
        write_artefacts(run.folder, report, observations, renders=False)  # `esac-kit report` writes table and charts
    return report


def _import_report_modules() -> None:
    """Import what the report needs after the run (pandas, scipy: ~1 s) while the run waits on replies."""
    with contextlib.suppress(ImportError):  # a missing one fails where the report imports it, with its own error
        import esac_kit.statistics  # noqa: F401


def keep_pyarrow_out() -> None:
    """Keep pyarrow out of a process that ends with its run (the CLI's): pandas 3 imports it on import when it is
    installed (~35 MB), and a run writes no parquet. pandas then stores strings as Python objects, the same values;
    it keeps that choice for the process's life, so a process that goes on (a notebook, a test) must not call this."""
    if "pandas" not in sys.modules:
        sys.modules.setdefault("pyarrow", None)  # `import pyarrow` now raises ImportError, as if it were not installed


def release_generator_caches(suite: Suite) -> None:
    """Empty the functools caches of the suite's generator modules: their tables (GI's logic puzzles: ~11 MB) serve
    generation, and a run's instances exist before its first request."""
    for name in {i.generator.partition(":")[0] for i in suite.items if i.generator}:
        module = sys.modules.get(name)
        for value in vars(module).values() if module else ():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def _fingerprints(run: RunPlan) -> Fingerprints:
    """The suite's fingerprints, reusing a public run's own instances (and unused tasks) rather than drawing again."""
    public = run.pool == public_pool(run.suite.manifest.public_seed) and not run.config.pack
    known = {i: (instance, run.tasks.get(i)) for i, instance in run.instances.items()} if public else None
    return compute(run.suite, known)


async def _drive(run, journal, policy, cache, urls, on_progress, session, stop):
    config, suite = run.config, run.suite
    limits = httpx.Limits(max_connections=max(8, config.concurrency * 2))
    async with httpx.AsyncClient(limits=limits) as client:
        def provider(name: str | None, params: ModelParams | None = None) -> Provider | None:
            if name is None:
                return None
            ref = parse_model(name)
            return make_provider(ref, client, urls.get(ref.provider), wait_for_time_budget=config.time_budgets,
                                 params=params, idle_timeout_s=policy.idle_timeout_s)

        # -M parameters are the evaluated model's; the judge's stay pinned by the suite (amendment 001 §5)
        model, judge = provider(config.model, ModelParams(**config.model_params)), provider(config.judge)
        answers = None
        if config.batch:  # answers and judgements through the batch APIs; AG episodes stay interactive
            say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
            answers = BatchQueue(model, run.folder, policy.batch_poll_s, say)
            judge = BatchQueue(judge, run.folder, policy.batch_poll_s, say) if judge else None
        settings = RunSettings(run_id=config.run_id, model=model, judge=judge, answers=answers,
                               temperature=config.temperature, judge_temperature=config.judge_temperature,
                               judge_max_tokens=config.judge_max_tokens, concurrency=config.concurrency,
                               policy=policy, cache=cache, max_tokens_cap=config.max_tokens_cap,
                               max_turns_cap=config.max_turns_cap, time_budgets=config.time_budgets,
                               on_progress=on_progress)
        runner = Runner(settings, journal, {i.id: i for i in run.items}, run.instances,
                        suite.manifest.output_budget_tokens, suite.manifest.time_budget_s, run.tasks,
                        suite.manifest.episode_token_budget)
        session["runner"] = runner
        return await runner.run(plan(run.items), stop)


def terminal_progress(stream=None) -> Callable[[Progress], None]:
    """A one-line progress bar on stderr: done / total, retries and ETA."""
    stream = stream or sys.stderr
    interactive = stream.isatty()
    last = {"printed": -1, "at": time.monotonic()}

    def show(progress: Progress) -> None:
        # A log gets a line per observation, and one a minute while AG episodes are under way.
        quiet = time.monotonic() - last["at"] < 60 or not progress.turns
        if not interactive and progress.done == last["printed"] and quiet:
            return
        last["printed"], last["at"] = progress.done, time.monotonic()
        width = 30
        filled = int(width * progress.done / max(1, progress.total))
        eta = "--" if progress.eta_s is None else f"{progress.eta_s:4.0f}s"
        retries = sum(progress.retries.values())
        line = f"[{'#' * filled}{'.' * (width - filled)}] {progress.done}/{progress.total}  retries {retries}  ETA {eta}"
        if progress.turns:
            line += "  " + ", ".join(f"{task} turn {turn}" for task, turn in sorted(progress.turns.items()))
        stream.write(("\r\033[K" + line) if interactive else line + "\n")
        if interactive and progress.done == progress.total:
            stream.write("\n")
        stream.flush()

    return show
