"""Who moved this decision (issue 26, world/moved.py): the movers of a step are exactly the
other agents' steps since its last one whose recorded effects are in its read-set, and the
proof (the mover's action replaced by `noop`, replayed) says the decision changed exactly when
the replayed decision differs from the recorded one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import Locations
from akh_tui.engine.store.worldstore import StepRow
from akh_tui.engine.world.edits import NoopTurn
from akh_tui.engine.world.gate import Answerer
from akh_tui.engine.world.moved import effects, prove_mover, read_set, who_moved
from akh_tui.engine.world.worldrun import WorldRun


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("moved")
    r = WorldRun.start(Locations(tmp / "data", tmp / "config.toml"), "market")
    r.run(8)
    yield r
    r.close()


def _recorded_effects(row: StepRow) -> set[str]:
    """The step's ledger accounts and artifacts, read from its records here (not moved.py's)."""
    out: set[str] = set()
    for line in row.lines:
        rec = json.loads(line)
        if rec.get("agent") != row.agent:
            continue
        if rec["type"] == "ledger":
            out |= {f"balance {rec['from']}", f"balance {rec['to']}"}
        elif rec["type"] == "artifact":
            out.add(f"artifact {rec['id']}")
    return out


def _decision(row: StepRow) -> dict | None:
    for line in row.lines:
        if line.startswith('{"type":"cycle"'):
            d = json.loads(line)["decide"]
            return {"tool": d["tool"], "input": d.get("input", "")}
    return None


def test_movers_are_exactly_the_other_steps_since_whose_effects_the_step_read(market):
    rows = {row.step: row for row in market.steps()}
    movers = non_movers = 0
    for row in rows.values():
        if row.agent is None or _decision(row) is None:
            continue
        got = who_moved(market, row.name)
        read = {f"balance {b}" for b in got["read_set"]["balances"]} | {f"artifact {a['id']}" for a in got["read_set"]["artifacts"]}
        assert f"balance {row.agent}" in read  # every turn checks what its agent can afford
        prev = max((s for s, x in rows.items() if s < row.step and x.agent == row.agent), default=0)
        assert got["since_step"] == prev
        between = [x for s, x in rows.items() if prev < s < row.step and x.agent not in (None, row.agent)]
        assert [a["step"] for a in got["actions"]] == [x.step for x in between]
        for a, x in zip(got["actions"], between):
            eff = _recorded_effects(x)
            assert set(a["effects"]) == eff
            assert a["mover"] == bool(eff & read)
            assert set(a["seen"]) == eff & read
            movers += a["mover"]
            non_movers += not a["mover"] and bool(eff)
    # the market has both: actions another read, and actions with effects nobody read
    assert movers >= 3 and non_movers >= 1


def test_the_read_set_is_the_recorded_steps_and_the_store_is_untouched(market):
    before = market.ws.last_step(market.branch)
    row = next(x for x in market.steps() if x.name == "1:bold")
    seen = read_set(market, row.step)
    assert seen.artifacts == {"bold-ledger": 1, "cautious-ledger": 1}  # the two it could buy at the start
    assert market.ws.last_step(market.branch) == before and len(market.branches()) == 1


def test_the_proof_says_changed_exactly_when_the_replayed_decision_differs(market):
    changed = unchanged = 0
    for row in market.steps():
        if row.agent is None or _decision(row) is None:
            continue
        got = who_moved(market, row.name, prove=True)
        for a in got["actions"]:
            if not a["mover"]:
                assert "proof" not in a
                continue
            p = a["proof"]
            assert p["replaced_with"] == "noop" and p["recorded"] == _decision(row)
            assert p["changed"] == (p["fork"] != p["recorded"])
            assert ("it moved the decision" in p["words"]) == (p["changed"] and p["took_step"])
            changed += p["changed"]
            unchanged += not p["changed"]
    assert changed >= 1 and unchanged >= 1


def test_an_action_whose_effects_the_step_did_not_read_does_not_change_it(market):
    """The read-set is complete: replacing a non-mover's action by noop leaves the decision."""
    checked = 0
    for row in market.steps():
        if row.agent is None or _decision(row) is None:
            continue
        for a in who_moved(market, row.name)["actions"]:
            if not a["mover"] and a["effects"]:
                p = prove_mover(market, a["step"], row)
                assert p["replaced_with"] == "noop" and p["changed"] is False, p
                checked += 1
    assert checked >= 1


