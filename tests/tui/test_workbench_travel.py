"""Time travel as a workbench user does it: scrub back through recorded cycles (read-only),
fork a branch with a changed archetype weight and see it diverge in the compare view, stop a
running run with a breakpoint on a veto, search the history, replay a trace file."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.tui.app import Workbench
from akh_tui.tui.panes import ScoreTable
from akh_tui.tui.travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, Scrubber, SearchScreen
from akh_tui.engine.runs.userconfig import UserConfig
from tests.helpers import drive, text_of


def chosen_row(app) -> str:
    table = app.query_one(ScoreTable)
    for tool in table.rows:
        if str(table.get_cell(tool, "tool")).startswith("▶"):
            return tool.value
    return ""


def test_scrubbing_back_shows_each_recorded_cycle_read_only(workbench):
    async def script(app, pilot):
        await pilot.press(*["space"] * 6)
        records = {c: app.ctl.record(c) for c in range(1, 7)}
        await pilot.press("comma")
        assert app.replay == 5
        assert chosen_row(app) == records[5]["decide"]["tool"]
        status = text_of(app.query_one("#status"))
        assert " 5 " in status and "REPLAY (read-only)" in status
        await pilot.press("less_than_sign")  # ten back: clamped at the first cycle
        assert app.replay == 1 and chosen_row(app) == records[1]["decide"]["tool"]
        # nothing that would change the engine runs while a past cycle is shown
        await pilot.press("g", "e", "r")
        assert app.ctl.cycle == 6 and not app.running and app.screen is app.screen_stack[0]
        await pilot.press("space")  # stepping a replay moves through the records
        assert app.replay == 2 and app.ctl.cycle == 6
        await pilot.press("l")
        assert app.replay is None and "REPLAY" not in text_of(app.query_one("#status"))
        # a click on the timeline's first cell seeks to cycle 1, on its middle to the middle
        start, cells = app.scrubber._track
        await pilot.click(Scrubber, offset=(start, 0))
        assert app.replay == 1
        await pilot.click(Scrubber, offset=(start + cells // 2, 0))
        assert app.replay in (3, 4)
        await pilot.press("l", "space")
        assert app.ctl.cycle == 7

    drive(workbench("zoo"), script)


def test_fork_with_a_changed_archetype_weight_diverges_in_the_compare_view(workbench):
    async def script(app, pilot):
        await pilot.press(*["space"] * 10)
        await pilot.press(*["comma"] * 6)
        assert app.replay == 4
        await pilot.press("f")
        assert isinstance(app.screen, ForkScreen)
        await pilot.press("tab", *["backspace"] * 4, *"0.1", "tab", "tab", *["backspace"] * 4, *"0.95", "enter")
        assert not isinstance(app.screen, ForkScreen)
        assert app.replay is None and app.ctl.cycle == 4
        assert app.ctl.agent.psyche.archetypes["explorer"] == 0.95
        assert app.ctl.agent.psyche.archetypes["sage"] == 0.1
        await pilot.press(*["space"] * 6)
        branches = {b["name"]: b for b in app.ctl.branches()}
        assert branches["fork-4"]["current"] and branches["fork-4"]["fork_cycle"] == 4
        await pilot.press("b")
        assert isinstance(app.screen, BranchesScreen)
        await pilot.press("up", "c")
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        first = compare.result["first_divergence"]
        assert first is not None and first["cycle"] == 6 and first["a"]["tool"] != first["b"]["tool"]
        shown = " ".join(text_of(w) for w in compare.query("Static"))
        assert "first divergence at cycle 6" in shown
        assert first["a"]["tool"] in shown and first["b"]["tool"] in shown
        # and the branches can be switched: back to main, where it stood
        await pilot.press("escape")
        assert isinstance(app.screen, BranchesScreen)
        await pilot.press("enter")
        assert app.ctl.branch_name == "main" and app.ctl.cycle == 10

    drive(workbench("solar"), script)


def test_a_breakpoint_on_a_veto_stops_the_running_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    app = Workbench("shadow", config=UserConfig.load(tmp_path / "c.toml"))  # the real engine thread

    async def script(app, pilot):
        await pilot.press("k")
        assert isinstance(app.screen, BreakpointsScreen)
        await pilot.press(*"score < -1", "enter")  # accepted, never fires
        await pilot.press(*"veto=", "enter")  # refused: the text stays, the message says why
        assert app.breakpoint_specs == ["score < -1"]
        await pilot.press(*["backspace"] * 5, *"veto", "enter", "escape")
        assert app.breakpoint_specs == ["score < -1", "veto"]
        app.speed_index = len(app.speed_levels()) - 1
        await pilot.press("r")
        deadline = time.monotonic() + 10
        while (app.running or app.ctl.cycle == 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await pilot.pause(0.2)
        assert not app.running and app.ctl.cycle == 4  # shadow's destructive_action fires at cycle 4
        assert app.ctl.latest["act"]["vetoed"]
        assert "breakpoint 'veto' fired" in text_of(app.query_one("#status"))

    drive(app, script)


def test_breakpoints_from_the_config_file(tmp_path, workbench):
    cfg = tmp_path / "bp.toml"
    cfg.write_text('[breakpoints]\nstop = ["tool=reason"]\n')
    app = workbench("zoo", config_path=cfg)
    assert app.breakpoint_specs == ["tool=reason"]
    cfg.write_text('[breakpoints]\nstop = ["score <"]\n')
    bad = UserConfig.load(cfg)
    assert bad.breakpoints == [] and "breakpoints.stop" in bad.error and "bp.toml" in bad.error


def test_search_jumps_to_a_matching_cycle(workbench):
    async def script(app, pilot):
        await pilot.press(*["space"] * 8)
        await pilot.press("slash")
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"tool=nonsense", "enter")
        assert "nonsense" in " ".join(text_of(w) for w in app.screen.query("Static"))  # refused inline
        await pilot.press(*["backspace"] * 8, *"kg_query", "enter")
        hits = [c for c in range(1, 9) if app.ctl.record(c)["decide"]["tool"] == "kg_query"]
        assert hits
        await pilot.press("enter")  # the first hit
        assert app.replay == hits[0] and chosen_row(app) == "kg_query"

    drive(workbench("zoo"), script)


def test_a_trace_file_opens_for_replay_with_no_engine(tmp_path, cli):
    trace = tmp_path / "t.jsonl"
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "6", "--trace", str(trace))
    app = Workbench(trace_file=trace, sync=True, config=UserConfig.load(tmp_path / "c.toml"))
    records = [json.loads(line) for line in trace.read_text().splitlines() if '"type":"cycle"' in line]

    async def script(app, pilot):
        assert not app.ctl.live and app.replay == records[-1]["cycle"]
        assert chosen_row(app) == records[-1]["decide"]["tool"]
        await pilot.press("comma", "comma")
        assert chosen_row(app) == records[-3]["decide"]["tool"]
        assert app.marks.get(4) == "!"  # the veto at cycle 4 is marked on the timeline
        await pilot.press("r", "f", "l")  # nothing to run, fork or go live to
        assert app.screen is app.screen_stack[0] and app.replay == records[-3]["cycle"]

    drive(app, script)
    lines = trace.read_text().splitlines()
    lines[3] = lines[3][:40]
    trace.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        Workbench(trace_file=trace, sync=True, config=UserConfig.load(tmp_path / "c.toml"))
    assert err.value.line == 4 and str(trace) in str(err.value)


def test_a_corrupt_store_is_reported_and_left_untouched(tmp_path, cli):
    data = tmp_path / "data"
    data.mkdir()
    (data / "session.db").write_bytes(b"not a database" * 100)
    before = (data / "session.db").read_bytes()
    out = cli("--scenario", "zoo", data_dir=data, check_rc=2)  # would start the workbench
    assert "cannot be read" in out.stdout + out.stderr and "left untouched" in out.stdout + out.stderr
    assert (data / "session.db").read_bytes() == before
