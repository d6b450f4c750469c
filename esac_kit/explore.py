"""What the marimo notebooks call (notebooks/*.py): starting and watching a run, reading run folders while they
grow, the variance explorer's tables and charts, the rubric workbench and the report's sections.

Every function returns plain data, pandas DataFrames or altair charts, so the same calls work in JupyterLab.
Nothing here imports marimo except notebook_args().
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import html
import json
import math
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import altair as alt
import pandas as pd
from pydantic import ValidationError

from esac_kit.errors import ConfigError
from esac_kit.journal import CONFIG_FILE, JOURNAL_FILE, Observation, observations_frame
from esac_kit.report import TaskEfficiency, Report
from esac_kit.schemas import ItemSpec, Rubric, Variant
from esac_kit.suite import Suite, default_items_dir, load_suite

# ---------------------------------------------------------------- notebook arguments and run folders


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
    """A run folder's observations so far, read-only: safe while a run appends (a torn last line is skipped,
    never truncated, unlike journal.Journal, which owns the file)."""
    path = folder / JOURNAL_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    observations = []
    for number, line in enumerate(raw.splitlines(keepends=True), 1):
        if not line.endswith(b"\n"):
            break  # being written right now
        try:
            observations.append(Observation.model_validate_json(line))
        except (ValueError, ValidationError):
            raise ConfigError(f"{path}: corrupt journal line {number}") from None
    return observations


def run_frame(folder: Path) -> pd.DataFrame:
    """The tidy observation table of a run folder, from its journal (the source of truth)."""
    observations = read_observations(folder)
    if not observations:
        raise ConfigError(f"{folder}: no observations yet")
    return observations_frame(observations)


# ---------------------------------------------------------------- starting, resuming and watching a run


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
    from esac_kit.runner import plan

    return len(plan([i for i in suite.items if not config.items or i.id in config.items]))


def plan_new_run(suite_id: str = "gi", pool: str = "public", model: str = "local", judge: str | None = None,
                 concurrency: int = 4, temperature: float = 1.0, seed: str | None = None,
                 seed_file: Path | None = None, pack: Path | None = None, only: list[str] | None = None,
                 reports_dir: Path = Path("reports"), items_dir: Path | None = None) -> RunPlan:
    """Settle a new run as `esac run` does: pool 'public', 'heldout' (seed from $ESAC_HELDOUT_SEED or seed_file)
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
    """Settle the continuation of a run folder, as `esac run --resume` does."""
    from esac_kit.runs import load_config, pool_for

    config = load_config(folder)
    suite = load_suite(config.suite, items_dir)
    if suite.manifest.version != config.version:
        raise ConfigError(f"{folder}: run of {config.suite} {config.version} cannot resume under "
                          f"{suite.manifest.version}")
    pool = pool_for(config, suite, seed_file)
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


def item_table(report: Report) -> pd.DataFrame:
    """One row per scored item: category, score, observations, outcomes and replicate spreads."""
    return pd.DataFrame([{"item": i.item_id, "category": i.category, "score": i.score, "weight": i.weight,
                          "observations": i.observations,
                          "outcomes": ", ".join(f"{k} {v}" for k, v in sorted(i.outcomes.items())),
                          "answer_spread": i.answer_spread, "judge_spread": i.judge_spread}
                         for i in report.items],
                        columns=["item", "category", "score", "weight", "observations", "outcomes",
                                 "answer_spread", "judge_spread"])


# ---------------------------------------------------------------- variance explorer


def item_stability(frame: pd.DataFrame, judge_threshold: float = 0.1,
                   answer_threshold: float = 0.1) -> pd.DataFrame:
    """statistics.item_spread of one run with flags: unstable across judge replicates (judge spread above its
    threshold) or across model replicates (answer spread above its threshold); spreads are on the 0–1 scale."""
    from esac_kit.statistics import item_spread

    spread = item_spread(frame)
    spread.insert(0, "run_id", frame["run_id"].iloc[0] if len(frame) else "")
    spread["judge_unstable"] = spread["judge_spread"].gt(judge_threshold)
    spread["model_unstable"] = spread["answer_spread"].gt(answer_threshold)
    spread["flag"] = [" + ".join(name for name, on in (("judge", j), ("model", m)) if on) or "stable"
                      for j, m in zip(spread["judge_unstable"], spread["model_unstable"])]
    return spread


