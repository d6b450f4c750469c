"""Context reading and synthesis: long generated documents whose answer combines scattered, amended facts.

Every generator builds the true facts first, renders them (with the errors, retractions and distractors a
real document set carries) and computes the key from the facts, never from the text (amendment 001 §4).
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
SURNAMES = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Brennan", "Castillo", "Novak", "Haddad", "Ferreira",
            "Kowalski", "Osei", "Varga", "Delacroix", "Ishikawa", "Quinlan", "Abernathy", "Sorensen", "Mbeki",
            "Petrov", "Rahman", "Whitlock", "Zielinski", "Achterberg", "Nakamura"]


def _exact(prompt: str, answer: str, answer_type: str) -> Generated:
    """Package a prompt and its computed answer with a reference response that scores 1."""
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type=answer_type),
                     reference=f"Working omitted.\nANSWER: {answer}")


def _day(d: dt.date) -> str:
    """A date in words, independent of the locale (strftime's month names are not)."""
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


# ---------------------------------------------------------------- inventory ledger

WAREHOUSES = ["Ashford", "Brackley", "Corran", "Dunmore", "Elstow", "Fenwick", "Garth", "Hollins", "Keswick"]
NOTES = ["Reorder point for {sku} at {wh} raised to 40 units.", "{wh} dock 2 closed for resurfacing until Friday.",
         "Unit price of {sku} updated in the catalogue; no stock movement.", "Supplier ASN received for {sku}; goods "
         "not yet arrived.", "Customer order for {sku} placed on back-order at {wh}; nothing picked.",
         "Bin relabelling at {wh}: {sku} moved from aisle 4 to aisle 9 within the same warehouse."]


def inventory_ledger(rng: ItemRng) -> Generated:
    """Closing sellable stock of one SKU at four warehouses after a month of movements, errors and fixes."""
    whs = rng.sample(WAREHOUSES, 4)
    prefix = rng.choice(["KT", "VX", "RB", "MQ", "LN", "PZ"])
    digits = rng.sample("123456789", 4)
    swaps = [digits[:1] + [digits[2], digits[1]] + digits[3:], digits[:2] + [digits[3], digits[2]]]
    skus = [f"{prefix}-{''.join(d)}" for d in [digits, *swaps]]         # look-alike codes: one target, two decoys
    skus.append(f"{rng.choice(['HD', 'WF'])}-{rng.randint(1000, 9999)}")
    target = skus[0]
    stock = {(s, w): rng.randint(15, 90) for s in skus for w in whs}
    opening = dict(stock)
    lines: list[tuple[int, str]] = []          # (day, text); entry numbers are given in order of posting
    base, transfer_base = rng.randint(3000, 8000), rng.randint(100, 900)
    later: list[tuple[int, str]] = []          # notes (corrections, voids) due at a later step: (step, text)
    transit: list[tuple[int, str, str, str, int, int]] = []   # (due step, id, sku, from, to, qty)
    quarantine: list[tuple[int, str, str, int, int]] = []     # (due step, sku, wh, qty, entry no.)
    counted: set[tuple[str, str]] = set()                     # one cycle count per SKU and warehouse at most

    def post(day: int, text: str) -> int:
        lines.append((day, text))
        return base + len(lines) - 1

    steps = 66
    for step in range(steps):
        day = 1 + step * 27 // steps
        for due, text in [x for x in later if x[0] <= step]:
            later.remove((due, text))
            post(day, text)
        if transit and transit[0][0] <= step:
            _, tid, sku, src, dst, qty = transit.pop(0)
            lost = min(qty - 1, rng.choice([0, 0, 0, rng.randint(1, 4)]))
            stock[sku, dst] += qty - lost
            post(day, f"TRANSFER-IN   {sku}  {dst:<8}  +{qty - lost:<4} {tid} from {src}"
                      + (f"; {lost} damaged, written off in transit" if lost else "; received in full"))
        if quarantine and quarantine[0][0] <= step:
            _, sku, wh, qty, ref = quarantine.pop(0)
            ok = rng.randint(1, qty)
            stock[sku, wh] += ok
            post(day, f"QUARANTINE    {sku}  {wh:<8}  +{ok:<4} release from #{ref}: {ok} of {qty} passed inspection,"
                      " moved to sellable stock")
        sku = rng.weighted_choice(skus, [45, 20, 20, 15])
        wh = rng.choice(whs)
        kind = rng.weighted_choice(["rec", "ship", "xfer", "ret", "count", "note"], [22, 32, 16, 12, 5, 8])
        if kind in ("ship", "xfer") and stock[sku, wh] < 6:
            kind = "rec"
        if kind == "count" and (sku, wh) in counted:
            kind = "note"
        qty = rng.randint(5, 60) if kind == "rec" else rng.randint(1, max(1, stock[sku, wh] * 2 // 3))
        if kind == "note":
            post(day, "NOTE          " + rng.choice(NOTES).format(sku=sku, wh=wh))
            continue
        if kind == "count":
            counted.add((sku, wh))
            stock[sku, wh] = max(0, stock[sku, wh] - rng.choice([0, 1, 2, 3, 5, -1, -2]))
            post(day, f"CYCLE COUNT   {sku}  {wh:<8}  counted {stock[sku, wh]}; book quantity set to the count")
            continue
        if kind == "xfer":
            dst = rng.choice([w for w in whs if w != wh])
            tid = f"T-{transfer_base + step}"
            stock[sku, wh] -= qty
            post(day, f"TRANSFER-OUT  {sku}  {wh:<8}  -{qty:<4} {tid} to {dst}, dispatched")
            transit.append((step + rng.randint(2, 22), tid, sku, wh, dst, qty))
            transit.sort()
            continue
        damaged = kind == "ret" and rng.randint(1, 3) == 1
        if kind == "ret":
            qty = rng.randint(2, 9) if damaged else rng.randint(1, 12)
        shown = {"qty": qty, "sku": sku, "wh": wh}
        stock[sku, wh] += 0 if damaged else (qty if kind in ("rec", "ret") else -qty)
        field = rng.weighted_choice(["none", "qty", "sku", "wh"], [13, 4, 3, 1]) if not damaged else "none"
        if field == "qty":
            shown["qty"] = int(str(qty)[::-1]) if qty > 9 and qty % 11 else qty + rng.choice([-10, 10, 20])
            shown["qty"] = shown["qty"] if shown["qty"] > 0 and shown["qty"] != qty else qty + 30
        elif field == "sku":
            shown["sku"] = rng.choice([s for s in skus[:3] if s != sku]) if sku in skus[:3] else target
        elif field == "wh":
            shown["wh"] = rng.choice([w for w in whs if w != wh])
        label = {"rec": "RECEIPT", "ship": "SHIPMENT", "ret": "RETURN"}[kind]
        sign = {"rec": "+", "ship": "-", "ret": "+"}[kind]
        tail = {"rec": f"PO-{rng.randint(10000, 99999)} from supplier", "ship": f"order SO-{rng.randint(10000, 99999)}",
                "ret": "RMA, condition " + ("DAMAGED, to quarantine (not sellable)" if damaged else "resellable")}[kind]
        text = f"{label:<13} {shown['sku']}  {shown['wh']:<8}  {sign if not damaged else ' '}{shown['qty']:<4} {tail}"
        number = post(day, text)
        if damaged:
            quarantine.append((step + rng.randint(3, 20), sku, wh, qty, number))
            quarantine.sort()
        if field != "none":
            true = {"qty": qty, "sku": sku, "wh": wh}[field]
            word = {"qty": "quantity", "sku": "SKU", "wh": "warehouse"}[field]
            later.append((step + rng.randint(1, 30), f"CORRECTION    re #{number}: {word} should read {true} "
                                                      f"(keyed as {shown[field]})"))
        if kind in ("rec", "ship") and rng.randint(1, 9) == 1:
            dup = post(day, text)
            later.append((step + rng.randint(1, 25), f"VOID          re #{dup}: duplicate posting of #{number}"))
        elif kind == "ship" and rng.randint(1, 10) == 1:
            ghost = post(day, f"SHIPMENT      {sku}  {wh:<8}  -{rng.randint(3, 25):<4} "
                              f"order SO-{rng.randint(10000, 99999)}")
            later.append((step + rng.randint(1, 25), f"VOID          re #{ghost}: order cancelled before picking"))
    for _, text in sorted(later):
        post(28, text)
    order = rng.sample(whs, 4)
    month = rng.choice(MONTHS)
    opening = "\n".join(f"  {s:<8}  " + ";  ".join(f"{w} {opening[s, w]}" for w in whs) for s in skus)
    ledger = "\n".join(f"#{base + n}  {d:02d}-{month[:3]}  {t}" for n, (d, t) in enumerate(lines))
    prompt = INVENTORY_PROMPT.format(month=month, whs=", ".join(whs), opening=opening, ledger=ledger,
                                     target=target, order=", ".join(order))
    return _exact(prompt, ", ".join(str(stock[target, w]) for w in order), "list")


INVENTORY_PROMPT = """You are reconciling the {month} stock ledger of a distributor with four warehouses \
({whs}). The ledger below is the complete export for the month, mistakes and fixes included.

Ledger rules (from the warehouse system's documentation):
1. Entries take effect in entry-number order, starting from the opening sellable balances.
2. RECEIPT adds units to the warehouse's sellable stock; SHIPMENT removes them.
3. TRANSFER-OUT removes units from the sending warehouse when they are dispatched. TRANSFER-IN adds to the \
receiving warehouse only the units actually received; units written off in transit are gone. Units dispatched \
but not received by the end of the month are in transit and belong to neither warehouse's stock.
4. A RETURN in resellable condition adds the units to sellable stock. A DAMAGED return goes to quarantine, which \
is not sellable stock; a QUARANTINE release later moves the stated number of those units into sellable stock.
5. CYCLE COUNT sets the book quantity of that SKU at that warehouse to the counted figure at that point.
6. CORRECTION re #n fixes one field of entry #n; the corrected entry counts as if it had been posted correctly \
in its original place. VOID re #n means that entry #n has no effect at all.
7. NOTE entries record no stock movement.

Opening sellable balances on 1 {month}:
{opening}

Ledger:
{ledger}

Question: what is the closing sellable stock of SKU {target} at each of these warehouses at the end of {month}: \
{order}?
Work through the ledger carefully. End your response with a final line `ANSWER: <q1>, <q2>, <q3>, <q4>`: the four \
closing quantities as integers, comma-separated, in exactly the warehouse order of the question."""


# ---------------------------------------------------------------- per-diem memos

CITIES = ["Lyon", "Porto", "Gdansk", "Ghent", "Bilbao", "Turin", "Leipzig", "Brno", "Aarhus", "Cork", "Graz",
          "Utrecht", "Tartu", "Bergen", "Lille", "Kaunas"]
MEALS = {"breakfast": 20, "lunch": 30, "dinner": 50}
MEMO_FILLER = [
    "Bookings must still be made through the corporate portal; off-portal bookings need prior approval.",
    "The mileage rate for private cars remains 0.42 per kilometre and is not affected by this memo.",
    "Line managers are reminded that claims must be submitted within 60 days of the return date.",
    "Questions about this memo should be sent to the Travel Office mailbox, not to Payroll.",
    "Rail travel in standard class remains the default for journeys under four hours.",
    "Receipts must be itemised; card slips alone are not accepted for lodging.",
    "Taxi fares are reimbursed at cost and fall outside the M&IE allowance.",
    "Personal travel insurance is not reimbursable; staff are covered by the group policy.",
]


def _rates_text(settings: list[tuple[tuple[str, str], int]]) -> str:
    """Render rate settings as the bullet list a memo carries."""
    out = []
    for (city, field), value in settings:
        if city == "deduction":
            out.append(f"  - Deduction for a provided {field}: {value}% of the day's full M&IE rate.")
        else:
            out.append(f"  - {city}: {'lodging cap' if field == 'lodging' else 'M&IE rate'} EUR {value} per "
                       f"{'night' if field == 'lodging' else 'day'}.")
    return "\n".join(out)


def per_diem_memos(rng: ItemRng) -> Generated:
    """A travel claim priced under memos with effective dates, retroactive changes, drafts and a withdrawal."""
    year = rng.randint(2024, 2028)
    cities = rng.sample(CITIES, 7)
    trip = cities[:3]
    start = dt.date(year, rng.randint(3, 9), rng.randint(3, 20))
    nights = [c for c in trip for _ in range(rng.randint(2, 3))]
    end = start + dt.timedelta(len(nights))

    def day(k):
        """Day k of the trip; 0 is the departure day."""
        return start + dt.timedelta(k)

    def rate():
        # M&IE rates are multiples of 4 so that 75% days and percentage deductions land on whole cents.
        return ("lodging", 5 * rng.randint(18, 50)), ("mie", 4 * rng.randint(12, 30))

    def memo(issue, effective, settings, status="in force", note=""):
        return {"issue": issue, "effective": effective, "settings": settings, "status": status, "note": note}

    def some(cities_, fields=("lodging", "mie")):
        return [((c, f), v) for c in cities_ for f, v in rate() if f in fields]

    baseline = memo(dt.date(year - 1, 12, rng.randint(1, 15)), dt.date(year, 1, 1),
                    [((c, f), v) for c in cities for f, v in rate()]
                    + [(("deduction", m), p) for m, p in MEALS.items()])
    pre_eff = start - dt.timedelta(rng.randint(25, 60))
    pre = memo(pre_eff - dt.timedelta(rng.randint(5, 20)), pre_eff, some(rng.sample(cities, 3)))
    wd_eff = start - dt.timedelta(rng.randint(5, 40))
    withdrawn = memo(wd_eff - dt.timedelta(rng.randint(5, 20)), wd_eff, some(rng.sample(trip, 2)), "withdrawn")
    k = rng.randint(1, len(nights) - 1)
    mid = memo(start - dt.timedelta(rng.randint(3, 30)), day(k), some([nights[k]], rng.choice(
        [("lodging",), ("mie",), ("lodging", "mie")])) + some(rng.sample(cities[3:], 1)))
    draft = memo(start - dt.timedelta(rng.randint(2, 40)), start - dt.timedelta(rng.randint(1, 10)),
                 some(rng.sample(trip, 2)), "draft")
    meal = rng.choice(list(MEALS))
    policy = memo(start - dt.timedelta(rng.randint(10, 50)), day(rng.randint(-20, len(nights) + 5)),
                  [(("deduction", meal), MEALS[meal] + rng.choice([-10, -5, 5, 10]))])
    retro_eff = dt.date(year, 1, 1) + dt.timedelta(rng.randint(10, (start - dt.date(year, 1, 1)).days - 3))
    retro = memo(end + dt.timedelta(rng.randint(4, 30)), retro_eff, some(rng.sample(trip, 1), ("lodging",)),
                 note="It is issued after the fact: it applies from the effective date above, including to claims "
                      "that have not yet been settled.")
    future = memo(start - dt.timedelta(rng.randint(1, 30)), end + dt.timedelta(rng.randint(1, 40)),
                  some(rng.sample(trip, 2)))
    extra = []
    for _ in range(3):  # routine updates scattered over the year, some of them touching the trip
        eff = dt.date(year, 1, 20) + dt.timedelta(rng.randint(0, (end - dt.date(year, 1, 20)).days + 40))
        extra.append(memo(eff - dt.timedelta(rng.randint(3, 25)), eff, some(rng.sample(cities, 2))))
    memos = sorted([baseline, pre, withdrawn, mid, draft, policy, retro, future, *extra], key=lambda m: m["issue"])
    for a, b in zip(memos, memos[1:]):  # distinct issue dates, so "the later issue" always decides a tie
        b["issue"] = max(b["issue"], a["issue"] + dt.timedelta(1))
    withdrawal = memo(withdrawn["issue"] + dt.timedelta(rng.randint(3, 60)), None, [], "withdrawal")
    while any(m["issue"] == withdrawal["issue"] for m in memos):
        withdrawal["issue"] += dt.timedelta(1)
    memos.insert(next((i for i, m in enumerate(memos) if m["issue"] > withdrawal["issue"]), len(memos)), withdrawal)
    for n, m in enumerate(memos):
        m["no"] = f"TO-{m['issue'].year}-{n + 11:02d}"
    withdrawal["note"] = (f"Memo {withdrawn['no']} is withdrawn in full and is to be treated as never issued; the "
                          "rates it set revert to those otherwise in force.")

    def value(key, when):
        """The memo with the latest effective date on or before `when` wins; same date: the later issue."""
        live = [(m["effective"], m["issue"], v) for m in memos if m["status"] == "in force"
                for k_, v in m["settings"] if k_ == key and m["effective"] <= when]
        return max(live)[2]

    actual = {c: value((c, "lodging"), start) + rng.choice([-35, -20, -5, 10, 25, 40]) for c in trip}
    provided = sorted(rng.sample([(d, m) for d in range(len(nights) + 1) for m in MEALS], rng.randint(3, 5)))
    lodging = sum(min(actual[c], value((c, "lodging"), day(n))) for n, c in enumerate(nights))
    mie = Fraction(0)
    for d in range(len(nights) + 1):
        full = value(((nights + nights[-1:])[d], "mie"), day(d))
        base = full * Fraction(3, 4) if d in (0, len(nights)) else Fraction(full)
        deduct = sum(Fraction(value(("deduction", m), day(d)), 100) * full for d_, m in provided if d_ == d)
        mie += max(Fraction(0), base - deduct)
    cents = (lodging + mie) * 100
    assert cents.denominator == 1, "rates are multiples of 4 and percentages whole, so the total is in cents"
    answer = f"{cents.numerator // 100}.{cents.numerator % 100:02d}"
    fill = rng.sample(MEMO_FILLER, len(MEMO_FILLER))
    blocks = []
    for n, m in enumerate(memos):
        head = f"MEMO {m['no']}  |  issued {_day(m['issue'])}" + (
            f"  |  effective {_day(m['effective'])}" if m["effective"] else "")
        if m["status"] == "draft":
            head += "\nDRAFT FOR CONSULTATION - NOT IN FORCE. Comments to the Travel Office within three weeks."
        body = "Subject: withdrawal of a memo" if m is withdrawal else (
            "Subject: travel rates\nThe following replace the values previously in force for the items listed; "
            "everything else is unchanged:\n" + _rates_text(m["settings"]))
        blocks.append("\n".join(x for x in [head, body, m["note"], fill[n % len(fill)], fill[(n + 3) % len(fill)]]
                                 if x))
    traveller, other = rng.sample(SURNAMES, 2)
    other_start = start + dt.timedelta(rng.choice([-12, -9, 8, 13]))
    other_trip = rng.sample(cities, 2)
    other_claim = (f"EXPENSE CLAIM EC-{rng.randint(10000, 99999)} - traveller: {other} (already settled)\n"
                   f"Departed {_day(other_start)}; returned {_day(other_start + dt.timedelta(4))}. Route: "
                   f"{other_trip[0]} (2 nights, EUR {5 * rng.randint(20, 50)} per night) -> {other_trip[1]} "
                   f"(2 nights, EUR {5 * rng.randint(20, 50)} per night). No meals provided.")
    hotels = "\n".join(f"  - {c}: {nights.count(c)} nights at EUR {actual[c]} per night (itemised receipt)"
                       for c in trip)
    meals = "; ".join(f"{m} on {_day(day(d))}" for d, m in provided)
    prompt = PER_DIEM_PROMPT.format(memos="\n\n".join(blocks), other_claim=other_claim, traveller=traveller,
                                    claim=rng.randint(10000, 99999),
                                    start=_day(start), end=_day(end), route=" -> ".join(trip), hotels=hotels,
                                    meals=meals, legs="; ".join(
                                        f"{c} from {_day(day(nights.index(c)))}" for c in trip))
    return _exact(prompt, answer, "number")


PER_DIEM_PROMPT = """You work in the finance team. Price the expense claim below under the company travel \
policy and the Travel Office memos, which are reproduced in full in the order they were issued.

Travel policy (unchanged all year):
1. Lodging is reimbursed for each night at the actual nightly rate, but at most the lodging cap of the city where \
that night is spent, using the cap in force on the date of that night.
2. M&IE (meals and incidental expenses) is paid for every day from the departure day to the return day \
inclusive, at the M&IE rate in force on that day for the city where the traveller spends that night; on the \
return day, the city where the last night was spent.
3. The departure day and the return day are paid at 75% of that day's M&IE rate.
4. For each meal provided free of charge, deduct that meal's percentage (set in the memos) of the day's full \
M&IE rate, using the percentage in force on that day. A day's M&IE payment cannot fall below zero.
5. Which value is in force on a date: the value set by the memo with the latest effective date on or before that \
date; between two memos with the same effective date, the one issued later. A memo applies from its effective date \
whenever it was issued. Drafts, and memos that have been withdrawn, are disregarded entirely.

{memos}

{other_claim}

EXPENSE CLAIM EC-{claim} - traveller: {traveller}
Departed {start}; returned {end}. Route: {route} (first night in each city: {legs}; one hotel per city, \
consecutive nights).
Hotels:
{hotels}
Meals provided free of charge: {meals}.

Question: what is the total amount to reimburse on claim EC-{claim} (lodging plus M&IE), in euros?
End your response with a final line `ANSWER: <amount>` giving the exact amount in euros as a decimal number \
without a currency sign, e.g. `ANSWER: 1234.50`."""


# ---------------------------------------------------------------- config change log with rollbacks

SERVICES = ["auth", "billing", "catalog", "checkout", "inventory", "ledger", "notify", "search", "shipping",
            "profile", "pricing", "gateway", "reports", "media"]
CONFIG_KEYS = {"timeout_ms": list(range(1000, 9001, 250)), "max_connections": list(range(50, 801, 10)),
               "retry_limit": list(range(0, 9))}
REASONS = ["latency spike on dashboards", "capacity test", "vendor SLA alignment", "INC-{n} mitigation",
           "load-test follow-up", "per CAB ticket CHG-{n}", "cost review", "error budget burn", "canary result",
           "customer escalation ESC-{n}", "tuning after failover drill", "requested by on-call"]


def config_rollbacks(rng: ItemRng) -> Generated:
    """Effective production values of one key for six services at a moment inside a log of layered changes."""
    services = rng.sample(SERVICES, 6)
    groups = dict(zip(services, ["edge"] * 3 + ["core"] * 3))
    rng.shuffle(services)
    target = rng.choice(["timeout_ms", "max_connections"])
    keys = list(CONFIG_KEYS)
    stacks: dict[tuple[str, str, str], list[tuple[str, int | None]]] = {}   # (env, scope, key) -> [(change, value)]
    scopes = ["global", "group:edge", "group:core"] + [f"service:{s}" for s in sorted(services)]
    for env in ("production", "staging"):
        for scope in scopes:
            for key in keys:
                if scope == "global" or rng.randint(1, 5) <= 2:
                    stacks[env, scope, key] = [("baseline", rng.choice(CONFIG_KEYS[key]))]

    def effective(env, service, key):
        for scope in (f"service:{service}", f"group:{groups[service]}", "global"):
            history = stacks.get((env, scope, key))
            if history and history[-1][1] is not None:
                return history[-1][1]
        raise AssertionError("global always holds a value")

    snapshot = "\n".join(f"  {env:<10}  {scope:<18}  " + "  ".join(
        f"{key}={stacks[env, scope, key][0][1]}" for key in keys if (env, scope, key) in stacks)
        for env in ("production", "staging") for scope in scopes
        if any((env, scope, key) in stacks for key in keys))
    authors = [f"{rng.choice('abcdefghjkmnprstw')}.{name.lower()}" for name in rng.sample(SURNAMES, 6)]
    first = rng.randint(300, 700)
    minute, lines, answer = 6 * 60 + rng.randint(0, 50), [], None
    stop = rng.randint(52, 62)
    for n in range(74):
        if n == stop:  # the moment asked about falls strictly between two entries
            asked_at, answer = minute + 1, [effective("production", s, target) for s in services]
            minute += 2
        cid = f"C-{first + n}"
        minute += rng.randint(3, 11)
        env = rng.weighted_choice(["production", "staging"], [7, 3])
        key = target if rng.randint(1, 100) <= 55 else rng.choice(keys)
        failed = rng.randint(1, 10) == 1
        tops = [(s, c) for s, h in stacks.items() if s[0] == env and len(h) > 1 for c in [h[-1][0]]]
        action = rng.weighted_choice(["set", "unset", "rollback", "note"], [55, 12, 22 if tops else 0, 11])
        scope = rng.weighted_choice(scopes, [4, 3, 3] + [2] * 6)
        if action == "unset" and (scope == "global" or stacks.get((env, scope, key), [(0, None)])[-1][1] is None):
            action = "set"
        reason = rng.choice(REASONS).format(n=rng.randint(1000, 9999))
        if action == "note":
            text = f"RESTART {rng.choice(scopes[3:])}"
        elif action == "rollback":
            stack, undone = rng.choice(tops)
            text = f"ROLLBACK {undone}"
            if not failed:
                stacks[stack].pop()
        else:
            value = None if action == "unset" else rng.choice(CONFIG_KEYS[key])
            text = f"UNSET {scope} {key}" if value is None else f"SET {scope} {key} = {value}"
            if not failed:
                stacks.setdefault((env, scope, key), []).append((cid, value))
        status = "FAILED (validation error, nothing applied)" if failed and action != "note" else "applied"
        lines.append(f"{cid}  {minute // 60:02d}:{minute % 60:02d}  {env:<10}  {rng.choice(authors):<13}  "
                     f"{text:<40}  {status}; {reason}")
    day = dt.date(2025, 1, 1) + dt.timedelta(rng.randint(0, 1000))
    prompt = CONFIG_PROMPT.format(day=_day(day), snapshot=snapshot, log="\n".join(lines), key=target,
                                  edge=", ".join(s for s in sorted(services) if groups[s] == "edge"),
                                  core=", ".join(s for s in sorted(services) if groups[s] == "core"),
                                  at=f"{asked_at // 60:02d}:{asked_at % 60:02d}", services=", ".join(services))
    return _exact(prompt, ", ".join(map(str, answer)), "list")


CONFIG_PROMPT = """You are on call. Below are the configuration baseline and the complete change log for \
{day}. Configuration is layered, and staging and production are entirely separate.

How the configuration system works:
1. A service's effective value for a key is its service-level setting if one exists; otherwise the setting of \
its group; otherwise the global setting. Groups: edge = {edge}; core = {core}.
2. SET creates or replaces the setting at that level; UNSET removes the setting at that level (the next level \
down then shows through).
3. ROLLBACK C-n restores, at the level and key that change C-n touched, exactly what was there immediately \
before C-n: the previous value, or no setting at all if C-n created it, or the removed setting if C-n was an \
UNSET.
4. Entries marked FAILED changed nothing. RESTART entries change no configuration.
5. Entries take effect at the time shown; the log is in time order.

Baseline at 00:00 (settings not listed do not exist):
{snapshot}

Change log:
{log}

Question: at {at} that day, what was the effective production value of {key} for each of these services: \
{services}?
End your response with a final line `ANSWER: <v1>, <v2>, <v3>, <v4>, <v5>, <v6>`: the six integer values, \
comma-separated, in exactly the service order of the question."""


# ---------------------------------------------------------------- grant panel transcript and fund rules

DEPARTMENTS = ["Chemistry", "History", "Linguistics", "Physics", "Geography", "Economics", "Zoology", "Music",
               "Sociology", "Mathematics", "Archaeology", "Psychology"]
CODENAMES = ["TIDEMARK", "LANTERN", "HOLLOWAY", "QUARRY", "SEXTANT", "MERIDIAN", "BRAMBLE", "CINDER", "OSPREY",
             "KESTREL", "FATHOM", "GRANARY", "LODESTAR", "PALISADE", "RUNNEL", "THRESHOLD", "WICKET", "ZEPHYR"]
SAYINGS = ["I scored it {s}.", "{s} from me.", "I'm at {s}.", "My score is {s}.", "I gave it {s}.",
           "I landed on {s}."]
REMARKS = ["The methods are careful but the timeline is optimistic.", "The budget justification is thin.",
           "Pilot data are convincing.", "The dissemination plan needs work.", "Very clearly written.",
           "I worry about recruitment.", "Good value for the amount asked.", "The ethics section is solid.",
           "The literature review misses the last five years.", "Ambitious, perhaps too ambitious.",
           "The partners' letters of support are strong.", "The work packages overlap.",
           "It builds sensibly on their earlier results.", "The risk register is a single line."]


def _fund(props, rules, budget, cap, floor, bonus, window, year, strict=True):
    """Funding order under the rules; `rules` lists the traps honoured (all of them for the key)."""
    ranked = []
    for p in props:
        scores = [v for r, v in (p["true"] if "corrections" in rules else p["said"]).items()
                  if not ("strikes" in rules and r in p["struck"])]
        early = year - p["phd"] <= window and not ("active" in rules and p["active"])
        amount = p["final"] if "trims" in rules else p["ask"]
        ranked.append((-(Fraction(sum(scores), len(scores)) + (bonus if early else 0)), amount, p["no"], p))
    funded, remaining, by_dept = [], budget, {}
    for negative, amount, _, p in sorted(ranked, key=lambda r: r[:3]):
        if ("withdrawals" in rules and p["withdrawn"]) or -negative < floor or amount > remaining:
            continue
        if "caps" in rules and by_dept.get(p["dept"], 0) + amount > cap:
            continue
        funded.append(p["id"])
        remaining -= amount
        by_dept[p["dept"]] = by_dept.get(p["dept"], 0) + amount
    return funded


def grant_panel(rng: ItemRng) -> Generated:
    """Which proposals a fund's rules select, from a panel transcript full of corrections, strikes and asides."""
    traps = {"corrections", "strikes", "active", "trims", "withdrawals", "caps"}
    while True:  # redraw until the traps bite: naive readings must give a different answer
        year = rng.randint(2025, 2031)
        names = rng.sample(SURNAMES, 22)
        chair, panel, pis = names[0], names[1:6], names[6:]
        depts = rng.sample(DEPARTMENTS, 4)
        window, bonus = rng.choice([5, 6, 7, 8]), rng.choice([Fraction(1, 2), Fraction(1)])
        floor = rng.choice([Fraction(6), Fraction(13, 2)])
        props = []
        for n, number in enumerate(rng.sample(range(100, 1000), 16)):
            scores = dict(zip(rng.sample(panel, 3), [rng.randint(4, 10) for _ in range(3)]))
            ask = 5000 * rng.randint(8, 40)
            props.append({"id": f"G-{number}", "no": number, "pi": pis[n], "dept": rng.choice(depts), "ask": ask,
                          "final": ask, "phd": year - rng.randint(2, 14), "active": rng.randint(1, 4) == 1,
                          "true": scores, "said": dict(scores), "struck": set(), "withdrawn": False,
                          "project": CODENAMES[n]})
        late: list[tuple[int, str]] = []    # (presentation slot after which it is said, text)
        for p in rng.sample(props, 3):
            p["final"] = max(20000, p["ask"] - 5000 * rng.randint(2, 8))
        fixed = rng.sample(props, 4)  # two corrected and two struck, never the same proposal
        for p in fixed[:2]:
            r = rng.choice(list(p["true"]))
            p["said"][r] = rng.choice([v for v in range(3, 11) if v != p["true"][r]])
            late.append((rng.randint(props.index(p), len(props)),
                         f"{r}: Correction for G-{p['no']}: I said {p['said'][r]} "
                         f"earlier, but my sheet says {p['true'][r]}. Please use {p['true'][r]}.\nCHAIR: Noted."))
        for p in fixed[2:]:
            r = rng.choice(list(p["true"]))
            p["struck"].add(r)
            late.append((rng.randint(props.index(p), len(props)),
                         f"{r}: I have to declare a conflict on G-{p['no']}: the PI "
                         "co-authored my last paper. Please strike my score for it.\nCHAIR: Struck; that proposal is "
                         "averaged over the remaining scores."))
        gone = rng.choice(props)
        gone["withdrawn"] = True
        late.append((len(props), f"CHAIR: The office tells me G-{gone['no']} was withdrawn by the applicant this "
                                  "morning."))
        budget = 10000 * round(Fraction(42, 100) * sum(p["final"] for p in props) / 10000)
        cap = 10000 * round(Fraction(rng.randint(30, 40), 100) * budget / 10000)
        args = (budget, cap, floor, bonus, window, year)
        answer = _fund(props, traps, *args)
        naive = [_fund(props, traps - {t}, *args) for t in sorted(traps)]
        if len(answer) >= 3 and _fund(props, set(), *args) != answer and sum(n != answer for n in naive) >= 3:
            break
    lines = [f"Research Fund panel, {year} round. Present: {chair} (chair); {', '.join(panel)}."]
    aside = rng.sample(range(len(props)), 4)
    for slot, p in enumerate(props):
        lines.append(f"\nCHAIR: Next, G-{p['no']}: Dr {p['pi']} ({p['dept']}, PhD {p['phd']}) asks for "
                     f"${p['ask']:,} for project {p['project']}.")
        for r, s in p["said"].items():
            lines.append(f"{r}: {' '.join(rng.sample(REMARKS, rng.randint(1, 2)))} {rng.choice(SAYINGS).format(s=s)}")
        if p["final"] != p["ask"]:
            lines.append(f"CHAIR: The applicant has agreed in writing to drop the conference line, so the request "
                         f"is now ${p['final']:,}.")
        r = rng.choice(list(p["said"]))
        if p["active"]:
            lines.append(f"{r}: Note that Dr {p['pi']} still holds an active award from this fund, running until "
                         f"{year + 1}.")
        elif slot in aside[:2]:
            lines.append(f"{r}: Dr {p['pi']} had an award from us in {year - 5}; it closed in {year - 3}.")
        elif slot == aside[2]:
            lines.append(f"{r}: If they had added a data plan I would have gone to 10, but as it stands my score "
                         f"stays at {p['said'][r]}.\nCHAIR: Scores stand as given.")
        elif slot == aside[3]:
            lines.append(f"{r}: Could we fund this at half the amount?\nCHAIR: No; awards are all or nothing.")
        lines += [text for when, text in late if when == slot]
    lines.append("\nCHAIR: Any other business before the office runs the ranking?")
    lines += [text for when, text in late if when == len(props)]
    lines.append("CHAIR: Then the office will apply the rules to the scores as they now stand. Thank you all.")
    prompt = GRANT_PROMPT.format(year=year, window=window, since=year - window, floor=f"{float(floor):g}",
                                 bonus="1 point" if bonus == 1 else "0.5 points",
                                 budget=f"{budget:,}", cap=f"{cap:,}", transcript="\n".join(lines))
    return _exact(prompt, ", ".join(answer), "list")


GRANT_PROMPT = """You run the office of a research fund. Apply the fund's rules to the panel meeting transcript \
below and work out which proposals are funded.

Fund rules, {year} round:
1. A proposal's panel score is the mean of its reviewers' scores, leaving out any score struck for a conflict of \
interest. If a reviewer corrects a score during the meeting, the corrected score is used.
2. Early-career bonus: add {bonus} to the panel score if the principal investigator's PhD was awarded no \
more than {window} years before {year} (in {since} or later), unless the investigator currently holds an active \
award from this fund. Nothing else affects early-career status.
3. Proposals are ranked by adjusted score (panel score plus any bonus), highest first; ties go to the smaller \
requested amount, then to the lower proposal number. Withdrawn proposals are not ranked.
4. The requested amount is the latest amount agreed with the applicant during the meeting.
5. Going down the ranking, a proposal is funded at its full requested amount if (a) its adjusted score is at \
least {floor}, (b) the amount fits within what remains of the ${budget} budget, and (c) its department's total \
awards, including this one, would not exceed ${cap}. Otherwise it is skipped and the next one is considered. \
There are no partial awards.

Transcript:
{transcript}

Question: which proposals are funded, in the order in which the procedure of rule 5 funds them?
End your response with a final line `ANSWER: <ids>` listing the funded proposal numbers in funding order, \
comma-separated, e.g. `ANSWER: G-101, G-202, G-303`."""


# ---------------------------------------------------------------- distribution rights under superseding documents

OWNERS = ["Kestrel Pictures", "Halvard Films", "Marlowe Studios", "Northlight Features"]
DISTRIBUTORS = ["Arbor Media", "Blue Quay Releasing", "Cobalt Screen", "Dunlin Distribution", "Eastwind Films",
                "Foxglove Media", "Granite Releasing", "Harbour Lights"]
TERRITORIES = ["Portugal", "Austria", "Norway", "Greece", "Ireland", "Poland", "Chile", "Finland", "Hungary",
               "Belgium", "Denmark", "Mexico"]
TRAPS = ("signed", "notice", "future", "revival", "expiry")


def _month(d: dt.date, months: int) -> dt.date:
    """The first day of the month `months` after d's month."""
    index = d.year * 12 + d.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def _grants(docs, territory, today, rules=TRAPS):
    """The binding grants of a territory as (effective date, document index, agreement id), oldest first."""
    binding = [(n, d) for n, d in enumerate(docs) if d["signed"] or "signed" not in rules]
    grants = [(d["start"], n, d["id"]) for n, d in binding if d["kind"] == "agreement" and territory in d["terr"]]
    grants += [(d["eff"], n, d["of"]) for n, d in binding if d["kind"] == "add" and d["terr"] == territory]
    return sorted(g for g in grants if g[0] <= today or "future" not in rules)


def _holder(docs, territory, today, rules=TRAPS):
    """Who holds a territory on `today`; `rules` lists the traps honoured (all of them for the key)."""
    binding = [d for d in docs if d["signed"] or "signed" not in rules]
    agreements = {d["id"]: d for d in docs if d["kind"] == "agreement"}

    def in_force(start, agreement):
        end = max([agreements[agreement]["end"]] + [d["end"] for d in binding
                                                    if d["kind"] == "extend" and d["of"] == agreement])
        if today > end and "expiry" in rules:
            return False
        for d in binding:
            if d["of" if d["kind"] != "agreement" else "id"] != agreement:
                continue
            if d["kind"] == "remove" and d["terr"] == territory and start < d["eff"] <= today:
                return False
            if d["kind"] == "terminate":
                notice_end = d["given"] + dt.timedelta(agreements[agreement]["notice"])
                if (max(d["stated"], notice_end) if "notice" in rules else d["stated"]) < today:
                    return False
        return True

    for start, _, agreement in reversed(_grants(docs, territory, today, rules)):
        if in_force(start, agreement):
            return agreements[agreement]["dist"]
        if "revival" in rules:  # a later grant ended the earlier ones for good
            break
    return "none"


def distribution_rights(rng: ItemRng) -> Generated:
    """Who holds each of five territories on a date, under agreements, amendments, notices, drafts and emails."""
    while True:  # redraw until several traps change the answer
        today = dt.date(rng.randint(2026, 2031), rng.randint(3, 11), rng.randint(8, 22))
        owner, dists, terrs = rng.choice(OWNERS), rng.sample(DISTRIBUTORS, 6), rng.sample(TERRITORIES, 10)
        docs: list[dict] = []

        def agreement(dist, territories, start, end):
            docs.append({"kind": "agreement", "id": len(docs), "dist": dist, "terr": territories, "start": start,
                         "end": end, "notice": rng.choice([30, 60, 90]), "signed": True,
                         "date": start - dt.timedelta(rng.randint(10, 45)), "fee": 5000 * rng.randint(4, 30)})
            return docs[-1]

        def amend(kind, of, signed=True, **fields):
            date = max(of["date"] + dt.timedelta(20), fields.get("eff", today) - dt.timedelta(rng.randint(15, 60)))
            docs.append({"kind": kind, "of": of["id"], "signed": signed, "date": min(date, today - dt.timedelta(2)),
                         **fields})

        base = [agreement(dists[k], terrs[3 * k:3 * k + 3], _month(today, -rng.randint(20, 30)),
                          _month(today, rng.randint(8, 30)) - dt.timedelta(1)) for k in range(3)]
        base[2]["end"] = _month(today, -rng.randint(1, 6)) - dt.timedelta(1)   # one term has run out
        amend("extend", base[2], signed=rng.randint(1, 2) == 1, end=_month(today, rng.randint(6, 20)) - dt.timedelta(1))
        late = agreement(dists[3], rng.sample(terrs[:9], 2), _month(today, -rng.randint(4, 12)),
                         _month(today, rng.randint(12, 30)) - dt.timedelta(1))
        agreement(dists[4], rng.sample(terrs, 2), _month(today, rng.randint(1, 5)), _month(today, 40) - dt.timedelta(1))
        agreement(dists[5], [terrs[9], rng.choice(terrs[:9])], _month(today, -rng.randint(2, 18)),
                  _month(today, rng.randint(6, 30)) - dt.timedelta(1))
        removed_from = rng.choice(base)
        removed = rng.choice(removed_from["terr"])
        amend("remove", removed_from, terr=removed, eff=_month(today, rng.randint(-10, 4)))
        for of, signed in [(rng.choice(base[:2]), True), (rng.choice(base), False)]:
            amend("add", of, signed=signed, terr=rng.choice([t for t in terrs if t not in of["terr"] + [removed]]),
                  eff=_month(today, -rng.randint(1, 14)))
        amend("fee", rng.choice([*base, late]), fee=5000 * rng.randint(4, 30), eff=_month(today, -rng.randint(1, 9)))
        for target, past in [(rng.choice(base[:2]), False), (late if rng.randint(1, 2) == 1 else base[0], True)]:
            wait = rng.randint(target["notice"] + 5, target["notice"] + 120) if past else rng.randint(3, 25)
            given = max(target["date"] + dt.timedelta(20), today - dt.timedelta(wait))
            docs.append({"kind": "terminate", "of": target["id"], "signed": True, "date": given, "given": given,
                         "stated": given + dt.timedelta(rng.randint(1, 20)), "by": rng.choice(["owner", "dist"])})
        docs.append({"kind": "add", "of": rng.choice([*base, late])["id"], "signed": False, "email": True,
                     "terr": rng.choice(terrs), "eff": _month(today, -rng.randint(1, 6)),
                     "date": today - dt.timedelta(rng.randint(60, 200))})
        for of, claim in [(rng.choice(base), False), (rng.choice([*base, late]), True)]:  # letters that change nothing
            docs.append({"kind": "note", "of": of["id"], "signed": False, "claim": claim, "terr": rng.choice(terrs),
                         "date": today - dt.timedelta(rng.randint(10, 300))})
        docs.sort(key=lambda d: d["date"])
        for a, b in zip(docs, docs[1:]):  # distinct dates, so "the document dated later" always decides
            b["date"] = max(b["date"], a["date"] + dt.timedelta(1))
        first = rng.randint(11, 80)
        names = {d["id"]: f"DA-{first + n}" for n, d in enumerate(x for x in docs if x["kind"] == "agreement")}
        for d in docs:
            d.update({k: names[d[k]] for k in ("id", "of") if k in d})
        asked = rng.sample(terrs, 5)
        answer = [_holder(docs, t, today) for t in asked]
        naive = [[_holder(docs, t, today, tuple(r for r in TRAPS if r != trap)) for t in asked] for trap in TRAPS]
        notice = {d["id"]: d["notice"] for d in docs if d["kind"] == "agreement"}
        boundaries = [d[k] for d in docs for k in ("start", "end", "eff", "stated") if k in d] + [
            d["given"] + dt.timedelta(notice[d["of"]]) for d in docs if d["kind"] == "terminate"]
        starts = [[g[0] for g in _grants(docs, t, today, ())] for t in terrs]
        if sum(n != answer for n in naive) >= 3 and answer.count("none") <= 3 \
                and all(abs((b - today).days) >= 3 for b in boundaries) \
                and all(len(set(g)) == len(g) for g in starts) and max(d["date"] for d in docs) < today:
            break
    return _exact(_rights_prompt(docs, owner, today, asked), ", ".join(answer), "list")


def _rights_prompt(docs: list[dict], owner: str, today: dt.date, asked: list[str]) -> str:
    """Render the document bundle in date order, with the general terms and the question."""
    dist = {d["id"]: d["dist"] for d in docs if d["kind"] == "agreement"}
    blocks = []
    for d in docs:
        if d["kind"] == "agreement":
            blocks.append(
                f"DISTRIBUTION AGREEMENT {d['id']}, signed {_day(d['date'])} by {owner} and {d['dist']}\n"
                f"1. Grant. {owner} grants {d['dist']} the exclusive right to distribute its catalogue in "
                f"{', '.join(d['terr'])} from {_day(d['start'])} to {_day(d['end'])} inclusive.\n"
                f"2. Fees. {d['dist']} pays a minimum guarantee of ${d['fee']:,} per territory per year, quarterly.\n"
                f"3. Termination. Either party may terminate this agreement by written notice. Termination takes "
                f"effect on the date stated in the notice or {d['notice']} days after the notice is given, "
                f"whichever is later.\n4. Changes. This agreement can be changed only by an amendment signed by "
                f"both parties.\n5. Reporting. {d['dist']} reports receipts monthly; {owner} may audit once a year.\n"
                f"6. Law. This agreement is governed by the law of England and Wales.")
        elif d.get("email"):
            blocks.append(f"EMAIL, {_day(d['date'])}, from the head of sales at {owner} to {dist[d['of']]}\n"
                          f"\"Following our call: we are happy for you to take {d['terr']} from {_day(d['eff'])} "
                          f"under {d['of']}. Legal will paper it in due course.\"")
        elif d["kind"] == "note" and d["claim"]:
            blocks.append(f"LETTER, {_day(d['date'])}, from {dist[d['of']]} to {owner}\n\"Whatever the paperwork "
                          f"says, we consider ourselves entitled to distribute in {d['terr']} and we reserve all our "
                          "rights.\"")
        elif d["kind"] == "note":
            blocks.append(f"EMAIL, {_day(d['date'])}, from {dist[d['of']]} to {owner}\n\"We are planning a festival "
                          f"release in {d['terr']} next spring and would welcome a larger marketing contribution. "
                          "Can we discuss at the market?\"")
        elif d["kind"] == "terminate":
            party = owner if d["by"] == "owner" else dist[d["of"]]
            blocks.append(f"NOTICE OF TERMINATION under clause 3 of {d['of']}, given by {party} on "
                          f"{_day(d['given'])}\n\"We hereby terminate {d['of']}. The agreement will end on "
                          f"{_day(d['stated'])}.\"")
        else:
            status = "signed by both parties" if d["signed"] else "DRAFT, circulated for comment, not signed"
            change = {"extend": lambda: f"The end date in clause 1 is replaced by {_day(d['end'])}.",
                      "fee": lambda: f"With effect from {_day(d['eff'])}, the minimum guarantee in clause 2 is "
                                     f"${d['fee']:,} per territory per year. No other term changes.",
                      "add": lambda: f"With effect from {_day(d['eff'])}, {d['terr']} is added to the territories "
                                     "in clause 1.",
                      "remove": lambda: f"With effect from {_day(d['eff'])}, {d['terr']} is removed from the "
                                        "territories in clause 1."}[d["kind"]]()
            blocks.append(f"AMENDMENT TO {d['of']} ({dist[d['of']]}), dated {_day(d['date'])}, {status}\n{change}")
    return RIGHTS_PROMPT.format(owner=owner, documents="\n\n".join(blocks), today=_day(today),
                                asked=", ".join(asked))


RIGHTS_PROMPT = """You are in the legal team of {owner}, a film studio. Below is the complete bundle of \
documents about the distribution rights to its catalogue, in date order.

General terms (they govern every document in the bundle):
1. Rights change only through signed agreements, amendments signed by both parties, and notices of termination. \
Nothing else changes them: not drafts, emails or letters.
2. A grant runs from its effective date (an agreement's start date, or the effective date of an amendment adding \
a territory) to the agreement's end date inclusive, as replaced by any signed amendment, unless the territory is \
removed from that agreement or the agreement terminates first.
3. A grant of a territory ends every earlier grant of that same territory, to anyone, on the new grant's \
effective date, permanently: an earlier grant does not revive when the later one ends.
4. A terminated agreement ends on the later of the date stated in the notice and the end of the notice period \
of its clause 3, counted from the day the notice was given.
5. A territory can have no distributor at all.

{documents}

Question: today is {today}. Who holds the distribution right in each of these territories today: {asked}?
End your response with a final line `ANSWER: <holder1>, <holder2>, <holder3>, <holder4>, <holder5>`: for each \
territory in the order of the question, the distributor's name exactly as written in the documents, or `none` \
if no one holds the right."""
