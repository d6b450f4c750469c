"""Logical deduction generators: each solver enumerates every candidate and proves the solution unique."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import permutations, product

import numpy as np

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated

Clue = tuple[str, np.ndarray]  # the clue's text and the boolean mask of candidates it allows
_BITS_SET = np.array([bin(byte).count("1") for byte in range(256)], dtype=np.int64)  # popcount of a byte


def minimal_clues(rng: ItemRng, draw: Callable[[], Clue], candidates: int) -> list[Clue]:
    """Draw true clues until one candidate survives, then drop every clue the others make redundant.

    `draw` must only return clues that hold for the hidden solution, so the survivor is the solution;
    the result is irreducible: removing any one clue leaves more than one candidate.
    """
    alive, clues, packed = np.packbits(np.ones(candidates, dtype=bool)), [], []
    survivors = lambda bits: int(_BITS_SET[bits].sum())  # noqa: E731 (masks are packed 8 to a byte)
    while survivors(alive) > 1:
        text, mask = draw()
        bits = np.packbits(mask)
        if survivors(alive & bits) < survivors(alive):  # a clue that cuts nothing would be redundant at once
            alive &= bits
            clues.append((text, mask))
            packed.append(bits)
    keep = list(range(len(clues)))
    order = list(keep)
    rng.shuffle(order)
    for i in order:
        rest = [packed[j] for j in keep if j != i]
        if rest and survivors(np.bitwise_and.reduce(rest)) == 1:
            keep.remove(i)
    return [clues[j] for j in keep]


def solutions(clues: list[Clue]) -> np.ndarray:
    """Indices of the candidates every clue allows."""
    return np.flatnonzero(np.logical_and.reduce([mask for _, mask in clues]))


def _list_answer(prompt: str, names: list[str]) -> Generated:
    answer = ", ".join(names)
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type="list"),
                     reference=f"Working omitted.\nANSWER: {answer}")


@cache
def _perms(n: int) -> np.ndarray:
    """Every permutation of range(n), one per row, in lexicographic order."""
    return np.array(list(permutations(range(n))), dtype=np.int8)


# ---------------------------------------------------------------- round table

_GUESTS = ["Amir", "Beth", "Chen", "Dana", "Emil", "Freya", "Goran", "Hedy", "Ines", "Jonas", "Kofi", "Lena"]


def round_table(rng: ItemRng) -> Generated:
    """Eight guests at a round table with eight numbered seats, placed by relative and cyclic clues."""
    names = rng.sample(_GUESTS, 8)
    seat = _perms(8)  # seat[k, g] = seat (0..7) of guest g in candidate k
    truth = rng.randrange(len(seat))

    near = lambda x, y: abs((x - y + 4) % 8 - 4) == 1  # noqa: E731 (cyclic distance 1)

    def draw() -> Clue:
        while True:
            a, b, c = rng.sample(range(8), 3)
            A, B, C, k, s = names[a], names[b], names[c], rng.choice([2, 3]), int(seat[truth, a]) + 1
            text, holds = rng.weighted_choice([
                (f"{A} sits in the next seat clockwise from {B}.", lambda x, y, z: (x - y) % 8 == 1),
                (f"{A} sits directly opposite {B}.", lambda x, y, z: (x - y) % 8 == 4),
                (f"{A} and {B} are not neighbours.", lambda x, y, z: ~near(x, y)),
                (f"Going clockwise from {A}, you reach {B} before you reach {C}.",
                 lambda x, y, z: (y - x) % 8 < (z - x) % 8),
                (f"{A} is {k} seats clockwise from {B}.", lambda x, y, z: (x - y) % 8 == k),
                (f"{A} sits next to {B} or next to {C}, but not next to both.",
                 lambda x, y, z: near(x, y) != near(x, z)),
                (f"{A} sits in an even-numbered seat.", lambda x, y, z: x % 2 == 1),  # seat number = x + 1
                (f"{A}'s seat number is higher than {B}'s.", lambda x, y, z: x > y),
                (f"{A} sits in seat {s}.", lambda x, y, z: x == s - 1),
                (f"Neither {A} nor {B} sits in seat 1.", lambda x, y, z: (x != 0) & (y != 0)),
            ], [1, 1, 3, 4, 2, 3, 2, 3, 1, 1])
            if holds(*seat[truth, [a, b, c]]):  # test the hidden seating first: it is cheap
                return text, holds(seat[:, a], seat[:, b], seat[:, c])

    clues = minimal_clues(rng, draw, len(seat))
    order = np.argsort(seat[truth])
    prompt = (
        "Eight guests — " + ", ".join(sorted(names)) + " — sit around a round table with eight seats, numbered 1 "
        "to 8 clockwise (seat 8 is next to seat 1), one guest per seat. Two guests are neighbours when their "
        "seats are next to each other. \"k seats clockwise from\" means k steps in the clockwise direction. "
        "The seat numbers are printed on the chairs, so \"higher\" compares those numbers.\n\nClues:\n"
        + "\n".join(f"{i}. {text}" for i, (text, _) in enumerate(clues, 1))
        + "\n\nExactly one seating satisfies every clue. Who sits in each seat?\n\n"
        "End your response with a final line `ANSWER: <names>`, where <names> lists the guests in seats 1, 2, "
        "..., 8 in that order, comma-separated (e.g. `ANSWER: Name1, Name2, ...`).")
    return _list_answer(prompt, [names[g] for g in order])


# ---------------------------------------------------------------- knights and knaves

_ISLANDERS = ["Ava", "Boris", "Cora", "Dmitri", "Elsa", "Finn", "Greta", "Hugo", "Iris", "Jules", "Kai", "Luz"]


def knights_knaves(rng: ItemRng) -> Generated:
    """Ten islanders, knights or knaves, whose nested and counting statements leave one consistent assignment."""
    names = rng.sample(_ISLANDERS, 10)
    K = (np.arange(1024)[:, None] >> np.arange(10) & 1).astype(bool)  # K[a, i]: islander i is a knight under a
    while True:
        truth = rng.randrange(1024)
        if 3 <= K[truth].sum() <= 7:
            break

    def draw() -> Clue:
        while True:
            s, x, y, z = rng.sample(range(10), 4)
            X, Y, Z, k = names[x], names[y], names[z], rng.randint(1, 2)
            n = rng.randint(4, 6)
            text, said = rng.weighted_choice([
                (f"{X} is a knave.", lambda: ~K[:, x]),
                (f"{X} and {Y} are the same kind.", lambda: K[:, x] == K[:, y]),
                (f"{X} and {Y} are not both knights.", lambda: ~(K[:, x] & K[:, y])),
                (f"Exactly {k} of {X}, {Y} and {Z} {'is a knight' if k == 1 else 'are knights'}.",
                 lambda: K[:, [x, y, z]].sum(1) == k),
                (f"If {X} is a knight, then {Y} is a knave.", lambda: ~K[:, x] | ~K[:, y]),
                (f"{X} would tell you that {Y} is a knave.", lambda: K[:, x] == ~K[:, y]),
                (f"At least {n} of the ten of us are knaves.", lambda: (~K).sum(1) >= n),
                (f"I am a knave or {X} is a knight (or both).", lambda: ~K[:, s] | K[:, x]),
                (f"{X} would tell you that {Y} and {Z} are the same kind.",
                 lambda: K[:, x] == (K[:, y] == K[:, z])),
                (f"An odd number of {X}, {Y} and {Z} are knights.", lambda: K[:, [x, y, z]].sum(1) % 2 == 1),
            ], [1, 2, 2, 3, 3, 3, 1, 2, 2, 2])
            consistent = said() == K[:, s]  # a knight's statements are true, a knave's false
            if consistent[truth]:
                return f"{names[s]}: \"{text}\"", consistent

    clues = minimal_clues(rng, draw, 1024)
    speakers = sorted(clues, key=lambda c: names.index(c[0].split(":")[0]))
    knights = [names[i] for i in range(10) if K[truth, i]]
    answer = ", ".join(knights)
    prompt = (
        "On an island every inhabitant is either a knight, who only ever says true things, or a knave, who only "
        "ever says false things. You meet ten inhabitants — " + ", ".join(names) + " — who all know each "
        "other's kinds. \"X would tell you that P\" means X would assert P if asked. \"If P, then Q\" is false only "
        "when P is true and Q is false. They make these statements:\n\n"
        + "\n".join(text for text, _ in speakers)
        + "\n\nExactly one assignment of kinds is consistent with all the statements. Which of the ten are "
        "knights?\n\nEnd your response with a final line `ANSWER: <names>`, where <names> are the knights' names, "
        "comma-separated, in any order.")
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type="set"),
                     reference=f"Working omitted.\nANSWER: {answer}")


# ---------------------------------------------------------------- scheduling

_TASKS = ["Audit", "Backup", "Cabling", "Deploy", "Encrypt", "Firmware", "Gateway", "Hotfix", "Inventory", "Journal"]


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


@cache
def _precedence() -> tuple[np.ndarray, np.ndarray]:
    """Over all 8! orders: slot[t, k] of task t in order k, and before[t, k, u] = 1 when u comes before t."""
    slot = np.ascontiguousarray(np.argsort(_perms(8), axis=1).T)
    before = slot[None, :, :] < slot[:, None, :]  # [t, u, k]
    return slot, np.ascontiguousarray(before.transpose(0, 2, 1), dtype=np.float32)


def task_schedule(rng: ItemRng) -> Generated:
    """Eight jobs of different lengths run back to back; time windows and order clues fix the sequence."""
    tasks = rng.sample(_TASKS, 8)
    minutes = np.array([rng.choice([30, 45, 60, 75, 90, 105, 120, 150]) for _ in tasks], dtype=np.int16)
    day_start = rng.choice([450, 480, 495, 540])
    slot, before = _precedence()
    # A job starts when everything before it is done; float32 sums of these small integers are exact.
    start = day_start + (before @ minutes.astype(np.float32)).astype(np.int16)
    end = start + minutes[:, None]
    truth = rng.randrange(slot.shape[1])

    def draw() -> Clue:
        while True:
            a, b = rng.sample(range(8), 2)
            A, B, k = tasks[a], tasks[b], rng.randint(1, 3)
            s0, e0 = int(start[a, truth]), int(end[a, truth])
            at = rng.randrange(s0, e0, 15)
            early, late = s0 - rng.choice([0, 15, 30, 45]), e0 + rng.choice([0, 15, 30, 45])
            text, holds = rng.weighted_choice([
                (f"{A} is finished before {B} starts.", lambda S, E, P: P[a] < P[b]),
                (f"{B} starts the moment {A} finishes.", lambda S, E, P: P[b] == P[a] + 1),
                (f"{A} cannot start before {_hhmm(early)}.", lambda S, E, P: S[a] >= early),
                (f"{A} must be finished by {_hhmm(late)}.", lambda S, E, P: E[a] <= late),
                (f"{A} is in progress at {_hhmm(at)}.", lambda S, E, P: (S[a] <= at) & (at < E[a])),
                (f"{A} and {B} are not done one right after the other (in either order).",
                 lambda S, E, P: abs(P[a] - P[b]) != 1),
                (f"Exactly {k} other {'job is' if k == 1 else 'jobs are'} done between {A} and {B}.",
                 lambda S, E, P: abs(P[a] - P[b]) == k + 1),
                (f"{A} starts on the hour (at some time hh:00).", lambda S, E, P: S[a] % 60 == 0),
                (f"{A} starts later than {B} but finishes before {_hhmm(late)}.",
                 lambda S, E, P: (S[a] > S[b]) & (E[a] < late)),
            ], [4, 1, 2, 2, 1, 3, 2, 2, 2])
            one = slice(truth, truth + 1)
            if holds(start[:, one], end[:, one], slot[:, one])[0]:  # test the hidden schedule first: it is cheap
                return text, holds(start, end, slot)

    clues = minimal_clues(rng, draw, slot.shape[1])
    jobs = ", ".join(f"{t} ({m} min)" for t, m in zip(tasks, minutes))
    prompt = (
        f"A technician must do eight jobs today, one at a time, starting the first at {_hhmm(day_start)} and "
        "starting each next job the moment the previous one finishes (no gaps, no overlaps, no job interrupted). "
        f"The jobs and their durations: {jobs}. A job that runs from 09:00 to 10:00 is in progress at 09:00 and "
        "at 09:59 but not at 10:00.\n\nConstraints:\n"
        + "\n".join(f"{i}. {text}" for i, (text, _) in enumerate(clues, 1))
        + "\n\nExactly one order of the eight jobs satisfies every constraint. What is it?\n\n"
        "End your response with a final line `ANSWER: <jobs>`, where <jobs> lists the eight job names from first "
        "to last, comma-separated.")
    return _list_answer(prompt, [tasks[t] for t in _perms(8)[truth]])


# ---------------------------------------------------------------- code breaking

_PEGS = ["red", "blue", "green", "yellow", "white", "black"]


@cache
def _codes() -> tuple[np.ndarray, np.ndarray]:
    """All 6**5 codes (colour index per position) and each code's count of every colour."""
    codes = np.array(list(product(range(6), repeat=5)), dtype=np.int8)
    return codes, np.stack([(codes == c).sum(1) for c in range(6)], axis=1)


