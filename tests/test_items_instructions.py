"""Instruction items (GI 2.0): long documents whose constraints interlock.

Every item is exercised through the suite (its item file's drivers and band) on custom pools. An independent solver
reads only the prompt text: it re-derives every constraint of the key (check and parameters) from the wording,
builds its own response from its own made-up words, and that response scores 1 — so every rule a response is held
to is stated in the prompt, and the instance is satisfiable from the prompt alone. The solver also re-derives the
measured difficulty from the prompt (the coupling count; for the table, the cascade of one-word slips, through its
own reading of the requirements). Fairness: each document needs planning (a table of target counts, the citations
computed from it, a sorted list, a small partition of lengths) and then careful writing and counting; an expert
with pencil and paper does it in an hour or two, and nothing needs more than a few thousand tokens of bookkeeping
beyond the text itself.
"""

from __future__ import annotations

import json
import re
import statistics
from itertools import count

import pytest

from esac_kit.gi.constraints import CHECKS, block, block_groups, constraint_met, footer, outline, sentences, words
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED
from esac_kit.instances import generate
from esac_kit.kinds import resolve
from esac_kit.pools import custom_pool
from esac_kit.schemas import Constraint
from esac_kit.suite import load_suite

ITEMS = ("instructions-sentence-ladder", "instructions-acrostic-poem", "instructions-numbered-outline",
         "instructions-json-record", "instructions-scored-table")
MAIN_DRIVER = {"instructions-sentence-ladder": "paragraphs", "instructions-acrostic-poem": "stanzas",
               "instructions-numbered-outline": "sections", "instructions-json-record": "sections",
               "instructions-scored-table": "rows"}
SEEDS = 24


@pytest.fixture(scope="module")
def suite():
    return load_suite("gi")


@pytest.fixture(scope="module")
def made(suite):
    """SEEDS instances of every item, generated as a run would (drivers and band from the item file)."""
    return {i: [generate(suite, suite.item(i), custom_pool(f"t-{n}")) for n in range(SEEDS)] for i in ITEMS}


def failed(key, response):
    detail = score_response(key, response).detail
    return detail["gate_failed"], sorted(c for c, ok in detail["met"].items() if not ok)


def derived(key) -> list[tuple[str, dict]]:
    return [(c.check, c.params) for c in key.gate + key.constraints]


# ---------------------------------------------------------------- the solver's own vocabulary


class Maker:
    """Made-up lower-case words from the letters not banned: unique, never a reserved word."""

    def __init__(self, banned: str, reserved=()):
        self.letters = [c for c in "abcdefghijklmnopqrstuvwxyz" if c not in banned]
        self.reserved = {w.lower() for w in reserved}
        self.counter = count(100)

    def word(self, start: str = "", end: str = "") -> str:
        while True:
            n, body = next(self.counter), ""
            while n:
                n, digit = divmod(n, len(self.letters))
                body += self.letters[digit]
            candidate = start.lower() + body + end.lower()
            if candidate not in self.reserved:
                return candidate


def parse_linear(text: str) -> dict[str, int]:
    """`2×k − j + 3` -> {"k": 2, "j": -1, "": 3}."""
    out: dict[str, int] = {}
    for sign, size, name in re.findall(r"([+−]?)\s*(\d*)×?([a-z]?)", text.replace(" ", "")):
        if not size and not name:
            continue
        out[name] = (-1 if sign == "−" else 1) * (int(size) if size else 1)
    return out


def grab(pattern: str, prompt: str) -> str:
    found = re.search(pattern, prompt)
    assert found, pattern
    return found.group(1)


