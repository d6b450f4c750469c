"""The planning tasks: the reference succeeds at level 6, the wasteful agent below it, naive plans fail a check;
independent brute-force solvers reading only the prompt and the tool results find exactly one valid plan, the
reference's; instances are deterministic, varied and robust to hostile input."""

from __future__ import annotations

import json
import re
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import AgTask, Call, script_json
from esac_kit.ag.tasks import planning
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

ITEMS = Path(__file__).resolve().parent.parent / "items" / "ag"
MEETINGS, TRIP = "planning-meeting-schedule", "planning-conference-trip"
GENERATORS = {MEETINGS: planning.meeting_schedule, TRIP: planning.trip_booking}
SEEDS = 20


def generate(item_id: str, seed: int) -> AgTask:
    return GENERATORS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 1)))


def scale(item_id: str):
    return read_item(ITEMS / f"{item_id}.toml").efficiency


def act(episode: Episode, name: str, **args):
    """One call; the result parsed from JSON when it is not an error."""
    text, error = episode.act(name, args)
    return (text if error else json.loads(text)), error


@pytest.mark.parametrize("item_id", GENERATORS)
def test_item_file_loads(item_id):
    item = read_item(ITEMS / f"{item_id}.toml")
    assert item.category == "planning" and item.scoring == "agentic" and item.efficiency is not None


@pytest.mark.parametrize("item_id", GENERATORS)
def test_reference_wasteful_and_null_agents(item_id):
    rubric = scale(item_id)
    for seed in range(SEEDS):
        task = generate(item_id, seed)
        reference = drive(task, task.reference, rubric)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        assert not any(s["status"] == "tool_error" for s in reference["steps"])
        wasteful = drive(task, task.wasteful, rubric)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6, (seed, wasteful["checks"])
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        null = drive(task, task.scripts()["null"], rubric)
        assert null["score"] == 0.0 and not null["success"]
        assert task.describe()["tools"] and "call submit with" in task.prompt


def _without_submit(calls: tuple[Call, ...]) -> tuple[Call, ...]:
    return tuple(c for c in calls if c.name != "submit")


def test_meeting_partial_and_naive_agents_fail():
    rubric = scale(MEETINGS)
    for seed in range(SEEDS):
        task = generate(MEETINGS, seed)
        books = [c for c in task.reference if c.name == "book_meeting"]
        trap = [c for c in task.wasteful if c.name == "book_meeting"][1]  # B on the slot that breaks cap or order
        answer = task.reference[-1]
        reads = tuple(c for c in _without_submit(task.reference) if c.name != "book_meeting")
        outcome = drive(task, (*reads, books[0], trap, answer), rubric)
        assert 0.0 < outcome["score"] < 1.0 and not outcome["success"], (seed, outcome["checks"])
        failed = {c for c, ok in outcome["checks"].items() if not ok}
        assert failed & {"order", "daily_cap"} and "A_booked" not in failed
        # Booking A twice trips the guard and zeroes the score.
        twice = drive(task, (*reads, books[0], books[0], books[1], answer), rubric)
        assert twice["score"] == 0.0 and not twice["checks"]["one_booking_each"]
        # Local calendar times read as UTC: booking A at the local clock time of the first attendee fails.
        env = task.make_env()
        first = env._week.people[books[0].args["attendees"][0]]
        shifted = dict(books[0].args)
        start = datetime.fromisoformat(shifted["start_utc"]) + timedelta(minutes=first.offset)
        if first.offset:
            shifted["start_utc"] = start.strftime("%Y-%m-%d %H:%M")
            wrong = drive(task, (*reads, Call("book_meeting", shifted), books[1], answer), rubric)
            assert not wrong["success"]


def test_trip_partial_and_naive_agents_fail():
    rubric = scale(TRIP)
    for seed in range(SEEDS):
        task = generate(TRIP, seed)
        reads = tuple(c for c in task.reference if c.name.startswith(("get_", "search_")))
        trip = task.make_env()._trip
        sticker = drive(task, (*reads, *planning.sticker_calls(trip), Call("submit", {"answer": "done"})), rubric)
        assert 0.0 < sticker["score"] < 1.0 and not sticker["checks"]["within_budget"], (seed, sticker["checks"])
        no_bags = tuple(Call(c.name, {**c.args, "checked_bags": 0}) if c.name == "book_flight" else c
                        for c in task.reference)
        outcome = drive(task, no_bags, rubric)
        assert 0.0 < outcome["score"] < 1.0 and not outcome["checks"]["bags_on_both_flights"]
        # Booking a non-refundable fare and cancelling it keeps the charge: the budget no longer holds.
        first_fare = next(c for c in task.reference if c.name == "book_flight")
        episode = Episode(task)
        for call in reads:
            episode.act(call.name, dict(call.args))
        booked, _ = act(episode, "book_flight", **first_fare.args)
        if not booked["refundable"]:
            act(episode, "cancel_booking", booking_id=booked["booking_id"])
            for call in task.reference[len(reads):-1]:
                episode.act(call.name, dict(call.args))
            episode.act("submit", {"answer": task.reference[-1].args["answer"]})
            result = episode.outcome(rubric)
            assert not result["checks"]["within_budget"] and not result["success"]


