"""The workbench's panes. Each renders plain data (a cycle record, the controller's view) and
never touches the engine. All text is built as rich Text, so labels such as `[red]` from a
graph are shown as written, never interpreted as markup."""

from __future__ import annotations

import re

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import DataTable, OptionList, Static, Tree
from textual.widgets.option_list import Option
from textual.widgets.tree import TreeNode

from ..engine.records import CycleRecord, PendingCycle, View
from ..engine import TOOL_NAMES, soar_why, why_chosen, why_not_text

ERROR_HISTORY = 64  # cycles of each goal's error signal kept for its sparkline
ERROR_WIDTH = 8  # cells of the sparkline in the goals tree
STATUS_ICON = {"active": "●", "suspended": "◌", "completed": "✓", "failed": "✗"}
STATUS_STYLE = {"active": "bold", "suspended": "yellow", "completed": "green", "failed": "red"}
KIND_STYLE = {"observation": "cyan", "inference": "magenta", "decision": "yellow", "action": "green", "reflection": "bold blue"}
MARKER_STYLE = {".": "dim", ">": "bold reverse", "✓": "green", "✗": "red", "-": "dim strike"}
ARCHETYPES = ("sage", "healer", "explorer", "guardian")


class Pane(Static):
    """A Static that repaints only when its text really changed (a frame at full speed
    otherwise repaints every pane, which costs the engine thread its share of the GIL)."""

    _shown: Text | None = None

    def show_text(self, text: Text) -> None:
        if self._shown is not None and text == self._shown:
            return
        # a new layout pass only when the number of lines changed (it is the costly part)
        relayout = self._shown is None or text.plain.count("\n") != self._shown.plain.count("\n")
        self._shown = text
        self.update(text, layout=relayout)


SPARKS = "▁▂▃▄▅▆▇█"


def spark(values: list[float], lo: float = 0.0, hi: float = 1.0, width: int | None = None) -> str:
    """A text sparkline of the last `width` values, scaled to [lo, hi]."""
    vals = values[-width:] if width else values
    span = (hi - lo) or 1.0
    out = []
    for v in vals:
        f = min(1.0, max(0.0, (v - lo) / span))
        out.append(SPARKS[min(len(SPARKS) - 1, int(f * (len(SPARKS) - 1) + 0.5))])
    return "".join(out)


