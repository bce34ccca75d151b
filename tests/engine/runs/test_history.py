"""Replay, rewind and fork: a fork with no edits reproduces the original run exactly, edits
make it diverge, and compare says where and why."""

import json
import tempfile
from pathlib import Path

from akh_tui.engine.runs.history import Timeline, compare, resume, search
from akh_tui.engine.psyche.model import Psyche
from akh_tui.engine import Locations, Run
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from akh_tui.engine.store.session import SessionStore

SOLAR = load_scenario("solar")
SOLAR.config.stall_threshold = 10**6  # keep the runs going
DATA = Path(tempfile.mkdtemp(prefix="akh-history-"))


def fresh():
    return build_agent(SOLAR, add_goals=False)


def recorded_run(n: int, every: int = 7, inputs: dict | None = None, path=":memory:"):
    """n cycles of solar recorded in a session store through the door, with user inputs
    {after cycle: [(kind, payload)]}; returns the run and the main branch's timeline."""
    ctl = Run.start(Locations(DATA, DATA / "config.toml"), SOLAR, store=SessionStore(path, every=every))
    for _ in range(n):
        for kind, payload in (inputs or {}).get(ctl.cycle, []):
            if kind == "goal":
                ctl.add_goal(*payload)
            elif kind == "psyche":
                ctl.edit_psyche(payload)
        ctl.step()
    return ctl, timeline(ctl)


def timeline(ctl: Run) -> Timeline:
    return Timeline(ctl.store, ctl.store.branch, fresh)


class Records:
    """Records(tl)[c] for the tests below: each read goes to the store."""

    def __init__(self, tl):
        self.tl = tl

    def __getitem__(self, c):
        return self.tl.record(c)


def dumps(records):
    return [json.dumps(r, sort_keys=True) for r in records]


def test_replay_makes_no_engine_calls_and_returns_the_record():
    _, tl = recorded_run(12)
    tl.rebuild = lambda: (_ for _ in ()).throw(AssertionError("replay must not build an engine"))
    tl.store.snapshot_before = None  # nor restore one
    assert tl.record(9)["cycle"] == 9


def test_fork_without_edits_reproduces_the_original_cycles_exactly():
    original, tl = recorded_run(40)
    for cycle in (0, 5, 7, 13, 21):
        agent, branch, event = tl.fork(cycle, f"b{cycle}")
        assert event["type"] == "fork" and event["cycle"] == cycle and event["parent"] == "main"
        again = [agent.step() for _ in range(40 - cycle)]
        assert dumps(again) == dumps([Records(tl)[c] for c in range(cycle + 1, 41)])


def test_rewind_replays_user_inputs_made_between_cycles():
    strict = Psyche.default().with_veto_for_tool("synthesize_triple").to_toml()
    inputs = {3: [("goal", ("Find icy planets", None, 200))], 6: [("psyche", strict)]}
    _, tl = recorded_run(20, every=5, inputs=inputs)
    agent = tl.rewind(12)
    assert any(g.description == "Find icy planets" for g in agent.goals.values())
    assert [p.name for p in agent.psyche.shadow.veto_patterns][-1] == "no_synthesize_triple"
    assert dumps([agent.step() for _ in range(8)]) == dumps([Records(tl)[c] for c in range(13, 21)])


def test_fork_with_a_changed_archetype_diverges_and_compare_says_why():
    _, tl = recorded_run(30)
    agent, branch, event = tl.fork(4, "explorer", {"archetypes": {"guardian": 0.95, "sage": 0.1}})
    assert event["edits"] == ["guardian weight 0.95", "sage weight 0.1"]
    forked = [Records(tl)[c] for c in range(1, 5)] + [agent.step() for _ in range(26)]
    result = compare([Records(tl)[c] for c in range(1, 31)], forked)
    first, early = result["first_divergence"], result["first_difference"]
    assert early["cycle"] == 5 and early["same_choice"]  # the weights change scores at once ...
    assert first is not None and first["cycle"] == 6 and first["a"]["tool"] != first["b"]["tool"]  # ... the choice next
    assert any("archetype" in diff for diff in early["factors"].values())
    assert any("archetype" in diff for diff in first["factors"].values())
    assert result["a"]["cycles"] == 30 and result["b"]["cycles"] == 30


def test_a_tool_disabled_in_a_fork_is_not_offered():
    _, tl = recorded_run(10)
    agent, _, event = tl.fork(3, "no-synth", {"disable_tools": ["synthesize_triple"]})
    rec = agent.step()
    row = next(c for c in rec["decide"]["candidates"] if c["tool"] == "synthesize_triple")
    assert not row["offered"] and row["why_not"] == "not offered: disabled for this run"
    assert "synthesize_triple" not in tl.rewind(3).config.disabled_tools  # the parent is untouched


def test_search_finds_cycles_by_tool_veto_goal_progress_and_text():
    _, tl = recorded_run(25)
    recs = list(tl.records())
    by_tool = search(recs, tool="kg_query")
    assert by_tool and all(Records(tl)[c]["decide"]["tool"] == "kg_query" for c in by_tool)
    assert search(recs, progress="advanced", goal=1) == [r["cycle"] for r in recs
                                                          if r["act"]["progress"] == "advanced" and r["goal"]["id"] == 1]
    assert search(recs, veto=True) == []
    hits = search(recs, text="PLANET")
    assert hits and all("planet" in Records(tl)[c]["act"]["output"].lower() for c in hits)


