"""Each suite's distribution is pinned in code per major and asserted at load, before the manifest's consistency
with its item files: a consistent edit of manifest and items is still a hard failure (amendment 001 §1, §6)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from esac_kit.ag.distribution import DISTRIBUTIONS as AG_PINS
from esac_kit.gi.distribution import DISTRIBUTIONS as GI_PINS
from esac_kit.suite import load_suite
from runkit import pin_as_released

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def items_copy(tmp_path):
    shutil.copytree(ROOT / "items", tmp_path / "items")
    pin_as_released(tmp_path / "items")
    return tmp_path / "items"


def esac_items(items: Path, suite: str = "gi"):
    return subprocess.run([sys.executable, "-m", "esac_kit", "items", "--suite", suite, "--items", str(items)],
                          capture_output=True, text=True)


def _category(manifest: Path, category: str, points: int, items: int) -> None:
    """Set one category's points and item count in a manifest's text."""
    text = manifest.read_text()
    pattern = rf'(id = "{category}"\nname = "[^"]*"\npoints = )\d+(\nitems = )\d+'
    assert re.search(pattern, text), category
    manifest.write_text(re.sub(pattern, rf"\g<1>{points}\g<2>{items}", text))


def _one_line_error(result, *names: str) -> str:
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for name in names:
        assert name in lines[0], lines[0]
    return lines[0]


def test_a_consistent_move_of_points_between_categories_fails_naming_the_file_and_field(items_copy):
    manifest = items_copy / "gi" / "manifest.toml"
    _category(manifest, "writing", 9, 2)
    _category(manifest, "calibration", 6, 5)  # still 100 points and 36 items: consistent with the item files
    line = _one_line_error(esac_items(items_copy), str(manifest), "field 'categories.6.points'")
    assert "calibration has 6 points, but ESAC-GI 1.x pins 5 (amendment 001 §6" in line


def test_a_consistent_101_point_suite_with_an_extra_item_fails(items_copy):
    folder = items_copy / "gi"
    manifest = folder / "manifest.toml"
    _category(manifest, "writing", 11, 3)
    manifest.write_text(manifest.read_text().replace("total_points = 100", "total_points = 101")
                        .replace("total_items = 36", "total_items = 37"))
    extra = (folder / "writing-lay-explainer.toml").read_text().replace('id = "writing-lay-explainer"',
                                                                      'id = "writing-extra-explainer"')
    (folder / "writing-extra-explainer.toml").write_text(extra)
    _one_line_error(esac_items(items_copy), str(manifest), "field 'categories.7.points'", "pins 10")


def test_the_pin_is_checked_before_the_manifest_against_its_items(items_copy):
    manifest = items_copy / "gi" / "manifest.toml"
    _category(manifest, "writing", 9, 2)  # inconsistent too: the categories now sum to 99
    _one_line_error(esac_items(items_copy), "field 'categories.7.points'", "pins 10")


def test_a_changed_pass_fraction_still_loads(items_copy):
    manifest = items_copy / "gi" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace("pass_fraction = 0.6 ", "pass_fraction = 0.65"))
    assert load_suite("gi", items_copy).manifest.pass_fraction == 0.65
    assert esac_items(items_copy).returncode == 0


def test_a_major_without_a_pin_fails(items_copy):
    manifest = items_copy / "gi" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('version = "1.0"', 'version = "3.0"'))
    _one_line_error(esac_items(items_copy), "field 'version'", "ESAC-GI 3.x has no pinned distribution")


def test_a_consistent_bigger_ag_modifier_fails(items_copy):
    manifest = items_copy / "ag" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace("total_points = 75", "total_points = 76")
                        .replace("efficiency_points = 5", "efficiency_points = 6"))
    _one_line_error(esac_items(items_copy, "ag"), str(manifest), "field 'total_points'", "ESAC-AG 1.x pins 75")


@pytest.mark.parametrize("suite, pins", [("gi", GI_PINS["gi"]), ("ag", AG_PINS["ag"])])
def test_the_pins_are_the_spec_tables_and_2_x_keeps_them(suite, pins):
    spec = (ROOT / "specs" / f"esac-{suite}.md").read_text()
    rows = re.findall(r"^\| `([a-z]+)` \| [^|]+ \| (\d+) \| (\d+) \|", spec, re.M)  # category rows, not items
    table = {category: (int(points), int(items)) for category, points, items in rows}
    assert table == pins[1].categories
    assert pins[2] == pins[1]
    assert (pins[1].total_points, pins[1].total_items) == ((100, 36) if suite == "gi" else (75, 14))
