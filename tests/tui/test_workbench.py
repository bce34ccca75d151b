"""Pilot tests of what a workbench user does: step, run and pause, veto a tool from the score
table or the psyche editor and watch it fire, survive bad input and failing tools."""

from __future__ import annotations

import asyncio
import time

from textual import events
from textual.widgets.text_area import Selection

from akh_tui.engine.tools import builtins as engine_tools
from akh_tui.tui.app import Workbench
from akh_tui.tui.dialogs import ErrorScreen, HelpScreen
from akh_tui.tui.panes import GoalsPane, ScoreTable, WhyPane
from akh_tui.tui.psyche_editor import PsycheEditorScreen, PsycheTextArea
from akh_tui.engine.runs.userconfig import UserConfig

from tests.helpers import drive, text_of


def cell(app: Workbench, tool: str, col: str) -> str:
    return str(app.query_one(ScoreTable).get_cell(tool, col))


def test_space_steps_one_cycle_and_every_pane_fills(workbench):
    async def script(app, pilot):
        await pilot.press("space")
        assert app.ctl.cycle == 1
        rec = app.ctl.latest
        chosen = rec["decide"]["tool"]
        assert cell(app, chosen, "tool").startswith("▶")
        assert cell(app, chosen, "total") == f"{rec['decide']['candidates'][[c['tool'] for c in rec['decide']['candidates']].index(chosen)]['score']:.2f}"
        assert rec["decide"]["breakdown"] in text_of(app.query_one(WhyPane)).replace("\n", " ")
        assert "cycle 1" in text_of(app.query_one("#status"))
        assert "WM 4/100" in text_of(app.query_one("#memory"))
        await pilot.press("space", "space")
        assert app.ctl.cycle == 3

    drive(workbench("zoo"), script)


def test_run_then_pause_stops_the_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    app = Workbench("shadow", config=UserConfig.load(tmp_path / "c.toml"))

    async def script(app, pilot):
        app.ctl.agent.config.stall_threshold = 10**6  # keep the agent busy
        app.speed_index = len(app.speed_levels()) - 1  # as fast as the engine goes
        await pilot.press("r")
        deadline = time.monotonic() + 10
        while app.ctl.cycle < 30 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert app.ctl.cycle >= 30, "the run did not start"
        await pilot.press("r")
        stopped_at = app.ctl.cycle
        await asyncio.sleep(0.3)
        assert app.ctl.cycle <= stopped_at + 1  # at most the cycle in flight (latency: `akh-tui bench`)
        await pilot.pause()
        assert "paused" in text_of(app.query_one("#status"))

    drive(app, script)


def test_after_full_speed_a_pause_shows_the_newest_cycle_in_every_pane(tmp_path, monkeypatch):
    """At full speed the frames are few and may lag; once paused, every pane shows the cycle
    the engine stopped at (the score table's cells too: they are cached per cell)."""
    from akh_tui.tui.panes import MemoryList, entry_line

    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    app = Workbench("shadow", config=UserConfig.load(tmp_path / "c.toml"))

    async def script(app, pilot):
        app.ctl.agent.config.stall_threshold = 10**6  # keep the agent busy
        app.speed_index = len(app.speed_levels()) - 1
        await pilot.press("r")
        deadline = time.monotonic() + 20
        while app.ctl.cycle < 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await pilot.press("r")
        while app.drawn != (app.ctl.cycle, False) and time.monotonic() < deadline:  # the paused frame
            await asyncio.sleep(0.01)
        await pilot.pause()
        n = app.ctl.cycle
        assert n >= 200 and app.drawn == (n, False)
        assert f"cycle {n} · ■ paused" in text_of(app.query_one("#status"))
        assert f"cycle {n} / {n}" in text_of(app.scrubber)
        rec = app.ctl.latest
        assert rec["cycle"] == n
        table = app.query_one(ScoreTable)
        drawn = {}  # what the table draws (its cells' renderings are cached), by tool
        for y in range(1, table.row_count + 1):
            line = "".join(seg.text for seg in table.render_line(y))
            drawn[line.split()[0].lstrip("▶")] = line
        for c in rec["decide"]["candidates"]:
            total = f"{c['score']:.2f}" if c["offered"] else "—"
            assert cell(app, c["tool"], "total") == total
            assert cell(app, c["tool"], "tool").startswith("▶" if c["tool"] == rec["decide"]["tool"] else " ")
            assert drawn[c["tool"]].startswith(("▶" if c["tool"] == rec["decide"]["tool"] else " ") + c["tool"])
            assert f" {c['base']:.2f} -{c['recency']:.2f} " in drawn[c["tool"]] and f" {total} " in drawn[c["tool"]]
        entries = app.ctl.view(wm_rows=100)["wm"]["entries"]
        shown = app.query_one(MemoryList)
        assert shown.option_count == len(entries)
        assert [str(shown.get_option_at_index(i).prompt) for i in range(shown.option_count)] == \
            [str(entry_line(e)) for e in entries]

    drive(app, script)


