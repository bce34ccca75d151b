"""Edit the agent's state (`x`): add a triple, change a goal's status, priority or criteria,
edit or drop a working-memory entry (engine: runs/commands.py state edits, as `akh-tui agent
edit` takes them).

Edits are staged first: each typed line is checked as it is added (a refusal says what is wrong
and the line stays in the box), ctrl+z takes back the last one staged, and nothing reaches the
run until ctrl+s. Live, ctrl+s applies them at once, recorded, before the next cycle; at a
replayed cycle it forks a branch from there with them (the name in the second box). Closing
keeps what is staged, and the line in the box, for the next time the dialog opens."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from ..engine import STATE_EDIT_HELP, InputError, StateEditError, parse_state_edit

# what the dialog stages: (the line typed, its kind and payload as the engine records it)
Staged = tuple[str, str, object]


class StateEditScreen(Screen[str]):
    """Dismissed with what is left in the edit box (the workbench offers it again next time)."""

    BINDINGS = [
        Binding("escape", "close", "Close", id="state_edit.close", tooltip="close (what is staged is kept)"),
        Binding("ctrl+z", "unstage", "Undo last", id="state_edit.unstage"),
        Binding("ctrl+s", "apply", "Apply / fork", id="state_edit.apply"),
    ]
    DEFAULT_CSS = """
    StateEditScreen #edit-title { height: auto; background: $panel; padding: 0 1; }
    StateEditScreen Input { border-title-color: $text-muted; }
    StateEditScreen #edit-branch { display: none; }
    StateEditScreen.-replay #edit-branch { display: block; }
    StateEditScreen #edit-staged { height: auto; max-height: 10; border: round $primary 50%; padding: 0 1; }
    StateEditScreen #edit-note { height: auto; padding: 0 1; }
    StateEditScreen #edit-state { border: round $primary 30%; padding: 0 1; }
    """

    def __init__(self, cycle: int, replay: bool, state_lines: list[str], staged: list[Staged],
                 apply: Callable[[list[Staged], str], str], draft: str = "") -> None:
        super().__init__()
        self.draft = draft
        self.cycle = cycle
        self.replay = replay  # at a replayed cycle: ctrl+s forks a branch
        self.state_lines = state_lines
        self.staged = staged  # the app's list: what is staged survives closing
        self._apply = apply

    def compose(self) -> ComposeResult:
        yield Static(id="edit-title")
        yield Input(placeholder=STATE_EDIT_HELP, id="edit-line")
        yield Input(placeholder="the new branch's name", value=f"edit-at-{self.cycle}", id="edit-branch")
        with Vertical():
            yield Static(id="edit-staged")
            yield Static(id="edit-note")
            with VerticalScroll(id="edit-state"):
                yield Static(Text("\n".join(self.state_lines), style="dim"))
        yield Footer()

    def on_mount(self) -> None:
        self.set_class(self.replay, "-replay")
        self.query_one("#edit-line", Input).border_title = "edit (enter stages it)"
        self.query_one("#edit-branch", Input).border_title = "the new branch's name"
        t = Text()
        t.append(" Edit state ", style="bold reverse")
        if self.replay:
            t.append(f" at replayed cycle {self.cycle}: ctrl+s forks a branch from here with these edits")
        else:
            t.append(f" live, after cycle {self.cycle}: ctrl+s applies them before the next cycle (recorded)")
        self.query_one("#edit-title", Static).update(t)
        box = self.query_one("#edit-line", Input)
        box.value = self.draft
        box.focus()
        self._show_staged()
        self._note("enter stages the edit typed · ctrl+z takes back the last · ctrl+s applies", "dim")

    def _note(self, text: str, style: str) -> None:
        self.query_one("#edit-note", Static).update(Text(text, style=style))

    def _show_staged(self) -> None:
        t = Text()
        t.append(f"staged ({len(self.staged)})", style="bold")
        for i, (line, _kind, _payload) in enumerate(self.staged, 1):
            t.append(f"\n {i}. {line}")
        if not self.staged:
            t.append("\n nothing yet", style="dim")
        self.query_one("#edit-staged", Static).update(t)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "edit-line":
            self.action_apply()
            return
        text = event.value.strip()
        if not text:
            return
        try:
            edit = parse_state_edit(text)
        except StateEditError as exc:  # the line stays in the box to be corrected
            self._note(f"{exc.field}: {exc.message}", "red")
            return
        self.staged.append((text, edit.kind, edit.payload()))
        event.input.value = ""
        self._show_staged()
        self._note(f"staged: {text} (checked against the state when applied)", "green")

    def action_unstage(self) -> None:
        if not self.staged:
            self._note("nothing staged to take back", "yellow")
            return
        line, _k, _p = self.staged.pop()
        self.query_one("#edit-line", Input).value = line  # taken back into the box: nothing typed is lost
        self._show_staged()
        self._note(f"taken back: {line}", "yellow")

    def action_apply(self) -> None:
        if not self.staged:
            self._note("nothing staged: type an edit and press enter first", "yellow")
            return
        name = self.query_one("#edit-branch", Input).value.strip()
        try:
            said = self._apply(list(self.staged), name)
        except StateEditError as exc:
            which = f"edit {exc.index}" if exc.index else "an edit"
            self._note(f"{which} refused ({exc.field}): {exc.message}; nothing changed", "red")
            return
        except (InputError, ValueError) as exc:
            self._note(f"refused: {exc}; nothing changed", "red")
            return
        self.staged.clear()
        self.app.notify(said, title="State edited", markup=False)
        self.action_close()

    def action_close(self) -> None:
        self.dismiss(self.query_one("#edit-line", Input).value)
