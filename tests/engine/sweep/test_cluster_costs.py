"""What a sweep on Dask costs beyond its runs (issue 29): an idle local cluster keeps quiet (it
cost ~8% of a core doing nothing): its workers run without the statistical profiler and the GIL
monitor, and wake up less often; short runs travel in batches, one row a run still."""

from __future__ import annotations

import zlib

from akh_tui.engine.sweep import cluster
from akh_tui.engine.sweep.cluster import IDLE_QUIET, batches, run_sweep, start_client
from akh_tui.engine.sweep.file import load_sweep, run_task
from akh_tui.engine.sweep.store import SweepStore


def _settings() -> dict:
    import dask

    return {k: dask.config.get(k) for k in ("distributed.worker.profile.enabled",
                                            "distributed.admin.system-monitor.gil.enabled",
                                            "distributed.admin.system-monitor.interval",
                                            "distributed.admin.tick.interval")}


def test_the_local_clusters_workers_run_without_profiler_or_gil_monitor():
    client, cluster = start_client(1, None)
    try:
        per_worker = client.run(_settings)
        assert per_worker and all(s == IDLE_QUIET for s in per_worker.values())
    finally:
        client.close()
        cluster.close()


def test_runs_go_in_the_chunks_pool_map_would_cut_at_most_32_and_few_go_one_by_one():
    assert [len(b) for b in batches(list(range(8)), 2)] == [1] * 8  # a test grid: one by one
    assert [len(b) for b in batches(list(range(40)), 2)] == [5] * 8  # 40 // (4 * 2), as Pool.map's chunks
    assert [len(b) for b in batches(list(range(1000)), 2)] == [32] * 31 + [8]
    got = batches(list(range(50)), 1)  # 12 a task, the last one smaller, in order
    assert [len(b) for b in got] == [12] * 4 + [2] and sum(got, []) == list(range(50))
    assert [len(b) for b in batches(list(range(5)), 1)] == [1] * 5  # a handful: one by one


def test_a_batch_that_is_no_list_of_its_results_is_refused_in_each_runs_row(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('scenarios = ["zoo"]\nseeds = [0, 1, 2]\nmax_cycles = 2\n')
    tasks = load_sweep(path).tasks()
    for blob, words in ((b"akh", "came back as bytes"), ([b"x"], "came back as list of 1")):
        rows = [r["row"] for r in cluster._receive_all(tasks, blob)]
        assert [r["run_id"] for r in rows] == [t.run_id for t in tasks]
        assert all(r["status"] == "failed" and words in r["error"] for r in rows), rows[0]["error"]


def test_a_batched_sweep_stores_one_row_a_run_equal_to_the_plain_loop(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('scenarios = ["zoo"]\nseeds = { start = 0, stop = 12 }\nmax_cycles = 3\n'
                    '[axes]\narchetypes.sage = [0.3, 0.7]\n')
    sweep = load_sweep(path)
    tasks = sweep.tasks()
    assert len(tasks) == 24 and len(batches(tasks, 1)) == 4  # 6 runs a task on one worker
    summary = run_sweep(sweep, tmp_path / "out", workers=1)
    assert (summary["ran"], summary["stored"], summary["lost"], summary["failed"]) == (24, 24, 0, 0)
    st = SweepStore(tmp_path / "out", create=False)
    try:
        got = {r["run_id"]: ({k: v for k, v in r.items() if k != "wall_time"}, st.trace_text(r["run_id"]))
               for r in st.rows()}
    finally:
        st.close()
    for t in tasks:
        want = run_task(t)
        row = {k: v for k, v in want["row"].items() if k != "wall_time"}
        assert got[t.run_id] == (row, zlib.decompress(want["trace"]).decode())
