"""A class tab (tui/world/class_app.py, `serve --world`): what the teacher's and a student's tab
show of a class's snapshot, and what their keys send to the owner. The owner here is a stand-in
that answers with a fixed snapshot and keeps what the tab sent (the real owner and channel are
tests/engine/world/test_classroom.py's and tests/cli/test_serve_world.py's)."""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

from akh_tui.tui.world.class_app import ClassTab
from tests.helpers import drive

WIDE, SMALL = (120, 36), (80, 24)

ROSTER = [
    {"id": "bold", "state": "RUNNING", "action": "read_artifact", "result": "completed", "scrip": 54, "goals_done": 1,
     "goals": 2},
    {"id": "cautious", "state": "RUNNING", "action": "kg_query", "result": "advanced", "scrip": 46, "goals_done": 1,
     "goals": 2},
]
BASE: dict[str, Any] = {
    "version": 7, "world": "market", "round": 3, "clock": 4.0, "steps": 5, "over": False, "next": "cautious",
    "rounds": 30, "roster": ROSTER,
    "artifacts": [{"id": "bold-ledger", "owner": "bold", "version": 1, "price": 4, "by": "(world file)", "at_round": 0,
                   "size": 14},
                  {"id": "bold-g2", "owner": "bold", "version": 1, "price": 1, "by": "bold", "at_round": 3, "size": 6}],
    "balances": {}, "minted": 0, "running": True, "speed": 2.0, "note": "", "timeout_s": 60.0,
    "decisions": [{"round": 3, "agent": "bold", "seat": "seat:bold", "proposed": "write_artifact",
                   "decision": "approve", "tool": "write_artifact", "by": "seat:bold"}],
    "seats": {"bold": {"name": "seat:bold", "taken": True, "connected": True},
              "cautious": {"name": "seat:cautious", "taken": True, "connected": False}},
    "waiting": {"agent": "cautious", "seat": "seat:cautious", "left_s": 42.0},
}
PROPOSAL = {"number": 6, "round": 3, "tool": "read_artifact", "input": "bold-g2@1",
            "candidates": [{"tool": "read_artifact", "utility": 0.69, "input": "bold-g2@1"},
                           {"tool": "write_artifact", "utility": 0.51, "input": "cautious-g2"},
                           {"tool": "noop", "utility": 0.14, "input": None}],
            "why": "table: read_artifact 0.69, next write_artifact 0.51", "left_s": 42.0}


def teacher_snapshot() -> dict[str, Any]:
    s = copy.deepcopy(BASE)
    s["you"] = {"role": "teacher", "agent": None}
    s["join"] = {"bold": "http://127.0.0.1:8000/?token=T&seat=S1", "cautious": "http://127.0.0.1:8000/?token=T&seat=S2"}
    return s


def student_snapshot(proposal: bool = True) -> dict[str, Any]:
    s = copy.deepcopy(BASE)
    s["you"] = {"role": "student", "agent": "cautious", "seat": "seat:cautious", "holds": True, "why_not": None,
                "proposal": copy.deepcopy(PROPOSAL) if proposal else None}
    return s


PSYCHE = (Path(__file__).parents[2] / "akh_tui" / "data" / "worlds" / "market" / "cautious.toml").read_text(encoding="utf-8")


class StandIn:
    """The owner's side of the channel, as the tab's ClassClient calls it."""

    def __init__(self, snap: dict[str, Any]) -> None:
        self.snap = snap
        self.session: str | None = None
        self.role: str | None = None
        self.agent: str | None = None
        self.sent: list[tuple[Any, ...]] = []
        self.quiet = threading.Event()

    def join(self) -> dict[str, Any]:
        self.session, self.role, self.agent = "s", self.snap["you"]["role"], self.snap["you"]["agent"]
        return {"session": "s", "role": self.role, "agent": self.agent}

    def state(self, since: int = -1, wait_s: float = 20.0) -> dict[str, Any]:
        if since >= self.snap["version"]:
            self.quiet.wait(0.5)  # nothing changed: the owner holds the request
        return self.snap

    def answer(self, number: int, decision: str, tool: str | None = None) -> dict[str, Any]:
        self.sent.append(("answer", number, decision, tool))
        return {"ok": True}

    def psyche(self) -> dict[str, Any]:
        return {"agent": "cautious", "toml": PSYCHE, "save_to": "/served/psyche/world-market/cautious.toml"}

    def set_psyche(self, toml: str) -> dict[str, Any]:
        self.sent.append(("set_psyche", toml))
        return {"ok": True}

    def save_psyche(self, toml: str) -> dict[str, Any]:
        self.sent.append(("save_psyche", toml))
        return {"ok": True, "path": "/served/psyche/world-market/cautious.toml"}

    def command(self, what: str, agent: str | None = None) -> dict[str, Any]:
        self.sent.append(("command", what, agent))
        return {"ok": True, "join": "http://127.0.0.1:8000/?token=T&seat=NEW"} if what == "reassign" else {"ok": True}


