"""Comparing runs: what may be compared (amendment 001 §9), paired statistics, and the leaderboard of comparable runs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from esac_kit.artefacts import REPORT_FILE
from esac_kit.cost import usd
from esac_kit.errors import ConfigError
from esac_kit.providers import parse_model
from esac_kit.records import Party, Report
from esac_kit.version import major_of


def load_report(folder: str | Path) -> Report:
    """Read a run folder's report.json, with a one-line error when it is missing or not a report."""
    path = Path(folder) / REPORT_FILE
    try:
        return Report.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError:
        raise ConfigError(f"{path}: no report: finish the run or render it with `esac-kit report {folder}`") from None
    except ValidationError as error:
        raise ConfigError(f"{path}: not a report of this kit: {error.errors()[0]['msg']}") from None


def comparability(a: Report, b: Report) -> list[str]:
    """Notes on what differs between two comparable runs; raises ConfigError when they are not comparable."""
    for name, report in (("A", a), ("B", b)):
        if report.total is None:
            raise ConfigError(f"run {name} ({report.run_id}) is incomplete: resume it to the end before comparing")
    if a.suite != b.suite:
        raise ConfigError(f"runs of different suites ({a.suite}, {b.suite}) are not comparable")
    if major_of(a.version) != major_of(b.version):
        raise ConfigError(f"{a.suite.upper()} {a.version} and {b.version} differ in major version: their scores "
                          f"measure different things and are never compared (amendment 001 §9)")
    scoring = [r.fingerprints.get("scoring") for r in (a, b)]
    if a.version == b.version and scoring[0] != scoring[1]:
        raise ConfigError(f"{a.suite.upper()} {a.version}: the runs were scored under different scoring fingerprints "
                          f"({scoring[0]}, {scoring[1]}), so at least one ran an unreleased item bank: their scores are "
                          f"not comparable (amendment 001 §9)")
    notes = []
    if a.version != b.version:
        notes.append(f"minor versions differ ({a.version}, {b.version}): comparable within major {major_of(a.version)}")
    a_items = {i.item_id: i.instance_sha256 for i in a.items}
    b_items = {i.item_id: i.instance_sha256 for i in b.items}
    shared = sorted(set(a_items) & set(b_items))
    if not shared or any(a_items[i] != b_items[i] for i in shared):
        raise ConfigError("the runs answered different instances (another pool or version): a paired comparison "
                          "needs the same items")
    if len(shared) < max(len(a_items), len(b_items)):
        notes.append(f"compared on the {len(shared)} items both runs hold")
    judges = [r.judge.name if r.judge else None for r in (a, b)]
    if not same_judge(a.judge, b.judge):
        differs = "parameters" if a.judge and b.judge and _judge_model(a.judge) == _judge_model(b.judge) else "judges"
        raise ConfigError(f"the runs were judged by different {differs} ({_party(a.judge)}; {_party(b.judge)}): "
                          f"their judge-graded scores are not comparable")
    if judges[0] != judges[1]:
        notes.append(f"the judge was served from different URLs ({judges[0]}, {judges[1]}): the same judge by "
                     f"provider, model and parameters")
    for name, report in (("A", a), ("B", b)):
        if not report.official:
            notes.append(f"run {name} is unofficial: " + "; ".join(report.notes))
    return notes


def comparison_record(a: Report, b: Report, folder_a: Path, folder_b: Path, notes: list[str],
                      table: pd.DataFrame) -> dict:
    """A paired comparison as `esac-kit compare --json` prints it: each run, the notes and the paired rows."""
    import json

    def run(report: Report, folder: Path) -> dict:
        return {"folder": str(folder), "run_id": report.run_id, "suite": report.suite, "version": report.version,
                "model": report.model.name, "judge": report.judge.name if report.judge else None,
                "total": report.total, "max_total": report.max_total}

    return {"a": run(a, folder_a), "b": run(b, folder_b), "notes": notes,
            "paired": json.loads(table.to_json(orient="records"))}


def same_judge(a: Party | None, b: Party | None) -> bool:
    """Whether two runs had the same judge: provider, model and parameters match, whatever URL served it."""
    if a is None or b is None:
        return a is b
    return _judge_model(a) == _judge_model(b) and a.parameters == b.parameters


def _judge_model(party: Party) -> tuple[str, str] | str:
    """A judge's provider and model without the URL that served it (a name this kit cannot parse stays whole)."""
    try:
        ref = parse_model(party.name)
    except ConfigError:
        return party.name
    return ref.provider, ref.model


