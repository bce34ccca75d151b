"""Edit the agent's state and fork from it (issue 28 §2): typed state edits (a triple, a goal's
status, priority or criteria, a working-memory entry) checked before anything changes, naming
the field; recorded, so they hold after resume, rewind and fork."""

from __future__ import annotations

import json

import pytest

from akh_tui.engine import (AddTriple, EditGoal, EditMemory, Locations, Run, StateEditError, parse_state_edit)


def test_typed_edits_from_what_a_person_types():
    assert parse_state_edit("triple orca eats seal") == AddTriple("orca", "eats", "seal", 1.0)
    assert parse_state_edit('+ "sea lion" lives-in ocean 0.8') == AddTriple("sea lion", "lives-in", "ocean", 0.8)
    assert parse_state_edit('goal 2 status=active priority=200 criteria="(whale is-a mammal)"') == \
        EditGoal(2, "active", 200, "(whale is-a mammal)")
    assert parse_state_edit("memory 7 drop") == EditMemory(7)
    assert parse_state_edit("memory 7 = whales are mammals") == EditMemory(7, "whales are mammals")
    for text, field in (("triple orca eats", "triple"), ("triple a b c lots", "triple"), ("goal x", "goal"),
                        ("goal 2 colour=red", "goal"), ("goal 2 priority=high", "priority"),
                        ("memory 3 forget", "memory"), ("teleport 3", "edit"), ("", "edit")):
        with pytest.raises(StateEditError) as exc:
            parse_state_edit(text)
        assert exc.value.field == field, text


@pytest.fixture
def zoo(tmp_path):
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), "zoo", 7)
    for _ in range(4):
        run.step()
    yield run
    run.close()


def test_a_bad_edit_changes_nothing_and_names_its_field(zoo):
    before = zoo.view()
    for edits, field, index in (([EditGoal(3, priority=250), EditGoal(9, status="active")], "goal", 2),
                                ([EditGoal(3, status="sleepy")], "status", 1),
                                ([EditGoal(3, priority=300)], "priority", 1),
                                ([EditGoal(3, criteria="(whale is-a)")], "criteria", 1),
                                ([EditMemory(99999)], "memory", 1),
                                ([AddTriple("goal:1", "is-a", "mammal")], "triple", 1)):
        with pytest.raises(StateEditError) as exc:
            zoo.edit_state(edits)
        assert (exc.value.field, exc.value.index) == (field, index)
    after = zoo.view()
    assert after["goals"] == before["goals"] and after["wm"]["entries"] == before["wm"]["entries"]


def test_live_edits_steer_the_next_cycle_and_hold_after_resume(tmp_path):
    loc = Locations.resolve(data_dir=tmp_path / "data")
    run = Run.start(loc, "zoo", 7)
    for _ in range(4):
        run.step()
    first_wm = run.view(wm_rows=500)["wm"]["entries"][0]["id"]
    words = run.edit_state([EditGoal(2, status="suspended"), EditGoal(3, priority=250),
                            AddTriple("orca", "hunts", "seal"), EditMemory(first_wm)])
    assert words == ["goal #2 suspended", "goal #3 priority 250", "triple (orca hunts seal) added",
                     f"memory #{first_wm} dropped"]
    rec = run.step()
    assert rec is not None and rec["goal"]["id"] == 3  # goal 2 is suspended: goal 3 is worked on
    about = run.query("about orca")["rows"]
    assert {"triple": "orca hunts seal", "provenance": "user"}.items() <= next(
        r for r in about if r["triple"] == "orca hunts seal").items()
    for _ in range(2):
        run.step()
    view = run.view(wm_rows=500)
    run.close()
    again = Run.resume(loc)  # resumed from the store: the edits hold
    try:
        assert [(g["id"], g["status"], g["priority"]) for g in again.view()["goals"]] == \
            [(g["id"], g["status"], g["priority"]) for g in view["goals"]]
        assert again.query("(orca hunts ?x)")["total"] == 1
        # a rewind replays the edits where they were made: right after cycle 5 as it was lived
        rewound = again.rewind(5)
        assert next(g for g in rewound["goals"] if g["id"] == 2)["status"] == "suspended"
    finally:
        again.close()


def test_fork_from_a_replayed_cycle_with_state_edits(tmp_path):
    loc = Locations.resolve(data_dir=tmp_path / "data")
    run = Run.start(loc, "zoo", 7)
    try:
        for _ in range(6):
            run.step()
        n = len(run.branches())
        with pytest.raises(StateEditError) as exc:  # refused before anything is written
            run.fork(2, "bad", {"state": [["goal_edit", {"goal": 2, "status": "dormant"}]]})
        assert exc.value.field == "status" and len(run.branches()) == n and run.cycle == 6
        event = run.fork(2, "crit", {"state": [["goal_edit", {"goal": 1, "criteria": "(dog is-a mammal)"}],
                                               ["triple", ["dog", "is-a", "pet", 1.0]]]})
        assert "goal #1 criteria '(dog is-a mammal)'" in event["edits"]
        assert run.branch_name == "crit" and run.cycle == 2
        g1 = next(g for g in run.view()["goals"] if g["id"] == 1)
        assert g1["criteria"] == "(dog is-a mammal)"
        assert run.query("(dog is-a pet)")["total"] == 1
        run.step()
    finally:
        run.close()
    again = Run.resume(loc)
    try:
        assert again.branch_name == "crit"
        assert next(g for g in again.view()["goals"] if g["id"] == 1)["criteria"] == "(dog is-a mammal)"
        assert again.query("(dog is-a pet)")["total"] == 1
    finally:
        again.close()


def test_cli_agent_edit_now_and_at_a_cycle(cli):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "4")
    out = cli("agent", "edit", "goal 3 priority=250 status=suspended", "triple orca hunts seal").stdout
    assert "after cycle 4: goal #3 priority 250" in out and "triple (orca hunts seal) added" in out
    goals = json.loads(cli("agent", "query", "goals", "--json").stdout)["rows"]
    assert next(g for g in goals if g["id"] == 3)["status"] == "suspended"
    bad = cli("agent", "edit", "goal 2 priority=1", "goal 2 status=sleepy", check_rc=2)
    assert "EDIT 2 (status)" in bad.stderr and "sleepy" in bad.stderr
    goals = json.loads(cli("agent", "query", "goals", "--json").stdout)["rows"]
    assert next(g for g in goals if g["id"] == 2)["priority"] == 128  # nothing of a refused set changed
    bad = cli("agent", "edit", "triple orca hunts", check_rc=2)
    assert "EDIT 1 (triple)" in bad.stderr
    out = cli("agent", "edit", "--at", "2", 'goal 1 criteria="(dog is-a mammal)"', "--name", "crit").stdout
    assert "branch crit forked from main after cycle 2" in out
    goals = json.loads(cli("agent", "query", "goals", "--json").stdout)["rows"]
    assert goals[0]["criteria"] == "(dog is-a mammal)"
