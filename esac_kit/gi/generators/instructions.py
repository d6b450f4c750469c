"""Instruction following: five tasks whose interacting, parametrized constraints are checked in code."""

from __future__ import annotations

import json

from esac_kit.rng import ItemRng
from esac_kit.schemas import Constraint, ConstraintsKey, Generated

# Common English words the reference responses are built from (sorted, so draws never depend on set order).
BANK = tuple(sorted(set("""
able about above across act add after again age ago air alibi almost alone along also always among animal answer apple
arm army around art ask autumn away baby back bag ball banana band bank barn basket bath beach bean bear bed bee begin
behind bell below belt bench best big bird birth black blade blank blue boat body bone book boot born both bottle
bottom bowl box boy brain branch brave bread brick bridge bright bring broad brook brother brown brush build bulb burn
busy butter button cabin cake calm camp candle canal car card carpet carry cart castle cat catch cattle cave cedar
cellar chain chair chalk chance chapel cheap cheese cherry chest child chili chin choir circle city clay clean clear
cliff climb clock cloth cloud club coal coast coat cold colour comb comic copper cord corn corner cotton count country
cousin cover cow crab craft crisp crop cross crowd crown cup curtain daily damp dance dark dawn day deep deer desk
dinner dish disc distant ditch dog doll door dot dove down dragon drawer dream dress drift drink drop drum dry duck
dust eager eagle early earth east easy echo edge egg eight elbow elder emu empty end engine enough equal even evening
ever every exact eye face fact fair fall family far farm fast father feast feather fence fern ferry few field fig
final find fine finger fire first fish five flag flame flat flock floor flour flower fly fog fold food foot forest
fork form fort forty four fox frame fresh friend frog front frost fruit full fur garden gate gentle ghost giant gift
girl give glad glass glove goat gold good goose gown grain grape grass gravel great green grey ground group grow guard
guest gull guru habit hair half hall hammer hand happy harbour hard harp harvest hat hawk hay head heart heat heavy
hedge hen herb hill hint hold hollow home honey hook hope horn horse host hot hour house hunt hut ice idea idle inch
ink inland inn iron island ivory ivy jacket jam jar jelly jewel job join journey joy judge jug juice jump just kayak
keen keep kettle key kind king kitchen kite kitten kiwi knee knife knock knot know label lace ladder lady lake lamb
lamp land lane large last late laugh lawn lead leaf lean learn leather left lemon letter level lid light lily lime
line linen lion lip list little live load loaf local lock log long loom lord loud love low lucky lunch machine magic
maid mail main maker many map maple march market marsh mask mast meadow meal meat melon menu metal middle milk mill
mind mint mirror mist model moon morning moss mother motor mound mount mouse mouth mud mule music nail name narrow
navy near neat neck needle nest net never new next night nine noble noise noon north nose note novel number nurse nut
oak oar oat ocean odd offer office oil old olive once onion open opera orange orchard order other otter oven over owl
own pail paint pair palace pale palm pan panda panic paper parcel park part party past path peach pear pen pencil
people pepper piano picnic pie pig pillow pin pine pink pipe plain plan plant plate play plum pocket poem point pond
pony pool poor porch port post pot potato powder proud pump pupil purple quarter queen quick quiet quill quilt quiz
rabbit radio rain raven reach read ready red reed ring ripe river road robin rock roof room root rope rose rough round
row royal ruby rug ruler run rust sack saddle safe safari sail salt sand satin saw scarf school sea seal season seed
shade shadow sharp sheep shelf shell ship shirt shoe shop short shore silk silver simple sing sister ski sky sleep
slow small smoke snail snow soap sofa soft soil song soup south spade spark spoon spring square stable stage stair
star steam steel stem step stick still stone storm story stove straw stream street string strong sugar summer sun
supper swan sweet swift table tail tall tame taxi tea teacher tent thick thin thread three throne thumb tide tiger
timber tin tiny toast today toe tofu tomato tongue tool tooth top torch tower town toy track train tray tree trout
true trumpet trunk tuba tulip tuna tune turn twig two umbrella uncle under unit upper urban useful usual valley van
vase velvet very vessel view village vine violet visit voice vowel wagon waist walk wall walnut waltz warm wash watch
water wave wax way weak weather web week well west wet whale wheat wheel whistle white wide wild willow wind window
wing winter wire wise wish wolf wood wool word work world worm write yard yarn year yellow yes young zebra zero zinc
zone balcony bicycle blanket blizzard blossom cabinet calendar carnival chestnut chimney compass daylight diamond
dolphin doorway elephant emerald envelope festival fireplace goldfish granite harmony horizon hospital iceberg journal
kingdom ladybird landmark lantern lavender library lobster magazine midnight mountain mushroom mustard notebook
overcoat painting pancake passport peacock picture pilgrim platform porridge pumpkin question rainbow sandwich
shipyard shoulder skeleton snowflake spinach sparrow squirrel starlight sunflower teaspoon thimble thunder tortoise
treasure triangle uniform vineyard volcano waterfall whisper wildlife windmill woodland workshop yesterday
""".split())))

