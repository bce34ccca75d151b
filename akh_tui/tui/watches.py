"""Watches: queries of the query console (Q) pinned so their answers show every cycle, on a
strip under the timeline (hidden while there is none); a watch pinned as a breakpoint pauses
the run at the cycle its answer changes, as `akh-tui agent run --watch / --break-watch` does
headless. A watch's value is its answer count and the first few answers, read on the engine
thread right after each cycle (the frames only draw what was read)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from ..engine import Run

SHOWN = 3  # answers a watch shows beside its count


@dataclass
class Watch:
    query: str
    stop: bool = False  # a breakpoint: the run pauses when the answer changes
    value: int | None = None  # the answer count at `cycle`
    text: str = ""  # the first answers
    cycle: int | None = None


def read(ctl: Run, w: Watch) -> tuple[int, str]:
    """A watch's answer now: (count, the first answers in words)."""
    out = ctl.query(w.query, limit=SHOWN)
    if out["kind"] == "patterns":
        first = [", ".join(f"{k}={v}" for k, v in r["values"].items()) or "yes" for r in out["rows"]]
    else:
        first = [str(r.get("triple") or r.get("description") or r.get("content") or "") for r in out["rows"]]
    return out["total"], "; ".join(first)


def update(ctl: Run, watches: list[Watch], cycle: int) -> str | None:
    """(engine thread, after a cycle) read every watch; the first breakpoint watch whose answer
    changed, in words, else None."""
    hit = None
    for w in watches:
        value, text = read(ctl, w)
        if w.stop and w.value is not None and value != w.value and hit is None:
            hit = f"watch {w.query} changed: {w.value} → {value}"
        w.value, w.text, w.cycle = value, text, cycle
    return hit


class WatchStrip(Static):
    """One line per watch: its query, count and first answers (■: a breakpoint)."""

    DEFAULT_CSS = """
    WatchStrip { height: auto; max-height: 4; padding: 0 1; display: none; }
    WatchStrip.-shown { display: block; }
    """

    def show(self, watches: list[Watch], replay: bool) -> None:
        self.set_class(bool(watches), "-shown")
        if not watches:
            return
        t = Text()
        for i, w in enumerate(watches):
            if i:
                t.append("\n")
            t.append("■ " if w.stop else "◆ ", style="bold red" if w.stop else "bold cyan")
            t.append(w.query, style="bold")
            t.append(" = ")
            t.append("…" if w.value is None else str(w.value), style="bold")
            if w.text:
                t.append(f"  {w.text}", style="dim")
            if replay and w.cycle is not None:
                t.append(f"  (live, cycle {w.cycle})", style="dim yellow")
        self.update(t)
