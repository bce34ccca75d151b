"""`agent run --scenario water-jug` (issue 30): a Soar agent solving the puzzle headless, what
it prints, and how it refuses what it cannot do."""

from __future__ import annotations

import json
import sys

import pytest

from akh_tui.engine.errors import InputError

pytest.importorskip("soar_sml", reason="soar-sml is in the test extra: pip install -e '.[test]'")


def test_water_jug_is_solved_headless_decision_by_decision(cli) -> None:
    out = cli("agent", "run", "--scenario", "water-jug").stdout
    assert "initialize-water-jug" in out and "pour from-volume" in out
    assert "decision(s) run, stopped: halted" in out
    assert "rejected" in out  # the candidates it passed over, with their chance


def test_json_is_the_same_bytes_on_every_run_and_names_the_architecture(cli, tmp_path) -> None:
    one = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json", "--trace", str(tmp_path / "t.jsonl")).stdout)
    two = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json").stdout)
    assert (one.pop("run"), two.pop("run")) == (1, 2)  # each run recorded in the store, numbered
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    data = one
    assert data["architecture"] == "soar" and data["stop"] == "halted"
    assert data["decisions"][-1]["halted"] and data["decisions_run"] == len(data["decisions"])
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["architecture"] == "soar" and len(lines) == 1 + data["decisions_run"]
    other = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json", "--seed", "3").stdout)
    assert [d["selected"]["id"] for d in other["decisions"]] != [d["selected"]["id"] for d in data["decisions"]]


def test_ooda_flags_are_refused_on_a_soar_scenario(cli) -> None:
    err = cli("agent", "run", "--scenario", "water-jug", "--goals", "x", check_rc=2).stderr
    assert "--goals" in err and "Soar scenario" in err


def test_without_soar_sml_it_says_how_to_install(cli, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "soar_sml", None)  # import soar_sml raises ImportError
    err = cli("agent", "run", "--scenario", "water-jug", check_rc=2).stderr
    words = " ".join(err.split())
    assert "soar-sml is not installed" in words and "pip install 'akh-tui[soar]'" in words
    assert "water-jug.toml" in words  # the scenario that needed it


def test_the_ooda_loader_says_a_soar_scenario_is_not_its_own() -> None:
    from akh_tui.engine import InputError, load_scenario

    with pytest.raises(InputError, match="a Soar scenario") as e:
        load_scenario("water-jug")
    assert e.value.field == "architecture" and e.value.line == 3


def test_the_ooda_water_jug_is_solved_with_its_three_tools(cli) -> None:
    data = json.loads(cli("agent", "run", "--scenario", "water-jug-ooda", "--json", "--fresh").stdout)
    assert [c["tool"] for c in data["cycles"]] == ["fill_jug", "pour_jug", "empty_jug", "pour_jug", "fill_jug",
                                                   "pour_jug"]
    assert data["goals"][0]["status"] == "completed"


def test_compare_names_where_the_soar_and_the_ooda_agent_part(cli) -> None:
    out = cli("agent", "compare", "water-jug", "water-jug-ooda").stdout
    assert "their choices part at move 1" in out
    assert "fill jug3: Soar decision 2: O3 fill volume 3, value 0.3 (50% chance)" in out
    assert "fill jug5: OODA cycle 1: fill_jug(jug5), score" in out
    data = json.loads(cli("agent", "compare", "water-jug", "water-jug-ooda", "--json").stdout)
    assert data == json.loads(cli("agent", "compare", "water-jug", "water-jug-ooda", "--json").stdout)  # deterministic
    assert data["moves"] == {"water-jug": 14, "water-jug-ooda": 6}
    assert data["steps"][-1]["state_a"] == "5-gal 4, 3-gal 0" and data["steps"][5]["state_b"] == "5-gal 4, 3-gal 3"
    assert {"state": "5-gal 2, 3-gal 3", "step_a": 4, "step_b": 2} in data["common_states"]