def bar(fraction: float, width: int) -> str:
    """A bar of `width` cells in eighths, so small changes stay visible."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[part] if part else ""
    return ("█" * full + partial).ljust(width, "·")


class GoalsPane(Tree, inherit_bindings=False):
    """Goals as a tree of sub-goals: status, priority, coverage bar; the focus goal marked.
    It takes focus (tab, a click) and scrolls; enter or a click opens the goal's detail. Only
    the keys below are its own: space still steps the run."""

    DEFAULT_CSS = "GoalsPane { scrollbar-size-vertical: 1; }"
    BINDINGS = [
        Binding("enter", "select_cursor", "Goal detail", id="goals.detail"),
        Binding("up", "cursor_up", "Up", show=False, id="goals.up"),
        Binding("down", "cursor_down", "Down", show=False, id="goals.down"),
    ]

    def __init__(self, **kw) -> None:
        super().__init__("goals", **kw)
        self.errors: dict[int, list[float]] = {}  # goal id -> error signal (1 − coverage) per cycle
        self.show_root = False
        self.guide_depth = 2
        self._shape: tuple = ()

    def record(self, rec: CycleRecord, errors: dict[int, list[float]] | None = None) -> None:
        """Keep each goal's error signal, the OODA loop's counterpart of ThinkLoop's e(k)."""
        self.add_signal(self.signal(rec), errors)

    @staticmethod
    def signal(rec: CycleRecord) -> tuple[tuple[int, float], ...]:
        """A cycle's error signal: (goal id, 1 − coverage) of its open goals and its focus."""
        focus = rec["goal"]["id"]
        return tuple((g["id"], 1.0 - g["coverage"]) for g in rec["goals"]
                     if g["status"] in ("active", "suspended") or g["id"] == focus)

    def add_signal(self, signal: tuple[tuple[int, float], ...], errors: dict[int, list[float]] | None = None) -> None:
        errors = self.errors if errors is None else errors
        for goal, error in signal:
            series = errors.setdefault(goal, [])
            series.append(error)
            del series[:-ERROR_HISTORY]

    def show(self, view: View, errors: dict[int, list[float]] | None = None) -> None:
        """`errors`: the series to draw instead of the live ones (a replayed cycle's)."""
        shown_errors = self.errors if errors is None else errors
        goals = view["goals"]
        by_id = {g["id"]: g for g in goals}
        shape = tuple((g["id"], g["parent"]) for g in goals)
        if shape != self._shape:
            self._shape = shape
            self.clear()
            self._goal_nodes: dict[int, TreeNode[int]] = {}

            def add(parent_node, g):
                node = parent_node.add(self._label(g, view["focus"], shown_errors.get(g["id"]), self._compact()),
                                       data=g["id"], expand=True)
                self._goal_nodes[g["id"]] = node
                for cid in g["children"]:
                    add(node, by_id[cid])
                if not g["children"]:
                    node.allow_expand = False

            for g in goals:
                if g["parent"] is None:
                    add(self.root, g)
        else:
            for g in goals:
                node = self._goal_nodes[g["id"]]
                label = self._label(g, view["focus"], shown_errors.get(g["id"]), self._compact())
                if label != node.label:
                    node.set_label(label)

    def scroll_to_focus(self, focus: int | None) -> None:
        """Keep the focus goal in view: a pane of one or two rows (the world workbench at
        80×24) shows it rather than the first goals. Not while the pane has focus: the person
        scrolls it then."""
        node = getattr(self, "_goal_nodes", {}).get(focus) if focus is not None else None
        if node is not None and not self.has_focus:
            self.call_after_refresh(lambda: self.scroll_to_node(node, animate=False))

    def _compact(self) -> bool:
        """Under 70 cells the label keeps status, id, coverage bar and error sparkline before the
        text; the priority and coverage figure are in the goal detail (enter)."""
        return 0 < self.size.width < 70

    def on_resize(self, event) -> None:
        self._shape = ()  # relabel at the new width (the next show rebuilds the tree)

    @staticmethod
    def _label(g: dict, focus: int | None, errors: list[float] | None = None, compact: bool = False) -> Text:
        t = Text()
        t.append("▶ " if g["id"] == focus else "  ", style="bold yellow")
        t.append(STATUS_ICON[g["status"]] + " ", style=STATUS_STYLE[g["status"]])
        t.append(f"#{g['id']} " if compact else f"#{g['id']} p{g['priority']} ", style="dim")
        t.append(bar(g["coverage"], 4) + (" " if compact else ""), style="green" if g["coverage"] >= 1 else "cyan")
        if not compact:  # the bar says the coverage; the figure where there is room
            t.append(f"{g['coverage']:>4.0%} ", style="dim")
        t.append(f"{spark(errors or [], 0.0, 1.0, ERROR_WIDTH // 2):<{ERROR_WIDTH // 2}} ", style="dim red")
        # the description last, so a narrow pane cuts the text and not the numbers
        t.append(g["description"], style=STATUS_STYLE[g["status"]] if g["status"] != "active" else "")
        if g["fail_reason"]:
            t.append(f"  ({g['fail_reason']})", style="red dim")
        return t


class PlanPane(Pane):
    def show(self, view: View) -> None:
        # only the focus goal's plan: a completed or failed goal's plan is not shown once the
        # focus has moved on (its detail, enter on the goal, still shows it)
        focus = view["focus"]
        plan = view["plans"].get(focus) if focus is not None else None
        t = Text()
        if plan is None:
            t.append(f"goal #{focus}: no plan yet\n(its next cycle makes one)" if focus is not None
                     else "no active goal: nothing planned", style="dim")
            self.show_text(t)
            return
        t.append(f"goal #{plan['goal']} · plan {plan['status']} · attempt {plan['attempt']}\n", style="bold")
        t.append(f"{plan['strategy']}\n", style="dim")
        for st in plan["steps"]:
            t.append(f" {st['marker']} ", style=MARKER_STYLE[st["marker"]])
            t.append(f"{st['index'] + 1}. {st['tool']:<18}", style="bold" if st["marker"] == ">" else "")
            t.append(f" {st['rationale']}\n", style="dim")
        self.show_text(t)


