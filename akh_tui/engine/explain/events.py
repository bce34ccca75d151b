"""Events between cycles (SPEC §11) in words: the one place the workbench's status line, the
CLI and reports take them from, so a fork or a reflection reads the same wherever it is shown.

`detail=True` adds what changed (a reflection's adjustments and archetype moves), for a
report or a terminal; `dated=False` leaves out "at cycle N" where the cycle is shown beside it
(a report's row).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def event_words(ev: Mapping[str, Any], detail: bool = False, dated: bool = True) -> str:
    """What happened, in one line (an event from a record, a trace or the store; unknown kinds
    are named by their type)."""
    kind = ev.get("type")
    at = f" at cycle {ev['cycle']}" if dated and isinstance(ev.get("cycle"), int) else ""
    if kind == "fork":
        return (f"branch {ev.get('branch')} forked from {ev.get('parent')} after cycle {ev.get('cycle')}"
                f" ({', '.join(ev.get('edits') or []) or 'no edits'})")
    if kind == "reflection":
        if not detail:
            return f"reflection{at}"
        parts = [f"{a.get('kind')} goal #{a.get('goal')} {a.get('old')}→{a.get('new')}"
                 for a in ev.get("adjustments") or []]
        parts += [f"{p.get('archetype')} {p.get('old')}→{p.get('new')}" for p in ev.get("psyche_changes") or []
                  if p.get("kind") == "archetype"]
        return f"reflection{at}: " + ("; ".join(parts) or "no change")
    if kind == "decomposition":
        return f"goal #{ev.get('goal')} decomposed ({ev.get('mode')}){at}"
    if kind == "psyche_edit":
        cycle = ev.get("cycle")
        when = f": applies at cycle {cycle + 1}" if isinstance(cycle, int) else ""
        return f"psyche edited ({ev.get('source')}){when}"
    if kind == "goal_added":
        goal = ev.get("goal")
        gid, desc = (goal.get("id"), goal.get("description", "")) if isinstance(goal, Mapping) else (goal, "")
        desc = desc or ev.get("description", "")
        return f"goal #{gid} added" + (f": {desc}" if detail and desc else "")
    if kind == "backtrack":
        return f"backtrack on goal #{ev.get('goal')}{at}"
    if kind == "consolidation":
        return f"working memory consolidated{at}"
    return str(kind)
