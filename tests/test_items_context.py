"""Context items: each key is re-derived here by reading the rendered documents, independently of the generator.

The generators compute keys from their facts; these readers parse only the prompt text, apply the rules the prompt
states and must reach the same answer, which pins down that the text says what the key assumes. Instances come
from the suite as declared (drivers and difficulty band of each item file), over test-only pools.
"""

import datetime as dt
import re
import statistics
from collections import Counter
from fractions import Fraction

import pytest

from esac_kit.gi.generators import context
from esac_kit.gi.normalise import normalise
from esac_kit.gi.scoring import score_response
from esac_kit.gi.verify import GARBLED
from esac_kit.instances import generate
from esac_kit.pools import custom_pool
from esac_kit.rng import ItemRng, derive_item_key
from esac_kit.schemas import ExactKey
from esac_kit.suite import load_suite

ITEMS = ["context-inventory-ledger", "context-per-diem-memos", "context-config-rollbacks", "context-grant-panel",
         "context-distribution-rights"]
SEEDS = [f"t-{n}" for n in range(20)]
SUITE = load_suite("gi")


@pytest.fixture(scope="module")
def instances():
    return {item_id: [generate(SUITE, SUITE.item(item_id), custom_pool(seed)) for seed in SEEDS] for item_id in ITEMS}


DATE = r"\d{1,2} [A-Z][a-z]+ \d{4}"


def date(text):
    day, month, year = text.split()
    return dt.date(int(year), context.MONTHS.index(month) + 1, int(day))


# ---------------------------------------------------------------- inventory ledger


def read_inventory(prompt, skip=()):
    """Closing stock; `skip` names kinds of fix entries to ignore (a careless reading, for the trap test)."""
    cells = re.findall(r"^  \d+\. (\S+) at (\w+)$", prompt.split("Question:")[1], flags=re.M)
    stock = Counter()
    opening = prompt.split("Opening sellable balances")[1].split("Ledger:")[0]
    for sku, rest in re.findall(r"^  (\S+)\s+(.*)$", opening, flags=re.M):
        for wh, qty in re.findall(r"(\w+) (\d+)", rest):
            stock[sku, wh] = int(qty)
    entries = {int(n): body for n, body in re.findall(r"^#(\d+)\s+\d\d-\w{3}\s+(.*)$", prompt, flags=re.M)}
    parsed, corrections, voided, at = {}, {}, set(), {}
    relabel = None
    for n, body in entries.items():
        move = re.match(r"(RECEIPT|SHIPMENT|RETURN|ADJUSTMENT|TRANSFER-OUT|TRANSFER-IN|QUARANTINE)\s+(\S+)\s+(\S+)\s+"
                        r"([+-]?)(\d+)", body)
        count = re.match(r"CYCLE COUNT\s+(\S+)\s+(\S+)\s+counted (\d+)", body)
        if move and "DAMAGED" not in body:
            parsed[n] = {"op": "add" if move[4] == "+" else "sub", "sku": move[2], "wh": move[3], "qty": int(move[5])}
            at[n] = None if "PARKED" in body else n
        elif count:
            parsed[n] = {"op": "set", "sku": count[1], "wh": count[2], "qty": int(count[3])}
            at[n] = n
        elif m := re.match(r"NOTICE\s+.*code (\S+) is retired and relabelled (\S+) ", body):
            relabel = (n, m[1], m[2])
        elif m := re.match(r"CORRECTION\s+re #(\d+): (quantity|SKU|warehouse) should read (\S+) \(keyed as ([^;)]+)",
                           body):
            corrections[n] = (int(m[1]), {"quantity": "qty", "SKU": "sku", "warehouse": "wh"}[m[2]], m[3], m[4])
        elif m := re.match(r"VOID\s+re #(\d+)", body):
            voided.add(int(m[1]))
        elif m := re.match(r"APPROVAL\s+re #(\d+)", body):
            at[int(m[1])] = n
    for c, (n, field, value, keyed) in sorted(corrections.items()):
        if c in voided or "corrections" in skip:
            continue
        assert str(parsed[n][field]) == keyed or "; supersedes" in entries[c], (c, n)
        parsed[n] = {**parsed[n], field: int(value) if field == "qty" else value}
    events = sorted((place, n) for n, place in at.items() if place is not None
                    and (n not in voided or "voids" in skip))
    if relabel:
        events = sorted(events + [(relabel[0], "relabel")])
    done = False
    for _, n in events:
        if n == "relabel":
            _, old, new = relabel
            for (sku, wh) in list(stock):
                if sku == old:
                    stock[new, wh] += stock.pop((sku, wh))
            done = True
            continue
        e = parsed[n]
        key = (relabel[2] if done and e["sku"] == relabel[1] else e["sku"], e["wh"])
        stock[key] = {"add": stock[key] + e["qty"], "sub": stock[key] - e["qty"], "set": e["qty"]}[e["op"]]
        assert stock[key] >= 0 or skip, "the true ledger never goes negative"
    return ", ".join(str(stock[cell]) for cell in cells)


