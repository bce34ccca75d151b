"""`akh-tui bench`'s registered rows: a module adds a table of figures with one line.

A module that measures something registers a function once, at import:

    register("anchors", anchor_table)          # name, fn(quick) -> Table

and adds its module name to `MODULES` below (one line). `akh-tui bench` imports them all and
prints each table after its own figures, in the order registered; `--soak` is passed on as
`soak=True` to functions that take it. Every row a table prints is min / median / max of its
rounds and, where it has one, the ratio of its median to its baseline's (`Figure`, `figure_table`).
"""

from __future__ import annotations

import importlib
import inspect
import statistics
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Callable, Iterator

from rich.table import Table

from .clock import Clock

# the modules whose import registers rows (one line each; they may live in any layer bench imports)
MODULES: tuple[str, ...] = (
    "akh_tui.bench.anchors",
    "akh_tui.bench.explain",
    "akh_tui.bench.startup",
    "akh_tui.bench.plots_screen",
    "akh_tui.bench.sweep",
)

TableFn = Callable[..., Table]
_REGISTERED: list[tuple[str, TableFn]] = []


def register(name: str, fn: TableFn) -> TableFn:
    """Add `fn(quick[, soak]) -> Table` to the bench under `name` (a second registration of the
    same name replaces the first: a module imported twice adds its rows once)."""
    for i, (n, _) in enumerate(_REGISTERED):
        if n == name:
            _REGISTERED[i] = (name, fn)
            return fn
    _REGISTERED.append((name, fn))
    return fn


def registered() -> list[tuple[str, TableFn]]:
    """The registered tables, every module of MODULES imported first."""
    for mod in MODULES:
        importlib.import_module(mod)
    return list(_REGISTERED)


def tables(quick: bool, soak: bool = False, clock: Clock | None = None) -> Iterator[Table]:
    """Each registered table, measured when it is asked for (the bench prints each as it
    comes); `clock` times each under its registered name."""
    for name, fn in registered():
        takes_soak = "soak" in inspect.signature(fn).parameters
        with clock.part(name) if clock is not None else nullcontext():
            table = fn(quick, soak=soak) if takes_soak else fn(quick)
        yield table


@dataclass
class Figure:
    """One printed row: its samples (one per round), unit, aim and the figure it is a ratio to."""

    label: str
    samples: list[float] = field(default_factory=list)
    unit: str = ""
    baseline: str | None = None  # another Figure's label; None: the row shows no ratio
    aim: str = ""
    note: str = ""  # printed instead of figures ("not installed")


def spread3(xs: list[float]) -> tuple[float, float, float]:
    return min(xs), statistics.median(xs), max(xs)


def table_json(table: Table) -> dict[str, object]:
    """A printed table as data (`bench --json`): its title and rows of cell texts by column."""
    cols = [str(c.header) for c in table.columns]
    cells = [[str(x) for x in c.cells] for c in table.columns]
    return {"title": str(table.title), "rows": [dict(zip(cols, row)) for row in zip(*cells)]}


def figure_table(title: str, figures: list[Figure], fmt: str = ",.0f", ratio_label: str = "÷ baseline") -> Table:
    """A table of figures: min / median / max, the median's ratio to its baseline's median
    (samples paired round by round when both have as many: the ratio's own min / max), the aim."""
    t = Table(title=title)
    for col in ("figure", "min", "median", "max", ratio_label, "aim"):
        t.add_column(col)
    by_label = {f.label: f for f in figures}
    for f in figures:
        if not f.samples:
            t.add_row(f.label, f.note or "—", "", "", "", f.aim)
            continue
        lo, med, hi = spread3(f.samples)
        ratio = ""
        base = by_label.get(f.baseline) if f.baseline else None
        if base is not None and base.samples:
            if len(base.samples) == len(f.samples):
                r = [a / b for a, b in zip(f.samples, base.samples)]
                rlo, rmed, rhi = spread3(r)
                ratio = f"{rmed:.2f} ({rlo:.2f}–{rhi:.2f})"
            else:
                ratio = f"{med / statistics.median(base.samples):.2f}"
        unit = f" {f.unit}" if f.unit else ""
        t.add_row(f.label, *(f"{x:{fmt}}{unit}" for x in (lo, med, hi)), ratio, f.aim)
    return t