@pytest.mark.parametrize("item_id", GENERATORS)
def test_instances_are_deterministic_and_varied(item_id):
    prompts = set()
    for seed in range(SEEDS):
        one, two = generate(item_id, seed), generate(item_id, seed)
        assert one.prompt == two.prompt
        assert script_json(one.reference) == script_json(two.reference)
        assert script_json(one.wasteful) == script_json(two.wasteful)
        assert json.dumps(one.describe(), sort_keys=True) == json.dumps(two.describe(), sort_keys=True)
        prompts.add(one.prompt)
    assert len(prompts) == SEEDS


# ---------------------------------------------------------------- independent solver: meetings


def _offset(zone: str) -> timedelta:
    sign, hours, minutes = re.fullmatch(r"UTC([+-])(\d\d):(\d\d)", zone).groups()
    value = timedelta(hours=int(hours), minutes=int(minutes))
    return value if sign == "+" else -value


def _hm(text: str) -> timedelta:
    hours, minutes = text.split(":")
    return timedelta(hours=int(hours), minutes=int(minutes))


def _solve_meetings(task: AgTask) -> list[tuple[datetime, datetime]]:
    """Every (start of A, start of B) in UTC meeting the prompt's rules, from the prompt and tool results only."""
    episode = Episode(task)
    prompt = task.prompt
    people = {p["person_id"]: p for p in act(episode, "list_people")[0]}
    by_name = {p["name"]: pid for pid, p in people.items()}
    lead = by_name[re.search(r"scheduling assistant of (.+?) \(", prompt)[1]]
    office = re.search(r"team lead, (.+?) office\)", prompt)[1]
    team = re.search(r"with the whole (\w+) team", prompt)[1]
    guest = re.search(r"team \(see the directory\) and (.+?)\. ", prompt)[1]
    visitors = int(re.search(r"(\d+) visitors? from", prompt)[1])
    duration_a = int(re.search(r"Meeting A, \"[^\"]+\": (\d+) minutes", prompt)[1])
    duration_b, names_b = re.search(r"Meeting B, \"[^\"]+\": (\d+) minutes with (.+?)\. It must", prompt).groups()
    gap = int(re.search(r"at least (\d+) minutes after meeting A ends", prompt)[1])
    cap = int(re.search(r"accepts at most (\d+) meetings a day", prompt)[1])
    budget = int(re.search(r"must total at most \$(\d+)", prompt)[1])
    first_day = date.fromisoformat(re.search(r"planning window \w+ (\d{4}-\d\d-\d\d)", prompt)[1])
    attendees = {"A": [pid for pid, p in people.items() if p["team"] == team] + [by_name[guest]],
                 "B": [by_name[n] for n in re.split(r", | and ", names_b)]}
    durations = {"A": timedelta(minutes=duration_a), "B": timedelta(minutes=int(duration_b))}
    zone = {pid: _offset(p["timezone"]) for pid, p in people.items()}
    busy: dict[str, list[tuple[datetime, datetime, str]]] = {}
    for pid in set(attendees["A"]) | set(attendees["B"]):
        events = []
        for e in act(episode, "get_calendar", person_id=pid)[0]["events"]:
            start = datetime.fromisoformat(f"{e['date']} {e['start']}")
            end = datetime.fromisoformat(e["end"] if " " in e["end"] else f"{e['date']} {e['end']}")
            events.append((start - zone[pid], end - zone[pid], e["show_as"]))
        busy[pid] = events
    lead_days: dict[date, int] = {}
    for start, _, show_as in busy[lead]:
        if show_as in ("busy", "tentative"):
            day = (start + zone[lead]).date()
            lead_days[day] = lead_days.get(day, 0) + 1
    rooms = act(episode, "list_rooms")[0]["rooms"]
    taken = {}
    for room in rooms:
        schedule = act(episode, "get_room_schedule", room_id=room["room_id"])[0]["bookings"]
        taken[room["room_id"]] = [(datetime.fromisoformat(f"{b['date']} {b['start']}"),
                                   datetime.fromisoformat(b["end"] if " " in b["end"] else f"{b['date']} {b['end']}"))
                                  for b in schedule]

    def available(pid: str, start: datetime, end: datetime) -> bool:
        person, local_start, local_end = people[pid], start + zone[pid], end + zone[pid]
        day = datetime.combine(local_start.date(), datetime.min.time())
        hours = person["working_hours"].split("-")
        return (local_start.strftime("%a") in person["working_days"] and local_start >= day + _hm(hours[0])
                and local_end <= day + _hm(hours[1])
                and not any(s < end and start < e for s, e, show in busy[pid] if show != "free"))

    def room_cost(key: str, start: datetime) -> int | None:
        local = sum(1 for p in attendees[key] if people[p]["office"] == office) + (visitors if key == "A" else 0)
        video = any(people[p]["office"] != office for p in attendees[key])
        end = start + durations[key]
        costs = [room["hourly_rate"] * durations[key].seconds // 3600 for room in rooms
                 if room["seats"] >= local and (not video or "video conferencing" in room["equipment"])
                 and not any(s < end and start < e for s, e in taken[room["room_id"]])]
        return min(costs) if costs else None

    window = datetime.combine(first_day, datetime.min.time())
    starts = [window + timedelta(minutes=30 * i) for i in range(3 * 48)]
    options = {key: [(s, room_cost(key, s)) for s in starts if s + durations[key] <= window + timedelta(days=3)
                     and all(available(p, s, s + durations[key]) for p in attendees[key])
                     and room_cost(key, s) is not None] for key in ("A", "B")}
    plans = []
    for a, cost_a in options["A"]:
        for b, cost_b in options["B"]:
            if b < a + durations["A"] + timedelta(minutes=gap) or cost_a + cost_b > budget:
                continue
            days = dict(lead_days)
            for start in (a, b):
                local_day = (start + zone[lead]).date()
                days[local_day] = days.get(local_day, 0) + 1
            if max(days.values()) <= cap:
                plans.append((a, b))
    return plans


