"""The research tasks (ESAC-AG 2.0): scripted agents score as designed, independent solvers that read only the prompt
and the tool outputs reach the generator's answer, every trap a solver can fall into fails a check, instances are
deterministic, distinct and fast to build, outputs stay compact, and hostile input gives tool errors, never crashes."""

from __future__ import annotations

import json
import re
import time
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import Call, script_json
from esac_kit.ag.tasks import research
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

BUDGET, DOSSIER = "research-budget-as-of", "research-incident-dossier"
ITEMS = {BUDGET: research.budget_as_of, DOSSIER: research.incident_dossier}
ITEM_DIR = Path(__file__).resolve().parent.parent / "items" / "ag"
SEEDS = 12
STAMP = "%Y-%m-%d %H:%M:%S"


def rng(item_id: str, seed: int) -> ItemRng:
    return ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 2))


def task(item_id: str, seed: int):
    return ITEMS[item_id](rng(item_id, seed))


def scale(item_id: str):
    return read_item(ITEM_DIR / f"{item_id}.toml").efficiency


def act(episode: Episode, tool_name: str, **args):
    """One call through the episode, as an agent makes it: the parsed result (a tool error fails the test)."""
    text, error = episode.act(tool_name, args)
    assert not error, (tool_name, args, text)
    return json.loads(text)


def _hit(text: str) -> dict[str, str]:
    """A search hit 'id (collection, date) title — snippet' as fields."""
    doc_id, collection, day, title, snippet = re.match(r"(\S+) \((\w+), (\S+)\) (.*?) — (.*)$", text).groups()
    return {"id": doc_id, "collection": collection, "date": day, "title": title, "snippet": snippet}


def pages(episode: Episode, tool_name: str, key: str, first_only: bool = False, **args) -> list:
    """Every page of a paged tool's rows (search hits as fields)."""
    rows, page, count = [], 1, 1
    while page <= count:
        result = act(episode, tool_name, **args, **({"page": page} if page > 1 else {}))
        rows += [_hit(r) for r in result[key]] if key == "hits" else result[key]
        count = 1 if first_only else result["pages"]
        page += 1
    return rows


def read(episode: Episode, doc_id: str) -> list[str]:
    return pages(episode, "read_document", "lines", doc_id=doc_id)


