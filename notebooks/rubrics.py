import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="ESAC rubric workbench")

with app.setup:
    from pathlib import Path

    import marimo as mo

    from esac_kit import watch

    from esac_kit.gi import workbench as bench
    from esac_kit.errors import EsacError
    from esac_kit.notebook_ui import error_callout, plain_markdown, table, text_rows
    from esac_kit.suite import load_suite


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # Rubric workbench

    Pick a judge-graded item, edit its criteria and weights, and see what the edit does: the recorded
    judge levels of a run are rescored at once; **Judge** runs the judge on the item's anchors (twice each,
    as `esac-kit rubric check`) and on the run's real responses, and tests the required orders. **Save** writes
    the rubric back to the item file. A rubric change is a scoring change: it needs a major version bump
    (amendment 001 §9).
    """)
    return


@app.cell
def _():
    args = watch.notebook_args()
    return (args,)


@app.cell
def _(args):
    items_dir = Path(str(args["items"])) if args.get("items") else None
    suite = load_suite(str(args.get("suite", "gi")), items_dir)
    _judged = bench.judged_items(suite)
    _wanted = str(args.get("item", ""))
    item_choice = mo.ui.dropdown(_judged, value=_wanted if _wanted in _judged else _judged[0], label="item")
    _given = [Path(p) for p in watch.as_list(args.get("run"))]
    _found = watch.find_runs(Path(str(args.get("reports", "reports"))))
    _runs = {watch.run_label(f): str(f) for f in [*_given, *_found]}
    run_choice = mo.ui.dropdown({"(no run)": "", **_runs}, label="responses from run",
                                value=watch.run_label(_given[0]) if _given else "(no run)")
    _pin = suite.manifest.judge
    judge = mo.ui.text(value=str(args.get("judge", _pin.model if _pin else "local")), full_width=True,
                       label="judge (as for esac-kit run --judge; local starts the embedded model)")
    mo.hstack([item_choice, run_choice], justify="start")
    return item_choice, judge, run_choice, suite


@app.cell
def _(item_choice, run_choice, suite):
    item = suite.item(item_choice.value)
    frame, _note = None, ""
    if run_choice.value:
        try:
            _all = watch.run_frame(Path(run_choice.value))
            frame = _all[_all["item_id"] == item.id]
            frame = frame if len(frame) else None
        except EsacError as _error:  # a failed start: no responses to use
            _note = f" (the run's responses are not used: {plain_markdown(str(_error))})"
    variant = item.variants[0]
    if frame is not None:
        try:
            variant, _note = bench.run_variant(item, frame), " (the one the run answered)"
        except EsacError as _error:  # a held-out variant from a private pack: the run's responses cannot be used
            frame, _note = None, f" (the run's responses are not used: {plain_markdown(str(_error))})"
    # One labelled block per criterion, its text areas tall enough for the whole text (a batch, not a JSON tree);
    # the template holds only placeholders, so no item text is read as one.
    _criteria = {
        c.id: mo.md("{weight}\n\n{description}\n\n{levels}").batch(
            weight=mo.ui.number(start=0.1, stop=100, step=0.1, value=c.weight, label="weight"),
            description=mo.ui.text_area(value=c.description, rows=text_rows(c.description), full_width=True,
                                        label="description"),
            levels=mo.ui.text_area(value="\n".join(c.levels), rows=text_rows("\n".join(c.levels)),
                                   full_width=True, label="levels, lowest first, one per line"))
        for c in item.rubric.criteria}
    _headings = {c.id: mo.md(f"#### {plain_markdown(c.id)}" + (" (gate)" if c.gate else "")
                             + (f" · verified in code: `{c.verified_in_code}`" if c.verified_in_code else ""))
                 for c in item.rubric.criteria}
    form = mo.ui.batch(mo.vstack([mo.vstack([_headings[cid], "{" + cid + "}"]) for cid in _criteria]),
                       _criteria).form(submit_button_label="Apply the edit", show_clear_button=True,
                                       clear_button_label="Reset")
    mo.vstack([
        mo.md(f"## {item.id}\n\n{item.title}. Variant `{variant.id}`{_note}. Required orders: "
              + ", ".join(f"`{r}`" for r in item.required_order)),
        form,
    ])
    return form, frame, item, variant


@app.cell
def _(form, item, suite):
    try:
        rubric = bench.edited_rubric(item.rubric, form.value or {})
        _problem = None
    except EsacError as _error:
        rubric, _problem = None, _error
    bump = None if rubric is None else bench.rubric_bump(suite, item.id, rubric)
    mo.stop(rubric is None, error_callout("Invalid rubric", _problem))
    mo.vstack([
        mo.md("### The rubric as edited"),
        table(bench.criteria_frame(rubric)),
        mo.callout(mo.md(f"**Version rule (amendment 001 §9).** {bump.message()}"),
                   kind="warn" if bump.edit_change else "neutral"),
    ])
    return bump, rubric


@app.cell
def _(frame, item, rubric):
    mo.stop(rubric is None, None)  # the edit is invalid: the callout above says why
    mo.stop(frame is None, mo.md("Pick a run that answered this item to rescore its recorded judge levels."))
    _moved = bench.rescore(frame, item, rubric)
    mo.vstack([
        mo.md("### The run's observations rescored from their recorded levels (no judge call)\n\n"
              "Valid for weight changes; an edited description or level text needs the judge again."),
        table(_moved, decimals=4),
    ])
    return


@app.cell
def _(judge):
    judge_button = mo.ui.run_button(label="Judge anchors and the run's responses")
    mo.hstack([judge, judge_button], justify="start")
    return (judge_button,)


@app.cell
def _(frame, item, judge, judge_button, rubric, suite, variant):
    mo.stop(not judge_button.value, mo.md("Press **Judge** to run the judge with the edited rubric."))
    mo.stop(rubric is None, mo.callout(mo.md("**Nothing judged:** the edited rubric is invalid (see above); fix the "
                                             "edit or press Reset, then Judge again."), kind="warn"))
    _responses, _recorded = {}, {}
    if frame is not None:
        for _replicate, _rows in frame.groupby("model_replicate"):
            _responses[f"answer {_replicate}"] = str(_rows["response"].iloc[0])
            _recorded[f"answer {_replicate}"] = float(_rows["score"].mean())
    _pin = suite.manifest.judge
    try:
        with mo.status.spinner(title=f"judging with {judge.value}"):
            workbench = bench.judge_workbench(item, variant, rubric, judge.value.strip(), _responses, _recorded,
                                                temperature=_pin.temperature if _pin else 0.7,
                                                max_tokens=_pin.max_tokens if _pin else 1024)
        failure = None
    except EsacError as _error:
        workbench, failure = None, str(_error)
    mo.stop(workbench is None, error_callout("The judge failed", failure))
    mo.vstack([
        mo.md(f"### Anchors: the required order {'holds' if workbench.check.holds else '**is VIOLATED**'}"),
        table(workbench.anchors()),
        table(workbench.relations()),
        mo.md("### The run's responses under the edited rubric (mean of two judge calls)"),
        table(workbench.responses) if len(workbench.responses) else mo.md("No run picked."),
    ])
    return (workbench,)


@app.cell
def _():
    save_button = mo.ui.run_button(label="Save the rubric to the item file", kind="warn")
    save_button
    return (save_button,)


@app.cell
def _(bump, item, rubric, save_button, suite):
    mo.stop(not save_button.value, None)
    mo.stop(rubric is None, mo.callout(mo.md("**Not saved:** the edited rubric is invalid (see above)."),
                                       kind="danger"))
    try:
        saved, _problem = bench.save_rubric(suite, item.id, rubric), None
    except EsacError as _error:
        saved, _problem = None, _error
    mo.stop(saved is None, error_callout("Not saved", _problem))
    mo.callout(mo.md(f"Saved `{saved}`. {bump.message()}"), kind="success")
    return (saved,)


if __name__ == "__main__":
    app.run()
