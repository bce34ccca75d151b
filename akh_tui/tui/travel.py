"""Time travel in the workbench: the timeline scrubber, and the screens that fork a run, list
and switch branches, compare two branches, edit breakpoints and search the history.

Each screen is handed plain data and callbacks; it never touches the engine. A callback that
refuses the user's input (ValueError, InputError) is answered inline, the typed text kept;
anything else goes to the error screen (`guarded`)."""

from __future__ import annotations

from typing import Callable, Sequence

from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from ..engine import InputError, parse_breakpoint, parse_search
from .dialogs import guarded, mark_short

__all__ = ["Scrubber", "ForkScreen", "BranchesScreen", "CompareScreen", "BreakpointsScreen", "SearchScreen",
           "parse_search"]

REFUSED = (ValueError, InputError)  # what a callback raises to refuse the user's input
MARK_STYLE = {"!": "bold red", "◆": "bold magenta"}


# ---- the timeline ------------------------------------------------------------------------------
class Scrubber(Static):
    """One line: live or replaying, which cycle, and where it sits between the first and the
    newest, with marks (a veto, a fork point) at their cycles. A click seeks to the cycle under
    the mouse."""

    DEFAULT_CSS = "Scrubber { height: 1; width: 1fr; }"

    class Seek(Message):
        def __init__(self, cycle: int) -> None:
            super().__init__()
            self.cycle = cycle

    def __init__(self, **kw) -> None:
        super().__init__("", **kw)
        self.first = 0
        self.last = 0
        self.position: int | None = None  # None: live, at the newest cycle
        self.marks: dict[int, str] = {}
        self._track = (0, 1)  # (x of the track's first cell, its width), set by render

    def show(self, first: int, last: int, position: int | None, marks: dict[int, str] | None = None) -> None:
        self.first, self.last = first, max(first, last)
        self.position = None if position is None else min(max(position, self.first), self.last)
        self.marks = dict(marks or {})
        self.refresh()

    def _cell(self, cycle: int, cells: int) -> int:
        span = self.last - self.first
        return 0 if span == 0 or cells < 2 else round((cycle - self.first) * (cells - 1) / span)

    def _cycle(self, cell: int, cells: int) -> int:
        span = self.last - self.first
        return self.first if cells < 2 else self.first + round(cell * span / (cells - 1))

    def render(self) -> Text:
        width = self.size.width or 80
        at = self.last if self.position is None else self.position
        t = Text()
        if self.position is None:
            t.append(" ● LIVE ", style="bold green")
        else:
            t.append(" ◀ REPLAY ", style="bold reverse yellow")
        # the number padded to the newest's width, so the track does not jump as it changes
        t.append(f"  cycle {at:>{len(str(self.last))}} / {self.last}  ")
        cells = max(1, width - len(t) - 2)
        self._track = (len(t) + 1, cells)
        track = ["─"] * cells
        styles = [""] * cells
        for cycle, mark in sorted(self.marks.items()):
            if self.first <= cycle <= self.last:
                i = self._cell(cycle, cells)
                track[i], styles[i] = mark[:1], MARK_STYLE.get(mark[:1], "bold yellow")
        here = self._cell(at, cells)
        track[here], styles[here] = "●", "bold"
        t.append("├", style="dim")
        for i, (ch, style) in enumerate(zip(track, styles)):
            t.append(ch, style=style or ("" if i < here else "dim"))
        t.append("┤", style="dim")
        return t

    def on_click(self, event: events.Click) -> None:
        start, cells = self._track
        if event.x < start - 1 or event.x > start + cells:
            return  # on the label, not the track
        cell = min(max(event.x - start, 0), cells - 1)
        self.post_message(self.Seek(self._cycle(cell, cells)))