# ---------------------------------------------------------------- scripted agents, determinism, budgets


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_wasteful_and_null_agents(item_id):
    efficiency = scale(item_id)
    for seed in range(SEEDS):
        generated = task(item_id, seed)
        reference = drive(generated, generated.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        assert all(step["status"] in ("ok", "submit") for step in reference["steps"])
        wasteful = drive(generated, generated.wasteful, efficiency)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6, seed
        assert wasteful["counts"]["redundant"] >= 2
        null = drive(generated, generated.scripts()["null"], efficiency)
        assert null["score"] == 0.0 and not null["success"] and generated.unsafe is None


@pytest.mark.parametrize("item_id", ITEMS)
def test_instances_are_deterministic_distinct_fast_and_outputs_compact(item_id):
    prompts, answers = set(), set()
    for seed in range(SEEDS):
        started = time.perf_counter()
        one = task(item_id, seed)
        assert time.perf_counter() - started < 0.2
        two = task(item_id, seed)
        assert one.prompt == two.prompt and one.describe() == two.describe()
        assert one.make_env().snapshot() == two.make_env().snapshot()
        for name in ("reference", "wasteful"):
            assert script_json(one.scripts()[name]) == script_json(two.scripts()[name])
        assert one.prompt.rstrip().endswith(".") and "When you are done, call submit with" in one.prompt
        prompts.add(one.prompt)
        answers.add(one.reference[-1].args["answer"])
        episode = Episode(one, item_id)
        before = episode.env.snapshot()
        for call in one.reference[:-1]:
            text, _ = episode.act(call.name, dict(call.args))
            assert len(text) <= 1500, (call.name, len(text))
        assert episode.env.snapshot() == before  # read-only: nothing can be reworked
    assert len(prompts) == len(answers) == SEEDS


@pytest.mark.parametrize("item_id", ITEMS)
def test_every_id_the_reference_uses_was_shown_to_it_first(item_id):
    """Nothing is guessed: each document read and each service looked up was named in the prompt or an earlier
    tool output."""
    for seed in range(4):
        generated = task(item_id, seed)
        episode, seen = Episode(generated, item_id), generated.prompt
        for call in generated.reference[:-1]:
            wanted = call.args.get("doc_id") or call.args.get("name") or call.args.get("service")
            if wanted:
                assert wanted in seen, (seed, call)
            text, _ = episode.act(call.name, dict(call.args))
            seen += text


# ---------------------------------------------------------------- an independent budget solver


def _figure(text: str) -> int:
    return int(re.search(r"([\d,]+)$", text.strip()).group(1).replace(",", ""))


def _signed(text: str) -> int:
    return (-1 if "decrease" in text else 1) * _figure(text)


def _limits(lines: list[str]) -> dict[str, list[tuple[int, date | None, date | None]]]:
    """Reviewer -> (limit, from, until) from the register's lines."""
    found = {}
    for line in lines:
        match = re.match(r"(.+?) \((?:Budget Controller|Finance Director)\): (.+)$", line)
        if not match:
            continue
        spans = []
        for part in match.group(2).split(";"):
            amount = int(re.search(r"up to \w+ ([\d,]+)", part).group(1).replace(",", ""))
            since = re.search(r"from (\d{4}-\d\d-\d\d)", part)
            until = re.search(r"until (\d{4}-\d\d-\d\d)", part)
            spans.append((amount, since and date.fromisoformat(since.group(1)),
                          until and date.fromisoformat(until.group(1))))
        found[match.group(1)] = spans
    return found


def _limit(limits: dict, reviewer: str, day: date) -> int:
    return next(a for a, since, until in limits[reviewer] if (since is None or day >= since)
                and (until is None or day <= until))


def _fields(lines: list[str]) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in lines if ":" in ln)}


def _book_in_force(episode: Episode, as_of: date, book: str) -> dict[str, int]:
    versions = []
    for hit in pages(episode, "search", "hits", query="budget book", collection="budget"):
        lines = read(episode, hit["id"])
        version = int(re.search(r"version (\d+)", hit["title"]).group(1))
        adopted = re.search(r"adopted .* on (\d{4}-\d\d-\d\d)", lines[1])
        rows = (re.match(r"(CC-\d+) [^:]+: (.+)$", ln) for ln in lines)
        figures = {m.group(1): _figure(m.group(2)) for m in rows if m}
        versions.append((version, adopted and date.fromisoformat(adopted.group(1)), figures))
    if book == "latest":
        return max(versions)[2]
    if book == "first":
        return min(versions)[2]
    adopted = [v for v in versions if v[1] and (book == "latest_adopted" or v[1] <= as_of)]
    return max(adopted, key=lambda v: v[1])[2]


def _budget_records(episode: Episode, targets: list[str], paging: bool) -> tuple[dict, list, list]:
    """Every record of the targets, and every approval, correction and reversal naming one, read in full."""
    queue = []
    for centre in targets:
        queue += [h["id"] for h in pages(episode, "search", "hits", first_only=not paging, query=centre,
                                         collection="changes") if h["id"] not in queue]
    records, decisions, corrections = {}, [], []
    for record_id in queue:
        records[record_id] = _fields(read(episode, record_id))
        for hit in pages(episode, "search", "hits", query=record_id):
            other = hit["id"]
            if other == record_id or other.startswith("MEMO-"):
                continue
            lines = read(episode, other)
            body = _fields(lines)
            if other.startswith("APR-"):
                verdict, day, reviewer = re.search(r"Decision: (\w+).* on (\d{4}-\d\d-\d\d) by (.+?) \(",
                                                   body["Decision"] and lines[-1]).groups()
                decisions.append({"request": body["Request"].split()[0], "decision": verdict,
                                  "decided": date.fromisoformat(day), "reviewer": reviewer})
            elif other.startswith("COR-"):
                corrections.append({"target": body["Corrects"], "field": body["Field"],
                                    "value": body["Corrected value"], "filed": date.fromisoformat(hit["date"])})
            elif other.startswith("REV-") and body["Reverses"] == record_id and other not in queue:
                queue.append(other)
    return records, decisions, corrections


