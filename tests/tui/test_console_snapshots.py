"""The query console (Q) and the rule browser (R) at 120×36 and 80×24 (issue 28 §2).
Sync tests (snap_compare needs a plain def); engine commands run on the UI thread."""

from textual.widgets import Input


def ask(keys, text):
    """Step, open the view, type `text` in its input and press enter."""

    async def run(pilot):
        for key in keys:
            await pilot.press(key)
        box = pilot.app.screen.query_one(Input)
        box.cursor_blink = False
        box.value = text
        await pilot.press("enter")
        await pilot.pause()

    return run


def test_query_console_join(snap_compare, workbench):
    run = ask(["space"] * 6 + ["Q"], "(?x is-a mammal) (?x lives-in ?where)")
    assert snap_compare(workbench("zoo"), run_before=run, terminal_size=(120, 36))


def test_query_console_at_80x24(snap_compare, workbench):
    run = ask(["space"] * 6 + ["Q"], "about whale")
    assert snap_compare(workbench("zoo"), run_before=run, terminal_size=(80, 24))


def test_rule_browser_why_not(snap_compare, workbench):
    run = ask(["space"] * 6 + ["R"], "dog")

    async def then_inherit(pilot):
        await run(pilot)
        await pilot.press("down", "down", "down", "down")  # the rules list has focus: to inherit(lives-in)
        await pilot.pause()

    assert snap_compare(workbench("zoo"), run_before=then_inherit, terminal_size=(120, 36))


def test_rule_browser_at_80x24(snap_compare, workbench):
    run = ask(["space"] * 6 + ["R"], "dog")
    assert snap_compare(workbench("zoo"), run_before=run, terminal_size=(80, 24))


def staged(keys, lines, then):
    """Step, open the state editor, stage `lines`, then type `then` (left in the box)."""

    async def run(pilot):
        for key in keys:
            await pilot.press(key)
        box = pilot.app.screen.query_one("#edit-line", Input)
        box.cursor_blink = False
        for line in lines:
            box.value = line
            await pilot.press("enter")
        box.value = then
        await pilot.press("enter")  # a refused line: the note says why, the line stays
        await pilot.pause()

    return run


def test_state_editor_live(snap_compare, workbench):
    run = staged(["space"] * 4 + ["x"], ["goal 3 priority=250", "triple orca hunts seal"], "goal 2 status")
    assert snap_compare(workbench("zoo"), run_before=run, terminal_size=(120, 36))


def test_state_editor_at_a_replayed_cycle_80x24(snap_compare, workbench):
    run = staged(["space"] * 6 + ["comma"] * 4 + ["x"], ['goal 1 criteria="(dog is-a mammal)"'], "memory 3 forget")
    assert snap_compare(workbench("zoo"), run_before=run, terminal_size=(80, 24))


def test_flow_of_goals_and_plans(snap_compare, workbench):
    assert snap_compare(workbench("solar"), press=["space"] * 21 + ["G"], terminal_size=(120, 36))


def test_flow_at_80x24(snap_compare, workbench):
    assert snap_compare(workbench("solar"), press=["space"] * 21 + ["G"], terminal_size=(80, 24))


def watched():
    async def run(pilot):
        await pilot.press("space", "Q")
        for text, key in (("(?x lives-in ocean)", "ctrl+b"), ("goals whale", "ctrl+t")):
            box = pilot.app.screen.query_one(Input)
            box.value = text
            await pilot.press("enter", key)
        await pilot.press("escape", "space", "space")
        await pilot.pause()

    return run


def test_watches_on_the_main_screen(snap_compare, workbench):
    assert snap_compare(workbench("zoo"), run_before=watched(), terminal_size=(120, 36))


def test_watches_at_80x24(snap_compare, workbench):
    assert snap_compare(workbench("zoo"), run_before=watched(), terminal_size=(80, 24))
