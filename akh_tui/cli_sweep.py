"""`akh-tui sweep …`: many headless runs as Dask tasks, their results, and opening one of them.

Nothing heavy is imported here at start-up: dask comes in only when a sweep runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.text import Text

from .engine.errors import InputError

# How long to wait for an external scheduler to answer before giving up (exit 2).
CONNECT_TIMEOUT = "15s"


def add_parser(sub, common: argparse.ArgumentParser | None = None) -> None:
    from .cli import positive

    sw = sub.add_parser("sweep", help="many runs over psyche settings and seeds, on one machine or a Dask cluster")
    ssub = sw.add_subparsers(dest="sweep_command", required=True)
    run = ssub.add_parser("run", help="run a sweep file's runs (only those the folder does not hold yet)")
    run.add_argument("file", metavar="SWEEP.toml")
    run.add_argument("--out", help="the sweep's folder (default: the sweep file's name without .toml, beside it)")
    run.add_argument("--workers", type=positive, help="local worker processes (default: the number of cores)")
    run.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="send the runs to this Dask scheduler instead of a local cluster")
    run.add_argument("--check", action="store_true", help="validate the file and print how many runs it makes; run nothing")
    run.add_argument("--json", action="store_true", help="machine-readable summary")
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


def dispatch(args, out: Console, err: Console) -> int:
    if args.sweep_command == "run":
        return cmd_run(args, out, err)
    if args.sweep_command == "report":
        return cmd_report(args, out)
    if args.sweep_command == "open":
        return cmd_open(args, out)
    from .bench_sweep import main as bench_main

    return bench_main(args, out)


# ---- run ----------------------------------------------------------------------------------

def default_out(sweep_file: str) -> Path:
    p = Path(sweep_file)
    return p.with_suffix("") if p.suffix == ".toml" else p.with_name(p.name + ".sweep")


def cmd_run(args, out: Console, err: Console) -> int:
    from .engine.sweep import load_sweep

    sweep = load_sweep(args.file)
    if args.scheduler and args.workers:
        raise InputError("--workers sizes the local cluster; with --scheduler the cluster's own workers run the sweep", field="--workers")
    if args.scheduler:
        _host_port(args.scheduler)  # a malformed address is refused before anything runs
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


def start_client(workers: int | None, scheduler: str | None):
    """(client, cluster or None). A local cluster: processes, one thread each (runs are
    CPU-bound Python), on 127.0.0.1 only, without the dashboard."""
    import logging

    from dask.distributed import Client, LocalCluster

    if scheduler:
        _reachable(scheduler)
        try:
            return Client(scheduler, timeout=CONNECT_TIMEOUT), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the scheduler {scheduler}: {exc}", field="--scheduler") from None
    import dask

    n = workers or os.cpu_count() or 1
    # Runs are short (tens of ms): the scheduler hands each worker its share at once instead of
    # one task per thread at a time ("queuing"), so no worker waits a round trip between runs.
    with dask.config.set({"distributed.scheduler.worker-saturation": "inf"}):
        # no dashboard; the scheduler's small HTTP server (health checks) on any free local port
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=logging.ERROR,
                               scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})
    return Client(cluster), cluster


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of a tcp:// address; None for other schemes (tls://, ...), left to the client."""
    from urllib.parse import urlsplit

    if "://" not in address:
        address = "tcp://" + address  # dask's own default scheme
    if not address.startswith("tcp://"):
        return None
    try:
        u = urlsplit(address)
        host, port = u.hostname, u.port
    except ValueError as exc:
        raise InputError(f"not a scheduler address: {exc}", field="--scheduler") from None
    if not host or port is None:
        raise InputError(f"not a scheduler address {address!r} (expected tcp://HOST:PORT)", field="--scheduler")
    return host, port


def _reachable(address: str) -> None:
    """A refused or unresolvable tcp:// address fails at once (the client would retry until
    its timeout)."""
    import socket

    hp = _host_port(address)
    if hp is None:
        return
    try:
        socket.create_connection(hp, timeout=10).close()
    except OSError as exc:
        raise InputError(f"cannot reach the scheduler {address}: {exc.strerror or exc}", field="--scheduler") from None


