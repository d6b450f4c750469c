"""The recovery tasks (ESAC-AG 2.0): the reference recovers from every seeded fault at level 6 in 40+ calls, the
wasteful agent succeeds below it, independent solvers that read only the prompt and the tool outputs diagnose the
faults and reach the checked state, agents that retry blindly or misread a fault fail the relevant check, and
instances are deterministic, varied and robust to hostile input."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import AgTask, script_json
from esac_kit.ag.tasks import recovery
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

ITEMS = Path(__file__).resolve().parent.parent / "items" / "ag"
PAYMENTS, STOCK = "recovery-invoice-settlement", "recovery-stock-reconcile"
GENERATORS = {PAYMENTS: recovery.invoice_settlement, STOCK: recovery.stock_reconcile}
SEEDS = 12


def generate(item_id: str, seed: int) -> AgTask:
    return GENERATORS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 2)))


def scale(item_id: str):
    return read_item(ITEMS / f"{item_id}.toml").efficiency


def act(episode: Episode, name: str, **args) -> tuple[object, bool]:
    """One call; the result parsed from JSON when it is not an error."""
    text, error = episode.act(name, args)
    return (text if error else json.loads(text)), error


@pytest.mark.parametrize("item_id", GENERATORS)
def test_reference_wasteful_and_null_agents(item_id):
    rubric = scale(item_id)
    for seed in range(SEEDS):
        task = generate(item_id, seed)
        reference = drive(task, task.reference, rubric)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        errors = sum(s["status"] == "tool_error" for s in reference["steps"])
        assert errors >= (2 if item_id == PAYMENTS else 1)  # the lost reply (and the real decline) fire even here
        wasteful = drive(task, task.wasteful, rubric)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        null = drive(task, task.scripts()["null"], rubric)
        assert null["score"] == 0.0 and not null["success"]


@pytest.mark.parametrize("item_id", GENERATORS)
def test_instances_are_deterministic_varied_and_outputs_compact(item_id):
    prompts = set()
    for seed in range(SEEDS):
        one, two = generate(item_id, seed), generate(item_id, seed)
        assert one.prompt == two.prompt
        assert script_json(one.reference) == script_json(two.reference)
        assert script_json(one.wasteful) == script_json(two.wasteful)
        assert json.dumps(one.describe(), sort_keys=True) == json.dumps(two.describe(), sort_keys=True)
        prompts.add(one.prompt)
        episode = Episode(one, item_id)
        for call in one.reference[:-1]:
            text, _ = episode.act(call.name, dict(call.args))
            assert len(text) <= 1500, (call.name, len(text))
    assert len(prompts) == SEEDS


# ---------------------------------------------------------------------------------------------------------------
# An independent settlement solver and its naive variants, driven through the tools only.


def settle(task: AgTask, *, post_replays=True, stale_retry=True, lost_reply="same_key", keys="runbook",
           amounts="balance", throttle="status") -> dict:
    """Diagnose and settle the batch from the prompt and tool outputs. Each keyword names a behaviour; the default
    is the careful one, any other value falls into one trap."""
    episode = Episode(task, PAYMENTS)
    batch_id = re.search(r"Settlement batch (SB-[\d-]+)", task.prompt).group(1)
    for topic in ("settlement", "gateway", "ledger"):
        act(episode, "describe_api", topic=topic)
    batch, _ = act(episode, "get_batch", batch_id=batch_id)
    act(episode, "get_job", job_id=batch["last_job"])
    pages = act(episode, "list_invoices", batch_id=batch_id, page=1)[0]["pages"]
    rows = [r for p in range(1, pages + 1) for r in act(episode, "list_invoices", batch_id=batch_id, page=p)[0]["invoices"]]
    invoices = {r["invoice_id"]: act(episode, "get_invoice", invoice_id=r["invoice_id"])[0] for r in rows}
    first, _ = act(episode, "search_transactions", batch_id=batch_id, page=1)
    txns = [t for p in range(1, first["pages"] + 1)
            for t in act(episode, "search_transactions", batch_id=batch_id, page=p)[0]["transactions"]]
    new_total, left_open, counter = 0, [], [0]
    crashed_run_end = max(t["created_at"] for t in txns)

    def charge(invoice_id, amount, key):
        for _ in range(6):
            result, error = act(episode, "charge", invoice_id=invoice_id, amount_cents=amount, idempotency_key=key)
            if error and result.startswith("error: 503") and throttle == "status":
                status, _ = act(episode, "gateway_status")
                act(episode, "wait", seconds=status["resets_in_s"])
                continue
            if error and result.startswith("error: 503"):
                continue
            return result, error
        return result, error

    for invoice_id, invoice in invoices.items():
        balance = invoice["balance_cents"] if amounts == "balance" else invoice["amount_cents"] - sum(
            p["amount_cents"] for p in invoice["payments"])
        if balance <= 0:
            continue
        posted = {p["transaction_id"] for p in invoice["payments"]}
        mine = [t for t in txns if t["invoice_id"] == invoice_id]
        if keys == "runbook":
            for txn in mine:
                if txn["status"] == "captured" and txn["transaction_id"] not in posted and post_replays:
                    act(episode, "record_payment", invoice_id=invoice_id, transaction_id=txn["transaction_id"])
                    balance -= txn["amount_cents"]
        if balance <= 0:
            continue
        key, attempt = f"{batch_id}:{invoice_id}" if keys == "runbook" else f"fresh-{invoice_id}", 1
        if keys == "runbook" and any(t["idempotency_key"] == key and t["status"] == "declined" for t in mine) \
                and stale_retry:
            attempt, key = 2, f"{batch_id}:{invoice_id}:r2"
        while True:
            result, error = charge(invoice_id, balance, key)
            if error and result.startswith("error: 504"):
                if lost_reply == "same_key":
                    continue
                counter[0] += 1
                key = f"{key}-retry{counter[0]}"
                continue
            if error and result.startswith("error: 402"):
                if '"replayed": true' in result and stale_retry:
                    attempt += 1
                    key = f"{batch_id}:{invoice_id}:r{attempt}"
                    continue
                left_open.append(invoice_id)
                break
            if error:
                break
            if result["replayed"] and post_replays:
                act(episode, "record_payment", invoice_id=invoice_id, transaction_id=result["transaction_id"])
            if result["created_at"] > crashed_run_end:  # captured in this session, replayed or not
                new_total += result["amount_cents"]
            break
    act(episode, "set_batch_status", batch_id=batch_id, status="needs_attention" if left_open else "settled")
    episode.act("submit", {"answer": f"Newly charged {recovery.dollars(new_total)}; left open: {', '.join(left_open)}"})
    return episode.outcome(scale(PAYMENTS))


def test_an_independent_settlement_solver_succeeds():
    for seed in range(SEEDS):
        outcome = settle(generate(PAYMENTS, seed))
        assert outcome["success"], (seed, outcome["checks"])


def test_settlement_traps_bite():
    """Fresh keys, unposted replays, a stale decline taken for a real one, a new key after the lost reply, the
    amount instead of the balance, and hammering a throttled gateway each fail a check."""
    for seed in range(SEEDS):
        task = generate(PAYMENTS, seed)
        fresh = settle(task, keys="fresh")
        assert not fresh["checks"]["no_double_charge"] and fresh["score"] == 0.0, seed
        unposted = settle(task, post_replays=False)
        assert not unposted["checks"]["settled"], seed
        stale = settle(task, stale_retry=False)
        assert not stale["checks"]["settled"] and not stale["checks"]["answer_open"], seed
        rekeyed = settle(task, lost_reply="new_key")
        assert not rekeyed["checks"]["no_double_charge"] and rekeyed["score"] == 0.0, seed
        amount = settle(task, amounts="amount")
        assert not amount["checks"]["no_double_charge"], seed
        hammer = settle(task, throttle="retry")
        assert not hammer["checks"]["settled"], seed


# ---------------------------------------------------------------------------------------------------------------
# An independent reconcile solver and its naive variants.


def reconcile(task: AgTask, *, reads="primary", transfer="receive_first", on_lost="check", on_limit="status",
              bins="sum") -> dict:
    """Post the count from the prompt and tool outputs; each keyword's default is the careful behaviour."""
    episode = Episode(task, STOCK)
    count_id = re.search(r"cycle count (CC-\d+)", task.prompt).group(1)
    docs = {t: act(episode, "describe_api", topic=t)[0]["text"] for t in ("reads", "adjustments", "counts")}
    most = int(re.search(r"posts up to (\d+) lines", docs["adjustments"]).group(1))
    sheet, _ = act(episode, "get_count", count_id=count_id, page=1)
    lines = [line for p in range(1, sheet["pages"] + 1) for line in act(episode, "get_count", count_id=count_id,
                                                                          page=p)[0]["lines"]]
    counted: dict[str, int] = {}
    for line in lines:  # one line per bin: a SKU's count is the sum of its lines ('last' keeps only the last)
        counted[line["sku"]] = line["counted"] + (counted.get(line["sku"], 0) if bins == "sum" else 0)
    if reads == "replica":
        first, _ = act(episode, "list_stock", page=1)
        on_hand = {r["sku"]: r["on_hand"] for p in range(1, first["pages"] + 1)
                   for r in act(episode, "list_stock", page=p)[0]["stock"]}
        rows = {sku: act(episode, "get_stock", sku=sku)[0] for sku in counted}
    else:
        rows = {sku: act(episode, "get_stock", sku=sku, consistent=True)[0] for sku in counted}
        on_hand = {sku: row["on_hand"] for sku, row in rows.items()}
    arrived = [(sku, t["transfer_id"]) for sku, row in rows.items() for t in row["inbound_transfers"]
               if t["status"] == "arrived"]
    for sku, transfer_id in arrived:
        act(episode, "get_transfer", transfer_id=transfer_id)
        act(episode, "receive_transfer", transfer_id=transfer_id)
        if transfer == "receive_first":
            on_hand[sku] = act(episode, "get_stock", sku=sku, consistent=True)[0]["on_hand"]
    pending = [{"sku": s, "delta": n - on_hand[s]} for s, n in counted.items() if n != on_hand[s]]
    net, tries = 0, 0
    while pending and tries < 40:
        tries += 1
        chunk = pending[:most]
        result, error = act(episode, "post_adjustments", count_id=count_id, lines=chunk)
        if not error:
            net += sum(line["delta"] for line in chunk)
            pending = pending[len(chunk):]
        elif result.startswith("error: 429"):
            if on_limit == "status":
                act(episode, "wait", seconds=act(episode, "service_status")[0]["resets_in_s"])
            elif tries > 3:
                break
        elif result.startswith("error: 504") and on_lost == "check":
            first, _ = act(episode, "list_movements", count_id=count_id, page=1)
            moved = {m["sku"] for p in range(1, first["pages"] + 1)
                     for m in act(episode, "list_movements", count_id=count_id, page=p)[0]["movements"]
                     if m["kind"] == "cycle_count"}
            net += sum(line["delta"] for line in chunk if line["sku"] in moved)
            pending = [line for line in pending if line["sku"] not in moved]
        elif not result.startswith("error: 504"):
            break
    act(episode, "set_count_status", count_id=count_id, status="reconciled")
    episode.act("submit", {"answer": f"{net:+d}"})
    return episode.outcome(scale(STOCK))


