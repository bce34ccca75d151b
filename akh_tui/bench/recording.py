"""What recording costs (issue 29): a recorded cycle against the engine alone, measured in the
same process in interleaved rounds (CPU time; on a busy machine read the ratios, not the
times), the bytes a cycle record takes in the store, and the p99 of a recorded cycle on a big
graph against the engine alone on the same graph.

Three ways to run the demo agent, one after the other in each round:
- the engine alone: `Agent.step()` and its events drained, nothing written;
- recorded as `agent run` records (no --trace): through the door (`Run.over`) into a session
  store on disk, one transaction per cycle;
- recorded with the trace as well (`--trace`, written to /dev/null).
"""

from __future__ import annotations

import gc
import os
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Callable, Iterator

from ..engine.cycle.agent import Agent
from ..engine.runs.run import Run
from ..engine.store.session import SessionStore
from ..engine.store.trace import TraceWriter
from .stream import spread

WARMUP = 50
RECORDED_AIM = 1.3  # a recorded cycle ≤ 1.3 × the engine alone (issue 29)
BIG_P99_AIM_MS = 3.0


def _p99(xs: list[float]) -> float:
    """The 99th percentile (nearest rank), as the rest of the bench takes it."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def _alone(make: Callable[[], Agent], n: int) -> list[float]:
    """CPU ms of each of `n` cycles of the engine alone, after the warm-up."""
    agent = make()
    for _ in range(WARMUP):
        agent.step()
        agent.drain_events()
    gc.collect()
    ts = []
    for _ in range(n):
        t0 = time.process_time()
        agent.step()
        agent.drain_events()
        ts.append((time.process_time() - t0) * 1000)
    return ts


def _recorded(make: Callable[[], Agent], n: int, db: Path, trace: bool) -> list[float]:
    """CPU ms of each of `n` cycles through the door into a store on disk (and the trace)."""
    run = Run.over(make(), "bench", store=SessionStore(db), trace=TraceWriter(os.devnull) if trace else None)
    try:
        for _ in range(WARMUP):
            run.step()
        gc.collect()
        ts = []
        for _ in range(n):
            t0 = time.process_time()
            run.step()
            ts.append((time.process_time() - t0) * 1000)
        return ts
    finally:
        run.close()


def _record_bytes(db: Path) -> tuple[float, float]:
    """(mean stored bytes of a cycle record, file bytes per cycle) of a store."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        mean, count = con.execute("SELECT AVG(LENGTH(record)), COUNT(*) FROM cycles").fetchone()
    finally:
        con.close()
    return float(mean), db.stat().st_size / count


def figures(quick: bool, folder: Path, demo_agent: Callable[[], Agent], generated_agent: Callable[[int], Agent],
            rounds: int = 3, cycles: int | None = None, big_triples: int | None = None) -> dict:
    """Medians of each way per round and their ratios to the same round's engine alone; the
    big graph's p99s likewise. The agents are the bench's own (`bench/main.py`: the demo
    agent with an endless goal, a generated graph of n triples), handed in."""
    folder.mkdir(parents=True, exist_ok=True)
    n = cycles or (300 if quick else 2000)
    med: dict[str, list[float]] = {"alone": [], "store": [], "store_trace": []}
    ratio: dict[str, list[float]] = {"store": [], "store_trace": []}
    record_b, file_b = [], []
    for r in range(rounds):
        alone = statistics.median(_alone(demo_agent, n))
        med["alone"].append(alone)
        for way, trace in (("store", False), ("store_trace", True)):
            db = folder / f"{way}-{r}.db"
            m = statistics.median(_recorded(demo_agent, n, db, trace))
            med[way].append(m)
            ratio[way].append(m / alone)
            if way == "store":
                rb, fb = _record_bytes(db)
                record_b.append(rb)
                file_b.append(fb)
    big = big_triples or (20_000 if quick else 100_000)
    big_n = cycles or (300 if quick else 1000)

    def big_agent() -> Agent:
        return generated_agent(big)

    big_alone, big_rec, big_ratio = [], [], []
    for r in range(rounds):
        a = _p99(_alone(big_agent, big_n))
        b = _p99(_recorded(big_agent, big_n, folder / f"big-{r}.db", False))
        big_alone.append(a)
        big_rec.append(b)
        big_ratio.append(b / a)
    return {"cycles": n, "warmup": WARMUP, "rounds": rounds,
            "median_ms": {k: spread(v) for k, v in med.items()}, "ratio": {k: spread(v) for k, v in ratio.items()},
            "record_bytes": spread(record_b), "file_bytes_per_cycle": spread(file_b),
            "big_triples": big, "big_cycles": big_n, "big_p99_ms": {"alone": spread(big_alone), "store": spread(big_rec)},
            "big_p99_ratio": spread(big_ratio)}


def rows(res: dict) -> Iterator[tuple[str, str, str]]:
    """The bench table's rows (figure, value, target): min / median / max over the rounds."""

    def mm(d: dict, unit: str = "", fmt: str = ".3f") -> str:
        return f"{d['min']:{fmt}} / {d['median']:{fmt}} / {d['max']:{fmt}}{unit}"

    m, q = res["median_ms"], res["ratio"]
    head = f"demo, median of {res['cycles']:,} cycles, {res['rounds']} interleaved rounds"
    yield f"engine alone (no store, no trace), {head}: min / median / max", mm(m["alone"], " ms"), ""
    yield "recorded as `agent run` (store): cycle", mm(m["store"], " ms"), ""
    yield "  ÷ the engine alone, same round: min / median / max", mm(q["store"], "", ".2f"), f"≤ {RECORDED_AIM}"
    yield "recorded with --trace (store + trace): cycle", mm(m["store_trace"], " ms"), ""
    yield "  ÷ the engine alone, same round: min / median / max", mm(q["store_trace"], "", ".2f"), ""
    yield ("stored cycle record / store file per cycle (medians)",
           f"{res['record_bytes']['median']:.0f} / {res['file_bytes_per_cycle']['median']:.0f} bytes", "")
    p = res["big_p99_ms"]
    yield (f"p99 cycle, {res['big_triples']:,} triples, recorded (store): min / median / max", mm(p["store"], " ms"),
           f"≤ {BIG_P99_AIM_MS:g} ms")
    yield "  the engine alone there / recorded ÷ alone (medians)", \
        f"{p['alone']['median']:.3f} ms / {res['big_p99_ratio']['median']:.2f}", ""