def solve_budget(generated, *, book="in_force", limits="decision_day", approval="latest", effective=True,
                 reversal="chain", correction="all", paging=True) -> dict:
    """Explore the finance store through its tools and apply the documented rules; each keyword set otherwise falls
    into one trap: another book version, limits ignored / taken on the as-of day / against the original amount,
    approvals taken without their dates or later decisions, effective dates ignored, reversals ignored or never
    reinstated, corrections ignored / only those filed by the date / the first of several, a search's second page
    unread."""
    episode = Episode(generated, BUDGET)
    targets = list(dict.fromkeys(re.findall(r"CC-\d+", generated.prompt)))
    as_of = date.fromisoformat(re.search(r"close of business on (\d{4}-\d\d-\d\d)", generated.prompt).group(1))
    for topic in ("store", "rules"):
        act(episode, "describe_api", topic=topic)
    register = [ln for hit in pages(episode, "search", "hits", query="approval limits", collection="approvals")
                for ln in read(episode, hit["id"])]
    caps = _limits(register)
    totals = dict(_book_in_force(episode, as_of, book))
    records, decisions, corrections = _budget_records(episode, targets, paging)

    def fixed(record_id: str, name: str, original: str) -> str:
        fixes = sorted((c for c in corrections if c["target"] == record_id and c["field"] == name
                        and (correction != "before" or c["filed"] <= as_of)), key=lambda c: c["filed"])
        if correction == "none" or not fixes:
            return original
        return (fixes[0] if correction == "first" else fixes[-1])["value"]

    def amount(record_id: str, corrected: bool = True) -> int:
        body = records[record_id]
        original = body.get("Change") or body["Amount"]
        return abs(_signed(fixed(record_id, "amount", original) if corrected else original))

    def within(record_id: str, d: dict) -> bool:
        if limits == "ignore" or record_id.startswith("REV-") or d["decision"] != "approved":
            return True
        day = as_of if limits == "as_of_day" else d["decided"]
        return amount(record_id, limits != "original") <= _limit(caps, d["reviewer"], day)

    def in_force(record_id: str) -> bool:  # by its dates and approvals alone
        body = records[record_id]
        if effective and date.fromisoformat(fixed(record_id, "effective date", body["Effective"])) > as_of:
            return False
        mine = sorted((d for d in decisions if d["request"] == record_id and within(record_id, d)),
                      key=lambda d: d["decided"])
        dated = [d for d in mine if d["decided"] <= as_of]
        if approval == "any":
            return any(d["decision"] == "approved" for d in mine)
        chosen = {"latest": dated[-1:], "ever": mine[-1:], "first": dated[:1]}[approval]
        return bool(chosen) and chosen[0]["decision"] == "approved"

    def counts(record_id: str) -> bool:
        if not in_force(record_id):
            return False
        reversals = [r for r, b in records.items() if b.get("Reverses") == record_id]
        if reversal == "ignore":
            return True
        return not any((in_force if reversal == "flat" else counts)(r) for r in reversals)

    for record_id, body in records.items():
        if record_id.startswith("REV-") or not counts(record_id):
            continue
        value = amount(record_id) * (1 if "Amount" in body or "increase" in fixed(record_id, "amount", body["Change"])
                                     else -1)
        for key, sign in (("Cost centre", 1), ("From", -1), ("To", 1)):
            if key in body:
                totals[body[key].split()[0]] += sign * value
    answer = "; ".join(f"{c}: EUR {totals[c]:,}" for c in targets)
    episode.act("submit", {"answer": answer})
    return episode.outcome(scale(BUDGET))


