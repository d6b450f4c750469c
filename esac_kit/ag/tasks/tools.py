"""Tool orchestration (ESAC-AG 2.0): long workflows over several mock services whose ids and rules are found only by
exploring (paged listings, detail views, a describe_api tool), where early actions constrain later ones (stock holds,
approvals that gate joins), and whose goal includes an optimum that the checks compare with the generator's own."""

from __future__ import annotations

import copy
import itertools
import re
import unicodedata
from datetime import date, timedelta
from typing import Any

from esac_kit.ag.answers import ALNUM, cents_in, distinct_ints, dollars, mentions
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng


# ---------------------------------------------------------------- shared helpers


def _text(value: Any, what: str) -> str:
    """A stripped, non-empty, reasonably short identifier or refuse it."""
    cleaned = value.strip()
    if not cleaned:
        raise ToolError(f"{what} is empty")
    if len(cleaned) > 200:
        raise ToolError(f"{what} is too long")
    return cleaned


def _paged(rows: list[Any], page: int, size: int) -> dict[str, Any]:
    """One page of a listing (pages count from 1)."""
    pages = max(1, -(-len(rows) // size))
    if not 1 <= page <= pages:
        raise ToolError(f"page must be between 1 and {pages}")
    return {"page": page, "pages": pages, "rows": rows[(page - 1) * size:page * size]}


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
             "warehouses": warehouses, "holds": {}, "quotes": {}, "orders": {}}
    return {"state": state, "today": today, "plan": plan, "first_hold": rng.randint(100, 899),
            "first_quote": rng.randint(1000, 8999), "first_order": rng.randint(10000, 89999)}


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
                "quantity": quantity, "status": "held"}
        self.state["holds"][hold_id] = hold
        return copy.deepcopy(hold)

    @tool("Inventory: release a hold that no order uses.", {"hold_id": {"type": "string"}})
    def release_hold(self, hold_id: str) -> Any:
        hold = self._get("holds", hold_id, "hold_id")
        if hold["status"] != "held":
            raise ToolError(f"hold {hold['hold_id']} is {hold['status']}")
        self.state["stock"][hold["sku"]][hold["warehouse_id"]]["reserved"] -= hold["quantity"]
        hold["status"] = "released"
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
            if hold["status"] != "held" or hold["warehouse_id"] != wh:
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
            if quote["address_id"] != address or any(h["status"] != "held" or h["cart_id"] != cart["cart_id"]
                                                      for h in holds):
                raise ToolError(f"quote {quote['quote_id']} is void or not for this cart and address")
            covered |= set(quote["hold_ids"])
        loose = sorted(h["hold_id"] for h in self.state["holds"].values()
                       if h["cart_id"] == cart["cart_id"] and h["status"] == "held" and h["hold_id"] not in covered)
        if loose:
            raise ToolError(f"holds {', '.join(loose)} of this cart are in no quote: quote or release them")
        order_id = self._new_id("order", "SO")
        shipments = []
        for quote in quotes:
            lines = []
            for hold_id in quote["hold_ids"]:
                hold = self.state["holds"][hold_id]
                hold.update(status="ordered", order_id=order_id)
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
                hold["status"] = "released"
        order["status"] = "cancelled"
        return {"order_id": order["order_id"], "status": "cancelled"}


