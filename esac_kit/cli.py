"""The `esac-kit` command line (also `python -m esac_kit`); errors become one line and a distinct exit code."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys
import threading
from pathlib import Path

from esac_kit import __version__
from esac_kit.errors import ConfigError, EsacError, VerificationFailed
from esac_kit.instances import build_task, generate
from esac_kit.kinds import kind_of
from esac_kit.pools import Pool, choose_pool
from esac_kit.suite import Suite, load_suite


def _suite(args: argparse.Namespace) -> Suite:
    return load_suite(args.suite, args.items)


def print_json(data) -> None:
    """Print data as JSON on stdout, the only thing a --json command prints there."""
    import json

    print(json.dumps(data, indent=2, allow_nan=False))


def _pool_name(args: argparse.Namespace) -> str:
    return "custom" if args.seed is not None else "heldout" if args.heldout else "public"


def _pool(args: argparse.Namespace, suite: Suite) -> Pool:
    return choose_pool(_pool_name(args), suite.manifest.public_seed, args.seed, args.heldout_seed_file)


def cmd_items(args: argparse.Namespace) -> int:
    """Print categories with points and item counts, and the totals asserted at load."""
    suite = _suite(args)
    if args.json:
        print_json(suite.summary())
        return 0
    m = suite.manifest
    print(f"{m.name} {m.version}  (public seed {m.public_seed})")
    print(f"{'category':14} {'name':32} {'points':>6} {'items':>5}  scoring")
    for category in m.categories:
        print(f"{category.id:14} {category.name:32} {category.points:6g} {category.items:5d}  {category.scoring}")
    if m.efficiency_points:
        print(f"{'efficiency':14} {'Efficiency modifier (not a category)':32} {m.efficiency_points:6g} {'':5}  "
              f"3.5 x mean action level + 1.5 x mean token level over successful tasks (amendment 001 §1)")
    print(f"{'total':14} {'':32} {m.total_points:6g} {m.total_items:5d}")
    if m.efficiency_points:
        print(f"{len(m.categories)} categories, {m.capability_points:g} + {m.efficiency_points:g} points, "
              f"{len(suite.items)} tasks; pass: every category and the {m.capability_points:g} capability points "
              f"at least {m.pass_fraction:.0%}; the modifier has no threshold (amendment 001 §1, §10)")
    else:
        print(f"{len(m.categories)} categories, {m.total_points:g} points, {len(suite.items)} items; "
              f"pass: every category and the total at least {m.pass_fraction:.0%} (amendment 001 §10)")
    if args.list:
        print()
        for item in suite.items:
            print(f"{item.id:36} {item.scoring:11} w={item.weight:g}  {item.title}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """Print one instance as the model sees it; --answer adds the key and the reference response."""
    suite = _suite(args)
    pool = _pool(args, suite)
    item = suite.item(args.item)
    kind = kind_of(item)
    task = build_task(suite, item, pool) if kind.episodic else None
    instance = generate(suite, item, pool, args.pack, task)
    print(f"# {item.id} ({item.category}, {item.scoring}) | {suite.manifest.name} {suite.manifest.version} | "
          f"pool {pool.label}")
    print(instance.prompt)
    shown = kind.show(instance, task, args.answer)
    if shown:
        print(shown)
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    """Check every parametrized item's guarantees over N seeds, each kind by its own verify; non-zero on failure."""
    suite = _suite(args)
    pool = _pool(args, suite)
    by_verify: dict = {}  # kinds that share one verify (GI's scored-in-code kinds) check their items together
    chosen = [suite.item(i) for i in args.only] if args.only else suite.items
    for item in chosen:
        by_verify.setdefault(type(kind_of(item)).verify, []).append(item)
    failed, unverified = [], []
    for items in by_verify.values():
        kind = kind_of(items[0])
        seeds = args.seeds or kind.verify_seeds
        outcome = kind.verify(suite, items, pool, seeds,
                              lambda text: print(f"  … {text}", file=sys.stderr, flush=True))
        if outcome is None:
            unverified += [i.id for i in items]
            continue
        print(f"verify {suite.manifest.name} {suite.manifest.version}, pool {pool.label}, {seeds} seeds per item"
              f"{'; ' + outcome.method if outcome.method else ''}", flush=True)
        print(outcome.table)
        print(outcome.summary)
        failed += outcome.failed
    if unverified:
        print(f"{len(unverified)} authored items are not parametrized and have no verify (amendment 001 §4)")
    if failed:
        raise VerificationFailed(f"verify failed for {len(failed)} item(s): {', '.join(failed)}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Run a model on a suite (or resume a run folder) and print the report; exit 3 on a persistent outage."""
    from esac_kit.cache import ResponseCache, default_cache_dir
    from esac_kit.report import format_report
    from esac_kit.runner import RetryPolicy
    from esac_kit.runs import check_keys, execute, keep_pyarrow_out, plan_resume, plan_run, terminal_progress

    if args.own_process:
        keep_pyarrow_out()
    policy = RetryPolicy(outage_budget_s=args.outage_budget_s, base_s=args.retry_base_s,
                         max_attempts=args.max_attempts, request_timeout_s=args.request_timeout_s,
                         idle_timeout_s=args.idle_timeout_s, batch_poll_s=args.batch_poll_s)
    cache = ResponseCache(None if args.no_cache else (args.cache or default_cache_dir()))
    if args.resume:
        run = plan_resume(args.resume, args.heldout_seed_file, args.items)
        if args.no_time_budget or args.unsafe_sandbox or args.model_param or args.batch:
            raise ConfigError("--no-time-budget, --unsafe-sandbox, -M and --batch are part of a run's definition: a "
                              "resumed run keeps the ones it started with")
        _official_or_refuse(args, run.config)
        print(f"resuming {run.folder}", flush=True)
    else:
        run = plan_run(args.suite, _pool_name(args), args.model, args.judge, args.concurrency, args.temperature,
                       seed=args.seed, seed_file=args.heldout_seed_file, pack=args.pack, only=args.only,
                       reports_dir=args.reports, items_dir=args.items, time_budgets=not args.no_time_budget,
                       unsafe_sandbox=args.unsafe_sandbox, model_params=args.model_param, batch=args.batch)
        config, manifest = run.config, run.suite.manifest
        if args.estimate:
            from esac_kit.cost import estimate, format_estimate, load_prices

            print(f"{manifest.name} {manifest.version}, model {config.model}, judge {config.judge or '-'}: "
                  f"{len(run.items)} items")
            print(format_estimate(estimate(run, load_prices())))
            return 0
        _official_or_refuse(args, config)
        check_keys(config)  # before the run and its folder are announced
        print(f"run {config.run_id}: {manifest.name} {manifest.version}, model {config.model}, "
              f"judge {config.judge or '-'}, pool {run.pool.label}\nfolder {run.folder}", flush=True)
        for note in config.notes:
            print(f"NOTE: {note}", flush=True)
    report = execute(run, policy, cache, terminal_progress())
    print(format_report(report))
    print(f"artefacts: {run.folder}\nobservations.parquet and the charts (PNG, SVG): esac-kit report {run.folder}")
    return 0


def _official_or_refuse(args: argparse.Namespace, config) -> None:
    """With --official, a run that would be unofficial stops before it starts, saying why."""
    if args.official and config.notes:
        raise ConfigError(f"--official: this run would be unofficial: {'; '.join(config.notes)}")


def cmd_report(args: argparse.Namespace) -> int:
    """Re-render a run folder's artefacts from its journal; --html writes the offline report page, --latex its
    tables, --notebook-html the report notebook's export, --json prints the report as JSON and nothing else."""
    from esac_kit.artefacts import write_artefacts
    from esac_kit.journal import JOURNAL_FILE, read_journal, read_unlanded_retries
    from esac_kit.report import build_report, format_report
    from esac_kit.runs import load_config

    config = load_config(args.run)
    suite = load_suite(config.suite, args.items)
    if suite.manifest.version != config.version:
        raise ConfigError(f"{args.run}: a run of {config.suite} {config.version} cannot be rendered by the "
                          f"{suite.manifest.version} item bank")
    observations = read_journal(args.run / JOURNAL_FILE, owner=False)  # the run may still be appending
    report = build_report(suite, config, observations, read_unlanded_retries(args.run))
    written = write_artefacts(args.run, report, observations)
    if args.html:
        from esac_kit.report_html import write_report_html

        written.append(write_report_html(args.run, report, observations))
    if args.latex:
        from esac_kit.report_latex import write_report_latex

        written.append(write_report_latex(args.run, report))
    if args.notebook_html:
        written.append(export_html(args.run))
    if args.json:  # only the JSON on stdout, so that it pipes into a parser
        print(report.model_dump_json(indent=2))
        return 0
    print(format_report(report))
    print("artefacts: " + ", ".join(path.name for path in written))
    return 0


REPORT_NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "report.py"


def export_html(run: Path) -> Path:
    """Run the report notebook headless on a run folder and save it as <run>/report-notebook.html (`marimo export
    html`; beside the offline report.html, not over it)."""
    import subprocess

    if not REPORT_NOTEBOOK.is_file():
        raise ConfigError(f"{REPORT_NOTEBOOK}: the report notebook is missing: --notebook-html needs the kit's "
                          f"source tree")
    target = run / "report-notebook.html"
    command = [sys.executable, "-m", "marimo", "export", "html", str(REPORT_NOTEBOOK), "-o", str(target), "--force",
               "--", "--run", str(run.resolve())]
    try:
        # from the kit's root, so marimo reads [tool.marimo] in its pyproject.toml
        done = subprocess.run(command, capture_output=True, text=True, timeout=600,
                              cwd=REPORT_NOTEBOOK.parent.parent)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise EsacError(f"marimo export html failed: {error}") from None
    if done.returncode != 0 or not target.is_file():
        lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        detail = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "no output")
        raise EsacError(f"marimo export html exited {done.returncode} on {run}: {detail}")
    return target