SCORE_COLUMNS = ("tool", "base", "recency", "novelty", "episodic", "pressure", "archetype", "plan", "total", "note")
# short headers keep the built-ins' rows and every factor visible at 120 columns
SCORE_HEADERS = ("tool", "base", "rec", "nov", "epi", "pres", "arch", "plan", "total", "note")
SCORE_WIDTHS = (19, 5, 6, 6, 6, 6, 7, 6, 6, 40)  # one cell of padding each, set below
# under 100 columns the table keeps what answers "which tool, and why not the others"
NARROW_COLUMNS = ("tool", "total", "note", "base")


def short_reason(why_not: str | None) -> str:
    """The score table's note for a tool not offered; the Why pane gives the full sentence."""
    text = (why_not or "not offered").removeprefix("not offered: ")
    m = re.match(r"capability (.+) disabled", text)
    if m:
        return "gated: " + m.group(1).replace(", ", ",")
    m = re.search(r"sim ([0-9.]+) ≤ 0\.55", text)
    if m:
        return f"sim {float(m.group(1)):.2f} ≤ 0.55"
    # plain words, never SPEC's letters (K/I/E); "(K is false)" is how older traces put it
    for pattern, note in ((r"no known triples|\(K is false\)", "no known triples"),
                          (r"no episode recalled|\(E is false\)", "no episode recalled"),
                          (r"activation found nothing|\(I is false\)", "nothing activated")):
        if re.search(pattern, text):
            return note
    if text.startswith("no input"):
        return "no input in goal"
    return text[:24]


