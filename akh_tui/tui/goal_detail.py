"""The goal detail (enter or a click on a goal): why this goal is (not) done.

Its criteria, which no pane shows, each found (cycle, tool, evidence) or missing (whether the
graph already holds it, since when and from which rule or file, and which tool with which input
would return it): `Run.explain_goal`, the same explanation `akh-tui agent explain --goal N`
prints. Below: the goal's plan, status, priority and error over the last cycles."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..engine import InputError, Run
from .panes import MARKER_STYLE, STATUS_ICON, STATUS_STYLE, spark


def explanation_text(goal: dict, explained: dict | None, plan: dict | None, errors: list[float] | None,
                     note: str = "") -> Text:
    """The detail as text (a function of plain data: tested without a screen)."""
    t = Text()
    t.append(f"{STATUS_ICON.get(goal['status'], '?')} #{goal['id']} ", style=STATUS_STYLE.get(goal["status"], ""))
    t.append(goal["description"] + "\n", style="bold")
    t.append(f"{goal['status']} · priority {goal['priority']} · coverage {goal['coverage']:.0%}", style="dim")
    if errors:
        t.append(f" · error over the last cycles {spark(errors, 0.0, 1.0, 24)}", style="dim red")
    t.append("\n")
    if goal.get("fail_reason"):
        t.append(f"failed: {goal['fail_reason']}\n", style="red")
    crit = (explained or {}).get("goal", {}).get("criteria") or goal.get("criteria") or ""
    t.append("\ncriteria: ", style="bold")
    t.append((crit or "(from the description's words)") + "\n")
    if explained is not None:
        t.append("\nwhy it is " + ("done" if goal["status"] == "completed" else "not done") + "\n", style="bold")
        lines = explained.get("lines", [])
        for line in lines[1:] if lines else []:  # the first line repeats the header above
            style = ""
            if line.rstrip().endswith(": found") or " found at cycle" in line:
                style = "green"
            elif line.rstrip().endswith(": missing"):
                style = "bold red"
            elif "would have returned" in line or "would return" in line:
                style = "cyan"
            t.append(line + "\n", style=style)
    if note:
        t.append(f"\n{note}\n", style="dim")
    if plan is not None:
        t.append(f"\nplan: {plan['status']} · attempt {plan['attempt']} · {plan['strategy']}\n", style="bold")
        for st in plan["steps"]:
            t.append(f" {st['marker']} ", style=MARKER_STYLE.get(st["marker"], ""))
            t.append(f"{st['index'] + 1}. {st['tool']:<18} {st['rationale']}\n")
    return t


class GoalDetailScreen(ModalScreen[None]):
    """One goal's criteria, explanation and plan; o opens what Orient saw for it, s its findings."""

    BINDINGS = [
        Binding("escape,q", "dismiss", "Close", id="goal.close"),
        Binding("o", "orient", "Orient view", id="goal.orient"),
        Binding("s", "findings", "Findings", id="goal.findings"),
    ]
    DEFAULT_CSS = """
    GoalDetailScreen { align: center middle; }
    GoalDetailScreen > Vertical { width: 100; max-width: 100%; height: 90%; border: thick $primary;
                                  background: $surface; padding: 0 1; }
    GoalDetailScreen #goal-keys { dock: bottom; height: 1; color: $text-muted; }
    """

    def __init__(self, ctl: Run, goal: dict, plan: dict | None, errors: list[float] | None,
                 open_orient: Callable[[int], None], open_findings: Callable[[int], None]) -> None:
        super().__init__()
        self.ctl, self.goal, self.plan, self.errors = ctl, goal, plan, errors
        self._orient, self._findings = open_orient, open_findings

    def compose(self) -> ComposeResult:
        explained, note = None, ""
        try:
            explained = self.ctl.explain_goal(self.goal["id"])
        except InputError as exc:  # a replayed trace has no graph to ask
            note = f"no explanation: {exc}"
        with Vertical() as box:
            box.border_title = f"Goal #{self.goal['id']}"
            with VerticalScroll():
                yield Static(explanation_text(self.goal, explained, self.plan, self.errors, note), id="goal-text")
            yield Static(Text("escape closes · o what Orient saw for this goal · s its findings"), id="goal-keys")

    def action_orient(self) -> None:
        self.dismiss(None)
        self._orient(self.goal["id"])

    def action_findings(self) -> None:
        self.dismiss(None)
        self._findings(self.goal["id"])
