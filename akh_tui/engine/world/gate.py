"""The world gate: a person (or a script, a class's seat, a deadline) in the loop of a world.

A gated agent's turn stops after decide and before act: the door builds a `Proposal` (what the
agent is about to do, the offered tools best first, the decider's reason), asks an `Answerer`,
and goes on with its `Answer`:

- approve: act runs the proposed tool, as it would have without the gate;
- reject: a veto by the user: act does not run and the step fails (SPEC §13 counts it as any
  failed step: the errors, the backoff);
- choose: act runs another *offered* tool with its offered input (a tool not offered is refused
  naming it, and nothing of the turn is committed).

The answer is recorded in the step's cycle record as `decide.user = {decision, tool, by, why}`
(`proposed` too, for a choose: the tool the decider had picked), only when a gate fired, so a
world with no gate keeps its bytes. A replay (rewind, fork, resume) takes each answer from the
record (`Recorded`) and never asks again.

The step is committed only when the turn completes: nothing is recorded while a gate waits, and
an answerer that raises (`GateClosed`: the person quit) leaves the world at its last committed
step (world/worldrun.py goes back to it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Mapping

from ..errors import InputError
from ..redaction import redact

if TYPE_CHECKING:
    from ..cycle.agent import Cycle
    from ..cycle.scoring import Candidate
    from ..store.worldstore import StepRow

DECISIONS = ("approve", "reject", "choose")
WHY_CHARS = 500  # a reason typed in a tab or on the terminal is kept, not a book


@dataclass(frozen=True)
class Proposal:
    """What the agent is about to do: the decider's choice and the tools it could have taken."""
    round: int
    agent: str
    tool: str
    input: str | None
    candidates: tuple[dict[str, Any], ...]  # each {"tool", "utility", "input"}: the offered ones, best first
    why: str  # one line: the decider's reason (table, model, workflow...)


@dataclass(frozen=True)
class Answer:
    """The answer to a proposal. `by`: "user", "timeout" (the table's choice after a deadline),
    "auto" (--auto-approve/--auto-reject) or a seat's name."""
    decision: Literal["approve", "reject", "choose"]  # choose: another OFFERED tool (with its offered input)
    tool: str | None = None
    by: str = "user"
    why: str = ""


Answerer = Callable[[Proposal], Answer]


class GateClosed(Exception):
    """Raised by an answerer that will not answer (the workbench quit while its dialog was
    open): the turn is dropped, nothing of it committed."""


class Recorded:
    """The answers a branch's records hold, by step name (round, agent): what a replay gives a
    gate instead of asking. A step recorded without an answer replays without a gate, whoever
    is gated now."""

    def __init__(self, answers: Mapping[tuple[int, str], Answer] | None = None) -> None:
        self.answers = dict(answers or {})

    def fires(self, round: int, agent: str) -> bool:
        return (round, agent) in self.answers

    def __call__(self, p: Proposal) -> Answer:
        return self.answers[(p.round, p.agent)]

    @classmethod
    def from_rows(cls, rows: "Iterable[StepRow]") -> "Recorded":
        """From a branch's recorded steps."""
        out: dict[tuple[int, str], Answer] = {}
        for row in rows:
            if row.agent is None:
                continue
            got = recorded_answer(row.lines)
            if got is not None:
                out[(row.round, row.agent)] = got
        return cls(out)


class Counterfactual(Recorded):
    """The recorded answers, given in a world the branch never had (who-moved's proof: a mover's
    action replaced with `noop`). A recorded answer is about the proposal it was given to, so it
    replays only where the counterfactual proposal is that one: approve and reject when the tool
    proposed is the same, choose when the tool proposed is the recorded `proposed` and the chosen
    tool is offered. Any other proposal is approved as the decider proposed it (nobody is there
    to ask; `by` "proof") and noted in `unreplayed`, so the proof's words can say so. The steps
    in `ungated` (the noop turn) fire no gate: nobody answered a noop."""

    def __init__(self, answers: Mapping[tuple[int, str], Answer], proposed: Mapping[tuple[int, str], str | None],
                 ungated: Iterable[tuple[int, str]] = ()) -> None:
        skip = set(ungated)
        super().__init__({k: a for k, a in answers.items() if k not in skip})
        self.proposed = dict(proposed)
        self.unreplayed: list[dict[str, Any]] = []

    def __call__(self, p: Proposal) -> Answer:
        a = self.answers[(p.round, p.agent)]
        asked = self.proposed.get((p.round, p.agent))
        offered = {c["tool"] for c in p.candidates}
        if asked is None or asked != p.tool:
            why = "another proposal"  # the agent proposes another tool: nobody was asked about it
        elif a.decision == "choose" and a.tool not in offered:
            why = "not offered"  # the same proposal, but the tool chosen is not there to choose
        else:
            return a
        self.unreplayed.append({"round": p.round, "agent": p.agent, "recorded": a.decision, "by": a.by,
                                "recorded_tool": a.tool, "recorded_proposal": asked, "proposal": p.tool, "why": why})
        return Answer("approve", p.tool, by="proof", why=f"the recorded {a.decision} by {a.by} cannot be given: {why}")

    @classmethod
    def of_rows(cls, rows: "Iterable[StepRow]", ungated: Iterable[tuple[int, str]] = ()) -> "Counterfactual":
        """From a branch's recorded steps; `ungated` fire no gate."""
        answers: dict[tuple[int, str], Answer] = {}
        proposed: dict[tuple[int, str], str | None] = {}
        for row in rows:
            if row.agent is None:
                continue
            got = _recorded(row.lines)
            if got is not None:
                answers[(row.round, row.agent)], proposed[(row.round, row.agent)] = got
        return cls(answers, proposed, ungated)


