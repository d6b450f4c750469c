"""Authored, judge-graded items (calibration and writing): their shape, their anchors and their held-out pack."""

import re
import tomllib
from pathlib import Path

import pytest

from esac_kit.gi.constraints import words
from esac_kit.schemas import ItemSpec
from esac_kit.suite import read_item

ROOT = Path(__file__).resolve().parent.parent
ITEMS = ROOT / "items" / "gi"
PUBLIC = sorted(ITEMS.glob("calibration-*.toml")) + sorted(ITEMS.glob("writing-*.toml"))
PACK = ROOT / "tests" / "pack" / "gi"
KINDS = {"ideal", "padded", "terse", "off_topic", "empty", "injection"}
ORDER = re.compile(r"^(ideal|padded|terse|off_topic|empty|injection) (>|>=|=) (ideal|padded|terse|off_topic|empty|"
                   r"injection|0)$")
# A calibration prompt must carry its depth cue in the situation, never as an instruction (amendment 001 §2).
DEPTH_INSTRUCTIONS = re.compile(r"\b(briefly|be brief|keep it short|short answer|concise|in detail|detailed|"
                                r"explain fully|thorough|one line|one word|step by step|elaborate)\b", re.I)


@pytest.fixture(scope="module")
def public():
    return {path.stem: read_item(path) for path in PUBLIC}


@pytest.fixture(scope="module")
def pack():
    return {path.stem: read_item(path) for path in sorted(PACK.glob("*.toml"))}


def all_items(public, pack):
    return [*public.values(), *pack.values()]


def test_the_files_are_valid_item_specs_exactly_as_written():
    for path in [*PUBLIC, *sorted(PACK.glob("*.toml"))]:
        ItemSpec.model_validate(tomllib.loads(path.read_text()))


def test_calibration_has_two_deep_two_concise_and_one_half_weight_boundary_item(public):
    calibration = [i for i in public.values() if i.category == "calibration"]
    depths = sorted(i.expected_depth for i in calibration)
    assert depths == ["concise", "concise", "deep", "deep", "either"]
    for item in calibration:
        assert item.weight == (0.5 if item.expected_depth == "either" else 1.0), item.id


def test_writing_has_two_distinct_tasks(public):
    writing = [i for i in public.values() if i.category == "writing"]
    assert len(writing) == 2
    checks = [{c.verified_in_code for c in i.rubric.criteria if c.verified_in_code} for i in writing]
    assert checks[0] != checks[1], "the two writing tasks should not make the same demands"
    for found in checks:
        assert {"word_range", "required_facts"} <= found


def test_every_item_is_judge_graded_with_a_dominant_gate(public, pack):
    for item in all_items(public, pack):
        assert item.scoring == "judge" and item.generator is None
        gates = [c for c in item.rubric.criteria if c.gate]
        assert len(gates) == 1 and gates[0].id == "answered"
        assert gates[0].weight * 2 >= sum(c.weight for c in item.rubric.criteria)
        assert all(len(c.levels) == 4 for c in item.rubric.criteria), "levels 0..3"
        assert "grader" in gates[0].description, "manipulating the grader must zero the gate"
        assert len(item.difficulty_lever.split(".")) <= 3, "the lever is one sentence"


def test_every_variant_has_one_anchor_of_each_kind(public, pack):
    for item in all_items(public, pack):
        for variant in item.variants:
            kinds = [a.kind for a in variant.anchors]
            assert sorted(kinds) == sorted(KINDS), (item.id, variant.id)
            anchors = {a.kind: a.response for a in variant.anchors}
            assert anchors["empty"] == ""
            assert all(anchors[k].strip() for k in KINDS - {"empty"})
            assert re.search(r"grader|grading|evaluat|judge", anchors["injection"], re.I)
            assert len(anchors["padded"]) > len(anchors["ideal"]) > len(anchors["terse"])


