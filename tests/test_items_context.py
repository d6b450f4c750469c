"""Context items: each key is re-derived here by reading the rendered documents, independently of the generator.

The generators compute keys from their facts; these tests parse the prompt text with the rules the prompt
states and must reach the same answer, which pins down that the text says what the key assumes.
"""

import datetime as dt
import re
from collections import Counter
from fractions import Fraction

import pytest

from esac_kit.gi.generators import context
from esac_kit.gi.normalise import normalise
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.schemas import ExactKey
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED

ITEMS = {"context-inventory-ledger": context.inventory_ledger, "context-per-diem-memos": context.per_diem_memos,
         "context-config-rollbacks": context.config_rollbacks, "context-grant-panel": context.grant_panel,
         "context-distribution-rights": context.distribution_rights}
SEEDS = [f"test-seed-{k}" for k in range(30)]


def make(item_id, seed):
    return ITEMS[item_id](ItemRng(derive_item_key(seed, "gi", item_id, 1)))


@pytest.fixture(scope="module")
def instances():
    return {item_id: [make(item_id, seed) for seed in SEEDS] for item_id in ITEMS}


def date(text):
    day, month, year = text.split()
    return dt.date(int(year), context.MONTHS.index(month) + 1, int(day))


# ---------------------------------------------------------------- independent readers of the rendered text


def read_inventory(prompt, true_ledger=True):
    target, order = re.search(r"closing sellable stock of SKU (\S+) at each of these warehouses at the end of "
                              r"\w+: (.*)\?", prompt).groups()
    stock = {}
    opening = prompt.split("Opening sellable balances")[1].split("Ledger:")[0]
    for sku, rest in re.findall(r"^  (\S+)\s+(.*)$", opening, flags=re.M):
        for wh, qty in re.findall(r"(\w+) (\d+)", rest):
            stock[sku, wh] = int(qty)
    entries = {int(n): body for n, body in re.findall(r"^#(\d+)\s+\d\d-\w{3}\s+(.*)$", prompt, flags=re.M)}
    parsed, voided = {}, set()
    for n, body in entries.items():
        move = re.match(r"(RECEIPT|SHIPMENT|RETURN|TRANSFER-OUT|TRANSFER-IN|QUARANTINE)\s+(\S+)\s+(\S+)\s+"
                        r"([+-]?)\s*(\d+)", body)
        count = re.match(r"CYCLE COUNT\s+(\S+)\s+(\S+)\s+counted (\d+)", body)
        if move and "DAMAGED" not in body:
            kind, sku, wh, sign, qty = move.groups()
            parsed[n] = {"op": "add" if sign == "+" else "sub", "sku": sku, "wh": wh, "qty": int(qty)}
        elif count:
            parsed[n] = {"op": "set", "sku": count[1], "wh": count[2], "qty": int(count[3])}
    for n, body in entries.items():
        fix = re.match(r"CORRECTION\s+re #(\d+): (quantity|SKU|warehouse) should read (\S+) \(keyed as (\S+)\)", body)
        if fix:
            field = {"quantity": "qty", "SKU": "sku", "warehouse": "wh"}[fix[2]]
            assert str(parsed[int(fix[1])][field]) == fix[4]
            parsed[int(fix[1])][field] = int(fix[3]) if field == "qty" else fix[3]
        void = re.match(r"VOID\s+re #(\d+)", body)
        if void:
            voided.add(int(void[1]))
    for n in sorted(parsed):
        e = parsed[n]
        if n in voided:
            continue
        key = (e["sku"], e["wh"])
        stock[key] = {"add": stock[key] + e["qty"], "sub": stock[key] - e["qty"], "set": e["qty"]}[e["op"]]
        assert stock[key] >= 0 or not true_ledger, "the true ledger never goes negative"
    return ", ".join(str(stock[target, wh]) for wh in order.split(", "))