def ints(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\d+", text)]


def common(prompt: str) -> tuple[str, str]:
    banned = grab(r"The letter '([a-z])' appears", prompt)
    keyword = grab(r"The word '([a-z]+)' occurs exactly once", prompt)
    return banned, keyword


def governed(governs: dict[str, set]) -> int:
    per_unit: dict = {}
    for units in governs.values():
        for unit in units:
            per_unit[unit] = per_unit.get(unit, 0) + 1
    return sum(k * (k - 1) // 2 for k in per_unit.values())


# ---------------------------------------------------------------- the sentence ladder


def read_ladder(prompt: str) -> dict:
    q = {"P": int(grab(r"essay of exactly (\d+) paragraphs", prompt)),
         "counts": ints(grab(r"numbers of sentences, in order: ([\d, ]+)\.", prompt)),
         "formula": parse_linear(grab(r"Sentence j of paragraph k has exactly (.+?) words \(", prompt)),
         "m": int(grab(r"multiple of (\d+) ends with", prompt)),
         "letters": "".join(re.findall(r"[A-Z]", grab(r"the k-th of these letters: ([A-Z, ]+)\.", prompt))).lower()}
    q["banned"], q["keyword"] = common(prompt)
    return q


def ladder_key(q: dict) -> list[tuple[str, dict]]:
    b = {"begin": "BEGIN ESSAY", "end": "END ESSAY"}
    f = q["formula"]
    return [("paragraph_count", {**b, "count": q["P"]}), ("paragraph_sentence_counts", {**b, "counts": q["counts"]}),
            ("sentence_length_formula", {**b, "a": f.get("k", 0), "b": f.get("j", 0), "c": f.get("", 0),
                                         "paragraphs": q["P"]}),
            ("end_mark_by_length", {**b, "m": q["m"]}), ("paragraph_sentence_initials", {**b, "letters": q["letters"]}),
            ("absent_letters", {**b, "letters": q["banned"]}),
            ("word_in_length_multiples", {**b, "word": q["keyword"], "m": q["m"]}), ("paragraph_citations", b),
            ("total_citation", b), ("paragraph_caps_tags", b)]


def ladder_length(q: dict, k: int, j: int) -> int:
    f = q["formula"]
    return f.get("k", 0) * k + f.get("j", 0) * j + f.get("", 0)


def solve_ladder(q: dict) -> str:
    maker = Maker(q["banned"], [q["keyword"]])
    letters = maker.letters
    grid = {k: [ladder_length(q, k, j) for j in range(1, n + 1)] for k, n in enumerate(q["counts"], 1)}
    totals = {k: sum(v) for k, v in grid.items()}
    paragraphs = []
    for k, lengths in grid.items():
        lines = []
        for j, n in enumerate(lengths, 1):
            tokens = [maker.word(start=q["letters"][k - 1]).capitalize()] + [maker.word() for _ in range(n - 1)]
            if n % q["m"] == 0:
                tokens[1] = q["keyword"]
            if j == 1:
                tokens[2] = (letters[0] + letters[k]).upper()  # the tag: ascending by its second letter
            if k >= 2 and j == 1:
                tokens.append(str(totals[k - 1]))
            if k == q["P"] and j == len(lengths):
                tokens.append(str(sum(totals.values())))
            lines.append(" ".join(tokens) + ("?" if n % q["m"] == 0 else "."))
        paragraphs.append("\n".join(lines))  # one sentence a line: a paragraph runs over several lines
    return "Here it is.\n\nBEGIN ESSAY\n" + "\n\n".join(paragraphs) + "\nEND ESSAY\n"


def ladder_measure(q: dict) -> int:
    units = {(k, j) for k, n in enumerate(q["counts"], 1) for j in range(1, n + 1)}
    P = q["P"]
    return governed({"all": units, "b": units, "c": units, "d": units, "e": units, "f": units, "g": units,
                     "keyword": {u for u in units if ladder_length(q, *u) % q["m"] == 0},
                     "citations": {(k, j) for k, j in units if k < P or j == 1}})


# ---------------------------------------------------------------- the acrostic poem


def read_poem(prompt: str) -> dict:
    q = {"S": int(grab(r"poem of exactly (\d+) stanzas", prompt)),
         "words": [w.lower() for w in grab(r"one line per letter: ([A-Z, ]+)\.", prompt).split(", ")],
         "rule": parse_linear(grab(r"has n lines has exactly (.+?) words", prompt)),
         "refrain": grab(r"The word '([a-z]+)' occurs exactly once in the last line of every stanza, as that "
                         r"line's n-th word", prompt),
         "limit": int(grab(r"occurs more than (\d+) times", prompt)),
         "banned": grab(r"The letter '([a-z])' appears", prompt)}
    assert q["rule"].get("n") == 1 and q["rule"].get("j") == 1
    q["d"] = -q["rule"].get("", 0)
    return q


def poem_key(q: dict) -> list[tuple[str, dict]]:
    b = {"begin": "BEGIN POEM", "end": "END POEM"}
    return [("paragraph_count", {**b, "count": q["S"]}), ("stanza_acrostics", {**b, "words": q["words"]}),
            ("stanza_line_lengths", {**b, "d": q["d"], "stanzas": q["S"]}), ("line_end_chain", b),
            ("stanza_last_words_ascending", b), ("word_at_stanza_position", {**b, "word": q["refrain"]}),
            ("max_repeats", {**b, "limit": q["limit"], "except": [q["refrain"]]}),
            ("absent_letters", {**b, "letters": q["banned"]}), ("footer_group_words", {**b, "label": "WORDS"})]


def solve_poem(q: dict) -> str:
    maker = Maker(q["banned"], [q["refrain"]])
    order = maker.letters  # ascending: the stanza-final words ascend by their first two letters
    initials = "".join(q["words"])
    stanzas, at, totals = [], 0, []
    for k, word in enumerate(q["words"]):
        n, lines = len(word), []
        for j in range(1, n + 1):
            size = n + j - q["d"]
            following = initials[at + 1] if at + 1 < len(initials) else ""
            if j == n:
                last = order[k] * 2 + following
            else:
                last = maker.word(end=following)
            tokens = [maker.word(start=initials[at]).capitalize()] + [maker.word() for _ in range(size - 2)] + [last]
            if j == n:
                tokens[n - 1] = q["refrain"]
            lines.append(" ".join(tokens))
            at += 1
        totals.append(sum(len(line.split()) for line in lines))
        stanzas.append("\n".join(lines))
    return "BEGIN POEM\n" + "\n\n\n".join(stanzas) + "\nEND POEM\nWORDS: " + ", ".join(map(str, totals)) + "\n"


def poem_measure(q: dict) -> int:
    units = {(k, j) for k, w in enumerate(q["words"], 1) for j in range(1, len(w) + 1)}
    last = {(k, len(w)) for k, w in enumerate(q["words"], 1)}
    return governed({**{f"g{i}": units for i in range(6)}, "ascending": last, "refrain": last})


# ---------------------------------------------------------------- the numbered outline


def read_outline(prompt: str) -> dict:
    q = {"sizes": [int(n) for n in re.findall(r"section \d+ has (\d+) items", prompt)],
         "P": int(grab(r"There are exactly (\d+) sections", prompt)),
         "order": grab(r"in strictly (ascending|descending) alphabetical order", prompt),
         "formula": parse_linear(grab(r"Item i\.j has exactly (.+?) words", prompt))}
    q["banned"], q["keyword"] = common(prompt)
    assert len(q["sizes"]) == q["P"]
    return q


def outline_key(q: dict) -> list[tuple[str, dict]]:
    b = {"begin": "BEGIN OUTLINE", "end": "END OUTLINE"}
    f = q["formula"]
    return [("outline_wellformed", b), ("outline_shape", {**b, "items": q["sizes"]}),
            ("outline_headings", {**b, "order": q["order"]}),
            ("outline_item_words", {**b, "a": f.get("i", 0), "b": f.get("j", 0), "c": f.get("", 0)}),
            ("outline_item_acrostic", b), ("outline_forward_citations", b), ("outline_total_citation", b),
            ("outline_back_reference", b),
            ("outline_word_per_section", {**b, "word": q["keyword"]}), ("outline_endings_by_parity", b),
            ("absent_letters", {**b, "letters": q["banned"]}), ("outline_index", {**b, "label": "INDEX"})]


def solve_outline(q: dict) -> str:
    initials = [c for c in "abcdefghijklmnopqrstuvwxyz" if c != q["banned"]][:q["P"]]
    if q["order"] == "descending":
        initials = initials[::-1]
    headings = [x * max(q["sizes"]) for x in initials]  # long enough to spell every item's initial
    maker = Maker(q["banned"], [q["keyword"], *headings])  # a heading word must not turn up again by chance
    f = q["formula"]
    size = {(i, j): f.get("i", 0) * i + f.get("j", 0) * j + f.get("", 0)
            for i, n in enumerate(q["sizes"], 1) for j in range(1, n + 1)}
    totals = [sum(size[(i, j)] for j in range(1, n + 1)) for i, n in enumerate(q["sizes"], 1)]
    lines, firsts = [], []
    for i, n in enumerate(q["sizes"], 1):
        lines.append(f"{i}. {headings[i - 1].upper()}")
        for j in range(1, n + 1):
            tokens = [maker.word(start=initials[i - 1])] + [maker.word() for _ in range(size[(i, j)] - 1)]
            firsts.append(tokens[0])
            if j == 1:
                tokens[1] = q["keyword"]
                if i >= 2:
                    tokens[2] = headings[i - 2]
            if j == n:
                tokens.append(str(totals[i] if i < q["P"] else sum(totals)))
            lines.append(f"{i}.{j} " + " ".join(tokens).capitalize() + ("?" if size[(i, j)] % 2 else "."))
        lines.append("")
    return "BEGIN OUTLINE\n" + "\n".join(lines) + "\nEND OUTLINE\n\nINDEX: " + ", ".join(sorted(firsts)) + "\n"


def outline_measure(q: dict) -> int:
    P = q["P"]
    units = {(i, j) for i, n in enumerate(q["sizes"], 1) for j in range(1, n + 1)}
    heads = {("H", i) for i in range(1, P + 1)}
    return governed({"shape": units, "words": units, "endings": units, "lipogram": units | heads, "index": units,
                     "headings": heads, "initials": units | heads, "total": units, "keyword": units | heads,
                     "citations": {(i, j) for i, j in units if i > 1 or j == q["sizes"][0]},
                     "backref": {(i, 1) for i in range(2, P + 1)} | {("H", i) for i in range(1, P)}})


# ---------------------------------------------------------------- the report and its JSON summary


def read_record(prompt: str) -> dict:
    q = {"S": int(grab(r"report of exactly (\d+) titled sections", prompt)),
         "counts": ints(grab(r"numbers of sentences, in order: ([\d, ]+)\.", prompt)),
         "totals": ints(grab(r"numbers of words, in order: ([\d, ]+) \(", prompt)),
         "keys": re.findall(r"`(\w+)`", grab(r"exactly these keys, in this order: (.*?)\.\n", prompt))}
    q["low"], q["high"] = ints(grab(r"Every sentence has (between \d+ and \d+) words", prompt))
    q["banned"], q["keyword"] = common(prompt)
    return q


def record_key(q: dict) -> list[tuple[str, dict]]:
    b = {"begin": "BEGIN REPORT", "end": "END REPORT"}
    return [("report_wellformed", b), ("json_present", {}), ("json_keys", {"keys": q["keys"]}),
            ("report_titles", {**b, "count": q["S"]}), ("report_sentence_counts", {**b, "counts": q["counts"]}),
            ("report_section_words", {**b, "totals": q["totals"]}),
            ("report_sentence_band", {**b, "low": q["low"], "high": q["high"], "distinct": True}),
            ("report_word_per_section", {**b, "word": q["keyword"]}),
            ("json_sentence_words", {**b, "key": "sentence_words"}),
            ("json_word_totals", {**b, "sections_key": "section_words", "total_key": "total_words"}),
            ("json_keyword_sentences", {**b, "key": "keyword_sentence", "word": q["keyword"]}),
            ("json_longest", {**b, "key": "longest"}), ("report_json_absent_letters", {**b, "letters": q["banned"]})]


def partition(lengths: list[int], sizes: list[int], sums: list[int]) -> list[list[int]] | None:
    """Disjoint groups of the given sizes and sums drawn from distinct lengths, found by a seeded local search that
    swaps two lengths between groups (or with the unused ones) whenever that brings the sums no further off."""
    import random

    chance = random.Random(0)
    for _ in range(200):
        pool = list(lengths)
        chance.shuffle(pool)
        groups, at = [], 0
        for size in sizes:
            groups.append(pool[at:at + size])
            at += size
        groups.append(pool[at:])  # the unused lengths: their sum is free
        wanted = sums + [None]

        def off(k: int) -> int:
            return 0 if wanted[k] is None else abs(sum(groups[k]) - wanted[k])

        for _ in range(20_000):
            if not any(off(k) for k in range(len(sizes))):
                return groups[:-1]
            g, h = chance.sample(range(len(groups)), 2)
            if not groups[g] or not groups[h]:
                continue
            x, y = chance.randrange(len(groups[g])), chance.randrange(len(groups[h]))
            before = off(g) + off(h)
            groups[g][x], groups[h][y] = groups[h][y], groups[g][x]
            if off(g) + off(h) > before:
                groups[g][x], groups[h][y] = groups[h][y], groups[g][x]
    return None


def solve_record(q: dict) -> str:
    groups = partition(list(range(q["low"], q["high"] + 1)), q["counts"], q["totals"])
    assert groups is not None, "the stated counts and totals admit no distinct lengths in the band"
    maker = Maker(q["banned"], [q["keyword"]])
    sections = []
    for k, group in enumerate(groups):
        texts = []
        for j, n in enumerate(group):
            tokens = [maker.word() for _ in range(n)]
            if j == 0:
                tokens[1] = q["keyword"]
            texts.append(" ".join(tokens).capitalize() + ".")
        sections.append(f"## {(maker.letters[k] * 3).capitalize()}\n" + "\n".join(texts))
    top = max(n for group in groups for n in group)
    summary = {"sentence_words": groups, "section_words": [sum(g) for g in groups],
               "total_words": sum(map(sum, groups)), "keyword_sentence": [1] * len(groups),
               "longest": next([k + 1, j + 1] for k, g in enumerate(groups) for j, n in enumerate(g) if n == top)}
    return ("BEGIN REPORT\n" + "\n\n".join(sections) + "\nEND REPORT\n\n```json\n"
            + json.dumps({k: summary[k] for k in q["keys"]}, indent=1) + "\n```\n")


def record_measure(q: dict) -> int:
    units = {(k, j) for k, n in enumerate(q["counts"], 1) for j in range(1, n + 1)}
    heads = {("T", k) for k in range(1, q["S"] + 1)}
    return governed({"titles": heads, "sentences": units, "totals": units, "band": units, "sentence_words": units,
                     "word_totals": units, "longest": units, "lipogram": units | heads, "keyword": units | heads,
                     "keyword_sentence": units})


# ---------------------------------------------------------------- the table


def read_table(prompt: str) -> dict:
    q = {"columns": [c.strip() for c in grab(r"header row is exactly `\|(.*?)\|`", prompt).split("|")],
         "R": int(grab(r"exactly (\d+) entry rows", prompt)),
         "name": grab(r"one totals row, whose (\w+) cell is `", prompt),
         "label": grab(r"one totals row, whose \w+ cell is `(\w+)`", prompt),
         "letters": "".join(re.findall(r"[A-Z]", grab(r"first letters of these words, top to bottom, are: ([A-Z, ]+)",
                                                      prompt))),
         "base": grab(r"The (\w+) cells of the entry rows are positive", prompt),
         "sum": int(grab(r"that add up to (\d+)\.", prompt)),
         "factor": int(grab(r"cell is (\d+) times the number of words", prompt)),
         "top": int(grab(r"is at most (\d+) \(ranks", prompt))}
    q["words"], q["note"] = re.search(r"Each entry row's (\w+) cell is the number of words in its (\w+) cell",
                                      prompt).groups()
    q["bonus"] = grab(r"Each entry row's (\w+) cell is \d+ times", prompt)
    q["total"] = grab(r"Each entry row's (\w+) cell is its \w+ plus", prompt)
    q["rank"] = grab(r"Each entry row's (\w+) cell is its rank by", prompt)
    q["low"], q["high"] = ints(grab(r"cell of an entry row has (between \d+ and \d+) words", prompt))
    q["banned"], q["keyword"] = common(prompt)
    return q


def table_key(q: dict) -> list[tuple[str, dict]]:
    t = {"columns": q["columns"], "name": q["name"], "note": q["note"], "label": q["label"]}
    v = {**t, "base": q["base"], "factor": q["factor"]}
    return [("table_header", t), ("table_shape", {**t, "rows": q["R"], "rank": q["rank"]}),
            ("table_name_initials", {**t, "letters": q["letters"]}),
            ("table_note_lengths", {**t, "low": q["low"], "high": q["high"]}),
            ("table_derived_column", {**v, "column": q["words"], "value": "words"}),
            ("table_base_column", {**t, "base": q["base"], "sum": q["sum"]}),
            ("table_derived_column", {**v, "column": q["bonus"], "value": "bonus"}),
            ("table_derived_column", {**v, "column": q["total"], "value": "total"}),
            ("table_totals_row", {**v, "sums": [[q["words"], "words"], [q["base"], "base"], [q["bonus"], "bonus"],
                                               [q["total"], "total"]]}),
            ("table_derived_column", {**v, "column": q["rank"], "value": "rank"}),
            ("table_keyword_ranks", {**v, "word": q["keyword"], "top": q["top"]}), ("table_note_citations", v),
            ("table_cells_absent_letters", {**t, "letters": q["banned"], "in": [q["name"], q["note"]]})]


def table_truth(q: dict, notes: list[str], base: list[int]) -> dict[str, list[int]]:
    """The solver's own reading of the column definitions."""
    R = len(notes)
    n = [len(re.findall(r"[A-Za-z]+", note)) for note in notes]
    bonus = [q["factor"] * n[(r + 1) % R] for r in range(R)]
    total = [b + x for b, x in zip(base, bonus)]
    rank = [1 + sum(total[s] > total[r] or (total[s] == total[r] and s < r) for s in range(R)) for r in range(R)]
    return {"words": n, "bonus": bonus, "total": total, "rank": rank}


def render_table(q: dict, rows: list[dict[str, str]]) -> str:
    out = ["| " + " | ".join(q["columns"]) + " |", "|" + " :---: |" * len(q["columns"])]
    return "\n".join(out + ["|" + "|".join(f" {row[c]} " for c in q["columns"]) + "|" for row in rows])


def solve_table(q: dict) -> str:
    R = q["R"]
    maker = Maker(q["banned"], [q["keyword"]])
    lengths = list(range(q["low"], q["low"] + R))
    base = list(range(R, 0, -1))
    base[0] += q["sum"] - sum(base)
    notes = [" ".join(maker.word() for _ in range(n)) for n in lengths]
    truth = table_truth(q, notes, base)
    below = {truth["rank"][r]: r for r in range(R)}
    for r in range(R):
        if truth["rank"][r] <= q["top"]:
            notes[r] = q["keyword"] + notes[r][notes[r].index(" "):]  # the keyword replaces the first word
        notes[r] += f", {truth['total'][below[truth['rank'][r] % R + 1]]}"  # digits: no change to the count
    rows = [{q["name"]: maker.word(start=q["letters"][r]).capitalize(), q["note"]: notes[r],
             q["words"]: str(truth["words"][r]), q["base"]: str(base[r]), q["bonus"]: str(truth["bonus"][r]),
             q["total"]: str(truth["total"][r]), q["rank"]: str(truth["rank"][r])} for r in range(R)]
    rows.append({q["name"]: q["label"], q["note"]: "-", q["rank"]: "-",
                 **{q[c]: str(sum(int(row[q[c]]) for row in rows)) for c in ("words", "base", "bonus", "total")}})
    return "A draft first:\n\n| " + " | ".join(q["columns"]) + " |\n|---|\n\nThe table:\n\n" + render_table(q, rows)


def table_requirements(q: dict, text: str) -> list[bool] | None:
    """The solver's own verdicts on requirements 2-12 for a table as rendered in a reference (None: no header)."""
    lines = text.splitlines()
    head = "| " + " | ".join(q["columns"]) + " |"
    if head not in lines:
        return None
    rows = []
    for line in lines[lines.index(head) + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(q["columns"], [c.strip() for c in line.strip().strip("|").split("|")])))
    entries, totals = rows[:-1], rows[-1]
    notes = [row[q["note"]] for row in entries]
    base = [int(row[q["base"]]) for row in entries]
    truth = table_truth(q, notes, base)
    hosts = [r for r in range(len(entries)) if truth["rank"][r] <= q["top"]]
    below = {truth["rank"][r]: r for r in range(len(entries))}
    cells = [(r, c, row[c]) for r, row in enumerate(rows) for c in q["columns"]]
    keyword_ok = all(len(re.findall(rf"(?i)(?<![A-Za-z]){q['keyword']}(?![A-Za-z])", cell))
                     == (1 if c == q["note"] and r in hosts else 0) for r, c, cell in cells)
    return [len(entries) == q["R"] and totals[q["name"]] == q["label"]
            and totals[q["note"]] == totals[q["rank"]] == "-",
            all(re.fullmatch(r"[A-Z][a-z]*", row[q["name"]]) for row in entries)
            and "".join(row[q["name"]][0] for row in entries) == q["letters"],
            all(q["low"] <= n <= q["high"] for n in truth["words"]) and len(set(truth["words"])) == len(entries),
            [row[q["words"]] for row in entries] == [str(n) for n in truth["words"]],
            all(a > b > 0 for a, b in zip(base, base[1:])) and sum(base) == q["sum"],
            [row[q["bonus"]] for row in entries] == [str(n) for n in truth["bonus"]],
            [row[q["total"]] for row in entries] == [str(n) for n in truth["total"]],
            [totals[q[c]] for c in ("words", "base", "bonus", "total")]
            == [str(sum(truth["words"])), str(sum(base)), str(sum(truth["bonus"])), str(sum(truth["total"]))],
            [row[q["rank"]] for row in entries] == [str(n) for n in truth["rank"]],
            keyword_ok,
            all(re.findall(r"\d+", notes[r]) == [str(truth["total"][below[truth["rank"][r] % len(entries) + 1]])]
                for r in range(len(entries))),
            not any(q["banned"] in (row[q["name"]] + row[q["note"]]).lower() for row in entries)]


def table_cascade(q: dict, reference: str) -> int:
    """Requirements the solver sees broken when one entry's note gets one more (neutral) word, summed over entries."""
    lines = reference.splitlines()
    note_at = q["columns"].index(q["note"])
    extra = Maker(q["banned"], [q["keyword"]]).word()
    broken = 0
    for r in range(q["R"]):
        slip = list(lines)
        cells = slip[2 + r].strip().strip("|").split("|")
        cells[note_at] = cells[note_at].rstrip() + " " + extra + " "
        slip[2 + r] = "|" + "|".join(cells) + "|"
        broken += sum(not ok for ok in table_requirements(q, "\n".join(slip)))
    return broken


SOLVERS = {"instructions-sentence-ladder": (read_ladder, ladder_key, solve_ladder, ladder_measure),
           "instructions-acrostic-poem": (read_poem, poem_key, solve_poem, poem_measure),
           "instructions-numbered-outline": (read_outline, outline_key, solve_outline, outline_measure),
           "instructions-json-record": (read_record, record_key, solve_record, record_measure),
           "instructions-scored-table": (read_table, table_key, solve_table, None)}


# ---------------------------------------------------------------- the guarantees


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_scores_one_and_empty_and_garbled_score_zero(made, item_id):
    for instance in made[item_id]:
        assert score_response(instance.key, instance.reference).score == 1.0, failed(instance.key, instance.reference)
        assert score_response(instance.key, "").score == 0.0
        assert score_response(instance.key, GARBLED).score == 0.0
        assert 8 <= len(instance.key.constraints) <= 12 and instance.key.gate
        assert len(instance.prompt) <= 16_000
        assert all(c.check in CHECKS for c in instance.key.gate + instance.key.constraints)


@pytest.mark.parametrize("item_id", ITEMS)
def test_prompt_only_solver_rederives_the_key_and_writes_a_full_score_response(made, item_id):
    read, key_of, solve, _ = SOLVERS[item_id]
    for instance in made[item_id]:
        q = read(instance.prompt)
        assert key_of(q) == derived(instance.key)
        response = solve(q)
        assert score_response(instance.key, response).score == 1.0, failed(instance.key, response)


@pytest.mark.parametrize("item_id", ITEMS)
def test_the_measure_is_rederived_from_the_prompt_and_lies_in_the_band(suite, made, item_id):
    read, _, _, measure = SOLVERS[item_id]
    spec = suite.item(item_id).difficulty
    for instance in made[item_id]:
        value = instance.difficulty[spec.measure]
        assert spec.band[0] <= value <= spec.band[1]
        q = read(instance.prompt)
        assert value == (measure(q) if measure else table_cascade(q, instance.reference))


@pytest.mark.parametrize("item_id", ITEMS)
def test_raising_the_main_driver_raises_the_measured_difficulty(suite, item_id):
    item = suite.item(item_id)
    generator, spec, driver = resolve(item.generator), item.difficulty, MAIN_DRIVER[item_id]
    from esac_kit.rng import ItemRng, derive_item_key

    def median_at(value: int) -> float:
        drivers = {**spec.drivers, driver: value}
        return statistics.median(generator(ItemRng(derive_item_key(f"t-drive-{n}", "gi", item_id, 2)), **drivers)
                                 .difficulty[spec.measure] for n in range(12))

    low, high = spec.drivers[driver] - 2, spec.drivers[driver] + 2
    assert median_at(low) < median_at(spec.drivers[driver]) < median_at(high)


@pytest.mark.parametrize("item_id", ITEMS)
def test_instances_are_deterministic_and_unique(suite, made, item_id):
    again = generate(suite, suite.item(item_id), custom_pool("t-3"))
    assert again == made[item_id][3]
    assert len({i.prompt for i in made[item_id]}) == SEEDS
    assert len({i.key.model_dump_json() for i in made[item_id]}) == SEEDS


@pytest.mark.parametrize("item_id", ITEMS)
def test_breaking_the_document_scores_zero(made, item_id):
    for instance in made[item_id][:8]:
        reference = instance.reference
        if "```json" in reference:
            broken = reference.replace("```json", "```")
        elif reference.startswith("|"):
            broken = reference.replace("|---", "|", 1)
        else:
            broken = reference.replace("\nEND ", "\nEND-", 1)  # no end marker: no document
        assert score_response(instance.key, broken).score == 0.0


# ---------------------------------------------------------------- one slip breaks several constraints


def add_word(line: str, word: str) -> str:
    """The line with one more word after its first word (before any label, the line's first token stays)."""
    head, _, tail = line.partition(" ")
    first, _, rest = tail.partition(" ")
    return f"{head} {first} {word} {rest}" if re.match(r"^\d+\.\d+$", head) else f"{head} {word} {tail}"


def test_ladder_one_extra_word_breaks_its_length_the_citations_and_the_total(made):
    for instance in made["instructions-sentence-ladder"][:10]:
        q = read_ladder(instance.prompt)
        lines = instance.reference.splitlines()
        lines[1] = add_word(lines[1], Maker(q["banned"], [q["keyword"]]).word())  # paragraph 1, sentence 1
        gate, bad = failed(instance.key, "\n".join(lines))
        assert not gate and {"lengths", "citations", "total"} <= set(bad)
        assert ("marks" in bad) == ("keyword" in bad) == any(
            (ladder_length(q, 1, 1) + extra) % q["m"] == 0 for extra in (0, 1))
        assert not {"sentences", "initials", "lipogram", "tags"} & set(bad)


def test_ladder_a_missing_sentence_shifts_every_later_count(made):
    instance = made["instructions-sentence-ladder"][0]
    text = instance.reference
    first_end = re.search(r"[.?]", text).start()
    merged = text[:first_end] + "," + text[first_end + 1:]  # sentences 1 and 2 of paragraph 1 become one
    gate, bad = failed(instance.key, merged)
    assert not gate and {"sentences", "lengths"} <= set(bad)


def test_poem_one_extra_word_breaks_the_lengths_and_the_footer_only(made):
    for instance in made["instructions-acrostic-poem"][:10]:
        q = read_poem(instance.prompt)
        lines = instance.reference.splitlines()
        lines[2] = add_word(lines[2], Maker(q["banned"], [q["refrain"]]).word())
        assert failed(instance.key, "\n".join(lines)) == ([], ["footer", "lengths"])


def test_poem_a_dropped_line_breaks_acrostic_chain_and_lengths(made):
    instance = made["instructions-acrostic-poem"][1]
    lines = instance.reference.splitlines()
    del lines[2]  # line 2 of stanza 1
    gate, bad = failed(instance.key, "\n".join(lines))
    assert not gate and {"acrostic", "lengths", "footer"} <= set(bad)
    assert ("chain" in bad) == (words(lines[1])[-1][-1].lower() != words(lines[2])[0][0].lower())


def test_poem_the_repetition_cap_counts_case_insensitively():
    p = {"begin": "B", "end": "E", "limit": 2, "except": ["oven"]}
    check = CHECKS["max_repeats"]
    assert check("B\nThe dog the\nOven oven oven\nE", p)
    assert not check("B\nThe dog the THE\nE", p)


def test_outline_one_extra_word_breaks_the_formula_the_end_mark_and_a_citation(made):
    for instance in made["instructions-numbered-outline"][:10]:
        q = read_outline(instance.prompt)
        lines = instance.reference.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("2.1 "))
        lines[at] = add_word(lines[at], Maker(q["banned"], [q["keyword"]]).word())
        assert failed(instance.key, "\n".join(lines)) == ([], ["citations", "endings", "total", "words"])


