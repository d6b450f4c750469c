"""The logic items: references score 1, wrong answers 0, instances are deterministic and lie in their declared
difficulty band, the drivers turn the measured difficulty, and the uniqueness claim holds: independent solvers
reading only the prompt text find exactly one solution, it is the key, and (where the generator promises it)
every clue is needed.

Test of fairness (why an expert can solve every instance by hand in about two hours, and a model in the item's
32,000-token output budget): each
prompt states every rule it uses (the tents grid's per-instance twist, each variant sudoku rule with its convention —
cages without repeats, thermometers from the bulb, arrow shafts that may repeat, dots and letters with no negative
constraint, the whispers gap — the changeover of the schedule, what a statement about a statement refers to) and is
at most ~2,200 tokens; the declared bands cap the search a mechanical solver needs (at most 3,000 refuted branches
for an 8 x 7 zebra grid whose propagation does most of the work, under 10,000 rejected partial assignments for the
islanders, at most 600 search nodes beyond propagation for the variant sudoku, at most 2,000 bounded states for the
schedule, at most 1,500 guesses for the 20 x 20 tents grid), and each item yields to an idea that cuts that search far below
the mechanical figure — propagation of the strong clues first in the zebra grid, reading a speaker's statements as
one pattern (all true, all false, or alternating) and resolving the statements about statements as short chains
back to statements about kinds for the islanders, cage combinations and sums over whole rows, columns and boxes
(each house holds 1 to 9 once) where the sudoku's rules meet, a bounded search with dominance (same jobs done, same
clock, same last type: keep the cheaper) for the schedule, and for the tents grid (at most 90 trees) the forced
tents first (a tree with one free cell, a line whose count its trees can only just meet, the cells a tent blocks),
then short case splits on a tree with two cells left. `test_fairness_bounds_hold` and `test_tents_fairness_bound`
check the bounds this argument rests on."""

import math
import re
from collections import Counter
from functools import cache
from itertools import combinations, permutations, product
from statistics import median

import numpy as np
import pytest

from esac_kit.gi.generators import logic
from esac_kit.gi.normalise import final_answer
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED
from esac_kit.instances import generate
from esac_kit.pools import custom_pool
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import load_suite

ITEMS = ["logic-zebra", "logic-knights-knaves", "logic-variant-sudoku", "logic-task-schedule", "logic-tents"]
SEEDS = 20


@cache
def suite():
    return load_suite("gi")


@cache
def _instances(item_id: str, n: int) -> tuple:
    """Instances as the kit makes them (declared drivers, redrawn into the band), from test-only pools."""
    item = suite().item(item_id)
    return tuple(generate(suite(), item, custom_pool(f"t-{item_id}-{s}")) for s in range(n))


def instances(item_id, n=SEEDS):
    return _instances(item_id, n)


def entries(instance) -> list[str]:
    return [part.strip() for part in instance.key.answer.split(",")]


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_scores_one_and_empty_or_garbled_score_zero(item_id):
    for g in instances(item_id):
        assert g.key.answer_type == ("set" if item_id == "logic-tents" else "list")  # tents: any order
        assert score_response(g.key, g.reference).score == 1.0
        assert final_answer(g.reference) == g.key.answer
        assert score_response(g.key, "").score == 0.0
        assert score_response(g.key, GARBLED).score == 0.0
        assert score_response(g.key, "ANSWER: nobody").score == 0.0
        assert "ANSWER:" in g.prompt and len(g.prompt) <= 16000


@pytest.mark.parametrize("item_id", ITEMS)
def test_plausible_wrong_answers_score_zero(item_id):
    for g in instances(item_id):
        names = entries(g)
        wrong = [names[:-1]]  # the last entry missing
        if g.key.answer_type == "list":  # an order that matters: two different neighbours swapped
            wrong += [names[:i] + [names[i + 1], names[i]] + names[i + 2:]
                      for i in range(len(names) - 1) if names[i] != names[i + 1]][:2]
        if item_id == "logic-task-schedule":  # the right order with a cost off by one
            wrong.append([str(int(names[0]) + 1)] + names[1:])
        for answer in wrong:
            assert score_response(g.key, "ANSWER: " + ", ".join(answer)).score == 0.0
        # Tolerant of case and spacing.
        assert score_response(g.key, "ANSWER: " + " ,  ".join(n.upper() for n in names)).score == 1.0


@pytest.mark.parametrize("item_id", ITEMS)
def test_the_same_seed_gives_the_same_instance(item_id):
    item = suite().item(item_id)
    first = generate(suite(), item, custom_pool("t-determinism"))
    assert first == generate(suite(), item, custom_pool("t-determinism"))
    assert first.prompt != generate(suite(), item, custom_pool("t-determinism-2")).prompt


@pytest.mark.parametrize("item_id", ITEMS)
def test_no_answer_dominates(item_id):
    counts = Counter(g.key.answer for g in instances(item_id))
    assert counts.most_common(1)[0][1] <= 2
    assert len({g.prompt for g in instances(item_id)}) == SEEDS


@pytest.mark.parametrize("item_id", ITEMS)
def test_every_instance_lies_in_the_declared_band(item_id):
    spec = suite().item(item_id).difficulty
    assert spec is not None and spec.measure in ("conflicts", "rejected", "nodes", "guesses")
    low, high = spec.band
    values = [g.difficulty[spec.measure] for g in instances(item_id)]
    assert all(low <= v <= high for v in values), values
    assert len(set(values)) > SEEDS // 3  # a measure of each instance, not a restated driver


