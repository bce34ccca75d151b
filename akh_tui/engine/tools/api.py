"""The tool interface: what one tool is, what it may read, and what it returns.

A tool is one object that owns everything about itself (docs/plugins.md):

- its declaration, a `ToolSpec` (name, archetype, capabilities, danger, input schema, keyword
  profile, what it does, and the values or range its base rule can produce with the rule in
  words: the why-not explanation proposes only a base the tool could get);
- `offer(tc, ctx)`: whether it is offered this cycle, its base score and the input it found
  in the goal (an `Offer`);
- `run(tc, ctx, arg)`: what it does with that input (a `ToolResult`, whose `evidence` is the
  part of the output that counts for the goal);
- `plan_role`: how plans use it (which strategy flag and words make a plan include it).

The eleven built-ins (tools.py) implement this interface exactly as a plugin does. Tools never
receive the agent: `ToolContext` is the narrow view they read and write through (the graph,
the rules, memory, the answers, the confinement helpers). Nothing here imports numpy or
networkx: a plugin module that imports only this stays light.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .specs import ToolSpec

if TYPE_CHECKING:
    from ..confine import policy as confine
    from ..config import AgentConfig
    from ..goals.context import GoalContext
    from ..goals.goal import Goal
    from ..knowledge.kg import KnowledgeGraph, Triple
    from ..knowledge.memory import EpisodicMemory, WorkingMemory
    from ..knowledge.rules import RuleEngine
    from ..knowledge.vsa import VSA, SymbolVectors



def __getattr__(name: str) -> Any:
    # `toolapi.Refused` (raise it from run() for a refusal the user should read as one) is
    # confine's, imported on first use: listing tools (`akh-tui tools`) stays light
    if name == "Refused":
        from ..confine.policy import Refused

        return Refused
    raise AttributeError(name)


@dataclass
class Offer:
    """A tool's answer to "can you act on this goal now?"."""

    offered: bool
    base: float = 0.0
    input: str = ""  # the input as the score table shows it
    why_not: str | None = None  # when not offered: why, in words
    arg: object = None  # the resolved input (symbol id, path, argv...) handed to run()


@dataclass
class ToolResult:
    output: str
    triples: list["Triple"] = field(default_factory=list)
    symbols: list[int] = field(default_factory=list)  # symbols returned without a triple
    # Text that counts as evidence for the goal (SPEC §8). Tools whose output merely echoes
    # their input (the goal's own symbols) or restates returned triples leave it empty, so a
    # goal is never "found" by the tool repeating the question back.
    evidence: str = ""


@dataclass(frozen=True)
class PlanRole:
    """How a plan (plan.py) takes the tool in: a plan of one of `strategies` whose strategy
    `flag` is on (text.STRATEGY_KEYWORDS: knowledge, similarity, reasoning, creation,
    external) appends the tool, when the goal's text holds one of `words` (none: always).
    `rationale` is the plan step's "why"."""

    flag: str = "external"
    words: tuple[str, ...] = ()
    strategies: tuple[str, ...] = ("explore-first", "reason-first")
    rationale: str = ""

    def joins(self, strategy: str, flags: dict[str, bool], lowered_text: str) -> bool:
        if strategy not in self.strategies or not flags.get(self.flag):
            return False
        return not self.words or any(w in lowered_text for w in self.words)


class AgentParts(Protocol):
    """What a tool context reads of its agent (cycle/agent.Agent is one). Typed here rather than
    importing the agent, which runs the tools: the tools sit below the agent, with no circle."""

    kg: "KnowledgeGraph"
    cycle: int
    config: "AgentConfig"
    rules: "RuleEngine"
    vsa: "VSA"
    symbol_vectors: "SymbolVectors"
    episodic: "EpisodicMemory"
    wm: "WorkingMemory"

    def profile_similarity(self, goal: "Goal", tool: str) -> float: ...
    def answer_for(self, goal: "Goal") -> list[str]: ...
    def confinement(self) -> "confine.Confinement": ...