def test_an_independent_reconcile_solver_succeeds():
    for seed in range(SEEDS):
        outcome = reconcile(generate(STOCK, seed))
        assert outcome["success"], (seed, outcome["checks"])


def test_reconcile_traps_bite():
    """Replica reads, a delta worked out before the transfer is received, a blind repost after the lost reply,
    retrying a full window without waiting and counting one bin of a SKU counted in two each fail a check."""
    for seed in range(SEEDS):
        task = generate(STOCK, seed)
        replica = reconcile(task, reads="replica")
        assert not replica["checks"]["quantities_match"], seed
        early = reconcile(task, transfer="delta_first")
        assert not early["checks"]["quantities_match"], seed
        blind = reconcile(task, on_lost="repost")
        assert not blind["checks"]["one_adjustment_per_sku"] and blind["score"] == 0.0, seed
        hammer = reconcile(task, on_limit="retry")
        assert not hammer["checks"]["quantities_match"], seed
        one_bin = reconcile(task, bins="last")
        assert not one_bin["checks"]["quantities_match"], seed


def test_answer_parsing_reads_signs_and_money():
    assert recovery.signed_integers("Net change: -12 units on FST-2210, +3 on ELC-9") == {-12, 3}
    assert recovery.money_values("charged $1,234.50 on INV-40213") == {Decimal("1234.50")}