# The main driver of each item, a lower setting, and the declared one: the raw measure (no band) must rise.
DRIVERS = {
    "logic-zebra": ("houses", 5),
    "logic-knights-knaves": ("islanders", 9),
    "logic-variant-sudoku": ("size", 6),
    "logic-task-schedule": ("jobs", 8),
    "logic-tents": ("rows", 9),
}


@pytest.mark.parametrize("item_id", ITEMS)
def test_raising_the_main_driver_raises_the_measured_difficulty(item_id):
    item = suite().item(item_id)
    generator = getattr(logic, item.generator.split(":")[1])
    driver, lower = DRIVERS[item_id]
    declared = dict(item.difficulty.drivers)
    assert declared[driver] > lower

    def median_measure(drivers: dict) -> float:
        return median(generator(ItemRng(derive_item_key(f"t-driver-{s}", "gi", item_id, 2)), **drivers)
                      .difficulty[item.difficulty.measure] for s in range(12))

    assert median_measure({**declared, driver: lower}) < median_measure(declared)


def test_a_lower_node_cap_gives_easier_sudokus():
    """The second sudoku knob: pruning stops earlier under a lower cap, so the measured search shrinks."""
    item = suite().item("logic-variant-sudoku")
    declared = dict(item.difficulty.drivers)

    def median_nodes(cap: int) -> float:
        return median(logic.variant_sudoku(ItemRng(derive_item_key(f"t-cap-{s}", "gi", item.id, 2)),
                                           **{**declared, "max_nodes": cap}).difficulty["nodes"] for s in range(12))

    assert median_nodes(30) < median_nodes(declared["max_nodes"])


def test_fairness_bounds_hold():
    """The figures the fairness argument in this module's docstring rests on."""
    bounds = {"logic-zebra": ("clues", 90), "logic-knights-knaves": ("statements", 36),
              "logic-variant-sudoku": ("nodes", 600), "logic-tents": ("trees", 90),
              "logic-task-schedule": ("nodes", 2000)}
    for item_id in ITEMS:
        spec = suite().item(item_id).difficulty
        assert spec.band[1] <= 10000
        for g in instances(item_id):
            assert len(g.prompt) / 4 <= 2200  # tokens, at about four characters each
            if item_id in bounds:
                figure, most = bounds[item_id]
                assert g.difficulty[figure] <= most


def test_minimal_clues_keeps_the_solution_and_drops_redundant_clues():
    rng = ItemRng(b"\x01" * 32)
    truth = 37
    values = np.arange(100)

    def draw():
        k = rng.randint(2, 9)
        return f"x mod {k} is {truth % k}", lambda rows: (values if rows is None else values[rows]) % k == truth % k

    clues = logic.minimal_clues(rng, draw, 100)
    assert list(logic.solutions(clues)) == [truth]
    for i in range(len(clues)):
        assert len(logic.solutions(clues[:i] + clues[i + 1:])) > 1


def test_dfs_rejections_counts_a_small_search_by_hand():
    # Two binary choices; the constraint "first choice is 1" rejects the prefix 0 at depth 1 (one rejection
    # of two nodes); below prefix 1 both leaves survive: 4 nodes visited, 1 rejected.
    masks = [np.array([False, False, True, True])]
    assert logic._dfs_rejections(masks, [2, 2]) == (4, 1)
    # "the two choices differ" can always be completed after one choice, so only leaves are rejected.
    assert logic._dfs_rejections([np.array([False, True, True, False])], [2, 2]) == (6, 2)


# ---------------------------------------------------------------- independent solvers over the prompt text


def numbered_lines(prompt):
    return re.findall(r"^\d+\. (.*)$", prompt, flags=re.M)


def parse_clue(line, patterns):
    for pattern, test in patterns:
        if m := re.fullmatch(pattern, line):
            return test, m.groups()
    raise AssertionError(f"unparsed clue: {line}")


def assert_unique_and_irreducible(masks: list[np.ndarray], expected: int, irreducible: bool = True):
    """Exactly one candidate meets every clue, it is `expected`, and each clue alone rules out some candidate
    that all the others allow."""
    broken = np.sum([~m for m in masks], axis=0)
    assert list(np.flatnonzero(broken == 0)) == [expected]
    if irreducible:
        for i, mask in enumerate(masks):
            assert (~mask & (broken == 1)).any(), f"clue {i + 1} can be dropped without losing uniqueness"


# ---- knights, knaves and switchers

KIND = {"knight": 0, "knave": 1, "switcher": 2}
NUMBERS = {w: i for i, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                                       "ten", "eleven", "twelve"])}
ISLAND_PATTERNS = [
    (r"(\w+) and I are the same kind\.", lambda K, me, x: K[x] == K[me]),
    (r"(\w+) is a (\w+)\.", lambda K, me, x, k: K[x] == KIND[k]),
    (r"(\w+) is not a (\w+)\.", lambda K, me, x, k: K[x] != KIND[k]),
    (r"(\w+) and (\w+) are the same kind\.", lambda K, me, x, y: K[x] == K[y]),
    (r"(\w+) and (\w+) are different kinds\.", lambda K, me, x, y: K[x] != K[y]),
    (r"Exactly (\d+) of (\w+), (\w+) and (\w+) (?:is a|are) (\w+?)s?\.",
     lambda K, me, c, x, y, z, k: (K[x] == KIND[k]).astype(int) + (K[y] == KIND[k]) + (K[z] == KIND[k]) == int(c)),
    (r"At least one of (\w+) and (\w+) is a (\w+)\.", lambda K, me, x, y, k: (K[x] == KIND[k]) | (K[y] == KIND[k])),
    (r"If (\w+) is a (\w+), then (\w+) is a (\w+)\.",
     lambda K, me, x, k, y, k2: (K[x] != KIND[k]) | (K[y] == KIND[k2])),
    (r"I am a (\w+)\.", lambda K, me, k: K[me] == KIND[k]),
    (r"I am not a (\w+)\.", lambda K, me, k: K[me] != KIND[k]),
    (r"Exactly (\d+) of us (\w+) are (\w+)s\.",  # "us ten": everyone, the speaker included
     lambda K, me, c, n, k: NUMBERS[n] == len(K) and sum((v == KIND[k]).astype(int) for v in K.values()) == int(c)),
    (r"Among us (\w+) there are more (\w+)s than (\w+)s\.",
     lambda K, me, n, k, k2: NUMBERS[n] == len(K) and sum((v == KIND[k]).astype(int) for v in K.values())
     > sum((v == KIND[k2]).astype(int) for v in K.values())),
]


