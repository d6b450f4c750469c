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
    ("quant-tank-mixing", ({"horizon": 4}, (3, 9)), ({"horizon": 5}, (3, 9))),
    ("quant-crew-work", ({"sites": 6, "releases": 3}, (0, 999)), ({"sites": 9}, (0, 999))),
    ("quant-urn-posterior", ({"reach": 6}, (0, 9999)), ({"reach": 12}, (0, 9999))),
    ("quant-tax-ledger", ({"years": 4, "amendments": 4}, (0, 999)), ({"years": 7, "amendments": 8}, (0, 999))),
    ("quant-arrangement-count", ({"guests": 12}, (0, 99)), ({"guests": 17}, (0, 99))),
])
def test_raising_the_main_driver_raises_the_measured_difficulty(item_id, low, high):
    assert _median_measure(item_id, *high) > _median_measure(item_id, *low)


def test_generation_is_fast():
    """No generator runs away: median under 1 s per instance including redraws, worst case under 5 s (a sanity
    bound on a loaded 2-core machine, not a speed target)."""
    import time
    for item_id in ITEMS:
        item = suite().item(item_id)
        times = []
        for k in range(15):
            start = time.perf_counter()
            generate(suite(), item, custom_pool(f"t-speed-{k}"))
            times.append(time.perf_counter() - start)
        assert median(times) < 1 and max(times) < 5, item_id


# ---------------------------------------------------------------- fairness: the route by hand stays small


def test_fairness_each_instance_has_a_short_route_by_hand():
    """Every instance is far too large to enumerate but has a pencil-and-paper route of two or three hours (inside
    the item's 32,000-token budget); this bounds the size of that route, so a knob turned too far fails here.

    tanks: total salt (count the dose days) plus two telescoped modes: per dosing rule one degree-1 and one degree-3
    progression sum (at most three rules), with an exact answer of at most ~60 digits. crews: 11 jobs, 8 workers, at
    most 9 time pieces; the group bounds are piecewise-linear and only groups of heavy, tightly capped jobs need
    checking. urns: per urn one ruin formula with powers of a ratio of one-digit numbers to at most the 24th, then
    Bayes over <= 4 urns, answers of at most 50 digits. seatings: at most 19 guests in 3 groups, at most 10^6 group
    patterns that a gap generating function or a transfer count over the last two chairs handles in a few hundred
    terms. tax: 12 years x 13 sections and 14 amendments on two pages.
    """
    for g in instances("quant-tank-mixing"):
        t = _tank(g.prompt)
        assert len(t["doses"]) <= 3 and len(g.key.answer) <= 61
    for g in instances("quant-crew-work"):
        c = _crew(g.prompt)
        assert len(c["jobs"]) <= 11 and len(c["speeds"]) <= 8 and len(_pieces(c)) <= 9 and len(g.key.answer) <= 12
    for g in instances("quant-urn-posterior"):
        u = _urns(g.prompt)
        assert len(u["urns"]) <= 4 and max(u["top"], u["bottom"]) <= 12 and len(g.key.answer) <= 51
        assert all(max(x["r"], x["b"]) <= 4 for x in u["urns"])
    for g in instances("quant-arrangement-count"):
        s = _seating(g.prompt)
        assert s["n"] <= 19 and _patterns(s)[0] <= 10**6
    for g in instances("quant-tax-ledger"):
        assert len(g.prompt) // 4 <= 2500 and len(_tax_case(g.prompt)["rows"]) <= 12


# ---------------------------------------------------------------- tanks: modes + telescoping, checked by replay


def _tank(prompt: str) -> dict:
    m = re.search(r"each tank holds (\d+) litres of brine: tank A at (\d+) grams of salt per litre, tank B at (\d+) "
                  r"grams per litre and tank C at (\d+) grams per litre", prompt)
    volume, start = int(m[1]), dict(zip("ABC", map(int, m.groups()[1:])))
    m = re.search(r"x_k litres are drawn out of tank (\w), x_k litres out of tank (\w) and 2x_k litres out of tank "
                  r"(\w), where x_k = (\d+)/\(k \+ (\d+)\) litres", prompt)
    ends, hub, num, off = (m[1], m[2]), m[3], int(m[4]), int(m[5])
    assert f"the 2x_k litres drawn from {hub} are split into two equal parts" in prompt
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
    days = number(re.search(r"at the end of day ([\d,]+) \(after that day's dosing\)", prompt)[1])
    if m := re.search(r"What is the mass of salt in tank (\w) minus the mass of salt in tank (\w),", prompt):
        what = ("difference", m[1], m[2])
    else:
        m = re.search(r"What is the (salt concentration|mass of salt) (?:of|in) tank (\w),", prompt)
        what = (m[1], m[2], None)
    return {"volume": volume, "start": start, "ends": ends, "hub": hub, "num": num, "off": off, "doses": doses,
            "what": what, "days": days}


