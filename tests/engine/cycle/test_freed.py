"""What the door is done with is freed at once, by reference counting: an agent, its graph and
a closed run are in no reference cycle. Left to the cyclic collector, a dropped 100,000-triple
graph waited for a full pass over the heap (0.1-0.5 s), which landed on whatever the user
did next: a rewind, a cycle, a frame."""

from __future__ import annotations

import gc
from collections import Counter

from akh_tui.bench.main import generated_tsv
from akh_tui.engine.paths import Locations
from akh_tui.engine import Run

HEAVY = {"Agent", "KnowledgeGraph", "SymbolVectors", "ToolContext", "Run", "BaseGraph", "Triple"}


def outliving(action) -> dict[str, int]:
    """The objects of the heavy types that `action()` made and that outlive it while the cyclic
    collector is off, counted by type: what only the collector would free (or a leak)."""

    def heavy() -> Counter:
        return Counter(name for o in gc.get_objects() if (name := type(o).__name__) in HEAVY)

    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = heavy()
        action()
        return dict(heavy() - before)
    finally:
        gc.collect()
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

    assert outliving(use_a_run) == {}


def test_a_run_dropped_with_a_rule_join_suspended_leaves_nothing_for_the_collector(tmp_path):
    """On a big graph the rules' join is cut by its work budget and left suspended between
    cycles: a paused generator that holds the rule engine and its graph."""
    sc = tmp_path / "big"
    sc.mkdir()
    generated_tsv(sc / "big.tsv", 5_000)
    (sc / "big.rules.toml").write_text('transitive = ["is-a"]\ninherit = ["has-property"]\n')
    (sc / "big.toml").write_text(
        'name = "big"\nseed = 0\nkg = ["big.tsv"]\nrules = ["big.rules.toml"]\n'
        '[[goals]]\ndescription = "Find whale properties"\ncriteria = "whale plankton"\n')
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    suspended = []

    def use_a_run() -> None:
        r = Run.start(loc, str(sc / "big.toml"))
        r.run_cycles(6)  # the join of cycle 6 is cut by its budget
        suspended.append(r.agent.rules.suspended())  # type: ignore[union-attr]
        r.rewind(2)
        r.close()

    assert outliving(use_a_run) == {}
    assert suspended[0] is not None  # the case this test is about


def test_the_check_sees_an_agent_left_in_a_cycle(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")

    def leak() -> None:
        r = Run.start(loc, "zoo")
        r.run_cycles(2)
        r.agent.self_ref = r.agent  # type: ignore[union-attr]  # a cycle, as a careless change would make
        r.close()

    assert outliving(leak).get("Agent") == 1