# ---------------------------------------------------------------- config change log


def read_config(prompt):
    group, region = {}, {}
    catalogue = prompt.split("Service catalogue at 00:00")[1].split("Baseline at 00:00")[0]
    for service, g, r in re.findall(r"^  (\w+)\s+group:(\w+)\s+region:(\w+)", catalogue, flags=re.M):
        group[service], region[service] = g, r
    queries = [(service, key, (int(hh), int(mm), int(ss))) for service, key, hh, mm, ss in re.findall(
        r"^  \d+\. (\w+): (\w+) at (\d\d):(\d\d):(\d\d)$", prompt.split("Question:")[1], flags=re.M)]
    moments = sorted({q[2] for q in queries})
    settings = {}
    baseline = prompt.split("Baseline at 00:00")[1].split("Change log:")[0]
    for env, scope, pairs in re.findall(r"^  (production|staging)\s+(\S+)\s+(.*)$", baseline, flags=re.M):
        for k, v in re.findall(r"(\w+)=(\d+)", pairs):
            settings[env, scope, k] = int(v)
    review = prompt.split("Post-incident review")[1]
    actual = {cid: int(v) for cid, v in re.findall(r"^- (C-\d+) is logged as setting .* but the deploy tool applied "
                                                   r"(\d+);", review, flags=re.M)}
    rejected = set(re.findall(r"^- (C-\d+) is logged as applied, but the deploy tool rejected it", review, flags=re.M))
    before, held, checkpoints, frozen, seen = {}, [], {}, False, {}

    def write(cid, slot, value):
        before[cid] = (slot, settings.get(slot))
        if value is None:
            settings.pop(slot, None)
        else:
            settings[slot] = value

    def effective(service, key):
        for scope in (f"service:{service}", f"group:{group[service]}", f"region:{region[service]}", "global"):
            if ("production", scope, key) in settings:
                return settings["production", scope, key]

    log = prompt.split("Change log:")[1].split("Post-incident review")[0]
    for cid, h, m, s, env, body in re.findall(r"^(C-\d+)\s+(\d\d):(\d\d):(\d\d)\s+(\S+)\s+\S+\s+(.*)$", log,
                                              flags=re.M):
        while moments and (int(h), int(m), int(s)) > moments[0]:
            seen[moments[0]] = {(q[0], q[1]): effective(q[0], q[1]) for q in queries if q[2] == moments[0]}
            moments.pop(0)
        if body.startswith(("CHAT", "RESTART")) or "FAILED" in body or cid in rejected:
            continue
        if body.startswith("FREEZE"):
            assert not frozen
            frozen = True
        elif body.startswith("THAW"):
            for hcid, slot, value in held:
                write(hcid, slot, value)
            held, frozen = [], False
        elif move := re.match(r"MOVE service:(\w+) to (group|region):(\w+)", body):
            (group if move[2] == "group" else region)[move[1]] = move[3]
        elif cp := re.match(r"CHECKPOINT (cp-\d+)", body):
            checkpoints[cp[1]] = {k: v for k, v in settings.items() if k[0] == "production"}
        elif restore := re.match(r"RESTORE (cp-\d+) (\S+)", body):
            saved = checkpoints[restore[1]]
            for slot in [k for k in settings if k[:2] == ("production", restore[2])]:
                del settings[slot]
            settings.update({k: v for k, v in saved.items() if k[1] == restore[2]})
        elif rollback := re.match(r"ROLLBACK (C-\d+)", body):
            slot, value = before[rollback[1]]
            write(cid, slot, value)
        elif change := re.match(r"(SET|UNSET) (\S+) (\w+)(?: = (\d+))?", body):
            slot = (env, change[2], change[3])
            value = None if change[1] == "UNSET" else actual.get(cid, int(change[4]))
            if "HELD" in body:
                assert frozen and env == "production"
                held.append((cid, slot, value))
            else:
                write(cid, slot, value)
    assert not moments, "every moment asked about lies inside the log"
    return ", ".join(str(seen[t][service, key]) for service, key, t in queries)


