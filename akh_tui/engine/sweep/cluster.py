"""A sweep on a Dask cluster: the client (a local cluster of processes, or an external
scheduler), the tasks sent, the results stored as they come back, the progress bar.

Used by `akh-tui sweep run` and `akh-tui sweep bench`; dask is imported only here, and only
when a sweep runs.

What comes back from a worker is data, never code: each task returns bytes
(engine/sweep/wire.py), the client accepts results only as msgpack (which builds plain values,
never an object of the sender's choosing) and decodes and checks them itself; a result it
refuses is a failed row; the pickled type Dask reports with each result is dropped unread.
What Dask's own protocol still trusts, and this client cannot refuse:
its messages may carry pickled parts (`__Pickled__` frames, which distributed.protocol.core
unpickles whatever the deserializers say), and the scheduler's report stream is read with every
deserializer (a task's exception arrives there pickled). A malicious scheduler can therefore
run code in the client, and so can a malicious worker through a task that raises, or through a
pickled part the scheduler unpickles and passes on: joining a cluster means trusting every
scheduler and worker in it (the README's sweep section says so).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.text import Text

from ..errors import InputError
from ..urls import check_url

# How long to wait for an external scheduler to answer before giving up (exit 2).
CONNECT_TIMEOUT = "15s"
# The schemes of a Dask address a client connects to (a bare HOST:PORT is Dask's tcp://).
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss")
# How the client sends data (the scattered scenario files, as Dask's defaults; the task graph
# Dask pickles itself) and what it accepts back: msgpack only. The client passes
# its deserializers along with each request, so honest workers send results as msgpack; a
# result serialized any other way (pickle, Dask's own family, whose header is a pickled type)
# is refused with a TypeError before anything is loaded.
SEND = ["dask", "pickle"]
RECEIVE = ["msgpack"]


# What an idle local cluster spends its time on, turned down (it cost ~8% of a core doing
# nothing, issue 29): each worker's statistical profiler samples its threads every 10 ms, the
# GIL monitor every 1 ms, the system monitor (psutil) every 500 ms and every event loop wakes up
# every 20 ms to see whether it was blocked. A sweep reads none of these (no dashboard); the
# nanny hands the workers this config when it starts them.
IDLE_QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "500ms",
}


def start_client(workers: int | None, scheduler: str | None):
    """(client, cluster or None). A local cluster: processes, one thread each (runs are
    CPU-bound Python), on 127.0.0.1 only, without the dashboard."""
    from dask.distributed import Client, LocalCluster

    if scheduler:
        _reachable(scheduler)
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT, serializers=SEND, deserializers=RECEIVE)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(f"cannot reach the scheduler {scheduler}: {exc}", field="--scheduler") from None
        return _refuse_result_types(client), None
    import dask

    n = workers or os.cpu_count() or 1
    # Runs are short (tens of ms): the scheduler hands each worker its share at once instead of
    # one task per thread at a time ("queuing"), so no worker waits a round trip between runs.
    with dask.config.set({"distributed.scheduler.worker-saturation": "inf", **IDLE_QUIET}):
        # no dashboard; the scheduler's small HTTP server (health checks) on any free local port
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address=None, silence_logs=logging.ERROR,
                               scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})
    return _refuse_result_types(Client(cluster, serializers=SEND, deserializers=RECEIVE)), cluster


def _refuse_result_types(client: Any) -> Any:
    """The client, told to ignore the type a worker reports with each finished task.

    Dask passes that type on as pickle bytes, and the client unpickles them as the result
    arrives (`Client._handle_key_in_memory`, for `Future.type`): a worker could send code there
    whatever the deserializers say. A sweep never reads `Future.type`."""
    handlers = client._stream_handlers
    in_memory = handlers["key-in-memory"]

    def key_in_memory(**msg: Any) -> Any:
        msg.pop("type", None)
        return in_memory(**msg)

    handlers["key-in-memory"] = key_in_memory
    return client


def check_scheduler(address: str) -> tuple[str, int]:
    """(host, port) of a Dask scheduler address (tcp://, tls://, ws:// or wss://, or a bare
    HOST:PORT as Dask reads it); a malformed one is an InputError naming --scheduler."""
    full = address if "://" in address else "tcp://" + address
    parts = check_url(full, "--scheduler", SCHEDULER_SCHEMES)
    if parts.port is None:
        raise InputError(f"{address!r} names no port (expected tcp://HOST:PORT)", field="--scheduler")
    if parts.username is not None or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InputError(f"{parts.scheme}://{parts.hostname}:{parts.port}: a scheduler address is only "
                         f"SCHEME://HOST:PORT (no user, path or query)", field="--scheduler")
    assert parts.hostname is not None  # check_url refuses an address without a host
    return parts.hostname, parts.port


def _reachable(address: str) -> None:
    """A refused or unresolvable address fails at once (the client would retry until its
    timeout); every scheme Dask takes runs over TCP."""
    import socket

    hp = check_scheduler(address)
    try:
        socket.create_connection(hp, timeout=10).close()
    except OSError as exc:
        raise InputError(f"cannot reach the scheduler {address}: {exc.strerror or exc}", field="--scheduler") from None


def run_sweep(sweep, folder: Path, workers: int | None = None, scheduler: str | None = None, err: Console | None = None,
              on_result: Callable[[dict, object], None] | None = None) -> dict:
    """Run the sweep's missing runs and store each result as it arrives.

    `on_result(result, client)` is called after each stored result (tests use it to kill a
    worker, or raise KeyboardInterrupt as Ctrl-C would). Ctrl-C keeps every stored row."""
    from .store import SweepStore

    store = SweepStore(folder, sweep)
    try:
        done = store.done_ids()
        all_tasks = sweep.tasks()
        tasks = [t for t in all_tasks if t.run_id not in done]
        summary = {"total": len(all_tasks), "skipped": len(all_tasks) - len(tasks), "ran": 0, "lost": 0,
                   "interrupted": False, "folder": str(folder)}
        if tasks:
            _drive(store, tasks, summary, workers, scheduler, err, on_result, sweep.bundles)
        summary["stored"], summary["failed"] = store.count()
        return summary
    finally:
        store.close()


def _drive(store, tasks, summary, workers, scheduler, err, on_result, bundles) -> None:
    progress = _progress(err, len(tasks), summary["skipped"])
    client, cluster = start_client(workers, scheduler)
    try:
        collect(client, store, tasks, summary, progress, on_result, bundles)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def collect(client, store, tasks, summary, progress=None, on_result=None, bundles: dict | None = None) -> None:
    """Submit the tasks to the client's cluster and store each result as it comes back.
    `bundles` (scenario files as text) goes to every worker once, not with every task."""
    from dask.distributed import as_completed

    from .wire import worker_batch, worker_task

    futures = []
    # a refused result is reported in its run's row; Dask would also log it with a traceback
    quiet = _DropRefusals()
    logging.getLogger("distributed.protocol.core").addFilter(quiet)
    try:
        shared = None
        if bundles:
            (shared,) = client.scatter([bundles], broadcast=True)
        # The key names the run (or the batch's runs): the same runs are one task however
        # often they are submitted.
        by_key = {_batch_key(g): g for g in batches(tasks, _workers(client))}
        for fn, keys in ((worker_task, [k for k, g in by_key.items() if len(g) == 1]),
                         (worker_batch, [k for k, g in by_key.items() if len(g) > 1])):
            if keys:
                work = [by_key[k][0] if fn is worker_task else by_key[k] for k in keys]
                extra = [[shared] * len(keys)] if shared is not None else []
                futures += client.map(fn, work, *extra, key=keys, pure=False)
        failed = 0
        t0 = time.perf_counter()
        if progress is not None:
            progress.start()
        # whatever has finished is fetched in one gather (a gather per result costs the
        # client and scheduler more CPU than the transfer)
        for batch in as_completed(futures).batches():
            done = [f for f in batch if f.status == "finished"]
            # the task never raises: a worker died too often
            summary["lost"] += sum(len(by_key[f.key]) for f in batch if f.status != "finished")
            results = []
            for key, blob in _gather(client, done):
                if blob is _LOST:
                    summary["lost"] += len(by_key[key])
                else:
                    results += _receive_all(by_key[key], blob)
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
        logging.getLogger("distributed.protocol.core").removeFilter(quiet)
        if progress is not None:
            progress.stop()
        pending = [f for f in futures if not f.done()]
        if pending:
            client.cancel(pending)


def _key(task: Any) -> str:
    return f"akh-sweep-{task.run_id}"


def _batch_key(tasks: list) -> str:
    return _key(tasks[0]) if len(tasks) == 1 else f"akh-sweep-{tasks[0].run_id}+{len(tasks) - 1}"


# Runs are short (tens of ms) and a Dask task costs the client and scheduler several ms of CPU
# (issue 29: 7.6 ms a task, 18% of a run; 34% of a run's CPU in the client on a busy machine).
# A sweep's runs go to the workers in batches about the size of `multiprocessing.Pool.map`'s
# chunks (about BATCH_SPREAD per worker, so a slow or lost worker's share moves elsewhere),
# never more than MAX_BATCH runs a task (a Ctrl-C loses at most the batches under way; each run
# is still its own row). With 8 a worker and at most 8 runs a task, as before, the runs got
# 27% faster (issue 29's engine work) and Dask fell to 0.79 / 0.87 of the pool (1 / 2 workers).
MAX_BATCH = 32
BATCH_SPREAD = 4


def batches(tasks: list, workers: int) -> list[list]:
    """The tasks in order, cut in groups of equal size (the last smaller)."""
    size = max(1, min(MAX_BATCH, len(tasks) // max(1, workers * BATCH_SPREAD)))  # (a handful of runs: one by one)
    return [tasks[i:i + size] for i in range(0, len(tasks), size)]


def _workers(client: Any) -> int:
    try:
        return max(1, len(client.scheduler_info().get("workers", {})))
    except Exception:  # an unusual scheduler: unbatched is always right
        return 1 << 30


def _receive_all(tasks: list, blob: object) -> list[dict]:
    """The runs' results from what a worker sent for them (a batch sends a list of results)."""
    from .wire import refused_result

    if len(tasks) == 1:
        return [_receive(tasks[0], blob)]
    if not isinstance(blob, (list, tuple)) or len(blob) != len(tasks):
        why = f"a batch of {len(tasks)} runs came back as {type(blob).__name__}" + \
            (f" of {len(blob)}" if isinstance(blob, (list, tuple)) else "")
        return [refused_result(t, why) for t in tasks]
    return [_receive(t, b) for t, b in zip(tasks, blob)]


