"""Software repair: a small generated Python project with seeded bugs, repaired through file tools and judged by
hidden tests (never shown) plus the original visible tests, probed in the sandbox against the final sources and
decided in the kit's process (esac_kit.ag.probes), where the expected values stay."""

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


def run_project_tests(sources: dict[str, str]) -> TestRun:
    """Run every tests/test_*.py of `sources` (path -> text) in the sandbox against the top-level modules."""
    tag = secrets.token_hex(12)  # an anti-forgery nonce, not part of the instance
    tests = sorted(p for p in sources if p.startswith("tests/"))
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


def _report(run: TestRun) -> str:
    """The run as the model sees it: a count, one line per test, then the project's own output if any."""
    if not run.results and run.status == "ok":
        return "no tests found under tests/"
    failed = sum(1 for status, _ in run.results.values() if status != "PASS")
    lines = [f"{len(run.results)} tests: {len(run.results) - failed} passed, {failed} failed or errored"]
    for test_id, (status, message) in run.results.items():
        lines.append(f"{status} {test_id}" + (f" -- {message}" if message else ""))
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

    @tool("Return the full text of one file of the project.", {"path": _PATH_PROPERTY})
    def read_file(self, path: str):
        return self._existing(path)

    @tool("Create or overwrite a Python file with the given full content. Writable paths: top-level modules "
          "'name.py' and test files 'tests/test_name.py' (lower-case letters, digits, underscores); other files "
          "(documents) are read-only.",
          {"path": _PATH_PROPERTY, "content": {"type": "string", "description": "The file's complete new text."}})
    def write_file(self, path: str, content: str):
        self._check_writable(path, content)
        self.state["files"][path] = content
        return f"wrote {path} ({len(content.splitlines())} lines)"

    @tool("Replace the single occurrence of `old` in a Python file by `new` (an exact, whitespace-sensitive text "
          "match; fails when `old` occurs zero times or more than once). Same writable paths as write_file.",
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

    @tool("Run the project's test files (tests/test_*.py) in a sandbox against the current files. Returns one line "
          "per test: PASS, FAIL (an assert failed) or ERROR (another exception), with the failing line and the "
          "message. Changes nothing.")
    def run_tests(self):
        return _report(run_project_tests(dict(self.state["files"])))


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
    """A generated project: correct modules, planted bugs, documents, visible tests and grouped hidden tests."""

    modules: dict[str, str]
    bugs: list[Bug]
    documents: dict[str, str]
    visible: dict[str, str]
    visible_ids: list[str]
    hidden: str
    hidden_groups: dict[str, list[str]] = field(default_factory=dict)  # bug key or "regression" -> test ids

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


def _assemble(project: Project, prompt: str, reading: list[str], answer: str, answer_ok,
              answer_check: str) -> AgTask:
    """The AgTask of a project: checks on the final sources, and the reference and wasteful scripts."""
    reference, wasteful = _project_scripts(project, reading, answer)
    return AgTask(prompt=prompt, make_env=lambda: ProjectEnv(project.files()),
                  checks=_project_checks(project, answer_check),
                  evaluate=lambda env, submitted: _judge_project(project, answer_ok, env, submitted),
                  reference=reference, wasteful=wasteful)


def _project_checks(project: Project, answer_check: str) -> tuple[Check, ...]:
    """The regression check, one check per planted bug, and the answer's check."""
    return (Check("tests_pass", "the original visible tests and the hidden tests of behaviour that was already "
                                "correct all pass against the final code"),
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


def _project_scripts(project: Project, reading: list[str], answer: str) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent reads, rewrites each buggy module once and runs the tests; the wasteful one rereads and
    writes an unfinished draft first."""
    buggy_paths = [p for p in project.modules if any(b.path == p for b in project.bugs)]
    reads = tuple(Call("read_file", {"path": p}) for p in reading)
    writes = tuple(Call("write_file", {"path": p, "content": project.modules[p]}) for p in buggy_paths)
    finish = (Call("run_tests"), Call("submit", {"answer": answer}))
    draft = project.sources()[buggy_paths[0]] + "\n# TODO: finish this fix\n"
    wasteful = (reads[:1] * 3 + reads[1:] + (Call("write_file", {"path": buggy_paths[0], "content": draft}),)
                + writes + finish)
    return reads + writes + finish, wasteful


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

_MONEY = '''\
"""Money helpers: every amount in this project is an int number of cents (SPEC.md)."""


def percent_of(cents, rate_bp):
    """cents x rate_bp / 10000 as whole cents (rates are basis points: 825 = 8.25 %); SPEC.md rule 1."""
    numerator = cents * rate_bp
    whole, rest = divmod(abs(numerator), 10000)
    if 2 * rest >= 10000:
        whole += 1
    return whole if numerator >= 0 else -whole


def format_cents(cents):
    """The amount in dollars for display; SPEC.md rule 2."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(cents), 100)
    return f"{sign}${dollars:,}.{rest:02d}"
'''

_PRICING = '''\
"""The price list and volume pricing (SPEC.md rule 3)."""

from money import percent_of

PRICES = {
<<PRICES>>
}
VOLUME_THRESHOLD = <<THRESHOLD>>
VOLUME_RATE_BP = <<VOLUME_BP>>


def list_price(sku):
    """The list price of one unit in cents; KeyError for an unknown SKU."""
    if sku not in PRICES:
        raise KeyError(f"unknown SKU {sku!r}")
    return PRICES[sku]


def line_total(sku, quantity):
    """What a line of `quantity` units of `sku` costs, in cents (SPEC.md rule 3)."""
    if not isinstance(quantity, int) or quantity <= 0:
        raise ValueError(f"quantity must be a positive int, got {quantity!r}")
    amount = list_price(sku) * quantity
    if quantity >= VOLUME_THRESHOLD:
        amount -= percent_of(amount, VOLUME_RATE_BP)
    return amount
'''

_CHARGES = '''\
"""Tax and shipping (SPEC.md rules 5 and 6)."""

from money import percent_of

RATES_BP = {
<<RATES>>
}
FREE_SHIPPING_OVER = <<FREE_OVER>>
SHIPPING_FEE = <<FEE>>


def tax_for(amount, region):
    """The tax on `amount` cents in `region`, in cents; KeyError for an unknown region."""
    if region not in RATES_BP:
        raise KeyError(f"unknown region {region!r}")
    return percent_of(amount, RATES_BP[region])


def shipping_for(amount):
    """Shipping in cents for an order whose subtotal after the coupon discount is `amount` cents."""
    return 0 if amount > FREE_SHIPPING_OVER else SHIPPING_FEE
'''

_INVOICE = '''\
"""Invoices: lines, coupon, tax, shipping and total (SPEC.md rules 4 to 8)."""

from charges import RATES_BP, shipping_for, tax_for
from money import percent_of
from pricing import line_total

COUPONS_BP = {
<<COUPONS>>
}


class Invoice:
    """One customer's invoice: (sku, quantity) lines, an optional coupon, and the region that sets the tax."""

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
        return percent_of(self.subtotal(), COUPONS_BP[self.coupon])

    def tax(self):
        return tax_for(self.subtotal() - self.discount(), self.region)

    def shipping(self):
        return shipping_for(self.subtotal() - self.discount())

    def total(self):
        return self.subtotal() - self.discount() + self.tax() + self.shipping()


def build_invoice(customer, region, lines, coupon=None, notes=None):
    """An Invoice with the given (sku, quantity) lines; SPEC.md rule 8 says what happens to `notes`."""
    notes = [] if notes is None else list(notes)
    notes.append(f"{len(lines)} line(s) for {customer}")
    invoice = Invoice(customer, region, coupon, notes)
    for sku, quantity in lines:
        invoice.add_line(sku, quantity)
    return invoice
'''

_REPORT = '''\
"""Customer ranking and the summary report (SPEC.md rules 9 and 10)."""

from money import format_cents


def rank_customers(invoices):
    """(customer, total) pairs, one per customer, in ranking order (SPEC.md rule 9)."""
    totals = {}
    for invoice in invoices:
        totals[invoice.customer] = totals.get(invoice.customer, 0) + invoice.total()
    return sorted(totals.items(), key=lambda pair: (-pair[1], pair[0]))


def summary(invoices):
    """One line per customer in ranking order, like '1. Acme: $1,234.56' (SPEC.md rule 10)."""
    ranked = rank_customers(invoices)
    return [f"{place}. {name}: {format_cents(total)}" for place, (name, total) in enumerate(ranked, 1)]
'''

_SPEC = '''\
# <<PROJECT>>: billing rules

Every amount is a Python int number of cents; rates are in basis points (1 bp = 0.01 %, so 825 bp = 8.25 %).

1. Percentages (money.percent_of). A percentage of an amount is rounded to the nearest whole cent, and an exact half cent rounds away from zero: 2.5 cents becomes 3 and -2.5 cents becomes -3. The result is an int.
2. Display (money.format_cents). Dollars with thousands separators and always two cent digits; a negative amount starts with a minus sign: 123456 -> $1,234.56, 5 -> $0.05, -250 -> -$2.50.
3. Volume pricing (pricing.line_total). A line costs the unit's list price times the quantity. A line of <<THRESHOLD>> units or more gets <<VOLUME_PCT>> % off the whole line amount (the discount is percent_of the line amount, subtracted).
4. Coupons (invoice.Invoice). <<COUPON_TEXT>>. A coupon's discount is its percentage of the subtotal (the sum of the line totals). An unknown coupon code is refused with ValueError.
5. Tax (charges.tax_for, invoice.Invoice.tax). Tax is charged on the subtotal after the coupon discount, at the rate of the invoice's region: <<RATE_TEXT>>. Shipping is never taxed.
6. Shipping (charges.shipping_for). Shipping costs <<FEE>> cents; it is free only when the subtotal after the coupon discount is strictly more than <<FREE_OVER>> cents, so an order of exactly <<FREE_OVER>> cents still pays it.
7. Total (invoice.Invoice.total) = subtotal - coupon discount + tax + shipping.
8. Notes (invoice.build_invoice). Every invoice gets its own notes list: the notes passed in, if any, followed by "<number of lines> line(s) for <customer>". The caller's list is never modified, and one invoice's notes never appear on another invoice.
9. Ranking (report.rank_customers). One (customer, total) pair per customer, the total summed over that customer's invoices; highest total first, equal totals in customer-name order (A to Z).
10. Summary (report.summary). One line per customer in ranking order, like "1. Acme: $1,234.56".
'''

_BILLING_MODULES = ["money.py", "pricing.py", "charges.py", "invoice.py", "report.py"]


def _percent(cents: int, rate_bp: int) -> int:
    """SPEC rule 1, mirrored: the expected values of the generated tests."""
    whole, rest = divmod(abs(cents * rate_bp), 10000)
    whole += 2 * rest >= 10000
    return whole if cents * rate_bp >= 0 else -whole


def _half(cents: int, rate_bp: int) -> bool:
    """True when cents x rate_bp lands on an exact half cent (where rounding modes disagree)."""
    return abs(cents * rate_bp) % 10000 == 5000


class _Billing:
    """A drawn billing library's facts (prices, volume discount, tax rates, coupons, shipping) and the rules that
    compute its expected values; it keeps drawing test inputs from the item's stream."""

    def __init__(self, rng: ItemRng):
        self.rng = rng
        self.project_name, self.company = rng.choice(_BILLING_PROJECTS), rng.choice(_COMPANIES)
        self.skus = rng.sample(_SKUS, 5)
        self.threshold = rng.randint(6, 24)
        self.volume_bp = rng.choice([500, 750, 1000, 1250, 1500, 2000])
        while True:  # some SKU must have volume lines off the half cent, so the volume tests stay clear of rounding
            self.prices = {sku: rng.randint(120, 4800) for sku in self.skus}
            if all(any(not _half(p * q, self.volume_bp) for p in self.prices.values())
                   for q in (self.threshold, self.threshold + 3)):
                break
        regions = rng.sample(_REGIONS, 3)
        self.rates = dict(zip(regions, rng.sample(_RATES_BP, 3)))
        self.typo_region = rng.choice(regions)  # the region whose rate a rate_table bug mistypes
        typo = str(self.rates[self.typo_region])
        self.typo_rate = int(typo[1] + typo[0] + typo[2:])
        self.plain_regions = [r for r in regions if r != self.typo_region]
        coupon_pcts = rng.sample([5, 10, 15, 20, 25], 2)
        self.coupons = {f"{word}{pct}": pct * 100 for word, pct in zip(rng.sample(_COUPON_WORDS, 2), coupon_pcts)}
        self.free_over = rng.randint(60, 160) * 100
        self.fee = rng.randint(4, 14) * 100 + rng.choice([0, 50, 95])

    def line(self, sku: str, quantity: int) -> int:
        """SPEC's line total."""
        amount = self.prices[sku] * quantity
        return amount - _percent(amount, self.volume_bp) if quantity >= self.threshold else amount

    def bill(self, lines: list[tuple[str, int]], region: str, coupon: str | None) -> dict[str, int]:
        """SPEC's invoice figures, and the tax of the undiscounted subtotal that the tax_base bug charges."""
        rates = self.rates
        subtotal = sum(self.line(s, q) for s, q in lines)
        discount = _percent(subtotal, self.coupons[coupon]) if coupon else 0
        tax = _percent(subtotal - discount, rates[region])
        shipping = 0 if subtotal - discount > self.free_over else self.fee
        return {"subtotal": subtotal, "discount": discount, "tax": tax, "shipping": shipping,
                "total": subtotal - discount + tax + shipping, "tax_undiscounted": _percent(subtotal, rates[region])}

    def small_order(self, region: str, coupon: str | None, fits=lambda b: True) -> list[tuple[str, int]]:
        """Lines below the volume threshold whose percentages never land on a half cent."""
        rng, threshold = self.rng, self.threshold
        for _ in range(500):
            lines = [(sku, rng.randint(max(1, threshold // 2), threshold - 1)) for sku in rng.sample(self.skus, 3)]
            b = self.bill(lines, region, coupon)
            if coupon and _half(b["subtotal"], self.coupons[coupon]) \
                    or _half(b["subtotal"] - b["discount"], self.rates[region]):
                continue
            if fits(b):
                return lines
        raise RuntimeError("no order fits")

    def half_case(self) -> tuple[int, int]:
        """An amount and rate landing on an exact half cent whose lower neighbour is even (banker's rounds down)."""
        rate = self.rng.choice([50, 250, 1250, 2500, 3750, 5000])
        cents = _scan(self.rng, 3, 20000, lambda c: _half(c, rate) and (c * rate // 10000) % 2 == 0)
        return cents, rate

    def volume_sku(self, quantity: int) -> str:
        """A SKU whose volume line at this quantity is off the half cent."""
        fitting = [s for s in self.skus if not _half(self.prices[s] * quantity, self.volume_bp)]
        return self.rng.choice(fitting)

    def typo_amount(self, low: int, high: int) -> int:
        """An amount whose tax differs between the spec's rate and the mistyped one."""
        rate, typo = self.rates[self.typo_region], self.typo_rate
        return _scan(self.rng, low, high, lambda c: not _half(c, rate) and _percent(c, rate) != _percent(c, typo))


def _taxed_differently(b: dict[str, int]) -> bool:
    """The coupon moves the tax, so taxing the undiscounted subtotal shows."""
    return b["subtotal"] >= 10000 and b["tax_undiscounted"] != b["tax"]


def _billing_bugs(billing: _Billing) -> dict[str, Bug]:
    """Every bug the billing library can have planted."""
    threshold, typo_region, rates, typo_rate = billing.threshold, billing.typo_region, billing.rates, billing.typo_rate
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
        "volume": Bug("volume", "pricing.py", f"pricing.line_total discounts lines of exactly {threshold} units",
                      (("if quantity >= VOLUME_THRESHOLD:", "if quantity > VOLUME_THRESHOLD:"),),
                      ("pricing.line_total",)),
        "rate_table": Bug("rate_table", "charges.py", f"charges.RATES_BP holds the {typo_region} rate of the spec",
                          ((f'    "{typo_region}": {rates[typo_region]},', f'    "{typo_region}": {typo_rate},'),),
                          ("charges.RATES_BP",)),
        "tax_base": Bug("tax_base", "invoice.py", "invoice.Invoice.tax taxes the subtotal after the coupon discount",
                        (("return tax_for(self.subtotal() - self.discount(), self.region)",
                          "return tax_for(self.subtotal(), self.region)"),),
                        ("invoice.Invoice.tax", "Invoice.tax")),
        "notes": Bug("notes", "invoice.py", "invoice.build_invoice gives each invoice its own copy of the notes",
                     (("lines, coupon=None, notes=None):", "lines, coupon=None, notes=[]):"),
                      ("    notes = [] if notes is None else list(notes)\n", "")),
                     ("invoice.build_invoice",)),
        "ranking": Bug("ranking", "report.py", "report.rank_customers orders equal totals by name A to Z",
                       (("key=lambda pair: (-pair[1], pair[0]))",
                         "key=lambda pair: (pair[1], pair[0]), reverse=True)"),),
                       ("report.rank_customers",)),
    }


def _billing_project(rng: ItemRng) -> tuple[Project, dict[str, object]]:
    """A billing library with three planted bugs, one of them shown by no visible test; and its facts."""
    billing = _Billing(rng)
    bugs = _billing_bugs(billing)
    planted_keys = rng.sample(sorted(bugs), 3)
    unseen = rng.choice(planted_keys)  # the planted bug that no visible test shows
    planted = sorted((bugs[k] for k in planted_keys), key=lambda b: (_BILLING_MODULES.index(b.path), b.key))
    modules, spec = _billing_sources(billing)
    t_money, t_pricing = _money_tests(billing, unseen), _pricing_tests(billing, unseen)
    t_charges, t_invoice = _charges_tests(billing, unseen), _invoice_tests(billing, unseen)
    t_report, names = _report_tests(billing, unseen)
    tests = [t_charges, t_invoice, t_money, t_pricing, t_report]
    hidden = _Tests(HIDDEN_PATH, "from charges import RATES_BP, shipping_for, tax_for\n"
                                 "from invoice import build_invoice\nfrom money import format_cents, percent_of\n"
                                 "from pricing import line_total\nfrom report import rank_customers, summary\n"
                    + _HIDDEN_HELPERS + "\n\n" + "\n".join(_STUB) + "\n")
    groups: dict[str, list[str]] = {key: [] for key in bugs}
    groups["regression"] = []
    top, tie = _billing_bug_tests(billing, hidden, groups, names)
    _billing_regressions(billing, hidden, groups["regression"], names, top, tie)
    project = Project(modules=modules, bugs=planted, documents={"SPEC.md": spec},
                      visible={t.path: t.source() for t in tests}, visible_ids=[i for t in tests for i in t.ids()],
                      hidden=hidden.source(), hidden_groups=groups)
    decoys = [name for key in sorted(bugs) if key not in planted_keys for name in bugs[key].names]
    return project, {"company": billing.company, "project": billing.project_name, "unseen": unseen,
                     "decoys": decoys}


def _billing_sources(billing: _Billing) -> tuple[dict[str, str], str]:
    """The correct modules and SPEC.md, filled with the drawn facts."""
    values = {"PRICES": "\n".join(f'    "{s}": {p},' for s, p in billing.prices.items()),
              "THRESHOLD": billing.threshold, "VOLUME_BP": billing.volume_bp,
              "RATES": "\n".join(f'    "{r}": {b},' for r, b in billing.rates.items()),
              "FREE_OVER": billing.free_over, "FEE": billing.fee,
              "COUPONS": "\n".join(f'    "{c}": {b},' for c, b in billing.coupons.items())}
    modules = {path: _module_text(text, values) for path, text in
               zip(_BILLING_MODULES, [_MONEY, _PRICING, _CHARGES, _INVOICE, _REPORT])}
    coupon_text = "Coupon codes: " + ", ".join(f"{c} ({b // 100} % off)" for c, b in billing.coupons.items())
    rate_text = ", ".join(f"{r} {b // 100}.{b % 100:02d} %" for r, b in billing.rates.items())
    spec = _module_text(_SPEC, {**values, "PROJECT": billing.project_name,
                                "VOLUME_PCT": f"{billing.volume_bp / 100:g}", "COUPON_TEXT": coupon_text,
                                "RATE_TEXT": rate_text})
    return modules, spec


# Visible tests: plain behaviour, plus the edge that shows each bug (omitted for the unseen one).
_STUB = ("class Stub:", "    def __init__(self, customer, amount):", "        self.customer = customer",
         "        self.amount = amount", "", "    def total(self):", "        return self.amount")


def _money_tests(billing: _Billing, unseen: str) -> _Tests:
    """Visible tests of money.py."""
    rng, rates = billing.rng, billing.rates
    t_money = _Tests("tests/test_money.py", "from money import format_cents, percent_of\n")
    plain_rate = rng.choice([rates[r] for r in billing.plain_regions])
    cents = _scan(rng, 1000, 90000, lambda c: not _half(c, plain_rate) and c * plain_rate % 10000 != 0)
    t_money.add("test_percent_of_rounds_to_cents",
                *_eq(f"percent_of({cents}, {plain_rate})", _percent(cents, plain_rate)))
    if unseen != "rounding":
        c, r = billing.half_case()
        t_money.add("test_percent_of_half_cent", *_eq(f"percent_of({c}, {r})", _percent(c, r)))
    big = rng.randint(100000, 9999999) // 100 * 100 + rng.randint(10, 99)
    t_money.add("test_format_cents", *_eq(f"format_cents({big})", dollars(big)))
    if unseen != "padding":
        small = rng.randint(1, 99) * 100 + rng.randint(1, 9)
        t_money.add("test_format_cents_small_cents", *_eq(f"format_cents({small})", dollars(small)))
    return t_money


def _pricing_tests(billing: _Billing, unseen: str) -> _Tests:
    """Visible tests of pricing.py."""
    rng, threshold = billing.rng, billing.threshold
    t_pricing = _Tests("tests/test_pricing.py", "from pricing import line_total\n")
    sku = rng.choice(billing.skus)
    quantity = rng.randint(1, threshold - 1)
    t_pricing.add("test_line_total_small_order",
                  *_eq(f'line_total("{sku}", {quantity})', billing.line(sku, quantity)))
    if unseen != "volume":
        sku = billing.volume_sku(threshold)
        t_pricing.add("test_volume_discount_at_threshold",
                      *_eq(f'line_total("{sku}", {threshold})', billing.line(sku, threshold)))
    t_pricing.add("test_unknown_sku", *_raising('line_total("no-such-sku", 1)', "KeyError"))
    return t_pricing


def _charges_tests(billing: _Billing, unseen: str) -> _Tests:
    """Visible tests of charges.py."""
    rng, rates, typo_region = billing.rng, billing.rates, billing.typo_region
    free_over, fee = billing.free_over, billing.fee
    t_charges = _Tests("tests/test_charges.py", "from charges import shipping_for, tax_for\n")
    region = rng.choice(billing.plain_regions)
    amount = _scan(rng, 2000, 60000, lambda c: not _half(c, rates[region]))
    t_charges.add(f"test_tax_{region}", *_eq(f'tax_for({amount}, "{region}")', _percent(amount, rates[region])))
    if unseen != "rate_table":
        amount = billing.typo_amount(2000, 60000)
        t_charges.add(f"test_tax_{typo_region}", *_eq(f'tax_for({amount}, "{typo_region}")',
                                                      _percent(amount, rates[typo_region])))
    below, above = free_over - rng.randint(100, 2000), free_over + rng.randint(100, 2000)
    boundary = [free_over] if rng.randint(0, 1) else []  # the strict boundary is shown in some instances only
    lines = [f"assert shipping_for({a}) == {fee if a <= free_over else 0}, shipping_for({a})"
             for a in [below, *boundary, above]]
    t_charges.add("test_shipping", *lines)
    return t_charges


def _invoice_tests(billing: _Billing, unseen: str) -> _Tests:
    """Visible tests of invoice.py."""
    rng, skus = billing.rng, billing.skus
    t_invoice = _Tests("tests/test_invoice.py", "from invoice import build_invoice\n")
    region = rng.choice(billing.plain_regions)
    order = billing.small_order(region, None)
    expected = billing.bill(order, region, None)
    t_invoice.add("test_invoice_without_coupon",
                  f'invoice = build_invoice("{rng.choice(_CUSTOMERS)}", "{region}", {order!r})',
                  f"assert invoice.total() == {expected['total']}, invoice.total()")
    if unseen != "tax_base":
        coupon = rng.choice(sorted(billing.coupons))
        order = billing.small_order(region, coupon, _taxed_differently)
        expected = billing.bill(order, region, coupon)
        t_invoice.add("test_coupon_invoice_tax",
                      f'invoice = build_invoice("{rng.choice(_CUSTOMERS)}", "{region}", {order!r}, coupon="{coupon}")',
                      f"assert invoice.tax() == {expected['tax']}, invoice.tax()")
    if unseen != "notes":
        first, second = rng.sample(_CUSTOMERS, 2)
        t_invoice.add("test_notes_belong_to_one_invoice", f'build_invoice("{first}", "{region}", [("{skus[0]}", 1)])',
                      f'invoice = build_invoice("{second}", "{region}", [("{skus[1]}", 2)])',
                      f'assert invoice.notes == ["1 line(s) for {second}"], invoice.notes')
    t_invoice.add("test_unknown_coupon", *_raising(f'build_invoice("{rng.choice(_CUSTOMERS)}", "{region}", '
                                                   f'[("{skus[2]}", 1)], coupon="NOPE0")', "ValueError"))
    return t_invoice


def _report_tests(billing: _Billing, unseen: str) -> tuple[_Tests, list[str]]:
    """Visible tests of report.py, and the customer names they drew (the hidden tests reuse them)."""
    rng = billing.rng
    t_report = _Tests("tests/test_report.py", "from report import rank_customers, summary\n\n\n"
                      + "\n".join(_STUB) + "\n")
    names = rng.sample(_CUSTOMERS, 7)
    amounts = rng.sample([a for a in range(1010, 99000, 7) if a % 100 >= 10], 3)  # two cent digits either way
    stubs = ", ".join(f'Stub("{n}", {a})' for n, a in zip(names, amounts))
    ranked = sorted(zip(names, amounts), key=lambda p: (-p[1], p[0]))
    t_report.add("test_rank_by_total", *_eq(f"rank_customers([{stubs}])", ranked))
    if unseen != "ranking":
        tie = rng.randint(2000, 50000)
        pair = sorted(names[3:5])
        stubs = f'Stub("{pair[1]}", {tie}), Stub("{names[5]}", {tie + 777}), Stub("{pair[0]}", {tie})'
        t_report.add("test_rank_ties_by_name", *_eq(f"rank_customers([{stubs}])",
                                                    [(names[5], tie + 777), (pair[0], tie), (pair[1], tie)]))
    stubs = ", ".join(f'Stub("{n}", {a})' for n, a in zip(names, amounts))
    t_report.add("test_summary", *_eq(f"summary([{stubs}])",
                                      [f"{i}. {n}: {dollars(a)}" for i, (n, a) in enumerate(ranked, 1)]))
    return t_report, names


def _billing_bug_tests(billing: _Billing, hidden: _Tests, groups: dict[str, list[str]], names: list[str]
                       ) -> tuple[int, int]:
    """The hidden tests of each bug, added to its group; returns the ranking test's top and tied totals."""
    rng, skus, threshold, rates = billing.rng, billing.skus, billing.threshold, billing.rates
    typo_region, typo_rate, line = billing.typo_region, billing.typo_rate, billing.line
    (c1, r1), (c2, r2) = billing.half_case(), billing.half_case()
    groups["rounding"].append(hidden.add("test_rounding_half_up", f"_same(percent_of({c1}, {r1}), {_percent(c1, r1)})",
                                         f"_same(percent_of({c2}, {r2}), {_percent(c2, r2)})"))
    groups["rounding"].append(hidden.add("test_rounding_negative_half",
                                         f"_same(percent_of({-c1}, {r1}), {_percent(-c1, r1)})"))
    small = [rng.randint(1, 9), -(rng.randint(1, 99) * 100 + rng.randint(1, 9)),
             rng.randint(10000, 99999) * 100 + rng.randint(1, 9)]
    groups["padding"].append(hidden.add("test_format_single_cent_digit",
                                        *(f"_same(format_cents({c}), {dollars(c)!r})" for c in small)))
    at, over = billing.volume_sku(threshold), billing.volume_sku(threshold + 3)
    under = rng.choice(skus)
    groups["volume"].append(hidden.add("test_volume_boundary",
                                       f'_same(line_total("{at}", {threshold}), {line(at, threshold)})',
                                       f'_same(line_total("{over}", {threshold + 3}), {line(over, threshold + 3)})',
                                       f'_same(line_total("{under}", {threshold - 1}), {line(under, threshold - 1)})'))
    amounts = [billing.typo_amount(1500, 80000) for _ in range(2)]
    groups["rate_table"].append(hidden.add("test_rate_table_matches_spec",
                                           *(f'_same(tax_for({a}, "{typo_region}"), {_percent(a, rates[typo_region])})'
                                             for a in amounts)))
    order = billing.small_order(typo_region, None, lambda b: _percent(b['subtotal'], typo_rate) != b['tax'])
    expected = billing.bill(order, typo_region, None)
    groups["rate_table"].append(hidden.add("test_rate_table_on_invoice",
                                           f'invoice = build_invoice("{names[0]}", "{typo_region}", {order!r})',
                                           f"_same(invoice.tax(), {expected['tax']})"))
    for index, coupon in enumerate(sorted(billing.coupons), 1):
        region = rng.choice(billing.plain_regions)
        order = billing.small_order(region, coupon, _taxed_differently)
        expected = billing.bill(order, region, coupon)
        groups["tax_base"].append(hidden.add(
            f"test_tax_after_coupon_{index}",
            f'invoice = build_invoice("{names[index]}", "{region}", {order!r}, coupon="{coupon}")',
            f"_same(invoice.tax(), {expected['tax']})", f"_same(invoice.total(), {expected['total']})"))
    region = rng.choice(billing.plain_regions)
    first, second, third = names[:3]
    groups["notes"].append(hidden.add(
        "test_notes_fresh_per_invoice", f'build_invoice("{first}", "{region}", [("{skus[0]}", 1)])',
        f'invoice = build_invoice("{second}", "{region}", [("{skus[1]}", 1), ("{skus[2]}", 1)])',
        f'_same(invoice.notes, ["2 line(s) for {second}"])'))
    groups["notes"].append(hidden.add(
        "test_notes_caller_list_untouched", 'mine = ["rush order"]',
        f'invoice = build_invoice("{third}", "{region}", [("{skus[3]}", 2)], notes=mine)',
        '_same(mine, ["rush order"])', f'_same(invoice.notes, ["rush order", "1 line(s) for {third}"])',
        f'other = build_invoice("{first}", "{region}", [("{skus[4]}", 1)], notes=mine)',
        f'_same(other.notes, ["rush order", "1 line(s) for {first}"])'))
    return _ranking_tests(billing, hidden, groups)


def _ranking_tests(billing: _Billing, hidden: _Tests, groups: dict[str, list[str]]) -> tuple[int, int]:
    """The hidden test of the ranking bug, equal totals ordered by name; returns its top and tied totals."""
    rng = billing.rng
    people = sorted(rng.sample(_CUSTOMERS, 4))
    low = rng.randint(100, 2900)
    top = _scan(rng, 50000, 90000, lambda a: a % 100 >= 10 and (a + 1010) % 100 >= 10)
    tie = _scan(rng, 3000, 40000, lambda a: a % 100 >= 10)
    split = rng.randint(500, tie - 500)
    stubs = (f'Stub("{people[3]}", {tie}), Stub("{people[1]}", {low}), Stub("{people[0]}", {split}), '
             f'Stub("{people[2]}", {top}), Stub("{people[0]}", {tie - split})')
    ranked_ties = [(people[2], top), (people[0], tie), (people[3], tie), (people[1], low)]
    groups["ranking"].append(hidden.add("test_ranking_ties_by_name",
                                        f"got = [tuple(pair) for pair in rank_customers([{stubs}])]",
                                        f"assert got == {ranked_ties!r}, got"))
    return top, tie


def _billing_regressions(billing: _Billing, hidden: _Tests, regression: list[str], names: list[str], top: int,
                         tie: int) -> None:
    """Hidden tests of behaviour that was already right."""
    rng, free_over, fee, rates = billing.rng, billing.free_over, billing.fee, billing.rates
    regression.append(hidden.add("test_shipping_strictly_more", f"_same(shipping_for({free_over}), {fee})",
                                 f"_same(shipping_for({free_over + 1}), 0)",
                                 f"_same(shipping_for({free_over - 1}), {fee})"))
    rate = rng.choice([rates[r] for r in billing.plain_regions])
    amount = _scan(rng, 100, 50000, lambda c: not _half(c, rate) and c * rate % 10000 != 0)
    regression.append(hidden.add("test_percent_of_ordinary",
                                 f"_same(percent_of({amount}, {rate}), {_percent(amount, rate)})",
                                 f"_same(percent_of({-amount}, {rate}), {_percent(-amount, rate)})"))
    big = rng.randint(1000, 999999) * 100 + rng.randint(10, 99)
    regression.append(hidden.add("test_format_ordinary", f"_same(format_cents({big}), {dollars(big)!r})",
                                 f"_same(format_cents({-big}), {dollars(-big)!r})"))
    region = rng.choice(billing.plain_regions)
    order = billing.small_order(region, None)
    expected = billing.bill(order, region, None)
    regression.append(hidden.add("test_invoice_ordinary",
                                 f'invoice = build_invoice("{names[6]}", "{region}", {order!r})',
                                 f"_same(invoice.total(), {expected['total']})",
                                 f"_same(invoice.shipping(), {expected['shipping']})"))
    regression.append(hidden.add("test_refusals", '_raises(KeyError, line_total, "no-such-sku", 1)',
                                 f'_raises(ValueError, build_invoice, "{names[1]}", "{region}", [], "BOGUS5")',
                                 '_raises(KeyError, tax_for, 1000, "atlantis")'))
    stubs = ", ".join(f'Stub("{n}", {a})' for n, a in zip(names[:3], [top, tie, top + 1010]))
    lines = [f"{i}. {n}: {dollars(a)}" for i, (n, a) in
             enumerate(sorted(zip(names[:3], [top, tie, top + 1010]), key=lambda p: -p[1]), 1)]
    regression.append(hidden.add("test_summary_ordinary", f"_same(summary([{stubs}]), {lines!r})"))


def billing_spec(rng: ItemRng) -> AgTask:
    """Make a billing library follow its SPEC.md: two bugs show in failing tests, a third only in the spec."""
    project, facts = _billing_project(rng)
    prompt = _billing_prompt(facts, rng.randint(1000, 9999))
    answer = ", ".join(bug.names[0] for bug in project.bugs)
    return _assemble(project, prompt, ["SPEC.md", *_BILLING_MODULES], answer,
                     lambda submitted: _names_answer_ok(submitted, project.bugs, facts["decoys"]),
                     "the answer names, as module.name, every function or constant that held a bug, and none of "
                     "the project's other candidates")


def _billing_prompt(facts: dict[str, object], ticket: int) -> str:
    """The ticket: make the library follow its spec, and name what was changed."""
    return (f"Ticket FIN-{ticket}: {facts['company']} uses `{facts['project']}`, a small Python billing library "
            "(every amount is an int number of cents). Its files: SPEC.md (the billing rules), money.py, pricing.py, "
            "charges.py, invoice.py, report.py, and tests in tests/. Some tests fail, and the tests do not cover "
            "every rule: SPEC.md is authoritative. Make the code follow SPEC.md everywhere. Fix each bug where it "
            "originates, and do not change behaviour that already follows the spec. Your final code will be "
            "checked by hidden tests based on SPEC.md together with the original visible tests (edits to test "
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

_BOOKING_MODULES = ["clock.py", "intervals.py", "rooms.py", "agenda.py", "policy.py"]


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
    "capacity": Bug("capacity", "rooms.py", "Room.book accepts exactly `capacity` attendees",
                    (("if attendees > self.capacity:", "if attendees >= self.capacity:"),)),
    "shared": Bug("shared", "rooms.py", "each Room keeps its own bookings list",
                  (("def __init__(self, name, capacity, bookings=None):",
                    "def __init__(self, name, capacity, bookings=[]):"),
                   ("self.bookings = [] if bookings is None else list(bookings)", "self.bookings = bookings"))),
    "order": Bug("order", "agenda.py", "agenda.day_agenda orders bookings by start time, then room name",
                 (("entries.sort(key=lambda b: (b.start, b.room))",
                   "entries.sort(key=lambda b: (format_time(b.start), b.room))"),)),
    "notice": Bug("notice", "policy.py", "policy.cancellation_fee measures the notice before the start",
                  (("notice = minutes_between(cancelled_at, starts_at)",
                    "notice = minutes_between(starts_at, cancelled_at)"),)),
}
_HEADER_ROOMS = "from rooms import Booking, Room\n"
_ROOM_STUB = "class StubRoom:\n    def __init__(self, *bookings):\n        self.bookings = list(bookings)\n"


@dataclass
class _Booking:
    """A drawn booking library's facts: its rooms, capacity, cancellation policy, meeting titles and reporters."""

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


def _booking_project(rng: ItemRng) -> tuple[Project, dict[str, object]]:
    """A room-booking library with three planted bugs, each reported in ISSUES.md beside one report that is no bug."""
    booking = _Booking(rng.choice(_BOOKING_PROJECTS), rng.choice(_ORGS), sorted(rng.sample(_ROOMS, 6)),
                       rng.randint(4, 16), rng.choice([24, 36, 48, 72]), rng.choice([2, 3, 4, 6, 12]),
                       rng.choice([25, 30, 40, 60, 75]), rng.sample(_TITLES, 8), rng.sample(_REPORTERS, 4),
                       rng.sample(range(101, 990), 4))
    planted_keys = rng.sample(sorted(_BOOKING_BUGS), 3)
    decoy = rng.choice(["fee_rounding", "merge_touching"])  # the report that asks for a documented behaviour to change
    unseen = set(rng.sample(planted_keys, rng.randint(1, 2)))  # reported, but shown by no visible test
    planted = sorted((_BOOKING_BUGS[k] for k in planted_keys), key=lambda b: (_BOOKING_MODULES.index(b.path), b.key))
    values = {"FREE_HOURS": booking.free_hours, "LATE_HOURS": booking.late_hours,
              "LATE_PERCENT": booking.late_percent}
    modules = {path: _module_text(text, values) for path, text in
               zip(_BOOKING_MODULES, [_CLOCK, _INTERVALS, _ROOMS_MODULE, _AGENDA, _POLICY])}
    morning, price, issues, numbers = _issue_reports(rng, booking, planted_keys, decoy)
    t_clock, am = _clock_tests(rng, unseen)
    t_intervals, s = _interval_tests(rng, unseen)
    t_rooms = _room_tests(booking, unseen, s)
    t_agenda = _agenda_tests(rng, booking, unseen)
    t_policy = _policy_tests(rng, booking, unseen)
    hidden = _Tests(HIDDEN_PATH, "from agenda import day_agenda, free_slots\n"
                                 "from clock import format_time, minutes_between, parse_time\n"
                                 "from intervals import merge, overlaps\n"
                                 "from policy import cancellation_fee, late_fee\n" + _HEADER_ROOMS
                    + _HIDDEN_HELPERS + "\n\n" + _ROOM_STUB)
    groups: dict[str, list[str]] = {key: [] for key in _BOOKING_BUGS}
    groups["regression"] = []
    x, start = _booking_bug_tests(rng, booking, hidden, groups, price)
    _booking_regressions(booking, hidden, groups["regression"], (morning, morning + 60, morning + 120), price, am,
                         x, start)
    tests = [t_agenda, t_clock, t_intervals, t_policy, t_rooms]
    project = Project(modules=modules, bugs=planted, documents={"ISSUES.md": issues},
                      visible={t.path: t.source() for t in tests}, visible_ids=[i for t in tests for i in t.ids()],
                      hidden=hidden.source(), hidden_groups=groups)
    fixed_ids = sorted(numbers[k] for k in planted_keys)
    return project, {"org": booking.org, "project": booking.project_name, "fixed": fixed_ids,
                     "declined": [numbers[decoy]], "issue_ids": sorted(booking.issue_ids)}


def _issue_reports(rng: ItemRng, booking: _Booking, planted_keys: list[str], decoy: str
                   ) -> tuple[int, int, str, dict[str, int]]:
    """ISSUES.md, with values the buggy code really produces: returns the morning start and the booking price the
    reports use, the text, and each report's issue number."""
    rooms, titles, capacity = booking.rooms, booking.titles, booking.capacity
    free_hours, late_hours, late_percent = booking.free_hours, booking.late_hours, booking.late_percent
    morning = rng.randint(8, 9) * 60 + rng.choice([0, 15, 30])
    price = _scan(rng, 1200, 30000, lambda p: p * late_percent % 100 >= 50)
    reports: dict[str, str] = {}
    minute = rng.randint(1, 59)
    reports["noon"] = ("Lunch bookings jump to the night",
                       f'I entered the team lunch as "12:{minute:02d} pm" and it was '
                       f"stored at minute {24 * 60 + minute} of the day, which is after 11 pm. Morning times and "
                       f'"1:{minute:02d} pm" come out right.')
    a, b, c = morning, morning + 60, morning + 120
    reports["touching"] = ("Back-to-back meetings refused",
                           f'{rooms[0]} had "{titles[0]}" from {_clock(a)} to {_clock(b)}. '
                           f'Booking "{titles[1]}" from {_clock(b)} to {_clock(c)} in the same room failed with '
                           f"\"'{titles[1]}' conflicts with '{titles[0]}'\". The first meeting is over when the "
                           "second starts.")
    reports["capacity"] = ("Full room refused",
                           f"{rooms[1]} seats {capacity}. Booking it for exactly {capacity} people "
                           f'fails with "{rooms[1]} holds at most {capacity} people", which is exactly what it holds.')
    reports["shared"] = ("Bookings show up in the wrong room", f"Our setup script creates every room with "
                         f'Room(name, capacity). After booking "{titles[2]}" in {rooms[2]}, the new room {rooms[3]} '
                         f"already listed that booking, and booking {rooms[3]} at the same time failed with a "
                         "conflict.")
    late = rng.randint(10, 11) * 60 + rng.choice([0, 15, 30, 45])
    early = 9 * 60 + rng.choice([0, 15, 30, 45])
    reports["order"] = ("Agenda out of order",
                        f'The day agenda listed "{_agenda_line(titles[3], late, late + 30, rooms[0])}" above '
                        f'"{_agenda_line(titles[4], early, early + 45, rooms[4])}". The earlier meeting should come '
                        "first.")
    days = free_hours // 24 + rng.randint(1, 3)
    reports["notice"] = ("Early cancellations charged in full",
                         f"I cancelled a {price}-cent booking {days} days before "
                         f"it started and was charged the full {price} cents. The rules say cancelling {free_hours} "
                         "hours or more ahead is free.")
    exact = price * late_percent / 100
    reports["fee_rounding"] = ("Late fee rounds the wrong way", f"Cancelling a {price}-cent booking "
                               f"{late_hours} hours ahead cost {price * late_percent // 100} cents, but "
                               f"{late_percent} % "
                               f"of {price} is {exact:g}. Fees should be rounded to the nearest cent, so "
                               f"{price * late_percent // 100 + 1} cents.")
    reports["merge_touching"] = ("Free-slot finder glues separate meetings", f'intervals.merge turns "{titles[5]}" '
                                 f"({_clock(a)}-{_clock(b)}) and \"{titles[6]}\" ({_clock(b)}-{_clock(c)}) into one "
                                 f"busy block from {_clock(a)} to {_clock(c)}. They are two meetings; merge should "
                                 "keep them apart.")
    reported = [*planted_keys, decoy]
    rng.shuffle(reported)
    numbers = dict(zip(reported, booking.issue_ids))
    issues = "# Open issues\n\n" + "\n\n".join(
        f"## #{numbers[key]}: {reports[key][0]}\n\nReported by {booking.reporters[i]}. {reports[key][1]}"
        for i, key in enumerate(reported)) + "\n"
    return morning, price, issues, numbers


def _clock_tests(rng: ItemRng, unseen: set[str]) -> tuple[_Tests, int]:
    """Visible tests of clock.py, and the morning time they parse (a regression test reuses it)."""
    t_clock = _Tests("tests/test_clock.py", "from clock import format_time, minutes_between, parse_time\n")
    am, pm = rng.randint(1, 11) * 60 + rng.randint(0, 59), rng.randint(13, 23) * 60 + rng.randint(0, 59)
    t_clock.add("test_parse_time", f'assert parse_time("{_clock(am)}") == {am}, parse_time("{_clock(am)}")',
                f'assert parse_time("{_clock(pm)}") == {pm}, parse_time("{_clock(pm)}")')
    if "noon" not in unseen:
        noon = 12 * 60 + rng.randint(1, 59)
        t_clock.add("test_parse_time_after_noon", *_eq(f'parse_time("{_clock(noon)}")', noon))
    t_clock.add("test_format_time", *_eq(f"format_time({pm})", _clock(pm)))
    t_clock.add("test_minutes_between", *_eq(f"minutes_between({am}, {pm})", pm - am))
    return t_clock, am


def _interval_tests(rng: ItemRng, unseen: set[str]) -> tuple[_Tests, int]:
    """Visible tests of intervals.py, and the start they use (the room tests reuse it)."""
    t_intervals = _Tests("tests/test_intervals.py", "from intervals import merge, overlaps\n")
    s = rng.randint(8, 15) * 60
    t_intervals.add("test_overlapping_spans", f"assert overlaps(({s}, {s + 60}), ({s + 30}, {s + 90}))",
                    f"assert not overlaps(({s}, {s + 60}), ({s + 90}, {s + 120}))")
    if "touching" not in unseen:
        t_intervals.add("test_touching_spans_do_not_overlap",
                        f"assert not overlaps(({s}, {s + 45}), ({s + 45}, {s + 90}))")
    spans = [(s + 120, s + 180), (s, s + 60), (s + 30, s + 90)]
    t_intervals.add("test_merge_overlapping", *_eq(f"merge({spans!r})", _merged(spans)))
    return t_intervals, s


def _room_tests(booking: _Booking, unseen: set[str], s: int) -> _Tests:
    """Visible tests of rooms.py."""
    rooms, titles, capacity = booking.rooms, booking.titles, booking.capacity
    t_rooms = _Tests("tests/test_rooms.py", _HEADER_ROOMS)
    t_rooms.add("test_conflict_refused", f'room = Room("{rooms[1]}", {capacity})',
                f'room.book("{titles[0]}", {s}, {s + 60}, 2)',
                *_raising(f'room.book("{titles[1]}", {s + 30}, {s + 90}, 2)', "ValueError"))
    if "capacity" not in unseen:
        t_rooms.add("test_room_can_be_full", f'room = Room("{rooms[1]}", {capacity})',
                    f'booking = room.book("{titles[2]}", {s}, {s + 30}, {capacity})',
                    f"assert booking.attendees == {capacity}, booking")
    if "shared" not in unseen:
        t_rooms.add("test_rooms_do_not_share_bookings", f'first = Room("{rooms[2]}", {capacity})',
                    f'second = Room("{rooms[3]}", {capacity})', f'first.book("{titles[3]}", {s}, {s + 30}, 2)',
                    "assert second.bookings == [], second.bookings")
    return t_rooms


def _agenda_tests(rng: ItemRng, booking: _Booking, unseen: set[str]) -> _Tests:
    """Visible tests of agenda.py."""
    rooms, titles = booking.rooms, booking.titles
    t_agenda = _Tests("tests/test_agenda.py", "from agenda import day_agenda, free_slots\n" + _HEADER_ROOMS + "\n\n"
                      + _ROOM_STUB)
    spans = [(8 * 60 + rng.choice([0, 15]), 8 * 60 + 45), (9 * 60 + rng.choice([0, 30]), 9 * 60 + 50)]
    line_a = _book_line(titles[0], *spans[1], rooms[0])
    line_b = _book_line(titles[1], *spans[0], rooms[1])
    t_agenda.add("test_morning_agenda", *_eq(f"day_agenda([StubRoom({line_a}), StubRoom({line_b})])",
                                             [_agenda_line(titles[1], *spans[0], rooms[1]),
                                              _agenda_line(titles[0], *spans[1], rooms[0])]))
    if "order" not in unseen:
        early, late = 9 * 60 + rng.choice([0, 20, 40]), 10 * 60 + rng.choice([0, 10, 30])
        t_agenda.add("test_agenda_in_time_order",
                     *_eq(f"day_agenda([StubRoom({_book_line(titles[2], late, late + 30, rooms[0])}, "
                          f"{_book_line(titles[3], early, early + 30, rooms[0])})])",
                          [_agenda_line(titles[3], early, early + 30, rooms[0]),
                           _agenda_line(titles[2], late, late + 30, rooms[0])]))
    opening, closing = 8 * 60, 18 * 60
    busy = [(9 * 60, 10 * 60), (rng.randint(11, 13) * 60, 14 * 60 + 30)]
    busy_room = ", ".join(_book_line(t, *span, rooms[2]) for t, span in zip(titles[4:], busy))
    t_agenda.add("test_free_slots", *_eq(f"free_slots(StubRoom({busy_room}), {opening}, {closing}, 30)",
                                         _free(busy, opening, closing, 30)))
    return t_agenda


def _policy_tests(rng: ItemRng, booking: _Booking, unseen: set[str]) -> _Tests:
    """Visible tests of policy.py."""
    t_policy = _Tests("tests/test_policy.py", "from policy import cancellation_fee, late_fee\n")
    even_price = rng.randint(10, 200) * 100
    t_policy.add("test_late_fee", *_eq(f"late_fee({even_price})", even_price * booking.late_percent // 100))
    start = rng.randint(3, 9) * 1440 + rng.randint(8, 17) * 60
    t_policy.add("test_short_notice_pays_full",
                 *_eq(f"cancellation_fee({even_price}, {start}, {start - 30})", even_price))
    if "notice" not in unseen:
        t_policy.add("test_early_cancellation_is_free",
                     *_eq(f"cancellation_fee({even_price}, {start}, {start - booking.free_hours * 60 - 1440})", 0))
    return t_policy


def _booking_bug_tests(rng: ItemRng, booking: _Booking, hidden: _Tests, groups: dict[str, list[str]], price: int
                       ) -> tuple[int, int]:
    """The hidden tests of each bug, added to its group; returns the meeting start and the cancelled booking's start
    they use (the regression tests reuse them)."""
    rooms, titles, capacity = booking.rooms, booking.titles, booking.capacity
    free_hours, late_hours, late_percent = booking.free_hours, booking.late_hours, booking.late_percent
    m1, m2 = rng.randint(1, 59), rng.randint(1, 59)
    groups["noon"].append(hidden.add("test_noon_hour", f'_same(parse_time("12:{m1:02d} pm"), {720 + m1})',
                                     '_same(parse_time("12:00 pm"), 720)', f'_same(parse_time("12:{m2:02d} am"), {m2})',
                                     f'_same(parse_time("1:{m2:02d} pm"), {780 + m2})'))
    x = rng.randint(7, 16) * 60 + rng.choice([0, 10, 20, 30])
    groups["touching"].append(hidden.add("test_touching_spans",
                                         f"_same(overlaps(({x}, {x + 50}), ({x + 50}, {x + 90})), False)",
                                         f"_same(overlaps(({x + 50}, {x + 90}), ({x}, {x + 50})), False)",
                                         f"_same(overlaps(({x}, {x + 50}), ({x + 49}, {x + 90})), True)"))
    groups["touching"].append(hidden.add("test_back_to_back_bookings", f'room = Room("{rooms[4]}", {capacity}, [])',
                                         f'room.book("{titles[5]}", {x}, {x + 50}, 1)',
                                         f'room.book("{titles[6]}", {x + 50}, {x + 90}, 1)',
                                         f'room.book("{titles[7]}", {x - 25}, {x}, 1)', "_same(len(room.bookings), 3)"))
    groups["capacity"].append(hidden.add("test_capacity_boundary", f'room = Room("{rooms[5]}", {capacity + 2}, [])',
                                         f'full = room.book("{titles[0]}", {x}, {x + 30}, {capacity + 2})',
                                         f"_same(full.attendees, {capacity + 2})",
                                         f'_raises(ValueError, room.book, "{titles[1]}", {x + 60}, {x + 90}, '
                                         f"{capacity + 3})"))
    groups["shared"].append(hidden.add("test_rooms_own_their_bookings", f'first = Room("{rooms[0]}", {capacity})',
                                       f'second = Room("{rooms[1]}", {capacity})',
                                       f'first.book("{titles[2]}", {x}, {x + 30}, 1)', "_same(second.bookings, [])",
                                       f'second.book("{titles[3]}", {x}, {x + 30}, 1)',
                                       "_same(len(first.bookings), 1)"))
    seed_booking = _book_line(titles[4], x - 200, x - 100, rooms[2])
    groups["shared"].append(hidden.add("test_room_copies_given_bookings", f"given = [{seed_booking}]",
                                       f'room = Room("{rooms[2]}", {capacity}, given)',
                                       f'room.book("{titles[5]}", {x}, {x + 30}, 1)', "_same(len(given), 1)",
                                       "_same(len(room.bookings), 2)"))
    groups["order"].append(_agenda_order_test(rng, booking, hidden))
    start = rng.randint(4, 12) * 1440 + rng.randint(8, 17) * 60 + rng.choice([0, 30])
    groups["notice"].append(hidden.add(
        "test_notice_before_start", f"_same(cancellation_fee({price}, {start}, {start - free_hours * 60}), 0)",
        f"_same(cancellation_fee({price}, {start}, {start - free_hours * 60 - 2000}), 0)",
        f"_same(cancellation_fee({price}, {start}, {start - late_hours * 60}), {price * late_percent // 100})",
        f"_same(cancellation_fee({price}, {start}, {start - late_hours * 60 + 1}), {price})"))
    groups["notice"].append(hidden.add(
        "test_cancelled_after_start",
        f"_same(cancellation_fee({price}, {start}, {start + free_hours * 60 + 60}), {price})"))
    return x, start


def _agenda_order_test(rng: ItemRng, booking: _Booking, hidden: _Tests) -> str:
    """The hidden test of the order bug: an agenda across rooms sorted by start time, then room."""
    rooms, titles = booking.rooms, booking.titles
    t9, t10, t13, t11 = (9 * 60 + rng.choice([5, 25, 45]), 10 * 60 + rng.choice([0, 15, 35]),
                         13 * 60 + rng.choice([0, 20]), 11 * 60 + rng.choice([0, 30]))
    entries = [(titles[0], t10, t10 + 30, rooms[0]), (titles[1], t13, t13 + 60, rooms[1]),
               (titles[2], t11, t11 + 30, rooms[3]), (titles[3], t9, t9 + 40, rooms[2]),
               (titles[4], t11, t11 + 45, rooms[1])]
    by_room: dict[str, list[str]] = {}
    for title, start, end, room in entries:
        by_room.setdefault(room, []).append(_book_line(title, start, end, room))
    stub_rooms = ", ".join(f"StubRoom({', '.join(lines)})" for lines in by_room.values())
    expected_lines = [_agenda_line(t, s_, e, r) for t, s_, e, r in sorted(entries, key=lambda e: (e[1], e[3]))]
    return hidden.add("test_agenda_order", f"_same(day_agenda([{stub_rooms}]), {expected_lines!r})")


def _booking_regressions(booking: _Booking, hidden: _Tests, regression: list[str], spans: tuple[int, int, int],
                         price: int, am: int, x: int, start: int) -> None:
    """Hidden tests of behaviour that was already right, and of the behaviour the declined report asks to change."""
    rooms, titles, capacity, late_percent = booking.rooms, booking.titles, booking.capacity, booking.late_percent
    a, b, c = spans
    regression.append(hidden.add("test_late_fee_rounds_down",
                                 f"_same(late_fee({price}), {price * late_percent // 100})",
                                 f"_same(late_fee({price + 1}), {(price + 1) * late_percent // 100})"))
    regression.append(hidden.add("test_merge_joins_touching", f"_same(merge([({b}, {c}), ({a}, {b})]), [({a}, {c})])",
                                 f"_same(merge([({a}, {b}), ({c}, {c + 30})]), [({a}, {b}), ({c}, {c + 30})])"))
    regression.append(hidden.add("test_minutes_between_direction", f"_same(minutes_between({b}, {a}), {a - b})",
                                 f"_same(minutes_between({a}, {c}), {c - a})"))
    regression.append(hidden.add("test_clock_ordinary", '_same(format_time(0), "12:00 am")',
                                 '_same(format_time(750), "12:30 pm")', f'_same(parse_time("{_clock(am)}"), {am})',
                                 '_same(parse_time("11:59 pm"), 1439)', '_raises(ValueError, parse_time, "13:00 pm")'))
    busy = [(a, b), (b, c), (c + 45, c + 75)]
    regression.append(hidden.add(
        "test_free_slots_ordinary",
        f"_same(free_slots(StubRoom({', '.join(_book_line(t, *span, rooms[0]) for t, span in zip(titles[5:], busy))}), "
        f"{7 * 60}, {19 * 60}, 40), {_free(busy, 7 * 60, 19 * 60, 40)!r})"))
    regression.append(hidden.add("test_booking_conflict", f'room = Room("{rooms[3]}", {capacity}, [])',
                                 f'room.book("{titles[0]}", {x}, {x + 60}, 1)',
                                 f'_raises(ValueError, room.book, "{titles[1]}", {x + 20}, {x + 40}, 1)',
                                 f'_raises(ValueError, room.book, "{titles[2]}", {x + 30}, {x + 30}, 1)'))
    regression.append(hidden.add("test_short_notice_full_price",
                                 f"_same(cancellation_fee({price}, {start}, {start - 10}), {price})"))


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


def booking_issues(rng: ItemRng) -> AgTask:
    """Triage a booking library's issue reports: fix the real bugs at their root, decline the report that is no bug."""
    project, facts = _booking_project(rng)
    prompt = _booking_prompt(facts, f"{rng.randint(2, 6)}.{rng.randint(0, 19)}")
    answer = f"fixed: {', '.join(str(n) for n in facts['fixed'])}\ndeclined: {facts['declined'][0]}"
    return _assemble(project, prompt, ["ISSUES.md", *_BOOKING_MODULES], answer,
                     lambda submitted: _triage_answer_ok(facts, submitted),
                     "the answer lists exactly the reports that were bugs as fixed and the report that was no bug "
                     "as declined")


def _booking_prompt(facts: dict[str, object], release: str) -> str:
    """The triage before a release, and the answer's two lines."""
    org = str(facts["org"])
    return (f"{org[0].upper() + org[1:]} uses `{facts['project']}`, a small Python library for booking meeting "
            "rooms (times are "
            "minutes after midnight; spans are (start, end) pairs of minutes). Files: ISSUES.md (open user reports), "
            "clock.py, intervals.py, rooms.py, agenda.py, policy.py, and tests in tests/. The docstrings in the "
            f"modules document the intended behaviour. Before release {release}, triage every report in ISSUES.md: "
            "a report describing behaviour that contradicts the docstrings is a bug, so fix it at its root cause; a "
            "report asking for behaviour the docstrings rule out is not a bug, so decline it and leave that "
            "behaviour unchanged. Your final code will be checked by hidden tests together with the original "
            "visible tests (edits to test files are ignored). When you are done, call submit with two lines: "
            "`fixed: <issue numbers>` and `declined: <issue numbers>`.")


def _triage_answer_ok(facts: dict[str, object], submitted: str | None) -> bool:
    """True when the answer lists exactly the fixed and the declined reports."""
    sets = _issue_sets(submitted, facts["issue_ids"])
    return sets is not None and sets == (set(facts["fixed"]), set(facts["declined"]))
