"""Code reasoning generators: programs whose output needs an idea rather than a trace, and a specification to implement.

Every tracing prompt shows a complete Python 3.11 program whose output is fully determined. The stack machine's loop
runs for billions of passes: its key comes from the generator's own solver, which runs the passes until the bounded
cells repeat and extrapolates (the tests check a second solver, written from the prompt, against the shown script run
with small loop counts). The memoised recursion goes thousands of calls deep: its values come from the shown
functions called in increasing n and its call count from the arguments the recursion reaches; its measure is the
length of the sequences' tail and cycle. The aliasing and exception programs are run here as shown (exec of our own
code, never a model's) under a line tracer that measures them. The code-writing item keys hidden tests whose expected
values come from a reference implementation that is also the reference response.
"""

from __future__ import annotations

import gc
import math
import sys

from esac_kit.rng import ItemRng
from esac_kit.schemas import CodeTest, CodeTestsKey, ExactKey, Generated

_TRACE_FORMAT = ("Work it out by reasoning; you cannot run code. End your response with a final line "
                 "`ANSWER: <integers>`, where <integers> are the printed integers in the order printed, "
                 "comma-separated, written without thousands separators (for example `ANSWER: 12, -3, 0, 7`).")


def _trace_item(intro: str, source: str, question: str, printed: list[int], difficulty: dict) -> Generated:
    """A tracing prompt around the exact source, keyed by the integers it prints."""
    answer = ", ".join(str(v) for v in printed)
    prompt = f"{intro}\n\n```python\n{source}```\n\n{question}\n\n{_TRACE_FORMAT}"
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type="list"),
                     reference=f"Working omitted.\nANSWER: {answer}", difficulty=difficulty)


# ---------------------------------------------------------------- a stack machine whose loop runs for ages

VM_SOURCE = '''\
def run(program, mem):
    """Run a program on the memory cells mem[0], mem[1], ...; return how many instructions it executed."""
    stack, pc, steps = [], 0, 0
    while True:
        op, arg = program[pc]
        pc += 1
        steps += 1
        if op == "HALT":
            return steps
        if op == "PUSH":
            stack.append(arg)
        elif op == "LOAD":
            stack.append(mem[arg])
        elif op == "STORE":
            mem[arg] = stack.pop()
        elif op == "OVER":  # copy the item second from the top onto the top
            stack.append(stack[-2])
        elif op == "ADD":
            stack.append(stack.pop() + stack.pop())
        elif op == "MUL":
            stack.append(stack.pop() * stack.pop())
        elif op == "SUB":  # the top item minus the item below it
            top = stack.pop()
            stack.append(top - stack.pop())
        elif op == "MOD":  # Python's %: never negative, as every arg here is positive
            stack.append(stack.pop() % arg)
        elif op == "SKIP":  # pop a value; when it is odd, skip the next arg instructions
            if stack.pop() % 2 == 1:
                pc += arg
        elif op == "JUMP":
            pc = arg
        elif op == "LOOP":  # count cell 0 down by one; go back to arg unless it has reached zero
            mem[0] -= 1
            if mem[0] != 0:
                pc = arg
'''


def _sm_expr(rng: ItemRng, d: int, leader: int | None, m: int) -> tuple[list, str]:
    """Code pushing an expression of mem[d] (and, for a follower, of its leader's cell), and the same in Python."""
    k, c = rng.choice([k for k in range(2, 10) if math.gcd(k, m) == 1]), rng.randint(1, 19)
    if leader is None:
        shape = rng.choice([0, 1, 2, 3, 4, 5, 5, 5])
        code, text = [
            ([("LOAD", d), ("PUSH", k), ("MUL", None), ("PUSH", c), ("ADD", None)], f"{k} * m[{d}] + {c}"),
            ([("LOAD", d), ("PUSH", k), ("MUL", None), ("PUSH", c), ("SUB", None)], f"{c} - {k} * m[{d}]"),
            ([("LOAD", d), ("LOAD", d), ("MUL", None), ("PUSH", c), ("ADD", None)], f"m[{d}] * m[{d}] + {c}"),
            ([("LOAD", d), ("PUSH", c), ("OVER", None), ("ADD", None), ("MUL", None)], f"m[{d}] * (m[{d}] + {c})"),
            ([("PUSH", c), ("LOAD", d), ("PUSH", k), ("MUL", None), ("SUB", None)], f"{k} * m[{d}] - {c}"),
            ([("PUSH", c), ("LOAD", d), ("ADD", None)], f"m[{d}] + {c}"),
        ][shape]
    else:
        x = leader
        shape = rng.randint(0, 3)
        code, text = [
            ([("LOAD", d), ("PUSH", k), ("MUL", None), ("LOAD", x), ("ADD", None), ("PUSH", c), ("ADD", None)],
             f"{k} * m[{d}] + m[{x}] + {c}"),
            ([("LOAD", x), ("LOAD", d), ("MUL", None), ("PUSH", c), ("ADD", None)], f"m[{x}] * m[{d}] + {c}"),
            ([("LOAD", d), ("PUSH", k), ("MUL", None), ("LOAD", x), ("SUB", None)], f"m[{x}] - {k} * m[{d}]"),
            ([("LOAD", d), ("LOAD", x), ("OVER", None), ("MUL", None), ("ADD", None), ("PUSH", c), ("ADD", None)],
             f"m[{d}] + m[{x}] * m[{d}] + {c}"),
        ][shape]
    return code, text


def _sm_assign(rng: ItemRng, d: int, moduli: dict[int, int], leader: int | None) -> tuple[list, list[str]]:
    """mem[d] = (an expression of mem[d], and of its leader's cell for a follower) % moduli[d]."""
    code, text = _sm_expr(rng, d, leader, moduli[d])
    return code + [("MOD", moduli[d]), ("STORE", d)], [f"m[{d}] = ({text}) % {moduli[d]}"]


def _sm_accumulate(rng: ItemRng, a: int, group: list[int]) -> tuple[list, list[str]]:
    """mem[a] += 1, += k * mem[s] or += mem[s] * mem[t], reading cells of one group only."""
    kind = rng.randint(0, 3)
    if kind == 0:
        return [("LOAD", a), ("PUSH", 1), ("ADD", None), ("STORE", a)], [f"m[{a}] += 1"]
    s, t = rng.choice(group), rng.choice(group)
    if kind == 1:
        return ([("LOAD", s), ("LOAD", t), ("MUL", None), ("LOAD", a), ("ADD", None), ("STORE", a)],
                [f"m[{a}] += m[{s}] * m[{t}]"])
    k = rng.randint(1, 7)
    scaled = [] if k == 1 else [("PUSH", k), ("MUL", None)]
    return [("LOAD", s)] + scaled + [("LOAD", a), ("ADD", None), ("STORE", a)], [f"m[{a}] += {k} * m[{s}]"]


def _sm_branch(rng: ItemRng, s: int, then: tuple, other: tuple | None) -> tuple[list, list[str]]:
    """Run `then` when mem[s] + c is even (SKIP jumps over it on odd), else `other` (or nothing)."""
    c = rng.randint(0, 9)
    test = [("LOAD", s), ("PUSH", c), ("ADD", None)]
    then_code, then_py = then
    if other is None:
        code = test + [("SKIP", len(then_code))] + then_code
        py = [f"if (m[{s}] + {c}) % 2 == 0:"] + ["    " + line for line in then_py] + [
            f"    steps += {len(then_code)}"]
    else:
        other_code, other_py = other
        code = test + [("SKIP", len(then_code) + 1)] + then_code + [("JUMP", "end")] + other_code + [("END", None)]
        py = ([f"if (m[{s}] + {c}) % 2 == 0:"] + ["    " + line for line in then_py]
              + [f"    steps += {len(then_code) + 1}", "else:"] + ["    " + line for line in other_py]
              + [f"    steps += {len(other_code)}"])
    return code, py, 4  # the test and the SKIP always run


def _sm_program(rng: ItemRng, groups: list[list[int]], moduli: dict[int, int], accs: list[int]):
    """A loop body over independent groups of cells (a group: a lone cell, or a leader and a follower reading it):
    one update per cell, two conditionals and two accumulations, each reading a single group, shuffled together;
    LOOP back to 0, HALT. Returns the listing and the pass as Python (for the generator's fast solver)."""
    leader_of = {cell: (group[0] if i else None) for group in groups for i, cell in enumerate(group)}
    blocks = []
    for group in groups:
        for cell in group:
            code, py = _sm_assign(rng, cell, moduli, leader_of[cell])
            blocks.append((code, py, len(code)))
    group = rng.choice(groups)  # a piecewise update: which of two maps a cell takes depends on a parity
    s, d = rng.choice(group), rng.choice(group)
    then = _sm_assign(rng, d, moduli, leader_of[d])
    other = _sm_accumulate(rng, accs[0], group) if rng.randint(0, 1) else _sm_assign(rng, d, moduli, leader_of[d])
    blocks.insert(rng.randint(0, len(blocks)), _sm_branch(rng, s, then, other))
    group = rng.choice(groups)
    blocks.insert(rng.randint(0, len(blocks)), _sm_branch(rng, rng.choice(group),
                                                          _sm_accumulate(rng, accs[1], group), None))
    blocks.insert(rng.randint(0, len(blocks)), (*(a := _sm_accumulate(rng, accs[0], rng.choice(groups))),
                                                len(a[0])))
    program: list = []
    py = ["def one_pass(m):", "    steps = 1"]  # the LOOP's step
    for code, lines, fixed in blocks:
        end = len(program) + len(code) - 1  # where the END marker stands, once dropped: the next block's start
        program += [(op, end if arg == "end" else arg) for op, arg in code if op != "END"]
        py += ["    " + line for line in lines] + [f"    steps += {fixed}"]
    py.append("    return steps")
    namespace: dict = {}
    exec(compile("\n".join(py) + "\n", "<pass>", "exec"), namespace)
    return program + [("LOOP", 0), ("HALT", None)], namespace["one_pass"]