def code_breaker(rng: ItemRng) -> Generated:
    """A five-peg, six-colour secret code deduced from scored guesses, each guess needed."""
    codes, counts = _codes()
    secret = rng.randrange(len(codes))

    def feedback(g: int) -> tuple[np.ndarray, np.ndarray]:
        black = (codes == codes[g]).sum(1)
        return black, np.minimum(counts, counts[g]).sum(1) - black

    def draw() -> Clue:
        guess = rng.randrange(len(codes))
        while guess == secret:  # a guess of the secret itself would give the answer away
            guess = rng.randrange(len(codes))
        black, white = feedback(guess)
        b, w = int(black[secret]), int(white[secret])
        words = ", ".join(_PEGS[c] for c in codes[guess])
        return (f"{words}  ->  {b} black, {w} white",
                (black == b) & (white == w))

    clues = minimal_clues(rng, draw, len(codes))
    prompt = (
        "A secret code is a row of five pegs; each peg is one of six colours (red, blue, green, yellow, white, "
        "black), and colours may repeat. Each guess below is scored against the secret: the number of black "
        "marks is the number of positions where the guess has the right colour in the right position; the "
        "number of white marks is (the sum over the six colours of the smaller of that colour's count in the "
        "guess and its count in the secret) minus the number of black marks. The order of the marks says "
        "nothing about positions.\n\nScored guesses (positions 1 to 5, left to right):\n"
        + "\n".join(f"{i}. {text}" for i, (text, _) in enumerate(clues, 1))
        + "\n\nExactly one code is consistent with every score. What is the secret code?\n\n"
        "End your response with a final line `ANSWER: <colours>`, where <colours> are the five colours from "
        "position 1 to 5, comma-separated.")
    return _list_answer(prompt, [_PEGS[c] for c in codes[secret]])