def test_outline_index_must_be_sorted_and_complete(made):
    instance = made["instructions-numbered-outline"][2]
    text = footer(instance.reference, "END OUTLINE", "INDEX")
    entries = text.split(", ")
    for wrong in (entries[::-1], entries[:-1], [e.capitalize() for e in entries]):
        if wrong == entries:
            continue
        response = instance.reference.replace("INDEX: " + text, "INDEX: " + ", ".join(wrong))
        assert failed(instance.key, response) == ([], ["index"])


def test_record_one_extra_word_breaks_the_totals_and_the_summary(made):
    for instance in made["instructions-json-record"][:10]:
        q = read_record(instance.prompt)
        lines = instance.reference.splitlines()
        at = next(i for i, line in enumerate(lines) if line and not line.startswith(("#", "BEGIN")))
        lines[at] = add_word(lines[at], Maker(q["banned"], [q["keyword"]]).word())
        gate, bad = failed(instance.key, "\n".join(lines))
        assert not gate and {"totals", "sentence_words", "word_totals"} <= set(bad)
        assert not {"keys", "titles", "sentences", "keyword", "keyword_sentence", "lipogram"} & set(bad)


def test_record_summary_values_are_checked_against_the_report(made):
    instance = made["instructions-json-record"][4]
    body = re.search(r"```json\n(.*?)```", instance.reference, re.S).group(1)
    data = json.loads(body)
    head = instance.reference[:instance.reference.index("```json")]
    for key, change, broken in (("total_words", lambda v: v + 1, "word_totals"),
                                ("longest", lambda v: [v[0], v[1] + 1], "longest"),
                                ("keyword_sentence", lambda v: [v[0] % 3 + 1] + v[1:], "keyword_sentence")):
        wrong = dict(data, **{key: change(data[key])})
        assert failed(instance.key, head + "```json\n" + json.dumps(wrong) + "\n```") == ([], [broken])
    reordered = dict(reversed(list(data.items())))
    assert failed(instance.key, head + "```json\n" + json.dumps(reordered) + "\n```") == ([], ["keys"])


