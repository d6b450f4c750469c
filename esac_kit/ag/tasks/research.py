"""Information gathering (ESAC-AG 2.0): long research over seeded document stores whose facts are found only by
exploring (search returns snippets, documents are paged, records name each other by id), with superseded versions,
later corrections and "as of" rules stated in the store's own documentation, ending in an answer whose exact fields
the checks compare with the generator's own evaluation; a partial answer fails.

* research-budget-as-of: the budgets of three cost centres at close of business on a date, from a budget book with
  superseded and draft versions, amendments and transfers that count only when approved as of that date (approval
  records in another collection: rejections and re-submissions, rescissions, approvals that came too late),
  reversals that are themselves reversed, and corrections that replace a record's amount or effective date.
* research-incident-dossier: an incident's origin service, root-cause change, impact start, detection time and
  first customer report, reconstructed from host logs written in local time with clock errors (a runbook with a
  superseded revision and an erratum), change records, a war-room chat export in its exporter's zone, helpdesk
  tickets and a partner desk export, past a correlated but non-causal alert, an alert that flapped before the
  incident and a dependency whose errors look first until the clocks are corrected.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from esac_kit.ag.answers import distinct_ints, money, scaled_amounts
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

PAGE_HITS = 5
PAGE_LINES = 8
SNIPPET_CHARS = 56
MAX_QUERY_CHARS = 200
STOPWORDS = frozenset("a an and are as at be by did do does for from has have how in is it its of on or that the "
                      "this to was were what when where which who why with".split())
FIRST_NAMES = ("Amara", "Bruno", "Chen", "Dana", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kavya", "Liam",
               "Marta", "Nadia", "Oskar", "Priya", "Rafael", "Sofia", "Tariq", "Ulla", "Viktor", "Wen", "Yara",
               "Zoltan", "Aoife", "Callum", "Dmitri", "Esme", "Femi", "Leona")
SURNAMES = ("Lindqvist", "Okafor", "Haddad", "Moreau", "Nakamura", "Brennan", "Castillo", "Delacroix", "Eriksen",
            "Fontaine", "Gallagher", "Horvath", "Iqbal", "Jansen", "Kowalski", "Laurent", "Mbeki", "Novak", "Ortega",
            "Petrov", "Quinn", "Rossi", "Sandoval", "Takahashi", "Umarov", "Varga", "Whitfield", "Yilmaz", "Zeller",
            "Achterberg")
_TOKEN = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*")


# ---------------------------------------------------------------------------------------------- the store


def _singular(word: str) -> str:
    if not word.isalpha():
        return word
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _doc_words(text: str) -> set[str]:
    """A document's searchable words: every token whole and, for ids and host names, in its parts."""
    words = set()
    for token in _TOKEN.findall(text.lower()):
        for word in {token, *re.split(r"[-_.]", token)}:
            if word and word not in STOPWORDS:
                words.add(_singular(word))
    return words


def _query_words(text: str) -> list[str]:
    """A query's words: whole tokens (an id such as AMD-1234 is one word), stopwords dropped."""
    return list(dict.fromkeys(_singular(t) for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS))