@cache
def kind_table(n: int) -> np.ndarray:
    return np.array(list(product(range(3), repeat=n)), dtype=np.int64)


def speaker_fits(K, me, truths):
    """A knight's statements are all true, a knave's all false, a switcher's alternate in the order made."""
    knight = np.all(truths, axis=0)
    knave = ~np.any(truths, axis=0)
    switcher = np.all([a != b for a, b in zip(truths, truths[1:])], axis=0) if len(truths) > 1 else True
    return np.where(K[me] == 0, knight, np.where(K[me] == 1, knave, switcher))


META_PATTERNS = [  # statements about numbered statements: T maps a statement's number to its truth per row
    (r"Statement (\d+) is true\.", lambda T, a: T[int(a)]),
    (r"Statement (\d+) is false\.", lambda T, a: ~T[int(a)]),
    (r"Statements (\d+) and (\d+) are both true or both false\.", lambda T, a, b: T[int(a)] == T[int(b)]),
    (r"Exactly one of statements (\d+) and (\d+) is true\.", lambda T, a, b: T[int(a)] != T[int(b)]),
    (r"At least one of statements (\d+) and (\d+) is false\.", lambda T, a, b: ~(T[int(a)] & T[int(b)])),
]


def test_islanders_have_exactly_one_consistent_assignment_and_no_spare_statement():
    for g in instances("logic-knights-knaves"):
        people = re.search(r"You meet \w+ inhabitants — (.*?) — who", g.prompt)[1].split(", ")
        table = kind_table(len(people))
        K = {p: table[:, i] for i, p in enumerate(people)}
        spoken = {}  # speaker -> [(number, text)]
        for line in re.findall(r"^(\w+: \[\d+\].*|\w+ says nothing\.)$", g.prompt, flags=re.M):
            speaker = line.split(":")[0].split(" ")[0]
            spoken[speaker] = [(int(i), text) for i, text in re.findall(r'\[(\d+)\] "(.*?)"', line)]
        assert sorted(spoken) == sorted(people)
        numbers = [i for p in people for i, _ in spoken[p]]
        assert numbers == list(range(1, len(numbers) + 1))  # numbered in the order listed
        # Statements about kinds first, then those about them (which never point at one another).
        T, referenced = {}, set()
        for p in people:
            for i, text in spoken[p]:
                if not text.startswith(("Statement", "Exactly one of statements", "At least one of statements")):
                    test, args = parse_clue(text, ISLAND_PATTERNS)
                    T[i] = np.asarray(test(K, p, *args), dtype=bool)
        for p in people:
            for i, text in spoken[p]:
                if i not in T:
                    test, args = parse_clue(text, META_PATTERNS)
                    assert all(int(a) in T and int(a) != i for a in args)  # only about statements about kinds
                    referenced |= {int(a) for a in args}
                    T[i] = np.asarray(test(T, *args), dtype=bool)
        said = {p: [T[i] for i, _ in spoken[p]] for p in people}
        fits = {p: speaker_fits(K, p, t) for p, t in said.items() if t}
        answer = entries(g)
        expected = int(np.flatnonzero(np.all([K[p] == KIND[k] for p, k in zip(people, answer)], axis=0))[0])
        alive = np.all(list(fits.values()), axis=0)
        assert list(np.flatnonzero(alive)) == [expected]
        # No statement is spare: without it the key is no longer the only consistent assignment (a statement
        # another one is about cannot go without that one).
        for p, truths in said.items():
            for i in range(len(truths)):
                if spoken[p][i][0] in referenced:
                    continue
                rest = truths[:i] + truths[i + 1:]
                fit = speaker_fits(K, p, rest) if rest else np.ones(len(table), dtype=bool)
                others = [f for q, f in fits.items() if q != p]
                assert list(np.flatnonzero(np.all(others + [fit], axis=0))) != [expected], (p, i + 1)


def test_some_islanders_speak_about_statements():
    counts = [g.difficulty["about_statements"] for g in instances("logic-knights-knaves")]
    assert sum(c > 0 for c in counts) >= len(counts) * 3 // 4 and median(counts) >= 2


# ---- scheduling

def parse_jobs(prompt):
    jobs = {}
    for name, kind, p, w, r in re.findall(r"^- (\w+): (\w+) job, (\d+) hours?, weight (\d+), (?:released at hour "
                                          r"(\d+)|available from hour 0)$", prompt, flags=re.M):
        jobs[name] = (int(p), int(w), int(r or 0), kind)
    before = re.findall(r"^- (\w+) must be finished before (\w+) starts\.$", prompt, flags=re.M)
    setup = int(re.search(r"a changeover of (\d+) hours? must follow", prompt)[1])
    return jobs, before, setup


