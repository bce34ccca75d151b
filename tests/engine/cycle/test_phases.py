"""The cycle in phases and a person in the loop (issue 12): stepping one phase at a time shows
each phase's result and records only whole cycles; approval before act (approve, reject, edit)
and user_interact's question are recorded inputs that replay and rewind reproduce."""

from __future__ import annotations

import json

import pytest

from akh_tui.engine.runs import history
from akh_tui.engine.errors import InputError
from akh_tui.engine import PHASES, Locations, Run
from akh_tui.engine.runs.scenario import build_agent, load_scenario

ASK_GOAL = "Ask user: tell me about whale answer question"  # user_interact is chosen at cycle 6


def _run(tmp_path, scenario="zoo", **kw) -> Run:
    return Run.start(Locations(tmp_path / "data", tmp_path / "config.toml"), scenario, **kw)


def _dumps(recs) -> list[str]:
    return [json.dumps(r, sort_keys=False) for r in recs]


def test_phases_run_in_order_and_equal_a_whole_cycle(tmp_path):
    whole = build_agent(load_scenario("solar"), None, None)
    expected = _dumps(whole.step() for _ in range(15))
    phased = build_agent(load_scenario("solar"), None, None)
    got, seen = [], []
    for _ in range(15):
        c = phased.begin_cycle()
        while c.next_phase is not None:
            seen.append(c.next_phase)
            c.run_phase()
        got.append(c.finish())
    assert seen[:5] == list(PHASES)
    assert _dumps(got) == expected  # same bytes, phase by phase or in one call


def test_step_phase_records_only_whole_cycles(tmp_path):
    run = _run(tmp_path)
    told = []
    run.subscribe(lambda item: told.append(item) if item.get("type") == "cycle" else None)
    outs = [run.step_phase() for _ in range(4)]
    assert [o["phase"] for o in outs] == ["observe", "orient", "decide", "act"]
    assert outs[0]["result"]["goals"] == [1, 2, 3] and "activated" in outs[1]["result"]
    assert outs[2]["result"]["tool"] == "synthesize_triple" and outs[2]["result"]["candidates"]
    assert outs[3]["result"]["output"].startswith("hypothesis added")
    assert all(o["record"] is None for o in outs)
    assert run.store.last_cycle(run.store.current()) == 0 and told == []  # nothing recorded yet
    last = run.step_phase()
    assert last["phase"] == "learn" and last["record"]["cycle"] == 1
    assert run.store.last_cycle(run.store.current()) == 1 and len(told) == 1
    run.close()


