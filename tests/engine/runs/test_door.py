"""The one door to a run (engine/runs/run.py), as users found it broken at the seams: a fork's edits
are its branch's state, every run has a workspace, traces do not depend on the data dir, the
psyche is saved where the next run finds it, and the small counts read the same everywhere."""

from __future__ import annotations

import json
from pathlib import Path

from akh_tui.engine.paths import bundled_data_dir
from akh_tui.engine import Locations, Run
from akh_tui.engine.store.trace import read_trace
from akh_tui.tui.panes import PsychePane
from akh_tui.tui.psyche_editor import PsycheEditorScreen

ROOT = Path(__file__).resolve().parents[3]
DATA = bundled_data_dir()
from tests.helpers import drive


def no_veto_psyche() -> str:
    """The default psyche with its veto removed, as a user would edit it."""
    text = (DATA / "psyche" / "default.toml").read_text()
    a, b = text.index("[[shadow.veto_patterns]]"), text.index("# A bias lets")
    return text[:a].replace("[shadow]\n", "[shadow]\nveto_patterns = []\n", 1) + text[b:]


def offered(rec: dict, tool: str) -> bool:
    return next(c for c in rec["decide"]["candidates"] if c["tool"] == tool)["offered"]


# ---- 1. a fork's edits are its branch's state ----------------------------------------------------
def test_a_forks_disabled_tool_stays_disabled_after_resume_in_the_cli(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "1")
    cli("agent", "fork", "--at", "1", "--name", "nokg", "--disable", "kg_query")
    out = json.loads(cli("agent", "resume", "--max-cycles", "3", "--json").stdout)
    assert [c["cycle"] for c in out["cycles"]] == [2, 3, 4]
    assert all(c["tool"] != "kg_query" for c in out["cycles"])
    cli("sessions", "export", "1", "--branch", "nokg", "-o", "nokg.jsonl")
    trace = read_trace(tmp_path / "nokg.jsonl")
    assert [e["edits"] for e in trace.events if e["type"] == "fork"] == [["kg_query disabled"]]
    assert [offered(r, "kg_query") for r in trace.cycles] == [True, False, False, False]
    # switching away and back keeps it too
    cli("agent", "resume", "--branch", "main", "--max-cycles", "1")
    again = json.loads(cli("agent", "resume", "--branch", "nokg", "--max-cycles", "1", "--json").stdout)
    assert again["cycles"][0]["tool"] != "kg_query"
    cli("sessions", "export", "1", "--branch", "nokg", "-o", "nokg2.jsonl")
    assert not offered(read_trace(tmp_path / "nokg2.jsonl").cycles[-1], "kg_query")


def test_a_forks_edits_hold_after_rewind_switch_and_resume_in_the_workbench(workbench, tmp_path):
    data = tmp_path / "data"

    async def fork_and_quit(app, pilot):
        await pilot.press("space", "space")
        app.fork(2, "nokg", {"disable_tools": ["kg_query"], "archetypes": {"explorer": 0.9}})
        await pilot.press("space")
        assert not offered(app.ctl.latest, "kg_query")
        app.ctl.switch("main")
        app.ctl.switch("nokg")  # the branch's newest state, from the store
        await pilot.press("space")
        assert not offered(app.ctl.latest, "kg_query") and app.ctl.cycle == 4
        # a rewind of the branch (snapshot + replayed inputs) has the edit too
        assert app.ctl.timeline().rewind(3).config.disabled_tools == ["kg_query"]

    drive(workbench("zoo", data_dir=data), fork_and_quit)

    async def resumed(app, pilot):
        assert app.ctl.branch_name == "nokg" and app.ctl.cycle == 4
        await pilot.press("space")
        assert not offered(app.ctl.latest, "kg_query")
        assert app.ctl.current_psyche().archetypes["explorer"] == 0.9

    drive(workbench("zoo", data_dir=data, resume=True), resumed)