def start_after(clock, last, job, setup):
    """When a job may start: after the previous one (plus the changeover if the type changes) and its release."""
    duration, weight, release, kind = job
    return max(clock + (setup if last is not None and last != kind else 0), release)


def schedule_cost(order, jobs, before, setup):
    position = {j: i for i, j in enumerate(order)}
    if any(position[a] > position[b] for a, b in before):
        return None
    clock = total = 0
    last = None
    for j in order:
        clock = start_after(clock, last, jobs[j], setup) + jobs[j][0]
        total += jobs[j][1] * clock
        last = jobs[j][3]
    return total


def cheapest_orders(jobs, before, setup):
    """The minimum total cost and every order reaching it, by a memoised search over what is left: the cheapest
    way to finish depends only on the jobs left, the clock and the type of the last job run."""
    names = list(jobs)
    preds = {j: {a for a, b in before if b == j} for j in names}

    @cache
    def rest(left: frozenset, clock: int, last) -> tuple[int, tuple]:
        if not left:
            return 0, ((),)
        best, ways = None, []
        for j in sorted(left):
            if preds[j] & left:
                continue
            finish = start_after(clock, last, jobs[j], setup) + jobs[j][0]
            cost, tails = rest(left - {j}, finish, jobs[j][3])
            cost += jobs[j][1] * finish
            if best is None or cost < best:
                best, ways = cost, [(j,) + t for t in tails[:2]]
            elif cost == best:
                ways += [(j,) + t for t in tails[:2]]
        return best, tuple(ways[:2])  # two optimal orders are enough to refute uniqueness

    return rest(frozenset(names), 0, None)


def obvious_schedule_cost(jobs, before, setup):
    """Dispatch by weight per hour among released jobs whose predecessors are done (ties: listed first), else
    wait for the earliest release; then swap neighbours while the best swap lowers the cost."""
    names, done, order, clock = list(jobs), set(), [], 0
    while len(order) < len(names):
        ready = [j for j in names if j not in done and all(a in done for a, b in before if b == j)]
        released = [j for j in ready if jobs[j][2] <= clock]
        if not released:
            released = [min(ready, key=lambda j: (jobs[j][2], names.index(j)))]
        j = max(released, key=lambda j: (jobs[j][1] / jobs[j][0], -names.index(j)))
        clock = start_after(clock, jobs[order[-1]][3] if order else None, jobs[j], setup) + jobs[j][0]
        done.add(j)
        order.append(j)
    cost = schedule_cost(order, jobs, before, setup)
    while True:
        options = [(c, o) for i in range(len(order) - 1)
                   if (c := schedule_cost(o := order[:i] + [order[i + 1], order[i]] + order[i + 2:], jobs, before,
                                          setup)) is not None and c < cost]
        if not options:
            return cost
        cost, order = min(options, key=lambda option: option[0])


def test_task_schedule_has_one_cheapest_order_and_the_obvious_approach_misses_it():
    for g in instances("logic-task-schedule"):
        jobs, before, setup = parse_jobs(g.prompt)
        assert len(jobs) == int(re.search(r"lists the (\d+) job names", g.prompt)[1]) and before
        assert len({kind for *_, kind in jobs.values()}) == 2  # both types occur, so changeovers matter
        best, winners = cheapest_orders(jobs, before, setup)
        answer = entries(g)
        assert list(winners) == [tuple(answer[1:])] and int(answer[0]) == best
        assert schedule_cost(answer[1:], jobs, before, setup) == best
        assert obvious_schedule_cost(jobs, before, setup) > best  # the trap: the obvious answer is wrong


def test_schedule_changeovers_change_the_optimum():
    """Without the changeover the cheapest order or its cost differs in most instances: the changeover is part of
    the problem, not decoration."""
    changed = 0
    for g in instances("logic-task-schedule"):
        jobs, before, setup = parse_jobs(g.prompt)
        best, winners = cheapest_orders(jobs, before, 0)
        changed += (best, winners[0]) != (int(entries(g)[0]), tuple(entries(g)[1:]))
    assert changed >= SEEDS * 3 // 4


# ---- zebra

ZEBRA_REFERENCES = [(r"the resident of the (\w+) house", "House colours"), (r"the (\w+) owner", "Pets"),
                    (r"the (\w+) drinker", "Drinks"), (r"the person who plays the (\w+)", "Instruments"),
                    (r"the person whose hobby is (\w+)", "Hobbies"), (r"the (\w+)", "Jobs"), (r"(\w+)", "Names")]


def zebra_reference(text, values):
    for pattern, heading in ZEBRA_REFERENCES:
        if (m := re.fullmatch(pattern, text)) and m[1] in values.get(heading, []):
            return heading, values[heading].index(m[1])
    raise AssertionError(f"unknown reference: {text}")