# ---------------------------------------------------------------- zebra grid

_ATTRIBUTES = [  # category -> (values, how a clue refers to the holder of a value)
    (["Alice", "Bruno", "Chiara", "Dario", "Elif"], "{}"),
    (["red", "green", "white", "yellow", "blue"], "the resident of the {} house"),
    (["cat", "dog", "parrot", "tortoise", "goldfish"], "the {} owner"),
    (["tea", "coffee", "milk", "juice", "water"], "the {} drinker"),
    (["baker", "pilot", "nurse", "painter", "lawyer"], "the {}"),
]
GridClue = tuple[int, int, np.ndarray]  # (category i, category j, mask): see _grids


def _grids(clues: list[GridClue], cap: int = 5000) -> np.ndarray | None:
    """Every grid meeting all clues, as rows of one permutation index per category; None past `cap` partial grids.

    A clue with i == j is a 120-vector over that category's permutations; with i < j it is a 120x120
    matrix over (permutation of i, permutation of j). Grids are joined one category at a time.
    """
    domain = [np.ones(120, dtype=bool) for _ in _ATTRIBUTES]
    pair: dict[tuple[int, int], np.ndarray] = {}
    for i, j, mask in clues:
        if i == j:
            domain[i] = domain[i] & mask
        else:
            pair[i, j] = pair[i, j] & mask if (i, j) in pair else mask
    for _ in range(2):  # arc consistency sweeps: drop permutations left with no partner in a linked category
        for (i, j), mask in pair.items():
            domain[i] &= mask[:, domain[j]].any(1)
            domain[j] &= mask[domain[i]].any(0)
    # Join the smallest domain first, then always the category most tied to those already joined.
    order = [min(range(5), key=lambda c: domain[c].sum())]
    while len(order) < 5:
        order.append(max((c for c in range(5) if c not in order),
                         key=lambda c: (sum((c, p) in pair or (p, c) in pair for p in order), -domain[c].sum())))
    grids = np.flatnonzero(domain[order[0]])[:, None]
    for depth, c in enumerate(order[1:], 1):
        allowed = np.broadcast_to(domain[c], (len(grids), 120)).copy()
        for col, p in enumerate(order[:depth]):
            if (p, c) in pair:
                allowed &= pair[p, c][grids[:, col]]
            elif (c, p) in pair:
                allowed &= pair[c, p][:, grids[:, col]].T
        rows, perms = np.nonzero(allowed)
        grids = np.column_stack([grids[rows], perms])
        if len(grids) > cap:
            return None
    return grids[:, np.argsort(order)]