def observation_grid(frame: pd.DataFrame, item_id: str) -> pd.DataFrame:
    """An item's observations (model replicate × judge replicate) with responses, scores and rationales."""
    rows = frame[frame["item_id"] == item_id]
    columns = ["run_id", "item_id", "model_replicate", "judge_replicate", "outcome", "score", "response",
               "judge_rationale", "judge_levels", "attempts"]
    return rows[columns].sort_values(["model_replicate", "judge_replicate"]).reset_index(drop=True)


def observation_html(grid: pd.DataFrame) -> str:
    """The observations of one item side by side: one column per answer (model replicate), its response, and
    under it each judge replicate's score, levels and rationale. Text is escaped."""
    columns = []
    for replicate, rows in grid.groupby("model_replicate", sort=True):
        first = rows.iloc[0]
        verdicts = "".join(
            f"<div style='border-top:1px solid #ddd;padding:4px 0'><b>judge {_int_or_dash(r.judge_replicate)}</b>"
            f" · score {r.score:.3f}<br><code>{html.escape(str(r.judge_levels))}</code><br>"
            f"{html.escape(str(r.judge_rationale or ''))}</div>" for r in rows.itertuples())
        columns.append(
            f"<div style='flex:1;min-width:0'><h4>answer {replicate} · {html.escape(str(first.outcome))}</h4>"
            f"<div style='white-space:pre-wrap;max-height:22em;overflow:auto;background:#f6f6f6;padding:6px;"
            f"font-size:0.85em'>{html.escape(str(first.response))}</div>{verdicts}</div>")
    return "<div style='display:flex;gap:12px'>" + "".join(columns) + "</div>"


def _int_or_dash(value) -> str:
    return "-" if value is None or pd.isna(value) else str(int(value))


