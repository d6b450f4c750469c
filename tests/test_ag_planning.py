"""The planning tasks (ESAC-AG 2.0): scripted agents score as designed; independent exact optimisers that read only the
prompt and the tool outputs reach the generator's optimum and pass every check; each trap, followed by an otherwise
careful solver, fails a check; instances are deterministic, distinct, compact and fast to build; hostile input comes
back as tool errors."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, replace
from datetime import date, timedelta
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import AgTask, Call, script_json
from esac_kit.ag.tasks import planning
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

MEETINGS, TRIP = "planning-meeting-schedule", "planning-conference-trip"
ITEMS = {MEETINGS: planning.meeting_schedule, TRIP: planning.trip_booking}
ITEM_DIR = Path(__file__).resolve().parent.parent / "items" / "ag"
SEEDS = 10


def task(item_id: str, seed: int) -> AgTask:
    return ITEMS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 2)))


def scale(item_id: str):
    return read_item(ITEM_DIR / f"{item_id}.toml").efficiency


def act(episode: Episode, name: str, **args):
    """One call through the episode, as an agent makes it; the parsed result (an error fails the test)."""
    text, error = episode.act(name, args)
    assert not error, (name, args, text)
    return json.loads(text)


def pages(episode: Episode, name: str, key: str, **args) -> list:
    """Every row of a paged listing."""
    first = act(episode, name, page=1, **args)
    rows = list(first[key])
    for page in range(2, first["pages"] + 1):
        rows += act(episode, name, page=page, **args)[key]
    return rows


def hm(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def finish(generated: AgTask, item_id: str, calls: list[Call], answer: str) -> dict:
    """Make the writes in a fresh episode (reads change no state) and submit."""
    episode = Episode(generated, item_id)
    for call in calls:
        episode.act(call.name, dict(call.args))
    episode.act("submit", {"answer": answer})
    return episode.outcome(scale(item_id))


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_wasteful_and_null_agents(item_id):
    efficiency = scale(item_id)
    for seed in range(SEEDS):
        generated = task(item_id, seed)
        reference = drive(generated, generated.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        assert not any(s["status"] == "tool_error" for s in reference["steps"])
        wasteful = drive(generated, generated.wasteful, efficiency)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6, seed
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        null = drive(generated, generated.scripts()["null"], efficiency)
        assert null["score"] == 0.0 and not null["success"] and generated.unsafe is None


@pytest.mark.parametrize("item_id", ITEMS)
def test_instances_are_deterministic_distinct_fast_and_outputs_compact(item_id):
    prompts, took = set(), []
    for seed in range(SEEDS):
        start = time.perf_counter()
        one = task(item_id, seed)
        took.append(time.perf_counter() - start)
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
            assert len(text) <= 1500, (call.name, len(text))
    assert len(prompts) == SEEDS
    assert sorted(took)[len(took) // 2] < 0.2, took  # the median build; the tail redraws a few times more


# ---------------------------------------------------------------- an independent meeting optimiser


@dataclass(frozen=True)
class Slot:
    """A way to hold one request, in minutes from Monday 00:00 UTC."""

    start: int
    end: int
    room: str
    building: str
    seats: int
    cost: int
    change: int


@dataclass(frozen=True)
class Reading:
    """How a solver reads the rules; each flag turned off falls into one trap."""

    free_is_free: bool = True
    tentative_blocks: bool = True
    buffer: bool = True
    optional_free: bool = True
    guests: bool = True
    precedence: bool = True
    zones: bool = True
    earliest: bool = True


def read_campus(generated: AgTask) -> dict:
    """Everything an agent needs, through the tools: requests, people, calendars (to UTC) and rooms."""
    episode = Episode(generated, MEETINGS)
    monday = date.fromisoformat(re.search(r"starts on Monday (\d{4}-\d\d-\d\d)", generated.prompt).group(1))
    rules = act(episode, "describe_api", topic="scheduling")["text"]
    buffer = int(re.search(r"at least (\d+) minutes between two of their commitments", rules).group(1))
    requests = {r["request_id"]: act(episode, "get_request", request_id=r["request_id"])
                for r in pages(episode, "list_requests", "requests")}
    directory = {p["name"]: p for p in pages(episode, "list_people", "people")}
    people = {}
    for name in sorted({n for r in requests.values() for n in r["required"] + r["optional"]}):
        person = act(episode, "get_person", person_id=directory[name]["person_id"])
        sign, hours, minutes = re.fullmatch(r"UTC([+-])(\d\d):(\d\d)", person["time_zone"]).groups()
        offset = (1 if sign == "+" else -1) * (int(hours) * 60 + int(minutes))
        events = []
        columns = act(episode, "get_calendar", person_id=person["person_id"], page=1)["columns"]
        for row in pages(episode, "get_calendar", "events", person_id=person["person_id"]):
            e = dict(zip(columns, row))
            local = (date.fromisoformat(e["date"]) - monday).days * 1440
            events.append({**e, "start": local + hm(e["start"]) - offset, "end": local + hm(e["end"]) - offset})
        people[name] = {**person, "offset": offset, "events": events}
    rooms = {}
    for row in pages(episode, "list_rooms", "rooms"):
        room = act(episode, "get_room", room_id=row["room_id"])
        bookings = [dict(zip(room["columns"], b)) for b in room["bookings"]]
        taken = [((date.fromisoformat(b["date"]) - monday).days * 1440 + hm(b["start"]),
                  (date.fromisoformat(b["date"]) - monday).days * 1440 + hm(b["end"])) for b in bookings]
        rooms[room["room_id"]] = {**room, "taken": taken}
    return {"monday": monday, "buffer": buffer, "requests": requests, "directory": directory, "people": people,
            "rooms": rooms, "calls": episode.counts.tool_calls}


def slots(data: dict, rid: str, reading: Reading) -> list[Slot]:
    """Every start and room that meets the rules for one request on its own."""
    req, people, buffer = data["requests"][rid], data["people"], data["buffer"]
    directory = data["directory"]
    bound = req["required"] + ([] if reading.optional_free else req["optional"])
    invitees = req["required"] + req["optional"]
    seats = sum(directory[n]["works"] == "campus" for n in invitees) + (req["external_guests"] if reading.guests
                                                                         else 0)
    video = any(directory[n]["works"] != "campus" for n in invitees)
    length = req["duration_minutes"]
    shown = {"busy"} | ({"tentative"} if reading.tentative_blocks else set()) | (set() if reading.free_is_free
                                                                                 else {"free"})
    found = []
    for start in range(0, 5 * 1440 - length + 1, 30):
        end, cost, ok = start + length, 0, True
        for name in bound:
            p = people[name]
            offset = p["offset"] if reading.zones else 0
            local = start + offset
            day, clock = divmod(local, 1440)
            work, prefer = [hm(t) for t in p["working_hours"].split("-")], [hm(t) for t in
                                                                          p["preferred_hours"].split("-")]
            if not (0 <= day < 5 and ("Mon", "Tue", "Wed", "Thu", "Fri")[day] in p["working_days"]
                    and work[0] <= clock and clock + length <= work[1]):
                ok = False
                break
            events = [e for e in p["events"] if e["show_as"] in shown]
            if reading.zones is False:
                events = [{**e, "start": e["start"] + p["offset"], "end": e["end"] + p["offset"]} for e in events]
            if any(e["start"] < end and start < e["end"] for e in events):
                ok = False
                break
            cost += length - max(0, min(clock + length, prefer[1]) - max(clock, prefer[0]))
        if not ok:
            continue
        for room_id, room in data["rooms"].items():
            if room["seats"] < seats or (video and "video" not in room["equipment"]):
                continue
            if any(s < end and start < e for s, e in room["taken"]):
                continue
            near = reading.buffer and any(
                e["where"] not in ("online", room["building"]) and e["start"] < end + buffer and start < e["end"] + buffer
                for name in req["required"] if directory[name]["works"] == "campus"
                for e in people[name]["events"] if e["show_as"] in {"busy", "tentative"} & shown)
            if not near:
                found.append(Slot(start, end, room_id, room["building"], room["seats"], cost,
                                  int(bool(req["usual_room"]) and req["usual_room"] != room_id)))
    return found


def relations(data: dict, reading: Reading) -> dict[tuple[str, str], tuple[bool, bool, bool, bool]]:
    """For two requests: a shared constrained attendee, a shared campus one, and which must come first."""
    found, directory = {}, data["directory"]
    bound = lambda r: set(r["required"] + ([] if reading.optional_free else r["optional"]))  # noqa: E731
    for a, ra in data["requests"].items():
        for b, rb in data["requests"].items():
            shared = bound(ra) & bound(rb)
            found[(a, b)] = (bool(shared), any(directory[n]["works"] == "campus" for n in shared),
                             reading.precedence and a in rb["starts_after"], reading.precedence and b in ra["starts_after"])
    return found


def conflict(relation: tuple[bool, bool, bool, bool], x: Slot, y: Slot, gap: int) -> bool:
    """Whether two requests' slots cannot both be booked."""
    shared, campus, first, second = relation
    if x.start < y.end and y.start < x.end and (x.room == y.room or shared):
        return True
    if campus and x.building != y.building and y.start < x.end + gap and x.start < y.end + gap:
        return True
    return (first and y.start < x.end) or (second and x.start < y.end)


