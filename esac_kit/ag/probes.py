"""Verdicts the model cannot forge: a test's checks become probes that the sandbox evaluates, returning only the raw
values (or the exception) each probed expression produced; the expected values stay in the kit's process, which
compares them and decides PASS or FAIL (reliability: model code shares the sandbox's interpreter, so whatever the
child holds, the model can read or rewrite, and a channel of PASS lines could be forged).

A probe program is the test source with every check replaced: `assert X == LITERAL`, `_same(X, LITERAL)` and
`assert X` / `assert not X` probe X; `_raises(Error, f, *args)` and the `try: ... except Error: pass else: raise
AssertionError` form probe the exception. Other statements (setup) stay. A check the rewriter does not know is an
error when the tests are generated, so no expected value can slip into the child.
"""

from __future__ import annotations

import ast
import json
import secrets
from dataclasses import dataclass
from typing import Any

from esac_kit.sandbox import run_python

PROBE_CPU_S, PROBE_WALL_S = 4, 8


@dataclass(frozen=True)
class Expectation:
    """What one probe must produce: a value (strict: the same type too) or an exception of a named class."""

    kind: str  # "value" | "strict" | "truthy" | "falsy" | "raises"
    expected: Any = None


@dataclass(frozen=True)
class ProbedTests:
    """A test file split in two: the program the sandbox runs, and the expectations the kit keeps."""

    path: str
    program: str
    expectations: dict[str, list[Expectation]]  # test function name -> its probes in order


def split_tests(path: str, source: str) -> ProbedTests:
    """Rewrite a test file's checks into probes; raise ValueError on a check that would carry an expected value."""
    tree = ast.parse(source)
    expectations: dict[str, list[Expectation]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            probes: list[Expectation] = []
            node.body = [_rewrite(statement, probes, f"{path}::{node.name}") for statement in node.body]
            expectations[node.name] = probes
    return ProbedTests(path, ast.unparse(ast.fix_missing_locations(tree)), expectations)


def _probe(expression: ast.expr, raises: bool = False) -> ast.stmt:
    """`__probe__(lambda: EXPRESSION)`, or `__probe_raises__(...)` for a call expected to raise."""
    function = "__probe_raises__" if raises else "__probe__"
    lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                     body=expression)
    return ast.Expr(ast.Call(ast.Name(function, ast.Load()), [lam], []))


def _literal(node: ast.expr, where: str) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ValueError(f"{where}: the expected side of a check must be a literal: {ast.unparse(node)}") from None


def _rewrite(statement: ast.stmt, probes: list[Expectation], where: str) -> ast.stmt:
    """One statement of a test: a check becomes a probe (its expectation appended), setup stays."""
    if isinstance(statement, ast.Assert):
        test = statement.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            probes.append(Expectation("value", _literal(test.comparators[0], where)))
            return _probe(test.left)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            _no_literal(test.operand, where)
            probes.append(Expectation("falsy"))
            return _probe(test.operand)
        _no_literal(test, where)
        probes.append(Expectation("truthy"))
        return _probe(test)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
            and isinstance(statement.value.func, ast.Name) and statement.value.func.id in ("_same", "_raises"):
        call = statement.value
        if call.func.id == "_same":
            probes.append(Expectation("strict", _literal(call.args[1], where)))
            return _probe(call.args[0])
        error, function, *arguments = call.args
        probes.append(Expectation("raises", _name(error, where)))
        return _probe(ast.Call(function, arguments, []), raises=True)
    if isinstance(statement, ast.Try) and _is_raising_form(statement):
        probes.append(Expectation("raises", _name(statement.handlers[0].type, where)))
        return _probe(statement.body[0].value, raises=True)
    if any(isinstance(node, (ast.Assert, ast.Raise)) for node in ast.walk(statement)):
        raise ValueError(f"{where}: a check the probe rewriter does not know: {ast.unparse(statement)[:80]}")
    return statement


def _is_raising_form(node: ast.Try) -> bool:
    """`try: CALL / except Error: pass / else: raise AssertionError(...)`, the visible tests' raising form."""
    return (len(node.body) == 1 and isinstance(node.body[0], ast.Expr) and len(node.handlers) == 1
            and isinstance(node.handlers[0].type, ast.Name) and len(node.orelse) == 1
            and isinstance(node.orelse[0], ast.Raise) and not node.finalbody)


def _name(node: ast.expr, where: str) -> str:
    if not isinstance(node, ast.Name):
        raise ValueError(f"{where}: an expected exception must be named: {ast.unparse(node)}")
    return node.id


def _no_literal(node: ast.expr, where: str) -> None:
    """A truthiness check may not compare against a literal (it would carry the expected value into the child)."""
    if any(isinstance(n, ast.Compare) for n in ast.walk(node)):
        raise ValueError(f"{where}: use `assert X == EXPECTED` or _same for a comparison: {ast.unparse(node)[:80]}")


