"""Soar behind the adapter (issue 30): the bundled agents solve their puzzles; candidates carry
value, chance and the proposing rule; why-not is `production matches`; rewind and fork replay
identically; a `.soar` file's host-reaching commands need a trusted folder."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("soar_sml", reason="soar-sml is in the test extra: pip install -e '.[test]'")

from akh_tui.engine.arch.adapter import Architecture
from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import bundled_data_dir
from akh_tui.engine.soar.adapter import SoarArchitecture
from akh_tui.engine.soar.run import SoarRun
from akh_tui.engine.soar.scenario import find_soar, load_soar_scenario
from akh_tui.engine.soar.source import read_soar, split_commands
from akh_tui.engine.tools import trust

SOAR = bundled_data_dir() / "soar"

# never halts: two ways to count up, picked at random by value (a long run to rewind)
COUNTER = """
sp {c*init (state <s> ^superstate nil -^count) --> (<s> ^operator <o> + =) (<o> ^name init)}
sp {c*apply*init (state <s> ^operator.name init) --> (<s> ^count 0)}
sp {c*propose*one (state <s> ^count <c>) --> (<s> ^operator <o> + =) (<o> ^name add ^n 1)}
sp {c*propose*two (state <s> ^count <c>) --> (<s> ^operator <o> + =) (<o> ^name add ^n 2)}
sp {c*prefer*one (state <s> ^operator <o> +) (<o> ^n 1) --> (<s> ^operator <o> = 0.6)}
sp {c*prefer*two (state <s> ^operator <o> +) (<o> ^n 2) --> (<s> ^operator <o> = 0.4)}
sp {c*apply*add (state <s> ^operator <o> ^count <c>) (<o> ^name add ^n <n>) --> (<s> ^count <c> - (+ <c> <n>))}
"""


def _arch(name: str, seed: int = 7) -> SoarArchitecture:
    return SoarArchitecture(read_soar(SOAR / f"{name}.soar"), seed, name)


def test_soar_satisfies_the_adapter_protocol() -> None:
    a = _arch("water-jug")
    try:
        assert isinstance(a, Architecture)
        assert a.phases == ("input", "propose", "decision", "apply", "output")
    finally:
        a.close()


@pytest.mark.parametrize("name,jug", [("water-jug", "^contents 4"), ("blocks-world", None)])
def test_the_bundled_agents_solve_their_puzzle(name: str, jug: str | None) -> None:
    sc = find_soar(name)
    assert sc is not None and sc.name == name
    run = SoarRun.start(sc)
    try:
        n, why = run.run(sc.max_decisions)
        assert why == "halted" and run.records[-1]["halted"] and n < sc.max_decisions
        if jug:  # the 5-gallon jug holds 4
            mem = "\n".join(run.arch._cmd(f"print {j}") for j in ("J1", "J2"))
            assert "^contents 4 ^space 1 ^volume 5" in mem, mem
        else:
            ontop = run.arch._cmd("print --depth 2 S1")
            assert run.arch._cmd("production matches blocks*detect*goal").count(">>>>") == 0, ontop
    finally:
        run.close()


def test_each_decision_records_candidates_with_value_chance_and_proposing_rule() -> None:
    run = SoarRun.start(find_soar("water-jug"))  # type: ignore[arg-type]
    try:
        run.run(3)
        third = run.records[2]
        by_label = {c["label"]: c for c in third["candidates"]}
        pour = by_label["pour from-volume 3 to-volume 5"]
        assert pour["value"] == pytest.approx(0.6) and pour["probability"] == pytest.approx(2 / 3, abs=1e-3)
        assert "proposed by water-jug*propose*pour" in pour["sources"]
        assert "scored by water-jug*prefer*pour" in pour["sources"]
        rejected = by_label["empty volume 3"]  # just filled: emptying it would undo that
        assert rejected["probability"] == 0 and "rejected by water-jug*reject*empty-after-fill" in rejected["sources"]
        assert sum(c["chosen"] for c in third["candidates"]) == 1
        assert third["selected"]["label"] == "fill volume 5"
    finally:
        run.close()


def test_why_not_says_the_preferences_and_the_first_failing_condition() -> None:
    a = _arch("water-jug")
    try:
        a.run_decisions(2)
        a.run_phases(a._phases_to("decision"))
        ids = {c.label: c.id for c in a.candidates()}
        assert any("rejected by water-jug*reject*empty-after-fill" in ln for ln in a.why_not(ids["empty volume 3"]))
        assert any("has value 0.3" in ln for ln in a.why_not(ids["fill volume 5"]))
        lines = a.why_not("water-jug*detect*goal")  # why has it not halted: no jug holds 4
        assert ">>>> (<j> ^contents 4)" in lines and "0 complete matches." in lines
        with pytest.raises(InputError, match="no operator of this decision and no rule"):
            a.why_not("fly")
    finally:
        a.close()


def test_why_not_an_operator_no_rule_proposes_now_is_its_proposers_matches() -> None:
    a = _arch("water-jug")
    try:
        a.run_phases(a._phases_to("decision"))  # only initialize is proposed: no jug yet
        lines = a.why_not("pour")
        assert lines[0] == "production matches water-jug*propose*pour:"
        assert ">>>> (state <s> ^name water-jug)" in lines
    finally:
        a.close()


def test_a_rewind_replays_identically_and_a_fork_parts_only_after_it() -> None:
    run = SoarRun.start(find_soar("water-jug"))  # type: ignore[arg-type]
    try:
        run.run(100)
        original = [r["selected"]["id"] for r in run.records]
        run.rewind(5)
        assert run.decision == 5 == run.arch.decision
        run.run(100)
        assert [r["selected"]["id"] for r in run.records] == original  # same seed, same choices
        run.rewind(5)
        run.arch.run_phases(run.arch._phases_to("decision"))
        other = next(c.id for c in run.arch.candidates() if c.probability and c.id != original[5])
        run.fork(5, other)
        rec = run.step()
        assert rec is not None and rec["selected"]["id"] == other and rec["forced"] == other
        forked = [r["selected"]["id"] for r in run.records]
        assert forked[:5] == original[:5] and forked[5] != original[5]
        run.run(30)
        again = [r["selected"]["id"] for r in run.records]
        run.rewind(12)  # a rewind past the fork gives the fork again
        run.run(30 - 12 + 6)
        assert [r["selected"]["id"] for r in run.records] == again
    finally:
        run.close()


def test_force_refuses_an_operator_not_proposed() -> None:
    a = _arch("water-jug")
    try:
        a.run_decisions(1)
        a.run_phases(a._phases_to("decision"))
        with pytest.raises(InputError, match="not an operator proposed now"):
            a.force("O999")
    finally:
        a.close()


def test_rewind_at_1000_decisions_is_under_50ms_of_cpu(tmp_path: Path) -> None:
    f = tmp_path / "counter.soar"
    f.write_text(COUNTER, encoding="utf-8")
    a = SoarArchitecture(read_soar(f), 3)
    try:
        a.run_decisions(1000)
        snap, shown = a.snapshot(), a._cmd("print S1")
        a.run_decisions(10)
        t = time.process_time()
        a.restore(snap)
        cpu = time.process_time() - t
        assert a.decision == 1000 and a._cmd("print S1") == shown  # the same count, the same ids
        assert cpu <= 0.05, f"rewind over 1,000 decisions took {cpu * 1000:.1f} ms of CPU"
    finally:
        a.close()


def test_split_commands_keeps_braces_pipes_and_lines(tmp_path: Path) -> None:
    text = '# c\nsp {a (state <s>) --> (write |}|)}\n\nsp {b\n (state <s>)\n-->\n (<s> ^x 1)}; echo hi\n'
    cmds = split_commands(text, "f.soar")
    assert [(c.word, c.line) for c in cmds] == [("sp", 2), ("sp", 4), ("echo", 7)]
    with pytest.raises(InputError, match="unclosed '{'") as e:
        split_commands("echo ok\nsp {a\n", "f.soar")
    assert e.value.line == 2


@pytest.mark.parametrize("line", ["load library libevil.so", "alias x load library", "output log /tmp/x.log",
                                  "cd /", "save percepts /tmp/p", "smem --set path /tmp/db"])
def test_a_soar_file_from_an_untrusted_folder_may_not_reach_the_host(tmp_path: Path, line: str) -> None:
    f = tmp_path / "evil.soar"
    f.write_text(f"sp {{ok (state <s>) --> (<s> ^a 1)}}\n{line}\n", encoding="utf-8")
    with trust.agreed(trust.Consent(trust_file=tmp_path / "trust.json")):
        with pytest.raises(InputError, match="refused: a Soar file may load native code") as e:
            read_soar(f)
    assert e.value.line == 2 and e.value.file == str(f)


def test_source_is_read_by_us_and_checked_the_same_way(tmp_path: Path) -> None:
    (tmp_path / "inner.soar").write_text("echo fine\nload library x\n", encoding="utf-8")
    (tmp_path / "outer.soar").write_text("source inner.soar\n", encoding="utf-8")
    (tmp_path / "loop.soar").write_text("source loop.soar\n", encoding="utf-8")
    with trust.agreed(trust.Consent(trust_file=tmp_path / "trust.json")):
        with pytest.raises(InputError, match="refused") as e:
            read_soar(tmp_path / "outer.soar")
        assert e.value.file == str(tmp_path / "inner.soar") and e.value.line == 2
        with pytest.raises(InputError, match="loops back"):
            read_soar(tmp_path / "loop.soar")


def test_a_trusted_folder_may_run_them(tmp_path: Path) -> None:
    f = tmp_path / "lib.soar"
    f.write_text("load library nosuchlib\n", encoding="utf-8")
    with trust.agreed(trust.Consent(trust_file=tmp_path / "trust.json", any_once=True)):
        cmds = read_soar(f)  # agreed: handed to Soar, which says what happened
        with pytest.raises(InputError, match="Soar refused `load library nosuchlib`") as e:
            SoarArchitecture(cmds, 1)
    assert e.value.line == 1


def test_a_soar_scenario_names_its_bad_field(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text('name = "x"\narchitecture = "soar"\nproductions = "nope.soar"\n', encoding="utf-8")
    with pytest.raises(InputError, match="file not found") as e:
        load_soar_scenario(f)
    assert (e.value.line, e.value.field) == (3, "productions")


def test_after_the_halt_why_not_reads_the_last_decision_record() -> None:
    run = SoarRun.start(find_soar("blocks-world"))  # type: ignore[arg-type]
    try:
        run.run(100)
        last = run.records[-1]
        rejected = next(c for c in last["candidates"] if c["probability"] == 0)
        assert run.why_not(rejected["id"]) == [f"decision {last['decision']}: {rejected['id']} ({rejected['label']}) "
                                               "was rejected by blocks*reject*moving-a-block-in-place"]
    finally:
        run.close()


def test_two_soar_runs_left_open_do_not_crash_the_process_on_exit() -> None:
    # two kernels in one process crashed it at exit (a segfault): every agent is the one kernel's
    import subprocess
    import sys

    code = ("from akh_tui.engine.soar.run import SoarRun\nfrom akh_tui.engine.soar.scenario import find_soar\n"
            "a = SoarRun.start(find_soar('water-jug')); b = SoarRun.start(find_soar('blocks-world'))\n"
            "a.run(3); b.run(3); print('ran')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ran", proc.stderr


def _trader():
    from akh_tui.engine.soar.world_agent import SoarWorldAgent

    arch = _arch("trader", seed=5)
    return arch, SoarWorldAgent(arch, ("noop", "read_artifact", "write_artifact", "invoke_artifact", "transfer", "bid"))


def _market(r: int, balance: int, read: set[str]) -> dict:
    arts = [{"id": "a1", "owner": "pilot", "price": 3}, {"id": "a2", "owner": "fisher", "price": 9}]
    return {"round": r, "balance": balance,
            "artifact": [dict(a, read="yes" if a["id"] in read else "no") for a in arts]}


def test_a_soar_world_agent_reads_its_input_link_and_acts_on_its_output_link() -> None:
    arch, agent = _trader()
    try:
        read: set[str] = set()
        balance, actions = 10, []
        for r in range(1, 5):
            act = agent.turn(_market(r, balance, read))
            actions.append(act)
            if act is not None and act["name"] == "read_artifact":
                read.add(act["artifact"])
                balance -= 3 if act["artifact"] == "a1" else 9
        names = [a["name"] if a else None for a in actions]
        assert names[-1] == "noop" and "read_artifact" in names  # bought what it could pay for, then waited
        assert read and balance >= 0
        # the same observations replayed after init-soar give the same turns (the recorded input)
        snap = arch.snapshot()
        shown = arch._cmd("print --depth 2 S1").split()
        arch.restore(snap)
        # the same WMEs (Soar wraps its print by the column its last output left: words compared)
        assert arch._cmd("print --depth 2 S1").split() == shown
    finally:
        arch.close()


def test_an_action_the_world_does_not_know_is_refused_with_what_the_agent_asked() -> None:
    from akh_tui.engine.soar.world_agent import SoarWorldAgent

    arch = _arch("trader", seed=5)
    try:
        with pytest.raises(InputError, match="asked for 'read_artifact', no action of this world"):
            SoarWorldAgent(arch, ("noop",)).turn(_market(1, 10, set()))
    finally:
        arch.close()


def test_source_outside_the_folder_needs_trust(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.soar").write_text("echo hi\n", encoding="utf-8")
    inner = tmp_path / "agent"
    inner.mkdir()
    (inner / "main.soar").write_text("source ../elsewhere.soar\n", encoding="utf-8")
    with trust.agreed(trust.Consent(trust_file=tmp_path / "trust.json")):
        with pytest.raises(InputError, match=r"`source ../elsewhere.soar` refused: outside the folder of main.soar"):
            read_soar(inner / "main.soar")
    with trust.agreed(trust.Consent(trust_file=tmp_path / "trust.json", any_once=True)):
        assert [c.word for c in read_soar(inner / "main.soar")] == ["echo"]


def test_a_production_soar_refuses_names_its_line_and_leaves_no_agent(tmp_path: Path) -> None:
    f = tmp_path / "bad.soar"
    f.write_text("echo ok\n\nsp {broken (state <s> --> (<s> ^a 1)}\n", encoding="utf-8")
    from akh_tui.engine.soar.kernel import shared_kernel

    before = shared_kernel().GetNumberAgents()
    with pytest.raises(InputError, match="Soar refused `sp {broken") as e:
        SoarArchitecture(read_soar(f), 1)
    assert e.value.line == 3 and e.value.file == str(f)
    assert shared_kernel().GetNumberAgents() == before


def test_a_soar_trace_replays_with_its_selections_and_says_where_it_differs(tmp_path: Path) -> None:
    import json

    from akh_tui.engine.soar.run import replay_soar_trace

    trace = tmp_path / "wj.jsonl"
    with open(trace, "w", encoding="utf-8") as fh:
        run = SoarRun.start(find_soar("water-jug"), trace=fh)  # type: ignore[arg-type]
        run.run(3)
        run.force(next(c["id"] for c in run.candidates() if c["probability"] and not c["chosen"]))
        run.run(200)
        recorded = [r["selected"]["id"] for r in run.records]
        run.close()
    again = replay_soar_trace(trace)
    assert again is not None and again.selects == {4: recorded[3]}
    again.run(200)
    assert [r["selected"]["id"] for r in again.records] == recorded and again.divergence is None
    again.close()
    lines = trace.read_text().splitlines()
    rec = json.loads(lines[6])
    rec["selected"]["id"] = "O999"
    lines[6] = json.dumps(rec)
    trace.write_text("\n".join(lines) + "\n")
    tampered = replay_soar_trace(trace)
    assert tampered is not None
    tampered.run(200)
    assert tampered.divergence == f"decision 6: the trace selected O999, the replay {recorded[5]}"
    tampered.close()
    assert replay_soar_trace(tmp_path / "nope.jsonl") is None  # the OODA reader says it is missing


def test_an_impasse_shows_as_the_goal_stack_and_its_stuck_choice_as_the_candidates(tmp_path: Path) -> None:
    f = tmp_path / "tie.soar"
    f.write_text("sp {t*propose*a (state <s> ^superstate nil) --> (<s> ^operator <o> +) (<o> ^name a)}\n"
                 "sp {t*propose*b (state <s> ^superstate nil) --> (<s> ^operator <o> +) (<o> ^name b)}\n",
                 encoding="utf-8")
    a = SoarArchitecture(read_soar(f), 1)
    try:
        a.run_decisions(2)  # two acceptable operators, no preference between them: a tie
        assert a.shown().goals[:2] == ["S1", "S2 operator tie"]
        assert sorted(c.label for c in a.candidates()) == ["a", "b"]
    finally:
        a.close()


def test_a_world_with_one_soar_and_two_ooda_agents_runs_byte_identical(cli, tmp_path: Path) -> None:
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    out = cli("world", "run", "market-soar", "--rounds", "10", "--trace", str(one)).stdout
    cli("world", "run", "market-soar", "--rounds", "10", "--trace", str(two), "--fresh")  # a new world, not the first continued
    assert one.read_bytes() == two.read_bytes()
    assert "soar" in out.split("balances:")[1]
    import json

    recs = [json.loads(x) for x in one.read_text().splitlines()]
    soar_steps = [r for r in recs if r.get("type") == "cycle" and r.get("agent") == "soar"]
    assert len(soar_steps) == 10 and {r["decide"]["tool"] for r in soar_steps} - {"noop"}  # it acted, by its rules
    assert not any(r["act"]["output"].startswith("error") for r in soar_steps)


def test_a_soar_decider_asking_for_an_action_not_offered_is_a_failed_step_not_a_crash(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from akh_tui.engine.soar.decider import SoarDecider
    from akh_tui.engine.tools.registry import PluginError

    f = tmp_path / "bad.soar"
    f.write_text((SOAR / "world-trader.soar").read_text().replace("(<ol> ^<a> <cmd>)", "(<ol> ^transfer <cmd>)"),
                 encoding="utf-8")
    dec = SoarDecider(f)
    offer = SimpleNamespace(tool="read_artifact", input="a1", score=0.6, offered=True)
    noop = SimpleNamespace(tool="noop", input="", score=0.05, offered=True)
    transfer = SimpleNamespace(tool="transfer", input="", score=0.0, offered=False)
    try:
        with pytest.raises(PluginError, match=r"asked for transfer\(a1\), which is not offered"):
            dec.choose(SimpleNamespace(cycle=1), SimpleNamespace(description="g"), None, [offer, noop, transfer], offer)
    finally:
        dec.arch.close()


# ---- a Soar world agent that sees the world (issue 30) ----

def _world(rounds: int):
    from akh_tui.engine.world.file import load_world
    from akh_tui.engine.world.world import World

    w = World(load_world("market-soar"))
    w.run(rounds)
    return w


def test_the_input_link_carries_what_the_agent_sees_of_the_world() -> None:
    w = _world(3)
    arch = w.agents["soar"].decider.inner.arch
    try:
        words = arch._cmd("print --depth 4 I2").split()  # the input link, as the productions see it
        joined = " ".join(words)
        bal = w.ledger.balance("soar")
        for want in ("^round 3", "^balance", "^other", "^id bold", "^id cautious", "^artifact", "^id bold-ledger",
                     "^owner bold", "^price 4", "^can-read", "^rounds-to-mint", "^bid-pending", "^headroom",
                     "^actions", "^last", "^success", "^offer"):
            assert want in joined, want
        assert "^clock" in joined
        # the balance it saw is the one the world held at its turn (its own action may have changed it since)
        seen = [int(words[i + 1].rstrip(")")) for i, x in enumerate(words[:-1]) if x == "^balance"]
        assert seen and all(n >= 0 for n in seen) and bal >= 0
    finally:
        arch.close()


def _trader_world():
    from akh_tui.engine.soar.world_agent import SoarWorldAgent

    arch = _arch("world-trader", seed=3)
    return arch, SoarWorldAgent(arch, ("noop", "read_artifact", "write_artifact", "invoke_artifact", "transfer", "bid",
                                       "kg_query"))


def _seen(cycle: int, balance: int, others: list[int], to_mint: int = 3, last: dict | None = None,
          headroom: int = 8) -> dict:
    obs: dict = {"cycle": cycle, "goal": "g", "round": cycle, "clock": float(cycle), "balance": balance,
                 "offer": [{"action": "read_artifact", "input": "bold-ledger@1", "score": 0.6},
                           {"action": "bid", "input": "1 on soar-g2@1", "score": 0.2},
                           {"action": "noop", "input": "none", "score": 0.05}],
                 "other": [{"id": f"o{i}", "balance": b} for i, b in enumerate(others)],
                 "artifact": [{"id": "bold-ledger", "owner": "bold", "price": 4, "version": 1, "mine": False,
                               "read": False, "can-read": balance >= 4}],
                 "bid-pending": False, "rounds-to-mint": to_mint, "headroom": {"actions": headroom}}
    if last is not None:
        obs["last"] = last
    return obs


def _ops(agent) -> dict[str, dict]:
    from akh_tui.engine.explain.soar import action_of

    return {action_of(c): c for c in agent.decisions[-1]["candidates"]}


def test_the_world_trader_chooses_by_what_it_sees() -> None:
    arch, agent = _trader_world()
    try:
        agent.turn(_seen(1, 50, [60, 40]))  # rich: a cheap read is worth 0.3 more; it is not the poorest: bid stands
        ops = _ops(agent)
        assert ops["read_artifact"]["value"] == pytest.approx(0.9) and "scored by world*prefer*cheap-read" in ops["read_artifact"]["sources"]
        assert not any(s.startswith("rejected") for s in ops["bid"]["sources"])
        agent.turn(_seen(2, 8, [60, 40], to_mint=1))  # under its reserve, and the poorest: no read, no bid
        ops = _ops(agent)
        assert "rejected by world*reject*read-below-reserve" in ops["read_artifact"]["sources"]
        assert "rejected by world*reject*bid-when-poorest" in ops["bid"]["sources"]
        assert agent.decisions[-1]["selected"]["label"].split()[2] == "noop"
        act = agent.turn(_seen(3, 50, [60, 40], to_mint=1, last={"action": "read_artifact", "success": False,
                                                                    "progress": "failed"}))
        ops = _ops(agent)  # the read failed last turn: not again at once; the mint is next: the bid is worth more
        assert "rejected by world*reject*what-failed-last" in ops["read_artifact"]["sources"]
        assert "scored by world*prefer*bid-before-the-mint" in ops["bid"]["sources"] and act == {"name": "bid", "input": "1 on soar-g2@1"}
        act = agent.turn(_seen(4, 50, [60, 40], headroom=1))  # one use of its window left: it waits
        assert act is not None and act["name"] == "noop"
    finally:
        arch.close()


def test_a_soar_world_turn_is_recorded_and_explained_in_soar_terms(cli, tmp_path: Path) -> None:
    import json

    trace = tmp_path / "w.jsonl"
    cli("world", "run", "market-soar", "--rounds", "6", "--trace", str(trace))
    recs = [json.loads(x) for x in trace.read_text().splitlines()]
    soar = [r for r in recs if r.get("type") == "cycle" and r.get("agent") == "soar"]
    ooda = [r for r in recs if r.get("type") == "cycle" and r.get("agent") != "soar"]
    assert soar and all("soar" in r["decide"] for r in soar) and not any("soar" in r["decide"] for r in ooda)
    rec = soar[3]
    d = rec["decide"]["soar"]["decisions"][-1]
    chosen = next(c for c in d["candidates"] if c["chosen"])
    assert chosen["label"].split()[2] == rec["decide"]["tool"]  # the operator it selected is the action the world ran
    out = cli("agent", "why", "--agent", "soar", "--cycle", str(rec["cycle"])).stdout
    assert f"decision {d['decision']} selected {chosen['id']} ({rec['decide']['tool']})" in out
    assert "proposed by world*propose*act" in out and "passed over" in out
    other = next(c for c in d["candidates"] if not c["chosen"])
    tool = other["label"].split()[2]
    out = cli("agent", "why", "--agent", "soar", "--cycle", str(rec["cycle"]), "--tool", tool).stdout
    assert f"why not {tool}" in out and other["id"] in out
    res = cli("agent", "why", "--agent", "soar", "--cycle", str(rec["cycle"]), "--tool", "transfer", check_rc=2)
    assert "no operator for 'transfer'" in " ".join(res.stderr.split())
    # an OODA agent of the same world is still explained in its own terms
    out = cli("agent", "why", "--agent", "bold", "--cycle", "1").stdout
    assert "Soar" not in out


def test_a_world_with_a_soar_agent_continues_and_forks_as_if_never_stopped(cli, tmp_path: Path) -> None:
    """The Soar agent's inputs (observations, its commands marked complete) are in the world's
    saved state: a continued world is the same bytes as one run whole, and a fork mid-run
    replays the recorded steps after the saved state identically."""
    whole, cont = tmp_path / "whole.jsonl", tmp_path / "cont.jsonl"
    cli("world", "run", "market-soar", "--rounds", "25", "--trace", str(whole), data_dir=tmp_path / "a")
    cli("world", "run", "market-soar", "--rounds", "13", data_dir=tmp_path / "b")
    cli("world", "run", "market-soar", "--rounds", "12", "--trace", str(cont), data_dir=tmp_path / "b")
    assert cont.read_bytes() == whole.read_bytes()
    out = cli("world", "fork", "--at", "24:soar", "--name", "b", "--disable", "noop", "--agent", "bold",
              data_dir=tmp_path / "a").stdout
    assert "branch b" in out
