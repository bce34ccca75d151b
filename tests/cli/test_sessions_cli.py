"""`akh-tui sessions …` and `agent fork` as a user runs them: runs are kept, branches forked and
resumed, traces exported and imported, bad input refused with the field named."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from akh_tui.engine.store.trace import read_trace


def test_runs_are_kept_and_listed_with_their_branches(cli, tmp_path):
    cli("agent", "run", "--scenario", "solar", "--max-cycles", "8")
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "3", "--fresh")
    runs = json.loads(cli("sessions", "list", "--json").stdout)
    assert [(r["id"], r["name"]) for r in runs] == [(1, "solar"), (2, "zoo")]
    assert runs[1]["branches"][0]["current"] and not runs[0]["branches"][0]["current"]
    table = cli("sessions", "list").stdout  # every column has a heading (the last one had none)
    header = next(line for line in table.splitlines() if "scenario" in line)
    assert header.rstrip("┃│ ").endswith("note"), header
    # fork run 2 (the current one) and continue the branch
    event = json.loads(cli("agent", "fork", "--at", "1", "--name", "bold", "--set", "explorer=0.9", "--json").stdout)
    assert event == {"type": "fork", "v": 1, "cycle": 1, "branch": "bold", "parent": "main", "edits": ["explorer weight 0.9"]}
    out = json.loads(cli("agent", "resume", "--max-cycles", "2", "--json").stdout)
    assert [c["cycle"] for c in out["cycles"]] == [2, 3]
    shown = json.loads(cli("sessions", "show", "2", "--json").stdout)
    branches = {b["name"]: b for b in shown["branches"]}
    assert branches["bold"]["parent"] == "main" and branches["bold"]["fork_cycle"] == 1
    assert branches["bold"]["edits"] == ["explorer weight 0.9"] and branches["bold"]["current"]
    # resume another branch by name: it becomes the current one
    out = json.loads(cli("agent", "resume", "--branch", "main", "--max-cycles", "1", "--json").stdout)
    assert out["cycles"][0]["cycle"] == 4
    assert json.loads(cli("sessions", "show", "2", "--json").stdout)["branches"][0]["current"]


def test_export_import_and_search_round_trip(cli, tmp_path):
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "6", "--trace", "direct.jsonl")
    cli("sessions", "export", "1", "-o", "exported.jsonl")
    exported = read_trace(tmp_path / "exported.jsonl")
    direct = read_trace(tmp_path / "direct.jsonl")
    assert exported.cycles == direct.cycles  # the store gives back the records the run wrote
    assert [e["type"] for e in exported.events] == [e["type"] for e in direct.events]
    assert exported.header["scenario"] == "shadow" and exported.header["seed"] == direct.header["seed"]
    imported = json.loads(cli("sessions", "import", "exported.jsonl", "--json").stdout)
    assert imported == {"run": 2, "cycles": 6, "events": len(direct.events)}
    hits = json.loads(cli("sessions", "search", "2", "veto", "--json").stdout)
    assert [h["cycle"] for h in hits] == [4] and hits[0]["tool"] == "shell_exec"
    # an imported run is replayed, never resumed
    listed = json.loads(cli("sessions", "list", "--json").stdout)
    assert listed[1]["imported_from"] == "exported.jsonl"
    gone = json.loads(cli("sessions", "delete", "2", "--json").stdout)
    assert gone == {"deleted": 2, "branches": 1}
    assert [r["id"] for r in json.loads(cli("sessions", "list", "--json").stdout)] == [1]


def test_bad_input_names_the_field_and_changes_nothing(cli, tmp_path):
    assert "no session store" in cli("sessions", "list", check_rc=2).stderr
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "4")
    before = cli("sessions", "show", "1", "--json").stdout
    for argv, words in [
        (("sessions", "show", "9"), "no run 9"),
        (("sessions", "export", "1", "--branch", "nope"), "no branch 'nope'"),
        (("sessions", "search", "1", "progress=sideways"), "progress"),
        (("agent", "fork", "--at", "2", "--name", "x", "--set", "explorer=2"), "explorer"),
        (("agent", "fork", "--at", "2", "--name", "x", "--set", "hero=0.5"), "hero"),
        (("agent", "fork", "--at", "2", "--name", "x", "--disable", "teleport"), "teleport"),
        (("agent", "fork", "--at", "99", "--name", "x"), "outside"),
        (("agent", "fork", "--at", "2", "--name", "main"), "already has a branch"),
        (("agent", "resume", "--branch", "nope"), "no branch 'nope'"),
    ]:
        err = cli(*argv, check_rc=2).stderr
        assert words in err, (argv, err)
    assert cli("sessions", "show", "1", "--json").stdout == before
    (tmp_path / "bad.jsonl").write_text('{"type":"run","v":1,"scenario":"zoo","seed":1}\n{"type":"cycle","v":1}\n')
    err = cli("sessions", "import", "bad.jsonl", check_rc=2).stderr
    assert "bad.jsonl:2" in err and "cycle" in err
    assert [r["id"] for r in json.loads(cli("sessions", "list", "--json").stdout)] == [1]


def test_a_refused_fork_edit_names_its_flag(cli):
    """The error names the flag that filled the refused edit, whatever words the message holds
    (a tool named like an archetype was once blamed on --set)."""
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "3")
    for argv, flag in [
        (("--set", "explorer=2"), "--set"),
        (("--disable", "archetype_tool"), "--disable"),
        (("--disable", "archetypes"), "--disable"),
        (("--name", "  "), "--name"),
    ]:
        name = () if "--name" in argv else ("--name", "x")
        err = json.loads(cli("agent", "fork", "--at", "2", *name, *argv, "--json", check_rc=2).stderr)
        assert err["field"] == flag, (argv, err)


def test_compare_two_branches_headless(cli):
    cli("agent", "run", "--scenario", "solar", "--max-cycles", "12")
    cli("agent", "fork", "--at", "4", "--name", "bold", "--set", "explorer=0.95", "--set", "sage=0.1")
    cli("agent", "resume", "--max-cycles", "8")
    result = json.loads(cli("sessions", "compare", "1", "1:bold", "--json").stdout)
    first = result["first_divergence"]
    assert (result["a_name"], result["b_name"]) == ("1:main", "1:bold")
    assert first["cycle"] == 6 and first["a"]["tool"] != first["b"]["tool"]
    assert result["first_difference"]["cycle"] == 5 and result["first_difference"]["same_choice"]
    assert result["a"]["cycles"] == result["b"]["cycles"] == 12
    text = cli("sessions", "compare", "1", "1:bold").stdout
    assert "first divergence at cycle 6" in text and first["b"]["tool"] in text
    assert "no branch 'nope'" in cli("sessions", "compare", "1", "1:nope", check_rc=2).stderr


def test_a_reader_that_goes_away_ends_export_and_run_quietly(cli, tmp_path):
    """`sessions export | head` and `agent run | head`: the reader closes the pipe; the command
    ends with exit 1 and no traceback, and what was recorded stays readable."""
    cli("agent", "run", "--scenario", "solar", "--max-cycles", "20")
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"))
    cmd = f"{sys.executable} -m akh_tui.cli"
    for what in ("sessions export 1", "agent run --scenario solar --max-cycles 300"):
        proc = subprocess.run(["bash", "-c", f"{cmd} {what} 2>{tmp_path}/err | head -c 50 >/dev/null; "
                               "exit ${PIPESTATUS[0]}"], env=env, timeout=120)
        err = (tmp_path / "err").read_text()
        assert "Traceback" not in err and "Exception ignored" not in err, err
        assert proc.returncode == 1, (what, proc.returncode, err)
    runs = {r["id"]: r for r in json.loads(cli("sessions", "list", "--json").stdout)}
    assert list(runs) == [1]  # the run was continued, not replaced
    assert runs[1]["branches"][0]["last_cycle"] > 20  # with the cycles written before the pipe closed