# ---- the dialogs -------------------------------------------------------------------------------
class TravelDialog(ModalScreen[None]):
    """The frame the time-travel dialogs share: a bordered box and a line for notes."""

    DEFAULT_CSS = """
    TravelDialog { align: center middle; }
    TravelDialog > Vertical { width: 100; max-width: 100%; height: auto; max-height: 95%; border: thick $primary; background: $surface; padding: 0 1; }
    TravelDialog .travel-note { height: auto; color: $error; }
    TravelDialog .travel-hint { height: auto; color: $text-muted; }
    TravelDialog DataTable { height: auto; max-height: 16; }
    """

    def note(self, message: str = "") -> None:
        self.query_one(".travel-note", Static).update(Text(message))

    def attempt(self, fn: Callable, *args) -> bool:
        """Call back; a refusal is shown inline and the dialog stays as it is."""
        try:
            fn(*args)
        except REFUSED as exc:
            self.note(str(exc))
            return False
        return True


def _cells(*values) -> list[Text]:
    return [v if isinstance(v, Text) else Text(str(v)) for v in values]


class FieldError(InputError):
    """A dialog field the user must correct; names the field and the widget to focus."""

    def __init__(self, message: str, field: str, widget_id: str) -> None:
        super().__init__(message, field=field)
        self.widget_id = widget_id


def _unique(base: str, existing: list[str]) -> str:
    name, n = base, 1
    while name in existing:
        n += 1
        name = f"{base}-{n}"
    return name


class ForkScreen(TravelDialog):
    """Fork the run at a cycle: a branch name, archetype weights, tools to disable, a goal to
    add. Only what the user changed is passed on."""

    AUTO_FOCUS = "#fork-name"
    BINDINGS = [Binding("escape", "dismiss", "Cancel", id="fork.cancel")]
    DEFAULT_CSS = """
    ForkScreen Horizontal { height: auto; }
    ForkScreen Horizontal > Static { width: 22; padding: 1 1 0 0; }
    ForkScreen Horizontal > Input { width: 1fr; }
    ForkScreen.-short Horizontal > Static { padding: 0 1 0 0; }
    ForkScreen.-short Horizontal > Input { border: none; height: 1; padding: 0 1; background: $boost; }
    ForkScreen.-short Horizontal > Input:focus { background: $accent 35%; }
    """

    def __init__(self, cycle: int, archetypes: dict[str, float], tools: list[str], existing: list[str],
                 on_fork: Callable[[str, dict], object]) -> None:
        super().__init__()
        self.cycle = cycle
        self.archetypes = dict(archetypes)
        self.shown = {a: f"{w:.2f}" for a, w in self.archetypes.items()}  # as prefilled
        self.tools = list(tools)
        self.existing = list(existing)
        self._on_fork = on_fork

    def compose(self) -> ComposeResult:
        def row(label: str, field: Input) -> Horizontal:
            return Horizontal(Static(Text(label)), field)

        with Vertical():
            yield Static(Text(f"Fork at cycle {self.cycle} (enter forks, escape cancels)", style="bold"))
            yield row("branch name", Input(_unique(f"fork-{self.cycle}", self.existing), id="fork-name"))
            for a in self.archetypes:
                yield row(f"{a} weight", Input(self.shown[a], placeholder="0..1", id=f"fork-arch-{a}"))
            yield row("disable tools", Input(placeholder="comma separated, e.g. kg_query, reason", id="fork-tools"))
            yield row("add a goal", Input(placeholder="optional description", id="fork-goal"))
            yield Static(Text("tools: " + ", ".join(self.tools)), classes="travel-hint")
            yield Static("", classes="travel-note")

    def on_mount(self) -> None:
        mark_short(self)

    def on_resize(self) -> None:
        mark_short(self)

    @guarded
    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            name, edits = self._read()
        except FieldError as exc:
            self.note(str(exc))
            self.query_one(f"#{exc.widget_id}", Input).focus()
            return
        if self.attempt(self._on_fork, name, edits):
            self.dismiss(None)

    def _read(self) -> tuple[str, dict]:
        name = self.query_one("#fork-name", Input).value.strip()
        if not name:
            raise FieldError("a branch needs a name", "branch name", "fork-name")
        if name in self.existing:
            raise FieldError(f"a branch named {name!r} exists already", "branch name", "fork-name")
        changed: dict[str, float] = {}
        for a in self.archetypes:
            raw = self.query_one(f"#fork-arch-{a}", Input).value.strip()
            try:
                weight = float(raw)
            except ValueError:
                raise FieldError(f"not a number: {raw!r}", a, f"fork-arch-{a}") from None
            if not 0.0 <= weight <= 1.0:  # NaN fails this too
                raise FieldError(f"weight {raw} is outside [0, 1]", a, f"fork-arch-{a}")
            if weight != float(self.shown[a]):
                changed[a] = weight
        raw_tools = self.query_one("#fork-tools", Input).value
        tools = list(dict.fromkeys(t.strip() for t in raw_tools.split(",") if t.strip()))
        unknown = [t for t in tools if t not in self.tools]
        if unknown:
            raise FieldError(f"unknown tool{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}",
                         "disable tools", "fork-tools")
        goal = self.query_one("#fork-goal", Input).value.strip()
        edits = {"archetypes": changed, "disable_tools": tools, "goals": [goal] if goal else []}
        return name, {k: v for k, v in edits.items() if v}


