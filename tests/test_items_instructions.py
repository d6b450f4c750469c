"""Instruction items: references meet every constraint, broken responses lose exactly what they break, keys vary."""

import json
import re

import pytest

from esac_kit.gi.constraints import CHECKS, block, constraint_met, outline, sentences, table_rows, words
from esac_kit.gi.generators import instructions as gen
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.schemas import Constraint
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED

GENERATORS = {"instructions-acrostic-poem": gen.acrostic_poem, "instructions-sentence-ladder": gen.sentence_ladder,
              "instructions-json-record": gen.json_record, "instructions-numbered-outline": gen.outline,
              "instructions-scored-table": gen.scored_table}
SEEDS = range(30)


def make(item_id, seed):
    return GENERATORS[item_id](ItemRng(derive_item_key(f"test-{seed}", "gi", item_id, 1)))


def failed(key, response):
    detail = score_response(key, response).detail
    return detail["gate_failed"], sorted(c for c, ok in detail["met"].items() if not ok)


@pytest.mark.parametrize("item_id", GENERATORS)
def test_reference_scores_one_and_empty_and_garbled_score_zero(item_id):
    for seed in SEEDS:
        out = make(item_id, seed)
        assert score_response(out.key, out.reference).score == 1.0, (seed, failed(out.key, out.reference))
        assert score_response(out.key, "").score == 0.0
        assert score_response(out.key, GARBLED).score == 0.0
        assert 4 <= len(out.key.constraints) <= 7 and out.key.gate
        assert len(out.prompt) <= 16_000


@pytest.mark.parametrize("item_id", GENERATORS)
def test_same_seed_same_instance_and_keys_vary(item_id):
    assert make(item_id, 3) == make(item_id, 3)
    keys = [make(item_id, seed).key.model_dump_json() for seed in range(60)]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("item_id", GENERATORS)
def test_breaking_the_structure_scores_zero(item_id):
    for seed in range(10):
        out = make(item_id, seed)
        broken = (out.reference.replace("```json", "```") if "```json" in out.reference
                  else out.reference.replace("|---", "|", 1) if out.reference.startswith("|")
                  else out.reference.rsplit("\n", 1)[0])  # drop the END marker
        assert score_response(out.key, broken).score == 0.0


def test_poem_one_extra_word_breaks_the_counts_and_keeps_the_rest():
    for seed in range(10):
        out = make("instructions-acrostic-poem", seed)
        lines = out.reference.splitlines()
        lines[1] = lines[1].replace(" ", " zzz ", 1)  # one more word on line 1, no banned letter added
        gate, bad = failed(out.key, "\n".join(lines))
        banned = next(c.params["letters"] for c in out.key.constraints if c.id == "lipogram")
        assert not gate and "counts" in bad and "acrostic" not in bad and "chain" not in bad
        assert ("lipogram" in bad) == (banned == "z")


def test_poem_a_plausible_wrong_poem_scores_low():
    out = make("instructions-acrostic-poem", 0)
    n = next(c.params["lines"] for c in out.key.gate)
    poem = "\n".join("the quick brown fox jumps over the lazy dog" for _ in range(n))
    assert score_response(out.key, f"BEGIN POEM\n{poem}\nEND POEM").score <= 2 / 7


def test_ladder_sentence_counts_and_keyword_slots_are_checked():
    out = make("instructions-sentence-ladder", 1)
    text = block(out.reference, "BEGIN TEXT", "END TEXT")[0]
    first_end = re.search(r"[.?!]", text).start()
    merged = text[:first_end] + "," + text[first_end + 1:]  # two sentences become one
    gate, bad = failed(out.key, f"BEGIN TEXT\n{merged}\nEND TEXT")
    assert not gate and {"lengths", "marks"} <= set(bad)


def test_json_values_must_agree():
    out = make("instructions-json-record", 2)
    body = re.search(r"```json\n(.*?)```", out.reference, re.S).group(1)
    data = json.loads(body)
    total_key = next(c.params["key"] for c in out.key.constraints if c.id == "total")
    data[total_key] += 1
    gate, bad = failed(out.key, "```json\n" + json.dumps(data) + "\n```")
    assert not gate and bad == ["total"]
    reordered = dict(reversed(list(json.loads(body).items())))
    assert failed(out.key, "```json\n" + json.dumps(reordered) + "\n```")[1] == ["keys"]


def test_outline_formula_and_endings_are_checked():
    out = make("instructions-numbered-outline", 4)
    lines = out.reference.splitlines()
    item = next(i for i, line in enumerate(lines) if re.match(r"^1\.1 ", line))
    lines[item] = lines[item][:-1] + "?"  # 1.1 is never the last item of its section: the end mark is wrong
    assert failed(out.key, "\n".join(lines))[1] == ["endings"]


def test_table_code_and_total_are_checked():
    out = make("instructions-scored-table", 5)
    lines = out.reference.splitlines()
    code = next(c.params["code"] for c in out.key.constraints if c.id == "codes")
    columns = next(c.params["columns"] for c in out.key.gate)
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    cells[columns.index(code)] = "XX-1"
    lines[2] = "| " + " | ".join(cells) + " |"
    assert failed(out.key, "\n".join(lines))[1] == ["codes"]


# ---------------------------------------------------------------- the counting rules themselves


def test_words_are_runs_of_ascii_letters():
    assert words("don't stop 3.5 well-known Zürich") == ["don", "t", "stop", "well", "known", "Z", "rich"]


def test_block_takes_the_last_block_and_needs_its_end_marker():
    text = "BEGIN\nold\nEND\n\nBEGIN\n  new  \n\nline\nEND\nBEGIN\nunclosed"
    assert block(text, "BEGIN", "END") is None
    assert block(text.rsplit("\nBEGIN", 1)[0], "BEGIN", "END") == ["new", "line"]


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


def test_table_rows_need_the_exact_header_and_separator():
    table = "| A | B |\n|---|:---:|\n| 1 | x |\n| 2 | y |\ntext"
    assert table_rows(table, ["A", "B"]) == [{"A": "1", "B": "x"}, {"A": "2", "B": "y"}]
    assert table_rows(table, ["A", "C"]) is None
    assert table_rows(table.replace("|---|:---:|", "| - | - |"), ["A", "B"]) is None


def test_json_repeated_keys_fail_and_a_keyerror_inside_a_check_is_a_failed_check():
    ranks = Constraint(id="r", check="json_ranks", params={"key": "r", "list_key": "w"}, description="")
    good = '```json\n{"w": ["bee", "ant"], "r": {"ant": 1, "bee": 2}}\n```'
    assert constraint_met(ranks, good)
    assert not constraint_met(ranks, good.replace('"ant": 1', '"bee": 2, "ant": 1'))
    assert not constraint_met(ranks, good.replace('"r":', '"q":'))  # the missing key raises KeyError inside
    with pytest.raises(KeyError):
        constraint_met(Constraint(id="x", check="no-such-check", description=""), good)


def test_every_check_a_key_uses_is_registered():
    for item_id in GENERATORS:
        out = make(item_id, 0)
        assert all(c.check in CHECKS for c in out.key.gate + out.key.constraints)
