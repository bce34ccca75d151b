"""The Textual workbench: panes over one Controller, driven from an engine thread.

Data flows one way. The engine thread runs cycles and leaves their records in an inbox; a
timer on the UI thread drains the inbox at most 30 times a second and renders the newest
record and the controller's view. User intent (step, run, pause, edit, add a goal) goes to
the engine as commands. `sync=True` runs commands on the UI thread instead, which makes
snapshot tests deterministic.

Every cycle is recorded in the session store, so the timeline can go back: **replay** shows a
recorded cycle read-only (no engine call; `,` `.` `<` `>` and the scrubber move, `l` returns to
live), **fork** (`f`) rewinds to the shown cycle, applies edits and continues as a new branch,
`b` lists, switches and compares branches, `k` sets breakpoints, `/` searches the history.
`akh-tui open FILE` replays a trace file the same way, with no engine at all.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Literal

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.markup import escape as escape_markup
from textual.message import Message
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.theme import Theme
from textual.widgets import DataTable, Footer, OptionList, Static, Tree

from ..engine.records import CycleRecord, Event, ForkEvent, PendingCycle, View
from ..engine import (AddGoal, InputError, Locations, Psyche, Run, StoreWriteError, UserConfig, event_words,
                      first_hit, parse_breakpoint)
from .dialogs import AddGoalScreen, HelpScreen, guarded, show_error
from .panes import ERROR_WIDTH, GoalsPane, MemoryList, MemoryPane, PlanPane, PsychePane, ScoreTable, WhyPane
from .themes import load_themes
from .travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, Scrubber, SearchScreen
from .phases import PhaseBar, PhaseStepping

# what the engine thread is asked to do: "step", "cycle" (one cycle of a run), "wake" (stop
# waiting between cycles), or a function to run there
EngineJob = Literal["step", "cycle", "wake"] | Callable[[], None]
# what the UI keeps of a cycle record it does not draw: (cycle, vetoed, the goals' error signal)
CycleNews = tuple[int, bool, tuple[tuple[int, float], ...]]

SPEEDS = (1, 2, 5, 10, 20, 50, 100, 0)  # cycles per second; 0 = as fast as the engine goes
DRAIN_HZ = 30  # at most this many redraws a second
# At full speed the frames share one core with the engine (the GIL): every CPU-millisecond the
# UI thread spends drawing is a millisecond the engine does not run. A frame of every pane costs
# tens of milliseconds of CPU (the panes, then Textual's compositor, measured once the screen is
# refreshed), most of it in Textual; the status line and the timeline cost about a tenth of that.
# So at full speed every 6th tick (5 times a second) draws a frame: a full one when the budget
# allows (after a full frame that cost C of CPU the next waits at least C / FAST_FRAME_SHARE: a
# big terminal or a slow machine waits longer), else a ticker frame of the status line and the
# timeline only, so the cycle counter keeps moving. The engine thread waits while either is drawn
# (at most FRAME_WAIT). Paused or stepping, every tick draws what changed, and a pause draws the
# newest cycle as soon as the engine stops.
FAST_FRAME_EVERY = 6
FAST_FRAME_SHARE = 0.03
FRAME_WAIT = 0.2  # seconds the engine waits at most for a frame to be drawn (never stuck on one)
MAX_MARKS = 2000  # veto and fork marks kept for the timeline (it has about a hundred cells)
# the events the status line announces (a backtrack or a consolidation shows in its pane instead)
NEWS = ("fork", "reflection", "decomposition", "psyche_edit", "goal_added")
MIN_SIZE = (80, 24)  # below this the panes cannot show their numbers: the screen says so
NARROW = 100  # under this many columns: the narrow layout (workbench.tcss `.-narrow`)
WHY_MIN, WHY_NARROW = 36, 28  # the Why pane's width: wide layout at least, narrow layout
SCORE_FULL = 113  # the score table's full columns with its border and scrollbar
TOO_SMALL = (f"The terminal is too small for the workbench: it needs {MIN_SIZE[0]}×{MIN_SIZE[1]}.\n"
             "Make the window larger (q quits).")


class Workbench(PhaseStepping, App):
    TITLE = "akh-tui"
    CSS_PATH = "workbench.tcss"
    BINDINGS = [
        # the footer shows what fits 120 columns, help first (a newcomer's way in); the rest
        # are in the help (f1) and the palette (ctrl+p), which read each binding's tooltip
        Binding("f1", "help", "Help", id="help", tooltip="this help"),
        Binding("space", "step", "Step", id="step", tooltip="step one cycle"),
        Binding("p", "step_phase", "Phase", id="step_phase",
                tooltip="step one phase: observe, orient, decide, act, learn", show=False),
        Binding("a", "toggle_approval", "Approval", id="toggle_approval",
                tooltip="approval before act on/off (config: [approve] when)", show=False),
        Binding("r", "toggle_run", "Run/Pause", id="run_pause", tooltip="run / pause"),
        Binding("plus,equals_sign", "faster", "Faster", id="faster",
                tooltip="run faster", key_display="+", show=False),
        Binding("minus", "slower", "Slower", id="slower", tooltip="run slower", key_display="-", show=False),
        Binding("u", "run_until_change", "Until change", id="run_until_change",
                tooltip="run until a goal's status changes", show=False),
        Binding("g", "add_goal", "Add goal", id="add_goal", tooltip="add a goal"),
        Binding("e", "edit_psyche", "Psyche", id="edit_psyche",
                tooltip="edit the psyche (persona, shadow, archetypes)"),
        Binding("v", "veto_selected", "Veto tool", id="veto_selected",
                tooltip="add a veto for the tool selected in the score table"),
        Binding("V", "lift_veto_selected", "Lift veto", id="lift_veto_selected",
                tooltip="lift the veto v added for the tool selected in the score table", key_display="V", show=False),
        Binding("t", "think", "ThinkLoop", id="think",
                tooltip="open the ThinkLoop view (seed 003's feedback controller on this graph)", show=False),
        Binding("comma", "replay_back(1)", "Back", id="back",
                tooltip="replay: one recorded cycle back (read-only; no engine call)", key_display=",", show=False),
        Binding("full_stop", "replay_forward(1)", "Fwd", id="forward",
                tooltip="replay: one recorded cycle forward (at the newest: back to live)", key_display=".", show=False),
        Binding("less_than_sign", "replay_back(10)", "Back 10", id="back10",
                tooltip="replay: ten cycles back", key_display="<", show=False),
        Binding("greater_than_sign", "replay_forward(10)", "Fwd 10", id="forward10",
                tooltip="replay: ten cycles forward", key_display=">", show=False),
        Binding("l", "live", "Live", id="live", tooltip="leave the replay: back to the live run", show=False),
        Binding("f", "fork", "Fork", id="fork",
                tooltip="fork a branch from the cycle shown, with edits (archetype weights, tools, a goal)"),
        Binding("b", "branches", "Branches", id="branches",
                tooltip="list the run's branches: switch to one, compare two", show=False),
        Binding("k", "breakpoints", "Breaks", id="breakpoints",
                tooltip="breakpoints: stop the run when a tool is chosen, a veto fires, ...", show=False),
        Binding("slash", "search", "Search", id="search",
                tooltip="search the history (tool=, veto, goal=, progress=, words) and jump to a cycle", key_display="/", show=False),
        Binding("P", "plots", "Plots", id="plots",
                tooltip="plots over time: tool × cycle grid, archetype weights, goal coverage, working memory", key_display="P"),
        Binding("o", "orient", "Orient", id="orient",
                tooltip="what Orient saw for the focus goal: activation neighbourhood, triples, symbol inspector", show=False),
        Binding("ctrl+r", "reset", "Reset", id="reset", tooltip="reset the scenario", show=False),
        Binding("q", "quit", "Quit", id="quit", tooltip="quit"),
    ]

    def __init__(
        self,
        scenario: str = "zoo",
        seed: int | None = None,
        *,
        sync: bool = False,
        config: UserConfig | None = None,
        locations: Locations | None = None,
        decider: str = "utility",
        store: str | Path | None = None,
        trace_file: str | Path | None = None,
        resume: bool = False,
    ) -> None:
        super().__init__()
        self.sync = sync
        self.user_config = config or UserConfig.load()
        self.locations = locations or Locations.resolve()
        self.replay: int | None = None  # the recorded cycle shown (read-only); None: live
        self.marks: dict[int, str] = {}  # timeline marks: vetoes and fork points
        self.config_breaks = list(self.user_config.breakpoints)
        self.breakpoint_specs = list(self.config_breaks)
        self._breaks = [parse_breakpoint(b, field="breakpoints", tools=None) for b in self.breakpoint_specs]
        self.trace_file = Path(trace_file) if trace_file is not None else None
        self.last_event = ""
        self._phase_note: tuple[int | None, str] = (None, "")  # (cycle, note) of a phase step's note
        # every run is opened through the engine's door (a corrupt store raises InputError:
        # reported by `run()`, the store left untouched)
        if self.trace_file is not None:  # replay only: the trace's records, no engine
            self.ctl = Run.replay_trace(self.trace_file, self.locations)
            self.replay = self.ctl.last_cycle()
        elif resume:  # the store's current run and branch, where it was left
            self.ctl = Run.resume(self.locations, store=store, config=self.user_config)
            self.last_event = f"resumed at cycle {self.ctl.cycle}"
        else:
            self.ctl = Run.start(self.locations, scenario, seed, decider=decider, store=store, config=self.user_config,
                                 workbench=True)
        if self.ctl.note:
            self.last_event = self.ctl.note
        self.scenario_name = self.ctl.name or (self.trace_file.name if self.trace_file else "")
        self.ctl.subscribe(self._on_engine_output)
        self.marks = self.ctl.marks()
        self.running = False
        self.speed_index = 3
        self.until_change: tuple[tuple[int, str], ...] | None = None
        self.psyche_draft: str | None = None
        self.deltas: dict[str, float] = {}
        # what the engine thread left for the UI: each cycle record reduced at once to what the
        # panes keep of it (`_cycle_news`), other events as they are, and the newest record. A
        # frame at full speed drains over a thousand cycles: kept whole until then, their records
        # outlived the young generations and made the collector sweep the whole heap (Textual's
        # included) several times a second, which cost the engine more than the frames did
        self._inbox: list[CycleNews | Event] = []
        self._inbox_record: CycleRecord | None = None
        self._inbox_lock = threading.Lock()
        self._commands: queue.Queue[EngineJob | None] = queue.Queue()
        self._stop = threading.Event()
        self._frame_drawn = threading.Event()  # cleared while a full-speed frame is drawn
        self._frame_drawn.set()
        self._dirty = True
        self._ticks = 0
        # the frame being drawn at full speed: the UI thread's CPU time and the wall time when it
        # began, and whether it is a full one; the last full frame's start (wall) and its cost in
        # CPU seconds (None until measured: it is measured again once Textual has drawn it)
        self._frame: tuple[float, float, bool] = (0.0, 0.0, False)
        self._last_full: tuple[float, float | None] = (0.0, 0.0)
        self._status_view: View | None = None  # the view of the last full frame, for ticker frames
        self._status_lines = 0  # the status line's height in lines when last laid out (0: never)
        self.cycles_drawn = 0
        self.drawn: tuple[int, bool] | None = None  # the live cycle the panes last showed, and whether running
        self.breakpoint_hit: str | None = None
        self.keymap_refusals: list[str] = []
        if self.user_config.keymap:
            self._apply_keymap()

    def _apply_keymap(self) -> None:
        """The user's keymap, checked first (an unknown id, or a key that another binding of
        the same screen uses, is refused with the reason and shown on start). The main
        screen's bindings are rebuilt in their own order with the new keys, so a remapped key
        keeps its place on the footer (Textual's keymap appends it at the end, past the edge);
        the dialogs' ids go through Textual's keymap."""
        from textual.binding import BindingsMap

        defaults = {b.id: b.key for b in self.all_bindings() if b.id}
        self.keymap_refusals = self.user_config.check_keymap(defaults)
        keymap = self.user_config.keymap
        own = [b for b in self.BINDINGS if isinstance(b, Binding)]  # all of them (Textual also takes tuples)
        mine = {b.id for b in own}
        self._bindings = BindingsMap([b.with_key(keymap[b.id], key_display=None) if b.id in keymap else b
                                      for b in own])
        self.set_keymap({k: v for k, v in keymap.items() if k not in mine})

    @classmethod
    def all_bindings(cls) -> list[Binding]:
        """Every binding with an id: the main screen's, then each dialog's and view's."""
        from .dialogs import AddGoalScreen, EntryScreen, ErrorScreen, HelpScreen
        from .findings import FindingsScreen
        from .goal_detail import GoalDetailScreen
        from .orient_view import OrientScreen
        from .psyche_editor import PsycheEditorScreen
        from .think_screen import ThinkScreen
        from .travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, SearchScreen

        out = list(cls.BINDINGS) + list(GoalsPane.BINDINGS)
        for screen in (GoalDetailScreen, OrientScreen, FindingsScreen, PsycheEditorScreen, ThinkScreen, AddGoalScreen,
                       ForkScreen, BranchesScreen, CompareScreen, BreakpointsScreen, SearchScreen, EntryScreen,
                       HelpScreen, ErrorScreen):
            out += [b for b in screen.BINDINGS if isinstance(b, Binding)]
        from .plots import PlotsScreen, ToolGrid  # loads plotext: only with a keymap, or for the help

        out += list(PlotsScreen.BINDINGS) + list(ToolGrid.BINDINGS)
        return [b for b in out if isinstance(b, Binding) and b.id]

    @staticmethod
    def speed_levels() -> tuple[int, ...]:
        return SPEEDS

    @property
    def live(self) -> bool:
        """False when replaying a trace file: no engine at all."""
        return self.ctl.live

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Scrubber(id="scrubber")
        yield PhaseBar(id="phase-bar")
        with Horizontal(id="top"):
            with Vertical(id="goals-box", classes="box"):
                yield GoalsPane(id="goals")
            with Vertical(id="plan-box", classes="box"):
                yield PlanPane(id="plan")
            with Vertical(id="psyche-box", classes="box"):
                yield PsychePane(id="psyche")
        with Horizontal(id="middle"):
            with Vertical(id="score-box", classes="box"):
                yield ScoreTable(id="scores")
            # a focusable scroll: tab to it, then the arrow and page keys scroll the explanation
            with VerticalScroll(id="why-box", classes="box"):
                yield WhyPane(id="why")
        with Horizontal(id="bottom"):
            with Vertical(id="memory-box", classes="box"):
                entries = MemoryList(id="memory-entries")
                yield MemoryPane(entries, id="memory")
                yield entries
        yield Static(TOO_SMALL, id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        # the main screen's panes, held by reference: query_one searches the active screen,
        # which is a dialog or the editor whenever one is open
        self.goals_pane = self.query_one(GoalsPane)
        self.plan_pane = self.query_one(PlanPane)
        self.score_table = self.query_one(ScoreTable)
        self.why_pane = self.query_one(WhyPane)
        self.psyche_pane = self.query_one(PsychePane)
        self.memory_pane = self.query_one(MemoryPane)
        self.status_bar = self.query_one("#status", Static)
        self.scrubber = self.query_one(Scrubber)
        self.phase_bar = self.query_one(PhaseBar)
        if self.live:
            self._person_in_the_loop()
        self._fit(self.size.width, self.size.height)
        self.score_table.focus()  # the goals pane takes focus with tab or a click
        for theme in load_themes():
            self.register_theme(theme)
        wanted = self.user_config.theme or "akh-dark"
        self.theme = wanted if wanted in self.available_themes else "akh-dark"
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        titles = {"goals-box": "Goals", "plan-box": "Plan", "psyche-box": "Psyche", "score-box": "Score breakdown",
                  "why-box": "Why", "memory-box": "Working memory"}
        for wid, title in titles.items():
            self.query_one(f"#{wid}").border_title = title
        if self.user_config.error:
            self.notify(self.user_config.error, severity="warning", timeout=8, markup=False)
        for refusal in self.keymap_refusals:
            self.notify(refusal, title="Keymap entry refused", severity="warning", timeout=10, markup=False)
        for w in self.ctl.warnings:
            self.notify(w, title="Scenario settings", severity="warning", timeout=10, markup=False)
        self.set_interval(1 / DRAIN_HZ, self._drain)
        if not self.sync and self.live:
            self._engine_loop()
        if self.trace_file is not None:
            self.last_event = f"replaying {self.trace_file.name}: , . move, / searches (no engine)"
        self._render_all(None)

    def on_resize(self, event: events.Resize) -> None:
        self._status_lines = 0  # the status line wraps anew
        self._fit(event.size.width, event.size.height)

    def _fit(self, width: int, height: int) -> None:
        """The layout for the terminal's size: narrow under NARROW columns, and below MIN_SIZE
        a notice instead of panes cut past reading."""
        if not hasattr(self, "score_table"):
            return
        main = self.goals_pane.screen
        main.set_class(width < NARROW, "-narrow")
        main.set_class(width < MIN_SIZE[0] or height < MIN_SIZE[1], "-too-small")
        self.score_table.set_narrow(width < NARROW)
        # the Why pane takes what the score table's full columns leave (36 at 120 columns, 87 at 200)
        self.query_one("#why-box").styles.width = WHY_NARROW if width < NARROW else max(WHY_MIN, width - SCORE_FULL)
        self._dirty = True

    def _remember_theme(self, theme: Theme) -> None:
        try:
            self.user_config.save_theme(theme.name)
        except OSError as exc:
            self.notify(f"could not save the theme choice: {exc}", severity="warning", markup=False)

    def on_unmount(self) -> None:
        self._stop.set()
        self._commands.put(None)
        try:
            self.ctl.close()  # checkpoints the branch: a later resume starts from here
        except Exception:  # quitting must not fail on a store problem
            pass

    # ---- the engine thread -----------------------------------------------------------------
    @work(thread=True, exclusive=True, group="engine")
    def _engine_loop(self) -> None:
        while not self._stop.is_set():
            speed = SPEEDS[self.speed_index]
            timeout = None if not self.running else (0 if speed == 0 else 1 / speed)
            try:
                cmd = self._commands.get(timeout=timeout) if timeout != 0 else self._commands.get_nowait()
            except queue.Empty:
                cmd = "cycle" if self.running else None
            if cmd is None:
                continue
            if cmd == "cycle" and speed == 0:
                # a frame is being drawn: let it have the core (see FAST_FRAME_SHARE)
                self._frame_drawn.wait(FRAME_WAIT)
            self._execute(cmd)

    class DrawNow(Message):
        """The engine thread has stopped (a pause reached it after its last cycle): draw the
        newest cycle now rather than at the next tick."""

    def on_workbench_draw_now(self, message: DrawNow) -> None:
        self._drain()

    def _execute(self, cmd: EngineJob) -> None:
        if cmd == "wake":  # only interrupts the wait between cycles
            self._dirty = True
            if not self.running and not self.sync:
                self.post_message(self.DrawNow())  # thread-safe
            return
        try:
            if cmd == "cycle" or cmd == "step":
                if cmd == "cycle" and not self.running:
                    return
                previous = self.ctl.latest
                rec = self.ctl.step()
                hit = first_hit(self._breaks, rec, previous) if rec is not None and self._breaks else None
                if rec is None and self.ctl.in_cycle:  # part-way: before a chosen phase, or waiting
                    self._stopped_mid_cycle()
                elif rec is None:
                    self.running = False
                    self._post_note("no active goal: the run is finished (g adds a goal, ctrl+r resets)")
                elif hit is not None:
                    self.running = False
                    self.until_change = None
                    self.breakpoint_hit = f"cycle {rec['cycle']}: {hit}"
                    self._post_note(f"paused at {self.breakpoint_hit}")
                elif "observe" in self.ctl.stop_before:  # "stop before observe": after every cycle
                    self._stopped_between_cycles(rec)
                elif self.until_change is not None and self._statuses(rec) != self.until_change:
                    self.running = False
                    self.until_change = None
                    self._post_note(f"paused at cycle {rec['cycle']}: a goal's status changed")
            else:
                cmd()
        except Exception as exc:  # an engine bug is shown, never a crash
            self.running = False  # at once: the engine thread must not try the next cycle
            title = f"The engine raised {type(exc).__name__}; the run is paused."
            if isinstance(exc, StoreWriteError):  # disk full...: the engine went back to the last recorded cycle
                title = "The session store could not record the cycle; the run is paused (nothing recorded is lost)."
            if self.sync:
                show_error(self, title, exc)
            else:
                self.call_from_thread(show_error, self, title, exc)
        self._dirty = True

    def _submit(self, cmd: EngineJob) -> None:
        if self.sync:
            self._execute(cmd)
            self._drain()
        else:
            self._commands.put(cmd)

    def _on_engine_output(self, item: CycleRecord | Event) -> None:
        if item["type"] == "cycle":
            news = self._cycle_news(item)
            with self._inbox_lock:
                self._inbox.append(news)
                self._inbox_record = item
        else:
            with self._inbox_lock:
                self._inbox.append(item)

    @staticmethod
    def _cycle_news(rec: CycleRecord) -> CycleNews:
        """What the UI keeps of a cycle record it does not draw: (cycle, vetoed, the goals'
        error signal)."""
        return rec["cycle"], bool(rec["act"]["vetoed"]), GoalsPane.signal(rec)

    def _post_note(self, text: str) -> None:
        self.last_event = text

    @staticmethod
    def _statuses(rec: CycleRecord) -> tuple[tuple[int, str], ...]:
        return tuple((g["id"], g["status"]) for g in rec["goals"])

    # ---- drawing ---------------------------------------------------------------------------
    def _measure_frame(self) -> None:
        """On the tick after a full-speed frame: what a full frame cost so far (it is measured
        again once Textual has drawn it, compositor included: `_frame_finished`)."""
        start_cpu, start_wall, full = self._frame
        if full and self._last_full[1] is None:
            self._last_full = (start_wall, time.thread_time() - start_cpu)
        if not self._frame_drawn.is_set() and time.perf_counter() - start_wall > FRAME_WAIT:
            self._frame_drawn.set()  # the refresh callback never came: the engine must not wait on

    def _frame_finished(self) -> None:
        """(after the screen refresh of a full-speed frame) a full frame's whole cost; the
        engine goes on."""
        start_cpu, start_wall, full = self._frame
        if full:
            self._last_full = (start_wall, time.thread_time() - start_cpu)
        self._frame_drawn.set()

    def _frame_due(self) -> bool | None:
        """At full speed: None when no frame is due this tick, else whether a full frame is
        (False: a ticker frame; see FAST_FRAME_SHARE)."""
        if self._ticks % FAST_FRAME_EVERY:
            return None
        wall = time.perf_counter()
        last_wall, cost = self._last_full
        full = cost is not None and wall - last_wall >= cost / FAST_FRAME_SHARE
        self._frame = (time.thread_time(), wall, full)
        if full:
            self._last_full = (wall, None)
        return full

    @guarded
    def _drain(self) -> None:
        self._ticks += 1
        self._measure_frame()
        full_speed = self.running and SPEEDS[self.speed_index] == 0
        full = self._frame_due() if full_speed else True
        if full is None:
            return
        if full_speed and not self.sync:
            # the engine thread waits until Textual has drawn this frame: taking turns at the GIL
            # every 5 ms made both sides slower (each switch costs its caches)
            self._frame_drawn.clear()
            if not self.call_after_refresh(self._frame_finished):  # closing: nothing will be drawn
                self._frame_drawn.set()
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
            record, self._inbox_record = self._inbox_record, None
        if not items and not self._dirty:
            return
        if full:
            self._dirty = False
        for it in items:
            if isinstance(it, tuple):  # a cycle's news
                cycle, vetoed, signal = it
                self.cycles_drawn += 1
                self.goals_pane.add_signal(signal)
                if vetoed:
                    self.marks[cycle] = "!"
                    if len(self.marks) > MAX_MARKS:  # bounded: a long run must not grow the UI's memory
                        del self.marks[min(self.marks)]
            else:  # an event: one line in the status bar, worded where the CLI and reports word it
                if it["type"] == "reflection":
                    deltas: dict[str, float] = {}
                    for ch in it["psyche_changes"]:
                        if ch["kind"] == "archetype":
                            deltas[ch["archetype"]] = deltas.get(ch["archetype"], 0.0) + ch["new"] - ch["old"]
                    self.deltas = deltas
                if it["type"] in NEWS:
                    self.last_event = event_words(it)
        if self.breakpoint_hit is not None:
            self.notify(self.breakpoint_hit, title="Breakpoint", severity="warning", timeout=6, markup=False)
            self.breakpoint_hit = None
        if full:
            self._render_all(record)
        else:
            self._render_ticker()

    def shown_record(self) -> CycleRecord | None:
        """The record the panes show: the replayed one, or the newest."""
        if self.replay is not None:
            return self.ctl.record(self.replay)
        return self.ctl.latest

    def last_cycle(self) -> int:
        return self.ctl.last_cycle()

    def _render_all(self, record: CycleRecord | None) -> None:
        try:
            errors = None
            if self.replay is not None:
                record = self.shown_record()
                view = self.ctl.view(self.replay)
                last = self.last_cycle()
                deltas: dict[str, float] = {}
                errors = self._replayed_errors(self.replay)
            else:
                view = self.ctl.view(wm_rows=100)  # the memory list scrolls back over all of it
                # read right after the view: at full speed the engine thread runs on while a
                # frame is drawn, and the panes should all show the one cycle of the view
                latest, last = self.ctl.latest, self.last_cycle()
                record = latest if latest is not None else record
                deltas = self.deltas
            self._render_phases()
            pending = self._phase_record() if self.replay is None else None  # a cycle part-way: its decide
            self.screen_class()
            self.goals_pane.show(view, errors)
            self.plan_pane.show(view)
            self.score_table.show(pending or record)
            self.why_pane.show(pending or record, self.score_table.selected_tool(), self._vetoes(pending or record),
                               self._model_call(pending or record))
            self._follow_why(pending or record)
            pp = self.psyche_pane
            pp.deltas = deltas
            pp.show(view)
            mem = self.memory_pane
            mem.show(view, record, max(1, mem.size.height - 1) if mem.size.height else 8)
            self.scrubber.show(1 if last else 0, last, self.replay, self.marks)
            self._render_status(view)
            self._status_view = view if self.replay is None else None
            self.drawn = (view["cycle"], self.running) if self.replay is None else None
            hook = getattr(self.screen, "on_workbench_update", None)
            if hook is not None:  # a view over the run (the findings) follows it
                hook()
        except Exception as exc:
            show_error(self, f"Drawing failed: {type(exc).__name__}", exc)

    def _render_ticker(self) -> None:
        """A ticker frame at full speed: the status line's cycle and the timeline move; the
        panes keep the last full frame's cycle until the next full frame."""
        if self._status_view is None or self.replay is not None:
            return
        last = self.last_cycle()
        self.scrubber.show(1 if last else 0, last, None, self.marks)
        self._render_status({**self._status_view, "cycle": last})

    def _replayed_errors(self, cycle: int) -> dict[int, list[float]]:
        """The goals' error sparklines as they stood at a replayed cycle (from its records)."""
        errors: dict[int, list[float]] = {}
        first = max(1, cycle - ERROR_WIDTH + 1)
        for rec in self.ctl.records(first, cycle):
            self.goals_pane.record(rec, errors)
        return errors

    def screen_class(self) -> None:
        # every pane's border turns to the warning colour while a past cycle is shown
        main = self.goals_pane.screen
        main.set_class(self.replay is not None, "-replay")

    def _render_status(self, view: View) -> None:
        t = self._status_text(view)
        note = self.last_event
        if note and note == self._phase_note[1] and self._phase_note[0] != (self.ctl.phase_state() or {}).get("cycle"):
            note = self.last_event = ""  # "act done, learn next" of a cycle that has finished
        width = self.status_bar.content_region.width
        wide = self.replay is None and self.size.width >= NARROW and width > 0
        if note and self.replay is None:  # the live run's news, not the replayed cycle's
            if not wide:
                t.append(f" · {note}", style="dim")  # narrow: a second row rather than lose it
            else:  # one row (a second took a row from the panes at 120 columns): the note before seed and speed
                if t.cell_len + 3 + len(note) > width:
                    t = self._status_text(view, compact=True)
                room = width - t.cell_len - 3
                if room >= 12:
                    t.append(" · " + (note if len(note) <= room else note[: room - 1] + "…"), style="dim")
        if wide:
            t.truncate(width, overflow="ellipsis")
        # a layout pass (a reflow of the whole screen: most of a ticker frame's cost) only when
        # the line's height can change: it wraps to a second line when it is wider than the bar
        lines = 1 if t.cell_len <= width and "\n" not in t.plain else 2
        relayout = lines != self._status_lines
        self._status_lines = lines
        self.status_bar.update(t, layout=relayout)

    def _status_text(self, view: View, compact: bool = False) -> Text:
        """The status line before its note; `compact` leaves out the seed, the speed and the
        breakpoint count (the note is worth more when both do not fit)."""
        done = sum(1 for g in view["goals"] if g["status"] == "completed" and g["parent"] is None)
        top = sum(1 for g in view["goals"] if g["parent"] is None)
        speed = SPEEDS[self.speed_index]
        t = Text()
        t.append(f" {self.scenario_name} ", style="bold reverse")
        if self.live:
            t.append(f" {self.ctl.branch_name}", style="bold magenta")
        t.append(" · cycle " if compact else f" · seed {view['seed']} · cycle ")
        if self.replay is not None:
            t.append(f" {self.replay} ", style="bold reverse yellow")
            t.append(f" of {self.last_cycle()} · ")
            t.append("REPLAY (read-only)", style="bold yellow")
            hint = "l live · f fork here" if self.live else "no engine: a trace file"
            # the hint goes whole to the second line when it does not fit (not "f fork" / "here")
            fits = t.cell_len + 3 + len(hint) <= self.status_bar.content_region.width
            t.append((" · " if fits else "\n ") + hint, style="dim")
        else:
            t.append(str(view["cycle"]), style="bold")
            t.append(" · ")
            t.append("▶ running" if self.running else "■ paused", style="bold green" if self.running else "bold yellow")
            t.append(f" · goals {done}/{top} done" if compact else f" · {'max' if speed == 0 else speed}/s · goals {done}/{top} done")
            if self.breakpoint_specs and not compact:
                t.append(f" · {len(self.breakpoint_specs)} breakpoint(s)")
            self._phase_status(t)
        return t

    def _model_call(self, record: CycleRecord | PendingCycle | None) -> dict | None:
        """How the model's answer for the record's cycle was got (replayed or live; the Why pane)."""
        cycle = record.get("cycle") if record is not None else None
        return self.ctl.model_call(cycle) if isinstance(cycle, int) else None

    def _vetoes(self, record: CycleRecord | PendingCycle | None) -> dict[str, int] | None:
        """How often each tool was vetoed on the record's goal up to its cycle (the Why pane)."""
        goal = record.get("goal") if record is not None else None
        if record is None or not isinstance(goal, dict):  # a cycle part-way is not recorded yet
            return None
        return self.ctl.vetoes_on_goal(goal["id"], record["cycle"])

    @guarded
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # the table's own first highlight (row 0 on mount) is not a question the user asked
        last, self._cursor_row = getattr(self, "_cursor_row", None), event.cursor_row
        self._asking_why_not = getattr(self, "_asking_why_not", False) or (last is not None and last != event.cursor_row)
        record = self.shown_record()
        self.why_pane.show(record, self.score_table.selected_tool(), self._vetoes(record), self._model_call(record))
        self._follow_why(record)

    def _follow_why(self, record: CycleRecord | PendingCycle | None) -> None:
        """Once the user has moved the score table's cursor, scroll the Why pane to the why-not
        of the tool under it (to its top for the chosen one) when the tool or the cycle changes,
        not every frame: the user's own scrolling stays where it is."""
        if not getattr(self, "_asking_why_not", False):
            return
        key = (record.get("cycle") if record else None, self.score_table.selected_tool())
        if key == getattr(self, "_why_followed", None):
            return
        self._why_followed = key
        box, line = self.query_one("#why-box"), self.why_pane.question_at
        self.call_after_refresh(lambda: box.scroll_to(y=line, animate=False))

    @guarded
    def on_scrubber_seek(self, event: Scrubber.Seek) -> None:
        self._seek(event.cycle)

    # ---- the timeline ----------------------------------------------------------------------
    def _seek(self, cycle: int | None) -> None:
        """Show recorded cycle `cycle` read-only (None, or the newest cycle when live: live)."""
        last = self.last_cycle()
        if cycle is not None:
            if last == 0:
                self.notify("nothing recorded yet: step first", markup=False)
                return
            cycle = min(max(cycle, 1), last)
            if cycle == last and self.live and self.replay is not None and cycle >= self.replay:
                cycle = None  # moving forward past the newest cycle: back to live
        if cycle is not None and self.running:
            self.running = False
            self._commands.put("wake")
        self.replay = cycle
        self._dirty = True
        if self.sync:
            self._drain()

    @guarded
    def action_replay_back(self, n: int = 1) -> None:  # not `back`: App's action_back pops a screen
        start = self.replay if self.replay is not None else self.last_cycle()  # live shows the newest
        self._seek(start - n)

    @guarded
    def action_replay_forward(self, n: int = 1) -> None:
        if self.replay is None:
            self.notify("live already: , goes back", markup=False)
            return
        self._seek(self.replay + n)

    @guarded
    def action_live(self) -> None:
        if not self.live:
            self.notify("a trace file has no live run", markup=False)
            return
        self._seek(None)

    def _read_only(self) -> bool:
        """True (and says so) when a past cycle is shown: the engine is not touched."""
        if self.replay is None:
            return False
        if self.trace_file is not None:  # not live: a trace file replayed
            self.notify(f"{self.trace_file.name} is a recorded trace: replay only", markup=False)
        else:
            self.notify(f"replaying cycle {self.replay} (read-only): l goes back to live, f forks a branch here",
                        markup=False)
        return True

    @guarded
    def action_fork(self) -> None:
        if not self.live:
            self.notify("a trace file has no engine state to fork from", markup=False)
            return
        cycle = self.replay if self.replay is not None else self.ctl.cycle
        rec = self.shown_record()
        archetypes = rec["psyche"]["archetypes"] if rec is not None and self.replay is not None \
            else self.ctl.view()["psyche"]["archetypes"]
        names = [b["name"] for b in self.ctl.branches()]
        self.push_screen(ForkScreen(cycle, archetypes, list(self.ctl.tool_names()), names,
                                    lambda name, edits: self.fork(cycle, name, edits)))

    def fork(self, cycle: int, name: str, edits: dict) -> ForkEvent:
        """Rewind to `cycle`, apply the edits, continue live on the new branch."""
        self.running = False
        event = self.ctl.fork(cycle, name, edits)  # a refusal (ValueError, InputError) reaches the dialog
        self._after_branch_change()
        return event

    def _after_branch_change(self) -> None:
        self.replay = None
        self.goals_pane.errors.clear()
        self.deltas = {}
        self.marks = self.ctl.marks()
        self._dirty = True
        if self.sync:
            self._drain()

    @guarded
    def action_branches(self) -> None:
        if not self.live:
            self.notify("a trace file has one branch", markup=False)
            return
        branches = self.ctl.branches()
        ids = {b["name"]: b["id"] for b in branches}

        def switch(name: str) -> None:
            self.running = False
            self.ctl.switch(ids[name])
            self.last_event = f"switched to branch {name} at cycle {self.ctl.cycle}"
            self._after_branch_change()

        def compare(a: str, b: str) -> None:
            self.push_screen(CompareScreen(a, b, self.ctl.compare(ids[a], ids[b])))

        self.push_screen(BranchesScreen(branches, switch, compare))

    @guarded
    def action_breakpoints(self) -> None:
        def change(specs: list[str]) -> None:
            parsed = [parse_breakpoint(b, field="breakpoint", tools=self.ctl.tool_names()) for b in specs]  # refuses a bad one
            self.breakpoint_specs, self._breaks = list(specs), parsed
            if self.live:
                self._apply_stops()  # phase=NAME breakpoints stop before that phase
            self._dirty = True

        self.push_screen(BreakpointsScreen(list(self.breakpoint_specs), change, self.config_breaks))

    @guarded
    def action_search(self) -> None:
        self.push_screen(SearchScreen(self.ctl.search, self._seek))

    # ---- views of one goal: detail, Orient, findings ------------------------------------------
    @guarded
    def on_tree_node_selected(self, event: Tree.NodeSelected[int]) -> None:
        if event.node.data is not None:
            self.open_goal(int(event.node.data))

    @guarded
    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if isinstance(event.option_list, MemoryList):
            from .dialogs import EntryScreen

            self.push_screen(EntryScreen(event.option_list.entries[event.option_index]))

    def open_goal(self, goal_id: int) -> None:
        from .goal_detail import GoalDetailScreen

        view = self.ctl.view(self.replay) if self.replay is not None else self.ctl.view()
        goal = next((g for g in view["goals"] if g["id"] == goal_id), None)
        if goal is None:
            return
        errors = (self._replayed_errors(self.replay) if self.replay is not None else self.goals_pane.errors).get(goal_id)
        self.push_screen(GoalDetailScreen(self.ctl, goal, view["plans"].get(goal_id), errors,
                                          lambda gid: self.action_orient(gid), self.open_findings))

    @guarded
    def action_orient(self, goal_id: int | None = None) -> None:
        if not self.live:
            self.notify("a trace file has no graph to show", markup=False)
            return
        from .orient_view import OrientScreen

        self.push_screen(OrientScreen(self.ctl, goal_id))

    def open_findings(self, goal_id: int) -> None:
        if not self.live:
            self.notify("a trace file has no graph to synthesise from", markup=False)
            return
        from .findings import FindingsScreen

        self.push_screen(FindingsScreen(self.ctl, goal_id))

    @guarded
    def action_plots(self) -> None:
        if self.last_cycle() == 0:
            self.notify("nothing recorded yet: step first", markup=False)
            return
        from .plots import PlotsScreen  # plotext is loaded when the plots are first asked for

        cursor = self.replay if self.replay is not None else self.last_cycle()
        self.push_screen(PlotsScreen(self.ctl, cursor, self._seek, sync=self.sync))

    # ---- actions ---------------------------------------------------------------------------
    @guarded
    def action_step(self) -> None:
        if self.replay is not None:  # stepping a replay moves through the recorded cycles
            self.action_replay_forward(1)
            return
        if self.running:
            self.running = False
            self._dirty = True
            return
        self._submit("step")

    @guarded
    def action_toggle_run(self) -> None:
        if self._read_only():
            return
        self.running = not self.running
        self.until_change = None
        self._dirty = True
        if self.running:
            self._submit("cycle")
        else:
            self._commands.put("wake")  # interrupts the inter-cycle wait at once

    @guarded
    def action_faster(self) -> None:
        self.speed_index = min(len(SPEEDS) - 1, self.speed_index + 1)
        self._dirty = True

    @guarded
    def action_slower(self) -> None:
        self.speed_index = max(0, self.speed_index - 1)
        self._dirty = True

    @guarded
    def action_run_until_change(self) -> None:
        if self._read_only():
            return
        rec = self.ctl.latest
        self.until_change = self._statuses(rec) if rec else tuple((g["id"], g["status"]) for g in self.ctl.view()["goals"])
        self.running = True
        self._submit("cycle")

    @guarded
    def action_add_goal(self) -> None:
        if self._read_only():
            return
        def add(desc: str, crit: str | None, prio: int) -> None:
            self.ctl.apply(AddGoal(desc, crit, prio))
            self._dirty = True

        self.push_screen(AddGoalScreen(add))

    @guarded
    def action_edit_psyche(self) -> None:
        if self._read_only():
            return
        from .psyche_editor import PsycheEditorScreen

        live = self.ctl.psyche_toml()
        screen = PsycheEditorScreen(self.psyche_draft or live, self.ctl.psyche_file(), self.apply_psyche,
                                    live_text=live, save=self.ctl.save_psyche)
        # an unapplied draft comes back on close and is reopened next time: nothing typed is lost
        self.push_screen(screen, callback=lambda draft: setattr(self, "psyche_draft", draft))

    def apply_psyche(self, psyche: Psyche, source: str = "editor") -> None:
        self.ctl.edit_psyche(psyche, source=source)
        self.psyche_draft = None
        self._dirty = True

    @guarded
    def action_veto_selected(self) -> None:
        if self._read_only():
            return
        tool = self.score_table.selected_tool()
        if tool is None:
            return
        if self.ctl.veto_tool(tool):
            self._dirty = True
            self.notify(f"Veto added for {tool}: it fires if {tool} is chosen from the next cycle on", markup=False)
        else:
            self.notify(f"{tool} is vetoed already: nothing changed", markup=False)

    @guarded
    def action_lift_veto_selected(self) -> None:
        if self._read_only():
            return
        tool = self.score_table.selected_tool()
        if tool is None:
            return
        if self.ctl.lift_veto(tool):
            self._dirty = True
            self.notify(f"Veto of {tool} lifted: it runs when chosen from the next cycle on", markup=False)
        else:
            self.notify(f"No veto added with v for {tool}: a psyche pattern is changed in the editor (e)",
                        markup=False)

    @guarded
    def action_reset(self) -> None:
        if not self.live:
            self.notify("a trace file has no engine to reset", markup=False)
            return

        def reset() -> None:
            self.ctl.reset()  # a new run in the same store
            self.marks = self.ctl.marks()
            self.deltas = {}
            self.replay = None
            self.last_event = "scenario reset (a new run)"

        self.running = False
        self.goals_pane.errors.clear()
        self._submit(reset)

    @guarded
    def action_think(self) -> None:
        if self._read_only():
            return
        from .think_screen import ThinkScreen

        # the focus goal's symbols: the graph oracle matches label words exactly
        goal = self.ctl.goal_words(self.ctl.view()["focus"]) or "whale mammal"
        scenario = self.ctl.scenario
        if scenario is None:  # live runs have one; this guards the checker's view of it
            return
        self.push_screen(ThinkScreen(str(scenario.path), goal))

    @guarded
    def action_help(self) -> None:
        from .findings import FindingsScreen
        from .goal_detail import GoalDetailScreen
        from .orient_view import OrientScreen
        from .plots import PlotsScreen, ToolGrid
        from .psyche_editor import PsycheEditorScreen
        from .think_screen import ThinkScreen
        from .travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, SearchScreen

        keymap = self.user_config.keymap

        def rows(bindings: Iterable[BindingType]) -> list[tuple[str, str, str]]:
            out = []
            for b in bindings:
                if not isinstance(b, Binding):
                    continue
                keys = keymap.get(b.id, b.key) if b.id else b.key
                out.append((key_label(keys), b.tooltip or b.description, b.id or ""))
            return out

        ids = {b.id: b for b in self.BINDINGS if isinstance(b, Binding) and b.id}

        def key(bid: str) -> str:
            """The key that opens a view, as bound now (the headings said `p` for the plots' `P`)."""
            return key_label(keymap.get(bid, ids[bid].key))

        sections = [
            ("in the goals pane (tab or a click focuses it)", rows(GoalsPane.BINDINGS)),
            ("in the working-memory list", [("enter", "open the highlighted entry in full", "")]),
            ("in a goal's detail", rows(GoalDetailScreen.BINDINGS)),
            (f"in the Orient view ({key('orient')})", rows(OrientScreen.BINDINGS) + [("↑ / ↓", "move between nodes", "")]),
            ("in the findings", rows(FindingsScreen.BINDINGS)),
            (f"in the plots ({key('plots')})", rows(list(ToolGrid.BINDINGS) + list(PlotsScreen.BINDINGS))),
            (f"in the ThinkLoop view ({key('think')})", rows(ThinkScreen.BINDINGS)),
            (f"in the add-goal dialog ({key('add_goal')})", rows(AddGoalScreen.BINDINGS) + [("enter", "add the goal", "")]),
            (f"in the fork dialog ({key('fork')})", rows(ForkScreen.BINDINGS)),
            (f"in the branches list ({key('branches')})", rows(BranchesScreen.BINDINGS)),
            ("in the comparison", rows(CompareScreen.BINDINGS)),
            (f"in the breakpoints ({key('breakpoints')})", rows(BreakpointsScreen.BINDINGS) + [("enter", "add the breakpoint typed", "")]),
            (f"in the search ({key('search')})", rows(SearchScreen.BINDINGS) + [("enter", "jump to the highlighted hit", "")]),
        ]
        self.push_screen(HelpScreen(rows(self.BINDINGS),
                                    f"Remap any key in {self.user_config.path} under [keymap], e.g. step = \"n\".",
                                    rows(PsycheEditorScreen.BINDINGS), sections))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if not isinstance(b, Binding) or b.id in ("quit",):
                continue
            desc = b.tooltip or b.description
            # the palette reads a title as markup: "[approve]" was dropped as a style tag
            yield SystemCommand(escape_markup(desc[0].upper() + desc[1:]), f"key: {b.key}", self._runner(b.action))

    def _runner(self, action: str) -> Callable[[], object]:
        return lambda: self.call_later(self.run_action, action)


KEY_NAMES = {"equals_sign": "=", "plus": "+", "minus": "-", "comma": ",", "full_stop": ".", "less_than_sign": "<",
             "greater_than_sign": ">", "slash": "/"}


def key_label(keys: str) -> str:
    return ",".join(KEY_NAMES.get(k, k) for k in keys.split(","))


def run(scenario: str = "zoo", seed: int | None = None, decider: str = "utility", locations: Locations | None = None,
        trace_file: str | None = None, resume: bool = False) -> int:
    """The workbench on a scenario, its runs recorded in the data dir's session store (or
    resuming the store's current branch); or replaying a trace file."""
    try:
        if trace_file is not None:
            app = Workbench(trace_file=trace_file, locations=locations)
        else:
            from .trust_prompt import ask

            # the scenario's own Python plugins: asked about before the run is opened (nothing imported before)
            go, agreed = ask(locations or Locations.resolve(), scenario, decider, resume)
            if not go:
                return 0
            app = Workbench(scenario, seed, decider=agreed or decider, locations=locations, resume=resume)
    except InputError as exc:
        print(f"error: {exc}")
        return 2
    app.run()
    return 0
