"""User input as command objects: what a person (or a script) does to a run between cycles.

The door (`run.py`) applies a command to the agent and records it in the session store as
`(kind, payload)`; rewinding a branch turns each stored input back into the same command and
applies it again, so a replayed history is the one the user made. A fork's edits are a command
too: they are the branch's state, restored on resume, switch and rewind like any other input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

from ..psyche.model import Psyche
from ..psyche.parts import ARCHETYPES
from ..tools.builtins import TOOL_NAMES

if TYPE_CHECKING:
    from ..cycle.agent import Agent


@dataclass(frozen=True)
class AddGoal:
    description: str
    criteria: str | None = None
    priority: int = 128
    kind: ClassVar[str] = "goal"

    def payload(self) -> Any:
        return [self.description, self.criteria, self.priority]

    def apply(self, agent: "Agent") -> list[str]:
        g = agent.add_goal(self.description, self.criteria, self.priority)
        return [f"goal #{g.id} added"]


@dataclass(frozen=True)
class EditPsyche:
    """Replace the psyche at the next cycle (SPEC §9). `toml` was validated by the caller."""

    toml: str
    source: str = "user"
    # The psyche `toml` describes, when the caller has it (the editor validated it a moment ago):
    # taken as it is, so an apply parses the user's text once. A rewind has only the text.
    psyche: Psyche | None = field(default=None, compare=False, repr=False)
    kind: ClassVar[str] = "psyche"

    def payload(self) -> Any:
        return self.toml

    def apply(self, agent: "Agent") -> list[str]:
        psyche = self.psyche.written_as(self.toml) if self.psyche is not None else Psyche.from_toml(self.toml)
        agent.replace_psyche(psyche, self.source)
        return ["psyche edited"]


@dataclass(frozen=True)
class Reflect:
    kind: ClassVar[str] = "reflect"

    def payload(self) -> Any:
        return None

    def apply(self, agent: "Agent") -> list[str]:
        agent.reflect()
        return ["reflected"]


@dataclass(frozen=True)
class Consolidate:
    kind: ClassVar[str] = "consolidate"

    def payload(self) -> Any:
        return None

    def apply(self, agent: "Agent") -> list[str]:
        agent.consolidate(reason="demand")
        return ["consolidated"]


@dataclass(frozen=True)
class MakePlan:
    goal: int
    kind: ClassVar[str] = "plan"

    def payload(self) -> Any:
        return self.goal

    def apply(self, agent: "Agent") -> list[str]:
        agent.ensure_plan(agent.goals[self.goal])
        return [f"plan for goal #{self.goal}"]


ForkEditName = Literal["name", "archetypes", "disable_tools", "goals", "psyche"]


class ForkEditError(ValueError):
    """A fork edit that is refused, naming which one (`edit`), so a front end can point at the
    field the user filled in (the CLI's flag, the fork dialog's input) without reading the words."""

    def __init__(self, edit: ForkEditName, message: str) -> None:
        self.edit: ForkEditName = edit
        super().__init__(message)


@dataclass(frozen=True)
class ForkEdits:
    """A fork's edits: {"archetypes": {"explorer": 0.9}, "psyche": TOML text,
    "goals": ["description", ...], "disable_tools": ["kg_query", ...]}."""

    edits: dict = field(default_factory=dict)
    kind: ClassVar[str] = "edits"

    def payload(self) -> Any:
        return self.edits

    def check(self, tools: tuple[str, ...] | None = None) -> None:
        """Refuse a bad edit before anything changes (ValueError naming it); `tools` are the
        run's tool names (default the built-ins)."""
        for name, weight in (self.edits.get("archetypes") or {}).items():
            if name not in ARCHETYPES or isinstance(weight, bool) or not isinstance(weight, (int, float)) \
                    or not 0 <= weight <= 1:
                raise ForkEditError("archetypes", f"archetype {name}={weight!r}: name one of {ARCHETYPES}, weight in [0, 1]")
        for tool in self.edits.get("disable_tools") or []:
            if tool not in (tools if tools is not None else TOOL_NAMES):
                raise ForkEditError("disable_tools", f"unknown tool {tool!r}")
        if "psyche" in self.edits and isinstance(self.edits["psyche"], str):
            Psyche.from_toml(self.edits["psyche"])

    def apply(self, agent: "Agent") -> list[str]:
        """What changed, in words, for the fork event."""
        self.check(agent.tool_names)
        e = self.edits
        done: list[str] = []
        if "psyche" in e:
            p = e["psyche"]
            agent.psyche = Psyche.from_toml(p) if isinstance(p, str) else p.copy()
            done.append("psyche replaced")
        for name, weight in (e.get("archetypes") or {}).items():
            agent.psyche.archetypes[name] = float(weight)
            done.append(f"{name} weight {weight}")
        for desc in e.get("goals") or []:
            g = agent.add_goal(desc, emit=False)
            done.append(f"goal #{g.id} added")
        for tool in e.get("disable_tools") or []:
            if tool not in agent.config.disabled_tools:
                agent.config.disabled_tools = [*agent.config.disabled_tools, tool]
            done.append(f"{tool} disabled")
        agent.drain_events()
        return done


@dataclass(frozen=True)
class Verdict:
    """The user's decision on the action chosen in cycle `cycle`, given before its act phase:
    approve, reject (a veto by the user) or edit (the input; only one the tool could take from
    the goal). Recorded just before that cycle, so a rewind hands it to the cycle again."""

    cycle: int
    decision: str
    input: str | None = None
    why: str | None = None
    kind: ClassVar[str] = "verdict"

    def payload(self) -> Any:
        return {"cycle": self.cycle, "decision": self.decision, "input": self.input, "why": self.why}

    def apply(self, agent: "Agent") -> list[str]:
        agent.verdicts[self.cycle] = {k: v for k, v in self.payload().items() if v is not None}
        return [f"{self.decision} for cycle {self.cycle}"]


@dataclass(frozen=True)
class Answer:
    """The person's answer to `user_interact` in cycle `cycle`: `s p o` lines (none: skipped,
    "no answer"). Recorded just before that cycle, like a verdict."""

    cycle: int
    lines: tuple[str, ...] = ()
    kind: ClassVar[str] = "answer"

    def payload(self) -> Any:
        return {"cycle": self.cycle, "lines": list(self.lines)}

    def apply(self, agent: "Agent") -> list[str]:
        agent.asked[self.cycle] = list(self.lines)
        return [f"answer for cycle {self.cycle}"]


Command = Union[AddGoal, EditPsyche, Reflect, Consolidate, MakePlan, ForkEdits, Verdict, Answer]


def from_input(kind: str, payload: Any) -> Command:
    """The command a stored input records."""
    if kind == "goal":
        return AddGoal(*payload)
    if kind == "psyche":
        return EditPsyche(payload)
    if kind == "edits":
        return ForkEdits(payload)
    if kind == "reflect":
        return Reflect()
    if kind == "consolidate":
        return Consolidate()
    if kind == "plan":
        return MakePlan(payload)
    if kind == "verdict":
        return Verdict(int(payload["cycle"]), payload["decision"], payload.get("input"), payload.get("why"))
    if kind == "answer":
        return Answer(int(payload["cycle"]), tuple(payload.get("lines") or ()))
    raise ValueError(f"unknown user input {kind!r} in the history")


def replay(agent: "Agent", inputs: list[tuple[str, Any]]) -> None:
    """Apply stored inputs again, in order (rewind, resume after a kill)."""
    for kind, payload in inputs:
        from_input(kind, payload).apply(agent)