class ScoreTable(DataTable):
    """Every tool of the latest cycle (the built-ins and the run's plugins); cells are updated in place, never rebuilt.

    DataTable forgets every rendered cell when any one cell changes (its caches are keyed on a
    table-wide update count), so a frame at full speed rendered all 120 cells through Rich again:
    the costliest part of a frame. This table keeps each cell's rendering until that cell
    changes (a version per cell), the rest of DataTable's keys (style, width, cursor, hover) kept."""

    _cells: dict
    narrow = False
    CELL_CACHE_MAX = 4096  # entries: a few frames of every cell in every cursor/hover state

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._cell_versions: dict[tuple[int, int], int] = {}
        self._cell_lines: dict[tuple, object] = {}
        self._layout_version = 0  # rows or columns added or removed: every cached cell is stale

    def update_cell(self, row_key, column_key, value, *, update_width: bool = False) -> None:
        super().update_cell(row_key, column_key, value, update_width=update_width)
        key = (self.get_row_index(row_key), self.get_column_index(column_key))
        self._cell_versions[key] = self._cell_versions.get(key, 0) + 1

    def _forget_cells(self) -> None:
        self._cell_lines.clear()
        self._layout_version += 1

    def clear(self, columns: bool = False):
        self._forget_cells()
        return super().clear(columns)

    def add_column(self, *a, **kw):
        self._forget_cells()
        return super().add_column(*a, **kw)

    def add_row(self, *a, **kw):
        self._forget_cells()
        return super().add_row(*a, **kw)

    def notify_style_update(self) -> None:
        self._forget_cells()  # a theme or CSS change restyles every cell
        super().notify_style_update()

    def _clear_caches(self) -> None:
        self._forget_cells()
        super()._clear_caches()

    def _render_cell(self, row_index: int, column_index: int, base_style, width: int, cursor: bool = False,
                     hover: bool = False):
        key = (row_index, column_index, self._cell_versions.get((row_index, column_index), 0), self._layout_version,
               base_style, width, cursor, hover, self._show_hover_cursor, self._pseudo_class_state, self.show_cursor)
        lines = self._cell_lines.get(key)
        if lines is None:
            if len(self._cell_lines) >= self.CELL_CACHE_MAX:
                self._cell_lines.clear()
            lines = self._cell_lines[key] = super()._render_cell(row_index, column_index, base_style, width, cursor,
                                                                   hover)
        return lines

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.cell_padding = 0
        self.zebra_stripes = False
        self._build()

    def _build(self) -> None:
        self._cells = {}
        spec = list(zip(SCORE_COLUMNS, SCORE_HEADERS, SCORE_WIDTHS))
        if self.narrow:
            by_key = {c[0]: c for c in spec}
            spec = [by_key[k] for k in NARROW_COLUMNS]
            spec[2] = ("note", "note", 18)  # the table's scrollbar takes two of the 50 cells
        self.columns_shown = [c[0] for c in spec]
        for col, header, width in spec:
            self.add_column(header, key=col, width=width)
        # the run's tools (a plugin's rows were added as they came): kept across a rebuild
        names = list(getattr(self, "_names", None) or TOOL_NAMES)
        self._names: list[str] = []
        for name in names:
            self._add_tool_row(name)

    def _add_tool_row(self, name: str) -> None:
        self._names.append(name)
        self.add_row(*([name] + [""] * (len(self.columns_shown) - 1)), key=name)

    def set_narrow(self, narrow: bool) -> None:
        """Switch column sets (the workbench calls this when the terminal crosses 100 columns)."""
        if narrow == self.narrow:
            return
        row = self.cursor_row
        self.narrow = narrow
        self.clear(columns=True)
        self._build()
        self.move_cursor(row=row)

    def show(self, record: CycleRecord | PendingCycle | None) -> None:
        if record is None:
            return
        chosen = record["decide"]["tool"]
        act = record["act"]
        for c in record["decide"]["candidates"]:
            name = c["tool"]
            if name not in self._names:  # a plugin tool: its row comes after the built-ins
                self._add_tool_row(name)
            if name == chosen:
                style = "bold reverse red" if act["vetoed"] else "bold reverse"
            elif not c["offered"]:
                style = "dim"
            else:
                style = ""
            cells = {
                "tool": ("▶" if name == chosen else " ") + name,
                "base": f"{c['base']:.2f}",
                "recency": f"-{c['recency']:.2f}",
                "novelty": f"+{c['novelty']:.2f}",
                "episodic": f"+{c['episodic']:.2f}",
                "pressure": f"+{c['pressure']:.2f}",
                "archetype": f"{c['archetype'] + 0.0:+.3f}",
                "plan": f"+{c['plan']:.2f}",
                "total": f"{c['score']:.2f}" if c["offered"] else "—",
            }
            note = ""
            if name == chosen and act["vetoed"]:
                note = f"VETOED by {act['veto']}"
            elif name == chosen and act["bias"]:
                note = f"biased {act['bias']:.2f} ({', '.join(act['bias_patterns'])})"
            elif name == chosen:
                note = f"chosen: {act['progress']}"
            elif not c["offered"]:
                note = short_reason(c["why_not"])
            cells["note"] = note
            for col, value in cells.items():
                if col not in self.columns_shown:
                    continue
                key = (name, col)
                if self._cells.get(key) != (value, style):  # repaint only what changed
                    self._cells[key] = (value, style)
                    self.update_cell(name, col, Text(value, style=style))
        shown = (record.get("cycle"), chosen)
        if shown != getattr(self, "_revealed", None):  # once per cycle shown: the user may scroll away
            self._revealed = shown
            self.call_after_refresh(self.reveal, chosen)

    def reveal(self, tool: str) -> None:
        """Scroll `tool`'s row into view, the cursor left where it is: the chosen (or vetoed)
        row can be below the fold (shadow at 80×24, a 12th tool at 120×36)."""
        if tool not in self._names:
            return
        # DataTable's own cursor scrolling, for a row that is not the cursor's (private API:
        # the row's region with the header kept clear, as _scroll_cursor_into_view does)
        fixed = self._get_fixed_offset()
        _, y, width, height = self._get_row_region(self._names.index(tool))
        self.scroll_to_region(Region(int(self.scroll_x) + fixed.left, y, width - fixed.left, height),
                              animate=False, spacing=fixed, force=True)

    def selected_tool(self) -> str | None:
        if self.row_count == 0:
            return None
        return self._names[min(self.cursor_row, len(self._names) - 1)]


