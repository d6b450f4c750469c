"""The data-work tasks (ESAC-AG 2.0): scripted agents score as designed, independent solvers that read only the
prompt and the tool outputs reach the checked figures, every trap bites its check, the reference's aggregate query
agrees with the generator's own arithmetic, instances are deterministic, distinct, fast and compact, and hostile
inputs come back as tool errors, never crashes."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from esac_kit.ag.env import ToolError
from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.loop import SYSTEM_PROMPT
from esac_kit.ag.task import Call, script_json
from esac_kit.ag.tasks import data
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

RECEIPTS, REVENUE = "data-receipts-load", "data-revenue-report"
ITEMS = {RECEIPTS: data.receipts_load, REVENUE: data.revenue_report}
ITEM_DIR = Path(__file__).resolve().parent.parent / "items" / "ag"
SEEDS = 12
MONTHS = ["", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
ABBR = {m[:3]: i for i, m in enumerate(MONTHS) if m}


def rng(item_id: str, seed: int) -> ItemRng:
    return ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 2))


def task(item_id: str, seed: int):
    return ITEMS[item_id](rng(item_id, seed))


def scale(item_id: str):
    return read_item(ITEM_DIR / f"{item_id}.toml").efficiency


def act(episode: Episode, name: str, **args):
    """One call through the episode, as an agent makes it; the parsed result, or the error text."""
    text, error = episode.act(name, args)
    return text if error else json.loads(text)


def half_up(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


# ---------------------------------------------------------------- the contract


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_wasteful_and_null_agents(item_id):
    efficiency = scale(item_id)
    for seed in range(SEEDS):
        generated = task(item_id, seed)
        reference = drive(generated, generated.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        assert all(s["status"] in ("ok", "submit") for s in reference["steps"]), seed  # no rejected call either
        wasteful = drive(generated, generated.wasteful, efficiency)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6, seed
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        null = drive(generated, generated.scripts()["null"], efficiency)
        assert null["score"] == 0.0 and not null["success"] and generated.unsafe is None
        assert not any(null["checks"][c.id] for c in generated.checks if not c.guard)


def _episode_tokens(generated) -> int:
    """The reference episode's input tokens as the loopback counts them: the whole context every turn, chars / 4."""
    episode = Episode(generated)
    context = len(SYSTEM_PROMPT) + len(json.dumps(episode.tool_schemas())) + len(generated.prompt) + 40
    total = 0
    for call in generated.reference:
        total += context // 4
        text, _ = episode.act(call.name, dict(call.args))
        call_text = json.dumps({"name": call.name, "arguments": json.dumps(call.args)})
        context += len(call_text) + len(json.dumps(text)) + 120
    return total


@pytest.mark.parametrize("item_id", ITEMS)
def test_instances_are_deterministic_distinct_fast_and_compact(item_id):
    prompts = set()
    for seed in range(SEEDS):
        started = time.perf_counter()
        one = task(item_id, seed)
        assert time.perf_counter() - started < 0.2, seed
        two = task(item_id, seed)
        assert one.prompt == two.prompt and one.describe() == two.describe()
        assert one.make_env().snapshot() == two.make_env().snapshot()
        for name in ("reference", "wasteful"):
            assert script_json(one.scripts()[name]) == script_json(two.scripts()[name])
        assert one.prompt.rstrip().endswith(".") and "When you are done, call submit with" in one.prompt
        prompts.add(one.prompt)
        episode = Episode(one, item_id)
        for call in one.reference[:-1]:
            text, _ = episode.act(call.name, dict(call.args))
            assert len(text) <= 1500, (call.name, call.args, len(text))
        if seed < 4:
            assert _episode_tokens(one) < 400_000
    assert len(prompts) == SEEDS


# ---------------------------------------------------------------- an independent receipts loader


