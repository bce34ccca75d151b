"""`akh-tui bench`: SPEC §12's figures (a benchmark command, not a timed test).

Prints median and p99 cycle time on the bundled demo graph and on generated 1,000- and
100,000-triple graphs (tracing to a file on), their ratio, and RSS a quarter into and at the
end of the store's soak (20,000 cycles; 200,000 with --soak); the workbench at full speed
against headless and its pause latency; the session store, rewinds, worlds, exports; then the
registered tables (rows.py: anchors, explain, start-up, the plots screen, sweeps) and how long
each part took (clock.py). The default bench keeps to about 10 minutes on a busy 2-core
machine. Long runs keep one goal whose criteria cannot be met and a stall threshold too high
to decompose it, so the agent keeps working instead of finishing.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from . import world_ui
from . import recording
from .clock import Clock
from .rows import table_json, tables as registered_tables
from .model import model_figures, model_rows
from .stream import command_peak_mb, spread, stream_figures, stream_rows
from .world import world_figures, world_rows
from ..engine.cycle.agent import Agent
from ..engine.config import AgentConfig
from ..engine.runs.run import Run
from ..engine.knowledge.kg import KnowledgeGraph
from ..engine.psyche.model import Psyche
from ..engine.knowledge.rules import RuleSet
from ..engine.runs.scenario import build_kg, build_rules, load_scenario
from ..engine.store.session import SessionStore
from ..engine.store.trace import TraceWriter

ENDLESS = "Explore the ocean and find plankton"  # 'plankton' is in no bundled graph


def _console() -> Console:
    """Where the figures go. Written to a file or a pipe (`make bench > out.txt`, CI), rich
    would assume 80 columns and wrap every figure's name a word a line: 140 keeps each row
    on one or two lines; a terminal keeps its own width (or COLUMNS)."""
    return Console() if sys.stdout.isatty() or "COLUMNS" in os.environ else Console(width=140)


def rss_mb() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def endless_config() -> AgentConfig:
    cfg = AgentConfig()
    cfg.stall_threshold = 10**9
    return cfg


def demo_agent(seed: int = 7) -> Agent:
    sc = load_scenario("zoo")
    agent = Agent(build_kg(sc), build_rules(sc), Psyche.default(), endless_config(), seed)
    for g in sc.goals:
        agent.add_goal(g.description, g.criteria, g.priority, emit=False)
    agent.add_goal(ENDLESS, "plankton", 100, emit=False)
    return agent


def generated_kg(n_triples: int, seed: int = 1) -> KnowledgeGraph:
    """A zoo-like graph of n triples: a class tree, entities with properties and habitats,
    and a few entity-to-entity relations; hubs included (every class has many members)."""
    rng = np.random.default_rng(seed)
    kg = KnowledgeGraph()
    n_classes = max(8, int(n_triples ** 0.5) // 2)
    for c in range(1, n_classes):
        kg.add(f"class-{c}", "is-a", f"class-{int(rng.integers(0, c))}")
    n_props, n_places = max(10, n_classes), max(10, n_classes // 2)
    i = 0
    kg.add("whale", "is-a", "class-1")
    kg.add("whale", "has-property", "property-1")
    while len(kg) < n_triples:
        e = f"entity-{i}"
        facts = [("is-a", f"class-{int(rng.integers(0, n_classes))}"),
                 ("has-property", f"property-{int(rng.integers(0, n_props))}"),
                 ("lives-in", f"place-{int(rng.integers(0, n_places))}")]
        if i > 0:
            facts.append(("eats", f"entity-{int(rng.integers(0, i))}"))
        for p, o in facts:
            if len(kg) < n_triples:
                kg.add(e, p, o)
        i += 1
    return kg


def generated_agent(n_triples: int) -> Agent:
    kg = generated_kg(n_triples)
    rules = RuleSet(transitive=["is-a"], symmetric=[], inherit=["has-property"], rules=[])
    agent = Agent(kg, rules, Psyche.default(), endless_config(), 0)
    agent.add_goal("Find whale properties", "whale plankton", emit=False)
    agent.add_goal("Classify entity-3", "entity-3 plankton", emit=False)
    return agent


def step_ms(ctl: Run, n: int, clock: Callable[[], float] = time.process_time) -> list[float]:
    """`n` cycles through the door, each one's time in ms by `clock` (CPU time unless told)."""
    ts = []
    for _ in range(n):
        t0 = clock()
        ctl.step()
        ts.append((clock() - t0) * 1000)
    return ts


def time_cycles(agent: Agent, n: int, trace_path: Path, warmup: int = 50) -> list[float]:
    writer = TraceWriter(trace_path)
    ctl = Run.over(agent, "bench", trace=writer)
    for _ in range(warmup):
        ctl.step()
    times = []
    gc.collect()
    for _ in range(n):
        t0 = time.perf_counter()
        rec = ctl.step()
        times.append((time.perf_counter() - t0) * 1000)
        if rec is None:
            break
    ctl.close()
    return times


