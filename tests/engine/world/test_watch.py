"""The world held open for the workbench (engine/world/watch.py): stepping one agent or one
round gives the world `world run` gives, every step is kept for a read-only replay, and the
world breakpoints fire on the records of the turn that matches."""

from __future__ import annotations

import json

import pytest

from akh_tui.engine import InputError, Locations, Psyche, WorldWatch, parse_world_break, parse_world_edits
from akh_tui.engine.world import World, load_world


@pytest.fixture
def locations(tmp_path):
    return Locations(tmp_path / "data", tmp_path / "config.toml")


def market(locations: Locations) -> WorldWatch:
    return WorldWatch.open("market", locations)


def until_hit(watch: WorldWatch, turns: int = 60) -> str:
    """Step until a breakpoint fires (a test fails rather than loops when none does)."""
    for _ in range(turns):
        watch.step_agent()
        hit = watch.take_hit()
        if hit is not None:
            return hit
    raise AssertionError(f"no breakpoint fired in {turns} turns")


def headless(rounds: int) -> tuple[World, list[str]]:
    lines: list[str] = []
    w = World(load_world("market"), lines=lines.append)
    w.run(rounds)
    return w, lines


def test_stepping_agent_by_agent_gives_the_world_that_world_run_gives(locations):
    w, lines = headless(7)
    watch = market(locations)
    for _ in range(5):
        watch.step_agent()  # two rounds and a half, one turn at a time
    watch.step_round()  # the rest of round 3
    for _ in range(4):
        watch.step_round()
    assert watch.round == 7 and watch.next_agent() is None
    assert watch.world.summary() == w.summary()
    cycles = [json.loads(x) for x in lines if json.loads(x)["type"] == "cycle"]
    assert [(s.round, s.agent, s.tool) for s in watch.steps] == [(c["round"], c["agent"], c["decide"]["tool"])
                                                                 for c in cycles]
    # each step's record is kept as written: the replay shows the bytes the trace holds
    last = cycles[-1]
    assert watch.record(last["agent"]) == last
    assert watch.record(cycles[2]["agent"], 2) == cycles[2]


def test_a_replayed_step_shows_the_agent_as_it_was_then(locations):
    watch = market(locations)
    for _ in range(8):
        watch.step_agent()
    first = watch.steps[0]
    then, now = watch.view(first.agent, 0), watch.view(first.agent)
    assert then["replay"] and then["cycle"] == 1
    assert not now["replay"] and now["cycle"] == watch.world.agents[first.agent].cycle


def test_the_roster_says_state_last_action_scrip_headroom_and_goals(locations):
    watch = market(locations)
    step = watch.step_agent()
    row = next(r for r in watch.roster() if r["id"] == step.agent)
    assert row["state"] == "RUNNING" and row["action"] == step.tool and row["result"] == step.result
    assert row["scrip"] == watch.world.ledger.balance(step.agent)
    assert row["headroom"] == ("actions", 7)  # market: 8 actions a 10 s window, one used
    assert (row["goals_done"], row["goals"]) == (0, 2)


def test_artifacts_versions_readers_and_a_diff_between_versions(locations):
    watch = market(locations)
    for _ in range(60):
        if any(a["version"] >= 2 for a in watch.artifacts()):
            break
        assert watch.step_agent() is not None
    art = next(a for a in watch.artifacts() if a["version"] >= 2)
    v1, v2 = art["versions"][0], art["versions"][1]
    assert v1["by"] == v2["by"] == art["owner"] and v1["round"] < v2["round"]
    diff = watch.artifact_diff(art["id"], 1, 2)
    assert diff and all(line[:2] in ("+ ", "- ") for line in diff)
    added = {line[2:] for line in diff if line.startswith("+ ")}
    assert added == set(watch.artifact_content(art["id"], 2)) - set(watch.artifact_content(art["id"], 1))
    with pytest.raises(InputError, match="versions 1..2"):
        watch.artifact_diff(art["id"], 1, 3)
    readers = next(a for a in watch.artifacts() if a["id"] == "bold-ledger")["readers"]
    assert "cautious" in readers  # cautious bought bold's ledger in round 1 or 2


def test_ledger_history_and_a_mint_with_its_ubi_split(locations):
    watch = market(locations)
    for _ in range(10):
        watch.step_round()
    rounds, history = watch.balance_history()
    assert rounds[:3] == [0, 1, 2] and history["bold"][0] == 50
    assert [history[a][-1] for a in watch.ids] == [watch.world.ledger.balance(a) for a in watch.ids]
    won = next(m for m in watch.mints if m["agent"] is not None)
    loser = next(a for a in watch.ids if a != won["agent"])
    assert won["shares"] == [[loser, won["price"]]]  # the price goes to the other agent


