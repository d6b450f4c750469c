"""Planning under constraints (ESAC-AG 2.0): exact optimisation behind exploration. A week of meeting requests across
time zones, campus buildings and rooms, and a two-city business trip priced by fare rules, threshold discounts and
ground transfers; the rules and prices are found only through paged listings, detail views and describe_api, each
generator computes the unique optimum under the objective and tie-breaks its prompt states, and the checks compare
the final bookings with it. Bookings hold resources and cost money, so booking to find out costs rework or budget."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

from esac_kit.ag.answers import cents_in, distinct_ints, dollar_figure, signed_integers
from esac_kit.ag.env import Environment, ToolError, paged as _paged, text_arg as _text, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng


# ---------------------------------------------------------------- shared helpers




def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _zone(offset: int) -> str:
    return f"UTC{'+' if offset >= 0 else '-'}{_clock(abs(offset))}"


# ---------------------------------------------------------------- task 1: a week of meetings

DAY = 1440
SLOT = 30
DAYS = 5
SLOTS = DAYS * DAY // SLOT  # the planning week, Monday 00:00 to Saturday 00:00 UTC, in half hours
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri")
CAMPUSES = (("Amsterdam", 60), ("Madrid", 60), ("Lisbon", 0), ("Dublin", 0), ("Helsinki", 120), ("Athens", 120),
            ("Warsaw", 60), ("Lyon", 60))
REMOTE_OFFICES = (("New York", -300), ("Toronto", -300), ("Halifax", -240), ("Sao Paulo", -180), ("London", 0),
                  ("Lagos", 60), ("Cairo", 120), ("Nairobi", 180), ("Dubai", 240), ("Karachi", 300), ("Pune", 330))
BUILDINGS = ("North", "Canal", "Foundry", "Harbour", "Mill", "Quay", "Tower", "Garden")
ROOM_NAMES = ("Orchid", "Cedar", "Atrium", "Juniper", "Lantern", "Maple", "Summit", "Willow", "Beacon", "Fjord",
              "Quarry", "Aspen")
FIRST_NAMES = ("Priya", "Jonas", "Mei", "Tomas", "Aisha", "Lukas", "Sofia", "Kenji", "Amara", "Mateo", "Ingrid",
               "Ravi", "Chloe", "Dmitri", "Fatima", "Oliver", "Yuki", "Nadia", "Samuel", "Leila", "Hannah", "Arjun",
               "Elena", "Kwame", "Marta", "Felix", "Zara", "Hugo")
LAST_NAMES = ("Sharma", "Weber", "Chen", "Alvarez", "Okafor", "Novak", "Rossi", "Tanaka", "Mensah", "Garcia",
              "Larsen", "Iyer", "Dubois", "Petrov", "Haddad", "Byrne", "Sato", "Karimi", "Osei", "Moreau", "Lindqvist",
              "Kowalski", "Costa", "Nakamura")
PROGRAMMES = ("Atlas", "Kestrel", "Meridian", "Halcyon", "Northstar", "Tidewater", "Juniper", "Lodestar")
COMPANIES = ("Norvale Systems", "Bluefin Analytics", "Calder Robotics", "Tessaro Labs", "Auric Health Tech",
             "Brightwell Energy")
REQUEST_TITLES = ("Architecture review", "Vendor security review", "Launch readiness", "Roadmap planning",
                  "Client onboarding", "Integration design", "Budget sign-off", "Hiring debrief", "Incident retro",
                  "Pricing decision", "Data model review", "Sprint demo", "Risk review", "Capacity planning",
                  "Partner sync", "UX critique")
EVENT_TITLES = ("1:1", "Customer call", "Design sync", "Interview", "Team standup", "Focus block", "Ops review",
                "Partner call", "Hiring panel", "Training", "Board prep", "Release review")
FREE_TITLES = ("Optional: brown-bag", "Office hours", "Reading time", "Optional: demo day")
HOLD_TITLES = ("Hold: vendor demo", "Hold: offsite prep", "Hold: customer visit", "Maybe: training")
REQUESTS = 8  # the requests of a week: the task's main size (and difficulty) knob
REQUEST_PAGE, PEOPLE_PAGE, CALENDAR_PAGE, ROOM_PAGE = 4, 5, 12, 4
EVENT_COLUMNS = ["date", "start", "end", "show_as", "where", "title"]
BOOKING_COLUMNS = ["date", "start", "end", "by"]
MEETING_DOCS = {
    "scheduling": (
        "Scheduling rules (all hard). 1. A meeting lasts its request's duration_minutes and starts on the hour or "
        "half hour (UTC), inside the planning week: Monday 00:00 to Saturday 00:00 UTC. 2. Every required attendee "
        "is inside their working hours, on one of their working days, for the whole meeting, in their own time "
        "zone. 3. A required attendee must not be in an event shown as busy or tentative, nor in another meeting "
        "you book where they are required; events shown as free never block. 4. Travel buffer: everyone who works "
        "on campus attends in person, and a required attendee who works on campus needs at least {buffer} minutes "
        "between two of their commitments (busy or tentative events, and meetings you book where they are "
        "required) held in different campus buildings; commitments in the same building, or online, need no gap. "
        "Remote people join by video. 5. The room seats "
        "every invitee who attends in person (campus people, required or optional) plus the request's "
        "external_guests, has video when any invitee (required or optional) is remote, and is free. 6. A request "
        "with starts_after starts no earlier than the end of every meeting it names. Optional attendees are invited "
        "but never constrain the time, and only required attendees count in the objective."),
    "calendars": (
        "Directory and calendars. list_people pages the directory: person_id, name and where they work (campus, "
        "or a remote office). get_person adds the time zone (a fixed UTC offset: no daylight saving change this "
        "week), working days, working hours and preferred hours, all in the person's local time (an end time is "
        "exclusive: hours 09:00-17:00 end at 17:00). get_calendar pages a person's events of the planning week in "
        "their local time: date, start, end, show_as (busy, tentative or free), where (a campus building, or "
        "online) and title. Meetings you book appear on the required attendees' calendars as busy, in the room's building."),
    "rooms": (
        "Rooms and bookings. list_rooms pages the campus rooms: room_id, name, building and seats. get_room adds "
        "the equipment and the room's bookings in the planning week, in UTC, yours included. book_meeting books one "
        "request: it invites the request's required and optional attendees and reserves the room. It refuses a "
        "room that is booked at that time and a request that is already booked (cancel it first), and checks "
        "nothing else: not calendars, hours, buffers, seats or equipment. cancel_booking releases the room and "
        "withdraws the invitations; list_bookings shows your bookings."),
}


@dataclass(frozen=True)
class Person:
    """A directory entry; hours are local minutes of the day, days are weekday indexes (0 = Monday)."""

    id: str
    name: str
    office: str  # "campus" or a remote office's city
    offset: int
    days: tuple[int, ...]
    work: tuple[int, int]
    prefer: tuple[int, int]

    @property
    def campus(self) -> bool:
        return self.office == "campus"


@dataclass(frozen=True)
class Request:
    """A meeting request: who, how long, which room it usually has and which meetings it must follow."""

    id: str
    title: str
    duration: int
    required: tuple[str, ...]
    optional: tuple[str, ...]
    guests: int
    usual: str | None
    after: tuple[str, ...]


@dataclass(frozen=True)
class Rules:
    """The rules a solver applies; the traps are solvers with one rule misread."""

    tentative_blocks: bool = True
    free_blocks: bool = False
    buffer: bool = True
    precedence: bool = True
    optional_required: bool = False
    guests: bool = True


@dataclass
class Week:
    """One scheduling instance; times are minutes from Monday 00:00 UTC of the planning week."""

    monday: date
    campus: str
    campus_offset: int
    buildings: tuple[str, ...]
    buffer: int
    people: dict[str, Person]
    events: dict[str, list[dict[str, Any]]]  # person -> events (start, end, show_as, where, title)
    rooms: dict[str, dict[str, Any]]  # room -> name, building, seats, equipment, bookings [(start, end)]
    requests: dict[str, Request] = field(default_factory=dict)

    def seats_needed(self, req: Request, rules: Rules = Rules()) -> int:
        return sum(1 for p in req.required + req.optional if self.people[p].campus) + (req.guests if rules.guests
                                                                                     else 0)

    def needs_video(self, req: Request) -> bool:
        return any(not self.people[p].campus for p in req.required + req.optional)

    def room_fits(self, req: Request, room_id: str, rules: Rules = Rules()) -> bool:
        room = self.rooms[room_id]
        return room["seats"] >= self.seats_needed(req, rules) and ("video" in room["equipment"]
                                                                   or not self.needs_video(req))

    def utc_text(self, minute: int) -> str:
        return f"{self.monday + timedelta(days=minute // DAY)} {_clock(minute % DAY)}"


def _bits(start: int, end: int) -> int:
    """The slot mask of [start, end) minutes (clipped to the week)."""
    first, last = max(0, start // SLOT), min(SLOTS, -(-end // SLOT))
    return ((1 << (last - first)) - 1) << first if last > first else 0


def _runs(mask: int, length: int) -> int:
    """Bit s set when slots s .. s+length-1 are all set."""
    run = mask
    for shift in range(1, length):
        run &= mask >> shift
    return run


def _starts(mask: int) -> list[int]:
    found, index = [], 0
    while mask:
        if mask & 1:
            found.append(index)
        mask >>= 1
        index += 1
    return found


class _Masks:
    """Per-person slot masks under one set of rules: available (in hours, not blocked), near (slots too close to a
    commitment in another building, per building) and outside preferred hours."""

    def __init__(self, week: Week, rules: Rules):
        self.ok: dict[str, int] = {}
        self.near: dict[str, dict[str, int]] = {}
        self.out: dict[str, int] = {}
        for pid, person in week.people.items():
            hours = prefer = 0
            for day in person.days:
                base = day * DAY - person.offset
                hours |= _bits(base + person.work[0], base + person.work[1])
                prefer |= _bits(base + person.prefer[0], base + person.prefer[1])
            blocked, elsewhere = 0, {b: 0 for b in week.buildings}
            for event in week.events[pid]:
                shown = event["show_as"]
                if shown == "busy" or (shown == "tentative" and rules.tentative_blocks) or (
                        shown == "free" and rules.free_blocks):
                    span = _bits(event["start"], event["end"])
                    blocked |= span
                    if person.campus and event["where"] in elsewhere and rules.buffer:
                        wide = _bits(event["start"] - week.buffer, event["end"] + week.buffer)
                        for building in elsewhere:
                            if building != event["where"]:
                                elsewhere[building] |= wide
            self.ok[pid] = hours & ~blocked
            self.near[pid] = elsewhere
            self.out[pid] = hours & ~prefer


@dataclass(frozen=True)
class Option:
    """One way to hold one request: a start slot, a room, and its share of the plan's ordering key."""

    key: int
    start: int
    end: int
    room: str
    building: str
    cost: int  # attendee-minutes outside preferred hours
    change: int  # 1 when the request names a usual room and this is another


def _key_shifts(week: Week) -> tuple[dict[str, tuple[int, int]], int, int]:
    """Bit positions of the lexicographic key: cost, changes, then starts and seats in request-id order."""
    order = sorted(week.requests)
    n = len(order)
    positions = {rid: (8 * (n - 1 - i) + 5 * n, 5 * (n - 1 - i)) for i, rid in enumerate(order)}
    return positions, 13 * n + 4, 13 * n


def _attendees(req: Request, rules: Rules) -> tuple[str, ...]:
    return req.required + req.optional if rules.optional_required else req.required


def _options(week: Week, rules: Rules, masks: _Masks | None = None) -> dict[str, list[Option]]:
    """Every (start, room) that meets the rules on one request alone, sorted by key."""
    masks = masks or _Masks(week, rules)
    positions, cost_shift, change_shift = _key_shifts(week)
    found: dict[str, list[Option]] = {}
    for rid, req in week.requests.items():
        who = _attendees(req, rules)
        length = req.duration // SLOT
        base = ~0
        for pid in who:
            base &= masks.ok[pid]
        options = []
        for room_id, room in week.rooms.items():
            if not week.room_fits(req, room_id, rules):
                continue
            mask = base & ~room["busy"] & ((1 << SLOTS) - 1)
            for pid in who:
                if week.people[pid].campus:
                    mask &= ~masks.near[pid][room["building"]]
            change = int(req.usual is not None and req.usual != room_id)
            for start in _starts(_runs(mask, length)):
                window = ((1 << length) - 1) << start
                cost = SLOT * sum(bin(masks.out[pid] & window).count("1") for pid in who)
                key = (cost << cost_shift) + (change << change_shift) + (start << positions[rid][0]) + (
                    room["seats"] << positions[rid][1])
                options.append(Option(key, start, start + length, room_id, room["building"], cost, change))
        found[rid] = sorted(options, key=lambda o: o.key)
    return found


