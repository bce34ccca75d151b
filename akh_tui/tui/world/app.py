"""The world workbench (`akh-tui --world FILE`, issue 26): a world of several agents watched
and steered the way the workbench steers one.

On screen: the status line, the **roster** (a row per agent), the **swimlanes** (a lane per
agent, a column per step), and the panes of one agent (goals, plan, psyche, score table, why,
working memory), the agent shown. Number keys or `/` (a fuzzy search) pick the agent and pin
the panes to it (**follow**, `f` toggles: unpinned, the panes show whoever acted last); `s`
splits the middle into two agents' score tables. Space steps one agent's turn, `n` one
round, `r` runs and pauses; `,` `.` `<` `>` move along the swimlanes (the step shown
read-only, from its record), `l` goes back to live; `w` opens the shared world (artifacts,
ledger, mint, rate windows), `e` the shown agent's psyche (live: it takes effect at its
next turn), `k` the world breakpoints, `m` who moved the shown step's decision (`p` in it: the
proof), `i` the interview of the shown agent at the step shown, `g` gates the shown agent:
its turns stop after decide, and a dialog (gate.py) asks the person to approve, reject or
choose another offered tool while the world waits.

Data flows one way, as in the single-agent workbench: an engine thread steps the world
(WorldWatch, the engine's face) and a timer on the UI thread draws at most 30 times a second,
only what changed. At full speed a frame of every pane is drawn only while frames cost under
a small share of the time (FRAME_SHARE), else the status line, the roster and the lanes.
`sync=True` runs commands on the UI thread (deterministic tests).
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Footer, Static

from ...engine import Answer, GateClosed, InputError, Locations, Proposal, Psyche, WorldWatch, parse_world_edits
from ...engine.records import CycleRecord, View
from ..dialogs import HelpScreen, guarded, show_error
from ..panes import agent_panes, GoalsPane, MemoryPane, PlanPane, PsychePane, ScoreTable, WhyPane
from ..themes import load_themes
from .dialogs import AgentSearchScreen, WorldBreaksScreen, WorldForkScreen
from .lanes import LEGEND, LEGEND_NARROW, Swimlanes
from .roster import Roster

Job = Literal["agent", "round", "run", "wake"] | Callable[[], None]
SPEEDS = (1, 2, 5, 10, 20, 50, 100, 0)  # steps per second; 0 = as fast as the engine goes
DRAIN_HZ = 30
# At full speed the frames and the engine share the process's CPU (one core through the GIL), and
# a frame costs what Textual's compositor makes of it, many times what our drawing costs. So a
# frame is drawn only when the process has spent at least (the last frame's cost / FRAME_SHARE)
# of CPU since the last one: the frames' share stays under FRAME_SHARE whatever the machine's
# load (a budget in wall time let a busy machine's slow engine pay for 5 frames a second). A frame
# of every pane likewise, by its own cost; the others draw the status line, roster and lanes.
FAST_FRAME_EVERY = 6  # at most every 6th tick (5 frames a second)
FRAME_SHARE = 0.03
FRAME_WAIT = 0.2  # the engine waits at most this long for a frame being drawn
NARROW = 100
SHORT = 30  # under 30 rows (80×24) the agent's panes give up rows so the roster and lanes stay on screen


class WorldBench(App[None]):
    TITLE = "akh-tui world"
    CSS_PATH = Path(__file__).with_name("world.tcss")  # absolute: a subclass elsewhere finds it too
    BINDINGS = [
        Binding("f1", "help", "Help", id="world.help", tooltip="this help"),
        Binding("space", "step_agent", "Turn", id="world.step_agent", tooltip="step one agent's turn (the next in the round's order)"),
        Binding("n", "step_round", "Round", id="world.step_round", tooltip="step the rest of this round (or one whole round)"),
        Binding("r", "toggle_run", "Run", id="world.run_pause", tooltip="run / pause the world"),
        Binding("plus,equals_sign", "faster", "Faster", id="world.faster", tooltip="run faster", key_display="+", show=False),
        Binding("minus", "slower", "Slower", id="world.slower", tooltip="run slower", key_display="-", show=False),
        *[Binding(str(i), f"show_agent({i - 1})", f"Agent {i}", id=f"world.agent{i}", show=False,
                  tooltip=f"show the roster's agent {i} and follow it") for i in range(1, 10)],
        Binding("slash", "search", "Find", id="world.search", key_display="/",
                tooltip="find an agent by part of its id (fuzzy) and follow it"),
        Binding("f", "follow", "Follow", id="world.follow",
                tooltip="follow: pin the panes to the agent shown (off: they show whoever acted last)"),
        Binding("s", "split", "Split", id="world.split", tooltip="split: two agents' score tables side by side"),
        Binding("w", "shared", "World", id="world.shared",
                tooltip="the shared world: artifacts and their diffs, the ledger, the mint, rate windows"),
        Binding("e", "edit_psyche", "Psyche", id="world.edit_psyche",
                tooltip="edit the shown agent's psyche (live: it takes effect at its next turn)"),
        Binding("k", "breakpoints", "Break", id="world.breakpoints",
                tooltip="world breakpoints: a transfer above N, a write, a mint, backoff, PAUSED, an agent's action"),
        Binding("F", "fork", "Fork", id="world.fork", key_display="F",
                tooltip="fork the world after the step shown: the rest of the round's order, a tool disabled"),
        Binding("g", "gate", "Gate", id="world.gate",
                tooltip="gate the shown agent (or ungate it): its turns stop for your answer (approve, reject, "
                        "choose another offered tool)"),
        Binding("m", "who_moved", "Moved", id="world.who_moved",
                tooltip="who moved the shown step's decision: other agents' actions since its last step that changed "
                        "what it read; p in it proves each by a noop replay"),
        Binding("i", "interview", "Ask", id="world.interview", show=False,
                tooltip="interview the shown agent about the step shown: why it did what it did (its record, or its "
                        "model with ctrl+o); kept on a side branch"),
        Binding("b", "compare", "Compare", id="world.compare", show=False,
                tooltip="compare this branch with the one it forked from: the first step they differ at"),
        Binding("comma", "move(-1)", "Back", id="world.back", key_display=",", show=False,
                tooltip="swimlanes: one step back (read-only replay of that step)"),
        Binding("full_stop", "move(1)", "Fwd", id="world.forward", key_display=".", show=False,
                tooltip="swimlanes: one step forward (past the newest: live)"),
        Binding("less_than_sign", "move(-10)", "Back 10", id="world.back10", key_display="<", show=False,
                tooltip="swimlanes: ten steps back"),
        Binding("greater_than_sign", "move(10)", "Fwd 10", id="world.forward10", key_display=">", show=False,
                tooltip="swimlanes: ten steps forward"),
        Binding("l", "live", "Live", id="world.live", show=False, tooltip="leave the replay: back to the live world"),
        Binding("q", "quit", "Quit", id="world.quit", tooltip="quit", show=False),
    ]

    def __init__(self, file: str | None = None, seed: int | None = None, *, sync: bool = False,
                 watch: WorldWatch | None = None, locations: Locations | None = None) -> None:
        """A new world run of `file`, recorded in the data dir's session store (`locations`),
        or the open `watch`."""
        super().__init__()
        self.sync = sync
        if watch is None:
            if file is None:
                raise InputError("no world file given", field="--world")
            watch = WorldWatch.open(file, locations or Locations.resolve(), seed)
        self.world = watch
        if sync:  # the engine runs on the UI thread: it cannot wait for a dialog that thread would draw
            watch.ask = self._cannot_wait
        self._gate_screen: Any = None  # the gate's dialog while one is open
        self.ids = list(watch.ids)
        self.pinned: str | None = None  # follow: the agent the panes stay on
        self.cursor: int | None = None  # the step shown read-only; None: live
        self.split = False
        self.running = False
        self.speed_index = 3
        self.note = ""
        self.breaks: list[str] = []
        # a psyche edited live, by agent: the number of steps then; it is pending until that
        # agent's next step (the status line says so until then, and no longer)
        self.edited: dict[str, int] = {}
        self.stopped_at_rounds = False
        self._commands: queue.Queue[Job | None] = queue.Queue()
        self._stop = threading.Event()
        self._frame_drawn = threading.Event()
        self._frame_drawn.set()
        self._ticks = 0
        self._dirty = True
        # the frames at full speed, in CPU seconds: (the process's CPU when the last frame began,
        # what that frame cost the UI thread), the same for the last frame of every pane, and the
        # frame being drawn (UI-thread CPU and process CPU at its start, whether it is a full one)
        self._last_frame: tuple[float, float] = (0.0, 0.0)
        self._last_full: tuple[float, float] = (0.0, 0.0)
        self._frame: tuple[float, float, bool] = (0.0, 0.0, False)
        self._drawn_key: tuple | None = None  # what the panes show: (agent, cursor, its cycle)

    # ---- layout ------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with Vertical(id="roster-box", classes="box"):
            yield Roster(self.ids, id="roster")
        with Vertical(id="lanes-box", classes="box"):
            yield Swimlanes(self.ids, self.world.steps, id="lanes")
        yield from agent_panes(partner_scores=True)
        yield Footer(compact=True)  # every key fits 120 columns (narrow: see _fit)

    def on_mount(self) -> None:
        self.status_bar = self.query_one("#status", Static)
        self.roster = self.query_one(Roster)
        self.lanes = self.query_one(Swimlanes)
        self.goals_pane = self.query_one(GoalsPane)
        self.plan_pane = self.query_one(PlanPane)
        self.psyche_pane = self.query_one(PsychePane)
        self.score_table = self.query_one("#scores", ScoreTable)
        self.score_table2 = self.query_one("#scores2", ScoreTable)
        self.why_pane = self.query_one(WhyPane)
        self.why_pane.EMPTY = ("This agent has not acted yet. Space steps the next agent's turn, n a round, r runs.\n"
                               "Move the score table's cursor to ask why not that tool.")
        self.memory_pane = self.query_one(MemoryPane)
        for theme in load_themes():
            self.register_theme(theme)
        self.theme = "akh-dark" if "akh-dark" in self.available_themes else self.theme
        self.query_one("#lanes-box").border_subtitle = LEGEND
        for wid, title in {"goals-box": "Goals", "plan-box": "Plan", "psyche-box": "Psyche", "why-box": "Why",
                           "memory-box": "Working memory"}.items():
            self.query_one(f"#{wid}").border_title = title
        self._fit(self.size.width)
        self.score_table.focus()
        self.set_interval(1 / DRAIN_HZ, self._drain)
        if not self.sync:
            self._engine_loop()
        self._render_all()
        # as the single-agent workbench does (tui/app.py `_freeze_heap`): what is alive at the
        # first frame (widgets, every agent's graph) is kept out of the cyclic collector's walks
        self.call_after_refresh(gc.freeze)

    def on_resize(self, event: object) -> None:
        self._fit(self.size.width)

    def _fit(self, width: int) -> None:
        if not hasattr(self, "roster"):
            return
        narrow = width < NARROW
        self.screen.set_class(narrow, "-narrow")
        self.screen.set_class(self.size.height < SHORT, "-short")
        self.query_one("#lanes-box").border_subtitle = LEGEND_NARROW if narrow else LEGEND
        # compact fits every key in 120 columns; cut off under the palette's label, a compact
        # footer leaves a stray letter in the last column, so a narrow screen has the spaced one
        self.query_one(Footer).compact = not narrow
        self.roster.set_narrow(narrow)
        self.score_table.set_narrow(narrow or self.split)
        self.score_table2.set_narrow(True)
        self._drawn_key = None
        self._dirty = True

    def on_unmount(self) -> None:
        gc.unfreeze()  # cycles among what was alive at start-up can be collected again
        self._stop.set()
        self._commands.put(None)
        # a turn waiting at the gate is dropped first: the engine thread lets go of the door
        self.world.close_gate("the workbench quit", wait=5.0)
        try:
            with self.world.lock:  # after the step in flight: the door saves its state and closes
                self.world.close()
        except Exception:  # quitting must not fail on a store problem
            pass

    # ---- the engine thread -------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="world-engine")
    def _engine_loop(self) -> None:
        while not self._stop.is_set():
            speed = SPEEDS[self.speed_index]
            timeout = None if not self.running else (0 if speed == 0 else 1 / speed)
            try:
                cmd = self._commands.get(timeout=timeout) if timeout != 0 else self._commands.get_nowait()
            except queue.Empty:
                cmd = "run" if self.running else None
            if cmd is None:
                continue
            if cmd == "run" and speed == 0:
                self._frame_drawn.wait(FRAME_WAIT)  # a frame is being drawn: let it have the core
            self._execute(cmd)

    def _execute(self, cmd: Job) -> None:
        if cmd == "wake":
            self._dirty = True
            return
        try:
            if cmd in ("agent", "run"):
                if cmd == "run" and not self.running:
                    return
                step = self.world.step_agent()
                self._after_step(step is not None)
            elif cmd == "round":
                steps = self.world.step_round()
                self._after_step(bool(steps))
            elif callable(cmd):
                cmd()
        except GateClosed as exc:  # not now, or quitting: nothing of the turn was recorded
            self.running = False
            self.note = f"{exc}: that turn was not taken, nothing recorded (space asks again)"
        except Exception as exc:  # an engine bug is shown, never a crash
            self.running = False
            title = f"The engine raised {type(exc).__name__}; the world is paused."
            if self.sync:
                show_error(self, title, exc)
            else:
                self.call_from_thread(show_error, self, title, exc)
        self._dirty = True

    def _after_step(self, stepped: bool) -> None:
        w = self.world
        hit = w.take_hit()
        if w.broken is not None:
            self.running = False
            self.note = f"stopped: {w.broken}"
        elif hit is not None:
            self.running = False
            self.note = f"breakpoint {hit}"
        elif not stepped or w.over:
            self.running = False
            self.note = "every agent is STOPPED: the world is over"
        elif self.running and w.rounds_done and not self.stopped_at_rounds:
            self.running = False
            self.stopped_at_rounds = True
            self.note = f"the world file's {w.spec.rounds} rounds are done (space, n and r step on)"

    def _submit(self, cmd: Job) -> None:
        if self.sync:
            self._execute(cmd)
            self._drain()
        else:
            self._commands.put(cmd)

    # ---- drawing -----------------------------------------------------------------------------
    @guarded
    def _drain(self) -> None:
        self._ticks += 1
        self._follow_gate()
        full_speed = self.running and SPEEDS[self.speed_index] == 0
        full = True
        if full_speed:
            if self._ticks % FAST_FRAME_EVERY:
                return
            cpu = time.process_time()
            last, cost = self._last_frame
            if cpu - last < cost / FRAME_SHARE:
                return  # the engine has not yet run long enough to pay for a frame
            last_full, full_cost = self._last_full
            full = cpu - last_full >= full_cost / FRAME_SHARE
            self._frame = (time.thread_time(), cpu, full)
            if not self.sync:
                self._frame_drawn.clear()  # the engine waits until this frame is drawn
                if not self.call_after_refresh(self._frame_finished):
                    self._frame_drawn.set()
        elif not self._dirty:
            return
        self._dirty = False
        if full:
            self._render_all()
        else:
            self._render_ticker()

    # ---- the gate ----------------------------------------------------------------------------
    def _cannot_wait(self, p: Proposal) -> Answer:
        raise GateClosed(f"{p.agent}'s turn stops at the gate, and this workbench runs its engine on the UI thread "
                         f"(sync): nothing can wait for the dialog")

    def _follow_gate(self) -> None:
        """Open the gate's dialog when the engine thread waits at the gate; close it when that
        wait is over (answered, or closed elsewhere)."""
        from .gate import GateScreen

        waiting = self.world.waiting
        shown = self._gate_screen
        if shown is not None and (waiting is None or shown.proposal is not waiting):
            self._gate_screen = None
            if shown.is_attached and shown in self.screen_stack:
                shown.dismiss(None)
            shown = None
        if waiting is not None and shown is None:
            self._gate_screen = GateScreen(waiting, self.world.answer_gate, self._not_now, self._pause_at_gate,
                                           self.exit)
            self.push_screen(self._gate_screen)
            self._dirty = True

    def _not_now(self) -> None:
        self.running = False
        self.world.close_gate("not now")

    def _pause_at_gate(self) -> str:
        self.running = not self.running
        self._dirty = True
        return "running: the world goes on after this answer" if self.running else \
            "paused: the world stops after this answer"

    @guarded
    def action_gate(self) -> None:
        aid = self.shown_agent()
        on = aid not in self.world.gated
        gated = self.world.gate(aid, on)
        self.note = (f"{aid} is gated: its turns wait for your answer" if on else f"{aid} is no longer gated") + \
            (f" (gated: {', '.join(gated)})" if gated else "")
        self._dirty = True
        if self.sync:
            self._drain()

    def _frame_finished(self) -> None:
        """After the screen refresh of a full-speed frame: what it cost, compositor included."""
        start_thread, start_cpu, full = self._frame
        cost = time.thread_time() - start_thread
        self._last_frame = (start_cpu, cost)
        if full:
            self._last_full = (start_cpu, cost)
        self._frame_drawn.set()

    def shown_agent(self) -> str:
        if self.pinned is not None:
            return self.pinned
        steps = self.world.steps
        if self.cursor is not None and self.cursor < len(steps):
            return steps[self.cursor].agent
        return steps[-1].agent if steps else self.ids[0]

    def split_partner(self, aid: str) -> str:
        return self.ids[(self.ids.index(aid) + 1) % len(self.ids)]

    def _render_ticker(self) -> None:
        aid = self.shown_agent()
        self.roster.show(self.world.roster(), aid)
        self.lanes.show(self.cursor, aid)
        self._render_status(aid)

    def _render_all(self) -> None:
        try:
            aid = self.shown_agent()
            self._render_ticker()
            self.screen.set_class(self.cursor is not None, "-replay")
            # the roster is the world now: while the panes replay a step, its title says so
            self.query_one("#roster-box").border_title = (
                f"Roster · now (the panes replay step {self.cursor + 1})" if self.cursor is not None else "")
            if self.world.waiting is not None and self.cursor is None:
                # the engine thread is parked mid-turn at the gate: the agent's live state is half
                # a cycle; its panes keep the last step's and are drawn again once the turn is over
                self._drawn_key = None
                return
            view = self.world.view(aid, self.cursor)
            key = (aid, self.cursor, view["cycle"], self.split, view["psyche"]["pending"])
            if key != self._drawn_key:
                self._drawn_key = key
                record = self.world.record(aid, self.cursor)
                self._render_agent(aid, view, record)
            hook = getattr(self.screen, "refresh_world", None)
            if hook is not None:  # the shared world follows the world while it is open
                hook()
        except Exception as exc:
            show_error(self, f"Drawing failed: {type(exc).__name__}", exc)

    def _render_agent(self, aid: str, view: View, record: CycleRecord | None) -> None:
        replay = " (read-only)" if self.cursor is not None else ""
        self.query_one("#score-box").border_title = f"Score breakdown · {aid}{replay}"
        self.query_one("#goals-box").border_title = f"Goals · {aid}"
        self.goals_pane.show(view, {})
        self.goals_pane.scroll_to_focus(view["focus"])
        self.plan_pane.show(view)
        self.psyche_pane.show(view)
        self.score_table.show(record)
        self.why_pane.show(record, self.score_table.selected_tool(), None)
        mem = self.memory_pane
        mem.show(view, record, max(1, mem.size.height - 1) if mem.size.height else 8)
        box2 = self.query_one("#score2-box")
        box2.display = self.split
        self.query_one("#why-box").display = not self.split
        if self.split:
            other = self.split_partner(aid)
            box2.border_title = f"Score breakdown · {other}{replay}"
            self.score_table2.show(self.world.record(other, self.cursor))

    def _render_status(self, aid: str) -> None:
        w = self.world
        # under 100 columns the status line has two rows: the short words leave the second
        # for the note (a breakpoint's reason, a fork's name), which must not be cut off
        narrow = self.size.width < NARROW
        t = Text()
        t.append(f" {w.name} ", style="bold reverse")
        t.append(f" r{w.round} · {w.clock:g} s · " if narrow else f" round {w.round} · clock {w.clock:g} s · ")
        if self.cursor is not None and self.cursor < len(w.steps):
            s = w.steps[self.cursor]
            t.append(f" step {s.index + 1} of {len(w.steps)} ", style="bold reverse yellow")
            t.append(f" r{s.round} {s.agent} {s.tool or 'refused'} · ")
            t.append("REPLAY · l live", style="bold yellow")
        else:
            speed = SPEEDS[self.speed_index]
            t.append("▶ running" if self.running else "■ paused", style="bold green" if self.running else "bold yellow")
            if self.running or not narrow:
                t.append(f" · {'max' if speed == 0 else speed}/s")
            t.append(f" · {len(w.steps)} steps")
            nxt = w.next_agent()
            if nxt is not None:
                t.append(f" · next {nxt}")
        t.append(" · " if narrow else " · showing ")
        t.append(aid, style="bold")
        if self.pinned:
            t.append(" (following)", style="dim")
        elif self.cursor is None:
            t.append(" (last)" if narrow else " (last to act)", style="dim")
        waiting = w.waiting
        if waiting is not None:
            t.append(f" · {waiting.agent} waits for your answer", style="bold yellow")
        if self.breaks and not (narrow and self.note):  # narrow, the note has the room
            t.append(f" · {len(self.breaks)} break" if narrow else f" · {len(self.breaks)} breakpoint(s)")
        if self.note:  # first: a breakpoint's reason must not be the part cut off
            t.append(f" · {self.note}", style="dim")
        for edited, at in list(self.edited.items()):
            last = w.last.get(edited)
            if last is not None and last.index >= at:
                del self.edited[edited]  # its next step has come: the edit is in effect
            else:
                t.append(f" · {edited}'s psyche edited: in effect at its next turn", style="dim")
        self.status_bar.update(t)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table is getattr(self, "score_table", None):
            record = self.world.record(self.shown_agent(), self.cursor)
            self.why_pane.show(record, self.score_table.selected_tool(), None)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table is getattr(self, "roster", None) and event.row_key.value in self.ids:
            self._pin(str(event.row_key.value))

    def on_swimlanes_seek(self, event: Swimlanes.Seek) -> None:
        self._seek(event.step)

    # ---- actions -----------------------------------------------------------------------------
    @guarded
    def action_step_agent(self) -> None:
        self.cursor = None
        self.note = ""  # what the last command said is about the world before this step
        self._submit("agent")

    @guarded
    def action_step_round(self) -> None:
        self.cursor = None
        self.note = ""
        self._submit("round")

    @guarded
    def action_toggle_run(self) -> None:
        self.cursor = None
        self.running = not self.running
        if self.running:
            self.note = ""
        self._dirty = True
        if self.sync:
            while self.running:
                self._execute("run")
            self._drain()
        else:
            self._commands.put("wake")

    def action_faster(self) -> None:
        self.speed_index = min(self.speed_index + 1, len(SPEEDS) - 1)
        self._dirty = True

    def action_slower(self) -> None:
        self.speed_index = max(self.speed_index - 1, 0)
        self._dirty = True

    def _pin(self, aid: str) -> None:
        self.pinned = aid
        self._dirty = True
        if self.sync:
            self._drain()

    @guarded
    def action_show_agent(self, index: int) -> None:
        if 0 <= index < len(self.ids):
            self._pin(self.ids[index])
        else:
            self.notify(f"this world has {len(self.ids)} agents", markup=False)

    @guarded
    def action_search(self) -> None:
        def picked(aid: str | None) -> None:
            if aid is not None:
                self._pin(aid)

        self.push_screen(AgentSearchScreen(self.ids), picked)

    @guarded
    def action_follow(self) -> None:
        if self.pinned is None:
            self._pin(self.shown_agent())
            self.notify(f"following {self.pinned}", markup=False)
        else:
            self.pinned = None
            self.notify("the panes show whoever acted last", markup=False)
            self._dirty = True
            if self.sync:
                self._drain()

    @guarded
    def action_split(self) -> None:
        self.split = not self.split
        self._fit(self.size.width)
        if self.sync:
            self._drain()

    @guarded
    def action_shared(self) -> None:
        from .shared import SharedWorldScreen

        self.push_screen(SharedWorldScreen(self.world))

    @guarded
    def action_edit_psyche(self) -> None:
        from ..psyche_editor import PsycheEditorScreen

        aid = self.shown_agent()

        def apply(psyche: Psyche) -> None:
            self.world.replace_psyche(aid, psyche)
            self.edited[aid] = len(self.world.steps)  # the status line says it is pending until its turn
            self.note = ""  # the last command's note is older than this edit
            self._drawn_key = None
            self._dirty = True

        self.push_screen(PsycheEditorScreen(self.world.psyche_text(aid), None, apply, name=f"psyche of {aid}",
                                           owner=aid))

    @guarded
    def action_breakpoints(self) -> None:
        def replace(texts: list[str]) -> None:
            self.world.set_breaks(texts)  # InputError (shown in the dialog) leaves them as they were
            self.breaks = list(texts)
            self._dirty = True

        self.push_screen(WorldBreaksScreen(self.breaks, replace, self.shown_agent()))

    @guarded
    def action_fork(self) -> None:
        w = self.world
        if not w.steps:
            self.notify("nothing recorded yet: step first", markup=False)
            return
        at = self.cursor
        shown = w.steps[at if at is not None else -1]
        where = f"step {shown.index + 1} (round {shown.round}, {shown.agent})" + ("" if at is not None else ", the newest")
        rest = w.rest_of_round(at)
        to_come = (f"still to act in round {shown.round}: {', '.join(rest)}" if rest else
                   f"round {shown.round} ends there: order= needs an earlier step of a round (, moves back)")

        def fork(text: str) -> str:
            edits = parse_world_edits(text, self.ids)
            self.running = False
            try:
                name = w.fork(at, edits)
            except InputError as exc:  # the engine names the CLI's flags; here the edits are typed
                typed = {"--order": "order=", "--disable": "disable=", "--agent": "agent", "--decider": "decider=",
                         "--goal": "goal=", "--limit": "limit="}
                flag, _, part = (exc.field or "").partition(" ")  # ("--goal status": the goal edit's status)
                if flag not in typed:
                    raise
                message = exc.message
                for f, word in typed.items():
                    message = message.replace(f, word)
                raise InputError(message, field=typed[flag] + (f" {part}" if part else "")) from exc
            if at is not None:  # forked at an earlier step: psyche edits after it are the left branch's
                self.edited.clear()
            self.cursor = None
            self.note = f"forked {name} after step {shown.index + 1}: b compares it with the branch it left"
            self._drawn_key = None
            self._dirty = True
            if self.sync:
                self._drain()
            return name

        example = (f"order={','.join(reversed(rest))}" if len(rest) > 1
                   else f"disable={shown.agent}:{shown.tool or 'noop'}")
        self.push_screen(WorldForkScreen(where, fork, to_come, example))

    @guarded
    def action_who_moved(self) -> None:
        from ...engine import who_moved
        from .moved import WhoMovedScreen

        w = self.world
        if not w.steps:
            self.notify("nothing recorded yet: step first", markup=False)
            return
        shown = w.steps[self.cursor if self.cursor is not None else -1]
        step = shown.step

        def answer(prove: bool) -> dict[str, Any]:
            with w.lock:  # the engine thread waits: the answer reads the branch and rewinds a copy
                return who_moved(w.run, step, prove=prove)

        self.push_screen(WhoMovedScreen(f"step {shown.index + 1} ({shown.round}:{shown.agent}, {shown.tool or 'refused'})",
                                        answer))

    @guarded
    def action_interview(self) -> None:
        from .interview import interview_screen

        got = interview_screen(self.world, self.shown_agent(), self.cursor, self.sync)
        if isinstance(got, str):
            self.notify(got, markup=False)
        else:
            self.push_screen(got)

    @guarded
    def action_compare(self) -> None:
        c = self.world.compare_with_parent()
        first = c["first_divergence"]
        if first is None:
            text = f"{c['a_name']} and {c['b_name']}: no step differs (steps {c['a']['steps']} and {c['b']['steps']})"
        else:
            a, b = first["a"], first["b"]
            text = (f"{c['a_name']} and {c['b_name']} first differ at step {first['step']}: "
                    f"{a['name']} {a['tool'] or ''} vs {b['name']} {b['tool'] or ''} "
                    f"({', '.join(first['differs_in'])}); steps {c['a']['steps']} and {c['b']['steps']}")
        self.note = text
        self.notify(text, title="Branches compared", timeout=10, markup=False)
        self._dirty = True
        if self.sync:
            self._drain()

    def _seek(self, step: int | None) -> None:
        n = len(self.world.steps)
        if step is not None:
            if n == 0:
                self.notify("nothing recorded yet: step first", markup=False)
                return
            step = min(max(step, 0), n - 1)
            if self.cursor is not None and step == n - 1 and step <= self.cursor:
                step = None  # forward past the newest: live
        if step is not None and self.running:
            self.running = False
            self._commands.put("wake")
        self.cursor = step
        self._dirty = True
        if self.sync:
            self._drain()

    @guarded
    def action_move(self, delta: int) -> None:
        start = self.cursor if self.cursor is not None else len(self.world.steps) - (1 if delta < 0 else 0)
        if self.cursor is None and delta < 0:
            self._seek(start + delta + 1)
        else:
            self._seek(start + delta)

    @guarded
    def action_live(self) -> None:
        self._seek(None)

    @guarded
    def action_help(self) -> None:
        from ..psyche_editor import PsycheEditorScreen
        from .gate import GateScreen
        from .shared import SharedWorldScreen

        def rows(bindings: Iterable[BindingType]) -> list[tuple[str, str, str]]:
            return [(b.key_display or b.key, b.tooltip or b.description, b.id or "") for b in bindings
                    if isinstance(b, Binding)]

        sections = [("in the shared world (w)", rows(SharedWorldScreen.BINDINGS)),
                    ("in the world breakpoints (k)", rows(WorldBreaksScreen.BINDINGS)
                     + [("enter", "add the breakpoint typed", "")]),
                    ("in the agent search (/)", rows(AgentSearchScreen.BINDINGS)),
                    ("in the gate's dialog (a gated agent's turn, g)", rows(GateScreen.BINDINGS)
                     + [("enter", "in the reason box: reject with it; on a tool: choose it", "")])]
        self.push_screen(HelpScreen(rows(self.BINDINGS), "The world workbench: docs/worlds.md says what each view shows.",
                                    rows(PsycheEditorScreen.BINDINGS), sections))


def run_world(file: str, seed: int | None = None, locations: Locations | None = None) -> int:
    """The world workbench on a world file, recorded in the data dir; exit 2 on a bad file
    (named with line and field)."""
    try:
        app = WorldBench(file, seed, locations=locations)
    except InputError as exc:
        print(f"error: {exc}")
        return 2
    app.run()
    return 0
