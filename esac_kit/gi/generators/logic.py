"""Logical deduction generators (ESAC-GI 2.0): every puzzle has exactly one solution, proven by the generator's
own solver (exhaustive enumeration, or for the zebra grid and the variant sudoku a complete propagate-and-branch
search), and every instance reports a difficulty measured by solving it: refuted branches, rejected partial
assignments, search nodes beyond propagation, or the nodes a branch-and-bound must expand."""

from __future__ import annotations

from collections.abc import Callable
import math
from functools import cache
from itertools import combinations

import numpy as np

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated

Clue = tuple[str, np.ndarray]  # the clue's text and the boolean mask of candidates it allows
# A drawn clue: its text and a function giving, for an array of candidate indices (None: all of them), which of
# them it allows.
LazyClue = tuple[str, Callable[[np.ndarray | None], np.ndarray]]


def minimal_clues(rng: ItemRng, draw: Callable[[], LazyClue], candidates: int) -> list[Clue]:
    """Draw true clues until one candidate survives, then drop every clue the others make redundant.

    `draw` must only return clues that hold for the hidden solution, so the survivor is the solution; a clue
    is first tested on the surviving candidates only (cheap once few survive) and kept when it cuts some.
    The result is irreducible: removing any one clue leaves more than one candidate.
    """
    alive, kept = None, []
    while alive is None or len(alive) > 1:
        text, allows = draw()
        cut = allows(alive)
        if not cut.all():  # a clue that cuts nothing would be redundant at once
            kept.append((text, allows))
            alive = np.flatnonzero(cut) if alive is None else alive[cut]
    masks = [allows(None) for _, allows in kept]
    broken = np.zeros(candidates, dtype=np.int16)  # how many clues each candidate breaks
    for mask in masks:
        broken += ~mask
    keep = list(range(len(kept)))
    order = list(keep)
    rng.shuffle(order)
    for i in order:  # clue i is spare when no candidate breaks it alone
        if not (~masks[i] & (broken == 1)).any():
            keep.remove(i)
            broken -= ~masks[i]
    return [(kept[j][0], masks[j]) for j in keep]


def solutions(clues: list[Clue]) -> np.ndarray:
    """Indices of the candidates every clue allows."""
    return np.flatnonzero(np.logical_and.reduce([mask for _, mask in clues]))


def _list_answer(prompt: str, names: list[str]) -> Generated:
    answer = ", ".join(names)
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type="list"),
                     reference=f"Working omitted.\nANSWER: {answer}")


# ---------------------------------------------------------------- variant sudoku

_RULE_TYPES = ("killer", "thermo", "arrow", "kropki", "whisper", "renban", "xv")
_PRUNE_BUDGET = 2  # pruning attempts stop once they have searched this many times max_nodes nodes


class _Capped(Exception):
    """A search ran past its node budget (too hard to settle within it)."""


class _Found(Exception):
    """Enough solutions found."""


class VariantSolver:
    """A complete propagate-and-branch solver for an n x n sudoku (n = 6 or 9) with variant constraints.

    Candidates are bitmasks (bit d - 1 for digit d). Propagation: a fixed digit leaves its row, column and box;
    a digit with one place left in a house goes there; each variant constraint narrows its cells (killer cages
    and renban lines to the digit sets still possible, thermometers and arrows by bounds, dots and whisper
    segments by pair tables). Search: the cell with the fewest candidates, digits in increasing order.
    Constraints are tuples: ("set", cells, allowed digit-set masks) for cells holding distinct digits that form
    one of the sets (killer cage, renban line), ("thermo", cells) strictly increasing, ("arrow", circle, shaft)
    shaft sum equals circle, ("pair", a, b, table) with table[mask of b] the digits a may take (symmetric
    relations), ("given", cell, digit).
    """

    def __init__(self, n: int, constraints: list[tuple]):
        self.n = n
        self.all = (1 << n) - 1
        cells = n * n
        self.houses, self.peers, _, _, _, self.segments, self.locked, self.house_of = _geometry(n)
        self.constraints = [k for k in constraints if k[0] != "given"]
        self.givens = [(k[1], k[2]) for k in constraints if k[0] == "given"]
        self.touching = [[] for _ in range(cells)]
        for i, k in enumerate(self.constraints):
            for c in _constraint_cells(k):
                self.touching[c].append(i)
        self.touching_bits = [sum(1 << i for i in t) for t in self.touching]
        self.house_bits = [sum(1 << h for h in hs) for hs in self.house_of]
        self.nodes = 0

    def _run(self, k: tuple, m: list[int]) -> list[int] | None:
        """Narrow the cells of one constraint; the cells changed, or None on a contradiction."""
        kind = k[0]
        changed = []
        if kind == "pair":
            _, a, b, table = k
            va, vb = m[a], m[b]
            na = va & table[vb]
            if na != va:
                if not na:
                    return None
                m[a] = na
                changed.append(a)
            nb = vb & table[na]
            if nb != vb:
                if not nb:
                    return None
                m[b] = nb
                changed.append(b)
            return changed
        if kind == "set":
            _, cells, sets, outside = k
            vs = [m[c] for c in cells]
            fixed = 0
            for v in vs:
                if not v & (v - 1):
                    if fixed & v:
                        return None
                    fixed |= v
            feasible, must = 0, self.all
            for s in sets:
                if fixed & ~s:
                    continue
                u = 0
                for v in vs:
                    x = v & s
                    if not x:
                        break
                    u |= x
                else:
                    if u == s:
                        feasible |= s
                        must &= s
            if not feasible:
                return None
            for c, v in zip(cells, vs):
                w = v & feasible
                if v & (v - 1):
                    w &= ~fixed
                if w != v:
                    if not w:
                        return None
                    m[c] = w
                    changed.append(c)
            if must:  # digits every possible set holds leave the rest of a house holding all the cells
                for c in outside:
                    v = m[c]
                    if v & must:
                        w = v & ~must
                        if not w:
                            return None
                        m[c] = w
                        changed.append(c)
            return changed
        if kind == "thermo":
            cells = k[1]
            low = 0  # digits above `low` only
            for c in cells:
                v = m[c]
                w = v & ~((1 << low) - 1)
                if not w:
                    return None
                if w != v:
                    m[c] = w
                    changed.append(c)
                low = (w & -w).bit_length()
            high = self.n + 1
            for c in reversed(cells):
                v = m[c]
                w = v & ((1 << (high - 1)) - 1)
                if not w:
                    return None
                if w != v:
                    m[c] = w
                    if c not in changed:
                        changed.append(c)
                high = w.bit_length()
            return changed
        if kind == "arrow":
            _, circle, shaft = k
            lows = [(m[c] & -m[c]).bit_length() for c in shaft]
            highs = [m[c].bit_length() for c in shaft]
            lo, hi = sum(lows), sum(highs)
            v = m[circle]
            w = v & _range_mask(lo, hi)
            if not w:
                return None
            if w != v:
                m[circle] = w
                changed.append(circle)
            cmin, cmax = (w & -w).bit_length(), w.bit_length()
            for c, a, b in zip(shaft, lows, highs):
                v = m[c]
                w = v & _range_mask(cmin - (hi - b), cmax - (lo - a))
                if not w:
                    return None
                if w != v:
                    m[c] = w
                    changed.append(c)
            return changed
        raise ValueError(kind)

    def propagate(self, m: list[int], dirty: list[int], recheck: int = -1) -> bool:
        """Narrow the candidates to a fixpoint after the cells in `dirty` changed; False on a contradiction.
        `recheck`: a bitmask of the houses to look at for hidden singles (-1: every house)."""
        peers, touching, constraints, houses, house_bits = (self.peers, self.touching_bits, self.constraints,
                                                            self.houses, self.house_bits)
        segments, locked, full, run = self.segments, self.locked, self.all, self._run
        pending = 0
        todo = (1 << len(houses)) - 1 if recheck < 0 else recheck
        confined = 0
        while True:
            while dirty:
                c = dirty.pop()
                v = m[c]
                if not v & (v - 1):
                    for p in peers[c]:
                        w = m[p]
                        if w & v:
                            w &= ~v
                            if not w:
                                return False
                            m[p] = w
                            dirty.append(p)
                pending |= touching[c]
                todo |= house_bits[c]
            if pending:
                low = pending & -pending
                pending ^= low
                changed = run(constraints[low.bit_length() - 1], m)
                if changed is None:
                    return False
                dirty.extend(changed)
                continue
            if todo:
                while todo:  # a digit with one place left in a house goes there
                    low = todo & -todo
                    todo ^= low
                    house = houses[low.bit_length() - 1]
                    once = twice = 0
                    for c in house:
                        v = m[c]
                        twice |= once & v
                        once |= v
                    if once != full:
                        return False
                    lone = once & ~twice
                    if lone:
                        for c in house:
                            v = m[c]
                            x = v & lone
                            if x and v != x:
                                if x & (x - 1):
                                    return False  # two digits with one place each, and it is the same cell
                                m[c] = x
                                dirty.append(c)
                confined = 1
                if dirty:
                    continue
            if confined:
                segor = []
                for cells, _, _ in segments:
                    u = 0
                    for c in cells:
                        u |= m[c]
                    segor.append(u)
                for group, target in locked:  # a digit confined to one segment of a box or line
                    for s in group:
                        others = 0
                        for t in group:
                            if t != s:
                                others |= segor[t]
                        only = segor[s] & ~others
                        if only:
                            for c in segments[s][target]:
                                v = m[c]
                                if v & only:
                                    v &= ~only
                                    if not v:
                                        return False
                                    m[c] = v
                                    dirty.append(c)
            confined = 0
            if not dirty:
                return True

    def start(self) -> list[int] | None:
        m = [self.all] * (self.n * self.n)
        for c, d in self.givens:
            m[c] = 1 << (d - 1)
        dirty = list(range(self.n * self.n))
        return m if self.propagate(m, dirty) else None

    def solve(self, limit: int = 2, avoid: list[int] | None = None, cap: int = 10 ** 9,
              order=None) -> list[list[int]]:
        """Up to `limit` solutions (digit lists). With `avoid` (a solution), its digits are tried last and it is
        not counted, so the search looks for a different solution."""
        found: list[list[int]] = []
        m = self.start()
        if m is None:
            return found
        self.nodes = 0
        cells = range(self.n * self.n)

        def search(m):
            best, size = -1, 99
            for c in cells:
                v = m[c]
                if v & (v - 1):
                    k = _POPCOUNT[v]
                    if k < size:
                        best, size = c, k
                        if k == 2:
                            break
            if best < 0:
                sol = [v.bit_length() for v in m]
                if sol != avoid:
                    found.append(sol)
                    if len(found) >= limit:
                        raise _Found
                return
            v = m[best]
            digits = [d for d in range(1, self.n + 1) if v >> (d - 1) & 1]
            if order is not None:
                order(digits)
            if avoid is not None:
                digits.sort(key=lambda d: d == avoid[best])
            for d in digits:
                self.nodes += 1
                if self.nodes > cap:
                    raise _Capped
                child = m[:]
                child[best] = 1 << (d - 1)
                if self.propagate(child, [best], 0):
                    search(child)

        try:
            search(m)
        except _Found:
            pass
        return found