def _dose_days(dose, days):
    kind, step, rest, grams, tank = dose
    if kind == "once":
        return [step] if step <= days else []
    return range(rest if rest else step, days + 1, step)


def _tank_replay(t: dict, days: int) -> dict:
    """Day-by-day simulation of the written process, in exact fractions (salt masses)."""
    v = Fraction(t["volume"])
    salt = {k: t["start"][k] * v for k in "ABC"}
    doses = {}
    for dose in t["doses"]:
        for day in _dose_days(dose, days):
            doses.setdefault(day, []).append((dose[4], dose[3]))
    e1, e2, hub = *t["ends"], t["hub"]
    for k in range(1, days + 1):
        x = Fraction(t["num"], k + t["off"])
        assert 2 * x <= v
        from_e1, from_e2, from_hub = salt[e1] * x / v, salt[e2] * x / v, salt[hub] * 2 * x / v
        salt[e1] += from_hub / 2 - from_e1
        salt[e2] += from_hub / 2 - from_e2
        salt[hub] += from_e1 + from_e2 - from_hub
        for tank, grams in doses.get(k, []):
            salt[tank] += grams
    return salt


def _tank_closed(t: dict, days: int, hub_factor: int = 3) -> dict:
    """Salt in each tank after `days` days: the exchange c -> c - (x/V) L c has the eigenvectors (1,1,1), (1,0,-1)
    and (1,-2,1) of the path Laplacian L with eigenvalues 0, 1, 3; each mode's daily factor 1 - lambda x/V =
    (k + off - lambda num/V) / (k + off) telescopes. The dose weights, polynomials in the day, are summed over
    each dose's days by Newton's forward differences (no Faulhaber)."""
    v = Fraction(t["volume"])
    e1, e2, hub = *t["ends"], t["hub"]

    def weight(lam):  # the mode's factor from day j+1 to day N is g(j) / g(N)
        shift = Fraction(lam * t["num"], t["volume"])
        assert shift.denominator == 1 and 1 <= shift <= t["off"]
        shift, u = int(shift), t["off"] - int(shift)

        def g(j):
            out = 1
            for i in range(1, shift + 1):
                out *= j + u + i
            return out
        return g, shift

    (g1, n1), (g3, n3) = weight(1), weight(hub_factor)
    c = {k: Fraction(t["start"][k]) for k in "ABC"}
    total = sum(c.values()) * v
    d1 = (c[e1] - c[e2]) / 2 * g1(0)
    d3 = (c[e1] + c[e2] - 2 * c[hub]) / 6 * g3(0)
    for dose in t["doses"]:
        tank, grams = dose[4], Fraction(dose[3])
        on = _dose_days(dose, days)
        s1, s3 = _progression_sum(g1, n1, on), _progression_sum(g3, n3, on)
        total += grams * len(on)
        kick = {k: Fraction(int(k == tank)) * grams / v for k in "ABC"}
        d1 += (kick[e1] - kick[e2]) / 2 * s1
        d3 += (kick[e1] + kick[e2] - 2 * kick[hub]) / 6 * s3
    mean, d1, d3 = total / (3 * v), d1 / g1(days), d3 / g3(days)
    conc = {e1: mean + d1 + d3, e2: mean - d1 + d3, hub: mean - 2 * d3}
    return {k: conc[k] * v for k in "ABC"}


def _progression_sum(g, degree: int, days) -> int:
    """The sum of g, a polynomial of the given degree, over days in arithmetic progression: sum over m < M of
    p(m) = sum over k of (the k-th forward difference of p at 0) * C(M, k + 1)."""
    if len(days) <= degree + 1:
        return sum(g(j) for j in days)
    values, total = [g(days[m]) for m in range(degree + 1)], 0
    for k in range(degree + 1):
        total += values[0] * comb(len(days), k + 1)
        values = [b - a for a, b in zip(values, values[1:])]
    return total