VIEW_NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "view.py"


def cmd_view(args: argparse.Namespace) -> int:
    """Read a run's samples: --html writes one offline page (default RUN/view.html), else the viewer app is served
    on 127.0.0.1 until Ctrl-C (`marimo run notebooks/view.py`)."""
    import subprocess

    from esac_kit import viewer

    run = viewer.load_run(args.run, args.heldout_seed_file, args.items, args.pack)  # bad input stops here, once
    if args.html:
        target = viewer.write_page(run, args.output)
        for note in run.notes:
            print(f"NOTE: {note}")
        print(f"{target}: {len(run.observations)} observations of {len(run.samples)} items")
        return 0
    if args.output:
        raise ConfigError("-o goes with --html: `esac-kit view RUN --html -o FILE`")
    if not VIEW_NOTEBOOK.is_file():
        raise ConfigError(f"{VIEW_NOTEBOOK}: the viewer notebook is missing: serving needs the kit's source tree")
    passed = ["--run", str(args.run.resolve())]
    for flag, value in (("--items", args.items), ("--heldout-seed-file", args.heldout_seed_file),
                        ("--pack", args.pack)):
        if value:
            passed += [flag, str(Path(value).resolve())]
    command = [sys.executable, "-m", "marimo", "run", str(VIEW_NOTEBOOK), "--host", "127.0.0.1", "--port",
               str(args.port), "--headless", "--no-sandbox", "--", *passed]
    print(f"viewer of {args.run} on http://127.0.0.1:{args.port} (Ctrl-C stops it)", flush=True)
    # from the kit's root, so marimo reads [tool.marimo] in its pyproject.toml
    server = subprocess.Popen(command, cwd=VIEW_NOTEBOOK.parent.parent)
    try:
        code = server.wait()
    except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM is how a viewer is meant to stop
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        return 143 if isinstance(stop, Terminated) else 0
    if code != 0:
        raise EsacError(f"marimo run exited {code} serving {args.run} (is port {args.port} free? try --port N)")
    return 0