def read_config(prompt):
    groups = {}
    for group, members in re.findall(r"(edge|core) = ([\w, ]+?)[;.]", prompt):
        groups.update({s: group for s in members.split(", ")})
    hh, mm, key, services = re.search(r"at (\d\d):(\d\d) that day, what was the effective production value of "
                                      r"(\w+) for each of these services: (.*)\?", prompt).groups()
    settings = {}
    baseline = prompt.split("Baseline at 00:00")[1].split("Change log:")[0]
    for env, scope, pairs in re.findall(r"^  (production|staging)\s+(\S+)\s+(.*)$", baseline, flags=re.M):
        for k, v in re.findall(r"(\w+)=(\d+)", pairs):
            settings[env, scope, k] = int(v)
    before = {}
    for cid, h, m, env, op, args, status in re.findall(
            r"^(C-\d+)\s+(\d\d):(\d\d)\s+(production|staging)\s+\S+\s+(SET|UNSET|ROLLBACK|RESTART)\s+(.*?)\s{2,}"
            r"(applied|FAILED)", prompt, flags=re.M):
        if (int(h), int(m)) > (int(hh), int(mm)):
            break
        if status == "FAILED" or op == "RESTART":
            continue
        if op == "ROLLBACK":
            slot, previous = before[args.strip()]
            settings.pop(slot, None) if previous is None else settings.__setitem__(slot, previous)
            continue
        scope, k = args.split()[:2]
        slot = (env, scope, k)
        before[cid] = (slot, settings.get(slot))
        if op == "SET":
            settings[slot] = int(args.split("=")[1])
        else:
            settings.pop(slot)

    def effective(service):
        for scope in (f"service:{service}", f"group:{groups[service]}", "global"):
            if ("production", scope, key) in settings:
                return settings["production", scope, key]

    return ", ".join(str(effective(s)) for s in services.split(", "))


def read_per_diem(prompt):
    memos = {}
    for block in prompt.split("\n\n"):
        head = re.match(r"MEMO (TO-\d+-\d+)\s+\|\s+issued (\d+ \w+ \d+)(?:\s+\|\s+effective (\d+ \w+ \d+))?", block)
        if not head:
            continue
        settings = [((c, f), int(v)) for c, f, v in re.findall(r"- (\w+): (lodging cap|M&IE rate) EUR (\d+)", block)]
        settings += [(("deduction", meal), int(p)) for meal, p in re.findall(r"provided (\w+): (\d+)%", block)]
        memos[head[1]] = {"issue": date(head[2]), "effective": head[3] and date(head[3]), "settings": settings,
                          "live": "DRAFT" not in block}
        for withdrawn in re.findall(r"Memo (TO-\d+-\d+) is withdrawn", block):
            memos[withdrawn]["live"] = False

    def value(key, when):
        live = sorted((m["effective"], m["issue"], v) for m in memos.values() if m["live"] and m["effective"]
                      for k, v in m["settings"] if k == key and m["effective"] <= when)
        assert len({x[:2] for x in live}) == len(live), "no two memos tie on effective and issue date"
        return live[-1][2]

    claim = re.search(r"reimburse on claim (EC-\d+)", prompt)[1]
    block = prompt.split(f"EXPENSE CLAIM {claim}")[1].split("Question:")[0]
    start, end = (date(d) for d in re.search(r"Departed (\d+ \w+ \d+); returned (\d+ \w+ \d+)", block).groups())
    hotels = re.findall(r"- (\w+): (\d) nights at EUR (\d+)", block)
    nights = [city for city, n, _ in hotels for _ in range(int(n))]
    assert start + dt.timedelta(len(nights)) == end
    actual = {city: int(rate) for city, _, rate in hotels}
    meals = [(date(d), meal) for meal, d in re.findall(r"(\w+) on (\d+ \w+ \d+)", block.split("Meals provided")[1])]
    total = Fraction(0)
    for k, city in enumerate(nights):
        total += min(actual[city], value((city, "lodging cap"), start + dt.timedelta(k)))
    for k in range(len(nights) + 1):
        day = start + dt.timedelta(k)
        full = value(((nights + nights[-1:])[k], "M&IE rate"), day)
        pay = full * Fraction(3, 4) if k in (0, len(nights)) else Fraction(full)
        pay -= sum(Fraction(value(("deduction", meal), day), 100) * full for d, meal in meals if d == day)
        total += max(pay, Fraction(0))
    return total