ORDER_CHECKS = (
    Check("one_order", "Exactly one order of the cart is placed (not cancelled), to the address the prompt names."),
    Check("products", "The order carries every cart line once in its quantity, a discontinued product replaced by its "
                      "active successor."),
    Check("feasible", "Every shipment arrives by the cart's delivery date."),
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
    for shipment in order["shipments"] if order else []:
        for line in shipment["lines"]:
            lines[line["sku"]] = lines.get(line["sku"], 0) + line["quantity"]
    products = order is not None and lines == {s: plan["quantity"][s] for s in plan["final"]}
    feasible = order is not None and all(s["arrives"] <= plan["deliver_by"] for s in order["shipments"])
    return {
        "one_order": order is not None and order["address_id"] == plan["address_id"],
        "products": products,
        "feasible": feasible,
        "optimal": products and feasible and order["shipping_cents"] == plan["optimum"],
        "holds": order is not None and not any(h["cart_id"] == plan["cart_id"] and h["status"] == "held"
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


# ---------------------------------------------------------------- task 2: access provisioning

COMPANIES = ["Tessellate Labs", "Brightwater Analytics", "Okapi Systems", "Meridian Freight", "Juniper Health",
             "Polaris Robotics"]
DEPARTMENTS = ["Platform Engineering", "Data Platform", "Finance Operations", "Customer Support",
               "Security Engineering", "Growth Analytics", "Site Reliability"]
LEGAL_AND_PREFERRED = [("William", "Liam"), ("Elizabeth", "Beth"), ("Margaret", "Greta"), ("Wei", "David"),
                       ("Xiaoling", "Linda"), ("Anastasia", "Stacy"), ("Rebecca", "Becky"), ("Edward", "Ned"),
                       ("Catalina", "Lina"), ("Giuseppe", "Joe"), ("Yevgeny", "Eugene"), ("Robert", "Bob"),
                       ("Émilie", "Millie"), ("Íñigo", "Nico"), ("Takeshi", "Ken"), ("Alejandro", "Sandro")]
HIRE_LAST = ["Núñez", "García-López", "O'Brien", "Müller", "Van Dyke", "Castañeda", "D'Souza", "Brontë",
             "St. Clair", "Pérez", "MacLeod", "Ibáñez", "Lindqvist", "Okafor", "Kowalczyk", "Haddad"]
STAFF_FIRST = ["Aaron", "Bianca", "Carlos", "Dana", "Elena", "Felix", "Grace", "Hannah", "Ivan", "Julia", "Kevin",
               "Laura", "Marco", "Nadia", "Oscar", "Priya", "Quentin", "Rita", "Samuel", "Tara", "Umar", "Vera",
               "Walter", "Wanda", "Xavier", "Yara", "Zach", "Bella", "Lucas", "Mina", "Nora", "Eli", "Gina", "Rafael",
               "Sofia", "Tomas", "Ken", "Jonas"]
STAFF_LAST = ["Kim", "Patel", "Schmidt", "Rossi", "Tanaka", "Ward", "Nguyen", "Fischer", "Costa", "Byrne",
              "Mendes", "Holm", "Singh", "Lopez", "Keller", "Dubois", "Yilmaz", "Sato"]
GROUP_POOL = [("vpn-users", "Remote network access"), ("git-readers", "Read access to source repositories"),
              ("ci-deployers", "Trigger deployments from CI"), ("prod-readonly", "Read-only production consoles"),
              ("warehouse-analysts", "Query the analytics warehouse"), ("ledger-viewers", "View the finance ledger"),
              ("support-desk", "Customer support tooling"), ("oncall-pager", "On-call paging rotation"),
              ("secrets-readers", "Read the shared secrets vault"), ("dashboards-editors", "Edit shared dashboards"),
              ("payroll-viewers", "View payroll reports"), ("crm-users", "Customer relationship system"),
              ("incident-bridge", "Join incident bridges"), ("design-library", "Shared design library"),
              ("feature-flags", "Toggle feature flags"), ("billing-console", "Billing back office")]
USERNAME_PATTERN = re.compile(r"^[a-z]+[0-9]*$")


def _ascii_letters(name: str) -> str:
    """Lower-case a-z only: accents dropped (é -> e), every other character removed."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    return re.sub(r"[^a-z]", "", folded)


def _base_username(first: str, last: str) -> str:
    """First letter of the first name, then the last name, as a-z letters."""
    return _ascii_letters(first)[:1] + _ascii_letters(last)


class _Directory:
    """The accounts and HR records of a drawn company, filled one person at a time."""

    def __init__(self, rng: ItemRng, today: date, employee_ids: list[str]):
        self.rng, self.today, self.employee_ids = rng, today, employee_ids
        self.accounts: dict[str, dict[str, Any]] = {}
        self.people: dict[str, dict[str, Any]] = {}  # HR records

    def add_account(self, username: str, first: str, surname: str, department: str, status: str = "active") -> str:
        """An account and its HR record for an existing employee; returns the username."""
        employee_id = self.employee_ids.pop()
        self.accounts[username] = {"username": username, "display_name": f"{first} {surname}",
                                   "employee_id": employee_id, "department": department, "manager": None,
                                   "status": status, "expires": None, "out_of_office": False, "delegate": None}
        self.people[employee_id] = {
            "employee_id": employee_id, "legal_first_name": first, "legal_last_name": surname,
            "preferred_first_name": None, "employment_type": "employee", "contract_end": None,
            "department": department, "role": None, "manager_employee_id": None,
            "start_date": (self.today - timedelta(days=self.rng.randint(60, 3000))).isoformat()}
        return username

    def free_username(self, first: str, surname: str) -> str:
        """The policy's username for a name: the base, numbered from 2 when taken."""
        base = _base_username(first, surname)
        n = 1
        while (base if n == 1 else f"{base}{n}") in self.accounts:
            n += 1
        return base if n == 1 else f"{base}{n}"


def _access_world(rng: ItemRng) -> dict[str, Any]:
    """A seeded directory, HR system, group catalogue and ticket queue around one new starter."""
    company = rng.choice(COMPANIES)
    today = date(2026, 1, 5) + timedelta(days=rng.randint(0, 300))
    hr_department = rng.choice(DEPARTMENTS)
    ticket_department = hr_department if rng.randint(0, 1) else rng.choice([d for d in DEPARTMENTS
                                                                              if d != hr_department])
    legal_first, preferred = rng.choice(LEGAL_AND_PREFERRED)
    last = rng.choice(HIRE_LAST)
    contractor = rng.randint(0, 9) < 6
    start = today + timedelta(days=rng.randint(3, 20))
    contract_end = (start + timedelta(days=rng.randint(90, 400))).isoformat() if contractor else None
    employee_ids = [f"E-{n}" for n in distinct_ints(rng, 10000, 99999, 40)]
    hire_id = employee_ids.pop()
    directory = _Directory(rng, today, employee_ids)
    base, username = _namesake_accounts(rng, directory, legal_first, last)
    manager_name, managers, manager, staff = _staff_accounts(rng, directory)
    groups, members, roles = _access_groups(rng, directory, staff, managers)
    accounts, people = directory.accounts, directory.people

    role = f"ROLE-{''.join(w[0] for w in hr_department.split())}-{rng.randint(1, 4)}"
    profile = [roles["with_prerequisite"], roles["retired"], roles["with_approval"]]
    rng.shuffle(profile)
    people[hire_id] = {"employee_id": hire_id, "legal_first_name": legal_first, "legal_last_name": last,
                       "preferred_first_name": preferred, "employment_type": "contractor" if contractor else "employee",
                       "contract_end": contract_end, "department": hr_department, "role": role,
                       "manager_employee_id": accounts[manager]["employee_id"], "start_date": start.isoformat()}
    ticket_id = f"IT-{rng.randint(1000, 9999)}"
    extra = roles["extra"]
    description = (f"New starter {preferred} {last} (HR id {hire_id}) joins {ticket_department} on "
                   f"{start.isoformat()} as role {role}. Manager: {manager_name}. Please set up "
                   f"the standard access for {role}. {preferred}'s manager also asked for {extra} "
                   f"({groups[extra]['description'].lower()}).")
    tickets = {ticket_id: {"ticket_id": ticket_id, "title": f"Onboarding: {preferred} {last}", "status": "open",
                           "opened_by": manager, "description": description}}

    expected_groups = [roles["prerequisite"], roles["with_prerequisite"], roles["successor"],
                       roles["with_approval"]] + ([] if contractor else [extra])
    state = {"accounts": accounts, "hr": people, "groups": groups, "members": members,
             "roles": {role: {"role": role, "department": hr_department, "groups": profile}},
             "tickets": tickets, "requests": {}}
    plan = {"company": company, "ticket_id": ticket_id, "hire_id": hire_id, "base": base, "username": username,
            "department": hr_department, "manager": manager, "namesake": next(m for m in managers if m != manager),
            "contract_end": contract_end, "contractor": contractor, "role": role, "profile": profile,
            "extra": extra, "prerequisite": roles["prerequisite"], "successor": roles["successor"],
            "approval_groups": roles["approval_groups"], "approver": roles["approver"],
            "owners": {g: groups[g]["owner"] for g in roles["approval_groups"]}, "expected_groups": expected_groups}
    return {"state": state, "today": today, "first_request": rng.randint(100, 899), "plan": plan}


def _namesake_accounts(rng: ItemRng, directory: _Directory, legal_first: str, last: str) -> tuple[str, str]:
    """Accounts of namesakes, disabled and active, that take the new starter's first usernames; returns the base
    username and the first free one."""
    base = _base_username(legal_first, last)
    taken_numbers = rng.choice([[1], [1, 2], [1, 3], [1, 2, 4], [1, 2, 3]])
    initial = base[0]
    namesake_firsts = [f for f in STAFF_FIRST if _ascii_letters(f)[0] == initial] or [initial.upper() + "."]
    for n in taken_numbers:
        username = base if n == 1 else f"{base}{n}"
        directory.add_account(username, rng.choice(namesake_firsts), last, rng.choice(DEPARTMENTS),
                              "disabled" if n == 1 or rng.randint(0, 2) == 0 else "active")
    return base, next(f"{base}{n}" if n > 1 else base for n in range(1, 10) if n not in taken_numbers)


def _staff_accounts(rng: ItemRng, directory: _Directory) -> tuple[str, list[str], str, list[str]]:
    """The manager and a namesake of theirs (HR's employee id tells them apart), and ten other staff: returns the
    manager's name, both managers' usernames, the manager's, and the staff's."""
    manager_first, manager_last = rng.choice(STAFF_FIRST), rng.choice(STAFF_LAST)
    managers = []
    for _ in range(2):
        managers.append(directory.add_account(directory.free_username(manager_first, manager_last), manager_first,
                                              manager_last, rng.choice(DEPARTMENTS)))
    manager = rng.choice(managers)
    staff = []
    while len(staff) < 10:
        first, surname = rng.choice(STAFF_FIRST), rng.choice(STAFF_LAST)
        if f"{first} {surname}" == f"{manager_first} {manager_last}":
            continue
        staff.append(directory.add_account(directory.free_username(first, surname), first, surname,
                                           rng.choice(DEPARTMENTS)))
    return f"{manager_first} {manager_last}", managers, manager, staff


def _access_groups(rng: ItemRng, directory: _Directory, staff: list[str], managers: list[str]
                   ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, bool]], dict[str, Any]]:
    """The groups (the role's profile holds one with a prerequisite, a retired one and an approval one; the ticket
    adds an employees-only one; one approval owner is away with a delegate), their members and each group's part."""
    chosen = rng.sample(GROUP_POOL, 7)
    gids = [f"grp-{name}" for name, _ in chosen]
    prerequisite, with_prerequisite, retired, with_approval, extra = gids[:5]
    successor = f"{retired}-v2"
    owners = rng.sample(staff, 8)
    groups: dict[str, dict[str, Any]] = {}
    for (name, description), gid, owner in zip(chosen, gids, owners):
        groups[gid] = {"group_id": gid, "description": description, "owner": owner, "requires": [],
                       "approval_required": False, "employees_only": False, "status": "active", "replaced_by": None}
    groups[with_prerequisite]["requires"] = [prerequisite]
    groups[retired].update(status="retired", replaced_by=successor, approval_required=rng.randint(0, 1) == 1)
    groups[successor] = {"group_id": successor, "description": f"{groups[retired]['description']} (replaces "
                         f"{retired})", "owner": owners[7], "requires": [], "approval_required": True,
                         "employees_only": False, "status": "active", "replaced_by": None}
    groups[with_approval]["approval_required"] = True
    groups[extra]["employees_only"] = True
    approval_groups = [successor, with_approval]
    away = rng.choice(approval_groups)
    away_owner = groups[away]["owner"]
    delegate = rng.choice([s for s in staff if s not in (groups[successor]["owner"], groups[with_approval]["owner"])])
    directory.accounts[away_owner].update(out_of_office=True, delegate=delegate)
    approver = {g: delegate if g == away else groups[g]["owner"] for g in approval_groups}
    members = {gid: {} for gid in groups}
    for gid in members:
        for member in rng.sample(staff + managers, rng.randint(2, 5)):
            members[gid][member] = True
    return groups, members, {"prerequisite": prerequisite, "with_prerequisite": with_prerequisite,
                             "retired": retired, "with_approval": with_approval, "extra": extra,
                             "successor": successor, "approval_groups": approval_groups, "approver": approver}


class DirectoryEnv(Environment):
    """Mock IT services: HR records, the account directory, the group catalogue, access requests and tickets."""

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

    def _date(self, value: str, what: str) -> str:
        try:
            day = date.fromisoformat(_text(value, what))
        except ValueError:
            raise ToolError(f"{what} must be a date YYYY-MM-DD") from None
        if day <= self._today:
            raise ToolError(f"{what} must be after today ({self._today.isoformat()})")
        return day.isoformat()

    def _manager(self, username: str) -> str:
        account = self._account(username)
        if account["status"] != "active":
            raise ToolError(f"manager account '{account['username']}' is not active")
        return account["username"]

    def _department(self, department: str) -> str:
        if department not in DEPARTMENTS:
            raise ToolError(f"unknown department '{department}' (departments: {', '.join(DEPARTMENTS)})")
        return department

    @tool("Ticketing: read one ticket.", {"ticket_id": {"type": "string"}})
    def get_ticket(self, ticket_id: str) -> Any:
        ticket = self.state["tickets"].get(_text(ticket_id, "ticket_id").upper())
        if ticket is None:
            raise ToolError(f"no ticket '{ticket_id}'")
        return copy.deepcopy(ticket)

    @tool("HR system: one person's HR record by employee id: legal and preferred names, employment type "
          "('employee' or 'contractor') and contract end, department, role, manager's employee id and start date.",
          {"employee_id": {"type": "string"}})
    def get_hr_record(self, employee_id: str) -> Any:
        record = self.state["hr"].get(_text(employee_id, "employee_id").upper())
        if record is None:
            raise ToolError(f"no HR record for '{employee_id}'")
        return copy.deepcopy(record)

    @tool("Directory: search accounts. Matches usernames that start with the query, display names that contain it, "
          "or an exact employee id. Returns up to 20 summaries (username, display name, employee id, department, "
          "status); disabled accounts are included.",
          {"query": {"type": "string"}})
    def search_accounts(self, query: str) -> Any:
        wanted = _text(query, "query").lower()
        hits = [a for a in self.state["accounts"].values()
                if a["username"].startswith(wanted) or wanted in a["display_name"].lower()
                or a["employee_id"].lower() == wanted]
        return [{k: a[k] for k in ("username", "display_name", "employee_id", "department", "status")}
                for a in sorted(hits, key=lambda a: a["username"])[:20]]

    @tool("Directory: one account in full, with its manager, expiry, out-of-office status and delegate, and the "
          "groups it belongs to.", {"username": {"type": "string"}})
    def get_account(self, username: str) -> Any:
        account = self._account(username)
        groups = sorted(g for g, m in self.state["members"].items() if account["username"] in m)
        return {**copy.deepcopy(account), "groups": groups}

    @tool("Directory: create the account of an HR employee id that has no account yet. The username must be "
          "lower-case letters optionally followed by digits, and free. manager is the manager's username. expires "
          "(optional, YYYY-MM-DD) disables the account after that day; leave it out for no expiry.",
          {"employee_id": {"type": "string"}, "username": {"type": "string"}, "department": {"type": "string"},
           "manager": {"type": "string"}, "expires": {"type": "string"}},
          required=["employee_id", "username", "department", "manager"])
    def create_account(self, employee_id: str, username: str, department: str, manager: str,
                       expires: str | None = None) -> Any:
        record = self.state["hr"].get(_text(employee_id, "employee_id").upper())
        if record is None:
            raise ToolError(f"no HR record for '{employee_id}'")
        holder = next((a for a in self.state["accounts"].values() if a["employee_id"] == record["employee_id"]), None)
        if holder is not None:
            raise ToolError(f"{record['employee_id']} already has the account '{holder['username']}'")
        name = _text(username, "username")
        if not USERNAME_PATTERN.match(name) or len(name) > 32:
            raise ToolError("username must be lower-case letters a-z optionally followed by digits, at most 32")
        if name in self.state["accounts"]:
            raise ToolError(f"username '{name}' is taken")
        account = {"username": name, "display_name": f"{record['preferred_first_name'] or record['legal_first_name']}"
                                                     f" {record['legal_last_name']}",
                   "employee_id": record["employee_id"], "department": self._department(department),
                   "manager": self._manager(manager), "status": "active",
                   "expires": None if expires is None else self._date(expires, "expires"),
                   "out_of_office": False, "delegate": None}
        self.state["accounts"][name] = account
        return copy.deepcopy(account)

    @tool("Directory: change an account's department, manager (a username) or expiry (YYYY-MM-DD, or an empty "
          "string for no expiry). Give only the fields to change.",
          {"username": {"type": "string"}, "department": {"type": "string"}, "manager": {"type": "string"},
           "expires": {"type": "string"}}, required=["username"])
    def update_account(self, username: str, department: str | None = None, manager: str | None = None,
                       expires: str | None = None) -> Any:
        account = self._account(username)
        changes: dict[str, Any] = {}
        if department is not None:
            changes["department"] = self._department(department)
        if manager is not None:
            changes["manager"] = self._manager(manager)
        if expires is not None:
            changes["expires"] = None if not expires.strip() else self._date(expires, "expires")
        if not changes:
            raise ToolError("nothing to change")
        account.update(changes)
        return copy.deepcopy(account)

    @tool("Access: the access profile of a role: the groups its holders get.", {"role": {"type": "string"}})
    def get_role_profile(self, role: str) -> Any:
        profile = self.state["roles"].get(_text(role, "role").upper())
        if profile is None:
            raise ToolError(f"no role '{role}'")
        return copy.deepcopy(profile)

    @tool("Access: one group: description, owner (a username), the groups it requires its members to be in first, "
          "whether joining needs an approved access request, whether it is for employees only (never "
          "contractors), and status ('active' or 'retired', with replaced_by naming the successor).",
          {"group_id": {"type": "string"}})
    def get_group(self, group_id: str) -> Any:
        group = self._group(group_id)
        return {**copy.deepcopy(group), "member_count": len(self.state["members"][group["group_id"]])}

    @tool("Access: ask an approver to approve adding an account to a group that needs approval. The request cites "
          "the ticket it serves. Only the group's owner may approve, or the owner's delegate while the owner is out "
          "of office. Returns the request with its status: 'approved' at once when the approver may approve and is "
          "at work, 'pending' while the approver is out of office, 'rejected' when the approver may not approve.",
          {"group_id": {"type": "string"}, "username": {"type": "string"}, "approver": {"type": "string"},
           "ticket_id": {"type": "string"}})
    def request_approval(self, group_id: str, username: str, approver: str, ticket_id: str) -> Any:
        group = self._group(group_id)
        account = self._account(username)
        approving = self._account(approver)
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

    @tool("Access: add an account to a group. Refused for a retired group, before the account is in every group "
          "the group requires, and, for a group that needs approval, without an approved access request for this "
          "account and group.",
          {"group_id": {"type": "string"}, "username": {"type": "string"}})
    def add_to_group(self, group_id: str, username: str) -> Any:
        group, account = self._group(group_id), self._account(username)
        gid, name = group["group_id"], account["username"]
        if group["status"] != "active":
            raise ToolError(f"{gid} is retired; its successor is {group['replaced_by']}")
        if account["status"] != "active":
            raise ToolError(f"account '{name}' is {account['status']}")
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
    Check("others_untouched", "No existing account or existing membership was changed.", guard=True),
    Check("account", "Exactly one account for the new starter, with the policy's username."),
    Check("account_fields", "The account's department, manager and expiry follow HR and the policy."),
    Check("groups", "The account is in exactly the profile's groups (successor for the retired one), the "
                    "prerequisite and, for an employee only, the extra group."),
    Check("approvals", "Every approval group has an approved request from the right approver citing the ticket."),
    Check("answer", "The answer names the new username."),
)