def vector(order: list[str], rid: str, slot: Slot, reading: Reading) -> tuple:
    """The slot's part of the plan's ordering: cost, changes, then its start and seats in request-id order."""
    n, i = len(order), order.index(rid)
    v = [slot.cost, slot.change] + [0] * (2 * n)
    v[2 + i] = slot.start if reading.earliest else -slot.start
    v[2 + n + i] = slot.seats
    return tuple(v)


def plus(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b))


def optimise(data: dict, reading: Reading = Reading()) -> dict[str, Slot] | None:
    """The best plan by branch and bound with forward checking; vectors compare lexicographically."""
    order = sorted(data["requests"])
    options = {rid: sorted(slots(data, rid, reading), key=lambda s, r=rid: vector(order, r, s, reading))
               for rid in order}
    if not all(options.values()):
        return None
    rel, gap = relations(data, reading), data["buffer"] if reading.buffer else 0
    vectors = {(rid, s): vector(order, rid, s, reading) for rid, opts in options.items() for s in opts}
    best: list = [None, None]

    def search(domains: dict[str, list[Slot]], total: tuple, plan: dict[str, Slot]) -> None:
        if not domains:
            if best[0] is None or total < best[0]:
                best[0], best[1] = total, dict(plan)
            return
        rid = min(domains, key=lambda r: (len(domains[r]), r))
        others = [r for r in domains if r != rid]
        for slot in domains[rid]:
            mine = plus(total, vectors[(rid, slot)])
            if best[0] is not None:
                loose = mine
                for r in others:
                    loose = plus(loose, vectors[(r, domains[r][0])])
                if loose >= best[0]:
                    break  # slots come in order: no later one does better
            rest = {r: [s for s in domains[r] if not conflict(rel[(rid, r)], slot, s, gap)] for r in others}
            if not all(rest.values()):
                continue
            bound = mine
            for r, d in rest.items():
                bound = plus(bound, vectors[(r, d[0])])
            if best[0] is not None and bound >= best[0]:
                continue
            plan[rid] = slot
            search(rest, mine, plan)
            del plan[rid]

    search(options, tuple([0] * (2 + 2 * len(order))), {})
    return best[1]