# ---------------------------------------------------------------- per-diem circulars


def parse_rate(line):
    """One printed setting as (item, value), or None for a line that sets nothing."""
    patterns = [(r"(\w+) moves to rate band ([A-E])\.", lambda m: (("band", m[1]), m[2])),
                (r"Band ([A-E]): (lodging cap|M&IE rate) EUR (\d+)", lambda m: ((kind(m[2]), m[1]), int(m[3]))),
                (r"(\w+) \(city rate\): the city-specific (lodging cap|M&IE rate) is revoked",
                 lambda m: ((kind(m[2]), m[1]), "none")),
                (r"(\w+) \(city rate\): (lodging cap|M&IE rate) EUR (\d+)", lambda m: ((kind(m[2]), m[1]), int(m[3]))),
                (r"Deduction for a provided (\w+): (\d+)%", lambda m: (("deduction", m[1]), int(m[2]))),
                (r"Trade-fair surcharge on band lodging caps: (\d+)%", lambda m: (("surcharge",), int(m[1])))]
    for pattern, make in patterns:
        if m := re.search(pattern, line):
            return make(m)
    return None


def kind(word):
    return "lodging" if word == "lodging cap" else "mie"


def read_per_diem(prompt, misread=()):
    circulars, fairs = {}, {}
    blocks = prompt.split("\n\n")
    for block in blocks:
        head = re.match(rf"CIRCULAR (TO-\d+-\d+)\s+\|\s+issued ({DATE})(?:\s+\|\s+effective ({DATE}))?", block)
        if not head:
            continue
        settings = dict(x for x in (parse_rate(line) for line in re.findall(r"^  - (.*)$", block, flags=re.M)) if x)
        circulars[head[1]] = {"issue": date(head[2]), "effective": head[3] and date(head[3]), "settings": settings,
                              "live": "DRAFT FOR CONSULTATION" not in block or "drafts" in misread}
        if "Subject: Trade-fair calendar" in block:
            for city, a, b in re.findall(rf"^  - (\w+): ({DATE}) to ({DATE})$", block, flags=re.M):
                fairs[city] = (date(a), date(b))
    for block in blocks:
        if m := re.search(r"Subject: Erratum to (TO-\d+-\d+)\nIn TO-\d+-\d+, the line '(.*?)' should read '(.*?)' The",
                          block):
            wrong, right = parse_rate(m[2]), parse_rate(m[3])
            assert circulars[m[1]]["settings"][wrong[0]] == wrong[1] and wrong[0] == right[0]
            circulars[m[1]]["settings"][right[0]] = right[1]
        if m := re.search(rf"Subject: Erratum to (TO-\d+-\d+) \(effective date\)\n(TO-\d+-\d+) was printed with the "
                          rf"effective date ({DATE}); it should read ({DATE})\.", block):
            assert m[1] == m[2] and circulars[m[1]]["effective"] == date(m[3])
            if "errata" not in misread:
                circulars[m[1]]["effective"] = date(m[4])
        if m := re.search(r"Subject: Withdrawal of (TO-\d+-\d+)", block):
            circulars[m[1]]["live"] = "withdrawn" in misread
        if m := re.search(rf"The (\w+) fair runs from ({DATE}) to ({DATE}), not to", block):
            fairs[m[1]] = (date(m[2]), date(m[3]))

    for block in blocks:                  # corrections of errata, after the errata they correct
        if m := re.search(r"Subject: Correction to erratum (TO-\d+-\d+)\nErratum TO-\d+-\d+ gave the wrong figure\. "
                          r"In (TO-\d+-\d+), the line '(.*?)' should read '(.*?)', not '(.*?)' as", block):
            printed, right, said = parse_rate(m[3]), parse_rate(m[4]), parse_rate(m[5])
            assert circulars[m[2]]["settings"][said[0]] == said[1] and printed[0] == right[0] == said[0]
            assert f"Subject: Erratum to {m[2]}\nIn {m[2]}, the line '{m[3]}' should read '{m[5]}'" in prompt
            assert prompt.index(f"CIRCULAR {m[1]} ") < prompt.index(block)
            circulars[m[2]]["settings"][right[0]] = right[1]

    def value(item, when):
        live = sorted((c["effective"], c["issue"], c["settings"][item]) for c in circulars.values()
                      if c["live"] and c["effective"] and c["effective"] <= when and item in c["settings"])
        assert len({x[:2] for x in live}) == len(live), "no two circulars tie on effective and issue date"
        return live[-1][2] if live else "none"     # only a city rate can be missing: then none is in force

    claim = re.search(r"reimburse on claim (EC-\d+)", prompt)[1]
    block = prompt.split(f"EXPENSE CLAIM {claim} ")[1].split("\n\n")[0]
    start, end = (date(d) for d in re.search(rf"Departed ({DATE}); returned ({DATE})", block).groups())
    nights = []
    for city, count, first in re.findall(rf"^  - (\w+): (\d+) nights? from ({DATE})", block, flags=re.M):
        assert start + dt.timedelta(len(nights)) == date(first)
        nights += [city] * int(count)
    assert start + dt.timedelta(len(nights)) == end
    receipts = {date(d): int(v) for d, v in re.findall(rf"({DATE}) EUR (\d+)", block.split("Hotel receipts")[1])}
    meals = [(date(d), meal) for meal, d in re.findall(rf"(\w+) on ({DATE})", block.split("Meals provided")[1])]
    total = Fraction(0)
    for k, city in enumerate(nights):
        day = start + dt.timedelta(k)
        own = value(("lodging", city), day)
        if own != "none":
            cap = Fraction(own)
        else:
            cap = Fraction(value(("lodging", value(("band", city), day)), day))
            if city in fairs and fairs[city][0] <= day <= fairs[city][1]:
                cap *= 1 + Fraction(value(("surcharge",), day), 100)
        total += min(receipts[day], cap)
    for k in range(len(nights) + 1):
        day, city = start + dt.timedelta(k), (nights + nights[-1:])[k]
        own = value(("mie", city), day)
        full = Fraction(own if own != "none" else value(("mie", value(("band", city), day)), day))
        pay = full * Fraction(3, 4) if k in (0, len(nights)) else full
        pay -= sum(Fraction(value(("deduction", meal), day), 100) * full for d, meal in meals if d == day)
        total += max(pay, Fraction(0))
    return total


