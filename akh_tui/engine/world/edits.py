"""A world fork's edits (SPEC §13: "a fork's edits may change any agent's psyche, decider,
disabled tools or goals, the limits, and the order of the rest of the round it starts in"),
as typed objects like commands.py's for a single run. Each is checked against the world it is
applied to and a bad one is an InputError naming the field; applied, each says what it did.
The edits are state of the branch: the fork saves the whole state after them (worldstore.py),
so they hold after resume and rewind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from ..errors import InputError
from ..psyche.model import Psyche

if TYPE_CHECKING:
    from .file import WorldSpec
    from .world import World


def _agent(w: "World", aid: str, field: str) -> None:
    if aid not in w.agents:
        raise InputError(f"no agent {aid!r} in this world (it has: {', '.join(w.ids)})", field=field)


@dataclass(frozen=True)
class SetPsyche:
    """Agent `agent`'s psyche becomes this one (a psyche TOML text, validated here)."""
    agent: str
    toml: str
    source: str = "fork"

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        psyche = Psyche.from_toml(self.toml, file=self.source)
        psyche.source = self.source
        w.agents[self.agent].psyche = psyche
        return {"edit": "psyche", "agent": self.agent, "source": self.source}


@dataclass(frozen=True)
class DisableTool:
    """Agent `agent` may not use `tool` (one of its tools or the world's actions)."""
    agent: str
    tool: str

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        agent = w.agents[self.agent]
        if self.tool not in agent.tool_names:
            raise InputError(f"agent {self.agent} has no tool {self.tool!r} (it has: {', '.join(agent.tool_names)})",
                             field="--disable")
        if self.tool not in agent.config.disabled_tools:
            agent.config.disabled_tools = [*agent.config.disabled_tools, self.tool]
        return {"edit": "disable", "agent": self.agent, "tool": self.tool}


@dataclass(frozen=True)
class SetOrder:
    """The order of the rest of the round under way (the agents still to take their turn in it),
    or, between rounds, of nothing: such a fork is refused (the next round's order is the
    schedule's)."""
    order: tuple[str, ...]

    def apply(self, w: "World") -> dict[str, Any]:
        if w.order is None:
            raise InputError("the fork follows the last step of a round: there is no rest of a round to reorder "
                             "(fork at an earlier step of the round)", field="--order")
        rest = w.order[w.pos:]
        if sorted(self.order) != sorted(rest):
            raise InputError(f"the rest of round {w.round} is {','.join(rest) or '(nobody)'}: --order must name "
                             f"exactly those agents, got {','.join(self.order)}", field="--order")
        w.order = [*w.order[:w.pos], *self.order]
        return {"edit": "order", "round": w.round, "order": list(self.order)}


class _NoopOnce:
    """Agent's decider for its next acting turn only: it chooses `noop` and puts the agent's
    own decider back (which then learns from the turn as from any other)."""

    def __init__(self, inner: Any, why: str) -> None:
        self.inner = inner
        self.why = why

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def choose(self, agent: Any, focus: Any, ctx: Any, candidates: list[Any], utility: Any) -> tuple[Any, None]:
        from dataclasses import replace

        agent.decider = self.inner
        noop = next(c for c in candidates if c.tool == "noop")
        return replace(noop, offered=True, input=self.why), None


@dataclass(frozen=True)
class NoopTurn:
    """Agent `agent`'s next acting turn runs `noop` instead of what its decider would choose
    (who-moved's proof, moved.py: the world without that agent's action). Held by the live
    world only, for the replay it is made for: it is not part of a saved state, so it is not
    offered to `world fork`, whose branch is saved and resumed."""
    agent: str

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        agent = w.agents[self.agent]
        if not isinstance(agent.decider, _NoopOnce):
            agent.decider = _NoopOnce(agent.decider, "fork edit: noop in place of the recorded action")
        return {"edit": "noop", "agent": self.agent}


WorldEdit = Union[SetPsyche, DisableTool, SetOrder, NoopTurn]


def apply_edits(w: "World", edits: "list[WorldEdit]", spec: "WorldSpec") -> list[dict[str, Any]]:
    """Apply every edit (all are checked: the first bad one raises before the world is used)."""
    return [e.apply(w) for e in edits]
