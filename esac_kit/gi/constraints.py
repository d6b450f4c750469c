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


# ---------------------------------------------------------------- GI 2.0: long documents whose parts must agree
# A *paragraph* (or stanza) of a marked block is a maximal run of consecutive non-empty lines, its lines joined by
# single spaces; a *number* is a maximal run of the digits 0-9 (digits are not letters, so a number is not a word).

_NUMBER = re.compile(r"[0-9]+")


def numbers(text: str) -> list[str]:
    """The numbers of a text as written: maximal runs of ASCII digits."""
    return _NUMBER.findall(text)


def block_groups(response: str, begin: str, end: str) -> list[list[str]] | None:
    """The last `begin` ... `end` block as groups of consecutive non-empty stripped lines, or None without a block."""
    lines = [line.strip() for line in response.splitlines()]
    starts = [i for i, line in enumerate(lines) if line == begin]
    if not starts:
        return None
    ends = [i for i in range(starts[-1] + 1, len(lines)) if lines[i] == end]
    if not ends:
        return None
    groups: list[list[str]] = [[]]
    for line in lines[starts[-1] + 1:ends[0]]:
        if line:
            groups[-1].append(line)
        elif groups[-1]:
            groups.append([])
    return [g for g in groups if g]


def _paragraphs(response: str, p: dict[str, Any]) -> list[str]:
    groups = block_groups(response, p["begin"], p["end"])
    if groups is None:
        raise ValueError("no block")
    return [" ".join(g) for g in groups]


def _paragraph_sentences(response: str, p: dict[str, Any]) -> list[list[tuple[str, str]]]:
    return [sentences(paragraph) for paragraph in _paragraphs(response, p)]


@check("paragraph_count")
def _paragraph_count(response: str, p: dict[str, Any]) -> bool:
    return len(_paragraphs(response, p)) == p["count"]


@check("paragraph_sentence_counts")
def _paragraph_sentence_counts(response: str, p: dict[str, Any]) -> bool:
    return [len(found) for found in _paragraph_sentences(response, p)] == p["counts"]


@check("sentence_length_formula")
def _sentence_length_formula(response: str, p: dict[str, Any]) -> bool:
    """Sentence j of paragraph k (both 1-based) has a*k + b*j + c words; the block has `paragraphs` paragraphs."""
    found = _paragraph_sentences(response, p)
    return len(found) == p["paragraphs"] and all(
        len(words(s)) == p["a"] * k + p["b"] * j + p["c"]
        for k, paragraph in enumerate(found, 1) for j, (s, _) in enumerate(paragraph, 1))


@check("end_mark_by_length")
def _end_mark_by_length(response: str, p: dict[str, Any]) -> bool:
    """A sentence ends with `?` when its word count is a multiple of m, with `.` otherwise (no `!`, no fragment)."""
    found = [s for paragraph in _paragraph_sentences(response, p) for s in paragraph]
    return bool(found) and all(end == ("?" if len(words(s)) % p["m"] == 0 else ".") for s, end in found)


@check("paragraph_sentence_initials")
def _paragraph_sentence_initials(response: str, p: dict[str, Any]) -> bool:
    """Every sentence of paragraph k starts with a word whose first letter is letters[k-1]."""
    found = _paragraph_sentences(response, p)
    return len(found) == len(p["letters"]) and all(
        words(s) and words(s)[0][0].lower() == letter.lower()
        for letter, paragraph in zip(p["letters"], found) for s, _ in paragraph)


