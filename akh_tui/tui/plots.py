"""The plots screen (`p`): the branch on show over time.

- a tool × cycle grid: one column a cycle, each tool's score as shading, the winner marked
  (`●`, red `✗` when its action was vetoed); left/right move the cursor, enter replays the
  cycle under it (the workbench's `_seek`);
- archetype weights over cycles, reflections marked;
- each goal's coverage over cycles;
- working-memory size against its capacity, consolidations marked.

The line plots are textual-plotext widgets (a kept library: axes, ticks and legends are not
ours to get wrong). The grid is ours: plotext has no heat map with a cursor.

A long branch must not freeze the screen (issue 29: no wait over 250 ms on a 100,000-cycle
branch). Everything that grows with the branch is done off the UI thread, and the screen reads
no more of the branch than it shows:
- the line plots read at most SAMPLES cycles, evenly spread over the branch (every cycle of a
  branch that short), in chunks that are drawn as they arrive (the plots fill left to right);
  each line is then binned to a few hundred points;
- the grid reads the PAGE cycles around its window when the cursor gets there (all of them on a
  short branch, while the plots read it), and keeps at most KEEP_PAGES pages;
- the plots' figures are built by plotext on a worker thread (a figure costs tens of
  milliseconds); the UI thread only swaps the finished text in. One build runs at a time and
  the newest state is built next, so moving the cursor never queues builds.
Reads go through `Run.summaries`, which picks the few fields out of each record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rich.text import Text
from textual import work
from textual.worker import get_current_worker
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Footer, Static
from textual_plotext import Plot, PlotextPlot

from ..engine.records import CycleSummary
from ..engine import TOOL_NAMES, Run

PAGE = 500  # the grid's cycles read at a time (a page holds the run's lock for tens of milliseconds)
KEEP_PAGES = 40  # grid pages kept at most (20,000 cycles): the farthest from the cursor go first
SAMPLES = 2000  # cycles the line plots read at most, evenly spread over a longer branch
CHUNK = 100  # sampled cycles read between two hand-overs to the UI thread
MAX_POINTS = 160  # a line plot's points at most: longer series are averaged in bins (plotext
# draws two points a cell with half blocks, and its build time grows with the points: 300 points
# cost 130 ms a plot, 80 cost 15)
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
    """Some of the branch's cycles' figures, compact: one entry a cycle in each list (a grid
    page: consecutive cycles; the line plots: every cycle, or samples of a long branch)."""

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


def sample_cycles(total: int, n: int | None = None) -> list[int]:
    """The cycles the line plots read: every cycle of a branch of at most `n` (SAMPLES), else
    every k-th from the first (k the least that keeps to `n`) and the last, so the lines reach
    the end."""
    n = SAMPLES if n is None else n
    if total <= n:
        return list(range(1, total + 1))
    step = -(-total // (n - 1))
    picked = list(range(1, total + 1, step))
    return picked if picked[-1] == total else picked + [total]


class GridCycles:
    """The grid's cycles, 1..total: pages of PAGE consecutive cycles, read when asked for, at most
    KEEP_PAGES kept (the farthest from the cursor are dropped first)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.pages: dict[int, Series] = {}

    @staticmethod
    def page_of(cycle: int) -> int:
        return (cycle - 1) // PAGE

    def page_range(self, page: int) -> tuple[int, int]:
        """(first, last) cycle of a page."""
        return page * PAGE + 1, min(self.total, (page + 1) * PAGE)

    def add(self, part: Series, cursor: int) -> None:
        if not part.cycles:
            return
        self.pages[self.page_of(part.cycles[0])] = part
        if len(self.pages) > KEEP_PAGES:
            here = self.page_of(cursor)
            for page in sorted(self.pages, key=lambda p: -abs(p - here))[: len(self.pages) - KEEP_PAGES]:
                del self.pages[page]

    def missing(self, first: int, last: int) -> list[int]:
        """The pages of cycles first..last not read yet."""
        lo, hi = self.page_of(max(1, first)), self.page_of(min(self.total, max(first, last)))
        return [p for p in range(lo, hi + 1) if p not in self.pages]

    def at(self, cycle: int) -> tuple[Series, int] | None:
        """(the page, the cycle's index in it), or None where the cycle is not read (yet)."""
        page = self.pages.get(self.page_of(cycle))
        if page is None:
            return None
        i = page.position(cycle)
        return (page, i) if i is not None else None