def test_an_independent_budget_solver_reaches_the_checked_budgets():
    for seed in range(SEEDS):
        outcome = solve_budget(task(BUDGET, seed))
        assert outcome["success"], (seed, outcome["checks"])
        assert outcome["counts"]["tool_calls"] >= 40


BUDGET_TRAPS_ALWAYS = [{"book": "latest"}, {"limits": "ignore"}, {"approval": "any"}, {"approval": "ever"},
                       {"approval": "first"}, {"effective": False}, {"reversal": "ignore"}, {"reversal": "flat"},
                       {"correction": "none"}, {"correction": "before"}, {"paging": False}]
BUDGET_TRAPS_SOMETIMES = [{"book": "first"}, {"book": "latest_adopted"}, {"limits": "as_of_day"},
                          {"limits": "original"}, {"correction": "first"}]


def test_budget_traps_bite():
    """Each trap fails a check on every seed, or (when the instance's variant decides whether it matters) on some
    seeds, and never makes a wrong answer pass."""
    bit = {json.dumps(t): 0 for t in BUDGET_TRAPS_SOMETIMES}
    for seed in range(SEEDS):
        generated = task(BUDGET, seed)
        for trap in BUDGET_TRAPS_ALWAYS:
            assert not solve_budget(generated, **trap)["success"], (seed, trap)
        for trap in BUDGET_TRAPS_SOMETIMES:
            bit[json.dumps(trap)] += not solve_budget(generated, **trap)["success"]
    assert all(bit.values()), bit


def test_budget_commentary_misleads():
    """The stale status report's figures fail."""
    for seed in range(6):
        generated = task(BUDGET, seed)
        report = next(d for d in generated.make_env().state["documents"].values() if d["title"] ==
                      "Budget status report")
        figures = dict(re.match(r"(CC-\d+) \([^)]*\): (.+)$", ln).groups() for ln in report["lines"][2:])
        targets = list(dict.fromkeys(re.findall(r"CC-\d+", generated.prompt)))
        answer = "; ".join(f"{c}: {figures[c]}" for c in targets)
        outcome = drive(generated, (*generated.reference[:-1], Call("submit", {"answer": answer})), scale(BUDGET))
        assert not outcome["success"], seed


# ---------------------------------------------------------------- an independent incident solver


def _offset(text: str) -> timedelta:
    """UTC+05:30 -> 5 h 30 min."""
    sign, hours, minutes = re.search(r"UTC([+-])(\d\d):(\d\d)", text).groups()
    return (1 if sign == "+" else -1) * timedelta(hours=int(hours), minutes=int(minutes))


def _clocks(episode: Episode, mode: str) -> dict[str, timedelta]:
    """Host -> logged time minus UTC, from the runbook as the mode reads it: 'full' (current revision with its
    erratum), 'no_erratum', 'old' (the superseded revision), 'zone' (zones only) or 'raw' (no conversion)."""
    books = {}
    for hit in pages(episode, "search", "hits", query="clock error", collection="runbooks"):
        if hit["title"].startswith("Operations runbook"):
            books["current" if "(current)" in hit["snippet"] else "old"] = hit["id"]
    lines = read(episode, books["old" if mode == "old" else "current"])
    clocks = {}
    for line in lines:
        match = re.match(r"(\S+): zone (UTC[+-]\d\d:\d\d), clock error ([+-]\d+) s$", line)
        if match:
            error = 0 if mode == "zone" else int(match.group(3))
            clocks[match.group(1)] = _offset(match.group(2)) + timedelta(seconds=error)
        fixed = re.search(r"clock error of (\S+) is ([+-]\d+) s, not", line)
        if fixed and mode == "full":
            clocks[fixed.group(1)] = clocks[fixed.group(1)] + timedelta(seconds=int(fixed.group(2))) - \
                timedelta(seconds=int(re.search(r"not ([+-]\d+) s", line).group(1)))
    if mode == "raw":
        clocks = {h: timedelta(0) for h in clocks}
    return clocks


