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

One validator (`parse`) serves the command line (`--break`), the user config and the
workbench: an unknown tool, a path the cycle record does not have, or an order comparison on
text is refused with the reason, never accepted to silently never fire. A condition fires when
it becomes true (it did not hold on the previous cycle), not on every cycle while it holds.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import InputError
from ..records import CycleRecord
from ..tools.specs import TOOL_NAMES, unknown_tool

# The cycle record's shape (SPEC §11), for checking a condition's path before it is used:
# a dict maps keys to their shape; "*" matches any key; a one-item list is a list of that
# shape; "n" a number, "s" text, "b" true/false, "?" anything (free-form).
_CANDIDATE = {"tool": "s", "offered": "b", "why_not": "s", "score": "n", "base": "n", "recency": "n",
              "novelty": "n", "episodic": "n", "pressure": "n", "archetype": "n", "plan": "n", "input": "s"}
_GOAL = {"id": "n", "description": "s", "status": "s", "priority": "n", "parent": "n", "coverage": "n"}
RECORD_SHAPE: dict = {
    "type": "s", "v": "n", "cycle": "n",
    "goal": {"id": "n", "description": "s"},
    "observe": {"goals": ["n"], "wm_size": "n", "recent": [{"id": "n", "kind": "s", "content": "s"}],
                "episodes": ["n"]},
    "orient": {"adjacent": {"*": "n"}, "activated": [{"symbol": "s", "activation": "n"}], "learnings": ["s"],
               "pressure": "n", "K": "b", "I": "b", "E": "b"},
    "decide": {"tool": "s", "input": "s", "breakdown": "s", "plan_step": "s", "candidates": [_CANDIDATE],
               "decider": "s", "llm": "?"},
    "act": {"success": "b", "vetoed": "b", "veto": "s", "bias": "n", "bias_patterns": ["s"], "output": "s",
            "progress": "s", "coverage": "n", "missing": ["s"]},
    "goals": [_GOAL],
    "plan": {"goal": "n", "attempt": "n", "strategy": "s", "status": "s",
             "steps": [{"index": "n", "tool": "s", "rationale": "s", "status": "s", "marker": "s"}]},
    "wm": {"size": "n", "capacity": "n", "evicted": ["n"], "consolidated": ["n"]},
    "psyche": {"archetypes": {"sage": "n", "healer": "n", "explorer": "n", "guardian": "n"}, "individuation": "n",
               "shadow_encounters": "n", "dominant": "s", "persona": "s"},
    "score": "n",  # shorthands
    "coverage": "n",
}
TOOL_FIELDS = (("decide", "tool"), ("decide", "plan_step"))  # paths whose value is a tool name


def path_kind(path: tuple[str, ...]) -> str:
    """The kind of value at `path` ("n", "s", "b", "?"), or ValueError naming the first part
    the record does not have."""
    shape: object = RECORD_SHAPE
    for depth, part in enumerate(path):
        where = ".".join(path[:depth]) or "the cycle record"
        if shape == "?":
            return "?"
        if isinstance(shape, list):
            if not part.isdigit():
                raise ValueError(f"{where} is a list: use an index (e.g. {where}.0), not {part!r}")
            shape = shape[0]
        elif isinstance(shape, dict):
            if part in shape:
                shape = shape[part]
            elif "*" in shape:
                shape = shape["*"]
            else:
                raise ValueError(f"{where} has no {part!r} (it has: {', '.join(k for k in shape if k != '*')})")
        else:
            raise ValueError(f"{where} is a value, not a table: nothing under it is called {part!r}")
    if isinstance(shape, (dict, list)):
        raise ValueError(f"{'.'.join(path)} is a {'list' if isinstance(shape, list) else 'table'}: "
                         f"compare one of its values")
    return str(shape)

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

    def check(self, record: CycleRecord, previous: CycleRecord | None) -> str | None:
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
            before = {g["id"]: g["status"] for g in (previous.get("goals", []) if previous is not None else [])}
            changed = [f"#{g['id']} {before.get(g['id'], 'new')} → {g['status']}" for g in record["goals"]
                       if before.get(g["id"]) != g["status"] and (previous is not None or g["status"] != "active")]
            return "goal status changed: " + ", ".join(changed) if changed else None
        if previous is not None and self._holds(previous):
            return None  # it already held: a condition fires when it becomes true
        if not self._holds(record):
            return None
        actual = resolve(record, self.path)
        return f"{'.'.join(self.path)} = {actual!r} ({self.spec})"

    def _holds(self, record: CycleRecord) -> bool:
        actual = resolve(record, self.path)
        if actual is None or isinstance(actual, (dict, list)) or self.op is None:
            return False
        if isinstance(self.value, float):
            if isinstance(actual, bool) or not isinstance(actual, (int, float)):
                return False
            return OPS[self.op](float(actual), self.value)
        if self.op not in ("==", "!="):
            return False
        return OPS[self.op](str(actual).lower() if isinstance(actual, bool) else str(actual), self.value)


