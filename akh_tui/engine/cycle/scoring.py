"""Decide-phase utility scoring (SPEC §6): one Candidate per tool with every factor kept."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError

FACTORS = ("base", "recency", "novelty", "episodic", "pressure", "archetype", "plan")


@dataclass(slots=True)
class Candidate:
    tool: str
    offered: bool
    why_not: str | None
    base: float
    recency: float  # the non-negative penalty that is subtracted
    novelty: float
    episodic: float
    pressure: float
    archetype: float  # the bonus, not the weight
    plan: float
    input: str = ""
    arg: object = field(default=None, repr=False, compare=False)  # the resolved input for the tool's run

    @property
    def raw_total(self) -> float:
        return self.base - self.recency + self.novelty + self.episodic + self.pressure + self.archetype + self.plan

    @property
    def score(self) -> float:
        if not self.offered:
            return 0.0
        return max(0.0, self.raw_total)

    def breakdown(self) -> str:
        """SPEC §6's exact string: two decimals, archetype three, signs as specified."""
        arch = self.archetype + 0.0  # no "-0.000" for a zero bonus
        return (
            f"[score={self.score:.2f}: base={self.base:.2f} recency=-{self.recency:.2f}"
            f" novelty=+{self.novelty:.2f} episodic=+{self.episodic:.2f}"
            f" pressure=+{self.pressure:.2f} archetype={arch:+.3f} plan=+{self.plan:.2f}]"
        )

    def to_dict(self) -> dict:
        # spelled out (FACTORS' order) rather than getattr over FACTORS: eleven of these per cycle;
        # the score as `score` computes it (the same sum in the same order), without two calls
        score = max(0.0, self.base - self.recency + self.novelty + self.episodic + self.pressure + self.archetype
                    + self.plan) if self.offered else 0.0
        return {
            "tool": self.tool, "offered": self.offered, "why_not": self.why_not, "score": score,
            "base": self.base, "recency": self.recency, "novelty": self.novelty, "episodic": self.episodic,
            "pressure": self.pressure, "archetype": self.archetype, "plan": self.plan, "input": self.input,
        }


def choose(candidates: list[Candidate]) -> Candidate:
    """Highest score among offered candidates; ties go to the earlier tool in SPEC §5's table."""
    best: Candidate | None = None
    top = 0.0
    for c in candidates:
        if c.offered:
            score = c.score
            if best is None or score > top:
                best, top = c, score
    if best is None:  # kg_query is always offered unless it or read_kg is switched off
        # the user's settings left the agent nothing to do: theirs to change, not an engine fault
        raise InputError("no tool is offered this cycle: the run's disabled tools and capabilities leave none "
                         "(kg_query, offered whenever it may run, is among them)", field="config.disabled_tools")
    return best
