"""The ThinkLoop view (seed 003): the PI controller's error, gain and reward per step as
plots, the queries as they evolve, and the hot and cold memory. Runs on the graph of the
workbench's scenario, offline and deterministic, one step per key press or all at once."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from ..engine import GraphOracle, InputError, ThinkLoop
from .dialogs import guarded
from .panes import spark


class ThinkScreen(Screen):
    AUTO_FOCUS = ""  # nothing focused: space steps the loop; tab reaches the goal field
    BINDINGS = [
        Binding("space", "think_step", "Step", id="think.step"),
        Binding("ctrl+a", "think_run", "Run all", id="think.run"),
        Binding("escape", "close", "Back", id="think.close"),
    ]
    DEFAULT_CSS = """
    ThinkScreen #think-goal { margin: 0 1; }
    ThinkScreen #think-plots { height: 6; border: round $primary 50%; padding: 0 1; }
    ThinkScreen #think-body { height: 1fr; }
    ThinkScreen #think-steps { width: 2fr; border: round $primary 50%; padding: 0 1; }
    ThinkScreen #think-memory { width: 1fr; border: round $primary 50%; padding: 0 1; }
    ThinkScreen Static { text-wrap: nowrap; text-overflow: ellipsis; }
    ThinkScreen #think-title { text-wrap: wrap; height: auto; background: $panel; padding: 0 1; }
    """

    def __init__(self, scenario: str, goal: str) -> None:
        super().__init__()
        self.scenario = scenario
        self.oracle = GraphOracle.from_scenario(scenario)
        self.loop: ThinkLoop | None = None
        self._goal = goal

    def compose(self) -> ComposeResult:
        title = Text()
        title.append(" ThinkLoop ", style="bold reverse")
        title.append(" seed 003's feedback controller: each step queries the graph, the error is how far the answer's "
                     "words are from the query's (1 − Jaccard), the gain grows with the summed error; it stops when "
                     "the error falls below the threshold (converged), the reward keeps falling, or at the step cap. "
                     "space steps · ctrl+a runs all · escape returns", style="dim")
        yield Static(title, id="think-title")
        yield Input(value=self._goal, placeholder="goal (enter starts a new loop)", id="think-goal")
        yield Static(id="think-plots")
        with Horizontal(id="think-body"):
            yield Static(id="think-steps")
            yield Static(id="think-memory")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#think-plots").border_title = "ThinkLoop: error · gain · reward"
        self.query_one("#think-steps").border_title = "Steps and queries"
        self.query_one("#think-memory").border_title = "Hot / cold memory"
        self._start(self._goal)

    @guarded
    def _start(self, goal: str) -> None:
        try:
            self.loop = ThinkLoop(goal, self.oracle)
        except InputError as exc:
            self.loop = None
            self.notify(str(exc), severity="error", markup=False)
        self._draw()

    @guarded
    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._start(event.value)
        self.set_focus(None)

    @guarded
    def action_think_step(self) -> None:
        if self.loop is not None:
            self.loop.step()
            self._draw()

    @guarded
    def action_think_run(self) -> None:
        if self.loop is not None:
            while self.loop.step() is not None:
                pass
            self._draw()

    def action_close(self) -> None:
        self.app.pop_screen()

    @guarded
    def _draw(self) -> None:
        loop = self.loop
        plots, steps, memory = Text(), Table(box=None, expand=True, padding=(0, 1)), Text()
        if loop is None:
            self.query_one("#think-plots", Static).update(Text("no loop: give a goal with words", style="dim"))
            return
        errs = [s.error for s in loop.steps]
        gains = [s.gain for s in loop.steps]
        rewards = [s.reward for s in loop.steps]
        for name, values, hi, style in (("error ", errs, 1.0, "red"), ("gain  ", gains, 10.0, "cyan"),
                                        ("reward", rewards, max([1.0] + rewards), "green")):
            plots.append(f"{name} ", style="bold")
            plots.append(spark(values, 0.0, hi) or "·", style=style)
            plots.append(f"  {values[-1]:.4f}\n" if values else "\n", style="dim")
        state = loop.stop_reason or ("running" if loop.steps else "not started: space steps, ctrl+a runs to the end")
        plots.append(f"goal {loop.goal!r} · {len(loop.steps)} step(s) · {state}", style="bold yellow" if loop.stopped else "dim")
        for col, width in (("k", 3), ("error", 6), ("I", 7), ("gain", 6), ("reward", 6)):
            steps.add_column(col, no_wrap=True, min_width=width, justify="right")
        steps.add_column("query → observation", no_wrap=True, overflow="ellipsis", ratio=1)
        for s in loop.steps[-30:]:
            steps.add_row(str(s.step), f"{s.error:.4f}", f"{s.integral:.3f}", f"{s.gain:.3f}", f"{s.reward:.4f}",
                          Text(f"{s.query} → {s.observation or '(nothing)'}"))
        if not loop.stopped:
            steps.add_row("", "", "", "", "", Text(f"next query: {loop.next_query()}", style="dim"))
        memory.append(f"hot {len(loop.hot)}/{loop.config.hot_capacity}\n", style="bold")
        for e in loop.hot[-12:]:
            memory.append(f" {e.reward:.3f} ", style="green")
            memory.append(f"{e.observation[:80]}\n")
        memory.append(f"\ncold {len(loop.cold)} (reward ≥ {loop.config.promotion_threshold})\n", style="bold")
        for e in loop.cold[-12:]:
            memory.append(f" {e.reward:.3f} ", style="green")
            memory.append(f"{e.observation[:80]}\n")
        self.query_one("#think-plots", Static).update(plots)
        self.query_one("#think-steps", Static).update(steps)
        self.query_one("#think-memory", Static).update(memory)
