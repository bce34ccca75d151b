"""An idle local cluster keeps quiet (issue 29: it cost ~8% of a core doing nothing): its
workers run without the statistical profiler and the GIL monitor, and wake up less often."""

from __future__ import annotations

from akh_tui.engine.sweep.cluster import IDLE_QUIET, start_client


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
