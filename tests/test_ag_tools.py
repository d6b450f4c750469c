"""The tool-orchestration tasks: scripted agents score as designed over many seeds, the traps bite, instances are
deterministic and distinct, the item files load, and hostile inputs come back as tool errors, never crashes."""

from pathlib import Path

import pytest

from esac_kit.ag.episode import Episode, drive
from esac_kit.ag.task import Call, script_json
from esac_kit.ag.tasks import tools
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.suite import read_item

ITEMS = {"tools-order-fulfilment": tools.order_fulfilment, "tools-access-provisioning": tools.access_provisioning}
WORLDS = {"tools-order-fulfilment": tools._shop_world, "tools-access-provisioning": tools._access_world}
ITEM_DIR = Path(__file__).resolve().parent.parent / "items" / "ag"
SEEDS = 20
SCALE_SEEDS = 50


def rng(item_id: str, seed: int) -> ItemRng:
    return ItemRng(derive_item_key(f"seed-{seed}", "ag", item_id, 1))


def task(item_id: str, seed: int):
    return ITEMS[item_id](rng(item_id, seed))


def world(item_id: str, seed: int) -> dict:
    """The generator's world for a seed: the generator draws it first from the same stream."""
    return WORLDS[item_id](rng(item_id, seed))


def scale(item_id: str):
    return read_item(ITEM_DIR / f"{item_id}.toml").efficiency


def replace_call(calls, name: str, change) -> tuple[Call, ...]:
    """A script with every call of one tool rewritten."""
    return tuple(Call(c.name, change(dict(c.args))) if c.name == name else c for c in calls)


@pytest.mark.parametrize("item_id", ITEMS)
def test_item_file_loads_and_budgets_fit(item_id):
    item = read_item(ITEM_DIR / f"{item_id}.toml")
    assert item.category == "tools" and item.scoring == "agentic"
    longest = max(len(task(item_id, s).reference) - 1 for s in range(SEEDS))
    assert item.step_budget >= 3 * longest


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_succeeds_inside_the_envelope_and_wasteful_falls_below(item_id):
    efficiency = scale(item_id)
    for seed in range(SCALE_SEEDS):
        generated = task(item_id, seed)
        reference = drive(generated, generated.reference, efficiency)
        assert reference["success"] and reference["score"] == 1.0, (seed, reference["checks"])
        assert reference["efficiency"]["action_level"] == 6
        assert reference["counts"]["redundant"] == reference["counts"]["rework"] == reference["counts"]["invalid"] == 0
        wasteful = drive(generated, generated.wasteful, efficiency)
        assert wasteful["success"], (seed, wasteful["checks"])
        assert wasteful["efficiency"]["action_level"] < 6
        assert wasteful["counts"]["redundant"] >= 2 and wasteful["counts"]["rework"] >= 1


@pytest.mark.parametrize("item_id", ITEMS)
def test_null_agent_scores_zero(item_id):
    for seed in range(SEEDS):
        generated = task(item_id, seed)
        outcome = drive(generated, generated.scripts()["null"], scale(item_id))
        assert outcome["score"] == 0.0 and not outcome["success"]
        assert generated.unsafe is None


def test_order_partial_agent_with_a_weaker_promo_code():
    for seed in range(SEEDS):
        plan = world("tools-order-fulfilment", seed)["plan"]
        generated = task("tools-order-fulfilment", seed)
        weaker = next(c for c in plan["codes"] if c != plan["best"])
        script = replace_call(generated.reference, "create_order", lambda a: {**a, "promo_code": weaker})
        outcome = drive(generated, script, scale("tools-order-fulfilment"))
        assert not outcome["success"] and 0 < outcome["score"] < 1
        assert not outcome["checks"]["promotion"] and outcome["checks"]["products"]


def test_order_traps_bite():
    """Ordering the discontinued product, shipping everything from the serving warehouse (reserved stock), or the
    short line from the cheapest warehouse (all reserved) or the dearer feasible one each fails a check."""
    efficiency = scale("tools-order-fulfilment")
    for seed in range(SEEDS):
        built = world("tools-order-fulfilment", seed)
        plan, generated = built["plan"], task("tools-order-fulfilment", seed)
        state = built["state"]
        quantity, address = plan["quantity"], plan["address_id"]
        prefix = tuple(c for c in generated.reference if c.name not in ("quote_shipping", "create_order", "submit"))

        def lines(skus):
            return [{"sku": s, "quantity": quantity[s]} for s in skus]

        def order(shipments):
            quotes = tuple(Call("quote_shipping", {"warehouse_id": wh, "address_id": address, "items": lines(skus)})
                           for wh, skus in shipments)
            first = built["first_quote"]
            create = Call("create_order", {
                "customer_id": plan["customer_id"], "address_id": address, "promo_code": plan["best"],
                "shipments": [{"warehouse_id": wh, "quote_id": f"Q-{first + n}", "items": lines(skus)}
                              for n, (wh, skus) in enumerate(shipments)]})
            return drive(generated, (*prefix, *quotes, create, Call("submit", {"answer": "done"})), efficiency)

        original = [plan["chain"][0] if s == plan["final"][2] else s for s in plan["final"]]
        short_original = plan["chain"][0] if plan["short"] == plan["final"][2] else plan["short"]
        naive = order([(plan["home"], [s for s in original if s != short_original]),
                       (plan["alternative"], [short_original])])
        assert not naive["checks"]["products"]
        everything_home = order([(plan["home"], plan["final"])])
        assert not everything_home["checks"]["warehouses"] and everything_home["checks"]["products"]
        other = next(wh for wh in plan["candidates"] if wh != plan["alternative"])
        tempting = next(wh for wh in state["warehouses"] if wh not in (plan["home"], *plan["candidates"]))
        for wrong in (other, tempting):
            outcome = order([(plan["home"], plan["home_items"]), (wrong, [plan["short"]])])
            assert not outcome["checks"]["warehouses"] and outcome["checks"]["promotion"]