def resolve(record: CycleRecord, path: tuple[str, ...]) -> Any:
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


def parse_breakpoint(spec: str, field: str = "--break", tools: "Sequence[str] | None" = TOOL_NAMES) -> Breakpoint:
    """A breakpoint spec, refused with the reason (InputError) when it could never fire. Tool
    names are checked against `tools` (a run's registry; the built-ins by default); None
    defers that check to `Run.check_breakpoints`, which knows the run's plugins."""
    text = spec.strip()

    def unknown(name: str) -> str | None:
        return unknown_tool(name, tools) if tools is not None else None

    if not text:
        raise InputError("empty breakpoint", field=field)
    m = re.fullmatch(r"(tool|veto|phase)\s*=\s*([\w.-]+)", text)  # a single '=': not the == of a condition
    if m and m.group(1) == "phase" and m.group(2) not in PHASE_NAMES:
        raise InputError(f"unknown phase {m.group(2)!r} in breakpoint {spec!r}: one of {', '.join(PHASE_NAMES)}",
                         field=field)
    if m:
        if m.group(1) == "tool" and unknown(m.group(2)):
            raise InputError(f"{unknown(m.group(2))} in breakpoint {spec!r}", field=field)
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
    try:
        kind = path_kind(path)
    except ValueError as exc:
        raise InputError(f"{exc} in breakpoint {spec!r}", field=field) from None
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
    if kind == "s" and op not in ("==", "!="):
        raise InputError(f"{'.'.join(path)} is text: compare it with == or !=, not {op}, in breakpoint {spec!r}",
                         field=field)
    if kind == "n" and isinstance(value, str):
        raise InputError(f"{'.'.join(path)} is a number: compare it with a number, not {raw!r}, in breakpoint "
                         f"{spec!r}", field=field)
    if kind == "b" and str(value).lower() not in ("true", "false"):
        raise InputError(f"{'.'.join(path)} is true or false, not {raw!r}, in breakpoint {spec!r}", field=field)
    if path in TOOL_FIELDS and isinstance(value, str) and unknown(value):
        raise InputError(f"{unknown(value)} in breakpoint {spec!r}", field=field)
    return Breakpoint(text, "condition", path=path, op=op, value=value)


def first_hit(breakpoints: list[Breakpoint], record: CycleRecord, previous: CycleRecord | None) -> str | None:
    """'<spec>: <why>' for the first breakpoint that fires, in the order they were given."""
    for bp in breakpoints:
        why = bp.check(record, previous)
        if why is not None:
            return f"breakpoint '{bp.spec}' fired: {why}"
    return None


def stop_phases(breakpoints: list[Breakpoint]) -> set[str]:
    """The phases `phase=NAME` breakpoints stop before."""
    return {bp.name for bp in breakpoints if bp.kind == "phase" and bp.name}