def look_closer_figures(agent: Agent, repeats: int = 30) -> dict:
    """The orient view (a goal's, and a hub's: the most connected symbol) and the symbol
    inspector on a large graph, ms: only the neighbourhood is read, so these stay flat."""
    from ..engine.explain.orient import orient, symbol_info

    kg = agent.kg
    hub = kg.label(max(range(len(kg.symbols)), key=lambda s: (kg.adjacent_count(s), -s)))  # setup, not timed
    goal = min(agent.goals)
    out: dict = {"triples": kg.non_meta_count, "hub": hub, "hub_degree": kg.adjacent_count(kg.lookup(hub))}  # type: ignore[arg-type]
    for label, fn in (("orient_goal_ms", lambda: orient(agent, goal)),
                      ("orient_hub_ms", lambda: orient(agent, symbol=hub)),
                      ("symbol_hub_ms", lambda: symbol_info(agent, hub))):
        ts = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1000)
        out[label] = spread(ts)
    return out


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def history_figures(cycles: int, folder: Path) -> dict:
    """Restoring past cycles of a long run recorded in a session store on disk (snapshot every
    25 cycles + deterministic replay), and what the history costs per cycle on disk."""
    sc = load_scenario("zoo")

    def fresh() -> Agent:
        return Agent(build_kg(sc), build_rules(sc), Psyche.default(), endless_config(), 7)

    agent = demo_agent()
    store = SessionStore(folder / "history.db")
    ctl = Run.over(agent, "bench", store=store, rebuild=fresh)
    t0 = time.perf_counter()
    for _ in range(cycles):
        ctl.step()
    record_s = time.perf_counter() - t0
    tl = ctl.timeline()
    times = []
    for c in range(cycles - 1, 0, -max(1, cycles // 20)):
        t0 = time.perf_counter()
        tl.rewind(c)
        times.append((time.perf_counter() - t0) * 1000)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    sizes = {t: store.db.execute(f"SELECT COALESCE(SUM(LENGTH({col})), 0) FROM {t}").fetchone()[0]
             for t, col in (("cycles", "record"), ("snapshots", "payload"), ("heads", "payload"),
                            ("triples", "payload"), ("episodes", "payload"))}
    ctl.close()
    return {"cycles": cycles, "restore_ms_median": statistics.median(times), "restore_ms_max": max(times),
            "record_bytes_per_cycle": sizes["cycles"] / cycles, "snapshot_bytes_per_cycle": sizes["snapshots"] / cycles,
            "file_bytes_per_cycle": (folder / "history.db").stat().st_size / cycles,
            "store_ms_per_cycle": record_s * 1000 / cycles}


def store_figures(quick: bool, folder: Path, soak: bool = False) -> dict:
    """The session store as users feel it (issue 17's million cycles, issue 16's store rows),
    each as min / median / max of 3 runs: a recorded cycle (trace + store) median and p99,
    the p99 on a 100,000-triple graph (20,000 quick), bytes per cycle on disk, rewind on the demo graph; then one long soak into a store on disk
    and what a user then waits for on it: `sessions list`, resuming, and exporting (peak memory
    of the export command, in a process of its own). The soak's length is projected to a
    million cycles where a figure grows with it."""
    from ..engine.paths import Locations
    from ..engine.runs.sessions import Sessions

    sc = load_scenario("zoo")

    rules = build_rules(sc)  # loaded once, as a scenario's run does (an agent never changes its RuleSet)

    def fresh(kg: KnowledgeGraph | None = None) -> Agent:  # `kg`: the door lends its rewinds the base graph
        return Agent(kg if kg is not None else build_kg(sc), rules, Psyche.default(), endless_config(), 7)

    n = 600 if quick else 2000
    medians, p99s, per_cycle, rw_med, rw_max = [], [], [], [], []
    for i in range(3):
        db = folder / f"store-{i}.db"
        ctl = Run.over(demo_agent(), "bench", store=SessionStore(db), trace=TraceWriter(os.devnull), rebuild=fresh)
        ts = step_ms(ctl, n)
        medians.append(statistics.median(ts))
        p99s.append(pct(ts, 99))
        rw = []
        for c in range(n - 1, 0, -max(1, n // 30)):
            t0 = time.process_time()
            ctl.rewind(c)  # the door's rewind, as the workbench and `agent rewind` call it
            rw.append((time.process_time() - t0) * 1000)
        rw_med.append(statistics.median(rw))
        rw_max.append(max(rw))
        ctl.close()
        per_cycle.append(db.stat().st_size / n)
    # the soak: one long run recorded the way `agent run` records it
    # (200,000 cycles only with --soak: the default bench must finish in 10 minutes; the figures
    # that grow with the soak are projected to a million cycles either way); the process's RSS
    # after its first quarter and at its end (SPEC §12: memory does not grow with the cycles)
    soak_n = 5_000 if quick else (200_000 if soak else 20_000)
    data = folder / "soak"
    data.mkdir()
    loc = Locations(data, folder / "config.toml")
    agent = demo_agent()
    ctl = Run.over(agent, "soak", store=SessionStore(loc.session_db), trace=TraceWriter(os.devnull), rebuild=fresh)
    t0 = time.perf_counter()
    rss: dict[int, float] = {}
    for i in range(1, soak_n + 1):
        if ctl.step() is None:
            raise RuntimeError("the soak agent ran out of goals")
        if i in (soak_n // 4, soak_n):
            gc.collect()
            rss[i] = rss_mb()
    soak_s = time.perf_counter() - t0
    kg_triples, episodes = len(agent.kg), len(agent.episodic)
    ctl.close()
    list_s, resume_s = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        s = Sessions(loc)
        s.runs()
        s.close()
        list_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        from ..engine.runs import history

        st = SessionStore(loc.session_db)
        history.resume(st, fresh, 1)
        st.close()
        resume_s.append(time.perf_counter() - t0)
    exp_mb, exp_s = [], []
    for _ in range(1 if quick else 3):
        mb, seconds = export_peak_mb(data)
        exp_mb.append(mb)
        exp_s.append(seconds)
    size = loc.session_db.stat().st_size
    return {"cycles": n, "cycle_ms_median": spread(medians), "cycle_ms_p99": spread(p99s),
            "bytes_per_cycle": spread(per_cycle), "rewind_ms_median": spread(rw_med), "rewind_ms_max": spread(rw_max),
            "rss": {"cycles": soak_n, "seconds": soak_s, "rss_mb": {str(k): v for k, v in rss.items()},
                    "rss_ratio": rss[soak_n] / rss[soak_n // 4], "kg_triples": kg_triples, "episodes_in_memory": episodes},
            "soak": {"cycles": soak_n, "seconds": soak_s, "bytes": size, "projected_1m_gb": size / soak_n * 1e6 / 1e9,
                     "list_s": spread(list_s), "resume_s": spread(resume_s), "export_peak_mb": spread(exp_mb),
                     "export_s": spread(exp_s), "export_s_projected_1m": statistics.median(exp_s) * 1e6 / soak_n}}


def export_peak_mb(data: Path, run: int = 1) -> tuple[float, float]:
    """`sessions export RUN -o /dev/null` on a data dir, in a process of its own: its peak RSS
    (MB, nan if it failed) and wall seconds (stream.command_peak_mb says why the peak is the
    child's VmHWM: ru_maxrss carried this benchmark's own peak over fork + exec, 235 MB after
    the full soak, against the export's 47 MB)."""
    return command_peak_mb(data, ["sessions", "export", str(int(run)), "-o", "/dev/null"])


def rewind_big_figures(quick: bool, folder: Path, runs: int = 3) -> dict:
    """Rewinding a long run on a big graph the way users get it (issue 16): a scenario on disk
    with a generated triple file, started through the door (`Run.start`, recorded to a
    session store on disk), then the door's `rewind(c)` to 30 cycles spread over the run.
    Each run records its own store; min / median / max over `runs` of each run's median and
    max rewind (CPU time). The first rewind copies the live agent's graph; the others restore
    over the graph the one before gave back; none reads the scenario's files."""
    from ..engine.paths import Locations

    n_triples, n_cycles = (20_000, 1_000) if quick else (100_000, 5_000)
    sc_dir = folder / "rewind-big"
    sc_dir.mkdir(exist_ok=True)
    generated_tsv(sc_dir / "big.tsv", n_triples)
    (sc_dir / "big.rules.toml").write_text('transitive = ["is-a"]\ninherit = ["has-property"]\n')
    (sc_dir / "big.toml").write_text(
        'name = "rewind-big"\nseed = 0\nkg = ["big.tsv"]\nrules = ["big.rules.toml"]\n'
        f'[config]\nstall_threshold = {10**9}\n'
        '[[goals]]\ndescription = "Find whale properties"\ncriteria = "whale plankton"\n'
        '[[goals]]\ndescription = "Classify entity-3"\ncriteria = "entity-3 plankton"\n')
    medians, maxes, firsts, later_maxes, record_s = [], [], [], [], []
    for i in range(runs):
        loc = Locations(sc_dir / f"data-{i}", folder / "config.toml")
        ctl = Run.start(loc, str(sc_dir / "big.toml"), trace=os.devnull)
        t0 = time.process_time()
        for _ in range(n_cycles):
            if ctl.step() is None:
                raise RuntimeError("the big rewind run ran out of goals")
        record_s.append(time.process_time() - t0)
        rw = []
        for c in range(n_cycles - 1, 0, -max(1, n_cycles // 30)):
            t0 = time.process_time()
            ctl.rewind(c)  # the door's rewind, as the workbench and `agent rewind` call it
            rw.append((time.process_time() - t0) * 1000)
        firsts.append(rw[0])  # the run's first rewind also copies the live graph its rewinds share
        later_maxes.append(max(rw[1:]))
        medians.append(statistics.median(rw))
        maxes.append(max(rw))
        ctl.close()
    return {"triples": n_triples, "cycles": n_cycles, "rewinds": len(rw), "rewind_ms_median": spread(medians),
            "rewind_ms_max": spread(maxes), "rewind_ms_first": spread(firsts),
            "rewind_ms_max_after_first": spread(later_maxes), "record_s": spread(record_s)}


def hostile_figures(quick: bool) -> dict:
    """Issue 17's hostile inputs, each with its bound in place: a cycle with 10,000 veto
    patterns (matched together, against one by one), the goal-text path extractor on 40 KB
    of "-.", one infer_rules call on a rule whose premises form a cross product, and parsing
    a triple file at its line cap."""
    from ..engine.tools import builtins as tools
    from ..engine.knowledge.kg import MAX_TRIPLE_LINES, read_triple_file
    from ..engine.psyche.parts import ShadowPattern
    from ..engine.knowledge.rules import Rule, RuleEngine

    out: dict = {}
    rounds = 20 if quick else 100
    # vetoes: whole cycles of the demo agent, none of the 10,000 patterns firing
    for label, n in (("none", 0), ("10k", 10_000)):
        agent = demo_agent()
        agent.psyche.shadow.veto_patterns.extend(ShadowPattern(f"never_{i}", [f"never-{i} "]) for i in range(n))
        ctl = Run.over(agent, "bench")
        for _ in range(10):
            ctl.step()
        ts = step_ms(ctl, rounds, time.perf_counter)
        out[f"cycle_vetoes_{label}_ms"] = spread(ts)
    pats = agent.psyche.shadow.veto_patterns
    ts = []
    for _ in range(5 if quick else 20):  # the way it was: each pattern tried in turn
        t0 = time.perf_counter()
        next((p for p in pats if p.matches("tool=kg_query input=whale", ("read_kg",), "safe")), None)
        ts.append((time.perf_counter() - t0) * 1000)
    out["veto_one_by_one_ms"] = spread(ts)
    ts = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        agent.psyche.shadow.check_veto("tool=kg_query input=whale", ("read_kg",), "safe")
        ts.append((time.perf_counter() - t0) * 1000)
    out["veto_together_ms"] = spread(ts)
    # goal-text extraction on a hostile 40 KB (the regex it replaced took 2.5 s)
    hostile = "-." * 20_000
    ts = []
    for _ in range(5 if quick else 20):
        tools.find_path.cache_clear()
        t0 = time.perf_counter()
        tools.find_path(hostile)
        ts.append((time.perf_counter() - t0) * 1000)
    out["find_path_40kb_ms"] = spread(ts)
    # infer_rules: a cross product over 2,000 facts (once 67 s in a single call)
    kg = KnowledgeGraph()
    for i in range(2000):
        kg.add(f"x{i}", "rel", f"y{i}")
    cross = RuleSet(rules=[Rule("cross", (("?a", "rel", "?b"), ("?c", "rel", "?d")), (("?a", "rel", "?b"),))])
    eng = RuleEngine(kg, cross)
    ts = []
    for c in range(rounds):
        t0 = time.perf_counter()
        eng.run(c)
        ts.append((time.perf_counter() - t0) * 1000)
    out["infer_cross_2000_ms"] = spread(ts)
    # a triple file at its line cap (quick: a tenth of it)
    lines = MAX_TRIPLE_LINES // 10 if quick else MAX_TRIPLE_LINES
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cap.tsv"
        with open(path, "w", encoding="utf-8") as fh:
            for i in range(lines):
                fh.write(f"entity-{i}\thas-property\tproperty-{i % 1000}\n")
        import tracemalloc

        tracemalloc.start()
        t0 = time.perf_counter()
        parsed = read_triple_file(path)
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        out["triple_file"] = {"lines": len(parsed), "seconds_traced": seconds, "peak_mb": peak / 2**20}
    return out


def ui_figures(per_round: int = 1000, rounds: int = 5, warmup: int = 300) -> dict:
    """The workbench at full speed (headless Textual, engine thread + drawing) against the bare
    controller, both recording every cycle in a session store on disk, in `rounds` interleaved
    rounds of `per_round` cycles after an untimed `warmup` (the first frames of every pane, the
    engine thread's start, the Why pane's first count of the goal's vetoes). This machine's
    speed drifts, so each round compares like with like: the headless run times the cycles the
    workbench ran in that round. Per round: cycles per CPU-second of the process (the figure the
    aim is set on: the engine and the frames share one core through the GIL, and CPU time holds
    on a shared machine) and per wall-second (only meaningful on a quiet machine); pooled: all
    the rounds' cycles over all their CPU. Then pauses at full speed: how long until the engine
    has stopped, and until the paused frame showing the newest cycle is drawn."""
    import asyncio

    from ..engine.runs.run import Locations, UserConfig
    from ..tui.app import Workbench
    from ..tui.jobs import Cycle, EngineJob, Step

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["AKH_TUI_CONFIG"] = str(Path(tmp) / "config.toml")
        locations = Locations(Path(tmp) / "data", Path(tmp) / "config.toml")
        app = Workbench("zoo", config=UserConfig.load(locations.config_file), locations=locations)
        # both sides record every cycle in a session store on disk, as the workbench and the CLI do
        app.ctl.close()
        app.ctl = Run.over(demo_agent(), "bench", store=SessionStore(Path(tmp) / "ui.db"))
        app.ctl.subscribe(app._on_engine_output)
        out: list[dict] = []

        # timestamps taken where things happen (polling from the UI thread would wait for a
        # frame being drawn): the end of each cycle on the engine thread, each paused frame drawn
        steps_done: list[float] = []
        paused_frames: list[tuple[float, int]] = []
        execute, render_all = app._execute, app._render_all

        def timed_execute(cmd: EngineJob) -> None:
            execute(cmd)
            if isinstance(cmd, (Cycle, Step)):
                steps_done.append(time.perf_counter())
                del steps_done[:-2]

        def timed_render_all(record) -> None:
            render_all(record)
            if app.drawn is not None and not app.drawn[1]:
                paused_frames.append((time.perf_counter(), app.drawn[0]))

        # the instance's own methods wrapped to time them (setattr: the checker refuses assigning a method)
        setattr(app, "_execute", timed_execute)
        setattr(app, "_render_all", timed_render_all)

        async def stopped_after(t_pause: float) -> tuple[float, float]:
            """(engine stopped, paused frame showing the newest cycle drawn) after a pause at
            t_pause, in seconds."""
            while True:
                await asyncio.sleep(0.05)
                if steps_done and steps_done[-1] > time.perf_counter() - 0.04:
                    continue  # still running
                cycle = app.ctl.cycle
                drawn = [t for t, c in paused_frames if t > t_pause and c == cycle]
                if drawn:
                    return max(0.0, steps_done[-1] - t_pause) if steps_done else 0.0, drawn[0] - t_pause

        async def run_for(n: int) -> tuple[int, float, float, float]:
            """Run at full speed for at least `n` cycles: (cycles, wall s, CPU s, the UI
            thread's CPU s) up to the pause."""
            start, t0, c0, u0 = app.ctl.cycle, time.perf_counter(), time.process_time(), time.thread_time()
            app.action_toggle_run()
            deadline = t0 + max(60.0, n / 20)  # a ceiling, never reached but on a stalled machine
            while app.ctl.cycle - start < n and time.perf_counter() < deadline:
                await asyncio.sleep(0.05)
            done, wall, cpu = app.ctl.cycle - start, time.perf_counter() - t0, time.process_time() - c0
            ui_cpu = time.thread_time() - u0  # this coroutine runs on the UI thread
            app.action_toggle_run()
            await stopped_after(time.perf_counter())
            return done, wall, cpu, ui_cpu

        async def drive() -> None:
            async with app.run_test(size=(120, 36)) as pilot:
                await pilot.pause()
                app.speed_index = len(app.speed_levels()) - 1
                headless = Run.over(demo_agent(), "bench", store=SessionStore(Path(tmp) / "headless.db"))
                await run_for(warmup)
                for _ in range(rounds):
                    start_cycle = app.ctl.cycle
                    n, wall, cpu, ui_cpu = await run_for(per_round)
                    # the headless run over the same cycles (a demo cycle's cost changes with the
                    # run's course by a third: cycles 800-1000 cost half of the first ones), once
                    # it has caught up untimed (the workbench also ran through the pauses below)
                    while headless.cycle < start_cycle:
                        headless.step()
                    t0, c0 = time.perf_counter(), time.process_time()
                    for _ in range(n):
                        headless.step()
                    bare_wall, bare_cpu = time.perf_counter() - t0, time.process_time() - c0
                    stops, draws = [], []
                    for _ in range(4):  # pause at full speed, then run again
                        app.action_toggle_run()
                        await asyncio.sleep(0.1)
                        app.action_toggle_run()
                        stop, drawn = await stopped_after(time.perf_counter())
                        stops.append(stop)
                        draws.append(drawn)
                    out.append({"cycles": n, "ui_wall": wall, "ui_cpu": cpu, "ui_thread_cpu": ui_cpu, "headless_wall": bare_wall,
                                "headless_cpu": bare_cpu, "pause_ms": max(stops) * 1000,
                                "paused_frame_ms": max(draws) * 1000})
                headless.close()

        asyncio.run(drive())

    def per(key: str, r: dict) -> float:
        return r["cycles"] / r[key]

    return {
        "rounds": rounds, "per_round": per_round,
        "ui_cycles_per_cpu_s": spread([per("ui_cpu", r) for r in out]),
        "headless_cycles_per_cpu_s": spread([per("headless_cpu", r) for r in out]),
        "ratio_cpu": spread([r["headless_cpu"] / r["ui_cpu"] for r in out]),
        "ratio_cpu_pooled": sum(r["headless_cpu"] for r in out) / sum(r["ui_cpu"] for r in out),
        # where the difference goes: the UI thread's share of the process's CPU, and the engine
        # thread's (the rest) per cycle against headless
        "ui_thread_share": spread([r["ui_thread_cpu"] / r["ui_cpu"] for r in out]),
        "engine_thread_over_headless": spread([(r["ui_cpu"] - r["ui_thread_cpu"]) / r["headless_cpu"] for r in out]),
        "ui_cycles_per_s": spread([per("ui_wall", r) for r in out]),
        "headless_cycles_per_s": spread([per("headless_wall", r) for r in out]),
        "ratio_wall": spread([r["headless_wall"] / r["ui_wall"] for r in out]),
        "pause_ms_max": spread([r["pause_ms"] for r in out]),
        "paused_frame_ms_max": spread([r["paused_frame_ms"] for r in out]),
    }


def main(quick: bool = False, as_json: bool = False, console: Console | None = None, soak: bool = False) -> int:
    """Every figure, in about 10 minutes on a busy 2-core machine (issue 29; `quick`: a smoke
    test of the bench itself, `soak`: the long runs on top). Each part's wall and CPU time is
    printed at the end (bench/clock.py)."""
    console = console or _console()
    n_timed = 300 if quick else 3000
    big = 20_000 if quick else 100_000
    results: dict = {"quick": quick}
    clock = Clock(console=None if as_json else console)
    with clock.part("workbench against headless, pauses"):
        results["ui"] = ui_figures(300, 3, 100) if quick else ui_figures()
    with clock.part("world workbench against headless"):
        results["world_ui"] = world_ui.figures(1.0, 300 if quick else 800)  # issue 26: the world workbench
    with clock.part("hostile inputs"):
        results["hostile"] = hostile_figures(quick)
    with clock.part("soar adapter"):
        results["soar"] = __import__("akh_tui.bench.soar", fromlist=["soar_figures"]).soar_figures(quick)  # issue 30
    with tempfile.TemporaryDirectory() as tmp:
        with clock.part("history (restore a cycle)"):
            results["history"] = history_figures(1000 if quick else 5_000, Path(tmp))
        with clock.part("session store, soak, RSS"):
            results["store"] = store_figures(quick, Path(tmp), soak)
            results["soak"] = results["store"]["rss"]
        with clock.part("recording against the engine alone"):
            results["recording"] = recording.figures(quick, Path(tmp) / "recording", demo_agent, generated_agent)
        with clock.part("rewind on a big graph"):
            results["rewind_big"] = rewind_big_figures(quick, Path(tmp))
        # issue 23: streamed OTLP JSON and reports at two lengths, to show the peak does not grow
        # (it is the same in every run: 3 runs at the shorter, 1 at the longer); 10,000 and
        # 100,000 cycles take minutes (--soak)
        with clock.part("streamed export and report"):
            folder = Path(tmp) / "stream"
            if quick:
                results["stream"] = stream_figures((200, 1000), folder, runs=1)
            else:
                results["stream"] = stream_figures((1000,), folder, runs=3) | stream_figures(
                    (5000,) + ((10_000, 100_000) if soak else ()), folder, runs=1)
        with clock.part("worlds"):
            results["world"] = world_figures(quick, Path(tmp) / "world", demo_agent, ENDLESS, rss_mb)
        with clock.part("local model"):
            results["model"] = model_figures(quick)  # issue 27: the local language model
        with clock.part("cycle times: demo, 1k and big graph, look closer"):
            trace = Path(tmp) / "trace.jsonl"
            demo = time_cycles(demo_agent(), n_timed, trace)
            results["demo"] = {"cycles": len(demo), "median_ms": statistics.median(demo), "p99_ms": pct(demo, 99),
                               "triples": None}
            for label, n in (("kg_1k", 1000), ("kg_big", big)):
                t0 = time.perf_counter()
                agent = generated_agent(n)
                build = time.perf_counter() - t0
                size = agent.kg.non_meta_count
                ts = time_cycles(agent, n_timed, trace)
                results[label] = {"triples": size, "build_s": build, "cycles": len(ts),
                                  "median_ms": statistics.median(ts), "p99_ms": pct(ts, 99)}
                if label == "kg_big":
                    results["look_closer"] = look_closer_figures(agent)
        results["ratio_median"] = results["kg_big"]["median_ms"] / results["kg_1k"]["median_ms"]
    if as_json:
        with clock.part("engine alone, 1M-triple load (fresh processes)"):
            results["engine"] = engine_figures(quick)
        results["rows"] = [table_json(t) for t in registered_tables(quick, soak=soak, clock=clock)]
        results["bench_seconds"] = {"parts": [{"part": n, "wall_s": w, "cpu_s": c} for n, w, c in clock.parts],
                                    "wall_s": clock.total()[0], "cpu_s": clock.total()[1]}
        print(json.dumps(results, indent=2))
        return 0
    t = Table(title="SPEC §12 benchmark" + (" (quick)" if quick else ""))
    for col in ("figure", "value", "target"):
        t.add_column(col)
    d, k1, kb, s = results["demo"], results["kg_1k"], results["kg_big"], results["soak"]
    t.add_row("demo graph: median cycle", f"{d['median_ms']:.3f} ms", "≤ 1 ms")
    t.add_row("demo graph: p99 cycle", f"{d['p99_ms']:.3f} ms", "")
    t.add_row(f"{k1['triples']:,} triples: median / p99", f"{k1['median_ms']:.3f} / {k1['p99_ms']:.3f} ms", "")
    t.add_row(f"{kb['triples']:,} triples: median / p99", f"{kb['median_ms']:.3f} / {kb['p99_ms']:.3f} ms", "p99 ≤ 5 ms")
    t.add_row("ratio big / 1k (median)", f"{results['ratio_median']:.2f}", "≤ 2")
    a, b = s["cycles"] // 4, s["cycles"]
    t.add_row(f"RSS after {a:,} / {b:,} cycles (the store's soak)", f"{s['rss_mb'][str(a)]:.1f} / {s['rss_mb'][str(b)]:.1f} MB", "")
    t.add_row("RSS ratio", f"{s['rss_ratio']:.3f}", "≤ 1.25")
    t.add_row("soak", f"{s['cycles']:,} cycles in {s['seconds']:.1f} s", "")
    h = results["history"]
    t.add_row(f"restore a cycle of a {h['cycles']:,}-cycle run: median / max",
              f"{h['restore_ms_median']:.1f} / {h['restore_ms_max']:.1f} ms", "≤ 100 ms")
    t.add_row("history on disk per cycle: records + snapshots (file)",
              f"{h['record_bytes_per_cycle']:.0f} + {h['snapshot_bytes_per_cycle']:.0f} bytes "
              f"({h['file_bytes_per_cycle']:.0f})", "")
    t.add_row("cycle with the session store (recording)", f"{h['store_ms_per_cycle']:.2f} ms", "")
    x = results["store"]

    def mm(d: dict, unit: str, fmt: str = ".2f") -> str:
        return f"{d['min']:{fmt}} / {d['median']:{fmt}} / {d['max']:{fmt}} {unit}"

    t.add_row(f"recorded cycle (trace + store), median of {x['cycles']:,}: min / median / max",
              mm(x["cycle_ms_median"], "ms", ".3f"), "≤ 0.5 ms")
    t.add_row("recorded cycle p99: min / median / max", mm(x["cycle_ms_p99"], "ms", ".3f"), "")
    t.add_row("store on disk per cycle: min / median / max", mm(x["bytes_per_cycle"], "bytes", ".0f"), "≤ 1,500 bytes")
    t.add_row("rewind, demo graph, median: min / median / max", mm(x["rewind_ms_median"], "ms", ".1f"), "")
    t.add_row("rewind, demo graph, max: min / median / max", mm(x["rewind_ms_max"], "ms", ".1f"), "≤ 30 ms")
    rb = results["rewind_big"]
    t.add_row(f"rewind, {rb['triples']:,}-triple scenario, {rb['cycles']:,}-cycle run, median: min / median / max",
              mm(rb["rewind_ms_median"], "ms", ".1f"), "")
    t.add_row(f"rewind, {rb['triples']:,}-triple scenario, max: min / median / max", mm(rb["rewind_ms_max"], "ms", ".1f"),
              "≤ 50 ms (was 3.4–6.0 s)")
    t.add_row("  its first rewind (copies the live graph, once a run): min / median / max",
              mm(rb["rewind_ms_first"], "ms", ".1f"), "")
    t.add_row("  max of the later rewinds: min / median / max", mm(rb["rewind_ms_max_after_first"], "ms", ".1f"), "≤ 50 ms")
    k = x["soak"]
    t.add_row(f"soak into a store: {k['cycles']:,} cycles", f"{k['seconds']:.0f} s, {k['bytes'] / 1e6:.0f} MB "
              f"(1M cycles ≈ {k['projected_1m_gb']:.2f} GB)", "")
    t.add_row(f"`sessions list` on {k['cycles']:,} cycles (open + list): min / median / max", mm(k["list_s"], "s", ".3f"),
              "≤ 1 s (does not grow with cycles)")
    t.add_row("resume its branch (head + tail): min / median / max", mm(k["resume_s"], "s", ".3f"), "≤ 2 s")
    t.add_row("`sessions export` peak RSS: min / median / max", mm(k["export_peak_mb"], "MB", ".0f"),
              "≤ 200 MB (constant)")
    t.add_row("`sessions export` time (1M cycles, projected)", f"{k['export_s']['median']:.1f} s "
              f"({k['export_s_projected_1m']:.0f} s)", "")
    for row in stream_rows(results["stream"]) + world_rows(results["world"]) + model_rows(results["model"]):
        t.add_row(*row)
    for row in recording.rows(results["recording"]):
        t.add_row(*row)
    for row in __import__("akh_tui.bench.soar", fromlist=["soar_rows"]).soar_rows(results.get("soar")):
        t.add_row(*row)
    x = results["hostile"]

    def mmm(d: dict) -> str:
        return f"{d['min']:.2f} / {d['median']:.2f} / {d['max']:.2f} ms"

    t.add_row("cycle, default psyche (1 veto): min / median / max", mmm(x["cycle_vetoes_none_ms"]), "")
    t.add_row("cycle, 10,000 veto patterns: min / median / max", mmm(x["cycle_vetoes_10k_ms"]), "≈ no patterns")
    t.add_row("10,000 vetoes together / one by one (median)",
              f"{x['veto_together_ms']['median']:.3f} / {x['veto_one_by_one_ms']['median']:.2f} ms", "")
    t.add_row("goal-text path extraction, 40 KB of '-.': min / median / max", mmm(x["find_path_40kb_ms"]), "was 2.5 s")
    t.add_row("infer_rules call, cross product of 2,000 facts: min / median / max", mmm(x["infer_cross_2000_ms"]),
              "was 67 s")
    tf = x["triple_file"]
    t.add_row(f"triple file of {tf['lines']:,} lines: parse (traced) / peak memory",
              f"{tf['seconds_traced']:.1f} s / {tf['peak_mb']:.0f} MB", "")
    lc = results["look_closer"]
    t.add_row(f"orient view of a goal, {lc['triples']:,} triples: min / median / max", mmm(lc["orient_goal_ms"]),
              "instant")
    t.add_row(f"orient view of hub {lc['hub']} ({lc['hub_degree']:,} triples): min / median / max",
              mmm(lc["orient_hub_ms"]), "instant")
    t.add_row("symbol inspector of that hub: min / median / max", mmm(lc["symbol_hub_ms"]), "instant")
    u = results["ui"]

    def ratio_to_aim(d: dict, aim: float) -> str:
        return f" (median ÷ aim {d['median'] / aim:.2f})"

    t.add_row("workbench at full speed, both recording: cycles per CPU-second: min / median / max",
              mm(u["ui_cycles_per_cpu_s"], "", ".0f").rstrip(), "")
    t.add_row("headless: cycles per CPU-second: min / median / max", mm(u["headless_cycles_per_cpu_s"], "", ".0f").rstrip(), "")
    t.add_row(f"ratio workbench / headless (CPU), {u['rounds']} interleaved rounds of {u['per_round']:,} cycles: "
              "min / median / max", mm(u["ratio_cpu"], "").rstrip() + ratio_to_aim(u["ratio_cpu"], 0.9), "≥ 0.9")
    t.add_row("  the same over all the rounds' cycles together", f"{u['ratio_cpu_pooled']:.2f}", "≥ 0.9")
    t.add_row("  the UI thread's share of the process's CPU at full speed: min / median / max",
              mm(u["ui_thread_share"], "").rstrip(), "")
    t.add_row("  the engine thread's CPU ÷ headless's over the same cycles: min / median / max",
              mm(u["engine_thread_over_headless"], "").rstrip(), "")
    t.add_row("same per wall-second (a quiet machine only): workbench / headless / ratio, medians",
              f"{u['ui_cycles_per_s']['median']:.0f} / {u['headless_cycles_per_s']['median']:.0f} cycles/s / "
              f"{u['ratio_wall']['median']:.2f} (min {u['ratio_wall']['min']:.2f})", "≥ 0.9")
    t.add_row("pause at full speed until the engine stops, worst of 4 per round: min / median / max",
              mm(u["pause_ms_max"], "ms", ".1f") + ratio_to_aim(u["pause_ms_max"], 50.0), "≤ 50 ms")
    t.add_row("pause until the paused frame (newest cycle) is drawn, worst of 4: min / median / max",
              mm(u["paused_frame_ms_max"], "ms", ".1f"), "")
    for row in world_ui.rows(results["world_ui"]):
        t.add_row(*row)
    console.print(t)
    with clock.part("engine alone, 1M-triple load (fresh processes)"):
        engine = engine_figures(quick)
    console.print(engine_table(engine))
    console.print(speed_table(results, engine))
    for table in registered_tables(quick, soak=soak, clock=clock):
        console.print(table)
    console.print(clock.table())
    return 0


def speed_table(results: dict, engine: dict) -> Table:
    """Issue 16's table in one place, every row as users run it (the session store on):
    min / median / max, the aim, and median ÷ aim (above 1 misses an upper bound, below 1 a
    lower one). The figures are the ones measured above; nothing is measured again here."""
    t = Table(title="speed where users feel it (issue 16): min / median / max" + (" (quick)" if results["quick"] else ""))
    for col in ("figure", "min", "median", "max", "aim", "median ÷ aim"):
        t.add_column(col)
    x, rb, u = results["store"], results["rewind_big"], results["ui"]

    def row(label: str, d: dict | None, unit: str, aim: float, fmt: str = ".2f", at_least: bool = False) -> None:
        if d is None:
            t.add_row(label, "—", "—", "—", f"{'≥' if at_least else '≤'} {aim:g} {unit}".strip(), "not measured")
            return
        t.add_row(label, *(f"{d[k]:{fmt}} {unit}".strip() for k in ("min", "median", "max")),
                  f"{'≥' if at_least else '≤'} {aim:g} {unit}".strip(), f"{d['median'] / aim:.2f}")

    def samples(key: str) -> dict | None:
        xs = engine["samples"].get(key)
        return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)} if xs else None

    row("median cycle, demo graph, trace + store", x["cycle_ms_median"], "ms", 0.5, ".3f")
    rec = results["recording"]
    row(f"p99 cycle, {rec['big_triples']:,} triples, recorded (store)", rec["big_p99_ms"]["store"], "ms", 3.0, ".3f")
    row(f"rewind, {rb['triples']:,}-triple scenario, {rb['cycles']:,}-cycle run: median", rb["rewind_ms_median"],
        "ms", 50.0, ".1f")
    row("  the same, worst rewind after the run's first", rb["rewind_ms_max_after_first"], "ms", 50.0, ".1f")
    row("  the run's first rewind (copies the live graph its rewinds share)", rb["rewind_ms_first"], "ms", 50.0, ".0f")
    row("rewind, demo graph: worst of 30", x["rewind_ms_max"], "ms", 30.0, ".1f")
    row("workbench at full speed ÷ headless, both recording (CPU)", u["ratio_cpu"], "", 0.9,
        at_least=True)
    row("session store growth per cycle", x["bytes_per_cycle"], "bytes", 1500.0, ".0f")
    row(f"load {engine['load_triples']:,} triples: CPU", samples("load_cpu_s"), "s", 10.0, ".1f")
    row(f"load {engine['load_triples']:,} triples: peak RSS", samples("load_rss_mb"), "MB", 600.0, ".0f")
    row("pause latency at full speed (worst of 4 a round)", u["pause_ms_max"], "ms", 50.0, ".1f")
    return t


# ---- the engine's own figures (issue 16): cycles without recording, and a 1M-triple load ----
# The session store's figures (recording, rewinds, growth) are measured above; these time the
# engine alone so a change to the hot path shows without the store's cost around it. Each
# figure is taken in its own fresh process (3 runs), so one run's graph or caches never weigh
# on the next, and printed as min/median/max with the ratio to the aim.

ENGINE_AIMS = {  # figure -> (aim, unit)
    "demo_median_ms": (0.5, "ms"), "demo_p99_ms": (None, "ms"),
    "big_median_ms": (None, "ms"), "big_p99_ms": (3.0, "ms"),
    "load_cpu_s": (10.0, "s"), "load_rss_mb": (600.0, "MB"),
}


def generated_tsv(path: Path, n_triples: int, seed: int = 1) -> None:
    """The same shape of graph as `generated_kg`, written as a triple file (without building
    a graph, so writing a million lines takes seconds)."""
    rng = np.random.default_rng(seed)
    n_classes = max(8, int(n_triples ** 0.5) // 2)
    n_props, n_places = max(10, n_classes), max(10, n_classes // 2)
    seen: set[tuple[str, str, str]] = set()
    lines: list[str] = []

    def add(s: str, p: str, o: str) -> None:
        if len(lines) < n_triples and (s, p, o) not in seen:
            seen.add((s, p, o))
            lines.append(f"{s}\t{p}\t{o}\n")

    for c in range(1, n_classes):
        add(f"class-{c}", "is-a", f"class-{int(rng.integers(0, c))}")
    add("whale", "is-a", "class-1")
    add("whale", "has-property", "property-1")
    n_ent = n_triples // 3 + 1  # entities have 3-4 triples: enough draws for the whole file
    classes, props, places = (rng.integers(0, k, size=n_ent) for k in (n_classes, n_props, n_places))
    eaten = rng.random(n_ent)
    i = 0
    while len(lines) < n_triples:
        e = f"entity-{i}"
        add(e, "is-a", f"class-{classes[i]}")
        add(e, "has-property", f"property-{props[i]}")
        add(e, "lives-in", f"place-{places[i]}")
        if i > 0:
            add(e, "eats", f"entity-{int(eaten[i] * i)}")
        i += 1
    with open(path, "w") as fh:
        fh.writelines(lines)


def _engine_cycles(agent: Agent, n: int, warmup: int = 50) -> list[float]:
    """CPU milliseconds of `Agent.step()` alone (no trace, no store), per cycle."""
    for _ in range(warmup):
        agent.step()
        agent.drain_events()
    gc.collect()
    times = []
    for _ in range(n):
        t0 = time.process_time()
        rec = agent.step()
        times.append((time.process_time() - t0) * 1000)
        agent.drain_events()
        if rec is None:
            raise RuntimeError("the bench agent ran out of goals")
    return times


def engine_part(part: str, arg: str) -> dict:
    """One figure in this process (run by `engine_figures` in a child process)."""
    if part == "demo":
        ts = _engine_cycles(demo_agent(), int(arg))
        return {"demo_median_ms": statistics.median(ts), "demo_p99_ms": pct(ts, 99)}
    if part == "big":
        n, cycles = (int(x) for x in arg.split(","))
        ts = _engine_cycles(generated_agent(n), cycles)
        return {"big_median_ms": statistics.median(ts), "big_p99_ms": pct(ts, 99)}
    if part == "load":
        # what `agent run --scenario FILE` does before its first cycle: read and parse the triple
        # file, build the graph and its indexes, and make the agent
        folder = Path(arg)
        rss0 = rss_mb()
        t0 = time.process_time()
        sc = load_scenario(str(folder / "million.toml"))
        # build_kg without its cap on triple-file lines (MAX_TRIPLE_LINES, 200,000), which a
        # million-line file is over: the same streaming loader
        kg = KnowledgeGraph.from_files(sc.kg, max_lines=10 * million_lines(folder), max_bytes=2**40)
        agent = Agent(kg, build_rules(sc), Psyche.default(), endless_config(), 0)
        cpu = time.process_time() - t0
        gc.collect()
        return {"load_cpu_s": cpu, "load_rss_mb": peak_rss_mb(), "load_rss_start_mb": rss0,
                "load_triples": len(agent.kg)}
    raise ValueError(part)


def million_lines(folder: Path) -> int:
    with open(folder / "million.tsv", "rb") as fh:
        return sum(1 for _ in fh)


def peak_rss_mb() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def engine_figures(quick: bool = False, runs: int = 3, console: Console | None = None) -> dict:
    import subprocess
    import sys

    n_timed = 300 if quick else 1500
    big = 20_000 if quick else 100_000
    million = 100_000 if quick else 1_000_000
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        generated_tsv(folder / "million.tsv", million)
        (folder / "million.toml").write_text(
            'name = "million"\nkg = ["million.tsv"]\n[[goals]]\ndescription = "Find whale properties"\n')
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
        for _ in range(runs):
            for part, arg in (("demo", str(n_timed)), ("big", f"{big},{n_timed}"), ("load", str(folder))):
                if console is not None:
                    console.print(f"[dim]engine bench: {part}…[/dim]")
                out = subprocess.run([sys.executable, "-m", "akh_tui.bench", part, arg], env=env,
                                     capture_output=True, text=True, check=True).stdout
                for k, v in json.loads(out).items():
                    samples.setdefault(k, []).append(v)
    return {"quick": quick, "runs": runs, "big_triples": big, "load_triples": million, "samples": samples}


def engine_table(res: dict) -> Table:
    t = Table(title="engine alone (no trace, no session store), CPU time, " + f"{res['runs']} runs"
                    + (" (quick)" if res["quick"] else ""))
    for col in ("figure", "min", "median", "max", "aim", "median ÷ aim"):
        t.add_column(col)
    names = {
        "demo_median_ms": "demo graph: median cycle", "demo_p99_ms": "demo graph: p99 cycle",
        "big_median_ms": f"{res['big_triples']:,} triples: median cycle",
        "big_p99_ms": f"{res['big_triples']:,} triples: p99 cycle",
        "load_cpu_s": f"load {res['load_triples']:,} triples: CPU",
        "load_rss_mb": f"load {res['load_triples']:,} triples: peak RSS",
    }
    for key, label in names.items():
        xs = res["samples"].get(key)
        if not xs:
            continue
        aim, unit = ENGINE_AIMS[key]
        fmt = "{:.1f}" if unit in ("s", "MB") else "{:.3f}"
        med = statistics.median(xs)
        t.add_row(label, *(fmt.format(x) + f" {unit}" for x in (min(xs), med, max(xs))),
                  f"≤ {aim:g} {unit}" if aim else "", f"{med / aim:.2f}" if aim else "")
    return t


def engine_main(quick: bool = False, as_json: bool = False, console: Console | None = None) -> int:
    console = console or _console()
    res = engine_figures(quick, console=None if as_json else console)
    if as_json:
        print(json.dumps(res, indent=2))
    else:
        console.print(engine_table(res))
    return 0


if __name__ == "__main__":
    import sys

    print(json.dumps(engine_part(sys.argv[1], sys.argv[2])))