class BranchesScreen(TravelDialog):
    """Every branch of the run; enter switches to the highlighted one, c compares it with the
    current one."""

    AUTO_FOCUS = "#branches-table"
    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="branches.close"),
        Binding("enter", "switch", "Switch", id="branches.switch"),
        Binding("c", "compare", "Compare with current", id="branches.compare"),
    ]

    def __init__(self, branches: list[dict], on_switch: Callable[[str], None],
                 on_compare: Callable[[str, str], None]) -> None:
        super().__init__()
        self.branches = list(branches)
        self._on_switch = on_switch
        self._on_compare = on_compare

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Branches (enter switches, c compares with the current one, escape closes)", style="bold"))
            yield DataTable(cursor_type="row", id="branches-table")
            yield Static("", classes="travel-note")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label in ("", "branch", "from", "at cycle", "head", "edits"):
            table.add_column(Text(label))
        for b in self.branches:
            table.add_row(*_cells(
                Text("●", style="bold green") if b["current"] else "",
                Text(b["name"], style="bold" if b["current"] else ""),
                b["parent"] or "—",
                "—" if b["fork_cycle"] is None else b["fork_cycle"],
                b["head_cycle"],
                "; ".join(b["edits"]) or "—",
            ), key=b["name"])
        current = [i for i, b in enumerate(self.branches) if b["current"]]
        if current:
            table.move_cursor(row=current[0])

    def highlighted(self) -> dict | None:
        table = self.query_one(DataTable)
        if not self.branches:
            return None
        return self.branches[min(table.cursor_row, len(self.branches) - 1)]

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_switch()

    @guarded
    def action_switch(self) -> None:
        b = self.highlighted()
        if b is not None and self.attempt(self._on_switch, b["name"]):
            self.dismiss(None)

    @guarded
    def action_compare(self) -> None:
        b = self.highlighted()
        current = next((x["name"] for x in self.branches if x["current"]), None)
        if b is None or current is None:
            self.note("no current branch to compare with")
        elif b["name"] == current:
            self.note(f"{current!r} is the current branch: highlight another one to compare")
        elif self.attempt(self._on_compare, current, b["name"]):
            self.note("")


