"""Content and scoring fingerprints of a suite, and the version-bump rule they enforce (amendment 001 §9).

Content: the item bank, its generators and its prompts. Scoring: the scoring code, rubrics' criteria and
weights, item weights and scoring kinds, the judge pin and template, thresholds, budgets and categories.
A content change needs a minor bump; a scoring change needs a major bump.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from esac_kit.errors import ConfigError
from esac_kit.kinds import kind_of
from esac_kit.suite import Suite
from esac_kit.version import Version

VERSIONS_FILE = "versions.toml"
# The code that decides a score; generators are content, since they make instances and their keys together.
SCORING_MODULES = ("esac_kit.scoring", "esac_kit.gi.scoring", "esac_kit.gi.normalise", "esac_kit.gi.constraints", "esac_kit.gi.verifiable",
                   "esac_kit.gi.judge", "esac_kit.sandbox")
# ESAC-AG adds the episode's bookkeeping, the loop and the environment base: they decide checks and efficiency.
AGENTIC_SCORING_MODULES = ("esac_kit.ag.episode", "esac_kit.ag.loop", "esac_kit.ag.env")


def code_digest(module_name: str) -> str:
    """SHA-256 of a module's syntax tree without docstrings, so comments, layout and prose do not count as changes."""
    path = Path(importlib.util.find_spec(module_name).origin)
    return _file_digest(str(path), path.stat().st_mtime_ns)


_PARSE_LOCK = threading.Lock()


@functools.lru_cache(maxsize=256)
def _file_digest(path: str, mtime_ns: int) -> str:
    source = Path(path).read_text(encoding="utf-8")
    with _PARSE_LOCK:
        for attempt in range(3):
            try:
                tree = ast.parse(source)
                break
            except SystemError:  # CPython 3.11's AST constructor is not thread-safe (gh-106905): parse again
                if attempt == 2:
                    raise
    return hashlib.sha256(_stable_dump(tree).encode()).hexdigest()


def _stable_dump(node: object) -> str:
    """A dump of the tree that skips docstrings and empty fields, so it reads the same on Python 3.11 to 3.13."""
    if isinstance(node, list):
        items = node
        if items and _is_docstring(items[0]):
            items = items[1:]
        return "[" + ",".join(_stable_dump(n) for n in items) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    fields = [f"{name}={_stable_dump(value)}" for name, value in ast.iter_fields(node)
              if value not in (None, []) and name not in ("ctx", "type_comment", "kind")]
    return f"{type(node).__name__}({','.join(fields)})"


def _is_docstring(node: object) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _digest(material: object) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Fingerprints:
    """The two fingerprints of a suite as it is on disk now."""

    content: str
    scoring: str


def compute(suite: Suite) -> Fingerprints:
    """Fingerprint a loaded suite."""
    m = suite.manifest
    generators = sorted({i.generator.partition(":")[0] for i in suite.items if i.generator})
    content = {
        "items": [{"id": i.id, "title": i.title, "lever": i.difficulty_lever, "generator": i.generator,
                   "variants": [{"id": v.id, "prompt": v.prompt, "facts": v.facts} for v in i.variants]}
                  for i in suite.items],
        "generator_code": {name: code_digest(name) for name in generators},
        "public_seed": m.public_seed,
    }
    agentic = any(kind_of(i).episodic for i in suite.items)
    modules = SCORING_MODULES + (AGENTIC_SCORING_MODULES if agentic else ())
    scoring = {
        "code": {name: code_digest(name) for name in modules},
        "categories": [c.model_dump() for c in m.categories],
        "totals": [m.total_points, m.total_items, m.pass_fraction],
        "budgets": [m.output_budget_tokens, m.time_budget_s],
        "judge": m.judge.model_dump() if m.judge else None,
        "items": [{"id": i.id, "scoring": i.scoring, "weight": i.weight, "budgets": [i.output_budget_tokens,
                                                                                     i.time_budget_s],
                   "rubric": i.rubric.model_dump() if i.rubric else None, "expected_depth": i.expected_depth}
                  | ({"step_budget": i.step_budget, "efficiency": i.efficiency.model_dump()} if agentic else {})
                  for i in suite.items],
    }
    if agentic:  # the modifier's points and the episode budget are scoring protocol too (amendment 001 §1, §9)
        scoring["agentic"] = [m.efficiency_points, m.episode_token_budget]
    return Fingerprints(_digest(content), _digest(scoring))


class VersionRecord(BaseModel):
    """One released version of a suite with its fingerprints and the class of its change."""

    version: str
    change: str
    content: str
    scoring: str


def read_versions(suite: Suite) -> list[VersionRecord]:
    """The suite's version history from items/<suite>/versions.toml."""
    path = suite.folder / VERSIONS_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return [VersionRecord.model_validate(v) for v in data["versions"]]
    except (OSError, KeyError, tomllib.TOMLDecodeError, ValueError) as error:
        raise ConfigError(f"{path}: cannot read the version history: {error}") from None


def required_bump(old: Fingerprints, new: Fingerprints) -> str | None:
    """'major' when scoring changed, 'minor' when only content changed, None when nothing did."""
    if old.scoring != new.scoring:
        return "major"
    if old.content != new.content:
        return "minor"
    return None


def bumped(version: str, bump: str) -> str:
    """The next version for a bump class."""
    return str(Version.parse(version).bumped(bump))


def check_versions(suite: Suite) -> list[str]:
    """Problems with the version history: a wrong bump between releases, or a change on disk not yet released."""
    history = read_versions(suite)
    problems = []
    for old, new in zip(history, history[1:]):
        needed = required_bump(Fingerprints(old.content, old.scoring), Fingerprints(new.content, new.scoring))
        if needed and new.version != bumped(old.version, needed):
            problems.append(f"{new.version}: a {needed} change after {old.version} must be {bumped(old.version, needed)}")
    latest = history[-1]
    if latest.version != suite.manifest.version:
        problems.append(f"manifest version {suite.manifest.version} is not the latest recorded {latest.version}")
    now = compute(suite)
    needed = required_bump(Fingerprints(latest.content, latest.scoring), now)
    if needed:
        what = "scoring" if needed == "major" else "content"
        problems.append(f"the {what} fingerprint changed since {latest.version}: a {needed} change, release it as "
                        f"{bumped(latest.version, needed)} (`esac-kit fingerprints --release`)")
    return problems


def release(suite: Suite, changelog: Path) -> VersionRecord | None:
    """Record the suite as it is now as a new version with the bump its fingerprints require; None if unchanged."""
    history = read_versions(suite)
    latest, now = history[-1], compute(suite)
    needed = required_bump(Fingerprints(latest.content, latest.scoring), now)
    if needed is None:
        return None
    record = VersionRecord(version=bumped(latest.version, needed), change=needed, content=now.content,
                           scoring=now.scoring)
    with (suite.folder / VERSIONS_FILE).open("a", encoding="utf-8") as handle:
        handle.write(_toml_record(record))
    manifest = suite.folder / "manifest.toml"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace(f'version = "{latest.version}"', f'version = "{record.version}"', 1),
                        encoding="utf-8")
    if changelog.is_file():
        with changelog.open("a", encoding="utf-8") as handle:
            handle.write(f"| {record.version} | {needed} | | describe the change here |\n")
    return record


def _toml_record(record: VersionRecord) -> str:
    return (f'\n[[versions]]\nversion = "{record.version}"\nchange = "{record.change}"\n'
            f'content = "{record.content}"\nscoring = "{record.scoring}"\n')
