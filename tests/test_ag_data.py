"""The two data-work AG tasks: scripted agents over many seeds, an independent cleaner and SQL cross-check of the
expected results, determinism, distinct prompts, and hostile tool inputs that must never crash the environment."""

from __future__ import annotations

import csv
import io
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from esac_kit.ag.env import ToolError
from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import Call, script_json
from esac_kit.ag.tasks.data import receipts_load, revenue_report
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

ROOT = Path(__file__).resolve().parents[1]
TASKS = {"data-receipts-load": receipts_load, "data-revenue-report": revenue_report}
SEEDS = range(20)
MONTHS = {m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                      "Dec"], start=1)}


def make(item_id: str, seed: int):
    return TASKS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 1)))


def scale(item_id: str):
    return read_item(ROOT / "items" / "ag" / f"{item_id}.toml").efficiency


@pytest.mark.parametrize("item_id", TASKS)
def test_scripted_agents_keep_their_guarantees(item_id):
    efficiency = scale(item_id)
    for seed in SEEDS:
        task = make(item_id, seed)
        reference = drive(task, task.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        wasteful = drive(task, task.wasteful, efficiency)
        assert wasteful["success"], (seed, wasteful["checks"])
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        assert wasteful["efficiency"]["action_level"] < 6
        null = drive(task, task.scripts()["null"], efficiency)
        assert null["score"] == 0 and not null["success"]
        assert not any(null["checks"][c.id] for c in task.checks if not c.guard)


def _partial_receipts(task):
    """Loads the right rows but keeps amounts in dollars."""
    insert = task.reference[-2].args["query"]
    dollars = re.sub(r", (\d+)\)", lambda m: f", {int(m.group(1)) // 100})", insert)
    return (*task.reference[:-2], Call("run_sql", {"query": dollars}), task.reference[-1])


def _partial_report(task):
    """Right layout and order counts, wrong money."""
    write = next(c for c in task.reference if c.name == "write_file")
    lines = write.args["content"].splitlines()
    broken = [lines[0]] + [",".join(line.split(",")[:2] + ["1.00", "-1.00", "0.00"]) for line in lines[1:]]
    return (Call("write_file", {"path": write.args["path"], "content": "\n".join(broken) + "\n"}),
            Call("submit", {"answer": "0"}))


def test_partial_agents_earn_partial_credit():
    for item_id, partial, expected in [("data-receipts-load", _partial_receipts, 7 / 8),
                                       ("data-revenue-report", _partial_report, 2 / 6)]:
        for seed in range(5):
            task = make(item_id, seed)
            outcome = drive(task, partial(task), scale(item_id))
            assert not outcome["success"] and outcome["score"] == pytest.approx(expected), (item_id, outcome["checks"])


def test_guards_zero_the_score():
    task = make("data-receipts-load", 0)
    vandal = (*task.reference[:-1], Call("run_sql", {"query": "DELETE FROM receipts WHERE id = 1"}),
              task.reference[-1])
    outcome = drive(task, vandal, scale("data-receipts-load"))
    assert outcome["score"] == 0 and not outcome["checks"]["earlier_rows_intact"]
    task = make("data-revenue-report", 0)
    fixer = (Call("run_sql", {"query": "UPDATE sales SET currency = 'EUR' WHERE currency IS NULL"}),
             *task.reference)
    outcome = drive(task, fixer, scale("data-revenue-report"))
    assert outcome["score"] == 0 and not outcome["checks"]["database_untouched"]


def _parse_date(text: str, day_first: bool) -> str:
    text = text.strip()
    if m := re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text):
        return text
    if m := re.fullmatch(r"(\d{2})/(\d{2})/(\d{4})", text):
        a, b, year = m.groups()
        day, month = (a, b) if day_first else (b, a)
        return f"{year}-{month}-{day}"
    if m := re.fullmatch(r"(\d{1,2}) (\w{3}) (\d{4})", text):
        return f"{m.group(3)}-{MONTHS[m.group(2)]:02d}-{int(m.group(1)):02d}"
    m = re.fullmatch(r"(\w{3}) (\d{1,2}), (\d{4})", text)
    return f"{m.group(3)}-{MONTHS[m.group(1)]:02d}-{int(m.group(2)):02d}"


def _kilograms(text: str) -> Decimal:
    number, unit = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z]+)\s*", text).groups()
    factor = {"kg": Decimal(1), "g": Decimal("0.001"), "lb": Decimal("0.45359237"), "lbs": Decimal("0.45359237")}
    return (Decimal(number) * factor[unit.lower()]).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP)