# ---------------------------------------------------------------- grant panel


def read_grants(prompt, ignore_notes=False):
    bonus = Fraction(1) if "add 1 point" in prompt else Fraction(1, 2)
    since = int(re.search(r"PhD was awarded in (\d+) or later, unless", prompt)[1])
    floor = Fraction(re.search(r"adjusted score is at\s+least ([\d.]+)", prompt)[1])
    budget = int(re.search(r"remains of the \$([\d,]+) budget", prompt)[1].replace(",", ""))
    cap = int(re.search(r"The department cap is \$([\d,]+)", prompt)[1].replace(",", ""))
    lowered, raised, theme, theme_max, bridging, caps = None, None, None, None, False, {}
    if not ignore_notes:
        # notes in issue order; a later note prevails over an earlier one
        notes = dict(re.findall(r"^CLARIFICATION NOTE (CN-\d+), issued .*\n(.*)$", prompt, flags=re.M))
        for no, text in notes.items():
            if m := re.search(r"awarded in (\d+) or later", text):
                since = int(m[1])
            if m := re.search(r"In note (CN-\d+), the year (\d+) is replaced by (\d+)", text):
                assert notes[m[1]].startswith("Clause 4 is replaced by") and f"in {m[2]} or later" in notes[m[1]]
                assert int(no[3:]) > int(m[1][3:])
                since = int(m[3])
            if m := re.search(r"Every score Dr (\w+) gives in this round is lowered by 1 point.*every score Dr (\w+) "
                              r"gives is raised by 1 point", text):
                lowered, raised = m[1], m[2]
            if m := re.search(r"strategic theme '([^']+)' is exempt from the department cap", text):
                theme = m[1]
            if m := re.search(r"The exemption in note (CN-\d+) applies only to a themed proposal whose requested "
                              r"amount is at most \$([\d,]+)", text):
                assert "is exempt from the department cap" in notes[m[1]] and int(no[3:]) > int(m[1][3:])
                theme_max = int(m[2].replace(",", ""))
            if m := re.search(r"^Department caps\. (\w+) receives .* its department cap in this round is \$([\d,]+) "
                              r"instead", text):
                caps[m[1]] = int(m[2].replace(",", ""))
            bridging |= "mention an active award, a bridging award (reference starting BR-) does not count" in text
    minutes, memo = prompt.split("MINUTES OF THE PANEL MEETING")[1].split("OFFICE MEMO after the meeting")
    props, current = {}, None
    said = r"(?:I scored it (\d+)|(\d+) from me|I'm at (\d+)|My score is (\d+)|I gave it (\d+)|I landed on (\d+))\.$"
    for line in minutes.splitlines():
        head = re.match(r"CHAIR: Next, (G-(\d+)): Dr (.+?) \((\w+), PhD (\d+)\) asks for \$([\d,]+) for project "
                        r"[\w-]+(?:, submitted under the strategic theme '([^']+)')?\.$", line)
        speaker = line.split(":")[0]
        if head:
            current = {"no": int(head[2]), "dept": head[4], "phd": int(head[5]), "award": None, "theme": head[7],
                       "amount": int(head[6].replace(",", "")), "scores": {}, "struck": {}, "corrected": set(),
                       "gone": False}
            props[head[1]] = current
        elif m := re.search(r"request is now \$([\d,]+)", line):
            current["amount"] = int(m[1].replace(",", ""))
        elif m := re.search(r"currently holds an active (?:bridging|research) award from this fund, ((?:BR|RA)-\d+)",
                            line):
            current["award"] = m[1]
        elif m := re.search(r"Correction for (G-\d+): I said (\d+) earlier, but my sheet says (\d+)", line):
            assert props[m[1]]["scores"][speaker] == int(m[2])
            props[m[1]]["scores"][speaker] = int(m[3])
            props[m[1]]["corrected"].add(speaker)
        elif m := re.search(r"Sorry, (G-\d+) once more: my correction was wrong too; the right score is (\d+), "
                            r"not (\d+)\.", line):
            assert speaker in props[m[1]]["corrected"] and props[m[1]]["scores"][speaker] == int(m[3])
            props[m[1]]["scores"][speaker] = int(m[2])
        elif m := re.search(r"declare a conflict on (G-\d+)", line):
            props[m[1]]["struck"][speaker] = props[m[1]]["scores"].pop(speaker)
        elif m := re.search(r"About my conflict on (G-\d+): .* I withdraw the declaration", line):
            props[m[1]]["scores"][speaker] = props[m[1]]["struck"].pop(speaker)
        elif m := re.search(r"(G-\d+) was withdrawn", line):
            props[m[1]]["gone"] = True
        elif (m := re.search(said, line)) and "stays at" not in line:
            assert speaker not in current["scores"]
            current["scores"][speaker] = int(next(g for g in m.groups() if g))
    for pid, amount in re.findall(r"^- (G-\d+): following the meeting .* the request is now \$([\d,]+)\.", memo,
                                  flags=re.M):
        props[pid]["amount"] = int(amount.replace(",", ""))
    for pid, year in re.findall(r"^- Erratum to the minutes: Dr .+?'s PhD \((G-\d+)\) was awarded in (\d+),", memo,
                                flags=re.M):
        props[pid]["phd"] = int(year)
    for pid in re.findall(r"^- (G-\d+): the applicant withdrew the proposal after the meeting", memo, flags=re.M):
        props[pid]["gone"] = True
    ranked = []
    for pid, p in props.items():
        scores = []
        for r, v in p["scores"].items():
            if r not in p["corrected"]:
                v = max(1, v - 1) if r == lowered else min(10, v + 1) if r == raised else v
            scores.append(v)
        active = p["award"] is not None and not (bridging and p["award"].startswith("BR-"))
        score = Fraction(sum(scores), len(scores)) + (bonus if p["phd"] >= since and not active else 0)
        if not p["gone"]:
            ranked.append((-score, p["amount"], p["no"], pid, p))
    funded, spent, by_dept = [], 0, Counter()
    for negative, amount, _, pid, p in sorted(ranked):
        exempt = p["theme"] is not None and p["theme"] == theme and (theme_max is None or amount <= theme_max)
        if -negative >= floor and amount <= budget - spent and (
                exempt or by_dept[p["dept"]] + amount <= caps.get(p["dept"], cap)):
            funded.append(pid)
            spent += amount
            by_dept[p["dept"]] += 0 if exempt else amount
    return ", ".join(funded)