def test_the_progression_sum_agrees_with_summing_day_by_day():
    def g(j):
        return (j + 3) * (j + 4) * (j + 5)
    for days in (range(4, 200, 7), range(1, 90, 1), range(9, 10, 3), [17], []):
        assert _progression_sum(g, 3, days) == sum(g(j) for j in days)


def _tank_answer(t: dict, salt: dict) -> Fraction:
    kind, one, two = t["what"]
    if kind == "difference":
        return salt[one] - salt[two]
    return salt[one] if kind == "mass of salt" else salt[one] / t["volume"]


def test_tank_closed_form_matches_a_day_by_day_replay_on_short_horizons():
    for g in instances("quant-tank-mixing")[:12]:
        t = _tank(g.prompt)
        t["doses"] = [(k, min(step, 9) if k == "once" else step, rest, grams, tank)
                      for k, step, rest, grams, tank in t["doses"]]  # a one-off dose lands inside the short horizon
        for days in (1, 2, 13, 40):
            assert _tank_closed(t, days) == _tank_replay(t, days)


def test_tank_key_matches_the_modal_closed_form_from_the_prompt_and_the_traps_fail():
    for g in instances("quant-tank-mixing"):
        t = _tank(g.prompt)
        assert t["days"] >= 10**4
        salt = _tank_closed(t, t["days"])
        assert _tank_answer(t, salt) == key_value(g)
        # assuming full mixing, or treating the hub mode like the end-to-end difference (one telescoping product
        # for everything, as with two tanks), gives a different answer
        mixed = sum(salt.values()) / 3
        assert _tank_answer(t, {k: mixed for k in "ABC"}) != key_value(g)
        assert _tank_answer(t, _tank_closed(t, t["days"], hub_factor=1)) != key_value(g)
        assert t["what"][0] != "difference" or t["hub"] in t["what"][1:]  # the hub mode always counts


# ---------------------------------------------------------------- crews: time-varying bottlenecks and an LP schedule


def _crew(prompt: str) -> dict:
    jobs = []
    for w, c, rest in re.findall(r"^- Job \d+: (\d+) units of work; at most (\d+) workers? at a time(.*)\.$", prompt,
                                 flags=re.M):
        m = re.match(r"; can only be worked on from ([\d.]+) hours after the start$", rest)
        assert m or rest == ""
        jobs.append((int(w), int(c), Fraction(m[1]) if m else Fraction(0)))
    speeds = dict((n, int(s)) for n, s in re.findall(r"(\w+) (\d+) units? per hour", prompt))
    windows = {n: [(Fraction(0), None)] for n in speeds}
    for n, h in re.findall(r"(\w+) can only start work ([\d.]+) hours after the start", prompt):
        windows[n] = [(Fraction(h), None)]
    for n, h in re.findall(r"(\w+) must stop for good ([\d.]+) hours after the start", prompt):
        windows[n] = [(Fraction(0), Fraction(h))]
    for n, a, b in re.findall(r"(\w+) takes a break from ([\d.]+) to ([\d.]+) hours after the start", prompt):
        windows[n] = [(Fraction(0), Fraction(a)), (Fraction(b), None)]
    return {"jobs": jobs, "speeds": speeds, "windows": windows}


def _pieces(c: dict):
    """Time pieces [start, end) (end None: open), the workers available and the jobs released in each."""
    cuts = sorted({Fraction(0)} | {r for _, _, r in c["jobs"]}
                  | {t for w in c["windows"].values() for span in w for t in span if t is not None})
    out = []
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else None
        here = [n for n, w in c["windows"].items() if any(a <= start and (b is None or b > start) for a, b in w)]
        out.append((start, end, here, [j for j, (_, _, r) in enumerate(c["jobs"]) if r <= start]))
    return out


def _bottleneck_bounds(c: dict) -> dict:
    """Every group's lower bound: the group can absorb at most the speeds of its released jobs' crew-limit many
    fastest available workers at each moment."""
    pieces = _pieces(c)

    def finish(group):
        work, done = sum(c["jobs"][j][0] for j in group), Fraction(0)
        for start, end, here, released in pieces:
            limit = sum(c["jobs"][j][1] for j in group if j in released)
            rate = sum(sorted((c["speeds"][n] for n in here), reverse=True)[:limit])
            if end is None or (rate and done + rate * (end - start) >= work):
                return start + (work - done) / rate
            done += rate * (end - start)

    return {group: finish(group) for k in range(1, len(c["jobs"]) + 1)
            for group in combinations(range(len(c["jobs"])), k)}