@check("word_in_length_multiples")
def _word_in_length_multiples(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once in every sentence whose word count is a multiple of m and in no other sentence."""
    found = [s for paragraph in _paragraph_sentences(response, p) for s, _ in paragraph]
    hosts = [len(words(s)) % p["m"] == 0 for s in found]
    return any(hosts) and all(_count_word(s, p["word"]) == int(host) for s, host in zip(found, hosts))


@check("paragraph_citations")
def _paragraph_citations(response: str, p: dict[str, Any]) -> bool:
    """The first sentence of paragraph k >= 2 holds exactly one number, the word count of paragraph k-1; no other
    sentence holds a number, except the block's very last sentence (left to `total_citation`)."""
    paragraphs = _paragraphs(response, p)
    found = [sentences(paragraph) for paragraph in paragraphs]
    if len(found) < 2 or not all(found):
        return False
    for k, paragraph in enumerate(found):
        for j, (s, _) in enumerate(paragraph):
            if k == len(found) - 1 and j == len(paragraph) - 1:
                continue
            expected = [str(len(words(paragraphs[k - 1])))] if k >= 1 and j == 0 else []
            if numbers(s) != expected:
                return False
    return True


@check("total_citation")
def _total_citation(response: str, p: dict[str, Any]) -> bool:
    """The block's last sentence holds exactly one number: the block's total number of words."""
    paragraphs = _paragraphs(response, p)
    last = sentences(paragraphs[-1])[-1][0]
    return numbers(last) == [str(len(words(" ".join(paragraphs))))]


@check("paragraph_caps_tags")
def _paragraph_caps_tags(response: str, p: dict[str, Any]) -> bool:
    """Each paragraph holds exactly one all-capital word of two or more letters; these ascend strictly."""
    tags = []
    for paragraph in _paragraphs(response, p):
        found = [w for w in words(paragraph) if len(w) >= 2 and w.isupper()]
        if len(found) != 1:
            return False
        tags.append(found[0])
    return bool(tags) and all(a < b for a, b in zip(tags, tags[1:]))


# ---------------------------------------------------------------- GI 2.0: stanzas (groups of lines) and a footer


def _stanzas(response: str, p: dict[str, Any]) -> list[list[str]]:
    groups = block_groups(response, p["begin"], p["end"])
    if groups is None:
        raise ValueError("no block")
    return groups


def _initial(line: str) -> str:
    found = words(line)
    return found[0][0].lower() if found else "?"


@check("stanza_acrostics")
def _stanza_acrostics(response: str, p: dict[str, Any]) -> bool:
    """The first letters of stanza k's lines, top to bottom, spell words[k-1]; there are len(words) stanzas."""
    stanzas = _stanzas(response, p)
    return len(stanzas) == len(p["words"]) and all(
        "".join(_initial(line) for line in stanza) == word.lower() for stanza, word in zip(stanzas, p["words"]))


@check("stanza_line_lengths")
def _stanza_line_lengths(response: str, p: dict[str, Any]) -> bool:
    """Line j of a stanza of n lines has n + j - d words; the block has `stanzas` stanzas."""
    stanzas = _stanzas(response, p)
    return len(stanzas) == p["stanzas"] and all(
        len(words(line)) == len(stanza) + j - p["d"] for stanza in stanzas for j, line in enumerate(stanza, 1))


@check("stanza_last_words_ascending")
def _stanza_last_words_ascending(response: str, p: dict[str, Any]) -> bool:
    """The last words of the stanzas' last lines, lower-cased, are in strictly ascending alphabetical order."""
    last = [words(stanza[-1])[-1].lower() for stanza in _stanzas(response, p)]
    return len(last) >= 2 and all(a < b for a, b in zip(last, last[1:]))


@check("word_in_stanza_last_lines")
def _word_in_stanza_last_lines(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once in the last line of every stanza and in no other line."""
    stanzas = _stanzas(response, p)
    return bool(stanzas) and all(_count_word(line, p["word"]) == (1 if j == len(stanza) - 1 else 0)
                                 for stanza in stanzas for j, line in enumerate(stanza))


@check("max_repeats")
def _max_repeats(response: str, p: dict[str, Any]) -> bool:
    """No word (case-insensitive) other than the listed exceptions occurs more than `limit` times in the block."""
    from collections import Counter

    found = Counter(w.lower() for w in words(_block_text(response, p)))
    exempt = {w.lower() for w in p.get("except", [])}
    return bool(found) and all(n <= p["limit"] for w, n in found.items() if w not in exempt)


def footer(response: str, end: str, label: str) -> str | None:
    """The text after `label:` on the last line that starts with it and comes after the last `end` marker line."""
    lines = [line.strip() for line in response.splitlines()]
    ends = [i for i, line in enumerate(lines) if line == end]
    if not ends:
        return None
    found = [line for line in lines[ends[-1] + 1:] if line.startswith(label + ":")]
    return found[-1][len(label) + 1:].strip() if found else None


def _footer_numbers(response: str, p: dict[str, Any]) -> list[int]:
    text = footer(response, p["end"], p["label"])
    if text is None or not re.fullmatch(r"[0-9]+(\s*,\s*[0-9]+)*", text):
        raise ValueError("no footer of comma-separated numbers")
    return [int(n) for n in text.split(",")]


@check("footer_group_words")
def _footer_group_words(response: str, p: dict[str, Any]) -> bool:
    """The footer lists, comma-separated, the number of words of every stanza (paragraph) of the block, in order."""
    return _footer_numbers(response, p) == [len(words(" ".join(g))) for g in _stanzas(response, p)]


# ---------------------------------------------------------------- GI 2.0: an outline's cross-references and index


def _outline(response: str, p: dict[str, Any]) -> list[tuple[int, str, list[tuple[int, int, str]]]]:
    found = outline(response, p)
    if not found:
        raise ValueError("no outline")
    return found


@check("outline_citations")
def _outline_citations(response: str, p: dict[str, Any]) -> bool:
    """The last item of section i holds exactly one number, the words in section i+1's items (for the last section:
    in all items); no other item text holds a number."""
    sections = _outline(response, p)
    if not all(items for _, _, items in sections):
        return False
    totals = [sum(len(words(text)) for _, _, text in items) for _, _, items in sections]
    for i, (_, _, items) in enumerate(sections):
        for j, (_, _, text) in enumerate(items):
            expected = [] if j < len(items) - 1 else [str(totals[i + 1] if i + 1 < len(sections) else sum(totals))]
            if numbers(text) != expected:
                return False
    return True


@check("outline_back_reference")
def _outline_back_reference(response: str, p: dict[str, Any]) -> bool:
    """The first item of every section after the first holds the previous section's heading word exactly once."""
    sections = _outline(response, p)
    return len(sections) >= 2 and all(items and _count_word(items[0][2], previous) == 1
                                      for (_, previous, _), (_, _, items) in zip(sections, sections[1:]))


@check("outline_index")
def _outline_index(response: str, p: dict[str, Any]) -> bool:
    """The INDEX footer lists the first word of every item, lower-cased, in alphabetical order, repeats included."""
    text = footer(response, p["end"], p["label"])
    items = [text_ for _, _, items in _outline(response, p) for _, _, text_ in items]
    if text is None or not all(words(t) for t in items):
        return False
    return [entry.strip() for entry in text.split(",")] == sorted(words(t)[0].lower() for t in items)


# ---------------------------------------------------------------- GI 2.0: a sectioned report and its JSON summary

_REPORT_HEADING = re.compile(r"^##\s+(.*)$")


def report(response: str, p: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]] | None:
    """(title, sentences) per `## title` section of the report block; None without a block or when text comes
    before the first heading or a section has no text."""
    lines = block(response, p["begin"], p["end"])
    if not lines or not _REPORT_HEADING.match(lines[0]):
        return None
    sections: list[tuple[str, list[str]]] = []
    for line in lines:
        heading = _REPORT_HEADING.match(line)
        if heading:
            sections.append((heading.group(1).strip(), []))
        else:
            sections[-1][1].append(line)
    if not all(body for _, body in sections):
        return None
    return [(title, sentences(" ".join(body))) for title, body in sections]