# ---------------------------------------------------------------- distribution rights


def read_rights(prompt, strict_end=True, ignore=()):
    today = date(re.search(rf"today is ({DATE})\.", prompt)[1])
    asked = re.search(r"Who holds the distribution right in each of these countries today: (.*)\?", prompt)[1]
    groups, agreements, grants, removals, extensions, stops, assignments = {}, {}, [], [], [], [], []
    blocks = prompt.split("\n\n")
    for block in blocks:
        if block.startswith("SCHEDULE OF TERRITORY GROUPS"):
            groups = {g: ts.split(", ") for g, ts in re.findall(r"^  ([\w ]+): (.+)$", block, flags=re.M)}
    for block in blocks:
        if (m := re.search(r"^(\w+) was omitted from the ([\w ]+) group", block, flags=re.M)) and "schedule" not in ignore:
            groups[m[2]].append(m[1])

    regroup = None
    for block in blocks:
        if m := re.search(rf"^With effect from ({DATE}), (\w+) moves from the ([\w ]+) group to the ([\w ]+) group\.",
                          block, flags=re.M):
            regroup = (date(m[1]), m[2], m[3], m[4])
            assert m[2] in groups[m[3]]
    later = {g: [t for t in ts if t != regroup[1]] + ([regroup[1]] if g == regroup[3] else [])
             for g, ts in groups.items()}

    def covers(text, when):
        out = set()
        for name, excluded in re.findall(r"([^,(]+?)(?: \(excluding ([^)]*)\))?(?:, |$)", text):
            members = (later if when >= regroup[0] or "regroup" in ignore else groups).get(name, [name])
            out |= {t for t in members if "carve-out" in ignore or t not in excluded.split(", ")}
        return out

    revoked, withdrawn = set(), set()         # (agreement, date) of revoked amendments and withdrawn notices
    for block in blocks:
        head = re.match(rf"(AMENDMENT TO|WITHDRAWAL OF NOTICE OF TERMINATION of) (DA-\d+).*, dated ({DATE}), "
                        r"(signed by both parties|DRAFT)", block)
        if not head or (head[4] != "signed by both parties" and "signed" not in ignore) or "revocation" in ignore:
            continue
        if m := re.search(rf"The amendment to (DA-\d+) dated ({DATE}) is revoked from the start", block):
            assert m[1] == head[2] and date(m[2]) < date(head[3])
            revoked.add((m[1], date(m[2])))
        if m := re.search(rf"The notice of termination of (DA-\d+) given on ({DATE}) is withdrawn", block):
            assert m[1] == head[2] and date(m[2]) < date(head[3])
            withdrawn.add((m[1], date(m[2])))
    for n, block in enumerate(blocks):
        if m := re.match(rf"AMENDMENT TO (DA-\d+) .*, dated ({DATE}), ", block):
            if (m[1], date(m[2])) in revoked:
                continue
        if m := re.match(r"DISTRIBUTION AGREEMENT (DA-\d+), signed .+? and (.+)\n", block):
            territories, start, end = re.search(rf"catalogue in (.+) from ({DATE}) to ({DATE}) inclusive",
                                                block).groups()
            agreements[m[1]] = {"dist": m[2], "end": date(end), "notice": int(re.search(r"or (\d+) days", block)[1])}
            grants += [(date(start), n, m[1], t) for t in covers(territories, date(start))]
        elif m := re.match(r"AMENDMENT TO (DA-\d+) .*, (signed by both parties|DRAFT)", block):
            if m[2] != "signed by both parties" and "signed" not in ignore:
                continue
            if e := re.search(rf"With effect from ({DATE}), (\w+) is added", block):
                grants.append((date(e[1]), n, m[1], e[2]))
            elif e := re.search(rf"With effect from ({DATE}), (\w+) is removed", block):
                removals.append((m[1], e[2], date(e[1])))
            elif e := re.search(rf"end date in clause 1 is replaced by ({DATE})", block):
                extensions.append((m[1], date(e[1])))
        elif m := re.match(r"DEED OF ASSIGNMENT of (DA-\d+), dated .*, signed by both parties\n(.+?) assigns all",
                           block):
            e = re.search(rf"under DA-\d+ to (.+?) with effect from ({DATE})\.", block)
            holders = [to for a, to, when in assignments if a == m[1]] or [agreements[m[1]]["dist"]]
            assert m[2] == holders[-1], "a deed is made by whoever holds the agreement under the earlier deeds"
            assignments.append((m[1], e[1], date(e[2])))
        elif m := re.match(rf"NOTICE OF TERMINATION under clause 3 of (DA-\d+), given by .+ on ({DATE})", block):
            if (m[1], date(m[2])) in withdrawn:
                continue
            stated = date(re.search(rf"will end on ({DATE})", block)[1])
            notice_end = date(m[2]) + dt.timedelta(agreements[m[1]]["notice"])
            stops.append((m[1], stated if "notice" in ignore else max(stated, notice_end)))

    def holder(territory):
        live = sorted(g for g in grants if g[3] == territory and (g[0] <= today or "future" in ignore))
        for start, _, agreement, _ in reversed(live):
            end = ([agreements[agreement]["end"]] + [e for a, e in extensions if a == agreement])[-1]
            ended = (today > end if strict_end else today >= end) and "expiry" not in ignore
            removed = any(a == agreement and t == territory and start < e <= today for a, t, e in removals)
            stopped = any(a == agreement and (s < today if strict_end else s <= today) for a, s in stops)
            if not (ended or removed or stopped):
                names = [to for a, to, e in assignments if a == agreement and e <= today and "assignment" not in ignore]
                return names[-1] if names else agreements[agreement]["dist"]
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
def test_instances_are_long_in_band_unique_and_deterministic(instances, item_id):
    item = SUITE.item(item_id)
    low, high = item.difficulty.band
    assert generate(SUITE, item, custom_pool(SEEDS[0])) == instances[item_id][0]
    assert len({g.prompt for g in instances[item_id]}) == len(SEEDS)
    for generated in instances[item_id]:
        # 45k-70k tokens at about four characters a token: long context; five items stay inside a run's budget
        assert 180_000 <= len(generated.prompt) <= 280_000
        assert low <= generated.difficulty[item.difficulty.measure] <= high
        assert "ANSWER:" in generated.prompt[-500:]


