"""The tool-orchestration tasks (ESAC-AG 2.0): scripted agents score as designed, independent solvers that read only
the prompt and the tool outputs reach the generator's optimum, the traps bite, instances are deterministic and
distinct, and hostile inputs come back as tool errors, never crashes."""

from __future__ import annotations

import itertools
import json
import re
from datetime import date, timedelta
from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import Call, script_json
from esac_kit.ag.tasks import tools
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

ORDER, ACCESS = "tools-order-fulfilment", "tools-access-provisioning"
ITEMS = {ORDER: tools.order_fulfilment, ACCESS: tools.access_provisioning}
ITEM_DIR = Path(__file__).resolve().parent.parent / "items" / "ag"
SEEDS = 12


def task(item_id: str, seed: int):
    return ITEMS[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 2)))


def scale(item_id: str):
    return read_item(ITEM_DIR / f"{item_id}.toml").efficiency


def act(episode: Episode, name: str, **args):
    """One call through the episode, as an agent makes it; the parsed result, or the error text."""
    text, error = episode.act(name, args)
    return text if error else json.loads(text)


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_wasteful_and_null_agents(item_id):
    efficiency = scale(item_id)
    for seed in range(SEEDS):
        generated = task(item_id, seed)
        reference = drive(generated, generated.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        wasteful = drive(generated, generated.wasteful, efficiency)
        assert wasteful["success"] and wasteful["efficiency"]["action_level"] < 6, seed
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1
        null = drive(generated, generated.scripts()["null"], efficiency)
        assert null["score"] == 0.0 and not null["success"] and generated.unsafe is None


@pytest.mark.parametrize("item_id", ITEMS)
def test_instances_are_deterministic_and_distinct_and_outputs_compact(item_id):
    prompts = set()
    for seed in range(SEEDS):
        one, two = task(item_id, seed), task(item_id, seed)
        assert one.prompt == two.prompt and one.describe() == two.describe()
        for name in ("reference", "wasteful"):
            assert script_json(one.scripts()[name]) == script_json(two.scripts()[name])
        assert one.prompt.rstrip().endswith(".") and "When you are done, call submit with" in one.prompt
        prompts.add(one.prompt)
        episode = Episode(one, item_id)
        for call in one.reference[:-1]:
            text, _ = episode.act(call.name, dict(call.args))
            assert len(text) <= 1500, (call.name, len(text))
    assert len(prompts) == SEEDS


# ---------------------------------------------------------------- an independent order solver


def _order_cost(site: dict, zone: int, weight: int, value: int) -> int:
    """The documented shipment cost, from the warehouse detail's rate columns."""
    if site["free_shipping_over_cents"] is not None and value >= site["free_shipping_over_cents"]:
        return 0
    rate = dict(zip(site["rate_columns"], next(r for r in site["rates"] if r[0] == zone)))
    return rate["base_cents"] + rate["per_kg_cents"] * max(1, (weight + 999) // 1000)


def solve_order(generated, *, deadline=True, successor=True, search=True, stray=False) -> dict:
    """Explore the shop through its tools and place the cheapest feasible order by exhaustive search; the flags
    turn on one trap each: ignore the delivery date, order the discontinued product, pick each line's cheapest
    warehouse, or leave an extra hold."""
    episode = Episode(generated, ORDER)
    prompt = generated.prompt
    cart_id = re.search(r"Fulfil cart (K-\d+)", prompt).group(1)
    email = re.search(r"e-mail (\S+),", prompt).group(1)
    label = re.search(r"to their '(\w+)' address", prompt).group(1)
    today = date.fromisoformat(re.search(r"Today is (\d{4}-\d\d-\d\d)", prompt).group(1))
    docs = {t: act(episode, "describe_api", topic=t)["text"] for t in ("fulfilment", "shipping", "holds")}
    fee = round(float(re.search(r"handling fee of \$([\d.,]+)", docs["fulfilment"]).group(1).replace(",", "")) * 100)
    most = int(re.search(r"at most (\d+) shipments", docs["fulfilment"]).group(1))
    customer = act(episode, "find_customer", email=email)
    address_id = next(a["address_id"] for a in customer["addresses"] if a["label"] == label)
    zone = act(episode, "get_address", address_id=address_id)["zone"]
    cart = act(episode, "get_cart", cart_id=cart_id)
    lines, products = [], {}
    for line in cart["lines"]:
        product = act(episode, "get_product", sku=line["sku"])
        while successor and product["status"] == "discontinued":
            product = act(episode, "get_product", sku=product["replaced_by"])
        products[product["sku"]] = product
        lines.append((product["sku"], line["quantity"]))
    pages = act(episode, "list_warehouses", page=1)["pages"]
    ids = [w["warehouse_id"] for p in range(1, pages + 1) for w in act(episode, "list_warehouses", page=p)["warehouses"]]
    sites = {wh: act(episode, "get_warehouse", warehouse_id=wh) for wh in ids}
    stock = {sku: {w["warehouse_id"]: w for w in act(episode, "get_stock", sku=sku)["warehouses"]} for sku, _ in lines}

    def arrives(site):
        start = date.fromisoformat(site["resumes_on"]) if site["status"] == "paused" else today
        transit = dict(zip(site["rate_columns"], next(r for r in site["rates"] if r[0] == zone)))["transit_days"]
        return start + timedelta(days=site["dispatch_days"] + transit)

    def ok(sku, qty, wh):
        shelf, site = stock[sku][wh], sites[wh]
        return shelf["on_hand"] - shelf["reserved"] >= qty and (site["hazmat_certified"] or not products[sku]["hazmat"]) \
            and (not deadline or arrives(site) <= date.fromisoformat(cart["deliver_by"]))

    def total(plan):
        groups = {}
        for (sku, qty), wh in zip(lines, plan):
            groups.setdefault(wh, []).append((sku, qty))
        return fee * (len(groups) - 1) + sum(
            _order_cost(sites[wh], zone, sum(products[s]["weight_g"] * q for s, q in g),
                        sum(products[s]["list_price_cents"] * q for s, q in g)) for wh, g in groups.items())

    options = [[wh for wh in ids if ok(sku, qty, wh)] for sku, qty in lines]
    if search:
        plans = [p for p in itertools.product(*options) if len(set(p)) <= most]
        if not plans:  # the discontinued product may be stocked nowhere that can ship it
            episode.act("submit", {"answer": "no order could be placed"})
            return {**episode.outcome(scale(ORDER)), "searched": None}
        best = min(plans, key=total)
    else:
        best = tuple(min(opts, key=lambda wh, i=i: _order_cost(sites[wh], zone, products[lines[i][0]]["weight_g"]
                                                                * lines[i][1], products[lines[i][0]]["list_price_cents"]
                                                                * lines[i][1])) for i, opts in enumerate(options))
    holds: dict[str, list[str]] = {}
    for (sku, qty), wh in zip(lines, best):
        holds.setdefault(wh, []).append(act(episode, "hold_stock", cart_id=cart_id, sku=sku, warehouse_id=wh,
                                            quantity=qty)["hold_id"])
    quotes = [act(episode, "quote_shipment", warehouse_id=wh, address_id=address_id, hold_ids=h)["quote_id"]
              for wh, h in holds.items()]
    order = act(episode, "place_order", cart_id=cart_id, address_id=address_id, quote_ids=quotes)
    if stray and isinstance(order, dict):
        sku, qty = lines[0]
        spare = next(wh for wh in ids if stock[sku][wh]["on_hand"] - stock[sku][wh]["reserved"] > qty)
        act(episode, "hold_stock", cart_id=cart_id, sku=sku, warehouse_id=spare, quantity=1)
    placed = isinstance(order, dict)
    episode.act("submit", {"answer": f"{order['order_id']}, shipping {tools.dollars(order['shipping_cents'])}"
                           if placed else "no order could be placed"})
    outcome = episode.outcome(scale(ORDER))
    outcome["searched"] = total(best)
    return outcome


def test_an_independent_order_solver_reaches_the_checked_optimum():
    for seed in range(SEEDS):
        outcome = solve_order(task(ORDER, seed))
        assert outcome["success"], (seed, outcome["checks"])
        assert outcome["counts"]["tool_calls"] >= 40


def test_order_traps_bite():
    """Ignoring the delivery date, ordering the discontinued product, choosing each line's cheapest warehouse and
    leaving a stray hold each fail their check."""
    for seed in range(SEEDS):
        generated = task(ORDER, seed)
        late = solve_order(generated, deadline=False)
        assert not late["checks"]["feasible"] and not late["checks"]["optimal"], seed
        old = solve_order(generated, successor=False)
        assert not old["checks"]["products"] and not old["success"], seed
        greedy = solve_order(generated, search=False)
        assert not greedy["checks"]["optimal"], seed
        stray = solve_order(generated, stray=True)
        assert not stray["checks"]["holds"] and stray["checks"]["optimal"], seed


# ---------------------------------------------------------------- an independent access solver


def _held(groups: dict, gid: str) -> set:
    return set(groups[gid]["permissions"]).union(*(_held(groups, g) for g in groups[gid]["includes"]))


def solve_access(generated, *, nested=True, employees_rule=True, keep=True, delegate=True, hr_manager=True) -> dict:
    """Explore the directory through its tools and set the least-privilege group set by exhaustive search; each
    flag turned off falls into one trap: direct permissions only, employees-only groups for a contractor, no
    preference for kept memberships, approval asked of the away owner, the manager picked by name."""
    episode = Episode(generated, ACCESS)
    ticket_id = re.search(r"Work ticket (IT-\d+)", generated.prompt).group(1)
    ticket = act(episode, "get_ticket", ticket_id=ticket_id)["description"]
    user, eid = re.search(r"\((\w+), HR id (E-\d+)\)", ticket).groups()
    role, extra = re.search(r"as (ROLE-[\w-]+)\.", ticket).group(1), re.search(r"also need (\S+)\.$", ticket).group(1)
    hr = act(episode, "get_hr_record", employee_id=eid)
    if hr_manager:
        manager = act(episode, "search_accounts", query=hr["manager_employee_id"])[0]["username"]
    else:
        name = re.search(r"Manager: ([^.]+)\.", ticket).group(1)
        manager = act(episode, "search_accounts", query=name)[-1]["username"]
    current = set(act(episode, "get_account", username=user)["groups"])
    needed = set(act(episode, "get_role", role=role)["permissions"]) | {extra}
    pages = act(episode, "list_groups", page=1)["pages"]
    active = [g["group_id"] for p in range(1, pages + 1) for g in act(episode, "list_groups", page=p)["groups"]
              if g["status"] == "active"]
    groups = {g: act(episode, "get_group", group_id=g) for g in active}
    contractor = hr["employment_type"] == "contractor"

    def grants(gid):
        return _held(groups, gid) if nested else set(groups[gid]["permissions"])

    usable = [g for g in active if grants(g) <= needed and not (employees_rule and contractor and
                                                                 groups[g]["employees_only"])
              and all(r in groups for r in groups[g]["requires"])]
    best = None
    for size in range(1, 7):
        found = [set(c) for c in itertools.combinations(usable, size)
                 if all(r in c for g in c for r in groups[g]["requires"])
                 and set().union(*(grants(g) for g in c)) == needed]
        if found:
            best = max(found, key=lambda s: (len(s & current) if keep else 0, sorted(s) if keep else []))
            break
    fields = {"department": hr["department"], "manager": manager, "expires": hr["contract_end"] or ""}
    act(episode, "update_account", username=user, **fields)
    for gid in sorted(best - current):
        if groups[gid]["approval_required"]:
            owner = act(episode, "get_account", username=groups[gid]["owner"])
            approver = owner["delegate"] if delegate and owner["out_of_office"] else owner["username"]
            act(episode, "request_approval", group_id=gid, username=user, approver=approver, ticket_id=ticket_id)
    for gid in sorted(current - best):
        act(episode, "remove_from_group", group_id=gid, username=user)
    pending = sorted(best - current)
    while pending:
        gid = next((g for g in pending if all(r in best for r in groups[g]["requires"])
                    and all(r not in pending for r in groups[g]["requires"])), pending[0])
        act(episode, "add_to_group", group_id=gid, username=user)
        pending.remove(gid)
    episode.act("submit", {"answer": "Groups: " + ", ".join(sorted(best))})
    return episode.outcome(scale(ACCESS))


def test_an_independent_access_solver_reaches_the_checked_optimum():
    for seed in range(SEEDS):
        outcome = solve_access(task(ACCESS, seed))
        assert outcome["success"], (seed, outcome["checks"])


def test_access_traps_bite():
    """Direct permissions only, the away owner as approver and the manager chosen by name each fail a check;
    employees-only groups for a contractor and ignoring kept memberships fail wherever they change the set."""
    bit = {"employees_rule": 0, "keep": 0}
    for seed in range(SEEDS):
        generated = task(ACCESS, seed)
        flat = solve_access(generated, nested=False)
        assert not flat["success"] and not (flat["checks"]["permissions_exact"] and flat["checks"]["least_groups"])
        away = solve_access(generated, delegate=False)
        assert not away["checks"]["least_groups"] and not away["success"], seed
        for flag in bit:
            outcome = solve_access(generated, **{flag: False})
            bit[flag] += not outcome["checks"]["least_groups"]
        outcome = solve_access(generated, hr_manager=False)
        plan = tools._access_world(ItemRng(derive_item_key(f"seed-{seed}", "ag", ACCESS, 2)))["plan"]
        if plan["namesake"] > plan["manager"]:  # the last of the namesakes by username is the wrong one
            assert not outcome["checks"]["account_fields"], seed
    assert bit["employees_rule"] >= 1 and bit["keep"] >= 1, bit


def test_access_meddling_with_another_account_zeroes_the_score():
    for seed in range(4):
        generated = task(ACCESS, seed)
        plan = tools._access_world(ItemRng(derive_item_key(f"seed-{seed}", "ag", ACCESS, 2)))["plan"]
        body, submit = generated.reference[:-1], generated.reference[-1]
        meddling = Call("update_account", {"username": plan["namesake"], "manager": plan["user"]})
        outcome = drive(generated, (*body, meddling, submit), scale(ACCESS))
        assert outcome["score"] == 0.0 and not outcome["checks"]["others_untouched"]


# ---------------------------------------------------------------- hostile input


def _hostile_order_calls(plan: dict) -> list[Call]:
    cart, sku, address, wh = plan["cart_id"], plan["final"][0], plan["address_id"], plan["assignment"][plan["final"][0]]
    return [
        Call("find_customer", {"email": ""}), Call("find_customer", {"email": "nobody@nowhere.test"}),
        Call("get_product", {"sku": "SKU-0"}), Call("get_product", {"sku": "x" * 5000}),
        Call("get_stock", {"sku": "   "}), Call("get_cart", {"cart_id": "K-0"}), Call("get_address", {"address_id": ""}),
        Call("list_warehouses", {"page": 0}), Call("list_warehouses", {"page": 99}),
        Call("get_warehouse", {"warehouse_id": "WH-XXX"}), Call("describe_api", {"topic": "everything"}),
        Call("hold_stock", {"cart_id": cart, "sku": sku, "warehouse_id": wh, "quantity": 0}),
        Call("hold_stock", {"cart_id": cart, "sku": sku, "warehouse_id": wh, "quantity": 10**30}),
        Call("hold_stock", {"cart_id": cart, "sku": sku, "warehouse_id": wh, "quantity": 998}),
        Call("hold_stock", {"cart_id": "K-0", "sku": sku, "warehouse_id": wh, "quantity": 1}),
        Call("release_hold", {"hold_id": "H-1"}),
        Call("quote_shipment", {"warehouse_id": wh, "address_id": address, "hold_ids": []}),
        Call("quote_shipment", {"warehouse_id": wh, "address_id": address, "hold_ids": ["H-1", "H-1"]}),
        Call("place_order", {"cart_id": cart, "address_id": address, "quote_ids": []}),
        Call("place_order", {"cart_id": cart, "address_id": "A-0", "quote_ids": ["Q-1"]}),
        Call("place_order", {"cart_id": cart, "address_id": address, "quote_ids": ["Q-1", "Q-2", "Q-3", "Q-4"]}),
        Call("get_order", {"order_id": ""}), Call("cancel_order", {"order_id": "SO-1"}),
        Call("place_order", {"cart_id": cart, "address_id": address, "quote_ids": [], "extra": 1}),
        Call("delete_everything", {}),
    ]


def _hostile_access_calls(plan: dict) -> list[Call]:
    user, other = plan["user"], plan["namesake"]
    return [
        Call("get_ticket", {"ticket_id": ""}), Call("get_ticket", {"ticket_id": "IT-0"}),
        Call("get_hr_record", {"employee_id": "E-0"}), Call("search_accounts", {"query": "  "}),
        Call("get_account", {"username": "nobody"}), Call("get_role", {"role": "ROLE-NONE"}),
        Call("get_group", {"group_id": "grp-" + "x" * 5000}), Call("list_groups", {"page": -1}),
        Call("describe_api", {"topic": "secrets"}),
        Call("update_account", {"username": user}), Call("update_account", {"username": "nobody", "manager": user}),
        Call("update_account", {"username": user, "department": "Narnia"}),
        Call("update_account", {"username": user, "manager": "nobody"}),
        Call("update_account", {"username": user, "expires": "2000-01-01"}),
        Call("update_account", {"username": user, "expires": "9" * 400}),
        Call("update_account", {"username": user, "expires": "2026-02-30"}),
        Call("request_approval", {"group_id": "grp-none", "username": user, "approver": other,
                                  "ticket_id": plan["ticket_id"]}),
        Call("add_to_group", {"group_id": plan["target"][0], "username": "nobody"}),
        Call("remove_from_group", {"group_id": plan["target"][0], "username": "nobody"}),
        Call("add_to_group", {"group_id": plan["target"][0], "username": 7}),
        Call("get_account", {}),
    ]


@pytest.mark.parametrize("item_id", ITEMS)
def test_hostile_inputs_are_tool_errors(item_id):
    hostile = _hostile_order_calls if item_id == ORDER else _hostile_access_calls
    worlds = {ORDER: tools._order_world, ACCESS: tools._access_world}
    for seed in range(4):
        generated = task(item_id, seed)
        plan = worlds[item_id](ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 2)))["plan"]
        episode = Episode(generated, item_id)
        before = episode.env.snapshot()
        for call in hostile(plan):
            episode.act(call.name, dict(call.args))
        statuses = [(s.tool, s.status, s.result) for s in episode.steps]
        assert all(status in ("tool_error", "invalid") for _, status, _ in statuses), statuses
        assert episode.env.snapshot() == before


def test_order_refuses_loose_holds_void_quotes_and_a_second_order():
    generated = task(ORDER, 0)
    episode = Episode(generated, ORDER)
    places = [c for c in generated.reference if c.name == "place_order"]
    body = [c for c in generated.reference if c.name not in ("place_order", "submit")]
    for call in body:
        episode.act(call.name, dict(call.args))
    extra = next(c for c in generated.wasteful if c.name == "hold_stock" and c not in generated.reference)
    text, error = episode.act("hold_stock", dict(extra.args))
    hold_id = json.loads(text)["hold_id"]
    text, error = episode.act("place_order", dict(places[0].args))
    assert error and hold_id in text
    episode.act("release_hold", {"hold_id": hold_id})
    text, error = episode.act("place_order", dict(places[0].args))
    assert not error
    text, error = episode.act("place_order", dict(places[0].args))
    assert error and "already has order" in text