_POPCOUNT = [bin(v).count("1") for v in range(1 << 9)]


def _range_mask(lo: int, hi: int) -> int:
    """The digits lo..hi (clipped to 1..9) as a mask."""
    lo, hi = max(lo, 1), min(hi, 9)
    return ((1 << hi) - 1) & ~((1 << (lo - 1)) - 1) if lo <= hi else 0


def _constraint_cells(k: tuple) -> list[int]:
    kind = k[0]
    if kind == "pair":
        return [k[1], k[2]]
    if kind == "arrow":
        return [k[1]] + list(k[2])
    if kind == "given":
        return [k[1]]
    return list(k[1])


@cache
def _pair_table(relation: str, n: int) -> tuple[int, ...]:
    """table[mask]: the digits that stand in the relation to some digit of the mask."""
    holds = {"white": lambda a, b: abs(a - b) == 1, "black": lambda a, b: a == 2 * b or b == 2 * a,
             "x": lambda a, b: a + b == 10, "v": lambda a, b: a + b == 5,
             "whisper": lambda a, b: abs(a - b) >= _whisper_gap(n)}[relation]
    single = [sum(1 << (a - 1) for a in range(1, n + 1) if holds(a, b)) for b in range(1, n + 1)]
    table = []
    for mask in range(1 << n):
        out = 0
        for b in range(n):
            if mask >> b & 1:
                out |= single[b]
        table.append(out)
    return tuple(table)


def _whisper_gap(n: int) -> int:
    return 5 if n == 9 else 3


@cache
def _sum_sets(n: int, size: int, total: int) -> tuple[int, ...]:
    """The sets of `size` distinct digits 1..n adding up to `total`, as masks."""
    return tuple(sum(1 << (d - 1) for d in combo) for combo in combinations(range(1, n + 1), size)
                 if sum(combo) == total)


@cache
def _run_sets(n: int, size: int) -> tuple[int, ...]:
    """The sets of `size` consecutive digits, as masks."""
    return tuple(((1 << size) - 1) << low for low in range(n - size + 1))


@cache
def _geometry(n: int):
    bh, bw = (3, 3) if n == 9 else (2, 3)
    rows = [[r * n + c for c in range(n)] for r in range(n)]
    cols = [[r * n + c for r in range(n)] for c in range(n)]
    boxes = [[(br + i) * n + bc + j for i in range(bh) for j in range(bw)]
             for br in range(0, n, bh) for bc in range(0, n, bw)]
    houses = rows + cols + boxes
    peers = [sorted({p for h in houses if c in h for p in h} - {c}) for c in range(n * n)]
    orth = [[(r + dr) * n + c + dc for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
             if 0 <= r + dr < n and 0 <= c + dc < n] for r in range(n) for c in range(n)]
    king = [[(r + dr) * n + c + dc for dr in (-1, 0, 1) for dc in (-1, 0, 1)
             if (dr or dc) and 0 <= r + dr < n and 0 <= c + dc < n] for r in range(n) for c in range(n)]
    segments, box_groups, line_groups = [], [], {}
    for b, box in enumerate(boxes):
        top, left = box[0] // n, box[0] % n
        group = []
        for cells, line in [([(top + i) * n + left + j for j in range(bw)], rows[top + i]) for i in range(bh)] + \
                           [([(top + i) * n + left + j for i in range(bh)], cols[left + j]) for j in range(bw)]:
            segments.append((cells, [c for c in line if c not in cells], [c for c in box if c not in cells]))
            group.append(len(segments) - 1)
            line_groups.setdefault(tuple(line), []).append(len(segments) - 1)
        box_groups.append((group[:bh], group[bh:]))
    locked = [(g, 1) for pair in box_groups for g in pair] + [(g, 2) for g in line_groups.values()]
    house_of = [tuple(i for i, h in enumerate(houses) if c in h) for c in range(n * n)]
    return houses, peers, orth, king, (bh, bw), segments, locked, house_of


def _holds(k: tuple, g: list[int], n: int) -> bool:
    kind = k[0]
    if kind == "given":
        return g[k[1]] == k[2]
    if kind == "pair":
        return bool(k[3][1 << (g[k[2]] - 1)] >> (g[k[1]] - 1) & 1)
    if kind == "set":
        mask = 0
        for c in k[1]:
            mask |= 1 << (g[c] - 1)
        return _POPCOUNT[mask] == len(k[1]) and mask in k[2]
    if kind == "thermo":
        return all(g[a] < g[b] for a, b in zip(k[1], k[1][1:]))
    if kind == "arrow":
        return sum(g[c] for c in k[2]) == g[k[1]]
    raise ValueError(kind)


class _Board:
    """What the drawn constraints already occupy: a cell lies in at most one cage and on at most one line, and
    two neighbouring cells carry at most one dot or letter."""

    def __init__(self, n: int):
        self.cage = [False] * (n * n)
        self.line = [False] * (n * n)
        self.marks: set[tuple[int, int]] = set()

    def take(self, rule: str, k: tuple) -> None:
        if rule == "killer":
            for c in k[1]:
                self.cage[c] = True
        elif rule in ("kropki", "xv"):
            self.marks.add((min(k[1], k[2]), max(k[1], k[2])))
        elif rule != "given":
            for c in _constraint_cells(k):
                self.line[c] = True


def _grow_path(rng: ItemRng, start: int, length: int, free: list[bool], steps: list[list[int]],
               ok: Callable[[list[int], int, bool], bool]) -> list[int]:
    """A random path of up to `length` distinct free cells through `start`, extended at either end by a step
    to a neighbour that `ok(path, cell, at_end)` accepts."""
    path = [start]
    while len(path) < length:
        options = []
        for at_end in (True, False):
            tip = path[-1] if at_end else path[0]
            for c in steps[tip]:
                if free[c] and c not in path and ok(path, c, at_end):
                    options.append((at_end, c))
        if not options:
            break
        at_end, c = rng.choice(options)
        if at_end:
            path.append(c)
        else:
            path.insert(0, c)
    return path


def _draw_rule(rng: ItemRng, rule: str, x: int, g: list[int], n: int, board: _Board) -> tuple | None:
    """A constraint of the given rule type that touches cell x and holds in the solution g, or None."""
    orth, king = _geometry(n)[2:4]
    if rule == "given":
        return ("given", x, g[x])
    if rule in ("kropki", "xv"):
        options = []
        for y in orth[x]:
            if (min(x, y), max(x, y)) in board.marks:
                continue
            a, b = g[x], g[y]
            names = ([("white", abs(a - b) == 1), ("black", a == 2 * b or b == 2 * a)] if rule == "kropki"
                     else [("x", a + b == 10), ("v", a + b == 5)])
            options += [(name, y) for name, fits in names if fits]
        if not options:
            return None
        name, y = rng.choice(options)
        return ("pair", x, y, _pair_table(name, n), name)
    if rule == "killer":
        if board.cage[x]:
            return None
        free = [not t for t in board.cage]
        size = rng.randint(2, 5 if n == 9 else 4)
        cells = _grow_path_region(rng, x, size, free, orth, g)
        if len(cells) < 2:
            return None
        total = sum(g[c] for c in cells)
        return ("set", tuple(sorted(cells)), _sum_sets(n, len(cells), total), total)
    free = [not t for t in board.line]
    if not free[x]:
        return None
    if rule == "thermo":
        path = _grow_path(rng, x, rng.randint(3, 6 if n == 9 else 5), free, king,  # bulb first
                          lambda p, c, end: g[c] > g[p[-1]] if end else g[c] < g[p[0]])
        if len(path) < 3:
            return None
        return ("thermo", tuple(path))
    if rule == "whisper":
        gap = _whisper_gap(n)
        path = _grow_path(rng, x, rng.randint(3, 6 if n == 9 else 5), free, king,
                          lambda p, c, end: abs(g[c] - g[p[-1] if end else p[0]]) >= gap)
        if len(path) < 3:
            return None
        if rng.randrange(2):
            path.reverse()
        return ("whisper", tuple(path))
    if rule == "renban":
        size = rng.randint(3, 5 if n == 9 else 4)
        path = _grow_path(rng, x, size, free, king,
                          lambda p, c, end: g[c] not in [g[q] for q in p]
                          and max(g[c], *[g[q] for q in p]) - min(g[c], *[g[q] for q in p]) < size)
        digits = [g[c] for c in path]
        if len(path) < 3 or max(digits) - min(digits) != len(path) - 1:
            return None
        if rng.randrange(2):
            path.reverse()
        return ("set", tuple(path), _run_sets(n, len(path)), "renban")
    if rule == "arrow":
        for _ in range(6):
            circle = rng.choice([x] + [c for c in king[x] if free[c]])
            if g[circle] < 3:
                continue
            target = g[circle]
            length = rng.randint(2, 3)
            shaft: list[int] = []
            tip = circle
            total = 0
            while len(shaft) < length:
                options = [c for c in king[tip] if free[c] and c != circle and c not in shaft
                           and total + g[c] <= target - (length - len(shaft) - 1)]
                if not options:
                    break
                tip = rng.choice(options)
                shaft.append(tip)
                total += g[tip]
            if len(shaft) >= 2 and total == target and (x == circle or x in shaft):
                return ("arrow", circle, tuple(shaft))
        return None
    raise ValueError(rule)


