import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="ESAC sample viewer")

with app.setup:
    from pathlib import Path

    import marimo as mo

    from esac_kit import html, viewer, watch
    from esac_kit.errors import EsacError


@app.cell
def _():
    args = watch.notebook_args()
    return (args,)


@app.cell
def _(args):
    _given = watch.as_list(args.get("run"))
    _found = watch.find_runs(Path(str(args.get("reports", "reports"))))
    _folder = Path(_given[0]) if _given else (_found[0] if _found else None)
    mo.stop(_folder is None, mo.callout(mo.md("No run folder: pass one, e.g. `esac-kit view RUN` or "
                                              "`marimo run notebooks/view.py -- --run RUN`"), kind="warn"))
    _problem = None
    try:
        run = viewer.load_run(_folder, args.get("heldout-seed-file") or None, args.get("items") or None,
                              args.get("pack") or None)
    except EsacError as _error:
        run, _problem = None, str(_error)
    # the message may quote a file or an item: shown as text, never as markup
    mo.stop(run is None, mo.callout(mo.Html(f"<b>Cannot open the run:</b> {html.escape(_problem)}"),
                                    kind="danger"))
    return (run,)


@app.cell
def _(run):
    _config = run.config
    _notes = [*run.notes, *(f"run note: {n}" for n in _config.notes)]
    mo.vstack([
        mo.md(f"# {_config.suite.upper()} {_config.version} · samples"),
        mo.Html(f"<p>model <code>{html.escape(_config.model)}</code> · judge "
                f"<code>{html.escape(_config.judge or '—')}</code> · run <code>{html.escape(_config.run_id)}</code>"
                f" · pool {html.escape(_config.pool.label)} · {len(run.observations)} observations of "
                f"{len(run.samples)} items · folder <code>{html.escape(run.folder)}</code></p>"),
        *[mo.callout(mo.Html(html.escape(n)), kind="warn") for n in _notes],
    ])
    return


@app.cell
def _(run):
    categories = mo.ui.multiselect(sorted({s.category for s in run.samples}), label="categories")
    outcomes = mo.ui.multiselect(sorted({o for s in run.samples for o in s.outcomes}), label="outcomes")
    score_range = mo.ui.range_slider(0.0, 1.0, step=0.05, value=[0.0, 1.0], show_value=True, label="item score")
    search = mo.ui.text(label="text in id, title, prompt or response", debounce=True)
    mo.hstack([categories, outcomes, score_range, search], justify="start", wrap=True)
    return categories, outcomes, score_range, search


@app.cell
def _(categories, outcomes, run, score_range, search):
    samples = viewer.filter_samples(run, categories.value, outcomes.value, tuple(score_range.value), search.value)
    mo.stop(not samples, mo.callout(mo.md("No item matches the filters."), kind="neutral"))
    _frame = viewer.observation_table(run, samples)
    _table = mo.ui.table(_frame, selection=None, page_size=15, show_column_summaries=False,
                         format_mapping={"score": "{:.3f}", "latency_s": "{:.3f}"})
    item = mo.ui.dropdown({viewer.summary_line(s): s.item_id for s in samples},
                          value=viewer.summary_line(samples[0]), searchable=True, full_width=True, label="item")
    mo.vstack([mo.md(f"## Observations ({len(_frame)} of {len(run.observations)} journal lines, "
                     f"{len(samples)} of {len(run.samples)} items)"), _table, item])
    return (item,)


@app.cell
def _(item, run):
    sample = viewer.sample_by_id(run, item.value)
    _labels = {f"answer {a.model_replicate} · {a.outcome}": a.model_replicate for a in sample.answers}
    replicates = mo.ui.multiselect(_labels, value=list(_labels), label="answers (model replicates)")
    replicates
    return replicates, sample


@app.cell
def _(replicates, sample):
    sample_view = viewer.sample_html(sample, replicates.value)
    mo.vstack([mo.md(f"## {sample.item_id}"), mo.Html(html.fragment(sample_view))])
    return (sample_view,)


if __name__ == "__main__":
    app.run()
