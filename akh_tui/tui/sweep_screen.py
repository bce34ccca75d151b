"""The sweep browser: a sweep's runs in a sortable table, the heatmap of one outcome over two
axes, and enter on a run to replay it in the workbench (back here when the replay closes).

`akh-tui sweep open DIR` (no RUN) starts it. It reads the sweep folder only; nothing runs.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Footer, Static

from ..engine import sweep_report
from ..engine import OUTCOMES, SweepStore

# Outcome columns of the table (and the heatmap's choices), in this order.
SHOWN = ("goals_completed", "goals_failed", "vetoes", "biases", "cycles_run", "individuation", "mean_cycles_to_complete")


def _sort_key(v):
    """None last, numbers before text, so a column with failed runs still sorts."""
    if v is None:
        return (2, 0, "")
    if isinstance(v, (int, float)):
        return (0, v, "")
    return (1, 0, str(v))


class SweepBrowser(App[str | None]):
    """Returns the run id chosen with enter, or None when closed with q."""

    TITLE = "akh-tui sweep"
    CSS = """
    #runs { height: 1fr; }
    #heat { height: auto; max-height: 50%; padding: 0 1; }
    #head { height: auto; padding: 0 1; }
    """
    BINDINGS = [
        Binding("q", "quit", "Close"),
        Binding("o", "next_outcome", "Heatmap outcome"),
        Binding("r", "reverse", "Reverse sort"),
    ]

    def __init__(self, folder: str | Path, cursor: str | None = None) -> None:
        super().__init__()
        self.folder = Path(folder)
        st = SweepStore(self.folder, create=False)
        try:
            self.meta, self.rows = st.meta(), st.rows()
        finally:
            st.close()
        self.axes = list(self.meta.get("axes", []))
        self.outcome = "goals_completed"
        self.sort_column: str | None = None
        self.sort_reverse = False
        self.start_cursor = cursor

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(id="head")
            yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
            yield Static(id="heat")
        yield Footer()

    def on_mount(self) -> None:
        failed = sum(r["status"] != "ok" for r in self.rows)
        self.query_one("#head", Static).update(Text(
            f"sweep {self.meta.get('name')!r}: {len(self.rows)} of {self.meta.get('run_count')} runs, {failed} failed. "
            "Click a column to sort; enter replays a run.", style="bold"))
        table = self.query_one("#runs", DataTable)
        table.add_column("#", key="idx")
        table.add_column("run", key="run_id")
        table.add_column("scenario", key="scenario")
        table.add_column("seed", key="seed")
        for a in self.axes:
            table.add_column(a.split(".")[-1], key=a)
        for o in SHOWN:
            table.add_column(o.replace("_", " ").replace("mean cycles to complete", "cycles/goal"), key=o)
        table.add_column("status", key="status")
        for r in self.rows:
            table.add_row(*(Text(sweep_report._fmt(v), style="red" if r["status"] != "ok" and k == "status" else "")
                            for k, v in self._cells(r)), key=r["run_id"])
        if self.start_cursor is not None and self.start_cursor in table.rows:
            table.move_cursor(row=table.get_row_index(self.start_cursor))
        table.focus()
        self._draw_heat()

    def _cells(self, r: dict) -> list[tuple[str, object]]:
        return ([("idx", r["idx"]), ("run_id", r["run_id"]), ("scenario", r["scenario"]), ("seed", r["seed"])]
                + [(a, r["settings"].get(a)) for a in self.axes] + [(o, r.get(o)) for o in SHOWN]
                + [("status", r["status"] if r["status"] == "ok" else f"failed: {r['error']}"[:60])])

    @property
    def _by_id(self) -> dict:
        return {r["run_id"]: r for r in self.rows}

    def _draw_heat(self) -> None:
        rep = sweep_report.build(self.meta, self.rows, outcome=self.outcome)
        h = rep["heatmap"]
        if h is None:
            self.query_one("#heat", Static).update(Text("no heatmap: the sweep has no axis", style="dim"))
            return
        vals = [c for row in h["cells"] for c in row if c is not None]
        lo, hi = (min(vals), max(vals)) if vals else (0, 0)
        t = Table(title=f"{h['outcome']} (mean) by {h['y']} × {h['x']}  [o: next outcome]", title_justify="left")
        t.add_column(f"{h['y']} \\ {h['x']}")
        for xv in h["xs"]:
            t.add_column(sweep_report._fmt(xv), justify="center")
        for yv, row in zip(h["ys"], h["cells"]):
            cells = []
            for c in row:
                r, g, b = sweep_report._shade(c, lo, hi)
                cells.append(Text(f" {sweep_report._fmt(c)} ", style=f"white on rgb({r},{g},{b})"))
            t.add_row(Text(sweep_report._fmt(yv)), *cells)
        self.query_one("#heat", Static).update(Group(t))
        self.heat = h

    # ---- actions -----------------------------------------------------------------------------
    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, column in OUTCOMES  # outcomes: highest first
        self._sort()

    def action_reverse(self) -> None:
        if self.sort_column is None:
            self.sort_column = "idx"
        self.sort_reverse = not self.sort_reverse
        self._sort()

    def _sort(self) -> None:
        table = self.query_one("#runs", DataTable)
        by_id = self._by_id
        col = self.sort_column or "idx"  # set before any sort: idx is the table's own order
        cells = {rid: dict(self._cells(r)) for rid, r in by_id.items()}
        # run id breaks ties, so equal values keep one order whichever way the table was sorted before
        order = sorted(by_id, key=lambda rid: (_sort_key(cells[rid][col]), rid), reverse=self.sort_reverse)
        rank = {rid: i for i, rid in enumerate(order)}
        table.sort("run_id", key=lambda run_id: rank[str(run_id.plain if isinstance(run_id, Text) else run_id)])

    def action_next_outcome(self) -> None:
        i = SHOWN.index(self.outcome) if self.outcome in SHOWN else -1
        self.outcome = SHOWN[(i + 1) % len(SHOWN)]
        self._draw_heat()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.exit(str(event.row_key.value))

    def ordered_ids(self) -> list[str]:
        """The run ids as the table shows them now (tests read the sort through this)."""
        table = self.query_one("#runs", DataTable)
        return [str(table.coordinate_to_cell_key(Coordinate(i, 0)).row_key.value) for i in range(table.row_count)]


def browse(folder: str | Path) -> int:
    """The browser; a chosen run replays in the workbench, and closing the replay comes back."""
    from .app import run as run_workbench

    cursor = None
    while True:
        rid = SweepBrowser(folder, cursor).run()
        if rid is None:
            return 0
        cursor = rid
        st = SweepStore(folder, create=False)
        try:
            text = st.trace_text(rid)
        finally:
            st.close()
        with tempfile.TemporaryDirectory(prefix="akh-sweep-open-") as d:
            path = Path(d) / f"{rid}.jsonl"
            path.write_text(text, encoding="utf-8")
            run_workbench(trace_file=str(path))
