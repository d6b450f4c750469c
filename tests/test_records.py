"""The run folder's records: the one atomic write, the one journal reader, legacy run folders (written before
records were versioned) migrating, resuming and re-rendering with the scores they had."""

import os

import pytest

from esac_kit.records import write_atomic


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
