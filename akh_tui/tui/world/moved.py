"""Who moved this decision, in the world workbench (`m` on the step shown): the other agents'
actions since the agent's last step whose effects are in what the step read, and `p`, the
proof (each mover's action replaced by `noop`, replayed in memory: whether the decision
changed). The answer is the engine's (engine/world/moved.py); this screen only shows it."""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...engine import InputError, moved_lines
from .dialogs import DIALOG_CSS

Answer = Callable[[bool], dict[str, Any]]


def _styled(line: str) -> Text:
    if line.startswith("mover "):
        return Text(line, style="bold")
    if line.startswith("  proof: "):
        return Text(line, style="bold green" if "it moved the decision" in line else "yellow")
    if line.startswith("not a mover "):
        return Text(line, style="dim")
    return Text(line)


class WhoMovedScreen(ModalScreen[None]):
    """The movers of one step; `p` runs the proof. An error (a step that decided nothing, a
    world file changed since the step was recorded) is shown here, never raised."""

    BINDINGS = [Binding("escape,m", "dismiss(None)", "Close", id="world.moved.close"),
                Binding("p", "prove", "Prove", id="world.moved.prove")]
    DEFAULT_CSS = DIALOG_CSS.format(name="WhoMovedScreen") + """
WhoMovedScreen > Vertical { width: 110; }
WhoMovedScreen VerticalScroll { height: auto; max-height: 24; }
"""

    def __init__(self, where: str, answer: Answer) -> None:
        super().__init__()
        self.where = where
        self._answer = answer
        self.proved = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"Who moved {self.where}", style="bold"))
            with VerticalScroll():
                yield Static("", id="moved-lines")
            yield Static(Text("p: prove (replay each mover's action as noop, nothing written)  esc: close",
                              style="dim"), id="moved-help")

    def on_mount(self) -> None:
        self._show(False)

    def _show(self, prove: bool) -> None:
        body = self.query_one("#moved-lines", Static)
        try:
            lines = moved_lines(self._answer(prove))
        except InputError as exc:
            body.update(Text(str(exc), style="red"))
            return
        body.update(Text("\n").join(_styled(x) for x in lines))
        self.proved = prove

    def action_prove(self) -> None:
        if not self.proved:
            self._show(True)
