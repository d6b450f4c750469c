"""Tool orchestration (ESAC-AG 2.0): long workflows over several mock services whose ids and rules are found only by
exploring (paged listings, detail views, a describe_api tool), where early actions constrain later ones (stock holds,
approvals that gate joins), and whose goal includes an optimum that the checks compare with the generator's own."""

from __future__ import annotations

import copy
import itertools
from datetime import date, timedelta
from typing import Any

from esac_kit.ag.answers import ALNUM, cents_in, distinct_ints, dollars, mentions
from esac_kit.ag.env import Environment, ToolError, paged as _paged, text_arg as _text, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng


# ---------------------------------------------------------------- shared helpers




# ---------------------------------------------------------------- task 1: order fulfilment

SHOPS = ["Northwind Home", "Kestrel Supply Co.", "Bramble & Finch", "Harbor Goods", "Larkspur Living",
         "Copperleaf Outfitters"]
WAREHOUSE_POOL = [("WH-RNO", "Reno"), ("WH-ATL", "Atlanta"), ("WH-CMH", "Columbus"), ("WH-DFW", "Dallas"),
                  ("WH-PDX", "Portland"), ("WH-EWR", "Newark"), ("WH-MCI", "Kansas City"), ("WH-SLC", "Salt Lake City"),
                  ("WH-PHX", "Phoenix")]
NOUNS = ["Speaker", "Headphones", "Soundbar", "Kettle", "Blender", "Coffee Grinder", "Desk Lamp", "Monitor Arm",
         "Label Printer", "Lantern", "Cooler", "Hammock", "Air Purifier", "Humidifier", "Robot Vacuum", "Tent"]
HAZMAT_NOUNS = ["Power Bank", "Camp Stove Fuel", "Lithium Battery Pack", "Aerosol Cleaner", "Butane Refill"]
BRANDS = ["Alder", "Nova", "Summit", "Quill", "Ember", "Tidal", "Cobalt", "Juniper", "Vireo", "Atlas", "Birch",
          "Halcyon"]
FIRST = ["Amara", "Bruno", "Chloe", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines", "Jonah", "Keiko",
         "Lorenzo", "Maya", "Nikhil", "Olga", "Pablo", "Rosa", "Soren", "Tamsin", "Uriel"]
LAST = ["Abbott", "Brennan", "Castillo", "Dvorak", "Eriksen", "Fontaine", "Gallagher", "Haddad", "Iwata",
        "Jensen", "Kowalski", "Lindgren", "Moreau", "Nakamura", "Okoro", "Petrov", "Quintero", "Rasmussen"]
MAIL_DOMAINS = ["example.com", "mailbox.test", "inbox.example", "post.example.org"]
ADDRESS_LABELS = ["home", "office", "studio", "cabin", "workshop", "parents"]
CITIES = ["Boise", "Tucson", "Madison", "Raleigh", "Omaha", "Spokane", "Savannah", "Albany", "Fresno", "Tulsa"]
STREETS = ["Maple Ave", "Harbor St", "Elm Rd", "Cedar Ln", "Ridge Way", "Mill St", "Lake Dr", "Orchard Ct"]
MAX_SHIPMENTS = 3
WAREHOUSE_PAGE = 3
RATE_COLUMNS = ["zone", "base_cents", "per_kg_cents", "transit_days"]
MAX_PLANS = 6000  # assignments the generator enumerates; denser instances are redrawn

ORDER_DOCS = {
    "fulfilment": (
        "Fulfilment rules. An order fulfils one cart. Every cart line ships whole (all its units) from one warehouse; "
        "the lines from one warehouse form one shipment, and an order has at most {max} shipments. A discontinued "
        "product is never sold: order its successor (replaced_by, followed until an active product) in the line's "
        "quantity. Hazmat products ship only from hazmat_certified warehouses. Every shipment must arrive on or "
        "before the cart's deliver_by date. The customer pays the order's shipping charge: the sum of its "
        "shipments' costs plus a handling fee of {fee} for every shipment beyond the first."),
    "shipping": (
        "Shipping. A shipment's cost to an address in zone z is 0 when the merchandise value of its lines (list "
        "price x quantity) is at least the warehouse's free_shipping_over_cents (null: never free); otherwise "
        "base_cents + per_kg_cents x the shipment's weight in kilograms rounded up (at least 1 kg), from the "
        "warehouse's rate for zone z. A shipment leaves dispatch_days after today (a paused warehouse: "
        "dispatch_days after its resumes_on date) and arrives transit_days (the zone's rate) later. get_warehouse "
        "shows a warehouse's status, certification and rates; quote_shipment prices one shipment."),
    "holds": (
        "Stock holds. A warehouse's available stock of a product is on_hand minus reserved. hold_stock reserves "
        "units of one product at one warehouse for a cart and is refused beyond the available units; release_hold "
        "returns them. A quote covers holds of one cart at one warehouse for one address and reserves nothing more; "
        "a quote whose hold was released is void. place_order takes one quote per shipment and is refused while "
        "the cart has a hold that none of its quotes covers. Cancelling an order releases its holds."),
}


