"""Verifiable constraints for instruction items: each check is a pure function of (response, params) -> bool.

Counting rules shared by every check (and stated in every prompt that uses them):
- a word is a maximal run of the ASCII letters A-Z / a-z; everything else separates words;
- letters are counted case-insensitively;
- a marked block is the text strictly between the last line reading `begin` and the next line reading `end`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from esac_kit.schemas import Constraint

Check = Callable[[str, dict[str, Any]], bool]
CHECKS: dict[str, Check] = {}

_WORD = re.compile(r"[A-Za-z]+")


def check(name: str) -> Callable[[Check], Check]:
    """Register a constraint check under the name item keys use."""

    def register(function: Check) -> Check:
        CHECKS[name] = function
        return function

    return register


def constraint_met(constraint: Constraint, response: str) -> bool:
    """Evaluate one constraint; an unknown check name raises, a check that raises on hostile input counts as not met."""
    function = CHECKS[constraint.check]  # looked up first, so a KeyError inside a check is a failed check, not a crash
    try:
        return bool(function(response, constraint.params))
    except Exception:  # a hostile response must never crash scoring
        return False


# ---------------------------------------------------------------- shared counting rules


def words(text: str) -> list[str]:
    """The words of a text: maximal runs of ASCII letters."""
    return _WORD.findall(text)


def block(response: str, begin: str, end: str) -> list[str] | None:
    """Stripped non-empty lines of the last `begin` ... `end` block, or None when there is no such block."""
    lines = [line.strip() for line in response.splitlines()]
    starts = [i for i, line in enumerate(lines) if line == begin]
    if not starts:
        return None
    ends = [i for i in range(starts[-1] + 1, len(lines)) if lines[i] == end]
    if not ends:
        return None
    return [line for line in lines[starts[-1] + 1:ends[0]] if line]


def _block_text(response: str, p: dict[str, Any]) -> str:
    lines = block(response, p["begin"], p["end"])
    if lines is None:
        raise ValueError("no block")
    return "\n".join(lines)


def sentences(text: str) -> list[tuple[str, str]]:
    """(sentence, terminator) pairs: a sentence ends at `.`, `?` or `!`; trailing text is one more, ending ''."""
    parts = re.split(r"([.?!])", text)
    found = [(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
    if parts[-1].strip():
        found.append((parts[-1], ""))
    return found


def _count_word(text: str, word: str) -> int:
    return sum(w.lower() == word.lower() for w in words(text))


# ---------------------------------------------------------------- marked blocks: lines, letters, keywords


@check("block_line_count")
def _block_line_count(response: str, p: dict[str, Any]) -> bool:
    lines = block(response, p["begin"], p["end"])
    return lines is not None and len(lines) == p["lines"]


@check("block_has_words")
def _block_has_words(response: str, p: dict[str, Any]) -> bool:
    return bool(words(_block_text(response, p)))


@check("line_initials")
def _line_initials(response: str, p: dict[str, Any]) -> bool:
    lines = block(response, p["begin"], p["end"]) or []
    initials = "".join(words(line)[0][0] if words(line) else "?" for line in lines)
    return initials.lower() == p["letters"].lower()


@check("line_word_counts")
def _line_word_counts(response: str, p: dict[str, Any]) -> bool:
    return [len(words(line)) for line in block(response, p["begin"], p["end"]) or []] == p["counts"]


@check("line_end_chain")
def _line_end_chain(response: str, p: dict[str, Any]) -> bool:
    """Every line but the last ends with a word whose last letter starts the next line's first word."""
    lines = [words(line) for line in block(response, p["begin"], p["end"]) or []]
    if len(lines) < 2 or not all(lines):
        return False
    return all(a[-1][-1].lower() == b[0][0].lower() for a, b in zip(lines, lines[1:]))


@check("absent_letters")
def _absent_letters(response: str, p: dict[str, Any]) -> bool:
    text = _block_text(response, p).lower()
    return not any(letter in text for letter in p["letters"].lower())


@check("letter_count")
def _letter_count(response: str, p: dict[str, Any]) -> bool:
    return _block_text(response, p).lower().count(p["letter"].lower()) == p["count"]


