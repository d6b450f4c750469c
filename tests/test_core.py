"""Seeded randomness, normalisers, pools and the pass rule."""

import subprocess
import sys
from fractions import Fraction

import pytest

from esac_kit.errors import ConfigError
from esac_kit.gi.normalise import answers_match, final_answer, is_abstention, labelled_answers, parse_number
from esac_kit.pools import commitment_matches, heldout_commitment, heldout_pool
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.schemas import Criterion, Rubric
from esac_kit.gi.scoring import score_verdict
from esac_kit.scoring import category_points


def test_item_stream_is_fixed_by_its_definition_not_by_the_interpreter():
    rng = ItemRng(derive_item_key("seed", "gi", "quant-x", 1))
    draws = [rng.randint(0, 10**6) for _ in range(3)]
    code = ("from esac_kit.rng import ItemRng, derive_item_key;"
            "r = ItemRng(derive_item_key('seed', 'gi', 'quant-x', 1));"
            "print([r.randint(0, 10**6) for _ in range(3)])")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": "7", "PATH": ""}, check=True)
    assert other.stdout.strip() == str(draws)


def test_item_streams_differ_by_item_version_and_seed():
    keys = {derive_item_key("s", "gi", "a", 1), derive_item_key("s", "gi", "b", 1),
            derive_item_key("s", "gi", "a", 2), derive_item_key("t", "gi", "a", 1)}
    assert len(keys) == 4


def test_rng_draws_are_uniform_enough_and_in_range():
    rng = ItemRng(b"k" * 32)
    counts = [0] * 6
    for _ in range(6000):
        counts[rng.randint(1, 6) - 1] += 1
    assert all(850 < c < 1150 for c in counts)
    assert sorted(rng.sample(range(10), 10)) == list(range(10))


@pytest.mark.parametrize("given, expected, kind", [
    ("3/4", "0.75", "number"), (".75", "3/4", "number"), ("1,234", "1234", "number"), ("$12", "12", "number"),
    ("**42**", "42", "number"), ("b; A", "a, b", "set"), ("Ann, Bo, Cy", "ann,bo,cy", "list"),
    ("  The  Red House. ", "the red house", "text"), ("2/4, 1", "1,0.5", "set"),
])
def test_normalisers_accept_equivalent_forms(given, expected, kind):
    assert answers_match(given, expected, kind)


@pytest.mark.parametrize("given, expected, kind", [
    ("75%", "0.75", "number"), ("Bo, Ann, Cy", "Ann, Bo, Cy", "list"), ("a, b, c", "a, b", "set"),
    ("", "0", "number"), (None, "1", "number"), ("1/0", "0", "number"), ("12 apples", "12", "number"),
])
def test_normalisers_reject_different_answers(given, expected, kind):
    assert not answers_match(given, expected, kind)


def test_final_answer_takes_the_last_answer_line():
    response = "ANSWER: 3\nthinking again...\n> **Answer:** `17/3`."
    assert final_answer(response) == "17/3"
    assert final_answer("no final line here") is None
    assert parse_number("-0.5") == Fraction(-1, 2)


def test_abstentions_and_labelled_answers():
    assert is_abstention("UNKNOWN") and is_abstention("Cannot be determined.")
    assert not is_abstention("12") and not is_abstention(None)
    assert labelled_answers("A: 1\nB: 2\nA: 3") == {"A": "3", "B": "2"}


def test_heldout_seed_comes_from_env_and_only_its_commitment_is_shown(monkeypatch):
    seed = "a-private-seed-of-some-length"
    monkeypatch.setenv("ESAC_HELDOUT_SEED", seed)
    pool = heldout_pool()
    assert seed not in repr(pool) and seed not in pool.label
    assert commitment_matches(seed, pool.commitment)
    assert not commitment_matches(seed + "x", pool.commitment)
    assert heldout_commitment(seed) != heldout_commitment(seed)  # salted


def test_heldout_seed_missing_or_short_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.delenv("ESAC_HELDOUT_SEED", raising=False)
    with pytest.raises(ConfigError, match="ESAC_HELDOUT_SEED"):
        heldout_pool()
    short = tmp_path / "seed"
    short.write_text("tiny")
    with pytest.raises(ConfigError, match="too short") as error:
        heldout_pool(short)
    assert "tiny" not in str(error.value)


def _rubric():
    levels = ["0", "1", "2", "3"]
    return Rubric(criteria=[Criterion(id="answered", description="d", weight=2, levels=levels, gate=True),
                            Criterion(id="depth", description="d", weight=1, levels=levels),
                            Criterion(id="clarity", description="d", weight=1, levels=levels)])


def test_verdict_score_is_weighted_and_gated():
    rubric = _rubric()
    assert score_verdict(rubric, {"answered": 3, "depth": 3, "clarity": 3}) == 1.0
    assert score_verdict(rubric, {"answered": 3, "depth": 0, "clarity": 0}) == 0.5
    assert score_verdict(rubric, {"answered": 0, "depth": 3, "clarity": 3}) == 0.0


def test_rubric_gate_needs_half_the_weight():
    levels = ["0", "1"]
    with pytest.raises(ValueError, match="half"):
        Rubric(criteria=[Criterion(id="a", description="d", weight=1, levels=levels, gate=True),
                         Criterion(id="b", description="d", weight=2, levels=levels)])


def test_boundary_item_half_weight_is_normalised_to_the_category_points():
    full = category_points(5, [(1, 1), (1, 1), (1, 1), (1, 1), (1, 0.5)])
    assert full == pytest.approx(5)
    only_boundary_wrong = category_points(5, [(1, 1), (1, 1), (1, 1), (1, 1), (0, 0.5)])
    one_main_wrong = category_points(5, [(0, 1), (1, 1), (1, 1), (1, 1), (1, 0.5)])
    assert only_boundary_wrong == pytest.approx(5 * 4 / 4.5) and one_main_wrong < only_boundary_wrong
