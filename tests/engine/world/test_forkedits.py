"""A world fork's edits of an agent's decider and goals and of the limits (SPEC §13: "a fork's
edits may change any agent's psyche, decider, disabled tools or goals, the limits, and the order
of the rest of the round it starts in; the edits are state of the branch")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import Locations
from akh_tui.engine.world.edits import AddAgentGoal, EditAgentGoal, SetDecider, SetLimit
from akh_tui.engine.world.worldrun import WorldRun


def locs(tmp: Path) -> Locations:
    return Locations(tmp / "data", tmp / "config.toml")


def _forked(tmp: Path, edits: list, rounds: int = 3) -> tuple[int, list[str], list[str]]:
    """market run 6 rounds, forked at 3:bold with `edits`, run `rounds` more; the fork step,
    main's trace and the fork's (read back after a resume)."""
    r = WorldRun.start(locs(tmp), "market")
    r.run(6)
    main_lines = list(r.trace_lines())
    at = r.step_number("3:bold")
    r.fork(at, edits, "edited")
    r.run(rounds)
    r.close()
    r = WorldRun.resume(locs(tmp))
    fork_lines = list(r.trace_lines())
    r.close()
    return at, main_lines, fork_lines


def _upto(tmp: Path, at: int) -> int:
    r = WorldRun.open_readonly(locs(tmp), branch="main")
    try:
        return 1 + sum(len(row.lines) for row in r.steps(1, at))
    finally:
        r.close()


def _cycles(lines: list[str], agent: str, start: int) -> list[dict]:
    return [json.loads(x) for x in lines[start:] if x.startswith('{"type":"cycle"') and f'"agent":"{agent}"' in x]


def test_a_decider_edit_holds_after_resume_and_rewind_and_diverges_only_after_the_fork(tmp_path):
    at, main_lines, fork_lines = _forked(tmp_path, [SetDecider("bold", "scripted")])
    upto = _upto(tmp_path, at)
    assert fork_lines[:upto] == main_lines[:upto]
    assert fork_lines[upto:] != main_lines[upto:upto + len(fork_lines) - upto]
    r = WorldRun.resume(locs(tmp_path))
    try:
        assert r.world.agents["bold"].decider.kind == "scripted"
        assert r.world.agents["cautious"].decider.kind == "utility"
        assert r.world_at(at).agents["bold"].decider.kind == "scripted"  # the fork's own saved state
        assert r.world_at(at - 1).agents["bold"].decider.kind == "utility"  # before the fork: the file's
        # every step after the fork replays from the store with the edited decider (a rewind
        # with the file's would replay differently and be refused)
        for step in range(at, r.last_step + 1):
            r.world_at(step)
        r.step()  # and the resumed branch goes on deciding with it
        assert r.world.agents["bold"].decider.kind == "scripted"
    finally:
        r.close()


def test_a_limit_edit_holds_after_resume_and_each_later_turn_is_refused(tmp_path):
    at, main_lines, fork_lines = _forked(tmp_path, [SetLimit("actions", 0)])
    upto = _upto(tmp_path, at)
    assert fork_lines[:upto] == main_lines[:upto]
    after = [json.loads(x) for x in fork_lines[upto:]]
    assert not any(x["type"] == "cycle" for x in after)  # no capacity: no agent acts
    assert any(x["type"] == "rate_limited" for x in after)
    r = WorldRun.resume(locs(tmp_path))
    try:
        assert dict(r.spec.limits.caps)["actions"] == 0 and dict(r.world.spec.limits.caps)["actions"] == 0
        assert dict(r.world_at(at - 1).spec.limits.caps)["actions"] == 8
        n = r.last_step
        r.step()
        r.step()
        new = [json.loads(x) for row in r.steps(n + 1) for x in row.lines]
        assert new and not any(x["type"] == "cycle" for x in new)
    finally:
        r.close()
    main = WorldRun.open_readonly(locs(tmp_path), branch="main")
    try:
        assert dict(main.spec.limits.caps)["actions"] == 8  # the parent keeps the file's limits
    finally:
        main.close()


def test_goal_edits_hold_after_resume(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(4)
    at = r.step_number("3:bold")
    goals = r.world_at(at).agents["bold"].goals
    first = min(goals)
    r.fork(at, [AddAgentGoal("cautious", "learn what bold sells", priority=200),
                EditAgentGoal("bold", first, status="suspended", priority=7)], "goals")
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    try:
        bold = r.world.agents["bold"].goals[first]
        assert bold.status == "suspended" and bold.priority == 7
        added = [g for g in r.world.agents["cautious"].goals.values() if g.description == "learn what bold sells"]
        assert len(added) == 1 and added[0].priority == 200
        assert r.world_at(at - 1).agents["bold"].goals[first].status != "suspended"
        info = next(b for b in r.branches() if b["name"] == "goals")
        assert [e["edit"] for e in info["edits"]] == ["goal", "goal_edit"]
    finally:
        r.close()


@pytest.mark.parametrize(("edit", "field"), [
    (SetDecider("nobody", "scripted"), "--agent"),
    (SetDecider("bold", "workflow"), "--decider"),  # no [agents.workflow] for bold
    (SetDecider("bold", "no_such_decider"), "--decider"),
    (SetDecider("bold", " "), "--decider"),
    (SetLimit("actions", -1), "--limit actions"),
    (SetLimit("writes", 1.5), "--limit writes"),
    (SetLimit("window_s", 0), "--limit window_s"),
    (SetLimit("speed", 3), "--limit"),
    (AddAgentGoal("bold", "  "), "--goal"),
    (AddAgentGoal("bold", "x", priority=300), "--goal priority"),
    (AddAgentGoal("bold", "x", criteria="((("), "--goal criteria"),
    (EditAgentGoal("bold", 999, status="done"), "--goal goal"),
    (EditAgentGoal("bold", 1, status="sleeping"), "--goal status"),
    (EditAgentGoal("bold", 1), "--goal goal"),
])
def test_a_bad_edit_names_its_field_and_forks_nothing(tmp_path, edit, field):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(2)
    live = r.world
    with pytest.raises(InputError) as exc:
        r.fork(1, [SetLimit("actions", 3), edit])
    assert exc.value.field == field
    assert [b["name"] for b in r.branches()] == ["main"] and r.world is live
    assert dict(r.spec.limits.caps)["actions"] == 8
    r.close()


def test_a_fork_of_a_fork_before_its_fork_step_has_none_of_its_edits(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(6)
    late, early = r.step_number("4:bold"), r.step_number("2:bold")
    r.fork(late, [SetLimit("actions", 0), SetDecider("bold", "scripted")], "late")
    r.run(1)
    r.fork(early, [SetLimit("writes", 3)], "early")  # off `late`, before late's own edits
    r.run(4)  # past `late`'s fork step
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    try:
        assert r.branch_name == "early" and r.last_step > late
        caps = dict(r.spec.limits.caps)
        assert caps == {"actions": 8, "writes": 3} and r.world.agents["bold"].decider.kind == "utility"
        for step in range(early, r.last_step + 1):  # every step rebuilds with early's limits only
            assert dict(r.world_at(step).spec.limits.caps) == caps
    finally:
        r.close()


def test_a_workflow_agent_may_be_forked_to_another_decider_and_back_to_its_workflow(tmp_path):
    r = WorldRun.start(locs(tmp_path), "harbour-crew")
    r.run(3)
    with pytest.raises(InputError) as exc:
        r.fork(r.step_number("1:pilot"), [SetDecider("pilot", "workflow")])  # the pilot has no workflow written
    assert exc.value.field == "--decider" and "[agents.workflow]" in exc.value.message
    r.fork(r.step_number("1:deckhand"), [SetDecider("deckhand", "utility")], "table")
    r.run(2)
    r.fork(r.step_number("2:deckhand"), [SetDecider("deckhand", "workflow")], "back")
    r.run(1)
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    try:
        at = next(b["fork_step"] for b in r.branches() if b["name"] == "back")
        assert r.world.agents["deckhand"].decider.kind == "workflow"
        assert r.world_at(at - 1).agents["deckhand"].decider.kind == "utility"
        assert r.world_at(r.step_number("1:deckhand") - 1).agents["deckhand"].decider.kind == "workflow"
        for step in range(1, r.last_step + 1):  # every step replays with its branch's decider
            r.world_at(step)
    finally:
        r.close()
