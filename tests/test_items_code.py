"""Code items: keys re-derived independently of the generators, traps that change the answer, hidden-test coverage.

Tracing keys are re-derived by running the program exactly as the prompt shows it in a fresh interpreter; the
code-writing key is re-derived by an independent implementation that reads its constants from the prompt text.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

import pytest

from esac_kit.gi.generators import code
from esac_kit.gi.normalise import normalise
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.schemas import CodeTestsKey
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED

TRACING = {"code-stack-machine": code.stack_machine, "code-alias-mutation": code.alias_mutation,
           "code-memo-recursion": code.memo_recursion, "code-exception-flow": code.exception_flow}
ITEMS = {**TRACING, "code-parking-charges": code.parking_charges}
SEEDS = [f"test-seed-{k}" for k in range(30)]


def make(item_id, seed):
    return ITEMS[item_id](ItemRng(derive_item_key(seed, "gi", item_id, 1)))


@pytest.fixture(scope="module")
def instances():
    return {item_id: [make(item_id, seed) for seed in SEEDS] for item_id in ITEMS}


def program(prompt: str) -> str:
    return prompt.split("```python\n", 1)[1].split("```", 1)[0]


def printed(source: str) -> str | None:
    """Run a (possibly altered) shown program here; None when it crashes."""
    out: list = []
    try:
        exec(source, {"print": out.append})
    except Exception:
        return None
    return ", ".join(map(str, out))


# ---------------------------------------------------------------- every item


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_scores_one_and_empty_or_garbled_zero(instances, item_id):
    for generated in instances[item_id][:10] if item_id == "code-parking-charges" else instances[item_id]:
        assert score_response(generated.key, generated.reference).score == 1.0
        assert score_response(generated.key, "").score == 0.0
        assert score_response(generated.key, GARBLED).score == 0.0
        assert len(generated.prompt) <= 16_000


@pytest.mark.parametrize("item_id", ITEMS)
def test_same_key_same_instance_and_prompts_differ(instances, item_id):
    assert make(item_id, SEEDS[0]) == instances[item_id][0]
    assert len({g.prompt for g in instances[item_id]}) == len(SEEDS)


@pytest.mark.parametrize("item_id", TRACING)
def test_answers_are_spread(instances, item_id):
    answers = [normalise(g.key.answer, "list") for g in instances[item_id]]
    assert max(answers.count(a) for a in answers) <= 2
    assert all(len(a) >= 4 for a in answers)


# ---------------------------------------------------------------- tracing items


@pytest.mark.parametrize("item_id", TRACING)
def test_shown_program_prints_the_key_in_a_fresh_interpreter(instances, item_id):
    sources = [program(g.prompt) for g in instances[item_id]]
    runner = ("import contextlib, io, json, sys\nout = []\nfor source in json.load(sys.stdin):\n"
              "    buffer = io.StringIO()\n    with contextlib.redirect_stdout(buffer):\n        exec(source, {})\n"
              "    out.append(', '.join(buffer.getvalue().split()))\nprint(json.dumps(out))")
    done = subprocess.run([sys.executable, "-c", runner], input=json.dumps(sources), capture_output=True, text=True,
                          timeout=120, check=True)
    assert json.loads(done.stdout) == [g.key.answer for g in instances[item_id]]


@pytest.mark.parametrize("item_id", TRACING)
def test_a_plausible_wrong_answer_scores_zero(instances, item_id):
    for generated in instances[item_id]:
        values = generated.key.answer.split(", ")
        near_misses = [", ".join(values[:-1]), ", ".join(values[:-1] + [str(int(values[-1]) + 1)]),
                       ", ".join(reversed(values)) if values != values[::-1] else "0"]
        for wrong in near_misses:
            assert score_response(generated.key, f"Traced it.\nANSWER: {wrong}").score == 0.0
        assert score_response(generated.key, f"ANSWER: [{generated.key.answer}]").score == 1.0


# Each trap, read the naive way, changes the answer in at least this share of instances.
NAIVE_READINGS = {
    "code-stack-machine": [("if stack[-1] != 0:", "if stack.pop() != 0:", 1.0),  # JNZ popping
                           ("stack[-2], stack[-1] = stack[-1], stack[-2]", "pass", 0.5)],  # SWAP overlooked
    "code-alias-mutation": [("def gather(value, into=[]):",
                             "def gather(value, into=None):\n    into = [] if into is None else into", 1.0),
                            ("    xs += xs[:n]", "    xs = xs + xs[:n]", 1.0),
                            ("lambda x: x * k +", "lambda x, k=k: x * k +", 0.8)],
    "code-memo-recursion": [("return memo[key] + k", "return memo[key]", 0.9),
                            (re.compile(r"key = n >> \d"), "key = (n, k)", 1.0)],
    "code-exception-flow": [("            return -x\n", "            pass\n", 0.8),  # finally not overriding
                            ("return kind is ZeroDivisionError", "return False", 1.0)],
}


@pytest.mark.parametrize("item_id", TRACING)
def test_naive_readings_of_the_traps_give_other_answers(instances, item_id):
    for old, new, share in NAIVE_READINGS[item_id]:
        changed = 0
        for generated in instances[item_id]:
            source = program(generated.prompt)
            altered = old.sub(new, source) if isinstance(old, re.Pattern) else source.replace(old, new)
            assert altered != source
            changed += printed(altered) != generated.key.answer
        assert changed >= share * len(SEEDS), (new, changed)


def test_stack_machine_bytecode_is_well_formed(instances):
    for generated in instances["code-stack-machine"]:
        listing = program(generated.prompt).split("PROGRAM = ")[1].split("\n\nfor value")[0]
        bytecode = ast.literal_eval(listing)
        targets = [arg for op, arg in bytecode if op in ("JZ", "JNZ", "JMP", "CALL")]
        assert all(0 <= t < len(bytecode) for t in targets)
        assert ("HALT", None) in bytecode and bytecode[-1] == ("RET", None)
        assert 6 <= len(generated.key.answer.split(", ")) <= 18


def test_exception_flow_exercises_every_path(instances):
    for generated in instances["code-exception-flow"]:
        source = program(generated.prompt)
        a, b = map(int, re.search(r"if x % (\d+) == 0:\n\s+return \d+ // \(x % (\d+)\)", source).groups())
        c = int(re.search(r"if x % (\d+) == 0:\n\s+raise Halt", source).group(1))
        f = int(re.search(r"if x % (\d+) == 0:\n\s+return -x", source).group(1))
        namespace = {"print": lambda *args: None}
        exec(source, namespace)
        ran = range(int(re.search(r"range\((\d+), ", source).group(1)), namespace["x"] + 1)
        assert any(x % a == 0 and x % b == 0 for x in ran)  # ZeroDivisionError swallowed by __exit__
        assert any(x % a == 0 and x % b for x in ran)       # return inside try skips else
        assert any(x % a and x % c == 0 for x in ran)       # Halt caught
        assert any(x % f == 0 for x in ran)                 # return in finally overrides


def test_memo_recursion_call_counts_are_traceable(instances):
    for generated in instances["code-memo-recursion"]:
        first, second, calls, entries = map(int, generated.key.answer.split(", "))
        assert 30 <= calls <= 64 and 0 < entries < calls


# ---------------------------------------------------------------- the code-writing item


def read_rules(prompt: str) -> dict:
    """The constants and rule order as the prompt states them."""
    def number(pattern: str) -> int:
        return int(re.search(pattern, prompt).group(1))

    days = re.search(r"d % 7 equal to (\d)(?: or (\d))?", prompt).groups()
    return {"grace": number(r"at most (\d+) minutes \(end"), "block": number(r"started block of (\d+) minutes"),
            "rate": number(r"piece costs (\d+) cents per started"), "cap": number(r"pays at most (\d+) cents"),
            "flat": number(r"costs a flat (\d+) cents"), "weekend": {int(d) for d in days if d},
            "ev": number(r"reduced by (\d+)% of it"), "from": number(r"from a plate's (\d)(?:st|nd|rd|th) counted"),
            "off": number(r"reduced by (\d+) cents, but never"), "ev_first": "5. Electric" in prompt}


def independent_charges(rules: dict, sessions: list) -> dict:
    """A second implementation, written from the prompt's wording: walk each day a session touches."""
    owed = dict.fromkeys((s[0] for s in sessions), 0)
    paid_per_day: dict = {}
    counted: dict = {}
    for position, (plate, start, end, electric) in sorted(enumerate(sessions), key=lambda e: (e[1][1], e[0])):
        if end - start <= rules["grace"]:
            continue
        charge = 0
        for day in range(start // 1440, (end - 1) // 1440 + 1):
            minutes = min(end, 1440 * (day + 1)) - max(start, 1440 * day)
            if day % 7 in rules["weekend"]:
                charge += rules["flat"]
                continue
            blocks = (minutes + rules["block"] - 1) // rules["block"]
            already = paid_per_day.get((plate, day), 0)
            piece = max(0, min(blocks * rules["rate"], rules["cap"] - already))
            paid_per_day[plate, day] = already + piece
            charge += piece
        counted[plate] = counted.get(plate, 0) + 1
        steps = ["ev", "loyal"] if rules["ev_first"] else ["loyal", "ev"]
        for step in steps:
            if step == "ev" and electric:
                charge = charge - (charge * rules["ev"]) // 100
            elif step == "loyal" and counted[plate] >= rules["from"]:
                charge = max(0, charge - rules["off"])
        owed[plate] += charge
    return owed


def test_parking_key_matches_an_independent_reading_of_the_prompt(instances):
    for generated in instances["code-parking-charges"]:
        rules = read_rules(generated.prompt)
        assert isinstance(generated.key, CodeTestsKey) and len(generated.key.tests) == 14
        for test in generated.key.tests:
            (sessions,) = ast.literal_eval(test.args)
            assert independent_charges(rules, sessions) == ast.literal_eval(test.expected)
        for call, result in re.findall(r"charges\((\[.*?\])\)\n\s+== (\{.*?\})", generated.prompt):
            assert independent_charges(rules, ast.literal_eval(call)) == ast.literal_eval(result)


# A plausible wrong implementation is the reference with one rule misread; the hidden tests must catch it.
MISREADINGS = {
    "cap per session": ("room = CAP - day_charged.get((plate, day), 0)", "room = CAP", 1.0),
    "blocks rounded down": ("-(-(piece_end - t) // BLOCK)", "((piece_end - t) // BLOCK)", 1.0),
    "grace exclusive": ("if end - start <= GRACE:", "if end - start < GRACE:", 1.0),
    "discounts swapped": ("if EV_FIRST and electric:", "if not EV_FIRST and electric:", 1.0),
    "discount rounded up": ("cost -= cost * EV_PERCENT // 100", "cost = cost * (100 - EV_PERCENT) // 100", 0.9),
    "loyalty one late": ("loyal = counted[plate] >= LOYAL_FROM", "loyal = counted[plate] > LOYAL_FROM", 0.9),
    "input order": ("sorted(range(len(sessions)), key=lambda i: (sessions[i][1], i))", "range(len(sessions))", 0.9),
    "weekends ignored": ("if day % 7 in WEEKEND_DAYS:", "if False:", 1.0),
}


def test_hidden_tests_catch_each_misreading(instances):
    for name, (old, new, share) in MISREADINGS.items():
        caught = 0
        for generated in instances["code-parking-charges"]:
            source = program(generated.reference)
            assert old in source
            namespace: dict = {}
            exec(source.replace(old, new), namespace)
            caught += any(repr(namespace["charges"](*ast.literal_eval(t.args))) != t.expected
                          for t in generated.key.tests)
        assert caught >= share * len(SEEDS), (name, caught)


def test_a_misread_implementation_scores_partially_in_the_sandbox(instances):
    generated = instances["code-parking-charges"][0]
    wrong = generated.reference.replace("if EV_FIRST and electric:", "if not EV_FIRST and electric:")
    assert 0.0 <= score_response(generated.key, wrong).score < 1.0
    assert score_response(generated.key, "```python\ndef charges(sessions):\n    return {}\n```").score == 0.0