ZEBRA_RELATIONS = [  # house numbers x, y from 1; the number of houses n
    (r"(.+) lives in house (\d+)\.", 1, lambda x, n, h: x == int(h)),
    (r"(.+) lives in one of the two end houses \(house 1 or house (\d+)\)\.", 1, lambda x, n, h: (x == 1) | (x == n)),
    (r"(.+) lives in an (even|odd)-numbered house\.", 1, lambda x, n, e: x % 2 == (e == "odd")),
    (r"(.+) does not live in house (\d+)\.", 1, lambda x, n, h: x != int(h)),
    (r"(.+) lives directly to the left of (.+)\.", 2, lambda x, y, n: x + 1 == y),
    (r"(.+) and (.+) live next to each other\.", 2, lambda x, y, n: abs(x - y) == 1),
    (r"(.+) lives somewhere to the left of (.+)\.", 2, lambda x, y, n: x < y),
    (r"There is exactly one house between where (.+) lives and where (.+) lives\.", 2,
     lambda x, y, n: abs(x - y) == 2),
    (r"There are at least two houses between where (.+) lives and where (.+) lives\.", 2,
     lambda x, y, n: abs(x - y) >= 3),
    (r"(.+) and (.+) live in different houses that are not next to each other\.", 2, lambda x, y, n: abs(x - y) > 1),
    (r"The house numbers of (.+) and (.+) add up to (\d+)\.", 2, lambda x, y, n, s: x + y == int(s)),
    (r"(.+) and (.+) live in houses whose numbers are both odd or both even\.", 2,
     lambda x, y, n: (x - y) % 2 == 0),
    (r"Of the house numbers of (.+) and (.+), one is odd and the other even\.", 2, lambda x, y, n: (x - y) % 2 == 1),
    (r"The house number of (.+) is twice the house number of (.+)\.", 2, lambda x, y, n: x == 2 * y),
    (r"(.+) and (.+) are the same person\.", 2, lambda x, y, n: x == y),
    (r"(.+) and (.+) are different people\.", 2, lambda x, y, n: x != y),
    (r"(\w+) is not (.+)\.", 2, lambda x, y, n: x != y),  # the first is a name, one word
    (r"(\w+) is (.+)\.", 2, lambda x, y, n: x == y),
]


def zebra_clue(line, values):
    """(references, test) where test takes the house numbers of the referenced values (and n)."""
    for pattern, arity, test in ZEBRA_RELATIONS:
        if m := re.fullmatch(pattern, line):
            texts = [t[0].lower() + t[1:] if t.startswith("The ") else t for t in m.groups()[:arity]]
            refs = [zebra_reference(t, values) for t in texts]
            extra = m.groups()[arity:]
            return refs, (lambda *h, test=test, extra=extra: test(*h, *extra))
    raise AssertionError(f"unparsed clue: {line}")


def zebra_grids(headings, n, clues, limit=2):
    """Up to `limit` grids meeting the clues ({heading: house of each value}), by a search over the house of each
    value: arc consistency on the two-value clues, each category's values in different houses (a placed value
    takes its house from the others; a house only one value can still take gets it), then a split on a value
    with the fewest houses left."""
    index = {h: i for i, h in enumerate(headings)}
    size = len(headings) * n
    domain = [set(range(1, n + 1)) for _ in range(size)]
    pairs, touching = [], [[] for _ in range(size)]
    for refs, test in clues:
        ids = [index[h] * n + v for h, v in refs]
        if len(ids) == 1:
            domain[ids[0]] = {x for x in domain[ids[0]] if test(x, n)}
        else:
            touching[ids[0]].append(len(pairs))
            touching[ids[1]].append(len(pairs))
            pairs.append((ids[0], ids[1], test))

    def propagate(dom, queue):
        while queue:
            v = queue.pop()
            changed = []
            for k in touching[v]:
                x, y, test = pairs[k]
                if v == x:
                    other, new = y, {b for b in dom[y] if any(test(a, b, n) for a in dom[x])}
                else:
                    other, new = x, {a for a in dom[x] if any(test(a, b, n) for b in dom[y])}
                if new != dom[other]:
                    dom[other] = new
                    changed.append(other)
            first = v - v % n
            group = range(first, first + n)
            if len(dom[v]) == 1:
                for u in group:
                    if u != v and dom[v] <= dom[u]:
                        dom[u] = dom[u] - dom[v]
                        changed.append(u)
            for house in range(1, n + 1):
                holders = [u for u in group if house in dom[u]]
                if len(holders) == 1 and len(dom[holders[0]]) > 1:
                    dom[holders[0]] = {house}
                    changed.append(holders[0])
                elif not holders:
                    return False
            if any(not dom[u] for u in changed):
                return False
            queue.extend(changed)
        return True

    found = []

    def search(dom):
        if len(found) >= limit:
            return
        open_values = [u for u in range(size) if len(dom[u]) > 1]
        if not open_values:
            found.append({h: [next(iter(dom[i * n + v])) for v in range(n)] for h, i in index.items()})
            return
        u = min(open_values, key=lambda u: len(dom[u]))
        for house in sorted(dom[u]):
            child = [set(d) for d in dom]
            child[u] = {house}
            if propagate(child, [u]):
                search(child)

    if all(domain) and propagate(domain, list(range(size))):
        search(domain)
    return found


def zebra_problem(g):
    values = dict(re.findall(r"^- ([\w ]+): (.*)$", g.prompt, flags=re.M))
    values = {h: v.split(", ") for h, v in values.items()}
    n = len(next(iter(values.values())))
    clues = [zebra_clue(line, values) for line in numbered_lines(g.prompt)]
    return list(values), values, n, clues


ASKED = {"name": "Names", "house colour": "House colours", "pet": "Pets", "drink": "Drinks", "job": "Jobs",
         "instrument": "Instruments", "hobby": "Hobbies"}


@pytest.mark.parametrize("irreducible_checks", [2])
def test_zebra_has_exactly_one_grid_and_no_spare_clue(irreducible_checks):
    for s, g in enumerate(instances("logic-zebra")):
        headings, values, n, clues = zebra_problem(g)
        grids = zebra_grids(headings, n, clues)
        assert len(grids) == 1
        asked = re.findall(r"the ([\w ]+?) for house 1, house 2, \.\.\., house \d+", g.prompt)
        assert len(asked) == 3 and len(entries(g)) == 3 * n
        grid = grids[0]
        by_house = lambda h: [values[h][grid[h].index(house)] for house in range(1, n + 1)]  # noqa: E731
        assert [v for a in asked for v in by_house(ASKED[a])] == entries(g)
        if s < irreducible_checks:
            for i in range(len(clues)):
                assert len(zebra_grids(headings, n, clues[:i] + clues[i + 1:])) == 2, f"clue {i + 1} is spare"