def test_meeting_solution_is_unique_from_visible_data():
    for seed in range(SEEDS):
        task = generate(MEETINGS, seed)
        books = [c for c in task.reference if c.name == "book_meeting"]
        expected = tuple(datetime.fromisoformat(c.args["start_utc"]) for c in books)
        assert _solve_meetings(task) == [expected], seed


# ---------------------------------------------------------------- independent solver: trip


def _solve_trip(task: AgTask) -> list[tuple[int, str, str, str]]:
    """Every valid (cost in cents, outbound fare, return fare, rate) within budget, from visible data only."""
    episode = Episode(task)
    prompt = task.prompt
    event_id = re.search(r"event id (EV-\d+)", prompt)[1]
    land = timedelta(minutes=int(re.search(r"land at least (\d+) minutes", prompt)[1]))
    leave = timedelta(minutes=int(re.search(r"depart at least (\d+) minutes", prompt)[1]))
    max_km = float(re.search(r"at most ([\d.]+) km", prompt)[1])
    budget = int(re.search(r"total at most \$(\d+)", prompt)[1]) * 100
    event = act(episode, "get_event", event_id=event_id)[0]
    profile = act(episode, "get_traveller")[0]
    starts, ends = datetime.fromisoformat(event["starts"]), datetime.fromisoformat(event["ends"])
    carrier = re.search(r"free on (.+?) Standard and Flex", profile["memberships"][0]["benefit"])[1]
    percent, chain, nights_needed = re.search(r"(\d+)% off .* at (\w+) hotels, on stays of (\d+) nights",
                                              profile["memberships"][2]["benefit"]).groups()
    home, city = profile["home_airport"], event["airport"]

    def fares(origin: str, destination: str, day: date) -> list[tuple[int, str, datetime, datetime]]:
        found = []
        result = act(episode, "search_flights", origin=origin, destination=destination, date=str(day))[0]
        for flight in result["flights"]:
            for fare in flight["fares"]:
                fee = int(re.search(r"\$(\d+)", fare["checked_bags"])[1])
                free = fare["class"] == "Flex" or (fare["class"] == "Standard" and flight["carrier"] == carrier)
                found.append((fare["price"] * 100 + (0 if free else fee * 100), fare["fare_id"],
                              datetime.fromisoformat(flight["departs"]), datetime.fromisoformat(flight["arrives"])))
        return found

    outs = [f for d in range(-4, 2) for f in fares(home, city, starts.date() + timedelta(days=d))
            if f[3] <= starts - land]
    backs = [f for d in range(0, 4) for f in fares(city, home, ends.date() + timedelta(days=d))
             if f[2] >= ends + leave]
    rates = []
    for hotel in act(episode, "search_hotels", city=event["city"])[0]["hotels"]:
        for rate in hotel["rates"]:
            if rate["cancellation"] == "free cancellation" and hotel["distance_to_venue_km"] <= max_km:
                rates.append((hotel["chain"], rate["nightly_rate"], hotel["nightly_fee"], rate["rate_id"]))
    plans = []
    for out in outs:
        for back in backs:
            nights = (back[2].date() - out[3].date()).days
            if nights < 1:
                continue
            for rate_chain, nightly, fee, rate_id in rates:
                off = int(percent) if rate_chain == chain and nights >= int(nights_needed) else 0
                cost = out[0] + back[0] + nights * (nightly * (100 - off) + fee * 100)
                if cost <= budget:
                    plans.append((cost, out[1], back[1], rate_id))
    return plans


