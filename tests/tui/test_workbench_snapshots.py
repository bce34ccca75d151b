"""Scripted demos of each bundled scenario, compared with golden SVGs in snapshots/.

Sync tests (snap_compare needs a plain def); the workbench runs engine commands on the UI
thread (`sync=True`), so the picture depends only on the keys pressed."""

from pathlib import Path

SIZE = (120, 36)


def test_zoo_demo_after_six_steps(snap_compare, workbench):
    # Classify whales: infer_rules derives (whale is-a mammal) and the goal completes
    assert snap_compare(workbench("zoo"), press=["space"] * 6, terminal_size=SIZE)


def test_solar_demo_decomposes_a_stalled_goal(snap_compare, workbench):
    assert snap_compare(workbench("solar"), press=["space"] * 14, terminal_size=SIZE)


def test_shadow_demo_veto_fires(snap_compare, workbench):
    # cycle 4: shell_exec is chosen and the destructive_action veto blocks it
    assert snap_compare(workbench("shadow"), press=["space"] * 4, terminal_size=SIZE)


def test_shadow_demo_agent_adapts_next_cycle(snap_compare, workbench):
    assert snap_compare(workbench("shadow"), press=["space"] * 5, terminal_size=SIZE)


def test_small_terminal_still_usable(snap_compare, workbench):
    assert snap_compare(workbench("zoo"), press=["space"] * 3, terminal_size=(80, 24))


def test_help_screen(snap_compare, workbench):
    app = workbench("zoo", config_path=Path("/home/you/.config/akh-tui/config.toml"))

    async def drawn(pilot):  # the panes behind the help are drawn before it opens (a race under load)
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, press=["f1"], run_before=drawn, terminal_size=SIZE)


def test_light_theme(snap_compare, workbench):
    def light(pilot):
        pilot.app.theme = "akh-light"

    assert snap_compare(workbench("zoo"), press=["space"] * 2, run_before=light, terminal_size=SIZE)


def test_psyche_editor_shows_an_error_with_line_and_field(snap_compare, workbench):
    async def open_editor_with_a_mistake(pilot):
        from akh_tui.tui.psyche_editor import PsycheTextArea

        # the title shows where ctrl+w saves: a fixed path for the picture (nothing is saved)
        pilot.app.ctl._psyche_file = Path("/home/you/.local/share/akh-tui/psyche/zoo.toml")
        pilot.app.action_edit_psyche()
        await pilot.pause()
        ta = pilot.app.screen.query_one(PsycheTextArea)
        ta.cursor_blink = False
        ta.text = ta.text.replace("severity = 1.0", "severity = 7", 1)
        pilot.app.screen.validate()
        await pilot.pause()

    app = workbench("zoo")
    assert snap_compare(app, run_before=open_editor_with_a_mistake, terminal_size=SIZE)


def test_thinkloop_view(snap_compare, workbench):
    assert snap_compare(workbench("zoo"), press=["space", "t", "space", "space", "space"], terminal_size=SIZE)


def test_replay_of_a_past_cycle_is_read_only_and_marked(snap_compare, workbench):
    # six cycles, then three back: every pane shows cycle 3 as it was, borders in the warning colour
    assert snap_compare(workbench("zoo"), press=["space"] * 6 + ["comma"] * 3, terminal_size=SIZE)


# in the fork dialog: sage down to 0.1, explorer up to 0.95 (fields: name, sage, healer, explorer, ...)
FORK_EXPLORER = (["tab"] + ["backspace"] * 4 + ["0", "full_stop", "1"] + ["tab", "tab"] + ["backspace"] * 4
                 + ["0", "full_stop", "9", "5"])


def test_fork_dialog_at_a_replayed_cycle(snap_compare, workbench):
    assert snap_compare(workbench("solar"), press=["space"] * 10 + ["comma"] * 6 + ["f"] + FORK_EXPLORER,
                        terminal_size=SIZE)


def test_compare_view_shows_the_fork_diverging(snap_compare, workbench):
    # fork after cycle 4 (sage 0.1, explorer 0.95), run the branch on to cycle 10, compare with main
    press = ["space"] * 10 + ["comma"] * 6 + ["f"] + FORK_EXPLORER + ["enter"] + ["space"] * 6 + ["b", "up", "c"]
    assert snap_compare(workbench("solar"), press=press, terminal_size=SIZE)


def test_breakpoint_on_a_veto_pauses_the_run(snap_compare, workbench, tmp_path):
    (tmp_path / "bp.toml").write_text('[breakpoints]\nstop = ["veto"]\n')
    app = workbench("shadow", config_path=tmp_path / "bp.toml")
    assert snap_compare(app, press=["space"] * 4, terminal_size=SIZE)  # stepping: the note and the toast


# ---- issue 28: the why-not in reach and dialogs at 80×24 ------------------------------------------

def test_why_not_in_view_when_the_cursor_moves(snap_compare, workbench):
    # solar after 6 cycles, the cursor down to similarity_search: the Why pane shows its why-not
    async def keys_then_the_scroll(pilot) -> None:
        for key in ["space"] * 6 + ["down"] * 4:
            await pilot.press(key)
        # the pane scrolls after the next refresh: wait for it (a busy machine takes frames longer)
        box, why = pilot.app.query_one("#why-box"), pilot.app.why_pane
        for _ in range(500):
            if why.question_at and box.scroll_y == min(why.question_at, box.max_scroll_y):
                break
            await pilot.pause()

    assert snap_compare(workbench("solar"), run_before=keys_then_the_scroll, terminal_size=SIZE)


def test_approval_dialog_at_80x24(snap_compare, workbench, tmp_path):
    (tmp_path / "approve.toml").write_text('[approve]\nwhen = ["tool=shell_exec"]\n', encoding="utf-8")
    app = workbench("shadow", config_path=tmp_path / "approve.toml")
    assert snap_compare(app, press=["space"] * 4, terminal_size=(80, 24))


def test_fork_dialog_at_80x24(snap_compare, workbench):
    assert snap_compare(workbench("solar"), press=["space"] * 3 + ["f"], terminal_size=(80, 24))


def test_question_dialog_at_80x24(snap_compare, workbench, tmp_path):
    from tests.tui.test_workbench_phases import ask_scenario

    assert snap_compare(workbench(str(ask_scenario(tmp_path))), press=["space"] * 6, terminal_size=(80, 24))