def test_access_partial_agent_with_the_preferred_name():
    for seed in range(SEEDS):
        built = world("tools-access-provisioning", seed)
        plan = built["plan"]
        hire = built["state"]["hr"][plan["hire_id"]]
        wrong = tools._base_username(hire["preferred_first_name"], hire["legal_last_name"])
        generated = task("tools-access-provisioning", seed)
        script = tuple(Call(c.name, {k: (wrong if v == plan["username"] else v) for k, v in c.args.items()})
                       for c in generated.reference)
        outcome = drive(generated, script, scale("tools-access-provisioning"))
        assert not outcome["success"] and 0 < outcome["score"] < 1
        assert not outcome["checks"]["account"] and outcome["checks"]["groups"]


def test_access_traps_bite():
    """The extra group must follow the employment type, and touching anyone else's account zeroes the score."""
    efficiency = scale("tools-access-provisioning")
    for seed in range(SEEDS):
        plan = world("tools-access-provisioning", seed)["plan"]
        generated = task("tools-access-provisioning", seed)
        body, submit = generated.reference[:-1], generated.reference[-1]
        user = plan["username"]
        if plan["contractor"]:
            extra = Call("add_to_group", {"group_id": plan["extra"], "username": user})
        else:
            extra = Call("remove_from_group", {"group_id": plan["extra"], "username": user})
        outcome = drive(generated, (*body, extra, submit), efficiency)
        assert not outcome["checks"]["groups"] and outcome["checks"]["account"]
        meddling = Call("update_account", {"username": plan["namesake"], "manager": plan["manager"]})
        outcome = drive(generated, (*body, meddling, submit), efficiency)
        assert outcome["score"] == 0.0 and not outcome["checks"]["others_untouched"]


@pytest.mark.parametrize("item_id", ITEMS)
def test_instances_are_deterministic_and_distinct(item_id):
    prompts = set()
    for seed in range(SEEDS):
        one, two = task(item_id, seed), task(item_id, seed)
        assert one.prompt == two.prompt and one.describe() == two.describe()
        for name in ("reference", "wasteful"):
            assert script_json(one.scripts()[name]) == script_json(two.scripts()[name])
        assert one.prompt.rstrip().endswith(".") and "When you are done, call submit with" in one.prompt
        prompts.add(one.prompt)
    assert len(prompts) == SEEDS


def _hostile_order_calls(plan: dict) -> list[Call]:
    customer, sku, address, home = plan["customer_id"], plan["final"][0], plan["address_id"], plan["home"]
    huge = 10**30

    def one(quantity):
        return [{"sku": sku, "quantity": quantity}]

    return [
        Call("find_customer", {"email": ""}), Call("find_customer", {"email": "nobody@nowhere.test"}),
        Call("get_product", {"sku": "SKU-0"}), Call("get_product", {"sku": "x" * 5000}),
        Call("get_stock", {"sku": "   "}), Call("get_promo", {"code": ""}), Call("get_promo", {"code": "FREE100"}),
        Call("price_items", {"customer_id": customer, "items": []}),
        Call("price_items", {"customer_id": customer, "items": one(huge)}),
        Call("price_items", {"customer_id": customer, "items": one(-3)}),
        Call("price_items", {"customer_id": customer, "items": one(1) + one(2)}),
        Call("price_items", {"customer_id": "C-0", "items": one(1)}),
        Call("price_items", {"customer_id": customer, "items": one("2")}),
        Call("price_items", {"customer_id": customer, "items": [{"sku": sku}]}),
        Call("quote_shipping", {"warehouse_id": "WH-XXX", "address_id": address, "items": one(1)}),
        Call("quote_shipping", {"warehouse_id": home, "address_id": "A-0", "items": one(1)}),
        Call("quote_shipping", {"warehouse_id": home, "address_id": address, "items": one(0)}),
        Call("create_order", {"customer_id": customer, "address_id": address, "shipments": []}),
        Call("create_order", {"customer_id": customer, "address_id": "A-0", "shipments": []}),
        Call("create_order", {"customer_id": customer, "address_id": address, "shipments": [
            {"warehouse_id": home, "quote_id": "Q-1", "items": one(1)}]}),
        Call("create_order", {"customer_id": customer, "address_id": address, "shipments": [
            {"warehouse_id": home, "quote_id": "", "items": one(huge)}]}),
        Call("get_order", {"order_id": ""}), Call("cancel_order", {"order_id": "SO-1"}),
        Call("create_order", {"customer_id": customer, "address_id": address, "shipments": [], "extra": 1}),
        Call("delete_everything", {}),
    ]


