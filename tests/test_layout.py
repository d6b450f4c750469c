"""The house's layout: no import cycle anywhere in the package (imports inside functions included), GI logic in
esac_kit/gi, no switch on a scoring string outside the kinds, and the command as typed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "esac_kit"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Every esac_kit module and the esac_kit modules it imports, wherever the import statement stands."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                base = node.module if node.level == 0 else None
                if base is None:
                    continue
                targets.add(base)
                targets |= {f"{base}.{alias.name}" for alias in node.names}  # `from esac_kit import statistics`
        graph[name] = {t for t in targets if t in modules and t != name and not name.startswith(t + ".")}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return stack[stack.index(target):] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_cycle():
    assert find_cycle(import_graph()) is None, " -> ".join(find_cycle(import_graph()))


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_core_imports_no_suite_package():
    graph = import_graph()
    core = [m for m in graph if not m.startswith(("esac_kit.gi", "esac_kit.ag"))]
    leaks = {m: sorted(t for t in graph[m] if t.startswith(("esac_kit.gi", "esac_kit.ag"))) for m in core}
    assert not {m: t for m, t in leaks.items() if t}


def test_no_switch_on_a_scoring_string_outside_the_kinds():
    offenders = [f"{p.relative_to(PACKAGE)}:{n}" for p in PACKAGE.rglob("*.py")
                 for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if "scoring ==" in line and p.name not in ("kinds.py", "kind.py")]
    assert not offenders


def test_gi_logic_lives_in_esac_kit_gi():
    assert (PACKAGE / "gi" / "generators").is_dir()
    for name in ("normalise", "constraints", "verifiable", "judge", "rubric_check", "scoring", "verify", "kinds"):
        assert (PACKAGE / "gi" / f"{name}.py").is_file(), name
    root_names = {p.stem for p in PACKAGE.glob("*.py")}
    assert not root_names & {"normalise", "constraints", "verifiable", "judge", "rubric_check", "explore"}


def test_the_command_is_esac_kit_and_python_m_esac_kit():
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "esac-kit").is_file()
    assert not (bin_dir / "esac").exists()  # `esac` is a reserved word of every POSIX shell
    typed = subprocess.run(["bash", "-c", f". {bin_dir}/activate && esac-kit --version && esac-kit items"],
                           capture_output=True, text=True)
    assert typed.returncode == 0, typed.stderr
    assert typed.stdout.startswith("esac-kit ") and "100 points, 36 items" in typed.stdout
    module = subprocess.run([sys.executable, "-m", "esac_kit", "items", "--suite", "ag"], capture_output=True, text=True)
    assert module.returncode == 0 and "14 tasks" in module.stdout


def test_no_readme_line_starts_with_the_bare_command():
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    assert not [line for line in readme.splitlines() if line.lstrip().startswith("esac ")]


def test_the_gi_spec_lists_every_item_with_its_current_title_and_difficulty_band():
    from esac_kit.suite import load_suite

    spec = (PACKAGE.parent / "specs" / "esac-gi.md").read_text()
    for item in load_suite("gi").items:
        row = next((line for line in spec.splitlines() if line.startswith(f"| `{item.id}` |")), None)
        assert row is not None and item.title in row, f"specs/esac-gi.md: {item.id}'s row is missing or stale"
        if item.difficulty:
            assert f"{item.difficulty.measure} [{item.difficulty.band[0]:g}, {item.difficulty.band[1]:g}]" in row
