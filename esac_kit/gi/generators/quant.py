"""Quantitative reasoning generators: multi-step problems with exact rational answers computed by solvers."""

from __future__ import annotations

from fractions import Fraction
from functools import cache
from itertools import permutations

import numpy as np

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated

_FRACTION_FORMAT = ("End your response with a final line `ANSWER: <value>`, where <value> is the exact value as an "
                    "integer or a fraction in lowest terms such as 2317/45 (no decimals, no rounding, no units).")


def _exact(prompt: str, answer: Fraction) -> Generated:
    """Package a prompt and its exact numeric answer with a reference response that scores 1."""
    text = str(answer)
    return Generated(prompt=prompt, key=ExactKey(answer=text, answer_type="number"),
                     reference=f"Working omitted.\nANSWER: {text}")


# ---------------------------------------------------------------- tanks


def tank_mixing(rng: ItemRng) -> Generated:
    """Three brine tanks through twelve scheduled operations, some conditional on the current state."""
    tanks = ["A", "B", "C"]
    vol = {t: Fraction(rng.randrange(60, 161, 10)) for t in tanks}
    salt = {t: vol[t] * rng.randint(5, 60) for t in tanks}
    intro = [f"Tank {t} holds {vol[t]} litres of brine containing {salt[t] / vol[t]} grams of salt per litre."
             for t in tanks]
    kinds = ["compare", "evaporate", "topup", "equalise", "fraction", "pump", "brine", "drain"]
    kinds += [rng.choice(kinds) for _ in range(4)]
    rng.shuffle(kinds)
    steps, touched = [], {t: 0 for t in tanks}
    for kind in kinds:
        for _ in range(50):  # redraw the parameters until the step is valid in the current state
            step = _tank_step(rng, kind, rng.sample(tanks, 2), vol, salt)
            if step:
                steps.append(step[0])
                for t in step[1]:
                    touched[t] += 1
                break
    target = max(tanks, key=lambda t: (touched[t], t))
    prompt = ("Three tanks hold brine (salt dissolved in water). The liquid in every tank is perfectly mixed at all "
              "times, and litres of liquid simply add when liquids are combined. Boiling removes pure water only.\n\n"
              + "\n".join(intro) + "\n\nThe following steps are carried out in this order:\n"
              + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
              + f"\n\nWhat is the salt concentration of tank {target} after the last step, in grams per litre?\n\n"
              + _FRACTION_FORMAT)
    return _exact(prompt, salt[target] / vol[target])