def _crew_lp(c: dict) -> float:
    """Minimum finishing time as a linear programme over the time pieces: x[i, j, l] hours of worker i on job j in
    piece l (zero before the job's release). Within a piece, any x with worker totals <= length and job totals <=
    limit x length can be scheduled (split each job into `limit` lanes and decompose the worker-lane matrix,
    Birkhoff-von Neumann)."""
    names = list(c["speeds"])
    jobs = c["jobs"]
    pieces = _pieces(c)
    best = None
    for last in range(len(pieces)):
        used = pieces[:last + 1]
        nv = len(names) * len(jobs) * len(used) + 1
        index = lambda i, j, l: (l * len(names) + i) * len(jobs) + j  # noqa: E731
        a_ub, b_ub = [], []
        for l, (start, end, here, released) in enumerate(used):
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
            for j, (_, cap, _) in enumerate(jobs):
                row = np.zeros(nv)
                for i in range(len(names)):
                    row[index(i, j, l)] = 1
                on = j in released
                if final:
                    row[-1] = -cap * on
                    a_ub.append(row)
                    b_ub.append(-float(start) * cap * on)
                else:
                    a_ub.append(row)
                    b_ub.append(length * cap * on)
        for j, (work, _, _) in enumerate(jobs):
            row = np.zeros(nv)
            for l in range(len(used)):
                for i, n in enumerate(names):
                    row[index(i, j, l)] = -c["speeds"][n]
            a_ub.append(row)
            b_ub.append(-work)
        start, end, _, _ = used[-1]
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
        declared = suite().item("quant-crew-work").difficulty.drivers
        assert (len(c["jobs"]), len(c["speeds"])) == (declared["sites"], declared["workers"])
        assert sum(r > 0 for _, _, r in c["jobs"]) == declared["releases"]
        bounds = _bottleneck_bounds(c)
        optimum = max(bounds.values())
        assert optimum == key_value(g)
        assert abs(_crew_lp(c) - float(optimum)) < 1e-6 * float(optimum)
        # the plug-in answer, the biggest single job, the late jobs as one group, and the static bottleneck that
        # ignores the release times are all wrong: a group mixing early and late jobs binds
        everything = tuple(range(len(c["jobs"])))
        late = {tuple(j for j, (_, _, r) in enumerate(c["jobs"]) if r >= t) for _, _, t in c["jobs"]}
        assert optimum > bounds[everything] and optimum > max(bounds[(j,)] for j in everything)
        assert all(optimum > bounds[group] for group in late)
        static = {**c, "jobs": [(w, cap, Fraction(0)) for w, cap, _ in c["jobs"]]}
        assert max(_bottleneck_bounds(static).values()) != optimum
        binding = [group for group, value in bounds.items() if value == optimum]
        assert all(len({c["jobs"][j][2] for j in group}) >= 2 for group in binding)


# ---------------------------------------------------------------- urns: the ruin walks, solved as chains


def _urns(prompt: str) -> dict:
    urns = []
    for name, die, balls in re.findall(r"^- Urn (\w+) \(used if the die shows ([^)]*)\): (.*)\.$", prompt, flags=re.M):
        have = {c: int(k) for k, c in re.findall(r"(\d+) (red|blue|white) balls?", balls)}
        urns.append({"name": name, "faces": len(re.findall(r"\d", die)), "r": have.get("red", 0),
                     "b": have.get("blue", 0), "w": have.get("white", 0)})
    assert sum(u["faces"] for u in urns) == 6
    m = re.search(r"Drawing stops as soon as the counter reaches \+(\d+) \(the upper limit\) or -(\d+) \(the lower "
                  r"limit\)", prompt)
    return {"urns": urns, "top": int(m[1]), "bottom": int(m[2])}


def _walk(x: dict, top: int, low: int, value_top: Fraction, step_cost: Fraction = Fraction(0)) -> dict:
    """Solve the absorbing chain of one urn's counter on low < position < top exactly (Thomas algorithm on the
    tridiagonal system v(s) = cost + p v(s+1) + q v(s-1) + w v(s), v(top) = value_top, v(low) = 0)."""
    n = x["r"] + x["b"] + x["w"]
    p, q, w = Fraction(x["r"], n), Fraction(x["b"], n), Fraction(x["w"], n)
    states = list(range(low + 1, top))
    # row: -q v(s-1) + (1 - w) v(s) - p v(s+1) = cost (+ p value_top at the top edge)
    sub, diag, sup = [-q] * len(states), [1 - w] * len(states), [-p] * len(states)
    rhs = [step_cost + (p * value_top if s == top - 1 else 0) for s in states]
    for i in range(1, len(states)):
        f = sub[i] / diag[i - 1]
        diag[i] -= f * sup[i - 1]
        rhs[i] -= f * rhs[i - 1]
    v = [Fraction(0)] * len(states)
    for i in reversed(range(len(states))):
        v[i] = (rhs[i] - (sup[i] * v[i + 1] if i + 1 < len(states) else 0)) / diag[i]
    out = dict(zip(states, v))
    out[top], out[low] = value_top, Fraction(0)
    return out


