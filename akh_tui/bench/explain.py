"""`akh-tui agent explain --goal N` on long branches (issue 29): its peak memory (VmHWM, in a
process of its own) and CPU time at 1,000 and 10,000 cycles, and 100,000 with --soak. The goal's records are
streamed and none is kept, so the peak should not move with the length and the time should
grow with the number of records decoded, no faster (the CPU figure includes the process's start
and opening the run, about 0.6 s whatever the length).

One real run is recorded (the demo scenario and a goal no graph can meet, as `agent run`
records it: snapshots, a head when it stops) and measured when it reaches each length, closed
and resumed between: stream.py's copied branches have no snapshots after their first cycles,
so opening one would replay the whole branch, which no real run asks for.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.table import Table

from ..engine.store.session import SessionStore
from .rows import Figure, figure_table, register
from .stream import GOAL

AIM_MB = 100.0


def explain_goal_of(db: Path) -> int:
    """The goal the branch's last cycle worked on (the one with the longest history)."""
    st = SessionStore(db)
    try:
        branch = st.find_branch(1, "main")
        rec = st.record(branch, st.last_cycle(branch))
        if rec is None:
            raise RuntimeError("the long branch has no last cycle")
        return int(rec["goal"]["id"])
    finally:
        st.close()


def explain_cost(data: Path, goal: int) -> tuple[float, float]:
    """(peak RSS MB, CPU seconds) of `akh-tui agent explain --goal GOAL` on a data dir, in a
    process of its own (VmHWM: ru_maxrss would carry this process's own peak over the fork)."""
    code = ("import sys; from akh_tui.cli import main; "
            f"sys.argv = ['akh-tui', 'agent', 'explain', '--goal', '{goal}']; rc = main(); "
            "hwm = [int(x.split()[1]) / 1024 for x in open('/proc/self/status') if x.startswith('VmHWM:')]; "
            "print(hwm[0], file=sys.stderr); sys.exit(rc)")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, AKH_TUI_DATA=str(data)),
                          capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"agent explain failed: {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(proc.stderr.strip().splitlines()[-1]), cpu


def endless_zoo(folder: Path) -> Path:
    """The demo scenario's graph and rules with one goal no graph can meet and a stall threshold
    too high to give it up: the run keeps working on that goal for as long as it is stepped."""
    from ..engine.runs.scenario import load_scenario

    zoo = load_scenario("zoo")
    path = folder / "endless.toml"
    path.write_text(f'name = "endless"\nseed = 7\nkg = {json.dumps([str(p) for p in zoo.kg])}\n'
                    f'rules = {json.dumps([str(p) for p in zoo.rules])}\n[config]\nstall_threshold = {10**9}\n'
                    f'[[goals]]\ndescription = "{GOAL}"\ncriteria = "plankton"\n')
    return path


def explain_figures(quick: bool, soak: bool = False) -> list[Figure]:
    from ..engine.paths import Locations
    from ..engine.runs.run import Run

    # 100,000 cycles take a minute or two to record: with --soak (the default bench keeps to 10 minutes)
    sizes = (200, 2000) if quick else (1000, 10_000) + ((100_000,) if soak else ())
    runs = 1 if quick else 3
    figs: list[Figure] = []
    with tempfile.TemporaryDirectory() as tmp:
        loc = Locations(Path(tmp) / "data", Path(tmp) / "config.toml")
        run = Run.start(loc, str(endless_zoo(Path(tmp))))
        first_mb = first_cpu = ""
        for n in sizes:
            done, why = run.run_cycles(n - run.last_cycle())
            if run.last_cycle() < n:
                raise RuntimeError(f"the explained run stopped at cycle {run.last_cycle()}: {why}")
            run.close()
            goal = explain_goal_of(loc.session_db)
            mb = Figure(f"`agent explain --goal {goal}`, {n:,}-cycle run: peak RSS", unit="MB",
                        baseline=first_mb or None, aim=f"≤ {AIM_MB:.0f} MB, flat")
            cpu = Figure(f"  its CPU (process start and opening the run included), {n:,} cycles", unit="s",
                         baseline=first_cpu or None, aim="grows with the cycles decoded, no faster")
            for _ in range(runs if n < 100_000 else 1):
                m, sec = explain_cost(loc.data_dir, goal)
                mb.samples.append(m)
                cpu.samples.append(sec)
            figs += [mb, cpu]
            first_mb, first_cpu = first_mb or mb.label, first_cpu or cpu.label
            if n != sizes[-1]:
                run = Run.resume(loc)
    return figs


def explain_table(quick: bool, soak: bool = False) -> Table:
    return figure_table("reading a goal's history: `agent explain` in its own process, min / median / max"
                        + (" (quick)" if quick else ""), explain_figures(quick, soak), fmt=",.2f",
                        ratio_label=f"÷ the {'shortest' if quick else '1,000-cycle'} branch's")


register("explain", explain_table)