def _pairs(week: Week, rules: Rules) -> dict[tuple[str, str], tuple[bool, bool, int]]:
    """For two requests: whether they share an attendee, whether they share a campus attendee, and precedence
    (1: the first must end before the second starts, -1: the other way, 0: none)."""
    info = {}
    for a, ra in week.requests.items():
        for b, rb in week.requests.items():
            if a == b:
                continue
            shared = set(_attendees(ra, rules)) & set(_attendees(rb, rules))
            order = 0
            if rules.precedence:
                order = 1 if a in rb.after else (-1 if b in ra.after else 0)
            info[(a, b)] = (bool(shared), any(week.people[p].campus for p in shared), order)
    return info


def _clash(a: Option, b: Option, pair: tuple[bool, bool, int], pad: int) -> bool:
    """Whether two options of different requests cannot both be booked."""
    overlap = a.start < b.end and b.start < a.end
    shared, campus, order = pair
    if overlap and (a.room == b.room or shared):
        return True
    if campus and a.building != b.building and b.start - a.end < pad and a.start - b.end < pad:
        return True
    return (order == 1 and b.start < a.end) or (order == -1 and a.start < b.end)


def _compatible(week: Week, rules: Rules, options: dict[str, list[Option]]) -> dict[tuple[str, int, str], int]:
    """For option i of request a and another request b: the mask of b's options that can be booked with it."""
    pairs = _pairs(week, rules)
    pad = week.buffer // SLOT if rules.buffer else 0
    cover: dict[str, dict[Any, list[int]]] = {}
    for rid, opts in options.items():
        table: dict[Any, list[int]] = {"all": [0] * (SLOTS + 1)}
        starts, ends = [0] * (SLOTS + 1), [0] * (SLOTS + 1)
        for index, option in enumerate(opts):
            bit = 1 << index
            for key in ("all", ("room", option.room), ("building", option.building)):
                row = table.setdefault(key, [0] * (SLOTS + 1))
                for slot in range(option.start, option.end):
                    row[slot] |= bit
            starts[option.start] |= bit
            ends[option.end] |= bit
        before, after = [0] * (SLOTS + 1), [0] * (SLOTS + 2)
        for slot in range(1, SLOTS + 1):
            before[slot] = before[slot - 1] | starts[slot - 1]  # options that start before this slot
        for slot in range(SLOTS, -1, -1):
            after[slot] = after[slot + 1] | (ends[slot + 1] if slot < SLOTS else 0)  # that end after it begins
        table["before"], table["after"] = before, after
        cover[rid] = table
    compat: dict[tuple[str, int, str], int] = {}
    for a, opts in options.items():
        for index, option in enumerate(opts):
            span = range(option.start, option.end)
            wide = range(max(0, option.start - pad), min(SLOTS, option.end + pad))
            for b in options:
                if b == a:
                    continue
                table, (shared, campus, order) = cover[b], pairs[(a, b)]
                room = table.get(("room", option.room))
                mask = 0
                for slot in span:
                    mask |= (room[slot] if room else 0) | (table["all"][slot] if shared else 0)
                if campus:
                    for building in week.buildings:
                        row = table.get(("building", building))
                        if building != option.building and row:
                            for slot in wide:
                                mask |= row[slot]
                if order == 1:
                    mask |= table["before"][option.end]
                elif order == -1:
                    mask |= table["after"][option.start]
                compat[(a, index, b)] = ((1 << len(options[b])) - 1) & ~mask
    return compat


def _low(mask: int) -> int:
    return (mask & -mask).bit_length() - 1


class _TooHard(Exception):
    """The search needed more nodes than the generator allows: the draw is replaced."""


def _solve(week: Week, rules: Rules = Rules(), limit: int = 2500) -> dict[str, Option] | None:
    """The plan with the smallest key: branch and bound with forward checking over option bitmasks."""
    options = _options(week, rules)
    if not all(options.values()):
        return None
    compat = _compatible(week, rules, options)
    best: list[Any] = [None, None]
    nodes = [0]

    def search(domains: dict[str, int], total: int, chosen: dict[str, int]) -> None:
        nodes[0] += 1
        if nodes[0] > limit:
            raise _TooHard
        if not domains:
            if best[0] is None or total < best[0]:
                best[0], best[1] = total, dict(chosen)
            return
        rid = min(domains, key=lambda r: (bin(domains[r]).count("1"), r))
        rest = {r: d for r, d in domains.items() if r != rid}
        mask = domains[rid]
        while mask:
            index = _low(mask)
            mask &= mask - 1
            key = options[rid][index].key
            narrowed = {r: d & compat[(rid, index, r)] for r, d in rest.items()}
            if not all(narrowed.values()):
                continue
            bound = total + key + sum(options[r][_low(d)].key for r, d in narrowed.items())
            if best[0] is not None and bound >= best[0]:
                if total + key + sum(options[r][_low(d)].key for r, d in rest.items()) >= best[0]:
                    break  # options come in key order: no later one can do better
                continue
            chosen[rid] = index
            search(narrowed, total + key, chosen)
            del chosen[rid]

    search({rid: (1 << len(opts)) - 1 for rid, opts in options.items()}, 0, {})
    week.nodes = nodes[0]
    return None if best[1] is None else {rid: options[rid][i] for rid, i in best[1].items()}


def _greedy(week: Week, rules: Rules = Rules()) -> dict[str, Option] | None:
    """Each request in id order at its best option that fits the ones already chosen (the myopic plan)."""
    options, pairs = _options(week, rules), _pairs(week, rules)
    pad = week.buffer // SLOT
    plan: dict[str, Option] = {}
    for rid in sorted(week.requests):
        pick = next((o for o in options[rid] if not any(_clash(o, other, pairs[(rid, r)], pad)
                                                         for r, other in plan.items())), None)
        if pick is None:
            return None
        plan[rid] = pick
    return plan


def _plan_cost(plan: dict[str, Option]) -> tuple[int, int]:
    return sum(o.cost for o in plan.values()), sum(o.change for o in plan.values())


def _draw_people(r: ItemRng, campus_offset: int) -> tuple[dict[str, Person], list[str]]:
    """Thirteen people: ten who attend the requests (six on campus, four remote) and three others."""
    remote = r.sample([o for o in REMOTE_OFFICES if o[1] != campus_offset and abs(o[1] - campus_offset) <= 420], 3)
    names = list(zip(r.sample(FIRST_NAMES, 13), r.sample(LAST_NAMES, 13)))
    offices = [("campus", campus_offset)] * 6 + [r.choice(remote) for _ in range(4)] + [
        ("campus", campus_offset), ("campus", campus_offset), r.choice(remote)]
    people: dict[str, Person] = {}
    for (first, last), (office, offset) in zip(names, offices):
        pid = (first[0] + last).lower()
        start = r.choice([450, 480, 510, 540])
        work = (start, min(1080, start + r.choice([480, 510, 540])))
        low = start + r.choice([60, 90, 120])
        prefer = (low, min(work[1] - 30, low + r.choice([180, 210, 240, 300])))
        people[pid] = Person(pid, f"{first} {last}", office, offset,
                             tuple(range(DAYS)), work, prefer)
    pool = list(people)[:10]
    for pid in r.sample(pool, r.randint(1, 2)):  # part-timers without one working day
        person = people[pid]
        skipped = r.randint(0, DAYS - 1)
        people[pid] = replace(person, days=tuple(d for d in person.days if d != skipped))
    return people, pool


def _draw_events(r: ItemRng, week: Week, pool: list[str]) -> None:
    """Everyone's week: busy and tentative blocks in or near working hours, some free events."""
    for pid, person in week.people.items():
        events: list[dict[str, Any]] = []
        for day in person.days:
            base = day * DAY - person.offset
            for _ in range(r.randint(1, 3) if pid in pool else r.randint(0, 2)):
                length = r.choice([30, 60, 60, 90, 120])
                local = r.randrange(person.work[0] - 30, person.work[1] - length + 31, SLOT)
                start, end = base + local, base + local + length
                if start < 0 or end > DAYS * DAY or any(e["start"] < end and start < e["end"] for e in events
                                                        if e["show_as"] != "free"):
                    continue
                tentative = r.randint(1, 4) == 1
                where = r.choice(week.buildings) if person.campus and r.randint(1, 10) <= 7 else "online"
                events.append({"start": start, "end": end, "show_as": "tentative" if tentative else "busy",
                               "where": where, "title": r.choice(HOLD_TITLES if tentative else EVENT_TITLES)})
            if r.randint(1, 10) <= 3:
                length = r.choice([30, 60])
                local = r.randrange(person.work[0], person.work[1] - length + 1, SLOT)
                events.append({"start": base + local, "end": base + local + length, "show_as": "free",
                               "where": "online", "title": r.choice(FREE_TITLES)})
        week.events[pid] = sorted(events, key=lambda e: (e["start"], e["end"]))


def _draw_rooms(r: ItemRng, week: Week) -> None:
    """Seven rooms in three buildings with distinct seat counts, most with video, each partly booked."""
    names = r.sample(ROOM_NAMES, 7)
    seats = r.sample([4, 5, 6, 8, 10, 12, 14, 16, 20], 7)
    homes = [week.buildings[i % 3] for i in range(6)] + [r.choice(week.buildings)]
    r.shuffle(homes)
    video = set(r.sample(range(7), 5))
    for index, name in enumerate(names):
        equipment = sorted((["video"] if index in video else []) + r.sample(["whiteboard", "projector", "screen"],
                                                                            r.randint(0, 2)))
        bookings: list[tuple[int, int]] = []
        for day in range(DAYS):
            for _ in range(r.randint(0, 3)):
                length = r.choice([60, 90, 120, 180])
                local = r.randrange(480, 1080 - length + 1, SLOT)
                start = day * DAY + local - week.campus_offset
                if not any(s < start + length and start < e for s, e in bookings):
                    bookings.append((start, start + length))
        busy = 0
        for start, end in bookings:
            busy |= _bits(start, end)
        week.rooms[f"rm-{name.lower()}"] = {"name": name, "building": homes[index], "seats": seats[index],
                                            "equipment": equipment, "bookings": sorted(bookings), "busy": busy}


def _utc_hours(person: Person) -> tuple[int, int]:
    return person.work[0] - person.offset, person.work[1] - person.offset


def _draw_requests(r: ItemRng, week: Week, pool: list[str]) -> None:
    """The requests, among the pool: attendees whose working hours overlap, guests, usual rooms, precedence."""
    ids = sorted(f"REQ-{n}" for n in distinct_ints(r, 100, 999, REQUESTS))
    titles = r.sample(REQUEST_TITLES, len(ids))
    campus = [p for p in pool if week.people[p].campus]
    drafts = []
    for rid, title in zip(ids, titles):
        duration = r.choice([30, 60, 60, 60, 90, 90])
        required = [r.choice(campus)]
        low, high = _utc_hours(week.people[required[0]])
        for pid in r.sample(pool, len(pool)):
            if len(required) >= r.choice([2, 3, 3, 4]):
                break
            a, b = _utc_hours(week.people[pid])
            if pid not in required and min(high, b) - max(low, a) >= duration + 90:
                required.append(pid)
                low, high = max(low, a), min(high, b)
        others = [p for p in pool if p not in required]
        optional = r.sample(others, r.choice([0, 0, 1, 1, 2]))
        guests = 0 if r.randint(1, 10) <= 6 else r.randint(1, 3)
        drafts.append([rid, title, duration, tuple(sorted(required)), tuple(sorted(optional)), guests])
    rank = {rid: i for i, rid in enumerate(r.sample(ids, len(ids)))}
    after: dict[str, list[str]] = {rid: [] for rid in ids}
    for _ in range(r.randint(2, 3)):
        a, b = r.sample(ids, 2)
        first, second = (a, b) if rank[a] < rank[b] else (b, a)
        if first not in after[second]:
            after[second].append(first)
    for rid, title, duration, required, optional, guests in drafts:
        req = Request(rid, title, duration, required, optional, guests, None, tuple(sorted(after[rid])))
        fitting = [room for room in week.rooms if week.room_fits(req, room)]
        usual = r.choice(fitting) if fitting and r.randint(0, 1) else None
        week.requests[rid] = replace(req, usual=usual)


def _draw_week(r: ItemRng) -> Week:
    monday = date(2026, 1, 5) + timedelta(weeks=r.randint(0, 100))
    campus, offset = r.choice(CAMPUSES)
    people, pool = _draw_people(r, offset)
    week = Week(monday, campus, offset, tuple(r.sample(BUILDINGS, 3)), r.choice([30, 60]), people, {}, {})
    _draw_events(r, week, pool)
    _draw_rooms(r, week)
    _draw_requests(r, week, pool)
    return week