@pytest.mark.parametrize("text,kind", [("transfer>3", "transfer"), ("write", "write"), ("write:bold-g2", "write"),
                                       ("mint", "mint"), ("backoff:bold", "backoff"), ("paused", "paused"),
                                       ("agent:bold:bid", "agent"), ("tool=bid", "cycle"), ("veto", "cycle")])
def test_world_breakpoints_parse(text, kind):
    assert parse_world_break(text, ["bold", "cautious"]).kind == kind


@pytest.mark.parametrize("text,says", [("transfer>x", "transfer>N"), ("agent:zed", "no agent 'zed'"),
                                       ("paused:bold:bid", "only agent:X"), ("agent:", "agent:ID"),
                                       ("score < high", "score")])
def test_a_bad_world_breakpoint_is_refused_with_the_reason(text, says):
    with pytest.raises(InputError, match=says):
        parse_world_break(text, ["bold", "cautious"])


def test_a_transfer_breakpoint_stops_after_the_turn_that_paid_more_than_n(locations):
    watch = market(locations)
    watch.set_breaks(["transfer>3"])
    for _ in range(10):
        watch.step_agent()
        hit = watch.take_hit()
        if hit is not None:
            break
    assert hit is not None and "4 scrip" in hit and "read" in hit  # the ledgers cost 4
    paid = [e for e in watch.ledger_log if e["amount"] > 3]
    assert len(paid) == 1 and paid[0]["round"] == watch.steps[-1].round


def test_write_mint_and_agent_breakpoints_fire_on_their_records(locations):
    watch = market(locations)
    watch.set_breaks(["write:bold-g2"])
    until_hit(watch)
    assert watch.steps[-1].agent == "bold" and watch.steps[-1].tool == "write_artifact"
    watch.set_breaks(["mint"])
    hit = until_hit(watch)
    assert hit.startswith("mint: round 5") and watch.round == 5
    watch.set_breaks(["agent:cautious:bid"])
    hit = until_hit(watch)
    assert hit is not None and watch.steps[-1].agent == "cautious" and watch.steps[-1].tool == "bid"


def failing_world(tmp_path) -> str:
    """Two agents; `payer`'s workflow pays an agent that does not exist: every turn fails."""
    (tmp_path / "w.toml").write_text(
        '[world]\nname = "f"\nrounds = 20\n'
        '[[agents]]\nid = "payer"\nscenario = "zoo"\ndecider = "workflow"\n'
        '[[agents.workflow.steps]]\nname = "pay"\naction = "transfer"\ninput = "zed 1"\non_error = "skip"\n'
        '[[agents]]\nid = "other"\nscenario = "zoo"\n', encoding="utf-8")
    return str(tmp_path / "w.toml")


def test_backoff_and_paused_breakpoints_on_a_failing_agent(tmp_path, locations):
    watch = WorldWatch.open(failing_world(tmp_path), locations)
    watch.set_breaks(["backoff:payer"])
    hit = until_hit(watch)
    assert hit.startswith("backoff:payer: payer: failed (1 error(s) in a row)")
    assert watch.steps[-1].kind == "fail"
    watch.set_breaks(["paused"])
    hit = until_hit(watch)
    assert "payer: error_limit" in hit and watch.world.loops["payer"].state == "PAUSED"
    assert watch.roster()[0]["errors"] == 5


def test_a_broken_invariant_stops_the_world_with_the_numbers(monkeypatch, locations):
    watch = market(locations)
    watch.step_agent()
    ledger = watch.world.ledger
    monkeypatch.setattr(ledger, "held", ledger.held + 1)  # a one-sided change, as a bug in an action would make
    assert watch.step_agent() is None
    assert watch.broken is not None and "ledger invariant broken" in watch.broken and "nothing of that step" in watch.broken
    assert watch.step_agent() is None and len(watch.steps) == 1


def test_a_psyche_edit_takes_effect_at_the_agents_next_turn(locations):
    watch = market(locations)
    watch.step_round()
    text = watch.psyche_text("bold") + '\n[[shadow.veto_patterns]]\nname = "no_trading"\ntriggers = ["tool="]\n'
    watch.replace_psyche("bold", Psyche.from_toml(text))
    # a fork here carries the edit (state of the new branch); the lanes keep every step so far
    assert watch.run.branch_name == "bold-psyche-1" and len(watch.steps) == 2
    assert "no_trading" in watch.view("bold")["psyche"]["vetoes"]
    steps = watch.step_round()
    bold = next(s for s in steps if s.agent == "bold")
    other = next(s for s in steps if s.agent != "bold")
    assert bold.kind == "veto" and other.kind != "veto"
    assert watch.record("bold")["act"]["veto"] == "no_trading"
    assert "no_trading" in watch.view("bold")["psyche"]["vetoes"]


