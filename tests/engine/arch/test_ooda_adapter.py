"""The OODA engine behind the architecture adapter (issue 30): the same records as the Agent
stepped directly, its candidates and why-not, force as approval or veto, snapshot/restore."""

from __future__ import annotations

import pytest

from akh_tui.engine.arch.adapter import Architecture
from akh_tui.engine.arch.ooda import OodaArchitecture
from akh_tui.engine.errors import InputError
from akh_tui.engine.runs.scenario import build_agent, load_scenario


def _ooda() -> OodaArchitecture:
    sc = load_scenario("zoo")
    return OodaArchitecture(build_agent(sc), lambda: build_agent(sc, add_goals=False))


def test_through_the_adapter_the_records_are_the_agents_own() -> None:
    direct = build_agent(load_scenario("zoo"))
    a = _ooda()
    assert isinstance(a, Architecture)
    for _ in range(4):
        assert a.step_decision() == direct.step()
    assert a.decision == 4


def test_phases_candidates_and_why_not() -> None:
    a = _ooda()
    assert [a.step_phase()["phase"] for _ in range(3)] == ["observe", "orient", "decide"]
    assert a.next_phase == "act" and a.decision == 0
    cands = a.candidates()
    chosen = [c for c in cands if c.chosen]
    assert len(chosen) == 1 and all(c.value is not None for c in cands)
    other = next(c.id for c in cands if not c.chosen)
    assert a.why_not(other) and a.why_not(chosen[0].id)
    with pytest.raises(InputError, match="not a candidate"):
        a.why_not("no_such_tool")


def test_forcing_another_tool_is_the_users_veto() -> None:
    a = _ooda()
    for _ in range(3):
        a.step_phase()
    other = next(c.id for c in a.candidates() if not c.chosen)
    a.force(other)
    rec = a.step_decision()
    assert rec is not None and rec["act"]["vetoed"] and rec["act"]["approval"]["decision"] == "reject"


def test_snapshot_and_restore_give_the_same_next_cycles() -> None:
    a = _ooda()
    a.step_decision()
    snap = a.snapshot()
    after = [a.step_decision() for _ in range(3)]
    a.restore(snap)
    assert [a.step_decision() for _ in range(3)] == after