def test_record_repeated_lengths_fail_the_band_and_a_tied_longest_fails_the_pointer():
    p = {"begin": "B", "end": "E", "low": 2, "high": 9, "distinct": True, "key": "longest"}
    report = "B\n## Alpha\nOne two three. Four five six.\nE\n```json\n{\"longest\": [1, 1]}\n```"
    assert not CHECKS["report_sentence_band"](report, p)
    assert not CHECKS["json_longest"](report, p)
    assert CHECKS["json_longest"](report.replace("six.", "six seven."), {**p, "key": "longest"}) is False
    assert CHECKS["json_longest"](report.replace("six.", "six seven.").replace("[1, 1]", "[1, 2]"), p)


def test_table_one_extra_word_in_a_note_breaks_words_bonus_total_and_totals(made):
    for instance in made["instructions-scored-table"][:10]:
        q = read_table(instance.prompt)
        lines = instance.reference.splitlines()
        note_at = q["columns"].index(q["note"])
        cells = lines[3].strip().strip("|").split("|")
        cells[note_at] += " " + Maker(q["banned"], [q["keyword"]]).word() + " "
        lines[3] = "|" + "|".join(cells) + "|"
        gate, bad = failed(instance.key, "\n".join(lines))
        assert not gate and {"words", "bonus", "total", "totals"} <= set(bad)


