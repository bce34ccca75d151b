"""The world workbench's dialogs: find an agent by a fuzzy search of its id, and the world
breakpoints (add by typing, delete the highlighted one)."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.fuzzy import Matcher
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ...engine import FORK_EDIT_LINES, WORLD_BREAK_HELP, InputError

DIALOG_CSS = """
{name} {{ align: center middle; }}
{name} > Vertical {{ width: 72; max-width: 100%; height: auto; max-height: 90%; border: thick $primary;
                    background: $surface; padding: 0 1; }}
{name} OptionList {{ height: auto; max-height: 12; }}
{name} .error {{ color: $text-error; }}
"""


class AgentSearchScreen(ModalScreen[str | None]):
    """Type part of an agent's id (letters in order, as the command palette matches); enter
    shows the best match (or the highlighted one)."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="world.search.close")]
    DEFAULT_CSS = DIALOG_CSS.format(name="AgentSearchScreen")

    def __init__(self, ids: list[str]) -> None:
        super().__init__()
        self.ids = ids

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Show an agent: type part of its id", style="bold"))
            yield Input(placeholder="agent", id="agent-query")
            yield OptionList(*[Option(a, id=a) for a in self.ids], id="agent-hits")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def matches(self, query: str) -> list[str]:
        if not query.strip():
            return list(self.ids)
        m = Matcher(query.strip())
        scored = [(m.match(a), a) for a in self.ids]
        return [a for s, a in sorted(scored, key=lambda x: -x[0]) if s > 0]

    @on(Input.Changed, "#agent-query")
    def _changed(self, event: Input.Changed) -> None:
        hits = self.query_one("#agent-hits", OptionList)
        hits.clear_options()
        hits.add_options([Option(a, id=a) for a in self.matches(event.value)])
        if hits.option_count:
            hits.highlighted = 0

    @on(Input.Submitted, "#agent-query")
    def _submitted(self, event: Input.Submitted) -> None:
        hits = self.query_one("#agent-hits", OptionList)
        if hits.option_count:
            option = hits.get_option_at_index(hits.highlighted or 0)
            self.dismiss(option.id)

    @on(OptionList.OptionSelected, "#agent-hits")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)


class WorldBreaksScreen(ModalScreen[None]):
    """The world's breakpoints: type one and press enter to add it (a bad one is refused with
    the reason and stays in the box to fix), delete removes the highlighted one."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="world.breaks.close"),
                Binding("delete", "remove", "Remove", id="world.breaks.remove")]
    DEFAULT_CSS = DIALOG_CSS.format(name="WorldBreaksScreen")

    def __init__(self, current: list[str], replace: Callable[[list[str]], None], agent: str = "bold") -> None:
        super().__init__()
        self.current = list(current)
        self._replace = replace
        self.agent = agent  # the example names an agent of this world

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("World breakpoints: the run pauses after the turn that matches", style="bold"))
            yield Static(Text(WORLD_BREAK_HELP, style="dim"))
            yield OptionList(*self._options(), id="breaks")
            yield Input(placeholder=f"e.g. transfer>5, write, paused, agent:{self.agent}:bid", id="break-text")
            yield Static("", id="break-error", classes="error")

    def _options(self) -> list[Option]:
        return [Option(b) for b in self.current] or [Option(Text("no breakpoints", style="dim"), disabled=True)]

    def on_mount(self) -> None:
        # the list of those set has a title: without one it looks like a second text box
        self.query_one("#breaks", OptionList).border_title = "set (delete removes the highlighted one)"
        self.query_one(Input).focus()

    def _show(self) -> None:
        lst = self.query_one("#breaks", OptionList)
        lst.clear_options()
        lst.add_options(self._options())

    @on(Input.Submitted, "#break-text")
    def _add(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        try:
            self._replace(self.current + [text])
        except InputError as exc:
            self.query_one("#break-error", Static).update(Text(str(exc)))
            return
        self.current.append(text)
        event.input.value = ""
        self.query_one("#break-error", Static).update("")
        self._show()

    def action_remove(self) -> None:
        lst = self.query_one("#breaks", OptionList)
        i = lst.highlighted
        if i is None or not self.current or i >= len(self.current):
            return
        del self.current[i]
        self._replace(self.current)
        self._show()


class WorldForkScreen(ModalScreen[None]):
    """Fork the world after the step shown (or the newest) with edits: the order of the rest of
    the round, a tool disabled for an agent, an agent's decider or goals, the limits. Enter forks; a bad edit is refused with the reason
    and stays in the box to fix. (A psyche edit is `e`: it forks too.)"""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="world.fork.close")]
    DEFAULT_CSS = DIALOG_CSS.format(name="WorldForkScreen")

    def __init__(self, where: str, fork: Callable[[str], str], to_come: str = "",
                 example: str = "order=cautious,bold") -> None:
        super().__init__()
        self.example = example  # an edit this world would take there
        self.where = where
        self._fork = fork
        self.to_come = to_come  # who is still to act in that round: what `order=` may name

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(f"Fork the world after {self.where}", style="bold"))
            if self.to_come:
                yield Static(Text(self.to_come), id="fork-rest")
            yield Static(Text(FORK_EDIT_LINES, style="dim"))
            yield Input(placeholder=f"e.g. {self.example}", id="fork-edits")
            yield Static("", id="fork-error", classes="error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#fork-edits")
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            self._fork(event.value)
        except InputError as exc:
            self.query_one("#fork-error", Static).update(Text(str(exc)))
            return
        self.dismiss(None)
