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
    """[sum of t**e for t in 0..count-1] for e = 0..degree, exactly (the recurrence behind Faulhaber's formulas)."""
    n = count
    sums: list[int] = []
    for e in range(degree + 1):  # n^(e+1) = sum_{i<=e} C(e+1, i) S_i
        value = n ** (e + 1) - sum(comb(e + 1, i) * sums[i] for i in range(e))
        assert value % (e + 1) == 0
        sums.append(value // (e + 1))
    return sums


def _progression_sum(coefficients: list[int], first: int, step: int, count: int) -> int:
    """Sum of the polynomial with the given coefficients (constant first) over first, first+step, ... (count terms)."""
    # Re-expand the polynomial in t where x = first + step * t, then use the power sums of t.
    in_t = [0] * len(coefficients)
    for e, c in enumerate(coefficients):
        for i in range(e + 1):  # (first + step t)^e = sum C(e, i) first^(e-i) step^i t^i
            in_t[i] += c * comb(e, i) * first ** (e - i) * step ** i
    return sum(c * s for c, s in zip(in_t, _power_sums(count, len(in_t) - 1)))


def _rising(offset: int, width: int) -> list[int]:
    """The polynomial prod_{i=1..width} (j + offset + i) in j, constant coefficient first."""
    poly = [1]
    for i in range(1, width + 1):
        poly = [a + b for a, b in zip([0] + poly, [(offset + i) * c for c in poly] + [0])]
    return poly


def _evaluate(poly: list[int], x: int) -> int:
    return sum(c * x ** e for e, c in enumerate(poly))


# ---------------------------------------------------------------- tanks

_TANK_VOLUMES = [30, 36, 40, 45, 48, 60, 72, 80, 90, 120]


def tank_mixing(rng: ItemRng, *, horizon: int = 4, order: int = 1, dosings: int = 3) -> Generated:
    """Three equal tanks in a line: the middle one (the hub) exchanges a shrinking volume with each end tank every day
    for N days, while salt is dosed on periodic schedules.

    The exchange is I - (x_k/V) L with L the Laplacian of the path end-hub-end; its eigenvectors (1,1,1), (1,0,-1) and
    (1,-2,1) do not depend on k, so the three modes evolve separately: the mean is invariant, the end-to-end
    difference scales by 1 - x_k/V = (k+a)/(k+a+s) and the hub-versus-ends mode by 1 - 3x_k/V = (k+a-2s)/(k+a+s).
    Both products telescope (with shifts s and 3s), and the doses enter each mode linearly as progression sums of
    polynomials of degree s and 3s. Closed form, no simulation.
    """
    if not 1 <= order <= 2:
        raise ValueError("order must be 1 or 2 (the hub mode's weights have degree 3 * order)")
    s = order
    alpha = rng.randint(2 * s, 2 * s + 3)
    volume = rng.choice(_TANK_VOLUMES)
    names = ["A", "B", "C"]
    hub = rng.choice(names)
    ends = [n for n in names if n != hub]
    start = dict(zip(names, rng.sample(range(0, 61), 3)))
    days = rng.randint(10 ** (horizon - 1) + 1, 10 ** horizon - 1)
    daily = f"{volume * s}/(k + {alpha + s})"  # x_k litres on day k
    end_poly = _rising(alpha, s)            # difference of the end tanks: q1(j) = (j+a+1)...(j+a+s)
    hub_poly = _rising(alpha - 2 * s, 3 * s)  # hub mode: q2(j) = (j+a-2s+1)...(j+a+s)

    schedules, lines, used = [], [], set()
    while len(schedules) < dosings:
        tank, grams = rng.choice(names), rng.randint(1, 24)
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
        if key in used or (len(schedules) == dosings - 1 and all(t == hub for t, *_ in schedules + [(tank,)])):
            continue
        used.add(key)
        schedules.append((tank, grams, first, step, count))
        lines.append(text)

    c = {n: Fraction(start[n]) for n in names}
    salt = volume * sum(c.values())
    ends_diff = (c[ends[0]] - c[ends[1]]) / 2 * _evaluate(end_poly, 0)     # scaled by q1(N) at the end
    hub_mode = (c[ends[0]] + c[ends[1]] - 2 * c[hub]) / 6 * _evaluate(hub_poly, 0)  # scaled by q2(N)
    events = 0
    for tank, grams, first, step, count in schedules:
        kick = Fraction(grams, volume)
        if tank != hub:
            ends_diff += (kick / 2 if tank == ends[0] else -kick / 2) * _progression_sum(end_poly, first, step, count)
            hub_mode += kick / 6 * _progression_sum(hub_poly, first, step, count)
        else:
            hub_mode -= kick / 3 * _progression_sum(hub_poly, first, step, count)
        salt += grams * count
        events += count
    mean = Fraction(salt, 3 * volume)
    d1 = ends_diff / _evaluate(end_poly, days)
    d2 = hub_mode / _evaluate(hub_poly, days)
    conc = {ends[0]: mean + d1 + d2, ends[1]: mean - d1 + d2, hub: mean - 2 * d2}
    target = rng.choice(names)
    kind = rng.randrange(3)
    if kind == 0:
        question, answer = f"the salt concentration of tank {target}, in grams per litre", conc[target]
    elif kind == 1:
        question, answer = f"the mass of salt in tank {target}, in grams", conc[target] * volume
    else:
        one, two = rng.sample([hub, rng.choice(ends)], 2)  # the hub is always involved: all three modes count
        question = (f"the mass of salt in tank {one} minus the mass of salt in tank {two}, in grams (negative if tank "
                    f"{two} holds more)")
        answer = (conc[one] - conc[two]) * volume
    hub_text = (f"at the same moment, x_k litres are drawn out of tank {ends[0]}, x_k litres out of tank {ends[1]} "
                f"and 2x_k litres out of tank {hub}, where x_k = {daily} litres. The liquid drawn from {ends[0]} and "
                f"the liquid drawn from {ends[1]} are both poured into tank {hub}; the 2x_k litres drawn from {hub} "
                f"are split into two equal parts, one poured into tank {ends[0]} and the other into tank {ends[1]}. "
                "Then all three tanks are stirred.")
    prompt = (
        "Three tanks, A, B and C, hold brine (salt dissolved in water). The liquid in each tank is perfectly mixed "
        "at all times, and when liquids are combined their volumes and their salt simply add.\n\n"
        f"At the start, each tank holds {volume} litres of brine: tank A at {start['A']} grams of salt per litre, "
        f"tank B at {start['B']} grams per litre and tank C at {start['C']} grams per litre.\n\n"
        "Every day k = 1, 2, 3, ... the following happens, in this order:\n"
        f"1. Transfer: {hub_text} The volume of every tank is therefore the same at the end of every day as at the "
        "start.\n"
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


Window = list[tuple[Fraction, Fraction | None]]  # the intervals [start, end) in which a worker can work; None: open


def _crew_pieces(windows: list[Window], release: list[Fraction]) -> list[tuple[Fraction, Fraction | None, list[int],
                                                                             list[int]]]:
    """Time pieces [start, end) (end None: open) with the workers available and the jobs released in each."""
    cuts = sorted({Fraction(0)} | set(release) | {t for w in windows for span in w for t in span if t is not None})
    out = []
    for i, start in enumerate(cuts):
        end = cuts[i + 1] if i + 1 < len(cuts) else None
        here = [k for k, w in enumerate(windows) if any(a <= start and (b is None or b > start) for a, b in w)]
        out.append((start, end, here, [j for j, r in enumerate(release) if r <= start]))
    return out


def _crew_optimum(speeds, caps, work, windows, release) -> tuple[Fraction, dict[tuple[int, ...], Fraction]]:
    """Every group's bound and the largest of them, which is the optimum (the capped rate regions of the pieces are
    polymatroids and so is their sum, so the largest bound is attained). A group's bound is the earliest T by which
    it can have absorbed its work: at every moment the group can use at most its released jobs' crew limits' worth
    of the fastest available workers."""
    pieces = _crew_pieces(windows, release)
    n = len(work)
    cap_of, work_of = [0] * (1 << n), [0] * (1 << n)
    for m in range(1, 1 << n):
        low = (m & -m).bit_length() - 1
        cap_of[m], work_of[m] = cap_of[m & (m - 1)] + caps[low], work_of[m & (m - 1)] + work[low]
    table = []
    for start, end, here, released in pieces:
        fast = sorted((speeds[k] for k in here), reverse=True)
        prefix = [0]
        for v in fast:
            prefix.append(prefix[-1] + v)
        table.append((start, end, prefix, sum(1 << j for j in released)))
    bounds = {}
    for m in range(1, 1 << n):
        goal, done = work_of[m], 0
        for start, end, prefix, rmask in table:
            rate = prefix[min(cap_of[m & rmask], len(prefix) - 1)]
            if end is None or (rate and done + rate * (end - start) >= goal):
                bounds[tuple(j for j in range(n) if m >> j & 1)] = start + (goal - done) / rate
                break
            done += rate * (end - start)
    return max(bounds.values()), bounds


def crew_work(rng: ItemRng, *, sites: int = 8, workers: int = 6, max_crew: int = 3, shifts: int = 2,
              releases: int = 4) -> Generated:
    """Minimum finishing time for jobs with crew caps, release times, workers of different speeds and limited hours.

    Any set J of jobs can at no moment absorb more than the speeds of the fastest available workers, as many as the
    crew limits of J's jobs already released allow; the earliest time at which this time-varying capacity covers
    J's work is a lower bound, and the largest of these bounds is the optimum (a sum of polymatroids over the time
    pieces). Release times make the binding group a mix of early and late jobs, found neither by a knapsack over
    crew limits nor by looking at the late jobs alone.
    """
    names = rng.sample(_WORKER_NAMES, workers)
    while True:
        speeds = [rng.randint(1, 6) for _ in names]
        caps = [rng.randint(1, max_crew) for _ in range(sites)]
        release = [Fraction(0)] * sites
        for j in rng.sample(range(sites), releases):
            release[j] = Fraction(rng.randint(1, 12), 2)
        windows: list[Window] = [[(Fraction(0), None)] for _ in names]
        limited = rng.sample(range(1, workers), min(shifts, workers - 1))  # worker 0 is always there
        for i in limited:
            kind = rng.randrange(3)
            a = Fraction(rng.randint(1, 10), 2)
            if kind == 0:
                windows[i] = [(a, None)]
            elif kind == 1:
                windows[i] = [(Fraction(0), a + 1)]
            else:
                windows[i] = [(Fraction(0), a), (a + Fraction(rng.randint(1, 6), 2), None)]
        # Plant a heavy group of early and late jobs whose crew limits add up to fewer than the crew, then fill in
        # lighter jobs with part of the remaining capacity; the binding group is whatever the bounds then say.
        heavy = rng.sample(range(sites), rng.randint(2, 4))
        if sum(caps[j] for j in heavy) >= workers or len({release[j] == 0 for j in heavy}) < 2:
            continue
        hours = rng.randint(6, 14)
        top = sorted(speeds, reverse=True)
        rate = sum(top[:sum(caps[j] for j in heavy)])
        share = hours * rate * (0.75 + 0.3 * rng.random())
        weights = [caps[j] * (0.6 + 0.8 * rng.random()) for j in heavy]
        work = [0] * sites
        for j, w in zip(heavy, weights):
            work[j] = max(2, round(share * w / sum(weights)))
        rest = [j for j in range(sites) if j not in heavy]
        spare = hours * (sum(speeds) - rate) * (0.4 + 0.5 * rng.random())
        weights = [0.3 + rng.random() for _ in rest]
        for j, w in zip(rest, weights):
            work[j] = max(2, round(spare * w / sum(weights)))
        answer, bounds = _crew_optimum(speeds, caps, work, windows, release)
        tied = [g for g, v in bounds.items() if v == answer]
        binding = min(tied, key=len)
        late_sets = {tuple(j for j in range(sites) if release[j] >= r) for r in set(release)}
        if len(binding) < 2 or any(bounds[g] == answer for g in late_sets) or \
                any(len({release[j] for j in g}) < 2 for g in tied):
            continue
        if _crew_optimum(speeds, caps, work, windows, [Fraction(0)] * sites)[0] == answer:
            continue
        break
    rivals = sum(v >= answer * Fraction(9, 10) for v in bounds.values())
    lines = []
    for j, (w, c) in enumerate(zip(work, caps)):
        when = "" if release[j] == 0 else f"; can only be worked on from {_hours(release[j])} hours after the start"
        lines.append(f"- Job {j + 1}: {w} units of work; at most {c} worker{'s' if c > 1 else ''} at a time{when}.")
    crew = ", ".join(f"{n} {s} unit{'s' if s > 1 else ''} per hour" for n, s in zip(names, speeds))
    limits = []
    for i in limited:
        w = windows[i]
        if len(w) == 2:
            limits.append(f"{names[i]} takes a break from {_hours(w[0][1])} to {_hours(w[1][0])} hours after the "
                          "start (no work in between).")
        elif w[0][1] is None:
            limits.append(f"{names[i]} can only start work {_hours(w[0][0])} hours after the start.")
        else:
            limits.append(f"{names[i]} must stop for good {_hours(w[0][1])} hours after the start.")
    prompt = (
        f"A crew of {workers} workers has to complete {sites} jobs. Each job needs a fixed amount of work, measured in "
        "units, has a limit on how many workers can work on it at the same time, and some jobs cannot be started "
        "before their materials arrive:\n" + "\n".join(lines)
        + f"\n\nThe workers' speeds, in units of work per hour: {crew}."
        + "\nAvailability: " + " ".join(limits) + " Everyone else can work the whole time."
        + "\n\nRules: work starts at time 0. Any worker can work on any job that may be worked on at that moment. At "
        "every moment each worker works on at most one job (or is idle), and the speeds of the workers on the same "
        "job add up. Workers may switch jobs at any moment, as often as they like, with no time lost, and a job may "
        "be worked on by different workers at different times; only the limit on how many work on a job at the same "
        "moment must be respected.\n\n"
        "With the best possible plan, what is the earliest time, in hours after the start, by which every job is "
        "complete?\n\n" + _FRACTION_FORMAT)
    return _exact(prompt, answer, {"rival_groups": rivals, "bottleneck_jobs": len(binding),
                                   "subsets_log10": round(sites * log10(2), 2)})


# ---------------------------------------------------------------- urns

_ROMAN = ["I", "II", "III", "IV", "V", "VI"]
_COLOURS = {"R": "red", "B": "blue", "W": "white"}


def _reach_top(red: int, blue: int, x: int, top: int, bottom: int) -> Fraction:
    """Probability that a counter at x, moving +1 with weight `red` and -1 with weight `blue` (other draws leave it),
    reaches +top before -bottom: gambler's ruin, (1 - rho^(x+bottom)) / (1 - rho^(top+bottom)) with rho = blue/red."""
    if x >= top:
        return Fraction(1)
    if x <= -bottom:
        return Fraction(0)
    if red == blue:
        return Fraction(x + bottom, top + bottom)
    rho = Fraction(blue, red)
    return (1 - rho ** (x + bottom)) / (1 - rho ** (top + bottom))


def _expected_draws(red: int, blue: int, white: int, top: int, bottom: int) -> Fraction:
    """Expected number of draws until the counter started at 0 hits +top or -bottom (Wald's identity; mn moves for a
    fair counter), each draw moving the counter with probability (red + blue) / total."""
    total = red + blue + white
    if red == blue:
        return Fraction(top * bottom * total, red + blue)
    win = _reach_top(red, blue, 0, top, bottom)
    return (top * win - bottom * (1 - win)) * total / (red - blue)


def urn_posterior(rng: ItemRng, *, urns: int = 3, weight: int = 4, reach: int = 9) -> Generated:
    """A die picks one of several urns drawn with replacement; a counter goes up on red, down on blue, and drawing
    stops when it reaches +m or -n; Bayes over the urns.

    Each urn is a gambler's ruin with ratio blue/red (white draws only waste time), and the questions compose it with
    something else: a first-step update of the posterior, the reflection that 'the counter never went below -k and
    reached +m' is 'reached +m before -(k+1)', or Wald's identity for the expected number of draws.
    """
    while True:
        faces = sorted(rng.sample(range(1, 6), urns - 1))
        counts = [b - a for a, b in zip([0] + faces, faces + [6])]
        spec = []
        for _ in range(urns):
            red, blue = rng.randint(1, weight), rng.randint(1, weight)
            spec.append((red, blue, rng.randint(0, 3)))
        top, bottom = rng.randint(max(3, reach - 4), reach + 2), rng.randint(max(3, reach - 4), reach + 2)
        ratios = {Fraction(b, r) for r, b, _ in spec}
        if len(set(spec)) == urns and len(ratios) == urns and top != bottom and any(w for *_, w in spec):
            break
    prior = [Fraction(c, 6) for c in counts]
    win = [_reach_top(r, b, 0, top, bottom) for r, b, _ in spec]
    kind = rng.randrange(4)
    if kind == 0:  # first two draws, then the ruin from the new position with the updated posterior
        seen = rng.choice(["RR", "RB", "BR", "BB", "RW", "WR", "BW", "WB"])
        step = {"R": 1, "B": -1, "W": 0}
        where = sum(step[c] for c in seen)
        like = [p * Fraction((r, b, w)["RBW".index(seen[0])], r + b + w)
                * Fraction((r, b, w)["RBW".index(seen[1])], r + b + w) for p, (r, b, w) in zip(prior, spec)]
        answer = sum(lk * _reach_top(r, b, where, top, bottom) for lk, (r, b, _) in zip(like, spec)) / sum(like)
        question = (f"You are told only that the first ball drawn was {_COLOURS[seen[0]]} and the second ball drawn "
                    f"was {_COLOURS[seen[1]]}. Given this, what is the probability that drawing stops because the "
                    "counter reached the upper limit?")
    elif kind in (1, 2):  # the counter never went below -k: reach +top before -(k+1)
        floor = rng.randint(0, bottom - 2)
        clean = [_reach_top(r, b, 0, top, floor + 1) for r, b, _ in spec]
        below = "below 0" if floor == 0 else f"below -{floor}"
        if kind == 1:
            answer = sum(p * c for p, c in zip(prior, clean)) / sum(p * w for p, w in zip(prior, win))
            question = ("Given only that drawing stopped because the counter reached the upper limit, what is the "
                        f"probability that the counter never went {below} at any time during the drawing?")
        else:
            asked = rng.randrange(urns)
            answer = prior[asked] * clean[asked] / sum(p * c for p, c in zip(prior, clean))
            question = ("You are told only that drawing stopped because the counter reached the upper limit and that "
                        f"the counter never went {below} at any time during the drawing. Given this, what is the "
                        f"probability that urn {_ROMAN[asked]} was the urn used?")
    else:  # Wald's identity per urn, mixed over the die
        whites = rng.randrange(2) == 1
        draws = [_expected_draws(r, b, w, top, bottom) for r, b, w in spec]
        if whites:
            answer = sum(p * d * Fraction(w, r + b + w) for p, d, (r, b, w) in zip(prior, draws, spec))
            question = "What is the expected number of white balls drawn before drawing stops?"
        else:
            answer = sum(p * d for p, d in zip(prior, draws))
            question = "What is the expected number of draws until drawing stops (the final draw included)?"
    if answer in (0, 1) or len(str(answer.numerator)) + len(str(answer.denominator)) > 50:  # hand-sized answers
        return urn_posterior(rng.fork("again"), urns=urns, weight=weight, reach=reach)
    lines, start = [], 1
    for u, ((red, blue, white), c) in enumerate(zip(spec, counts)):
        shown = list(range(start, start + c))
        start += c
        die = (f"the die shows {shown[0]}" if c == 1 else
               "the die shows " + ", ".join(map(str, shown[:-1])) + f" or {shown[-1]}")
        balls = [f"{k} {c} ball{'s' if k > 1 else ''}" for k, c in ((red, "red"), (blue, "blue"), (white, "white"))
                 if k]
        lines.append(f"- Urn {_ROMAN[u]} (used if {die}): " + ", ".join(balls[:-1]) + f" and {balls[-1]}.")
    prompt = (
        f"A fair six-sided die is rolled once and selects one of {urns} urns:\n" + "\n".join(lines)
        + "\n\nBalls are then drawn one at a time from the selected urn, with replacement: each ball drawn is put "
        "back before the next draw, so every draw is from the same contents, and every ball in the urn is equally "
        "likely to be drawn. A counter starts at 0; each red ball drawn adds 1 to it, each blue ball drawn subtracts "
        "1 from it, and a white ball drawn leaves it unchanged. Drawing stops as soon as the counter reaches "
        f"+{top} (the upper limit) or -{bottom} (the lower limit); with probability 1 one of the two happens. You "
        "never see the die or which urn was used.\n\n"
        f"{question}\n\n" + _FRACTION_FORMAT)
    expected = sum(p * _expected_draws(r, b, w, top, bottom) for p, (r, b, w) in zip(prior, spec))
    return _exact(prompt, answer, {"expected_draws": round(float(expected), 1),
                                   "answer_digits": len(str(answer.numerator)) + len(str(answer.denominator))})


# ---------------------------------------------------------------- counting

_GUESTS = ["Ana", "Bo", "Cyd", "Dov", "Eve", "Fay", "Gus", "Hal", "Ida", "Jon", "Kim", "Lou", "Max", "Ned",
           "Oda", "Pia", "Quin", "Rex", "Sue", "Tom"]
_GROUP_WORDS = {"A": ("adult", "adults"), "C": ("child", "children"), "S": ("senior", "seniors")}
_RULE_TEXT = {
    "child": "Every child sits next to at least one adult.",
    "no_ss": "No two seniors sit next to each other.",
    "no_sc": "No senior sits next to a child.",
    "no_aaa": "No adult sits between two other adults (no three adults in three consecutive chairs{wrap}).",
    "end": "Neither of the two end chairs (chair 1 and chair {n}) is taken by a child.",
}


def _type_patterns(counts: dict[str, int], circle: bool, rules: frozenset[str],
                   pair: frozenset[str]) -> tuple[int, int]:
    """How many ways to give every chair a group (A adult, C child, S senior) with the given group sizes so that the
    local rules hold, and the total over those patterns of the number of neighbouring chairs whose groups are `pair`.
    A DP over the chairs that remembers the last two groups."""
    kinds = [k for k in "ACS" if counts.get(k)]
    n = sum(counts.values())

    def pair_ok(x, y):
        if {x, y} == {"S"} and "no_ss" in rules:
            return False
        return not ({x, y} == {"S", "C"} and "no_sc" in rules)

    def middle_ok(x, y, z):  # y sits between x and z (None: no neighbour on that side)
        if y == "C" and "child" in rules and x != "A" and z != "A":
            return False
        return not (x == y == z == "A" and "no_aaa" in rules)

    def hit(x, y):
        return int(frozenset((x, y)) == pair)

    def run(start: dict, stop: int) -> dict:
        layer = start
        for _ in range(stop):
            nxt: dict = {}
            for (left, p2, p1), (count, weight) in layer.items():
                for t in kinds:
                    if not left[kinds.index(t)] or not pair_ok(p1, t) or not middle_ok(p2, p1, t):
                        continue
                    rest = tuple(v - (k == t) for k, v in zip(kinds, left))
                    old = nxt.get((rest, p1, t), (0, 0))
                    nxt[rest, p1, t] = (old[0] + count, old[1] + weight + count * hit(p1, t))
            layer = nxt
        return layer

    full = tuple(counts[k] for k in kinds)
    total, weighted = 0, 0
    if not circle:
        start = {}
        for t in kinds:
            if t == "C" and "end" in rules:
                continue
            start[(tuple(v - (k == t) for k, v in zip(kinds, full)), None, t)] = (1, 0)
        for (left, p2, p1), (count, weight) in run(start, n - 1).items():
            if middle_ok(p2, p1, None) and not (p1 == "C" and "end" in rules):
                total, weighted = total + count, weighted + weight
        return total, weighted
    for t0 in kinds:
        for t1 in kinds:
            left = tuple(v - (k == t0) - (k == t1) for k, v in zip(kinds, full))
            if min(left) < 0 or not pair_ok(t0, t1):
                continue
            for (rest, p2, p1), (count, weight) in run({(left, t0, t1): (1, hit(t0, t1))}, n - 2).items():
                if pair_ok(p1, t0) and middle_ok(p2, p1, t0) and middle_ok(p1, t0, t1):
                    total, weighted = total + count, weighted + weight + count * hit(p1, t0)
    return total, weighted


def _seating_count(counts: dict[str, int], circle: bool, mirror: bool, rules: frozenset[str],
                   named: tuple[str, str], together: bool) -> tuple[int, int]:
    """Seatings of distinct people (group sizes `counts`) satisfying the rules, with the two named people of groups
    named[0], named[1] next to each other (together) or not; and the number of group patterns."""
    pair = frozenset(named)
    patterns, weighted = _type_patterns(counts, circle, rules, pair)
    people = 1
    for k, v in counts.items():
        people *= factorial(v)
    others = 1
    for k, v in counts.items():
        others *= factorial(v - named.count(k))
    adjacent = weighted * others * (2 if named[0] == named[1] else 1)
    count = adjacent if together else patterns * people - adjacent
    n = sum(counts.values())
    symmetries = (2 * n if mirror else n) if circle else 1
    assert count % symmetries == 0
    return count // symmetries, patterns


def arrangement_count(rng: ItemRng, *, guests: int = 15, groups: int = 3, rules: int = 3) -> Generated:
    """Seatings of adults, children and seniors in a row or round a table under neighbour rules that are not pair
    rules (every child next to some adult, no three adults in a row, ...), plus one named pair to seat together or
    apart: too many to list, counted by a DP over the chairs that remembers the last two groups."""
    while True:
        n = guests + rng.choice([-1, 0, 1])
        seniors = rng.randint(2, 4) if groups >= 3 else 0
        children = rng.randint(3, max(3, (n - seniors) // 2))
        counts = {"A": n - seniors - children, "C": children}
        if seniors:
            counts["S"] = seniors
        setting = rng.choice(["row", "row", "circle", "mirror"])
        circle = setting != "row"
        optional = [r for r in ("no_ss", "no_sc", "no_aaa", "end") if (seniors or r not in ("no_ss", "no_sc"))
                    and (not circle or r != "end")]
        chosen = frozenset(["child"] + rng.sample(optional, min(rules - 1, len(optional))))
        kinds = [k for k in "ACS" if counts.get(k)]
        named = tuple(sorted(rng.choice([(x, y) for x in kinds for y in kinds if x <= y]), key="ACS".index))
        if any(counts[k] < named.count(k) for k in kinds):
            continue
        together = rng.randrange(2) == 1
        count, patterns = _seating_count(counts, circle, setting == "mirror", chosen, named, together)
        if not 10 ** 5 <= count <= 10 ** 16 or patterns < 100:
            continue
        # every rule must matter: dropping any one of them (or the named pair's condition) changes the count
        if any(_seating_count(counts, circle, setting == "mirror", chosen - {r}, named, together)[0] == count
               for r in chosen):
            continue
        if _seating_count(counts, circle, setting == "mirror", chosen, named, not together)[0] == count:
            continue
        break
    names = rng.sample(_GUESTS, n)
    members, at = {}, 0
    for k in kinds:
        members[k] = sorted(names[at:at + counts[k]])
        at += counts[k]
    first, second = rng.sample(members[named[0]], 2) if named[0] == named[1] else \
        (rng.choice(members[named[0]]), rng.choice(members[named[1]]))
    lists = "; ".join(f"the {_GROUP_WORDS[k][1]} are " + ", ".join(members[k][:-1]) + f" and {members[k][-1]}"
                      for k in kinds)
    texts = [_RULE_TEXT[r].format(n=n, wrap=", counting around the table" if circle else "")
             for r in ("child", "no_ss", "no_sc", "no_aaa", "end") if r in chosen]
    texts.append(f"{first} and {second} {'must' if together else 'must not'} sit next to each other.")
    if setting == "row":
        place = (f"{n} chairs stand in a single straight row, numbered 1 to {n} from left to right. Two guests sit "
                 "next to each other when their chair numbers differ by 1.")
    else:
        same = ("is a rotation of the other (everyone has the same left-hand and right-hand neighbours); mirror "
                "images count as different" if setting == "circle" else
                "can be turned into the other by rotating the table, by reflecting it (swapping everyone's left and "
                "right), or by both; so a seating and its mirror image count as one")
        place = (f"{n} chairs are arranged evenly around a round table. Two seatings count as the same if one {same}. "
                 "Two guests sit next to each other when their chairs are adjacent around the table.")
    if "S" in kinds:
        lists += ". In the rules below, 'adult' means one of the adults just listed: the seniors do not count as adults"
    prompt = (f"{n} guests are to be seated, one guest per chair. They come in {len(kinds)} groups: {lists}. {place}"
              "\n\nThe seating must satisfy all of the following:\n" + "\n".join(f"- {r}" for r in texts)
              + "\n\nHow many different seatings satisfy every condition?\n\n"
              "End your response with a final line `ANSWER: <n>`, where <n> is the count as an integer.")
    return _exact(prompt, Fraction(count), {"patterns_log10": round(log10(patterns), 2), "patterns": patterns,
                                            "enumeration_log10": round(log10(factorial(n)), 2)})


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
_REPEATABLE_KINDS = ["rate", "relief", "taper", "capital", "pension", "surcharge"]  # may be superseded
_LIMITED_KINDS = ["relief", "taper", "capital", "pension", "surcharge"]  # may apply to a limited run of years


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
    previous_adjusted = None
    for offset, row in enumerate(case):
        year = first_year + offset
        p = dict(base)
        child_exception, exception_floor, lapse_before, half_gain, keep = False, None, None, False, 3
        for a in amendments:  # in the order enacted: a later amendment overrides an earlier one for the same year
            if year < a["year"] or (a.get("end") is not None and year > a["end"]):
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
        phase = adjusted if previous_adjusted is None else max(adjusted, previous_adjusted)  # §9: higher of two
        events += phase > adjusted and phase > p["T1"] * unit and bool(row["children"])
        previous_adjusted = adjusted
        if not spared and row["children"]:
            reduced = max(0, child - _pc(p["ph"], max(0, phase - p["T1"] * unit)))
            events += reduced < child
            child = reduced
        elif spared and row["children"] and phase > p["T1"] * unit:
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
    if kind in _LIMITED_KINDS and rng.randrange(5) < 2 and a["year"] < first + years - 1:
        a["end"] = rng.randint(a["year"], first + years - 2)  # in force for a limited run of years only
    return a


def tax_ledger(rng: ItemRng, *, years: int = 7, amendments: int = 8, corrections: int = 3) -> Generated:
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
    tail = min(years, 4)  # the balance question sums the balances of the last few years
    plain = _tax_years(case, base, [], first)[0]
    if plain[-1]["due"] <= 0 or sum(r["due"] > 0 for r in plain) < 2:  # a zero tax would make a guessable key
        return tax_ledger(rng.fork("again"), years=years, amendments=amendments, corrections=corrections)

    def outcome(figures: list[dict], amended: list[dict]) -> tuple[Fraction, int, list[dict]]:
        results, events = _tax_years(figures, base, amended, first)
        return (sum(r["due"] for r in results) if total else sum(r["balance"] for r in results[-tail:])), events, results

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
    # All but two amendments are of different kinds; the others repeat kinds already chosen, so that a later
    # amendment supersedes an earlier one where both apply. The list is the order of enactment, not of the years:
    # each new amendment is enacted at a random place in it. Every amendment must change the answer with all the
    # others in place; one that no longer does is dropped and replaced.
    chosen: list[dict] = []
    fresh = rng.sample(_AMENDMENT_KINDS, len(_AMENDMENT_KINDS))
    answer = outcome(case, chosen)[0]
    for _ in range(40):
        idle = [i for i in range(len(chosen)) if outcome(case, chosen[:i] + chosen[i + 1:])[0] == answer]
        if idle:
            chosen.pop(idle[0])
            answer = outcome(case, chosen)[0]
            continue
        if len(chosen) == amendments:
            break
        kinds = [x["kind"] for x in chosen]
        present = sorted(set(kinds) & set(_REPEATABLE_KINDS))
        if (len(kinds) - len(set(kinds)) < 2 and len(chosen) >= amendments - 2 and present) or not fresh:
            kind = rng.choice(present or _REPEATABLE_KINDS)
        else:
            kind = next((k for k in fresh if k not in kinds), None) or rng.choice(_REPEATABLE_KINDS)
            if kind in fresh:
                fresh.remove(kind)
        new = _amendment(rng, kind, base, first, years)
        at = rng.randint(0, len(chosen))
        if kind in kinds:  # a repeat is enacted later, takes effect earlier and ends inside the earlier one's run:
            prior = max(i for i, x in enumerate(chosen) if x["kind"] == kind)  # it supersedes it where they overlap
            old = chosen[prior]
            stop = (old.get("end") or first + years - 1) - 1
            if first + 1 < old["year"] <= stop:
                at = rng.randint(prior + 1, len(chosen))
                new["year"] = rng.randint(first + 1, old["year"] - 1)
                new["end"] = rng.randint(old["year"], stop)
                new.pop("until", None), new.pop("r2_later", None)
        trial = chosen[:at] + [new] + chosen[at:]
        if (value := outcome(case, trial)[0]) != answer:
            chosen, answer = trial, value
    # Every correction must still matter with all the amendments in place. A case that cannot carry them all is
    # redrawn.
    kinds = [x["kind"] for x in chosen]
    filed = lambda i: [dict(r, **({c: o} if y == first + k else {}))  # noqa: E731 (case with fix i undone)
                       for k, r in enumerate(case) for (y, c, _, o) in [fixes[i]]]
    by_year = sorted(chosen, key=lambda x: x["year"])
    if len(chosen) < amendments or len(kinds) - len(set(kinds)) < min(2, amendments - 1) or \
            (amendments > 2 and outcome(case, by_year)[0] == answer) or \
            any(outcome(case, chosen[:i] + chosen[i + 1:])[0] == answer for i in range(len(chosen))) or \
            any(outcome(filed(i), chosen)[0] == answer for i in range(len(fixes))):
        return tax_ledger(rng.fork("again"), years=years, amendments=amendments, corrections=corrections)
    answer, events, results = outcome(case, chosen)
    if results[-1]["due"] <= 0 or sum(r["due"] > 0 for r in results) < 2:  # a zero tax would make a guessable key
        return tax_ledger(rng.fork("again"), years=years, amendments=amendments, corrections=corrections)
    if total:
        question = f"What is the total tax due (as defined in §13) over the tax years {first} to {last} together?"
    else:
        question = (f"What is the sum of the balances for tax years {last - tail + 1} to {last} (each year's balance "
                    "is its tax due minus its tax withheld, as defined in §13; a negative sum means a net refund)?")
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
        f"the phase-out income exceeds {_money(base['T1'])} (never below $0). The phase-out income of a tax year is "
        "the higher of that year's adjusted income and the previous tax year's adjusted income (for the first tax "
        "year of the figures below, that year's own adjusted income).",
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
                text += (f" The same amendment provides that with effect from tax year {a['until']} that rate is "
                         f"{pct(a['r2_later'])} instead.")
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
        if a.get("end") is not None:
            span = f"For tax year {y} only, " if a["end"] == y else f"For tax years {y} to {a['end']} only, "
            text = text.replace(f"With effect from tax year {y}, ", span, 1)
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
        + "\n\nAmendments, listed in the order in which they were enacted (each applies to the tax years it names: "
        "'with effect from' a year means that year and every later year; where an amendment sets an amount or a "
        "rate, that value replaces the one in the code for those years; where two amendments that apply to the same "
        "tax year set the same amount or rate, the one enacted later prevails for that year):\n"
        + ("\n".join(texts) if texts else "(none)")
        + f"\n\nA taxpayer's figures for tax years {first} to {last} (no amounts were carried forward into {first}):\n"
        + "\n".join(table) + notes
        + f"\n\n{question}\n\nEnd your response with a final line `ANSWER: <amount>`, where <amount> is the exact "
        "amount in dollars as a plain decimal number without rounding or a currency sign (e.g. 1234.5675 or -87.25).")
    text = _decimal(answer)
    return Generated(prompt=prompt, key=ExactKey(answer=text, answer_type="number"),
                     reference=f"Working omitted.\nANSWER: {text}",
                     difficulty={"rule_applications": events, "prompt_tokens": len(prompt) // 4})
