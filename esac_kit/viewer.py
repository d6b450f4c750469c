"""The per-sample viewer (`esac-kit view RUN`): every item of a run folder with its prompt and key, regenerated from
the run's pool, beside what the journal holds of each answer: response, extracted answer, score, outcome, retries,
tokens; a judged item's answers and verdicts side by side; an AG episode step by step. Rendered as one offline
HTML page here, and wired to controls by notebooks/view.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from esac_kit import html
from esac_kit.errors import ConfigError
from esac_kit.journal import JOURNAL_FILE, read_journal
from esac_kit.kinds import kind_of
from esac_kit.records import EpisodeDetail, Observation, RunConfig, prompt_sha256
from esac_kit.schemas import (AgenticKey, CodeTestsKey, ConstraintsKey, ExactKey, HonestyKey, Instance, ItemSpec,
                              JudgeKey, Rubric)
from esac_kit.suite import Suite, load_suite

VIEW_FILE = "view.html"
SHORT = 160  # characters of a long value in the observation table; the sample shows it whole


# ---------------------------------------------------------------- what a run's samples are


@dataclass(frozen=True)
class Verdict:
    """One judge replicate's verdict on an answer, as journalled."""

    judge_replicate: int
    line: int  # the journal line (1-based)
    score: float
    levels: dict[str, int]
    rationale: str
    tokens_in: int
    tokens_out: int
    attempts: int
    retries: dict[str, int]


@dataclass(frozen=True)
class Step:
    """One tool call of an AG episode: call, arguments, result, state diff, how the harness classed it, tokens."""

    index: int
    tool: str
    arguments: Any
    result: str
    status: str
    flags: list[str]  # redundant / rework / invalid / tool error, with the steps they refer to
    diff: dict[str, list[Any]]  # state key -> [before, after]
    tokens: int


@dataclass(frozen=True)
class Episode:
    """An AG observation's episode: how it ended, the submitted answer, checks, counts, efficiency and steps."""

    end: str
    answer: str | None
    checks: dict[str, bool]
    counts: dict[str, int]
    efficiency: dict[str, Any]
    steps: list[Step]


@dataclass(frozen=True)
class Answer:
    """One model replicate of an item: the response and what scoring made of it, and its judge verdicts."""

    model_replicate: int
    lines: list[int]
    outcome: str
    response: str
    response_chars: int | None  # the whole response's length when the journal kept it cut
    thinking: str
    extracted: str | None  # the answer scoring read from the response (None: the response is scored whole)
    scoring: str  # what scoring found, in one line (correct, 7/8 constraints met, 5/6 checks, ...)
    score: float  # the mean over its observations (its judge replicates)
    detail: dict[str, Any]
    tokens_in: int
    tokens_out: int
    tokens_reasoning: int
    latency_s: float
    attempts: int
    retries: dict[str, int]
    verdicts: list[Verdict] = field(default_factory=list)
    episode: Episode | None = None


@dataclass(frozen=True)
class Sample:
    """One item of a run: prompt, key and reference when regenerated, its answers, score and what is missing."""

    item_id: str
    category: str
    title: str
    kind: str
    prompt: str | None
    key: str | None  # the key and reference as `esac-kit show --answer` prints them
    expected: str | None  # the expected answer in one line, where the key has one
    rubric: Rubric | None
    checks: dict[str, str]  # an AG task's check id -> description (and guard)
    answers: list[Answer]
    notes: list[str]

    @property
    def observations(self) -> int:
        """How many journal lines this item has."""
        return sum(len(a.lines) for a in self.answers)

    @property
    def score(self) -> float | None:
        """The item's score: the mean of its observations (None before the first)."""
        scores = [v.score for a in self.answers for v in a.verdicts] or [a.score for a in self.answers]
        return sum(scores) / len(scores) if scores else None

    @property
    def outcomes(self) -> list[str]:
        """Each answer's outcome."""
        return [a.outcome for a in self.answers]


@dataclass(frozen=True)
class RunSamples:
    """A run folder's samples, its config, its observations in journal order and the viewer's notes."""

    folder: Path
    config: RunConfig
    samples: list[Sample]
    observations: list[Observation]
    notes: list[str]


# ---------------------------------------------------------------- reading a run folder