def cmd_rubric_check(args: argparse.Namespace) -> int:
    """Judge every anchor of the judge-graded items as a run judges an answer and test each required order."""
    from esac_kit.model_params import check_model_params, openai_reasoning, parse_model_params
    from esac_kit.providers import parse_model
    from esac_kit.runner import RetryPolicy

    suite = _suite(args)
    judged = [i for i in suite.items if kind_of(i).judged]
    if args.item:
        judged = [suite.item(args.item)]
        if not kind_of(judged[0]).judged:
            raise ConfigError(f"item '{args.item}' is not judge-graded: it has no rubric to check")
    pin = suite.manifest.judge
    judge_name = args.judge or (pin.model if pin else None)
    if judge_name is None:
        raise ConfigError("no judge: pass --judge MODEL")
    policy = RetryPolicy(outage_budget_s=args.outage_budget_s, base_s=args.retry_base_s, max_attempts=args.max_attempts)
    params = parse_model_params(args.model_param)
    if params.recorded() and pin and judge_name == pin.model:
        raise ConfigError(f"-M: the pinned judge {pin.model} takes the suite's parameters only (amendment 001 §5); "
                          f"-M applies to another judge under test (--judge MODEL)")
    ref = parse_model(judge_name)
    if openai_reasoning(ref, params):  # it takes no temperature: the pinned one cannot be sent to it
        print(f"NOTE: {judge_name} is a reasoning model: the suite's judge temperature is not sent", flush=True)
    check_model_params(ref, params, 1.0 if openai_reasoning(ref, params) else pin.temperature if pin else 0.7,
                       pin.max_tokens if pin else 1024)
    outcome = kind_of(judged[0]).check_rubrics(suite, judged, judge_name, args.pack, policy,
                                               lambda text: print(text, flush=True), params)
    print(outcome.table)
    print(outcome.summary)
    if outcome.failed:
        raise VerificationFailed(f"rubric order violated for {', '.join(outcome.failed)}")
    return 0