class ToolContext:
    """What a tool may read and change: a narrow view of the agent. One per agent."""

    __slots__ = ("_agent",)

    def __init__(self, agent: AgentParts) -> None:
        # weak: the agent holds its context, and a context holding the agent back made every
        # dropped agent (its whole graph) wait for the cyclic collector's full pass
        self._agent = weakref.proxy(agent)

    @property
    def kg(self) -> "KnowledgeGraph":
        """The knowledge graph: read triples, add ones (with provenance 'tool:<name>')."""
        return self._agent.kg

    @property
    def cycle(self) -> int:
        return self._agent.cycle

    @property
    def config(self) -> "AgentConfig":
        """The run's settings (query_limit, activation_fanout, ...): read, never change."""
        return self._agent.config

    @property
    def rules(self) -> "RuleEngine":
        return self._agent.rules

    @property
    def vsa(self) -> "VSA":
        return self._agent.vsa

    @property
    def symbol_vectors(self) -> "SymbolVectors":
        return self._agent.symbol_vectors

    @property
    def episodic(self) -> "EpisodicMemory":
        return self._agent.episodic

    @property
    def wm(self) -> "WorkingMemory":
        return self._agent.wm

    def similarity(self, goal: "Goal", tool: str) -> float:
        """How similar the goal's text is to the tool's keyword profile (VSA, in [0, 1])."""
        return self._agent.profile_similarity(goal, tool)

    def answers(self, goal: "Goal") -> list[str]:
        """The answers the scenario gives to a question about `goal` ('s p o' lines)."""
        return self._agent.answer_for(goal)

    # ---- confinement: file, network and process access go through these only -------------
    def confinement(self) -> "confine.Confinement":
        """The run's workspace and allow-lists; Refused when no workspace is set."""
        return self._agent.confinement()

    def read_file(self, rel: str) -> str:
        from ..confine.files import read_file

        return read_file(self.confinement(), rel)

    def write_file(self, rel: str, text: str) -> int:
        from ..confine.files import write_file

        return write_file(self.confinement(), rel, text)

    def http_get(self, url: str) -> tuple[int, str]:
        from ..confine.http import http_get

        return http_get(self.confinement(), url)

    def run_program(self, argv: list[str]) -> tuple[int, str]:
        from ..confine.process import run_program

        return run_program(self.confinement(), argv)


class Tool(ABC):
    """One tool. Subclass it (or use `FunctionTool`) and register the object: entry point
    group `akh_tui.tools`, or `tools = ["pkg.module:make_tool"]` in a scenario.

    Rules: `offer` and `run` are deterministic functions of what they read through the
    context (a run is replayed by calling them again); `offer` is cheap (every cycle); `run`
    reaches files, the network or processes only through the context's confinement helpers
    and raises `Refused` for a refusal. Any other exception is a failed cycle, never a crash.
    """

    spec: ToolSpec
    plan_role: PlanRole | None = None  # None: plans never name the tool

    @property
    def name(self) -> str:
        return self.spec.name

    @abstractmethod
    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        """Whether the tool is offered for the goal now, its base score and its input."""

    @abstractmethod
    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        """Act on `arg` (the offer's resolved input)."""

    def explain_base(self, base: float) -> str:
        """The words the why-not explanation uses for this tool's base."""
        return self.spec.base_rule or "state-dependent base"


class FunctionTool(Tool):
    """A tool made of a declaration and two functions (how the built-ins are written)."""

    def __init__(self, spec: ToolSpec, offer: Callable[[ToolContext, "GoalContext"], Offer],
                 run: Callable[[ToolContext, "GoalContext", object], ToolResult],
                 plan_role: PlanRole | None = None, explain: Callable[[float], str] | None = None) -> None:
        self.spec = spec
        self._offer = offer
        self._run = run
        self.plan_role = plan_role
        self._explain = explain

    # the functions stay reachable by their old names (tests swap a run for one that raises)
    @property
    def offer_fn(self) -> Callable[[ToolContext, "GoalContext"], Offer]:
        return self._offer

    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        return self._offer(tc, ctx)

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        return self._run(tc, ctx, arg)

    def explain_base(self, base: float) -> str:
        return self._explain(base) if self._explain is not None else super().explain_base(base)


def is_tool(obj: object) -> bool:
    """A Tool, or any object shaped like one (a spec and callable offer and run)."""
    return isinstance(obj, Tool) or (
        isinstance(getattr(obj, "spec", None), ToolSpec) and callable(getattr(obj, "offer", None))
        and callable(getattr(obj, "run", None)))