def load_run(folder: Path | str, seed_file: Path | str | None = None, items_dir: Path | str | None = None,
             pack: Path | str | None = None) -> RunSamples:
    """A run folder's samples: the journal as it stands (a run may still be appending), with prompts and keys
    regenerated from the run's pool; what cannot be regenerated (a held-out pool without its seed, another item
    bank) is left out and said in the notes."""
    from esac_kit.runs import load_config

    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder}: no such run folder")
    config = load_config(folder)
    suite = load_suite(config.suite, Path(items_dir) if items_dir else None)
    observations = read_journal(folder / JOURNAL_FILE, owner=False)
    notes = journal_problems(observations)
    items = [i for i in suite.items if not config.items or i.id in config.items]
    instances, tasks = _regenerate(suite, config, items, seed_file, pack, notes)
    lines: dict[str, list[tuple[int, Observation]]] = {}
    for number, observation in enumerate(observations, 1):
        lines.setdefault(observation.item_id, []).append((number, observation))
    known = {i.id: i for i in suite.items}
    planned = {i.id for i in items}
    missed = [] if not instances else ["not regenerated: see the notes at the top"]
    samples = [_sample(item, item.category, instances.get(item.id), tasks.get(item.id), lines.get(item.id, []),
                       missed) for item in items]
    # a journal may name items the plan or this item bank lacks: they are shown all the same, from the journal
    samples += [_sample(known.get(item_id), rows[0][1].category, None, None, rows,
                        [f"the run did not plan {item_id}" if item_id in known else
                         f"this item bank does not hold {item_id}: only its journal lines are shown"])
                for item_id, rows in lines.items() if item_id not in planned]
    missing = sum(not s.answers for s in samples)
    if missing:
        notes.append(f"{missing} of {len(samples)} planned items have no observation yet")
    return RunSamples(folder, config, samples, observations, notes)


def journal_problems(observations: list[Observation]) -> list[str]:
    """What a viewer says of a journal that names a plan slot twice: both lines are shown, and a report refuses it."""
    first: dict[tuple, int] = {}
    problems = []
    for number, observation in enumerate(observations, 1):
        if observation.slot in first:
            problems.append(f"journal line {number} repeats the observation of line {first[observation.slot]} "
                            f"({observation.item_id}, answer {observation.model_replicate}, judge "
                            f"{observation.judge_replicate}): both are shown; `esac-kit report` refuses this journal")
        first.setdefault(observation.slot, number)
    return problems


def _regenerate(suite: Suite, config: RunConfig, items: list[ItemSpec], seed_file, pack,
                notes: list[str]) -> tuple[dict[str, Instance], dict[str, object]]:
    """The run's instances and AG tasks again, from its recorded pool; none, with a note, when that cannot be."""
    from esac_kit.instances import build_task, generate
    from esac_kit.pools import recorded_pool

    if suite.manifest.version != config.version:
        notes.append(f"the item bank is {suite.manifest.name} {suite.manifest.version} but the run is "
                     f"{config.version}: prompts and keys are not regenerated, only the journal is shown")
        return {}, {}
    try:
        pool = recorded_pool(config.pool, Path(seed_file) if seed_file else None)
    except ConfigError as error:
        notes.append(f"held-out pool ({error}): prompts and keys are not regenerated (the journal keeps only "
                     f"their digests); give the seed with --heldout-seed-file to see them")
        return {}, {}
    pack = Path(pack) if pack else Path(config.pack) if config.pack else None
    instances, tasks = {}, {}
    for item in items:
        try:
            task = build_task(suite, item, pool) if kind_of(item).episodic else None
            instances[item.id] = generate(suite, item, pool, pack, task)
        except ConfigError as error:
            notes.append(f"{item.id}: not regenerated: {error}")
            continue
        if task is not None:
            tasks[item.id] = task
    return instances, tasks


def _sample(item: ItemSpec | None, category: str, instance: Instance | None, task,
            rows: list[tuple[int, Observation]], missing: list[str]) -> Sample:
    """One item's sample from its journal lines and, when regenerated, its instance (else the `missing` notes);
    an item the bank does not hold (`item` None) is shown from its journal lines alone."""
    if item is None:
        return Sample(rows[0][1].item_id, category, "not in this item bank", "unknown", None, None, None, None, {},
                      _answers(rows), missing)
    notes = []
    if instance is not None:
        answered = {o.prompt_sha256 for _, o in rows if o.prompt_sha256}
        if answered and answered != {prompt_sha256(instance.prompt)}:
            notes.append("the regenerated prompt is not the one answered (its digest differs): prompt and key "
                         "are not shown")
            instance = None
    else:
        notes += missing
    kind = kind_of(item)
    key = kind.show(instance, task, True).strip() if instance is not None else None
    checks = ({c.id: c.description + (" (guard: must hold or the task scores 0)" if c.guard else "")
               for c in task.checks} if task is not None else {})
    return Sample(item.id, category, item.title, item.scoring, instance.prompt if instance else None, key,
                  expected_answer(instance) if instance else None, item.rubric, checks, _answers(rows), notes)


