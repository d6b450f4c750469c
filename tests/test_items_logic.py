"""The logic items: references score 1, wrong answers 0, instances are deterministic, and the uniqueness claim
holds: independent brute-force solvers reading only the prompt text find exactly one solution, it is the key,
and (where the generator promises it) every clue is needed."""

import re
from collections import Counter
from itertools import permutations, product

import numpy as np
import pytest

from esac_kit.gi.generators import logic
from esac_kit.gi.normalise import final_answer
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED

GENERATORS = {"logic-zebra": logic.zebra, "logic-knights-knaves": logic.knights_knaves,
              "logic-round-table": logic.round_table, "logic-task-schedule": logic.task_schedule,
              "logic-code-breaker": logic.code_breaker}
SEEDS = 30


def instances(item_id, n=SEEDS):
    return [GENERATORS[item_id](ItemRng(derive_item_key(f"test-{s}", "gi", item_id, 1))) for s in range(n)]


def answer_names(generated) -> list[str]:
    return [part.strip() for part in generated.key.answer.split(",")]


@pytest.mark.parametrize("item_id", GENERATORS)
def test_reference_scores_one_and_empty_or_garbled_score_zero(item_id):
    for g in instances(item_id):
        assert score_response(g.key, g.reference).score == 1.0
        assert score_response(g.key, "").score == 0.0
        assert score_response(g.key, GARBLED).score == 0.0
        assert "ANSWER:" in g.prompt and len(g.prompt) <= 16000


@pytest.mark.parametrize("item_id", GENERATORS)
def test_plausible_wrong_answers_score_zero(item_id):
    for g in instances(item_id):
        names = answer_names(g)
        if g.key.answer_type == "set":  # one knight missed, or one knave added
            others = re.search(r"You meet ten inhabitants — (.*?) — ", g.prompt)[1].split(", ")
            extra = next(n for n in others if n not in names)
            wrong = [names[1:], names + [extra]]
        else:  # the last entry missing, and two different neighbours swapped (codes may repeat colours)
            wrong = [names[:-1]]
            wrong += [names[:i] + [names[i + 1], names[i]] + names[i + 2:]
                      for i in range(len(names) - 1) if names[i] != names[i + 1]][:1]
        for answer in wrong:
            assert score_response(g.key, "ANSWER: " + ", ".join(answer)).score == 0.0
        # Order-free for sets, and tolerant of case and spacing for lists.
        shuffled = names[::-1] if g.key.answer_type == "set" else names
        assert score_response(g.key, "ANSWER: " + " ,  ".join(n.upper() for n in shuffled)).score == 1.0


@pytest.mark.parametrize("item_id", GENERATORS)
def test_the_same_key_gives_the_same_instance(item_id):
    key = derive_item_key("determinism", "gi", item_id, 1)
    assert GENERATORS[item_id](ItemRng(key)) == GENERATORS[item_id](ItemRng(key))
    other = derive_item_key("determinism-2", "gi", item_id, 1)
    assert GENERATORS[item_id](ItemRng(key)).prompt != GENERATORS[item_id](ItemRng(other)).prompt


@pytest.mark.parametrize("item_id", GENERATORS)
def test_no_answer_dominates(item_id):
    counts = Counter(g.key.answer for g in instances(item_id))
    assert counts.most_common(1)[0][1] <= 3


def test_minimal_clues_keeps_the_solution_and_drops_redundant_clues():
    rng = ItemRng(b"\x01" * 32)
    truth = 37
    values = np.arange(100)

    def draw():
        k = rng.randint(2, 9)
        return f"x mod {k} is {truth % k}", values % k == truth % k

    clues = logic.minimal_clues(rng, draw, 100)
    assert list(logic.solutions(clues)) == [truth]
    for i in range(len(clues)):
        assert len(logic.solutions(clues[:i] + clues[i + 1:])) > 1


# ---------------------------------------------------------------- independent solvers over the prompt text


def check_unique_and_irreducible(candidates, tests, expected, irreducible=True):
    """Evaluate every clue on every candidate: exactly one survives, it is `expected`, and no clue is spare."""
    survivors, needed = [], set()
    for candidate in candidates:
        failed = [i for i, t in enumerate(tests) if not t(candidate)]
        if not failed:
            survivors.append(candidate)
        elif len(failed) == 1:
            needed.add(failed[0])
    assert survivors == [expected]
    if irreducible:
        assert needed == set(range(len(tests))), "a clue can be dropped without losing uniqueness"


