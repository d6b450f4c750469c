"""Fault recovery (ESAC-AG 2.0): finish jobs through services that fail in seeded, deterministic ways whose causes
show only in error details, status endpoints and ledgers (a crashed run's captured but unposted charges, a stale
idempotency key replaying an old decline, a rate window, a timeout that did apply, a batch that stopped half way),
so the agent must find and reconcile effects rather than retry blindly."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from esac_kit.ag.answers import distinct_ints, dollars, mentions, money_values, signed_integers
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

MAX_CHARGE_CENTS = 10_000_000
MAX_WAIT_S = 60
PAGE = 5


def _hex(rng: ItemRng, n: int) -> str:
    """n random characters of a payment-system id."""
    return "".join(rng.choice("0123456789abcdefghjkmnpqrstvwxyz") for _ in range(n))


def _paged(rows: list[Any], page: int, size: int = PAGE) -> dict[str, Any]:
    """One page of a listing (pages count from 1)."""
    pages = max(1, -(-len(rows) // size))
    if not 1 <= page <= pages:
        raise ToolError(f"page must be between 1 and {pages}")
    return {"page": page, "pages": pages, "rows": rows[(page - 1) * size:page * size]}


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------------------------------------------------------
# Task 1: settle an invoice batch after a crashed settlement run.

COMPANIES = ["Harbor Lane Bakery", "Quill & Compass Books", "Northfield Dental", "Blue Heron Kayaks",
             "Copperline Electric", "Maple Row Florists", "Tidewater Marine Supply", "Granite Peak Outfitters",
             "Old Mill Coffee", "Silverleaf Yoga", "Redwood Framing Co", "Lantern Street Cinema",
             "Brightwater Laundry", "Foxglove Veterinary", "Ironbridge Fitness", "Cedar Hollow Farms",
             "Saltmarsh Seafood", "Kestrel Print Shop", "Juniper Pediatrics", "Windmill Auto Repair",
             "Orchard Gate Winery", "Pinecrest Daycare", "Riverbend Hardware", "Starling Design Studio"]
BILLERS = ["Ledgerwise Accounting", "Cloudnest Hosting", "Brightpath Payroll", "Stackyard Logistics",
           "Meridian Office Supply", "Tallgrass Security"]
BRANDS = ["visa", "mastercard", "amex", "discover"]
N_INVOICES = 14
QUOTA = 4  # charge requests the gateway serves per window
WINDOW_S = 60

SETTLEMENT_DOCS = {
    "settlement": (
        "Settlement runbook. Charge each open invoice's balance (amount minus credit notes minus payments already "
        "posted) to the customer's default payment method, with idempotency_key '<batch_id>:<invoice_id>'. To "
        "make a new attempt for an invoice whose key already holds a final outcome, use '<batch_id>:<invoice_id>:rN' "
        "with N = 2, 3, ... A successful charge posts its payment to the ledger in the same call. Every captured "
        "transaction must be posted to the ledger exactly once (record_payment posts one that is not). An invoice is "
        "left open only when the processor declines a request made in this run; an outcome replayed from an "
        "earlier request is not such a decline. A batch is 'settled' when every invoice is paid, otherwise "
        "'needs_attention'. Settlement jobs log their runs "
        "(get_job)."),
    "gateway": (
        "Payment gateway. An idempotency key is remembered for 24 hours with the outcome of its first request, "
        "success or decline. A request with a remembered key is not processed again: the gateway replays the "
        "stored outcome (replayed: true) and performs no side effect, so nothing is charged and nothing is posted "
        "to the ledger. The same key with a different invoice or amount is refused (409). '402 card_declined' with "
        "replayed false means the processor declined this request. '504 gateway timeout' means the processor's "
        "answer was lost: the charge may have been captured. The gateway serves {quota} charge requests per "
        "{window}-second window; further requests in the window are not processed. gateway_status shows the clock "
        "and the window; search_transactions lists transactions."),
    "ledger": (
        "Ledger. get_invoice shows an invoice's amount, credit notes, posted payments (each with the transaction "
        "that took the money) and balance_cents; list_invoices shows only amounts and status. record_payment posts "
        "a captured transaction of the invoice that is not yet posted."),
}


class PaymentsEnv(Environment):
    """An invoice ledger, a payment gateway with idempotency keys and a rate window, and a settlement job log.

    Everything the gateway remembers is in `state`, inserted and never rewritten: transactions (with their keys),
    its request log (for the rate window) and the waits (the clock)."""

    def __init__(self, world: "SettlementWorld"):
        super().__init__()
        self.state = copy.deepcopy(world.data)
        self._lost_reply = world.lost_reply  # the invoice whose first charge in this session loses its reply
        self._declines = world.declines  # the invoice whose card the processor declines
        self._start = world.start
        self._next = {"txn": world.first_txn, "pay": world.first_payment}

    def _clock(self) -> int:
        return sum(self.state["waits"].values())

    def _now(self) -> str:
        return _stamp(self._start + timedelta(seconds=self._clock()))

    def _used(self) -> int:
        window = self._clock() // WINDOW_S
        return sum(1 for t in self.state["gateway_log"].values() if t // WINDOW_S == window)

    def _invoice(self, invoice_id: str) -> dict[str, Any]:
        invoice = self.state["invoices"].get(invoice_id.strip().upper())
        if invoice is None:
            raise ToolError(f"no invoice {invoice_id!r}")
        return invoice

    def _view(self, invoice: dict[str, Any]) -> dict[str, Any]:
        payments = [{"payment_id": pid, **{k: p[k] for k in ("amount_cents", "transaction_id", "posted_at")}}
                    for pid, p in self.state["payments"].items() if p["invoice_id"] == invoice["invoice_id"]]
        credits = sum(c["amount_cents"] for c in invoice["credit_notes"])
        customer = self.state["customers"][invoice["customer_id"]]
        return {**copy.deepcopy(invoice), "customer_name": customer["name"], "payments": payments,
                "balance_cents": invoice["amount_cents"] - credits - sum(p["amount_cents"] for p in payments)}

    def _post(self, invoice_id: str, txn_id: str) -> str:
        payment_id = f"pay_{self._next['pay']}"
        self._next["pay"] += 1
        self.state["payments"][payment_id] = {"invoice_id": invoice_id, "transaction_id": txn_id,
                                              "amount_cents": self.state["transactions"][txn_id]["amount_cents"],
                                              "posted_at": self._now()}
        return payment_id

    @tool("Documentation. Topics: 'settlement' (the runbook), 'gateway' (keys, errors, rate window), 'ledger'.",
          {"topic": {"type": "string", "enum": list(SETTLEMENT_DOCS)}})
    def describe_api(self, topic: str) -> Any:
        return {"topic": topic, "text": SETTLEMENT_DOCS[topic].format(quota=QUOTA, window=WINDOW_S)}

    @tool("Settlement: one batch: status, invoice count and its last settlement job.", {"batch_id": {"type": "string"}})
    def get_batch(self, batch_id: str) -> Any:
        batch = self.state["batches"].get(batch_id.strip().upper())
        if batch is None:
            raise ToolError(f"no batch {batch_id!r}")
        return {k: v for k, v in batch.items() if k != "invoice_ids"} | {"invoice_count": len(batch["invoice_ids"])}

    @tool("Settlement: one job run's log entry.", {"job_id": {"type": "string"}})
    def get_job(self, job_id: str) -> Any:
        job = self.state["jobs"].get(job_id.strip().upper())
        if job is None:
            raise ToolError(f"no job {job_id!r}")
        return copy.deepcopy(job)

    @tool("Ledger: one page of a batch's invoices.", {"batch_id": {"type": "string"}, "page": {"type": "integer"}})
    def list_invoices(self, batch_id: str, page: int) -> Any:
        batch = self.state["batches"].get(batch_id.strip().upper())
        if batch is None:
            raise ToolError(f"no batch {batch_id!r}")
        rows = []
        for invoice_id in batch["invoice_ids"]:
            view = self._view(self.state["invoices"][invoice_id])
            rows.append({"invoice_id": invoice_id, "customer_name": view["customer_name"],
                         "amount_cents": view["amount_cents"], "status": "paid" if view["balance_cents"] <= 0
                         else "open"})
        listing = _paged(rows, page)
        return {"page": listing["page"], "pages": listing["pages"], "invoices": listing["rows"]}

    @tool("Ledger: one invoice in full.", {"invoice_id": {"type": "string"}})
    def get_invoice(self, invoice_id: str) -> Any:
        return self._view(self._invoice(invoice_id))

    @tool("Customers: one customer and their default payment method.", {"customer_id": {"type": "string"}})
    def get_customer(self, customer_id: str) -> Any:
        customer = self.state["customers"].get(customer_id.strip())
        if customer is None:
            raise ToolError(f"no customer {customer_id!r}")
        return {"customer_id": customer_id.strip(), **copy.deepcopy(customer)}

    @tool("Gateway: one page of transactions, filtered by batch or invoice (give one).",
          {"batch_id": {"type": "string"}, "invoice_id": {"type": "string"}, "page": {"type": "integer"}},
          required=["page"])
    def search_transactions(self, page: int, batch_id: str | None = None, invoice_id: str | None = None) -> Any:
        if (batch_id is None) == (invoice_id is None):
            raise ToolError("give exactly one of batch_id and invoice_id")
        key, wanted = ("batch_id", batch_id) if batch_id is not None else ("invoice_id", invoice_id)
        rows = [{"transaction_id": t, **txn} for t, txn in self.state["transactions"].items()
                if txn[key] == wanted.strip().upper()]
        listing = _paged(rows, page)
        return {"page": listing["page"], "pages": listing["pages"], "transactions": listing["rows"]}

    @tool("Gateway: the clock, the rate window and whether requests are being served.")
    def gateway_status(self) -> Any:
        used = self._used()
        return {"now": self._now(), "window_s": WINDOW_S, "requests_per_window": QUOTA, "used_in_window": used,
                "resets_in_s": WINDOW_S - self._clock() % WINDOW_S, "serving": used < QUOTA}

    @tool(f"Wait 1-{MAX_WAIT_S} seconds.", {"seconds": {"type": "integer"}})
    def wait(self, seconds: int) -> Any:
        if not 1 <= seconds <= MAX_WAIT_S:
            raise ToolError(f"seconds must be between 1 and {MAX_WAIT_S}")
        self.state["waits"][str(len(self.state["waits"]) + 1)] = seconds
        return {"waited_s": seconds, "now": self._now()}

    @tool("Gateway: charge an invoice's customer on their default payment method (see describe_api 'gateway').",
          {"invoice_id": {"type": "string"}, "amount_cents": {"type": "integer"},
           "idempotency_key": {"type": "string"}})
    def charge(self, invoice_id: str, amount_cents: int, idempotency_key: str) -> Any:
        invoice = self._invoice(invoice_id)
        key = idempotency_key.strip()
        if not 1 <= amount_cents <= MAX_CHARGE_CENTS:
            raise ToolError(f"amount_cents must be between 1 and {MAX_CHARGE_CENTS}")
        if not 1 <= len(key) <= 80:
            raise ToolError("idempotency_key must be 1-80 characters")
        if self._used() >= QUOTA:
            raise ToolError("503 service unavailable: request not processed")
        self.state["gateway_log"][str(len(self.state["gateway_log"]) + 1)] = self._clock()
        iid = invoice["invoice_id"]
        stored = next(((t, x) for t, x in self.state["transactions"].items() if x["idempotency_key"] == key), None)
        if stored is not None:
            txn_id, txn = stored
            if txn["invoice_id"] != iid or txn["amount_cents"] != amount_cents:
                raise ToolError(f"409 idempotency key {key!r} was first used for {txn['invoice_id']}, "
                                f"{txn['amount_cents']} cents")
            if txn["status"] == "declined":
                raise ToolError(f"402 card_declined {{\"transaction_id\": \"{txn_id}\", \"replayed\": true, "
                                f"\"original_request_at\": \"{txn['created_at']}\"}}")
            return {"transaction_id": txn_id, **txn, "replayed": True, "ledger_payment_id": None}
        customer = self.state["customers"][invoice["customer_id"]]
        txn_id = f"ch_{self._next['txn']}"
        self._next["txn"] += 1
        earlier = any(x["invoice_id"] == iid and x["created_at"] >= _stamp(self._start)
                      for x in self.state["transactions"].values())
        declined = iid == self._declines
        self.state["transactions"][txn_id] = {
            "invoice_id": iid, "batch_id": invoice["batch_id"], "amount_cents": amount_cents,
            "method_id": customer["default_method"]["method_id"], "status": "declined" if declined else "captured",
            "idempotency_key": key, "created_at": self._now()}
        if declined:
            raise ToolError(f"402 card_declined {{\"transaction_id\": \"{txn_id}\", \"replayed\": false, "
                            "\"decline_code\": \"insufficient_funds\"}")
        if iid == self._lost_reply and not earlier:
            raise ToolError("504 gateway timeout: no answer from the processor")
        payment_id = self._post(iid, txn_id)
        return {"transaction_id": txn_id, **self.state["transactions"][txn_id], "replayed": False,
                "ledger_payment_id": payment_id}

    @tool("Ledger: post a captured gateway transaction of an invoice that is not yet posted.",
          {"invoice_id": {"type": "string"}, "transaction_id": {"type": "string"}})
    def record_payment(self, invoice_id: str, transaction_id: str) -> Any:
        invoice = self._invoice(invoice_id)
        txn = self.state["transactions"].get(transaction_id.strip())
        if txn is None or txn["invoice_id"] != invoice["invoice_id"]:
            raise ToolError(f"no transaction {transaction_id!r} for {invoice['invoice_id']}")
        if txn["status"] != "captured":
            raise ToolError(f"transaction {transaction_id.strip()} is {txn['status']}, not captured")
        if any(p["transaction_id"] == transaction_id.strip() for p in self.state["payments"].values()):
            raise ToolError(f"transaction {transaction_id.strip()} is already posted")
        payment_id = self._post(invoice["invoice_id"], transaction_id.strip())
        return {"payment_id": payment_id, **self.state["payments"][payment_id]}

    @tool("Settlement: set a batch's status.",
          {"batch_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "settled", "needs_attention"]}})
    def set_batch_status(self, batch_id: str, status: str) -> Any:
        batch = self.state["batches"].get(batch_id.strip().upper())
        if batch is None:
            raise ToolError(f"no batch {batch_id!r}")
        batch["status"] = status
        return {"batch_id": batch["batch_id"], "status": status}


@dataclass
class SettlementWorld:
    """A batch after a crashed run: the ledger, the gateway's memory, the seeded faults and what is owed."""

    today: str
    start: datetime
    batch_id: str
    job_id: str
    biller: str
    data: dict[str, Any]
    kinds: dict[str, str]  # invoice -> posted | unposted | stale | declined | lost_reply | credit | clean
    owed: dict[str, int]  # invoice -> what it may collect in all (amount minus credit notes)
    lost_reply: str
    declines: str
    first_txn: int
    first_payment: int


