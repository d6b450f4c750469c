"""The AG package's layout: no function over 80 lines, and the shared answer helpers live only in ag/answers.py."""

from __future__ import annotations

import ast
from pathlib import Path

AG = Path(__file__).resolve().parent.parent / "esac_kit" / "ag"
MAX_FUNCTION_LINES = 80


def functions(path: Path) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function of a module, methods and nested functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def top_level_names(path: Path) -> set[str]:
    """The names a module defines at its top level: functions, classes and assigned constants."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_no_function_under_ag_is_longer_than_80_lines():
    too_long = [f"{path.relative_to(AG)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
                for path in sorted(AG.rglob("*.py")) for node in functions(path)
                if node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not too_long, too_long


def test_answer_helpers_are_defined_only_in_the_answers_module():
    helpers = {node.name for node in functions(AG / "answers.py")}
    assert helpers, "esac_kit/ag/answers.py defines no helper"
    copies = [f"{path.name}: {sorted(helpers & {node.name for node in functions(path)})}"
              for path in sorted((AG / "tasks").glob("*.py")) if helpers & {node.name for node in functions(path)}]
    assert not copies, copies


def test_task_files_define_no_private_copy_of_an_answer_helper():
    """A task file's `_mentions` or `_dollars` would be the helper copied back under a private name."""
    helpers = {node.name for node in functions(AG / "answers.py")}
    copies = [f"{path.name}: _{name}" for path in sorted((AG / "tasks").glob("*.py"))
              for name in sorted(helpers) if f"_{name}" in top_level_names(path)]
    assert not copies, copies
