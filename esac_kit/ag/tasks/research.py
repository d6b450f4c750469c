"""Information gathering: search and read a seeded document archive, resolve entities across documents past
drafts, corrections, near-duplicate names and distractors, and submit the exact values combined."""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from esac_kit.ag.answers import money, scaled_amounts
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

HITS_PER_QUERY = 6
SNIPPET_CHARS = 110
MAX_QUERY_CHARS = 200
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
STOPWORDS = frozenset("a an and are as at be by did do does for from has have how in is it its of on or that the "
                      "this to was were what when where which who why with".split())
FIRST_NAMES = ("Amara", "Bruno", "Chen", "Dana", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kavya", "Liam",
               "Marta", "Nadia", "Oskar", "Priya", "Rafael", "Sofia", "Tariq", "Ulla", "Viktor", "Wen", "Yara",
               "Zoltan", "Aoife", "Callum", "Dmitri", "Esme", "Femi", "Leona")
SURNAMES = ("Lindqvist", "Okafor", "Haddad", "Moreau", "Nakamura", "Brennan", "Castillo", "Delacroix", "Eriksen",
            "Fontaine", "Gallagher", "Horvath", "Iqbal", "Jansen", "Kowalski", "Laurent", "Mbeki", "Novak", "Ortega",
            "Petrov", "Quinn", "Rossi", "Sandoval", "Takahashi", "Umarov", "Varga", "Whitfield", "Yilmaz", "Zeller",
            "Achterberg")
CURRENCIES = ("$", "€", "£")


# ---------------------------------------------------------------------------------------------- the archive


class Archive(Environment):
    """A read-only document archive: keyword search with a few hits per query, and full reads by id."""

    def __init__(self, documents: dict[str, dict]):
        super().__init__()
        self.state = {"documents": copy.deepcopy(documents)}
        self._terms = {doc_id: (_terms(doc["title"]), _terms(doc["body"])) for doc_id, doc in documents.items()}

    @tool(f"Keyword search over the document archive (memos, reports, emails, wiki pages, work orders). Matches "
          f"documents containing any of the query's words (case-insensitive; ids such as INC-1234 count as "
          f"words); documents matching more of the words, or matching them in the title, rank first, then newer "
          f"ones. Returns at most {HITS_PER_QUERY} hits (id, kind, title, date, opening snippet) and the total "
          f"number of matching documents: if there are more matches than hits, use more specific words. "
          f"Snippets are not the full text: read a document to see its content and status.",
          {"query": {"type": "string", "description": "keywords, e.g. a name, an id or a topic"}})
    def search(self, query: str):
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"query too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
        wanted = _terms(query)
        if not wanted:
            raise ToolError("the query has no searchable words")
        scored = []
        for doc_id, (title_terms, body_terms) in self._terms.items():
            score = sum(3 if term in title_terms else 1 if term in body_terms else 0 for term in wanted)
            if score:
                scored.append((-score, _negated_date(self.state["documents"][doc_id]["date"]), doc_id))
        scored.sort()
        hits = []
        for _, _, doc_id in scored[:HITS_PER_QUERY]:
            doc = self.state["documents"][doc_id]
            hits.append({"id": doc_id, "kind": doc["kind"], "title": doc["title"], "date": doc["date"],
                         "snippet": _snippet(doc["body"])})
        return {"query": query, "total_matches": len(scored), "hits": hits}

    @tool("Read one document in full by its id (as returned by search, e.g. DOC-1234): kind, title, date, author, "
          "status (final or draft) and the whole text.",
          {"doc_id": {"type": "string", "description": "the document id, e.g. DOC-1234"}})
    def read_document(self, doc_id: str):
        key = doc_id.strip().upper()
        if key not in self.state["documents"]:
            raise ToolError(f"no document with id {doc_id[:40]!r}; ids look like DOC-1234 and come from search")
        return dict(self.state["documents"][key])


def _terms(text: str) -> set[str]:
    """The searchable words of a text: hyphenated tokens whole and in parts, lower case, crudely singular."""
    terms = set()
    for token in re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)*", text.lower()):
        for word in {token, *token.split("-")}:
            if len(word) >= 2 and word not in STOPWORDS:
                terms.add(_singular(word))
    return terms


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _negated_date(iso: str) -> int:
    return -dt.date.fromisoformat(iso).toordinal()


