"""Quantitative reasoning generators: problems far too large to enumerate that yield to one idea (an invariant, a
telescoping product, a bottleneck bound, exchangeability, inclusion–exclusion), with exact answers from solvers."""

from __future__ import annotations

from fractions import Fraction
from itertools import combinations
from math import comb, factorial, gcd, log10

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated

_FRACTION_FORMAT = ("End your response with a final line `ANSWER: <value>`, where <value> is the exact value as an "
                    "integer or a fraction in lowest terms such as 2317/45 (no decimals, no rounding, no units).")


def _exact(prompt: str, answer: Fraction, difficulty: dict[str, float]) -> Generated:
    """Package a prompt and its exact numeric answer with a reference response that scores 1."""
    text = str(answer)
    return Generated(prompt=prompt, key=ExactKey(answer=text, answer_type="number"),
                     reference=f"Working omitted.\nANSWER: {text}", difficulty=difficulty)


def _thousands(n: int) -> str:
    return f"{n:,}"


def _power_sums(count: int, degree: int) -> list[int]:
    """[sum of t**e for t in 0..count-1] for e = 0..degree, by Faulhaber's closed forms (degree <= 3)."""
    n = count
    sums = [n, n * (n - 1) // 2, (n - 1) * n * (2 * n - 1) // 6, (n * (n - 1) // 2) ** 2]
    return sums[:degree + 1]


def _progression_sum(coefficients: list[int], first: int, step: int, count: int) -> int:
    """Sum of the polynomial with the given coefficients (constant first) over first, first+step, ... (count terms)."""
    # Re-expand the polynomial in t where x = first + step * t, then use the power sums of t.
    in_t = [0] * len(coefficients)
    for e, c in enumerate(coefficients):
        for i in range(e + 1):  # (first + step t)^e = sum C(e, i) first^(e-i) step^i t^i
            in_t[i] += c * comb(e, i) * first ** (e - i) * step ** i
    return sum(c * s for c, s in zip(in_t, _power_sums(count, len(in_t) - 1)))


# ---------------------------------------------------------------- tanks

_SWAP_VOLUMES = [(60, 40), (30, 60), (90, 45), (120, 40), (80, 80), (70, 30), (84, 42), (100, 25), (75, 50),
                 (36, 45), (56, 42), (72, 24), (40, 60), (45, 36), (42, 84), (24, 72)]  # V_A V_B / (V_A + V_B) whole
_ROUND_VOLUMES = [40, 50, 60, 72, 80, 90, 100, 120]


def _litres_formula(numerator: int, slope: int, offset: int) -> str:
    """The daily volume numerator / (slope k + offset), in lowest terms, as prompt text."""
    g = gcd(gcd(numerator, slope), offset)
    numerator, slope, offset = numerator // g, slope // g, offset // g
    return f"{numerator}/({'' if slope == 1 else slope}k + {offset})"


def tank_mixing(rng: ItemRng, *, horizon: int = 5, order: int = 2, dosings: int = 2) -> Generated:
    """Two tanks exchange a shrinking volume every day for N days while salt is dosed on periodic schedules.

    The exchange scales the concentration difference by (k+alpha)/(k+alpha+order) on day k, so the product over days
    telescopes; total salt is invariant under exchanges; doses enter linearly. Closed form, no simulation.
    """
    if not 1 <= order <= 3:
        raise ValueError("order must be 1, 2 or 3 (the progression sums are closed forms up to cubes)")
    alpha = rng.randint(0, 3)
    s = order
    round_trip = rng.randrange(2) == 1
    if round_trip:
        va = vb = rng.choice(_ROUND_VOLUMES)
        daily = _litres_formula(va * s, 2, 2 * alpha + s)
        transfer = (f"x_k litres are pumped from tank A into tank B and B is stirred; then x_k litres are pumped "
                    f"from tank B back into tank A and A is stirred. Here x_k = {daily} litres.")
    else:
        va, vb = rng.choice(_SWAP_VOLUMES)
        harmonic = va * vb // (va + vb)
        daily = _litres_formula(s * harmonic, 1, alpha + s)
        transfer = (f"at the same moment, x_k litres are drawn out of tank A and x_k litres are drawn out of tank B, "
                    f"where x_k = {daily} litres; the portion drawn from A is poured into B and the portion drawn "
                    "from B is poured into A, and both tanks are stirred.")
    a0, b0 = rng.sample(range(0, 61), 2)
    days = rng.randint(10 ** (horizon - 1) + 1, 10 ** horizon - 1)

    def q(j: int) -> int:  # the telescoped product: difference after day N = difference after day j * q(j) / q(N)
        out = 1
        for i in range(1, s + 1):
            out *= j + alpha + i
        return out

    poly = [1]  # q(j) as a polynomial in j, constant first
    for i in range(1, s + 1):
        poly = [a + b for a, b in zip([0] + poly, [(alpha + i) * c for c in poly] + [0])]

    schedules, lines, used = [], [], set()
    while len(schedules) < dosings:
        tank, grams = rng.choice("AB"), rng.randint(1, 24)
        if rng.randrange(4) == 0:
            day = rng.randint(2, days - 1)
            key = ("once", day)
            first, step, count = day, 1, 1
            text = f"on day {_thousands(day)} only, {grams} grams of salt are dissolved in tank {tank}"
        else:
            step = rng.randint(2, 12)
            rest = rng.randrange(step)
            key = (step, rest)
            first = rest if rest else step
            count = (days - first) // step + 1
            when = (f"whose number is a multiple of {step}" if rest == 0 else
                    f"whose number leaves remainder {rest} when divided by {step}")
            text = f"on every day {when}, {grams} grams of salt are dissolved in tank {tank}"
        if key in used:
            continue
        used.add(key)
        schedules.append((tank, grams, first, step, count))
        lines.append(text)

    volume = va + vb
    diff_scaled = Fraction(b0 - a0) * q(0)  # difference b - a, times q(N) at the end
    salt = Fraction(a0 * va + b0 * vb)
    events = 0
    for tank, grams, first, step, count in schedules:
        kick = Fraction(-grams, va) if tank == "A" else Fraction(grams, vb)
        diff_scaled += kick * _progression_sum(poly, first, step, count)
        salt += grams * count
        events += count
    diff = diff_scaled / q(days)
    conc_a = (salt - vb * diff) / volume
    conc = {"A": conc_a, "B": conc_a + diff}
    target = rng.choice("AB")
    if rng.randrange(2):
        question, answer = f"the salt concentration of tank {target}, in grams per litre", conc[target]
    else:
        question = f"the mass of salt in tank {target}, in grams"
        answer = conc[target] * (va if target == "A" else vb)
    prompt = (
        "Two tanks, A and B, hold brine (salt dissolved in water). The liquid in each tank is perfectly mixed at all "
        "times, and when liquids are combined their volumes and their salt simply add.\n\n"
        f"At the start, tank A holds {va} litres of brine at {a0} grams of salt per litre and tank B holds {vb} "
        f"litres at {b0} grams per litre.\n\n"
        "Every day k = 1, 2, 3, ... the following happens, in this order:\n"
        f"1. Transfer: {transfer} The volumes of both tanks are therefore the same at the end of every day as at "
        "the start.\n"
        "2. Dosing, after that day's transfer:\n" + "\n".join(f"   - {line};" for line in lines)
        + "\n   Dissolving salt does not change a tank's volume, and on a day that matches none of these rules no "
        "salt is added.\n\n"
        f"What is {question}, at the end of day {_thousands(days)} (after that day's dosing)?\n\n" + _FRACTION_FORMAT)
    return _exact(prompt, answer, {"naive_steps_log10": round(log10(days + events), 2), "days": days,
                                   "answer_digits": len(str(answer.numerator)) + len(str(answer.denominator))})


# ---------------------------------------------------------------- crews

_WORKER_NAMES = ["Ada", "Ben", "Cleo", "Dev", "Eli", "Fern", "Gil", "Hana", "Ivo", "Jun", "Kai", "Lena"]


def _hours(x: Fraction) -> str:
    return f"{x.numerator}" if x.denominator == 1 else f"{float(x):g}"


def _crew_bound(speeds: list[int], windows: list[tuple[Fraction, Fraction | None]], capacity: int,
                work: int) -> Fraction:
    """Earliest T by which the `capacity` fastest available workers at each moment can do `work` units."""
    cuts = sorted({Fraction(0)} | {t for w in windows for t in w if t is not None})
    done, t = Fraction(0), Fraction(0)
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else None
        here = sorted((s for s, (a, b) in zip(speeds, windows) if a <= start and (b is None or b > start)),
                      reverse=True)
        rate = sum(here[:capacity])
        if end is None or (rate and done + rate * (end - start) >= work):
            return start + (work - done) / rate
        done += rate * (end - start)
    raise AssertionError("unreachable")


def crew_work(rng: ItemRng, *, sites: int = 8, workers: int = 6, max_crew: int = 3, shifts: int = 1) -> Generated:
    """Minimum finishing time for jobs with crew caps, workers of different speeds and some limited hours.

    Any set J of jobs can at no moment absorb more than the speeds of the min(capacity of J, available) fastest
    available workers; the largest of these bottleneck bounds is the optimum (the capped-assignment rate region is a
    polymatroid, here summed over the availability intervals). A capacity knapsack finds the binding set.
    """
    names = rng.sample(_WORKER_NAMES, workers)
    while True:  # plant a heavy group of jobs whose crew limit is below the crew size, then hide it among the rest
        speeds = [rng.randint(1, 6) for _ in names]
        top = sorted(speeds, reverse=True)
        heavy = rng.randint(2, min(sites - 1, workers - 1))
        caps = [rng.randint(1, max_crew) for _ in range(sites)]
        planted = sum(caps[:heavy])
        if planted >= workers:
            continue
        hours = rng.randint(5, 14)
        work = [max(1, round(hours * sum(top[:planted]) * c / planted * (0.8 + 0.35 * rng.random())))
                for c in caps[:heavy]]
        rest = round(hours * sum(top) * (0.55 + 0.4 * rng.random())) - sum(work)
        if rest < 3 * (sites - heavy):
            continue
        cuts = sorted(rng.sample(range(1, rest), sites - heavy - 1))
        work += [b - a for a, b in zip([0] + cuts, cuts + [rest])]
        order = rng.sample(range(sites), sites)
        work, caps = [work[i] for i in order], [caps[i] for i in order]
        break
    windows: list[tuple[Fraction, Fraction | None]] = [(Fraction(0), None) for _ in names]
    limited = rng.sample(range(1, workers), min(shifts, workers - 1))  # worker 0 is always there: work can finish
    for i in limited:
        if rng.randrange(2):
            windows[i] = (Fraction(rng.randint(1, 8), 2), None)
        else:
            windows[i] = (Fraction(0), Fraction(rng.randint(2, 12), 2))
    # Knapsack over jobs by total crew capacity: the largest workload (and fewest jobs) for every capacity.
    best: dict[int, tuple[int, int]] = {0: (0, 0)}
    for w, c in zip(work, caps):
        for cap, (load, count) in list(best.items()):
            old = best.get(cap + c, (-1, 0))
            if (load + w, -(count + 1)) > (old[0], -old[1]):
                best[cap + c] = (load + w, count + 1)
    bounds = {cap: _crew_bound(speeds, windows, min(cap, workers), load) for cap, (load, _) in best.items() if cap}
    answer = max(bounds.values())
    everyone = _crew_bound(speeds, windows, workers, sum(work))
    # The size of the smallest binding group of jobs; 0 when the plain total-work bound is already the answer.
    binding = 0 if answer == everyone else min(best[cap][1] for cap, value in bounds.items() if value == answer)
    lines = [f"- Job {j}: {w} units of work; at most {c} worker{'s' if c > 1 else ''} at a time."
             for j, (w, c) in enumerate(zip(work, caps), 1)]
    crew = ", ".join(f"{n} {s} unit{'s' if s > 1 else ''} per hour" for n, s in zip(names, speeds))
    limits = []
    for i in limited:
        start, end = windows[i]
        limits.append(f"{names[i]} can only start work {_hours(start)} hours after the start." if end is None else
                      f"{names[i]} must stop for good {_hours(end)} hours after the start.")
    prompt = (
        f"A crew of {workers} workers has to complete {sites} jobs. Each job needs a fixed amount of work, measured in "
        "units, and has a limit on how many workers can work on it at the same time:\n" + "\n".join(lines)
        + f"\n\nThe workers' speeds, in units of work per hour: {crew}."
        + ("\nAvailability: " + " ".join(limits) + " Everyone else can work the whole time." if limits else
           "\nEvery worker can work the whole time.")
        + "\n\nRules: work starts at time 0. Any worker can work on any job. At every moment each worker works on at "
        "most one job (or is idle), and the speeds of the workers on the same job add up. Workers may switch jobs "
        "at any moment, as often as they like, with no time lost, and a job may be worked on by different workers "
        "at different times; only the limit on how many work on a job at the same moment must be respected.\n\n"
        "With the best possible plan, what is the earliest time, in hours after the start, by which every job is "
        "complete?\n\n" + _FRACTION_FORMAT)
    return _exact(prompt, answer, {"bottleneck_jobs": binding, "subsets_log10": round(sites * log10(2), 2),
                                   "gap_percent": round(float((answer - everyone) / everyone * 100), 1)})


# ---------------------------------------------------------------- urns

_ROMAN = ["I", "II", "III", "IV", "V", "VI"]


def _red_first(alpha: int, beta: int, reds: int, blues: int) -> Fraction:
    """Probability that a Polya urn equivalent to alpha red, beta blue, one added per draw, yields `reds` red draws
    before `blues` blue draws: the beta-binomial tail over the first reds + blues - 1 draws."""
    if reds <= 0:
        return Fraction(1)
    if blues <= 0:
        return Fraction(0)
    n = reds + blues - 1
    top = sum(comb(k + alpha - 1, alpha - 1) * comb(n - k + beta - 1, beta - 1) for k in range(reds, n + 1))
    return Fraction(top, comb(n + alpha + beta - 1, alpha + beta - 1))


def urn_posterior(rng: ItemRng, *, urns: int = 3, weight: int = 4, scale: int = 2) -> Generated:
    """A die picks one of several reinforcing urns; balls are drawn until a colour threshold is hit; Bayes.

    An urn with a red, b blue that adds d balls of the drawn colour (d dividing a and b) is exchangeable with the
    beta(a/d, b/d) mixing law, so 'red threshold first' is a beta-binomial tail with a closed form, though the
    absorbing chain has up to millions of states.
    """
    while True:
        faces = sorted(rng.sample(range(1, 6), urns - 1))
        counts = [b - a for a, b in zip([0] + faces, faces + [6])]
        spec = []
        for _ in range(urns):
            total = rng.randint(2, weight)
            alpha = rng.randint(1, total - 1)
            spec.append((alpha, total - alpha, rng.randint(1, 3)))
        red_goal = rng.randint(10 ** scale, 5 * 10 ** scale)
        blue_goal = rng.randint(10 ** scale, 5 * 10 ** scale)
        starts_below = all(red_goal > (a + 1) * d and blue_goal > (b + 1) * d for a, b, d in spec)
        if len(set(spec)) == urns and red_goal != blue_goal and starts_below:
            break
    need = []  # (alpha, beta, red draws needed, blue draws needed) per urn
    for alpha, beta, d in spec:
        need.append((alpha, beta, -(-(red_goal - alpha * d) // d), -(-(blue_goal - beta * d) // d)))
    prior = [Fraction(c, 6) for c in counts]
    win = [_red_first(*n) for n in need]
    question_kind = rng.randrange(3)
    asked = rng.randrange(urns)
    if question_kind == 0:
        joint = [p * w for p, w in zip(prior, win)]
        answer = joint[asked] / sum(joint)
        question = (f"Given only that drawing stopped because the red threshold was reached, what is the probability "
                    f"that urn {_ROMAN[asked]} was the urn used?")
    else:
        first_red = [Fraction(a, a + b) for a, b, _, _ in need]
        after_red = [_red_first(a + 1, b, r - 1, bl) for a, b, r, bl in need]
        after_blue = [_red_first(a, b + 1, r, bl - 1) for a, b, r, bl in need]
        if question_kind == 1:
            colour = rng.choice(["red", "blue"])
            seen = [f if colour == "red" else 1 - f for f in first_red]
            then = after_red if colour == "red" else after_blue
            answer = sum(p * s * t for p, s, t in zip(prior, seen, then)) / sum(p * s for p, s in zip(prior, seen))
            question = (f"You are told only that the first ball drawn was {colour}. Given this, what is the "
                        "probability that drawing stops because the red threshold is reached?")
        else:
            answer = (sum(p * f * t for p, f, t in zip(prior, first_red, after_red))
                      / sum(p * w for p, w in zip(prior, win)))
            question = ("Given only that drawing stopped because the red threshold was reached, what is the "
                        "probability that the first ball drawn was red?")
    if answer in (0, 1):
        return urn_posterior(rng.fork("again"), urns=urns, weight=weight, scale=scale)
    lines, start = [], 1
    for u, ((alpha, beta, d), c) in enumerate(zip(spec, counts)):
        shown = list(range(start, start + c))
        start += c
        die = (f"the die shows {shown[0]}" if c == 1 else
               "the die shows " + ", ".join(map(str, shown[:-1])) + f" or {shown[-1]}")
        lines.append(f"- Urn {_ROMAN[u]} (used if {die}): starts with {alpha * d} red and {beta * d} blue "
                     f"ball{'s' if beta * d > 1 else ''}; "
                     f"after each draw the ball drawn is put back together with {d} more "
                     f"ball{'s' if d > 1 else ''} of the same colour.")
    prompt = (
        f"A fair six-sided die is rolled once and selects one of {urns} urns:\n" + "\n".join(lines)
        + f"\n\nBalls are then drawn one at a time, at random, from the selected urn, following its rule (every ball "
        "in the urn is equally likely to be drawn). Drawing stops as soon as the urn contains at least "
        f"{red_goal} red balls (the red threshold) or at least {blue_goal} blue balls (the blue threshold); one of "
        "the two always happens first. You never see the die or which urn was used.\n\n"
        f"{question}\n\n" + _FRACTION_FORMAT)
    states = sum(r * b for _, _, r, b in need)
    return _exact(prompt, answer, {"chain_states_log10": round(log10(states), 2),
                                   "answer_digits": len(str(answer.numerator)) + len(str(answer.denominator))})


# ---------------------------------------------------------------- counting

_GUESTS = ["Ana", "Bo", "Cyd", "Dov", "Eve", "Fay", "Gus", "Hal", "Ida", "Jon", "Kim", "Lou", "Max", "Ned",
           "Oda", "Pia", "Quin", "Rex", "Sue", "Tom"]
_SLOT = 40  # bits per coefficient of the packed gap polynomials in the seating DP


def _forest_ok(pairs: list[tuple[int, int]]) -> tuple[bool, int]:
    """Whether the pairs form vertex-disjoint simple paths, and how many paths (blocks) they form."""
    degree: dict[int, int] = {}
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for a, b in pairs:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
        if degree[a] > 2 or degree[b] > 2 or root(a) == root(b):
            return False, 0
        parent[root(a)] = root(b)
    return True, len({root(x) for x in degree})


def _seatings(c: int, free: int, together: list[tuple[int, int]], apart: list[tuple[int, int]], circle: bool,
              end: int | None) -> int:
    """Count seatings by a DP over orders of the c constrained people, tracking how many gaps between consecutive
    constrained people hold free people (packed as a polynomial in a big integer); free people are placed last."""
    req = [set() for _ in range(c)]
    forb = [set() for _ in range(c)]
    for a, b in together:
        req[a].add(b)
        req[b].add(a)
    for a, b in apart:
        forb[a].add(b)
        forb[b].add(a)
    first = 0 if circle else end
    starts = [first] if first is not None else range(c)
    layer = {(1 << p, p, 0): 1 for p in starts}
    for _ in range(c - 1):
        nxt: dict[tuple[int, int, int], int] = {}
        for (mask, last, sat), vec in layer.items():
            pending = {r for r in req[last] if not mask >> r & 1}
            if circle and last == first:
                pending = set()  # the first person's partners may also sit at the far end, across the wrap
            for p in range(c):
                if mask >> p & 1:
                    continue
                placed = {r for r in req[p] if mask >> r & 1} - ({first} if circle else set())
                new_sat = sat
                if p in req[last]:
                    if pending - {p} or placed - {last}:
                        continue
                    if circle and last == first:
                        new_sat |= 1 << p
                    key = (mask | 1 << p, p, new_sat)
                    nxt[key] = nxt.get(key, 0) + vec
                    continue
                if pending or placed:
                    continue
                key = (mask | 1 << p, p, sat)
                add = (vec if p not in forb[last] else 0) + (vec << _SLOT)
                nxt[key] = nxt.get(key, 0) + add
        layer = nxt
    total = 0
    for (mask, last, sat), vec in layer.items():
        if circle:
            missing = {r for r in req[first] if not sat >> r & 1}
            touching = (vec if last not in forb[first] and missing <= {last} else 0)
            separated = (vec << _SLOT) if not missing else 0
            vec = touching + separated
        j = 0
        while vec:
            coefficient, vec = vec & ((1 << _SLOT) - 1), vec >> _SLOT
            if circle:
                ways = (1 if free == 0 else 0) if j == 0 else comb(free - 1, j - 1)
            else:
                ways = comb(free, j) if end is not None else comb(free + 1, j + 1)
            total += coefficient * ways
            j += 1
    return total * factorial(free) * (2 if end is not None else 1)


def _ie_terms(together: list[tuple[int, int]], apart: list[tuple[int, int]]) -> int:
    """How many subsets of the 'apart' pairs glue with the 'together' pairs into disjoint paths: the non-zero terms of
    the inclusion–exclusion a solver by hand has to add up."""
    return sum(_forest_ok(together + list(chosen))[0] for k in range(len(apart) + 1)
               for chosen in combinations(apart, k))


def arrangement_count(rng: ItemRng, *, guests: int = 14, together: int = 3, apart: int = 6) -> Generated:
    """Seatings of guests in a row or round a table with must-sit-together pairs, must-not-sit-together pairs and
    sometimes a guest who must take an end chair: too many to list, counted by a DP over the constrained guests."""
    centre = guests
    while True:
        guests = centre + rng.choice([-1, 0, 1])  # the party size and the rule count vary around the drivers,
        apart_here = apart + rng.choice([-1, 0, 1])  # so that isomorphic rule sets (equal counts) stay rare
        together_here = max(1, together + rng.choice([-1, 0, 0, 1]))
        circle = rng.randrange(3) == 0
        c = min(guests - 2, rng.randint(6, 8))
        names = rng.sample(_GUESTS, guests)
        pairs_all = [(a, b) for a in range(c) for b in range(a + 1, c)]
        rng.shuffle(pairs_all)
        req: list[tuple[int, int]] = []
        for pair in pairs_all:
            if len(req) < together_here and _forest_ok(req + [pair])[0]:
                req.append(pair)
        degree = [sum(p in pair for pair in req) for p in range(c)]
        component = list(range(c))
        for a, b in req:  # components of the together-graph (small, so relabel by scanning)
            old, new = component[a], component[b]
            component = [new if x == old else x for x in component]
        end = None
        if not circle and rng.randrange(2):
            end = rng.choice([p for p in range(c) if degree[p] < 2])
        # An apart pair bites only if both can have a free side: not a chain's middle guest, not two guests of one
        # chain, and not the end-chair guest when a together partner already takes their only inner side.
        options = [(a, b) for a, b in pairs_all if (a, b) not in req and degree[a] < 2 and degree[b] < 2
                   and component[a] != component[b] and not (end in (a, b) and degree[end] == 1)]
        if len(options) < apart_here:
            continue
        forb = options[:apart_here]
        count = _seatings(c, guests - c, req, forb, circle, end)
        if 10 ** 6 <= count <= 10 ** 15:
            break
    # Present the pairs; a triangle of 'apart' pairs is stated as one group rule.
    forb_set = {tuple(sorted(p)) for p in forb}
    rules = [f"{names[a]} and {names[b]} must sit next to each other." for a, b in req]
    groups = []
    for x, y, z in combinations(range(c), 3):
        tri = {(x, y), (x, z), (y, z)}
        if tri <= forb_set:
            groups.append(tri)
            forb_set -= tri
            rules.append(f"No two of {names[x]}, {names[y]} and {names[z]} may sit next to each other.")
    rules += [f"{names[a]} and {names[b]} must not sit next to each other." for a, b in sorted(forb_set)]
    if end is not None:
        rules.append(f"{names[end]} must sit in one of the two end chairs (chair 1 or chair {guests}).")
    rng.shuffle(rules)
    everyone = ", ".join(sorted(names)[:-1]) + " and " + sorted(names)[-1]
    if circle:
        setting = (f"{guests} chairs are arranged evenly around a round table. Two seatings count as the same if one "
                   "is a rotation of the other (everyone has the same left-hand and right-hand neighbours); mirror "
                   "images count as different. Two guests sit next to each other when their chairs are adjacent "
                   "around the table.")
    else:
        setting = (f"{guests} chairs stand in a single straight row, numbered 1 to {guests} from left to right. "
                   "Two guests sit next to each other when their chair numbers differ by 1.")
    prompt = (f"{guests} guests — {everyone} — are to be seated, one guest per chair. {setting}\n\n"
              "The seating must satisfy all of the following:\n" + "\n".join(f"- {r}" for r in rules)
              + "\n\nHow many different seatings satisfy every condition?\n\n"
              "End your response with a final line `ANSWER: <n>`, where <n> is the count as an integer.")
    return _exact(prompt, Fraction(count), {"ie_terms": _ie_terms(req, forb), "enumeration_log10":
                                            round(log10(factorial(guests - (1 if circle else 0))), 2)})


# ---------------------------------------------------------------- tax ledger


def _money(x: Fraction | int) -> str:
    """Whole dollars with thousands separators and a minus sign for negatives (case amounts are whole dollars)."""
    x = Fraction(x)
    assert x.denominator == 1
    return ("-" if x < 0 else "") + f"${abs(int(x)):,}"


def _decimal(x: Fraction) -> str:
    """An exact terminating decimal for a Fraction whose denominator divides a power of ten."""
    places = next(k for k in range(12) if (x * 10**k).denominator == 1)
    digits = f"{abs(x.numerator * 10**places // x.denominator):0{places + 1}d}"
    text = digits if places == 0 else f"{digits[:-places]}.{digits[-places:]}"
    return ("-" if x < 0 else "") + text


_CENT_PARTS = 10**8  # the tax solver counts in 1e-8 dollars: every figure the code produces is a whole number of them


def _pc(rate: int, amount: int) -> int:
    """rate% of an amount in solver units, exactly (the code's percentages never leave the 1e-8 grid)."""
    value, rest = divmod(rate * amount, 100)
    assert rest == 0, "a percentage left the exact grid"
    return value


def _take(pots: list[list], limit: int) -> int:
    """Use carried-forward pots [origin year, amount, ...] oldest first, up to limit; return the amount used."""
    used = 0
    for pot in pots:
        if used >= limit:
            break
        step = min(pot[1], limit - used)
        if step > 0:
            pot[1] -= step
            used += step
    return used


_AMENDMENT_KINDS = ["rate", "relief", "donation", "taper", "green", "child", "capital", "pension", "surcharge"]


def _tax_years(case: list[dict], base: dict, amendments: list[dict], first_year: int) -> tuple[list[dict], int]:
    """Apply the code year by year in exact integer units; return each year's tax due and balance (as Fractions)
    and how many rule applications actually bit (caps, carry-forwards used or lapsing, phase-outs, amendments)."""
    unit = _CENT_PARTS
    loss_cf: list[list] = []      # [origin year, amount] business losses carried forward
    capital_cf: list[list] = []
    donation_cf: list[list] = []  # [origin year, amount, last usable year]
    green_cf: list[list] = []
    events = 0
    out = []
    for offset, row in enumerate(case):
        year = first_year + offset
        p = dict(base)
        child_exception, exception_floor, lapse_before, half_gain, keep = False, None, None, False, 3
        for a in amendments:
            if year < a["year"]:
                continue
            kind = a["kind"]
            if kind == "rate":
                p["r2"] = a["r2"] if a.get("until") is None or year < a["until"] else a["r2_later"]
            elif kind == "relief":
                p["L"] = a["L"]
            elif kind == "donation":
                p["dp"], keep = a["dp"], 1
            elif kind == "taper":
                p["T0"] = a["T0"]
            elif kind == "green":
                lapse_before = a["year"]
            elif kind == "child":
                child_exception = True
                if a.get("floor_from") is not None and year >= a["floor_from"]:
                    exception_floor = a["floor"] * unit
            elif kind == "capital":
                p["cg"], half_gain = a["cg"], True
            elif kind == "pension":
                p["PM"] = a["PM"]
            elif kind == "surcharge":
                p["sr"], p["sq"] = a["sr"], a["sq"]
        events += any(p[k] != base[k] for k in ("r2", "L", "dp", "T0", "cg", "PM", "sr", "sq"))
        wages, result, capital = row["wages"] * unit, row["business"] * unit, row["capital"] * unit
        # §1-§2 business result and pension
        relief = 0
        if result < 0:
            relief = min(-result, p["L"] * unit, wages)
            events += relief > 0
            if -result - relief > 0:
                loss_cf.append([year, -result - relief])
            business = 0
        else:
            used = _take(loss_cf, result)
            events += used > 0
            business = result - used
        pension = min(row["pension"] * unit, _pc(p["pp"], wages), p["PM"] * unit)
        events += pension < row["pension"] * unit
        ordinary = max(0, wages + business - relief - pension)
        # §3 capital result
        offset_cl, net_gain = 0, 0
        if capital > 0:
            used = _take(capital_cf, capital // 2 if half_gain else capital)
            events += used > 0
            net_gain = capital - used
        elif capital < 0:
            offset_cl = min(-capital, p["CL"] * unit, ordinary)
            events += offset_cl > 0
            if -capital - offset_cl > 0:
                capital_cf.append([year, -capital - offset_cl])
        adjusted = ordinary - offset_cl + net_gain
        # §5 allowance
        allowance = max(0, p["A0"] * unit - max(0, adjusted - p["T0"] * unit) // 2)
        events += allowance < p["A0"] * unit
        remaining = max(0, ordinary - offset_cl - allowance)
        # §6 donations: carried forward first, oldest first, then this year's
        donation_cf = [pot for pot in donation_cf if pot[2] >= year]
        limit = min(_pc(p["dp"], adjusted), remaining)
        used_cf = _take(donation_cf, limit)
        events += used_cf > 0
        own = min(row["donations"] * unit, limit - used_cf)
        events += own < row["donations"] * unit
        events += any(pot[1] > 0 and pot[2] == year for pot in donation_cf)  # lapsing at this year's end
        if row["donations"] * unit - own > 0:
            donation_cf.append([year, row["donations"] * unit - own, year + keep])
        taxable = remaining - used_cf - own
        # §8 income tax
        b1, b2 = p["b1"] * unit, p["b2"] * unit
        left = (_pc(p["r1"], min(taxable, b1)) + _pc(p["r2"], max(0, min(taxable, b2) - b1))
                + _pc(p["r3"], max(0, taxable - b2)) + _pc(p["cg"], net_gain))
        # §9-§11 credits
        spared = child_exception and result < 0 and (exception_floor is None or -result > exception_floor)
        child = p["cc"] * row["children"] * unit
        if not spared and row["children"]:
            reduced = max(0, child - _pc(p["ph"], max(0, adjusted - p["T1"] * unit)))
            events += reduced < child
            child = reduced
        elif spared and row["children"] and adjusted > p["T1"] * unit:
            events += 1  # the exception saved the credit from its phase-out
        events += child > left
        left -= min(child, left)
        green_cf = [pot for pot in green_cf if pot[0] + 2 >= year]
        if lapse_before is not None:
            events += any(pot[1] > 0 and pot[0] < lapse_before for pot in green_cf)
            green_cf = [pot for pot in green_cf if pot[0] >= lapse_before]
        used_green = _take(green_cf, left)
        events += used_green > 0
        left -= used_green
        own_green = _pc(p["gr"], row["green"] * unit)
        applied_green = min(own_green, left)
        left -= applied_green
        if own_green - applied_green > 0:
            green_cf.append([year, own_green - applied_green])
            events += 1
        events += any(pot[1] > 0 and pot[0] + 2 == year for pot in green_cf)  # lapsing at this year's end
        surcharge = _pc(p["sr"], max(0, left - p["sq"] * unit))
        events += surcharge > 0
        due = left + surcharge
        out.append({"year": year, "due": Fraction(due, unit), "balance": Fraction(due - row["withheld"] * unit, unit)})
    return out, events


def _amendment(rng: ItemRng, kind: str, base: dict, first: int, years: int) -> dict:
    """One amendment of the given kind, in force from a year after the first."""
    a = {"kind": kind, "year": first + rng.randint(1, years - 1)}
    if kind == "rate":
        a["r2"] = base["r2"] + rng.choice([-4, -3, -2, 2, 3, 4])
        if rng.randrange(2) and a["year"] < first + years - 1:
            a["until"] = rng.randint(a["year"] + 1, first + years - 1)
            a["r2_later"] = a["r2"] + rng.choice([-2, -1, 1, 2])
    elif kind == "relief":
        a["L"] = max(1000, base["L"] + rng.choice([-1, 1]) * rng.randint(2, 8) * 500)
    elif kind == "donation":
        a["dp"] = base["dp"] + rng.choice([-5, -3, 3, 5])
    elif kind == "taper":
        a["T0"] = base["T0"] + rng.choice([-1, 1]) * rng.randint(10, 40) * 500
    elif kind == "child":
        if rng.randrange(2) and a["year"] < first + years - 1:
            a["floor_from"] = rng.randint(a["year"] + 1, first + years - 1)
            a["floor"] = rng.randint(4, 30) * 500
    elif kind == "capital":
        a["cg"] = base["cg"] + rng.choice([-4, -2, 3, 5])
    elif kind == "pension":
        a["PM"] = base["PM"] + rng.choice([-1, 1]) * rng.randint(2, 6) * 250
    elif kind == "surcharge":
        a["sr"] = base["sr"] + rng.choice([-2, -1, 1, 2, 3])
        a["sq"] = base["sq"] + rng.choice([-1, 1]) * rng.randint(2, 8) * 500
    return a


def tax_ledger(rng: ItemRng, *, years: int = 5, amendments: int = 5, corrections: int = 2) -> Generated:
    """A taxpayer's multi-year case under a tax code with carry-forwards, caps, phase-outs and later amendments."""
    first = rng.randint(2014, 2031)
    base = {"L": rng.randint(6, 20) * 500, "CL": rng.randint(2, 6) * 500, "A0": rng.randint(16, 30) * 500,
            "T0": rng.randint(80, 170) * 500, "dp": rng.randint(8, 20), "b1": rng.randint(10, 25) * 1000,
            "r1": rng.randint(8, 14), "r2": rng.randint(20, 28), "r3": rng.randint(35, 45),
            "cg": rng.randint(10, 20), "cc": rng.randint(5, 15) * 100, "T1": rng.randint(100, 200) * 500,
            "ph": rng.randint(2, 8), "gr": rng.randint(10, 30), "pp": rng.randint(4, 12),
            "PM": rng.randint(6, 24) * 250, "sr": rng.randint(3, 9), "sq": rng.randint(8, 30) * 500}
    base["b2"] = base["b1"] + rng.randint(20, 45) * 1000
    case, children = [], rng.randint(0, 2)
    loss_year = rng.randrange(years - 1)  # at least one business loss before the last year, to carry forward
    for y in range(years):
        children = min(4, children + (rng.randrange(3) == 0))
        loss = y == loss_year or rng.randrange(3) == 0
        case.append({
            "wages": rng.randint(16, 150) * 500,
            "business": -rng.randint(4, 90) * 250 if loss else rng.randint(1, 160) * 250,
            "capital": (-rng.randint(5, 120) * 100 if rng.randrange(5) < 2 else
                        rng.choice([0, rng.randint(5, 300) * 100])),
            "donations": rng.choice([0, rng.randint(2, 40) * 100, rng.randint(20, 200) * 100]),
            "children": children,
            "green": rng.choice([0, rng.randint(8, 120) * 250]),
            "pension": rng.choice([0, rng.randint(4, 60) * 100, rng.randint(30, 120) * 100]),
        })
        case[-1]["withheld"] = rng.randint(5, 30) * case[-1]["wages"] // 100 // 10 * 10
    last = first + years - 1
    total = rng.randrange(2) == 1
    plain = _tax_years(case, base, [], first)[0]
    if plain[-1]["due"] <= 0 or sum(r["due"] > 0 for r in plain) < 2:  # a zero tax would make a guessable key
        return tax_ledger(rng.fork("again"), years=years, amendments=amendments, corrections=corrections)

    def outcome(figures: list[dict], amended: list[dict]) -> tuple[Fraction, int, list[dict]]:
        results, events = _tax_years(figures, base, amended, first)
        return (sum(r["due"] for r in results) if total else results[-1]["balance"]), events, results

    # Corrections to the filed figures, each redrawn until using the filed figure instead would change the answer.
    shown = [dict(r) for r in case]
    fixes = []
    cells = [(i, c) for i in range(years) for c in ("wages", "pension", "business", "capital", "donations", "green")]
    for _ in range(corrections):
        plain = outcome(case, [])[0]
        for _ in range(30):
            offset, column = rng.choice(cells)
            old_value = shown[offset][column]
            new_value = old_value + rng.choice([-1, 1]) * rng.randint(2, 40) * 250
            if column not in ("business", "capital"):
                new_value = abs(new_value)
            trial = [dict(r) for r in case]
            trial[offset][column] = new_value
            if new_value != old_value and outcome(trial, [])[0] != plain:
                break
        cells.remove((offset, column))
        case = trial
        fixes.append((first + offset, column, new_value, old_value))
    # Amendments are added one kind at a time, each kept only if it changes the answer.
    chosen: list[dict] = []
    for kind in rng.sample(_AMENDMENT_KINDS, len(_AMENDMENT_KINDS)):
        if len(chosen) == amendments:
            break
        now = outcome(case, chosen)[0]
        for _ in range(5):
            trial = chosen + [_amendment(rng, kind, base, first, years)]
            if outcome(case, trial)[0] != now:
                chosen = trial
                break
    chosen.sort(key=lambda a: a["year"])
    # Finally every amendment and every correction must still matter with all the others in place: none can be
    # skipped. A case that cannot carry them all is redrawn.
    answer = outcome(case, chosen)[0]
    filed = lambda i: [dict(r, **({c: o} if y == first + k else {}))  # noqa: E731 (case with fix i undone)
                       for k, r in enumerate(case) for (y, c, _, o) in [fixes[i]]]
    if len(chosen) < amendments or any(outcome(case, chosen[:i] + chosen[i + 1:])[0] == answer
                                       for i in range(len(chosen))) or \
            any(outcome(filed(i), chosen)[0] == answer for i in range(len(fixes))):
        return tax_ledger(rng.fork("again"), years=years, amendments=amendments, corrections=corrections)
    answer, events, results = outcome(case, chosen)
    if results[-1]["due"] <= 0 or sum(r["due"] > 0 for r in results) < 2:  # a zero tax would make a guessable key
        return tax_ledger(rng.fork("again"), years=years, amendments=amendments, corrections=corrections)
    if total:
        question = f"What is the total tax due (as defined in §13) over the tax years {first} to {last} together?"
    else:
        question = f"What is the balance for tax year {last} (tax due minus tax withheld; negative means a refund)?"
    pct = lambda x: f"{x}%"  # noqa: E731
    rules = [
        f"§1 Business losses. A business result below $0 is a business loss. Up to {_money(base['L'])} of a year's "
        "business loss, but not more than that year's wages, is set against the wages of the same year (the loss "
        "relief). The rest of the loss is carried forward. In later years, business losses carried forward are "
        "deducted only from business profit (a business result above $0), oldest loss first, up to the amount of "
        "that year's profit; whatever is not used stays available for later years, without time limit.",
        f"§2 Pension deduction = the year's pension contributions, but at most {pct(base['pp'])} of that year's wages "
        f"and at most {_money(base['PM'])}; the excess is lost. Ordinary income = wages + (business profit minus the "
        "carried-forward losses deducted from it) - loss relief - pension deduction (never below $0).",
        "§3 Capital results. Capital losses carried forward are deducted from a year's capital gain (a capital result "
        "above $0) first, oldest first, up to the amount of the gain; what remains of the gain is the net capital "
        f"gain. If the year's capital result is a loss, up to {_money(base['CL'])} of it, but not more than the "
        "ordinary income, is deducted from ordinary income (the capital loss offset); the rest is carried forward "
        "without time limit and can only be deducted from later capital gains.",
        "§4 Adjusted income = ordinary income - capital loss offset + net capital gain.",
        f"§5 Personal allowance = {_money(base['A0'])}, reduced by 50% of the amount by which adjusted income exceeds "
        f"{_money(base['T0'])} (never below $0).",
        "§6 Donations. The donation deduction of a year uses the available donations in this order: donations "
        "carried forward from earlier years, oldest first, then the year's own donations. It is limited to the "
        f"smaller of {pct(base['dp'])} of adjusted income and the ordinary income that remains after the capital "
        "loss offset and the personal allowance (never below $0). The part of a year's own donations that is not "
        "deducted in that year may be carried forward to the following 3 tax years; whatever of it is still unused "
        "after the third of those years lapses.",
        "§7 Taxable income = ordinary income - capital loss offset - personal allowance - donation deduction "
        "(never below $0).",
        f"§8 Income tax = {pct(base['r1'])} of taxable income up to {_money(base['b1'])}, plus {pct(base['r2'])} of "
        f"the part of taxable income from {_money(base['b1'])} to {_money(base['b2'])}, plus {pct(base['r3'])} of the "
        f"part above {_money(base['b2'])}, plus capital gains tax of {pct(base['cg'])} of the net capital gain.",
        f"§9 Child credit = {_money(base['cc'])} per child, reduced by {pct(base['ph'])} of the amount by which "
        f"adjusted income exceeds {_money(base['T1'])} (never below $0).",
        f"§10 Green credit = {pct(base['gr'])} of the year's green investment.",
        "§11 Credits reduce the year's income tax, but never below $0; nothing is paid out. They are applied in this "
        "order: the child credit; then green credits carried forward, oldest first; then the year's own green "
        "credit. An unused child credit lapses. The unused part of a year's own green credit may be carried forward "
        "to the following 2 tax years; whatever of it is still unused after the second of those years lapses.",
        f"§12 Surcharge = {pct(base['sr'])} of the amount by which the income tax after credits exceeds "
        f"{_money(base['sq'])} (never below $0).",
        "§13 Tax due = income tax - credits applied + surcharge. Balance = tax due - tax withheld (a negative balance "
        "is a refund).",
    ]
    texts = []
    for n, a in enumerate(chosen, 1):
        y, kind = a["year"], a["kind"]
        if kind == "rate":
            text = (f"With effect from tax year {y}, the rate in §8 for the part of taxable income from "
                    f"{_money(base['b1'])} to {_money(base['b2'])} is {pct(a['r2'])}.")
            if a.get("until"):
                text += (f" This amendment is itself replaced with effect from tax year {a['until']}: from that "
                         f"year on, that rate is {pct(a['r2_later'])}.")
        elif kind == "relief":
            text = f"With effect from tax year {y}, the limit on the loss relief in §1 is {_money(a['L'])}."
        elif kind == "donation":
            text = (f"With effect from tax year {y}, the limit in §6 is the smaller of {pct(a['dp'])} of adjusted "
                    "income and the remaining ordinary income, and the undeducted part of the own donations of "
                    f"tax year {y} or any later year may be carried forward to the following 1 tax year only "
                    "(undeducted donations of earlier years keep their 3 years).")
        elif kind == "taper":
            text = (f"With effect from tax year {y}, the reduction of the personal allowance in §5 applies to the "
                    f"amount by which adjusted income exceeds {_money(a['T0'])}.")
        elif kind == "green":
            text = (f"With effect from tax year {y}, green credits carried forward that arose in tax years before "
                    f"{y} can no longer be used; they lapse.")
        elif kind == "child":
            text = (f"With effect from tax year {y}, the reduction of the child credit in §9 does not apply in a tax "
                    "year in which the business result is a loss.")
            if a.get("floor_from"):
                text += (f" With effect from tax year {a['floor_from']}, this exception applies only when the "
                         f"business loss is more than {_money(a['floor'])}.")
        elif kind == "pension":
            text = (f"With effect from tax year {y}, the upper limit of the pension deduction in §2 is "
                    f"{_money(a['PM'])}.")
        elif kind == "surcharge":
            text = (f"With effect from tax year {y}, the surcharge in §12 is {pct(a['sr'])} of the amount by which "
                    f"the income tax after credits exceeds {_money(a['sq'])}.")
        else:
            text = (f"With effect from tax year {y}, the capital gains tax rate in §8 is {pct(a['cg'])}, and capital "
                    "losses carried forward may be deducted from at most 50% of a year's capital gain (§3).")
        texts.append(f"A{n}. {text}")
    header = ["Year", "Wages", "Pension contributions", "Business result", "Capital result", "Donations", "Children",
              "Green investment", "Tax withheld"]
    table = [" | ".join(header)] + [" | ".join([str(first + i), _money(r["wages"]), _money(r["pension"]),
                                               _money(r["business"]),
                                               _money(r["capital"]), _money(r["donations"]), str(r["children"]),
                                               _money(r["green"]), _money(r["withheld"])])
                                     for i, r in enumerate(shown)]
    labels = {"wages": "wages", "pension": "pension contributions", "business": "business result",
              "capital": "capital result", "donations": "donations", "green": "green investment"}
    notes = "".join(f"\nCorrection: the {labels[column]} figure for {year} is {_money(new)}, not {_money(old)} as "
                    "shown in the table; use the corrected figure." for year, column, new, old in fixes)
    prompt = (
        "The personal income tax code of the Republic of Ostria (consolidated extract) is below. All amounts are "
        "in dollars. Nothing is rounded at any stage. Tax years are computed one after another, and amounts "
        "carried forward pass from one year to the next.\n\n" + "\n".join(rules)
        + "\n\nAmendments (each applies from the tax year it names onward; where an amendment sets an amount or a "
        "rate, that value replaces the one in the code from that year on):\n"
        + ("\n".join(texts) if texts else "(none)")
        + f"\n\nA taxpayer's figures for tax years {first} to {last} (no amounts were carried forward into {first}):\n"
        + "\n".join(table) + notes
        + f"\n\n{question}\n\nEnd your response with a final line `ANSWER: <amount>`, where <amount> is the exact "
        "amount in dollars as a plain decimal number without rounding or a currency sign (e.g. 1234.5675 or -87.25).")
    text = _decimal(answer)
    return Generated(prompt=prompt, key=ExactKey(answer=text, answer_type="number"),
                     reference=f"Working omitted.\nANSWER: {text}",
                     difficulty={"rule_applications": events, "prompt_tokens": len(prompt) // 4})
