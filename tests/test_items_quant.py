"""The quant items: references score 1, wrong answers 0, instances are deterministic and in their declared difficulty
band, the main drivers raise the measured difficulty, and independent solvers that read only the prompt text agree
with every key (each solver's shortcut is itself checked against brute force on shrunken copies of the instance)."""

import re
from fractions import Fraction
from functools import cache
from itertools import combinations, permutations
from math import comb, factorial
from statistics import median

import numpy as np
import pytest
from scipy.optimize import linprog

from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED
from esac_kit.instances import generate
from esac_kit.kinds import draw_in_band
from esac_kit.pools import custom_pool
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import load_suite

ITEMS = ["quant-tank-mixing", "quant-crew-work", "quant-urn-posterior", "quant-tax-ledger", "quant-arrangement-count"]
SEEDS = 24


@cache
def suite():
    return load_suite("gi")


@cache
def instances(item_id: str, n: int = SEEDS) -> tuple:
    """Instances as the suite makes them (declared drivers, redrawn into the band), from test-only pools."""
    item = suite().item(item_id)
    return tuple(generate(suite(), item, custom_pool(f"t-{item_id}-{k}")) for k in range(n))


def key_value(instance) -> Fraction:
    return Fraction(instance.key.answer)


def number(text: str) -> int:
    return int(text.replace(",", "").replace("$", ""))


# ---------------------------------------------------------------- guarantees every item keeps


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_scores_one_and_empty_or_garbled_score_zero(item_id):
    for g in instances(item_id):
        assert g.key.answer_type == "number"
        assert score_response(g.key, g.reference).score == 1.0
        assert score_response(g.key, "").score == 0.0
        assert score_response(g.key, GARBLED).score == 0.0
        assert "ANSWER:" in g.prompt and len(g.prompt) <= 16000


@pytest.mark.parametrize("item_id", ITEMS)
def test_plausible_wrong_answers_score_zero(item_id):
    for g in instances(item_id):
        value = key_value(g)
        for wrong in (value + 1, value - Fraction(1, 100), -value, value * 2):
            assert score_response(g.key, f"ANSWER: {wrong}").score == 0.0
        if value.denominator > 1:  # a rounded decimal is not the exact value
            rounded = round(float(value), 3)
            if Fraction(str(rounded)) != value:
                assert score_response(g.key, f"ANSWER: {rounded}").score == 0.0


@pytest.mark.parametrize("item_id", ITEMS)
def test_the_same_seed_gives_the_same_instance_and_another_seed_another(item_id):
    item = suite().item(item_id)
    first = generate(suite(), item, custom_pool("t-determinism"))
    assert generate(suite(), item, custom_pool("t-determinism")) == first
    assert generate(suite(), item, custom_pool("t-determinism-2")).prompt != first.prompt


@pytest.mark.parametrize("item_id", ITEMS)
def test_answers_vary_widely(item_id):
    answers = [g.key.answer for g in instances(item_id)]
    assert len(set(answers)) >= SEEDS - 3 and max(answers.count(a) for a in answers) <= 2  # memorising cannot pay


@pytest.mark.parametrize("item_id", ITEMS)
def test_every_instance_lies_in_the_declared_band(item_id):
    spec = suite().item(item_id).difficulty
    assert spec is not None and len(spec.note) >= 20
    low, high = spec.band
    for g in instances(item_id):
        assert low <= g.difficulty[spec.measure] <= high


def _median_measure(item_id: str, drivers: dict, band: tuple | None = None, seeds: int = 20) -> float:
    """The median measure over seeds of the item drawn with other drivers (and band), as the suite draws it."""
    item = suite().item(item_id)
    spec = item.difficulty.model_copy(update={"drivers": {**item.difficulty.drivers, **drivers},
                                              "band": band or item.difficulty.band})
    changed = item.model_copy(update={"difficulty": spec})
    values = [draw_in_band(changed, ItemRng(derive_item_key(f"t-drive-{s}", "gi", item_id, 1))).difficulty[spec.measure]
              for s in range(seeds)]
    return median(values)


@pytest.mark.parametrize("item_id, low, high", [
    ("quant-tank-mixing", ({"horizon": 5}, (4, 9)), ({"horizon": 6}, (4, 9))),
    ("quant-crew-work", ({"sites": 6, "workers": 4}, (2, 5)), ({"sites": 10, "workers": 9, "max_crew": 2}, (2, 9))),
    ("quant-urn-posterior", ({"scale": 1}, (2, 7)), ({"scale": 3}, (2, 9))),
    ("quant-tax-ledger", ({"years": 3, "amendments": 2}, (0, 99)), ({"years": 6, "amendments": 7}, (0, 99))),
    ("quant-arrangement-count", ({"apart": 4}, (0, 999)), ({"apart": 8}, (0, 999))),
])
def test_raising_the_main_driver_raises_the_measured_difficulty(item_id, low, high):
    assert _median_measure(item_id, *high) > _median_measure(item_id, *low)