def test_table_keyword_follows_the_true_ranks(made):
    for instance in made["instructions-scored-table"][:10]:
        q = read_table(instance.prompt)
        response = solve_table(q)
        moved = response.replace(f" {q['keyword']} ", f" {Maker(q['banned'], [q['keyword']]).word()} ", 1)
        assert failed(instance.key, moved)[1] == ["keyword"]


def test_table_solver_reading_agrees_with_the_key_on_slipped_references(made):
    for instance in made["instructions-scored-table"][:6]:
        q = read_table(instance.prompt)
        lines = instance.reference.splitlines()
        note_at = q["columns"].index(q["note"])
        for r in range(q["R"]):
            slip = list(lines)
            cells = slip[2 + r].strip().strip("|").split("|")
            cells[note_at] += " " + Maker(q["banned"], [q["keyword"]]).word() + " "
            slip[2 + r] = "|" + "|".join(cells) + "|"
            text = "\n".join(slip)
            mine = table_requirements(q, text)
            theirs = [constraint_met(c, text) for c in instance.key.constraints]
            assert mine == theirs


# ---------------------------------------------------------------- the shared counting rules


def test_words_are_runs_of_ascii_letters_and_numbers_are_not_words():
    assert words("don't stop 3.5 well-known Zürich 42x") == ["don", "t", "stop", "well", "known", "Z", "rich", "x"]


