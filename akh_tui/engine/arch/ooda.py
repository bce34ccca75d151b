"""Our OODA engine as an architecture (adapter.py): the Agent, unchanged, seen through the
adapter. A decision is one cycle (observe, orient, decide, act, learn); the candidates are the
scored tools; why-not is the decision explainer's; forcing another tool is the user's veto of
the chosen one (the OODA loop picks by score: a person steers it by approving or vetoing), as
the approval gate records it; snapshot and restore are the session store's engine state."""

from __future__ import annotations

from typing import Any, Callable

from ..cycle.agent import PHASES, Agent, Cycle
from ..cycle.state import restore, snapshot
from ..errors import InputError
from ..explain.decision import why_not_text
from .adapter import Candidate, Shown


class OodaArchitecture:
    """One Agent behind the adapter. `rebuild` makes a fresh agent of the same scenario (no
    goals added): what restore loads a snapshot into."""

    kind = "ooda"
    phases = PHASES

    def __init__(self, agent: Agent, rebuild: Callable[[], Agent]) -> None:
        self.agent = agent
        self.rebuild = rebuild
        self._cycle: Cycle | None = None
        self._last: dict[str, Any] | None = None

    @property
    def decision(self) -> int:
        return self.agent.cycle - (1 if self._cycle is not None else 0)

    @property
    def next_phase(self) -> str:
        return self._cycle.next_phase or PHASES[0] if self._cycle is not None else PHASES[0]

    @property
    def finished(self) -> bool:
        return self._cycle is None and self.agent.focus_goal() is None

    def step_phase(self) -> dict[str, Any]:
        if self._cycle is None:
            c = self.agent.begin_cycle()
            if c is None:
                raise InputError("no goal is active: the run is over", field="step")
            self._cycle = c
        c = self._cycle
        phase = c.next_phase
        result = c.run_phase()
        out: dict[str, Any] = {"phase": phase, "decision": c.number, "next": c.next_phase, "result": result}
        if c.next_phase is None:
            self._last = out["record"] = c.finish()
            self._cycle = None
        return out

    def step_decision(self) -> dict[str, Any] | None:
        if self._cycle is None and self.finished:
            return None
        while True:
            out = self.step_phase()
            if "record" in out:
                return out["record"]

    def _decide(self) -> dict[str, Any] | None:
        if self._cycle is not None and "decide" in self._cycle.results:
            return self._cycle.results["decide"]
        return self._last["decide"] if self._last is not None else None

    def candidates(self) -> list[Candidate]:
        d = self._decide()
        if d is None:
            return []
        return [Candidate(c["tool"], c["tool"], c["score"], None,
                          (f"offered by {c['tool']}" if c["offered"] else f"not offered: {c.get('why_not')}",),
                          c["tool"] == d["tool"]) for c in d["candidates"]]

    def why_not(self, candidate: str) -> list[str]:
        d = self._decide()
        if d is None:
            raise InputError("no decision yet: step a cycle first", field="why-not")
        try:
            return why_not_text({"decide": d}, candidate)
        except KeyError:
            raise InputError(f"{candidate!r} was not a candidate", field="why-not") from None

    def force(self, candidate: str | None) -> None:
        c = self._cycle
        if c is None or "decide" not in c.results or "act" in c.results:
            raise InputError("no decision is waiting before act", field="force")
        chosen = c.results["decide"]["tool"]
        decision = "approve" if candidate in (None, chosen) else "reject"
        self.agent.verdicts[c.number] = {"cycle": c.number, "decision": decision,
                                         **({"why": f"the user wanted {candidate}"} if decision == "reject" else {})}

    def shown(self) -> Shown:
        a = self.agent
        return Shown([f"{e.id}: {e.content}" for e in a.wm.entries.values()],
                     [f"#{g.id} {g.description} ({g.status})" for g in a.goals.values()])

    def seed(self, seed: int) -> None:
        # the OODA agent's seed makes its vectors when it is built (the scenario's or --seed)
        if seed != self.agent.seed:
            raise InputError(f"an OODA agent is seeded when it is built (seed {self.agent.seed}): start a new run "
                             f"with --seed {seed}", field="seed")

    def snapshot(self) -> Any:
        if self._cycle is not None:
            raise InputError("a cycle is part-way: finish or drop it before a snapshot", field="snapshot")
        return snapshot(self.agent)

    def restore(self, snap: Any) -> None:
        self.agent = restore(self.rebuild(), snap)
        self._cycle, self._last = None, None