@pytest.mark.parametrize("item_id", ITEMS)
def test_no_answer_recurs_often(instances, item_id):
    answers = Counter(normalise(g.key.answer, g.key.answer_type) for g in instances[item_id])
    assert answers.most_common(1)[0][1] <= 2


DRIVERS = {"context-inventory-ledger": ("entries", 700), "context-config-rollbacks": ("entries", 800),
           "context-per-diem-memos": ("circulars", 50), "context-grant-panel": ("proposals", 50),
           "context-distribution-rights": ("agreements", 30)}


@pytest.mark.parametrize("item_id", ITEMS)
def test_the_main_driver_raises_the_measured_difficulty(item_id):
    item = SUITE.item(item_id)
    generator = getattr(context, item.generator.split(":")[1])
    name, small = DRIVERS[item_id]

    def median(**drivers):
        return statistics.median(generator(ItemRng(derive_item_key(f"t-driver-{n}", "gi", item_id, 1)),
                                           **{**item.difficulty.drivers, **drivers}).difficulty["decisive_facts"]
                                 for n in range(7))

    assert small < item.difficulty.drivers[name]
    assert median(**{name: small}) < median()


# ---------------------------------------------------------------- the traps change the answer


def test_rights_answers_do_not_depend_on_whether_boundary_days_are_inclusive(instances):
    # Every start, end and termination date lies at least three days from "today", so the reading of a
    # boundary day cannot change a holder: the answer is unique under either convention.
    for generated in instances["context-distribution-rights"]:
        assert read_rights(generated.prompt, strict_end=False) == read_rights(generated.prompt)


