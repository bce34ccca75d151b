"""What Orient found for one goal: the inputs of scoring and of every tool."""

from __future__ import annotations

from dataclasses import dataclass, field

from .goal import Goal
from ..knowledge.memory import Episode


@dataclass
class GoalContext:
    goal: Goal
    symbols: list[int]  # the goal's symbols (SPEC §4), by id
    adjacent: int  # non-metadata triples touching the goal's symbols (counted up to a cap)
    activation: dict[int, float]  # spreading activation, goal symbols excluded
    order: list[int]  # activated symbols, activation desc then id asc (SPEC §5's "first")
    episodes: list[Episode] = field(default_factory=list)

    @property
    def top(self) -> list[tuple[int, float]]:
        """The 5 most activated symbols with their activation."""
        return [(s, self.activation[s]) for s in self.order[:5]]

    @property
    def K(self) -> bool:
        return self.adjacent > 0

    @property
    def I(self) -> bool:  # noqa: E743 - SPEC's name
        return bool(self.order)

    @property
    def E(self) -> bool:
        return bool(self.episodes)

    def ranked(self) -> list[int]:
        """Goal symbols first (activation 1.0, by id), then activated symbols: SPEC §5's 'first'."""
        return list(self.symbols) + self.order
