"""`akh-tui sweep bench`: what a sweep costs.

- runs/s of the same runs in a plain loop, on a local cluster of 1 worker and of 2 workers,
  and on a `multiprocessing.Pool` of 1 and of 2 processes (the anchor, issue 29: the same
  runs, results sent back as the workers send them and stored the same way), Dask ÷ pool
  round by round;
- the scaling: the speed-up with 2 workers over 1, against the speed-up the machine gives
  right now (the pool's 2 over its 1, measured in the same rounds): on a busy machine 2 plain
  processes do not run twice as fast either, so "2 ÷ 1 over 2" alone was the machine's load;
- the per-task overhead: a run on 1 worker (submit, pickle, result back, SQLite insert)
  against the same run in the plain loop, in wall time; and, less at the mercy of other work
  on the machine, as time: the wall time per task beyond the run's own time inside the task
  (rows' wall_time), and the CPU the client process (client, scheduler, store) spends per task
  against the CPU of a run in the plain loop;
- memory (RSS) per worker after the runs;
- the size of a store of --store-runs rows and the time to report on it. Those rows are the
  measured runs' results copied under new run ids (running 10,000 runs would take minutes of
  a shared machine), each with its real compressed trace, so size and report time are those of
  a real store of that many runs.

Cluster start-up is not timed (it is paid once per sweep); each timing is repeated and shown as
min/median/max.
"""

from __future__ import annotations

import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .rows import register

SWEEP = """
name = "bench"
scenarios = ["zoo"]
seeds = {{ start = 0, stop = {seeds} }}
max_cycles = 30
[axes]
archetypes.explorer = [0.5, 0.9]
archetypes.sage = [0.3, 0.5, 0.7]
"""


def _mmm(xs: list[float]) -> dict:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def main(args, out: Console) -> int:
    figures = sweep_figures(args.runs, args.repeat, args.store_runs)
    return show(figures, args, out)


