"""Soar's own words parsed: `preferences <state> operator --names` into candidates (value,
probability, the rules that proposed and scored each), `print --stack` into the goal stack."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ENTRY = re.compile(r"^\s+(\S+) \(([^)]*)\)\s*(.*)$")
_FROM = re.compile(r"^\s+From (\S+)")
_VALUE = re.compile(r"=\s*(-?[0-9.eE+-]+)")
_PERCENT = re.compile(r"\(([0-9.]+)%\)")
_STACK = re.compile(r"^\s*:\s*(==>S|O):\s*(\S+)(?:\s+\((.*)\))?")


@dataclass
class Operator:
    """One operator's preferences, as Soar prints them."""

    id: str
    name: str
    proposed_by: list[str] = field(default_factory=list)
    scored_by: list[str] = field(default_factory=list)
    rejected_by: list[str] = field(default_factory=list)
    value: float | None = None
    probability: float | None = None
    others: dict[str, list[str]] = field(default_factory=dict)  # best, worst, better, ... -> rules


def parse_preferences(text: str) -> list[Operator]:
    """The operators in `preferences S operator --names` output, in the order Soar listed them
    as acceptable."""
    ops: dict[str, Operator] = {}
    section = ""
    last: tuple[Operator, str] | None = None
    for line in text.splitlines():
        if line and not line[0].isspace():
            section = line.rstrip(":").strip()
            last = None
            continue
        m = _FROM.match(line)
        if m and last is not None:
            op, sec = last
            rule = m.group(1)
            if rule in (op.proposed_by + op.scored_by + op.rejected_by + op.others.get(sec, [])) \
                    and sec != "numeric indifferents":
                continue  # another instantiation of the same rule: one name is enough to show
            if sec == "acceptables":
                op.proposed_by.append(rule)
            elif sec == "numeric indifferents":
                op.scored_by.append(rule)
            elif sec == "rejects":
                op.rejected_by.append(rule)
            elif sec not in ("selection probabilities", "unary indifferents"):
                op.others.setdefault(sec, []).append(rule)
            continue
        m = _ENTRY.match(line)
        if not m:
            continue
        oid, name, rest = m.groups()
        op = ops.setdefault(oid, Operator(oid, name))
        last = (op, section)
        if section == "selection probabilities":
            v = _VALUE.search(rest)
            p = _PERCENT.search(rest)
            op.value = float(v.group(1)) if v else None
            op.probability = float(p.group(1)) / 100 if p else None
    return list(ops.values())


def parse_stack(text: str) -> list[tuple[str, str, str]]:
    """`print --stack` as (kind, id, what) outermost first: ("state", "S1", "") and
    ("operator", "O3", "fill"); a substate's line says its impasse ("state no-change")."""
    out = []
    for line in text.splitlines():
        m = _STACK.match(line)
        if m:
            kind = "state" if m.group(1) == "==>S" else "operator"
            out.append((kind, m.group(2), (m.group(3) or "").strip()))
    return out
