"""Replay, rewind and fork: a fork with no edits reproduces the original run exactly, edits
make it diverge, and compare says where and why."""

import json

from akh_tui.engine.history import Timeline, compare, search
from akh_tui.engine.psyche import Psyche
from akh_tui.engine.scenario import build_agent, load_scenario

SOLAR = load_scenario("solar")


def fresh():
    return build_agent(SOLAR, add_goals=False)


def recorded_run(n: int, every: int = 7, inputs: dict | None = None):
    agent = build_agent(SOLAR)
    agent.config.stall_threshold = 10**6  # keep the run going
    for g in agent.goals.values():
        g.stall_threshold = 10**6
    tl = Timeline(fresh, every=every)
    tl.start(agent)
    for _ in range(n):
        for kind, payload in (inputs or {}).get(agent.cycle, []):
            if kind == "goal":
                agent.add_goal(*payload)
            elif kind == "psyche":
                agent.replace_psyche(Psyche.from_toml(payload))
            tl.user_input(agent.cycle, kind, payload)
        rec = agent.step()
        agent.drain_events()
        tl.cycle(agent, rec)
    return agent, tl


def dumps(records):
    return [json.dumps(r, sort_keys=True) for r in records]


def test_replay_makes_no_engine_calls_and_returns_the_record():
    _, tl = recorded_run(12)
    tl.rebuild = lambda: (_ for _ in ()).throw(AssertionError("replay must not build an engine"))
    assert tl.record(9)["cycle"] == 9


def test_fork_without_edits_reproduces_the_original_cycles_exactly():
    original, tl = recorded_run(40)
    for cycle in (0, 5, 7, 13, 21):
        agent, branch, event = tl.fork(cycle, f"b{cycle}")
        assert event["type"] == "fork" and event["cycle"] == cycle and event["parent"] == "main"
        again = [agent.step() for _ in range(40 - cycle)]
        assert dumps(again) == dumps([tl.records[c] for c in range(cycle + 1, 41)])


def test_rewind_replays_user_inputs_made_between_cycles():
    strict = Psyche.default().with_veto_for_tool("synthesize_triple").to_toml()
    inputs = {3: [("goal", ("Find icy planets", None, 200))], 6: [("psyche", strict)]}
    _, tl = recorded_run(20, every=5, inputs=inputs)
    agent = tl.rewind(12)
    assert any(g.description == "Find icy planets" for g in agent.goals.values())
    assert [p.name for p in agent.psyche.shadow.veto_patterns][-1] == "no_synthesize_triple"
    assert dumps([agent.step() for _ in range(8)]) == dumps([tl.records[c] for c in range(13, 21)])


def test_fork_with_a_changed_archetype_diverges_and_compare_says_why():
    _, tl = recorded_run(30)
    agent, branch, event = tl.fork(4, "explorer", {"archetypes": {"guardian": 0.95, "sage": 0.1}})
    assert event["edits"] == ["guardian weight 0.95", "sage weight 0.1"]
    forked = [tl.records[c] for c in range(1, 5)] + [agent.step() for _ in range(26)]
    result = compare([tl.records[c] for c in range(1, 31)], forked)
    first = result["first_divergence"]
    assert first is not None and first["cycle"] == 5
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
    recs = [tl.records[c] for c in sorted(tl.records)]
    by_tool = search(recs, tool="kg_query")
    assert by_tool and all(tl.records[c]["decide"]["tool"] == "kg_query" for c in by_tool)
    assert search(recs, progress="advanced", goal=1) == [r["cycle"] for r in recs
                                                          if r["act"]["progress"] == "advanced" and r["goal"]["id"] == 1]
    assert search(recs, veto=True) == []
    hits = search(recs, text="PLANET")
    assert hits and all("planet" in tl.records[c]["act"]["output"].lower() for c in hits)
