"""Snapshots of issue 13's views: the plots screen, the layouts at 120×36 and 80×24, the
terminal-too-small notice. Sync tests (snap_compare needs a plain def); the workbench runs engine
commands on the UI thread, so the picture depends only on the keys pressed."""

SIZE = (120, 36)


def test_plots_screen(snap_compare, workbench):
    # solar, 14 cycles: reflections at 5 and 10, a stalled goal decomposed; the cursor on cycle 10
    assert snap_compare(workbench("solar"), press=["space"] * 14 + ["p"] + ["left"] * 4, terminal_size=SIZE)