def _sm_cycle(states: list[tuple]) -> tuple[int, int] | None:
    """Tail and period of a sequence that repeats once its state does (None: no repeat seen)."""
    seen: dict[tuple, int] = {}
    for i, state in enumerate(states):
        if state in seen:
            return seen[state], i - seen[state]
        seen[state] = i
    return None


def _sm_solve(one_pass, mem: list[int], bounded: list[int], limit: int):
    """Run the loop pass by pass until the bounded cells repeat jointly (at most `limit` passes), then extrapolate
    to cell 0's count of passes. Accumulator cells never feed back, so each pass's effect on them and its step
    count are functions of the bounded cells at its start. Returns the final memory, the steps run() returns, the
    joint tail and period, and the memory at every pass start (None when no repeat came within the limit)."""
    passes = mem[0]
    seen: dict[tuple, int] = {}
    before, steps = [], []
    current = list(mem)
    while True:
        state = tuple(current[c] for c in bounded)
        if state in seen:
            break
        if len(before) == limit:
            return None
        seen[state] = len(before)
        before.append(list(current))
        steps.append(one_pass(current))
        current[0] -= 1
    before.append(current)
    done = len(before) - 1
    tail = seen[state]
    period = done - tail
    cycles, rest = divmod(passes - tail, period)
    final = list(before[tail + rest])
    for c in range(1, len(mem)):
        if c not in bounded:
            final[c] = before[tail + rest][c] + cycles * (before[done][c] - before[tail][c])
    total = sum(steps[:tail]) + cycles * sum(steps[tail:]) + sum(steps[tail:tail + rest])
    final[0] = 0
    return final, total + 1, tail, period, before  # + 1: the HALT


