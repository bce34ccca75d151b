"""Small screens: add a goal, help (F1), and the error screen that replaces a crash."""

from __future__ import annotations

import functools
import traceback
from typing import Callable, Concatenate, ParamSpec, Sequence, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ..engine import InputError, StoreDamaged


SHORT_ROWS = 30  # a dialog on a terminal with fewer rows than this packs its fields tighter


def mark_short(screen: ModalScreen) -> None:
    """Class `-short` on a dialog when the terminal is short (80×24): its CSS then drops the
    padding and the three-row input boxes that pushed the last fields off the screen."""
    screen.set_class(screen.app.size.height < SHORT_ROWS, "-short")


class AddGoalScreen(ModalScreen[None]):
    """Description, optional criteria and priority; a bad value is shown, the text kept."""

    BINDINGS = [Binding("escape", "dismiss", "Cancel", id="dialog.cancel")]
    DEFAULT_CSS = """
    AddGoalScreen { align: center middle; }
    AddGoalScreen > Vertical { width: 80; height: auto; border: thick $primary; background: $surface; padding: 1 2; }
    AddGoalScreen #goal-error { color: $error; height: auto; }
    """

    def __init__(self, add: Callable[[str, str | None, int], None]) -> None:
        super().__init__()
        self._add = add

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Add a goal (enter adds, escape cancels)")
            yield Input(placeholder="description, e.g. Find birds", id="goal-description")
            yield Input(placeholder="criteria (optional): words and/or (s p o) patterns", id="goal-criteria")
            yield Input(placeholder="priority 0..255 (default 128)", id="goal-priority")
            yield Static("", id="goal-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        desc = self.query_one("#goal-description", Input).value
        crit = self.query_one("#goal-criteria", Input).value.strip() or None
        prio_text = self.query_one("#goal-priority", Input).value.strip()
        error = self.query_one("#goal-error", Static)
        try:
            try:
                prio = int(prio_text) if prio_text else 128
            except ValueError:
                raise InputError(f"not an integer: {prio_text!r}", field="priority") from None
            self._add(desc, crit, prio)
        except InputError as exc:
            error.update(Text(str(exc)))
            return
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every action: its key (after the user's keymap), what it does, and its binding id; the
    main screen's first, then each dialog's and view's. A table, so a long description wraps in
    its column instead of running into the id."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 104; max-width: 100%; height: auto; max-height: 90%; border: thick $primary; background: $surface; padding: 0 1; }
    """

    def __init__(self, rows: list[tuple[str, str, str]], config_note: str,
                 editor_rows: Sequence[tuple[str, str, str]] = (),
                 sections: Sequence[tuple[str, list[tuple[str, str, str]]]] = ()) -> None:
        super().__init__()
        self._rows = rows
        self._sections = ([("in the psyche editor", list(editor_rows))] if editor_rows else []) + list(sections)
        self._note = config_note

    KEY, DESC, ID = 14, 62, 22  # column widths: a description wraps inside its own column

    @classmethod
    def _rows_text(cls, t: Text, rows: list[tuple[str, str, str]]) -> None:
        import textwrap

        for key, desc, bid in rows:
            lines = textwrap.wrap(desc, cls.DESC) or [""]
            t.append(f"{key:<{cls.KEY}}", style="bold")
            t.append(f"{lines[0]:<{cls.DESC}}  ")
            t.append(f"{bid}\n", style="dim")
            for more in lines[1:]:
                t.append(" " * cls.KEY + more + "\n")

    def compose(self) -> ComposeResult:
        t = Text()
        t.append("akh-tui keys\n\n", style="bold")
        self._rows_text(t, self._rows)
        for title, rows in self._sections:
            t.append(f"\n{title}\n", style="bold")
            self._rows_text(t, rows)
        t.append(f"\n{self._note}\n", style="dim")
        t.append("ctrl+p opens the command palette: every action, and themes.", style="dim")
        with VerticalScroll():
            yield Static(t)


class EntryScreen(ModalScreen[None]):
    """One working-memory entry in full (enter on it in the memory list)."""

    BINDINGS = [Binding("escape,enter,q", "dismiss", "Close", id="entry.close")]
    DEFAULT_CSS = """
    EntryScreen { align: center middle; }
    EntryScreen > VerticalScroll { width: 100; max-width: 100%; height: auto; max-height: 80%; border: thick $primary;
                                   background: $surface; padding: 0 1; }
    """

    def __init__(self, entry: dict) -> None:
        super().__init__()
        self.entry = entry

    def compose(self) -> ComposeResult:
        e = self.entry
        t = Text()
        t.append(f"{e['kind']}", style="bold")
        t.append(f" · cycle {e['cycle']} · relevance {e['relevance']:.2f} · referenced {e['refs']} time(s)\n\n",
                 style="dim")
        t.append(e["content"])
        t.append("\n\nescape closes", style="dim")
        with VerticalScroll():
            yield Static(t)


class ErrorScreen(ModalScreen[None]):
    """Shown instead of crashing: what failed, and that the run is paused."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close", id="error.close")]
    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical { width: 90; height: auto; max-height: 80%; border: thick $error; background: $surface; padding: 1 2; }
    """

    def __init__(self, title: str, detail: str) -> None:
        super().__init__()
        self._title = title
        self._detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self._title, style="bold"))
            yield Static(Text(self._detail))
            yield Button("Close (escape)", id="error-close")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)


S = TypeVar("S")
P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R | None]:
    """Run a screen's or app's handler; an exception is shown on an ErrorScreen instead of
    ending the app (the workbench never crashes on a bug: it says what failed)."""

    @functools.wraps(method)
    def wrapper(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            show_error(getattr(self, "app", self), f"{method.__name__} failed: {type(exc).__name__}", exc)
            return None

    return wrapper


def show_error(app, title: str, exc: BaseException) -> None:
    """Pause the run and show what failed; one error screen at a time, so a failure that
    repeats every frame cannot stack screens."""
    if hasattr(app, "running"):
        app.running = False
    if isinstance(app.screen, ErrorScreen):
        return
    if isinstance(exc, StoreDamaged):  # the user's data, not a bug: its one-line report says how to go on
        app.push_screen(ErrorScreen("The session store is damaged there; nothing was appended to it.", str(exc)))
        return
    app.push_screen(ErrorScreen(title, "".join(traceback.format_exception(exc)[-6:])))