def recorded_answer(lines: Iterable[str]) -> Answer | None:
    """The answer a step's cycle record holds (`decide.user`), or None (no gate fired)."""
    got = _recorded(lines)
    return None if got is None else got[0]


def _recorded(lines: Iterable[str]) -> tuple[Answer, str | None] | None:
    """The recorded answer and the tool it was given for (`proposed` for a choose, else the
    answer's own tool; None where the record does not say), or None (no gate fired)."""
    for line in lines:
        # a cheap look first: most steps fired no gate, and a rewind replays many of them
        if line.startswith('{"type":"cycle"') and '"user":{"decision":' in line:
            user = json.loads(line)["decide"].get("user")
            if not isinstance(user, dict):
                continue
            decision, tool, by, why = (user.get(k) for k in ("decision", "tool", "by", "why"))
            if decision not in DECISIONS or not isinstance(tool, (str, type(None))) or not isinstance(by, str) \
                    or not isinstance(why, str):
                # a damaged record is reported, never replayed as some other answer
                raise InputError(f"a recorded gate answer is not one the gate gives: {redact(json.dumps(user))[:200]}",
                                 field="decide.user")
            proposed = user.get("proposed") if decision == "choose" else tool
            return Answer(decision, tool, by, why), proposed if isinstance(proposed, str) else None
    return None


def proposal(rnd: int, agent: str, cycle: "Cycle", decider_kind: str, workflow: Mapping[str, Any] | None) -> Proposal:
    """The proposal of `cycle`, its decide phase run."""
    decide = cycle.results["decide"]
    offered = sorted((c for c in cycle.candidates if c.offered), key=lambda c: -c.score)  # stable: SPEC §5's order on ties
    return Proposal(rnd, agent, decide["tool"], decide.get("input"),
                    tuple({"tool": c.tool, "utility": round(c.score, 4), "input": c.input} for c in offered),
                    _why(decide, offered, decider_kind, workflow))


def _why(decide: Mapping[str, Any], offered: list["Candidate"], kind: str, workflow: Mapping[str, Any] | None) -> str:
    tool = decide["tool"]
    llm = decide.get("llm")
    if isinstance(llm, dict):
        said = llm.get("action_rationale") or llm.get("reason") or ""
        return _line(f"model: {said}" if said else f"model chose {tool}")
    if workflow is not None:
        return _line(f"workflow step {workflow.get('step')!r} (the table's best: {workflow.get('utility_tool')})")
    if str(decide.get("input", "")).startswith("the decider failed"):
        return "the decider failed: the turn would run noop and fail"
    best = next((c for c in offered if c.tool == tool), None)
    rest = next((c for c in offered if c.tool != tool), None)
    head = "table" if kind in ("utility", "plugin") or not kind else kind
    if best is None:
        return _line(f"{head}: {tool} (not among the offered tools)")
    if rest is None:
        return _line(f"{head}: {tool} {best.score:.2f}, the only tool offered")
    return _line(f"{head}: {tool} {best.score:.2f}, next {rest.tool} {rest.score:.2f}")


def _line(text: str) -> str:
    return redact(" ".join(str(text).split()))[:200]


def check_answer(p: Proposal, a: object) -> Answer:
    """The answer as recorded; InputError (naming what is wrong) for one that cannot be taken."""
    if not isinstance(a, Answer):
        raise InputError(f"the answer to {p.agent}'s proposal is not an Answer: {type(a).__name__}", field="answer")
    if a.decision not in DECISIONS:
        raise InputError(f"unknown decision {a.decision!r}: one of {', '.join(DECISIONS)}", field="answer.decision")
    if not isinstance(a.by, str) or not a.by.strip():
        raise InputError("an answer says who gave it (by: user, timeout, auto or a seat's name)", field="answer.by")
    if a.decision == "choose":
        offered = [c["tool"] for c in p.candidates]
        if a.tool not in offered:
            raise InputError(f"cannot choose {a.tool!r} for {p.agent} in round {p.round}: it is not offered "
                             f"(offered: {', '.join(offered) or 'none'})", field="answer.tool")
    elif a.tool is not None and a.tool != p.tool:
        raise InputError(f"{a.decision} is about the proposed tool {p.tool!r}, not {a.tool!r} "
                         f"(choose another offered tool instead)", field="answer.tool")
    why = redact(str(a.why or "").strip())[:WHY_CHARS]
    return replace(a, tool=a.tool if a.decision == "choose" else p.tool, by=redact(a.by.strip())[:64], why=why)


def apply(p: Proposal, a: Answer, cycle: "Cycle") -> dict[str, Any]:
    """Take answer `a` (checked) before act; returns what `decide.user` records."""
    decide = cycle.results["decide"]
    user: dict[str, Any] = {"decision": a.decision, "tool": a.tool, "by": a.by, "why": a.why}
    if a.decision == "reject":
        # the single run's user veto (cycle/agent.py phase_act): act does not run, the step fails
        cycle.agent.verdicts[cycle.number] = {"decision": "reject", "why": a.why or f"rejected by {a.by}"}
    elif a.decision == "choose":
        chosen = next(c for c in cycle.candidates if c.offered and c.tool == a.tool)
        user["proposed"] = p.tool
        cycle.chosen = chosen
        decide.update(tool=chosen.tool, input=chosen.input, breakdown=chosen.breakdown())
    return user
