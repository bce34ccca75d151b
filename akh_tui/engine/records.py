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


class Decide(TypedDict, total=False):
    tool: str
    input: str
    breakdown: str
    plan_step: str | None
    candidates: list[CandidateRow]
    decider: str
    llm: dict[str, Any]


class Act(TypedDict, total=False):
    success: bool
    vetoed: bool
    veto: str | None
    bias: float | None
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


class Event(TypedDict, total=False):
    type: EventType
    v: int
    cycle: int


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