class WhyPane(Pane):
    """Why the chosen tool won, in plain words; and why the tool under the score table's
    cursor did not (what it would have taken)."""

    question_at = 0  # the line the why-not of the selected tool starts on (0: none shown)
    # before the first cycle; a workbench where space steps something else says so
    EMPTY = "Press space to step one cycle, r to run.\nMove the score table's cursor to ask why not that tool."

    def show(self, record: CycleRecord | PendingCycle | None, selected: str | None = None,
             vetoes: dict[str, int] | None = None, call: dict | None = None) -> None:
        """`vetoes`: how often each tool was vetoed on the record's goal so far (Run.vetoes_on_goal)."""
        if record is None:
            self.show_text(Text(self.EMPTY, style="dim"))
            return
        t = Text()
        soar = soar_why(dict(record), selected)  # a Soar world agent: its operators and preferences
        if soar is not None:
            for i, line in enumerate(soar):
                t.append(line + "\n", style="bold" if i == 0 or line.startswith("the Soar agent's decision") else "")
            out = record["act"]["output"].split("\n", 1)[0]
            t.append(f"output: {out[:200]}\n", style="red" if not record["act"]["success"] else "dim")
            self.question_at = 0
            self.show_text(t)
            return
        lines = why_chosen(dict(record))
        llm = record["decide"].get("llm")
        if llm is not None and llm["status"] == "accepted" and llm["tool"] != llm["utility_tool"]:
            # the model overrode the table: "beat the runner-up" would be the wrong story
            cands = {c["tool"]: c for c in record["decide"]["candidates"]}
            u, m = cands[llm["utility_tool"]], cands[record["decide"]["tool"]]
            lines = [lines[0], f"the model chose {m['tool']} ({m['score']:.2f}); the utility table "
                               f"preferred {u['tool']} ({u['score']:.2f})"] + [ln for ln in lines if ln.startswith("vetoed")]
        if record["act"]["vetoed"]:
            # the most important fact of the cycle goes first
            veto = [ln for ln in lines if ln.startswith("vetoed")]
            lines = [ln for ln in lines if not ln.startswith("vetoed")]
            for ln in veto:
                t.append(ln.upper()[:1] + ln[1:] + "\n", style="bold red")
            t.append(veto_note(record, vetoes) + "\n", style="red")
        for i, line in enumerate(lines):
            t.append(line + "\n", style="bold" if i == 0 else "")
        if llm is not None:
            t.append(f"model: {llm['status']}", style="bold yellow")
            if call is not None:  # how the answer was got (outside the record): replayed, or live and how long
                t.append(" [replayed]" if call.get("replayed") else f" [live {call.get('wall_latency_s', 0.0):.2f} s]",
                         style="dim")
            if llm["status"] == "accepted":
                t.append(f" ({llm['tool']}; the utility table would choose {llm['utility_tool']})\n")
            else:
                t.append(f": {llm['reason']} — the utility choice {llm['utility_tool']} ran\n")
            if llm.get("situation_assessment"):
                t.append(f"assessment: {llm['situation_assessment']}\n")
            if llm.get("action_rationale"):
                t.append(f"rationale: {llm['action_rationale']}\n")
        out = record["act"]["output"].split("\n", 1)[0]
        t.append(f"output: {out[:200]}\n", style="red" if not record["act"]["success"] else "dim")
        self.question_at = 0
        if selected and selected != record["decide"]["tool"]:
            t.append("\n")
            # the rendered line the why-not starts on: the workbench scrolls the pane to it, so
            # moving the table's cursor brings the answer into view (it was ~20 lines down)
            width = self.content_region.width
            if width > 0:
                self.question_at = len(t.wrap(self.app.console, width)) - 1
            for i, line in enumerate(why_not_text(dict(record), selected)):
                t.append(line + "\n", style="bold" if i == 0 else "")
            n = (vetoes or {}).get(selected, 0)
            if n:
                t.append(f"{selected} was vetoed {_times(n)} on this goal\n", style="red")
        self.show_text(t)


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"


def veto_note(record: CycleRecord | PendingCycle, vetoes: dict[str, int] | None) -> str:
    """How often the vetoed tool was chosen and vetoed on this goal (None: a cycle part-way, not
    counted yet), and how to stop it: a veto wears off with recency, and the tool is chosen again
    and again (issue 28)."""
    tool, pattern = record["decide"]["tool"], record["act"]["veto"]
    parts = [] if vetoes is None else [f"vetoed {_times(max(1, vetoes.get(tool, 0)))} on this goal"]
    if pattern == f"no_{tool}":
        parts.append("V lifts this veto")
    elif pattern != "user":
        parts.append("[shadow] anticipate = true (e) stops choosing it")
    return " · ".join(parts)