def _first_errors(episode: Episode, services: dict, clocks: dict, window: datetime | None) -> dict[str, datetime]:
    """Each service's earliest ERROR in UTC (from the window start when given), reading pages until every host
    of the service has shown its first line in the window."""
    found = {}
    for name, service in services.items():
        since = min(window + clocks[h] for h in service["hosts"]).strftime(STAMP) if window else ""
        args = {"service": name, "level": "ERROR", **({"since": since} if since else {})}
        seen, page, count = {}, 1, 1
        while page <= count and len(seen) < len(service["hosts"]):
            result = act(episode, "query_logs", **args, **({"page": page} if page > 1 else {}))
            for line in result["lines"]:
                stamp, host = line[:19], line.split()[2]
                utc = datetime.strptime(stamp, STAMP) - clocks[host]
                if (window is None or utc >= window) and host not in seen:
                    seen[host] = utc
            count, page = result["pages"], page + 1
        if seen:
            found[name] = min(seen.values())
    return found


def solve_dossier(generated, *, clocks="full", window=True, path=True, cancelled=False, any_time=False,
                  detect="rule", report="both") -> dict:
    """Explore the operations store and tools and apply the dossier's definitions; each keyword set otherwise falls
    into one trap: clocks read without the erratum / from the old runbook / as zones only / not at all, the window
    ignored, services off the failure path counted, a cancelled change counted, the origin's latest change taken
    whenever it ran, detection from any service's alert / from before the origin failed / in the chat's local time,
    the first report from the helpdesk alone / by times as written."""
    episode = Episode(generated, DOSSIER)
    incident = re.search(r"dossier of incident (INC-\d+)", generated.prompt).group(1)
    for topic in ("search", "systems", "dossier"):
        act(episode, "describe_api", topic=topic)
    ticket = _fields(read(episode, incident))
    edge, start = ticket["Edge service"], datetime.strptime(ticket["Incident window starts"][:19], STAMP)
    linked = pages(episode, "search", "hits", query=incident)
    clock = _clocks(episode, clocks)
    names = [edge] if path else [s["name"] for s in pages(episode, "list_services", "services")]
    services, queue = {}, list(names)
    while queue:
        name = queue.pop(0)
        if name not in services:
            services[name] = act(episode, "get_service", name=name)
            queue += services[name]["depends_on"] if path else []
    firsts = _first_errors(episode, services, clock, start if window else None)
    origin = min(firsts, key=firsts.get)
    changes = []
    for hit in pages(episode, "search", "hits", query=origin, collection="changes"):
        body = _fields(read(episode, hit["id"]))
        if body["Service"] == origin and (cancelled or body["Status"] == "completed"):
            when = datetime.strptime((body.get("Completed") or body["Scheduled"])[:19], STAMP)
            if any_time or when < firsts[origin]:
                changes.append((when, hit["id"]))
    chat = read(episode, next(h["id"] for h in linked if h["collection"] == "chat"))
    shift = timedelta(0) if detect == "local" else _offset(chat[0])
    day = start.date().isoformat()
    dependents = [s for s in services if s == origin or origin in _below(services, s)]
    alerts = []
    for line in chat[1:]:
        fired = re.match(r"\[(\d\d:\d\d:\d\d)\] monitor-bot: FIRING \S+ \(service (\S+)\)", line)
        if fired:
            alerts.append((datetime.strptime(f"{day} {fired.group(1)}", STAMP) - shift, fired.group(2)))
    ok = [t for t, svc in alerts if (detect == "any" and t >= start) or (detect == "no_start" and svc in dependents)
          or (detect in ("rule", "local") and svc in dependents and t >= firsts[origin])]
    tickets = []
    for hit in linked:
        if hit["id"].startswith("CS-"):
            body = _fields(read(episode, hit["id"]))
            tickets.append((datetime.strptime(body["Created"][:19], STAMP), hit["id"]))
    if report != "helpdesk":
        export = read(episode, next(h["id"] for h in linked if h["collection"] == "partner"))
        zone = timedelta(0) if report == "raw" else _offset(export[0])
        for row in export[1:]:
            number, stamp, link, _ = (part.strip() for part in row.split("|"))
            if link == f"linked: {incident}":
                tickets.append((datetime.strptime(stamp, STAMP) - zone, number))
    answer = (f"origin: {origin}; root_cause: {max(changes)[1] if changes else 'none'}; impact_start: "
              f"{firsts[edge].strftime(STAMP) if edge in firsts else 'none'} UTC; detected: "
              f"{min(ok).strftime(STAMP) if ok else 'none'} UTC; first_report: {min(tickets)[1]}")
    episode.act("submit", {"answer": answer})
    return episode.outcome(scale(DOSSIER))


