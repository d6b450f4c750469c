"""The research tasks: scripted agents succeed, waste or fail as designed, every read of the reference is
reachable through its own searches, the traps cost credit, and hostile tool input never crashes the archive."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import AgTask, Call, script_json
from esac_kit.ag.tasks.research import amount_matches, budget_as_of, incident_dossier, name_matches
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

TASKS = {"research-incident-dossier": incident_dossier, "research-budget-as-of": budget_as_of}
SEEDS = range(20)
ITEMS = Path(__file__).resolve().parents[1] / "items" / "ag"


def make(item_id: str, seed: int) -> AgTask:
    return TASKS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 1)))


def scale(item_id: str):
    return read_item(ITEMS / f"{item_id}.toml").efficiency


def reference_answer(task: AgTask) -> str:
    return task.reference[-1].args["answer"]


def documents(task: AgTask) -> dict[str, dict]:
    return task.make_env().state["documents"]


def titled(task: AgTask, prefix: str) -> dict:
    found = [d for d in documents(task).values() if d["title"].startswith(prefix)]
    assert len(found) == 1, prefix
    return found[0]


@pytest.mark.parametrize("item_id", TASKS)
def test_item_file_loads_and_names_its_generator(item_id):
    item = read_item(ITEMS / f"{item_id}.toml")
    assert item.category == "research" and item.scoring == "agentic" and item.step_budget >= 30


@pytest.mark.parametrize("item_id", TASKS)
def test_scripted_agents_over_twenty_seeds(item_id):
    efficiency = scale(item_id)
    for seed in SEEDS:
        task = make(item_id, seed)
        reference = drive(task, task.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["invalid"] == 0
        assert all(step["status"] != "tool_error" for step in reference["steps"])
        wasteful = drive(task, task.wasteful, efficiency)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6
        assert wasteful["counts"]["redundant"] >= 2
        assert wasteful["counts"]["rework"] == 0  # the archive is read-only: nothing can be reworked
        null = drive(task, task.scripts()["null"], efficiency)
        assert null["score"] == 0.0 and not null["success"]


@pytest.mark.parametrize("item_id", TASKS)
def test_the_archive_never_changes_and_holds_thirty_to_eighty_documents(item_id):
    task = make(item_id, 0)
    episode = Episode(task)
    before = episode.env.snapshot()
    for call in task.reference[:-1]:
        episode.act(call.name, dict(call.args))
    assert episode.env.snapshot() == before and all(not s.diff for s in episode.steps)
    for seed in SEEDS:
        assert 30 <= len(documents(make(item_id, seed))) <= 80


@pytest.mark.parametrize("item_id", TASKS)
def test_every_document_the_reference_reads_was_found_by_its_earlier_searches(item_id):
    for seed in SEEDS:
        task = make(item_id, seed)
        env, surfaced = task.make_env(), set()
        for call in task.reference[:-1]:
            if call.name == "search":
                surfaced |= {hit["id"] for hit in env.search(**call.args)["hits"]}
            else:
                assert call.args["doc_id"] in surfaced, (seed, call)


@pytest.mark.parametrize("item_id", TASKS)
def test_instances_are_deterministic_and_vary_by_seed(item_id):
    first, again = make(item_id, 7), make(item_id, 7)
    assert first.prompt == again.prompt
    for name in ("reference", "wasteful"):
        assert script_json(getattr(first, name)) == script_json(getattr(again, name))
    assert json.dumps(documents(first), sort_keys=True) == json.dumps(documents(again), sort_keys=True)
    assert len({make(item_id, seed).prompt for seed in range(50)}) == 50
    assert len({reference_answer(make(item_id, seed)) for seed in SEEDS}) == len(SEEDS)


def test_incident_partial_agents_and_traps_lose_credit():
    efficiency = scale("research-incident-dossier")
    after_switch = set()
    for seed in range(8):
        task = make("research-incident-dossier", seed)
        supplier, cost = re.fullmatch(r"supplier: (.+); cost: (.+)", reference_answer(task)).groups()
        target = next(c.args["query"] for c in task.reference if c.name == "search" and "cost" in c.args["query"])
        target = target.split()[0]
        cost_memo = next(d for d in documents(task).values()
                         if d["title"].startswith("Cost of the") and d["title"].endswith(f"({target})"))
        initial = re.search(r"Total cost of the outage: (\S+)", cost_memo["body"]).group(1)
        draft = next(d for d in documents(task).values() if d["status"] == "draft" and "insurer" in d["body"])
        net = re.search(r"fall to (\S+?)\. ", draft["body"]).group(1)
        catalogue = titled(task, "Approved parts catalogue")["body"]
        twin = next(line.rsplit(" - ", 1)[1] for line in catalogue.splitlines() if "high-capacity" in line)
        sourcing = titled(task, "Sourcing change")["body"]
        new_supplier, old_supplier = re.search(r"supplied by (.+?), replacing (.+?)\. ", sourcing).groups()
        assert supplier in (new_supplier, old_supplier)
        after_switch.add(supplier == new_supplier)
        other = old_supplier if supplier == new_supplier else new_supplier
        for answer, expected in [(f"supplier: {supplier}; cost: {initial}", {"supplier": True, "cost": False}),
                                 (f"supplier: {supplier}; cost: {net}", {"supplier": True, "cost": False}),
                                 (f"supplier: {twin}; cost: {cost}", {"supplier": False, "cost": True}),
                                 (f"supplier: {other}; cost: {cost}", {"supplier": False, "cost": True}),
                                 (f"Supplier: {supplier.upper()}\nCost: {cost}", {"supplier": True, "cost": True})]:
            outcome = drive(task, (*task.reference[:-1], Call("submit", {"answer": answer})), efficiency)
            assert outcome["checks"] == expected, (seed, answer)
            assert outcome["score"] == 0.5 * sum(expected.values())
    assert after_switch == {True, False}  # the unit was fitted both before and after the sourcing change


def test_budget_partial_agents_and_traps_lose_credit():
    efficiency = scale("research-budget-as-of")
    handed_over = set()
    for seed in range(12):
        task = make("research-budget-as-of", seed)
        budget, owner = re.fullmatch(r"budget: (.+); owner: (.+)", reference_answer(task)).groups()
        main = re.search(r"budget of Project (\w+) as it stood", task.prompt).group(1)
        charter = titled(task, f"Project {main} charter")["body"]
        base = re.search(r"Approved budget for \d+: (\S+?)\. ", charter).group(1)
        stale = re.search(r"approved budget of (\S+?)\. ", titled(task, f"Project {main} spend")["body"]).group(1)
        draft = re.search(r"increase of (\S+) ", titled(task, "Proposal: further funding")["body"]).group(1)
        incoming, outgoing = re.search(r"^(.+?) takes over from (.+?) as",
                                       titled(task, f"New budget owner for Project {main}")["body"]).groups()
        twin_owner = re.search(r"Budget owner: (.+?)\. ", titled(task, f"{main} Labs charter")["body"]).group(1)
        assert twin_owner.split()[1] == incoming.split()[1] and owner in (incoming, outgoing)
        handed_over.add(owner == incoming)
        wrong_owner = outgoing if owner == incoming else incoming
        for answer, expected in [(f"budget: {base}; owner: {owner}", {"budget": False, "owner": True}),
                                 (f"budget: {stale}; owner: {owner}", {"budget": False, "owner": True}),
                                 (f"budget: {draft}; owner: {owner}", {"budget": False, "owner": True}),
                                 (f"budget: {budget}; owner: {wrong_owner}", {"budget": True, "owner": False}),
                                 (f"budget: {budget}; owner: {twin_owner}", {"budget": True, "owner": False}),
                                 (f"The budget was {budget} and the owner was {owner}.",
                                  {"budget": True, "owner": True})]:
            outcome = drive(task, (*task.reference[:-1], Call("submit", {"answer": answer})), efficiency)
            assert outcome["checks"] == expected, (seed, answer)
    assert handed_over == {True, False}  # over a dozen seeds the handover both went through and did not


def test_answers_are_read_leniently_but_precisely():
    names = ["Kestrel Fluidics", "Kestrel Hydraulics", "Altmark Controls"]
    assert name_matches("supplier: kestrel  fluidics; cost: $1", "supplier", "Kestrel Fluidics", names)
    assert name_matches("Supplier = Kestrel Fluidics (not Kestrel Hydraulics)", "supplier", "Kestrel Fluidics", names)
    assert not name_matches("supplier: Kestrel Hydraulics, not Kestrel Fluidics", "supplier", "Kestrel Fluidics", names)
    assert not name_matches("supplier: Kestrel", "supplier", "Kestrel Fluidics", names)
    assert name_matches("It was Kestrel Fluidics.", "supplier", "Kestrel Fluidics", names)
    assert not name_matches("Kestrel Fluidics or Altmark Controls", "supplier", "Kestrel Fluidics", names)
    assert not name_matches(None, "supplier", "Kestrel Fluidics", names)
    for text in ("cost: $365,000", "cost: 365000", "Cost: USD 365,000.00", "cost: €365 000", "cost: $365k",
                 "cost: 0.365 million", "cost: $365,000 (corrected from $348,500)",
                 "INC-6388 on 2024-06-06 cost 365,000 dollars"):
        assert amount_matches(text, "cost", 365000, {348500}), text
    for text in ("cost: $348,500", "cost: 36,500", "cost: $365,001", "", "INC-365000", "cost 365,000 or 348,500"):
        assert not amount_matches(text, "cost", 365000, {348500}), text
    assert amount_matches("budget: £4,330,000; owner: Nadia Iqbal (budget owner since 22 March)", "budget",
                          4330000, set())


@pytest.mark.parametrize("item_id", TASKS)
def test_hostile_input_gives_tool_errors_never_a_crash(item_id):
    episode = Episode(make(item_id, 3))
    for name, arguments in [("read_document", {"doc_id": "DOC-0000"}), ("read_document", {"doc_id": ""}),
                            ("read_document", {"doc_id": "x" * 100_000}), ("read_document", {"doc_id": "../../etc"}),
                            ("search", {"query": ""}), ("search", {"query": "   !!! ??? "}),
                            ("search", {"query": "the of and"}), ("search", {"query": "9" * 5000})]:
        text, error = episode.act(name, arguments)
        assert error and text.startswith("error: "), (name, arguments)
    for name, arguments in [("read_document", {"doc_id": 12345}), ("search", {"query": "x", "limit": 50}),
                            ("search", {}), ("delete_document", {"doc_id": "DOC-1000"})]:
        text, error = episode.act(name, arguments)
        assert error and text.startswith("invalid call"), (name, arguments)
    text, error = episode.act("search", {"query": "zzzz unmatched qqqq"})
    assert not error and json.loads(text)["hits"] == []
    text, error = episode.act("search", {"query": "9" * 199})
    assert not error and json.loads(text)["total_matches"] == 0
    doc_id = next(iter(episode.env.state["documents"]))
    text, error = episode.act("read_document", {"doc_id": f"  {doc_id.lower()} "})
    assert not error and json.loads(text)["id"] == doc_id
