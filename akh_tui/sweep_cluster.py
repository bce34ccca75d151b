"""A sweep on a Dask cluster: the client (a local cluster of processes, or an external
scheduler), the tasks sent, the results stored as they come back, the progress bar.

Used by `akh-tui sweep run` and `akh-tui sweep bench`; dask is imported only here, and only
when a sweep runs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.text import Text

from .engine.errors import InputError

# How long to wait for an external scheduler to answer before giving up (exit 2).
CONNECT_TIMEOUT = "15s"


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


def host_port(address: str) -> tuple[str, int] | None:
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

    hp = host_port(address)
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

