"""The quant items: references score 1, wrong answers 0, instances are deterministic, and independent solvers
reading only the prompt text agree with every key."""

import re
from fractions import Fraction
from itertools import permutations, product

import pytest

from esac_kit.gi.generators import quant
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED

GENERATORS = {"quant-tank-mixing": quant.tank_mixing, "quant-urn-posterior": quant.urn_posterior,
              "quant-arrangement-count": quant.arrangement_count, "quant-tax-ledger": quant.tax_ledger,
              "quant-crew-work": quant.crew_work}
SEEDS = 30


def instances(item_id, n=SEEDS):
    return [GENERATORS[item_id](ItemRng(derive_item_key(f"test-{s}", "gi", item_id, 1))) for s in range(n)]


def key_value(generated) -> Fraction:
    return Fraction(generated.key.answer)


@pytest.mark.parametrize("item_id", GENERATORS)
def test_reference_scores_one_and_empty_or_garbled_score_zero(item_id):
    for g in instances(item_id):
        assert g.key.answer_type == "number"
        assert score_response(g.key, g.reference).score == 1.0
        assert score_response(g.key, "").score == 0.0
        assert score_response(g.key, GARBLED).score == 0.0
        assert "ANSWER:" in g.prompt and len(g.prompt) <= 16000


@pytest.mark.parametrize("item_id", GENERATORS)
def test_plausible_wrong_answers_score_zero(item_id):
    for g in instances(item_id):
        value = key_value(g)
        for wrong in (value + 1, value - Fraction(1, 100), -value, value * 2):
            assert score_response(g.key, f"ANSWER: {wrong}").score == 0.0
        if value.denominator > 1:  # a rounded decimal is not the exact value
            rounded = round(float(value), 3)
            if Fraction(str(rounded)) != value:
                assert score_response(g.key, f"ANSWER: {rounded}").score == 0.0


@pytest.mark.parametrize("item_id", GENERATORS)
def test_the_same_key_gives_the_same_instance(item_id):
    key = derive_item_key("determinism", "gi", item_id, 1)
    assert GENERATORS[item_id](ItemRng(key)) == GENERATORS[item_id](ItemRng(key))
    other = derive_item_key("determinism-2", "gi", item_id, 1)
    assert GENERATORS[item_id](ItemRng(key)).prompt != GENERATORS[item_id](ItemRng(other)).prompt


@pytest.mark.parametrize("item_id", GENERATORS)
def test_answers_vary_widely(item_id):
    answers = [g.key.answer for g in instances(item_id)]
    assert len(set(answers)) >= SEEDS - 3


# ---------------------------------------------------------------- independent solvers over the prompt text


def test_tank_mixing_key_matches_a_replay_of_the_written_steps():
    for g in instances("quant-tank-mixing"):
        vol, salt = {}, {}
        for t, v, c in re.findall(r"Tank (\w) holds (\d+) litres of brine containing (\d+) grams", g.prompt):
            vol[t], salt[t] = Fraction(v), Fraction(v) * int(c)

        def pour(src, dst, litres):
            moved = salt[src] * litres / vol[src]
            salt[src] -= moved
            vol[src] -= litres
            salt[dst] += moved
            vol[dst] += litres

        steps = re.findall(r"^\d+\. (.*)$", g.prompt, flags=re.M)
        assert len(steps) >= 10
        for step in steps:
            if m := re.fullmatch(r"Pump (\d+) litres from tank (\w) into tank (\w)\.", step):
                pour(m[2], m[3], Fraction(m[1]))
            elif m := re.fullmatch(r"Pour (\d+)/(\d+) of the current contents of tank (\w) into tank (\w)\.", step):
                pour(m[3], m[4], vol[m[3]] * Fraction(int(m[1]), int(m[2])))
            elif m := re.match(r"Boil off (\d+) litres of water from tank (\w)", step):
                vol[m[2]] -= int(m[1])
            elif m := re.match(r"Drain (\d+) litres out of tank (\w)", step):
                salt[m[2]] *= 1 - Fraction(int(m[1])) / vol[m[2]]
                vol[m[2]] -= int(m[1])
            elif m := re.match(r"Add (\d+) litres of brine at (\d+) g/L to tank (\w)", step):
                vol[m[3]] += int(m[1])
                salt[m[3]] += int(m[1]) * int(m[2])
            elif m := re.match(r"Add pure water to tank (\w) until it holds exactly (\d+) litres", step):
                assert vol[m[1]] < int(m[2])
                vol[m[1]] = Fraction(m[2])
            elif m := re.match(r"Pump liquid from whichever of tanks (\w) and (\w) holds more", step):
                big, small = sorted([m[1], m[2]], key=lambda t: vol[t], reverse=True)
                pour(big, small, (vol[big] - vol[small]) / 2)
            elif m := re.match(r"Pump (\d+) litres from whichever of tanks (\w) and (\w) has the higher", step):
                a, b = m[2], m[3]
                assert salt[a] / vol[a] != salt[b] / vol[b]
                src, dst = (a, b) if salt[a] / vol[a] > salt[b] / vol[b] else (b, a)
                pour(src, dst, Fraction(m[1]))
            else:
                raise AssertionError(f"unparsed step: {step}")
            assert all(v >= 20 for v in vol.values())
        target = re.search(r"concentration of tank (\w) after the last step", g.prompt)[1]
        assert salt[target] / vol[target] == key_value(g)