def _party(party: Party | None) -> str:
    """A judge as an error names it: its model string and parameters."""
    if party is None:
        return "no judge"
    return party.name + " " + ", ".join(f"{k}={v}" for k, v in sorted(party.parameters.items()))


def paired_table(folder_a: Path, folder_b: Path, items_dir: Path | None = None) -> pd.DataFrame:
    """Paired statistics of two comparable runs over the items both hold (esac_kit.statistics)."""
    from esac_kit.statistics import paired_comparison
    from esac_kit.suite import load_suite

    reports = [load_report(folder) for folder in (folder_a, folder_b)]
    suite = load_suite(reports[0].suite, items_dir)
    a, b = (_observations_table(folder, {i.id for i in suite.items}) for folder in (folder_a, folder_b))
    shared = sorted(set(a["item_id"]) & set(b["item_id"]))
    a, b = a[a["item_id"].isin(shared)], b[b["item_id"].isin(shared)]
    weights = {i.id: i.weight for i in suite.items}
    present = set(a["category"])
    points = {c.id: c.points for c in suite.manifest.categories if c.id in present}
    table = paired_comparison(a, b, weights, points)
    modifiers = [report.modifier for report in reports]
    if None not in modifiers:  # ESAC-AG: the total is capability + the modifier, taken as fixed (amendment 001 §1)
        table = with_modifier(table, *modifiers)
    return table


def with_modifier(table: pd.DataFrame, modifier_a: float, modifier_b: float) -> pd.DataFrame:
    """The paired table with the efficiency modifier as its own row and inside the overall row."""
    from esac_kit.statistics import OVERALL

    overall = table["category"] == OVERALL
    table = table.copy()
    table.loc[overall, "score_a"] += modifier_a
    table.loc[overall, "score_b"] += modifier_b
    shift = modifier_b - modifier_a
    for column in ("diff", "ci_low", "ci_high"):
        table.loc[overall, column] += shift
    row = {column: float("nan") for column in table.columns} | {
        "category": "efficiency modifier", "n_items": 0, "score_a": modifier_a, "score_b": modifier_b, "diff": shift}
    at = int(overall.to_numpy().argmax())
    return pd.concat([table.iloc[:at], pd.DataFrame([row]), table.iloc[at:]], ignore_index=True)


def _observations_table(folder: Path, known_items: set[str]) -> pd.DataFrame:
    """A run folder's observations as the tidy table, read from its journal (what its report was built from, so
    compare needs no observations.parquet), or a one-line error."""
    from esac_kit.journal import JOURNAL_FILE, check_slots, observations_frame, read_journal

    path = folder / JOURNAL_FILE
    if not path.is_file():
        raise ConfigError(f"{path}: no journal: a paired comparison reads each run's observations from it")
    observations = read_journal(path, owner=False)  # a resumed run may be appending: its torn last line is skipped
    check_slots(observations, known_items, path)
    return observations_frame(observations)


def leaderboard(reports_dir: Path, items_dir: Path | None = None) -> tuple[pd.DataFrame, list[str]]:
    """One row per finished run under a reports folder, sorted so that comparable runs stand together, and a note
    for each run left out because its scoring fingerprint is not its version's (amendment 001 §9)."""
    reports = []
    for path in sorted(reports_dir.rglob(REPORT_FILE)):
        try:
            reports.append((path.parent, Report.model_validate_json(path.read_text(encoding="utf-8"))))
        except (OSError, ValidationError):
            continue  # not a report of this kit (or a half-written one): the table lists what it can read
    expected = _scoring_of_versions([r for _, r in reports], items_dir)
    rows, left_out = [], []
    for folder, report in reports:
        if report.total is None:
            left_out.append(f"{folder}: {report.suite.upper()} {report.version} run {report.run_id} is incomplete: "
                            f"left out")
            continue
        scoring = report.fingerprints.get("scoring")
        wanted = expected.get((report.suite, report.version))
        if scoring != wanted:
            left_out.append(f"{folder}: {report.suite.upper()} {report.version} run {report.run_id} was scored under "
                            f"scoring fingerprint {scoring}, not {wanted or 'one shared by the other runs'}: left out")
            continue
        rows.append(_leaderboard_row(folder, report))
    categories = list(dict.fromkeys(key for row in rows for key in row if key not in LEADERBOARD_COLUMNS))
    frame = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS + categories)
    frame = frame.sort_values(["suite", "major", "pool", "total"], ascending=[True, True, True, False],
                              ignore_index=True)
    return frame, left_out


