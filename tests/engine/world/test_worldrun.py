"""A world through the door (world/worldrun.py): recorded in the session store, resumed after a
clean stop or a kill, rewound and forked (SPEC §13's time travel)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import Locations, bundled_data_dir
from akh_tui.engine.psyche.model import Psyche
from akh_tui.engine.world.edits import DisableTool, SetOrder, SetPsyche
from akh_tui.engine.world.worldrun import WorldRun
from akh_tui.engine.world import InvariantViolation, World, load_world
from akh_tui.engine.world.actions import ReadArtifact


def locs(tmp: Path, name: str = "data") -> Locations:
    return Locations(tmp / name, tmp / "config.toml")


def memory_trace(file: str, steps: int) -> list[str]:
    """The same world stepped in memory, never recorded: what the store must agree with."""
    lines: list[str] = []
    w = World(load_world(file), lines=lines.append)
    for _ in range(steps):
        if w.step() is None:
            break
    return lines


def big_market(tmp: Path, agents: int = 6, rounds: int = 4000) -> Path:
    """The bundled market with more traders (so most steps are mid-round) and many rounds."""
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    text = (f'[world]\nname = "bigmarket"\nrounds = {rounds}\nschedule = "shuffle"\nmint_every = 5\nstarting_scrip = 50\n'
            '[world.limits]\nwindow_s = 10\nactions = 8\n')
    for i in range(agents):
        text += (f'[[agents]]\nid = "t{i}"\nscenario = "{market}/trader.toml"\n'
                 f'psyche = "{market}/{"bold" if i % 2 else "cautious"}.toml"\n')
    text += f'[[artifacts]]\nid = "ledger"\nowner = "t0"\ntriples = "{market}/bold.tsv"\nprice = 4\n'
    p = tmp / "big.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_a_recorded_world_is_the_world_run_in_memory_and_resumes_where_it_was_left(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(4)
    first = r.last_step
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    assert r.last_step == first and r.world.round == 4 and r.world.order is None
    r.run(3)  # N more rounds on a continued world
    assert r.world.round == 7
    lines = list(r.trace_lines())
    r.close()
    assert lines == memory_trace("market", r.last_step)
    assert json.loads(lines[0])["type"] == "world"


def test_one_step_is_one_agents_turn_and_a_round_its_order(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    s = r.step()
    assert s is not None and s.step == 1 and s.round == 1 and s.name == f"1:{s.agent}"
    assert r.world.order is not None and s.agent == r.world.order[0]  # the round is under way
    rest = r.step_round()
    assert len(rest) == 1 and rest[0].agent != s.agent  # market's two traders
    assert r.world.order is None and r.last_step == 2
    r.close()


def test_every_step_can_be_rewound_to_exactly(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    states = [r.world.summary()]
    for _ in range(3 * 2 + 1):  # past a saved state (SAVE_EVERY is larger: replays from step 0 too)
        r.step()
        states.append(r.world.summary())
    r.close()
    r = WorldRun.open_readonly(locs(tmp_path))
    for n, want in enumerate(states):
        assert r.world_at(n).summary() == want
    with pytest.raises(InputError, match="outside the branch"):
        r.world_at(len(states))
    r.close()


def test_a_step_that_breaks_the_ledger_invariant_is_not_recorded(tmp_path, monkeypatch):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(1)
    recorded = r.last_step
    real = ReadArtifact.run

    def faulty(self, tc, ctx, arg):  # credits the reader out of nowhere, from round 2 on
        out = real(self, tc, ctx, arg)
        if self.world.round >= 2:
            self.world.ledger._change(self.agent_id, 5)
        return out

    monkeypatch.setattr(ReadArtifact, "run", faulty)
    with pytest.raises(InvariantViolation, match="read_artifact"):
        r.run(5)
    broke = r.last_step
    assert r.world.summary() == r.world_at(broke).summary()  # the live world is the recorded one
    r.close()
    r = WorldRun.open_readonly(locs(tmp_path))
    assert r.last_step == broke >= recorded
    led = r.world.ledger  # the recorded world: the invariant holds, no scrip came from nowhere
    assert sum(led.balances.values()) == led.opening_total + led.minted
    r.close()


def test_world_run_continues_the_current_world_and_fresh_starts_over(cli):
    cli("world", "run", "market", "--rounds", "2")
    proc = cli("world", "run", "market", "--rounds", "1", "--json")
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["round"] == 3 and summary["world"] == 1
    summary = json.loads(cli("world", "run", "market", "--rounds", "1", "--fresh", "--json").stdout.splitlines()[-1])
    assert summary["round"] == 1 and summary["world"] == 2


def test_kill_9_mid_round_loses_no_committed_step_and_resumes_at_the_next_agent(tmp_path):
    world = big_market(tmp_path)
    data = tmp_path / "data"
    env = dict(os.environ, AKH_TUI_DATA=str(data))
    proc = subprocess.Popen([sys.executable, "-m", "akh_tui.cli", "world", "run", str(world), "--json"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    db = data / "session.db"
    deadline = time.monotonic() + 60
    seen = 0
    try:
        while seen < 40:  # several rounds of six traders committed
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the world never recorded 40 steps"
            if db.exists():
                try:
                    c = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
                    seen = c.execute("SELECT COUNT(*) FROM world_steps").fetchone()[0]
                    c.close()
                except sqlite3.OperationalError:
                    seen = 0  # the tables are being made
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    r = WorldRun.resume(Locations(data, tmp_path / "config.toml"))
    committed = r.last_step
    assert committed >= seen  # nothing committed was lost
    ref = World(load_world(str(world)), lines=[].append)
    names = [ref.step() for _ in range(committed + 6)]
    nxt = r.step()
    assert nxt is not None and (nxt.round, nxt.agent) == names[committed]  # the next agent in that round's order
    for _ in range(5):
        r.step()
    lines = list(r.trace_lines())
    r.close()
    assert lines == memory_trace(str(world), committed + 6)


def test_a_fork_replays_identically_up_to_it_and_its_edits_hold_after_resume(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(6)
    main_lines = list(r.trace_lines())
    at = r.step_number("3:bold")
    bold_psyche = (bundled_data_dir() / "worlds" / "market" / "cautious.toml").read_text(encoding="utf-8")
    r.fork(at, [SetPsyche("bold", bold_psyche, source="cautious.toml"), DisableTool("cautious", "bid")], "calm")
    assert r.branch_name == "calm" and r.last_step == at
    r.run(3)
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    assert r.branch_name == "calm"
    assert "bid" in r.world.agents["cautious"].config.disabled_tools
    assert r.world_at(at).agents["bold"].psyche.to_dict() == Psyche.from_toml(bold_psyche).to_dict()
    assert r.world_at(at - 1).agents["bold"].psyche.to_dict() != Psyche.from_toml(bold_psyche).to_dict()
    fork_lines = list(r.trace_lines())
    r.close()
    upto = 1 + sum(len(row.lines) for row in WorldRun.open_readonly(locs(tmp_path), branch="main").steps(1, at))
    assert fork_lines[:upto] == main_lines[:upto]
    assert fork_lines[upto:] != main_lines[upto:upto + len(fork_lines) - upto]


def test_fork_edits_name_the_bad_field(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(2)
    with pytest.raises(InputError) as exc:
        r.fork(1, [DisableTool("nobody", "bid")])
    assert exc.value.field == "--agent"
    with pytest.raises(InputError) as exc:
        r.fork(1, [DisableTool("bold", "teleport")])
    assert exc.value.field == "--disable"
    with pytest.raises(InputError) as exc:
        r.fork(1, [SetOrder(("bold", "bold"))])
    assert exc.value.field == "--order"
    with pytest.raises(InputError) as exc:
        r.fork(2, [SetOrder(("bold",))])  # the round is over after its last step
    assert exc.value.field == "--order"
    r.close()


def test_a_fork_may_reorder_the_rest_of_the_round(tmp_path, cli):
    cli("world", "run", "market", "--rounds", "3")
    r = WorldRun.open_readonly(locs(tmp_path))
    first = next(row for row in r.steps() if row.round == 2)
    w = r.world_at(first.step)
    rest = w.order[w.pos:]
    r.close()
    assert len(rest) == 1
    out = cli("world", "fork", "--at", first.name, "--order", rest[0], "--name", "same").stdout
    assert "branch same" in out
    proc = cli("world", "fork", "--branch", "main", "--at", first.name, "--order", "nobody", check_rc=2)
    assert "--order" in proc.stderr
    shown = json.loads(cli("world", "show", "--json").stdout)
    assert shown["branch"] == "same" and [b["name"] for b in shown["branches"]] == ["main", "same"]


# ---- reading a recorded world headless ---------------------------------------------------------

def test_sessions_export_of_a_world_is_its_trace_byte_for_byte_in_any_data_dir(tmp_path, cli):
    exported = []
    for d in ("one", "two"):
        (tmp_path / d).mkdir()
        cli("world", "run", "market", "--rounds", "6", "--trace", "t.jsonl", data_dir=tmp_path / d / "data",
            cwd=tmp_path / d)
        cli("sessions", "export", "w1", "-o", "x.jsonl", data_dir=tmp_path / d / "data", cwd=tmp_path / d)
        exported.append((tmp_path / d / "x.jsonl").read_bytes())
        assert exported[-1] == (tmp_path / d / "t.jsonl").read_bytes()
    assert exported[0] == exported[1]
    assert str(tmp_path) not in exported[0].decode()
    listed = cli("sessions", "list", data_dir=tmp_path / "one" / "data").stdout
    assert "w1" in listed and "market" in listed
    proc = cli("sessions", "export", "w7", data_dir=tmp_path / "one" / "data", check_rc=2)
    assert "no world 7" in proc.stderr


def test_world_show_ledger_and_artifacts_read_the_recorded_world_now_or_at_a_step(cli):
    cli("world", "run", "market", "--rounds", "5")
    shown = json.loads(cli("world", "show", "--json").stdout)
    assert shown["round"] == 5 and shown["branch"] == "main" and shown["minted"] >= 1
    early = json.loads(cli("world", "show", "--json", "--at", "1:bold").stdout)
    assert early["round"] == 1 and early["mints"] == [] and early["step"] in (1, 2)
    entries = [json.loads(x) for x in cli("world", "ledger", "--json").stdout.splitlines()]
    assert entries and all(e["type"] == "ledger" for e in entries)
    assert any(e["from"] == "mint" for e in entries)  # the mint after round 5
    bold = [json.loads(x) for x in cli("world", "ledger", "--json", "--agent", "bold").stdout.splitlines()]
    assert bold and all("bold" in (e["from"], e["to"]) for e in bold) and len(bold) < len(entries)
    arts = json.loads(cli("world", "artifacts", "--json").stdout)
    assert {"bold-ledger", "cautious-ledger"} <= {a["id"] for a in arts}
    before = json.loads(cli("world", "artifacts", "--json", "--at", "1:bold").stdout)
    assert len(before) < len(arts)  # the goals' artifacts were written later
    proc = cli("world", "show", "--at", "99:bold", check_rc=2)
    assert "no step 99:bold" in proc.stderr and "--at" in proc.stderr


def test_agent_why_and_explain_take_a_world_agent(cli):
    cli("world", "run", "market", "--rounds", "4")
    why = json.loads(cli("agent", "why", "--agent", "bold", "--cycle", "2", "--json").stdout)
    assert why["agent"] == "bold" and why["cycle"] == 2 and why["lines"]
    why_not = json.loads(cli("agent", "why", "--agent", "bold", "--cycle", "2", "--tool", "noop", "--json").stdout)
    assert why_not["why_not"]["tool"] == "noop"
    told = json.loads(cli("agent", "explain", "--agent", "cautious", "--goal", "1", "--json").stdout)
    assert told["goal"]["id"] == 1 and told["lines"]
    proc = cli("agent", "why", "--agent", "nobody", "--cycle", "1", check_rc=2)
    assert "--agent" in proc.stderr and "bold, cautious" in proc.stderr


def test_sessions_compare_names_the_first_divergent_step_and_agent(tmp_path, cli):
    cli("world", "run", "market", "--rounds", "6")
    psyche = bundled_data_dir() / "worlds" / "market" / "cautious.toml"
    cli("world", "fork", "--at", "3:bold", "--agent", "bold", "--psyche", str(psyche), "--name", "calm")
    cli("world", "run", "market", "--rounds", "3")
    same = json.loads(cli("sessions", "compare", "w1", "w1:main", "--json").stdout)
    assert same["first_divergence"] is None
    got = json.loads(cli("sessions", "compare", "w1", "w1:calm", "--json").stdout)
    first = got["first_divergence"]
    r = WorldRun.open_readonly(locs(tmp_path))
    fork_step = r.step_number("3:bold") if r.branch_name == "main" else next(
        b["fork_step"] for b in r.branches() if b["name"] == "calm")
    r.close()
    assert first["step"] > fork_step and first["a"]["agent"] == first["b"]["agent"] == "bold"
    assert "psyche" in first["differs_in"]
    text = cli("sessions", "compare", "w1", "w1:calm").stdout
    assert f"first divergence at step {first['step']}" in text and "agent bold" in text


def test_model_and_workflow_agents_rewind_to_every_step_exactly(tmp_path):
    """A scripted model's memory, failure history and rotation, the prompt's last result and
    failures, and a workflow's step are in the saved state: every step replays as recorded, and
    a resumed world goes on as the uninterrupted one."""
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    p = tmp_path / "w.toml"
    p.write_text(f'[world]\nname = "m"\nrounds = 60\nmint_every = 5\nstarting_scrip = 50\n'
                 f'[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\ndecider = "scripted"\n'
                 f'[[agents]]\nid = "b"\nscenario = "{market}/trader.toml"\ndecider = "workflow"\n'
                 '[[agents.workflow.steps]]\nname = "look"\nllm = "scripted"\n'
                 '[[agents.workflow.steps]]\nname = "bid"\naction = "bid"\ninput = "1"\non_error = "skip"\n',
                 encoding="utf-8")
    r = WorldRun.start(locs(tmp_path), str(p))
    r.run(35)
    r.close()
    r = WorldRun.resume(locs(tmp_path))
    for k in range(0, r.last_step + 1, 3):
        r.world_at(k)  # raises if a step replays differently from its record
    r.run(10)
    lines = list(r.trace_lines())
    r.close()
    assert lines == memory_trace(str(p), r.last_step)


def test_a_live_model_world_saves_every_step_so_resume_and_rewind_never_ask_it_again(tmp_path, monkeypatch):
    """A live model may answer a replayed turn otherwise (and a call costs): its world saves a
    state after every step, so a resume after a kill and a rewind replay nothing."""
    import itertools

    import akh_tui.engine.world.world as world_module
    from akh_tui.engine.llm.decider import LLMDecider, ScriptedProvider

    calls = itertools.count()

    class Live:
        """Answers like the scripted model, but no two answers are alike: a replay would differ."""

        def __init__(self) -> None:
            self.scripted = ScriptedProvider.for_tools()

        def complete(self, messages):
            text, tokens = self.scripted.complete(messages)
            return text.replace("scripted:", f"live call {next(calls)}:"), tokens

    real = world_module.make_decider
    monkeypatch.setattr(world_module, "make_decider",
                        lambda kind, llm=None, **kw: LLMDecider(Live()) if kind == "llm" else real(kind, llm, **kw))
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    p = tmp_path / "w.toml"
    p.write_text(f'[world]\nname = "m"\nrounds = 20\nmint_every = 5\n'
                 f'[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\ndecider = "llm"\n'
                 f'[[agents]]\nid = "b"\nscenario = "{market}/trader.toml"\n', encoding="utf-8")
    r = WorldRun.start(locs(tmp_path), str(p))
    assert r.save_every == 1
    for _ in range(9):
        r.step()
    last = r.last_step  # no close: as if killed
    before = next(calls)
    again = WorldRun.resume(locs(tmp_path))
    assert again.last_step == last
    for k in range(last + 1):
        again.world_at(k)  # would raise "replayed differently" had a live turn been replayed
    assert next(calls) == before + 1  # the model was not asked while resuming and rewinding
    again.close()


def test_sessions_list_json_lists_worlds_after_the_runs_with_their_branches(cli):
    cli("world", "run", "market", "--rounds", "4")
    psyche = bundled_data_dir() / "worlds" / "market" / "cautious.toml"
    cli("world", "fork", "--at", "2:bold", "--agent", "bold", "--psyche", str(psyche), "--name", "calm")
    listed = json.loads(cli("sessions", "list", "--json").stdout)
    worlds = [x for x in listed if x.get("kind") == "world"]
    assert [w["id"] for w in worlds] == ["w1"] and worlds[0]["name"] == "market"
    branches = {b["name"]: b for b in worlds[0]["branches"]}
    assert branches["main"]["parent"] is None and branches["main"]["steps"] >= 4
    assert branches["calm"]["parent"] == "main" and branches["calm"]["current"] and not branches["main"]["current"]
    assert branches["calm"]["steps"] == branches["calm"]["fork_step"] and branches["calm"]["edits"]
    # the id is what the other commands take
    assert cli("sessions", "export", worlds[0]["id"], "--branch", "calm").stdout.count("\n") > 1


def test_an_agents_saved_graph_holds_its_additions_since_the_last_and_rewinds_exactly(tmp_path):
    from akh_tui.bench.world import world_file
    from akh_tui.engine.store.trace import dumps
    from akh_tui.engine.world.state import world_state
    from akh_tui.engine.world.worldrun import KG_CHAIN

    r = WorldRun.start(locs(tmp_path), str(world_file(tmp_path / "w", 3, "Explore the ocean and find plankton")))
    r.save_every = 2
    want = [dumps(world_state(r.world))]
    for _ in range(60):
        r.step()
        want.append(dumps(world_state(r.world)))
    r.close()
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        parts = [(step, json.loads(payload)) for step, payload in
                 db.execute("SELECT step, payload FROM world_states WHERE part='kg:a0' ORDER BY step")]
        agent_parts = [json.loads(p) for p, in db.execute("SELECT payload FROM world_states WHERE part='a0'")]
    assert len(agent_parts) == len(parts) and not any("kg_additions" in p["agent"] for p in agent_parts)
    deltas = [(s, p) for s, p in parts if p["prev"] is not None]
    assert deltas and any(p["triples"] for _, p in deltas)  # the graph grew, and only what grew was saved
    whole = [s for s, p in parts if p["prev"] is None]
    assert len(whole) >= 2 and whole[0] == 0  # the chain is cut: the whole graph again
    assert all(len(p["triples"]) < len(dict(parts)[max(whole)]["triples"]) for s, p in deltas if s > max(whole))
    assert all(len([s for s, _ in deltas if a < s < b]) <= KG_CHAIN for a, b in zip(whole, whole[1:] + [1 << 30]))
    r = WorldRun.open_readonly(locs(tmp_path))
    for n, state in enumerate(want):
        assert dumps(world_state(r.world_at(n))) == state, n
    r.close()


def test_a_missing_link_of_an_agents_saved_graph_is_reported_never_guessed(tmp_path):
    from akh_tui.bench.world import world_file
    from akh_tui.engine.errors import StoreDamaged

    r = WorldRun.start(locs(tmp_path), str(world_file(tmp_path / "w", 2, "Explore the ocean and find plankton")))
    r.save_every = 2
    r.run(10)
    r.close()
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        last = max(s for s, in db.execute("SELECT step FROM world_states WHERE part='kg:a0'"))
        prev = json.loads(db.execute("SELECT payload FROM world_states WHERE part='kg:a0' AND step=?",
                                     (last,)).fetchone()[0])["prev"]
        assert prev is not None
        db.execute("DELETE FROM world_states WHERE part='kg:a0' AND step=?", (prev[0],))  # the link it builds on
    with pytest.raises(StoreDamaged, match=rf"saved graph of 'a0' at step {prev[0]} is missing"):
        WorldRun.open_readonly(locs(tmp_path)).close()  # opening goes to the last step: through that state


def test_a_store_saved_before_graphs_had_parts_of_their_own_still_rewinds(tmp_path):
    from akh_tui.engine.store.schema import row_crc
    from akh_tui.engine.store.trace import dumps
    from akh_tui.engine.store.worldstore import WorldStore
    from akh_tui.engine.world.state import world_state

    r = WorldRun.start(locs(tmp_path), "market")
    r.save_every = 2
    want = [dumps(world_state(r.world))]
    for _ in range(12):
        r.step()
        want.append(dumps(world_state(r.world)))
    r.close()
    # the old layout: each agent's part holds its whole graph, and there is no `kg:` part
    r = WorldRun.open_readonly(locs(tmp_path))
    old = {(step, part): WorldStore(r.store).agent_part(1, step, part) for step, part in
           r.store.db.execute("SELECT step, part FROM world_states WHERE part NOT IN ('world') AND part NOT LIKE 'kg:%'")}
    r.close()
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        db.execute("DELETE FROM world_states WHERE part LIKE 'kg:%'")
        for (step, part), state in old.items():
            text = dumps(state)
            db.execute("UPDATE world_states SET payload=?, crc=? WHERE branch=1 AND step=? AND part=?",
                       (text, row_crc(1, step, part, text), step, part))
    r = WorldRun.open_readonly(locs(tmp_path))
    for n, state in enumerate(want):
        assert dumps(world_state(r.world_at(n))) == state, n
    r.close()


def test_sessions_show_and_delete_take_a_world(cli):
    cli("agent", "run", "--max-cycles", "2")
    cli("world", "run", "market", "--rounds", "4")
    psyche = bundled_data_dir() / "worlds" / "market" / "cautious.toml"
    cli("world", "fork", "--at", "2:bold", "--agent", "bold", "--psyche", str(psyche), "--name", "calm")
    shown = json.loads(cli("sessions", "show", "w1", "--json").stdout)
    assert shown["id"] == "w1" and shown["name"] == "market"
    assert [a["id"] for a in shown["agents"]] == ["bold", "cautious"]
    calm = next(b for b in shown["branches"] if b["name"] == "calm")
    assert calm["parent"] == "main" and calm["current"] and calm["edits"]
    text = cli("sessions", "show", "w1").stdout
    assert "calm" in text and "main @ step" in text and "cautious" in text
    proc = cli("sessions", "show", "w9", check_rc=2)
    assert "no world 9" in proc.stderr
    proc = cli("sessions", "show", "x1", check_rc=2)
    assert "w1" in proc.stderr  # the form it takes
    gone = json.loads(cli("sessions", "delete", "w1", "--json").stdout)
    assert gone == {"deleted": "w1", "branches": 2}
    listed = json.loads(cli("sessions", "list", "--json").stdout)
    assert [x["id"] for x in listed] == [1]  # the single run is untouched
    assert "no world" in cli("world", "show", check_rc=2).stderr
    assert "no world 1" in cli("sessions", "delete", "w1", check_rc=2).stderr
    cli("world", "run", "market", "--rounds", "1")  # a new world after the deletion records as before
    assert [x["id"] for x in json.loads(cli("sessions", "list", "--json").stdout) if x.get("kind") == "world"]


def test_sessions_check_checks_the_world_tables_and_reports_a_damaged_world_never_replacing_it(tmp_path, cli):
    cli("world", "run", "market", "--rounds", "4")
    whole = json.loads(cli("sessions", "check", "--json").stdout)
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        rows = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                   for t in ("worlds", "world_branches", "world_steps", "world_states"))
        assert whole["ok"] and whole["checked"] >= rows
        db.execute("UPDATE world_steps SET lines = replace(lines, '\"round\":', '\"round\": ') WHERE step=3")
        db.execute("UPDATE world_states SET payload = payload || ' ' WHERE part='world' AND step=0")
    proc = cli("sessions", "check", check_rc=2)
    assert "damaged: world w1 branch 'main': steps: step(s) 3" in proc.stderr
    assert "damaged: world w1 branch 'main': saved states: step(s) 0" in proc.stderr
    assert "restore the store from a copy" in proc.stderr and "the store is whole" not in proc.stdout
    got = json.loads(cli("sessions", "check", "--json", check_rc=2).stdout)
    assert got["damaged"] == {"world w1 branch 'main': steps": [3], "world w1 branch 'main': saved states": [0]}
    assert "damaged" in cli("sessions", "export", "w1", check_rc=2).stderr  # readers refuse it too
    with sqlite3.connect(locs(tmp_path).session_db) as db:  # reported, not replaced
        assert db.execute("SELECT lines FROM world_steps WHERE step=3").fetchone()[0].count('"round": ') >= 1


def test_world_show_ledger_and_artifacts_take_any_recorded_world(cli):
    cli("world", "run", "market", "--rounds", "3")
    cli("world", "run", "market", "--rounds", "5", "--fresh")  # w2 is current now
    assert json.loads(cli("world", "show", "--json").stdout)["world"] == 2
    first = json.loads(cli("world", "show", "w1", "--json").stdout)
    assert first["world"] == 1 and first["round"] == 3 and first["branch"] == "main"
    at = json.loads(cli("world", "show", "w1:main", "--at", "1:bold", "--json").stdout)
    assert at["round"] == 1 and at["world"] == 1
    one = [json.loads(x) for x in cli("world", "ledger", "w1", "--json").stdout.splitlines()]
    two = [json.loads(x) for x in cli("world", "ledger", "--json").stdout.splitlines()]
    assert one and max(e["round"] for e in one) <= 3 < max(e["round"] for e in two)
    assert cli("world", "artifacts", "w1", "--json").stdout
    assert "no world 7" in cli("world", "show", "w7", check_rc=2).stderr
    assert "WORLD" in cli("world", "ledger", "seven", check_rc=2).stderr
    assert "has no branch 'calm'" in cli("world", "show", "w1:calm", check_rc=2).stderr
    assert "--branch" in cli("world", "show", "w1:main", "--branch", "other", check_rc=2).stderr


def test_sessions_export_of_a_stored_world_as_otlp_json_is_its_spans(tmp_path, cli):
    cli("world", "run", "market", "--rounds", "3")
    psyche = bundled_data_dir() / "worlds" / "market" / "cautious.toml"
    cli("world", "fork", "--at", "2:bold", "--agent", "bold", "--psyche", str(psyche), "--name", "calm")
    got = json.loads(cli("sessions", "export", "w1", "--format", "otlp-json", "-o", str(tmp_path / "a.json"),
                         "--json").stdout)
    steps = json.loads(cli("sessions", "show", "w1", "--json").stdout)["branches"][0]["steps"]
    assert got["steps"] == steps and got["spans"] > steps
    doc = json.loads((tmp_path / "a.json").read_text())
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    names = [s["name"] for s in spans]
    assert "world market" in names and {"round 1", "round 2", "round 3"} <= set(names)
    agents = [next(a["value"]["stringValue"] for a in s["attributes"] if a["key"] == "gen_ai.agent.id")
              for s in spans if s["name"].startswith("invoke_agent ")]
    assert len(agents) == steps and set(agents) == {"bold", "cautious"}
    again = cli("sessions", "export", "w1", "--format", "otlp-json").stdout  # the same bytes every time
    assert again == cli("sessions", "export", "w1", "--format", "otlp-json").stdout
    assert json.loads(again) == doc
    calm = json.loads(cli("sessions", "export", "w1", "--branch", "calm", "--format", "otlp-json").stdout)
    trace_ids = {s["traceId"] for rs in calm["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
    assert trace_ids.isdisjoint({s["traceId"] for s in spans})  # a branch is a trace of its own
    assert "no branch 'nope'" in cli("sessions", "export", "w1", "--branch", "nope", "--format", "otlp-json",
                                     check_rc=2).stderr
    assert "--endpoint" in cli("sessions", "export", "w1", "--format", "otlp", check_rc=2).stderr


def test_deleting_a_world_another_process_drives_is_refused_naming_it(tmp_path, cli):
    code = (
        "import sys; from pathlib import Path; from akh_tui.engine import WorldRun, Locations\n"
        f"loc = Locations(Path({str(tmp_path / 'data')!r}), Path({str(tmp_path / 'config.toml')!r}))\n"
        "r = WorldRun.start(loc, 'market'); r.run(2)\n"
        "print('ready', flush=True); sys.stdin.readline(); r.run(1); r.close()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        refused = cli("sessions", "delete", "w1", check_rc=2)
        assert f"pid {proc.pid}" in refused.stderr and "Traceback" not in refused.stderr
        assert json.loads(cli("sessions", "show", "w1", "--json").stdout)["name"] == "market"  # still there
    finally:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=120) == 0
    assert json.loads(cli("sessions", "delete", "w1", "--json").stdout)["deleted"] == "w1"  # once it let go


def _bench_world(tmp: Path, agents: int) -> str:
    from akh_tui.bench.world import world_file

    return str(world_file(tmp / "w", agents, "Explore the ocean and find plankton"))


def _recorded(tmp: Path, agents: int, steps: int, save_every: int) -> list[str]:
    """A bench world of `agents` recorded for `steps` steps, a state saved every `save_every`:
    each step's whole state (world_state, every agent's with it), as the live world had it."""
    from akh_tui.engine.store.trace import dumps
    from akh_tui.engine.world.state import world_state

    r = WorldRun.start(locs(tmp), _bench_world(tmp, agents))
    r.save_every = save_every
    want = [dumps(world_state(r.world))]
    for _ in range(steps):
        r.step()
        want.append(dumps(world_state(r.world)))
    r.close()
    return want


def test_a_rewind_loads_the_agents_its_replay_needs_and_the_rest_when_first_touched(tmp_path):
    from akh_tui.engine.store.trace import dumps
    from akh_tui.engine.world.state import world_state

    want = _recorded(tmp_path, 8, 40, 8)
    r = WorldRun.open_readonly(locs(tmp_path))
    steps = {row.step: row.agent for row in r.steps()}
    for n in (3, 17, 24, 40):
        w = r.world_at(n)
        replayed = {steps[s] for s in range(n - n % 8 + 1, n + 1)}
        assert set(w.agents.pending) == set(w.ids) - replayed  # built and loaded: only the replayed turns' agents
        aid = w.agents.pending[0]
        assert list(w.agents) == w.ids and aid in w.agents and aid in w.agents.pending  # (asking loads nothing)
        assert w.agents[aid] is not None and aid not in w.agents.pending  # the first touch loads it
        assert dumps(world_state(w)) == want[n], n  # every agent touched: the world as it was
    kept = r.world_at(21)
    assert kept.agents.pending
    r.close()  # a rewound world stays whole after its run closes the store
    assert dumps(world_state(kept)) == want[21]


def test_each_saved_world_part_names_its_agents_newest_parts_and_every_agents_read_versions(tmp_path):
    r = WorldRun.start(locs(tmp_path), "harbour")
    r.save_every = 3
    r.run(3)
    at = r.last_step
    r.fork(at - 1, [], "again")
    r.run(1)
    r.close()
    ids = [a.id for a in load_world("harbour").agents]
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        rows = db.execute("SELECT branch, step, part, payload FROM world_states ORDER BY branch, step").fetchall()
    worlds = [(b, s, json.loads(p)) for b, s, part, p in rows if part == "world"]
    assert len(worlds) >= 4
    for b, s, state in worlds:
        named = state["agent_parts"]
        assert list(named) == ids
        for aid, at_step in named.items():  # the newest part of each agent at or before the world part's step
            lineage = [1] if b == 1 else [1, b]
            newest = max(s2 for b2, s2, part, _ in rows if part == aid and s2 <= s and b2 in lineage
                         and (b2 == b or b == 1 or s2 < at - 1))
            assert at_step == newest, (b, s, aid)
        if b != 1 and s == at - 1:
            assert set(named.values()) == {at - 1}  # a fork saves every agent at its step
    read = [state["book"]["read_versions"] for _, _, state in worlds]
    assert any(read)  # harbour's agents buy each other's artifacts: who read which version, for all of them


def test_an_agents_saved_part_appends_its_provenance_episodes_and_evidence_since_the_one_before(tmp_path):
    from akh_tui.engine.cycle.agent import PROVENANCE_KEEP

    _recorded(tmp_path, 2, 240, 4)  # 120 turns each: episodes consolidated, provenance past its first saves
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        agent_parts = [json.loads(p) for p, in db.execute("SELECT payload FROM world_states WHERE part='a0'")]
        parts = [json.loads(p) for p, in db.execute("SELECT payload FROM world_states WHERE part='kg:a0' ORDER BY step")]
    assert all(p["agent"]["provenance"] is None and "episodes" not in p["agent"] and p["evidence"] is None
               for p in agent_parts)
    # its last cycle record is in the lines of the step it names (its turn), not a second time here
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        for p in agent_parts[1:]:
            step = p["agent"]["last_record"]["step"]
            agent, lines = db.execute("SELECT agent, lines FROM world_steps WHERE step=?", (step,)).fetchone()
            assert agent == "a0" and f'"cycle":{p["agent"]["cycle"]},"agent":"a0"' in lines
    whole = [p for p in parts if p["prev"] is None]
    deltas = [p for p in parts if p["prev"] is not None]
    assert len(whole[-1]["provenance"]) > 40 and whole[-1]["episodes"]["episodes"]
    assert all(len(p["provenance"]) <= 6 for p in deltas)  # the two or so turns since the part before
    assert any(p["episodes"] for p in deltas) and all(len(p["episodes"]) <= 4 for p in deltas)
    learnt = sum(len(triples) for _, triples in whole[-1]["evidence"])  # the world's evidence of its goals
    assert learnt > 10 and any(p["evidence"] for p in deltas)
    assert all(sum(len(triples) for _, triples in p["evidence"]) < learnt // 2 for p in deltas)
    assert len(whole[-1]["provenance"]) <= PROVENANCE_KEEP


def test_a_store_whose_world_parts_name_no_agent_parts_and_whose_agents_hold_their_provenance_still_rewinds(tmp_path):
    """The layout saved before: world parts without `agent_parts` and `book` (the rewind
    searches for each agent's newest part and loads them all), agent parts holding their
    provenance and episodes (their `kg:` parts only the graph)."""
    from akh_tui.engine.store.schema import row_crc
    from akh_tui.engine.store.trace import dumps
    from akh_tui.engine.store.worldstore import WorldStore
    from akh_tui.engine.world.state import world_state

    want = _recorded(tmp_path, 3, 60, 4)
    r = WorldRun.open_readonly(locs(tmp_path))
    ws = WorldStore(r.store)
    rows = r.store.db.execute("SELECT branch, step, part, payload FROM world_states").fetchall()
    old: dict[tuple[int, str], str] = {}
    for b, step, part, payload in rows:
        d = json.loads(payload)
        if part == "world":
            d.pop("agent_parts"), d.pop("book")
        elif part.startswith("kg:"):
            d.pop("provenance"), d.pop("episodes"), d.pop("evidence")
        else:
            d = ws.agent_part(b, step, part)
            del d["agent"]["kg_additions"]  # (in the `kg:` parts)
        old[(step, part)] = dumps(d)
    r.close()
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        for (step, part), text in old.items():
            db.execute("UPDATE world_states SET payload=?, crc=? WHERE branch=1 AND step=? AND part=?",
                       (text, row_crc(1, step, part, text), step, part))
    r = WorldRun.open_readonly(locs(tmp_path))
    for n in range(0, 61, 3):
        w = r.world_at(n)
        assert not w.agents.pending  # (each agent's read versions and rate windows are in its own part)
        assert dumps(world_state(w)) == want[n], n
    r.close()
    r = WorldRun.resume(locs(tmp_path))  # resumed, it saves the new layout from its next state on
    r.run(2)
    r.close()


def test_a_resumed_world_saves_again_only_the_agents_its_replay_touched(tmp_path):
    from akh_tui.engine.store.trace import dumps
    from akh_tui.engine.world.state import world_state

    r = WorldRun.start(locs(tmp_path), _bench_world(tmp_path, 6))
    r.save_every = 10
    r.run(2)
    r.step()
    r.step()  # 14 steps: saved at 10, and at 14 by close
    replayed = {row.agent for row in r.steps(11, 14)}
    r.close()
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        db.execute("DELETE FROM world_states WHERE step=14")  # as after a kill: the last saved state is 10's
    r = WorldRun.resume(locs(tmp_path))
    assert r.last_step == 14 and set(r.world.agents.pending) == set(r.world.ids) - replayed
    r.save_every = 1
    r.step()  # the next save: the two replayed, this step's agent, and nobody else
    took = next(r.steps(15, 15)).agent
    r.close()
    with sqlite3.connect(locs(tmp_path).session_db) as db:
        saved = {p for p, in db.execute("SELECT part FROM world_states WHERE step=15") if p != "world" and ":" not in p}
    assert saved == replayed | {took}
    want = memory_trace(_bench_world(tmp_path, 6), 15)
    r = WorldRun.open_readonly(locs(tmp_path))
    assert list(r.trace_lines()) == want
    whole = World(load_world(_bench_world(tmp_path, 6)))
    for _ in range(15):
        whole.step()
    assert dumps(world_state(r.world_at(15))) == dumps(world_state(whole))
    r.close()
