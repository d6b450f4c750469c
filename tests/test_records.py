"""The run folder's records: the one atomic write, the one journal reader, legacy run folders (written before
records were versioned) migrating, resuming and re-rendering with the scores they had."""

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from runkit import pin_as_released

from esac_kit.cli import main
from esac_kit.compare import load_report
from esac_kit.errors import ConfigError
from esac_kit.journal import CONFIG_FILE, JOURNAL_FILE, read_journal
from esac_kit.records import (FORMAT_VERSION, LEGACY_FORMAT, REPORT_SCHEMA_VERSION, EpisodeDetail, Observation,
                              PoolRecord, Report, RunConfig, read_record, write_atomic)
from esac_kit.runs import load_config

# Run folders written before records were versioned (run.json with pool + pool_label, journal lines without
# format_version, report.json schema 1): a `--seed 'seed-(v2)' --only quant-tank-mixing writing-lay-explainer` GI
# run against a loopback server, and a `--suite ag --model scripted:wasteful --only recovery-stock-reconcile` run.
FIXTURES = Path(__file__).resolve().parent / "fixtures"
LEGACY_GI, LEGACY_AG = FIXTURES / "legacy-gi-run", FIXTURES / "legacy-ag-run"


def test_an_atomic_write_whose_replace_fails_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("old")
    write_atomic(target, "new")
    assert target.read_text() == "new"

    def failing_replace(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        write_atomic(target, b"half")
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["report.json"]


# ---------------------------------------------------------------- the one journal reader


def _journal(tmp_path: Path, tail: bytes = b"") -> Path:
    """A copy of the legacy GI fixture's journal (5 observations) with `tail` appended."""
    path = tmp_path / JOURNAL_FILE
    path.write_bytes((LEGACY_GI / JOURNAL_FILE).read_bytes() + tail)
    return path


def test_the_owner_truncates_a_torn_last_line(tmp_path):
    path = _journal(tmp_path, b'{"run_id": "torn mid-wri')
    assert len(read_journal(path, owner=True)) == 5
    assert path.read_bytes() == (LEGACY_GI / JOURNAL_FILE).read_bytes()


def test_a_reader_skips_a_torn_last_line_and_leaves_the_file_alone(tmp_path):
    path = _journal(tmp_path, b'{"run_id": "torn mid-wri')
    before = path.read_bytes()
    assert len(read_journal(path, owner=False)) == 5
    assert path.read_bytes() == before
    assert read_journal(tmp_path / "absent.jsonl", owner=False) == []


@pytest.mark.parametrize("owner", [True, False])
def test_a_corrupt_line_before_the_last_is_one_line_naming_the_file_and_line(tmp_path, owner):
    lines = (LEGACY_GI / JOURNAL_FILE).read_bytes().splitlines(keepends=True)
    path = tmp_path / JOURNAL_FILE
    path.write_bytes(b"".join([lines[0], lines[1][:40] + b"\n", *lines[2:]]))
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: corrupt journal line 2: ") as error:
        read_journal(path, owner=owner)
    assert "\n" not in str(error.value) and path.read_bytes() == before


# ---------------------------------------------------------------- legacy records


LEGACY_CONFIG = {"run_id": "r", "suite": "gi", "version": "1.0", "pack": None, "model": "m", "judge": None,
                 "judge_temperature": 0.0, "judge_max_tokens": 1024, "temperature": 1.0, "concurrency": 4,
                 "max_tokens_cap": None, "notes": [], "kit_version": "0.1.0", "created_at": "t"}


@pytest.mark.parametrize("pool, label, record", [
    ("custom", "custom (seed seed-(v2))", {"name": "custom", "seed": "seed-(v2)", "commitment": None}),
    ("custom", "custom (seed a (b) c))", {"name": "custom", "seed": "a (b) c)", "commitment": None}),
    ("public", "public (seed esac-gi-public-2026-09-22)",
     {"name": "public", "seed": "esac-gi-public-2026-09-22", "commitment": None}),
    ("heldout", "heldout (commitment sha256:00ff:abcd)", {"name": "heldout", "seed": None,
                                                          "commitment": "sha256:00ff:abcd"})])
def test_a_legacy_run_json_is_migrated_on_read_and_saved_without_a_label(pool, label, record):
    legacy = json.dumps(LEGACY_CONFIG | {"pool": pool, "pool_label": label})
    config = read_record(RunConfig, legacy)
    assert config.pool.model_dump() == record and config.pool.label == label
    saved = config.model_dump(mode="json")
    assert saved["format_version"] == FORMAT_VERSION and "pool_label" not in saved and saved["pool"] == record
    assert read_record(RunConfig, json.dumps(saved)) == config


def test_a_newer_format_and_a_heldout_seed_are_refused(tmp_path):
    current = LEGACY_CONFIG | {"format_version": FORMAT_VERSION, "pool": {"name": "public", "seed": "s"}}
    (tmp_path / CONFIG_FILE).write_text(json.dumps(current | {"format_version": FORMAT_VERSION + 1}))
    with pytest.raises(ConfigError, match=r"run\.json: format_version: .*newer than this kit reads"):
        load_config(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(json.dumps(current | {"pool": {"name": "heldout", "seed": "secret",
                                                                       "commitment": "sha256:00:00"}}))
    with pytest.raises(ConfigError, match="never by its seed"):
        load_config(tmp_path)
    assert PoolRecord(name="custom", seed="seed-(v2)").label == "custom (seed seed-(v2))"


def test_legacy_observations_read_as_format_1_and_new_ones_as_the_current_format():
    legacy = read_journal(LEGACY_AG / JOURNAL_FILE, owner=False)
    assert [o.format_version for o in legacy] == [LEGACY_FORMAT]
    detail = EpisodeDetail.model_validate(legacy[0].score_detail)
    assert detail.end == "submit" and detail.counts.redundant == 2 and detail.steps[0].status == "ok"
    assert Observation.model_validate(legacy[0].model_dump() | {"format_version": FORMAT_VERSION}).format_version == 2
    broken = legacy[0].model_dump() | {"score_detail": {**legacy[0].score_detail, "counts": {}}}
    with pytest.raises(ValueError, match="counts"):
        Observation.model_validate(broken)  # an AG episode's detail is typed, not any dict


@pytest.mark.parametrize("fixture", [LEGACY_GI, LEGACY_AG], ids=["gi", "ag"])
def test_a_legacy_run_folder_rerenders_with_the_scores_it_had(fixture, tmp_path, capsys):
    folder = tmp_path / fixture.name
    shutil.copytree(fixture, folder)
    items = tmp_path / "items"  # the fixtures are 1.0 runs: rendered by the bank at 1.0, whatever the repo holds now
    shutil.copytree(Path(__file__).resolve().parent.parent / "items", items)
    pin_as_released(items, "1.0")
    before = Report.model_validate_json((fixture / "report.json").read_text())  # schema 1, read by this kit
    assert before.schema_version == REPORT_SCHEMA_VERSION and before.pool.name in ("custom", "public")
    assert main(["report", str(folder), "--items", str(items)]) == 0
    after = load_report(folder)
    assert after.scores() == before.scores() and after.pool == before.pool
    assert (folder / CONFIG_FILE).read_bytes() == (fixture / CONFIG_FILE).read_bytes()  # rendering rewrites nothing
    if fixture is LEGACY_GI:
        assert after.pool == PoolRecord(name="custom", seed="seed-(v2)")
        assert after.total == pytest.approx(22.791666667) and [i.item_id for i in after.items] == [
            "quant-tank-mixing", "writing-lay-explainer"]
    else:
        assert after.modifier == pytest.approx(3.6) and after.efficiency[0].redundant == 2
    raw = json.loads((folder / "report.json").read_text())
    assert raw["schema_version"] == REPORT_SCHEMA_VERSION and raw["pool"] == after.pool.model_dump()