def test_veto_from_the_score_table_fires_next_cycle(workbench):
    async def script(app, pilot):
        await pilot.press("space")
        chosen = app.ctl.latest["decide"]["tool"]
        # put the cursor on the tool that will win again once its recency wears off: kg_query
        table = app.query_one(ScoreTable)
        table.move_cursor(row=0)
        await pilot.press("v")
        # the veto waits for the next cycle (an edit applies between cycles), then fires below
        psyche = app.ctl.view()["psyche"]
        assert psyche["pending"] is True and "no_kg_query" not in psyche["vetoes"]
        fired = None
        for _ in range(12):
            await pilot.press("space")
            if app.ctl.latest["act"]["vetoed"]:
                fired = app.ctl.latest
                break
        assert fired is not None, "the veto never fired"
        assert fired["decide"]["tool"] == "kg_query" and fired["act"]["veto"] == "no_kg_query"
        assert "VETOED" in cell(app, "kg_query", "note")
        assert "Vetoed by shadow pattern 'no_kg_query'" in text_of(app.query_one(WhyPane))
        assert chosen  # the first cycle ran before the veto

    drive(workbench("zoo"), script)


def test_the_why_pane_counts_a_tools_vetoes_on_the_goal_and_V_lifts_the_veto(workbench):
    # issue 28: on solar a vetoed synthesize_triple was chosen again and again, with nothing
    # saying so or undoing it
    async def script(app, pilot):
        table = app.query_one(ScoreTable)
        row = table._names.index("synthesize_triple")
        table.move_cursor(row=row)
        await pilot.press("v")
        fired: dict[int, int] = {}
        for _ in range(37):
            await pilot.press("space")
            rec = app.ctl.latest
            if rec["act"]["vetoed"]:
                goal = rec["goal"]["id"]
                fired[goal] = fired.get(goal, 0) + 1
                if fired[goal] == 2:
                    break
        assert 2 in fired.values(), fired
        why = text_of(app.query_one(WhyPane))
        assert "vetoed 2 times on this goal · V lifts this veto" in why
        await pilot.press("V")
        assert not any(p.name == "no_synthesize_triple" for p in app.ctl.current_psyche().shadow.veto_patterns) \
            or app.ctl.view()["psyche"]["pending"]
        for _ in range(12):
            await pilot.press("space")
            rec = app.ctl.latest
            if rec["decide"]["tool"] == "synthesize_triple":
                break
        assert rec["decide"]["tool"] == "synthesize_triple" and not rec["act"]["vetoed"]  # it runs again

    drive(workbench("solar"), script)


VETO = '''
[[shadow.veto_patterns]]
name = "no_synthesis"
triggers = ["tool=synthesize_triple"]
severity = 1.0
explanation = "No guessing in this demo."
'''