def myopic(data: dict) -> dict[str, Slot] | None:
    """Each request in id order at its best slot that fits the ones already chosen."""
    order, plan = sorted(data["requests"]), {}
    rel = relations(data, Reading())
    for rid in order:
        fits = [s for s in slots(data, rid, Reading()) if not any(
            conflict(rel[(rid, r)], s, other, data["buffer"]) for r, other in plan.items())]
        if not fits:
            return None
        plan[rid] = min(fits, key=lambda s: vector(order, rid, s, Reading()))
    return plan


def book_plan(generated: AgTask, data: dict, plan: dict[str, Slot] | None) -> dict:
    if plan is None:
        return finish(generated, MEETINGS, [], "no plan meets the rules")
    monday = data["monday"]
    calls = [Call("book_meeting", {"request_id": rid, "start_utc": f"{monday + timedelta(days=s.start // 1440)} "
                                                                   f"{s.start % 1440 // 60:02d}:{s.start % 60:02d}",
                                   "room_id": s.room}) for rid, s in sorted(plan.items())]
    total = sum(s.cost for s in plan.values())
    return finish(generated, MEETINGS, calls, f"Booked all requests; {total} attendee-minutes outside preferred "
                                              "hours.")


def test_an_independent_meeting_optimiser_reaches_the_checked_optimum():
    for seed in range(SEEDS):
        generated = task(MEETINGS, seed)
        data = read_campus(generated)
        assert data["calls"] >= 40
        outcome = book_plan(generated, data, optimise(data))
        assert outcome["success"], (seed, outcome["checks"])