# ---------------------------------------------------------------------------------------------------------------
# Hostile input: every refusal is a ToolError the model sees, never a crash.

HOSTILE = {
    PAYMENTS: [("get_batch", {"batch_id": ""}), ("get_job", {"job_id": "JOB-0"}),
               ("list_invoices", {"batch_id": "SB-0", "page": 1}), ("list_invoices", {"batch_id": "{batch}", "page": 0}),
               ("get_invoice", {"invoice_id": "INV-00000"}), ("get_customer", {"customer_id": "cus_" + "x" * 5000}),
               ("search_transactions", {"page": 1}),
               ("search_transactions", {"page": 1, "batch_id": "{batch}", "invoice_id": "{invoice}"}),
               ("search_transactions", {"page": 99, "batch_id": "{batch}"}),
               ("charge", {"invoice_id": "nope", "amount_cents": 100, "idempotency_key": "k"}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 0, "idempotency_key": "k"}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 10**18, "idempotency_key": "k"}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 100, "idempotency_key": " "}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 100, "idempotency_key": "k" * 81}),
               ("record_payment", {"invoice_id": "{invoice}", "transaction_id": "ch_0"}),
               ("wait", {"seconds": 0}), ("wait", {"seconds": 10**12}), ("describe_api", {"topic": "all"}),
               ("set_batch_status", {"batch_id": "SB-0000-0", "status": "settled"})],
    STOCK: [("get_count", {"count_id": "CC-0", "page": 1}), ("get_count", {"count_id": "{count}", "page": 9}),
            ("get_stock", {"sku": ""}), ("get_stock", {"sku": "NOPE-1", "consistent": True}),
            ("list_stock", {"page": 0}), ("list_movements", {"page": 1}),
            ("list_movements", {"page": 1, "sku": "{sku}", "count_id": "{count}"}),
            ("get_transfer", {"transfer_id": "TR-0"}), ("receive_transfer", {"transfer_id": "TR-0"}),
            ("post_adjustments", {"count_id": "{count}", "lines": []}),
            ("post_adjustments", {"count_id": "CC-0", "lines": [{"sku": "{sku}", "delta": 1}]}),
            ("post_adjustments", {"count_id": "{count}", "lines": [{"sku": "NOPE-1", "delta": 1}]}),
            ("post_adjustments", {"count_id": "{count}", "lines": [{"sku": "{sku}", "delta": 0}]}),
            ("post_adjustments", {"count_id": "{count}", "lines": [{"sku": "{sku}", "delta": 10**15}]}),
            ("post_adjustments", {"count_id": "{count}", "lines": [{"sku": "{sku}", "delta": 1}] * 2}),
            ("post_adjustments", {"count_id": "{count}", "lines": [{"sku": "{sku}", "delta": 1}] * 6}),
            ("wait", {"seconds": -3}), ("describe_api", {"topic": "all"}),
            ("set_count_status", {"count_id": "CC-0", "status": "reconciled"})],
}