def test_a_fork_with_another_order_and_its_comparison_with_the_parent(locations):
    watch = WorldWatch.open("harbour", locations)
    watch.step_round()  # main: 1:pilot, 1:harbourmaster, 1:fisher
    with pytest.raises(InputError, match="no edit given"):
        parse_world_edits(" ; ", watch.ids)
    with pytest.raises(InputError, match="disable=AGENT:TOOL"):
        parse_world_edits("disable=pilot", watch.ids)
    name = watch.fork(0, parse_world_edits("order=fisher,harbourmaster", watch.ids))
    assert name == "fork-1" and [s.agent for s in watch.steps] == ["pilot"]
    watch.step_agent()
    assert watch.steps[-1].agent == "fisher"
    c = watch.compare_with_parent()
    # a step whose records share names with its cycle record's fields (round, state) compares too
    first = c["first_divergence"]
    assert first["step"] == 2 and first["a"]["name"] == "1:harbourmaster" and first["b"]["name"] == "1:fisher"
    assert (c["a"]["steps"], c["b"]["steps"]) == (3, 2)


def test_refused_and_sleeping_turns_have_their_own_glyphs_on_the_lanes(tmp_path, locations):
    (tmp_path / "w.toml").write_text(
        '[world]\nname = "r"\nrounds = 6\n[world.limits]\nwindow_s = 10\nactions = 1\npolicy = "block"\n'
        '[[agents]]\nid = "a"\nscenario = "zoo"\n[[agents]]\nid = "b"\nscenario = "zoo"\n', encoding="utf-8")
    watch = WorldWatch.open(str(tmp_path / "w.toml"), locations)
    for _ in range(4):
        watch.step_round()
    kinds = [s.kind for s in watch.steps]
    assert "limited" in kinds  # a turn refused by the rate limits
    limited = next(s for s in watch.steps if s.kind == "limited")
    assert limited.tool is None and limited.result == "rate_limited(actions)"
    # under `block` the refused agent sleeps: its lane says so at the next steps
    later = [s for s in watch.steps if s.index > limited.index and s.agent != limited.agent]
    assert later and later[0].states[watch.ids.index(limited.agent)] == "Z"
    row = next(r for r in watch.roster() if r["id"] == limited.agent)
    assert row["headroom"] is not None


def test_what_the_workbench_steps_is_recorded_in_the_data_dirs_store(locations):
    from akh_tui.engine import WorldRun, list_worlds

    watch = market(locations)
    watch.step_round()
    watch.step_agent()
    watch.replace_psyche("bold", Psyche.from_toml(watch.psyche_text("bold")))  # a fork: its own branch
    watch.step_agent()
    tools = [s.tool for s in watch.steps]
    watch.close()
    (world,) = list_worlds(locations)
    branches = {b["name"]: b for b in world["branches"]}
    assert branches["main"]["steps"] == 3 and branches["bold-psyche-1"]["steps"] == 4
    assert branches["bold-psyche-1"]["current"]
    run = WorldRun.resume(locations)  # the CLI goes on where the workbench left it
    try:
        rows = list(run.steps())
        assert len(rows) == 4 and run.branch_name == "bold-psyche-1"
        cycles = [json.loads(next(x for x in r.lines if x.startswith('{"type":"cycle"'))) for r in rows]
        assert [c["decide"]["tool"] for c in cycles] == tools
    finally:
        run.close()


def test_a_replayed_step_counts_the_patterns_in_force_then(locations):
    watch = market(locations)
    watch.step_round()
    first = next(s.index for s in watch.steps if s.agent == "bold")
    before = watch.view("bold", first)["psyche"]["vetoes_configured"]
    text = watch.psyche_text("bold") + '\n[[shadow.veto_patterns]]\nname = "no_trading"\ntriggers = ["tool="]\n'
    watch.replace_psyche("bold", Psyche.from_toml(text))
    watch.step_round()
    assert watch.view("bold", first)["psyche"]["vetoes_configured"] == before  # before the edit
    assert watch.view("bold", len(watch.steps) - 1)["psyche"]["vetoes_configured"] == before + 1
