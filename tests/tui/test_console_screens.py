"""The query console (Q) and the rule browser (R) in the workbench, driven as a user would
(Pilot): what the screen says is what the engine answers for the cycle on show."""

from __future__ import annotations

from textual.widgets import Input, OptionList, Static

from akh_tui.tui.dialogs import HelpScreen
from akh_tui.tui.query_screen import QueryScreen
from akh_tui.tui.rules_screen import RulesScreen
from tests.helpers import drive


def shown(screen, wid: str) -> str:
    return str(screen.query_one(wid, Static).render())


async def type_in(pilot, text: str) -> None:
    box = pilot.app.screen.query_one(Input)
    box.value = text
    await pilot.press("enter")
    await pilot.pause()


def test_query_console_answers_live_and_says_what_is_wrong(workbench):
    async def script(app, pilot):
        await pilot.press(*["space"] * 6, "Q")
        await pilot.pause()
        assert isinstance(app.screen, QueryScreen)
        await type_in(pilot, "(?x lives-in")
        assert "no ')' closes" in shown(app.screen, "#query-answer")
        await type_in(pilot, "(?x lives-in ocean)")
        text = shown(app.screen, "#query-answer")
        want = app.ctl.query("(?x lives-in ocean)")
        assert f"{want['total']} answer(s)" in text
        assert all(f"?x={r['values']['?x']}" in text for r in want["rows"])
        assert "whale lives-in ocean  [inferred by rule inherit" in text
        await pilot.press("up")  # the queries asked come back into the box, newest first
        assert app.screen.query_one(Input).value == "(?x lives-in ocean)"
        await pilot.press("up")  # the refused one too: nothing typed is lost
        assert app.screen.query_one(Input).value == "(?x lives-in"
        await pilot.press("escape")
        assert not isinstance(app.screen, QueryScreen)

    drive(workbench("zoo"), script)


def test_query_console_at_a_replayed_cycle_asks_that_cycle(workbench):
    async def script(app, pilot):
        await pilot.press(*["space"] * 6, *["comma"] * 5, "Q")  # replaying cycle 1
        await pilot.pause()
        assert app.replay == 1 and "at cycle 1 (replay)" in shown(app.screen, "#query-title")
        await type_in(pilot, "(?x lives-in ocean)")
        text = shown(app.screen, "#query-answer")
        assert "?x=shark" in text and "?x=whale" not in text  # inferred at a later cycle
        assert "?x=whale" in "\n".join(app.ctl.query("(?x lives-in ocean)")["lines"])  # as it is now

    drive(workbench("zoo"), script)


def test_rule_browser_why_not_is_the_engines(workbench):
    async def script(app, pilot):
        await pilot.press(*["space"] * 6, "R")
        await pilot.pause()
        assert isinstance(app.screen, RulesScreen)
        await type_in(pilot, "dog")
        names = [m["rule"] for m in app.ctl.rules(symbol="dog")["rules"]]
        lists = app.screen.query_one(OptionList)
        assert lists.has_focus and lists.option_count == len(names)
        await pilot.press(*["down"] * names.index("inherit(lives-in)"))
        await pilot.pause()
        text = shown(app.screen, "#rules-text")
        want = next(m for m in app.ctl.rules(rule="inherit(lives-in)", symbol="dog")["rules"])
        assert want["why_not"][0] in text.replace("\n", " ")
        assert "premise 2 (?b lives-in ?c) failed" in want["why_not"][0]
        await type_in_after_focus(pilot, "unicorn")
        assert "no symbol 'unicorn'" in shown(app.screen, "#rules-title")

    drive(workbench("zoo"), script)


async def type_in_after_focus(pilot, text: str) -> None:
    await pilot.press("ctrl+w")  # back to the symbol box
    assert pilot.app.screen.query_one(Input).has_focus
    await type_in(pilot, text)


def test_help_lists_the_console_keys(workbench):
    async def script(app, pilot):
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "in the query console (Q)" in text and "in the rule browser (R)" in text

    drive(workbench("zoo"), script)


# ---- the state editor (x) ----------------------------------------------------------------------
def test_state_edits_are_staged_undone_and_applied_live(workbench):
    from akh_tui.tui.state_edit import StateEditScreen

    async def script(app, pilot):
        await pilot.press(*["space"] * 4, "x")
        await pilot.pause()
        assert isinstance(app.screen, StateEditScreen)
        await type_in(pilot, "goal 3 priority=250")
        await type_in(pilot, "goal 2 status=suspended")
        assert "staged (2)" in shown(app.screen, "#edit-staged")
        await pilot.press("ctrl+z")  # taken back before it applies, into the box
        assert "staged (1)" in shown(app.screen, "#edit-staged")
        assert app.screen.query_one("#edit-line", Input).value == "goal 2 status=suspended"
        await type_in(pilot, "teleport 3")
        assert "unknown edit 'teleport'" in shown(app.screen, "#edit-note")
        assert app.screen.query_one("#edit-line", Input).value == "teleport 3"  # kept to be corrected
        await type_in(pilot, "goal 9 status=active")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "edit 2 refused (goal): no goal #9" in shown(app.screen, "#edit-note")
        goals = {g["id"]: g for g in app.ctl.view()["goals"]}
        assert goals[3]["priority"] == 128  # a refused set changes nothing
        await pilot.press("ctrl+z")
        await pilot.press("escape")  # closed and opened again: what is staged and the line in the box are kept
        await pilot.press("x")
        await pilot.pause()
        assert "staged (1)" in shown(app.screen, "#edit-staged")
        assert app.screen.query_one("#edit-line", Input).value == "goal 9 status=active"
        await type_in(pilot, "goal 2 status=active")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, StateEditScreen)
        goals = {g["id"]: g for g in app.ctl.view()["goals"]}
        assert goals[3]["priority"] == 250 and goals[2]["status"] == "active"
        assert app.staged_edits == []

    drive(workbench("zoo"), script)