@check("word_count")
def _word_count(response: str, p: dict[str, Any]) -> bool:
    return _count_word(_block_text(response, p), p["word"]) == p["count"]


@check("max_word_length")
def _max_word_length(response: str, p: dict[str, Any]) -> bool:
    return all(len(w) <= p["letters"] for w in words(_block_text(response, p)))


@check("capitalised_words")
def _capitalised_words(response: str, p: dict[str, Any]) -> bool:
    return sum(w[0].isupper() for w in words(_block_text(response, p))) == p["count"]


# ---------------------------------------------------------------- sentences in a marked block


@check("sentence_word_counts")
def _sentence_word_counts(response: str, p: dict[str, Any]) -> bool:
    return [len(words(s)) for s, _ in sentences(_block_text(response, p))] == p["counts"]


@check("sentence_endings")
def _sentence_endings(response: str, p: dict[str, Any]) -> bool:
    return "".join(end for _, end in sentences(_block_text(response, p))) == p["endings"]


@check("word_in_sentences")
def _word_in_sentences(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once in each listed sentence (1-based) and in no other sentence."""
    found = sentences(_block_text(response, p))
    wanted = set(p["sentences"])
    return all(_count_word(s, p["word"]) == (1 if i + 1 in wanted else 0) for i, (s, _) in enumerate(found)) \
        and max(wanted) <= len(found)


# ---------------------------------------------------------------- numbered outline in a marked block

_HEADING = re.compile(r"^(\d+)\.\s+(.*)$")
_ITEM = re.compile(r"^(\d+)\.(\d+)\s+(.*)$")


def outline(response: str, p: dict[str, Any]) -> list[tuple[int, str, list[tuple[int, int, str]]]] | None:
    """Sections (number, heading, items (section number, item number, text)) of an outline block, or None."""
    lines = block(response, p["begin"], p["end"])
    if not lines:
        return None
    sections: list[tuple[int, str, list[tuple[int, int, str]]]] = []
    for line in lines:
        item, heading = _ITEM.match(line), _HEADING.match(line)
        if item and sections:
            sections[-1][2].append((int(item.group(1)), int(item.group(2)), item.group(3)))
        elif heading and not item:
            sections.append((int(heading.group(1)), heading.group(2).strip(), []))
        else:
            return None
    return sections


@check("outline_wellformed")
def _outline_wellformed(response: str, p: dict[str, Any]) -> bool:
    return outline(response, p) is not None


@check("outline_shape")
def _outline_shape(response: str, p: dict[str, Any]) -> bool:
    """Sections numbered 1..P in order; section i holds items i.1..i.n_i in order, n_i = p["items"][i-1]."""
    sections = outline(response, p) or []
    expected = [(i + 1, [(i + 1, j + 1) for j in range(n)]) for i, n in enumerate(p["items"])]
    return [(number, [(s, j) for s, j, _ in items]) for number, _, items in sections] == expected


@check("outline_headings")
def _outline_headings(response: str, p: dict[str, Any]) -> bool:
    """Every heading is one upper-case word; headings are in strictly ascending or descending alphabetical order."""
    headings = [heading for _, heading, _ in outline(response, p) or []]
    if not headings or not all(re.fullmatch(r"[A-Z]+", h) for h in headings):
        return False
    ordered = sorted(set(headings), reverse=p["order"] == "descending")
    return headings == ordered


@check("outline_item_words")
def _outline_item_words(response: str, p: dict[str, Any]) -> bool:
    """Item j of section i has exactly a*i + b*j + c words (i, j as written in its label)."""
    items = [item for _, _, items in outline(response, p) or [] for item in items]
    return bool(items) and all(len(words(text)) == p["a"] * i + p["b"] * j + p["c"] for i, j, text in items)


@check("outline_item_initials")
def _outline_item_initials(response: str, p: dict[str, Any]) -> bool:
    sections = outline(response, p) or []
    return bool(sections) and all(heading[:1] and words(text) and words(text)[0][0].lower() == heading[0].lower()
                                  for _, heading, items in sections for _, _, text in items)


@check("outline_word_per_section")
def _outline_word_per_section(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once among each section's items and never in a heading."""
    sections = outline(response, p) or []
    return bool(sections) and all(_count_word(heading, p["word"]) == 0
                                  and sum(_count_word(text, p["word"]) for _, _, text in items) == 1
                                  for _, heading, items in sections)


@check("outline_item_endings")
def _outline_item_endings(response: str, p: dict[str, Any]) -> bool:
    """The last item of every section ends with `?`, every other item with `.`."""
    sections = outline(response, p) or []
    return bool(sections) and all(items and all(text.endswith("?" if k == len(items) - 1 else ".")
                                                for k, (_, _, text) in enumerate(items))
                                  for _, _, items in sections)


# ---------------------------------------------------------------- markdown table

_SEPARATOR = re.compile(r"^\|?(\s*:?-{3,}:?\s*\|)*\s*:?-{3,}:?\s*\|?$")


def _cells(line: str) -> list[str]:
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|"):
        line = line[:-1]
    return [cell.strip() for cell in line.split("|")]


def table_rows(response: str, columns: list[str]) -> list[dict[str, str]] | None:
    """Data rows (column -> cell) of the last markdown table whose header is exactly `columns`, or None."""
    lines = [line.strip() for line in response.splitlines()]
    headers = [i for i, line in enumerate(lines[:-1])
               if line.startswith("|") and _cells(line) == columns and _SEPARATOR.match(lines[i + 1])]
    if not headers:
        return None
    rows = []
    for line in lines[headers[-1] + 2:]:
        if not line.startswith("|"):
            break
        cells = _cells(line)
        rows.append(dict(zip(columns, cells)) if len(cells) == len(columns) else {})
    return rows


def _rows(response: str, p: dict[str, Any]) -> list[dict[str, str]]:
    rows = table_rows(response, p["columns"])
    if not rows or not all(rows):
        raise ValueError("no table, or a row with the wrong number of cells")
    return rows


@check("table_header")
def _table_header(response: str, p: dict[str, Any]) -> bool:
    return table_rows(response, p["columns"]) is not None


@check("table_row_count")
def _table_row_count(response: str, p: dict[str, Any]) -> bool:
    return len(_rows(response, p)) == p["rows"]


@check("table_descending_total")
def _table_descending_total(response: str, p: dict[str, Any]) -> bool:
    """The column holds distinct positive integers (plain digits), strictly decreasing, summing to `total`."""
    cells = [row[p["column"]] for row in _rows(response, p)]
    if not all(re.fullmatch(r"[1-9]\d*", c) for c in cells):
        return False
    values = [int(c) for c in cells]
    return all(a > b for a, b in zip(values, values[1:])) and sum(values) == p["total"]


@check("table_name_length")
def _table_name_length(response: str, p: dict[str, Any]) -> bool:
    """Each name cell is one word whose letter count equals the number of words in the row's note cell."""
    return all(re.fullmatch(r"[A-Za-z]+", row[p["name"]]) and len(row[p["name"]]) == len(words(row[p["note"]]))
               for row in _rows(response, p))


@check("table_code")
def _table_code(response: str, p: dict[str, Any]) -> bool:
    """Each code is the name's first and last letters upper-cased, a hyphen, then number x factor."""
    for row in _rows(response, p):
        name, number = row[p["name"]], row[p["number"]]
        if not re.fullmatch(r"\d+", number) or not name:
            return False
        if row[p["code"]] != f"{name[0].upper()}{name[-1].upper()}-{int(number) * p['factor']}":
            return False
    return True


@check("table_word_rows")
def _table_word_rows(response: str, p: dict[str, Any]) -> bool:
    """The word occurs once in exactly `rows` cells of the note column and in no other cell."""
    rows = _rows(response, p)
    notes = [_count_word(row[p["note"]], p["word"]) for row in rows]
    others = sum(_count_word(cell, p["word"]) for row in rows for column, cell in row.items() if column != p["note"])
    return sorted(notes, reverse=True)[:p["rows"]] == [1] * p["rows"] and sum(notes) == p["rows"] and others == 0


@check("table_absent_letters")
def _table_absent_letters(response: str, p: dict[str, Any]) -> bool:
    text = " ".join(cell for row in _rows(response, p) for cell in row.values()).lower()
    return not any(letter in text for letter in p["letters"].lower())


# ---------------------------------------------------------------- JSON object in a ```json block


def json_object(response: str) -> list[tuple[str, Any]] | None:
    """The (key, value) pairs, in written order, of the last ```json block when it is one JSON object; else None."""
    blocks = re.findall(r"```json[ \t]*\n(.*?)```", response, flags=re.DOTALL | re.IGNORECASE)
    if not blocks:
        return None
    try:
        pairs = json.loads(blocks[-1], object_pairs_hook=lambda pairs: ("object", pairs))
    except ValueError:
        return None
    return pairs[1] if isinstance(pairs, tuple) else None


def _plain(value: Any) -> Any:
    """Turn the ("object", pairs) nodes of json_object back into dicts; a repeated key is an error, not a merge."""
    if isinstance(value, tuple):
        if len({k for k, _ in value[1]}) != len(value[1]):
            raise ValueError("repeated key")
        return {k: _plain(v) for k, v in value[1]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _json(response: str) -> dict[str, Any]:
    pairs = json_object(response)
    if pairs is None:
        raise ValueError("no JSON object")
    return _plain(("object", pairs))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _word_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(w, str) and re.fullmatch(r"[a-z]+", w) for w in value):
        raise ValueError("not a list of lower-case words")
    return value


@check("json_present")
def _json_present(response: str, p: dict[str, Any]) -> bool:
    return json_object(response) is not None


@check("json_keys")
def _json_keys(response: str, p: dict[str, Any]) -> bool:
    pairs = json_object(response)
    return pairs is not None and [k for k, _ in pairs] == p["keys"]


@check("json_word_list")
def _json_word_list(response: str, p: dict[str, Any]) -> bool:
    """Exactly `count` lower-case words, strictly increasing in length, no two sharing a first letter."""
    listed = _word_list(_json(response)[p["key"]])
    lengths = [len(w) for w in listed]
    return len(listed) == p["count"] and all(a < b for a, b in zip(lengths, lengths[1:])) \
        and len({w[0] for w in listed}) == len(listed)


@check("json_letter_total")
def _json_letter_total(response: str, p: dict[str, Any]) -> bool:
    data = _json(response)
    return _is_int(data[p["key"]]) and data[p["key"]] == sum(len(w) for w in _word_list(data[p["list_key"]]))


@check("json_sentence")
def _json_sentence(response: str, p: dict[str, Any]) -> bool:
    """A string of exactly `words` words holding each listed word exactly once, in list order."""
    data = _json(response)
    text, listed = data[p["key"]], _word_list(data[p["list_key"]])
    if not isinstance(text, str) or len(words(text)) != p["words"]:
        return False
    lowered = [w.lower() for w in words(text)]
    if any(lowered.count(w) != 1 for w in listed):
        return False
    positions = [lowered.index(w) for w in listed]
    return positions == sorted(positions)


@check("json_ranks")
def _json_ranks(response: str, p: dict[str, Any]) -> bool:
    """An object mapping each listed word to its 1-based position in alphabetical order, and nothing else."""
    data = _json(response)
    listed, ranks = _word_list(data[p["list_key"]]), data[p["key"]]
    expected = {w: i + 1 for i, w in enumerate(sorted(listed))}
    return isinstance(ranks, dict) and all(_is_int(v) for v in ranks.values()) and ranks == expected


@check("json_letter_tally")
def _json_letter_tally(response: str, p: dict[str, Any]) -> bool:
    """An integer equal to how many letters of the text value are among `letters` (case-insensitive)."""
    data = _json(response)
    text, tally = data[p["text_key"]], data[p["key"]]
    return isinstance(text, str) and _is_int(tally) and tally == sum(c in p["letters"] for c in text.lower())


@check("json_absent_letters")
def _json_absent_letters(response: str, p: dict[str, Any]) -> bool:
    """No string value, nor any key of a nested object, contains the letters (top-level keys are exempt)."""

    def strings(value: Any) -> list[str]:
        if isinstance(value, str):
            return [value]
        if isinstance(value, tuple):
            return [s for k, v in value[1] for s in [k, *strings(v)]]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return []

    pairs = json_object(response)
    if pairs is None:
        return False
    text = " ".join(s for _, v in pairs for s in strings(v)).lower()
    return not any(letter in text for letter in p["letters"].lower())