def _grow_path_region(rng: ItemRng, start: int, size: int, free: list[bool], orth: list[list[int]],
                      g: list[int]) -> list[int]:
    """A random orthogonally connected region of up to `size` free cells with distinct digits in g."""
    region = [start]
    while len(region) < size:
        digits = {g[c] for c in region}
        options = sorted({c for r in region for c in orth[r] if free[c] and c not in region and g[c] not in digits})
        if not options:
            break
        region.append(rng.choice(options))
    return region


def _solver_form(k: tuple, n: int) -> list[tuple]:
    kind = k[0]
    if kind == "whisper":
        table = _pair_table("whisper", n)
        return [("pair", a, b, table) for a, b in zip(k[1], k[1][1:])]
    if kind == "set":
        houses = _geometry(n)[0]
        inside = set(k[1])
        outside = tuple(c for h in houses if inside <= set(h) for c in h if c not in inside)
        return [k[:3] + (outside,)]
    if kind == "pair":
        return [k[:4]]
    return [k]


def _solver(n: int, clues: list[tuple]) -> VariantSolver:
    return VariantSolver(n, [s for _, k in clues for s in _solver_form(k, n)])


def _clue_holds(k: tuple, g: list[int], n: int) -> bool:
    return all(_holds(s, g, n) for s in _solver_form(k, n))


def _variant_puzzle(rng: ItemRng, n: int, rules: list[str], givens: int, start: int,
                    max_nodes: int) -> tuple[list[int], list[tuple], int] | None:
    """A solution grid, a clue set whose only solution it is, and the nodes of the complete search that proves
    it (at most max_nodes); None when the draw got stuck.

    `start` random true clues first; then, while a search finds a second solution, a clue that the second
    solution breaks (through a cell where it differs); while the search runs past max_nodes, two more random
    clues. Then clues are dropped in random order while the puzzle stays unique with a proof of at most
    max_nodes nodes, until the nodes spent on such attempts pass _PRUNE_BUDGET * max_nodes: a bounded pruning
    (generation time), so the set is not minimal — a fully minimal set is some 17 clues whose proof takes
    thousands of nodes — but each attempted drop that kept the proof within max_nodes was made."""
    truth = VariantSolver(n, []).solve(limit=1, order=rng.shuffle)[0]
    board = _Board(n)
    clues: list[tuple] = []  # (rule, constraint)
    cells = n * n

    def add(alt: list[int] | None = None) -> bool:
        differ = [c for c in range(cells) if alt[c] != truth[c]] if alt else None
        for _ in range(60):
            x = rng.choice(differ) if differ else rng.randrange(cells)
            options = rules + (["given"] if sum(r == "given" for r, _ in clues) < givens else [])
            rule = rng.choice(options)
            k = _draw_rule(rng, rule, x, truth, n, board)
            if k is not None and (alt is None or not _clue_holds(k, alt, n)):
                board.take(rule, k)
                clues.append((rule, k))
                return True
        return False

    def check(chosen: list[tuple]) -> tuple[list[int] | None | bool, int]:
        """(a second solution, or None when the truth is the only one, or False when the search ran past
        max_nodes) and the nodes searched."""
        solver = _solver(n, chosen)
        try:
            found = solver.solve(limit=1, avoid=truth, cap=max_nodes)
        except _Capped:
            return False, solver.nodes
        return (found[0] if found else None), solver.nodes

    for _ in range(start):
        add()
    for _ in range(40):
        alt, nodes = check(clues)
        if alt is None:
            break
        if not (add(alt) if alt else add() and add()):
            return None
    else:
        return None
    order = list(range(len(clues)))
    rng.shuffle(order)
    keep = set(order)
    spent = 0
    for i in order:
        if spent > _PRUNE_BUDGET * max_nodes:
            break
        alt, used = check([clues[j] for j in sorted(keep - {i})])
        spent += used
        if alt is None:
            keep.discard(i)
            nodes = used
    return truth, [clues[j] for j in sorted(keep)], nodes


def _cell(c: int, n: int) -> str:
    return f"r{c // n + 1}c{c % n + 1}"


_RULE_TEXT = {
    "killer": "Killer cages: the digits in a cage add up to the cage's total, and no digit repeats within a cage "
              "(even when the cage spans more than one row, column or box).",
    "thermo": "Thermometers: each is listed from its bulb to its tip, and the digits strictly increase along it "
              "from the bulb (each digit is greater than the one before it).",
    "arrow": "Arrows: each has a circle (one cell) and a shaft (the cells listed after it); the digit in the circle "
             "equals the sum of the digits on the shaft. Digits on a shaft may repeat where the row, column and "
             "box rules allow it.",
    "kropki": "Kropki dots: a white dot between two cells means their digits differ by exactly 1; a black dot "
              "means one of the two digits is exactly twice the other (1 and 2 fit either kind of dot).",
    "xv": "X and V: an X between two cells means their digits add up to 10; a V means they add up to 5.",
    "whisper": "German whispers lines: any two cells next to each other along the line (consecutive in its list) "
               "hold digits that differ by at least {gap}.",
    "renban": "Renban lines: the digits on a line are all different and form a run of consecutive digits, in any "
              "order (for example 4, 6, 5 on a line of three cells).",
}
_LINE_WORDS = {"thermo": "thermometers", "arrow": "arrows",
               "whisper": "whispers lines", "renban": "renban lines"}
_RULE_NAMES = {"killer": "Killer cages", "thermo": "Thermometers (bulb first)", "arrow": "Arrows",
               "kropki": "Kropki dots", "xv": "X and V", "whisper": "German whispers lines",
               "renban": "Renban lines", "given": "Given digits"}


def _clue_text(rule: str, k: tuple, n: int) -> str:
    at = lambda c: _cell(c, n)  # noqa: E731
    if rule == "given":
        return f"{at(k[1])} = {k[2]}"
    if rule == "killer":
        return f"cage of total {k[3]}: " + ", ".join(at(c) for c in k[1])
    if rule == "arrow":
        return f"circle {at(k[1])}; shaft " + ", ".join(at(c) for c in k[2])
    if rule in ("kropki", "xv"):
        a, b = sorted(k[1:3])
        mark = {"white": "white dot", "black": "black dot", "x": "X", "v": "V"}[k[4]]
        return f"{mark} between {at(a)} and {at(b)}"
    return ", ".join(at(c) for c in k[1])


def variant_sudoku(rng: ItemRng, *, size: int = 9, rule_types: int = 5, givens: int = 0,
                   max_nodes: int = 120) -> Generated:
    """A sudoku with few or no given digits, fixed by a random mix of variant constraints (killer cages,
    thermometers, arrows, kropki dots, X and V, German whispers, renban lines) whose interactions make the only
    solution; the measure is the nodes of a complete propagate-and-branch search (beyond propagation alone)."""
    n = size
    start = 26 if n == 9 else 10
    while True:
        rules = rng.sample(_RULE_TYPES, rule_types)
        made = _variant_puzzle(rng, n, rules, givens, start, max_nodes)
        if made is not None:
            break
    truth, chosen, nodes = made
    present = [r for r in _RULE_TYPES + ("given",) if any(rule == r for rule, _ in chosen)]
    first = lambda clue: min(_constraint_cells(clue[1]))  # noqa: E731
    box = "3 × 3" if n == 9 else "2 × 3 (two rows tall, three columns wide)"
    bands = "rows 1–3, 4–6 and 7–9 crossed with columns 1–3, 4–6 and 7–9" if n == 9 else \
        "rows 1–2, 3–4 and 5–6 crossed with columns 1–3 and 4–6"
    rules_text = "\n".join(f"- {_RULE_TEXT[r].format(gap=_whisper_gap(n))}" for r in present if r != "given")
    sections = []
    for r in present:
        items = sorted((clue for clue in chosen if clue[0] == r), key=first)
        sections.append(f"{_RULE_NAMES[r]}:\n" + "\n".join(f"- {_clue_text(r, k, n)}" for _, k in items))
    lines_used = [_LINE_WORDS[r] for r in present if r in _LINE_WORDS]
    marks_used = [{"kropki": "dot", "xv": "X or V"}[r] for r in present if r in ("kropki", "xv")]
    geometry = []
    if lines_used:
        listed = ", ".join(lines_used[:-1]) + (" and " if len(lines_used) > 1 else "") + lines_used[-1]
        geometry.append(f"{listed[0].upper() + listed[1:]} are listed cell by cell along the line"
                        + (" (an arrow: its circle first, then its shaft in order)" if "arrow" in present else "")
                        + ", and consecutive cells in a list are neighbours, side by side or diagonally.")
    if marks_used:
        geometry.append(f"A {' or an '.join(marks_used)} stands only between two cells that share a side, and only "
                        "the marks listed are there: two neighbouring cells without a mark may still fit one.")
    if "killer" in present:
        geometry.append("The cells of a cage are connected through shared sides; cells outside every cage are "
                        "unconstrained by cages.")
    prompt = (
        f"Solve this {n} × {n} variant sudoku. Rows are numbered 1 to {n} from top to bottom and columns 1 to {n} "
        f"from left to right; r3c5 is the cell in row 3, column 5. Place a digit from 1 to {n} in every cell so "
        f"that each row, each column and each {box} box contains every digit from 1 to {n} exactly once (the "
        f"boxes are {bands}). "
        + ("No digits are given. " if "given" not in present else "")
        + "In addition, these rules apply:\n" + rules_text + "\n" + " ".join(geometry)
        + " Every rule applies exactly as stated and nothing else is implied.\n\n"
        + "\n\n".join(sections)
        + "\n\nExactly one grid satisfies all the rules. Find it.\n\n"
        f"End your response with a final line `ANSWER: <rows>`, where <rows> lists the {n} rows from top to bottom, "
        f"comma-separated, each written as its {n} digits from left to right with no spaces (so the line has {n} "
        f"comma-separated entries of {n} digits each).")
    rows = ["".join(str(truth[r * n + c]) for c in range(n)) for r in range(n)]
    generated = _list_answer(prompt, rows)
    return generated.model_copy(update={"difficulty": {
        "nodes": nodes, "clues": len(chosen), "givens": sum(rule == "given" for rule, _ in chosen),
        "rule_types": len([r for r in present if r != "given"]),
        "constrained_cells": len({c for _, k in chosen for c in _constraint_cells(k)})}})


