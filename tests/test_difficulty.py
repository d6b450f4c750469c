"""Declared difficulty: drivers reach the generator, every instance's measure lies in the band, redraws are seeded,
`esac-kit show --answer` prints the measure, and fingerprints catch a change of band."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from esac_kit.fingerprints import compute
from esac_kit.instances import generate
from esac_kit.pools import custom_pool
from esac_kit.suite import load_suite
from test_bad_inputs import assert_one_line_exit_2

ROOT = Path(__file__).resolve().parent.parent


def esac(*args: str) -> subprocess.CompletedProcess:
    """The command in a fresh process that can import the toy generator beside this file."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    return subprocess.run([sys.executable, "-m", "esac_kit", *args], capture_output=True, text=True, timeout=120,
                          env=env)

TOY = '''
[difficulty]
drivers = {{ width = {width}, spread = 100 }}
measure = "nodes"
band = [{low}, {high}]
note = "The toy's band: a test of the redraw loop, not a real item."
'''


def toy_items(tmp_path: Path, width: int = 7, low: int = 90, high: int = 99) -> Path:
    """A copy of the items whose quant-crew-work runs the toy generator with a declared band."""
    items = tmp_path / "items"
    if not items.exists():
        shutil.copytree(ROOT / "items", items)
    path = items / "gi" / "quant-crew-work.toml"
    text = path.read_text()
    if "[difficulty]" in text:
        text = text[:text.index("\n[difficulty]")]
    start = text.index("generator = ")
    text = text[:start] + 'generator = "difficulty_toy:counted"' + text[text.index("\n", start):]
    path.write_text(text + TOY.format(width=width, low=low, high=high))
    return items


def instances_of(items: Path, seeds: int = 30):
    suite = load_suite("gi", items)
    item = suite.item("quant-crew-work")
    return [generate(suite, item, custom_pool(f"band-{n}")) for n in range(seeds)]


def test_every_instance_lies_in_the_declared_band_and_the_drivers_reach_the_generator(tmp_path):
    instances = instances_of(toy_items(tmp_path, width=7, low=90, high=99))
    assert all(90 <= i.difficulty["nodes"] <= 99 for i in instances)
    assert all(i.prompt.count(",") == 6 for i in instances)  # width 7 from the item file
    assert max(i.difficulty["draws"] for i in instances) > 1  # a 10 % band needs redraws
    again = instances_of(toy_items(tmp_path, width=7, low=90, high=99))
    assert [i.prompt for i in again] == [i.prompt for i in instances]  # redraws are a pure function of the seed


def test_a_band_no_draw_can_reach_is_a_one_line_error_naming_the_item(tmp_path):
    items = toy_items(tmp_path, low=500, high=600)
    assert_one_line_exit_2(esac("show", "quant-crew-work", "--items", str(items)), "quant-crew-work.toml",
                           "no draw in 200", "band [500, 600]")


def test_show_answer_prints_the_measured_difficulty(tmp_path):
    items = toy_items(tmp_path)
    shown = esac("show", "quant-crew-work", "--items", str(items), "--answer")
    assert shown.returncode == 0, shown.stderr
    assert "# measured difficulty" in shown.stdout and "nodes 9" in shown.stdout
    assert "measured difficulty" not in esac("show", "quant-crew-work", "--items", str(items)).stdout


def test_changing_a_band_changes_the_content_fingerprint(tmp_path):
    before = compute(load_suite("gi", toy_items(tmp_path, low=90, high=99)))
    after = compute(load_suite("gi", toy_items(tmp_path, low=80, high=99)))
    assert before.content != after.content


@pytest.mark.parametrize("band", ["[5, 1]", "[1]"])
def test_a_malformed_band_is_refused_at_load(tmp_path, band):
    items = toy_items(tmp_path)
    path = items / "gi" / "quant-crew-work.toml"
    path.write_text(path.read_text().replace("band = [90, 99]", f"band = {band}"))
    assert_one_line_exit_2(esac("items", "--items", str(items)), "quant-crew-work.toml", "band")


def test_a_parametrized_gi_item_without_a_difficulty_table_is_refused(tmp_path):
    items = toy_items(tmp_path)
    path = items / "gi" / "quant-crew-work.toml"
    path.write_text(path.read_text()[:path.read_text().index("\n[difficulty]")] + "\n")
    assert_one_line_exit_2(esac("items", "--items", str(items)), "quant-crew-work.toml", "declares its difficulty")


def test_every_parametrized_gi_item_declares_drivers_a_measure_and_a_band():
    suite = load_suite("gi")
    parametrized = [i for i in suite.items if i.parametrized]
    assert len(parametrized) == 29 and all(i.difficulty and i.difficulty.drivers for i in parametrized)