ACROSTICS = ("harvest", "lantern", "meadow", "orchard", "compass", "blanket", "thunder", "pilgrim", "granite",
             "mustard", "cobbler", "feather", "monsoon", "dolphin", "sparrow", "whisper", "chimney", "lobster",
             "marble", "pebble", "candle", "silver", "winter", "garden", "castle", "market", "bridge", "forest",
             "island", "window", "pocket", "basket", "kettle", "copper", "timber", "velvet", "anchor", "walnut",
             "fabric", "hunter", "gravel", "saddle", "turnip", "violin", "rocket", "planet", "sunset", "mirror",
             "pirate", "lizard", "tablet", "falcon", "blossom", "cabinet", "diamond", "emerald", "lighthouse",
             "mountain", "shoulder", "triangle", "umbrella", "paradise", "kingdom", "butterfly", "harmony", "treasure",
             "painting", "symphony")

WORD_RULE = ("Counting rules: a *word* is a maximal run of the letters A-Z or a-z; every other character "
             "(space, digit, punctuation, apostrophe, hyphen) separates words, so `don't` counts as two words "
             "and `3.5` as none. Letters are counted case-insensitively, and a required word counts only as an "
             "exact whole word in any case (`lanterns` is not an occurrence of `lantern`).")
COMMON = "etaoinsrlhdcu"


def _key(gate: list[tuple[str, str, dict, str]], rest: list[tuple[str, str, dict, str]]) -> ConstraintsKey:
    def make(rows):
        return [Constraint(id=i, check=c, params=p, description=d) for i, c, p, d in rows]
    return ConstraintsKey(gate=make(gate), constraints=make(rest))


def _listing(rows: list[tuple[str, str, dict, str]]) -> str:
    return "\n".join(f"{n}. {d}" for n, (_, _, _, d) in enumerate(rows, 1))