def test_rights_traps_change_the_answer(instances):
    # The generator redraws until at least four single-rule misreadings change the answer; the reader can
    # imitate all but the email one, so at least three must differ here.
    for generated in instances["context-distribution-rights"]:
        misreadings = [read_rights(generated.prompt, ignore={trap}) for trap in
                       ("signed", "notice", "future", "revival", "expiry", "schedule", "carve-out", "assignment",
                        "revocation", "regroup")]
        assert sum(m != generated.key.answer for m in misreadings) >= 3


def test_grant_rules_as_clarified_change_the_answer(instances):
    # Reading the call without its clarification notes, or ignoring the minutes' corrections and strikes,
    # gives a different funding list in most instances.
    notes = corrections = 0
    for generated in instances["context-grant-panel"]:
        notes += read_grants(generated.prompt, ignore_notes=True) != generated.key.answer
        naive = re.sub(r"\n\w+: Correction for G-\d+:.*\nCHAIR: Noted\.", "", generated.prompt)
        naive = re.sub(r"\n\w+: Sorry, G-\d+ once more:.*\nCHAIR: Noted;.*", "", naive)
        naive = re.sub(r"\n\w+: I have to declare a conflict.*\nCHAIR: Struck;.*", "", naive)
        naive = re.sub(r"\n\w+: About my conflict on G-\d+:.*\nCHAIR: Then your score.*", "", naive)
        corrections += read_grants(naive) != generated.key.answer
    assert notes >= len(SEEDS) * 3 // 4 and corrections >= len(SEEDS) // 2


