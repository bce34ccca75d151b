"""The plots screen (`p`): what it reads from the store, what the grid shows, and that enter
replays the cycle under the cursor. The picture itself is a snapshot
(test_views_snapshots.py)."""

from __future__ import annotations

from akh_tui.engine import TOOL_NAMES
from akh_tui.tui.plots import PlotsScreen, Series, ToolGrid, bin_series
from tests.helpers import drive


def test_summaries_carry_what_the_records_say(workbench):
    app = workbench("solar")
    for _ in range(12):
        app.ctl.step()
    summaries = app.ctl.summaries()
    records = app.ctl.records()
    assert [s["cycle"] for s in summaries] == list(range(1, 13))
    for s, r in zip(summaries, records):
        assert s["tool"] == r["decide"]["tool"]
        assert s["vetoed"] == r["act"]["vetoed"]
        assert s["archetypes"] == r["psyche"]["archetypes"]
        assert s["wm_size"] == r["wm"]["size"]
        assert s["coverage"] == {g["id"]: g["coverage"] for g in r["goals"]}
        for c in r["decide"]["candidates"]:
            assert s["scores"][c["tool"]] == (c["score"] if c["offered"] else None)
    assert app.ctl.summaries(5, 6) == summaries[4:6]  # a page
    assert ("reflection", 5) in [(k, c) for c, k in app.ctl.branch_events()]


def test_bins_keep_short_series_and_average_long_ones():
    assert bin_series([1, 2, 3], [0.1, 0.2, 0.3], 10) == ([1.0, 2.0, 3.0], [0.1, 0.2, 0.3])
    x, y = bin_series(list(range(1, 1001)), [1.0] * 500 + [0.0] * 500, 10)
    assert len(x) == len(y) == 10 and x[0] == 1.0 and y[0] == 1.0 and y[-1] == 0.0


def test_the_grid_marks_each_cycles_winner_and_a_veto(workbench):
    app = workbench("shadow")
    for _ in range(5):
        app.ctl.step()
    s = Series()
    s.extend(app.ctl.summaries())
    grid = ToolGrid(s, 4)
    text = grid.render().plain.splitlines()
    rows = {line.split()[0]: line for line in text[2:2 + len(TOOL_NAMES)]}
    # cycle 4 of the shadow scenario: shell_exec chosen and vetoed
    assert "✗" in rows["shell_exec"]
    assert "cycle 4: shell_exec" in text[-1] and "VETOED" in text[-1]
    for rec in app.ctl.records():
        assert rec["decide"]["tool"] in rows


def test_enter_on_the_grid_replays_that_cycle(workbench):
    async def script(app, pilot):
        for _ in range(8):
            await pilot.press("space")
        await pilot.press("P")
        assert isinstance(app.screen, PlotsScreen)
        grid = app.screen.query_one(ToolGrid)
        assert grid.cursor == 8 and len(app.screen.series.cycles) == 8
        await pilot.press("left", "left", "left")
        assert grid.cursor == 5
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, PlotsScreen)
        assert app.replay == 5  # the panes show cycle 5, read-only

    drive(workbench("zoo"), script)


def test_plots_with_nothing_recorded_say_so(workbench):
    async def script(app, pilot):
        await pilot.press("P")
        assert not isinstance(app.screen, PlotsScreen)

    drive(workbench("zoo"), script)