def _unique(clues: list[GridClue]) -> bool:
    found = _grids(clues)
    return found is not None and len(found) == 1


def zebra(rng: ItemRng) -> Generated:
    """A five-house grid of five attributes with an irreducible set of relational clues."""
    house = _perms(5)  # house[k, v] = house (0..4) of value v under permutation k
    truth = [rng.randrange(120) for _ in _ATTRIBUTES]
    refer = lambda c, v: _ATTRIBUTES[c][1].format(_ATTRIBUTES[c][0][v])  # noqa: E731
    structured: dict[str, GridClue] = {}

    def draw() -> tuple[str, GridClue]:
        while True:
            first, second = rng.randrange(25), rng.randrange(24)
            (i, u), (j, v) = sorted(divmod(n, 5) for n in (first, second + (second >= first)))
            A, B, h = refer(i, u), refer(j, v), rng.randrange(5)
            single, text, holds = rng.weighted_choice([
                (False, f"{A} is {B}." if i == 0 else f"{A} and {B} are the same person.", lambda x, y: x == y),
                (False, f"{A} is not {B}." if i == 0 else f"{A} and {B} are different people.",
                 lambda x, y: x != y),
                (False, f"{A} lives directly to the left of {B}.", lambda x, y: x + 1 == y),
                (False, f"{B} lives directly to the left of {A}.", lambda x, y: y + 1 == x),
                (False, f"{A} and {B} live next to each other.", lambda x, y: abs(x - y) == 1),
                (False, f"{A} lives somewhere to the left of {B}.", lambda x, y: x < y),
                (False, f"There is exactly one house between {A} and {B}.", lambda x, y: abs(x - y) == 2),
                (False, f"{A} and {B} live in different houses that are not next to each other.",
                 lambda x, y: abs(x - y) > 1),
                (True, f"{A} lives in house {h + 1}.", lambda x, y: x == h),
                (True, f"{A} lives in one of the two end houses.", lambda x, y: (x == 0) | (x == 4)),
            ], [3, 2, 2, 2, 3, 3, 2, 2, 1, 1])
            if i == j and not single and len({bool(holds(x, y)) for x in range(5) for y in range(5) if x != y}) < 2:
                continue  # within one category two values never share a house, so this clue would be vacuous
            if holds(house[truth[i], u], house[truth[j], v]):
                x, y = house[:, u], house[:, v]
                clue = (i, i, holds(x, x)) if single else (i, j, holds(x, y) if i == j else
                                                           holds(x[:, None], y[None, :]))
                text = text[0].upper() + text[1:]
                structured[text] = clue
                return text, clue

    # Draw clues until few enough grids survive to list them; then finish and prune over that list,
    # and finally prune the first clues with the full solver (a clue needed once stays needed).
    base: list[tuple[str, GridClue]] = []
    while len(base) < 15 or (found := _grids([c for _, c in base], cap=800)) is None:
        base.append(draw())

    def on_found() -> Clue:
        text, (i, j, mask) = draw()
        return text, mask[found[:, i]] if i == j else mask[found[:, i], found[:, j]]

    kept_extra = minimal_clues(rng, on_found, len(found))
    extra = [structured[text] for text, _ in kept_extra]
    order = list(range(len(base)))
    rng.shuffle(order)
    keep = sorted(order)
    for n in order:
        if _unique([base[m][1] for m in keep if m != n] + extra):
            keep.remove(n)
    texts = [base[m][0] for m in keep] + [text for text, _ in kept_extra]
    rng.shuffle(texts)
    names = _ATTRIBUTES[0][0]
    prompt = (
        "Five houses stand in a row, numbered 1 to 5 from left to right. Each house has one resident, and the "
        "five residents — " + ", ".join(names) + " — differ in every respect: each house has a different colour "
        "(" + ", ".join(_ATTRIBUTES[1][0]) + "), each resident owns a different pet ("
        + ", ".join(_ATTRIBUTES[2][0]) + "), prefers a different drink (" + ", ".join(_ATTRIBUTES[3][0])
        + ") and has a different job (" + ", ".join(_ATTRIBUTES[4][0]) + "). \"Left\" means a lower house "
        "number; \"next to\" means adjacent house numbers.\n\nClues:\n"
        + "\n".join(f"{n}. {text}" for n, text in enumerate(texts, 1))
        + "\n\nExactly one arrangement satisfies every clue. Who lives in each house?\n\n"
        "End your response with a final line `ANSWER: <names>`, where <names> lists the residents of houses 1 "
        "to 5 in that order, comma-separated.")
    return _list_answer(prompt, [names[v] for v in np.argsort(house[truth[0]])])
