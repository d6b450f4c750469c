"""Self-contained HTML pages (the offline report, the sample viewer): inline styles, escaped text, complete tables,
charts as inline SVG; nothing is fetched and no code is shown."""

from __future__ import annotations

import html as _html
import json
import math
import numbers
from collections.abc import Iterable

import pandas as pd

# One stylesheet for every page the kit writes; inline, so a page opened offline looks as it does online.
CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;
color:#1f2328;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
h3{font-size:1rem;margin-top:1.2rem}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.scroll{overflow-x:auto}.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
.note{background:#fff8c5;border:1px solid #d4a72c;padding:.4rem .6rem;margin:.3rem 0}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.5rem;border:1px solid #d0d7de;
max-height:32rem;overflow:auto;font-size:.85rem}
details{margin:.3rem 0}summary{cursor:pointer}.chart svg{max-width:100%;height:auto}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem}
.card b{display:block;font-size:1.4rem}
.side{display:grid;grid-template-columns:repeat(auto-fit,minmax(22rem,1fr));gap:1rem}.side>div{min-width:0}
"""


def escape(value) -> str:
    """Text made safe for HTML (model output is hostile input: it must never become markup)."""
    return _html.escape("" if value is None else str(value), quote=True)


def number(value, digits: int = 2) -> str:
    """A number as a table shows it: fixed digits, integers without decimals, a dash for missing."""
    if value is None or (isinstance(value, numbers.Real) and math.isnan(value)):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return f"{float(value):.{digits}f}"
    return escape(value)


def table(frame: pd.DataFrame, digits: int = 2, css_class: str = "") -> str:
    """Every row of a frame as an HTML table (no truncation), numbers right-aligned and formatted."""
    head = "".join(f"<th>{escape(column)}</th>" for column in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for value in record:
            numeric = isinstance(value, numbers.Real) and not isinstance(value, bool)
            text = number(value, digits) if numeric or value is None or isinstance(value, bool) else _cell(value)
            cells.append(f'<td class="num">{text}</td>' if numeric else f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="{escape(css_class)}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _cell(value) -> str:
    """A non-numeric cell: containers as compact JSON, everything escaped."""
    if isinstance(value, (dict, list, tuple)):
        value = json.dumps(value, ensure_ascii=False, default=str)
    elif isinstance(value, float) and math.isnan(value):
        return "—"
    return escape(value)


def svg(chart) -> str:
    """An altair chart rendered to inline SVG (vl-convert, no browser, no network)."""
    import vl_convert as vlc

    # a browser may draw the labels in a wider font than vl-convert measured them with: room on the left keeps the
    # axis labels and the legend from being clipped at the SVG's edges
    spec = chart.properties(padding={"left": 32, "top": 5, "right": 40, "bottom": 5}).to_dict()
    return f'<div class="chart">{vlc.vegalite_to_svg(json.dumps(spec))}</div>'


def block(text: str) -> str:
    """Model or prompt text, escaped and kept verbatim."""
    return f"<pre>{escape(text)}</pre>"


def details(summary: str, body: str, anchor: str = "", opened: bool = False) -> str:
    """A collapsible part of a page: the summary is escaped text, the body markup built here; `anchor` its id."""
    ident = f' id="{escape(anchor)}"' if anchor else ""
    return f"<details{ident}{' open' if opened else ''}><summary>{escape(summary)}</summary>{body}</details>"


def columns(parts: Iterable[str]) -> str:
    """Parts side by side (wrapping on a narrow screen), e.g. a judged item's answers."""
    return '<div class="side">' + "".join(f"<div>{part}</div>" for part in parts) + "</div>"


def note(text: str) -> str:
    """A highlighted remark, escaped."""
    return f'<div class="note">{escape(text)}</div>'


def section(title: str, body: str, level: int = 2) -> str:
    """A titled section."""
    return f"<section><h{level}>{escape(title)}</h{level}>{body}</section>"


def fragment(body: str) -> str:
    """Markup to embed in another page (a marimo app): the kit's stylesheet scoped to it, without the body rule."""
    rules = []
    for rule in CSS.replace("\n", "").split("}"):
        selectors, _, declarations = rule.partition("{")
        if declarations and not selectors.strip().startswith("body"):
            scoped = ",".join(f".esac-fragment {s.strip()}" for s in selectors.split(","))
            rules.append(f"{scoped}{{{declarations}}}")
    return f'<div class="esac-fragment"><style>{"".join(rules)}</style>{body}</div>'


def page(title: str, sections: Iterable[str], subtitle: str = "") -> str:
    """A complete HTML document with the kit's inline stylesheet and no external reference."""
    lead = f"<p>{escape(subtitle)}</p>" if subtitle else ""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{CSS}</style></head>'
            f"<body><h1>{escape(title)}</h1>{lead}{''.join(sections)}</body></html>")