def _answers(rows: list[tuple[int, Observation]]) -> list[Answer]:
    """An item's journal lines grouped into its model replicates."""
    by_replicate: dict[int, list[tuple[int, Observation]]] = {}
    for number, observation in rows:
        by_replicate.setdefault(observation.model_replicate, []).append((number, observation))
    return [_answer(replicate, sorted(group, key=lambda r: r[1].judge_replicate or 0))
            for replicate, group in sorted(by_replicate.items())]


def _answer(replicate: int, rows: list[tuple[int, Observation]]) -> Answer:
    """One model replicate from its journal lines (one, or one per judge replicate)."""
    first = rows[0][1]
    detail = first.score_detail
    verdicts = [Verdict(o.judge_replicate, number, o.score, o.judge_levels or {}, o.judge_rationale or "",
                        o.judge_tokens_in, o.judge_tokens_out, o.attempts, o.retries)
                for number, o in rows if o.judge_replicate is not None]
    retries: dict[str, int] = {}
    for _, o in rows:
        for kind, count in o.retries.items():
            retries[kind] = retries.get(kind, 0) + count
    scoring = (f"{len(verdicts)} verdict(s): " + ", ".join(f"{v.score:.3f}" for v in verdicts) if verdicts
               else scoring_summary(detail))
    return Answer(replicate, [n for n, _ in rows], first.outcome, first.response, first.response_chars,
                  first.thinking, extracted_answer(first), scoring,
                  sum(o.score for _, o in rows) / len(rows), detail, first.tokens_in, first.tokens_out,
                  first.tokens_reasoning, first.latency_s, sum(o.attempts for _, o in rows), retries, verdicts,
                  episode_of(detail))


def episode_of(detail: dict[str, Any]) -> Episode | None:
    """An AG observation's episode from its journalled score detail (None for other observations)."""
    if "efficiency" not in detail:
        return None
    episode = EpisodeDetail.model_validate(detail)
    steps = [Step(s.index, s.tool, s.arguments, s.result, s.status, step_flags(s.status, s.redundant_of, s.rework_of),
                  s.diff, s.tokens) for s in episode.steps]
    return Episode(episode.end, episode.answer, episode.checks, episode.counts.model_dump(),
                   episode.efficiency.model_dump(), steps)


def step_flags(status: str, redundant_of: int | None, rework_of: list[int]) -> list[str]:
    """What the harness found wrong with a call (amendment 001 §1): redundant, rework, invalid, a tool error."""
    flags = []
    if redundant_of is not None:
        flags.append(f"redundant: repeats #{redundant_of}")
    if rework_of:
        flags.append("rework: overwrites " + ", ".join(f"#{i}" for i in rework_of))
    if status == "invalid":
        flags.append("invalid")
    if status == "tool_error":
        flags.append("tool error")
    return flags


def extracted_answer(observation: Observation) -> str | None:
    """The answer scoring read from a response, as its score detail recorded it: the `ANSWER:` value, the labelled
    parts, an AG episode's submitted answer; None where the response is scored whole (constraints, code: the
    sandbox ran its last python block, which the core does not parse apart, judged answers)."""
    detail = observation.score_detail
    if "efficiency" in detail:
        return detail.get("answer")
    given = detail.get("given")
    if isinstance(given, dict):
        return "; ".join(f"{label}: {value}" for label, value in sorted(given.items()))
    return given


def expected_answer(instance: Instance) -> str | None:
    """The key's expected answer in one line where it has one (the full key is in the sample)."""
    key = instance.key
    if isinstance(key, ExactKey):
        return key.answer
    if isinstance(key, HonestyKey):
        return "; ".join(f"{p.label}: {p.answer if p.answerable else 'decline (unanswerable)'}" for p in key.parts)
    if isinstance(key, ConstraintsKey):
        return f"{len(key.constraints)} constraints" + (f", {len(key.gate)} gate" if key.gate else "")
    if isinstance(key, CodeTestsKey):
        return f"{len(key.tests)} hidden tests of {key.entry_point}"
    if isinstance(key, JudgeKey):
        return f"rubric (variant {key.variant})"
    if isinstance(key, AgenticKey):
        return f"{len(key.checks)} checks on the final state"
    return None