def _urn_answer(u: dict, prompt: str) -> Fraction:
    prior = [Fraction(x["faces"], 6) for x in u["urns"]]
    top, bottom = u["top"], u["bottom"]
    win = [_walk(x, top, -bottom, Fraction(1))[0] for x in u["urns"]]
    if m := re.search(r"the first ball drawn was (red|blue|white) and the second ball drawn was (red|blue|white)\. "
                      r"Given this", prompt):
        key = {"red": "r", "blue": "b", "white": "w"}
        move = {"red": 1, "blue": -1, "white": 0}
        like = [pr * Fraction(x[key[m[1]]], x["r"] + x["b"] + x["w"]) * Fraction(x[key[m[2]]], x["r"] + x["b"] + x["w"])
                for pr, x in zip(prior, u["urns"])]
        where = move[m[1]] + move[m[2]]
        return sum(lk * _walk(x, top, -bottom, Fraction(1))[where] for lk, x in zip(like, u["urns"])) / sum(like)
    if m := re.search(r"the counter never went below (-?\d+) at any time during the drawing", prompt):
        floor = -int(m[1])  # "below -k": the walk is killed on reaching -(k+1)
        clean = [_walk(x, top, -floor - 1, Fraction(1))[0] for x in u["urns"]]
        if asked := re.search(r"probability that urn (\w+) was the urn used", prompt):
            i = [x["name"] for x in u["urns"]].index(asked[1])
            return prior[i] * clean[i] / sum(p * c for p, c in zip(prior, clean))
        return sum(p * c for p, c in zip(prior, clean)) / sum(p * w for p, w in zip(prior, win))
    draws = [_walk(x, top, -bottom, Fraction(0), Fraction(1))[0] for x in u["urns"]]  # expected draws
    if "expected number of white balls drawn" in prompt:
        return sum(p * d * Fraction(x["w"], x["r"] + x["b"] + x["w"]) for p, d, x in zip(prior, draws, u["urns"]))
    assert "expected number of draws until drawing stops" in prompt
    return sum(p * d for p, d in zip(prior, draws))


def _urn_simulated(x: dict, top: int, bottom: int, floor: int, runs: int, seed: int) -> tuple[float, float]:
    """Monte Carlo: how often the counter reaches the top, and how often it does so without going below -floor."""
    rng = np.random.default_rng(seed)
    n = x["r"] + x["b"] + x["w"]
    hits = clean = 0
    for _ in range(runs):
        pos, low = 0, 0
        while -bottom < pos < top:
            ball = rng.integers(n)
            pos += 1 if ball < x["r"] else (-1 if ball < x["r"] + x["b"] else 0)
            low = min(low, pos)
        hits += pos == top
        clean += pos == top and low >= -floor
    return hits / runs, clean / runs


def test_urn_chain_solutions_agree_with_a_simulation_of_the_written_walk():
    for g in instances("quant-urn-posterior")[:4]:
        u = _urns(g.prompt)
        x = u["urns"][0]
        top, bottom = 4, 3
        hit, clean = _urn_simulated(x, top, bottom, 1, 4000, 7)
        assert abs(hit - float(_walk(x, top, -bottom, Fraction(1))[0])) < 0.03
        assert abs(clean - float(_walk(x, top, -2, Fraction(1))[0])) < 0.03


def test_urn_key_matches_bayes_over_the_solved_chains_and_the_traps_fail():
    for g in instances("quant-urn-posterior"):
        u = _urns(g.prompt)
        assert _urn_answer(u, g.prompt) == key_value(g)
        # the white balls do not move the counter but do count as draws: ignoring them changes expected draws
        if "expected number of draws" in g.prompt and any(x["w"] for x in u["urns"]):
            dry = {**u, "urns": [{**x, "w": 0} for x in u["urns"]]}
            assert _urn_answer(dry, g.prompt) != key_value(g)


