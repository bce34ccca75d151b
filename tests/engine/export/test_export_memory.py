"""`sessions export` streams in constant memory (issue 17: ≤ 200 MB on a million cycles), and
`akh-tui bench` reports the export's own peak.

The bench once printed 76 MB after a 5,000-cycle soak and 235 MB after 200,000 cycles: the
export itself peaked at 47 MB on both (and on 50,000). The figure was the child's ru_maxrss,
which Linux carries across fork + exec from the parent, so it was the benchmark's own peak."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

from akh_tui.bench.main import export_peak_mb
from akh_tui.engine.store import session as session_mod
from akh_tui.engine.paths import Locations
from akh_tui.engine import Run
from akh_tui.engine.runs.sessions import Sessions

GOAL = "Explore the ocean and find plankton"
RECORDED = 20


def _store(tmp_path: Path, copies: int) -> Locations:
    """A run of RECORDED real cycles whose records and events are repeated `copies` times
    under later cycle numbers: a long branch in milliseconds, exported like any other."""
    loc = Locations(tmp_path / f"data-{copies}", tmp_path / "config.toml")
    r = Run.start(loc, "zoo", goals=[GOAL])
    r.run_cycles(RECORDED)
    r.close()
    con = sqlite3.connect(loc.session_db)
    with con:
        for k in range(1, copies):
            con.execute("INSERT INTO cycles SELECT branch, cycle + ?, record, crc, tool, vetoed, veto, goal, progress "
                        "FROM cycles WHERE branch=1 AND cycle BETWEEN 1 AND ?", (k * RECORDED, RECORDED))
            con.execute("INSERT INTO events (branch, cycle, input, event, crc, type) SELECT branch, cycle + ?, input, "
                        "event, crc, type FROM events WHERE branch=1 AND cycle BETWEEN 1 AND ? ORDER BY seq",
                        (k * RECORDED, RECORDED))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return loc


def _export_peak(loc: Locations, out: Path) -> tuple[int, int]:
    """(cycles written, Python's peak traced memory in bytes while exporting)."""
    s = Sessions(loc)
    try:
        tracemalloc.start()
        try:
            n = s.export(1, "main", out)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        s.close()
    return n, peak


def test_export_memory_does_not_grow_with_the_number_of_cycles(tmp_path, monkeypatch):
    # pages of 16 rows: both branches fill many pages of records and of events, so the
    # difference is only how many pages there are
    monkeypatch.setattr(session_mod.SessionStore, "PAGE", 16)
    short, long = _store(tmp_path, 10), _store(tmp_path, 200)
    n_short, peak_short = _export_peak(short, tmp_path / "short.jsonl")
    n_long, peak_long = _export_peak(long, tmp_path / "long.jsonl")
    assert (n_short, n_long) == (10 * RECORDED, 200 * RECORDED)
    size = (tmp_path / "long.jsonl").stat().st_size
    # 20 times the records: holding them (or their events) would cost megabytes more; a
    # page at a time costs the same on both
    assert peak_long < peak_short * 1.5 + 256 * 1024, (peak_short, peak_long)
    assert peak_long < size / 4, (peak_long, size)


def _export_steps(loc: Locations, out: Path) -> int:
    """SQLite's virtual-machine steps (in hundreds) of one export: the work of its queries."""
    s = Sessions(loc)
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0  # go on

    try:
        s.store.db.set_progress_handler(tick, 100)
        s.export(1, "main", out)
    finally:
        s.close()
    return steps[0]


def test_export_work_grows_in_step_with_the_branch(tmp_path, monkeypatch):
    """Each page of events once sorted every later event of the branch again: 20 times the
    cycles cost over 100 times the work (at a million cycles, seconds)."""
    monkeypatch.setattr(session_mod.SessionStore, "PAGE", 16)
    short, long = _store(tmp_path, 10), _store(tmp_path, 200)
    work_short = _export_steps(short, tmp_path / "short.jsonl")
    work_long = _export_steps(long, tmp_path / "long.jsonl")
    assert work_long < 30 * work_short, (work_short, work_long)


def test_the_bench_reports_the_exports_own_peak_not_the_benchmarks(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = Run.start(loc, "zoo", goals=[GOAL])
    r.run_cycles(3)
    r.close()
    ballast = bytearray(320 * 1024 * 1024)  # the benchmark's own peak, as after a long soak
    ballast[::4096] = b"\1" * len(range(0, len(ballast), 4096))  # touched: resident
    try:
        mb, seconds = export_peak_mb(loc.data_dir)
    finally:
        del ballast
    assert 0 < mb < 200, mb  # ru_maxrss said ≥ 320 here
    assert seconds > 0


# ---- issue 23: OTLP JSON and reports stream too -----------------------------------------------

def _streamed_peak(loc: Locations, what: str, out: Path) -> int:
    """Python's peak traced memory (bytes) while writing the branch as `what`, the way the CLI
    does: the records as an iterator, the extent from the index."""
    from akh_tui.engine.export import otel, report

    s = Sessions(loc)
    try:
        st = s.store
        meta, branch = st.run_meta(1), st.find_branch(1, "main")
        extent = otel.Extent(*st.cycle_extent(branch))
        tracemalloc.start()
        try:
            with open(out, "w", encoding="utf-8") as fh:
                if what == "otlp-json":
                    otel.write_otlp_json(otel.stream_spans(st.trace_items(branch), meta, 1, "main", extent), fh)
                else:
                    report.write_report(st.trace_items(branch), meta, 1, "main", extent, fh, markdown=what == "md")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    finally:
        s.close()
    return peak


def test_otlp_json_and_report_memory_does_not_grow_with_the_number_of_cycles(tmp_path, monkeypatch):
    from akh_tui.bench.stream import long_branch

    monkeypatch.setattr(session_mod.SessionStore, "PAGE", 16)
    short, long = long_branch(tmp_path / "short", 100), long_branch(tmp_path / "long", 500)
    tiny = long_branch(tmp_path / "tiny", 10)
    for what in ("otlp-json", "html", "md"):
        _streamed_peak(tiny, what, tmp_path / "warm")  # the first call imports the SDK: not the export's own
        peak_short = _streamed_peak(short, what, tmp_path / f"short.{what}")
        peak_long = _streamed_peak(long, what, tmp_path / f"long.{what}")
        # five times the cycles (100 and 500 here): the whole-run code held them all (tracemalloc peaks of 26 MB at
        # 200 cycles and 261 MB at 2,000 for OTLP JSON, 4.8 and 48 MB for a report); streamed,
        # 12.7 and 12.7 MB, 0.5 and 0.9 MB (a report's plots fill up to their width)
        assert peak_long < peak_short * 1.3 + 1024 * 1024, (what, peak_short, peak_long)


def test_the_bench_prints_the_streamed_figures_for_each_length(tmp_path):
    from akh_tui.bench.stream import COMMANDS, stream_figures, stream_rows

    figures = stream_figures((25, 50), tmp_path, runs=1)
    assert list(figures) == ["25", "50"] and all(list(f) == list(COMMANDS) for f in figures.values())
    for by_command in figures.values():
        for f in by_command.values():
            assert 0 < f["peak_mb"]["median"] < 200 and f["seconds"]["median"] > 0  # nan if the command failed
    rows = stream_rows(figures)
    assert [r[0].split(",")[0] for r in rows] == ["`sessions export --format otlp-json`", "`sessions report -o x.html`"] * 2
    assert all(r[2] == "≤ 200 MB, flat" and r[1].endswith(" s)") for r in rows)