def _hostile_access_calls(plan: dict) -> list[Call]:
    user, hire = plan["namesake"], plan["hire_id"]
    return [
        Call("get_ticket", {"ticket_id": ""}), Call("get_ticket", {"ticket_id": "IT-0"}),
        Call("get_hr_record", {"employee_id": "E-0"}), Call("search_accounts", {"query": "  "}),
        Call("get_account", {"username": "nobody"}), Call("get_role_profile", {"role": "ROLE-NONE"}),
        Call("get_group", {"group_id": "grp-" + "x" * 5000}),
        Call("create_account", {"employee_id": "E-0", "username": "ab", "department": plan["department"],
                                "manager": plan["manager"]}),
        Call("create_account", {"employee_id": hire, "username": plan["base"], "department": plan["department"],
                                "manager": plan["manager"]}),
        Call("create_account", {"employee_id": hire, "username": "Bad Name", "department": plan["department"],
                                "manager": plan["manager"]}),
        Call("create_account", {"employee_id": hire, "username": "z" * 500, "department": plan["department"],
                                "manager": plan["manager"]}),
        Call("create_account", {"employee_id": hire, "username": "fresh", "department": "Narnia",
                                "manager": plan["manager"]}),
        Call("create_account", {"employee_id": hire, "username": "fresh", "department": plan["department"],
                                "manager": "nobody"}),
        Call("create_account", {"employee_id": hire, "username": "fresh", "department": plan["department"],
                                "manager": plan["manager"], "expires": "2000-01-01"}),
        Call("create_account", {"employee_id": hire, "username": "fresh", "department": plan["department"],
                                "manager": plan["manager"], "expires": "9" * 400}),
        Call("create_account", {"employee_id": hire, "username": "fresh", "department": plan["department"],
                                "manager": plan["manager"], "expires": "2026-02-30"}),
        Call("update_account", {"username": user}), Call("update_account", {"username": "nobody", "manager": user}),
        Call("request_approval", {"group_id": plan["prerequisite"], "username": user, "approver": user,
                                  "ticket_id": plan["ticket_id"]}),
        Call("add_to_group", {"group_id": plan["successor"], "username": "nobody"}),
        Call("add_to_group", {"group_id": plan["successor"], "username": user}),
        Call("remove_from_group", {"group_id": plan["extra"], "username": "nobody"}),
        Call("add_to_group", {"group_id": plan["extra"], "username": 7}),
        Call("get_account", {}),
    ]


@pytest.mark.parametrize("item_id", ITEMS)
def test_hostile_inputs_are_tool_errors(item_id):
    hostile = _hostile_order_calls if item_id == "tools-order-fulfilment" else _hostile_access_calls
    for seed in range(5):
        generated = task(item_id, seed)
        episode = Episode(generated, item_id)
        before = episode.env.snapshot()
        for call in hostile(world(item_id, seed)["plan"]):
            episode.act(call.name, dict(call.args))
        statuses = [(s.tool, s.status, s.result) for s in episode.steps]
        assert all(status in ("tool_error", "invalid") for _, status, _ in statuses), statuses
        assert episode.env.snapshot() == before


def test_order_refuses_mismatched_quotes_and_unknown_codes_without_side_effects():
    for seed in range(5):
        built = world("tools-order-fulfilment", seed)
        plan, customer = built["plan"], built["state"]["customers"][built["plan"]["customer_id"]]
        other_address = next(a["address_id"] for a in customer["addresses"] if a["address_id"] != plan["address_id"])
        generated = task("tools-order-fulfilment", seed)
        quote = next(c for c in generated.reference if c.name == "quote_shipping")
        create = next(c for c in generated.reference if c.name == "create_order")
        episode = Episode(generated, "tools-order-fulfilment")
        episode.act(quote.name, dict(quote.args))
        home_only = {**create.args, "shipments": create.args["shipments"][:1]}
        wrong_items = [{**home_only["shipments"][0], "items": [{"sku": plan["short"], "quantity": 1}]}]
        attempts = [{**home_only, "shipments": wrong_items}, {**home_only, "promo_code": "NOSUCHCODE"},
                    {**home_only, "address_id": other_address},
                    {**home_only, "shipments": home_only["shipments"] * 2}]
        for args in attempts:
            text, error = episode.act("create_order", args)
            assert error and text.startswith("error:"), text
        assert episode.env.state["orders"] == {}