def _clean_by_the_rules(env) -> dict[str, tuple]:
    """An independent reading of the export and its rules: what a careful clerk would load."""
    files = env.state["files"]
    rules = " ".join(files["inbox/LOADING_RULES.md"].split())
    day_first = "writes day/month/year" in rules
    csv_path = next(p for p in files if p.endswith(".csv"))
    period = re.search(r"(\d{4}-\d{2})", csv_path).group(1)
    suppliers = {name.lower(): sid for sid, name in env.db.execute("SELECT id, name FROM suppliers")}
    loaded = {ref for (ref,) in env.db.execute("SELECT ref FROM receipts")}
    latest: dict[str, dict] = {}
    for row in csv.DictReader(io.StringIO(files[csv_path])):
        if row["ref"] not in latest or row["exported_at"] > latest[row["ref"]]["exported_at"]:
            latest[row["ref"]] = row
    cleaned = {}
    for ref, row in latest.items():
        date = _parse_date(row["received"], day_first)
        supplier = suppliers.get(row["supplier"].strip().lower())
        if row["status"].strip().upper() == "VOID" or ref in loaded or not date.startswith(period) or not supplier:
            continue
        amount = Decimal(re.sub(r"USD|\$|,|\s", "", row["amount"]))
        cleaned[ref] = (date, supplier, row["sku"].replace(" ", "").upper(), int(row["qty"].replace(",", "")),
                        float(_kilograms(row["weight"])), int(amount * 100))
    return cleaned


def test_the_expected_rows_follow_from_the_file_and_its_rules():
    for seed in SEEDS:
        task = make("data-receipts-load", seed)
        env = task.make_env()
        expected = _clean_by_the_rules(env)
        before = env.db.execute("SELECT max(id) FROM receipts").fetchone()[0]
        env.run_sql(task.reference[-2].args["query"])
        rows = env.db.execute("SELECT ref, received_on, supplier_id, sku, quantity, weight_kg, amount_cents "
                              "FROM receipts WHERE id > ?", (before,)).fetchall()
        assert {r[0]: tuple(r[1:]) for r in rows} == expected and len(rows) == len(expected), seed
        assert 12 <= len(expected) <= 18


def test_the_reference_query_agrees_with_the_expected_report():
    for seed in SEEDS:
        task = make("data-revenue-report", seed)
        env = task.make_env()
        query = next(c for c in task.reference if c.name == "run_sql" and "WITH store" in c.args["query"])
        result = env.run_sql(query.args["query"])
        write = next(c for c in task.reference if c.name == "write_file")
        body = [line.split(",") for line in write.args["content"].splitlines()[1:]]
        assert [row[0] for row in result["rows"]] == [row[0] for row in body]
        for got, want in zip(result["rows"], body):
            assert got[1] == int(want[1])
            assert all(abs(Decimal(repr(float(g))) - Decimal(w)) <= Decimal("0.01") for g, w in zip(got[2:], want[2:]))
        zero_rows = [row for row in body if row[1] == "0"]
        assert len(zero_rows) >= 1 and any(Decimal(row[3]) < 0 for row in body)


@pytest.mark.parametrize("item_id", TASKS)
def test_generation_is_deterministic_and_prompts_vary(item_id):
    first, again = make(item_id, 3), make(item_id, 3)
    assert first.prompt == again.prompt
    for name in ("reference", "wasteful"):
        assert script_json(getattr(first, name)) == script_json(getattr(again, name))
    assert first.make_env().snapshot() == again.make_env().snapshot()
    assert len({make(item_id, seed).prompt for seed in SEEDS}) == len(SEEDS)