def _below(services: dict, name: str) -> set[str]:
    """Everything a service depends on, directly or through others, among the services looked up."""
    found, queue = set(), [name]
    while queue:
        for dep in services[queue.pop()]["depends_on"]:
            if dep in services and dep not in found:
                found.add(dep)
                queue.append(dep)
    return found


def test_an_independent_dossier_solver_reaches_the_checked_fields():
    for seed in range(SEEDS):
        outcome = solve_dossier(task(DOSSIER, seed))
        assert outcome["success"], (seed, outcome["checks"])
        assert outcome["counts"]["tool_calls"] >= 40


DOSSIER_TRAPS = [({"clocks": "no_erratum"}, "impact_start"), ({"clocks": "old"}, "origin"),
                 ({"clocks": "zone"}, "origin"), ({"clocks": "raw"}, "impact_start"), ({"window": False}, "origin"),
                 ({"path": False}, "origin"), ({"cancelled": True}, "root_cause"), ({"any_time": True}, "root_cause"),
                 ({"detect": "any"}, "detected"), ({"detect": "no_start"}, "detected"),
                 ({"detect": "local"}, "detected"), ({"report": "raw"}, "first_report")]


def test_dossier_traps_bite():
    """Each trap fails its field's check on every seed; reading the helpdesk alone fails wherever the partner desk
    had the first report (about half the seeds)."""
    helpdesk_only = 0
    for seed in range(SEEDS):
        generated = task(DOSSIER, seed)
        for trap, field in DOSSIER_TRAPS:
            outcome = solve_dossier(generated, **trap)
            assert not outcome["checks"][field] and not outcome["success"], (seed, trap)
        helpdesk_only += not solve_dossier(generated, report="helpdesk")["success"]
    assert 0 < helpdesk_only < SEEDS


# ---------------------------------------------------------------- answers and hostile input


def test_budget_answers_are_read_leniently_but_exactly():
    generated = task(BUDGET, 0)
    world = research._budget_world(rng(BUDGET, 0))
    a, b, c = world.targets
    x, y, z = (world.truth[t] for t in world.targets)
    check = lambda text: research._check_budgets(world, text)  # noqa: E731
    assert all(check(f"{a}: EUR {x:,}; {b}: {y}; {c} (after corrections) = EUR {z / 1000:g}k").values())
    assert all(check(f"{a}: {x:,}\n{b}: EUR {y:,}.00\n{c}: EUR {z:,}").values())
    assert check(f"{a}: EUR {x + 500:,}; {b}: EUR {y:,}; {c}: EUR {z:,}") == {"centre_1": False, "centre_2": True,
                                                                           "centre_3": True}
    assert not any(check(f"The budgets are EUR {x:,}, EUR {y:,} and EUR {z:,}.").values())  # unlabelled
    assert not any(check("").values()) and not any(check(None).values())
    assert check(f"{a}: EUR 1; later corrected, {a}: EUR {x:,}; {b}: {y}; {c}: {z}")["centre_1"]
    assert generated.reference[-1].args["answer"].count(";") == 2


