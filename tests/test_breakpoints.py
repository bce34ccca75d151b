"""Breakpoints stop a run and say which fired; their conditions are parsed, never eval-ed."""

import json

import pytest

from akh_tui.engine.breakpoints import first_hit, parse
from akh_tui.engine.errors import InputError
from akh_tui.engine.scenario import build_agent, load_scenario
from tests.test_engine import run


def records(scenario: str, n: int) -> list[dict]:
    return run(build_agent(load_scenario(scenario)), n)


def first_firing(spec: str, recs: list[dict]) -> tuple[int, str] | None:
    bp, prev = parse(spec), None
    for rec in recs:
        hit = first_hit([bp], rec, prev)
        if hit:
            return rec["cycle"], hit
        prev = rec
    return None


def test_tool_veto_goal_and_conditions_fire_where_the_records_say():
    shadow = records("shadow", 12)
    vetoed = next(r["cycle"] for r in shadow if r["act"]["vetoed"])
    assert first_firing("veto", shadow)[0] == vetoed
    assert first_firing("veto=destructive_action", shadow)[0] == vetoed
    assert first_firing("veto=something_else", shadow) is None
    assert first_firing("tool=shell_exec", shadow)[0] == vetoed
    zoo = records("zoo", 20)
    done = next(r["cycle"] for r in zoo if r["act"]["progress"] == "completed")
    cycle, why = first_firing("goal", zoo)
    assert cycle == done and "active → completed" in why
    assert first_firing("coverage >= 1", zoo)[0] == done
    first_reason = next(r["cycle"] for r in zoo if r["decide"]["tool"] == "infer_rules")
    assert first_firing("decide.tool == infer_rules", zoo)[0] == first_reason
    low = next(r for r in zoo if min(c["score"] for c in r["decide"]["candidates"] if c["tool"] == r["decide"]["tool"]) < 0.7)
    assert first_firing("score < 0.7", zoo)[0] == low["cycle"]
    assert first_firing("wm.size > 1000", zoo) is None
    cycle, why = first_firing("wm.size > 10", zoo)
    assert "wm.size = " in why and zoo[cycle - 1]["wm"]["size"] > 10


@pytest.mark.parametrize("bad", ["", "score <", "score ~ 1", "score < high", "a..b > 1", "tool=", "__import__('os') == 1",
                                 "score < nan"])
def test_bad_breakpoints_are_refused_with_the_flag_named(bad):
    with pytest.raises(InputError) as err:
        parse(bad)
    assert err.value.field == "--break"


def test_a_run_stops_at_a_veto_breakpoint_and_says_so(cli):
    out = json.loads(cli("agent", "run", "--scenario", "shadow", "--break", "veto", "--max-cycles", "50", "--json").stdout)
    assert "breakpoint 'veto' fired" in out["stop"] and out["cycles"][-1]["vetoed"]
    after = json.loads(cli("agent", "resume", "--break", "tool=reason", "--max-cycles", "50", "--json").stdout)
    assert after["cycles"][0]["cycle"] == out["cycle"] + 1
    assert after["cycles"][-1]["tool"] == "reason" and "tool=reason" in after["stop"]


def test_a_bad_breakpoint_changes_nothing(cli, tmp_path):
    proc = cli("agent", "run", "--break", "score < high", check_rc=2)
    assert "--break" in proc.stderr
    assert not (tmp_path / "data" / "session.db").exists()
