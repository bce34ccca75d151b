"""Swimlanes: one lane per agent against the world's order of turns, one column per step.

Columns are steps in the recorded order; the agent that took a step has its glyph (an action,
a failure, a veto, a turn refused by the rate limits) in its lane, the others their state
then (z sleeping, P paused, · stopped, blank running). Two header rows mark where each round
begins: its number and the world clock then. A cursor column is the step shown read-only.

Only the visible window is drawn (`render_line` builds the columns on screen, nothing else),
so a world of 10,000 steps costs what 100 do; the steps themselves are the engine's list,
read by index.
"""

from __future__ import annotations

from typing import Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from ...engine import LANE_GLYPHS, LANE_STATE, LaneStep

KIND_STYLE = {"act": Style(color="green"), "fail": Style(color="red", bold=True),
              "veto": Style(color="yellow", bold=True), "limited": Style(color="magenta", bold=True)}
DIM = Style(dim=True)
HEADER = Style(color="cyan")
CURSOR = Style(reverse=True)
SHOWN = Style(bold=True, underline=True)
HEADER_ROWS = 2
LEGEND = "● action  ✗ failure  ! veto  ⊘ rate-limited  z sleeping  P paused  · stopped"
LEGEND_NARROW = "● act ✗ fail ! veto ⊘ rate-limited z sleep P paused · stopped"  # fits 80 columns


class Swimlanes(Widget, can_focus=True):
    """Draws `steps` (the engine's list, appended to as the world runs) for `ids`."""

    DEFAULT_CSS = "Swimlanes { height: auto; }"

    class Seek(Message):
        """A click on a column: show that step."""

        def __init__(self, step: int) -> None:
            super().__init__()
            self.step = step

    def __init__(self, ids: Sequence[str], steps: Sequence[LaneStep], **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.ids = list(ids)
        self.steps = steps
        self.cursor: int | None = None  # the step shown read-only; None: live (the newest in view)
        self.shown_agent: str | None = None
        self.label_width = max(len(a) for a in self.ids) + 1 if self.ids else 1
        self._start = 0  # the first step in view
        self._count = 0  # steps when last drawn

    def get_content_height(self, container: object, viewport: object, width: int) -> int:
        return HEADER_ROWS + len(self.ids)

    @property
    def columns(self) -> int:
        return max(1, self.content_region.width - self.label_width)

    def show(self, cursor: int | None, shown_agent: str | None) -> None:
        """Redraw when anything it draws changed: new steps, the cursor, the agent shown."""
        n = len(self.steps)
        if (n, cursor, shown_agent) == (self._count, self.cursor, self.shown_agent):
            return
        self._count, self.cursor, self.shown_agent = n, cursor, shown_agent
        cols = self.columns
        if cursor is None:
            self._start = max(0, n - cols)
        elif not self._start <= cursor < self._start + cols:  # a page at a time, the cursor kept in view
            self._start = max(0, min(cursor - cols // 2, n - cols))
        self.refresh()

    def window(self) -> range:
        """The steps in view."""
        return range(self._start, min(len(self.steps), self._start + self.columns))

    def render_line(self, y: int) -> Strip:
        width = self.content_region.width
        if width <= 0:
            return Strip.blank(0)
        steps, win = self.steps, self.window()
        if y < HEADER_ROWS:
            return self._header(y, win, width)
        lane = y - HEADER_ROWS
        if lane >= len(self.ids):
            return Strip.blank(width)
        aid = self.ids[lane]
        label_style = SHOWN if aid == self.shown_agent else DIM
        label = aid[: self.label_width - 1]
        segs = [Segment(label, label_style), Segment(" " * (self.label_width - len(label)))]
        for i in win:
            s = steps[i]
            if s.agent == aid:
                ch, style = LANE_GLYPHS[s.kind], KIND_STYLE[s.kind]
            else:
                ch, style = LANE_STATE.get(s.states[lane], " "), DIM
            if i == self.cursor:
                style = style + CURSOR
            segs.append(Segment(ch, style))
        return Strip(segs).adjust_cell_length(width)

    def _header(self, y: int, win: range, width: int) -> Strip:
        """Row 0: `r<round>` where each round begins; row 1: the clock then (seconds)."""
        line = [" "] * (width - self.label_width)
        steps = self.steps
        prev_round = steps[win.start - 1].round if win.start > 0 and len(win) else None
        free = 0  # marks never overlap: a round starting under the last mark goes unlabelled
        for col, i in enumerate(win):
            s = steps[i]
            if s.round != prev_round:
                prev_round = s.round
                marks = (f"r{s.round}", f"{s.clock:g}s")  # both rows label the same rounds
                if col < free:
                    continue
                for k, ch in enumerate(marks[y]):
                    if col + k < len(line):
                        line[col + k] = ch
                free = col + max(map(len, marks)) + 1
        label = "round" if y == 0 else "clock"
        return Strip([Segment(f"{label:<{self.label_width}}"[: self.label_width], DIM),
                      Segment("".join(line), HEADER)]).adjust_cell_length(width)

    def on_click(self, event: events.Click) -> None:
        col = event.x - self.label_width
        if col >= 0 and self._start + col < len(self.steps):
            self.post_message(self.Seek(self._start + col))
