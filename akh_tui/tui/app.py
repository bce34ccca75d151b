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

This module is the shell: the bindings, the state, the screen's composition and layout. The
rest is in parts, each a mixin of the Workbench (see host.py): driver.py (the engine thread
and its typed jobs), frames.py (drawing), timeline.py (replay, fork, branches), edits.py (the
live run's edits), views.py (the views opened), keys.py (keymap, help, palette), phases.py
(the cycle in phases).
"""

from __future__ import annotations

from __future__ import annotations

import gc
import queue
import threading
from pathlib import Path

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.theme import Theme
from textual.widgets import Footer, Static

from ..engine.records import CycleRecord, Event, View
from ..engine import InputError, Locations, Run, UserConfig, parse_breakpoint
from .driver import SPEEDS, EngineDriver
from .edits import WATCH_S, LiveEdits
from .frames import DRAIN_HZ, NARROW, Frames
from .jobs import CycleNews, EngineJob
from .keys import Keys
from .panes import agent_panes, GoalsPane, MemoryPane, PlanPane, PsychePane, ScoreTable, WhyPane
from .phases import PhaseBar, PhaseStepping
from .state_edit import Staged
from .themes import load_themes
from .timeline import Timeline
from .travel import Scrubber
from .views import Views
from .watches import Watch, WatchStrip

MIN_SIZE = (80, 24)  # below this the panes cannot show their numbers: the screen says so
WHY_MIN, WHY_NARROW = 36, 28  # the Why pane's width: wide layout at least, narrow layout
SCORE_FULL = 113  # the score table's full columns with its border and scrollbar
TOO_SMALL = (f"The terminal is too small for the workbench: it needs {MIN_SIZE[0]}×{MIN_SIZE[1]}.\n"
             "Make the window larger (q quits).")


# the parts first, then the cycle in phases (host.py builds on it for the checker), then the App
class Workbench(EngineDriver, Frames, Timeline, LiveEdits, Views, Keys, PhaseStepping, App[None]):
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
        Binding("x", "edit_state", "Edit state", id="edit_state", show=False,
                tooltip="edit the state at the cycle shown (a triple, a goal, a memory entry): applied before "
                        "the next cycle, or at a replayed cycle a new branch"),
        Binding("G", "flow", "Flow", id="flow", key_display="G", show=False,
                tooltip="the flow: the goal tree and each plan drawn as a graph, the focus and the active step lit"),
        Binding("Q", "query", "Query", id="query", key_display="Q", show=False,
                tooltip="the query console: ask the graph, the working memory and the goals at the cycle shown"),
        Binding("R", "rules", "Rules", id="rules", key_display="R", show=False,
                tooltip="the rule browser: bindings left after each premise, why a rule did not fire, the agenda"),
        Binding("f5", "reload", "Reload", id="reload", show=False,
                tooltip="read the scenario's goals, rule, triple, plugin and psyche files again: in force from the "
                        "next cycle"),
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
        self.staged_edits: list[Staged] = []  # state edits staged in the `x` dialog, kept while it is closed
        self.edit_draft = ""  # the line left in that dialog's box
        self.watches: list[Watch] = []  # queries pinned in the query console, read after every cycle
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
        # the frame being drawn at full speed: the UI thread's CPU time, the process's CPU time and
        # the wall time when it began, and whether it is a full one; the last frame's start
        # (process CPU) and the last ticker frame's cost (UI-thread CPU seconds); the last full
        # frame's start and cost (None until measured: it is measured again once Textual has drawn it)
        self._frame: tuple[float, float, float, bool] = (0.0, 0.0, 0.0, False)
        self._last_frame: tuple[float, float] = (0.0, 0.0)
        self._last_full: tuple[float, float | None] = (0.0, 0.0)
        self._status_view: View | None = None  # the view of the last full frame, for ticker frames
        self._status_lines = 0  # the status line's height in lines when last laid out (0: never)
        self._cursor_row: int | None = None  # the score table's row the Why pane explains
        self._asking_why_not = False  # the user moved that cursor: the Why pane follows it
        self._why_followed: tuple[int | None, str | None] | None = None  # (cycle, tool) scrolled to
        self.cycles_drawn = 0
        self.drawn: tuple[int, bool] | None = None  # the live cycle the panes last showed, and whether running
        self.breakpoint_hit: str | None = None
        self.keymap_refusals: list[str] = []
        if self.user_config.keymap:
            self._apply_keymap()


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
        yield WatchStrip(id="watches")
        yield from agent_panes()
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
        self.watch_strip = self.query_one(WatchStrip)
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
        if self.live and self.trace_file is None:
            self._watch_files()  # the files as they are now: later changes are named
            self.set_interval(WATCH_S, self._watch_files)
        if not self.sync and self.live:
            self._engine_loop()
        if self.trace_file is not None:
            self.last_event = f"replaying {self.trace_file.name}: , . move, / searches (no engine)"
        self._render_all(None)
        self.call_after_refresh(self._freeze_heap)

    def _freeze_heap(self) -> None:
        """Once the first frame is drawn, everything alive (Textual's widgets and styles, the
        scenario's graph, the modules) is moved out of the cyclic collector's sight: a full
        collection then walks only what came since. With a 100,000-triple graph loaded, each
        full collection walked all of it, on whichever thread happened to allocate, and froze
        the UI for a quarter of a second (the plots screen filling; issue 29). What reference
        counting frees is freed as before; `on_unmount` hands the frozen objects back."""
        gc.freeze()

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
        gc.unfreeze()  # cycles among what was alive at start-up can be collected again
        self._stop.set()
        self._commands.put(None)
        try:
            self.ctl.close()  # checkpoints the branch: a later resume starts from here
        except Exception:  # quitting must not fail on a store problem
            pass



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
