"""Planning under constraints: book two meetings across time zones, and a conference trip under a tight budget;
each generator solves its instance, so exactly one plan satisfies every hard rule and the obvious choices break one."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from esac_kit.ag.answers import cents_in, dollar_figure
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

DAY = 1440  # minutes
SLOT = 30  # meetings start on the hour or half hour (UTC)
HORIZON = 3 * DAY  # the planning window: three consecutive weekdays, UTC
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
BLOCKING = ("busy", "tentative")
_WHEN = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})[T ](\d{1,2}):(\d{2})(?::00)?\s*(?:Z|UTC|\+00:?00)?\s*$", re.IGNORECASE)
_DATE = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})\s*$")


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _zone(offset: int) -> str:
    sign = "+" if offset >= 0 else "-"
    return f"UTC{sign}{_clock(abs(offset))}"


def _parse_date(text: str) -> date:
    match = _DATE.match(text)
    try:
        if match:
            return date.fromisoformat(match.group(1))
    except ValueError:
        pass
    raise ToolError(f"'{text}' is not a date of the form YYYY-MM-DD")


# ================================================================= task 1: meetings across time zones

OFFICES = (("Berlin", 60), ("London", 0), ("Lisbon", 0), ("Warsaw", 60), ("Athens", 120), ("Helsinki", 120),
           ("Nairobi", 180), ("Dubai", 240), ("Pune", 330), ("Singapore", 480), ("Toronto", -300),
           ("New York", -300), ("Chicago", -360), ("Sao Paulo", -180), ("Denver", -420), ("Tokyo", 540))
FIRST_NAMES = ("Priya", "Jonas", "Mei", "Tomas", "Aisha", "Lukas", "Sofia", "Kenji", "Amara", "Mateo", "Ingrid",
               "Ravi", "Chloe", "Dmitri", "Fatima", "Oliver", "Yuki", "Nadia", "Samuel", "Leila", "Hannah", "Arjun",
               "Elena", "Kwame", "Marta", "Felix", "Zara", "Hugo")
LAST_NAMES = ("Sharma", "Weber", "Chen", "Alvarez", "Okafor", "Novak", "Rossi", "Tanaka", "Mensah", "Garcia",
              "Larsen", "Iyer", "Dubois", "Petrov", "Haddad", "Byrne", "Sato", "Karimi", "Osei", "Moreau", "Lindqvist",
              "Kowalski", "Costa", "Nakamura")
TEAMS = ("Payments", "Search", "Platform", "Data", "Mobile", "Growth", "Billing", "Identity", "Logistics")
REVIEW_TITLES = ("Quarterly architecture review", "Vendor security review", "Launch readiness review",
                 "Roadmap planning session", "Client onboarding workshop", "Integration design review")
DECISION_TITLES = ("Budget sign-off", "Hiring decision", "Go/no-go decision", "Contract sign-off",
                   "Pricing decision")
CLIENTS = ("Norvale Bank", "Kestrel Freight", "Auric Health", "Bluefin Media", "Tessaro Retail", "Calder Energy")
ROOM_NAMES = ("Orchid", "Cedar", "Atrium", "Juniper", "Harbour", "Quarry", "Lantern", "Maple", "Summit", "Willow",
              "Beacon", "Fjord")
BUSY_TITLES = ("Customer call", "1:1", "Sprint planning", "Interview", "Design sync", "Budget review",
               "Partner call", "Focus block", "Doctor's appointment", "Team retro", "Hiring panel", "Ops review",
               "Board prep", "Release review")
TENTATIVE_TITLES = ("Hold: vendor demo", "Maybe: training session", "Tentative: offsite prep",
                    "Hold: customer visit")
FREE_TITLES = ("Optional: brown-bag talk", "Office hours (drop-in)", "Optional: all-hands replay", "Reading time",
               "Optional: book club")
ROOM_USES = ("Interview", "Sales kickoff", "Training", "Board prep", "Workshop", "Hiring panel", "Partner visit",
             "Team retro", "Town hall rehearsal")
VIDEO = "video conferencing"


@dataclass(frozen=True)
class Person:
    """A directory entry: the time zone is a fixed UTC offset; working hours are local minutes of the day."""

    id: str
    name: str
    team: str
    office: str
    offset: int
    start: int
    end: int
    days: tuple[str, ...]


@dataclass(frozen=True)
class Meeting:
    """A meeting to book: who attends, how long, and what room it needs."""

    key: str
    title: str
    attendees: tuple[str, ...]
    duration: int
    visitors: int
    seats: int
    video: bool


@dataclass(frozen=True)
class Rules:
    """Which rules a plan must meet; the generator relaxes one at a time to prove each one bites."""

    cap: bool = True
    order: bool = True
    budget: bool = True
    free_blocks: bool = False


@dataclass
class Week:
    """Everything about one scheduling instance; times are minutes from 00:00 UTC on the first day."""

    first_day: date
    office: str
    people: dict[str, Person]
    lead: str
    cap: int
    gap: int
    meetings: dict[str, Meeting] = field(default_factory=dict)
    rooms: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    room_bookings: list[dict[str, Any]] = field(default_factory=list)
    budget: int = 0

    def utc_text(self, minute: int) -> str:
        return f"{self.first_day + timedelta(days=minute // DAY)} {_clock(minute % DAY)}"

    def local_day(self, pid: str, minute: int) -> int:
        return (minute + self.people[pid].offset) // DAY

    def in_hours(self, pid: str, start: int, end: int) -> bool:
        """Whether [start, end) lies inside one of the person's local working days and hours."""
        person = self.people[pid]
        day = self.local_day(pid, start)
        weekday = WEEKDAYS[(self.first_day + timedelta(days=day)).weekday()]
        local_start, local_end = start + person.offset - day * DAY, end + person.offset - day * DAY
        return weekday in person.days and person.start <= local_start and local_end <= person.end

    def blocked(self, pid: str, start: int, end: int, free_blocks: bool = False) -> bool:
        return any(e["person"] == pid and e["start"] < end and start < e["end"]
                   and (e["show_as"] in BLOCKING or free_blocks) for e in self.events)

    def lead_count(self, day: int) -> int:
        """The lead's existing busy or tentative events on one of their local days."""
        return sum(1 for e in self.events if e["person"] == self.lead and e["show_as"] in BLOCKING
                   and self.local_day(self.lead, e["start"]) == day)

    def room_fits(self, key: str, room_id: str) -> bool:
        meeting, room = self.meetings[key], self.rooms[room_id]
        return room["capacity"] >= meeting.seats and (not meeting.video or VIDEO in room["equipment"])

    def room_free(self, room_id: str, start: int, end: int) -> bool:
        return not any(b["room"] == room_id and b["start"] < end and start < b["end"] for b in self.room_bookings)

    def room_cost(self, room_id: str, duration: int) -> int:
        return self.rooms[room_id]["hourly_rate"] * duration // 60

    def cheapest_room(self, key: str, start: int) -> tuple[int, str] | None:
        duration = self.meetings[key].duration
        options = [(self.room_cost(r, duration), r) for r in self.rooms
                   if self.room_fits(key, r) and self.room_free(r, start, start + duration)]
        return min(options) if options else None


def _singles(week: Week, key: str, rules: Rules) -> list[int]:
    """Starts at which one meeting could go on its own: attendees available, the lead's cap, a room."""
    meeting = week.meetings[key]
    starts = []
    for start in range(0, HORIZON - meeting.duration + 1, SLOT):
        end = start + meeting.duration
        if not all(week.in_hours(p, start, end) and not week.blocked(p, start, end, rules.free_blocks)
                   for p in meeting.attendees):
            continue
        if rules.cap and week.lead_count(week.local_day(week.lead, start)) + 1 > week.cap:
            continue
        if week.cheapest_room(key, start) is not None:
            starts.append(start)
    return starts


def _plans(week: Week, rules: Rules) -> list[tuple[int, int]]:
    """Every (start of A, start of B) meeting all the rules in force (rooms chosen as cheaply as possible)."""
    first, second = week.meetings["A"], week.meetings["B"]
    plans = []
    for a in _singles(week, "A", rules):
        for b in _singles(week, "B", rules):
            if a < b + second.duration and b < a + first.duration:  # the lead attends both
                continue
            if rules.order and b < a + first.duration + week.gap:
                continue
            day_a, day_b = week.local_day(week.lead, a), week.local_day(week.lead, b)
            if rules.cap and day_a == day_b and week.lead_count(day_a) + 2 > week.cap:
                continue
            cost = week.cheapest_room("A", a)[0] + week.cheapest_room("B", b)[0]
            if rules.budget and cost > week.budget:
                continue
            plans.append((a, b))
    return plans


@dataclass
class _Plant:
    """The planted solution and traps of one instance."""

    allowed: dict[str, list[int]]  # the only starts each meeting may have on its own once the calendars are filled
    protected: dict[str, list[tuple[int, int]]]  # intervals each person must keep free
    counts: dict[int, int]  # the lead's busy/tentative events per local day
    a_start: int
    b_start: int
    b_trap: int  # B's start that breaks the cap with A (split) or the order (same day)
    full_slot: tuple[str, int] | None  # a slot free for everyone but on the lead's full day