class FrozenTab(ClassTab):
    clock = staticmethod(lambda: 100.0)  # the countdowns stand still: the pictures are the same each time


async def shown(pilot: Any) -> None:
    for _ in range(400):
        if pilot.app.snap is not None:
            break
        await pilot.pause(0.01)
    assert pilot.app.snap is not None, "the tab never drew the class"
    await pilot.pause()


async def sent(pilot: Any, client: StandIn, n: int) -> list[tuple[Any, ...]]:
    for _ in range(400):
        if len(client.sent) >= n:
            break
        await pilot.pause(0.01)
    return client.sent


def test_a_students_keys_answer_its_proposal() -> None:
    client = StandIn(student_snapshot())
    app = FrozenTab(client)  # type: ignore[arg-type]

    async def script(app: FrozenTab, pilot: Any) -> None:
        await shown(pilot)
        await pilot.press("down", "enter")  # another offered tool than proposed
        assert (await sent(pilot, client, 1))[-1] == ("answer", 6, "choose", "write_artifact")
        await pilot.press("up", "enter")  # the proposed one: an approval
        assert (await sent(pilot, client, 2))[-1] == ("answer", 6, "approve", None)
        await pilot.press("a", "v")
        assert (await sent(pilot, client, 4))[-2:] == [("answer", 6, "approve", None), ("answer", 6, "reject", None)]
        await pilot.press("r", "x", "R")  # the teacher's keys do nothing in a student's tab
        await pilot.pause()
        assert len(client.sent) == 4
        app.set_focus(None)  # (a click on the status line): up and down still move along the offered tools
        await pilot.pause()
        await pilot.press("down", "down", "enter")
        assert (await sent(pilot, client, 5))[-1] == ("answer", 6, "choose", "noop")
        app._stop.set()

    drive(app, script, WIDE)


def test_a_students_psyche_editor_keeps_its_keys_and_applies_through_the_owner() -> None:
    from akh_tui.tui.psyche_editor import PsycheEditorScreen

    client = StandIn(student_snapshot())
    app = FrozenTab(client)  # type: ignore[arg-type]

    async def script(app: FrozenTab, pilot: Any) -> None:
        await shown(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, PsycheEditorScreen)
        await pilot.press("down", "enter", "up")  # the editor's own keys: no answer is sent
        await pilot.pause()
        assert client.sent == []
        await pilot.press("ctrl+s")
        await pilot.press("ctrl+w")
        got = await sent(pilot, client, 2)
        assert [k for k, _ in got] == ["set_psyche", "save_psyche"] and got[0][1] == app.screen.draft  # type: ignore[attr-defined]
        app._stop.set()

    drive(app, script, WIDE)


def test_the_teachers_keys_run_the_class() -> None:
    client = StandIn(teacher_snapshot())
    app = FrozenTab(client)  # type: ignore[arg-type]

    async def script(app: FrozenTab, pilot: Any) -> None:
        await shown(pilot)
        await pilot.press("r", "space", "n", "t")
        assert (await sent(pilot, client, 4)) == [("command", "pause", None), ("command", "agent", None),
                                                  ("command", "round", None), ("command", "table", None)]
        await pilot.press("down", "x")  # the roster's highlighted agent: cautious
        assert (await sent(pilot, client, 5))[-1] == ("command", "release", "cautious")
        await pilot.press("R")
        assert (await sent(pilot, client, 6))[-1] == ("command", "reassign", "cautious")
        for _ in range(200):
            if any("seat=NEW" in str(n.message) for n in app._notifications):
                break
            await pilot.pause(0.01)
        assert any("seat=NEW" in str(n.message) for n in app._notifications)
        await pilot.press("a")  # a student's key does nothing in the teacher's tab
        await pilot.pause()
        assert len(client.sent) == 6
        app._stop.set()

    drive(app, script, WIDE)


def test_student_tab_with_a_proposal(snap_compare):
    assert snap_compare(FrozenTab(StandIn(student_snapshot())), run_before=shown, terminal_size=WIDE)  # type: ignore[arg-type]


def test_student_tab_at_80x24(snap_compare):
    assert snap_compare(FrozenTab(StandIn(student_snapshot())), run_before=shown, terminal_size=SMALL)  # type: ignore[arg-type]


def test_student_tab_waiting(snap_compare):
    assert snap_compare(FrozenTab(StandIn(student_snapshot(False))), run_before=shown, terminal_size=SMALL)  # type: ignore[arg-type]


def test_teacher_tab(snap_compare):
    assert snap_compare(FrozenTab(StandIn(teacher_snapshot())), run_before=shown, terminal_size=WIDE)  # type: ignore[arg-type]


def test_teacher_tab_at_80x24(snap_compare):
    assert snap_compare(FrozenTab(StandIn(teacher_snapshot())), run_before=shown, terminal_size=SMALL)  # type: ignore[arg-type]
