"""The world workbench (`akh-tui --world FILE`): Pilot tests that wait for what the screen
shows. Engine commands run on the UI thread (`sync=True`) except where the engine thread is
the point."""

from __future__ import annotations

import asyncio
import time
import functools
from pathlib import Path
from typing import Awaitable, Callable

from textual.app import App
from textual.widgets import DataTable, Input, TabbedContent

from akh_tui.engine import LaneStep, WorldWatch
from akh_tui.bench.world_ui import endless_world
from akh_tui.engine import Locations, load_world
from akh_tui.tui.world.app import SPEEDS, WorldBench
from akh_tui.tui.world.lanes import Swimlanes

SIZE = (120, 36)


def market(tmp: Path, name: str = "market") -> WorldBench:
    """A bundled world (the market by default), recorded in a data dir of its own."""
    return WorldBench(name, sync=True, locations=Locations(tmp / "data", tmp / "config.toml"))


def status(app: WorldBench) -> str:
    return str(app.status_bar.render())


async def until(pilot, check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait (with a deadline, never a fixed sleep) until the screen shows what `check` looks for."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("the screen never showed it")
        await pilot.pause(0.02)


def sync(test: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    """A Pilot script as a plain test (the suite has no async plugin)."""
    @functools.wraps(test)  # pytest reads the script's own signature: its fixtures are passed on
    def run(*args: object, **kwargs: object) -> None:
        asyncio.run(test(*args, **kwargs))
    return run


def lane(app: WorldBench, agent: str) -> str:
    lanes = app.query_one(Swimlanes)
    y = 2 + app.ids.index(agent)
    return lanes.render_line(y).text


@sync
async def test_number_keys_and_the_search_switch_the_agent_shown_and_follow(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        first = app.world.steps[0].agent  # shuffle: cautious acts first in round 1
        assert f"showing {first} (last to act)" in status(app)
        await pilot.press("1")
        assert "showing bold (following)" in status(app)
        assert "bold" in str(app.query_one("#score-box").border_title)
        await pilot.press("space", "space", "space")  # whoever acts, the panes stay on bold
        assert "showing bold (following)" in status(app)
        await pilot.press("slash")
        await until(pilot, lambda: bool(app.screen.query(Input)))
        await pilot.press("c", "u", "s", "enter")
        await until(pilot, lambda: "showing cautious (following)" in status(app))
        await pilot.press("f")  # unpinned: whoever acted last
        last = app.world.steps[-1].agent
        await until(pilot, lambda: f"showing {last} (last to act)" in status(app))


@sync
async def test_stepping_an_agent_and_a_round_moves_the_roster_and_the_lanes(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        step = app.world.steps[0]
        roster = app.query_one("#roster", DataTable)
        assert str(roster.get_cell(step.agent, "action")) == step.tool
        assert "●" in lane(app, step.agent)
        assert "next " in status(app)  # the other agent's turn comes
        await pilot.press("n")  # the rest of round 1
        assert app.world.round == 1 and len(app.world.steps) == 2
        await pilot.press("n")
        assert app.world.round == 2 and len(app.world.steps) == 4
        assert "round 2" in status(app) and "4 steps" in status(app)


@sync
async def test_moving_along_the_lanes_replays_a_step_read_only(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n", "n")
        await pilot.press("comma")
        assert "step 6 of 6" in status(app) and "REPLAY · l live" in status(app)
        await pilot.press("less_than_sign")  # ten back: the first step
        s = app.world.steps[0]
        assert "step 1 of 6" in status(app) and f"r1 {s.agent} {s.tool}" in status(app)
        assert app.screen.has_class("-replay")
        assert "(read-only)" in str(app.query_one("#score-box").border_title)
        assert app.score_table.get_cell(s.tool, "total")  # that step's scores are drawn
        await pilot.press("l")
        assert "REPLAY" not in status(app) and not app.screen.has_class("-replay")


@sync
async def test_split_shows_two_agents_score_tables_side_by_side(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "1", "s")
        box2 = app.query_one("#score2-box")
        assert box2.display and not app.query_one("#why-box").display
        assert "cautious" in str(box2.border_title) and "bold" in str(app.query_one("#score-box").border_title)
        await pilot.press("s")
        assert not box2.display and app.query_one("#why-box").display


@sync
async def test_a_mint_breakpoint_pauses_the_running_world(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("k")
        await until(pilot, lambda: bool(app.screen.query("#break-text")))
        for ch in "transfer>x":
            await pilot.press(ch)
        await pilot.press("enter")
        assert "transfer>N" in str(app.screen.query_one("#break-error").render())  # refused, the text kept
        assert app.screen.query_one("#break-text", Input).value == "transfer>x"
        app.screen.query_one("#break-text", Input).value = "mint"
        await pilot.press("enter", "escape")
        await until(pilot, lambda: "1 breakpoint(s)" in status(app))
        await pilot.press("r")  # runs until the breakpoint
        await until(pilot, lambda: "breakpoint mint: round 5" in status(app))
        assert not app.running and app.world.round == 5


@sync
async def test_the_shared_world_shows_artifacts_their_diff_the_ledger_and_the_mint(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(10):
            await pilot.press("n")
        await pilot.press("w")
        await until(pilot, lambda: bool(app.screen.query("#art-table")))
        arts = app.screen.query_one("#art-table", DataTable)
        assert arts.row_count == len(app.world.artifacts())
        written = next(a for a in app.world.artifacts() if a["version"] >= 2)
        arts.move_cursor(row=[a["id"] for a in app.world.artifacts()].index(written["id"]))
        await pilot.pause()
        detail = str(app.screen.query_one("#art-text").render())
        assert f"diff v{written['version'] - 1} → v{written['version']}" in detail
        added = app.world.artifact_diff(written["id"], written["version"] - 1, written["version"])
        assert added and added[0] in detail
        app.screen.query_one(TabbedContent).active = "mint"
        await pilot.pause()
        mints = app.screen.query_one("#mint-table", DataTable)
        assert mints.row_count == 2  # rounds 5 and 10
        app.screen.query_one(TabbedContent).active = "ledger"
        await pilot.pause()
        assert app.screen.query_one("#ledger-log", DataTable).row_count == len(app.world.ledger_log)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is app.screen_stack[0])


@sync
async def test_a_psyche_edited_live_vetoes_at_that_agents_next_turn(tmp_path):
    from akh_tui.tui.psyche_editor import PsycheEditorScreen, PsycheTextArea

    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "1", "e")
        await until(pilot, lambda: isinstance(app.screen, PsycheEditorScreen))
        ta = app.screen.query_one(PsycheTextArea)
        ta.text = ta.text + '\n[[shadow.veto_patterns]]\nname = "no_trading"\ntriggers = ["tool="]\n'
        await until(pilot, lambda: app.screen.error is None and app.screen.draft == ta.text)
        await pilot.press("ctrl+s", "escape")
        await until(pilot, lambda: not isinstance(app.screen, PsycheEditorScreen))
        assert "bold's psyche edited" in status(app)
        await pilot.press("n")
        assert "!" in lane(app, "bold") and "!" not in lane(app, "cautious")


@sync
async def test_the_engine_thread_runs_the_world_and_pauses(tmp_path):
    spec = load_world(str(endless_world(tmp_path)))  # it runs until paused
    app = WorldBench(watch=WorldWatch.open(spec, Locations(tmp_path / "data", tmp_path / "config.toml")))
    async with app.run_test(size=SIZE) as pilot:
        app.speed_index = len(SPEEDS) - 1  # as fast as the engine goes
        await pilot.press("r")
        await until(pilot, lambda: len(app.world.steps) >= 20, timeout=60)
        assert app.running
        await pilot.press("r")
        await until(pilot, lambda: "■ paused" in status(app), timeout=60)
        n = len(app.world.steps)
        await pilot.pause(0.2)
        assert len(app.world.steps) == n  # paused: no step after the pause was drawn


class Counting(list):
    """A list that counts the items read: a frame of the lanes must read only those in view."""

    reads = 0

    def __getitem__(self, i):  # type: ignore[override]
        Counting.reads += 1
        return super().__getitem__(i)


@sync
async def test_ten_thousand_steps_draw_only_the_visible_window():
    ids = ["bold", "cautious", "third"]
    steps = Counting(LaneStep(i, i // 3 + 1, float(i), ids[i % 3], "kg_query", "act", "advanced", "RRR", i // 3 + 1)
                     for i in range(10_000))

    class Lanes(App[None]):
        def compose(self):
            yield Swimlanes(ids, steps, id="lanes")

    app = Lanes()
    async with app.run_test(size=SIZE) as pilot:
        lanes = app.query_one(Swimlanes)
        lanes.show(None, "bold")
        await pilot.pause()
        Counting.reads = 0
        lines = [lanes.render_line(y) for y in range(5)]
        assert Counting.reads <= 5 * (lanes.columns + 1)
        assert list(lanes.window())[-1] == 9_999  # live: the newest steps in view
        assert "r3332" in lines[0].text and "r1 " not in lines[0].text  # the rounds in view are labelled
        lanes.show(5, "bold")  # the cursor far back: the window moves to it
        assert 5 in lanes.window()


@sync
async def test_a_fork_with_a_changed_order_and_the_two_branches_compared(tmp_path):
    app = market(tmp_path, "harbour")  # three agents: pilot, harbourmaster, fisher (round-robin)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")  # main: round 1, pilot, harbourmaster, fisher
        await pilot.press("less_than_sign")  # back to step 1: the pilot has acted, the other two are to come
        await pilot.press("F")
        await until(pilot, lambda: bool(app.screen.query("#fork-edits")))
        app.screen.query_one("#fork-edits", Input).value = "order=zed"
        await pilot.press("enter")
        assert "name agents of this world" in str(app.screen.query_one("#fork-error").render())
        app.screen.query_one("#fork-edits", Input).value = "order=pilot"
        await pilot.press("enter")
        assert "must name exactly those agents" in str(app.screen.query_one("#fork-error").render())
        app.screen.query_one("#fork-edits", Input).value = "order=fisher,harbourmaster"
        await pilot.press("enter")
        await until(pilot, lambda: "forked fork-1 after step 1" in status(app))
        assert app.world.run.branch_name == "fork-1" and app.world.next_agent() == "fisher"
        await pilot.press("space")
        assert app.world.steps[-1].agent == "fisher"
        await pilot.press("b")
        await until(pilot, lambda: "w1:main and w1:fork-1 first differ at step 2" in status(app))
        assert "1:harbourmaster" in status(app) and "1:fisher" in status(app)


@sync
async def test_a_soar_agents_why_pane_explains_it_by_its_operators(tmp_path):
    import pytest

    pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")
    from tests.helpers import text_of

    app = market(tmp_path, "market-soar")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3", "n", "n")  # the Soar trader shown; two rounds
        await until(pilot, lambda: "the Soar agent's decision" in text_of(app.query_one("#why")))
        why = text_of(app.query_one("#why"))
        assert "proposed by world*propose*act" in why and "score" not in why.split("\n")[0]
        await pilot.press("1")  # an OODA trader: the table's own story, no Soar words
        await until(pilot, lambda: "showing bold" in status(app))
        assert "Soar" not in text_of(app.query_one("#why"))


# ---- walked in a real terminal (issue 26's Done-when): what a person found there ----------------

@sync
async def test_the_working_memory_pane_follows_the_agent_shown(tmp_path):
    # both traders are at cycle 2 with entries of the same ids: the list must still change
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n", "2")
        memory = app.query_one("#memory-entries")
        shown = lambda: [e["content"] for e in memory.entries]  # noqa: E731
        assert shown() == [e["content"] for e in app.world.view("cautious")["wm"]["entries"]]
        await pilot.press("1")
        await until(pilot, lambda: "showing bold" in status(app))
        bold = [e["content"] for e in app.world.view("bold")["wm"]["entries"]]
        assert bold != [e["content"] for e in app.world.view("cautious")["wm"]["entries"]]
        assert shown() == bold


@sync
async def test_a_transfer_breakpoint_stops_at_the_deckhands_tip_and_the_note_goes_at_the_next_step(tmp_path):
    app = market(tmp_path, "harbour-crew")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("k")
        await until(pilot, lambda: bool(app.screen.query("#break-text")))
        assert "agent:pilot:bid" in str(app.screen.query_one("#break-text", Input).placeholder)  # this world's agent
        app.screen.query_one("#break-text", Input).value = "transfer>3"
        await pilot.press("enter", "escape")
        await pilot.press("r")
        await until(pilot, lambda: "breakpoint transfer>3: deckhand → pilot 4 scrip" in status(app))
        assert [s.agent for s in app.world.steps] == ["pilot", "harbourmaster", "deckhand"]
        await pilot.press("space")
        assert "breakpoint" not in status(app).replace("1 breakpoint(s)", "")


@sync
async def test_a_live_psyche_edit_is_named_until_that_agents_next_turn_and_its_veto_in_the_roster(tmp_path):
    from akh_tui.tui.psyche_editor import PsycheEditorScreen, PsycheTextArea

    app = market(tmp_path, "harbour-crew")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "2", "e")
        await until(pilot, lambda: isinstance(app.screen, PsycheEditorScreen))
        assert "Psyche of harbourmaster" in str(app.screen.query_one("#psyche-title").render())
        ta = app.screen.query_one(PsycheTextArea)
        ta.text = ta.text + '\n[[shadow.veto_patterns]]\nname = "no_tools"\ntriggers = ["tool="]\n'
        await until(pilot, lambda: app.screen.error is None and app.screen.draft == ta.text)
        assert "applies at harbourmaster's next turn" in str(app.screen.query_one("#psyche-status").render())
        await pilot.press("ctrl+s", "escape")
        await until(pilot, lambda: not isinstance(app.screen, PsycheEditorScreen))
        pending = "harbourmaster's psyche edited: in effect at its next turn"
        assert pending in status(app)
        await pilot.press("space")  # the pilot's turn: still pending
        assert pending in status(app)
        await pilot.press("space")  # harbourmaster's: vetoed, and the status line no longer says pending
        assert app.world.steps[-1].agent == "harbourmaster" and app.world.steps[-1].kind == "veto"
        assert pending not in status(app)
        assert str(app.query_one("#roster", DataTable).get_cell("harbourmaster", "result")) == "vetoed"


@sync
async def test_the_fork_dialog_names_who_is_still_to_act_and_a_refusal_in_the_dialogs_words(tmp_path):
    app = market(tmp_path, "harbour-crew")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "F")  # after the round's last step: nobody left to reorder
        await until(pilot, lambda: bool(app.screen.query("#fork-edits")))
        assert "round 1 ends there" in str(app.screen.query_one("#fork-rest").render())
        app.screen.query_one("#fork-edits", Input).value = "order=pilot,deckhand"
        await pilot.press("enter")
        error = str(app.screen.query_one("#fork-error").render())
        assert "field 'order='" in error and "--order" not in error
        await pilot.press("escape", "less_than_sign", "F")  # after step 1: the pilot has acted
        await until(pilot, lambda: bool(app.screen.query("#fork-edits")))
        assert "still to act in round 1: harbourmaster, deckhand" in str(app.screen.query_one("#fork-rest").render())
        assert app.screen.query_one("#fork-edits", Input).placeholder == "e.g. order=deckhand,harbourmaster"


@sync
async def test_at_80x24_three_agents_keep_the_status_roster_and_lanes_on_screen(tmp_path):
    app = market(tmp_path, "harbour-crew")
    async with app.run_test(size=(80, 24)) as pilot:
        app.breaks = ["transfer>3"]
        app.world.set_breaks(app.breaks)
        await pilot.press("space", "space", "space")
        await pilot.pause()
        for wid in ("#status", "#roster-box", "#lanes-box", "#score-box"):
            region = app.query_one(wid).region
            assert region.height > 0 and region.y >= 0 and region.bottom <= 23, (wid, region)  # above the footer
        assert app.screen.scroll_y == 0
        lanes = app.query_one("#lanes-box").region
        assert lanes.height == 2 + 2 + 3  # round, clock and a lane per agent, all drawn
        # the status line's short words leave its second row for the breakpoint's reason, whole
        assert status(app).endswith("deckhand → pilot 4 scrip (transfer from deckhand)")
        assert len(status(app)) <= 2 * 78


@sync
async def test_at_80x24_the_goals_pane_keeps_the_focus_goal_in_view(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*["n"] * 6, "1")  # bold's first goal is done: the focus is #2, below it
        await until(pilot, lambda: "bold" in status(app))
        goals = app.query_one("#goals")
        await until(pilot, lambda: "▶" in "".join(goals.render_line(y).text for y in range(goals.size.height)))


@sync
async def test_while_the_panes_replay_a_step_the_roster_says_it_is_the_world_now(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n", "less_than_sign")
        assert str(app.query_one("#roster-box").border_title) == "Roster · now (the panes replay step 1)"
        await pilot.press("l")
        assert not app.query_one("#roster-box").border_title
        await pilot.press("k")
        await until(pilot, lambda: bool(app.screen.query("#breaks")))
        assert str(app.screen.query_one("#breaks").border_title).startswith("set")


@sync
async def test_the_fork_dialog_forks_with_a_decider_goal_and_limit_edit_and_refuses_a_bad_one_in_its_words(tmp_path):
    app = market(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "n")
        await pilot.press("F")
        await until(pilot, lambda: bool(app.screen.query("#fork-edits")))
        app.screen.query_one("#fork-edits", Input).value = "goal=bold:1 status=sleeping"
        await pilot.press("enter")
        error = str(app.screen.query_one("#fork-error").render())
        assert "goal= status" in error and "--goal" not in error
        app.screen.query_one("#fork-edits", Input).value = "limit=actions=-2"
        await pilot.press("enter")
        assert "must be an integer >= 0" in str(app.screen.query_one("#fork-error").render())
        app.screen.query_one("#fork-edits", Input).value = (
            'decider=bold:scripted; goal=cautious:new "watch bold" priority=201; limit=actions=0')
        await pilot.press("enter")
        await until(pilot, lambda: "forked fork-1" in status(app))
        run = app.world.run
        assert run.world.agents["bold"].decider.kind == "scripted" and dict(run.spec.limits.caps)["actions"] == 0
        assert [g.priority for g in run.world.agents["cautious"].goals.values() if g.description == "watch bold"] == [201]
        assert dict(app.world.spec.limits.caps)["actions"] == 0  # what the workbench shows of the limits
