"""Amendment 001 §1 on every AG task: the reference plus one redundant call, one rework or one invalid call earns
strictly less action credit than the clean reference; rework is judged per field, row or line, not per file."""

from __future__ import annotations

import pytest

from esac_kit.ag.episode import Episode, efficiency
from esac_kit.ag.task import Call
from esac_kit.instances import build_task
from esac_kit.pools import public_pool
from esac_kit.suite import load_suite
from esac_kit.verify import verification_pools

SUITE = load_suite("ag")
POOLS = verification_pools(public_pool(SUITE.manifest.public_seed), 5)
TRIES = 8  # candidate insertion points tried per variant, in script order


def _run(task, calls):
    episode = Episode(task)
    for call in calls:
        episode.act(call.name, dict(call.args))
        if episode.submitted:
            break
    return episode


def _perturbed(call: Call) -> list[Call]:
    """Copies of a mutating call with one argument changed: a wrong first attempt the reference then overwrites."""
    copies = []
    for key, value in call.args.items():
        if isinstance(value, str):
            copies.append(Call(call.name, {**call.args, key: value + ("\n# draft\n" if "\n" in value else "x")}))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            copies.append(Call(call.name, {**call.args, key: value + 1}))
    return copies


def _variants(task, reference: Episode) -> dict[str, list[tuple[Call, ...]]]:
    """Candidate scripts per kind of waste, built from the reference: the first that fits is used."""
    calls = list(task.reference)
    reads = [s.index for s in reference.steps if s.status == "ok" and not s.diff][:TRIES]
    writes = [s.index for s in reference.steps if s.diff][:TRIES]
    redundant = [tuple(calls[:i + 1] + [calls[i]] + calls[i + 1:]) for i in reads]
    invalid = [tuple(calls[:1] + [Call("no_such_tool", {})] + calls[1:]),
               tuple(calls[:1] + [Call(calls[0].name, {**calls[0].args, "unexpected": 1})] + calls[1:])]
    wasteful = _run(task, task.wasteful)  # the authored wasteful agent without its repeats: its rework alone
    unrepeated = tuple(c for c, s in zip(task.wasteful, wasteful.steps + [None] * len(task.wasteful))
                       if s is None or s.redundant_of is None)
    rework = [task.rework] if task.rework else [unrepeated] + [tuple(calls[:i] + [wrong] + calls[i:])
                                                               for i in writes for wrong in _perturbed(calls[i])]
    return {"redundant": redundant, "invalid": invalid, "rework": rework}


@pytest.mark.parametrize("item_id", [item.id for item in SUITE.items])
def test_one_wasted_call_of_each_kind_earns_strictly_less_action_credit_on_every_seed(item_id):
    item = SUITE.item(item_id)
    for pool in POOLS:
        task = build_task(SUITE, item, pool)
        reference = _run(task, task.reference)
        clean = reference.outcome(item.efficiency)
        assert clean["success"] and clean["efficiency"]["action_level"] == 6, pool.seed
        for kind, candidates in _variants(task, reference).items():
            if kind == "rework" and not any(s.diff for s in reference.steps):
                continue  # a read-only environment (research): nothing can be reworked
            best = _first_fit(task, item.efficiency, kind, candidates)
            assert best, f"{item_id} {pool.seed}: no scripted reference + 1 {kind} succeeds"
            assert best["efficiency"]["a"] < clean["efficiency"]["a"], (item_id, pool.seed, kind)


def _first_fit(task, scale, kind, candidates):
    """The first candidate that succeeds with exactly one wasted call of this kind and no other waste; for rework,
    where placing then cancelling an order or flipping a flag twice cannot rework once, the fewest reworks."""
    best = None
    for script in candidates:
        outcome = _run(task, script).outcome(scale)
        counts = outcome["counts"]
        others = counts["redundant"] + counts["rework"] + counts["invalid"] - counts[kind]
        if outcome["success"] and counts[kind] >= 1 and not others:
            if counts[kind] == 1:
                return outcome
            best = best if best and best["counts"][kind] <= counts[kind] else outcome
    return best


def _booking_module(task):
    """A module of the booking project the reference rewrites, its original text and its fixed text."""
    write = next(c for c in task.reference if c.name == "write_file")
    episode = Episode(task)
    return write.args["path"], episode.env.state["files"][write.args["path"]], write.args["content"]


def test_two_edits_of_different_lines_of_one_file_are_not_rework_and_a_second_edit_of_one_line_is():
    task = build_task(SUITE, SUITE.item("repair-booking-issues"), POOLS[0])
    path, original, _ = _booking_module(task)
    lines = original.splitlines(keepends=True)
    first, last = 0, len(lines) - 1
    episode = Episode(task)
    episode.act("write_file", {"path": path, "content": "".join(["# one\n", *lines[1:]])})
    episode.act("write_file", {"path": path, "content": "".join(["# one\n", *lines[1:last], "# two\n"])})
    assert episode.counts.rework == 0 and all(s.diff for s in episode.steps)
    episode.act("write_file", {"path": path, "content": "".join(["# three\n", *lines[1:last], "# two\n"])})
    assert episode.counts.rework == 1 and episode.steps[-1].rework_of == [0]
    episode.act("write_file", {"path": path, "content": original})  # undoing both edits is rework too
    assert episode.counts.rework == 2 and episode.steps[-1].rework_of == [1, 2]


def test_no_usage_from_the_provider_means_an_unknown_token_level_and_no_token_credit():
    item = SUITE.item("tools-order-fulfilment")
    task = build_task(SUITE, item, POOLS[0])
    episode = _run(task, task.reference)
    unknown = efficiency(item.efficiency, episode.counts, True)
    assert unknown.token_level is None and unknown.t == 0 and "no usage" in unknown.note
    episode.counts.tokens, episode.counts.model_turns = 30000, 17
    assert efficiency(item.efficiency, episode.counts, True).token_level == 6
    episode.counts.unreported_turns = 1  # one turn without usage: the total is not measured
    assert efficiency(item.efficiency, episode.counts, True).token_level is None