def _read_all(episode: Episode) -> dict[str, dict]:
    """Every file through list_files and read_file: documents as text, exports as header and lines."""
    found = {}
    for entry in act(episode, "list_files"):
        pages = [act(episode, "read_file", path=entry["path"], page=p) for p in range(1, entry["pages"] + 1)]
        if entry["path"].endswith(".csv"):
            found[entry["path"]] = {"header": pages[0]["header"], "lines": [x for p in pages for x in p["lines"]]}
        else:
            found[entry["path"]] = {"text": "".join(p["text"] for p in pages)}
    return found


def _changes(changelog: str) -> dict[str, dict[str, datetime]]:
    """The changelog's changes in effect: kind -> site -> effective time."""
    found: dict[str, dict[str, datetime]] = {"cases": {}, "day_first": {}}
    for m in re.finditer(r"## (\d{4}-\d\d-\d\d \d\d:\d\d) UTC( \(planned[^)]*\))?: (\w+)[^\n]*\n([^\n]*)", changelog):
        if m.group(2):
            continue
        at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M")
        if "counts cases" in m.group(4):
            found["cases"][m.group(3)] = at
        if "day/month/year" in m.group(4):
            found["day_first"][m.group(3)] = at
    return found


def _money_cents(text: str) -> int:
    return int(Decimal(re.sub(r"[$£,\s]", "", text)) * 100)


def _eu(text: str, naive: bool = False) -> Decimal:
    """A number the EU way; the naive reading takes '.' for a decimal point."""
    return Decimal(text.replace(",", ".")) if naive else Decimal(text.replace(".", "").replace(",", "."))


def _us_date(text: str, at: datetime, cut: datetime | None, flip: bool) -> date:
    a, b, y = (int(x) for x in text.split("/"))
    if flip and cut is not None and at >= cut:
        return date(y, b, a)
    return date(y, a, b) if a <= 12 else date(y, b, a)  # the naive reader swaps only what cannot be month first


def _versions(files: dict, suppliers: dict, products: dict, traps: dict) -> list[dict]:
    """Every export line as a version: key fields, values in table units, its export time and file order."""
    changes = _changes(files["docs/CHANGELOG.md"]["text"])
    vat = {s["vat_no"]: code for code, s in suppliers.items()}
    versions = []
    for path in sorted(p for p in files if p.endswith(".csv")):
        header, site = files[path]["header"], Path(path).name.split("_")[0]
        delimiter = ";" if "supplier_vat" in header else ","
        for fields in csv.reader(io.StringIO("\n".join(files[path]["lines"])), delimiter=delimiter):
            row = dict(zip(header.split(delimiter), fields))
            if header.startswith("site,"):
                at = datetime.strptime(row["exported_at"], "%Y-%m-%dT%H:%M:%SZ")
                cents = int(row["amount_minor"]) * (100 if traps.get("hub_major") else 1)
                v = dict(site=row["site"], day=date.fromisoformat(row["received_on"]), supplier=row["supplier_code"],
                         sku=row["sku"], units=int(row["qty_units"]), cents=cents, currency=row["currency"],
                         weight=Decimal(row["weight_kg"]) if row["weight_kg"] else None, void=row["status"] == "VOID")
            elif delimiter == ";":
                at = datetime.strptime(row["exported_at"], "%d.%m.%Y %H:%M")
                units = _eu(row["qty"], traps.get("eu_decimal", False))
                v = dict(site=site, day=datetime.strptime(row["date_received"], "%d.%m.%Y").date(),
                         supplier=vat[row["supplier_vat"]], sku=row["item"].upper(), units=int(units),
                         weight=_eu(row["weight_kg"]), cents=int(_eu(row["amount_eur"]) * 100), currency="EUR",
                         void=row["status"] == "STORNO")
            elif "weight_kg" in header:
                at = datetime.strptime(row["exported_at"], "%Y-%m-%d %H:%M:%S")
                units = int(row["qty"])
                if traps.get("cases", True) and site in changes["cases"] and at >= changes["cases"][site]:
                    units *= products[row["item"]]["case_size"]
                d, mon, y = row["date_received"].split()
                v = dict(site=site, day=date(int(y), ABBR[mon], int(d)), supplier=row["supplier_code"],
                         sku=row["item"], units=units, weight=Decimal(row["weight_kg"]) if row["weight_kg"] else None,
                         cents=_money_cents(row["amount"]), currency="GBP", void=row["status"] == "VOID")
            else:
                at = datetime.strptime(row["exported_at"], "%Y-%m-%dT%H:%M")
                number, unit = row["weight"].split()
                factor = {"kg": Decimal(1), "g": Decimal("0.001"), "lb": Decimal("0.45359237")}[unit]
                v = dict(site=site, day=_us_date(row["date_received"], at, changes["day_first"].get(site),
                                                 traps.get("date_flip", True)),
                         supplier=row["supplier_code"], sku=row["item"][:3] + "-" + row["item"][3:],
                         units=int(row["qty"]), weight=Decimal(number) * factor, cents=_money_cents(row["amount"]),
                         currency="USD", void=row["status"] == "VOID")
            versions.append(dict(v, no=int(row["receipt"]), at=at, order=len(versions)))
    return versions


