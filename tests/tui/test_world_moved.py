"""Who moved this decision in the world workbench (`m` on the step shown, `p` the proof):
Pilot tests that wait for what the screen shows, and its snapshots at 120×36 and 80×24."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from akh_tui.engine import Locations, moved_lines, who_moved
from akh_tui.tui.world.app import WorldBench
from akh_tui.tui.world.moved import WhoMovedScreen

from tests.tui.test_world_bench import SIZE, sync, until

WIDE, SMALL = (120, 36), (80, 24)
# the market after six rounds: step 11 is 6:bold, which 5:cautious's new artifact moved; the
# proof replays 5:cautious as noop and 6:bold chooses otherwise
TO_6_BOLD = ["n"] * 6 + ["comma", "comma"]


def market(tmp: Path) -> WorldBench:
    return WorldBench("market", sync=True, locations=Locations(tmp / "data", tmp / "config.toml"))


def shown(app: WorldBench) -> str:
    return str(app.screen.query_one("#moved-lines", Static).render())


@sync
async def test_m_lists_the_movers_of_the_shown_step_and_p_proves_them(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*TO_6_BOLD)
        s = app.world.steps[app.cursor]
        assert (s.round, s.agent) == (6, "bold")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, WhoMovedScreen) and "mover" in shown(app))
        assert shown(app) == "\n".join(moved_lines(who_moved(app.world.run, s.step)))
        assert "mover 5:cautious write_artifact" in shown(app) and "proof" not in shown(app)
        await pilot.press("p")
        await until(pilot, lambda: "proof" in shown(app))
        assert shown(app) == "\n".join(moved_lines(who_moved(app.world.run, s.step, prove=True)))
        assert "it moved the decision" in shown(app)
        assert len(list(app.world.run.steps())) == 12  # the proof wrote nothing to the branch
        await pilot.press("escape")
        assert not isinstance(app.screen, WhoMovedScreen)


@sync
async def test_the_first_step_has_nobody_before_it_and_nothing_recorded_opens_nothing(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")  # nothing recorded yet: a notice, no screen
        assert not isinstance(app.screen, WhoMovedScreen)
        await pilot.press("space", "m")
        await until(pilot, lambda: isinstance(app.screen, WhoMovedScreen) and "chose" in shown(app))
        assert "no other agent acted since the world began" in shown(app)


def test_who_moved_with_its_proof(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=[*TO_6_BOLD, "m", "p"], terminal_size=WIDE)


def test_who_moved_at_80x24(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), press=[*TO_6_BOLD, "m", "p"], terminal_size=SMALL)