def test_inventory_fixes_matter(instances):
    differs = Counter()
    for generated in instances["context-inventory-ledger"]:
        for skip in ("corrections", "voids"):
            differs[skip] += read_inventory(generated.prompt, skip={skip}) != generated.key.answer
    assert differs["corrections"] >= len(SEEDS) * 3 // 4 and differs["voids"] >= len(SEEDS) // 2


def test_per_diem_drafts_withdrawals_and_errata_matter(instances):
    differs = Counter()
    for generated in instances["context-per-diem-memos"]:
        for misread in ("drafts", "withdrawn"):
            differs[misread] += read_per_diem(generated.prompt, misread={misread}) != Fraction(generated.key.answer)
        no_errata = re.sub(r"Subject: (Erratum to|Correction to erratum)", "Subject: Comment on", generated.prompt)
        differs["errata"] += read_per_diem(no_errata) != Fraction(generated.key.answer)
        first_only = re.sub(r"Subject: Correction to erratum", "Subject: Comment on", generated.prompt)
        differs["chain"] += read_per_diem(first_only) != Fraction(generated.key.answer)
        printed_dates = re.sub(r"Subject: Erratum to (TO-\d+-\d+) \(effective date\)", "Subject: Comment on \\1",
                               generated.prompt)
        differs["dates"] += read_per_diem(printed_dates) != Fraction(generated.key.answer)
    assert sum(differs.values()) >= len(SEEDS) * 3 // 2
    assert differs["chain"] >= len(SEEDS) * 3 // 4 and differs["dates"] >= len(SEEDS) // 4


HAND_METHODS = {
    # The idea that makes each instance solvable with pencil and paper in about two hours (and in well under 40k
    # tokens of reasoning): the documents are long and every asked figure rests on a long chain, but the work is a
    # bounded number of lookups once the reader filters the documents by the entities the question names.
    "context-inventory-ledger": "filter the ledger to the target, its look-alike and the retired code, apply fixes "
                                "in place, and restart each asked cell's running total at its last count that no "
                                "VOID cancels",
    "context-config-rollbacks": "read the review findings first, then per asked key walk the log once, tracking only "
                                "the slots of that key at the levels the asked services can reach, noting each "
                                "change's before-state so every ROLLBACK is one lookup and snapshotting at checkpoints",
    "context-per-diem-memos": "tabulate, for each item the trip uses, the live circulars in (corrected) effective-date "
                              "order once, with errata and their corrections applied; each night and day is then a "
                              "lookup in that small table",
    "context-grant-panel": "settle the rules from the notes in issue order first, score each proposal once from its "
                           "own slot plus the late remarks that name it, then run the greedy budget with the two caps "
                           "over the sorted list",
    "context-distribution-rights": "strike revoked documents and withdrawn notices first, then for each asked country "
                                   "list its grants in date order (groups read as the schedule stood on each grant's "
                                   "date) and test only the latest started one against its agreement's later documents",
}


def test_config_review_findings_matter(instances):
    # Ignoring the findings that declare logged changes rejected, or the ones that change logged values, gives a
    # different answer in many instances: the review at the very end must be carried back into the log.
    rejected = values = 0
    for generated in instances["context-config-rollbacks"]:
        rejected += read_config(re.sub(r"\n- C-\d+ is logged as applied, but the deploy tool rejected it.*", "",
                                       generated.prompt)) != generated.key.answer
        values += read_config(re.sub(r"\n- C-\d+ is logged as setting .*", "", generated.prompt)) != generated.key.answer
    assert rejected >= len(SEEDS) // 3 and values >= len(SEEDS) // 3


@pytest.mark.parametrize("item_id", ITEMS)
def test_fairness_the_work_is_bounded_and_every_rule_is_stated(instances, item_id):
    item = SUITE.item(item_id)
    assert len(HAND_METHODS[item_id]) > 40
    for generated in instances[item_id]:
        assert generated.difficulty["context_tokens"] <= 70_000
        assert generated.difficulty["decisive_facts"] <= item.difficulty.band[1]
        # precedence is never left to convention: every prompt states how later documents beat earlier ones
        assert re.search(r"highest entry number wins|ROLLBACK of a ROLLBACK|latest effective date|prevails over "
                         r"the call|does not revive", generated.prompt)