# ---------------------------------------------------------------- seatings: group patterns, brute force


def _seating(prompt: str) -> dict:
    n = int(re.match(r"(\d+) guests", prompt)[1])
    groups = {}
    for word, people in re.findall(r"the (adults|children|seniors) are ([\w ,]+?)(?=;|\. )", prompt):
        groups[{"adults": "A", "children": "C", "seniors": "S"}[word]] = people.replace(" and ", ", ").split(", ")
    assert sum(map(len, groups.values())) == n
    rules = set()
    texts = {"Every child sits next to at least one adult.": "child",
             "No two seniors sit next to each other.": "no_ss", "No senior sits next to a child.": "no_sc"}
    lines = re.findall(r"^- (.*)$", prompt, flags=re.M)
    for line in lines:
        if line in texts:
            rules.add(texts[line])
        elif line.startswith("No adult sits between two other adults"):
            rules.add("no_aaa")
        elif line.startswith("Neither of the two end chairs"):
            rules.add("end")
        else:
            m = re.fullmatch(r"(\w+) and (\w+) (must|must not) sit next to each other\.", line)
            named, together = (m[1], m[2]), m[3] == "must"
    assert len(rules) == len(lines) - 1
    setting = "row" if "single straight row" in prompt else ("mirror" if "by reflecting it" in prompt else "circle")
    return {"n": n, "groups": groups, "rules": rules, "named": named, "together": together, "setting": setting}


def _patterns(s: dict) -> tuple[int, int]:
    """Group patterns over the chairs and their total number of neighbouring chair pairs fitting the named pair's
    groups, by a memoised recursion over the chairs (remaining group sizes, the groups of the last two chairs)."""
    of = {p: k for k, people in s["groups"].items() for p in people}
    pair = sorted(of[p] for p in s["named"])
    kinds = sorted(s["groups"])
    n, rules, circle = s["n"], s["rules"], s["setting"] != "row"

    def bad_pair(x, y):
        return ("no_ss" in rules and x == y == "S") or ("no_sc" in rules and {x, y} == {"S", "C"})

    def bad_middle(x, y, z):
        return ("child" in rules and y == "C" and "A" not in (x, z)) or ("no_aaa" in rules and x == y == z == "A")

    @cache
    def go(left, p2, p1, t0, t1):  # chairs so far end with p2, p1; t0, t1 are the first two (for the wrap)
        if not any(left):
            ends = [(p2, p1, t0), (p1, t0, t1)] if circle else [(p2, p1, None)]
            if circle and bad_pair(p1, t0) or any(bad_middle(*e) for e in ends):
                return 0, 0
            if not circle and "end" in rules and p1 == "C":
                return 0, 0
            return 1, int(circle and sorted((p1, t0)) == pair)
        count = weight = 0
        for i, t in enumerate(kinds):
            if not left[i] or bad_pair(p1, t) or bad_middle(p2, p1, t):
                continue
            c, w = go(tuple(v - (j == i) for j, v in enumerate(left)), p1, t, t0, t1)
            count, weight = count + c, weight + w + c * (sorted((p1, t)) == pair)
        return count, weight

    full = tuple(len(s["groups"][k]) for k in kinds)
    count = weight = 0
    for i, t in enumerate(kinds):
        if not full[i] or (not circle and "end" in rules and t == "C"):
            continue
        left = tuple(v - (j == i) for j, v in enumerate(full))
        for k, u in enumerate(kinds):
            if not left[k] or bad_pair(t, u) or (not circle and bad_middle(None, t, u)):
                continue
            c, w = go(tuple(v - (j == k) for j, v in enumerate(left)), t, u, t, u)
            count, weight = count + c, weight + w + c * (sorted((t, u)) == pair)
    go.cache_clear()
    return count, weight


def _seating_count(s: dict) -> int:
    count, weight = _patterns(s)
    of = {p: k for k, people in s["groups"].items() for p in people}
    within = others = 1
    for k, people in s["groups"].items():
        within *= factorial(len(people))
        others *= factorial(len(people) - sum(of[p] == k for p in s["named"]))
    adjacent = weight * others * (2 if of[s["named"][0]] == of[s["named"][1]] else 1)
    labelled = adjacent if s["together"] else count * within - adjacent
    return labelled // {"row": 1, "circle": s["n"], "mirror": 2 * s["n"]}[s["setting"]]