def parse_clue(line, patterns):
    for pattern, test in patterns:
        if m := re.fullmatch(pattern, line):
            return lambda c, m=m, test=test: test(c, *m.groups())
    raise AssertionError(f"unparsed clue: {line}")


def numbered_lines(prompt):
    return re.findall(r"^\d+\. (.*)$", prompt, flags=re.M)


def test_round_table_has_exactly_one_seating_and_no_spare_clue():
    cyc = lambda d: min(d % 8, -d % 8)  # noqa: E731
    patterns = [
        (r"(\w+) sits in the next seat clockwise from (\w+)\.", lambda s, a, b: (s[a] - s[b]) % 8 == 1),
        (r"(\w+) sits directly opposite (\w+)\.", lambda s, a, b: cyc(s[a] - s[b]) == 4),
        (r"(\w+) and (\w+) are not neighbours\.", lambda s, a, b: cyc(s[a] - s[b]) != 1),
        (r"Going clockwise from (\w+), you reach (\w+) before you reach (\w+)\.",
         lambda s, a, b, c: (s[b] - s[a]) % 8 < (s[c] - s[a]) % 8),
        (r"(\w+) is (\d) seats clockwise from (\w+)\.", lambda s, a, k, b: (s[a] - s[b]) % 8 == int(k)),
        (r"(\w+) sits next to (\w+) or next to (\w+), but not next to both\.",
         lambda s, a, b, c: (cyc(s[a] - s[b]) == 1) != (cyc(s[a] - s[c]) == 1)),
        (r"(\w+) sits in an even-numbered seat\.", lambda s, a: s[a] % 2 == 0),
        (r"(\w+)'s seat number is higher than (\w+)'s\.", lambda s, a, b: s[a] > s[b]),
        (r"(\w+) sits in seat (\d)\.", lambda s, a, k: s[a] == int(k)),
        (r"Neither (\w+) nor (\w+) sits in seat 1\.", lambda s, a, b: 1 not in (s[a], s[b])),
    ]
    for g in instances("logic-round-table", 5):
        guests = re.search(r"Eight guests — (.*?) — ", g.prompt)[1].split(", ")
        tests = [parse_clue(line, patterns) for line in numbered_lines(g.prompt)]
        expected = {name: seat for seat, name in enumerate(answer_names(g), 1)}
        seatings = (dict(zip(guests, seats)) for seats in permutations(range(1, 9)))
        check_unique_and_irreducible(seatings, tests, expected)


def test_knights_and_knaves_have_exactly_one_consistent_assignment_and_no_spare_statement():
    patterns = [
        (r"(\w+) is a knave\.", lambda k, s, x: not k[x]),
        (r"(\w+) and (\w+) are the same kind\.", lambda k, s, x, y: k[x] == k[y]),
        (r"(\w+) and (\w+) are not both knights\.", lambda k, s, x, y: not (k[x] and k[y])),
        (r"Exactly (\d) of (\w+), (\w+) and (\w+) (?:is a knight|are knights)\.",
         lambda k, s, n, x, y, z: k[x] + k[y] + k[z] == int(n)),
        (r"If (\w+) is a knight, then (\w+) is a knave\.", lambda k, s, x, y: not k[x] or not k[y]),
        (r"(\w+) would tell you that (\w+) is a knave\.", lambda k, s, x, y: k[x] == (not k[y])),
        (r"At least (\d) of the ten of us are knaves\.", lambda k, s, n: sum(not v for v in k.values()) >= int(n)),
        (r"I am a knave or (\w+) is a knight \(or both\)\.", lambda k, s, x: not k[s] or k[x]),
        (r"(\w+) would tell you that (\w+) and (\w+) are the same kind\.",
         lambda k, s, x, y, z: k[x] == (k[y] == k[z])),
        (r"An odd number of (\w+), (\w+) and (\w+) are knights\.", lambda k, s, x, y, z: (k[x] + k[y] + k[z]) % 2),
    ]
    for g in instances("logic-knights-knaves"):
        people = re.search(r"You meet ten inhabitants — (.*?) — ", g.prompt)[1].split(", ")
        tests = []
        for speaker, statement in re.findall(r'^(\w+): "(.*)"$', g.prompt, flags=re.M):
            for pattern, said in patterns:
                if m := re.fullmatch(pattern, statement):
                    # A knight's statement is true and a knave's is false.
                    tests.append(lambda k, s=speaker, m=m, said=said: bool(said(k, s, *m.groups())) == k[s])
                    break
            else:
                raise AssertionError(f"unparsed statement: {statement}")
        knights = set(answer_names(g))
        assignments = [dict(zip(people, kinds)) for kinds in product([True, False], repeat=10)]
        expected = next(a for a in assignments if {p for p, v in a.items() if v} == knights)
        check_unique_and_irreducible(assignments, tests, expected)


