"""The report in JupyterLab (notebooks/report.ipynb): charts as static SVG or PNG drawn by vl-convert and tables as
pandas Stylers with formatted numbers, so the notebook renders offline, with no CDN, widget or marimo element."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import pandas as pd
from pandas.io.formats.style import Styler

from esac_kit.artefacts import REPORT_FILE
from esac_kit.cost import cost_summary
from esac_kit.errors import ConfigError
from esac_kit.records import Report
from esac_kit.watch import find_runs

RUN_ENV = "ESAC_RUN"  # the notebook's parameter cell reads the run folder from here when it is set
IMAGE_FORMATS = ("svg", "png")


def offline_charts(image: str = "svg") -> None:
    """Render altair charts as static images through vl-convert (altair's default renderer loads Vega from a CDN)
    and keep every row of a chart's data; returns None, so a notebook cell shows no registry."""
    if image not in IMAGE_FORMATS:
        raise ConfigError(f"chart image format {image!r}: use one of {', '.join(IMAGE_FORMATS)}")
    alt.renderers.enable(image, **({"scale_factor": 2} if image == "png" else {}))
    alt.data_transformers.disable_max_rows()


def report_folder(path: str | Path) -> Path:
    """The run folder to report: `path` itself when it holds a report, else the newest finished run under it."""
    given = Path(path)
    if (given / REPORT_FILE).is_file():
        return given
    finished = next((f for f in find_runs(given) if (f / REPORT_FILE).is_file()), None)
    if finished is None:
        raise ConfigError(f"{given.resolve()}: no finished run folder (no {REPORT_FILE}): set RUN in the notebook's "
                          f"parameter cell, or ${RUN_ENV}, to one (a relative path starts from the kernel's folder)")
    return finished


def styled(frame: pd.DataFrame, digits: int = 3) -> Styler:
    """A table as JupyterLab shows it: every row, floats to `digits` decimals, a dash for missing, text escaped
    (model output is hostile input) and no index column."""
    numbers = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])
               and not pd.api.types.is_bool_dtype(frame[c])]
    return (frame.style.format(precision=digits, na_rep="—", escape="html")
            .format_index(escape="html", axis=1).hide(axis="index")
            .set_properties(subset=numbers, **{"text-align": "right", "font-variant-numeric": "tabular-nums"}))


def headline(report: Report, folder: Path) -> str:
    """The report's heading as Markdown: suite, version and model; the total with its interval; the verdict and
    the reasons for it (amendment 001 §10)."""
    verdict = "PASS" if report.passed else "FAIL"
    judge = report.judge.name if report.judge else "no judge"
    total = "incomplete" if report.total is None else f"{report.total:.1f} / {report.max_total:g}"
    interval = report.total_ci_exact
    interval_text = f" (CI95 exact {interval[0]:.1f}–{interval[1]:.1f})" if interval else ""
    lines = [f"# {report.suite.upper()} {report.version} · `{report.model.name}`", "",
             f"Run `{report.run_id}` · judge `{judge}` · pool {report.pool.label} · folder `{folder}`", "",
             f"**Total {total}**{interval_text} · **{verdict}**"]
    if report.modifier is not None:
        lines[-1] += (f" · capability {report.capability:.1f} / {report.max_capability:g} · efficiency modifier "
                      f"{report.modifier:.2f} / {report.max_modifier:g} (no threshold, amendment 001 §1)")
    lines += ["", "Official result." if report.official else "**Unofficial:** " + "; ".join(report.notes), "",
              f"Why {verdict.lower()}:", ""]
    lines += [f"- {reason}" for reason in report.reasons] or [
        f"- every category and the total reach {report.pass_rule.percent} of their points"]
    return "\n".join(lines)


def failures_summary(report: Report) -> str:
    """One Markdown paragraph: model outcomes, retries of infrastructure failures, tokens and cost."""
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.model_outcomes.items()))
    retries = ", ".join(f"{k} {v}" for k, v in sorted(report.retries.items())) or "none"
    tokens = ", ".join(f"{k} {v}" for k, v in report.tokens.items())
    cost = cost_summary(report.cost).replace("cost:", "Cost:")
    return (f"Model outcomes (one per answer): {outcomes}. Retries of infrastructure failures: {retries}. "
            f"Tokens: {tokens}. {cost}.")
