"""Report artefacts in a run folder: report.json, and its renders (observations.parquet, the charts as PNG and SVG)."""

from __future__ import annotations

import json
from pathlib import Path

from esac_kit.journal import observations_frame
from esac_kit.records import Observation, Report, write_atomic, write_json

REPORT_FILE = "report.json"
OBSERVATIONS_TABLE = "observations.parquet"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "specs" / "report.schema.json"


def report_schema() -> dict:
    """The published JSON Schema of report.json."""
    return Report.model_json_schema()


def write_artefacts(folder: Path, report: Report, observations: list[Observation], renders: bool = True) -> list[Path]:
    """Write a report's report.json into its run folder and, unless `renders` is off, the observation table and the
    charts; return their paths."""
    written = [folder / REPORT_FILE]
    write_json(written[0], report.model_dump(mode="json"))
    if not renders:  # pyarrow (the table, ~35 MB), altair and vl-convert (the charts, ~1 s, ~100 MB)
        return written
    import vl_convert as vlc

    from esac_kit.charts import category_chart, item_chart

    judge = report.judge.name if report.judge else None
    written.append(folder / OBSERVATIONS_TABLE)
    write_atomic(written[-1], observations_frame(observations, report.model.name, judge).to_parquet(index=False))
    for name, chart in (("categories", category_chart(report)), ("items", item_chart(report))):
        spec = json.dumps(chart.to_dict())
        write_atomic(folder / f"{name}.svg", vlc.vegalite_to_svg(spec))
        write_atomic(folder / f"{name}.png", vlc.vegalite_to_png(spec, scale=2))
        written += [folder / f"{name}.svg", folder / f"{name}.png"]
    return written
