"""What the door is done with is freed at once, by reference counting: an agent, its graph and
a closed run are in no reference cycle. Left to the cyclic collector, a dropped 100,000-triple
graph waited for a full pass over the heap (0.1-0.5 s), which landed on whatever the user
did next: a rewind, a cycle, a frame."""

from __future__ import annotations

import gc

from akh_tui.engine.paths import Locations
from akh_tui.engine.run import Run

HEAVY = {"Agent", "KnowledgeGraph", "SymbolVectors", "ToolContext", "Run", "BaseGraph", "Triple"}


def cyclic_garbage(action) -> dict[str, int]:
    """The objects of `action()` that only the cyclic collector would free, counted by type."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        action()
        gc.collect()
        found: dict[str, int] = {}
        for o in gc.garbage:
            name = type(o).__name__
            if name in HEAVY:
                found[name] = found.get(name, 0) + 1
        return found
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()


def test_rewound_forked_switched_reset_and_closed_runs_leave_nothing_for_the_collector(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")

    def use_a_run() -> None:
        r = Run.start(loc, "zoo")
        r.run_cycles(12)
        r.rewind(5)
        r.rewind(9)
        r.fork(6, "side")
        r.run_cycles(3)
        r.switch("main")
        r.rewind(4)
        r.reset()
        r.run_cycles(4)
        r.rewind(2)
        r.close()

    assert cyclic_garbage(use_a_run) == {}


def test_the_check_sees_an_agent_left_in_a_cycle(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")

    def leak() -> None:
        r = Run.start(loc, "zoo")
        r.run_cycles(2)
        r.agent.self_ref = r.agent  # type: ignore[union-attr]  # a cycle, as a careless change would make
        r.close()

    assert cyclic_garbage(leak).get("Agent") == 1
