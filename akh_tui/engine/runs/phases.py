"""The cycle in phases and a person in the loop: one phase at a time, the approval gate before act,
user_interact's question, and dropping a cycle part-way: a part of `Run` (run.py), the one door to a
run."""

from __future__ import annotations

from . import history
from ..cycle.agent import Cycle
from .approval import answer_lines, check_decision, first_match, parse_rules
from .commands import Answer, Verdict
from ..errors import InputError
from ..explain.decision import why_chosen
from .base import RunBase


class PhaseStepping(RunBase):
    """The cycle in phases and a person in the loop."""

    @property
    def in_cycle(self) -> bool:
        """A cycle is part-way through its phases (not recorded yet)."""
        return self._cycle is not None

    @property
    def next_phase(self) -> str:
        """The phase the next step_phase runs (observe between cycles)."""
        c = self._cycle
        return c.next_phase or "observe" if c is not None else "observe"

    def phase_state(self) -> dict | None:
        """The cycle in progress: its number, the phases run and what each produced, the next
        phase, and what it waits for (None between cycles)."""
        with self.lock:
            c = self._cycle
            if c is None:
                return None
            return {"cycle": c.number, "results": dict(c.results), "next": c.next_phase, "waiting": self.waiting}

    def _gated(self) -> bool:
        return bool(self.approve_rules) or self.ask_user

    def _gate(self, c: Cycle) -> dict | None:
        """What the cycle must wait for before act, or None."""
        a = self._engine()
        decide = c.results["decide"]
        tool = decide["tool"]
        if c.number in a.verdicts or c.number in a.asked:
            return None
        rule = first_match(self.approve_rules, tool)
        if rule is not None:
            cand: dict = next((x for x in decide["candidates"] if x["tool"] == tool), {})
            return {"kind": "approve", "cycle": c.number, "tool": tool, "input": decide["input"],
                    "score": cand.get("score"), "rule": rule.spec, "goal": c.focus.description,
                    "why": why_chosen({"decide": decide})}
        if tool == "user_interact" and self.ask_user:
            return {"kind": "ask", "cycle": c.number, "tool": tool, "question": decide["input"],
                    "goal": c.focus.description}
        return None

    def step_phase(self) -> dict | None:
        """Run one phase of the cycle (a new one starts at observe) and return what it
        produced: {"cycle", "phase", "result", "next", "waiting", "record"}. `record` is set
        when the phase ended the cycle: only then are the store, the trace and the listeners
        told. Before act, an action the approval rules match (or a question for the person)
        waits: `waiting` says for what, and `decide_pending`/`answer_pending` (or the headless
        `approver`/`asker`) give it. None when no goal is active."""
        with self.lock:
            a = self._engine()
            if self._cycle is None:
                c = a.begin_cycle()
                if c is None:
                    self._emit(a.drain_events())
                    return None
                self._cycle, self._cycle_inputs, self.waiting = c, [], None
            c = self._cycle
            if c.next_phase == "act" and self.waiting is not None:
                self._ask_headless()
                if self.waiting is not None:
                    raise InputError(f"cycle {c.number} waits for your decision before act "
                                     f"({self.waiting['kind']} {self.waiting['tool']})", field="approval")
            phase = c.next_phase
            result = c.run_phase()
            out: dict = {"cycle": c.number, "phase": phase, "result": result, "next": c.next_phase,
                         "waiting": None, "record": None}
            if phase == "decide" and self._gated():
                self.waiting = self._gate(c)
                self._ask_headless()
                out["waiting"] = self.waiting
            if c.next_phase is None:
                record = c.finish()
                self._cycle = None
                out["record"] = self._recorded(record, a.drain_events(), self._cycle_inputs)
                self._cycle_inputs = []
            return out

    def _ask_headless(self) -> None:
        """A waiting cycle asks the headless callbacks, when the front end gave them."""
        w = self.waiting
        if w is None:
            return
        if w["kind"] == "approve" and self.approver is not None:
            v = self.approver(w)
            if self.waiting is not None:  # an approver may have decided itself (an accepted edit)
                self.decide_pending(v["decision"], v.get("input"), v.get("why"))
        elif w["kind"] == "ask" and self.asker is not None:
            self.answer_pending(self.asker(w))

    def decide_pending(self, decision: str, input: str | None = None, why: str | None = None) -> None:
        """The user's verdict on the action waiting for approval: approve, reject (a veto by the
        user) or edit (`input`: only one the tool could take from the goal; refused otherwise,
        and the action keeps waiting). Recorded with the cycle: replay and rewind reproduce it."""
        with self.lock:
            a, c, w = self._engine(), self._cycle, self.waiting
            if c is None or w is None or w["kind"] != "approve":
                raise InputError("no action is waiting for approval", field="approval")
            check_decision(decision)
            if decision == "edit":
                from ..cycle.deciders import back_intent

                text = (input or "").strip()
                edited, reason = back_intent(a, c.chosen, text)
                if edited is None:
                    raise InputError(f"edit refused: {reason}", field="input")
                if text and edited.input != text:  # back_intent lets these tools find their own input
                    raise InputError(f"edit refused: {c.chosen.tool} takes its input from the goal itself "
                                     f"({c.chosen.input!r}); it cannot be edited", field="input")
                input = edited.input
            verdict = Verdict(c.number, decision, input if decision == "edit" else None,
                              why or ("rejected by the user" if decision == "reject" else None))
            verdict.apply(a)
            self._cycle_inputs.append((verdict.kind, verdict.payload()))
            self.waiting = None

    def answer_pending(self, lines: list[str] | str | None) -> None:
        """The person's answer to the waiting `user_interact` question: `s p o` lines become
        triples; None or nothing is a skip ("no answer"). Recorded with the cycle."""
        with self.lock:
            a, c, w = self._engine(), self._cycle, self.waiting
            if c is None or w is None or w["kind"] != "ask":
                raise InputError("no question is waiting for an answer", field="answer")
            got = answer_lines(lines) if isinstance(lines, str) else list(lines or [])
            if isinstance(lines, list):
                answer_lines("\n".join(got))
            cmd = Answer(c.number, tuple(got))
            cmd.apply(a)
            self._cycle_inputs.append((cmd.kind, cmd.payload()))
            self.waiting = None

    def set_approval(self, specs: list[str] | None) -> list[str]:
        """Approval rules for the following cycles (None or []: off; a bad rule raises
        InputError and changes nothing). Returns the rules in force."""
        rules = parse_rules(specs or [], field="approve")
        with self.lock:
            self.approve_rules = rules
        return [r.spec for r in rules]

    def drop_cycle(self) -> bool:
        """Drop the cycle in progress: the agent is back at the last recorded state (what the
        store holds, so resume, fork and switch start from the cycle's start). False when no
        cycle was in progress."""
        with self.lock:
            if self._cycle is None:
                return False
            self._cycle, self._cycle_inputs, self.waiting = None, [], None
            st = self.store
            b, last = st.current(), st.last_cycle(st.current())
            agent = history.rewind(st, b, last, self._rebuild)
            from .commands import replay as replay_inputs

            replay_inputs(agent, st.inputs(b, last, last + 1).get(last, []))
            agent.drain_events()
            st.adopt(b, agent)
            self._adopt(agent)
            return True
