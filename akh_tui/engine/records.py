"""The record types the front ends read: the cycle record (SPEC §11), the events between
cycles, and the view the workbench draws. Plain JSON-able dicts, typed here so that mypy checks
the engine's producers and the front ends' readers against one declaration.

Vocabularies are `Literal`s: a status, a danger level or an event type outside them is a bug
the type checker names.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

GoalStatus = Literal["active", "suspended", "completed", "failed"]
Progress = Literal["completed", "advanced", "no_change", "failed"]
Danger = Literal["safe", "cautious", "dangerous", "critical"]
EventType = Literal["reflection", "psyche_edit", "goal_added", "consolidation", "decomposition", "fork", "backtrack"]
Archetype = Literal["sage", "healer", "explorer", "guardian"]


class GoalSummary(TypedDict):
    id: int
    description: str
    status: GoalStatus
    priority: int
    parent: int | None
    coverage: float


class CandidateRow(TypedDict):
    tool: str
    offered: bool
    why_not: str | None
    score: float
    base: float
    recency: float
    novelty: float
    episodic: float
    pressure: float
    archetype: float
    plan: float


class GateAnswer(TypedDict, total=False):
    """A world gate's answer, as `decide.user` records it (world/gate.py)."""
    decision: Literal["approve", "reject", "choose"]
    tool: str
    by: str  # user, timeout, auto or a seat's name
    why: str
    proposed: str  # a choose: the tool the decider had picked


class Decide(TypedDict, total=False):
    tool: str
    input: str
    breakdown: str
    plan_step: str | None
    candidates: list[CandidateRow]
    decider: str
    llm: dict[str, Any]
    workflow: dict[str, Any]
    soar: dict[str, Any]
    user: GateAnswer  # only in a world step a gate stopped (world/gate.py)


class Act(TypedDict, total=False):
    success: bool
    vetoed: bool
    veto: str | None
    bias: float | None
    bias_patterns: list[str]
    output: str
    progress: Progress
    coverage: float
    missing: list[str]
    approval: dict[str, Any]  # only in a cycle the user decided before act: decision, input, why


class CycleRecord(TypedDict):
    type: Literal["cycle"]
    v: int
    cycle: int
    goal: dict[str, Any]
    observe: dict[str, Any]
    orient: dict[str, Any]
    decide: Decide
    act: Act
    goals: list[GoalSummary]
    plan: dict[str, Any] | None
    wm: dict[str, Any]
    psyche: dict[str, Any]


class PendingAct(TypedDict, total=False):
    """A cycle part-way's act as the panes show it: act's fields once act has run, and a
    progress that says learn has not (not one of `Progress`: the cycle has none yet)."""
    success: bool
    vetoed: bool
    veto: str | None
    bias: float | None
    bias_patterns: list[str]
    output: str
    progress: str


class PendingCycle(TypedDict):
    """A cycle stepped part-way by phase (decide has run, it is not recorded yet): what the
    score table and the Why pane read of it in place of a cycle record."""
    cycle: int
    decide: Decide
    act: PendingAct
    pending: Literal[True]


class CycleSummary(TypedDict):
    """The few figures of one cycle the plots screen draws (Run.summaries): read from the store
    without decoding the whole record, so a 10,000-cycle branch stays quick."""
    cycle: int
    tool: str
    vetoed: bool
    veto: str | None
    goal: int
    archetypes: dict[str, float]
    wm_size: int
    wm_capacity: int
    consolidated: int
    scores: dict[str, float | None]  # None: not offered
    coverage: dict[int, float]  # goal id -> coverage


class _EventBase(TypedDict):
    v: int
    cycle: int


class Adjustment(TypedDict, total=False):
    """One thing reflection changed or suggested: boost_priority, demote_priority and
    suggest_decomposition name a goal; trigger_consolidation the pressure that set it off."""
    kind: str
    goal: int
    old: int
    new: int
    stagnant: int
    pressure: float


class ArchetypeChange(TypedDict):
    kind: Literal["archetype"]
    archetype: str
    tool: str
    rate: float
    old: float
    new: float


class IndividuationChange(TypedDict):
    kind: Literal["individuation"]
    old: float
    new: float


class DominantChange(TypedDict):
    kind: Literal["dominant"]
    old: str
    new: str


PsycheChange = ArchetypeChange | IndividuationChange | DominantChange


class ReflectionEvent(_EventBase):
    type: Literal["reflection"]
    adjustments: list[Adjustment]
    tool_rates: dict[str, float]
    psyche_changes: list[PsycheChange]
    psyche: dict[str, object]  # the psyche's snapshot after it


class PsycheEditEvent(_EventBase):
    type: Literal["psyche_edit"]
    source: str
    psyche: dict[str, object]
    vetoes: list[str]
    biases: list[str]


class GoalAddedEvent(_EventBase):
    type: Literal["goal_added"]
    goal: GoalSummary
    criteria: str | None


class EpisodeSummary(TypedDict):
    id: int
    goal: int | None
    summary: str
    tags: list[str]


class ConsolidationEvent(_EventBase):
    type: Literal["consolidation"]
    reason: str
    episodes: list[EpisodeSummary]
    removed: list[int]
    wm_size: int


class ChildGoal(GoalSummary):
    criteria: str | None


class DecompositionEvent(_EventBase):
    type: Literal["decomposition"]
    goal: int
    mode: str
    reason: str
    children: list[ChildGoal]


class ForkEvent(_EventBase):
    type: Literal["fork"]
    branch: str
    parent: str
    edits: list[str]  # what was changed, in words


class BacktrackEvent(_EventBase):
    type: Literal["backtrack"]
    goal: int
    attempt: int
    failed_tool: str
    strategy: str


# one class per kind, told apart by `type` (a check of ev["type"] narrows to the kind)
Event = (ReflectionEvent | PsycheEditEvent | GoalAddedEvent | ConsolidationEvent | DecompositionEvent | ForkEvent
         | BacktrackEvent)


class PsycheView(TypedDict, total=False):
    archetypes: dict[str, float]
    individuation: float
    shadow_encounters: int
    dominant: str
    persona: str
    vetoes: list[str] | None  # pattern names, where known (live)
    biases: list[str] | None
    vetoes_configured: int
    biases_configured: int
    vetoes_fired: int
    pending: bool


class View(TypedDict):
    cycle: int
    seed: int | None
    focus: int | None
    goals: list[dict[str, Any]]
    plans: dict[int, dict[str, Any]]
    wm: dict[str, Any]
    episodes: int
    model_memory: str | None
    psyche: dict[str, Any]
    replay: bool
