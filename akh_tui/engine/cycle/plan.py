"""Plans with alternating meta-strategies and backtracking (SPEC §7)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..tools.api import PlanRole

MARKERS = {"pending": ".", "active": ">", "done": "✓", "failed": "✗", "skipped": "-"}
# The words that bring the external built-ins into a plan: their declared plan roles
# (tools.py) say the same; kept here for readers of the plan rules (and plans made without
# a run's roles).
EXTERNAL_TOOLS = {
    "file_io": ("file",),
    "http_fetch": ("http", "fetch", "download"),
    "shell_exec": ("command", "shell"),
}


@dataclass(slots=True)
class PlanStep:
    index: int
    tool: str
    rationale: str
    status: str = "pending"

    @property
    def marker(self) -> str:
        return MARKERS[self.status]

    def to_dict(self) -> dict:
        return {"index": self.index, "tool": self.tool, "rationale": self.rationale, "status": self.status, "marker": self.marker}


@dataclass
class Plan:
    goal_id: int
    attempt: int
    strategy: str  # explore-first | reason-first, plus the flags that shaped it
    steps: list[PlanStep] = field(default_factory=list)
    status: str = "active"  # active | completed | failed | superseded

    @property
    def current(self) -> PlanStep | None:
        for s in self.steps:
            if s.status == "active":
                return s
        return None

    def _activate_next(self) -> None:
        for s in self.steps:
            if s.status == "pending":
                s.status = "active"
                return
        if self.status == "active":
            self.status = "completed"

    def skip_current(self) -> None:
        step = self.current
        if step is not None:
            step.status = "skipped"
            self._activate_next()

    def on_result(self, tool: str, failed: bool) -> None:
        """The active step is done when its tool ran successfully; any failure fails it and the plan."""
        step = self.current
        if step is None:
            return
        if failed:
            step.status = "failed"
            self.status = "failed"
        elif tool == step.tool:
            step.status = "done"
            self._activate_next()

    def to_dict(self) -> dict:
        return {
            "goal": self.goal_id,
            "attempt": self.attempt,
            "strategy": self.strategy,
            "status": self.status,
            "steps": [s.to_dict() for s in self.steps],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        steps = [PlanStep(s["index"], s["tool"], s["rationale"], s["status"]) for s in d["steps"]]
        return cls(d["goal"], d["attempt"], d["strategy"], steps, d["status"])


RATIONALE = {
    "kg_query": "gather what the graph knows about the goal's symbols",
    "similarity_search": "find symbols that resemble the goal's",
    "reason": "explain how the goal's symbols connect",
    "infer_rules": "derive what the rules imply",
    "synthesize_triple": "link the goal to a related, unconnected symbol",
    "memory_recall": "recall what earlier episodes learned",
    "file_io": "read or write the file the goal names",
    "http_fetch": "fetch the URL the goal names",
    "shell_exec": "run the program the goal names",
    "gap_analysis": "look for what the goal's symbols lack",
}


def make_plan(goal_id: int, text: str, flags: dict[str, bool], attempt: int, failed_tool: str | None = None,
              roles: Sequence[tuple[str, PlanRole]] | None = None) -> Plan:
    """Even attempts explore first, odd attempts reason first; flags choose the steps. The
    graph tools make up the strategies; the others join by their declared plan role
    (`roles`: (tool, PlanRole) in the run's table order; default the external built-ins')."""
    tools: list[str] = []
    if attempt % 2 == 0:
        meta = "explore-first"
        tools.append("kg_query")
        if flags.get("similarity"):
            tools.append("similarity_search")
        if flags.get("reasoning"):
            tools += ["reason", "infer_rules"]
        if flags.get("creation"):
            tools.append("synthesize_triple")
    else:
        meta = "reason-first"
        tools += ["memory_recall", "reason", "infer_rules"]
        if flags.get("knowledge") or not any(flags.values()):
            tools.append("kg_query")
        if flags.get("similarity"):
            tools.append("similarity_search")
        if flags.get("creation"):
            tools.append("synthesize_triple")
    lowered = text.lower()
    if roles is None:
        roles = [(t, PlanRole("external", words)) for t, words in EXTERNAL_TOOLS.items()]
    rationale = dict(RATIONALE)
    for tool, role in roles:
        if role.joins(meta, flags, lowered) and tool not in tools:
            tools.append(tool)
            if role.rationale:
                rationale[tool] = role.rationale
    if not tools:
        tools = ["kg_query"]
    on = [name for name, v in flags.items() if v]
    strategy = f"{meta} ({', '.join(on) if on else 'no flags'})"
    steps = [PlanStep(i, t, rationale.get(t, "")) for i, t in enumerate(tools)]
    if failed_tool is not None and steps and steps[0].tool == failed_tool:
        steps[0].status = "skipped"
        if len(steps) == 1:
            # a plan must have a step to try, or it would be "completed" before it started
            other = "gap_analysis" if failed_tool != "gap_analysis" else "kg_query"
            steps.append(PlanStep(1, other, RATIONALE.get(other, "look for what is missing")))
    plan = Plan(goal_id, attempt, strategy, steps)
    plan._activate_next()
    return plan
