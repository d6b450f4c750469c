"""Report artefacts in a run folder: report.json, observations.parquet, and the charts as PNG and SVG."""

from __future__ import annotations

import json
from pathlib import Path

from esac_kit.journal import observations_frame
from esac_kit.records import Observation, Report, write_atomic, write_json

REPORT_FILE = "report.json"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "specs" / "report.schema.json"


def report_schema() -> dict:
    """The published JSON Schema of report.json."""
    return Report.model_json_schema()


def write_artefacts(folder: Path, report: Report, observations: list[Observation], charts: bool = True) -> list[Path]:
    """Write every artefact of a report into its run folder (the charts unless `charts` is off) and return their
    paths."""
    written = [folder / REPORT_FILE, folder / "observations.parquet"]
    write_json(written[0], report.model_dump(mode="json"))
    judge = report.judge.name if report.judge else None
    write_atomic(written[1], observations_frame(observations, report.model.name, judge).to_parquet(index=False))
    if charts:
        import vl_convert as vlc  # altair and vl-convert cost ~1 s and ~100 MB: only when charts are drawn

        from esac_kit.charts import category_chart, item_chart

        for name, chart in (("categories", category_chart(report)), ("items", item_chart(report))):
            spec = json.dumps(chart.to_dict())
            write_atomic(folder / f"{name}.svg", vlc.vegalite_to_svg(spec))
            write_atomic(folder / f"{name}.png", vlc.vegalite_to_png(spec, scale=2))
            written += [folder / f"{name}.svg", folder / f"{name}.png"]
    return written
