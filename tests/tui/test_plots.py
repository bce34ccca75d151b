"""The plots screen (`p`): what it reads from the store, what the grid shows, and that enter
replays the cycle under the cursor. The picture itself is a snapshot
(test_views_snapshots.py)."""

from __future__ import annotations

from akh_tui.engine import TOOL_NAMES
from akh_tui.tui.plots import GridCycles, PlotsScreen, Series, ToolGrid, bin_series
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
    cells = GridCycles(5)
    cells.add(s, 4)
    grid = ToolGrid(cells, 4)
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


# ---- a long branch (issue 29): read off the UI thread, sampled, the grid's pages on demand ----
import threading  # noqa: E402
import time  # noqa: E402

from akh_tui.tui import plots  # noqa: E402


async def _until(pilot, cond, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}: {state(pilot.app.screen)}"
        await pilot.pause(0.02)


def state(screen) -> str:
    return f"series {getattr(screen, 'series', None) and screen.series.cycles} built {[p.built and p.built[0] for p in screen.query(plots.BuiltPlot)]} serial {getattr(screen, '_serial', None)} building {getattr(screen, '_building', None)}"


def _built(screen) -> bool:
    return all(p.built is not None and p.built[0][2] == screen._serial for p in screen.query(plots.BuiltPlot))


def _reads(ctl, gate_at: int | None = None, gate: threading.Event | None = None) -> list[tuple[int, int, str]]:
    """Record every (start, end, thread) the screen reads; a read of cycle `gate_at` alone
    waits for `gate`."""
    seen: list[tuple[int, int, str]] = []
    summaries = ctl.summaries

    def counted(start: int = 1, end: int | None = None):
        seen.append((start, end if end is not None else ctl.last_cycle(), threading.current_thread().name))
        if gate is not None and start == end == gate_at:
            assert gate.wait(30)
        return summaries(start, end)

    ctl.summaries = counted
    return seen


def test_the_plots_fill_chunk_by_chunk_off_the_ui_thread_and_keys_work_meanwhile(workbench, monkeypatch):
    monkeypatch.setattr(plots, "SAMPLES", 4)  # 12 cycles: the plots sample cycles 1, 5, 9 and 12
    monkeypatch.setattr(plots, "CHUNK", 2)
    monkeypatch.setattr(plots, "PAGE", 5)
    app = workbench("solar")
    for _ in range(12):
        app.ctl.step()
    gate = threading.Event()
    reads = _reads(app.ctl, gate_at=9, gate=gate)  # the second chunk's first read waits
    built_on: list[str] = []
    figure = plots.PlotJob.figure

    def spy(self, *a, **kw):
        built_on.append(threading.current_thread().name)
        return figure(self, *a, **kw)

    monkeypatch.setattr(plots.PlotJob, "figure", spy)

    async def script(app, pilot):
        screen = plots.PlotsScreen(app.ctl, 12, lambda c: None, sync=False)
        app.push_screen(screen)
        try:
            # the first chunk is drawn while the second is still being read
            await _until(pilot, lambda: screen.series.cycles == [1, 5] and _built(screen), "the first chunk's plots")
            assert "sampled 2 of 4 cycles" in str(screen.query_one("#plots-title").render())
            assert "cycle 12:" in screen.grid.render().plain  # the grid's own page came first
            # the app answers keys while the reader waits
            await pilot.press("left", "left")
            assert screen.grid.cursor == 10 and "cycle 10:" in screen.grid.render().plain
            assert screen.series.cycles == [1, 5]
        finally:
            gate.set()
        await _until(pilot, lambda: screen.series.cycles == [1, 5, 9, 12] and _built(screen), "every sample")
        title = str(screen.query_one("#plots-title").render())
        assert "12 cycles" in title and "sampled every 4 cycles" in title
        # the plots' cursor line and the working memory's pressure follow the grid's cursor
        job = screen.job()
        assert job is not None and job.cursor == 10 and job.pressure is not None

    drive(app, script)
    main = threading.main_thread().name
    assert built_on and main not in built_on  # every figure was built on a worker
    assert reads and all(name != main for _, _, name in reads)  # every read too
    # the plots read their samples one cycle each, nothing else but the grid's pages
    singles = sorted({s for s, e, _ in reads if s == e})
    assert [1, 5, 9, 12] == [c for c in singles if c in (1, 5, 9, 12)]


def test_a_long_branch_reads_samples_and_only_the_grid_pages_it_shows(workbench, monkeypatch, tmp_path):
    from akh_tui.bench.explain import endless_zoo

    monkeypatch.setattr(plots, "SAMPLES", 10)
    monkeypatch.setattr(plots, "CHUNK", 5)
    monkeypatch.setattr(plots, "PAGE", 20)
    monkeypatch.setattr(plots, "KEEP_PAGES", 4)
    app = workbench(str(endless_zoo(tmp_path)))
    for _ in range(150):
        app.ctl.step()
    reads = _reads(app.ctl)

    async def script(app, pilot):
        screen = plots.PlotsScreen(app.ctl, 150, lambda c: None, sync=False)
        app.push_screen(screen)
        await _until(pilot, lambda: len(screen.series.cycles) == len(screen.wanted) and _built(screen), "the samples")
        assert len(screen.wanted) <= 10 and screen.wanted[0] == 1 and screen.wanted[-1] == 150
        # the window at 120 columns shows 101 cycles: cycles 50-150, pages 2-7, and no more
        await _until(pilot, lambda: not screen._reading, "the window's pages")
        assert min(screen.cells.pages) >= 2
        pages_read = {s for s, e, _ in reads if e - s == 19}
        assert 1 not in pages_read and 21 not in pages_read
        assert len(screen.cells.pages) <= 4  # kept: the ones nearest the cursor
        await pilot.press("home")  # the first page is read when the cursor gets there
        assert screen.grid.cursor == 1
        await _until(pilot, lambda: "cycle 1:" in screen.grid.render().plain, "the first page")
        assert 0 in screen.cells.pages and len(screen.cells.pages) <= 4

    drive(app, script)


def test_the_samples_spread_over_the_branch_and_reach_its_end():
    assert plots.sample_cycles(5, 10) == [1, 2, 3, 4, 5]
    picked = plots.sample_cycles(100_000, 2000)
    assert len(picked) <= 2000 and picked[0] == 1 and picked[-1] == 100_000
    gaps = {b - a for a, b in zip(picked, picked[1:-1])}
    assert gaps == {51}


def test_a_new_theme_draws_the_plots_again_in_its_colours(workbench):
    async def script(app, pilot):
        for _ in range(6):
            await pilot.press("space")
        await pilot.press("P")
        screen = app.screen
        assert isinstance(screen, plots.PlotsScreen)
        await pilot.pause()
        before = screen.query_one("#arch-plot", plots.BuiltPlot).built
        assert before is not None and screen.job().theme.endswith(app.theme)
        app.theme = "akh-light"
        await pilot.pause()
        after = screen.query_one("#arch-plot", plots.BuiltPlot).built
        assert screen.job().theme == "textual-auto-akh-light"
        assert after is not None and after[0][2] > before[0][2] and after[1] != before[1]

    drive(workbench("zoo"), script)