def _improves(week: Week, rules: Rules, plan: dict[str, Option]) -> bool:
    """Whether, under misread rules, moving one request of the plan gives a smaller key (so a solver that misreads
    them books another plan)."""
    options, pairs = _options(week, rules), _pairs(week, rules)
    pad = week.buffer // SLOT if rules.buffer else 0
    for rid, current in plan.items():
        for option in options[rid]:
            if option.key >= current.key:
                break
            if not any(_clash(option, other, pairs[(rid, r)], pad) for r, other in plan.items() if r != rid):
                return True
    return False


def _free_slot(week: Week, pid: str, start: int, end: int, avoid: list[tuple[int, int]]) -> tuple[int, int] | None:
    """A half hour or hour inside [start, end) clear of the person's blocking events and the intervals to avoid."""
    taken = [(e["start"], e["end"]) for e in week.events[pid] if e["show_as"] != "free"] + avoid
    for length in (60, 30):
        for first in range(start, end - length + 1, SLOT):
            if not any(s < first + length and first < e for s, e in taken):
                return first, first + length
    return None


def _plant(r: ItemRng, week: Week, plan: dict[str, Option]) -> bool:
    """Plant the traps that leave the optimum alone: a free event over an optimal meeting (a solver that reads free
    as busy loses it), an optional attendee busy during one (a solver that treats optional attendees as required
    loses it), and, where one fits, a usual room too small once the guests are counted."""
    span = {rid: (o.start * SLOT, o.end * SLOT) for rid, o in plan.items()}
    rid = r.choice(sorted(plan))
    holder = r.choice(week.requests[rid].required)
    start, end = span[rid]
    week.events[holder].append({"start": start, "end": min(end, start + 60), "show_as": "free", "where": "online",
                                "title": r.choice(FREE_TITLES)})
    planted = False
    for rid in r.sample(sorted(plan), len(plan)):
        for pid in week.requests[rid].optional:
            mine = [span[k] for k, req in week.requests.items() if pid in req.required]
            slot = _free_slot(week, pid, *span[rid], mine)
            if slot and not planted:
                week.events[pid].append({"start": slot[0], "end": slot[1], "show_as": "busy", "where": "online",
                                         "title": r.choice(EVENT_TITLES)})
                planted = True
    if not planted:
        return False
    for rid in r.sample(sorted(plan), len(plan)):
        req = week.requests[rid]
        need = week.seats_needed(req)
        if not req.guests or req.usual is not None:
            continue
        for room_id in sorted(week.rooms, key=lambda k: week.rooms[k]["seats"]):
            if need - req.guests <= week.rooms[room_id]["seats"] < need and week.room_fits(req, room_id,
                                                                                          Rules(guests=False)):
                trial = replace(req, usual=room_id)
                week.requests[rid] = trial
                if _improves(week, Rules(guests=False), _rekeyed(week, plan)):
                    return True
                week.requests[rid] = req
    return True


def _rekeyed(week: Week, plan: dict[str, Option]) -> dict[str, Option]:
    """The plan's options with keys recomputed for the week's current requests (a usual room changed)."""
    options = _options(week, Rules())
    return {rid: next(o for o in options[rid] if (o.start, o.room) == (old.start, old.room))
            for rid, old in plan.items()}


def _traps_bite(week: Week, plan: dict[str, Option]) -> bool:
    """Whether the myopic plan is worse and ignoring travel buffers or tentative events changes the plan."""
    greedy = _greedy(week)
    if greedy is not None and _plan_cost(greedy) <= _plan_cost(plan):
        return False
    return all(_improves(week, rules, plan) for rules in (Rules(buffer=False), Rules(tentative_blocks=False)))


def _solved_week(rng: ItemRng) -> tuple[Week, dict[str, Option], int]:
    """The first draw whose optimum the search proves quickly and whose traps all bite, with its traps planted."""
    for attempt in range(400):
        r = rng.fork(f"week-{attempt}")
        week = _draw_week(r)
        try:
            plan = _solve(week)
        except _TooHard:
            continue
        if plan is None or not _plant(r, week, plan):
            continue
        plan = _rekeyed(week, plan)
        if _traps_bite(week, plan):
            return week, plan, attempt
    raise RuntimeError("no schedulable week found")  # never happens for the seeds the tests cover


_WHEN = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})[T ](\d{1,2}):(\d{2})(?::00)?\s*(?:Z|UTC|\+00:?00)?\s*$", re.IGNORECASE)


def _week_state(week: Week) -> dict[str, Any]:
    """Everything the campus services show, as JSON values."""
    return {
        "requests": {rid: {"request_id": rid, "title": q.title, "duration_minutes": q.duration,
                           "required": [week.people[p].name for p in q.required],
                           "optional": [week.people[p].name for p in q.optional], "external_guests": q.guests,
                           "usual_room": q.usual, "starts_after": list(q.after)} for rid, q in week.requests.items()},
        "people": {pid: {"person_id": pid, "name": p.name, "works": p.office, "time_zone": _zone(p.offset),
                         "working_days": [WEEKDAYS[d] for d in p.days],
                         "working_hours": f"{_clock(p.work[0])}-{_clock(p.work[1])}",
                         "preferred_hours": f"{_clock(p.prefer[0])}-{_clock(p.prefer[1])}"}
                   for pid, p in sorted(week.people.items())},
        "events": {pid: {f"ev-{i + 1}": {k: e[k] for k in ("start", "end", "show_as", "where", "title")}
                         for i, e in enumerate(sorted(events, key=lambda e: (e["start"], e["end"])))}
                   for pid, events in week.events.items()},
        "rooms": {rid: {"room_id": rid, "name": room["name"], "building": room["building"], "seats": room["seats"],
                        "equipment": room["equipment"], "bookings": [list(b) for b in room["bookings"]]}
                  for rid, room in sorted(week.rooms.items())},
        "bookings": {},
    }