class PsychePane(Pane):
    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.deltas: dict[str, float] = {}

    def show(self, view: View) -> None:
        p = view["psyche"]
        dom = p["dominant"]
        # the gauges take what the names and numbers leave (12 cells at most, 4 at least)
        bw = max(4, min(12, (self.size.width or 34) - 22))
        t = Text()
        t.append(f"{p['persona']}", style="bold")
        t.append(f" · dominant {dom}\n", style="dim")
        for a in ARCHETYPES:
            w = p["archetypes"][a]
            t.append(("★ " if a == dom else "  ") + f"{a:<9}", style="bold yellow" if a == dom else "")
            t.append(bar(w, bw), style="yellow" if a == dom else "cyan")
            t.append(f" {w:.2f}")
            d = self.deltas.get(a, 0.0)
            t.append(f" {d:+.2f}\n" if d else "      \n", style="green" if d > 0 else "red" if d < 0 else "dim")
        t.append(f"  {'self':<9}", style="")
        t.append(bar(p["individuation"], bw), style="magenta")
        t.append(f" {p['individuation']:.2f}\n")
        # vetoes fired (the run's) and the patterns configured (the psyche's, on the border), the
        # same live, replayed and opened from a trace
        t.append(f"vetoes fired {p['vetoes_fired']}", style="red" if p["vetoes_fired"] else "dim")
        t.append(f" · encounters {p['shadow_encounters']}", style="dim")  # shadow encounters (SPEC §9)
        line = patterns_line(p)
        box = self.parent
        if isinstance(box, Widget) and box.border_subtitle != line:  # setting it repaints the box
            box.border_subtitle = line
        if p["pending"]:
            t.append("\nedit pending: applies next cycle", style="bold yellow")
        self.show_text(t)


def patterns_line(p: dict) -> str:
    v, b = p["vetoes_configured"], p["biases_configured"]
    return f"{v} veto{'' if v == 1 else 'es'} · {b} bias{'' if b == 1 else 'es'} configured"


class MemoryPane(Pane):
    """Working memory, newest last; the header shows capacity, pressure, evictions and
    consolidations of the latest cycle."""

    DEFAULT_CSS = "MemoryPane { height: auto; }"

    def __init__(self, entries: "MemoryList | None" = None, **kw) -> None:
        super().__init__(**kw)
        self.last_consolidation: str = ""
        self.entries = entries

    def show(self, view: View, record: CycleRecord | None, rows: int) -> None:
        wm = view["wm"]
        t = Text()
        t.append(f"WM {wm['size']}/{wm['capacity']} ", style="bold")
        t.append(bar(wm["pressure"], 10), style="red" if wm["pressure"] > 0.8 else "yellow" if wm["pressure"] > 0.7 else "green")
        t.append(f" pressure {wm['pressure']:.2f} · episodes {view['episodes']}", style="dim")
        if record is not None:
            ev = record["wm"]["evicted"]
            if ev:
                t.append(f" · evicted {len(ev)} this cycle", style="yellow")
            if record["wm"]["consolidated"]:
                self.last_consolidation = f" · consolidated {len(record['wm']['consolidated'])} at cycle {record['cycle']}"
        t.append(self.last_consolidation, style="magenta")
        if self.entries is None or view.get("model_memory"):
            t.append("\n")
        model_memory = view.get("model_memory")
        if model_memory:
            # the structured memory the model is shown, above the agent's own entries
            lines = model_memory.splitlines()[:4]
            for i, ln in enumerate(lines):
                t.append("  model ", style="bold yellow")
                t.append(ln[:200] + ("\n" if i < len(lines) - 1 or self.entries is None else ""))
            rows -= len(lines)
        if self.entries is None:  # no list beside it (a pane on its own): the newest entries here
            for e in wm["entries"][-max(1, rows):]:
                t.append_text(entry_line(e))
                t.append("\n")
        else:
            self.entries.show(wm["entries"])
        self.show_text(t)


def entry_key(e: dict) -> tuple:
    """What `entry_line` shows of an entry: equal keys, equal lines."""
    return e["cycle"], e["kind"], f"{e['relevance']:.1f}", e["refs"], e["content"]