def scoring_summary(detail: dict[str, Any]) -> str:
    """What scoring found, in one line, from a journalled score detail."""
    if "efficiency" in detail:
        checks = detail.get("checks", {})
        return f"{sum(checks.values())}/{len(checks)} checks, {'success' if detail.get('success') else 'failed'}"
    if "correct" in detail:
        return "correct" if detail["correct"] else "wrong"
    if "met" in detail:
        met = detail["met"]
        gate = detail.get("gate_failed") or []
        return (f"gate failed: {', '.join(gate)}; " if gate else "") + f"{sum(met.values())}/{len(met)} constraints met"
    if "parts" in detail:
        parts = detail["parts"]
        return f"{sum(parts.values())}/{len(parts)} parts right"
    if "passed" in detail:
        passed = detail["passed"]
        sandbox = detail.get("sandbox")
        return f"{sum(passed)}/{len(passed)} tests pass" + (f" (sandbox: {sandbox})" if sandbox not in (None, "ok")
                                                            else "")
    if "error" in detail:
        return str(detail["error"])
    if "levels" in detail:
        return ", ".join(f"{k} {v}" for k, v in detail["levels"].items())
    return ""


# ---------------------------------------------------------------- tables and filters


# answer and judge are the model and judge replicates; tokens are the model's in / out
OBSERVATION_COLUMNS = ["line", "item_id", "answer", "judge", "outcome", "score", "scoring", "extracted", "expected",
                       "attempts", "retries", "tokens", "judge_tokens", "latency_s"]


def observation_table(run: RunSamples, samples: Iterable[Sample] | None = None, short: bool = True) -> pd.DataFrame:
    """One row per journal line of the given samples (default: all), in journal order; long texts cut to SHORT
    characters when `short` (the samples show them whole)."""
    chosen = {s.item_id: s for s in (run.samples if samples is None else samples)}
    def cut(text: str | None) -> str:
        if text is None:
            return "—"
        return text[:SHORT - 1] + "…" if short and len(text) > SHORT else text

    rows = []
    for number, o in enumerate(run.observations, 1):
        sample = chosen.get(o.item_id)
        if sample is None:
            continue
        answer = next(a for a in sample.answers if number in a.lines)
        rows.append({"line": number, "item_id": o.item_id, "answer": o.model_replicate,
                     "judge": "—" if o.judge_replicate is None else str(o.judge_replicate), "outcome": o.outcome, "score": o.score, "scoring": scoring_summary(o.score_detail),
                     "extracted": cut(answer.extracted), "expected": cut(sample.expected),
                     "attempts": o.attempts,
                     "retries": ", ".join(f"{k} {v}" for k, v in sorted(o.retries.items())),
                     "tokens": f"{o.tokens_in} / {o.tokens_out}", "judge_tokens": o.judge_tokens_in + o.judge_tokens_out, "latency_s": o.latency_s})
    return pd.DataFrame(rows, columns=OBSERVATION_COLUMNS)


def filter_samples(run: RunSamples, categories: Iterable[str] = (), outcomes: Iterable[str] = (),
                   score_range: tuple[float, float] = (0.0, 1.0), text: str = "",
                   answered_only: bool = False) -> list[Sample]:
    """The samples in the given categories, with an answer of one of the outcomes, an item score within the range
    and `text` in the item id, title, prompt or a response (case-folded); empty filters keep everything."""
    categories, outcomes, needle = set(categories), set(outcomes), text.strip().casefold()
    low, high = score_range
    chosen = []
    for sample in run.samples:
        if categories and sample.category not in categories:
            continue
        if outcomes and not outcomes & set(sample.outcomes):
            continue
        score = sample.score
        if score is None and answered_only:
            continue
        if score is not None and not low <= score <= high:
            continue
        haystack = [sample.item_id, sample.title, sample.prompt or ""] + [a.response for a in sample.answers]
        if needle and not any(needle in part.casefold() for part in haystack):
            continue
        chosen.append(sample)
    return chosen


def sample_by_id(run: RunSamples, item_id: str) -> Sample:
    """The sample of one item, or a ConfigError naming the run."""
    for sample in run.samples:
        if sample.item_id == item_id:
            return sample
    raise ConfigError(f"{run.folder}: the run has no item '{item_id}'")


# ---------------------------------------------------------------- HTML


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False,
                                                            default=str)