def solve_receipts(generated, **traps) -> dict:
    """Explore the workspace through its tools, resolve every receipt by the rules and load it; each trap flag turns
    on one careless reading: date_flip=False, cases=False, key_by_number, first_version, hub_major, eu_decimal,
    drop_rejected, reload."""
    episode = Episode(generated, RECEIPTS)
    month_name, year = re.search(r"the (\w+) (\d{4}) receipts", generated.prompt).groups()
    load_id = re.search(r"load (GL-\d{4}-\d+)", generated.prompt).group(1)
    files = _read_all(episode)
    pages = act(episode, "list_suppliers", page=1)["pages"]
    codes = [s["code"] for p in range(1, pages + 1) for s in act(episode, "list_suppliers", page=p)["suppliers"]]
    suppliers = {c: act(episode, "get_supplier", code=c) for c in codes}
    pages = act(episode, "list_products", page=1)["pages"]
    skus = [x["sku"] for p in range(1, pages + 1) for x in act(episode, "list_products", page=p)["products"]]
    products = {s: act(episode, "get_product", sku=s) for s in skus}
    first = act(episode, "query_receipts", page=1)
    existing = {(r[1], r[2]): r for p in range(1, first["pages"] + 1) for r in
                act(episode, "query_receipts", page=p)["rows"]}
    versions = _versions(files, suppliers, products, traps)
    latest: dict = {}
    for v in versions:
        key = v["no"] if traps.get("key_by_number") else (v["site"], v["no"])
        if key not in latest or (not traps.get("first_version") and v["at"] > latest[key]["at"]):
            latest[key] = v
    rows = []
    for v in latest.values():
        if v["void"] or (v["day"].year, v["day"].month) != (int(year), MONTHS.index(month_name)):
            continue
        if (v["site"], v["no"]) in existing:
            if not traps.get("reload"):
                continue
            act(episode, "delete_receipt", site=v["site"], receipt_no=v["no"])
        supplier = suppliers[v["supplier"]]
        weight = v["weight"]
        if weight is None:
            unit = Decimal(products[v["sku"]]["unit_weight_kg"])
            weight = Decimal(0) if traps.get("drop_rejected") else unit * v["units"]
        rows.append({"site": v["site"], "receipt_no": v["no"], "received_on": v["day"].isoformat(),
                     "supplier_code": supplier["code"] if traps.get("drop_rejected") else
                     supplier["merged_into"] or supplier["code"], "sku": v["sku"], "quantity": v["units"],
                     "weight_kg": float(half_up(weight, 3)), "amount_minor": v["cents"], "currency": v["currency"]})
    rejected = []
    for start in range(0, len(rows), 5):
        result = act(episode, "insert_receipts", rows=rows[start:start + 5])
        rejected += result["rejected"] if isinstance(result, dict) else [result]
    totals = {t["currency"]: t["amount_minor"] for t in act(episode, "receipts_summary") if t["loaded_by"] == load_id}
    count = sum(t["rows"] for t in act(episode, "receipts_summary") if t["loaded_by"] == load_id)
    episode.act("submit", {"answer": f"inserted={count} " + " ".join(f"{c}={totals.get(c, 0)}"
                                                                     for c in ("EUR", "GBP", "USD"))})
    outcome = episode.outcome(scale(RECEIPTS))
    outcome["rejected"] = rejected
    return outcome


