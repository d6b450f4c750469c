"""Answer helpers shared by the AG tasks: money written and read back, whether an answer mentions an id, and
distinct draws from an item's stream."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from esac_kit.rng import ItemRng

_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")  # a figure as people write it: digits, thousands commas, decimals
_GROUPED = re.compile(r"\d{1,3}(,\d{3})+(\.\d+)?")
_MONEY = re.compile(r"(?<![\w.\-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?!\w)")
_SIGNED = re.compile(r"(?<![\w\-+−.])([+\-−]?)\s?(\d{1,3}(?:,\d{3})+|\d+)(?![\d.,]?\d)")
_SCALED = re.compile(r"(?<![\w.\-/])(\d{1,3}(?:[,\u00a0\u202f ]\d{3})+|\d+)(\.\d+)?"
                     r"(?:\s*(k|m|bn|thousand|million|billion))?(?![\w\-/])", re.IGNORECASE)
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "bn": 1e9, "billion": 1e9}
ALNUM = "A-Za-z0-9"  # for `mentions`: only letters and digits glue a token into a longer word
WORD = r"\w-"  # for `mentions`: word characters and hyphens glue a token into a longer word


def dollars(cents: int) -> str:
    """Cents as a dollar figure with thousands separators: 123456 -> $1,234.56, -5 -> -$0.05."""
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def dollar_figure(cents: int) -> str:
    """Cents as a bare dollar figure without separators: 123456 -> 1234.56."""
    return f"{cents // 100}.{cents % 100:02d}"


def money(symbol: str, amount: int) -> str:
    """A whole amount after its currency sign, with thousands separators: ("€", 1250000) -> €1,250,000."""
    return f"{symbol}{amount:,}"


def two_decimals(value: Decimal) -> str:
    """A Decimal amount rounded half up to two decimals, without separators: 1234.565 -> 1234.57."""
    return f"{value.quantize(Decimal(1).scaleb(-2), rounding=ROUND_HALF_UP):.2f}"


def cents_in(text: str, grouped_only: bool = False) -> list[int]:
    """Every figure in the text read as dollars, in cents; a figure with a fraction of a cent is no amount, and with
    `grouped_only` neither is one whose commas do not group thousands."""
    found = []
    for token in _FIGURE.findall(text):
        digits = token.rstrip(",")
        if grouped_only and "," in digits and not _GROUPED.fullmatch(digits):
            continue
        try:
            value = Decimal(digits.replace(",", "")) * 100
        except InvalidOperation:
            continue
        if value == value.to_integral_value():
            found.append(int(value))
    return found


def rounded_cents_in(text: str | None) -> list[int]:
    """Every figure in the text read as dollars and rounded to whole cents."""
    found = []
    for raw in _FIGURE.findall(text or ""):
        try:
            found.append(round(float(raw.replace(",", "")) * 100))
        except ValueError:
            continue
    return found


def scaled_amounts(text: str) -> list[float]:
    """Every money-like figure in a text, in order, with its scale word (k, million, bn) applied; ids (INC-1234)
    and ISO dates are not figures."""
    found = []
    for match in _SCALED.finditer(text):
        whole = re.sub(r"[,\u00a0\u202f ]", "", match.group(1))
        value = float(whole + (match.group(2) or ""))
        found.append(value * _SCALE.get((match.group(3) or "").lower(), 1))
    return found


def money_values(text: str) -> set[Decimal]:
    """Every amount written in the text (thousands separators and a leading $ allowed), as Decimal dollars."""
    return {Decimal(whole.replace(",", "") + (cents or "")) for whole, cents in _MONEY.findall(text)}


def signed_integers(text: str) -> set[int]:
    """Every integer written in the text with its sign (ASCII or Unicode minus); digits inside ids are skipped."""
    found = set()
    for sign, digits in _SIGNED.findall(text):
        value = int(digits.replace(",", ""))
        found.add(-value if sign in ("-", "−") else value)
    return found


def mentions(text: str | None, token: str, word: str = WORD) -> bool:
    """True when the token stands in the text as a whole word, ignoring case; `word` is the regex class of the
    characters that would make it part of a longer word."""
    return bool(text) and re.search(rf"(?<![{word}]){re.escape(token)}(?![{word}])", text, re.IGNORECASE) is not None


def distinct_ints(rng: ItemRng, low: int, high: int, count: int) -> list[int]:
    """`count` distinct integers from [low, high] in draw order (sampling a huge range by shuffling would be slow)."""
    drawn: list[int] = []
    while len(drawn) < count:
        value = rng.randint(low, high)
        if value not in drawn:
            drawn.append(value)
    return drawn