def test_compare_refuses_an_unknown_scenario(cli) -> None:
    assert "unknown scenario 'nope'" in cli("agent", "compare", "water-jug", "nope", check_rc=2).stderr


def test_select_forks_headless_and_replays_identically_up_to_the_fork(cli) -> None:
    own = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json").stdout)["decisions"]
    other = next(c["id"] for c in own[5]["candidates"] if not c["chosen"] and c["probability"])
    forked = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json", "--select", f"6={other}").stdout)
    fd = forked["decisions"]
    assert [d["selected"] for d in fd[:5]] == [d["selected"] for d in own[:5]]  # the same up to the fork
    assert fd[5]["selected"]["id"] == other and fd[5]["forced"] == other
    assert [d["selected"] for d in fd] != [d["selected"] for d in own]


def test_select_names_a_bad_selection(cli) -> None:
    err = " ".join(cli("agent", "run", "--scenario", "water-jug", "--select", "2=O99", check_rc=2).stderr.split())
    assert "--select" in err and "decision 2: 'O99' is not an operator proposed now (proposed: O2, O3)" in err
    err = cli("agent", "run", "--scenario", "water-jug", "--select", "0=O1", check_rc=2).stderr
    assert "expected DECISION=OPERATOR" in err


def test_select_on_an_ooda_scenario_is_refused_not_ignored(cli) -> None:
    err = cli("agent", "run", "--scenario", "zoo", "--select", "2=O2", check_rc=2).stderr
    assert "--select" in err and "Soar scenario" in err


def test_a_soar_trace_given_to_the_ooda_reader_says_what_it_is(cli, tmp_path) -> None:
    trace = tmp_path / "wj.jsonl"
    cli("agent", "run", "--scenario", "water-jug", "--trace", str(trace))
    from akh_tui.engine.store.trace import read_trace

    with pytest.raises(InputError) as e:
        list(read_trace(trace))
    err = str(e.value)
    assert "a Soar run's trace (scenario 'water-jug', seed 7)" in err and "--scenario water-jug --seed 7" in err


def test_check_of_a_soar_trace_reruns_every_decision(cli, tmp_path) -> None:
    trace = tmp_path / "wj.jsonl"
    cli("agent", "run", "--scenario", "water-jug", "--select", "3=O4", "--trace", str(trace))
    n = len(trace.read_text().splitlines()) - 1
    assert f"all {n} decisions as recorded" in cli("check", str(trace)).stdout
    data = json.loads(cli("check", str(trace), "--json").stdout)
    assert data["same"] and data["architecture"] == "soar"
    lines = trace.read_text().splitlines()
    assert '"forced": "O4", ' in lines[3]
    lines[3] = lines[3].replace('"forced": "O4", ', "")  # the selection forgotten: Soar picks on its own
    trace.write_text("\n".join(lines) + "\n")
    out = cli("check", str(trace), check_rc=1).stdout
    assert "changed: decision 3: the trace selected O4" in out


def test_break_on_an_operator_stops_right_after_it_is_selected(cli) -> None:
    full = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json").stdout)
    first = next(r for r in full["decisions"] if r["selected"]["name"] == "pour")  # Soar's first pour, unbroken
    got = json.loads(cli("agent", "run", "--scenario", "water-jug", "--break", "operator=pour", "--json").stdout)
    assert got["decisions_run"] == first["decision"] - 1  # the decisions before it are recorded, not it
    assert got["decisions"] == full["decisions"][: first["decision"] - 1]  # the same run up to there
    assert got["at"]["decision"] == first["decision"] and got["at"]["next_phase"] == "apply"  # not yet applied
    assert got["at"]["selected"] == first["selected"]
    assert got["stop"].startswith(f"operator pour: decision {first['decision']} selected {first['selected']['id']}")
    # by its label or id too; the text says where it stopped
    out = cli("agent", "run", "--scenario", "water-jug", "--break", f"operator={first['selected']['label']}").stdout
    assert f"stopped in decision {first['decision']} before its apply phase" in out