def _tank_step(rng: ItemRng, kind: str, pair: list[str], vol: dict, salt: dict) -> tuple[str, list[str]] | None:
    """Apply one step of the given kind and return its wording and the tanks it touched; None if it cannot apply.

    Every tank keeps at least 20 litres so later steps stay meaningful.
    """
    p, q = pair
    litres = Fraction(rng.randrange(5, 45, 5))

    def move(src: str, dst: str, amount: Fraction) -> None:
        moved = salt[src] * amount / vol[src]
        vol[src], salt[src] = vol[src] - amount, salt[src] - moved
        vol[dst], salt[dst] = vol[dst] + amount, salt[dst] + moved

    if kind == "pump" and vol[p] - litres >= 20:
        move(p, q, litres)
        return f"Pump {litres} litres from tank {p} into tank {q}.", [p, q]
    if kind == "fraction":
        share = rng.choice([Fraction(1, 2), Fraction(1, 3), Fraction(2, 3), Fraction(1, 4), Fraction(3, 4),
                            Fraction(2, 5), Fraction(3, 5)])
        if (vol[p] * share).denominator == 1 and vol[p] * (1 - share) >= 20:
            move(p, q, vol[p] * share)
            return f"Pour {share} of the current contents of tank {p} into tank {q}.", [p, q]
    if kind == "evaporate" and vol[p] - litres >= 20:
        vol[p] -= litres
        return f"Boil off {litres} litres of water from tank {p} (all of its salt stays in it).", [p]
    if kind == "drain" and vol[p] - litres >= 20:
        salt[p] -= salt[p] * litres / vol[p]
        vol[p] -= litres
        return f"Drain {litres} litres out of tank {p} and throw them away.", [p]
    if kind == "brine":
        strength = rng.randint(10, 90)
        vol[p], salt[p] = vol[p] + litres, salt[p] + litres * strength
        return f"Add {litres} litres of brine at {strength} g/L to tank {p}.", [p]
    if kind == "topup":
        target = (vol[p] // 10 + rng.randint(2, 5)) * 10
        vol[p] = Fraction(target)
        return f"Add pure water to tank {p} until it holds exactly {target} litres.", [p]
    if kind == "equalise" and vol[p] != vol[q]:
        src, dst = (p, q) if vol[p] > vol[q] else (q, p)
        move(src, dst, (vol[src] - vol[dst]) / 2)
        return (f"Pump liquid from whichever of tanks {p} and {q} holds more liquid into the other until they "
                "hold equal volumes."), [p, q]
    if kind == "compare" and min(vol[p], vol[q]) - litres >= 20 and salt[p] / vol[p] != salt[q] / vol[q]:
        move(*((p, q) if salt[p] / vol[p] > salt[q] / vol[q] else (q, p)), litres)
        return (f"Pump {litres} litres from whichever of tanks {p} and {q} has the higher salt concentration "
                "into the other one."), [p, q]
    return None


# ---------------------------------------------------------------- urns

_DIE_PARTITIONS = [  # (description, faces): each row splits the six faces into three groups
    [("a prime number", {2, 3, 5}), ("a perfect square", {1, 4}), ("a 6", {6})],
    [("less than 3", {1, 2}), ("a multiple of 3", {3, 6}), ("a 4 or a 5", {4, 5})],
    [("an odd number", {1, 3, 5}), ("a 2", {2}), ("a 4 or a 6", {4, 6})],
    [("a divisor of 6 other than 1", {2, 3, 6}), ("a 1", {1}), ("a 4 or a 5", {4, 5})],
    [("a prime number", {2, 3, 5}), ("a 1 or a 6", {1, 6}), ("a 4", {4})],
]
_RULES = {"replace": "after each draw the ball is put back",
          "remove": "balls drawn are not put back",
          "polya": "after each draw the ball is put back together with one extra ball of the same colour"}
_COLOURS = ("red", "green", "blue")


def _draw_sequences(counts: tuple[int, ...], rule: str, n: int) -> dict[tuple[int, ...], Fraction]:
    """Exact probability of every colour sequence of n draws from one urn under its rule."""
    if n == 0:
        return {(): Fraction(1)}
    out = {}
    for colour, c in enumerate(counts):
        if c == 0:
            continue
        nxt = list(counts)
        nxt[colour] += {"replace": 0, "remove": -1, "polya": 1}[rule]
        for rest, p in _draw_sequences(tuple(nxt), rule, n - 1).items():
            out[(colour,) + rest] = Fraction(c, sum(counts)) * p
    return out


def urn_posterior(rng: ItemRng) -> Generated:
    """A die picks one of three urns with different draw rules; condition on reported draws, predict or infer."""
    groups = list(rng.choice(_DIE_PARTITIONS))
    rng.shuffle(groups)
    rules = list(_RULES)
    rng.shuffle(rules)
    while True:
        urns = [tuple(rng.randint(0, 4) for _ in _COLOURS) for _ in range(3)]
        if all(sum(u) >= 4 and sum(c > 0 for c in u) >= 2 for u in urns) and len(set(urns)) == 3:
            break
    c1, c2 = rng.sample(range(3), 2)
    evidence = rng.choice([
        (f"exactly two of the three draws were {_COLOURS[c1]}", lambda s: s[:3].count(c1) == 2),
        (f"the first draw was {_COLOURS[c1]} and at least one of the other two was {_COLOURS[c2]}",
         lambda s: s[0] == c1 and c2 in s[1:3]),
        ("no two consecutive draws had the same colour", lambda s: s[0] != s[1] and s[1] != s[2]),
        (f"the three colours were not all different, and the last of the three was {_COLOURS[c1]}",
         lambda s: len(set(s[:3])) < 3 and s[2] == c1),
        (f"at least one draw was {_COLOURS[c1]} and at least one was {_COLOURS[c2]}",
         lambda s: c1 in s[:3] and c2 in s[:3]),
        ("the first and third draws had the same colour but the second draw did not",
         lambda s: s[0] == s[2] != s[1]),
    ])
    asked_urn, asked_colour = rng.randrange(3), rng.randrange(3)
    joint, hit_urn, hit_colour = Fraction(0), Fraction(0), Fraction(0)
    for u, (counts, rule) in enumerate(zip(urns, rules)):
        prior = Fraction(len(groups[u][1]), 6)
        for seq, p in _draw_sequences(counts, rule, 4).items():
            if evidence[1](seq):
                joint += prior * p
                hit_urn += prior * p if u == asked_urn else 0
                hit_colour += prior * p if seq[3] == asked_colour else 0
    if joint == 0:
        return urn_posterior(rng)
    names = ["I", "II", "III"]
    if rng.randrange(2):
        question, answer = f"the probability that urn {names[asked_urn]} was the one chosen", hit_urn / joint
    else:
        question = f"the probability that a fourth ball drawn from the same urn, under the same rule, is " \
                   f"{_COLOURS[asked_colour]}"
        answer = hit_colour / joint
    if answer in (0, 1):
        return urn_posterior(rng)
    lines = [f"Urn {names[u]}: {r} red, {g} green and {b} blue balls; {_RULES[rules[u]]}. It is used when the die "
             f"shows {groups[u][0]}." for u, (r, g, b) in enumerate(urns)]
    prompt = ("A fair six-sided die is rolled once, and the result selects one of three urns:\n" + "\n".join(lines)
              + "\n\nThree balls are then drawn one at a time from the selected urn, following that urn's rule. "
              f"You do not see the die or the urn, but you are told truthfully that {evidence[0]}.\n\n"
              f"Given this information, what is {question}?\n\n" + _FRACTION_FORMAT)
    return _exact(prompt, answer)


# ---------------------------------------------------------------- counting

_PEOPLE = ["Ana", "Bo", "Cyd", "Dov", "Eve", "Fay", "Gus", "Hal"]


@cache
def _chairs() -> np.ndarray:
    """Row k gives the chair (1..8) of each of eight people in the k-th of all 40320 arrangements."""
    return np.array(list(permutations(range(1, 9))), dtype=np.int8)


def arrangement_count(rng: ItemRng) -> Generated:
    """Count row arrangements of eight people under interacting restrictions, by brute force over all 8!."""
    pos = _chairs()
    while True:
        order = rng.sample(range(8), 8)
        P = [pos[:, i] for i in order]
        N = [_PEOPLE[i] for i in order]
        k, lo, hi = rng.randint(1, 3), rng.randint(1, 3), rng.randint(6, 8)
        pool = [
            (f"{N[0]} and {N[1]} sit next to each other.", abs(P[0] - P[1]) == 1),
            (f"{N[2]} does not sit next to {N[3]}, and {N[2]} does not sit next to {N[4]} either.",
             (abs(P[2] - P[3]) != 1) & (abs(P[2] - P[4]) != 1)),
            (f"{N[3]} sits somewhere to the left of {N[5]}.", P[3] < P[5]),
            (f"Exactly {k} {'person sits' if k == 1 else 'people sit'} between {N[1]} and {N[6]}.",
             abs(P[1] - P[6]) == k + 1),
            (f"If {N[4]} sits at one of the two ends of the row, then {N[7]} sits next to {N[0]}.",
             ~((P[4] == 1) | (P[4] == 8)) | (abs(P[7] - P[0]) == 1)),
            (f"{N[6]} sits in an even-numbered chair.", P[6] % 2 == 0),
            (f"{N[5]} sits somewhere between {N[2]} and {N[7]} (not necessarily next to either).",
             (np.minimum(P[2], P[7]) < P[5]) & (P[5] < np.maximum(P[2], P[7]))),
            (f"{N[0]} sits in chair {lo} or {N[3]} sits in chair {hi} (or both).", (P[0] == lo) | (P[3] == hi)),
            (f"At least two people sit between {N[4]} and {N[5]}.", abs(P[4] - P[5]) >= 3),
            (f"{N[7]} sits to the right of both {N[1]} and {N[3]}.", (P[7] > P[1]) & (P[7] > P[3])),
            (f"{N[2]} sits in one of chairs {lo} to {lo + 3}.", (P[2] >= lo) & (P[2] <= lo + 3)),
        ]
        chosen = rng.sample(pool, rng.randint(5, 6))
        masks = [m for _, m in chosen]
        count = int(np.logical_and.reduce(masks).sum())
        # Every restriction must bite: dropping any one of them changes the count.
        loose = [int(np.logical_and.reduce(masks[:i] + masks[i + 1:]).sum()) for i in range(len(masks))]
        if 40 <= count <= 4000 and all(x > count for x in loose):
            break
    prompt = ("Eight people — " + ", ".join(_PEOPLE[:-1]) + f" and {_PEOPLE[-1]} — are to be lined up for a photo "
              "on a row of eight chairs numbered 1 to 8 from left to right, one person per chair. \"Left of\" means "
              "a lower chair number and \"right of\" a higher one; two people sit next to each other when their "
              "chair numbers differ by 1. The arrangement must satisfy all of the following:\n"
              + "\n".join(f"- {text}" for text, _ in chosen)
              + "\n\nHow many different arrangements satisfy every condition?\n\n"
              "End your response with a final line `ANSWER: <n>`, where <n> is the count as an integer.")
    return _exact(prompt, Fraction(count))


# ---------------------------------------------------------------- tax ledger

_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_CLIENTS = ["Harbor Ltd", "Nordlicht GmbH", "Pike & Sons", "Quarry Labs", "Vela Studio", "Orchard Co",
            "Tamsin Ltd", "Brightwell", "Kestrel Media", "Lumen Dental"]


def _date(day: int) -> str:
    """Day 0..364 of a non-leap year as 'Mon dd'."""
    for month, length in zip(_MONTHS, [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]):
        if day < length:
            return f"{month} {day + 1:>2}"
        day -= length
    raise ValueError("day out of range")


def _money(x: Fraction) -> str:
    whole, cents = divmod(int(x * 100), 100)  # ledger amounts are whole cents
    return f"${whole:,}.{cents:02d}"


def _decimal(x: Fraction) -> str:
    """An exact terminating decimal for a Fraction whose denominator divides a power of ten."""
    places = next(k for k in range(12) if (x * 10**k).denominator == 1)
    digits = f"{abs(x.numerator * 10**places // x.denominator):0{places + 1}d}"
    text = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}"
    return ("-" if x < 0 else "") + text