def _brute_seatings(s: dict) -> int:
    """List every assignment of the guests to the chairs, check the rules directly, and count classes of seatings
    under the table's symmetries by a canonical form."""
    people = [p for k in sorted(s["groups"]) for p in s["groups"][k]]
    of = {p: k for k, ps in s["groups"].items() for p in ps}
    n, rules, circle = s["n"], s["rules"], s["setting"] != "row"
    seen = set()
    for order in permutations(people):
        def near(i):
            return [order[(i + d) % n] for d in (-1, 1) if circle or 0 <= i + d < n]
        ok = True
        for i, p in enumerate(order):
            around = [of[q] for q in near(i)]
            if of[p] == "C" and "child" in rules and "A" not in around:
                ok = False
            if of[p] == "S" and ("no_ss" in rules and "S" in around or "no_sc" in rules and "C" in around):
                ok = False
            if of[p] == "A" and "no_aaa" in rules and len(around) == 2 and around == ["A", "A"]:
                ok = False
            if "end" in rules and not circle and i in (0, n - 1) and of[p] == "C":
                ok = False
        a, b = (order.index(x) for x in s["named"])
        adjacent = abs(a - b) == 1 or (circle and abs(a - b) == n - 1)
        if not ok or adjacent != s["together"]:
            continue
        if s["setting"] == "row":
            seen.add(order)
            continue
        turns = [order[i:] + order[:i] for i in range(n)]
        if s["setting"] == "mirror":
            turns += [t[::-1] for t in turns]
        seen.add(min(turns))
    return len(seen)


def test_seating_pattern_count_matches_brute_force_on_shrunken_copies():
    parsed = [_seating(g.prompt) for g in instances("quant-arrangement-count")]
    picked = [s for setting in ("row", "circle", "mirror") for s in [x for x in parsed if x["setting"] == setting][:3]]
    assert len(picked) == 9
    for s in picked:
        for sizes in ({"A": 3, "C": 2, "S": 2}, {"A": 4, "C": 2, "S": 1}, {"A": 3, "C": 3, "S": 1}):
            small_groups = {}
            for k, people in s["groups"].items():
                keep = [p for p in people if p in s["named"]]
                keep += [p for p in people if p not in keep][:max(0, sizes.get(k, 0) - len(keep))]
                small_groups[k] = keep
            small = {**s, "groups": small_groups, "n": sum(map(len, small_groups.values()))}
            assert _seating_count(small) == _brute_seatings(small)


def test_seating_key_matches_the_pattern_count_and_every_rule_bites():
    for g in instances("quant-arrangement-count"):
        s = _seating(g.prompt)
        count = _seating_count(s)
        assert count == key_value(g) and count >= 10**5
        for rule in s["rules"]:
            assert _seating_count({**s, "rules": s["rules"] - {rule}}) != count
        assert _seating_count({**s, "together": not s["together"]}) != count
        # plain pair-rule thinking (the child rule read as 'no two children next to each other') is wrong
        if "child" in s["rules"]:
            assert _seating_count({**s, "rules": s["rules"] - {"child"}}) != count


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
    m = re.search(r"Child credit = \$([\d,]+) per child, reduced by (\d+)% of the amount by which the phase-out "
                  r"income exceeds \$([\d,]+)", prompt)
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
    am = prompt.split("Amendments, listed in the order")[1].split("A taxpayer's figures")[0]
    return {"p": p, "rows": rows, "amendments": re.findall(r"^A\d+\. (.*)$", am, flags=re.M),
            "fixes": len(fixes)}


def _in_force(text: str, year: int) -> bool:
    if m := re.match(r"With effect from tax year (\d{4})", text):
        return year >= int(m[1])
    if m := re.match(r"For tax year (\d{4}) only", text):
        return year == int(m[1])
    m = re.match(r"For tax years (\d{4}) to (\d{4}) only", text)
    return int(m[1]) <= year <= int(m[2])


def _tax(case: dict, skip_amendments: bool = False) -> dict[int, tuple[Fraction, Fraction]]:
    """Tax due and balance per year, computed from the parsed code, amendments and (corrected) case figures."""
    base, rows = case["p"], case["rows"]
    amendments = [] if skip_amendments else case["amendments"]
    business_losses, capital_losses, donations, greens = [], [], [], []
    result = {}
    last_adjusted = None
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
                if (later := re.search(r"The same amendment provides that with effect from tax year (\d{4}) that rate "
                                       r"is (\d+)% instead", text)) and year >= int(later[1]):
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
        phase_out = adjusted if last_adjusted is None else max(adjusted, last_adjusted)
        last_adjusted = adjusted
        if not spared:
            child = max(Fraction(0), child - Fraction(p["ph"], 100) * max(Fraction(0), phase_out - p["T1"]))
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
    m = re.search(r"What is the sum of the balances for tax years (\d{4}) to (\d{4})", prompt)
    assert int(m[2]) == max(result)
    return sum(result[year][1] for year in range(int(m[1]), int(m[2]) + 1))