def acrostic_poem(rng: ItemRng) -> Generated:
    """An acrostic poem with set words per line, end letters chained to starts, a banned letter and keyword quotas."""
    while True:
        banned = rng.choice(COMMON[:10])
        word = rng.choice([w for w in ACROSTICS if banned not in w])
        keys = rng.sample([w for w in BANK if banned not in w and len(w) >= 4], 2)
        fill = [w for w in BANK if banned not in w and w not in keys]
        starts = {c: [w for w in fill if w[0] == c] for c in dict.fromkeys(word)}
        ends = {c: [w for w in fill if w[-1] == c] for c in dict.fromkeys(word[1:])}
        if all(starts.values()) and all(ends.values()):
            break
    n = len(word)
    counts = [rng.randint(4, 9) for _ in range(n)]
    quota = [rng.randint(2, 3), rng.randint(1, 2)]
    slots = rng.sample(range(n), sum(quota))
    lines = []
    for i in range(n):
        line = [rng.choice(fill) for _ in range(counts[i])]
        line[0] = rng.choice(starts[word[i]]).capitalize()
        if i < n - 1:
            line[-1] = rng.choice(ends[word[i + 1]])
        if i in slots:
            line[1] = keys[0] if slots.index(i) < quota[0] else keys[1]
        lines.append(" ".join(line) + ("," if i < n - 1 else "."))
    poem = "\n".join(lines)
    letter = rng.choice([c for c in COMMON if c != banned and c in poem.lower()])
    total = poem.lower().count(letter)
    b = {"begin": "BEGIN POEM", "end": "END POEM"}
    per_line = ", ".join(f"line {i + 1}: {c}" for i, c in enumerate(counts))
    gate = [("lines", "block_line_count", {**b, "lines": n},
             f"The poem has exactly {n} non-empty lines between the marker lines.")]
    rest = [("acrostic", "line_initials", {**b, "letters": word},
             f"Acrostic: the first letters of the lines' first words, top to bottom, spell {word.upper()}."),
            ("counts", "line_word_counts", {**b, "counts": counts}, f"Exact words per line: {per_line}."),
            ("chain", "line_end_chain", b, "Every line except the last ends with a word whose last letter is "
             "the first letter of the next line's first word."),
            ("lipogram", "absent_letters", {**b, "letters": banned},
             f"The letter '{banned}' appears nowhere in the poem, in either case."),
            ("key1", "word_count", {**b, "word": keys[0], "count": quota[0]},
             f"The word '{keys[0]}' appears exactly {quota[0]} times."),
            ("key2", "word_count", {**b, "word": keys[1], "count": quota[1]},
             f"The word '{keys[1]}' appears exactly {quota[1]} times."),
            ("letters", "letter_count", {**b, "letter": letter, "count": total},
             f"The letter '{letter}' appears exactly {total} times in the poem (both cases counted).")]
    prompt = (f"Write a poem of exactly {n} lines. Put a line reading exactly `BEGIN POEM` before it and a line "
              f"reading exactly `END POEM` after it; only the non-empty lines between the markers are checked, and "
              f"nothing else may appear between them.\n\n{WORD_RULE}\n\nThe poem must satisfy all of these:\n"
              f"{_listing(gate + rest)}\n\nScore: the share of constraints 2-{len(rest) + 1} you meet, and 0 if "
              f"constraint 1 fails.")
    return Generated(prompt=prompt, key=_key(gate, rest), reference=f"BEGIN POEM\n{poem}\nEND POEM")


def sentence_ladder(rng: ItemRng) -> Generated:
    """A paragraph whose sentences follow a word-count sequence, with set end marks, keyword slots and capitals."""
    n = rng.randint(6, 8)
    counts = [rng.randint(4, 15) for _ in range(n)]
    longest = rng.randint(5, 7)
    keyword = rng.choice([w for w in BANK if 4 <= len(w) <= longest])
    fill = [w for w in BANK if len(w) <= longest and w != keyword]
    marks = ["."] * n
    for position in rng.sample(range(n), rng.randint(2, 3)):
        marks[position] = rng.choice("?!")
    slots = sorted(rng.sample(range(n), rng.randint(2, 3)))
    extra = rng.randint(-2, 3)  # capitalised words beyond one per sentence; negative means lower-case openings
    sentences = []
    for i in range(n):
        text = [rng.choice(fill) for _ in range(counts[i])]
        if i in slots:
            text[rng.randrange(1, counts[i])] = keyword
        text[0] = text[0].capitalize() if i >= -extra else text[0]
        if i < extra:
            middle = rng.randrange(1, counts[i])
            text[middle] = text[middle].capitalize()
        sentences.append(" ".join(text) + marks[i])
    paragraph = " ".join(sentences)
    letter = rng.choice([c for c in COMMON if c in paragraph.lower()])
    total = paragraph.lower().count(letter)
    b = {"begin": "BEGIN TEXT", "end": "END TEXT"}
    gate = [("present", "block_has_words", b, "The text between the marker lines contains at least one word.")]
    rest = [("lengths", "sentence_word_counts", {**b, "counts": counts},
             f"It has exactly {n} sentences, whose word counts in order are {', '.join(map(str, counts))}."),
            ("marks", "sentence_endings", {**b, "endings": "".join(marks)},
             "The sentences end, in order, with: " + " ".join(f"`{m}`" for m in marks) + "."),
            ("keyword", "word_in_sentences", {**b, "word": keyword, "sentences": [s + 1 for s in slots]},
             f"The word '{keyword}' appears exactly once in each of sentences "
             f"{', '.join(str(s + 1) for s in slots[:-1])} and {slots[-1] + 1}, and in no other sentence."),
            ("capitals", "capitalised_words", {**b, "count": n + extra},
             f"Exactly {n + extra} words begin with an upper-case letter."),
            ("short", "max_word_length", {**b, "letters": longest}, f"No word has more than {longest} letters."),
            ("letters", "letter_count", {**b, "letter": letter, "count": total},
             f"The letter '{letter}' appears exactly {total} times (both cases counted).")]
    prompt = ("Write one paragraph of prose. Put a line reading exactly `BEGIN TEXT` before it and a line reading "
              "exactly `END TEXT` after it; only the text between the markers is checked.\n\n"
              f"{WORD_RULE} A *sentence* is a stretch of text ending with `.`, `?` or `!`; these three characters "
              "count as sentence ends wherever they occur (so use no abbreviations, decimals or ellipses), and any "
              "words after the last of them form one more sentence.\n\nThe paragraph must satisfy all of these:\n"
              f"{_listing(gate + rest)}\n\nScore: the share of constraints 2-{len(rest) + 1} you meet, and 0 if "
              "constraint 1 fails.")
    return Generated(prompt=prompt, key=_key(gate, rest), reference=f"BEGIN TEXT\n{paragraph}\nEND TEXT")