def _snippet(body: str) -> str:
    first = " ".join(body.split())
    return first if len(first) <= SNIPPET_CHARS else first[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"


# ------------------------------------------------------------------------------------------- building blocks


@dataclass
class Doc:
    """One archive document before it gets its id."""

    kind: str
    title: str
    date: dt.date
    author: str
    body: str
    status: str = "final"


def _file(rng: ItemRng, docs: dict[str, Doc]) -> tuple[dict[str, dict], dict[str, str]]:
    """Give every document a random id; return the archive (id -> record) and role -> id."""
    roles = list(docs)
    numbers = rng.sample(range(1000, 10000), len(roles))
    ids = {role: f"DOC-{number}" for role, number in zip(roles, numbers)}
    archive = {}
    for role in sorted(roles, key=lambda r: ids[r]):
        doc = docs[role]
        archive[ids[role]] = {"id": ids[role], "kind": doc.kind, "title": doc.title, "date": doc.date.isoformat(),
                              "author": doc.author, "status": doc.status, "body": doc.body}
    return archive, ids


def _filed_archive(rng: ItemRng, draw_facts: Callable, doc_groups: tuple[Callable, ...]
                   ) -> tuple[Any, dict[str, dict], dict[str, str]]:
    """Draw an instance's facts from its names, numbers and dates streams, write its documents group by group
    from them, and file them: returns the facts, the archive and role -> document id."""
    names, numbers, dates = rng.fork("names"), rng.fork("numbers"), rng.fork("dates")
    facts = draw_facts(names, numbers, dates)
    docs: dict[str, Doc] = {}
    for group in doc_groups:
        docs.update(group(facts, numbers, dates))
    archive, ids = _file(rng.fork("ids"), docs)
    return facts, archive, ids


def _day(d: dt.date) -> str:
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def _people(rng: ItemRng, n: int) -> list[str]:
    """n people with distinct first names and distinct surnames."""
    return [f"{f} {s}" for f, s in zip(rng.sample(FIRST_NAMES, n), rng.sample(SURNAMES, n))]


def _later(rng: ItemRng, d: dt.date, low: int, high: int) -> dt.date:
    return d + dt.timedelta(days=rng.randint(low, high))


# ------------------------------------------------------------------------------------------- answer parsing

def _labelled(answer: str, label: str, has_value: Callable[[str], bool]) -> str | None:
    """The text after the last `label:` that holds a value, up to the next `;` or line end; None if none does."""
    segments = [re.split(r"[;\n]", answer[m.end():], maxsplit=1)[0]
                for m in re.finditer(rf"\b{label}\s*[:=]", answer, re.IGNORECASE)]
    segments = [s for s in segments if has_value(s)]
    return segments[-1] if segments else None


def _first_name(text: str, names: list[str]) -> str | None:
    """The name of `names` mentioned first in the text (case and spacing ignored)."""
    flat = " ".join(text.lower().split())
    positions = []
    for name in names:
        match = re.search(rf"(?<!\w){re.escape(name.lower())}(?!\w)", flat)
        if match:
            positions.append((match.start(), name))
    return min(positions)[1] if positions else None


def name_matches(answer: str | None, label: str, truth: str, names: list[str]) -> bool:
    """The labelled name is `truth` (the first known name after `label:`); unlabelled, `truth` is the only one."""
    if not answer:
        return False
    segment = _labelled(answer, label, lambda s: _first_name(s, names) is not None)
    if segment is not None:
        return _first_name(segment, names) == truth
    mentioned = {n for n in names if _first_name(answer, [n])}
    return mentioned == {truth}


def amount_matches(answer: str | None, label: str, truth: int, traps: set[int]) -> bool:
    """The labelled figure is `truth` (the first after `label:`); unlabelled, `truth` appears and no trap does."""
    if not answer:
        return False
    segment = _labelled(answer, label, lambda s: bool(scaled_amounts(s)))
    if segment is not None:
        return abs(scaled_amounts(segment)[0] - truth) < 0.5
    values = scaled_amounts(answer)
    return any(abs(v - truth) < 0.5 for v in values) and not any(abs(v - t) < 0.5 for v in values for t in traps)


def _wasteful(reference: tuple[Call, ...], repeats: tuple[int, ...]) -> tuple[Call, ...]:
    """The reference with the calls at `repeats` issued a second time right after themselves."""
    calls = []
    for index, call in enumerate(reference):
        calls.append(call)
        if index in repeats:
            calls.append(Call(call.name, dict(call.args)))
    return tuple(calls)


# ------------------------------------------------------------------------------- task 1: the incident dossier

SITES = ("Harwick", "Dunmore", "Ellesby", "Corran", "Ashgrove", "Bramley", "Calder", "Fenmoor", "Glenrith", "Kelso",
         "Lowther", "Marsden", "Norbury", "Penrose", "Redmire", "Stanway", "Thornbury", "Wexcombe")
COMPONENTS = (("chilled-water pump controller", "cooling"), ("UPS battery module", "power"),
              ("static transfer switch", "power"), ("CRAC fan assembly", "cooling"),
              ("busway tap-off unit", "power"), ("core switch line card", "network"),
              ("generator fuel pump", "power"), ("humidifier control board", "cooling"))
SUPPLIER_FIRST = ("Kestrel", "Altmark", "Brightwater", "Corvane", "Delmont", "Eastgate", "Fenwick", "Granite",
                  "Halden", "Ironbridge", "Larchmont", "Meridian", "Northfield", "Pennant", "Quayside", "Redfern")
SUPPLIER_SECOND = ("Fluidics", "Hydraulics", "Power Systems", "Electrical", "Controls", "Components", "Technologies",
                   "Engineering", "Industrial", "Supply")
HALLS = ("Hall A", "Hall B", "Hall C", "Hall D", "Hall E")


@dataclass(frozen=True)
class OutageFacts:
    """What the dossier's documents are written from: the cast, the ids, the dates and the cost figures."""

    company: str
    site: str
    near_site: str
    other_sites: list[str]
    components: list[tuple[str, str]]
    supplier_old: str
    supplier_old_twin: str
    supplier_new: str
    supplier_new_twin: str
    supplier_x: str
    supplier_y: str
    suppliers: list[str]
    engineer: str
    finance: str
    reviewer: str
    technician: str
    planner: str
    analyst: str
    manager: str
    buyer: str
    symbol: str
    target: str
    near_target: str
    earlier: str
    filler_incidents: list[str]
    wo_target: str
    wo_suspect: str
    wo_others: list[str]
    part_target: str
    part_twin: str
    part_suspect: str
    other_parts: list[str]
    component: str
    system: str
    suspect_component: str
    hall: str
    suspect_hall: str
    outage: dt.date
    fitted: dt.date
    switch: dt.date
    notice_date: dt.date
    catalogue_date: dt.date
    suspect_fitted: dt.date
    review_date: dt.date
    cost_date: dt.date
    correction_date: dt.date
    draft_date: dt.date
    earlier_outage: dt.date
    revenue: int
    credits: int
    repair: int
    overtime: int
    corrected_credits: int
    initial: int
    corrected: int
    insured_net: int
    near_cost: int
    earlier_cost: int
    traps: set[int]
    supplier: str

    def cost_memo(self, incident: str, where: str, when: dt.date, total: int, lines: tuple[int, ...]) -> str:
        """Finance's cost memo of an outage, line by line."""
        symbol, finance = self.symbol, self.finance
        return (f"Finance estimate of the total cost of {incident}, the outage at the {where} facility on "
                f"{_day(when)}.\nLost revenue: {money(symbol, lines[0])}\nSLA credits: {money(symbol, lines[1])}\n"
                f"Emergency repair and parts: {money(symbol, lines[2])}\nStaff overtime: {money(symbol, lines[3])}\n"
                f"Total cost of the outage: {money(symbol, total)}\nQueries to {finance}.")


def _cost_lines(total: int) -> tuple[int, ...]:
    """An outage cost split into revenue, credits, repair and overtime lines."""
    a, b = total * 11 // 20 // 500 * 500, total * 5 // 20 // 500 * 500
    c = total * 3 // 20 // 500 * 500
    return a, b, c, total - a - b - c


def _outage_facts(names: ItemRng, numbers: ItemRng, dates: ItemRng) -> OutageFacts:
    """The outage's cast, ids, dates and costs, drawn from their own streams."""
    company = names.choice(("Norrland Data Services", "Blue Fjord Hosting", "Castlegate Cloud", "Veridian Colo"))
    sites = names.sample(SITES, 7)
    site, near_site, other_sites = sites[0], f"{sites[0]} North", sites[1:]
    components = names.sample(COMPONENTS, 7)
    firsts, seconds = names.sample(SUPPLIER_FIRST, 4), names.sample(SUPPLIER_SECOND, 8)
    supplier_old, supplier_old_twin = f"{firsts[0]} {seconds[0]}", f"{firsts[0]} {seconds[1]}"
    supplier_new, supplier_new_twin = f"{firsts[1]} {seconds[2]}", f"{firsts[1]} {seconds[3]}"
    supplier_x, supplier_y = f"{firsts[2]} {seconds[4]}", f"{firsts[3]} {seconds[5]}"
    suppliers = [supplier_old, supplier_old_twin, supplier_new, supplier_new_twin, supplier_x, supplier_y]
    staff = _people(names, 8)
    engineer, finance, reviewer, technician, planner, analyst, manager, buyer = staff
    symbol = numbers.choice(CURRENCIES)
    fitted_after_switch = numbers.randint(0, 1) == 1  # which way the sourcing-change trap bites

    incident_numbers = numbers.sample(range(2000, 9000, 2), 6)  # even, so the +1 look-alike is never taken
    target = f"INC-{incident_numbers[0]}"
    near_target = f"INC-{incident_numbers[0] + 1}"  # the same-day outage at the near-named site
    earlier, *filler_incidents = (f"INC-{n}" for n in incident_numbers[1:])
    wo_numbers = numbers.sample(range(41000, 69000, 7), 11)
    wo_target, wo_suspect = f"WO-{wo_numbers[0]}", f"WO-{wo_numbers[0] + 3}"
    wo_others = [f"WO-{n}" for n in wo_numbers[1:]]
    part_digits = numbers.sample(range(1100, 9900), 8)
    letters = numbers.sample("ABCDEFGHJK", 2)
    part_target, part_twin = f"PN-{part_digits[0]}-{letters[0]}", f"PN-{part_digits[0]}-{letters[1]}"
    part_suspect = f"PN-{part_digits[1]}-{numbers.choice('ABCDEFGHJK')}"
    other_parts = [f"PN-{d}-{numbers.choice('ABCDEFGHJK')}" for d in part_digits[2:]]

    component, system = components[0]
    suspect_component = components[1][0]
    hall, suspect_hall = names.sample(HALLS, 2)

    outage = dt.date(dates.randint(2023, 2026), dates.randint(3, 10), dates.randint(1, 28))
    fitted = outage - dt.timedelta(days=dates.randint(60, 200))
    switch = fitted - dt.timedelta(days=dates.randint(15, 50)) if fitted_after_switch else \
        fitted + dt.timedelta(days=dates.randint(15, 50))
    notice_date = switch - dt.timedelta(days=dates.randint(10, 30))
    catalogue_date = min(notice_date, fitted) - dt.timedelta(days=dates.randint(20, 80))
    suspect_fitted = outage - dt.timedelta(days=dates.randint(20, 50))
    review_date = _later(dates, outage, 6, 12)
    cost_date = _later(dates, review_date, 3, 10)
    correction_date = _later(dates, cost_date, 8, 20)
    draft_date = _later(dates, correction_date, 5, 15)
    earlier_outage = outage - dt.timedelta(days=dates.randint(90, 150))

    # The cost: four lines; the correction restates one line only, so the total must be recomputed.
    while True:
        revenue, credits = numbers.randint(160, 800) * 500, numbers.randint(40, 300) * 500
        repair, overtime = numbers.randint(20, 120) * 500, numbers.randint(6, 40) * 500
        corrected_credits = credits + numbers.choice((-1, 1)) * numbers.randint(10, 80) * 500
        initial = revenue + credits + repair + overtime
        corrected = initial - credits + corrected_credits
        insured_net = corrected - numbers.randint(40, 200) * 500
        near_cost, earlier_cost = numbers.randint(100, 900) * 500, numbers.randint(100, 900) * 500
        traps = {initial, insured_net, near_cost, earlier_cost, corrected_credits, credits}
        if corrected_credits > 0 and insured_net > 0 and corrected not in traps:
            break
    supplier = supplier_new if fitted_after_switch else supplier_old
    return OutageFacts(company=company, site=site, near_site=near_site, other_sites=other_sites,
                       components=components, supplier_old=supplier_old, supplier_old_twin=supplier_old_twin,
                       supplier_new=supplier_new, supplier_new_twin=supplier_new_twin, supplier_x=supplier_x,
                       supplier_y=supplier_y, suppliers=suppliers, engineer=engineer, finance=finance,
                       reviewer=reviewer, technician=technician, planner=planner, analyst=analyst, manager=manager,
                       buyer=buyer, symbol=symbol, target=target, near_target=near_target, earlier=earlier,
                       filler_incidents=filler_incidents, wo_target=wo_target, wo_suspect=wo_suspect,
                       wo_others=wo_others, part_target=part_target, part_twin=part_twin, part_suspect=part_suspect,
                       other_parts=other_parts, component=component, system=system,
                       suspect_component=suspect_component, hall=hall, suspect_hall=suspect_hall, outage=outage,
                       fitted=fitted, switch=switch, notice_date=notice_date, catalogue_date=catalogue_date,
                       suspect_fitted=suspect_fitted, review_date=review_date, cost_date=cost_date,
                       correction_date=correction_date, draft_date=draft_date, earlier_outage=earlier_outage,
                       revenue=revenue, credits=credits, repair=repair, overtime=overtime,
                       corrected_credits=corrected_credits, initial=initial, corrected=corrected,
                       insured_net=insured_net, near_cost=near_cost, earlier_cost=earlier_cost, traps=traps,
                       supplier=supplier)


def _root_cause_docs(f: OutageFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """The review, the notes and work orders around it, and the parts catalogue with its sourcing change."""
    site, other_sites, components, supplier_old = f.site, f.other_sites, f.components, f.supplier_old
    supplier_old_twin, supplier_new, supplier_new_twin = f.supplier_old_twin, f.supplier_new, f.supplier_new_twin
    supplier_x, supplier_y, engineer, reviewer = f.supplier_x, f.supplier_y, f.engineer, f.reviewer
    technician, buyer, target, wo_target, wo_suspect = f.technician, f.buyer, f.target, f.wo_target, f.wo_suspect
    part_target, part_twin, part_suspect, other_parts = f.part_target, f.part_twin, f.part_suspect, f.other_parts
    component, system, suspect_component, hall = f.component, f.system, f.suspect_component, f.hall
    suspect_hall, outage, fitted, switch, notice_date = f.suspect_hall, f.outage, f.fitted, f.switch, f.notice_date
    catalogue_date, suspect_fitted, review_date = f.catalogue_date, f.suspect_fitted, f.review_date
    return {
        "review": Doc("report", f"Post-incident review: {target}, {site} {system} outage", review_date, reviewer,
                      f"Final post-incident review of {target}, the {system} outage at the {site} facility on "
                      f"{_day(outage)}.\nImpact: {hall} lost {system} for {numbers.randint(35, 190)} minutes; "
                      f"{numbers.randint(12, 90)} customer racks were affected and failover did not complete.\n"
                      f"Root cause: the {component} serving {hall} failed under load. The failed unit is the one "
                      f"fitted under work order {wo_target}; it has been removed and sent for analysis.\n"
                      f"Actions: replace the failed unit, review spares stock, and ask finance for the cost of the "
                      f"outage."),
        "preliminary": Doc("report", f"Preliminary notes: {target}, {site} outage", outage, engineer,
                           f"Preliminary notes on {target} at {site}, written on the day while the review was "
                           f"open.\nWorking hypothesis: the {suspect_component} fitted under work order "
                           f"{wo_suspect} in {suspect_hall} tripped first and took {hall} with it. To be confirmed "
                           f"by the post-incident review.", status="draft"),
        "speculation": Doc("email", f"Re: {site} outage this morning", outage, engineer,
                           f"My money is on the {supplier_old_twin} {component} again - we had the same trouble at "
                           f"{other_sites[0]} last year. I will confirm once the review of {target} is done."),
        "work_order": Doc("work order", f"Work order {wo_target}: {component} replacement, {site}", fitted, technician,
                          f"Work order {wo_target} at the {site} facility, {hall}. Completed on {_day(fitted)}.\n"
                          f"Removed the old {component} and fitted a new unit, part number {part_target}, serial "
                          f"{numbers.choice('KMRTX')}{numbers.randint(100000, 999999)}. Commissioning tests passed. "
                          f"Technician: {technician}."),
        "suspect_work_order": Doc("work order", f"Work order {wo_suspect}: {suspect_component} service, {site}",
                                  suspect_fitted, technician,
                                  f"Work order {wo_suspect} at the {site} facility, {suspect_hall}. Completed on "
                                  f"{_day(suspect_fitted)}.\nServiced the {suspect_component} and fitted part "
                                  f"{part_suspect}.\nAddendum of {_day(_later(dates, outage, 1, 4))}: inspected "
                                  f"again after {target}; healthy, no fault found."),
        "catalogue": Doc("wiki", "Approved parts catalogue: critical facilities spares", catalogue_date, buyer,
                         f"Approved parts for critical facilities, last revised {_day(catalogue_date)}. One line per "
                         f"part: part number - description - approved supplier.\n" + "\n".join(
                             f"{p} - {d} - {s}" for p, d, s in [
                                 (part_target, component, supplier_old),
                                 (part_twin, f"{component}, high-capacity variant", supplier_old_twin),
                                 (part_suspect, suspect_component, supplier_x),
                                 (other_parts[0], components[2][0], supplier_new_twin),
                                 (other_parts[1], components[3][0], supplier_y),
                                 (other_parts[2], components[4][0], supplier_new),
                                 (other_parts[3], components[5][0], supplier_old_twin)])),
        "sourcing_notice": Doc("memo", f"Sourcing change for part {part_target}", notice_date, buyer,
                               f"From {_day(switch)} onward, new stock of {part_target} ({component}) is supplied by "
                               f"{supplier_new}, replacing {supplier_old}. Units fitted before {_day(switch)} came "
                               f"from {supplier_old} stock; units fitted on or after that date are {supplier_new} "
                               f"units. The parts catalogue will be updated at its next revision."),
    }


def _cost_docs(f: OutageFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """The cost memo, its correction and an insurance draft, and the costs of two look-alike outages."""
    site, near_site, components, supplier_y, finance = f.site, f.near_site, f.components, f.supplier_y, f.finance
    reviewer, analyst, symbol, target, near_target = f.reviewer, f.analyst, f.symbol, f.target, f.near_target
    earlier, wo_others, other_parts, outage, cost_date = f.earlier, f.wo_others, f.other_parts, f.outage, f.cost_date
    correction_date, draft_date, earlier_outage = f.correction_date, f.draft_date, f.earlier_outage
    revenue, credits, repair, overtime = f.revenue, f.credits, f.repair, f.overtime
    corrected_credits, initial, insured_net, near_cost = f.corrected_credits, f.initial, f.insured_net, f.near_cost
    earlier_cost = f.earlier_cost
    cost_title = f"Cost of the {site} outage ({target})"
    return {
        "cost": Doc("memo", cost_title, cost_date, finance,
                    f.cost_memo(target, site, outage, initial, (revenue, credits, repair, overtime))),
        "correction": Doc("memo", f"Correction: {target} cost memo", correction_date, finance,
                          f"Correction to the memo \"{cost_title}\" of {_day(cost_date)}: the SLA credits line should "
                          f"read {money(symbol, corrected_credits)}, not {money(symbol, credits)}; the credits for "
                          f"the affected racks were {'under' if corrected_credits > credits else 'over'}counted. "
                          f"All other lines stand."),
        "insurance_draft": Doc("memo", f"Revised cost of {target} including insurance recovery", draft_date, analyst,
                               f"DRAFT for discussion, not approved. If the insurer accepts our claim for {target}, "
                               f"the net cost of the {site} outage would fall to {money(symbol, insured_net)}. "
                               f"Do not quote until the claim is settled.", status="draft"),
        "near_review": Doc("report", f"Post-incident review: {near_target}, {near_site} {components[2][1]} outage",
                           _later(dates, outage, 5, 9), reviewer,
                           f"Final post-incident review of {near_target}, the {components[2][1]} outage at the "
                           f"{near_site} facility on {_day(outage)}.\nRoot cause: the {components[2][0]} fitted "
                           f"under work order {wo_others[0]} failed. Unrelated to {target} at {site}."),
        "near_cost": Doc("memo", f"Cost of the {near_site} outage ({near_target})", _later(dates, outage, 12, 20),
                         finance, f.cost_memo(near_target, near_site, outage, near_cost, _cost_lines(near_cost))),
        "earlier_review": Doc("report", f"Post-incident review: {earlier}, {site} {components[3][1]} outage",
                              _later(dates, earlier_outage, 5, 10), reviewer,
                              f"Final post-incident review of {earlier}, the {components[3][1]} outage at the "
                              f"{site} facility on {_day(earlier_outage)}.\nRoot cause: the {components[3][0]} "
                              f"fitted under work order {wo_others[1]} failed; part {other_parts[1]} from "
                              f"{supplier_y}."),
        "earlier_cost": Doc("memo", f"Cost of the {site} outage ({earlier})", _later(dates, earlier_outage, 12, 20),
                            finance,
                            f.cost_memo(earlier, site, earlier_outage, earlier_cost, _cost_lines(earlier_cost))),
    }


def _background_docs(f: OutageFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """How reviews work, the supplier scorecard, a newsletter and the meeting notes."""
    site, near_site, supplier_new, supplier_x = f.site, f.near_site, f.supplier_new, f.supplier_x
    suppliers, engineer, reviewer, planner, manager = f.suppliers, f.engineer, f.reviewer, f.planner, f.manager
    buyer, target, near_target, part_twin, system = f.buyer, f.target, f.near_target, f.part_twin, f.system
    outage, fitted, catalogue_date = f.outage, f.fitted, f.catalogue_date
    return {
        "process": Doc("wiki", "How post-incident reviews and outage costs work", catalogue_date, manager,
                       "Every outage gets an incident id (INC-nnnn). Engineers may keep preliminary notes on the "
                       "day; the final post-incident review, published about a week later, is the record of the "
                       "root cause. Finance then publishes the cost of the outage in a memo; if a line turns out "
                       "wrong, finance issues a correction memo for that line and the total changes accordingly. "
                       "Drafts carry no authority."),
        "scorecard": Doc("wiki", "Supplier scorecard", _later(dates, catalogue_date, 10, 40), buyer,
                         "Quarterly scorecard of facilities suppliers (on-time delivery, defect rate).\n" + "\n".join(
                             f"{s}: on-time {numbers.randint(81, 99)}%, defects {numbers.randint(1, 9)} per 1,000"
                             for s in suppliers)),
        "newsletter": Doc("memo", f"Facilities newsletter: {site} and {near_site} upgrades",
                          _later(dates, fitted, 3, 20), manager,
                          f"Both {site} and {near_site} finished their {system} upgrades this quarter. Thanks to "
                          f"{supplier_new} and {supplier_x} for quick deliveries. Outage drills resume next month."),
        "meeting": Doc("minutes", f"Reliability meeting after the {site} outage", _later(dates, outage, 2, 5), manager,
                       f"Attendees: {manager}, {reviewer}, {engineer}, {planner}. Discussed {target} and "
                       f"{near_target}. Agreed to wait for the final reviews before blaming any supplier. "
                       f"{planner} to check spares of {part_twin}."),
    }


def _routine_docs(f: OutageFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """Reviews and costs of unrelated outages, spares, visits, on-call notes and routine work orders."""
    site, near_site, other_sites, components = f.site, f.near_site, f.other_sites, f.components
    supplier_old_twin, supplier_new_twin, engineer = f.supplier_old_twin, f.supplier_new_twin, f.engineer
    finance, reviewer, technician, planner, analyst = f.finance, f.reviewer, f.technician, f.planner, f.analyst
    buyer, target, filler_incidents, wo_others = f.buyer, f.target, f.filler_incidents, f.wo_others
    part_target, part_twin, part_suspect, other_parts = f.part_target, f.part_twin, f.part_suspect, f.other_parts
    component, outage, catalogue_date = f.component, f.outage, f.catalogue_date
    docs: dict[str, Doc] = {}
    for index, incident in enumerate(filler_incidents):
        where, (part_name, kind) = other_sites[index + 1], components[index + 3]
        when = outage - dt.timedelta(days=dates.randint(30, 400))
        total = numbers.randint(100, 900) * 500
        docs[f"filler_review_{index}"] = Doc(
            "report", f"Post-incident review: {incident}, {where} {kind} outage", _later(dates, when, 5, 10),
            reviewer, f"Final post-incident review of {incident}, the {kind} outage at the {where} facility on "
                      f"{_day(when)}.\nRoot cause: the {part_name} fitted under work order {wo_others[index + 2]} "
                      f"failed.")
        docs[f"filler_cost_{index}"] = Doc("memo", f"Cost of the {where} outage ({incident})",
                                           _later(dates, when, 12, 20), finance,
                                           f.cost_memo(incident, where, when, total, _cost_lines(total)))
    docs["spares"] = Doc("report", "Spares stock report", _later(dates, outage, 1, 20), planner,
                         f"Spares held for critical facilities: {part_target} x{numbers.randint(0, 3)}, {part_twin} "
                         f"x{numbers.randint(1, 6)}, {part_suspect} x{numbers.randint(1, 6)}, {other_parts[0]} "
                         f"x{numbers.randint(1, 6)}. Reorder through purchasing; see the parts catalogue for "
                         f"approved suppliers.")
    docs["supplier_visit"] = Doc("memo", f"Quality visit to {supplier_old_twin}", _later(dates, catalogue_date, 5, 60),
                                 buyer, f"We visited {supplier_old_twin} to review the {component} production line. "
                                        f"No findings. Next visit: {supplier_new_twin}.")
    docs["on_call"] = Doc("email", "On-call handover notes", _later(dates, outage, 1, 3), engineer,
                          f"Quiet night apart from alarms at {near_site} and {other_sites[2]}. The {site} incident "
                          f"{target} is closed operationally; the review is with {reviewer}.")
    docs["claims"] = Doc("wiki", "Insurance claims for outages", catalogue_date, analyst,
                         "Outage losses above the deductible can be claimed from the insurer. Until a claim is "
                         "settled, finance reports outage costs gross of any recovery.")
    for index, number in enumerate(wo_others[6:]):
        where = other_sites[index]
        when = outage - dt.timedelta(days=dates.randint(10, 300))
        part, (part_name, _) = other_parts[index % 4], components[index % 4 + 2]
        docs[f"filler_work_order_{index}"] = Doc(
            "work order", f"Work order {number}: {part_name} inspection, {where}", when, technician,
            f"Work order {number} at the {where} facility. Inspected the {part_name}; fitted part {part}. No further "
            f"action.")

    return docs


@dataclass(frozen=True)
class DossierWorld:
    """The outage's facts, the filed archive with each document's id by role, and who asks."""

    facts: OutageFacts
    archive: dict[str, dict]
    ids: dict[str, str]
    requester: str


DOSSIER_CHECKS = (Check("supplier", "names the supplier of the failed unit (by its fitting date)"),
                  Check("cost", "gives the outage's total cost after the correction"))


def incident_dossier(rng: ItemRng) -> AgTask:
    """Which supplier's part caused a given outage, and the outage's cost after a line-item correction."""
    world = _dossier_world(rng)
    reference = _dossier_reference(world)
    return AgTask(prompt=_dossier_prompt(world), make_env=lambda: Archive(world.archive), checks=DOSSIER_CHECKS,
                  evaluate=lambda env, answer: _check_dossier(world.facts, answer), reference=reference,
                  wasteful=_wasteful(reference, (1, 4, 8)))


def _dossier_world(rng: ItemRng) -> DossierWorld:
    """The outage's facts and the archive of documents written from them."""
    facts, archive, ids = _filed_archive(rng, _outage_facts,
                                         (_root_cause_docs, _cost_docs, _background_docs, _routine_docs))
    return DossierWorld(facts, archive, ids, f"{rng.fork('prompt').choice(FIRST_NAMES)} from the reliability team")


def _dossier_prompt(world: DossierWorld) -> str:
    """The question about the outage and the answer's form."""
    f = world.facts
    return (f"{world.requester} at {f.company} asks for help. On {_day(f.outage)} the {f.site} facility suffered an "
            f"outage. Using the document archive (tools: search, read_document), find out which supplier "
            f"supplied the part whose failure caused that outage, and the total cost of that outage as it stands "
            f"after any corrections finance has issued. Check what you rely on: archives contain drafts, "
            f"superseded figures and look-alike names.\n"
            f"When you are done, call submit with the answer in the form "
            f"`supplier: <supplier name>; cost: <total cost in {f.symbol}>`.")


def _check_dossier(f: OutageFacts, answer: str | None) -> dict[str, bool]:
    """The dossier's checks on the answer."""
    return {"supplier": name_matches(answer, "supplier", f.supplier, f.suppliers),
            "cost": amount_matches(answer, "cost", f.corrected, f.traps)}


def _dossier_reference(world: DossierWorld) -> tuple[Call, ...]:
    """The efficient researcher: review, work order, catalogue and sourcing notice, then the cost and its correction."""
    f, ids = world.facts, world.ids
    answer = f"supplier: {f.supplier}; cost: {money(f.symbol, f.corrected)}"
    return (Call("search", {"query": f"{f.site} outage post-incident review"}),
            Call("read_document", {"doc_id": ids["review"]}),
            Call("search", {"query": f.wo_target}),
            Call("read_document", {"doc_id": ids["work_order"]}),
            Call("search", {"query": f.part_target}),
            Call("read_document", {"doc_id": ids["catalogue"]}),
            Call("read_document", {"doc_id": ids["sourcing_notice"]}),
            Call("search", {"query": f"{f.target} cost"}),
            Call("read_document", {"doc_id": ids["cost"]}),
            Call("read_document", {"doc_id": ids["correction"]}),
            Call("submit", {"answer": answer}))


# ------------------------------------------------------------------------------ task 2: the budget as of a date

PROGRAMMES = ("Larkspur", "Heron", "Kingfisher", "Bluebell", "Foxglove", "Osprey", "Marigold", "Sandpiper",
              "Juniper", "Wren", "Tamarisk", "Curlew", "Hawthorn", "Lapwing", "Saffron", "Merlin")
PURPOSES = ("customer data platform", "warehouse automation", "billing system replacement", "mobile app rebuild",
            "network refresh", "analytics migration", "payments modernisation", "field service tooling")
CUTOFFS = ((6, 30), (7, 31), (8, 31), (9, 30), (10, 31))
OWNER_STORIES = ("handed_over", "cancelled", "postponed")  # how the ownership change ends by the cutoff


@dataclass(frozen=True)
class BudgetFacts:
    """What the budget archive's documents are written from: programmes, people, dates and figures."""

    company: str
    main: str
    merged: str
    fillers: list[str]
    twin: str
    purposes: list[str]
    owner_first: str
    owner_second: str
    owner_third: str
    sponsor: str
    merged_owner: str
    cfo: str
    controller: str
    analyst: str
    filler_owners: list[str]
    twin_owner: str
    everyone: list[str]
    symbol: str
    increase_restated: bool
    owner_story: str
    year: int
    cutoff: dt.date
    charter_date: dt.date
    increase_memo: dt.date
    increase_effective: dt.date
    spend_report: dt.date
    correction_date: dt.date
    merged_cut_memo: dt.date
    merged_cut_effective: dt.date
    merge_memo: dt.date
    merge_effective: dt.date
    handover_memo: dt.date
    handover_effective: dt.date
    follow_up: dt.date
    next_handover: dt.date
    postponed_to: dt.date
    deferred_to: dt.date
    cut_memo: dt.date
    cut_effective: dt.date
    proposal_date: dt.date
    minutes_date: dt.date
    base: int
    increase: int
    restated: int
    merged_base: int
    merged_cut: int
    proposal: int
    cut: int
    twin_budget: int
    twin_increase: int
    budget: int
    traps: set[int]
    owner: str
    increase_title: str


def _budget_facts(names: ItemRng, numbers: ItemRng, dates: ItemRng) -> BudgetFacts:
    """The programmes, people, dates and budget figures, drawn from their own streams."""
    company = names.choice(("Arden & Vale", "Northwind Logistics", "Halcyon Retail", "Brookfield Mutual"))
    programmes = names.sample(PROGRAMMES, 6)
    main, merged, fillers = programmes[0], programmes[1], programmes[2:]
    twin = f"{main} Labs"  # a look-alike unit with its own budget
    purposes = names.sample(PURPOSES, 6)
    people = _people(names, 13)
    owner_first, owner_second, owner_third, sponsor, merged_owner, cfo, controller, analyst = people[:8]
    filler_owners = people[8:12]
    unused_first = [f for f in FIRST_NAMES if f not in {p.split()[0] for p in people}]
    twin_owner = f"{names.choice(unused_first)} {owner_second.split()[1]}"  # shares the incoming owner's surname
    everyone = [*people[:12], twin_owner]
    symbol = numbers.choice(CURRENCIES)
    increase_restated = numbers.randint(0, 1) == 1  # else the increase is pushed past the cutoff
    owner_story = numbers.choice(OWNER_STORIES)

    year = dates.randint(2023, 2026)
    cutoff = dt.date(year, *dates.choice(CUTOFFS))
    charter_date = dt.date(year, 1, dates.randint(5, 20))
    increase_memo = _later(dates, charter_date, 15, 30)
    increase_effective = _later(dates, increase_memo, 3, 10)
    spend_report = _later(dates, increase_effective, 5, 15)
    correction_date = _later(dates, spend_report, 5, 20)
    merged_cut_memo = _later(dates, charter_date, 10, 40)
    merged_cut_effective = _later(dates, merged_cut_memo, 1, 7)
    merge_memo = _later(dates, max(merged_cut_effective, increase_memo), 5, 20)
    merge_effective = _later(dates, merge_memo, 7, 20)
    handover_memo = _later(dates, charter_date, 40, 80)
    handover_effective = _later(dates, handover_memo, 14, 30)
    follow_up = _later(dates, handover_memo, 2, (handover_effective - handover_memo).days - 1) \
        if owner_story != "handed_over" else _later(dates, handover_effective, 5, 20)
    next_handover = _later(dates, cutoff, 10, 60)
    postponed_to = _later(dates, cutoff, 5, 45)
    deferred_to = _later(dates, cutoff, 5, 60)
    cut_memo = cutoff - dt.timedelta(days=dates.randint(5, 20))
    cut_effective = _later(dates, cutoff, 1, 31)
    proposal_date = _later(dates, charter_date, 30, 100)
    minutes_date = _later(dates, proposal_date, 3, 10)

    while True:
        base = numbers.randint(120, 480) * 10_000
        increase = numbers.randint(20, 120) * 5_000
        restated = increase + numbers.choice((-1, 1)) * numbers.randint(5, 30) * 5_000
        merged_base, merged_cut = numbers.randint(30, 150) * 10_000, numbers.randint(10, 60) * 5_000
        proposal, cut, twin_budget, twin_increase = (numbers.randint(20, 90) * 10_000, numbers.randint(10, 50) * 10_000,
                                                     numbers.randint(40, 200) * 10_000, numbers.randint(10, 60) * 5_000)
        applied_increase = restated if increase_restated else 0
        budget = base + applied_increase + merged_base - merged_cut
        # the figures an agent reaches by falling for one trap: stale, uncorrected, missed, post-cutoff, draft
        traps = {base, base + increase, base + increase + merged_base - merged_cut, budget + merged_cut,
                 base + applied_increase, budget - cut, budget + proposal, twin_budget + twin_increase}
        if restated > 0 and merged_base > merged_cut and budget not in traps:
            break
    owner = owner_second if owner_story == "handed_over" else owner_first
    increase_title = f"Budget increase for Project {main}"
    return BudgetFacts(company=company, main=main, merged=merged, fillers=fillers, twin=twin, purposes=purposes,
                       owner_first=owner_first, owner_second=owner_second, owner_third=owner_third, sponsor=sponsor,
                       merged_owner=merged_owner, cfo=cfo, controller=controller, analyst=analyst,
                       filler_owners=filler_owners, twin_owner=twin_owner, everyone=everyone, symbol=symbol,
                       increase_restated=increase_restated, owner_story=owner_story, year=year, cutoff=cutoff,
                       charter_date=charter_date, increase_memo=increase_memo, increase_effective=increase_effective,
                       spend_report=spend_report, correction_date=correction_date, merged_cut_memo=merged_cut_memo,
                       merged_cut_effective=merged_cut_effective, merge_memo=merge_memo,
                       merge_effective=merge_effective, handover_memo=handover_memo,
                       handover_effective=handover_effective, follow_up=follow_up, next_handover=next_handover,
                       postponed_to=postponed_to, deferred_to=deferred_to, cut_memo=cut_memo,
                       cut_effective=cut_effective, proposal_date=proposal_date, minutes_date=minutes_date,
                       base=base, increase=increase, restated=restated, merged_base=merged_base,
                       merged_cut=merged_cut, proposal=proposal, cut=cut, twin_budget=twin_budget,
                       twin_increase=twin_increase, budget=budget, traps=traps, owner=owner,
                       increase_title=increase_title)


def _follow_up_doc(f: BudgetFacts) -> Doc:
    """How the announced change of budget owner ends by the cutoff."""
    main, owner_first, owner_second, owner_third, cfo = f.main, f.owner_first, f.owner_second, f.owner_third, f.cfo
    owner_story, handover_memo, handover_effective = f.owner_story, f.handover_memo, f.handover_effective
    follow_up, next_handover, postponed_to = f.follow_up, f.next_handover, f.postponed_to
    if owner_story == "handed_over":
        return Doc("memo", f"Planned handover of Project {main}", follow_up, cfo,
                   f"{owner_third} will succeed {owner_second} as budget owner of Project {main}, "
                   f"effective {_day(next_handover)}. Until then {owner_second} remains budget owner.")
    elif owner_story == "cancelled":
        return Doc("memo", f"Handover of Project {main} cancelled", follow_up, cfo,
                   f"The handover of Project {main} announced on {_day(handover_memo)} will not go ahead. "
                   f"{owner_first} remains budget owner of Project {main}.")
    else:
        return Doc("memo", f"Change of handover date for Project {main}", follow_up, cfo,
                   f"The handover of Project {main} budget ownership from {owner_first} to {owner_second} "
                   f"moves from {_day(handover_effective)} to {_day(postponed_to)}. {owner_first} stays "
                   f"budget owner until then.")


def _correction_body(f: BudgetFacts) -> str:
    """The correction memo: the increase restated, or pushed past the cutoff."""
    symbol, increase_restated, increase_memo = f.symbol, f.increase_restated, f.increase_memo
    increase_effective, deferred_to, increase, restated = f.increase_effective, f.deferred_to, f.increase, f.restated
    increase_title = f.increase_title
    if increase_restated:
        return (f"The memo \"{increase_title}\" of {_day(increase_memo)} stated the increase as "
                f"{money(symbol, increase)}. The approved increase is {money(symbol, restated)}; the "
                f"effective date is unchanged.")
    else:
        return (f"The increase of {money(symbol, increase)} in the memo \"{increase_title}\" of "
                f"{_day(increase_memo)} was applied before the board had approved it. It is reversed "
                f"back to {_day(increase_effective)} and will now take effect on {_day(deferred_to)}, "
                f"after board approval.")


def _budget_change_docs(f: BudgetFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """The charter, the finance memos that change the budget and its owner, and drafts."""
    main, merged, purposes, owner_first, owner_second = f.main, f.merged, f.purposes, f.owner_first, f.owner_second
    sponsor, merged_owner, cfo, controller, analyst = f.sponsor, f.merged_owner, f.cfo, f.controller, f.analyst
    symbol, year, charter_date, increase_memo = f.symbol, f.year, f.charter_date, f.increase_memo
    increase_effective, spend_report, correction_date = f.increase_effective, f.spend_report, f.correction_date
    merged_cut_memo, merged_cut_effective, merge_memo = f.merged_cut_memo, f.merged_cut_effective, f.merge_memo
    merge_effective, handover_memo, handover_effective = f.merge_effective, f.handover_memo, f.handover_effective
    cut_memo, cut_effective, proposal_date = f.cut_memo, f.cut_effective, f.proposal_date
    minutes_date, base, increase, merged_base = f.minutes_date, f.base, f.increase, f.merged_base
    merged_cut, proposal, cut, increase_title = f.merged_cut, f.proposal, f.cut, f.increase_title
    return {
        "charter": Doc("wiki", f"Project {main} charter", charter_date, sponsor,
                       f"Project {main} delivers the {purposes[0]}. Sponsor: {sponsor}. Budget owner: {owner_first}. "
                       f"Approved budget for {year}: {money(symbol, base)}. Changes to the approved budget are made "
                       f"by finance memo and take effect on the stated effective date."),
        "increase": Doc("memo", increase_title, increase_memo, controller,
                        f"Finance has approved an increase of {money(symbol, increase)} to the {year} budget of "
                        f"Project {main}, effective {_day(increase_effective)}, to fund extra integration work."),
        "correction": Doc("memo", f"Correction: Project {main} budget increase", correction_date, controller,
                          _correction_body(f)),
        "spend": Doc("report", f"Project {main} spend report", spend_report, analyst,
                     f"Spend to date on Project {main}: {money(symbol, numbers.randint(30, 90) * 10_000)} against "
                     f"an approved budget of {money(symbol, base + increase)}. Forecast on track."),
        "merge": Doc("memo", f"Project {merged} to be folded into Project {main}", merge_memo, cfo,
                     f"Effective {_day(merge_effective)}, Project {merged} is folded into Project {main}. On that "
                     f"date the whole approved budget of Project {merged} moves to Project {main}, and "
                     f"{merged_owner} joins the {main} steering group."),
        "merged_charter": Doc("wiki", f"Project {merged} charter", dt.date(year, 1, dates.randint(3, 28)), sponsor,
                              f"Project {merged} delivers the {purposes[1]}. Budget owner: {merged_owner}. Approved "
                              f"budget for {year}: {money(symbol, merged_base)}."),
        "merged_cut": Doc("memo", f"Project {merged} budget reduction", merged_cut_memo, controller,
                          f"Effective {_day(merged_cut_effective)}, the approved budget of Project {merged} is reduced "
                          f"by {money(symbol, merged_cut)} after part of its scope was dropped."),
        "proposal": Doc("memo", f"Proposal: further funding for Project {main}", proposal_date, owner_first,
                        f"DRAFT proposal for the steering committee, not approved. Request an increase of "
                        f"{money(symbol, proposal)} to the budget of Project {main} for a second data centre "
                        f"region.", status="draft"),
        "minutes": Doc("minutes", "Steering committee minutes", minutes_date, analyst,
                       f"Present: {cfo}, {sponsor}, {owner_first}. The proposal for further funding for Project "
                       f"{main} was discussed; no decision, to be revisited next quarter."),
        "cut": Doc("memo", f"Project {main} budget reduction", cut_memo, controller,
                   f"Effective {_day(cut_effective)}, the approved budget of Project {main} is reduced by "
                   f"{money(symbol, cut)} as part of the second-half savings plan."),
        "handover": Doc("memo", f"New budget owner for Project {main}", handover_memo, cfo,
                        f"{owner_second} takes over from {owner_first} as budget owner of Project {main}, effective "
                        f"{_day(handover_effective)}."),
        "follow_up": _follow_up_doc(f),
    }


def _look_alike_docs(f: BudgetFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """The look-alike unit's budget, a facilities budget of a similar name, the policy and notes."""
    main, merged, fillers, twin, owner_first, sponsor = f.main, f.merged, f.fillers, f.twin, f.owner_first, f.sponsor
    cfo, controller, analyst, twin_owner, symbol = f.cfo, f.controller, f.analyst, f.twin_owner, f.symbol
    year, charter_date, increase_memo, twin_budget = f.year, f.charter_date, f.increase_memo, f.twin_budget
    twin_increase = f.twin_increase
    return {
        "twin_charter": Doc("wiki", f"{twin} charter", charter_date + dt.timedelta(days=3), sponsor,
                            f"{twin} is the research unit attached to Project {main}. Budget owner: {twin_owner}. "
                            f"Approved budget for {year}: {money(symbol, twin_budget)}."),
        "twin_increase": Doc("memo", f"Budget increase for {twin}", _later(dates, increase_memo, 5, 40), controller,
                             f"Finance has approved an increase of {money(symbol, twin_increase)} to the {year} "
                             f"budget of {twin}, effective immediately."),
        "look_alike": Doc("memo", f"{merged} Point refurbishment budget", _later(dates, charter_date, 20, 90),
                          controller,
                          f"The {merged} Point office refurbishment has an approved budget of "
                          f"{money(symbol, numbers.randint(20, 90) * 10_000)}; it is a facilities budget, not a "
                          f"project."),
        "policy": Doc("wiki", "How programme budgets change", dt.date(year - 1, 11, dates.randint(1, 28)), cfo,
                      "A programme's approved budget is set by its charter and changed only by finance memos. A "
                      "change counts from its effective date, not from the day it is announced. Proposals and "
                      "drafts change nothing until approved. A correction memo replaces the figure or date it "
                      "corrects."),
        "all_hands": Doc("minutes", "All-hands notes", _later(dates, charter_date, 60, 120), analyst,
                         f"Updates from Project {main}, Project {fillers[0]} and {twin}. {owner_first} thanked the "
                         f"teams; budgets are on track."),
    }


def _filler_budget_docs(f: BudgetFacts, numbers: ItemRng, dates: ItemRng) -> dict[str, Doc]:
    """Other programmes' charters, changes, spend and status, and the quarterly review."""
    main, fillers, twin, purposes, sponsor, cfo = f.main, f.fillers, f.twin, f.purposes, f.sponsor, f.cfo
    controller, analyst, filler_owners, symbol, year = f.controller, f.analyst, f.filler_owners, f.symbol, f.year
    charter_date = f.charter_date
    docs: dict[str, Doc] = {}
    for index, name in enumerate(fillers):
        filler_base = numbers.randint(50, 400) * 10_000
        docs[f"filler_charter_{index}"] = Doc(
            "wiki", f"Project {name} charter", dt.date(year, 1, dates.randint(3, 28)), sponsor,
            f"Project {name} delivers the {purposes[index + 2]}. Budget owner: {filler_owners[index]}. Approved "
            f"budget for {year}: {money(symbol, filler_base)}.")
        direction = numbers.choice(("increase", "reduction"))
        docs[f"filler_change_{index}"] = Doc(
            "memo", f"Budget {direction} for Project {name}", _later(dates, charter_date, 20, 150), controller,
            f"Effective {_day(_later(dates, charter_date, 25, 160))}, the approved budget of Project {name} "
            f"{'rises' if direction == 'increase' else 'falls'} by {money(symbol, numbers.randint(5, 40) * 5_000)}.")
        docs[f"filler_spend_{index}"] = Doc(
            "report", f"Project {name} spend report", _later(dates, charter_date, 60, 150), analyst,
            f"Spend to date on Project {name}: {money(symbol, numbers.randint(5, 30) * 10_000)}. Forecast on track.")
        docs[f"filler_notice_{index}"] = Doc(
            "email", f"Project {name} status", _later(dates, charter_date, 30, 160), filler_owners[index],
            f"Quick status for Project {name}: milestones on track, no budget change requested this month.")

    docs["finance_review"] = Doc("minutes", "Quarterly finance review", _later(dates, charter_date, 70, 110), cfo,
                                 f"Programmes reviewed: {', '.join(f'Project {n}' for n in [main, *fillers])} and "
                                 f"{twin}. No overspend. Budget owners to confirm forecasts by the end of the "
                                 f"quarter.")
    return docs


@dataclass(frozen=True)
class BudgetWorld:
    """The programme's facts, the filed archive with each document's id by role, and the request number."""

    facts: BudgetFacts
    archive: dict[str, dict]
    ids: dict[str, str]
    request: str


def budget_as_of(rng: ItemRng) -> AgTask:
    """A programme's approved budget and budget owner on a date, from a chain of dated finance announcements."""
    world = _budget_world(rng)
    reference = _budget_reference(world)
    main = world.facts.main
    checks = (Check("budget", f"gives Project {main}'s approved budget on the date"),
              Check("owner", f"names Project {main}'s budget owner on the date"))
    return AgTask(prompt=_budget_prompt(world), make_env=lambda: Archive(world.archive), checks=checks,
                  evaluate=lambda env, answer: _check_budget(world.facts, answer), reference=reference,
                  wasteful=_wasteful(reference, (0, 2, 7)))


def _budget_world(rng: ItemRng) -> BudgetWorld:
    """The programme's facts and the archive of documents written from them."""
    facts, archive, ids = _filed_archive(rng, _budget_facts,
                                         (_budget_change_docs, _look_alike_docs, _filler_budget_docs))
    return BudgetWorld(facts, archive, ids, f"FIN-{rng.fork('prompt').randint(1000, 9999)}")


def _budget_prompt(world: BudgetWorld) -> str:
    """The finance request and the answer's form."""
    f = world.facts
    return (f"Finance request {world.request} at {f.company}. Using the document archive (tools: search, "
            f"read_document), find the approved budget of Project {f.main} as it stood at close of business on "
            f"{_day(f.cutoff)}, and the name of the person who was its budget owner on that date. Budget changes "
            f"count from their effective dates; the archive holds drafts, corrections and look-alike names, so "
            f"check what you rely on.\n"
            f"When you are done, call submit with the answer in the form "
            f"`budget: <amount in {f.symbol}>; owner: <full name>`.")


def _check_budget(f: BudgetFacts, answer: str | None) -> dict[str, bool]:
    """The budget checks on the answer."""
    return {"budget": amount_matches(answer, "budget", f.budget, f.traps),
            "owner": name_matches(answer, "owner", f.owner, f.everyone)}


def _budget_reference(world: BudgetWorld) -> tuple[Call, ...]:
    """The efficient researcher: the budget memos, the ownership chain, then the merged programme's budget."""
    f, ids = world.facts, world.ids
    answer = f"budget: {money(f.symbol, f.budget)}; owner: {f.owner}"
    return (Call("search", {"query": f"Project {f.main} budget"}),
            Call("read_document", {"doc_id": ids["increase"]}),
            Call("read_document", {"doc_id": ids["correction"]}),
            Call("read_document", {"doc_id": ids["cut"]}),
            Call("search", {"query": f"Project {f.main} {f.merged} owner"}),
            Call("read_document", {"doc_id": ids["charter"]}),
            Call("read_document", {"doc_id": ids["merge"]}),
            Call("read_document", {"doc_id": ids["handover"]}),
            Call("read_document", {"doc_id": ids["follow_up"]}),
            Call("search", {"query": f"Project {f.merged} budget"}),
            Call("read_document", {"doc_id": ids["merged_charter"]}),
            Call("read_document", {"doc_id": ids["merged_cut"]}),
            Call("submit", {"answer": answer}))