class CompareScreen(TravelDialog):
    """Two branches side by side: where they first chose differently and why (the factors
    that differ), then how each run ended."""

    BINDINGS = [Binding("escape", "dismiss", "Close", id="compare.close")]
    DEFAULT_CSS = """
    CompareScreen > Vertical { width: 116; }
    CompareScreen VerticalScroll { height: auto; max-height: 30; }
    CompareScreen Horizontal { height: auto; }
    CompareScreen Horizontal > Static { width: 1fr; padding: 0 1; }
    CompareScreen #compare-outcome { margin-top: 1; }
    """

    def __init__(self, a: str, b: str, result: dict) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.result = result

    def compose(self) -> ComposeResult:
        first = self.result["first_divergence"]
        with Vertical():
            t = Text()
            t.append(f"Compare {self.a} with {self.b}\n", style="bold")
            if first is None:
                common = min(self.result["a"]["cycles"], self.result["b"]["cycles"])
                t.append(f"no divergence in the {common} common cycles", style="green")
            else:
                t.append(f"first divergence at cycle {first['cycle']}", style="bold yellow")
            early = self.result.get("first_difference")
            if early is not None and early["same_choice"]:
                t.append(f"\nthe scores first differed at cycle {early['cycle']}, with the same choice: ", style="dim")
                t.append("; ".join(f"{tool} {f} {va:.3f} → {vb:.3f}" for tool, diff in list(early["factors"].items())[:3]
                                   for f, (va, vb) in diff.items() if f != "score"), style="dim")
            yield Static(t)
            with VerticalScroll():
                with Horizontal(id="compare-choice"):
                    yield Static(self._choice(self.a, first and first["a"]))
                    yield Static(self._choice(self.b, first and first["b"]))
                if first is not None:
                    yield Static(self._factors(first), id="compare-factors")
                with Horizontal(id="compare-outcome"):
                    yield Static(self._outcome(self.a, self.result["a"]))
                    yield Static(self._outcome(self.b, self.result["b"]))
            yield Static("", classes="travel-note")

    @staticmethod
    def _choice(name: str, side: dict | None) -> Text:
        t = Text()
        t.append(name, style="bold reverse")
        t.append("\n")
        if side is None:
            t.append("same choices throughout", style="dim")
            return t
        for key in ("tool", "input", "progress"):
            t.append(f"{key:<9}", style="dim")
            t.append(f"{side[key]}\n", style="bold" if key == "tool" else "")
        return t

    def _factors(self, first: dict) -> Table | Text:
        factors = first["factors"]
        if not factors and first["a"] == first["b"]:
            # the compare lists the chosen tools' factors only; here a tool neither chose differs
            return Text("the same choice on both sides: the scores of tools neither chose differ", style="dim")
        if not factors:
            return Text("the chosen tools score the same on both sides: the input or the outcome differs", style="dim")
        table = Table(title=Text("factors that differ", style="bold"), expand=True, box=None, pad_edge=False)
        columns: tuple[tuple[str, JustifyMethod], ...] = (
            ("tool", "left"), ("factor", "left"), (self.a, "right"), (self.b, "right"), ("difference", "right"))
        for col, justify in columns:
            table.add_column(Text(col), justify=justify)
        for tool, diff in factors.items():
            for i, (factor, (va, vb)) in enumerate(diff.items()):
                d = vb - va
                table.add_row(*_cells(
                    Text(tool if i == 0 else "", style="bold"), factor, f"{va:.3f}", f"{vb:.3f}",
                    Text(f"{d:+.3f}", style="green" if d > 0 else "red" if d < 0 else "dim")))
        return table

    @staticmethod
    def _outcome(name: str, out: dict) -> Text:
        t = Text()
        t.append(f"{name}: ", style="bold")
        t.append(f"{out['cycles']} cycles\n")
        for key, style in (("completed", "green"), ("failed", "red")):
            t.append(f"{len(out[key])} {key}", style=style)
            t.append((": " + "; ".join(out[key])) if out[key] else "", style="")
            t.append("\n")
        return t


