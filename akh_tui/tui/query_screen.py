"""The query console (`Q`): ask the graph, the working memory and the goals at the cycle on
show (`Run.query`, engine/explain/query.py), as `akh-tui agent query` does headless.

Enter runs what is typed; ↑/↓ in the input walk back through the queries asked; a bad query
is answered in red with what is wrong, nothing is lost. Live, the answer follows the run: it
is asked again after each redraw of the workbench. ctrl+t pins the query answered last as a
watch (its answer shows under the timeline every cycle), ctrl+b as a watch that pauses the run
when its answer changes, ctrl+x drops the watches (tui/watches.py)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from ..engine import InputError, Run
from .watches import Watch, read

HINT = "(?x lives-in ocean) · (?x is-a mammal) (?x lives-in ?w) · about krill · memory [words] · goals [words]"


def answer_text(out: dict) -> Text:
    """An answer as the console shows it: rows bold, the triples under each dim, an inferred
    triple's rule and premises after it."""
    t = Text()
    t.append(f"{out['total']} answer(s)", style="bold")
    if out["kind"] == "patterns":
        t.append(f" · bindings after each pattern: {' → '.join(str(c) for c in out['counts'])}", style="dim")
    t.append("\n")
    for line in out["lines"]:
        if line.startswith("  ") or (out["kind"] == "about" and not line.startswith("…")):  # a triple
            body, _, src = line.partition("  [")
            t.append(body.strip() if out["kind"] == "about" else body)
            if src:
                t.append("  [" + src, style="dim")
        elif line.startswith("no match") or line.startswith("no "):
            t.append(line, style="yellow")
        else:
            t.append(line, style="bold")
        t.append("\n")
    return t


class QueryScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close", id="query.close"),
        Binding("up", "history(-1)", "Earlier query", id="query.earlier", show=False),
        Binding("down", "history(1)", "Later query", id="query.later", show=False),
        Binding("ctrl+t", "watch(False)", "Watch", id="query.watch",
                tooltip="pin the query answered last as a watch: its answer shows every cycle"),
        Binding("ctrl+b", "watch(True)", "Watch + break", id="query.watch_break",
                tooltip="pin it as a watch that pauses the run when its answer changes"),
        Binding("ctrl+x", "drop_watches", "Drop watches", id="query.drop_watches", tooltip="drop every watch"),
    ]
    DEFAULT_CSS = """
    QueryScreen #query-title { height: auto; background: $panel; padding: 0 1; }
    QueryScreen Input { margin: 0 0; }
    QueryScreen VerticalScroll { border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, ctl: Run, cycle: int | None, first: str = "", watches: list[Watch] | None = None) -> None:
        super().__init__()
        self.watches = watches if watches is not None else []  # the workbench's: pinned here
        self._answered: str | None = None  # the query answered last (what ctrl+t pins)
        self.ctl = ctl
        self.cycle = cycle  # the replayed cycle shown (None: live)
        self.asked: list[str] = []
        self._at = 0
        self._first = first
        self._asked_at: int | None = None  # the live cycle the answer shown was asked at

    def compose(self) -> ComposeResult:
        yield Static(id="query-title")
        yield Input(placeholder=HINT, id="query-input")
        with VerticalScroll():
            yield Static(id="query-answer")
        yield Footer()

    def on_mount(self) -> None:
        self._title()
        box = self.query_one(Input)
        box.focus()
        if self._first:
            box.value = self._first
            self.ask(self._first)
        else:
            self.query_one("#query-answer", Static).update(Text("Type a query and press enter. " + HINT, style="dim"))

    def _title(self) -> None:
        t = Text()
        t.append(" Query ", style="bold reverse")
        where = f" at cycle {self.cycle} (replay)" if self.cycle is not None else f" live, cycle {self.ctl.cycle}"
        t.append(where)
        t.append(" · enter asks · ↑↓ earlier queries · ctrl+t watch, ctrl+b watch + break", style="dim")
        self.query_one("#query-title", Static).update(t)

    def ask(self, text: str) -> None:
        self._asked_at = self.ctl.cycle
        out = self.query_one("#query-answer", Static)
        try:
            got = self.ctl.query(text, self.cycle)
        except InputError as exc:
            out.update(Text(f"{exc}\n\n{HINT}", style="red"))
            return
        self._answered = text
        out.update(answer_text(got))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if not self.asked or self.asked[-1] != text:
            self.asked.append(text)
        self._at = len(self.asked)
        self.ask(text)

    def action_history(self, d: int) -> None:
        if not self.asked:
            return
        self._at = max(0, min(len(self.asked), self._at + d))
        box = self.query_one(Input)
        box.value = self.asked[self._at] if self._at < len(self.asked) else ""
        box.cursor_position = len(box.value)

    def on_workbench_update(self) -> None:
        """Live, the answer follows the run (called by the workbench after each redraw): asked
        again when the cycle has moved."""
        if self.cycle is None and self.asked and self._asked_at != self.ctl.cycle:
            self._title()
            self.ask(self.asked[-1])

    def action_watch(self, stop: bool) -> None:
        if self._answered is None:
            self.app.notify("ask a query first (enter): a watch pins the query answered last", markup=False)
            return
        w = next((w for w in self.watches if w.query == self._answered), None)
        if w is None:
            w = Watch(self._answered, stop)
            w.value, w.text = read(self.ctl, w)
            w.cycle = self.ctl.cycle
            self.watches.append(w)
        w.stop = stop
        kind = "a watch that pauses the run when its answer changes" if stop else "a watch"
        self.app.notify(f"{self._answered} is {kind} ({len(self.watches)} in all; ctrl+x drops them)", markup=False)

    def action_drop_watches(self) -> None:
        n = len(self.watches)
        self.watches.clear()
        self.app.notify(f"{n} watch(es) dropped", markup=False)

    def action_close(self) -> None:
        self.dismiss(None)  # the workbench redraws: a watch pinned here shows at once