# The child: serves the project's modules, runs each probe program's test functions and prints, for every probe, a
# tagged line with the raw value it produced (a closed encoding of builtin types) or the exception's class names.
_CHILD = r'''
import importlib, importlib.abc, importlib.util, json, sys

SOURCES = json.loads(__SOURCES__)
PROGRAMS = json.loads(__PROGRAMS__)
TAG = __TAG__
OUT = sys.stdout


class Discard:
    def write(self, text):
        return len(text)

    def flush(self):
        pass


sys.stdout = Discard()  # the project's own prints are not part of the verdict
PATHS = {path[:-3].replace("/", "."): path for path in SOURCES}


class Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in PATHS:
            return importlib.util.spec_from_loader(name, self, origin=PATHS[name])
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__file__ = PATHS[module.__name__]
        exec(compile(SOURCES[module.__file__], module.__file__, "exec"), module.__dict__)


def encode(value, depth=0):
    kind = type(value)
    if depth > 20:
        return ["deep"]
    if kind in (bool, int, str) or value is None:
        return [kind.__name__, value if kind is not int else str(value)]
    if kind is float:
        return ["float", repr(value)]
    if kind in (list, tuple):
        return [kind.__name__, [encode(v, depth + 1) for v in value]]
    if kind is dict:
        return ["dict", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]]
    if kind in (set, frozenset):
        return [kind.__name__, sorted((encode(v, depth + 1) for v in value), key=repr)]
    return ["other", kind.__name__]


def emit(record):
    OUT.write(TAG + " " + json.dumps(record) + "\n")
    OUT.flush()


sys.meta_path.insert(0, Finder())
for path, program in PROGRAMS:
    for name in list(PATHS):
        sys.modules.pop(name, None)
    space = {}
    try:
        exec(compile(program, path, "exec"), space)
    except BaseException as error:
        emit([path, None, "import", type(error).__name__])
        continue
    for name in [n for n in space if n.startswith("test") and callable(space[n])]:
        for module in list(PATHS):
            sys.modules.pop(module, None)
        fresh = {}
        exec(compile(program, path, "exec"), fresh)
        index = [0]

        def probe(thunk, raises=False, name=name, index=index):
            at = index[0]
            index[0] += 1
            try:
                value = thunk()
            except BaseException as error:
                emit([path, name, at, "raised", [c.__name__ for c in type(error).__mro__]])
                if not raises:
                    raise
                return
            emit([path, name, at, "value", encode(value)])

        fresh["__probe__"] = probe
        fresh["__probe_raises__"] = lambda thunk, probe=probe: probe(thunk, True)
        try:
            fresh[name]()
        except BaseException:
            continue
        emit([path, name, "done", "done", None])
'''


def decode(encoded: Any) -> Any:
    """A value as the child encoded it, rebuilt with its exact builtin type (anything else stays unequal)."""
    kind, *rest = encoded if isinstance(encoded, list) and encoded else ["other"]
    payload = rest[0] if rest else None
    if kind == "int":
        return int(payload)
    if kind == "float":
        return float(payload)
    if kind in ("bool", "str", "NoneType"):
        return payload
    if kind in ("list", "tuple"):
        items = [decode(v) for v in payload]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        return {_hashable(decode(k)): decode(v) for k, v in payload}
    if kind in ("set", "frozenset"):
        items = {_hashable(decode(v)) for v in payload}
        return items if kind == "set" else frozenset(items)
    return _Opaque(str(kind))


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@dataclass(frozen=True)
class _Opaque:
    """A value of a type the child does not encode: equal to nothing expected."""

    type_name: str


def _meets(expectation: Expectation, outcome: tuple[str, Any] | None) -> bool:
    if outcome is None:
        return False
    kind, payload = outcome
    if expectation.kind == "raises":
        return kind == "raised" and expectation.expected in payload
    if kind != "value":
        return False
    value = decode(payload)
    if expectation.kind == "truthy":
        return not isinstance(value, _Opaque) and bool(value)
    if expectation.kind == "falsy":
        return not isinstance(value, _Opaque) and not value
    if expectation.kind == "strict":
        return _same_type(value, expectation.expected) and value == expectation.expected
    return value == expectation.expected


def _same_type(value: Any, expected: Any) -> bool:
    """Exact types all the way down, as the tests' `_same` helper demands."""
    if type(value) is not type(expected):
        return False
    if isinstance(expected, (list, tuple)):
        return len(value) == len(expected) and all(_same_type(v, e) for v, e in zip(value, expected))
    if isinstance(expected, dict):
        return value.keys() == expected.keys() and all(_same_type(value[k], expected[k]) for k in expected)
    return True


@dataclass(frozen=True)
class ProbeRun:
    """The kit's verdict on each probed test (test id -> passed), decided outside the sandbox, and how it ended."""

    verdicts: dict[str, bool]
    status: str

    def passed(self, test_ids: list[str]) -> bool:
        """True when every listed test passed."""
        return all(self.verdicts.get(test_id, False) for test_id in test_ids)


def run_probes(sources: dict[str, str], tests: list[ProbedTests]) -> ProbeRun:
    """Evaluate the probe programs against the project's top-level modules and judge them here."""
    tag = secrets.token_hex(12)
    program = (_CHILD.replace("__SOURCES__", repr(json.dumps(sources)))
               .replace("__PROGRAMS__", repr(json.dumps([[t.path, t.program] for t in tests])))
               .replace("__TAG__", repr(tag)))
    run = run_python(program, cpu_s=PROBE_CPU_S, wall_s=PROBE_WALL_S)
    outcomes: dict[tuple[str, str, int], tuple[str, Any]] = {}
    for line in run.stdout.splitlines():
        if not line.startswith(tag + " "):
            continue
        try:
            path, name, index, kind, payload = json.loads(line[len(tag) + 1:])
        except (ValueError, TypeError):
            continue
        outcomes.setdefault((path, name, index), (kind, payload))  # the first report of a probe stands
    verdicts = {}
    for test in tests:
        for name, expectations in test.expectations.items():
            finished = (test.path, name, "done") in outcomes  # the test ran to its end without an exception
            verdicts[f"{test.path}::{name}"] = finished and all(_meets(e, outcomes.get((test.path, name, n)))
                                                                for n, e in enumerate(expectations))
    return ProbeRun(verdicts, run.status)
