"""`world run --approve AGENT[,AGENT]` asks on the terminal before a gated agent's action
(approve, reject, choose N); `--auto-approve`/`--auto-reject` answer for scripts (by="auto");
with no terminal, --approve is refused saying what to use instead."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import sys
import time
from pathlib import Path

from akh_tui.engine.paths import bundled_data_dir


def cycles(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if r["type"] == "cycle"]


def test_approve_without_a_terminal_is_refused_before_the_world_opens(cli, tmp_path):
    p = cli("world", "run", "market", "--rounds", "1", "--approve", "bold", check_rc=2)
    assert "--approve" in p.stderr and "use --auto-approve or --auto-reject" in " ".join(p.stderr.split())
    assert not (tmp_path / "data" / "session.db").exists()  # nothing was started
    p = cli("world", "run", "market", "--approve", "bold,nemo", check_rc=2)
    assert "no agent 'nemo' in world market (it has: bold, cautious)" in " ".join(p.stderr.split())


def test_a_world_file_that_gates_an_agent_needs_a_terminal_or_an_auto_flag(cli, tmp_path):
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    f = tmp_path / "w.toml"
    f.write_text(f'[world]\nname = "m"\nrounds = 2\n[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\n'
                 f'approve = true\n[[agents]]\nid = "b"\nscenario = "{market}/trader.toml"\n', encoding="utf-8")
    p = cli("world", "run", str(f), check_rc=2)
    assert "approve = true in w.toml" in " ".join(p.stderr.split())
    cli("world", "run", str(f), "--auto-approve", "--trace", "t.jsonl")
    users = {(c["agent"], json.dumps(c["decide"].get("user"))) for c in cycles(tmp_path / "t.jsonl")}
    assert {a for a, u in users if u != "null"} == {"a"}  # the file's agent, not b


def test_auto_reject_is_recorded_by_auto_for_the_named_agents_only(cli, tmp_path):
    p = cli("world", "run", "market", "--rounds", "2", "--auto-reject", "bold", "--trace", "t.jsonl", "--json")
    steps = [json.loads(x) for x in p.stdout.splitlines() if '"type": "step"' in x]
    bold = [s for s in steps if s["agent"] == "bold"]
    assert bold and all(s["user"]["decision"] == "reject" and s["user"]["by"] == "auto" for s in bold)
    assert all("user" not in s for s in steps if s["agent"] != "bold")
    recs = [c for c in cycles(tmp_path / "t.jsonl") if c["agent"] == "bold"]
    assert recs[0]["decide"]["user"] == {"decision": "reject", "tool": recs[0]["decide"]["tool"], "by": "auto",
                                         "why": "rejected by --auto-reject"}
    assert recs[0]["act"]["veto"] == "user" and recs[0]["act"]["success"] is False


def test_end_of_input_at_the_question_stops_the_world_with_nothing_of_that_step(cli, tmp_path, monkeypatch):
    monkeypatch.setattr("akh_tui.cli.worldgate._stdin_is_tty", lambda: True)
    monkeypatch.setattr(sys, "stdin", io.StringIO("nonsense\n"))
    p = cli("world", "run", "market", "--rounds", "3", "--approve", "cautious")
    err = " ".join(p.stderr.split())
    assert "round 1: cautious proposes" in err and "answer a (approve)" in err
    assert "stopped at the gate: no answer for cautious in round 1 (end of input)" in err
    assert "ended:" not in p.stdout  # no summary: the world stopped at the gate
    p = cli("world", "show", "--json")
    assert json.loads(p.stdout)["step"] == 0  # cautious acts first in round 1: nothing committed
    cli("world", "run", "market", "--rounds", "1", "--auto-approve", "cautious")  # and it goes on from there


def test_approve_asks_on_a_real_terminal_and_records_each_answer(tmp_path):
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS="120")
    pid, fd = pty.fork()
    if pid == 0:  # the child: akh-tui on the pseudo-terminal
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "akh_tui.cli", "world", "run", "market", "--rounds", "2",
                                   "--approve", "bold", "--trace", "t.jsonl"], env)
    answers = [b"x\n", b"3\n", b"r too risky\n"]
    out = b""
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            try:
                data = os.read(fd, 4096)
            except OSError:  # the child ended: the terminal is gone
                break
            if not data:
                break
            out += data
            if out.rstrip().endswith(b"that tool?") and answers:  # the question is on screen: answer it
                os.write(fd, answers.pop(0))
                out += b"\n<answered>\n"
    finally:
        _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert not answers, text
    assert "round 1: bold proposes" in text and "1* " in text and "answer a (approve), r [why]" in text
    assert "(choose bid by user)" in text and "(reject by user)" in text
    users = [c["decide"]["user"] for c in cycles(tmp_path / "t.jsonl") if c["agent"] == "bold"]
    assert users[0] == {"decision": "choose", "tool": "bid", "by": "user", "why": "", "proposed": "read_artifact"}
    assert users[1]["decision"] == "reject" and users[1]["why"] == "too risky"


def test_kill_9_while_the_question_waits_loses_only_that_step(tmp_path):
    import signal

    from akh_tui.engine import Locations, WorldRun

    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS="120")
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-m", "akh_tui.cli", "world", "run", "market", "--rounds", "3",
                                   "--approve", "bold"], env)
    out = b""
    answered = 0
    deadline = time.monotonic() + 90
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            out += os.read(fd, 4096)
            if out.rstrip().endswith(b"that tool?"):
                if answered == 2:  # bold's third turn waits: kill the process there
                    break
                os.write(fd, b"a\n")
                answered += 1
                out += b"\n<answered>\n"
        assert answered == 2, out.decode(errors="replace")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    r = WorldRun.resume(Locations(tmp_path / "data", tmp_path / "config.toml"))
    try:
        steps = list(r.steps())
        bold = [s for s in steps if s.agent == "bold"]
        assert len(bold) == 2 and steps[-1].agent != "bold"  # two answered turns kept; the waiting one never was
        nxt = r.step()  # and the world goes on at bold's turn
        assert nxt is not None and nxt.agent == "bold"
    finally:
        r.close()


def test_auto_approve_with_no_agents_named_gates_every_agent_of_a_file_that_gates_none(cli, tmp_path):
    cli("world", "run", "market", "--rounds", "1", "--auto-approve", "--trace", "t.jsonl")
    recs = cycles(tmp_path / "t.jsonl")
    assert {c["agent"] for c in recs} == {"bold", "cautious"}
    assert all(c["decide"]["user"] == {"decision": "approve", "tool": c["decide"]["tool"], "by": "auto", "why": ""}
               for c in recs)
    p = cli("world", "run", "market", "--auto-approve", "bold", "--auto-reject", "bold", check_rc=2)
    assert "not allowed with argument" in p.stderr  # the three flags exclude one another