# ---- 2. every run has its workspace; the shadow demo's promise ------------------------------------
def test_every_run_has_a_workspace_under_the_data_dir(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = Run.start(loc, "zoo")
    try:
        assert r.workspace == tmp_path / "data" / "workspaces" / f"run-{r.run_id}" and r.workspace.is_dir()
        assert r.agent.workspace == r.workspace
    finally:
        r.close()
    second = Run.start(loc, "zoo")
    assert second.workspace != r.workspace and second.workspace.is_dir()
    second.close()


def test_the_shadow_demo_runs_echo_once_the_veto_is_removed_in_the_workbench(workbench):
    async def script(app, pilot):
        # as the scenario says: remove the veto in the psyche editor and apply it
        app.action_edit_psyche()
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, PsycheEditorScreen)
        editor._text_area.load_text(no_veto_psyche())
        await pilot.press("ctrl+s", "escape")
        for _ in range(8):
            await pilot.press("space")
            rec = app.ctl.latest
            if rec["decide"]["tool"] == "shell_exec":
                break
        assert rec["decide"]["tool"] == "shell_exec" and not rec["act"]["vetoed"]
        assert rec["act"]["output"].startswith("$ echo plankton\nplankton")
        assert rec["act"]["progress"] == "completed"
        assert next(g for g in app.ctl.view()["goals"] if g["id"] == 1)["status"] == "completed"

    drive(workbench("shadow"), script)


def test_the_shadow_demo_runs_echo_in_the_cli_on_a_fork_without_the_veto(cli, tmp_path):
    (tmp_path / "noveto.toml").write_text(no_veto_psyche())
    first = json.loads(cli("agent", "run", "--scenario", "shadow", "--max-cycles", "4", "--json").stdout)
    assert first["cycles"][-1]["vetoed"] and first["cycles"][-1]["tool"] == "shell_exec"
    cli("agent", "fork", "--at", "3", "--name", "noveto", "--psyche", "noveto.toml")
    out = json.loads(cli("agent", "resume", "--max-cycles", "1", "--json").stdout)
    c = out["cycles"][0]
    assert (c["tool"], c["vetoed"], c["progress"]) == ("shell_exec", False, "completed")
    assert out["goals"][0]["status"] == "completed"


# ---- 3. traces are the same bytes wherever the data dir is ---------------------------------------
def test_traces_do_not_depend_on_the_data_dir(cli, tmp_path):
    # a scenario whose file_io refuses and whose shell runs: outputs that name paths
    sc = tmp_path / "paths.toml"
    sc.write_text((DATA / "scenarios" / "shadow.toml").read_text()
                  .replace('"../kg/zoo.tsv"', json.dumps(str(DATA / "kg" / "zoo.tsv")))
                  .replace('"../rules/biology.toml"', json.dumps(str(DATA / "rules" / "biology.toml")))
                  .replace("process_exec = true", "process_exec = true\nread_fs = true\nwrite_fs = true")
                  .replace('[config]', '[[goals]]\ndescription = "Read notes.tsv and ../../etc/passwd"\n\n[config]'))
    for d in ("one", "two/deeper"):
        cli("agent", "run", "--scenario", str(sc), "--max-cycles", "12", "--trace", f"{d.replace('/', '_')}.jsonl",
            data_dir=tmp_path / d)
    one, two = (tmp_path / "one.jsonl").read_bytes(), (tmp_path / "two_deeper.jsonl").read_bytes()
    assert one == two
    assert str(tmp_path) not in one.decode()