def test_task_schedule_has_exactly_one_order_and_no_spare_constraint():
    minutes = lambda hhmm: int(hhmm[:2]) * 60 + int(hhmm[3:])  # noqa: E731
    patterns = [
        (r"(\w+) is finished before (\w+) starts\.", lambda o, a, b: o[a][1] <= o[b][0]),
        (r"(\w+) starts the moment (\w+) finishes\.", lambda o, b, a: o[b][0] == o[a][1]),
        (r"(\w+) cannot start before (\d\d:\d\d)\.", lambda o, a, t: o[a][0] >= minutes(t)),
        (r"(\w+) must be finished by (\d\d:\d\d)\.", lambda o, a, t: o[a][1] <= minutes(t)),
        (r"(\w+) is in progress at (\d\d:\d\d)\.", lambda o, a, t: o[a][0] <= minutes(t) < o[a][1]),
        (r"(\w+) and (\w+) are not done one right after the other \(in either order\)\.",
         lambda o, a, b: o[a][2] - o[b][2] not in (1, -1)),
        (r"Exactly (\d) other jobs? (?:is|are) done between (\w+) and (\w+)\.",
         lambda o, k, a, b: abs(o[a][2] - o[b][2]) == int(k) + 1),
        (r"(\w+) starts on the hour \(at some time hh:00\)\.", lambda o, a: o[a][0] % 60 == 0),
        (r"(\w+) starts later than (\w+) but finishes before (\d\d:\d\d)\.",
         lambda o, a, b, t: o[a][0] > o[b][0] and o[a][1] < minutes(t)),
    ]
    for g in instances("logic-task-schedule", 10):
        jobs = dict((name, int(m)) for name, m in re.findall(r"(\w+) \((\d+) min\)", g.prompt))
        day_start = minutes(re.search(r"starting the first at (\d\d:\d\d)", g.prompt)[1])
        tests = [parse_clue(line, patterns) for line in numbered_lines(g.prompt)]

        def timetable(order):  # job -> (start, end, position)
            out, clock = {}, day_start
            for position, job in enumerate(order):
                out[job] = (clock, clock + jobs[job], position)
                clock += jobs[job]
            return out

        assert len(jobs) == 8
        check_unique_and_irreducible((timetable(o) for o in permutations(jobs)), tests, timetable(answer_names(g)))


def test_code_breaker_has_exactly_one_code_and_no_spare_guess():
    for g in instances("logic-code-breaker", 10):
        tests = []
        for guess, black, white in re.findall(r"^\d+\. ([a-z, ]+?)  ->  (\d) black, (\d) white$", g.prompt, re.M):
            guess = guess.split(", ")

            def scored(code, guess=guess, black=int(black), white=int(white)):
                b = sum(x == y for x, y in zip(code, guess))
                common = sum(min(code.count(c), guess.count(c)) for c in set(guess))
                return (b, common - b) == (black, white)
            tests.append(scored)
        assert len(tests) == len(numbered_lines(g.prompt)) >= 2
        colours = ["red", "blue", "green", "yellow", "white", "black"]
        check_unique_and_irreducible(list(product(colours, repeat=5)), tests, tuple(answer_names(g)))


_ZEBRA_REFS = [(r"the resident of the (\w+) house", 1), (r"the (\w+) owner", 2), (r"the (\w+) drinker", 3),
               (r"the (\w+)", 4), (r"(\w+)", 0)]