class CampusEnv(Environment):
    """The campus services: the meeting request queue, the directory and calendars, rooms and bookings."""

    def __init__(self, week: Week, base: int, queue: str):
        super().__init__()
        self._week = week
        self._base = base
        self._queue = queue
        self.state = _week_state(week)

    def _active(self) -> dict[str, dict[str, Any]]:
        return {bid: b for bid, b in self.state["bookings"].items() if b["status"] == "active"}

    def _get(self, table: str, key: str, what: str) -> dict[str, Any]:
        record = self.state[table].get(_text(key, what))
        if record is None:
            raise ToolError(f"no {what.replace('_', ' ')} '{key.strip()}'")
        return record

    def _local(self, offset: int, minute: int) -> tuple[str, str]:
        local = minute + offset
        return str(self._week.monday + timedelta(days=local // DAY)), _clock(local % DAY)

    @tool("Documentation of the campus services. Topics: 'scheduling' (the hard rules every booking must meet), "
          "'calendars' (directory, time zones, hours, calendar events), 'rooms' (rooms, equipment, booking).",
          {"topic": {"type": "string", "enum": list(MEETING_DOCS)}})
    def describe_api(self, topic: str) -> Any:
        return {"topic": topic, "text": MEETING_DOCS[topic].format(buffer=self._week.buffer)}

    @tool("Meeting requests: one page of the queue (request id, title, duration).", {"page": {"type": "integer"}})
    def list_requests(self, page: int) -> Any:
        rows = [{k: q[k] for k in ("request_id", "title", "duration_minutes")} for q in self.state["requests"].values()]
        listing = _paged(rows, page, REQUEST_PAGE)
        return {"queue": self._queue, "page": page, "pages": listing["pages"], "requests": listing["rows"]}

    @tool("Meeting requests: one request in full.", {"request_id": {"type": "string"}})
    def get_request(self, request_id: str) -> Any:
        return copy.deepcopy(self._get("requests", request_id.upper(), "request_id"))

    @tool("Directory: one page of people (person id, name, where they work).", {"page": {"type": "integer"}})
    def list_people(self, page: int) -> Any:
        rows = [{k: p[k] for k in ("person_id", "name", "works")} for p in self.state["people"].values()]
        listing = _paged(rows, page, PEOPLE_PAGE)
        return {"page": page, "pages": listing["pages"], "people": listing["rows"]}

    @tool("Directory: one person in full (time zone, working days and hours, preferred hours).",
          {"person_id": {"type": "string"}})
    def get_person(self, person_id: str) -> Any:
        return copy.deepcopy(self._get("people", person_id.lower(), "person_id"))

    @tool("Calendars: one page of a person's events in the planning week, in their local time.",
          {"person_id": {"type": "string"}, "page": {"type": "integer"}})
    def get_calendar(self, person_id: str, page: int) -> Any:
        person = self._get("people", person_id.lower(), "person_id")
        pid, offset = person["person_id"], self._week.people[person["person_id"]].offset
        entries = [(e["start"], e["end"], e["show_as"], e["where"], e["title"])
                   for e in self.state["events"][pid].values()]
        requests = self._week.requests
        entries += [(b["start"], b["end"], "busy", self._week.rooms[b["room_id"]]["building"],
                     f"{requests[b['request_id']].title} (booked by you)")
                    for b in self._active().values() if pid in requests[b["request_id"]].required]
        rows = []
        for start, end, shown, where, title in sorted(entries):
            day, clock = self._local(offset, start)
            rows.append([day, clock, self._local(offset, end)[1], shown, where, title])
        listing = _paged(rows, page, CALENDAR_PAGE)
        return {"person_id": pid, "times": f"local, {person['time_zone']}", "page": page,
                "pages": listing["pages"], "columns": EVENT_COLUMNS, "events": listing["rows"]}

    @tool("Rooms: one page of the campus rooms (room id, name, building, seats).", {"page": {"type": "integer"}})
    def list_rooms(self, page: int) -> Any:
        rows = [{k: room[k] for k in ("room_id", "name", "building", "seats")} for room in self.state["rooms"].values()]
        listing = _paged(rows, page, ROOM_PAGE)
        return {"page": page, "pages": listing["pages"], "rooms": listing["rows"]}

    @tool("Rooms: one room in full: equipment and its bookings in the planning week (UTC), yours included.",
          {"room_id": {"type": "string"}})
    def get_room(self, room_id: str) -> Any:
        room = self._get("rooms", room_id.lower(), "room_id")
        taken = [(s, e, "booked") for s, e in room["bookings"]] + [
            (b["start"], b["end"], f"you ({b['request_id']})") for b in self._active().values()
            if b["room_id"] == room["room_id"]]
        week = self._week
        return {**{k: room[k] for k in ("room_id", "name", "building", "seats", "equipment")}, "times": "UTC",
                "columns": BOOKING_COLUMNS, "bookings": [[week.utc_text(s)[:10], _clock(s % DAY), _clock(e % DAY), who]
                                                         for s, e, who in sorted(taken)]}

    def _start(self, start_utc: str, duration: int) -> int:
        match = _WHEN.match(start_utc)
        if not match:
            raise ToolError(f"start_utc '{start_utc}' is not of the form YYYY-MM-DD HH:MM (UTC)")
        try:
            day = (date.fromisoformat(match.group(1)) - self._week.monday).days
        except ValueError:
            raise ToolError(f"'{match.group(1)}' is not a valid date") from None
        hour, minute = int(match.group(2)), int(match.group(3))
        if hour > 23 or minute > 59:
            raise ToolError(f"'{start_utc}' is not a valid time")
        if minute % SLOT:
            raise ToolError("meetings start on the hour or half hour")
        start = day * DAY + hour * 60 + minute
        if start < 0 or start + duration > DAYS * DAY:
            raise ToolError(f"the meeting must lie inside the planning week {self._week.utc_text(0)} to "
                            f"{self._week.utc_text(DAYS * DAY)} UTC")
        return start

    @tool("Bookings: book a request's meeting in a room (see describe_api 'rooms'). Returns the booking.",
          {"request_id": {"type": "string"}, "start_utc": {"type": "string", "description": "YYYY-MM-DD HH:MM, UTC"},
           "room_id": {"type": "string"}})
    def book_meeting(self, request_id: str, start_utc: str, room_id: str) -> Any:
        req = self._get("requests", request_id.upper(), "request_id")
        room = self._get("rooms", room_id.lower(), "room_id")
        start = self._start(start_utc, req["duration_minutes"])
        end = start + req["duration_minutes"]
        active = self._active()
        held = [bid for bid, b in active.items() if b["request_id"] == req["request_id"]]
        if held:
            raise ToolError(f"{req['request_id']} is already booked ({held[0]}); cancel it first")
        if any(s < end and start < e for s, e in room["bookings"]) or any(
                b["room_id"] == room["room_id"] and b["start"] < end and start < b["end"] for b in active.values()):
            raise ToolError(f"{room['room_id']} is booked at that time")
        booking_id = f"BK-{self._base + len(self.state['bookings'])}"
        self.state["bookings"][booking_id] = {"request_id": req["request_id"], "room_id": room["room_id"],
                                              "start": start, "end": end, "status": "active"}
        return self._view(booking_id)

    def _view(self, booking_id: str) -> dict[str, Any]:
        b = self.state["bookings"][booking_id]
        req = self.state["requests"][b["request_id"]]
        return {"booking_id": booking_id, "request_id": b["request_id"], "room_id": b["room_id"],
                "start_utc": self._week.utc_text(b["start"]), "end_utc": self._week.utc_text(b["end"]),
                "invited": req["required"] + req["optional"], "status": b["status"]}

    @tool("Bookings: cancel one of your bookings (the room is released, the invitations withdrawn).",
          {"booking_id": {"type": "string"}})
    def cancel_booking(self, booking_id: str) -> Any:
        booking = self._get("bookings", booking_id.upper(), "booking_id")
        if booking["status"] != "active":
            raise ToolError(f"booking {booking_id.strip().upper()} is already cancelled")
        booking["status"] = "cancelled"
        return {"booking_id": booking_id.strip().upper(), "status": "cancelled"}

    @tool("Bookings: the bookings you made, with their status.")
    def list_bookings(self) -> Any:
        return [self._view(bid) for bid in self.state["bookings"]]


@dataclass
class MeetingWorld:
    """A solved week: the optimum, the booking numbers and the names in the prompt."""

    week: Week
    plan: dict[str, Option]
    base: int
    queue: str
    company: str
    programme: str

    @property
    def cost(self) -> int:
        return _plan_cost(self.plan)[0]


MEETING_CHECKS = (
    Check("all_booked", "Every request is booked exactly once and nothing else is booked."),
    Check("hard_rules", "Every booking meets every scheduling rule: hours, calendars, travel buffers, room seats, "
                        "video and availability, precedence."),
    Check("optimal_times", "Every request starts when the optimal plan (objective, then the stated tie-breaks) "
                           "starts it.", 2.0),
    Check("optimal_rooms", "Every request is in the optimal plan's room."),
    Check("answer", "The answer states the optimal plan's total attendee-minutes outside preferred hours."),
)


def meeting_schedule(rng: ItemRng) -> AgTask:
    """Book a week of meeting requests at the optimum of a stated objective, across time zones, buildings and rooms."""
    week, plan, _ = _solved_week(rng.fork("week"))
    world = MeetingWorld(week, plan, 1000 * rng.randint(2, 9) + rng.randint(0, 899), f"Q-{rng.randint(1000, 9999)}",
                         rng.choice(COMPANIES), rng.choice(PROGRAMMES))
    reference, wasteful = _meeting_scripts(world)
    return AgTask(_meeting_prompt(world), lambda: CampusEnv(world.week, world.base, world.queue), MEETING_CHECKS,
                  lambda env, answer: _check_week(world, env, answer), reference, wasteful)


def _meeting_prompt(world: MeetingWorld) -> str:
    week = world.week
    return (
        f"You coordinate the {world.programme} programme at {world.company}, whose campus is in {week.campus}. Book "
        f"every meeting request in the programme's queue {world.queue} (list_requests) into the planning week that "
        f"starts on Monday {week.monday.isoformat()}. The hard scheduling rules are in describe_api (topic "
        "'scheduling'); the directory, calendars and rooms are documented there too.\n\n"
        "Of all the plans that book every request once and meet every rule, book the best one, judged in this "
        "order:\n"
        "1. The fewest attendee-minutes outside preferred hours in total: for each meeting and each of its required "
        "attendees, the minutes of the meeting that fall outside that attendee's preferred hours (their local time).\n"
        "2. Then the fewest room changes: a room change is a meeting whose request names a usual room and that is "
        "booked in another room.\n"
        "3. Then the earliest starts: compare the plans request by request in ascending request id order; the first "
        "request the plans start at different times decides, and the earlier start wins.\n"
        "4. Then the smaller rooms: in the same order, the first request the plans put in rooms with different seat "
        "counts decides, and fewer seats win.\n"
        "Book each request exactly once and nothing else.\n\n"
        "When you are done, call submit with the booking ids and the plan's total attendee-minutes outside preferred "
        "hours.")


def _check_week(world: MeetingWorld, env: Environment, answer: str | None) -> dict[str, bool]:
    week, plan = world.week, world.plan
    active = [b for b in env.state["bookings"].values() if b["status"] == "active"]
    by_request = {b["request_id"]: b for b in active}
    complete = len(active) == len(by_request) == len(week.requests)
    options, pairs = _options(week, Rules()), _pairs(week, Rules())
    chosen = {rid: next((o for o in options[rid] if o.start * SLOT == b["start"] and o.room == b["room_id"]), None)
              for rid, b in by_request.items()}
    valid = complete and all(chosen.values()) and not any(
        _clash(chosen[a], chosen[b], pairs[(a, b)], week.buffer // SLOT) for a in chosen for b in chosen if a < b)
    return {
        "all_booked": complete,
        "hard_rules": valid,
        "optimal_times": complete and all(by_request[rid]["start"] == o.start * SLOT for rid, o in plan.items()),
        "optimal_rooms": complete and all(by_request[rid]["room_id"] == o.room for rid, o in plan.items()),
        "answer": complete and world.cost in signed_integers(answer or ""),
    }


def _meeting_reads(world: MeetingWorld) -> list[Call]:
    """What an efficient agent reads: the documentation, every request, the directory, each required attendee and
    their calendar, and every room."""
    week, state = world.week, _week_state(world.week)
    pages = lambda n, size: range(1, max(1, -(-n // size)) + 1)  # noqa: E731
    required = list(dict.fromkeys(p for rid in sorted(week.requests) for p in week.requests[rid].required))
    return [*[Call("describe_api", {"topic": t}) for t in MEETING_DOCS],
            *[Call("list_requests", {"page": p}) for p in pages(len(week.requests), REQUEST_PAGE)],
            *[Call("get_request", {"request_id": rid}) for rid in sorted(week.requests)],
            *[Call("list_people", {"page": p}) for p in pages(len(week.people), PEOPLE_PAGE)],
            *[Call("get_person", {"person_id": pid}) for pid in required],
            *[Call("get_calendar", {"person_id": pid, "page": p}) for pid in required
              for p in pages(len(state["events"][pid]), CALENDAR_PAGE)],
            *[Call("list_rooms", {"page": p}) for p in pages(len(week.rooms), ROOM_PAGE)],
            *[Call("get_room", {"room_id": room}) for room in sorted(week.rooms)]]


def _meeting_scripts(world: MeetingWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one that rereads and books one request in a wrong room first."""
    week, plan = world.week, world.plan
    reads = _meeting_reads(world)
    books = [Call("book_meeting", {"request_id": rid, "start_utc": week.utc_text(o.start * SLOT), "room_id": o.room})
             for rid, o in sorted(plan.items())]

    def answer(first: int) -> Call:
        ids = ", ".join(f"{rid} {'BK-'}{world.base + first + i}" for i, rid in enumerate(sorted(plan)))
        return Call("submit", {"answer": f"Booked {ids}. Total attendee-minutes outside preferred hours: "
                                         f"{world.cost}; room changes: {_plan_cost(plan)[1]}."})

    first_id, first = sorted(plan.items())[0]
    span = (first.start * SLOT, first.end * SLOT)
    free = [(start, room) for start in [span[0]] + list(range(0, DAYS * DAY - (span[1] - span[0]), SLOT))
            for room in sorted(week.rooms) if room != first.room and not any(
                s < start + span[1] - span[0] and start < e for s, e in week.rooms[room]["bookings"])]
    start, wrong = free[0]
    detour = [Call("book_meeting", {**books[0].args, "start_utc": week.utc_text(start), "room_id": wrong}),
              Call("cancel_booking", {"booking_id": f"BK-{world.base}"})]
    wasteful = (*reads[:4], reads[3], *reads[4:8], reads[5], *reads[8:], *detour, *books, answer(1))
    return (*reads, *books, answer(0)), wasteful


# ---------------------------------------------------------------- task 2: a two-city business trip

HOMES = (("Denver", "DEN"), ("Dallas", "DFW"), ("Atlanta", "ATL"), ("Phoenix", "PHX"), ("Miami", "MIA"),
         ("Minneapolis", "MSP"), ("Houston", "IAH"), ("Salt Lake City", "SLC"), ("Charlotte", "CLT"),
         ("Nashville", "BNA"))
CORRIDORS = ((("Boston", "BOS"), ("New York", "LGA")), (("New York", "LGA"), ("Philadelphia", "PHL")),
             (("Philadelphia", "PHL"), ("Washington", "DCA")), (("Seattle", "SEA"), ("Portland", "PDX")),
             (("San Diego", "SAN"), ("Los Angeles", "LAX")), (("Montreal", "YUL"), ("Toronto", "YYZ")),
             (("Chicago", "ORD"), ("Milwaukee", "MKE")), (("Washington", "DCA"), ("Baltimore", "BWI")))
CARRIERS = (("Aerolis", "AL"), ("Bluejet", "BJ"), ("Corvid Air", "CV"))
RAIL = ("Corridor Rail", "CR")
CLASSES = ("Saver", "Standard", "Flex")
RAIL_CLASSES = ("Value", "Flexi")
CHAINS = ("Harbor Suites", "Lumen Hotels", "Stayway", "Parkline Inn", "Redwood House", "Nomad Rooms")
HOTEL_WORDS = ("Central", "Riverside", "Grand", "Plaza", "Station", "Garden", "Midtown", "Harbor", "Union", "Park")
TRAVELLERS = ("Dana Whitfield", "Marcus Oyelaran", "Ines Carvalho", "Theo Lindgren", "Rhea Kapoor", "Owen Blackwood",
              "Lucia Ferraro", "Sam Achterberg")
CLIENTS = ("Norvale Bank", "Kestrel Freight", "Auric Health", "Bluefin Media", "Tessaro Retail", "Calder Energy")
CONFERENCES = ("CloudScale Summit", "DataOps World", "FinTech Forum", "DevSecCon", "RetailTech Expo", "ML Systems Days")
TRANSFER_LEAD = {"flight": 120, "train": 45}  # minutes a departure transfer leaves the hotel before the service
WORKSHOP, CONFERENCE = (540, 1020), (540, 1050)
FARE_COLUMNS = ["fare_id", "class", "price"]
AFTER_EVENT = 120  # a same-day departure leaves at least this long after the event ends
TRIP_DOCS = {
    "fares": (
        "Fares. search_flights lists a route's flights on one date (times local at each airport) with their fares: "
        "fare_id, class and price; search_trains lists Corridor Rail trains between two cities the same way. A "
        "fare's rules depend only on its carrier and class: get_fare_rules(carrier, fare_class) gives the checked "
        "bags included, the fee per checked bag beyond them (per flight), whether it is refundable and its change "
        "fee (null: no changes). A change moves a ticket to another flight of the same carrier, route and class: "
        "you pay the change fee plus the fare difference when the new flight's fare in that class is higher than "
        "the fare paid (nothing comes back when it is lower), and the ticket keeps its bags. Loyalty benefits and "
        "company deals are on the traveller's profile (get_traveller)."),
    "hotels": (
        "Hotels. search_hotels lists a city's hotels: hotel_id, name, chain and distance to the city's event venue. "
        "get_hotel adds the rate plans (rate_id, plan, posted nightly room rate, cancellation), the nightly fee (city "
        "tax and resort fee, charged every night on top of the room rate and never discounted) and the ground "
        "transfers between the hotel and the city's airport and station: mode, price per ride and the hours a ride "
        "may start (HH:MM-HH:MM, end exclusive; taxis run around the clock)."),
    "bookings": (
        "Bookings. book_flight(fare_id, checked_bags) charges the fare plus the fees of bags beyond the allowance, "
        "after the traveller's bag benefits; book_train(fare_id) charges the fare; book_hotel(rate_id, check_in, "
        "check_out) charges nights x (posted rate + nightly fee). book_transfer(hotel_id, booking_id, mode) books "
        "the ride between the hotel and the airport or station of a flight or train booking that arrives in or "
        "leaves from the hotel's city: an arriving ride starts when the service arrives, a departing ride leaves "
        "the hotel 120 minutes before a flight and 45 minutes before a train; a mode that does not run then is "
        "refused. change_flight(booking_id, fare_id) changes a ticket (see 'fares'). cancel_booking refunds "
        "refundable bookings and transfers in full and keeps the whole charge of non-refundable ones. Discounts "
        "that need a threshold are not taken off at booking: list_bookings shows the trip statement, with the "
        "discounts the active bookings earn and the total charged."),
}


@dataclass(frozen=True)
class Service:
    """A flight or a train on one date; times are local minutes of the day at each end."""

    number: str
    mode: str
    carrier: str
    origin: str  # an airport code, or a city for trains
    destination: str
    day: date
    departs: int
    arrives: int
    fares: tuple[tuple[str, str, int], ...]  # (fare_id, class, price in dollars)


@dataclass(frozen=True)
class TripRules:
    """The pricing a solver applies; traps misread one part."""

    bags: bool = True
    corporate: str = "threshold"  # or "never", "always"
    chain: str = "threshold"
    cap: bool = True
    transfers: bool = True


@dataclass
class Trip:
    """One trip instance."""

    trip_id: str
    traveller: str
    traveller_id: str
    home: tuple[str, str]
    first: tuple[str, str]  # the workshop city and airport
    second: tuple[str, str]  # the conference city and airport
    workshop: date
    client: str
    conference: str
    status: str  # the carrier whose first checked bag is free
    corporate: str  # the carrier of the company deal
    corporate_pct: int
    chain: str
    chain_pct: int
    max_km: int  # tenths of a kilometre
    cap: dict[str, int]  # city -> the highest posted nightly rate the policy allows
    services: dict[str, Service] = field(default_factory=dict)
    fare_rules: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    hotels: dict[str, dict[str, Any]] = field(default_factory=dict)
    existing: dict[str, Any] = field(default_factory=dict)

    def fare(self, fare_id: str) -> tuple[Service, str, int]:
        for service in self.services.values():
            for fid, cls, price in service.fares:
                if fid == fare_id:
                    return service, cls, price
        raise KeyError(fare_id)

    def city_of(self, hub: str) -> str:
        for city, code in (self.home, self.first, self.second):
            if hub in (city, code):
                return city
        raise KeyError(hub)

    def legs(self) -> tuple[tuple[str, str, tuple[date, ...]], ...]:
        """The three legs: origin city, destination city and the allowed departure dates."""
        w = self.workshop
        return ((self.home[0], self.first[0], (w - timedelta(days=2), w - timedelta(days=1))),
                (self.first[0], self.second[0], (w, w + timedelta(days=1))),
                (self.second[0], self.home[0], (w + timedelta(days=3), w + timedelta(days=4))))

    def leg_ok(self, leg: int, service: Service) -> bool:
        """Whether a service may carry a leg: route, date and the same-day gap after the event."""
        origin, destination, days = self.legs()[leg]
        if self.city_of(service.origin) != origin or self.city_of(service.destination) != destination:
            return False
        if service.day not in days:
            return False
        event_end = {1: WORKSHOP[1], 2: CONFERENCE[1]}.get(leg)
        return not (event_end is not None and service.day == days[0] and service.departs < event_end + AFTER_EVENT)

    def bag_fee(self, service: Service, cls: str, rules: TripRules = TripRules()) -> int:
        """Dollars for one checked bag on a flight under the fare rules and the status benefit."""
        if service.mode == "train" or not rules.bags:
            return 0
        rule = self.fare_rules[(service.carrier, cls)]
        if rule["bags_included"] >= 1 or service.carrier == self.status:
            return 0
        return rule["bag_fee"]

    def transfer(self, hotel_id: str, hub_kind: str, minute: int) -> tuple[str, int] | None:
        """The cheapest mode (and its price in dollars) between a hotel and its city's hub that runs at a minute."""
        best = None
        for option in self.hotels[hotel_id]["transfers"][hub_kind]:
            low, high = option["hours"]
            if low <= minute % DAY < high and (best is None or option["price"] < best[1]):
                best = (option["mode"], option["price"])
        return best


def _draw_fare_rules(r: ItemRng) -> dict[tuple[str, str], dict[str, Any]]:
    rules = {}
    for carrier, _ in CARRIERS:
        bag = 5 * r.randint(6, 9)
        rules[(carrier, "Saver")] = {"bags_included": 0, "bag_fee": bag, "refundable": False, "change_fee": None}
        rules[(carrier, "Standard")] = {"bags_included": 1, "bag_fee": bag, "refundable": False,
                                        "change_fee": 5 * r.randint(20, 40)}
        rules[(carrier, "Flex")] = {"bags_included": 1, "bag_fee": bag, "refundable": True, "change_fee": 0}
    rules[(RAIL[0], "Value")] = {"bags_included": 2, "bag_fee": 0, "refundable": False, "change_fee": None}
    rules[(RAIL[0], "Flexi")] = {"bags_included": 2, "bag_fee": 0, "refundable": True, "change_fee": None}
    return rules


def _draw_services(r: ItemRng, trip: Trip, fare_ids: list[str]) -> None:
    """Flights for the three legs, the trains between the two cities, and the ticket already bought."""
    ids = iter(fare_ids)
    numbers: set[str] = set()

    def add(mode: str, carrier: tuple[str, str], origin: str, destination: str, day: date, departs: int,
            duration: int, saver: int, classes: tuple[str, ...]) -> Service:
        while True:
            number = f"{carrier[1]} {r.randint(100, 999) if mode == 'flight' else r.randint(1000, 2999)}"
            if number not in numbers:
                numbers.add(number)
                break
        steps = {"Saver": 0, "Standard": r.randint(7, 15) * 5, "Flex": r.randint(24, 44) * 5, "Value": 0,
                 "Flexi": r.randint(4, 9) * 5}
        fares = tuple((next(ids), cls, saver + steps[cls]) for cls in classes)
        service = Service(number, mode, carrier[0], origin, destination, day, departs, departs + duration, fares)
        trip.services[number] = service
        return service

    legs = trip.legs()
    hubs = {trip.home[0]: trip.home[1], trip.first[0]: trip.first[1], trip.second[0]: trip.second[1]}
    for leg, (origin, destination, days) in enumerate(legs):
        duration = r.randint(30, 54) * 5 if leg != 1 else r.randint(11, 16) * 5
        base = r.randint(120, 230) if leg != 1 else r.randint(45, 110)
        # the day before the workshop and the conference's last evening cost more
        peak = r.randint(12, 40) * 5 if leg == 0 else r.randint(20, 60) * 5
        for index, day in enumerate(days):
            count = 4 if leg == 0 or index else 3
            for k in range(count):
                late = leg and index == 0 and k < count - 1  # same-day departures mostly after the event
                length = duration + r.randint(-3, 3) * 5
                last = 1300 if leg == 2 else 1430 - length  # only the flight home may land after midnight
                departs = r.randrange(1140 if leg == 1 else 1170, last, 5) if late else r.randrange(
                    360, min(1260, last), 5)
                add("flight", r.choice(CARRIERS), hubs[origin], hubs[destination], day, departs, length,
                    base + r.randint(0, 70) + peak * (index == (1 if leg == 0 else 0)) * (leg != 1), CLASSES)
    rail_time = r.randint(20, 30) * 5
    for index, day in enumerate(legs[1][2]):
        for k in range(4):
            departs = r.randrange(1140, 1430 - rail_time, 5) if index == 0 and k < 2 else r.randrange(360, 1200, 5)
            add("train", RAIL, trip.first[0], trip.second[0], day, departs, rail_time, r.randint(70, 150),
                RAIL_CLASSES)
    carrier = r.choice([c for c in CARRIERS if c[0] != trip.corporate])
    held = add("flight", carrier, hubs[legs[2][0]], hubs[legs[2][1]], legs[2][2][0], r.randrange(900, 1110, 5),
               r.randint(30, 54) * 5, r.randint(150, 250), CLASSES)
    for day in legs[2][2]:  # the ticket's carrier also flies home later, so it can be changed
        add("flight", carrier, held.origin, held.destination, day, r.randrange(1170, 1300, 5) if day == held.day
            else r.randrange(420, 1200, 5), held.arrives - held.departs, r.randint(140, 260), CLASSES)
    standard = next(f for f in held.fares if f[1] == "Standard")
    trip.existing = {"booking_id": f"TK-{r.randint(100000, 999999)}", "fare_id": standard[0],
                     "paid": standard[2] - r.randint(0, 15) * 5}


def _draw_hotels(r: ItemRng, trip: Trip, hotel_ids: list[int], rate_ids: list[int]) -> None:
    ids, rates = iter(hotel_ids), iter(rate_ids)
    others = [c for c in CHAINS if c != trip.chain]
    for city, low, high in ((trip.first[0], 18, 36), (trip.second[0], 26, 52)):
        words = r.sample(HOTEL_WORDS, 5)
        members = set(r.sample(range(5), r.randint(1, 2)))
        for index, word in sorted(enumerate(words), key=lambda _: r.random()):
            chain = trip.chain if index in members else r.choice(others)
            posted = r.randint(low, high) * 5
            airport = [{"mode": "taxi", "price": r.randint(38, 72), "hours": (0, DAY)}]
            if r.randint(1, 10) <= 4:
                airport.append({"mode": "shuttle", "price": 0, "hours": r.choice([(360, 1320), (330, 1380)])})
            if r.randint(1, 10) <= 5:
                airport.append({"mode": "rail link", "price": r.randint(9, 14), "hours": r.choice([(330, 1410),
                                                                                                 (360, 1440)])})
            station = [{"mode": "taxi", "price": r.randint(9, 26), "hours": (0, DAY)}]
            if r.randint(1, 10) <= 3:
                station.append({"mode": "walk", "price": 0, "hours": (0, DAY)})
            hotel_id = f"H-{next(ids)}"
            trip.hotels[hotel_id] = {
                "hotel_id": hotel_id, "name": f"{chain.split()[0]} {word} {city}", "chain": chain, "city": city,
                "distance": r.randint(3, trip.max_km) if index < 3 else r.randint(3, 60),
                "nightly_fee": r.randint(8, 50),
                "rates": {f"R-{next(rates)}": {"plan": "Flexible", "posted": posted, "refundable": True},
                          f"R-{next(rates)}": {"plan": "Saver", "posted": posted - r.randint(3, 9) * 5,
                                               "refundable": False}},
                "transfers": {"airport": airport, "station": station}}


def _draw_trip(r: ItemRng) -> Trip:
    home = r.choice(HOMES)
    first, second = r.choice(CORRIDORS)
    if r.randint(0, 1):
        first, second = second, first
    status, corporate = r.sample([c[0] for c in CARRIERS], 2)
    trip = Trip(f"TRIP-{r.randint(10000, 99999)}", r.choice(TRAVELLERS), f"EMP-{r.randint(1000, 9999)}", home, first,
                second, date(2026, 1, 5) + timedelta(days=r.randint(0, 320)), r.choice(CLIENTS),
                r.choice(CONFERENCES), status, corporate, r.choice([15, 20, 25]), r.choice(CHAINS),
                r.choice([15, 20, 25]), r.choice([25, 30, 35]), {})
    trip.fare_rules = _draw_fare_rules(r)
    _draw_services(r, trip, [f"F-{n}" for n in distinct_ints(r, 10000, 99999, 110)])
    _draw_hotels(r, trip, distinct_ints(r, 100, 999, 10), distinct_ints(r, 1000, 9999, 20))
    return trip


@dataclass(frozen=True)
class LegOption:
    """One way to fly or ride one leg: a new ticket, or the held ticket changed to another flight."""

    leg: int
    kind: str  # "new" or "change"
    fare_id: str
    service: Service
    cls: str
    charge: int  # cents charged when booked: fare and bag fee, or change fee and fare difference
    fare: int  # cents of fare a company deal discounts (new tickets of the deal's carrier), else 0


def _leg_options(trip: Trip, rules: TripRules) -> list[list[LegOption]]:
    found: list[list[LegOption]] = [[], [], []]
    held_service, held_class, _ = trip.fare(trip.existing["fare_id"])
    change_fee = trip.fare_rules[(held_service.carrier, held_class)]["change_fee"]
    for service in trip.services.values():
        for leg in range(3):
            if not trip.leg_ok(leg, service):
                continue
            for fare_id, cls, price in service.fares:
                charge = 100 * (price + trip.bag_fee(service, cls, rules))
                deal = 100 * price if service.carrier == trip.corporate else 0
                found[leg].append(LegOption(leg, "new", fare_id, service, cls, charge, deal))
                if leg == 2 and service.carrier == held_service.carrier and cls == held_class:
                    extra = change_fee + max(0, price - trip.existing["paid"])
                    found[leg].append(LegOption(leg, "change", fare_id, service, cls, 100 * extra, 0))
    return found


def _stay_options(trip: Trip, city: str, rules: TripRules) -> list[tuple[str, str]]:
    """(hotel, rate) pairs the policy allows in a city."""
    return [(hid, rid) for hid, hotel in trip.hotels.items() if hotel["city"] == city
            and hotel["distance"] <= trip.max_km for rid, rate in hotel["rates"].items()
            if rate["refundable"] and (not rules.cap or rate["posted"] <= trip.cap[city])]


def _hub(service: Service) -> str:
    return "airport" if service.mode == "flight" else "station"


def _ride(trip: Trip, hotel: str, service: Service, arriving: bool, rules: TripRules) -> int:
    """Cents of the cheapest transfer for one arrival or departure."""
    minute = service.arrives if arriving else service.departs - TRANSFER_LEAD[service.mode]
    best = trip.transfer(hotel, _hub(service), minute)
    return 100 * best[1] if rules.transfers and best else 0


def _stay_cost(trip: Trip, stays: tuple[tuple[str, str], tuple[str, str]], nights: tuple[int, int],
               rules: TripRules) -> int:
    chain_nights = sum(n for (hid, _), n in zip(stays, nights) if trip.hotels[hid]["chain"] == trip.chain)
    earned = rules.chain == "always" or (rules.chain == "threshold" and chain_nights >= 3)
    total = 0
    for (hid, rid), n in zip(stays, nights):
        hotel = trip.hotels[hid]
        posted = 100 * hotel["rates"][rid]["posted"]
        off = posted * trip.chain_pct // 100 if earned and hotel["chain"] == trip.chain else 0
        total += n * (posted - off + 100 * hotel["nightly_fee"])
    return total


@dataclass(frozen=True)
class TripPlan:
    """An itinerary: the three legs, the two stays and the cheapest transfer of each arrival and departure."""

    cost: int  # cents
    legs: tuple[LegOption, LegOption, LegOption]
    stays: tuple[tuple[str, str], tuple[str, str]]

    @property
    def nights(self) -> tuple[int, int]:
        one, two, three = self.legs
        return (two.service.day - one.service.day).days, (three.service.day - two.service.day).days


def _ranked(trip: Trip, rules: TripRules, options: list[LegOption], leg: int, first: str | None,
            second: str | None) -> dict[str, list[tuple[int, LegOption]]]:
    """A leg's options with the transfers they need, cheapest first: without the deal's carrier ('plain'), and with
    it at full price and with the deal taken off."""
    groups: dict[str, list[tuple[int, LegOption]]] = {"plain": [], "deal": [], "full": []}
    for o in options:
        if leg == 0:
            cost = o.charge + _ride(trip, first, o.service, True, rules)
        elif leg == 1:
            cost = o.charge + _ride(trip, first, o.service, False, rules) + _ride(trip, second, o.service, True, rules)
        else:
            cost = o.charge + _ride(trip, second, o.service, False, rules)
        if o.fare:
            groups["full"].append((cost, o))
            groups["deal"].append((cost - o.fare * trip.corporate_pct // 100, o))
        else:
            groups["plain"].append((cost, o))
    return {k: sorted(v, key=lambda x: (x[0], x[1].fare_id)) for k, v in groups.items()}


def _trip_plans(trip: Trip, rules: TripRules = TripRules()) -> tuple[TripPlan | None, bool]:
    """The cheapest itinerary and whether it is the only one at that cost: every date pattern and pair of stays,
    then per leg the cheapest option with and without the company deal's carrier (the deal couples the legs)."""
    legs, dates = _leg_options(trip, rules), [leg[2] for leg in trip.legs()]
    stays = [_stay_options(trip, trip.first[0], rules), _stay_options(trip, trip.second[0], rules)]
    by_day = {(i, d): [o for o in legs[i] if o.service.day == d] for i in range(3) for d in dates[i]}
    ranked: dict[tuple[Any, ...], dict[str, list[tuple[int, LegOption]]]] = {}
    for d in dates[0]:
        for one in stays[0]:
            ranked[(0, d, one[0])] = _ranked(trip, rules, by_day[(0, d)], 0, one[0], None)
    for d in dates[2]:
        for two in stays[1]:
            ranked[(2, d, two[0])] = _ranked(trip, rules, by_day[(2, d)], 2, None, two[0])
    for d in dates[1]:
        for one in stays[0]:
            for two in stays[1]:
                ranked[(1, d, one[0], two[0])] = _ranked(trip, rules, by_day[(1, d)], 1, one[0], two[0])
    candidates: list[tuple[int, bool, TripPlan]] = []
    for days in [(a, b, c) for a in dates[0] for b in dates[1] for c in dates[2]]:
        nights = ((days[1] - days[0]).days, (days[2] - days[1]).days)
        for one in stays[0]:
            for two in stays[1]:
                hotels = _stay_cost(trip, (one, two), nights, rules)
                lists = (ranked[(0, days[0], one[0])], ranked[(1, days[1], one[0], two[0])],
                         ranked[(2, days[2], two[0])])
                for pattern in range(8):
                    uses = [pattern >> i & 1 for i in range(3)]
                    earned = rules.corporate == "always" or (rules.corporate == "threshold" and sum(uses) >= 2)
                    picks = [lists[i]["plain" if not u else ("deal" if earned else "full")] for i, u in
                             enumerate(uses)]
                    if not all(picks):
                        continue
                    tied = any(len(p) > 1 and p[1][0] == p[0][0] for p in picks)
                    total = hotels + sum(p[0][0] for p in picks)
                    candidates.append((total, tied, TripPlan(total, tuple(p[0][1] for p in picks), (one, two))))
    if not candidates:
        return None, False
    candidates.sort(key=lambda c: c[0])
    best = candidates[0]
    return best[2], not best[1] and (len(candidates) == 1 or candidates[1][0] > best[0])


def _same(one: TripPlan | None, two: TripPlan | None) -> bool:
    return one is not None and two is not None and one.stays == two.stays and all(
        (a.kind, a.fare_id) == (b.kind, b.fare_id) for a, b in zip(one.legs, two.legs))


def _set_caps(r: ItemRng, trip: Trip, loose: TripPlan) -> bool:
    """Per-city caps on the posted rate: just below the uncapped optimum's hotel in a city where a cheaper posted
    rate remains (so the cap changes the plan), and somewhere above the optimum's hotel in the other city."""
    cities = [trip.first[0], trip.second[0]]
    posted = {city: sorted({trip.hotels[h]["rates"][rid]["posted"] for h, rid in _stay_options(
        trip, city, TripRules(cap=False))}) for city in cities}
    chosen = {trip.hotels[h]["city"]: trip.hotels[h]["rates"][rid]["posted"] for h, rid in loose.stays}
    binding = [city for city in cities if posted[city].index(chosen[city]) >= 1]
    if not binding:
        return False
    city = r.choice(binding)
    below = [p for p in posted[city] if p < chosen[city]]
    trip.cap[city] = r.randint(below[-1], chosen[city] - 1)
    other = next(c for c in cities if c != city)
    trip.cap[other] = r.randint(chosen[other], posted[other][-1] + 20)
    return True


def _solved_trip(rng: ItemRng) -> tuple[Trip, TripPlan]:
    """The first draw with a unique cheapest itinerary in which ignoring bag fees, ignoring the posted-rate cap and
    misreading a threshold (never or always earned) change the plan; the cap is set below a hotel the uncapped
    optimum would use."""
    for attempt in range(300):
        r = rng.fork(f"trip-{attempt}")
        trip = _draw_trip(r)
        loose, _ = _trip_plans(trip, TripRules(cap=False))
        if loose is None or not _set_caps(r, trip, loose):
            continue
        best, unique = _trip_plans(trip)
        if best is None or not unique or _same(best, _trip_plans(trip, TripRules(bags=False))[0]):
            continue
        misread = [TripRules(corporate="never"), TripRules(corporate="always"), TripRules(chain="never"),
                   TripRules(chain="always")]
        if any(not _same(best, _trip_plans(trip, rules)[0]) for rules in misread):
            return trip, best
    raise RuntimeError("no bookable trip found")  # never happens for the seeds the tests cover


def _minute(minutes: int) -> str:
    return _clock(minutes % DAY) + (" (+1 day)" if minutes >= DAY else "")


def _trip_state(trip: Trip) -> dict[str, Any]:
    """Everything the travel services show, as JSON values."""
    held, cls, _ = trip.fare(trip.existing["fare_id"])
    traveller = {
        "traveller_id": trip.traveller_id, "name": trip.traveller, "home_airport": trip.home[1],
        "home_city": trip.home[0], "checked_bags": 1,
        "memberships": [
            {"program": f"{trip.status} Skyward Gold", "benefit": f"the first checked bag is free on every "
                                                                  f"{trip.status} flight"},
            {"program": f"{trip.chain} Rewards", "benefit": (
                f"{trip.chain_pct}% off the posted nightly room rate (not the nightly fee) of every {trip.chain} "
                f"night on the trip, once the trip's {trip.chain} nights total at least 3")}],
        "company_deals": [{"carrier": trip.corporate, "benefit": (
            f"{trip.corporate_pct}% off the fare (not bag fees) of every {trip.corporate} ticket bought for the "
            f"trip, once the trip has at least 2 {trip.corporate} tickets bought for it")}]}
    events = [{"event": f"Workshop at {trip.client}", "city": trip.first[0], "airport": trip.first[1],
               "dates": [str(trip.workshop)], "starts": _clock(WORKSHOP[0]), "ends": _clock(WORKSHOP[1])},
              {"event": trip.conference, "city": trip.second[0], "airport": trip.second[1],
               "dates": [str(trip.workshop + timedelta(days=d)) for d in (2, 3)], "starts": _clock(CONFERENCE[0]),
               "ends": _clock(CONFERENCE[1])}]
    return {
        "trips": {trip.trip_id: {"trip_id": trip.trip_id, "traveller_id": trip.traveller_id, "events": events,
                                 "tickets_held": [trip.existing["booking_id"]]}},
        "travellers": {trip.traveller_id: traveller},
        "services": {n: {"number": s.number, "mode": s.mode, "carrier": s.carrier, "origin": s.origin,
                         "destination": s.destination, "date": str(s.day), "departs": s.departs,
                         "arrives": s.arrives, "fares": [list(f) for f in s.fares]} for n, s in trip.services.items()},
        "fare_rules": {f"{c}/{k}": dict(rule) for (c, k), rule in trip.fare_rules.items()},
        "hotels": {hid: {**copy.deepcopy(h), "transfers": {hub: [{**o, "hours": list(o["hours"])} for o in opts]
                                                            for hub, opts in h["transfers"].items()}}
                   for hid, h in trip.hotels.items()},
        "bookings": {trip.existing["booking_id"]: {
            "kind": "flight", "fare_id": trip.existing["fare_id"], "number": held.number, "class": cls,
            "checked_bags": 1, "fare_paid": trip.existing["paid"], "fare_cents": 0, "charge_cents": 0,
            "refundable": False, "bought": "last month", "status": "active"}},
    }


def trip_statement(trip: Trip, state: dict[str, Any]) -> dict[str, Any]:
    """The trip's charges, the threshold discounts the active bookings earn, and the total (cents)."""
    bookings = state["bookings"]
    active = {bid: b for bid, b in bookings.items() if b["status"] == "active"}
    charged = sum(b["charge_cents"] for b in bookings.values() if b["status"] == "active" or not b["refundable"])
    deal = [b for b in active.values() if b["kind"] == "flight" and b["fare_cents"]
            and trip.services[b["number"]].carrier == trip.corporate]
    corporate = sum(b["fare_cents"] * trip.corporate_pct // 100 for b in deal) if len(deal) >= 2 else 0
    stays = [b for b in active.values() if b["kind"] == "hotel" and trip.hotels[b["hotel_id"]]["chain"] == trip.chain]
    chain = sum(b["nights"] * (100 * b["posted"] * trip.chain_pct // 100) for b in stays) if sum(
        b["nights"] for b in stays) >= 3 else 0
    return {"charged": charged, "corporate": corporate, "chain": chain, "total": charged - corporate - chain}


class TravelEnv(Environment):
    """The travel desk: trips and travellers, flight and rail search, fare rules, hotels, bookings and transfers."""

    def __init__(self, trip: Trip, base: int):
        super().__init__()
        self._trip = trip
        self._base = base
        self.state = _trip_state(trip)

    def _get(self, table: str, key: str, what: str) -> dict[str, Any]:
        record = self.state[table].get(_text(key, what).upper())
        if record is None:
            raise ToolError(f"no {what.replace('_', ' ')} '{key.strip()}'")
        return record

    def _day(self, value: str) -> date:
        try:
            return date.fromisoformat(_text(value, "date"))
        except ValueError:
            raise ToolError(f"'{value.strip()}' is not a date YYYY-MM-DD") from None

    def _new_id(self) -> str:
        return f"TR-{self._base + len(self.state['bookings'])}"

    @tool("Documentation of the travel desk. Topics: 'fares' (fare rules, changes, loyalty), 'hotels' (rates, "
          "fees, transfers), 'bookings' (what each booking charges, cancellation, the trip statement).",
          {"topic": {"type": "string", "enum": list(TRIP_DOCS)}})
    def describe_api(self, topic: str) -> Any:
        return {"topic": topic, "text": TRIP_DOCS[topic]}

    @tool("Trips: one trip request: traveller, events and the tickets already held.", {"trip_id": {"type": "string"}})
    def get_trip(self, trip_id: str) -> Any:
        return copy.deepcopy(self._get("trips", trip_id, "trip_id"))

    @tool("Travellers: one traveller's profile: home, luggage, memberships and company deals.",
          {"traveller_id": {"type": "string"}})
    def get_traveller(self, traveller_id: str) -> Any:
        return copy.deepcopy(self._get("travellers", traveller_id, "traveller_id"))

    def _service_rows(self, mode: str, origin: str, destination: str, day: str) -> list[dict[str, Any]]:
        wanted = (_text(origin, "origin").upper(), _text(destination, "destination").upper(), str(self._day(day)))
        rows = []
        for s in sorted(self.state["services"].values(), key=lambda s: s["departs"]):
            if s["mode"] == mode and (s["origin"].upper(), s["destination"].upper(), s["date"]) == wanted:
                rows.append({"number": s["number"], "carrier": s["carrier"], "departs": _minute(s["departs"]),
                             "arrives": _minute(s["arrives"]),
                             "fares": [list(f) for f in s["fares"]]})
        return rows

    @tool("Flights: the flights of a route on one date (airport codes; times local), with their fares.",
          {"origin": {"type": "string"}, "destination": {"type": "string"},
           "date": {"type": "string", "description": "YYYY-MM-DD"}})
    def search_flights(self, origin: str, destination: str, date: str) -> Any:
        return {"date": str(self._day(date)), "fare_columns": FARE_COLUMNS,
                "flights": self._service_rows("flight", origin, destination, date)}

    @tool("Rail: Corridor Rail trains between two cities on one date (city names; times local), with their fares.",
          {"origin": {"type": "string"}, "destination": {"type": "string"},
           "date": {"type": "string", "description": "YYYY-MM-DD"}})
    def search_trains(self, origin: str, destination: str, date: str) -> Any:
        return {"date": str(self._day(date)), "fare_columns": FARE_COLUMNS,
                "trains": self._service_rows("train", origin, destination, date)}

    @tool("Fares: the rules of a carrier's fare class (bags, refunds, changes).",
          {"carrier": {"type": "string"}, "fare_class": {"type": "string"}})
    def get_fare_rules(self, carrier: str, fare_class: str) -> Any:
        key = f"{_text(carrier, 'carrier')}/{_text(fare_class, 'fare_class')}".lower()
        for name, rule in self.state["fare_rules"].items():
            if name.lower() == key:
                return {"carrier": name.split("/")[0], "fare_class": name.split("/")[1], **rule}
        raise ToolError(f"no fare rules for '{carrier.strip()}' '{fare_class.strip()}'")

    @tool("Hotels: the hotels of a city (id, name, chain, distance to the city's event venue).",
          {"city": {"type": "string"}})
    def search_hotels(self, city: str) -> Any:
        wanted = _text(city, "city").lower()
        rows = [{"hotel_id": h["hotel_id"], "name": h["name"], "chain": h["chain"], "distance_km": h["distance"] / 10}
                for h in self.state["hotels"].values() if h["city"].lower() == wanted]
        if not rows:
            raise ToolError(f"no hotels listed for '{city.strip()}'")
        return {"city": city.strip(), "hotels": sorted(rows, key=lambda h: h["hotel_id"])}

    @tool("Hotels: one hotel in full: rate plans, nightly fee and ground transfers.", {"hotel_id": {"type": "string"}})
    def get_hotel(self, hotel_id: str) -> Any:
        hotel = self._get("hotels", hotel_id, "hotel_id")
        hubs = {}
        for hub, options in hotel["transfers"].items():
            hubs[hub] = [{"mode": o["mode"], "price": o["price"],
                          "hours": "24h" if tuple(o["hours"]) == (0, DAY) else f"{_clock(o['hours'][0])}-"
                                                                         f"{_clock(o['hours'][1])}"} for o in options]
        return {"hotel_id": hotel["hotel_id"], "name": hotel["name"], "chain": hotel["chain"], "city": hotel["city"],
                "distance_km": hotel["distance"] / 10, "nightly_fee": hotel["nightly_fee"],
                "rates": [{"rate_id": rid, "plan": r["plan"], "posted_nightly": r["posted"],
                           "cancellation": "free cancellation" if r["refundable"] else "non-refundable"}
                          for rid, r in hotel["rates"].items()], "transfers": hubs}

    def _fare(self, fare_id: str, mode: str) -> tuple[dict[str, Any], str, int]:
        wanted = _text(fare_id, "fare_id").upper()
        for service in self.state["services"].values():
            for fid, cls, price in service["fares"]:
                if fid == wanted and service["mode"] == mode:
                    return service, cls, price
        raise ToolError(f"no {mode} fare '{fare_id.strip()}'")

    def _rules(self, service: dict[str, Any], cls: str) -> dict[str, Any]:
        return self.state["fare_rules"][f"{service['carrier']}/{cls}"]

    def _book(self, record: dict[str, Any]) -> dict[str, Any]:
        booking_id = self._new_id()
        self.state["bookings"][booking_id] = {**record, "status": "active"}
        return self._view(booking_id)

    def _view(self, booking_id: str) -> dict[str, Any]:
        b = self.state["bookings"][booking_id]
        view = {"booking_id": booking_id, **{k: v for k, v in b.items() if k not in ("charge_cents", "fare_cents")}}
        if b["kind"] in ("flight", "train"):
            s = self.state["services"][b["number"]]
            view.update(route=f"{s['origin']}-{s['destination']}", date=s["date"], departs=_minute(s["departs"]),
                        arrives=_minute(s["arrives"]), carrier=s["carrier"])
        view["charged"] = dollar_figure(b["charge_cents"])
        return view

    @tool("Bookings: buy a flight fare with a number of checked bags (see describe_api 'bookings').",
          {"fare_id": {"type": "string"}, "checked_bags": {"type": "integer"}})
    def book_flight(self, fare_id: str, checked_bags: int) -> Any:
        service, cls, price = self._fare(fare_id, "flight")
        if not 0 <= checked_bags <= 3:
            raise ToolError("checked_bags must be between 0 and 3")
        rule = self._rules(service, cls)
        extra = max(0, checked_bags - rule["bags_included"])
        if extra and service["carrier"] == self._trip.status:
            extra -= 1  # the status benefit: the first checked bag is free
        return self._book({"kind": "flight", "fare_id": _text(fare_id, "fare_id").upper(), "number": service["number"],
                           "class": cls, "checked_bags": checked_bags, "fare_cents": 100 * price,
                           "charge_cents": 100 * (price + extra * rule["bag_fee"]), "refundable": rule["refundable"]})

    @tool("Bookings: buy a train fare.", {"fare_id": {"type": "string"}})
    def book_train(self, fare_id: str) -> Any:
        service, cls, price = self._fare(fare_id, "train")
        return self._book({"kind": "train", "fare_id": _text(fare_id, "fare_id").upper(), "number": service["number"],
                           "class": cls, "fare_cents": 100 * price, "charge_cents": 100 * price,
                           "refundable": self._rules(service, cls)["refundable"]})

    @tool("Bookings: reserve a hotel rate from check_in to check_out (YYYY-MM-DD).",
          {"rate_id": {"type": "string"}, "check_in": {"type": "string"}, "check_out": {"type": "string"}})
    def book_hotel(self, rate_id: str, check_in: str, check_out: str) -> Any:
        wanted = _text(rate_id, "rate_id").upper()
        hotel = next((h for h in self.state["hotels"].values() if wanted in h["rates"]), None)
        if hotel is None:
            raise ToolError(f"no rate '{rate_id.strip()}'")
        arrive, leave = self._day(check_in), self._day(check_out)
        nights = (leave - arrive).days
        window = (self._trip.workshop - timedelta(days=7), self._trip.workshop + timedelta(days=10))
        if not 1 <= nights <= 14 or arrive < window[0] or leave > window[1]:
            raise ToolError(f"stays must be 1 to 14 nights between {window[0]} and {window[1]}")
        rate = hotel["rates"][wanted]
        return self._book({"kind": "hotel", "hotel_id": hotel["hotel_id"], "rate_id": wanted, "city": hotel["city"],
                           "check_in": str(arrive), "check_out": str(leave), "nights": nights,
                           "posted": rate["posted"], "fare_cents": 0,
                           "charge_cents": 100 * nights * (rate["posted"] + hotel["nightly_fee"]),
                           "refundable": rate["refundable"]})

    @tool("Bookings: book a ground transfer between a hotel and the airport or station of a flight or train "
          "booking (see describe_api 'bookings').",
          {"hotel_id": {"type": "string"}, "booking_id": {"type": "string"}, "mode": {"type": "string"}})
    def book_transfer(self, hotel_id: str, booking_id: str, mode: str) -> Any:
        hotel = self._get("hotels", hotel_id, "hotel_id")
        travel = self._get("bookings", booking_id, "booking_id")
        if travel["kind"] not in ("flight", "train") or travel["status"] != "active":
            raise ToolError(f"{booking_id.strip().upper()} is not an active flight or train booking")
        service = self.state["services"][travel["number"]]
        trip = self._trip
        if trip.city_of(service["destination"]) == hotel["city"]:
            arriving, minute = True, service["arrives"]
        elif trip.city_of(service["origin"]) == hotel["city"]:
            arriving, minute = False, service["departs"] - TRANSFER_LEAD[service["mode"]]
        else:
            raise ToolError(f"{travel['number']} neither arrives in nor leaves from {hotel['city']}")
        hub = "airport" if service["mode"] == "flight" else "station"
        option = next((o for o in hotel["transfers"][hub] if o["mode"] == _text(mode, "mode").lower()), None)
        if option is None:
            raise ToolError(f"{hotel['hotel_id']} has no '{mode.strip()}' transfer to the {hub}")
        if not option["hours"][0] <= minute % DAY < option["hours"][1]:
            raise ToolError(f"the {option['mode']} does not run at {_clock(minute % DAY)}")
        return self._book({"kind": "transfer", "hotel_id": hotel["hotel_id"], "booking": booking_id.strip().upper(),
                           "mode": option["mode"], "direction": "to hotel" if arriving else "to " + hub,
                           "starts": _clock(minute % DAY), "fare_cents": 0, "charge_cents": 100 * option["price"],
                           "refundable": True})

    @tool("Bookings: change a flight ticket to another fare (see describe_api 'fares').",
          {"booking_id": {"type": "string"}, "fare_id": {"type": "string"}})
    def change_flight(self, booking_id: str, fare_id: str) -> Any:
        ticket = self._get("bookings", booking_id, "booking_id")
        if ticket["kind"] != "flight" or ticket["status"] != "active":
            raise ToolError(f"{booking_id.strip().upper()} is not an active flight ticket")
        old = self.state["services"][ticket["number"]]
        service, cls, price = self._fare(fare_id, "flight")
        fee = self._rules(old, ticket["class"])["change_fee"]
        if fee is None:
            raise ToolError(f"{ticket['class']} fares of {old['carrier']} cannot be changed")
        if (service["carrier"], service["origin"], service["destination"], cls) != (
                old["carrier"], old["origin"], old["destination"], ticket["class"]):
            raise ToolError("a change keeps the carrier, the route and the fare class")
        if service["number"] == old["number"]:
            raise ToolError("the ticket is already on that flight")
        paid = ticket["fare_paid"] if "fare_paid" in ticket else ticket["fare_cents"] // 100
        extra = 100 * (fee + max(0, price - paid))
        ticket.update(fare_id=_text(fare_id, "fare_id").upper(), number=service["number"],
                      charge_cents=ticket["charge_cents"] + extra, fare_paid=max(paid, price))
        return {**self._view(booking_id.strip().upper()), "change_charged": dollar_figure(extra)}

    @tool("Bookings: cancel a booking (refundable ones are refunded; a transfer booked for it is not cancelled).",
          {"booking_id": {"type": "string"}})
    def cancel_booking(self, booking_id: str) -> Any:
        booking = self._get("bookings", booking_id, "booking_id")
        if booking["status"] != "active":
            raise ToolError(f"booking {booking_id.strip().upper()} is already cancelled")
        booking["status"] = "cancelled"
        refund = booking["charge_cents"] if booking["refundable"] else 0
        return {"booking_id": booking_id.strip().upper(), "status": "cancelled", "refunded": dollar_figure(refund),
                "charge_kept": dollar_figure(booking["charge_cents"] - refund)}

    @tool("Bookings: the trip statement: every booking, the threshold discounts earned and the total charged.")
    def list_bookings(self) -> Any:
        figures = trip_statement(self._trip, self.state)
        return {"bookings": [self._view(bid) for bid in self.state["bookings"]],
                **{k: dollar_figure(v) for k, v in figures.items()}}


TRIP_CHECKS = (
    Check("itinerary", "Each leg is booked exactly once on a service the policy allows (dates, the gap after each "
                       "event), with one checked bag on every flight, and the held ticket is flown or cancelled."),
    Check("stays", "One hotel in each city from the arrival date to the departure date, within the distance, on a "
                   "free-cancellation rate at or under the city's posted-rate cap."),
    Check("transfers", "Every arrival and departure has exactly one transfer between the hub and the booked hotel."),
    Check("optimal", "The itinerary is the cheapest the policy allows: its legs, stays and transfer modes.", 2.0),
    Check("no_waste", "The trip's total cost, kept cancellation charges included, equals the optimum's."),
    Check("answer", "The answer states the trip's total cost, which must be the optimum's (an optimal booking)."),
)


@dataclass
class TripWorld:
    trip: Trip
    plan: TripPlan
    base: int


def trip_booking(rng: ItemRng) -> AgTask:
    """Book a two-city business trip at the lowest cost under fare rules, threshold discounts and transfers."""
    trip, plan = _solved_trip(rng.fork("trip"))
    world = TripWorld(trip, plan, 100 * rng.randint(10, 99))
    reference, wasteful = _trip_scripts(world)
    return AgTask(_trip_prompt(trip), lambda: TravelEnv(world.trip, world.base), TRIP_CHECKS,
                  lambda env, answer: _check_trip(world, env, answer), reference, wasteful)


def _trip_prompt(trip: Trip) -> str:
    w = trip.workshop
    day = lambda n: str(w + timedelta(days=n))  # noqa: E731
    first_name = trip.traveller.split()[0]
    one, two = trip.first[0], trip.second[0]
    return (
        f"You are the travel coordinator for {trip.traveller}. Book trip {trip.trip_id} (get_trip): {first_name} "
        f"flies from home to {one} for a workshop at {trip.client}, travels on to {two} for {trip.conference}, and "
        "flies home. Company travel policy, every rule mandatory:\n"
        f"1. Fly from home to {one} on {day(-2)} or {day(-1)}.\n"
        f"2. Travel from {one} to {two}, by air or by rail, on {day(0)} leaving at least {AFTER_EVENT} minutes "
        f"after the workshop ends, or on {day(1)}.\n"
        f"3. Fly home from {two} on {day(3)} leaving at least {AFTER_EVENT} minutes after the conference ends, or "
        f"on {day(4)}.\n"
        "4. Book one checked bag on every flight (trains carry bags free).\n"
        "5. One hotel in each city for every night there: check in on the day you arrive and check out on the day "
        f"you leave. It must be at most {trip.max_km / 10} km from the city's event venue, on a rate with free "
        f"cancellation, with a posted nightly room rate (before any discount) of at most ${trip.cap[one]} in {one} "
        f"and ${trip.cap[two]} in {two}.\n"
        "6. A ground transfer for every arrival (airport or station to the hotel) and every departure (hotel to "
        "the airport or station).\n\n"
        "Book the cheapest itinerary the policy allows. Its cost is everything charged from now on (fares, bag "
        "fees, change fees and fare differences, room rates and nightly fees, transfers, and the whole charge of "
        "any non-refundable booking you cancel), less the discounts the traveller's memberships and the company's "
        "deals earn. The ticket already held was paid last month and does not count; a held ticket the traveller "
        "will not fly must be cancelled (it refunds nothing). In the end every leg, stay and transfer is booked "
        "exactly once. Fares, hotels and bookings are documented in describe_api.\n\n"
        "When you are done, call submit with the trip's total cost in dollars and cents.")


def _legs_booked(trip: Trip, state: dict[str, Any]) -> dict[int, list[tuple[str, dict[str, Any]]]]:
    legs: dict[int, list[tuple[str, dict[str, Any]]]] = {0: [], 1: [], 2: [], 3: []}
    cities = [leg[:2] for leg in trip.legs()]
    for bid, b in state["bookings"].items():
        if b["status"] == "active" and b["kind"] in ("flight", "train"):
            s = trip.services[b["number"]]
            route = (trip.city_of(s.origin), trip.city_of(s.destination))
            legs[cities.index(route) if route in cities else 3].append((bid, b))
    return legs


def _check_trip(world: TripWorld, env: Environment, answer: str | None) -> dict[str, bool]:
    trip, plan, state = world.trip, world.plan, env.state
    legs = _legs_booked(trip, state)
    one = [legs[i][0] if len(legs[i]) == 1 else None for i in range(3)]
    itinerary = all(one) and not legs[3] and all(
        trip.leg_ok(i, trip.services[b["number"]]) and (b["kind"] == "train" or b["checked_bags"] == 1)
        for i, (_, b) in enumerate(one))
    hotels = [b for b in state["bookings"].values() if b["status"] == "active" and b["kind"] == "hotel"]
    by_city = {c: [b for b in hotels if b["city"] == c] for c in (trip.first[0], trip.second[0])}
    stays_ok = itinerary and len(hotels) == 2 and all(len(v) == 1 for v in by_city.values())
    if stays_ok:
        days = [trip.services[b["number"]].day for _, b in one]
        for (city, [stay]), (arrive, leave) in zip(by_city.items(), ((days[0], days[1]), (days[1], days[2]))):
            allowed = {rid for _, rid in _stay_options(trip, city, TripRules())}
            stays_ok &= stay["rate_id"] in allowed and (stay["check_in"], stay["check_out"]) == (str(arrive),
                                                                                             str(leave))
    rides = [b for b in state["bookings"].values() if b["status"] == "active" and b["kind"] == "transfer"]
    moves = []
    if stays_ok:
        hotel = {c: v[0]["hotel_id"] for c, v in by_city.items()}
        moves = [(hotel[trip.first[0]], one[0][0], "to hotel"), (hotel[trip.first[0]], one[1][0], None),
                 (hotel[trip.second[0]], one[1][0], "to hotel"), (hotel[trip.second[0]], one[2][0], None)]
    matched = [[b for b in rides if (b["hotel_id"], b["booking"]) == m[:2] and (b["direction"] == "to hotel") == (
        m[2] is not None)] for m in moves]
    transfers_ok = stays_ok and len(rides) == 4 and all(len(m) == 1 for m in matched)
    optimal = transfers_ok and _plan_booked(trip, plan, state, one, by_city, matched)
    total = trip_statement(trip, state)["total"]
    return {"itinerary": itinerary, "stays": stays_ok, "transfers": transfers_ok, "optimal": optimal,
            "no_waste": optimal and total == plan.cost,
            "answer": optimal and plan.cost in cents_in(answer or "", grouped_only=True)}


def _plan_booked(trip: Trip, plan: TripPlan, state: dict[str, Any], one: list[Any], by_city: dict[str, Any],
                 matched: list[list[dict[str, Any]]]) -> bool:
    """Whether the booked legs, stays and transfer modes are the optimum's."""
    held = trip.existing["booking_id"]
    for (bid, booking), option in zip(one, plan.legs):
        if booking["fare_id"] != option.fare_id or (bid == held) != (option.kind == "change"):
            return False
    if [v[0]["rate_id"] for v in by_city.values()] != [rid for _, rid in plan.stays]:
        return False
    hotels = [hid for hid, _ in plan.stays]
    wanted = [trip.transfer(hotels[0], _hub(plan.legs[0].service), plan.legs[0].service.arrives),
              trip.transfer(hotels[0], _hub(plan.legs[1].service), plan.legs[1].service.departs -
                            TRANSFER_LEAD[plan.legs[1].service.mode]),
              trip.transfer(hotels[1], _hub(plan.legs[1].service), plan.legs[1].service.arrives),
              trip.transfer(hotels[1], "airport", plan.legs[2].service.departs - TRANSFER_LEAD["flight"])]
    return all(m[0]["mode"] == w[0] for m, w in zip(matched, wanted))


def _trip_reads(trip: Trip) -> list[Call]:
    """What an efficient agent reads: the documentation, the trip, the profile and the held ticket, every search of
    the allowed dates, the fare rules of every carrier and class, and each hotel within the distance."""
    codes = {trip.home[0]: trip.home[1], trip.first[0]: trip.first[1],
                               trip.second[0]: trip.second[1]}
    searches = []
    for leg, (origin, destination, days) in enumerate(trip.legs()):
        for day in days:
            searches.append(Call("search_flights", {"origin": codes[origin], "destination": codes[destination],
                                                    "date": str(day)}))
            if leg == 1:
                searches.append(Call("search_trains", {"origin": origin, "destination": destination,
                                                       "date": str(day)}))
    rules = [Call("get_fare_rules", {"carrier": c, "fare_class": k}) for c, _ in CARRIERS for k in CLASSES] + [
        Call("get_fare_rules", {"carrier": RAIL[0], "fare_class": k}) for k in RAIL_CLASSES]
    near = [Call("get_hotel", {"hotel_id": hid}) for city in (trip.first[0], trip.second[0])
            for hid in sorted(trip.hotels) if trip.hotels[hid]["city"] == city
            and trip.hotels[hid]["distance"] <= trip.max_km]
    return [*[Call("describe_api", {"topic": t}) for t in TRIP_DOCS], Call("get_trip", {"trip_id": trip.trip_id}),
            Call("get_traveller", {"traveller_id": trip.traveller_id}), Call("list_bookings"), *searches, *rules,
            Call("search_hotels", {"city": trip.first[0]}), Call("search_hotels", {"city": trip.second[0]}), *near]


def _trip_books(world: TripWorld, first_id: int) -> tuple[list[Call], int]:
    """The optimum's bookings, numbered from first_id; and the next free number."""
    trip, plan = world.trip, world.plan
    held = trip.existing["booking_id"]
    calls, ids, number = [], [], first_id
    for option in plan.legs:
        if option.kind == "change":
            calls.append(Call("change_flight", {"booking_id": held, "fare_id": option.fare_id}))
            ids.append(held)
            continue
        if option.leg == 2:
            calls.append(Call("cancel_booking", {"booking_id": held}))
        if option.service.mode == "train":
            calls.append(Call("book_train", {"fare_id": option.fare_id}))
        else:
            calls.append(Call("book_flight", {"fare_id": option.fare_id, "checked_bags": 1}))
        ids.append(f"TR-{world.base + number}")
        number += 1
    days = [o.service.day for o in plan.legs]
    for (hid, rid), (arrive, leave) in zip(plan.stays, ((days[0], days[1]), (days[1], days[2]))):
        calls.append(Call("book_hotel", {"rate_id": rid, "check_in": str(arrive), "check_out": str(leave)}))
        number += 1
    (first, _), (second, _) = plan.stays
    for hotel, index, arriving in ((first, 0, True), (first, 1, False), (second, 1, True), (second, 2, False)):
        service = plan.legs[index].service
        minute = service.arrives if arriving else service.departs - TRANSFER_LEAD[service.mode]
        mode = trip.transfer(hotel, _hub(service), minute)[0]
        calls.append(Call("book_transfer", {"hotel_id": hotel, "booking_id": ids[index], "mode": mode}))
        number += 1
    return calls, number


def _trip_scripts(world: TripWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one that rereads and books then cancels a refundable hotel."""
    trip, plan = world.trip, world.plan
    reads = _trip_reads(trip)
    books, _ = _trip_books(world, 1)
    answer = Call("submit", {"answer": f"Booked trip {trip.trip_id}; total cost ${dollar_figure(plan.cost)}."})
    (hotel, rate), days = plan.stays[0], [o.service.day for o in plan.legs]
    decoy = next(rid for hid, h in sorted(trip.hotels.items()) for rid, r in h["rates"].items()
                 if h["city"] == trip.first[0] and hid != hotel and r["refundable"])
    detour = [Call("book_hotel", {"rate_id": decoy, "check_in": str(days[0]), "check_out": str(days[1])}),
              Call("cancel_booking", {"booking_id": f"TR-{world.base + 1}"})]
    later, _ = _trip_books(world, 2)
    wasteful = (*reads[:4], reads[3], *reads[4:7], reads[5], *reads[7:], *detour, *later, answer)
    return (*reads, *books, answer), wasteful