def test_generation_is_fast():
    """Median at most 100 ms per instance including redraws, worst case at most 2 s (the suite's budget)."""
    import time
    for item_id in ITEMS:
        item = suite().item(item_id)
        times = []
        for k in range(15):
            start = time.perf_counter()
            generate(suite(), item, custom_pool(f"t-speed-{k}"))
            times.append(time.perf_counter() - start)
        assert median(times) < 0.1 and max(times) < 2, item_id


# ---------------------------------------------------------------- fairness: the route by hand stays small


def test_fairness_each_instance_has_a_short_route_by_hand():
    """Every instance is far too large to enumerate but has a pencil-and-paper route of an hour or two (well inside
    30k tokens of reasoning); this bounds the size of that route, so a knob turned too far fails here.

    tanks: total salt (count the dose days) plus one telescoped difference: one degree-`order` progression sum per
    dosing rule, with an exact answer of at most ~35 digits. crews: one bound per crew-capacity total below the crew
    size (a small knapsack over at most 8 jobs) plus the total-work bound. urns: per urn one beta-binomial tail with
    alpha + beta <= 4 (a polynomial of degree <= 3 in closed form), then Bayes over <= 4 urns. seatings: at most 200
    non-zero inclusion–exclusion terms, each a factorial times a power of 2. tax: 5 years x 13 sections on one page.
    """
    for g in instances("quant-tank-mixing"):
        t = _tank(g.prompt)
        assert len(t["doses"]) <= 3 and len(g.key.answer) <= 40
    for g in instances("quant-crew-work"):
        c = _crew(g.prompt)
        assert len(c["jobs"]) <= 8 and len(c["speeds"]) <= 6 and len(g.key.answer) <= 12
    for g in instances("quant-urn-posterior"):
        u = _urns(g.prompt)
        assert len(u["urns"]) <= 4 and all((x["a"] + x["b"]) // x["d"] <= 4 for x in u["urns"])
        assert len(g.key.answer) <= 45
    for g in instances("quant-arrangement-count"):
        assert g.difficulty["ie_terms"] <= 200
    for g in instances("quant-tax-ledger"):
        assert len(g.prompt) // 4 <= 2500 and len(_tax_case(g.prompt)["rows"]) <= 5


# ---------------------------------------------------------------- tanks: invariant + telescoping, checked by replay


def _tank(prompt: str) -> dict:
    m = re.search(r"tank A holds (\d+) litres of brine at (\d+) grams of salt per litre and tank B holds (\d+) litres "
                  r"at (\d+) grams per litre", prompt)
    va, a0, vb, b0 = map(int, m.groups())
    f = re.search(r"x_k = (\d+)/\((\d*)k \+ (\d+)\) litres", prompt)
    doses = []
    for step, grams, tank in re.findall(r"on every day whose number is a multiple of (\d+), (\d+) grams of salt are "
                                        r"dissolved in tank (\w)", prompt):
        doses.append(("every", int(step), 0, int(grams), tank))
    for rest, step, grams, tank in re.findall(r"on every day whose number leaves remainder (\d+) when divided by "
                                              r"(\d+), (\d+) grams of salt are dissolved in tank (\w)", prompt):
        doses.append(("every", int(step), int(rest), int(grams), tank))
    for day, grams, tank in re.findall(r"on day ([\d,]+) only, (\d+) grams of salt are dissolved in tank (\w)", prompt):
        doses.append(("once", number(day), 0, int(grams), tank))
    assert len(doses) == prompt.count("grams of salt are dissolved")
    asked = re.search(r"What is the (salt concentration|mass of salt) (?:of|in) tank (\w).* at the end of day ([\d,]+)",
                      prompt)
    return {"va": va, "vb": vb, "a0": a0, "b0": b0, "num": int(f[1]), "slope": int(f[2] or 1), "off": int(f[3]),
            "swap": "drawn out of tank A" in prompt, "doses": doses, "what": asked[1], "tank": asked[2],
            "days": number(asked[3])}


def _dose_days(dose, days):
    kind, step, rest, grams, tank = dose
    if kind == "once":
        return [step] if step <= days else []
    return range(rest if rest else step, days + 1, step)


def _tank_replay(t: dict, days: int) -> dict:
    """Day-by-day simulation of the written process, in exact fractions."""
    va, vb = Fraction(t["va"]), Fraction(t["vb"])
    salt = {"A": t["a0"] * va, "B": t["b0"] * vb}
    vol = {"A": va, "B": vb}
    doses = {}
    for dose in t["doses"]:
        for day in _dose_days(dose, days):
            doses.setdefault(day, []).append((dose[4], dose[3]))
    for k in range(1, days + 1):
        x = Fraction(t["num"], t["slope"] * k + t["off"])
        if t["swap"]:
            from_a, from_b = salt["A"] * x / vol["A"], salt["B"] * x / vol["B"]
            salt["A"] += from_b - from_a
            salt["B"] += from_a - from_b
        else:
            moved = salt["A"] * x / vol["A"]
            salt["A"] -= moved
            salt["B"] += moved
            back = salt["B"] * x / (vol["B"] + x)
            salt["B"] -= back
            salt["A"] += back
        for tank, grams in doses.get(k, []):
            salt[tank] += grams
    return salt


def _tank_closed(t: dict, days: int) -> dict:
    """Salt in each tank after `days` days from the invariant (total salt) and the telescoped difference."""
    va, vb = Fraction(t["va"]), Fraction(t["vb"])
    # The day-k factor on b - a is (P k + Q) / (P k + R); derive it from the written transfer.
    p = Fraction(t["slope"])
    if t["swap"]:
        q, r = t["off"] - Fraction(t["num"]) * (va + vb) / (va * vb), Fraction(t["off"])
    else:  # (V - x) / (V + x) with x = num / (slope k + off), V = va = vb
        assert va == vb
        q, r = t["off"] - Fraction(t["num"]) / va, t["off"] + Fraction(t["num"]) / va
    u, w = q / p, r / p
    s = w - u
    assert s.denominator == 1 and s >= 1, "the daily factor does not telescope"
    s = int(s)

    def g(j):  # prod_{k=j+1}^{N} (k+u)/(k+u+s) = g(j) / g(N)
        out = Fraction(1)
        for i in range(1, s + 1):
            out *= j + u + i
        return out

    diff = (t["b0"] - t["a0"]) * g(0)
    total = t["a0"] * va + t["b0"] * vb
    for dose in t["doses"]:
        tank, grams = dose[4], dose[3]
        weight = sum(g(j) for j in _dose_days(dose, days)) if dose[0] == "once" else None
        if weight is None:  # integer u: sum the integer weights directly
            assert u.denominator == 1
            uu = int(u)
            weight = 0
            for j in _dose_days(dose, days):
                term = 1
                for i in range(1, s + 1):
                    term *= j + uu + i
                weight += term
        diff += (-Fraction(grams) / va if tank == "A" else Fraction(grams) / vb) * weight
        total += grams * len(_dose_days(dose, days))
    diff /= g(days)
    a = (total - vb * diff) / (va + vb)
    return {"A": a * va, "B": (a + diff) * vb}


def test_tank_closed_form_matches_a_day_by_day_replay_on_short_horizons():
    for g in instances("quant-tank-mixing")[:12]:
        t = _tank(g.prompt)
        t["doses"] = [(k, min(step, 9) if k == "once" else step, rest, grams, tank)
                      for k, step, rest, grams, tank in t["doses"]]  # a one-off dose lands inside the short horizon
        for days in (1, 2, 13, 40):
            assert _tank_closed(t, days) == _tank_replay(t, days)


def test_tank_key_matches_the_closed_form_from_the_prompt():
    for g in instances("quant-tank-mixing"):
        t = _tank(g.prompt)
        assert t["days"] >= 10**4
        salt = _tank_closed(t, t["days"])[t["tank"]]
        value = salt if t["what"] == "mass of salt" else salt / (t["va"] if t["tank"] == "A" else t["vb"])
        assert value == key_value(g)
        # the trap of assuming the long exchange has fully mixed the tanks gives a different concentration
        full_mix = sum(_tank_closed(t, t["days"]).values()) / (t["va"] + t["vb"])
        assert salt / (t["va"] if t["tank"] == "A" else t["vb"]) != full_mix


# ---------------------------------------------------------------- crews: bottleneck bounds and an LP schedule


def _crew(prompt: str) -> dict:
    jobs = [(int(w), int(c)) for w, c in re.findall(r"- Job \d+: (\d+) units of work; at most (\d+) workers? at a time",
                                                    prompt)]
    speeds = dict((n, int(s)) for n, s in re.findall(r"(\w+) (\d+) units? per hour", prompt))
    windows = {n: (Fraction(0), None) for n in speeds}
    for n, h in re.findall(r"(\w+) can only start work ([\d.]+) hours after the start", prompt):
        windows[n] = (Fraction(h), None)
    for n, h in re.findall(r"(\w+) must stop for good ([\d.]+) hours after the start", prompt):
        windows[n] = (Fraction(0), Fraction(h))
    return {"jobs": jobs, "speeds": speeds, "windows": windows}


def _pieces(c: dict):
    """Availability intervals [start, end) (end None: open) and who is available in each."""
    cuts = sorted({Fraction(0)} | {t for w in c["windows"].values() for t in w if t is not None})
    out = []
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else None
        out.append((start, end, [n for n, (a, b) in c["windows"].items() if a <= start and (b is None or b > start)]))
    return out


def _bottleneck_optimum(c: dict) -> tuple[Fraction, Fraction]:
    """The largest lower bound over all job groups (each group can absorb at most the speeds of its crew-limit many
    fastest available workers), and the plain total-work bound."""
    pieces = _pieces(c)

    def finish(limit, work):
        done = Fraction(0)
        for start, end, here in pieces:
            rate = sum(sorted((c["speeds"][n] for n in here), reverse=True)[:limit])
            if end is None or (rate and done + rate * (end - start) >= work):
                return start + (work - done) / rate
            done += rate * (end - start)

    best = Fraction(0)
    jobs = c["jobs"]
    for k in range(1, len(jobs) + 1):
        for group in combinations(jobs, k):
            best = max(best, finish(sum(cap for _, cap in group), sum(w for w, _ in group)))
    return best, finish(len(c["speeds"]), sum(w for w, _ in jobs))


def _crew_lp(c: dict) -> float:
    """Minimum finishing time as a linear programme over availability intervals: x[i, j, l] hours of worker i on job
    j in interval l. Within an interval, any x with worker totals <= length and job totals <= limit x length can be
    scheduled (split each job into `limit` lanes and decompose the worker-lane matrix, Birkhoff-von Neumann)."""
    names = list(c["speeds"])
    jobs = c["jobs"]
    pieces = _pieces(c)
    best = None
    for last in range(len(pieces)):
        used = pieces[:last + 1]
        nv = len(names) * len(jobs) * len(used) + 1
        index = lambda i, j, l: (l * len(names) + i) * len(jobs) + j  # noqa: E731
        a_ub, b_ub = [], []
        for l, (start, end, here) in enumerate(used):
            final = l == last
            length = None if final else float(end - start)
            for i, n in enumerate(names):
                row = np.zeros(nv)
                for j in range(len(jobs)):
                    row[index(i, j, l)] = 1
                if final:
                    row[-1] = -(n in here)
                    a_ub.append(row)
                    b_ub.append(-float(start) * (n in here))
                else:
                    a_ub.append(row)
                    b_ub.append(length * (n in here))
            for j, (_, cap) in enumerate(jobs):
                row = np.zeros(nv)
                for i in range(len(names)):
                    row[index(i, j, l)] = 1
                if final:
                    row[-1] = -cap
                    a_ub.append(row)
                    b_ub.append(-float(start) * cap)
                else:
                    a_ub.append(row)
                    b_ub.append(length * cap)
        for j, (work, _) in enumerate(jobs):
            row = np.zeros(nv)
            for l in range(len(used)):
                for i, n in enumerate(names):
                    row[index(i, j, l)] = -c["speeds"][n]
            a_ub.append(row)
            b_ub.append(-work)
        start, end, _ = used[-1]
        cost = np.zeros(nv)
        cost[-1] = 1
        bounds = [(0, None)] * (nv - 1) + [(float(start), None if end is None else float(end))]
        res = linprog(cost, A_ub=np.array(a_ub), b_ub=b_ub, bounds=bounds, method="highs")
        if res.status == 0:
            best = res.fun if best is None else min(best, res.fun)
    return best


def test_crew_key_is_the_largest_bottleneck_bound_and_an_lp_schedule_attains_it():
    for g in instances("quant-crew-work"):
        c = _crew(g.prompt)
        assert len(c["jobs"]) == 8 and len(c["speeds"]) == 6
        optimum, naive = _bottleneck_optimum(c)
        assert optimum == key_value(g)
        assert abs(_crew_lp(c) - float(optimum)) < 1e-6 * float(optimum)
        # the plug-in answer and the biggest single job are both wrong: a group of jobs is the bottleneck
        single = max(_bottleneck_optimum({**c, "jobs": [job]})[0] for job in c["jobs"])
        assert optimum > naive and optimum > single


# ---------------------------------------------------------------- urns: exchangeability, checked by the chain


def _urns(prompt: str) -> dict:
    urns = []
    for name, die, a, b, d in re.findall(r"- Urn (\w+) \(used if the die shows ([^)]*)\): starts with (\d+) red and "
                                         r"(\d+) blue balls?; after each draw the ball drawn is put back together "
                                         r"with (\d+) more balls? of the same colour", prompt):
        urns.append({"name": name, "faces": len(re.findall(r"\d", die)), "a": int(a), "b": int(b), "d": int(d)})
    assert sum(u["faces"] for u in urns) == 6
    red = int(re.search(r"at least (\d+) red balls \(the red threshold\)", prompt)[1])
    blue = int(re.search(r"at least (\d+) blue balls \(the blue threshold\)", prompt)[1])
    return {"urns": urns, "red": red, "blue": blue}


def _chain(a: int, b: int, d: int, red: int, blue: int, first: str | None = None) -> Fraction:
    """P(red threshold first [and the first draw is `first`]) by dynamic programming over the urn's states."""
    memo = {}

    def win(r, bl):
        if r >= red:
            return Fraction(1)
        if bl >= blue:
            return Fraction(0)
        if (r, bl) not in memo:
            memo[r, bl] = Fraction(r, r + bl) * win(r + d, bl) + Fraction(bl, r + bl) * win(r, bl + d)
        return memo[r, bl]

    if first == "red":
        return Fraction(a, a + b) * win(a + d, b)
    if first == "blue":
        return Fraction(b, a + b) * win(a, b + d)
    return win(a, b)


def _exchangeable(a: int, b: int, d: int, red: int, blue: int, first: str | None = None) -> Fraction:
    """The same probability from de Finetti: the urn is a beta(a/d, b/d) mixture of coin flips, so the red threshold
    comes first iff among the first m + n - 1 draws at least m are red (m, n: draws each colour needs), and the
    beta-binomial tail equals a hypergeometric sum."""
    assert a % d == 0 and b % d == 0
    alpha, beta = a // d, b // d
    m, n = -(-(red - a) // d), -(-(blue - b) // d)
    if first == "red":
        alpha, m, lead = alpha + 1, m - 1, Fraction(a, a + b)
    elif first == "blue":
        beta, n, lead = beta + 1, n - 1, Fraction(b, a + b)
    else:
        lead = Fraction(1)
    if m <= 0:
        return lead
    if n <= 0:
        return Fraction(0)
    top = sum(comb(m + alpha - 1, i) * comb(n + beta - 1, alpha + beta - 1 - i) for i in range(alpha))
    return lead * Fraction(top, comb(m + n + alpha + beta - 2, alpha + beta - 1))


def _urn_answer(u: dict, prompt: str, p) -> Fraction:
    prior = [Fraction(x["faces"], 6) for x in u["urns"]]
    args = [(x["a"], x["b"], x["d"], u["red"], u["blue"]) for x in u["urns"]]
    win = [pr * p(*a) for pr, a in zip(prior, args)]
    if m := re.search(r"probability that urn (\w+) was the urn used", prompt):
        return win[[x["name"] for x in u["urns"]].index(m[1])] / sum(win)
    if m := re.search(r"the first ball drawn was (red|blue)\. Given this", prompt):
        joint = sum(pr * p(*a, first=m[1]) for pr, a in zip(prior, args))
        seen = sum(pr * Fraction(x["a" if m[1] == "red" else "b"], x["a"] + x["b"]) for pr, x in zip(prior, u["urns"]))
        return joint / seen
    assert "probability that the first ball drawn was red?" in prompt
    return sum(pr * p(*a, first="red") for pr, a in zip(prior, args)) / sum(win)


def test_urn_shortcut_matches_the_absorbing_chain_on_small_thresholds():
    for g in instances("quant-urn-posterior")[:12]:
        u = _urns(g.prompt)
        for x in u["urns"]:
            red, blue = x["a"] + 7 * x["d"] + 1, x["b"] + 5 * x["d"] + 2
            for first in (None, "red", "blue"):
                assert _exchangeable(x["a"], x["b"], x["d"], red, blue, first) == \
                    _chain(x["a"], x["b"], x["d"], red, blue, first)


def test_urn_key_matches_bayes_over_the_exchangeable_urns():
    for g in instances("quant-urn-posterior"):
        u = _urns(g.prompt)
        assert _urn_answer(u, g.prompt, _exchangeable) == key_value(g)
        # reading the thresholds as numbers of draws (ignoring the start and the d added) changes the answer
        shifted = {**u, "urns": [{**x, "a": x["d"], "b": x["d"]} for x in u["urns"]]}
        assert _urn_answer(shifted, g.prompt, _exchangeable) != key_value(g) or len(u["urns"]) == 1


# ---------------------------------------------------------------- seatings: inclusion–exclusion, brute force


def _seating(prompt: str) -> dict:
    n = int(re.match(r"(\d+) guests", prompt)[1])
    names = re.search(r"guests — (.*?) — are to be seated", prompt)[1].replace(" and ", ", ").split(", ")
    together = re.findall(r"^- (\w+) and (\w+) must sit next to each other\.$", prompt, flags=re.M)
    apart = re.findall(r"^- (\w+) and (\w+) must not sit next to each other\.$", prompt, flags=re.M)
    for x, y, z in re.findall(r"^- No two of (\w+), (\w+) and (\w+) may sit next to each other\.$", prompt, flags=re.M):
        apart += [(x, y), (x, z), (y, z)]
    end = re.search(r"^- (\w+) must sit in one of the two end chairs", prompt, flags=re.M)
    rules = len(re.findall(r"^- ", prompt, flags=re.M))
    assert rules == len(together) + prompt.count("must not sit next") + prompt.count("No two of") + bool(end)
    return {"n": n, "names": names, "together": together, "apart": apart, "end": end[1] if end else None,
            "circle": "round table" in prompt}


def _paths(edges):
    """None if the edges are not vertex-disjoint simple paths, else (number of paths, each vertex's degree)."""
    degree, parent = {}, {}

    def root(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for a, b in edges:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
        if degree[a] > 2 or degree[b] > 2 or root(a) == root(b):
            return None
        parent[root(a)] = root(b)
    return len({root(x) for x in degree}), degree


def _inclusion_exclusion(s: dict) -> int:
    total = 0
    for k in range(len(s["apart"]) + 1):
        for chosen in combinations(s["apart"], k):
            shape = _paths(list(s["together"]) + list(chosen))
            if shape is None:
                continue
            blocks, degree = shape
            units = s["n"] - len(s["together"]) - k
            if s["circle"]:
                ways = factorial(units - 1) * 2 ** blocks
            elif s["end"] is None:
                ways = factorial(units) * 2 ** blocks
            elif degree.get(s["end"], 0) == 0:
                ways = 2 * factorial(units - 1) * 2 ** blocks
            elif degree[s["end"]] == 1:  # the end guest's block goes to an end, pointing the right way
                ways = 2 * factorial(units - 1) * 2 ** (blocks - 1)
            else:
                ways = 0
            total += (-1) ** k * ways
    return total


@cache
def _perms(n: int) -> np.ndarray:
    return np.array(list(permutations(range(n))), dtype=np.int8)


def _brute_force(s: dict) -> int:
    """Count by listing every seating (positions of each guest); a round table fixes guest 0 in chair 0."""
    n, index = s["n"], {name: i for i, name in enumerate(s["names"])}
    if s["circle"]:
        rest = _perms(n - 1) + 1
        pos = np.concatenate([np.zeros((len(rest), 1), dtype=np.int8), rest], axis=1)
    else:
        pos = _perms(n)
    # pos[:, guest] = chair of that guest (a permutation of chairs read as guest -> chair)

    def adjacent(a, b):
        gap = np.abs(pos[:, index[a]].astype(int) - pos[:, index[b]])
        return (gap == 1) | (gap == n - 1) if s["circle"] else gap == 1

    ok = np.ones(len(pos), dtype=bool)
    for a, b in s["together"]:
        ok &= adjacent(a, b)
    for a, b in s["apart"]:
        ok &= ~adjacent(a, b)
    if s["end"] is not None:
        ok &= (pos[:, index[s["end"]]] == 0) | (pos[:, index[s["end"]]] == n - 1)
    return int(ok.sum())


def _shrunk(s: dict, free: int) -> dict:
    involved = {x for pair in s["together"] + s["apart"] for x in pair} | ({s["end"]} if s["end"] else set())
    keep = sorted(involved) + [x for x in s["names"] if x not in involved][:free]
    return {**s, "n": len(keep), "names": keep}


def test_seating_inclusion_exclusion_matches_brute_force_on_shrunken_copies():
    for g in instances("quant-arrangement-count")[:10]:
        s = _seating(g.prompt)
        small = _shrunk(s, 1 if not s["circle"] else 2)
        assert small["n"] <= (9 if not s["circle"] else 10)
        assert _inclusion_exclusion(small) == _brute_force(small)


def test_seating_key_matches_inclusion_exclusion_and_every_rule_bites():
    for g in instances("quant-arrangement-count"):
        s = _seating(g.prompt)
        count = _inclusion_exclusion(s)
        assert count == key_value(g) and 10**6 <= count <= 10**15
        for field in ("together", "apart"):
            for pair in s[field]:
                looser = {**s, field: [p for p in s[field] if p != pair]}
                assert _inclusion_exclusion(looser) != count
        if s["end"]:
            assert _inclusion_exclusion({**s, "end": None}) != count


# ---------------------------------------------------------------- tax: a second implementation of the written code


def _tax_case(prompt: str) -> dict:
    money = r"(-?\$[\d,]+)"
    p = {}
    p["L"] = number(re.search(r"Up to \$([\d,]+) of a year's business loss", prompt)[1])
    p["CL"] = number(re.search(r"is a loss, up to \$([\d,]+) of it", prompt)[1])
    m = re.search(r"Personal allowance = \$([\d,]+), reduced by 50% of the amount by which adjusted income exceeds "
                  r"\$([\d,]+)", prompt)
    p["A0"], p["T0"] = number(m[1]), number(m[2])
    p["dp"] = int(re.search(r"It is limited to the smaller of (\d+)% of adjusted income", prompt)[1])
    m = re.search(r"Income tax = (\d+)% of taxable income up to \$([\d,]+), plus (\d+)% of the part of taxable income "
                  r"from \$[\d,]+ to \$([\d,]+), plus (\d+)% of the part above \$[\d,]+, plus capital gains tax of "
                  r"(\d+)%", prompt)
    p.update(r1=int(m[1]), b1=number(m[2]), r2=int(m[3]), b2=number(m[4]), r3=int(m[5]), cg=int(m[6]))
    m = re.search(r"Child credit = \$([\d,]+) per child, reduced by (\d+)% of the amount by which adjusted income "
                  r"exceeds \$([\d,]+)", prompt)
    p.update(cc=number(m[1]), ph=int(m[2]), T1=number(m[3]))
    p["gr"] = int(re.search(r"Green credit = (\d+)% of the year's green investment", prompt)[1])
    m = re.search(r"Pension deduction = the year's pension contributions, but at most (\d+)% of that year's wages "
                  r"and at most \$([\d,]+)", prompt)
    p["pp"], p["PM"] = int(m[1]), number(m[2])
    m = re.search(r"Surcharge = (\d+)% of the amount by which the income tax after credits exceeds \$([\d,]+)", prompt)
    p["sr"], p["sq"] = int(m[1]), number(m[2])
    rows = {}
    for line in re.findall(r"^(\d{4}) \| (.*)$", prompt, flags=re.M):
        cells = [c.strip() for c in line[1].split("|")]
        rows[int(line[0])] = dict(zip(["wages", "pension", "business", "capital", "donations", "children", "green",
                                       "withheld"], map(number, cells)))
    columns = {"wages": "wages", "pension contributions": "pension", "business result": "business",
               "capital result": "capital",
               "donations": "donations", "green investment": "green"}
    fixes = re.findall(r"Correction: the (.*?) figure for (\d{4}) is " + money + ", not " + money, prompt)
    for label, year, new, old in fixes:
        assert rows[int(year)][columns[label]] == number(old)
        rows[int(year)][columns[label]] = number(new)
    am = prompt.split("Amendments (")[1].split("A taxpayer's figures")[0]
    return {"p": p, "rows": rows, "amendments": re.findall(r"^A\d+\. (.*)$", am, flags=re.M),
            "fixes": len(fixes)}


def _in_force(text: str, year: int) -> bool:
    return year >= int(re.match(r"With effect from tax year (\d{4})", text)[1])


def _tax(case: dict, skip_amendments: bool = False) -> dict[int, tuple[Fraction, Fraction]]:
    """Tax due and balance per year, computed from the parsed code, amendments and (corrected) case figures."""
    base, rows = case["p"], case["rows"]
    amendments = [] if skip_amendments else case["amendments"]
    business_losses, capital_losses, donations, greens = [], [], [], []
    result = {}
    for year in sorted(rows):
        r = {k: Fraction(v) for k, v in rows[year].items()}
        p = dict(base)
        half_gain = lapse_before = None
        exception = False
        donation_years = 3
        for text in amendments:
            if not _in_force(text, year):
                continue
            if m := re.search(r"from \$[\d,]+ to \$[\d,]+ is (\d+)%\.", text):
                p["r2"] = int(m[1])
                if (later := re.search(r"replaced with effect from tax year (\d{4}): from that year on, that rate is "
                                       r"(\d+)%", text)) and year >= int(later[1]):
                    p["r2"] = int(later[2])
            elif m := re.search(r"limit on the loss relief in §1 is \$([\d,]+)", text):
                p["L"] = number(m[1])
            elif m := re.search(r"the limit in §6 is the smaller of (\d+)% of adjusted income", text):
                p["dp"] = int(m[1])
                donation_years = 1
            elif m := re.search(r"applies to the amount by which adjusted income exceeds \$([\d,]+)", text):
                p["T0"] = number(m[1])
            elif "green credits carried forward that arose in tax years before" in text:
                lapse_before = int(re.search(r"arose in tax years before (\d{4})", text)[1])
            elif "reduction of the child credit in §9 does not apply" in text:
                exception = True
                if (floor := re.search(r"With effect from tax year (\d{4}), this exception applies only when the "
                                       r"business loss is more than \$([\d,]+)", text)) and year >= int(floor[1]):
                    exception = ("floor", number(floor[2]))
            elif m := re.search(r"the capital gains tax rate in §8 is (\d+)%", text):
                p["cg"], half_gain = int(m[1]), True
            elif m := re.search(r"the upper limit of the pension deduction in §2 is \$([\d,]+)", text):
                p["PM"] = number(m[1])
            elif m := re.search(r"the surcharge in §12 is (\d+)% of the amount by which the income tax after credits "
                                r"exceeds \$([\d,]+)", text):
                p["sr"], p["sq"] = int(m[1]), number(m[2])
            else:
                raise AssertionError(f"unparsed amendment: {text}")

        def draw(pots, limit):  # pots are [origin year, amount left, last usable year], used oldest first
            taken = Fraction(0)
            for pot in pots:
                step = min(pot[1], limit - taken)
                if step > 0:
                    pot[1] -= step
                    taken += step
            return taken

        relief = Fraction(0)
        if r["business"] < 0:
            relief = min(-r["business"], p["L"], r["wages"])
            business_losses.append([year, -r["business"] - relief, 10**9])
            profit = Fraction(0)
        else:
            profit = r["business"] - draw(business_losses, r["business"])
        pension = min(r["pension"], Fraction(p["pp"], 100) * r["wages"], p["PM"])
        ordinary = max(Fraction(0), r["wages"] + profit - relief - pension)
        offset, gain = Fraction(0), Fraction(0)
        if r["capital"] > 0:
            gain = r["capital"] - draw(capital_losses, r["capital"] / 2 if half_gain else r["capital"])
        elif r["capital"] < 0:
            offset = min(-r["capital"], p["CL"], ordinary)
            capital_losses.append([year, -r["capital"] - offset, 10**9])
        adjusted = ordinary - offset + gain
        allowance = max(Fraction(0), p["A0"] - max(Fraction(0), adjusted - p["T0"]) / 2)
        room = max(Fraction(0), ordinary - offset - allowance)
        cap = min(Fraction(p["dp"], 100) * adjusted, room)
        donations = [pot for pot in donations if pot[2] >= year]
        from_earlier = draw(donations, cap)
        own = min(r["donations"], cap - from_earlier)
        donations.append([year, r["donations"] - own, year + donation_years])
        taxable = room - from_earlier - own
        tax = (Fraction(p["r1"], 100) * min(taxable, p["b1"])
               + Fraction(p["r2"], 100) * max(Fraction(0), min(taxable, p["b2"]) - p["b1"])
               + Fraction(p["r3"], 100) * max(Fraction(0), taxable - p["b2"]) + Fraction(p["cg"], 100) * gain)
        child = Fraction(p["cc"]) * r["children"]
        loss = -r["business"] if r["business"] < 0 else Fraction(0)
        spared = exception is True and loss > 0 or (isinstance(exception, tuple) and loss > exception[1])
        if not spared:
            child = max(Fraction(0), child - Fraction(p["ph"], 100) * max(Fraction(0), adjusted - p["T1"]))
        tax -= min(child, tax)
        greens = [pot for pot in greens if pot[2] >= year and (lapse_before is None or pot[0] >= lapse_before)]
        tax -= draw(greens, tax)
        mine = Fraction(p["gr"], 100) * r["green"]
        used = min(mine, tax)
        tax -= used
        greens.append([year, mine - used, year + 2])
        tax += Fraction(p["sr"], 100) * max(Fraction(0), tax - p["sq"])
        result[year] = (tax, tax - r["withheld"])
    return result


def _tax_answer(case: dict, prompt: str, **options) -> Fraction:
    result = _tax(case, **options)
    if m := re.search(r"What is the total tax due \(as defined in §13\) over the tax years (\d{4}) to (\d{4})",
                      prompt):
        assert sorted(result) == list(range(int(m[1]), int(m[2]) + 1))
        return sum(due for due, _ in result.values())
    year = int(re.search(r"What is the balance for tax year (\d{4})", prompt)[1])
    return result[year][1]


def test_tax_key_matches_a_second_implementation_of_the_written_code():
    for g in instances("quant-tax-ledger"):
        case = _tax_case(g.prompt)
        assert len(case["rows"]) == 5 and len(case["amendments"]) == 5 and case["fixes"] == 2
        assert _tax_answer(case, g.prompt) == key_value(g)
        assert len(g.prompt) // 4 < 4000


def test_tax_every_amendment_and_every_correction_changes_the_answer():
    for g in instances("quant-tax-ledger"):
        case = _tax_case(g.prompt)
        for i in range(len(case["amendments"])):
            without = {**case, "amendments": case["amendments"][:i] + case["amendments"][i + 1:]}
            assert _tax_answer(without, g.prompt) != key_value(g)
        for fix in re.findall(r"\nCorrection: .*", g.prompt):
            assert _tax_answer(_tax_case(g.prompt.replace(fix, "")), g.prompt) != key_value(g)


def test_the_test_instances_cover_every_variant_the_solvers_handle():
    """The solvers above are only evidence for the variants they meet: every branch must occur in the test pools."""
    tanks = [_tank(g.prompt) for g in instances("quant-tank-mixing")]
    assert {t["swap"] for t in tanks} == {True, False} and {t["what"] for t in tanks} == {"salt concentration",
                                                                                          "mass of salt"}
    assert any(d[0] == "once" for t in tanks for d in t["doses"])
    urns = [g.prompt for g in instances("quant-urn-posterior")]
    for phrase in ("was the urn used", "Given this", "the first ball drawn was red?"):
        assert any(phrase in p for p in urns)
    seatings = [_seating(g.prompt) for g in instances("quant-arrangement-count")]
    assert any(s["circle"] for s in seatings) and any(s["end"] for s in seatings)
    assert any(not s["circle"] and not s["end"] for s in seatings)
    assert any("No two of" in g.prompt for g in instances("quant-arrangement-count"))
    amendments = " ".join(a for g in instances("quant-tax-ledger") for a in _tax_case(g.prompt)["amendments"])
    for phrase in ("§8 for the part", "itself replaced", "loss relief", "limit in §6", "§5 applies",
                   "green credits carried", "child credit in §9", "capital gains tax rate", "pension deduction",
                   "surcharge in §12"):
        assert phrase in amendments
    questions = [g.prompt for g in instances("quant-tax-ledger")]
    assert any("total tax due" in p for p in questions) and any("balance for tax year" in p for p in questions)