def test_veto_added_in_the_editor_blocks_that_tool_next_cycle(workbench):
    async def script(app, pilot):
        await pilot.press("e")
        editor = app.screen
        assert isinstance(editor, PsycheEditorScreen)
        ta = editor.query_one(PsycheTextArea)
        row = next(i for i, line in enumerate(ta.text.splitlines()) if line.startswith("[[shadow.bias_patterns]]"))
        ta.selection = Selection.cursor((row, 0))
        app.post_message(events.Paste(VETO))
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.press("escape")
        assert not isinstance(app.screen, PsycheEditorScreen)
        await pilot.press("space")
        rec = app.ctl.latest
        # zoo's first choice is synthesize_triple: now it is chosen, vetoed, and not run
        assert rec["decide"]["tool"] == "synthesize_triple"
        assert rec["act"]["vetoed"] and rec["act"]["veto"] == "no_synthesis"
        await pilot.press("space")
        assert app.ctl.latest["decide"]["tool"] != "synthesize_triple"  # the agent adapts

    drive(workbench("zoo"), script)


def test_invalid_toml_keeps_the_running_psyche_and_the_users_text(workbench):
    async def script(app, pilot):
        before = app.ctl.current_psyche().to_dict()
        await pilot.press("e")
        ta = app.screen.query_one(PsycheTextArea)
        row = next(i for i, line in enumerate(ta.text.splitlines()) if line.startswith("sage"))
        ta.selection = Selection.cursor((row, 0))
        await pilot.press("x", "x", "[")
        typed = ta.text
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.ctl.current_psyche().to_dict() == before
        await pilot.press("escape")
        await pilot.press("e")
        assert app.screen.query_one(PsycheTextArea).text == typed  # the draft came back
        assert app.ctl.current_psyche().to_dict() == before

    drive(workbench("zoo"), script)


def test_a_tool_that_raises_shows_an_error_never_a_crash(workbench, monkeypatch):
    def boom(agent, ctx, arg):
        raise RuntimeError("disk on fire")

    first = engine_tools.TOOLS["synthesize_triple"]
    monkeypatch.setitem(engine_tools.TOOLS, "synthesize_triple", engine_tools.Tool(first.spec, first.offer, boom))

    async def script(app, pilot):
        await pilot.press("space")
        rec = app.ctl.latest
        assert rec["decide"]["tool"] == "synthesize_triple" and not rec["act"]["success"]
        assert "error: RuntimeError: disk on fire" in text_of(app.query_one(WhyPane))
        await pilot.press("space")
        assert app.ctl.cycle == 2  # still running

    drive(workbench("zoo"), script)


def test_an_engine_exception_is_shown_and_the_app_stays_up(workbench, monkeypatch):
    async def script(app, pilot):
        monkeypatch.setattr(app.ctl.agent, "step", lambda: (_ for _ in ()).throw(ValueError("engine bug")))
        # the workbench steps through the cycle's phases (user_interact may ask): the bug there too
        monkeypatch.setattr(app.ctl.agent, "begin_cycle", lambda: (_ for _ in ()).throw(ValueError("engine bug")))
        await pilot.press("space")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, ErrorScreen)
        assert not app.running

    drive(workbench("zoo"), script)


def test_add_goal_dialog_validates_and_adds(workbench):
    async def script(app, pilot):
        await pilot.press("g")
        await pilot.press(*"Find birds")
        await pilot.press("tab", "tab", *"999", "enter")
        await pilot.pause()
        assert "priority" in str(app.screen.query_one("#goal-error").render())  # kept open, text kept
        pri = app.screen.query_one("#goal-priority")
        pri.value = "200"
        await pilot.press("enter")
        await pilot.pause()
        goals = app.ctl.view()["goals"]
        assert goals[-1]["description"] == "Find birds" and goals[-1]["priority"] == 200
        labels = [str(n.label) for n in app.query_one(GoalsPane).root.children]
        assert any("Find birds" in lb for lb in labels)

    drive(workbench("zoo"), script)


def test_goal_text_with_markup_is_shown_as_written(workbench):
    async def script(app, pilot):
        app.ctl.add_goal("Find [bold]whales[/bold]")
        await pilot.press("space")
        labels = [str(n.label) for n in app.query_one(GoalsPane).root.children]
        assert any("[bold]whales[/bold]" in lb for lb in labels)

    drive(workbench("zoo"), script)