def _facts(answer: Answer) -> str:
    """An answer's figures as a two-column table."""
    cut = f" (stored cut; the whole response had {answer.response_chars} characters)" if answer.response_chars else ""
    rows = [("outcome", answer.outcome), ("score", answer.score), ("scoring", answer.scoring),
            ("extracted answer", "—" if answer.extracted is None or answer.episode else answer.extracted),
            ("attempts (all its lines)" if len(answer.lines) > 1 else "attempts", answer.attempts),
            ("retries", ", ".join(f"{k} {v}" for k, v in sorted(answer.retries.items())) or "none"),
            ("tokens in / out / reasoning", f"{answer.tokens_in} / {answer.tokens_out} / {answer.tokens_reasoning}"),
            ("latency s", answer.latency_s), ("journal lines", ", ".join(map(str, answer.lines)) + cut)]
    return html.table(pd.DataFrame(rows, columns=["", "value"]), digits=3)


def answer_html(answer: Answer) -> str:
    """One model replicate: its figures, response, thinking and score detail (escaped)."""
    parts = [f"<h4>answer {answer.model_replicate} · {html.escape(answer.outcome)} · score "
             f"{html.number(answer.score, 3)}</h4>", _facts(answer)]
    if answer.extracted is not None and not answer.episode and "\n" in answer.extracted:
        parts.append(html.details("extracted answer", html.block(answer.extracted), opened=True))
    if answer.episode is None or answer.response != (answer.episode.answer or ""):  # an episode shows its answer
        parts.append(html.details("response" if not answer.episode else "final message",
                                  html.block(answer.response), opened=True))
    if answer.thinking:
        parts.append(html.details("visible thinking", html.block(answer.thinking)))
    if not answer.episode:
        parts.append(html.details("score detail (as journalled)", html.block(_json(answer.detail))))
    return "".join(parts)


def verdicts_frame(sample: Sample) -> pd.DataFrame:
    """A judged item's verdicts side by side: one row per criterion (then score and rationale), one column per
    answer and judge replicate."""
    criteria = [c.id for c in sample.rubric.criteria] if sample.rubric else sorted(
        {k for a in sample.answers for v in a.verdicts for k in v.levels})
    columns: dict[str, list[Any]] = {"": criteria + ["score", "rationale", "judge tokens", "journal line"]}
    for answer in sample.answers:
        for verdict in answer.verdicts:
            columns[f"answer {answer.model_replicate} · judge {verdict.judge_replicate}"] = (
                [verdict.levels.get(c) for c in criteria]
                + [round(verdict.score, 3), verdict.rationale, verdict.tokens_in + verdict.tokens_out, verdict.line])
    return pd.DataFrame(columns)


def rubric_frame(rubric: Rubric) -> pd.DataFrame:
    """A rubric's criteria: weight, gate, checked in code, and the levels from 0 up."""
    return pd.DataFrame([{"criterion": c.id, "weight": c.weight, "gate": c.gate,
                          "verified in code": c.verified_in_code or "", "description": c.description,
                          "levels (0 up)": " | ".join(c.levels)} for c in rubric.criteria])


def steps_frame(episode: Episode) -> pd.DataFrame:
    """An episode's steps in one table: call, arguments, status, flags, the state keys it changed, tokens."""
    return pd.DataFrame([{"#": s.index, "tool": s.tool, "arguments": s.arguments, "status": s.status,
                          "flags": "; ".join(s.flags), "changed": ", ".join(s.diff), "tokens": s.tokens}
                         for s in episode.steps], columns=["#", "tool", "arguments", "status", "flags", "changed",
                                                           "tokens"])


def episode_html(episode: Episode, checks: dict[str, str]) -> str:
    """An AG episode step by step: its end, checks, counts and efficiency, then every call with its result and
    state diff (before → after)."""
    check_rows = pd.DataFrame([{"check": k, "passed": v, "what it checks": checks.get(k, "")}
                               for k, v in episode.checks.items()])
    figures = pd.DataFrame([episode.counts | {k: v for k, v in episode.efficiency.items() if k != "note"}])
    parts = [f"<p>Ended by <b>{html.escape(episode.end)}</b>; submitted answer:</p>",
             html.block(episode.answer if episode.answer is not None else "(none)"),
             "<h4>checks</h4>", html.table(check_rows), "<h4>counts and efficiency</h4>", html.table(figures, 3)]
    if episode.efficiency.get("note"):
        parts.append(html.note(episode.efficiency["note"]))
    parts += [f"<h4>steps ({len(episode.steps)})</h4>", html.table(steps_frame(episode))]
    for step in episode.steps:
        diff = (html.table(pd.DataFrame([{"state": key, "before": before, "after": after}
                                         for key, (before, after) in step.diff.items()]))
                if step.diff else "<p>no state change</p>")
        flags = f" · {'; '.join(step.flags)}" if step.flags else ""
        parts.append(html.details(f"#{step.index} {step.tool} · {step.status}{flags} · {step.tokens} tokens",
                                  "<b>arguments</b>" + html.block(_json(step.arguments)) + "<b>result</b>"
                                  + html.block(step.result) + "<b>state diff</b>" + diff))
    return "".join(parts)


