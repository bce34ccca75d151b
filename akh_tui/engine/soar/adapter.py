"""One Soar agent behind the architecture adapter (arch/adapter.py), over soar-sml.

- Phases: input, propose, decision, apply, output (one decision cycle); a step is
  `RunSelf(1, sml_PHASE)`, a decision runs to the next input phase.
- Candidates: the bottom state's operators, read from `preferences <state> operator --names`
  (value, selection probability, the proposing and scoring rules); read when asked, never on
  every phase (a callback on each phase costs about 24 µs: issue 30's measurement).
- Why not: the operator's preferences (rejected by, lower value) and `production matches` of
  the rules that propose it (the first condition that failed is marked `>>>>`).
- Force: `decide select <id>` before the decision phase; each force is kept with the phase it
  was given at, so a restore gives it again at the same point.
- Snapshot and restore: Soar's memory cannot be saved whole, so a snapshot is the count of
  phases run and the forces given; restore is `init-soar`, `srand` with the same seed, the
  phases run again in one call between forces (Soar's own loop, no Python per phase).

Every agent is one of the process's one kernel (kernel.py), which listens on no port."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..arch.adapter import Candidate, Shown
from .kernel import agent_name, shared_kernel, sml
from .prefs import Operator, parse_preferences, parse_stack
from .source import Command

PHASES = ("input", "propose", "decision", "apply", "output")


@dataclass(frozen=True)
class SoarSnapshot:
    """Phases run, and the inputs given on the way: (phases run when given, "select",
    "observe" or "complete", the operator id, the observation or None: the output link's
    commands marked `^status complete`)."""

    phases: int
    inputs: tuple[tuple[int, str, Any], ...]


class SoarArchitecture:
    """A Soar agent loaded from checked commands (source.read_soar), seeded with `seed`."""

    kind = "soar"
    phases = PHASES

    def __init__(self, commands: list[Command], seed: int, name: str = "soar") -> None:
        file = commands[0].file if commands else None
        self._sml = sml(file)
        self.kernel = shared_kernel(file)
        self.agent = self.kernel.CreateAgent(agent_name(name))
        self._seed = seed
        self.phases_run = 0
        self.inputs: list[tuple[int, str, Any]] = []  # (phases run when given, kind, payload): replayed by restore
        self._in_wmes: list[Any] = []  # the input link's top WMEs of the last observation
        for cmd in commands:
            out = self.agent.ExecuteCommandLine(cmd.text)
            if not self.agent.GetLastCommandLineResult():
                self.close()  # the half-loaded agent leaves the kernel
                first = cmd.text.splitlines()[0][:60]
                raise InputError(f"Soar refused `{first}`: {out.strip() or 'no reason given'}", file=cmd.file,
                                 line=cmd.line, field=cmd.word)
        # a decision is input … output: `run 1` then stops before the next input (Soar's default
        # stops before apply), so n decisions are 5n phases, as a restore counts them
        self._cmd("soar stop-phase input")
        self._cmd(f"srand {seed}")

    def close(self) -> None:
        """Destroy the agent (the kernel is the process's: kernel.py)."""
        if self.agent is not None:
            self.kernel.DestroyAgent(self.agent)
            self.agent = None

    def _cmd(self, text: str) -> str:
        return str(self.agent.ExecuteCommandLine(text))

    # ---- where it is -------------------------------------------------------------------------
    @property
    def decision(self) -> int:
        return int(self.agent.GetDecisionCycleCounter())

    @property
    def next_phase(self) -> str:
        return PHASES[int(self.agent.GetCurrentPhase())]

    @property
    def finished(self) -> bool:
        return bool(self.agent.GetRunState() == self._sml.sml_RUNSTATE_HALTED)

    # ---- stepping ----------------------------------------------------------------------------
    def run_phases(self, n: int) -> None:
        """`n` phases in Soar's own loop (no Python between them)."""
        if n > 0 and not self.finished:
            self.agent.RunSelf(n, self._sml.sml_PHASE)
        self.phases_run += n

    def step_phase(self) -> dict[str, Any]:
        phase, before = self.next_phase, self.decision
        if self.finished:
            raise InputError("the Soar agent halted: the run is over", field="step")
        self.run_phases(1)
        out: dict[str, Any] = {"phase": phase, "decision": before, "next": self.next_phase}
        if phase == "decision":
            out["selected"] = self.selected()
        return out

    def step_decision(self) -> dict[str, Any] | None:
        """The next decision whole, recorded: the candidates before the decision phase, the
        operator it selected, and the goal stack after."""
        if self.finished:
            return None
        if self.next_phase != "decision":
            self.run_phases(self._phases_to("decision"))
        if self.finished:
            return None
        cands = [c.to_dict() for c in self.candidates()]
        number = self.decision + 1
        self.run_phases(1)
        selected = self.selected()
        for c in cands:
            c["chosen"] = selected is not None and c["id"] == selected["id"]
        self.run_phases(self._phases_to("input"))
        return {"type": "decision", "decision": number, "selected": selected, "candidates": cands,
                "stack": [list(x) for x in self.stack()], "halted": self.finished}

    def run_decisions(self, n: int) -> None:
        """`n` decisions unrecorded (the adapter's fast path: one call into Soar, none of the
        checks of run_phases; a halted agent runs nothing)."""
        if n <= 0:
            return
        at = self.phases_run % len(PHASES)  # counted from input at the start: no call into Soar to ask
        if at == 0:
            self.agent.RunSelf(n)
            self.phases_run += n * len(PHASES)
        else:
            self.run_phases(n * len(PHASES) - at)

    def _phases_to(self, phase: str) -> int:
        return (PHASES.index(phase) - PHASES.index(self.next_phase)) % len(PHASES)

    # ---- what it shows ------------------------------------------------------------------------
    def stack(self) -> list[tuple[str, str, str]]:
        return parse_stack(self._cmd("print --stack"))

    def bottom_state(self) -> str:
        states = [i for kind, i, _ in self.stack() if kind == "state"]
        return states[-1] if states else "S1"

    def selected(self) -> dict[str, str] | None:
        st = self.stack()
        if st and st[-1][0] == "operator":
            return {"id": st[-1][1], "name": st[-1][2], "label": self.label(st[-1][1], st[-1][2])}
        return None

    def label(self, oid: str, name: str) -> str:
        """The operator's name and its constant arguments (`fill volume 5`)."""
        text = self._cmd(f"print {oid}").strip().strip("()")
        parts = text.split()[1:]
        args = [f"{parts[i].lstrip('^')} {parts[i + 1]}" for i in range(0, len(parts) - 1, 2)
                if parts[i] != "^name" and not _is_id(parts[i + 1])]
        return " ".join([name, *args])

    def operators(self) -> list[Operator]:
        """The operators of the lowest state that has any: in an impasse (a tie, a no-change)
        the substates have none yet, and the choice stuck is the superstate's."""
        states = [i for kind, i, _ in self.stack() if kind == "state"] or ["S1"]
        for state in reversed(states):
            ops = parse_preferences(self._cmd(f"preferences {state} operator --names"))
            if ops:
                return ops
        return []

    def candidates(self) -> list[Candidate]:
        sel = self.selected()
        out = []
        for op in self.operators():
            sources = [f"proposed by {r}" for r in op.proposed_by] + [f"scored by {r}" for r in op.scored_by]
            sources += [f"rejected by {r}" for r in op.rejected_by]
            sources += [f"{k} by {r}" for k, rs in op.others.items() for r in rs]
            prob = 0.0 if op.rejected_by and op.probability is None else op.probability
            out.append(Candidate(op.id, self.label(op.id, op.name), op.value, prob, tuple(sources),
                                 sel is not None and sel["id"] == op.id))
        return out

    def why_not(self, candidate: str) -> list[str]:
        """For an operator id or name: its preferences against the one chosen (or likeliest);
        for a rule name, or an operator no rule proposed: `production matches`, the first
        failing condition marked `>>>>`."""
        ops = self.operators()
        mine = [o for o in ops if candidate in (o.id, o.name)]
        lines: list[str] = []
        if mine:
            best = max((o for o in ops if o.probability), key=lambda o: o.probability or 0.0, default=None)
            for o in mine:
                if o.rejected_by:
                    lines.append(f"{o.id} ({o.name}) is rejected by {', '.join(o.rejected_by)}")
                elif best is not None and o is not best:
                    lines.append(f"{o.id} ({o.name}) has value {o.value} ({(o.probability or 0):.0%} chance); "
                                 f"{best.id} ({best.name}) has {best.value} ({(best.probability or 0):.0%})")
                else:
                    lines.append(f"{o.id} ({o.name}) is the likeliest choice")
            return lines
        rules = [candidate] if self.agent.IsProductionLoaded(candidate) else self._proposers(candidate)
        if not rules:
            raise InputError(f"{candidate!r} is no operator of this decision and no rule", field="why-not")
        for rule in rules:
            lines.append(f"production matches {rule}:")
            lines += [ln for ln in self._cmd(f"production matches {rule}").splitlines() if ln.strip()]
        return lines

    def _proposers(self, name: str) -> list[str]:
        listing = self._cmd("print --all")
        return [ln.split()[0] for ln in listing.splitlines() if ln.strip() and f"propose*{name}" in ln.split()[0]]

    def shown(self, depth: int = 3) -> Shown:
        st = self.stack()
        goals = [f"{i} {what}".strip() if kind == "state" else f"  operator {i} {what}" for kind, i, what in st]
        memory = [ln for ln in self._cmd(f"print --depth {depth} {self.bottom_state()}").splitlines() if ln.strip()]
        return Shown(memory, goals, {"decision": self.decision, "phase": self.next_phase})

    # ---- steering -----------------------------------------------------------------------------
    def force(self, candidate: str | None) -> None:
        if candidate is None:
            return  # Soar's own choice stands
        ids = {o.id for o in self.operators()}
        if candidate not in ids:
            raise InputError(f"{candidate!r} is not an operator proposed now (proposed: "
                             f"{', '.join(sorted(ids)) or 'none'})", field="force")
        out = self._cmd(f"decide select {candidate}")
        if not self.agent.GetLastCommandLineResult():
            raise InputError(f"Soar refused to select {candidate}: {out.strip()}", field="force")
        self.inputs.append((self.phases_run, "select", candidate))

    @property
    def forces(self) -> list[tuple[int, str]]:
        """The operators selected by the person: (phases run when given, operator id)."""
        return [(at, str(p)) for at, kind, p in self.inputs if kind == "select"]

    # ---- the input and output links (a world's observations and actions) ---------------------
    def observe(self, observation: dict[str, Any]) -> None:
        """The input link holds `observation` from now on (the last one's WMEs removed): a
        number or string becomes a WME, a table an identifier with its own, a list of tables
        one identifier per table under the same attribute. Recorded: a restore gives it again."""
        obs = json.loads(json.dumps(observation))  # a copy, and JSON only (what a trace can hold)
        self._put(obs)
        self.inputs.append((self.phases_run, "observe", obs))

    def _put(self, obs: dict[str, Any]) -> None:
        for w in self._in_wmes:
            self.agent.DestroyWME(w)
        self._in_wmes = []
        link = self.agent.GetInputLink()
        for key, value in obs.items():
            self._in_wmes += self._add(link, key, value)
        if self.agent.IsCommitRequired():
            self.agent.Commit()

    def _add(self, parent: Any, key: str, value: Any) -> list[Any]:
        a = self.agent
        if isinstance(value, bool):
            return [a.CreateStringWME(parent, key, "yes" if value else "no")]
        if isinstance(value, int):
            return [a.CreateIntWME(parent, key, value)]
        if isinstance(value, float):
            return [a.CreateFloatWME(parent, key, value)]
        if isinstance(value, str):
            return [a.CreateStringWME(parent, key, value)]
        if isinstance(value, dict):
            ident = a.CreateIdWME(parent, key)
            for k, v in value.items():
                self._add(ident, k, v)
            return [ident]
        if isinstance(value, list):
            return [w for v in value for w in self._add(parent, key, v)]
        raise InputError(f"an observation's {key!r} is {type(value).__name__}: only numbers, strings, tables "
                         "and lists of them reach the input link", field="observation")

    def commands(self) -> list[dict[str, str]]:
        """The commands the agent put on its output link since the last call, each as
        {"name", parameter: value...}; each is marked `^status complete` for the agent. The
        marking is input Soar's rules see: recorded, so a restore gives it at the same point."""
        out = []
        for i in range(self.agent.GetNumberCommands()):
            cmd = self.agent.GetCommand(i)
            row = {"name": str(cmd.GetCommandName())}
            for j in range(cmd.GetNumberChildren()):
                child = cmd.GetChild(j)
                if child.GetAttribute() != "status":
                    row[str(child.GetAttribute())] = str(child.GetValueAsString())
            out.append(row)
        self._complete()
        if out:
            self.inputs.append((self.phases_run, "complete", None))
        return out

    def _complete(self) -> None:
        for i in range(self.agent.GetNumberCommands()):
            self.agent.GetCommand(i).AddStatusComplete()
        if self.agent.IsCommitRequired():
            self.agent.Commit()
        self.agent.ClearOutputLinkChanges()

    def seed(self, seed: int) -> None:
        self._seed = seed
        self._cmd(f"srand {seed}")

    def snapshot(self) -> SoarSnapshot:
        return SoarSnapshot(self.phases_run, tuple(self.inputs))

    def restore(self, snap: SoarSnapshot) -> None:
        """init-soar, the same seed, the same phases with the same forces at the same points."""
        self._cmd("init-soar")
        self._cmd(f"srand {self._seed}")
        if self._in_wmes:
            self._put({})
        self.phases_run, self.inputs = 0, []
        for at, kind, payload in snap.inputs:
            if at > snap.phases:
                break
            self.run_phases(at - self.phases_run)
            if kind == "select":
                self._cmd(f"decide select {payload}")
            elif kind == "complete":
                self._complete()
            else:
                self._put(payload)
            self.inputs.append((at, kind, payload))
        self.run_phases(snap.phases - self.phases_run)
        self.agent.ClearOutputLinkChanges()


def _is_id(word: str) -> bool:
    return len(word) > 1 and word[0].isalpha() and word[0].isupper() and word[1:].isdigit()