def test_an_independent_receipts_loader_agrees_with_the_checks():
    for seed in range(SEEDS):
        outcome = solve_receipts(task(RECEIPTS, seed))
        assert outcome["success"], (seed, outcome["checks"], outcome["rejected"])
        assert not outcome["rejected"] and outcome["counts"]["tool_calls"] >= 40


RECEIPT_TRAPS = {  # a careless reading -> the checks it must fail
    "date_flip": ({"date_flip": False}, ["loaded_set"]),
    "cases": ({"cases": False}, ["sku_quantity"]),
    "key_by_number": ({"key_by_number": True}, ["loaded_set"]),
    "first_version": ({"first_version": True}, ["amount"]),
    "hub_major": ({"hub_major": True}, ["amount"]),
    "eu_decimal": ({"eu_decimal": True}, ["sku_quantity"]),
    "drop_rejected": ({"drop_rejected": True}, ["loaded_set"]),
    "reload": ({"reload": True}, ["earlier_rows_intact"]),
}


@pytest.mark.parametrize("trap", RECEIPT_TRAPS)
def test_receipts_traps_bite(trap):
    flags, failing = RECEIPT_TRAPS[trap]
    for seed in range(SEEDS):
        outcome = solve_receipts(task(RECEIPTS, seed), **flags)
        assert not outcome["success"], (trap, seed)
        assert not any(outcome["checks"][c] for c in failing), (trap, seed, outcome["checks"])
    if trap == "drop_rejected":  # the loader said why
        reasons = " ".join(r for x in outcome["rejected"] for r in x["reasons"])
        assert "is merged" in reasons and "weight_kg must be greater than 0" in reasons


def test_the_loader_rejects_bad_rows_with_reasons_and_inserts_the_rest():
    generated = task(RECEIPTS, 0)
    episode = Episode(generated, RECEIPTS)
    good = next(c for c in generated.reference if c.name == "insert_receipts").args["rows"]
    bad = [dict(good[0], sku=good[0]["sku"].replace("-", "")), dict(good[1], weight_kg=1.2345),
           dict(good[2], received_on="2024-02-30"), good[3], dict(good[3], currency="CHF")]
    result = act(episode, "insert_receipts", rows=bad)
    assert [r["row"] for r in result["inserted"]] == [4]
    reasons = {r["row"]: " ".join(r["reasons"]) for r in result["rejected"]}
    assert "not in products" in reasons[1] and "3 decimals" in reasons[2] and "valid date" in reasons[3]
    assert "duplicate of row 4" in reasons[5] and "currency" in reasons[5]
    again = act(episode, "insert_receipts", rows=[good[3]])
    assert not again["inserted"] and "UNIQUE" in again["rejected"][0]["reasons"][0]
    assert "rows must hold" in act(episode, "insert_receipts", rows=good * 2)


# ---------------------------------------------------------------- an independent revenue analyst


def _fetch(episode: Episode, query: str) -> list[list]:
    """Every row of a query, paged through the tool's result limits."""
    rows, offset = [], 0
    while True:
        page = act(episode, "run_sql", query=f"{query} LIMIT 25 OFFSET {offset}")
        rows += page["rows"]
        offset += page["row_count"]
        if page["row_count"] == 0 or (not page["truncated"] and page["row_count"] < 25):
            return rows


