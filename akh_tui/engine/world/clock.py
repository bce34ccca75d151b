"""The world's virtual clock and its schedule (SPEC §13): integer milliseconds, rounds from 1,
each round's order fixed at its start. Nothing here reads wall-clock time."""

from __future__ import annotations

import random
from typing import Sequence


def seconds(ms: int) -> float:
    """What records write as `clock`: the clock's milliseconds / 1000."""
    return ms / 1000


def round_order(ids: Sequence[str], eligible: Sequence[str], schedule: str, seed: int, rnd: int) -> list[str]:
    """The round's turn order: the ids in file order (round-robin) or shuffled by a generator
    keyed by the world seed and the round alone (so a round's order does not depend on what
    happened before it), ineligible agents dropped after the shuffle."""
    order = list(ids)
    if schedule == "shuffle":
        random.Random(f"{seed}:{rnd}").shuffle(order)
    keep = set(eligible)
    return [a for a in order if a in keep]


def earliest_wake(wakes: Sequence[int | None]) -> int | None:
    """The first wake time among sleeping agents (None for one that waits for nothing that can come)."""
    known = [w for w in wakes if w is not None]
    return min(known) if known else None
