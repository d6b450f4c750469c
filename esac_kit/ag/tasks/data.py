"""Data work (ESAC-AG 2.0): long loads and reports whose data quirks are found only by reading paged files, detail
views and a data dictionary. A goods-in load from four paged exports in different formats (a mid-file format
change documented only in a changelog, versions to resolve across files by a stated key, a loader whose
constraints reject rows that must be fixed, not dropped), and a closed fiscal-period revenue report over an SQLite
ledger (composite join keys, refunds by their own day at the order's rate, dated FX rates with gaps, late-arriving
corrections and a 4-4-5 fiscal calendar), every figure computed by the generator on its own."""

from __future__ import annotations

import calendar
import copy
import csv
import io
import re
import sqlite3
import time as clock
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from esac_kit.ag.answers import distinct_ints, two_decimals
from esac_kit.ag.env import Environment, ToolError, paged as _paged, text_arg as _text, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

PAGE_CHARS = 1400       # characters of one page of a document
EXPORT_PAGE = 6         # data lines of one page of an export (the header comes with every page)
MAX_QUERY = 20_000      # characters of one SQL statement
MAX_FILE = 100_000      # characters of one written file
MAX_ROWS = 30           # rows a query returns to the model
MAX_RESULT = 1400       # characters of a query result: rows beyond it are cut
MAX_CELL = 300          # characters of one text cell returned to the model
MAX_CHANGES = 2000      # rows one statement may insert, update or delete
TICK_OPCODES = 20       # VM instructions between progress-handler calls
STEP_LIMIT = 50_000     # progress-handler calls (so 1M VM instructions) before a statement is interrupted
WALL_LIMIT_S = 2.0      # a safety net for slow built-in functions; the step budget is the real limit
DENIED_FUNCTIONS = {"printf", "format"}  # '%.*c' with a huge precision loops without yielding to the handler
WRITABLE = "outbox/"
PATH_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*")
READ_ONLY_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                     "foreign_key_list"}
ALLOWED_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE,
                   sqlite3.SQLITE_DELETE, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
MONTH_ABBR = [calendar.month_abbr[m] for m in range(13)]
MONTH_NAMES = [calendar.month_name[m] for m in range(13)]
COMPANIES = ["Northwind Supply", "Kestrel Hardware", "Marlow & Finch", "Tallgrass Outfitters", "Copperleaf Goods",
             "Harbor Lane Traders", "Silverbirch Home", "Brightwater Tools", "Oakmere Builders", "Fenwick Provisions",
             "Saltmarsh Marine", "Larkspur Interiors"]
PEOPLE = ["Priya", "Tomas", "Ingrid", "Malik", "Sofia", "Kenji", "Amara", "Lucas", "Hannah", "Diego", "Yara", "Owen",
          "Leila", "Piotr", "Naomi", "Felix"]


# ---------------------------------------------------------------- shared helpers




def _doc_pages(text: str) -> list[str]:
    """A document cut at line ends into pages of at most PAGE_CHARS characters."""
    pages, current = [], ""
    for line in text.splitlines(keepends=True):
        if current and len(current) + len(line) > PAGE_CHARS:
            pages.append(current)
            current = ""
        current += line
    return pages + [current] if current else pages or [""]


def _normal_path(path: str) -> str:
    key = path.strip()
    while key.startswith("./") or key.startswith("/"):
        key = key[2:] if key.startswith("./") else key[1:]
    return key