def test_block_takes_the_last_block_and_groups_need_blank_lines():
    text = "BEGIN\nold\nEND\n\nBEGIN\n  new  \n\n\nline\nnext\nEND\nBEGIN\nunclosed"
    assert block(text, "BEGIN", "END") is None
    closed = text.rsplit("\nBEGIN", 1)[0]
    assert block(closed, "BEGIN", "END") == ["new", "line", "next"]
    assert block_groups(closed, "BEGIN", "END") == [["new"], ["line", "next"]]


def test_sentences_split_on_every_terminator_and_keep_a_trailing_fragment():
    assert [(len(words(s)), e) for s, e in sentences("One two. Three? Four five! six")] == \
        [(2, "."), (1, "?"), (2, "!"), (1, "")]
    assert [e for _, e in sentences("Wait... ok.")] == [".", ".", ".", "."]


def test_outline_parser_rejects_stray_lines_and_items_before_a_heading():
    good = "BEGIN OUTLINE\n1. ALPHA\n1.1 Ant.\n2. BETA\n2.1 Bee?\nEND OUTLINE"
    p = {"begin": "BEGIN OUTLINE", "end": "END OUTLINE"}
    assert outline(good, p) == [(1, "ALPHA", [(1, 1, "Ant.")]), (2, "BETA", [(2, 1, "Bee?")])]
    assert outline(good.replace("2. BETA", "- BETA"), p) is None
    assert outline("BEGIN OUTLINE\n1.1 Ant.\nEND OUTLINE", p) is None


def test_footer_is_the_last_labelled_line_after_the_end_marker():
    text = "WORDS: 1\nBEGIN\nx\nEND\nWORDS: 2, 3\nnoise\nWORDS: 4, 5"
    assert footer(text, "END", "WORDS") == "4, 5"
    assert footer("BEGIN\nx\nEND\n", "END", "WORDS") is None


def test_a_keyerror_inside_a_check_is_a_failed_check_and_an_unknown_check_raises():
    longest = Constraint(id="l", check="json_longest", params={"begin": "B", "end": "E", "key": "longest"},
                         description="")
    good = "B\n## Alpha\nOne two. Three.\nE\n```json\n{\"longest\": [1, 1]}\n```"
    assert constraint_met(longest, good)
    assert not constraint_met(longest, good.replace('"longest"', '"other"'))
    with pytest.raises(KeyError):
        constraint_met(Constraint(id="x", check="no-such-check", description=""), good)