def json_record(rng: ItemRng) -> Generated:
    """A JSON object with exact keys whose values must agree with one another (lengths, ranks, letter tallies)."""
    names = {"list": rng.choice(["members", "crew", "roster", "entries", "names"]),
             "total": rng.choice(["letter_total", "tally", "size", "weight"]),
             "text": rng.choice(["motto", "slogan", "caption", "summary"]),
             "ranks": rng.choice(["ranks", "order", "positions", "index"]),
             "tally": rng.choice(["checksum", "signal", "score", "mark"])}
    keys = list(names.values())
    rng.shuffle(keys)
    banned = rng.choice(COMMON[:9])
    count, length = rng.randint(4, 6), rng.randint(9, 16)
    pool = [w for w in BANK if banned not in w]
    while True:  # one word per drawn length, so lengths strictly increase; redraw until the initials differ
        sizes = sorted(rng.sample(range(3, 10), count))
        listed = [rng.choice([w for w in pool if len(w) == size] or [""]) for size in sizes]
        if all(listed) and len({w[0] for w in listed}) == count:
            break
    text = [rng.choice([w for w in pool if w not in listed]) for _ in range(length - count)]
    for position, w in zip(sorted(rng.sample(range(length), count)), listed):
        text.insert(position, w)
    sentence = " ".join(text).capitalize() + "."
    letters = "".join(sorted(rng.sample([c for c in COMMON if c != banned], 2)))
    value = {names["list"]: listed, names["total"]: sum(sizes), names["text"]: sentence,
             names["ranks"]: {w: i + 1 for i, w in enumerate(sorted(listed))},
             names["tally"]: sum(c in letters for c in sentence.lower())}
    body = "{\n" + ",\n".join(f'  "{k}": {json.dumps(value[k])}' for k in keys) + "\n}"
    L, T = f"`{names['list']}`", f"`{names['text']}`"
    gate = [("json", "json_present", {}, "The response contains a ```json fenced block holding one JSON object.")]
    rest = [("keys", "json_keys", {"keys": keys}, "The object has exactly these keys, in this order: "
             + ", ".join(f"`{k}`" for k in keys) + "."),
            ("list", "json_word_list", {"key": names["list"], "count": count},
             f"{L} is a list of exactly {count} strings, each a single lower-case word, strictly increasing in "
             "length, no two starting with the same letter."),
            ("total", "json_letter_total", {"key": names["total"], "list_key": names["list"]},
             f"`{names['total']}` is an integer equal to the total number of letters in the words of {L}."),
            ("text", "json_sentence", {"key": names["text"], "list_key": names["list"], "words": length},
             f"{T} is a string of exactly {length} words that contains every word of {L} exactly once, "
             f"in the same order as in {L}."),
            ("ranks", "json_ranks", {"key": names["ranks"], "list_key": names["list"]},
             f"`{names['ranks']}` is an object whose keys are exactly the words of {L} and whose values are "
             "integers: each word's 1-based position in alphabetical order."),
            ("tally", "json_letter_tally", {"key": names["tally"], "text_key": names["text"], "letters": letters},
             f"`{names['tally']}` is an integer equal to the number of letters in {T} that are "
             f"'{letters[0]}' or '{letters[1]}' (both cases counted)."),
            ("lipogram", "json_absent_letters", {"letters": banned},
             f"No string value, and no key of a nested object, contains the letter '{banned}' in either case "
             "(the top-level keys above are exempt).")]
    prompt = ("Produce one JSON object in a fenced code block that opens with ```json and closes with ```; if you "
              "write several such blocks only the last is checked. It must parse as standard JSON.\n\n"
              f"{WORD_RULE}\n\nRequirements:\n{_listing(gate + rest)}\n\nScore: the share of requirements "
              f"2-{len(rest) + 1} you meet, and 0 if requirement 1 fails.")
    return Generated(prompt=prompt, key=_key(gate, rest), reference=f"```json\n{body}\n```")