class ToolGrid(Widget, can_focus=True):
    """Tools down, cycles across (one column a cycle, a window of the branch around the
    cursor). Shading: the tool's score that cycle; `●` the winner, `✗` a vetoed winner, `·` not
    offered; a column not read yet is blank until its page arrives."""

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

    def __init__(self, data: GridCycles, cursor: int, **kw) -> None:
        super().__init__(**kw)
        self.data = data
        self.cursor = cursor
        self.first = max(1, cursor - 40)

    @property
    def cell(self) -> int:
        """Characters a cycle: a short branch gets wider cells (up to 3), a long one one each."""
        room = max(1, (self.size.width or 100) - LABEL)
        return max(1, min(3, room // max(1, self.data.total)))

    @property
    def columns(self) -> int:
        """Cycles in the window."""
        return max(1, ((self.size.width or 100) - LABEL) // self.cell)

    def window(self) -> tuple[int, int]:
        """(first, last) cycle of the window shown."""
        self._clamp()
        return self.first, min(self.data.total, self.first + self.columns - 1)

    def _clamp(self) -> None:
        if self.data.total:
            self.cursor = min(max(self.cursor, 1), self.data.total)
        cols = self.columns
        if self.cursor < self.first:
            self.first = self.cursor
        elif self.cursor >= self.first + cols:
            self.first = self.cursor - cols + 1
        self.first = max(1, self.first)

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
        if self.data.total:
            self.set_cursor(self.data.total if end else 1)

    def action_choose(self) -> None:
        if 1 <= self.cursor <= self.data.total:
            self.post_message(self.Chosen(self.cursor))

    def on_click(self, event) -> None:
        x = event.x - LABEL
        if x >= 0:
            self.set_cursor(self.first + x // self.cell)

    def render(self) -> Text:
        d = self.data
        t = Text(no_wrap=True, overflow="crop")
        lo, hi = self.window()
        here = d.at(self.cursor)
        if here is None:
            t.append("reading the branch's cycles …", style="dim")
            return t
        w = self.cell
        cycles = range(lo, hi + 1)
        # the ruler: a tick every ten cycles, the cursor's cycle number above the column
        t.append(f"{'cycle':<{LABEL - 1}} ", style="dim")
        for c in cycles:
            ch = ("┼" if c % 10 == 0 else " ") + " " * (w - 1)
            t.append(ch, style="bold reverse yellow" if c == self.cursor else "dim")
        t.append("\n")
        t.append(f"{'':<{LABEL - 1}} ", style="dim")
        numbers = [" "] * (len(cycles) * w)
        for c in cycles:  # the number of each tenth cycle (each fifth in wide cells), where it fits
            if c % (10 if w == 1 else 5) == 0 or c == lo:
                label = str(c)
                at = (c - lo) * w
                if at + len(label) <= len(numbers) and all(ch == " " for ch in numbers[max(0, at - 1):at + len(label)]):
                    numbers[at:at + len(label)] = list(label)
        t.append("".join(numbers) + "\n", style="dim")
        columns = [d.at(c) for c in cycles]
        page, i = here
        for ti, name in enumerate(TOOL_NAMES):
            chosen_here = page.tool[i] == ti
            t.append(f"{name:<{LABEL - 1}} ", style="bold" if chosen_here else "")
            run: list[str] = []
            run_style = ""  # cells of one style go in one span: a span a cell made
            # every redraw of a 100-column grid cost the compositor a third of a second
            for c, col in zip(cycles, columns):
                at_cursor = c == self.cursor
                if col is None:  # its page is being read
                    ch, style = " " * w, "dim"
                else:
                    p, k = col
                    score = p.scores[k][ti]
                    if p.tool[k] == ti:
                        ch, style = ("✗", "bold red") if p.vetoed[k] else ("●", "bold green")
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
        tool = TOOL_NAMES[page.tool[i]] if page.tool[i] >= 0 else "?"
        score = page.scores[i][page.tool[i]] if page.tool[i] >= 0 else None
        t.append(f"cycle {self.cursor}: ", style="bold")
        t.append(f"{tool}" + (f" {score:.2f}" if score is not None else ""))
        if page.vetoed[i]:
            t.append(" VETOED", style="bold red")
        t.append(f" · WM {page.wm_size[i]}/{page.wm_capacity[i]} · enter replays it", style="dim")
        return t


@dataclass(frozen=True)
class PlotJob:
    """What the three line plots draw, copied on the UI thread (the copies are bounded by
    SAMPLES) so a worker can build the figures while the screen reads on."""

    serial: int  # which state of the screen this is (a newer job makes an older one's figures stale)
    cycles: list[int]
    archetypes: dict[str, list[float]]
    coverage: dict[int, list[tuple[int, float]]]
    wm_size: list[int]
    wm_capacity: list[int]
    reflections: list[int]  # cycles marked on the archetype plot
    consolidations: list[int]  # cycles marked on the working-memory plot
    cursor: int
    pressure: float | None  # working memory's at the cursor; None: its cycle is not read yet
    theme: str  # the plotext theme (the app's, registered by PlotextPlot)

    def ticks(self, plt: Plot) -> None:
        """Whole cycle numbers on the x axis, the same range on every plot."""
        lo, hi = self.cycles[0], self.cycles[-1]
        plt.xlim(lo, max(hi, lo + 1))
        step = max(1, (hi - lo) // 4)
        plt.xticks(list(range(lo, hi + 1, step)))

    @staticmethod
    def marks(plt: Plot, cycles: list[int]) -> int:
        """Vertical lines at these cycles (when few enough to read); returns the count."""
        if 0 < len(cycles) <= MAX_VLINES:
            for c in cycles:
                plt.vline(c, MARK)
        return len(cycles)

    def draw(self, plot_id: str, plt: Plot, width: int) -> None:
        """Draw one of the three plots onto `plt` (whose figure it clears); `width` is the
        archetype plot's, which sets the points of every line."""
        points = max(20, min(MAX_POINTS, 2 * width))
        plt.clear_figure()
        if plot_id == "arch":  # archetype weights, reflections marked
            n = self.marks(plt, self.reflections)
            for a, ys in self.archetypes.items():
                x, y = bin_series(self.cycles, ys, points)
                plt.plot(x, y, label=a, color=ARCHETYPE_COLOURS.get(a, (220, 220, 220)), marker="braille")
            plt.vline(self.cursor, CURSOR)
            self.ticks(plt)
            plt.ylim(0.0, 1.0)
            plt.title(f"{n} reflection{'s' if n != 1 else ''} (grey) · cursor red")
        elif plot_id == "coverage":  # coverage per goal (the newest MAX_GOALS goals)
            goals = sorted(self.coverage)
            shown = goals[-MAX_GOALS:]
            for k, gid in enumerate(shown):
                pts = self.coverage[gid]
                x, y = bin_series([c for c, _ in pts], [v for _, v in pts], points)
                plt.plot(x, y, label=f"#{gid}", color=GOAL_COLOURS[k % len(GOAL_COLOURS)], marker="braille")
            plt.vline(self.cursor, CURSOR)
            self.ticks(plt)
            plt.ylim(0.0, 1.0)
            plt.title(f"{len(goals)} goal(s)" + (f", newest {len(shown)} drawn" if len(shown) < len(goals) else ""))
        else:  # working memory: size against capacity, consolidations marked
            n = self.marks(plt, self.consolidations)
            x, y = bin_series(self.cycles, [float(v) for v in self.wm_size], points)
            plt.plot(x, y, label="size", color=(80, 190, 230), marker="braille")
            x, y = bin_series(self.cycles, [float(v) for v in self.wm_capacity], points)
            plt.plot(x, y, label="capacity", color=(200, 110, 220), marker="braille")
            plt.vline(self.cursor, CURSOR)
            self.ticks(plt)
            plt.ylim(0, max(self.wm_capacity) * 1.05)
            pressure = "?" if self.pressure is None else f"{self.pressure:.2f}"
            plt.title(f"pressure {pressure} at {self.cursor} · {n} consolidation{'s' if n != 1 else ''}")

    def figure(self, plot_id: str, size: tuple[int, int], width: int) -> Text:
        """The plot built as text at `size` (what PlotextPlot.render does), on a Plot of its
        own: plotext keeps a figure's state in the object, so this is safe off the UI thread."""
        plt = Plot()
        self.draw(plot_id, plt, width)
        plt.plotsize(*size)
        plt._set_size(*size)  # as PlotextPlot.render: plotsize alone left resized plots wrong
        plt.theme(self.theme)
        return Text.from_ansi(plt.build())


class BuiltPlot(PlotextPlot):
    """A PlotextPlot that shows a figure built elsewhere (PlotsScreen builds them on a worker
    thread): the UI thread only hands Textual the finished text. Until the figure for its size
    and the screen's newest state is there, it shows the one before (or a note)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.built: tuple[tuple[int, int, int], Text] | None = None  # ((width, height, job serial), figure)

    def want(self) -> tuple[int, int]:
        return self.size.width, self.size.height

    def theme_name(self) -> str:
        return self._get_plotext_theme_name(self.app.theme)

    def render(self) -> Text:
        screen = self.screen
        key = (*self.want(), screen._serial if isinstance(screen, PlotsScreen) else 0)
        if self.built is None or self.built[0] != key:
            if isinstance(screen, PlotsScreen):
                figure = screen.figure_now(self)
                if figure is not None:  # sync: built here, as the snapshots want
                    self.built = (key, figure)
                    return figure
                screen.request_figures()
            if self.built is None:
                return Text("drawing …", style="dim")
        return self.built[1]

    def on_resize(self) -> None:
        self.refresh()


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
    PLOTS = ("arch", "coverage", "wm")

    def __init__(self, ctl: Run, cursor: int, seek: Callable[[int | None], None], sync: bool = False) -> None:
        super().__init__()
        self.ctl = ctl
        self.series = Series()  # the line plots' cycles: every cycle, or SAMPLES of a longer branch
        self.total = ctl.last_cycle()
        self.wanted = sample_cycles(self.total)
        self.sampled = len(self.wanted) < self.total
        self.cells = GridCycles(self.total)
        self._seek = seek
        self._sync = sync
        self.grid = ToolGrid(self.cells, cursor, id="tool-grid")
        self._redraw: Timer | None = None
        self._serial = 0  # bumped whenever what the plots show changes
        self._job: PlotJob | None = None
        self._building = False  # a worker is building figures
        self._build_again = False  # ... and the state changed since it started
        self._reading: set[int] = set()  # grid pages asked for and not arrived
        self._events: list[tuple[int, str]] = []

    def compose(self) -> ComposeResult:
        yield Static(id="plots-title")
        with Vertical(id="grid-box"):
            yield self.grid
        with Horizontal(id="plot-row"):
            for pid, title in (("arch", "Archetype weights"), ("coverage", "Goal coverage"), ("wm", "Working memory")):
                with Vertical(classes="plot-box", id=f"{pid}-box") as box:
                    box.border_title = title
                    yield BuiltPlot(id=f"{pid}-plot")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#grid-box").border_title = "Tools × cycles (shade: score · ● chosen · ✗ vetoed · · not offered)"
        self.grid.focus()
        self._title()
        # a new theme: the figures are built again in its colours (PlotextPlot registers it with plotext)
        self.app.theme_changed_signal.subscribe(self, lambda theme: self._changed())
        if self._sync:  # tests and snapshots: the same reads, on this thread
            self._events = self.ctl.branch_events()
            for cycles in self._chunks():
                self._add(self._read_part(cycles), dense=not self.sampled)
            self._want_window()
        else:
            self._want_window()  # the grid's cycles first: its window is what the user looks at
            self._read()

    # ---- reading (worker threads) ---------------------------------------------------------
    def _chunks(self) -> list[list[int]]:
        """The plots' cycles in the order they are read: pages of PAGE cycles when every
        cycle is read (each is a grid page too), else CHUNK samples at a time."""
        size = CHUNK if self.sampled else PAGE
        return [self.wanted[i:i + size] for i in range(0, len(self.wanted), size)]

    def _read_part(self, cycles: list[int]) -> Series:
        """The figures of these cycles (consecutive: one read; else one read each)."""
        part = Series()
        if cycles and cycles[-1] - cycles[0] == len(cycles) - 1:
            part.extend(self.ctl.summaries(cycles[0], cycles[-1]))
        else:
            for c in cycles:  # each read holds the run's lock for a fraction of a millisecond
                part.extend(self.ctl.summaries(c, c))
        return part

    @work(thread=True, exclusive=True, group="plots")
    def _read(self) -> None:
        """The plots' cycles, read off the UI thread, chunk by chunk; each is drawn as it arrives
        (the grid's window comes first: `_want_window` on mount)."""
        worker = get_current_worker()
        events = self.ctl.branch_events()
        self.app.call_from_thread(self._set_events, events)
        for cycles in self._chunks():
            if worker.is_cancelled:
                return
            part = self._read_part(cycles)  # compacted here: the UI thread only appends lists
            self.app.call_from_thread(self._add, part, not self.sampled)

    @work(thread=True, group="plots-grid")
    def _read_pages(self, pages: list[int]) -> None:
        for page in pages:
            if get_current_worker().is_cancelled:
                return
            part = self._read_part(list(range(*self._page_span(page))))
            self.app.call_from_thread(self._add_page, page, part)

    def _page_span(self, page: int) -> tuple[int, int]:
        first, last = self.cells.page_range(page)
        return first, last + 1

    # ---- what arrives (UI thread) ---------------------------------------------------------
    def _set_events(self, events: list[tuple[int, str]]) -> None:
        if not self.is_attached:
            return
        self._events = events
        self._changed()

    def _add(self, part: Series, dense: bool) -> None:
        if not self.is_attached:
            return
        self.series.merge(part)
        if dense:  # every cycle is read: the part is a grid page too
            self.cells.add(part, self.grid.cursor)
            lo, hi = self.grid.window()
            if lo <= part.cycles[-1] and part.cycles[0] <= hi:
                self.grid.refresh()
        self._title()
        self._changed()

    def _add_page(self, page: int, part: Series) -> None:
        self._reading.discard(page)
        if not self.is_attached:
            return
        self.cells.add(part, self.grid.cursor)
        self.grid.refresh()
        lo, hi = self.grid.window()
        if lo <= part.cycles[-1] and part.cycles[0] <= hi:
            self._changed()  # the cursor's working memory may be known now

    def _want_window(self) -> None:
        """Read the grid pages of the window (and the page on either side of the cursor) not
        read yet; a short branch's pages come with the plots' reads."""
        if not self.sampled and not self._sync:
            return
        lo, hi = self.grid.window()
        pages = [p for p in self.cells.missing(min(lo, self.grid.cursor - PAGE // 2), max(hi, self.grid.cursor + PAGE // 2))
                 if p not in self._reading]
        if not pages:
            return
        if self._sync:
            for page in pages:
                self.cells.add(self._read_part(list(range(*self._page_span(page)))), self.grid.cursor)
            return
        self._reading.update(pages)
        self._read_pages(pages)

    def _title(self) -> None:
        n = len(self.series.cycles)
        t = Text()
        t.append(" Plots ", style="bold reverse")
        t.append(f" {self.ctl.name} · branch {getattr(self.ctl, 'branch_name', 'main')} · ")
        if n < len(self.wanted):
            what = f"sampled {n:,} of {len(self.wanted):,} cycles" if self.sampled else f"read {n:,} of {self.total:,} cycles"
            t.append(what + " …", style="bold yellow")
        else:
            t.append(f"{self.total:,} cycles")
            if self.sampled:
                t.append(f" · lines sampled every {self.wanted[1] - self.wanted[0]:,} cycles, averaged in bins", style="dim")
            elif n > MAX_POINTS:
                t.append(" · lines averaged in bins", style="dim")
        t.append(" · ←/→ cycle, pgup/pgdn page, enter replays, escape closes", style="dim")
        # one row always: no layout pass (a reflow of the whole screen) for a new title
        self.query_one("#plots-title", Static).update(t, layout=False)

    # ---- the figures ----------------------------------------------------------------------
    def _changed(self) -> None:
        """What the plots show has changed: a new state, its figures built when asked for."""
        self._serial += 1
        self._job = None
        for plot in self.query(BuiltPlot):
            plot.refresh()

    def job(self) -> PlotJob | None:
        """The current state as a PlotJob (made once a state; None before any cycle is read)."""
        s = self.series
        if not s.cycles:
            return None
        if self._job is None or self._job.serial != self._serial:
            cursor = self.grid.cursor
            at = self.cells.at(cursor)
            pressure = None
            if at is not None:
                page, i = at
                pressure = page.wm_size[i] / page.wm_capacity[i] if page.wm_capacity[i] else 0.0
            consolidations = ([c for c, k in self._events if k == "consolidation"] if self.sampled
                              else [c for c, k in zip(s.cycles, s.consolidated) if k])
            self._job = PlotJob(
                self._serial, list(s.cycles), {a: list(ws) for a, ws in s.archetypes.items()},
                {g: list(pts) for g, pts in s.coverage.items()}, list(s.wm_size), list(s.wm_capacity),
                [c for c, k in self._events if k == "reflection"], consolidations, cursor, pressure,
                self.query_one("#arch-plot", BuiltPlot).theme_name())
        return self._job

    def _sizes(self) -> dict[str, tuple[int, int]]:
        return {pid: self.query_one(f"#{pid}-plot", BuiltPlot).want() for pid in self.PLOTS}

    def figure_now(self, plot: BuiltPlot) -> Text | None:
        """(sync only) the plot's figure built on this thread; None otherwise."""
        job = self.job() if self._sync else None
        if job is None:
            return None
        return job.figure((plot.id or "")[: -len("-plot")], plot.want(), self._sizes()["arch"][0] or 40)

    def request_figures(self) -> None:
        """Build the current state's figures on a worker (one build at a time: a request while
        one runs is built when it ends, so the newest state is always drawn next)."""
        if self._building:
            self._build_again = True
            return
        job = self.job()
        sizes = self._sizes()
        if job is None or not all(w and h for w, h in sizes.values()):
            return  # nothing read yet, or not laid out yet: a refresh asks again
        self._building = True
        self._build(job, sizes)

    def draw_plots(self) -> None:
        """Draw the plots again (the cursor moved, or a bench times it)."""
        self._changed()

    @work(thread=True, group="plots-build")
    def _build(self, job: PlotJob, sizes: dict[str, tuple[int, int]]) -> None:
        """The three figures, each handed over as soon as it is built: the UI thread then draws
        one plot a frame (all three in one frame stalled the event loop three times as long)."""
        width = sizes["arch"][0] or 40
        try:
            for pid, size in sizes.items():
                figure = job.figure(pid, size, width)
                self.app.call_from_thread(self._built, pid, (*size, job.serial), figure)
        finally:
            self.app.call_from_thread(self._build_done, job.serial)

    def _built(self, pid: str, key: tuple[int, int, int], figure: Text) -> None:
        if not self.is_attached:
            return
        plot = self.query_one(f"#{pid}-plot", BuiltPlot)
        plot.built = (key, figure)
        plot.refresh()

    def _build_done(self, serial: int) -> None:
        self._building = False
        if not self.is_attached:
            return
        if self._build_again or serial != self._serial:
            self._build_again = False
            self.request_figures()

    def on_tool_grid_cursor_moved(self, event: ToolGrid.CursorMoved) -> None:
        # the grid moves at once (its pages read if need be); the plots (their cursor line) when
        # the keys rest a moment
        self._want_window()
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
