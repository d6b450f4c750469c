import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="ESAC run")

with app.setup:
    from pathlib import Path

    import altair as alt
    import marimo as mo

    from esac_kit import report_tables, runs, watch
    from esac_kit.charts import category_chart
    from esac_kit.errors import EsacError
    from esac_kit.notebook_ui import error_callout, table
    from esac_kit.report import format_report

    _registry = alt.data_transformers.disable_max_rows()  # assigned: its repr is no output of the notebook


@app.cell(hide_code=True)
def _():
    mo.md(r"""
    # Run ESAC

    Choose the suite, the pool, the model, the judge and the concurrency, then press **Run**.
    Progress is live; the results table and the category chart fill in as observations land.
    To continue a killed or aborted run, pick it under *resume*. Every run writes its folder under
    `reports/` exactly as `esac-kit run` does. Defaults come from the command line, e.g.
    `marimo edit notebooks/run.py -- --model openai:my-model@http://127.0.0.1:8000/v1 --judge local`.
    """)
    return


@app.cell
def _():
    args = watch.notebook_args()
    return (args,)


@app.cell
def _(args):
    reports_dir = Path(str(args.get("reports", "reports")))
    suite_choice = mo.ui.dropdown(watch.suite_ids(), value=str(args.get("suite", "gi")), label="suite")
    pool_choice = mo.ui.dropdown(["public", "heldout", "custom"], value=str(args.get("pool", "public")),
                                 label="pool")
    seed = mo.ui.text(value=str(args.get("seed", "")), label="custom seed")
    seed_file = mo.ui.text(value=str(args.get("heldout-seed-file", "")),
                           label="held-out seed file (else $ESAC_HELDOUT_SEED)")
    pack = mo.ui.text(value=str(args.get("pack", "")), label="item pack (held-out authored variants)")
    model = mo.ui.text(value=str(args.get("model", "local")), label="model", full_width=True)
    judge = mo.ui.text(value=str(args.get("judge", "")), full_width=True,
                       label="judge (empty: the suite's pinned judge; local for the local model)")
    model_params = mo.ui.text(value=" ".join(watch.as_list(args.get("M"))), full_width=True,
                              label="model parameters, as -M: KEY=VALUE separated by spaces (e.g. reasoning_effort=high "
                                    "thinking_budget=8192 stream=false)")
    concurrency = mo.ui.slider(1, 32, value=int(args.get("concurrency", 4)), label="concurrency", show_value=True)
    use_cache = mo.ui.checkbox(value=not watch.arg_flag(args, "no-cache"), label="use the response cache")
    _wanted = [Path(p) for p in watch.as_list(args.get("resume"))]
    _runs = {watch.run_label(f): str(f) for f in [*_wanted, *watch.find_runs(reports_dir)]}
    resume = mo.ui.dropdown({"(new run)": "", **_runs}, label="resume",
                            value=watch.run_label(_wanted[0]) if _wanted else "(new run)")
    return (concurrency, judge, model, model_params, pack, pool_choice, reports_dir, resume, seed, seed_file,
            suite_choice, use_cache)


@app.cell
def _(suite_choice):
    from esac_kit.suite import load_suite

    only = mo.ui.multiselect([i.id for i in load_suite(suite_choice.value).items],
                             label="only these items (a partial, unofficial run; empty: all)")
    return (only,)


@app.cell
def _():
    run_button = mo.ui.run_button(label="Run", kind="success")
    return (run_button,)


@app.cell
def _(concurrency, judge, model, model_params, only, pack, pool_choice, resume, run_button, seed, seed_file,
      suite_choice, use_cache):
    mo.vstack([
        mo.hstack([suite_choice, pool_choice, seed], justify="start"),
        mo.hstack([seed_file, pack], justify="start"),
        model, model_params, judge, mo.hstack([concurrency, use_cache], justify="start"), only,
        mo.hstack([resume, run_button], justify="start"),
    ])
    return


@app.function
def live_view(plan, observations):
    """Scores so far: headline, category chart and item table."""
    report = watch.live_report(plan, observations)
    if report is None:
        return mo.md("Waiting for the first observation…")
    return mo.vstack([
        mo.md(f"**{report.total:.2f} / {report.max_total:g}** from all {plan.planned} observations"
              if report.total is not None else
              f"{len(observations)} of {plan.planned} observations so far: category scores below, no total until "
              f"the run is complete"),
        category_chart(report),
        table(report_tables.item_table(report)),
    ])


@app.cell
def _(concurrency, judge, model, model_params, only, pack, pool_choice, reports_dir, resume, run_button, seed,
      seed_file, suite_choice, use_cache):
    mo.stop(not run_button.value, mo.md("Set the run up and press **Run**."))
    _seed_file = Path(seed_file.value) if seed_file.value.strip() else None
    try:
        if resume.value:
            plan = runs.plan_resume(Path(resume.value), _seed_file)
        else:
            plan = runs.plan_run(
                suite_choice.value, pool_choice.value, model.value, judge.value or None, concurrency.value,
                seed=seed.value.strip() or None, seed_file=_seed_file,
                pack=Path(pack.value) if pack.value.strip() else None, only=list(only.value) or None,
                reports_dir=reports_dir, model_params=model_params.value.split() or None)
        problem = None
    except EsacError as _error:
        plan, problem = None, _error
    mo.stop(plan is None, error_callout("Cannot start", problem))
    return (plan,)


@app.cell
def _(plan, use_cache):
    handle = watch.start_run(plan, use_cache=use_cache.value)
    _shown = -1
    _title = f"{'resuming' if plan.resumed else 'run'} {plan.config.run_id}: {plan.config.model}"
    with mo.status.progress_bar(total=plan.planned, title=_title, subtitle="starting", show_eta=False) as _bar:
        _bar.update(increment=plan.done)
        mo.output.append(mo.md("Waiting for the first observation…"))
        _finished = False
        try:
            while not _finished:
                _finished = handle.wait(1.0)
                _progress = handle.progress
                _bar.update(increment=_progress.done - _bar.current, subtitle=_progress.text())
                _observations = handle.observations()
                if len(_observations) != _shown:
                    _shown = len(_observations)
                    mo.output.replace_at_index(live_view(plan, _observations), 1)
        except BaseException:  # Interrupt (or a re-run): stop the worker too, so it releases the run folder
            handle.stop()
            raise
    try:
        report, failure = handle.result(), None
    except EsacError as _error:
        report, failure = None, _error
    _notes = "\n".join(f"- {note}" for note in plan.config.notes)
    if report is None:
        _summary = mo.vstack([error_callout(f"The run stopped (exit code {failure.exit_code})", failure),
                              mo.md("The folder keeps every finished observation: resume it to continue.")])
    else:
        _summary = mo.md(f"Done: artefacts in `{plan.folder}`\n\n{_notes}\n\n```\n{format_report(report)}\n```")
    mo.vstack([_summary, live_view(plan, handle.observations())])
    return failure, handle, report


if __name__ == "__main__":
    app.run()
