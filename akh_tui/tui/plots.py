"""The plots screen (`p`): the branch on show over time.

- a tool × cycle grid: one column a cycle, each tool's score as shading, the winner marked
  (`●`, red `✗` when its action was vetoed); left/right move the cursor, enter replays the
  cycle under it (the workbench's `_seek`);
- archetype weights over cycles, reflections marked;
- each goal's coverage over cycles;
- working-memory size against its capacity, consolidations marked.

The line plots are textual-plotext widgets (a kept library: axes, ticks and legends are not
ours to get wrong). The grid is ours: plotext has no heat map with a cursor.

A long branch must not freeze the screen: its figures are read off the UI thread (a thread
worker) in pages through `Run.summaries`, which picks the few fields out of each record inside
SQLite; each page is drawn as it arrives, and the line plots are binned to a few hundred points
whatever the branch's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Static
from textual_plotext import PlotextPlot

from ..engine.records import CycleSummary
from ..engine import TOOL_NAMES, Run

PAGE = 2000  # cycles read per page from the store (each page is drawn as it arrives)
MAX_POINTS = 160  # a line plot's points at most: longer series are averaged in bins (plotext
# draws two points a cell with half blocks, and its build time grows with the points: 300 points
# cost 130 ms a plot, 80 cost 15)
PLOT_EVERY = 3  # while a long branch is read, the plots are redrawn every third page
MAX_VLINES = 40  # event marks drawn as vertical lines; more are counted in the title
MAX_GOALS = 8  # coverage lines drawn (the newest goals beyond are counted)
SHADES = " ░▒▓█"
# RGB, not names: the plot's theme follows the app's, and named colours came out remapped
ARCHETYPE_COLOURS = {"sage": (240, 200, 60), "healer": (90, 200, 90), "explorer": (80, 190, 230),
                     "guardian": (200, 110, 220)}
GOAL_COLOURS = ((80, 190, 230), (90, 200, 90), (240, 200, 60), (200, 110, 220), (110, 130, 250), (240, 120, 90),
                (220, 220, 220), (250, 160, 60))
CURSOR = (250, 80, 80)
MARK = (130, 130, 130)
LABEL = 19  # the grid's tool-name column


@dataclass
class Series:
    """The branch's figures, compact: one entry a cycle in each list."""

    cycles: list[int] = field(default_factory=list)
    tool: list[int] = field(default_factory=list)  # index into TOOL_NAMES (-1: unknown)
    vetoed: list[bool] = field(default_factory=list)
    scores: list[tuple[float | None, ...]] = field(default_factory=list)  # TOOL_NAMES order
    archetypes: dict[str, list[float]] = field(default_factory=dict)
    wm_size: list[int] = field(default_factory=list)
    wm_capacity: list[int] = field(default_factory=list)
    consolidated: list[int] = field(default_factory=list)
    coverage: dict[int, list[tuple[int, float]]] = field(default_factory=dict)  # goal -> (cycle, coverage)
    events: list[tuple[int, str]] = field(default_factory=list)

    def extend(self, page: list[CycleSummary]) -> None:
        index = {t: i for i, t in enumerate(TOOL_NAMES)}
        for s in page:
            self.cycles.append(s["cycle"])
            self.tool.append(index.get(s["tool"], -1))
            self.vetoed.append(s["vetoed"])
            self.scores.append(tuple(s["scores"].get(t) for t in TOOL_NAMES))
            for a, w in s["archetypes"].items():
                self.archetypes.setdefault(a, []).append(w)
            self.wm_size.append(s["wm_size"])
            self.wm_capacity.append(s["wm_capacity"])
            self.consolidated.append(s["consolidated"])
            for gid, cov in s["coverage"].items():
                self.coverage.setdefault(int(gid), []).append((s["cycle"], cov))

    def merge(self, part: "Series") -> None:
        """Append a later page's series (made off the UI thread: this is only list appends)."""
        self.cycles += part.cycles
        self.tool += part.tool
        self.vetoed += part.vetoed
        self.scores += part.scores
        for a, ws in part.archetypes.items():
            self.archetypes.setdefault(a, []).extend(ws)
        self.wm_size += part.wm_size
        self.wm_capacity += part.wm_capacity
        self.consolidated += part.consolidated
        for gid, pts in part.coverage.items():
            self.coverage.setdefault(gid, []).extend(pts)

    def position(self, cycle: int) -> int | None:
        """Index of `cycle` in the lists (cycles are consecutive from the first)."""
        if not self.cycles:
            return None
        i = cycle - self.cycles[0]
        return i if 0 <= i < len(self.cycles) else None


