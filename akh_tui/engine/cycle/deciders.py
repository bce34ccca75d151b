"""Who decides: one protocol, three kinds of decider.

Every cycle the agent scores every tool with the utility table (SPEC §6) and hands the table
and its winner to the run's decider, which returns the candidate to act on plus what to record
about the decision (None when nothing beyond the table). `utility` takes the table's winner;
`scripted` and `llm` ask a language model (engine/llm/decider.py) and fall back to the table's winner
when the model's intent cannot be backed. The table is computed and traced whoever decides.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping, Protocol

from ..redaction import redact
from .scoring import Candidate

if TYPE_CHECKING:
    from ..goals.context import GoalContext
    from ..goals.goal import Goal
    from ..knowledge.kg import KnowledgeGraph
    from ..knowledge.memory import WorkingMemory
    from .plan import Plan


class AgentView(Protocol):
    """What a decider reads of the agent that asks it (agent.Agent is one): typed here, since
    the agent imports its deciders and a decider must not import the agent back."""

    cycle: int
    kg: "KnowledgeGraph"
    wm: "WorkingMemory"
    plans: "dict[int, Plan]"
    last_output: str
    recent_failures: "deque[str]"

    def active_goals(self) -> "list[Goal]": ...


class Decider(Protocol):
    kind: str

    def choose(self, agent: "AgentView", focus: "Goal", ctx: "GoalContext", candidates: list[Candidate],
               utility: Candidate) -> tuple[Candidate, dict | None]: ...

    def learn(self, agent: "AgentView", focus: "Goal", tool: str, act: dict) -> None: ...

    def model_memory(self, limit: int) -> str | None: ...


class UtilityDecider:
    """The utility table's winner (SPEC §6)."""

    kind = "utility"

    def choose(self, agent, focus, ctx, candidates, utility):
        return utility, None

    def learn(self, agent, focus, tool, act) -> None:
        return None

    def model_memory(self, limit: int) -> str | None:
        return None


class ModelDecider:
    """A language model proposes the action; an intent it cannot back is rejected and the
    utility choice runs. Subclasses answer `decide(context)` (engine/llm/decider.py: a live model, a
    scripted one, or the answers recorded in a run's cycle records) and keep `memory` (the
    structured working memory injected into the prompt) and `failures`."""

    kind = "llm"
    memory: Any
    failures: Any

    def decide(self, context: Mapping[str, Any]) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def model_memory(self, limit: int) -> str | None:
        return self.memory.render(limit)

    def choose(self, agent: "AgentView", focus: "Goal", ctx: "GoalContext", candidates: list[Candidate],
               utility: Candidate) -> tuple[Candidate, dict]:
        by_tool = {c.tool: c for c in candidates}
        context = {
            "cycle": agent.cycle,
            "goals": [g.summary() for g in agent.active_goals()],
            "focus": focus.summary() | {"criteria": focus.criteria, "missing": focus.missing()},
            "wm": [e.content[:200] for e in agent.wm.recent(10)],
            "last_result": agent.last_output[:500],
            "failures": list(agent.recent_failures),
            "tools": [{"name": c.tool, "offered": c.offered, "why_not": c.why_not, "input": c.input} for c in candidates],
        }
        # what a model says is foreign text (it may echo a key or a server's error body): masked
        # here, where it enters the record, for every model decider (plugins' too)
        res = self.decide(context)
        info = {"status": "accepted", "utility_tool": utility.tool, "tool": None, "input": None,
                "situation_assessment": None, "action_rationale": None, "reason": None,
                "tokens": res.get("tokens_used", 0)}
        intent = res.get("intent")
        if res.get("error"):
            info.update(status="llm_error", reason=redact(str(res["error"])))
            return utility, info
        if intent is None:
            rejected = res.get("rejected")
            info.update(status="intent_rejected", reason=redact(str(rejected)) if rejected is not None else None)
            return utility, info
        said = [k for k in ("tool", "input", "situation_assessment", "action_rationale") if isinstance(intent.get(k), str)]
        joined = "\n".join(intent[k] for k in said)
        if redact(joined) is not joined:  # one pass over the answer, as nearly always nothing is masked
            intent = {**intent, **{k: redact(intent[k]) for k in said}}
        info.update(tool=intent["tool"], input=intent["input"], situation_assessment=intent["situation_assessment"],
                    action_rationale=intent["action_rationale"])
        cand = by_tool.get(intent["tool"])
        chosen, why = back_intent(agent, cand, intent["input"]) if cand is not None and cand.offered \
            else (None, "tool not offered")
        if chosen is None:
            why = redact(why) if why else why
            info.update(status="intent_rejected", reason=why)
            self.failures.append(f"cycle {agent.cycle}: intent_rejected: {why}")
            return utility, info
        return chosen, info

    def learn(self, agent: "AgentView", focus: "Goal", tool: str, act: dict) -> None:
        mem = self.memory
        plan = agent.plans.get(focus.id)
        pending = [st.tool for st in plan.steps if st.status in ("pending", "active")] if plan else []
        mem.update(current_goal=focus.description, stage=f"cycle {agent.cycle}: {tool} -> {act['progress']}",
                   next_steps=pending)
        if act["progress"] == "completed":
            mem.add_completed(focus.description)
        elif not act["success"]:
            mem.add_lesson(f"{tool} failed on {focus.description!r}: {act['output'][:120]}")


def back_intent(agent: "AgentView", cand: Candidate, text: str) -> tuple[Candidate | None, str | None]:
    """Map the model's input onto what the tool can run. kg_query takes any known symbol;
    the external tools only the path, URL or program the goal names (a model must not be
    a way around confinement); the others resolve their input from the goal themselves."""
    text = (text or "").strip()
    if not text or text == cand.input:
        return cand, None
    if cand.tool == "kg_query":
        sid = agent.kg.lookup(text)
        if sid is None or agent.kg.symbols[sid].meta:
            return None, f"kg_query input {text!r} is not a symbol of the graph"
        return replace(cand, input=text, arg=sid), None
    if cand.tool in ("file_io", "http_fetch", "shell_exec", "user_interact"):
        return None, f"{cand.tool} input must be the one the goal names ({cand.input!r}), got {text!r}"
    return cand, None  # advisory: these tools resolve their own input from the goal