def outline(rng: ItemRng) -> Generated:
    """A two-level outline: item lengths follow a formula in (i, j), initials follow headings, one keyword a section."""
    banned = rng.choice(COMMON[:10])
    pool = [w for w in BANK if banned not in w]
    keyword = rng.choice([w for w in pool if len(w) >= 4])
    pool.remove(keyword)
    sizes = [rng.randint(2, 4) for _ in range(rng.randint(3, 5))]
    order = rng.choice(["ascending", "descending"])
    while True:
        headings = sorted(rng.sample(pool, len(sizes)), reverse=order == "descending")
        if len({h[0] for h in headings}) == len(headings):  # distinct initials keep the alphabetical order strict
            break
    a, b = rng.choice([-1, 1, 2]), rng.choice([-1, 1, 2])
    low = min(a * i + b * j for i, n in enumerate(sizes, 1) for j in range(1, n + 1))
    c = 3 - low + rng.randint(0, 3)
    lines = []
    for i, (heading, n) in enumerate(zip(headings, sizes), 1):
        lines.append(f"{i}. {heading.upper()}")
        starters = [w for w in pool if w[0] == heading[0]]
        home = rng.randint(1, n)
        for j in range(1, n + 1):
            text = [rng.choice(starters).capitalize()] + [rng.choice(pool) for _ in range(a * i + b * j + c - 1)]
            if j == home:
                text[rng.randrange(1, len(text))] = keyword
            lines.append(f"{i}.{j} {' '.join(text)}{'?' if j == n else '.'}")
    formula = _linear([(a, "i"), (b, "j"), (c, "")])
    shape = "; ".join(f"section {i} has {n} items" for i, n in enumerate(sizes, 1))
    b_ = {"begin": "BEGIN OUTLINE", "end": "END OUTLINE"}
    gate = [("form", "outline_wellformed", b_, "Between the markers, every non-empty line is a heading line or an "
             "item line as defined above, and the first one is a heading line.")]
    rest = [("shape", "outline_shape", {**b_, "items": sizes}, f"There are exactly {len(sizes)} sections, numbered "
             f"1, 2, ... in order, and the items of section i are numbered i.1, i.2, ... in order: {shape}."),
            ("headings", "outline_headings", {**b_, "order": order}, "Every heading is a single word in capital "
             f"letters, and the headings read top to bottom are in strictly {order} alphabetical order."),
            ("words", "outline_item_words", {**b_, "a": a, "b": b, "c": c},
             f"Item i.j has exactly {formula} words (the label `i.j` itself contains no words)."),
            ("initials", "outline_item_initials", b_,
             "The first word of every item begins with the same letter as its section's heading."),
            ("keyword", "outline_word_per_section", {**b_, "word": keyword},
             f"The word '{keyword}' appears exactly once in the items of each section and never in a heading."),
            ("endings", "outline_item_endings", b_,
             "The last item of each section ends with `?`; every other item ends with `.`."),
            ("lipogram", "absent_letters", {**b_, "letters": banned},
             f"The letter '{banned}' appears nowhere in the outline, in either case.")]
    prompt = ("Write a two-level numbered outline. Put a line reading exactly `BEGIN OUTLINE` before it and a line "
              "reading exactly `END OUTLINE` after it. A *heading line* is `<i>. <heading>` (a section number, a "
              "full stop, a space, the heading); an *item line* is `<i>.<j> <text>` (section number, full stop, "
              "item number, a space, the text). Each item is on one line; blank lines are ignored.\n\n"
              f"{WORD_RULE}\n\nThe outline must satisfy all of these:\n{_listing(gate + rest)}\n\nScore: the share "
              f"of constraints 2-{len(rest) + 1} you meet, and 0 if constraint 1 fails.")
    return Generated(prompt=prompt, key=_key(gate, rest),
                     reference="BEGIN OUTLINE\n" + "\n".join(lines) + "\nEND OUTLINE")


