"""The world workbench's views at 120×36 and 80×24 (golden SVGs in snapshots/). Sync tests;
engine commands run on the UI thread (`sync=True`), so each picture depends only on the keys."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TabbedContent

from akh_tui.engine import Locations

from akh_tui.tui.world.app import WorldBench

WIDE, SMALL = (120, 36), (80, 24)


def market(tmp: Path) -> WorldBench:
    return WorldBench("market", sync=True, locations=Locations(tmp / "data", tmp / "config.toml"))


def test_world_roster_lanes_and_panes(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=["n"] * 6 + ["space"], terminal_size=WIDE)


def test_world_at_80x24(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=["n"] * 6 + ["space"], terminal_size=SMALL)


def test_world_split_score_tables(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=["n"] * 4 + ["1", "s"], terminal_size=WIDE)


def test_world_replay_of_a_step(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=["n"] * 6 + ["less_than_sign"], terminal_size=WIDE)


def test_shared_world_artifacts_with_a_diff(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=["n"] * 10 + ["w", "down", "down"], terminal_size=WIDE)


def test_shared_world_mint_at_80x24(snap_compare, tmp_path):
    async def mint_tab(pilot):
        pilot.app.screen.query_one(TabbedContent).active = "mint"
        await pilot.pause()

    app = market(tmp_path)

    async def open_mint(pilot):
        for _ in range(10):
            await pilot.press("n")
        await pilot.press("w")
        await pilot.pause()
        await mint_tab(pilot)

    assert snap_compare(app, run_before=open_mint, terminal_size=SMALL)


def test_shared_world_ledger(snap_compare, tmp_path):
    async def open_ledger(pilot):
        for _ in range(10):
            await pilot.press("n")
        await pilot.press("w")
        await pilot.pause()
        pilot.app.screen.query_one(TabbedContent).active = "ledger"
        await pilot.pause()

    assert snap_compare(market(tmp_path), run_before=open_ledger, terminal_size=WIDE)


def _gate_dialog(tmp: Path, size: tuple[int, int]):
    """The market on the engine thread (a gate waits on it), bold gated, at its first turn."""
    import time

    from akh_tui.tui.world.gate import GateScreen

    app = WorldBench("market", locations=Locations(tmp / "data", tmp / "config.toml"))

    async def until(pilot, check) -> None:
        deadline = time.monotonic() + 30
        while not check():
            assert time.monotonic() < deadline, "the screen never showed it"
            await pilot.pause(0.02)

    async def drawn(pilot) -> None:
        # the panes drawn at the size laid out (a frame, not a race with the engine thread: the
        # panes are not drawn while a turn waits at the gate)
        await pilot.pause()
        app._drawn_key, app._dirty = None, True
        await until(pilot, lambda: app._drawn_key is not None)

    async def reach_the_gate(pilot) -> None:
        await drawn(pilot)
        await pilot.press("1", "g", "space")
        await until(pilot, lambda: len(app.world.steps) == 1)
        await drawn(pilot)
        await pilot.press("space")
        await until(pilot, lambda: isinstance(app.screen, GateScreen) and "waits for your answer" in
                    str(app.status_bar.render()))
        await pilot.pause()

    async def answered(pilot) -> None:
        await reach_the_gate(pilot)
        await pilot.press("3")  # bid, the third offered tool
        await until(pilot, lambda: app.world.waiting is None and len(app.world.steps) == 2
                    and not isinstance(app.screen, GateScreen))
        await drawn(pilot)

    app.answered = answered  # type: ignore[attr-defined]
    return app, reach_the_gate


def test_world_gate_dialog(snap_compare, tmp_path):
    app, before = _gate_dialog(tmp_path, WIDE)
    assert snap_compare(app, run_before=before, terminal_size=WIDE)


def test_world_gate_dialog_at_80x24(snap_compare, tmp_path):
    app, before = _gate_dialog(tmp_path, SMALL)
    assert snap_compare(app, run_before=before, terminal_size=SMALL)


def test_world_gate_answered_at_80x24(snap_compare, tmp_path):
    """The answer in the narrow roster (no result column: `chosen bid` leads the action cell)."""
    app, _ = _gate_dialog(tmp_path, SMALL)
    assert snap_compare(app, run_before=app.answered, terminal_size=SMALL)


def test_world_fork_dialog_at_80x24(snap_compare, tmp_path):
    """The fork dialog's help: every edit a fork may make, one a line, inside 80×24."""
    assert snap_compare(market(tmp_path), press=["n", "n", "F"], terminal_size=SMALL)
