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
