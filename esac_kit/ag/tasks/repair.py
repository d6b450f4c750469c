"""Software repair: a generated Python project of nine or ten modules whose four seeded bugs interact (one masks or
hides another, one sits in a helper that several modules share), repaired through paged file tools and a test
tool, and judged by hidden tests (never shown: twins of every visible test with other seeded values, each bug's
own tests, and tests of behaviour that was already right) plus the original visible tests. The judge probes the
final sources in the sandbox and decides in the kit's process (esac_kit.ag.probes), where the expected values
stay, so hard-coding what the visible tests expect fails the twins."""

from __future__ import annotations

import functools
import json
import re
import secrets
import sys
from dataclasses import dataclass, field

from esac_kit.ag.answers import dollars
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.probes import ProbedTests, ProbeRun, run_probes, split_tests
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng
from esac_kit.sandbox import run_python

# ---------------------------------------------------------------- running a project's tests in the sandbox

# The program the sandbox runs: a meta-path finder serves the project's modules from SOURCES, and every test
# function runs against freshly imported modules, so module state (a mutated default argument) never leaks
# from one test into the next. Each result is one tagged JSON line; the tag is secret, so the project's own
# prints cannot forge a PASS.
_RUNNER = r'''
import importlib
import importlib.abc
import importlib.util
import json
import sys
import traceback

SOURCES = json.loads(__SOURCES__)
TEST_PATHS = json.loads(__TESTS__)
TAG = __TAG__
OUTPUT_KEPT = 2000
PATHS = {path[:-3].replace("/", "."): path for path in SOURCES}
CODE = {}


class ProjectFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name == "tests":
            return importlib.util.spec_from_loader(name, self, is_package=True)
        if name in PATHS:
            return importlib.util.spec_from_loader(name, self, origin=PATHS[name])
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__name__ == "tests":
            return
        path = PATHS[module.__name__]
        module.__file__ = path
        if path not in CODE:
            CODE[path] = compile(SOURCES[path], path, "exec")
        exec(CODE[path], module.__dict__)


class Capture:
    """Keeps the start of what the project prints, so a flood of prints cannot push the results out."""

    def __init__(self):
        self.kept = []
        self.room = OUTPUT_KEPT

    def write(self, text):
        text = str(text)
        if self.room > 0:
            self.kept.append(text[:self.room])
            self.room -= len(self.kept[-1])
        return len(text)

    def flush(self):
        pass


sys.meta_path.insert(0, ProjectFinder())
sys.dont_write_bytecode = True
RESULTS, CAPTURED = sys.stdout, Capture()
sys.stdout = CAPTURED


def forget():
    for name in list(sys.modules):
        if name == "tests" or name in PATHS:
            del sys.modules[name]


def emit(status, test_id, message, limit=400):
    RESULTS.write(TAG + " " + json.dumps([status, test_id, message[:limit]]) + "\n")
    RESULTS.flush()


def describe(error):
    try:
        detail = str(error)
    except BaseException:
        detail = ""
    text = type(error).__name__ + (": " + detail if detail else "")
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename in SOURCES and frame.lineno:
            lines = SOURCES[frame.filename].splitlines()
            line = lines[frame.lineno - 1].strip() if frame.lineno <= len(lines) else ""
            return "%s:%d: %s -- %s" % (frame.filename, frame.lineno, line, text)
    return text


for test_path in TEST_PATHS:
    module_name = test_path[:-3].replace("/", ".")
    forget()
    try:
        names = [n for n, v in list(vars(importlib.import_module(module_name)).items())
                 if n.startswith("test") and callable(v)]
    except BaseException as error:
        emit("ERROR", test_path, "import failed: " + describe(error))
        continue
    for name in names:
        forget()
        test_id = test_path + "::" + name
        try:
            getattr(importlib.import_module(module_name), name)()
        except AssertionError as error:
            emit("FAIL", test_id, describe(error))
        except BaseException as error:
            emit("ERROR", test_id, describe(error))
        else:
            emit("PASS", test_id, "")
emit("OUTPUT", "", "".join(CAPTURED.kept), OUTPUT_KEPT)
'''

TEST_CPU_S, TEST_WALL_S = 4, 8
OUTPUT_SHOWN = 2000  # characters of the project's own prints shown after the results


@dataclass(frozen=True)
class TestRun:
    """One sandboxed test run: test id -> (PASS | FAIL | ERROR, message) in run order, and how the run ended."""

    results: dict[str, tuple[str, str]]
    status: str
    output: str
    stderr: str

    def passed(self, test_ids: list[str]) -> bool:
        """True when every listed test reported PASS."""
        return all(self.results.get(test_id, ("MISSING", ""))[0] == "PASS" for test_id in test_ids)


def run_project_tests(sources: dict[str, str], only: str | None = None) -> TestRun:
    """Run every tests/test_*.py of `sources` (path -> text), or just the file `only`, in the sandbox against the
    top-level modules."""
    tag = secrets.token_hex(12)  # an anti-forgery nonce, not part of the instance
    tests = sorted(p for p in sources if p.startswith("tests/") and (only is None or p == only))
    program = (_RUNNER.replace("__SOURCES__", repr(json.dumps(sources)))
               .replace("__TESTS__", repr(json.dumps(tests))).replace("__TAG__", repr(tag)))
    run = run_python(program, cpu_s=TEST_CPU_S, wall_s=TEST_WALL_S)
    results: dict[str, tuple[str, str]] = {}
    output = []
    for line in run.stdout.splitlines():
        if not line.startswith(tag + " "):
            output.append(line)
            continue
        try:
            status, test_id, message = json.loads(line[len(tag) + 1:])
        except (ValueError, TypeError):
            continue
        if status == "OUTPUT":
            output.insert(0, str(message))
        elif isinstance(test_id, str) and test_id not in results:
            results[test_id] = (str(status), str(message))
    return TestRun(results, run.status, "\n".join(output), run.stderr)


FAILURES_SHOWN = 12  # failing tests listed in full; the rest are counted


def _report(run: TestRun) -> str:
    """The run as the model sees it: a count, one line per failing test, then the project's own output if any."""
    if not run.results and run.status == "ok":
        return "no tests found under tests/"
    failing = [(test_id, status, message) for test_id, (status, message) in run.results.items() if status != "PASS"]
    lines = [f"{len(run.results)} tests: {len(run.results) - len(failing)} passed, {len(failing)} failed or errored"]
    for test_id, status, message in failing[:FAILURES_SHOWN]:
        lines.append(f"{status} {test_id}" + (f" -- {message}" if message else ""))
    if len(failing) > FAILURES_SHOWN:
        lines.append(f"... and {len(failing) - FAILURES_SHOWN} more failing; run one test file to see them")
    if run.status != "ok":
        reason = {"timeout": f"over {TEST_CPU_S} s of CPU or {TEST_WALL_S} s in all",
                  "memory": "out of memory"}.get(run.status, f"the process ended ({run.status})")
        lines.append(f"the test run stopped early: {reason}; tests not listed did not run")
        if run.stderr.strip():
            lines.append("stderr (end): " + run.stderr.strip()[-800:])
    if run.output.strip():
        lines.append("output printed by the project (start):\n" + run.output[:OUTPUT_SHOWN])
    return "\n".join(lines)


# ---------------------------------------------------------------- the environment

_WRITABLE = re.compile(r"(tests/test_[a-z0-9_]{1,40}|[a-z][a-z0-9_]{0,40})\.py")
MAX_FILE_CHARS, MAX_FILES = 100_000, 40
PAGE_LINES, PAGE_CHARS = 24, 720  # a read_file page ends at whichever comes first (outputs stay compact)
SEARCH_HITS = 20
_PATH_PROPERTY = {"type": "string", "description": "A file path as list_files shows it, e.g. 'pricing.py' or "
                                                   "'tests/test_pricing.py'."}


class ProjectEnv(Environment):
    """A small Python project held as path -> source text in `state["files"]`, with tools to read, edit and test it."""

    def __init__(self, files: dict[str, str]):
        super().__init__()
        self.state = {"files": dict(files)}

    def _existing(self, path: str) -> str:
        if path not in self.state["files"]:
            raise ToolError(f"no file {path!r}; list_files shows the project's files")
        return self.state["files"][path]

    def _check_writable(self, path: str, content: str) -> None:
        if not _WRITABLE.fullmatch(path):
            raise ToolError(f"cannot write {path!r}: only top-level modules 'name.py' and test files "
                            "'tests/test_name.py' (lower-case letters, digits, underscores) can be written; "
                            "other files are read-only")
        stem = path[:-3]
        if stem == "tests" or stem in sys.stdlib_module_names:
            raise ToolError(f"cannot write {path!r}: the name would shadow a package the tests need")
        if len(content) > MAX_FILE_CHARS:
            raise ToolError(f"content too long ({len(content)} characters; the limit is {MAX_FILE_CHARS})")
        if path not in self.state["files"] and len(self.state["files"]) >= MAX_FILES:
            raise ToolError(f"the project already holds {MAX_FILES} files; no new file can be added")

    @tool("List the project's files with their length in lines.")
    def list_files(self):
        return {"files": [{"path": path, "lines": len(text.splitlines())}
                          for path, text in sorted(self.state["files"].items())]}

    @tool(f"Return one page of a file, with line numbers: from `start_line` (default 1) for up to {PAGE_LINES} lines "
          f"or about {PAGE_CHARS} characters, whichever ends first. The footer says where the next page starts.",
          {"path": _PATH_PROPERTY,
           "start_line": {"type": "integer", "description": "The first line to show, counting from 1."}},
          required=["path"])
    def read_file(self, path: str, start_line: int = 1):
        lines = self._existing(path).splitlines()
        if not lines:
            return f"{path} is empty"
        if not 1 <= start_line <= len(lines):
            raise ToolError(f"start_line must be between 1 and {len(lines)} for {path}")
        shown, size, number = [], 0, start_line
        while number <= len(lines) and len(shown) < PAGE_LINES:
            text = f"{number:>4}| {lines[number - 1]}"
            if shown and size + len(text) + 1 > PAGE_CHARS:
                break
            shown.append(text)
            size += len(text) + 1
            number += 1
        more = (f"(lines {start_line}-{number - 1} of {len(lines)}; read_file with start_line={number} for more)"
                if number <= len(lines) else f"(lines {start_line}-{number - 1} of {len(lines)}; end of file)")
        return "\n".join(shown + [more])

    @tool(f"Find the lines of the project's files that contain `text` (exact and case-sensitive): path, line "
          f"number and line, at most {SEARCH_HITS}.",
          {"text": {"type": "string", "description": "The text to look for, e.g. 'percent_of('."}})
    def search_code(self, text: str):
        if not text.strip():
            raise ToolError("`text` must not be blank")
        hits = [f"{path}:{number}: {line.strip()}" for path, source in sorted(self.state["files"].items())
                for number, line in enumerate(source.splitlines(), 1) if text in line]
        if not hits:
            return f"no line contains {text!r}"
        more = [f"... {len(hits) - SEARCH_HITS} more lines"] if len(hits) > SEARCH_HITS else []
        return "\n".join(hits[:SEARCH_HITS] + more)

    @tool("Create or overwrite a Python file with the given full content. Writable paths: top-level modules "
          "'name.py' and test files 'tests/test_name.py' (lower-case letters, digits, underscores); other files "
          "(documents) are read-only.",
          {"path": _PATH_PROPERTY, "content": {"type": "string", "description": "The file's complete new text."}})
    def write_file(self, path: str, content: str):
        self._check_writable(path, content)
        self.state["files"][path] = content
        return f"wrote {path} ({len(content.splitlines())} lines)"

    @tool("Replace the single occurrence of `old` in a Python file by `new` (an exact, whitespace-sensitive text "
          "match without the line numbers read_file shows; fails when `old` occurs zero times or more than once). "
          "Same writable paths as write_file.",
          {"path": _PATH_PROPERTY, "old": {"type": "string", "description": "Exact text to replace."},
           "new": {"type": "string", "description": "Replacement text."}})
    def replace_in_file(self, path: str, old: str, new: str):
        text = self._existing(path)
        if not old:
            raise ToolError("`old` must not be empty")
        count = text.count(old)
        if count != 1:
            raise ToolError(f"`old` occurs {count} times in {path}; it must occur exactly once")
        updated = text.replace(old, new)
        self._check_writable(path, updated)
        self.state["files"][path] = updated
        return f"replaced 1 occurrence in {path}"

    @tool("Run the project's test files (tests/test_*.py), or only the one named by `path`, in a sandbox against "
          "the current files. Returns the counts and one line per failing test: FAIL (an assert failed) or ERROR "
          "(another exception), with the failing line and the message. Changes nothing.",
          {"path": {"type": "string", "description": "Optional: one test file, e.g. 'tests/test_pricing.py'."}},
          required=[])
    def run_tests(self, path: str | None = None):
        if path is not None:
            self._existing(path)
            if not path.startswith("tests/test_"):
                raise ToolError(f"{path!r} is not a test file (tests/test_*.py)")
        return _report(run_project_tests(dict(self.state["files"]), path))


# ---------------------------------------------------------------- shared plumbing of the two tasks


@dataclass(frozen=True)
class Bug:
    """A planted bug: the module holding it, what the answer must name, and the (correct, buggy) text swaps."""

    key: str
    path: str
    title: str
    swaps: tuple[tuple[str, str], ...]
    names: tuple[str, ...] = ()


@dataclass
class Project:
    """A generated project: correct modules, planted bugs, documents, visible tests and grouped hidden tests.

    hidden_groups maps each planted bug's key to its own hidden tests, and "regression" to the tests that must pass
    whatever was planted: the visible tests' twins (other seeded values), behaviour that was already right, and
    the tests of every candidate bug that was not planted."""

    modules: dict[str, str]
    bugs: list[Bug]
    documents: dict[str, str]
    visible: dict[str, str]
    visible_ids: list[str]
    hidden: str
    hidden_groups: dict[str, list[str]] = field(default_factory=dict)

    def sources(self, fixed: frozenset[str] = frozenset()) -> dict[str, str]:
        """The modules with every planted bug not in `fixed` swapped in."""
        sources = dict(self.modules)
        for bug in self.bugs:
            if bug.key in fixed:
                continue
            for correct, buggy in bug.swaps:
                if sources[bug.path].count(correct) != 1:
                    raise RuntimeError(f"bug {bug.key}: the correct text must occur once in {bug.path}")
                sources[bug.path] = sources[bug.path].replace(correct, buggy)
        return sources

    def files(self) -> dict[str, str]:
        """What the model starts from: documents, buggy modules and visible tests."""
        return {**self.documents, **self.sources(), **self.visible}

    @functools.cached_property
    def probed(self) -> list[ProbedTests]:
        """The original visible tests and the hidden tests as probes: their expected values stay in the kit."""
        return [split_tests(path, source) for path, source in {**self.visible, HIDDEN_PATH: self.hidden}.items()]

    def judge(self, files: dict[str, str]) -> ProbeRun:
        """Probe the top-level modules of `files` with the original visible and the hidden tests; the kit, not the
        sandbox, compares what came back with the expected values."""
        sources = {p: s for p, s in files.items() if p.endswith(".py") and "/" not in p}
        return run_probes(sources, self.probed)

    def fix_calls(self, bug: Bug) -> list[Call]:
        """replace_in_file calls that undo one planted bug in the buggy sources, one per swap."""
        buggy = self.sources()[bug.path]
        calls = []
        for correct, wrong in bug.swaps:
            if buggy.count(wrong) != 1:
                raise RuntimeError(f"bug {bug.key}: the buggy text must occur once in {bug.path}")
            calls.append(Call("replace_in_file", {"path": bug.path, "old": wrong, "new": correct}))
        return calls


