"""Instruction following (GI 2.0): long documents whose checked constraints interlock, so one slip breaks several."""

from __future__ import annotations

import json
from collections import Counter

from esac_kit.gi.constraints import constraint_met
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

WORD_RULE = ("Counting rules: a *word* is a maximal run of the letters A-Z or a-z; every other character (space, "
             "digit, punctuation, apostrophe, hyphen) separates words, so `don't` counts as two words and `3.5` as "
             "none. A *number* is a maximal run of the digits 0-9, written in plain digits; numbers are not words and "
             "add nothing to any word count. Letters are matched case-insensitively, and a required word counts only "
             "as an exact whole word in any case (`lanterns` is not an occurrence of `lantern`).")
SENTENCE_RULE = ("A *sentence* is a stretch of text ending with `.`, `?` or `!`; these three characters end a sentence "
                 "wherever they occur (so use no abbreviations, decimals or ellipses), and any words after the last of "
                 "them form one more sentence, with no end mark.")
BANNED = "taoinsrlhd"  # letters common enough that leaving one out of a long text needs constant attention
INITIALS = "abcdfghlmnprstw"  # letters that start plenty of words


def _group_rule(name: str) -> str:
    return (f"A *{name}* is a run of consecutive non-empty lines between the markers; {name}s are separated by one or "
            "more blank lines.")


