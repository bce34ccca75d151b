"""The world gate (world/gate.py): a gated agent's turn stops after decide for an answer
(approve, reject, choose), recorded in its cycle record; a replay takes the recorded answer and
never asks; a world with no gate keeps its bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from akh_tui.engine import Answer, GateClosed, Proposal
from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import Locations, bundled_data_dir
from akh_tui.engine.store import writelock
from akh_tui.engine.world import World, load_world
from akh_tui.engine.world.worldrun import WorldRun

# sha256 of each bundled world's first 6 rounds' trace (lines joined by \n), taken before the
# gate existed: a world in which no gate fires must keep these bytes
GOLDEN = {"harbour": "423c23117d775ac8571b9ca9eb60538b32b9ecb4c0e94b02d4d0df1d8cba0458",
          "market": "d1bc4e75cbc9bfa536f1c69e1ecac511f642fd6f59e7d22dbb1dc488f64bd2ea"}


def locs(tmp: Path) -> Locations:
    return Locations(tmp / "data", tmp / "config.toml")


def cycles(lines: list[str]) -> list[dict]:
    return [json.loads(x) for x in lines if x.startswith('{"type":"cycle"')]


def never(p: Proposal) -> Answer:
    raise AssertionError(f"asked about {p.agent} in round {p.round}: a replay must not ask")


class Script:
    """Answers by (round, agent), approve where it has none; remembers what it was asked."""

    def __init__(self, plan: dict[tuple[int, str], Answer] | None = None) -> None:
        self.plan = plan or {}
        self.asked: list[Proposal] = []

    def __call__(self, p: Proposal) -> Answer:
        self.asked.append(p)
        return self.plan.get((p.round, p.agent), Answer("approve"))


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_a_world_with_no_gate_keeps_its_bytes_and_never_asks(name):
    lines: list[str] = []
    w = World(load_world(name), lines=lines.append)
    w.run(6, answer=never)  # an answerer, but nobody gated
    assert hashlib.sha256("\n".join(lines).encode()).hexdigest() == GOLDEN[name]
    assert not any('"user":' in x for x in lines)


def test_a_gated_agent_is_asked_with_its_proposal_and_an_ungated_one_never():
    lines: list[str] = []
    w = World(load_world("market"), lines=lines.append)
    w.gated = {"bold"}
    ask = Script()
    w.run(3, answer=ask)
    assert ask.asked and {p.agent for p in ask.asked} == {"bold"}
    p = ask.asked[0]
    rec = next(r for r in cycles(lines) if r["agent"] == "bold")
    offered = [c for c in rec["decide"]["candidates"] if c["offered"]]
    assert p.round == 1 and p.tool == rec["decide"]["tool"] and p.input == rec["decide"]["input"]
    assert [c["tool"] for c in p.candidates] == [c["tool"] for c in sorted(offered, key=lambda c: -c["score"])]
    assert [c["utility"] for c in p.candidates] == sorted((c["utility"] for c in p.candidates), reverse=True)
    assert p.why.startswith("table: " + p.tool) and "\n" not in p.why
    # recorded on the gated agent's records only, as the interface says
    for r in cycles(lines):
        if r["agent"] == "bold":
            assert r["decide"]["user"] == {"decision": "approve", "tool": r["decide"]["tool"], "by": "user", "why": ""}
            assert list(r["decide"])[-1] == "user"
        else:
            assert "user" not in r["decide"]


def test_approve_keeps_the_step_the_same_as_without_a_gate_but_for_the_answer():
    plain: list[str] = []
    World(load_world("market"), lines=plain.append).run(2)
    gated: list[str] = []
    w = World(load_world("market"), lines=gated.append)
    w.gated = {"bold", "cautious"}
    w.run(2, answer=lambda p: Answer("approve", by="auto"))
    stripped = []
    for line in gated:
        rec = json.loads(line)
        if rec["type"] == "cycle":
            assert rec["decide"].pop("user")["by"] == "auto"
        stripped.append(rec)
    assert stripped == [json.loads(x) for x in plain]


def test_reject_is_a_user_veto_act_does_not_run_and_the_step_fails():
    lines: list[str] = []
    w = World(load_world("market"), lines=lines.append)
    w.gated = {"bold"}
    w.step_round(answer=lambda p: Answer("reject", by="user", why="not now"))
    rec = next(r for r in cycles(lines) if r["agent"] == "bold")
    assert rec["decide"]["user"] == {"decision": "reject", "tool": rec["decide"]["tool"], "by": "user", "why": "not now"}
    act = rec["act"]
    assert act["success"] is False and act["vetoed"] is True and act["veto"] == "user"
    assert act["output"] == "VETOED by the user: not now" and act["progress"] == "failed"
    assert w.loops["bold"].errors == 1  # SPEC §13 counts it as a failed step
    assert w.loops["cautious"].errors == 0


def test_choose_runs_another_offered_tool_with_its_offered_input():
    lines: list[str] = []
    w = World(load_world("market"), lines=lines.append)
    w.gated = {"bold"}
    seen: list[Proposal] = []

    def pick_last(p: Proposal) -> Answer:
        seen.append(p)
        return Answer("choose", tool=p.candidates[-1]["tool"], why="try the least")

    summaries: list[dict] = []
    w.step_round(summaries.append, answer=pick_last)
    p = seen[0]
    want = p.candidates[-1]
    assert want["tool"] != p.tool
    rec = next(r for r in cycles(lines) if r["agent"] == "bold")
    assert rec["decide"]["tool"] == want["tool"] and rec["decide"]["input"] == want["input"]
    assert rec["decide"]["user"] == {"decision": "choose", "tool": want["tool"], "by": "user", "why": "try the least",
                                     "proposed": p.tool}
    assert f"score={want['utility']:.2f}" in rec["decide"]["breakdown"]
    assert next(s for s in summaries if s["agent"] == "bold")["action"] == want["tool"]


def test_a_choice_not_offered_is_refused_naming_it_and_commits_nothing(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.gate(["bold"])
    r.run(1, answer=Script())
    before, lines_before = r.last_step, list(r.trace_lines())
    with pytest.raises(InputError, match="cannot choose 'shell_exec' for bold.*not offered"):
        r.run(1, answer=lambda p: Answer("choose", tool="shell_exec"))
    assert r.last_step <= before + 1  # cautious's step before bold's may be in; bold's is not
    assert all(s.agent != "bold" for s in r.steps(before + 1))
    kept = r.last_step
    assert r.world.summary() == r.world_at(kept).summary()  # the live world is the store's
    # and the world goes on as if the refused answer had never been given
    r.run(2, answer=Script())
    lines = list(r.trace_lines())
    r.close()
    ref: list[str] = []
    w = World(load_world("market"), lines=ref.append)
    w.gated = {"bold"}
    w.run(3, answer=Script())
    assert lines[:len(lines_before)] == lines_before and lines == ref


@pytest.mark.parametrize("bad, words", [
    (Answer("approve", tool="noop"), "approve is about the proposed tool"),
    (Answer("maybe"), "unknown decision 'maybe'"),  # type: ignore[arg-type]
    (Answer("approve", by=" "), "says who gave it"),
])
def test_a_bad_answer_is_refused_by_name(tmp_path, bad, words):
    w = World(load_world("market"))
    w.gated = {"bold", "cautious"}
    with pytest.raises(InputError, match=words):
        w.step(answer=lambda p: bad)


def test_a_gated_turn_with_no_answerer_is_an_error_that_commits_nothing(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.gate(["bold", "cautious"])
    with pytest.raises(InputError, match="stops at the gate"):
        r.step()
    assert r.last_step == 0 and list(r.steps()) == []
    with pytest.raises(InputError, match="no agent 'nobody'"):
        r.gate(["nobody"])
    assert r.gated == ["bold", "cautious"]  # unchanged by the refused gate()
    assert r.gate(None) == [] and r.step() is not None  # nobody gated: no answerer needed
    r.close()


def test_an_answerer_that_closes_drops_the_turn_and_commits_nothing(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.gate(["bold", "cautious"])
    r.run(1, answer=Script())
    kept = r.last_step

    def closed(p: Proposal) -> Answer:
        raise GateClosed("the workbench quit")

    with pytest.raises(GateClosed):
        r.step(answer=closed)
    assert r.last_step == kept and r.world.summary() == r.world_at(kept).summary()
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    assert r.last_step == kept
    r.close()


def _gated_run(tmp: Path) -> tuple[WorldRun, Script]:
    """Market, both traders gated, 4 rounds of mixed answers."""
    plan = {(1, "cautious"): Answer("reject", why="no"), (3, "bold"): Answer("reject", by="auto"),
            (4, "bold"): Answer("approve", by="timeout")}
    ask = Script(plan)

    def with_choose(p: Proposal) -> Answer:
        if (p.round, p.agent) == (1, "bold"):
            ask.asked.append(p)
            return Answer("choose", tool=p.candidates[-1]["tool"], by="seat-1")
        return ask(p)

    r = WorldRun.start(locs(tmp), "market")
    r.gate(["bold", "cautious"])
    r.run(4, answer=with_choose)
    return r, ask


def test_rewind_fork_and_resume_replay_the_recorded_answers_without_asking(tmp_path):
    r, ask = _gated_run(tmp_path)
    users = [c["decide"]["user"] for c in cycles(list(r.trace_lines()))]
    assert len(users) == len(ask.asked) >= 5  # a reject's backoff skips a turn or two
    assert {u["decision"] for u in users} == {"approve", "reject", "choose"}
    states = [r.world_at(n).summary() for n in range(r.last_step + 1)]  # every step replayed, nobody asked
    lines = list(r.trace_lines())
    last = r.last_step
    # a kill: the store as the steps left it, no state saved at the end (resume replays them)
    r.store.close()
    writelock.release(r._lock_file)
    r = WorldRun.resume(locs(tmp_path))
    assert r.last_step == last and r.world.summary() == states[-1]
    assert r.gated == []  # gating is the session's choice; the file names none
    r.gate(["bold", "cautious"])
    r.run(1, answer=Script())  # and goes on, asking for the new steps only
    at = 5
    r.fork(at, [])
    assert list(r.trace_lines()) == lines[:1 + sum(len(s.lines) for s in r.steps(1, at))]
    assert r.world.summary() == states[at]
    r.close()


def test_the_world_file_may_gate_an_agent_and_a_bad_value_names_the_field(tmp_path):
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    text = (f'[world]\nname = "m"\nrounds = 2\n[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\napprove = true\n'
            f'[[agents]]\nid = "b"\nscenario = "{market}/trader.toml"\n')
    f = tmp_path / "w.toml"
    f.write_text(text, encoding="utf-8")
    spec = load_world(str(f))
    assert [a.approve for a in spec.agents] == [True, False]
    assert spec.config()["agents"][0]["approve"] is True and "approve" not in spec.config()["agents"][1]
    r = WorldRun.start(locs(tmp_path), str(f))
    assert r.gated == ["a"]
    ask = Script()
    r.run(1, answer=ask)
    assert [p.agent for p in ask.asked] == ["a"]
    r.close()
    f.write_text(text.replace("approve = true", 'approve = "yes"'), encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_world(str(f))
    assert e.value.field == "agents[0].approve" and e.value.line == 7 and "true or false" in e.value.message


def test_a_gated_worlds_records_are_valid_against_the_published_schema_and_a_bad_answer_is_not(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from akh_tui.engine.schemas import load_schema

    v = jsonschema.Draft202012Validator(load_schema())
    r, _ = _gated_run(tmp_path)
    recs = [json.loads(x) for x in r.trace_lines()]
    r.close()
    assert [e.message for rec in recs for e in v.iter_errors(rec)] == []
    bad = next(rec for rec in recs if rec["type"] == "cycle" and "user" in rec["decide"])
    bad["decide"]["user"]["decision"] = "maybe"
    assert list(v.iter_errors(bad))


def test_a_sweep_cell_asks_nobody_even_where_the_world_file_gates_an_agent(tmp_path):
    from akh_tui.engine.sweep.world import run_cell

    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    f = tmp_path / "w.toml"
    f.write_text(f'[world]\nname = "m"\nrounds = 2\n[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\n'
                 f'approve = true\n', encoding="utf-8")
    got: list[str] = []
    row = run_cell(str(f), None, 0, 2, (), {}, got.append)
    assert row and cycles(got) and not any('"user":' in x for x in got)


def test_why_moved_and_its_proof_replay_a_gated_branch_with_its_recorded_answers(tmp_path):
    from akh_tui.engine.world.moved import who_moved

    r, ask = _gated_run(tmp_path)
    asked = len(ask.asked)
    try:
        last_bold = max(s.step for s in r.steps() if s.agent == "bold" and any('"type":"cycle"' in x for x in s.lines))
        got = who_moved(r, last_bold, prove=True)  # replays gated steps: a wrong answer would not replay
        assert got["agent"] == "bold" and all("proof" in a for a in got["actions"] if a["mover"])
        assert len(ask.asked) == asked  # nobody was asked
    finally:
        r.close()