def bin_series(xs: list[int], ys: list[float], n: int = MAX_POINTS) -> tuple[list[float], list[float]]:
    """At most `n` points: consecutive values averaged in equal bins (x: the bin's first)."""
    if len(xs) <= n:
        return list(map(float, xs)), list(ys)
    size = len(xs) / n
    bx, by = [], []
    for b in range(n):
        lo, hi = int(b * size), max(int(b * size) + 1, int((b + 1) * size))
        chunk = ys[lo:hi]
        bx.append(float(xs[lo]))
        by.append(sum(chunk) / len(chunk))
    return bx, by


class ToolGrid(Widget, can_focus=True):
    """Tools down, cycles across (one column a cycle, a window of the branch around the
    cursor). Shading: the tool's score that cycle; `●` the winner, `✗` a vetoed winner, `·` not
    offered."""

    DEFAULT_CSS = "ToolGrid { height: 14; }"
    BINDINGS = [
        Binding("left", "move(-1)", "Cycle −1", show=False, id="plots.left"),
        Binding("right", "move(1)", "Cycle +1", show=False, id="plots.right"),
        Binding("pageup,shift+left", "page(-1)", "Page back", id="plots.page_back", key_display="pgup"),
        Binding("pagedown,shift+right", "page(1)", "Page fwd", id="plots.page_forward", key_display="pgdn"),
        Binding("home", "edge(0)", "First", show=False, id="plots.first"),
        Binding("end", "edge(1)", "Last", show=False, id="plots.last"),
        Binding("enter", "choose", "Replay cycle", id="plots.replay"),
    ]

    class CursorMoved(Message):
        def __init__(self, cycle: int) -> None:
            super().__init__()
            self.cycle = cycle

    class Chosen(Message):
        def __init__(self, cycle: int) -> None:
            super().__init__()
            self.cycle = cycle

    def __init__(self, series: Series, cursor: int, **kw) -> None:
        super().__init__(**kw)
        self.series = series
        self.cursor = cursor
        self.first = max(1, cursor - 40)

    @property
    def cell(self) -> int:
        """Characters a cycle: a short branch gets wider cells (up to 3), a long one one each."""
        room = max(1, (self.size.width or 100) - LABEL)
        return max(1, min(3, room // max(1, len(self.series.cycles))))

    @property
    def columns(self) -> int:
        """Cycles in the window."""
        return max(1, ((self.size.width or 100) - LABEL) // self.cell)

    def _clamp(self) -> None:
        s = self.series
        if s.cycles:
            self.cursor = min(max(self.cursor, s.cycles[0]), s.cycles[-1])
        cols = self.columns
        if self.cursor < self.first:
            self.first = self.cursor
        elif self.cursor >= self.first + cols:
            self.first = self.cursor - cols + 1
        self.first = max(s.cycles[0] if s.cycles else 1, self.first)

    def set_cursor(self, cycle: int) -> None:
        self.cursor = cycle
        self._clamp()
        self.refresh()
        self.post_message(self.CursorMoved(self.cursor))

    def action_move(self, n: int) -> None:
        self.set_cursor(self.cursor + n)

    def action_page(self, n: int) -> None:
        self.set_cursor(self.cursor + n * self.columns)

    def action_edge(self, end: int) -> None:
        s = self.series
        if s.cycles:
            self.set_cursor(s.cycles[-1] if end else s.cycles[0])

    def action_choose(self) -> None:
        if self.series.position(self.cursor) is not None:
            self.post_message(self.Chosen(self.cursor))

    def on_click(self, event) -> None:
        x = event.x - LABEL
        if x >= 0:
            self.set_cursor(self.first + x // self.cell)

    def render(self) -> Text:
        s = self.series
        t = Text(no_wrap=True, overflow="crop")
        if not s.cycles:
            t.append("reading the branch's cycles …", style="dim")
            return t
        self._clamp()
        cols, w = self.columns, self.cell
        lo = s.position(self.first) or 0
        hi = min(len(s.cycles), lo + cols)
        # the ruler: a tick every ten cycles, the cursor's cycle number above the column
        t.append(f"{'cycle':<{LABEL - 1}} ", style="dim")
        for i in range(lo, hi):
            ch = ("┼" if s.cycles[i] % 10 == 0 else " ") + " " * (w - 1)
            t.append(ch, style="bold reverse yellow" if s.cycles[i] == self.cursor else "dim")
        t.append("\n")
        t.append(f"{'':<{LABEL - 1}} ", style="dim")
        numbers = [" "] * ((hi - lo) * w)
        for i in range(lo, hi):  # the number of each tenth cycle (each fifth in wide cells), where it fits
            if s.cycles[i] % (10 if w == 1 else 5) == 0 or i == lo:
                label = str(s.cycles[i])
                at = (i - lo) * w
                if at + len(label) <= len(numbers) and all(c == " " for c in numbers[max(0, at - 1):at + len(label)]):
                    numbers[at:at + len(label)] = list(label)
        t.append("".join(numbers) + "\n", style="dim")
        for ti, name in enumerate(TOOL_NAMES):
            chosen_here = s.tool[s.position(self.cursor) or 0] == ti
            t.append(f"{name:<{LABEL - 1}} ", style="bold" if chosen_here else "")
            run: list[str] = []
            run_style = ""  # cells of one style go in one span: a span a cell made
            # every redraw of a 100-column grid cost the compositor a third of a second
            for i in range(lo, hi):
                at_cursor = s.cycles[i] == self.cursor
                score = s.scores[i][ti]
                if s.tool[i] == ti:
                    ch, style = ("✗", "bold red") if s.vetoed[i] else ("●", "bold green")
                elif score is None:
                    ch, style = "·", "dim"
                else:
                    f = min(1.0, max(0.0, score))
                    ch, style = SHADES[min(len(SHADES) - 1, int(f * (len(SHADES) - 1) + 0.5))], "cyan"
                if w > 1:  # the mark centred in its cell, the shade around it
                    shade = SHADES[min(len(SHADES) - 1, int(min(1.0, max(0.0, score or 0.0)) * (len(SHADES) - 1) + 0.5))] \
                        if score is not None else " "
                    ch = (shade + ch + shade)[:w] if ch in "●✗" else ch * w
                style += " reverse" if at_cursor else ""
                if style != run_style and run:
                    t.append("".join(run), style=run_style)
                    run = []
                run.append(ch)
                run_style = style
            if run:
                t.append("".join(run), style=run_style)
            t.append("\n")
        here = s.position(self.cursor)
        if here is not None:
            tool = TOOL_NAMES[s.tool[here]] if s.tool[here] >= 0 else "?"
            score = s.scores[here][s.tool[here]] if s.tool[here] >= 0 else None
            t.append(f"cycle {self.cursor}: ", style="bold")
            t.append(f"{tool}" + (f" {score:.2f}" if score is not None else ""))
            if s.vetoed[here]:
                t.append(" VETOED", style="bold red")
            t.append(f" · WM {s.wm_size[here]}/{s.wm_capacity[here]} · enter replays it", style="dim")
        return t


class PlotsScreen(Screen[None]):
    """The run's (or replayed branch's) history as plots; enter replays a cycle."""

    BINDINGS = [Binding("escape,q,p", "close", "Close", id="plots.close")]
    DEFAULT_CSS = """
    PlotsScreen { layout: vertical; }
    PlotsScreen #plots-title { height: 1; background: $panel; padding: 0 1; }
    PlotsScreen .plot-box { border: round $primary 50%; border-title-color: $accent; height: 1fr; }
    PlotsScreen #grid-box { height: auto; border: round $primary 50%; border-title-color: $accent; }
    PlotsScreen #grid-box:focus-within { border: round $accent; }
    PlotsScreen #plot-row { height: 1fr; min-height: 8; }
    """

    def __init__(self, ctl: Run, cursor: int, seek: Callable[[int | None], None], sync: bool = False) -> None:
        super().__init__()
        self.ctl = ctl
        self.series = Series()
        self.total = ctl.last_cycle()
        self._seek = seek
        self._sync = sync
        self.grid = ToolGrid(self.series, cursor, id="tool-grid")
        self._redraw: Timer | None = None
        self._pages = 0

    def compose(self) -> ComposeResult:
        yield Static(id="plots-title")
        with Vertical(id="grid-box"):
            yield self.grid
        with Horizontal(id="plot-row"):
            for pid, title in (("arch", "Archetype weights"), ("coverage", "Goal coverage"), ("wm", "Working memory")):
                with Vertical(classes="plot-box", id=f"{pid}-box") as box:
                    box.border_title = title
                    yield PlotextPlot(id=f"{pid}-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#grid-box").border_title = "Tools × cycles (shade: score · ● chosen · ✗ vetoed · · not offered)"
        self.grid.focus()
        self._title()
        if self._sync:  # tests and snapshots: the same pages, read on this thread
            self.series.events = self.ctl.branch_events()
            for a in range(1, self.total + 1, PAGE):
                part = Series()
                part.extend(self.ctl.summaries(a, min(self.total, a + PAGE - 1)))
                self._add_page(part)
        else:
            self._read()

    @work(thread=True, exclusive=True, group="plots")
    def _read(self) -> None:
        """Pages of the branch, read off the UI thread; each is drawn when it arrives."""
        events = self.ctl.branch_events()
        self.app.call_from_thread(setattr, self.series, "events", events)
        for a in range(1, self.total + 1, PAGE):
            part = Series()  # compacted here: the UI thread only appends lists
            part.extend(self.ctl.summaries(a, min(self.total, a + PAGE - 1)))
            self.app.call_from_thread(self._add_page, part)

    def _add_page(self, part: Series) -> None:
        had_window = self.series.position(self.grid.cursor) is not None
        self.series.merge(part)
        self._title()
        if not had_window:  # the grid only changes once its window's cycles have arrived
            self.grid.refresh()
        # the line plots once the branch is read (a long branch's partial plots are redrawn
        # at most every PLOT_EVERY pages: each draw costs the UI thread tens of milliseconds)
        self._pages += 1
        if len(self.series.cycles) >= self.total or self._pages % PLOT_EVERY == 1:
            self.draw_plots()

    def _title(self) -> None:
        n = len(self.series.cycles)
        t = Text()
        t.append(" Plots ", style="bold reverse")
        t.append(f" {self.ctl.name} · branch {getattr(self.ctl, 'branch_name', 'main')} · ")
        if n < self.total:
            t.append(f"read {n:,} of {self.total:,} cycles …", style="bold yellow")
        else:
            t.append(f"{self.total:,} cycles")
            if n > MAX_POINTS:
                t.append(" · lines averaged in bins", style="dim")
        t.append(" · ←/→ cycle, pgup/pgdn page, enter replays, escape closes", style="dim")
        self.query_one("#plots-title", Static).update(t)

    @staticmethod
    def _marks(plt, cycles: list[int]) -> int:
        """Vertical lines at these cycles (when few enough to read); returns the count."""
        if 0 < len(cycles) <= MAX_VLINES:
            for c in cycles:
                plt.vline(c, MARK)
        return len(cycles)

    def _ticks(self, plt) -> None:
        """Whole cycle numbers on the x axis, the same range on every plot."""
        lo, hi = self.series.cycles[0], self.series.cycles[-1]
        plt.xlim(lo, max(hi, lo + 1))
        step = max(1, (hi - lo) // 4)
        plt.xticks(list(range(lo, hi + 1, step)))

    def draw_plots(self) -> None:
        s = self.series
        if not s.cycles:
            return
        cursor = self.grid.cursor
        width = self.query_one("#arch-plot", PlotextPlot).size.width or 40
        points = max(20, min(MAX_POINTS, 2 * width))

        def binned(xs, ys):
            return bin_series(xs, ys, points)

        # archetype weights, reflections marked
        plot = self.query_one("#arch-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_figure()
        n = self._marks(plt, [c for c, k in s.events if k == "reflection"])
        for a, ys in s.archetypes.items():
            x, y = binned(s.cycles, ys)
            plt.plot(x, y, label=a, color=ARCHETYPE_COLOURS.get(a, (220, 220, 220)), marker="braille")
        plt.vline(cursor, CURSOR)
        self._ticks(plt)
        plt.ylim(0.0, 1.0)
        plt.title(f"{n} reflection{'s' if n != 1 else ''} (grey) · cursor red")
        plot.refresh()
        # coverage per goal (the newest MAX_GOALS goals)
        plot = self.query_one("#coverage-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_figure()
        goals = sorted(s.coverage)
        shown = goals[-MAX_GOALS:]
        for k, gid in enumerate(shown):
            pts = s.coverage[gid]
            x, y = binned([c for c, _ in pts], [v for _, v in pts])
            plt.plot(x, y, label=f"#{gid}", color=GOAL_COLOURS[k % len(GOAL_COLOURS)], marker="braille")
        plt.vline(cursor, CURSOR)
        self._ticks(plt)
        plt.ylim(0.0, 1.0)
        plt.title(f"{len(goals)} goal(s)" + (f", newest {len(shown)} drawn" if len(shown) < len(goals) else ""))
        plot.refresh()
        # working memory: size against capacity, consolidations marked
        plot = self.query_one("#wm-plot", PlotextPlot)
        plt = plot.plt
        plt.clear_figure()
        n = self._marks(plt, [c for c, k in zip(s.cycles, s.consolidated) if k])
        x, y = binned(s.cycles, [float(v) for v in s.wm_size])
        plt.plot(x, y, label="size", color=(80, 190, 230), marker="braille")
        x, y = binned(s.cycles, [float(v) for v in s.wm_capacity])
        plt.plot(x, y, label="capacity", color=(200, 110, 220), marker="braille")
        plt.vline(cursor, CURSOR)
        self._ticks(plt)
        i = s.position(cursor)
        pressure = s.wm_size[i] / s.wm_capacity[i] if i is not None and s.wm_capacity[i] else 0.0
        plt.ylim(0, max(s.wm_capacity) * 1.05)
        plt.title(f"pressure {pressure:.2f} at {cursor} · {n} consolidation{'s' if n != 1 else ''}")
        plot.refresh()

    def on_tool_grid_cursor_moved(self, event: ToolGrid.CursorMoved) -> None:
        # the grid moves at once; the plots (their cursor line) when the keys rest a moment
        if self._sync:
            self.draw_plots()
            return
        if self._redraw is not None:
            self._redraw.stop()
        self._redraw = self.set_timer(0.12, self.draw_plots)

    def on_tool_grid_chosen(self, event: ToolGrid.Chosen) -> None:
        self.app.pop_screen()
        self._seek(event.cycle)

    def action_close(self) -> None:
        self.app.pop_screen()