@pytest.mark.parametrize("item_id", GENERATORS)
def test_hostile_inputs_are_refused_without_crashing(item_id):
    for seed in range(4):
        task = generate(item_id, seed)
        first = next(c for c in task.reference if c.name in ("charge", "post_adjustments")).args
        batch = next((c.args["batch_id"] for c in task.reference if c.name == "get_batch"), None)
        fill = {"{invoice}": first.get("invoice_id"), "{batch}": batch, "{count}": first.get("count_id"),
                "{sku}": first["lines"][0]["sku"] if "lines" in first else None}
        episode = Episode(task, item_id)
        before = episode.env.snapshot()
        for name, args in HOSTILE[item_id]:
            args = {k: fill.get(v, v) if isinstance(v, str) else
                    ([{**line, "sku": fill.get(line["sku"], line["sku"])} for line in v] if k == "lines" else v)
                    for k, v in args.items()}
            text, error = episode.act(name, args)
            assert error and text.startswith(("error:", "invalid call")), (name, args, text)
        assert episode.env.snapshot() == before
        assert episode.act("charge" if item_id == PAYMENTS else "post_adjustments", {"bogus": 1})[1]


def test_a_key_reused_for_another_invoice_or_amount_is_refused():
    task = generate(PAYMENTS, 1)
    episode = Episode(task, PAYMENTS)
    charge = next(c for c in task.reference if c.name == "charge")
    episode.act("charge", dict(charge.args))
    text, error = episode.act("charge", {**charge.args, "amount_cents": charge.args["amount_cents"] + 1})
    assert error and text.startswith("error: 409")