def _draw_people(r: ItemRng) -> tuple[Week, dict[str, list[str]]]:
    """The directory and the two meetings' attendee lists (unplanned)."""
    first_day = date(2026, 1, 5) + timedelta(weeks=r.randint(0, 100), days=r.randint(0, 2))
    home = r.choice([o for o in OFFICES if abs(o[1]) <= 300])
    remote_one = r.choice([o for o in OFFICES if o[1] != home[1] and abs(o[1] - home[1]) <= 390])
    remote_two = r.choice([o for o in OFFICES if o[0] not in (home[0], remote_one[0]) and abs(o[1] - home[1]) <= 330])
    firsts, lasts = r.sample(FIRST_NAMES, 10), r.sample(LAST_NAMES, 10)
    teams = r.sample(TEAMS, 3)
    people: dict[str, Person] = {}

    def add(office: tuple[str, int], team: str) -> str:
        index = len(people)
        name = f"{firsts[index]} {lasts[index]}"
        pid = f"{firsts[index]}.{lasts[index]}".lower()
        start = r.choice([420, 450, 480, 510, 540, 570, 600])
        people[pid] = Person(pid, name, team, office[0], office[1], start, start + r.choice([480, 510, 540]),
                             ("Mon", "Tue", "Wed", "Thu", "Fri"))
        return pid

    lead = add(home, teams[0])
    team = [lead, add(home, teams[0]), add(remote_one, teams[0])]
    if r.randint(0, 1):
        team.append(add(r.choice([home, remote_one]), teams[0]))
    guest = add(r.choice([home, remote_one]), teams[1])
    second = add(r.choice([home, remote_one]), r.choice(teams[1:]))
    third = add(r.choice([home, remote_two]), teams[2])
    for _ in range(r.randint(2, 3)):  # never in the lead's team, whose members are exactly the planted ones
        add(r.choice([home, remote_one, remote_two]), r.choice(teams[1:]))
    if r.randint(0, 1):  # one part-timer who does not work one of the three days
        pid = r.choice([p for p in people if p != lead])
        skipped = WEEKDAYS[(first_day + timedelta(days=r.randint(0, 2))).weekday()]
        person = people[pid]
        people[pid] = Person(person.id, person.name, person.team, person.office, person.offset, person.start,
                             person.end, tuple(d for d in person.days if d != skipped))
    week = Week(first_day, home[0], people, lead, cap=r.choice([3, 4]), gap=r.choice([30, 60]))
    return week, {"A": sorted(team + [guest]), "B": sorted([lead, second, third]), "team": team, "guest": [guest],
                  "others": [second, third]}


def _meeting(week: Week, key: str, title: str, attendees: list[str], duration: int, visitors: int) -> Meeting:
    local = sum(1 for p in attendees if week.people[p].office == week.office)
    return Meeting(key, title, tuple(attendees), duration, visitors, local + visitors,
                   any(week.people[p].office != week.office for p in attendees))


def _windows(week: Week, key: str) -> dict[int, list[int]]:
    """Starts at which every attendee is inside working hours, by the lead's local day."""
    meeting = week.meetings[key]
    by_day: dict[int, list[int]] = {0: [], 1: [], 2: []}
    for start in range(0, HORIZON - meeting.duration + 1, SLOT):
        if all(week.in_hours(p, start, start + meeting.duration) for p in meeting.attendees):
            by_day[week.local_day(week.lead, start)].append(start)
    return by_day


def _plant(r: ItemRng, week: Week) -> _Plant | None:
    """Choose the solution and the trap slots; None when the windows are too narrow for the variant."""
    windows = {key: _windows(week, key) for key in ("A", "B")}
    dur_a, dur_b, cap = week.meetings["A"].duration, week.meetings["B"].duration, week.cap
    after = dur_a + week.gap
    full_slot = None
    if r.randint(0, 2) == 0:  # split: A on day 1, B on day 2; B after A on day 1 would break the cap
        pairs = [(a, b) for a in windows["A"][1] for b in windows["B"][1] if b >= a + after]
        if not pairs or not windows["B"][0] or not windows["B"][2]:
            return None
        a_start, b_trap = r.choice(pairs)
        b_early, b_start = r.choice(windows["B"][0]), r.choice(windows["B"][2])
        counts = {0: r.randint(1, cap - 1), 1: cap - 1, 2: r.randint(1, cap - 1)}
        allowed = {"A": [a_start], "B": [b_early, b_trap, b_start]}
    else:  # same day: B before A breaks the order; another day is full for the lead
        day = r.choice([0, 1, 2])
        full = r.choice([d for d in (0, 1, 2) if d != day])
        triples = [(e, a, b) for a in windows["A"][day] for e in windows["B"][day] if e + dur_b <= a
                   for b in windows["B"][day] if b >= a + after]
        full_key = "A" if full < day else "B"
        if not triples or not windows[full_key][full]:
            return None
        b_trap, a_start, b_start = r.choice(triples)
        full_slot = (full_key, r.choice(windows[full_key][full]))
        counts = {day: cap - 2, full: cap}
        counts[3 - day - full] = r.randint(1, cap - 1)
        allowed = {"A": [a_start], "B": [b_trap, b_start]}
    protected: dict[str, list[tuple[int, int]]] = {p: [] for p in week.people}
    slots = [(k, s) for k in allowed for s in allowed[k]] + ([full_slot] if full_slot else [])
    for key, start in slots:
        for pid in week.meetings[key].attendees:
            protected[pid].append((start, start + week.meetings[key].duration))
    return _Plant(allowed, protected, counts, a_start, b_start, b_trap, full_slot)


def _overlaps(start: int, end: int, intervals: list[tuple[int, int]]) -> bool:
    return any(s < end and start < e for s, e in intervals)


def _place_event(r: ItemRng, week: Week, pid: str, day: int, protected: list[tuple[int, int]], show_as: str,
                 title: str) -> bool:
    """Put one event in the person's working hours on a local day, clear of protected time and their busy events."""
    person = week.people[pid]
    for _ in range(40):
        length = r.choice([30, 60, 60, 90])
        local = r.randrange(person.start, person.end - length + 1, SLOT)
        start = day * DAY + local - person.offset
        end = start + length
        if start < 0 or end > HORIZON or not week.in_hours(pid, start, end):
            continue
        if show_as != "free" and (_overlaps(start, end, protected) or week.blocked(pid, start, end)):
            continue
        week.events.append({"person": pid, "start": start, "end": end, "title": title, "show_as": show_as})
        return True
    return False


def _busy_title(r: ItemRng) -> tuple[str, str]:
    if r.randint(1, 5) == 1:
        return "tentative", r.choice(TENTATIVE_TITLES)
    return "busy", r.choice(BUSY_TITLES)