def test_required_orders_are_well_formed_and_fit_the_expected_depth(public, pack):
    for item in all_items(public, pack):
        assert item.required_order and all(ORDER.match(rule) for rule in item.required_order), item.id
        assert {"off_topic = 0", "empty = 0", "injection = 0"} <= set(item.required_order)
        expected = {"deep": "padded > terse", "concise": "terse > padded", "either": "terse > padded",
                    None: "ideal > padded"}[item.expected_depth]
        assert expected in item.required_order, item.id
        if item.expected_depth == "either":  # either depth is right (amendment 001 §2): no order of ideal and terse
            assert not [rule for rule in item.required_order if {"ideal", "terse"} <= set(re.findall(r"\w+", rule))]


def test_calibration_prompts_cue_depth_by_situation_not_instruction(public, pack):
    for item in all_items(public, pack):
        if item.category == "calibration":
            for variant in item.variants:
                assert not DEPTH_INSTRUCTIONS.search(variant.prompt), (item.id, variant.id)
                assert not variant.facts, "facts are the required facts of writing tasks"


def test_deep_and_concise_items_contrast_prompt_length_with_need(public, pack):
    # A short prompt that needs a substantial answer, and a long prompt that needs a short one (amendment 001 §2).
    for item in all_items(public, pack):
        for variant in item.variants if item.category == "calibration" else []:
            ideal = next(a.response for a in variant.anchors if a.kind == "ideal")
            if item.expected_depth == "deep":
                assert len(ideal) > 4 * len(variant.prompt), variant.id
            if item.expected_depth == "concise":
                assert len(variant.prompt) > 2 * len(ideal), variant.id


def test_every_public_item_has_a_pack_stand_in_with_the_same_rubric_and_a_new_prompt(public, pack):
    assert set(pack) == set(public)
    for item_id, item in public.items():
        held_out = pack[item_id]
        assert held_out.id == item_id and held_out.category == item.category
        assert held_out.rubric == item.rubric, "the rubric is scoring protocol: the same for every variant"
        assert (held_out.expected_depth, held_out.weight, held_out.required_order) == \
               (item.expected_depth, item.weight, item.required_order)
        public_prompts = {v.prompt for v in item.variants}
        assert all(v.prompt not in public_prompts for v in held_out.variants)
        assert not {v.id for v in held_out.variants} & {v.id for v in item.variants}


def word_range(item):
    criterion = next(c for c in item.rubric.criteria if c.verified_in_code == "word_range")
    low, high = map(int, re.search(r"between (\d+) and (\d+) words", criterion.description).groups())
    return low, high


def banned(item):
    criterion = next((c for c in item.rubric.criteria if c.verified_in_code == "forbidden_phrases"), None)
    return re.findall(r'"([^"]+)"', criterion.description) if criterion else []


def headings(variant):
    found = re.search(r"headings, in this order, each on its own line: (.+?)\. ", variant.prompt)
    return found[1].split(" / ") if found else []


def test_writing_constraints_are_stated_in_the_prompt(public, pack):
    for item in all_items(public, pack):
        if item.category != "writing":
            continue
        low, high = word_range(item)
        for variant in item.variants:
            assert variant.facts and all(fact in variant.prompt for fact in variant.facts)
            assert f"{low}" in variant.prompt and f"{high} words" in variant.prompt
            assert all(phrase in variant.prompt for phrase in banned(item))


@pytest.mark.parametrize("count", [lambda text: len(text.split()), lambda text: len(words(text))])
def test_writing_anchors_meet_or_break_the_code_checked_constraints_as_intended(public, pack, count):
    for item in all_items(public, pack):
        if item.category != "writing":
            continue
        low, high = word_range(item)
        for variant in item.variants:
            anchors = {a.kind: a.response for a in variant.anchors}
            ideal = anchors["ideal"]
            assert low + 10 <= count(ideal) <= high - 10, (variant.id, count(ideal))
            assert all(fact in ideal for fact in variant.facts)
            assert not any(p.lower() in ideal.lower() for p in banned(item))
            lines = [line.strip(" #*") for line in ideal.splitlines()]
            assert [line for line in lines if line in headings(variant)] == headings(variant)
            assert count(anchors["padded"]) > high, "padded: right content, needless length"
            assert all(fact in anchors["padded"] for fact in variant.facts)
            assert count(anchors["terse"]) < low and not all(f in anchors["terse"] for f in variant.facts)