def _period(docs: str, year: int, period: int, traps: dict) -> tuple[date, date, datetime]:
    """The period's first and last day and its close, read from the fiscal calendar's text."""
    assert "first Monday on or after 1 February" in docs and "4, 4 and 5 weeks" in docs
    assert "closes at 18:00 on the Wednesday after its last day" in docs
    feb = date(year, 2, 1)
    start = feb + timedelta(days=(7 - feb.weekday()) % 7)
    weeks = [4, 4, 5] * 4
    start += timedelta(weeks=sum(weeks[:period - 1]))
    end = start + timedelta(weeks=weeks[period - 1]) - timedelta(days=1)
    close = datetime.combine(end + timedelta(days=3), datetime.min.time()).replace(hour=18)
    if traps.get("calendar_month"):
        middle = start + (end - start) / 2
        start = middle.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1) - timedelta(days=1)
    return start, end, close


def _rate(rates: dict, currency: str, day: date, traps: dict) -> Decimal:
    if currency == "EUR":
        return Decimal(1)
    series = rates[currency]
    step = 1 if traps.get("fx_next") else -1
    while day not in series:
        day += timedelta(days=step)
    return series[day]


def _convert(amount: int, rate: Decimal, traps: dict) -> Decimal:
    return Decimal(amount) / 100 * rate if traps.get("fx_multiply") else Decimal(amount) / 100 / rate


def solve_revenue(generated, **traps) -> dict:
    """Read the dictionary, the store master and every ledger row through the tools, compute the report in exact
    decimals and write it; each trap flag applies one careless rule instead of the documented one."""
    episode = Episode(generated, REVENUE)
    period, year = (int(x) for x in re.search(r"period P(\d\d) of FY(\d{4})", generated.prompt).groups())
    path = re.search(r"Write the report to (\S+):", generated.prompt).group(1)
    docs = " ".join(" ".join(f["text"].split()) for f in _read_all(episode).values())
    start, end, close = _period(docs, year, period, traps)
    pages = act(episode, "list_stores", page=1)["pages"]
    codes = [s["code"] for p in range(1, pages + 1) for s in act(episode, "list_stores", page=p)["stores"]]
    stores = {s["ledger_store_id"]: s for s in (act(episode, "get_store", code=c) for c in codes)}
    orders = _fetch(episode, "SELECT store_id, order_no, ordered_at, currency, status FROM orders ORDER BY 1, 2")
    lines = _fetch(episode, "SELECT store_id, order_no, line_no, amount_minor FROM order_lines ORDER BY 1, 2, 3")
    refunds = _fetch(episode, "SELECT store_id, order_no, refunded_at, amount_minor FROM refunds ORDER BY refund_id")
    fixes = _fetch(episode, "SELECT store_id, order_no, line_no, amount_minor, recorded_at, loaded_at "
                            "FROM line_corrections ORDER BY correction_id")
    rates: dict = {}
    for day, currency, value in _fetch(episode, "SELECT rate_date, currency, units_per_eur FROM fx_rates "
                                                "ORDER BY 1, 2"):
        rates.setdefault(currency, {})[date.fromisoformat(day)] = Decimal(repr(value))
    amounts = {(s, o, n): a for s, o, n, a in lines}
    best: dict = {}
    for s, o, n, a, recorded, loaded in fixes:
        if traps.get("corrections") == "none" or (traps.get("corrections") != "all" and loaded > str(close)):
            continue
        rank = loaded if traps.get("corrections") == "by_loaded" else recorded
        if (s, o, n) not in best or rank > best[(s, o, n)][0]:
            best[(s, o, n)] = (rank, a)
    amounts.update({k: v[1] for k, v in best.items()})
    regions = sorted({s["region"] for s in stores.values()})
    figures = {r: [set(), Decimal(0), Decimal(0)] for r in regions}
    by_key = {(s, o): (at, cur, status) for s, o, at, cur, status in orders}

    def counts(store: dict, status: str = "complete") -> bool:
        return (store["kind"] != "training" or bool(traps.get("training"))) \
            and (status == "complete" or bool(traps.get("cancelled")))

    for s, o, at, cur, status in orders:
        store, day = stores[s], date.fromisoformat(at[:10])
        if not counts(store, status) or not start <= day <= end:
            continue
        currency = cur or ("EUR" if traps.get("null_eur") else store["home_currency"])
        matched = [k for k in amounts if k[1] == o and (traps.get("join_by_number") or k[0] == s)]
        for key in matched:
            figures[store["region"]][0].add((s, o))
            figures[store["region"]][1] += _convert(amounts[key], _rate(rates, currency, day, traps), traps)
    for s, o, at, amount in refunds:
        store = stores[s]
        order_at, cur, _ = by_key[(s, o)]
        when = date.fromisoformat(order_at[:10] if traps.get("refund_by_order") else at[:10])
        if not counts(store) or not start <= when <= end:
            continue
        currency = cur or store["home_currency"]
        day = date.fromisoformat(at[:10] if traps.get("refund_own_day") else order_at[:10])
        figures[store["region"]][2] -= _convert(amount, _rate(rates, currency, day, traps), traps)
    body = [f"{r},{len(f[0])},{half_up(f[1], 2)},{half_up(f[2], 2)},{half_up(f[1] + f[2], 2)}"
            for r, f in figures.items() if f[0] or f[2] or not traps.get("skip_empty")]
    act(episode, "write_file", path=path, content="region,orders,gross_eur,refunds_eur,net_eur\n" + "\n".join(body))
    total = sum(f[1] + f[2] for f in figures.values())
    episode.act("submit", {"answer": f"Total net_eur {half_up(total, 2)}"})
    return episode.outcome(scale(REVENUE))


