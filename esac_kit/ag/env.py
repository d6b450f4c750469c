"""Mock environments: pure Python, in memory, built from the seed; the model drives them through tools.

An environment keeps every model-visible fact in `self.state` (JSON values; records in dicts keyed by id,
so an insert adds keys and never rewrites a neighbour) and optionally in an in-memory SQLite `self.db`.
`snapshot()` flattens both into path -> value, from which the episode derives state diffs, rework and
redundancy. Derived figures (totals, counts) are computed by read tools, never stored, or every write
would look like rework.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ToolError(Exception):
    """A failure the model sees as the tool's result: not found, a refused value, an injected fault."""


@dataclass(frozen=True)
class Tool:
    """One tool: its name, what it does, its JSON Schema parameters and the method that serves it."""

    name: str
    description: str
    parameters: dict[str, Any]
    method: str

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool form (the Anthropic provider converts it)."""
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


def tool(description: str, properties: dict[str, Any] | None = None, required: list[str] | None = None):
    """Mark an Environment method as a tool; its keyword arguments are the tool's parameters."""
    properties = properties or {}

    def mark(method: Callable) -> Callable:
        method.__esac_tool__ = {"description": description, "parameters": {
            "type": "object", "properties": properties,
            "required": list(properties) if required is None else required, "additionalProperties": False}}
        return method

    return mark


class Environment:
    """Base class of every mock environment; subclasses add @tool methods and fill `state` and `db`."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.db: sqlite3.Connection | None = None

    def tools(self) -> list[Tool]:
        """The environment's tools in a stable order."""
        found = []
        for name in sorted(dir(type(self))):
            marked = getattr(getattr(type(self), name), "__esac_tool__", None)
            if marked:
                found.append(Tool(name, marked["description"], marked["parameters"], name))
        return found

    def call(self, name: str, args: dict[str, Any]) -> Any:
        """Serve one validated tool call; ToolError goes back to the model, anything else is an environment crash."""
        return getattr(self, name)(**args)

    def snapshot(self) -> dict[str, str]:
        """Every model-visible fact as path -> JSON text; the episode diffs consecutive snapshots."""
        flat: dict[str, str] = {}
        _flatten("", self.state, flat)
        if self.db is not None:
            tables = [r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
            for table in tables:
                columns = [r[1] for r in self.db.execute(f'PRAGMA table_info("{table}")')]
                flat[f"db/{table}/#schema"] = json.dumps(columns)
                for row in self.db.execute(f'SELECT rowid, * FROM "{table}"'):
                    flat[f"db/{table}/{row[0]}"] = json.dumps(list(row[1:]), default=str)
        return flat


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key in value:
            _flatten(f"{prefix}/{key}" if prefix else str(key), value[key], out)
    elif isinstance(value, list) and value:
        for index, entry in enumerate(value):
            _flatten(f"{prefix}/{index}", entry, out)
    else:
        out[prefix] = json.dumps(value, sort_keys=True, default=str)


def validate_args(schema: dict[str, Any], args: Any) -> str | None:
    """Check arguments against a tool's JSON Schema subset; return the first problem, or None when they fit."""
    return _check(schema, args, "arguments")


_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list, "object": dict}


def _check(schema: dict[str, Any], value: Any, where: str) -> str | None:
    expected = schema.get("type")
    if expected:
        python_type = _TYPES[expected]
        if not isinstance(value, python_type) or (expected in ("integer", "number") and isinstance(value, bool)):
            return f"{where} must be {expected}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where} must be one of {schema['enum']}"
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                return f"{where} misses '{name}'"
        for name, item in value.items():
            if name not in properties:
                if schema.get("additionalProperties", True) is False:
                    return f"{where} has unknown field '{name}'"
                continue
            problem = _check(properties[name], item, f"{where}.{name}")
            if problem:
                return problem
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problem = _check(schema["items"], item, f"{where}[{index}]")
            if problem:
                return problem
    return None


def text_arg(value: Any, what: str, limit: int = 200) -> str:
    """A stripped, non-empty, reasonably short identifier or refuse it."""
    cleaned = value.strip()
    if not cleaned:
        raise ToolError(f"{what} is empty")
    if len(cleaned) > limit:
        raise ToolError(f"{what} is too long")
    return cleaned


def paged(rows: list[Any], page: int, size: int) -> dict[str, Any]:
    """One page of a listing (pages count from 1)."""
    pages = max(1, -(-len(rows) // size))
    if not 1 <= page <= pages:
        raise ToolError(f"page must be between 1 and {pages}")
    return {"page": page, "pages": pages, "rows": rows[(page - 1) * size:page * size]}