@cache
def tax_ledgers() -> tuple:
    """The suite's tax instances plus a dozen at 7 years and 8 amendments, where the question on the last years'
    balances is common (at the declared 12 years nearly every draw asks for the total: a balance question over a
    few years rarely needs every amendment, and such draws are redrawn)."""
    from esac_kit.gi.generators.quant import tax_ledger
    small = tuple(tax_ledger(ItemRng(derive_item_key(f"t-tax-small-{k}", "gi", "quant-tax-ledger", 2)), years=7,
                             amendments=8, corrections=3) for k in range(12))
    return instances("quant-tax-ledger") + small


def test_tax_key_matches_a_second_implementation_of_the_written_code():
    declared = suite().item("quant-tax-ledger").difficulty.drivers
    for g in tax_ledgers():
        case = _tax_case(g.prompt)
        sizes = (len(case["rows"]), len(case["amendments"]), case["fixes"])
        assert sizes in ((declared["years"], declared["amendments"], declared["corrections"]), (7, 8, 3))
        assert "the higher of that year's adjusted income and the previous tax year's adjusted income" in g.prompt
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




def test_tax_amendments_supersede_in_order_of_enactment():
    """At least two amendments repeat a kind; reading the list in order of the years instead of the order of
    enactment (so that the one taking effect later prevails) changes the answer in some instances."""
    changed = 0
    for g in instances("quant-tax-ledger"):
        case = _tax_case(g.prompt)
        kinds = [re.sub(r"\d|\$|,|%", "", re.sub(r"^(With effect from|For) tax years? [\d to]+( only)?, ", "", a))[:40]
                 for a in case["amendments"]]
        assert len(kinds) - len(set(kinds)) >= 2
        by_year = sorted(case["amendments"], key=lambda a: int(re.search(r"tax years? (\d{4})", a)[1]))
        changed += _tax_answer({**case, "amendments": by_year}, g.prompt) != key_value(g)
    assert changed >= 3


def test_the_test_instances_cover_every_variant_the_solvers_handle():
    """The solvers above are only evidence for the variants they meet: every branch must occur in the test pools."""
    tanks = [_tank(g.prompt) for g in instances("quant-tank-mixing")]
    assert {t["what"][0] for t in tanks} == {"salt concentration", "mass of salt", "difference"}
    assert {t["hub"] for t in tanks} == {"A", "B", "C"} and any(d[0] == "once" for t in tanks for d in t["doses"])
    crews = [_crew(g.prompt) for g in instances("quant-crew-work")]
    assert all(any(len(w) == 2 for c in crews for w in c["windows"].values()) for _ in [0])
    assert any(w[0][1] is None and w[0][0] > 0 for c in crews for w in c["windows"].values())
    assert any(w[0][1] is not None and len(w) == 1 for c in crews for w in c["windows"].values())
    urns = [g.prompt for g in instances("quant-urn-posterior")]
    for phrase in ("second ball drawn was", "never went below 0", "was the urn used", "expected number of draws",
                   "expected number of white balls"):
        assert any(phrase in p for p in urns), phrase
    seatings = [_seating(g.prompt) for g in instances("quant-arrangement-count")]
    assert {s["setting"] for s in seatings} == {"row", "circle", "mirror"}
    assert set().union(*(s["rules"] for s in seatings)) == {"child", "no_ss", "no_sc", "no_aaa", "end"}
    assert {s["together"] for s in seatings} == {True, False}
    amendments = " ".join(a for g in tax_ledgers() for a in _tax_case(g.prompt)["amendments"])
    for phrase in ("§8 for the part", "The same amendment provides", "loss relief", "limit in §6", "§5 applies",
                   "green credits carried", "child credit in §9", "capital gains tax rate", "pension deduction",
                   "surcharge in §12", "For tax years", "For tax year 20"):
        assert phrase in amendments, phrase
    questions = [g.prompt for g in tax_ledgers()]
    assert any("total tax due" in p for p in questions) and any("sum of the balances" in p for p in questions)