def test_break_on_a_phase_and_on_an_impasse(cli, tmp_path) -> None:
    got = json.loads(cli("agent", "run", "--scenario", "water-jug", "--break", "phase=propose", "--json").stdout)
    assert got["at"] == {"decision": 1, "next_phase": "propose", "selected": None, "stack": [["state", "S1", ""]]}
    (tmp_path / "tie.soar").write_text(
        "sp {t*init (state <s> ^superstate nil -^ready) --> (<s> ^operator <o> + !) (<o> ^name init)}\n"
        "sp {t*apply*init (state <s> ^operator.name init) --> (<s> ^ready yes)}\n"
        "sp {t*propose*a (state <s> ^ready yes) --> (<s> ^operator <o> +) (<o> ^name a)}\n"
        "sp {t*propose*b (state <s> ^ready yes) --> (<s> ^operator <o> +) (<o> ^name b)}\n", encoding="utf-8")
    (tmp_path / "tie.toml").write_text('name = "tie"\narchitecture = "soar"\nproductions = "tie.soar"\nseed = 1\n'
                                       'max_decisions = 20\n', encoding="utf-8")
    for spec in ("impasse", "impasse=tie", "impasse=operator tie"):
        got = json.loads(cli("agent", "run", "--scenario", str(tmp_path / "tie.toml"), "--break", spec, "--json").stdout)
        assert got["stop"] == "impasse: decision 2 made S2 (operator tie)" and got["decisions_run"] == 1, spec
        assert got["at"]["stack"][-1] == ["state", "S2", "operator tie"]
    # the tie's substate has no operators: the next decision makes a state no-change below it
    got = json.loads(cli("agent", "run", "--scenario", str(tmp_path / "tie.toml"), "--break", "impasse=state no-change",
                         "--json").stdout)
    assert got["stop"] == "impasse: decision 3 made S3 (state no-change)" and got["decisions_run"] == 2
    got = json.loads(cli("agent", "run", "--scenario", str(tmp_path / "tie.toml"), "--break", "impasse=conflict",
                         "--json").stdout)
    assert got["decisions_run"] == 20 and "at" not in got  # no conflict in it: it never fired


@pytest.mark.parametrize("spec,says", [
    ("operator=bogus", "no production names an operator 'bogus'"),
    ("impasse=stuck", "no impasse 'stuck'"),
    ("phase=orient", "no Soar phase 'orient'"),
    ("tool=shell_exec", "a Soar run stops at operator=NAME"),
])
def test_a_soar_break_that_could_never_fire_is_refused_before_anything_runs(cli, tmp_path, spec, says) -> None:
    err = cli("agent", "run", "--scenario", "water-jug", "--break", spec, check_rc=2).stderr
    assert says in " ".join(err.split()) and "--break" in err
    assert not (tmp_path / "data").exists() or "water-jug" not in cli("sessions", "list").stdout


def test_resume_with_a_break_runs_the_stopped_decision_whole_then_stops_at_the_next(cli) -> None:
    full = json.loads(cli("agent", "run", "--scenario", "water-jug", "--json").stdout)["decisions"]
    pours = [r["decision"] for r in full if r["selected"]["name"] == "pour"]
    cli("agent", "run", "--scenario", "water-jug", "--break", "operator=pour")
    got = json.loads(cli("agent", "resume", "--break", "operator=pour", "--json").stdout)
    assert [r["decision"] for r in got["decisions"]] == list(range(pours[0], pours[1]))  # the first pour applied
    assert got["decisions"] == full[pours[0] - 1:pours[1] - 1]  # as the unbroken run made them
    assert got["stop"].startswith(f"operator pour: decision {pours[1]} selected")
    err = cli("agent", "resume", "--break", "impasse=stuck", check_rc=2).stderr
    assert "no impasse 'stuck'" in " ".join(err.split())
