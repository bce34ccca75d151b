"""The headless CLI: sessions, resume, the other sub-commands, and bad input (exit 2)."""

import json
import sqlite3
from pathlib import Path

import pytest


def test_run_then_resume_continues_where_run_stopped(cli, tmp_path):
    first = json.loads(cli("agent", "run", "--scenario", "solar", "--max-cycles", "7", "--json").stdout)
    assert first["cycle"] == 7 and first["cycles_run"] == 7
    second = json.loads(cli("agent", "resume", "--max-cycles", "5", "--json").stdout)
    assert [c["cycle"] for c in second["cycles"]] == [8, 9, 10, 11, 12]
    # the resumed run is the same as one uninterrupted run
    whole = json.loads(cli("agent", "run", "--scenario", "solar", "--max-cycles", "12", "--json", data_dir=tmp_path / "w").stdout)
    assert whole["cycles"][7:] == second["cycles"]
    assert whole["goals"] == second["goals"]


def test_run_continues_an_unfinished_session_unless_fresh(cli):
    cli("agent", "run", "--scenario", "solar", "--max-cycles", "3", "--json")
    again = json.loads(cli("agent", "run", "--scenario", "solar", "--max-cycles", "2", "--json").stdout)
    assert again["cycle"] == 5
    fresh = json.loads(cli("agent", "run", "--scenario", "solar", "--max-cycles", "2", "--json", "--fresh").stdout)
    assert fresh["cycle"] == 2


def test_goals_flag_replaces_the_scenario_goals(cli):
    out = json.loads(cli("agent", "run", "--scenario", "zoo", "--goals", "Find mammals, Find birds", "--max-cycles", "20", "--json").stdout)
    assert [g["description"] for g in out["goals"]] == ["Find mammals", "Find birds"]
    assert all(g["status"] == "completed" for g in out["goals"])


def test_cycle_plan_reflect_consolidate_recall(cli):
    out = json.loads(cli("agent", "cycle", "--goal", "Find mammals", "--json").stdout)
    assert out["cycles_run"] == 1 and out["goals"][-1]["description"] == "Find mammals"
    plan = json.loads(cli("agent", "plan", "--goal", "Classify whales", "--json").stdout)
    assert plan["flags"]["reasoning"] is True
    assert [s["tool"] for s in plan["plan"]["steps"]][:1] == ["kg_query"]
    assert plan["plan"]["steps"][0]["marker"] == ">"
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "12", "--fresh")
    refl = json.loads(cli("agent", "reflect", "--json").stdout)
    assert refl["type"] == "reflection" and "tool_rates" in refl
    cons = json.loads(cli("agent", "consolidate", "--json").stdout)
    assert cons["type"] == "consolidation" and cons["episodes"]
    rec = json.loads(cli("agent", "recall", "--query", "mammal", "--top-k", "3", "--json").stdout)
    assert rec["symbols"] == ["mammal"]
    assert rec["episodes"] and all("mammal" in e["learnings"] for e in rec["episodes"])


def test_tools_lists_eleven_with_dangerous_ones_off(cli):
    rows = json.loads(cli("tools", "--json").stdout)
    assert len(rows) == 11
    by = {r["tool"]: r for r in rows}
    assert by["shell_exec"]["danger"] == "critical" and by["shell_exec"]["default"].startswith("off")
    assert by["http_fetch"]["default"].startswith("off") and by["file_io"]["default"].startswith("off")
    assert by["kg_query"]["default"] == "on"


def test_psyche_check(cli, tmp_path):
    good = cli("psyche", "check", str(__import__("akh_tui.engine.runs.scenario", fromlist=["x"]).bundled_data_dir() / "psyche" / "default.toml"))
    assert "ok" in good.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[archetypes]\nsage = 0.7\nhealer = 2.5\n")
    proc = cli("psyche", "check", str(bad), check_rc=2)
    assert "bad.toml:3" in proc.stderr and "archetypes.healer" in proc.stderr


