"""ESAC-AG software repair tasks: scripted agents, determinism, hidden-test isolation and hostile tool input."""

from __future__ import annotations

from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import script_json
from esac_kit.ag.tasks import repair
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

TASKS = {"repair-billing-spec": (repair.billing_spec, repair._billing_project),
         "repair-booking-issues": (repair.booking_issues, repair._booking_project)}
ROOT = Path(__file__).resolve().parent.parent
SEEDS = 20
SANDBOX_SEEDS = 20  # the same seeds; kept apart so a slow machine can lower it


def rng(task_id: str, seed: int) -> ItemRng:
    return ItemRng(derive_item_key(f"seed-{seed}", "ag", task_id, 1))


def generate(task_id: str, seed: int):
    return TASKS[task_id][0](rng(task_id, seed))


def scale(task_id: str):
    return read_item(ROOT / "items" / "ag" / f"{task_id}.toml").efficiency


@pytest.mark.parametrize("task_id", TASKS)
def test_item_file_loads(task_id):
    item = read_item(ROOT / "items" / "ag" / f"{task_id}.toml")
    assert item.category == "repair" and item.scoring == "agentic"


@pytest.mark.parametrize("task_id", TASKS)
def test_reference_succeeds_inside_the_envelope(task_id):
    for seed in range(SEEDS):
        task = generate(task_id, seed)
        outcome = drive(task, task.reference, scale(task_id))
        assert outcome["success"] and outcome["score"] == 1.0, (seed, outcome["checks"])
        assert outcome["efficiency"]["action_level"] == 6, (seed, outcome["efficiency"])


@pytest.mark.parametrize("task_id", TASKS)
def test_wasteful_null_and_partial_agents(task_id):
    for seed in range(SANDBOX_SEEDS):
        task = generate(task_id, seed)
        wasteful = drive(task, task.wasteful, scale(task_id))
        assert wasteful["success"], (seed, wasteful["checks"])
        assert wasteful["efficiency"]["action_level"] < 6
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1

        null = drive(task, task.scripts()["null"], scale(task_id))
        assert null["score"] == 0.0 and not null["success"]
        assert not any(null["checks"].values()), null["checks"]

        first_write = next(i for i, call in enumerate(task.reference) if call.name == "write_file")
        partial = drive(task, task.reference[:first_write] + task.reference[first_write + 1:], scale(task_id))
        assert 0.0 < partial["score"] < 1.0 and not partial["success"], (seed, partial["checks"])


@pytest.mark.parametrize("task_id", TASKS)
def test_each_hidden_group_tracks_its_own_bug(task_id):
    """Fixing one planted bug alone passes exactly that bug's hidden tests; the regression group always passes."""
    for seed in range(3):
        project, _ = TASKS[task_id][1](rng(task_id, seed))
        files = project.files()
        for bug in project.bugs:
            run = project.judge({**files, **project.sources(frozenset({bug.key}))})
            for other in project.bugs:
                assert run.passed(project.hidden_groups[other.key]) == (other is bug), (seed, bug.key, other.key)
            assert run.passed(project.hidden_groups["regression"]), (seed, bug.key)
        initial = repair.run_project_tests(files)
        assert any(status != "PASS" for status, _ in initial.results.values()), seed


@pytest.mark.parametrize("task_id", TASKS)
def test_generation_is_deterministic_and_varied(task_id):
    prompts = set()
    for seed in range(SEEDS):
        first, second = generate(task_id, seed), generate(task_id, seed)
        assert first.prompt == second.prompt
        for name in ("reference", "wasteful"):
            assert script_json(getattr(first, name)) == script_json(getattr(second, name))
        assert first.make_env().state == second.make_env().state
        prompts.add(first.prompt)
    assert len(prompts) == SEEDS


def test_edited_tests_do_not_count_and_specified_behaviour_must_stay():
    task_id = "repair-billing-spec"
    task = generate(task_id, 0)
    env = task.make_env()
    for path in [p for p in env.state["files"] if p.startswith("tests/")]:
        env.write_file(path, "def test_nothing():\n    pass\n")
    assert " 0 failed" in env.run_tests()
    assert not any(task.evaluate(env, "").values())

    episode = Episode(task)
    for call in task.reference[:-1]:
        episode.act(call.name, dict(call.args))
    text, error = episode.act("replace_in_file", {"path": "charges.py", "old": "amount > FREE_SHIPPING_OVER",
                                                  "new": "amount >= FREE_SHIPPING_OVER"})
    assert not error, text
    episode.act("submit", {"answer": task.reference[-1].args["answer"]})
    checks = episode.outcome(scale(task_id))["checks"]
    assert not checks["tests_pass"] and checks["bug_1"] and checks["answer"]