class BreakpointsScreen(TravelDialog):
    """The breakpoints in force: add one (parsed as it is typed in), delete the highlighted."""

    AUTO_FOCUS = "#bp-input"
    BINDINGS = [
        Binding("escape", "dismiss", "Close", id="breakpoints.close"),
        Binding("delete", "remove", "Delete breakpoint", id="breakpoints.delete"),
    ]
    HINT = "tool=NAME · veto · veto=NAME · goal · <path> <op> <value>, e.g. score < 0.3"

    def __init__(self, specs: list[str], on_change: Callable[[list[str]], None], config_specs: Sequence[str] = ()) -> None:
        super().__init__()
        self.specs = list(specs)
        self.config_specs = set(config_specs)
        self._on_change = on_change

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Breakpoints (enter adds, delete removes the highlighted, escape closes)", style="bold"))
            yield DataTable(cursor_type="row", id="bp-table")
            yield Input(placeholder="a breakpoint, e.g. tool=shell_exec", id="bp-input")
            yield Static(Text(self.HINT), classes="travel-hint")
            yield Static("", classes="travel-note")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column(Text("breakpoint"), key="spec")
        table.add_column(Text("from"), key="from")
        self._fill()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        for spec in self.specs:
            table.add_row(*_cells(spec, Text("(config)", style="dim") if spec in self.config_specs else ""))
        if self.specs:
            table.move_cursor(row=min(row, len(self.specs) - 1))

    def _change(self, specs: list[str], done: str) -> bool:
        if not self.attempt(self._on_change, list(specs)):
            return False
        self.specs = specs
        self._fill()
        self.note("")
        self.query_one(".travel-hint", Static).update(Text(f"{done}\n{self.HINT}"))
        return True

    @guarded
    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            spec = parse_breakpoint(event.value, field="breakpoint").spec
        except InputError as exc:
            self.note(str(exc))
            return
        if spec in self.specs:
            self.note(f"{spec!r} is set already")
            return
        if self._change([*self.specs, spec], f"added {spec}"):
            event.input.value = ""

    @guarded
    def action_remove(self) -> None:
        if not self.specs:
            return
        spec = self.specs[min(self.query_one(DataTable).cursor_row, len(self.specs) - 1)]
        # a config breakpoint is removed for this session; the file still names it
        where = " (your config file still sets it)" if spec in self.config_specs else ""
        self._change([s for s in self.specs if s != spec], f"removed {spec}{where}")


class SearchScreen(TravelDialog):
    """Search the run's history; enter on a hit jumps to that cycle."""

    AUTO_FOCUS = "#search-input"
    BINDINGS = [Binding("escape", "dismiss", "Close", id="search.close")]
    HINT = "tool=kg_query veto progress=failed goal=2 any words in the output"

    def __init__(self, run_search: Callable[[str], list[dict]], on_jump: Callable[[int], None]) -> None:
        super().__init__()
        self._run_search = run_search
        self._on_jump = on_jump
        self.rows: list[dict] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Search the history (enter searches; enter on a hit jumps to it)", style="bold"))
            yield Input(placeholder=self.HINT, id="search-input")
            yield Static(Text(self.HINT), classes="travel-hint", id="search-count")
            yield DataTable(cursor_type="row", id="search-table")
            yield Static("", classes="travel-note")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for label, width in (("cycle", 6), ("tool", 18), ("progress", 10), ("veto", 5), ("output", 44)):
            table.add_column(Text(label), width=width)

    @guarded
    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            rows = self._run_search(event.value)
        except REFUSED as exc:
            self.note(str(exc))
            return
        self.note("")
        self.rows = list(rows)
        table = self.query_one(DataTable)
        table.clear()
        for r in self.rows:
            table.add_row(*_cells(
                r["cycle"], r["tool"], r["progress"], Text("yes", style="bold red") if r["vetoed"] else "",
                r["output"].split("\n", 1)[0][:200]))
        n = len(self.rows)
        count = "no cycle matches" if n == 0 else "1 cycle matches" if n == 1 else f"{n} cycles match"
        self.query_one("#search-count", Static).update(Text(count, style="bold"))
        if n:
            table.focus()

    @guarded
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.rows) and self.attempt(self._on_jump, self.rows[event.cursor_row]["cycle"]):
            self.dismiss(None)
