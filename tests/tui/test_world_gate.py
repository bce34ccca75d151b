"""The world workbench's gate: `g` gates the shown agent (the roster marks it), its turn stops
after decide and a dialog asks (approve, reject with a reason, choose a numbered tool); the
world waits meanwhile, pause and quit still work. Pilot scripts on the real engine thread,
waiting for what the screen shows."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from pathlib import Path
from typing import Awaitable, Callable

from akh_tui.engine import Answer, InputError, Locations, WorldRun
from akh_tui.tui.world.app import WorldBench
from akh_tui.tui.world.gate import GateScreen
from akh_tui.tui.world.roster import GATE_MARK
from akh_tui.tui.world.lanes import Swimlanes

SIZE = (120, 36)


def locs(tmp: Path) -> Locations:
    return Locations(tmp / "data", tmp / "config.toml")


def sync(test: Callable[..., Awaitable[None]]) -> Callable[..., None]:
    @functools.wraps(test)
    def run(*args: object, **kwargs: object) -> None:
        asyncio.run(test(*args, **kwargs))
    return run


async def until(pilot, check: Callable[[], bool], timeout: float = 30.0) -> None:
    """Wait (with a deadline, never a fixed sleep) until `check` holds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("the screen never showed it")
        await pilot.pause(0.02)


def status(app: WorldBench) -> str:
    return str(app.status_bar.render())


def roster_row(app: WorldBench, aid: str) -> list[str]:
    return [str(c) for c in app.roster.get_row(aid)]


def bold_records(app: WorldBench) -> list[dict]:
    return [json.loads(x) for row in app.world.run.steps() if row.agent == "bold" for x in row.lines
            if x.startswith('{"type":"cycle"')]


async def gate_bold_and_reach_its_turn(app: WorldBench, pilot) -> GateScreen:
    """Gate bold (`1` shows it, `g` gates it); cautious acts first in round 1, then bold's turn asks."""
    await pilot.press("1", "g")
    await until(pilot, lambda: GATE_MARK in roster_row(app, "bold")[1])
    assert "bold is gated" in status(app)
    await pilot.press("space")
    await until(pilot, lambda: len(app.world.steps) == 1)
    await pilot.press("space")
    await until(pilot, lambda: isinstance(app.screen, GateScreen))
    assert isinstance(app.screen, GateScreen)
    return app.screen


