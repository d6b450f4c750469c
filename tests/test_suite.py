"""Loading ESAC-GI: the totals asserted at load, one-line errors that name the file, and the pass rule."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from esac_kit.scoring import aggregate
from esac_kit.suite import load_suite

ITEMS = Path(__file__).resolve().parent.parent / "items"


def esac(*args, env=None):
    return subprocess.run([sys.executable, "-m", "esac_kit.cli", *args], capture_output=True, text=True, env=env)


@pytest.fixture
def items_copy(tmp_path):
    shutil.copytree(ITEMS, tmp_path / "items")
    return tmp_path / "items"


def test_gi_loads_with_its_asserted_figures():
    suite = load_suite("gi")
    m = suite.manifest
    assert (len(m.categories), m.total_points, len(suite.items)) == (8, 100, 36)
    assert sum(1 for i in suite.items if i.parametrized) == 29
    assert {c.id: (c.points, c.items) for c in m.categories} == {
        "quant": (15, 5), "logic": (15, 5), "code": (15, 5), "instructions": (10, 5), "context": (15, 5),
        "honesty": (15, 4), "calibration": (5, 5), "writing": (10, 2)}
    boundary = [i for i in suite.items if i.category == "calibration" and i.weight == 0.5]
    assert len(boundary) == 1 and boundary[0].expected_depth == "either"


def test_esac_items_prints_the_totals():
    result = esac("items")
    assert result.returncode == 0, result.stderr
    assert "8 categories, 100 points, 36 items" in result.stdout


def _one_line_error(result, must_name: str):
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert must_name in lines[0]
    return lines[0]


def test_a_changed_manifest_total_fails_naming_the_manifest(items_copy):
    manifest = items_copy / "gi" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace("total_points = 100", "total_points = 101"))
    line = _one_line_error(esac("items", "--items", str(items_copy)), "manifest.toml")
    assert "total_points" in line


def test_a_changed_category_count_fails_naming_the_manifest(items_copy):
    manifest = items_copy / "gi" / "manifest.toml"
    text = manifest.read_text().replace('id = "honesty"\nname = "Epistemic honesty"\npoints = 15\nitems = 4',
                                        'id = "honesty"\nname = "Epistemic honesty"\npoints = 15\nitems = 5')
    manifest.write_text(text.replace("total_items = 36", "total_items = 37"))
    line = _one_line_error(esac("items", "--items", str(items_copy)), "manifest.toml")
    assert "total_items" in line or "honesty" in line


@pytest.mark.parametrize("breakage, field", [
    (lambda text: text + "\nthis is = = not toml\n", "invalid TOML"),
    (lambda text: text.replace("difficulty_lever", "difficulty_levers"), "difficulty_lever"),
    (lambda text: text.replace('scoring = "', 'scoring = "bogus-'), "scoring"),
])
def test_a_broken_item_file_fails_naming_the_file_and_field(items_copy, breakage, field):
    victim = sorted((items_copy / "gi").glob("quant-*.toml"))[0]
    victim.write_text(breakage(victim.read_text()))
    line = _one_line_error(esac("items", "--items", str(items_copy)), victim.name)
    assert field in line


def test_a_generator_that_does_not_import_fails_naming_the_file(items_copy):
    victim = sorted((items_copy / "gi").glob("logic-*.toml"))[0]
    text = victim.read_text()
    start = text.index("generator = ")
    end = text.index("\n", start)
    victim.write_text(text[:start] + 'generator = "esac_kit.gi.generators.logic:no_such_function"' + text[end:])
    assert "generator" in _one_line_error(esac("items", "--items", str(items_copy)), victim.name)


def test_pass_rule_needs_every_category_and_the_total():
    suite = load_suite("gi")
    weights = {i.id: i.weight for i in suite.items}
    categories = {i.id: i.category for i in suite.items}
    all_right = aggregate(suite.manifest, {i: 1.0 for i in weights}, weights, categories)
    assert all_right.passed and all_right.total == pytest.approx(100)
    # A strong average does not rescue a weak category (amendment 001 §10).
    weak_writing = {i: (0.5 if categories[i] == "writing" else 1.0) for i in weights}
    result = aggregate(suite.manifest, weak_writing, weights, categories)
    assert result.total == pytest.approx(95) and not result.passed
    assert result.reasons == ["writing 5.00/10 is below 60%"]
    # Exactly 60 % of a category passes it.
    borderline = {i: (0.6 if categories[i] == "writing" else 1.0) for i in weights}
    assert aggregate(suite.manifest, borderline, weights, categories).passed
    # Every category at 59 %: all fail and so does the total.
    low = aggregate(suite.manifest, {i: 0.59 for i in weights}, weights, categories)
    assert not low.passed and len(low.reasons) == 9


def test_show_prints_the_prompt_and_with_answer_the_key():
    item = sorted(p.stem for p in (ITEMS / "gi").glob("quant-*.toml"))[0]
    plain = esac("show", item)
    assert plain.returncode == 0, plain.stderr
    assert '"kind"' not in plain.stdout
    answered = esac("show", item, "--answer")
    assert '"kind": "exact"' in answered.stdout and answered.stdout.startswith(plain.stdout.rstrip("\n"))


def test_unknown_item_is_a_config_error():
    _one_line_error(esac("show", "quant-does-not-exist"), "quant-does-not-exist")