def test_declining_nothing_or_changing_the_declined_behaviour_fails():
    task_id = "repair-booking-issues"
    for seed in range(2):
        task = generate(task_id, seed)
        answer = task.reference[-1].args["answer"]
        fixed_line = answer.splitlines()[0]
        episode = Episode(task)
        for call in task.reference[:-1]:
            episode.act(call.name, dict(call.args))
        episode.act("replace_in_file", {"path": "policy.py", "old": "return price_cents * LATE_PERCENT // 100",
                                        "new": "return -(-price_cents * LATE_PERCENT // 100)"})
        episode.act("submit", {"answer": fixed_line + "\ndeclined: none"})
        checks = episode.outcome(scale(task_id))["checks"]
        assert not checks["tests_pass"] and not checks["answer"], (seed, checks)


def test_answers_are_read_leniently_but_precisely():
    known = [101, 283, 458, 771]
    assert repair._issue_sets("Fixed: #458, #771 and #101.\nDeclined: #283 (documented rounding)", known) \
        == ({101, 458, 771}, {283})
    assert repair._issue_sets("fixed: 458, 771, 101; declined: 283", known) == ({101, 458, 771}, {283})
    assert repair._issue_sets("I fixed three bugs.\nfixed=101 458 771\ndeclined=283", known) == ({101, 458, 771}, {283})
    assert repair._issue_sets("fixed: 101, 458, 771", known) is None
    assert repair._issue_sets("", known) is None

    bugs = [repair.Bug("a", "invoice.py", "", (), ("invoice.Invoice.tax", "Invoice.tax")),
            repair.Bug("b", "money.py", "", (), ("money.percent_of",))]
    assert repair._names_answer_ok("Changed invoice.Invoice.tax and money.percent_of.", bugs)
    assert repair._names_answer_ok("MONEY.PERCENT_OF, invoice.tax", bugs)
    assert not repair._names_answer_ok("money.percent_of, invoice.Invoice.tax_for", bugs)
    assert not repair._names_answer_ok("percent_of, tax", bugs)
    assert not repair._names_answer_ok(None, bugs)


@pytest.mark.parametrize("task_id", TASKS)
def test_hostile_input_gives_tool_errors(task_id):
    task = generate(task_id, 1)
    episode = Episode(task)
    hostile = [("read_file", {"path": "nope.py"}), ("read_file", {"path": ""}), ("read_file", {"path": "../etc/passwd"}),
               ("write_file", {"path": "", "content": "x"}), ("write_file", {"path": "../evil.py", "content": "x"}),
               ("write_file", {"path": "json.py", "content": "x"}), ("write_file", {"path": "tests.py", "content": "x"}),
               ("write_file", {"path": "SPEC.md", "content": "x"}), ("write_file", {"path": "ISSUES.md", "content": ""}),
               ("write_file", {"path": "Money.py", "content": "x"}), ("write_file", {"path": "tests/helper.py", "content": ""}),
               ("write_file", {"path": "big.py", "content": "x" * (repair.MAX_FILE_CHARS + 1)}),
               ("replace_in_file", {"path": "nope.py", "old": "a", "new": "b"}),
               ("replace_in_file", {"path": task.reference[1].args["path"], "old": "", "new": "b"}),
               ("replace_in_file", {"path": task.reference[1].args["path"], "old": "no such text 123", "new": "b"}),
               ("replace_in_file", {"path": task.reference[1].args["path"], "old": "\n", "new": "\n\n"})]
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


def test_broken_code_is_reported_not_crashed():
    task = generate("repair-booking-issues", 2)
    env = task.make_env()
    env.write_file("clock.py", "def parse_time(:\n")
    env.write_file("intervals.py", "import sys\nprint('PASS forged')\nsys.exit(3)\n")
    env.write_file("tests/test_noise.py", "def test_loud():\n    raise SystemExit(1)\n\n\n"
                                          "def test_fine():\n    print('y' * 300_000)\n")  # a flood of prints
    report = env.run_tests()
    assert len(report) < 6000
    assert "ERROR tests/test_clock.py" in report and "SyntaxError" in report
    assert "PASS tests/test_noise.py::test_fine" in report and "ERROR tests/test_noise.py::test_loud" in report
    assert "PASS forged" in report  # shown as the project's output, never counted
    verdicts = task.evaluate(env, task.reference[-1].args["answer"])
    assert not verdicts["tests_pass"] and verdicts["answer"]


def test_runaway_code_times_out_and_fails(monkeypatch):
    monkeypatch.setattr(repair, "TEST_CPU_S", 1)
    monkeypatch.setattr(repair, "TEST_WALL_S", 3)
    task = generate("repair-billing-spec", 3)
    env = task.make_env()
    env.write_file("money.py", "while True:\n    pass\n")
    report = env.run_tests()
    assert "stopped early" in report
    assert not any(task.evaluate(env, "").values())