HIDDEN_PATH = "tests/test_hidden_checks.py"
_HIDDEN_HELPERS = '''

def _same(got, expected):
    assert type(got) is type(expected) and got == expected, f"got {got!r}, expected {expected!r}"


def _raises(error, call, *args):
    try:
        call(*args)
    except error:
        return
    raise AssertionError(f"{call.__name__}{args!r} did not raise {error.__name__}")
'''


class _Tests:
    """Collects test functions for one file: name -> source, in order."""

    def __init__(self, path: str, header: str):
        self.path, self.header, self.functions = path, header, {}

    def add(self, name: str, *body: str) -> str:
        if name in self.functions:
            raise RuntimeError(f"duplicate test {name}")
        self.functions[name] = f"def {name}():\n" + "".join(f"    {line}\n" for line in body)
        return f"{self.path}::{name}"

    def source(self) -> str:
        return self.header.rstrip("\n") + "\n\n\n" + "\n\n".join(self.functions.values())

    def ids(self) -> list[str]:
        return [f"{self.path}::{name}" for name in self.functions]


class _Twins:
    """Adds each visible test to its file, and a twin with other seeded values to the hidden tests."""

    def __init__(self, hidden: _Tests, regression: list[str]):
        self.hidden, self.regression = hidden, regression

    def add(self, tests: _Tests, name: str, make) -> None:
        """`make()` draws fresh values and returns the test's lines; it is called once for each copy."""
        tests.add(name, *make())
        self.regression.append(self.hidden.add(f"test_twin_{tests.path[11:-3]}_{name[5:]}", *make()))


def _eq(expression: str, expected) -> tuple[str, str]:
    """Visible-test lines: compute, then assert equality showing what came back."""
    return f"got = {expression}", f"assert got == {expected!r}, got"


def _raising(statement: str, error: str) -> tuple[str, ...]:
    """Visible-test lines: the statement must raise `error`."""
    return ("try:", f"    {statement}", f"except {error}:", "    pass", "else:",
            f"    raise AssertionError('expected {error}')")


def _scan(rng: ItemRng, low: int, high: int, fits) -> int:
    """The first value from a seeded start in [low, high] (wrapping) that fits."""
    start = rng.randint(low, high)
    for offset in range(high - low + 1):
        value = low + (start - low + offset) % (high - low + 1)
        if fits(value):
            return value
    raise RuntimeError("no value fits")


def _names_answer_ok(answer: str | None, bugs: list[Bug], decoys: list[str] = ()) -> bool:
    """True when the answer names what was changed for every planted bug (any accepted spelling) and names no
    decoy: a list of every candidate must not pass."""
    text = (answer or "").lower()

    def named(name: str) -> bool:
        return re.search(r"(?<![\w])" + re.escape(name.lower()) + r"(?![\w])", text) is not None

    return bool(text) and all(any(named(n) for n in bug.names) for bug in bugs) and not any(map(named, decoys))


def _project_checks(project: Project, answer_check: str) -> tuple[Check, ...]:
    """The regression check, one check per planted bug, and the answer's check."""
    return (Check("tests_pass", "the original visible tests, their hidden twins (the same checks on other seeded "
                                "values) and the hidden tests of behaviour that was already correct all pass "
                                "against the final code"),
            *(Check(f"bug_{i}", f"hidden tests pass: {bug.title}") for i, bug in enumerate(project.bugs, 1)),
            Check("answer", answer_check))


def _judge_project(project: Project, answer_ok, env: ProjectEnv, submitted: str | None) -> dict[str, bool]:
    """Run the visible and hidden tests against the final sources, and judge the answer."""
    run = project.judge(env.state["files"])
    verdicts = {"tests_pass": run.passed(project.visible_ids + project.hidden_groups["regression"])}
    for i, bug in enumerate(project.bugs, 1):
        verdicts[f"bug_{i}"] = run.passed(project.hidden_groups[bug.key])
    verdicts["answer"] = answer_ok(submitted)
    return verdicts


def _pages(text: str) -> list[int]:
    """The start lines of a file's read_file pages."""
    lines, starts, number = text.splitlines(), [], 1
    while number <= len(lines):
        starts.append(number)
        shown, size = 0, 0
        while number <= len(lines) and shown < PAGE_LINES:
            width = len(f"{number:>4}| {lines[number - 1]}") + 1
            if shown and size + width > PAGE_CHARS:
                break
            shown, size, number = shown + 1, size + width, number + 1
    return starts


def _read_calls(files: dict[str, str], path: str) -> list[Call]:
    """Every page of one file, in order."""
    return [Call("read_file", {"path": path} if start == 1 else {"path": path, "start_line": start})
            for start in _pages(files[path])]


def _assemble(project: Project, prompt: str, reference: list[Call], answer_ok, answer_check: str) -> AgTask:
    """The AgTask of a project: checks on the final sources, the reference and a wasteful variant of it (two
    rereads, and one module rewritten whole with a half-done fix before the real fix)."""
    reference = [*reference]
    first_edit = next(i for i, c in enumerate(reference) if c.name == "replace_in_file")
    path = reference[first_edit].args["path"]
    reread = next(c for c in reference if c.name == "read_file")
    draft = project.sources()[path] + "\n# TODO: finish this fix\n"
    undo = Call("replace_in_file", {"path": path, "old": "\n\n# TODO: finish this fix\n", "new": "\n"})
    wasteful = (reference[:first_edit] + [reread, reread, Call("write_file", {"path": path, "content": draft}),
                                          reference[first_edit], undo] + reference[first_edit + 1:])
    return AgTask(prompt=prompt, make_env=lambda: ProjectEnv(project.files()),
                  checks=_project_checks(project, answer_check),
                  evaluate=lambda env, submitted: _judge_project(project, answer_ok, env, submitted),
                  reference=tuple(reference), wasteful=tuple(wasteful))


def _module_text(template: str, values: dict[str, object]) -> str:
    """Fill <<NAME>> placeholders (the templates hold braces of their own)."""
    for name, value in values.items():
        template = template.replace(f"<<{name}>>", str(value))
    if "<<" in template:
        raise RuntimeError("unfilled placeholder")
    return template


# ---------------------------------------------------------------- task 1: billing library against its spec

_COMPANIES = ["Harbor & Finch", "Northwind Outfitters", "Kestrel Supply", "Blue Fern Goods", "Oakridge Tools",
              "Marlow Stationery", "Copperleaf Kitchens", "Tidewater Marine", "Greyson Labs", "Juniper Cycles",
              "Alder Street Books", "Pinecrest Garden", "Saltbox Coffee", "Redwing Optics", "Lumen Lighting"]
_BILLING_PROJECTS = ["tallybook", "ledgerline", "invoicely", "billwise", "countinghouse", "paystub", "chitbook"]
_SKUS = ["widget", "gasket", "bracket", "spindle", "hinge", "lantern", "kettle", "sprocket", "valve", "trowel",
         "ledger", "stapler", "pulley", "ratchet", "thimble"]