def _pool(banned: str, exclude: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The bank's words without the banned letters and without the excluded words, in bank order."""
    return [w for w in BANK if banned not in w and w not in exclude]


def _by(pool: list[str], position: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for w in pool:
        out.setdefault(w[position], []).append(w)
    return out


def _key(gate: list[tuple[str, str, dict, str]], rest: list[tuple[str, str, dict, str]]) -> ConstraintsKey:
    def make(rows):
        return [Constraint(id=i, check=c, params=p, description=d) for i, c, p, d in rows]
    return ConstraintsKey(gate=make(gate), constraints=make(rest))


def _listing(rows: list[tuple[str, str, dict, str]]) -> str:
    return "\n".join(f"{n}. {d}" for n, (_, _, _, d) in enumerate(rows, 1))


def _score_line(gate: list, rest: list, noun: str = "constraints") -> str:
    first = len(gate) + 1
    gates = "constraint 1 fails" if len(gate) == 1 else f"any of constraints 1-{len(gate)} fails"
    return f"Score: the share of {noun} {first}-{len(gate) + len(rest)} you meet, and 0 if {gates}."


def interactions(governs: dict[str, set]) -> int:
    """Pairs of constraints that govern the same text unit, summed over units (a unit governed by k constraints
    adds k(k-1)/2): the size of the coupled structure a response has to get right all at once. A constraint governs
    the units (sentences, lines, items, headings) its rule makes a demand of, as the prompt states it: a global
    lexical rule governs every unit, a citation the units it cites and the one that carries it."""
    per_unit = Counter(unit for units in governs.values() for unit in set(units))
    return sum(k * (k - 1) // 2 for k in per_unit.values())


def cascade(key: ConstraintsKey, slips: list[str]) -> int:
    """Constraints broken by each single slip of the reference (one word too many in one unit), summed over the slips:
    how far one local error spreads through the coupled constraints, measured with the checks themselves."""
    return sum(not constraint_met(c, slip) for slip in slips for c in key.constraints)


def _letters(rng: ItemRng, n: int, allowed: list[str]) -> list[str]:
    """n letters from `allowed`, no two neighbours equal."""
    out: list[str] = []
    while len(out) < n:
        letter = rng.choice(allowed)
        if not out or letter != out[-1]:
            out.append(letter)
    return out


def _place(rng: ItemRng, tokens: list[str], free: list[int], word: str) -> None:
    """Put `word` at one of the free positions of a sentence's tokens, which is then no longer free."""
    spot = rng.choice(free)
    tokens[spot] = word
    free.remove(spot)


# ---------------------------------------------------------------- the sentence ladder essay


def sentence_ladder(rng: ItemRng, *, paragraphs: int, sentences: int, shortest: int) -> Generated:
    """An essay whose sentence lengths follow a formula in (paragraph, sentence), whose end marks and keyword follow
    the lengths, whose paragraphs cite the previous paragraph's word count, under initials, tags and a lipogram."""
    P = paragraphs
    banned = rng.choice(BANNED)
    pool = _pool(banned)
    keyword = rng.choice([w for w in pool if 4 <= len(w) <= 7])
    pool.remove(keyword)
    starts = _by(pool, 0)
    letters = _letters(rng, P, [c for c in INITIALS if c != banned and len(starts.get(c, [])) >= 6])
    while True:
        counts = [rng.randint(3, sentences) for _ in range(P)]
        a, b = rng.choice([1, 2]), rng.choice([-2, -1, 1, 2])
        grid = [(k, j) for k in range(1, P + 1) for j in range(1, counts[k - 1] + 1)]
        c = shortest - min(a * k + b * j for k, j in grid) + rng.randint(0, 2)
        length = {(k, j): a * k + b * j + c for k, j in grid}
        options = [m for m in (3, 4, 5) if 3 <= sum(n % m == 0 for n in length.values()) <= len(grid) // 2]
        if options:
            break
    m = rng.choice(options)
    tags = [t.upper() for t in sorted(rng.sample([w for w in pool if len(w) >= 3], P))]
    totals = [sum(length[(k, j)] for j in range(1, counts[k - 1] + 1)) for k in range(1, P + 1)]
    body = []
    for k in range(1, P + 1):
        n, tag_at, texts = counts[k - 1], rng.randint(1, counts[k - 1]), []
        for j in range(1, n + 1):
            size = length[(k, j)]
            tokens = [rng.choice(starts[letters[k - 1]]).capitalize()] + [rng.choice(pool) for _ in range(size - 1)]
            free = list(range(1, size))
            if size % m == 0:
                _place(rng, tokens, free, keyword)
            if j == tag_at:
                _place(rng, tokens, free, tags[k - 1])
            cited = totals[k - 2] if k >= 2 and j == 1 else sum(totals) if k == P and j == n else None
            if cited is not None:
                tokens.insert(rng.randint(1, len(tokens)), str(cited))
            texts.append(" ".join(tokens) + ("?" if size % m == 0 else "."))
        body.append(" ".join(texts))
    k0, j0 = rng.choice(grid)
    formula = _linear([(a, "k"), (b, "j"), (c, "")])
    bl = {"begin": "BEGIN ESSAY", "end": "END ESSAY"}
    gate = [("paragraphs", "paragraph_count", {**bl, "count": P}, f"The essay has exactly {P} paragraphs.")]
    rest = [("sentences", "paragraph_sentence_counts", {**bl, "counts": counts},
             "The paragraphs have exactly these numbers of sentences, in order: " + ", ".join(map(str, counts)) + "."),
            ("lengths", "sentence_length_formula", {**bl, "a": a, "b": b, "c": c, "paragraphs": P},
             f"Sentence j of paragraph k has exactly {formula} words (so sentence {j0} of paragraph {k0} has "
             f"{length[(k0, j0)]} words)."),
            ("marks", "end_mark_by_length", {**bl, "m": m}, f"A sentence whose number of words is a multiple of {m} "
             "ends with `?`; every other sentence ends with `.`; `!` is never used."),
            ("initials", "paragraph_sentence_initials", {**bl, "letters": "".join(letters)},
             "The first word of every sentence of paragraph k begins with the k-th of these letters: "
             + ", ".join(x.upper() for x in letters) + "."),
            ("lipogram", "absent_letters", {**bl, "letters": banned},
             f"The letter '{banned}' appears nowhere in the essay, in either case."),
            ("keyword", "word_in_length_multiples", {**bl, "word": keyword, "m": m},
             f"The word '{keyword}' occurs exactly once in every sentence whose number of words is a multiple of {m}, "
             "and in no other sentence."),
            ("citations", "paragraph_citations", bl, f"For every k from 2 to {P}, the first sentence of paragraph k "
             "contains exactly one number, equal to the number of words in paragraph k−1. Apart from these and the "
             "number the next constraint asks for, the essay contains no digits."),
            ("total", "total_citation", bl, "The last sentence of the essay contains exactly one number, equal to the "
             "total number of words in the essay."),
            ("tags", "paragraph_caps_tags", bl, "Each paragraph contains exactly one word of two or more letters "
             "written entirely in capital letters (its tag), and the tags of paragraphs 1, 2, 3, ... are in strictly "
             "ascending alphabetical order.")]
    units = set(grid)
    governs = {"sentences": units, "lengths": units, "marks": units, "initials": units, "lipogram": units,
               "tags": units, "total": units, "keyword": {u for u in units if length[u] % m == 0},
               "citations": {(k, j) for k, j in units if k < P or j == 1}}
    prompt = (f"Write an essay of exactly {P} paragraphs on a subject of your choice. Put a line reading exactly "
              "`BEGIN ESSAY` before it and a line reading exactly `END ESSAY` after it; only the text between the two "
              f"marker lines is checked.\n\n{_group_rule('paragraph')} {WORD_RULE} {SENTENCE_RULE} Paragraphs are "
              "numbered from 1 at the top, and sentences from 1 within their own paragraph; a sentence never runs "
              f"from one paragraph into the next.\n\nThe essay must satisfy all of these:\n{_listing(gate + rest)}"
              f"\n\n{_score_line(gate, rest)}")
    reference = "BEGIN ESSAY\n" + "\n\n".join(body) + "\nEND ESSAY"
    return Generated(prompt=prompt, key=_key(gate, rest), reference=reference,
                     difficulty={"interactions": interactions(governs), "sentences": len(grid),
                                 "words": sum(totals)})
# ---------------------------------------------------------------- the stanza acrostic poem


def _ascending_ends(rng: ItemRng, options: list[list[str]]) -> list[str] | None:
    """One word per slot from its options, strictly ascending; None when the random greedy pick runs dry."""
    chosen, previous = [], ""
    for slot, words_ in enumerate(options):
        later = sorted(w for w in words_ if w > previous)
        if not later:
            return None
        room = max(1, len(later) // (len(options) - slot + 1))  # keep room for the slots still to come
        chosen.append(rng.choice(later[:room]))
        previous = chosen[-1]
    return chosen


def _poem_lines(rng: ItemRng, acrostic: list[str], finals: list[str], refrain: str, pool: list[str],
                starts: dict[str, list[str]], ends: dict[str, list[str]], limit: int, d: int) -> list[list[str]] | None:
    """The stanzas' lines: acrostic initials, chained ends, the refrain in last lines, each word at most `limit`
    times; None when some letter runs out of unused words."""
    letters, used = "".join(acrostic), Counter({w: 1 for w in finals})

    def take(options: list[str]) -> str | None:
        for _ in range(30):  # rejection keeps it fast; the bank is far larger than any poem
            word = rng.choice(options)
            if used[word] < limit:
                used[word] += 1
                return word
        fresh = [w for w in options if used[w] < limit]
        if not fresh:
            return None
        used[fresh[0]] += 1
        return fresh[0]

    lines, position = [], 0
    for k, word in enumerate(acrostic):
        n, stanza = len(word), []
        for j in range(1, n + 1):
            size = n + j - d
            tokens = [take(starts[letters[position]])] + [take(pool) for _ in range(size - 2)] \
                + [finals[k] if j == n else take(ends[letters[position + 1]])]
            if None in tokens:
                return None
            if j == n:
                tokens[n - 1] = refrain  # the n-th word of the last line (1 <= n-1 <= size-2 as d <= 1 < n)
            tokens[0] = tokens[0].capitalize()
            stanza.append(" ".join(tokens) + ("." if j == n else ","))
            position += 1
        lines.append(stanza)
    return lines


def acrostic_poem(rng: ItemRng, *, stanzas: int, longest: int) -> Generated:
    """A poem of acrostic stanzas whose line lengths follow the stanza's size, whose line ends chain into the next
    line's initial, with ascending stanza ends, a refrain, a repetition limit, a lipogram and a word-count footer."""
    S = stanzas
    while True:
        banned, limit, d = rng.choice(BANNED), rng.choice([2, 3]), rng.choice([-2, -1, 0, 1])
        pool = _pool(banned)
        refrain = rng.choice([w for w in pool if 4 <= len(w) <= 7])
        pool.remove(refrain)
        starts, ends = _by(pool, 0), _by(pool, -1)
        good = {x for x in starts if len(starts[x]) >= 4 and len(ends.get(x, [])) >= 3}
        candidates = [w for w in pool if 4 <= len(w) <= longest and set(w) <= good]
        if len(candidates) < S:
            continue
        acrostic = rng.sample(candidates, S)
        finals = _ascending_ends(rng, [ends[w[0]] for w in acrostic[1:]] + [pool])
        if finals is None:
            continue
        lines = _poem_lines(rng, acrostic, finals, refrain, pool, starts, ends, limit, d)
        if lines is not None:  # None: some letter ran out of fresh words under the repetition limit
            break
    counts = [sum(len(line.split()) for line in stanza) for stanza in lines]
    b = {"begin": "BEGIN POEM", "end": "END POEM"}
    rule = _linear([(1, "n"), (1, "j"), (-d, "")])
    gate = [("stanzas", "paragraph_count", {**b, "count": S}, f"The poem has exactly {S} stanzas.")]
    rest = [("acrostic", "stanza_acrostics", {**b, "words": acrostic},
             "Stanza k is an acrostic of the k-th of these words: the first letters of its lines' first words, top "
             "to bottom, spell the word, one line per letter: " + ", ".join(w.upper() for w in acrostic) + "."),
            ("lengths", "stanza_line_lengths", {**b, "d": d, "stanzas": S},
             f"Line j of a stanza that has n lines has exactly {rule} words (so line 1 of a 5-line stanza has "
             f"{6 - d} words)."),
            ("chain", "line_end_chain", b, "Every line except the poem's last ends with a word whose last letter is "
             "the first letter of the next line's first word (the next line may open the next stanza)."),
            ("ascending", "stanza_last_words_ascending", b, "The last words of the stanzas' last lines, from stanza 1 "
             f"to stanza {S}, are in strictly ascending alphabetical order."),
            ("refrain", "word_at_stanza_position", {**b, "word": refrain},
             f"The word '{refrain}' occurs exactly once in the last line of every stanza, as that line's n-th word "
             "where n is the stanza's number of lines, and in no other line."),
            ("repeats", "max_repeats", {**b, "limit": limit, "except": [refrain]},
             f"No word other than '{refrain}' occurs more than {limit} times in the whole poem (`The` and `the` are "
             "the same word)."),
            ("lipogram", "absent_letters", {**b, "letters": banned},
             f"The letter '{banned}' appears nowhere in the poem, in either case."),
            ("footer", "footer_group_words", {**b, "label": "WORDS"},
             "After the `END POEM` line comes a line `WORDS: ` followed by the number of words of each stanza, in "
             f"stanza order, separated by commas (such as `WORDS: 31, 40, 28` for a poem of three stanzas).")]
    units = {(k, j) for k, word in enumerate(acrostic, 1) for j in range(1, len(word) + 1)}
    last = {(k, len(word)) for k, word in enumerate(acrostic, 1)}
    governs = {"acrostic": units, "lengths": units, "chain": units, "repeats": units, "lipogram": units,
               "footer": units, "ascending": last, "refrain": last}
    prompt = (f"Write a poem of exactly {S} stanzas on a subject of your choice. Put a line reading exactly "
              "`BEGIN POEM` before it and a line reading exactly `END POEM` after it; only the lines between the two "
              f"markers, and the footer line asked for below, are checked.\n\n{_group_rule('stanza')} {WORD_RULE} "
              "Stanzas are numbered from 1 at the top, and lines from 1 within their own stanza.\n\nThe poem must "
              f"satisfy all of these:\n{_listing(gate + rest)}\n\n{_score_line(gate, rest)}")
    reference = "BEGIN POEM\n" + "\n\n".join("\n".join(s) for s in lines) + "\nEND POEM\nWORDS: " \
        + ", ".join(map(str, counts))
    return Generated(prompt=prompt, key=_key(gate, rest), reference=reference,
                     difficulty={"interactions": interactions(governs), "lines": len(units), "words": sum(counts)})


# ---------------------------------------------------------------- the cross-referenced outline


def outline(rng: ItemRng, *, sections: int, items: int, shortest: int) -> Generated:
    """A two-level outline: item lengths follow a formula in (i, j) and set the items' end marks; each section's items
    spell the start of its heading; last items cite the next section's word count; first items repeat the previous
    heading; an index footer sorts every item's first word."""
    P = sections
    banned = rng.choice(BANNED)
    pool = _pool(banned)
    keyword = rng.choice([w for w in pool if len(w) >= 4])
    pool.remove(keyword)
    sizes = [rng.randint(2, items) for _ in range(P)]
    order = rng.choice(["ascending", "descending"])
    starts = _by(pool, 0)
    usable = {x for x in starts if len(starts[x]) >= 4}  # letters that open enough words to start items with
    candidates = _by([w for w in pool if len(w) >= max(sizes) and set(w[:max(sizes)]) <= usable], 0)
    initials = rng.sample(sorted(candidates), P)  # distinct initials: the alphabetical order is strict
    headings = sorted((rng.choice(candidates[x]) for x in initials), reverse=order == "descending")
    fill = [w for w in pool if w not in headings]
    a, b = rng.choice([-1, 1, 2]), rng.choice([-1, 1, 2])
    low = min(a * i + b * j for i, n in enumerate(sizes, 1) for j in range(1, n + 1))
    c = shortest - low + rng.randint(0, 4)
    length = {(i, j): a * i + b * j + c for i, n in enumerate(sizes, 1) for j in range(1, n + 1)}
    totals = [sum(length[(i, j)] for j in range(1, n + 1)) for i, n in enumerate(sizes, 1)]
    homes = [rng.randint(1, n) for n in sizes]
    texts: dict[tuple[int, int], str] = {}
    firsts = []
    openers = _by(fill, 0)
    for i, (heading, n) in enumerate(zip(headings, sizes), 1):
        for j in range(1, n + 1):
            size = length[(i, j)]
            tokens = [rng.choice(openers[heading[j - 1]]).capitalize()] + [rng.choice(fill) for _ in range(size - 1)]
            firsts.append(tokens[0].lower())
            free = list(range(1, size))
            if j == homes[i - 1]:
                _place(rng, tokens, free, keyword)
            if j == 1 and i >= 2:
                _place(rng, tokens, free, headings[i - 2])
            if j == n:
                tokens.insert(rng.randint(1, size), str(totals[i] if i < P else sum(totals)))
            texts[(i, j)] = " ".join(tokens) + ("?" if size % 2 else ".")
    lines = []
    for i, (heading, n) in enumerate(zip(headings, sizes), 1):
        lines.append(f"{i}. {heading.upper()}")
        lines.extend(f"{i}.{j} {texts[(i, j)]}" for j in range(1, n + 1))
    formula = _linear([(a, "i"), (b, "j"), (c, "")])
    shape = "; ".join(f"section {i} has {n} items" for i, n in enumerate(sizes, 1))
    bo = {"begin": "BEGIN OUTLINE", "end": "END OUTLINE"}
    gate = [("form", "outline_wellformed", bo, "Between the markers, every non-empty line is a heading line or an "
             "item line as defined above, and the first one is a heading line.")]
    rest = [("shape", "outline_shape", {**bo, "items": sizes}, f"There are exactly {P} sections, numbered 1, 2, ... "
             f"in order, and the items of section i are numbered i.1, i.2, ... in order: {shape}."),
            ("headings", "outline_headings", {**bo, "order": order}, "Every heading is a single word in capital "
             f"letters, and the headings, top to bottom, are in strictly {order} alphabetical order."),
            ("words", "outline_item_words", {**bo, "a": a, "b": b, "c": c},
             f"Item i.j has exactly {formula} words (the label `i.j` is not part of the item)."),
            ("initials", "outline_item_acrostic", bo, "In every section, the first letters of the items' first "
             "words, in item order, are the first letters of the section's heading, in order (item i.1 starts with "
             "the heading's first letter, item i.2 with its second, and so on; the heading may have more letters than "
             "its section has items, and its remaining letters are free)."),
            ("citations", "outline_forward_citations", bo, f"For every i from 1 to {P - 1}, the last item of "
             "section i contains exactly one number, equal to the total number of words in the items of section i+1. "
             "Apart from these and the number the next constraint asks for, no item contains a digit."),
            ("total", "outline_total_citation", bo, f"The last item of section {P} contains exactly one number, equal "
             "to the total number of words in all the items of the outline."),
            ("backref", "outline_back_reference", bo, "The first item of every section after the first contains the "
             "previous section's heading word exactly once (in any case)."),
            ("keyword", "outline_word_per_section", {**bo, "word": keyword},
             f"The word '{keyword}' occurs exactly once in the items of each section and never in a heading."),
            ("endings", "outline_endings_by_parity", bo,
             "An item whose number of words is odd ends with `?`; an item whose number of words is even ends with "
             "`.`."),
            ("lipogram", "absent_letters", {**bo, "letters": banned},
             f"The letter '{banned}' appears nowhere in the outline, in either case."),
            ("index", "outline_index", {**bo, "label": "INDEX"}, "After the `END OUTLINE` line comes a line "
             "`INDEX: ` followed by the first word of every item, lower-cased, in alphabetical order, separated by "
             "commas, a word listed as many times as it opens an item (such as `INDEX: ant, bee, bee, cat`).")]
    units = set(length)
    heads = {("H", i) for i in range(1, P + 1)}
    governs = {"shape": units, "words": units, "endings": units, "lipogram": units | heads, "index": units,
               "headings": heads, "initials": units | heads, "total": units,
               "citations": {(i, j) for i, j in units if i > 1 or j == sizes[0]},
               "backref": {(i, 1) for i in range(2, P + 1)} | {("H", i) for i in range(1, P)},
               "keyword": units | heads}
    prompt = ("Write a two-level numbered outline on a subject of your choice. Put a line reading exactly "
              "`BEGIN OUTLINE` before it and a line reading exactly `END OUTLINE` after it. A *heading line* is "
              "`<i>. <heading>` (a section number, a full stop, a space, the heading); an *item line* is "
              "`<i>.<j> <text>` (section number, full stop, item number, a space, the item's text). Each item is on "
              f"one line; blank lines are ignored.\n\n{WORD_RULE}\n\nThe outline must satisfy all of these:\n"
              f"{_listing(gate + rest)}\n\n{_score_line(gate, rest)}")
    reference = "BEGIN OUTLINE\n" + "\n".join(lines) + "\nEND OUTLINE\nINDEX: " + ", ".join(sorted(firsts))
    return Generated(prompt=prompt, key=_key(gate, rest), reference=reference,
                     difficulty={"interactions": interactions(governs), "items": len(units), "words": sum(totals)})


# ---------------------------------------------------------------- the sectioned report and its JSON summary


def json_record(rng: ItemRng, *, sections: int, sentences: int) -> Generated:
    """A sectioned report with stated sentence counts and word totals, all sentence lengths distinct, then a JSON
    summary that must reproduce the report's own counts exactly."""
    S = sections
    banned = rng.choice(BANNED)
    pool = _pool(banned)
    keyword = rng.choice([w for w in pool if 4 <= len(w) <= 7])
    pool.remove(keyword)
    counts = [rng.randint(3, sentences) for _ in range(S)]
    n = sum(counts)
    low = rng.randint(6, 9)
    high = low + n - 1 + rng.randint(2, 5)  # a few spare lengths: all lengths distinct is a real planning task
    chosen = rng.sample(range(low, high + 1), n)
    lengths, at = [], 0
    for size in counts:
        lengths.append(chosen[at:at + size])
        at += size
    titles = sorted(rng.sample([w for w in pool if len(w) >= 4], S))
    fill = [w for w in pool if w not in titles]
    hosts = [rng.randint(1, size) for size in counts]
    body = []
    for k in range(S):
        texts = []
        for j, size in enumerate(lengths[k], 1):
            tokens = [rng.choice(fill) for _ in range(size)]
            if j == hosts[k]:
                tokens[rng.randrange(1, size)] = keyword
            texts.append(" ".join(tokens).capitalize() + ".")
        body.append(f"## {titles[k].capitalize()}\n" + " ".join(texts))
    totals = [sum(section) for section in lengths]
    top = max(chosen)
    longest = next([k + 1, j + 1] for k, section in enumerate(lengths) for j, size in enumerate(section)
                   if size == top)
    keys = ["sentence_words", "section_words", "total_words", "keyword_sentence", "longest"]
    value = {"sentence_words": lengths, "section_words": totals, "total_words": sum(totals),
             "keyword_sentence": hosts, "longest": longest}
    summary = "{\n" + ",\n".join(f'  "{key}": {json.dumps(value[key])}' for key in keys) + "\n}"
    br = {"begin": "BEGIN REPORT", "end": "END REPORT"}
    K = f"'{keyword}'"
    gate = [("report", "report_wellformed", br, "Between the markers, the first non-empty line is a heading line "
             "and every section has at least one line of text."),
            ("json", "json_present", {}, "After the report, the response contains a ```json fenced block holding "
             "one JSON object.")]
    rest = [("keys", "json_keys", {"keys": keys}, "The JSON object has exactly these keys, in this order: "
             + ", ".join(f"`{k}`" for k in keys) + "."),
            ("titles", "report_titles", {**br, "count": S}, f"The report has exactly {S} sections; every title is one "
             "word with an initial capital and the rest in lower case (such as `Harbour`), and the titles, top to "
             "bottom, are in strictly ascending alphabetical order."),
            ("sentences", "report_sentence_counts", {**br, "counts": counts}, "The sections have exactly these "
             "numbers of sentences, in order: " + ", ".join(map(str, counts)) + "."),
            ("totals", "report_section_words", {**br, "totals": totals}, "The sections have exactly these numbers "
             "of words, in order: " + ", ".join(map(str, totals)) + " (a heading line's words do not count)."),
            ("band", "report_sentence_band", {**br, "low": low, "high": high, "distinct": True},
             f"Every sentence has between {low} and {high} words and ends with `.`, and no two sentences of the "
             "whole report have the same number of words."),
            ("keyword", "report_word_per_section", {**br, "word": keyword},
             f"The word {K} occurs exactly once in the text of each section and in no title."),
            ("sentence_words", "json_sentence_words", {**br, "key": "sentence_words"}, "`sentence_words` is a list "
             "holding one list per section, in order, of the numbers of words of that section's sentences, in "
             "order."),
            ("word_totals", "json_word_totals", {**br, "sections_key": "section_words", "total_key": "total_words"},
             "`section_words` lists the sections' numbers of words, in order, and `total_words` is the number of "
             "words in the whole report (heading lines excluded)."),
            ("keyword_sentence", "json_keyword_sentences", {**br, "key": "keyword_sentence", "word": keyword},
             "`keyword_sentence` lists, for each section in order, the number (counted from 1 within the section) "
             f"of the sentence that contains {K}."),
            ("longest", "json_longest", {**br, "key": "longest"}, "`longest` is `[section number, sentence number]` "
             "locating the report's longest sentence (the one with the most words, which must be unique), numbered as "
             "above."),
            ("lipogram", "report_json_absent_letters", {**br, "letters": banned}, f"The letter '{banned}' appears "
             "nowhere in the report and in no string value of the JSON object, in either case (the keys above are "
             "exempt).")]
    units = {(k, j) for k, size in enumerate(counts, 1) for j in range(1, size + 1)}
    heads = {("T", k) for k in range(1, S + 1)}
    governs = {"titles": heads, "sentences": units, "totals": units, "band": units, "sentence_words": units,
               "word_totals": units, "longest": units, "lipogram": units | heads,
               "keyword": units | heads, "keyword_sentence": units}
    prompt = (f"Write a report of exactly {S} titled sections on a subject of your choice, then a JSON summary of it. "
              "Put a line reading exactly `BEGIN REPORT` before the report and a line reading exactly `END REPORT` "
              "after it. Each section starts with a *heading line* `## <title>`; the lines after it, up to the next "
              "heading line or the end marker, are the section's text, and a section's sentences run on across its "
              "text lines. Sections are numbered from 1 at the top, and sentences from 1 within their own section. "
              "Then give the summary as one JSON object in a fenced code block that opens with ```json and closes "
              "with ```; if there are several such blocks only the last is checked, and it must parse as standard "
              f"JSON.\n\n{WORD_RULE} {SENTENCE_RULE}\n\nThe response must satisfy all of these:\n"
              f"{_listing(gate + rest)}\n\n{_score_line(gate, rest)}")
    reference = "BEGIN REPORT\n" + "\n\n".join(body) + f"\nEND REPORT\n\n```json\n{summary}\n```"
    return Generated(prompt=prompt, key=_key(gate, rest), reference=reference,
                     difficulty={"interactions": interactions(governs), "sentences": n, "words": sum(totals)})


# ---------------------------------------------------------------- the table whose columns are defined by its text

COLUMN_NAMES = {"name": ["Name", "Label", "Title", "Alias"], "note": ["Note", "Remark", "Comment", "Memo"],
                "words": ["Words", "Length", "Size", "Count"], "base": ["Base", "Stake", "Start", "Seed"],
                "bonus": ["Bonus", "Extra", "Boost", "Lift"], "total": ["Total", "Sum", "Score", "Result"],
                "rank": ["Rank", "Place", "Order", "Position"]}


def _true_ranks(total: list[int]) -> list[int]:
    order = sorted(range(len(total)), key=lambda r: (-total[r], r))
    rank = [0] * len(total)
    for place, r in enumerate(order, 1):
        rank[r] = place
    return rank


def scored_table(rng: ItemRng, *, rows: int, spread: int) -> Generated:
    """A table whose Words, Bonus, Total, Rank and totals-row cells are defined by the Note texts (a Bonus by the
    next row's Note), and whose keyword must sit in the Notes of the top-ranked rows: a circular dependency."""
    R = rows
    roles = {role: rng.choice(names) for role, names in COLUMN_NAMES.items()}
    others = [roles[r] for r in ("note", "words", "base", "bonus", "total", "rank")]
    rng.shuffle(others)
    columns = [roles["name"]] + others
    banned = rng.choice(BANNED)
    pool = _pool(banned)
    keyword = rng.choice([w for w in pool if 4 <= len(w) <= 7])
    pool.remove(keyword)
    starts = _by(pool, 0)
    letters = _letters(rng, R, [c for c in INITIALS if c != banned and len(starts.get(c, [])) >= 6])
    names = []
    for letter in letters:
        names.append(rng.choice([w for w in starts[letter] if w not in names]).capitalize())
    fill = [w for w in pool if w.capitalize() not in names]
    factor, top = rng.randint(2, 5), rng.randint(2, 4)
    low = rng.randint(6, 10)
    high = low + R - 1 + spread
    while True:
        counts = rng.sample(range(low, high + 1), R)
        base = sorted(rng.sample(range(5, 20 + 8 * R), R), reverse=True)
        bonus = [factor * counts[(r + 1) % R] for r in range(R)]
        total = [b + x for b, x in zip(base, bonus)]
        if len(set(total)) == R:  # no ties, so no instance leans on the tie rule
            break
    rank = _true_ranks(total)
    at_rank = {place: r for r, place in enumerate(rank)}
    notes = []
    for r in range(R):
        tokens = [rng.choice(fill) for _ in range(counts[r])]
        if rank[r] <= top:
            tokens[rng.randrange(counts[r])] = keyword
        tokens.insert(rng.randint(1, counts[r]), str(total[at_rank[rank[r] % R + 1]]))
        notes.append(" ".join(tokens).capitalize())
    label = "TOTAL"
    cells = [{"name": names[r], "note": notes[r], "words": str(counts[r]), "base": str(base[r]),
              "bonus": str(bonus[r]), "total": str(total[r]), "rank": str(rank[r])} for r in range(R)]
    cells.append({"name": label, "note": "-", "words": str(sum(counts)), "base": str(sum(base)),
                  "bonus": str(sum(bonus)), "total": str(sum(total)), "rank": "-"})
    role_of = {roles[role]: role for role in roles}
    table = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    table += ["| " + " | ".join(row[role_of[c]] for c in columns) + " |" for row in cells]
    N, O, W, B, X, T, K = (roles[r] for r in ("name", "note", "words", "base", "bonus", "total", "rank"))
    t = {"columns": columns, "name": N, "note": O, "label": label}
    v = {**t, "base": B, "factor": factor}
    header = "| " + " | ".join(columns) + " |"
    gate = [("header", "table_header", t, f"The response contains a markdown table whose header row is exactly "
             f"`{header}`, followed by a separator row such as `|" + "---|" * len(columns) + "`.")]
    rest = [("shape", "table_shape", {**t, "rows": R, "rank": K}, f"The table has exactly {R} entry rows followed by "
             f"one totals row, whose {N} cell is `{label}` and whose {O} and {K} cells are `-`; every row has exactly "
             f"{len(columns)} cells."),
            ("names", "table_name_initials", {**t, "letters": "".join(x.upper() for x in letters)},
             f"Every {N} cell of an entry row is one word with an initial capital and the rest in lower case, and the "
             "first letters of these words, top to bottom, are: " + ", ".join(x.upper() for x in letters) + "."),
            ("notes", "table_note_lengths", {**t, "low": low, "high": high}, f"Every {O} cell of an entry row has "
             f"between {low} and {high} words, and no two of these {O} cells have the same number of words."),
            ("words", "table_derived_column", {**v, "column": W, "value": "words"},
             f"Each entry row's {W} cell is the number of words in its {O} cell."),
            ("base", "table_base_column", {**t, "base": B, "sum": sum(base)}, f"The {B} cells of the entry rows are "
             f"positive whole numbers, strictly decreasing from top to bottom, that add up to {sum(base)}."),
            ("bonus", "table_derived_column", {**v, "column": X, "value": "bonus"},
             f"Each entry row's {X} cell is {factor} times the number of words in the {O} cell of the next entry "
             f"row; for the last entry row, the next one is the first entry row."),
            ("total", "table_derived_column", {**v, "column": T, "value": "total"},
             f"Each entry row's {T} cell is its {B} plus its {X}, with the {X} as defined above."),
            ("totals", "table_totals_row", {**v, "sums": [[W, "words"], [B, "base"], [X, "bonus"], [T, "total"]]},
             f"In the totals row, the {W}, {B}, {X} and {T} cells are the sums of those columns over the entry rows, "
             "each entry's value as defined above."),
            ("rank", "table_derived_column", {**v, "column": K, "value": "rank"},
             f"Each entry row's {K} cell is its rank by {T} (as defined above) among the entry rows: 1 for the "
             f"largest; rows with equal {T} are ranked in table order, the higher row first."),
            ("keyword", "table_keyword_ranks", {**v, "word": keyword, "top": top},
             f"The word '{keyword}' occurs exactly once in the {O} cell of each entry row whose rank (as defined "
             f"above) is at most {top} (ranks 1 to {top}), and in no other cell of the table."),
            ("citations", "table_note_citations", v, f"Each entry row's {O} cell contains exactly one number: "
             f"the {T} (as defined above) of the entry row ranked one place below it; the row ranked last cites the "
             f"{T} of the row ranked 1."),
            ("lipogram", "table_cells_absent_letters", {**t, "letters": banned, "in": [N, O]},
             f"The letter '{banned}' appears in no {N} or {O} cell of the entry rows, in either case.")]
    extra = rng.choice([w for w in fill if w != keyword])
    prompt = ("Produce a markdown table: a header row, a separator row, then one row per line, every row starting and "
              "ending with `|`, cells separated by `|`. If several tables with the header below appear, only the "
              "last is checked; its rows are the consecutive lines starting with `|` after its separator. Write "
              f"every number in plain digits.\n\n{WORD_RULE}\n\nRequirements:\n{_listing(gate + rest)}\n\n"
              f"{_score_line(gate, rest, 'requirements').replace('constraint', 'requirement')}")
    key, reference = _key(gate, rest), "\n".join(table)
    slips = []  # the reference with one more word in one Note cell, for each entry row in turn
    for r in range(R):
        row = dict(cells[r], note=cells[r]["note"] + " " + extra)
        slips.append("\n".join(table[:2 + r] + ["| " + " | ".join(row[role_of[c]] for c in columns) + " |"]
                               + table[3 + r:]))
    return Generated(prompt=prompt, key=key, reference=reference,
                     difficulty={"cascade": cascade(key, slips), "rows": R, "words": sum(counts)})


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
