"""Every record a run folder holds, typed and versioned in one place, and the one atomic write that stores them."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any


def write_atomic(path: Path, data: str | bytes) -> None:
    """Replace a file in one step: a kill or a failed write leaves the old file or the new one, never half of one."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")  # unique: two writers never share one
    try:
        temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically, keys sorted and indented."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