_LOST = object()  # a result that could not be fetched (its worker gone): the run is retried next time


def _gather(client: Any, futures: list) -> list[tuple[str, object]]:
    """(key, what came back) for each finished future: the bytes, the refusal (an exception,
    as text in its row), or _LOST. One gather for all; when it fails, one per future, so
    that one refused result does not take its batch with it."""
    from asyncio import CancelledError

    if not futures:
        return []
    try:
        return list(zip([f.key for f in futures], client.gather(futures)))
    except (Exception, CancelledError):
        pass
    out: list[tuple[str, object]] = []
    for f in futures:
        try:
            out.append((f.key, client.gather(f)))
        except (OSError, TimeoutError, CancelledError):  # the worker or the connection went away
            out.append((f.key, _LOST))
        except Exception as exc:  # refused by the deserializers, or garbled: the worker's doing
            out.append((f.key, _LOST if f.status != "finished" else exc))
    return out


def _receive(task: Any, blob: object) -> dict:
    """The run's result from what its worker sent: decoded and checked here, or a failed row
    saying why it was refused."""
    from .wire import MalformedResult, decode_result, refused_result

    if isinstance(blob, Exception):
        return refused_result(task, f"Dask refused to load it ({type(blob).__name__}: {blob})")
    try:
        return decode_result(task, blob)
    except MalformedResult as exc:
        return refused_result(task, str(exc))


class _DropRefusals(logging.Filter):
    """A logging filter: drops Dask's "Failed to deserialize" (with its traceback), logged when
    the client refuses a worker's result; the result's row says it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to deserialize")


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