def test_state_edits_at_a_replayed_cycle_fork_a_branch(workbench):
    from akh_tui.tui.state_edit import StateEditScreen

    async def script(app, pilot):
        await pilot.press(*["space"] * 6, *["comma"] * 4, "x")  # replaying cycle 2
        await pilot.pause()
        assert isinstance(app.screen, StateEditScreen) and app.screen.replay
        await type_in(pilot, 'goal 1 criteria="(dog is-a mammal)"')
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.ctl.branch_name == "edit-at-2" and app.ctl.cycle == 2 and app.replay is None
        assert app.ctl.view()["goals"][0]["criteria"] == "(dog is-a mammal)"

    drive(workbench("zoo"), script)


# ---- the flow (G) ------------------------------------------------------------------------------
def test_flow_draws_every_goal_under_its_parent_and_lights_the_focus_and_the_active_step(tmp_path):
    from akh_tui.engine import Locations, Run
    from akh_tui.tui.flow_screen import flow_text

    run = Run.start(Locations.resolve(data_dir=tmp_path), "solar", 7)
    try:
        for _ in range(21):
            run.step()
        view = run.view()
        lines = flow_text(view, 74).plain.splitlines()
        at = {}
        for g in view["goals"]:
            hits = [i for i, line in enumerate(lines) if f"#{g['id']} " in line and g["description"] in line]
            assert len(hits) == 1, g
            at[g["id"]] = hits[0]
        for g in view["goals"]:
            if g["parent"] is not None:
                assert at[g["parent"]] < at[g["id"]]
                assert lines[at[g["id"]]].lstrip("│ ").startswith(("├─", "└─"))
        assert "◀ focus" in lines[at[view["focus"]]] and sum("◀ focus" in line for line in lines) == 1
        plan = view["plans"][view["focus"]]
        active = [s["tool"] for s in plan["steps"] if s["status"] == "active"]
        text = "\n".join(lines)
        assert [f"▶ {t}" in text for t in active] == [True] * len(active) and text.count("▶") == sum(
            s["status"] == "active" for p in view["plans"].values() for s in p["steps"])
    finally:
        run.close()


def test_flow_opens_on_G_and_follows_the_run(workbench):
    from akh_tui.tui.flow_screen import FlowScreen

    async def script(app, pilot):
        await pilot.press("space", "G")
        await pilot.pause()
        assert isinstance(app.screen, FlowScreen) and "cycle 1 live" in shown(app.screen, "#flow-title")
        await pilot.press("space")  # the workbench's keys still step the run: the picture follows
        await pilot.pause()
        assert "cycle 2 live" in shown(app.screen, "#flow-title")

    drive(workbench("zoo"), script)


# ---- watches -----------------------------------------------------------------------------------
def test_a_watch_shows_every_cycle_and_a_break_watch_pauses_the_run(workbench):
    from akh_tui.tui.watches import WatchStrip

    async def script(app, pilot):
        await pilot.press("space", "Q")
        await pilot.pause()
        await type_in(pilot, "(?x lives-in ocean)")
        await pilot.press("ctrl+b")  # a watch that is a breakpoint
        await type_in(pilot, "goals")
        await pilot.press("ctrl+t")  # a plain watch
        await pilot.press("escape")
        await pilot.pause()
        strip = app.query_one(WatchStrip)
        assert strip.display and "(?x lives-in ocean) = 4" in str(strip.render())
        assert "goals = 3" in str(strip.render())
        hits: list[str] = []
        for _ in range(10):  # step until the inferred (whale lives-in ocean) ... changes the watch
            await pilot.press("space")
            await pilot.pause()
            hits = [str(x.message) for x in app._notifications if "watch (?x lives-in ocean)" in str(x.message)]
            if hits:
                break
        cycle = app.ctl.cycle
        value = app.ctl.query("(?x lives-in ocean)")["total"]
        assert hits == [f"cycle {cycle}: watch (?x lives-in ocean) changed: 4 → {value}"] and value > 4
        assert app.ctl.query("(?x lives-in ocean)", cycle=cycle - 1)["total"] == 4  # it paused at the change
        assert f"(?x lives-in ocean) = {value}" in str(strip.render())

    drive(workbench("zoo"), script)


def test_a_break_watch_pauses_a_running_workbench(tmp_path):
    """The real engine thread: run at full speed; the watch pauses it at the cycle its answer changed."""
    import asyncio
    import time

    from akh_tui.engine import Locations, UserConfig
    from akh_tui.tui.app import Workbench
    from akh_tui.tui.watches import Watch

    app = Workbench("zoo", config=UserConfig.load(tmp_path / "c.toml"),
                    locations=Locations(tmp_path / "data", tmp_path / "c.toml"))

    async def script(app, pilot):
        app.watches.append(Watch("(?x lives-in ocean)", stop=True, value=4))
        app.speed_index = len(app.speed_levels()) - 1
        await pilot.press("r")
        deadline = time.monotonic() + 30
        while (app.running or app.ctl.cycle == 0) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert not app.running
        cycle = app.ctl.cycle
        assert app.ctl.query("(?x lives-in ocean)")["total"] > 4
        assert app.ctl.query("(?x lives-in ocean)", cycle=cycle - 1)["total"] == 4

    drive(app, script)