_REGIONS = ["north", "south", "east", "west", "coast", "valley", "metro", "upland"]
_RATES_BP = [475, 625, 650, 725, 750, 825, 850, 925, 950, 575, 690, 780]
_COUPON_WORDS = ["SAVE", "SPRING", "WELCOME", "LOYAL", "BULK", "FRIEND", "AUTUMN"]
_CUSTOMERS = ["Abbott", "Baines", "Carver", "Delgado", "Ellison", "Fairchild", "Garner", "Holloway", "Ingram",
              "Jessup", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov"]
_DEVS = ["dana", "ravi", "mo", "ilse", "tomas", "kit", "nell"]

_MONEY = '''\
"""Money helpers: every amount in this project is an int number of cents (SPEC.md rules 1 and 2)."""


def percent_of(cents, rate_bp):
    """cents x rate_bp / 10000 as whole cents; rates are basis points (825 = 8.25 %).

    Every percentage in the project goes through here: volume discounts, coupons, tax, late fees and
    restocking fees (SPEC.md rule 1).
    """
    numerator = cents * rate_bp
    whole, rest = divmod(abs(numerator), 10000)
    if 2 * rest >= 10000:
        whole += 1
    return whole if numerator >= 0 else -whole


def format_cents(cents):
    """The amount in dollars for display, e.g. on statements and reports (SPEC.md rule 2)."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    return f"{sign}${dollars:,}.{rest:02d}"
'''

_CATALOG = '''\
"""The catalogue: unit list prices in cents (SPEC.md rule 3)."""

PRICES = {
<<PRICES>>
}


def list_price(sku):
    """The list price of one unit of `sku` in cents; KeyError for an unknown SKU."""
    if sku not in PRICES:
        raise KeyError(f"unknown SKU {sku!r}")
    return PRICES[sku]
'''

_PRICING = '''\
"""Line pricing with the volume discount (SPEC.md rule 4)."""

from catalog import list_price
from money import percent_of

VOLUME_THRESHOLD = <<THRESHOLD>>
VOLUME_RATE_BP = <<VOLUME_BP>>


def line_total(sku, quantity):
    """What a line of `quantity` units of `sku` costs, in cents.

    ValueError unless the quantity is a positive int; KeyError for an unknown SKU (SPEC.md rule 4).
    """
    if not isinstance(quantity, int) or quantity <= 0:
        raise ValueError(f"quantity must be a positive int, got {quantity!r}")
    amount = list_price(sku) * quantity
    if quantity >= VOLUME_THRESHOLD:
        amount -= percent_of(amount, VOLUME_RATE_BP)
    return amount
'''

_COUPONS = '''\
"""Coupon codes and their discounts (SPEC.md rule 5)."""

from money import percent_of

COUPONS_BP = {
<<COUPONS>>
}
MIN_SPEND = {
<<MIN_SPEND>>
}


def coupon_discount(subtotal, code):
    """The discount in cents that coupon `code` gives on a subtotal of `subtotal` cents.

    ValueError for an unknown code (SPEC.md rule 5).
    """
    if code not in COUPONS_BP:
        raise ValueError(f"unknown coupon {code!r}")
    if subtotal < MIN_SPEND.get(code, 0):
        return 0
    return percent_of(subtotal, COUPONS_BP[code])
'''

_CHARGES = '''\
"""Tax and shipping (SPEC.md rules 7 and 8)."""

from money import percent_of

RATES_BP = {
<<RATES>>
}
SHIPPING_FEES = {
<<FEES>>
}
FREE_SHIPPING_OVER = <<FREE_OVER>>


def tax_for(amount, region):
    """The tax on `amount` cents in `region`, in cents; KeyError for an unknown region."""
    if region not in RATES_BP:
        raise KeyError(f"unknown region {region!r}")
    return percent_of(amount, RATES_BP[region])


def shipping_for(amount, region):
    """Shipping in cents to `region` for an order whose net amount is `amount` cents; KeyError for an unknown
    region (SPEC.md rule 8)."""
    if region not in SHIPPING_FEES:
        raise KeyError(f"unknown region {region!r}")
    # TODO(<<DEV>>): customers at exactly the threshold keep asking about this one; should it be >= ?
    if amount > FREE_SHIPPING_OVER:
        return 0
    return SHIPPING_FEES[region]
'''

_INVOICE = '''\
"""Invoices: lines, coupon, net amount, tax, shipping and total (SPEC.md rules 6 to 10)."""

from charges import RATES_BP, shipping_for, tax_for
from coupons import COUPONS_BP, coupon_discount
from pricing import line_total


class Invoice:
    """One customer's invoice: (sku, quantity) lines, an optional coupon, and the region of tax and shipping."""

    def __init__(self, customer, region, coupon=None, notes=None):
        if region not in RATES_BP:
            raise ValueError(f"unknown region {region!r}")
        if coupon is not None and coupon not in COUPONS_BP:
            raise ValueError(f"unknown coupon {coupon!r}")
        self.customer = customer
        self.region = region
        self.coupon = coupon
        self.notes = [] if notes is None else notes
        self.lines = []

    def add_line(self, sku, quantity):
        line_total(sku, quantity)  # refuses an unknown SKU or a bad quantity now, not when totalling
        self.lines.append((sku, quantity))

    def subtotal(self):
        return sum(line_total(sku, quantity) for sku, quantity in self.lines)

    def discount(self):
        if self.coupon is None:
            return 0
        return coupon_discount(self.subtotal(), self.coupon)

    def net(self):
        return self.subtotal() - self.discount()

    def tax(self):
        return tax_for(self.net(), self.region)

    def shipping(self):
        return shipping_for(self.net(), self.region)

    def total(self):
        return self.net() + self.tax() + self.shipping()


def build_invoice(customer, region, lines, coupon=None, notes=None):
    """An Invoice with the given (sku, quantity) lines; SPEC.md rule 10 says what happens to `notes`."""
    notes = [] if notes is None else list(notes)
    notes.append(f"{len(lines)} line(s) for {customer}")
    invoice = Invoice(customer, region, coupon, notes)
    for sku, quantity in lines:
        invoice.add_line(sku, quantity)
    return invoice
'''

_PAYMENTS = '''\
"""Payments against open balances, and late fees (SPEC.md rules 11 and 12)."""

from money import percent_of

GRACE_DAYS = <<GRACE>>
LATE_FEE_BP = <<LATE_BP>>


def allocate(payment, balances):
    """Apply a payment of `payment` cents to the open `balances` (cents, oldest first).

    Returns (the new balances in the same order, the cents left unapplied); SPEC.md rule 11.
    """
    remaining = payment
    balances = list(balances)
    for index in range(len(balances)):
        applied = min(balances[index], remaining)
        balances[index] -= applied
        remaining -= applied
    return balances, remaining


def late_fee(balance, days_overdue):
    """The late fee in cents on an open `balance` that is `days_overdue` days overdue (SPEC.md rule 12)."""
    if balance <= 0 or days_overdue <= GRACE_DAYS:
        return 0
    return percent_of(balance, LATE_FEE_BP)
'''

_STATEMENT = '''\
"""Customer statements (SPEC.md rule 13)."""

from money import format_cents


def statement_lines(customer, totals, paid):
    """The statement lines of `customer`, given invoice `totals` (cents, in order) and `paid` cents."""
    lines = [f"Statement for {customer}"]
    for number, total in enumerate(totals, 1):
        lines.append(f"Invoice {number}: {format_cents(total)}")
    lines.append(f"Paid: {format_cents(paid)}")
    lines.append(f"Balance due: {format_cents(sum(totals) - paid)}")
    return lines
'''

_REFUNDS = '''\
"""Refunds of returned units (SPEC.md rule 14)."""

from money import percent_of
from pricing import line_total

RESTOCKING_BP = <<RESTOCK_BP>>


def refund_for(sku, quantity, returned):
    """Cents refunded when `returned` of the `quantity` units of one line of `sku` come back.

    ValueError unless 0 < returned <= quantity (SPEC.md rule 14).
    """
    if not 0 < returned <= quantity:
        raise ValueError(f"cannot return {returned!r} of {quantity!r} units")
    share = line_total(sku, quantity) * returned // quantity
    return share - percent_of(share, RESTOCKING_BP)
'''

_REPORT = '''\
"""Customer ranking and the summary report (SPEC.md rules 15 and 16)."""

from money import format_cents


def rank_customers(invoices):
    """(customer, total) pairs, one per customer, in ranking order (SPEC.md rule 15)."""
    totals = {}
    for invoice in invoices:
        totals[invoice.customer] = totals.get(invoice.customer, 0) + invoice.total()
    return sorted(totals.items(), key=lambda pair: (-pair[1], pair[0]))


def summary(invoices):
    """One line per customer in ranking order, like '1. Acme: $1,234.56' (SPEC.md rule 16)."""
    ranked = rank_customers(invoices)
    return [f"{place}. {name}: {format_cents(total)}" for place, (name, total) in enumerate(ranked, 1)]
'''

_INSTALMENTS = '''\
"""Instalment plans (SPEC.md rule 17)."""


def split_evenly(total, parts):
    """Split `total` cents into `parts` instalments that differ by at most one cent.

    ValueError unless `parts` is a positive int (SPEC.md rule 17).
    """
    if not isinstance(parts, int) or parts <= 0:
        raise ValueError(f"parts must be a positive int, got {parts!r}")
    base, extra = divmod(total, parts)
    return [base + 1 if index < extra else base for index in range(parts)]


def schedule(total, parts, first_day, every_days):
    """(day, amount) pairs of an instalment plan, in order (SPEC.md rule 17)."""
    amounts = split_evenly(total, parts)
    return [(first_day + index * every_days, amount) for index, amount in enumerate(amounts)]
'''

_RECEIPTS = '''\
"""Printed receipts (SPEC.md rule 18)."""

from money import format_cents
from pricing import line_total


def receipt_lines(invoice):
    """The receipt of an invoice: one line per invoice line, then its money lines (SPEC.md rule 18)."""
    lines = [f"{sku} x {quantity}: {format_cents(line_total(sku, quantity))}" for sku, quantity in invoice.lines]
    if invoice.discount():
        lines.append(f"Discount: -{format_cents(invoice.discount())}")
    lines.append(f"Tax: {format_cents(invoice.tax())}")
    lines.append(f"Shipping: {format_cents(invoice.shipping())}")
    lines.append(f"Total: {format_cents(invoice.total())}")
    return lines
'''

_SPEC = '''\
# <<PROJECT>>: billing rules

Every amount is a Python int number of cents; rates are in basis points
(1 bp = 0.01 %, so 825 bp = 8.25 %). Where a rule names a function, that
function is where the rule lives.

1. Percentages (money.percent_of). A percentage of an amount is rounded to
the nearest whole cent, and an exact half cent rounds away from zero: 2.5
cents becomes 3 and -2.5 cents becomes -3. The result is an int. Every
percentage below is computed this way.

2. Display (money.format_cents). Dollars with thousands separators and
always two cent digits; a negative amount starts with a minus sign:
123456 -> $1,234.56, 5 -> $0.05, -250 -> -$2.50.

3. Catalogue (catalog.list_price). Unit list prices: <<PRICE_TEXT>>.
An unknown SKU is refused with KeyError.

4. Volume pricing (pricing.line_total). A line costs the unit's list price
times the quantity. A line of <<THRESHOLD>> units or more gets <<VOLUME_PCT>> % off the
whole line amount (the percentage of the line amount, subtracted). The
quantity must be a positive int, else ValueError.

5. Coupons (coupons.coupon_discount). <<COUPON_TEXT>>. A coupon's
discount is its percentage of the subtotal, returned as a positive number
of cents; below the code's minimum spend it is 0. An unknown code is
refused with ValueError.

6. Net amount (invoice.Invoice.discount, invoice.Invoice.net). An
invoice's subtotal is the sum of its line totals; discount() is its
coupon's discount as a positive number of cents (0 without a coupon), and
net() is the subtotal minus the discount.

7. Tax (charges.tax_for, invoice.Invoice.tax). Tax is charged on the net
amount at the rate of the invoice's region: <<RATE_TEXT>>.
Shipping is never taxed. An unknown region is refused with KeyError.

8. Shipping (charges.shipping_for, invoice.Invoice.shipping). The fee
depends on the region: <<FEE_TEXT>>. Shipping is free only when
the net amount is strictly more than <<FREE_OVER>> cents, so an order of
exactly <<FREE_OVER>> cents still pays it.

9. Total (invoice.Invoice.total) = net amount + tax + shipping.

10. Notes (invoice.build_invoice). Every invoice gets its own notes list:
the notes passed in, if any, followed by "<number of lines> line(s) for
<customer>". The caller's list is never modified, and one invoice's notes
never appear on another invoice.

11. Payments (payments.allocate). A payment pays the open balances in
order, oldest first (the list is oldest first): each balance is reduced
by as much of what is left of the payment as it can take, and what no
balance takes is returned as unapplied.

12. Late fees (payments.late_fee). A balance more than <<GRACE>> days overdue
(strictly more) pays a late fee of <<LATE_PCT>> % of the open balance; at
<<GRACE>> days or fewer, or on a balance of 0 or less, the fee is 0.

13. Statements (statement.statement_lines). "Statement for <customer>",
then "Invoice <n>: <total>" for each invoice (n counts from 1), then
"Paid: <paid>" and "Balance due: <invoice totals - paid>", every amount as
rule 2 displays it.

14. Refunds (refunds.refund_for). Returning some units of a line refunds
their share of what the line cost: the line total times the returned
units divided by the line's units, rounded down to a whole cent; less a
restocking fee of <<RESTOCK_PCT>> % of that share. Returning none or more than
the line's units is refused with ValueError.

15. Ranking (report.rank_customers). One (customer, total) pair per
customer, the total summed over that customer's invoices; highest total
first, equal totals in customer-name order (A to Z).

16. Summary (report.summary). One line per customer in ranking order,
like "1. Acme: $1,234.56".

17. Instalments (instalments.split_evenly, instalments.schedule). A total
is split into the given number of instalments that differ by at most one
cent, the larger instalments first; the number of parts must be a
positive int, else ValueError. A schedule pairs each instalment with its
due day: the first on the first day, each next one every_days later.

18. Receipts (receipts.receipt_lines). One line "<sku> x <quantity>:
<line total>" per invoice line in order, then "Discount: -<discount>"
(only when there is a discount), "Tax: <tax>", "Shipping: <shipping>" and
"Total: <total>", every amount as rule 2 displays it.
'''

_BILLING_MODULES = ["money.py", "catalog.py", "pricing.py", "coupons.py", "charges.py", "invoice.py", "payments.py",
                    "instalments.py", "statement.py", "refunds.py", "receipts.py", "report.py"]


def _percent(cents: int, rate_bp: int) -> int:
    """SPEC rule 1, mirrored: the expected values of the generated tests."""
    whole, rest = divmod(abs(cents * rate_bp), 10000)
    whole += 2 * rest >= 10000
    return whole if cents * rate_bp >= 0 else -whole


def _half(cents: int, rate_bp: int) -> bool:
    """True when cents x rate_bp lands on an exact half cent (where rounding modes disagree)."""
    return abs(cents * rate_bp) % 10000 == 5000


def _banker_differs(cents: int, rate_bp: int) -> bool:
    """An exact half cent whose lower neighbour is even, so Python's round() goes the other way."""
    return _half(cents, rate_bp) and (abs(cents) * rate_bp // 10000) % 2 == 0


class _Billing:
    """A drawn billing library's facts and the rules that compute its expected values; it keeps drawing test inputs
    from the item's stream."""

    def __init__(self, rng: ItemRng):
        self.rng = rng
        self.project_name, self.company = rng.choice(_BILLING_PROJECTS), rng.choice(_COMPANIES)
        self.dev = rng.choice(_DEVS)
        self.skus = rng.sample(_SKUS, 6)
        self.threshold = rng.randint(6, 20)
        self.volume_bp = rng.choice([500, 750, 1000, 1250, 1500, 2500])  # each can land on a half cent
        self.prices = {sku: rng.randint(120, 4800) for sku in self.skus}
        regions = rng.sample(_REGIONS, 3)
        self.regions = regions
        self.rates = dict(zip(regions, rng.sample(_RATES_BP, 3)))
        self.fees = {r: rng.randint(4, 14) * 100 + rng.choice([0, 50, 95]) for r in regions}
        self.typo_region = rng.choice(regions)  # the region whose rate a rate_table bug mistypes
        typo = str(self.rates[self.typo_region])
        self.typo_rate = int(typo[1] + typo[0] + typo[2:])
        self.plain_regions = [r for r in regions if r != self.typo_region]
        pcts = rng.sample([5, 10, 15, 25, 30], 2)
        words = rng.sample(_COUPON_WORDS, 2)
        self.coupons = {f"{w}{p}": p * 100 for w, p in zip(words, pcts)}
        self.min_code, self.free_code = list(self.coupons)
        self.min_spend = rng.randint(40, 120) * 100
        # The free-shipping line sits among typical order sizes, so orders on either side of it are common.
        typical = sorted(sum(self.prices[s] * rng.randint(1, self.threshold - 1) for s in rng.sample(self.skus, 3))
                         for _ in range(9))
        self.free_over = max(3000, typical[4] // 100 * 100)
        self.grace = rng.choice([7, 10, 14, 15, 21, 30])
        self.late_bp = rng.choice([150, 200, 250, 300, 500])
        self.restock_bp = rng.choice([500, 1000, 1500, 2500])

    def line(self, sku: str, quantity: int) -> int:
        amount = self.prices[sku] * quantity
        return amount - _percent(amount, self.volume_bp) if quantity >= self.threshold else amount

    def coupon(self, subtotal: int, code: str | None) -> int:
        if code is None or subtotal < (self.min_spend if code == self.min_code else 0):
            return 0
        return _percent(subtotal, self.coupons[code])

    def bill(self, lines: list[tuple[str, int]], region: str, code: str | None) -> dict[str, int]:
        subtotal = sum(self.line(s, q) for s, q in lines)
        discount = self.coupon(subtotal, code)
        net = subtotal - discount
        tax = _percent(net, self.rates[region])
        shipping = 0 if net > self.free_over else self.fees[region]
        return {"subtotal": subtotal, "discount": discount, "net": net, "tax": tax, "shipping": shipping,
                "total": net + tax + shipping}

    def refund(self, sku: str, quantity: int, returned: int) -> int:
        share = self.line(sku, quantity) * returned // quantity
        return share - _percent(share, self.restock_bp)

    def clean(self, lines, region, code) -> bool:
        """No percentage of this order lands on a half cent, so no rounding mode matters."""
        b = self.bill(lines, region, code)
        return not (any(q >= self.threshold and _half(self.prices[s] * q, self.volume_bp) for s, q in lines)
                    or (code and _half(b["subtotal"], self.coupons[code])) or _half(b["net"], self.rates[region]))

    def order(self, region: str, code: str | None, fits=lambda b: True, size: int = 3) -> list[tuple[str, int]]:
        """Lines below the volume threshold that are clean and fit."""
        rng = self.rng
        for attempt in range(3000):
            count = size if attempt < 1000 else rng.randint(2, 5)
            lines = [(sku, rng.randint(1, self.threshold - 1)) for sku in rng.sample(self.skus, count)]
            if self.clean(lines, region, code) and fits(self.bill(lines, region, code)):
                return lines
        raise RuntimeError("no order fits")

    def straddling(self, region: str) -> list[tuple[str, int]]:
        """A coupon order whose subtotal is over the free-shipping line and whose net amount is not."""
        return self.order(region, self.free_code,
                          lambda b: b["subtotal"] > self.free_over >= b["net"] and b["discount"] > 0, size=4)

    def half_case(self, rate: int | None = None) -> tuple[int, int]:
        rate = rate or self.rng.choice([50, 250, 1250, 2500, 3750, 5000])
        return _scan(self.rng, 3, 40000, lambda c: _banker_differs(c, rate)), rate

    def volume_sku(self, quantity: int, half: bool = False) -> str:
        fitting = [s for s in self.skus
                   if (_banker_differs if half else lambda c, r: not _half(c, r))(self.prices[s] * quantity,
                                                                                   self.volume_bp)]
        if not fitting:
            raise RuntimeError("no SKU fits")
        return self.rng.choice(fitting)

    def typo_amount(self) -> int:
        rate, typo = self.rates[self.typo_region], self.typo_rate
        return _scan(self.rng, 1500, 80000, lambda c: not _half(c, rate) and _percent(c, rate) != _percent(c, typo))

    def names(self, k: int) -> list[str]:
        return self.rng.sample(_CUSTOMERS, k)


def _billing_bugs(b: _Billing) -> dict[str, Bug]:
    """Every bug the billing library can have planted."""
    return {
        "rounding": Bug("rounding", "money.py", "money.percent_of rounds exact half cents away from zero",
                        (('''    numerator = cents * rate_bp
    whole, rest = divmod(abs(numerator), 10000)
    if 2 * rest >= 10000:
        whole += 1
    return whole if numerator >= 0 else -whole
''', "    return round(cents * rate_bp / 10000)\n"),), ("money.percent_of",)),
        "padding": Bug("padding", "money.py", "money.format_cents always shows two cent digits",
                       (("{rest:02d}", "{rest}"),), ("money.format_cents",)),
        "coupon_sign": Bug("coupon_sign", "coupons.py", "coupons.coupon_discount returns a positive discount",
                           (("    return percent_of(subtotal, COUPONS_BP[code])\n",
                             "    return -percent_of(subtotal, COUPONS_BP[code])\n"),), ("coupons.coupon_discount",)),
        "net_sign": Bug("net_sign", "invoice.py", "invoice.Invoice.net subtracts the discount",
                        (("return self.subtotal() - self.discount()", "return self.subtotal() + self.discount()"),),
                        ("invoice.Invoice.net", "Invoice.net")),
        "ship_region": Bug("ship_region", "charges.py", "charges.shipping_for looks up the region's fee",
                           (("    return SHIPPING_FEES[region]\n", "    return SHIPPING_FEES[region.title()]\n"),),
                           ("charges.shipping_for",)),
        "ship_base": Bug("ship_base", "invoice.py", "invoice.Invoice.shipping goes by the net amount",
                         (("return shipping_for(self.net(), self.region)",
                           "return shipping_for(self.subtotal(), self.region)"),),
                         ("invoice.Invoice.shipping", "Invoice.shipping")),
        "volume": Bug("volume", "pricing.py", f"pricing.line_total discounts lines of exactly {b.threshold} units",
                      (("if quantity >= VOLUME_THRESHOLD:", "if quantity > VOLUME_THRESHOLD:"),),
                      ("pricing.line_total",)),
        "rate_table": Bug("rate_table", "charges.py", f"charges.RATES_BP holds the {b.typo_region} rate of the spec",
                          ((f'    "{b.typo_region}": {b.rates[b.typo_region]},',
                            f'    "{b.typo_region}": {b.typo_rate},'),), ("charges.RATES_BP",)),
        "notes": Bug("notes", "invoice.py", "invoice.build_invoice gives each invoice its own copy of the notes",
                     (("lines, coupon=None, notes=None):", "lines, coupon=None, notes=[]):"),
                      ("    notes = [] if notes is None else list(notes)\n    notes.append(", "    notes.append(")),
                     ("invoice.build_invoice",)),
        "ranking": Bug("ranking", "report.py", "report.rank_customers orders equal totals by name A to Z",
                       (("key=lambda pair: (-pair[1], pair[0]))",
                         "key=lambda pair: (pair[1], pair[0]), reverse=True)"),), ("report.rank_customers",)),
        "allocation": Bug("allocation", "payments.py", "payments.allocate pays the oldest balance first",
                          (("for index in range(len(balances)):", "for index in reversed(range(len(balances))):"),),
                          ("payments.allocate",)),
        "grace": Bug("grace", "payments.py", f"payments.late_fee charges nothing at exactly {b.grace} days",
                     (("days_overdue <= GRACE_DAYS", "days_overdue < GRACE_DAYS"),), ("payments.late_fee",)),
        "remainder_last": Bug("remainder_last", "instalments.py", "instalments.split_evenly puts the larger "
                              "instalments first", (("base + 1 if index < extra else base",
                                                     "base + 1 if index >= parts - extra else base"),),
                              ("instalments.split_evenly",)),
        "refund_share": Bug("refund_share", "refunds.py", "refunds.refund_for rounds the returned share down",
                            (("share = line_total(sku, quantity) * returned // quantity",
                              "share = -(-line_total(sku, quantity) * returned // quantity)"),),
                            ("refunds.refund_for",)),
    }


_SHARED, _PAIRS = ["rounding", "padding"], [("coupon_sign", "net_sign"), ("ship_region", "ship_base")]
_SOLO = ["volume", "rate_table", "notes", "ranking", "allocation", "grace", "refund_share", "remainder_last"]
_STUB = ("class Stub:", "    def __init__(self, customer, amount):", "        self.customer = customer",
         "        self.amount = amount", "", "    def total(self):", "        return self.amount")
_BILLING_HEADERS = {
    "money": "from money import format_cents, percent_of\n", "catalog": "from catalog import list_price\n",
    "pricing": "from pricing import line_total\n", "coupons": "from coupons import coupon_discount\n",
    "charges": "from charges import shipping_for, tax_for\n", "invoice": "from invoice import build_invoice\n",
    "payments": "from payments import allocate, late_fee\n", "statement": "from statement import statement_lines\n",
    "refunds": "from refunds import refund_for\n", "instalments": "from instalments import schedule, split_evenly\n",
    "receipts": "from invoice import build_invoice\nfrom receipts import receipt_lines\n",
    "report": "from report import rank_customers, summary\n\n\n" + "\n".join(_STUB) + "\n"}
_BILLING_HIDDEN_HEADER = ("from catalog import list_price\nfrom charges import RATES_BP, shipping_for, tax_for\n"
                          "from coupons import coupon_discount\nfrom invoice import build_invoice\n"
                          "from money import format_cents, percent_of\nfrom payments import allocate, late_fee\n"
                          "from instalments import schedule, split_evenly\nfrom pricing import line_total\n"
                          "from receipts import receipt_lines\nfrom refunds import refund_for\n"
                          "from report import rank_customers, summary\nfrom statement import statement_lines\n")


def _billing_project(rng: ItemRng) -> tuple[Project, dict[str, object]]:
    """A billing library with four planted bugs: a shared helper's, an interacting pair, and one only SPEC.md shows."""
    b = _Billing(rng)
    bugs = _billing_bugs(b)
    shared = rng.choice(_SHARED)
    pair = rng.choice(_PAIRS)
    solo = rng.choice(_SOLO)
    site = rng.choice(_rounding_sites(b)) if shared == "rounding" else None
    planted_keys = [shared, *pair, solo]
    planted = sorted((bugs[k] for k in planted_keys), key=lambda x: (_BILLING_MODULES.index(x.path), x.key))
    modules, spec = _billing_sources(b)
    hidden = _Tests(HIDDEN_PATH, _BILLING_HIDDEN_HEADER + _HIDDEN_HELPERS + "\n\n" + "\n".join(_STUB) + "\n")
    groups: dict[str, list[str]] = {key: [] for key in bugs}
    groups["regression"] = []
    twins = _Twins(hidden, groups["regression"])
    files = {name: _Tests(f"tests/test_{name}.py", header) for name, header in _BILLING_HEADERS.items()}
    _billing_visible(b, files, twins, site)
    _billing_bug_tests(b, hidden, groups)
    _billing_regressions(b, hidden, groups["regression"])
    for key in bugs:
        if key not in planted_keys:
            groups["regression"] += groups[key]
    tests = [files[name] for name in sorted(files)]
    project = Project(modules=modules, bugs=planted, documents={"SPEC.md": spec},
                      visible={t.path: t.source() for t in tests}, visible_ids=[i for t in tests for i in t.ids()],
                      hidden=hidden.source(), hidden_groups=groups)
    decoys = [name for key in sorted(bugs) if key not in planted_keys for name in bugs[key].names]
    return project, {"company": b.company, "project": b.project_name, "shared": shared, "pair": pair, "solo": solo,
                     "site": site, "decoys": decoys, "billing": b}


def _rounding_sites(b: _Billing) -> list[str]:
    """The callers where a visible test can land on a half cent that Python's round() takes the other way."""
    sites = ["tax", "late_fee"]
    if any(_banker_differs(b.prices[s] * q, b.volume_bp) for s in b.skus for q in range(b.threshold + 2,
                                                                                        b.threshold + 42)):
        sites.append("volume")
    if any(_banker_differs(b.prices[s] * r, b.restock_bp) for s in b.skus for r in range(1, b.threshold - 1)):
        sites.append("refund")
    return sites


def _billing_sources(b: _Billing) -> tuple[dict[str, str], str]:
    """The correct modules and SPEC.md, filled with the drawn facts."""
    values = {"PRICES": "\n".join(f'    "{s}": {p},' for s, p in b.prices.items()),
              "THRESHOLD": b.threshold, "VOLUME_BP": b.volume_bp,
              "RATES": "\n".join(f'    "{r}": {v},' for r, v in b.rates.items()),
              "FEES": "\n".join(f'    "{r}": {v},' for r, v in b.fees.items()),
              "FREE_OVER": b.free_over, "DEV": b.dev,
              "COUPONS": "\n".join(f'    "{c}": {v},' for c, v in b.coupons.items()),
              "MIN_SPEND": f'    "{b.min_code}": {b.min_spend},', "GRACE": b.grace, "LATE_BP": b.late_bp,
              "RESTOCK_BP": b.restock_bp}
    templates = [_MONEY, _CATALOG, _PRICING, _COUPONS, _CHARGES, _INVOICE, _PAYMENTS, _INSTALMENTS, _STATEMENT,
                 _REFUNDS, _RECEIPTS, _REPORT]
    modules = {path: _module_text(text, values) for path, text in zip(_BILLING_MODULES, templates)}
    pct = lambda bp: f"{bp / 100:g}"  # noqa: E731
    coupon_text = (f"Coupon codes: {b.min_code} ({pct(b.coupons[b.min_code])} % off, only on a subtotal of at least "
                   f"{b.min_spend} cents) and {b.free_code} ({pct(b.coupons[b.free_code])} % off, no minimum)")
    spec = _module_text(_SPEC, {
        **values, "PROJECT": b.project_name, "VOLUME_PCT": pct(b.volume_bp), "COUPON_TEXT": coupon_text,
        "PRICE_TEXT": ", ".join(f"{s} {p} cents" for s, p in b.prices.items()),
        "RATE_TEXT": ", ".join(f"{r} {pct(v)} %" for r, v in b.rates.items()),
        "FEE_TEXT": ", ".join(f"{r} {v} cents" for r, v in b.fees.items()),
        "LATE_PCT": pct(b.late_bp), "RESTOCK_PCT": pct(b.restock_bp)})
    return modules, spec


def _billing_visible(b: _Billing, files: dict[str, _Tests], twins: _Twins, site: str | None) -> None:
    """Visible tests of plain behaviour (twinned in the hidden tests); the shared helper's rounding bug shows at one
    calling site only, and no visible test reaches an edge where a lone (spec-only) bug would show."""
    rng = b.rng

    def plain_percent():
        rate = rng.choice([b.rates[r] for r in b.plain_regions])
        cents = _scan(rng, 1000, 90000, lambda c: not _half(c, rate) and c * rate % 10000 != 0)
        return _eq(f"percent_of({cents}, {rate})", _percent(cents, rate))

    def big_format():
        big = rng.randint(100000, 9999999) // 100 * 100 + rng.randint(10, 99)
        return _eq(f"format_cents({big})", dollars(big))

    twins.add(files["money"], "test_percent_of_rounds_to_cents", plain_percent)
    twins.add(files["money"], "test_format_cents", big_format)

    def price():
        sku = rng.choice(b.skus)
        return _eq(f'list_price("{sku}")', b.prices[sku])

    twins.add(files["catalog"], "test_list_price", price)
    twins.add(files["catalog"], "test_unknown_sku", lambda: _raising('list_price("no-such-sku")', "KeyError"))

    def small_line():
        sku, quantity = rng.choice(b.skus), rng.randint(1, b.threshold - 1)
        return _eq(f'line_total("{sku}", {quantity})', b.line(sku, quantity))

    def volume_line():
        start = rng.randint(2, 6)
        for quantity in range(b.threshold + start, b.threshold + start + 40):
            try:
                sku = b.volume_sku(quantity, half=site == "volume")
            except RuntimeError:
                continue
            return _eq(f'line_total("{sku}", {quantity})', b.line(sku, quantity))
        raise RuntimeError("no volume line fits")

    twins.add(files["pricing"], "test_small_line", small_line)
    twins.add(files["pricing"], "test_volume_line", volume_line)
    twins.add(files["pricing"], "test_quantity_must_be_positive",
              lambda: _raising(f'line_total("{rng.choice(b.skus)}", 0)', "ValueError"))

    def coupon_value():
        rate = b.coupons[b.free_code]
        subtotal = _scan(rng, 2000, 60000, lambda c: not _half(c, rate) and c * rate % 10000 != 0)
        return _eq(f'coupon_discount({subtotal}, "{b.free_code}")', _percent(subtotal, rate))

    def under_minimum():
        return _eq(f'coupon_discount({rng.randint(500, b.min_spend - 1)}, "{b.min_code}")', 0)

    twins.add(files["coupons"], "test_coupon_discount", coupon_value)
    twins.add(files["coupons"], "test_below_minimum_spend", under_minimum)

    _billing_visible_orders(b, files, twins, site)


def _billing_visible_orders(b: _Billing, files: dict[str, _Tests], twins: _Twins, site: str | None) -> None:
    """Visible tests of tax, shipping, coupons on invoices and payments."""
    rng = b.rng

    def tax():
        region = rng.choice(b.plain_regions)
        rate = b.rates[region]
        if site == "tax":
            amount = _scan(rng, 2000, 60000, lambda c: _banker_differs(c, rate))
        else:
            amount = _scan(rng, 2000, 60000, lambda c: not _half(c, rate))
        return _eq(f'tax_for({amount}, "{region}")', _percent(amount, rate))

    def shipping():
        region = rng.choice(b.regions)
        below, above = b.free_over - rng.randint(100, 3000), b.free_over + rng.randint(100, 3000)
        return (f'assert shipping_for({below}, "{region}") == {b.fees[region]}, shipping_for({below}, "{region}")',
                f'assert shipping_for({above}, "{region}") == 0, shipping_for({above}, "{region}")')

    twins.add(files["charges"], f"test_tax", tax)
    twins.add(files["charges"], "test_shipping", shipping)

    def plain_invoice():
        region = rng.choice(b.plain_regions)
        order = b.order(region, None, lambda x: x["net"] <= b.free_over)
        return (f'invoice = build_invoice("{rng.choice(_CUSTOMERS)}", "{region}", {order!r})',
                f"assert invoice.total() == {b.bill(order, region, None)['total']}, invoice.total()")

    def coupon_invoice():
        region = rng.choice(b.plain_regions)
        order = b.straddling(region)
        return (f'invoice = build_invoice("{rng.choice(_CUSTOMERS)}", "{region}", {order!r}, coupon="{b.free_code}")',
                f"assert invoice.total() == {b.bill(order, region, b.free_code)['total']}, invoice.total()")

    twins.add(files["invoice"], "test_invoice_total", plain_invoice)
    twins.add(files["invoice"], "test_coupon_invoice_total", coupon_invoice)
    twins.add(files["invoice"], "test_unknown_coupon", lambda: _raising(
        f'build_invoice("{rng.choice(_CUSTOMERS)}", "{b.regions[0]}", [("{b.skus[2]}", 1)], coupon="NOPE0")',
        "ValueError"))

    def single_allocation():
        balance = rng.randint(5000, 90000)
        payment = rng.randint(1000, balance - 1)
        return _eq(f"allocate({payment}, [{balance}])", ([balance - payment], 0))

    def overdue():
        days = b.grace + rng.randint(5, 40)
        if site == "late_fee":
            balance = _scan(rng, 2000, 90000, lambda c: _banker_differs(c, b.late_bp))
        else:
            balance = _scan(rng, 2000, 90000, lambda c: not _half(c, b.late_bp))
        return _eq(f"late_fee({balance}, {days})", _percent(balance, b.late_bp))

    twins.add(files["payments"], "test_allocate_part_payment", single_allocation)
    twins.add(files["payments"], "test_late_fee", overdue)

    _billing_visible_documents(b, files, twins, site)


def _billing_visible_documents(b: _Billing, files: dict[str, _Tests], twins: _Twins, site: str | None) -> None:
    """Visible tests of statements, refunds, instalments, receipts and the report."""
    rng = b.rng

    def statement():
        name = rng.choice(_CUSTOMERS)
        totals = [rng.randint(1000, 90000) for _ in range(2)]
        paid = rng.randint(1, 9) * 100 + rng.randint(1, 9)  # a single cent digit: where padding shows
        lines = [f"Statement for {name}", *(f"Invoice {n}: {dollars(t)}" for n, t in enumerate(totals, 1)),
                 f"Paid: {dollars(paid)}", f"Balance due: {dollars(sum(totals) - paid)}"]
        return _eq(f'statement_lines("{name}", {totals!r}, {paid})', lines)

    twins.add(files["statement"], "test_statement", statement)

    def refund():
        sku = rng.choice(b.skus)
        for _ in range(3000):
            quantity = rng.randint(2, b.threshold - 1)
            returned = rng.randint(1, quantity - 1)
            share = b.line(sku, quantity) * returned
            if share % quantity:
                continue
            share //= quantity
            if (site == "refund") == _banker_differs(share, b.restock_bp) and (
                    site == "refund" or not _half(share, b.restock_bp)):
                return _eq(f'refund_for("{sku}", {quantity}, {returned})', b.refund(sku, quantity, returned))
            sku = rng.choice(b.skus)
        raise RuntimeError("no refund fits")

    twins.add(files["refunds"], "test_refund", refund)

    def even_split():
        parts = rng.randint(2, 6)
        total = rng.randint(100, 900) * parts  # divides evenly: where the instalments' order cannot show
        return _eq(f"split_evenly({total}, {parts})", [total // parts] * parts)

    def plan():
        parts, first, every = rng.randint(2, 4), rng.randint(1, 28), rng.choice([7, 14, 30])
        total = rng.randint(100, 900) * parts
        return _eq(f"schedule({total}, {parts}, {first}, {every})",
                   [(first + i * every, total // parts) for i in range(parts)])

    twins.add(files["instalments"], "test_split_evenly", even_split)
    twins.add(files["instalments"], "test_schedule", plan)
    twins.add(files["instalments"], "test_parts_must_be_positive",
              lambda: _raising(f"split_evenly({rng.randint(100, 999)}, 0)", "ValueError"))

    def receipt():
        region = rng.choice(b.plain_regions)

        def tidy(x):  # every amount shown has two cent digits either way, and no shipping fee to look up
            return x["net"] > b.free_over and all(x[k] % 100 >= 10 for k in ("tax", "total"))

        for _ in range(200):
            order = b.order(region, None, tidy)
            if all(b.line(s, q) % 100 >= 10 for s, q in order):
                break
        else:
            raise RuntimeError("no receipt fits")
        bill = b.bill(order, region, None)
        lines = [f"{s} x {q}: {dollars(b.line(s, q))}" for s, q in order]
        lines += [f"Tax: {dollars(bill['tax'])}", "Shipping: $0.00", f"Total: {dollars(bill['total'])}"]
        return (f'invoice = build_invoice("{rng.choice(_CUSTOMERS)}", "{region}", {order!r})',
                *_eq("receipt_lines(invoice)", lines))

    twins.add(files["receipts"], "test_receipt", receipt)

    _billing_visible_report(b, files, twins)


def _billing_visible_report(b: _Billing, files: dict[str, _Tests], twins: _Twins) -> None:
    """Visible tests of the ranking and the summary."""
    rng = b.rng

    def ranking():
        names = b.names(3)
        amounts = rng.sample([a for a in range(1010, 99000, 7) if a % 100 >= 10], 3)
        stubs = ", ".join(f'Stub("{n}", {a})' for n, a in zip(names, amounts))
        return _eq(f"rank_customers([{stubs}])", sorted(zip(names, amounts), key=lambda p: (-p[1], p[0])))

    def summary():
        names = b.names(3)
        amounts = rng.sample([a for a in range(1010, 99000, 7) if a % 100 >= 10], 3)
        stubs = ", ".join(f'Stub("{n}", {a})' for n, a in zip(names, amounts))
        ranked = sorted(zip(names, amounts), key=lambda p: (-p[1], p[0]))
        return _eq(f"summary([{stubs}])", [f"{i}. {n}: {dollars(a)}" for i, (n, a) in enumerate(ranked, 1)])

    twins.add(files["report"], "test_rank_by_total", ranking)
    twins.add(files["report"], "test_summary", summary)


def _billing_bug_tests(b: _Billing, hidden: _Tests, groups: dict[str, list[str]]) -> None:
    """Each candidate bug's hidden tests, in its group."""
    rng = b.rng
    (c1, r1), (c2, r2) = b.half_case(), b.half_case()
    region = rng.choice(b.plain_regions)
    tax_half = _scan(rng, 2000, 60000, lambda c: _banker_differs(c, b.rates[region]))
    fee_half = _scan(rng, 2000, 90000, lambda c: _banker_differs(c, b.late_bp))
    coupon_half = _scan(rng, 2000, 60000, lambda c: _banker_differs(c, b.coupons[b.free_code]))
    quantity = b.threshold + 1
    half_skus = [s for s in b.skus if _banker_differs(b.prices[s] * quantity, b.volume_bp)]
    volume_line = [f'_same(line_total("{half_skus[0]}", {quantity}), {b.line(half_skus[0], quantity)})'] \
        if half_skus else []
    groups["rounding"] += [
        hidden.add("test_rounding_half_up", f"_same(percent_of({c1}, {r1}), {_percent(c1, r1)})",
                   f"_same(percent_of({c2}, {r2}), {_percent(c2, r2)})",
                   f"_same(percent_of({-c1}, {r1}), {_percent(-c1, r1)})"),
        hidden.add("test_rounding_at_every_caller", f'_same(tax_for({tax_half}, "{region}"), '
                   f'{_percent(tax_half, b.rates[region])})',
                   f"_same(late_fee({fee_half}, {b.grace + 3}), {_percent(fee_half, b.late_bp)})",
                   f'_same(coupon_discount({coupon_half}, "{b.free_code}"), '
                   f'{_percent(coupon_half, b.coupons[b.free_code])})', *volume_line)]
    small = [rng.randint(1, 9), -(rng.randint(1, 99) * 100 + rng.randint(1, 9)),
             rng.randint(10000, 99999) * 100 + rng.randint(1, 9)]
    names = b.names(2)
    amounts = [rng.randint(30, 99) * 100 + rng.randint(1, 9), rng.randint(1, 29) * 100 + rng.randint(1, 9)]
    groups["padding"] += [
        hidden.add("test_format_single_cent_digit", *(f"_same(format_cents({c}), {dollars(c)!r})" for c in small)),
        hidden.add("test_summary_single_cent_digit",
                   f'_same(summary([Stub("{names[0]}", {amounts[0]}), Stub("{names[1]}", {amounts[1]})]), '
                   f'{[f"1. {names[0]}: {dollars(amounts[0])}", f"2. {names[1]}: {dollars(amounts[1])}"]!r})')]
    _billing_pair_and_solo_tests(b, hidden, groups, region, names)


def _billing_pair_and_solo_tests(b: _Billing, hidden: _Tests, groups: dict[str, list[str]], region: str,
                                 names: list[str]) -> None:
    """The hidden tests of the pairs' bugs and of the bugs only SPEC.md shows."""
    rng = b.rng
    subtotals = [_scan(rng, b.min_spend, b.min_spend + 40000, lambda c: not _half(c, b.coupons[code]))
                 for code in (b.min_code, b.free_code)]
    groups["coupon_sign"].append(hidden.add(
        "test_coupon_discount_is_positive",
        *(f'_same(coupon_discount({s}, "{code}"), {_percent(s, b.coupons[code])})'
          for s, code in zip(subtotals, (b.min_code, b.free_code)))))
    order = b.order(region, b.free_code, lambda x: x["discount"] > 0, size=4)
    bill = b.bill(order, region, b.free_code)
    groups["net_sign"].append(hidden.add(
        "test_net_is_subtotal_less_discount",
        f'invoice = build_invoice("{names[0]}", "{region}", {order!r}, coupon="{b.free_code}")',
        f"_same(invoice.discount(), {bill['discount']})", f"_same(invoice.net(), {bill['net']})",
        f"_same(invoice.tax(), {bill['tax']})", f"_same(invoice.total(), {bill['total']})"))
    groups["ship_region"].append(hidden.add(
        "test_shipping_fee_of_each_region",
        *(f'_same(shipping_for({b.free_over - rng.randint(1, 2000)}, "{r}"), {b.fees[r]})' for r in b.regions)))
    order = b.straddling(region)
    bill = b.bill(order, region, b.free_code)
    groups["ship_base"].append(hidden.add(
        "test_shipping_goes_by_net_amount",
        f'invoice = build_invoice("{names[1]}", "{region}", {order!r}, coupon="{b.free_code}")',
        f"_same(invoice.shipping(), {bill['shipping']})", f"_same(invoice.total(), {bill['total']})"))
    at, under = b.volume_sku(b.threshold), rng.choice(b.skus)
    groups["volume"].append(hidden.add(
        "test_volume_boundary", f'_same(line_total("{at}", {b.threshold}), {b.line(at, b.threshold)})',
        f'_same(line_total("{under}", {b.threshold - 1}), {b.line(under, b.threshold - 1)})'))
    amounts = [b.typo_amount() for _ in range(2)]
    groups["rate_table"].append(hidden.add(
        "test_rate_table_matches_spec", *(f'_same(tax_for({a}, "{b.typo_region}"), '
                                          f'{_percent(a, b.rates[b.typo_region])})' for a in amounts)))
    first, second, third = b.names(3)
    groups["notes"] += [
        hidden.add("test_notes_fresh_per_invoice", f'build_invoice("{first}", "{region}", [("{b.skus[0]}", 1)])',
                   f'invoice = build_invoice("{second}", "{region}", [("{b.skus[1]}", 1), ("{b.skus[2]}", 1)])',
                   f'_same(invoice.notes, ["2 line(s) for {second}"])'),
        hidden.add("test_notes_caller_list_untouched", 'mine = ["rush order"]',
                   f'invoice = build_invoice("{third}", "{region}", [("{b.skus[3]}", 2)], notes=mine)',
                   '_same(mine, ["rush order"])', f'_same(invoice.notes, ["rush order", "1 line(s) for {third}"])')]
    people = sorted(b.names(3))
    tie, top = rng.randint(3000, 40000), rng.randint(50000, 90000)
    groups["ranking"].append(hidden.add(
        "test_ranking_ties_by_name",
        f'got = [tuple(p) for p in rank_customers([Stub("{people[2]}", {tie}), Stub("{people[1]}", {top}), '
        f'Stub("{people[0]}", {tie})])]', f"assert got == {[(people[1], top), (people[0], tie), (people[2], tie)]!r}"
        ", got"))
    _billing_solo_tests(b, hidden, groups)


def _billing_solo_tests(b: _Billing, hidden: _Tests, groups: dict[str, list[str]]) -> None:
    """The hidden tests of payments, instalments and refunds bugs."""
    rng = b.rng
    balances = [rng.randint(2000, 20000) for _ in range(3)]
    payment = balances[0] + rng.randint(1, balances[1] - 1)
    groups["allocation"].append(hidden.add(
        "test_allocate_oldest_first",
        f"_same(allocate({payment}, {balances!r}), ({[0, balances[1] - (payment - balances[0]), balances[2]]!r}, 0))",
        f"_same(allocate({sum(balances) + 150}, {balances!r}), ([0, 0, 0], 150))"))
    balance = _scan(rng, 2000, 90000, lambda c: not _half(c, b.late_bp))
    groups["grace"].append(hidden.add(
        "test_late_fee_grace_boundary", f"_same(late_fee({balance}, {b.grace}), 0)",
        f"_same(late_fee({balance}, {b.grace + 1}), {_percent(balance, b.late_bp)})"))
    for _ in range(500):
        sku, quantity = rng.choice(b.skus), b.threshold + rng.randint(0, 6)  # a volume line: an uneven share
        returned = rng.randint(1, quantity - 1)
        share = b.line(sku, quantity) * returned // quantity
        if b.line(sku, quantity) * returned % quantity and not _half(share, b.restock_bp) \
                and not _half(b.prices[sku] * quantity, b.volume_bp) \
                and not _half(share + 1, b.restock_bp):
            break
    else:
        raise RuntimeError("no refund share fits")
    parts = rng.randint(3, 7)
    total = rng.randint(100, 900) * parts + rng.randint(1, parts - 1)
    base, extra = divmod(total, parts)
    groups["remainder_last"].append(hidden.add(
        "test_larger_instalments_first", f"_same(split_evenly({total}, {parts}), "
                                         f"{[base + 1] * extra + [base] * (parts - extra)!r})"))
    groups["refund_share"].append(hidden.add(
        "test_refund_share_rounds_down", f'_same(refund_for("{sku}", {quantity}, {returned}), '
                                         f'{b.refund(sku, quantity, returned)})'))


def _billing_regressions(b: _Billing, hidden: _Tests, regression: list[str]) -> None:
    """Hidden tests of behaviour that was already right: the strict shipping line, refusals, ordinary figures."""
    rng = b.rng
    region = rng.choice(b.regions)
    regression.append(hidden.add("test_shipping_strictly_more", f'_same(shipping_for({b.free_over}, "{region}"), '
                                 f"{b.fees[region]})", f'_same(shipping_for({b.free_over + 1}, "{region}"), 0)'))
    rate = rng.choice([b.rates[r] for r in b.plain_regions])
    amount = _scan(rng, 100, 50000, lambda c: not _half(c, rate) and c * rate % 10000 != 0)
    regression.append(hidden.add("test_percent_of_ordinary", f"_same(percent_of({amount}, {rate}), "
                                 f"{_percent(amount, rate)})", f"_same(percent_of({-amount}, {rate}), "
                                 f"{_percent(-amount, rate)})"))
    big = rng.randint(1000, 999999) * 100 + rng.randint(10, 99)
    regression.append(hidden.add("test_format_ordinary", f"_same(format_cents({big}), {dollars(big)!r})",
                                 f"_same(format_cents({-big}), {dollars(-big)!r})"))
    regression.append(hidden.add(
        "test_refusals", '_raises(KeyError, line_total, "no-such-sku", 1)', f'_raises(ValueError, coupon_discount, '
        f'1000, "BOGUS5")', '_raises(KeyError, tax_for, 1000, "atlantis")', '_raises(KeyError, shipping_for, 1000, '
        '"atlantis")', f'_raises(ValueError, refund_for, "{b.skus[0]}", 2, 3)',
        f'_raises(ValueError, line_total, "{b.skus[0]}", 1.5)'))
    regression.append(hidden.add("test_minimum_spend", f'_same(coupon_discount({b.min_spend - 1}, "{b.min_code}"), 0)',
                                 f'_same(coupon_discount({b.min_spend}, "{b.min_code}"), '
                                 f'{_percent(b.min_spend, b.coupons[b.min_code])})'))
    regression.append(hidden.add("test_no_fee_on_nothing_owed", f"_same(late_fee(0, {b.grace + 9}), 0)",
                                 f"_same(late_fee(-500, {b.grace + 9}), 0)"))


def billing_spec(rng: ItemRng) -> AgTask:
    """Make a billing library follow its SPEC.md: four bugs, a shared helper's, an interacting pair, and one that no
    test shows."""
    project, facts = _billing_project(rng)
    prompt = _billing_prompt(facts, rng.randint(1000, 9999))
    answer = ", ".join(bug.names[0] for bug in project.bugs)
    return _assemble(project, prompt, _billing_reference(project, facts, answer),
                     lambda submitted: _names_answer_ok(submitted, project.bugs, facts["decoys"]),
                     "the answer names, as module.name, every function or constant that held a bug, and none of "
                     "the project's other candidates")


_SITE_FILES = {"tax": "tests/test_charges.py", "late_fee": "tests/test_payments.py", "volume": "tests/test_pricing.py",
               "refund": "tests/test_refunds.py"}


def _billing_reference(project: Project, facts: dict[str, object], answer: str) -> list[Call]:
    """Read the spec and run the tests; read the failing tests and every module; fix the shared helper, then the
    pair one side at a time with a test run after each, then the bug only the spec shows."""
    files = project.files()
    bugs = {bug.key: bug for bug in project.bugs}
    failing = {"padding": ["tests/test_statement.py"], "rounding": [_SITE_FILES.get(str(facts["site"]), "")]}[
        str(facts["shared"])]
    failing += {"coupon_sign": ["tests/test_coupons.py"], "ship_region": ["tests/test_charges.py",
                                                                          "tests/test_invoice.py"]}[facts["pair"][0]]
    calls = [Call("list_files"), *_read_calls(files, "SPEC.md"), Call("run_tests")]
    for path in sorted(set(failing)):
        calls += _read_calls(files, path)
    for path in _BILLING_MODULES:
        calls += _read_calls(files, path)
    shared = bugs[str(facts["shared"])]
    calls += [Call("search_code", {"text": shared.names[0].split(".")[1] + "("}), *project.fix_calls(shared),
              Call("run_tests")]
    first, second = (bugs[k] for k in facts["pair"])
    calls += [*project.fix_calls(first), Call("run_tests")]
    if "tests/test_invoice.py" not in failing:  # the pair's other half now shows in the invoice tests
        calls += _read_calls(files, "tests/test_invoice.py")
    calls += [*project.fix_calls(second), Call("run_tests")]
    calls += [*project.fix_calls(bugs[str(facts["solo"])]), Call("run_tests"), Call("submit", {"answer": answer})]
    return calls


def _billing_prompt(facts: dict[str, object], ticket: int) -> str:
    """The ticket: make the library follow its spec, and name what was changed."""
    return (f"Ticket FIN-{ticket}: {facts['company']} uses `{facts['project']}`, a small Python billing library "
            "(every amount is an int number of cents). Its files: SPEC.md (the billing rules), twelve modules "
            "(money, catalog, pricing, coupons, charges, invoice, payments, instalments, statement, refunds, "
            "receipts, report) and tests in tests/. Some tests fail, and the tests do not cover every rule: SPEC.md is authoritative. Make the "
            "code follow SPEC.md everywhere. Fix each bug where it originates (a helper that several modules "
            "call is fixed in the helper, not patched at each caller), and do not change behaviour that already "
            "follows the spec. Your final code will be checked by hidden tests based on SPEC.md, including the "
            "visible tests' checks on other values, together with the original visible tests (edits to test "
            "files are ignored). When you are done, call submit with the functions or constants you changed, as "
            "module.name (module.Class.method for a method), comma-separated.")


# ---------------------------------------------------------------- task 2: room booking library and its issue reports

_ORGS = ["the Halden Institute", "Quarry Lane Studios", "Brightwater Clinic", "the Oxbow Co-op", "Fennick & Rowe",
         "Larchmont Library", "the Tessera Foundation", "Corvid Analytics", "Saltmarsh School", "Wrenfield Council",
         "Meridian Dental", "Ironbridge Works", "Pallas Robotics", "Cobalt Theatre"]
_BOOKING_PROJECTS = ["roomkeeper", "bookit", "slotwise", "deskmate", "meetspace", "agendary", "hallpass"]
_ROOMS = ["Aster", "Birch", "Cedar", "Dahlia", "Elm", "Fir", "Gorse", "Hazel", "Iris", "Juniper", "Laurel", "Maple"]
_TITLES = ["Standup", "Retro", "Budget review", "Design crit", "Hiring panel", "Board prep", "Team lunch",
           "Onboarding", "Sprint planning", "Vendor call", "Town hall", "Training", "Offsite prep", "Check-in"]
_REPORTERS = ["Ines", "Tomasz", "Priya", "Gareth", "Yuki", "Olu", "Marta", "Dev", "Sanne", "Rafael", "Amara", "Lev"]

_CLOCK = '''\
"""Clock times as minutes after midnight, written in 12-hour form like '9:05 am'."""


def parse_time(text):
    """'9:05 am' -> 545. '12:00 am' is midnight (0); '12:00 pm' is noon (720), so '12:30 pm' -> 750."""
    clock, _, suffix = text.strip().lower().partition(" ")
    hours_text, _, minutes_text = clock.partition(":")
    hours, minutes = int(hours_text), int(minutes_text)
    if suffix not in ("am", "pm") or not 1 <= hours <= 12 or not 0 <= minutes < 60:
        raise ValueError(f"not a clock time: {text!r}")
    hours = hours % 12 + (12 if suffix == "pm" else 0)
    return hours * 60 + minutes


def format_time(minutes):
    """545 -> '9:05 am'; 0 -> '12:00 am'; 750 -> '12:30 pm' (the hour is not zero-padded)."""
    hours, minutes = divmod(minutes, 60)
    suffix = "am" if hours < 12 else "pm"
    return f"{hours % 12 or 12}:{minutes:02d} {suffix}"


def minutes_between(earlier, later):
    """How many minutes `later` comes after `earlier`; negative when it comes before."""
    return later - earlier
'''

_INTERVALS = '''\
"""Spans of time as (start, end) minutes. A span is half-open: it includes its start and excludes its end."""


def overlaps(a, b):
    """True when spans a and b share at least one minute; spans that only touch (one ends as the other starts)
    do not overlap."""
    return a[0] < b[1] and b[0] < a[1]


def merge(spans):
    """Busy blocks in time order: spans that overlap or touch join into one block."""
    blocks = []
    for start, end in sorted(spans):
        if blocks and start <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], max(blocks[-1][1], end))
        else:
            blocks.append((start, end))
    return blocks
'''

_ROOMS_MODULE = '''\
"""Meeting rooms and their bookings; times are minutes after midnight."""

from collections import namedtuple

from intervals import overlaps

Booking = namedtuple("Booking", "title start end attendees room")


class Room:
    """A bookable room."""

    def __init__(self, name, capacity, bookings=None):
        """Each room keeps its own list of bookings; a list passed in is copied, never shared."""
        self.name = name
        self.capacity = capacity
        self.bookings = [] if bookings is None else list(bookings)

    def book(self, title, start, end, attendees):
        """Book the span (start, end) for `attendees` people and return the Booking.

        ValueError when the span is empty, when more than `capacity` people would attend (exactly
        `capacity` is fine), or when the span overlaps one of the room's bookings.
        """
        if not start < end:
            raise ValueError("a booking must end after it starts")
        if attendees > self.capacity:
            raise ValueError(f"{self.name} holds at most {self.capacity} people")
        for other in self.bookings:
            if overlaps((start, end), (other.start, other.end)):
                raise ValueError(f"{title!r} conflicts with {other.title!r}")
        booking = Booking(title, start, end, attendees, self.name)
        self.bookings.append(booking)
        return booking
'''

_AGENDA = '''\
"""The day agenda and free slots."""

from clock import format_time, minutes_between
from intervals import merge


def day_agenda(rooms):
    """One line per booking of the given rooms, like '9:05 am-10:00 am Aster: Standup'; earliest start first,
    equal starts in room-name order (A to Z)."""
    entries = [booking for room in rooms for booking in room.bookings]
    entries.sort(key=lambda b: (b.start, b.room))
    return [f"{format_time(b.start)}-{format_time(b.end)} {b.room}: {b.title}" for b in entries]


def free_slots(room, opening, closing, min_minutes):
    """The (start, end) gaps of at least `min_minutes` between `opening` and `closing` that none of the room's
    bookings covers, in time order."""
    slots, cursor = [], opening
    for start, end in merge((b.start, b.end) for b in room.bookings):
        start = min(start, closing)
        if minutes_between(cursor, start) >= min_minutes:
            slots.append((cursor, start))
        cursor = max(cursor, end)
    if minutes_between(cursor, closing) >= min_minutes:
        slots.append((cursor, closing))
    return slots
'''

_POLICY = '''\
"""Cancellation fees. Here times are minutes since the calendar's start (day x 1440 + minute of the day)."""

from clock import minutes_between

FREE_NOTICE_HOURS = <<FREE_HOURS>>
LATE_NOTICE_HOURS = <<LATE_HOURS>>
LATE_PERCENT = <<LATE_PERCENT>>


def late_fee(price_cents):
    """LATE_PERCENT % of the price, rounded down to a whole cent (in the customer's favour)."""
    return price_cents * LATE_PERCENT // 100


def cancellation_fee(price_cents, starts_at, cancelled_at):
    """The fee for cancelling a booking that starts at `starts_at`, cancelled at `cancelled_at`.

    The notice is how long before the start the cancellation came. With at least FREE_NOTICE_HOURS of notice
    cancelling is free; with at least LATE_NOTICE_HOURS it costs late_fee(price); with less notice, or after
    the booking has started, the full price is due.
    """
    notice = minutes_between(cancelled_at, starts_at)
    if notice >= FREE_NOTICE_HOURS * 60:
        return 0
    if notice >= LATE_NOTICE_HOURS * 60:
        return late_fee(price_cents)
    return price_cents
'''


_AVAILABILITY = '''\
"""Finding a free room for a meeting given as clock text, like '9:05 am'."""

from clock import parse_time
from intervals import overlaps


def is_free(room, start, end):
    """True when none of the room's bookings overlaps the span (start, end) of minutes."""
    return not any(overlaps((start, end), (b.start, b.end)) for b in room.bookings)


def find_rooms(rooms, start_text, end_text, people):
    """The names of the rooms that seat `people` and are free from `start_text` to `end_text`, smallest
    capacity first and equal capacities in name order (A to Z).

    ValueError when the meeting does not end after it starts.
    """
    start, end = parse_time(start_text), parse_time(end_text)
    if not start < end:
        raise ValueError("the meeting must end after it starts")
    fitting = [room for room in rooms if room.capacity >= people and is_free(room, start, end)]
    return [room.name for room in sorted(fitting, key=lambda room: (room.capacity, room.name))]
'''

_SERIES = '''\
"""Weekly series of meetings; days are numbered from the calendar's start (day 0)."""

from clock import parse_time


def occurrences(first_day, start_text, end_text, weeks, skip_days=()):
    """(day, start, end) for each meeting of a weekly series, in order: `weeks` weeks from `first_day`, one
    meeting every 7 days, with the days in `skip_days` (holidays) left out; start and end are minutes after
    midnight.

    ValueError when a meeting does not end after it starts.
    """
    start, end = parse_time(start_text), parse_time(end_text)
    if not start < end:
        raise ValueError("a meeting must end after it starts")
    days = [first_day + 7 * week for week in range(weeks)]
    return [(day, start, end) for day in days if day not in skip_days]
'''

_HIRE = '''\
"""Room hire charges; times are minutes after midnight."""

from clock import minutes_between

MINIMUM_MINUTES = 60


def billed_minutes(start, end):
    """The minutes charged for a hire from `start` to `end`: its length rounded up to a whole half hour,
    and never less than MINIMUM_MINUTES. ValueError when the hire does not end after it starts."""
    length = minutes_between(start, end)
    if length <= 0:
        raise ValueError("a hire must end after it starts")
    halves = -(-length // 30)
    return max(MINIMUM_MINUTES, halves * 30)


def hire_cost(start, end, hourly_cents):
    """The charge in cents: the billed minutes at `hourly_cents` an hour, rounded down to a whole cent."""
    return billed_minutes(start, end) * hourly_cents // 60
'''

_USAGE = '''\
"""Room usage over a day; times are minutes after midnight."""

from clock import minutes_between
from intervals import merge


def booked_minutes(room, opening, closing):
    """The minutes between `opening` and `closing` that the room's bookings cover; time outside the opening
    hours does not count, and overlapping bookings count once."""
    total = 0
    for start, end in merge((b.start, b.end) for b in room.bookings):
        start, end = max(start, opening), min(end, closing)
        if start < end:
            total += minutes_between(start, end)
    return total


def usage_report(rooms, opening, closing):
    """(name, booked minutes, booked share of the opening hours in whole percent rounded down) for each room,
    busiest first and equal figures in name order (A to Z)."""
    hours = minutes_between(opening, closing)
    rows = [(room.name, booked_minutes(room, opening, closing)) for room in rooms]
    rows = [(name, booked, booked * 100 // hours) for name, booked in rows]
    return sorted(rows, key=lambda row: (-row[1], row[0]))
'''

_BOOKING_MODULES = ["clock.py", "intervals.py", "rooms.py", "agenda.py", "availability.py", "series.py", "hire.py",
                    "usage.py", "policy.py"]




def _clock(minutes: int) -> str:
    hours, rest = divmod(minutes, 60)
    return f"{hours % 12 or 12}:{rest:02d} {'am' if hours < 12 else 'pm'}"


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    blocks: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if blocks and start <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], max(blocks[-1][1], end))
        else:
            blocks.append((start, end))
    return blocks


def _free(spans: list[tuple[int, int]], opening: int, closing: int, least: int) -> list[tuple[int, int]]:
    slots, cursor = [], opening
    for start, end in _merged(spans):
        start = min(start, closing)
        if start - cursor >= least:
            slots.append((cursor, start))
        cursor = max(cursor, end)
    if closing - cursor >= least:
        slots.append((cursor, closing))
    return slots


def _book_line(title: str, start: int, end: int, room: str, people: int = 3) -> str:
    """A Booking(...) expression for a test."""
    return f'Booking("{title}", {start}, {end}, {people}, "{room}")'


def _agenda_line(title: str, start: int, end: int, room: str) -> str:
    """One line of day_agenda's output."""
    return f"{_clock(start)}-{_clock(end)} {room}: {title}"




_BOOKING_BUGS = {
    "noon": Bug("noon", "clock.py", "clock.parse_time reads 12:xx pm as just after noon",
                (("    hours = hours % 12 + (12 if suffix == \"pm\" else 0)\n",
                  "    if suffix == \"pm\":\n        hours += 12\n    elif hours == 12:\n        hours = 0\n"),)),
    "touching": Bug("touching", "intervals.py", "intervals.overlaps treats touching spans as not overlapping",
                    (("return a[0] < b[1] and b[0] < a[1]", "return a[0] <= b[1] and b[0] <= a[1]"),)),
    "direction": Bug("direction", "clock.py", "clock.minutes_between counts from `earlier` to `later`",
                     (("    return later - earlier\n", "    return earlier - later\n"),)),
    "notice": Bug("notice", "policy.py", "policy.cancellation_fee measures the notice before the start",
                  (("notice = minutes_between(cancelled_at, starts_at)",
                    "notice = minutes_between(starts_at, cancelled_at)"),)),
    "capacity": Bug("capacity", "rooms.py", "Room.book accepts exactly `capacity` attendees",
                    (("if attendees > self.capacity:", "if attendees >= self.capacity:"),)),
    "shared": Bug("shared", "rooms.py", "each Room keeps its own bookings list",
                  (("def __init__(self, name, capacity, bookings=None):",
                    "def __init__(self, name, capacity, bookings=[]):"),
                   ("self.bookings = [] if bookings is None else list(bookings)", "self.bookings = bookings"))),
    "order": Bug("order", "agenda.py", "agenda.day_agenda orders bookings by start time, then room name",
                 (("entries.sort(key=lambda b: (b.start, b.room))",
                   "entries.sort(key=lambda b: (format_time(b.start), b.room))"),)),
    "hire_round": Bug("hire_round", "hire.py", "hire.billed_minutes rounds up to a whole half hour",
                      (("    halves = -(-length // 30)\n", "    halves = length // 30\n"),)),
    "usage_clip": Bug("usage_clip", "usage.py", "usage.booked_minutes counts only the opening hours",
                      (("start, end = max(start, opening), min(end, closing)", "end = min(end, closing)"),)),
}
_BOOKING_ROOTS = {"touching": ("rooms", "availability"), "noon": ("availability", "series")}  # -> symptom sites
_BOOKING_THIRD = ["capacity", "shared", "order", "hire_round", "usage_clip"]
_BOOKING_DECLINES = ["fee_rounding", "merge_touching", "hire_minimum"]
_HEADER_ROOMS = "from rooms import Booking, Room\n"
_ROOM_STUB = "class StubRoom:\n    def __init__(self, *bookings):\n        self.bookings = list(bookings)\n"
_BOOKING_HEADERS = {
    "clock": "from clock import format_time, parse_time\n", "intervals": "from intervals import merge, overlaps\n",
    "rooms": _HEADER_ROOMS, "agenda": "from agenda import day_agenda, free_slots\n" + _HEADER_ROOMS + "\n\n" + _ROOM_STUB,
    "availability": "from availability import find_rooms\n" + _HEADER_ROOMS, "series": "from series import occurrences\n",
    "hire": "from hire import billed_minutes, hire_cost\n",
    "usage": "from usage import booked_minutes, usage_report\n" + _HEADER_ROOMS, "policy": "from policy import cancellation_fee, late_fee\n"}
_BOOKING_HIDDEN_HEADER = ("from agenda import day_agenda, free_slots\nfrom availability import find_rooms, is_free\n"
                          "from clock import format_time, minutes_between, parse_time\n"
                          "from hire import billed_minutes, hire_cost\nfrom intervals import merge, overlaps\n"
                          "from policy import cancellation_fee, late_fee\nfrom series import occurrences\n"
                          "from usage import booked_minutes, usage_report\n" + _HEADER_ROOMS)


@dataclass
class _Booking:
    """A drawn booking library's facts: its rooms, capacity, cancellation policy, meeting titles and reporters."""

    rng: ItemRng
    project_name: str
    org: str
    rooms: list[str]
    capacity: int
    free_hours: int
    late_hours: int
    late_percent: int
    titles: list[str]
    reporters: list[str]
    issue_ids: list[int]

    def price(self) -> int:
        return _scan(self.rng, 1200, 30000, lambda p: p * self.late_percent % 100 >= 50)

    def billed(self, start: int, end: int) -> int:
        return max(60, -(-(end - start) // 30) * 30)


def _booking_project(rng: ItemRng) -> tuple[Project, dict[str, object]]:
    """A room-booking library with four planted bugs behind five of seven reports: a shared helper's bug reported
    twice from two callers, a pair where fixing the helper (reported twice) exposes the bug it masked, and one more;
    and two reports asking for documented behaviour to change."""
    booking = _Booking(rng, rng.choice(_BOOKING_PROJECTS), rng.choice(_ORGS), sorted(rng.sample(_ROOMS, 7)),
                       rng.randint(4, 16), rng.choice([24, 36, 48, 72]), rng.choice([2, 3, 4, 6, 12]),
                       rng.choice([25, 30, 40, 60, 75]), rng.sample(_TITLES, 10), rng.sample(_REPORTERS, 7),
                       rng.sample(range(101, 990), 7))
    root = rng.choice(sorted(_BOOKING_ROOTS))
    site = rng.choice(_BOOKING_ROOTS[root])  # where a visible test shows the shared bug
    third = rng.choice(_BOOKING_THIRD)
    declines = sorted(rng.sample(_BOOKING_DECLINES, 2))
    planted_keys = [root, "direction", "notice", third]
    planted = sorted((_BOOKING_BUGS[k] for k in planted_keys), key=lambda b: (_BOOKING_MODULES.index(b.path), b.key))
    values = {"FREE_HOURS": booking.free_hours, "LATE_HOURS": booking.late_hours,
              "LATE_PERCENT": booking.late_percent}
    templates = [_CLOCK, _INTERVALS, _ROOMS_MODULE, _AGENDA, _AVAILABILITY, _SERIES, _HIRE, _USAGE, _POLICY]
    modules = {path: _module_text(text, values) for path, text in zip(_BOOKING_MODULES, templates)}
    issues, numbers = _issue_reports(booking, root, third, declines)
    hidden = _Tests(HIDDEN_PATH, _BOOKING_HIDDEN_HEADER + _HIDDEN_HELPERS + "\n\n" + _ROOM_STUB)
    groups: dict[str, list[str]] = {key: [] for key in _BOOKING_BUGS}
    groups["regression"] = []
    twins = _Twins(hidden, groups["regression"])
    files = {name: _Tests(f"tests/test_{name}.py", header) for name, header in _BOOKING_HEADERS.items()}
    _booking_visible(booking, files, twins, root, site)
    _booking_bug_tests(booking, hidden, groups)
    _booking_regressions(booking, hidden, groups["regression"])
    for key in _BOOKING_BUGS:
        if key not in planted_keys:
            groups["regression"] += groups[key]
    tests = [files[name] for name in sorted(files)]
    project = Project(modules=modules, bugs=planted, documents={"ISSUES.md": issues},
                      visible={t.path: t.source() for t in tests}, visible_ids=[i for t in tests for i in t.ids()],
                      hidden=hidden.source(), hidden_groups=groups)
    fixed = sorted(numbers[k] for k in numbers if k not in declines)
    return project, {"org": booking.org, "project": booking.project_name, "fixed": fixed,
                     "declined": sorted(numbers[k] for k in declines), "issue_ids": sorted(booking.issue_ids),
                     "root": root, "site": site, "third": third, "numbers": numbers}


def _issue_reports(booking: _Booking, root: str, third: str, declines: list[str]) -> tuple[str, dict[str, int]]:
    """ISSUES.md, with values the buggy code really produces, and each report's issue number (by report key)."""
    rng, rooms, titles, capacity = booking.rng, booking.rooms, booking.titles, booking.capacity
    a = rng.randint(8, 9) * 60 + rng.choice([0, 15, 30])
    b, c = a + 60, a + 120
    minute = rng.randint(5, 40)
    reports: dict[str, tuple[str, str]] = {}
    if root == "touching":
        reports["touching_rooms"] = (
            "Back-to-back meetings refused",
            f'{rooms[0]} had "{titles[0]}" from {_clock(a)} to {_clock(b)}. Booking "{titles[1]}" from {_clock(b)} to '
            f"{_clock(c)} in the same room failed with \"'{titles[1]}' conflicts with '{titles[0]}'\". I think "
            "Room.book should simply skip the overlap check when one meeting ends exactly as the other starts.")
        reports["touching_availability"] = (
            "find_rooms leaves out a room that is free",
            f'{rooms[1]} seats {capacity + 4} and its only booking ends at {_clock(b)}. find_rooms(rooms, '
            f'"{_clock(b)}", "{_clock(c)}", 2) does not list {rooms[1]}.')
    else:
        reports["noon_availability"] = (
            "Lunchtime room search fails",
            f'find_rooms(rooms, "12:{minute:02d} pm", "1:30 pm", 4) fails with "the meeting must end after it '
            'starts". Morning searches work.')
        reports["noon_series"] = (
            "Weekly lunch series cannot be created",
            f'occurrences(3, "12:{minute + 5:02d} pm", "1:{minute:02d} pm", 6) fails with "a meeting must end after '
            'it starts", but the lunch clearly ends after it starts. A 1:00 pm series works.')
    reports["direction"] = (
        "free_slots finds no gaps",
        f'{rooms[2]} has one meeting, {_clock(a)} to {_clock(b)}. free_slots(room, {8 * 60 - 60}, {18 * 60}, 30) '
        "returns [] although the rest of the day is empty.")
    hired = rng.randint(9, 15) * 60 + rng.choice([0, 30])
    reports["direction_hire"] = (
        "Hire quotes fail", f"hire_cost({hired}, {hired + 90}, {rng.randint(20, 60) * 100}) fails with \"a hire must "
        "end after it starts\". The hire runs for an hour and a half.")
    reports["capacity"] = ("Full room refused",
                           f"{rooms[3]} seats {capacity}. Booking it for exactly {capacity} people "
                           f'fails with "{rooms[3]} holds at most {capacity} people", which is exactly what it holds.')
    reports["shared"] = ("Bookings show up in the wrong room", f"Our setup script creates every room with "
                         f'Room(name, capacity). After booking "{titles[2]}" in {rooms[4]}, the new room {rooms[5]} '
                         "already listed that booking.")
    late, early = rng.randint(10, 11) * 60 + rng.choice([0, 15, 30, 45]), 9 * 60 + rng.choice([0, 15, 30, 45])
    reports["order"] = ("Agenda out of order",
                        f'The day agenda listed "{_agenda_line(titles[3], late, late + 30, rooms[0])}" above '
                        f'"{_agenda_line(titles[4], early, early + 45, rooms[4])}". The earlier meeting should come '
                        "first.")
    reports["usage_clip"] = ("Usage report counts time before opening",
                             f"{rooms[6]} is booked from {_clock(7 * 60)} to {_clock(9 * 60)} for the cleaners, but we "
                             f"open at {_clock(8 * 60)}: usage_report(rooms, {8 * 60}, {18 * 60}) counts the hour "
                             "before opening as booked time too.")
    reports["hire_round"] = ("Started half hours not billed", "We bill every started half hour, as the hire "
                             "docstring says, but billed_minutes drops a started half hour: a 70-minute hire "
                             "comes to 60 billed minutes.")
    price = booking.price()
    reports["fee_rounding"] = ("Late fee rounds the wrong way", f"Cancelling a {price}-cent booking "
                               f"{booking.late_hours} hours ahead cost {price * booking.late_percent // 100} cents, "
                               f"but {booking.late_percent} % of {price} is {price * booking.late_percent / 100:g}. "
                               f"Fees should be rounded to the nearest cent, so "
                               f"{price * booking.late_percent // 100 + 1} cents.")
    reports["merge_touching"] = ("Free-slot finder glues separate meetings", f'intervals.merge turns "{titles[5]}" '
                                 f"({_clock(a)}-{_clock(b)}) and \"{titles[6]}\" ({_clock(b)}-{_clock(c)}) into one "
                                 f"busy block from {_clock(a)} to {_clock(c)}. They are two meetings; merge should "
                                 "keep them apart.")
    reports["hire_minimum"] = ("Short hires overcharged", "A 20-minute hire is billed as a full hour. It should be "
                               "billed as one half hour, like every other started half hour.")
    keys = [k for k in reports if k.startswith(root)] + ["direction", "direction_hire", third, *declines]
    rng.shuffle(keys)
    numbers = dict(zip(keys, booking.issue_ids))
    issues = "# Open issues\n\n" + "\n\n".join(
        f"## #{numbers[key]}: {reports[key][0]}\n\nReported by {booking.reporters[i]}. {reports[key][1]}"
        for i, key in enumerate(keys)) + "\n"
    return issues, numbers


def _booking_visible(booking: _Booking, files: dict[str, _Tests], twins: _Twins, root: str, site: str) -> None:
    """Visible tests (twinned in the hidden tests): the shared bug shows at one of its two callers, the reported
    half of the pair shows in agenda and hire tests, the masked half's tests pass, the third bug shows nowhere."""
    rng, rooms, titles, capacity = booking.rng, booking.rooms, booking.titles, booking.capacity

    def parse():
        am, pm = rng.randint(1, 11) * 60 + rng.randint(0, 59), rng.randint(13, 23) * 60 + rng.randint(0, 59)
        return (f'assert parse_time("{_clock(am)}") == {am}, parse_time("{_clock(am)}")',
                f'assert parse_time("{_clock(pm)}") == {pm}, parse_time("{_clock(pm)}")')

    def fmt():
        pm = rng.randint(13, 23) * 60 + rng.randint(0, 59)
        return _eq(f"format_time({pm})", _clock(pm))

    twins.add(files["clock"], "test_parse_time", parse)
    twins.add(files["clock"], "test_format_time", fmt)

    def overlapping():
        s = rng.randint(8, 15) * 60
        return (f"assert overlaps(({s}, {s + 60}), ({s + 30}, {s + 90}))",
                f"assert not overlaps(({s}, {s + 60}), ({s + 90}, {s + 120}))")

    def merging():
        s = rng.randint(8, 15) * 60
        spans = [(s + 120, s + 180), (s, s + 60), (s + 30, s + 90)]
        return _eq(f"merge({spans!r})", _merged(spans))

    twins.add(files["intervals"], "test_overlaps", overlapping)
    twins.add(files["intervals"], "test_merge_overlapping", merging)

    def conflict():
        s = rng.randint(8, 15) * 60
        return (f'room = Room("{rng.choice(rooms)}", {capacity})', f'room.book("{titles[0]}", {s}, {s + 60}, 2)',
                *_raising(f'room.book("{titles[1]}", {s + 30}, {s + 90}, 2)', "ValueError"))

    def back_to_back():
        s = rng.randint(8, 15) * 60 + rng.choice([0, 15, 30])
        return (f'room = Room("{rng.choice(rooms)}", {capacity})', f'room.book("{titles[2]}", {s}, {s + 45}, 2)',
                f'booking = room.book("{titles[3]}", {s + 45}, {s + 90}, 2)', f"assert booking.start == {s + 45}, "
                "booking")

    twins.add(files["rooms"], "test_conflict_refused", conflict)
    if root == "touching" and site == "rooms":
        twins.add(files["rooms"], "test_back_to_back", back_to_back)

    _booking_visible_rooms(booking, files, twins, root, site)


def _booking_visible_rooms(booking: _Booking, files: dict[str, _Tests], twins: _Twins, root: str, site: str) -> None:
    """Visible tests of agenda and availability (twinned)."""
    rng, rooms, titles, capacity = booking.rng, booking.rooms, booking.titles, booking.capacity

    def agenda():
        spans = [(8 * 60 + rng.choice([0, 15]), 8 * 60 + 45), (9 * 60 + rng.choice([0, 30]), 9 * 60 + 50)]
        pair = rng.sample(rooms, 2)
        return _eq(f"day_agenda([StubRoom({_book_line(titles[0], *spans[1], pair[0])}), "
                   f"StubRoom({_book_line(titles[1], *spans[0], pair[1])})])",
                   [_agenda_line(titles[1], *spans[0], pair[1]), _agenda_line(titles[0], *spans[1], pair[0])])

    def slots():
        busy = [(9 * 60, 10 * 60), (rng.randint(11, 13) * 60, 14 * 60 + 30)]
        stub = ", ".join(_book_line(t, *span, rooms[2]) for t, span in zip(titles[4:], busy))
        least = rng.choice([30, 45, 60])
        return _eq(f"free_slots(StubRoom({stub}), {8 * 60}, {18 * 60}, {least})", _free(busy, 8 * 60, 18 * 60, least))

    twins.add(files["agenda"], "test_morning_agenda", agenda)
    twins.add(files["agenda"], "test_free_slots", slots)

    def find(after: bool):
        def make():
            hour = rng.randint(8, 10) * 60
            names, caps = rng.sample(rooms, 3), sorted(rng.sample(range(4, 30), 3))
            start = hour + 60 if after else hour + 90
            made = ", ".join(f'Room("{n}", {cap})' for n, cap in zip(names, caps))
            return (f"rooms = [{made}]", f'rooms[0].book("{titles[5]}", {hour}, {hour + 60}, 2)',
                    f'rooms[2].book("{titles[6]}", {start}, {start + 30}, 2)',
                    *_eq(f'find_rooms(rooms, "{_clock(start)}", "{_clock(start + 30)}", 2)', names[:2]))
        return make

    twins.add(files["availability"], "test_find_rooms", find(False))
    if root == "touching" and site == "availability":
        twins.add(files["availability"], "test_find_rooms_right_after_a_meeting", find(True))
    if root == "noon" and site == "availability":
        def lunch():
            minute = rng.randint(1, 45)
            names, caps = rng.sample(rooms, 2), sorted(rng.sample(range(4, 30), 2))
            made = ", ".join(f'Room("{n}", {cap})' for n, cap in zip(names, caps))
            return (f"rooms = [{made}]",
                    f'rooms[0].book("{titles[7]}", {12 * 60 + minute}, {13 * 60 + minute}, 2)',
                    *_eq(f'find_rooms(rooms, "12:{minute:02d} pm", "1:{minute:02d} pm", 2)', [names[1]]))
        twins.add(files["availability"], "test_find_rooms_at_lunchtime", lunch)

    _booking_visible_charges(booking, files, twins, root, site)


def _booking_visible_charges(booking: _Booking, files: dict[str, _Tests], twins: _Twins, root: str, site: str) -> None:
    """Visible tests of series, hire, usage and policy (twinned)."""
    rng, rooms, titles, capacity = booking.rng, booking.rooms, booking.titles, booking.capacity

    def weekly():
        first, weeks = rng.randint(0, 6), rng.randint(3, 6)
        start = rng.randint(9, 11) * 60 + rng.choice([0, 15, 30])
        skip = first + 7 * rng.randint(1, weeks - 1)
        expected = [(first + 7 * w, start, start + 45) for w in range(weeks) if first + 7 * w != skip]
        return _eq(f'occurrences({first}, "{_clock(start)}", "{_clock(start + 45)}", {weeks}, ({skip},))', expected)

    twins.add(files["series"], "test_weekly_series", weekly)
    if root == "noon" and site == "series":
        def lunch_series():
            minute = rng.randint(1, 45)
            first, weeks = rng.randint(0, 6), rng.randint(2, 4)
            return _eq(f'occurrences({first}, "12:{minute:02d} pm", "1:{minute:02d} pm", {weeks})',
                       [(first + 7 * w, 720 + minute, 780 + minute) for w in range(weeks)])
        twins.add(files["series"], "test_lunch_series", lunch_series)

    def hire():
        start = rng.randint(8, 15) * 60 + rng.choice([0, 30])
        end = start + rng.choice([90, 120, 150, 180])
        rate = rng.randint(20, 90) * 100
        return _eq(f"hire_cost({start}, {end}, {rate})", (end - start) * rate // 60)

    twins.add(files["hire"], "test_hire_cost", hire)

    def usage():
        names = sorted(rng.sample(rooms, 2))
        first, second = rng.randint(9, 11) * 60, rng.randint(13, 15) * 60
        spans = {names[0]: [(first, first + 90)], names[1]: [(second, second + 60), (second + 30, second + 120)]}
        made = [f'Room("{n}", {capacity})' for n in names]
        books = [f'rooms[{i}].book("{titles[7 + i + j]}", {s}, {e}, 2)' for i, n in enumerate(names)
                 for j, (s, e) in enumerate(spans[n][:1])]
        rows = sorted([(n, e - s, (e - s) * 100 // 600) for n, [(s, e), *_] in spans.items()],
                      key=lambda r: (-r[1], r[0]))
        return (f"rooms = [{', '.join(made)}]", *books, *_eq(f"usage_report(rooms, {8 * 60}, {18 * 60})", rows))

    twins.add(files["usage"], "test_usage_report", usage)

    def fee():
        price = rng.randint(10, 200) * 100
        return _eq(f"late_fee({price})", price * booking.late_percent // 100)

    def short():
        price, start = rng.randint(10, 200) * 100, rng.randint(3, 9) * 1440 + rng.randint(8, 17) * 60
        return _eq(f"cancellation_fee({price}, {start}, {start - 30})", price)

    def early():
        price, start = rng.randint(10, 200) * 100, rng.randint(5, 9) * 1440 + rng.randint(8, 17) * 60
        return _eq(f"cancellation_fee({price}, {start}, {start - booking.free_hours * 60 - 1440})", 0)

    twins.add(files["policy"], "test_late_fee", fee)
    twins.add(files["policy"], "test_short_notice_pays_full", short)
    twins.add(files["policy"], "test_early_cancellation_is_free", early)


def _booking_bug_tests(booking: _Booking, hidden: _Tests, groups: dict[str, list[str]]) -> None:
    """Each candidate bug's hidden tests, in its group."""
    rng, rooms, titles, capacity = booking.rng, booking.rooms, booking.titles, booking.capacity
    free_hours, late_hours, late_percent = booking.free_hours, booking.late_hours, booking.late_percent
    m1, m2 = rng.randint(1, 59), rng.randint(1, 44)
    groups["noon"] += [
        hidden.add("test_noon_hour", f'_same(parse_time("12:{m1:02d} pm"), {720 + m1})', '_same(parse_time("12:00 pm"), '
                   '720)', f'_same(parse_time("12:{m2:02d} am"), {m2})', f'_same(parse_time("1:{m2:02d} pm"), {780 + m2})'),
        hidden.add("test_lunchtime_callers", f'rooms = [Room("{rooms[0]}", 6), Room("{rooms[1]}", 8)]',
                   f'rooms[0].book("{titles[0]}", {720}, {780}, 2)',
                   f'_same(find_rooms(rooms, "12:{m2:02d} pm", "1:{m2 + 10:02d} pm", 2), ["{rooms[1]}"])',
                   f'_same(occurrences(2, "12:{m2:02d} pm", "1:{m2:02d} pm", 2), [(2, {720 + m2}, {780 + m2}), '
                   f'(9, {720 + m2}, {780 + m2})])')]
    x = rng.randint(8, 15) * 60 + rng.choice([0, 10, 20, 30])
    groups["touching"] += [
        hidden.add("test_touching_spans", f"_same(overlaps(({x}, {x + 50}), ({x + 50}, {x + 90})), False)",
                   f"_same(overlaps(({x + 50}, {x + 90}), ({x}, {x + 50})), False)",
                   f"_same(overlaps(({x}, {x + 50}), ({x + 49}, {x + 90})), True)"),
        hidden.add("test_touching_at_every_caller", f'room = Room("{rooms[4]}", {capacity}, [])',
                   f'room.book("{titles[5]}", {x}, {x + 50}, 1)', f'room.book("{titles[6]}", {x + 50}, {x + 90}, 1)',
                   f'room.book("{titles[7]}", {x - 25}, {x}, 1)', "_same(len(room.bookings), 3)",
                   f"_same(is_free(room, {x + 90}, {x + 120}), True)",
                   f'_same(find_rooms([room], "{_clock(x + 90)}", "{_clock(x + 130)}", 1), ["{rooms[4]}"])')]
    a = rng.randint(8, 10) * 60
    busy = [(a, a + 60), (a + 180, a + 240)]
    stub = ", ".join(_book_line(t, *span, rooms[3]) for t, span in zip(titles[8:], busy))
    groups["direction"] += [
        hidden.add("test_minutes_between_direction", f"_same(minutes_between({a}, {a + 75}), 75)",
                   f"_same(minutes_between({a + 75}, {a}), -75)"),
        hidden.add("test_gaps_and_hires", f"_same(free_slots(StubRoom({stub}), {a - 60}, {a + 300}, 45), "
                   f"{_free(busy, a - 60, a + 300, 45)!r})", f"_same(billed_minutes({a}, {a + 100}), 120)",
                   f"_same(hire_cost({a}, {a + 20}, 3000), 3000)",
                   f"_same(booked_minutes(StubRoom({stub}), {a - 60}, {a + 300}), 120)")]
    price = booking.price()
    start = rng.randint(4, 12) * 1440 + rng.randint(8, 17) * 60 + rng.choice([0, 30])
    groups["notice"].append(groups["direction"][0])  # the masked half: its fees are right only with the helper
    groups["notice"] += [
        hidden.add("test_notice_before_start", f"_same(cancellation_fee({price}, {start}, {start - free_hours * 60}), 0)",
                   f"_same(cancellation_fee({price}, {start}, {start - late_hours * 60}), {price * late_percent // 100})",
                   f"_same(cancellation_fee({price}, {start}, {start - late_hours * 60 + 1}), {price})"),
        hidden.add("test_cancelled_after_start",
                   f"_same(cancellation_fee({price}, {start}, {start + free_hours * 60 + 60}), {price})")]
    groups["capacity"].append(hidden.add(
        "test_capacity_boundary", f'room = Room("{rooms[5]}", {capacity + 2}, [])',
        f'full = room.book("{titles[0]}", {x}, {x + 30}, {capacity + 2})', f"_same(full.attendees, {capacity + 2})",
        f'_raises(ValueError, room.book, "{titles[1]}", {x + 60}, {x + 90}, {capacity + 3})'))
    groups["shared"] += [
        hidden.add("test_rooms_own_their_bookings", f'first = Room("{rooms[0]}", {capacity})',
                   f'second = Room("{rooms[1]}", {capacity})', f'first.book("{titles[2]}", {x}, {x + 30}, 1)',
                   "_same(second.bookings, [])", f'second.book("{titles[3]}", {x}, {x + 30}, 1)',
                   "_same(len(first.bookings), 1)"),
        hidden.add("test_room_copies_given_bookings", f"given = [{_book_line(titles[4], x - 200, x - 100, rooms[2])}]",
                   f'room = Room("{rooms[2]}", {capacity}, given)', f'room.book("{titles[5]}", {x}, {x + 30}, 1)',
                   "_same(len(given), 1)", "_same(len(room.bookings), 2)")]
    t9, t10, t11 = 9 * 60 + rng.choice([5, 25, 45]), 10 * 60 + rng.choice([0, 15, 35]), 11 * 60 + rng.choice([0, 30])
    entries = [(titles[0], t10, t10 + 30, rooms[0]), (titles[2], t11, t11 + 30, rooms[3]),
               (titles[3], t9, t9 + 40, rooms[2]), (titles[4], t11, t11 + 45, rooms[1])]
    stubs = ", ".join(f"StubRoom({_book_line(*e)})" for e in entries)
    expected = [_agenda_line(*e) for e in sorted(entries, key=lambda e: (e[1], e[3]))]
    groups["order"].append(hidden.add("test_agenda_order", f"_same(day_agenda([{stubs}]), {expected!r})"))
    early = rng.randint(6, 7) * 60
    groups["usage_clip"].append(hidden.add(
        "test_usage_inside_opening_hours", f"_same(booked_minutes(StubRoom({_book_line(titles[1], early, 9 * 60, rooms[6])}"
        f", {_book_line(titles[2], 17 * 60, 19 * 60, rooms[6])}), {8 * 60}, {18 * 60}), 120)"))
    groups["hire_round"].append(hidden.add("test_billing_rounds_up", f"_same(billed_minutes({x}, {x + 70}), 90)",
                                           f"_same(billed_minutes({x}, {x + 91}), 120)",
                                           f"_same(hire_cost({x}, {x + 61}, 4000), 6000)"))


def _booking_regressions(booking: _Booking, hidden: _Tests, regression: list[str]) -> None:
    """Hidden tests of behaviour that was already right, including what the declined reports ask to change."""
    rng, rooms, titles, capacity, late_percent = booking.rng, booking.rooms, booking.titles, booking.capacity, \
        booking.late_percent
    price = booking.price()
    a = rng.randint(8, 10) * 60 + rng.choice([0, 15, 30])
    b, c = a + 60, a + 120
    regression.append(hidden.add("test_late_fee_rounds_down", f"_same(late_fee({price}), {price * late_percent // 100})",
                                 f"_same(late_fee({price + 1}), {(price + 1) * late_percent // 100})"))
    regression.append(hidden.add("test_merge_joins_touching", f"_same(merge([({b}, {c}), ({a}, {b})]), [({a}, {c})])",
                                 f"_same(merge([({a}, {b}), ({c}, {c + 30})]), [({a}, {b}), ({c}, {c + 30})])"))
    regression.append(hidden.add("test_hire_minimum", f"_same(billed_minutes({a}, {a + 20}), 60)",
                                 f"_same(billed_minutes({a}, {a + 60}), 60)", f"_raises(ValueError, billed_minutes, "
                                 f"{a}, {a})"))
    am = rng.randint(1, 11) * 60 + rng.randint(0, 59)
    regression.append(hidden.add("test_clock_ordinary", '_same(format_time(0), "12:00 am")',
                                 '_same(format_time(750), "12:30 pm")', f'_same(parse_time("{_clock(am)}"), {am})',
                                 '_same(parse_time("11:59 pm"), 1439)', '_raises(ValueError, parse_time, "13:00 pm")'))
    regression.append(hidden.add("test_booking_conflict", f'room = Room("{rooms[3]}", {capacity}, [])',
                                 f'room.book("{titles[0]}", {a}, {a + 60}, 1)',
                                 f'_raises(ValueError, room.book, "{titles[1]}", {a + 20}, {a + 40}, 1)',
                                 f'_raises(ValueError, room.book, "{titles[2]}", {a + 30}, {a + 30}, 1)'))
    regression.append(hidden.add("test_search_refusals", '_raises(ValueError, find_rooms, [], "10:00 am", "9:00 am", 1)',
                                 '_raises(ValueError, occurrences, 1, "3:00 pm", "2:00 pm", 2)',
                                 '_same(find_rooms([Room("Solo", 2)], "9:00 am", "10:00 am", 3), [])'))


def booking_issues(rng: ItemRng) -> AgTask:
    """Triage a booking library's seven issue reports: fix the real bugs at their roots, decline the two that are no
    bug."""
    project, facts = _booking_project(rng)
    prompt = _booking_prompt(facts, f"{rng.randint(2, 6)}.{rng.randint(0, 19)}")
    answer = f"fixed: {', '.join(str(n) for n in facts['fixed'])}\ndeclined: {', '.join(map(str, facts['declined']))}"
    return _assemble(project, prompt, _booking_reference(project, facts, answer),
                     lambda submitted: _triage_answer_ok(facts, submitted),
                     "the answer lists exactly the reports that were bugs as fixed and the reports that were no bug "
                     "as declined")


def _booking_reference(project: Project, facts: dict[str, object], answer: str) -> list[Call]:
    """Read the reports and run the tests; read the failing tests and every module; fix the shared helper, then the
    reported half of the pair, see the masked half fail, fix it, then the third bug."""
    files = project.files()
    bugs = {bug.key: bug for bug in project.bugs}
    failing = sorted({f"tests/test_{facts['site']}.py", "tests/test_agenda.py", "tests/test_hire.py",
                      "tests/test_usage.py"})
    calls = [Call("list_files"), *_read_calls(files, "ISSUES.md"), Call("run_tests")]
    for path in failing:
        calls += _read_calls(files, path)
    for path in _BOOKING_MODULES:
        calls += _read_calls(files, path)
    root = bugs[str(facts["root"])]
    calls += [Call("search_code", {"text": {"touching": "overlaps(", "noon": "parse_time("}[root.key]}),
              *project.fix_calls(root), Call("run_tests")]
    calls += [Call("search_code", {"text": "minutes_between("}), *project.fix_calls(bugs["direction"]),
              Call("run_tests"), *_read_calls(files, "tests/test_policy.py"), *project.fix_calls(bugs["notice"]),
              Call("run_tests")]
    third = bugs[str(facts["third"])]  # its module holds no other bug: rewritten whole, as an agent may
    calls += [Call("write_file", {"path": third.path, "content": project.modules[third.path]}), Call("run_tests"),
              Call("submit", {"answer": answer})]
    return calls


def _booking_prompt(facts: dict[str, object], release: str) -> str:
    """The triage before a release, and the answer's two lines."""
    org = str(facts["org"])
    return (f"{org[0].upper() + org[1:]} uses `{facts['project']}`, a small Python library for booking meeting "
            "rooms (times are minutes after midnight; spans are (start, end) pairs of minutes). Files: ISSUES.md "
            "(open user reports), nine modules (clock, intervals, rooms, agenda, availability, series, hire, "
            "usage, policy) and tests in tests/. The docstrings in the modules document the intended behaviour. Before "
            f"release {release}, triage every report in ISSUES.md: a report describing behaviour that contradicts "
            "the docstrings is a bug, so fix it at its root cause (several reports can share one cause, and a "
            "reporter's suggested fix is not necessarily the right one); a report asking for behaviour the "
            "docstrings rule out is not a bug, so decline it and leave that behaviour unchanged. Any other "
            "behaviour that contradicts the docstrings must be fixed too. Your final code will be checked by "
            "hidden tests, including the visible tests' checks on other values, together with the original visible "
            "tests (edits to test files are ignored). When you are done, call submit with two lines: "
            "`fixed: <issue numbers>` and `declined: <issue numbers>`.")


def _issue_sets(answer: str | None, known: list[int]) -> tuple[set[int], set[int]] | None:
    """The issue numbers after the last `fixed:` and `declined:` labels, each up to the next label; None when a
    label is missing. Only numbers of real reports count, so prose numbers do not get in the way."""
    text = (answer or "").lower()
    labels = [(m.start(), m.end(), m.group(1)) for m in re.finditer(r"\b(fixed|declined)\s*[:=]", text)]
    found: dict[str, set[int]] = {}
    for index, (_, end, label) in enumerate(labels):
        stop = labels[index + 1][0] if index + 1 < len(labels) else len(text)
        found[label] = {int(n) for n in re.findall(r"\d+", text[end:stop]) if int(n) in known}
    if "fixed" not in found or "declined" not in found:
        return None
    return found["fixed"], found["declined"]


def _triage_answer_ok(facts: dict[str, object], submitted: str | None) -> bool:
    """True when the answer lists exactly the fixed and the declined reports."""
    sets = _issue_sets(submitted, facts["issue_ids"])
    return sets is not None and sets == (set(facts["fixed"]), set(facts["declined"]))
