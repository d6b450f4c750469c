"""Tool orchestration: reach a goal through several mock service APIs whose calls need ids and facts from earlier
calls, with traps (successor products, reserved stock, void promotions, retired groups, namesakes) that only a
careful reading of each result avoids."""

from __future__ import annotations

import copy
import re
import unicodedata
from datetime import date, timedelta
from typing import Any

from esac_kit.ag.answers import ALNUM, cents_in, distinct_ints, dollars, mentions
from esac_kit.ag.env import Environment, ToolError, tool
from esac_kit.ag.task import AgTask, Call, Check
from esac_kit.rng import ItemRng

MAX_QUANTITY = 999
MAX_ITEMS = 20


# ---------------------------------------------------------------- argument checks


def _text(value: Any, what: str) -> str:
    """A stripped, non-empty, reasonably short identifier or refuse it."""
    cleaned = value.strip()
    if not cleaned:
        raise ToolError(f"{what} is empty")
    if len(cleaned) > 200:
        raise ToolError(f"{what} is too long")
    return cleaned


# ---------------------------------------------------------------- task 1: order fulfilment

SHOPS = ["Northwind Home", "Kestrel Supply Co.", "Bramble & Finch", "Harbor Goods", "Larkspur Living",
         "Copperleaf Outfitters"]
WAREHOUSES = [("WH-RNO", "Reno"), ("WH-ATL", "Atlanta"), ("WH-CMH", "Columbus"), ("WH-DFW", "Dallas"),
              ("WH-PDX", "Portland"), ("WH-EWR", "Newark"), ("WH-MCI", "Kansas City")]
CATEGORY_NOUNS = {"Audio": ["Speaker", "Headphones", "Soundbar", "Turntable"],
                  "Kitchen": ["Kettle", "Blender", "Coffee Grinder", "Toaster"],
                  "Office": ["Desk Lamp", "Monitor Arm", "Label Printer", "Shredder"],
                  "Outdoor": ["Lantern", "Camp Stove", "Cooler", "Hammock"],
                  "Home": ["Air Purifier", "Humidifier", "Space Heater", "Robot Vacuum"]}
BRANDS = ["Alder", "Nova", "Summit", "Quill", "Ember", "Tidal", "Cobalt", "Juniper", "Vireo", "Atlas", "Birch",
          "Halcyon"]
CUSTOMER_FIRST = ["Amara", "Bruno", "Chloe", "Dmitri", "Esther", "Farid", "Greta", "Hiro", "Ines", "Jonah", "Keiko",
                  "Lorenzo", "Maya", "Nikhil", "Olga", "Pablo", "Rosa", "Soren", "Tamsin", "Uriel"]
CUSTOMER_LAST = ["Abbott", "Brennan", "Castillo", "Dvorak", "Eriksen", "Fontaine", "Gallagher", "Haddad", "Iwata",
                 "Jensen", "Kowalski", "Lindgren", "Moreau", "Nakamura", "Okoro", "Petrov", "Quintero", "Rasmussen"]
MAIL_DOMAINS = ["example.com", "mailbox.test", "inbox.example", "post.example.org"]
ADDRESS_LABELS = ["home", "office", "studio", "cabin", "workshop", "parents"]
CITIES = ["Boise", "Tucson", "Madison", "Raleigh", "Omaha", "Spokane", "Savannah", "Albany", "Fresno", "Tulsa"]
STREETS = ["Maple Ave", "Harbor St", "Elm Rd", "Cedar Ln", "Ridge Way", "Mill St", "Lake Dr", "Orchard Ct"]
PROMO_WORDS = ["SPRING", "WELCOME", "LOYAL", "BUNDLE", "AUTUMN", "THANKS", "VIP", "HOLIDAY", "FLASH", "SAVE",
               "FRIENDS", "BACK"]
TIER_PERCENT = {"standard": 0, "silver": 5, "gold": 10, "platinum": 15}

ITEMS_SCHEMA = {"type": "array", "description": "Products and quantities, each product listed once.",
                "items": {"type": "object", "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}},
                          "required": ["sku", "quantity"], "additionalProperties": False}}
SHIPMENTS_SCHEMA = {
    "type": "array", "description": "One shipment per warehouse.",
    "items": {"type": "object", "properties": {
        "warehouse_id": {"type": "string"}, "quote_id": {"type": "string", "description": "From quote_shipping."},
        "items": ITEMS_SCHEMA}, "required": ["warehouse_id", "quote_id", "items"], "additionalProperties": False}}


def _unit_price(list_cents: int, tier: str) -> int:
    """The tier-discounted unit price, rounded half up to the cent."""
    return (list_cents * (100 - TIER_PERCENT[tier]) + 50) // 100