def test_quitting_mid_cycle_resumes_at_the_cycles_start(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    straight = _run(tmp_path / "a")
    expected = _dumps(straight.step() for _ in range(3))
    straight.close()
    run = Run.start(loc, "zoo")
    run.step()
    run.step_phase(); run.step_phase(); run.step_phase(); run.step_phase()  # up to act: the tool ran
    run.close()
    again = Run.resume(loc)
    assert again.cycle == 1 and not again.in_cycle
    got = _dumps([again.step(), again.step()])
    assert got == expected[1:]  # cycle 2 as if the dropped half never happened
    again.close()


def test_fork_mid_cycle_starts_from_the_last_whole_cycle(tmp_path):
    run = _run(tmp_path)
    run.step(); run.step()
    run.step_phase(); run.step_phase()
    run.fork(2, "alt")
    assert not run.in_cycle and run.cycle == 2
    assert run.step()["cycle"] == 3
    run.close()


def test_stop_before_a_phase_and_phase_breakpoints(tmp_path):
    from akh_tui.engine import parse_breakpoint, stop_phases

    assert stop_phases([parse_breakpoint("phase=act"), parse_breakpoint("veto")]) == {"act"}
    with pytest.raises(InputError, match="unknown phase 'think'"):
        parse_breakpoint("phase=think")
    run = _run(tmp_path)
    run.stop_before = {"decide"}
    assert run.step() is None and run.in_cycle and run.next_phase == "decide"
    assert run.step()["cycle"] == 1  # goes on from decide to the end of the cycle
    assert run.step() is None and run.next_phase == "decide" and run.phase_state()["cycle"] == 2
    run.close()


def _shadow_until_waiting(run):
    recs = []
    while True:
        rec = run.step()
        if rec is None:
            assert run.waiting is not None
            return recs
        recs.append(rec)


def test_reject_is_a_user_veto_counted_as_a_failure_and_rewind_reproduces_it(tmp_path):
    run = _run(tmp_path, "shadow")
    run.set_approval(["tool=shell_exec"])
    recs = _shadow_until_waiting(run)
    w = run.waiting
    assert (w["kind"], w["cycle"], w["tool"], w["input"]) == ("approve", 4, "shell_exec", "echo plankton")
    assert w["score"] > 0 and w["why"][0].startswith("[score=") and w["rule"] == "tool=shell_exec"
    with pytest.raises(InputError, match="waits for your decision"):
        run.step_phase()
    run.decide_pending("reject")
    rec = run.step()
    assert rec["act"]["vetoed"] and rec["act"]["veto"] == "user"
    assert rec["act"]["output"].startswith("VETOED by the user") and rec["act"]["approval"]["decision"] == "reject"
    assert rec["act"]["progress"] == "failed"
    assert rec["plan"]["attempt"] == recs[-1]["plan"]["attempt"] + 1  # a failed action: the plan backtracks
    rewound = history.rewind(run.store, run.store.current(), 4, run._rebuild)
    assert json.dumps(rewound.last_record) == json.dumps(rec)  # the rejection is replayed, not re-asked
    run.set_approval([])
    more = [run.step() for _ in range(3)]
    rewound = history.rewind(run.store, run.store.current(), 7, run._rebuild)
    assert json.dumps(rewound.last_record) == json.dumps(more[-1])
    run.close()


def test_approve_runs_the_action_and_the_shadow_still_vetoes(tmp_path):
    run = _run(tmp_path, "shadow")
    run.set_approval(["danger>=dangerous"])
    _shadow_until_waiting(run)
    run.decide_pending("approve")
    rec = run.step()
    # approval never widens confinement or the psyche: the shadow's veto still fires
    assert rec["act"]["veto"] == "destructive_action" and rec["act"]["approval"] == {"decision": "approve"}
    run.close()


def test_edit_only_to_an_input_the_goal_names(tmp_path):
    run = _run(tmp_path)
    run.set_approval(["tool=kg_query"])
    while run.step() is not None:
        pass
    assert run.waiting["tool"] == "kg_query"
    with pytest.raises(InputError, match="not a symbol of the graph"):
        run.decide_pending("edit", "no-such-thing")
    assert run.waiting is not None  # a refused edit keeps the action waiting
    run.decide_pending("edit", "dolphin")
    rec = run.step()
    assert rec["decide"]["input"] == "dolphin" and rec["act"]["output"].startswith("")
    assert "dolphin" in rec["act"]["output"] and rec["act"]["approval"] == {"decision": "edit", "input": "dolphin"}
    rewound = history.rewind(run.store, run.store.current(), rec["cycle"], run._rebuild)
    assert json.dumps(rewound.last_record) == json.dumps(rec)
    run.close()


def test_edit_cannot_widen_a_dangerous_tools_input(tmp_path):
    run = _run(tmp_path, "shadow")
    run.set_approval(["tool=shell_exec"])
    _shadow_until_waiting(run)
    with pytest.raises(InputError, match="must be the one the goal names"):
        run.decide_pending("edit", "rm -rf /")
    run.close()


def test_user_interact_answer_becomes_triples_and_replays(tmp_path):
    run = _run(tmp_path, goals=[ASK_GOAL])
    run.ask_user = True
    while run.step() is not None:
        pass
    w = run.waiting
    assert w["kind"] == "ask" and w["question"] == ASK_GOAL
    with pytest.raises(InputError, match="line 1"):
        run.answer_pending("whale krill")
    run.answer_pending("whale eats krill\nkrill is-a crustacean")
    rec = run.step()
    assert rec["decide"]["tool"] == "user_interact" and "answer: whale eats krill" in rec["act"]["output"]
    assert any(t["text"] == "whale eats krill" for t in run.recall("krill", 5).get("triples", [])) or \
        run.agent.kg.lookup("krill") is not None
    rewound = history.rewind(run.store, run.store.current(), rec["cycle"], run._rebuild)
    assert json.dumps(rewound.last_record) == json.dumps(rec)
    assert rewound.kg.lookup("krill") is not None
    run.close()


def test_user_interact_skip_is_no_answer(tmp_path):
    run = _run(tmp_path, goals=[ASK_GOAL])
    run.ask_user = True
    while run.step() is not None:
        pass
    run.answer_pending(None)
    assert run.step()["act"]["output"].endswith("; no answer")
    run.close()


def test_approval_rules_in_the_user_config(tmp_path):
    from akh_tui.engine import UserConfig

    p = tmp_path / "c.toml"
    p.write_text('[approve]\nwhen = ["danger>=dangerous", "tool=shell_exec"]\n')
    assert UserConfig.load(p).approve == ["danger>=dangerous", "tool=shell_exec"]
    p.write_text('[approve]\nwhen = ["danger>=lethal"]\n')
    cfg = UserConfig.load(p)
    assert "unknown danger level 'lethal'" in cfg.error and "approve.when" in cfg.error and str(p) in cfg.error


def test_edit_refused_for_a_tool_that_finds_its_own_input(tmp_path):
    run = _run(tmp_path)
    run.set_approval(["tool=synthesize_triple"])
    assert run.step() is None and run.waiting["tool"] == "synthesize_triple"
    with pytest.raises(InputError, match="takes its input from the goal itself"):
        run.decide_pending("edit", "cat is-a fish")
    with pytest.raises(InputError, match="unknown decision 'maybe'"):
        run.decide_pending("maybe")
    run.decide_pending("approve")
    assert run.step()["act"]["approval"] == {"decision": "approve"}
    run.close()


def test_approval_rules_are_checked():
    from akh_tui.engine import parse_rules

    assert [r.spec for r in parse_rules(["danger >= dangerous", "capability=network"])] == \
        ["danger >= dangerous", "capability=network"]
    for bad, words in (("tool=nope", "unknown tool 'nope'"), ("danger>=lethal", "unknown danger level"),
                       ("tool>=kg_query", "tool takes ="), ("whatever", "cannot read approval rule")):
        with pytest.raises(InputError, match=words):
            parse_rules([bad])


def test_a_pinned_rerun_reproduces_the_users_decisions(tmp_path):
    from akh_tui.engine import rerun

    run = _run(tmp_path, "shadow")
    run.set_approval(["tool=shell_exec"])
    recs = []
    while len(recs) < 6:
        rec = run.step()
        if rec is None:
            run.decide_pending("reject")
            continue
        recs.append(rec)
    inputs = run.store.inputs(run.store.current(), 0, 6)
    assert inputs[3] == [("verdict", {"cycle": 4, "decision": "reject", "input": None, "why": "rejected by the user"})]
    again = list(rerun("shadow", run.seed, None, "utility", inputs, 6))
    assert _dumps(again) == _dumps(json.loads(json.dumps(r)) for r in recs)
    run.close()
