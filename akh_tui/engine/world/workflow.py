"""Workflows (seed 002, SPEC §13): a decider that follows a fixed list of steps, one per turn.

A step names what to do: `action` (a world action), `tool` (one of the agent's tools) or `llm`
(ask a model decider, "scripted" or "llm", which tool). Its outcome moves the workflow: the
step's transitions are tried in file order (`on = "success" | "failure"`, or `match`, a
pattern searched in the action's output); otherwise a success goes to the next step (after the
last, the first) and a failure follows `on_error`: `retry` repeats the step on the next turn up
to `max_retries` times and then skips, `skip` goes to the next step, `fail` restarts the
workflow. The utility table is still computed, and the decision records the table's choice
beside the workflow's (`decide.workflow`), so where they differ is visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..cycle.scoring import Candidate
from .actions import DeciderFailed

if TYPE_CHECKING:
    from ..cycle.agent import Agent
    from ..goals.context import GoalContext
    from ..goals.goal import Goal

ON_ERROR = ("retry", "skip", "fail")
MODEL_STEPS = ("scripted", "llm")
# the one action the table never offers: a workflow step may still choose it, with its input
UNOFFERED_OK = ("transfer",)


@dataclass(frozen=True)
class Transition:
    to: int  # step index
    on: str | None = None  # success | failure
    match: re.Pattern[str] | None = None

    def fires(self, success: bool, output: str) -> bool:
        if self.on is not None:
            return self.on == ("success" if success else "failure")
        return self.match is not None and self.match.search(output) is not None


@dataclass(frozen=True)
class Step:
    name: str
    kind: str  # action | tool | llm
    target: str  # the action's or tool's name, or the model decider's kind
    on_error: str = "retry"
    max_retries: int = 3
    input: str | None = None  # transfer's "to amount", bid's amount
    transitions: tuple[Transition, ...] = ()


@dataclass(frozen=True)
class WorkflowSpec:
    steps: tuple[Step, ...]


class WorkflowDecider:
    kind = "workflow"
    may_choose_unoffered = UNOFFERED_OK

    def __init__(self, spec: WorkflowSpec, models: dict[str, Any] | None = None) -> None:
        self.spec = spec
        self.models = models or {}  # kind -> a model decider, for llm steps
        self.index = 0
        self.retries = 0
        self.last: dict[str, Any] | None = None  # what the last choice was, for the record

    @property
    def step(self) -> Step:
        return self.spec.steps[self.index]

    def choose(self, agent: "Agent", focus: "Goal", ctx: "GoalContext", candidates: list[Candidate],
               utility: Candidate) -> tuple[Candidate, dict | None]:
        step = self.step
        self.last = {"step": step.name, "index": self.index, "retry": self.retries, "utility_tool": utility.tool}
        if step.kind == "llm":
            chosen, info = self.models[step.target].choose(agent, focus, ctx, candidates, utility)
            return chosen, info
        cand = next((c for c in candidates if c.tool == step.target), None)
        if cand is None:
            return self._failed(candidates, f"workflow step {step.name!r}: no tool {step.target!r} in this agent's tools")
        if step.input is not None:
            cand = replace(cand, input=step.input, arg=_arg(step.target, step.input, cand.arg))
        if not cand.offered and step.target not in UNOFFERED_OK:
            return self._failed(candidates, f"workflow step {step.name!r}: {step.target} is {cand.why_not or 'not offered'}")
        return replace(cand, offered=True), None

    def _failed(self, candidates: list[Candidate], why: str) -> tuple[Candidate, dict | None]:
        noop = next(c for c in candidates if c.tool == "noop")
        return replace(noop, offered=True, input=why, arg=DeciderFailed(why)), None

    def learn(self, agent: "Agent", focus: "Goal", tool: str, act: dict) -> None:
        step, success, output = self.step, bool(act["success"]), str(act["output"])
        for t in step.transitions:
            if t.fires(success, output):
                self.index, self.retries = t.to, 0
                return
        if success:
            self._next()
        elif step.on_error == "retry" and self.retries < step.max_retries:
            self.retries += 1
        elif step.on_error == "fail":
            self.index, self.retries = 0, 0
        else:  # skip, or retries used up
            self._next()

    def _next(self) -> None:
        self.index, self.retries = (self.index + 1) % len(self.spec.steps), 0

    def model_memory(self, limit: int) -> str | None:
        return None


def _arg(target: str, text: str, default: object) -> object:
    """A step's input as the action's run() takes it."""
    if target == "transfer":
        return text  # actions.parse_transfer reads "to amount"
    if target == "bid" and isinstance(default, tuple) and text.strip().isdigit():
        return (default[0], int(text.strip()))
    return default