def test_dossier_answers_are_read_leniently_but_exactly():
    world = research._ops_world(rng(DOSSIER, 0))
    truth = world.truth
    base = {k: truth[k] for k in truth}
    check = lambda **changed: research._check_dossier(world, "; ".join(  # noqa: E731
        f"{k}: {v}" for k, v in {**base, **changed}.items()))
    assert all(check().values())
    clock = truth["impact_start"][11:]
    assert check(impact_start=f"{truth['impact_start'].replace(' ', 'T')}Z")["impact_start"]
    assert check(impact_start=f"{clock} UTC")["impact_start"]
    assert check(impact_start=f"14:59:59 local ({clock} UTC)")["impact_start"]
    assert not check(impact_start="2000-01-01 " + clock)["impact_start"]
    assert not check(origin=f"{world.dep}, not {truth['origin']}")["origin"]
    assert check(origin=f"{truth['origin']} (host {world.services[world.dep]['hosts'][0]})")["origin"]
    assert not check(root_cause=world.ids["cancelled"])["root_cause"]
    text = (f"Origin = {truth['origin']}\nRoot cause: {truth['root_cause'].lower()}\nImpact start: "
            f"{truth['impact_start']}\nDetected: {truth['detected']} UTC\nFirst report: {truth['first_report']}")
    assert all(research._check_dossier(world, text).values())
    assert not any(research._check_dossier(world, None).values())


HOSTILE = [("read_document", {"doc_id": "DOC-0000"}), ("read_document", {"doc_id": ""}),
           ("read_document", {"doc_id": "x" * 100_000}), ("read_document", {"doc_id": "../../etc"}),
           ("search", {"query": ""}), ("search", {"query": "   !!! ??? "}), ("search", {"query": "the of and"}),
           ("search", {"query": "9" * 5000}), ("search", {"query": "budget", "collection": "secrets"}),
           ("search", {"query": "budget", "page": 0}), ("search", {"query": "budget", "page": 10**9})]
INVALID = [("read_document", {"doc_id": 12345}), ("search", {"query": "x", "limit": 50}), ("search", {}),
           ("delete_document", {"doc_id": "DOC-1000"}), ("read_document", {"doc_id": "X", "page": "two"}),
           ("describe_api", {"topic": "secrets"})]
OPS_HOSTILE = [("get_service", {"name": "nope"}), ("get_service", {"name": ""}), ("list_services", {"page": 0}),
               ("query_logs", {"service": "nope"}), ("query_logs", {"service": "warehouse-db", "since": "yesterday"}),
               ("query_logs", {"service": "warehouse-db", "page": 99}),
               ("query_logs", {"service": "warehouse-db", "since": "2026-02-30 10:00:00"})]


@pytest.mark.parametrize("item_id", ITEMS)
def test_hostile_input_gives_tool_errors_never_a_crash(item_id):
    generated = task(item_id, 3)
    episode = Episode(generated, item_id)
    before = episode.env.snapshot()
    for name, arguments in HOSTILE + (OPS_HOSTILE if item_id == DOSSIER else []):
        text, error = episode.act(name, arguments)
        assert error and text.startswith("error: "), (name, arguments, text)
    for name, arguments in INVALID + ([("query_logs", {"service": "x", "level": "DEBUG"})] if item_id == DOSSIER
                                      else []):
        text, error = episode.act(name, arguments)
        assert error and text.startswith("invalid call"), (name, arguments, text)
    result = json.loads(episode.act("search", {"query": "zzzz unmatched qqqq"})[0])
    assert result["hits"] == [] and result["pages"] == 1
    doc_id = next(iter(episode.env.state["documents"]))
    result = json.loads(episode.act("read_document", {"doc_id": f"  {doc_id.lower()} "})[0])
    assert result["document"].startswith(f"{doc_id} (")
    assert episode.env.snapshot() == before
