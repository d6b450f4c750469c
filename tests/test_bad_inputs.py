"""Every bad input a user can give is one line on stderr and exit 2, never a traceback or a hang; each case runs the
real command in a fresh process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from esac_kit.loopback import LoopbackServer
from runkit import esac_run, reference_answers, run_folder_of

ROOT = Path(__file__).resolve().parent.parent


def esac(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "esac_kit", *args], capture_output=True, text=True, timeout=timeout)


def assert_one_line_exit_2(done: subprocess.CompletedProcess, *fragments: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("esac-kit"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    with LoopbackServer(reference_answers()) as server:
        assert esac_run("--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(reports),
                        "--only", "quant-tank-mixing", "logic-zebra") == 0
    return run_folder_of(reports)


def copy_of(folder: Path, tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(folder, target)
    return target


@pytest.fixture
def items(tmp_path):
    shutil.copytree(ROOT / "items", tmp_path / "items")
    return tmp_path / "items"


def test_an_item_file_that_is_not_utf8(items):
    path = items / "gi" / "quant-crew-work.toml"
    path.write_bytes(path.read_bytes().replace(b"title = \"", b"title = \"\xff\xfe", 1))
    assert_one_line_exit_2(esac("items", "--items", str(items)), "quant-crew-work.toml", "not UTF-8")


def set_generator(items: Path, reference: str) -> None:
    """Point quant-crew-work's item file at another generator."""
    path = items / "gi" / "quant-crew-work.toml"
    text = path.read_text()
    start = text.index("generator = ")
    end = text.index("\n", start)
    path.write_text(text[:start] + f'generator = "{reference}"' + text[end:])


def test_a_generator_reference_to_the_wrong_function(items):
    set_generator(items, "esac_kit.rng:derive_item_key")
    assert_one_line_exit_2(esac("show", "quant-crew-work", "--items", str(items)), "quant-crew-work.toml",
                           "field 'generator'", "failed")


def test_a_generator_reference_to_no_function(items):
    set_generator(items, "esac_kit.gi.generators.quant:no_such_generator")
    assert_one_line_exit_2(esac("items", "--items", str(items)), "quant-crew-work.toml", "no function")


def test_a_run_json_that_is_not_json(run_folder, tmp_path):
    folder = copy_of(run_folder, tmp_path)
    (folder / "run.json").write_text("{ this is not json")
    assert_one_line_exit_2(esac("report", str(folder)), "run.json")
    assert_one_line_exit_2(esac("run", "--resume", str(folder)), "run.json")


def test_a_run_json_missing_a_field(run_folder, tmp_path):
    folder = copy_of(run_folder, tmp_path)
    config = json.loads((folder / "run.json").read_text())
    del config["model"]
    (folder / "run.json").write_text(json.dumps(config))
    assert_one_line_exit_2(esac("report", str(folder)), "run.json", "model")


@pytest.mark.parametrize("option", [["--concurrency", "0"], ["--concurrency", "-1"], ["--max-attempts", "0"],
                                    ["--outage-budget-s", "0"], ["--retry-base-s", "nan"]])
def test_non_positive_numbers_are_refused_by_the_parser(option):
    assert_one_line_exit_2(esac("run", *option, timeout=30), option[0])


def test_a_reports_path_that_is_a_file(tmp_path):
    not_a_folder = tmp_path / "reports"
    not_a_folder.write_text("a file")
    with LoopbackServer(reference_answers()) as server:
        done = esac("run", "--model", f"openai:m@{server.url}", "--no-cache", "--reports", str(not_a_folder),
                    "--only", "quant-tank-mixing")
    assert_one_line_exit_2(done, str(not_a_folder), "not a folder")


def test_compare_with_the_journal_deleted(run_folder, tmp_path):
    folder = copy_of(run_folder, tmp_path)
    (folder / "observations.jsonl").unlink()
    assert_one_line_exit_2(esac("compare", str(run_folder), str(folder)), "observations.jsonl", "no journal")


def test_compare_with_a_journal_that_repeats_an_observation(run_folder, tmp_path):
    folder = copy_of(run_folder, tmp_path)
    journal = folder / "observations.jsonl"
    journal.write_text(journal.read_text() + journal.read_text().splitlines(keepends=True)[0])
    assert_one_line_exit_2(esac("compare", str(run_folder), str(folder)), "observations.jsonl", "repeats")


def test_compare_with_a_missing_report(run_folder, tmp_path):
    folder = copy_of(run_folder, tmp_path)
    (folder / "report.json").unlink()
    assert_one_line_exit_2(esac("compare", str(run_folder), str(folder)), "report.json")


def test_a_folder_that_is_no_run(tmp_path):
    assert_one_line_exit_2(esac("report", str(tmp_path)), "run.json")
    assert_one_line_exit_2(esac("run", "--resume", str(tmp_path)), "run.json")
