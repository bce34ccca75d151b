"""The interview in the world workbench (`i`: the shown agent at the step shown, a question
typed, the answers and the history): Pilot tests that wait for what the screen shows, and its
snapshots at 120×36 and 80×24."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input

from akh_tui.engine import Locations, interview_lines, list_interviews
from akh_tui.tui.world.app import WorldBench
from akh_tui.tui.world.interview import InterviewScreen

from tests.tui.test_world_bench import SIZE, sync, until

WIDE, SMALL = (120, 36), (80, 24)
TO_6_BOLD = ["n"] * 6 + ["comma", "comma"]  # the market after six rounds, the panes on step 11, 6:bold


def market(tmp: Path) -> WorldBench:
    return WorldBench("market", sync=True, locations=Locations(tmp / "data", tmp / "config.toml"))


def log(app: WorldBench) -> str:
    screen = app.screen
    return screen.history_text() if isinstance(screen, InterviewScreen) else ""


@sync
async def test_i_interviews_the_shown_agent_at_the_step_shown_and_keeps_the_history(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*TO_6_BOLD, "i")
        await until(pilot, lambda: isinstance(app.screen, InterviewScreen))
        assert "no interview of bold at this step yet" in log(app)
        app.screen.query_one(Input).value = "why not kg_query?"
        await pilot.press("enter")
        await until(pilot, lambda: "lost to" in log(app))
        [kept] = list_interviews(app.world.run.locations)["interviews"]
        assert kept["at"] == "6:bold" and kept["parent"] == "main"
        assert log(app).splitlines() == ["you: why not kg_query?", *interview_lines(kept)[1:]]
        steps = len(list(app.world.run.steps()))
        assert app.world.run.branch_name == "main"  # the interview moved nothing of the world
        # a utility agent has no model to ask: said in the history, the screen stays
        await pilot.press("ctrl+o")
        app.screen.query_one(Input).value = "why?"
        await pilot.press("enter")
        await until(pilot, lambda: "no model to ask" in log(app))
        await pilot.press("escape")
        assert not isinstance(app.screen, InterviewScreen)
        # opened again: the history is read back from the store
        await pilot.press("i")
        await until(pilot, lambda: isinstance(app.screen, InterviewScreen) and "lost to" in log(app))
        assert "no model to ask" not in log(app)
        await pilot.press("escape", "space")  # the world steps on, on main
        await until(pilot, lambda: len(list(app.world.run.steps())) == steps + 1)


@sync
async def test_an_agent_that_has_taken_no_step_opens_nothing(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("i")
        assert not isinstance(app.screen, InterviewScreen)


def _asked(*questions: str):
    async def run_before(pilot) -> None:
        await pilot.press(*TO_6_BOLD, "i")
        for q in questions:
            pilot.app.screen.query_one(Input).value = q
            await pilot.press("enter")
        await pilot.pause()
    return run_before


def test_an_interview(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), run_before=_asked("why?", "who moved you?"), terminal_size=WIDE)


def test_an_interview_at_80x24(snap_compare, tmp_path):
    assert snap_compare(market(tmp_path), run_before=_asked("why not bid?"), terminal_size=SMALL)



@sync
async def test_ctrl_o_asks_a_model_agents_model_on_a_worker_thread(tmp_path):
    from akh_tui.engine.paths import bundled_data_dir
    from akh_tui.tui.world.interview import interview_screen

    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    world = tmp_path / "w.toml"
    world.write_text(f'[world]\nname = "m"\nrounds = 4\n[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\n'
                     f'decider = "scripted"\n', encoding="utf-8")
    app = WorldBench(str(world), sync=True, locations=Locations(tmp_path / "data", tmp_path / "config.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n")
        screen = interview_screen(app.world, "a", None, sync=False)  # asked as a live model is: off the UI thread
        assert isinstance(screen, InterviewScreen)
        await app.push_screen(screen)
        await pilot.press("ctrl+o")
        screen.query_one(Input).value = "why did you choose that?"
        await pilot.press("enter")
        await until(pilot, lambda: "my model says" in log(app))
        text = log(app)
        assert "you: why did you choose that?   (its model too)" in text
        assert "  scripted: you asked 'why did you choose that?'. I chose " in text and "what my record says:" in text


@sync
async def test_a_pinned_agent_is_interviewed_at_its_newest_step_at_or_before_the_step_shown(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press(*TO_6_BOLD, "2", "i")  # the panes follow cautious; the step shown is 6:bold
        await until(pilot, lambda: isinstance(app.screen, InterviewScreen))
        cursor = app.cursor
        assert cursor is not None
        mine = [s for s in app.world.steps[: cursor + 1] if s.agent == "cautious"][-1]
        assert app.screen.agent == "cautious" and app.screen.where.startswith(f"{mine.round}:cautious (step {mine.index + 1},")
        app.screen.query_one(Input).value = "what happened?"
        await pilot.press("enter")
        await until(pilot, lambda: "progress" in log(app))
        [kept] = list_interviews(app.world.run.locations)["interviews"]
        assert (kept["agent"], kept["step"]) == ("cautious", mine.step)