def tax_ledger(rng: ItemRng) -> Generated:
    """A freelancer's year of ledger entries under tapered allowance, capped deductions, brackets and a credit."""
    cents = lambda lo, hi: Fraction(rng.randint(lo * 100, hi * 100), 100)  # noqa: E731
    clients = rng.sample(_CLIENTS, 7)
    rows = [("invoice", f"Invoice paid by {c}", cents(1500, 9000)) for c in clients + rng.sample(clients, 2)]
    rows.append(("refund", f"Refund to {clients[rng.randrange(7)]} for a cancelled milestone", cents(200, 1400)))
    rows += [("equipment", d, cents(300, 2600)) for d in rng.sample(["Laptop", "Camera body", "Standing desk",
                                                                    "Monitor pair", "Drawing tablet"], 3)]
    rows += [("meals", f"Client lunch with {c}", cents(35, 420)) for c in rng.sample(clients, 4)]
    rows += [("software", d, cents(15, 900)) for d in rng.sample(["Design suite licence", "Cloud hosting",
                                                                 "Accounting software"], 2)]
    rows.append(("fine", rng.choice(["Parking fine", "Late-filing penalty", "Speeding ticket"]), cents(60, 400)))
    rows.append(("personal", "Family holiday flights (paid from the business account)", cents(400, 2000)))
    rows += [("prepayment", "Quarterly tax prepayment", cents(1000, 5000)) for _ in range(2)]
    rng.shuffle(rows)
    dated = sorted((rng.randrange(365), i) for i in range(len(rows)))
    ledger = [rows[i] + (day,) for day, i in dated]
    # One entry was keyed in twice; the copy lands later in the year and must be ignored.
    original = rng.choice([i for i, r in enumerate(ledger) if r[0] in ("invoice", "equipment", "meals")])
    copy_at = rng.randint(original + 1, len(ledger))
    ledger.insert(copy_at, ledger[original][:3] + (ledger[copy_at - 1][3],))
    total = {k: sum((a for kind, _, a, _ in ledger if kind == k), Fraction(0)) - (
        ledger[original][2] if ledger[original][0] == k else 0) for k in
        ("invoice", "refund", "equipment", "meals", "software", "prepayment")}

    cap, allowance, taper_from = rng.randrange(1500, 3100, 100), rng.randrange(9000, 14500, 500), \
        rng.randrange(25000, 51000, 1000)
    b1 = rng.randrange(8000, 16000, 1000)
    b2 = b1 + rng.randrange(15000, 31000, 1000)
    r1, r2, r3 = 10, rng.randint(20, 25), rng.randint(38, 45)
    credit, credit_from, credit_rate = rng.randrange(600, 1550, 50), rng.randrange(20000, 46000, 1000), \
        rng.randint(4, 10)

    income = total["invoice"] - total["refund"]
    net = income - min(total["equipment"], cap) - total["meals"] / 2 - total["software"]
    allow = max(Fraction(0), allowance - max(Fraction(0), net - taper_from) / 2)
    taxable = max(Fraction(0), net - allow)
    tax = (Fraction(r1, 100) * min(taxable, b1) + Fraction(r2, 100) * max(0, min(taxable, b2) - b1)
           + Fraction(r3, 100) * max(0, taxable - b2))
    credit_left = max(Fraction(0), credit - Fraction(credit_rate, 100) * max(0, net - credit_from))
    balance = max(Fraction(0), tax - credit_left) - total["prepayment"]

    lines = [f"#{n:<3} {_date(day)}  {kind:<10}  {desc:<58} {_money(amount):>11}"
             for n, (kind, desc, amount, day) in enumerate(ledger, 1)]
    prompt = (
        "A freelancer's business ledger for one tax year is below (entry number, date, category, description, "
        "amount). Every amount is positive; the category says what it is.\n\n" + "\n".join(lines)
        + f"\n\nNote from the bookkeeper: entry #{copy_at + 1} is an accidental second copy of entry "
        f"#{original + 1} (the same transaction keyed in twice); ignore the copy.\n\nThe tax rules:\n"
        "1. Business income = invoices paid minus refunds to clients.\n"
        f"2. Deductible expenses: software 100%; meals 50%; equipment 100%, but the total equipment deduction "
        f"for the year is capped at {_money(Fraction(cap))}; fines, penalties and personal spending are not "
        "deductible. Tax prepayments are not expenses.\n"
        "3. Net income = business income minus deductible expenses.\n"
        f"4. The personal allowance is {_money(Fraction(allowance))}, reduced by $1 for every $2 by which net "
        f"income exceeds {_money(Fraction(taper_from))} (the reduction is exact, not in whole steps; the "
        "allowance never goes below $0). Taxable income = net income minus the allowance (never below $0).\n"
        f"5. Tax on taxable income: {r1}% on the first {_money(Fraction(b1))}, {r2}% on the part from "
        f"{_money(Fraction(b1))} to {_money(Fraction(b2))}, and {r3}% on the part above {_money(Fraction(b2))}.\n"
        f"6. A small-business credit of {_money(Fraction(credit))} is reduced by {credit_rate}% of the amount by "
        f"which net income exceeds {_money(Fraction(credit_from))} (never below $0). The credit is subtracted "
        "from the tax, but cannot make the tax negative.\n"
        "7. Balance due = tax after the credit minus the tax prepayments in the ledger (negative means a refund).\n"
        "\nNo amount is rounded at any stage. What is the balance due?\n\n"
        "End your response with a final line `ANSWER: <amount>`, where <amount> is the exact balance in dollars "
        "as a plain decimal number without rounding (e.g. 1234.5675 or -87.25).")
    answer = _decimal(balance)
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type="number"),
                     reference=f"Working omitted.\nANSWER: {answer}")


