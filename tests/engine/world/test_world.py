"""Worlds (SPEC §13): one test per rule, on tiny worlds written here and on the bundled ones."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.world import InvariantViolation, World, load_world
from akh_tui.engine.world.actions import ReadArtifact
from akh_tui.engine.world.mint import Bid, settle, shares, winner_of

TRIPLES = "aurora\tmoors-at\tberth-three\naurora\tis-a\tship\nkestrel\tis-a\tship\n"


def scenario(tmp: Path, name: str = "s", criteria: str = "(aurora moors-at berth-three)", extra: str = "") -> str:
    (tmp / f"{name}.tsv").write_text(TRIPLES, encoding="utf-8")
    (tmp / f"{name}.toml").write_text(
        f'name = "{name}"\nkg = ["{name}.tsv"]\n[[goals]]\ndescription = "Find where aurora moors"\n'
        f'criteria = "{criteria}"\n{extra}', encoding="utf-8")
    return f"{name}.toml"


def world_file(tmp: Path, world: str, agents: list[str], scenario_file: str, tail: str = "") -> Path:
    text = "[world]\nname = \"t\"\n" + world + "\n"
    for a in agents:
        text += f'[[agents]]\nid = "{a}"\nscenario = "{scenario_file}"\n'
    p = tmp / "w.toml"
    p.write_text(text + tail, encoding="utf-8")
    return p


def run_world(path: Path, rounds: int | None = None, **kw) -> tuple[World, list[dict]]:
    recs: list[dict] = []
    w = World(load_world(str(path)), sink=recs.append, **kw)
    w.run(rounds)
    return w, recs


class Raising:
    kind = "raising"

    def choose(self, agent, focus, ctx, candidates, utility):
        raise RuntimeError("the model fell over")

    def learn(self, agent, focus, tool, act) -> None:
        return None

    def model_memory(self, limit: int):
        return None


# ---- the ledger ------------------------------------------------------------------------------

def test_reading_an_artifact_pays_its_owner_and_its_triples_enter_with_provenance(tmp_path):
    sc = scenario(tmp_path, criteria="(kestrel moors-at berth-one)")
    (tmp_path / "notes.tsv").write_text("kestrel\tmoors-at\tberth-one\ngoal:9\tstatus:x\tdone\n", encoding="utf-8")
    p = world_file(tmp_path, "rounds = 6\nmint_every = 0\nstarting_scrip = 10", ["alice", "bob"], sc,
                   '[[artifacts]]\nid = "notes"\nowner = "bob"\ntriples = "notes.tsv"\nprice = 3\n')
    w, recs = run_world(p)
    reads = [r for r in recs if r["type"] == "cycle" and r["agent"] == "alice" and r["decide"]["tool"] == "read_artifact"]
    assert reads and "1 metadata triple(s) dropped" in reads[0]["act"]["output"]
    assert reads[0]["act"]["progress"] == "completed"
    pay = [r for r in recs if r["type"] == "ledger" and r["agent"] == "alice"]
    assert pay[0] | {"clock": 0} == {"type": "ledger", "round": pay[0]["round"], "clock": 0, "agent": "alice",
                                     "from": "alice", "to": "bob", "amount": 3, "why": "read notes@1"}
    kg = w.agents["alice"].kg
    t = kg.get(kg.lookup("kestrel"), kg.lookup("moors-at"), kg.lookup("berth-one"))
    assert t is not None and t.provenance == "artifact:notes@1"
    assert kg.lookup("goal:9") is None  # a metadata triple never enters the reader's graph
    # bob read his own artifact for free: no entry from bob
    assert w.ledger.balance("alice") == 7 and w.ledger.balance("bob") == 13


def test_an_action_that_breaks_the_ledger_invariant_stops_the_world_and_commits_nothing(tmp_path, monkeypatch):
    sc = scenario(tmp_path, criteria="(kestrel moors-at berth-one)")
    (tmp_path / "notes.tsv").write_text("kestrel\tmoors-at\tberth-one\n", encoding="utf-8")
    p = world_file(tmp_path, "rounds = 6\nmint_every = 0\nstarting_scrip = 10", ["alice"], sc,
                   '[[artifacts]]\nid = "notes"\nowner = "world"\ntriples = "notes.tsv"\nprice = 3\n')
    real = ReadArtifact.run

    def faulty(self, tc, ctx, arg):  # pays the owner, and also credits the reader out of nowhere
        out = real(self, tc, ctx, arg)
        self.world.ledger._change(self.agent_id, 5)
        return out

    monkeypatch.setattr(ReadArtifact, "run", faulty)
    recs: list[dict] = []
    w = World(load_world(str(p)), sink=recs.append)
    with pytest.raises(InvariantViolation) as exc:
        w.run()
    msg = str(exc.value)
    assert "alice" in msg and "read_artifact" in msg and "= 15" in msg and "minted 0 = 10" in msg
    assert not any(r["type"] == "cycle" and r["decide"]["tool"] == "read_artifact" for r in recs)
    assert not any(r["type"] == "ledger" for r in recs)
    assert w.ledger.snapshot() == {"alice": 10, "world": 0, "escrow": 0}  # the step rolled back


def test_cli_exit_1_names_the_agent_action_and_numbers_when_the_invariant_breaks(tmp_path, monkeypatch, cli):
    sc = scenario(tmp_path, criteria="(kestrel moors-at berth-one)")
    (tmp_path / "notes.tsv").write_text("kestrel\tmoors-at\tberth-one\n", encoding="utf-8")
    p = world_file(tmp_path, "rounds = 6\nmint_every = 0\nstarting_scrip = 10", ["alice"], sc,
                   '[[artifacts]]\nid = "notes"\nowner = "world"\ntriples = "notes.tsv"\nprice = 3\n')
    real = ReadArtifact.run

    def faulty(self, tc, ctx, arg):
        out = real(self, tc, ctx, arg)
        self.world.ledger._change("world", -4)
        return out

    monkeypatch.setattr(ReadArtifact, "run", faulty)
    proc = cli("world", "run", str(p), check_rc=1)
    assert "alice (read_artifact)" in proc.stderr and "nothing of that step was committed" in proc.stderr
    assert "Traceback" not in proc.stderr


# ---- the mint --------------------------------------------------------------------------------

def test_mint_arithmetic_ties_remainders_single_bidder_and_no_bids():
    a1, b1, c3, d3 = Bid("a", 1, "x", 1), Bid("b", 1, "y", 1), Bid("c", 3, "z", 2), Bid("d", 3, "w", 1)
    # ties go to the earlier bid; the winner pays the second-highest bid
    assert winner_of([c3, d3, a1]) == (c3, 3)
    assert winner_of([a1, b1]) == (a1, 1)
    assert winner_of([c3]) == (c3, 3)  # alone: its own bid
    assert winner_of([]) == (None, 0)
    # 7 shared by three others: 3, 2, 2 in sorted-id order; shares of 0 make no entry
    assert shares(7, ["q", "e", "m"]) == [("e", 3), ("m", 2), ("q", 2)]
    assert shares(1, ["b", "a"]) == [("a", 1)]
    s = settle([d3, c3, a1], ["a", "b", "c", "d"])
    assert s.winner is d3 and s.price == 3
    assert [(m[1], m[2]) for m in s.moves] == [("a", 1), ("b", 1), ("c", 1), ("c", 3), ("a", 1)]
    # a single bidder with nobody else: the price comes back whole
    lone = settle([Bid("a", 4, "x", 1)], ["a"])
    assert [(m[1], m[2]) for m in lone.moves] == [("a", 4)]
    assert settle([], ["a", "b"]).moves == []


def test_a_mint_is_recorded_every_mint_round_even_without_bids(tmp_path):
    sc = scenario(tmp_path, criteria="buyer")
    p = world_file(tmp_path, "rounds = 4\nmint_every = 2", ["alice"], sc)
    w, recs = run_world(p)
    mints = [r for r in recs if r["type"] == "mint"]
    assert [m["round"] for m in mints] == [2, 4]
    assert mints[0] == {"type": "mint", "round": 2, "clock": 2.0, "agent": None, "artifact": None, "version": None,
                        "bids": [], "price": 0, "score": 0, "minted": 0}


def test_the_winner_is_minted_score_div_10_and_the_price_goes_to_the_others(tmp_path):
    w, recs = run_world(Path(__file__).resolve().parents[3] / "akh_tui/data/worlds/market.toml", rounds=5)
    mint = [r for r in recs if r["type"] == "mint"][0]
    assert mint["agent"] is not None and mint["bids"]
    assert mint["minted"] == mint["score"] // 10 >= 1
    after = recs[recs.index(mint) + 1:]
    minted = [r for r in after if r["type"] == "ledger" and r["from"] == "mint"]
    assert minted[0]["to"] == mint["agent"] and minted[0]["amount"] == mint["minted"] and minted[0]["agent"] is None
    assert w.ledger.minted == mint["minted"]


# ---- rate limits, clock, backoff -----------------------------------------------------------

def test_rate_limit_skip_refuses_turns_until_the_window_passes(tmp_path):
    sc = scenario(tmp_path, criteria="buyer")
    p = world_file(tmp_path, "rounds = 5\nmint_every = 0\n[world.limits]\nwindow_s = 3\nactions = 1\npolicy = \"skip\"",
                   ["alice"], sc)
    _, recs = run_world(p)
    turns = [(r["type"], r["clock"]) for r in recs if r["type"] in ("cycle", "rate_limited")]
    assert turns == [("cycle", 0.0), ("rate_limited", 1.0), ("rate_limited", 2.0), ("cycle", 3.0), ("rate_limited", 4.0)]
    limited = next(r for r in recs if r["type"] == "rate_limited")
    assert limited == {"type": "rate_limited", "round": 2, "clock": 1.0, "agent": "alice", "resource": "actions"}
    assert not any(r["type"] == "state" and r["to"] == "SLEEPING" for r in recs)


def test_rate_limit_block_sleeps_until_capacity_and_the_clock_jumps_to_the_wake(tmp_path):
    sc = scenario(tmp_path, criteria="buyer")
    p = world_file(tmp_path, "rounds = 4\nmint_every = 0\n[world.limits]\nwindow_s = 5\nactions = 1\npolicy = \"block\"",
                   ["alice"], sc)
    _, recs = run_world(p)
    sleep = next(r for r in recs if r["type"] == "state" and r["to"] == "SLEEPING")
    assert sleep["clock"] == 1.0 and sleep["wake_at"] == 5.0 and "actions" in sleep["why"]
    rounds = [(r["round"], r["clock"], r["order"]) for r in recs if r["type"] == "round"]
    # round 3: nobody eligible, so the clock jumps from 2.0 to the wake time
    assert rounds[:3] == [(1, 0.0, ["alice"]), (2, 1.0, ["alice"]), (3, 5.0, ["alice"])]
    assert [r["clock"] for r in recs if r["type"] == "cycle"][:2] == [0.0, 5.0]


def test_backoff_doubles_from_0_1_s_and_the_fifth_error_pauses_a_decider_that_raises(tmp_path):
    sc = scenario(tmp_path, criteria="buyer", extra="[config]\nmax_backtrack_attempts = 50\nstall_threshold = 50\n")
    p = world_file(tmp_path, "rounds = 7\nmint_every = 0\nstep_s = 1.0", ["alice"], sc)
    w, recs = run_world(p, deciders={"alice": Raising()})
    cycles = [r for r in recs if r["type"] == "cycle"]
    assert cycles and all(not c["act"]["success"] for c in cycles)  # failed steps, never a crash
    assert "the model fell over" in cycles[0]["act"]["output"] and cycles[0]["decide"]["tool"] == "noop"
    states = [(r["to"], r["wake_at"]) for r in recs if r["type"] == "state"]
    # turns at 0, 1.2, 2.6, 4.4, 7.0: each wake = turn + step 1 s + delay 0.2, 0.4, 0.8, 1.6
    assert states[:6] == [("RUNNING", None), ("SLEEPING", 1.2), ("RUNNING", None), ("SLEEPING", 2.6),
                          ("RUNNING", None), ("SLEEPING", 4.4)]
    assert [c["clock"] for c in cycles][:5] == [0.0, 1.2, 2.6, 4.4, 7.0]
    paused = next(r for r in recs if r["type"] == "state" and r["to"] == "PAUSED")
    assert paused["clock"] == 7.0 and paused["why"].startswith("error_limit: noop:")
    assert cycles[4]["state"] == "PAUSED"
    # the next round it runs again, errors and delay kept: the sixth failure pauses it again
    assert states[states.index(("PAUSED", None)) + 1] == ("RUNNING", None)
    assert cycles[5]["clock"] == 8.0 and cycles[5]["state"] == "PAUSED"
    assert w.loops["alice"].errors == 7 and w.loops["alice"].delay_ms == 10_000  # 6.4 s doubled, capped at 10 s


def test_shuffle_orders_each_round_with_random_seeded_by_seed_and_round(tmp_path):
    sc = scenario(tmp_path, criteria="buyer")
    ids = ["ann", "bo", "cy", "di", "ed"]
    p = world_file(tmp_path, "rounds = 4\nseed = 3\nmint_every = 0\nschedule = \"shuffle\"", ids, sc)
    _, recs = run_world(p)
    for r in (x for x in recs if x["type"] == "round"):
        want = list(ids)
        random.Random(f"3:{r['round']}").shuffle(want)
        assert r["order"] == want
    orders = {tuple(r["order"]) for r in recs if r["type"] == "round"}
    assert len(orders) > 1


# ---- the world file -------------------------------------------------------------------------

@pytest.mark.parametrize("body, line, fld, words", [
    ('[world]\nname = "t"\nnmae = 3\n', 3, "world.nmae", "unknown key 'nmae'"),
    ('[world]\nname = "t"\nstep_s = 0\n', 3, "world.step_s", "0.001"),
    ('[world]\nname = "t"\n[world.limits]\npolicy = "wait"\n', 4, "world.limits.policy", "skip"),
    ('[world]\nname = "t"\n[[agents]]\nid = "escrow"\nscenario = "zoo"\n', 4, "agents[0].id", "reserved"),
    ('[world]\nname = "t"\n[[agents]]\nid = "a"\nscenario = "zoo"\ncolour = 1\n', 6, "agents[0].colour", "unknown key"),
    ('[world]\nname = "t"\n[[agents]]\nid = "a"\nscenario = "nowhere"\n', 5, "agents[0].scenario", "unknown scenario"),
    ('[world]\nname = "t"\n[[agents]]\nid = "a"\nscenario = "zoo"\n[[artifacts]]\nid = "x"\ntext = "t"\nprice = -1\n',
     9, "artifacts[0].price", ">= 0"),
])
def test_bad_world_files_name_file_line_and_field(tmp_path, cli, body, line, fld, words):
    p = tmp_path / "bad.toml"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_world(str(p))
    e = exc.value
    assert (e.file, e.line, e.field) == (str(p), line, fld) and words in e.message
    proc = cli("world", "check", str(p), "--json", check_rc=2)
    assert json.loads(proc.stderr) == {"error": e.message, "file": str(p), "line": line, "field": fld}


def test_world_check_accepts_the_bundled_worlds(cli):
    for name in ("harbour", "market"):
        assert "ok" in cli("world", "check", name).stdout


# ---- the bundled worlds and the trace -------------------------------------------------------

@pytest.mark.parametrize("name", ["harbour", "harbour-crew", "market"])
def test_bundled_worlds_run_to_their_end_with_the_ledger_invariant_every_step(name):
    spec = load_world(name)
    recs: list[dict] = []
    w = World(spec, sink=recs.append)
    opening = spec.starting_scrip * len(spec.agents)

    def check(step: dict) -> None:  # summed from scratch: the incremental count is not trusted
        assert sum(w.ledger.snapshot().values()) == opening + w.ledger.minted

    ended = w.run(on_step=check)
    assert ended in ("every agent is STOPPED", f"{spec.rounds} rounds")
    tools = {r["decide"]["tool"] for r in recs if r["type"] == "cycle"}
    assert "read_artifact" in tools
    if name == "harbour-crew":
        assert "transfer" in tools  # the deckhand's tip
    elif name == "harbour":
        assert ended == "every agent is STOPPED"
        assert all(g["status"] == "completed" for a in w.summary()["agents"].values() for g in a["goals"])
    else:
        assert {"bid", "write_artifact"} <= tools and w.ledger.minted > 0


def test_a_world_trace_is_byte_identical_in_two_data_dirs_and_holds_no_path(tmp_path, cli):
    outs = []
    for d in ("one", "two"):
        (tmp_path / d).mkdir()
        cli("world", "run", "harbour", "--trace", "t.jsonl", data_dir=tmp_path / d / "data", cwd=tmp_path / d)
        outs.append((tmp_path / d / "t.jsonl").read_bytes())
    assert outs[0] == outs[1]
    text = outs[0].decode()
    assert str(tmp_path) not in text and "/akh_tui/" not in text and "wall_" not in text
    lines = [json.loads(x) for x in text.splitlines()]
    assert lines[0]["type"] == "world" and lines[0]["agents"][0] == {"id": "pilot", "scenario": "harbour/pilot.toml",
                                                                     "decider": "utility", "seed": 0}
    cyc = next(x for x in lines if x["type"] == "cycle")
    assert list(cyc)[:7] == ["type", "v", "cycle", "agent", "round", "clock", "state"]
    assert {"goal", "observe", "orient", "decide", "act", "goals", "plan", "wm", "psyche"} <= set(cyc)


def test_seed_replaces_the_world_seed_and_default_agent_seeds(cli, tmp_path):
    cli("world", "run", "harbour", "--seed", "7", "--rounds", "1", "--trace", "t.jsonl")
    head = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert head["seed"] == 7 and [a["seed"] for a in head["agents"]] == [7, 8, 9]
    proc = cli("world", "run", "harbour", "--rounds", "0", check_rc=2)
    assert "--rounds" in proc.stderr


def test_world_run_prints_a_line_per_step_and_a_summary(cli):
    out = cli("world", "run", "harbour").stdout
    assert "r1   pilot" in out and "read_artifact" in out and "balance" in out
    assert "balances: fisher" in out and "artifacts: berth-register@1" in out and "mints:" in out
    assert "pilot: STOPPED: #1 Find where aurora moors [completed]" in out


# ---- actions ---------------------------------------------------------------------------------

def test_a_scenario_may_turn_a_world_capability_off(tmp_path):
    sc = scenario(tmp_path, criteria="(kestrel moors-at berth-one)", extra="[config]\ncapabilities = { world_read = false }\n")
    (tmp_path / "notes.tsv").write_text("kestrel\tmoors-at\tberth-one\n", encoding="utf-8")
    p = world_file(tmp_path, "rounds = 3\nmint_every = 0", ["alice"], sc,
                   '[[artifacts]]\nid = "notes"\ntriples = "notes.tsv"\n')
    _, recs = run_world(p)
    row = next(c for c in next(r for r in recs if r["type"] == "cycle")["decide"]["candidates"] if c["tool"] == "read_artifact")
    assert row["offered"] is False and "world_read" in row["why_not"]


def test_write_artifact_publishes_the_goals_evidence_and_records_an_artifact_event(tmp_path):
    sc = scenario(tmp_path, criteria="buyer", extra="[config]\ndisabled_tools = [\"synthesize_triple\", \"reason\", "
                  "\"similarity_search\", \"infer_rules\", \"gap_analysis\", \"user_interact\"]\n")
    p = world_file(tmp_path, "rounds = 6\nmint_every = 0", ["alice"], sc)
    w, recs = run_world(p)
    ev = next(r for r in recs if r["type"] == "artifact")
    assert ev == {"type": "artifact", "round": ev["round"], "clock": ev["clock"], "agent": "alice", "id": "alice-g1",
                  "version": 1, "owner": "alice", "price": 1, "kind": "triples", "size": ev["size"]}
    assert ev["size"] >= 1
    a = w.artifacts.get("alice-g1")
    assert ("aurora", "moors-at", "berth-three") in a.versions[0].triples


def test_invoke_artifact_runs_its_tool_for_an_agent_that_lacks_it_and_pays_only_then(tmp_path):
    sc = scenario(tmp_path, criteria="(aurora moors-at berth-three)", extra="[config]\ndisabled_tools = [\"kg_query\"]\n")
    p = world_file(tmp_path, "rounds = 4\nmint_every = 0\nstarting_scrip = 5", ["alice", "bob"], sc,
                   '[[artifacts]]\nid = "lookup"\nowner = "bob"\ntext = "a query service"\ntool = "kg_query"\nprice = 2\n')
    w, recs = run_world(p)
    inv = next(r for r in recs if r["type"] == "cycle" and r["agent"] == "alice" and r["decide"]["tool"] == "invoke_artifact")
    assert inv["act"]["success"] and inv["act"]["output"].startswith("invoked lookup@1 (kg_query) for 2:")
    assert inv["act"]["progress"] == "completed"
    pay = next(r for r in recs if r["type"] == "ledger" and r["agent"] == "alice")
    assert (pay["from"], pay["to"], pay["amount"]) == ("alice", "bob", 2)


def test_self_evaluation_every_third_turn_and_a_pivot_stalls_the_goal(tmp_path):
    sc = scenario(tmp_path, criteria="buyer", extra="[config]\nmax_backtrack_attempts = 50\nstall_threshold = 50\n")
    p = world_file(tmp_path, "rounds = 3\nmint_every = 0", ["alice"], sc)
    w, recs = run_world(p, deciders={"alice": Raising()})
    evals = [r for r in recs if r["type"] == "evaluation"]
    assert len(evals) == 1 and evals[0]["turns"] == 3 and evals[0]["success_ratio"] == 0.0 and evals[0]["scrip_change"] == 0
    pivot = next(r for r in recs if r["type"] == "pivot")
    assert (pivot["agent"], pivot["tool"], pivot["goal"]) == ("alice", "noop", 1)
    decomposition = next(r for r in recs if r["type"] == "decomposition")
    assert decomposition["agent"] == "alice" and decomposition["goal"] == 1
    assert recs.index(pivot) < recs.index(decomposition)  # the pivot is why the goal was decomposed
    assert w.agents["alice"].goals[1].status == "suspended"
    # each failure entered working memory as an Observation
    assert any(e.kind == "observation" and e.content.startswith("Failure: noop") for e in w.agents["alice"].wm.entries.values())


def test_a_scripted_decider_counts_llm_calls_against_its_limit(tmp_path):
    sc = scenario(tmp_path, criteria="buyer")
    p = world_file(tmp_path, "rounds = 4\nmint_every = 0\n[world.limits]\nllm_calls = 2\nwindow_s = 100", ["alice"], sc)
    p.write_text(p.read_text().replace('scenario = "s.toml"', 'scenario = "s.toml"\ndecider = "scripted"'))
    _, recs = run_world(p)
    kinds = [(r["type"], r.get("resource")) for r in recs if r["type"] in ("cycle", "rate_limited")]
    assert kinds == [("cycle", None), ("cycle", None), ("rate_limited", "llm_calls"), ("rate_limited", "llm_calls")]
    assert all("llm" in r["decide"] for r in recs if r["type"] == "cycle")


# ---- workflows -------------------------------------------------------------------------------

WORKFLOW = '''[world]
name = "wf"
rounds = 6
mint_every = 0
[[agents]]
id = "clerk"
scenario = "s.toml"
decider = "workflow"
[[agents.workflow.steps]]
name = "look"
tool = "kg_query"
[[agents.workflow.steps]]
name = "publish"
action = "write_artifact"
on_error = "skip"
[[agents.workflow.steps]]
name = "pay"
action = "transfer"
input = "bob 2"
[agents.workflow.transitions]
look = [{ match = "no such output", to = "look" }, { on = "success", to = "publish" }]
[[agents]]
id = "bob"
scenario = "s.toml"
'''


def test_a_workflow_runs_one_step_per_turn_with_transitions_skip_and_a_transfer(tmp_path):
    scenario(tmp_path, criteria="buyer")
    p = tmp_path / "w.toml"
    p.write_text(WORKFLOW, encoding="utf-8")
    w, recs = run_world(p)
    clerk = [r for r in recs if r["type"] == "cycle" and r["agent"] == "clerk"]
    steps = [(r["decide"]["workflow"]["step"], r["decide"]["tool"], r["act"]["success"]) for r in clerk]
    # publish has nothing new to publish on its second visit: a failed step, skipped to pay
    assert steps == [("look", "kg_query", True), ("publish", "write_artifact", True), ("pay", "transfer", True),
                     ("look", "kg_query", True), ("publish", "noop", False), ("pay", "transfer", True)]
    assert clerk[0]["decide"]["workflow"]["utility_tool"] == "kg_query"  # the table's choice, recorded beside it
    moves = [(r["from"], r["to"], r["amount"]) for r in recs if r["type"] == "ledger" and r["agent"] == "clerk"]
    assert moves == [("clerk", "bob", 2), ("clerk", "bob", 2)]
    head = recs[0]["config"]["agents"][0]["workflow"]
    assert head["steps"][2] == {"name": "pay", "action": "transfer", "on_error": "retry", "max_retries": 3, "input": "bob 2"}


def test_workflow_retry_repeats_a_failing_step_then_skips_and_fail_restarts(tmp_path):
    scenario(tmp_path, criteria="buyer")
    body = WORKFLOW.replace('name = "publish"\naction = "write_artifact"\non_error = "skip"',
                            'name = "publish"\naction = "bid"\non_error = "retry"\nmax_retries = 1')
    body = body.replace("rounds = 6", "rounds = 5")
    p = tmp_path / "w.toml"
    p.write_text(body, encoding="utf-8")
    _, recs = run_world(p)
    steps = [(r["decide"]["workflow"]["step"], r["decide"]["workflow"]["retry"]) for r in recs
             if r["type"] == "cycle" and r["agent"] == "clerk"]
    # bid is not offered (no mint): tried, retried once, then skipped to pay
    assert steps == [("look", 0), ("publish", 0), ("publish", 1), ("pay", 0), ("look", 0)]
    body = body.replace('on_error = "retry"\nmax_retries = 1', 'on_error = "fail"')
    p.write_text(body, encoding="utf-8")
    _, recs = run_world(p)
    steps = [r["decide"]["workflow"]["step"] for r in recs if r["type"] == "cycle" and r["agent"] == "clerk"]
    assert steps == ["look", "publish", "look", "publish", "look"]


@pytest.mark.parametrize("old, new, fld", [
    ('tool = "kg_query"', 'tool = "kg_qeury"', "agents[0].workflow.steps[0].tool"),
    ('{ on = "success", to = "publish" }', '{ on = "success", to = "publsh" }', "agents[0].workflow.transitions.look[1].to"),
    ('match = "no such output"', 'match = "(unclosed"', "agents[0].workflow.transitions.look[0].match"),
    ('on_error = "skip"', 'on_error = "ignore"', "agents[0].workflow.steps[1].on_error"),
])
def test_bad_workflows_name_the_field(tmp_path, old, new, fld):
    scenario(tmp_path, criteria="buyer")
    p = tmp_path / "w.toml"
    p.write_text(WORKFLOW.replace(old, new), encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_world(str(p))
    assert exc.value.field == fld and exc.value.line is not None
    line = p.read_text().splitlines()[exc.value.line - 1]
    assert new.split(" = ")[0].strip("{ ") in line or fld.rsplit(".", 1)[-1].split("[")[0] in line


def test_an_llm_agent_without_an_llm_config_is_bad_input_naming_the_agent(tmp_path, cli):
    p = tmp_path / "w.toml"
    p.write_text('[world]\nname = "l"\n[[agents]]\nid = "a"\nscenario = "zoo"\ndecider = "llm"\n', encoding="utf-8")
    proc = cli("world", "run", str(p), check_rc=2)
    assert "agents[0].decider" in proc.stderr and "[llm]" in proc.stderr and "Traceback" not in proc.stderr


def test_artifact_indexes_follow_writes_versions_and_rollbacks():
    """The offers read indexes (words, owners, tools) instead of walking every artifact: they
    must say what a walk would, after new versions and a rolled-back step too."""
    from akh_tui.engine.world.artifacts import Artifacts

    arts = Artifacts()
    arts.write("logs", "alice", (("aurora", "moors-at", "berth-three"),), None, 2)
    arts.write("tides", "world", (), "high water at noon", 1, tool="kg_query")
    arts.commit()
    walk = {a.id: len({"aurora", "noon"} & a.current.words) for a in arts if {"aurora", "noon"} & a.current.words}
    assert arts.sharing({"aurora", "noon"}) == walk
    arts.begin()
    arts.write("logs", "alice", (("kestrel", "fishes-in", "north-channel"),), None, 2)  # a new version
    arts.write("extra", "bob", (), "aurora again", 1, tool="kg_query")
    assert arts.sharing({"aurora"}) == {"extra": 1} and [a.id for a in arts.owned_by("bob")] == ["extra"]
    arts.rollback()
    assert arts.sharing({"aurora"}) == {"logs": 1} and arts.owned_by("bob") == []
    assert arts.with_tool == {"tides"} and [a.id for a in arts.owned_by("alice")] == ["logs"]


def test_harbour_crew_s_deckhand_tips_the_pilot_by_a_workflow_transfer(cli, tmp_path):
    # the bundled world that transfers (docs/worlds.md): the deckhand's workflow `tip` pays the
    # pilot 4 scrip, above every price in it; the step lines keep their columns with a 13-letter id
    out = cli("world", "run", "harbour-crew", "--rounds", "4", "--trace", "t.jsonl").stdout
    recs = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    tips = [(r["round"], r["from"], r["to"], r["amount"]) for r in recs
            if r["type"] == "ledger" and r["why"].startswith("transfer")]
    assert tips == [(1, "deckhand", "pilot", 4), (4, "deckhand", "pilot", 4)]
    prices = [r["amount"] for r in recs if r["type"] == "ledger" and not r["why"].startswith("transfer")]
    assert prices and max(prices) <= 3
    lines = [ln for ln in out.splitlines() if ln.startswith("r1 ")]
    assert len({ln.index(" balance") for ln in lines}) == 1  # harbourmaster's line is not pushed right
    assert "r1   harbourmaster kg_query" in out
