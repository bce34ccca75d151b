"""The Textual workbench: panes over one Controller, driven from an engine thread.

Data flows one way. The engine thread runs cycles and leaves their records in an inbox; a
timer on the UI thread drains the inbox at most 30 times a second and renders the newest
record and the controller's view. User intent (step, run, pause, edit, add a goal) goes to
the engine as commands. `sync=True` runs commands on the UI thread instead, which makes
snapshot tests deterministic.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Callable, Iterable

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..engine.controller import Controller
from ..engine.errors import InputError
from ..engine.llm import make_decider
from ..engine.psyche import Psyche
from ..engine.scenario import Scenario, build_agent, load_scenario
from .dialogs import AddGoalScreen, HelpScreen, guarded, show_error
from .panes import GoalsPane, MemoryPane, PlanPane, PsychePane, ScoreTable, WhyPane
from .themes import load_themes
from .userconfig import UserConfig

SPEEDS = (1, 2, 5, 10, 20, 50, 100, 0)  # cycles per second; 0 = as fast as the engine goes
DRAIN_HZ = 30  # at most this many redraws a second
FAST_FRAME_EVERY = 6  # at full speed draw every 6th tick (5 a second): drawing holds the GIL


class Workbench(App):
    TITLE = "akh-tui"
    CSS_PATH = "workbench.tcss"
    BINDINGS = [
        Binding("space", "step", "Step", id="step"),
        Binding("r", "toggle_run", "Run/Pause", id="run_pause"),
        Binding("plus,equals_sign", "faster", "Faster", id="faster", key_display="+"),
        Binding("minus", "slower", "Slower", id="slower", key_display="-"),
        Binding("u", "run_until_change", "Until change", id="run_until_change"),
        Binding("g", "add_goal", "Add goal", id="add_goal"),
        Binding("e", "edit_psyche", "Psyche", id="edit_psyche"),
        Binding("v", "veto_selected", "Veto tool", id="veto_selected"),
        Binding("t", "think", "ThinkLoop", id="think"),
        Binding("ctrl+r", "reset", "Reset", id="reset", show=False),
        Binding("f1", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
    ]
    DESCRIPTIONS = {
        "step": "step one cycle",
        "run_pause": "run / pause",
        "faster": "run faster",
        "slower": "run slower",
        "run_until_change": "run until a goal's status changes",
        "add_goal": "add a goal",
        "edit_psyche": "edit the psyche (persona, shadow, archetypes)",
        "veto_selected": "add a veto for the tool selected in the score table",
        "reset": "reset the scenario",
        "think": "open the ThinkLoop view (seed 003's feedback controller on this graph)",
        "help": "this help",
        "quit": "quit",
    }

    def __init__(
        self,
        scenario: str = "zoo",
        seed: int | None = None,
        *,
        sync: bool = False,
        config: UserConfig | None = None,
        psyche_save_dir: Path | None = None,
        decider: str = "utility",
    ) -> None:
        super().__init__()
        self.scenario_arg = scenario
        self.seed_arg = seed
        self.sync = sync
        self.user_config = config or UserConfig.load()
        self.psyche_save_dir = psyche_save_dir
        self.decider_kind = decider
        self.scenario: Scenario = load_scenario(scenario)
        self.ctl = self._new_controller()
        self.running = False
        self.speed_index = 3
        self.until_change: tuple | None = None
        self.psyche_draft: str | None = None
        self.deltas: dict[str, float] = {}
        self.last_event = ""
        self._inbox: list[dict] = []
        self._inbox_lock = threading.Lock()
        self._commands: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._dirty = True
        self._ticks = 0
        self.cycles_drawn = 0
        if self.user_config.keymap:
            self.set_keymap(self.user_config.keymap)

    @staticmethod
    def speed_levels() -> tuple[int, ...]:
        return SPEEDS

    # ---- set-up ----------------------------------------------------------------------------
    def _new_controller(self) -> Controller:
        # the model is asked from the engine thread: the UI never waits on the network
        decider = make_decider(self.decider_kind, self.user_config.llm, file=str(self.user_config.path))
        agent = build_agent(self.scenario, self.seed_arg, decider=decider)
        ctl = Controller(agent, self.scenario.name, rebuild=lambda: build_agent(self.scenario, self.seed_arg, add_goals=False, decider=decider))
        ctl.listeners.append(self._on_engine_output)
        return ctl

    def compose(self) -> ComposeResult:
        yield Static(id="status")
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
            with Vertical(id="why-box", classes="box"):
                yield WhyPane(id="why")
        with Horizontal(id="bottom"):
            with Vertical(id="memory-box", classes="box"):
                yield MemoryPane(id="memory")
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
        self.set_interval(1 / DRAIN_HZ, self._drain)
        if not self.sync:
            self._engine_loop()
        self._render_all(None)

    def _remember_theme(self, theme) -> None:
        try:
            self.user_config.save_theme(theme.name)
        except OSError as exc:
            self.notify(f"could not save the theme choice: {exc}", severity="warning", markup=False)

    def on_unmount(self) -> None:
        self._stop.set()
        self._commands.put(None)

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
            self._execute(cmd)

    def _execute(self, cmd) -> None:
        if cmd == "wake":  # only interrupts the wait between cycles
            self._dirty = True
            return
        try:
            if cmd == "cycle" or cmd == "step":
                if cmd == "cycle" and not self.running:
                    return
                rec = self.ctl.step()
                if rec is None:
                    self.running = False
                    self._post_note("no active goal: the run is finished (g adds a goal, ctrl+r resets)")
                elif self.until_change is not None and self._statuses(rec) != self.until_change:
                    self.running = False
                    self.until_change = None
                    self._post_note(f"paused at cycle {rec['cycle']}: a goal's status changed")
            else:
                cmd()
        except Exception as exc:  # an engine bug is shown, never a crash
            title = f"The engine raised {type(exc).__name__}; the run is paused."
            if self.sync:
                show_error(self, title, exc)
            else:
                self.call_from_thread(show_error, self, title, exc)
        self._dirty = True

    def _submit(self, cmd) -> None:
        if self.sync:
            self._execute(cmd)
            self._drain()
        else:
            self._commands.put(cmd)

    def _on_engine_output(self, item: dict) -> None:
        with self._inbox_lock:
            self._inbox.append(item)

    def _post_note(self, text: str) -> None:
        self.last_event = text

    @staticmethod
    def _statuses(rec: dict) -> tuple:
        return tuple((g["id"], g["status"]) for g in rec["goals"])

    # ---- drawing ---------------------------------------------------------------------------
    @guarded
    def _drain(self) -> None:
        self._ticks += 1
        if self.running and SPEEDS[self.speed_index] == 0 and self._ticks % FAST_FRAME_EVERY:
            return
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
        if not items and not self._dirty:
            return
        self._dirty = False
        record = None
        for it in items:
            if it.get("type") == "cycle":
                record = it
                self.cycles_drawn += 1
                self.goals_pane.record(it)
            elif it.get("type") == "reflection":
                deltas: dict[str, float] = {}
                for ch in it["psyche_changes"]:
                    if ch.get("kind") == "archetype":
                        deltas[ch["archetype"]] = deltas.get(ch["archetype"], 0.0) + ch["new"] - ch["old"]
                self.deltas = deltas
                self.last_event = f"reflection at cycle {it['cycle']}"
            elif it.get("type") == "decomposition":
                self.last_event = f"goal #{it['goal']} decomposed ({it['mode']}) at cycle {it['cycle']}"
            elif it.get("type") == "psyche_edit":
                self.last_event = f"psyche edited ({it['source']}): applies at cycle {it['cycle'] + 1}"
            elif it.get("type") == "goal_added":
                self.last_event = f"goal #{it['goal']['id']} added"
        self._render_all(record)

    def _render_all(self, record: dict | None) -> None:
        try:
            view = self.ctl.view()
            record = record or self.ctl.latest
            self.goals_pane.show(view)
            self.plan_pane.show(view)
            self.score_table.show(record)
            self.why_pane.show(record, self.score_table.selected_tool())
            pp = self.psyche_pane
            pp.deltas = self.deltas
            pp.show(view)
            mem = self.memory_pane
            mem.show(view, record, max(1, mem.size.height - 1) if mem.size.height else 8)
            self._render_status(view)
        except Exception as exc:
            show_error(self, f"Drawing failed: {type(exc).__name__}", exc)

    def _render_status(self, view: dict) -> None:
        done = sum(1 for g in view["goals"] if g["status"] == "completed" and g["parent"] is None)
        top = sum(1 for g in view["goals"] if g["parent"] is None)
        speed = SPEEDS[self.speed_index]
        t = Text()
        t.append(f" {self.scenario.name} ", style="bold reverse")
        t.append(f" seed {view['seed']} · cycle ")
        t.append(str(view["cycle"]), style="bold")
        t.append(" · ")
        t.append("▶ running" if self.running else "■ paused", style="bold green" if self.running else "bold yellow")
        t.append(f" · {'max' if speed == 0 else speed}/s · goals {done}/{top} done")
        if self.last_event:
            t.append(f" · {self.last_event}", style="dim")
        self.status_bar.update(t)

    @guarded
    def on_data_table_row_highlighted(self, event) -> None:
        self.why_pane.show(self.ctl.latest, self.score_table.selected_tool())

    # ---- actions ---------------------------------------------------------------------------
    @guarded
    def action_step(self) -> None:
        if self.running:
            self.running = False
            self._dirty = True
            return
        self._submit("step")

    @guarded
    def action_toggle_run(self) -> None:
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
        rec = self.ctl.latest
        self.until_change = self._statuses(rec) if rec else tuple((g["id"], g["status"]) for g in self.ctl.view()["goals"])
        self.running = True
        self._submit("cycle")

    @guarded
    def action_add_goal(self) -> None:
        def add(desc: str, crit: str | None, prio: int) -> None:
            self.ctl.add_goal(desc, crit, prio)
            self._dirty = True

        self.push_screen(AddGoalScreen(add))

    @guarded
    def action_edit_psyche(self) -> None:
        from .psyche_editor import PsycheEditorScreen

        live = self.ctl.psyche_toml()
        screen = PsycheEditorScreen(self.psyche_draft or live, self.psyche_path(), self.apply_psyche, live_text=live)
        # an unapplied draft comes back on close and is reopened next time: nothing typed is lost
        self.push_screen(screen, callback=lambda draft: setattr(self, "psyche_draft", draft))

    def psyche_path(self) -> Path | None:
        if self.scenario.psyche_file is not None:
            return self.scenario.psyche_file
        if self.psyche_save_dir is not None:
            return self.psyche_save_dir / f"{self.scenario.name}.psyche.toml"
        import platformdirs

        return Path(platformdirs.user_data_dir("akh-tui", appauthor=False)) / "psyche" / f"{self.scenario.name}.toml"

    def apply_psyche(self, psyche: Psyche, source: str = "editor") -> None:
        self.ctl.replace_psyche(psyche, source=source)
        self.psyche_draft = None
        self._dirty = True

    @guarded
    def action_veto_selected(self) -> None:
        tool = self.score_table.selected_tool()
        if tool is None:
            return
        psyche = self.ctl.current_psyche().with_veto_for_tool(tool)
        self.apply_psyche(psyche, source=f"veto {tool} from the score table")
        self.notify(f"Veto added for {tool}: it fires if {tool} is chosen from the next cycle on", markup=False)

    @guarded
    def action_reset(self) -> None:
        def reset() -> None:
            self.ctl.listeners.clear()
            self.ctl = self._new_controller()
            self.deltas = {}
            self.last_event = "scenario reset"

        self.running = False
        self.goals_pane.errors.clear()
        self._submit(reset)

    @guarded
    def action_think(self) -> None:
        from .think_screen import ThinkScreen

        # the focus goal's symbols: the graph oracle matches label words exactly
        goal = self.ctl.goal_words(self.ctl.view()["focus"]) or "whale mammal"
        self.push_screen(ThinkScreen(str(self.scenario.path), goal))

    @guarded
    def action_help(self) -> None:
        keymap = self.user_config.keymap
        rows = []
        for b in self.BINDINGS:
            keys = keymap.get(b.id, b.key) if b.id else b.key
            rows.append((keys.replace("equals_sign", "=").replace("plus", "+").replace("minus", "-"), self.DESCRIPTIONS.get(b.id, b.description), b.id or ""))
        from .psyche_editor import PsycheEditorScreen

        editor_rows = [(keymap.get(b.id, b.key) if b.id else b.key, b.description, b.id or "")
                       for b in PsycheEditorScreen.BINDINGS if isinstance(b, Binding)]
        self.push_screen(HelpScreen(rows, f"Remap any key in {self.user_config.path} under [keymap], e.g. step = \"n\".", editor_rows))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if b.id in ("quit",):
                continue
            desc = self.DESCRIPTIONS.get(b.id, b.description)
            yield SystemCommand(desc[0].upper() + desc[1:], f"key: {b.key}", self._runner(b.action))

    def _runner(self, action: str) -> Callable[[], None]:
        return lambda: self.call_later(self.run_action, action)


def run(scenario: str = "zoo", seed: int | None = None, decider: str = "utility") -> int:
    try:
        app = Workbench(scenario, seed, decider=decider)
    except InputError as exc:
        print(f"error: {exc}")
        return 2
    app.run()
    return 0