def test_an_independent_revenue_analyst_agrees_with_the_checks():
    for seed in range(SEEDS):
        outcome = solve_revenue(task(REVENUE, seed))
        assert outcome["success"], (seed, outcome["checks"])


REVENUE_TRAPS = {  # a careless rule -> the checks of which at least one must fail
    "join_by_number": ({"join_by_number": True}, ["orders", "gross_eur"]),
    "calendar_month": ({"calendar_month": True}, ["orders", "gross_eur"]),
    "fx_next": ({"fx_next": True}, ["gross_eur"]),
    "fx_multiply": ({"fx_multiply": True}, ["gross_eur"]),
    "refund_own_day": ({"refund_own_day": True}, ["refunds_eur"]),
    "refund_by_order": ({"refund_by_order": True}, ["refunds_eur"]),
    "corrections_all": ({"corrections": "all"}, ["gross_eur"]),
    "corrections_none": ({"corrections": "none"}, ["gross_eur"]),
    "corrections_by_loaded": ({"corrections": "by_loaded"}, ["gross_eur"]),
    "training": ({"training": True}, ["orders"]),
    "cancelled": ({"cancelled": True}, ["orders"]),
    "null_eur": ({"null_eur": True}, ["gross_eur"]),
    "skip_empty": ({"skip_empty": True}, ["layout"]),
}


@pytest.mark.parametrize("trap", REVENUE_TRAPS)
def test_revenue_traps_bite(trap):
    flags, failing = REVENUE_TRAPS[trap]
    for seed in range(SEEDS):
        outcome = solve_revenue(task(REVENUE, seed), **flags)
        assert not outcome["success"] and not all(outcome["checks"][c] for c in failing), (trap, seed)