HOSTILE = [
    ("read_file", {"path": "../../etc/passwd"}), ("read_file", {"path": ""}), ("read_file", {"path": "x" * 100000}),
    ("read_file", {"path": "\ud800"}), ("write_file", {"path": "inbox/LOADING_RULES.md", "content": "gone"}),
    ("write_file", {"path": "docs/finance_notes.md", "content": "gone"}),
    ("write_file", {"path": "outbox/../inbox/x", "content": "x"}), ("write_file", {"path": "", "content": ""}),
    ("write_file", {"path": "outbox/" + "a" * 300, "content": "x"}),
    ("write_file", {"path": "outbox/big.csv", "content": "x" * 200001}),
    ("run_sql", {"query": ""}), ("run_sql", {"query": "   "}), ("run_sql", {"query": "SELECT * FROM nowhere"}),
    ("run_sql", {"query": "ATTACH DATABASE ':memory:' AS other"}), ("run_sql", {"query": "PRAGMA writable_schema=1"}),
    ("run_sql", {"query": "DROP TABLE sales"}), ("run_sql", {"query": "DROP TABLE receipts"}),
    ("run_sql", {"query": "CREATE TABLE \"a\"\"b\" (x)"}), ("run_sql", {"query": "CREATE TEMP TABLE t (x)"}),
    ("run_sql", {"query": "SELECT 1; DELETE FROM sales"}), ("run_sql", {"query": "SELECT ?"}),
    ("run_sql", {"query": "SELECT '\ud800'"}), ("run_sql", {"query": "SELECT 1\x00"}),
    ("run_sql", {"query": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"}),
    ("run_sql", {"query": "SELECT printf('%.*c', 2000000000, 'x')"}), ("run_sql", {"query": "SELECT zeroblob(1e9)"}),
    ("run_sql", {"query": "SELECT abs(-9223372036854775808)"}), ("run_sql", {"query": "BEGIN"}),
    ("run_sql", {"query": "VACUUM"}), ("run_sql", {"query": "DELETE FROM sqlite_master"}),
    ("run_sql", {"query": "SELECT " + "+1 " * 5000}), ("run_sql", {"query": "x" * 150000}),
]


@pytest.mark.parametrize("item_id", TASKS)
def test_hostile_inputs_are_tool_errors_never_crashes(item_id):
    task = make(item_id, 1)
    env = task.make_env()
    before = env.snapshot()
    for name, args in HOSTILE:
        with pytest.raises(ToolError):
            env.call(name, args)
    assert env.snapshot() == before
    # Odd but legal calls answer normally, and huge results are capped.
    assert env.run_sql("SELECT 1e999 AS big, x'00ff' AS blob")["rows"] == [["inf", "x'00ff'"]]
    big = env.run_sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) SELECT x FROM c")
    assert big["row_count"] == 200 and big["truncated"]
    table = "receipts" if item_id == "data-receipts-load" else "sales"
    flood = (f"INSERT INTO {table} SELECT NULL, {', '.join(['1'] * 7 if table == 'receipts' else ['1'] * 5)} "
             f"FROM (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5000) SELECT x FROM c)")
    with pytest.raises(ToolError, match="nothing was changed"):
        env.run_sql(flood)
    assert env.snapshot() == before
    # Through the episode: wrong tools and arguments are invalid calls, tool errors are results, nothing raises.
    episode = Episode(task, item_id)
    for name, args in [*HOSTILE, ("read_file", {"path": 5}), ("run_sql", {}), ("delete_everything", {}),
                       ("run_sql", {"query": "SELECT 1", "limit": 10**30})]:
        text, error = episode.act(name, args)
        assert error and text
    assert episode.counts.invalid == 4


@pytest.mark.parametrize("item_id", TASKS)
def test_the_item_file_loads_and_its_scale_fits_the_reference(item_id):
    item = read_item(ROOT / "items" / "ag" / f"{item_id}.toml")
    assert item.category == "data" and item.generator and item.step_budget
    calls = [sum(1 for c in make(item_id, seed).reference if c.name != "submit") for seed in SEEDS]
    assert item.efficiency.action_scale[0] < 1 + item.efficiency.rework_penalty  # any waste drops a level
    assert item.step_budget >= 3 * max(calls)


def test_checks_survive_hostile_final_states():
    task = make("data-receipts-load", 0)
    env = task.make_env()
    ref = re.search(r"\('([^']+)'", task.reference[-2].args["query"]).group(1)
    columns = "ref, received_on, supplier_id, sku, quantity, weight_kg, amount_cents"
    env.run_sql(f"INSERT INTO receipts ({columns}) VALUES ('{ref}', x'00', 1e999, x'01', 'abc', 1e999, -1e999)")
    env.run_sql(f"INSERT INTO receipts ({columns}) VALUES ('{ref}', 'x', '99999999999999999999999', 's', 1e308, "
                "'inf', '1e5')")
    verdicts = task.evaluate(env, "inserted=" + "9" * 500 + " amount_cents=1e999")
    assert not any(v for k, v in verdicts.items() if k != "earlier_rows_intact")
    task = make("data-revenue-report", 0)
    env = task.make_env()
    write = next(c for c in task.reference if c.name == "write_file")
    for content in ["\x00\x00", "region,orders\n" + "a," * 10000, '"unterminated\n',
                    "region,orders,gross_eur,refunds_eur,net_eur\nX,1e999,inf,nan,-0\n"]:
        env.write_file(write.args["path"], content)
        verdicts = task.evaluate(env, "1e999 nan inf " + "9" * 100)
        assert not any(v for k, v in verdicts.items() if k != "database_untouched")
    # Lenient in format, exact in value: a BOM, spaces, an upper-case header and blank lines still pass.
    lines = write.args["content"].splitlines()
    loose = ["\ufeff" + lines[0].upper().replace(",", " , ")] + [" " + line.replace(",", ", ") for line in lines[1:]]
    env.write_file(write.args["path"], "\n".join(loose) + "\n\n")
    verdicts = task.evaluate(env, task.reference[-1].args["answer"].replace("Total", "The total is EUR"))
    assert all(verdicts.values()), verdicts