def variance_table(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Per run: the nested variance components (items > answers > judge calls), their shares, and the judge's
    reliability (ICC(1) with its 95 % interval, ICC(1,k), Krippendorff's alpha)."""
    from esac_kit.statistics import judge_reliability, variance_components

    rows = []
    for label, frame in frames.items():
        vc, rel = variance_components(frame), judge_reliability(frame)
        total = vc.var_item + vc.var_answer + vc.var_judge
        share = (lambda v: v / total) if total and not math.isnan(total) else (lambda v: float("nan"))
        rows.append({"run": label, "items": vc.n_items, "answers": vc.n_answers, "judgements": vc.n_judgements,
                     "excluded": vc.n_items_excluded, "var_item": vc.var_item, "var_answer": vc.var_answer,
                     "var_judge": vc.var_judge, "share_item": share(vc.var_item),
                     "share_answer": share(vc.var_answer), "share_judge": share(vc.var_judge),
                     "icc1": rel.icc1, "icc1_low": rel.icc1_low, "icc1_high": rel.icc1_high, "icc1k": rel.icc1k,
                     "alpha": rel.alpha})
    return pd.DataFrame(rows)


def d_study_frame(frames: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """statistics.d_study of each run (standard error of an item mean per design of answers × judge calls)."""
    from esac_kit.statistics import d_study, variance_components

    parts = []
    for label, frame in frames.items():
        vc = variance_components(frame)
        if vc.n_items == 0:
            continue
        part = d_study(vc)
        part.insert(0, "run", label)
        parts.append(part)
    columns = ["run", "answers", "judgements", "observations", "var_error", "se_item", "g_coefficient"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)


def d_study_chart(study: pd.DataFrame) -> alt.Chart:
    """SE of an item mean against answers per item, one line per number of judge calls (the current design
    is 2 × 2, amendment 001 §5); one panel per run."""
    data = study.dropna(subset=["se_item"])
    chart = alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("answers:O", title="answers (model replicates) per item"),
        y=alt.Y("se_item:Q", title="SE of an item mean"),
        color=alt.Color("judgements:O", title="judge calls per answer"),
        tooltip=["run:N", "answers:O", "judgements:O", alt.Tooltip("se_item:Q", format=".4f"),
                 alt.Tooltip("g_coefficient:Q", format=".3f")])
    if data["run"].nunique() > 1:
        return chart.properties(width=220, height=180).facet(column=alt.Column("run:N", title=None))
    return chart.properties(title="D-study", width=360, height=220)


def spread_chart(stability: pd.DataFrame) -> alt.Chart:
    """Each judge-graded item's answer spread against its judge spread, coloured by flag: select points to drill."""
    data = stability.dropna(subset=["answer_spread", "judge_spread"])[
        ["run_id", "item_id", "category", "mean", "answer_spread", "judge_spread", "flag"]]
    return alt.Chart(data).mark_circle(size=90, opacity=0.8).encode(
        x=alt.X("answer_spread:Q", title="spread across model replicates"),
        y=alt.Y("judge_spread:Q", title="spread across judge replicates"),
        color=alt.Color("flag:N", scale=alt.Scale(domain=["stable", "judge", "model", "judge + model"],
                                                  range=["#4c78a8", "#f58518", "#e45756", "#b279a2"])),
        shape="run_id:N",
        tooltip=["run_id:N", "item_id:N", "category:N", alt.Tooltip("mean:Q", format=".3f"),
                 alt.Tooltip("answer_spread:Q", format=".3f"), alt.Tooltip("judge_spread:Q", format=".3f")],
    ).properties(title="judge-graded items: replicate spreads", width=360, height=260)


# ---------------------------------------------------------------- rubric workbench


def judged_items(suite: Suite) -> list[str]:
    """The ids of a suite's judge-graded items."""
    return [i.id for i in suite.items if i.scoring == "judge"]


def criteria_frame(rubric: Rubric) -> pd.DataFrame:
    """A rubric's criteria: weight and its share, gate, whether the kit verifies it in code, and its levels."""
    total = sum(c.weight for c in rubric.criteria)
    return pd.DataFrame([{"criterion": c.id, "weight": c.weight, "share": c.weight / total, "gate": c.gate,
                          "verified_in_code": c.verified_in_code or "", "levels": len(c.levels),
                          "description": c.description} for c in rubric.criteria])


def edited_rubric(rubric: Rubric, edits: Mapping[str, Mapping]) -> Rubric:
    """A rubric with edited criteria: edits[criterion id] may set 'description', 'weight' and 'levels' (a list,
    or text with one level per line, lowest first). The result is validated (gate ≥ half the weight, §2)."""
    criteria = []
    for criterion in rubric.criteria:
        data = criterion.model_dump()
        change = edits.get(criterion.id) or {}
        if change.get("description") is not None:
            data["description"] = str(change["description"]).strip()
        if change.get("weight") is not None:
            data["weight"] = float(change["weight"])
        levels = change.get("levels")
        if levels is not None:
            data["levels"] = [line.strip() for line in levels.splitlines() if line.strip()] \
                if isinstance(levels, str) else list(levels)
            if criterion.verified_in_code and len(data["levels"]) != len(criterion.levels):
                raise ConfigError(f"rubric: criterion '{criterion.id}' is verified in code by "
                                  f"'{criterion.verified_in_code}', whose check gives {len(criterion.levels)} "
                                  f"levels: keep {len(criterion.levels)}")
        criteria.append(data)
    try:
        return Rubric.model_validate({"criteria": criteria})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        message = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"rubric: {where + ': ' if where else ''}{message}") from None


def with_rubric(item: ItemSpec, rubric: Rubric) -> ItemSpec:
    """The item with another rubric, validated as an item file would be."""
    return ItemSpec.model_validate({**item.model_dump(), "rubric": rubric.model_dump()})


@dataclass(frozen=True)
class RubricBump:
    """What an edited rubric means for the suite's version (amendment 001 §9)."""

    edit_change: str | None  # 'major' (a scoring change), 'minor' or None, relative to the suite on disk
    release_change: str | None  # the bump `esac fingerprints --release` would make against the last release
    recorded: str  # the last released version
    next_version: str | None
    scoring_before: str
    scoring_after: str

    def message(self) -> str:
        """One paragraph stating the rule and what it asks for here."""
        if self.edit_change is None:
            return "No scoring change: the scoring fingerprint is unchanged, so no version bump is needed."
        return (f"A rubric change is a scoring change (amendment 001 §9: rubric criteria and weights are part of "
                f"the scoring fingerprint, {self.scoring_before} → {self.scoring_after}), so it needs a major "
                f"bump: release it as {self.next_version} with `esac fingerprints --release` after saving. Scores "
                f"of {self.next_version} are never compared with {self.recorded.split('.')[0]}.x.")


def rubric_bump(suite: Suite, item_id: str, rubric: Rubric) -> RubricBump:
    """The version bump an edited rubric requires, from the content and scoring fingerprints."""
    from esac_kit.fingerprints import Fingerprints, bumped, compute, read_versions, required_bump

    edited = Suite(suite.manifest, tuple(with_rubric(i, rubric) if i.id == item_id else i for i in suite.items),
                   suite.folder)
    before, after = compute(suite), compute(edited)
    latest = read_versions(suite)[-1]
    release = required_bump(Fingerprints(latest.content, latest.scoring), after)
    return RubricBump(required_bump(before, after), release, latest.version,
                      bumped(latest.version, release) if release else None, before.scoring, after.scoring)


def save_rubric(suite: Suite, item_id: str, rubric: Rubric) -> Path:
    """Write an edited rubric's descriptions, weights and levels back into the item file, keeping the rest of
    the file as it is; the criteria ids, order, gate and code checks cannot change here. Returns the path."""
    import tomlkit

    from esac_kit.suite import read_item

    path = suite.folder / f"{item_id}.toml"
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    table = document["rubric"]["criteria"]
    if [c["id"] for c in table] != [c.id for c in rubric.criteria]:
        raise ConfigError(f"{path}: the edited rubric's criteria differ from the file's: only descriptions, "
                          f"weights and levels can be saved")
    for entry, criterion in zip(table, rubric.criteria):
        if entry["description"] != criterion.description:
            entry["description"] = criterion.description
        if float(entry["weight"]) != criterion.weight:
            entry["weight"] = criterion.weight
        if list(entry["levels"]) != criterion.levels:
            # the files' layout: one level per line, indented by two spaces
            lines = "".join(f"  {json.dumps(level, ensure_ascii=False)},\n" for level in criterion.levels)
            entry["levels"] = tomlkit.parse(f"levels = [\n{lines}]\n")["levels"]
    text = tomlkit.dumps(document)
    with tempfile.TemporaryDirectory() as scratch:
        check = Path(scratch) / path.name  # read_item wants the file named after the item
        check.write_text(text, encoding="utf-8")
        try:
            saved = read_item(check)
        except ConfigError as error:
            raise ConfigError(f"{path}: the edited item does not validate: {error}") from None
    if saved.rubric != rubric:
        raise ConfigError(f"{path}: the saved rubric would differ from the edited one")
    temporary = path.with_suffix(".toml.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def run_variant(item: ItemSpec, frame: pd.DataFrame, pack: Path | None = None, suite: Suite | None = None) -> Variant:
    """The variant a run answered for an item, found by the sha-256 of its prompt (no seed needed)."""
    rows = frame[frame["item_id"] == item.id]
    if rows.empty:
        raise ConfigError(f"the run holds no observation of '{item.id}'")
    digest = str(rows["prompt_sha256"].iloc[0])
    variants = list(item.variants)
    if pack is not None and suite is not None:
        from esac_kit.instances import pack_item

        variants += list(pack_item(suite, item, pack).variants)
    for variant in variants:
        if hashlib.sha256(variant.prompt.encode()).hexdigest() == digest:
            return variant
    raise ConfigError(f"the run's prompt for '{item.id}' matches none of its variants (a held-out variant? "
                      f"pass the run's pack)")


def rescore(frame: pd.DataFrame, item: ItemSpec, rubric: Rubric) -> pd.DataFrame:
    """The run's observations of an item rescored under another rubric from the levels already recorded (no
    judge call): valid for weight changes; criteria whose descriptions or level counts changed need the judge
    again (a recorded level outside a criterion's new scale gives NaN)."""
    from esac_kit.scoring import score_verdict

    rows = frame[frame["item_id"] == item.id].sort_values(["model_replicate", "judge_replicate"])
    out = []
    for row in rows.itertuples():
        levels = json.loads(row.judge_levels) if isinstance(row.judge_levels, str) else row.judge_levels
        usable = bool(levels) and all(0 <= levels.get(c.id, -1) < len(c.levels) for c in rubric.criteria)
        new = score_verdict(rubric, levels) if usable else float("nan")  # NaN: a new criterion or level scale
        out.append({"model_replicate": row.model_replicate, "judge_replicate": row.judge_replicate,
                    "recorded": row.score, "edited": new, "delta": new - row.score})
    return pd.DataFrame(out, columns=["model_replicate", "judge_replicate", "recorded", "edited", "delta"])


@dataclass
class Workbench:
    """A judged rubric trial: the anchors' check (required orders) and real responses scored by the judge."""

    check: object  # rubric_check.VariantCheck
    responses: pd.DataFrame = field(default_factory=pd.DataFrame)

    def anchors(self) -> pd.DataFrame:
        """One row per anchor: mean score and the score of each judge replicate."""
        return pd.DataFrame([{"anchor": kind, "score": score,
                              "replicates": ", ".join(f"{s:.3f}" for s in self.check.replicate_scores[kind])}
                             for kind, score in self.check.scores.items()])

    def relations(self) -> pd.DataFrame:
        """One row per required relation and whether it holds."""
        return pd.DataFrame([{"relation": r, "holds": ok} for r, ok in self.check.relations],
                            columns=["relation", "holds"])


def judge_workbench(item: ItemSpec, variant: Variant, rubric: Rubric, judge: str,
                    responses: Mapping[str, str] | None = None, recorded: Mapping[str, float] | None = None,
                    temperature: float = 0.7, max_tokens: int = 1024, policy=None) -> Workbench:
    """Judge the variant's anchors (twice each, as `esac rubric check`) and some real responses under an edited
    rubric; the judge is a model name as for `esac run --judge` ('local' starts the embedded model)."""
    from esac_kit.runner import RetryPolicy

    edited = with_rubric(item, rubric)
    policy = policy or RetryPolicy(max_attempts=4, base_s=0.5, request_timeout_s=300)
    return _in_fresh_loop(lambda: _workbench(edited, variant, judge, dict(responses or {}), dict(recorded or {}),
                                             temperature, max_tokens, policy))


def _in_fresh_loop(make_coroutine: Callable):
    """asyncio.run in a worker thread: a marimo kernel already runs an event loop in the cell's thread."""
    box: dict = {}

    def target():
        try:
            box["value"] = asyncio.run(make_coroutine())
        except BaseException as error:  # re-raised in the caller's thread
            box["error"] = error

    worker = threading.Thread(target=target, name="esac-judge")
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def _workbench(item: ItemSpec, variant: Variant, judge_name: str, responses: dict, recorded: dict,
                     temperature: float, max_tokens: int, policy) -> Workbench:
    import httpx

    from esac_kit.judge import empty_levels, judge_request, observation_levels, parse_verdict
    from esac_kit.providers import make_provider, parse_model
    from esac_kit.rubric_check import JUDGE_REPLICATES, check_variant
    from esac_kit.runner import with_retries
    from esac_kit.runs import endpoints_for
    from esac_kit.scoring import score_verdict

    ref = parse_model(judge_name)
    with endpoints_for([judge_name]) as urls:
        async with httpx.AsyncClient() as client:
            judge = make_provider(ref, client, urls.get(ref.provider))
            check = await check_variant(item, variant, judge, temperature, max_tokens, policy)

            async def score(response: str, replicate: int) -> float:
                if not response.strip():
                    return score_verdict(item.rubric, empty_levels(item.rubric))
                request = judge_request(item.rubric, variant.prompt, response, item.id, replicate, temperature,
                                        max_tokens)

                async def once():
                    reply = await judge.chat(request, timeout_s=policy.request_timeout_s or 300)
                    return parse_verdict(reply.text, item.rubric, judge.endpoint)

                verdict, _, _ = await with_retries(once, policy, item.id, "judge")
                return score_verdict(item.rubric, observation_levels(item.rubric, verdict.levels, response,
                                                                     variant.facts))

            rows = []
            for label, response in responses.items():
                scores = await asyncio.gather(*(score(response, r) for r in range(JUDGE_REPLICATES)))
                mean = sum(scores) / len(scores)
                rows.append({"response": label, "score": mean, "replicates": ", ".join(f"{s:.3f}" for s in scores),
                             "recorded": recorded.get(label, float("nan")),
                             "delta": mean - recorded.get(label, float("nan"))})
    return Workbench(check, pd.DataFrame(rows, columns=["response", "score", "replicates", "recorded", "delta"]))


# ---------------------------------------------------------------- the publishable report


def category_table(report: Report) -> pd.DataFrame:
    """Each category and the total: points, the 60 % line, pass/fail, t and bootstrap 95 % intervals,
    P(score ≥ 60 %) and the PASS / FAIL / INCONCLUSIVE label (amendment 001 §10)."""
    def pair(bounds):
        return (None, None) if bounds is None else bounds

    rows = []
    for c in report.categories:
        (t_low, t_high), (b_low, b_high) = pair(c.ci_t), pair(c.ci_bootstrap)
        rows.append({"category": c.id, "points": c.points, "max": c.max_points, "line_60": 0.6 * c.max_points,
                     "passed": c.passed, "ci_t_low": t_low, "ci_t_high": t_high, "ci_boot_low": b_low,
                     "ci_boot_high": b_high, "p_pass": c.p_pass, "label": c.label})
    (t_low, t_high), (b_low, b_high) = pair(report.total_ci_t), pair(report.total_ci_bootstrap)
    if report.modifier is not None:  # AG: the pass line is on the capability points; the modifier has none
        shift = report.modifier
        rows.append({"category": "capability", "points": report.capability, "max": report.max_capability,
                     "line_60": 0.6 * report.max_capability, "passed": report.passed,
                     "ci_t_low": None if t_low is None else t_low - shift,
                     "ci_t_high": None if t_high is None else t_high - shift,
                     "ci_boot_low": None if b_low is None else b_low - shift,
                     "ci_boot_high": None if b_high is None else b_high - shift, "p_pass": None, "label": None})
        rows.append({"category": "efficiency modifier", "points": report.modifier, "max": report.max_modifier,
                     "line_60": None, "passed": None, "ci_t_low": None, "ci_t_high": None, "ci_boot_low": None,
                     "ci_boot_high": None, "p_pass": None, "label": None})
    rows.append({"category": "total", "points": report.total, "max": report.max_total,
                 "line_60": None if report.modifier is not None else 0.6 * report.max_total,
                 "passed": report.passed, "ci_t_low": t_low,
                 "ci_t_high": t_high, "ci_boot_low": b_low, "ci_boot_high": b_high, "p_pass": None, "label": None})
    return pd.DataFrame(rows)


def efficiency_frame(report: Report) -> pd.DataFrame | None:
    """The efficiency breakdown of an AG run, one row per task with the costly calls listed; None for GI."""
    if report.efficiency is None:
        return None
    rows = []
    for task in report.efficiency:
        row = task.model_dump()
        for column in ("redundant_calls", "rework_calls", "invalid_calls"):
            row[column] = "; ".join(row[column])
        rows.append(row)
    return pd.DataFrame(rows, columns=list(TaskEfficiency.model_fields))


def failures_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Observations that were not a plain answer, or that needed retries: outcome, attempts and retry kinds."""
    mask = frame["outcome"].ne("answered") | frame["attempts"].gt(1) | frame["retries"].ne("{}")
    columns = ["item_id", "model_replicate", "judge_replicate", "outcome", "score", "attempts", "retries"]
    return frame.loc[mask, columns].reset_index(drop=True)


def provenance_frame(report: Report) -> pd.DataFrame:
    """What a reader needs to reproduce or audit the run: versions, fingerprints, model, judge and the pool
    (for a held-out run, only the salted commitment of its seed)."""
    judge = report.judge
    rows = [("suite", f"{report.suite.upper()} {report.version}"), ("run", report.run_id),
            ("kit version", report.kit_version),
            ("content fingerprint", report.fingerprints.get("content", "")),
            ("scoring fingerprint", report.fingerprints.get("scoring", "")),
            ("model", report.model.name), ("model parameters", _params(report.model.parameters)),
            ("judge", judge.name if judge else "-"), ("judge parameters", _params(judge.parameters) if judge else "-"),
            ("pool (seed or commitment)", report.pool), ("official", "yes" if report.official else "no"),
            ("created", report.created_at), ("rendered", report.rendered_at)]
    return pd.DataFrame(rows, columns=["field", "value"])


def _params(parameters: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in parameters.items())
