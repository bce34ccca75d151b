"""`agent why` and Run.why show what the model said (assessment, rationale), where it and the
utility table disagree, and in the process that decided it whether the answer was replayed
from the recorded calls or asked live (issue 27)."""

from __future__ import annotations

from akh_tui.engine import Locations, Run
from akh_tui.engine.store.session import SessionStore


def test_why_names_the_model_and_the_table_and_how_the_answer_came(tmp_path):
    ctl = Run.start(Locations(tmp_path, tmp_path / "config.toml"), "solar", decider="scripted",
                    store=SessionStore(":memory:"))
    for _ in range(12):
        ctl.step()
    lines = []
    assert ctl.last_cycle() >= 6
    for c in range(1, ctl.last_cycle() + 1):
        rec = ctl.record(c)
        llm = rec["decide"]["llm"]
        why = ctl.why(c)["lines"]
        model = [ln for ln in why if ln.startswith("model: ")]
        assert len(model) == 1 and "(asked live, " in model[0]
        assert f"  assessment: {llm['situation_assessment']}" in why
        assert f"  rationale: {llm['action_rationale']}" in why
        if llm["status"] == "accepted" and llm["tool"] != llm["utility_tool"]:
            assert f"the model chose {llm['tool']}; the utility table preferred {llm['utility_tool']}" in model[0]
        lines.append(model[0])
    assert any("the utility table preferred" in ln for ln in lines)  # the scripted model disagrees at times


def test_agent_why_in_another_process_shows_the_model_without_a_marker(cli):
    cli("agent", "run", "--scenario", "zoo", "--decider", "scripted", "--max-cycles", "2", "--fresh")
    out = cli("agent", "why", "--cycle", "2").stdout
    assert "model: " in out and "assessment: scripted:" in out and "asked live" not in out and "replayed" not in out


def test_a_table_decision_has_no_model_lines(tmp_path):
    ctl = Run.start(Locations(tmp_path, tmp_path / "config.toml"), "zoo", store=SessionStore(":memory:"))
    ctl.step()
    assert not [ln for ln in ctl.why(1)["lines"] if ln.startswith("model")]


def test_a_fork_replays_the_recorded_answers_up_to_it_and_asks_the_model_after(tmp_path):
    ctl = Run.start(Locations(tmp_path, tmp_path / "config.toml"), "solar", decider="scripted",
                    store=SessionStore(":memory:", every=5))
    for _ in range(8):
        ctl.step()
    asked: list[int] = []
    provider = ctl.agent.decider.provider
    complete = provider.complete

    def counting(messages, schema=None):
        asked.append(len(messages))
        return complete(messages, schema=schema)

    provider.complete = counting
    ctl.fork(6, "alt")  # snapshot at 5, cycle 6 replayed from its record: no call
    assert asked == []
    ctl.step()
    ctl.step()
    assert len(asked) == 2  # live after the fork point
    assert ctl.record(7)["decide"]["llm"]["status"] in ("accepted", "intent_rejected")
    assert ctl.model_call(7)["replayed"] is False