# ---------------------------------------------------------------- crews

_WORKER_NAMES = ["Ada", "Ben", "Cleo", "Dev", "Eli", "Fern", "Gil", "Hana", "Ivo", "Jun"]


def _clock(hours: Fraction) -> str:
    minutes = int(hours * 60) + 8 * 60
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def crew_work(rng: ItemRng) -> Generated:
    """A job whose crew changes at set times and at progress milestones, with a break, a slow pair and a setback."""
    while True:
        w = rng.sample(_WORKER_NAMES, 5)
        solo = {n: rng.choice([6, 8, 9, 10, 12, 15, 16, 18, 20, 24, 30]) for n in w}
        quarter = lambda lo, hi: Fraction(rng.randint(lo * 4, hi * 4), 4)  # noqa: E731
        t_join, t_leave, t_late, t_setback = quarter(1, 3), quarter(2, 5), quarter(1, 5), quarter(3, 6)
        q_leave, q_join = sorted(rng.sample([Fraction(1, 5), Fraction(1, 4), Fraction(1, 3), Fraction(2, 5),
                                             Fraction(1, 2), Fraction(3, 5), Fraction(2, 3)], 2))
        lost = rng.choice([Fraction(1, 10), Fraction(1, 12), Fraction(1, 8), Fraction(1, 6)])
        lunch, lunch_len = quarter(3, 5), rng.choice([Fraction(1, 2), Fraction(3, 4), Fraction(1)])
        slow_pair, slow = rng.sample(w, 2), rng.choice([Fraction(3, 4), Fraction(2, 3), Fraction(4, 5)])
        timed = [(t_join, "join", w[2]), (t_leave, "leave", w[1]), (t_late, "join", w[3]),
                 (t_setback, "setback", None), (lunch, "stop", None), (lunch + lunch_len, "resume", None)]
        milestones = [(q_leave, "leave", w[0]), (q_join, "join", w[4])]
        finish = _simulate(solo, {w[0], w[1]}, timed, milestones, lost, set(slow_pair), slow)
        if finish is not None:
            break
    events = [f"At {_clock(t_join)}, {w[2]} joins.", f"At {_clock(t_leave)}, {w[1]} leaves for the day.",
              f"At {_clock(t_late)}, {w[3]} joins.",
              f"As soon as {q_leave} of the whole job is complete, {w[0]} is called away and leaves.",
              f"As soon as {q_join} of the whole job is complete, {w[4]} joins.",
              f"From {_clock(lunch)} to {_clock(lunch + lunch_len)}, everyone present takes a lunch break "
              "and no work is done.",
              f"At {_clock(t_setback)}, an inspector finds faulty work amounting to {lost} of the whole job; it is "
              "torn out immediately, so that much completed work is lost and has to be done again."]
    rng.shuffle(events)
    prompt = (
        "A crew is building a garden wall. Each worker's speed is given by how long they would take to build "
        "the whole wall working alone: " + ", ".join(f"{n} {solo[n]} hours" for n in w)
        + ". Workers' speeds simply add when they work together, except that whenever "
        f"{slow_pair[0]} and {slow_pair[1]} are both working, each of the two works at only {slow} of their "
        f"usual speed. Work starts at 08:00 with {w[0]} and {w[1]}. Then:\n"
        + "\n".join(f"- {e}" for e in events)
        + "\n\nEach event happens exactly once: a milestone triggers the first time that amount of completed "
        "work is reached, and a worker who leaves does not come back. Workers work continuously whenever they "
        "are present and it is not the lunch break.\n\n"
        "How many hours after 08:00 is the wall finished?\n\n" + _FRACTION_FORMAT)
    return _exact(prompt, finish)