def test_meeting_traps_bite():
    """Free events read as busy, optional attendees read as required, the myopic plan, ignoring travel buffers and
    tentative events read as free each fail a check on every seed; the guests, precedence, time zones and the
    earliest-start tie-break fail wherever they change the plan, and they do on some seeds."""
    sometimes = {"guests": 0, "precedence": 0, "zones": 0, "earliest": 0}
    for seed in range(SEEDS):
        generated = task(MEETINGS, seed)
        data = read_campus(generated)
        stricter = {"free": Reading(free_is_free=False), "optional": Reading(optional_free=False)}
        for name, reading in stricter.items():  # a feasible plan but not the best, or none at all
            plan = optimise(data, reading)
            checks = book_plan(generated, data, plan)["checks"]
            assert plan is None or checks["hard_rules"], (seed, name)
            assert not (checks["optimal_times"] and checks["optimal_rooms"]), (seed, name)
        looser = {"buffer": Reading(buffer=False), "tentative": Reading(tentative_blocks=False)}
        for name, reading in looser.items():  # a plan that looks better and breaks a rule
            checks = book_plan(generated, data, optimise(data, reading))["checks"]
            assert checks["all_booked"] and not checks["hard_rules"], (seed, name)
        outcome = book_plan(generated, data, myopic(data))
        assert not outcome["success"], (seed, "myopic")
        for name in sometimes:
            outcome = book_plan(generated, data, optimise(data, replace(Reading(), **{name: False})))
            sometimes[name] += not outcome["success"]
    assert all(sometimes.values()), sometimes


def test_meeting_rework_and_answer_and_room_conflicts():
    generated = task(MEETINGS, 0)
    books = [c for c in generated.reference if c.name == "book_meeting"]
    episode = Episode(generated, MEETINGS)
    text, error = episode.act("book_meeting", dict(books[0].args))
    assert not error
    text, error = episode.act("book_meeting", dict(books[0].args))
    assert error and "already booked" in text
    other = next(c for c in books[1:])
    text, error = episode.act("book_meeting", {**other.args, "start_utc": books[0].args["start_utc"],
                                               "room_id": books[0].args["room_id"]})
    assert error and "is booked at that time" in text
    wrong = finish(generated, MEETINGS, books, "done, no figure")
    assert wrong["checks"]["optimal_times"] and not wrong["checks"]["answer"]


# ---------------------------------------------------------------- an independent trip optimiser


@dataclass(frozen=True)
class Pricing:
    """How a solver prices the trip; each field misread falls into one trap."""

    bags: bool = True
    deal: str = "threshold"  # or "never", "always"
    chain: str = "threshold"
    cap: bool = True
    transfers: bool = True


def clock(text: str) -> int:
    return hm(text[:5]) + (1440 if "+1 day" in text else 0)


def read_trip(generated: AgTask) -> dict:
    """Everything an agent needs, through the tools: the policy, the profile, the held ticket, every service of the
    allowed dates with its fare rules, and each hotel within the distance."""
    prompt, episode = generated.prompt, Episode(generated, TRIP)
    trip_id = re.search(r"Book trip (TRIP-\d+)", prompt).group(1)
    out = re.search(r"Fly from home to (.+?) on (\S+) or (\S+)\.", prompt).groups()
    on = re.search(r"Travel from (.+?) to (.+?), by air or by rail, on (\S+) leaving at least (\d+) minutes after the "
                   r"workshop ends, or on (\S+)\.", prompt).groups()
    home = re.search(r"Fly home from (.+?) on (\S+) leaving at least (\d+) minutes after the conference ends, or on "
                     r"(\S+)\.", prompt).groups()
    km = float(re.search(r"at most ([\d.]+) km", prompt).group(1))
    caps = re.search(r"of at most \$(\d+) in (.+?) and \$(\d+) in (.+?)\.\n", prompt).groups()
    docs = {t: act(episode, "describe_api", topic=t)["text"] for t in ("fares", "hotels", "bookings")}
    lead = [int(n) for n in re.search(r"leaves the hotel (\d+) minutes before a flight and (\d+) minutes before a "
                                      r"train", docs["bookings"]).groups()]
    trip = act(episode, "get_trip", trip_id=trip_id)
    profile = act(episode, "get_traveller", traveller_id=trip["traveller_id"])
    perks = " ".join(m["benefit"] for m in profile["memberships"])
    deal = re.search(r"(\d+)% off the fare \(not bag fees\) of every (.+?) ticket bought for the trip, once the trip "
                     r"has at least (\d+)", profile["company_deals"][0]["benefit"]).groups()
    chain = re.search(r"(\d+)% off the posted nightly room rate \(not the nightly fee\) of every (.+?) night on the "
                      r"trip, once the trip's .+? nights total at least (\d+)", perks).groups()
    held_id = trip["tickets_held"][0]
    held = next(b for b in act(episode, "list_bookings")["bookings"] if b["booking_id"] == held_id)
    airports = {e["city"]: e["airport"] for e in trip["events"]}
    airports[profile["home_city"]] = profile["home_airport"]
    ends = {e["city"]: hm(e["ends"]) for e in trip["events"]}
    legs = [(profile["home_city"], out[0], [out[1], out[2]], None),
            (on[0], on[1], [on[2], on[4]], (on[2], ends[on[0]] + int(on[3]))),
            (home[0], profile["home_city"], [home[1], home[3]], (home[1], ends[home[0]] + int(home[2])))]
    services = [[], [], []]
    for i, (origin, destination, days, _) in enumerate(legs):
        for day in days:
            found = act(episode, "search_flights", origin=airports[origin], destination=airports[destination],
                        date=day)
            services[i] += [{**f, "mode": "flight", "date": day, "columns": found["fare_columns"]}
                            for f in found["flights"]]
            if i == 1:
                found = act(episode, "search_trains", origin=origin, destination=destination, date=day)
                services[i] += [{**t, "mode": "train", "date": day, "columns": found["fare_columns"]}
                                for t in found["trains"]]
    rules = {}
    for service in [s for leg in services for s in leg]:
        for fare in service["fares"]:
            key = (service["carrier"], dict(zip(service["columns"], fare))["class"])
            if key not in rules:
                rules[key] = act(episode, "get_fare_rules", carrier=key[0], fare_class=key[1])
    hotels = {}
    for city in (legs[0][1], legs[1][1]):
        for row in act(episode, "search_hotels", city=city)["hotels"]:
            if row["distance_km"] <= km:
                hotels[row["hotel_id"]] = act(episode, "get_hotel", hotel_id=row["hotel_id"])
    return {"trip": trip, "legs": legs, "services": services, "rules": rules, "hotels": hotels, "held": held,
            "status": re.search(r"first checked bag is free on every (.+?) flight", perks).group(1),
            "deal": (int(deal[0]), deal[1], int(deal[2])), "chain": (int(chain[0]), chain[1], int(chain[2])),
            "caps": {caps[1]: int(caps[0]), caps[3]: int(caps[2])}, "lead": {"flight": lead[0], "train": lead[1]},
            "calls": episode.counts.tool_calls}


