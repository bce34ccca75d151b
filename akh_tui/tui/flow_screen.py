"""The flow (`G`): the goal tree and each plan drawn as a graph at the cycle on show, the
focus goal and its plan's active step lit, so where the agent is in its work reads at a glance
(also at 80×24: a line per goal, a plan's steps wrapped as a chain under its goal).

    #1 ✓ Find mammals  completed 100%
    ├─ #4 ● Find mammals: part 1  active 40%   ◀ focus
    │     plan 1 (explore-first): ✓ kg_query → ▶ infer_rules → · reason
    └─ #5 ○ Find mammals: part 2  suspended 0%
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..engine.records import View

STATUS_MARK = {"active": ("●", "bold cyan"), "completed": ("✓", "green"), "failed": ("✗", "red"),
               "suspended": ("○", "yellow")}
STEP_MARK = {"done": ("✓", "green"), "completed": ("✓", "green"), "active": ("▶", "bold reverse cyan"),
             "pending": ("·", "dim"), "failed": ("✗", "red"), "skipped": ("–", "dim")}


def flow_text(view: View, width: int) -> Text:
    """The goal tree (children under their parent, in id order) with each goal's plan as a chain
    of steps; the focus goal and the active step lit. `width` wraps a plan's chain."""
    goals = {g["id"]: g for g in view["goals"]}
    roots = [g for g in view["goals"] if g["parent"] is None or g["parent"] not in goals]
    t = Text()

    def chain(plan: dict, indent: str) -> None:
        head = f"{indent}plan {plan['attempt']} ({plan['strategy']}, {plan['status']}): "
        t.append(head, style="dim")
        col = len(head)
        for i, st in enumerate(plan["steps"]):
            mark, style = STEP_MARK.get(st["status"], ("?", ""))
            piece = ("→ " if i else "") + f"{mark} {st['tool']}"
            if col + len(piece) + 1 > width and i:
                t.append("\n" + indent + "  ")
                col = len(indent) + 2
            if i:
                t.append("→ ", style="dim")
            t.append(f"{mark} {st['tool']}", style=style)
            t.append(" ")
            col += len(piece) + 1
        t.append("\n")

    def goal(g: dict, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        mark, style = STATUS_MARK.get(g["status"], ("?", ""))
        focus = g["id"] == view["focus"]
        t.append(prefix + branch, style="dim")
        t.append(f"#{g['id']} ")
        t.append(mark, style=style)
        t.append(f" {g['description']}", style="bold" if focus else "")
        t.append(f"  {g['status']} {g['coverage']:.0%}", style="dim")
        if g.get("child_mode"):
            t.append(f" ({g['child_mode']})", style="dim")
        if focus:
            t.append("  ◀ focus", style="bold reverse cyan")
        t.append("\n")
        below = prefix + ("" if top else ("   " if last else "│  "))
        kids = [goals[c] for c in g.get("children", []) if c in goals]
        plan = view["plans"].get(g["id"])
        if plan is not None:
            chain(plan, below + ("│  " if kids else "   "))
        for i, k in enumerate(kids):
            goal(k, below, i == len(kids) - 1, False)

    for r in roots:
        goal(r, "", True, True)
    if not roots:
        t.append("no goal yet: g adds one", style="dim")
    return t


class FlowScreen(Screen[None]):
    BINDINGS = [Binding("escape", "close", "Close", id="flow.close")]
    DEFAULT_CSS = """
    FlowScreen #flow-title { height: auto; background: $panel; padding: 0 1; }
    FlowScreen VerticalScroll { border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, view: View, replay: bool, follow: Callable[[], View] | None) -> None:
        super().__init__()
        self.view = view
        self.replay = replay
        self.follow = follow  # live: the run's view now, to redraw with the run

    def compose(self) -> ComposeResult:
        yield Static(id="flow-title")
        with VerticalScroll():
            yield Static(id="flow-text")
        yield Footer()

    def on_mount(self) -> None:
        self.draw()

    def on_resize(self) -> None:
        self.draw()

    def draw(self) -> None:
        t = Text()
        t.append(" Flow ", style="bold reverse")
        t.append(f" cycle {self.view['cycle']}" + (" (replay)" if self.replay else " live"))
        t.append(" · the goal tree, each plan a chain of steps: ▶ the active step, ◀ the focus goal", style="dim")
        self.query_one("#flow-title", Static).update(t)
        width = max(40, self.app.size.width - 6)
        self.query_one("#flow-text", Static).update(flow_text(self.view, width))

    def on_workbench_update(self) -> None:
        """Live, the picture follows the run (called by the workbench after each redraw)."""
        if self.follow is not None:
            view = self.follow()
            if view["cycle"] != self.view["cycle"]:
                self.view = view
                self.draw()

    def action_close(self) -> None:
        self.app.pop_screen()