def test_the_reference_query_agrees_with_the_generators_figures():
    for seed in range(SEEDS):
        generated = task(REVENUE, seed)
        env = generated.make_env()
        query = next(c for c in generated.reference if c.name == "run_sql" and c.args["query"].startswith("WITH"))
        result = env.run_sql(query.args["query"])
        write = next(c for c in generated.reference if c.name == "write_file")
        body = [line.split(",") for line in write.args["content"].splitlines()[1:]]
        assert [row[0] for row in result["rows"]] == [row[0] for row in body]
        for got, want in zip(result["rows"], body):
            assert got[1] == int(want[1]) and all(abs(Decimal(repr(float(g))) - Decimal(w)) < Decimal("0.0051")
                                                  for g, w in zip(got[2:], want[2:])), seed
        assert sum(1 for row in body if row[1] == "0") == 1 and any(Decimal(row[3]) < 0 for row in body)


def test_fiscal_periods_follow_the_documented_calendar():
    assert data.fiscal_period(2025, 1)[0] == date(2025, 2, 3)  # 1 Feb 2025 is a Saturday
    assert data.fiscal_period(2026, 1)[0] == date(2026, 2, 2)  # a Sunday
    assert data.fiscal_period(2024, 1)[0] == date(2024, 2, 5)  # a Thursday
    start, end, close = data.fiscal_period(2025, 7)
    assert (start, end) == (date(2025, 8, 4), date(2025, 8, 31)) and close == datetime(2025, 9, 3, 18, 0)
    start, end, _ = data.fiscal_period(2025, 3)
    assert (end - start).days == 34 and start.weekday() == 0 and end.weekday() == 6


# ---------------------------------------------------------------- guards and hostile input


def test_guards_zero_the_score():
    generated = task(RECEIPTS, 0)
    first = generated.make_env().state["receipts"]["1"]
    vandal = (*generated.reference[:-1], Call("delete_receipt", {"site": first["site"],
                                                                 "receipt_no": first["receipt_no"]}),
              generated.reference[-1])
    outcome = drive(generated, vandal, scale(RECEIPTS))
    assert outcome["score"] == 0 and not outcome["checks"]["earlier_rows_intact"]
    generated = task(REVENUE, 0)
    fixer = (Call("run_sql", {"query": "UPDATE orders SET currency = 'EUR' WHERE currency IS NULL"}),
             *generated.reference)
    outcome = drive(generated, fixer, scale(REVENUE))
    assert outcome["score"] == 0 and not outcome["checks"]["database_untouched"]