@sync
async def test_a_gated_agents_turn_waits_for_the_dialog_and_a_chosen_tool_runs(tmp_path):
    app = WorldBench("market", locations=locs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        dialog = await gate_bold_and_reach_its_turn(app, pilot)
        p = dialog.proposal
        assert p.agent == "bold" and p.round == 1 and p.tool == "read_artifact"
        await until(pilot, lambda: "bold waits for your answer" in status(app))
        title = str(dialog.query_one("#gate-title").render())
        assert "Round 1 · bold proposes read_artifact(bold-ledger@1)" in title
        # the world waits: nothing is recorded while the dialog is open, and pause still works
        assert app.world.run.last_step == 1 and len(app.world.steps) == 1
        note = lambda: str(dialog.query_one("#gate-error").render())  # noqa: E731
        await pilot.press("p")  # stepped, not running: p runs on after the answer, p again pauses
        await until(pilot, lambda: "running: the world goes on after this answer" in note() and app.running)
        await pilot.press("p")
        await until(pilot, lambda: "paused: the world stops after this answer" in note() and not app.running)
        # a refused answer leaves the proposal waiting (the dialog shows it)
        try:
            app.world.answer_gate(Answer("choose", tool="shell_exec"))
            raise AssertionError("a tool not offered was taken")
        except InputError as exc:
            assert "cannot choose 'shell_exec'" in str(exc)
        assert app.world.waiting is p
        await pilot.press("3")  # the third offered tool: bid
        await until(pilot, lambda: not isinstance(app.screen, GateScreen) and len(app.world.steps) == 2)
        await until(pilot, lambda: roster_row(app, "bold")[4] == "chosen")
        assert roster_row(app, "bold")[3] == "bid"
        rec = bold_records(app)[-1]
        assert rec["decide"]["tool"] == "bid"
        assert rec["decide"]["user"] == {"decision": "choose", "tool": "bid", "by": "user", "why": "",
                                         "proposed": "read_artifact"}
        await pilot.press("q")


@sync
async def test_reject_with_a_reason_is_a_veto_on_the_lane_and_in_the_roster(tmp_path):
    app = WorldBench("market", locations=locs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await gate_bold_and_reach_its_turn(app, pilot)
        await pilot.press("tab")
        await pilot.press(*"too risky")
        await pilot.press("enter")  # enter in the reason box rejects with it
        await until(pilot, lambda: len(app.world.steps) == 2)
        await until(pilot, lambda: roster_row(app, "bold")[4] == "rejected")
        rec = bold_records(app)[-1]
        assert rec["decide"]["user"] == {"decision": "reject", "tool": "read_artifact", "by": "user", "why": "too risky"}
        assert rec["act"]["output"] == "VETOED by the user: too risky"
        lanes = app.query_one(Swimlanes)
        await until(pilot, lambda: "!" in lanes.render_line(2).text)  # bold's lane: the veto glyph
        await pilot.press("q")


@sync
async def test_not_now_drops_the_turn_and_a_run_waits_at_the_gate_then_goes_on(tmp_path):
    app = WorldBench("market", locations=locs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await gate_bold_and_reach_its_turn(app, pilot)
        await pilot.press("escape")
        await until(pilot, lambda: "not now: that turn was not taken" in status(app))
        assert app.world.run.last_step == 1 and app.world.waiting is None
        # running: the world stops at bold's turn, and goes on after the answer
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, GateScreen))
        held = app.world.run.last_step
        assert app.running and held == 1  # bold's turn is next: nothing after it ran
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, GateScreen) and app.world.run.last_step > held)
        assert [r["decide"]["user"]["decision"] for r in bold_records(app)] == ["approve"]
        await pilot.press("q")


@sync
async def test_quitting_at_the_gate_keeps_every_committed_step_and_nothing_of_the_waiting_one(tmp_path):
    app = WorldBench("market", locations=locs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await gate_bold_and_reach_its_turn(app, pilot)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running)
    r = WorldRun.resume(locs(tmp_path))
    try:
        assert r.last_step == 1 and [s.agent for s in r.steps()] == ["cautious"]
        nxt = r.step()  # the world goes on at bold's turn (ungated: nobody asked in this session)
        assert nxt is not None and nxt.agent == "bold"
    finally:
        r.close()


@sync
async def test_the_help_lists_the_gate_key_and_the_dialogs_keys(tmp_path):
    from tests.helpers import text_of

    app = WorldBench("market", sync=True, locations=locs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await until(pilot, lambda: "world.gate.approve" in text_of(app.screen.query_one("Static")))
        text = text_of(app.screen.query_one("Static"))
        for key in ("world.gate", "world.gate.reject", "world.gate.not_now", "world.gate.pause", "world.gate.quit"):
            assert key in text
        assert "in the gate's dialog" in text


@sync
async def test_a_workbench_on_one_thread_says_it_cannot_wait_instead_of_hanging(tmp_path):
    app = WorldBench("market", sync=True, locations=locs(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "g", "space")  # cautious gated; it acts first
        await until(pilot, lambda: "nothing can wait for the dialog" in status(app))
        assert app.world.run.last_step == 0 and not isinstance(app.screen, GateScreen)
        await pilot.press("g")  # ungated: the turn goes on
        await until(pilot, lambda: "cautious is no longer gated" in status(app))
        await pilot.press("space")
        await until(pilot, lambda: app.world.run.last_step == 1)