class FilesMixin:
    """Paged reading of the workspace's files: documents by pages of text, CSV exports by pages of lines."""

    state: dict[str, Any]

    def _pages(self, path: str) -> int:
        text = self.state["files"][path]
        if path.endswith(".csv"):
            return max(1, -(-(len(text.splitlines()) - 1) // EXPORT_PAGE))
        return len(_doc_pages(text))

    @tool("List the workspace's files with their number of pages.")
    def list_files(self):
        return [{"path": path, "pages": self._pages(path)} for path in sorted(self.state["files"])]

    @tool("Read one page of a file (pages count from 1). A CSV file's page gives its header and up to "
          f"{EXPORT_PAGE} data lines, as written in the file; other files give their text.",
          {"path": {"type": "string", "description": "the file's path as list_files shows it"},
           "page": {"type": "integer"}})
    def read_file(self, path: str, page: int):
        key = _normal_path(path)
        if key not in self.state["files"]:
            raise ToolError(f"no file {path[:200]!r}; call list_files to see the paths")
        text = self.state["files"][key]
        if key.endswith(".csv"):
            lines = text.splitlines()
            listing = _paged(lines[1:], page, EXPORT_PAGE)
            first = (page - 1) * EXPORT_PAGE + 1
            return {"path": key, "page": page, "pages": listing["pages"], "header": lines[0],
                    "lines": listing["rows"], "first_line": first}
        pages = _doc_pages(text)
        if not 1 <= page <= len(pages):
            raise ToolError(f"page must be between 1 and {len(pages)}")
        return {"path": key, "page": page, "pages": len(pages), "text": pages[page - 1]}


def _half_up(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _decimal(value: Any) -> Decimal | None:
    """A number from a cell or a stored value, ignoring spaces, thousands separators and currency marks."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, (int, float)):
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    else:
        text = re.sub(r"(?i)eur|usd|gbp|[€$£\s,]", "", str(value))
        if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", text) or len(text) > 40:
            return None
        try:
            number = Decimal(text)
        except InvalidOperation:
            return None
    return number if number.is_finite() else None


def _integer(value: Any) -> int | None:
    number = _decimal(value)
    return int(number) if number is not None and number == number.to_integral_value() else None


def _rounded_ok(value: Any, exact: Decimal, places: int) -> bool:
    """True when the value is `exact` correctly rounded to `places` decimals (either way at a tie)."""
    number = _decimal(value)
    if number is None:
        return False
    scaled = number * (10 ** places)
    return abs(scaled - scaled.to_integral_value()) < Decimal("1e-6") \
        and abs(number - exact) <= Decimal(5) / (10 ** (places + 1)) + Decimal("1e-9")


def _numbers(text: str) -> list[Decimal]:
    """Every number written in a free-text answer (thousands separators allowed)."""
    found = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)
    return [d for d in (_decimal(f) for f in found[:200]) if d is not None]


# ---------------------------------------------------------------- task 1: a goods-in load from four exports

US_SITES = [("DAY", "Dayton"), ("TUL", "Tulsa"), ("FRE", "Fresno"), ("BOI", "Boise")]
EU_SITES = [("GDN", "Gdansk"), ("BRE", "Bremen"), ("GHE", "Ghent"), ("POR", "Porto")]
UK_SITES = [("LDS", "Leeds"), ("BHM", "Birmingham"), ("GLA", "Glasgow"), ("BRS", "Bristol")]
STYLE_CURRENCY = {"us": "USD", "eu": "EUR", "uk": "GBP"}
SUPPLIER_POOL = [("Acme Fasteners", "US"), ("Baltic Timber", "PL"), ("Crown Packaging", "GB"),
                 ("Delta Polymers", "DE"), ("Evergreen Textiles", "NL"), ("Fjord Metals", "DK"),
                 ("Granite Adhesives", "GB"), ("Helix Electrics", "DE"), ("Ironbridge Castings", "GB"),
                 ("Juniper Paper", "FR"), ("Keystone Glass", "US"), ("Lumen Lighting", "BE"),
                 ("Meridian Tools", "PL"), ("Nordic Hinges", "DK")]
PRODUCT_POOL = {"BRK": "Bracket", "PNL": "Panel", "CBL": "Cable reel", "FST": "Fastener box", "GLU": "Glue drum",
                "HNG": "Hinge set", "VLV": "Valve", "PMP": "Pump", "SHT": "Sheet", "TUB": "Tube",
                "RIV": "Rivet box", "WSH": "Washer box"}
CASE_SIZES = [6, 8, 10, 12, 20, 24]
LB = Decimal("0.45359237")
BATCH = 5               # rows one insert_receipts call takes
RECEIPT_PAGE = 8        # rows of one query_receipts page
SUPPLIER_PAGE = 5
PRODUCT_PAGE = 6
RECEIPT_FIELDS = ("site", "receipt_no", "received_on", "supplier_code", "sku", "quantity", "weight_kg",
                  "amount_minor", "currency")
ROW_SCHEMA = {"type": "object", "properties": {
    "site": {"type": "string"}, "receipt_no": {"type": "integer"}, "received_on": {"type": "string"},
    "supplier_code": {"type": "string"}, "sku": {"type": "string"}, "quantity": {"type": "integer"},
    "weight_kg": {"type": "number"}, "amount_minor": {"type": "integer"}, "currency": {"type": "string"}},
    "required": list(RECEIPT_FIELDS), "additionalProperties": False}
RECEIPTS_TABLE = {
    "table": "receipts",
    "columns": [["id", "INTEGER", "set by the loader"], ["site", "TEXT", "a site code"],
                ["receipt_no", "INTEGER", "> 0"], ["received_on", "TEXT", "a valid date YYYY-MM-DD"],
                ["supplier_code", "TEXT", "REFERENCES suppliers(code); the supplier must be active"],
                ["sku", "TEXT", "REFERENCES products(sku)"], ["quantity", "INTEGER", "> 0"],
                ["weight_kg", "REAL", "> 0, at most 3 decimals"], ["amount_minor", "INTEGER", "> 0"],
                ["currency", "TEXT", "one of EUR, GBP, USD"], ["loaded_by", "TEXT", "set by the loader: the load id"]],
    "constraints": ["UNIQUE (site, receipt_no)"],
}


@dataclass
class ReceiptsWorld:
    """A month's goods-in exports, their rules, the tables they load into and the rows a correct load inserts."""

    company: str
    manager: str
    period: str
    load_id: str
    sites: dict[str, str]           # style -> site code
    state: dict[str, Any]           # files, suppliers, products, receipts (the initial, model-visible state)
    expected: dict[tuple, dict]     # (site, receipt_no) -> the loaded row, weight_kg exact
    lines: list[dict]               # every export line: src, at, rec (for the tests' cross-checks)
    needed_skus: list[str]          # products whose detail a correct load needs


class _Draws:
    """The seeded draws of one month's receipts: dates, unique export minutes and clean receipt records."""

    def __init__(self, rng: ItemRng, year: int, month: int, suppliers: dict[str, dict], products: dict[str, dict]):
        self.rng, self.year, self.month = rng, year, month
        self.days = calendar.monthrange(year, month)[1]
        self.prev_last = date(year, month, 1) - timedelta(days=1)
        self.active = [c for c, s in suppliers.items() if s["status"] == "active"]
        self.merged = next(c for c, s in suppliers.items() if s["status"] == "merged")
        self.products = products
        self.used: set[datetime] = set()

    def day(self, d: int) -> date:
        return date(self.year, self.month, d)

    def at(self, day: date, low: int = 8, high: int = 20, seconds: bool = False) -> datetime:
        """An export time on a day, in a minute no other line uses."""
        while True:
            moment = datetime(day.year, day.month, day.day, self.rng.randint(low, high), self.rng.randint(0, 59))
            if moment not in self.used:
                self.used.add(moment)
                return moment.replace(second=self.rng.randint(0, 59)) if seconds else moment

    def receipt(self, style: str, site: str, day: date, **over: Any) -> dict:
        """One receipt as its site recorded it; UK quantities are whole cases of the product."""
        rng = self.rng
        sku = over.pop("sku", None) or rng.choice(sorted(self.products))
        units = rng.randint(1, 30) * self.products[sku]["case_size"] if style == "uk" else rng.randint(2, 480)
        if style == "us":
            form = rng.choice(["kg", "g", "lb"])
            weight = {"kg": Decimal(rng.randint(200, 90000)) / 1000, "g": Decimal(rng.randint(120, 9800)),
                      "lb": Decimal(rng.randint(10, 1800)) / 10}[form]
        else:
            form, weight = "kg", Decimal(rng.randint(500, 250000 if style == "uk" else 2500000)) / 1000
        record = {"site": site, "no": 0, "day": day, "supplier": rng.choice(self.active), "sku": sku,
                  "units": units, "form": form, "weight": weight, "cents": rng.randint(1500, 950000),
                  "currency": STYLE_CURRENCY[style], "void": False}
        record.update(over)
        return record

    def changed_cents(self, cents: int) -> int:
        return max(500, cents + self.rng.choice([-1, 1]) * self.rng.randint(120, 9000))


def _kilograms(record: dict, products: dict[str, dict]) -> Decimal:
    """A record's exact weight in kg: its shown weight converted, or the catalogue's weight when it has none."""
    if record["form"] is None:
        return Decimal(products[record["sku"]]["unit_weight_kg"]) * record["units"]
    return {"kg": record["weight"], "g": record["weight"] / 1000, "lb": record["weight"] * LB}[record["form"]]


def _number_receipts(rng: ItemRng, roles: list[tuple[str, dict]], start: int) -> None:
    """Give a site's receipts increasing numbers in the order they were received."""
    number = start
    for _, record in sorted(roles, key=lambda r: r[1]["day"]):
        number += rng.randint(1, 3)
        record["no"] = number


def _us_site(d: _Draws, site: str, start: int) -> tuple[list[tuple[str, dict]], list[dict], datetime]:
    """The US-style site: a locale change mid-file flips its dates from month/day to day/month."""
    rng, last = d.rng, d.days
    cut_day = rng.randint(4, 7)
    cut = datetime(d.year, d.month, cut_day, 12, 0)
    ambiguous = rng.sample([x for x in range(cut_day + 1, 13) if x != d.month], 2)
    days = [("out", d.prev_last), ("pre", d.day(1)), ("early", d.day(rng.randint(2, cut_day - 1))),
            ("amb", d.day(ambiguous[0])), ("amb", d.day(ambiguous[1])),
            ("revive", d.day(rng.randint(cut_day + 1, last - 3))),
            ("hubfix", d.day(rng.randint(cut_day + 1, last - 3))), ("merged", d.day(rng.randint(2, last))),
            *[("plain", d.day(rng.randint(13, last))) for _ in range(rng.randint(4, 5))]]
    roles = [(role, d.receipt("us", site, day, **({"supplier": d.merged} if role == "merged" else {})))
             for role, day in days]
    _number_receipts(rng, roles, start)
    lines = []
    for role, record in roles:
        if role == "out":
            lines.append({"src": "us", "at": d.at(d.day(1), 6, 11), "rec": record})
        elif role == "revive":
            lines.append({"src": "us", "at": d.at(record["day"], 8, 12), "rec": dict(record, void=True)})
            record.update(cents=d.changed_cents(record["cents"]))
            lines.append({"src": "us", "at": d.at(record["day"] + timedelta(days=rng.randint(1, 2))), "rec": record})
        else:
            lines.append({"src": "us", "at": d.at(record["day"]), "rec": record})
    return roles, lines, cut


def _eu_site(d: _Draws, site: str, start: int) -> tuple[list[tuple[str, dict]], list[dict]]:
    """The EU-style site: decimal commas, suppliers by VAT number, voids written STORNO."""
    rng, last = d.rng, d.days
    days = [("out", d.prev_last), ("pre", d.day(rng.randint(1, 2))), ("big", d.day(rng.randint(3, last))),
            ("storno", d.day(rng.randint(2, last - 2))), ("hubfix", d.day(rng.randint(2, last - 3))),
            ("hubvoid", d.day(rng.randint(2, last - 3))), ("merged", d.day(rng.randint(2, last))),
            *[("plain", d.day(rng.randint(2, last))) for _ in range(rng.randint(5, 6))]]
    roles = []
    for role, day in days:
        over: dict[str, Any] = {"supplier": d.merged} if role == "merged" else {}
        if role == "big":
            over["units"] = rng.randint(1001, 2400)
        roles.append((role, d.receipt("eu", site, day, **over)))
    _number_receipts(rng, roles, start)
    lines = []
    for role, record in roles:
        if role == "out":
            lines.append({"src": "eu", "at": d.at(d.day(1), 6, 11), "rec": record})
            continue
        lines.append({"src": "eu", "at": d.at(record["day"]), "rec": record})
        if role == "storno":
            lines.append({"src": "eu", "at": d.at(record["day"] + timedelta(days=rng.randint(1, 2))),
                          "rec": dict(record, void=True)})
    return roles, lines


def _uk_site(d: _Draws, site: str, start: int) -> tuple[list[tuple[str, dict]], list[dict], datetime]:
    """The UK-style site: a firmware change mid-file makes qty count cases; some receipts have no weight."""
    rng, last = d.rng, d.days
    cut_day = rng.randint(12, 17)
    cut = datetime(d.year, d.month, cut_day, 6, 0)
    days = [("pre", d.day(rng.randint(1, 2))), ("blank", d.day(rng.randint(2, cut_day - 1))),
            ("stale", d.day(rng.randint(2, cut_day - 4))), ("blank", d.day(rng.randint(cut_day, last))),
            *[("cases", d.day(rng.randint(cut_day, last))) for _ in range(3)],
            ("merged", d.day(rng.randint(2, last))),
            *[("plain", d.day(rng.randint(2, last))) for _ in range(rng.randint(4, 5))]]
    roles = []
    for role, day in days:
        over: dict[str, Any] = {"supplier": d.merged} if role == "merged" else {}
        if role == "blank":
            over.update(form=None, weight=None)
        roles.append((role, d.receipt("uk", site, day, **over)))
    _number_receipts(rng, roles, start)
    lines = []
    for role, record in roles:
        lines.append({"src": "uk", "at": d.at(record["day"], seconds=True), "rec": record})
        if role == "stale":  # corrected two or three days later; the hub resends the first version in between
            later = dict(record, cents=d.changed_cents(record["cents"]))
            lines.append({"src": "uk", "at": d.at(record["day"] + timedelta(days=rng.randint(2, 3)), seconds=True),
                          "rec": later})
    return roles, lines, cut


def _hub_copy(record: dict, products: dict[str, dict], **over: Any) -> dict:
    """A record as the hub resends it: weight in kg to 3 decimals (none stays none)."""
    copied = dict(record, **over)
    if copied["form"] is not None:
        copied.update(form="kg", weight=_half_up(_kilograms(copied, products), 3))
    return copied


def _hub_lines(d: _Draws, roles: dict[str, list[tuple[str, dict]]], sites: dict[str, str]) -> list[dict]:
    """The hub's resends: newer corrections and voids, a stale copy, a copy of a loaded receipt, plain copies and
    a last-month receipt."""
    rng, products = d.rng, d.products

    def pick(style: str, role: str) -> dict:
        return next(r for name, r in roles[style] if name == role)

    def later(record: dict, low: int, high: int) -> datetime:
        return d.at(min(record["day"] + timedelta(days=rng.randint(low, high)), d.day(d.days)), seconds=True)

    us_fix, us_pre = pick("us", "hubfix"), pick("us", "pre")
    eu_fix, eu_void = pick("eu", "hubfix"), pick("eu", "hubvoid")
    stale = pick("uk", "stale")
    lines = [
        {"src": "hub", "at": later(us_fix, 1, 2), "rec": _hub_copy(us_fix, products, units=us_fix["units"] + rng.choice(
            [-1, 1]) * rng.randint(1, min(9, us_fix["units"] - 1)))},
        {"src": "hub", "at": later(us_pre, 1, 3), "rec": _hub_copy(us_pre, products, units=us_pre["units"] + 6)},
        {"src": "hub", "at": later(eu_fix, 1, 3), "rec": _hub_copy(eu_fix, products,
                                                                  cents=d.changed_cents(eu_fix["cents"]))},
        {"src": "hub", "at": later(eu_void, 1, 2), "rec": _hub_copy(eu_void, products, void=True)},
        {"src": "hub", "at": d.at(stale["day"] + timedelta(days=1), seconds=True), "rec": _hub_copy(stale, products)},
    ]
    plain = [r for style in ("us", "eu", "uk") for name, r in roles[style] if name == "plain"]
    for record in rng.sample(plain, 2):
        lines.append({"src": "hub", "at": later(record, 1, 3), "rec": _hub_copy(record, products)})
    style = rng.choice(["us", "eu", "uk"])
    lowest = min(r["no"] for _, r in roles[style])
    old = d.receipt(style, sites[style], d.prev_last - timedelta(days=rng.randint(2, 8)),
                    no=lowest - rng.randint(8, 20))
    lines.append({"src": "hub", "at": d.at(d.day(rng.randint(1, 3)), seconds=True), "rec": _hub_copy(old, products)})
    return lines


def _receipt_suppliers(rng: ItemRng, year: int, month: int) -> dict[str, dict]:
    """Nine suppliers with codes and VAT numbers; one merged into another before the month."""
    picked = rng.sample(SUPPLIER_POOL, 9)
    codes = [f"SUP-{n}" for n in distinct_ints(rng, 100, 989, 9)]
    suppliers = {}
    for code, (name, country) in zip(codes, picked):
        suppliers[code] = {"code": code, "name": name, "country": country,
                           "vat_no": f"{country}{rng.randint(100000000, 999999999)}", "status": "active",
                           "merged_into": None, "merged_on": None}
    merged, into = rng.sample(codes, 2)
    merged_on = date(year, month, 1) - timedelta(days=rng.randint(20, 200))
    suppliers[merged].update(status="merged", merged_into=into, merged_on=merged_on.isoformat())
    return dict(sorted(suppliers.items()))


def _receipt_products(rng: ItemRng) -> dict[str, dict]:
    """Ten catalogue products with case sizes and unit weights."""
    products = {}
    for prefix in rng.sample(sorted(PRODUCT_POOL), 10):
        sku = f"{prefix}-{rng.randint(1000, 9899)}"
        products[sku] = {"sku": sku, "name": f"{PRODUCT_POOL[prefix]} {rng.choice(['S', 'M', 'L', 'XL', '40', '60'])}",
                         "case_size": rng.choice(CASE_SIZES), "unit_weight_kg": f"{rng.randint(40, 4000) / 1000:.3f}"}
    return dict(sorted(products.items()))


def _iso_day(text: str) -> bool:
    """True for a real calendar date written YYYY-MM-DD."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _latest(lines: list[dict]) -> dict[tuple, dict]:
    """Each receipt's version with the latest export time."""
    latest: dict[tuple, dict] = {}
    for line in lines:
        key = (line["rec"]["site"], line["rec"]["no"])
        if key not in latest or line["at"] > latest[key]["at"]:
            latest[key] = line
    return latest


def _loaded_row(record: dict, suppliers: dict[str, dict], products: dict[str, dict]) -> dict:
    """The table row a record loads as, weight exact."""
    supplier = suppliers[record["supplier"]]
    return {"site": record["site"], "receipt_no": record["no"], "received_on": record["day"].isoformat(),
            "supplier_code": supplier["merged_into"] or supplier["code"], "sku": record["sku"],
            "quantity": record["units"], "weight_kg": _kilograms(record, products), "amount_minor": record["cents"],
            "currency": record["currency"]}


def _receipts_world(rng: ItemRng) -> ReceiptsWorld:
    """A seeded month of exports; drafts in which a trap would not bite are redrawn."""
    while True:
        world = _draft_receipts(rng)
        if world is not None:
            return world


def _draft_receipts(rng: ItemRng) -> ReceiptsWorld | None:
    year, month = rng.randint(2024, 2026), rng.randint(2, 11)
    sites = {"us": rng.choice(US_SITES)[0], "eu": rng.choice(EU_SITES)[0], "uk": rng.choice(UK_SITES)[0]}
    suppliers, products = _receipt_suppliers(rng, year, month), _receipt_products(rng)
    d = _Draws(rng, year, month, suppliers, products)
    base = rng.randint(4300, 4700)
    us_roles, us_lines, us_cut = _us_site(d, sites["us"], base + rng.randint(0, 4))
    eu_roles, eu_lines = _eu_site(d, sites["eu"], base + rng.randint(0, 4))
    uk_roles, uk_lines, uk_cut = _uk_site(d, sites["uk"], base + rng.randint(0, 4))
    roles = {"us": us_roles, "eu": eu_roles, "uk": uk_roles}
    lines = us_lines + eu_lines + uk_lines + _hub_lines(d, roles, sites)
    preloaded = [r for style in roles for name, r in roles[style] if name == "pre"]
    pre_keys = {(r["site"], r["no"]) for r in preloaded}
    expected, needed = {}, set()
    for key, line in sorted(_latest(lines).items()):
        record = line["rec"]
        if key in pre_keys or record["void"] or (record["day"].year, record["day"].month) != (year, month):
            continue
        expected[key] = _loaded_row(record, suppliers, products)
        if record["form"] is None or (line["src"] == "uk" and line["at"] >= uk_cut):
            needed.add(record["sku"])
    numbers = Counter(no for _, no in expected)
    if not any(n > 1 for n in numbers.values()):
        return None  # no two sites share a loaded receipt number: keying by number alone would not bite
    period = f"{MONTH_NAMES[month]} {year}"
    load_id = f"GL-{year % 100:02d}{month:02d}-{rng.randint(100, 999)}"
    files = _receipt_files(d, sites, lines, suppliers, us_cut, uk_cut, period, load_id)
    receipts = _initial_receipts(rng, d, sites, preloaded, suppliers, products, load_id)
    state = {"files": files, "suppliers": suppliers, "products": products, "receipts": receipts}
    return ReceiptsWorld(rng.choice(COMPANIES), rng.choice(PEOPLE), period, load_id, sites, state, expected, lines,
                         sorted(needed))


def _table_row(record: dict, suppliers: dict, products: dict, loaded_by: str) -> dict:
    row = _loaded_row(record, suppliers, products)
    return {**row, "weight_kg": float(_half_up(row["weight_kg"], 3)), "loaded_by": loaded_by}


def _initial_receipts(rng: ItemRng, d: _Draws, sites: dict[str, str], preloaded: list[dict], suppliers: dict,
                      products: dict, load_id: str) -> dict[str, dict]:
    """The rows already in `receipts`: last month's load and this month's early run."""
    prev = d.prev_last
    prev_run = f"GL-{prev.year % 100:02d}{prev.month:02d}-{rng.randint(100, 999)}"
    early_run = f"GL-{d.year % 100:02d}{d.month:02d}-{rng.randint(100, 999)}"
    while early_run == load_id:
        early_run = f"GL-{d.year % 100:02d}{d.month:02d}-{rng.randint(100, 999)}"
    rows = []
    numbers = distinct_ints(rng, 4200, 4270, 5)  # below every number this month's files use
    for k, number in enumerate(numbers):
        style = ["us", "eu", "uk"][k % 3]
        record = d.receipt(style, sites[style], date(prev.year, prev.month, rng.randint(1, 27)), no=number)
        rows.append(_table_row(record, suppliers, products, prev_run))
    rows.sort(key=lambda r: r["received_on"])
    rows += [_table_row(r, suppliers, products, early_run) for r in preloaded]
    return {str(i + 1): row for i, row in enumerate(rows)}


def _plain(value: Decimal) -> str:
    """A decimal without trailing zeros or an exponent: 12.500 -> 12.5, 850 -> 850."""
    return f"{value.normalize():f}"


def _eu_number(value: Decimal | int) -> str:
    """A number the EU way: '.' between thousands, ',' before decimals."""
    whole, _, fraction = _plain(Decimal(value)).partition(".")
    grouped = f"{int(whole):,}".replace(",", ".")
    return grouped + ("," + fraction if fraction else "")


def _render_line(line: dict, products: dict, suppliers: dict, us_cut: datetime, uk_cut: datetime) -> list[str]:
    """One export line as its file writes it."""
    record, src, at = line["rec"], line["src"], line["at"]
    day, status = record["day"], "VOID" if record["void"] else "OK"
    if src == "us":
        first, second = (day.day, day.month) if at >= us_cut else (day.month, day.day)
        shown = f"{first:02d}/{second:02d}/{day.year}"
        return [str(record["no"]), shown, record["supplier"], record["sku"].replace("-", ""), str(record["units"]),
                f"{_plain(record['weight'])} {record['form']}", f"${record['cents'] / 100:,.2f}", status,
                at.strftime("%Y-%m-%dT%H:%M")]
    if src == "eu":
        return [str(record["no"]), day.strftime("%d.%m.%Y"), suppliers[record["supplier"]]["vat_no"],
                record["sku"].lower(), _eu_number(record["units"]), _eu_number(record["weight"]),
                f"{_eu_number(record['cents'] // 100)},{record['cents'] % 100:02d}",
                "STORNO" if record["void"] else "OK", at.strftime("%d.%m.%Y %H:%M")]
    weight = "" if record["form"] is None else f"{record['weight']:.3f}"
    if src == "uk":
        qty = record["units"] // products[record["sku"]]["case_size"] if at >= uk_cut else record["units"]
        return [str(record["no"]), f"{day.day} {MONTH_ABBR[day.month]} {day.year}", record["supplier"], record["sku"],
                str(qty), weight, f"£{record['cents'] / 100:,.2f}", status, at.strftime("%Y-%m-%d %H:%M:%S")]
    return [record["site"], str(record["no"]), day.isoformat(), record["supplier"], record["sku"],
            str(record["units"]), weight, str(record["cents"]), record["currency"], status,
            at.strftime("%Y-%m-%dT%H:%M:%SZ")]


EXPORT_HEADERS = {
    "us": "receipt,date_received,supplier_code,item,qty,weight,amount,status,exported_at",
    "eu": "receipt;date_received;supplier_vat;item;qty;weight_kg;amount_eur;status;exported_at",
    "uk": "receipt,date_received,supplier_code,item,qty,weight_kg,amount,status,exported_at",
    "hub": "site,receipt,received_on,supplier_code,sku,qty_units,weight_kg,amount_minor,currency,status,exported_at",
}


def _receipt_files(d: _Draws, sites: dict[str, str], lines: list[dict], suppliers: dict, us_cut: datetime,
                   uk_cut: datetime, period: str, load_id: str) -> dict[str, str]:
    """The docs and the four exports, each export's lines in export order."""
    ym = f"{d.year}-{d.month:02d}"
    files = {"docs/LOADING.md": _loading_doc(sites, period, load_id, d),
             "docs/CHANGELOG.md": _changelog_doc(sites, d, us_cut, uk_cut)}
    for src in ("us", "eu", "uk", "hub"):
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=";" if src == "eu" else ",", lineterminator="\n")
        for line in sorted((x for x in lines if x["src"] == src), key=lambda x: x["at"]):
            writer.writerow(_render_line(line, d.products, suppliers, us_cut, uk_cut))
        name = "HUB" if src == "hub" else sites[src]
        files[f"exports/{name}_{ym}.csv"] = EXPORT_HEADERS[src] + "\n" + buffer.getvalue()
    return files


def _loading_doc(sites: dict[str, str], period: str, load_id: str, d: _Draws) -> str:
    """The loading rules: which receipts, which version, every column and every export's base format."""
    first, last = d.day(1).isoformat(), d.day(d.days).isoformat()
    us, eu, uk = sites["us"], sites["eu"], sites["uk"]
    return "\n".join([
        f"# Goods-in load {load_id}: {period}",
        "",
        f"Load every goods-in receipt received in {period} ({first} to {last}) that the exports in exports/ hold",
        f"into the table `receipts`, through insert_receipts (at most {BATCH} rows a call). describe_receipts shows",
        "the table's columns and constraints, query_receipts its rows.",
        "",
        "## Which receipts",
        "1. A receipt is identified by its site and its receipt number together: each site numbers its receipts",
        "   on its own, so different sites use the same numbers for different receipts.",
        "2. exports/<SITE>_<YYYY-MM>.csv is one site's export; its receipts are that site's. The hub's resend file",
        "   exports/HUB_<YYYY-MM>.csv repeats receipts of every site and names the site in its first column.",
        "3. Every line is a version of a receipt, and a receipt can appear several times, in one file or in several.",
        "   The version with the latest exported_at, whichever file it is in, is the receipt (all times are UTC).",
        "4. A receipt whose latest version is void is not loaded.",
        f"5. A receipt received outside {period} (by its latest version) belongs to another month's load.",
        "6. Receipts already in `receipts` were loaded by an earlier run and are final: do not load them again, and",
        "   never change or delete them, even when an export holds a newer version of one.",
        "",
        "## Columns of a loaded receipt",
        "- site, receipt_no: the receipt's key. received_on: the date received, YYYY-MM-DD.",
        "- supplier_code: the supplier's code (list_suppliers, get_supplier). A receipt of a supplier that was",
        "  merged into another is loaded under the supplier it was merged into (get_supplier: merged_into).",
        "- sku: as in the catalogue: three capital letters, a hyphen and four digits (e.g. BRK-1043).",
        "- quantity: the number of units received.",
        "- weight_kg: kilograms rounded half up to 3 decimals (1 lb = 0.45359237 kg, 1 g = 0.001 kg). A receipt",
        "  without a weight weighs the product's unit_weight_kg (get_product) times its quantity in units.",
        "- amount_minor, currency: the amount in minor units of its currency (cents, pence) and the currency code.",
        "",
        "## The exports (base formats)",
        f"- {us}: comma-separated. date_received month/day/year; supplier by code; item is the SKU without its",
        "  hyphen; weight with its unit (kg, g or lb); amount in USD like $1,234.56; status OK or VOID;",
        "  exported_at YYYY-MM-DDTHH:MM.",
        f"- {eu}: semicolon-separated. Dates day.month.year; numbers with a decimal comma and '.' between",
        "  thousands (1.234,5 is 1234.5); supplier by VAT number (get_supplier: vat_no); item is the SKU in lower",
        "  case; weight in kg; amount in EUR; status OK or STORNO (void); exported_at DD.MM.YYYY HH:MM.",
        f"- {uk}: comma-separated. Dates like 4 Mar 2025; supplier by code; qty in units; weight in kg, empty when",
        "  the scale was not used; amount in GBP like £1,234.56; status OK or VOID; exported_at",
        "  YYYY-MM-DD HH:MM:SS.",
        "- HUB: comma-separated. received_on YYYY-MM-DD; supplier by code; sku as in the catalogue; qty_units in",
        "  units; weight_kg (empty when the site had none); amount_minor already in minor units, with its",
        "  currency; status OK or VOID; exported_at YYYY-MM-DDTHH:MM:SSZ.",
        "The tills' formats change over time: docs/CHANGELOG.md lists each change and the exported_at from which it",
        "applies; lines exported before a change keep the format they had.",
        "",
        "## Rejected rows",
        "insert_receipts checks each row against the table's constraints, inserts the rows that pass and rejects",
        "the others with the reason. A rejected receipt still belongs to the load: correct it by these rules and",
        "insert it again. Never leave a receipt of this load out.",
        "",
        "## Reconciliation",
        "receipts_summary totals the table by load and currency: report this load's rows and amount_minor totals.",
        "",
    ])


def _changelog_doc(sites: dict[str, str], d: _Draws, us_cut: datetime, uk_cut: datetime) -> str:
    """The format changelog: two changes inside the month, one planned after it, two long in effect."""
    rng = d.rng
    nxt = date(d.year, d.month + 1, rng.randint(5, 20))
    before = d.prev_last - timedelta(days=rng.randint(20, 60))
    long_ago = date(d.year - 1, rng.randint(1, 12), rng.randint(1, 28))
    stamp = "%Y-%m-%d %H:%M UTC"
    return "\n".join([
        "# Export format changelog",
        "",
        "Newest first. A change applies to the lines exported at or after its effective time: earlier lines of the",
        "same file keep the old format.",
        "",
        f"## {nxt.isoformat()} 00:00 UTC (planned, not in effect yet): HUB",
        "amount_minor will be split into amount and minor_digits.",
        "",
        f"## {uk_cut.strftime(stamp)}: {sites['uk']} till firmware 5.2",
        "qty now counts cases of the product, not units: units = qty x the product's case_size (get_product).",
        "The hub's qty_units stays in units.",
        "",
        f"## {us_cut.strftime(stamp)}: {sites['us']} till locale update",
        "date_received is now written day/month/year (it was month/day/year). exported_at is unchanged.",
        "",
        f"## {before.isoformat()} 09:00 UTC: {sites['eu']}",
        "weight_kg is written with up to three decimals (it had one).",
        "",
        f"## {long_ago.isoformat()} 09:00 UTC: HUB",
        "qty renamed qty_units (still units); amount replaced by amount_minor (minor units).",
        "",
    ])


class ReceiptsEnv(FilesMixin, Environment):
    """The goods-in workspace: docs and exports, the supplier master, the product catalogue and the receipts table."""

    def __init__(self, world: ReceiptsWorld):
        super().__init__()
        self.state = copy.deepcopy(world.state)
        self._load_id = world.load_id
        self._sites = sorted(world.sites.values())
        self._next_id = len(self.state["receipts"]) + 1

    @tool("The receipts table: its columns and constraints.")
    def describe_receipts(self):
        table = copy.deepcopy(RECEIPTS_TABLE)
        table["columns"][1][2] = f"a site code: {', '.join(self._sites)}"
        return table

    @tool(f"One page of the receipts table ({RECEIPT_PAGE} rows, by id).", {"page": {"type": "integer"}})
    def query_receipts(self, page: int):
        columns = ["id", *RECEIPT_FIELDS, "loaded_by"]
        rows = [[int(i), *(row[c] for c in columns[1:])] for i, row in self.state["receipts"].items()]
        listing = _paged(rows, page, RECEIPT_PAGE)
        return {"page": page, "pages": listing["pages"], "columns": columns, "rows": listing["rows"]}

    @tool(f"Supplier master: one page of suppliers (code and name, {SUPPLIER_PAGE} a page).",
          {"page": {"type": "integer"}})
    def list_suppliers(self, page: int):
        rows = [{"code": s["code"], "name": s["name"]} for s in self.state["suppliers"].values()]
        listing = _paged(rows, page, SUPPLIER_PAGE)
        return {"page": page, "pages": listing["pages"], "suppliers": listing["rows"]}

    @tool("Supplier master: one supplier in full.", {"code": {"type": "string"}})
    def get_supplier(self, code: str):
        supplier = self.state["suppliers"].get(_text(code, "code").upper())
        if supplier is None:
            raise ToolError(f"no supplier {code[:40]!r}")
        return copy.deepcopy(supplier)

    @tool(f"Product catalogue: one page of products (sku and name, {PRODUCT_PAGE} a page).",
          {"page": {"type": "integer"}})
    def list_products(self, page: int):
        rows = [{"sku": p["sku"], "name": p["name"]} for p in self.state["products"].values()]
        listing = _paged(rows, page, PRODUCT_PAGE)
        return {"page": page, "pages": listing["pages"], "products": listing["rows"]}

    @tool("Product catalogue: one product in full, by its catalogue SKU.", {"sku": {"type": "string"}})
    def get_product(self, sku: str):
        product = self.state["products"].get(_text(sku, "sku").upper())
        if product is None:
            raise ToolError(f"no product {sku[:40]!r} in the catalogue")
        return copy.deepcopy(product)

    @tool(f"Insert 1 to {BATCH} receipts into the receipts table under this load. Each row is checked against the "
          "table's constraints: the rows that pass are inserted, the others are rejected with the reasons.",
          {"rows": {"type": "array", "items": ROW_SCHEMA}})
    def insert_receipts(self, rows: list[dict]):
        if not 1 <= len(rows) <= BATCH:
            raise ToolError(f"rows must hold 1 to {BATCH} receipts")
        inserted, rejected, keys = [], [], {}
        for index, row in enumerate(rows, start=1):
            problems = self._problems(row)
            key = (row["site"], row["receipt_no"])
            if key in keys:
                problems.append(f"duplicate of row {keys[key]} of this call")
            if problems:
                rejected.append({"row": index, "site": row["site"][:10], "receipt_no": row["receipt_no"],
                                 "reasons": problems})
                continue
            keys[key] = index
            row_id = str(self._next_id)
            self._next_id += 1
            self.state["receipts"][row_id] = {**{f: row[f] for f in RECEIPT_FIELDS}, "loaded_by": self._load_id}
            inserted.append({"row": index, "id": int(row_id)})
        return {"inserted": inserted, "rejected": rejected}

    def _problems(self, row: dict) -> list[str]:
        """Every constraint the row breaks, in words."""
        problems = []
        if row["site"] not in self._sites:
            problems.append(f"site {row['site'][:20]!r} is not a site ({', '.join(self._sites)})")
        if not 0 < row["receipt_no"] < 10**9:
            problems.append("receipt_no must be a positive number")
        if not _iso_day(row["received_on"]):
            problems.append("received_on must be a valid date YYYY-MM-DD")
        supplier = self.state["suppliers"].get(row["supplier_code"])
        if supplier is None:
            problems.append(f"supplier_code {row['supplier_code'][:20]!r} is not in suppliers")
        elif supplier["status"] != "active":
            problems.append(f"supplier {supplier['code']} is {supplier['status']}: receipts must name an active "
                            "supplier")
        if row["sku"] not in self.state["products"]:
            problems.append(f"sku {row['sku'][:20]!r} is not in products")
        if not 0 < row["quantity"] < 10**7:
            problems.append("quantity must be greater than 0")
        weight = row["weight_kg"]
        if not 0 < weight < 10**6:
            problems.append("weight_kg must be greater than 0")
        elif Decimal(repr(float(weight))).as_tuple().exponent < -3:
            problems.append("weight_kg has more than 3 decimals")
        if not 0 < row["amount_minor"] < 10**12:
            problems.append("amount_minor must be greater than 0")
        if row["currency"] not in ("EUR", "GBP", "USD"):
            problems.append("currency must be one of EUR, GBP, USD")
        taken = next((i for i, r in self.state["receipts"].items()
                      if (r["site"], r["receipt_no"]) == (row["site"], row["receipt_no"])), None)
        if taken is not None:
            problems.append(f"UNIQUE (site, receipt_no): ({row['site']}, {row['receipt_no']}) is already row {taken}, "
                            f"loaded by {self.state['receipts'][taken]['loaded_by']}")
        return problems

    @tool("Delete one row of the receipts table by its site and receipt number.",
          {"site": {"type": "string"}, "receipt_no": {"type": "integer"}})
    def delete_receipt(self, site: str, receipt_no: int):
        wanted = (_text(site, "site").upper(), receipt_no)
        row_id = next((i for i, r in self.state["receipts"].items()
                       if (r["site"], r["receipt_no"]) == wanted), None)
        if row_id is None:
            raise ToolError(f"no receipt ({wanted[0][:10]}, {receipt_no}) in the table")
        row = self.state["receipts"].pop(row_id)
        return {"deleted": {"id": int(row_id), **row}}

    @tool("Totals of the receipts table by load and currency: rows and the sum of amount_minor.")
    def receipts_summary(self):
        totals: dict[tuple, list[int]] = {}
        for row in self.state["receipts"].values():
            entry = totals.setdefault((row["loaded_by"], row["currency"]), [0, 0])
            entry[0] += 1
            entry[1] += row["amount_minor"]
        return [{"loaded_by": k[0], "currency": k[1], "rows": v[0], "amount_minor": v[1]}
                for k, v in sorted(totals.items())]


RECEIPTS_CHECKS = (
    Check("loaded_set", "exactly the receipts of this load were inserted, each once", 2.0),
    Check("received_on", "every loaded receipt has the right received_on"),
    Check("supplier", "every loaded receipt names the right active supplier"),
    Check("sku_quantity", "every loaded receipt has the right SKU and quantity in units"),
    Check("weight_kg", "every loaded receipt has the right weight in kg to 3 decimals"),
    Check("amount", "every loaded receipt has the right amount_minor and currency"),
    Check("answer", "the answer gives the rows inserted and their amount_minor total in each currency"),
    Check("earlier_rows_intact", "the rows loaded earlier are unchanged", guard=True),
)


def receipts_load(rng: ItemRng) -> AgTask:
    """Load a month's goods-in receipts from four paged exports in different formats into a constrained table."""
    world = _receipts_world(rng)
    reference, wasteful = _receipts_scripts(world)
    return AgTask(_receipts_prompt(world), lambda: ReceiptsEnv(world), RECEIPTS_CHECKS,
                  lambda env, answer: _check_receipts(world, env, answer), reference, wasteful)


def _receipts_prompt(world: ReceiptsWorld) -> str:
    return (
        f"You run the goods-in data load for {world.company}: load {world.load_id}, the {world.period} receipts. "
        f"{world.manager}, the warehouse manager, needs it done today. The tills' exports are in exports/ and the "
        "loading rules in docs/LOADING.md; the receipts go into the table `receipts` through insert_receipts. "
        "Follow the rules exactly: every receipt of this load must end up in the table once, with the values the "
        "rules give, and nothing else may be loaded. Do not change or delete the rows loaded earlier.\n\n"
        "When you are done, call submit with `inserted=<rows you inserted> EUR=<their amount_minor total in EUR> "
        "GBP=<... in GBP> USD=<... in USD>`."
    )


def _currency_totals(rows: list[dict]) -> dict[str, int]:
    totals = {"EUR": 0, "GBP": 0, "USD": 0}
    for row in rows:
        totals[row["currency"]] += row["amount_minor"]
    return totals


def _check_receipts(world: ReceiptsWorld, env: Environment, answer: str | None) -> dict[str, bool]:
    """The load's checks on the rows inserted, the rows left and the answer."""
    initial, now = world.state["receipts"], env.state["receipts"]
    intact = all(now.get(i) == row for i, row in initial.items())
    new = [row for i, row in now.items() if i not in initial]
    keys = Counter((str(r["site"]), r["receipt_no"]) for r in new)
    by_key = {(str(r["site"]), r["receipt_no"]): r for r in new}
    expected = world.expected
    common = [k for k in expected if keys.get(k) == 1]

    def every(test) -> bool:
        return len(common) >= max(1, len(expected) // 2) and all(test(by_key[k], expected[k]) for k in common)

    totals = _currency_totals(list(expected.values()))
    text = answer or ""
    count = re.search(r"inserted\D{0,6}?(\d[\d,]*)", text, re.IGNORECASE)
    stated = {c: re.search(rf"\b{c}\b\D{{0,6}}?(\d[\d,]*)", text) for c in totals}
    return {
        "loaded_set": set(keys) == set(expected) and all(n == 1 for n in keys.values()),
        "received_on": every(lambda row, want: str(row["received_on"]).strip() == want["received_on"]),
        "supplier": every(lambda row, want: row["supplier_code"] == want["supplier_code"]),
        "sku_quantity": every(lambda row, want: row["sku"] == want["sku"] and row["quantity"] == want["quantity"]),
        "weight_kg": every(lambda row, want: _rounded_ok(row["weight_kg"], want["weight_kg"], 3)),
        "amount": every(lambda row, want: row["amount_minor"] == want["amount_minor"]
                        and row["currency"] == want["currency"]),
        "answer": bool(count) and _integer(count.group(1)) == len(expected)
        and all(m is not None and _integer(m.group(1)) == totals[c] for c, m in stated.items()),
        "earlier_rows_intact": intact,
    }


def _insert_row(row: dict) -> dict:
    return {**row, "weight_kg": float(_half_up(row["weight_kg"], 3))}


def _receipts_scripts(world: ReceiptsWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one with repeated reads and one amount inserted wrong, deleted
    and inserted again."""
    state = world.state
    files = ReceiptsEnv(world)
    reads = [Call("list_files")]
    for path in ["docs/LOADING.md", "docs/CHANGELOG.md", *sorted(p for p in state["files"] if p.endswith(".csv"))]:
        reads += [Call("read_file", {"path": path, "page": p}) for p in range(1, files._pages(path) + 1)]
    reads.append(Call("describe_receipts"))
    reads += [Call("query_receipts", {"page": p}) for p in range(1, -(-len(state["receipts"]) // RECEIPT_PAGE) + 1)]
    reads += [Call("list_suppliers", {"page": p}) for p in range(1, -(-len(state["suppliers"]) // SUPPLIER_PAGE) + 1)]
    reads += [Call("get_supplier", {"code": c}) for c in state["suppliers"]]
    reads += [Call("list_products", {"page": p}) for p in range(1, -(-len(state["products"]) // PRODUCT_PAGE) + 1)]
    reads += [Call("get_product", {"sku": s}) for s in world.needed_skus]
    rows = [_insert_row(world.expected[k]) for k in sorted(world.expected)]
    inserts = [Call("insert_receipts", {"rows": rows[i:i + BATCH]}) for i in range(0, len(rows), BATCH)]
    totals = _currency_totals(list(world.expected.values()))
    answer = f"inserted={len(rows)} " + " ".join(f"{c}={v}" for c, v in totals.items())
    tail = (Call("receipts_summary"), Call("submit", {"answer": answer}))
    reference = (*reads, *inserts, *tail)
    wrong = [dict(rows[0], amount_minor=rows[0]["amount_minor"] // 100 or 1), *rows[1:BATCH]]
    fix = (Call("delete_receipt", {"site": rows[0]["site"], "receipt_no": rows[0]["receipt_no"]}),
           Call("insert_receipts", {"rows": [rows[0]]}))
    wasteful = (*reads[:2], reads[1], *reads[2:5], reads[3], *reads[5:], Call("insert_receipts", {"rows": wrong}),
                *fix, *inserts[1:], *tail)
    return reference, wasteful


# ---------------------------------------------------------------- task 2: a closed fiscal-period revenue report

REGIONS = ["Alpine", "Baltic", "Central", "Coastal", "Eastern", "Highlands", "Lakeside", "Metro", "Northern",
           "Riverside", "Southern", "Western"]
TOWNS = ["Aarhus", "Bergen", "Bremen", "Brno", "Cork", "Dijon", "Espoo", "Graz", "Gdansk", "Ghent", "Krakow",
         "Leeds", "Linz", "Lund", "Lyon", "Malmo", "Odense", "Porto", "Poznan", "Salzburg", "Tampere", "Turku",
         "Uppsala", "Utrecht", "Wroclaw", "York", "Zurich", "Basel", "Bristol", "Vaasa"]
STORE_SUFFIXES = ["Centre", "Station", "Old Town", "Mall", "Harbour", "North", "South", "Outlet Park"]
RATE_BASE = {"CHF": Decimal("0.95"), "GBP": Decimal("0.86"), "SEK": Decimal("11.40"), "NOK": Decimal("11.60"),
             "DKK": Decimal("7.46"), "PLN": Decimal("4.32"), "CZK": Decimal("24.80")}
FISCAL_WEEKS = [4, 4, 5] * 4
STORE_PAGE = 5
REPORT_HEADER = ["region", "orders", "gross_eur", "refunds_eur", "net_eur"]
LEDGER_SCHEMA = """CREATE TABLE orders (
  store_id INTEGER NOT NULL, order_no INTEGER NOT NULL, ordered_at TEXT NOT NULL, currency TEXT,
  status TEXT NOT NULL, PRIMARY KEY (store_id, order_no));
CREATE TABLE order_lines (
  store_id INTEGER NOT NULL, order_no INTEGER NOT NULL, line_no INTEGER NOT NULL, sku TEXT NOT NULL,
  amount_minor INTEGER NOT NULL, PRIMARY KEY (store_id, order_no, line_no));
CREATE TABLE refunds (
  refund_id INTEGER PRIMARY KEY, store_id INTEGER NOT NULL, order_no INTEGER NOT NULL,
  line_no INTEGER NOT NULL, refunded_at TEXT NOT NULL, amount_minor INTEGER NOT NULL);
CREATE TABLE line_corrections (
  correction_id INTEGER PRIMARY KEY, store_id INTEGER NOT NULL, order_no INTEGER NOT NULL,
  line_no INTEGER NOT NULL, amount_minor INTEGER NOT NULL, recorded_at TEXT NOT NULL, loaded_at TEXT NOT NULL);
CREATE TABLE fx_rates (
  rate_date TEXT NOT NULL, currency TEXT NOT NULL, units_per_eur REAL NOT NULL,
  PRIMARY KEY (rate_date, currency));
"""
SKUS = ["A-100", "A-220", "B-310", "B-415", "C-120", "C-505", "D-700", "D-710", "E-900", "F-111"]


def fiscal_period(year: int, period: int) -> tuple[date, date, datetime]:
    """(first day, last day, close) of period P<period> of FY<year> under the documented 4-4-5 calendar."""
    feb = date(year, 2, 1)
    start_fy = feb + timedelta(days=(7 - feb.weekday()) % 7)
    start = start_fy + timedelta(weeks=sum(FISCAL_WEEKS[:period - 1]))
    end = start + timedelta(weeks=FISCAL_WEEKS[period - 1], days=-1)
    return start, end, datetime.combine(end + timedelta(days=3), time(18, 0))


@dataclass
class RevenueWorld:
    """A ledger around one fiscal period, its dictionary and store master, and the report's true figures."""

    company: str
    controller: str
    request: str
    year: int
    period: int
    start: date
    end: date
    close: datetime
    report_path: str
    regions: list[str]
    stores: dict[str, dict]         # store code -> the master record
    files: dict[str, str]
    tables: dict[str, list[tuple]]
    truth: dict[str, tuple]         # region -> (orders, gross, refunds, net) in EUR, unrounded
    total_net: Decimal


class _Ledger:
    """Draws the ledger: orders with lines, numbered per store, and the business-day rates."""

    def __init__(self, rng: ItemRng, stores: dict[str, dict], start: date, end: date):
        self.rng, self.stores, self.start, self.end = rng, stores, start, end
        self.orders: list[dict] = []
        self.counters = {s["ledger_store_id"]: 5000 + rng.randint(0, 25) for s in stores.values()}

    def moment(self, day: date, low: int = 8, high: int = 21) -> datetime:
        rng = self.rng
        return datetime.combine(day, time(rng.randint(low, high), rng.randint(0, 59), rng.randint(0, 59)))

    def order(self, store: dict, at: datetime, **over: Any) -> dict:
        """One order of a store with one to three lines, in its home currency, EUR, or NULL (the store's)."""
        rng = self.rng
        roll = rng.random()
        currency = None if roll < 0.2 else ("EUR" if roll < 0.3 else store["home_currency"])
        paid = currency or store["home_currency"]
        scale = RATE_BASE.get(paid, Decimal(1))
        lines = [int(_half_up(Decimal(rng.randint(800, 45000)) * scale, 0)) for _ in range(rng.randint(1, 3))]
        order = {"store": store["ledger_store_id"], "no": 0, "at": at, "currency": currency, "status": "complete",
                 "lines": lines, "code": store["code"]}
        order.update(over)
        self.orders.append(order)
        return order

    def number(self) -> None:
        """Order numbers per store, increasing with time (so stores share numbers)."""
        for order in sorted(self.orders, key=lambda o: o["at"]):
            self.counters[order["store"]] += self.rng.randint(1, 3)
            order["no"] = self.counters[order["store"]]


def _revenue_stores(rng: ItemRng) -> tuple[list[str], str, dict[str, dict]]:
    """Five regions, one without sales (a training store and a store that opens later), and 20-23 stores."""
    regions = sorted(rng.sample(REGIONS, 5))
    empty = rng.choice(regions)
    currency = {r: rng.choice(["EUR", *sorted(RATE_BASE)]) for r in regions}
    n = rng.randint(20, 23)
    codes = [f"ST-{k}" for k in distinct_ints(rng, 101, 989, n)]
    ledger_ids = distinct_ints(rng, 1000, 9999, n)
    towns = rng.sample(TOWNS, n)
    busy = [r for r in regions if r != empty]
    assigned = [empty, empty] + [busy[k % 4] for k in range(n - 2)]
    stores = {}
    for k, (code, ledger_id, town, region) in enumerate(zip(codes, ledger_ids, towns, assigned)):
        home = currency[region] if rng.random() < 0.75 else rng.choice(["EUR", *sorted(RATE_BASE)])
        stores[code] = {"code": code, "name": f"{town} {rng.choice(STORE_SUFFIXES)}", "region": region,
                        "kind": "training" if k == 0 else rng.choice(["retail", "retail", "outlet"]),
                        "home_currency": home, "ledger_store_id": ledger_id}
    busy_stores = [s for s in stores.values() if s["region"] != empty]
    if all(s["home_currency"] == "EUR" for s in busy_stores):
        busy_stores[0]["home_currency"] = rng.choice(sorted(RATE_BASE))
    return regions, empty, dict(sorted(stores.items()))


def _revenue_rates(rng: ItemRng, currencies: list[str], start: date, end: date) -> tuple[dict, date]:
    """Business-day rates (units per EUR, 4 decimals) from well before the period to after it; one holiday in the
    period has none."""
    holiday = start + timedelta(days=rng.randint(3, (end - start).days - 3))
    while holiday.weekday() >= 5:
        holiday += timedelta(days=1)
    rates: dict[str, dict[date, Decimal]] = {}
    for code in currencies:
        value = RATE_BASE[code] * Decimal(rng.randint(9700, 10300)) / 10000
        series = {}
        day = start - timedelta(days=60)
        while day <= end + timedelta(days=14):
            if day.weekday() < 5 and day != holiday:
                value = value * (1 + Decimal(rng.choice([-1, 1]) * rng.randint(5, 60)) / 10000)
                series[day] = _half_up(value, 4)
            day += timedelta(days=1)
        rates[code] = series
    return rates, holiday


def _revenue_orders(rng: ItemRng, ledger: _Ledger, stores: dict[str, dict], empty: str, holiday: date) -> None:
    """Orders in and around the period: boundary times, a holiday and a weekend sale, cancellations, the training
    store's test sales and the late store's first sales after the period."""
    start, end = ledger.start, ledger.end
    span = (end - start).days
    busy = [s for s in stores.values() if s["region"] != empty]
    foreign = [s for s in busy if s["home_currency"] != "EUR"]
    for store in busy:
        for _ in range(rng.randint(3, 5)):
            ledger.order(store, ledger.moment(start + timedelta(days=rng.randint(0, span))))
        for _ in range(rng.randint(1, 2)):
            offset = rng.choice([-rng.randint(1, 12), span + rng.randint(1, 10)])
            ledger.order(store, ledger.moment(start + timedelta(days=offset)))
    ledger.order(rng.choice(busy), ledger.moment(end, 23, 23))
    ledger.order(rng.choice(busy), ledger.moment(start, 0, 0))
    ledger.order(rng.choice(busy), ledger.moment(start - timedelta(days=1), 22, 23))
    ledger.order(rng.choice(busy), ledger.moment(end + timedelta(days=1), 0, 0))
    ledger.order(rng.choice(foreign), ledger.moment(holiday), currency=None)
    saturday = start + timedelta(days=5 + 7 * rng.randint(0, 2))
    ledger.order(rng.choice(foreign), ledger.moment(saturday))
    for store in rng.sample(busy, 2):
        ledger.order(store, ledger.moment(start + timedelta(days=rng.randint(0, span))), status="cancelled")
    training = next(s for s in stores.values() if s["kind"] == "training")
    late = next(s for s in stores.values() if s["region"] == empty and s["kind"] != "training")
    for _ in range(3):
        ledger.order(training, ledger.moment(start + timedelta(days=rng.randint(0, span))))
    for _ in range(2):
        ledger.order(late, ledger.moment(end + timedelta(days=rng.randint(1, 8))))
    for _ in range(2):  # last period's orders, some refunded in this one
        ledger.order(rng.choice(foreign), ledger.moment(start - timedelta(days=rng.randint(14, 30))))
    ledger.number()


def _in_period(start: date, end: date, moment: datetime) -> bool:
    return start <= moment.date() <= end


def _revenue_refunds(rng: ItemRng, ledger: _Ledger, training: int) -> list[dict]:
    """Refunds made in the period (of this period's and last period's orders), after it and before it, and one
    at the training store."""
    start, end = ledger.start, ledger.end
    counted = [o for o in ledger.orders if o["status"] == "complete" and o["store"] != training]
    inside = [o for o in counted if _in_period(start, end, o["at"]) and o["at"].date() <= end - timedelta(days=8)]
    foreign_inside = [o for o in inside if (o["currency"] or ledger.stores[o["code"]]["home_currency"]) != "EUR"]
    old = [o for o in counted if o["at"].date() < start - timedelta(days=10)]
    picks = [(rng.choice(foreign_inside), 3, 7)]
    picks += [(o, 1, 6) for o in rng.sample([o for o in inside if o is not picks[0][0]], 2)]
    refunds = []
    for order, low, high in picks:
        refunds.append((order, ledger.moment(order["at"].date() + timedelta(days=rng.randint(low, high)))))
    refunds.append((old[0], ledger.moment(start + timedelta(days=rng.randint(1, 6)))))
    refunds.append((old[1], ledger.moment(start - timedelta(days=rng.randint(1, 4)))))
    late_host = rng.choice([o for o in counted if _in_period(start, end, o["at"]) and o["at"].date() >= end -
                            timedelta(days=6)])
    refunds.append((late_host, ledger.moment(end + timedelta(days=rng.randint(1, 5)))))
    trained = [o for o in ledger.orders if o["store"] == training]
    refunds.append((trained[0], ledger.moment(min(end, trained[0]["at"].date() + timedelta(days=1)))))
    made = []
    for order, at in refunds:
        line = rng.randint(1, len(order["lines"]))
        amount = order["lines"][line - 1]
        made.append({"store": order["store"], "no": order["no"], "line": line, "at": at,
                     "amount": amount if rng.random() < 0.5 else max(100, amount * rng.randint(2, 8) // 10)})
    return sorted(made, key=lambda r: r["at"])


def _revenue_corrections(rng: ItemRng, ledger: _Ledger, close: datetime, training: int) -> list[dict]:
    """Corrections: applied, superseded, recorded earlier but loaded later, loaded after the close, recorded after
    the period but loaded before the close, and two that concern no counted line."""
    start, end = ledger.start, ledger.end
    counted = [o for o in ledger.orders if o["status"] == "complete" and o["store"] != training
               and _in_period(start, end, o["at"]) and o["at"].date() <= end - timedelta(days=4)]
    hosts = rng.sample(counted, 6)
    outside = next(o for o in ledger.orders if o["at"].date() < start and o["status"] == "complete")
    trained = next(o for o in ledger.orders if o["store"] == training)
    hour = timedelta(hours=1)

    def after(moment: datetime, low: int, high: int) -> datetime:
        return ledger.moment(min(moment.date() + timedelta(days=rng.randint(low, high)), end))

    made: list[tuple[dict, datetime, datetime]] = []
    a = after(hosts[0]["at"], 1, 3)
    made.append((hosts[0], a, a + hour * rng.randint(1, 20)))                               # applied
    a = after(hosts[1]["at"], 0, 1)
    b = a + timedelta(days=rng.randint(1, 2), hours=rng.randint(1, 5))
    made += [(hosts[1], a, a + hour), (hosts[1], b, b + hour * 2)]                          # the later one wins
    a = after(hosts[2]["at"], 1, 2)
    b = a - timedelta(hours=rng.randint(3, 20))
    made += [(hosts[2], a, a + hour * 2), (hosts[2], b, a + timedelta(days=1, hours=3))]    # arrived late, older
    a = after(hosts[3]["at"], 1, 3)
    made.append((hosts[3], a, close + timedelta(days=rng.randint(1, 3), hours=2)))          # after the close
    a = after(hosts[4]["at"], 0, 2)
    b = datetime.combine(end + timedelta(days=1), time(rng.randint(9, 15), rng.randint(0, 59)))
    made += [(hosts[4], a, a + hour * 3), (hosts[4], b, close + timedelta(days=1))]         # newer one too late
    b = datetime.combine(end + timedelta(days=1), time(rng.randint(9, 15), rng.randint(0, 59)))
    made.append((hosts[5], b, b + timedelta(hours=rng.randint(20, 40))))                    # late but in time
    made.append((outside, outside["at"] + timedelta(days=1), outside["at"] + timedelta(days=1, hours=2)))
    made.append((trained, trained["at"] + hour, trained["at"] + hour * 2))
    corrections, lines = [], {}
    for order, recorded, loaded in made:
        line = lines.setdefault(id(order), rng.randint(1, len(order["lines"])))
        old = order["lines"][line - 1]
        amount = old
        while amount == old:
            amount = max(100, old * rng.randint(50, 150) // 100)
        corrections.append({"store": order["store"], "no": order["no"], "line": line, "amount": amount,
                            "recorded": recorded, "loaded": loaded})
    return sorted(corrections, key=lambda c: c["loaded"])


def _rate_on(rates: dict[str, dict[date, Decimal]], currency: str, day: date) -> Decimal:
    """The rate in force on a day: the latest published on or before it."""
    if currency == "EUR":
        return Decimal(1)
    series = rates[currency]
    while day not in series:
        day -= timedelta(days=1)
    return series[day]


def _revenue_truth(world: dict) -> dict[str, tuple]:
    """Region -> (orders, gross, refunds, net) in EUR, unrounded, under the dictionary's rules."""
    stores = {s["ledger_store_id"]: s for s in world["stores"].values()}
    start, end, close, rates = world["start"], world["end"], world["close"], world["rates"]
    fixed: dict[tuple, tuple[datetime, int]] = {}
    for c in world["corrections"]:
        key = (c["store"], c["no"], c["line"])
        if c["loaded"] <= close and (key not in fixed or c["recorded"] > fixed[key][0]):
            fixed[key] = (c["recorded"], c["amount"])
    figures = {r: [set(), Decimal(0), Decimal(0)] for r in world["regions"]}
    orders = {(o["store"], o["no"]): o for o in world["orders"]}
    with localcontext() as context:
        context.prec = 60
        for order in world["orders"]:
            store = stores[order["store"]]
            if order["status"] != "complete" or store["kind"] == "training" or not start <= order["at"].date() <= end:
                continue
            rate = _rate_on(rates, order["currency"] or store["home_currency"], order["at"].date())
            entry = figures[store["region"]]
            entry[0].add((order["store"], order["no"]))
            for line, amount in enumerate(order["lines"], start=1):
                entry[1] += Decimal(fixed.get((order["store"], order["no"], line), (None, amount))[1]) / 100 / rate
        for refund in world["refunds"]:
            store, order = stores[refund["store"]], orders[(refund["store"], refund["no"])]
            if store["kind"] == "training" or not start <= refund["at"].date() <= end:
                continue
            rate = _rate_on(rates, order["currency"] or store["home_currency"], order["at"].date())
            figures[store["region"]][2] -= Decimal(refund["amount"]) / 100 / rate
    return {r: (len(f[0]), f[1], f[2], f[1] + f[2]) for r, f in figures.items()}


def _near_a_tie(value: Decimal) -> bool:
    """True when a figure sits so close to a half cent that float arithmetic could round it either way."""
    scaled = value * 100
    return abs(abs(scaled - scaled.to_integral_value(rounding="ROUND_FLOOR")) - Decimal("0.5")) < Decimal("1e-6")


def _revenue_world(rng: ItemRng) -> RevenueWorld:
    """A seeded ledger around one fiscal period; drafts with a figure at a rounding tie are redrawn."""
    while True:
        world = _draft_revenue(rng)
        if world is not None:
            return world


def _draft_revenue(rng: ItemRng) -> RevenueWorld | None:
    year, period = rng.randint(2024, 2026), rng.randint(2, 11)
    start, end, close = fiscal_period(year, period)
    regions, empty, stores = _revenue_stores(rng)
    currencies = sorted({s["home_currency"] for s in stores.values()} - {"EUR"})
    rates, holiday = _revenue_rates(rng, currencies, start, end)
    ledger = _Ledger(rng, stores, start, end)
    _revenue_orders(rng, ledger, stores, empty, holiday)
    training = next(s["ledger_store_id"] for s in stores.values() if s["kind"] == "training")
    refunds = _revenue_refunds(rng, ledger, training)
    corrections = _revenue_corrections(rng, ledger, close, training)
    raw = {"stores": stores, "regions": regions, "start": start, "end": end, "close": close, "rates": rates,
           "orders": ledger.orders, "refunds": refunds, "corrections": corrections}
    truth = _revenue_truth(raw)
    total = sum(t[3] for t in truth.values())
    if any(_near_a_tie(v) for t in truth.values() for v in t[1:]) or _near_a_tie(total):
        return None
    request = f"FIN-{rng.randint(1000, 9999)}"
    return RevenueWorld(rng.choice(COMPANIES), rng.choice(PEOPLE), request, year, period, start, end, close,
                        f"outbox/revenue_FY{year}_P{period:02d}.csv", regions, stores, _dictionary(),
                        _ledger_tables(raw), truth, total)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _ledger_tables(raw: dict) -> dict[str, list[tuple]]:
    """The SQLite rows of the ledger."""
    orders = sorted(raw["orders"], key=lambda o: (o["at"], o["store"]))
    return {
        "orders": [(o["store"], o["no"], _stamp(o["at"]), o["currency"], o["status"]) for o in orders],
        "order_lines": [(o["store"], o["no"], k, SKUS[(o["no"] * 7 + k * 3) % len(SKUS)], amount)
                        for o in orders for k, amount in enumerate(o["lines"], start=1)],
        "refunds": [(k, r["store"], r["no"], r["line"], _stamp(r["at"]), r["amount"])
                    for k, r in enumerate(raw["refunds"], start=1001)],
        "line_corrections": [(k, c["store"], c["no"], c["line"], c["amount"], _stamp(c["recorded"]),
                              _stamp(c["loaded"])) for k, c in enumerate(raw["corrections"], start=501)],
        "fx_rates": [(day.isoformat(), code, float(value)) for code in sorted(raw["rates"])
                     for day, value in sorted(raw["rates"][code].items())],
    }


def _dictionary() -> dict[str, str]:
    """The data dictionary: the report's definition, the calendar, the stores and every table's meaning."""
    return {
        "docs/README.md": "\n".join([
            "# Sales ledger: data dictionary",
            "",
            "Topics: fiscal_calendar.md, stores.md, orders.md, refunds.md, corrections.md, fx_rates.md (in docs/).",
            "",
            "## The regional revenue report of a fiscal period",
            "For each region of the store master (a store's region is in get_store):",
            "- orders: the number of distinct orders counted in gross_eur.",
            "- gross_eur: the sum in EUR of the lines of the region's orders placed in the period (by the day of",
            "  ordered_at), each line at its amount after corrections (corrections.md).",
            "- refunds_eur: minus the sum in EUR of the refunds made in the period (by the day of refunded_at) on",
            "  orders of the region's stores (refunds.md); 0.00 when there are none.",
            "- net_eur: gross_eur + refunds_eur.",
            "Only orders with status 'complete' count. Training stores (stores.md) never count. Convert every line",
            "and every refund to EUR on its own (fx_rates.md) and round only the final figures, to 2 decimals.",
            "All times in the ledger are head-office time, written YYYY-MM-DD HH:MM:SS.",
            ""]),
        "docs/fiscal_calendar.md": "\n".join([
            "# Fiscal calendar",
            "",
            "FY<Y> starts on the first Monday on or after 1 February of the year <Y>. It has 12 periods, P01 to",
            "P12, of whole weeks (Monday to Sunday): every quarter is 4, 4 and 5 weeks, so P01 has 4 weeks, P02 4,",
            "P03 5, P04 4, and so on; P12 takes a 53rd week when the next fiscal year starts 53 weeks later.",
            "A period closes at 18:00 on the Wednesday after its last day (its last Sunday). corrections.md says",
            "which corrections the report of a closed period applies.",
            ""]),
        "docs/stores.md": "\n".join([
            "# Store master",
            "",
            "list_stores pages through the stores (code and name); get_store shows one store in full: region,",
            "kind, home_currency and ledger_store_id. The ledger's store_id columns hold the ledger_store_id, not",
            "the store code. Stores of kind 'training' are till-training sandboxes: their data is test data and",
            "never counts. home_currency is the currency of the store's orders whose currency is NULL.",
            ""]),
        "docs/orders.md": "\n".join([
            "# orders and order_lines",
            "",
            "orders: one row per order. order_no is unique only within a store: an order is identified by",
            "(store_id, order_no), and order_lines, refunds and line_corrections refer to it by both columns.",
            "currency is the currency the order was paid in; it is NULL on orders of the old tills, which are in",
            "the store's home_currency. status is 'complete' or 'cancelled'.",
            "order_lines: one row per line of an order (line_no from 1); amount_minor is the line's amount in minor",
            "units (cents) of the order's currency, as first recorded (see corrections.md).",
            ""]),
        "docs/refunds.md": "\n".join([
            "# refunds",
            "",
            "One row per refund of an order line: store_id, order_no, line_no, refunded_at and amount_minor (a",
            "positive amount in minor units of the order's currency). A refund counts in the period of the day it",
            "was made (refunded_at), whatever the period of its order. It is converted to EUR at the rate that",
            "applied on its order's day (the day of ordered_at), so that it reverses the sale at the rate the sale",
            "was booked at.",
            ""]),
        "docs/corrections.md": "\n".join([
            "# line_corrections",
            "",
            "The stores' systems send corrections of order line amounts. amount_minor is the line's corrected",
            "amount; recorded_at is when the store made the correction and loaded_at when it reached the ledger",
            "(corrections can arrive days late, and not in the order they were made).",
            "The report of a closed period applies only the corrections loaded at or before the period's close",
            "(fiscal_calendar.md); later ones belong to the next restatement. When several applicable",
            "corrections concern one line, the one recorded last (latest recorded_at) gives its amount.",
            ""]),
        "docs/fx_rates.md": "\n".join([
            "# fx_rates",
            "",
            "units_per_eur is how many units of the currency buy 1 EUR on rate_date, so an amount in EUR is the",
            "amount divided by units_per_eur. Rates are published on business days only; a day without a rate",
            "(a weekend or a holiday) uses the latest rate published before it. EUR has no rows.",
            ""]),
    }


def _sql_cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return "x'" + value[:MAX_CELL // 2].hex() + "'"
    if isinstance(value, str) and len(value) > MAX_CELL:
        return value[:MAX_CELL] + "...[truncated]"
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return str(value)
    return value


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _trigger: str | None) -> int:
    """Allow reads and row changes on user tables; refuse schema changes, ATTACH and writing PRAGMAs."""
    if action == sqlite3.SQLITE_PRAGMA:
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in READ_ONLY_PRAGMAS else sqlite3.SQLITE_DENY
    if action not in ALLOWED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE) \
            and (arg1 or "").lower().startswith("sqlite_"):
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class RevenueEnv(FilesMixin, Environment):
    """The analyst's workspace: the dictionary, the store master, the SQLite ledger and an outbox."""

    def __init__(self, world: RevenueWorld):
        super().__init__()
        self.state = {"files": dict(world.files), "stores": copy.deepcopy(world.stores)}
        self.db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.db.executescript(LEDGER_SCHEMA)
        for table, rows in world.tables.items():
            if rows:
                self.db.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 50_000)  # bounds the cost of one function call
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_QUERY + 1)
        self.initial = self.snapshot()  # hidden: what the guard compares the final database against
        self._steps, self._started = 0, 0.0

    @tool(f"Store master: one page of stores (code and name, {STORE_PAGE} a page).", {"page": {"type": "integer"}})
    def list_stores(self, page: int):
        rows = [{"code": s["code"], "name": s["name"]} for s in self.state["stores"].values()]
        listing = _paged(rows, page, STORE_PAGE)
        return {"page": page, "pages": listing["pages"], "stores": listing["rows"]}

    @tool("Store master: one store in full, by its code.", {"code": {"type": "string"}})
    def get_store(self, code: str):
        store = self.state["stores"].get(_text(code, "code").upper())
        if store is None:
            raise ToolError(f"no store {code[:40]!r}")
        return copy.deepcopy(store)

    @tool("Create or overwrite a text file under outbox/ with exactly the given content (at most 100000 "
          "characters); the inputs cannot be changed.",
          {"path": {"type": "string", "description": "e.g. 'outbox/report.csv'"},
           "content": {"type": "string", "description": "the full text of the file"}})
    def write_file(self, path: str, content: str):
        key = _normal_path(path)
        if not key.startswith(WRITABLE) or not PATH_PATTERN.fullmatch(key) or len(key) > 200:
            raise ToolError(f"refused: you may only write files under {WRITABLE} with a simple relative path")
        if len(content) > MAX_FILE:
            raise ToolError(f"refused: content is {len(content)} characters, the limit is {MAX_FILE}")
        self.state["files"][key] = content
        return {"written": key, "chars": len(content)}

    @tool("Run ONE SQLite statement on the ledger database. A statement that returns rows gives {columns, rows, "
          f"row_count, truncated}} with at most {MAX_ROWS} rows and about {MAX_RESULT} characters (page with "
          "ORDER BY / LIMIT / OFFSET); INSERT, UPDATE and DELETE give {rows_affected}. Refused: schema changes, "
          "transactions, ATTACH, printf() / format() and PRAGMAs other than table_info / table_list / index_list "
          "/ index_info / foreign_key_list. See the schema with SELECT name, sql FROM sqlite_master. No '?' "
          "parameters; statements that run too long are interrupted.",
          {"query": {"type": "string", "description": "one SQL statement"}})
    def run_sql(self, query: str):
        if not query.strip():
            raise ToolError("empty query")
        if len(query) > MAX_QUERY:
            raise ToolError(f"query is {len(query)} characters, the limit is {MAX_QUERY}")
        before = self.db.total_changes
        self.db.execute("SAVEPOINT esac_statement")  # so an oversized change can be undone whole
        try:
            result = self._execute(query)
            changed = self.db.total_changes - before
            if changed > MAX_CHANGES:
                raise ToolError(f"refused: the statement changed {changed} rows, the limit is {MAX_CHANGES}; "
                                "nothing was changed")
        except ToolError:
            self._close_savepoint(undo=True)
            raise
        self._close_savepoint(undo=False)
        return result

    def _close_savepoint(self, undo: bool) -> None:
        if not self.db.in_transaction:  # SQLite already rolled back (an interrupted statement ends the transaction)
            return
        try:
            if undo:
                self.db.execute("ROLLBACK TO esac_statement")
            self.db.execute("RELEASE esac_statement")
        except sqlite3.Error:
            pass

    def _execute(self, query: str) -> Any:
        """Run the model's statement under the authorizer and the time and step limits; cut long results."""
        self._steps, self._started = 0, clock.monotonic()
        self.db.set_authorizer(_authorize)
        self.db.set_progress_handler(self._tick, TICK_OPCODES)
        cursor = None
        try:
            cursor = self.db.execute(query)
            if cursor.description is None:
                return {"rows_affected": max(cursor.rowcount, 0)}
            fetched = cursor.fetchmany(MAX_ROWS + 1)
            columns = [d[0][:60] for d in cursor.description]
            rows = [[_sql_cell(v) for v in row] for row in fetched[:MAX_ROWS]]
            truncated = len(fetched) > MAX_ROWS
            size = len(repr(columns)) + 80
            for index, row in enumerate(rows):
                size += len(repr(row)) + 2
                if size > MAX_RESULT:
                    rows, truncated = rows[:max(index, 0)], True
                    break
            return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": truncated}
        except (sqlite3.Error, sqlite3.Warning, ValueError, OverflowError, MemoryError) as failure:
            message = "statement interrupted: it ran too long" if "interrupt" in str(failure) else str(failure)
            raise ToolError(f"SQL error: {message[:500]}") from None
        finally:
            if cursor is not None:
                try:
                    cursor.close()
                except sqlite3.Error:
                    pass
            self.db.set_authorizer(None)
            self.db.set_progress_handler(None, 0)

    def _tick(self) -> int:
        """Interrupt a statement past its step budget or its wall-clock safety limit (hostile SQL)."""
        self._steps += 1
        return 1 if self._steps > STEP_LIMIT or clock.monotonic() - self._started > WALL_LIMIT_S else 0

    def db_changed(self) -> bool:
        """True when any table differs from the initial database."""
        now = self.snapshot()
        keys = {k for k in self.initial.keys() | now.keys() if k.startswith("db/")}
        return any(self.initial.get(k) != now.get(k) for k in keys)


def revenue_report(rng: ItemRng) -> AgTask:
    """A closed fiscal period's regional revenue report from a ledger, a store master and a data dictionary."""
    world = _revenue_world(rng)
    reference, wasteful = _revenue_scripts(world)
    return AgTask(_revenue_prompt(world), lambda: RevenueEnv(world), _revenue_checks(world),
                  lambda env, answer: _check_revenue(world, env, answer), reference, wasteful)


def _revenue_prompt(world: RevenueWorld) -> str:
    return (
        f"You are the data analyst at {world.company} (request {world.request}). {world.controller} in Finance needs "
        f"the closed regional revenue report of fiscal period P{world.period:02d} of FY{world.year}. The sales "
        "ledger is the SQLite database (run_sql), the stores are in the store master (list_stores, get_store) and "
        "the data dictionary is in docs/ (start with docs/README.md).\n\n"
        f"Write the report to {world.report_path}: a CSV file whose first line is the header "
        f"`{','.join(REPORT_HEADER)}`, then one row per region of the store master (every region, also one without "
        "sales), sorted by region name, with the figures docs/README.md defines (money with two decimals). Do not "
        "modify the database.\n\n"
        "When you are done, call submit with the total net_eur over all regions (a number in EUR)."
    )


def _revenue_checks(world: RevenueWorld) -> tuple[Check, ...]:
    return (
        Check("layout", f"{world.report_path} has the exact header and one row per region, sorted by region"),
        Check("orders", "every region's order count is right"),
        Check("gross_eur", "every region's gross_eur is right to the cent"),
        Check("refunds_eur", "every region's refunds_eur is right to the cent"),
        Check("net_eur", "every region's net_eur is right to the cent"),
        Check("answer", "the answer gives the total net_eur over all regions"),
        Check("database_untouched", "the database was not modified", guard=True),
    )


def _parse_csv(text: str | None) -> list[list[str]]:
    """A CSV's non-blank rows with every cell stripped; [] when there is no file."""
    if not text:
        return []
    try:
        rows = list(csv.reader(io.StringIO(text.strip("\ufeff"))))
    except csv.Error:
        return []
    return [[cell.strip() for cell in row] for row in rows if any(cell.strip() for cell in row)]


def _check_revenue(world: RevenueWorld, env: RevenueEnv, answer: str | None) -> dict[str, bool]:
    """The report's checks on the written file, the database and the answer."""
    regions, truth = world.regions, world.truth
    table = _parse_csv(env.state["files"].get(world.report_path))
    header, body = (table[0], table[1:]) if table else ([], [])
    found = {row[0].lower(): row for row in body if len(row) == len(REPORT_HEADER)}

    def every(column: int, test) -> bool:
        return all(r.lower() in found and test(found[r.lower()][column], truth[r]) for r in regions)

    def net_ok(cell: str, t: tuple) -> bool:
        return _rounded_ok(cell, t[3], 2) or _decimal(cell) == _half_up(t[1], 2) + _half_up(t[2], 2)

    rounded_sum = sum(_half_up(t[1], 2) + _half_up(t[2], 2) for t in truth.values())
    rounded_nets = sum(_half_up(t[3], 2) for t in truth.values())
    numbers = _numbers(answer or "")
    return {
        "layout": [c.lower() for c in header] == REPORT_HEADER
        and [row[0].lower() for row in body] == [r.lower() for r in regions]
        and all(len(row) == len(REPORT_HEADER) for row in body),
        "orders": every(1, lambda cell, t: _integer(cell) == t[0]),
        "gross_eur": every(2, lambda cell, t: _rounded_ok(cell, t[1], 2)),
        "refunds_eur": every(3, lambda cell, t: _rounded_ok(cell, t[2], 2)),
        "net_eur": every(4, net_ok),
        "answer": any(_rounded_ok(n, world.total_net, 2) or n in (rounded_sum, rounded_nets) for n in numbers),
        "database_untouched": not env.db_changed(),
    }


def _revenue_query(world: RevenueWorld) -> str:
    """The one aggregate query an analyst writes once the dictionary and the store master are read."""
    stores = ", ".join(f"({s['ledger_store_id']}, '{s['region']}', '{s['home_currency']}', "
                       f"{1 if s['kind'] == 'training' else 0})" for s in world.stores.values())
    regions = ", ".join(f"('{r}')" for r in world.regions)
    start, end, close = world.start.isoformat(), world.end.isoformat(), _stamp(world.close)
    rate = ("(CASE WHEN x.cur = 'EUR' THEN 1.0 ELSE (SELECT f.units_per_eur FROM fx_rates f WHERE f.currency = "
            "x.cur AND f.rate_date <= x.day ORDER BY f.rate_date DESC LIMIT 1) END)")
    return f"""WITH st(store_id, region, home, training) AS (VALUES {stores}),
rg(name) AS (VALUES {regions}),
fixed AS (SELECT l.store_id, l.order_no, COALESCE((SELECT c.amount_minor FROM line_corrections c
    WHERE c.store_id = l.store_id AND c.order_no = l.order_no AND c.line_no = l.line_no
    AND c.loaded_at <= '{close}' ORDER BY c.recorded_at DESC LIMIT 1), l.amount_minor) AS amount FROM order_lines l),
sale AS (SELECT st.region, o.store_id, o.order_no, f.amount, COALESCE(o.currency, st.home) AS cur,
    date(o.ordered_at) AS day FROM orders o JOIN st ON st.store_id = o.store_id
    JOIN fixed f ON f.store_id = o.store_id AND f.order_no = o.order_no
    WHERE o.status = 'complete' AND st.training = 0 AND date(o.ordered_at) BETWEEN '{start}' AND '{end}'),
refund AS (SELECT st.region, r.amount_minor AS amount, COALESCE(o.currency, st.home) AS cur,
    date(o.ordered_at) AS day FROM refunds r JOIN orders o ON o.store_id = r.store_id AND o.order_no = r.order_no
    JOIN st ON st.store_id = r.store_id
    WHERE st.training = 0 AND date(r.refunded_at) BETWEEN '{start}' AND '{end}'),
se AS (SELECT x.region, x.store_id, x.order_no, x.amount / 100.0 / {rate} AS eur FROM sale x),
re AS (SELECT x.region, x.amount / 100.0 / {rate} AS eur FROM refund x)
SELECT rg.name AS region,
  (SELECT COUNT(*) FROM (SELECT DISTINCT store_id, order_no FROM se WHERE se.region = rg.name)) AS orders,
  ROUND(COALESCE((SELECT SUM(eur) FROM se WHERE se.region = rg.name), 0), 2) AS gross_eur,
  ROUND(-COALESCE((SELECT SUM(eur) FROM re WHERE re.region = rg.name), 0), 2) AS refunds_eur,
  ROUND(COALESCE((SELECT SUM(eur) FROM se WHERE se.region = rg.name), 0)
    - COALESCE((SELECT SUM(eur) FROM re WHERE re.region = rg.name), 0), 2) AS net_eur
FROM rg ORDER BY rg.name"""


REVENUE_LOOKS = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'table'",
    "SELECT status, COUNT(*) FROM orders GROUP BY status",
    "SELECT currency, COUNT(*) FROM orders GROUP BY currency",
    "SELECT currency, MIN(rate_date), MAX(rate_date), COUNT(*) FROM fx_rates GROUP BY currency",
    "SELECT * FROM line_corrections ORDER BY store_id, order_no, line_no, recorded_at",
    "SELECT * FROM refunds ORDER BY refunded_at",
)


def _revenue_scripts(world: RevenueWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient analyst's calls, and a wasteful one with repeated reads and a careless report rewritten."""
    rows = [f"{r},{t[0]},{two_decimals(t[1])},{two_decimals(t[2])},{two_decimals(t[3])}"
            for r, t in world.truth.items()]
    report = "\n".join([",".join(REPORT_HEADER)] + rows) + "\n"
    answer = f"Total net_eur: {two_decimals(world.total_net)}"
    docs = ["docs/README.md", *sorted(p for p in world.files if p != "docs/README.md")]
    reads = [Call("list_files"), *[Call("read_file", {"path": p, "page": k}) for p in docs
                                   for k in range(1, len(_doc_pages(world.files[p])) + 1)]]
    reads += [Call("list_stores", {"page": p}) for p in range(1, -(-len(world.stores) // STORE_PAGE) + 1)]
    reads += [Call("get_store", {"code": c}) for c in world.stores]
    reads += [Call("run_sql", {"query": q}) for q in REVENUE_LOOKS]
    reads.append(Call("run_sql", {"query": _revenue_query(world)}))
    write = Call("write_file", {"path": world.report_path, "content": report})
    reference = (*reads, write, Call("submit", {"answer": answer}))
    careless = report.replace(f"\n{world.regions[0]},", f"\n{world.regions[0].upper()},", 1)
    wasteful = (*reads[:2], reads[1], *reads[2:12], reads[11], *reads[12:],
                Call("write_file", {"path": world.report_path, "content": careless}), write,
                Call("submit", {"answer": answer}))
    return reference, wasteful