def test_branches_share_history_and_a_fork_of_a_fork_reproduces_main():
    main_ctl, tl = recorded_run(40, every=5)
    main = [json.dumps(r, sort_keys=True) for r in tl.records()]
    ctl = main_ctl
    ctl.fork(8, "a")
    ctl.run_cycles(9)  # cycles 9..17 on a
    ctl.fork(13, "b")  # forked off a after its own cycles began
    ctl.run_cycles(40 - 13)
    b = timeline(ctl)
    assert b.name == "b" and b.last_cycle == 40
    assert [json.dumps(r, sort_keys=True) for r in b.records()] == main
    # each branch stored only its own cycles; the rest is read through the lineage
    store = ctl.store
    own = {name: store.db.execute("SELECT COUNT(*) FROM cycles WHERE branch=?", (bid,)).fetchone()[0]
           for bid, name in store.db.execute("SELECT id, name FROM branches")}
    assert own == {"main": 40, "a": 9, "b": 27}
    names = {br["name"]: br for br in ctl.branches()}
    assert (names["b"]["parent"], names["b"]["fork_cycle"], names["b"]["current"]) == ("a", 13, True)


def test_the_parents_later_inputs_are_not_the_forks():
    ctl, tl = recorded_run(12, every=5, inputs={6: [("goal", ("Find icy planets", None, 200))]})
    ctl.fork(6, "before-goal")  # right after cycle 6, before the goal was added
    assert not any(g["description"] == "Find icy planets" for g in ctl.view()["goals"])
    events = [e["type"] for _, e in ctl.store.events(ctl.store.branch)]
    assert "goal_added" not in events and events[-1] == "fork"  # the user's goal came after the fork point
    main_events = [e["type"] for _, e in ctl.store.events(tl.branch)]
    assert main_events.count("goal_added") == 1 and "fork" not in main_events


def test_switching_back_to_main_continues_it_unchanged(tmp_path):
    ctl, tl = recorded_run(10, every=4, path=tmp_path / "s.db")
    ctl.fork(5, "side", {"archetypes": {"explorer": 0.95}})
    ctl.run_cycles(7)
    ctl.switch(tl.branch)
    ctl.run_cycles(10)
    reference, ref_tl = recorded_run(20, every=4)
    assert [json.dumps(r, sort_keys=True) for r in tl.records()] == [json.dumps(r, sort_keys=True) for r in ref_tl.records()]
    # and a fresh process resumes the side branch where it was
    ctl.close()
    store = SessionStore(tmp_path / "s.db", every=4)
    side = next(b for b in store.branches(1) if b["name"] == "side")
    agent = resume(store, fresh, side["id"])
    assert agent.cycle == 12 and agent.psyche.archetypes["explorer"] == 0.95


def test_resume_without_a_checkpoint_replays_to_the_last_cycle_and_its_inputs(tmp_path):
    ctl, tl = recorded_run(13, every=5, path=tmp_path / "s.db")
    ctl.add_goal("Find icy planets", None, 200)  # after cycle 13; then the process "dies" (no close)
    expected = ctl.step()
    store = SessionStore(tmp_path / "s.db", every=5)
    store.db.execute("DELETE FROM cycles WHERE cycle=14")  # as if killed before cycle 14 committed
    agent = resume(store, fresh, store.branch)
    assert agent.cycle == 13 and any(g.description == "Find icy planets" for g in agent.goals.values())
    assert json.dumps(agent.step(), sort_keys=True) == json.dumps(expected, sort_keys=True)


def test_the_store_searches_a_branch_like_search_does_on_its_records():
    ctl, tl = recorded_run(30, every=5)
    ctl.fork(12, "side", {"archetypes": {"explorer": 0.95}})
    ctl.run_cycles(10)
    branch = timeline(ctl)
    recs = list(branch.records())
    for filters in ({"tool": "kg_query"}, {"progress": "advanced", "goal": 1}, {"veto": True}, {"text": "PLANET"},
                    {"text": "100%_"}, {"tool": "reason", "text": "planet"}):
        expected = search(recs, **filters)
        assert [r["cycle"] for r in ctl.store.search(ctl.store.branch, **filters)] == expected, filters
    assert [r["cycle"] for r in ctl.store.search(ctl.store.branch, tool="kg_query")]  # not vacuous


def test_compare_of_two_branches_starts_where_their_histories_part():
    ctl, tl = recorded_run(30, every=5)
    main = tl.branch
    ctl.fork(20, "late", {"archetypes": {"guardian": 0.95, "sage": 0.1}})
    ctl.run_cycles(10)
    late = ctl.store.branch
    assert ctl.store.shared_cycles(main, late) == 21 and ctl.store.shared_cycles(main, main) > 30
    result = ctl.compare(main, late)
    full = compare(tl.records(), timeline(ctl).records())  # the same answer reading everything
    assert {k: v for k, v in result.items() if k in full} == full
    assert result["first_divergence"] is not None and result["first_divergence"]["cycle"] > 20