def leg_choices(data: dict, pricing: Pricing) -> list[list[dict]]:
    """Each leg's ways: new tickets (fare and bag fee) and, for the last, the held ticket changed."""
    held, choices = data["held"], [[], [], []]
    held_rule = data["rules"][(held["carrier"], held["class"])]
    for i, (_, _, days, same_day) in enumerate(data["legs"]):
        for service in data["services"][i]:
            if same_day and service["date"] == same_day[0] and clock(service["departs"]) < same_day[1]:
                continue
            for row in service["fares"]:
                fare = dict(zip(service["columns"], row))
                rule = data["rules"][(service["carrier"], fare["class"])]
                bag = 0 if service["mode"] == "train" or rule["bags_included"] >= 1 or \
                    service["carrier"] == data["status"] or not pricing.bags else rule["bag_fee"]
                base = {"leg": i, "service": service, "fare": fare, "day": date.fromisoformat(service["date"])}
                deal = service["mode"] == "flight" and service["carrier"] == data["deal"][1]
                choices[i].append({**base, "kind": "new", "charge": 100 * (fare["price"] + bag),
                                   "deal": 100 * fare["price"] if deal else 0})
                if i == 2 and service["carrier"] == held["carrier"] and fare["class"] == held["class"] and \
                        service["number"] != held["number"] and held_rule["change_fee"] is not None:
                    extra = held_rule["change_fee"] + max(0, fare["price"] - held["fare_paid"])
                    choices[i].append({**base, "kind": "change", "charge": 100 * extra, "deal": 0})
    return choices


def ride(data: dict, hotel: dict, service: dict, arriving: bool, pricing: Pricing) -> tuple[str, int]:
    """The cheapest transfer mode that runs, and its price in cents (0 when the solver ignores transfers)."""
    hub = "airport" if service["mode"] == "flight" else "station"
    minute = clock(service["arrives"]) if arriving else clock(service["departs"]) - data["lead"][service["mode"]]
    minute %= 1440
    running = []
    for option in hotel["transfers"][hub]:
        low, high = (0, 1440) if option["hours"] == "24h" else [hm(t) for t in option["hours"].split("-")]
        if low <= minute < high:
            running.append((option["price"], option["mode"]))
    price, mode = min(running)
    return mode, 100 * price if pricing.transfers else 0


