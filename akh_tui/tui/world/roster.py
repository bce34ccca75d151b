"""The roster: one row per agent (its number key, state, last action and result, errors in a
row and backoff, scrip, rate-limit headroom, goals done). Cells change in place; a row is
never rebuilt (a world's agents are fixed when it opens).

A gated agent (its turns stop for a person's answer, `g`) has GATE_MARK after its id; after a
turn the gate stopped, the result cell says the answer (approved, rejected, chosen), the
action cell the tool that ran (narrow, with no result column: the answer, then the tool)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable

STATE_STYLE = {"STARTING": "dim", "RUNNING": "green", "SLEEPING": "yellow", "PAUSED": "bold red", "STOPPED": "dim"}
COLUMNS = (("key", "#", 2), ("agent", "agent", 14), ("state", "state", 9), ("action", "last action", 16),
           ("result", "result", 10), ("errors", "err", 4), ("backoff", "backoff", 12), ("scrip", "scrip", 6),
           ("headroom", "headroom", 13), ("goals", "goals", 6))
NARROW = ("key", "agent", "state", "action", "errors", "scrip", "goals")
GATE_MARK = "⚑"
ANSWER_WORDS = {"approve": ("approved", "green"), "reject": ("rejected", "bold red"), "choose": ("chosen", "cyan")}


def cells(row: dict[str, Any], index: int, shown: bool, narrow: bool = False) -> dict[str, Text | str]:
    """What a row shows, column by column (narrow: no result column, so the gate's answer
    leads the action cell)."""
    backoff = ""
    if row["state"] == "SLEEPING" and row["wake_at"] is not None:
        backoff = f"until {row['wake_at']:g}s"
    elif row["backoff"] is not None:
        backoff = f"{row['backoff']:g}s"
    head = row["headroom"]
    agent = Text(row["id"], style="bold" if shown else "")
    if row.get("gated"):
        agent.append(f" {GATE_MARK}", style="bold yellow")
    answer = row.get("answer")
    result: Text | str = row["result"] or "–"
    action: Text | str = row["action"] or "–"
    if answer is not None:
        word, style = ANSWER_WORDS.get(answer["decision"], (answer["decision"], ""))
        result = Text(word, style=style)
        if narrow:
            action = Text.assemble((word, style), f" {row['action']}")
    return {
        "key": Text(f"{index + 1}" if index < 9 else " ", style="bold reverse" if shown else "bold"),
        "agent": agent,
        "state": Text(row["state"], style=STATE_STYLE.get(row["state"], "")),
        "action": action,
        "result": result,
        "errors": Text(str(row["errors"]), style="red" if row["errors"] else "dim"),
        "backoff": backoff or "–",
        "scrip": str(row["scrip"]),
        "headroom": "no limits" if head is None else Text(f"{head[1]} {head[0]}", style="red" if head[1] < 1 else ""),
        "goals": f"{row['goals_done']}/{row['goals']}",
    }


class Roster(DataTable):
    """The roster table; the cursor row is the agent whose panes are shown."""

    def __init__(self, ids: list[str], **kw: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kw)
        self.ids = ids
        self.narrow = False
        self._shown: dict[tuple[str, str], object] = {}

    def on_mount(self) -> None:
        self._build()

    def _build(self) -> None:
        self.clear(columns=True)
        self._shown = {}
        for key, header, width in COLUMNS:
            if not self.narrow or key in NARROW:
                self.add_column(header, key=key, width=width)
        for aid in self.ids:
            self.add_row(*([""] * len(self.columns)), key=aid)

    def set_narrow(self, narrow: bool) -> None:
        if narrow != self.narrow:
            self.narrow = narrow
            row = self.cursor_row
            self._build()
            self.move_cursor(row=row)

    def show(self, rows: list[dict[str, Any]], shown: str | None) -> None:
        for i, row in enumerate(rows):
            for key, value in cells(row, i, row["id"] == shown, self.narrow).items():
                if self.narrow and key not in NARROW:
                    continue
                if self._shown.get((row["id"], key)) != value:  # only what changed is redrawn
                    self._shown[(row["id"], key)] = value
                    self.update_cell(row["id"], key, value)
        if shown in self.ids and self.cursor_row != self.ids.index(shown):
            self.move_cursor(row=self.ids.index(shown))
