"""A person in the loop: which chosen actions wait for the user's approval before act, and
the question `user_interact` puts to the person at the keyboard.

Rules come from the user config (`[approve] when = [...]`), a workbench toggle, or the CLI:

    tool=NAME              the chosen tool
    danger>=LEVEL          its danger level (safe < cautious < dangerous < critical); also > == <= <
    capability=NAME        it needs that capability (read_fs, write_fs, network, shell, ...)

A gate is what the door stops on, after decide and before act: {"kind": "approve", ...} for an
action a rule matches, {"kind": "ask", ...} for user_interact when the person is asked. The
person's answer is a recorded input (commands.Verdict, commands.Answer): replay and rewind
take it from the record and never ask again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError
from ..tools.specs import DANGER_LEVELS, SPEC_BY_NAME, danger_index

DECISIONS = ("approve", "reject", "edit")
DEFAULT_RULES = ("danger>=dangerous",)  # `--approve` with no [approve] table in the config
_RULE = re.compile(r"^\s*(tool|capability|danger)\s*(>=|<=|==|=|>|<)\s*([\w.-]+)\s*$")


@dataclass(frozen=True)
class Rule:
    spec: str
    key: str  # tool | capability | danger
    op: str
    value: str

    def matches(self, tool: str) -> bool:
        spec = SPEC_BY_NAME.get(tool)
        if spec is None:
            return False
        if self.key == "tool":
            return tool == self.value
        if self.key == "capability":
            return self.value in spec.capabilities
        have, want = danger_index(spec.danger), danger_index(self.value)
        return {"=": have == want, "==": have == want, ">=": have >= want, "<=": have <= want,
                ">": have > want, "<": have < want}[self.op]


def parse_rule(text: str, field: str = "approve.when") -> Rule:
    m = _RULE.match(text or "")
    if not m:
        raise InputError(f"cannot read approval rule {text!r}: use tool=NAME, capability=NAME or danger>=LEVEL",
                         field=field)
    key, op, value = m.groups()
    if key != "danger" and op not in ("=", "=="):
        raise InputError(f"{key} takes = (got {op!r}) in approval rule {text!r}", field=field)
    if key == "danger" and value not in DANGER_LEVELS:
        raise InputError(f"unknown danger level {value!r} in approval rule {text!r}: one of {', '.join(DANGER_LEVELS)}",
                         field=field)
    if key == "tool" and value not in SPEC_BY_NAME:
        raise InputError(f"unknown tool {value!r} in approval rule {text!r}", field=field)
    return Rule(text.strip(), key, op, value)


def parse_rules(specs: list[str] | tuple[str, ...], field: str = "approve.when") -> list[Rule]:
    return [parse_rule(s, field) for s in specs]


def first_match(rules: list[Rule], tool: str) -> Rule | None:
    return next((r for r in rules if r.matches(tool)), None)


def check_decision(decision: str) -> None:
    if decision not in DECISIONS:
        raise InputError(f"unknown decision {decision!r}: one of {', '.join(DECISIONS)}", field="decision")


def answer_lines(text: str) -> list[str]:
    """The person's answer as `s p o` lines (blank lines dropped); a line that is not three
    words is refused with its number, so nothing is silently lost."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    for n, ln in enumerate(lines, start=1):
        if len(ln.split()) != 3:
            raise InputError(f"line {n}: {ln!r} is not 'subject predicate object' (three words)", field="answer")
    return lines
