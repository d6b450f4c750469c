"""A run's category and item tables as LaTeX booktabs tables for papers; every string is escaped, so a model or
item name never becomes a LaTeX command."""

from __future__ import annotations

import math
import re
from pathlib import Path

from esac_kit.records import Report, write_atomic

REPORT_TEX_FILE = "report.tex"

# Each LaTeX special character and the text-mode command that prints it.
_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
             "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}",
             ">": r"\textgreater{}", "|": r"\textbar{}"}
_SPECIAL = re.compile("|".join(re.escape(c) for c in _SPECIALS))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")  # a line break inside a cell would end the row's meaning


def latex_escape(value) -> str:
    """Text made safe for a LaTeX document: specials become the commands that print them, control characters a
    space."""
    text = _CONTROL.sub(" ", "" if value is None else str(value))
    return _SPECIAL.sub(lambda match: _SPECIALS[match.group()], text)


def figure(value, digits: int = 2) -> str:
    """A number as a table prints it: fixed digits, integers without decimals, '--' for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "--"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    return f"{float(value):.{digits}f}"


def tabular(header: list[str], rows: list[list[str]], align: str, caption: str, label: str) -> str:
    """A booktabs table: cells already escaped or formatted, one row per line."""
    lines = [r"\begin{table}[htbp]", r"\centering", f"\\caption{{{caption}}}", f"\\label{{{label}}}",
             f"\\begin{{tabular}}{{{align}}}", r"\toprule", " & ".join(header) + r" \\", r"\midrule"]
    lines += [" & ".join(row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


def category_latex(report: Report) -> str:
    """Each category and the total: points, maximum, the pass line, the verdict, the exact 95 % interval, the label."""
    from esac_kit.report_tables import category_table

    rows = []
    for row in category_table(report).itertuples(index=False):
        low, high = _number(row.ci_exact_low), _number(row.ci_exact_high)
        interval = "--" if low is None or high is None else f"{low:.2f}--{high:.2f}"
        rows.append([latex_escape(row.category), figure(_number(row.points)), figure(_number(row.max)),
                     figure(_number(row.pass_line)), figure(None if row.passed is None else bool(row.passed)),
                     interval, latex_escape(row.label) if isinstance(row.label, str) else "--"])
    header = ["Category", "Points", "Max", f"Pass line ({latex_escape(report.pass_rule.percent)})", "Passed",
              r"95\,\% CI (exact)", "Label"]
    caption = (f"{latex_escape(report.suite.upper())} {latex_escape(report.version)}: "
               f"{latex_escape(report.model.name)}, category scores (run {latex_escape(report.run_id)})")
    return tabular(header, rows, "lrrrlll", caption, "tab:esac-categories")


def item_latex(report: Report) -> str:
    """Every scored item: category, score, weight, observations and replicate spreads."""
    rows = [[latex_escape(i.item_id), latex_escape(i.category), figure(i.score, 3), figure(i.weight),
             figure(i.observations), figure(i.answer_spread, 3), figure(i.judge_spread, 3)] for i in report.items]
    header = ["Item", "Category", "Score", "Weight", "Obs.", "Answer spread", "Judge spread"]
    caption = (f"{latex_escape(report.suite.upper())} {latex_escape(report.version)}: "
               f"{latex_escape(report.model.name)}, item scores")
    return tabular(header, rows, "llrrrrr", caption, "tab:esac-items")


def report_latex(report: Report) -> str:
    """The category and item tables of a report as one LaTeX fragment to \\input into a paper."""
    return "\n".join([
        # escaped like every cell: a line break in a name would end the comment and let the rest be read as LaTeX
        f"% ESAC report tables: {latex_escape(report.suite.upper())} {latex_escape(report.version)}, model "
        f"{latex_escape(report.model.name)}, run {latex_escape(report.run_id)}; esac-kit {report.kit_version}",
        r"% needs \usepackage{booktabs} in the preamble",
        category_latex(report), "", item_latex(report), ""])


def write_report_latex(folder: Path, report: Report) -> Path:
    """Write <run>/report.tex and return its path."""
    target = folder / REPORT_TEX_FILE
    write_atomic(target, report_latex(report).encode())
    return target


def _number(value) -> float | int | None:
    """A frame cell as a plain number, None when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value.item() if hasattr(value, "item") else value