LEADERBOARD_COLUMNS = ["suite", "major", "version", "model", "judge", "pool", "official", "total", "total_ci_low",
                       "total_ci_high", "max", "pass", "modifier", "cost_usd", "run", "folder"]


def _leaderboard_row(folder: Path, report: Report) -> dict:
    """A finished run's leaderboard row: its total with its exact interval, then each category's points and exact
    interval (`CATEGORY`, `CATEGORY_ci_low`, `CATEGORY_ci_high`; no interval under 3 items)."""
    low, high = report.total_ci_exact or (None, None)
    row = {"suite": report.suite, "major": major_of(report.version), "version": report.version,
           "model": report.model.name, "judge": report.judge.name if report.judge else "-",
           "pool": report.pool.name, "official": report.official, "total": report.total, "total_ci_low": low,
           "total_ci_high": high, "max": report.max_total, "pass": report.passed, "modifier": report.modifier,
           "cost_usd": report.cost["total_usd"] if report.cost else None, "run": report.run_id,
           "folder": str(folder)}
    for category in report.categories:
        low, high = category.ci_exact or (None, None)
        row |= {category.id: category.points, f"{category.id}_ci_low": low, f"{category.id}_ci_high": high}
    return row


def leaderboard_groups(frame: pd.DataFrame) -> list[tuple[str, int, pd.DataFrame]]:
    """The leaderboard's comparable groups (one suite and major each), without the columns only other groups fill."""
    groups = []
    for (suite, major_version), group in frame.groupby(["suite", "major"], sort=True):
        others = [c for c in group.columns if (c not in LEADERBOARD_COLUMNS or c == "modifier")
                  and not c.endswith(("_ci_low", "_ci_high")) and group[c].isna().all()]
        unfilled = [f"{c}{end}" for c in others for end in ("", "_ci_low", "_ci_high") if f"{c}{end}" in group]
        groups.append((suite, major_version, group.drop(columns=unfilled)))
    return groups


def leaderboard_records(frame: pd.DataFrame) -> list[dict]:
    """The leaderboard as JSON-ready rows (missing values are null), group by group."""
    import json

    return [row for _, _, group in leaderboard_groups(frame) for row in json.loads(group.to_json(orient="records"))]


def format_leaderboard_group(group: pd.DataFrame) -> str:
    """One comparable group as a text table: each score with its exact interval, cost in dollars or 'unknown'."""
    shown = pd.DataFrame(index=group.index)
    for column in group.columns:
        if column in ("suite", "major", "folder") or column.endswith(("_ci_low", "_ci_high")):
            continue
        if column == "cost_usd":
            shown["cost"] = group[column].map(lambda value: usd(None if pd.isna(value) else value))
        elif f"{column}_ci_low" in group.columns:
            shown[column] = [_with_interval(v, lo, hi) for v, lo, hi in
                             zip(group[column], group[f"{column}_ci_low"], group[f"{column}_ci_high"])]
        else:
            shown[column] = group[column].map(lambda v: f"{v:.2f}" if isinstance(v, float) and not pd.isna(v) else v)
    return shown.to_string(index=False)


def _with_interval(value, low, high) -> str:
    """'27.50 (24.10–29.90)', or the value alone when it has no interval."""
    if pd.isna(value):
        return "—"
    return f"{value:.2f}" + ("" if pd.isna(low) or pd.isna(high) else f" ({low:.2f}–{high:.2f})")


def _scoring_of_versions(reports: list[Report], items_dir: Path | None) -> dict[tuple[str, str], str | None]:
    """Each (suite, version)'s scoring fingerprint: the recorded one (for an open draft, the bank's as it is now),
    else the one most of its runs share (None on a tie, so that no run of it stands in the table as the reference)."""
    from esac_kit.fingerprints import compute, recorded_versions
    from esac_kit.suite import default_items_dir, load_suite

    seen: dict[tuple[str, str], Counter] = {}
    for report in reports:
        seen.setdefault((report.suite, report.version), Counter())[report.fingerprints.get("scoring")] += 1
    expected = {}
    for (suite, version), counts in seen.items():
        history = recorded_versions((items_dir or default_items_dir()) / suite)
        recorded = {r.version: r.scoring for r in history}
        if history and history[-1].status == "draft" and history[-1].version == version:
            bank = load_suite(suite, items_dir)
            if bank.manifest.version == version:
                recorded[version] = compute(bank).scoring
        (top, n), *rest = counts.most_common()
        expected[(suite, version)] = recorded.get(version) or (None if rest and rest[0][1] == n else top)
    return expected
