"""Fault recovery: finish a job through tools that fail in seeded, deterministic ways (timeouts that may or may
not have applied, declined cards, rate limits, a lagging read replica) without any duplicate side effect."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from esac_kit.ag.answers import distinct_ints, dollars, money_values, signed_integers
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

MAX_CHARGE_CENTS = 10_000_000  # the gateway's per-charge limit ($100,000)
MAX_ADJUST_UNITS = 100_000
MAX_WAIT_S = 60
TIMEOUT_503 = "503 upstream timeout: the gateway did not confirm the charge (it may or may not have been applied)"
TIMEOUT_504 = ("504 gateway timeout: no response from the inventory service "
               "(the adjustment may or may not have been applied)")


def _hex(rng: ItemRng, n: int) -> str:
    """n random characters of a payment-system id."""
    return "".join(rng.choice("0123456789abcdefghjkmnpqrstvwxyz") for _ in range(n))


# ---------------------------------------------------------------------------------------------------------------
# Task 1: settle a batch of invoices through a flaky payment gateway.

COMPANIES = ["Harbor Lane Bakery", "Quill & Compass Books", "Northfield Dental", "Blue Heron Kayaks",
             "Copperline Electric", "Maple Row Florists", "Tidewater Marine Supply", "Granite Peak Outfitters",
             "Old Mill Coffee", "Silverleaf Yoga", "Redwood Framing Co", "Lantern Street Cinema",
             "Brightwater Laundry", "Foxglove Veterinary", "Ironbridge Fitness", "Cedar Hollow Farms",
             "Saltmarsh Seafood", "Kestrel Print Shop", "Juniper Pediatrics", "Windmill Auto Repair",
             "Orchard Gate Winery", "Pinecrest Daycare", "Riverbend Hardware", "Starling Design Studio"]
BILLERS = ["Ledgerwise Accounting", "Cloudnest Hosting", "Brightpath Payroll", "Stackyard Logistics",
           "Meridian Office Supply", "Tallgrass Security"]
BRANDS = ["visa", "mastercard", "amex", "discover"]
CHARGE_FAULTS = {  # attempt number -> what the gateway does on that attempt
    "clean": {},
    "lost_reply": {1: "applied"},  # the charge went through but the reply timed out
    "dropped": {1: "dropped"},  # timed out before reaching the processor
    "dropped_twice": {1: "dropped", 2: "dropped"},
}


class PaymentsEnv(Environment):
    """An invoicing system and a payment gateway that does not look at invoice balances."""

    def __init__(self, data: dict[str, Any], faults: dict[str, dict[int, str]], declined: set[str],
                 today: str, first_payment_number: int):
        super().__init__()
        self.state = copy.deepcopy(data)
        self._faults = faults  # invoice id -> attempt -> fault
        self._declined = set(declined)  # payment methods the issuer declines
        self._today_month = today[:7]
        self._attempts: dict[str, int] = {}
        self._next_payment = first_payment_number

    def _invoice_view(self, invoice_id: str) -> dict[str, Any]:
        invoice = self.state["invoices"][invoice_id]
        payments = [{"payment_id": pid, **p} for pid, p in self.state["payments"].items()
                    if p["invoice_id"] == invoice_id]
        paid = sum(p["amount_cents"] for p in payments)
        customer = self.state["customers"][invoice["customer_id"]]
        return {"invoice_id": invoice_id, "customer_id": invoice["customer_id"], "customer_name": customer["name"],
                "amount_cents": invoice["amount_cents"], "paid_cents": paid,
                "balance_cents": invoice["amount_cents"] - paid, "payments": payments}

    @tool("List the invoices of a settlement batch with the batch status. Each invoice shows its amount, what has "
          "been collected so far (paid_cents, and every recorded payment with its idempotency key and note) and the "
          "balance still owed (balance_cents). Read straight from the ledger: always current.",
          {"batch_id": {"type": "string"}})
    def list_invoices(self, batch_id: str):
        batch = self.state["batches"].get(batch_id)
        if batch is None:
            raise ToolError(f"no batch {batch_id!r}")
        return {"batch_id": batch_id, "status": batch["status"],
                "invoices": [self._invoice_view(i) for i in batch["invoice_ids"]]}

    @tool("Show one invoice: amount, payments recorded so far and balance still owed. Always current.",
          {"invoice_id": {"type": "string"}})
    def get_invoice(self, invoice_id: str):
        if invoice_id not in self.state["invoices"]:
            raise ToolError(f"no invoice {invoice_id!r}")
        return self._invoice_view(invoice_id)

    @tool("Show a customer: name, default payment method and every payment method on file with its brand, last "
          "four digits and expiry month (YYYY-MM; a card cannot be charged after its expiry month).",
          {"customer_id": {"type": "string"}})
    def get_customer(self, customer_id: str):
        customer = self.state["customers"].get(customer_id)
        if customer is None:
            raise ToolError(f"no customer {customer_id!r}")
        return {"customer_id": customer_id, **customer}

    @tool("Charge the customer of an invoice through the payment gateway and record the payment on the invoice. "
          "The gateway does NOT look at invoice balances: every successful call takes money, so two calls charge "
          "the customer twice. amount_cents: a positive integer (at most 10,000,000). payment_method: one of the "
          "customer's payment method ids; defaults to the customer's default method. idempotency_key (optional, "
          "1-64 characters): if a charge with the same key has already succeeded for the same invoice and amount, "
          "nothing new is charged and that original payment is returned with replayed=true; a key already used "
          "for a different invoice or amount is refused (409). Keys are remembered only for charges that "
          "succeeded. Errors: '503 upstream timeout' means the gateway did not confirm the charge, which may or "
          "may not have been applied; '402 card_declined' and '402 expired_card' mean that payment method will "
          "not work and nothing was charged.",
          {"invoice_id": {"type": "string"}, "amount_cents": {"type": "integer"},
           "idempotency_key": {"type": "string"}, "payment_method": {"type": "string"}},
          required=["invoice_id", "amount_cents"])
    def charge(self, invoice_id: str, amount_cents: int, idempotency_key: str | None = None,
               payment_method: str | None = None):
        invoice = self.state["invoices"].get(invoice_id)
        if invoice is None:
            raise ToolError(f"no invoice {invoice_id!r}")
        if not 1 <= amount_cents <= MAX_CHARGE_CENTS:
            raise ToolError(f"amount_cents must be between 1 and {MAX_CHARGE_CENTS}")
        if idempotency_key is not None and not 1 <= len(idempotency_key.strip()) <= 64:
            raise ToolError("idempotency_key must be 1-64 characters")
        customer = self.state["customers"][invoice["customer_id"]]
        method = customer["default_method"] if payment_method is None else payment_method
        if method not in customer["methods"]:
            raise ToolError(f"payment method {method!r} is not on file for customer {invoice['customer_id']}")
        if idempotency_key is not None:
            for payment_id, payment in self.state["payments"].items():
                if payment.get("idempotency_key") != idempotency_key:
                    continue
                if payment["invoice_id"] != invoice_id or payment["amount_cents"] != amount_cents:
                    raise ToolError(f"409 idempotency key {idempotency_key!r} was already used for a different "
                                    "invoice or amount")
                return {"payment_id": payment_id, **payment, "replayed": True}
        card = customer["methods"][method]
        if method in self._declined:
            raise ToolError(f"402 card_declined (insufficient_funds): {card['brand']} ending {card['last4']} "
                            f"({method}) was declined; retrying this payment method will not succeed")
        if card["expires"] < self._today_month:
            raise ToolError(f"402 expired_card: {card['brand']} ending {card['last4']} ({method}) expired "
                            f"{card['expires']}")
        attempt = self._attempts[invoice_id] = self._attempts.get(invoice_id, 0) + 1
        fault = self._faults.get(invoice_id, {}).get(attempt)
        if fault == "dropped":
            raise ToolError(TIMEOUT_503)
        payment_id = f"pay_{self._next_payment}"
        self._next_payment += 1
        payment = {"invoice_id": invoice_id, "amount_cents": amount_cents, "method": method,
                   "idempotency_key": idempotency_key, "note": "charged in this session"}
        self.state["payments"][payment_id] = payment
        if fault == "applied":
            raise ToolError(TIMEOUT_503)
        return {"payment_id": payment_id, **payment, "replayed": False}

    @tool("Set a settlement batch's status.",
          {"batch_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "settling", "settled"]}})
    def set_batch_status(self, batch_id: str, status: str):
        batch = self.state["batches"].get(batch_id)
        if batch is None:
            raise ToolError(f"no batch {batch_id!r}")
        batch["status"] = status
        return {"batch_id": batch_id, "status": status}


@dataclass
class SettlementWorld:
    """A settlement batch: the ledger, the gateway's seeded faults and what a correct run charges."""

    today: str
    batch_id: str
    biller: str
    data: dict[str, Any]
    faults: dict[str, dict[int, str]]
    declined: str  # the payment method the issuer declines
    good: str  # the declined customer's valid backup card
    first_payment_number: int
    prepaid: list[str]
    kind_of: dict[str, str]  # owed invoice -> its fault kind
    balance: dict[str, int]  # owed invoice -> cents still due

    @property
    def invoices(self) -> dict[str, dict[str, Any]]:
        """The batch's invoices by id, in batch order."""
        return self.data["invoices"]