@pytest.mark.parametrize(
    "args, expect",
    [
        (["agent", "run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["agent", "run", "--max-cycles", "-3"], "--max-cycles"),
        (["agent", "run", "--max-cycles", "many"], "--max-cycles"),
        (["agent", "run", "--goals", " , "], "--goals"),
        (["agent", "run", "--trace", "no/such/dir/t.jsonl"], "--trace"),
        (["agent", "resume"], "no session to resume"),
        (["agent", "recall", "--query", "x", "--top-k", "0"], "--top-k"),
        (["agent", "frobnicate"], "invalid choice"),
    ],
)
def test_bad_flags_exit_2_with_a_message(cli, args, expect):
    proc = cli(*args, check_rc=2)
    assert expect in proc.stderr
    assert "Traceback" not in proc.stderr


def test_malformed_triple_file_names_file_and_line_and_loads_nothing(cli, tmp_path):
    (tmp_path / "g.tsv").write_text("whale\tis-a\tmammal\n# comment\nwhale\tis-a\n")
    (tmp_path / "s.toml").write_text('name = "x"\nkg = ["g.tsv"]\n[[goals]]\ndescription = "Find whales"\n')
    proc = cli("agent", "run", "--scenario", "s.toml", check_rc=2)
    assert "g.tsv:3" in proc.stderr and "found 2" in proc.stderr
    assert not (tmp_path / "data" / "session.db").exists() or "session" not in _tables(tmp_path / "data" / "session.db")


def _tables(db):
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT key FROM meta")}
    finally:
        con.close()


@pytest.mark.parametrize(
    "toml, where, field",
    [
        ('name = "x"\nkg = ["g.tsv"]\ncolour = 1\n[[goals]]\ndescription = "a"\n', "s.toml:3", "colour"),
        ('name = "x"\nkg = ["g.tsv"]\n[[goals]]\ndescription = "a"\npriority = 300\n', "s.toml:5", "goals[0].priority"),
        ('name = "x"\nkg = ["g.tsv"]\n[[goals]]\ndescription = "a"\ncriteria = "(a b)"\n', "s.toml:5", "goals[0].criteria"),
        ('name = "x"\nkg = ["missing.tsv"]\n[[goals]]\ndescription = "a"\n', "s.toml:2", "kg[0]"),
        ('name = "x"\nkg = ["g.tsv"]\n[[goals]]\ndescription = "a"\n[config]\nwm_capacity = "big"\n', "s.toml:6", "config.wm_capacity"),
        ('name = "x"\nkg = ["g.tsv"]\n[[goals]]\ndescription = "a"\n[config.capabilities]\nteleport = true\n', "s.toml:6", "config.capabilities.teleport"),
        ('name = "x"\nkg = ["g.tsv"\n', "s.toml:", None),
        ('kg = ["g.tsv"]\n[[goals]]\ndescription = "a"\n', "s.toml", "name"),
    ],
)
def test_bad_scenario_names_file_line_and_field(cli, tmp_path, toml, where, field):
    (tmp_path / "g.tsv").write_text("whale\tis-a\tmammal\n")
    (tmp_path / "s.toml").write_text(toml)
    proc = cli("agent", "run", "--scenario", "s.toml", check_rc=2)
    assert where in proc.stderr
    if field:
        assert f"field '{field}'" in proc.stderr


def test_corrupt_session_store_is_reported_and_left_untouched(cli, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    junk = b"this is not a database" * 100
    (data / "session.db").write_bytes(junk)
    proc = cli("agent", "run", "--scenario", "zoo", check_rc=2)
    assert "session store cannot be read" in proc.stderr and "left untouched" in proc.stderr
    assert (data / "session.db").read_bytes() == junk


def test_human_output_shows_cycles_and_goal_table(cli):
    out = cli("agent", "run", "--scenario", "zoo", "--max-cycles", "30").stdout
    assert "Goals" in out and "completed" in out and "[score=" in out


def _tools_at(tmp_path, columns: str, *args: str):
    import os
    import subprocess
    import sys

    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS=columns)
    return subprocess.run([sys.executable, "-m", "akh_tui.cli", "tools", *args], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)


def test_tools_reads_whole_at_80_columns_and_in_a_pipe(tmp_path):
    # issue 28: the table cut every column to ~7 characters
    proc = _tools_at(tmp_path, "80")
    assert proc.returncode == 0, proc.stderr
    assert "forward-chains the rule file over new triples" in proc.stdout
    assert "off: process_exec" in proc.stdout and "gap_analysis" in proc.stdout
    assert max(len(line) for line in proc.stdout.splitlines()) <= 120  # the protection line may run long
    wide = _tools_at(tmp_path, "200")
    assert "┃ tool" in wide.stdout  # wide enough: the table


def test_tools_scenario_lists_its_plugin_tools(tmp_path):
    import shutil
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[2] / "examples" / "akh-tui-tides" / "akh_tides"
    d = tmp_path / "sc"
    d.mkdir()
    shutil.copy(pkg / "scenarios" / "harbour.tsv", d)
    shutil.copy(pkg / "tool.py", d / "tidetool.py")
    (d / "harbour.toml").write_text('name = "harbour"\nkg = ["harbour.tsv"]\ntools = ["tidetool:make_tool", "nosuch:make"]\n'
                                    '[[goals]]\ndescription = "Find the tide times at kestrel"\n')
    refused = _tools_at(tmp_path, "80", "--scenario", str(d / "harbour.toml"))  # issue 23: nothing imported unasked
    assert refused.returncode == 0 and "tide_table  (explorer" not in refused.stdout
    assert "tidetool:make_tool: not imported" in refused.stderr
    proc = _tools_at(tmp_path, "80", "--scenario", str(d / "harbour.toml"), "--allow-plugins")
    assert proc.returncode == 0, proc.stderr
    assert "tide_table  (explorer, safe, on)" in proc.stdout
    assert "from: scenario harbour.toml: tidetool:make_tool" in proc.stdout
    assert "warning: plugin scenario harbour.toml: nosuch:make: cannot import nosuch" in proc.stderr
    rows = json.loads(_tools_at(tmp_path, "200", "--scenario", str(d / "harbour.toml"), "--json",
                                "--allow-plugins").stdout)
    assert [r["tool"] for r in rows][-1] == "tide_table" and len(rows) == 12
    bad = _tools_at(tmp_path, "80", "--scenario", str(tmp_path / "missing.toml"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_scenario_that_leaves_no_tool_to_offer_is_an_error_naming_the_setting(cli, tmp_path):
    """Every tool disabled is refused when the file is read; all but one that is never offered
    (shell_exec with no allow-list) stops at the first cycle with exit 2, no traceback."""
    from akh_tui.engine.tools.builtins import TOOL_NAMES

    kg = Path(__file__).resolve().parents[2] / "akh_tui" / "data" / "kg" / "zoo.tsv"

    def scenario(disabled: list[str]) -> Path:
        p = tmp_path / f"s{len(disabled)}.toml"
        p.write_text(f'name = "s"\nseed = 1\nkg = ["{kg}"]\n[config]\ndisabled_tools = {json.dumps(disabled)}\n'
                     '[[goals]]\ndescription = "Find mammals"\n')
        return p

    every = scenario(list(TOOL_NAMES))
    p = cli("agent", "run", "--scenario", str(every), "--max-cycles", "1", check_rc=2)
    assert f"{every}:5: field 'config.disabled_tools': disables every tool" in " ".join(p.stderr.split())
    p = cli("agent", "run", "--scenario", str(scenario([t for t in TOOL_NAMES if t != "shell_exec"])),
            "--max-cycles", "1", check_rc=2)
    assert "field 'config.disabled_tools': no tool is offered this cycle" in " ".join(p.stderr.split())
    assert "Traceback" not in p.stderr