def _page_of(rows: list[Any], page: int, size: int) -> tuple[list[Any], int]:
    pages = max(1, -(-len(rows) // size))
    if not 1 <= page <= pages:
        raise ToolError(f"page must be between 1 and {pages}")
    return rows[(page - 1) * size:page * size], pages


class DocStore(Environment):
    """A read-only document store: every-word search with paged snippet hits, and paged reads by id.

    A document is {id, collection, title, date, lines}; hits come oldest first (date, then id)."""

    def __init__(self, documents: dict[str, dict], api_docs: dict[str, str], extra: dict[str, Any] | None = None):
        super().__init__()
        self.state = {"documents": copy.deepcopy(documents), **copy.deepcopy(extra or {})}
        self._api = api_docs
        self._words = {i: _doc_words(d["title"] + "\n" + "\n".join(d["lines"])) for i, d in documents.items()}
        self._order = sorted(documents, key=lambda i: (documents[i]["date"], i))
        self._collections = sorted({d["collection"] for d in documents.values()})

    def _describe(self, topic: str) -> Any:
        if topic not in self._api:
            raise ToolError(f"no topic {topic[:40]!r}; topics: {', '.join(self._api)}")
        return {"topic": topic, "text": self._api[topic]}

    @tool("Search the document store: the documents containing every word of the query, oldest first, one page of "
          "hits at a time, each as 'id (collection, date) title — opening of the text'.",
          {"query": {"type": "string", "description": "words or ids, e.g. CC-214 or AMD-4821"},
           "collection": {"type": "string", "description": "limit to one collection; empty for all"},
           "page": {"type": "integer", "description": "page of hits, from 1"}}, required=["query"])
    def search(self, query: str, collection: str = "", page: int = 1) -> Any:
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError(f"query too long ({len(query)} characters; at most {MAX_QUERY_CHARS})")
        words = _query_words(query)
        if not words:
            raise ToolError("the query has no searchable words")
        wanted = collection.strip().lower()
        if wanted and wanted not in self._collections:
            raise ToolError(f"no collection {collection[:40]!r}; collections: {', '.join(self._collections)}")
        docs = self.state["documents"]
        found = [i for i in self._order if (not wanted or docs[i]["collection"] == wanted)
                 and all(w in self._words[i] for w in words)]
        rows, pages = _page_of(found, page, PAGE_HITS)
        hits = [f"{i} ({docs[i]['collection']}, {docs[i]['date']}) {docs[i]['title']} — {_snippet(docs[i]['lines'])}"
                for i in rows]
        return {"query": query, "collection": wanted or "all", "page": page, "pages": pages, "matches": len(found),
                "hits": hits}

    @tool(f"Read one page of a document by its id: 'id (collection, date) title' and up to {PAGE_LINES} lines of "
          f"its text, with the number of pages.",
          {"doc_id": {"type": "string", "description": "a document id as search returns it"},
           "page": {"type": "integer", "description": "page of the document, from 1"}}, required=["doc_id"])
    def read_document(self, doc_id: str, page: int = 1) -> Any:
        key = doc_id.strip().upper()
        doc = self.state["documents"].get(key)
        if doc is None:
            raise ToolError(f"no document {doc_id[:40]!r}; ids come from search")
        lines, pages = _page_of(doc["lines"], page, PAGE_LINES)
        return {"document": f"{key} ({doc['collection']}, {doc['date']}) {doc['title']}", "page": page,
                "pages": pages, "lines": lines}


def _snippet(lines: list[str]) -> str:
    text = " | ".join(lines)
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " ..."


def _doc(doc_id: str, collection: str, title: str, day: date, lines: list[str]) -> dict[str, Any]:
    return {"id": doc_id, "collection": collection, "title": title, "date": day.isoformat(), "lines": lines}


def _people(rng: ItemRng, n: int) -> list[str]:
    """n people with distinct first names and distinct surnames."""
    return [f"{f} {s}" for f, s in zip(rng.sample(FIRST_NAMES, n), rng.sample(SURNAMES, n))]


def _all_pages(store: DocStore, calls: list[Call], query: str, collection: str = "") -> list[dict]:
    """The reference's search: every page of hits, each page one call."""
    hits, page, pages = [], 1, 1
    while page <= pages:
        args: dict[str, Any] = {"query": query, **({"collection": collection} if collection else {})}
        if page > 1:
            args["page"] = page
        calls.append(Call("search", args))
        result = store.search(query, collection, page)
        hits += [_hit(h) for h in result["hits"]]
        pages = result["pages"]
        page += 1
    return hits


def _hit(text: str) -> dict[str, str]:
    """A search hit's fields, for the reference's own bookkeeping."""
    head, _ = text.split(" — ", 1)
    doc_id, collection, day = re.match(r"(\S+) \((\w+), (\S+)\)", head).groups()
    return {"id": doc_id, "collection": collection, "date": day}


def _read_all(store: DocStore, calls: list[Call], doc_id: str) -> list[str]:
    """The reference's read: every page of a document, each page one call."""
    lines, page, pages = [], 1, 1
    while page <= pages:
        calls.append(Call("read_document", {"doc_id": doc_id} if page == 1 else {"doc_id": doc_id, "page": page}))
        result = store.read_document(doc_id, page)
        lines += result["lines"]
        pages = result["pages"]
        page += 1
    return lines


def _wasteful(reference: tuple[Call, ...], repeats: tuple[int, ...]) -> tuple[Call, ...]:
    """The reference with the calls at `repeats` issued a second time right after themselves."""
    calls = []
    for index, call in enumerate(reference):
        calls.append(call)
        if index in repeats:
            calls.append(Call(call.name, dict(call.args)))
    return tuple(calls)


def _segments(answer: str, label: str) -> list[str]:
    """The text after each match of the regex `label` (then an optional parenthesis, then : or =) up to the next
    `;` or line end."""
    return [re.split(r"[;\n]", answer[m.end():], maxsplit=1)[0]
            for m in re.finditer(rf"(?<![\w-]){label}\s*(?:\([^)]*\))?\s*[:=]", answer, re.IGNORECASE)]


# ------------------------------------------------------------------------------- task 1: budgets as of a date

CENTRE_NAMES = ("Field Operations", "Customer Care", "Data Platform", "Facilities", "Legal Affairs", "Marketing",
                "Procurement", "Research", "Security", "Training", "Logistics", "Quality Assurance", "Treasury",
                "Fleet", "Payroll", "Internal Audit")
FIN_COMPANIES = ("Norrland Data Services", "Blue Fjord Hosting", "Castlegate Cloud", "Veridian Colo",
                 "Harrow & Vale Logistics", "Tamsin Biotech")
CURRENCIES = ("USD", "EUR", "GBP", "CHF")
CONTROLLER_LIMITS = (20_000, 45_000, 30_000)  # the first controller's limit before and after its raise; the other's
DIRECTOR_LIMIT = 100_000
REASONS = ("extra contractor hours", "a delayed supplier invoice", "scope added by the steering group",
           "a hiring freeze", "lower travel spend", "new licence costs", "a revised headcount plan",
           "the consolidated training calendar", "equipment brought forward", "a vendor rebate",
           "a duplicated purchase order", "the office move")
N_CENTRES = 12
BUDGET_API = {
    "store": (
        "search(query, collection, page) finds the documents containing every word of the query (title or text, "
        "any case; an id such as CC-214 or AMD-4821 is one word), oldest first, "
        f"{PAGE_HITS} to a page, each as 'id (collection, date) title — opening of the text'; read_document"
        f"(doc_id, page) shows {PAGE_LINES} lines a page. Collections. budget: the fiscal year's budget book, one "
        "document per version, whose status line says whether and when the finance committee adopted it. changes: "
        "amendments (AMD-, an increase or decrease of one cost centre), transfers (TRF-, an amount moved from one "
        "cost centre to another), reversals (REV-, cancel the record they name) and corrections (COR-, replace one "
        "field of the record they name). approvals: decisions on amendments, transfers and reversals (APR-: "
        "approved, rejected, or rescinded, which withdraws an earlier approval; the document's date is the "
        "decision's) and the approval limits register. memos: reports and e-mails. Reversals, corrections and "
        "approvals name the record they act on by its id only, not its cost centre."),
    "rules": (
        "The budget of a cost centre at close of business on a date D. (1) Opening budget: its figure in the budget "
        "book version in force on D, the adopted version with the latest adoption date on or before D (drafts never "
        "count; each version lists every cost centre in full). (2) An amendment, transfer or reversal counts on D "
        "only if its effective date is on or before D and it is approved on D: ignoring approvals beyond their "
        "reviewer's limit, the latest decision on it dated on or before D is 'approved'. An approval of an "
        "amendment or transfer is within the limit when the record's amount (after corrections) is at most its "
        "reviewer's limit on the decision date, per the approval limits register (approvals collection); "
        "reversals, rejections and rescissions have no limit. (3) A counted amendment adds its increase or "
        "subtracts its decrease; a counted transfer moves its amount from the source to the destination. (4) A "
        "counted reversal cancels the record it names; a reversal cancelled by another counted reversal cancels "
        "nothing. (5) A correction replaces the field it names (amount or effective date) of the record it "
        "corrects from the start, whatever its own date; of several corrections of one field, the latest-dated "
        "applies. Corrections need no approval. (6) Memos, reports and e-mails never change a budget."),
}


class BudgetStore(DocStore):
    """The finance document store: budget book versions, change records, approvals and memos."""

    @tool("Documentation of the finance document store. Topics: 'store' (search, reading, the collections and "
          "record types), 'rules' (which records count on a date).",
          {"topic": {"type": "string", "enum": list(BUDGET_API)}})
    def describe_api(self, topic: str) -> Any:
        return self._describe(topic)


@dataclass
class Change:
    """An amendment (AMD), transfer (TRF) or reversal (REV) as filed."""

    id: str
    kind: str
    filed: date
    effective: date
    filer: str
    reason: str
    amount: int = 0  # AMD: the signed change; TRF: the amount moved
    centre: str = ""  # AMD
    source: str = ""  # TRF
    dest: str = ""  # TRF
    reverses: str = ""  # REV


@dataclass
class Correction:
    id: str
    target: str
    field: str  # amount | effective
    value: Any
    filed: date
    filer: str


@dataclass
class Decision:
    id: str
    request: str
    decision: str  # approved | rejected | rescinded
    decided: date
    reviewer: str


@dataclass
class Ledger:
    """The records of one instance as the generator draws them, and the roles the traps play."""

    rng: ItemRng
    as_of: date
    people: list[str]
    numbers: list[int]
    raise_day: date
    changes: dict[str, Change] = field(default_factory=dict)
    corrections: list[Correction] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def reviewers(self) -> list[str]:
        """Two budget controllers and the finance director."""
        return self.people[4:7]

    def limit(self, reviewer: str, day: date) -> int:
        """A reviewer's approval limit on a day, as the register states it."""
        first, second, director = self.reviewers
        if reviewer == first:
            return CONTROLLER_LIMITS[1] if day >= self.raise_day else CONTROLLER_LIMITS[0]
        return CONTROLLER_LIMITS[2] if reviewer == second else DIRECTOR_LIMIT

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{self.numbers.pop()}"

    def days(self, low: int, high: int) -> timedelta:
        return timedelta(days=self.rng.randint(low, high))

    def early(self, margin: int = 100) -> date:
        """A filing date between February and `margin` days before the as-of date."""
        start = date(self.as_of.year, 2, 1)
        return start + timedelta(days=self.rng.randint(0, (self.as_of - start).days - margin))

    def amount(self) -> int:
        return self.rng.randint(6, 120) * 500

    def _add(self, kind: str, filed: date, effective: date, **fields: Any) -> Change:
        record = Change(self.new_id(kind), kind, filed, effective, self.rng.choice(self.people[:4]),
                        self.rng.choice(REASONS), **fields)
        self.changes[record.id] = record
        return record

    def amend(self, centre: str, filed: date, effective: date, size: int | None = None) -> Change:
        sign = 1 if self.rng.randint(0, 99) < 65 else -1
        return self._add("AMD", filed, effective, amount=sign * (size or self.amount()), centre=centre)

    def transfer(self, source: str, dest: str, filed: date, effective: date) -> Change:
        return self._add("TRF", filed, effective, amount=self.amount(), source=source, dest=dest)

    def reverse(self, target: Change, filed: date, effective: date) -> Change:
        return self._add("REV", filed, effective, reverses=target.id)

    def decide(self, record: Change, decision: str, decided: date, reviewer: str | None = None) -> date:
        self.decisions.append(Decision(self.new_id("APR"), record.id, decision, decided,
                                       reviewer or self.rng.choice(self.reviewers)))
        return decided

    def approve_on(self, record: Change, decided: date, within: bool = True, sizes: tuple[int, ...] = ()) -> date:
        """An approval on a day by a reviewer whose limit covers (or, with `within` false, falls short of) the
        largest of `sizes` (default: the record's amount) and covers every other; reversals by anyone."""
        if record.kind == "REV":
            return self.decide(record, "approved", decided)
        sizes = sizes or (abs(record.amount),)
        fits = [r for r in self.reviewers if min(sizes) <= self.limit(r, decided) and
                (self.limit(r, decided) >= max(sizes)) == within]
        return self.decide(record, "approved", decided, self.rng.choice(fits))

    def correct(self, record: Change, name: str, value: Any, filed: date) -> None:
        self.corrections.append(Correction(self.new_id("COR"), record.id, name, value, filed,
                                           self.rng.choice(self.people[4:7])))

    def approved(self, record: Change, low: int = 2, high: int = 10) -> date:
        return self.approve_on(record, record.filed + self.days(low, high))


def _value(ledger: Ledger, record: Change, name: str) -> Any:
    """A record's field after corrections: the latest-dated correction of that field, else the filed value."""
    fixes = sorted((c for c in ledger.corrections if c.target == record.id and c.field == name), key=lambda c: c.filed)
    return fixes[-1].value if fixes else getattr(record, name)


def _counts(ledger: Ledger, record_id: str, day: date) -> bool:
    """Whether a record counts at close of business on `day` (the store's rules 2 and 4)."""
    record = ledger.changes[record_id]
    if _value(ledger, record, "effective") > day:
        return False
    decided = sorted((d for d in ledger.decisions if d.request == record_id and d.decided <= day
                      and _within(ledger, record, d)), key=lambda d: d.decided)
    if not decided or decided[-1].decision != "approved":
        return False
    return not any(_counts(ledger, r.id, day) for r in ledger.changes.values()
                   if r.kind == "REV" and r.reverses == record_id)


def _within(ledger: Ledger, record: Change, decision: Decision) -> bool:
    """Whether a decision is within its reviewer's limit (only approvals of amendments and transfers have one)."""
    if decision.decision != "approved" or record.kind == "REV":
        return True
    return abs(_value(ledger, record, "amount")) <= ledger.limit(decision.reviewer, decision.decided)


def _in_force(books: list[dict], day: date) -> dict:
    return max((b for b in books if b["adopted"] and b["adopted"] <= day), key=lambda b: b["adopted"])


def _budgets_on(books: list[dict], ledger: Ledger, centres: list[str], day: date) -> dict[str, int]:
    """Every listed centre's budget at close of business on `day`, by the store's rules."""
    totals = {c: _in_force(books, day)["figures"][c] for c in centres}
    for record in ledger.changes.values():
        if record.kind == "REV" or not _counts(ledger, record.id, day):
            continue
        amount = _value(ledger, record, "amount")
        for centre, delta in ((record.centre, amount), (record.source, -amount), (record.dest, amount)):
            if centre in totals:
                totals[centre] += delta
    return totals


def _piece_late(ledger: Ledger, centre: str) -> None:
    """In force by its dates, but approved only after the as-of date."""
    filed = ledger.as_of - ledger.days(12, 40)
    record = ledger.amend(centre, filed, filed + ledger.days(0, 8))
    ledger.approve_on(record, ledger.as_of + ledger.days(1, 20))
    ledger.roles["late"] = record.id


def _piece_rescind(ledger: Ledger, centre: str) -> None:
    """Approved, then rescinded: before the as-of date (does not count) or after it (still counts on the date)."""
    filed = ledger.early()
    record = ledger.amend(centre, filed, filed + ledger.days(0, 15))
    approved = ledger.approved(record)
    if ledger.rng.randint(0, 1):
        ledger.decide(record, "rescinded", approved + ledger.days(5, 40))
        ledger.roles["rescinded"] = record.id
    else:
        ledger.decide(record, "rescinded", ledger.as_of + ledger.days(1, 30))
        ledger.roles["rescinded_after"] = record.id


def _piece_resubmit(ledger: Ledger, centre: str) -> None:
    """Rejected first, approved on re-submission before the as-of date: counts."""
    filed = ledger.early()
    record = ledger.amend(centre, filed, filed + ledger.days(0, 15))
    rejected = ledger.decide(record, "rejected", filed + ledger.days(2, 10))
    ledger.approve_on(record, rejected + ledger.days(4, 30))
    ledger.roles["resubmitted"] = record.id


def _piece_future(ledger: Ledger, centre: str) -> None:
    """Approved long before, effective only after the as-of date."""
    filed = ledger.early(60)
    record = ledger.amend(centre, filed, ledger.as_of + ledger.days(1, 45))
    ledger.approved(record)
    ledger.roles["future"] = record.id


def _piece_chain(ledger: Ledger, centre: str) -> None:
    """An amendment reversed, the reversal itself reversed: the amendment counts again."""
    filed = ledger.early()
    record = ledger.amend(centre, filed, filed + ledger.days(0, 10))
    approved = ledger.approved(record)
    filed = approved + ledger.days(3, 12)
    first = ledger.reverse(record, filed, filed + ledger.days(0, 10))
    approved = ledger.approved(first, 2, 8)
    filed = approved + ledger.days(3, 12)
    second = ledger.reverse(first, filed, filed + ledger.days(0, 10))
    ledger.approved(second, 2, 8)
    ledger.roles.update(chain=record.id, chain_reversal=first.id, chain_reinstatement=second.id)


def _piece_single(ledger: Ledger, centre: str) -> None:
    """An amendment reversed once: it does not count."""
    filed = ledger.early()
    record = ledger.amend(centre, filed, filed + ledger.days(0, 10))
    approved = ledger.approved(record)
    filed = approved + ledger.days(3, 20)
    reversal = ledger.reverse(record, filed, filed + ledger.days(0, 10))
    ledger.approved(reversal, 2, 8)
    ledger.roles.update(reversed=record.id, reversal=reversal.id)


def _piece_corrected_amount(ledger: Ledger, centre: str) -> None:
    """An amendment whose amount is corrected after the as-of date, sometimes twice; sometimes the corrected amount
    exceeds the limit of the reviewer who approved the original one, so the approval no longer counts."""
    rng, filed = ledger.rng, ledger.early()
    over = rng.randint(0, 1) == 1
    record = ledger.amend(centre, filed, filed + ledger.days(0, 15), rng.randint(6, 40) * 500 if over else None)
    sign = 1 if record.amount > 0 else -1
    final = sign * (rng.randint(92, 120) if over else rng.randint(6, 120)) * 500
    if final == record.amount:
        final += 500 * sign
    approved = record.filed + ledger.days(2, 10)
    if over:
        ledger.decide(record, "approved", approved, rng.choice(ledger.reviewers[:2]))
        ledger.roles["corrected_over_limit"] = record.id
    else:
        ledger.approve_on(record, approved, sizes=(abs(record.amount), abs(final)))
    earlier = sign * rng.randint(6, CONTROLLER_LIMITS[0] // 500) * 500  # within every limit
    if rng.randint(0, 1) and earlier not in (record.amount, final):
        ledger.correct(record, "amount", earlier, approved + ledger.days(5, 40))
        ledger.roles["corrected_twice"] = record.id
    ledger.correct(record, "amount", final, ledger.as_of + ledger.days(3, 40))
    ledger.roles["corrected_amount"] = record.id


def _piece_limit(ledger: Ledger, centre: str) -> None:
    """An amendment approved beyond its reviewer's limit: by the first controller before the raise of its limit,
    or above both controllers' limits; sometimes approved again, properly, after the as-of date."""
    rng, low, high, other = ledger.rng, *CONTROLLER_LIMITS
    if rng.randint(0, 1):
        start = date(ledger.as_of.year, 2, 1)
        filed = start + timedelta(days=rng.randint(0, (ledger.raise_day - start).days - 15))
        record = ledger.amend(centre, filed, filed + ledger.days(0, 15), rng.randint(low // 500 + 1, high // 500) * 500)
        ledger.decide(record, "approved", filed + ledger.days(2, 10), ledger.reviewers[0])
        ledger.roles["limit_before_raise"] = record.id
    else:
        filed = ledger.early()
        record = ledger.amend(centre, filed, filed + ledger.days(0, 15), rng.randint(high // 500 + 1, 120) * 500)
        ledger.decide(record, "approved", filed + ledger.days(2, 10), rng.choice(ledger.reviewers[:2]))
        ledger.roles["limit_exceeded"] = record.id
    if rng.randint(0, 1):
        ledger.decide(record, "approved", ledger.as_of + ledger.days(1, 25), ledger.reviewers[2])
    ledger.roles["limit"] = record.id


def _piece_corrected_date(ledger: Ledger, centre: str) -> None:
    """An amendment whose effective date a correction moves past the as-of date, or back before it."""
    filed = ledger.early()
    if ledger.rng.randint(0, 1):
        record = ledger.amend(centre, filed, filed + ledger.days(0, 15))
        ledger.correct(record, "effective", ledger.as_of + ledger.days(2, 40), ledger.approved(record) +
                       ledger.days(5, 60))
        ledger.roles["moved_out"] = record.id
    else:
        record = ledger.amend(centre, filed, ledger.as_of + ledger.days(3, 30))
        ledger.approved(record)
        ledger.correct(record, "effective", ledger.as_of - ledger.days(3, 30), ledger.as_of + ledger.days(2, 30))
        ledger.roles["moved_in"] = record.id


def _piece_plain(ledger: Ledger, centre: str, last: bool = False) -> None:
    """A routine approved amendment; `last` files it after every other record of its centre, so it is the one hit
    on the second page of that centre's search."""
    filed = ledger.as_of - ledger.days(3, 11) if last else ledger.early(30)
    record = ledger.amend(centre, filed, filed + ledger.days(0, 2 if last else 15))
    ledger.approved(record, *((1, 2) if last else (2, 10)))


PIECES = (_piece_limit, _piece_late, _piece_rescind, _piece_resubmit, _piece_future, _piece_chain, _piece_single,
          _piece_corrected_amount, _piece_corrected_date)


def _draw_records(ledger: Ledger, targets: list[str], others: list[str]) -> None:
    """The trap pieces spread over the targets (the first gets six records, so its search pages), a transfer
    between the first target and another centre, and routine records of the other centres."""
    rng = ledger.rng
    pieces = list(PIECES)
    rng.shuffle(pieces)
    first, second, third = targets
    for piece, centre in zip(pieces, [first] * 4 + [second] * 2 + [third] * 3, strict=True):
        piece(ledger, centre)
    _piece_plain(ledger, first, last=True)
    partner = rng.choice([second, others[0]])
    source, dest = (first, partner) if rng.randint(0, 1) else (partner, first)
    filed = ledger.early(30)
    transfer = ledger.transfer(source, dest, filed, filed + ledger.days(0, 20))
    ledger.approved(transfer)
    ledger.roles["transfer"] = transfer.id
    for centre in others[1:4]:
        _piece_plain(ledger, centre)
    filed = ledger.early(30)
    ledger.approved(ledger.transfer(others[4], others[5], filed, filed + ledger.days(0, 20)))
    filed = ledger.early(30)
    ledger.decide(ledger.amend(others[2], filed, filed), "rejected", filed + ledger.days(2, 9))


def _draw_books(ledger: Ledger, ids: list[str], centres: list[str], targets: list[str]) -> list[dict]:
    """Three versions of the budget book: the one in force on the as-of date is version 1 or 2; the later ones
    were adopted after the date or are drafts, and each differs from it for some target."""
    rng, as_of, year = ledger.rng, ledger.as_of, ledger.as_of.year
    while True:
        figures = {c: rng.randint(40, 400) * 5000 for c in centres}
        versions = [figures]
        for count in (4, 3):
            changed = dict(versions[-1])
            for centre in dict.fromkeys([rng.choice(targets), *rng.sample(centres, count - 1)]):
                changed[centre] += rng.choice((-1, 1)) * rng.randint(2, 40) * 1000
            versions.append(changed)
        in_force = 2 if rng.randint(0, 4) < 3 else 1
        if all(any(v[t] != versions[in_force - 1][t] for t in targets) for k, v in enumerate(versions)
               if k != in_force - 1) and all(min(v.values()) > 50_000 for v in versions):
            break
    adopted = [date(year, 1, rng.randint(8, 25)),
               date(year, 3, 1) + ledger.days(0, (as_of - date(year, 3, 1)).days - 20) if in_force == 2
               else as_of + ledger.days(3, 40), None]
    if in_force == 2 and rng.randint(0, 1):
        adopted[2] = as_of + ledger.days(5, 60)
    issued = [adopted[0] - ledger.days(5, 15), adopted[1] - ledger.days(5, 25)]
    issued.append(max(issued[1] + ledger.days(3, 20),
                      adopted[2] - ledger.days(5, 20) if adopted[2] else as_of + ledger.days(-30, 20)))
    return [{"id": ids[k], "version": k + 1, "adopted": adopted[k], "issued": issued[k], "figures": versions[k]}
            for k in range(3)]


@dataclass(frozen=True)
class BudgetWorld:
    """One instance: the request, the centres, the book versions, the records, the store and the truth."""

    company: str
    request: str
    symbol: str
    as_of: date
    centres: dict[str, str]
    targets: list[str]
    books: list[dict]
    ledger: Ledger
    documents: dict[str, dict]
    truth: dict[str, int]
    report: dict[str, int]


def _budget_world(rng: ItemRng) -> BudgetWorld:
    """Draw the centres, the book and the records; write the store; evaluate the rules on the as-of date."""
    names, dates = rng.fork("names"), rng.fork("dates")
    year = dates.randint(2024, 2027)
    as_of = date(year, dates.randint(7, 10), dates.randint(1, 28))
    ids = [f"CC-{n}" for n in distinct_ints(names, 100, 899, N_CENTRES)]
    centres = dict(zip(ids, names.sample(CENTRE_NAMES, N_CENTRES)))
    targets, others = ids[:3], ids[3:]
    raise_day = date(year, dates.randint(4, 6), dates.randint(1, 28))
    ledger = Ledger(rng.fork("records"), as_of, _people(names, 8), distinct_ints(rng.fork("ids"), 1000, 9999, 90),
                    raise_day)
    books = _draw_books(ledger, [ledger.new_id("BB") for _ in range(3)], ids, targets)
    _draw_records(ledger, targets, others)
    symbol = names.choice(CURRENCIES)
    truth = _budgets_on(books, ledger, targets, as_of)
    report_day = as_of - ledger.days(20, 45)
    report = _budgets_on(books, ledger, [*targets, *others[:2]], report_day)
    world = BudgetWorld(names.choice(FIN_COMPANIES), f"FIN-{rng.fork('prompt').randint(1000, 9999)}", symbol, as_of,
                        centres, sorted(targets), books, ledger, {}, truth, report)
    world.documents.update(_budget_documents(world, report_day))
    return world


def _cash(code: str, amount: int) -> str:
    """A whole amount after its currency code: ("EUR", 45000) -> EUR 45,000."""
    return money(code + " ", amount)


def _title(ledger: Ledger, reviewer: str) -> str:
    return "Finance Director" if reviewer == ledger.reviewers[2] else "Budget Controller"


def _centre(world: BudgetWorld, centre: str) -> str:
    return f"{centre} ({world.centres[centre]})"


def _change_lines(world: BudgetWorld, record: Change) -> list[str]:
    """A change record's text: the filing first, so a snippet never shows the figures."""
    symbol = world.symbol
    lines = [f"Filed {record.filed.isoformat()} by {record.filer}.", f"Reason: {record.reason}."]
    if record.kind == "AMD":
        lines += [f"Cost centre: {_centre(world, record.centre)}",
                  f"Change: {'increase' if record.amount > 0 else 'decrease'} of {_cash(symbol, abs(record.amount))}"]
    elif record.kind == "TRF":
        lines += [f"From: {_centre(world, record.source)}", f"To: {_centre(world, record.dest)}",
                  f"Amount: {_cash(symbol, record.amount)}"]
    else:
        lines.append(f"Reverses: {record.reverses}")
    return lines + [f"Effective: {record.effective.isoformat()}"]


def _budget_documents(world: BudgetWorld, report_day: date) -> dict[str, dict]:
    """Every document of the store: book versions, change records, corrections, approvals and memos."""
    ledger, symbol, docs = world.ledger, world.symbol, {}
    kinds = {"AMD": ("Amendment", "amendment"), "TRF": ("Transfer", "transfer"), "REV": ("Reversal", "reversal")}
    for book in world.books:
        docs[book["id"]] = _book_doc(world, book)
    for record in ledger.changes.values():
        docs[record.id] = _doc(record.id, "changes", f"{kinds[record.kind][0]} {record.id}", record.filed,
                               _change_lines(world, record))
    for fix in ledger.corrections:
        value = fix.value.isoformat() if fix.field == "effective" else \
            f"{'increase' if fix.value > 0 else 'decrease'} of {_cash(symbol, abs(fix.value))}"
        docs[fix.id] = _doc(fix.id, "changes", f"Correction {fix.id}", fix.filed, [
            f"Filed {fix.filed.isoformat()} by {fix.filer}.", f"Corrects: {fix.target}",
            f"Field: {'effective date' if fix.field == 'effective' else 'amount'}", f"Corrected value: {value}",
            "Reason: keying error."])
    for decision in ledger.decisions:
        record = ledger.changes[decision.request]
        verdict = decision.decision + (" (withdraws the earlier approval)" if decision.decision == "rescinded" else "")
        docs[decision.id] = _doc(decision.id, "approvals", f"Approval {decision.id}", decision.decided, [
            f"Request: {record.id} ({kinds[record.kind][1]}), submitted by {record.filer} on "
            f"{record.filed.isoformat()}.",
            f"Decision: {verdict} on {decision.decided.isoformat()} by {decision.reviewer} "
            f"({_title(ledger, decision.reviewer)})."])
    first, second, director = ledger.reviewers
    register, raised = ledger.new_id("REG"), ledger.raise_day
    docs[register] = _doc(register, "approvals", "Approval limits register", raised - ledger.days(5, 20), [
        f"Kept by the finance director's office. Each limit is the largest amount one approval of an amendment or "
        f"transfer may carry, in whole {symbol}.",
        f"{first} (Budget Controller): up to {_cash(symbol, CONTROLLER_LIMITS[0])} until "
        f"{(raised - timedelta(days=1)).isoformat()}; up to {_cash(symbol, CONTROLLER_LIMITS[1])} from "
        f"{raised.isoformat()}.",
        f"{second} (Budget Controller): up to {_cash(symbol, CONTROLLER_LIMITS[2])}.",
        f"{director} (Finance Director): up to {_cash(symbol, DIRECTOR_LIMIT)}."])
    docs.update(_budget_memos(world, report_day))
    return dict(sorted(docs.items()))


def _book_doc(world: BudgetWorld, book: dict) -> dict:
    year, version = world.as_of.year, book["version"]
    status = f"Status: adopted by the finance committee on {book['adopted'].isoformat()}." if book["adopted"] \
        else "Status: draft, not adopted."
    previous = world.books[version - 2]["id"] if version > 1 else None
    return _doc(book["id"], "budget", f"FY{year} budget book, version {version}", book["issued"], [
        f"Version {version} of the FY{year} budget book, issued {book['issued'].isoformat()}.", status,
        f"Supersedes version {version - 1} ({previous}) for every cost centre once adopted." if previous
        else "First version of the fiscal year.", f"Opening budgets in whole {world.symbol} amounts:",
        *[f"{c} {name}: {_cash(world.symbol, book['figures'][c])}" for c, name in sorted(world.centres.items())]])


def _budget_memos(world: BudgetWorld, report_day: date) -> dict[str, dict]:
    """A stale status report, an e-mail doubting the reinstatement, and a forecast: commentary, not records."""
    ledger, symbol, people = world.ledger, world.symbol, world.ledger.people
    chain, first, second = (ledger.roles[k] for k in ("chain", "chain_reversal", "chain_reinstatement"))
    centre = ledger.changes[chain].centre
    reinstated = next(d.decided for d in ledger.decisions if d.request == second)
    ids = [ledger.new_id("MEMO") for _ in range(3)]
    forecast = {c: world.report[c] - ledger.rng.randint(10, 90) * 1000 for c in world.report}
    return {
        ids[0]: _doc(ids[0], "memos", "Budget status report", report_day, [
            f"Prepared by {people[7]} for the finance committee, for information.",
            f"Approved budgets as reported on {report_day.isoformat()}:",
            *[f"{_centre(world, c)}: {_cash(symbol, v)}" for c, v in sorted(world.report.items())]]),
        ids[1]: _doc(ids[1], "memos", f"E-mail: RE: {second}", reinstated + ledger.days(1, 6), [
            f"From: {people[1]} (Finance Operations)", "To: cost centre owners",
            f"I believe {second} was keyed in error: {first} should stand, so {chain} stays reversed and "
            f"{centre} is lower than the ledger suggests. I will raise it with the controller."]),
        ids[2]: _doc(ids[2], "memos", "Year-end spend forecast", world.as_of - ledger.days(2, 15), [
            f"Prepared by {people[7]}. Forecast spend to year end, not budgets:",
            *[f"{_centre(world, c)}: {_cash(symbol, v)}" for c, v in sorted(forecast.items())]]),
    }


def budget_as_of(rng: ItemRng) -> AgTask:
    """Three cost centres' budgets at close of business on a date, from versioned books and approved records."""
    world = _budget_world(rng)
    reference = _budget_reference(world)
    checks = tuple(Check(f"centre_{k + 1}", f"gives {c}'s budget at close of business on {world.as_of.isoformat()} "
                                            f"exactly") for k, c in enumerate(world.targets))
    return AgTask(prompt=_budget_prompt(world), make_env=lambda: BudgetStore(world.documents, BUDGET_API),
                  checks=checks, evaluate=lambda env, answer: _check_budgets(world, answer), reference=reference,
                  wasteful=_wasteful(reference, (2, 6, 14)))


def _budget_prompt(world: BudgetWorld) -> str:
    a, b, c = world.targets
    return (f"Finance request {world.request} at {world.company}. Report the approved budget of cost centres {a}, {b} "
            f"and {c} as it stood at close of business on {world.as_of.isoformat()}. The finance document store "
            f"holds the budget book, the budget change records, their approvals and memos (tools: describe_api, "
            f"search, read_document); describe_api documents the search and the rules for which records count.\n"
            f"When you are done, call submit with the answer in the form `{a}: <amount>; {b}: <amount>; "
            f"{c}: <amount>` (whole {world.symbol} amounts).")


def budget_in_answer(answer: str | None, centre: str) -> float | None:
    """The amount the answer gives for a centre: the first figure after its last labelled mention that has one."""
    found = [scaled_amounts(s) for s in _segments(answer or "", re.escape(centre))]
    found = [f for f in found if f]
    return found[-1][0] if found else None


def _check_budgets(world: BudgetWorld, answer: str | None) -> dict[str, bool]:
    verdicts = {}
    for k, centre in enumerate(world.targets):
        given = budget_in_answer(answer, centre)
        verdicts[f"centre_{k + 1}"] = given is not None and abs(given - world.truth[centre]) < 0.5
    return verdicts


def _budget_reference(world: BudgetWorld) -> tuple[Call, ...]:
    """The efficient researcher: the rules, the book version in force, each target's records, and for every record
    the approvals, reversals and corrections that name it (approvals decided after the date need no read)."""
    store, as_of = BudgetStore(world.documents, BUDGET_API), world.as_of.isoformat()
    calls = [Call("describe_api", {"topic": t}) for t in BUDGET_API]
    for hit in _all_pages(store, calls, "approval limits", "approvals"):
        _read_all(store, calls, hit["id"])
    _all_pages(store, calls, "budget book", "budget")
    in_force = _in_force(world.books, world.as_of)
    for book in sorted(world.books, key=lambda b: -b["version"]):
        if book is in_force:
            _read_all(store, calls, book["id"])
            break
        calls.append(Call("read_document", {"doc_id": book["id"]}))
    queue: list[str] = []
    for centre in world.targets:
        queue += [h["id"] for h in _all_pages(store, calls, centre, "changes") if h["id"] not in queue]
    for record_id in queue:
        _read_all(store, calls, record_id)
        for hit in _all_pages(store, calls, record_id):
            other = hit["id"]
            if other.startswith("COR-") or (other.startswith("APR-") and hit["date"] <= as_of):
                _read_all(store, calls, other)
            elif other.startswith("REV-") and world.ledger.changes[other].reverses == record_id:
                queue.append(other)
    answer = "; ".join(f"{c}: {_cash(world.symbol, world.truth[c])}" for c in world.targets)
    return (*calls, Call("submit", {"answer": answer}))


# ------------------------------------------------------------------------------- task 2: the incident dossier

OPS_COMPANIES = ("Larkspur Commerce", "Quayside Retail", "Tallgrass Travel", "Brightpath Books", "Copperleaf Market",
                 "Northwind Tickets")
EDGE_NAMES = ("storefront-gw", "edge-proxy", "web-gateway", "api-gateway")
API_NAMES = ("checkout-api", "orders-api", "booking-api", "basket-api")
TIER2_NAMES = ("payments", "inventory", "pricing", "auth", "profile", "catalog", "loyalty", "tax-engine")
TIER3_NAMES = ("ledger-db", "orders-db", "session-cache", "event-queue", "search-index", "customer-db")
BATCH_NAMES = ("reporting-batch", "analytics-etl", "billing-export")
SITES = (("fra", 60), ("lon", 0), ("nyc", -300), ("sgp", 480), ("blr", 330), ("ath", 120), ("chi", -360),
         ("dub", 0), ("tor", -300), ("hel", 120))
FAULTS = (("lower the {dep} connection pool from 64 to 8", "connection pool to {dep} exhausted, request rejected",
           "client connections from {host} aborted mid-handshake"),
          ("enable strict TLS verification for {dep}", "TLS handshake with {dep} failed: certificate name mismatch",
           "{host} dropped TLS sessions during handshake"),
          ("rotate the {dep} service credentials", "authentication to {dep} failed: password rejected",
           "repeated failed logins from {host}"),
          ("cut the {dep} client timeout from 2000 ms to 50 ms", "call to {dep} timed out after 50 ms",
           "{host} cancelled queries before completion"),
          ("switch the {dep} client to the v3 serialiser", "cannot decode reply from {dep}: unexpected token",
           "malformed requests from {host}"))
ROUTINE = ("patch the base image", "raise log retention to 14 days", "rotate TLS certificates", "tune garbage "
           "collection", "add a dashboard panel", "update the alert thresholds", "scale to four replicas")
CUSTOMERS = ("Hollis Garden Supplies", "Marlow & Daughters", "Peregrine Cycles", "Juno Pet Care", "Birchwood Bakery",
             "Oakline Studios", "Saltwater Surf Co", "Finch Analytics", "Redbrick Lettings", "Tidepool Toys")
OPS_API = {
    "search": (
        "search(query, collection, page) finds the documents that contain every word of the query, in the title or "
        "the text, ignoring case; an id such as INC-4821 or CHG-50211 and a service or host name such as "
        "payments-2.fra are one word. Hits come oldest first, "
        f"{PAGE_HITS} to a page, each as 'id (collection, date) title — opening of the text'. "
        f"read_document(doc_id, page) shows a document {PAGE_LINES} lines to a page. Collections: tickets (incident "
        "and helpdesk tickets), partner (partner desk exports), chat (chat exports), changes (change records), "
        "runbooks, postmortems."),
    "systems": (
        "Systems and their clocks. Helpdesk and incident tickets (collection tickets) and change records (CHG-, "
        "collection changes) give times in UTC. A partner desk export (PD-) and a chat export (CHAT-) state their "
        "time zone in their first line. Service logs (query_logs) show each line's host and the time as that host "
        "logged it, in the host's local zone and with the host's clock error; the current operations runbook "
        "(collection runbooks) gives each host's zone offset and clock error: UTC = logged time - zone offset - "
        "clock error. get_service shows a service's hosts and the services it depends on; list_services lists "
        "them all."),
    "dossier": (
        "Dossier definitions. (1) The incident window starts at the time the incident ticket states; ERROR lines "
        "from before that moment (in UTC) are unrelated. (2) The failure path is the edge service named in the "
        "incident ticket and every service it depends on, directly or through others; a service off the path "
        "cannot cause the edge's failures. (3) origin: the service on the failure path whose earliest ERROR line in "
        "the window is the earliest of all in UTC. (4) root_cause: the last change to the origin service completed "
        "before the origin's earliest error in the window; a cancelled change did not run. (5) impact_start: the "
        "UTC time of the edge service's earliest ERROR line in the window. (6) detected: the first alert that fired "
        "(FIRING) at or after the origin's earliest error, on the origin or on a service that depends on it "
        "directly or through others, in UTC. (7) first_report: the customer ticket linked to the incident that was "
        "created first, in the helpdesk or in the partner desk export. Times are to the second."),
}
LOG_LEVELS = ("ERROR", "WARN", "INFO", "ALL")
SERVICE_PAGE = 6
STAMP = "%Y-%m-%d %H:%M:%S"


class OpsStore(DocStore):
    """The operations document store, the service catalogue and the service logs."""

    @tool("Documentation of the operations tools. Topics: 'search' (search and reading), 'systems' (which system "
          "keeps which clock), 'dossier' (the definitions of the dossier's fields).",
          {"topic": {"type": "string", "enum": list(OPS_API)}})
    def describe_api(self, topic: str) -> Any:
        return self._describe(topic)

    @tool(f"Service catalogue: one page of the list of services (name and team), {SERVICE_PAGE} to a page.",
          {"page": {"type": "integer", "description": "page, from 1"}}, required=[])
    def list_services(self, page: int = 1) -> Any:
        rows = [{"name": s["name"], "team": s["team"]} for s in self.state["services"].values()]
        listed, pages = _page_of(rows, page, SERVICE_PAGE)
        return {"page": page, "pages": pages, "services": listed}

    @tool("Service catalogue: one service in full: team, hosts and the services it depends on.",
          {"name": {"type": "string", "description": "a service name, e.g. checkout-api"}})
    def get_service(self, name: str) -> Any:
        service = self.state["services"].get(name.strip().lower())
        if service is None:
            raise ToolError(f"no service {name[:40]!r}; list_services lists them")
        return copy.deepcopy(service)

    @tool(f"Service logs: one service's log lines from all its hosts, in order of logged time, {PAGE_LINES} to a "
          f"page; each line is '<logged time> <host> <LEVEL> <message>'. since (YYYY-MM-DD HH:MM:SS, compared with "
          f"the logged times as written) and level (ERROR, WARN, INFO or ALL) filter the lines.",
          {"service": {"type": "string"}, "since": {"type": "string", "description": "YYYY-MM-DD HH:MM:SS"},
           "level": {"type": "string", "enum": list(LOG_LEVELS)}, "page": {"type": "integer"}},
          required=["service"])
    def query_logs(self, service: str, since: str = "", level: str = "ALL", page: int = 1) -> Any:
        lines = self.state["logs"].get(service.strip().lower())
        if lines is None:
            raise ToolError(f"no service {service[:40]!r}; list_services lists them")
        since = since.strip()
        if since:
            try:
                since = datetime.strptime(since.replace("T", " ").rstrip("Z"), STAMP).strftime(STAMP)
            except ValueError:
                raise ToolError("since must be a time YYYY-MM-DD HH:MM:SS") from None
        chosen = [ln for ln in lines if ln[:19] >= since and (level == "ALL" or ln.split(" ", 4)[3] == level)]
        rows, pages = _page_of(chosen, page, PAGE_LINES)
        return {"service": service.strip().lower(), "since": since or None, "level": level, "page": page,
                "pages": pages, "matches": len(chosen), "lines": rows}


@dataclass
class OpsWorld:
    """One incident: the cast, the topology, the clocks, the story's times, the records and the truth."""

    company: str
    incident: str
    day: date
    services: dict[str, dict]
    hosts: dict[str, dict]
    edge: str
    origin: str
    dep: str
    batch: str
    noise: str
    affected: list[str]
    closure: list[str]
    window: datetime
    times: dict[str, datetime]
    changes: list[dict] = field(default_factory=list)
    chat: dict[str, Any] = field(default_factory=dict)
    helpdesk: list[dict] = field(default_factory=list)
    partner: dict[str, Any] = field(default_factory=dict)
    logs: dict[str, list[str]] = field(default_factory=dict)
    documents: dict[str, dict] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    truth: dict[str, str] = field(default_factory=dict)
    people: list[str] = field(default_factory=list)


def _zone(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _secs(value: int) -> str:
    return f"{'+' if value >= 0 else '-'}{abs(value)} s"


def _logged(world: OpsWorld, host: str, moment: datetime) -> datetime:
    """What a host's clock showed at a UTC moment: its zone plus its (true) clock error."""
    spec = world.hosts[host]
    return moment + timedelta(minutes=spec["zone"], seconds=spec["error"])


def _closure(services: dict[str, dict], start: str) -> list[str]:
    """The start service and everything it depends on, directly or through others, breadth first."""
    found, queue = [start], [start]
    while queue:
        for dep in services[queue.pop(0)]["depends_on"]:
            if dep not in found:
                found.append(dep)
                queue.append(dep)
    return found


def _dependents(services: dict[str, dict], target: str) -> list[str]:
    """The target and every service that depends on it, directly or through others."""
    return [s for s in services if target in _closure(services, s)]


def _ops_topology(rng: ItemRng) -> tuple[dict[str, dict], dict[str, str]]:
    """The service catalogue: an edge over an API over four mid-tier services over four backends, and a
    batch job with its warehouse off the edge's path."""
    edge, api, batch = rng.choice(EDGE_NAMES), rng.choice(API_NAMES), rng.choice(BATCH_NAMES)
    tier2, tier3 = rng.sample(TIER2_NAMES, 4), rng.sample(TIER3_NAMES, 4)
    depends = {edge: [api, tier2[0]], api: list(tier2), batch: ["warehouse-db"], "warehouse-db": []}
    for index, name in enumerate(tier2):
        depends[name] = list(dict.fromkeys([tier3[index % len(tier3)], *rng.sample(tier3, rng.randint(0, 1))]))
    for name in tier3:
        depends[name] = []
    names = [edge, api, *tier2, *tier3, batch, "warehouse-db"]
    teams = {name: f"{name.split('-')[0]} team" for name in names}
    services = {name: {"name": name, "team": teams[name], "hosts": [], "depends_on": sorted(depends[name])}
                for name in sorted(names)}
    return services, {"edge": edge, "api": api, "batch": batch}


def _ops_hosts(rng: ItemRng, world: OpsWorld) -> None:
    """Hosts for every service (two for the edge) with zones and clock errors, and the runbook's two tables: the
    current one lists the edge's second host with an error its erratum corrects; the superseded one gives the
    origin's host a stale error, so either mistake reorders the first errors."""
    positive = [s for s in SITES if s[1] >= 60]
    for name, service in world.services.items():
        site, zone = rng.choice(positive if name == world.noise else SITES)
        for number in sorted(rng.sample(range(1, 10), 2 if name == world.edge else 1)):
            host = f"{name}-{number}.{site}"
            service["hosts"].append(host)
            world.hosts[host] = {"zone": zone, "error": rng.randint(-40, 40)}
    hosts = world.hosts
    origin_host, dep_host = world.services[world.origin]["hosts"][0], world.services[world.dep]["hosts"][0]
    hosts[origin_host]["error"] = rng.randint(70, 150)
    hosts[dep_host]["error"] = rng.randint(-30, 10)
    first, second = rng.sample(world.services[world.edge]["hosts"], 2)
    hosts[first]["error"], hosts[second]["error"] = rng.randint(30, 60), rng.randint(-30, -5)
    for spec in hosts.values():
        spec["listed"] = spec["old"] = spec["error"]
    hosts[second]["listed"] = hosts[second]["old"] = hosts[second]["error"] + rng.randint(35, 60)
    hosts[origin_host]["old"] = rng.randint(-10, 10)
    steady = [h for h in sorted(hosts) if h not in (origin_host, dep_host, first, second)
              and h not in world.services[world.ids["api"]]["hosts"]]
    for host in rng.sample(steady, 2):
        hosts[host]["old"] += rng.choice((-1, 1)) * rng.randint(5, 30)
    world.ids.update(edge_first=first, edge_second=second)


def _ops_times(rng: ItemRng, world: OpsWorld) -> None:
    """The story's moments in UTC: the origin fails first, the API and the edge after it, the origin's backend
    complains a little later, the batch job fails just before (off the path), noise precedes the window."""
    day = world.day
    origin = datetime(day.year, day.month, day.day, 8) + timedelta(seconds=rng.randint(0, 5 * 3600))
    window = origin - timedelta(minutes=rng.randint(10, 25))
    window = window.replace(minute=window.minute - window.minute % 5, second=0)
    api = origin + timedelta(seconds=rng.randint(3, 12))
    edge_first = api + timedelta(seconds=rng.randint(8, 30))
    noise_zone = world.hosts[world.services[world.noise]["hosts"][0]]["zone"]
    world.window = window
    world.times.update(
        origin=origin, api=api, edge_first=edge_first, edge_second=edge_first + timedelta(seconds=rng.randint(2, 20)),
        dep=origin + timedelta(seconds=rng.randint(15, 45)), batch=origin - timedelta(seconds=rng.randint(60, 240)),
        rollback=origin + timedelta(seconds=rng.randint(18 * 60, 35 * 60)),
        noise=window - timedelta(seconds=rng.randint(8 * 60, min(30, noise_zone - 5) * 60)))


def _ops_logs(rng: ItemRng, world: OpsWorld) -> None:
    """Every service's log lines as its hosts wrote them: routine lines, then the error bursts of the story."""
    t, services, origin, dep = world.times, world.services, world.origin, world.dep
    fault = FAULTS[world.ids["fault"]]
    origin_host = services[origin]["hosts"][0]
    entries: dict[str, list[tuple[str, str]]] = {name: [] for name in services}

    def emit(name: str, host: str, moment: datetime, level: str, text: str) -> None:
        entries[name].append((_logged(world, host, moment).strftime(STAMP), f"{host} {level} {name}: {text}"))

    def burst(name: str, host: str, first: datetime, until: datetime, text: str, gap: tuple[int, int]) -> None:
        moment = first
        while moment <= until:
            emit(name, host, moment, "ERROR", text)
            moment += timedelta(seconds=rng.randint(*gap))

    start, end = world.window - timedelta(minutes=75), t["origin"] + timedelta(minutes=45)
    for name, service in services.items():
        for host in service["hosts"]:
            moment = start + timedelta(seconds=rng.randint(0, 300))
            while moment < end:
                level = "WARN" if rng.randint(0, 9) == 0 else "INFO"
                text = f"slow request {rng.randint(800, 2500)} ms" if level == "WARN" else \
                    f"health ok, {rng.randint(40, 900)} req/s, p99 {rng.randint(30, 400)} ms"
                emit(name, host, moment, level, text)
                moment += timedelta(seconds=rng.randint(150, 420))
    stop = t["rollback"]
    burst(origin, origin_host, t["origin"], stop, fault[1].format(dep=dep), (20, 60))
    burst(dep, services[dep]["hosts"][0], t["dep"], t["dep"] + timedelta(seconds=rng.randint(180, 360)),
          fault[2].format(host=origin_host), (20, 60))
    api = world.ids["api"]
    burst(api, services[api]["hosts"][0], t["api"], stop + timedelta(seconds=20),
          "request failed: an upstream dependency returned 503", (20, 60))
    for key in ("edge_first", "edge_second"):
        burst(world.edge, world.ids[key], t[key], stop + timedelta(seconds=30), f"502 from {api} for POST /checkout",
              (20, 60))
    burst(world.batch, services[world.batch]["hosts"][0], t["batch"], t["batch"] + timedelta(minutes=10),
          "job step 'aggregate' failed: query timeout on warehouse-db", (30, 90))
    noise_host = services[world.noise]["hosts"][0]
    emit(world.noise, noise_host, t["noise"], "ERROR", "health check timed out; recovered on retry")
    world.logs = {name: [f"{stamp} {rest}" for stamp, rest in sorted(lines)] for name, lines in entries.items()}


def _ops_changes(rng: ItemRng, world: OpsWorld, numbers: list[int]) -> None:
    """Change records: the origin's culprit, a later change cancelled before it ran, the rollback after the
    incident and an older one; changes on the backend, the batch job (with rollbacks) and the noisy service that a
    wrong origin would point to; routine older changes elsewhere."""
    t, day, people = world.times, world.day, world.people

    def add(service: str, summary: str, end: datetime, status: str = "completed", role: str = "") -> str:
        change_id = f"CHG-{numbers.pop()}"
        world.changes.append({"id": change_id, "service": service, "summary": summary, "status": status,
                              "start": end - timedelta(seconds=rng.randint(120, 700)), "end": end,
                              "requester": rng.choice(people)})
        if role:
            world.ids[role] = change_id
        return change_id

    def minutes(low: int, high: int) -> timedelta:
        return timedelta(seconds=rng.randint(low * 60, high * 60))

    origin, dep, batch = world.origin, world.dep, world.batch
    fault = FAULTS[world.ids["fault"]]
    add(origin, rng.choice(ROUTINE), t["origin"] - timedelta(days=rng.randint(2, 9)) + minutes(-60, 60), role="old")
    culprit = add(origin, fault[0].format(dep=dep), t["origin"] - minutes(4, 30), role="culprit")
    completed = world.changes[-1]["end"]
    gap = int((t["origin"] - completed).total_seconds()) - 90
    add(origin, rng.choice(ROUTINE), completed + timedelta(seconds=60 + rng.randint(0, gap)), "cancelled", "cancelled")
    add(origin, f"roll back {culprit}", t["rollback"], role="rollback")
    dep_change = add(dep, rng.choice((f"rebuild the indexes of {dep}", f"minor version upgrade of {dep}")),
                     t["origin"] - minutes(2, 60), role="dep_change")
    add(dep, f"roll back {dep_change}", t["rollback"] + timedelta(seconds=rng.randint(60, 300)))
    batch_change = add(batch, "new aggregation query for the daily report", t["origin"] - minutes(5, 20),
                       role="batch_change")
    add(batch, f"roll back {batch_change}", t["rollback"] + timedelta(seconds=rng.randint(-200, 200)))
    add(world.noise, rng.choice(ROUTINE), t["noise"] - minutes(10, 180), role="noise_change")
    for name in world.closure:
        if not any(c["service"] == name for c in world.changes) and (name in (world.edge, world.ids["api"])
                                                                     or rng.randint(0, 1)):
            add(name, rng.choice(ROUTINE), t["origin"] - timedelta(days=rng.randint(1, 6)) + minutes(-90, 90))
    world.changes.sort(key=lambda c: c["end"])


def _ops_chat(rng: ItemRng, world: OpsWorld) -> None:
    """The war-room export: bot alerts (a flap before the window, the batch job's correlated CPU alert, the
    incident's alerts, the backend's) and people's guesses, in the exporter's zone."""
    t, ids, people, affected = world.times, world.ids, world.people, world.affected
    lines: list[tuple[datetime, str, str]] = []

    def at(moment: datetime, who: str, text: str) -> None:
        lines.append((moment, who, text))

    def secs(low: int, high: int) -> timedelta:
        return timedelta(seconds=rng.randint(low, high))

    def alert(moment: datetime, state: str, service: str, name: str) -> None:
        at(moment, "monitor-bot", f"{state} {service}-{name} (service {service})")

    flap, first, second = rng.choice(affected), rng.choice(affected), rng.choice(affected)
    flapped = world.window - secs(15 * 60, 35 * 60)
    at(world.window - secs(40 * 60, 55 * 60), people[0], "morning all, quiet so far")
    alert(flapped, "FIRING", flap, "latency-p99")
    alert(flapped + secs(60, 180), "RESOLVED", flap, "latency-p99")
    at(flapped + secs(200, 300), people[1], f"{flap} latency blip cleared by itself")
    at(t["batch"] - secs(120, 600), people[2],
       f"{ids['batch_change']} is live on {world.batch}; heavy report run today")
    alert(t["origin"] - secs(30, 120), "FIRING", world.batch, "cpu-high")
    detected = t["origin"] + secs(40, 150)
    alert(detected, "FIRING", first, "error-rate")
    alert(detected + secs(10, 60), "FIRING", world.dep, "connections-high")
    alert(detected + secs(70, 160), "FIRING", second, "5xx-rate")
    at(detected + secs(180, 240), people[3], f"checkout is failing. The {world.batch} CPU alert fired just before and "
                                             f"{ids['batch_change']} went out this morning, my bet is on that")
    at(detected + secs(250, 320), people[1], f"{world.dep} is throwing errors too, and {ids['dep_change']} touched it "
                                             f"today")
    at(detected + secs(330, 400), people[4], f"nothing obvious on {world.origin} dashboards yet")
    at(detected + secs(420, 500), people[2], f"partner desk is getting calls as well; tickets are linked to "
                                             f"{world.incident}")
    at(t["rollback"] - secs(240, 400), people[3], f"rolling back {ids['batch_change']}, {ids['dep_change']} and "
                                                  f"{ids['culprit']} to be safe")
    for service, name in ((first, "error-rate"), (world.dep, "connections-high"), (second, "5xx-rate")):
        alert(t["rollback"] + secs(60, 180), "RESOLVED", service, name)
    at(t["rollback"] + secs(240, 400), people[1], f"error rates back to normal; {people[5]} owns the dossier")
    zone = rng.choice((60, 120, -300, 330, -360, 480))
    world.chat = {"zone": zone, "lines": sorted(lines)}
    world.truth["detected"] = detected.strftime(STAMP)


def _ops_tickets(rng: ItemRng, world: OpsWorld, numbers: list[int]) -> None:
    """Helpdesk tickets (UTC) and the partner desk export (its own zone): linked and unlinked, and the first linked
    report on either side."""
    t = world.times
    first_helpdesk = t["edge_first"] + timedelta(seconds=rng.randint(90, 360))
    partner_first = rng.randint(0, 1) == 1
    if partner_first:
        first_partner, zone = first_helpdesk - timedelta(seconds=rng.randint(10, 80)), rng.choice((60, 120, 180))
    else:
        first_partner, zone = first_helpdesk + timedelta(seconds=rng.randint(20, 200)), rng.choice((-300, -240, -360))
    customers = rng.sample(CUSTOMERS, 9)
    created = [first_helpdesk + timedelta(seconds=s) for s in (0, *sorted(rng.sample(range(40, 900), 4)))]
    for moment, customer in zip(created, customers):
        world.helpdesk.append({"id": f"CS-{numbers.pop()}", "customer": customer, "created": moment,
                               "linked": world.incident, "subject": rng.choice(("card payment fails at checkout",
                                                                                 "order will not go through",
                                                                                 "checkout shows an error"))})
    world.helpdesk.append({"id": f"CS-{numbers.pop()}", "customer": customers[5], "linked": None,
                           "created": t["origin"] - timedelta(seconds=rng.randint(3600, 3 * 3600)),
                           "subject": "copy of last month's invoice"})
    world.helpdesk.append({"id": f"CS-{numbers.pop()}", "customer": customers[6], "linked": world.ids["old_incident"],
                           "created": first_helpdesk - timedelta(seconds=rng.randint(100, 900)),
                           "subject": "delivery status not updating"})
    rows = [(first_partner, world.incident, "payment at checkout fails")]
    rows += [(first_partner + timedelta(seconds=rng.randint(60, 900)), world.incident, "checkout error")
             for _ in range(2)]
    rows += [(t["origin"] - timedelta(seconds=rng.randint(600, 7200)), None, "password reset request"),
             (t["origin"] - timedelta(seconds=rng.randint(600, 7200)), None, "invoice address change"),
             (first_partner - timedelta(seconds=rng.randint(30, 500)), None, "question about opening hours"),
             (first_partner - timedelta(seconds=rng.randint(30, 500)), world.ids["old_incident"], "late delivery"),
             (first_partner + timedelta(seconds=rng.randint(60, 900)), None, "change of delivery address"),
             (first_partner + timedelta(seconds=rng.randint(60, 900)), None, "gift card balance")]
    world.partner = {"zone": zone, "rows": sorted((m, f"PX-{numbers.pop()}", link, text) for m, link, text in rows)}
    helpdesk_first = world.helpdesk[0]["id"]
    partner_id = next(r[1] for r in world.partner["rows"] if r[2] == world.incident)
    world.truth["first_report"] = partner_id if partner_first else helpdesk_first


def _ops_world(rng: ItemRng) -> OpsWorld:
    """Draw the topology, the clocks, the story and the records; write the store; derive the dossier's truth."""
    names, clock, story = rng.fork("names"), rng.fork("clock"), rng.fork("story")
    numbers = distinct_ints(rng.fork("ids"), 10000, 99999, 60)
    services, roles = _ops_topology(names)
    day = date(story.randint(2024, 2027), story.randint(1, 12), story.randint(1, 28))
    tier2 = [s for s in services[roles["api"]]["depends_on"]]
    origin = story.choice(tier2)
    dep = story.choice(services[origin]["depends_on"])
    closure = _closure(services, roles["edge"])
    affected = [s for s in _dependents(services, origin) if s in closure]
    noise = story.choice([s for s in closure if s not in (origin, dep, roles["edge"])])
    world = OpsWorld(names.choice(OPS_COMPANIES), f"INC-{numbers.pop()}", day, services, {}, roles["edge"], origin,
                     dep, roles["batch"], noise, affected, closure, datetime(day.year, day.month, day.day), {},
                     people=_people(names, 8))
    world.ids.update(api=roles["api"], fault=story.randint(0, len(FAULTS) - 1), old_incident=f"INC-{numbers.pop()}")
    _ops_hosts(clock, world)
    _ops_times(story, world)
    _ops_logs(story, world)
    _ops_changes(story, world, numbers)
    _ops_chat(story, world)
    _ops_tickets(story, world, numbers)
    for key, prefix in (("chat", "CHAT"), ("partner", "PD"), ("runbook", "RB"), ("old_runbook", "RB"),
                        ("guide", "RB"), ("postmortem", "PM")):
        world.ids[key] = f"{prefix}-{numbers.pop()}"
    world.truth.update(origin=origin, root_cause=world.ids["culprit"],
                       impact_start=world.times["edge_first"].strftime(STAMP))
    world.documents.update(_ops_documents(world))
    return world


def _local(moment: datetime, zone: int) -> str:
    return (moment + timedelta(minutes=zone)).strftime(STAMP)


def _runbook_lines(world: OpsWorld, current: bool) -> list[str]:
    ids, hosts, day = world.ids, world.hosts, world.day
    key = "listed" if current else "old"
    head = (f"Operations runbook, revision 2 (current). Supersedes revision 1 ({ids['old_runbook']})." if current else
            f"Operations runbook, revision 1. Superseded by revision 2 ({ids['runbook']}): its clock table is out "
            f"of date.")
    lines = [head, "Service logs are written in each host's local time and carry the host's clock error, so",
             "logged time = UTC + zone offset + clock error, and UTC = logged time - zone offset - clock error.",
             f"Clock errors as measured on {(day - timedelta(days=40 if current else 200)).isoformat()}; a positive "
             f"error means the host's clock runs ahead."]
    lines += [f"{h}: zone {_zone(spec['zone'])}, clock error {_secs(spec[key])}" for h, spec in sorted(hosts.items())]
    if current:
        second = ids["edge_second"]
        lines.append(f"Erratum ({(day - timedelta(days=3)).isoformat()}): the clock error of {second} is "
                     f"{_secs(hosts[second]['error'])}, not {_secs(hosts[second]['listed'])} as listed above.")
    return lines


def _ops_documents(world: OpsWorld) -> dict[str, dict]:
    """Every document of the store: tickets, the partner export, the chat export, change records, runbooks and an
    old postmortem."""
    ids, day, people, incident = world.ids, world.day, world.people, world.incident
    docs = {incident: _doc(incident, "tickets", f"Incident {incident}: checkout failures", day, [
        f"Opened {(world.times['edge_first'] + timedelta(minutes=6)).strftime(STAMP)} UTC by {people[0]} (on-call).",
        f"Summary: customers cannot complete checkout through {world.edge}.", f"Edge service: {world.edge}",
        f"Incident window starts: {world.window.strftime(STAMP)} UTC",
        f"War-room chat export: {ids['chat']}. Partner desk reports: {ids['partner']}.",
        f"Dossier owner: {people[5]}. The dossier's definitions: describe_api topic 'dossier'."])}
    for ticket in world.helpdesk:
        docs[ticket["id"]] = _doc(ticket["id"], "tickets", f"Helpdesk ticket {ticket['id']}: {ticket['subject']}",
                                  ticket["created"].date(), [
            f"Customer: {ticket['customer']}", f"Subject: {ticket['subject']}", "Channel: e-mail to support",
            f"Linked incident: {ticket['linked'] or 'none'}", f"Created: {ticket['created'].strftime(STAMP)} UTC"])
    zone = world.partner["zone"]
    docs[ids["partner"]] = _doc(ids["partner"], "partner", f"Partner desk export {day.isoformat()}", day, [
        f"Partner desk tickets of {day.isoformat()}. Times are the partner desk's local time, {_zone(zone)}.",
        *[f"{number} | {_local(moment, zone)} | linked: {link or '-'} | {text}"
          for moment, number, link, text in world.partner["rows"]]])
    zone = world.chat["zone"]
    docs[ids["chat"]] = _doc(ids["chat"], "chat", f"Chat export #war-room {day.isoformat()}", day, [
        f"Export of #war-room on {day.isoformat()}. Times are the exporter's local time, {_zone(zone)}.",
        *[f"[{(m + timedelta(minutes=zone)).strftime('%H:%M:%S')}] {who}: {text}"
          for m, who, text in world.chat["lines"]]])
    for change in world.changes:
        when = ([f"Scheduled: {change['end'].strftime(STAMP)} UTC", "Status: cancelled before start (did not run)"]
                if change["status"] == "cancelled" else
                [f"Started: {change['start'].strftime(STAMP)} UTC", f"Completed: {change['end'].strftime(STAMP)} UTC",
                 "Status: completed"])
        docs[change["id"]] = _doc(change["id"], "changes", f"Change {change['id']}: {change['summary']}",
                                  change["end"].date(), [f"Requested by {change['requester']}.",
                                                         f"Summary: {change['summary']}.",
                                                         f"Service: {change['service']}", *when])
    docs[ids["runbook"]] = _doc(ids["runbook"], "runbooks", "Operations runbook, revision 2",
                                day - timedelta(days=38), _runbook_lines(world, True))
    docs[ids["old_runbook"]] = _doc(ids["old_runbook"], "runbooks", "Operations runbook, revision 1",
                                    day - timedelta(days=198), _runbook_lines(world, False))
    docs[ids["guide"]] = _doc(ids["guide"], "runbooks", "On-call guide", day - timedelta(days=300), [
        "Page the owning team of the failing service first.", "Before comparing log times across hosts, "
        "correct each host's clock error and zone (see the operations runbook).",
        "Roll back recent changes when in doubt; record every rollback as a change."])
    docs[ids["postmortem"]] = _doc(ids["postmortem"], "postmortems", f"Postmortem {ids['old_incident']}",
                                   day - timedelta(days=34), [
        f"{world.dep} ran out of connections for 12 minutes after a failover.", "Root cause: a failover script left "
        "the standby with the default connection limit.", f"Follow-up: watch {world.dep} connection alerts."])
    return dict(sorted(docs.items()))


DOSSIER_FIELDS = (("origin", "origin", "names {inc}'s origin service"),
                  ("root_cause", r"root[ _]cause", "names {inc}'s root-cause change"),
                  ("impact_start", r"impact[ _]start", "gives {inc}'s impact start in UTC, to the second"),
                  ("detected", "detected", "gives {inc}'s detection time in UTC, to the second"),
                  ("first_report", r"first[ _]report", "names {inc}'s first customer report"))


def incident_dossier(rng: ItemRng) -> AgTask:
    """An incident's origin, root cause, impact start, detection and first report from logs, tickets and chat."""
    world = _ops_world(rng)
    reference = _ops_reference(world)
    checks = tuple(Check(key, text.format(inc=world.incident)) for key, _, text in DOSSIER_FIELDS)
    return AgTask(prompt=_ops_prompt(world), make_env=lambda: _ops_store(world), checks=checks,
                  evaluate=lambda env, answer: _check_dossier(world, answer), reference=reference,
                  wasteful=_wasteful(reference, (3, 9, 20)))


def _ops_store(world: OpsWorld) -> OpsStore:
    return OpsStore(world.documents, OPS_API, {"services": world.services, "logs": world.logs})


def _ops_prompt(world: OpsWorld) -> str:
    return (f"You are the incident analyst at {world.company}. Build the dossier of incident {world.incident}: its "
            f"origin service, root-cause change, impact start, detection time and first customer report. The "
            f"operations store holds the tickets, the partner desk export, the war-room chat export, the change "
            f"records and the runbooks; the service catalogue and the service logs have their own tools. "
            f"describe_api defines every field of the dossier and says how each system keeps time.\n"
            f"When you are done, call submit with the answer in the form `origin: <service>; root_cause: <change "
            f"id>; impact_start: <YYYY-MM-DD HH:MM:SS> UTC; detected: <YYYY-MM-DD HH:MM:SS> UTC; first_report: "
            f"<ticket id>`.")


_CLOCK = re.compile(r"(?:(\d{4}-\d\d-\d\d)[ T])?(\d{1,2}):(\d\d):(\d\d)(\s*(?:UTC|GMT|Z\b))?", re.IGNORECASE)


def dossier_time(segment: str, day: date) -> str | None:
    """The time a dossier field gives, as YYYY-MM-DD HH:MM:SS: the first marked UTC, else the first; a date
    written with it must be the incident's."""
    found = list(_CLOCK.finditer(segment))
    if not found:
        return None
    match = next((m for m in found if m.group(5)), found[0])
    if match.group(1) and match.group(1) != day.isoformat():
        return None
    return f"{day.isoformat()} {int(match.group(2)):02d}:{match.group(3)}:{match.group(4)}"


def _dossier_value(world: OpsWorld, key: str, segment: str) -> str | None:
    if key == "origin":
        named = [(m.start(), n) for n in world.services
                 for m in [re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", segment, re.IGNORECASE)] if m]
        return min(named)[1] if named else None
    if key in ("impact_start", "detected"):
        return dossier_time(segment, world.day)
    found = re.search(r"\bCHG-\d+\b" if key == "root_cause" else r"\b(?:CS|PX)-\d+\b", segment, re.IGNORECASE)
    return found.group(0).upper() if found else None


def _check_dossier(world: OpsWorld, answer: str | None) -> dict[str, bool]:
    verdicts = {}
    for key, label, _ in DOSSIER_FIELDS:
        values = [v for v in (_dossier_value(world, key, s) for s in _segments(answer or "", label)) if v]
        verdicts[key] = bool(values) and values[-1] == world.truth[key]
    return verdicts


def _ops_reference(world: OpsWorld) -> tuple[Call, ...]:
    """The efficient analyst: the definitions, the incident ticket and what links to it, the current runbook, the
    failure path's services and their first errors in the window, the origin's changes that day, the chat export,
    the partner export and the linked helpdesk tickets."""
    store, ids = _ops_store(world), world.ids
    calls = [Call("describe_api", {"topic": t}) for t in OPS_API]
    _read_all(store, calls, world.incident)
    linked = _all_pages(store, calls, world.incident)
    _all_pages(store, calls, "clock error", "runbooks")
    _read_all(store, calls, ids["runbook"])
    calls += [Call("get_service", {"name": name}) for name in world.closure]
    for name in world.closure:
        since = min(_logged(world, h, world.window) for h in world.services[name]["hosts"]).strftime(STAMP)
        calls.append(Call("query_logs", {"service": name, "since": since, "level": "ERROR"}))
    for hit in _all_pages(store, calls, world.origin, "changes"):
        if hit["date"] == world.day.isoformat() and any(c["id"] == hit["id"] and c["service"] == world.origin
                                                         for c in world.changes):
            _read_all(store, calls, hit["id"])
    _read_all(store, calls, ids["chat"])
    _read_all(store, calls, ids["partner"])
    for hit in linked:
        if hit["id"].startswith("CS-"):
            _read_all(store, calls, hit["id"])
    answer = "; ".join(f"{key}: {world.truth[key]}" + (" UTC" if key in ("impact_start", "detected") else "")
                       for key, _, _ in DOSSIER_FIELDS)
    return (*calls, Call("submit", {"answer": answer}))