def access_provisioning(rng: ItemRng) -> AgTask:
    """Provision a new starter's account and group access across HR, directory, access and ticketing services."""
    world = _access_world(rng)
    reference, wasteful = _access_scripts(world)
    return AgTask(_access_prompt(world), lambda: DirectoryEnv(world), ACCESS_CHECKS,
                  lambda env, answer: _check_access(world, env, answer), reference, wasteful)


def _access_prompt(world: dict[str, Any]) -> str:
    """The ticket to work and the provisioning policy."""
    plan = world["plan"]
    return (
        f"You are the IT access administrator at {plan['company']}. Today is {world['today'].isoformat()}. "
        f"Ticket {plan['ticket_id']} asks you to set up a new starter. Work from the ticket, and treat the HR record "
        "as the source of truth for the person's legal name, department, manager and employment type.\n\n"
        "Provisioning policy:\n"
        "1. Create exactly one directory account. Its username is the first letter of the legal first name "
        "followed by the legal last name, in lower-case letters a-z only (drop accents: é->e, ñ->n, ü->u; remove "
        "spaces, hyphens, apostrophes and dots). If that username is taken by any account, active or disabled, "
        "append the lowest number from 2 upwards that gives a free username.\n"
        "2. Set the account's department and manager (the manager's username) from HR. A contractor's account "
        "expires on the contract end date; an employee's account has no expiry.\n"
        "3. Add the account to every group of the role's access profile and to any extra group the ticket asks "
        "for. A retired group is replaced by its successor. Groups that a group requires are joined first and "
        "are part of the access. Groups for employees only are never given to contractors: skip them.\n"
        "4. A group that needs approval needs an approved access request citing the ticket, from the group's "
        "owner, or from the owner's delegate while the owner is out of office.\n"
        "Change nothing else.\n\n"
        "When you are done, call submit with the new account's username."
    )


