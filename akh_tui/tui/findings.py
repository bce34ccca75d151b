"""The findings view (`s` from a goal's detail, or the palette): a goal's evidence triples
synthesised in the persona's grammar (seed 004's fourth psyche influence), `Run.synthesize`.

It follows the persona: it re-renders when the workbench redraws (a cycle, an applied psyche
edit) and when it comes back into view, so editing `grammar_preference` (e, ctrl+s) shows at
once. 1/2/3 try narrative, formal, terse without editing the persona; 0 follows it again."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..engine import InputError, Run

GRAMMARS = {"1": "narrative", "2": "formal", "3": "terse"}


class FindingsScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="findings.close"),
        Binding("1", "grammar('narrative')", "Narrative", id="findings.narrative"),
        Binding("2", "grammar('formal')", "Formal", id="findings.formal"),
        Binding("3", "grammar('terse')", "Terse", id="findings.terse"),
        Binding("0", "grammar('')", "Persona's", id="findings.persona"),
    ]
    DEFAULT_CSS = """
    FindingsScreen #findings-title { height: auto; background: $panel; padding: 0 1; }
    FindingsScreen VerticalScroll { border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, ctl: Run, goal_id: int, grammar: str | None = None) -> None:
        super().__init__()
        self.ctl = ctl
        self.goal_id = goal_id
        self.grammar = grammar  # None: the persona's grammar_preference
        self._shown: tuple | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="findings-title")
        with VerticalScroll():
            yield Static(id="findings-text")
        yield Footer()

    def on_mount(self) -> None:
        self.render_findings()

    def on_screen_resume(self) -> None:
        self.render_findings()

    def on_workbench_update(self) -> None:
        """Called by the workbench after each redraw (a cycle ran, a psyche edit applied)."""
        self.render_findings()

    def render_findings(self) -> None:
        title = Text()
        title.append(" Findings ", style="bold reverse")
        try:
            out = self.ctl.synthesize(self.goal_id, self.grammar)
        except InputError as exc:
            title.append(f" goal #{self.goal_id}: {exc}", style="red")
            self.query_one("#findings-title", Static).update(title)
            return
        try:
            persona = self.ctl.current_psyche().persona
            who = f"{persona.name}'s grammar_preference" if self.grammar is None else "chosen here (0: the persona's)"
        except InputError:
            who = ""
        key = (out["grammar"], out["text"])
        title.append(f" goal #{self.goal_id} {out['goal']['description']!r} · ")
        title.append(f"{out['grammar']}", style="bold")
        title.append(f" ({who}) · {len(out['facts'])} fact(s) · 1 narrative, 2 formal, 3 terse, 0 the persona's, "
                     "e edits the persona", style="dim")
        self.query_one("#findings-title", Static).update(title)
        if key != self._shown:
            self._shown = key
            self.query_one("#findings-text", Static).update(Text(out["text"] or "(no findings yet)"))

    def action_grammar(self, name: str) -> None:
        self.grammar = name or None
        self.render_findings()

    def action_close(self) -> None:
        self.app.pop_screen()
