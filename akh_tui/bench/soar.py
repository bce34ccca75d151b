"""`akh-tui bench`, issue 30's rows: Soar decisions per CPU-second bare (one `run` of N
decisions in Soar's own loop), through the adapter unrecorded (one adapter call a decision),
and recorded (SoarRun.step: candidates, labels and the goal stack read each decision), against a
recorded OODA cycle measured in the same process; and a Soar rewind (init-soar, srand, the
decisions run again) at 1,000 and 10,000 decisions. CPU time throughout (process_time)."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

# never halts: two ways to count up, chosen at random by value (as long a run as asked)
COUNTER = """
sp {c*init (state <s> ^superstate nil -^count) --> (<s> ^operator <o> + =) (<o> ^name init)}
sp {c*apply*init (state <s> ^operator.name init) --> (<s> ^count 0)}
sp {c*propose*one (state <s> ^count <c>) --> (<s> ^operator <o> + =) (<o> ^name add ^n 1)}
sp {c*propose*two (state <s> ^count <c>) --> (<s> ^operator <o> + =) (<o> ^name add ^n 2)}
sp {c*prefer*one (state <s> ^operator <o> +) (<o> ^n 1) --> (<s> ^operator <o> = 0.6)}
sp {c*prefer*two (state <s> ^operator <o> +) (<o> ^n 2) --> (<s> ^operator <o> = 0.4)}
sp {c*apply*add (state <s> ^operator <o> ^count <c>) (<o> ^name add ^n <n>) --> (<s> ^count <c> - (+ <c> <n>))}
"""


def soar_figures(quick: bool = False) -> dict[str, Any] | None:
    """The figures, or None where soar-sml is not installed."""
    try:
        import soar_sml  # noqa: F401
    except ImportError:
        return None
    from ..engine.soar.adapter import SoarArchitecture, SoarSnapshot
    from ..engine.soar.run import SoarRun
    from ..engine.soar.scenario import SoarScenario
    from ..engine.soar.source import read_soar

    n = 2000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "counter.soar"
        f.write_text(COUNTER, encoding="utf-8")
        cmds = read_soar(f)
        a = SoarArchitecture(cmds, 1)
        t = time.process_time()
        a.agent.RunSelf(n)  # bare: Soar's own loop
        bare = n / (time.process_time() - t)
        a.restore(SoarSnapshot(0, ()))
        t = time.process_time()
        for _ in range(n):
            a.run_decisions(1)
        through = n / (time.process_time() - t)
        rewinds = {}
        for at in (1000, 10_000):
            a.restore(SoarSnapshot(0, ()))
            a.run_decisions(at)
            snap = a.snapshot()
            a.run_decisions(5)
            ms = []
            for _ in range(3):
                t = time.process_time()
                a.restore(snap)
                ms.append((time.process_time() - t) * 1000)
            rewinds[str(at)] = {"min": min(ms), "median": statistics.median(ms), "max": max(ms)}
        a.close()
        run = SoarRun(SoarScenario("counter", f, f, 1))
        m = 300 if quick else 1000
        t = time.process_time()
        for _ in range(m):
            run.step()
        recorded = m / (time.process_time() - t)
        run.close()
        stored, resume_ms = _stored(Path(tmp), m)
        ooda_ms = _recorded_ooda_ms(Path(tmp), 100 if quick else 300)
    return {"bare_per_cpu_s": bare, "adapter_per_cpu_s": through, "recorded_per_cpu_s": recorded,
            "stored_per_cpu_s": stored, "resume_ms": resume_ms, "ooda_recorded_ms": ooda_ms, "rewind_ms": rewinds}


def _stored(folder: Path, m: int) -> tuple[float, float]:
    """Decisions per CPU-second recorded in a session store (soar/recorded.py), and the CPU ms
    of resuming that run at `m` decisions (the store read, Soar restored in its own loop, the
    last decision run and checked)."""
    from ..engine.paths import Locations
    from ..engine.soar.recorded import StoredSoarRun
    from ..engine.soar.scenario import load_soar_scenario

    toml = folder / "counter.toml"
    toml.write_text('name = "counter"\narchitecture = "soar"\nproductions = "counter.soar"\nseed = 1\n', encoding="utf-8")
    loc = Locations(folder / "soar-data", folder / "c.toml")
    st = StoredSoarRun.start(loc, load_soar_scenario(toml))
    t = time.process_time()
    try:
        for _ in range(m):
            st.run.step()
        per_s = m / (time.process_time() - t)
    finally:
        st.close()
    t = time.process_time()
    StoredSoarRun.resume(loc).close()
    return per_s, (time.process_time() - t) * 1000


def _recorded_ooda_ms(folder: Path, n: int) -> float:
    """The median CPU ms of a recorded OODA cycle (the demo scenario, a session store)."""
    from ..engine.paths import Locations
    from ..engine.runs.run import Run
    from .main import endless_config

    run = Run.start(Locations(folder / "data", folder / "c.toml"), "zoo")
    assert run.agent is not None
    run.agent.config = endless_config()
    ms = []
    try:
        for _ in range(n):
            t = time.process_time()
            if run.step() is None:
                break
            ms.append((time.process_time() - t) * 1000)
    finally:
        run.close()
    return statistics.median(ms)


def soar_rows(res: dict[str, Any] | None) -> list[tuple[str, str, str]]:
    if res is None:
        return [("Soar (issue 30)", "soar-sml not installed: pip install 'akh-tui[soar]'", "")]
    bare, through, rec = res["bare_per_cpu_s"], res["adapter_per_cpu_s"], res["recorded_per_cpu_s"]
    rows = [("Soar decisions per CPU-second, bare (one run)", f"{bare:,.0f}", ""),
            ("  through the adapter, unrecorded (ratio to bare)", f"{through:,.0f} ({through / bare:.2f}×)", "≥ 0.5×"),
            ("  recorded (ms a decision; a recorded OODA cycle)",
             f"{rec:,.0f} ({1000 / rec:.2f} ms; OODA {res['ooda_recorded_ms']:.2f} ms)", "≤ the OODA cycle"),
            ("  recorded in the session store (ms a decision)", f"{res['stored_per_cpu_s']:,.0f} "
             f"({1000 / res['stored_per_cpu_s']:.2f} ms)", "≤ the OODA cycle"),
            ("  a stored Soar run resumed (CPU ms, at the decisions recorded above)", f"{res['resume_ms']:.1f} ms", "")]
    for at, d in res["rewind_ms"].items():
        rows.append((f"  Soar rewind at {int(at):,} decisions: min / median / max",
                     f"{d['min']:.1f} / {d['median']:.1f} / {d['max']:.1f} ms", "≤ 50 ms" if at == "1000" else ""))
    return rows