def test_trip_solution_is_unique_from_visible_data():
    for seed in range(SEEDS):
        task = generate(TRIP, seed)
        plans = _solve_trip(task)
        books = [c for c in task.reference if c.name.startswith("book_")]
        assert len(plans) == 1, (seed, plans)
        cost, out, back, rate = plans[0]
        assert (out, back, rate) == (books[0].args["fare_id"], books[1].args["fare_id"], books[2].args["rate_id"])
        assert f"{cost // 100}.{cost % 100:02d}" in task.reference[-1].args["answer"]


# ---------------------------------------------------------------- hostile input


HOSTILE_MEETING = [
    ("get_calendar", {"person_id": ""}), ("get_calendar", {"person_id": "nobody.at.all"}),
    ("get_room_schedule", {"room_id": "rm-nowhere"}), ("cancel_booking", {"booking_id": "BK-1"}),
    ("book_meeting", {"meeting": "A", "start_utc": "", "duration_minutes": 60, "room_id": "x", "attendees": []}),
    ("book_meeting", {"meeting": "A", "start_utc": "9999-99-99 99:99", "duration_minutes": 60, "room_id": "x",
                      "attendees": []}),
    ("book_meeting", {"meeting": "A", "start_utc": "9999-12-31 10:00", "duration_minutes": 60, "room_id": "x",
                      "attendees": []}),
    ("book_meeting", {"meeting": "A", "start_utc": "2026-01-01 10:00", "duration_minutes": 10 ** 12,
                      "room_id": "x", "attendees": []}),
    ("book_meeting", {"meeting": "A", "start_utc": "2026-01-01 10:15", "duration_minutes": -30, "room_id": "x",
                      "attendees": []}),
]
HOSTILE_TRIP = [
    ("get_event", {"event_id": ""}), ("search_flights", {"origin": "XXX", "destination": "", "date": "2026-01-01"}),
    ("search_hotels", {"city": ""}), ("book_flight", {"fare_id": "", "checked_bags": 1}),
    ("cancel_booking", {"booking_id": "TR-0"}),
    ("book_hotel", {"rate_id": "nope", "check_in": "2026-01-01", "check_out": "2026-01-02"}),
]


def test_hostile_inputs_are_tool_errors():
    for seed in range(3):
        task = generate(MEETINGS, seed)
        episode = Episode(task)
        for name, args in HOSTILE_MEETING:
            assert act(episode, name, **args)[1], (name, args)
        book = next(c for c in task.reference if c.name == "book_meeting")
        for change in ({"room_id": "rm-nowhere"}, {"attendees": ["ghost"]}, {"attendees": []},
                       {"attendees": [book.args["attendees"][0]] * 2}, {"duration_minutes": 10 ** 12},
                       {"start_utc": book.args["start_utc"][:-2] + "15"}, {"start_utc": "2020-01-01 10:00"}):
            assert act(episode, "book_meeting", **{**book.args, **change})[1], change
        assert not episode.env.state["bookings"]
        booked, error = act(episode, "book_meeting", **book.args)
        assert not error
        assert not act(episode, "cancel_booking", booking_id=booked["booking_id"])[1]
        assert act(episode, "cancel_booking", booking_id=booked["booking_id"])[1]  # already cancelled

        task = generate(TRIP, seed)
        episode = Episode(task)
        for name, args in HOSTILE_TRIP:
            assert act(episode, name, **args)[1], (name, args)
        search = next(c for c in task.reference if c.name == "search_flights")
        for change in ({"date": ""}, {"date": "2026-02-30"}, {"date": "9999-99-99"},
                       {"origin": search.args["destination"]}):
            assert act(episode, "search_flights", **{**search.args, **change})[1], change
        fare = next(c for c in task.reference if c.name == "book_flight")
        assert act(episode, "book_flight", fare_id=fare.args["fare_id"], checked_bags=10 ** 12)[1]
        assert act(episode, "book_flight", fare_id=fare.args["fare_id"], checked_bags=-1)[1]
        hotel = next(c for c in task.reference if c.name == "book_hotel")
        for change in ({"check_in": hotel.args["check_out"], "check_out": hotel.args["check_in"]},
                       {"check_in": "1900-01-01"}, {"check_out": "9999-12-31"}, {"check_in": "not a date"}):
            assert act(episode, "book_hotel", **{**hotel.args, **change})[1], change
        assert not episode.env.state["bookings"]
        assert act(episode, "search_flights", **{**search.args, "date": "2030-01-01"})[0]["flights"] == []
