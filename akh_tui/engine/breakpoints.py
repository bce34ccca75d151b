"""Breakpoints: stop a run when a tool is chosen, a veto fires, a goal changes status, or a
condition over the cycle record holds. Conditions are parsed, never eval-ed:

    tool=shell_exec          the chosen tool
    veto  |  veto=NAME       any veto, or the named pattern, fires
    goal                     a goal's status changed this cycle
    phase=NAME               stop before phase NAME (observe, orient, decide, act, learn) of
                             every cycle: the door's `stop_before` (never fires on a record)
    <path> <op> <value>      e.g. `score < 0.3`, `coverage >= 0.5`, `wm.size > 90`,
                             `decide.tool == reason`; op one of < <= > >= == !=; path is dotted
                             keys into the cycle record (SPEC §11), list items by index, plus
                             the shorthands `score` (the chosen candidate's) and `coverage`.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable

from .errors import InputError

OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt,
}
_CONDITION = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$")
_PATH_PART = re.compile(r"^[A-Za-z_]\w*$|^\d+$")
PHASE_NAMES = ("observe", "orient", "decide", "act", "learn")  # agent.PHASES (no engine import cycle here)


@dataclass(frozen=True)
class Breakpoint:
    spec: str
    kind: str  # tool | veto | goal | phase | condition
    name: str | None = None
    path: tuple[str, ...] = ()
    op: str | None = None
    value: float | str | None = None

    def check(self, record: dict, previous: dict | None) -> str | None:
        """Why this breakpoint fires on `record`, or None."""
        if self.kind == "phase":
            return None  # a phase breakpoint stops part-way through a cycle: see `stop_phases`
        if self.kind == "tool":
            tool = record["decide"]["tool"]
            return f"{tool} was chosen" if tool == self.name else None
        if self.kind == "veto":
            act = record["act"]
            if act.get("vetoed") and (self.name is None or act.get("veto") == self.name):
                return f"veto '{act.get('veto')}' fired on {record['decide']['tool']}"
            return None
        if self.kind == "goal":
            before = {g["id"]: g["status"] for g in (previous or {}).get("goals", [])}
            changed = [f"#{g['id']} {before.get(g['id'], 'new')} → {g['status']}" for g in record["goals"]
                       if before.get(g["id"]) != g["status"] and (previous is not None or g["status"] != "active")]
            return "goal status changed: " + ", ".join(changed) if changed else None
        actual = resolve(record, self.path)
        if actual is None or isinstance(actual, (dict, list)) or self.op is None:
            return None
        if isinstance(self.value, float):
            if isinstance(actual, bool) or not isinstance(actual, (int, float)):
                return None
            hit = OPS[self.op](float(actual), self.value)
        else:
            if self.op not in ("==", "!="):
                return None
            hit = OPS[self.op](str(actual).lower() if isinstance(actual, bool) else str(actual), self.value)
        return f"{'.'.join(self.path)} = {actual!r} ({self.spec})" if hit else None


def resolve(record: dict, path: tuple[str, ...]) -> Any:
    if path == ("score",):
        chosen = record["decide"]["tool"]
        return next((c["score"] for c in record["decide"]["candidates"] if c["tool"] == chosen), None)
    if path == ("coverage",):
        return record["act"]["coverage"]
    node: Any = record
    for part in path:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def parse(spec: str, field: str = "--break") -> Breakpoint:
    text = spec.strip()
    if not text:
        raise InputError("empty breakpoint", field=field)
    m = re.fullmatch(r"(tool|veto|phase)\s*=\s*([\w.-]+)", text)  # a single '=': not the == of a condition
    if m and m.group(1) == "phase" and m.group(2) not in PHASE_NAMES:
        raise InputError(f"unknown phase {m.group(2)!r} in breakpoint {spec!r}: one of {', '.join(PHASE_NAMES)}",
                         field=field)
    if m:
        return Breakpoint(text, m.group(1), name=m.group(2))
    if text in ("veto", "goal"):
        return Breakpoint(text, text)
    m = _CONDITION.match(text)
    if not m:
        raise InputError(
            f"cannot read breakpoint {spec!r}: use tool=NAME, veto, veto=NAME, goal, phase=NAME, or '<path> <op> <value>' "
            f"with op one of < <= > >= == !=", field=field)
    path = tuple(m.group(1).split("."))
    if not all(_PATH_PART.match(p) for p in path):
        raise InputError(f"bad path {m.group(1)!r} in breakpoint {spec!r}", field=field)
    op, raw = m.group(2), m.group(3)
    value: float | str
    try:
        number = float(raw)
        if not math.isfinite(number):
            raise ValueError
        value = number
    except ValueError:
        if op not in ("==", "!="):
            raise InputError(f"{op} needs a number, got {raw!r} in breakpoint {spec!r}", field=field) from None
        value = raw
    return Breakpoint(text, "condition", path=path, op=op, value=value)


def first_hit(breakpoints: list[Breakpoint], record: dict, previous: dict | None) -> str | None:
    """'<spec>: <why>' for the first breakpoint that fires, in the order they were given."""
    for bp in breakpoints:
        why = bp.check(record, previous)
        if why is not None:
            return f"breakpoint '{bp.spec}' fired: {why}"
    return None


def stop_phases(breakpoints: list[Breakpoint]) -> set[str]:
    """The phases `phase=NAME` breakpoints stop before."""
    return {bp.name for bp in breakpoints if bp.kind == "phase" and bp.name}