def _shipping_cents(rate: list[int], weight_g: int) -> int:
    """Base fee plus a per-kilogram fee for every started kilogram (at least one)."""
    return rate[0] + rate[1] * max(1, -(-weight_g // 1000))


def _promo_outcome(promo: dict[str, Any], tier: str, lines: list[tuple[str, int, int]], today: date
                   ) -> tuple[int, str | None]:
    """A promotion's discount on priced lines (category, quantity, unit price), or 0 and why it does not apply."""
    if today > date.fromisoformat(promo["expires"]):
        return 0, f"expired on {promo['expires']}"
    if tier not in promo["tiers"]:
        return 0, f"not available to {tier} customers"
    subtotal = sum(q * u for _, q, u in lines)
    if subtotal < promo["min_subtotal_cents"]:
        return 0, "merchandise subtotal is below the promotion's minimum"
    if promo["kind"] == "amount":
        return min(promo["amount_cents"], subtotal), None
    base = sum(q * u for category, q, u in lines if promo["category"] in (None, category))
    if base == 0:
        return 0, f"no items in category {promo['category']}"
    return (base * promo["percent"] + 50) // 100, None


def _shop_world(rng: ItemRng) -> dict[str, Any]:
    """A seeded shop whose traps all hold; drafts that miss one are redrawn from the same stream."""
    while True:
        world = _draft_shop_world(rng)
        if world is not None:
            return world


def _draft_shop_world(rng: ItemRng) -> dict[str, Any] | None:
    """One draw of the shop, or None when a trap does not hold (a tie, a cheap alternative, a tiny discount)."""
    today = date(2026, 1, 5) + timedelta(days=rng.randint(0, 330))
    warehouses = rng.sample(WAREHOUSES, 4)
    home, trap_wh, near_wh, far_wh = (w[0] for w in warehouses)
    who = _shop_customers(rng, warehouses)
    catalogue = _shop_catalogue(rng)
    if catalogue is None:
        return None
    products, active, chain = catalogue
    successor = chain[-1]
    final = [active[0], active[1], successor]
    quantity = {sku: rng.randint(1, 4) for sku in final}
    for sku in chain[:-1]:
        quantity[sku] = quantity[successor]
    requested = [active[0], active[1], chain[0]]
    rng.shuffle(requested)
    short = rng.choice(final)  # the one line the serving warehouse cannot fill from available stock
    stock = _shop_stock(rng, products, warehouses, quantity, final, chain, short)
    address_id = who["address_ids"][0]
    rates = _shop_rates(rng, warehouses, who["address_ids"], (near_wh, far_wh))
    short_weight = products[short]["weight_g"] * quantity[short]
    cost = {wh: _shipping_cents(rates[f"{wh}|{address_id}"], short_weight) for wh in (trap_wh, near_wh, far_wh)}
    if not cost[trap_wh] < min(cost[near_wh], cost[far_wh]) or abs(cost[near_wh] - cost[far_wh]) < 50:
        return None
    alternative = near_wh if cost[near_wh] < cost[far_wh] else far_wh
    lines = [(products[s]["category"], quantity[s], _unit_price(products[s]["list_price_cents"], who["tier"]))
             for s in final]
    offer = _shop_promos(rng, today, who["tier"], lines,
                         sum(quantity[s] * products[s]["list_price_cents"] for s in final))
    if offer is None:
        return None
    promos, shown_codes, best, discount = offer

    home_items = [s for s in final if s != short]
    weight = sum(products[s]["weight_g"] * quantity[s] for s in home_items)
    home_shipping = _shipping_cents(rates[f"{home}|{address_id}"], weight)
    total = sum(q * u for _, q, u in lines) - discount + home_shipping + cost[alternative]
    first_quote, first_order = rng.randint(1000, 8999), rng.randint(10000, 89999)
    state = {
        "customers": who["customers"],
        "warehouses": {wh: {"warehouse_id": wh, "city": city} for wh, city in warehouses},
        "products": products, "stock": stock, "promos": promos, "quotes": {}, "orders": {}}
    plan = {
        "shop": rng.choice(SHOPS), "customer_id": who["customer_id"], "customer_name": who["name"],
        "email": who["email"], "label": who["label"], "address_id": address_id, "requested": requested,
        "chain": chain, "final": final, "quantity": quantity, "short": short, "home": home,
        "candidates": sorted([near_wh, far_wh]), "alternative": alternative, "codes": shown_codes, "best": best,
        "discount": discount, "total": total, "warehouse_of": {s: (alternative if s == short else home) for s in final},
        "home_items": home_items}
    return {"state": state, "today": today, "rates": rates, "first_quote": first_quote, "first_order": first_order,
            "plan": plan}


def _shop_customers(rng: ItemRng, warehouses: list[tuple[str, str]]) -> dict[str, Any]:
    """The customer, whose wanted address is not the default, and three others, one a namesake."""
    home = warehouses[0][0]
    first, last = rng.choice(CUSTOMER_FIRST), rng.choice(CUSTOMER_LAST)
    tier = rng.choice(list(TIER_PERCENT))
    customer_id = f"C-{rng.randint(10000, 99999)}"
    email = f"{first.lower()}.{last.lower()}{rng.randint(2, 98)}@{rng.choice(MAIL_DOMAINS)}"
    labels = rng.sample(ADDRESS_LABELS, rng.randint(2, 3))
    address_ids = [f"A-{n}" for n in distinct_ints(rng, 1000, 9999, len(labels))]
    addresses = []
    for index, (label, address_id) in enumerate(zip(labels, address_ids)):
        addresses.append({"address_id": address_id, "label": label, "default": index == 1,
                          "street": f"{rng.randint(10, 9899)} {rng.choice(STREETS)}", "city": rng.choice(CITIES),
                          "serving_warehouse": home if index == 0 else rng.choice([w[0] for w in warehouses])})
    rng.shuffle(addresses)
    customers = {customer_id: {"customer_id": customer_id, "name": f"{first} {last}", "email": email, "tier": tier,
                               "addresses": addresses}}
    for _ in range(3):  # other customers, one a namesake, so lookups must go by email
        other_id = f"C-{rng.randint(10000, 99999)}"
        if other_id in customers:
            continue
        other_first = first if not customers.keys() - {customer_id} else rng.choice(CUSTOMER_FIRST)
        other_last = last if other_first == first else rng.choice(CUSTOMER_LAST)
        customers[other_id] = {"customer_id": other_id, "name": f"{other_first} {other_last}",
                               "email": f"{other_first.lower()}{rng.randint(100, 999)}@{rng.choice(MAIL_DOMAINS)}",
                               "tier": rng.choice(list(TIER_PERCENT)),
                               "addresses": [{"address_id": f"A-{rng.randint(10000, 99999)}", "label": "home",
                                              "default": True, "street": f"{rng.randint(10, 9899)} "
                                              f"{rng.choice(STREETS)}", "city": rng.choice(CITIES),
                                              "serving_warehouse": rng.choice([w[0] for w in warehouses])}]}
    return {"customer_id": customer_id, "name": f"{first} {last}", "email": email, "tier": tier,
            "label": labels[0], "address_ids": address_ids, "customers": customers}


def _shop_catalogue(rng: ItemRng) -> tuple[dict[str, dict[str, Any]], list[str], list[str]] | None:
    """Two active requested products, a discontinued one with a successor chain, and fillers; None on a price tie."""
    chain_length = rng.choice([1, 1, 2])  # discontinued links before the active successor
    categories = rng.sample(list(CATEGORY_NOUNS), 4)
    skus = [f"SKU-{n}" for n in distinct_ints(rng, 10000, 99999, 9)]
    products: dict[str, dict[str, Any]] = {}

    def add(sku: str, category: str, name: str, status: str, replaced_by: str | None, price: int) -> None:
        products[sku] = {"sku": sku, "name": name, "category": category, "list_price_cents": price,
                         "weight_g": rng.randint(3, 60) * 100, "status": status, "replaced_by": replaced_by}

    def price() -> int:
        return rng.randint(15, 260) * 100 - 1

    active = []
    for n in range(2):
        category = categories[n]
        add(skus[n], category, f"{rng.choice(BRANDS)} {rng.choice(CATEGORY_NOUNS[category])} {rng.randint(1, 6)}",
            "active", None, price())
        active.append(skus[n])
    old_category = categories[rng.randint(0, 2)]
    brand, noun, generation = rng.choice(BRANDS), rng.choice(CATEGORY_NOUNS[old_category]), rng.randint(1, 5)
    chain = skus[2:3 + chain_length]  # discontinued..., successor
    old_price = price()
    for position, sku in enumerate(chain):
        is_last = position == len(chain) - 1
        step_price = old_price if position == 0 else max(999, old_price + rng.randint(-40, 60) * 100)
        add(sku, old_category, f"{brand} {noun} {generation + position}", "active" if is_last else "discontinued",
            None if is_last else chain[position + 1], step_price)
    for sku in skus[3 + chain_length:]:
        category = rng.choice(categories)
        add(sku, category, f"{rng.choice(BRANDS)} {rng.choice(CATEGORY_NOUNS[category])} {rng.randint(1, 6)}",
            rng.choice(["active", "active", "discontinued"]), None, price())
    if products[chain[-1]]["list_price_cents"] == products[chain[0]]["list_price_cents"]:
        return None
    return products, active, chain


def _shop_stock(rng: ItemRng, products: dict[str, Any], warehouses: list[tuple[str, str]], quantity: dict[str, int],
                final: list[str], chain: list[str], short: str) -> dict[str, dict[str, dict[str, int]]]:
    """Random stock everywhere, then the traps: reserved units at home, a tempting warehouse whose stock is reserved."""
    home, trap_wh, near_wh, far_wh = (w[0] for w in warehouses)
    stock: dict[str, dict[str, dict[str, int]]] = {}
    for sku in products:
        stock[sku] = {}
        for wh, _ in warehouses:
            on_hand = rng.randint(0, 30)
            stock[sku][wh] = {"on_hand": on_hand, "reserved": rng.randint(0, on_hand // 2)}

    def enough(sku: str, wh: str) -> None:
        q = quantity[sku]
        on_hand = rng.randint(q + 1, q + 30)
        stock[sku][wh] = {"on_hand": on_hand, "reserved": rng.randint(0, on_hand - q)}

    def reserved_away(sku: str, wh: str, extra: int) -> None:
        q = quantity[sku]
        on_hand = rng.randint(q + extra, q + extra + 15)
        stock[sku][wh] = {"on_hand": on_hand, "reserved": on_hand - rng.randint(0, q - 1)}

    for sku in final:
        if sku == short:
            reserved_away(sku, home, 0)
            reserved_away(sku, trap_wh, 20)
            enough(sku, near_wh)
            enough(sku, far_wh)
        else:
            enough(sku, home)
    for sku in chain[:-1]:
        enough(sku, home)  # ordering the discontinued product would go through without complaint
    return stock


def _shop_rates(rng: ItemRng, warehouses: list[tuple[str, str]], address_ids: list[str],
                far: tuple[str, str]) -> dict[str, list[int]]:
    """Shipping rates per (warehouse, address); to the wanted address the tempting warehouse is the cheapest
    alternative."""
    rates: dict[str, list[int]] = {}
    for addr in address_ids:
        for wh, _ in warehouses:
            zone = rng.randint(1, 5)
            rates[f"{wh}|{addr}"] = [300 + 200 * zone + rng.randint(0, 150), 50 + 45 * zone + rng.randint(0, 40)]
    home, trap_wh = warehouses[0][0], warehouses[1][0]
    for wh, zone in ((home, 1), (trap_wh, 2), (far[0], rng.randint(3, 5)), (far[1], rng.randint(3, 5))):
        rates[f"{wh}|{address_ids[0]}"] = [300 + 200 * zone + rng.randint(0, 150),
                                           50 + 45 * zone + rng.randint(0, 40)]
    return rates


def _shop_promos(rng: ItemRng, today: date, tier: str, lines: list[tuple[str, int, int]], list_subtotal: int
                 ) -> tuple[dict[str, dict[str, Any]], list[str], str, int] | None:
    """An expired generous code, a category percentage and a fixed amount whose validity varies, plus decoys:
    (promos, the customer's codes as shown, the best code, its discount), or None when the best barely wins."""
    subtotal = sum(q * u for _, q, u in lines)
    promo_category = rng.choice(lines)[0]
    percent = rng.randint(10, 25)
    category_base = sum(q * u for c, q, u in lines if c == promo_category)
    category_discount = (category_base * percent + 50) // 100
    if category_discount < 800:
        return None
    codes = [f"{word}{rng.randint(10, 40)}" for word in rng.sample(PROMO_WORDS, 3)]
    expired_code, category_code, amount_code = codes
    all_tiers = list(TIER_PERCENT)
    variant = rng.choice(["amount_best", "category_best", "below_minimum", "wrong_tier"])
    minimum = (subtotal * rng.randint(40, 90) // 100) // 1000 * 1000
    tiers = all_tiers
    if variant == "category_best":
        amount = (category_discount - rng.randint(200, category_discount - 500)) // 500 * 500
    else:  # bigger than the category discount: the winner when valid, the temptation when not
        amount = (category_discount + rng.randint(700, 3000)) // 500 * 500
    if variant == "below_minimum":
        if list_subtotal - subtotal >= 1000:  # met on list prices, missed on the tier prices that count
            minimum = (subtotal // 1000 + 1) * 1000
        else:
            minimum = (subtotal // 1000 + rng.randint(1, 8)) * 1000
    if variant == "wrong_tier":
        tiers = [t for t in all_tiers if t != tier]
        tiers = tiers[rng.randint(0, 1):]
    if amount < 500 or amount >= subtotal:
        return None
    promos = {
        expired_code: {"code": expired_code, "kind": "percent", "percent": rng.randint(20, 30), "category": None,
                       "amount_cents": None, "min_subtotal_cents": 0, "tiers": all_tiers,
                       "expires": (today - timedelta(days=rng.randint(1, 12))).isoformat()},
        category_code: {"code": category_code, "kind": "percent", "percent": percent, "category": promo_category,
                        "amount_cents": None, "min_subtotal_cents": 0,
                        "tiers": all_tiers if rng.randint(0, 1) else [t for t in all_tiers if t != "standard" or
                                                                       tier == "standard"],
                        "expires": (today + timedelta(days=rng.randint(3, 60))).isoformat()},
        amount_code: {"code": amount_code, "kind": "amount", "percent": None, "category": None, "amount_cents": amount,
                      "min_subtotal_cents": minimum, "tiers": tiers,
                      "expires": (today + timedelta(days=rng.randint(0, 45))).isoformat()},
    }
    outcomes = {code: _promo_outcome(promos[code], tier, lines, today)[0] for code in codes}
    best = max(codes, key=lambda code: outcomes[code])
    if sorted(outcomes.values())[-1] - sorted(outcomes.values())[-2] < 200:
        return None
    for code in rng.sample(PROMO_WORDS, 2):  # codes the customer does not hold, for realism
        decoy = f"{code}{rng.randint(41, 60)}"
        promos[decoy] = {"code": decoy, "kind": "amount", "percent": None, "category": None,
                         "amount_cents": rng.randint(2, 10) * 500, "min_subtotal_cents": rng.randint(5, 30) * 1000,
                         "tiers": all_tiers, "expires": (today + timedelta(days=rng.randint(1, 90))).isoformat()}
    shown_codes = list(codes)
    rng.shuffle(shown_codes)
    return promos, shown_codes, best, outcomes[best]


class ShopEnv(Environment):
    """Separate mock services of an online shop: customers, catalogue, inventory, pricing, promotions, shipping
    and orders."""

    def __init__(self, world: dict[str, Any]):
        super().__init__()
        self.state = copy.deepcopy(world["state"])
        self._today: date = world["today"]
        self._rates: dict[str, list[int]] = world["rates"]
        self._next_quote: int = world["first_quote"]
        self._next_order: int = world["first_order"]

    # ---- lookups shared by the tools

    def _customer(self, customer_id: str) -> dict[str, Any]:
        customer = self.state["customers"].get(_text(customer_id, "customer_id").upper())
        if customer is None:
            raise ToolError(f"no customer with id '{customer_id}'")
        return customer

    def _product(self, sku: str) -> dict[str, Any]:
        product = self.state["products"].get(_text(sku, "sku").upper())
        if product is None:
            raise ToolError(f"no product with sku '{sku}'")
        return product

    def _warehouse(self, warehouse_id: str) -> str:
        key = _text(warehouse_id, "warehouse_id").upper()
        if key not in self.state["warehouses"]:
            known = ", ".join(self.state["warehouses"])
            raise ToolError(f"no warehouse with id '{warehouse_id}' (warehouses: {known})")
        return key

    def _items(self, items: list[dict[str, Any]]) -> list[list[Any]]:
        """Validated [sku, quantity] pairs sorted by sku."""
        if not items:
            raise ToolError("items is empty")
        if len(items) > MAX_ITEMS:
            raise ToolError(f"at most {MAX_ITEMS} items")
        pairs: dict[str, int] = {}
        for entry in items:
            sku = self._product(entry["sku"])["sku"]
            if not 1 <= entry["quantity"] <= MAX_QUANTITY:
                raise ToolError(f"quantity of {sku} must be between 1 and {MAX_QUANTITY}")
            if sku in pairs:
                raise ToolError(f"{sku} is listed twice; list each product once")
            pairs[sku] = entry["quantity"]
        return [[sku, pairs[sku]] for sku in sorted(pairs)]

    def _priced(self, tier: str, pairs: list[list[Any]]) -> list[dict[str, Any]]:
        lines = []
        for sku, qty in pairs:
            product = self.state["products"][sku]
            unit = _unit_price(product["list_price_cents"], tier)
            lines.append({"sku": sku, "quantity": qty, "category": product["category"],
                          "list_unit_cents": product["list_price_cents"], "unit_price_cents": unit,
                          "line_total_cents": unit * qty})
        return lines

    # ---- tools

    @tool("Customer service: find a customer by e-mail address. Returns the customer id, name, loyalty tier and "
          "saved addresses (each with its address_id, label, whether it is the default, and the id of the warehouse "
          "that serves it).",
          {"email": {"type": "string"}})
    def find_customer(self, email: str) -> Any:
        wanted = _text(email, "email").lower()
        for customer in self.state["customers"].values():
            if customer["email"] == wanted:
                return copy.deepcopy(customer)
        raise ToolError(f"no customer with e-mail '{email}'")

    @tool("Catalogue service: one product by SKU: name, category, list price in cents, shipping weight in grams, "
          "status ('active' or 'discontinued') and, for a discontinued product, replaced_by: the SKU of its successor.",
          {"sku": {"type": "string"}})
    def get_product(self, sku: str) -> Any:
        return copy.deepcopy(self._product(sku))

    @tool("Inventory service: stock of one product in every warehouse. on_hand counts every unit on the shelf, "
          "including units reserved for other orders; the available stock is on_hand minus reserved.",
          {"sku": {"type": "string"}})
    def get_stock(self, sku: str) -> Any:
        product = self._product(sku)
        per_warehouse = self.state["stock"][product["sku"]]
        return {"sku": product["sku"], "warehouses": [
            {"warehouse_id": wh, "city": self.state["warehouses"][wh]["city"], **per_warehouse[wh]}
            for wh in self.state["warehouses"]]}

    @tool("Pricing service: price products for a customer. Unit prices include the customer's loyalty-tier "
          "discount; the merchandise subtotal is before promotions and shipping. Read-only.",
          {"customer_id": {"type": "string"}, "items": ITEMS_SCHEMA})
    def price_items(self, customer_id: str, items: list[dict[str, Any]]) -> Any:
        customer = self._customer(customer_id)
        lines = self._priced(customer["tier"], self._items(items))
        return {"customer_id": customer["customer_id"], "tier": customer["tier"],
                "tier_discount_percent": TIER_PERCENT[customer["tier"]], "lines": lines,
                "merchandise_subtotal_cents": sum(line["line_total_cents"] for line in lines)}

    @tool("Promotions service: the terms of a promo code. A code applies to an order only if today is on or before "
          "`expires`, the customer's tier is in `tiers`, and the order's merchandise subtotal after tier discounts "
          "(before shipping) is at least `min_subtotal_cents`. kind 'percent' takes `percent` off the tier-discounted "
          "lines of `category` (every line when category is null), rounded to the cent; kind 'amount' takes "
          "`amount_cents` off. Shipping is never discounted. An order takes at most one code.",
          {"code": {"type": "string"}})
    def get_promo(self, code: str) -> Any:
        promo = self.state["promos"].get(_text(code, "code").upper())
        if promo is None:
            raise ToolError(f"no promotion with code '{code}'")
        return {**copy.deepcopy(promo), "today": self._today.isoformat()}

    @tool("Shipping service: quote one shipment of the given items from a warehouse to a customer address. Returns "
          "a quote_id and the shipping cost in cents; create_order needs the quote of each shipment, covering "
          "exactly that shipment's items. Quoting reserves nothing.",
          {"warehouse_id": {"type": "string"}, "address_id": {"type": "string"}, "items": ITEMS_SCHEMA})
    def quote_shipping(self, warehouse_id: str, address_id: str, items: list[dict[str, Any]]) -> Any:
        wh = self._warehouse(warehouse_id)
        address = _text(address_id, "address_id").upper()
        if f"{wh}|{address}" not in self._rates:
            raise ToolError(f"no address with id '{address_id}'")
        pairs = self._items(items)
        weight = sum(self.state["products"][sku]["weight_g"] * qty for sku, qty in pairs)
        quote_id = f"Q-{self._next_quote}"
        self._next_quote += 1
        quote = {"quote_id": quote_id, "warehouse_id": wh, "address_id": address,
                 "items": [{"sku": sku, "quantity": qty} for sku, qty in pairs], "weight_g": weight,
                 "shipping_cents": _shipping_cents(self._rates[f"{wh}|{address}"], weight)}
        self.state["quotes"][quote_id] = quote
        return copy.deepcopy(quote)

    @tool("Order service: place an order. Each shipment names its warehouse, the quote_id of a shipping quote for "
          "exactly its items to this address, and its items. Units are reserved from each warehouse's available "
          "stock; units the warehouse cannot cover are backordered. promo_code (optional) is applied only if the "
          "order meets its terms; otherwise the order is still placed without a discount. Returns the order with "
          "its order_id and total_cents (merchandise after tier discounts, minus the promotion, plus shipping).",
          {"customer_id": {"type": "string"}, "address_id": {"type": "string"}, "shipments": SHIPMENTS_SCHEMA,
           "promo_code": {"type": "string", "description": "Leave out for no promotion."}},
          required=["customer_id", "address_id", "shipments"])
    def create_order(self, customer_id: str, address_id: str, shipments: list[dict[str, Any]],
                     promo_code: str = "") -> Any:
        customer = self._customer(customer_id)
        address = _text(address_id, "address_id").upper()
        if address not in [a["address_id"] for a in customer["addresses"]]:
            raise ToolError(f"address '{address_id}' is not one of {customer['customer_id']}'s addresses")
        if not shipments:
            raise ToolError("shipments is empty")
        if len(shipments) > len(self.state["warehouses"]):
            raise ToolError("one shipment per warehouse at most")
        planned, seen_warehouses, seen_skus = [], set(), set()
        for shipment in shipments:
            wh = self._warehouse(shipment["warehouse_id"])
            if wh in seen_warehouses:
                raise ToolError(f"two shipments from {wh}; put its items in one shipment")
            seen_warehouses.add(wh)
            pairs = self._items(shipment["items"])
            for sku, _ in pairs:
                if sku in seen_skus:
                    raise ToolError(f"{sku} appears in two shipments")
                seen_skus.add(sku)
            quote = self.state["quotes"].get(_text(shipment["quote_id"], "quote_id").upper())
            if quote is None:
                raise ToolError(f"no shipping quote '{shipment['quote_id']}'")
            if quote["warehouse_id"] != wh or quote["address_id"] != address or \
                    [[i["sku"], i["quantity"]] for i in quote["items"]] != pairs:
                covered = ", ".join(f"{i['quantity']} x {i['sku']}" for i in quote["items"])
                raise ToolError(f"quote {quote['quote_id']} does not cover this shipment (it is for "
                                f"{quote['warehouse_id']} to {quote['address_id']}: {covered})")
            planned.append((wh, quote, pairs))
        promo = None
        if promo_code.strip():
            promo = self.state["promos"].get(_text(promo_code, "promo_code").upper())
            if promo is None:
                raise ToolError(f"no promotion with code '{promo_code}'")

        order_id = f"SO-{self._next_order}"
        self._next_order += 1
        order_shipments, priced_lines = [], []
        for wh, quote, pairs in planned:
            items = []
            for line in self._priced(customer["tier"], pairs):
                shelf = self.state["stock"][line["sku"]][wh]
                taken = min(line["quantity"], max(0, shelf["on_hand"] - shelf["reserved"]))
                shelf["reserved"] += taken
                items.append({"sku": line["sku"], "quantity": line["quantity"],
                              "unit_price_cents": line["unit_price_cents"], "backordered": line["quantity"] - taken})
                priced_lines.append((line["category"], line["quantity"], line["unit_price_cents"]))
            order_shipments.append({"warehouse_id": wh, "quote_id": quote["quote_id"],
                                    "shipping_cents": quote["shipping_cents"], "items": items})
        subtotal = sum(q * u for _, q, u in priced_lines)
        shipping = sum(s["shipping_cents"] for s in order_shipments)
        discount, why_not = (0, None) if promo is None else _promo_outcome(promo, customer["tier"], priced_lines,
                                                                           self._today)
        order = {"order_id": order_id, "customer_id": customer["customer_id"], "address_id": address,
                 "status": "placed", "placed_on": self._today.isoformat(), "shipments": order_shipments,
                 "promo_code": promo["code"] if promo else None, "promo_discount_cents": discount,
                 "promo_status": None if promo is None else (f"not applied: {why_not}" if why_not else "applied"),
                 "merchandise_subtotal_cents": subtotal, "shipping_cents": shipping,
                 "total_cents": subtotal - discount + shipping}
        self.state["orders"][order_id] = order
        return copy.deepcopy(order)

    @tool("Order service: one order by id.", {"order_id": {"type": "string"}})
    def get_order(self, order_id: str) -> Any:
        order = self.state["orders"].get(_text(order_id, "order_id").upper())
        if order is None:
            raise ToolError(f"no order with id '{order_id}'")
        return copy.deepcopy(order)

    @tool("Order service: cancel a placed order and release its reserved stock.", {"order_id": {"type": "string"}})
    def cancel_order(self, order_id: str) -> Any:
        order = self.state["orders"].get(_text(order_id, "order_id").upper())
        if order is None:
            raise ToolError(f"no order with id '{order_id}'")
        if order["status"] != "placed":
            raise ToolError(f"order {order['order_id']} is already {order['status']}")
        for shipment in order["shipments"]:
            for item in shipment["items"]:
                self.state["stock"][item["sku"]][shipment["warehouse_id"]]["reserved"] -= \
                    item["quantity"] - item["backordered"]
        order["status"] = "cancelled"
        return {"order_id": order["order_id"], "status": "cancelled"}


SHOP_CHECKS = (
    Check("single_order", "No more than one order is left placed (a duplicate order is a harmful side effect).",
          guard=True),
    Check("order_placed", "Exactly one placed order, for the right customer."),
    Check("delivery_address", "The order goes to the address the customer named, not the default."),
    Check("products", "The order holds the successor of the discontinued product and the other products, in "
                      "the requested quantities."),
    Check("warehouses", "Every line ships whole from the policy's warehouse and nothing is backordered."),
    Check("promotion", "The best valid promo code is applied."),
    Check("answer", "The answer names the order id and its correct total."),
)


def order_fulfilment(rng: ItemRng) -> AgTask:
    """Place one customer order across separate services under a fulfilment policy full of traps."""
    world = _shop_world(rng)
    reference, wasteful = _shop_scripts(world)
    return AgTask(_shop_prompt(world), lambda: ShopEnv(world), SHOP_CHECKS,
                  lambda env, answer: _check_shop(world["plan"], env, answer), reference, wasteful)


def _shop_prompt(world: dict[str, Any]) -> str:
    """The customer's request and the fulfilment policy."""
    plan, products = world["plan"], world["state"]["products"]
    request_lines = "\n".join(f"  - {plan['quantity'][s]} x {products[s]['name']} ({s})" for s in plan["requested"])
    return (
        f"You run the order desk at {plan['shop']}. Today is {world['today'].isoformat()}. A customer writes:\n\n"
        f"  \"Hello, this is {plan['customer_name']} ({plan['email']}). Please send me:\n{request_lines}\n"
        f"  to my {plan['label']} address. I have these promo codes: {', '.join(plan['codes'])}. Use whichever "
        f"saves me the most.\"\n\n"
        "Place the order through the tools, following the fulfilment policy:\n"
        "1. Never ship a discontinued product: order its successor instead (follow replaced_by until you reach an "
        "active product), in the same quantity.\n"
        "2. Ship every line whole from a single warehouse, out of available stock (on hand minus reserved). "
        "Nothing may be backordered.\n"
        "3. Ship a line from the warehouse that serves the delivery address whenever that warehouse has enough "
        "available stock for it. A line it cannot fill ships from whichever other warehouse with enough available "
        "stock quotes the lowest shipping for that line on its own.\n"
        "4. Each shipment (one per warehouse) uses a shipping quote for exactly its items.\n"
        "5. Apply at most one promo code: of the customer's codes that are valid for this order, the one giving "
        "the largest discount (none if no code is valid).\n"
        "Place exactly one order.\n\n"
        "When you are done, call submit with the order id and the order total in dollars "
        "(for example \"SO-12345, $678.90\")."
    )


def _check_shop(plan: dict[str, Any], env: Environment, answer: str | None) -> dict[str, bool]:
    """The shop's checks on the placed order and the answer."""
    placed = [o for o in env.state["orders"].values() if o["status"] == "placed"]
    order = placed[0] if len(placed) == 1 and placed[0]["customer_id"] == plan["customer_id"] else None
    lines = {} if order is None else {item["sku"]: (item["quantity"], shipment["warehouse_id"], item["backordered"])
                                       for shipment in order["shipments"] for item in shipment["items"]}
    text = answer or ""
    return {
        "single_order": len(placed) <= 1,
        "order_placed": order is not None,
        "delivery_address": order is not None and order["address_id"] == plan["address_id"],
        "products": order is not None and {s: v[0] for s, v in lines.items()} == {
            s: plan["quantity"][s] for s in plan["final"]},
        "warehouses": order is not None and {s: v[1:] for s, v in lines.items()} == {
            s: (plan["warehouse_of"][s], 0) for s in plan["final"]},
        "promotion": order is not None and order["promo_code"] == plan["best"]
                     and order["promo_discount_cents"] == plan["discount"],
        "answer": order is not None and mentions(text, order["order_id"], ALNUM)
                  and plan["total"] in cents_in(text),
    }


def _shop_scripts(world: dict[str, Any]) -> tuple[tuple[Call, ...], tuple[Call, ...]]:
    """The efficient agent's calls, and a wasteful one with repeated reads and a placed-then-cancelled order."""
    plan, first_quote, first_order = world["plan"], world["first_quote"], world["first_order"]
    qty = plan["quantity"]

    def items(skus: list[str]) -> list[dict[str, Any]]:
        return [{"sku": s, "quantity": qty[s]} for s in skus]

    reads = [Call("find_customer", {"email": plan["email"]})]
    reads += [Call("get_product", {"sku": s}) for s in plan["requested"]]
    reads += [Call("get_product", {"sku": s}) for s in plan["chain"][1:]]
    reads += [Call("get_stock", {"sku": s}) for s in plan["final"]]
    reads.append(Call("price_items", {"customer_id": plan["customer_id"], "items": items(plan["final"])}))
    reads += [Call("get_promo", {"code": c}) for c in plan["codes"]]
    quotes = [Call("quote_shipping", {"warehouse_id": plan["home"], "address_id": plan["address_id"],
                                      "items": items(plan["home_items"])})]
    quotes += [Call("quote_shipping", {"warehouse_id": wh, "address_id": plan["address_id"],
                                       "items": items([plan["short"]])}) for wh in plan["candidates"]]
    alternative_quote = first_quote + 1 + plan["candidates"].index(plan["alternative"])
    shipments = [{"warehouse_id": plan["home"], "quote_id": f"Q-{first_quote}", "items": items(plan["home_items"])},
                 {"warehouse_id": plan["alternative"], "quote_id": f"Q-{alternative_quote}",
                  "items": items([plan["short"]])}]
    order = {"customer_id": plan["customer_id"], "address_id": plan["address_id"], "shipments": shipments}
    best = Call("create_order", {**order, "promo_code": plan["best"]})

    def submit(order_number: int) -> Call:
        return Call("submit", {"answer": f"SO-{order_number}, {dollars(plan['total'])}"})

    reference = (*reads, *quotes, best, submit(first_order))
    wasteful = (reads[0], reads[0], *reads[1:4], reads[3], *reads[4:], *quotes,
                Call("create_order", order), Call("cancel_order", {"order_id": f"SO-{first_order}"}), best,
                submit(first_order + 1))
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