def sample_html(sample: Sample, replicates: Iterable[int] | None = None) -> str:
    """One sample: prompt, key and reference, its answers side by side (only `replicates` if given, all when none
    is), a judged item's verdicts side by side and an AG episode step by step. Every text is escaped."""
    wanted = set(replicates or ())
    chosen = [a for a in sample.answers if not wanted or a.model_replicate in wanted]
    parts = [f"<p>{html.escape(sample.title)} · category {html.escape(sample.category)} · kind "
             f"{html.escape(sample.kind)} · score {html.number(sample.score, 3)} · {sample.observations} "
             f"observation(s)</p>"]
    parts += [html.note(note) for note in sample.notes]
    parts.append("<h3>Prompt</h3>" + (html.block(sample.prompt) if sample.prompt is not None
                                      else html.note("prompt not available: the journal keeps only its digest")))
    if sample.key is not None:
        parts.append(html.details("key and reference (as `esac-kit show --answer` prints them)",
                                  html.block(sample.key)))
    if sample.expected:
        parts.append(f"<p><b>expected:</b> {html.escape(sample.expected)}</p>")
    if sample.rubric is not None:
        parts.append(html.details("rubric", html.table(rubric_frame(sample.rubric))))
    if not chosen:
        return "".join(parts + [html.note("no observation yet")])
    parts.append("<h3>Answers</h3>" + html.columns(answer_html(a) for a in chosen))
    if any(a.verdicts for a in chosen):
        shown = dataclasses.replace(sample, answers=chosen)
        parts.append("<h3>Verdicts side by side</h3>" + html.table(verdicts_frame(shown), 3))
    parts += [f"<h3>Episode (answer {a.model_replicate})</h3>" + episode_html(a.episode, sample.checks)
              for a in chosen if a.episode is not None]
    return "".join(parts)


def summary_line(sample: Sample) -> str:
    """A sample's one-line summary: id, category, score, outcomes, retries."""
    retries = sum(sum(a.retries.values()) for a in sample.answers)
    outcomes = ", ".join(sorted(set(sample.outcomes))) or "not run yet"
    return (f"{sample.item_id} · {sample.category} · score {html.number(sample.score, 3)} · {outcomes}"
            + (f" · {retries} retries" if retries else ""))


def page_html(run: RunSamples) -> str:
    """The whole run as one offline page: every observation in a table, then every sample in a collapsible
    section; no script, no external reference, every model text escaped."""
    config = run.config
    title = f"{config.suite.upper()} {config.version} · {config.model} · samples"
    subtitle = (f"run {config.run_id} · pool {config.pool.label} · judge {config.judge or '—'} · "
                f"{len(run.observations)} observations in the journal · folder {run.folder}")
    notes = [html.note(n) for n in run.notes] + [html.note(f"run note: {n}") for n in config.notes]
    sections = [html.section("Notes", "".join(notes))] if notes else []
    sections.append(html.section(f"Observations ({len(run.observations)})",
                                 "<p>One row per journal line; long answers are cut here and shown whole in the "
                                 "samples below.</p>" + html.table(observation_table(run), 3, "observations")))
    sections.append(html.section(f"Samples ({len(run.samples)} items)", "".join(
        html.details(summary_line(s), sample_html(s), anchor=f"item-{s.item_id}") for s in run.samples)))
    return html.page(title, sections, subtitle)


def write_page(run: RunSamples, target: Path | None = None) -> Path:
    """Write the offline page (default RUN/view.html) atomically and return its path."""
    from esac_kit.records import write_atomic

    target = target or run.folder / VIEW_FILE
    if not target.parent.is_dir():
        raise ConfigError(f"{target.parent}: no such folder for the viewer page")
    try:
        write_atomic(target, page_html(run))
    except OSError as error:
        raise ConfigError(f"{target}: cannot write the viewer page: {error.strerror}") from None
    return target