def entry_line(e: dict) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{e['cycle']:>4} ", style="dim")
    t.append(f"{e['kind'][:5]:<6}", style=KIND_STYLE.get(e["kind"], ""))
    t.append(f"{e['relevance']:.1f} r{e['refs']:<2} ", style="dim")
    t.append(e["content"].replace("\n", " ")[:200])
    return t


class MemoryList(OptionList):
    """Working-memory entries, newest last: it scrolls back (focus it with tab or a click) and
    enter opens an entry in full. Unfocused it follows the newest entry."""

    DEFAULT_CSS = """MemoryList { height: 1fr; border: none; padding: 0; scrollbar-size-vertical: 1;
                               text-wrap: nowrap; text-overflow: ellipsis; }"""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.entries: list[dict] = []
        self._ids: tuple = ()
        self._entry_options: dict[tuple, Option] = {}  # entry_key -> its Option, for the next rebuild

    def notify_style_update(self) -> None:
        self._entry_options = {}  # a kept Option's visual was made under the old theme's colours
        super().notify_style_update()

    def show(self, entries: list[dict]) -> None:
        # ids count from 1 in each agent's memory: the world workbench shows one agent's list,
        # then another's with the same ids, so what is shown (the content) is part of the key
        ids = tuple((e["id"], e["refs"], e["content"]) for e in entries)
        if ids == self._ids:
            return
        self._ids = ids
        keep = self.entries[self.highlighted]["id"] if self.has_focus and self.highlighted is not None \
            and self.highlighted < len(self.entries) else None
        old, self.entries = self.entries, list(entries)
        if len(old) == self.option_count and old and entries:
            # a run at full speed: the changed lines are replaced in place and the count
            # adjusted at the end; clearing the list would cost a layout pass, a scroll to the
            # top and back, the scrollbar hidden and shown again, and a new visual for every line
            for i, (a, b) in enumerate(zip(old, entries)):
                if entry_key(a) != entry_key(b):
                    self.replace_option_prompt_at_index(i, entry_line(b))
            if len(entries) < len(old):  # fewer entries: the surplus lines go
                self.highlighted = None  # set again below: no scroll to a highlight per removal
                for i in range(len(old) - 1, len(entries) - 1, -1):
                    self.remove_option_at_index(i)
            if len(entries) > len(old):
                self.add_options([Option(entry_line(e)) for e in entries[len(old):]])
        else:
            # a line shown before keeps its Option, and with it its rendered visual
            reuse, self._entry_options = self._entry_options, {}
            options = []
            for e in entries:
                key = entry_key(e)
                option = reuse.pop(key, None) or Option(entry_line(e))
                self._entry_options.setdefault(key, option)
                options.append(option)
            self.clear_options()
            self.add_options(options)
        if keep is not None:
            self.highlighted = next((i for i, e in enumerate(entries) if e["id"] == keep), len(entries) - 1)
        elif entries:
            self.highlighted = len(entries) - 1
            self.scroll_end(animate=False)



def agent_panes(partner_scores: bool = False) -> ComposeResult:
    """One agent's panes as both workbenches lay them out: goals, plan and psyche on top, the
    score table and the why beside it, working memory below. `partner_scores`: a second score
    table beside the why (the world workbench's split view). Yielded from `compose`, so the
    containers nest as if written there."""
    with Horizontal(id="top"):
        with Vertical(id="goals-box", classes="box"):
            yield GoalsPane(id="goals")
        with Vertical(id="plan-box", classes="box"):
            yield PlanPane(id="plan")
        with Vertical(id="psyche-box", classes="box"):
            yield PsychePane(id="psyche")
    with Horizontal(id="middle"):
        with Vertical(id="score-box", classes="box"):
            yield ScoreTable(id="scores")
        # a focusable scroll: tab to it, then the arrow and page keys scroll the explanation
        with VerticalScroll(id="why-box", classes="box"):
            yield WhyPane(id="why")
        if partner_scores:
            with Vertical(id="score2-box", classes="box"):
                yield ScoreTable(id="scores2")
    with Horizontal(id="bottom"):
        with Vertical(id="memory-box", classes="box"):
            entries = MemoryList(id="memory-entries")
            yield MemoryPane(entries, id="memory")
            yield entries
