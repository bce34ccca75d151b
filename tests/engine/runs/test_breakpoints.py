"""Breakpoints stop a run and say which fired; their conditions are parsed, never eval-ed."""

import json

import pytest

from akh_tui.engine.runs.breakpoints import first_hit, parse_breakpoint as parse
from akh_tui.engine.errors import InputError
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from tests.engine.cycle.test_engine import run


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


@pytest.mark.parametrize("bad", ["tool=nonexistent", "decide.tool == teleport"])
def test_an_unknown_tool_breakpoint_makes_no_run(cli, tmp_path, bad):
    # tool names are known once the scenario's plugins are loaded, but still before a run is made
    proc = cli("agent", "run", "--break", bad, check_rc=2)
    assert "--break" in proc.stderr and "unknown tool" in proc.stderr
    assert not (tmp_path / "data" / "session.db").exists()
    cli("agent", "run", "--max-cycles", "2")
    cli("agent", "run", "--fresh", "--break", bad, check_rc=2)
    runs = json.loads(cli("sessions", "list", "--json").stdout)
    assert len(runs) == 1


# -- one validator, everywhere (issue 13 §6) ----------------------------------------------------

@pytest.mark.parametrize("bad, reason", [
    ("tool=nonexistent", "unknown tool 'nonexistent'"),
    ("foo.bar > 1", "the cycle record has no 'foo'"),
    ("wm.sise > 10", "wm has no 'sise'"),
    ("decide.tool > 1", "decide.tool is text"),
    ("decide.tool == teleport", "unknown tool 'teleport'"),
    ("wm.size == lots", "wm.size is a number"),
    ("goals.first.coverage > 0", "goals is a list"),
    ("act > 1", "act is a table"),
])
def test_typos_are_refused_with_the_reason(bad, reason):
    with pytest.raises(InputError) as err:
        parse(bad)
    assert reason in err.value.message and err.value.field == "--break"


@pytest.mark.parametrize("good", ["tool=kg_query", "goals.0.coverage > 0.5", "orient.adjacent.2 > 3",
                                  "psyche.archetypes.sage > 0.8", "act.vetoed == true", "decide.plan_step == reason",
                                  "decide.candidates.3.score >= 0.5", "decide.llm.model == x"])
def test_real_paths_are_accepted(good):
    assert parse(good).spec == good


def test_search_and_breakpoints_refuse_the_same_tool(cli):
    from akh_tui.engine.runs.search import parse_search

    with pytest.raises(ValueError) as search_err:
        parse_search("tool=nonexistent")
    with pytest.raises(InputError) as break_err:
        parse("tool=nonexistent")
    assert "unknown tool 'nonexistent'" in str(search_err.value) and "unknown tool 'nonexistent'" in break_err.value.message
    r = cli("agent", "run", "--max-cycles", "2", "--break", "foo.bar > 1", check_rc=2)
    assert r.returncode == 2 and "foo" in r.stderr and "--break" in r.stderr


def test_the_config_refuses_a_typo_with_file_and_field(tmp_path):
    from akh_tui.engine.runs.userconfig import UserConfig

    cfg = tmp_path / "config.toml"
    cfg.write_text('[breakpoints]\nstop = ["tool=nonexistent"]\n')
    loaded = UserConfig.load(cfg)
    assert loaded.error and "unknown tool 'nonexistent'" in loaded.error and "breakpoints.stop" in loaded.error


def test_a_condition_fires_when_it_becomes_true_not_while_it_stays_true():
    zoo = records("zoo", 20)
    bp = parse("wm.size > 10")
    fired = [r["cycle"] for prev, r in zip([None] + zoo, zoo) if bp.check(r, prev)]
    holds = [r["cycle"] for r in zoo if r["wm"]["size"] > 10]
    assert len(holds) > 1  # it stays true for several cycles ...
    assert fired == [holds[0]]  # ... and fires once, when it became true