def test_the_noop_edit_replaces_one_turn_only(market):
    row = next(x for x in market.steps() if x.name == "2:bold")
    w = market.world_at(row.step - 1)
    decider = w.agents["bold"].decider
    assert NoopTurn("bold").apply(w) == {"edit": "noop", "agent": "bold"}
    summaries: list[dict] = []
    while not summaries or summaries[-1]["agent"] != "bold":
        w.step(summaries.append)
    assert summaries[-1]["action"] == "noop"
    assert w.agents["bold"].decider is decider  # its own decider is back for its next turn
    with pytest.raises(InputError, match="no agent 'nobody'"):
        NoopTurn("nobody").apply(w)


def test_the_mints_entries_are_nobodys_effects():
    row = StepRow(5, 5, "bold", [
        json.dumps({"type": "ledger", "agent": "bold", "from": "bold", "to": "escrow", "amount": 1, "why": "bid"}, separators=(",", ":")),
        json.dumps({"type": "ledger", "agent": None, "from": "mint", "to": "cautious", "amount": 3, "why": "minted"}, separators=(",", ":")),
    ])
    assert set(effects(row)) == {("balance", "bold"), ("balance", "escrow")}


def test_a_step_that_decided_nothing_or_is_not_there_is_an_input_error(market):
    with pytest.raises(InputError, match="ROUND:AGENT"):
        who_moved(market, "bold")
    with pytest.raises(InputError, match="no step"):
        who_moved(market, "99:bold")


def test_a_write_that_took_a_looked_up_word_out_of_the_index_is_in_the_read_set():
    """The step did not look the artifact up because the write made it stop sharing the word."""
    from types import SimpleNamespace

    from akh_tui.engine.world.artifacts import Artifacts
    from akh_tui.engine.world.moved import _hid

    arts = Artifacts()
    arts.write("x", "bold", (("whale", "eats", "krill"),), None, 1)
    arts.write("x", "bold", (("cow", "eats", "grass"),), None, 1)
    run = SimpleNamespace(world=SimpleNamespace(artifacts=arts))
    assert _hid(run, ("artifact", "x"), ["wrote x@2"], {"whale"})  # type: ignore[arg-type]
    assert not _hid(run, ("artifact", "x"), ["wrote x@2"], {"cow"})  # type: ignore[arg-type]  # added, not taken out
    assert not _hid(run, ("artifact", "x"), ["wrote x@1"], {"whale"})  # type: ignore[arg-type]  # a first version hides nothing
    assert not _hid(run, ("balance", "x"), ["bold -> cautious 1"], {"whale"})  # type: ignore[arg-type]


def test_the_previous_step_is_found_across_windows_of_the_branch():
    from types import SimpleNamespace

    from akh_tui.engine.world import moved

    rows = [StepRow(i, i, "bold" if i in (3, 70, 200) else "cautious", []) for i in range(1, 201)]
    run = SimpleNamespace(steps=lambda start, end: iter(rows[start - 1:end]))
    assert moved._previous(run, rows[199]) == 70  # type: ignore[arg-type]  # 130 steps back: two windows
    assert moved._previous(run, rows[69]) == 3  # type: ignore[arg-type]
    assert moved._previous(run, rows[2]) == 0  # type: ignore[arg-type]


# ---- a gated world (every agent gated): the proof gives a recorded answer only to its proposal ----