# ---- 4. the psyche is saved under the data dir and used next time --------------------------------
def test_saving_the_psyche_writes_under_the_data_dir_and_the_next_run_starts_from_it(workbench, tmp_path):
    data = tmp_path / "data"
    saved = data / "psyche" / "zoo.toml"

    async def edit_and_save(app, pilot):
        assert not saved.exists()
        app.action_edit_psyche()
        await pilot.pause()
        editor = app.screen
        assert editor.path == saved
        editor._text_area.load_text(no_veto_psyche().replace("sage = 0.7", "sage = 0.8"))
        await pilot.press("ctrl+w")
        await pilot.pause()
        assert saved.is_file() and "sage = 0.8" in saved.read_text()
        assert "veto_patterns = []" in saved.read_text()  # the user's text, comments and all

    drive(workbench("zoo", data_dir=data), edit_and_save)

    async def next_run(app, pilot):
        assert app.ctl.current_psyche().archetypes["sage"] == 0.8
        assert f"psyche from {saved}" in app.last_event
        assert "psyche from" in str(app.query_one("#status").render())
        # a reset is a new run of the scenario: still the saved psyche
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.ctl.current_psyche().archetypes["sage"] == 0.8

    drive(workbench("zoo", data_dir=data), next_run)
    # the CLI starts from it too
    r = Run.start(Locations(data, tmp_path / "config.toml"), "zoo")
    assert r.current_psyche().archetypes["sage"] == 0.8 and "saved earlier" in r.note
    r.close()


def test_a_psyche_file_changed_on_disk_is_not_overwritten_without_asking(workbench, tmp_path):
    data = tmp_path / "data"
    saved = data / "psyche" / "zoo.toml"
    saved.parent.mkdir(parents=True)
    saved.write_text(no_veto_psyche())

    async def script(app, pilot):
        saved.write_text(no_veto_psyche().replace("guardian = 0.4", "guardian = 0.9"))  # someone else's edit
        app.action_edit_psyche()
        await pilot.pause()
        await pilot.press("ctrl+w")
        await pilot.pause()
        assert "guardian = 0.9" in saved.read_text()  # kept: the user was asked first
        assert any("changed on disk" in str(n.message) for n in app._notifications)
        await pilot.press("ctrl+w")  # asked and confirmed
        await pilot.pause()
        assert "guardian = 0.4" in saved.read_text()

    drive(workbench("zoo", data_dir=data), script)


# ---- 7. the small things at the seams --------------------------------------------------------------
def test_patterns_configured_and_vetoes_fired_read_the_same_live_replayed_and_opened(workbench, cli, tmp_path):
    data = tmp_path / "data"
    texts = {}

    async def script(app, pilot):
        for _ in range(4):
            await pilot.press("space")
        assert app.ctl.latest["act"]["vetoed"]
        texts["live"] = str(app.query_one(PsychePane).render()) + str(app.query_one("#psyche-box").border_subtitle)
        await pilot.press("comma", "full_stop")  # replay cycle 4 (back one, forward one)
        await pilot.press("comma")
        await pilot.press("full_stop")
        app._seek(4)
        await pilot.pause()
        texts["replay"] = str(app.query_one(PsychePane).render()) + str(app.query_one("#psyche-box").border_subtitle)

    drive(workbench("shadow", data_dir=data), script)
    cli("sessions", "export", "1", "-o", "shadow.jsonl", data_dir=data)

    async def opened(app, pilot):
        texts["opened"] = str(app.query_one(PsychePane).render()) + str(app.query_one("#psyche-box").border_subtitle)

    drive(workbench(trace_file=tmp_path / "shadow.jsonl"), opened)
    for where, text in texts.items():
        assert "1 veto · 1 bias configured" in text and "vetoes fired 1" in text, (where, text)


def test_sessions_list_counts_the_goals_of_a_run_without_cycles(cli, tmp_path):
    r = Run.start(Locations(tmp_path / "data", tmp_path / "config.toml"), "zoo")
    r.close()
    runs = json.loads(cli("sessions", "list", "--json").stdout)
    assert (runs[0]["goals_done"], runs[0]["goals_top"]) == (0, 3)
    assert "0/3" in cli("sessions", "list").stdout


def test_resume_on_an_empty_data_dir_leaves_nothing_behind(cli, tmp_path):
    proc = cli("--resume", check_rc=2)
    assert "no session to resume" in proc.stdout + proc.stderr
    assert not (tmp_path / "data" / "session.db").exists()
    proc = cli("agent", "resume", check_rc=2)
    assert not (tmp_path / "data" / "session.db").exists()