def read_grants(prompt):
    bonus = Fraction(1) if "add 1 point" in prompt else Fraction(1, 2)
    window, year = map(int, re.search(r"no more than (\d+) years before (\d+)", prompt).groups())
    floor = Fraction(re.search(r"adjusted score is at least ([\d.]+)", prompt)[1])
    budget = int(re.search(r"remains of the \$([\d,]+) budget", prompt)[1].replace(",", ""))
    cap = int(re.search(r"would not exceed \$([\d,]+)", prompt)[1].replace(",", ""))
    props, current = {}, None
    said = r"(?:I scored it (\d+)|(\d+) from me|I'm at (\d+)|My score is (\d+)|I gave it (\d+)|I landed on (\d+))\.$"
    for line in prompt.split("Transcript:")[1].splitlines():
        head = re.match(r"CHAIR: Next, (G-(\d+)): Dr (\w+) \((\w+), PhD (\d+)\) asks for \$([\d,]+)", line)
        speaker = line.split(":")[0]
        if head:
            current = {"no": int(head[2]), "pi": head[3], "dept": head[4], "phd": int(head[5]), "active": False,
                       "amount": int(head[6].replace(",", "")), "scores": {}, "gone": False}
            props[head[1]] = current
        elif m := re.search(r"request is now \$([\d,]+)", line):
            current["amount"] = int(m[1].replace(",", ""))
        elif m := re.search(r"Dr (\w+) still holds an active award", line):
            next(p for p in props.values() if p["pi"] == m[1])["active"] = True
        elif m := re.search(r"Correction for (G-\d+): I said (\d+) earlier, but my sheet says (\d+)", line):
            assert props[m[1]]["scores"][speaker] == int(m[2])
            props[m[1]]["scores"][speaker] = int(m[3])
        elif m := re.search(r"declare a conflict on (G-\d+)", line):
            del props[m[1]]["scores"][speaker]
        elif m := re.search(r"(G-\d+) was withdrawn", line):
            props[m[1]]["gone"] = True
        elif (m := re.search(said, line)) and "stays at" not in line and len(current["scores"]) < 3:
            current["scores"][speaker] = int(next(g for g in m.groups() if g))
    ranked = []
    for pid, p in props.items():
        score = Fraction(sum(p["scores"].values()), len(p["scores"]))
        if year - p["phd"] <= window and not p["active"]:
            score += bonus
        if not p["gone"]:
            ranked.append((-score, p["amount"], p["no"], pid, p))
    funded, spent = [], Counter()
    for negative, amount, _, pid, p in sorted(ranked):
        if -negative >= floor and amount <= budget - sum(spent.values()) and spent[p["dept"]] + amount <= cap:
            funded.append(pid)
            spent[p["dept"]] += amount
    return ", ".join(funded)


def read_rights(prompt, strict_end=True, ignore=()):
    today = date(re.search(r"today is (\d+ \w+ \d+)\.", prompt)[1])
    asked = re.search(r"Who holds the distribution right in each of these territories today: (.*)\?", prompt)[1]
    agreements, grants, removals, extensions, stops = {}, [], [], [], []
    for n, block in enumerate(prompt.split("\n\n")):
        if m := re.match(r"DISTRIBUTION AGREEMENT (DA-\d+), signed .+? and (.+)\n", block):
            territories, start, end = re.search(r"catalogue in (.+) from (\d+ \w+ \d+) to (\d+ \w+ \d+) inclusive",
                                                block).groups()
            agreements[m[1]] = {"dist": m[2], "end": date(end), "notice": int(re.search(r"or (\d+) days", block)[1])}
            grants += [(date(start), n, m[1], t) for t in territories.split(", ")]
        elif (m := re.match(r"AMENDMENT TO (DA-\d+) .*, signed by both parties\n", block)):
            if e := re.search(r"With effect from (\d+ \w+ \d+), (\w+) is added", block):
                grants.append((date(e[1]), n, m[1], e[2]))
            elif e := re.search(r"With effect from (\d+ \w+ \d+), (\w+) is removed", block):
                removals.append((m[1], e[2], date(e[1])))
            elif e := re.search(r"end date in clause 1 is replaced by (\d+ \w+ \d+)", block):
                extensions.append((m[1], date(e[1])))
        elif m := re.match(r"NOTICE OF TERMINATION under clause 3 of (DA-\d+), given by .+ on (\d+ \w+ \d+)", block):
            stated = date(re.search(r"will end on (\d+ \w+ \d+)", block)[1])
            notice_end = date(m[2]) + dt.timedelta(agreements[m[1]]["notice"])
            stops.append((m[1], stated if "notice" in ignore else max(stated, notice_end)))

    def holder(territory):
        live = sorted(g for g in grants if g[3] == territory and (g[0] <= today or "future" in ignore))
        for start, _, agreement, _ in reversed(live):
            end = max([agreements[agreement]["end"]] + [e for a, e in extensions if a == agreement])
            ended = (today > end if strict_end else today >= end) and "expiry" not in ignore
            removed = any(a == agreement and t == territory and start < e <= today for a, t, e in removals)
            stopped = any(a == agreement and (s < today if strict_end else s <= today) for a, s in stops)
            if not (ended or removed or stopped):
                return agreements[agreement]["dist"]
            if "revival" not in ignore:
                break
        return "none"

    return ", ".join(holder(t) for t in asked.split(", "))


