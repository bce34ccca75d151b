"""How long each part of `akh-tui bench` took, printed at its end (issue 29: the default bench
must finish in 10 minutes on a busy 2-core machine, so each part's cost has to be visible to
keep it there).

A part's wall seconds and CPU seconds: this process's user + system time and that of the
children it waited for (several parts measure a command in a process of its own, or start
the engine's figures in fresh interpreters).
"""

from __future__ import annotations

import os
import resource
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from rich.console import Console
from rich.table import Table


def cpu_seconds() -> float:
    """User + system seconds of this process and of its waited-for children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@dataclass
class Clock:
    """The parts timed so far, in order: (name, wall seconds, CPU seconds)."""

    parts: list[tuple[str, float, float]] = field(default_factory=list)
    started: tuple[float, float] = field(default_factory=lambda: (time.perf_counter(), cpu_seconds()))
    console: Console | None = None  # a terminal: each part's name is shown as it starts
    load: float = field(default_factory=lambda: os.getloadavg()[0])  # the machine's, at the start

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        if self.console is not None and self.console.is_terminal:
            self.console.print(f"[dim]{name} …[/dim]")
        t0, c0 = time.perf_counter(), cpu_seconds()
        try:
            yield
        finally:
            self.parts.append((name, time.perf_counter() - t0, cpu_seconds() - c0))

    def total(self) -> tuple[float, float]:
        """(wall, CPU) seconds since the clock was made."""
        return time.perf_counter() - self.started[0], cpu_seconds() - self.started[1]

    def table(self) -> Table:
        wall, cpu = self.total()
        t = Table(title=f"this bench: {wall / 60:.1f} minutes wall, {cpu / 60:.1f} minutes of CPU "
                        f"(this process and its children); {os.cpu_count()} cores, load average "
                        f"{self.load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end")
        for col in ("part", "wall s", "CPU s"):
            t.add_column(col)
        for name, w, c in self.parts:
            t.add_row(name, f"{w:.1f}", f"{c:.1f}")
        t.add_row("total", f"{wall:.1f}", f"{cpu:.1f}", style="bold")
        return t
