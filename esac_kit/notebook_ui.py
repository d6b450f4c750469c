"""What the notebooks show of a DataFrame and of an error: tables with numbers at a fixed number of decimals, long
text wrapped and every column shown, and a kit error as a one-line callout (`marimo run` hides tracebacks)."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping

import pandas as pd

DECIMALS = 3  # a score of 0.6944444444444443 reads 0.694
WRAP_CHARS = 40  # a text column with a longer value wraps instead of pushing the last columns out of sight
WRAP_WIDTH_PX = 220  # the width of a wrapped text column, and the most any column gets
PX_PER_CHAR, CELL_PADDING_PX = 7, 22  # a table cell's font and padding, to size columns to their text
FULL_ROWS = 60  # up to this many rows a table shows them all; longer tables page
MISSING = "—"  # a missing number reads as a dash, not NaN


def number_text(value, decimals: int = DECIMALS) -> str:
    """A number as text with `decimals` decimals, and a missing value as a dash."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return MISSING
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return f"{(value if round(value, decimals) else 0.0):.{decimals}f}"  # 0.000, never -0.000


def format_mapping(frame: pd.DataFrame, decimals: int = DECIMALS) -> dict[str, Callable]:
    """mo.ui.table's format_mapping for a frame: every float column at `decimals` decimals (at none if all its values
    are whole), missing values as a dash in every column (the table keeps raw values for sorting and download)."""
    mapping: dict[str, Callable] = {}
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):
            continue
        if pd.api.types.is_float_dtype(values):
            places = 0 if values.dropna().map(float.is_integer).all() else decimals
            mapping[str(column)] = lambda value, places=places: number_text(value, places)
        else:
            mapping[str(column)] = _or_dash
    return mapping


def _or_dash(value):
    """A cell as it is, or a dash where it is missing."""
    return MISSING if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else value


def wrapped_columns(frame: pd.DataFrame, chars: int = WRAP_CHARS) -> list[str]:
    """The text columns holding a value longer than `chars`: wrapped, they keep a wide table in view."""
    return [str(column) for column in frame.columns
            if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column])
            if frame[column].map(lambda value: isinstance(value, str) and len(value) > chars).any()]


def text_rows(text: str, chars_per_row: int = 80) -> int:
    """How many rows a full-width text area needs to show `text` whole (each line wraps at about chars_per_row)."""
    return sum(max(1, math.ceil(len(line) / chars_per_row)) for line in text.splitlines() or [""]) + 1


def joined_intervals(frame: pd.DataFrame, decimals: int = DECIMALS) -> pd.DataFrame:
    """The frame with each pair of columns X_low, X_high shown as one column 'X' (or 'X_ci' when X is taken) of
    'low–high' text: two columns fewer per interval keep a wide table in view."""
    shown = frame.copy()
    for low in [str(c) for c in frame.columns if str(c).endswith("_low")]:
        stem = low.removesuffix("_low")
        if f"{stem}_high" not in shown.columns:
            continue
        name = f"{stem}_ci" if stem in shown.columns else stem
        pairs = zip(shown[low], shown[f"{stem}_high"])
        text = [MISSING if _or_dash(a) is MISSING or _or_dash(b) is MISSING
                else f"{number_text(a, decimals)}–{number_text(b, decimals)}" for a, b in pairs]
        at = list(shown.columns).index(low)
        shown = shown.drop(columns=[low, f"{stem}_high"])
        shown.insert(at, name, text)
    return shown


def column_widths(frame: pd.DataFrame, formats: Mapping[str, Callable], wrapped: list[str]) -> dict[str, int]:
    """Pixel widths that fit each column's header and shown values (wrapped columns: WRAP_WIDTH_PX): marimo
    otherwise gives every column the same generous width and the last ones fall out of view."""
    widths = {}
    for column in frame.columns:
        name = str(column)
        if name in wrapped:
            widths[name] = WRAP_WIDTH_PX
            continue
        show = formats.get(name, lambda value: value)
        longest = max([len(name), *(len(str(show(value))) for value in frame[column])])
        widths[name] = min(WRAP_WIDTH_PX, PX_PER_CHAR * longest + CELL_PADDING_PX)
    return widths


def table(frame: pd.DataFrame, decimals: int = DECIMALS, **options):
    """A frame as a marimo table: formatted numbers, intervals in one column, long text wrapped, every column and
    (up to FULL_ROWS) every row shown; `options` go to mo.ui.table."""
    import marimo as mo

    shown = joined_intervals(frame, decimals).reset_index(drop=True)
    formats, wrapped = format_mapping(shown, decimals), wrapped_columns(shown)
    settings = {"format_mapping": formats, "wrapped_columns": wrapped,
                "column_widths": column_widths(shown, formats, wrapped), "selection": None,
                "show_data_types": False, "show_column_summaries": False, "max_columns": None,
                "pagination": len(shown) > FULL_ROWS, "page_size": 25 if len(shown) > FULL_ROWS else None}
    return mo.ui.table(shown, **(settings | options))


def error_callout(title: str, error: BaseException | str, kind: str = "danger"):
    """An error a user can cause, shown where app mode shows it: '**title:** the one-line message'."""
    import marimo as mo

    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return mo.callout(mo.md(f"**{plain_markdown(title)}:** {plain_markdown(message)}"), kind=kind)


def plain_markdown(text: str) -> str:
    """Plain text that marimo's markdown shows as written: HTML escaped (a message may quote a model's output), and
    markdown's and LaTeX's marks as character references (a backslash would make `\\(` start maths)."""
    return "".join(f"&#{ord(char)};" if char in "\\`*_{}[]()#+!|$~" else char for char in html.escape(text, quote=False))