def cmd_fingerprints(args: argparse.Namespace) -> int:
    """Show the suite's fingerprints against its version history; --release records a change with its bump."""
    from esac_kit.fingerprints import check_versions, compute, open_draft, read_versions, release, released

    suite = _suite(args)
    history = read_versions(suite)
    now, latest = compute(suite), released(history)[-1]
    print(f"{suite.manifest.name} {suite.manifest.version}: content {now.content}, scoring {now.scoring}, "
          f"instances {now.instances}")
    print(f"recorded {latest.version} ({latest.change}): content {latest.content}, scoring {latest.scoring}, "
          f"instances {latest.instances}")
    if args.draft:
        if args.release:
            raise ConfigError("--draft opens the next version and --release records it: give one of them")
        record = open_draft(suite, major=args.major)
        print(f"opened {record.version} ({record.change}) as a draft: runs on it are unofficial until "
              f"`esac-kit fingerprints --suite {suite.manifest.suite} --release`" if record
              else "nothing changed: no draft")
        return 0
    if history[-1].status == "draft":
        print(f"draft {history[-1].version} ({history[-1].change}): fingerprints are recorded when it is released")
    if args.release:
        # the specs beside the items folder: a copy of items/ elsewhere has none, so its release writes no changelog
        changelog = suite.folder.parent.parent / "specs" / f"esac-{suite.manifest.suite}.md"
        record = release(suite, changelog, major=args.major)
        if record is None:
            print("nothing changed: no release")
        else:
            print(f"released {record.version} ({record.change}); "
                  + (f"describe it in {changelog}" if changelog.is_file() else f"no changelog at {changelog}"))
        return 0
    if args.major:
        raise ConfigError("--major goes with --release or --draft: `esac-kit fingerprints --release --major`")
    problems = check_versions(suite, now)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    if problems:
        raise VerificationFailed(f"{len(problems)} version problem(s) in {suite.folder / 'versions.toml'}")
    print("a draft: the version history is consistent" if history[-1].status == "draft"
          else "fingerprints match the recorded version")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired comparison of two runs on the same items; refused across major versions (amendment 001 §9)."""
    from esac_kit.compare import comparability, comparison_record, load_report, paired_table

    a, b = load_report(args.run_a), load_report(args.run_b)
    notes = comparability(a, b)
    table = paired_table(args.run_a, args.run_b)
    if args.json:
        print_json(comparison_record(a, b, args.run_a, args.run_b, notes, table))
        return 0
    print(f"A: {a.model.name} {a.suite.upper()} {a.version} run {a.run_id}: {a.total:.2f}")
    print(f"B: {b.model.name} {b.suite.upper()} {b.version} run {b.run_id}: {b.total:.2f}")
    for note in notes:
        print(f"NOTE: {note}")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0


def cmd_calibration(args: argparse.Namespace) -> int:
    """A stand-in's runs per item and seed with measured difficulty, against the headroom targets (exit 1: missed)."""
    from esac_kit.calibration import calibrate, format_calibration

    calibration = calibrate(args.runs, args.items, args.skip_superseded)
    print(format_calibration(calibration))
    return 0 if calibration.meets_targets else 1