def _fill_calendars(r: ItemRng, week: Week, plant: _Plant) -> bool:
    """The lead's exact event counts, everyone's background events, and the free event over the solution."""
    lead = week.lead
    for day in (0, 1, 2):
        for _ in range(plant.counts[day]):
            if not _place_event(r, week, lead, day, plant.protected[lead], *_busy_title(r)):
                return False
    if r.randint(0, 2):  # a free event that must not be counted against the lead's cap
        _place_event(r, week, lead, week.local_day(lead, plant.a_start), [], "free", r.choice(FREE_TITLES))
    for pid, person in week.people.items():
        if pid == lead:
            continue
        for day in range((person.offset) // DAY - 1, (HORIZON + person.offset) // DAY + 1):
            for _ in range(r.randint(0, 2)):
                _place_event(r, week, pid, day, plant.protected[pid], *_busy_title(r))
            if r.randint(1, 4) == 1:
                _place_event(r, week, pid, day, [], "free", r.choice(FREE_TITLES))
    # The solution overlaps an event shown as free: reading it as busy leaves no valid plan.
    holder = r.choice([p for p in week.meetings["A"].attendees if p != lead])
    start = plant.a_start - r.choice([0, 30])
    week.events.append({"person": holder, "start": start, "end": start + week.meetings["A"].duration + 30,
                        "title": r.choice(FREE_TITLES[:2]), "show_as": "free"})
    return True


def _draw_rooms(r: ItemRng, week: Week, plant: _Plant) -> tuple[str, str, str] | None:
    """Rooms with a video trap, a size trap, a booked bargain and a pricey option.

    Returns the room for A, the room for B and the bargain room that is taken at A's time.
    """
    seats = week.meetings["A"].seats
    if seats < 3:
        return None
    names = r.sample(ROOM_NAMES, 6)
    ten = lambda low, high: 10 * r.randint(low, high)  # noqa: E731 - hourly rates in tens of dollars
    bargain_rate = ten(4, 6)
    main_rate = bargain_rate + ten(1, 3)
    specs = [("bargain", seats + r.randint(0, 3), [VIDEO], bargain_rate),
             ("main", seats + r.randint(0, 2), [VIDEO], main_rate),
             ("pricey", seats + r.randint(4, 10), [VIDEO, "projector"], main_rate + ten(5, 9)),
             ("no_video", seats + r.randint(1, 6), ["whiteboard", "projector"], ten(2, 4)),
             ("small", r.randint(max(2, seats - 3), seats - 1), [VIDEO, "whiteboard"], ten(2, 4)),
             ("extra", r.randint(2, max(2, seats - 1)), ["whiteboard"], ten(2, 5))]
    order = list(range(6))
    r.shuffle(order)
    role: dict[str, str] = {}
    for index in order:
        kind, capacity, equipment, rate = specs[index]
        room_id = f"rm-{names[index].lower()}"
        week.rooms[room_id] = {"name": names[index], "capacity": capacity, "equipment": sorted(equipment),
                               "hourly_rate": rate}
        role[kind] = room_id
    duration_b = week.meetings["B"].duration
    room_b = min((week.room_cost(rid, duration_b), rid) for rid in week.rooms if week.room_fits("B", rid))[1]
    dur_a = week.meetings["A"].duration
    keep = {rid: [] for rid in week.rooms}  # room -> intervals that must stay free
    for kind in ("main", "pricey", "no_video", "small"):
        keep[role[kind]].append((plant.a_start, plant.a_start + dur_a))
    for start in plant.allowed["B"]:
        keep[room_b].append((start, start + duration_b))
    if plant.full_slot:
        key, start = plant.full_slot
        keep[role["main"] if key == "A" else room_b].append((start, start + week.meetings[key].duration))
    bargain = role["bargain"]
    for before, after in ((r.choice([0, 30]), r.choice([0, 30])), (0, 0)):
        start, end = plant.a_start - before, plant.a_start + dur_a + after
        if not _overlaps(start, end, keep[bargain]):
            week.room_bookings.append({"room": bargain, "start": start, "end": end, "booked_by": r.choice(ROOM_USES)})
            break
    else:
        return None
    offset = next(o for n, o in OFFICES if n == week.office)
    for rid in week.rooms:
        for day in (0, 1, 2):
            for _ in range(r.randint(1, 3)):
                length = r.choice([30, 60, 90, 120])
                start = day * DAY + r.randrange(420, 1140 - length + 1, SLOT) - offset
                end = start + length
                if 0 <= start and end <= HORIZON and not _overlaps(start, end, keep[rid]) \
                        and week.room_free(rid, start, end):
                    week.room_bookings.append({"room": rid, "start": start, "end": end,
                                               "booked_by": r.choice(ROOM_USES)})
    return role["main"], room_b, bargain


def _prune(r: ItemRng, week: Week, plant: _Plant) -> bool:
    """Add busy events until each meeting can start only at its allowed slots (on its own)."""
    for _ in range(120):
        extras = [(k, s) for k in ("A", "B") for s in _singles(week, k, Rules()) if s not in plant.allowed[k]]
        if not extras:
            return True
        key, start = r.choice(extras)
        meeting = week.meetings[key]
        candidates = [p for p in meeting.attendees if p != week.lead]
        r.shuffle(candidates)
        for pid in candidates:
            pieces = [u for u in range(start, start + meeting.duration, SLOT)
                      if not _overlaps(u, u + SLOT, plant.protected[pid])]
            if pieces:
                piece = r.choice(pieces)
                end = piece + SLOT
                if r.randint(0, 1) and not _overlaps(piece, piece + 2 * SLOT, plant.protected[pid]) \
                        and week.in_hours(pid, piece, piece + 2 * SLOT) and not week.blocked(pid, piece, end + SLOT):
                    end += SLOT
                show_as, title = _busy_title(r)
                week.events.append({"person": pid, "start": piece, "end": end, "title": title, "show_as": show_as})
                break
        else:
            return False
    return False


def _draw_week(r: ItemRng) -> tuple[Week, _Plant, tuple[str, str, str], dict[str, list[str]]] | None:
    """One candidate instance, or None unless exactly one plan meets every rule and relaxing each rule adds one."""
    week, groups = _draw_people(r)
    titles = (r.choice(REVIEW_TITLES), r.choice(DECISION_TITLES))
    week.meetings["A"] = _meeting(week, "A", titles[0], groups["A"], r.choice([60, 90]), r.randint(1, 4))
    week.meetings["B"] = _meeting(week, "B", titles[1], groups["B"], r.choice([30, 60]), 0)
    plant = _plant(r, week)
    if plant is None or not _fill_calendars(r, week, plant):
        return None
    rooms = _draw_rooms(r, week, plant)
    if rooms is None or not _prune(r, week, plant):
        return None
    room_a, room_b, bargain = rooms
    cost = week.room_cost(room_a, week.meetings["A"].duration) + week.room_cost(room_b, week.meetings["B"].duration)
    pricey = max(week.rooms, key=lambda rid: week.rooms[rid]["hourly_rate"])
    margin = week.room_cost(pricey, week.meetings["A"].duration) - week.room_cost(room_a, week.meetings["A"].duration)
    week.budget = cost + 5 * r.randint(0, max(0, min(6, (margin - 5) // 5)))
    solution = (plant.a_start, plant.b_start)
    if _plans(week, Rules()) != [solution]:
        return None
    if not [p for p in _plans(week, Rules(cap=False)) if p != solution]:
        return None
    if not [p for p in _plans(week, Rules(order=False)) if p != solution]:
        return None
    if solution in _plans(week, Rules(free_blocks=True)):
        return None
    if week.room_cost(pricey, week.meetings["A"].duration) + week.room_cost(room_b, week.meetings["B"].duration) \
            <= week.budget:
        return None
    return week, plant, rooms, groups


class CalendarEnv(Environment):
    """A company directory, everyone's calendar, the office's rooms and a booking tool that checks nothing."""

    def __init__(self, week: Week, booking_base: int):
        super().__init__()
        self._week = week
        self._base = booking_base
        self.state = {
            "people": {pid: {"name": p.name, "team": p.team, "office": p.office, "timezone": _zone(p.offset),
                             "working_hours": f"{_clock(p.start)}-{_clock(p.end)}", "working_days": list(p.days)}
                       for pid, p in sorted(week.people.items())},
            "events": {f"ev-{i + 1}": dict(e) for i, e in enumerate(week.events)},
            "rooms": {rid: dict(room) for rid, room in sorted(week.rooms.items())},
            "room_bookings": {f"rb-{i + 1}": dict(b) for i, b in enumerate(week.room_bookings)},
            "bookings": {},
        }

    def _active(self) -> list[tuple[str, dict[str, Any]]]:
        return [(bid, b) for bid, b in self.state["bookings"].items() if b["status"] == "active"]

    def _local(self, pid: str, minute: int) -> tuple[str, str]:
        local = minute + self._week.people[pid].offset
        return str(self._week.first_day + timedelta(days=local // DAY)), _clock(local % DAY)

    @tool("List everyone in the company directory: person id, name, team, office, time zone (a fixed UTC offset; "
          "there is no daylight saving in the planning window), working hours (local time) and working days.")
    def list_people(self):
        return [{"person_id": pid, **p} for pid, p in self.state["people"].items()]

    @tool("Show one person's calendar for the planning window. Times are in the person's own local time (the result "
          "states the UTC offset). Each event has a date, start, end, title and show_as: busy, tentative or free. "
          "Meetings you have booked appear too.",
          {"person_id": {"type": "string", "description": "a person id from list_people"}})
    def get_calendar(self, person_id: str):
        if person_id not in self.state["people"]:
            raise ToolError(f"no person with id '{person_id}' (use list_people)")
        entries = [(e["start"], e["end"], e["title"], e["show_as"]) for e in self.state["events"].values()
                   if e["person"] == person_id]
        meetings = self._week.meetings
        entries += [(b["start"], b["end"], f"{meetings[b['meeting']].title} (booked by you)", "busy")
                    for _, b in self._active() if person_id in b["attendees"]]
        events = []
        for start, end, title, show_as in sorted(entries):
            day, clock = self._local(person_id, start)
            end_day, end_clock = self._local(person_id, end)
            events.append({"date": day, "start": clock,
                           "end": end_clock if end_day == day else f"{end_day} {end_clock}",
                           "title": title, "show_as": show_as})
        person = self.state["people"][person_id]
        return {"person_id": person_id, "name": person["name"], "times_are": f"local time, {person['timezone']}",
                "events": events}

    @tool("List the meeting rooms (all in the organiser's office): room id, name, seats, equipment and hourly rate "
          "in dollars charged to the team's room budget.")
    def list_rooms(self):
        return {"office": self._week.office,
                "rooms": [{"room_id": rid, "name": r["name"], "seats": r["capacity"], "equipment": r["equipment"],
                           "hourly_rate": r["hourly_rate"]} for rid, r in self.state["rooms"].items()]}

    @tool("Show a room's bookings in the planning window, times in UTC. Meetings you have booked appear too.",
          {"room_id": {"type": "string", "description": "a room id from list_rooms"}})
    def get_room_schedule(self, room_id: str):
        if room_id not in self.state["rooms"]:
            raise ToolError(f"no room with id '{room_id}' (use list_rooms)")
        entries = [(b["start"], b["end"], b["booked_by"]) for b in self.state["room_bookings"].values()
                   if b["room"] == room_id]
        entries += [(b["start"], b["end"], f"{self._week.meetings[b['meeting']].title} (booked by you)")
                    for _, b in self._active() if b["room"] == room_id]
        week = self._week
        return {"room_id": room_id, "times_are": "UTC",
                "bookings": [{"date": week.utc_text(s)[:10], "start": _clock(s % DAY),
                              "end": week.utc_text(e) if e // DAY != s // DAY else _clock(e % DAY), "booked_by": who}
                             for s, e, who in sorted(entries)]}

    @tool("Book one of the requested meetings: sends the invitations and reserves the room. The system checks "
          "nothing else: not calendars, working hours, room size, equipment or conflicts. Returns the booking id "
          "and the room charge.",
          {"meeting": {"type": "string", "enum": ["A", "B"], "description": "which requested meeting this is"},
           "start_utc": {"type": "string", "description": "start in UTC, 'YYYY-MM-DD HH:MM', on the hour or half "
                                                          "hour, inside the planning window"},
           "duration_minutes": {"type": "integer", "description": "a multiple of 30, at most 480"},
           "room_id": {"type": "string"},
           "attendees": {"type": "array", "items": {"type": "string"}, "description": "person ids of every attendee"}})
    def book_meeting(self, meeting: str, start_utc: str, duration_minutes: int, room_id: str, attendees: list[str]):
        week = self._week
        match = _WHEN.match(start_utc)
        if not match:
            raise ToolError(f"start_utc '{start_utc}' is not of the form YYYY-MM-DD HH:MM (UTC)")
        try:
            day = (date.fromisoformat(match.group(1)) - week.first_day).days
        except ValueError:
            raise ToolError(f"'{match.group(1)}' is not a valid date") from None
        hour, minute = int(match.group(2)), int(match.group(3))
        if hour > 23 or minute > 59:
            raise ToolError(f"'{start_utc}' is not a valid time")
        start = day * DAY + hour * 60 + minute
        if minute % SLOT:
            raise ToolError("meetings start on the hour or half hour")
        if duration_minutes <= 0 or duration_minutes > 480 or duration_minutes % SLOT:
            raise ToolError("duration_minutes must be a positive multiple of 30, at most 480")
        if start < 0 or start + duration_minutes > HORIZON:
            raise ToolError(f"the meeting must lie inside the planning window {week.utc_text(0)} to "
                            f"{week.utc_text(HORIZON)} UTC")
        if room_id not in self.state["rooms"]:
            raise ToolError(f"no room with id '{room_id}' (use list_rooms)")
        if not attendees:
            raise ToolError("a meeting needs attendees")
        unknown = [p for p in attendees if p not in self.state["people"]]
        if unknown:
            raise ToolError(f"unknown person id(s): {', '.join(unknown[:5])}")
        if len(set(attendees)) != len(attendees):
            raise ToolError("an attendee is listed twice")
        booking_id = f"BK-{self._base + len(self.state['bookings']) + 1}"
        cost = self.state["rooms"][room_id]["hourly_rate"] * duration_minutes // 60
        self.state["bookings"][booking_id] = {"meeting": meeting, "start": start, "end": start + duration_minutes,
                                              "room": room_id, "attendees": sorted(attendees), "cost": cost,
                                              "status": "active"}
        return {"booking_id": booking_id, "meeting": meeting, "title": week.meetings[meeting].title,
                "start_utc": week.utc_text(start), "end_utc": week.utc_text(start + duration_minutes),
                "room_id": room_id, "attendees": sorted(attendees), "room_charge": cost}

    @tool("Cancel a booking you made; the room is released and the invitations withdrawn.",
          {"booking_id": {"type": "string"}})
    def cancel_booking(self, booking_id: str):
        booking = self.state["bookings"].get(booking_id)
        if booking is None:
            raise ToolError(f"no booking '{booking_id}' made by you")
        if booking["status"] != "active":
            raise ToolError(f"booking '{booking_id}' is already cancelled")
        booking["status"] = "cancelled"
        return {"booking_id": booking_id, "status": "cancelled"}


def _check_week(week: Week, env: CalendarEnv, answer: str | None) -> dict[str, bool]:
    """Every rule checked on the final bookings (any plan that meets them all passes)."""
    active = env._active()
    mine = {k: [b for _, b in active if b["meeting"] == k] for k in ("A", "B")}
    ids = {k: [bid for bid, b in active if b["meeting"] == k] for k in ("A", "B")}
    one = {k: mine[k][0] if len(mine[k]) == 1 else None for k in ("A", "B")}
    verdict: dict[str, bool] = {}
    for key, booking in one.items():
        meeting = week.meetings[key]
        others = [b for _, b in active if b is not booking]
        verdict[f"{key}_booked"] = booking is not None and booking["attendees"] == sorted(meeting.attendees) \
            and booking["end"] - booking["start"] == meeting.duration
        verdict[f"{key}_attendees_available"] = booking is not None and all(
            week.in_hours(p, booking["start"], booking["end"]) and not week.blocked(p, booking["start"], booking["end"])
            and not any(p in o["attendees"] and o["start"] < booking["end"] and booking["start"] < o["end"]
                        for o in others) for p in meeting.attendees)
        verdict[f"{key}_room_suitable"] = booking is not None and week.room_fits(key, booking["room"]) \
            and week.room_free(booking["room"], booking["start"], booking["end"]) \
            and not any(o["room"] == booking["room"] and o["start"] < booking["end"] and booking["start"] < o["end"]
                        for o in others)
    both = one["A"] is not None and one["B"] is not None
    verdict["order"] = both and one["B"]["start"] >= one["A"]["end"] + week.gap
    days: dict[int, int] = {}
    for _, b in active:
        if week.lead in b["attendees"]:
            day = week.local_day(week.lead, b["start"])
            days[day] = days.get(day, 0) + 1
    verdict["daily_cap"] = both and all(week.lead_count(d) + n <= week.cap for d, n in days.items())
    verdict["budget"] = both and sum(b["cost"] for _, b in active) <= week.budget
    text = answer or ""
    verdict["answer"] = both and all(
        ids[k][0].lower() in text.lower()
        and re.search(re.escape(week.utc_text(one[k]["start"])[:10]) + r"[T ,]*" + re.escape(
            week.utc_text(one[k]["start"])[11:]), text) is not None for k in ("A", "B"))
    verdict["one_booking_each"] = all(len(mine[k]) <= 1 for k in ("A", "B"))
    return verdict


MEETING_CHECKS = (
    Check("A_booked", "meeting A is booked once, with exactly its attendees and its duration"),
    Check("A_attendees_available", "every attendee of A is in working hours and not busy or tentative"),
    Check("A_room_suitable", "A's room seats the local attendees and visitors, has video if needed, and is free"),
    Check("B_booked", "meeting B is booked once, with exactly its attendees and its duration"),
    Check("B_attendees_available", "every attendee of B is in working hours and not busy or tentative"),
    Check("B_room_suitable", "B's room seats the local attendees, has video if needed, and is free"),
    Check("order", "B starts at least the required gap after A ends"),
    Check("daily_cap", "the organiser's events per local day stay within their cap"),
    Check("budget", "the room charges stay within the budget"),
    Check("answer", "the answer gives each booking id and its UTC start"),
    Check("one_booking_each", "no meeting is booked twice", guard=True),
)


@dataclass
class MeetingWorld:
    """A solved scheduling week, its rooms (A's, B's and the booked bargain), attendee groups, the first booking
    number and the visiting client."""

    week: Week
    plant: _Plant
    rooms: tuple[str, str, str]
    groups: dict[str, list[str]]
    base: int
    client: str


def meeting_schedule(rng: ItemRng) -> AgTask:
    """Book a review and a follow-up decision meeting across time zones, rooms, a daily cap and a room budget."""
    world = _meeting_world(rng)
    reference, wasteful = _meeting_scripts(world)
    frozen = copy.deepcopy(world.week)
    return AgTask(prompt=_meeting_prompt(world), make_env=lambda: CalendarEnv(copy.deepcopy(frozen), world.base),
                  checks=MEETING_CHECKS, evaluate=lambda env, text: _check_week(frozen, env, text),
                  reference=reference, wasteful=wasteful)


def _meeting_world(rng: ItemRng) -> MeetingWorld:
    """The first week drawn that has exactly one plan, then the booking numbers and the visitors' company."""
    for attempt in range(400):
        drawn = _draw_week(rng.fork(f"week-{attempt}"))
        if drawn is not None:
            break
    else:
        raise RuntimeError("no schedulable week found")  # never happens for the seeds the tests cover
    week, plant, rooms, groups = drawn
    base = 1000 * rng.randint(2, 9) + rng.randint(0, 899)
    return MeetingWorld(week, plant, rooms, groups, base, rng.choice(CLIENTS))


def _meeting_prompt(world: MeetingWorld) -> str:
    """The two meetings to book and the hard rules."""
    week, groups = world.week, world.groups
    people = week.people
    lead = people[week.lead]
    first, second = week.meetings["A"], week.meetings["B"]
    team = people[week.lead].team
    guest = people[groups["guest"][0]].name
    days = ", ".join(f"{WEEKDAYS[(week.first_day + timedelta(days=d)).weekday()]} "
                     f"{week.first_day + timedelta(days=d)}" for d in range(3))
    return (
        f"You are the scheduling assistant of {lead.name} ({team} team lead, {week.office} office). Book two "
        f"meetings in the planning window {days} (00:00 to 24:00 UTC on those dates).\n\n"
        f"- Meeting A, \"{first.title}\": {first.duration} minutes with the whole {team} team (see the directory) "
        f"and {guest}. {first.visitors} visitor{'s' if first.visitors > 1 else ''} from "
        f"{world.client} will attend in person (visitors are not in the directory and "
        f"are not invited through the tool).\n"
        f"- Meeting B, \"{second.title}\": {second.duration} minutes with {lead.name}, "
        f"{people[groups['others'][0]].name} and {people[groups['others'][1]].name}. It must start at least "
        f"{week.gap} minutes after meeting A ends.\n\n"
        "Hard rules:\n"
        "1. Every attendee must be within their working hours, on one of their working days, for the whole meeting, "
        "judged in their own time zone.\n"
        "2. Events shown as busy or tentative make a person unavailable; events shown as free do not.\n"
        f"3. {lead.name} accepts at most {week.cap} meetings a day: on each of their local calendar days, their busy "
        f"and tentative events, counting the new meetings, must not exceed {week.cap}.\n"
        f"4. Every room is in the {week.office} office. A room must seat the attendees based in {week.office} plus "
        "the visitors, must be free for the whole meeting, and a meeting with any attendee based in another office "
        "needs a room with video conferencing.\n"
        f"5. The two room charges (hourly rate x duration) must total at most ${week.budget}.\n\n"
        "Book each meeting exactly once; cancel any booking you no longer want. When you are done, call submit with "
        "each meeting's booking id and its start time in UTC written as YYYY-MM-DD HH:MM.")


def _meeting_scripts(world: MeetingWorld) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one that rereads, books B at the trap slot and rebooks it."""
    week, plant, base = world.week, world.plant, world.base
    room_a, room_b, bargain = world.rooms
    first, second = week.meetings["A"], week.meetings["B"]
    ids = (f"BK-{base + 1}", f"BK-{base + 2}")

    def book(key: str, start: int, room: str) -> Call:
        meeting = week.meetings[key]
        return Call("book_meeting", {"meeting": key, "start_utc": week.utc_text(start),
                                     "duration_minutes": meeting.duration, "room_id": room,
                                     "attendees": list(meeting.attendees)})

    rooms_read = sorted({bargain, room_a, room_b})  # the cheapest fitting rooms an efficient agent checks
    reads = [Call("list_people")]
    reads += [Call("get_calendar", {"person_id": pid}) for pid in sorted(set(first.attendees) | set(second.attendees))]
    reads += [Call("list_rooms")] + [Call("get_room_schedule", {"room_id": rid}) for rid in rooms_read]

    def answer(b_id: str) -> str:
        return (f"Meeting A: {ids[0]} at {week.utc_text(plant.a_start)} UTC; "
                f"meeting B: {b_id} at {week.utc_text(plant.b_start)} UTC.")

    reference = (*reads, book("A", plant.a_start, room_a), book("B", plant.b_start, room_b),
                 Call("submit", {"answer": answer(ids[1])}))
    wasteful = (reads[0], reads[0], *reads[1:], Call("list_rooms"), book("A", plant.a_start, room_a),
                book("B", plant.b_trap, room_b), Call("cancel_booking", {"booking_id": ids[1]}),
                book("B", plant.b_start, room_b), Call("submit", {"answer": answer(f"BK-{base + 3}")}))
    return reference, wasteful


# ================================================================= task 2: a conference trip under a budget

CITIES = (("Lisbon", "LIS", 0), ("Copenhagen", "CPH", 60), ("Vienna", "VIE", 60), ("Dublin", "DUB", 0),
          ("Montreal", "YUL", -300), ("Chicago", "ORD", -360), ("Denver", "DEN", -420), ("Madrid", "MAD", 60),
          ("Prague", "PRG", 60), ("Edinburgh", "EDI", 0), ("Boston", "BOS", -300), ("Oslo", "OSL", 60),
          ("Austin", "AUS", -360), ("Toronto", "YYZ", -300), ("Athens", "ATH", 120), ("Seattle", "SEA", -480))
CARRIERS = (("Aurora Air", "AU", "SkyStar"), ("Bluewing", "BW", "Bluewing Club"),
            ("Cirrus Airlines", "CR", "Cirrus Miles"), ("Meridian", "MD", "Meridian Plus"),
            ("Solstice Air", "SX", "Solstice Rewards"), ("Northjet", "NJ", "JetPoints"))
CHAINS = ("Harbor", "Lumen", "Corvid", "Alder", "Sable")
INDEPENDENTS = ("Hotel Marisol", "The Linden", "Casa Verde", "The Foundry Inn", "Pier Seven Lodge", "Hotel Aster",
                "The Wren", "Hotel Calma")
DISTRICTS = ("Old Town", "Riverside", "Central Station", "Harbourfront", "Arts Quarter", "Convention Centre",
             "University", "Market Square")
EVENTS = ("Nordic Data Summit", "Open Logistics Forum", "Applied ML Conference", "FinOps World", "CloudOps Days",
          "Retail Tech Expo", "Secure Systems Symposium")
TRAVELLERS = ("Dana Whitfield", "Rui Matsuda", "Ines Carvalho", "Marek Horvath", "Leah Goldberg", "Tobias Brandt",
              "Noor Siddiqui", "Grace Mwangi")
FARES = ("Basic", "Standard", "Flex")


@dataclass(frozen=True)
class Fare:
    """One fare on one flight; times are local at the departure and arrival airports."""

    id: str
    flight: str
    carrier: str
    origin: str
    destination: str
    departs: datetime
    arrives: datetime
    cls: str
    price: int  # dollars

    @property
    def refundable(self) -> bool:
        return self.cls == "Flex"


@dataclass(frozen=True)
class Rate:
    """One rate plan of one hotel."""

    id: str
    hotel_id: str
    hotel: str
    chain: str
    distance: int  # tenths of a km to the venue
    plan: str
    nightly: int  # dollars
    fee: int  # dollars per night, never discounted

    @property
    def refundable(self) -> bool:
        return self.plan == "Flexible"


@dataclass(frozen=True)
class TripRules:
    """The cost and validity rules; the generator switches each off to prove that ignoring it misleads."""

    bag_fees: bool = True
    loyalty: bool = True
    condition: bool = True
    times: bool = True
    hotel_policy: bool = True


@dataclass
class Trip:
    """One trip instance."""

    traveller: str
    home: tuple[str, str]
    city: tuple[str, str]
    event_id: str
    event: str
    venue: str
    start: datetime
    end: datetime
    land_before: int  # minutes
    leave_after: int  # minutes
    max_distance: int  # tenths of a km
    carriers: dict[str, dict[str, Any]]  # name -> {"code", "programme", "bag_fee"}
    loyal_carrier: str
    chain: str
    discount: int  # percent off the nightly room rate
    min_nights: int
    fares: dict[str, Fare] = field(default_factory=dict)
    rates: dict[str, Rate] = field(default_factory=dict)
    budget: int = 0  # cents

    def bag_cost(self, fare: Fare, bags: int, rules: TripRules = TripRules()) -> int:
        if not rules.bag_fees:
            return 0
        free = 1 if fare.cls == "Flex" or (rules.loyalty and fare.cls == "Standard"
                                           and fare.carrier == self.loyal_carrier) else 0
        return max(0, bags - free) * self.carriers[fare.carrier]["bag_fee"] * 100

    def fare_cost(self, fare: Fare, bags: int = 1, rules: TripRules = TripRules()) -> int:
        return fare.price * 100 + self.bag_cost(fare, bags, rules)

    def stay_cost(self, rate: Rate, nights: int, rules: TripRules = TripRules()) -> int:
        member = rules.loyalty and rate.chain == self.chain and (nights >= self.min_nights or not rules.condition)
        return nights * (rate.nightly * (100 - (self.discount if member else 0)) + rate.fee * 100)

    def outbound_ok(self, fare: Fare) -> bool:
        return fare.origin == self.home[1] and fare.arrives <= self.start - timedelta(minutes=self.land_before)

    def return_ok(self, fare: Fare) -> bool:
        return fare.origin == self.city[1] and fare.departs >= self.end + timedelta(minutes=self.leave_after)

    def hotel_ok(self, rate: Rate) -> bool:
        return rate.refundable and rate.distance <= self.max_distance


Plan = tuple[int, str, str, str]  # cost in cents, outbound fare id, return fare id, rate id


def _ranked(trip: Trip, rules: TripRules) -> list[Plan]:
    """Plans in order of cost under the rules (keeping the three cheapest of each part per date or stay length)."""
    def cheapest(items: list[tuple[int, str, Any]]) -> dict[Any, list[tuple[int, str]]]:
        groups: dict[Any, list[tuple[int, str]]] = {}
        for cost, fid, group in sorted(items):
            groups.setdefault(group, [])
            if len(groups[group]) < 3:
                groups[group].append((cost, fid))
        return groups

    fares = trip.fares.values()
    outs = cheapest([(trip.fare_cost(f, 1, rules), f.id, f.arrives.date()) for f in fares
                     if f.origin == trip.home[1] and (trip.outbound_ok(f) or not rules.times)])
    backs = cheapest([(trip.fare_cost(f, 1, rules), f.id, f.departs.date()) for f in fares
                      if f.origin == trip.city[1] and (trip.return_ok(f) or not rules.times)])
    rates = [r for r in trip.rates.values() if trip.hotel_ok(r) or not rules.hotel_policy]
    plans = []
    for arrival, out_list in outs.items():
        for departure, back_list in backs.items():
            nights = (departure - arrival).days
            if nights < 1:
                continue
            stays = sorted((trip.stay_cost(r, nights, rules), r.id) for r in rates)[:3]
            plans += [(o[0] + b[0] + s[0], o[1], b[1], s[1]) for o in out_list for b in back_list for s in stays]
    return sorted(plans)


def _true_cost(trip: Trip, plan: Plan) -> int:
    out, back = trip.fares[plan[1]], trip.fares[plan[2]]
    nights = (back.departs.date() - out.arrives.date()).days
    return trip.fare_cost(out) + trip.fare_cost(back) + trip.stay_cost(trip.rates[plan[3]], nights)


def _misleads(trip: Trip, rules: TripRules, best: Plan) -> bool:
    """True when every cheapest plan under the mistaken rules differs from the real best plan."""
    ranked = _ranked(trip, rules)
    tied = [p for p in ranked if p[0] == ranked[0][0]]
    return all(p[1:] != best[1:] for p in tied)


def _sticker_plan(trip: Trip) -> Plan:
    """The naive plan: lowest ticket price each way and lowest allowed nightly rate, ignoring every fee."""
    out = min((f.price, f.id) for f in trip.fares.values() if trip.outbound_ok(f))[1]
    back = min((f.price, f.id) for f in trip.fares.values() if trip.return_ok(f))[1]
    rate = min((r.nightly, r.id) for r in trip.rates.values() if trip.hotel_ok(r))[1]
    plan = (0, out, back, rate)
    return (_true_cost(trip, plan), out, back, rate)


def _flight_day(r: ItemRng, trip: Trip, day: date, origin: str, destination: str, shift: int, block: int,
                used: set[tuple[date, str]], departures: list[int], cheap: list[bool]) -> None:
    for minute, is_cheap in zip(departures, cheap):
        carrier = r.choice(sorted(trip.carriers))
        while True:
            number = f"{trip.carriers[carrier]['code']}{r.randint(100, 989)}"
            if (day, number) not in used:
                used.add((day, number))
                break
        departs = datetime.combine(day, time()) + timedelta(minutes=minute)
        arrives = departs + timedelta(minutes=block + r.randint(-3, 3) * 5 + shift)
        basic = 10 * (r.randint(8, 14) if is_cheap else r.randint(15, 28)) - 1
        premium = r.randint(2, 4) if carrier == trip.loyal_carrier else r.randint(3, 7)
        prices = {"Basic": basic, "Standard": basic + 10 * premium, "Flex": basic + 10 * r.randint(12, 24)}
        for cls in FARES:
            fid = f"{number}-{day:%m%d}-{cls[:3].upper()}"
            trip.fares[fid] = Fare(fid, number, carrier, origin, destination, departs, arrives, cls, prices[cls])


def _draw_trip(r: ItemRng) -> Trip | None:
    home, city = r.sample(CITIES, 2)
    if abs(city[2] - home[2]) > 420:
        return None
    picked = r.sample(CARRIERS, 3)
    carriers = {name: {"code": code, "programme": programme, "bag_fee": r.choice([30, 35, 40, 45, 50, 60])}
                for name, code, programme in picked}
    first_day = date(2026, 2, 2) + timedelta(days=r.randint(0, 600))
    days = r.choice([2, 3])
    last_day = first_day + timedelta(days=days - 1)
    start = datetime.combine(first_day, time()) + timedelta(minutes=r.choice([540, 570, 600, 630]))
    end = datetime.combine(last_day, time()) + timedelta(minutes=r.choice([960, 990, 1020, 1050]))
    chain = r.choice(CHAINS)
    trip = Trip(traveller=r.choice(TRAVELLERS), home=(home[0], home[1]), city=(city[0], city[1]),
                event_id=f"EV-{r.randint(1000, 9999)}", event=r.choice(EVENTS),
                venue=f"{r.choice(DISTRICTS)} Congress Hall", start=start, end=end,
                land_before=r.choice([90, 120, 150, 180]), leave_after=r.choice([90, 120, 150]),
                max_distance=r.choice([15, 20, 25]), carriers=carriers, loyal_carrier=picked[0][0], chain=chain,
                discount=r.choice([15, 20, 25]), min_nights=days - 1 + r.randint(1, 2))
    shift = city[2] - home[2]
    block = 5 * r.randint(14, 30) + 5 * (abs(shift) * 4 // 15)  # longer flights across more time zones
    used: set[tuple[date, str]] = set()
    last_out = max(600, min(1290, 1400 - block - shift))  # so that most flights land on their departure date
    last_back = max(600, min(1290, 1400 - block + shift))

    def departures(low: int, high: int, count: int) -> list[int]:
        return sorted(5 * r.randint(low // 5, max(low, high) // 5) for _ in range(count))

    deadline = trip.start - timedelta(minutes=trip.land_before)
    latest = int((deadline - timedelta(minutes=block + shift + 20) - datetime.combine(first_day, time()))
                 .total_seconds() // 60)  # the last departure that surely lands in time
    leave = end.hour * 60 + end.minute + trip.leave_after  # the first allowed return departure
    for offset in range(-2, days + 2):
        day = first_day + timedelta(days=offset)
        if day <= last_day + timedelta(days=1):
            times = departures(360, last_out, r.randint(3, 4))
            cheap = [r.randint(0, 2) == 0 for _ in times]
            if day == first_day and 300 <= latest <= last_out - 40:  # one early flight in time, cheaper late ones
                times = [5 * r.randint(max(300, latest - 120) // 5, latest // 5)]
                times += departures(latest + 40, last_out, r.randint(2, 3))
                cheap = [False] + [True] * (len(times) - 1)
            _flight_day(r, trip, day, home[1], city[1], shift, block, used, times, cheap)
        if day >= first_day - timedelta(days=1):
            times = departures(360, last_back, r.randint(3, 4))
            cheap = [r.randint(0, 2) == 0 for _ in times]
            if day == last_day:  # cheap flights before the event ends, dearer ones after
                if leave + 5 > last_back:
                    return None
                before = departures(720, leave - 5, r.randint(1, 2))
                times, cheap = before + departures(leave + 5, last_back, r.randint(1, 2)), [True] * len(before)
                cheap += [False] * (len(times) - len(before))
            _flight_day(r, trip, day, city[1], home[1], -shift, block, used, times, cheap)
    names = r.sample(INDEPENDENTS, 3) + [f"{c} {d}" for c, d in zip(r.sample(CHAINS, 3), r.sample(DISTRICTS, 3))]
    names[3] = f"{chain} {names[3].split(' ', 1)[1]}"  # at least one hotel of the traveller's chain
    if r.randint(0, 1):
        names[4] = f"{chain} {names[4].split(' ', 1)[1]}"
    near = lambda: r.randint(3, trip.max_distance)  # noqa: E731 - tenths of a km
    specs = [(names[0], trip.max_distance + r.randint(4, 25), r.randint(8, 12)),  # cheapest, too far
             (names[1], near(), r.randint(12, 17)),
             (names[2], r.choice([near(), trip.max_distance + r.randint(2, 15)]), r.randint(13, 20)),
             (names[3], near(), r.randint(16, 23)),
             (names[4], near(), r.randint(14, 24)),
             (names[5], near(), r.randint(17, 26))]
    order = list(range(len(specs)))
    r.shuffle(order)
    for index, position in enumerate(order):
        name, distance, tens = specs[position]
        hotel_id = f"H-{r.randint(100, 999)}{index}"
        saver = 10 * tens - 1
        flexible = saver + 5 * r.randint(4, 10)
        fee = r.choice([0, 0, 12, 18, 25, 32])
        chain_name = name.split(" ", 1)[0] if name.split(" ", 1)[0] in CHAINS else "independent"
        for plan, nightly in (("Saver", saver), ("Flexible", flexible)):
            rid = f"{hotel_id}-{plan[:4].upper()}"
            trip.rates[rid] = Rate(rid, hotel_id, name, chain_name, distance, plan, nightly, fee)
    return trip


def _solve_trip(r: ItemRng, trip: Trip) -> Plan | None:
    """The unique cheapest valid plan and a budget it alone meets, when every trap holds; else None."""
    ranked = _ranked(trip, TripRules())
    if len(ranked) < 2 or ranked[1][0] - ranked[0][0] < 500:
        return None
    best = ranked[0]
    out, back = trip.fares[best[1]], trip.fares[best[2]]
    first_day, last_day = trip.start.date(), trip.end.date()
    if out.departs.date() not in (first_day - timedelta(days=1), first_day) \
            or back.departs.date() not in (last_day, last_day + timedelta(days=1)):
        return None  # the efficient agent searches these four dates
    budget = -(-best[0] // 100) * 100
    budget += 500 * r.randint(0, max(0, min(2, (ranked[1][0] - 1 - budget) // 500)))
    if budget >= ranked[1][0]:
        return None
    trip.budget = budget
    traps = (TripRules(bag_fees=False), TripRules(loyalty=False), TripRules(times=False),
             TripRules(hotel_policy=False))
    if not all(_misleads(trip, rules, best) for rules in traps + (TripRules(condition=False),)):
        return None
    if _sticker_plan(trip)[1:] == best[1:]:
        return None
    return best


class TravelEnv(Environment):
    """A travel desk: the event, the traveller's profile, flight and hotel search, bookings and cancellations."""

    def __init__(self, trip: Trip, booking_base: int):
        super().__init__()
        self._trip = trip
        self._base = booking_base
        self.state = {"bookings": {}}

    def _fare_view(self, fare: Fare) -> dict[str, Any]:
        fee = self._trip.carriers[fare.carrier]["bag_fee"]
        bag = f"1 bag included, then ${fee} per bag" if fare.cls == "Flex" else f"${fee} per checked bag"
        return {"fare_id": fare.id, "class": fare.cls, "price": fare.price, "refundable": fare.refundable,
                "checked_bags": bag}

    @tool("Look up an event by id: name, venue, city, airport and its start and end (local time).",
          {"event_id": {"type": "string"}})
    def get_event(self, event_id: str):
        trip = self._trip
        if event_id.strip().upper() != trip.event_id:
            raise ToolError(f"no event '{event_id}'")
        return {"event_id": trip.event_id, "name": trip.event, "venue": trip.venue, "city": trip.city[0],
                "airport": trip.city[1], "starts": f"{trip.start:%Y-%m-%d %H:%M}", "ends": f"{trip.end:%Y-%m-%d %H:%M}",
                "times_are": "local time in the event city"}

    @tool("The traveller's profile: home airport, luggage and loyalty memberships with their benefits and conditions "
          "(benefits are applied automatically when you book).")
    def get_traveller(self):
        trip = self._trip
        loyal = trip.carriers[trip.loyal_carrier]
        other = next(c for c in sorted(trip.carriers) if c != trip.loyal_carrier)
        return {"name": trip.traveller, "home_city": trip.home[0], "home_airport": trip.home[1],
                "luggage": "always travels with exactly one checked bag (equipment case)",
                "memberships": [
                    {"programme": f"{loyal['programme']} ({trip.loyal_carrier})", "tier": "Gold",
                     "benefit": f"first checked bag free on {trip.loyal_carrier} Standard and Flex fares; "
                                "Basic fares are excluded"},
                    {"programme": f"{trip.carriers[other]['programme']} ({other})", "tier": "Blue",
                     "benefit": "priority boarding only; no baggage benefit"},
                    {"programme": f"{trip.chain} Rewards", "tier": "Member",
                     "benefit": f"member rate: {trip.discount}% off the nightly room rate (not the nightly fee) at "
                                f"{trip.chain} hotels, on stays of {trip.min_nights} nights or more"}]}

    @tool("Search flights departing on one date. Times are local at each airport. Each flight lists its fares: price "
          "in dollars (per person, bags extra), whether it is refundable, and the checked-bag rule.",
          {"origin": {"type": "string", "description": "IATA airport code"},
           "destination": {"type": "string", "description": "IATA airport code"},
           "date": {"type": "string", "description": "departure date, YYYY-MM-DD (local)"}})
    def search_flights(self, origin: str, destination: str, date: str):
        trip = self._trip
        airports = (trip.home[1], trip.city[1])
        origin, destination = origin.strip().upper(), destination.strip().upper()
        if origin not in airports or destination not in airports:
            raise ToolError(f"no service for that route; served airports: {', '.join(airports)}")
        if origin == destination:
            raise ToolError("origin and destination are the same airport")
        day = _parse_date(date)
        flights: dict[str, dict[str, Any]] = {}
        for fare in trip.fares.values():
            if fare.origin == origin and fare.departs.date() == day:
                entry = flights.setdefault(fare.flight, {
                    "flight": fare.flight, "carrier": fare.carrier, "departs": f"{fare.departs:%Y-%m-%d %H:%M}",
                    "arrives": f"{fare.arrives:%Y-%m-%d %H:%M}", "fares": []})
                entry["fares"].append(self._fare_view(fare))
        listed = sorted(flights.values(), key=lambda f: f["departs"])
        return {"origin": origin, "destination": destination, "date": str(day),
                "times_are": "local time at each airport", "flights": listed}

    @tool("Search hotels in a city (name or airport code): distance to the event venue, rate plans with the nightly "
          "room rate and cancellation terms, and the nightly fee (city tax and resort fee) charged on top. Rates are "
          "the same every night.", {"city": {"type": "string"}})
    def search_hotels(self, city: str):
        trip = self._trip
        if city.strip().lower() not in (trip.city[0].lower(), trip.city[1].lower()):
            raise ToolError(f"no hotels listed for '{city}'; this desk covers {trip.city[0]} ({trip.city[1]})")
        hotels: dict[str, dict[str, Any]] = {}
        for rate in trip.rates.values():
            entry = hotels.setdefault(rate.hotel_id, {
                "hotel_id": rate.hotel_id, "name": rate.hotel, "chain": rate.chain,
                "distance_to_venue_km": rate.distance / 10, "nightly_fee": rate.fee, "rates": []})
            entry["rates"].append({"rate_id": rate.id, "plan": rate.plan, "nightly_rate": rate.nightly,
                                   "cancellation": "free cancellation" if rate.refundable else "non-refundable"})
        return {"city": trip.city[0], "venue": trip.venue, "hotels": list(hotels.values())}

    def _new_id(self) -> str:
        return f"TR-{self._base + len(self.state['bookings']) + 1}"

    @tool("Buy a fare for the traveller with a number of checked bags. Charged at once: fare plus bag fees, after "
          "any loyalty benefit the traveller qualifies for. Basic and Standard fares are non-refundable.",
          {"fare_id": {"type": "string"}, "checked_bags": {"type": "integer", "description": "0 to 3"}})
    def book_flight(self, fare_id: str, checked_bags: int):
        trip = self._trip
        fare = trip.fares.get(fare_id.strip().upper())
        if fare is None:
            raise ToolError(f"no fare '{fare_id}' (use search_flights)")
        if not 0 <= checked_bags <= 3:
            raise ToolError("checked_bags must be between 0 and 3")
        charge = trip.fare_cost(fare, checked_bags)
        booking_id = self._new_id()
        self.state["bookings"][booking_id] = {"kind": "flight", "item": fare.id, "checked_bags": checked_bags,
                                              "charge_cents": charge, "refundable": fare.refundable,
                                              "status": "active"}
        return {"booking_id": booking_id, "flight": fare.flight, "fare": fare.cls,
                "departs": f"{fare.departs:%Y-%m-%d %H:%M}", "arrives": f"{fare.arrives:%Y-%m-%d %H:%M}",
                "checked_bags": checked_bags, "charged": dollar_figure(charge), "refundable": fare.refundable}

    @tool("Reserve a hotel rate. Charged: nights x (nightly room rate after any member discount the traveller "
          "qualifies for + nightly fee).",
          {"rate_id": {"type": "string"}, "check_in": {"type": "string", "description": "YYYY-MM-DD"},
           "check_out": {"type": "string", "description": "YYYY-MM-DD"}})
    def book_hotel(self, rate_id: str, check_in: str, check_out: str):
        trip = self._trip
        rate = trip.rates.get(rate_id.strip().upper())
        if rate is None:
            raise ToolError(f"no rate '{rate_id}' (use search_hotels)")
        arrive, leave = _parse_date(check_in), _parse_date(check_out)
        nights = (leave - arrive).days
        if nights < 1:
            raise ToolError("check_out must be after check_in")
        window = (trip.start.date() - timedelta(days=7), trip.end.date() + timedelta(days=7))
        if arrive < window[0] or leave > window[1]:
            raise ToolError(f"the hotel takes bookings only between {window[0]} and {window[1]}")
        charge = trip.stay_cost(rate, nights)
        booking_id = self._new_id()
        self.state["bookings"][booking_id] = {"kind": "hotel", "item": rate.id, "check_in": str(arrive),
                                              "check_out": str(leave), "charge_cents": charge,
                                              "refundable": rate.refundable, "status": "active"}
        return {"booking_id": booking_id, "hotel": rate.hotel, "plan": rate.plan, "check_in": str(arrive),
                "check_out": str(leave), "nights": nights, "charged": dollar_figure(charge),
                "refundable": rate.refundable}

    @tool("Cancel a booking. Refundable bookings are refunded in full; for non-refundable ones the whole charge is "
          "kept.", {"booking_id": {"type": "string"}})
    def cancel_booking(self, booking_id: str):
        booking = self.state["bookings"].get(booking_id.strip().upper())
        if booking is None:
            raise ToolError(f"no booking '{booking_id}'")
        if booking["status"] != "active":
            raise ToolError(f"booking '{booking_id}' is already cancelled")
        booking["status"] = "cancelled"
        kept = 0 if booking["refundable"] else booking["charge_cents"]
        return {"booking_id": booking_id.strip().upper(), "status": "cancelled",
                "refunded": dollar_figure(booking["charge_cents"] - kept), "charge_kept": dollar_figure(kept)}

    @tool("The trip's bookings with their status and charges.")
    def list_bookings(self):
        return [{"booking_id": bid, "kind": b["kind"], "item": b["item"], "status": b["status"],
                 "charged": dollar_figure(b["charge_cents"]), "refundable": b["refundable"]}
                for bid, b in self.state["bookings"].items()]


def trip_spent(env: TravelEnv) -> int:
    """Cents the trip cost: active bookings plus the charges kept on cancelled non-refundable ones."""
    return sum(b["charge_cents"] for b in env.state["bookings"].values()
               if b["status"] == "active" or not b["refundable"])


def _check_trip(trip: Trip, env: TravelEnv, answer: str | None) -> dict[str, bool]:
    active = [b for b in env.state["bookings"].values() if b["status"] == "active"]
    outs = [b for b in active if b["kind"] == "flight" and trip.fares[b["item"]].origin == trip.home[1]]
    backs = [b for b in active if b["kind"] == "flight" and trip.fares[b["item"]].origin == trip.city[1]]
    stays = [b for b in active if b["kind"] == "hotel"]
    out = trip.fares[outs[0]["item"]] if len(outs) == 1 else None
    back = trip.fares[backs[0]["item"]] if len(backs) == 1 else None
    stay = stays[0] if len(stays) == 1 else None
    complete = out is not None and back is not None and stay is not None
    spent = trip_spent(env)
    return {
        "outbound_on_time": out is not None and trip.outbound_ok(out),
        "return_after_event": back is not None and trip.return_ok(back),
        "bags_on_both_flights": out is not None and back is not None
        and outs[0]["checked_bags"] >= 1 and backs[0]["checked_bags"] >= 1,
        "hotel_covers_stay": complete and stay["check_in"] == str(out.arrives.date())
        and stay["check_out"] == str(back.departs.date()),
        "hotel_meets_policy": stay is not None and trip.hotel_ok(trip.rates[stay["item"]]),
        "within_budget": complete and spent <= trip.budget,
        "answer_total": complete and spent in cents_in(answer or "", grouped_only=True),
        "no_double_booking": len(outs) <= 1 and len(backs) <= 1 and len(stays) <= 1,
    }


TRIP_CHECKS = (
    Check("outbound_on_time", "one outbound flight, landing early enough before the event starts"),
    Check("return_after_event", "one return flight, leaving late enough after the event ends"),
    Check("bags_on_both_flights", "the checked bag is booked on both flights"),
    Check("hotel_covers_stay", "one hotel booking from the landing date to the return date"),
    Check("hotel_meets_policy", "the hotel is within the distance limit, on a free-cancellation rate"),
    Check("within_budget", "everything charged, including kept cancellation charges, is within the budget"),
    Check("answer_total", "the answer states the exact total charged"),
    Check("no_double_booking", "no leg or hotel is booked twice", guard=True),
)


def trip_booking(rng: ItemRng) -> AgTask:
    """Book flights and a hotel for a conference under policy, loyalty benefits and a budget only one plan meets."""
    trip, best, base = _trip_world(rng)
    reference, wasteful = _trip_scripts(trip, best, base)
    frozen = copy.deepcopy(trip)
    return AgTask(prompt=_trip_prompt(trip), make_env=lambda: TravelEnv(copy.deepcopy(frozen), base),
                  checks=TRIP_CHECKS, evaluate=lambda env, text: _check_trip(frozen, env, text), reference=reference,
                  wasteful=wasteful)


def _trip_world(rng: ItemRng) -> tuple[Trip, Plan, int]:
    """The first trip drawn whose traps all hold, its one best plan, and the first booking number."""
    for attempt in range(1000):
        r = rng.fork(f"trip-{attempt}")
        trip = _draw_trip(r)
        best = _solve_trip(r, trip) if trip is not None else None
        if best is not None:
            break
    else:
        raise RuntimeError("no bookable trip found")  # never happens for the seeds the tests cover
    return trip, best, 100 * rng.randint(10, 99)


def _trip_prompt(trip: Trip) -> str:
    """The trip to book and the travel policy."""
    return (
        f"You are the travel assistant of {trip.traveller}, who is attending {trip.event} (event id "
        f"{trip.event_id}). Book the trip: a flight from {trip.traveller}'s home airport to the event city, a flight "
        "back, and one hotel for every night in between.\n\n"
        "Company travel policy (every rule is mandatory):\n"
        f"1. The outbound flight must land at least {trip.land_before} minutes before the event starts.\n"
        f"2. The return flight must depart at least {trip.leave_after} minutes after the event ends.\n"
        f"3. {trip.traveller.split()[0]}'s checked bag must be booked on both flights.\n"
        f"4. The hotel must be at most {trip.max_distance / 10} km from the venue and booked on a rate with free "
        "cancellation. Check in on the date the outbound flight lands and check out on the date the return flight "
        "departs.\n"
        f"5. Everything charged for the trip (fares, bag fees, room rates, nightly fees, and any charge kept when a "
        f"booking is cancelled) must total at most ${trip.budget // 100}.\n\n"
        "Book each flight and the hotel exactly once. When you are done, call submit with the total amount charged "
        "for the trip in dollars and cents.")


def _trip_scripts(trip: Trip, best: Plan, base: int) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one that rereads and books then cancels a refundable decoy."""
    out, back, rate = trip.fares[best[1]], trip.fares[best[2]], trip.rates[best[3]]
    first_day, last_day = trip.start.date(), trip.end.date()
    day = lambda d: str(d)  # noqa: E731
    reads = (Call("get_event", {"event_id": trip.event_id}), Call("get_traveller"),
             Call("search_flights", {"origin": trip.home[1], "destination": trip.city[1],
                                     "date": day(first_day - timedelta(days=1))}),
             Call("search_flights", {"origin": trip.home[1], "destination": trip.city[1], "date": day(first_day)}),
             Call("search_flights", {"origin": trip.city[1], "destination": trip.home[1], "date": day(last_day)}),
             Call("search_flights", {"origin": trip.city[1], "destination": trip.home[1],
                                     "date": day(last_day + timedelta(days=1))}),
             Call("search_hotels", {"city": trip.city[0]}))
    hotel = Call("book_hotel", {"rate_id": rate.id, "check_in": str(out.arrives.date()),
                                "check_out": str(back.departs.date())})
    books = (Call("book_flight", {"fare_id": out.id, "checked_bags": 1}),
             Call("book_flight", {"fare_id": back.id, "checked_bags": 1}))
    answer = Call("submit", {"answer": f"Total charged: ${dollar_figure(best[0])}"})
    decoy = next(r for r in trip.rates.values() if r.refundable and r.hotel_id != rate.hotel_id)
    wasteful = (*reads[:2], reads[1], *reads[2:], reads[6], *books,
                Call("book_hotel", {"rate_id": decoy.id, "check_in": str(out.arrives.date()),
                                    "check_out": str(back.departs.date())}),
                Call("cancel_booking", {"booking_id": f"TR-{base + 3}"}), hotel, answer)
    return (*reads, *books, hotel, answer), wasteful


def sticker_calls(task_trip: Trip) -> tuple[Call, ...]:
    """The bookings of the naive lowest-sticker-price plan (for tests of partial agents)."""
    plan = _sticker_plan(task_trip)
    out, back = task_trip.fares[plan[1]], task_trip.fares[plan[2]]
    return (Call("book_flight", {"fare_id": out.id, "checked_bags": 1}),
            Call("book_flight", {"fare_id": back.id, "checked_bags": 1}),
            Call("book_hotel", {"rate_id": plan[3], "check_in": str(out.arrives.date()),
                                "check_out": str(back.departs.date())}))
