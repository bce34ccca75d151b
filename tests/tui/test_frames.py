"""The single-agent workbench's frames at full speed (frames.py): paced by the process's CPU, so
on a busy machine they keep their share of the CPU instead of taking the engine's (issue 29)."""

from __future__ import annotations

from akh_tui.engine import UserConfig
from akh_tui.tui import frames
from akh_tui.tui.app import Workbench


class Clocks:
    """Stands in for the `time` module frames.py reads: the process's CPU, the UI thread's, wall."""

    def __init__(self) -> None:
        self.cpu = self.thread = self.wall = 100.0

    def process_time(self) -> float:
        return self.cpu

    def thread_time(self) -> float:
        return self.thread

    def perf_counter(self) -> float:
        return self.wall


def _due_ticks(app: Workbench) -> bool | None:
    """The next tick that may draw (every FAST_FRAME_EVERY-th): whether a frame is due there."""
    app._ticks = frames.FAST_FRAME_EVERY * (app._ticks // frames.FAST_FRAME_EVERY + 1)
    return app._frame_due()


def _drawn(app: Workbench, clocks: Clocks, cost: float) -> None:
    """The frame just begun costs the UI thread `cost` seconds of CPU (and the process as much)."""
    clocks.thread += cost
    clocks.cpu += cost
    clocks.wall += cost
    app._frame_finished()


def test_at_full_speed_a_frame_waits_until_the_process_has_spent_its_cost_over_the_share(tmp_path, monkeypatch):
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "c.toml"))
    clocks = Clocks()
    monkeypatch.setattr(frames, "time", clocks)
    app = Workbench("zoo", config=UserConfig.load(tmp_path / "c.toml"))
    try:
        assert _due_ticks(app) is True  # the first frame at full speed shows every pane
        _drawn(app, clocks, 0.025)  # a full frame: 25 ms of the UI thread's CPU
        assert _due_ticks(app) is False  # a ticker frame (its cost not known yet: 0)
        _drawn(app, clocks, 0.002)  # 2 ms: the next is due once the process has spent 80 ms
        # a busy machine: a whole second of wall time passes, the process gets 50 ms of CPU
        clocks.wall += 1.0
        clocks.cpu += 0.05
        assert _due_ticks(app) is None
        clocks.wall += 5.0  # wall time alone never makes a frame due
        assert _due_ticks(app) is None
        clocks.cpu += 0.04  # 90 ms of CPU since the ticker frame began: another is due
        assert _due_ticks(app) is False
        _drawn(app, clocks, 0.002)
        # a full frame once the process has spent 25 ms / FRAME_SHARE (1 s) since the last began
        clocks.cpu = 101.01
        assert _due_ticks(app) is True
        _drawn(app, clocks, 0.025)
        clocks.cpu += 0.05  # a ticker frame waits from the full frame's start too
        assert _due_ticks(app) is None
    finally:
        app.ctl.close()


def test_what_is_alive_at_the_first_frame_is_out_of_the_collectors_sight_until_the_workbench_closes(workbench):
    # a full collection walked the whole heap (a big scenario graph included) on whichever
    # thread allocated: a quarter of a second's freeze (issue 29); frozen, it walks what came since
    import gc

    from tests.helpers import drive

    seen: list[int] = []

    async def script(app, pilot):
        await pilot.pause()
        seen.append(gc.get_freeze_count())

    drive(workbench("zoo"), script)
    assert seen and seen[0] > 10_000  # Textual's widgets and styles, the graph, the modules
    assert gc.get_freeze_count() == 0  # handed back: their cycles can be collected again