def trip_optimum(data: dict, pricing: Pricing = Pricing()) -> tuple[int, list[dict]]:
    """The cheapest itineraries (all of them at the lowest cost): exhaustive over stays, and per leg, date and deal
    carrier over the ways that are cheapest at full fare or with the deal taken off (nights and thresholds depend
    only on those), so no cheaper itinerary is left out."""
    cities = [data["legs"][0][1], data["legs"][1][1]]
    stays = {c: [(h, r) for h in data["hotels"].values() if h["city"] == c for r in h["rates"]
                 if r["cancellation"] == "free cancellation" and (not pricing.cap or r["posted_nightly"]
                                                                   <= data["caps"][c])] for c in cities}
    choices, pct = leg_choices(data, pricing), data["deal"][0]
    best: list = [None, {}]
    for one in stays[cities[0]]:
        for two in stays[cities[1]]:
            hotels = [one[0], two[0]]
            grouped: list[dict] = [{}, {}, {}]
            for i, options in enumerate(choices):
                for c in options:
                    cost = c["charge"]
                    if i == 0:
                        cost += ride(data, hotels[0], c["service"], True, pricing)[1]
                    if i == 1:
                        cost += ride(data, hotels[0], c["service"], False, pricing)[1] + ride(
                            data, hotels[1], c["service"], True, pricing)[1]
                    if i == 2:
                        cost += ride(data, hotels[1], c["service"], False, pricing)[1]
                    grouped[i].setdefault((c["day"], bool(c["deal"])), []).append((cost, c))
            ways = [{key: cheapest(rows, pct) for key, rows in g.items()} for g in grouped]
            for a in ways[0].items():
                for b in ways[1].items():
                    for c in ways[2].items():
                        price_plan(data, pricing, (one, two), (a, b, c), best)
    return best[0], list(best[1].values())