def _check_access(world: dict[str, Any], env: Environment, answer: str | None) -> dict[str, bool]:
    """The provisioning checks on the directory and the answer."""
    plan, initial, state = world["plan"], world["state"], env.state
    old = initial["accounts"]
    untouched = all(state["accounts"].get(name) == account for name, account in old.items()) and all(
        {m for m in state["members"][gid] if m in old} == set(members)
        for gid, members in initial["members"].items())
    mine = [a for a in state["accounts"].values() if a["employee_id"] == plan["hire_id"]]
    account = mine[0] if len(mine) == 1 else None
    name = account["username"] if account else None
    requests = [r for r in state["requests"].values() if r["username"] == name and r["status"] == "approved"]
    return {
        "others_untouched": untouched,
        "account": account is not None and name == plan["username"],
        "account_fields": account is not None and account["department"] == plan["department"]
                          and account["manager"] == plan["manager"] and account["expires"] == plan["contract_end"],
        "groups": account is not None and sorted(g for g, m in state["members"].items() if name in m) == sorted(
            plan["expected_groups"]),
        "approvals": account is not None and all(
            any(r["group_id"] == g and r["approver"] == plan["approver"][g] and r["ticket_id"] == plan["ticket_id"]
                for r in requests) for g in plan["approval_groups"]),
        "answer": mentions(answer or "", plan["username"], ALNUM),
    }


