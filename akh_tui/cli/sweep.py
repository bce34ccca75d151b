"""`akh-tui sweep …`: many headless runs as Dask tasks, their results, and opening one of them.

Nothing heavy is imported here at start-up: dask comes in only when a sweep runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

from ..engine import InputError
from .argtypes import Subcommands

def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    from .argtypes import positive

    sw = sub.add_parser("sweep", help="many runs over psyche settings and seeds, on one machine or a Dask cluster")
    sw.set_defaults(handler=dispatch)
    ssub = sw.add_subparsers(dest="sweep_command", required=True)
    run = ssub.add_parser("run", help="run a sweep file's runs (only those the folder does not hold yet)")
    run.add_argument("file", metavar="SWEEP.toml")
    run.add_argument("--out", help="the sweep's folder (default: the sweep file's name without .toml, beside it)")
    run.add_argument("--workers", type=positive, help="local worker processes (default: the number of cores)")
    run.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                     help="send the runs to this Dask scheduler (tcp://, tls://, ws:// or wss://) instead of a local "
                          "cluster; every scheduler and worker in it is trusted (see the README)")
    run.add_argument("--check", action="store_true", help="validate the file and print how many runs it makes; run nothing")
    run.add_argument("--json", action="store_true", help="machine-readable summary")
    from .trust import add_flags

    add_flags(run)
    rep = ssub.add_parser("report", help="per axis value: mean and 95%% interval of each outcome; a heatmap; the extreme runs")
    rep.add_argument("dir", metavar="DIR")
    rep.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report (inline SVG, no network)")
    rep.add_argument("--outcome", default="goals_completed", help="the outcome of the heatmap and the extremes (default: goals_completed)")
    rep.add_argument("--x", help="the heatmap's column axis (default: the first axis)")
    rep.add_argument("--y", help="the heatmap's row axis (default: the second axis, or seed)")
    rep.add_argument("--json", action="store_true")
    op = ssub.add_parser("open", help="replay one run of a sweep in the workbench (without RUN: browse the runs)")
    op.add_argument("dir", metavar="DIR")
    op.add_argument("run", metavar="RUN", nargs="?",
                    help="a run id (or a unique prefix of one), or #INDEX; without it, a table of the runs and "
                         "their heatmap, where enter replays a run")
    op.add_argument("--print", dest="print_trace", action="store_true", help="print the run's JSONL trace instead of opening it")
    bench = ssub.add_parser("bench", help="runs/s on 1 and 2 workers, per-task overhead, memory per worker, store size and report time")
    bench.add_argument("--runs", type=positive, default=200, help="runs per measurement (default: 200)")
    bench.add_argument("--store-runs", type=positive, default=10_000, help="rows of the store whose size and report time are measured (default: 10,000)")
    bench.add_argument("--repeat", type=positive, default=3, help="repetitions of each timing (min/median/max)")
    bench.add_argument("--json", action="store_true")


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.sweep_command == "run":
        return cmd_run(args, out, err)
    if args.sweep_command == "report":
        return cmd_report(args, out)
    if args.sweep_command == "open":
        return cmd_open(args, out)
    from ..bench.sweep import main as bench_main

    return bench_main(args, out)


# ---- run ----------------------------------------------------------------------------------

def default_out(sweep_file: str) -> Path:
    p = Path(sweep_file)
    return p.with_suffix("") if p.suffix == ".toml" else p.with_name(p.name + ".sweep")


def cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from .trust import checking, untrusted_lines
    from ..engine import load_sweep
    from ..engine import check_scheduler, run_sweep

    if args.check:  # runs nothing: imports no plugin from a folder not trusted already
        checking()
    sweep = load_sweep(args.file)
    for line in untrusted_lines(sweep.scenarios):
        err.print(Text(f"warning: {line}", style="yellow"))
    if args.scheduler and args.workers:
        raise InputError("--workers sizes the local cluster; with --scheduler the cluster's own workers run the sweep", field="--workers")
    if args.scheduler:
        check_scheduler(args.scheduler)  # a malformed address is refused before anything runs
    if args.check:
        if args.json:
            print(json.dumps({"ok": True, "file": args.file, "runs": sweep.run_count, "axes": sweep.axis_names()}))
        else:
            out.print(Text(f"{args.file}: ok, {sweep.run_count} run(s) ({len(sweep.scenarios)} scenario(s) × "
                           f"{sweep.points} point(s) × {len(sweep.seeds)} seed(s))", style="green"))
        return 0
    folder = Path(args.out) if args.out else default_out(args.file)
    summary = run_sweep(sweep, folder, workers=args.workers, scheduler=args.scheduler, err=None if args.json else err)
    if args.json:
        print(json.dumps(summary))
    else:
        style = "yellow" if summary["interrupted"] or summary["lost"] else "green"
        msg = (f"{summary['stored']} of {summary['total']} runs stored in {folder} ({summary['failed']} failed); "
               f"{summary['ran']} ran now, {summary['skipped']} were already there")
        if summary["lost"]:
            msg += f"; {summary['lost']} lost to worker failures (run the same command again to retry them)"
        if summary["interrupted"]:
            msg = "interrupted: " + msg + "; run the same command again to finish"
        out.print(Text(msg, style=style))
        if not summary["interrupted"]:
            out.print(Text(f"report: akh-tui sweep report {folder}", style="dim"))
    return 130 if summary["interrupted"] else 0


def cmd_report(args: argparse.Namespace, out: Console) -> int:
    from ..engine import sweep_report
    from ..engine import SweepStore

    store = SweepStore(args.dir, create=False)
    try:
        rep = sweep_report.build(store.meta(), store.rows(), outcome=args.outcome, x=args.x, y=args.y)
    finally:
        store.close()
    if args.html:
        try:
            Path(args.html).write_text(sweep_report.to_html(rep), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write the report: {exc.strerror or exc}", file=args.html, field="--html") from None
    if args.json:
        print(json.dumps(rep))
    else:
        sweep_report.print_report(rep, out, args.dir)
        if args.html:
            out.print(Text(f"HTML report written to {args.html}", style="dim"))
    return 0


def cmd_open(args: argparse.Namespace, out: Console) -> int:
    import tempfile

    from ..engine import SweepStore

    if args.run is None:
        if args.print_trace:
            raise InputError("--print needs a RUN", field="--print")
        SweepStore(args.dir, create=False).close()  # no sweep there: exit 2 before any screen
        from ..tui.sweep_screen import browse

        return browse(args.dir)
    store = SweepStore(args.dir, create=False)
    try:
        rid = store.find(args.run)
        text = store.trace_text(rid)
    finally:
        store.close()
    if args.print_trace:
        sys.stdout.write(text)
        return 0
    if text.startswith('{"type":"world"'):  # a cell of a sweep over a world: the workbench replays single runs
        raise InputError(f"run {rid} is a world's (a sweep over a world): `sweep open {args.dir} {rid} --print` "
                         f"prints its trace, and `world export` turns that trace into spans", field="RUN")
    from ..tui.app import run

    # the workbench's replay reads a trace file: the stored trace goes to a private temp file
    with tempfile.TemporaryDirectory(prefix="akh-sweep-open-") as d:
        path = Path(d) / f"{rid}.jsonl"
        path.write_text(text, encoding="utf-8")
        return run(trace_file=str(path))