_DIE = {"a prime number": {2, 3, 5}, "a perfect square": {1, 4}, "a 6": {6}, "less than 3": {1, 2},
        "a multiple of 3": {3, 6}, "a 4 or a 5": {4, 5}, "an odd number": {1, 3, 5}, "a 2": {2},
        "a 4 or a 6": {4, 6}, "a divisor of 6 other than 1": {2, 3, 6}, "a 1": {1}, "a 1 or a 6": {1, 6},
        "a 4": {4}}


def _urn_evidence(text):
    colours = ["red", "green", "blue"]
    c = {name: i for i, name in enumerate(colours)}
    patterns = [
        (r"exactly two of the three draws were (\w+)$", lambda s, a: s.count(c[a]) == 2),
        (r"the first draw was (\w+) and at least one of the other two was (\w+)$",
         lambda s, a, b: s[0] == c[a] and c[b] in s[1:]),
        (r"no two consecutive draws had the same colour$", lambda s: s[0] != s[1] != s[2]),
        (r"the three colours were not all different, and the last of the three was (\w+)$",
         lambda s, a: len(set(s)) < 3 and s[2] == c[a]),
        (r"at least one draw was (\w+) and at least one was (\w+)$", lambda s, a, b: c[a] in s and c[b] in s),
        (r"the first and third draws had the same colour but the second draw did not$",
         lambda s: s[0] == s[2] and s[1] != s[0]),
    ]
    for pattern, test in patterns:
        if m := re.match(pattern, text):
            return lambda s: test(s, *m.groups())
    raise AssertionError(f"unparsed evidence: {text}")


def test_urn_posterior_key_matches_an_enumeration_of_the_written_process():
    colours = ["red", "green", "blue"]
    for g in instances("quant-urn-posterior"):
        urns = re.findall(r"Urn (I+): (\d+) red, (\d+) green and (\d+) blue balls; (.*?)\. It is used when the die "
                          r"shows (.*?)\.\n", g.prompt)
        assert len(urns) == 3
        faces = [f for *_, shows in urns for f in _DIE[shows]]
        assert sorted(faces) == [1, 2, 3, 4, 5, 6]
        seen = _urn_evidence(re.search(r"told truthfully that (.*?)\.\n", g.prompt)[1])
        joint, hits = Fraction(0), Fraction(0)
        asked_urn = re.search(r"probability that urn (I+) was the one chosen", g.prompt)
        asked_colour = re.search(r"fourth ball drawn .* is (\w+)\?", g.prompt)
        for name, r, gr, b, rule, shows in urns:
            step = 0 if "put back" in rule and "extra" not in rule and "not" not in rule else (
                1 if "extra" in rule else -1)
            for seq in product(range(3), repeat=4):
                counts, p = [int(r), int(gr), int(b)], Fraction(len(_DIE[shows]), 6)
                for colour in seq:
                    p *= Fraction(counts[colour], sum(counts))
                    counts[colour] += step
                if p and seen(seq[:3]):
                    joint += p
                    if asked_urn and name == asked_urn[1] or asked_colour and colours[seq[3]] == asked_colour[1]:
                        hits += p
        assert hits / joint == key_value(g)


def _arrangement_test(line):
    rules = [
        (r"(\w+) and (\w+) sit next to each other", lambda P, a, b: abs(P[a] - P[b]) == 1),
        (r"(\w+) does not sit next to (\w+), and \w+ does not sit next to (\w+) either",
         lambda P, a, b, c: abs(P[a] - P[b]) != 1 and abs(P[a] - P[c]) != 1),
        (r"(\w+) sits somewhere to the left of (\w+)", lambda P, a, b: P[a] < P[b]),
        (r"Exactly (\d) (?:person sits|people sit) between (\w+) and (\w+)",
         lambda P, k, a, b: abs(P[a] - P[b]) == int(k) + 1),
        (r"If (\w+) sits at one of the two ends of the row, then (\w+) sits next to (\w+)",
         lambda P, a, b, c: P[a] not in (1, 8) or abs(P[b] - P[c]) == 1),
        (r"(\w+) sits in an even-numbered chair", lambda P, a: P[a] % 2 == 0),
        (r"(\w+) sits somewhere between (\w+) and (\w+)", lambda P, a, b, c: min(P[b], P[c]) < P[a] < max(P[b], P[c])),
        (r"(\w+) sits in chair (\d) or (\w+) sits in chair (\d) \(or both\)",
         lambda P, a, i, b, j: P[a] == int(i) or P[b] == int(j)),
        (r"At least two people sit between (\w+) and (\w+)", lambda P, a, b: abs(P[a] - P[b]) >= 3),
        (r"(\w+) sits to the right of both (\w+) and (\w+)", lambda P, a, b, c: P[a] > max(P[b], P[c])),
        (r"(\w+) sits in one of chairs (\d) to (\d)", lambda P, a, lo, hi: int(lo) <= P[a] <= int(hi)),
    ]
    for pattern, test in rules:
        if m := re.fullmatch(pattern + r"(?: \(not necessarily next to either\))?\.", line):
            return lambda P: test(P, *m.groups())
    raise AssertionError(f"unparsed restriction: {line}")