# ---------------------------------------------------------------- tents (logic-tents)
# An independent solver that reads only the prompt: row by row, every set of tents a row can hold (cells next to
# a tree by the prompt's attachment rule, no two side by side, as many as the row's count), checked against the
# row above, the column counts so far, the trees whose every cell is decided, and at the end a perfect matching
# of trees to tents. It never imports the generator's solver.

def parse_tents(prompt: str) -> dict:
    rows, cols = map(int, re.search(r"a grid of (\d+) rows and (\d+) columns", prompt).groups())
    corners = "diagonally adjacent to its own tree" in prompt
    assert corners != ("orthogonally adjacent to its own tree" in prompt)
    grid, row_counts = [], []
    for number, cells, count in re.findall(r"^ *(\d+) ((?:  [T.])+)   \| (\d+|\?)$", prompt, flags=re.M):
        assert int(number) == len(grid) + 1
        grid.append(cells.split())
        row_counts.append(None if count == "?" else int(count))
    col_counts = [None if k == "?" else int(k) for k in
                  re.search(r"^count((?: +(?:\d+|\?))+)$", prompt, flags=re.M)[1].split()]
    assert len(grid) == rows and all(len(line) == cols for line in grid) and len(col_counts) == cols
    listed = re.search(r"rows 1 to \d+: ([\d?, ]+); columns 1 to \d+: ([\d?, ]+)\.", prompt)
    assert [str(k) if k is not None else "?" for k in row_counts] == listed[1].split(", ")
    assert [str(k) if k is not None else "?" for k in col_counts] == listed[2].split(", ")
    trees = [(r, c) for r in range(rows) for c in range(cols) if grid[r][c] == "T"]
    assert f"as many tents as trees ({len(trees)})" in prompt
    return {"rows": rows, "cols": cols, "corners": corners, "trees": trees, "row_counts": row_counts,
            "col_counts": col_counts}


def tree_cells(p: dict, tree: tuple[int, int]) -> list[tuple[int, int]]:
    r, c = tree
    steps = [(-1, -1), (-1, 1), (1, -1), (1, 1)] if p["corners"] else [(-1, 0), (1, 0), (0, -1), (0, 1)]
    return [(r + dr, c + dc) for dr, dc in steps if 0 <= r + dr < p["rows"] and 0 <= c + dc < p["cols"]
            and (r + dr, c + dc) not in p["trees"]]


def perfect_matching(trees: list, cells: dict, tents: set) -> bool:
    """Kuhn's augmenting paths: can every tree get its own tent, using every tent?"""
    if len(tents) != len(trees):
        return False
    owner: dict = {}

    def augment(t, seen):
        for x in cells[t]:
            if x in tents and x not in seen:
                seen.add(x)
                if x not in owner or augment(owner[x], seen):
                    owner[x] = t
                    return True
        return False

    return all(augment(t, set()) for t in trees)