def scored_table(rng: ItemRng) -> Generated:
    """A markdown table whose cells must agree across columns: sums, orderings, derived codes, lengths and a keyword."""
    roles = {"name": rng.choice(["Name", "Label", "Title", "Alias"]),
             "number": rng.choice(["Score", "Points", "Units", "Weight"]),
             "code": rng.choice(["Code", "Tag", "Key", "Ref"]),
             "note": rng.choice(["Note", "Remark", "Comment", "Memo"])}
    columns = list(roles.values())
    rng.shuffle(columns)
    role_of = {column: role for role, column in roles.items()}
    n, factor, banned = rng.randint(5, 8), rng.randint(3, 9), rng.choice(COMMON[:10])
    pool = [w for w in BANK if banned not in w]
    keyword = rng.choice([w for w in pool if len(w) >= 4])
    pool.remove(keyword)
    numbers = sorted(rng.sample(range(2, 100), n), reverse=True)
    marked = rng.sample(range(n), rng.randint(2, n - 2))
    rows = []
    for r, value in enumerate(numbers):
        label = rng.choice([w for w in pool if len(w) >= 3])
        remark = [rng.choice(pool) for _ in range(len(label))]
        if r in marked:
            remark[rng.randrange(len(remark))] = keyword
        cells = {"name": label.capitalize(), "number": str(value), "note": " ".join(remark).capitalize(),
                 "code": f"{label[0].upper()}{label[-1].upper()}-{value * factor}"}
        rows.append("| " + " | ".join(cells[role_of[column]] for column in columns) + " |")
    header = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns)
    name, number, code, note = (roles[k] for k in ("name", "number", "code", "note"))  # column titles
    t = {"columns": columns}
    gate = [("header", "table_header", t, "The response contains a markdown table whose header row is exactly `"
             + "| " + " | ".join(columns) + " |` followed by a separator row such as `|---|---|---|---|`.")]
    rest = [("rows", "table_row_count", {**t, "rows": n}, f"The table has exactly {n} data rows, each with "
             f"exactly {len(columns)} cells."),
            ("numbers", "table_descending_total", {**t, "column": number, "total": sum(numbers)},
             f"Every {number} cell is a positive whole number written in plain digits; the {number} values "
             f"strictly decrease from top to bottom and add up to exactly {sum(numbers)}."),
            ("lengths", "table_name_length", {**t, "name": name, "note": note}, f"Every {name} cell is a single "
             f"word, and its number of letters equals the number of words in the same row's {note} cell."),
            ("codes", "table_code", {**t, "name": name, "number": number, "code": code, "factor": factor},
             f"Every {code} cell is the first and last letters of the row's {name} in capitals, a hyphen, then "
             f"the row's {number} multiplied by {factor} (for example `TK-{12 * factor}` for {name} `Truck`, "
             f"{number} 12)."),
            ("keyword", "table_word_rows", {**t, "note": note, "word": keyword, "rows": len(marked)},
             f"The word '{keyword}' appears in exactly {len(marked)} of the {note} cells, once in each of them, "
             "and in no other cell."),
            ("lipogram", "table_absent_letters", {**t, "letters": banned},
             f"The letter '{banned}' appears in no data cell, in either case.")]
    prompt = ("Produce a markdown table (a header row, a separator row, then one row per line, every row starting "
              "and ending with `|`). If several tables with the header below appear, only the last is checked; its "
              "data rows are the consecutive `|` lines after its separator.\n\n"
              f"{WORD_RULE}\n\nRequirements:\n{_listing(gate + rest)}\n\nScore: the share of requirements "
              f"2-{len(rest) + 1} you meet, and 0 if requirement 1 fails.")
    return Generated(prompt=prompt, key=_key(gate, rest), reference=header + "\n" + "\n".join(rows))


def _linear(terms: list[tuple[int, str]]) -> str:
    """Render a linear formula such as `2×i − j + 3`."""
    out = ""
    for coefficient, name in terms:
        if coefficient == 0:
            continue
        size = abs(coefficient)
        body = name if size == 1 and name else f"{size}×{name}" if name else str(size)
        out += (f" {'−' if coefficient < 0 else '+'} " if out else "−" if coefficient < 0 else "") + body
    return out or "0"