def test_arrangement_count_key_matches_brute_force_over_the_written_restrictions():
    for g in instances("quant-arrangement-count", 6):
        tests = [_arrangement_test(line) for line in re.findall(r"^- (.*)$", g.prompt, flags=re.M)]
        assert 5 <= len(tests) <= 6
        people = quant._PEOPLE
        count = sum(all(t(dict(zip(people, chairs))) for t in tests) for chairs in permutations(range(1, 9)))
        assert count == key_value(g)


def test_tax_ledger_key_matches_a_recomputation_from_the_written_ledger_and_rules():
    money = lambda s: Fraction(s.replace(",", ""))  # noqa: E731
    for g in instances("quant-tax-ledger"):
        rows = re.findall(r"^#(\d+)\s+\w+\s+\d+\s+(\w+)\s+.*?\$([\d,]+\.\d\d)$", g.prompt, flags=re.M)
        dup = re.search(r"entry #(\d+) is an accidental second copy of entry #(\d+)", g.prompt)
        original = [r for r in rows if r[0] == dup[2]][0]
        copied = [r for r in rows if r[0] == dup[1]][0]
        assert (original[1], original[2]) == (copied[1], copied[2])
        total = {}
        for number, kind, amount in rows:
            if number != dup[1]:
                total[kind] = total.get(kind, 0) + money(amount)
        dollars = [money(x) for x in re.findall(r"\$([\d,]+\.\d\d)", g.prompt.split("The tax rules:")[1])]
        percents = [Fraction(x) for x in re.findall(r"(\d+)%", g.prompt.split("The tax rules:")[1])]
        cap, allowance, taper, b1, _, b2, _, credit, credit_from = dollars
        _, _, _, r1, r2, r3, rate = percents
        net = (total["invoice"] - total.get("refund", 0) - min(total["equipment"], cap) - total["meals"] / 2
               - total["software"])
        allow = max(0, allowance - max(Fraction(0), net - taper) / 2)  # Fraction(0): int 0 / 2 is a float
        taxable = max(0, net - allow)
        tax = (r1 * min(taxable, b1) + r2 * max(0, min(taxable, b2) - b1) + r3 * max(0, taxable - b2)) / 100
        credit_left = max(0, credit - rate / 100 * max(0, net - credit_from))
        assert max(0, tax - credit_left) - total["prepayment"] == key_value(g)


def test_crew_work_key_matches_a_one_second_time_step_simulation_of_the_written_events():
    for g in instances("quant-crew-work", 12):
        solo = {n: int(h) for n, h in re.findall(r"(\w+) (\d+) hours", g.prompt.split("Workers' speeds")[0])}
        pair = re.search(r"whenever (\w+) and (\w+) are both working, each of the two works at only (\d+)/(\d+)",
                         g.prompt)
        slow = int(pair[3]) / int(pair[4])
        crew = set(re.search(r"Work starts at 08:00 with (\w+) and (\w+)\.", g.prompt).groups())
        hours = lambda hhmm: int(hhmm[:2]) - 8 + int(hhmm[3:]) / 60  # noqa: E731
        timed = [(hours(t), n, True) for t, n in re.findall(r"At (\d\d:\d\d), (\w+) joins\.", g.prompt)]
        timed += [(hours(t), n, False) for t, n in re.findall(r"At (\d\d:\d\d), (\w+) leaves for", g.prompt)]
        lunch = [hours(t) for t in re.search(r"From (\d\d:\d\d) to (\d\d:\d\d)", g.prompt).groups()]
        setback = re.search(r"At (\d\d:\d\d), an inspector finds faulty work amounting to (\d+)/(\d+)", g.prompt)
        milestones = [(int(a) / int(b), n, act) for a, b, n, act in
                      re.findall(r"As soon as (\d+)/(\d+) of the whole job is complete, (\w+) (?:is called away "
                                 r"and )?(leaves|joins)", g.prompt)]
        dt, t, done, fired = 1 / 3600, 0.0, 0.0, set()
        while done < 1 and t < 30:
            for when, name, joining in timed:
                if abs(t - when) < dt / 2:
                    if joining:
                        crew.add(name)
                    else:
                        crew.discard(name)
            if abs(t - hours(setback[1])) < dt / 2:
                done -= int(setback[2]) / int(setback[3])
            for q, name, act in milestones:
                if done >= q and q not in fired:
                    fired.add(q)
                    if act == "joins":
                        crew.add(name)
                    else:
                        crew.discard(name)
            if not lunch[0] <= t < lunch[1]:
                both = {pair[1], pair[2]} <= crew
                done += dt * sum((slow if both and n in (pair[1], pair[2]) else 1) / solo[n] for n in crew)
            t += dt
        assert abs(t - float(key_value(g))) < 0.01