SETTLEMENT_CHECKS = (
    Check("no_double_charge", "No invoice's captured transactions exceed what it owes.", guard=True),
    Check("settled", "Every invoice but the declined one is paid exactly in full, each captured transaction posted "
                     "to the ledger exactly once.", 2.0),
    Check("declined_open", "The invoice whose card the processor declines was attempted and is left open, uncharged."),
    Check("batch_status", "The batch status is 'needs_attention'."),
    Check("answer_total", "The answer states the total newly charged in this session."),
    Check("answer_open", "The answer names the invoice left open and no other invoice."),
)


def invoice_settlement(rng: ItemRng) -> AgTask:
    """Finish a crashed settlement run through a gateway with idempotency replays, a rate window and lost replies."""
    world = _settlement_world(rng)
    reference = _settlement_reference(world)
    return AgTask(prompt=_settlement_prompt(world), make_env=lambda: PaymentsEnv(world), checks=SETTLEMENT_CHECKS,
                  evaluate=lambda env, answer: _check_settlement(world, env, answer), reference=reference,
                  wasteful=_settlement_wasteful(world, reference))


def _settlement_world(rng: ItemRng) -> SettlementWorld:
    """Fourteen invoices; the first five or six were processed by a run that crashed, the rest carry the faults."""
    month, day = rng.randint(3, 11), rng.randint(2, 28)
    today = f"2026-{month:02d}-{day:02d}"
    start = datetime(2026, month, day, 9, rng.randint(0, 40), rng.randint(0, 59))
    batch_id = f"SB-{month:02d}{day:02d}-{rng.randint(100, 999)}"
    job_id = f"JOB-{rng.randint(10000, 99999)}"
    names = rng.sample(COMPANIES, N_INVOICES)
    invoice_ids = [f"INV-{n}" for n in distinct_ints(rng, 20000, 99999, N_INVOICES)]
    processed = rng.randint(5, 6)
    done = ["posted"] * rng.randint(1, 2) + ["stale"]
    done += ["unposted"] * (processed - len(done))
    rest = ["declined", "lost_reply", "credit"] + ["clean"] * (N_INVOICES - processed - 3)
    rng.shuffle(done)
    rng.shuffle(rest)
    kinds = dict(zip(invoice_ids, done + rest))
    customers, invoices, transactions, payments = {}, {}, {}, {}
    night = datetime(2026, month, day, 2, rng.randint(0, 20), rng.randint(0, 59))
    txn_numbers = iter(distinct_ints(rng, 100000, 499999, processed))
    for n, (invoice_id, name) in enumerate(zip(invoice_ids, names)):
        customer_id = f"cus_{_hex(rng, 8)}"
        kind = kinds[invoice_id]
        updated = night + timedelta(hours=5, minutes=rng.randint(0, 50)) if kind == "stale" else \
            datetime(2025, rng.randint(1, 12), rng.randint(1, 28), rng.randint(0, 23), rng.randint(0, 59))
        customers[customer_id] = {"name": name, "default_method": {
            "method_id": f"pm_{_hex(rng, 10)}", "brand": rng.choice(BRANDS), "last4": f"{rng.randint(0, 9999):04d}",
            "updated_at": _stamp(updated)}}
        amount = rng.randint(40, 4800) * 100 + rng.randint(0, 99)
        credits = [{"credit_id": f"CN-{rng.randint(1000, 9999)}", "amount_cents": amount * rng.randint(10, 40) // 100}] \
            if kind == "credit" else []
        invoices[invoice_id] = {"invoice_id": invoice_id, "batch_id": batch_id, "customer_id": customer_id,
                                "amount_cents": amount, "credit_notes": credits}
        if n < processed:
            at = night + timedelta(seconds=40 * n + rng.randint(0, 20))
            txn_id = f"ch_{next(txn_numbers)}"
            transactions[txn_id] = {
                "invoice_id": invoice_id, "batch_id": batch_id, "amount_cents": amount,
                "method_id": customers[customer_id]["default_method"]["method_id"] if kind != "stale" else
                f"pm_{_hex(rng, 10)}", "status": "declined" if kind == "stale" else "captured",
                "idempotency_key": f"{batch_id}:{invoice_id}", "created_at": _stamp(at)}
            if kind == "posted":
                payments[f"pay_{rng.randint(1000, 4999)}"] = {"invoice_id": invoice_id, "transaction_id": txn_id,
                                                             "amount_cents": amount,
                                                             "posted_at": _stamp(at + timedelta(seconds=2))}
    ended = night + timedelta(seconds=40 * processed + 30)
    jobs = {job_id: {"job_id": job_id, "batch_id": batch_id, "status": "failed", "started_at": _stamp(night),
                     "ended_at": _stamp(ended), "invoices_processed": f"{processed} of {N_INVOICES}",
                     "error": "ledger service timeout while posting payments; job aborted"}}
    data = {"batches": {batch_id: {"batch_id": batch_id, "status": "open", "last_job": job_id,
                                   "invoice_ids": invoice_ids}},
            "jobs": jobs, "customers": customers, "invoices": invoices, "transactions": transactions,
            "payments": payments, "gateway_log": {}, "waits": {}}
    owed = {i: v["amount_cents"] - sum(c["amount_cents"] for c in v["credit_notes"]) for i, v in invoices.items()}
    lost = next(i for i, k in kinds.items() if k == "lost_reply")
    declines = next(i for i, k in kinds.items() if k == "declined")
    return SettlementWorld(today, start, batch_id, job_id, rng.choice(BILLERS), data, kinds, owed, lost, declines,
                           rng.randint(500000, 899999), rng.randint(5000, 8999))


def _settlement_prompt(world: SettlementWorld) -> str:
    return (
        f"You run accounts receivable at {world.biller}. Today is {world.today}. Settlement batch {world.batch_id} "
        "was to be collected overnight, but the batch is still open. Settle it now through the ledger and payment "
        "gateway tools, following the settlement runbook (describe_api). Every invoice must end paid exactly in "
        "full, every payment recorded in the ledger against the gateway transaction that took the money, and no "
        "customer may be charged more than they owe. If the processor declines a customer's card on a charge you "
        "attempt, do not try it again: leave that invoice open. Finally set the batch status as the runbook says."
        "\n\nWhen you are done, call submit with the total amount you newly charged in this session, in dollars and "
        "cents (e.g. $1,234.56), and the id(s) of the invoice(s) left open; mention no other invoice id.")


def _check_settlement(world: SettlementWorld, env: PaymentsEnv, answer: str | None) -> dict[str, bool]:
    state, text = env.state, answer or ""
    txns = state["transactions"]
    captured = {i: sorted(t for t, x in txns.items() if x["invoice_id"] == i and x["status"] == "captured")
                for i in world.owed}
    posted = {i: sorted(p["transaction_id"] for p in state["payments"].values() if p["invoice_id"] == i)
              for i in world.owed}
    collected = {i: sum(txns[t]["amount_cents"] for t in captured[i]) for i in world.owed}
    new = sum(x["amount_cents"] for x in txns.values() if x["status"] == "captured"
              and x["created_at"] >= _stamp(world.start))
    named = [i for i in world.owed if mentions(text, i)]
    return {
        "no_double_charge": all(collected[i] <= world.owed[i] for i in world.owed),
        "settled": all(collected[i] == world.owed[i] and posted[i] == captured[i]
                       for i in world.owed if i != world.declines),
        "declined_open": not captured[world.declines] and not posted[world.declines] and any(
            x["invoice_id"] == world.declines and x["created_at"] >= _stamp(world.start) for x in txns.values()),
        "batch_status": state["batches"][world.batch_id]["status"] == "needs_attention",
        "answer_total": any(v * 100 == new for v in money_values(text)),
        "answer_open": named == [world.declines],
    }


def _settlement_reference(world: SettlementWorld) -> tuple[Call, ...]:
    """The efficient agent, played against a fresh environment so that its ids are the ones the tools hand out:
    read the runbook, the job, every invoice and the crashed run's transactions; post the captured but unposted
    charges; re-attempt the stale decline under a new key; charge the rest within the rate window; after the lost
    reply repeat the same request and post what it replays."""
    env = PaymentsEnv(world)
    calls: list[Call] = []

    def do(name: str, **args: Any) -> Any:
        calls.append(Call(name, args))
        try:
            return env.call(name, args)
        except ToolError as failure:
            return failure

    batch = world.batch_id
    for topic in SETTLEMENT_DOCS:
        do("describe_api", topic=topic)
    do("get_batch", batch_id=batch)
    do("get_job", job_id=world.job_id)
    for page in range(1, -(-N_INVOICES // PAGE) + 1):
        do("list_invoices", batch_id=batch, page=page)
    for invoice_id in world.owed:
        do("get_invoice", invoice_id=invoice_id)
    prior = dict(world.data["transactions"])
    for page in range(1, -(-len(prior) // PAGE) + 1):
        do("search_transactions", batch_id=batch, page=page)
    for txn_id, txn in prior.items():
        if world.kinds[txn["invoice_id"]] == "unposted":
            do("record_payment", invoice_id=txn["invoice_id"], transaction_id=txn_id)
    stale = next(i for i, k in world.kinds.items() if k == "stale")
    do("get_customer", customer_id=world.data["invoices"][stale]["customer_id"])
    sent = [0]

    def charge(invoice_id: str, key: str) -> Any:
        if sent[0] == QUOTA:
            do("wait", seconds=WINDOW_S)
            sent[0] = 0
        sent[0] += 1
        return do("charge", invoice_id=invoice_id, amount_cents=world.owed[invoice_id], idempotency_key=key)

    charge(stale, f"{batch}:{stale}:r2")
    for invoice_id, kind in world.kinds.items():
        if kind in ("declined", "lost_reply", "credit", "clean"):
            charge(invoice_id, f"{batch}:{invoice_id}")
            if kind == "lost_reply":
                replay = charge(invoice_id, f"{batch}:{invoice_id}")
                do("record_payment", invoice_id=invoice_id, transaction_id=replay["transaction_id"])
    do("set_batch_status", batch_id=batch, status="needs_attention")
    new = sum(x["amount_cents"] for x in env.state["transactions"].values()
              if x["status"] == "captured" and x["created_at"] >= _stamp(world.start))
    calls.append(Call("submit", {"answer": f"Newly charged in this session: {dollars(new)}. Left open: "
                                           f"{world.declines} (card declined)."}))
    return tuple(calls)


def _settlement_wasteful(world: SettlementWorld, reference: tuple[Call, ...]) -> tuple[Call, ...]:
    """The reference with repeated reads and the batch closed early as 'settled', then corrected."""
    calls = list(reference)
    at = next(i for i, c in enumerate(calls) if c.name == "get_batch")
    calls.insert(at + 1, Call("set_batch_status", {"batch_id": world.batch_id, "status": "settled"}))
    first = next(i for i, c in enumerate(calls) if c.name == "get_invoice")
    calls.insert(first + 1, calls[first])
    listing = next(i for i, c in enumerate(calls) if c.name == "list_invoices")
    calls.insert(listing + 1, calls[listing])
    return tuple(calls)


# ---------------------------------------------------------------------------------------------------------------
# Task 2: post a cycle count against a lagging replica, an arrived transfer, a rate window and a lost reply.

WAREHOUSES = ["Dock 4, Reno DC", "Aisle C, Tilbury", "Mezzanine, Columbus West", "Bay 12, Rotterdam South",
              "Cold room, Fresno", "Zone B, Leipzig Hub", "Racking 7, Joliet", "Pick face 3, Swindon"]
PRODUCTS = ["hex bolt M8x40", "wing nut M6", "cable tie 200 mm", "zip bag 10x15", "LED strip 5 m",
            "hose clamp 32 mm", "wood screw 4x30", "rubber grommet 12 mm", "fuse 10 A", "duct tape 50 m",
            "shelf bracket 200 mm", "door hinge 75 mm", "padlock 40 mm", "extension lead 4-way",
            "safety gloves L", "spirit level 600 mm", "drill bit 6 mm", "masking tape 25 mm",
            "carabiner 8 cm", "hook rail 5-hook", "caster wheel 50 mm", "terminal block 12-way",
            "silicone sealant clear", "sanding disc P120", "cable gland M20", "washer M10", "pipe clip 22 mm",
            "anchor plug 8 mm", "tie wrap mount", "heat shrink 6 mm"]
PREFIXES = ["FST", "ELC", "HWD", "TLS", "PKG", "SFT", "PLB", "ADH"]
N_COUNTED, N_OTHER = 22, 5
MAX_LINES, LINE_QUOTA = 5, 8
MAX_ADJUST_UNITS = 100_000
STOCK_DOCS = {
    "reads": (
        "Stock reads. list_stock and get_stock read the reporting replica unless consistent=true. The replica "
        "copies the primary ledger every few minutes and its rows carry as_of, the time of its last copy: movements "
        "posted since are missing from it. get_stock with consistent=true reads the primary ledger, which is always "
        "current; list_movements lists the primary ledger's movements. service_status shows the replica's lag."),
    "adjustments": (
        "Adjustments. post_adjustments posts up to {max} lines (sku, delta) of one cycle count as one request; each "
        "delta is added to on_hand. Lines are applied one at a time in order; the request stops at the first line "
        "that cannot be applied, and the lines before it stay applied (no rollback). Requests are not idempotent: "
        "posting a line again moves stock again. The service accepts {quota} adjustment lines per {window}-second "
        "window, counting every line of every accepted request; a request that does not fit in what is left of the "
        "window is rejected whole (429, nothing applied). '504 gateway timeout' means the reply was lost: any "
        "prefix of the request's lines may have been applied. service_status shows the window."),
    "counts": (
        "Cycle counts. A count's lines give the units physically counted, one line per bin; a SKU counted in "
        "several bins has several lines, and its counted quantity is their sum. Each counted SKU that differs gets "
        "one cycle-count adjustment of counted minus on_hand; never a second one for the same SKU and count, and no "
        "adjustment for a SKU outside the count. Goods of an inbound transfer with status 'arrived' are on the "
        "shelf and were counted, but are not in on_hand until the transfer is received (receive_transfer), and a "
        "SKU with an arrived transfer cannot be adjusted until then. When every counted SKU matches its count, set "
        "the count's status to 'reconciled'."),
}


class InventoryEnv(Environment):
    """A stock ledger with a lagging replica, inbound transfers and a rate-limited adjustment service.

    On-hand figures are derived from inserted movements, never rewritten: opening balance plus movements."""

    def __init__(self, world: "ReconcileWorld"):
        super().__init__()
        self.state = copy.deepcopy(world.data)
        self._start, self._as_of = world.start, world.as_of
        self._lost = world.lost  # the SKU whose first request loses its reply after applying through it
        self._next = {"mv": world.first_movement, "adj": world.first_batch}

    def _clock(self) -> int:
        return sum(self.state["waits"].values())

    def _now(self) -> datetime:
        return self._start + timedelta(seconds=self._clock())

    def _on_hand(self, sku: str, replica: bool = False) -> int:
        moved = sum(m["delta"] for m in self.state["movements"].values()
                    if m["sku"] == sku and (not replica or m["at"] <= _stamp(self._as_of)))
        return self.state["stock"][sku]["opening"] + moved

    def _sku(self, sku: str) -> str:
        key = sku.strip().upper()
        if key not in self.state["stock"]:
            raise ToolError(f"no SKU {sku!r}")
        return key

    def _transfer_status(self, transfer_id: str) -> str:
        return "received" if transfer_id in self.state["receipts"] else self.state["transfers"][transfer_id]["status"]

    def _used(self) -> int:
        window = self._clock() // WINDOW_S
        return sum(len(r["lines"]) for r in self.state["requests"].values() if r["t"] // WINDOW_S == window)

    def _move(self, sku: str, delta: int, kind: str, ref: str, batch: str | None = None) -> str:
        movement_id = f"MV-{self._next['mv']}"
        self._next["mv"] += 1
        self.state["movements"][movement_id] = {"sku": sku, "delta": delta, "kind": kind, "ref": ref,
                                                "batch_id": batch, "at": _stamp(self._now())}
        return movement_id

    def _row(self, sku: str, consistent: bool) -> dict[str, Any]:
        transfers = [{"transfer_id": t, "status": self._transfer_status(t)}
                     for t, x in self.state["transfers"].items() if x["sku"] == sku]
        return {"sku": sku, "name": self.state["stock"][sku]["name"], "on_hand": self._on_hand(sku, not consistent),
                "source": "primary" if consistent else "replica",
                "as_of": _stamp(self._now() if consistent else self._as_of), "inbound_transfers": transfers}

    @tool("Documentation. Topics: 'reads', 'adjustments', 'counts'.",
          {"topic": {"type": "string", "enum": list(STOCK_DOCS)}})
    def describe_api(self, topic: str) -> Any:
        return {"topic": topic, "text": STOCK_DOCS[topic].format(max=MAX_LINES, quota=LINE_QUOTA, window=WINDOW_S)}

    @tool("Cycle counts: one page of a count's lines, with the count's status.",
          {"count_id": {"type": "string"}, "page": {"type": "integer"}})
    def get_count(self, count_id: str, page: int) -> Any:
        count = self.state["counts"].get(count_id.strip().upper())
        if count is None:
            raise ToolError(f"no cycle count {count_id!r}")
        listing = _paged(count["lines"], page)
        return {"count_id": count["count_id"], "warehouse": count["warehouse"], "status": count["status"],
                "counted_at": count["counted_at"], "page": listing["page"], "pages": listing["pages"],
                "lines": listing["rows"]}

    @tool("Stock: one page of every SKU's on-hand quantity.", {"page": {"type": "integer"}})
    def list_stock(self, page: int) -> Any:
        listing = _paged([{"sku": s, "on_hand": self._on_hand(s, True)} for s in self.state["stock"]], page, 10)
        return {"source": "replica", "as_of": _stamp(self._as_of), "page": listing["page"],
                "pages": listing["pages"], "stock": listing["rows"]}

    @tool("Stock: one SKU's on-hand quantity and inbound transfers.",
          {"sku": {"type": "string"}, "consistent": {"type": "boolean", "description": "Read the primary ledger."}},
          required=["sku"])
    def get_stock(self, sku: str, consistent: bool = False) -> Any:
        return self._row(self._sku(sku), consistent)

    @tool("Stock: one page of the primary ledger's movements, filtered by SKU or by cycle count (give one).",
          {"sku": {"type": "string"}, "count_id": {"type": "string"}, "page": {"type": "integer"}}, required=["page"])
    def list_movements(self, page: int, sku: str | None = None, count_id: str | None = None) -> Any:
        if (sku is None) == (count_id is None):
            raise ToolError("give exactly one of sku and count_id")
        rows = [{"movement_id": m, **x} for m, x in self.state["movements"].items()
                if (sku is not None and x["sku"] == sku.strip().upper())
                or (count_id is not None and x["ref"] == count_id.strip().upper())]
        listing = _paged(rows, page, 8)
        return {"page": listing["page"], "pages": listing["pages"], "movements": listing["rows"]}

    @tool("Transfers: one inbound transfer.", {"transfer_id": {"type": "string"}})
    def get_transfer(self, transfer_id: str) -> Any:
        key = transfer_id.strip().upper()
        if key not in self.state["transfers"]:
            raise ToolError(f"no transfer {transfer_id!r}")
        return {"transfer_id": key, **self.state["transfers"][key], "status": self._transfer_status(key)}

    @tool("Transfers: receive an arrived transfer into on-hand stock.", {"transfer_id": {"type": "string"}})
    def receive_transfer(self, transfer_id: str) -> Any:
        key = transfer_id.strip().upper()
        if key not in self.state["transfers"]:
            raise ToolError(f"no transfer {transfer_id!r}")
        if self._transfer_status(key) != "arrived":
            raise ToolError(f"transfer {key} is {self._transfer_status(key)}")
        transfer = self.state["transfers"][key]
        movement = self._move(transfer["sku"], transfer["quantity"], "transfer_in", key)
        self.state["receipts"][key] = movement
        return {"transfer_id": key, "status": "received", "movement_id": movement,
                "on_hand": self._on_hand(transfer["sku"])}

    @tool("Adjustments: post up to 5 adjustment lines of a cycle count as one request (see describe_api "
          "'adjustments').",
          {"count_id": {"type": "string"}, "lines": {"type": "array", "items": {
              "type": "object", "properties": {"sku": {"type": "string"}, "delta": {"type": "integer"}},
              "required": ["sku", "delta"], "additionalProperties": False}}})
    def post_adjustments(self, count_id: str, lines: list[dict[str, Any]]) -> Any:
        count = self.state["counts"].get(count_id.strip().upper())
        if count is None:
            raise ToolError(f"no cycle count {count_id!r}")
        if not 1 <= len(lines) <= MAX_LINES:
            raise ToolError(f"a request holds 1-{MAX_LINES} lines")
        wanted = [(self._sku(line["sku"]), line["delta"]) for line in lines]
        if len({sku for sku, _ in wanted}) != len(wanted):
            raise ToolError("a SKU appears twice in one request")
        if any(delta == 0 or abs(delta) > MAX_ADJUST_UNITS for _, delta in wanted):
            raise ToolError(f"every delta must be a non-zero integer between -{MAX_ADJUST_UNITS} and "
                            f"{MAX_ADJUST_UNITS}")
        left = LINE_QUOTA - self._used()
        if len(wanted) > left:
            raise ToolError(f"429 too many requests: {left} line(s) left in this window; request rejected, nothing "
                            "applied")
        lost_before = any(self._lost in [line[0] for line in r["lines"]] for r in self.state["requests"].values())
        batch = f"ADJ-{self._next['adj']}"
        self._next["adj"] += 1
        self.state["requests"][batch] = {"t": self._clock(), "lines": [list(w) for w in wanted]}
        applied: list[dict[str, Any]] = []
        for position, (sku, delta) in enumerate(wanted, start=1):
            blocking = [t for t, x in self.state["transfers"].items()
                        if x["sku"] == sku and self._transfer_status(t) == "arrived"]
            if blocking:
                done = ", ".join(a["movement_id"] for a in applied) or "none"
                raise ToolError(f"409 line {position} ({sku}): inbound transfer {blocking[0]} has arrived but is not "
                                f"received; request {batch} stopped: lines before it applied ({done}), line "
                                f"{position} and later not applied")
            movement = self._move(sku, delta, "cycle_count", count["count_id"], batch)
            applied.append({"sku": sku, "delta": delta, "movement_id": movement, "on_hand_after": self._on_hand(sku)})
            if sku == self._lost and not lost_before:
                raise ToolError("504 gateway timeout: no reply from the ledger")
        return {"batch_id": batch, "applied": applied}

    @tool("Service status: the clock, the replica's lag and the adjustment window.")
    def service_status(self) -> Any:
        return {"now": _stamp(self._now()), "replica_as_of": _stamp(self._as_of),
                "replica_lag_s": int((self._now() - self._as_of).total_seconds()), "window_s": WINDOW_S,
                "lines_per_window": LINE_QUOTA, "lines_used_in_window": self._used(),
                "resets_in_s": WINDOW_S - self._clock() % WINDOW_S}

    @tool(f"Wait 1-{MAX_WAIT_S} seconds.", {"seconds": {"type": "integer"}})
    def wait(self, seconds: int) -> Any:
        if not 1 <= seconds <= MAX_WAIT_S:
            raise ToolError(f"seconds must be between 1 and {MAX_WAIT_S}")
        self.state["waits"][str(len(self.state["waits"]) + 1)] = seconds
        return {"waited_s": seconds, "now": _stamp(self._now())}

    @tool("Cycle counts: set a count's status.",
          {"count_id": {"type": "string"}, "status": {"type": "string", "enum": ["open", "in_progress", "reconciled"]}})
    def set_count_status(self, count_id: str, status: str) -> Any:
        count = self.state["counts"].get(count_id.strip().upper())
        if count is None:
            raise ToolError(f"no cycle count {count_id!r}")
        count["status"] = status
        return {"count_id": count["count_id"], "status": status}


@dataclass
class ReconcileWorld:
    """A cycle count against the ledger, with the seeded replica lag, transfer and lost reply."""

    count_id: str
    warehouse: str
    start: datetime
    as_of: datetime
    data: dict[str, Any]
    counted: dict[str, int]  # counted SKU -> counted quantity, in count-sheet order
    delta: dict[str, int]  # counted SKU -> the adjustment it needs once the transfer is received
    kinds: dict[str, str]
    transfer: str
    lost: str
    first_movement: int
    first_batch: int

    @property
    def net(self) -> int:
        """The signed net change the adjustments make."""
        return sum(self.delta.values())


RECONCILE_CHECKS = (
    Check("one_adjustment_per_sku", "No SKU has more than one cycle-count adjustment and no SKU off the count has one.",
          guard=True),
    Check("quantities_match", "Every counted SKU's primary on-hand equals its counted quantity.", 2.0),
    Check("transfer_received", "The arrived inbound transfer was received."),
    Check("count_reconciled", "The cycle count's status is 'reconciled'."),
    Check("answer_net", "The answer states the signed net change of the adjustments."),
)


def stock_reconcile(rng: ItemRng) -> AgTask:
    """Post a cycle count once per SKU against a stale replica, an unreceived transfer, a window and a lost reply."""
    world = _reconcile_world(rng)
    reference = _reconcile_reference(world)
    return AgTask(prompt=_reconcile_prompt(world), make_env=lambda: InventoryEnv(world), checks=RECONCILE_CHECKS,
                  evaluate=lambda env, answer: _check_reconcile(world, env, answer), reference=reference,
                  wasteful=_reconcile_wasteful(world, reference))


def _count_line(rng: ItemRng, kind: str) -> tuple[int, int, int, int]:
    """(primary on-hand, recent movement the replica misses, counted, transfer quantity) for one counted SKU."""
    primary = rng.randint(30, 400)
    recent = rng.choice([-1, 1]) * rng.randint(4, 40) if kind.startswith("stale") else 0
    off = 0
    while off == 0 or (kind == "stale_diff" and off == -recent):
        off = rng.choice([-1, 1]) * rng.randint(1, 11)
    quantity = rng.randint(6, 24) if kind == "transfer" else 0
    counted = {"plain": primary + off, "stale_diff": primary + off, "stale_match": primary,
               "stale_looks_ok": primary - recent, "match": primary,
               "transfer": primary + quantity + rng.choice([0, 0, off])}[kind]
    return primary, recent, counted, quantity


def _reconcile_world(rng: ItemRng) -> ReconcileWorld:
    """The count sheet, the ledger's movements, the replica's lag, the arrived transfer and the lost reply."""
    month, day = rng.randint(2, 11), rng.randint(1, 28)
    start = datetime(2026, month, day, 10, rng.randint(0, 50), rng.randint(0, 59))
    as_of = start - timedelta(seconds=rng.randint(300, 560))
    counted_at = start - timedelta(seconds=rng.randint(60, 150))  # after every movement the replica misses
    count_id, transfer_id = f"CC-{rng.randint(1000, 9999)}", f"TR-{rng.randint(10000, 99999)}"
    kinds = ["transfer", "stale_diff", "stale_diff", "stale_match", "stale_looks_ok", "match", "match"]
    kinds += ["plain"] * (N_COUNTED - len(kinds))
    rng.shuffle(kinds)
    names = rng.sample(PRODUCTS, N_COUNTED + N_OTHER)
    skus = [f"{rng.choice(PREFIXES)}-{n}" for n in distinct_ints(rng, 1000, 9999, N_COUNTED + N_OTHER)]
    stock, movements, counted, delta, kind_of = {}, {}, {}, {}, {}
    numbers = iter(range(rng.randint(2000, 6000), 10**6))
    for index, (sku, name) in enumerate(zip(skus, names)):
        kind = kinds[index] if index < N_COUNTED else rng.choice(["plain", "stale_diff"])
        primary, recent, count, quantity = _count_line(rng, kind)
        older = rng.choice([0, rng.randint(-30, 60)])
        for amount, at in ((older, as_of - timedelta(seconds=rng.randint(600, 5000))),
                           (recent, counted_at - timedelta(seconds=rng.randint(10, 120)))):
            if amount:
                movements[f"MV-{next(numbers)}"] = {"sku": sku, "delta": amount, "kind": "receipt" if amount > 0
                                                    else "pick", "ref": f"{'PO' if amount > 0 else 'SO'}-"
                                                    f"{rng.randint(10000, 99999)}", "batch_id": None,
                                                    "at": _stamp(at)}
        stock[sku] = {"name": name, "opening": primary - older - recent}
        if index < N_COUNTED:
            counted[sku], delta[sku], kind_of[sku] = count, count - primary - quantity, kind
            if kind == "transfer":
                transfer = {"sku": sku, "quantity": quantity, "from": rng.choice(WAREHOUSES),
                            "shipped_at": _stamp(start - timedelta(days=2, minutes=rng.randint(0, 600))),
                            "arrived_at": _stamp(start - timedelta(hours=3, minutes=rng.randint(0, 90))),
                            "status": "arrived"}
    order = list(stock)
    rng.shuffle(order)
    movements = dict(sorted(movements.items(), key=lambda m: m[1]["at"]))
    adjusting = [s for s in counted if delta[s]]
    lost = adjusting[MAX_LINES + 1]  # the second line of the reference's second request
    data = {"stock": {s: stock[s] for s in order}, "movements": movements, "transfers": {transfer_id: transfer},
            "receipts": {}, "requests": {}, "waits": {},
            "counts": {count_id: {"count_id": count_id, "warehouse": rng.choice(WAREHOUSES), "status": "open",
                                  "counted_at": _stamp(counted_at),
                                  "lines": _sheet(rng, counted, kind_of)}}}
    return ReconcileWorld(count_id, data["counts"][count_id]["warehouse"], start, as_of, data, counted, delta,
                          kind_of, transfer_id, lost, next(numbers) + 1000, rng.randint(100, 899))


def _sheet(rng: ItemRng, counted: dict[str, int], kind_of: dict[str, str]) -> list[dict[str, Any]]:
    """The count sheet: one line per bin counted; one SKU was counted in two bins, its lines apart."""
    lines = [{"sku": s, "bin": f"{rng.choice('ABCDEFGH')}-{rng.randint(1, 40):02d}-{rng.randint(1, 6)}", "counted": n}
             for s, n in counted.items()]
    split = rng.choice([i for i, s in enumerate(counted) if kind_of[s] == "plain"])
    first = rng.randint(1, lines[split]["counted"] - 1)
    second = {**lines[split], "bin": f"{rng.choice('JKLMN')}-{rng.randint(1, 40):02d}-{rng.randint(1, 6)}",
              "counted": lines[split]["counted"] - first}
    lines[split]["counted"] = first
    lines.insert(rng.randint(min(split + 2, len(lines)), len(lines)), second)
    return lines


def _reconcile_prompt(world: ReconcileWorld) -> str:
    return (
        f"You are posting cycle count {world.count_id} for {world.warehouse}; its lines give the units physically "
        "counted. Post it so that the system on-hand quantity of every counted SKU equals what was counted, "
        "following the inventory service's cycle-count rules (describe_api): one adjustment per SKU that differs, "
        "none for SKUs outside the count. When every counted SKU matches, set the count's status to 'reconciled'."
        "\n\nWhen you are done, call submit with the net change in units made by your adjustments (the sum of their "
        "deltas) as a signed integer, e.g. -4 or +9.")


def _check_reconcile(world: ReconcileWorld, env: InventoryEnv, answer: str | None) -> dict[str, bool]:
    adjusted: dict[str, int] = {}
    for movement in env.state["movements"].values():
        if movement["kind"] == "cycle_count":
            adjusted[movement["sku"]] = adjusted.get(movement["sku"], 0) + 1
    return {
        "one_adjustment_per_sku": all(n == 1 for n in adjusted.values()) and set(adjusted) <= set(world.counted),
        "quantities_match": all(env._on_hand(s) == n for s, n in world.counted.items()),
        "transfer_received": world.transfer in env.state["receipts"],
        "count_reconciled": env.state["counts"][world.count_id]["status"] == "reconciled",
        "answer_net": world.net in signed_integers(answer or ""),
    }


def _reconcile_reference(world: ReconcileWorld) -> tuple[Call, ...]:
    """The efficient agent, played against a fresh environment: read the rules, the sheet and every counted SKU on
    the primary; receive the arrived transfer and re-read its SKU; post the differences in requests that fit the
    window, waiting it out when full; after the lost reply list the count's movements and post only what is
    missing."""
    env = InventoryEnv(world)
    calls: list[Call] = []

    def do(name: str, **args: Any) -> Any:
        calls.append(Call(name, args))
        try:
            return env.call(name, args)
        except ToolError as failure:
            return failure

    for topic in STOCK_DOCS:
        do("describe_api", topic=topic)
    for page in range(1, -(-len(world.data["counts"][world.count_id]["lines"]) // PAGE) + 1):
        do("get_count", count_id=world.count_id, page=page)
    for sku in world.counted:
        do("get_stock", sku=sku, consistent=True)
    sku = world.data["transfers"][world.transfer]["sku"]
    do("get_transfer", transfer_id=world.transfer)
    do("receive_transfer", transfer_id=world.transfer)
    do("get_stock", sku=sku, consistent=True)
    pending = [{"sku": s, "delta": d} for s, d in world.delta.items() if d]
    left = LINE_QUOTA
    while pending:
        if not left:
            do("wait", seconds=WINDOW_S)
            left = LINE_QUOTA
        lines = pending[:min(MAX_LINES, left)]
        result = do("post_adjustments", count_id=world.count_id, lines=lines)
        left -= len(lines)
        done = len(lines)
        if isinstance(result, ToolError):
            do("list_movements", count_id=world.count_id, page=1)
            done = next(i for i, line in enumerate(lines) if line["sku"] == world.lost) + 1
        pending = pending[done:]
    do("set_count_status", count_id=world.count_id, status="reconciled")
    calls.append(Call("submit", {"answer": f"Net change: {world.net:+d} units"}))
    return tuple(calls)


def _reconcile_wasteful(world: ReconcileWorld, reference: tuple[Call, ...]) -> tuple[Call, ...]:
    """The reference with repeated reads and a needless status set first."""
    calls = list(reference)
    first = next(i for i, c in enumerate(calls) if c.name == "get_stock")
    calls.insert(first + 1, calls[first])
    page = next(i for i, c in enumerate(calls) if c.name == "get_count")
    calls.insert(page + 1, calls[page])
    calls.insert(0, Call("set_count_status", {"count_id": world.count_id, "status": "in_progress"}))
    return tuple(calls)