def test_sessions_export_json_prints_a_summary(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "3")
    out = json.loads(cli("sessions", "export", "1", "-o", "t.jsonl", "--json").stdout)
    assert out == {"run": 1, "branch": "main", "cycles": 3, "file": "t.jsonl"}
    lines = cli("sessions", "export", "1", "--json").stdout.splitlines()
    assert json.loads(lines[0])["type"] == "run" and sum(json.loads(x)["type"] == "cycle" for x in lines) == 3


def test_a_workspace_holding_the_session_store_is_refused(tmp_path):
    import pytest

    from akh_tui.engine import InputError

    sc = tmp_path / "ws.toml"
    sc.write_text((DATA / "scenarios" / "shadow.toml").read_text()
                  .replace('"../kg/zoo.tsv"', json.dumps(str(DATA / "kg" / "zoo.tsv")))
                  .replace('"../rules/biology.toml"', json.dumps(str(DATA / "rules" / "biology.toml")))
                  .replace("[config]", f"[config]\nworkspace = {json.dumps(str(tmp_path))}"))
    with pytest.raises(InputError, match="session store"):
        Run.start(Locations(tmp_path / "data", tmp_path / "config.toml"), str(sc))


def test_risky_allow_listed_programs_are_named_when_the_run_starts(cli, tmp_path):
    sc = tmp_path / "risky.toml"
    sc.write_text((DATA / "scenarios" / "shadow.toml").read_text()
                  .replace('"../kg/zoo.tsv"', json.dumps(str(DATA / "kg" / "zoo.tsv")))
                  .replace('"../rules/biology.toml"', json.dumps(str(DATA / "rules" / "biology.toml")))
                  .replace('shell_allow = ["echo"]', 'shell_allow = ["echo", "env"]'))
    proc = cli("agent", "run", "--scenario", str(sc), "--max-cycles", "1")
    assert "warning:" in proc.stderr and "'env'" in proc.stderr


def test_an_editor_apply_parses_the_users_text_once_and_a_rewind_rebuilds_the_same_psyche(tmp_path, monkeypatch):
    """The editor validates the text (one parse by each TOML library); applying it must not parse
    it again (text -> Psyche -> text -> Psyche was two of each), and the psyche the live run takes
    is the one a rewind, which has only the recorded text, builds from it."""
    import tomllib

    import tomlkit

    from akh_tui.engine import Psyche

    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = Run.start(loc, "shadow")
    try:
        r.step()
        text = no_veto_psyche()
        parses: list[str] = []
        real_loads, real_parse = tomllib.loads, tomlkit.parse

        def loads(s, *a, **k):
            parses.append("tomllib")
            return real_loads(s, *a, **k)

        def parse(s, *a, **k):
            parses.append("tomlkit")
            return real_parse(s, *a, **k)

        monkeypatch.setattr(tomllib, "loads", loads)
        monkeypatch.setattr(tomlkit, "parse", parse)
        psyche = Psyche.from_toml(text)  # what the editor's validate does
        r.edit_psyche(psyche)  # what its apply does
        monkeypatch.undo()
        assert sorted(parses) == ["tomlkit", "tomllib"]
        r.step()
        live = r.agent.psyche
        assert live == Psyche.from_toml(text) and not live.shadow.veto_patterns
        assert live.to_toml() == Psyche.from_toml(psyche.to_toml()).to_toml()
        r.step()
        # a rewind rebuilds cycle 2 from the recorded text alone: the same psyche as the live run's
        assert r.cycle == 3 and r.rewind(1)["psyche"]["vetoes"] == ["destructive_action"]
        assert r.rewind(2)["psyche"] == r.rewind(3)["psyche"] == r.view()["psyche"]
        assert r.view()["psyche"]["vetoes"] == []
    finally:
        r.close()