def stack_machine(rng: ItemRng, *, cells: int = 5, max_modulus: int = 23, loop_log10: int = 10) -> Generated:
    """A counted loop over cells kept small by MOD, in independent groups whose code is shuffled together, with
    accumulators, run for 10^loop_log10 passes: the cells' joint cycle runs to thousands of passes, so the output
    needs the groups found in the bytecode and each group's own short cycle, not the joint trace."""
    bounded = list(range(1, cells + 1))
    accs = [cells + 1, cells + 2]
    for attempt in range(2000):  # redraw until the joint cycle is far longer than the groups' own cycles together
        order = rng.sample(bounded, cells)
        groups = [order[:2]] + [[c] for c in order[2:]]  # a leader and its follower, then lone cells
        moduli = {d: rng.randint(max_modulus // 2, max_modulus) for d in bounded}
        program, one_pass = _sm_program(rng, groups, moduli, accs)
        passes = rng.randint(10 ** (loop_log10 - 1), 10 ** loop_log10)
        mem = [passes] + [rng.randint(0, moduli[d] - 1) for d in bounded] + [0, 0]
        trial, starts = list(mem), []
        for _ in range(6 * max_modulus):  # each group's own tail and cycle, from the first passes
            starts.append(tuple(trial[c] for c in bounded))
            one_pass(trial)
        own = [_sm_cycle([tuple(s[bounded.index(c)] for c in group) for s in starts]) for group in groups]
        if None in own:
            continue
        group_states = sum(t + p for t, p in own)
        joint = max(t for t, _ in own) + math.lcm(*(p for _, p in own))
        if not 1000 <= joint <= 10000:
            continue
        final, steps, tail, period, _ = _sm_solve(one_pass, mem, bounded, 10000)
        assert tail + period == joint
        break
    else:
        raise ValueError(f"no joint cycle of 1000 to 4000 passes with moduli up to {max_modulus}")
    listing = "PROGRAM = [\n" + "".join(
        f"    {(op, arg)!r},{' ' * (16 - len(repr((op, arg))))}# {i}\n" for i, (op, arg) in enumerate(program)) + "]\n"
    source = (VM_SOURCE + "\n\n" + listing + f"mem = {mem!r}\nsteps = run(PROGRAM, mem)\nprint(steps)\n"
              "for value in mem[1:]:\n    print(value)\n")
    intro = ("Here is a small stack-machine interpreter, a program for it and a script that runs it. The "
             "interpreter's comments and code define every instruction exactly.")
    return _trace_item(intro, source, "What does this script print?", [steps] + final[1:],
                       {"states": group_states, "joint_states": tail + period, "attempts": attempt + 1, "tail": tail, "period": period,
                        "instructions": len(program), "trace_log10": round(math.log10(steps), 2)})


# ---------------------------------------------------------------- mutual recursion with memos, far too deep to trace

_MR_TERMS = [("f", 1), ("f", 2), ("f", 3), ("g", 1), ("g", 2), ("g", 3)]


def _mr_update(rng: ItemRng, m: int) -> tuple[str, list[tuple[str, int]], int]:
    """An update of two earlier values mod m, as text, the calls it makes and the modulus of n it reads (1: none)."""
    (x, dx), (y, dy) = rng.sample(_MR_TERMS, 2)
    first, second = f"{x}(n - {dx})", f"{y}(n - {dy})"
    a, c, q = rng.randint(2, 5), rng.randint(1, 9), rng.randint(3, 4)
    shape = rng.randint(0, 3)
    text = [f"{a} * {first} + {second} + {c}", f"{first} * {second} + {c}", f"{first} - {a} * {second}",
            f"{first} + {second} * {a} + n % {q}"][shape]
    return f"({text}) % {m}", [(x, dx), (y, dy)], q if shape == 3 else 1


def _mr_function(rng: ItemRng, name: str, memo: str, m: int) -> tuple[str, dict]:
    """One memoised function of n: a base case below 3 and two updates chosen by n % q."""
    q = rng.choice([2, 3])
    r = rng.randrange(q)
    then, then_calls, phase1 = _mr_update(rng, m)
    other, other_calls, phase2 = _mr_update(rng, m)
    source = "\n".join([
        f"def {name}(n):", "    global calls", f"    if n in {memo}:", f"        return {memo}[n]", "    calls += 1",
        "    if n < 3:", f"        value = ({rng.randint(2, 7)} * n + {rng.randint(1, 9)}) % {m}",
        f"    elif n % {q} == {r}:", f"        value = {then}", "    else:", f"        value = {other}",
        f"    {memo}[n] = value", "    return value"]) + "\n"
    return source, {"q": q, "r": r, "then": then_calls, "other": other_calls, "phase": math.lcm(q, phase1, phase2)}


def _mr_cycle(f, g, phase: int, limit: int) -> tuple[int, int]:
    """Tail and period of the state that decides every later value: the last three values of f and of g and n
    modulo the phase. The shown functions are called in increasing n, so no call recurses deeply."""
    values = [(f(n), g(n)) for n in range(3)]
    seen: dict[tuple, int] = {}
    for n in range(3, limit):
        state = (tuple(values[-3:]), n % phase)
        if state in seen:
            return seen[state] - 3, n - seen[state]
        seen[state] = n
        values.append((f(n), g(n)))
    return limit, 0


def _mr_unmemoised_log10(shapes: dict, top: int) -> float:
    """log10 of the calls f(top) then g(top) would make without their memos (each call counts itself and its
    callees' calls)."""
    count = {"f": [1, 1, 1], "g": [1, 1, 1]}
    for n in range(3, top + 1):
        for name in ("f", "g"):
            shape = shapes[name]
            calls = shape["then"] if n % shape["q"] == shape["r"] else shape["other"]
            count[name].append(1 + sum(count[callee][n - back] for callee, back in calls))
    return round(math.log10(count["f"][top] + count["g"][top]), 1)


def _mr_reach(shapes: dict, top: int) -> set[tuple[str, int]]:
    """The (function, argument) pairs f(top) and then g(top) reach, each evaluated once thanks to the memos."""
    reached, stack = set(), [("f", top), ("g", top)]
    while stack:
        name, n = stack.pop()
        if (name, n) in reached:
            continue
        reached.add((name, n))
        if n >= 3:
            shape = shapes[name]
            stack += [(callee, n - back) for callee, back in
                      (shape["then"] if n % shape["q"] == shape["r"] else shape["other"])]
    return reached


def _mr_reach_period(reached: set, top: int, low: int) -> int:
    """The period of the reached pattern (which of f(n) and g(n) are reached) from n = low up to near top."""
    pattern = [(("f", n) in reached, ("g", n) in reached) for n in range(low, top - 40)]
    for period in range(1, 61):
        if all(pattern[i] == pattern[i + period] for i in range(len(pattern) - period)):
            return period
    return 0


def memo_recursion(rng: ItemRng, *, modulus: int = 13, argument: int = 6000) -> Generated:
    """Two mutually recursive memoised functions evaluated at an argument in the thousands: the values need the
    period of the sequences, the call count needs which arguments the recursion reaches, and the sums of the
    memo tables need both at once."""
    while True:  # redraw until the recursion skips a share of the arguments, so the call count needs its reach
        mf, mg = rng.sample(range(max(3, modulus - 5), modulus + 1), 2)
        f_source, f_shape = _mr_function(rng, "f", "F", mf)
        g_source, g_shape = _mr_function(rng, "g", "G", mg)
        top = rng.randint(argument // 2, argument)
        reached = _mr_reach({"f": f_shape, "g": g_shape}, top)
        if len(reached) <= 0.95 * (2 * top + 2):
            break
    definitions = ("import sys\n\nsys.setrecursionlimit(100_000)\nF, G = {}, {}\ncalls = 0\n\n\n"
                   + f_source + "\n\n" + g_source)
    source = definitions + (f"\n\nprint(f({top}))\nprint(g({top}))\nprint(calls)\nprint(sum(F.values()))\n"
                            "print(sum(G.values()))\n")
    # The values come from the shown functions called in increasing n (every call shallow, so the kit's recursion
    # limit is left alone); the call count is the reach, as memoised calls each run a body once, and the memos hold
    # exactly the reached arguments' values.
    ascending: dict = {}
    exec(compile(definitions.replace("sys.setrecursionlimit(100_000)\n", ""), "<generated>", "exec"), ascending)
    f, g = ascending["f"], ascending["g"]
    tail, period = _mr_cycle(f, g, math.lcm(f_shape["phase"], g_shape["phase"]), top)
    for n in range(top + 1):
        f(n), g(n)
    sums = [sum((f, g)[name == "g"](n) for name, n in reached if name == which) for which in ("f", "g")]
    reach_period = _mr_reach_period(reached, top, 3)
    return _trace_item("Read this Python 3.11 program.", source, "What does it print?",
                       [f(top), g(top), len(reached)] + sums,
                       {"states": tail + period, "tail": tail, "period": period, "reach_period": reach_period,
                        "sum_period": math.lcm(period, reach_period) if reach_period else 0,
                        "unmemoised_calls_log10": _mr_unmemoised_log10({"f": f_shape, "g": g_shape}, top),
                        "reached_share": round(len(reached) / (2 * top + 2), 3)})


# ---------------------------------------------------------------- aliasing: shared lists through many routes

_NAMES = ["acc", "bag", "pool", "keep", "tally", "log", "buf", "stash", "heap", "row", "lot", "crate", "deck",
          "pile", "sack", "tray", "rack", "hod", "cart", "jar", "box", "cup", "vat", "tub", "kit", "net", "pod",
          "urn", "case", "drum", "tank", "well", "nest", "hold", "shelf", "chest", "bowl", "pan", "pot", "tin", "sink",
          "bin", "can", "jug", "mug", "sac", "vial", "flask", "crib", "loft", "bay", "dock", "pen", "coop", "barn",
          "silo", "vault", "safe", "till", "purse", "wallet", "folder", "sheaf", "stack", "queue", "ring", "chain",
          "band", "roll", "reel", "spool", "bunch", "batch", "clump", "heap2", "store", "depot"]


class _Alias:
    """The growing program: its lines, the list variables it has bound so far, and fresh names."""

    def __init__(self, rng: ItemRng):
        self.rng = rng
        self.lines: list[str] = []
        self.names = rng.sample(_NAMES, len(_NAMES))
        self.lists: list[str] = []

    def fresh(self) -> str:
        return self.names.pop()

    def pick(self, k: int = 1) -> list[str]:
        return self.rng.sample(self.lists, k)

    def small(self) -> int:
        return self.rng.randint(1, 9)

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)

    def show(self, *names: str) -> None:
        """A print of one integer that reads each given list."""
        terms = [f"sum({n})" if self.rng.randint(0, 1) else f"len({n}) * {self.rng.randint(2, 9)}" for n in names]
        self.emit(f"print({' + '.join(terms)})")


def _alias_default(p: _Alias) -> None:
    """A mutable default argument shared by calls, the call results kept as names, one call given its own list."""
    fn, x, y, z = "put_" + p.fresh(), p.fresh(), p.fresh(), p.fresh()
    k = p.rng.randint(2, 5)
    p.emit(f"def {fn}(value, into=[]):", f"    into.append(value * {k})", "    return into", "",
           f"{x} = {fn}({p.small()})", f"{y} = {fn}({p.small()}, [{p.small()}])", f"{z} = {fn}({p.small()})")
    p.lists += [x, y, z]
    p.show(x, y)


def _alias_rows(p: _Alias) -> None:
    """Rows repeated by list multiplication: a write through one row shows in all of them."""
    (src,) = p.pick()
    grid = p.fresh()
    h = p.rng.randint(2, 4)
    if p.rng.randint(0, 1):
        p.emit(f"{grid} = [{src}] * {h}")
    else:
        p.emit(f"{grid} = [{src}[:]] * {h}")
    i = p.rng.randint(0, h - 1)
    p.emit(f"{grid}[{i}].append(len({grid}) + {p.small()})", f"{grid}[{(i + 1) % h}] += [{p.small()}]",
           f"{grid}[{(i + 2) % h}] = {grid}[{(i + 2) % h}] + [{p.small()}]",
           f"print(sum(map(sum, {grid})) + len({src}))")
    p.lists.append(f"{grid}[{(i + 2) % h}]")


def _alias_grow(p: _Alias) -> None:
    """+= extends the caller's list in place; the rebinding after it does not."""
    a, b = p.pick(2)
    fn = "grow_" + p.fresh()
    p.emit(f"def {fn}(xs, n):", "    xs += [n]", f"    xs = xs + [n * {p.rng.randint(2, 5)}]", "    xs.append(n)",
           "    return len(xs)", "", f"{p.fresh()} = {fn}({a}, {p.small()}) + {fn}({b}, len({a}))")
    p.show(a, b)


def _alias_fromkeys(p: _Alias) -> None:
    """dict.fromkeys gives every key the same list; rebinding one key's value breaks only that key away."""
    d = p.fresh()
    (src,) = p.pick()
    keys = p.rng.sample("abcdefgh", 3)
    p.emit(f"{d} = dict.fromkeys({''.join(keys)!r}, {src})", f"{d}[{keys[0]!r}].append({p.small()})",
           f"{d}[{keys[1]!r}] = {d}[{keys[1]!r}] + [{p.small()}]", f"{d}[{keys[2]!r}] += [{p.small()}]",
           f"print(sum(len(v) for v in {d}.values()) * 10 + sum({src}))")
    p.lists.append(f"{d}[{keys[1]!r}]")


def _alias_lambdas(p: _Alias) -> None:
    """Lambdas made in a loop all see the loop variable's last value, and the list as it is when they are called."""
    (src,) = p.pick()
    fs = p.fresh()
    n = p.rng.randint(3, 5)
    p.emit(f"{fs} = [lambda x: x * k + len({src}) for k in range({n})]", f"{src}.append({p.small()})",
           f"print(sum(f({p.small()}) for f in {fs}))")


def _alias_generator(p: _Alias) -> None:
    """A generator over a list, partly consumed, then resumed after the list was changed through an alias."""
    (src,) = p.pick()
    gen, alias, first = p.fresh(), p.fresh(), p.fresh()
    p.emit(f"{alias} = {src}", f"{gen} = (v + {p.small()} for v in {src})", f"{first} = next({gen}, 0)",
           f"{alias}.append({p.small()})", f"{src} = [{p.small()}, {p.small()}]",
           f"print({first} + sum({gen}) + sum({src}))")
    p.lists.append(alias)


def _alias_slices(p: _Alias) -> None:
    """A copy, an alias, slice assignment (same object) and rebinding (a new one)."""
    (src,) = p.pick()
    copy, same = p.fresh(), p.fresh()
    p.emit(f"{copy}, {same} = {src}[:], {src}", f"{src}[:] = {src} + [{p.small()}]", f"{copy}.append({p.small()})",
           f"{src} = {src}[1:]", f"{same}[0] += {p.small()}")
    p.lists += [copy, same]
    p.show(copy, same, src)


def _alias_remove(p: _Alias) -> None:
    """Removing from a list while a for loop walks it skips the element after each removal."""
    (src,) = p.pick()
    m = p.rng.randint(1, 4)
    p.emit(f"{src} += [{', '.join(str(p.rng.randint(0, 9)) for _ in range(3))}]", f"for v in {src}:",
           f"    if v > {m}:", f"        {src}.remove(v)", f"print(sum({src}) * {m + 1} + len({src}))")


def _alias_tuple(p: _Alias) -> None:
    """+= on a list inside a tuple extends the list and then raises TypeError at the tuple's item assignment."""
    (src,) = p.pick()
    pair = p.fresh()
    p.emit(f"{pair} = ({src}, {p.small()})", "try:", f"    {pair}[0] += [{p.small()}, {p.small()}]",
           "except TypeError:", f"    {src}.append(-len({pair}[0]))")
    p.show(src)


def _alias_class(p: _Alias) -> None:
    """A mutable class attribute shared by instances until one instance rebinds its own."""
    cls, one, two = "Cup" + p.fresh().title(), p.fresh(), p.fresh()
    p.emit(f"class {cls}:", "    items = []", "", "    def add(self, v):", "        self.items.append(v)",
           "        return self", "", "    def fork(self, v):", "        self.items = self.items + [v]",
           "        return self", "", f"{one}, {two} = {cls}(), {cls}()",
           f"{one}.add({p.small()}).fork({p.small()}).add({p.small()})", f"{two}.add({p.small()})",
           f"print(len({cls}.items) * 100 + sum({one}.items) + len({two}.items))")
    p.lists += [f"{two}.items"]


def _alias_default_time(p: _Alias) -> None:
    """A default argument is evaluated once, when the def runs: later rebinding of the name does not reach it."""
    (src,) = p.pick()
    fn, base = "scale_" + p.fresh(), p.fresh()
    p.emit(f"{base} = len({src})", f"def {fn}(x, k={base}, seen={src}):", "    seen.append(x)", "    return x * k",
           "", f"{base} = {p.small()}", f"{src} = []", f"print({fn}({p.small()}) + {fn}({base}) + len({src}))")


def _alias_nested(p: _Alias) -> None:
    """A shallow copy of a list of lists shares the inner lists: appends reach the originals, item rebinding not."""
    a, b = p.pick(2)
    outer, shallow = p.fresh(), p.fresh()
    p.emit(f"{outer} = [{a}, {b}]", f"{shallow} = list({outer})", f"{shallow}[0].append({p.small()})",
           f"{shallow}[1] = {shallow}[1] + [{p.small()}]", f"{outer}[1].append(len({shallow}[1]))")
    p.lists.append(f"{shallow}[1]")
    p.show(a, b, f"{shallow}[1]")


def _alias_setdefault(p: _Alias) -> None:
    """setdefault stores its default object itself and later returns the stored one, ignoring a new default."""
    a, b = p.pick(2)
    d = p.fresh()
    p.emit(f"{d} = {{}}", f"{d}.setdefault('x', {a}).append({p.small()})",
           f"{d}.setdefault('x', {b}).append({p.small()})", f"{d}.setdefault('y', {b}).extend({d}['x'])")
    p.show(a, b)


def _alias_nested_generator(p: _Alias) -> None:
    """In a generator expression only the first iterable is evaluated at once; the inner one is looked up each time
    the outer loop advances, so rebinding its name midway changes what follows."""
    a, b = p.pick(2)
    gen, first = p.fresh(), p.fresh()
    inner = b.split("[")[0].split(".")[0]
    if inner != b:  # the late lookup needs a plain name to rebind
        inner = p.fresh()
        p.emit(f"{inner} = {b}")
        p.lists.append(inner)
    p.emit(f"{gen} = (x * {p.rng.randint(2, 5)} + y for x in {a}[:2] for y in {inner})", f"{first} = next({gen}, 0)",
           f"{inner} = [{p.small()}]", f"print({first} + sum({gen}) + len({a}))")


def _alias_zip(p: _Alias) -> None:
    """zip over the same iterator twice pairs consecutive items."""
    (src,) = p.pick()
    pairs = p.fresh()
    p.emit(f"{pairs} = iter({src} + [{p.small()}])", f"{pairs} = [a * {p.rng.randint(2, 5)} - b for a, b in "
           f"zip({pairs}, {pairs})]", f"{src}.extend({pairs})")
    p.lists.append(pairs)
    p.show(src)


def _alias_closures(p: _Alias) -> None:
    """Two closures over one cell: nonlocal rebinding gives both a new list, so the earlier list is left behind."""
    (src,) = p.pick()
    make, add, reset, old = "make_" + p.fresh(), p.fresh(), p.fresh(), p.fresh()
    p.emit(f"def {make}(items):", "    def add(v):", "        items.append(v)", "        return len(items)", "",
           "    def reset():", "        nonlocal items", "        items = items[-1:] + [len(items)]",
           "        return items", "", "    return add, reset", "",
           f"{add}, {reset} = {make}({src})", f"{old} = {add}({p.small()}) + {add}({p.small()})",
           f"{src}.append({reset}()[-1])", f"{old} += {add}({p.small()})", f"print({old} + sum({src}))")


def _alias_unbound(p: _Alias) -> None:
    """+= on a global name inside a function makes the name local there, so it raises UnboundLocalError, while a
    method call on the same name reaches the global list."""
    plain = [n for n in p.lists if n.isidentifier()]
    if not plain:
        return _alias_tuple(p)
    src = p.rng.choice(plain)
    fn = "bump_" + p.fresh()
    p.emit(f"def {fn}(v):", "    try:", f"        {src} += [v]", "        return v", "    except UnboundLocalError:",
           "        return -v", "", f"{src}.append({fn}({p.small()}))", f"print({fn}({p.small()}) + sum({src}))")


def _alias_chained(p: _Alias) -> None:
    """A chained assignment binds both names to one list; += extends it in place, + makes a new one."""
    (src,) = p.pick()
    x, y = p.fresh(), p.fresh()
    p.emit(f"{x} = {y} = {src}", f"{x} += [{p.small()}]", f"{y} = {y} + [{p.small()}]",
           f"{x}[len({x}):] = [len({y})]")
    p.lists += [x, y]
    p.show(src, y)


def _alias_targets(p: _Alias) -> None:
    """The right side is evaluated first, then the targets are assigned left to right, so a later subscript target
    sees the item an earlier target just stored."""
    (src,) = p.pick()
    a, b = p.small(), p.small()
    p.emit(f"{src} += [{p.small()}, {p.small()}]", f"{src}[0], {src}[{src}[0] % len({src})] = {a}, {b}")
    p.show(src)


def _alias_unpack(p: _Alias) -> None:
    """Starred unpacking builds a new list; slice assignment splices it back into the original."""
    (src,) = p.pick()
    head, rest = p.fresh(), p.fresh()
    p.emit(f"{head}, *{rest} = {src} + [{p.small()}]", f"{rest}.append({head})", f"{src}[1:2] = {rest}")
    p.lists.append(rest)
    p.show(src, rest)


def _alias_dict_iadd(p: _Alias) -> None:
    """+= on a dict's list value extends that list in place (and stores it back); a shallow dict copy shares it."""
    (src,) = p.pick()
    d, e = p.fresh(), p.fresh()
    p.emit(f"{d} = {{'k': {src}}}", f"{d}['k'] += [{p.small()}]", f"{e} = dict({d})", f"{e}['k'].append({p.small()})",
           f"{e}['k'] = {e}['k'] + [{p.small()}]", f"print(sum({d}['k']) * 10 + len({e}['k']) + len({src}))")
    p.lists.append(f"{e}['k']")


def _alias_insert(p: _Alias) -> None:
    """Inserting at the front while a for loop walks the list makes the loop meet the same item again."""
    (src,) = p.pick()
    seen, k = p.fresh(), p.rng.randint(2, 3)
    p.emit(f"{src}.append({p.small()})", f"{seen} = []", f"for i, v in enumerate({src}):", f"    if i < {k}:",
           f"        {src}.insert(0, v + i)", f"    {seen}.append(v)")
    p.lists.append(seen)
    p.show(seen, src)


def _alias_walk(p: _Alias) -> None:
    """A generator that appends to the list it walks: the for loop inside it meets the appended items too."""
    (src,) = p.pick()
    fn = "walk_" + p.fresh()
    p.emit(f"def {fn}(xs):", "    for v in xs:", "        if v % 2 == 1:", "            xs.append(v - 1)",
           "        yield v", "", f"print(sum({fn}({src})) + len({src}))")


def _alias_for_target(p: _Alias) -> None:
    """A for loop may assign to any target, here an item of a list: the item keeps the last value."""
    (src,) = p.pick()
    p.emit(f"{src}.append(0)", f"for {src}[-1] in range({p.small()}, {p.rng.randint(10, 14)}):", "    pass")
    p.show(src)


def _alias_walrus(p: _Alias) -> None:
    """The walrus in a comprehension binds the name in the enclosing scope; the loop variable stays local to it."""
    (src,) = p.pick()
    last, ys = p.fresh(), p.fresh()
    v0 = p.rng.randint(20, 40)
    p.emit(f"v = {v0}", f"{ys} = [({last} := v * 2) for v in {src} if v % 2 == 0]",
           f"print(v + len({ys}) * 10 + ({last} if {ys} else 0))")
    p.lists.append(ys)


def _alias_del_slice(p: _Alias) -> None:
    """del on an extended slice of an alias removes items from the shared list; a copy taken before keeps them."""
    (src,) = p.pick()
    alias, before = p.fresh(), p.fresh()
    p.emit(f"{alias}, {before} = {src}, {src}[:]", f"del {alias}[::2]", f"{src}[:0] = [len({before})]")
    p.lists += [alias, before]
    p.show(src, before)


def _alias_imul(p: _Alias) -> None:
    """*= repeats a list in place, so every alias sees it; * makes a new list."""
    a, b = p.pick(2)
    same = p.fresh()
    p.emit(f"{same} = {a}", f"{same} *= 2", f"{b} = {b} * 2")
    p.lists.append(same)
    p.show(a, b)


_ALIAS_GADGETS = [_alias_rows, _alias_grow, _alias_fromkeys, _alias_lambdas, _alias_generator, _alias_slices,
                  _alias_remove, _alias_tuple, _alias_class, _alias_default_time, _alias_nested, _alias_setdefault,
                  _alias_nested_generator, _alias_zip, _alias_closures, _alias_unbound, _alias_chained,
                  _alias_targets, _alias_unpack, _alias_dict_iadd, _alias_insert, _alias_walk, _alias_for_target,
                  _alias_walrus, _alias_del_slice, _alias_imul]


def _traced(source: str) -> tuple[list[int], dict]:
    """Run a generated program (our own code) under a line tracer: what it prints, its executed line events and
    the exception events (one per frame an exception passes through)."""
    printed: list[int] = []
    counts = {"lines": 0, "exceptions": 0}

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != "<generated>":
            return None
        if event == "line":
            counts["lines"] += 1
        elif event == "exception":
            counts["exceptions"] += 1
        return tracer

    namespace = {"print": printed.append, "__name__": "__main__"}
    code = compile(source, "<generated>", "exec")
    previous, collecting = sys.gettrace(), gc.isenabled()
    gc.disable()  # the cyclic collector would finalise left-over generators at arbitrary points of the trace
    sys.settrace(tracer)
    try:
        exec(code, namespace)
    finally:
        sys.settrace(previous)
        if collecting:
            gc.enable()
    return printed, counts


def alias_mutation(rng: ItemRng, *, gadgets: int = 16) -> Generated:
    """Lists shared through a mutable default and then reached by `gadgets` further routes, each picking up lists
    that earlier routes bound, so the routes' interactions decide every print; the last two prints ask how many
    distinct lists all the names bound along the way refer to and what they hold in all."""
    while True:  # redraw the rare program that raises (a route met a list another route emptied)
        p = _Alias(rng)
        for _ in range(2):
            name = p.fresh()
            p.emit(f"{name} = [{', '.join(str(rng.randint(0, 9)) for _ in range(rng.randint(2, 4)))}]")
            p.lists.append(name)
        p.emit("")
        _alias_default(p)
        for gadget in rng.sample(_ALIAS_GADGETS, min(gadgets, len(_ALIAS_GADGETS))) + [
                rng.choice(_ALIAS_GADGETS) for _ in range(gadgets - len(_ALIAS_GADGETS))]:
            p.emit("")
            gadget(p)
        names = ", ".join(dict.fromkeys(p.lists))
        p.emit("", f"every = [{names}]", "print(len({id(v) for v in every}))", "print(sum(map(sum, every)))")
        source = "\n".join(p.lines).replace("\n\n    ", "\n    ") + "\n"
        try:
            printed, counts = _traced(source)
        except Exception:  # noqa: BLE001 - our own program; a raising one is redrawn
            continue
        break
    return _trace_item("Read this Python 3.11 program.", source, "What does it print?", printed,
                       {"line_events": counts["lines"], "lines": source.count("\n"),
                        "distinct_lists": printed[-2], "names": len(dict.fromkeys(p.lists))})


# ---------------------------------------------------------------- exceptions: handlers, finally, managers, generators


class _Flow:
    """The growing program: its lines and fresh names; every part reads the shared `log` that earlier parts grew."""

    def __init__(self, rng: ItemRng):
        self.rng = rng
        self.lines: list[str] = ["log = []"]
        self.count = 0

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def span(self) -> str:
        """A loop range whose start depends on how long the log has grown."""
        return f"range(len(log) % {self.rng.randint(3, 5)} + {self.rng.randint(1, 6)}, {self.rng.randint(18, 26)})"

    def emit(self, *lines: str) -> None:
        self.lines.extend(lines)


def _flow_finally_return(p: _Flow) -> None:
    """A return in finally overrides both a return and a raised exception; else runs only when try falls through."""
    fn = p.fresh("pick")
    a, b, c = p.rng.sample(range(2, 8), 3)
    p.emit("", "", f"def {fn}(x):", "    try:", f"        if x % {a} == 0:", "            raise ValueError(x)",
           f"        if x % {c} == 0:", f"            log.append(x)", "        else:",
           f"            return x * {p.rng.randint(2, 4)}", "    except ValueError as err:",
           "        log.append(-err.args[0])", "        return -1", "    else:",
           f"        log.append({p.rng.randint(1, 9)})",
           "    finally:", f"        if x % {b} == 0:", f"            return x + {p.rng.randint(10, 40)}",
           "    return len(log)", "", "",
           f"print(sum({fn}(x) for x in {p.span()}) + len(log))")


def _flow_gate(p: _Flow) -> None:
    """A context manager whose __exit__ suppresses only some exceptions, depending on its own state."""
    cls, gate, total = p.fresh("Gate"), p.fresh("gate"), p.fresh("total")
    a, b = p.rng.randint(2, 3), p.rng.randint(4, 7)
    p.emit("", "", f"class {cls}:", "    def __init__(self):", "        self.opened = 0", "",
           "    def __enter__(self):", "        self.opened += 1", "        return self", "",
           "    def __exit__(self, kind, value, tb):", "        log.append(self.opened)",
           f"        return kind is KeyError and self.opened % {5 - a} != 0", "", "",  # not a's: some suppressed
           f"{gate}, {total} = {cls}(), 0", f"for x in {p.span()}:", "    try:", f"        with {gate}:",
           f"            if x % {a} == 0:", "                raise KeyError(x)", f"            if x % {b} == 0:",
           "                raise IndexError(x)", f"            {total} += x",
           f"        {total} += {p.rng.randint(1, 5)}",
           "    except (KeyError, IndexError) as err:", f"        {total} -= err.args[0]",
           f"print({total} + len(log))")


def _flow_worker(p: _Flow) -> None:
    """A generator fed by send, thrown into and closed: what each call returns, and its finally on close."""
    fn, w, seen = p.fresh("worker"), p.fresh("w"), p.fresh("seen")
    k = p.rng.randint(2, 3)
    calls = [f"{w}.send({p.rng.randint(1, 9)})", f"{w}.throw(ValueError)", f"{w}.send({p.rng.randint(1, 9)})",
             f"{w}.throw(ValueError)", f"{w}.send(len(log))"]
    p.rng.shuffle(calls)
    fatal = p.rng.randint(2, 4)
    calls.insert(fatal, f"{w}.throw(KeyError)" if p.rng.randint(0, 1) else f"{w}.close()")
    p.emit("", "", f"def {fn}():", "    got = 0", "    try:", "        while True:", "            try:",
           "                got += yield got", "            except ValueError:", f"                got *= {k}",
           f"                log.append(got)", "    finally:", "        log.append(-got)", "", "",
           f"{w} = {fn}()", f"{seen} = [next({w})]", f"for call in ({', '.join('lambda: ' + c for c in calls)}):",
           "    try:", f"        {seen}.append(call() or 0)",
           "    except (KeyError, ValueError, StopIteration) as err:",
           f"        {seen}.append({{KeyError: -1, ValueError: -2, StopIteration: -3}}[type(err)])",
           f"print(sum({seen}) * 10 + len(log))")


def _flow_break_finally(p: _Flow) -> None:
    """break or continue inside finally discards the exception in flight."""
    a, t = p.rng.randint(2, 5), p.rng.randint(8, 15)
    q = p.rng.choice([q for q in (2, 3, 4, 5) if math.gcd(a, q) == 1])  # raising x meet the continue
    kept = p.fresh("kept")
    p.emit("", "", f"{kept} = []", "try:", f"    for x in {p.span()}:", "        try:", f"            if x % {a} == 0:",
           "                raise RuntimeError(x)", f"            {kept}.append(x)", "        finally:",
           f"            if x % {q} != 0:", "                continue",
           f"            if x > {t}:", "                break", "except RuntimeError as err:",
           f"    {kept}.append(err.args[0] * 100)", f"log.extend({kept})", f"print(sum({kept}))")


def _flow_reraise(p: _Flow) -> None:
    """A handler that raises a new exception from the old one, a bare re-raise, and handlers tried in order."""
    fn = p.fresh("convert")
    table = {k: p.rng.randint(1, 9) for k in p.rng.sample(range(10), 5)}
    p.emit("", "", f"def {fn}(x):", f"    table = {table!r}", "    try:", "        try:",
           "            return table[x % 10] * 10 // (x % 3)", "        except KeyError as err:",
           f"            raise ValueError(x) from err", "        except ZeroDivisionError:",
           "            log.append(x)", "            raise", "    except ValueError as err:",
           "        return -1 if isinstance(err.__cause__, KeyError) else -2", "    except ArithmeticError:",
           f"        return {p.rng.randint(2, 9)}", "", "",
           f"print(sum({fn}(x) for x in {p.span()}) + len(log))")


def _flow_unbound(p: _Flow) -> None:
    """The name bound by `except ... as` is deleted when its handler ends."""
    name = p.fresh("err")
    v = p.rng.randint(2, 9)
    p.emit("", "", f"{name} = {v}", "try:", f"    log.append(log[{p.rng.randint(1000, 1999)}])",
           f"except IndexError as {name}:",
           "    log.append(len(log))", "try:", f"    log.append({name} * 2)", "except NameError:",
           f"    log.append(-{v})", "print(sum(log))")


def _flow_nested_with(p: _Flow) -> None:
    """Two managers in one with statement exit inner first; an __exit__ may replace the exception by raising its
    own, which the outer one then sees, and it suppresses only KeyError."""
    cls, total = p.fresh("Tag"), p.fresh("total")
    a = p.rng.randint(2, 4)
    p.emit("", "", f"class {cls}:", "    def __init__(self, name):", "        self.name = name", "",
           "    def __enter__(self):", "        log.append(self.name)", "        return self", "",
           "    def __exit__(self, kind, value, tb):", "        log.append(-self.name)",
           "        if kind is ValueError and self.name % 2 == 1:", "            raise KeyError(self.name)",
           "        return kind is KeyError", "", "",
           f"{total} = 0", f"for x in {p.span()}:", "    try:",
           f"        with {cls}(x % {p.rng.randint(3, 5)} + 1), {cls}(x % {p.rng.randint(2, 4)} + 6):",
           f"            if x % {a} == 0:", "                raise ValueError(x)", f"            {total} += x",
           f"        {total} += {p.rng.randint(1, 9)}", "    except (ValueError, KeyError) as err:",
           f"        {total} += err.args[0] * (10 if isinstance(err, KeyError) else -1)", f"print({total} + len(log))")


def _flow_groups(p: _Flow) -> None:
    """except* splits an ExceptionGroup: every matching clause runs once on its part, the unmatched rest is raised
    on as a group; a naked exception is matched as if wrapped, and propagates naked when nothing matches it."""
    fn, total = p.fresh("burst"), p.fresh("total")
    a, b, c = p.rng.sample([2, 3, 4, 5, 7], 3)
    k = p.rng.randint(2, 9)
    p.emit("", "", f"def {fn}(x):", "    errors = []", f"    if x % {a} == 0:", "        errors.append(ValueError(x))",
           f"    if x % {b} == 0:", "        errors.append(KeyError(x))", f"    if x % {c} == 0:",
           "        errors.append(TypeError(x))", "    if len(errors) > 1:",
           "        raise ExceptionGroup('burst', errors)", "    if errors:", "        raise errors[0]", "    return x",
           "", "", f"{total} = 0", f"for x in {p.span()}:", "    try:", "        try:", f"            {total} += {fn}(x)",
           "        except* ValueError as group:", f"            {total} -= len(group.exceptions)",
           "            log.append(x)", "        except* KeyError:", f"            {total} += {k}",
           "    except Exception as err:", f"        {total} += 100 if isinstance(err, ExceptionGroup) else 1",
           f"print({total} + len(log))")


def _flow_relay(p: _Flow) -> None:
    """yield from hands each send to a subgenerator and evaluates to its return value; the outer generator's own
    return value arrives as StopIteration.value."""
    sub, relay, r, out = p.fresh("sub"), p.fresh("relay"), p.fresh("r"), p.fresh("out")
    l1, l2 = p.rng.randint(4, 9), p.rng.randint(10, 16)
    p.emit("", "", f"def {sub}(limit):", "    total = 0", "    while True:", "        v = yield total",
           "        if v > limit:", "            return total", "        total += v", "", "",
           f"def {relay}():", f"    a = yield from {sub}({l1})", "    log.append(a)", f"    b = yield from {sub}({l2})",
           "    return a * 100 + b", "", "", f"{r} = {relay}()", f"next({r})", f"{out} = []",
           f"for v in {p.span()}:", "    try:", f"        {out}.append({r}.send(v % {p.rng.randint(11, 17)}))",
           "    except StopIteration as stop:", f"        {out}.append(stop.value)", f"        {r} = {relay}()",
           f"        next({r})", f"print(sum({out}) + len(log))")


def _flow_returned_list(p: _Flow) -> None:
    """finally runs after the return value is computed: it can still mutate the list being returned, but not a copy
    taken by the return expression."""
    fn = p.fresh("grab")
    a, b = p.rng.sample(range(2, 6), 2)
    p.emit("", "", f"def {fn}(x):", "    box = [x]", "    try:", f"        if x % {a} == 0:",
           "            raise ValueError(x)", "        return box", "    except ValueError:", "        box.append(-x)",
           "        return box[:]", "    finally:", f"        box.append(x * {p.rng.randint(2, 4)})",
           f"        if x % {b} == 0:", "            log.append(len(box))", "", "",
           f"print(sum(sum({fn}(x)) for x in {p.span()}) + len(log))")


def _flow_enter(p: _Flow) -> None:
    """An exception in __enter__ skips the body and __exit__ alike; __exit__ suppresses whenever it returns a
    truthy value, here an int."""
    cls, total = p.fresh("Lock"), p.fresh("total")
    a, b = p.rng.randint(5, 8), p.rng.randint(2, 4)
    p.emit("", "", f"class {cls}:", "    def __init__(self, x):", "        self.x = x", "", "    def __enter__(self):",
           f"        if self.x % {a} == 0:", "            raise KeyError(self.x)", "        log.append(self.x)",
           "        return self.x * 2", "", "    def __exit__(self, kind, value, tb):", "        log.append(-1)",
           f"        return len(log) % {p.rng.choice([3, 5])}", "", "", f"{total} = 0", f"for x in {p.span()}:",
           "    try:", f"        with {cls}(x) as v:", f"            if x % {b} == 0:", "                raise ValueError(v)",
           f"            {total} += v", f"        {total} += 1", "    except KeyError:", f"        {total} -= 5",
           "    except ValueError as err:", f"        {total} += err.args[0]", f"print({total} + len(log))")


def _flow_context(p: _Flow) -> None:
    """raise ... from None sets __cause__ to None and hides the context from the traceback, yet __context__ still
    holds the exception being handled; a plain raise in a handler sets only __context__."""
    fn = p.fresh("wrap")
    table = {k: p.rng.randint(1, 9) for k in p.rng.sample(range(5), 2)}
    p.emit("", "", f"def {fn}(x):", "    try:", "        try:", f"            return {table!r}[x % 5]",
           "        except KeyError:", "            if x % 2 == 1:", "                raise ValueError(x) from None",
           "            raise ValueError(-x)", "    except ValueError as err:",
           "        log.append(err.__suppress_context__)",
           "        return (err.__context__ is not None) * 10 + (err.__cause__ is None) * 100 + err.args[0]", "", "",
           f"print(sum({fn}(x) for x in {p.span()}) + sum(log))")


_FLOW_PARTS = [_flow_finally_return, _flow_gate, _flow_worker, _flow_break_finally, _flow_reraise, _flow_unbound,
               _flow_nested_with, _flow_groups, _flow_relay, _flow_returned_list, _flow_enter, _flow_context]


def exception_flow(rng: ItemRng, *, parts: int = 8) -> Generated:
    """`parts` pieces of exception flow run in sequence, each starting its loop where the shared log's length says,
    so one misread path shifts every later print."""
    p = _Flow(rng)
    for part in rng.sample(_FLOW_PARTS, min(parts, len(_FLOW_PARTS))) + [
            rng.choice(_FLOW_PARTS) for _ in range(parts - len(_FLOW_PARTS))]:
        part(p)
    source = "\n".join(p.lines).replace("\n\n\n", "\n\n").replace("\n\n    ", "\n    ") + "\n"
    printed, counts = _traced(source)
    return _trace_item("Read this Python 3.11 program.", source, "What does it print?", printed,
                       {"line_events": counts["lines"], "exception_events": counts["exceptions"],
                        "lines": source.count("\n")})


# ---------------------------------------------------------------- code writing: a car park's tariff

PARKING_REFERENCE = '''\
REENTRY, NEW_REENTRY, REENTRY_DAY = {reentry}, {new_reentry}, {reentry_day}
GRACE, NEW_GRACE, GRACE_DAY = {grace}, {new_grace}, {grace_day}
BLOCK, RATE, NEW_RATE, RATE_DAY = {block}, {rate}, {new_rate}, {rate_day}
CAP, NEW_CAP, CAP_DAY = {cap}, {new_cap}, {cap_day}
WEEKEND_FLAT, WEEKEND_DAYS, HOLIDAYS = {flat}, {weekend}, {holidays}
NIGHT_HOUR, NIGHT_MAX = {night_hour}, {night_max}
EV_PERCENT, NEW_EV_PERCENT, EV_DAY = {ev}, {new_ev}, {ev_day}
LOYAL_FROM, LOYAL_OFF, LONG_STAY, MINIMUM = {loyal_from}, {loyal_off}, {long_stay}, {minimum}


def merged_sessions(sessions):
    """Each plate's sessions in start order (ties: list order), re-entries merged: [plate, start, end, electric]."""
    merged = []
    last = {{}}
    for index in sorted(range(len(sessions)), key=lambda i: (sessions[i][1], i)):
        plate, start, end, electric = sessions[index]
        window = NEW_REENTRY if start // 1440 >= REENTRY_DAY else REENTRY
        previous = last.get(plate)
        if previous is not None and start <= previous[2] + window:
            previous[2] = max(previous[2], end)
            previous[3] = previous[3] and electric
        else:
            last[plate] = [plate, start, end, electric]
            merged.append(last[plate])
    return merged


def pieces(start, end):
    """(kind, day, minutes) for each piece of a visit: day pieces 07:00-19:00, night pieces 19:00-07:00."""
    out, t = [], start
    while t < end:
        day, minute = divmod(t, 1440)
        if 420 <= minute < 1140:
            kind, piece_end = "day", day * 1440 + 1140
        elif minute >= 1140:
            kind, piece_end = "night", day * 1440 + 1440 + 420
        else:
            kind, piece_end = "night", day * 1440 + 420
        piece_end = min(piece_end, end)
        out.append((kind, day, piece_end - t))
        t = piece_end
    return out


def charges(sessions):
    totals = {{plate: 0 for plate, _, _, _ in sessions}}
    counted, day_paid = {{}}, {{}}
    for plate, start, end, electric in merged_sessions(sessions):
        grace = NEW_GRACE if start // 1440 >= GRACE_DAY else GRACE
        if end - start <= grace:
            continue
        week = start // 1440 // 7
        counted[plate, week] = counted.get((plate, week), 0) + 1
        day_part = night_part = 0
        weekend = False
        for kind, day, minutes in pieces(start, end):
            if kind == "night":
                night_part += min(NIGHT_MAX, -(-minutes // 60) * NIGHT_HOUR)
            elif day % 7 in WEEKEND_DAYS or (day in HOLIDAYS and not electric):
                day_part += WEEKEND_FLAT
                weekend = True
            else:
                rate = NEW_RATE if day >= RATE_DAY and not electric else RATE
                cap = NEW_CAP if day >= CAP_DAY else CAP
                paid = day_paid.get((plate, day), 0)
                charge = min(-(-minutes // BLOCK) * rate, cap - paid)
                day_paid[plate, day] = paid + charge
                day_part += charge
        if electric:
            percent = NEW_EV_PERCENT if start // 1440 >= EV_DAY else EV_PERCENT
            day_part -= day_part * percent // 100
        cost = day_part + night_part
        loyal = counted[plate, week] >= LOYAL_FROM and (electric or not weekend)
        if loyal:
            cost = max(0, cost - LOYAL_OFF)
        if end - start > 1440:
            cost = min(cost, LONG_STAY * -(-(end - start) // 1440))
        if not loyal:
            cost = max(cost, MINIMUM)
        totals[plate] += cost
    return {{plate: (total + 2) // 5 * 5 for plate, total in totals.items()}}
'''


def _parking_rules(rng: ItemRng) -> dict:
    """The tariff's seeded constants; every amendment takes effect on a day of the first or second week."""
    block = rng.choice([15, 20, 30, 60])
    rate = rng.randint(35, 240)
    night_hour = rng.randint(25, 140)
    weekend = rng.choice([(5, 6), (6,), (4, 5), (5,)])
    p = dict(reentry=rng.choice([5, 10, 15, 20, 30]), grace=rng.choice([10, 12, 15, 20, 25]), block=block, rate=rate,
             flat=rng.randint(300, 1800), weekend=weekend,
             holidays=tuple(sorted(rng.sample([d for d in range(1, 13) if d % 7 not in weekend], 2))),
             night_hour=night_hour, night_max=night_hour * rng.randint(3, 9) + rng.randint(1, night_hour - 1),
             ev=rng.choice([10, 15, 20, 25, 30, 35, 40]), loyal_from=rng.randint(2, 3),
             loyal_off=rng.randint(40, 400))
    p["cap"] = rate * rng.randint(3, max(4, 720 // block * 2 // 3)) + rng.randint(1, rate - 1)
    p["rate_day"], p["cap_day"], p["grace_day"], p["reentry_day"], p["ev_day"] = rng.sample(range(3, 12), 5)
    p["new_rate"] = rate + rng.choice([-1, 1]) * rng.randint(5, rate // 3)
    p["new_cap"] = p["cap"] + rng.choice([-1, 1]) * rng.randint(rate, 3 * rate)
    p["long_stay"] = (p["cap"] + p["night_max"]) * rng.randint(55, 95) // 100
    p["new_grace"] = rng.choice([g for g in (5, 8, 10, 12, 15, 20, 25, 30) if g != p["grace"]])
    p["new_reentry"] = rng.choice([r for r in (5, 10, 15, 20, 30, 45) if r != p["reentry"]])
    p["new_ev"] = rng.choice([e for e in (10, 15, 20, 25, 30, 35, 40, 50) if e != p["ev"]])
    p["minimum"] = rate * rng.randint(2, 3) + rng.randint(1, rate - 1)  # above a block or two
    return p


_WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _parking_prompt(p: dict) -> str:
    """The tariff document, worded from the same constants the reference uses, with seven later amendments."""
    weekend = " and ".join(f"{_WEEKDAYS[d]} (d % 7 == {d})" for d in p["weekend"])
    holidays = " and ".join(str(d) for d in p["holidays"])
    ordinal = {2: "2nd", 3: "3rd"}[p["loyal_from"]]
    return f"""\
Write a Python function `charges(sessions)` that computes what each car owes a car park under the tariff below.

Input. `sessions` is a list of tuples `(plate, start, end, electric)`. `plate` is a string; `start` and `end` are \
integers with start < end, counting minutes from Monday 00:00 of week 0, so minute t lies on day index \
d = t // 1440 at minute-of-day t % 1440 (day index d is a Monday when d % 7 == 0, a Tuesday when d % 7 == 1, and \
so on), and day index d lies in week d // 7; `electric` is a bool. The list is in no particular order, and \
sessions of the same plate may overlap.

Output. Return a dict that maps every plate appearing in `sessions` to the total it owes, in integer cents. A \
plate's total is the sum of the charges of its visits over the whole list, rounded once (rule 10).

THE TARIFF

Rule 1 (visits). Take each plate's sessions in order of start time (equal start times: the one earlier in the \
list first). A session that starts at most {p['reentry']} minutes after the end of the plate's current visit (or \
before that end) joins that visit: the visit now ends at the later of the two ends. Otherwise the session begins \
a new visit. So a chain of such re-entries is one visit, running from its first start to its latest end, and the \
time between the sessions is charged as parked time. A visit is electric only when every session in it is \
electric. All later rules speak of visits, never of single sessions, and a visit's start is its first session's \
start.

Rule 2 (grace). A visit lasting at most {p['grace']} minutes (end - start <= {p['grace']}) is free. A free visit \
is ignored by every later rule: it has no pieces, adds nothing to any daily total of rule 5, is not counted by \
rule 7 and costs nothing (rule 9 does not apply to it).

Rule 3 (pieces). A visit that is not free is cut into pieces at every 07:00 (minute-of-day 420) and every 19:00 \
(minute-of-day 1140) that falls strictly inside it. A day piece lies between 07:00 and 19:00 of one day; its day \
is that day index. A night piece lies between 19:00 of one day and 07:00 of the next (it crosses midnight). A \
piece's length is its number of minutes; a visit that ends exactly at 07:00 or 19:00 has no piece after it.

Rule 4 (night pieces). A night piece costs {p['night_hour']} cents per started hour of that piece (its length \
divided by 60, rounded up), but never more than {p['night_max']} cents. Hours are counted from the piece's own \
start, whatever the visit did before.

Rule 5 (day pieces). A day piece whose day is a weekend day, that is {weekend}, costs a flat {p['flat']} cents, \
whatever its length. Any other day piece costs {p['rate']} cents per started block of {p['block']} minutes of \
that piece (its length divided by {p['block']}, rounded up; blocks restart with every piece). Daily cap: for one \
plate and one day charged by blocks, the block-charged day pieces of that day cost at most {p['cap']} cents in \
total, across all the plate's visits. Visits are charged in the order of rule 1, and a day piece that would take \
the plate's total for its day above the cap costs only what remains up to the cap (possibly 0). The cap counts \
the costs of rule 5 before any reduction of rules 6 and 7. Flat-charged pieces neither count toward a cap nor are \
limited by one.

Rule 6 (electric). An electric visit's day part (the sum of its day-piece costs under rule 5, flat pieces \
included) is reduced by {p['ev']}% of it, the reduction rounded down to a whole cent. Night pieces get no \
electric reduction. The visit's charge is then its (reduced) day part plus its night part (the sum of its \
night-piece costs).

Rule 7 (loyalty). Count each plate's visits that are not free, week by week: a visit belongs to the week of its \
start, and the count starts again at 1 in every week. From a plate's {ordinal} counted visit of a week onward, \
each such visit of that week receives the loyalty reduction: its charge (after rule 6) is reduced by \
{p['loyal_off']} cents, but never below 0. Exception: a visit that has a flat-charged day piece does not receive \
the loyalty reduction (it is still counted). Exception to that exception: an electric visit does receive the \
loyalty reduction even when it has a flat-charged day piece.

Rule 8 (long stays). A visit lasting more than 1440 minutes (end - start > 1440) costs at most {p['long_stay']} \
cents per started 1440 minutes of the visit (its length divided by 1440, rounded up): its charge after rule 7 is \
lowered to that bound when it is above it.

Rule 9 (minimum charge). A visit that is not free costs at least {p['minimum']} cents: its charge after rule 8 \
is raised to {p['minimum']} when it is below that. Exception: a visit that received the loyalty reduction of \
rule 7 (even one whose charge was 0 already) has no minimum.

Rule 10 (rounding). Each plate's total, the sum of its visits' charges, is rounded once to the nearest multiple of \
5 cents: a remainder (total % 5) of 1 or 2 rounds down, of 3 or 4 rounds up. Single visits are never rounded.

AMENDMENTS (issued after the tariff, in this order; where they conflict with the rules above or with an earlier \
amendment, the later text wins)

Amendment A (effective from day index {p['rate_day']}). In rule 5, a block-charged day piece whose day index is \
{p['rate_day']} or later costs {p['new_rate']} cents per started block instead of {p['rate']}. Day pieces of \
earlier days keep the old rate, even when their visit goes on past day {p['rate_day']}.

Amendment B (effective from day index {p['cap_day']}). The daily cap of rule 5 is {p['new_cap']} cents instead of \
{p['cap']} for every day whose index is {p['cap_day']} or later. Earlier days keep the old cap.

Amendment C (effective from day index {p['grace_day']}). For a visit whose start lies on day index \
{p['grace_day']} or later, the grace period of rule 2 is {p['new_grace']} minutes instead of {p['grace']}: such a \
visit is free when end - start <= {p['new_grace']}. Visits that start earlier keep the old grace period.

Amendment D (overriding Amendment A). Amendment A does not apply to electric visits: their block-charged day \
pieces cost {p['rate']} cents per started block on every day, before and after day index {p['rate_day']}.

Amendment E (public holidays). Day indices {holidays} are public holidays. In rule 5 a day piece on a public \
holiday is charged like a weekend day piece (the flat, outside any cap), except for electric visits: their day \
pieces on a public holiday are block-charged like those of any other non-weekend day (Amendments A, B and D apply \
to them as to any block-charged piece, and they count toward and are limited by that day's cap).

Amendment F (effective from day index {p['reentry_day']}). In rule 1, a session whose own start lies on day index \
{p['reentry_day']} or later joins the plate's current visit when it starts at most {p['new_reentry']} minutes \
(instead of {p['reentry']}) after that visit's end. Sessions that start earlier keep the old limit.

Amendment G (effective from day index {p['ev_day']}). In rule 6, an electric visit whose start lies on day index \
{p['ev_day']} or later has its day part reduced by {p['new_ev']}% instead of {p['ev']}% (the reduction still \
rounded down). Visits that start earlier keep the old percentage."""


def _parking_test(rng: ItemRng, p: dict, plates: list[str], n: int) -> list[tuple]:
    """n sessions aimed at the rules' edges: grace and re-entry limits (both sides of their amendments' days),
    07:00 and 19:00, blocks, caps shared by a plate's visits on one day, weekends and holidays, the amendments'
    first days, and several visits of a plate within one week for loyalty and the minimum."""
    week = rng.randint(0, 1)
    focus = [p["rate_day"], p["cap_day"], p["grace_day"], p["reentry_day"], p["ev_day"], *p["holidays"]]
    focus += [d - 1 for d in focus] + [d for d in range(14) if d % 7 in p["weekend"]]
    focus = [d for d in focus if d // 7 == week] or [week * 7 + 3]
    sessions: list[tuple] = []
    for _ in range(n):
        plate = rng.choice(plates)
        day = rng.choice(focus + [rng.randint(week * 7, week * 7 + 6)])
        mine = [s for s in sessions if s[0] == plate]
        kind = rng.choice(["grace", "grace", "grace", "reentry", "reentry", "reentry", "edge", "blocks", "long",
                           "night", "cap", "shared", "short", "short", "random"])
        weekdays = [d for d in range(week * 7, week * 7 + 7) if d % 7 not in p["weekend"] and d not in p["holidays"]]
        if kind == "shared":  # two visits of one plate on one block-charged day: the cap is shared between them
            first = rng.choice(weekdays) * 1440 + 420 + rng.randint(0, 120)
            length = rng.randint(120, 360)
            sessions.append((plate, first, first + length, rng.randint(0, 4) < 2))
            start = first + length + max(p["reentry"], p["new_reentry"]) + rng.randint(1, 60)
            length = rng.randint(120, 400)
        elif kind == "reentry" and mine:
            previous = rng.choice(mine)
            late = (previous[2] + p["new_reentry"]) // 1440 >= p["reentry_day"]
            limit = p["new_reentry"] if late else p["reentry"]
            other = p["reentry"] if late else p["new_reentry"]
            start = previous[2] + rng.choice([limit, limit + 1, other, other + 1, limit - 1, -rng.randint(1, 30)])
            length = rng.choice([rng.randint(1, 40), rng.randint(40, 400)])
        elif kind == "cap" and mine:
            previous = rng.choice(mine)
            start = previous[2] + rng.randint(max(p["reentry"], p["new_reentry"]) + 1, 240)
            length = rng.randint(60, 700)
        else:
            start = day * 1440 + rng.choice([420, 1140, 419, 421, 1139, 1141, rng.randint(0, 1439),
                                             rng.randint(400, 1160)])
            if kind == "grace":  # at either grace limit, often on the days around amendment C's
                if rng.randint(0, 1):
                    start = (p["grace_day"] - rng.randint(0, 1)) * 1440 + rng.randint(0, 1439)
                late = start // 1440 >= p["grace_day"]
                applies, other = (p["new_grace"], p["grace"]) if late else (p["grace"], p["new_grace"])
                length = rng.choice([applies, applies, applies + 1, other, other + 1])
            elif kind == "edge":  # end exactly at, or just around, a 07:00 or 19:00
                target = start + rng.randint(30, 900)
                target = (target // 1440) * 1440 + rng.choice([420, 1140]) + rng.choice([0, 0, 1, -1])
                length = max(1, target - start) if target > start else rng.randint(30, 300)
            elif kind == "blocks":
                length = p["block"] * rng.randint(1, 9) + rng.choice([0, 1, -1])
            elif kind == "long":
                length = rng.randint(900, 3600)
            elif kind == "night":
                start = day * 1440 + rng.randint(1100, 1500)
                length = rng.randint(20, 720)
            elif kind == "short":  # just past grace: a small charge that the minimum may raise
                length = max(p["grace"], p["new_grace"]) + rng.randint(1, 40)
            else:
                length = rng.randint(1, 800)
        start = max(0, start)
        sessions.append((plate, start, start + max(1, length), rng.randint(0, 4) < 2))
    rng.shuffle(sessions)
    return sessions


def _parking_visit_flags(p: dict, namespace: dict, sessions: list) -> list[frozenset]:
    """Which rules fired, and how, for each visit of one test (a mirror of the reference), plus a test-level flag
    for a total that rule 10 changes."""
    out = []
    counted, day_paid, totals = {}, {}, {}
    starts = {}
    for s in sessions:
        starts.setdefault(s[0], []).append(s)
    for plate, start, end, electric in namespace["merged_sessions"](sessions):
        joined = [s for s in starts[plate] if start < s[1] <= end + max(p["reentry"], p["new_reentry"])
                  and s[1] >= start]
        flags = set()
        if len([s for s in starts[plate] if start <= s[1] <= end]) > 1:
            flags.add("merged")
            if any(s[1] // 1440 >= p["reentry_day"] for s in joined):
                flags.add("merged-late")
        new_grace = start // 1440 >= p["grace_day"]
        if end - start <= (p["new_grace"] if new_grace else p["grace"]):
            out.append(frozenset(flags | {"free-new" if new_grace else "free"}))
            continue
        week = start // 10080
        counted[plate, week] = counted.get((plate, week), 0) + 1
        day_part = night_part = 0
        flat, mine = False, set()
        for kind, day, minutes in namespace["pieces"](start, end):
            if kind == "night":
                full = -(-minutes // 60) * p["night_hour"]
                flags.add("night-max" if full > p["night_max"] else "night")
                night_part += min(full, p["night_max"])
            elif day % 7 in p["weekend"] or (day in p["holidays"] and not electric):
                flags.add("holiday" if day % 7 not in p["weekend"] else "weekend")
                day_part += p["flat"]
                flat = True
            else:
                if day in p["holidays"]:
                    flags.add("holiday-electric")
                new_rate = day >= p["rate_day"] and not electric
                cap = p["new_cap"] if day >= p["cap_day"] else p["cap"]
                paid = day_paid.get((plate, day), 0)
                full = -(-minutes // p["block"]) * (p["new_rate"] if new_rate else p["rate"])
                if full > cap - paid:
                    flags.add("capped-new" if day >= p["cap_day"] else "capped")
                    if paid and (plate, day) not in mine:
                        flags.add("capped-shared")  # by what the plate's earlier visits paid that day
                else:  # which rate the piece paid (a capped piece pays what the cap leaves, whatever the rate)
                    flags.add("new-rate" if new_rate else "rate-kept" if day >= p["rate_day"] else "rate")
                day_paid[plate, day] = paid + min(full, cap - paid)
                day_part += min(full, cap - paid)
                mine.add((plate, day))
        if electric:
            late = start // 1440 >= p["ev_day"]
            flags.add("electric-new" if late else "electric")
            day_part -= day_part * (p["new_ev"] if late else p["ev"]) // 100
        cost = day_part + night_part
        loyal = counted[plate, week] >= p["loyal_from"] and (electric or not flat)
        if counted[plate, week] >= p["loyal_from"]:
            flags.add("loyal" if not flat else "loyal-flat-electric" if electric else "loyal-flat-denied")
            if week == 1:
                flags.add("loyal-week-1")
        if loyal:
            cost = max(0, cost - p["loyal_off"])
        if end - start > 1440:
            bound = p["long_stay"] * -(-(end - start) // 1440)
            flags.add("long-bound" if cost > bound else "long")
            cost = min(cost, bound)
        if not loyal and cost < p["minimum"]:
            flags.add("minimum")
            cost = p["minimum"]
        elif loyal and cost < p["minimum"]:
            flags.add("no-minimum")
        totals[plate] = totals.get(plate, 0) + cost
        out.append(frozenset(flags))
    if any(total % 5 for total in totals.values()):
        out.append(frozenset({"rounded"}))
    return out


_PARKING_FLAGS = {"merged", "merged-late", "free", "free-new", "night", "night-max", "weekend", "holiday",
                  "holiday-electric", "rate", "new-rate", "rate-kept", "capped", "capped-new", "capped-shared",
                  "electric",
                  "electric-new", "loyal", "loyal-flat-electric", "loyal-flat-denied", "long", "long-bound",
                  "minimum", "no-minimum", "rounded"}
# Every hidden test meets these, so misreading any of the rules behind them fails nearly every test.
_PARKING_EVERY_TEST = [{"merged"}, {"night", "night-max"}, {"capped-shared"}, {"electric", "electric-new"},
                       {"loyal"}, {"loyal-flat-electric", "loyal-flat-denied"}, {"minimum"}, {"rounded"},
                       {"weekend", "holiday"}, {"free", "free-new"}]


def parking_charges(rng: ItemRng, *, tests: int = 40, sessions: int = 16) -> Generated:
    """Implement a car park's tariff: visits merged from re-entries, grace, day and night pieces, a daily cap shared
    by a plate's visits, weekend and holiday flats, electric and weekly loyalty reductions with an exception to an
    exception, a long-stay bound, a minimum charge with an exception, rounding of totals, and seven amendments that
    override the rules and one another; hidden tests each hold many visits that meet nearly every rule."""
    p = _parking_rules(rng)
    source = PARKING_REFERENCE.format(**p)
    namespace: dict = {}
    exec(compile(source, "<reference>", "exec"), namespace)
    pool = _plates(rng, 8)
    examples = [_parking_test(rng, p, pool[:2], 7) for _ in range(2)]
    for _ in range(20):  # redraw the hidden tests until every rule's edge case is among them
        cases, paths = [], set()
        for _ in range(tests):
            for _ in range(60):  # redraw a test until it meets the rules every test meets
                case = _parking_test(rng, p, rng.sample(pool[2:], rng.randint(2, 3)), rng.randint(sessions - 3,
                                                                                                  sessions))
                flags = _parking_visit_flags(p, namespace, case)
                if all(need & set().union(*flags) for need in _PARKING_EVERY_TEST):
                    break
            cases.append(case)
            paths |= set(flags)
        if _PARKING_FLAGS <= set().union(*paths):
            break
    shown = "\n".join(f"    charges({s!r})\n    == {namespace['charges'](s)!r}" for s in examples)
    prompt = _parking_prompt(p) + f"\n\nEXAMPLES\n\n{shown}\n\n" + (
        "Reply with Python 3.11 code in a ```python block that defines `charges(sessions)` (helpers are fine; "
        "standard library only). Only the last ```python block in your response is used; it is run against "
        f"{tests} hidden tests in a sandbox without network or file access, and your score is the share of tests it "
        "passes.")
    key = CodeTestsKey(entry_point="charges", tests=[
        CodeTest(args=repr((s,)), expected=repr(namespace["charges"](s))) for s in cases])
    covered = [len(_PARKING_FLAGS & set().union(*_parking_visit_flags(p, namespace, c))) for c in cases]
    return Generated(prompt=prompt, key=key, reference=f"Implementation:\n\n```python\n{source}```\n",
                     difficulty={"paths": len(paths), "visits": sum(len(namespace["merged_sessions"](c))
                                                                     for c in cases),
                                 "rules_per_test": sorted(covered)[len(covered) // 2]})


def _plates(rng: ItemRng, n: int) -> list[str]:
    """n distinct licence plates."""
    letters = "ABCDEFGHJKLMNPRSTVWXYZ"
    plates: list[str] = []
    while len(plates) < n:
        plate = f"{rng.choice(letters)}{rng.choice(letters)}-{rng.randint(100, 999)}"
        if plate not in plates:
            plates.append(plate)
    return plates
