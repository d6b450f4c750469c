"""The shared answer helpers keep the readings the tasks' checks were written against."""

from __future__ import annotations

from decimal import Decimal

from esac_kit.ag.answers import (ALNUM, cents_in, distinct_ints, dollar_figure, dollars, mentions, money,
                                 rounded_cents_in, scaled_amounts, two_decimals)
from esac_kit.rng import ItemRng


def test_money_is_written_in_each_task_format():
    assert dollars(123456) == "$1,234.56" and dollars(5) == "$0.05" and dollars(-123456) == "-$1,234.56"
    assert dollar_figure(123456) == "1234.56"
    assert money("€", 1250000) == "€1,250,000"
    assert two_decimals(Decimal("1234.565")) == "1234.57" and two_decimals(Decimal("-0.125")) == "-0.13"


def test_cents_skip_fractions_of_a_cent_and_optionally_loose_commas():
    assert cents_in("SO-12345, $1,234.50 then 7.125") == [1234500, 123450]
    assert cents_in("1,2345.00") == [1234500]
    assert cents_in("1,2345.00", grouped_only=True) == []
    assert cents_in("total 2,345.10,", grouped_only=True) == [234510]
    assert rounded_cents_in("refunded 12.345 and $1,000") == [1234, 100000]
    assert rounded_cents_in(None) == []


def test_scaled_amounts_apply_scale_words_and_skip_ids():
    assert scaled_amounts("INC-1234 cost €1.5 million, then 250k and 1 200") == [1.5e6, 250e3, 1200.0]


def test_mentions_needs_a_whole_word_and_the_word_class_decides_what_glues():
    assert mentions("Declined: t-40213 asked for it", "T-40213")
    assert not mentions("see T-40213-b", "T-40213")
    assert mentions("see SO-12345-b", "SO-12345", ALNUM)
    assert not mentions("SO-123456", "SO-12345", ALNUM)
    assert not mentions(None, "T-1") and not mentions("", "T-1")


def test_distinct_ints_draw_in_order_without_repeats():
    drawn = distinct_ints(ItemRng(b"k" * 32), 1, 6, 6)
    assert sorted(drawn) == [1, 2, 3, 4, 5, 6]
    assert distinct_ints(ItemRng(b"k" * 32), 1, 6, 3) == drawn[:3]