def cmd_leaderboard(args: argparse.Namespace) -> int:
    """One table of finished runs, grouped so that only comparable runs (same suite and major) stand together."""
    from esac_kit.compare import format_leaderboard_group, leaderboard, leaderboard_groups, leaderboard_records

    frame, left_out = leaderboard(args.reports, args.items)
    if args.json:
        print_json({"runs": leaderboard_records(frame), "notes": left_out})
        return 0
    for note in left_out:
        print(f"NOTE: {note}")
    if frame.empty:
        print(f"no comparable finished runs under {args.reports}")
        return 0
    for suite, major_version, group in leaderboard_groups(frame):
        print(f"\n{suite.upper()} {major_version}.x (comparable with each other only; scores with exact 95 % "
              f"intervals)")
        print(format_leaderboard_group(group))
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    """List the run folders under a reports folder, newest first, with their status, score, cost and start time."""
    from esac_kit.run_folders import STATUS_RULES, format_runs, list_runs

    listings = list_runs(args.reports, include_failed=True)
    shown = [listing for listing in listings if args.all or listing.status != "failed"]
    if args.json:
        print_json([listing.record() for listing in shown])
        return 0
    print(format_runs(shown) if shown else f"no runs under {args.reports}")
    hidden = len(listings) - len(shown)
    if hidden:
        print(f"NOTE: {hidden} failed start(s) not shown ({STATUS_RULES['failed']}): `esac-kit runs --all` lists them")
    return 0


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive: give 1 or more")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: give 1 to 65535")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number above 0")
    return value


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line and exit 2, like every other bad input."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    from esac_kit.run_folders import STATUS_RULES

    parser = OneLineParser(prog="esac-kit", description="ESAC kit: generate, run, score and report ESAC.")
    parser.add_argument("--version", action="version", version=f"esac-kit {__version__}")
    common = OneLineParser(add_help=False)
    common.add_argument("--suite", default="gi", help="suite id (default: gi)")
    common.add_argument("--items", type=Path, default=None, help="items folder (default: $ESAC_ITEMS or the kit's)")
    pools = OneLineParser(add_help=False)
    group = pools.add_mutually_exclusive_group()
    group.add_argument("--seed", help="an explicit, non-secret pool seed")
    group.add_argument("--heldout", action="store_true", help="the held-out pool (seed from $ESAC_HELDOUT_SEED)")
    pools.add_argument("--heldout-seed-file", type=Path, help="read the held-out seed from this file")
    pools.add_argument("--pack", type=Path, help="private item pack with held-out variants of authored items")
    commands = parser.add_subparsers(dest="command", required=True)

    items = commands.add_parser("items", parents=[common], help="categories, points, item counts, totals")
    items.add_argument("--list", action="store_true", help="also list every item")
    items.add_argument("--json", action="store_true", help="print the categories and every item as JSON")
    items.set_defaults(handler=cmd_items)

    show = commands.add_parser("show", parents=[common, pools], help="one instance as the model sees it")
    show.add_argument("item", help="item id, e.g. quant-tank-mixing")
    show.add_argument("--answer", action="store_true", help="add the answer key and the reference response")
    show.set_defaults(handler=cmd_show)

    verify = commands.add_parser("verify", parents=[common, pools], help="check every parametrized item")
    verify.add_argument("--seeds", type=positive_int, default=None, help="pool seeds per item (default: 200; 50 for ag)")
    verify.add_argument("--only", nargs="+", action="extend", metavar="ITEM", help="verify only these items")
    verify.set_defaults(handler=cmd_verify)

    run = commands.add_parser("run", parents=[common, pools], help="run a model on a suite, or --resume a run")
    run.add_argument("--model", default="local", help="local | openai:MODEL[@URL] | anthropic:MODEL[@URL] | "
                                                      "scripted:reference|wasteful|null|unsafe (ag only)")
    run.add_argument("--judge", default=None, help="judge model (default: the suite's pinned judge; "
                                                  "local when --model is local)")
    run.add_argument("--temperature", type=float, default=1.0, help="model sampling temperature (default 1.0)")
    run.add_argument("-M", "--model-param", action="append", metavar="KEY=VALUE",
                     help="a model parameter, repeatable: reasoning_effort (OpenAI), thinking_budget (Anthropic, "
                          "tokens), top_p, seed, stream, reasoning (true/false), max_tokens_field")
    run.add_argument("--concurrency", type=positive_int, default=4, help="parallel requests per provider (default 4)")
    run.add_argument("--only", nargs="+", action="extend", metavar="ITEM", help="run only these items (a partial, unofficial run)")
    run.add_argument("--official", action="store_true",
                     help="refuse to start (exit 2) unless the run is official: a recorded item bank, the held-out "
                          "pool, the pinned judge, every item")
    run.add_argument("--reports", type=Path, default=Path("reports"), help="reports folder (default: reports)")
    run.add_argument("--resume", type=Path, metavar="RUN", help="continue a killed or aborted run folder")
    run.add_argument("--cache", type=Path, help="response cache folder (default: $ESAC_CACHE or ~/.cache/esac-kit)")
    run.add_argument("--no-cache", action="store_true", help="neither read nor write the response cache")
    run.add_argument("--no-time-budget", action="store_true",
                     help="no time budgets, for slow answerers such as people (recorded; the run is unofficial)")
    run.add_argument("--unsafe-sandbox", action="store_true",
                     help="run model code even where the kernel offers no sandbox wall (recorded; unofficial)")
    run.add_argument("--outage-budget-s", type=positive_float, default=600.0,
                     help="retry a failing call for up to this many seconds of outage, then abort (default 600)")
    run.add_argument("--batch", action="store_true",
                     help="send answers and judgements through the provider's batch API (OpenAI Batch, Anthropic "
                          "Message Batches) at its discount; AG episodes stay interactive")
    run.add_argument("--batch-poll-s", type=positive_float, default=30.0, help="how often a batch is polled (30)")
    run.add_argument("--estimate", action="store_true",
                     help="print the run's most calls, tokens and cost, then stop before any request")
    run.add_argument("--idle-timeout-s", type=positive_float, default=60.0,
                     help="a streamed reply that sends nothing (not even a ping) this long is a stalled connection, "
                          "retried (default 60)")
    run.add_argument("--max-attempts", type=positive_int, default=None,
                     help="also stop after this many attempts of one call (default: the outage budget decides)")
    run.add_argument("--retry-base-s", type=positive_float, default=1.0, help="backoff base in seconds")
    run.add_argument("--request-timeout-s", type=positive_float, help="HTTP timeout per call (default: time budget + 30 s)")
    run.set_defaults(handler=cmd_run)

    rubric = commands.add_parser("rubric", help="rubric tools")
    rubric_commands = rubric.add_subparsers(dest="rubric_command", required=True)
    rubric_check = rubric_commands.add_parser("check", parents=[common], help="judge anchors, test required orders")
    rubric_check.add_argument("item", nargs="?", help="one judge-graded item (default: all)")
    rubric_check.add_argument("--judge", help="judge model (default: the suite's pinned judge)")
    rubric_check.add_argument("--pack", type=Path, help="also check the variants of a private item pack")
    rubric_check.add_argument("-M", "--model-param", action="append", metavar="KEY=VALUE",
                              help="a parameter of a judge under test (not the pinned judge), as for run")
    rubric_check.add_argument("--outage-budget-s", type=positive_float, default=600.0,
                              help="retry a failing judge call for up to this many seconds (default 600)")
    rubric_check.add_argument("--max-attempts", type=positive_int, default=None, help="attempts per judge call")
    rubric_check.add_argument("--retry-base-s", type=positive_float, default=1.0, help="backoff base in seconds")
    rubric_check.set_defaults(handler=cmd_rubric_check)

    prints = commands.add_parser("fingerprints", parents=[common], help="content and scoring fingerprints")
    prints.add_argument("--release", action="store_true", help="record the current suite as a new version")
    prints.add_argument("--major", action="store_true", help="with --release or --draft: a major bump whatever changed")
    prints.add_argument("--draft", action="store_true",
                        help="open the next version as a draft (unofficial runs) until --release records it")
    prints.set_defaults(handler=cmd_fingerprints)

    compare = commands.add_parser("compare", help="paired comparison of two runs")
    compare.add_argument("run_a", type=Path)
    compare.add_argument("run_b", type=Path)
    compare.add_argument("--json", action="store_true", help="print the runs, notes and paired table as JSON")
    compare.set_defaults(handler=cmd_compare)

    calibration = commands.add_parser("calibration", help="a stand-in's runs against the difficulty targets")
    calibration.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="run folders of one suite")
    calibration.add_argument("--items", type=Path, default=None, help="items folder (default: $ESAC_ITEMS or the kit's)")
    calibration.add_argument("--skip-superseded", action="store_true",
                             help="leave out items the bank now generates differently (re-measured by a later run)")
    calibration.set_defaults(handler=cmd_calibration)

    board = commands.add_parser("leaderboard", help="one table of comparable runs")
    board.add_argument("reports", type=Path, nargs="?", default=Path("reports"))
    board.add_argument("--items", type=Path, default=None,
                       help="items folder whose versions.toml records each version's scoring fingerprint")
    board.add_argument("--json", action="store_true", help="print the rows and the notes as JSON")
    board.set_defaults(handler=cmd_leaderboard)

    runs = commands.add_parser("runs", help="list run folders with their status, score, cost and start time",
                               description="Statuses: " + "; ".join(f"{k}: {v}" for k, v in STATUS_RULES.items()))
    runs.add_argument("reports", type=Path, nargs="?", default=Path("reports"),
                      help="reports folder (default: reports)")
    runs.add_argument("--all", action="store_true", help="also list failed starts")
    runs.add_argument("--json", action="store_true", help="print a JSON list, one object per run folder")
    runs.set_defaults(handler=cmd_runs)

    report = commands.add_parser("report", parents=[common], help="re-render a run folder's report")
    report.add_argument("run", type=Path, help="run folder")
    report.add_argument("--html", action="store_true",
                        help="also write <run>/report.html: the whole report in one offline file (no network, no code)")
    report.add_argument("--latex", action="store_true",
                        help="also write <run>/report.tex: the category and item tables for papers (booktabs)")
    report.add_argument("--notebook-html", action="store_true",
                        help="also export the report notebook as <run>/report-notebook.html (marimo export html; "
                             "its viewer loads from a CDN, so it needs a network)")
    report.add_argument("--json", action="store_true", help="print the report as JSON instead of the summary")
    report.set_defaults(handler=cmd_report)

    view = commands.add_parser("view", help="read a run's samples: prompts, answers, keys, verdicts, AG steps")
    view.add_argument("run", type=Path, help="run folder")
    view.add_argument("--html", action="store_true", help="write one offline page instead of serving the app")
    view.add_argument("-o", "--output", type=Path, help="with --html: the page's path (default RUN/view.html)")
    view.add_argument("--port", type=port_number, default=2718, help="port of the app on 127.0.0.1 (default 2718)")
    view.add_argument("--items", type=Path, default=None, help="items folder (default: $ESAC_ITEMS or the kit's)")
    view.add_argument("--heldout-seed-file", type=Path,
                      help="a held-out run's seed, to regenerate its prompts and keys (else only the journal shows)")
    view.add_argument("--pack", type=Path, help="the private item pack of a held-out run (default: the run's)")
    view.set_defaults(handler=cmd_view)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM: the run unwinds like Ctrl-C, and the process exits 143 as a terminated program does."""


def _stop_on_sigterm(signum, frame) -> None:
    # A terminated run unwinds like Ctrl-C: the journal is closed and the embedded server stopped.
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `esac-kit` console script and of `python -m esac_kit`."""
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm) if on_main_thread else None
    try:
        return _dispatch(argv)
    finally:
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)
        if argv is None:  # the process exits next: frozen objects spare its shutdown collections (~0.5 s)
            gc.freeze()


def _dispatch(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    args.own_process = argv is None  # the command line's own process, which exits when the command is done
    if getattr(args, "heldout_seed_file", None) and not args.heldout:
        args.heldout = True
    try:
        return args.handler(args)
    except EsacError as error:
        print(f"esac-kit: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt as stop:
        print("esac-kit: interrupted; a run keeps its finished work: `esac-kit run --resume RUN`", file=sys.stderr)
        return 143 if isinstance(stop, Terminated) else 130
    except BrokenPipeError:  # `esac-kit runs --json | head`: the reader left; stdout goes nowhere, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