def _simulate(solo, crew, timed, milestones, lost, slow_pair, slow) -> Fraction | None:
    """Exact finishing time in hours, or None when the instance is degenerate (ties, idle, events after the end)."""
    t, done, working, crew = Fraction(0), Fraction(0), True, set(crew)
    timed, milestones, slowed = sorted(timed), list(milestones), False

    def rate() -> Fraction:
        if not working:
            return Fraction(0)
        both = slow_pair <= crew
        return sum((Fraction(1, solo[n]) * (slow if both and n in slow_pair else 1) for n in crew), Fraction(0))

    while True:
        r = rate()
        options = [(timed[0][0], "timed")] if timed else []
        if r > 0:
            options.append((t + (1 - done) / r, "finish"))
            options += [(t + (q - done) / r, "milestone") for q, _, _ in milestones if q > done]
        if not options:
            return None
        options.sort()
        if len(options) > 1 and options[0][0] == options[1][0]:
            return None  # simultaneous events would make the order ambiguous
        when, what = options[0]
        slowed |= r > 0 and when > t and slow_pair <= crew
        done, t = done + r * (when - t), when
        if what == "finish":
            return t if not timed and not milestones and slowed else None
        if what == "timed":
            _, action, who = timed.pop(0)
        else:
            index = next(i for i, (q, _, _) in enumerate(milestones) if q == done)
            _, action, who = milestones.pop(index)
        if action == "join":
            crew.add(who)
        elif action == "leave":
            crew.discard(who)
        elif action == "stop":
            working = False
        elif action == "resume":
            working = True
        elif done < lost:
            return None  # cannot tear out more than has been built
        else:
            done -= lost