READERS = {"context-inventory-ledger": read_inventory, "context-config-rollbacks": read_config,
           "context-per-diem-memos": read_per_diem, "context-grant-panel": read_grants,
           "context-distribution-rights": read_rights}


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("item_id", ITEMS)
def test_the_rendered_documents_support_exactly_the_key(instances, item_id):
    for generated in instances[item_id]:
        derived = READERS[item_id](generated.prompt)
        assert normalise(str(derived), generated.key.answer_type) == normalise(generated.key.answer,
                                                                               generated.key.answer_type)


@pytest.mark.parametrize("item_id", ITEMS)
def test_reference_scores_one_and_empty_garbled_and_near_misses_score_zero(instances, item_id):
    for generated in instances[item_id]:
        key = generated.key
        assert isinstance(key, ExactKey)
        assert score_response(key, generated.reference).score == 1.0
        assert score_response(key, "").score == 0.0
        assert score_response(key, GARBLED).score == 0.0
        for wrong in near_misses(key):
            assert score_response(key, f"Working.\nANSWER: {wrong}").score == 0.0, wrong


def near_misses(key):
    """Plausible wrong answers: one element off, two elements swapped, a number off by a little."""
    if key.answer_type == "number":
        value = Fraction(key.answer)
        return [str(float(value + 1)), str(float(value - Fraction(1, 2)))]
    parts = key.answer.split(", ")
    misses = []
    if parts[0].lstrip("-").isdigit():
        misses.append(", ".join([str(int(parts[0]) + 1), *parts[1:]]))
    else:
        misses.append(", ".join(["none" if parts[0] != "none" else "Arbor Media", *parts[1:]]))
    if len(set(parts)) > 1:
        i = next(i for i in range(1, len(parts)) if parts[i] != parts[0])
        swapped = parts[:]
        swapped[0], swapped[i] = swapped[i], swapped[0]
        misses.append(", ".join(swapped))
    misses.append(", ".join(parts[:-1]))
    return misses


@pytest.mark.parametrize("item_id", ITEMS)
def test_same_seed_same_instance_and_prompts_within_the_window(instances, item_id):
    assert make(item_id, SEEDS[0]) == instances[item_id][0]
    assert len({g.prompt for g in instances[item_id]}) == len(SEEDS)
    for generated in instances[item_id]:
        assert 7500 <= len(generated.prompt) <= 16000
        assert "ANSWER:" in generated.prompt.splitlines()[-1] or "ANSWER:" in generated.prompt[-400:]


@pytest.mark.parametrize("item_id", ITEMS)
def test_no_answer_recurs_often(instances, item_id):
    answers = Counter(normalise(g.key.answer, g.key.answer_type) for g in instances[item_id])
    assert answers.most_common(1)[0][1] <= 2


def test_rights_answers_do_not_depend_on_whether_boundary_days_are_inclusive(instances):
    # Every start, end and termination date lies at least three days from "today", so the reading of a
    # boundary day cannot change a holder: the answer is unique under either convention.
    for generated in instances["context-distribution-rights"]:
        assert read_rights(generated.prompt, strict_end=False) == read_rights(generated.prompt)


def test_rights_traps_change_the_answer(instances):
    # The generator redraws until at least three single-trap misreadings change the answer; one of them (an
    # email read as binding) this reader cannot imitate, so at least two of the other four must differ.
    for generated in instances["context-distribution-rights"]:
        drafts_binding = generated.prompt.replace("DRAFT, circulated for comment, not signed", "signed by both parties")
        misreadings = [read_rights(drafts_binding)] + [read_rights(generated.prompt, ignore={trap})
                                                       for trap in ("notice", "future", "revival", "expiry")]
        assert sum(m != generated.key.answer for m in misreadings) >= 2


def test_grant_traps_change_the_answer(instances):
    # Reading the transcript while ignoring the corrections and strikes must give a different funding list
    # in most instances: the traps are part of what the item measures.
    differs = 0
    for generated in instances["context-grant-panel"]:
        naive = re.sub(r"\n\w+: Correction for G-\d+:.*\nCHAIR: Noted\.", "", generated.prompt)
        naive = re.sub(r"\n\w+: I have to declare a conflict.*\nCHAIR: Struck;.*", "", naive)
        differs += read_grants(naive) != generated.key.answer
    assert differs >= len(SEEDS) // 2


def test_inventory_corrections_matter(instances):
    differs = 0
    for generated in instances["context-inventory-ledger"]:
        naive = "\n".join(line for line in generated.prompt.splitlines()
                          if "CORRECTION" not in line and "VOID" not in line)
        differs += read_inventory(naive, true_ledger=False) != generated.key.answer
    assert differs >= len(SEEDS) * 3 // 4
