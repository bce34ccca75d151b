"""`akh-tui bench`'s figures for the streamed exports and reports (issue 23): the peak memory of
`sessions export --format otlp-json` and `sessions report -o x.html` on branches of 1,000, 10,000
and (with --soak) 100,000 cycles, each command in a process of its own, min / median / max of
3 runs. Streamed, the peak does not depend on the branch's length (it once grew to 5.4 GB at
200,000 cycles), so the figures should be the same at every length.

The long branches are made the fast way: a real run's first cycles, repeated under later cycle
numbers (the records' and events' own cycle fields renumbered too) and written through the
store's own packing, so a 100,000-cycle branch takes seconds instead of the minutes running it
would (this measures reading a branch, not recording one).

Measured when this was written (a shared 2-core machine; VmHWM, min / median / max of 3, one run
at 100,000): OTLP JSON 69 / 69 / 69 MB at 1,000 cycles, 70 / 71 / 71 MB at 10,000, 71 MB at
100,000; the HTML report 47, 48 and 48 MB. The whole-run code took 217 MB and 74 MB at 1,000.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ..engine.paths import Locations
from ..engine.runs.run import Run
from ..engine.store.session import SessionStore

GOAL = "Explore the ocean and find plankton"  # 'plankton' is in no bundled graph: the agent keeps working
RECORDED = 20
COMMANDS = {  # figure label -> the command's arguments after `akh-tui`, {out} in the data dir's folder
    "sessions export --format otlp-json": ["sessions", "export", "1", "--format", "otlp-json", "-o", "/dev/null"],
    "sessions report -o x.html": ["sessions", "report", "1", "-o", "{out}/x.html"],
}


def long_branch(data: Path, cycles: int, recorded: int = RECORDED) -> Locations:
    """A data dir whose run 1 (zoo, main branch) holds `cycles` cycles: `recorded` real ones,
    then copies of them under later cycle numbers."""
    loc = Locations(data, data.parent / "config.toml")
    r = Run.start(loc, "zoo", goals=[GOAL])
    r.run_cycles(recorded)
    r.close()
    st = SessionStore(loc.session_db)
    try:
        branch = st.find_branch(1, "main")
        items = list(st.trace_items(branch))
        with st._tx():  # the store's own writes (packing, checksums), as an import makes them
            for k in range(1, -(-cycles // recorded)):
                for it in items:
                    c = int(it.get("cycle", 0) or 0)
                    if c < 1 or c + k * recorded > cycles:
                        continue
                    copy = dict(it, cycle=c + k * recorded)
                    if copy.get("type") == "cycle":
                        st._put_cycle(branch, copy)
                    else:
                        text = json.dumps(copy, ensure_ascii=False, separators=(",", ":"))
                        st.db.execute("INSERT INTO events (branch, cycle, input, event, crc, type) VALUES (?, ?, 0, ?, ?, ?)",
                                      (branch, copy["cycle"], *st._pack(text, "event"), copy.get("type")))
        st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        st.close()
    return loc


def command_peak_mb(data: Path, argv: list[str]) -> tuple[float, float]:
    """`akh-tui ARGV` on a data dir in a process of its own: its peak RSS (MB: VmHWM, the
    high-water mark of its own address space, not ru_maxrss, which Linux carries over from
    the parent; nan if it failed) and wall seconds."""
    code = ("import resource, sys; from akh_tui.cli import main; "
            f"sys.argv = ['akh-tui', *{argv!r}]; rc = main(); "
            "hwm = [int(x.split()[1]) / 1024 for x in open('/proc/self/status') if x.startswith('VmHWM:')]; "
            "print(hwm[0] if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, file=sys.stderr); "
            "sys.exit(rc)")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, AKH_TUI_DATA=str(data)),
                          capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    return (float(proc.stderr.strip().splitlines()[-1]) if proc.returncode == 0 else float("nan")), seconds


def spread(xs: list[float]) -> dict:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def stream_figures(sizes: tuple[int, ...], folder: Path, runs: int = 3) -> dict:
    """{cycles: {command label: {"peak_mb": spread, "seconds": spread}}} for each branch length."""
    out: dict = {}
    for n in sizes:
        data = folder / f"stream-{n}"
        data.mkdir(parents=True)
        long_branch(data, n)
        out[str(n)] = {}
        for label, argv in COMMANDS.items():
            mb, secs = [], []
            for _ in range(runs):
                m, s = command_peak_mb(data, [a.replace("{out}", str(folder)) for a in argv])
                mb.append(m)
                secs.append(s)
            out[str(n)][label] = {"peak_mb": spread(mb), "seconds": spread(secs)}
    return out


def stream_rows(figures: dict) -> list[tuple[str, str, str]]:
    """The table rows (figure, value, target) of stream_figures' result."""
    rows = []
    for n, by_command in figures.items():
        for label, f in by_command.items():
            p, s = f["peak_mb"], f["seconds"]
            rows.append((f"`{label}`, {int(n):,} cycles: peak RSS min / median / max (wall s, median)",
                         f"{p['min']:.0f} / {p['median']:.0f} / {p['max']:.0f} MB ({s['median']:.1f} s)",
                         "≤ 200 MB, flat"))
    return rows