def tents_placements(p: dict, limit: int = 2) -> list[frozenset]:
    """Up to `limit` placements the prompt's rules allow, by integer programming (HiGHS through scipy): one binary
    per candidate cell and per tree-cell pairing, the counts, no two tents touching, then a cut excluding each
    placement found; a 20 x 20 grid takes milliseconds where a row-by-row search takes hours."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    trees = p["trees"]
    cells = {tree: tree_cells(p, tree) for tree in trees}
    spots = sorted({x for tree in trees for x in cells[tree]})
    at = {x: i for i, x in enumerate(spots)}
    pairs = [(tree, x) for tree in trees for x in cells[tree]]
    width = len(spots) + len(pairs)
    rows_, low, high = [], [], []

    def constraint(coefficients: dict[int, float], lo: float, hi: float) -> None:
        row = np.zeros(width)
        for i, v in coefficients.items():
            row[i] += v
        rows_.append(row), low.append(lo), high.append(hi)

    for tree in trees:  # every tree has exactly one tent of its own
        constraint({len(spots) + k: 1 for k, (t, _) in enumerate(pairs) if t == tree}, 1, 1)
    for x in spots:  # a tent belongs to exactly one tree; a cell without a tent to none
        constraint({at[x]: -1, **{len(spots) + k: 1 for k, (_, y) in enumerate(pairs) if y == x}}, 0, 0)
    for line, key in ((0, "row_counts"), (1, "col_counts")):
        for index, count in enumerate(p[key]):
            if count is not None:
                constraint({at[x]: 1 for x in spots if x[line] == index}, count, count)
    for x in spots:  # no two tents touch, not even at a corner
        for dr, dc in ((0, 1), (1, -1), (1, 0), (1, 1)):
            if (y := (x[0] + dr, x[1] + dc)) in at:
                constraint({at[x]: 1, at[y]: 1}, 0, 1)
    found: list[frozenset] = []
    while len(found) < limit:
        result = milp(np.zeros(width), constraints=LinearConstraint(np.array(rows_), low, high),
                      integrality=np.ones(width), bounds=Bounds(0, 1))
        if result.status != 0:
            break
        tents = frozenset(x for x in spots if result.x[at[x]] > 0.5)
        assert perfect_matching(trees, cells, tents)  # the pairing, checked a second way
        found.append(tents)
        constraint({at[x]: 1 for x in tents}, -np.inf, len(tents) - 1)  # any other placement
    return found


def tent_cells(g) -> frozenset:
    return frozenset((int(m[1]) - 1, int(m[2]) - 1) for m in (re.fullmatch(r"r(\d+)c(\d+)", e) for e in entries(g)))


def test_tents_has_exactly_one_placement_and_it_is_the_key():
    declared = suite().item("logic-tents").difficulty.drivers
    twists = Counter()
    for g in instances("logic-tents"):
        p = parse_tents(g.prompt)
        placements = tents_placements(p)
        assert placements == [tent_cells(g)], "the prompt's rules allow another placement, or not the key's"
        assert entries(g) == sorted(entries(g), key=lambda e: tuple(map(int, re.findall(r"\d+", e))))  # row-major
        hidden = sum(k is None for k in p["row_counts"] + p["col_counts"])
        twists["corners" if p["corners"] else "hidden"] += 1
        assert hidden == (0 if p["corners"] else declared["hidden"]) and g.difficulty["hidden_counts"] == hidden
        assert len(p["trees"]) == g.difficulty["trees"] and (p["rows"], p["cols"]) == (declared["rows"],
                                                                                          declared["cols"])
    assert min(twists.values()) >= SEEDS // 5 and len(twists) == 2  # the twist really is drawn per instance


def test_tents_solver_sees_a_broken_rule():
    """The independent solver can fail: a wrong count, or the other attachment rule, leaves no placement or a
    different one."""
    g = instances("logic-tents")[0]
    p = parse_tents(g.prompt)
    row = next(r for r, k in enumerate(p["row_counts"]) if k is not None)
    raised = p["row_counts"][:row] + [p["row_counts"][row] + 1] + p["row_counts"][row + 1:]
    assert tent_cells(g) not in tents_placements({**p, "row_counts": raised})
    assert tent_cells(g) not in tents_placements({**p, "corners": not p["corners"]})


def test_tents_wrong_placements_score_zero():
    for g in instances("logic-tents")[:5]:
        cells = entries(g)
        moved = cells[:-1] + [cells[-1].replace("c", "c1", 1) if "c1" not in cells[-1] else cells[-1] + "0"]
        for answer in (cells[1:], moved, cells + ["r1c1" if "r1c1" not in cells else "r1c2"]):
            assert score_response(g.key, "ANSWER: " + ", ".join(answer)).score == 0.0
        shuffled = list(reversed(cells))  # the set is order-free: a right placement in another order still counts
        assert score_response(g.key, "ANSWER: " + ", ".join(shuffled)).score == 1.0


def test_tents_a_larger_grid_is_harder_for_either_twist():
    def median_guesses(twist: str, size: int) -> float:
        return median(logic.tents(ItemRng(derive_item_key(f"t-tents-size-{s}", "gi", "logic-tents", 2)),
                                  rows=size, cols=size, twist=twist).difficulty["guesses"] for s in range(12))
    for twist in ("hidden", "corners"):
        assert median_guesses(twist, 9) < median_guesses(twist, 13)
    # Hiding more counts makes the hidden twist harder too.
    assert median(logic.tents(ItemRng(derive_item_key(f"t-tents-hide-{s}", "gi", "logic-tents", 2)), twist="hidden",
                              hidden=0).difficulty["guesses"] for s in range(12)) < \
        median(logic.tents(ItemRng(derive_item_key(f"t-tents-hide-{s}", "gi", "logic-tents", 2)), twist="hidden",
                           hidden=6).difficulty["guesses"] for s in range(12))


def test_tents_fairness_bound():
    """The fairness argument: at most 90 trees on 20 x 20, at most 1,500 guesses of a propagating solver, and the
    prompt under 1,000 tokens."""
    for g in instances("logic-tents"):
        assert g.difficulty["trees"] <= 90 and g.difficulty["guesses"] <= 1500 and len(g.prompt) / 4 <= 1000


# ---- variant sudoku

CELL = r"r(\d)c(\d)"


def sudoku_problem(prompt):
    """(n, houses, constraints, givens) read from the prompt: each constraint is (cells, allowed digit tuples)."""
    n = int(re.search(r"Solve this (\d) × \1 variant sudoku", prompt)[1])
    bh, bw = map(int, re.search(r"each (\d) × (\d) box", prompt).groups())
    gap = int(m[1]) if (m := re.search(r"hold digits that differ by at least (\d)", prompt)) else None
    at = lambda text: (int(text[1]) - 1) * n + int(text[3]) - 1  # noqa: E731
    cells_of = lambda text: [at(t) for t in re.findall(r"r\dc\d", text)]  # noqa: E731
    rows = [[r * n + c for c in range(n)] for r in range(n)]
    houses = rows + [list(col) for col in zip(*rows)] + [
        [(top + i) * n + left + j for i in range(bh) for j in range(bw)]
        for top in range(0, n, bh) for left in range(0, n, bw)]
    digits = range(1, n + 1)
    constraints, givens, heading, seen = [], {}, None, Counter()
    body = prompt.split("nothing else is implied.\n\n")[1].split("\n\nExactly one grid")[0]
    for line in body.splitlines():
        if not line.startswith("- "):
            heading = line.rstrip(":")
            continue
        text = line[2:]
        seen[heading] += 1
        if heading == "Given digits":
            cell, digit = re.fullmatch(rf"({CELL}) = (\d)", text).group(1, 4)
            givens[at(cell)] = int(digit)
        elif heading == "Killer cages":
            total, cells = re.fullmatch(r"cage of total (\d+): (.*)", text).groups()
            cells = cells_of(cells)
            constraints.append((cells, [t for t in permutations(digits, len(cells)) if sum(t) == int(total)]))
        elif heading == "Arrows":
            circle, shaft = re.fullmatch(rf"circle ({CELL}); shaft (.*)", text).group(1, 4)
            shaft = cells_of(shaft)
            constraints.append(([at(circle)] + shaft, [(sum(t),) + t for t in product(digits, repeat=len(shaft))
                                                       if sum(t) <= n]))
        elif heading in ("Kropki dots", "X and V"):
            mark, a, b = re.fullmatch(rf"(white dot|black dot|X|V) between ({CELL}) and ({CELL})", text).group(1, 2, 5)
            test = {"white dot": lambda x, y: abs(x - y) == 1, "black dot": lambda x, y: x == 2 * y or y == 2 * x,
                    "X": lambda x, y: x + y == 10, "V": lambda x, y: x + y == 5}[mark]
            assert abs(at(a) - at(b)) in (1, n)  # side by side
            constraints.append(([at(a), at(b)], [t for t in product(digits, repeat=2) if test(*t)]))
        else:
            cells = cells_of(text)
            assert re.fullmatch(r"r\dc\d(, r\dc\d)+", text) and len(set(cells)) == len(cells) >= 3
            if heading == "Thermometers (bulb first)":
                allowed = list(combinations(digits, len(cells)))  # increasing tuples
            elif heading == "German whispers lines":
                allowed = [t for t in product(digits, repeat=len(cells))
                           if all(abs(x - y) >= gap for x, y in zip(t, t[1:]))]
            elif heading == "Renban lines":
                allowed = [t for t in permutations(digits, len(cells)) if max(t) - min(t) == len(cells) - 1]
            else:
                raise AssertionError(f"unknown section: {heading}")
            constraints.append((cells, allowed))
    return n, houses, constraints, givens, seen


def sudoku_solutions(n, houses, constraints, givens, limit=2):
    """Up to `limit` grids meeting every constraint, and the number of branches tried: domains as sets, each
    constraint a table of allowed tuples filtered against the domains (generalised arc consistency), each house a
    set of distinct digits (a fixed digit leaves the house; a digit with one place left goes there), then a split
    on a cell with the fewest digits left."""
    peers = [set().union(*(h for h in houses if c in h)) - {c} for c in range(n * n)]
    domains = [{givens[c]} if c in givens else set(range(1, n + 1)) for c in range(n * n)]
    found, branches = [], [0]

    def settle(dom, tables):
        while True:
            changed = False
            for c in range(n * n):
                if len(dom[c]) == 1:
                    for p in peers[c]:
                        if dom[c] & dom[p]:
                            dom[p] = dom[p] - dom[c]
                            changed = True
            for house in houses:
                for d in range(1, n + 1):
                    places = [c for c in house if d in dom[c]]
                    if not places:
                        return None
                    if len(places) == 1 and len(dom[places[0]]) > 1:
                        dom[places[0]] = {d}
                        changed = True
            for i, (cells, table) in enumerate(tables):
                table = [t for t in table if all(x in dom[c] for x, c in zip(t, cells))]
                tables[i] = (cells, table)
                for j, c in enumerate(cells):
                    keep = {t[j] for t in table}
                    if keep != dom[c]:
                        dom[c] = dom[c] & keep
                        changed = True
            if any(not d for d in dom):
                return None
            if not changed:
                return dom, tables

    def search(dom, tables):
        state = settle(dom, tables)
        if state is None or len(found) >= limit:
            return
        dom, tables = state
        open_cells = [c for c in range(n * n) if len(dom[c]) > 1]
        if not open_cells:
            grid = [next(iter(d)) for d in dom]
            if all(len({grid[c] for c in h}) == n for h in houses) and \
                    all(tuple(grid[c] for c in cells) in set(table) for cells, table in tables):
                found.append(grid)
            return
        cell = min(open_cells, key=lambda c: len(dom[c]))
        for d in sorted(dom[cell]):
            branches[0] += 1
            child = [set(x) for x in dom]
            child[cell] = {d}
            search(child, list(tables))

    search(domains, list(constraints))
    return found, branches[0]


def test_variant_sudoku_has_exactly_one_grid_and_it_is_the_key():
    kinds_seen, needs_search = Counter(), 0
    for g in instances("logic-variant-sudoku"):
        n, houses, constraints, givens, seen = sudoku_problem(g.prompt)
        grids, branches = sudoku_solutions(n, houses, constraints, givens)
        assert len(grids) == 1
        rows = entries(g)
        assert rows == ["".join(map(str, grids[0][r * n:(r + 1) * n])) for r in range(n)]
        assert len(rows) == n == 9 and len(givens) <= 2
        needs_search += branches > 0
        kinds = [k for k in seen if k != "Given digits"]
        assert len(kinds) >= 3
        kinds_seen.update(kinds)
        for k in kinds:  # every rule type used is stated in the prompt
            assert {"Killer cages": "Killer cages: the digits", "Arrows": "Arrows: each has a circle",
                    "Kropki dots": "Kropki dots: a white dot", "X and V": "X and V: an X between",
                    "Thermometers (bulb first)": "Thermometers: each is listed", "German whispers lines":
                    "German whispers lines: any two", "Renban lines": "Renban lines: the digits"}[k] in g.prompt
    assert len(kinds_seen) == 7  # the rule mix really changes from instance to instance
    assert needs_search >= SEEDS * 3 // 4  # propagation alone rarely finishes the grid
