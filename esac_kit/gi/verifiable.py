"""Rubric criteria checked in code rather than by the judge: word range, required facts, forbidden phrases, headings (amendment 001 §7)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from esac_kit.schemas import Criterion, Rubric

LevelCheck = Callable[[str, dict[str, Any], list[str], int], int]


def word_count(text: str) -> int:
    """Words are whitespace-separated runs of characters, as the prompts state."""
    return len(text.split())


def word_range_level(response: str, params: dict[str, Any], facts: list[str], top: int) -> int:
    """Top inside [min, max]; one level down per step of words outside (params: min, max, steps)."""
    words = word_count(response)
    outside = max(params["min"] - words, words - params["max"], 0)
    if outside == 0:
        return top
    for drop, limit in enumerate(params["steps"], start=1):
        if outside <= limit:
            return max(0, top - drop)
    return 0


def required_facts_level(response: str, params: dict[str, Any], facts: list[str], top: int) -> int:
    """Top when every fact appears verbatim, one down for one missing, 1 when at least half appear, else 0."""
    if not facts:
        return top
    missing = sum(fact not in response for fact in facts)
    if missing == 0:
        return top
    if missing == 1:
        return top - 1
    return 1 if (len(facts) - missing) * 2 >= len(facts) else 0


def forbidden_phrases_level(response: str, params: dict[str, Any], facts: list[str], top: int) -> int:
    """One level down per occurrence of a banned phrase, in any capitalisation."""
    text = response.casefold()
    occurrences = sum(text.count(phrase.casefold()) for phrase in params["phrases"])
    return max(0, top - occurrences)


def _heading_lines(response: str) -> list[str]:
    lines = []
    for line in response.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or re.fullmatch(r"\*\*[^*]+\*\*:?", stripped):
            lines.append(stripped.strip("#*: ").strip())
        elif stripped:
            lines.append("\0" + stripped)  # body text, kept so a bare heading line still counts
    return lines


def required_headings_level(response: str, params: dict[str, Any], facts: list[str], top: int) -> int:
    """Top when the headings appear on their own lines, in order, with no other headings; else by how many appear."""
    required = params["headings"]
    lines = _heading_lines(response)
    bare = [line.lstrip("\0").strip("#*: ").strip() for line in lines]
    found = [heading for heading in required if heading in bare]
    marked_others = [line for line in lines if not line.startswith("\0") and line not in required]
    in_order = [line for line in bare if line in required] == required
    if len(found) == len(required) and in_order and not marked_others:
        return top
    if len(found) >= 2:
        return max(0, top - 1)
    return len(found)


CHECKS: dict[str, LevelCheck] = {
    "word_range": word_range_level,
    "required_facts": required_facts_level,
    "forbidden_phrases": forbidden_phrases_level,
    "required_headings": required_headings_level,
}

REQUIRED_PARAMS: dict[str, set[str]] = {"word_range": {"min", "max", "steps"}, "required_facts": set(),
                                        "forbidden_phrases": {"phrases"}, "required_headings": {"headings"}}


def judged_criteria(rubric: Rubric) -> list[Criterion]:
    """The criteria the judge grades: all but those verified in code."""
    return [c for c in rubric.criteria if c.verified_in_code is None]


def code_levels(rubric: Rubric, response: str, facts: list[str]) -> dict[str, int]:
    """Levels of the criteria verified in code for one response."""
    return {c.id: CHECKS[c.verified_in_code](response, c.params, facts, len(c.levels) - 1)
            for c in rubric.criteria if c.verified_in_code is not None}