SETTLEMENT_CHECKS = (
    Check("no_double_charge", "no invoice collected more than its amount (no duplicate or excess charge)", guard=True),
    Check("all_settled", "every invoice of the batch is paid exactly in full", 2.0),
    Check("batch_settled", "the batch status is 'settled'"),
    Check("answer_total", "the answer states the exact total charged in this session"),
    Check("answer_prepaid", "the answer names exactly the invoices that were already paid in full"))


def invoice_settlement(rng: ItemRng) -> AgTask:
    """Settle a batch of invoices exactly once through a gateway that times out, declines and is not idempotent."""
    world = _settlement_world(rng)
    reference, wasteful = _settlement_scripts(world)
    return AgTask(prompt=_settlement_prompt(world),
                  make_env=lambda: PaymentsEnv(world.data, world.faults, {world.declined}, world.today,
                                               world.first_payment_number),
                  checks=SETTLEMENT_CHECKS, evaluate=lambda env, answer: _check_settlement(world, env, answer),
                  reference=reference, wasteful=wasteful)


def _settlement_world(rng: ItemRng) -> SettlementWorld:
    """Invoices, some paid in full by a crashed earlier run, one with a deposit, and a fault for each owed one."""
    month, day = rng.randint(3, 11), rng.randint(1, 28)
    today = f"2026-{month:02d}-{day:02d}"
    batch_id = f"SB-{month:02d}{day:02d}-{rng.randint(100, 999)}"  # wide enough that no two seeds share a prompt
    biller = rng.choice(BILLERS)
    n_prepaid = rng.choice([1, 1, 2])
    n_owed = 6
    names = rng.sample(COMPANIES, n_prepaid + n_owed)
    invoice_ids = [f"INV-{n}" for n in distinct_ints(rng, 20000, 99999, n_prepaid + n_owed)]
    prior_run = f"run{_hex(rng, 6)}"
    payment_numbers = iter(distinct_ints(rng, 1000, 8999, 3))
    customers, invoices = _billed_customers(rng, invoice_ids, names)
    payments: dict[str, dict[str, Any]] = {}

    order = list(invoice_ids)
    rng.shuffle(order)
    prepaid, owed = order[:n_prepaid], order[n_prepaid:]
    for invoice_id in prepaid:  # paid in full by the settlement run that crashed
        payments[f"pay_{next(payment_numbers)}"] = {
            "invoice_id": invoice_id, "amount_cents": invoices[invoice_id]["amount_cents"],
            "method": customers[invoices[invoice_id]["customer_id"]]["default_method"],
            "idempotency_key": f"{prior_run}-{rng.randint(100, 999)}",
            "note": f"settlement run {prior_run} (interrupted)"}

    # Seeded faults: one card declined (with an expired and a valid card behind it), 1-2 lost replies,
    # one dropped request, maybe one dropped twice; the rest go through.
    kinds = ["declined", "lost_reply", "dropped", rng.choice(["lost_reply", "clean"]),
             rng.choice(["dropped_twice", "clean"]), "clean"]
    rng.shuffle(kinds)
    kind_of = dict(zip(owed, kinds))
    declined_invoice = owed[kinds.index("declined")]
    bad, good = _declined_cards(rng, customers[invoices[declined_invoice]["customer_id"]], month)
    faults = {i: CHARGE_FAULTS[k] for i, k in kind_of.items() if k != "declined"}
    deposit_invoice = rng.choice(owed)
    deposit = invoices[deposit_invoice]["amount_cents"] * rng.randint(20, 50) // 100
    payments[f"pay_{next(payment_numbers)}"] = {
        "invoice_id": deposit_invoice, "amount_cents": deposit,
        "method": customers[invoices[deposit_invoice]["customer_id"]]["default_method"],
        "idempotency_key": None, "note": "deposit"}

    data = {"batches": {batch_id: {"status": "open", "invoice_ids": invoice_ids}}, "customers": customers,
            "invoices": invoices, "payments": payments}
    balance = {i: invoices[i]["amount_cents"] - (deposit if i == deposit_invoice else 0) for i in owed}
    return SettlementWorld(today, batch_id, biller, data, faults, bad, good, 9000 + rng.randint(0, 900), prepaid,
                           kind_of, balance)