def _access_scripts(world: dict[str, Any]) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one with repeated reads and a manager set wrong then fixed."""
    plan = world["plan"]
    user, ticket = plan["username"], plan["ticket_id"]
    hr_manager = world["state"]["accounts"][plan["manager"]]["employee_id"]
    account = {"employee_id": plan["hire_id"], "username": user, "department": plan["department"],
               "manager": plan["manager"]}
    if plan["contract_end"]:
        account["expires"] = plan["contract_end"]
    reads = (Call("get_ticket", {"ticket_id": ticket}), Call("get_hr_record", {"employee_id": plan["hire_id"]}),
             Call("search_accounts", {"query": plan["base"]}), Call("search_accounts", {"query": hr_manager}))
    groups = (Call("get_role_profile", {"role": plan["role"]}),
              *[Call("get_group", {"group_id": g}) for g in [*plan["profile"], plan["extra"]]],
              Call("get_group", {"group_id": plan["prerequisite"]}), Call("get_group", {"group_id": plan["successor"]}),
              *[Call("get_account", {"username": plan["owners"][g]}) for g in plan["approval_groups"]])
    approvals = tuple(Call("request_approval", {"group_id": g, "username": user, "approver": plan["approver"][g],
                                                "ticket_id": ticket}) for g in plan["approval_groups"])
    joins = tuple(Call("add_to_group", {"group_id": g, "username": user}) for g in plan["expected_groups"])
    submit = Call("submit", {"answer": user})
    reference = (*reads, Call("create_account", account), *groups, *approvals, *joins, submit)
    wasteful = (reads[0], reads[0], reads[1], reads[1], *reads[2:],
                Call("create_account", {**account, "manager": plan["namesake"]}),
                Call("update_account", {"username": user, "manager": plan["manager"]}),
                *groups, *approvals, *joins, submit)
    return reference, wasteful
