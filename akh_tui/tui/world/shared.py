"""The shared world (`w` in the world workbench): its artifacts (owner, version, price,
readers, who wrote each version when, a diff between versions), the ledger (balances over
the rounds, the transfer log), the mint (bids, winner, second price, the UBI split, score,
minted) and the rate windows. It reads the open world each time it is shown and follows it
while the world runs (`refresh_world`, called by the app after each frame)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static, TabbedContent, TabPane

from ...engine import WorldWatch
from ..dialogs import guarded
from ..panes import bar, spark

LOG_ROWS = 500  # the transfer log shows the newest entries (a long world's log is paged, not drawn whole)


class SharedWorldScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,w", "dismiss(None)", "Back", id="world.shared.close"),
        Binding("left_square_bracket", "version(-1)", "Older version", id="world.shared.older", key_display="["),
        Binding("right_square_bracket", "version(1)", "Newer version", id="world.shared.newer", key_display="]"),
    ]
    DEFAULT_CSS = """
    SharedWorldScreen #shared-title { height: 1; }
    SharedWorldScreen TabbedContent { height: 1fr; }
    SharedWorldScreen TabPane { height: 1fr; }
    SharedWorldScreen #art-table { height: auto; max-height: 12; }
    SharedWorldScreen #art-detail { height: 1fr; border: round $primary 50%; padding: 0 1; }
    SharedWorldScreen #balances { height: auto; }
    SharedWorldScreen #ledger-log { height: 1fr; }
    SharedWorldScreen #mint-table { height: 1fr; }
    SharedWorldScreen #rates { height: 1fr; }
    """

    def __init__(self, watch: WorldWatch) -> None:
        super().__init__()
        self.world = watch
        self.version: dict[str, int] = {}  # artifact -> the version whose diff is shown
        self._seen: tuple[int, int, int] = (-1, -1, -1)

    def compose(self) -> ComposeResult:
        yield Static(id="shared-title")
        with TabbedContent(initial="artifacts"):
            with TabPane("Artifacts", id="artifacts"):
                yield DataTable(id="art-table", cursor_type="row")
                with VerticalScroll(id="art-detail"):
                    yield Static(id="art-text")
            with TabPane("Ledger", id="ledger"):
                yield Static(id="balances")
                yield DataTable(id="ledger-log", cursor_type="row")
            with TabPane("Mint", id="mint"):
                with Vertical():
                    yield Static(id="bids")
                    yield DataTable(id="mint-table", cursor_type="row")
            with TabPane("Rate windows", id="rates-tab"):
                yield Static(id="rates-title")
                yield DataTable(id="rates", cursor_type="none")
        yield Footer()

    def on_mount(self) -> None:
        art = self.query_one("#art-table", DataTable)
        for col, w in (("artifact", 18), ("owner", 14), ("version", 7), ("price", 5), ("size", 12), ("readers", 30)):
            art.add_column(col, key=col, width=w)
        log = self.query_one("#ledger-log", DataTable)
        for col, w in (("round", 5), ("clock", 6), ("turn of", 12), ("from", 12), ("to", 12), ("amount", 6), ("why", 50)):
            log.add_column(col, key=col, width=w)
        mint = self.query_one("#mint-table", DataTable)
        for col, w in (("round", 5), ("bids", 16), ("winner", 10), ("artifact", 17), ("price", 5), ("UBI split", 16),
                       ("score", 5), ("minted", 6)):
            mint.add_column(col, key=col, width=w)
        rates = self.query_one("#rates", DataTable)
        for col, w in (("agent", 14), ("resource", 10), ("used", 6), ("limit", 6), ("window", 22)):
            rates.add_column(col, key=col, width=w)
        self.refresh_world()

    @guarded
    def refresh_world(self) -> None:
        """Redraw from the open world when it moved (a step, a mint, an artifact)."""
        w = self.world
        seen = (len(w.steps), len(w.ledger_log), len(w.artifact_log))
        if seen == self._seen:
            return
        self._seen = seen
        self.query_one("#shared-title", Static).update(Text(
            f" {w.name} · round {w.round} · clock {w.clock:g} s · the shared world (escape: back)",
            style="bold reverse"))
        self._artifacts()
        self._ledger()
        self._mint()
        self._rates()

    # ---- artifacts ---------------------------------------------------------------------------
    def _artifacts(self) -> None:
        table = self.query_one("#art-table", DataTable)
        arts = self.world.artifacts()
        self._arts = {a["id"]: a for a in arts}
        row = table.cursor_row
        table.clear()
        for a in arts:
            readers = ", ".join(f"{who}@{v}" for who, v in a["readers"].items()) or "–"
            size = f"{a['size']} {'chars' if a['kind'] == 'text' else 'triples'}"
            table.add_row(a["id"], a["owner"], str(a["version"]), str(a["price"]), size, readers, key=a["id"])
        if arts:
            table.move_cursor(row=min(row, len(arts) - 1))
        self._artifact_detail()

    def selected_artifact(self) -> dict[str, Any] | None:
        table = self.query_one("#art-table", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        return self._arts.get(str(key))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "art-table":
            self._artifact_detail()

    def _artifact_detail(self) -> None:
        a = self.selected_artifact()
        out = Text()
        if a is None:
            out.append("no artifacts", style="dim")
        else:
            v = min(self.version.get(a["id"], a["version"]), a["version"])
            out.append(f"{a['id']}", style="bold")
            out.append(f" · owner {a['owner']} · price {a['price']}" + (f" · tool {a['tool']}" if a["tool"] else "") + "\n")
            out.append("versions: ", style="bold")
            for ver in a["versions"]:
                when = "the world file" if ver["by"] == "(world file)" else f"{ver['by']} at r{ver['round']} ({ver['clock']:g}s)"
                unit = "chars" if a["kind"] == "text" else "triples"
                out.append(f"v{ver['version']} {when}, {ver['size']} {unit}", style="reverse" if ver["version"] == v else "")
                out.append("; ")
            out.append("\n")
            if v <= 1:
                out.append("v1 as first written ([ ] pick a version: its diff to the one before)\n", style="dim")
                for line in self.world.artifact_content(a["id"], 1):
                    out.append("  " + line + "\n")
            else:
                out.append(f"diff v{v - 1} → v{v} ([ ] pick another version)\n", style="dim")
                diff = self.world.artifact_diff(a["id"], v - 1, v)
                for line in diff or ["(the same content)"]:
                    out.append(line + "\n", style="green" if line.startswith("+") else "red" if line.startswith("-") else "dim")
        self.query_one("#art-text", Static).update(out)

    @guarded
    def action_version(self, delta: int) -> None:
        a = self.selected_artifact()
        if a is None:
            return
        v = self.version.get(a["id"], a["version"]) + delta
        self.version[a["id"]] = max(1, min(a["version"], v))
        self._artifact_detail()

    # ---- the ledger --------------------------------------------------------------------------
    def _ledger(self) -> None:
        w = self.world
        rounds, history = w.balance_history()
        now = w.balances()
        t = Text()
        t.append("balances now, and over the last 60 rounds (each from its lowest to its highest)\n", style="bold")
        for acct, series in history.items():
            shown = series[-60:]
            lo, hi = min(shown), max(shown)
            t.append(f"{acct:<14}", style="bold" if acct not in ("world", "escrow") else "dim")
            t.append(f"{now.get(acct, 0):>6}  ")
            t.append(spark([float(x) for x in shown], float(lo), float(hi)), style="cyan")
            t.append(f" {lo}–{hi}\n", style="dim")
        t.append(f"minted so far {w.minted()} · {len(w.ledger_log)} ledger entries (the newest {LOG_ROWS} below)",
                 style="dim")
        self.query_one("#balances", Static).update(t)
        log = self.query_one("#ledger-log", DataTable)
        log.clear()
        for e in w.ledger_log[-LOG_ROWS:]:
            log.add_row(str(e["round"]), f"{e['clock']:g}", e["agent"] or "(mint)", e["from"], e["to"], str(e["amount"]),
                        e["why"])
        if log.row_count:
            log.move_cursor(row=log.row_count - 1)

    # ---- the mint ----------------------------------------------------------------------------
    def _mint(self) -> None:
        w = self.world
        pending = w.pending_bids()
        every = w.spec.mint_every
        t = Text()
        t.append("the mint: " + (f"after every {every}th round; " if every else "off (mint_every = 0); "), style="bold")
        t.append("the highest bid wins and pays the second-highest (its own if alone), shared among the others (UBI); "
                 "score // 10 is minted\n", style="dim")
        t.append("bids in escrow now: " + (", ".join(f"{a} {n} on {art}@{v}" for a, n, art, v in pending) or "none"))
        self.query_one("#bids", Static).update(t)
        table = self.query_one("#mint-table", DataTable)
        table.clear()
        for m in w.mints:
            bids = ", ".join(f"{a} {n}" for a, n in m["bids"]) or "none"
            split = ", ".join(f"{a} {n}" for a, n in m["shares"]) or "–"
            art = f"{m['artifact']}@{m['version']}" if m["artifact"] else "–"
            table.add_row(str(m["round"]), bids, m["agent"] or "–", art, str(m["price"]), split,
                          "–" if m["score"] is None else str(m["score"]), str(m["minted"]))

    # ---- rate windows ------------------------------------------------------------------------
    def _rates(self) -> None:
        w = self.world
        self.query_one("#rates-title", Static).update(Text(f"rate windows: {w.limits_text}", style="bold"))
        table = self.query_one("#rates", DataTable)
        table.clear()
        for r in w.rate_windows():
            frac = r["used"] / r["limit"] if r["limit"] else 1.0
            table.add_row(r["agent"], r["resource"], str(r["used"]), str(r["limit"]),
                          Text(bar(frac, 20), style="red" if r["used"] >= r["limit"] else "green"))

