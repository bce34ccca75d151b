"""Breakpoints on a Soar run (issue 30): where a run phase by phase stops (`agent run --scenario
water-jug --break …`, the Soar workbench). Parsed, never eval-ed:

    operator=NAME     an operator named NAME (its ^name; or its id, O12; or its label, `fill
                      volume 5`) is selected: the run stops right after that decision phase,
                      before the operator is applied
    impasse           a substate is made (a tie, a conflict, a state or operator no-change):
    impasse=KIND      the run stops right after the decision phase that made it; KIND one of
                      tie, conflict, constraint-failure, no-change (any of that kind), or
                      as Soar's stack says it: operator tie, state no-change, …
    phase=NAME        before phase NAME (input, propose, decision, apply, output) of each
                      decision, after at least one phase run

An operator name no production of the agent mentions (`^name NAME`) is refused before anything
runs (`check_soar_breaks`, from the `.soar` file's checked commands): a break that could never
fire is an error, not silence."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from .adapter import PHASES
from .scenario import SoarScenario
from .source import read_soar

# as `print --stack` names a substate's impasse, and the one-word kinds any of them matches
IMPASSES = ("tie", "conflict", "constraint-failure", "no-change", "state no-change", "operator no-change",
            "operator tie", "operator conflict", "operator constraint-failure")
_ID = re.compile(r"^O\d+$")


@dataclass(frozen=True)
class SoarBreak:
    kind: str  # "operator", "impasse" or "phase"
    value: str | None  # the operator, the impasse kind (None: any) or the phase
    text: str  # as the user wrote it


def parse_soar_break(spec: str, field: str = "--break") -> SoarBreak:
    text = spec.strip()
    kind, eq, value = (x.strip() for x in text.partition("="))
    if kind == "impasse" and not eq:
        return SoarBreak("impasse", None, text)
    if kind == "impasse":
        if value not in IMPASSES:
            raise InputError(f"{spec!r}: no impasse {value!r} (one of: {', '.join(IMPASSES)})", field=field)
        return SoarBreak("impasse", value, text)
    if kind == "phase":
        if value not in PHASES:
            raise InputError(f"{spec!r}: no Soar phase {value!r} (one of: {', '.join(PHASES)})", field=field)
        return SoarBreak("phase", value, text)
    if kind == "operator" and value:
        return SoarBreak("operator", value, text)
    raise InputError(f"{spec!r}: a Soar run stops at operator=NAME, impasse[=KIND] or phase=NAME "
                     "(e.g. operator=pour, impasse=tie, phase=apply)", field=field)


def stop_phases(breaks: list[SoarBreak]) -> set[str]:
    return {b.value for b in breaks if b.kind == "phase" and b.value}


def check_names(breaks: list[SoarBreak], productions: str, field: str = "--break") -> None:
    """Refuse an operator break naming what no production mentions (`productions`: the
    agent's rules as Soar prints them)."""
    words = productions.split()
    names = {words[i + 1].strip("|)}") for i, w in enumerate(words[:-1]) if w == "^name"}
    for b in breaks:
        if b.kind == "operator" and b.value and not _ID.match(b.value) and b.value.split()[0] not in names:
            raise InputError(f"{b.text!r}: no production names an operator {b.value.split()[0]!r} (its operators: "
                             f"{', '.join(sorted(names)) or 'none'})", field=field)


def check_soar_breaks(breaks: list[SoarBreak], scenario: SoarScenario, field: str = "--break") -> None:
    """check_names against the scenario's productions, read as a run reads them (nothing run)."""
    if any(b.kind == "operator" for b in breaks):
        check_names(breaks, "\n".join(c.text for c in read_soar(scenario.productions)), field)


def decision_hit(breaks: list[SoarBreak], selected: dict[str, Any] | None, before: list[tuple[str, str, str]],
                 after: list[tuple[str, str, str]], decision: int) -> str | None:
    """What fired in the decision phase just run (decision `decision`): an operator break on the
    operator it selected, or an impasse break on a substate it made; None when nothing did."""
    if selected is not None:
        label = str(selected.get("label", ""))
        for b in breaks:
            if b.kind == "operator" and b.value and (b.value in (selected["name"], selected["id"], label)
                                                     or label.startswith(b.value + " ")):
                return f"operator {b.value}: decision {decision} selected {selected['id']} {label} (not yet applied)"
    old = {i for kind, i, _ in before if kind == "state"}
    made = [(i, what) for kind, i, what in after if kind == "state" and i not in old]
    for b in breaks:
        if b.kind != "impasse":
            continue
        for i, what in made:
            if b.value is None or b.value == what or b.value in what.split():
                return f"impasse: decision {decision} made {i} ({what})"
    return None
