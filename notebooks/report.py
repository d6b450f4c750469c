import marimo

__generated_with = "0.25.2"
app = marimo.App(width="full", app_title="ESAC report")

with app.setup:
    from pathlib import Path

    import altair as alt
    import marimo as mo

    from esac_kit import report_tables, variance, watch
    from esac_kit.charts import category_chart, item_chart
    from esac_kit.compare import load_report
    from esac_kit.cost import cost_summary
    from esac_kit.errors import EsacError
    from esac_kit.notebook_ui import error_callout, table
    from esac_kit.providers import model_title
    from esac_kit.statistics import LEGEND

    _registry = alt.data_transformers.disable_max_rows()  # assigned: its repr is no output of the notebook


@app.cell
def _():
    args = watch.notebook_args()
    return (args,)


@app.cell
def _(args):
    _given = watch.as_list(args.get("run"))
    _found = watch.find_runs(Path(str(args.get("reports", "reports"))))
    run = Path(_given[0]) if _given else next((f for f in _found if (f / "report.json").is_file()), None)
    mo.stop(run is None, mo.callout(mo.md("No run folder: pass one, e.g. "
                                          "`marimo run notebooks/report.py -- --run reports/gi-1.0/<model>/<run>`"),
                                    kind="warn"))
    try:
        report, frame, problem = load_report(run), watch.run_frame(run), None
    except EsacError as _error:
        report, frame, problem = None, None, _error
    mo.stop(problem is not None, error_callout("Cannot show this run", problem))
    return frame, report, run


@app.cell
def _(report, run):
    _verdict = "PASS" if report.passed else "FAIL"
    _ci = report.total_ci_exact
    _ci_text = f"CI95 exact {_ci[0]:.1f}–{_ci[1]:.1f}" if _ci else "no interval"
    _judge = report.judge.name if report.judge else "no judge"
    _status = ("official result" if report.official
               else "**unofficial:** " + "; ".join(report.notes))
    _reasons = "\n".join(f"- {reason}" for reason in report.reasons) or f"- every category and the total reach {report.pass_rule.percent}"
    _total = "incomplete" if report.total is None else f"{report.total:.1f} / {report.max_total:g}"
    _stats = [mo.stat(_total, label="total", caption=_ci_text, bordered=True)]
    if report.modifier is not None:
        _stats += [mo.stat(f"{report.capability:.1f} / {report.max_capability:g}", label="capability",
                           caption=f"the pass line is {report.pass_rule.percent} of these points", bordered=True),
                   mo.stat(f"{report.modifier:.2f} / {report.max_modifier:g}", label="efficiency modifier",
                           caption="no threshold (amendment 001 §1)", bordered=True)]
    _stats.append(mo.stat(_verdict, label="verdict", caption=f"every category and the capability total ≥ {report.pass_rule.percent} "
                          "(amendment 001 §10)", bordered=True))
    mo.vstack([
        mo.md(f"# {report.suite.upper()} {report.version} · {model_title(report.model.name)}\n\n"
              f"Run `{report.run_id}` · model `{report.model.name}` · judge `{_judge}` · pool {report.pool.label} · "
              f"folder `{run}`"),
        mo.hstack(_stats, justify="start"),
        mo.callout(mo.md(_status), kind="success" if report.official else "warn"),
        mo.md(f"**Why {_verdict.lower()}:**\n\n{_reasons}"),
    ])
    return


@app.cell
def _(report):
    mo.vstack([
        mo.md("## Scores, the pass lines and the exact intervals\n\n"
              "`pass_line` is the pass rule's share of each maximum and `passed` the observed verdict; "
              "`ci_exact` is the exact 95 % interval, `se_fixed` the spread over replicates with the items fixed, "
              "`ci_boot` the item bootstrap (secondary), `note` why an interval is missing.\n\n" + LEGEND),
        table(report_tables.category_table(report)),
    ])
    return


@app.cell
def _(report):
    mo.vstack([mo.md("## Categories and items"), category_chart(report), item_chart(report)])
    return


@app.cell
def _(report):
    _efficiency = report_tables.efficiency_frame(report)
    mo.vstack([
        mo.md("## Efficiency"),
        mo.callout(mo.md(f"Not an AG run: {report.suite.upper()} has no efficiency modifier."), kind="neutral")
        if _efficiency is None else mo.vstack([
            mo.md(f"Modifier **{report.modifier:.2f} / {report.max_modifier:g}** = 3.5 × mean(a) + 1.5 × mean(t) "
                  "over the tasks, where a = (action level − 1)/5 and t = (token level − 1)/5 for a successful "
                  "task and 0 for a failed one (amendment 001 §1). Effective actions = tool calls + the task's "
                  "penalty × (redundant + rework + invalid calls); each task's scales are in its item file."),
            table(_efficiency)]),
    ])
    return


@app.cell
def _(frame, report):
    _failures = report_tables.failures_frame(frame)
    _outcomes = ", ".join(f"{k} {v}" for k, v in sorted(report.model_outcomes.items()))
    _retries = ", ".join(f"{k} {v}" for k, v in sorted(report.retries.items())) or "none"
    mo.vstack([
        mo.md(f"## Failures and retries\n\nModel outcomes (one per answer): {_outcomes}. "
              f"Retries of infrastructure failures: {_retries}. Tokens: "
              + ", ".join(f"{k} {v}" for k, v in report.tokens.items()) + ". "
              + cost_summary(report.cost).replace("cost:", "Cost:") + "."),
        mo.md("Every observation was a plain answer on its first attempt.") if _failures.empty else table(_failures),
    ])
    return


@app.cell
def _(frame, report):
    _missing = variance.no_variance_reason(frame)
    mo.stop(_missing is not None, mo.vstack([
        mo.md("## Variance of the judge-graded items"),
        mo.callout(mo.md(f"No variance section: {_missing}."), kind="neutral")]))
    _table = variance.variance_table({report.run_id: frame})
    _reliability = ["icc1", "icc1_low", "icc1_high", "icc1k", "alpha"]
    _stability = variance.item_stability(frame)
    _flagged = _stability[_stability["flag"] != "stable"]
    _flagged_text = (", ".join(f"{r.item_id} ({r.flag})" for r in _flagged.itertuples())
                     or "none")
    mo.vstack([
        mo.md("## Variance of the judge-graded items\n\n"
              "Components of the nested design items › answers › judge calls, and the judge's reliability "
              f"(ICC(1), ICC(1,k), Krippendorff's alpha). Items unstable across replicates (spread > 0.1): "
              f"{_flagged_text}. Explore them with `marimo edit notebooks/variance.py -- --run RUN`."),
        table(_table.drop(columns=["run", *_reliability]), decimals=4),  # two tables: one is too wide
        table(_table[_reliability], decimals=4),
    ])
    return


@app.cell
def _(report):
    mo.vstack([
        mo.md("## Provenance"),
        table(report_tables.provenance_frame(report)),
        mo.md("\n".join(f"- {note}" for note in report.notes) or "No notes."),
    ])
    return


if __name__ == "__main__":
    app.run()