def _billed_customers(rng: ItemRng, invoice_ids: list[str], names: list[str]
                      ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """One customer with one or two cards on file per invoice, and the invoices."""
    customers, invoices = {}, {}
    for invoice_id, name in zip(invoice_ids, names):
        customer_id = f"cus_{_hex(rng, 8)}"
        methods = {}
        for _ in range(rng.choice([1, 1, 2])):
            methods[f"pm_{_hex(rng, 10)}"] = {"brand": rng.choice(BRANDS), "last4": f"{rng.randint(0, 9999):04d}",
                                               "expires": f"{2027 + rng.randint(0, 3)}-{rng.randint(1, 12):02d}"}
        customers[customer_id] = {"name": name, "default_method": next(iter(methods)), "methods": methods}
        invoices[invoice_id] = {"customer_id": customer_id, "amount_cents": rng.randint(4_000, 480_000)}
    return customers, invoices


def _declined_cards(rng: ItemRng, customer: dict[str, Any], month: int) -> tuple[str, str]:
    """Give the customer a declined default card with an expired and a valid one behind it; return the declined
    and the valid card's ids."""
    bad, expired, good = (f"pm_{_hex(rng, 10)}" for _ in range(3))
    expired_month = f"2026-{month - rng.randint(1, 2):02d}"  # month >= 3, so this year
    cards = {bad: {"brand": rng.choice(BRANDS), "last4": f"{rng.randint(0, 9999):04d}", "expires": "2028-09"},
             expired: {"brand": rng.choice(BRANDS), "last4": f"{rng.randint(0, 9999):04d}", "expires": expired_month},
             good: {"brand": rng.choice(BRANDS), "last4": f"{rng.randint(0, 9999):04d}",
                    "expires": f"{2027 + rng.randint(0, 2)}-{rng.randint(1, 12):02d}"}}
    backups = [expired, good]
    rng.shuffle(backups)
    customer["methods"] = {bad: cards[bad], **{m: cards[m] for m in backups}}
    customer["default_method"] = bad
    return bad, good


def _settlement_prompt(world: SettlementWorld) -> str:
    """The batch to settle and what the answer must hold."""
    return (
        f"You run accounts receivable at {world.biller}. Today is {world.today}. Settlement batch {world.batch_id} "
        f"holds {len(world.invoices)} invoices that must be collected today through the payments API. Make sure every "
        f"invoice in the batch ends up paid exactly in full: each customer must pay what they owe, never more, "
        f"and nobody may be charged twice. Some invoices may already carry earlier payments. The payment gateway "
        f"is having a bad day, so read every error carefully. If a customer's card fails, use another valid "
        f"payment method they have on file. When every invoice is paid in full, set the batch status to "
        f"'settled'.\n\n"
        f"When you are done, call submit with an answer containing exactly two things: the total amount you "
        f"charged in this session, in dollars and cents (e.g. $1,234.56), and the id(s) of the invoice(s) that "
        f"were already paid in full before you started and so needed no charge. Mention no other invoice id.")


def _check_settlement(world: SettlementWorld, env: PaymentsEnv, answer: str | None) -> dict[str, bool]:
    """The settlement checks on the recorded payments, the batch and the answer."""
    invoices, prior_payments = world.invoices, world.data["payments"]
    total_cents = sum(world.balance.values())
    collected = {i: 0 for i in invoices}
    for payment in env.state["payments"].values():
        collected[payment["invoice_id"]] += payment["amount_cents"]
    new_total = sum(p["amount_cents"] for pid, p in env.state["payments"].items() if pid not in prior_payments)
    text = answer or ""
    named = {f"INV-{n}" for n in re.findall(r"\bINV-(\d{5})\b", text, flags=re.IGNORECASE)}
    return {
        "no_double_charge": all(collected[i] <= invoices[i]["amount_cents"] for i in invoices),
        "all_settled": all(collected[i] == invoices[i]["amount_cents"] for i in invoices),
        "batch_settled": env.state["batches"][world.batch_id]["status"] == "settled",
        "answer_total": new_total == total_cents and Decimal(total_cents) / 100 in money_values(text),
        "answer_prepaid": named & set(invoices) == set(world.prepaid),
    }


def _settlement_scripts(world: SettlementWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls (a charge retried with its key after a timeout, the backup card after a decline),
    and a wasteful one with repeated reads and a status set twice."""
    batch_id = world.batch_id
    reference: list[Call] = [Call("list_invoices", {"batch_id": batch_id})]
    wasteful: list[Call] = [reference[0], reference[0],  # the batch read twice, then a status set twice
                            Call("set_batch_status", {"batch_id": batch_id, "status": "settling"})]
    for invoice_id in world.invoices:  # the order list_invoices shows
        if invoice_id not in world.balance:
            continue
        args = {"invoice_id": invoice_id, "amount_cents": world.balance[invoice_id],
                "idempotency_key": f"{batch_id}-{invoice_id}"}
        kind = world.kind_of[invoice_id]
        if kind == "declined":
            steps = [Call("charge", args),
                     Call("get_customer", {"customer_id": world.invoices[invoice_id]["customer_id"]}),
                     Call("charge", {**args, "payment_method": world.good})]
            wasteful += steps[:2] + steps[1:2] + steps[2:]  # the customer read twice
        else:
            steps = [Call("charge", args)] * (1 + len(CHARGE_FAULTS[kind]))  # retry with the same key
            wasteful += steps
        reference += steps
    answer = (f"Charged {dollars(sum(world.balance.values()))} in this session; already paid in full before: "
              f"{', '.join(sorted(world.prepaid))}.")
    closing = [Call("set_batch_status", {"batch_id": batch_id, "status": "settled"}),
               Call("submit", {"answer": answer})]
    return tuple(reference + closing), tuple(wasteful + closing)


# ---------------------------------------------------------------------------------------------------------------
# Task 2: post a cycle count against a lagging replica, a rate limit and a timeout.

WAREHOUSES = ["Dock 4, Reno DC", "Aisle C, Tilbury", "Mezzanine, Columbus West", "Bay 12, Rotterdam South",
              "Cold room, Fresno", "Zone B, Leipzig Hub", "Racking 7, Joliet", "Pick face 3, Swindon"]
PRODUCTS = ["hex bolt M8x40", "wing nut M6", "cable tie 200 mm", "zip bag 10x15", "LED strip 5 m",
            "hose clamp 32 mm", "wood screw 4x30", "rubber grommet 12 mm", "fuse 10 A", "duct tape 50 m",
            "shelf bracket 200 mm", "door hinge 75 mm", "padlock 40 mm", "extension lead 4-way",
            "safety gloves L", "spirit level 600 mm", "drill bit 6 mm", "masking tape 25 mm",
            "carabiner 8 cm", "hook rail 5-hook", "caster wheel 50 mm", "terminal block 12-way",
            "silicone sealant clear", "sanding disc P120"]
PREFIXES = ["FST", "ELC", "HWD", "TLS", "PKG", "SFT", "PLB", "ADH"]


class InventoryEnv(Environment):
    """A stock ledger: a primary that is always right and a reporting replica frozen minutes behind it."""

    def __init__(self, data: dict[str, Any], replica: dict[str, int], applied_timeouts: set[str],
                 dropped_timeouts: set[str], throttle_call: int, retry_after: int):
        super().__init__()
        self.state = copy.deepcopy(data)
        self._replica = dict(replica)
        self._timeouts = {sku: "applied" for sku in applied_timeouts} | {sku: "dropped" for sku in dropped_timeouts}
        self._throttle_call, self._retry_after = throttle_call, retry_after
        self._clock = 0
        self._blocked_until = 0
        self._calls = 0  # adjust_stock calls that passed validation
        self._attempts: dict[str, int] = {}
        self._next_movement = 1

    def _sku(self, sku: str) -> dict[str, Any]:
        record = self.state["stock"].get(sku)
        if record is None:
            raise ToolError(f"no SKU {sku!r}")
        return record

    @tool("List every SKU with its name and on-hand quantity, read from the reporting replica. The replica is "
          "eventually consistent and currently running several minutes behind the primary: it may not show recent "
          "movements, including your own adjustments.")
    def list_stock(self):
        return {"read_from": "replica", "stock": [{"sku": sku, "name": r["name"], "on_hand": self._replica[sku]}
                                                  for sku, r in self.state["stock"].items()]}

    @tool("Read one SKU's on-hand quantity. By default (consistent=false) it reads the reporting replica, which is "
          "eventually consistent and currently several minutes behind (it may not show recent movements, including "
          "your own adjustments). consistent=true reads the primary ledger, which is always current.",
          {"sku": {"type": "string"}, "consistent": {"type": "boolean"}}, required=["sku"])
    def get_stock(self, sku: str, consistent: bool = False):
        record = self._sku(sku)
        on_hand = record["on_hand"] if consistent else self._replica[sku]
        return {"sku": sku, "name": record["name"], "on_hand": on_hand,
                "read_from": "primary" if consistent else "replica"}

    @tool("Post a stock adjustment to the primary ledger: add delta (a non-zero integer, negative to remove units) "
          "to a SKU's on-hand quantity (the ledger allows negative stock), referencing the cycle count it comes "
          "from. Adjustments are relative and not idempotent: posting the same adjustment twice moves stock "
          "twice. Returns the movement and the new "
          "on-hand quantity. Errors: '429 too many requests ... retry after N s' means the request was rejected "
          "and nothing was applied; further calls are rejected until N seconds have passed (see wait). "
          "'504 gateway timeout' means no reply came back: the adjustment may or may not have been applied.",
          {"sku": {"type": "string"}, "delta": {"type": "integer"}, "count_id": {"type": "string"}})
    def adjust_stock(self, sku: str, delta: int, count_id: str):
        record = self._sku(sku)
        if count_id not in self.state["counts"]:
            raise ToolError(f"no cycle count {count_id!r}")
        if delta == 0 or abs(delta) > MAX_ADJUST_UNITS:
            raise ToolError(f"delta must be a non-zero integer between -{MAX_ADJUST_UNITS} and {MAX_ADJUST_UNITS}")
        self._calls += 1
        if self._clock < self._blocked_until:
            raise ToolError(f"429 too many requests: retry after {self._blocked_until - self._clock} s "
                            "(nothing was applied)")
        if self._calls == self._throttle_call:
            self._blocked_until = self._clock + self._retry_after
            raise ToolError(f"429 too many requests: retry after {self._retry_after} s (nothing was applied)")
        attempt = self._attempts[sku] = self._attempts.get(sku, 0) + 1
        fault = self._timeouts.get(sku) if attempt == 1 else None
        if fault == "dropped":
            raise ToolError(TIMEOUT_504)
        movement_id = f"MV-{self._next_movement:03d}"
        self._next_movement += 1
        record["on_hand"] += delta
        self.state["movements"][movement_id] = {"sku": sku, "delta": delta, "count_id": count_id}
        if fault == "applied":
            raise ToolError(TIMEOUT_504)
        return {"movement_id": movement_id, "sku": sku, "delta": delta, "count_id": count_id,
                "on_hand_after": record["on_hand"]}

    @tool(f"Wait the given number of seconds (1-{MAX_WAIT_S}) before your next call, e.g. to honour a "
          "rate limit's retry-after.", {"seconds": {"type": "integer"}})
    def wait(self, seconds: int):
        if not 1 <= seconds <= MAX_WAIT_S:
            raise ToolError(f"seconds must be between 1 and {MAX_WAIT_S}")
        self._clock += seconds
        return {"waited_s": seconds}

    @tool("Set a cycle count's status.",
          {"count_id": {"type": "string"},
           "status": {"type": "string", "enum": ["open", "in_progress", "reconciled"]}})
    def set_count_status(self, count_id: str, status: str):
        count = self.state["counts"].get(count_id)
        if count is None:
            raise ToolError(f"no cycle count {count_id!r}")
        count["status"] = status
        return {"count_id": count_id, "status": status}


def _count_lines(rng: ItemRng, kinds: list[str]) -> list[tuple[int, int, int]]:
    """(primary, replica, counted) per counted SKU; the replica misses a recent movement on the stale kinds."""
    lines = []
    for kind in kinds:
        primary = rng.randint(30, 400)
        recent = rng.choice([-1, 1]) * rng.randint(4, 40) if kind in "bcd" else 0  # goods-in or a pick
        replica = max(0, primary - recent)
        off = rng.choice([-1, 1]) * rng.randint(1, 11)
        while kind in "ab" and (primary + off < 0 or primary + off == replica):
            off = rng.choice([-1, 1]) * rng.randint(1, 11)
        counted = {"a": primary + off, "b": primary + off, "c": primary, "d": replica, "e": primary}[kind]
        lines.append((primary, replica, counted))
    return lines


@dataclass
class ReconcileWorld:
    """A cycle count against the ledger, and the seeded timeouts and rate limit its adjustments run into."""

    count_id: str
    warehouse: str
    data: dict[str, Any]
    replica: dict[str, int]
    counted: dict[str, int]  # counted SKU -> counted quantity, in count-sheet order
    delta: dict[str, int]  # counted SKU -> the adjustment it needs
    plan: list[tuple[str, str]]  # (sku, outcome) per adjust_stock call of the reference
    applied: str  # times out after applying
    dropped: str | None  # times out before applying
    throttled: int  # index in `plan` of the call the rate limit rejects
    retry_after: int

    @property
    def net(self) -> int:
        """The signed net change the adjustments make."""
        return sum(self.delta.values())


RECONCILE_CHECKS = (
    Check("one_adjustment_per_sku", "no SKU adjusted more than once and no SKU off the count adjusted", guard=True),
    Check("quantities_match", "every counted SKU's on-hand equals its counted quantity", 2.0),
    Check("count_reconciled", "the cycle count's status is 'reconciled'"),
    Check("answer_net", "the answer states the signed net change of the adjustments"))


def stock_reconcile(rng: ItemRng) -> AgTask:
    """Post a cycle count exactly once per SKU against a stale replica, a rate limit and an ambiguous timeout."""
    world = _reconcile_world(rng)
    reference, wasteful = _reconcile_scripts(world)
    return AgTask(prompt=_reconcile_prompt(world),
                  make_env=lambda: InventoryEnv(world.data, world.replica, {world.applied}, {world.dropped} - {None},
                                                world.throttled + 1, world.retry_after),
                  checks=RECONCILE_CHECKS, evaluate=lambda env, answer: _check_reconcile(world, env, answer),
                  reference=reference, wasteful=wasteful)


def _reconcile_world(rng: ItemRng) -> ReconcileWorld:
    """The count sheet, the primary and replica ledgers, and the faults the adjustments meet."""
    warehouse = rng.choice(WAREHOUSES)
    count_id = f"CC-{rng.randint(1000, 9999)}"
    # a: plain adjustment; b: stale replica and a different delta; c: stale replica, no adjustment needed;
    # d: stale replica already showing the count, adjustment needed; e: nothing to do.
    kinds = ["a", "a", "b", "d", "c", rng.choice(["a", "e"])]
    rng.shuffle(kinds)
    while True:
        lines = _count_lines(rng, kinds)
        net = sum(counted - primary for primary, _, counted in lines)
        if net != 0:
            break
    n_other = rng.randint(3, 5)
    names = rng.sample(PRODUCTS, len(kinds) + n_other)
    skus = [f"{rng.choice(PREFIXES)}-{n}" for n in distinct_ints(rng, 1000, 9999, len(kinds) + n_other)]
    counted_skus = skus[:len(kinds)]
    stock, replica = {}, {}
    for index, (sku, name) in enumerate(zip(skus, names)):
        if index < len(kinds):
            primary, stale, _ = lines[index]
        else:
            primary = rng.randint(0, 400)
            stale = max(0, primary - rng.choice([0, 0, rng.randint(-20, 20)]))
        stock[sku], replica[sku] = {"name": name, "on_hand": primary}, stale
    order = list(stock)
    rng.shuffle(order)  # the listing order is not the count sheet's order
    stock = {sku: stock[sku] for sku in order}
    counted = {sku: lines[i][2] for i, sku in enumerate(counted_skus)}
    delta = {sku: counted[sku] - lines[i][0] for i, sku in enumerate(counted_skus)}
    applied, dropped, plan = _adjustment_faults(rng, dict(zip(counted_skus, kinds)), delta)
    clean_calls = [i for i, (sku, outcome) in enumerate(plan) if outcome == "ok" and sku != dropped]
    throttled = rng.choice(clean_calls)
    data = {"stock": stock, "movements": {},
            "counts": {count_id: {"warehouse": warehouse, "status": "open", "lines": dict(counted)}}}
    return ReconcileWorld(count_id, warehouse, data, replica, counted, delta, plan, applied, dropped, throttled,
                          rng.randint(2, 9))


def _adjustment_faults(rng: ItemRng, kind_of: dict[str, str], delta: dict[str, int]
                       ) -> tuple[str, str | None, list[tuple[str, str]]]:
    """One adjustment times out after applying, on a SKU whose replica value differs from the count (so checking
    the replica always misleads); maybe one times out before applying (never the first, so re-reading it follows
    a state change); returns both and the reference's (sku, outcome) per adjust_stock call."""
    adjusting = [sku for sku in kind_of if delta[sku] != 0]
    applied = rng.choice([sku for sku in adjusting if kind_of[sku] in "ab"])
    dropped = rng.choice([None] + [s for s in adjusting[1:] if s != applied])
    plan: list[tuple[str, str]] = []
    for sku in adjusting:
        plan.append((sku, "applied" if sku == applied else "dropped" if sku == dropped else "ok"))
        if sku == dropped:
            plan.append((sku, "ok"))
    return applied, dropped, plan


def _reconcile_prompt(world: ReconcileWorld) -> str:
    """The count sheet and the audit rules."""
    stock, count_id = world.data["stock"], world.count_id
    sheet = "\n".join(f"- {sku} ({stock[sku]['name']}): counted {n}" for sku, n in world.counted.items())
    return (
        f"You are posting cycle count {count_id} for {world.warehouse}. The physical count found:\n{sheet}\n\n"
        f"Post stock adjustments (adjust_stock, referencing {count_id}) so that the system on-hand quantity of "
        f"every counted SKU equals its counted quantity. Audit rules: each SKU gets at most one cycle-count "
        f"adjustment (no corrections, no split or repeated adjustments; a SKU that already matches gets none), "
        f"and SKUs not on this count must not be touched. Receiving and picking were posting movements until "
        f"a few minutes ago, and the inventory service is under load. When every counted SKU matches, set the "
        f"count's status to 'reconciled'.\n\n"
        f"When you are done, call submit with the net change in units made by your adjustments (the sum of their "
        f"deltas) as a signed integer, e.g. -4 or +9.")


def _check_reconcile(world: ReconcileWorld, env: InventoryEnv, answer: str | None) -> dict[str, bool]:
    """The reconciliation checks on the movements, the stock and the answer."""
    counted = world.counted
    moved: dict[str, int] = {}
    for movement in env.state["movements"].values():
        moved[movement["sku"]] = moved.get(movement["sku"], 0) + 1
    return {
        "one_adjustment_per_sku": all(n == 1 for n in moved.values()) and set(moved) <= set(counted),
        "quantities_match": all(env.state["stock"][s]["on_hand"] == counted[s] for s in counted),
        "count_reconciled": env.state["counts"][world.count_id]["status"] == "reconciled",
        "answer_net": world.net in signed_integers(answer or ""),
    }


def _reconcile_scripts(world: ReconcileWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls (waiting out the rate limit, checking the primary after a timeout), and a
    wasteful one that sets a needless status and rereads."""
    count_id = world.count_id
    reads = [Call("get_stock", {"sku": sku, "consistent": True}) for sku in world.counted]
    reference: list[Call] = list(reads)
    for index, (sku, outcome) in enumerate(world.plan):
        adjust = Call("adjust_stock", {"sku": sku, "delta": world.delta[sku], "count_id": count_id})
        if index == world.throttled:
            reference += [adjust, Call("wait", {"seconds": world.retry_after})]
        reference.append(adjust)
        if outcome in ("applied", "dropped"):  # no reply: check the primary before deciding to retry
            reference.append(Call("get_stock", {"sku": sku, "consistent": True}))
    closing = [Call("set_count_status", {"count_id": count_id, "status": "reconciled"}),
               Call("submit", {"answer": f"Net change: {world.net:+d} units"})]
    wasteful = ([Call("set_count_status", {"count_id": count_id, "status": "in_progress"})] + reads + reads[:2]
                + reference[len(reads):])
    return tuple(reference + closing), tuple(wasteful + closing)
