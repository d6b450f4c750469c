"""Data work: clean a messy CSV export into an existing SQLite table, and write an exact aggregate report
from an SQLite ledger joined with a JSON lookup file (amendment 001 §1)."""

from __future__ import annotations

import calendar
import copy
import csv
import io
import json
import re
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from esac_kit.ag.answers import two_decimals
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

MAX_ROWS = 200          # rows a query returns to the model
MAX_CELL = 2000         # characters of one text cell returned to the model
MAX_QUERY = 100_000     # characters of one SQL statement
MAX_FILE = 100_000      # characters of one written file
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
MONTHS = [calendar.month_abbr[m] for m in range(13)]
MONTH_NAMES = [calendar.month_name[m] for m in range(13)]


class DataEnv(Environment):
    """A small file tree (path -> text) and an in-memory SQLite database; writes go under outbox/ only."""

    def __init__(self, files: dict[str, str], schema: str, rows: dict[str, list[tuple]]):
        super().__init__()
        self.state = {"files": dict(files)}
        self.db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self.db.executescript(schema)
        for table, table_rows in rows.items():
            if table_rows:
                marks = ", ".join("?" * len(table_rows[0]))
                self.db.executemany(f'INSERT INTO "{table}" VALUES ({marks})', table_rows)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 50_000)  # bounds the cost of one function call
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 1000)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_QUERY + 1)
        self.initial = self.snapshot()  # hidden: what the checks compare the final state against
        self._steps, self._started = 0, 0.0

    @tool("List every file of the workspace with its size in characters. Files under inbox/, docs/ and "
          "reference/ are read-only inputs; you may create files under outbox/.")
    def list_files(self):
        return [{"path": path, "chars": len(text)} for path, text in sorted(self.state["files"].items())]

    @tool("Return the whole text of one file, by its path as list_files shows it (e.g. 'docs/notes.md').",
          {"path": {"type": "string", "description": "the file's path"}})
    def read_file(self, path: str):
        key = _normal_path(path)
        if key not in self.state["files"]:
            raise ToolError(f"no file {path[:200]!r}; call list_files to see the paths")
        return self.state["files"][key]

    @tool("Create or overwrite a text file under outbox/ with exactly the given content (at most 100000 "
          "characters). Paths use letters, digits, '.', '_', '-' and '/'; input files cannot be changed.",
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

    @tool("Run ONE SQLite statement on the database and return its result as JSON. A statement that returns rows "
          f"gives {{columns, rows, row_count, truncated}} with at most {MAX_ROWS} rows (use ORDER BY / LIMIT / "
          "OFFSET to page); INSERT, UPDATE and DELETE give {rows_affected}. Every statement is atomic and committed "
          f"at once, and may change at most {MAX_CHANGES} rows. Refused: schema changes (CREATE, DROP, ALTER, also "
          "of TEMP objects), BEGIN / COMMIT / SAVEPOINT, ATTACH, VACUUM, ANALYZE, the printf() and format() "
          "functions, and PRAGMAs other than table_info / table_list / index_list / index_info / foreign_key_list. "
          "See the schema with SELECT name, sql FROM sqlite_master. No '?' parameters; one statement per call; "
          "statements that run too long are interrupted.",
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
        """Run the model's statement under the authorizer and the time and step limits."""
        self._steps, self._started = 0, time.monotonic()
        self.db.set_authorizer(_authorize)
        self.db.set_progress_handler(self._tick, TICK_OPCODES)
        cursor = None
        try:
            cursor = self.db.execute(query)
            if cursor.description is None:
                return {"rows_affected": max(cursor.rowcount, 0)}
            fetched = cursor.fetchmany(MAX_ROWS + 1)
            columns = [d[0] for d in cursor.description]
            rows = [[_cell(v) for v in row] for row in fetched[:MAX_ROWS]]
            return {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": len(fetched) > MAX_ROWS}
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
        return 1 if self._steps > STEP_LIMIT or time.monotonic() - self._started > WALL_LIMIT_S else 0

    def db_changed(self) -> bool:
        """True when any table differs from the initial database."""
        now = self.snapshot()
        keys = {k for k in self.initial.keys() | now.keys() if k.startswith("db/")}
        return any(self.initial.get(k) != now.get(k) for k in keys)


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


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return "x'" + value[:MAX_CELL // 2].hex() + "'"
    if isinstance(value, str) and len(value) > MAX_CELL:
        return value[:MAX_CELL] + "...[truncated]"
    if isinstance(value, float) and (value != value or abs(value) == float("inf")):
        return str(value)
    return value


def _normal_path(path: str) -> str:
    key = path.strip()
    while key.startswith("./") or key.startswith("/"):
        key = key[2:] if key.startswith("./") else key[1:]
    return key


# ---------------------------------------------------------------- lenient parsing for the checks

def _decimal(value: Any) -> Decimal | None:
    """A number from a cell or an SQLite value, ignoring spaces, thousands separators and currency marks."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, (int, float)):
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
    else:
        text = re.sub(r"(?i)eur|usd|[€$\s,]", "", str(value))
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


def _half_up(value: Decimal, places: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)


def _numbers(text: str) -> list[Decimal]:
    """Every number written in a free-text answer (thousands separators allowed)."""
    found = re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)
    return [d for d in (_decimal(f) for f in found) if d is not None]


# ---------------------------------------------------------------- task 1: clean a CSV into a table

COMPANIES = ["Northwind Supply", "Kestrel Hardware", "Marlow & Finch", "Tallgrass Outfitters", "Copperleaf Goods",
             "Harbor Lane Traders", "Silverbirch Home", "Brightwater Tools", "Oakmere Builders", "Fenwick Provisions",
             "Saltmarsh Marine", "Larkspur Interiors"]
DEPOTS = ["Lyon", "Rotterdam", "Porto", "Gdansk", "Bremen", "Turin", "Ghent", "Bilbao", "Dayton", "Tulsa",
          "Fresno", "Boise"]
PEOPLE = ["Priya", "Tomas", "Ingrid", "Malik", "Sofia", "Kenji", "Amara", "Lucas", "Hannah", "Diego", "Yara", "Owen",
          "Leila", "Piotr", "Naomi", "Felix"]
SUPPLIER_NAMES = ["Acme Fasteners", "Baltic Timber", "Crown Packaging", "Delta Polymers", "Evergreen Textiles",
                  "Fjord Metals", "Granite Adhesives", "Helix Electrics", "Ironbridge Castings", "Juniper Paper",
                  "Keystone Glass", "Lumen Lighting", "Meridian Tools", "Nordic Hinges"]
SKU_PREFIXES = ["BRK", "PNL", "CBL", "FST", "GLU", "HNG", "VLV", "PMP", "SHT", "TUB", "RIV", "WSH"]
RECEIPT_COLUMNS = ("ref", "received_on", "supplier_id", "sku", "quantity", "weight_kg", "amount_cents")
RECEIPTS_SCHEMA = """
CREATE TABLE suppliers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL
);
CREATE TABLE receipts (
  id INTEGER PRIMARY KEY,
  ref TEXT NOT NULL,            -- the till's receipt reference
  received_on TEXT NOT NULL,    -- ISO date YYYY-MM-DD
  supplier_id INTEGER NOT NULL REFERENCES suppliers(id),
  sku TEXT NOT NULL,
  quantity INTEGER NOT NULL,
  weight_kg REAL NOT NULL,
  amount_cents INTEGER NOT NULL -- US cents
);
"""
LB_IN_KG = Decimal("0.45359237")


def _spread(rng: ItemRng, options: list, n: int) -> list:
    """n choices that use every option at least once (when n allows), in seeded order."""
    picks = [options[i % len(options)] for i in range(n)]
    rng.shuffle(picks)
    return picks


class _ReceiptDraws:
    """Draws the receipts of one month's export: refs in till order and clean records with their shown forms."""

    def __init__(self, rng: ItemRng, year: int, month: int, suppliers: dict[str, int], skus: list[str]):
        self.rng, self.year, self.month, self.suppliers, self.skus = rng, year, month, suppliers, skus
        self.days = calendar.monthrange(year, month)[1]
        self.ref_prefix = rng.choice(["GR", "RC", "GI", "WR"])
        self.next_ref = rng.randint(1200, 7800)

    def new_ref(self, y: int | None = None, m: int | None = None) -> str:
        """The till's next receipt reference, in this month unless another is given."""
        y, m = (self.year if y is None else y), (self.month if m is None else m)
        self.next_ref += self.rng.randint(1, 4)
        return f"{self.ref_prefix}{y % 100:02d}{m:02d}-{self.next_ref}"

    def clean_record(self, ref: str, date: tuple[int, int, int]) -> dict:
        """One receipt: its true values and the weight as the till wrote it."""
        rng = self.rng
        unit = rng.choice(["kg", "g", "lb"])
        if unit == "kg":
            weight = Decimal(rng.randint(300, 90000)) / 1000
            shown = rng.choice([f"{weight.normalize():f} kg", f"{weight.normalize():f}kg", f"{weight:f} KG"])
        elif unit == "g":
            grams = rng.randint(120, 9500)
            weight, shown = Decimal(grams) / 1000, rng.choice([f"{grams} g", f"{grams}g"])
        else:
            pounds = Decimal(rng.randint(5, 900)) / 10
            weight = pounds * LB_IN_KG
            shown = rng.choice([f"{pounds.normalize():f} lb", f"{pounds.normalize():f} lbs", f"{pounds:f}lb"])
        name = rng.choice(list(self.suppliers))
        return {"ref": ref, "date": date, "supplier": name, "supplier_id": self.suppliers[name],
                "sku": rng.choice(self.skus), "quantity": rng.randint(2, 2400), "weight": weight,
                "weight_shown": shown, "cents": rng.randint(1500, 950000), "void": False}

    def in_month_day(self) -> tuple[int, int, int]:
        """A day of the export's month."""
        return (self.year, self.month, self.rng.randint(1, self.days))


@dataclass
class ReceiptsWorld:
    """A month's goods-in export, its rules, the tables it loads into, and the rows a correct load inserts."""

    company: str
    manager: str
    period: str
    ticket: str
    rules_path: str
    csv_path: str
    files: dict[str, str]
    table_rows: dict[str, list[tuple]]
    supplier_rows: list[tuple]
    earlier_rows: list[tuple]  # the receipts the early-month run loaded
    expected: dict[str, tuple]  # ref -> the inserted row's values after the ref, in file order
    exact_weights: dict[str, Decimal]  # ref -> the unrounded weight in kg
    total_cents: int  # the sum of amount_cents over those rows


RECEIPTS_CHECKS = (
    Check("loaded_set", "exactly the right receipts were inserted, each once", 2.0),
    Check("received_on", "every loaded receipt has the right ISO date"),
    Check("supplier_id", "every loaded receipt has the right supplier id"),
    Check("sku_quantity", "every loaded receipt has the right upper-case SKU and whole quantity"),
    Check("weight_kg", "every loaded receipt has the right weight in kg, rounded to 3 decimals"),
    Check("amount_cents", "every loaded receipt has the right amount in cents"),
    Check("answer", "the answer gives the number of inserted rows and the sum of their amount_cents"),
    Check("earlier_rows_intact", "the rows loaded earlier and the suppliers table are unchanged", guard=True),
)


def receipts_load(rng: ItemRng) -> AgTask:
    """Clean a goods-in CSV export (corrections, voids, mixed dates, units and money formats) into `receipts`."""
    world = _receipts_world(rng)
    reference, wasteful = _receipts_scripts(world)
    return AgTask(_receipts_prompt(world),
                  lambda: DataEnv(copy.deepcopy(world.files), RECEIPTS_SCHEMA, copy.deepcopy(world.table_rows)),
                  RECEIPTS_CHECKS, lambda env, answer: _check_receipts(world, env, answer), reference, wasteful)


def _receipts_world(rng: ItemRng) -> ReceiptsWorld:
    """The suppliers and SKUs, the export's records with their fates, the file and the rows loaded before."""
    company, depot, manager = rng.choice(COMPANIES), rng.choice(DEPOTS), rng.choice(PEOPLE)
    year, month = rng.randint(2023, 2026), rng.randint(1, 12)
    day_first = rng.random() < 0.5
    period = f"{MONTH_NAMES[month]} {year}"
    csv_path = f"inbox/goods_in_{year}-{month:02d}.csv"
    rules_path = "inbox/LOADING_RULES.md"

    names = rng.sample(SUPPLIER_NAMES, 7)
    supplier_ids = rng.sample(range(101, 990), 6)
    suppliers = dict(zip(names[:6], supplier_ids))
    skus = [f"{p}-{rng.randint(1000, 9899)}" for p in rng.sample(SKU_PREFIXES, 6)]
    draws = _ReceiptDraws(rng, year, month, suppliers, skus)
    entries = _receipt_entries(draws, unknown_supplier=names[6])
    corrections = _receipt_corrections(draws)
    earlier_rows, repeated = _earlier_receipts(draws)
    lines = _export_lines(rng, entries, repeated, corrections)
    raw_csv = _export_csv(rng, lines, day_first)

    kept = [r for r, keep in entries if keep] + [later for _, later, keep in corrections if keep]
    order = {id(record): i for i, (record, _) in enumerate(lines)}
    kept.sort(key=lambda r: order[id(r)])
    supplier_rows = sorted((sid, name) for name, sid in suppliers.items())
    files = {rules_path: _loading_rules(period, csv_path, depot, day_first), csv_path: raw_csv}
    table_rows = {"suppliers": supplier_rows, "receipts": [(i + 1, *row) for i, row in enumerate(earlier_rows)]}
    ticket = f"LOAD-{rng.randint(10000, 99999)}"  # keeps every instance's prompt distinct
    return ReceiptsWorld(company, manager, period, ticket, rules_path, csv_path, files, table_rows, supplier_rows,
                         earlier_rows, {r["ref"]: _receipt_row(r)[1:] for r in kept},
                         {r["ref"]: r["weight"] for r in kept}, sum(r["cents"] for r in kept))


def _receipt_entries(draws: _ReceiptDraws, unknown_supplier: str) -> list[tuple[dict, bool]]:
    """The file's records, each with its fate: True for the ones that must end up in the table."""
    rng, year, month = draws.rng, draws.year, draws.month
    entries: list[tuple[dict, bool]] = []
    for _ in range(rng.randint(10, 13)):
        entries.append((draws.clean_record(draws.new_ref(), draws.in_month_day()), True))
    # An ambiguous slashed date that is in the month only when read with the depot's convention, and one that is
    # in the month only when misread.
    ambiguous_day = rng.choice([d for d in range(1, 13) if d != month])
    keep_slash = draws.clean_record(draws.new_ref(), (year, month, ambiguous_day))
    keep_slash["slash"] = True
    entries.append((keep_slash, True))
    other_month = month + 1 if month < 12 else 11
    drop_slash = draws.clean_record(draws.new_ref(), (year, other_month, month))
    drop_slash["slash"] = True
    entries.append((drop_slash, False))
    outside = (year, month - 1, calendar.monthrange(year, month - 1)[1]) if month > 1 else (year, 2, 1)
    entries.append((draws.clean_record(draws.new_ref(), outside), False))
    void = draws.clean_record(draws.new_ref(), draws.in_month_day())
    void["void"] = True
    entries.append((void, False))
    entries.append((dict(draws.clean_record(draws.new_ref(), draws.in_month_day()), supplier=unknown_supplier,
                         supplier_id=None), False))
    return entries


def _receipt_corrections(draws: _ReceiptDraws) -> list[tuple[dict, dict, bool]]:
    """(earlier export, later export, kept) pairs of one ref; only the later one counts."""
    rng = draws.rng
    corrections: list[tuple[dict, dict, bool]] = []
    first = draws.clean_record(draws.new_ref(), draws.in_month_day())
    corrections.append((first, dict(first, quantity=first["quantity"] + rng.randint(1, 9),
                                    cents=first["cents"] + rng.randint(100, 9000)), True))
    voided = draws.clean_record(draws.new_ref(), draws.in_month_day())
    corrections.append((voided, dict(voided, void=True), False))
    revived = draws.clean_record(draws.new_ref(), draws.in_month_day())
    corrections.append((dict(revived, void=True, cents=revived["cents"] + 500), revived, True))
    return corrections


def _earlier_receipts(draws: _ReceiptDraws) -> tuple[list[tuple], list[dict]]:
    """The rows the early-month run already loaded, and the records the file repeats (one of them edited since)."""
    rng, year, month = draws.rng, draws.year, draws.month
    earlier_rows: list[tuple] = []
    repeated: list[dict] = []
    for k in range(rng.randint(2, 3)):
        record = draws.clean_record(draws.new_ref(), (year, month, rng.randint(1, 3)))
        earlier_rows.append(_receipt_row(record))
        if k < 2:
            repeated.append(dict(record, quantity=record["quantity"] + 5) if k else record)
    previous = (year, month - 1) if month > 1 else (year - 1, 12)
    for _ in range(rng.randint(4, 6)):
        record = draws.clean_record(draws.new_ref(*previous), (*previous, rng.randint(1, 28)))
        earlier_rows.insert(0, _receipt_row(record))
    rng.shuffle(earlier_rows)
    return earlier_rows, repeated


def _export_lines(rng: ItemRng, entries: list[tuple[dict, bool]], repeated: list[dict],
                  corrections: list[tuple[dict, dict, bool]]) -> list[tuple[dict, str]]:
    """The file's (record, exported_at) lines in a shuffled order; corrections deliberately out of order."""
    lines: list[tuple[dict, str]] = []
    for record, _ in entries:
        lines.append((record, _stamp(record["date"], 1, rng)))
    for record in repeated:
        lines.append((record, _stamp(record["date"], 0, rng)))
    duplicate = rng.choice([r for r, keep in entries[:10] if keep])
    lines.append((duplicate, next(stamp for r, stamp in lines if r is duplicate)))
    rng.shuffle(lines)
    for earlier, later, _ in corrections:
        early_stamp = _stamp(earlier["date"], 1, rng)
        late_stamp = _stamp(earlier["date"], rng.randint(3, 6), rng)
        at, late_at = rng.randint(0, len(lines)), rng.randint(0, len(lines))
        lines.insert(min(at, late_at), (later, late_stamp))   # the later export comes first in the file
        lines.insert(max(at, late_at) + 1, (earlier, early_stamp))
    return lines


def _export_csv(rng: ItemRng, lines: list[tuple[dict, str]], day_first: bool) -> str:
    """The export's text, every line in one of the tills' date, money, supplier, SKU and status spellings."""
    formats = _spread(rng, ["iso", "slash", "text", "text_us", "iso", "slash"], len(lines))
    money = _spread(rng, ["dollar", "plain", "usd_prefix", "usd_suffix"], len(lines))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["ref", "received", "supplier", "sku", "qty", "weight", "amount", "status", "exported_at"])
    for (record, stamp), date_format, money_format in zip(lines, formats, money):
        writer.writerow([record["ref"], _show_date(record, date_format, day_first),
                         _show_supplier(record["supplier"], rng), _show_sku(record["sku"], rng),
                         _show_quantity(record["quantity"], rng), record["weight_shown"],
                         _show_money(record["cents"], money_format),
                         rng.choice(["VOID", "void", "Void"]) if record["void"] else rng.choice(["OK", "ok", "OK "]),
                         stamp])
    return buffer.getvalue()


def _receipts_prompt(world: ReceiptsWorld) -> str:
    """The load to do and the answer's form."""
    return (
        f"You run the goods-in data load for {world.company} (ticket {world.ticket}); {world.manager}, the warehouse "
        "manager, needs it done today. "
        f"The {world.period} export of the goods-in tills and its loading "
        "rules are in inbox/. Load the export into the SQLite table `receipts` exactly as the rules say, using the "
        "`suppliers` table for supplier ids. Do not change or delete the rows already in `receipts` and do not "
        "modify other tables.\n\n"
        "When you are done, call submit with exactly `inserted=<number of rows you inserted> "
        "amount_cents=<sum of amount_cents over the rows you inserted>`."
    )


def _check_receipts(world: ReceiptsWorld, env: DataEnv, answer: str | None) -> dict[str, bool]:
    """The load's checks on the rows inserted, the rows left and the answer."""
    expected, exact_weights = world.expected, world.exact_weights
    rows = env.db.execute(f"SELECT {', '.join(RECEIPT_COLUMNS)} FROM receipts").fetchall()
    remaining = Counter(world.earlier_rows)
    new_rows = []
    for row in rows:
        if remaining[row] > 0:
            remaining[row] -= 1
        else:
            new_rows.append(row)
    intact = not +remaining and env.db.execute("SELECT id, name FROM suppliers ORDER BY id").fetchall() \
        == world.supplier_rows
    by_ref: dict[str, list[tuple]] = {}
    for row in new_rows:
        by_ref.setdefault(str(row[0]).strip(), []).append(row)

    def every(test) -> bool:
        return all(ref in by_ref and all(test(ref, row) for row in by_ref[ref]) for ref in expected)

    return {
        "loaded_set": sorted(str(r[0]).strip() for r in new_rows) == sorted(expected),
        "received_on": every(lambda ref, row: str(row[1]).strip() == expected[ref][0]),
        "supplier_id": every(lambda ref, row: _integer(row[2]) == expected[ref][1]),
        "sku_quantity": every(lambda ref, row: str(row[3]).strip() == expected[ref][2]
                              and _integer(row[4]) == expected[ref][3]),
        "weight_kg": every(lambda ref, row: _rounded_ok(row[5], exact_weights[ref], 3)),
        "amount_cents": every(lambda ref, row: _integer(row[6]) == expected[ref][5]),
        "answer": _receipts_answer_ok(answer, len(expected), world.total_cents),
        "earlier_rows_intact": intact,
    }


def _receipts_scripts(world: ReceiptsWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one with repeated reads and one amount inserted wrong then fixed."""
    expected, rules_path, csv_path = world.expected, world.rules_path, world.csv_path
    values = ",\n".join(_sql_values(ref, row) for ref, row in expected.items())
    into = f"INSERT INTO receipts ({', '.join(RECEIPT_COLUMNS)}) VALUES\n"
    insert = into + values
    answer = f"inserted={len(expected)} amount_cents={world.total_cents}"
    reads = (Call("list_files"), Call("read_file", {"path": rules_path}), Call("read_file", {"path": csv_path}),
             Call("run_sql", {"query": "SELECT name, sql FROM sqlite_master WHERE type = 'table'"}),
             Call("run_sql", {"query": "SELECT id, name FROM suppliers ORDER BY id"}),
             Call("run_sql", {"query": "SELECT * FROM receipts ORDER BY id"}))
    reference = (*reads, Call("run_sql", {"query": insert}), Call("submit", {"answer": answer}))
    first_ref = next(iter(expected))
    wrong = dict(expected)
    wrong[first_ref] = (*expected[first_ref][:5], expected[first_ref][5] // 100)
    wrong_values = ",\n".join(_sql_values(ref, row) for ref, row in wrong.items())
    wasteful = (*reads[:3], Call("read_file", {"path": rules_path}), Call("read_file", {"path": csv_path}),
                *reads[3:],
                Call("run_sql", {"query": into + wrong_values}),
                Call("run_sql", {"query": f"UPDATE receipts SET amount_cents = {expected[first_ref][5]} "
                                          f"WHERE ref = '{first_ref}'"}),
                Call("submit", {"answer": answer}))
    return reference, wasteful


def _loading_rules(period: str, csv_path: str, depot: str, day_first: bool) -> str:
    """The loading rules file: the order of the cleaning steps and the meaning of every column."""
    convention = "day/month/year" if day_first else "month/day/year"
    return "\n".join([
        f"# Loading the {period} goods-in export",
        "",
        f"`{csv_path}` is the raw export of the goods-in tills for {period}. Load it into the `receipts` table",
        "of the database, one row per receipt, following these rules.",
        "",
        "1. Corrections. The tills re-export a receipt every time it is edited, so a ref can appear more than once.",
        "   Only the export with the latest `exported_at` counts; ignore the others. The file is not in export order.",
        "2. After step 1, do NOT load a receipt when:",
        "   - its status is VOID (in any letter case);",
        "   - its ref is already in `receipts` (the early-month run loaded it; leave that row as it is);",
        f"   - it was received outside {period};",
        "   - its supplier is not in the `suppliers` table (purchasing reviews those by hand).",
        "3. Columns of `receipts`:",
        "   - ref: as in the file.",
        "   - received_on: ISO date YYYY-MM-DD. The tills write dates as YYYY-MM-DD, as '7 Mar 2024', as",
        f"     'Mar 7, 2024', or with slashes; slashed dates come from the {depot} depot, whose till writes",
        f"     {convention}.",
        "   - supplier_id: the id of the supplier whose name matches, ignoring letter case and surrounding spaces.",
        "   - sku: upper case, without spaces.",
        "   - quantity: a whole number (the file may use thousands separators).",
        "   - weight_kg: kilograms rounded to 3 decimals; the file mixes kg, g and lb (1 lb = 0.45359237 kg).",
        "   - amount_cents: the amount in US cents. Every amount is in US dollars, written with or without '$' or",
        "     'USD' and with or without thousands separators.",
        "   - id: leave it to the database.",
        "",
    ])


def _receipt_row(record: dict) -> tuple:
    y, m, d = record["date"]
    return (record["ref"], f"{y}-{m:02d}-{d:02d}", record["supplier_id"], record["sku"], record["quantity"],
            float(_half_up(record["weight"], 3)), record["cents"])


def _sql_values(ref: str, row: tuple) -> str:
    date, supplier_id, sku, quantity, weight, cents = row
    return f"('{ref}', '{date}', {supplier_id}, '{sku}', {quantity}, {weight!r}, {cents})"


def _stamp(date: tuple[int, int, int], days_after: int, rng: ItemRng) -> str:
    """An export timestamp `days_after` days after the receipt date (may roll into the next month)."""
    y, m, d = date
    d += days_after
    while d > calendar.monthrange(y, m)[1]:
        d -= calendar.monthrange(y, m)[1]
        y, m = (y, m + 1) if m < 12 else (y + 1, 1)
    return f"{y}-{m:02d}-{d:02d}T{rng.randint(6, 21):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def _show_date(record: dict, style: str, day_first: bool) -> str:
    y, m, d = record["date"]
    if record.get("slash"):
        style = "slash"
    if style == "slash":
        return f"{d:02d}/{m:02d}/{y}" if day_first else f"{m:02d}/{d:02d}/{y}"
    if style == "text":
        return f"{d} {MONTHS[m]} {y}"
    if style == "text_us":
        return f"{MONTHS[m]} {d}, {y}"
    return f"{y}-{m:02d}-{d:02d}"


def _show_supplier(name: str, rng: ItemRng) -> str:
    return rng.choice([name, name.upper(), name.lower(), f"  {name}", f"{name} ", f" {name.lower()} "])


def _show_sku(sku: str, rng: ItemRng) -> str:
    return rng.choice([sku, sku, sku.lower(), f" {sku}", sku.replace("-", " - ")])


def _show_quantity(quantity: int, rng: ItemRng) -> str:
    if quantity >= 1000 and rng.random() < 0.7:
        return f"{quantity:,}"
    return rng.choice([str(quantity), str(quantity), f" {quantity}"])


def _show_money(cents: int, style: str) -> str:
    dollars = Decimal(cents) / 100
    if style == "dollar":
        return f"${dollars:,.2f}"
    if style == "usd_prefix":
        return f"USD {dollars.normalize():f}" if cents % 100 else f"USD {cents // 100}"
    if style == "usd_suffix":
        return f"{dollars:,.2f} USD"
    return f"{dollars:.2f}"


def _receipts_answer_ok(answer: str | None, inserted: int, cents: int) -> bool:
    text = (answer or "").lower()
    count = re.search(r"inserted\D{0,12}?(\d[\d,]*)", text)
    total = re.search(r"amount[\s_]*cents\D{0,12}?(\d[\d,]*)", text)
    return bool(count and total) and _integer(count.group(1)) == inserted and _integer(total.group(1)) == cents


# ---------------------------------------------------------------- task 2: an exact regional revenue report

REGIONS = ["Alpine", "Baltic", "Central", "Coastal", "Eastern", "Highlands", "Lakeside", "Metro", "Northern",
           "Riverside", "Southern", "Western"]
STORE_NAMES = ["Harbour Street", "Old Town", "Station Mall", "Airport", "Market Square", "Riverside Park",
               "North Gate", "Cathedral Lane", "Westfield", "Kings Road", "Canal Wharf", "Hill Top", "Mill Lane",
               "Bridge End"]
CURRENCIES = {"CHF": Decimal("0.9500"), "GBP": Decimal("0.8600"), "SEK": Decimal("11.4000"),
              "NOK": Decimal("11.6000"), "DKK": Decimal("7.4600"), "PLN": Decimal("4.3200"),
              "CZK": Decimal("24.8000")}
REPORT_HEADER = ["region", "orders", "gross_eur", "refunds_eur", "net_eur"]
SALES_SCHEMA = """
CREATE TABLE sales (
  id INTEGER PRIMARY KEY,
  order_no TEXT NOT NULL,
  sold_at TEXT NOT NULL,        -- local time, YYYY-MM-DD HH:MM:SS
  store_id INTEGER NOT NULL,
  amount REAL,                  -- in `currency`; negative = refund line; NULL = payment pending
  currency TEXT                 -- ISO 4217 code; NULL on old tills (see the ledger notes)
);
CREATE TABLE fx_rates (
  currency TEXT NOT NULL,
  valid_from TEXT NOT NULL,     -- YYYY-MM-DD
  units_per_eur REAL NOT NULL,
  PRIMARY KEY (currency, valid_from)
);
"""


class _LedgerDraws:
    """Draws the ledger's payment lines: order numbers, amounts in a currency, and what currency the till shows."""

    def __init__(self, rng: ItemRng, foreign: list[str]):
        self.rng, self.foreign = rng, foreign
        self.lines: list[list] = []  # [order_no, sold_at, store_id, cents or None, currency or None]
        self.order_counter = rng.randint(40000, 80000)

    def order_no(self) -> str:
        """The next order number."""
        self.order_counter += self.rng.randint(1, 7)
        return f"SO-{self.order_counter}"

    def amount_in(self, code: str) -> int:
        """A sale's amount in a currency's minor units."""
        eur_cents = self.rng.randint(1500, 90000)
        return int(_half_up(Decimal(eur_cents) * (CURRENCIES.get(code, Decimal(1))), 0))

    def line_currency(self, store: dict) -> tuple[str, str | None]:
        """(the currency a line is really in, what the ledger shows)."""
        roll = self.rng.random()
        if roll < 0.25:
            return store["currency"], None
        if roll < 0.85:
            return store["currency"], store["currency"]
        other = "EUR" if store["currency"] != "EUR" else self.rng.choice(self.foreign)
        return other, other

    def stamp(self, date: str) -> str:
        """A time of day on a date."""
        rng = self.rng
        return f"{date} {rng.randint(8, 21):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"

    def sale(self, store: dict, sold_at: str, pair: bool = False) -> list[list]:
        """One order's sale line, or two lines of it, added to the ledger and returned."""
        number = self.order_no()
        code, shown = self.line_currency(store)
        made = [[number, sold_at, store["store_id"], self.amount_in(code), shown]]
        if pair:
            code2, shown2 = self.line_currency(store)
            made.append([number, sold_at[:-2] + f"{min(int(sold_at[-2:]) + 7, 59):02d}", store["store_id"],
                         self.amount_in(code2), shown2])
        self.lines.extend(made)
        return made


@dataclass
class RevenueWorld:
    """A month's sales ledger, its notes and store list, and the report's true figures."""

    company: str
    controller: str
    period: str
    ym: str
    next_ym: str
    report_path: str
    notes_path: str
    stores_path: str
    regions: list[str]
    stores: list[dict]
    truth: dict[str, tuple]  # region -> (orders, gross, refunds, net) in EUR, unrounded
    total_net: Decimal  # over all regions, unrounded
    files: dict[str, str]
    table_rows: dict[str, list[tuple]]


def revenue_report(rng: ItemRng) -> AgTask:
    """Write a month's regional revenue CSV from a sales ledger with refunds, dated FX rates, NULLs and a lookup."""
    world = _revenue_world(rng)
    reference, wasteful = _revenue_scripts(world)
    return AgTask(_revenue_prompt(world),
                  lambda: DataEnv(copy.deepcopy(world.files), SALES_SCHEMA, copy.deepcopy(world.table_rows)),
                  _revenue_checks(world), lambda env, answer: _check_revenue(world, env, answer), reference, wasteful)


def _revenue_world(rng: ItemRng) -> RevenueWorld:
    """The stores, the dated FX rates, the ledger lines and the figures they add up to."""
    company, controller = rng.choice(COMPANIES), rng.choice(PEOPLE)
    year, month = rng.randint(2023, 2026), rng.randint(2, 11)
    period, ym = f"{MONTH_NAMES[month]} {year}", f"{year}-{month:02d}"
    next_ym = f"{year}-{month + 1:02d}"
    report_path = f"outbox/revenue_{ym}.csv"
    notes_path = f"docs/{rng.choice(['finance_notes', 'ledger_notes', 'sales_ledger_notes'])}.md"
    stores_path = f"reference/{rng.choice(['stores', 'store_list', 'store_master', 'branches'])}.json"
    regions, empty_region, foreign, stores = _revenue_stores(rng)
    rates, change_day = _fx_rates(rng, foreign, year, month)
    lines = _ledger_lines(rng, _LedgerDraws(rng, foreign), stores, empty_region, change_day, year, month)
    truth = _revenue_truth(lines, stores, regions, rates, ym)

    sales_rows = [(i + 1, n, at, sid, None if c is None else c / 100, cur)
                  for i, (n, at, sid, c, cur) in enumerate(lines)]
    fx_rows = [(code, start, float(value)) for code in sorted(rates) for start, value in rates[code]]
    lookup = {"regions": regions,
              "stores": sorted(stores, key=lambda s: s["store_id"])}
    files = {notes_path: _ledger_notes(company, stores_path), stores_path: json.dumps(lookup, indent=2) + "\n"}
    return RevenueWorld(company, controller, period, ym, next_ym, report_path, notes_path, stores_path, regions,
                        stores, truth, sum(t[3] for t in truth.values()), files,
                        {"sales": sales_rows, "fx_rates": fx_rows})


def _revenue_stores(rng: ItemRng) -> tuple[list[str], str, list[str], list[dict]]:
    """Four regions, the one of them without sales, three foreign currencies and eight stores (one a training
    store)."""
    regions = sorted(rng.sample(REGIONS, 4))
    empty_region = rng.choice(regions)
    foreign = rng.sample(sorted(CURRENCIES), 3)
    store_ids = rng.sample(range(10, 99), 8)
    names = rng.sample(STORE_NAMES, 8)
    busy = [r for r in regions if r != empty_region]
    homes = _spread(rng, foreign + ["EUR"], 7)
    stores = []
    for k in range(7):
        stores.append({"store_id": store_ids[k], "name": names[k], "region": busy[k % 3], "currency": homes[k],
                       "kind": rng.choice(["retail", "retail", "outlet"])})
    stores[6]["kind"] = "training"
    stores.append({"store_id": store_ids[7], "name": names[7], "region": empty_region,
                   "currency": rng.choice(foreign + ["EUR"]), "kind": "retail"})
    rng.shuffle(stores)
    return regions, empty_region, foreign, stores


def _fx_rates(rng: ItemRng, foreign: list[str], year: int, month: int
              ) -> tuple[dict[str, list[tuple[str, Decimal]]], dict[str, int]]:
    """Dated rates per currency: one well before the month, one change inside it, one after it; and the change
    days."""
    ym, next_ym = f"{year}-{month:02d}", f"{year}-{month + 1:02d}"
    rates: dict[str, list[tuple[str, Decimal]]] = {}
    change_day: dict[str, int] = {}
    for code in foreign:
        base = CURRENCIES[code]
        day = rng.randint(8, 22)
        change_day[code] = day
        values = [_half_up(base * Decimal(rng.randint(9600, 10400)) / 10000, 4) for _ in range(3)]
        rates[code] = [(f"{year}-{month - 1:02d}-{rng.randint(1, 20):02d}", values[0]),
                       (f"{ym}-{day:02d}", values[1]), (f"{next_ym}-01", values[2])]
    return rates, change_day


def _ledger_lines(rng: ItemRng, draws: _LedgerDraws, stores: list[dict], empty_region: str,
                  change_day: dict[str, int], year: int, month: int) -> list[list]:
    """The ledger around the month: boundary sales, pairs, rate-change days, pending lines, training sales and
    refunds, sorted by time."""
    days = calendar.monthrange(year, month)[1]
    ym, prev_ym, next_ym = f"{year}-{month:02d}", f"{year}-{month - 1:02d}", f"{year}-{month + 1:02d}"
    real = [s for s in stores if s["kind"] != "training" and s["region"] != empty_region]
    training = next(s for s in stores if s["kind"] == "training")
    empty_store = next(s for s in stores if s["region"] == empty_region)
    lines, sale, stamp = draws.lines, draws.sale, draws.stamp
    # Last month: one late-evening sale on its last day, and an order refunded this month.
    prev_days = calendar.monthrange(year, month - 1)[1]
    sale(rng.choice(real), f"{prev_ym}-{prev_days:02d} 23:{rng.randint(10, 59):02d}:{rng.randint(0, 59):02d}")
    old_order = sale(rng.choice(real), stamp(f"{prev_ym}-{rng.randint(5, 25):02d}"))[0]
    # This month.
    month_sales = []
    for k in range(rng.randint(20, 26)):
        store = real[k % len(real)] if k < len(real) else rng.choice(real)
        month_sales += sale(store, stamp(f"{ym}-{rng.randint(1, days - 1):02d}"), pair=rng.random() < 0.25)
    for _ in range(2):  # late on the last day: inside the month
        month_sales += sale(rng.choice(real), f"{ym}-{days:02d} {rng.randint(18, 23):02d}:"
                                              f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
    switching = [s for s in real if s["currency"] != "EUR"]
    for store in rng.sample(switching, min(2, len(switching))):  # on the day a new rate starts
        lines.append([draws.order_no(), f"{ym}-{change_day[store['currency']]:02d} 0{rng.randint(8, 9)}:"
                                        f"{rng.randint(10, 59):02d}:00", store["store_id"],
                      draws.amount_in(store["currency"]), store["currency"] if rng.random() < 0.5 else None])
        month_sales.append(lines[-1])
    # A pending payment on a counted order, and an order whose only line is pending (at the quiet store).
    pending_host = rng.choice(month_sales)
    lines.append([pending_host[0], pending_host[1][:-2] + "59", pending_host[2], None, pending_host[4]])
    lines.append([draws.order_no(), stamp(f"{ym}-{rng.randint(1, days):02d}"), empty_store["store_id"], None,
                  empty_store["currency"]])
    for _ in range(rng.randint(2, 3)):  # the training store's test sales
        sale(training, stamp(f"{ym}-{rng.randint(1, days):02d}"))
    # Refunds: two of this month's orders, one of last month's, and one next month (outside).
    refunded = rng.sample([s for s in month_sales if s[1][8:10] < f"{days - 2:02d}"], 3)
    for original in refunded[:2]:
        later = f"{ym}-{min(int(original[1][8:10]) + rng.randint(1, 2), days):02d}"
        part = original[3] if rng.random() < 0.5 else original[3] * rng.randint(2, 8) // 10
        lines.append([original[0], stamp(later), original[2], -part, original[4]])
    lines.append([old_order[0], stamp(f"{ym}-{rng.randint(2, days):02d}"), old_order[2], -old_order[3],
                  old_order[4]])
    lines.append([refunded[2][0], stamp(f"{next_ym}-0{rng.randint(1, 4)}"), refunded[2][2], -refunded[2][3],
                  refunded[2][4]])
    # Next month: an early-morning sale at the quiet store and another just after midnight.
    sale(empty_store, f"{next_ym}-01 0{rng.randint(0, 1)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")
    sale(rng.choice(real), f"{next_ym}-01 00:{rng.randint(0, 30):02d}:{rng.randint(0, 59):02d}")
    lines.sort(key=lambda line: (line[1], line[0]))
    return lines


def _revenue_truth(lines: list[list], stores: list[dict], regions: list[str],
                   rates: dict[str, list[tuple[str, Decimal]]], ym: str) -> dict[str, tuple]:
    """Region -> (orders, gross, refunds, net) in EUR, unrounded, over the month's counted lines."""

    def rate(code: str, date: str) -> Decimal:
        if code == "EUR":
            return Decimal(1)
        return [value for start, value in rates[code] if start <= date][-1]

    by_id = {s["store_id"]: s for s in stores}
    figures = {r: {"orders": set(), "gross": Decimal(0), "refunds": Decimal(0)} for r in regions}
    with localcontext() as context:
        context.prec = 50
        for number, sold_at, store_id, cents, shown in lines:
            store = by_id[store_id]
            if not sold_at.startswith(ym) or cents is None or store["kind"] == "training":
                continue
            eur = Decimal(cents) / 100 / rate(shown or store["currency"], sold_at[:10])
            entry = figures[store["region"]]
            if cents > 0:
                entry["orders"].add(number)
                entry["gross"] += eur
            else:
                entry["refunds"] += eur
    return {r: (len(f["orders"]), f["gross"], f["refunds"], f["gross"] + f["refunds"]) for r, f in figures.items()}


def _revenue_checks(world: RevenueWorld) -> tuple[Check, ...]:
    """The report's checks; the layout check names the report's path."""
    return (
        Check("layout", f"{world.report_path} has the exact header and one row per region, sorted by region"),
        Check("orders", "every region's order count is right"),
        Check("gross_eur", "every region's gross_eur is right to the cent"),
        Check("refunds_eur", "every region's refunds_eur is right to the cent"),
        Check("net_eur", "every region's net_eur is right to the cent"),
        Check("answer", "the answer gives the total net_eur over all regions"),
        Check("database_untouched", "the database was not modified", guard=True),
    )


def _check_revenue(world: RevenueWorld, env: DataEnv, answer: str | None) -> dict[str, bool]:
    """The report's checks on the written file, the database and the answer."""
    regions, truth = world.regions, world.truth
    table = _parse_csv(env.state["files"].get(world.report_path))
    header, body = (table[0], table[1:]) if table else ([], [])
    found = {row[0].lower(): row for row in body if len(row) == len(REPORT_HEADER)}

    def every(column: int, test) -> bool:
        return all(r.lower() in found and test(found[r.lower()][column], truth[r]) for r in regions)

    def net_ok(cell: str, t: tuple) -> bool:
        from_rounded = _half_up(t[1], 2) + _half_up(t[2], 2)
        return _rounded_ok(cell, t[3], 2) or _decimal(cell) == from_rounded

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


def _revenue_prompt(world: RevenueWorld) -> str:
    """The report to write and the answer's form."""
    stores_path, period = world.stores_path, world.period
    return (
        f"You are the data analyst at {world.company}. {world.controller} in Finance needs the regional revenue "
        f"report for {period}, built from "
        f"the sales ledger (SQLite tables `sales` and `fx_rates`) and the store list in {stores_path}. The finance "
        f"team's notes on the ledger are in {world.notes_path}.\n\n"
        f"Write the report to {world.report_path}: a CSV file whose first line is the header "
        f"`{','.join(REPORT_HEADER)}`, followed by one row per region listed in {stores_path} (every listed region, "
        "also a region without sales), sorted by region name. For each region, over the ledger lines of its stores "
        f"dated in {period}:\n"
        "- orders: the number of distinct orders with at least one sale line (a positive amount);\n"
        "- gross_eur: the sum of the sale lines, in EUR;\n"
        "- refunds_eur: the sum of the refund lines (negative amounts), in EUR, so a negative number or 0.00;\n"
        "- net_eur: gross_eur + refunds_eur.\n"
        "Convert every line to EUR on its own; write money with two decimals, rounding only the final figures. "
        "Do not modify the database.\n\n"
        "When you are done, call submit with the total net_eur over all regions (a number in EUR)."
    )


def _revenue_scripts(world: RevenueWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient analyst's calls, and a wasteful one with repeated reads and a careless report rewritten."""
    regions, notes_path, stores_path = world.regions, world.notes_path, world.stores_path
    report_path = world.report_path
    rows = [f"{r},{t[0]},{two_decimals(t[1])},{two_decimals(t[2])},{two_decimals(t[3])}" for r, t in world.truth.items()]
    report = "\n".join([",".join(REPORT_HEADER)] + rows) + "\n"
    answer = f"Total net_eur: {two_decimals(world.total_net)}"
    query = _revenue_query(world.stores, regions, world.ym, world.next_ym)
    reads = (Call("list_files"), Call("read_file", {"path": notes_path}), Call("read_file", {"path": stores_path}),
             Call("run_sql", {"query": "SELECT name, sql FROM sqlite_master WHERE type = 'table'"}),
             Call("run_sql", {"query": "SELECT * FROM fx_rates ORDER BY currency, valid_from"}),
             Call("run_sql", {"query": query}))
    write = Call("write_file", {"path": report_path, "content": report})
    reference = (*reads, write, Call("submit", {"answer": answer}))
    careless = report.replace(f"{regions[0]},", f"{regions[0].upper()},", 1)
    wasteful = (*reads[:3], Call("read_file", {"path": notes_path}), Call("read_file", {"path": stores_path}),
                *reads[3:], Call("write_file", {"path": report_path, "content": careless + "\n\n"}), write,
                Call("submit", {"answer": answer}))
    return reference, wasteful


def _ledger_notes(company: str, stores_path: str) -> str:
    """The finance notes: refunds, pending lines, NULL currencies, the direction and dating of FX rates."""
    return "\n".join([
        f"# Notes on the {company} sales ledger",
        "",
        "- `sales` has one row per payment line. An order (`order_no`) can have several lines.",
        "- `amount` is in the line's `currency`. A negative amount is a refund line: it carries the `order_no` of",
        "  the order it refunds and is dated on the day of the refund.",
        "- `amount` is NULL while a payment is pending; a pending line is not revenue.",
        "- `currency` is NULL on lines recorded by the old tills: those lines are in the home currency of their",
        f"  store (`currency` in {stores_path}).",
        "- `fx_rates.units_per_eur` is how many units of the currency make 1 EUR. A rate applies from its",
        "  `valid_from` day (inclusive) until the next `valid_from` of the same currency. Convert each line at the",
        "  rate that applies on the line's own day. EUR has no rate row.",
        "- `sold_at` is the store's local time, written YYYY-MM-DD HH:MM:SS.",
        f"- Stores of kind \"training\" in {stores_path} are till-training sandboxes: their lines are test data and",
        "  never revenue.",
        "",
    ])


def _revenue_query(stores: list[dict], regions: list[str], ym: str, next_ym: str) -> str:
    """The single SQL query an efficient analyst writes once the notes and the store list are read."""
    store_values = ", ".join(f"({s['store_id']}, '{s['region']}', '{s['currency']}', "
                             f"{1 if s['kind'] == 'training' else 0})" for s in stores)
    region_values = ", ".join(f"('{r}')" for r in regions)
    return f"""WITH store(store_id, region, home, training) AS (VALUES {store_values}),
region(name) AS (VALUES {region_values}),
line AS (
  SELECT s.order_no, s.amount, st.region, COALESCE(s.currency, st.home) AS cur, date(s.sold_at) AS day
  FROM sales s JOIN store st ON st.store_id = s.store_id
  WHERE s.sold_at >= '{ym}-01' AND s.sold_at < '{next_ym}-01' AND s.amount IS NOT NULL AND st.training = 0),
eur AS (
  SELECT l.*, l.amount / CASE WHEN l.cur = 'EUR' THEN 1.0 ELSE (
    SELECT f.units_per_eur FROM fx_rates f WHERE f.currency = l.cur AND f.valid_from <= l.day
    ORDER BY f.valid_from DESC LIMIT 1) END AS value
  FROM line l)
SELECT r.name AS region,
  COUNT(DISTINCT CASE WHEN e.amount > 0 THEN e.order_no END) AS orders,
  ROUND(COALESCE(SUM(CASE WHEN e.amount > 0 THEN e.value END), 0), 2) AS gross_eur,
  ROUND(COALESCE(SUM(CASE WHEN e.amount < 0 THEN e.value END), 0), 2) AS refunds_eur,
  ROUND(COALESCE(SUM(e.value), 0), 2) AS net_eur
FROM region r LEFT JOIN eur e ON e.region = r.name
GROUP BY r.name ORDER BY r.name"""


def _parse_csv(text: str | None) -> list[list[str]]:
    """A CSV's non-blank rows with every cell stripped; [] when there is no file."""
    if not text:
        return []
    try:
        rows = list(csv.reader(io.StringIO(text.strip("\ufeff"))))
    except csv.Error:
        return []
    return [[cell.strip() for cell in row] for row in rows if any(cell.strip() for cell in row)]
