"""`akh-tui sweep bench`'s anchor: the same runs on a multiprocessing pool, stored as a
cluster's results are (bench/sweep.py pool_collect)."""

from __future__ import annotations

import multiprocessing

from akh_tui.bench.sweep import SWEEP, pool_collect
from akh_tui.engine.sweep.file import parse_sweep
from akh_tui.engine.sweep.store import SweepStore


def test_the_pool_runs_every_task_and_stores_one_checked_row_each(tmp_path):
    path = tmp_path / "bench.toml"
    path.write_text(SWEEP.format(seeds=1))
    sweep = parse_sweep(path.read_text(), str(path))
    tasks = sweep.tasks()[:3]
    st = SweepStore(tmp_path / "out", sweep)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool_collect(pool, 1, st, tasks) == 3
    rows = st.rows()
    st.close()
    assert sorted(r["run_id"] for r in rows) == sorted(t.run_id for t in tasks)
    assert all(r["status"] == "ok" for r in rows)