def run_sweep(sweep, folder: Path, workers: int | None = None, scheduler: str | None = None, err: Console | None = None,
              on_result: Callable[[dict, object], None] | None = None) -> dict:
    """Run the sweep's missing runs and store each result as it arrives.

    `on_result(result, client)` is called after each stored result (tests use it to kill a
    worker, or raise KeyboardInterrupt as Ctrl-C would). Ctrl-C keeps every stored row."""
    from .engine.sweep import run_task
    from .engine.sweepstore import SweepStore

    store = SweepStore(folder, sweep)
    try:
        done = store.done_ids()
        all_tasks = sweep.tasks()
        tasks = [t for t in all_tasks if t.run_id not in done]
        summary = {"total": len(all_tasks), "skipped": len(all_tasks) - len(tasks), "ran": 0, "lost": 0,
                   "interrupted": False, "folder": str(folder)}
        if tasks:
            _drive(store, tasks, summary, run_task, workers, scheduler, err, on_result, sweep.bundles)
        summary["stored"], summary["failed"] = store.count()
        return summary
    finally:
        store.close()


def _drive(store, tasks, summary, run_task, workers, scheduler, err, on_result, bundles) -> None:
    progress = _progress(err, len(tasks), summary["skipped"])
    client, cluster = start_client(workers, scheduler)
    try:
        collect(client, store, tasks, summary, run_task, progress, on_result, bundles)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def collect(client, store, tasks, summary, run_task, progress=None, on_result=None, bundles: dict | None = None) -> None:
    """Submit the tasks to the client's cluster and store each result as it comes back.
    `bundles` (scenario files as text) goes to every worker once, not with every task."""
    from dask.distributed import as_completed

    futures = []
    try:
        extra = []
        if bundles:
            (shared,) = client.scatter([bundles], broadcast=True)
            extra = [[shared] * len(tasks)]
        # The key names the run: the same run is one task however often it is submitted.
        futures = client.map(run_task, tasks, *extra, key=[f"akh-sweep-{t.run_id}" for t in tasks], pure=False)
        failed = 0
        t0 = time.perf_counter()
        if progress is not None:
            progress.start()
        # whatever has finished is fetched in one gather (a gather per result costs the
        # client and scheduler more CPU than the transfer)
        for batch in as_completed(futures).batches():
            done = [f for f in batch if f.status == "finished"]
            summary["lost"] += len(batch) - len(done)  # the task never raises: a worker died too often
            results = client.gather(done, errors="skip")
            for f in batch:
                f.release()
            for result in results:
                if store.add(result):
                    summary["ran"] += 1
                    failed += result["row"]["status"] == "failed"
                if progress is not None:
                    progress.update(progress.task_ids[0], advance=1, failed=failed,
                                    rate=summary["ran"] / max(time.perf_counter() - t0, 1e-9))
                if on_result is not None:
                    on_result(result, client)
    except KeyboardInterrupt:
        summary["interrupted"] = True
    finally:
        if progress is not None:
            progress.stop()
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)


def _progress(err: Console | None, total: int, skipped: int):
    if err is None:
        return None
    if skipped:
        err.print(Text(f"{skipped} run(s) already in the folder; running the {total} missing", style="yellow"))
    if not err.is_terminal:  # a log or a pipe gets the summary line only
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    p = Progress(
        TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
        TextColumn("[red]{task.fields[failed]} failed"), TextColumn("{task.fields[rate]:.1f} runs/s"),
        TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
        console=err, transient=False,
    )
    p.add_task("sweep", total=total, failed=0, rate=0.0)
    return p


# ---- report and open ----------------------------------------------------------------------

def cmd_report(args, out: Console) -> int:
    from . import sweep_report
    from .engine.sweepstore import SweepStore

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


def cmd_open(args, out: Console) -> int:
    import tempfile

    from .engine.sweepstore import SweepStore

    if args.run is None:
        if args.print_trace:
            raise InputError("--print needs a RUN", field="--print")
        SweepStore(args.dir, create=False).close()  # no sweep there: exit 2 before any screen
        from .tui.sweep_screen import browse

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
    from .tui.app import run

    # the workbench's replay reads a trace file: the stored trace goes to a private temp file
    with tempfile.TemporaryDirectory(prefix="akh-sweep-open-") as d:
        path = Path(d) / f"{rid}.jsonl"
        path.write_text(text, encoding="utf-8")
        return run(trace_file=str(path))
