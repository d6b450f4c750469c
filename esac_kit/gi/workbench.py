"""The rubric workbench: edit a judge-graded item's rubric, see the version bump it needs, rescore recorded
levels, judge anchors and real responses under the edit, and save it back into the item file."""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from esac_kit.errors import ConfigError
from esac_kit.kinds import kind_of
from esac_kit.records import write_atomic
from esac_kit.schemas import ItemSpec, Rubric, Variant
from esac_kit.suite import Suite
from esac_kit.version import major_of


def judged_items(suite: Suite) -> list[str]:
    """The ids of a suite's judge-graded items."""
    return [i.id for i in suite.items if kind_of(i).judged]


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
    release_change: str | None  # the bump `esac-kit fingerprints --release` would make against the last release
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
                f"bump: release it as {self.next_version} with `esac-kit fingerprints --release` after saving. Scores "
                f"of {self.next_version} are never compared with {major_of(self.recorded)}.x.")


def rubric_bump(suite: Suite, item_id: str, rubric: Rubric) -> RubricBump:
    """The version bump an edited rubric requires, from the content and scoring fingerprints."""
    from esac_kit.fingerprints import compute, read_versions, required_bump
    from esac_kit.version import Version

    edited = Suite(suite.manifest, tuple(with_rubric(i, rubric) if i.id == item_id else i for i in suite.items),
                   suite.folder)
    before, after = compute(suite), compute(edited)
    latest = read_versions(suite)[-1]
    if latest.status == "draft":  # the edit joins the open draft, which is released as its own bump
        return RubricBump(required_bump(before, after), latest.change, latest.version, latest.version,
                          before.scoring, after.scoring)
    release = required_bump(latest.fingerprints, after)
    return RubricBump(required_bump(before, after), release, latest.version,
                      str(Version.parse(latest.version).bumped(release)) if release else None, before.scoring,
                      after.scoring)


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
    write_atomic(path, text)
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
    from esac_kit.gi.scoring import score_verdict

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
        """One row per required relation: its margin and whether it holds."""
        return pd.DataFrame([{"relation": r, "margin": m, "holds": ok} for r, m, ok in self.check.relations],
                            columns=["relation", "margin", "holds"])


def judge_workbench(item: ItemSpec, variant: Variant, rubric: Rubric, judge: str,
                    responses: Mapping[str, str] | None = None, recorded: Mapping[str, float] | None = None,
                    temperature: float = 0.7, max_tokens: int = 1024, policy=None) -> Workbench:
    """Judge the variant's anchors (twice each, as `esac-kit rubric check`) and some real responses under an edited
    rubric; the judge is a model name as for `esac-kit run --judge` ('local' starts the embedded model)."""
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

    from esac_kit.gi.judge import JUDGE_REPLICATES
    from esac_kit.gi.rubric_check import check_variant, judged_score
    from esac_kit.providers import make_provider, parse_model
    from esac_kit.runs import endpoints_for

    ref = parse_model(judge_name)
    with endpoints_for([judge_name]) as urls:
        async with httpx.AsyncClient() as client:
            judge = make_provider(ref, client, urls.get(ref.provider))
            check = await check_variant(item, variant, judge, temperature, max_tokens, policy)
            rows = []
            for label, response in responses.items():
                scores = await asyncio.gather(*(judged_score(judge, item, variant.prompt, variant.facts, response, r,
                                                             temperature, max_tokens, policy)
                                                for r in range(JUDGE_REPLICATES)))
                mean = sum(scores) / len(scores)
                rows.append({"response": label, "score": mean, "replicates": ", ".join(f"{s:.3f}" for s in scores),
                             "recorded": recorded.get(label, float("nan")),
                             "delta": mean - recorded.get(label, float("nan"))})
    return Workbench(check, pd.DataFrame(rows, columns=["response", "score", "replicates", "recorded", "delta"]))
