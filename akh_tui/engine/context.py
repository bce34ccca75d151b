"""What Orient found for one goal: the inputs of scoring and of every tool."""

from __future__ import annotations

from dataclasses import dataclass, field

from .goals import Goal
from .memory import Episode


@dataclass
class GoalContext:
    goal: Goal
    symbols: list[int]  # the goal's symbols (SPEC §4), by id
    adjacent: int  # non-metadata triples touching the goal's symbols (counted up to a cap)
    activation: dict[int, float]  # spreading activation, goal symbols excluded
    top: list[tuple[int, float]]  # the 5 most activated (activation desc, id asc)
    episodes: list[Episode] = field(default_factory=list)

    @property
    def K(self) -> bool:
        return self.adjacent > 0

    @property
    def I(self) -> bool:  # noqa: E743 - SPEC's name
        return bool(self.top)

    @property
    def E(self) -> bool:
        return bool(self.episodes)

    def ranked(self) -> list[int]:
        """Goal symbols first (activation 1.0, by id), then activated symbols: SPEC §5's 'first'."""
        rest = sorted(self.activation.items(), key=lambda kv: (-kv[1], kv[0]))
        return list(self.symbols) + [s for s, _ in rest]
