"""The architecture adapter: what the workbench needs from an agent architecture to step it,
show it and steer it, whatever the architecture. Our OODA engine is one (arch/ooda.py, over the
Agent unchanged); Soar is another (soar/adapter.py, over soar-sml).

A *decision* is one turn of the architecture's loop (an OODA cycle, a Soar decision cycle); a
*phase* is one of its named steps (observe … learn; input, propose, decision, apply, output). A
*candidate* is what a decision chooses among (a tool, an operator), with its score and where it
came from (the tool's archetype, the rule that proposed the operator)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class Candidate:
    """One choice a decision had: `id` names it to the architecture (a tool, an operator id);
    `label` is what a person reads; `value` its score; `probability` its chance of being
    picked where the architecture picks at random (None where it picks the best); `sources`
    what proposed or scored it."""

    id: str
    label: str
    value: float | None = None
    probability: float | None = None
    sources: tuple[str, ...] = ()
    chosen: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "label": self.label, "value": self.value, "probability": self.probability,
                "sources": list(self.sources), "chosen": self.chosen}


@dataclass
class Shown:
    """The state to show: working memory as lines, the goal stack (or impasse stack) outermost
    first, and anything else the architecture names (`extra`)."""

    memory: list[str] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Architecture(Protocol):
    """What a run needs of an architecture. Every method is deterministic given the seed and
    the forced choices: restore(snapshot()) and a replay of the same forces give the same
    decisions."""

    kind: str  # "ooda", "soar"
    phases: tuple[str, ...]  # in loop order

    @property
    def decision(self) -> int:
        """Decisions completed so far."""
        ...

    @property
    def next_phase(self) -> str:
        """The phase the next step_phase runs."""
        ...

    @property
    def finished(self) -> bool:
        """No further decision will run (goal reached, halted, no goal left)."""
        ...

    def step_phase(self) -> dict[str, Any]:
        """Run one phase: {"phase", "decision", "next", ...what it produced}."""
        ...

    def step_decision(self) -> dict[str, Any] | None:
        """Run to the end of the next decision: its record (None when finished)."""
        ...

    def candidates(self) -> list[Candidate]:
        """The choices of the decision in progress (or the last one between decisions)."""
        ...

    def why_not(self, candidate: str) -> list[str]:
        """Why `candidate` was not (or will not be) chosen, in the architecture's own terms."""
        ...

    def force(self, candidate: str | None) -> None:
        """The person's say on the decision in progress: None approves what the architecture
        chose; a candidate's id overrides it where the architecture allows (Soar: `decide
        select`), else vetoes the chosen one (OODA: the user's veto)."""
        ...

    def shown(self) -> Shown:
        """The state to show now."""
        ...

    def seed(self, seed: int) -> None:
        """Seed its random choices."""
        ...

    def snapshot(self) -> Any:
        """An opaque value restore() takes back to this point."""
        ...

    def restore(self, snap: Any) -> None:
        """Back to the point snapshot() was taken."""
        ...
