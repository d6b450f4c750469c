"""Context reading and synthesis: long generated documents whose answer combines scattered, amended facts.

Every generator builds the true facts first, renders them (with the errors, retractions and distractors a
real document set carries) and computes the key from the facts, never from the text (amendment 001 §4).
"""

from __future__ import annotations

import datetime as dt
import statistics
from fractions import Fraction

from esac_kit.rng import ItemRng
from esac_kit.schemas import ExactKey, Generated

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
SURNAMES = ["Okafor", "Lindqvist", "Moreau", "Tanaka", "Brennan", "Castillo", "Novak", "Haddad", "Ferreira",
            "Kowalski", "Osei", "Varga", "Delacroix", "Ishikawa", "Quinlan", "Abernathy", "Sorensen", "Mbeki",
            "Petrov", "Rahman", "Whitlock", "Zielinski", "Achterberg", "Nakamura"]


def _exact(prompt: str, answer: str, answer_type: str, **measured: float) -> Generated:
    """Package a prompt and its computed answer with a reference response that scores 1 and the measured
    difficulty: the generator's own figures plus the prompt's size in tokens (characters / 4)."""
    return Generated(prompt=prompt, key=ExactKey(answer=answer, answer_type=answer_type),
                     reference=f"Working omitted.\nANSWER: {answer}",
                     difficulty={**measured, "context_tokens": len(prompt) // 4})


def _day(d: dt.date) -> str:
    """A date in words, independent of the locale (strftime's month names are not)."""
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


# ---------------------------------------------------------------- inventory ledger

WAREHOUSES = ["Ashford", "Brackley", "Corran", "Dunmore", "Elstow", "Fenwick", "Garth", "Hollins", "Keswick"]
ARTICLES = ["cabinet hinge, soft-close, 35 mm", "drawer runner, 450 mm, pair", "shelf pin, nickel, bag of 50",
            "door handle, brushed steel, 128 mm", "plinth clip, grey", "cam lock, 15 mm, bag of 20",
            "worktop joint bolt, 150 mm", "LED strip driver, 30 W", "gas strut, 100 N", "bin liner frame, 60 cm",
            "corner bracket, zinc, 40 mm", "magnetic catch, white"]
SUPPLIERS = ["Norland Supply", "Brightwater Components", "Hexton Hardware", "Saxby & Cole", "Marrick Industrial",
             "Tolland Fixings"]
CUSTOMERS = ["Pellow Kitchens", "Arden Joinery", "Whitecross Interiors", "Baylis Build", "Conway Fitouts",
             "Redfern Homes", "Oakhurst Trade Counter", "Lumley Cabinets", "Stroud Renovations"]
LEDGER_NOTES = [
    "Reorder point for {sku} at {wh} raised to {n} units after the monthly review.",
    "{wh} dock {d} closed for resurfacing until Friday; inbound rerouted to dock {e}.",
    "Unit price of {sku} updated in the catalogue; no stock movement.",
    "Supplier ASN received for {sku} ({n} units expected next week); goods not yet arrived.",
    "Customer order for {sku} placed on back-order at {wh}; nothing picked.",
    "Bin relabelling at {wh}: {sku} moved from aisle {d} to aisle {e} within the same warehouse.",
    "Forklift FL-{n} at {wh} out of service; picking of {sku} slowed, no stock movement.",
    "Quality hold lifted on supplier lot L{n} of {sku}: the lot was already booked, nothing changes.",
    "Stock-take team briefed at {wh}; counts to follow on the usual rota.",
    "Carrier claim CL-{n} opened for a late delivery to {wh}; no units affected.",
]
CARRIERS = ["Dalton Freight", "Orbit Haulage", "Kerr Logistics", "Pryce Transport"]


def inventory_ledger(rng: ItemRng, *, entries: int = 1700, target_share: int = 11, asked: int = 8) -> Generated:
    """Closing sellable stock of two look-alike SKUs at several warehouses after a month of movements and fixes."""
    whs = rng.sample(WAREHOUSES, 5)
    month_index = rng.randint(0, 11)
    month, year = MONTHS[month_index], rng.randint(2025, 2030)
    prefix = rng.choice(["KT", "VX", "RB", "MQ", "LN", "PZ"])
    digits = rng.sample("123456789", 4)
    look = [digits, digits[:1] + [digits[2], digits[1]] + digits[3:], digits[:2] + [digits[3], digits[2]]]
    skus = [f"{prefix}-{''.join(d)}" for d in look]            # the target, the code relabelled into it, a decoy
    others = rng.sample([p for p in ["HD", "WF", "CT", "GS", "BX"]], 4)
    skus += [f"{p}-{rng.randint(1000, 9999)}" for p in others]
    target, old, decoy = skus[:3]
    articles = dict(zip(skus, [ARTICLES[0]] * 1 + rng.sample(ARTICLES[1:], len(skus) - 1)))
    articles[old] = articles[target] + " (old label)"
    clerks = [f"{rng.choice('abcdefghjkmnprstw')}.{s.lower()}" for s in rng.sample(SURNAMES, 7)]
    stock = {(s, w): rng.randint(10, 80) for s in skus for w in whs}
    opening = dict(stock)
    prov = {cell: set() for cell in stock}             # entry numbers a cell's current value rests on
    links: dict[int, set[int]] = {}                     # entry -> the fixes (corrections, voids) aimed at it
    lines: list[tuple[int, str]] = []                   # (day, text), numbered in order of posting
    base = rng.randint(30000, 80000)
    later: list[tuple[int, int, object]] = []          # (due step, tiebreak, callable posting it)
    transit: list[list] = []                            # [due step, id, sku, src, dst, qty, out no.]
    quarantine: list[list] = []                         # [due step, sku, wh, qty, return no.]
    counted: set[tuple[str, str]] = set()
    steps = entries * 4 // 5
    relabel_step = rng.randint(steps * 2 // 5, steps * 3 // 5)
    relabelled = False
    days = 26

    def post(day: int, text: str) -> int:
        lines.append((day, text))
        return base + len(lines) - 1

    tickets = iter(range(10 ** 9))

    def schedule(due: int, action) -> None:
        later.append((due, next(tickets), action))

    def live(sku: str) -> str:
        return target if relabelled and sku == old else sku

    def add(cell, qty, *numbers):
        stock[cell] += qty
        prov[cell].update(numbers)
        assert stock[cell] >= 0

    def fixed(number: int, *fixes: int):
        links.setdefault(number, set()).update(fixes)

    def clock(step: int) -> str:
        within = step * days % steps / steps            # where the step falls inside its day, from 0 to 1
        minute = 7 * 60 + 10 + int(within * 600)
        return f"{minute // 60:02d}:{minute % 60:02d}"

    for step in range(steps):
        day = 1 + step * days // steps
        for item in sorted(x for x in later if x[0] <= step):
            later.remove(item)
            item[2](day)
        while transit and transit[0][0] <= step:
            _, tid, sku, src, dst, qty, out = transit.pop(0)
            lost = min(qty - 1, rng.choice([0, 0, 0, rng.randint(1, 4)]))
            number = post(day, f"TRANSFER-IN   {sku:<8} {dst:<9} +{qty - lost:<5} {tid} from {src}, carrier "
                               f"{rng.choice(CARRIERS)}" + (f"; {lost} damaged, written off in transit" if lost
                                                            else "; received in full"))
            add((live(sku), dst), qty - lost, number, out)
        while quarantine and quarantine[0][0] <= step:
            _, sku, wh, qty, ref = quarantine.pop(0)
            ok = rng.randint(0, qty)
            number = post(day, f"QUARANTINE    {sku:<8} {wh:<9} +{ok:<5} release from #{ref}: {ok} of {qty} "
                               "passed inspection, moved to sellable stock")
            add((live(sku), wh), ok, number, ref)
        if step == relabel_step:
            relabelled = True
            number = post(day, f"NOTICE        Product data: from this entry on, code {old} is retired and relabelled "
                               f"{target} (same article). The sellable stock booked under {old} at every warehouse is "
                               f"added to {target} at this point, and every later posting keyed {old} (including "
                               f"transfers and quarantine releases of {old} units) counts as {target}.")
            for w in whs:
                add((target, w), stock[old, w], number, *prov[old, w])
                stock[old, w], prov[old, w] = 0, set()
            continue
        weights = [target_share, 0 if relabelled else 9, target_share] + [12] * 4
        sku = rng.weighted_choice(skus, weights)
        true_sku = live(sku)
        wh = rng.choice(whs)
        kind = rng.weighted_choice(["rec", "ship", "xfer", "ret", "off", "count", "note", "park"],
                                   [20, 30, 9, 8, 4, 4, 8, 4])
        if kind in ("ship", "xfer", "off", "park") and stock[true_sku, wh] < 8:
            kind = "rec"
        if kind == "count" and (true_sku, wh) in counted:
            kind = "note"
        if kind == "park" and sku == old:
            kind = "rec"                       # a parked entry of the retired code would straddle the notice
        if relabelled and sku == target and kind in ("rec", "ship") and rng.randint(1, 3) == 1:
            sku = old                          # keyed with the retired label: counts as the target by the notice
        stamp = clock(step)
        if kind == "note":
            post(day, "NOTE          " + rng.choice(LEDGER_NOTES).format(
                sku=rng.choice(skus), wh=wh, n=rng.randint(10, 99), d=rng.randint(1, 6), e=rng.randint(7, 12)))
            continue
        if kind == "count":
            counted.add((true_sku, wh))
            true = max(0, stock[true_sku, wh] - rng.choice([0, 1, 2, 3, 5, -1, -2]))
            keyed = true
            if rng.randint(1, 4) == 1:
                keyed = int(str(true)[::-1]) if true > 9 and true % 11 and true % 10 else true + 10
            number = post(day, f"CYCLE COUNT   {sku:<8} {wh:<9} counted {keyed}; book quantity set to the count "
                               f"(counter {rng.choice(clerks)}, {stamp})")
            book, history = stock[true_sku, wh], prov[true_sku, wh]
            stock[true_sku, wh], prov[true_sku, wh] = true, {number}
            if keyed == true and sku != old and book >= true and rng.randint(1, 3) == 1:
                # a count later voided: the book runs on from before it, as if it had never been taken; a cell is
                # counted once, so nothing else resets the cell in between and the difference simply comes back
                def void_count(d, n=number, c=(true_sku, wh), back=book - true, was=history):
                    add(c, back, *was)
                    fixed(n, post(d, f"VOID          re #{n}: count taken in the wrong bin; the count never "
                                     "happened"))
                schedule(step + rng.randint(5, 120), void_count)
            if keyed != true:
                schedule(step + rng.randint(2, 40), lambda d, n=number, k=keyed, t=true: fixed(n, post(
                    d, f"CORRECTION    re #{n}: quantity should read {t} (keyed as {k}); recount by supervisor")))
            continue
        if kind == "xfer":
            qty = rng.randint(2, max(2, stock[true_sku, wh] // 2))
            dst = rng.choice([w for w in whs if w != wh])
            tid = f"T-{base // 10 + step}"
            number = post(day, f"TRANSFER-OUT  {sku:<8} {wh:<9} -{qty:<5} {tid} to {dst}, dispatched {stamp}")
            add((true_sku, wh), -qty, number)
            transit.append([step + rng.randint(3, steps // 4), tid, sku, wh, dst, qty, number])
            transit.sort()
            continue
        if kind == "park":
            qty = rng.randint(2, max(2, stock[true_sku, wh] // 3))
            sign = rng.choice(["+", "-"])
            label = "RECEIPT" if sign == "+" else "SHIPMENT"
            number = post(day, f"{label:<13} {sku:<8} {wh:<9} {sign}{qty:<5} PARKED: awaiting approval by the "
                               f"site manager (raised by {rng.choice(clerks)})")

            def decide(d, n=number, s=true_sku, w=wh, q=qty if sign == "+" else -qty):
                if stock[s, w] + q >= 0 and rng.randint(1, 3) > 1:
                    approval = post(d, f"APPROVAL      re #{n}: approved; the parked entry takes effect now, at this "
                                       "entry's place in the ledger")
                    add((s, w), q, n, approval)
                else:
                    prov[s, w].update((n, post(d, f"REJECTION     re #{n}: not approved; the parked entry never "
                                                  "takes effect")))
            schedule(step + rng.randint(3, 60), decide)
            continue
        damaged = kind == "ret" and rng.randint(1, 3) == 1
        qty = {"rec": rng.randint(5, 60), "ret": rng.randint(1, 12), "off": rng.randint(1, 4)}.get(
            kind, rng.randint(1, max(1, stock[true_sku, wh] * 2 // 3)))
        shown = {"qty": qty, "sku": sku, "wh": wh}
        field = "none" if damaged or kind == "off" else rng.weighted_choice(["none", "qty", "sku", "wh"], [22, 4, 3, 1])
        if field == "qty":
            shown["qty"] = int(str(qty)[::-1]) if qty > 9 and qty % 11 and qty % 10 else qty + rng.choice([10, 20])
        elif field == "sku":
            shown["sku"] = rng.choice([s for s in (target, decoy) if s != true_sku]) if true_sku in (target, decoy) \
                else rng.choice(skus[3:][:2] if true_sku not in skus[3:5] else skus[5:])
        elif field == "wh":
            shown["wh"] = rng.choice([w for w in whs if w != wh])
        label = {"rec": "RECEIPT", "ship": "SHIPMENT", "ret": "RETURN", "off": "ADJUSTMENT"}[kind]
        sign = " " if damaged else {"rec": "+", "ship": "-", "ret": "+", "off": "-"}[kind]
        tail = {"rec": f"PO-{rng.randint(10000, 99999)} from {rng.choice(SUPPLIERS)}, lot L{rng.randint(1000, 9999)}",
                "ship": f"order SO-{rng.randint(10000, 99999)} for {rng.choice(CUSTOMERS)}",
                "ret": f"RMA-{rng.randint(1000, 9999)} from {rng.choice(CUSTOMERS)}, condition "
                       + ("DAMAGED, to quarantine (not sellable)" if damaged else "resellable"),
                "off": "write-off: " + rng.choice(["breakage found at picking", "water damage in aisle 3",
                                                   "missing from bin at pick", "crushed pallet"])}[kind]
        text = f"{label:<13} {shown['sku']:<8} {shown['wh']:<9} {sign}{shown['qty']:<5} {tail}"
        number = post(day, f"{text}; {rng.choice(clerks)} {stamp}")
        if damaged:
            quarantine.append([step + rng.randint(3, steps // 4), sku, wh, qty, number])
            quarantine.sort()
        else:
            add((true_sku, wh), qty if sign == "+" else -qty, number)
        if field != "none":
            true = {"qty": qty, "sku": sku if field != "sku" else true_sku, "wh": wh}[field]
            word = {"qty": "quantity", "sku": "SKU", "wh": "warehouse"}[field]
            twice = field == "qty" and rng.randint(1, 4) == 1
            wrong = shown["qty"] + rng.choice([-1, 1, 2]) if twice else None
            first = f"{word} should read {wrong if twice else true} (keyed as {shown[field]})"

            def correct(d, n=number, text=first, twice=twice, t=true, k=shown[field], w=word):
                c = post(d, f"CORRECTION    re #{n}: {text}")
                fixed(n, c)
                if twice:
                    schedule(step + rng.randint(45, 90), lambda d2: fixed(n, post(
                        d2, f"CORRECTION    re #{n}: {w} should read {t} (keyed as {k}; supersedes correction #{c})")))
            schedule(step + rng.randint(1, 40), correct)
        elif kind in ("rec", "ship") and rng.randint(1, 10) == 1:   # a correction raised in error, then voided

            def spurious(d, n=number, k=qty):
                c = post(d, f"CORRECTION    re #{n}: quantity should read {k + rng.choice([-3, 3, 9])} (keyed as {k})")
                schedule(step + rng.randint(45, 100), lambda d2: fixed(n, c, post(
                    d2, f"VOID          re #{c}: correction raised in error; #{n} stands as keyed")))
            schedule(step + rng.randint(1, 40), spurious)
        if kind in ("rec", "ship") and rng.randint(1, 10) == 1:
            dup = post(day, f"{text}; {rng.choice(clerks)} {stamp}")
            schedule(step + rng.randint(1, 30), lambda d, n=number, u=dup, c=(true_sku, wh): prov[c].update(
                (u, post(d, f"VOID          re #{u}: duplicate posting of #{n}"))))
        elif kind == "ship" and rng.randint(1, 10) == 1:
            ghost = post(day, f"SHIPMENT      {sku:<8} {wh:<9} -{rng.randint(3, 25):<5} order SO-"
                              f"{rng.randint(10000, 99999)} for {rng.choice(CUSTOMERS)}; {rng.choice(clerks)} {stamp}")
            schedule(step + rng.randint(1, 30), lambda d, u=ghost, c=(true_sku, wh): prov[c].update(
                (u, post(d, f"VOID          re #{u}: order cancelled before picking"))))
    while later:
        for item in sorted(later):
            later.remove(item)
            item[2](days + 1)
    cells = rng.sample([(target, w) for w in whs], 5) + rng.sample([(decoy, w) for w in whs], asked - 5)
    rng.shuffle(cells)
    decisive = set()
    for cell in cells:
        for n in prov[cell]:
            decisive |= {n} | links.get(n, set())
    head = "\n".join(f"  {s:<8}  {articles[s]}" for s in skus)
    opening_text = "\n".join(f"  {s:<8}  " + ";  ".join(f"{w} {opening[s, w]}" for w in whs) for s in skus)
    out, current = [], 0
    for n, (d, t) in enumerate(lines):
        if d != current:
            current = d
            out.append(f"--- day {d:02d} {month[:3]} {year} - shift lead {rng.choice(clerks)}; entries below posted "
                       "that day ---")
        out.append(f"#{base + n}  {d:02d}-{month[:3]}  {t}")
    order = "\n".join(f"  {k + 1}. {s} at {w}" for k, (s, w) in enumerate(cells))
    prompt = INVENTORY_PROMPT.format(month=month, year=year, whs=", ".join(whs), articles=head, opening=opening_text,
                                     ledger="\n".join(out), order=order,
                                     slots=", ".join(f"<q{k + 1}>" for k in range(asked)))
    return _exact(prompt, ", ".join(str(stock[c]) for c in cells), "list",
                  decisive_facts=len(decisive), ledger_entries=len(lines))


INVENTORY_PROMPT = """You are reconciling the {month} {year} stock ledger of a distributor with five warehouses \
({whs}). The ledger below is the complete export for the month, mistakes and fixes included.

Ledger rules (from the warehouse system's documentation):
1. Entries take effect in entry-number order, starting from the opening sellable balances, except where rules 7 \
and 8 say otherwise. The day separators are for reading only.
2. RECEIPT adds units to the warehouse's sellable stock; SHIPMENT and ADJUSTMENT (write-offs) remove them.
3. TRANSFER-OUT removes units from the sending warehouse when they are dispatched. TRANSFER-IN adds to the \
receiving warehouse only the units actually received; units written off in transit are gone. Units dispatched \
but not received by the end of the month are in transit and belong to neither warehouse's stock.
4. A RETURN in resellable condition adds the units to sellable stock. A DAMAGED return goes to quarantine, which \
is not sellable stock; a QUARANTINE release later moves the stated number of those units into sellable stock.
5. CYCLE COUNT sets the book quantity of that SKU at that warehouse to the counted figure at that point.
6. NOTE entries record no stock movement. A NOTICE changes product data as it states, from its own place in the \
ledger on.
7. CORRECTION re #n fixes one field of entry #n; the corrected entry counts as if it had been posted correctly in \
its original place. When several corrections fix the same field of the same entry, the one with the highest entry \
number wins.
8. VOID re #n means that entry #n has no effect at all; when #n is a CORRECTION, the entry it tried to fix stands \
as it was before that correction; when #n is a CYCLE COUNT, the book quantity is never set to that count and runs \
on from the entries before it (fixed as rule 7 says) as if the count had not been taken. A PARKED entry has no effect until an APPROVAL re it; it then takes effect at \
the APPROVAL's place in the ledger, not at its own. A REJECTION re it means it never takes effect.

Articles:
{articles}

Opening sellable balances on 1 {month} {year}:
{opening}

Ledger:
{ledger}

Question: what is the closing sellable stock at the end of {month} of each of these SKUs at each of these \
warehouses?
{order}
Work through the ledger carefully. End your response with a final line `ANSWER: {slots}`: the closing quantities \
as integers, comma-separated, in exactly the order of the numbered list above."""


# ---------------------------------------------------------------- per-diem circulars

CITIES = ["Lyon", "Porto", "Gdansk", "Ghent", "Bilbao", "Turin", "Leipzig", "Brno", "Aarhus", "Cork", "Graz",
          "Utrecht", "Tartu", "Bergen", "Lille", "Kaunas", "Split", "Malmo"]
BANDS = "ABCDE"
MEALS = ["breakfast", "lunch", "dinner"]
CIRCULAR_TOPICS = [
    ("Mileage and car hire", ["The mileage rate for private cars is EUR 0.{n} per kilometre for the first 5,000 km "
                              "in the year and EUR 0.{m} per kilometre beyond that.",
                              "Car hire is limited to category C vehicles unless three or more staff share the car.",
                              "Fuel for hired cars is reimbursed at cost against receipts; refuelling charges levied "
                              "by the hire company are not."]),
    ("Rail and air travel", ["Standard class rail remains the default for journeys under {n} hours; first class may "
                             "be booked when it costs no more than EUR {m} above standard.",
                             "Economy class is the default for flights; premium economy needs the director's prior "
                             "approval for flights over {n} hours.", "Seat selection fees are reimbursed up to "
                             "EUR {m} per flight."]),
    ("Booking and receipts", ["Bookings must be made through the corporate portal; off-portal bookings need prior "
                              "approval and are refunded only up to the portal price on the day of booking.",
                              "Receipts must be itemised; card slips alone are not accepted for lodging.",
                              "Claims must be submitted within {n} days of the return date; late claims need the "
                              "finance director's sign-off."]),
    ("Insurance and safety", ["Personal travel insurance is not reimbursable; staff are covered by the group policy "
                              "(policy number GP-{n}{m}).", "Travellers to destinations on the security watch list "
                              "must register with the duty officer before departure.",
                              "Emergency assistance is available on +44 20 7946 0{n}{m} at any hour."]),
    ("Visas and fees", ["Visa fees are reimbursed at cost, as are the photographs and courier charges they need.",
                        "Conference registration fees are paid directly by the department where possible; a fee "
                        "that includes meals does not by itself count as a provided meal unless the claim lists it.",
                        "Airport lounge access is not reimbursable, except on journeys of more than {n} hours."]),
]
TRAVEL_OFFICERS = ["A. Lindqvist (Head of Travel)", "R. Castillo (Travel Office)", "M. Osei (Finance Policy)",
                   "J. Novak (Travel Office)"]


def _pd_values(circulars, key, when, rules=frozenset()):
    """(value, winning circular) of an item on a date: the latest effective date on or before `when` wins; same
    effective date, the later issue. `rules` lists misreadings to imitate (for the trap checks)."""
    best = None
    for c in circulars:
        if c["status"] == "draft" and "drafts" not in rules or c["withdrawn"] and "withdrawn" not in rules:
            continue
        if c["effective"] is None:
            continue
        effective = c["printed_effective"] if "errata" in rules or "date-errata" in rules else c["effective"]
        if effective > when and "future" not in rules:
            continue
        for k, v in c["settings"]:
            if k != key:
                continue
            if "errata" not in rules:
                v = c["first_right"].get(k, c["corrected"].get(k, v)) if "erratum-chain" in rules else \
                    c["corrected"].get(k, v)
            rank = (c["issue"],) if "issue-order" in rules else (effective, c["issue"])
            if best is None or rank > best[0]:
                best = (rank, v, c)
    return (best[1], best[2]) if best else (None, None)


def _price_trip(circulars, trip, rules=frozenset(), used=None):
    """Lodging plus M&IE of the trip in cents; `used` collects the decisive (circular, item) facts."""
    def value(key, when):
        v, c = _pd_values(circulars, key, when, rules)
        if used is not None and c is not None:
            used.add((c["no"], key))
            if key in c["corrected"] and "errata" not in rules:
                used.update((no, key) for no in c["erratum_no"][key])
            if c["effective"] != c["printed_effective"]:
                used.add((c["date_erratum_no"], "effective"))
            strict = _pd_values(circulars, key, when, frozenset({"drafts", "withdrawn"}))[1]
            if strict is not None and strict is not c:
                used.add((strict["no"], key))      # a draft or withdrawn circular that would otherwise have won
        return v

    nights, start, actual, meals, fairs = trip["nights"], trip["start"], trip["actual"], trip["meals"], trip["fairs"]
    total = Fraction(0)
    for k, city in enumerate(nights):
        day = start + dt.timedelta(k)
        in_fair = any(c == city and a <= day <= b for c, a, b in fairs)
        own = value(("lodging", city), day)
        if own not in (None, "none"):
            cap = Fraction(own)
            if in_fair and "surcharge-exception" in rules:
                cap *= 1 + Fraction(value(("surcharge",), day), 100)
        else:
            cap = Fraction(value(("lodging", value(("band", city), day)), day))
            if in_fair:
                cap *= 1 + Fraction(value(("surcharge",), day), 100)
        total += min(Fraction(actual[k]), cap)
    for k in range(len(nights) + 1):
        day, city = start + dt.timedelta(k), (nights + nights[-1:])[k]
        own = value(("mie", city), day)
        full = Fraction(own) if own not in (None, "none") else Fraction(value(("mie", value(("band", city), day)),
                                                                               day))
        pay = full * Fraction(3, 4) if k in (0, len(nights)) else full
        pay -= sum(Fraction(value(("deduction", meal), day), 100) * full for d, meal in meals if d == k)
        total += max(pay, Fraction(0))
    return total * 100


PD_TRAPS = ("drafts", "withdrawn", "errata", "future", "issue-order", "surcharge-exception", "date-errata",
            "erratum-chain")


def per_diem_memos(rng: ItemRng, *, circulars: int = 150, nights: int = 18, trap_floor: int = 5) -> Generated:
    """A travel claim priced under a year of circulars: bands, city rates, errata, drafts, a withdrawal, fairs."""
    while True:
        made = _per_diem_world(rng, circulars, nights)
        trip, docs = made
        used: set = set()
        cents = _price_trip(docs, trip, used=used)
        naive = [_price_trip(docs, trip, frozenset({r})) for r in PD_TRAPS]
        if cents.denominator == 1 and sum(n != cents for n in naive) >= trap_floor:
            break
    answer = f"{cents.numerator // 100}.{cents.numerator % 100:02d}"
    return _exact(_per_diem_prompt(rng, docs, trip), answer, "number", decisive_facts=len(used),
                  traps_biting=sum(n != cents for n in naive))


def _per_diem_world(rng: ItemRng, count: int, length: int):
    year = rng.randint(2025, 2030)
    cities = rng.sample(CITIES, 14)
    legs = rng.randint(4, 5)
    trip_cities = cities[:legs]
    start = dt.date(year, rng.randint(3, 10), rng.randint(2, 18))
    split = sorted(rng.sample(range(1, length), legs - 1))
    nights = [trip_cities[sum(k >= s for s in split)] for k in range(length)]
    end = start + dt.timedelta(length)
    jan1 = dt.date(year, 1, 1)

    def lodging():
        return 5 * rng.randint(20, 52)

    def mie():
        return 4 * rng.randint(12, 30)

    docs: list[dict] = []

    def circular(issue, effective, settings, status="in force", subject="Travel rates"):
        docs.append({"issue": issue, "effective": effective, "settings": settings, "status": status,
                     "withdrawn": False, "corrected": {}, "erratum_no": {}, "subject": subject, "kind": "rates",
                     "first_right": {}, "printed_effective": effective})
        return docs[-1]

    circular(jan1 - dt.timedelta(rng.randint(12, 30)), jan1, [(("band", c), rng.choice(BANDS)) for c in cities],
             subject="Schedule of rate bands")
    circular(jan1 - dt.timedelta(rng.randint(5, 11)), jan1,
             [(("lodging", b), lodging()) for b in BANDS] + [(("mie", b), mie()) for b in BANDS]
             + [(("deduction", m), p) for m, p in zip(MEALS, (20, 30, 50))] + [(("surcharge",), rng.choice((20, 40)))]
             + [(("lodging", c), lodging()) for c in rng.sample(cities, 3)], subject="Rates for the year")
    fairs = []
    for city in rng.sample(trip_cities, 2) + rng.sample(cities[legs:], 3):
        a = start + dt.timedelta(rng.randint(-3, length - 1)) if city in trip_cities else \
            jan1 + dt.timedelta(rng.randint(40, 300))
        fairs.append([city, a, a + dt.timedelta(rng.randint(1, 4))])
    calendar = jan1 - dt.timedelta(rng.randint(1, 4))
    trip_window = (start - dt.timedelta(90), end + dt.timedelta(30))

    def random_setting(focus):
        city = rng.choice(trip_cities if focus else cities)
        kind = rng.weighted_choice(["band", "lodging", "mie", "own-lodging", "own-mie", "revoke", "deduction",
                                    "surcharge"], [3, 5, 4, 3, 2, 2, 2, 1])
        if kind == "band":
            return ("band", city), rng.choice(BANDS)
        if kind in ("lodging", "mie"):
            return (kind, rng.choice(BANDS)), lodging() if kind == "lodging" else mie()
        if kind == "own-lodging":
            return ("lodging", city), lodging()
        if kind == "own-mie":
            return ("mie", city), mie()
        if kind == "revoke":
            return (rng.choice(["lodging", "mie"]), city), "none"
        if kind == "deduction":
            return ("deduction", rng.choice(MEALS)), 5 * rng.randint(3, 12)
        return ("surcharge",), rng.choice((15, 20, 25, 30, 40))

    statuses = ["draft"] * (count // 15) + ["in force"] * (count - count // 15)
    rng.shuffle(statuses)
    for n, status in enumerate(statuses):
        focus = rng.randint(1, 5) <= 3
        if focus:
            effective = start + dt.timedelta(rng.randint(-80, length + 20))
        else:
            effective = jan1 + dt.timedelta(rng.randint(14, 360))
        mode = rng.weighted_choice(["ahead", "retro", "mid"], [6, 2, 2 if focus else 0])
        if mode == "mid":
            effective = start + dt.timedelta(rng.randint(1, length))
        issue = effective - dt.timedelta(rng.randint(1, 45)) if mode != "retro" else \
            effective + dt.timedelta(rng.randint(10, 120))
        issue = max(issue, jan1 + dt.timedelta(3))
        settings = []
        for _ in range(rng.randint(2, 6)):
            key, value = random_setting(focus and rng.randint(1, 3) > 1)
            if key not in [k for k, _ in settings]:
                settings.append((key, value))
        c = circular(issue, effective, settings, "draft" if status == "draft" else "in force")
        c["withdrawn"] = status == "withdrawn"
        c["retro"] = mode == "retro"
    if not any(trip_window[0] <= d["effective"] <= trip_window[1] for d in docs):
        raise AssertionError("unreachable: focus circulars fall near the trip")
    docs.sort(key=lambda d: d["issue"])
    for a, b in zip(docs, docs[1:]):
        b["issue"] = max(b["issue"], a["issue"] + dt.timedelta(1))
    actual = []
    for k, city in enumerate(nights):
        base = _pd_values(docs, ("lodging", _pd_values(docs, ("band", city), start)[0]), start)[0]
        actual.append(base + rng.choice([-35, -20, -10, 5, 15, 30, 45, 70]) + (15 if (start + dt.timedelta(k)).weekday()
                                                                            >= 4 else 0))
    provided = sorted(rng.sample([(d, m) for d in range(length + 1) for m in MEALS], rng.randint(4, 7)))
    trip = {"nights": nights, "start": start, "end": end, "actual": actual, "meals": provided, "fairs": fairs,
            "year": year, "cities": cities}
    # the withdrawn circular and the errata hit settings the claim uses, so that reading them matters
    for n, d in enumerate(docs):
        d["no"] = n
    used: set = set()
    _price_trip(docs, trip, used=used)
    winners = sorted({(n, key) for n, key in used if n > 1 and docs[n]["status"] == "in force"}, key=str)
    hit = sorted({n for n, _ in winners})
    gone = [docs[n] for n in rng.sample(hit, min(2, len(hit)))] or [rng.choice(docs[2:])]
    for withdrawn in gone:
        withdrawn["withdrawn"] = True
    extra = []
    fixable = [(docs[n], key) for n, key in winners if docs[n] not in gone and key[0] != "band"
               and dict(docs[n]["settings"])[key] != "none"]

    def changed(key, value, avoid=()):
        while True:
            right = value + (5 if key[0] == "lodging" else 4) * rng.choice([-6, -3, 3, 5, 8]) if key[0] not in (
                "deduction", "surcharge") else value + 5 * rng.choice([-1, 1, 2])
            if right not in avoid:
                return right

    for k, (target, key) in enumerate(rng.sample(fixable, min(5, len(fixable)))):
        value = dict(target["settings"])[key]
        right = changed(key, value)
        extra.append({"kind": "erratum", "of": target, "key": key, "printed": value, "right": right,
                      "issue": target["issue"] + dt.timedelta(rng.randint(5, 60))})
        if k < 2:                              # the erratum is itself corrected later
            again = changed(key, value, (value, right))
            extra.append({"kind": "erratum2", "of": extra[-1], "key": key, "printed": right, "right": again,
                          "issue": extra[-1]["issue"] + dt.timedelta(rng.randint(5, 40))})
    lucky = set(hit) | set(rng.sample(range(len(docs)), len(docs) // 3))
    movable = [d for n, d in enumerate(docs) if n > 1 and d["status"] == "in force" and d not in gone
               and start - dt.timedelta(20) <= d["effective"] <= end and n in lucky]
    for target in rng.sample(movable, min(2, len(movable))):
        shift = rng.choice([-9, -6, -4, -3, -2, 2, 3, 4, 6, 9])
        target["effective"] = target["effective"] + dt.timedelta(shift)
        extra.append({"kind": "date-erratum", "of": target, "issue": target["issue"] + dt.timedelta(rng.randint(5, 60))})
    for withdrawn in gone:
        extra.append({"kind": "withdrawal", "of": withdrawn,
                      "issue": withdrawn["issue"] + dt.timedelta(rng.randint(4, 50))})
    for _ in range(5):
        extra.append({"kind": "topic", "topic": rng.choice(CIRCULAR_TOPICS),
                      "issue": jan1 + dt.timedelta(rng.randint(5, 330))})
    fair_fix = rng.choice([f for f in fairs if f[0] in trip_cities])
    printed_fair = list(fair_fix)
    fair_fix[2] = fair_fix[2] + dt.timedelta(rng.choice([-1, 1, 2]))
    if fair_fix[2] < fair_fix[1]:
        fair_fix[2] = fair_fix[1]
    extra.append({"kind": "fair-erratum", "fair": fair_fix, "printed": printed_fair,
                  "issue": calendar + dt.timedelta(rng.randint(20, 120))})
    extra.append({"kind": "calendar", "fairs": [printed_fair if f is fair_fix else f for f in fairs],
                  "issue": calendar})
    for e in extra:
        e.setdefault("settings", [])
        e.setdefault("status", "in force")
        e.setdefault("withdrawn", False)
        e.setdefault("effective", None)
        e.setdefault("corrected", {})
        e.setdefault("erratum_no", {})
        e.setdefault("first_right", {})
        e.setdefault("printed_effective", None)
    docs = sorted(docs + extra, key=lambda d: d["issue"])
    for a, b in zip(docs, docs[1:]):
        b["issue"] = max(b["issue"], a["issue"] + dt.timedelta(1))
    for n, d in enumerate(docs):
        d["no"] = f"TO-{year}-{n + 1:02d}"
    for e in extra:
        if e["kind"] == "erratum":
            e["of"]["corrected"][e["key"]] = e["right"]
            e["of"]["erratum_no"][e["key"]] = [e["no"]]
        elif e["kind"] == "date-erratum":
            e["of"]["date_erratum_no"] = e["no"]
    for e in extra:
        if e["kind"] == "erratum2":
            circular = e["of"]["of"]
            circular["first_right"][e["key"]] = e["printed"]
            circular["corrected"][e["key"]] = e["right"]
            circular["erratum_no"][e["key"]].append(e["no"])
    return trip, docs


PD_FILLER = [
    "Background. The rates follow the annual survey of hotel and restaurant prices carried out with {firm}; the "
    "survey covered {n} properties and was reviewed by the staff committee on {when}.",
    "Consultation. The staff committee and the works council were consulted; {person} asked that the figures be "
    "reviewed again after the summer, and the Travel Office has agreed to do so.",
    "Implementation. The booking portal will show the new figures within two working days of the effective date; "
    "until then, travellers should not rely on the portal's indicative caps.",
    "Budget. The change is expected to cost or save less than {n} thousand euros a year across all departments and "
    "is absorbed within existing travel budgets.",
    "Scope. This circular covers business travel by employees and seconded staff; visitors and contractors are "
    "reimbursed under their own contracts and are not affected.",
    "Queries. Questions about this circular should be sent to the Travel Office mailbox, not to Payroll; expect a "
    "reply within {m} working days.",
    "Reminder. Line managers approve claims on the understanding that the traveller has booked through the portal; "
    "the Travel Office audits about {m} per cent of claims each quarter.",
    "Exchange rates. Costs incurred in other currencies are converted at the rate on the card statement, or at the "
    "central bank's reference rate on the day of the expense when paid in cash.",
    "Sustainability. Travellers are asked to prefer rail wherever the journey takes under {m} hours and to combine "
    "trips where possible; the Travel Office publishes the year's emissions in its annual report.",
    "Duty of care. The duty officer must be able to reach every traveller; travellers should keep their itinerary "
    "in the portal up to date, including changes of hotel.",
    "Audit. The internal audit of {when} found that {n} claims had been paid at out-of-date rates; the "
    "overpayments have been recovered through payroll with the travellers' agreement.",
    "Hotels. Preferred hotels are listed on the portal; a preferred hotel may be booked above the cap only with "
    "written approval, and only the capped amount is reimbursed.",
]


def _rate_line(key, value):
    """One setting as a circular prints it."""
    kind, subject = key[0], key[1] if len(key) > 1 else ""
    if kind == "band":
        return f"{subject} moves to rate band {value}."
    if kind == "deduction":
        return f"Deduction for a provided {subject}: {value}% of the day's full M&IE rate."
    if kind == "surcharge":
        return f"Trade-fair surcharge on band lodging caps: {value}%."
    word = "lodging cap" if kind == "lodging" else "M&IE rate"
    unit = "night" if kind == "lodging" else "day"
    if subject in BANDS:
        return f"Band {subject}: {word} EUR {value} per {unit}."
    if value == "none":
        return f"{subject} (city rate): the city-specific {word} is revoked; the band rate applies."
    return f"{subject} (city rate): {word} EUR {value} per {unit}, whatever its band."


def _per_diem_prompt(rng: ItemRng, docs: list[dict], trip: dict) -> str:
    """Render the circulars in issue order, the claims register and the question."""
    year, people = trip["year"], rng.sample(SURNAMES, 12)
    firms = ["Halden Research", "Corvex Surveys", "Ambler & Price", "Northgate Analytics"]

    def filler(k):
        return [p.format(firm=rng.choice(firms), n=rng.randint(12, 480), m=rng.randint(3, 9),
                         person=f"{rng.choice('ABCDEFGHJKLMNPRS')}. {rng.choice(people)}",
                         when=_day(dt.date(year, 1, 1) + dt.timedelta(rng.randint(-200, 100))))
                for p in rng.sample(PD_FILLER, k)]

    blocks = []
    for d in docs:
        head = f"CIRCULAR {d['no']}  |  issued {_day(d['issue'])}" + (
            f"  |  effective {_day(d['printed_effective'])}" if d["effective"] else "")
        head += f"\nFrom: {rng.choice(TRAVEL_OFFICERS)}    To: all staff"
        kind = d.get("kind")
        if kind == "rates":
            body = [f"Subject: {d['subject']}"]
            if d["status"] == "draft":
                body.append("DRAFT FOR CONSULTATION - NOT IN FORCE. Comments to the Travel Office within three weeks.")
            body.append("1. The following replace the values previously in force for the items listed; everything "
                        "else is unchanged:\n" + "\n".join(f"  - {_rate_line(k, v)}" for k, v in d["settings"]))
            if d.get("retro"):
                body.append("2. This circular is issued after the fact: it applies from the effective date above, "
                            "including to claims that have not yet been settled.")
            body += filler(rng.randint(4, 7))
        elif kind == "erratum":
            of = d["of"]
            body = [f"Subject: Erratum to {of['no']}",
                    f"In {of['no']}, the line '{_rate_line(d['key'], d['printed'])}' should read "
                    f"'{_rate_line(d['key'], d['right'])}' The corrected value applies from {of['no']}'s effective "
                    f"date; nothing else in {of['no']} changes."] + filler(1)
        elif kind == "erratum2":
            first, of = d["of"], d["of"]["of"]
            body = [f"Subject: Correction to erratum {first['no']}",
                    f"Erratum {first['no']} gave the wrong figure. In {of['no']}, the line "
                    f"'{_rate_line(d['key'], first['printed'])}' should read '{_rate_line(d['key'], d['right'])}', "
                    f"not '{_rate_line(d['key'], d['printed'])}' as {first['no']} said. The value applies from "
                    f"{of['no']}'s effective date; nothing else changes."] + filler(1)
        elif kind == "date-erratum":
            of = d["of"]
            body = [f"Subject: Erratum to {of['no']} (effective date)",
                    f"{of['no']} was printed with the effective date {_day(of['printed_effective'])}; it should read "
                    f"{_day(of['effective'])}. Every value {of['no']} sets (as corrected by any erratum) applies from "
                    f"{_day(of['effective'])}; nothing else in {of['no']} changes."] + filler(1)
        elif kind == "withdrawal":
            body = [f"Subject: Withdrawal of {d['of']['no']}",
                    f"{d['of']['no']} is withdrawn in full and is to be treated as never issued; the values it set "
                    "revert to those otherwise in force."] + filler(1)
        elif kind == "calendar":
            fairs = "\n".join(f"  - {c}: {_day(a)} to {_day(b)}" for c, a, b in d["fairs"])
            body = [f"Subject: Trade-fair calendar {year}",
                    "During the trade fairs below hotel prices rise sharply. For a night spent in the fair's city "
                    "during the fair (a night counts when its date, the date on which it begins, lies within the "
                    "period, both ends included), the band lodging cap is raised by the trade-fair surcharge in "
                    "force that night. The surcharge never applies to a city-specific lodging cap (a city rate).",
                    fairs] + filler(2)
        elif kind == "fair-erratum":
            city, a, b = d["fair"]
            body = [f"Subject: Correction to the trade-fair calendar {year}",
                    f"The {city} fair runs from {_day(a)} to {_day(b)}, not to {_day(d['printed'][2])} as printed in "
                    "the calendar; the rest of the calendar is unchanged."] + filler(1)
        else:
            title, lines = d["topic"]
            body = [f"Subject: {title}"] + [f"{n + 1}. " + x.format(n=rng.randint(10, 60), m=rng.randint(20, 90))
                                            for n, x in enumerate(lines)] + filler(rng.randint(2, 4))
        blocks.append(head + "\n" + "\n".join(body))
    nights, start, end = trip["nights"], trip["start"], trip["end"]
    traveller = rng.choice(people)
    claim_no = rng.randint(10000, 99999)
    stays, k = [], 0
    while k < len(nights):
        j = k
        while j < len(nights) and nights[j] == nights[k]:
            j += 1
        stays.append(f"  - {nights[k]}: {j - k} night{'s' if j - k > 1 else ''} from {_day(start + dt.timedelta(k))}, "
                     f"{rng.choice(['Hotel', 'Residence', 'Grand Hotel', 'Hotel Park', 'City Inn'])} "
                     f"{rng.choice(people)}")
        k = j
    receipts = "; ".join(f"{_day(start + dt.timedelta(k))} EUR {a}" for k, a in enumerate(trip["actual"]))
    meals = "; ".join(f"{m} on {_day(start + dt.timedelta(d))}" for d, m in trip["meals"])
    claims = []
    for _ in range(6):
        other_start = dt.date(year, 1, 1) + dt.timedelta(rng.randint(30, 330))
        route = rng.sample(trip["cities"], 2)
        claims.append(f"EXPENSE CLAIM EC-{rng.randint(10000, 99999)} - traveller: {rng.choice(people)} (settled)\n"
                      f"Departed {_day(other_start)}; returned {_day(other_start + dt.timedelta(4))}. Stays: "
                      f"{route[0]} 2 nights, {route[1]} 2 nights. Hotel receipts EUR {5 * rng.randint(20, 50)} per "
                      f"night throughout. Meals provided: {rng.choice(MEALS)} on {_day(other_start)}. Paid "
                      f"EUR {rng.randint(600, 1600)}.{rng.randint(0, 99):02d}.")
    target = (f"EXPENSE CLAIM EC-{claim_no} - traveller: {traveller} (to be priced)\n"
              f"Departed {_day(start)}; returned {_day(end)}. Stays (one hotel per city, consecutive nights):\n"
              + "\n".join(stays) + f"\nHotel receipts, per night (itemised): {receipts}.\n"
              f"Meals provided free of charge: {meals}.")
    claims.insert(rng.randint(0, len(claims)), target)
    today = max(d["issue"] for d in docs) + dt.timedelta(rng.randint(2, 9))
    return PER_DIEM_PROMPT.format(year=year, circulars="\n\n".join(blocks), claims="\n\n".join(claims),
                                  claim=claim_no, today=_day(today))


PER_DIEM_PROMPT = """You work in the finance team. Today is {today}. Price the expense claim EC-{claim} below under \
the company travel policy and the Travel Office circulars of {year}, which are reproduced in full in the order \
they were issued.

Travel policy (unchanged all year):
1. Lodging is reimbursed for each night at the actual nightly rate on the hotel receipt, but at most the lodging \
cap for that night. The cap for a night is the city-specific lodging cap (city rate) of the city where the night \
is spent, if one is in force on the date of that night; otherwise it is the lodging cap of the rate band that the \
city belongs to on that date, adjusted as the circulars say for trade fairs.
2. M&IE (meals and incidental expenses) is paid for every day from the departure day to the return day \
inclusive, at the M&IE rate in force on that day for the city where the traveller spends that night (on the \
return day, the city where the last night was spent): the city-specific M&IE rate if one is in force, otherwise \
the M&IE rate of the city's band on that day.
3. The departure day and the return day are paid at 75% of that day's M&IE rate.
4. For each meal provided free of charge, deduct that meal's percentage (set in the circulars) of the day's full \
M&IE rate, using the percentage in force on that day. A day's M&IE payment cannot fall below zero.
5. Which value is in force on a date: for each item (a city's band, a band's cap or rate, a city rate, a \
deduction percentage, the surcharge), the value set by the circular with the latest effective date on or before \
that date; between two circulars with the same effective date, the one issued later. A circular applies from its \
effective date whenever it was issued. A city rate that a circular revokes is not in force from that circular's \
effective date until a later-effective circular sets one again.
6. Drafts, and circulars that have been withdrawn, are disregarded entirely. An erratum replaces the value (or the \
effective date) printed in the circular it names, as if that circular had been printed correctly; the erratum has \
no effective date of its own. A later correction of an erratum replaces that erratum's figure in the same way.

{circulars}

CLAIMS REGISTER
{claims}

Question: what is the total amount to reimburse on claim EC-{claim} (lodging plus M&IE), in euros?
End your response with a final line `ANSWER: <amount>` giving the exact amount in euros as a decimal number \
without a currency sign, e.g. `ANSWER: 1234.50`."""


# ---------------------------------------------------------------- config change log with rollbacks

SERVICES = ["auth", "billing", "catalog", "checkout", "inventory", "ledger", "notify", "search", "shipping",
            "profile", "pricing", "gateway", "reports", "media", "quotes", "returns", "tax", "loyalty"]
CONFIG_KEYS = {"timeout_ms": list(range(1000, 9001, 250)), "max_connections": list(range(50, 801, 10)),
               "retry_limit": list(range(0, 9)), "pool_size": list(range(4, 129, 4)),
               "cache_ttl_s": list(range(30, 3601, 30)), "batch_size": list(range(10, 501, 10)),
               "queue_depth": list(range(100, 5001, 100)), "rate_limit_rps": list(range(50, 2001, 50))}
REASONS = ["latency spike on dashboards", "capacity test", "vendor SLA alignment", "INC-{n} mitigation",
           "load-test follow-up", "per CAB ticket CHG-{n}", "cost review", "error budget burn", "canary result",
           "customer escalation ESC-{n}", "tuning after failover drill", "requested by on-call", "per runbook RB-{n}",
           "revert noisy alert", "align with staging soak", "db pool exhaustion", "regional traffic shift"]
CHAT = ["seeing elevated 5xx on {svc}, investigating", "p99 for {svc} back under SLO", "paging the {svc} owner",
        "dashboards lagging, ignore the gap around {t}", "{svc} canary at 10%, looks clean", "is anyone touching "
        "{svc}? saw a blip", "db failover drill complete, {svc} reconnected", "cost alert on {svc}, will look "
        "after the incident", "ack, holding further changes to {svc} for ten minutes", "{svc} deploy {n} rolled out "
        "to all pods", "synthetic checks green for {svc}", "opened INC-{n} for {svc} timeouts"]
GROUPS = ["edge", "core", "batch"]
REGIONS = ["eu", "us"]


def config_rollbacks(rng: ItemRng, *, entries: int = 1900, asked: int = 10) -> Generated:
    """Effective production values of two keys for several services at three moments of a long layered change log."""
    services = sorted(rng.sample(SERVICES, 14))
    group = {s: GROUPS[k % 3] for k, s in enumerate(rng.sample(services, len(services)))}
    region = {s: REGIONS[k % 2] for k, s in enumerate(rng.sample(services, len(services)))}
    targets = rng.sample(["timeout_ms", "max_connections", "pool_size", "cache_ttl_s", "queue_depth"], 2)
    keys = list(CONFIG_KEYS)
    scopes = ["global"] + [f"region:{r}" for r in REGIONS] + [f"group:{g}" for g in GROUPS] + \
        [f"service:{s}" for s in services]
    state: dict[tuple, int] = {}                     # (env, scope, key) -> value; absent means no setting
    prov: dict[tuple, frozenset] = {}                # (env, scope, key) -> entries its current state rests on
    member_prov = {s: frozenset() for s in services}
    for env in ("production", "staging"):
        for scope in scopes:
            for key in keys:
                odds = 5 if scope == "global" else 3 if scope.startswith(("region", "group")) else 2
                if rng.randint(1, 5) <= odds:
                    state[env, scope, key] = rng.choice(CONFIG_KEYS[key])
    baseline, initial_group, initial_region = dict(state), dict(group), dict(region)
    authors = [f"{rng.choice('abcdefghjkmnprstw')}.{name.lower()}" for name in rng.sample(SURNAMES, 8)]
    first = rng.randint(3000, 7000)
    lines: list[str] = []
    before: dict[str, tuple] = {}                     # cid -> (slot, previous value or None, previous provenance)
    changes: list[tuple[str, str]] = []              # (cid, env) of changes that took effect (rollback targets)
    checkpoints: dict[str, tuple] = {}
    review: list[str] = []
    held: list[tuple] = []
    freeze, last_thaw = None, 0
    second = 6 * 3600 + rng.randint(0, 1800)
    span = (22 * 3600 - second) // entries
    stops = sorted(rng.sample(range(entries * 11 // 20, entries * 19 // 20, 7), 3))
    while stops[1] - stops[0] < entries // 12 or stops[2] - stops[1] < entries // 12:
        stops = sorted(rng.sample(range(entries * 11 // 20, entries * 19 // 20, 7), 3))
    grid = [(s, k, m) for s in services for k in targets for m in range(3)]
    queries = rng.sample(grid, asked)
    while {m for _, _, m in queries} != {0, 1, 2} or {k for _, k, _ in queries} != set(targets):
        queries = rng.sample(grid, asked)
    moments, answer, decisive = [None] * 3, {}, set()
    # the review's findings fall on changes some way before each moment asked about, where they tend to show
    errata_due = sorted(n for stop in stops for n in rng.sample(range(stop - entries // 10, stop - 3), 3))
    rejects_due = sorted(n for stop in stops for n in rng.sample(range(stop - entries // 10, stop - 3), 2))

    def bears(slot):
        """A production slot of an asked key that an asked service reads through now (if nothing above it is set)."""
        return slot[0] == "production" and any(k == slot[2] and slot[1] in (
            f"service:{s}", f"group:{group[s]}", f"region:{region[s]}", "global") for s, k, _ in queries)

    def stamp(t):
        return f"{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"

    touches: dict[tuple, set] = {}                   # slot -> entries that tried to change it (failed ones too)

    def write(slot, value, sources, by):
        touches.setdefault(slot, set()).add(by)
        before_state = (state.get(slot), prov.get(slot, frozenset()))
        if value is None:
            state.pop(slot, None)
        else:
            state[slot] = value
        prov[slot] = frozenset(sources)
        return before_state

    def effective(service, key):
        sources = set(member_prov[service])
        for scope in (f"service:{service}", f"group:{group[service]}", f"region:{region[service]}", "global"):
            slot = ("production", scope, key)
            sources |= prov.get(slot, frozenset()) | touches.get(slot, set())
            if slot in state:
                return state[slot], sources
        raise AssertionError("global always holds a value")

    for n in range(entries):
        if n in stops:
            m = stops.index(n)
            moments[m] = second + span // 4
            for q in queries:
                if q[2] == m:
                    answer[q], sources = effective(q[0], q[1])
                    decisive |= sources
        second += rng.randint(span // 2, span * 3 // 2)
        cid = f"C-{first + n}"
        who = rng.choice(authors)
        reason = rng.choice(REASONS).format(n=rng.randint(1000, 9999))
        env = rng.weighted_choice(["production", "staging"], [7, 3])
        action = rng.weighted_choice(["set", "unset", "rollback", "chat", "restart", "move", "checkpoint", "restore",
                                      "freeze"], [46, 10, 18, 14, 5, 3, 2, 2, 1])
        key = rng.choice(targets) if rng.randint(1, 100) <= 50 else rng.choice(keys)
        scope = rng.weighted_choice(scopes, [5, 3, 3, 4, 4, 4] + [2] * len(services))
        failed = rng.randint(1, 12) == 1
        text, status, tail = "", "applied", f"{who}; {reason}"
        if action == "freeze":
            if freeze is None and n > last_thaw + entries // 10 and n < stops[2] - 40:
                freeze = n
                lines.append(f"{cid}  {stamp(second)}  production  {who:<12}  FREEZE production  declared; "
                             "production SET/UNSET are held until THAW")
            elif freeze is not None and n > freeze + 15:
                lines.append(f"{cid}  {stamp(second)}  production  {who:<12}  THAW production  lifted; held "
                             "changes apply now, in log order")
                for hcid, slot, value in held:
                    before[hcid] = (slot, *write(slot, value, {hcid, cid}, hcid))
                    changes.append((hcid, "production"))
                held, freeze, last_thaw = [], None, n
            else:
                action = "chat"
        if action == "chat":
            lines.append(f"{cid}  {stamp(second)}  -           {who:<12}  CHAT  " + rng.choice(CHAT).format(
                svc=rng.choice(services), t=stamp(second - 600)[:5], n=rng.randint(100, 999)))
            continue
        if action == "restart":
            lines.append(f"{cid}  {stamp(second)}  {env:<10}  {who:<12}  RESTART service:{rng.choice(services)}  "
                         f"applied; {reason}")
            continue
        if action == "move":
            svc = rng.choice(services)
            if rng.randint(1, 3) == 1:
                new = next(r for r in REGIONS if r != region[svc])
                region[svc], where = new, f"region:{new}"
            else:
                new = rng.choice([g for g in GROUPS if g != group[svc]])
                group[svc], where = new, f"group:{new}"
            member_prov[svc] = member_prov[svc] | {cid}
            lines.append(f"{cid}  {stamp(second)}  both        {who:<12}  MOVE service:{svc} to {where}  "
                         f"applied; {reason}")
            continue
        if action == "checkpoint":
            name = f"cp-{len(checkpoints) + 1}"
            checkpoints[name] = ({k: v for k, v in state.items() if k[0] == "production"},
                                 {k: v for k, v in prov.items() if k[0] == "production"}, cid)
            lines.append(f"{cid}  {stamp(second)}  production  {who:<12}  CHECKPOINT {name}  saved; a snapshot of "
                         "every production setting at this moment")
            continue
        if action == "restore":
            if not checkpoints or freeze is not None:
                action = "set"
            else:
                name = rng.choice(list(checkpoints))
                values, sources, made = checkpoints[name]
                scope = rng.choice(scopes[1:6])
                lines.append(f"{cid}  {stamp(second)}  production  {who:<12}  RESTORE {name} {scope}  applied; "
                             f"every key at {scope} reset to its {name} state; {reason}")
                for k in keys:
                    slot = ("production", scope, k)
                    write(slot, values.get(slot), {cid, made} | sources.get(slot, frozenset()), cid)
                continue
        if action == "rollback":
            pool = [c for c, e in changes[-400:] if e == env]
            if not pool:
                action = "set"
            else:
                undone = rng.choice(pool)
                slot, value, sources = before[undone]
                if env == "production" and freeze is not None:
                    failed = True          # rollbacks are not held: keep the freeze simple, they fail validation
                text = f"ROLLBACK {undone}"
                touches.setdefault(slot, set()).add(cid)
                if not failed:
                    before[cid] = (slot, *write(slot, value, {cid, undone} | sources, cid))
                    changes.append((cid, env))
        if action == "unset" and (scope == "global" or (env, scope, key) not in state):
            action = "set"
        if action in ("set", "unset"):
            slot = (env, scope, key)
            value = None if action == "unset" else rng.choice(CONFIG_KEYS[key])
            shown = value
            touches.setdefault(slot, set()).add(cid)
            text = f"UNSET {scope} {key}" if value is None else f"SET {scope} {key} = {value}"
            if env == "production" and freeze is not None and not failed:
                held.append((cid, slot, value))
                status = "HELD (freeze)"
            elif not failed:
                sources = {cid}
                if bears(slot) and rejects_due and rejects_due[0] <= n < stops[2]:
                    rejects_due.pop(0)       # logged as applied, but the review finds it was rejected
                    review.append(f"- {cid} is logged as applied, but the deploy tool rejected it: treat {cid} as "
                                  "FAILED (it changed nothing).")
                    touches[slot].add(f"review-{cid}")
                    lines.append(f"{cid}  {stamp(second)}  {env:<10}  {who:<12}  {text:<44}  {status}; {tail}")
                    continue
                if value is not None and bears(slot) and errata_due and errata_due[0] <= n < stops[2]:
                    errata_due.pop(0)
                    shown = rng.choice([v for v in CONFIG_KEYS[key] if v != value])
                    text = f"SET {scope} {key} = {shown}"
                    review.append(f"- {cid} is logged as setting {key} = {shown} at {scope}, but the deploy tool "
                                  f"applied {value}; treat {cid} as having set {value}.")
                    sources.add(f"review-{cid}")
                before[cid] = (slot, *write(slot, value, sources, cid))
                changes.append((cid, env))
        if failed:
            status = "FAILED (validation error, nothing applied)"
        lines.append(f"{cid}  {stamp(second)}  {env:<10}  {who:<12}  {text:<44}  {status}; {tail}")
    if None in moments:
        raise AssertionError("the moments asked about lie inside the log")
    day = dt.date(2025, 1, 1) + dt.timedelta(rng.randint(0, 1000))
    snapshot = "\n".join(f"  {env:<10}  {scope:<18}  " + "  ".join(
        f"{key}={baseline[env, scope, key]}" for key in keys if (env, scope, key) in baseline)
        for env in ("production", "staging") for scope in scopes
        if any((env, scope, key) in baseline for key in keys))
    catalogue = "\n".join(f"  {s:<10}  group:{initial_group[s]:<6}  region:{initial_region[s]}" for s in services)
    corrected = {finding.split()[1] for finding in review}
    plain = [line.split()[0] for line in lines[:stops[2]] if "  SET " in line and "applied;" in line
             and line.split()[0] not in corrected]
    noise = [f"- {cid}: reviewed, the change behaved as logged." for cid in rng.sample(plain, 4)]
    noise.append(f"- The CHAT messages about {rng.choice(services)} were a false alarm from a stale dashboard.")
    findings = review + noise
    rng.shuffle(findings)
    asked_text = "\n".join(f"  {k + 1}. {s}: {key} at {stamp(moments[m])}" for k, (s, key, m) in enumerate(queries))
    prompt = CONFIG_PROMPT.format(day=_day(day), catalogue=catalogue, snapshot=snapshot, log="\n".join(lines),
                                  review="\n".join(findings), asked=asked_text,
                                  slots=", ".join(f"<v{k + 1}>" for k in range(asked)))
    return _exact(prompt, ", ".join(str(answer[q]) for q in queries), "list", decisive_facts=len(decisive),
                  log_entries=entries, review_findings=len(review))


CONFIG_PROMPT = """You are on call. Below are the service catalogue, the configuration baseline and the complete \
change log for {day}, followed by the findings of the post-incident review. Configuration is layered, and staging \
and production are entirely separate.

How the configuration system works (runbook RB-7, section 3):
1. A service's effective value for a key is its service-level setting if one exists; otherwise the setting of the \
group it belongs to at that moment; otherwise the setting of the region it belongs to at that moment; otherwise \
the global setting.
2. SET creates or replaces the setting at that level; UNSET removes the setting at that level (the next level \
down then shows through). MOVE puts a service into another group, or into another region, from that moment on, in \
both environments; it changes no setting.
3. ROLLBACK C-n restores, at the level and key that change C-n touched, exactly what was there immediately \
before C-n took effect: the previous value, or no setting at all if C-n created it, or the removed setting if C-n \
was an UNSET. A rollback is itself a change, so a ROLLBACK of a ROLLBACK restores what was there before that \
rollback. A rollback undoes only that one level and key; it does not undo anything else done in between.
4. CHECKPOINT saves the state of every production setting at that moment. RESTORE cp-k LEVEL resets every key at \
that one level in production to its state at checkpoint cp-k (a key that had no setting there then has none \
afterwards).
5. FREEZE production starts a change freeze: production SET and UNSET entries logged during it are HELD and change \
nothing until the next THAW production, when all held changes take effect one after another, in log order, at the \
THAW's moment (for a later ROLLBACK of a held change, "immediately before it took effect" means at the THAW, just \
before that change was applied). A day can have several freezes.
6. Entries marked FAILED changed nothing. CHAT and RESTART entries change no configuration.
7. Entries take effect at the time shown; the log is in time order. The post-incident review corrects the log and \
prevails over it: where a finding says what a change actually did (a different value, or nothing at all because it \
was rejected), that replaces what the log line says, from that change's own moment on, including for any later \
ROLLBACK that refers to it or to what it left behind.

Service catalogue at 00:00 (group and region of each service):
{catalogue}

Baseline at 00:00 (settings not listed do not exist):
{snapshot}

Change log:
{log}

Post-incident review, findings about the log:
{review}

Question: what was the effective production value of each of these keys, for each service and at each moment \
listed (times of that day)?
{asked}
End your response with a final line `ANSWER: {slots}`: the integer values, comma-separated, in exactly the order \
of the numbered list above."""


# ---------------------------------------------------------------- grant panel minutes, call and clarifications

DEPARTMENTS = ["Chemistry", "History", "Linguistics", "Physics", "Geography", "Economics", "Zoology", "Music",
               "Sociology", "Mathematics", "Archaeology", "Psychology"]
CODENAMES = ["TIDEMARK", "LANTERN", "HOLLOWAY", "QUARRY", "SEXTANT", "MERIDIAN", "BRAMBLE", "CINDER", "OSPREY",
             "KESTREL", "FATHOM", "GRANARY", "LODESTAR", "PALISADE", "RUNNEL", "THRESHOLD", "WICKET", "ZEPHYR",
             "ANVIL", "BEACON", "CAIRN", "DELTA", "EMBER", "FLINT", "GANTRY", "HARROW", "INLET", "JUNIPER", "KILN",
             "LARCH", "MOORING", "NETTLE", "ORCHARD", "PINNACLE", "QUILL", "REEF", "SPINDLE", "TALLOW", "UPLAND",
             "VESPER", "WEIR", "YARROW", "ALDER", "BRACKEN", "COPSE", "DUNLIN", "EYRIE", "FERN", "GLADE", "HEATH"]
THEMES = ["Coastal resilience", "Digital heritage", "Healthy ageing", "Low-carbon materials", "Food security"]
SAYINGS = ["I scored it {s}.", "{s} from me.", "I'm at {s}.", "My score is {s}.", "I gave it {s}.",
           "I landed on {s}."]
REMARKS = ["The methods are careful but the timeline is optimistic.", "The budget justification is thin.",
           "Pilot data are convincing.", "The dissemination plan needs work.", "Very clearly written.",
           "I worry about recruitment.", "Good value for the amount asked.", "The ethics section is solid.",
           "The literature review misses the last five years.", "Ambitious, perhaps too ambitious.",
           "The partners' letters of support are strong.", "The work packages overlap.",
           "It builds sensibly on their earlier results.", "The risk register is a single line.",
           "The sampling strategy is well argued, though the sample is small.", "The archive access is secured in "
           "writing, which is reassuring.", "I would have liked a clearer account of the analysis plan.",
           "The team has the right mix of skills.", "The second work package depends entirely on the first.",
           "The public engagement strand is more than decoration here.", "The data management plan is generic.",
           "Their track record with the fund is good.", "Costs for fieldwork look high but are explained.",
           "The hypotheses are testable and the power calculation is given.", "It reads like two projects stapled "
           "together.", "The comparison group is well chosen.", "There is a real risk the equipment arrives late.",
           "Strong on theory, weaker on how it will be tested.", "The open-access costs are missing.",
           "A modest project, but it will certainly deliver.", "The PI's preliminary paper answers my main doubt.",
           "The interdisciplinary case is made rather than asserted."]
DIALOGUE = [
    ("Did the applicants say how they would recruit the second cohort?", "Only in outline; it is on page six of the "
     "case for support, and the partner school has agreed in principle."),
    ("Is the equipment line really needed, given the shared facility?", "They say the shared instrument is booked "
     "for two years; I checked and that seems right."),
    ("How does this relate to their previous grant?", "It extends the second work package of that grant; the "
     "overlap is declared and the new questions are distinct."),
    ("Are the external reviews consistent with ours?", "Broadly. One external reviewer was harsher on the "
     "methods, but I think that reviewer misread the design."),
    ("Could the project start in the autumn rather than in January?", "The applicant's letter says January is "
     "fixed because of the field season; we should not second-guess that."),
    ("Who owns the data at the end of the project?", "The consortium agreement gives it to the host university, "
     "with an open licence after an embargo of a year."),
    ("Is the postdoc already identified?", "Named in the proposal, yes, and the CV is strong; that lowers the "
     "delivery risk a good deal."),
    ("What happens if the archive closes for the refurbishment?", "They have a fallback using the digitised "
     "collection; slower, but it works."),
    ("Is the travel budget reasonable?", "It is at the top of the usual range, but they have two field sites on "
     "different continents."),
    ("Did anyone check the ethics approval?", "It is pending at the host institution; the award would be "
     "conditional on it, as usual."),
    ("Is the public engagement more than a website?", "There is a touring exhibition with two museums, costed and "
     "with letters of support."),
    ("Would the panel see this as value for money?", "At this amount, yes; the outputs are concrete and the team "
     "is experienced."),
]
EXTERNAL = ["the case is original and timely", "the methods are appropriate but the sample may be small",
            "the team is well qualified", "the costs are justified", "the outputs are realistic",
            "the project would benefit from a clearer theory of change", "the impact plan is credible",
            "the risks are acknowledged but not mitigated", "the work is feasible in the time asked",
            "the proposal overstates its novelty", "the partnerships are genuine", "the budget is generous",
            "the data plan is exemplary", "the literature is covered thoroughly", "the pilot is too small to rely on"]
FEEDBACK = ["Feedback for the applicant: strengthen the analysis plan and say more about the risks.",
            "Feedback for the applicant: the panel valued the clarity of the case; the budget needs more detail.",
            "Feedback for the applicant: a promising idea whose second half needs to be made more concrete.",
            "Feedback for the applicant: excellent preliminary work; the dissemination plan could be bolder.",
            "Feedback for the applicant: the panel would like to see the partners' roles set out in the plan.",
            "Feedback for the applicant: convincing design; the timeline should allow for the approvals."]
CHAIR_LINES = ["Thank you. Any questions from the panel before we move on?", "Let us keep to time, please.",
               "I note the external reviews were broadly in line with the panel.", "The office will minute the "
               "feedback for the applicant.", "Comments for the feedback letter to the office by Friday, please.",
               "We discussed the timeline; it is a matter for feedback, not for the score."]


def _grant_rank(props, rules, traps=frozenset()):
    """Funding order under the rules (the round's call as clarified); `traps` lists misreadings to imitate."""
    ranked = []
    for p in props:
        if p["withdrawn"] and "withdrawals" not in traps:
            continue
        scores = []
        for r, said in p["said"].items():
            struck = r in p["struck"] and (r not in p["reinstated"] or "reinstated" in traps)
            if struck and "strikes" not in traps:
                continue
            value = said
            if r in p["true"] and "corrections" not in traps:
                value = p["first"][r] if "second-correction" in traps else p["true"][r]
            corrected = r in p["corrected"] and "exception" not in traps
            if r == rules["calibrated"] and "calibration" not in traps and not corrected:
                value = max(1, value - 1)
            if r == rules["raised"] and "raised" not in traps and not corrected:
                value = min(10, value + 1)
            scores.append(value)
        phd = p["phd"] if "phd-erratum" in traps else p["phd_true"]
        since = rules["since_printed"] if "window" in traps else rules["since_first"] if "since-revision" in traps \
            else rules["since"]
        active = p["award"] is not None and not (p["award"].startswith("BR-") and "bridging" not in traps)
        early = phd >= since and not active
        score = Fraction(sum(scores), len(scores)) + (rules["bonus"] if early else 0)
        amount = p["ask"] if "trims" in traps else p["final"]
        ranked.append((-score, amount, p["no"], p))
    funded, remaining, by_dept = [], rules["budget"], {}
    for negative, amount, _, p in sorted(ranked, key=lambda r: r[:3]):
        if -negative < rules["floor"] or amount > remaining:
            continue
        exempt = p["theme"] == rules["theme"] and "theme" not in traps and (
            amount <= rules["theme_max"] or "theme-max" in traps)
        cap = rules["cap"] if "dept-cap" in traps else rules["caps"].get(p["dept"], rules["cap"])
        if not exempt and by_dept.get(p["dept"], 0) + amount > cap:
            continue
        funded.append(p["id"])
        remaining -= amount
        if not exempt:
            by_dept[p["dept"]] = by_dept.get(p["dept"], 0) + amount
    return funded


GRANT_TRAPS = ("withdrawals", "strikes", "corrections", "calibration", "exception", "phd-erratum", "window",
               "bridging", "trims", "theme", "reinstated", "second-correction", "raised", "since-revision",
               "theme-max", "dept-cap")


def grant_panel(rng: ItemRng, *, proposals: int = 130, trap_floor: int = 10) -> Generated:
    """Which proposals a fund's rules, as clarified during the round, select from a long panel meeting's minutes."""
    while True:
        world = _grant_world(rng, proposals)
        props, rules = world["props"], world["rules"]
        answer = _grant_rank(props, rules)
        naive = [_grant_rank(props, rules, frozenset({t})) for t in GRANT_TRAPS]
        biting = sum(n != answer for n in naive)
        if len(answer) >= 4 and biting >= trap_floor:
            break
    applications = world["applications"] + sum(1 for t, n in zip(GRANT_TRAPS, naive) if n != answer)
    return _exact(_grant_prompt(rng, world), ", ".join(answer), "list", decisive_facts=applications,
                  traps_biting=biting, funded=len(answer))


def _grant_world(rng: ItemRng, count: int) -> dict:
    year = rng.randint(2025, 2031)
    names = rng.sample(SURNAMES, 8)
    chair, panel = names[0], names[1:8]
    pis = rng.sample([f"{i}. {n}" for i in "ABCDEFGHJKLMNPRSTW" for n in SURNAMES if n not in names], count)
    depts = rng.sample(DEPARTMENTS, 6)
    window = rng.choice([5, 6, 7, 8])
    since_printed = year - window
    since_first = since_printed + rng.choice([-2, -1, 1, 2])
    since = rng.choice([y for y in range(since_printed - 3, since_printed + 4) if y not in (since_printed, since_first)])
    calibrated, raised = rng.sample(panel, 2)
    rules = {"year": year, "bonus": rng.choice([Fraction(1, 2), Fraction(1)]),
             "floor": rng.choice([Fraction(6), Fraction(13, 2)]), "since": since, "since_first": since_first,
             "since_printed": since_printed, "calibrated": calibrated, "raised": raised, "theme": rng.choice(THEMES),
             "chair": chair, "panel": panel}
    numbers = rng.sample(range(100, 1000), count)
    props = []
    for n, number in enumerate(numbers):
        reviewers = rng.sample(panel, 3)
        for special in (calibrated, raised):
            if special not in reviewers and rng.randint(1, 3) == 1:
                reviewers[rng.choice([k for k in range(3) if reviewers[k] not in (calibrated, raised)])] = special
        said = {r: rng.randint(4, 10) for r in reviewers}
        ask = 5000 * rng.randint(8, 40)
        award = rng.choice([None] * 5 + [f"RA-{rng.randint(1000, 9999)}", f"BR-{rng.randint(1000, 9999)}"])
        phd = year - rng.randint(2, 14)
        props.append({"id": f"G-{number}", "no": number, "pi": pis[n], "dept": rng.choice(depts), "ask": ask,
                      "final": ask, "phd": phd, "phd_true": phd, "award": award, "said": said, "true": {},
                      "first": {}, "corrected": set(), "struck": set(), "reinstated": set(), "withdrawn": False,
                      "project": CODENAMES[n % len(CODENAMES)] + ("" if n < len(CODENAMES) else f"-{n // len(CODENAMES) + 1}"),
                      "theme": rng.choice(THEMES + [None] * 4), "trim": None, "revised": None})
    applications = 0
    for p in rng.sample(props, count // 10):             # amounts trimmed in the meeting
        p["trim"] = p["final"] = max(20000, p["ask"] - 5000 * rng.randint(2, 8))
    for p in rng.sample(props, count // 20):             # and revised after it, by the office memo
        p["revised"] = p["final"] = max(20000, p["final"] - 5000 * rng.randint(1, 4))
    applications += count // 10 + count // 20
    late = []                                            # (slot after which it is said, text)
    n_fix, n_strike = count // 7, count // 14
    fixed = rng.sample(props, n_fix + n_strike + 2)
    for k, p in enumerate(fixed[:n_fix]):                # corrections, many by the reviewers whom a note adjusts
        special = [r for r in (calibrated, raised) if r in p["said"]]
        r = rng.choice(special) if special and rng.randint(1, 3) > 1 else rng.choice(list(p["said"]))
        p["first"][r] = p["true"][r] = rng.choice([v for v in range(3, 11) if v != p["said"][r]])
        p["corrected"].add(r)
        at = rng.randint(props.index(p), count)
        late.append((at, f"{r}: Correction for {p['id']}: I said {p['said'][r]} earlier, but my sheet says "
                         f"{p['true'][r]}. Please use {p['true'][r]}.\nCHAIR: Noted."))
        if k % 3 == 0:                                   # corrected again, later: the later correction wins
            again = rng.choice([v for v in range(3, 11) if v not in (p["said"][r], p["first"][r])])
            late.append((rng.randint(at, count), f"{r}: Sorry, {p['id']} once more: my correction was wrong too; "
                         f"the right score is {again}, not {p['first'][r]}.\nCHAIR: Noted; {again} it is."))
            p["true"][r] = again
            applications += 1
    for k, p in enumerate(fixed[n_fix:n_fix + n_strike]):
        r = rng.choice([x for x in p["said"] if x not in p["corrected"]])
        p["struck"].add(r)
        at = rng.randint(props.index(p), count)
        late.append((at, f"{r}: I have to declare a conflict on {p['id']}: the PI co-authored my last paper. "
                         "Please strike my score for it.\nCHAIR: Struck; that proposal is averaged over the remaining "
                         "scores."))
        if k % 3 == 0:                                   # a strike withdrawn: the score counts again
            p["reinstated"].add(r)
            late.append((rng.randint(at, count), f"{r}: About my conflict on {p['id']}: I have checked, and the "
                         "co-author was a namesake, not this PI. I withdraw the declaration.\nCHAIR: Then your score "
                         f"for {p['id']} is reinstated and counts as given."))
            applications += 1
    fixed[-2]["withdrawn"] = "meeting"
    fixed[-1]["withdrawn"] = "memo"
    pool = [p for p in props if p not in fixed]
    errata = rng.sample([p for p in pool if p["award"] is None], 2)
    for e in errata:                                     # an erratum that moves the PhD across the final cutoff
        e["phd_true"] = since + rng.randint(0, 2) if e["phd"] < since else since - rng.randint(1, 3)
    themed = sorted(p["final"] for p in props if p["theme"] == rules["theme"])
    rules["theme_max"] = 5000 * round(statistics.median(themed or [100000]) / 5000)
    applications += 2 * n_fix + 2 * n_strike + 4
    applications += sum(calibrated in p["said"] or raised in p["said"] for p in props)
    applications += sum(p["award"] is not None for p in props) + 2 * sum(p["theme"] == rules["theme"] for p in props)
    total = sum(p["final"] for p in props if not p["withdrawn"])
    rules["budget"] = 10000 * round(Fraction(rng.randint(24, 32), 100) * total / 10000)
    rules["cap"] = 10000 * round(Fraction(rng.randint(19, 25), 100) * rules["budget"] / 10000)
    hub = rng.choice(depts)
    rules["caps"] = {hub: 10000 * round(rules["cap"] * Fraction(rng.randint(55, 75), 100) / 10000)}
    return {"props": props, "rules": rules, "late": late, "errata": errata, "applications": applications,
            "hub": hub}


def _grant_prompt(rng: ItemRng, world: dict) -> str:
    props, rules, late = world["props"], world["rules"], world["late"]
    year, chair, panel = rules["year"], rules["chair"], rules["panel"]
    bonus = "1 point" if rules["bonus"] == 1 else "0.5 points"
    lines = [f"MINUTES OF THE PANEL MEETING, Research Fund {year} round. Present: {chair} (chair); "
             f"{', '.join(panel)}; the fund office (secretary).",
             "CHAIR: Welcome. We take the proposals in the order of the agenda. Reviewers give their remarks and "
             "their score; the office applies the rules to the scores as they stand at the end of the meeting."]
    aside = rng.sample(range(len(props)), 8)
    by_slot: dict[int, list[str]] = {}
    for when, text in late:
        by_slot.setdefault(when, []).append(text)
    for slot, p in enumerate(props):
        theme = f", submitted under the strategic theme '{p['theme']}'" if p["theme"] else ""
        lines.append(f"\nCHAIR: Next, {p['id']}: Dr {p['pi']} ({p['dept']}, PhD {p['phd']}) asks for ${p['ask']:,} "
                     f"for project {p['project']}{theme}.")
        reports = "; ".join(f"external reviewer {k + 1} ({rng.choice(['UK', 'NL', 'CA', 'DE', 'AU', 'SE'])}) grades it "
                            f"'{rng.choice(['excellent', 'very good', 'good', 'fair'])}' and writes that "
                            f"{' and '.join(rng.sample(EXTERNAL, 2))}" for k in range(rng.randint(1, 2)))
        lines.append(f"SECRETARY: For the record, {reports}.")
        for r, s in p["said"].items():
            remarks = " ".join(rng.sample(REMARKS, rng.randint(4, 6)))
            lines.append(f"{r}: {remarks} {rng.choice(SAYINGS).format(s=s)}")
        for question, reply in rng.sample(DIALOGUE, rng.randint(1, 3)):
            a, b = rng.sample(panel, 2)
            lines.append(f"{a}: {question}\n{b}: {reply}")
        lines.append(f"CHAIR: {rng.choice(CHAIR_LINES)} {rng.choice(FEEDBACK)}")
        other = rng.choice([x for x in panel if x not in p["said"]])
        lines.append(f"{other}: {' '.join(rng.sample(REMARKS, 2))} I am not scoring this one.")
        if p["trim"] is not None:
            lines.append(f"CHAIR: The applicant has agreed in writing to drop the conference line, so the request "
                         f"is now ${p['trim']:,}.")
        r = rng.choice(list(p["said"]))
        if p["award"] is not None:
            kind = "bridging award" if p["award"].startswith("BR-") else "research award"
            lines.append(f"{r}: Note that Dr {p['pi']} currently holds an active {kind} from this fund, "
                         f"{p['award']}, running until {year + 1}.")
        elif slot in aside[:4]:
            lines.append(f"{r}: Dr {p['pi']} had an award from us in {year - 6}; it closed in {year - 4}.")
        elif slot in aside[4:6]:
            lines.append(f"{r}: If they had added a data plan I would have gone to 10, but as it stands my score "
                         f"stays at {p['said'][r]}.\nCHAIR: Scores stand as given.")
        elif slot in aside[6:]:
            lines.append(f"{r}: Could we fund this at half the amount?\nCHAIR: No; awards are all or nothing.")
        lines += by_slot.get(slot, [])
    lines.append("\nCHAIR: Any other business before the office runs the ranking?")
    lines += by_slot.get(len(props), [])
    gone = next(p for p in props if p["withdrawn"] == "meeting")
    lines.append(f"SECRETARY: The office tells me {gone['id']} was withdrawn by the applicant this morning.")
    lines.append("CHAIR: Then the office will apply the rules to the scores as they now stand. Thank you all.")
    calibrated, raised = rules["calibrated"], rules["raised"]
    notes = [
        ("since", f"Clause 4 is replaced by: 'The early-career bonus is added if the principal investigator's PhD was "
                  f"awarded in {rules['since_first']} or later, unless the investigator currently holds an active "
                  "award from this fund. The PhD year is the one in the minutes, as corrected by any erratum in the "
                  "office memo.'"),
        ("calibration", f"Calibration. The calibration exercise found that Dr {calibrated} scores more generously than "
                        f"the rest of the panel and Dr {raised} more severely. Every score Dr {calibrated} gives in "
                        f"this round is lowered by 1 point (to no less than 1), and every score Dr {raised} gives is "
                        "raised by 1 point (to no more than 10), before averaging; except that a score its reviewer "
                        "corrects during the meeting is final as corrected and is neither lowered nor raised."),
        ("theme", f"Strategic theme. A proposal submitted under the strategic theme '{rules['theme']}' is exempt from "
                  "the department cap of clause 7: the cap does not limit it and its amount does not count towards "
                  "its department's total. It still needs the score floor and the budget."),
        ("bridging", "Bridging awards. Wherever the rules of this round, as clarified by any note, mention an active "
                     "award, a bridging award (reference starting BR-) does not count as one; a research award "
                     "(reference starting RA-) does."),
        ("hub", f"Department caps. {world['hub']} receives a separate allocation from the fund's hub programme this "
                f"year: its department cap in this round is ${rules['caps'][world['hub']]:,} instead of the cap of "
                "clause 7. Every other department keeps the clause 7 cap."),
    ]
    rng.shuffle(notes)
    since_at = [k for k, (tag, _) in enumerate(notes) if tag == "since"][0]
    theme_at = [k for k, (tag, _) in enumerate(notes) if tag == "theme"][0]
    late_notes = [("since-revision", f"Early-career window. In note CN-{since_at + 1}, the year {rules['since_first']} "
                                     f"is replaced by {rules['since']}; the rest of that note stands."),
                  ("theme-max", f"Strategic theme, limit. The exemption in note CN-{theme_at + 1} applies only to a "
                                f"themed proposal whose requested amount is at most ${rules['theme_max']:,}; a themed "
                                "proposal asking more is subject to its department's cap and counts towards it like "
                                "any other.")]
    rng.shuffle(late_notes)
    notes += late_notes
    clarifications = "\n\n".join(
        f"CLARIFICATION NOTE CN-{k + 1}, issued {_day(dt.date(year, 1, 20) + dt.timedelta(15 * k + rng.randint(0, 10)))}"
        f"\n{text}\nThis note prevails over the call, and over earlier notes, where they differ."
        for k, (_, text) in enumerate(notes))
    memo = [f"OFFICE MEMO after the meeting, {_day(dt.date(year, 6, 1) + dt.timedelta(rng.randint(0, 20)))}"]
    for p in props:
        if p["revised"] is not None:
            memo.append(f"- {p['id']}: following the meeting the applicant agreed a further reduction; the request is "
                        f"now ${p['revised']:,}.")
    for e in world["errata"]:
        memo.append(f"- Erratum to the minutes: Dr {e['pi']}'s PhD ({e['id']}) was awarded in {e['phd_true']}, not "
                    f"{e['phd']} as minuted.")
    late_gone = next(p for p in props if p["withdrawn"] == "memo")
    memo.append(f"- {late_gone['id']}: the applicant withdrew the proposal after the meeting; it is withdrawn.")
    memo.append(f"- Reminder: feedback letters go out in {rng.choice(MONTHS[6:])}; the panel's comments will be "
                "edited for tone.")
    rest = memo[1:]
    rng.shuffle(rest)
    memo[1:] = rest
    return GRANT_PROMPT.format(year=year, bonus=bonus, since=rules["since_printed"], floor=f"{float(rules['floor']):g}",
                               budget=f"{rules['budget']:,}", cap=f"{rules['cap']:,}", clarifications=clarifications,
                               minutes="\n".join(lines), memo="\n".join(memo))


GRANT_PROMPT = """You run the office of a research fund. Below are the call for proposals of the {year} round, the \
clarification notes issued during the round, the minutes of the panel meeting and the office memo written after \
it. Apply the rules and work out which proposals are funded.

CALL FOR PROPOSALS, {year} ROUND (the rules)
1. A proposal's panel score is the mean of its reviewers' scores, leaving out any score struck for a conflict of \
interest (a declaration its reviewer later withdraws in the meeting no longer strikes the score). If a reviewer \
corrects a score during the meeting, the corrected score is used; if they correct it more than once, the last \
correction counts. A panel member who says they are not scoring a proposal gives it no score. External reviewers' \
grades are advisory and enter no score.
2. Clarification notes issued during the round change these rules as they state and prevail over this call; where \
two notes differ, the later-issued one prevails.
3. The requested amount is the latest amount agreed with the applicant, in the meeting or after it (office memo).
4. Early-career bonus: add {bonus} to the panel score if the principal investigator's PhD was awarded in \
{since} or later, unless the investigator currently holds an active award from this fund. The PhD year is the one \
in the minutes, as corrected by any erratum in the office memo.
5. Proposals are ranked by adjusted score (panel score plus any bonus), highest first; ties go to the smaller \
requested amount, then to the lower proposal number. Withdrawn proposals (in the meeting or after it) are not \
ranked.
6. Going down the ranking, a proposal is funded at its full requested amount if (a) its adjusted score is at \
least {floor}, (b) the amount fits within what remains of the ${budget} budget, and (c) its department's total \
awards, including this one, would not exceed the department cap. Otherwise it is skipped and the next one is \
considered. There are no partial awards.
7. The department cap is ${cap}.

{clarifications}

{minutes}

{memo}

Question: which proposals are funded, in the order in which the procedure of clause 6 funds them?
End your response with a final line `ANSWER: <ids>` listing the funded proposal numbers in funding order, \
comma-separated, e.g. `ANSWER: G-101, G-202, G-303`."""


# ---------------------------------------------------------------- distribution rights under superseding documents

OWNERS = ["Kestrel Pictures", "Halvard Films", "Marlowe Studios", "Northlight Features"]
DISTRIBUTORS = ["Arbor Media", "Blue Quay Releasing", "Cobalt Screen", "Dunlin Distribution", "Eastwind Films",
                "Foxglove Media", "Granite Releasing", "Harbour Lights", "Ironbridge Pictures", "Juniper Screen",
                "Kingfisher Media", "Lanyard Films"]
TERRITORY_GROUPS = {"Nordics": ["Norway", "Denmark", "Finland", "Iceland", "Sweden"],
                    "Benelux": ["Belgium", "Netherlands", "Luxembourg"],
                    "Iberia": ["Portugal", "Spain", "Andorra"],
                    "Baltics": ["Estonia", "Latvia", "Lithuania"],
                    "Central Europe": ["Austria", "Hungary", "Poland", "Czechia", "Slovakia"]}
SINGLE_TERRITORIES = ["Greece", "Ireland", "Chile", "Mexico", "Turkey", "Romania"]
RIGHTS_TRAPS = ("signed", "notice", "future", "revival", "expiry", "schedule", "carve-out", "assignment",
                "revocation", "regroup")
BOILERPLATE = [
    "Definitions. 'Catalogue' means every feature film listed in the owner's catalogue schedule as updated from time "
    "to time; 'Gross receipts' means all sums received by the distributor from the exploitation of the catalogue.",
    "Exclusivity. During the term the owner will not license the catalogue to anyone else for the same media in the "
    "territories granted, except as this agreement allows.",
    "Media. The right covers theatrical, television, home video and online exploitation; festival screenings "
    "remain with {owner}, who informs the distributor at least {n} days before each one.",
    "Materials. The distributor returns or destroys all delivery materials within {n} days after the agreement ends "
    "and certifies that it has done so.",
    "Credits. The distributor keeps the owner's logo and credits unchanged in every release and in all marketing "
    "materials, in the size and position set out in the delivery schedule.",
    "Sublicensing. The distributor may sublicense television rights within its territories with {owner}'s prior "
    "written consent, which is not to be unreasonably withheld; it remains liable for its sublicensees.",
    "Payments. All sums are paid in US dollars to the owner's account without set-off; late payments bear interest "
    "at {n} per cent a year above the base rate.",
    "Taxes. Withholding taxes required by law may be deducted if the distributor provides the receipts the owner "
    "needs to claim the credit.",
    "Anti-piracy. The distributor takes reasonable steps against piracy in its territories and reports notable "
    "cases to {owner} within {n} days.",
    "Disputes. The parties try to settle any dispute by negotiation for {n} days before going to court.",
    "Delivery. {owner} delivers each title as a digital cinema package and a broadcast master within {n} days of "
    "the distributor's written request; the distributor bears the cost of any further versions.",
    "Marketing. The distributor decides the release strategy in consultation with {owner}, spends at least "
    "${m},000 a year on marketing across the territories, and submits trailers and key art for approval.",
    "Reporting. The distributor reports gross receipts, deductions and net receipts monthly, within {n} days of "
    "each month's end, in the owner's reporting template.",
    "Audit. {owner} may audit the distributor's books once in each calendar year on {n} days' notice; if the audit "
    "finds an underpayment of more than 5 per cent, the distributor pays its cost.",
    "Holdbacks. Within each territory, television release of a title follows its theatrical release by at least "
    "{n} months, unless {owner} agrees otherwise in writing.",
    "Confidentiality. Neither party discloses the terms of this agreement except to its advisers, auditors and "
    "financiers, or as the law requires.",
    "Warranties. {owner} warrants that it controls the rights granted and that the titles infringe no third "
    "party's rights; the distributor warrants that it will comply with local classification rules.",
    "Insurance. The distributor keeps errors-and-omissions insurance of at least ${m},000 per claim for the term.",
    "Force majeure. Neither party is liable for a delay caused by events beyond its reasonable control lasting "
    "less than {n} days; after that either party may suspend its obligations for the title concerned.",
    "Notices. Notices are given in writing to the addresses on the first page and are effective on the day they "
    "are given.",
]


def _month(d: dt.date, months: int) -> dt.date:
    """The first day of the month `months` after d's month."""
    index = d.year * 12 + d.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)


def _rights_prep(docs, rules):
    """What a reading under `rules` takes from the bundle once: binding documents and each country's grants."""
    binding = [d for d in docs if d["signed"] or "signed" not in rules]
    revoked = {id(d["target"]): d for d in binding if d["kind"] == "revoke"} if "revocation" in rules else {}
    binding = [d for d in binding if id(d) not in revoked]
    sched = next(d for d in docs if d["kind"] == "schedule")
    groups = sched["groups_true"] if "schedule" in rules else sched["groups_printed"]
    move = next(d for d in docs if d["kind"] == "regroup")
    after = {g: [t for t in ts if t != move["country"]] + ([move["country"]] if g == move["to"] else [])
             for g, ts in groups.items()}

    def covers(entries, when=None):
        # a grant names a group as the schedule stands on its effective date (misread: as it stands today)
        now = after if when is None or "regroup" not in rules or when >= move["eff"] else groups
        out = set()
        for name, excluded in entries:
            members = now.get(name, [name])
            out |= {t for t in members if t not in excluded or "carve-out" not in rules}
        return out

    by_country: dict[str, list] = {}
    for d in binding:
        if d["kind"] == "agreement":
            for t in covers(d["terr"], d["start"]):
                by_country.setdefault(t, []).append((d["start"], d["index"], d["id"], d))
        elif d["kind"] == "add":
            for t in covers([(d["terr"], ())]):
                by_country.setdefault(t, []).append((d["eff"], d["index"], d["of"], d))
    by_agreement: dict[str, list] = {}
    for d in binding:
        if isinstance(d.get("of"), str):
            by_agreement.setdefault(d["of"], []).append(d)
    return {"binding": binding, "revoked": revoked, "schedule": sched, "move": move, "groups": groups, "covers": covers, "by_country": by_country,
            "by_agreement": by_agreement, "revocations": [d for d in docs if d["kind"] == "revoke"], "agreements": {d["id"]: d for d in docs if d["kind"] == "agreement"}}


def _rights_holder(docs, territory, today, rules=RIGHTS_TRAPS, used=None, cache=None):
    """Who holds a territory on `today`; `rules` lists the rules honoured (all of them for the key)."""
    if cache is None:
        cache = {}
    if rules not in cache:
        cache[rules] = _rights_prep(docs, rules)
    prep = cache[rules]
    binding, revoked, groups, covers = prep["binding"], prep["revoked"], prep["groups"], prep["covers"]
    agreements = prep["agreements"]
    sched = prep["schedule"]
    grants = prep["by_country"].get(territory, [])
    grants = sorted((g for g in grants if g[0] <= today or "future" not in rules), key=lambda g: g[:2])

    def note(*docs_):
        if used is not None:
            used.update(x["index"] for x in docs_)
            used.update(r["index"] for r in revocations if any(r["target"] is x for x in docs_))

    revocations = prep["revocations"]
    considered = {g[2] for g in grants}
    for d in (r["target"] for r in revoked.values()):   # a revoked document that would otherwise bear on this country
        if d["kind"] == "add" and territory in covers([(d["terr"], ())]) or d["kind"] in (
                "extend", "terminate", "assign") and d["of"] in considered or d["kind"] == "remove" and d["of"] in \
                considered and d["terr"] == territory:
            note(d)

    def in_force(start, agreement):
        extensions = [d for d in prep["by_agreement"].get(agreement, []) if d["kind"] == "extend"]
        note(*extensions)
        end = extensions[-1]["end"] if extensions else agreements[agreement]["end"]   # the latest replacement
        if today > end and "expiry" in rules:
            return False
        for d in prep["by_agreement"].get(agreement, []):
            if d["kind"] == "remove" and d["terr"] == territory and start < d["eff"] <= today:
                note(d)
                return False
            if d["kind"] == "terminate":
                note(d)
                notice_end = d["given"] + dt.timedelta(agreements[agreement]["notice"])
                if (max(d["stated"], notice_end) if "notice" in rules else d["stated"]) < today:
                    return False
        return True

    note(*(g[3] for g in grants))
    if any(len(name) > 0 and name in groups for g in grants for name, _ in
           (g[3]["terr"] if g[3]["kind"] == "agreement" else [(g[3]["terr"], ())])):
        note(sched, *[d for d in docs if d["kind"] == "schedule-erratum"])
    if any(name in (prep["move"]["from"], prep["move"]["to"]) for g in grants if g[3]["kind"] == "agreement"
           for name, _ in g[3]["terr"]):
        note(prep["move"])
    for start, _, agreement, _ in reversed(grants):
        if in_force(start, agreement):
            holder = agreements[agreement]["dist"]
            for d in prep["by_agreement"].get(agreement, []):
                if d["kind"] == "assign" and d["eff"] <= today and "assignment" in rules:
                    holder = d["to"]
                    note(d)
            return holder
        if "revival" in rules:
            break
    return "none"


def distribution_rights(rng: ItemRng, *, agreements: int = 80, asked: int = 10, trap_floor: int = 7) -> Generated:
    """Who holds each of several territories on a date, under a long bundle of agreements and later documents."""
    countries = sorted({t for ts in TERRITORY_GROUPS.values() for t in ts} | set(SINGLE_TERRITORIES))
    while True:
        made = _rights_world(rng, agreements)
        if made is None:
            continue
        docs, today, owner = made
        cache: dict = {}
        holders = {t: _rights_holder(docs, t, today, cache=cache) for t in countries}
        bites = {t: {trap for trap in RIGHTS_TRAPS if _rights_holder(docs, t, today, tuple(
            r for r in RIGHTS_TRAPS if r != trap), cache=cache) != holders[t]} for t in countries}
        # the asked countries: first ones that make each rule matter, then the rest at random
        pool, chosen, seen = rng.sample(countries, len(countries)), [], set()
        for t in sorted(pool, key=lambda t: -len(bites[t])):
            if bites[t] - seen and len(chosen) < asked:
                chosen.append(t)
                seen |= bites[t]
        chosen += [t for t in pool if t not in chosen][:asked - len(chosen)]
        rng.shuffle(chosen)
        answer = [holders[t] for t in chosen]
        biting = len(seen)
        if biting >= trap_floor and answer.count("none") <= 3 and _rights_clean(docs, today, countries):
            break
    used: set = set()
    for t in chosen:
        _rights_holder(docs, t, today, used=used, cache=cache)
    return _exact(_rights_prompt(rng, docs, owner, today, chosen), ", ".join(answer), "list",
                  decisive_facts=len(used), traps_biting=biting)


def _rights_clean(docs, today, countries) -> bool:
    """Every boundary date lies at least three days from today and no two grants of a territory start together."""
    notice = {d["id"]: d["notice"] for d in docs if d["kind"] == "agreement"}
    boundaries = [d[k] for d in docs for k in ("start", "end", "eff", "stated") if k in d] + [
        d["given"] + dt.timedelta(notice[d["of"]]) for d in docs if d["kind"] == "terminate"]
    if any(abs((b - today).days) < 3 for b in boundaries):
        return False
    starts = {}
    for d in docs:
        if d["kind"] in ("agreement", "add"):
            starts.setdefault(d.get("start", d.get("eff")), []).append(d)
    return all(len(v) == 1 for v in starts.values())


def _rights_world(rng: ItemRng, count: int):
    statements = count // 2
    today = dt.date(rng.randint(2026, 2031), rng.randint(3, 11), rng.randint(8, 22))
    owner, dists = rng.choice(OWNERS), rng.sample(DISTRIBUTORS, 9)
    printed = {g: list(ts) for g, ts in TERRITORY_GROUPS.items()}
    true = {g: list(ts) for g, ts in TERRITORY_GROUPS.items()}
    fixed_group = rng.choice(list(TERRITORY_GROUPS))
    moved = rng.choice(true[fixed_group])
    printed[fixed_group].remove(moved)              # the schedule as printed omits one country; an erratum adds it
    docs: list[dict] = [{"kind": "schedule", "signed": True, "groups_true": true, "groups_printed": printed,
                         "date": _month(today, -rng.randint(60, 72))}]
    docs.append({"kind": "schedule-erratum", "signed": True, "group": fixed_group, "country": moved,
                 "date": _month(today, -rng.randint(30, 50)) + dt.timedelta(rng.randint(0, 20))})
    country, source = rng.choice([(t, g) for g, ts in true.items() for t in ts if t != moved])
    eff = _month(today, -rng.randint(2, 7))
    docs.append({"kind": "regroup", "signed": True, "country": country, "from": source, "eff": eff,
                 "to": rng.choice([g for g in TERRITORY_GROUPS if g != source]),
                 "date": eff - dt.timedelta(rng.randint(20, 60))})
    names = list(TERRITORY_GROUPS) + SINGLE_TERRITORIES
    made = []

    def agreement(dist, terr, start, end):
        docs.append({"kind": "agreement", "dist": dist, "terr": terr, "start": start, "end": end,
                     "notice": rng.choice([30, 60, 90]), "signed": True,
                     "date": start - dt.timedelta(rng.randint(10, 45)), "fee": 5000 * rng.randint(4, 30)})
        made.append(docs[-1])
        return docs[-1]

    def amend(kind, of, signed=True, **fields):
        date = max(of["date"] + dt.timedelta(20), fields.get("eff", today) - dt.timedelta(rng.randint(15, 60)))
        docs.append({"kind": kind, "of": of, "signed": signed, "date": min(date, today - dt.timedelta(2)), **fields})
        return docs[-1]

    for k in range(count):
        picks = rng.sample(names, rng.randint(1, 3))
        terr = []
        for name in picks:
            excluded = tuple(rng.sample(true[name], 1)) if name in true and rng.randint(1, 3) == 1 else ()
            terr.append((name, excluded))
        start = _month(today, -rng.randint(4, 48)) + dt.timedelta(rng.randint(0, 20))
        end = _month(today, rng.randint(-10, 30)) - dt.timedelta(1)
        if end <= start + dt.timedelta(200):
            end = _month(start, rng.randint(12, 36)) - dt.timedelta(1)
        agreement(dists[k % len(dists)], terr, start, end)
    future = agreement(rng.choice(dists), [(rng.choice(names), ())], _month(today, rng.randint(1, 5)),
                       _month(today, 40) - dt.timedelta(1))
    future["date"] = today - dt.timedelta(rng.randint(20, 90))
    live = [a for a in made if a is not future]
    for a in rng.sample(live, count // 4):
        amend("extend", a, signed=rng.randint(1, 3) > 1, end=_month(today, rng.randint(2, 20)) - dt.timedelta(1))
    for a in rng.sample(live, count // 4):
        countries = [t for name, ex in a["terr"] for t in true.get(name, [name]) if t not in ex]
        amend("remove", a, terr=rng.choice(countries), eff=_month(today, rng.randint(-10, 4)))
    for a, signed in [(x, rng.randint(1, 4) > 1) for x in rng.sample(live, count // 3)]:
        amend("add", a, signed=signed, terr=rng.choice(SINGLE_TERRITORIES + [t for ts in true.values() for t in ts]),
              eff=_month(today, -rng.randint(1, 18)) + dt.timedelta(rng.randint(0, 20)))
    for a in rng.sample(live, 2):
        amend("fee", a, fee=5000 * rng.randint(4, 30), eff=_month(today, -rng.randint(1, 9)))
    for a in rng.sample(live, max(2, count // 6)):
        deed = amend("assign", a, signed=rng.randint(1, 4) > 1, by=a["dist"],
                     to=rng.choice([d for d in DISTRIBUTORS if d not in dists]),
                     eff=_month(today, -rng.randint(1, 14)) + dt.timedelta(rng.randint(0, 25)))
        if deed["signed"] and rng.randint(1, 2) == 1:     # the assignee assigns the agreement on in its turn
            onward = amend("assign", a, signed=rng.randint(1, 4) > 1, by=deed["to"],
                           to=rng.choice([d for d in DISTRIBUTORS if d != deed["to"]]),
                           eff=deed["eff"] + dt.timedelta(rng.randint(20, 250)))
            onward["date"] = max(onward["date"], deed["date"] + dt.timedelta(5))
    for target, past in [(rng.choice(live), k == 0) for k in range(2 + count // 8)]:
        wait = rng.randint(target["notice"] + 5, target["notice"] + 120) if past else rng.randint(3, 25)
        given = max(target["date"] + dt.timedelta(20), today - dt.timedelta(wait))
        docs.append({"kind": "terminate", "of": target, "signed": True, "date": given, "given": given,
                     "stated": given + dt.timedelta(rng.randint(1, 20)), "by": rng.choice(["owner", "dist"])})
    for target in rng.sample([d for d in docs if d["kind"] in ("add", "remove", "extend", "terminate")
                              and d["signed"]], count // 5):
        docs.append({"kind": "revoke", "target": target, "of": target["of"], "signed": rng.randint(1, 4) > 1,
                     "date": min(target["date"] + dt.timedelta(rng.randint(10, 150)), today - dt.timedelta(2))})
    docs.append({"kind": "add", "of": rng.choice(live), "signed": False, "email": True,
                 "terr": rng.choice(SINGLE_TERRITORIES), "eff": _month(today, -rng.randint(1, 6)),
                 "date": today - dt.timedelta(rng.randint(60, 200))})
    for _ in range(statements):
        a = rng.choice(made)
        docs.append({"kind": "statement", "of": a, "signed": False, "date": today - dt.timedelta(rng.randint(20, 700)),
                     "lines": [(t, rng.randint(2000, 90000)) for t in rng.sample(
                         [x for name, _ in a["terr"] for x in true.get(name, [name])] + [rng.choice(names)], 2)]})
    for _ in range(4):
        docs.append({"kind": "note", "of": rng.choice(live), "signed": False, "claim": rng.randint(1, 2) == 1,
                     "terr": rng.choice(names), "date": today - dt.timedelta(rng.randint(10, 600))})
    def away(day: dt.date) -> dt.date:   # no boundary within three days of today: inclusive or not never matters
        return day if abs((day - today).days) >= 3 else day + dt.timedelta(7 if day >= today else -7)

    starts = set()
    for d in docs:
        if d["kind"] == "terminate" and abs((d["given"] + dt.timedelta(d["of"]["notice"]) - today).days) < 3:
            d["given"] = d["date"] = d["given"] - dt.timedelta(7)
        for k in ("start", "end", "eff", "stated"):
            if k in d:
                d[k] = away(d[k])
        if d["kind"] in ("agreement", "add"):
            k = "start" if d["kind"] == "agreement" else "eff"
            while d[k] in starts or abs((d[k] - today).days) < 3:   # no two grants start on one day
                d[k] += dt.timedelta(1)
            starts.add(d[k])
    docs.sort(key=lambda d: d["date"])
    last: dict[int, dt.date] = {}        # no two documents of one agreement share a date (they are cited by date)
    for d in docs:
        of = d if d["kind"] == "agreement" else d.get("of") if d["kind"] not in ("statement", "note") else None
        if of is not None and not d.get("email"):
            if id(of) in last and d["date"] <= last[id(of)]:
                d["date"] = last[id(of)] + dt.timedelta(1)
            last[id(of)] = d["date"]
        if d["kind"] == "terminate":
            d["given"] = d["date"]
    docs.sort(key=lambda d: d["date"])
    if docs[-1]["date"] >= today:
        return None
    first = rng.randint(11, 80)
    for n, d in enumerate(docs):
        d["index"] = n
    for n, d in enumerate(x for x in docs if x["kind"] == "agreement"):
        d["id"] = f"DA-{first + n}"
    for d in docs:
        if isinstance(d.get("of"), dict):
            d["of"] = d["of"]["id"]
    return docs, today, owner


def _rights_prompt(rng: ItemRng, docs: list[dict], owner: str, today: dt.date, asked: list[str]) -> str:
    """Render the bundle in date order, with the general terms and the question."""
    dist = {d["id"]: d["dist"] for d in docs if d["kind"] == "agreement"}

    def terr_text(entries):
        return ", ".join(name + (f" (excluding {', '.join(ex)})" if ex else "") for name, ex in entries)

    blocks = []
    for d in docs:
        kind = d["kind"]
        if kind == "schedule":
            groups = "\n".join(f"  {g}: {', '.join(ts)}" for g, ts in d["groups_printed"].items())
            blocks.append(f"SCHEDULE OF TERRITORY GROUPS, issued by {owner} on {_day(d['date'])} and incorporated "
                          "in every distribution agreement\nWhere an agreement or amendment names a group, it "
                          "means every country listed for that group here:\n" + groups)
        elif kind == "schedule-erratum":
            blocks.append(f"ERRATUM TO THE SCHEDULE OF TERRITORY GROUPS, {_day(d['date'])}, agreed in writing with "
                          f"every distributor\n{d['country']} was omitted from the {d['group']} group by a clerical "
                          f"error. The schedule is to be read, from its issue, as if {d['country']} had always been "
                          f"listed in {d['group']}.")
        elif kind == "regroup":
            blocks.append(f"AMENDMENT TO THE SCHEDULE OF TERRITORY GROUPS, {_day(d['date'])}, agreed in writing with "
                          f"every distributor\nWith effect from {_day(d['eff'])}, {d['country']} moves from the "
                          f"{d['from']} group to the {d['to']} group. A grant naming a group covers the countries of "
                          f"that group as the schedule stands on the grant's effective date: a grant that took effect "
                          f"before {_day(d['eff'])} keeps the countries it covered, and a grant taking effect on or "
                          f"after {_day(d['eff'])} follows the new grouping.")
        elif kind == "agreement":
            clauses = [f"1. Grant. {owner} grants {d['dist']} the exclusive right to distribute its catalogue in "
                       f"{terr_text(d['terr'])} from {_day(d['start'])} to {_day(d['end'])} inclusive.",
                       f"2. Fees. {d['dist']} pays a minimum guarantee of ${d['fee']:,} per territory per year, "
                       "quarterly in advance.",
                       f"3. Termination. Either party may terminate this agreement by written notice. Termination "
                       f"takes effect on the date stated in the notice or {d['notice']} days after the notice is "
                       "given, whichever is later.",
                       "4. Changes. This agreement can be changed only by an amendment signed by both parties; its "
                       "rights can be assigned only by a deed of assignment signed by both parties."]
            clauses += [f"{k + 5}. " + x.format(owner=owner, n=rng.randint(10, 90), m=rng.randint(20, 400))
                        for k, x in enumerate(rng.sample(BOILERPLATE, 10))]
            clauses.append(f"{len(clauses) + 1}. Law. This agreement is governed by the law of England and Wales.")
            blocks.append(f"DISTRIBUTION AGREEMENT {d['id']}, signed {_day(d['date'])} by {owner} and {d['dist']}\n"
                          + "\n".join(clauses))
        elif d.get("email"):
            blocks.append(f"EMAIL, {_day(d['date'])}, from the head of sales at {owner} to {dist[d['of']]}\n"
                          f"\"Following our call: we are happy for you to take {d['terr']} from {_day(d['eff'])} "
                          f"under {d['of']}. Legal will paper it in due course.\"")
        elif kind == "statement":
            figures = "; ".join(f"{t}: gross receipts ${v:,}" for t, v in d["lines"])
            blocks.append(f"STATEMENT OF RECEIPTS, {_day(d['date'])}, from {dist[d['of']]} to {owner}, for the "
                          f"quarter just ended\n{figures}. Net sums due to {owner} will be paid with the next "
                          "quarterly instalment. (A statement reports sales; it grants no rights.)")
        elif kind == "note" and d["claim"]:
            blocks.append(f"LETTER, {_day(d['date'])}, from {dist[d['of']]} to {owner}\n\"Whatever the paperwork "
                          f"says, we consider ourselves entitled to distribute in {d['terr']} and we reserve all our "
                          "rights.\"")
        elif kind == "note":
            blocks.append(f"EMAIL, {_day(d['date'])}, from {dist[d['of']]} to {owner}\n\"We are planning a festival "
                          f"release in {d['terr']} next spring and would welcome a larger marketing contribution. "
                          "Can we discuss at the market?\"")
        elif kind == "terminate":
            party = owner if d["by"] == "owner" else dist[d["of"]]
            blocks.append(f"NOTICE OF TERMINATION under clause 3 of {d['of']}, given by {party} on "
                          f"{_day(d['given'])}\n\"We hereby terminate {d['of']}. The agreement will end on "
                          f"{_day(d['stated'])}.\"")
        elif kind == "assign":
            status = "signed by both parties" if d["signed"] else "DRAFT, circulated for comment, not signed"
            blocks.append(f"DEED OF ASSIGNMENT of {d['of']}, dated {_day(d['date'])}, {status}\n{d['by']} "
                          f"assigns all its rights and obligations under {d['of']} to {d['to']} with effect from "
                          f"{_day(d['eff'])}. {d['to']} steps into {d['by']}'s place; every other term of "
                          f"{d['of']} is unchanged.")
        elif kind == "revoke" and d["target"]["kind"] == "terminate":
            status = "signed by both parties" if d["signed"] else "DRAFT, circulated for comment, not signed"
            blocks.append(f"WITHDRAWAL OF NOTICE OF TERMINATION of {d['of']}, dated {_day(d['date'])}, {status}\n"
                          f"The notice of termination of {d['of']} given on {_day(d['target']['given'])} is withdrawn "
                          f"with the consent of both parties and is to be treated as never given; {d['of']} "
                          "continues.")
        elif kind == "revoke":
            status = "signed by both parties" if d["signed"] else "DRAFT, circulated for comment, not signed"
            blocks.append(f"AMENDMENT TO {d['of']} ({dist[d['of']]}), dated {_day(d['date'])}, {status}\nThe "
                          f"amendment to {d['of']} dated {_day(d['target']['date'])} is revoked from the start: it is "
                          "to be treated as never made, and its change never took effect.")
        else:
            status = "signed by both parties" if d["signed"] else "DRAFT, circulated for comment, not signed"
            change = {"extend": lambda: f"The end date in clause 1 is replaced by {_day(d['end'])}.",
                      "fee": lambda: f"With effect from {_day(d['eff'])}, the minimum guarantee in clause 2 is "
                                     f"${d['fee']:,} per territory per year. No other term changes.",
                      "add": lambda: f"With effect from {_day(d['eff'])}, {d['terr']} is added to the territories "
                                     "in clause 1.",
                      "remove": lambda: f"With effect from {_day(d['eff'])}, {d['terr']} is removed from the "
                                        "territories in clause 1."}[kind]()
            blocks.append(f"AMENDMENT TO {d['of']} ({dist[d['of']]}), dated {_day(d['date'])}, {status}\n{change}")
    return RIGHTS_PROMPT.format(owner=owner, documents="\n\n".join(blocks), today=_day(today),
                                asked=", ".join(asked), slots=", ".join(f"<holder{k + 1}>" for k in range(len(asked))))


RIGHTS_PROMPT = """You are in the legal team of {owner}, a film studio. Below is the complete bundle of \
documents about the distribution rights to its catalogue, in date order.

General terms (they govern every document in the bundle):
1. Rights change only through signed agreements, amendments signed by both parties, deeds of assignment signed \
by both parties, notices of termination, withdrawals of notices signed by both parties and the schedule of \
territory groups with its erratum. Nothing else changes them: not drafts, emails or letters.
2. A grant runs from its effective date (an agreement's start date, or the effective date of an amendment adding \
a territory) to the agreement's end date inclusive, as replaced by any signed amendment, unless the territory is \
removed from that agreement or the agreement terminates first. An amendment counts even when it is dated or \
takes effect after its agreement's end date: a replaced end date makes the agreement run again to the new end \
date, and a territory added from a day after the end date (as replaced by any signed amendment) is a grant that \
never runs but still, under term 3, ends every earlier grant of that country on its effective date.
3. A grant naming a territory group covers every country of that group in the schedule (as corrected, and as it \
stands on the grant's effective date), except the countries it expressly excludes. A grant of a country, directly or through a group, ends every earlier grant \
of that same country, to anyone, on the new grant's effective date, permanently: an earlier grant does not revive \
when the later one ends.
4. A terminated agreement ends on the later of the date stated in the notice and the end of the notice period \
of its clause 3, counted from the day the notice was given.
5. From the effective date of a signed deed of assignment, the assignee holds every right of the agreement in \
place of the assignor (the original distributor, or the assignee of an earlier deed), for as long as the agreement \
grants it.
6. A signed amendment that revokes an earlier amendment, or a signed withdrawal of a notice of termination, makes \
that earlier document count as never made, from the start: a territory it added was never granted under it (so \
that grant never ended any earlier grant), a removal or a replaced end date it made never happened, a notice it \
withdraws never terminated anything. A draft revocation or withdrawal changes nothing.
7. A territory can have no distributor at all.

{documents}

Question: today is {today}. Who holds the distribution right in each of these countries today: {asked}?
End your response with a final line `ANSWER: {slots}`: for each country in the order of the question, the \
distributor's name exactly as written in the documents, or `none` if no one holds the right."""