# ---------------------------------------------------------------- knights, knaves and switchers


def _dfs_rejections(masks: list[np.ndarray], branching: list[int]) -> tuple[int, int]:
    """Nodes visited and nodes rejected by a depth-first search over an enumerated candidate space.

    The candidates are listed in lexicographic order of the search's choices (choice 0 most significant), so
    the candidates sharing their first d choices form one contiguous block, and `branching[d]` is the number of
    options for choice d. The search extends a partial assignment only while every constraint on its own still
    has a completion that satisfies it (as a propagator checks each constraint); `masks[c][k]` says whether
    candidate k satisfies constraint c.
    """
    depth = len(branching)
    ok = list(masks)
    alive = [_all(ok)]
    for d in range(depth - 1, 0, -1):  # from prefixes of d + 1 choices to prefixes of d choices
        if branching[d] > 1:
            ok = [_any_of_blocks(o, branching[d]) for o in ok]
        alive.append(_all(ok))
    alive.reverse()  # alive[d]: which prefixes of d + 1 choices the search keeps
    nodes = rejected = 0
    parents = 1
    for d in range(depth):
        visited, survivors = parents * branching[d], int(alive[d].sum())
        nodes, rejected, parents = nodes + visited, rejected + visited - survivors, survivors
    return nodes, rejected


def _any_of_blocks(mask: np.ndarray, size: int) -> np.ndarray:
    """For consecutive blocks of `size` entries, whether any entry is set (faster than reshape(...).any(1))."""
    out = mask[0::size].copy()
    for j in range(1, size):
        out |= mask[j::size]
    return out


def _all(masks: list[np.ndarray]) -> np.ndarray:
    """The elementwise AND of equal-length boolean arrays."""
    out = masks[0].copy()
    for mask in masks[1:]:
        out &= mask
    return out


_ISLANDERS = ["Ava", "Boris", "Cora", "Dmitri", "Elsa", "Finn", "Greta", "Hugo", "Iris", "Jules", "Kai", "Luz",
              "Mona", "Nils"]
_KINDS = ["knight", "knave", "switcher"]
# A statement's truth per row of an assignment table K (rows x islanders), given the table's kind counts C
# ([kind, row]); and a statement: its text and that truth function.
Truth = Callable[[np.ndarray, np.ndarray], np.ndarray]
Statement = tuple[str, Truth]


@cache
def _ternary(n: int) -> np.ndarray:
    """Every assignment of the three kinds to n islanders, one per row, lexicographic (column 0 most
    significant)."""
    return np.ascontiguousarray(np.indices((3,) * n, dtype=np.int8).reshape(n, -1).T)


@cache
def _kind_counts(n: int) -> np.ndarray:
    """How many islanders of each kind every row of _ternary(n) has: [kind, row]. Reordering the columns of the
    table leaves these counts alone, so they serve the search's reordered table as well."""
    K = _ternary(n)
    return np.stack([(K == k).sum(1, dtype=np.int8) for k in range(3)])


