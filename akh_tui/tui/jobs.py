"""What the UI thread asks of the engine thread, typed (the queue held strings before).

`Step` runs one cycle at once (the step key); `Cycle` is one cycle of a run and is dropped
when the run was paused meanwhile; `Wake` only cuts short the wait between a run's cycles (a
pause, a seek); `Call` runs a function there (a phase step, a reset). The engine thread
(driver.py) is the only reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Step:
    """One cycle now (a key press; stepping while running pauses instead)."""


@dataclass(frozen=True)
class Cycle:
    """One cycle of a run: skipped if the run was paused before it came up."""


@dataclass(frozen=True)
class Wake:
    """Interrupts the wait between a run's cycles: the pause or the new speed applies at once."""


@dataclass(frozen=True)
class Call:
    """A function to run on the engine thread (it holds the run while it runs)."""

    fn: Callable[[], None]


EngineJob = Step | Cycle | Wake | Call
STEP, CYCLE, WAKE = Step(), Cycle(), Wake()

# what the UI keeps of a cycle record it does not draw: (cycle, vetoed, the goals' error signal)
CycleNews = tuple[int, bool, tuple[tuple[int, float], ...]]