def cheapest(rows: list[tuple[int, dict]], pct: int) -> list[tuple[int, dict]]:
    """The ways tied cheapest at full fare and those tied cheapest with the deal taken off."""
    kept = []
    for price in (lambda r: r[0], lambda r: r[0] - r[1]["deal"] * pct // 100):
        low = min(price(r) for r in rows)
        kept += [r for r in rows if price(r) == low and r not in kept]
    return kept


def price_plan(data: dict, pricing: Pricing, stays: tuple, legs: tuple, best: list) -> None:
    days = [key[0] for key, _ in legs]
    nights = [(days[1] - days[0]).days, (days[2] - days[1]).days]
    if min(nights) < 1:
        return
    pct, chain, needed = data["chain"]
    chain_nights = sum(n for (h, _), n in zip(stays, nights) if h["chain"] == chain)
    earned = pricing.chain == "always" or (pricing.chain == "threshold" and chain_nights >= needed)
    hotels = 0
    for (hotel, rate), n in zip(stays, nights):
        posted = 100 * rate["posted_nightly"]
        hotels += n * (posted + 100 * hotel["nightly_fee"]) - (n * (posted * pct // 100) if earned and
                                                               hotel["chain"] == chain else 0)
    deal_pct, _, deal_needed = data["deal"]
    count = sum(key[1] for key, _ in legs)
    deal = pricing.deal == "always" or (pricing.deal == "threshold" and count >= deal_needed)
    for x in legs[0][1]:
        for y in legs[1][1]:
            for z in legs[2][1]:
                total = hotels + sum(cost - (way["deal"] * deal_pct // 100 if deal else 0) for cost, way in (x, y, z))
                plan = {"stays": stays, "legs": (x[1], y[1], z[1])}
                key = (tuple((w["kind"], w["fare"]["fare_id"]) for w in plan["legs"]),
                       tuple(r["rate_id"] for _, r in stays))
                if best[0] is None or total < best[0]:
                    best[0], best[1] = total, {key: plan}
                elif total == best[0]:
                    best[1][key] = plan


def book_trip(generated: AgTask, data: dict, plan: dict | None, total: int, *, probe: bool = False,
              keep_held: bool = False) -> dict:
    """Book an itinerary the way an agent would (ids as the tool returns them) and submit its total."""
    episode = Episode(generated, TRIP)
    if plan is None:
        episode.act("submit", {"answer": "no itinerary"})
        return episode.outcome(scale(TRIP))
    held = data["held"]["booking_id"]
    if probe:  # book a non-refundable fare to see the price, then cancel it
        fare = plan["legs"][0]["fare"]["fare_id"]
        probe_id = act(episode, "book_flight", fare_id=fare, checked_bags=1)["booking_id"]
        act(episode, "cancel_booking", booking_id=probe_id)
    ids = []
    for way in plan["legs"]:
        if way["kind"] == "change":
            ids.append(act(episode, "change_flight", booking_id=held, fare_id=way["fare"]["fare_id"])["booking_id"])
            continue
        if way["leg"] == 2 and not keep_held:
            act(episode, "cancel_booking", booking_id=held)
        if way["service"]["mode"] == "train":
            ids.append(act(episode, "book_train", fare_id=way["fare"]["fare_id"])["booking_id"])
        else:
            ids.append(act(episode, "book_flight", fare_id=way["fare"]["fare_id"], checked_bags=1)["booking_id"])
    days = [way["day"] for way in plan["legs"]]
    for (hotel, rate), (arrive, leave) in zip(plan["stays"], ((days[0], days[1]), (days[1], days[2]))):
        act(episode, "book_hotel", rate_id=rate["rate_id"], check_in=str(arrive), check_out=str(leave))
    (first, _), (second, _) = plan["stays"]
    for hotel, index, arriving in ((first, 0, True), (first, 1, False), (second, 1, True), (second, 2, False)):
        mode, _ = ride(data, hotel, plan["legs"][index]["service"], arriving, Pricing())
        act(episode, "book_transfer", hotel_id=hotel["hotel_id"], booking_id=ids[index], mode=mode)
    episode.act("submit", {"answer": f"Total cost ${total // 100}.{total % 100:02d}"})
    return episode.outcome(scale(TRIP))


def test_an_independent_trip_optimiser_reaches_the_checked_optimum():
    for seed in range(SEEDS):
        generated = task(TRIP, seed)
        data = read_trip(generated)
        total, plans = trip_optimum(data)
        assert len(plans) == 1, (seed, len(plans))
        outcome = book_trip(generated, data, plans[0], total)
        assert outcome["success"], (seed, outcome["checks"])
        assert data["calls"] + outcome["counts"]["tool_calls"] >= 40


def test_trip_traps_bite():
    """Ignoring bag fees, ignoring the posted-rate cap, a misread threshold, booking to find out and keeping the
    held ticket each fail a check on every seed; each threshold misread alone, and ignoring transfers, fail wherever
    they change the plan, and they do on some seeds."""
    sometimes = {"deal": 0, "chain": 0, "transfers": 0}
    for seed in range(SEEDS):
        generated = task(TRIP, seed)
        data = read_trip(generated)
        total, plans = trip_optimum(data)
        cost, wrong = trip_optimum(data, Pricing(bags=False))  # the sticker prices: a policy plan, not the cheapest
        checks = book_trip(generated, data, wrong[0], cost)["checks"]
        assert checks["stays"] and checks["transfers"] and not checks["optimal"], seed
        cost, wrong = trip_optimum(data, Pricing(cap=False))  # a hotel over the posted-rate cap
        checks = book_trip(generated, data, wrong[0], cost)["checks"]
        assert checks["itinerary"] and not checks["stays"], seed
        misread = []
        for field in ("deal", "chain"):
            bitten = False
            for reading in ("never", "always"):
                cost, wrong = trip_optimum(data, replace(Pricing(), **{field: reading}))
                bitten |= not book_trip(generated, data, wrong[0], cost)["success"]
            sometimes[field] += bitten
            misread.append(bitten)
        assert any(misread), seed
        cost, wrong = trip_optimum(data, Pricing(transfers=False))
        sometimes["transfers"] += not book_trip(generated, data, wrong[0], cost)["success"]
        probe = book_trip(generated, data, plans[0], total, probe=True)
        refundable = data["rules"][(plans[0]["legs"][0]["service"]["carrier"],
                                    plans[0]["legs"][0]["fare"]["class"])]["refundable"]
        assert refundable or (probe["checks"]["optimal"] and not probe["checks"]["no_waste"]), seed
        if plans[0]["legs"][2]["kind"] == "new":
            kept = book_trip(generated, data, plans[0], total, keep_held=True)
            assert not kept["checks"]["itinerary"] and not kept["success"], seed
    assert all(sometimes.values()), sometimes


# ---------------------------------------------------------------- hostile input


def _hostile_meeting(generated: AgTask) -> list[Call]:
    book = next(c for c in generated.reference if c.name == "book_meeting")
    return [
        Call("get_request", {"request_id": ""}), Call("get_request", {"request_id": "REQ-0"}),
        Call("get_person", {"person_id": "x" * 5000}), Call("get_calendar", {"person_id": "nobody", "page": 1}),
        Call("get_calendar", {"person_id": book.args["request_id"], "page": 1}),
        Call("list_requests", {"page": 0}), Call("list_people", {"page": 99}), Call("list_rooms", {"page": -1}),
        Call("get_room", {"room_id": "rm-nowhere"}), Call("describe_api", {"topic": "secrets"}),
        Call("cancel_booking", {"booking_id": "BK-1"}),
        *[Call("book_meeting", {**book.args, **change}) for change in (
            {"start_utc": ""}, {"start_utc": "9999-99-99 99:99"}, {"start_utc": "2020-01-01 10:00"},
            {"start_utc": book.args["start_utc"][:-2] + "15"}, {"start_utc": book.args["start_utc"][:10] + " 25:00"},
            {"start_utc": "2026-02-30 10:00"}, {"room_id": "rm-nowhere"}, {"request_id": "REQ-0"},
            {"room_id": ""})],
        Call("book_meeting", {**book.args, "extra": 1}), Call("delete_everything", {}),
    ]


def _hostile_trip(generated: AgTask) -> list[Call]:
    search = next(c for c in generated.reference if c.name == "search_flights")
    hotel = next(c for c in generated.reference if c.name == "book_hotel")
    return [
        Call("get_trip", {"trip_id": ""}), Call("get_traveller", {"traveller_id": "EMP-0"}),
        Call("describe_api", {"topic": "everything"}), Call("search_hotels", {"city": "Atlantis"}),
        Call("get_hotel", {"hotel_id": "H-0"}), Call("get_fare_rules", {"carrier": "Pan Am", "fare_class": "Saver"}),
        *[Call("search_flights", {**search.args, **change}) for change in (
            {"date": ""}, {"date": "2026-02-30"}, {"date": "9999-99-99"}, {"origin": "x" * 5000})],
        Call("book_flight", {"fare_id": "F-0", "checked_bags": 1}),
        Call("book_flight", {"fare_id": search.args["origin"], "checked_bags": 10 ** 12}),
        Call("book_train", {"fare_id": ""}), Call("cancel_booking", {"booking_id": "TR-0"}),
        Call("change_flight", {"booking_id": "TR-0", "fare_id": "F-0"}),
        Call("book_transfer", {"hotel_id": "H-0", "booking_id": "TR-0", "mode": "taxi"}),
        *[Call("book_hotel", {**hotel.args, **change}) for change in (
            {"check_in": hotel.args["check_out"], "check_out": hotel.args["check_in"]}, {"check_in": "1900-01-01"},
            {"check_out": "9999-12-31"}, {"check_in": "not a date"}, {"rate_id": "R-0"})],
        Call("list_bookings", {"extra": 1}),
    ]


@pytest.mark.parametrize("item_id", ITEMS)
def test_hostile_inputs_are_tool_errors(item_id):
    hostile = _hostile_meeting if item_id == MEETINGS else _hostile_trip
    for seed in range(3):
        generated = task(item_id, seed)
        episode = Episode(generated, item_id)
        before = episode.env.snapshot()
        for call in hostile(generated):
            episode.act(call.name, dict(call.args))
        statuses = [(s.tool, s.status, s.result) for s in episode.steps]
        assert all(status in ("tool_error", "invalid") for _, status, _ in statuses), statuses
        assert episode.env.snapshot() == before


def test_trip_change_and_transfer_rules_are_enforced():
    for seed in range(3):
        generated = task(TRIP, seed)
        data = read_trip(generated)
        held = data["held"]
        episode = Episode(generated, TRIP)
        other = next(s for s in data["services"][2] if s["carrier"] != held["carrier"] and s["mode"] == "flight")
        fare = dict(zip(other["columns"], other["fares"][1]))["fare_id"]
        text, error = episode.act("change_flight", {"booking_id": held["booking_id"], "fare_id": fare})
        assert error and "keeps the carrier" in text
        late = next(s for s in data["services"][0] if clock(s["arrives"]) >= 22 * 60 + 30) if any(
            clock(s["arrives"]) >= 22 * 60 + 30 for s in data["services"][0]) else None
        shuttle = next((h for h in data["hotels"].values() if h["city"] == data["legs"][0][1] and any(
            o["mode"] == "shuttle" for o in h["transfers"]["airport"])), None)
        if late and shuttle:
            booked = act(episode, "book_flight", fare_id=late["fares"][0][0], checked_bags=1)
            text, error = episode.act("book_transfer", {"hotel_id": shuttle["hotel_id"],
                                                        "booking_id": booked["booking_id"], "mode": "shuttle"})
            assert error and "does not run" in text