def _zebra_ref(text):
    for pattern, category in _ZEBRA_REFS:
        if m := re.fullmatch(pattern, text):
            return category, m[1]
    raise AssertionError(text)


def _zebra_clue(line):
    line = line[0].lower() + line[1:] if line.startswith("The ") or line.startswith("There") else line
    relations = [
        (r"there is exactly one house between (.+) and (.+)\.", lambda x, y: abs(x - y) == 2),
        (r"(.+) and (.+) are the same person\.", lambda x, y: x == y),
        (r"(.+) and (.+) are different people\.", lambda x, y: x != y),
        (r"(.+) and (.+) live next to each other\.", lambda x, y: abs(x - y) == 1),
        (r"(.+) and (.+) live in different houses that are not next to each other\.", lambda x, y: abs(x - y) > 1),
        (r"(.+) lives directly to the left of (.+)\.", lambda x, y: x + 1 == y),
        (r"(.+) lives somewhere to the left of (.+)\.", lambda x, y: x < y),
        (r"(.+) lives in house (\d)\.", None),
        (r"(.+) lives in one of the two end houses\.", None),
        (r"(.+) is not (.+)\.", lambda x, y: x != y),
        (r"(.+) is (.+)\.", lambda x, y: x == y),
    ]
    for pattern, holds in relations:
        if m := re.fullmatch(pattern, line):
            a = _zebra_ref(m[1])
            if "lives in house" in pattern:
                return [a], lambda x, h=int(m[2]): x == h
            if "end houses" in pattern:
                return [a], lambda x: x in (1, 5)
            return [a, _zebra_ref(m[2])], holds
    raise AssertionError(f"unparsed clue: {line}")


def _zebra_solutions(values, clues, limit):
    """Backtrack over the categories, one house permutation each, checking a clue once its categories are placed."""
    perms = list(permutations(range(1, 6)))
    index = [([(c, values[c].index(v)) for c, v in refs], holds) for refs, holds in clues]
    spans = [{c for c, _ in refs} for refs, _ in index]  # the categories each clue involves
    domains = {c: [p for p in perms if all(holds(*(p[i] for _, i in refs))
                                           for (refs, holds), span in zip(index, spans) if span == {c})]
               for c in range(5)}
    order = [min(domains, key=lambda c: len(domains[c]))]
    while len(order) < 5:  # next: the category sharing most clues with those placed, then the smallest
        linked = lambda c: sum(c in span and bool(span & set(order)) for span in spans)  # noqa: E731
        order.append(max((c for c in range(5) if c not in order), key=lambda c: (linked(c), -len(domains[c]))))
    found, houses = [], {}

    def extend(depth):
        if len(found) >= limit:
            return
        if depth == 5:
            found.append(dict(houses))
            return
        category = order[depth]
        placed = set(order[:depth + 1])
        ready = [clue for clue, span in zip(index, spans) if category in span and span <= placed and len(span) > 1]
        for perm in domains[category]:
            houses[category] = perm
            if all(holds(*(houses[c][i] for c, i in refs)) for refs, holds in ready):
                extend(depth + 1)
        del houses[category]

    extend(0)
    return found


def test_zebra_has_exactly_one_grid_and_no_spare_clue():
    for g in instances("logic-zebra", 3):
        values = [re.search(r"residents — (.*?) — ", g.prompt)[1].split(", ")]
        values += [re.search(pattern, g.prompt)[1].split(", ") for pattern in
                   (r"different colour \((.*?)\)", r"different pet \((.*?)\)", r"different drink \((.*?)\)",
                    r"different job \((.*?)\)")]
        clues = [_zebra_clue(line) for line in numbered_lines(g.prompt)]
        grids = _zebra_solutions(values, clues, limit=2)
        assert len(grids) == 1
        by_house = {house: name for name, house in zip(values[0], grids[0][0])}
        assert [by_house[h] for h in range(1, 6)] == answer_names(g)
        for i in range(len(clues)):
            assert len(_zebra_solutions(values, clues[:i] + clues[i + 1:], limit=2)) == 2, clues[i]


def test_reference_answers_are_read_back_exactly():
    for item_id in GENERATORS:
        g = instances(item_id, 1)[0]
        assert final_answer(g.reference) == g.key.answer
