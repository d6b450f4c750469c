"""The recovery tasks: the reference recovers from every seeded fault at level 6, the wasteful agent succeeds below
it, and naive agents that retry blindly, ignore errors or trust the replica fail a check; instances are
deterministic, varied and robust to hostile input."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from esac_kit.ag.env import ToolError
from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import AgTask, script_json
from esac_kit.ag.tasks import recovery
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

ITEMS = Path(__file__).resolve().parent.parent / "items" / "ag"
PAYMENTS, STOCK = "recovery-invoice-settlement", "recovery-stock-reconcile"
GENERATORS = {PAYMENTS: recovery.invoice_settlement, STOCK: recovery.stock_reconcile}
SEEDS = 20


def generate(item_id: str, seed: int) -> AgTask:
    return GENERATORS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 1)))


def scale(item_id: str):
    return read_item(ITEMS / f"{item_id}.toml").efficiency


def act(episode: Episode, name: str, **args) -> tuple[object, bool]:
    """One call; the result parsed from JSON when it is not an error."""
    text, error = episode.act(name, args)
    return (text if error else json.loads(text)), error


@pytest.mark.parametrize("item_id", GENERATORS)
def test_item_file_loads(item_id):
    item = read_item(ITEMS / f"{item_id}.toml")
    assert item.category == "recovery" and item.scoring == "agentic" and item.efficiency is not None


@pytest.mark.parametrize("item_id", GENERATORS)
def test_reference_wasteful_and_null_agents(item_id):
    rubric = scale(item_id)
    for seed in range(SEEDS):
        task = generate(item_id, seed)
        reference = drive(task, task.reference, rubric)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        assert any(s["status"] == "tool_error" for s in reference["steps"])  # the faults really fire
        wasteful = drive(task, task.wasteful, rubric)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        null = drive(task, task.scripts()["null"], rubric)
        assert null["score"] == 0.0 and not null["success"]
        assert task.describe()["tools"]


@pytest.mark.parametrize("item_id", GENERATORS)
def test_partial_agent_earns_some_goal_checks_but_not_all(item_id):
    rubric = scale(item_id)
    for seed in range(SEEDS):
        task = generate(item_id, seed)
        if item_id == PAYMENTS:  # never closes the batch
            calls = tuple(c for c in task.reference if c.name != "set_batch_status")
        else:  # gives up on the adjustment the rate limit rejected
            wait = next(i for i, c in enumerate(task.reference) if c.name == "wait")
            calls = task.reference[:wait] + task.reference[wait + 2:]
        outcome = drive(task, calls, rubric)
        assert 0.0 < outcome["score"] < 1.0 and not outcome["success"], (seed, outcome["checks"])


@pytest.mark.parametrize("item_id", GENERATORS)
def test_instances_are_deterministic_and_varied(item_id):
    prompts = set()
    for seed in range(SEEDS):
        one, two = generate(item_id, seed), generate(item_id, seed)
        assert one.prompt == two.prompt
        assert script_json(one.reference) == script_json(two.reference)
        assert script_json(one.wasteful) == script_json(two.wasteful)
        assert json.dumps(one.describe(), sort_keys=True) == json.dumps(two.describe(), sort_keys=True)
        prompts.add(one.prompt)
    assert len(prompts) == SEEDS


def test_action_scales_make_any_waste_cost_a_level():
    for item_id in GENERATORS:
        # the scale reads the excess over each seed's own reference, so any waste drops a level
        assert scale(item_id).action_scale[0] < 1 + scale(item_id).rework_penalty


# ---------------------------------------------------------------------------------------------------------------
# Naive agents on the payments task, driven reactively (they read the tool results).

def settle_naively(task: AgTask, *, key: str, retries: int, pay: str = "balance") -> dict:
    """Charge every open invoice; key: 'none', 'fresh' (new key per attempt) or 'stable'; retry errors blindly."""
    episode = Episode(task, PAYMENTS)
    batch_id = task.reference[0].args["batch_id"]
    listing, _ = act(episode, "list_invoices", batch_id=batch_id)
    total, prepaid = 0, []
    for invoice in listing["invoices"]:
        if invoice["balance_cents"] == 0:
            prepaid.append(invoice["invoice_id"])
            continue
        amount = invoice["balance_cents"] if pay == "balance" else invoice["amount_cents"]
        method, tried = None, set()
        for attempt in range(1 + retries):
            args = {"invoice_id": invoice["invoice_id"], "amount_cents": amount}
            if key != "none":
                args["idempotency_key"] = f"k-{invoice['invoice_id']}" + (f"-{attempt}" if key == "fresh" else "")
            if method:
                args["payment_method"] = method
            result, error = act(episode, "charge", **args)
            if not error:
                total += amount
                break
            if "402" in result:  # try another card on file, expired or not
                tried.add(method)
                customer, _ = act(episode, "get_customer", customer_id=invoice["customer_id"])
                tried.add(customer["default_method"])
                method = next(m for m in customer["methods"] if m not in tried)
    act(episode, "set_batch_status", batch_id=batch_id, status="settled")
    episode.act("submit", {"answer": f"${total / 100:,.2f}; already paid: {', '.join(prepaid)}"})
    return episode.outcome(scale(PAYMENTS))


def settle_by_checking_the_ledger(task: AgTask) -> dict:
    """No idempotency keys: after a timeout, re-read the invoice and charge again only if nothing was recorded."""
    episode = Episode(task, PAYMENTS)
    batch_id = task.reference[0].args["batch_id"]
    listing, _ = act(episode, "list_invoices", batch_id=batch_id)
    total, prepaid = 0, []
    for invoice in listing["invoices"]:
        owed = invoice["balance_cents"]
        if owed == 0:
            prepaid.append(invoice["invoice_id"])
            continue
        customer, _ = act(episode, "get_customer", customer_id=invoice["customer_id"])
        methods = [m for m in customer["methods"] if customer["methods"][m]["expires"] >= "2026-12"]
        while owed:
            args = {"invoice_id": invoice["invoice_id"], "amount_cents": owed, "payment_method": methods[0]}
            result, error = act(episode, "charge", **args)
            if error and "402" in result:
                methods.pop(0)
            elif error:
                fresh, _ = act(episode, "get_invoice", invoice_id=invoice["invoice_id"])
                total += owed - fresh["balance_cents"]
                owed = fresh["balance_cents"]
            else:
                total += owed
                owed = 0
    act(episode, "set_batch_status", batch_id=batch_id, status="settled")
    episode.act("submit", {"answer": f"${total / 100:,.2f}; already paid: {', '.join(prepaid)}"})
    return episode.outcome(scale(PAYMENTS))


def test_payments_blind_retries_double_charge_and_fail_the_guard():
    for seed in range(SEEDS):
        task = generate(PAYMENTS, seed)
        for key in ("none", "fresh"):
            outcome = settle_naively(task, key=key, retries=3)
            assert not outcome["checks"]["no_double_charge"] and outcome["score"] == 0.0, (seed, key)


def test_payments_ignoring_errors_or_charging_the_full_amount_fails():
    for seed in range(SEEDS):
        task = generate(PAYMENTS, seed)
        ignored = settle_naively(task, key="stable", retries=0)
        assert not ignored["checks"]["all_settled"] and not ignored["success"], seed
        full = settle_naively(task, key="stable", retries=3, pay="amount")  # ignores the deposit
        assert not full["checks"]["no_double_charge"] and full["score"] == 0.0, seed


def test_payments_stable_key_retries_and_ledger_checks_both_succeed():
    for seed in range(SEEDS):
        task = generate(PAYMENTS, seed)
        assert settle_naively(task, key="stable", retries=3)["checks"]["no_double_charge"], seed
        outcome = settle_by_checking_the_ledger(task)
        assert outcome["success"], (seed, outcome["checks"])


def test_payments_answer_parsing_is_lenient_but_exact():
    task = generate(PAYMENTS, 3)
    answer = task.reference[-1].args["answer"]
    env = task.make_env()
    for call in task.reference[:-1]:
        try:
            env.call(call.name, dict(call.args))
        except ToolError:
            pass
    total = answer.split("$")[1].split(" ")[0]
    prepaid = answer.split("before: ")[1].rstrip(".")
    assert all(task.evaluate(env, f"total charged {total.replace(',', '')} USD. Prepaid: {prepaid.lower()}").values())
    wrong_cents = total[:-1] + str((int(total[-1]) + 1) % 10)
    assert not task.evaluate(env, f"${wrong_cents}; {prepaid}")["answer_total"]
    other = next(c.args["invoice_id"] for c in task.reference if c.name == "charge")
    assert not task.evaluate(env, f"${total}; {prepaid}, {other}")["answer_prepaid"]


# ---------------------------------------------------------------------------------------------------------------
# Naive agents on the inventory task.

def reconcile_naively(task: AgTask, *, reads: str, on_timeout: str) -> dict:
    """reads: 'replica' (one list_stock) or 'primary'; on_timeout: 'retry' blindly or 'check_replica' first."""
    episode = Episode(task, STOCK)
    count_id = next(c.args["count_id"] for c in task.reference if c.name == "set_count_status")
    counted = {line.split(" ")[1]: int(line.rsplit(" ", 1)[1])
               for line in task.prompt.splitlines() if line.startswith("- ")}
    if reads == "replica":
        listing, _ = act(episode, "list_stock")
        on_hand = {r["sku"]: r["on_hand"] for r in listing["stock"]}
    else:
        on_hand = {sku: act(episode, "get_stock", sku=sku, consistent=True)[0]["on_hand"] for sku in counted}
    net = 0
    for sku, target in counted.items():
        delta = target - on_hand[sku]
        for _ in range(4):
            if delta == 0:
                break
            result, error = act(episode, "adjust_stock", sku=sku, delta=delta, count_id=count_id)
            if not error:
                net += delta
                break
            if "429" in result:
                act(episode, "wait", seconds=int(result.split("retry after ")[1].split(" ")[0]))
            elif on_timeout == "check_replica":
                seen, _ = act(episode, "get_stock", sku=sku)
                delta = target - seen["on_hand"]
    act(episode, "set_count_status", count_id=count_id, status="reconciled")
    episode.act("submit", {"answer": f"{net:+d}"})
    return episode.outcome(scale(STOCK))


def test_stock_replica_reads_leave_wrong_quantities():
    for seed in range(SEEDS):
        outcome = reconcile_naively(generate(STOCK, seed), reads="replica", on_timeout="check_replica")
        assert not outcome["success"], seed
        assert not (outcome["checks"]["quantities_match"] and outcome["checks"]["one_adjustment_per_sku"]), seed


def test_stock_blind_retry_or_replica_check_after_a_timeout_duplicates_an_adjustment():
    for seed in range(SEEDS):
        task = generate(STOCK, seed)
        for on_timeout in ("retry", "check_replica"):
            outcome = reconcile_naively(task, reads="primary", on_timeout=on_timeout)
            assert not outcome["checks"]["one_adjustment_per_sku"] and outcome["score"] == 0.0, (seed, on_timeout)


def test_stock_answer_parsing_reads_signs_and_skips_sku_digits():
    assert recovery.signed_integers("Net change: -12 units on FST-2210, +3 on ELC-9") == {-12, 3}
    assert recovery.signed_integers("net −7 (was 1,204)") == {-7, 1204}
    assert recovery.money_values("charged $1,234.50 on INV-40213") == {Decimal("1234.50")}


# ---------------------------------------------------------------------------------------------------------------
# Hostile input: every refusal is a ToolError the model sees, never a crash.

HOSTILE = {
    PAYMENTS: [("list_invoices", {"batch_id": ""}), ("get_invoice", {"invoice_id": "INV-00000"}),
               ("get_customer", {"customer_id": "cus_" + "x" * 5000}),
               ("charge", {"invoice_id": "nope", "amount_cents": 100}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 0}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": -5}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 10**18}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 100, "idempotency_key": ""}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 100, "idempotency_key": "k" * 65}),
               ("charge", {"invoice_id": "{invoice}", "amount_cents": 100, "payment_method": "pm_nope"}),
               ("set_batch_status", {"batch_id": "SB-0000-0", "status": "settled"})],
    STOCK: [("get_stock", {"sku": ""}), ("get_stock", {"sku": "NOPE-1", "consistent": True}),
            ("adjust_stock", {"sku": "NOPE-1", "delta": 1, "count_id": "{count}"}),
            ("adjust_stock", {"sku": "{sku}", "delta": 0, "count_id": "{count}"}),
            ("adjust_stock", {"sku": "{sku}", "delta": 10**15, "count_id": "{count}"}),
            ("adjust_stock", {"sku": "{sku}", "delta": -100001, "count_id": "{count}"}),
            ("adjust_stock", {"sku": "{sku}", "delta": 1, "count_id": ""}),
            ("wait", {"seconds": 0}), ("wait", {"seconds": -3}), ("wait", {"seconds": 10**12}),
            ("set_count_status", {"count_id": "CC-0", "status": "reconciled"})],
}


@pytest.mark.parametrize("item_id", GENERATORS)
def test_hostile_inputs_are_refused_without_crashing(item_id):
    for seed in range(5):
        task = generate(item_id, seed)
        first = next(c for c in task.reference if c.name in ("charge", "adjust_stock")).args
        fill = {"{invoice}": first.get("invoice_id"), "{sku}": first.get("sku"), "{count}": first.get("count_id")}
        episode = Episode(task, item_id)
        before = episode.env.snapshot()
        for name, args in HOSTILE[item_id]:
            args = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in args.items()}
            text, error = episode.act(name, args)
            assert error and text.startswith("error:"), (name, args, text)
        assert episode.env.snapshot() == before
        assert episode.act("charge" if item_id == PAYMENTS else "adjust_stock", {"bogus": 1})[1]  # schema: invalid


def test_payments_key_reused_for_another_invoice_is_refused():
    task = generate(PAYMENTS, 1)
    episode = Episode(task, PAYMENTS)
    charges = [c for c in task.reference if c.name == "charge"]
    for call in charges:
        episode.act(call.name, dict(call.args))
    text, error = episode.act("charge", {**charges[0].args, "amount_cents": charges[0].args["amount_cents"] + 1})
    assert error and text.startswith("error: 409")