def _ship_cost(warehouse: dict[str, Any], zone: int, weight_g: int, value_cents: int) -> int:
    """One shipment's cost under the documented rate card."""
    free = warehouse["free_shipping_over_cents"]
    if free is not None and value_cents >= free:
        return 0
    _, base, per_kg, _ = warehouse["rates"][zone - 1]
    return base + per_kg * max(1, -(-weight_g // 1000))


def _arrival(warehouse: dict[str, Any], zone: int, today: date) -> date:
    """When a shipment from the warehouse reaches the zone."""
    start = date.fromisoformat(warehouse["resumes_on"]) if warehouse["status"] == "paused" else today
    return start + timedelta(days=warehouse["dispatch_days"] + warehouse["rates"][zone - 1][3])


def _order_world(rng: ItemRng) -> dict[str, Any]:
    """A seeded shop whose cheapest feasible plan beats the obvious ones; drafts that do not are redrawn."""
    while True:
        world = _draft_order(rng)
        if world is not None:
            return world


def _order_warehouses(rng: ItemRng, today: date) -> dict[str, dict[str, Any]]:
    """Six warehouses with zone rate cards, certification, dispatch times, free-shipping levels, maybe one paused."""
    paused = rng.randint(0, 8)  # an index past the last: no warehouse is paused
    result = {}
    for index, (wid, city) in enumerate(rng.sample(WAREHOUSE_POOL, 6)):
        home = rng.randint(1, 5)
        rates = []
        for zone in range(1, 6):
            d = abs(zone - home)
            rates.append([zone, 350 + 160 * d + rng.randint(0, 25) * 10, 40 + 30 * d + rng.randint(0, 8) * 5,
                          1 + d + rng.randint(0, 1)])
        result[wid] = {"warehouse_id": wid, "city": city, "status": "paused" if index == paused else "active",
                       "resumes_on": (today + timedelta(days=rng.randint(2, 6))).isoformat() if index == paused
                       else None, "hazmat_certified": rng.randint(0, 2) > 0, "dispatch_days": rng.randint(0, 2),
                       "free_shipping_over_cents": rng.choice([None, None, None, 50000, 70000, 90000, 120000]),
                       "rates": rates}
    return result


def _order_products(rng: ItemRng, n_lines: int) -> tuple[dict[str, Any], list[str], list[str], list[str]]:
    """The cart's products, one discontinued with a successor chain: (products, requested, final, chain)."""
    skus = [f"SKU-{n}" for n in distinct_ints(rng, 10000, 99999, n_lines + 2)]
    hazmat = set(rng.sample(range(n_lines), 2))
    products: dict[str, Any] = {}

    def add(sku: str, noun: str, hazardous: bool, status: str, successor: str | None) -> None:
        products[sku] = {"sku": sku, "name": f"{rng.choice(BRANDS)} {noun} {rng.randint(2, 9)}", "status": status,
                         "replaced_by": successor, "list_price_cents": rng.randint(15, 260) * 100 - 1,
                         "weight_g": rng.randint(3, 80) * 100, "hazmat": hazardous}

    for index, sku in enumerate(skus[:n_lines]):
        add(sku, rng.choice(HAZMAT_NOUNS if index in hazmat else NOUNS), index in hazmat, "active", None)
    old = rng.randint(0, n_lines - 1)
    chain = [skus[old]] + skus[n_lines:n_lines + rng.choice([1, 1, 2])]
    for position, sku in enumerate(chain):
        last = position == len(chain) - 1
        if position:
            noun = products[chain[0]]["name"].split(" ", 1)[1].rsplit(" ", 1)[0]
            add(sku, noun, products[chain[0]]["hazmat"], "active", None)
        products[sku].update(status="active" if last else "discontinued", replaced_by=None if last else chain[position + 1])
    requested = skus[:n_lines]
    final = [chain[-1] if s == chain[0] else s for s in requested]
    return products, requested, final, chain


def _order_stock(rng: ItemRng, skus: list[str], warehouses: list[str], quantity: dict[str, int]
                 ) -> dict[str, dict[str, dict[str, int]]]:
    """Stock of every product everywhere: about half the warehouses can cover a line, some only on paper (held)."""
    stock: dict[str, dict[str, dict[str, int]]] = {}
    for sku in skus:
        q = quantity.get(sku, 1)
        stock[sku] = {}
        for wh in warehouses:
            if rng.randint(0, 99) < 55:
                on_hand = q + rng.randint(0, 25)
                reserved = rng.randint(0, on_hand - q)
            else:
                on_hand = rng.randint(0, q + 12)
                reserved = rng.randint(max(0, on_hand - q + 1), on_hand) if on_hand else 0
            stock[sku][wh] = {"on_hand": on_hand, "reserved": reserved}
    return stock


def _plans(final: list[str], options: dict[str, list[str]], cost) -> tuple[int, tuple[str, ...]] | None:
    """The cheapest assignment of lines to their options with at most MAX_SHIPMENTS warehouses: (cents, plan)."""
    best = None
    for plan in itertools.product(*(options[s] for s in final)):
        masks: dict[str, int] = {}
        for index, wh in enumerate(plan):
            masks[wh] = masks.get(wh, 0) | (1 << index)
        if len(masks) > MAX_SHIPMENTS:
            continue
        total = cost(masks)
        if best is None or total < best[0]:
            best = (total, plan)
    return best


def _draft_order(rng: ItemRng) -> dict[str, Any] | None:
    """One draw of the shop, or None when its optimum is not what a careful search alone finds."""
    today = date(2026, 1, 5) + timedelta(days=rng.randint(0, 320))
    deliver_by = today + timedelta(days=rng.randint(4, 6))
    warehouses = _order_warehouses(rng, today)
    products, requested, final, chain = _order_products(rng, rng.choice([8, 9]))
    quantity = {sku: rng.randint(1, 4) for sku in final}
    stock = _order_stock(rng, list(products), list(warehouses), quantity)
    zone, fee = rng.randint(1, 5), rng.randint(5, 12) * 50
    memo: dict[tuple[str, int], int] = {}

    def cost(masks: dict[str, int]) -> int:
        total = fee * (len(masks) - 1)
        for wh, mask in masks.items():
            if (wh, mask) not in memo:
                lines = [s for i, s in enumerate(final) if mask >> i & 1]
                memo[(wh, mask)] = _ship_cost(warehouses[wh], zone, sum(products[s]["weight_g"] * quantity[s]
                                                                         for s in lines),
                                              sum(products[s]["list_price_cents"] * quantity[s] for s in lines))
            total += memo[(wh, mask)]
        return total

    def can(sku: str, wh: str, deadline: bool) -> bool:
        shelf, site = stock[sku][wh], warehouses[wh]
        return shelf["on_hand"] - shelf["reserved"] >= quantity[sku] and (site["hazmat_certified"] or not
                                                                         products[sku]["hazmat"]) and (
            not deadline or _arrival(site, zone, today) <= deliver_by)

    options = {s: [wh for wh in warehouses if can(s, wh, True)] for s in final}
    loose = {s: [wh for wh in warehouses if can(s, wh, False)] for s in final}
    size = 1
    for s in final:
        size *= len(loose[s])
    if size == 0 or size > MAX_PLANS or not all(options.values()):
        return None
    best, unchecked = _plans(final, options, cost), _plans(final, loose, cost)
    if best is None or unchecked is None or unchecked[0] > best[0] - 100:
        return None  # ignoring the delivery date must tempt
    greedy = {}
    for index, sku in enumerate(final):
        wh = min(options[sku], key=lambda w: (cost({w: 1 << index}), w))
        greedy[wh] = greedy.get(wh, 0) | (1 << index)
    singles = [cost({wh: (1 << len(final)) - 1}) for wh in warehouses if all(wh in options[s] for s in final)]
    if (len(greedy) <= MAX_SHIPMENTS and cost(greedy) < best[0] + 150) or any(c < best[0] + 150 for c in singles):
        return None
    return _order_world_from(rng, today, deliver_by, warehouses, products, stock, {
        "requested": requested, "final": final, "chain": chain, "quantity": quantity, "zone": zone, "fee": fee,
        "options": options, "optimum": best[0], "assignment": dict(zip(final, best[1]))})


def _order_world_from(rng: ItemRng, today: date, deliver_by: date, warehouses: dict[str, Any],
                      products: dict[str, Any], stock: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    """The customer, addresses and cart around a drawn catalogue and its optimum."""
    first, last = rng.choice(FIRST), rng.choice(LAST)
    customer_id = f"C-{rng.randint(10000, 99999)}"
    email = f"{first.lower()}.{last.lower()}{rng.randint(2, 98)}@{rng.choice(MAIL_DOMAINS)}"
    labels = rng.sample(ADDRESS_LABELS, rng.randint(2, 3))
    address_ids = [f"A-{n}" for n in distinct_ints(rng, 1000, 9999, len(labels))]
    addresses = {}
    for index, (label, address_id) in enumerate(zip(labels, address_ids)):
        addresses[address_id] = {"address_id": address_id, "label": label, "default": index == 1,
                                 "street": f"{rng.randint(10, 9899)} {rng.choice(STREETS)}",
                                 "city": rng.choice(CITIES),
                                 "zone": plan["zone"] if index == 0 else rng.randint(1, 5)}
    order_ids = address_ids[:]
    rng.shuffle(order_ids)
    cart_id = f"K-{rng.randint(100000, 999999)}"
    customers = {customer_id: {"customer_id": customer_id, "name": f"{first} {last}", "email": email,
                               "addresses": [{"address_id": a, "label": addresses[a]["label"],
                                              "default": addresses[a]["default"]} for a in order_ids]}}
    lines = [{"sku": sku, "quantity": plan["quantity"][fin]} for sku, fin in zip(plan["requested"], plan["final"])]
    carts = {cart_id: {"cart_id": cart_id, "customer_id": customer_id, "created": (today - timedelta(days=1)).isoformat(),
                       "deliver_by": deliver_by.isoformat(), "lines": lines}}
    shipments: dict[str, list[str]] = {}
    for sku in plan["final"]:
        shipments.setdefault(plan["assignment"][sku], []).append(sku)
    plan = {**plan, "shop": rng.choice(SHOPS), "email": email, "label": labels[0], "customer_id": customer_id,
            "address_id": address_ids[0], "cart_id": cart_id, "deliver_by": deliver_by.isoformat(),
            "shipments": shipments}
    state = {"customers": customers, "addresses": addresses, "carts": carts, "products": products, "stock": stock,
             "warehouses": warehouses, "holds": {}, "released": {}, "quotes": {}, "orders": {}}
    return {"state": state, "today": today, "plan": plan, "first_hold": rng.randint(100, 899),
            "first_quote": rng.randint(1000, 8999), "first_order": rng.randint(10000, 89999)}


def _hold_status(state: dict[str, Any], hold_id: str) -> str:
    """A hold's status, derived so that no later call rewrites the hold itself: released, ordered or held."""
    if hold_id in state["released"]:
        return "released"
    if any(o["status"] == "placed" and any(line["hold_id"] == hold_id for s in o["shipments"] for line in s["lines"])
           for o in state["orders"].values()):
        return "ordered"
    return "held"


HOLD_IDS = {"type": "array", "items": {"type": "string"}, "description": "Hold ids, all at this warehouse."}


class ShopEnv(Environment):
    """Mock shop services: customers, carts, catalogue, inventory and holds, warehouses, shipping and orders."""

    def __init__(self, world: dict[str, Any]):
        super().__init__()
        self.state = copy.deepcopy(world["state"])
        self._today: date = world["today"]
        self._fee: int = world["plan"]["fee"]
        self._next = {"hold": world["first_hold"], "quote": world["first_quote"], "order": world["first_order"]}

    def _get(self, table: str, key: str, what: str, upper: bool = True) -> dict[str, Any]:
        value = _text(key, what)
        record = self.state[table].get(value.upper() if upper else value)
        if record is None:
            raise ToolError(f"no {what.replace('_', ' ')} '{value}'")
        return record

    def _new_id(self, kind: str, prefix: str) -> str:
        number = self._next[kind]
        self._next[kind] += 1
        return f"{prefix}-{number}"

    @tool("Documentation of the shop's services. Topics: 'fulfilment' (what an order may contain and how it is "
          "charged), 'shipping' (rate cards, free shipping, arrival dates), 'holds' (stock holds, quotes, orders).",
          {"topic": {"type": "string", "enum": list(ORDER_DOCS)}})
    def describe_api(self, topic: str) -> Any:
        return {"topic": topic, "text": ORDER_DOCS[topic].format(max=MAX_SHIPMENTS, fee=dollars(self._fee))}

    @tool("Customers: find a customer by e-mail: id, name and saved addresses (id, label, default).",
          {"email": {"type": "string"}})
    def find_customer(self, email: str) -> Any:
        wanted = _text(email, "email").lower()
        for customer in self.state["customers"].values():
            if customer["email"] == wanted:
                return copy.deepcopy(customer)
        raise ToolError(f"no customer with e-mail '{email}'")

    @tool("Customers: one saved address in full, with its shipping zone.", {"address_id": {"type": "string"}})
    def get_address(self, address_id: str) -> Any:
        return copy.deepcopy(self._get("addresses", address_id, "address_id"))

    @tool("Carts: one cart: its customer, lines (sku, quantity) and deliver_by date.", {"cart_id": {"type": "string"}})
    def get_cart(self, cart_id: str) -> Any:
        return copy.deepcopy(self._get("carts", cart_id, "cart_id"))

    @tool("Catalogue: one product by SKU.", {"sku": {"type": "string"}})
    def get_product(self, sku: str) -> Any:
        return copy.deepcopy(self._get("products", sku, "sku"))

    @tool("Inventory: a product's on_hand and reserved units in every warehouse.", {"sku": {"type": "string"}})
    def get_stock(self, sku: str) -> Any:
        product = self._get("products", sku, "sku")
        shelves = self.state["stock"][product["sku"]]
        return {"sku": product["sku"], "warehouses": [{"warehouse_id": wh, **shelves[wh]} for wh in shelves]}

    @tool("Warehouses: one page of the warehouse list (id and city).", {"page": {"type": "integer"}})
    def list_warehouses(self, page: int) -> Any:
        rows = [{"warehouse_id": w["warehouse_id"], "city": w["city"]} for w in self.state["warehouses"].values()]
        listing = _paged(rows, page, WAREHOUSE_PAGE)
        return {"page": listing["page"], "pages": listing["pages"], "warehouses": listing["rows"]}

    @tool("Warehouses: one warehouse in full.", {"warehouse_id": {"type": "string"}})
    def get_warehouse(self, warehouse_id: str) -> Any:
        site = self._get("warehouses", warehouse_id, "warehouse_id")
        return {**copy.deepcopy(site), "rate_columns": RATE_COLUMNS}

    @tool("Inventory: hold units of a product at a warehouse for a cart. Returns the hold.",
          {"cart_id": {"type": "string"}, "sku": {"type": "string"}, "warehouse_id": {"type": "string"},
           "quantity": {"type": "integer"}})
    def hold_stock(self, cart_id: str, sku: str, warehouse_id: str, quantity: int) -> Any:
        cart = self._get("carts", cart_id, "cart_id")
        product = self._get("products", sku, "sku")
        wh = self._get("warehouses", warehouse_id, "warehouse_id")["warehouse_id"]
        if not 1 <= quantity <= 999:
            raise ToolError("quantity must be between 1 and 999")
        shelf = self.state["stock"][product["sku"]][wh]
        available = shelf["on_hand"] - shelf["reserved"]
        if quantity > available:
            raise ToolError(f"{wh} has {available} available unit(s) of {product['sku']}")
        shelf["reserved"] += quantity
        hold_id = self._new_id("hold", "H")
        hold = {"hold_id": hold_id, "cart_id": cart["cart_id"], "sku": product["sku"], "warehouse_id": wh,
                "quantity": quantity}
        self.state["holds"][hold_id] = hold
        return {**hold, "status": "held"}

    @tool("Inventory: release a hold that no order uses.", {"hold_id": {"type": "string"}})
    def release_hold(self, hold_id: str) -> Any:
        hold = self._get("holds", hold_id, "hold_id")
        status = _hold_status(self.state, hold["hold_id"])
        if status != "held":
            raise ToolError(f"hold {hold['hold_id']} is {status}")
        self.state["stock"][hold["sku"]][hold["warehouse_id"]]["reserved"] -= hold["quantity"]
        self.state["released"][hold["hold_id"]] = True
        return {"hold_id": hold["hold_id"], "status": "released"}

    @tool("Shipping: quote one shipment of held units from their warehouse to an address: cost and arrival date.",
          {"warehouse_id": {"type": "string"}, "address_id": {"type": "string"}, "hold_ids": HOLD_IDS})
    def quote_shipment(self, warehouse_id: str, address_id: str, hold_ids: list[str]) -> Any:
        site = self._get("warehouses", warehouse_id, "warehouse_id")
        address = self._get("addresses", address_id, "address_id")
        holds = self._holds(hold_ids, site["warehouse_id"])
        for hold in holds:
            product = self.state["products"][hold["sku"]]
            if product["hazmat"] and not site["hazmat_certified"]:
                raise ToolError(f"{site['warehouse_id']} is not certified to ship hazmat product {product['sku']}")
        weight = sum(self.state["products"][h["sku"]]["weight_g"] * h["quantity"] for h in holds)
        value = sum(self.state["products"][h["sku"]]["list_price_cents"] * h["quantity"] for h in holds)
        quote_id = self._new_id("quote", "Q")
        quote = {"quote_id": quote_id, "warehouse_id": site["warehouse_id"], "address_id": address["address_id"],
                 "hold_ids": [h["hold_id"] for h in holds], "weight_g": weight, "value_cents": value,
                 "cost_cents": _ship_cost(site, address["zone"], weight, value),
                 "arrives": _arrival(site, address["zone"], self._today).isoformat()}
        self.state["quotes"][quote_id] = quote
        return copy.deepcopy(quote)

    def _holds(self, hold_ids: list[str], wh: str) -> list[dict[str, Any]]:
        if not hold_ids or len(hold_ids) > 20 or len(set(hold_ids)) != len(hold_ids):
            raise ToolError("hold_ids must list 1-20 distinct holds")
        holds = [self._get("holds", h, "hold_id") for h in hold_ids]
        for hold in holds:
            if _hold_status(self.state, hold["hold_id"]) != "held" or hold["warehouse_id"] != wh:
                raise ToolError(f"hold {hold['hold_id']} is not an active hold at {wh}")
        if len({h["cart_id"] for h in holds}) != 1:
            raise ToolError("the holds belong to different carts")
        return holds

    @tool("Orders: place the order of a cart: one quote per shipment, all to one of the customer's addresses. "
          "Returns the order with its shipments and shipping_cents (the charge to the customer).",
          {"cart_id": {"type": "string"}, "address_id": {"type": "string"},
           "quote_ids": {"type": "array", "items": {"type": "string"}}})
    def place_order(self, cart_id: str, address_id: str, quote_ids: list[str]) -> Any:
        cart = self._get("carts", cart_id, "cart_id")
        address = self._get("addresses", address_id, "address_id")["address_id"]
        customer = self.state["customers"][cart["customer_id"]]
        if address not in [a["address_id"] for a in customer["addresses"]]:
            raise ToolError(f"address {address} is not one of {customer['customer_id']}'s addresses")
        placed = [o["order_id"] for o in self.state["orders"].values()
                  if o["cart_id"] == cart["cart_id"] and o["status"] == "placed"]
        if placed:
            raise ToolError(f"cart {cart['cart_id']} already has order {placed[0]}; cancel it first")
        if not 1 <= len(quote_ids) <= MAX_SHIPMENTS or len(set(quote_ids)) != len(quote_ids):
            raise ToolError(f"quote_ids must list 1-{MAX_SHIPMENTS} distinct quotes")
        quotes = [self._get("quotes", q, "quote_id") for q in quote_ids]
        if len({q["warehouse_id"] for q in quotes}) != len(quotes):
            raise ToolError("two quotes from one warehouse: one shipment per warehouse")
        covered = set()
        for quote in quotes:
            holds = [self.state["holds"][h] for h in quote["hold_ids"]]
            if quote["address_id"] != address or any(_hold_status(self.state, h["hold_id"]) != "held" or h["cart_id"] != cart["cart_id"]
                                                      for h in holds):
                raise ToolError(f"quote {quote['quote_id']} is void or not for this cart and address")
            covered |= set(quote["hold_ids"])
        loose = sorted(h["hold_id"] for h in self.state["holds"].values()
                       if h["cart_id"] == cart["cart_id"] and _hold_status(self.state, h["hold_id"]) == "held"
                       and h["hold_id"] not in covered)
        if loose:
            raise ToolError(f"holds {', '.join(loose)} of this cart are in no quote: quote or release them")
        order_id = self._new_id("order", "SO")
        shipments = []
        for quote in quotes:
            lines = []
            for hold_id in quote["hold_ids"]:
                hold = self.state["holds"][hold_id]
                lines.append({"sku": hold["sku"], "quantity": hold["quantity"], "hold_id": hold_id})
            shipments.append({"warehouse_id": quote["warehouse_id"], "quote_id": quote["quote_id"], "lines": lines,
                              "cost_cents": quote["cost_cents"], "arrives": quote["arrives"]})
        handling = self._fee * (len(quotes) - 1)
        order = {"order_id": order_id, "cart_id": cart["cart_id"], "address_id": address, "status": "placed",
                 "shipments": shipments, "handling_cents": handling,
                 "shipping_cents": handling + sum(s["cost_cents"] for s in shipments)}
        self.state["orders"][order_id] = order
        return copy.deepcopy(order)

    @tool("Orders: one order by id.", {"order_id": {"type": "string"}})
    def get_order(self, order_id: str) -> Any:
        return copy.deepcopy(self._get("orders", order_id, "order_id"))

    @tool("Orders: cancel a placed order; its holds are released.", {"order_id": {"type": "string"}})
    def cancel_order(self, order_id: str) -> Any:
        order = self._get("orders", order_id, "order_id")
        if order["status"] != "placed":
            raise ToolError(f"order {order['order_id']} is {order['status']}")
        for shipment in order["shipments"]:
            for line in shipment["lines"]:
                hold = self.state["holds"][line["hold_id"]]
                self.state["stock"][hold["sku"]][hold["warehouse_id"]]["reserved"] -= hold["quantity"]
                self.state["released"][hold["hold_id"]] = True
        order["status"] = "cancelled"
        return {"order_id": order["order_id"], "status": "cancelled"}


ORDER_CHECKS = (
    Check("one_order", "Exactly one order of the cart is placed (not cancelled), to the address the prompt names."),
    Check("products", "The order carries every cart line once in its quantity, a discontinued product replaced by its "
                      "active successor."),
    Check("feasible", "Every line ships whole from one warehouse and every shipment arrives by the cart's delivery "
                      "date."),
    Check("optimal", "The order is right and feasible and its shipping charge is the lowest the rules allow.", 2.0),
    Check("holds", "No stock of the cart is left held outside the order."),
    Check("answer", "The answer names the order and states its shipping charge."),
)


def order_fulfilment(rng: ItemRng) -> AgTask:
    """Fulfil a multi-line cart at the lowest shipping charge across warehouses, holds and rate cards."""
    world = _order_world(rng)
    reference, wasteful = _order_scripts(world)
    return AgTask(_order_prompt(world), lambda: ShopEnv(world), ORDER_CHECKS,
                  lambda env, answer: _check_order(world["plan"], env, answer), reference, wasteful)


def _order_prompt(world: dict[str, Any]) -> str:
    plan = world["plan"]
    return (
        f"You work in order operations at {plan['shop']}. Today is {world['today'].isoformat()}. Fulfil cart "
        f"{plan['cart_id']} of the customer with e-mail {plan['email']}, shipping it to their '{plan['label']}' "
        "address. The shop's fulfilment, shipping and stock-hold rules are in its API documentation (describe_api). "
        "Of the plans the rules allow, choose the one with the lowest shipping charge to the customer. Place exactly "
        "one order, and leave no stock held for the cart outside it.\n\n"
        "When you are done, call submit with the order id and the order's shipping charge."
    )


def _check_order(plan: dict[str, Any], env: Environment, answer: str | None) -> dict[str, bool]:
    state = env.state
    placed = [o for o in state["orders"].values() if o["cart_id"] == plan["cart_id"] and o["status"] == "placed"]
    order = placed[0] if len(placed) == 1 else None
    lines: dict[str, int] = {}
    shipped = []
    for shipment in order["shipments"] if order else []:
        for line in shipment["lines"]:
            lines[line["sku"]] = lines.get(line["sku"], 0) + line["quantity"]
            shipped.append(line["sku"])
    products = order is not None and lines == {s: plan["quantity"][s] for s in plan["final"]}
    feasible = order is not None and len(shipped) == len(set(shipped)) and all(
        s["arrives"] <= plan["deliver_by"] for s in order["shipments"])  # whole lines, each arriving in time
    return {
        "one_order": order is not None and order["address_id"] == plan["address_id"],
        "products": products,
        "feasible": feasible,
        "optimal": products and feasible and order["shipping_cents"] == plan["optimum"],
        "holds": order is not None and not any(h["cart_id"] == plan["cart_id"] and
                                               _hold_status(state, h["hold_id"]) == "held"
                                               for h in state["holds"].values()),
        "answer": order is not None and mentions(answer or "", order["order_id"], ALNUM)
                  and order["shipping_cents"] in cents_in(answer or ""),
    }


def _order_scripts(world: dict[str, Any]) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one with repeated reads and a hold placed then released."""
    plan, state = world["plan"], world["state"]
    cart = plan["cart_id"]
    docs = tuple(Call("describe_api", {"topic": t}) for t in ORDER_DOCS)
    products = tuple(Call("get_product", {"sku": s}) for s in [*plan["requested"], *plan["chain"][1:]])
    sites = (Call("list_warehouses", {"page": 1}), Call("list_warehouses", {"page": 2}),
             *[Call("get_warehouse", {"warehouse_id": wh}) for wh in state["warehouses"]])
    reads = (*docs, Call("find_customer", {"email": plan["email"]}),
             Call("get_address", {"address_id": plan["address_id"]}), Call("get_cart", {"cart_id": cart}),
             *products, *sites, *[Call("get_stock", {"sku": s}) for s in plan["final"]])
    hold_of = {sku: f"H-{world['first_hold'] + n}" for n, sku in enumerate(plan["final"])}
    holds = tuple(Call("hold_stock", {"cart_id": cart, "sku": s, "warehouse_id": plan["assignment"][s],
                                      "quantity": plan["quantity"][s]}) for s in plan["final"])
    quotes = tuple(Call("quote_shipment", {"warehouse_id": wh, "address_id": plan["address_id"],
                                           "hold_ids": [hold_of[s] for s in skus]})
                   for wh, skus in plan["shipments"].items())
    quote_ids = [f"Q-{world['first_quote'] + n}" for n in range(len(quotes))]
    place = Call("place_order", {"cart_id": cart, "address_id": plan["address_id"], "quote_ids": quote_ids})
    charge = plan["optimum"]
    submit = Call("submit", {"answer": f"Order SO-{world['first_order']} placed; shipping charge {dollars(charge)}."})
    reference = (*reads, *holds, *quotes, place, submit)
    sku, other = next((s, wh) for s in plan["final"] for wh in state["warehouses"] if wh != plan["assignment"][s]
                      and state["stock"][s][wh]["on_hand"] > state["stock"][s][wh]["reserved"])
    detour = (Call("hold_stock", {"cart_id": cart, "sku": sku, "warehouse_id": other, "quantity": 1}),
              Call("release_hold", {"hold_id": f"H-{world['first_hold'] + len(plan['final'])}"}))
    wasteful = (*reads[:5], reads[5], *reads[5:], reads[-1], *holds, *detour, *quotes, place, submit)
    return reference, wasteful


# ---------------------------------------------------------------- task 2: access provisioning (least privilege)

COMPANIES = ["Tessellate Labs", "Brightwater Analytics", "Okapi Systems", "Meridian Freight", "Juniper Health",
             "Polaris Robotics"]
DEPARTMENTS = ["Platform Engineering", "Data Platform", "Finance Operations", "Customer Support",
               "Security Engineering", "Growth Analytics", "Site Reliability"]
STAFF_FIRST = ["Aaron", "Bianca", "Carlos", "Dana", "Elena", "Felix", "Grace", "Hannah", "Ivan", "Julia", "Kevin",
               "Laura", "Marco", "Nadia", "Oscar", "Priya", "Quentin", "Rita", "Samuel", "Tara", "Umar", "Vera",
               "Walter", "Wanda", "Xavier", "Yara", "Zach", "Bella", "Lucas", "Mina", "Nora", "Eli", "Gina", "Rafael",
               "Sofia", "Tomas", "Ken", "Jonas"]
STAFF_LAST = ["Kim", "Patel", "Schmidt", "Rossi", "Tanaka", "Ward", "Nguyen", "Fischer", "Costa", "Byrne",
              "Mendes", "Holm", "Singh", "Lopez", "Keller", "Dubois", "Yilmaz", "Sato"]
RESOURCES = ["git:payments-api", "git:web-app", "git:infra", "ci:pipelines", "db:analytics", "db:orders",
             "dash:finance", "vault:shared", "pager:oncall", "crm:accounts", "tickets:support", "flags:web",
             "billing:console", "logs:prod", "k8s:staging", "k8s:prod"]
ACTIONS = ["read", "write", "deploy", "admin"]
GROUP_WORDS = ["payments", "web", "infra", "pipelines", "analytics", "orders", "finance", "vault", "oncall", "crm",
               "support", "flags", "billing", "logs", "staging", "prod", "core", "platform", "data", "release"]
GROUP_SUFFIXES = ["readers", "devs", "ops", "team", "leads", "ext", "rw", "ro", "deployers", "analysts", "bundle",
                  "access"]
GROUP_PAGE = 6
MAX_SET = 6  # the largest group set the optimiser considers

ACCESS_DOCS = {
    "groups": (
        "Groups. A member of a group holds the group's effective permissions: its own `permissions` plus the "
        "effective permissions of every group in its `includes` (followed recursively; members of a group are not "
        "members of the groups it includes). `requires` lists groups an account must already be a member of before "
        "it can join; those memberships grant their own permissions too. A retired group cannot be joined "
        "(replaced_by names its successor, a separate group with its own permissions). employees_only groups are "
        "for employees, never for contractors."),
    "permissions": (
        "Permissions are written resource:action, e.g. db:orders:read. The actions are read, write, deploy and "
        "admin, and each is a separate permission. A permission whose action is * (e.g. git:web-app:*) grants every "
        "action on that resource, so it is broader than any one of them. An account's effective permissions are the "
        "union over all its memberships."),
    "approvals": (
        "Approvals. Joining a group with approval_required needs an approved access request for that account and "
        "group. request_approval asks an approver: the group's owner, or the owner's delegate while the owner is out "
        "of office (get_account shows out_of_office and delegate). A request to anyone else is rejected; a request "
        "to an owner who is out of office stays pending. Removing a membership needs no approval."),
    "accounts": (
        "Accounts. update_account changes department, manager (a username) and expires (YYYY-MM-DD, or an empty "
        "string for none). search_accounts matches usernames by prefix, display names by substring and employee "
        "ids exactly."),
}


def _effective(groups: dict[str, dict[str, Any]], gid: str) -> frozenset[str]:
    """A group's effective permissions: its own and, recursively, its included groups'."""
    found = set(groups[gid]["permissions"])
    for inner in groups[gid]["includes"]:
        found |= _effective(groups, inner)
    return frozenset(found)


def _least_sets(groups: dict[str, dict[str, Any]], needed: frozenset[str], contractor: bool,
                current: set[str]) -> tuple[int, list[frozenset[str]]]:
    """The optimal group sets: exactly `needed`, closed under requires, fewest groups, then most kept memberships."""
    def usable(gid: str, seen: tuple[str, ...] = ()) -> bool:
        group = groups[gid]
        return (group["status"] == "active" and not (contractor and group["employees_only"])
                and _effective(groups, gid) <= needed and all(usable(r) for r in group["requires"]))

    candidates = sorted(g for g in groups if usable(g))
    for size in range(1, MAX_SET + 1):
        found = []
        for combo in itertools.combinations(candidates, size):
            chosen = set(combo)
            if any(r not in chosen for g in combo for r in groups[g]["requires"]):
                continue
            if frozenset().union(*(_effective(groups, g) for g in combo)) == needed:
                found.append(frozenset(combo))
        if found:
            kept = max(len(f & current) for f in found)
            return size, [f for f in found if len(f & current) == kept]
    return 0, []


def _group_ids(rng: ItemRng, n: int) -> list[str]:
    """n distinct group ids whose names say nothing reliable about their permissions."""
    ids: list[str] = []
    while len(ids) < n:
        gid = f"grp-{rng.choice(GROUP_WORDS)}-{rng.choice(GROUP_SUFFIXES)}"
        if gid not in ids:
            ids.append(gid)
    return ids


def _access_groups(rng: ItemRng, needed: list[str], extras: list[str], resources: list[str]
                   ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The group catalogue: an optimal partition of the needed permissions (one via an include, one behind a
    prerequisite), smaller building blocks, over-granting look-alikes (nested, wildcard, prerequisite, retired,
    employees-only) and noise; returns the groups and the account's current memberships."""
    ids = iter(_group_ids(rng, 32))
    groups: dict[str, dict[str, Any]] = {}

    def add(perms: list[str], includes: list[str] | None = None, requires: list[str] | None = None,
            **extra: Any) -> str:
        gid = next(ids)
        groups[gid] = {"group_id": gid, "permissions": sorted(perms), "includes": includes or [],
                       "requires": requires or [], "status": "active", "replaced_by": None,
                       "employees_only": False, "approval_required": False, **extra}
        return gid

    shuffled = list(needed)
    rng.shuffle(shuffled)
    sizes = rng.choice([[3, 2, 2], [2, 2, 2, 1], [3, 3, 1], [2, 3, 2], [2, 2, 3]])
    blocks, start = [], 0
    for size in sizes:
        blocks.append(shuffled[start:start + size])
        start += size
    first = add(blocks[0])
    add(blocks[1], requires=[first])
    nested, helper = blocks[2], None
    if len(nested) >= 2:
        helper = add(nested[1:])
        add(nested[:1], includes=[helper])
    else:
        add(nested)
    for block in blocks[3:]:
        add(block)
    singles = [add([p]) for p in rng.sample(needed, 4)]
    for _ in range(2):
        add(rng.sample(needed, 2))
    leak = add([extras[0]])
    add(rng.sample(needed, 3), includes=[leak])
    wild = next(r for r in resources if any(p.startswith(r + ":") for p in needed))
    add([f"{wild}:*", rng.choice(needed)])
    gate = add([extras[1]])
    add(rng.sample(needed, 4), requires=[gate])
    pair = blocks[0] + blocks[1]
    successor = add(pair + [extras[2]])
    add(pair, status="retired", replaced_by=successor)
    if helper:  # employees' best group, which holds part of its grant through an include
        add(blocks[1] + nested[:1], includes=[helper], employees_only=True)
    else:
        add(blocks[1] + nested, employees_only=True)
    noise = [add(rng.sample(extras[3:], rng.randint(1, 2))) for _ in range(4)]
    for _ in range(3):  # team bundles that over-grant in plain sight
        add(rng.sample(needed, 2) + [rng.choice(extras[3:])])
    current = [first, noise[0], singles[0]]
    if rng.randint(0, 1):  # a current membership as good as a block: the kept-memberships rule decides
        current.append(add(blocks[1]))
    order = list(groups)
    rng.shuffle(order)
    return {g: groups[g] for g in order}, current


def _access_world(rng: ItemRng) -> dict[str, Any]:
    """A seeded directory around one mover whose least-privilege group set is unique; other draws are redrawn."""
    while True:
        world = _draft_access(rng)
        if world is not None:
            return world


def _person(rng: ItemRng, taken: set[str], first: str | None = None, last: str | None = None) -> tuple[str, str, str]:
    """A free username and the person's first and last name."""
    first, last = first or rng.choice(STAFF_FIRST), last or rng.choice(STAFF_LAST)
    base, n = (first[0] + last).lower(), 1
    while (base if n == 1 else f"{base}{n}") in taken:
        n += 1
    return (base if n == 1 else f"{base}{n}"), first, last


def _draft_access(rng: ItemRng) -> dict[str, Any] | None:
    """One draw of the directory and group catalogue, or None when the optimum is tied or the traps do not tempt."""
    resources = rng.sample(RESOURCES, 8)
    needed = rng.sample([f"{r}:{a}" for r in resources[:5] for a in ACTIONS], 7)
    extras = [f"{r}:{a}" for r in resources for a in ACTIONS if f"{r}:{a}" not in needed]
    rng.shuffle(extras)
    groups, current = _access_groups(rng, needed, extras, resources)
    contractor = rng.randint(0, 1) == 1
    size, best = _least_sets(groups, frozenset(needed), contractor, set(current))
    if len(best) != 1 or size < 2 or not best[0] - set(current):
        return None
    loose = {g: frozenset(p for p in needed if p in groups[g]["permissions"]
                          or any(q.endswith(":*") and p.startswith(q[:-1]) for q in groups[g]["permissions"]))
             for g in groups}
    if not any(frozenset(c) != best[0] and frozenset().union(*(loose[g] for g in c)) == frozenset(needed)
               for n in range(1, size + 1) for c in itertools.combinations(sorted(groups), n)):
        return None  # no look-alike makes a set as small: the traps do not tempt
    flat = {g: {**group, "includes": []} for g, group in groups.items()}
    if _least_sets(flat, frozenset(needed), contractor, set(current))[1] == best:
        return None  # reading direct permissions alone would find the optimum: the nested grant does not bite
    return _access_world_from(rng, groups, current, sorted(best[0]), needed, contractor)


def _access_world_from(rng: ItemRng, groups: dict[str, Any], current: list[str], target: list[str],
                       needed: list[str], contractor: bool) -> dict[str, Any]:
    """Accounts, HR records, the role, the ticket and the approvals around a drawn group catalogue."""
    today = date(2026, 1, 5) + timedelta(days=rng.randint(0, 300))
    employee_ids = iter(f"E-{n}" for n in distinct_ints(rng, 10000, 99999, 20))
    accounts: dict[str, Any] = {}
    hr: dict[str, Any] = {}

    def account(first: str | None = None, last: str | None = None, **fields: Any) -> str:
        username, first, last = _person(rng, set(accounts), first, last)
        eid = next(employee_ids)
        accounts[username] = {"username": username, "display_name": f"{first} {last}", "employee_id": eid,
                              "department": rng.choice(DEPARTMENTS), "manager": None, "status": "active",
                              "expires": None, "out_of_office": False, "delegate": None, **fields}
        hr[eid] = {"employee_id": eid, "legal_name": f"{first} {last}", "employment_type": "employee",
                   "contract_end": None, "department": accounts[username]["department"], "role": None,
                   "manager_employee_id": None}
        return username

    staff = [account() for _ in range(10)]
    boss_first, boss_last = rng.choice(STAFF_FIRST), rng.choice(STAFF_LAST)
    bosses = [account(boss_first, boss_last) for _ in range(2)]
    boss = rng.choice(bosses)
    old_department, department = rng.sample(DEPARTMENTS, 2)
    contract_end = (today + timedelta(days=rng.randint(60, 400))).isoformat() if contractor else None
    stale_expiry = (today + timedelta(days=rng.randint(5, 50))).isoformat() if contractor or rng.randint(0, 1) \
        else None
    user = account(department=old_department, manager=rng.choice(staff), expires=stale_expiry)
    role = f"ROLE-{''.join(w[0] for w in department.split())}-{rng.randint(2, 9)}"
    hr[accounts[user]["employee_id"]].update(
        employment_type="contractor" if contractor else "employee", contract_end=contract_end,
        department=department, role=role, manager_employee_id=accounts[boss]["employee_id"])
    owners = iter(rng.sample(staff, len(staff)) * 3)
    for group in groups.values():
        group["owner"] = next(owners)
    approval = [g for g in target if g not in current][:2]
    for gid in approval:
        groups[gid]["approval_required"] = True
    for gid in rng.sample([g for g in groups if g not in target], 3):
        groups[gid]["approval_required"] = True
    away = rng.choice(approval)
    delegate = rng.choice([s for s in staff if s not in {groups[g]["owner"] for g in approval}])
    accounts[groups[away]["owner"]].update(out_of_office=True, delegate=delegate)
    members = {gid: {m: True for m in rng.sample(staff + bosses, rng.randint(1, 4))} for gid in groups}
    for gid in current:
        members[gid][user] = True
    ticket_id = f"IT-{rng.randint(1000, 9999)}"
    ticket_department = department if rng.randint(0, 1) else old_department
    name = accounts[user]["display_name"]
    tickets = {ticket_id: {"ticket_id": ticket_id, "title": f"Role change: {name}", "status": "open",
                           "opened_by": boss, "description": (
                               f"{name} ({user}, HR id {accounts[user]['employee_id']}) moves to {ticket_department} "
                               f"as {role}. Manager: {boss_first} {boss_last}. Please update the account and set up "
                               f"the access of {role}; they also need {needed[6]}.")}}
    state = {"accounts": accounts, "hr": hr, "groups": groups, "members": members, "tickets": tickets,
             "roles": {role: {"role": role, "department": department, "permissions": sorted(needed[:6])}},
             "requests": {}}
    plan = {"company": rng.choice(COMPANIES), "ticket_id": ticket_id, "user": user, "role": role,
            "department": department, "manager": boss, "namesake": next(b for b in bosses if b != boss),
            "expires": contract_end, "contractor": contractor, "needed": sorted(needed), "current": current,
            "target": target, "approval": approval, "owners": {g: groups[g]["owner"] for g in approval},
            "approver": {g: delegate if groups[g]["owner"] == groups[away]["owner"] else groups[g]["owner"]
                         for g in approval}}
    return {"state": state, "today": today, "first_request": rng.randint(100, 899), "plan": plan}


class DirectoryEnv(Environment):
    """Mock IT services: tickets, HR records, the account directory, roles, groups and access requests."""

    def __init__(self, world: dict[str, Any]):
        super().__init__()
        self.state = copy.deepcopy(world["state"])
        self._today: date = world["today"]
        self._next_request: int = world["first_request"]

    def _account(self, username: str) -> dict[str, Any]:
        account = self.state["accounts"].get(_text(username, "username").lower())
        if account is None:
            raise ToolError(f"no account '{username}'")
        return account

    def _group(self, group_id: str) -> dict[str, Any]:
        group = self.state["groups"].get(_text(group_id, "group_id").lower())
        if group is None:
            raise ToolError(f"no group '{group_id}'")
        return group

    def _date(self, value: str) -> str:
        try:
            day = date.fromisoformat(_text(value, "expires"))
        except ValueError:
            raise ToolError("expires must be a date YYYY-MM-DD") from None
        if day <= self._today:
            raise ToolError(f"expires must be after today ({self._today.isoformat()})")
        return day.isoformat()

    @tool("Documentation of the access services. Topics: 'groups' (how memberships grant permissions), "
          "'permissions', 'approvals', 'accounts'.", {"topic": {"type": "string", "enum": list(ACCESS_DOCS)}})
    def describe_api(self, topic: str) -> Any:
        return {"topic": topic, "text": ACCESS_DOCS[topic]}

    @tool("Ticketing: read one ticket.", {"ticket_id": {"type": "string"}})
    def get_ticket(self, ticket_id: str) -> Any:
        ticket = self.state["tickets"].get(_text(ticket_id, "ticket_id").upper())
        if ticket is None:
            raise ToolError(f"no ticket '{ticket_id}'")
        return copy.deepcopy(ticket)

    @tool("HR system: one person's record by employee id.", {"employee_id": {"type": "string"}})
    def get_hr_record(self, employee_id: str) -> Any:
        record = self.state["hr"].get(_text(employee_id, "employee_id").upper())
        if record is None:
            raise ToolError(f"no HR record for '{employee_id}'")
        return copy.deepcopy(record)

    @tool("Directory: search accounts (see describe_api 'accounts'); up to 10 summaries.", {"query": {"type": "string"}})
    def search_accounts(self, query: str) -> Any:
        wanted = _text(query, "query").lower()
        hits = [a for a in self.state["accounts"].values() if a["username"].startswith(wanted)
                or wanted in a["display_name"].lower() or a["employee_id"].lower() == wanted]
        return [{k: a[k] for k in ("username", "display_name", "employee_id", "department")}
                for a in sorted(hits, key=lambda a: a["username"])[:10]]

    @tool("Directory: one account in full, with the groups it is a member of.", {"username": {"type": "string"}})
    def get_account(self, username: str) -> Any:
        account = self._account(username)
        groups = sorted(g for g, m in self.state["members"].items() if account["username"] in m)
        return {**copy.deepcopy(account), "groups": groups}

    @tool("Directory: change an account's department, manager or expires; give only the fields to change.",
          {"username": {"type": "string"}, "department": {"type": "string"}, "manager": {"type": "string"},
           "expires": {"type": "string"}}, required=["username"])
    def update_account(self, username: str, department: str | None = None, manager: str | None = None,
                       expires: str | None = None) -> Any:
        account = self._account(username)
        changes: dict[str, Any] = {}
        if department is not None:
            if department not in DEPARTMENTS:
                raise ToolError(f"unknown department '{department}' (departments: {', '.join(DEPARTMENTS)})")
            changes["department"] = department
        if manager is not None:
            changes["manager"] = self._account(manager)["username"]
        if expires is not None:
            changes["expires"] = None if not expires.strip() else self._date(expires)
        if not changes:
            raise ToolError("nothing to change")
        account.update(changes)
        return copy.deepcopy(account)

    @tool("Access: a role's profile: the permissions its holders need.", {"role": {"type": "string"}})
    def get_role(self, role: str) -> Any:
        profile = self.state["roles"].get(_text(role, "role").upper())
        if profile is None:
            raise ToolError(f"no role '{role}'")
        return copy.deepcopy(profile)

    @tool("Access: one page of the group catalogue (id and status).", {"page": {"type": "integer"}})
    def list_groups(self, page: int) -> Any:
        rows = [{"group_id": g["group_id"], "status": g["status"]} for g in self.state["groups"].values()]
        listing = _paged(rows, page, GROUP_PAGE)
        return {"page": listing["page"], "pages": listing["pages"], "groups": listing["rows"]}

    @tool("Access: one group in full.", {"group_id": {"type": "string"}})
    def get_group(self, group_id: str) -> Any:
        group = self._group(group_id)
        return {**copy.deepcopy(group), "member_count": len(self.state["members"][group["group_id"]])}

    @tool("Access: ask an approver to approve adding an account to a group; the request cites a ticket.",
          {"group_id": {"type": "string"}, "username": {"type": "string"}, "approver": {"type": "string"},
           "ticket_id": {"type": "string"}})
    def request_approval(self, group_id: str, username: str, approver: str, ticket_id: str) -> Any:
        group, account, approving = self._group(group_id), self._account(username), self._account(approver)
        if not group["approval_required"] or group["status"] != "active":
            raise ToolError(f"{group['group_id']} does not take access requests")
        owner = self.state["accounts"][group["owner"]]
        if approving["username"] == owner["username"]:
            status = "pending" if owner["out_of_office"] else "approved"
        elif owner["out_of_office"] and approving["username"] == owner["delegate"]:
            status = "approved"
        else:
            status = "rejected"
        request_id = f"AR-{self._next_request}"
        self._next_request += 1
        request = {"request_id": request_id, "group_id": group["group_id"], "username": account["username"],
                   "approver": approving["username"], "ticket_id": _text(ticket_id, "ticket_id").upper(),
                   "status": status}
        self.state["requests"][request_id] = request
        return copy.deepcopy(request)

    @tool("Access: add an account to a group.", {"group_id": {"type": "string"}, "username": {"type": "string"}})
    def add_to_group(self, group_id: str, username: str) -> Any:
        group, account = self._group(group_id), self._account(username)
        gid, name = group["group_id"], account["username"]
        if group["status"] != "active":
            raise ToolError(f"{gid} is retired")
        if name in self.state["members"][gid]:
            raise ToolError(f"'{name}' is already in {gid}")
        missing = [g for g in group["requires"] if name not in self.state["members"][g]]
        if missing:
            raise ToolError(f"'{name}' must first be in {', '.join(missing)}")
        if group["approval_required"] and not any(
                r["group_id"] == gid and r["username"] == name and r["status"] == "approved"
                for r in self.state["requests"].values()):
            raise ToolError(f"{gid} needs an approved access request for '{name}'")
        self.state["members"][gid][name] = True
        return {"group_id": gid, "username": name, "member": True}

    @tool("Access: remove an account from a group.", {"group_id": {"type": "string"}, "username": {"type": "string"}})
    def remove_from_group(self, group_id: str, username: str) -> Any:
        group, account = self._group(group_id), self._account(username)
        if account["username"] not in self.state["members"][group["group_id"]]:
            raise ToolError(f"'{account['username']}' is not in {group['group_id']}")
        del self.state["members"][group["group_id"]][account["username"]]
        return {"group_id": group["group_id"], "username": account["username"], "member": False}


ACCESS_CHECKS = (
    Check("others_untouched", "No other account, membership or approval of anyone else was changed.", guard=True),
    Check("account_fields", "The account's department, manager and expiry follow HR and the policy."),
    Check("permissions_exact", "The account's effective permissions are exactly the role's plus the ticket's extra."),
    Check("least_groups", "The account is in exactly the policy's optimal group set: fewest groups, then most kept "
                          "memberships, no employees-only group for a contractor.", 2.0),
    Check("approvals", "Every approval group joined has an approved request from the right approver citing the ticket."),
    Check("answer", "The answer lists the account's final groups."),
)


def access_provisioning(rng: ItemRng) -> AgTask:
    """Move an account to a new role with a least-privilege group set across HR, directory and access services."""
    world = _access_world(rng)
    reference, wasteful = _access_scripts(world)
    return AgTask(_access_prompt(world), lambda: DirectoryEnv(world), ACCESS_CHECKS,
                  lambda env, answer: _check_access(world, env, answer), reference, wasteful)


def _access_prompt(world: dict[str, Any]) -> str:
    plan = world["plan"]
    return (
        f"You are the IT access administrator at {plan['company']}. Today is {world['today'].isoformat()}. Work "
        f"ticket {plan['ticket_id']}. The HR record is the source of truth for the person's department, manager, "
        "employment type and contract end.\n\n"
        "Policy:\n"
        "1. Set the account's department and manager (the manager's username) from HR. A contractor's account "
        "expires on the contract end date; an employee's account has no expiry.\n"
        "2. After your changes the account's effective permissions must be exactly the new role's permissions plus "
        "any extra permission the ticket asks for: nothing missing and nothing more. Groups for employees only are "
        "never given to contractors. Use as few groups as possible; among equally small sets, keep as many of the "
        "account's current memberships as possible. Remove every membership the final set does not need.\n"
        "3. Joining a group that needs approval needs an approved access request citing the ticket, from the "
        "group's owner, or from the owner's delegate while the owner is out of office.\n"
        "The access services are documented in describe_api. Change nothing else.\n\n"
        "When you are done, call submit with the account's final list of groups."
    )


def _check_access(world: dict[str, Any], env: Environment, answer: str | None) -> dict[str, bool]:
    plan, initial, state = world["plan"], world["state"], env.state
    user = plan["user"]
    others = [n for n in initial["accounts"] if n != user]
    untouched = all(state["accounts"].get(n) == initial["accounts"][n] for n in others) and all(
        {m for m in state["members"][g] if m != user} == set(initial["members"][g]) - {user}
        for g in initial["members"]) and all(r["username"] == user for r in state["requests"].values())
    account = state["accounts"][user]
    groups = sorted(g for g, m in state["members"].items() if user in m)
    held = frozenset().union(*(_effective(state["groups"], g) for g in groups)) if groups else frozenset()
    approved = [r for r in state["requests"].values() if r["username"] == user and r["status"] == "approved"]
    return {
        "others_untouched": untouched,
        "account_fields": account["department"] == plan["department"] and account["manager"] == plan["manager"]
                          and account["expires"] == plan["expires"],
        "permissions_exact": held == frozenset(plan["needed"]),
        "least_groups": groups == plan["target"],
        "approvals": groups == plan["target"] and all(
            any(r["group_id"] == g and r["approver"] == plan["approver"][g] and r["ticket_id"] == plan["ticket_id"]
                for r in approved) for g in plan["approval"]),
        "answer": all(mentions(answer or "", g) for g in plan["target"]),
    }


def _join_order(groups: dict[str, Any], wanted: list[str], current: list[str]) -> list[str]:
    """The groups to join, each after the groups it requires."""
    done, order = set(current), []
    while len(order) < len([g for g in wanted if g not in current]):
        for gid in wanted:
            if gid not in done and all(r in done for r in groups[gid]["requires"]):
                order.append(gid)
                done.add(gid)
    return order


def _access_scripts(world: dict[str, Any]) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one with repeated reads and a manager set wrong then fixed."""
    plan, state = world["plan"], world["state"]
    user, ticket = plan["user"], plan["ticket_id"]
    pages = -(-len(state["groups"]) // GROUP_PAGE)
    reads = (Call("get_ticket", {"ticket_id": ticket}),
             Call("get_hr_record", {"employee_id": state["accounts"][user]["employee_id"]}),
             Call("get_account", {"username": user}),
             Call("search_accounts", {"query": state["accounts"][plan["manager"]]["employee_id"]}),
             *[Call("describe_api", {"topic": t}) for t in ACCESS_DOCS], Call("get_role", {"role": plan["role"]}),
             *[Call("list_groups", {"page": p}) for p in range(1, pages + 1)],
             *[Call("get_group", {"group_id": g}) for g, group in state["groups"].items()
               if group["status"] == "active"],
             *[Call("get_account", {"username": o}) for o in dict.fromkeys(plan["owners"][g] for g in plan["approval"])])
    fields = {"username": user, "department": plan["department"], "manager": plan["manager"],
              "expires": plan["expires"] or ""}
    if plan["expires"] is None and state["accounts"][user]["expires"] is None:
        del fields["expires"]
    approvals = tuple(Call("request_approval", {"group_id": g, "username": user, "approver": plan["approver"][g],
                                                "ticket_id": ticket}) for g in plan["approval"])
    removals = tuple(Call("remove_from_group", {"group_id": g, "username": user})
                     for g in plan["current"] if g not in plan["target"])
    joins = tuple(Call("add_to_group", {"group_id": g, "username": user})
                  for g in _join_order(state["groups"], plan["target"], plan["current"]))
    submit = Call("submit", {"answer": "Final groups: " + ", ".join(plan["target"])})
    reference = (*reads, Call("update_account", fields), *approvals, *removals, *joins, submit)
    wasteful = (reads[0], reads[0], *reads[1:3], reads[2], *reads[3:],
                Call("update_account", {**fields, "manager": plan["namesake"]}),
                Call("update_account", {"username": user, "manager": plan["manager"]}),
                *approvals, *removals, *joins, submit)
    return reference, wasteful
