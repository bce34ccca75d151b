"""The anchor rows (issue 29): our cycle against other ways of deciding, in one process.

Steps per CPU-second of each, in interleaved rounds (each round runs every row once, so a
busy machine's drift weighs on all of them alike), min / median / max over the rounds and the
ratio to the engine alone, round by round:

- akh-tui engine alone: the demo agent's `Agent.step()` (no trace, no store);
- akh-tui recorded cycle: the same through the door with a session store on disk and a trace,
  as `agent run` records it;
- plain-Python floor: score 11 tools over 5 factors, write one JSON line with all 11 candidates;
- py_trees 2.6: a selector over 11 condition+action sequences (the n-th condition holds on
  tick n mod 11), bare and writing one JSON line per tick;
- Soar 9.6 (soar-sml): bare decisions, 11 operators proposed each decision with numeric
  indifferent preferences, the chosen one's application retracting all 11.

py_trees and soar-sml are the `bench` extra (`make bench` installs it); a row whose library
is missing says "not installed" instead of figures.
"""

from __future__ import annotations

import gc
import importlib.util
import io
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from rich.table import Table

from .rows import Figure, figure_table, register

ENGINE = "akh-tui engine alone (demo agent, unrecorded)"
TOOLS = 11


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _rate(step: Callable[[], object], n: int) -> float:
    """Steps per CPU-second of `n` calls of `step`."""
    gc.collect()
    t0 = time.process_time()
    for _ in range(n):
        step()
    return n / max(time.process_time() - t0, 1e-9)


def engine_stepper() -> Callable[[], object]:
    from .main import demo_agent

    agent = demo_agent()

    def step() -> object:
        rec = agent.step()
        agent.drain_events()
        if rec is None:
            raise RuntimeError("the bench agent ran out of goals")
        return rec

    return step


def recorded_stepper(folder: Path) -> tuple[Callable[[], object], Callable[[], None]]:
    from ..engine.runs.run import Run
    from ..engine.store.session import SessionStore
    from ..engine.store.trace import TraceWriter
    from .main import demo_agent

    ctl = Run.over(demo_agent(), "anchor", store=SessionStore(folder / "anchor.db"), trace=TraceWriter(os.devnull))
    return ctl.step, ctl.close


def floor_stepper() -> Callable[[], object]:
    """What any decider writing its decision down must do at least, in plain Python."""
    weights = (0.3, 0.25, 0.2, 0.15, 0.1)
    names = [f"tool_{i}" for i in range(TOOLS)]
    sink = io.StringIO()
    tick = [0]

    def step() -> object:
        tick[0] += 1
        t = tick[0]
        cands = []
        for i, name in enumerate(names):
            factors = [((t * 7 + i * 13 + k * 5) % 97) / 97 for k in range(5)]
            cands.append({"tool": name, "factors": factors, "score": sum(w * f for w, f in zip(weights, factors))})
        best = max(cands, key=lambda c: c["score"])
        sink.write(json.dumps({"cycle": t, "tool": best["tool"], "candidates": cands}) + "\n")
        if sink.tell() > 1 << 20:
            sink.seek(0)
            sink.truncate()
        return best

    return step


def py_trees_stepper(json_line: bool) -> Callable[[], object]:
    """py_trees' selector over 11 condition+action pairs, ticked once a step, used the way
    py_trees is meant to be: the world's state on the blackboard (conditions read it, the
    action that runs writes the choice back), the n-th condition holding on tick n mod 11."""
    import py_trees

    Status = py_trees.common.Status
    py_trees.blackboard.Blackboard.enable_activity_stream(0)  # no activity log (its cheapest setting)
    py_trees.blackboard.Blackboard.disable_activity_stream()

    class Holds(py_trees.behaviour.Behaviour):
        def __init__(self, i: int) -> None:
            super().__init__(f"holds_{i}")
            self.i = i
            self.bb = self.attach_blackboard_client()
            self.bb.register_key("tick", access=py_trees.common.Access.READ)

        def update(self) -> Any:
            return Status.SUCCESS if self.bb.tick % TOOLS == self.i else Status.FAILURE

    class Act(py_trees.behaviour.Behaviour):
        def __init__(self, i: int) -> None:
            super().__init__(f"act_{i}")
            self.i = i
            self.bb = self.attach_blackboard_client()
            self.bb.register_key("chosen", access=py_trees.common.Access.WRITE)

        def update(self) -> Any:
            self.bb.chosen = f"tool_{self.i}"
            return Status.SUCCESS

    root = py_trees.composites.Selector("choose", memory=False, children=[
        py_trees.composites.Sequence(f"tool_{i}", memory=False, children=[Holds(i), Act(i)])
        for i in range(TOOLS)])
    tree = py_trees.trees.BehaviourTree(root)
    world = py_trees.blackboard.Client(name="world")
    world.register_key("tick", access=py_trees.common.Access.WRITE)
    world.register_key("chosen", access=py_trees.common.Access.READ)
    world.tick = 0
    sink = io.StringIO()

    def step() -> object:
        world.tick += 1
        tree.tick()
        if json_line:
            sink.write(json.dumps({"tick": world.tick, "tool": world.chosen, "status": str(root.status.value)}) + "\n")
            if sink.tell() > 1 << 20:
                sink.seek(0)
                sink.truncate()
        return root.status

    return step


