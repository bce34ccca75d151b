"""A class tab (`akh-tui serve --world FILE`, issue 26): the teacher's or a student's view of a
served world, a client of the process that owns it (the engine's ClassClient).

- The **teacher's** tab: the roster with each agent's seat (open, taken, its tab connected or
  not), the shared artifacts, one join URL per agent to hand out, the decisions so far, and the
  controls: r runs and pauses, space steps one agent's turn, n a round, + and - the speed; on
  the roster's highlighted agent, x releases it (its decider decides alone again) and R
  reassigns it (a new join URL; the old one no longer takes it).
- A **student's** tab (its join URL): the roster, the shared artifacts, and its agent's
  proposal when its turn comes: the offered tools with their utilities (the score table), the
  decider's reason and the time left; a approves, enter chooses the highlighted tool, v
  rejects (a veto). No answer in time: the table's choice is taken.

Started by `serve` for each tab as `python -m akh_tui.tui.world.class_app`, with the channel and
the tab's join key in its environment. What it shows comes from the owner's snapshots, asked for
by one worker thread (held open by the owner until something changes).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Static

from ...engine import ClassClient, ClassRefusal
from ..themes import load_themes

RETRY_S = 2.0
NARROW = 160  # under this many columns the roster and the artifacts stack (each needs most of a line)
TEACHER_POLL_S = 3.0  # the teacher's tab asks at least this often: seats' connections change quietly
STUDENT_ACTIONS = {"approve", "choose", "reject", "edit_psyche", "offered"}
TEACHER_ACTIONS = {"toggle_run", "step_agent", "step_round", "faster", "slower", "table", "release", "reassign"}


class ClassTab(App[None]):
    TITLE = "akh-tui class"
    CSS = """
    #status { height: 1; background: $panel; padding: 0 1; }
    #you { height: auto; padding: 0 1; }
    .box { border: round $primary-darken-1; height: auto; }
    #proposal-box { height: auto; max-height: 14; }
    #candidates { height: auto; max-height: 10; }
    #middle { height: 1fr; }
    #roster-box { width: 3fr; height: 1fr; }
    #artifacts-box { width: 2fr; height: 1fr; }
    #roster, #artifacts { height: 1fr; }
    #join { height: auto; padding: 0 1; }
    #decisions { height: auto; max-height: 8; padding: 0 1; }
    Screen.-narrow #middle { layout: vertical; }
    Screen.-narrow #roster-box { width: 1fr; height: auto; max-height: 12; }
    Screen.-narrow #roster { height: auto; max-height: 10; overflow-x: hidden; }
    Screen.-narrow #artifacts-box { width: 1fr; height: 1fr; min-height: 4; }
    Screen.-narrow #decisions { max-height: 4; }
    """
    BINDINGS = [
        Binding("a", "approve", "Approve", id="class.approve", tooltip="approve your agent's proposed action"),
        Binding("enter", "choose", "Choose", id="class.choose", priority=True,
                tooltip="choose the highlighted offered tool instead"),
        Binding("v", "reject", "Reject", id="class.reject", tooltip="reject (veto) the proposed action"),
        # in a student's tab up and down always move along the offered tools, wherever focus is
        # (the roster is only to read there): a key meant for the proposal never moves another table
        Binding("up", "offered(-1)", "Up", id="class.offered_up", show=False, priority=True),
        Binding("down", "offered(1)", "Down", id="class.offered_down", show=False, priority=True),
        Binding("e", "edit_psyche", "Psyche", id="class.edit_psyche",
                tooltip="your agent's psyche: ctrl+s applies it live (from its next turn), ctrl+w saves it"),
        Binding("r", "toggle_run", "Run/Pause", id="class.run_pause", tooltip="run / pause the world"),
        Binding("space", "step_agent", "Agent", id="class.step_agent", tooltip="step one agent's turn"),
        Binding("n", "step_round", "Round", id="class.step_round", tooltip="step the rest of the round"),
        Binding("plus,equals_sign", "faster", "Faster", id="class.faster", key_display="+"),
        Binding("minus", "slower", "Slower", id="class.slower", key_display="-"),
        Binding("t", "table", "Table's choice", id="class.table",
                tooltip="the decision waiting for a seat takes the table's choice now (recorded by teacher)"),
        Binding("x", "release", "Release", id="class.release",
                tooltip="release the highlighted agent: its decider decides alone (its join URL may take it again)"),
        Binding("R", "reassign", "Reassign", id="class.reassign", key_display="R",
                tooltip="reassign the highlighted agent: a new join URL (the old one no longer takes it)"),
        Binding("q", "quit", "Quit", id="class.quit"),
    ]

    clock = staticmethod(time.monotonic)  # the countdowns' clock (a test freezes it)

    def __init__(self, client: ClassClient) -> None:
        super().__init__()
        self.client = client
        self.snap: dict[str, Any] | None = None
        self.received = self.clock()
        self.proposal_shown: int | None = None
        self.error: str | None = None
        self._stop = threading.Event()

    # ---- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="you")
        with Vertical(id="proposal-box", classes="box"):
            yield DataTable(id="candidates", cursor_type="row", zebra_stripes=True)
        yield Static(id="join", classes="box")
        with Horizontal(id="middle"):
            with Vertical(id="roster-box", classes="box"):
                yield DataTable(id="roster", cursor_type="row", zebra_stripes=True)
            with Vertical(id="artifacts-box", classes="box"):
                yield DataTable(id="artifacts", cursor_type="row", zebra_stripes=True)
        yield Static(id="decisions", classes="box")
        yield Footer()

    def on_mount(self) -> None:
        for theme in load_themes():
            self.register_theme(theme)
        self.theme = "akh-dark" if "akh-dark" in self.available_themes else self.theme
        self.query_one("#roster", DataTable).add_columns("agent", "state", "seat", "scrip", "goals",
                                                         "last action", "result")
        self.query_one("#artifacts", DataTable).add_columns("artifact", "owner", "v", "price", "written by", "round")
        self.query_one("#candidates", DataTable).add_columns("tool", "utility", "input")
        self.query_one("#roster-box").border_title = "Roster"
        self.query_one("#artifacts-box").border_title = "Shared artifacts"
        self.query_one("#decisions").border_title = "Decisions"
        self.query_one("#proposal-box").display = False
        self.query_one("#join").display = False
        self.query_one("#status", Static).update(Text(" joining the class…", style="bold"))
        self.set_interval(1.0, self._tick)
        self._fit()
        self._listen()

    def on_resize(self, event: object) -> None:
        self._fit()

    def _fit(self) -> None:
        # under NARROW columns the roster takes the whole width (its seat column is the class's)
        self.screen.set_class(self.size.width < NARROW, "-narrow")

    def on_unmount(self) -> None:
        self._stop.set()

    async def action_quit(self) -> None:
        self._stop.set()  # the channel's worker draws nothing more
        await super().action_quit()

    # ---- the channel -------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="class-channel")
    def _listen(self) -> None:
        try:
            self._listening()
        except RuntimeError:  # call_from_thread once the app has closed: nothing left to draw
            if not self._stop.is_set():
                raise

    def _listening(self) -> None:
        since = -1
        while not self._stop.is_set():
            try:
                if self.client.session is None:
                    self.client.join()
                    since = -1
                wait = TEACHER_POLL_S if self.client.role == "teacher" else 20.0
                snap = self.client.state(since, wait)
                since = int(snap["version"])
                if self._stop.is_set():
                    return
                self.call_from_thread(self._show, snap, None)
            except ClassRefusal as exc:
                self.client.session = None if exc.field in ("session", "key") else self.client.session
                self.call_from_thread(self._show, None, str(exc.message))
                self._stop.wait(RETRY_S)
            except (OSError, ValueError) as exc:  # the owner is gone or restarting: said, and asked again
                self.call_from_thread(self._show, None, f"the class's owner cannot be reached ({exc}); retrying")
                self._stop.wait(RETRY_S)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in STUDENT_ACTIONS | TEACHER_ACTIONS and self.screen is not self.screen_stack[0]:
            return False  # the psyche editor is open: its keys are its own (enter, up, down...)
        role = self.client.role
        if action in STUDENT_ACTIONS:
            return role == "student"
        if action in TEACHER_ACTIONS:
            return role == "teacher"
        return True

    # ---- drawing -----------------------------------------------------------------------------
    def _show(self, snap: dict[str, Any] | None, error: str | None) -> None:
        if self._stop.is_set() or not self.is_running:
            return  # the tab is closing: the last answer it asked for is not drawn
        self.error = error
        if snap is not None:
            role_changed = self.snap is None or self.snap["you"]["role"] != snap["you"]["role"]
            self.snap, self.received = snap, self.clock()
            if role_changed:
                self.refresh_bindings()
                # a student's tab keeps its offered tools in view and in focus, so that the keys
                # it answers with never depend on where focus was when its turn came
                student = snap["you"]["role"] == "student"
                self.query_one("#proposal-box").display = student
                self.query_one("#candidates" if student else "#roster", DataTable).focus()
            self._draw_tables(snap)
        self._draw_status()
        self._draw_you()

    def _tick(self) -> None:
        if self.snap is not None and not self._stop.is_set():
            self._draw_you()

    def _left(self, left_s: float) -> float:
        return max(0.0, left_s - (self.clock() - self.received))

    def _draw_status(self) -> None:
        s, t = self.snap, Text()
        if s is None:
            t.append(f" {self.error or 'joining the class…'}", style="bold red" if self.error else "bold")
            self.query_one("#status", Static).update(t)
            return
        you = s["you"]
        t.append(f" {s['world']} ", style="bold reverse")
        t.append(f" round {s['round']} · clock {s['clock']:g} s · {s['steps']} steps · ")
        t.append("▶ running" if s["running"] else "■ paused", style="bold green" if s["running"] else "bold yellow")
        t.append(f" {s['speed']:g}/s · ")
        if you["role"] == "teacher":
            t.append("teacher", style="bold")
        else:
            t.append(f"you drive {you['agent']} ({you['seat']})", style="bold")
        if s["note"]:
            t.append(f" · {s['note']}", style="dim")
        if self.error:
            t.append(f" · {self.error}", style="bold red")
        self.query_one("#status", Static).update(t)

    def _draw_you(self) -> None:
        s = self.snap
        if s is None:
            return
        you, t = s["you"], Text()
        box = self.query_one("#proposal-box")
        waiting = s.get("waiting")
        if you["role"] == "teacher":
            box.display = False
            t.append("on the roster's highlighted agent: x releases it, R reassigns it (a new join URL)",
                     style="dim")
            if waiting is not None:
                t.append(f"\nwaiting for {waiting['agent']} ({waiting['seat']}): "
                         f"{self._left(waiting['left_s']):.0f} s left · t takes the table's choice now",
                         style="bold yellow")
            self.query_one("#you", Static).update(t)
            return
        p = you.get("proposal")
        if not you["holds"]:
            t.append(f"{you['why_not']}", style="bold red")
        elif p is not None:
            t.append(f"Your turn (decision {p['number']}): {you['agent']} proposes ", style="bold")
            t.append(f"{p['tool']}" + (f" ({p['input']})" if p["input"] else ""), style="bold green")
            t.append(f" · {self._left(p['left_s']):.0f} s left\n", style="bold yellow")
            t.append(f"why: {p['why']}", style="dim")
        else:
            nxt = s.get("next")
            t.append(f"{you['agent']} waits for its turn" + (f" (next: {nxt})" if nxt else ""), style="bold")
            if waiting is not None and waiting["agent"] != you["agent"]:
                t.append(f" · {waiting['agent']} is deciding", style="dim")
        if p is None or not you["holds"]:
            if self.proposal_shown is not None:
                self.query_one("#candidates", DataTable).clear()
                self.proposal_shown = None
            box.border_title = f"{you['agent']}'s offered tools: none now (they show when its turn comes)"
        self.query_one("#you", Static).update(t)

    def _draw_tables(self, s: dict[str, Any]) -> None:
        you = s["you"]
        roster = self.query_one("#roster", DataTable)
        for r in s["roster"]:
            seat = s["seats"][r["id"]]
            # ● a tab holds the seat now, ○ taken but its tab is away, open: the agent's decider alone
            mark = (("● " if seat["connected"] else "○ ") + seat["name"]) if seat["taken"] else "open"
            if you["role"] == "student" and r["id"] == you["agent"]:
                mark = f"{mark} (you)"
            row = (r["id"], r["state"], mark, str(r["scrip"]), f"{r['goals_done']}/{r['goals']}", r["action"],
                   r["result"])
            _put_row(roster, r["id"], row)
        arts = self.query_one("#artifacts", DataTable)
        for a in s["artifacts"]:
            _put_row(arts, a["id"], (a["id"], a["owner"], str(a["version"]), str(a["price"]), str(a["by"]),
                                     str(a["at_round"])))
        log = Text("\n".join(f"r{d['round']} {d['agent']}: {d['decision']} {d['tool'] or d['proposed']} (by {d['by']})"
                             for d in s["decisions"][-6:]))
        self.query_one("#decisions", Static).update(log if s["decisions"] else Text("no decision yet", style="dim"))
        join = self.query_one("#join", Static)
        if you["role"] == "teacher":
            join.display = True
            join.border_title = "Join URLs: one per agent, hand each to its student"
            text = Text()
            for i, (aid, url) in enumerate(s.get("join", {}).items()):
                text.append(("\n" if i else "") + f"{aid}: ", style="bold")
                text.append(url)
            join.update(text)
        p = you.get("proposal")
        if p is not None and p["number"] != self.proposal_shown:
            self.proposal_shown = p["number"]
            table = self.query_one("#candidates", DataTable)
            table.clear()
            for c in p["candidates"]:
                table.add_row(c["tool"], f"{c['utility']:.3f}" if isinstance(c["utility"], (int, float)) else "",
                              str(c.get("input") or ""), key=c["tool"])
            self.query_one("#proposal-box").border_title = (f"{you['agent']}'s offered tools, best first (no answer "
                                                            f"in time: the table's choice)")
            if self.screen is self.screen_stack[0]:  # not while the psyche editor is open
                table.focus()


    # ---- a student's answer ------------------------------------------------------------------
    def _proposal(self) -> dict[str, Any] | None:
        return self.snap["you"].get("proposal") if self.snap is not None else None

    @work(thread=True, group="class-send")
    def _send(self, kind: str, *args: Any) -> None:
        try:
            if kind == "answer":
                self.client.answer(*args)
            else:
                got = self.client.command(*args)
                if got.get("join"):
                    self.call_from_thread(self.notify, f"new join URL: {got['join']}", timeout=30, markup=False)
        except (ClassRefusal, OSError) as exc:
            self.call_from_thread(self.notify, str(getattr(exc, "message", exc)), severity="error", markup=False)

    def _answer(self, decision: str, tool: str | None = None) -> None:
        p = self._proposal()
        if p is None:
            self.notify("no proposal waits for you now", markup=False)
            return
        self._send("answer", p["number"], decision, tool)

    def action_approve(self) -> None:
        self._answer("approve")

    def action_reject(self) -> None:
        self._answer("reject")

    def action_offered(self, delta: int) -> None:
        table = self.query_one("#candidates", DataTable)
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + delta)))

    def action_choose(self) -> None:
        table = self.query_one("#candidates", DataTable)
        p = self._proposal()
        if p is None or not table.row_count:
            self.notify("no proposal waits for you now", markup=False)
            return
        tool = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
        self._answer("approve" if tool == p["tool"] else "choose", None if tool == p["tool"] else tool)

    def action_edit_psyche(self) -> None:
        from pathlib import Path

        from ...engine import InputError, Psyche
        from ..psyche_editor import PsycheEditorScreen

        try:
            got = self.client.psyche()
        except (ClassRefusal, OSError) as exc:
            self.notify(str(getattr(exc, "message", exc)), severity="error", markup=False)
            return
        holder: list[PsycheEditorScreen] = []

        def apply(psyche: Psyche) -> None:
            got = self.client.set_psyche(holder[0].draft)  # ClassRefusal (an InputError): the editor shows it
            if got.get("note"):  # nothing to apply, or it replaced the edit not yet applied
                self.notify(str(got["note"]), markup=False)

        def save(psyche: Psyche, path: Path, force: bool = False) -> Path:
            try:
                return Path(self.client.save_psyche(holder[0].draft)["path"])
            except OSError as exc:
                raise InputError(f"the class's owner cannot be reached: {exc}", field="psyche") from None

        editor = PsycheEditorScreen(got["toml"], Path(got["save_to"]), apply, save=save,
                                    name=f"psyche of {got['agent']}")
        holder.append(editor)
        self.push_screen(editor)

    # ---- the teacher's controls --------------------------------------------------------------
    def action_toggle_run(self) -> None:
        running = bool(self.snap and self.snap["running"])
        self._send("command", "pause" if running else "run")

    def action_step_agent(self) -> None:
        self._send("command", "agent")

    def action_step_round(self) -> None:
        self._send("command", "round")

    def action_table(self) -> None:
        self._send("command", "table")

    def action_faster(self) -> None:
        self._send("command", "faster")

    def action_slower(self) -> None:
        self._send("command", "slower")

    def _highlighted(self) -> str | None:
        roster = self.query_one("#roster", DataTable)
        if not roster.row_count:
            return None
        return str(roster.coordinate_to_cell_key(roster.cursor_coordinate).row_key.value)

    def action_release(self) -> None:
        aid = self._highlighted()
        if aid is not None:
            self._send("command", "release", aid)

    def action_reassign(self) -> None:
        aid = self._highlighted()
        if aid is not None:
            self._send("command", "reassign", aid)


def _put_row(table: DataTable, key: str, row: tuple[str, ...]) -> None:
    """The row `key` shows `row`: added, or its cells updated in place (the cursor stays)."""
    if key not in table.rows:
        table.add_row(*row, key=key)
        return
    for col, value in zip(table.columns, row):
        table.update_cell(key, col, value, update_width=True)


def main() -> int:
    from ...engine import InputError

    try:
        client = ClassClient.from_env()
    except InputError as exc:
        print(f"error: {exc}")
        return 2
    ClassTab(client).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