def sweep_figures(runs: int, repeat: int, store_runs: int) -> dict:
    """The figures `sweep bench` prints (and `akh-tui bench`'s sweep rows): `runs` zoo runs
    each way, `repeat` times, a store of `store_runs` rows."""
    from ..engine.sweep.cluster import collect
    from ..engine.sweep.file import parse_sweep, run_task
    from ..engine.sweep.store import SweepStore

    with tempfile.TemporaryDirectory(prefix="akh-sweep-bench-") as d:
        tmp = Path(d)
        path = tmp / "bench.toml"
        path.write_text(SWEEP.format(seeds=max(1, (runs + 5) // 6)))
        sweep = parse_sweep(path.read_text(), str(path))
        tasks = sweep.tasks()[:runs]
        run_task(tasks[0])  # imports and first-use caches are not a run's cost

        # both clusters stay up and the three measurements take turns, so a change in the
        # machine's load (it is shared) falls on all three alike
        clients = {n: _local(n) for n in (1, 2)}
        import multiprocessing

        # spawn, not fork: this process runs the Dask client's threads
        pools = {n: multiprocessing.get_context("spawn").Pool(n) for n in (1, 2)}
        pool_times: dict[int, list[float]] = {1: [], 2: []}
        plain: list[float] = []
        plain_cpu: list[float] = []
        client_cpu: list[float] = []
        inside: list[float] = []  # sum of the runs' own wall time on the 1-worker cluster
        results: list[dict] = []
        cluster_times: dict[int, list[float]] = {1: [], 2: []}
        memory: list[int] = []
        try:
            for n, (client, _) in clients.items():
                client.gather(client.map(run_task, tasks[: 2 * n], pure=False))  # warm every worker
            for n, pool in pools.items():
                pool.map(run_task, tasks[: 2 * n])
            for i in range(repeat):
                t0, c0 = time.perf_counter(), time.process_time()
                results = [run_task(t) for t in tasks]
                plain.append(time.perf_counter() - t0)
                plain_cpu.append(time.process_time() - c0)
                for n, (client, _) in clients.items():
                    st = SweepStore(tmp / f"w{n}-{i}", sweep)
                    summary = {"ran": 0, "lost": 0, "interrupted": False}
                    t0, c0 = time.perf_counter(), time.process_time()
                    collect(client, st, tasks, summary)
                    cluster_times[n].append(time.perf_counter() - t0)
                    if n == 1:
                        client_cpu.append(time.process_time() - c0)
                        inside.append(sum(r["wall_time"] for r in st.rows()))
                    st.close()
                    assert summary["ran"] == len(tasks), summary
                for n, pool in pools.items():
                    st = SweepStore(tmp / f"p{n}-{i}", sweep)
                    t0 = time.perf_counter()
                    ran = pool_collect(pool, n, st, tasks)
                    pool_times[n].append(time.perf_counter() - t0)
                    st.close()
                    assert ran == len(tasks), ran
            import psutil

            memory = sorted(clients[2][0].run(lambda: psutil.Process().memory_info().rss).values())
        finally:
            for pool in pools.values():
                pool.terminate()
                pool.join()
            for client, cluster in list(clients.values())[::-1]:  # the log level is restored in turn
                client.close()
                cluster.close()

        store_dir = tmp / "store"
        size, report_times = _store_figures(store_dir, sweep, results, store_runs, repeat)

    per_run_plain = [t / runs for t in plain]
    per_run_1 = [t / runs for t in cluster_times[1]]
    r1 = runs / statistics.median(cluster_times[1])
    r2 = runs / statistics.median(cluster_times[2])
    import os

    figures = {
        "runs": runs, "repeat": repeat, "cores": os.cpu_count(), "load_average": list(os.getloadavg()),
        "plain_loop_runs_per_s": _mmm([runs / t for t in plain]),
        "workers_1_runs_per_s": _mmm([runs / t for t in cluster_times[1]]),
        "workers_2_runs_per_s": _mmm([runs / t for t in cluster_times[2]]),
        "pool_1_runs_per_s": _mmm([runs / t for t in pool_times[1]]),
        "pool_2_runs_per_s": _mmm([runs / t for t in pool_times[2]]),
        "dask_over_pool_1": _mmm([p / d for p, d in zip(pool_times[1], cluster_times[1])]),
        "dask_over_pool_2": _mmm([p / d for p, d in zip(pool_times[2], cluster_times[2])]),
        "speedup_2_over_1": r2 / r1,
        "scaling_per_core": r2 / r1 / 2,
        # the machine's own speed-up now (the pool's, same rounds) is the baseline of Dask's
        "machine_speedup_2_over_1": _mmm([a / b for a, b in zip(pool_times[1], pool_times[2])]),
        "scaling_vs_machine": _mmm([(c1 / c2) / (p1 / p2) for c1, c2, p1, p2 in
                                    zip(cluster_times[1], cluster_times[2], pool_times[1], pool_times[2])]),
        "run_ms_plain": _mmm([t * 1000 for t in per_run_plain]),
        "overhead_per_task_ms": (statistics.median(per_run_1) - statistics.median(per_run_plain)) * 1000,
        "overhead_per_task_pct": (statistics.median(per_run_1) / statistics.median(per_run_plain) - 1) * 100,
        "overhead_beyond_run_ms": _mmm([(t - i) / runs * 1000 for t, i in zip(cluster_times[1], inside)]),
        "overhead_beyond_run_pct": _mmm([(t / i - 1) * 100 for t, i in zip(cluster_times[1], inside)]),
        "client_cpu_per_task_ms": _mmm([c / runs * 1000 for c in client_cpu]),
        "client_cpu_pct_of_run_cpu": statistics.median(client_cpu) / statistics.median(plain_cpu) * 100,
        "worker_rss_mb": [m / 2**20 for m in memory],
        "store_runs": store_runs,
        "store_bytes": size,
        "store_bytes_per_run": size / store_runs,
        "report_s": _mmm(report_times),
    }
    return figures


def show(figures: dict, args, out: Console) -> int:
    runs, repeat = figures["runs"], figures["repeat"]
    if args.json:
        print(json.dumps(figures))
        return 0
    t = Table(title=f"sweep bench: {runs} zoo runs (max_cycles 30), {repeat} repeats; cluster start-up not timed")
    for col in ("figure", "min", "median", "max"):
        t.add_column(col, justify="right" if col != "figure" else "left")

    def row(name: str, m: dict, fmt: str = "{:.1f}") -> None:
        t.add_row(name, *(fmt.format(m[k]) for k in ("min", "median", "max")))

    row("plain loop, runs/s", figures["plain_loop_runs_per_s"])
    row("1 worker, runs/s", figures["workers_1_runs_per_s"])
    row("2 workers, runs/s", figures["workers_2_runs_per_s"])
    row("multiprocessing.Pool(1), runs/s", figures["pool_1_runs_per_s"])
    row("multiprocessing.Pool(2), runs/s", figures["pool_2_runs_per_s"])
    row("Dask ÷ pool, 1 worker (aim ≥ 0.95)", figures["dask_over_pool_1"], "{:.2f}")
    row("Dask ÷ pool, 2 workers (aim ≥ 0.95)", figures["dask_over_pool_2"], "{:.2f}")
    row("the machine's speed-up, 2 processes over 1 (the pool's)", figures["machine_speedup_2_over_1"], "{:.2f}")
    row("Dask's speed-up 2 over 1 ÷ the machine's (1.0: all the machine gives)", figures["scaling_vs_machine"], "{:.2f}")
    row("one run in the plain loop, ms", figures["run_ms_plain"], "{:.2f}")
    row(f"report on {args.store_runs:,} rows, s", figures["report_s"], "{:.3f}")
    out.print(t)
    out.print(Text(f"{figures['cores']} cores, load average {', '.join(f'{x:.1f}' for x in figures['load_average'])} "
                   "(other work on the machine lowers every figure, the 2-worker one most)", style="dim"))
    out.print(Text(f"speed-up 2 workers / 1: {figures['speedup_2_over_1']:.2f} (scaling per core {figures['scaling_per_core']:.2f}; 1.0 is linear)"))
    out.print(Text(f"overhead per task on 1 worker against the plain loop: {figures['overhead_per_task_ms']:.2f} ms "
                   f"({figures['overhead_per_task_pct']:.1f}% of a run)"))
    out.print(Text(f"  per task beyond the run's own time in it: {figures['overhead_beyond_run_ms']['median']:.2f} ms "
                   f"({figures['overhead_beyond_run_pct']['median']:.1f}%; min {figures['overhead_beyond_run_pct']['min']:.1f}%)"))
    out.print(Text(f"  CPU of the client process (client, scheduler, store) per task: {figures['client_cpu_per_task_ms']['median']:.2f} ms "
                   f"({figures['client_cpu_pct_of_run_cpu']:.1f}% of a run's CPU)"))
    out.print(Text("memory per worker (RSS): " + ", ".join(f"{m:.0f} MB" for m in figures["worker_rss_mb"])))
    size = figures["store_bytes"]
    out.print(Text(f"store of {args.store_runs:,} runs: {size / 2**20:.1f} MB ({size / args.store_runs / 1024:.1f} KB a run, "
                   "rows and compressed traces)"))
    return 0


def pool_collect(pool, processes: int, store, tasks) -> int:
    """The same runs on a process pool, as a user of `multiprocessing` would write it (tasks
    sent in the chunks `Pool.map` would send), each result sent back as bytes as a Dask worker
    sends it, decoded, checked and stored as it arrives, as `collect` does. Returns the rows
    stored."""
    from ..engine.sweep.cluster import _receive
    from ..engine.sweep.wire import worker_task

    ran = 0
    chunk = max(1, -(-len(tasks) // (4 * processes)))  # Pool.map's own chunksize
    for task, blob in zip(tasks, pool.imap(worker_task, tasks, chunksize=chunk)):
        ran += bool(store.add(_receive(task, blob)))
    return ran


def _local(n: int):
    from ..engine.sweep.cluster import start_client

    return start_client(n, None)


def _store_figures(folder: Path, sweep, results: list[dict], n: int, repeat: int) -> tuple[int, list[float]]:
    """A store of n rows (the measured results under new ids), its size and report time."""
    from ..engine.sweep import report as sweep_report
    from ..engine.sweep.store import OUTCOMES, SweepStore

    st = SweepStore(folder, sweep)
    with st.db:
        st.db.execute("BEGIN IMMEDIATE")
        for i in range(n):
            src = results[i % len(results)]
            row = dict(src["row"], run_id=f"b{i:011d}", idx=i, seed=i)
            data = {k: v for k, v in row.items() if k != "wall_time"}

            st.db.execute(
                f"INSERT INTO runs (run_id, idx, scenario, seed, status, error, {', '.join(OUTCOMES)}, wall_time, row) "
                f"VALUES ({', '.join('?' * (8 + len(OUTCOMES)))})",
                (row["run_id"], i, row["scenario"], i, row["status"], row["error"], *(row.get(o) for o in OUTCOMES),
                 row["wall_time"], json.dumps(data, sort_keys=True)))
            st.db.execute("INSERT INTO traces VALUES (?, ?)", (row["run_id"], src["trace"]))
    st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = st.size_bytes()
    st.close()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        st = SweepStore(folder, create=False)
        rep = sweep_report.build(st.meta(), st.rows())
        st.close()
        sweep_report.print_report(rep, Console(file=io.StringIO(), width=160), str(folder))
        sweep_report.to_html(rep)
        times.append(time.perf_counter() - t0)
    return size, times



def sweep_rows(quick: bool) -> Table:
    """`akh-tui bench`'s sweep rows (issue 29's aim: sweeps on Dask ≥ 0.95 × multiprocessing.Pool
    with the same workers): a smaller `sweep bench` (96 runs, 3 repeats: a sweep's batches
    need runs to form; `akh-tui sweep bench`
    has the rest), its ratios and the scaling against the machine's own, measured in the same
    rounds."""
    from .rows import Figure, figure_table

    runs, repeat = (8, 2) if quick else (96, 3)
    f = sweep_figures(runs, repeat, 100)
    figs = []
    for label, key, aim in (
            ("Dask LocalCluster ÷ multiprocessing.Pool, 1 worker: runs/s", "dask_over_pool_1", "≥ 0.95"),
            ("Dask LocalCluster ÷ multiprocessing.Pool, 2 workers: runs/s", "dask_over_pool_2", "≥ 0.95"),
            ("the machine's own speed-up now: the pool's 2 processes over 1", "machine_speedup_2_over_1", ""),
            ("Dask's speed-up 2 over 1 ÷ the machine's (1.0: all the machine gives)", "scaling_vs_machine", "≈ 1"),
            ("a task's overhead on 1 worker beyond the run's own time, % of the run", "overhead_beyond_run_pct", "")):
        m = f[key]
        figs.append(Figure(label, [m["min"], m["median"], m["max"]], aim=aim))
    return figure_table(f"sweeps: {runs} zoo runs each way, {repeat} interleaved repeats, cluster start-up not timed "
                        f"(load average {f['load_average'][0]:.1f})" + (" (quick)" if quick else ""), figs, fmt=".2f",
                        ratio_label="")


register("sweeps", sweep_rows)