def _island_statement(rng: ItemRng, s: int, n: int, names: list[str]) -> Statement:
    """A random statement by islander s about the others, itself, or everyone."""
    x, y, z = rng.sample([i for i in range(n) if i != s], 3)
    X, Y, Z = names[x], names[y], names[z]
    k, k2 = rng.sample(range(3), 2)
    kind, kind2 = _KINDS[k], _KINDS[k2]
    c, total, everyone = rng.randint(1, 2), rng.randint(2, (n + 1) // 2), _NUMBER_WORDS[n]
    options: list[tuple[int, str, Truth]] = [
        (3, f"{X} is a {kind}.", lambda K, C: K[:, x] == k),
        (2, f"{X} is not a {kind}.", lambda K, C: K[:, x] != k),
        (3, f"{X} and {Y} are the same kind.", lambda K, C: K[:, x] == K[:, y]),
        (2, f"{X} and {Y} are different kinds.", lambda K, C: K[:, x] != K[:, y]),
        (2, f"{X} and I are the same kind.", lambda K, C: K[:, x] == K[:, s]),
        (3, f"Exactly {c} of {X}, {Y} and {Z} {'is a' if c == 1 else 'are'} {kind}{'' if c == 1 else 's'}.",
         lambda K, C: (K[:, x] == k).astype(np.int8) + (K[:, y] == k) + (K[:, z] == k) == c),
        (2, f"At least one of {X} and {Y} is a {kind}.", lambda K, C: (K[:, x] == k) | (K[:, y] == k)),
        (3, f"If {X} is a {kind}, then {Y} is a {kind2}.", lambda K, C: (K[:, x] != k) | (K[:, y] == k2)),
        (1, f"I am a {kind}.", lambda K, C: K[:, s] == k),
        (1, f"I am not a {kind}.", lambda K, C: K[:, s] != k),
        (2, f"Exactly {total} of us {everyone} are {kind}s.", lambda K, C: C[k] == total),
        (2, f"Among us {everyone} there are more {kind}s than {kind2}s.",
         lambda K, C: C[k] > C[k2]),
    ]
    _, text, truth = rng.weighted_choice(options, [o[0] for o in options])
    return text, truth


@cache
def _kinds_of(n: int) -> list[list[np.ndarray]]:
    """kinds[s][k]: the rows of _ternary(n) where islander s is of kind k."""
    K = _ternary(n)
    return [[np.ascontiguousarray(K[:, s] == k) for k in range(3)] for s in range(n)]


def _consistent(kinds: list[np.ndarray], said: list[np.ndarray]) -> np.ndarray:
    """Where a speaker's statements (their truth per row, in order) fit the speaker's kind (kinds[k]: rows where
    the speaker is of kind k): a knight's are all true, a knave's all false, and a switcher's alternate."""
    if not said:
        return np.ones(len(kinds[0]), dtype=bool)
    anything = said[0].copy()
    for value in said[1:]:
        anything |= value
    fit = kinds[0] & _all(said) | kinds[1] & ~anything
    if len(said) > 1:
        return fit | kinds[2] & _all([a != b for a, b in zip(said, said[1:])])
    return fit | kinds[2]


def _meta_statement(rng: ItemRng, bases: list[tuple[int, Truth]]) -> tuple[str, Truth, tuple[int, ...]]:
    """A statement about the truth of one or two earlier statements about kinds (never about a statement about
    statements, so nothing refers to itself); its text names them as «id», numbered when the prompt is laid out."""
    if len(bases) >= 2 and rng.random() < 0.6:
        (a, fa), (b, fb) = rng.sample(bases, 2)
        options: list[tuple[int, str, Truth]] = [
            (2, f"Statements «{a}» and «{b}» are both true or both false.", lambda K, C: fa(K, C) == fb(K, C)),
            (2, f"Exactly one of statements «{a}» and «{b}» is true.", lambda K, C: fa(K, C) != fb(K, C)),
            (1, f"At least one of statements «{a}» and «{b}» is false.", lambda K, C: ~(fa(K, C) & fb(K, C))),
        ]
        _, text, truth = rng.weighted_choice(options, [o[0] for o in options])
        return text, truth, (a, b)
    a, fa = rng.choice(bases)
    if rng.random() < 0.5:
        return f"Statement «{a}» is true.", lambda K, C: fa(K, C), (a,)
    return f"Statement «{a}» is false.", lambda K, C: ~fa(K, C), (a,)


def knights_knaves(rng: ItemRng, *, islanders: int = 11, max_statements: int = 3, meta: int = 30) -> Generated:
    """Knights, knaves and switchers (whose statements alternate between true and false), each making up to
    `max_statements` statements in order, some of them (about `meta` % of the draws) about the truth of other
    numbered statements; exactly one assignment of kinds fits, and no statement is spare."""
    n = islanders
    names = rng.sample(_ISLANDERS, n)
    K, C = _ternary(n), _kind_counts(n)
    while True:  # a draw whose speakers run out of statements before one assignment is left starts again
        truth = [rng.randrange(3) for _ in range(n)]
        if not all(2 <= truth.count(k) for k in range(3)):
            continue
        row = sum(kind * 3 ** (n - 1 - i) for i, kind in enumerate(truth))  # the hidden assignment's row in K
        first_true = [rng.random() < 0.5 for _ in range(n)]  # whether a switcher's first statement is true
        # said[s]: speaker s's statements in order, each (id, text, truth function, ids of the statements it is
        # about); bases: the statements about kinds, which statements about statements may refer to.
        said: list[list[tuple[int, str, Truth, tuple[int, ...]]]] = [[] for _ in range(n)]
        bases: list[tuple[int, Truth]] = []
        alive, Ka, Ca, tries, next_id = np.arange(len(K)), K, C, 0, 0  # the consistent rows so far, their table
        while len(alive) > 1 and tries < 40 * n:
            open_speakers = [i for i in range(n) if len(said[i]) < max_statements]
            if not open_speakers:
                break
            s, tries = rng.choice(open_speakers), tries + 1
            if bases and rng.random() < meta / 100:
                text, truth_of, refs = _meta_statement(rng, bases)
            else:
                (text, truth_of), refs = _island_statement(rng, s, n, names), ()
            # A knight's statements are true, a knave's false; a switcher's alternate from a drawn start.
            wanted = truth[s] == 0 or (truth[s] == 2 and first_true[s] == (len(said[s]) % 2 == 0))
            if bool(truth_of(K[row:row + 1], C[:, row:row + 1])[0]) != wanted or any(t == text for _, t, _, _ in said[s]):
                continue
            fit = _consistent([Ka[:, s] == k for k in range(3)],
                              [t(Ka, Ca) for _, _, t, _ in said[s]] + [truth_of(Ka, Ca)])
            if not fit.all():  # a statement that cuts nothing would be spare at once
                alive, Ka, Ca, tries = alive[fit], Ka[fit], Ca[:, fit], 0
                said[s].append((next_id, text, truth_of, refs))
                if not refs:
                    bases.append((next_id, truth_of))
                next_id += 1
        if len(alive) == 1:
            break
    kinds = _kinds_of(n)
    truths = [[t(K, C) for _, _, t, _ in said[s]] for s in range(n)]
    fit = [_consistent(kinds[s], truths[s]) for s in range(n)]  # fit[s]: the rows where s's statements fit
    # Drop statements while the hidden assignment stays the only consistent one; a statement another one is about
    # stays while that one does. Dropping a statement from the middle changes a switcher's alternation rather
    # than relaxing it, so sweep until no statement can go.
    while True:
        dropped = False
        slots = [(s, sid) for s in range(n) for sid, _, _, _ in said[s]]
        rng.shuffle(slots)
        for s, sid in slots:
            if any(sid in refs for t in said for _, _, _, refs in t):
                continue
            i = next(j for j, entry in enumerate(said[s]) if entry[0] == sid)
            rest = truths[s][:i] + truths[s][i + 1:]
            trial = _consistent(kinds[s], rest)
            if not trial[row]:
                continue
            survivors = _all([f for r, f in enumerate(fit) if r != s] + [trial])
            if int(survivors.sum()) == 1:
                del said[s][i], truths[s][i]
                fit[s], dropped = trial, True
        if not dropped:
            break
    # The measure: a search that gives islanders kinds one at a time, most-mentioned first, and rejects a
    # partial assignment as soon as some speaker's statements can no longer all fit that speaker's kind.
    mentions = [sum(names[i] in text for t in said for _, text, _, _ in t) + 2 * len(said[i]) for i in range(n)]
    order = sorted(range(n), key=lambda i: (-mentions[i], i))
    depth = [order.index(i) for i in range(n)]
    K2 = K[:, depth]  # rows in the search's lexicographic order; column i is islander i
    kinds2 = [kinds[d] for d in depth]  # islander i of K2 is column depth[i] of K
    masks = [_consistent(kinds2[s], [truth_of(K2, C) for _, _, truth_of, _ in said[s]]) for s in range(n) if said[s]]
    nodes, rejected = _dfs_rejections(masks, [3] * n)
    number = {sid: k for k, sid in enumerate((sid for t in said for sid, _, _, _ in t), 1)}
    lines = []
    for s in range(n):
        if said[s]:
            parts = []
            for sid, text, _, refs in said[s]:
                for ref in refs:
                    text = text.replace(f"«{ref}»", str(number[ref]))
                parts.append(f'[{number[sid]}] "{text}"')
            lines.append(f"{names[s]}: " + " ".join(parts))
        else:
            lines.append(f"{names[s]} says nothing.")
    word = _NUMBER_WORDS[n]
    answer = [_KINDS[k] for k in truth]
    metas = sum(bool(refs) for t in said for _, _, _, refs in t)
    prompt = (
        "On an island every inhabitant is exactly one of three kinds: a knight, whose statements are all true; a "
        "knave, whose statements are all false; or a switcher, whose statements alternate between true and false "
        "in the order they are made (a switcher's first statement may be true or false, the second then has the "
        "opposite truth value, the third the same as the first; a switcher who makes a single statement may say "
        f"anything). You meet {word} inhabitants — " + ", ".join(names) + " — who all know each other's kinds. "
        f"Their statements are numbered [1] to [{len(number)}] across all of them; each inhabitant's statements "
        "are listed in the order that inhabitant made them. A statement is either about kinds or about whether "
        "other numbered statements are true (\"statement 4 is true\" is true exactly when statement 4 is true); "
        "no statement is about itself. \"If P, then Q\" is false only when P is true and Q is false. \"Us "
        f"{word}\" means all {word} of them, the speaker included. \"I\" is the speaker.\n\n"
        + "\n".join(lines)
        + "\n\nExactly one assignment of kinds is consistent with all the statements. What is each inhabitant's "
        f"kind?\n\nEnd your response with a final line `ANSWER: <kinds>`, where <kinds> is {n} comma-separated "
        "words, each knight, knave or switcher, giving the kinds of " + ", ".join(names) + " in that order.")
    generated = _list_answer(prompt, answer)
    return generated.model_copy(update={"difficulty": {
        "rejected": rejected, "nodes": nodes, "statements": sum(map(len, said)), "about_statements": metas,
        "search_space_log10": round(n * math.log10(3), 1)}})


# ---------------------------------------------------------------- scheduling

_TASKS = ["Audit", "Backup", "Cabling", "Deploy", "Encrypt", "Firmware", "Gateway", "Hotfix", "Inventory", "Journal",
          "Kiosk", "Ledger"]
_JOB_TYPES = ["press", "lathe"]


def _order_cost(order: list[int], p: list[int], w: list[int], r: list[int], kind: list[int], setup: int,
                before: list[tuple[int, int]]) -> int | None:
    """Total weighted finishing time of an order (each job as early as possible, a changeover of `setup` hours
    after a job whose type differs from the next one's), None if it breaks a precedence."""
    position = {j: i for i, j in enumerate(order)}
    if any(position[a] > position[b] for a, b in before):
        return None
    t = cost = 0
    last = None
    for j in order:
        t = max(t + (setup if last is not None and kind[j] != last else 0), r[j]) + p[j]
        cost += w[j] * t
        last = kind[j]
    return cost


def _heuristic_cost(p: list[int], w: list[int], r: list[int], kind: list[int], setup: int,
                    before: list[tuple[int, int]]) -> int:
    """The obvious approach: dispatch (whenever the machine is free, start the released job whose predecessors
    are done with the highest weight per hour, ties to the lower index; if none is released, wait for the first
    release), then swap neighbouring jobs while a swap lowers the cost."""
    n, order, done, t = len(p), [], set(), 0
    while len(order) < n:
        ready = [j for j in range(n) if j not in done and all(a in done for a, b in before if b == j)]
        released = [j for j in ready if r[j] <= t] or [min(ready, key=lambda j: (r[j], j))]
        j = max(released, key=lambda j: (w[j] / p[j], -j))
        t = max(t + (setup if order and kind[order[-1]] != kind[j] else 0), r[j]) + p[j]
        done.add(j)
        order.append(j)
    cost = _order_cost(order, p, w, r, kind, setup, before)
    assert cost is not None
    while True:
        best = None
        for i in range(n - 1):
            swapped = order[:i] + [order[i + 1], order[i]] + order[i + 2:]
            c = _order_cost(swapped, p, w, r, kind, setup, before)
            if c is not None and c < cost and (best is None or c < best[0]):
                best = (c, swapped)
        if best is None:
            return cost
        cost, order = best


def _schedule_optimum(p: list[int], w: list[int], r: list[int], kind: list[int], setup: int,
                      before: list[tuple[int, int]]) -> tuple[int, int, list[int], int]:
    """The minimum total cost, how many orders reach it, one such order, and the branch-and-bound measure.

    Dynamic programming over states (jobs done, finishing time, type of the last job): the future of a partial
    order depends only on its state, so keeping the cheapest cost per state (and counting the partial orders that
    reach it) finds the optimum and counts the optimal orders exactly. The measure counts the states a
    branch-and-bound must still expand when it already knows the optimum: those whose cost plus a lower bound
    (the jobs left in ratio order, duration per weight, without idle time or changeovers from the later of the
    current time and their earliest release) is below the optimum.
    """
    n = len(p)
    need = [0] * n
    for a, b in before:
        need[b] |= 1 << a
    ratio = sorted(range(n), key=lambda j: (p[j] / w[j], j))
    layer: dict[tuple[int, int, int], list] = {(0, 0, -1): [0, 1, None]}  # state -> [cost, count, (prev, job)]
    nodes = 0
    best_at: dict = {}
    for size in range(n):
        nxt: dict[tuple[int, int, int], list] = {}
        for state, (cost, count, _) in layer.items():
            mask, t, last = state
            for j in range(n):
                if mask >> j & 1 or need[j] & ~mask:
                    continue
                finish = max(t + (setup if last >= 0 and kind[j] != last else 0), r[j]) + p[j]
                key = (mask | 1 << j, finish, kind[j])
                c = cost + w[j] * finish
                entry = nxt.get(key)
                if entry is None or c < entry[0]:
                    nxt[key] = [c, count, (state, j)]
                elif c == entry[0]:
                    entry[1] += count
        best_at[size + 1] = nxt
        layer = nxt
    optimum = min(e[0] for e in layer.values())
    ways = sum(e[1] for e in layer.values() if e[0] == optimum)
    state = next(k for k, e in layer.items() if e[0] == optimum)
    order = []
    for size in range(n, 0, -1):
        prev, j = best_at[size][state][2]
        order.append(j)
        state = prev
    order.reverse()
    for size in range(1, n):
        for (mask, t, last), (cost, _, _) in best_at[size].items():
            left = [j for j in ratio if not mask >> j & 1]
            clock = max(t, min(r[j] for j in left))
            bound = cost
            for j in left:
                clock += p[j]
                bound += w[j] * clock
            nodes += bound < optimum
    return optimum, ways, order, nodes


def task_schedule(rng: ItemRng, *, jobs: int = 11, precedences: int = 6, releases: int = 5,
                  setup: int = 2) -> Generated:
    """Jobs of two types on one machine with release times, precedences and a changeover between types: the
    minimum total weighted finishing time and the unique order that reaches it, drawn so that the obvious approach
    (dispatch by weight per hour, then swap neighbours while that helps) misses it."""
    n = jobs
    while True:
        p = [rng.randint(1, 7) for _ in range(n)]
        w = [rng.randint(1, 5) for _ in range(n)]
        kind = [rng.randrange(2) for _ in range(n)]
        if not 3 <= sum(kind) <= n - 3:
            continue
        r = [0] * n
        for j in rng.sample(range(n), releases):
            r[j] = rng.randint(2, 2 * n)
        pairs: list[tuple[int, int]] = []
        while len(pairs) < precedences:
            a, b = rng.sample(range(n), 2)
            if (a, b) not in pairs and (b, a) not in pairs:
                pairs.append((a, b))
        need = {j: {a for a, b in pairs if b == j} for j in range(n)}
        done: set[int] = set()  # a cycle of precedences leaves no feasible order
        while len(done) < n and (free := [j for j in range(n) if j not in done and need[j] <= done]):
            done |= set(free)
        if len(done) < n:
            continue
        best, ways, optimum, nodes = _schedule_optimum(p, w, r, kind, setup, pairs)
        if ways != 1:
            continue
        greedy = _heuristic_cost(p, w, r, kind, setup, pairs)
        if greedy > best:
            break
    names = rng.sample(_TASKS, n)
    listing = "\n".join(
        f"- {names[j]}: {_JOB_TYPES[kind[j]]} job, {p[j]} {'hour' if p[j] == 1 else 'hours'}, weight {w[j]}"
        + (f", released at hour {r[j]}" if r[j] else ", available from hour 0") for j in range(n))
    rules = "\n".join(f"- {names[a]} must be finished before {names[b]} starts." for a, b in pairs)
    word = _NUMBER_WORDS[n]
    hours = f"{setup} {'hour' if setup == 1 else 'hours'}"
    prompt = (
        f"A workshop has one machine and {word} jobs to run on it, one at a time, each from start to finish without "
        "interruption. Time is counted in whole hours from hour 0, when the machine becomes free. Each job has a "
        f"type ({_JOB_TYPES[0]} or {_JOB_TYPES[1]}), a duration, a weight, and a release time before which it cannot "
        f"start. When the machine goes from a job of one type to a job of the other type, a changeover of {hours} "
        "must follow the end of the first job before the second may start (no changeover before the first job or "
        "between two jobs of the same type; the changeover may overlap a wait for a release). Once an order of the "
        "jobs is chosen, each job starts as soon as the previous job has finished (plus the changeover, if the "
        "type changes) and its own release time has come (the machine stands idle while it waits for a release). "
        "A job of weight w that finishes at hour C costs w × C, and the total cost of an order is the sum of these "
        "costs over all jobs.\n\nJobs:\n"
        + listing + "\n\nOrder constraints:\n" + rules
        + "\n\nExactly one order that respects the order constraints has the smallest possible total cost. "
        "What is that minimum total cost, and what is the order?\n\n"
        "End your response with a final line `ANSWER: <cost>, <jobs>`, where <cost> is the minimum total cost as "
        f"an integer and <jobs> lists the {n} job names in the order they run, comma-separated (so the line has "
        f"{n + 1} comma-separated entries).")
    generated = _list_answer(prompt, [str(best)] + [names[j] for j in optimum])
    return generated.model_copy(update={"difficulty": {
        "nodes": nodes, "heuristic_excess": greedy - best,
        "search_space_log10": round(math.log10(math.factorial(n)), 1)}})


# ---------------------------------------------------------------- zebra grid

# Each category: (what the answer asks for, heading, value pool, how a clue names the holder of a value).
_ZEBRA_CATEGORIES = [
    ("name", "Names", ["Alice", "Bruno", "Chiara", "Dario", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas"],
     "{}"),
    ("house colour", "House colours", ["red", "green", "white", "yellow", "blue", "orange", "purple", "grey"],
     "the resident of the {} house"),
    ("pet", "Pets", ["cat", "dog", "parrot", "tortoise", "goldfish", "rabbit", "hamster", "ferret"],
     "the {} owner"),
    ("drink", "Drinks", ["tea", "coffee", "milk", "juice", "water", "cocoa", "lemonade", "kefir"],
     "the {} drinker"),
    ("job", "Jobs", ["baker", "pilot", "nurse", "painter", "lawyer", "chemist", "farmer", "tailor"], "the {}"),
    ("instrument", "Instruments", ["violin", "cello", "piano", "drums", "flute", "harp", "guitar", "trumpet"],
     "the person who plays the {}"),
    ("hobby", "Hobbies", ["chess", "rowing", "knitting", "fencing", "gardening", "pottery", "archery", "juggling"],
     "the person whose hobby is {}"),
]

# Binary relations between the houses x, y (0-based) of two values, in a row of n houses.
_ZEBRA_RELATIONS: dict[str, Callable[[int, int, int], bool]] = {
    "same": lambda x, y, n: x == y,
    "different": lambda x, y, n: x != y,
    "left": lambda x, y, n: x + 1 == y,
    "next": lambda x, y, n: abs(x - y) == 1,
    "before": lambda x, y, n: x < y,
    "gap": lambda x, y, n: abs(x - y) == 2,
    "apart": lambda x, y, n: abs(x - y) > 1,
    "mirror": lambda x, y, n: x + y == n - 1,
    "parity": lambda x, y, n: (x - y) % 2 == 0,
    "far": lambda x, y, n: abs(x - y) >= 3,
    "double": lambda x, y, n: x + 1 == 2 * (y + 1),
    "opposite": lambda x, y, n: (x - y) % 2 == 1,
}
# Clue weights: the weak, long-range relations dominate; "same", a fixed house and "directly left" are rare.
_ZEBRA_MIXES = {
    "weak": {"same": 1, "different": 3, "left": 1, "next": 3, "before": 4, "gap": 1, "apart": 4, "mirror": 2,
             "parity": 3, "far": 2, "double": 0, "opposite": 2, "house": 0, "end": 1, "even": 1, "not-house": 2},
    "mixed": {"same": 2, "different": 2, "left": 2, "next": 3, "before": 4, "gap": 2, "apart": 3, "mirror": 2,
              "parity": 2, "far": 2, "double": 1, "opposite": 1, "house": 1, "end": 1, "even": 1, "not-house": 1},
}
_ZEBRA_UNARY = ("house", "end", "even", "not-house")
_NODE_CAP = 3000  # a search past this many nodes abandons the draw (under 1 % of draws; it bounds the time)


class _SearchCapped(Exception):
    """A zebra search went past _NODE_CAP nodes."""


@cache
def _support(relation: str, n: int, negated: bool) -> tuple[list[int], list[int]]:
    """Bitmask supports of a relation over n houses: sx[mask of y] = houses x with a partner y in the mask
    (negated: the complement relation), and sy[mask of x] likewise for y."""
    holds = _ZEBRA_RELATIONS[relation]
    pairs = [(x, y) for x in range(n) for y in range(n) if holds(x, y, n) != negated]
    sx, sy = [0] * (1 << n), [0] * (1 << n)
    for mask in range(1 << n):
        for x, y in pairs:
            if mask >> y & 1:
                sx[mask] |= 1 << x
            if mask >> x & 1:
                sy[mask] |= 1 << y
    return sx, sy


class ZebraSolver:
    """A zebra grid as a constraint problem: one variable per (category, value) whose domain is a bitmask of houses.

    Propagation is arc consistency on every two-value clue plus the all-different rule of each category (a value
    placed in a house leaves it to no other value of the category; a house only one value can take gets it).
    Search branches on the variable with the fewest houses left; a conflict is a branch propagation refutes.
    """

    def __init__(self, n: int, m: int, clues: list[tuple], negate: int | None = None):
        self.n, self.full = n, (1 << n) - 1
        self.adjacent: list[list[tuple[int, list[int]]]] = [[] for _ in range(n * m)]
        root = [self.full] * (n * m)
        for index, (kind, x, y, relation) in enumerate(clues):
            if kind == "unary":  # y is the mask of houses the clue allows
                root[x] &= self.full & ~y if index == negate else y
            else:
                sx, sy = _support(relation, n, index == negate)
                self.adjacent[y].append((x, sx))
                self.adjacent[x].append((y, sy))
        self.root, self.conflicts, self.nodes = root, 0, 0

    def _propagate(self, dom: list[int], queue: list[int]) -> bool:
        """Narrow the domains to the fixpoint of the propagators (False on a wipe-out). The fixpoint does not
        depend on the order of the queue, so a variable already waiting in it is not queued twice."""
        n, adjacent, full = self.n, self.adjacent, self.full
        waiting = bytearray(len(dom))
        for y in queue:
            waiting[y] = 1
        queue = [y for y in range(len(dom)) if waiting[y]]
        while queue:
            dirty = 0  # bit c: category c changed
            while queue:
                y = queue.pop()
                waiting[y] = 0
                dy = dom[y]
                for x, support in adjacent[y]:
                    dx = dom[x]
                    new = dx & support[dy]
                    if new != dx:
                        if not new:
                            return False
                        dom[x] = new
                        if not waiting[x]:
                            waiting[x] = 1
                            queue.append(x)
                c = y // n
                dirty |= 1 << c
                if not dy & (dy - 1):  # placed: no other value of the category may take this house
                    for z in range(c * n, c * n + n):
                        if z != y and dom[z] & dy:
                            new = dom[z] & ~dy
                            if not new:
                                return False
                            dom[z] = new
                            if not waiting[z]:
                                waiting[z] = 1
                                queue.append(z)
            c = 0
            while dirty:  # a house that only one value of the category can still take
                if dirty & 1:
                    base = c * n
                    once = twice = 0
                    for z in range(base, base + n):
                        twice |= once & dom[z]
                        once |= dom[z]
                    if once != full:
                        return False
                    hidden = once & ~twice
                    if hidden:
                        for z in range(base, base + n):
                            only = dom[z] & hidden
                            if only and dom[z] != only:
                                if only & (only - 1):
                                    return False
                                dom[z] = only
                                if not waiting[z]:
                                    waiting[z] = 1
                                    queue.append(z)
                dirty >>= 1
                c += 1
        return True

    def solve(self, limit: int) -> list[list[int]]:
        """Up to `limit` solutions (house of every variable); with limit 2 the search proves uniqueness."""
        self.conflicts = self.nodes = 0
        dom, found = list(self.root), []
        if self._propagate(dom, list(range(len(dom)))):
            self._search(dom, found, limit)
        else:
            self.conflicts = 1
        return found

    def _search(self, dom: list[int], found: list[list[int]], limit: int) -> None:
        self.nodes += 1
        if self.nodes > _NODE_CAP:
            raise _SearchCapped
        best, fewest = -1, 99
        for v, d in enumerate(dom):
            if d & (d - 1):
                count = d.bit_count()
                if count < fewest:
                    best, fewest = v, count
                    if count == 2:
                        break
        if best < 0:
            found.append([d.bit_length() - 1 for d in dom])
            return
        rest = dom[best]
        while rest and len(found) < limit:
            bit = rest & -rest
            rest ^= bit
            child = list(dom)
            child[best] = bit
            if self._propagate(child, [best]):
                self._search(child, found, limit)
            else:
                self.conflicts += 1


def _zebra_holds(clue: tuple, grid: list[int], n: int) -> bool:
    kind, x, y, relation = clue
    if kind == "unary":
        return bool(y >> grid[x] & 1)
    return _ZEBRA_RELATIONS[relation](grid[x], grid[y], n)


def _zebra_clue(rng: ItemRng, n: int, m: int, grid: list[int], mix: dict[str, int]) -> tuple:
    """A random clue true of the hidden grid: ("unary", var, mask, kind) or ("binary", var, var, relation)."""
    kinds, weights = list(mix), list(mix.values())
    while True:
        kind = rng.weighted_choice(kinds, weights)
        if kind in _ZEBRA_UNARY:
            var = rng.randrange(n * m)
            h = grid[var]
            if kind == "house":
                mask = 1 << h
            elif kind == "end":
                if h not in (0, n - 1):
                    continue
                mask = 1 | 1 << (n - 1)
            elif kind == "even":
                mask = sum(1 << i for i in range(h % 2, n, 2))
            else:
                other = rng.randrange(n)
                if other == h:
                    continue
                mask = ((1 << n) - 1) & ~(1 << other)
            return "unary", var, mask, kind
        x, y = rng.randrange(n * m), rng.randrange(n * m - 1)  # two different variables (cheaper than sample)
        y += y >= x
        if x // n == y // n and kind in ("same", "different"):
            continue  # two values of one category never share a house
        if kind in ("same", "different") and y // n < x // n:
            x, y = y, x  # a name, if any, comes first ("Alice is the pilot.")
        if _ZEBRA_RELATIONS[kind](grid[x], grid[y], n):
            return "binary", x, y, kind


def _zebra_puzzle(rng: ItemRng, n: int, m: int, mix: dict[str, int]) -> tuple[list[int], list[tuple], ZebraSolver]:
    """A hidden grid and an irreducible clue set with exactly one solution, and the solver that proved it.

    Clues are added against counterexamples (each new clue refutes a second solution found so far), then every
    clue is tested for need by searching for a grid that breaks it alone; such a grid is kept as a witness that
    also proves other clues needed, and a clue with no such grid is dropped.
    """
    perms = [rng.sample(range(n), n) for _ in range(m)]
    grid = [perms[v // n][v % n] for v in range(n * m)]  # grid[var] = house of value var % n of category var // n
    clues = [_zebra_clue(rng, n, m, grid, mix) for _ in range(2 * n)]
    witnesses = []
    while True:
        other = next((s for s in ZebraSolver(n, m, clues).solve(2) if s != grid), None)
        if other is None:
            break
        witnesses.append(other)
        while _zebra_holds(clue := _zebra_clue(rng, n, m, grid, mix), other, n):
            pass
        clues.append(clue)
    keep, needed = list(range(len(clues))), set()

    def witness(solution: list[int]) -> None:
        broken = [j for j in keep if not _zebra_holds(clues[j], solution, n)]
        if len(broken) == 1:
            needed.add(broken[0])

    for solution in witnesses:
        witness(solution)
    order = list(keep)
    rng.shuffle(order)
    for i in order:
        if i in needed:
            continue
        rest = [j for j in keep if j != i] + [i]
        found = ZebraSolver(n, m, [clues[j] for j in rest], negate=len(rest) - 1).solve(1)
        if found:
            needed.add(i)
            witness(found[0])
        else:
            keep.remove(i)
    final = [clues[j] for j in keep]
    solver = ZebraSolver(n, m, final)
    assert solver.solve(2) == [grid]  # exactly one grid: the hidden one
    return grid, final, solver


def zebra(rng: ItemRng, *, houses: int = 7, attributes: int = 7, clues: str = "weak", asked: int = 3) -> Generated:
    """A row of houses, one resident each with a value in every category, fixed by an irreducible set of mostly
    weak clues; the answer is `asked` whole categories, house by house."""
    n, m, mix = houses, attributes, _ZEBRA_MIXES[clues]
    categories = [_ZEBRA_CATEGORIES[0]] + rng.sample(_ZEBRA_CATEGORIES[1:], m - 1)
    values = [rng.sample(pool, n) for _, _, pool, _ in categories]
    for attempt in range(50):
        try:
            grid, final, solver = _zebra_puzzle(rng, n, m, mix)
            break
        except _SearchCapped:
            continue
    else:  # pragma: no cover (a cap hit fifty times in a row)
        raise RuntimeError("zebra: every draw overran the search cap")
    refer = lambda var: categories[var // n][3].format(values[var // n][var % n])  # noqa: E731
    texts = [_zebra_text(clue, refer, n) for clue in final]
    rng.shuffle(texts)
    chosen = sorted(rng.sample(range(m), asked))
    by_house = [[values[c][v] for v in sorted(range(n), key=lambda v: grid[c * n + v])] for c in chosen]
    listing = "\n".join(f"- {heading}: {', '.join(sorted(vals))}"
                        for (_, heading, _, _), vals in zip(categories, values))
    what = [categories[c][0] for c in chosen]
    asked_text = ", ".join(what[:-1]) + f" and {what[-1]}"
    blocks = ", followed by ".join(f"the {w} for house 1, house 2, ..., house {n}" for w in what)
    word = _NUMBER_WORDS[n]
    prompt = (
        f"{word.capitalize()} houses stand in a row, numbered 1 to {n} from left to right, with one resident in "
        f"each. There are {m} categories of {n} values each, and every value belongs to exactly one resident, so "
        f"no two residents share a value in any category:\n{listing}\n\n"
        "Meaning of the clues: \"left\" means a lower house number. \"Directly to the left of\" means exactly one "
        "lower. \"Next to each other\" means house numbers that differ by exactly 1. \"Exactly one house "
        "between\" means house numbers that differ by exactly 2; \"at least two houses between\" means house "
        "numbers that differ by 3 or more. \"Both odd or both even\" and \"one is odd and the other even\" are "
        "about the two house numbers; \"twice the house number\" compares house numbers (house 6 is twice house "
        "3). Two descriptions in one clue may belong to the same resident unless the clue rules that out (for "
        "example, \"X lives next to Y\" rules it out; \"X and Y live in houses whose numbers are both odd or both "
        "even\" does not). House colour is the colour of the house the resident lives in.\n\nClues:\n"
        + "\n".join(f"{i}. {text}" for i, text in enumerate(texts, 1))
        + f"\n\nExactly one arrangement satisfies every clue. For every house, what are its resident's "
        f"{asked_text}?\n\nEnd your response with a final line `ANSWER: <list>`, where <list> is {asked * n} "
        f"comma-separated entries: {blocks}.")
    answer = [v for block in by_house for v in block]
    generated = _list_answer(prompt, answer)
    return generated.model_copy(update={"difficulty": {
        "conflicts": solver.conflicts, "nodes": solver.nodes, "clues": len(final),
        "search_space_log10": round(m * math.log10(math.factorial(n)), 1)}})


_NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve"]


def _zebra_text(clue: tuple, refer: Callable[[int], str], n: int) -> str:
    kind, x, y, relation = clue
    A = refer(x)
    if kind == "unary":
        h = y.bit_length()  # house number of the highest allowed house (1-based)
        text = {
            "house": f"{A} lives in house {h}.",
            "end": f"{A} lives in one of the two end houses (house 1 or house {n}).",
            "even": f"{A} lives in an {'even' if y & 2 else 'odd'}-numbered house.",
            "not-house": f"{A} does not live in house {((1 << n) - 1 & ~y).bit_length()}.",
        }[relation]
    else:
        B, named = refer(y), x < n  # a name is the first category
        text = {
            "same": f"{A} is {B}." if named else f"{A} and {B} are the same person.",
            "different": f"{A} is not {B}." if named else f"{A} and {B} are different people.",
            "left": f"{A} lives directly to the left of {B}.",
            "next": f"{A} and {B} live next to each other.",
            "before": f"{A} lives somewhere to the left of {B}.",
            "gap": f"There is exactly one house between where {A} lives and where {B} lives.",
            "apart": f"{A} and {B} live in different houses that are not next to each other.",
            "mirror": f"The house numbers of {A} and {B} add up to {n + 1}.",
            "parity": f"{A} and {B} live in houses whose numbers are both odd or both even.",
            "far": f"There are at least two houses between where {A} lives and where {B} lives.",
            "double": f"The house number of {A} is twice the house number of {B}.",
            "opposite": f"Of the house numbers of {A} and {B}, one is odd and the other even.",
        }[relation]
    return text[0].upper() + text[1:]


# ---------------------------------------------------------------- tents (logic-tents)
# A Tents grid with one rule twist drawn per instance. Cells are numbered i = r * cols + c and sets of cells are
# int bitmasks; a "line" is a row (0 .. rows-1) or a column (rows .. rows+cols-1).

_TENT_TWISTS = ("hidden", "corners")


class _TentGeometry:
    """Neighbourhoods and line masks of a rows x cols grid: the cells where a tree's own tent may stand (the four
    sharing a side with it, or with `corners` the four sharing only a corner) and the cells a tent touches (the
    eight around it, and itself)."""

    def __init__(self, rows: int, cols: int, corners: bool):
        self.rows, self.cols, self.size = rows, cols, rows * cols
        self.attach, self.touch, self.line_of = [], [], []  # attach: the cells a tree's own tent may take
        steps = ((-1, -1), (-1, 1), (1, -1), (1, 1)) if corners else ((-1, 0), (0, -1), (0, 1), (1, 0))
        for r in range(rows):
            for c in range(cols):
                self.attach.append([(r + dr) * cols + c + dc for dr, dc in steps
                                    if 0 <= r + dr < rows and 0 <= c + dc < cols])
                near = 0
                for dr in (-1, 0, 1):
                    for dc in (-1, 0, 1):
                        if 0 <= r + dr < rows and 0 <= c + dc < cols:
                            near |= 1 << ((r + dr) * cols + c + dc)
                self.touch.append(near)  # the cell itself included
                self.line_of.append((r, rows + c))
        self.lines = [sum(1 << (r * cols + c) for c in range(cols)) for r in range(rows)] + \
                     [sum(1 << (r * cols + c) for r in range(rows)) for c in range(cols)]


def _tent_options(geo: _TentGeometry, trees: list[int]) -> list[list[tuple]]:
    """Per tree, every cell its own tent may take: (tent mask, cells it blocks, [(line, 1)] for its row and column)."""
    tree_mask = sum(1 << t for t in trees)
    return [[(1 << j, geo.touch[j], [(line, 1) for line in geo.line_of[j]])
             for j in geo.attach[t] if not tree_mask >> j & 1] for t in trees]


def _tent_solutions(geo: _TentGeometry, trees: list[int], clues: list[int | None],
                   limit: int = 2, node_cap: int = 200000) -> tuple[list[int], dict[str, int]]:
    """Up to `limit` distinct tent placements (masks) meeting the rules, by a complete search over which cell
    each tree's own tent takes (two pairings of one placement count once).

    Propagation: an option is dead when a cell of it is blocked (a tree, a tent, a cell touching a tent, a cell of
    a full line); a tree with one live option takes it; a line needing k more tents fails when its unassigned trees
    can give fewer than k, and when they can give exactly k each of them must give it its most. Search branches on
    the tree with the fewest live options. Returns the placements and the counts of the search: `guesses` (branch
    points), `nodes` (propagations) and `dead_ends` (propagations that failed)."""
    options = _tent_options(geo, trees)
    clued = [line for line, k in enumerate(clues) if k is not None]
    blocked = sum(1 << t for t in trees)
    for line in clued:
        if clues[line] == 0:
            blocked |= geo.lines[line]
    found: list[int] = []
    stats = {"guesses": 0, "nodes": 0, "dead_ends": 0}

    def propagate(blocked: int, tents: int, count: list[int], dom: list) -> tuple[int, int] | None:
        while True:
            changed = False
            for t, d in enumerate(dom):
                if d is None:
                    continue
                live = [o for o in d if not o[0] & blocked]
                if not live:
                    return None
                if len(live) == 1:
                    mask, block, lines = live[0]
                    tents |= mask
                    blocked |= block
                    for line, k in lines:
                        count[line] += k
                        clue = clues[line]
                        if clue is not None:
                            if count[line] > clue:
                                return None
                            if count[line] == clue:
                                blocked |= geo.lines[line]
                    dom[t] = None
                    changed = True
                elif len(live) < len(d):
                    dom[t] = live
            if changed:
                continue
            supply = [0] * len(clues)
            most = []
            for d in dom:
                best: dict[int, int] = {}
                if d is not None:
                    for _, _, lines in d:
                        for line, k in lines:
                            if best.get(line, 0) < k:
                                best[line] = k
                    for line, k in best.items():
                        supply[line] += k
                most.append(best)
            for line in clued:
                need = clues[line] - count[line]
                if supply[line] < need:
                    return None
                if need and supply[line] == need:
                    for t, d in enumerate(dom):
                        if d is not None and line in most[t]:
                            keep = [o for o in d if dict(o[2]).get(line, 0) == most[t][line]]
                            if len(keep) < len(d):
                                dom[t] = keep
                                changed = True
            if not changed:
                return blocked, tents

    def search(blocked: int, tents: int, count: list[int], dom: list) -> None:
        stats["nodes"] += 1
        if stats["nodes"] > node_cap:
            raise _SearchCapped
        state = propagate(blocked, tents, count, dom)
        if state is None:
            stats["dead_ends"] += 1
            return
        blocked, tents = state
        open_trees = [t for t, d in enumerate(dom) if d is not None]
        if not open_trees:
            if tents not in found:
                found.append(tents)
            return
        t = min(open_trees, key=lambda t: len(dom[t]))
        stats["guesses"] += 1
        for option in dom[t]:
            if len(found) >= limit:
                return
            child = list(dom)
            child[t] = [option]
            search(blocked, tents, list(count), child)

    search(blocked, 0, [0] * len(clues), [list(o) for o in options])
    return found, stats


def _tent_layout(rng: ItemRng, geo: _TentGeometry, target: int) -> tuple[list[int], int]:
    """Trees (up to `target`) with their own tents, drawn cell by cell in a random order: a cell becomes a tree
    when some cell its tent may take is still free (no tree or tent there, no tent touching it)."""
    cells = list(range(geo.size))
    rng.shuffle(cells)
    trees, tents, taken, near = [], 0, 0, 0  # taken: trees and tents; near: cells touching a tent
    for t in cells:
        if len(trees) == target:
            break
        if taken >> t & 1:
            continue
        free = [j for j in geo.attach[t] if not (taken | near) >> j & 1]
        if not free:
            continue
        j = rng.choice(free)
        trees.append(t)
        taken |= 1 << t | 1 << j
        tents |= 1 << j
        near |= geo.touch[j]
    return sorted(trees), tents


def _tent_cell(geo: _TentGeometry, i: int) -> str:
    return f"r{i // geo.cols + 1}c{i % geo.cols + 1}"


def tents(rng: ItemRng, *, rows: int = 13, cols: int = 13, trees: int = 20, twist: str = "varied",
          hidden: int = 4) -> Generated:
    """A Tents grid (trees; tents paired one to one with adjacent trees, no two tents touching, a tent count for
    each row and column) with one rule twist drawn per instance: `hidden` (exactly `hidden` counts are not given)
    or `corners` (a tent is attached to its tree at a corner instead of a side). `trees` is the share of cells, in
    percent, that hold a tree; `twist` names one twist or "varied" (drawn). The placement is proven unique by
    `_tent_solutions` (the grid is redrawn until it is)."""
    kind = rng.choice(_TENT_TWISTS) if twist == "varied" else twist
    if kind not in _TENT_TWISTS:
        raise ValueError(f"unknown tents twist '{kind}': one of {', '.join(_TENT_TWISTS)} or varied")
    geo = _TentGeometry(rows, cols, corners=kind == "corners")
    target = max(1, round(rows * cols * trees / 100))

    def unique(planted: list[int], placed: int, clues: list[int | None]) -> bool:
        try:
            return _tent_solutions(geo, planted, clues, node_cap=_TENT_NODE_CAP)[0] == [placed]
        except _SearchCapped:
            return False

    while True:
        planted, placed = _tent_layout(rng, geo, target)
        clues: list[int | None] = [bin(placed & line).count("1") for line in geo.lines]
        if not unique(planted, placed, clues):
            continue
        if kind != "hidden":
            break
        lines = list(range(len(clues)))  # take counts away one by one, in a random order, while it stays unique
        rng.shuffle(lines)
        for line in lines:
            if sum(k is None for k in clues) == hidden:
                break
            trial = clues[:line] + [None] + clues[line + 1:]
            if unique(planted, placed, trial):
                clues = trial
        if sum(k is None for k in clues) == hidden:  # exactly `hidden` counts missing, else a new grid
            break
    found, stats = _tent_solutions(geo, planted, clues)
    assert found == [placed]
    answer = [_tent_cell(geo, i) for i in range(geo.size) if placed >> i & 1]
    key = ", ".join(answer)
    options = _tent_options(geo, planted)
    return Generated(prompt=_tent_prompt(geo, planted, clues, kind), key=ExactKey(answer=key, answer_type="set"),
                     reference=f"Working omitted.\nANSWER: {key}",
                     difficulty={**stats, "trees": len(planted), "hidden_counts": sum(k is None for k in clues),
                                 "search_space_log10": round(sum(math.log10(len(o)) for o in options), 1)})


_TENT_NODE_CAP = 4000  # a uniqueness check past this many nodes abandons the draw (it bounds the time)

_TENT_ATTACH = {
    False: "orthogonally adjacent to its own tree: directly above, below, left of or right of it (the two cells "
           "share a side)",
    True: "diagonally adjacent to its own tree: in the cell up and to the left, up and to the right, down and to "
          "the left, or down and to the right of it (the two cells share only a corner). Unlike the usual Tents "
          "rule, a tent directly above, below, left of or right of a tree is not attached to that tree",
}
_TENT_TOUCH = ("No two tents touch, not even diagonally: two tents never stand in cells that share a side or a "
               "corner (of the eight cells around a tent, none holds another tent).")


def _tent_prompt(geo: _TentGeometry, planted: list[int], clues: list[int | None], kind: str) -> str:
    rows, cols = geo.rows, geo.cols
    tree_mask = sum(1 << t for t in planted)
    show = ["?" if k is None else str(k) for k in clues]
    grid = ["     " + "".join(f"{c:>3}" for c in range(1, cols + 1)) + "   | count"]
    for r in range(rows):
        cells = "".join("  T" if tree_mask >> (r * cols + c) & 1 else "  ." for c in range(cols))
        grid.append(f"{r + 1:>4} " + cells + f"   | {show[r]}")
    grid.append("count" + "".join(f"{k:>3}" for k in show[rows:]))
    n = len(planted)
    rules = [
        "Each tent stands in an empty cell (never on a tree), and a cell holds at most one tent.",
        f"Tents and trees are paired off one to one: every tree has exactly one tent of its own and every tent "
        f"belongs to exactly one tree, so there are exactly as many tents as trees ({n}). A tent must be "
        f"{_TENT_ATTACH[kind == 'corners']}. A tent may also touch trees other than its own (at a side or a "
        "corner); what matters is that such a pairing exists.",
        _TENT_TOUCH,
        "The number of tents in each row and in each column equals the count given for it (at the right end of "
        "the row, below the column)."
        + (" A count shown as ? is not given: that row or column may hold any number of tents, as far as the "
           "other rules allow." if kind == "hidden" else ""),
    ]
    example = _tent_cell(geo, cols + 4 if cols > 4 else 0)
    return (
        f"A Tents puzzle on a grid of {rows} rows and {cols} columns. Rows are numbered 1 to {rows} from top to "
        f"bottom and columns 1 to {cols} from left to right; the cell in row R and column C is called rRcC (for "
        f"example {example} is row {example[1:].split('c')[0]}, column {example.split('c')[1]}). "
        "In the grid, T is a tree and . an empty cell.\n\nPlace tents in the grid so that all of these rules "
        "hold:\n" + "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, 1))
        + "\n\nThe grid:\n\n" + "\n".join(grid)
        + f"\n\nThe same counts as lists: rows 1 to {rows}: {', '.join(show[:rows])}; columns 1 to {cols}: "
        f"{', '.join(show[rows:])}.\n\nExactly one placement of tents meets every rule. Where are the tents?\n\n"
        f"End your response with a final line `ANSWER: <cells>` that lists the cell of every tent ({n} cells) as "
        f"rRcC, comma-separated, in row-major order: row 1 from left to right, then row 2, and so on (for "
        f"example `ANSWER: r1c4, r1c9, r2c2, ...`).")