def test_keymap_from_user_config_remaps_step(tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text('# mine\n[keymap]\nstep = "n"\n')
    monkeypatch.setenv("AKH_TUI_CONFIG", str(cfg))
    app = Workbench("zoo", sync=True, config=UserConfig.load(cfg))

    async def script(app, pilot):
        await pilot.press("n")
        assert app.ctl.cycle == 1
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        assert "n " in text_of(app.screen.query_one("Static"))

    drive(app, script)


def test_theme_choice_is_remembered_keeping_the_users_comments(tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text("# my settings\n")
    monkeypatch.setenv("AKH_TUI_CONFIG", str(cfg))
    app = Workbench("zoo", sync=True, config=UserConfig.load(cfg))

    async def script(app, pilot):
        assert "akh-light" in app.available_themes and "akh-dark" in app.available_themes
        app.theme = "akh-light"
        await pilot.pause()

    drive(app, script)
    text = cfg.read_text()
    assert "# my settings" in text and 'theme = "akh-light"' in text
    assert UserConfig.load(cfg).theme == "akh-light"


def test_unreadable_user_config_is_reported_not_overwritten(tmp_path, monkeypatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text("theme = [unclosed\n")
    monkeypatch.setenv("AKH_TUI_CONFIG", str(cfg))
    loaded = UserConfig.load(cfg)
    assert loaded.error and "config.toml:1" in loaded.error
    app = Workbench("zoo", sync=True, config=loaded)

    async def script(app, pilot):
        app.theme = "akh-light"
        await pilot.pause()

    drive(app, script)
    assert cfg.read_text() == "theme = [unclosed\n"


def test_every_action_is_in_the_palette_and_the_help(workbench):
    async def script(app, pilot):
        from textual.content import Content

        # as the palette shows them (it reads a title as markup: "[approve]" must survive)
        titles = [Content.from_markup(c.title).plain for c in app.get_system_commands(app.screen)]
        assert "Approval before act on/off (config: [approve] when)" in titles
        assert all(b.id and b.tooltip for b in app.BINDINGS)  # each binding carries its own words
        for b in app.BINDINGS:
            if b.id != "quit":
                assert b.tooltip[0].upper() + b.tooltip[1:] in titles
        await pilot.press("f1")
        help_text = text_of(app.screen.query_one("Static"))
        for b in app.BINDINGS:
            assert b.id in help_text
        assert "in the plots (P)" in help_text  # the heading said `p`, which steps a phase

    drive(workbench("zoo"), script)


def test_run_until_a_goal_status_changes(tmp_path, monkeypatch):
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    app = Workbench("zoo", config=UserConfig.load(tmp_path / "c.toml"))

    async def script(app, pilot):
        app.speed_index = len(app.speed_levels()) - 1
        await pilot.press("u")
        deadline = time.monotonic() + 10
        while (app.running or app.ctl.cycle == 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not app.running
        statuses = [g["status"] for g in app.ctl.view()["goals"]]
        assert "completed" in statuses  # it stopped at the first change
        assert app.ctl.cycle < 9  # well before the whole scenario is done

    drive(app, script)


def test_thinkloop_view_steps_and_plots(workbench):
    from akh_tui.tui.think_screen import ThinkScreen

    async def script(app, pilot):
        await pilot.press("space")
        await pilot.press("t")
        screen = app.screen
        assert isinstance(screen, ThinkScreen)
        assert screen.loop.goal == "mammal"  # the focus goal's symbols: the oracle matches label words
        await pilot.press("space", "space")
        assert len(screen.loop.steps) == 2
        await pilot.press("ctrl+a")
        assert screen.loop.stopped
        plots = text_of(screen.query_one("#think-plots"))
        assert "error" in plots and "reward" in plots and screen.loop.stop_reason in plots
        assert "cold" in text_of(screen.query_one("#think-memory"))
        await pilot.press("escape")
        assert not isinstance(app.screen, ThinkScreen)

    drive(workbench("zoo"), script)


def test_llm_decider_in_the_workbench_shows_the_models_reasons(workbench):
    async def script(app, pilot):
        await pilot.press("space")
        why = text_of(app.query_one(WhyPane))
        assert "model: accepted" in why and "rationale:" in why
        assert "[live " in why  # asked live (not replayed from recorded calls), and how long it took
        assert app.ctl.latest["decide"]["llm"]["status"] == "accepted"

    drive(workbench("zoo", decider="scripted"), script)


def test_goal_error_signal_is_plotted(workbench):
    async def script(app, pilot):
        await pilot.press("space", "space")
        errors = app.query_one(GoalsPane).errors
        assert errors[1][:2] == [1.0, 1.0]  # zoo's first goal: no keyword found in cycles 1-2
        label = str(app.query_one(GoalsPane).root.children[0].label)
        assert "██" in label

    drive(workbench("zoo"), script)


def test_models_structured_memory_is_shown(workbench):
    async def script(app, pilot):
        await pilot.press("space", "space")
        mem = text_of(app.query_one("#memory"))
        assert "model" in mem and "Find mammals" in mem  # the current goal the model is told about

    drive(workbench("zoo", decider="scripted"), script)


def test_running_while_a_dialog_is_open_draws_nothing_wrong(tmp_path, monkeypatch):
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    app = Workbench("solar", config=UserConfig.load(tmp_path / "c.toml"))

    async def script(app, pilot):
        await pilot.press("r")
        await pilot.press("f1")  # the help screen is on top while the engine keeps running
        await asyncio.sleep(0.5)
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("r")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        assert app.ctl.cycle > 0
        assert f"cycle {app.ctl.cycle}" in text_of(app.query_one("#status"))

    drive(app, script)


def test_markup_in_graph_labels_reaches_the_screen_as_text(tmp_path, monkeypatch):
    (tmp_path / "g.tsv").write_text("[bold]orca[/bold]\tis-a\tcetacean\n[link=x]dolphin\tis-a\tcetacean\n")
    (tmp_path / "s.toml").write_text('name = "marks"\nkg = ["g.tsv"]\n[[goals]]\ndescription = "Find cetacean"\n')
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    app = Workbench(str(tmp_path / "s.toml"), sync=True, config=UserConfig.load(tmp_path / "c.toml"))

    async def script(app, pilot):
        for _ in range(3):
            await pilot.press("space")
        shown = text_of(app.query_one("#memory")) + text_of(app.query_one(WhyPane))
        assert "[bold]orca[/bold]" in shown and "[link=x]dolphin" in shown
        assert not isinstance(app.screen, ErrorScreen)

    drive(app, script)


# ---- the why-not in reach (issue 28) -------------------------------------------------------------

def _why_lines(app) -> list[str]:
    """The Why pane's rendered lines (wrapped as shown)."""
    from textual.geometry import Region

    pane = app.query_one(WhyPane)
    return [strip.text for strip in pane.render_lines(Region(0, 0, pane.size.width, pane.size.height))]


def _visible_why(app) -> list[str]:
    box = app.query_one("#why-box")
    top = round(box.scroll_y)
    return _why_lines(app)[top: top + box.scrollable_content_region.height]


def test_moving_the_cursor_brings_the_why_not_into_view_and_the_keyboard_scrolls_it(workbench):
    async def script(app, pilot):
        for _ in range(6):
            await pilot.press("space")
        table = app.query_one(ScoreTable)
        chosen = app.ctl.latest["decide"]["tool"]
        other = next(n for n in table._names if n != chosen and n != "kg_query")
        table.move_cursor(row=table._names.index(other))
        offered = next(c["offered"] for c in app.ctl.latest["decide"]["candidates"] if c["tool"] == other)
        wanted = f"{other} lost to" if offered else f"{other} was not offered"
        for _ in range(500):  # the pane scrolls after a refresh: wait for what it shows, not a number of frames
            shown = "\n".join(_visible_why(app))
            if wanted in shown:
                break
            await pilot.pause()
        assert wanted in shown, shown
        # the pane scrolls by keyboard: tab to it, page up goes back to the chosen tool's story
        box = app.query_one("#why-box")
        box.focus()
        await pilot.press("home")
        await pilot.pause()
        assert box.scroll_y == 0 and chosen in "\n".join(_visible_why(app))
        await pilot.press("down")
        await pilot.pause()
        assert box.scroll_y == 1

    drive(workbench("solar"), script)


def test_the_why_pane_widens_with_the_terminal(workbench):
    async def script(app, pilot):
        box = app.query_one("#why-box")
        assert box.outer_size.width == 36
        await pilot.resize_terminal(200, 50)
        await pilot.pause()
        assert box.outer_size.width >= 80
        table = app.query_one(ScoreTable)
        assert table.outer_size.width >= 109  # the score table keeps its full columns
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert box.outer_size.width == 28

    drive(workbench("zoo"), script)


def test_the_chosen_row_scrolls_into_view_at_80x24(workbench):
    async def script(app, pilot):
        table = app.query_one(ScoreTable)
        for _ in range(4):  # cycle 4: shell_exec (the table's 11th row) is chosen and vetoed
            await pilot.press("space")
        await pilot.pause()
        await pilot.pause()
        assert app.ctl.latest["decide"]["tool"] == "shell_exec" and app.ctl.latest["act"]["vetoed"]
        row = table._names.index("shell_exec")
        header = 1
        visible = table.scrollable_content_region.height - header
        assert table.scroll_y <= row < table.scroll_y + visible, (table.scroll_y, row, visible)

    drive(workbench("shadow"), script, size=(80, 24))


# ---- issue 28: the footer, the psyche editor's footer, the status line ----------------------------

def _footer_keys(app) -> dict[str, object]:
    """Footer entries by description, with their regions on the screen."""
    from textual.widgets._footer import FooterKey

    return {k.description: k.region for k in app.screen.query(FooterKey)}


def test_the_footer_shows_help_quit_and_plots_at_120_and_help_at_80_columns(workbench):
    async def script(app, pilot):
        keys = _footer_keys(app)
        for desc in ("Help", "Quit", "Plots", "Step"):
            assert desc in keys and 0 < keys[desc].right <= 120, (desc, keys.get(desc))
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        keys = _footer_keys(app)
        assert 0 < keys["Help"].right <= 80, keys["Help"]
        await pilot.press("e")  # the psyche editor: "/" types a slash there, it is no key of the footer
        await pilot.pause()
        assert "Search" not in _footer_keys(app)

    drive(workbench("zoo"), script)


def test_the_status_line_drops_a_phase_note_once_its_cycle_is_done_and_stays_one_row(workbench):
    async def script(app, pilot):
        await pilot.press("space")
        await pilot.press("p", "p", "p", "p")  # observe, orient, decide, act of cycle 2
        assert "cycle 2: act done" in text_of(app.status_bar)
        await pilot.press("space")  # finishes cycle 2
        await pilot.pause()
        status = text_of(app.status_bar)
        assert "learn next" not in status and "act done" not in status, status
        await pilot.press("a", "p", "p")  # approval rules and cycle 3 part-way: the longest line
        await pilot.pause()
        assert app.status_bar.outer_size.height == 1, text_of(app.status_bar)

    drive(workbench("zoo"), script)


def test_a_workbench_opened_and_quit_leaves_no_empty_run(workbench, tmp_path):
    from akh_tui.engine import Locations, Run

    locs = Locations(tmp_path / "data", tmp_path / "config.toml")
    earlier = Run.start(locs, "solar")
    earlier.step()
    earlier.close()

    async def nothing(app, pilot):
        await pilot.pause()

    drive(workbench("zoo"), nothing)
    resumed = Run.resume(locs)  # the run a resume continues is the earlier one again
    assert resumed.name == "solar" and resumed.last_cycle() == 1
    assert [r["name"] for r in resumed.store.runs()] == ["solar"]  # the 0-cycle zoo run is gone
    resumed.close()

    async def add_goal(app, pilot):  # something the user gave is kept, even without a cycle
        app.ctl.add_goal("Find whales")

    drive(workbench("zoo"), add_goal)
    resumed = Run.resume(locs)
    assert [r["name"] for r in resumed.store.runs()] == ["solar", "zoo"] and resumed.name == "zoo"
    resumed.close()
