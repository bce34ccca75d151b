"""Headless person in the loop: `agent run --approve` asks on the terminal, `--auto-approve`
and `--auto-reject` decide for scripts, `--ask` puts user_interact's question to the terminal;
decisions are recorded, so a resumed session and a rewind reproduce them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ASK_GOAL = "Ask user: tell me about whale answer question"


def _run(tmp_path, *args, stdin: str = ""):
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "akh_tui.cli", "agent", "run", "--fresh", *args],
                          cwd=tmp_path, env=env, input=stdin, capture_output=True, text=True, timeout=120)


def _vetoes(proc) -> list:
    assert proc.returncode == 0, proc.stderr
    return [(c["cycle"], c["tool"], c["veto"]) for c in json.loads(proc.stdout)["cycles"] if c["vetoed"]]


def test_auto_reject_is_the_users_veto(tmp_path):
    p = _run(tmp_path, "--scenario", "shadow", "--max-cycles", "14", "--auto-reject", "--json")
    assert _vetoes(p) == [(4, "shell_exec", "user"), (13, "shell_exec", "user")]


def test_auto_approve_lets_the_shadow_decide(tmp_path):
    p = _run(tmp_path, "--scenario", "shadow", "--max-cycles", "14", "--auto-approve", "--json")
    assert _vetoes(p) == [(4, "shell_exec", "destructive_action"), (13, "shell_exec", "destructive_action")]


def test_approve_asks_on_the_terminal_and_the_trace_records_the_decision(tmp_path):
    trace = tmp_path / "t.jsonl"
    p = _run(tmp_path, "--scenario", "shadow", "--max-cycles", "14", "--approve", "--trace", str(trace),
             stdin="x\nr\na\n")
    assert p.returncode == 0, p.stderr
    assert "cycle 4: shell_exec(echo plankton) waits for approval" in p.stderr
    assert "answer a, r or e" in p.stderr  # 'x' is not an answer: asked again
    assert "VETOED by the user" in p.stdout
    recs = {r["cycle"]: r for r in map(json.loads, trace.read_text().splitlines()) if r.get("type") == "cycle"}
    assert recs[4]["act"]["approval"]["decision"] == "reject" and recs[13]["act"]["approval"] == {"decision": "approve"}


def test_approve_with_no_terminal_input_rejects(tmp_path):
    p = _run(tmp_path, "--scenario", "shadow", "--max-cycles", "5", "--approve", "--json")
    assert _vetoes(p) == [(4, "shell_exec", "user")]


def test_approve_rules_from_the_user_config(tmp_path):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[approve]\nwhen = ["tool=kg_query"]\n')
    env_cfg = os.environ.get("AKH_TUI_CONFIG")
    os.environ["AKH_TUI_CONFIG"] = str(cfg)
    try:
        p = _run(tmp_path, "--scenario", "zoo", "--max-cycles", "4", "--auto-reject", "--json")
    finally:
        if env_cfg is None:
            os.environ.pop("AKH_TUI_CONFIG")
        else:
            os.environ["AKH_TUI_CONFIG"] = env_cfg
    assert [v[1:] for v in _vetoes(p)] == [("kg_query", "user")]


def test_ask_puts_the_question_to_the_terminal(tmp_path):
    trace = tmp_path / "ask.jsonl"
    p = _run(tmp_path, "--goals", ASK_GOAL, "--max-cycles", "6", "--ask", "--json", "--trace", str(trace),
             stdin="whale krill\nwhale eats krill\n\n")
    assert p.returncode == 0, p.stderr
    assert "the agent asks: " + ASK_GOAL in p.stderr and "line 1" in p.stderr  # two words: refused, asked again
    last = json.loads(p.stdout)["cycles"][-1]
    assert last["tool"] == "user_interact"
    rec = [r for r in map(json.loads, trace.read_text().splitlines()) if r.get("type") == "cycle"][-1]
    assert rec["act"]["output"].endswith("answer: whale eats krill")
    without = _run(tmp_path, "--goals", ASK_GOAL, "--max-cycles", "6", "--json")
    assert "the agent asks" not in without.stderr  # headless keeps the scenario's answers (none here)


def test_flags_exclude_each_other(tmp_path):
    p = _run(tmp_path, "--approve", "--auto-reject")
    assert p.returncode == 2 and "not allowed with argument" in p.stderr


def test_phase_breakpoint_stops_the_next_cycle_before_the_phase_and_resume_goes_on(tmp_path):
    p = _run(tmp_path, "--max-cycles", "5", "--break", "phase=act", "--json")
    out = json.loads(p.stdout)
    assert out["cycles_run"] == 1 and out["stop"] == "stopped before act in cycle 2" and out["cycle"] == 1
    assert list(out["partial"]["results"]) == ["observe", "orient", "decide"]
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS="200")
    again = subprocess.run([sys.executable, "-m", "akh_tui.cli", "agent", "resume", "--max-cycles", "5",
                            "--break", "phase=act", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    nxt = json.loads(again.stdout)
    assert nxt["cycles"][0]["cycle"] == 2 and nxt["cycles"][0]["tool"] == out["partial"]["results"]["decide"]["tool"]