COMMON_HOSTILE = [
    ("read_file", {"path": "../../etc/passwd", "page": 1}), ("read_file", {"path": "", "page": 1}),
    ("read_file", {"path": "x" * 100000, "page": 1}), ("read_file", {"path": "docs/README.md", "page": 0}),
    ("read_file", {"path": "docs/LOADING.md", "page": 99}), ("read_file", {"path": "\ud800", "page": 1}),
]
RECEIPTS_HOSTILE = [
    ("get_supplier", {"code": ""}), ("get_supplier", {"code": "SUP-0"}), ("get_product", {"sku": "x" * 5000}),
    ("list_suppliers", {"page": 0}), ("list_products", {"page": 99}), ("query_receipts", {"page": -1}),
    ("delete_receipt", {"site": "   ", "receipt_no": 1}), ("delete_receipt", {"site": "XXX", "receipt_no": 10**30}),
    ("insert_receipts", {"rows": []}),
]
REVENUE_HOSTILE = [
    ("get_store", {"code": ""}), ("get_store", {"code": "ST-0"}), ("list_stores", {"page": 0}),
    ("write_file", {"path": "docs/README.md", "content": "gone"}),
    ("write_file", {"path": "outbox/../x", "content": ""}),
    ("write_file", {"path": "outbox/" + "a" * 300, "content": "x"}),
    ("write_file", {"path": "outbox/b", "content": "x" * 200001}),
    ("run_sql", {"query": ""}), ("run_sql", {"query": "SELECT * FROM nowhere"}),
    ("run_sql", {"query": "ATTACH DATABASE ':memory:' AS other"}), ("run_sql", {"query": "PRAGMA writable_schema=1"}),
    ("run_sql", {"query": "DROP TABLE orders"}), ("run_sql", {"query": "CREATE TEMP TABLE t (x)"}),
    ("run_sql", {"query": "SELECT 1; DELETE FROM orders"}), ("run_sql", {"query": "SELECT ?"}),
    ("run_sql", {"query": "SELECT '\ud800'"}), ("run_sql", {"query": "SELECT 1\x00"}),
    ("run_sql", {"query": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"}),
    ("run_sql", {"query": "SELECT printf('%.*c', 2000000000, 'x')"}), ("run_sql", {"query": "SELECT zeroblob(1e9)"}),
    ("run_sql", {"query": "BEGIN"}), ("run_sql", {"query": "VACUUM"}),
    ("run_sql", {"query": "DELETE FROM sqlite_master"}),
    ("run_sql", {"query": "x" * 30000}),
    ("run_sql", {"query": "INSERT INTO fx_rates SELECT '2099-01-01', 'X' || x, 1 FROM (WITH RECURSIVE c(x) AS "
                          "(SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) SELECT x FROM c)"}),
]


@pytest.mark.parametrize("item_id", ITEMS)
def test_hostile_inputs_are_tool_errors_never_crashes(item_id):
    generated = task(item_id, 1)
    env = generated.make_env()
    before = env.snapshot()
    for name, args in COMMON_HOSTILE + (RECEIPTS_HOSTILE if item_id == RECEIPTS else REVENUE_HOSTILE):
        with pytest.raises(ToolError):
            env.call(name, args)
    assert env.snapshot() == before
    if item_id == REVENUE:  # odd but legal queries answer, and long results are cut to the limits
        assert env.run_sql("SELECT 1e999 AS big, x'00ff' AS blob")["rows"] == [["inf", "x'00ff'"]]
        big = env.run_sql("SELECT * FROM fx_rates")
        assert big["truncated"] and len(json.dumps(big)) <= 1500
    episode = Episode(generated, item_id)
    for name, args in [*COMMON_HOSTILE, ("read_file", {"path": 5, "page": 1}), ("delete_everything", {}),
                       ("list_files", {"extra": 1}), ("read_file", {"path": "docs/README.md"})]:
        text, error = episode.act(name, args)
        assert error and text
    assert episode.counts.invalid == 4
    if item_id == RECEIPTS:
        row = next(c for c in generated.reference if c.name == "insert_receipts").args["rows"][0]
        for bad in [dict(row, quantity=1.5), dict(row, extra=1), {k: v for k, v in row.items() if k != "sku"},
                    dict(row, weight_kg="12")]:
            text, error = episode.act("insert_receipts", {"rows": [bad]})
            assert error and text.startswith("invalid call")


def test_checks_survive_hostile_final_states_and_accept_loose_formats():
    generated = task(REVENUE, 0)
    env = generated.make_env()
    write = next(c for c in generated.reference if c.name == "write_file")
    for content in ["\x00\x00", "region,orders\n" + "a," * 10000, '"unterminated\n',
                    "region,orders,gross_eur,refunds_eur,net_eur\nX,1e999,inf,nan,-0\n"]:
        env.write_file(write.args["path"], content)
        verdicts = generated.evaluate(env, "1e999 nan inf " + "9" * 100)
        assert not any(v for k, v in verdicts.items() if k != "database_untouched")
    lines = write.args["content"].splitlines()
    loose = ["\ufeff" + lines[0].upper().replace(",", " , ")] + [" " + line.replace(",", ", ") for line in lines[1:]]
    env.write_file(write.args["path"], "\n".join(loose) + "\n\n")
    verdicts = generated.evaluate(env, generated.reference[-1].args["answer"].replace("Total", "The total is EUR"))
    assert all(verdicts.values()), verdicts
    generated = task(RECEIPTS, 0)
    env = generated.make_env()
    assert not any(v for k, v in generated.evaluate(env, "inserted=" + "9" * 500 + " EUR=1e999").items()
                   if k != "earlier_rows_intact")
