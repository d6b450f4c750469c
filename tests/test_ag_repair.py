"""ESAC-AG software repair tasks: scripted agents, an independent solver that only reads tool output, each trap
failing its check, hidden-test isolation (twins defeat hard-coding) and hostile tool input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import Call, script_json
from esac_kit.ag.tasks import repair
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

TASKS = {"repair-billing-spec": (repair.billing_spec, repair._billing_project),
         "repair-booking-issues": (repair.booking_issues, repair._booking_project)}
ROOT = Path(__file__).resolve().parent.parent
SEEDS = 10  # the reference, the null agent and the independent solver
TRAP_SEEDS = 3  # each trap seed costs several sandbox runs


def rng(task_id: str, seed: int) -> ItemRng:
    return ItemRng(derive_item_key(f"seed-{seed}", "ag", task_id, 1))


def generate(task_id: str, seed: int):
    return TASKS[task_id][0](rng(task_id, seed))


def project_of(task_id: str, seed: int):
    return TASKS[task_id][1](rng(task_id, seed))


def scale(task_id: str):
    return read_item(ROOT / "items" / "ag" / f"{task_id}.toml").efficiency


def finished(task, files: dict[str, str], answer: str | None = None) -> dict[str, bool]:
    """The checks on a final state given as files (the reference's answer unless another is given)."""
    env = task.make_env()
    env.state["files"] = dict(files)
    return task.evaluate(env, task.reference[-1].args["answer"] if answer is None else answer)


def bug_check(project, key: str) -> str:
    return f"bug_{[b.key for b in project.bugs].index(key) + 1}"


@pytest.mark.parametrize("task_id", TASKS)
def test_reference_succeeds_inside_the_envelope_with_40_calls(task_id):
    for seed in range(SEEDS):
        task = generate(task_id, seed)
        outcome = drive(task, task.reference, scale(task_id))
        assert outcome["success"] and outcome["score"] == 1.0, (seed, outcome["checks"])
        assert outcome["efficiency"]["action_level"] == 6, (seed, outcome["efficiency"])
        assert outcome["counts"]["redundant"] == outcome["counts"]["rework"] == outcome["counts"]["invalid"] == 0
        assert outcome["counts"]["tool_calls"] >= 40, seed
        assert sum(c.name == "run_tests" for c in task.reference) >= 4  # the tests are run through the tool


@pytest.mark.parametrize("task_id", TASKS)
def test_wasteful_null_and_partial_agents(task_id):
    for seed in range(SEEDS):
        task = generate(task_id, seed)
        if seed < TRAP_SEEDS:
            wasteful = drive(task, task.wasteful, scale(task_id))
            assert wasteful["success"], (seed, wasteful["checks"])
            assert wasteful["efficiency"]["action_level"] < 6
            assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1

        null = drive(task, task.scripts()["null"], scale(task_id))
        assert null["score"] == 0.0 and not null["success"]
        assert not any(null["checks"].values()), null["checks"]


@pytest.mark.parametrize("task_id", TASKS)
def test_each_hidden_group_tracks_its_bug(task_id):
    """All fixed: every check passes; each bug left alone (the rest fixed) fails its own check; nothing fixed fails
    every bug check (a masked half included) and the visible tests."""
    for seed in range(2):
        project, _ = project_of(task_id, seed)
        task = generate(task_id, seed)
        files = project.files()
        keys = frozenset(b.key for b in project.bugs)
        assert all(finished(task, {**files, **project.sources(keys)}).values()), seed
        nothing = finished(task, files)
        assert not nothing["tests_pass"] and not any(nothing[f"bug_{i}"] for i in range(1, 5)), (seed, nothing)
        for bug in project.bugs:
            verdicts = finished(task, {**files, **project.sources(keys - {bug.key})})
            assert not verdicts[bug_check(project, bug.key)], (seed, bug.key)
        initial = repair.run_project_tests(files)
        assert any(status != "PASS" for status, _ in initial.results.values()), seed


@pytest.mark.parametrize("task_id", TASKS)
def test_generation_is_deterministic_varied_and_fast(task_id):
    import time

    prompts = set()
    for seed in range(SEEDS):
        started = time.perf_counter()
        first = generate(task_id, seed)
        assert time.perf_counter() - started < 0.2
        second = generate(task_id, seed)
        assert first.prompt == second.prompt
        for name in ("reference", "wasteful"):
            assert script_json(getattr(first, name)) == script_json(getattr(second, name))
        assert first.make_env().state == second.make_env().state
        prompts.add(first.prompt)
    assert len(prompts) == SEEDS


def test_tool_outputs_stay_compact():
    for task_id in TASKS:
        for seed in range(3):
            task = generate(task_id, seed)
            episode = Episode(task)
            for call in task.reference[:-1]:
                text, error = episode.act(call.name, dict(call.args))
                assert not error and len(text) <= 1500, (task_id, call, len(text))


# ---------------------------------------------------------------- the independent solver

# What an expert spots when reading each module against its spec or docstrings: a wrong line and its right form.
# The solver knows these patterns, never the generator's bugs; the facts it needs (tax rates) it reads from SPEC.md.
_PATTERNS = [
    ("money.py", "    return round(cents * rate_bp / 10000)\n",
     "    numerator = cents * rate_bp\n    whole, rest = divmod(abs(numerator), 10000)\n"
     "    if 2 * rest >= 10000:\n        whole += 1\n    return whole if numerator >= 0 else -whole\n",
     "money.percent_of"),
    ("money.py", "{rest}", "{rest:02d}", "money.format_cents"),
    ("coupons.py", "return -percent_of(", "return percent_of(", "coupons.coupon_discount"),
    ("invoice.py", "self.subtotal() + self.discount()", "self.subtotal() - self.discount()", "invoice.Invoice.net"),
    ("charges.py", "SHIPPING_FEES[region.title()]", "SHIPPING_FEES[region]", "charges.shipping_for"),
    ("invoice.py", "shipping_for(self.subtotal(),", "shipping_for(self.net(),", "invoice.Invoice.shipping"),
    ("pricing.py", "quantity > VOLUME_THRESHOLD", "quantity >= VOLUME_THRESHOLD", "pricing.line_total"),
    ("invoice.py", "notes=[]):\n", "notes=None):\n    notes = [] if notes is None else list(notes)\n",
     "invoice.build_invoice"),
    ("report.py", "key=lambda pair: (pair[1], pair[0]), reverse=True)", "key=lambda pair: (-pair[1], pair[0]))",
     "report.rank_customers"),
    ("payments.py", "reversed(range(len(balances)))", "range(len(balances))", "payments.allocate"),
    ("payments.py", "days_overdue < GRACE_DAYS", "days_overdue <= GRACE_DAYS", "payments.late_fee"),
    ("refunds.py", "share = -(-line_total(sku, quantity) * returned // quantity)",
     "share = line_total(sku, quantity) * returned // quantity", "refunds.refund_for"),
    ("instalments.py", "index >= parts - extra", "index < extra", "instalments.split_evenly"),
    ("clock.py", "    if suffix == \"pm\":\n        hours += 12\n    elif hours == 12:\n        hours = 0\n",
     "    hours = hours % 12 + (12 if suffix == \"pm\" else 0)\n", "clock.parse_time"),
    ("clock.py", "    return earlier - later\n", "    return later - earlier\n", "clock.minutes_between"),
    ("intervals.py", "a[0] <= b[1] and b[0] <= a[1]", "a[0] < b[1] and b[0] < a[1]", "intervals.overlaps"),
    ("policy.py", "minutes_between(starts_at, cancelled_at)", "minutes_between(cancelled_at, starts_at)",
     "policy.cancellation_fee"),
    ("rooms.py", "attendees >= self.capacity", "attendees > self.capacity", "rooms.Room.book"),
    ("rooms.py", "bookings=[]):", "bookings=None):", "rooms.Room"),
    ("rooms.py", "self.bookings = bookings\n", "self.bookings = [] if bookings is None else list(bookings)\n",
     "rooms.Room"),
    ("agenda.py", "(format_time(b.start), b.room)", "(b.start, b.room)", "agenda.day_agenda"),
    ("hire.py", "    halves = length // 30\n", "    halves = -(-length // 30)\n", "hire.billed_minutes"),
    ("usage.py", "        end = min(end, closing)\n", "        start, end = max(start, opening), min(end, closing)\n",
     "usage.booked_minutes"),
]
# Reports asking for what the docstrings rule out, by what they ask (the solver's reading of ISSUES.md).
_DECLINE_ASKS = ["rounded to the nearest cent", "merge should keep them apart", "billed as one half hour"]


def _read_whole(episode: Episode, path: str) -> str:
    """A file's text rebuilt from read_file pages (line numbers stripped), following the footers."""
    lines, start = [], 1
    while True:
        text, error = episode.act("read_file", {"path": path, "start_line": start})
        assert not error, text
        *body, footer = text.splitlines()
        lines += [re.sub(r"^\s*\d+\| ?", "", line, count=1) for line in body]
        following = re.search(r"start_line=(\d+)", footer)
        if not following:
            return "\n".join(lines) + "\n"
        start = int(following.group(1))


def _solve(task) -> Episode:
    """Read every file through the tools, fix what the patterns and SPEC.md's rates show, run the tests, submit."""
    episode = Episode(task)
    listed, _ = episode.act("list_files", {})
    paths = re.findall(r'"path": "([^"]+)"', listed)
    texts = {path: _read_whole(episode, path) for path in paths}
    changed = []
    for path, wrong, right, name in _PATTERNS:
        if path in texts and wrong in texts[path]:
            text, error = episode.act("replace_in_file", {"path": path, "old": wrong, "new": right})
            assert not error, text
            texts[path] = texts[path].replace(wrong, right)
            changed.append(name)
    if "SPEC.md" in texts:  # rule 7 lists the rates: "north 8.25 %"
        rule = re.search(r"\n7\. Tax.*?\n\n", texts["SPEC.md"], re.S).group(0)
        for region, percent in re.findall(r"(\w+) (\d+(?:\.\d+)?) %", rule):
            wanted = round(float(percent) * 100)
            found = re.search(rf'    "{region}": (\d+),', texts["charges.py"])
            if found and int(found.group(1)) != wanted:
                episode.act("replace_in_file", {"path": "charges.py", "old": found.group(0),
                                                "new": f'    "{region}": {wanted},'})
                changed.append("charges.RATES_BP")
        answer = ", ".join(dict.fromkeys(changed))
    else:
        reports = re.findall(r"## #(\d+): .*?\n\n(.*?)(?=\n## #|\Z)", texts["ISSUES.md"], re.S)
        declined = [n for n, body in reports if any(ask in body for ask in _DECLINE_ASKS)]
        fixed = [n for n, _ in reports if n not in declined]
        answer = f"fixed: {', '.join(fixed)}\ndeclined: {', '.join(declined)}"
    report, _ = episode.act("run_tests", {})
    assert " 0 failed" in report, report
    episode.act("submit", {"answer": answer})
    return episode


@pytest.mark.parametrize("task_id", TASKS)
def test_an_independent_solver_reading_tool_output_passes_every_check(task_id):
    for seed in range(SEEDS):
        task = generate(task_id, seed)
        outcome = _solve(task).outcome(scale(task_id))
        assert outcome["success"], (seed, outcome["checks"], outcome["answer"])


# ---------------------------------------------------------------- the traps, each failing its check


def _patched(files: dict[str, str], path: str, old: str, new: str) -> dict[str, str]:
    assert files[path].count(old) == 1, (path, old)
    return {**files, path: files[path].replace(old, new)}


def test_billing_traps_fail_their_checks():
    task_id = "repair-billing-spec"
    seen = set()
    for seed in range(40):
        project, facts = project_of(task_id, seed)
        variant = (facts["pair"][0], facts["shared"])
        if variant in seen:
            continue  # one seed of each pair and shared-helper combination
        seen.add(variant)
        task = generate(task_id, seed)
        fixed = {**project.files(), **project.sources(frozenset(b.key for b in project.bugs))}
        # The TODO beside the strict free-shipping line invites a change that SPEC.md rule 8 rules out.
        verdicts = finished(task, _patched(fixed, "charges.py", "amount > FREE_SHIPPING_OVER",
                                           "amount >= FREE_SHIPPING_OVER"))
        assert not verdicts["tests_pass"], seed
        # Listing every candidate instead of what was changed.
        every = ", ".join(n for b in repair._billing_bugs(facts["billing"]).values() for n in b.names)
        assert not finished(task, fixed, every)["answer"]
        # Leaving the bug that only SPEC.md shows.
        solo = str(facts["solo"])
        left = {**fixed, **project.sources(frozenset(b.key for b in project.bugs) - {solo})}
        assert not finished(task, left)[bug_check(project, solo)]
        assert repair.run_project_tests(left).passed(project.visible_ids)  # the visible tests cannot tell
        first, second = facts["pair"]
        if first == "coupon_sign":
            # Fixing the sign in coupons and then negating again in Invoice.discount keeps every total right.
            masked = _patched({**fixed, **project.sources(frozenset(b.key for b in project.bugs) - {"net_sign"})},
                              "invoice.py", "return coupon_discount(self.subtotal(), self.coupon)",
                              "return -coupon_discount(self.subtotal(), self.coupon)")
            assert repair.run_project_tests(masked).passed(project.visible_ids)
            assert not finished(task, masked)[bug_check(project, "net_sign")]
        if facts["shared"] == "padding":
            # Padding the statement's cents itself instead of fixing money.format_cents.
            symptom = {**fixed, **project.sources(frozenset(b.key for b in project.bugs) - {"padding"})}
            symptom = _patched(symptom, "statement.py", "from money import format_cents\n",
                               "from money import format_cents as _shown\n\n\ndef format_cents(cents):\n"
                               "    sign = '-' if cents < 0 else ''\n"
                               "    return f'{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}'\n")
            verdicts = finished(task, symptom)
            assert repair.run_project_tests(symptom).results["tests/test_statement.py::test_statement"][0] == "PASS"
            assert not verdicts[bug_check(project, "padding")]


def test_billing_rounding_patched_at_its_caller_fails():
    task_id = "repair-billing-spec"
    seen = 0
    for seed in range(40):
        project, facts = project_of(task_id, seed)
        if facts["shared"] != "rounding" or facts["site"] != "tax":
            continue
        task = generate(task_id, seed)
        keys = frozenset(b.key for b in project.bugs)
        symptom = _patched({**project.files(), **project.sources(keys - {"rounding"})}, "charges.py",
                           "    return percent_of(amount, RATES_BP[region])\n",
                           "    numerator = amount * RATES_BP[region]\n    whole, rest = divmod(abs(numerator), 10000)\n"
                           "    return whole + (2 * rest >= 10000)\n")
        assert repair.run_project_tests(symptom).passed(project.visible_ids), seed
        assert not finished(task, symptom)[bug_check(project, "rounding")]
        seen += 1
    assert seen >= 1


@pytest.mark.parametrize("task_id", TASKS)
def test_hard_coding_the_visible_values_fails_the_twins(task_id):
    """Leaving a bug in and answering each failing visible call from a table of the values the test expects passes
    every visible test, but not the hidden twins of those tests (the same checks on other seeded values)."""
    hits = 0
    for seed in range(TRAP_SEEDS):
        project, facts = project_of(task_id, seed)
        task = generate(task_id, seed)
        files, keys = project.files(), frozenset(b.key for b in project.bugs)
        pair = {"coupon_sign", "net_sign", "ship_region", "ship_base", "direction", "notice"}
        for left in ({b.key for b in project.bugs if b.key not in pair and b.key != facts.get("third")
                      and b.key != facts.get("solo")}, keys & pair):
            sources = {**files, **project.sources(keys - left)}
            failing = [t for t, (s, _) in repair.run_project_tests(sources).results.items() if s != "PASS"]
            forged = _hard_code(sources, failing)
            if forged is None or not failing:
                continue
            assert repair.run_project_tests(forged).passed(project.visible_ids), (seed, left, failing)
            assert not finished(task, forged)["tests_pass"], (seed, left)
            hits += 1
    assert hits >= TRAP_SEEDS


def _hard_code(sources: dict[str, str], failing: list[str]) -> dict[str, str] | None:
    """The project with every failing visible call `F(literals...) == EXPECTED` answered from a table keyed by its
    literal arguments; None when a failing test has a check of another form."""
    import ast

    tables: dict[str, dict[str, object]] = {}
    for test_id in failing:
        path, name = test_id.split("::")
        function = next(n for n in ast.parse(sources[path]).body if isinstance(n, ast.FunctionDef) and n.name == name)
        assigned = {}
        found = False
        for node in function.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                assigned[ast.unparse(node.targets[0])] = node.value
            if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
                left = node.test.left
                call = assigned.get(ast.unparse(left)) if isinstance(left, ast.Name) else left
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                    return None
                key = []
                for argument in call.args:
                    try:
                        key.append(ast.literal_eval(argument))
                    except ValueError:
                        continue  # an object argument: the table keys on the literals only
                tables.setdefault(call.func.id, {})[repr(tuple(key))] = ast.literal_eval(node.test.comparators[0])
                found = True
        if not found:
            return None
    forged = dict(sources)
    for function, table in tables.items():
        module = next(p for p, s in forged.items() if "/" not in p and f"\ndef {function}(" in s)
        forged[module] = (forged[module].replace(f"\ndef {function}(", f"\ndef _{function}_inner(", 1)
                          + f"\n\n_TABLE_{function} = {table!r}\n\n\ndef {function}(*args):\n"
                          "    import ast\n\n    def literal(a):\n        try:\n"
                          "            return ast.literal_eval(repr(a)) == a\n        except (ValueError, SyntaxError):\n"
                          "            return False\n\n"
                          "    key = repr(tuple(a for a in args if literal(a)))\n"
                          f"    if key in _TABLE_{function}:\n        return _TABLE_{function}[key]\n"
                          f"    return _{function}_inner(*args)\n")
    return forged


def test_booking_traps_fail_their_checks():
    task_id = "repair-booking-issues"
    seen = set()
    for seed in range(40):
        project, facts = project_of(task_id, seed)
        if facts["root"] in seen:
            continue  # one seed of each shared root
        seen.add(facts["root"])
        task = generate(task_id, seed)
        keys = frozenset(b.key for b in project.bugs)
        files = project.files()
        fixed = {**files, **project.sources(keys)}
        # Fixing the reported helper but not the bug its old behaviour masked: the policy tests now fail.
        unmasked = {**files, **project.sources(keys - {"notice"})}
        assert not finished(task, unmasked)[bug_check(project, "notice")]
        assert not repair.run_project_tests(unmasked).passed(project.visible_ids)
        # Patching free_slots and the hire at the callers instead of fixing clock.minutes_between: the policy stays
        # right by accident, the helper stays wrong.
        callers = {**files, **project.sources(keys - {"direction", "notice"})}
        callers = _patched(callers, "agenda.py", "from clock import format_time, minutes_between\n",
                           "from clock import format_time\n\n\ndef minutes_between(a, b):\n    return b - a\n")
        callers = _patched(callers, "hire.py", "from clock import minutes_between\n",
                           "def minutes_between(a, b):\n    return b - a\n")
        callers = _patched(callers, "usage.py", "from clock import minutes_between\n",
                           "def minutes_between(a, b):\n    return b - a\n")
        assert repair.run_project_tests(callers).passed(project.visible_ids), seed
        assert not finished(task, callers)[bug_check(project, "direction")]
        # The shared helper patched where one report points.
        if facts["root"] == "touching":
            symptom = _patched({**fixed, **project.sources(keys - {"touching"})}, "rooms.py",
                               "if overlaps((start, end), (other.start, other.end)):",
                               "if overlaps((start, end), (other.start, other.end)) and start != other.end "
                               "and end != other.start:")
            assert not finished(task, symptom)[bug_check(project, "touching")]
        # Doing what a declined report asks, and declining nothing.
        changed = _patched(fixed, "policy.py", "return price_cents * LATE_PERCENT // 100",
                           "return -(-price_cents * LATE_PERCENT // 100)")
        assert not finished(task, changed)["tests_pass"]
        changed = _patched(fixed, "hire.py", "MINIMUM_MINUTES = 60", "MINIMUM_MINUTES = 30")
        assert not finished(task, changed)["tests_pass"]
        fixed_line = task.reference[-1].args["answer"].splitlines()[0]
        assert not finished(task, fixed, fixed_line + "\ndeclined: none")["answer"]
        everything = ", ".join(map(str, facts["issue_ids"]))
        assert not finished(task, fixed, f"fixed: {everything}\ndeclined: {facts['declined'][0]}")["answer"]


def test_answers_are_read_leniently_but_precisely():
    known = [101, 283, 458, 771]
    assert repair._issue_sets("Fixed: #458, #771 and #101.\nDeclined: #283 (documented rounding)", known) \
        == ({101, 458, 771}, {283})
    assert repair._issue_sets("fixed: 458, 771, 101; declined: 283", known) == ({101, 458, 771}, {283})
    assert repair._issue_sets("I fixed three bugs.\nfixed=101 458 771\ndeclined=283", known) == ({101, 458, 771}, {283})
    assert repair._issue_sets("fixed: 101, 458, 771", known) is None
    assert repair._issue_sets("", known) is None

    bugs = [repair.Bug("a", "invoice.py", "", (), ("invoice.Invoice.net", "Invoice.net")),
            repair.Bug("b", "money.py", "", (), ("money.percent_of",))]
    assert repair._names_answer_ok("Changed invoice.Invoice.net and money.percent_of.", bugs)
    assert repair._names_answer_ok("MONEY.PERCENT_OF, Invoice.net", bugs)
    assert not repair._names_answer_ok("money.percent_of, invoice.Invoice.network", bugs)
    assert not repair._names_answer_ok("percent_of, net", bugs)
    assert not repair._names_answer_ok(None, bugs)


# ---------------------------------------------------------------- tools under hostile input


@pytest.mark.parametrize("task_id", TASKS)
def test_hostile_input_gives_tool_errors(task_id):
    task = generate(task_id, 1)
    episode = Episode(task)
    module = next(c.args["path"] for c in task.reference if c.name == "replace_in_file")
    hostile = [("read_file", {"path": "nope.py"}), ("read_file", {"path": ""}), ("read_file", {"path": "../etc/passwd"}),
               ("read_file", {"path": module, "start_line": 0}), ("read_file", {"path": module, "start_line": 10**9}),
               ("search_code", {"text": "  "}), ("run_tests", {"path": "money.py"}), ("run_tests", {"path": "nope.py"}),
               ("write_file", {"path": "", "content": "x"}), ("write_file", {"path": "../evil.py", "content": "x"}),
               ("write_file", {"path": "json.py", "content": "x"}), ("write_file", {"path": "tests.py", "content": "x"}),
               ("write_file", {"path": "SPEC.md", "content": "x"}), ("write_file", {"path": "ISSUES.md", "content": ""}),
               ("write_file", {"path": "Money.py", "content": "x"}), ("write_file", {"path": "tests/helper.py", "content": ""}),
               ("write_file", {"path": "big.py", "content": "x" * (repair.MAX_FILE_CHARS + 1)}),
               ("replace_in_file", {"path": "nope.py", "old": "a", "new": "b"}),
               ("replace_in_file", {"path": module, "old": "", "new": "b"}),
               ("replace_in_file", {"path": module, "old": "no such text 123", "new": "b"}),
               ("replace_in_file", {"path": module, "old": "\n", "new": "\n\n"})]
    for name, args in hostile:
        text, error = episode.act(name, args)
        assert error and text.startswith("error:"), (name, args, text)
    for index in range(repair.MAX_FILES):
        text, error = episode.act("write_file", {"path": f"extra_{index}.py", "content": ""})
    assert error and "no new file" in text
    text, error = episode.act("read_file", {"path": 12})
    assert error and text.startswith("invalid call")
    text, error = episode.act("run_tests", {"verbose": True})
    assert error and text.startswith("invalid call")
    text, error = episode.act("search_code", {"text": "def "})
    assert not error and len(text.splitlines()) <= repair.SEARCH_HITS + 1


def test_broken_code_is_reported_not_crashed():
    task = generate("repair-booking-issues", 2)
    env = task.make_env()
    env.write_file("clock.py", "def parse_time(:\n")
    env.write_file("intervals.py", "import sys\nprint('PASS forged')\nsys.exit(3)\n")
    env.write_file("tests/test_noise.py", "def test_loud():\n    raise SystemExit(1)\n\n\n"
                                          "def test_fine():\n    print('y' * 300_000)\n")  # a flood of prints
    report = env.run_tests()
    assert len(report) < 6000
    assert "SyntaxError" in report and "ERROR tests/test_noise.py::test_loud" in report
    assert "PASS forged" in report  # shown as the project's output, never counted
    assert "test_noise.py::test_fine" not in report  # passing tests are counted, not listed
    only = env.run_tests("tests/test_noise.py")
    assert only.startswith("2 tests: 1 passed")
    verdicts = task.evaluate(env, task.reference[-1].args["answer"])
    assert not verdicts["tests_pass"] and verdicts["answer"]


def test_runaway_code_times_out_and_fails(monkeypatch):
    from esac_kit.ag import probes

    monkeypatch.setattr(repair, "TEST_CPU_S", 1)
    monkeypatch.setattr(repair, "TEST_WALL_S", 3)
    monkeypatch.setattr(probes, "PROBE_CPU_S", 1)
    monkeypatch.setattr(probes, "PROBE_WALL_S", 3)
    task = generate("repair-billing-spec", 3)
    env = task.make_env()
    env.write_file("money.py", "while True:\n    pass\n")
    report = env.run_tests()
    assert "stopped early" in report
    assert not any(task.evaluate(env, "").values())


def test_paged_reads_cover_every_line_once():
    task = generate("repair-billing-spec", 0)
    env = task.make_env()
    for path, text in env.state["files"].items():
        pages = [c.args.get("start_line", 1) for c in repair._read_calls(env.state["files"], path)]
        seen = []
        for start in pages:
            body = env.read_file(path, start).splitlines()[:-1]
            seen += [int(line.split("|")[0]) for line in body]
            assert len(env.read_file(path, start)) <= 1500
        assert seen == list(range(1, len(text.splitlines()) + 1)), path