def _gated_market(tmp: Path, answer: Answerer) -> WorldRun:
    r = WorldRun.start(Locations(tmp / "data", tmp / "config.toml"), "market")
    r.gate(list(r.world.ids))
    r.run(8, answer=answer)
    return r


def _user(row: StepRow) -> dict:
    return next(json.loads(x) for x in row.lines if x.startswith('{"type":"cycle"'))["decide"]["user"]


def _proofs(r: WorldRun) -> list[tuple[StepRow, dict]]:
    """Every mover's proof of every step that decided (each must run: none raises)."""
    out = []
    for row in r.steps():
        if row.agent is None or _decision(row) is None:
            continue
        out += [(row, a["proof"]) for a in who_moved(r, row.name, prove=True)["actions"] if a["mover"]]
    return out


def test_every_proof_of_a_world_a_person_approved_runs_and_an_answer_given_to_another_proposal_says_so(tmp_path):
    from akh_tui.engine import Answer

    r = _gated_market(tmp_path, lambda p: Answer("approve", by="user"))
    try:
        proofs = _proofs(r)  # before: the mover's recorded approve was given to its noop turn and refused
        assert len(proofs) >= 3
        moved = [(row, p) for row, p in proofs if p["changed"]]
        kept = [(row, p) for row, p in proofs if not p["changed"]]
        assert moved and kept
        for row, p in kept:  # the same proposal: the person's approve is given, the decision the recorded one
            assert p["fork"] == p["recorded"] and not any(u["step"] == row.name for u in p["unreplayed"])
        # a mover that changed the target's proposal: the person approved the recorded one, never this one
        row, p = next((row, p) for row, p in moved if any(u["step"] == row.name for u in p["unreplayed"]))
        u = next(u for u in p["unreplayed"] if u["step"] == row.name)
        assert u == {"step": row.name, "recorded": "approve", "by": "user", "recorded_tool": _user(row)["tool"],
                     "recorded_proposal": _decision(row)["tool"], "proposal": p["fork"]["tool"],
                     "why": "another proposal"}
        assert p["fork"]["tool"] != p["recorded"]["tool"]
        assert (f"{row.name}'s gate answer (user approved {p['recorded']['tool']}) was not given: the proposal there "
                f"is {p['fork']['tool']}, which nobody was asked about, so the proof approves it as proposed") in p["words"]
    finally:
        r.close()


def test_a_seats_recorded_choose_is_given_where_it_can_be_and_said_where_its_tool_is_not_offered(tmp_path):
    from akh_tui.engine import Answer, Proposal

    def seat(p: Proposal) -> Answer:  # each seat chooses the runner-up over its agent's proposal
        other = [c["tool"] for c in p.candidates if c["tool"] != p.tool]
        return Answer("choose", other[0], by=f"seat:{p.agent}") if other else Answer("approve", by="user")

    r = _gated_market(tmp_path, seat)
    try:
        proofs = _proofs(r)
        chosen = [(row, p) for row, p in proofs if _user(row)["decision"] == "choose"]
        # the seat's choose given again: the decision is the seat's tool, not the agent's proposal
        given = [(row, p) for row, p in chosen if not p["changed"]]
        assert given
        for row, p in given:
            assert p["fork"]["tool"] == _user(row)["tool"] != _user(row)["proposed"]
        # the mover's action is what made the seat's tool an offer: without it there is nothing to choose
        row, p = next((row, p) for row, p in chosen if any(u["step"] == row.name and u["why"] == "not offered"
                                                          for u in p["unreplayed"]))
        u = _user(row)
        assert p["changed"] and p["fork"]["tool"] == u["proposed"] and p["recorded"]["tool"] == u["tool"]
        assert (f"{row.name}'s gate answer ({u['by']} chose {u['tool']} over {u['proposed']}) was not given: "
                f"{u['tool']} is not offered there, so the proof approves {u['proposed']} as proposed") in p["words"]
    finally:
        r.close()
