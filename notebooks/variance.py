import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="ESAC variance explorer")

with app.setup:
    from pathlib import Path

    import altair as alt
    import marimo as mo
    import pandas as pd

    from esac_kit import variance, watch
    from esac_kit.errors import EsacError
    from esac_kit.notebook_ui import error_callout, plain_markdown, table

    _registry = alt.data_transformers.disable_max_rows()  # assigned: its repr is no output of the notebook
    RELIABILITY = ["icc1", "icc1_low", "icc1_high", "icc1k", "alpha"]  # the judge-reliability columns


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # Variance explorer

    Judge-graded items are answered twice and each answer is judged twice (amendment 001 §5). Open one or
    several runs: see how much of the score variance comes from the items, from the model's answers and
    from the judge, how reliable the judge is, and what other designs would buy (D-study). Select items in
    the spread chart to read their four observations side by side.
    """)
    return


@app.cell
def _():
    args = watch.notebook_args()
    return (args,)


@app.cell
def _(args):
    _given = [Path(p) for p in watch.as_list(args.get("run"))]
    _found = watch.find_runs(Path(str(args.get("reports", "reports"))))
    _options = {watch.run_label(f): str(f) for f in [*_given, *_found]}
    _default = [watch.run_label(f) for f in _given] or list(_options)[:1]
    runs = mo.ui.multiselect(_options, value=_default, label="runs", full_width=True)
    judge_limit = mo.ui.slider(0.0, 0.5, step=0.01, value=float(args.get("judge-limit", 0.1)), show_value=True,
                               label="flag: spread across judge replicates above")
    model_limit = mo.ui.slider(0.0, 0.5, step=0.01, value=float(args.get("model-limit", 0.1)), show_value=True,
                               label="flag: spread across model replicates above")
    mo.vstack([runs, mo.hstack([judge_limit, model_limit], justify="start")])
    return judge_limit, model_limit, runs


@app.cell
def _(runs):
    mo.stop(not runs.value, mo.callout(mo.md("Pick at least one run folder (or pass `-- --run RUN`)."),
                                       kind="warn"))
    frames, _unreadable = {}, []
    for _folder in runs.value:
        try:
            frames[watch.run_label(Path(_folder))] = watch.run_frame(Path(_folder))
        except EsacError as _error:  # a failed start or a foreign folder: say so, show the other runs
            _unreadable.append(error_callout(f"Left out {watch.run_label(Path(_folder))}", _error, kind="warn"))
    mo.stop(not frames, mo.vstack([*_unreadable, mo.callout(mo.md(
        "None of the chosen runs has observations to explore: pick a run that answered at least one item."),
        kind="danger")]))
    mo.vstack(_unreadable) if _unreadable else None
    return (frames,)


@app.cell
def _(frames):
    _missing = {label: variance.no_variance_reason(frame) for label, frame in frames.items()}
    _measured = {label: frame for label, frame in frames.items() if _missing[label] is None}
    _notes = [mo.callout(mo.md(f"**{plain_markdown(label)}:** {reason}."), kind="neutral")
              for label, reason in _missing.items() if reason]
    mo.stop(not _measured, mo.vstack([mo.md("## Variance components and judge reliability"), *_notes]))
    _table = variance.variance_table(_measured)  # shown as two tables: one is too wide to keep its columns in view
    mo.vstack([
        mo.md("## Variance components and judge reliability\n\n"
              "`var_*` are the method-of-moments components of the balanced nested ANOVA (items › answers › "
              "judge calls), truncated at 0; `share_*` their shares. `icc1` is the reliability of one judge "
              "call (with its 95 % interval), `icc1k` of the mean of the judge calls, `alpha` Krippendorff's "
              "interval alpha."),
        *_notes,
        table(_table.drop(columns=RELIABILITY), decimals=4),
        table(_table[["run", *RELIABILITY]], decimals=4),
        mo.md("## D-study: what other designs would buy"),
        variance.d_study_chart(variance.d_study_frame(_measured)),
    ])
    return


@app.cell
def _(frames, judge_limit, model_limit):
    stability = pd.concat([variance.item_stability(frame, judge_limit.value, model_limit.value)
                           for frame in frames.values()], ignore_index=True)
    spread = mo.ui.altair_chart(variance.spread_chart(stability))
    mo.stop(stability.empty, mo.md("## Items: spread across replicates\n\nNo judge-graded item to spread: "
                                   "nothing to flag or drill into."))
    mo.vstack([
        mo.md("## Items: spread across replicates\n\nSelect points (click, shift-click or drag) to drill "
              "into them; with no selection, the flagged items are shown below."),
        spread,
        table(stability, decimals=4),
    ])
    return spread, stability


@app.cell
def _(frames, spread, stability):
    _chosen = spread.value
    if len(_chosen) == 0:
        _chosen = stability[stability["flag"] != "stable"]
    _by_run = {str(frame["run_id"].iloc[0]): frame for frame in frames.values()}
    _sections = {}
    for _row in _chosen.drop_duplicates(["run_id", "item_id"]).head(12).itertuples():
        _grid = variance.observation_grid(_by_run[_row.run_id], _row.item_id)
        _sections[f"{_row.item_id} · {_row.run_id} · {_row.flag}"] = mo.Html(variance.observation_html(_grid))
    mo.vstack([
        mo.md(f"## Observations ({len(_sections)} item(s))"),
        mo.accordion(_sections, multiple=True) if _sections else mo.md("No item selected and none flagged."),
    ])
    return


if __name__ == "__main__":
    app.run()