SOAR_RULES = [
    "sp {propose*init (state <s> ^superstate nil -^count) --> (<s> ^operator <o> + >) (<o> ^name init)}",
    "sp {apply*init (state <s> ^operator <o>) (<o> ^name init) --> (<s> ^count 0 "
    + " ".join(f"^tool t{i}" for i in range(TOOLS)) + ")}",
    "sp {propose*tool (state <s> ^superstate nil ^tool <t> ^count <c>) --> (<s> ^operator <o> + =) (<o> ^tool <t> ^count <c>)}",
    "sp {prefer*tool (state <s> ^operator <o> +) (<o> ^tool <t>) --> (<s> ^operator <o> = 0.5)}",
    "sp {apply*tool (state <s> ^operator <o> ^count <c>) (<o> ^count <c>) --> (<s> ^count <c> - (+ <c> 1))}",
]


def soar_runner() -> tuple[Callable[[int], None], Callable[[], None]]:
    """(run n decisions, shut down) on a Soar kernel in this thread."""
    import soar_sml as sml

    kernel = sml.Kernel.CreateKernelInCurrentThread(True, 0)
    agent = kernel.CreateAgent("anchor")
    for rule in SOAR_RULES:
        agent.ExecuteCommandLine(rule)
        if not agent.GetLastCommandLineResult():
            raise RuntimeError(f"soar refused {rule}")
    agent.ExecuteCommandLine("watch 0")

    def run(n: int) -> None:
        agent.RunSelf(n)

    def close() -> None:
        kernel.DestroyAgent(agent)
        kernel.Shutdown()

    return run, close


def anchor_rounds(quick: bool) -> tuple[int, int]:
    """(rounds, engine cycles a round): a round's row takes about 0.2 s of CPU on this machine."""
    return (3, 200) if quick else (5, 1000)


def anchor_figures(quick: bool) -> list[Figure]:
    rounds, n = anchor_rounds(quick)
    engine = Figure(ENGINE, unit="/s", aim="baseline")
    recorded = Figure("akh-tui recorded cycle (session store + trace, as `agent run`)", unit="/s",
                      baseline=ENGINE, aim="≥ 0.77 (a recorded cycle ≤ 1.3 × the engine alone's)")
    floor = Figure("plain-Python floor: score 11 tools, one JSON line of 11 candidates", unit="/s", baseline=ENGINE)
    pt = Figure("py_trees 2.6 selector over 11 condition+action pairs", unit="/s", baseline=ENGINE,
                aim="≤ 0.67 (the engine ≥ 1.5 × py_trees' tick rate)")
    ptj = Figure("py_trees, same, plus one JSON line per tick", unit="/s", baseline=ENGINE)
    soar = Figure("Soar 9.6 (soar-sml): bare decisions, 11 operators, numeric preferences", unit="/s",
                  baseline=ENGINE)
    have_pt, have_soar = _installed("py_trees"), _installed("soar_sml")
    for f, ok, pkg in ((pt, have_pt, "py_trees"), (ptj, have_pt, "py_trees"), (soar, have_soar, "soar-sml")):
        if not ok:
            f.note = f"not installed (pip install '.[bench]' or make bench: {pkg})"
    with tempfile.TemporaryDirectory() as tmp:
        eng = engine_stepper()
        rec, rec_close = recorded_stepper(Path(tmp))
        fl = floor_stepper()
        trees = (py_trees_stepper(False), py_trees_stepper(True)) if have_pt else None
        soar_run, soar_close = soar_runner() if have_soar else (None, None)
        for step in (eng, rec, fl, *(trees or ())):  # warm-up: caches, the agent's first cycles
            for _ in range(50):
                step()
        if soar_run is not None:
            soar_run(200)
        for _ in range(rounds):
            engine.samples.append(_rate(eng, n))
            recorded.samples.append(_rate(rec, n))
            floor.samples.append(_rate(fl, n * 4))
            if trees is not None:
                pt.samples.append(_rate(trees[0], n))
                ptj.samples.append(_rate(trees[1], n))
            if soar_run is not None:
                k = n * 20
                gc.collect()
                t0 = time.process_time()
                soar_run(k)
                soar.samples.append(k / max(time.process_time() - t0, 1e-9))
        rec_close()
        if soar_close is not None:
            soar_close()
    return [engine, recorded, floor, pt, ptj, soar]


def anchor_table(quick: bool) -> Table:
    figs = anchor_figures(quick)
    rounds = len(figs[0].samples)
    return figure_table(f"anchors: steps per CPU-second, {rounds} interleaved rounds in one process"
                        + (" (quick)" if quick else ""), figs, ratio_label="÷ engine alone (min–max)")


register("anchors", anchor_table)