def _report(response: str, p: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    found = report(response, p)
    if found is None:
        raise ValueError("no report")
    return found


@check("report_wellformed")
def _report_wellformed(response: str, p: dict[str, Any]) -> bool:
    return report(response, p) is not None


@check("report_titles")
def _report_titles(response: str, p: dict[str, Any]) -> bool:
    """Exactly `count` sections; every title one capitalised word; titles in strictly ascending order."""
    titles = [title for title, _ in _report(response, p)]
    return len(titles) == p["count"] and all(re.fullmatch(r"[A-Z][a-z]+", t) for t in titles) \
        and all(a.lower() < b.lower() for a, b in zip(titles, titles[1:]))


@check("report_sentence_counts")
def _report_sentence_counts(response: str, p: dict[str, Any]) -> bool:
    return [len(found) for _, found in _report(response, p)] == p["counts"]


@check("report_section_words")
def _report_section_words(response: str, p: dict[str, Any]) -> bool:
    return [sum(len(words(s)) for s, _ in found) for _, found in _report(response, p)] == p["totals"]


@check("report_sentence_band")
def _report_sentence_band(response: str, p: dict[str, Any]) -> bool:
    """Every sentence has low..high words and ends with `.`; with `distinct`, no two sentences of the report have the
    same length, else no two neighbours in a section."""
    found = _report(response, p)
    if not all(end == "." for _, section in found for _, end in section):
        return False
    lengths = [[len(words(s)) for s, _ in section] for _, section in found]
    flat = [n for section in lengths for n in section]
    if not all(p["low"] <= n <= p["high"] for n in flat):
        return False
    if p.get("distinct"):
        return len(set(flat)) == len(flat)
    return not any(a == b for section in lengths for a, b in zip(section, section[1:]))


@check("report_word_per_section")
def _report_word_per_section(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once in the text of each section and in no title."""
    return all(_count_word(title, p["word"]) == 0 and sum(_count_word(s, p["word"]) for s, _ in found) == 1
               for title, found in _report(response, p))


@check("json_titles")
def _json_titles(response: str, p: dict[str, Any]) -> bool:
    return _json(response)[p["key"]] == [title for title, _ in _report(response, p)]


@check("json_sentence_words")
def _json_sentence_words(response: str, p: dict[str, Any]) -> bool:
    value = _json(response)[p["key"]]
    actual = [[len(words(s)) for s, _ in found] for _, found in _report(response, p)]
    return isinstance(value, list) and all(isinstance(v, list) and all(_is_int(n) for n in v) for v in value) \
        and value == actual


@check("json_word_totals")
def _json_word_totals(response: str, p: dict[str, Any]) -> bool:
    data = _json(response)
    per_section = [sum(len(words(s)) for s, _ in found) for _, found in _report(response, p)]
    listed, total = data[p["sections_key"]], data[p["total_key"]]
    return isinstance(listed, list) and all(_is_int(n) for n in listed) and listed == per_section \
        and _is_int(total) and total == sum(per_section)


@check("json_keyword_sentences")
def _json_keyword_sentences(response: str, p: dict[str, Any]) -> bool:
    """Per section, the 1-based number of the one sentence holding the word; fails when a section has no such
    sentence or several."""
    expected = []
    for _, found in _report(response, p):
        hosts = [j for j, (s, _) in enumerate(found, 1) if _count_word(s, p["word"])]
        if len(hosts) != 1:
            return False
        expected.append(hosts[0])
    value = _json(response)[p["key"]]
    return isinstance(value, list) and all(_is_int(n) for n in value) and value == expected


@check("json_longest")
def _json_longest(response: str, p: dict[str, Any]) -> bool:
    """[section, sentence] (1-based) of the report's longest sentence, which must be unique."""
    lengths = [(len(words(s)), k, j) for k, (_, found) in enumerate(_report(response, p), 1)
               for j, (s, _) in enumerate(found, 1)]
    top = max(n for n, _, _ in lengths)
    winners = [[k, j] for n, k, j in lengths if n == top]
    value = _json(response)[p["key"]]
    return len(winners) == 1 and isinstance(value, list) and all(_is_int(n) for n in value) and value == winners[0]


@check("report_json_absent_letters")
def _report_json_absent_letters(response: str, p: dict[str, Any]) -> bool:
    """Neither the report block nor any string value of the JSON object contains the letters."""
    return _absent_letters(response, p) and _json_absent_letters(response, p)


# ---------------------------------------------------------------- GI 2.0: a table whose columns are defined by text


def _entries(response: str, p: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, str] | None]:
    """The entry rows and the totals row (the last row when its name cell is the totals label, else None)."""
    rows = _rows(response, p)
    if rows[-1][p["name"]] == p["label"]:
        return rows[:-1], rows[-1]
    return rows, None


def _digits(cell: str) -> int:
    if not re.fullmatch(r"0|[1-9][0-9]*", cell):
        raise ValueError("not a plain whole number")
    return int(cell)


def table_values(entries: list[dict[str, str]], p: dict[str, Any], value: str) -> list[int]:
    """The true values of one derived column ("words", "bonus", "base", "total" or "rank"), computed from the Note
    texts and the written Base cells; raises when a needed Base cell is not a plain whole number."""
    counts = [len(words(row[p["note"]])) for row in entries]
    if value == "words":
        return counts
    bonus = [p["factor"] * counts[(r + 1) % len(entries)] for r in range(len(entries))]
    if value == "bonus":
        return bonus
    base = [_digits(row[p["base"]]) for row in entries]
    if value == "base":
        return base
    total = [b + x for b, x in zip(base, bonus)]
    if value == "total":
        return total
    order = sorted(range(len(entries)), key=lambda r: (-total[r], r))
    rank = [0] * len(entries)
    for place, r in enumerate(order, 1):
        rank[r] = place
    return rank


@check("table_shape")
def _table_shape(response: str, p: dict[str, Any]) -> bool:
    """`rows` entry rows then one totals row whose name cell is the label and whose note and rank cells are `-`."""
    entries, totals = _entries(response, p)
    return len(entries) == p["rows"] and totals is not None and totals[p["note"]] == "-" and totals[p["rank"]] == "-"


@check("table_name_initials")
def _table_name_initials(response: str, p: dict[str, Any]) -> bool:
    names = [row[p["name"]] for row in _entries(response, p)[0]]
    return all(re.fullmatch(r"[A-Z][a-z]*", n) for n in names) and "".join(n[0] for n in names) == p["letters"]


@check("table_note_lengths")
def _table_note_lengths(response: str, p: dict[str, Any]) -> bool:
    counts = [len(words(row[p["note"]])) for row in _entries(response, p)[0]]
    return all(p["low"] <= n <= p["high"] for n in counts) and len(set(counts)) == len(counts)


@check("table_derived_column")
def _table_derived_column(response: str, p: dict[str, Any]) -> bool:
    """Every entry's cell in column p["column"] is, in plain digits, the true value p["value"] of table_values."""
    entries = _entries(response, p)[0]
    values = table_values(entries, p, p["value"])
    return bool(entries) and all(row[p["column"]] == str(v) for row, v in zip(entries, values))


@check("table_base_column")
def _table_base_column(response: str, p: dict[str, Any]) -> bool:
    """Positive whole numbers in plain digits, strictly decreasing, adding up to `sum`."""
    values = [_digits(row[p["base"]]) for row in _entries(response, p)[0]]
    return all(v > 0 for v in values) and all(a > b for a, b in zip(values, values[1:])) and sum(values) == p["sum"]


@check("table_totals_row")
def _table_totals_row(response: str, p: dict[str, Any]) -> bool:
    """The totals row holds, in each summed column, the sum of the column's true values over the entry rows."""
    entries, totals = _entries(response, p)
    if totals is None:
        return False
    return bool(entries) and all(totals[column] == str(sum(table_values(entries, p, value)))
                                 for column, value in p["sums"])


@check("table_keyword_ranks")
def _table_keyword_ranks(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once in the Note of each entry whose true rank is at most `top`, in no other cell."""
    entries, totals = _entries(response, p)
    ranks = table_values(entries, p, "rank")
    rows = entries + ([totals] if totals else [])
    for r, row in enumerate(rows):
        for column, cell in row.items():
            wanted = int(column == p["note"] and r < len(entries) and ranks[r] <= p["top"])
            if _count_word(cell, p["word"]) != wanted:
                return False
    return True


@check("table_cells_absent_letters")
def _table_cells_absent_letters(response: str, p: dict[str, Any]) -> bool:
    """No cell of the listed columns, in the entry rows, contains the letters."""
    text = " ".join(row[c] for row in _entries(response, p)[0] for c in p["in"]).lower()
    return not any(letter in text for letter in p["letters"].lower())


@check("outline_item_acrostic")
def _outline_item_acrostic(response: str, p: dict[str, Any]) -> bool:
    """The first letters of a section's items' first words, in item order, are the first letters of its heading (so
    the heading has at least as many letters as the section has items)."""
    sections = _outline(response, p)
    return all(items and len(heading) >= len(items) and all(
        words(text) and words(text)[0][0].lower() == heading[j].lower() for j, (_, _, text) in enumerate(items))
        for _, heading, items in sections)


@check("outline_endings_by_parity")
def _outline_endings_by_parity(response: str, p: dict[str, Any]) -> bool:
    """An item ends with `?` when its number of words is odd, and with `.` when it is even."""
    items = [text for _, _, items in _outline(response, p) for _, _, text in items]
    return bool(items) and all(text.endswith("?" if len(words(text)) % 2 else ".") for text in items)


@check("outline_forward_citations")
def _outline_forward_citations(response: str, p: dict[str, Any]) -> bool:
    """The last item of every section but the last holds exactly one number, the words in the next section's items;
    no other item holds a number, except the outline's very last item (left to `outline_total_citation`)."""
    sections = _outline(response, p)
    if len(sections) < 2 or not all(items for _, _, items in sections):
        return False
    totals = [sum(len(words(text)) for _, _, text in items) for _, _, items in sections]
    for i, (_, _, items) in enumerate(sections[:-1]):
        for j, (_, _, text) in enumerate(items):
            if numbers(text) != ([str(totals[i + 1])] if j == len(items) - 1 else []):
                return False
    return all(not numbers(text) for _, _, text in sections[-1][2][:-1])


@check("outline_total_citation")
def _outline_total_citation(response: str, p: dict[str, Any]) -> bool:
    """The outline's very last item holds exactly one number: the total number of words in all items."""
    items = [text for _, _, items in _outline(response, p) for _, _, text in items]
    return bool(items) and numbers(items[-1]) == [str(sum(len(words(text)) for text in items))]


@check("word_at_stanza_position")
def _word_at_stanza_position(response: str, p: dict[str, Any]) -> bool:
    """The word occurs exactly once in the last line of every stanza, as that line's n-th word where n is the
    stanza's number of lines, and in no other line."""
    stanzas = _stanzas(response, p)
    for stanza in stanzas:
        for j, line in enumerate(stanza):
            if _count_word(line, p["word"]) != (1 if j == len(stanza) - 1 else 0):
                return False
        found = words(stanza[-1])
        if len(found) < len(stanza) or found[len(stanza) - 1].lower() != p["word"].lower():
            return False
    return bool(stanzas)


@check("table_note_citations")
def _table_note_citations(response: str, p: dict[str, Any]) -> bool:
    """Each entry's Note holds exactly one number: the true Total of the entry ranked one place below it (the
    last-ranked entry cites the Total of the entry ranked 1)."""
    entries = _entries(response, p)[0]
    total, rank = table_values(entries, p, "total"), table_values(entries, p, "rank")
    at_rank = {place: r for r, place in enumerate(rank)}
    return bool(entries) and all(numbers(row[p["note"]]) == [str(total[at_rank[rank[r] % len(entries) + 1]])]
                                 for r, row in enumerate(entries))
