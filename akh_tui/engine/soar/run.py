"""A recorded Soar run: decisions stepped through the adapter, each recorded (the candidates,
the operator selected, the goal stack), the person's forces kept with the decision they were
given at, and time travel over them: rewind to decision N is init-soar, the same seed and the
same forces replayed (adapter.py); a fork is a rewind and a different operator forced.

The records are JSON-ready and written to a trace (JSON lines: a header, then one line per
decision) when one is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Callable

from ..errors import InputError
from ..redaction import redact_obj
from .adapter import SoarArchitecture, SoarSnapshot
from .breaks import SoarBreak, decision_hit, stop_phases
from .kernel import sml
from .scenario import SoarScenario, load_soar_scenario
from .source import read_soar

TRACE_VERSION = 1


class SoarRun:
    """One run of a Soar scenario."""

    def __init__(self, scenario: SoarScenario, seed: int | None = None, trace: IO[str] | None = None) -> None:
        sml(str(scenario.path))  # missing: say how to install it before reading anything
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.arch = SoarArchitecture(read_soar(scenario.productions), self.seed, scenario.name)
        self.records: list[dict[str, Any]] = []
        self._at: list[int] = [0]  # phases run at the end of each decision (index = decision)
        self._pending: dict[str, Any] | None = None  # the decision in progress: its candidates, its selection
        self.trace = trace
        if trace is not None:
            trace.write(self.header_line() + "\n")
        # another sink of each decision's trace line (the session store: soar/recorded.py), with
        # the phases run at its end and the phase its selection was given at (None: Soar's own)
        self.on_line: Callable[[int, str, int, int | None], None] | None = None
        # a replay (replay_soar_trace): the person's selections given again at their decisions, and
        # each decision checked against the recorded one
        self.selects: dict[int, str] = {}
        self.expected: list[dict[str, Any]] | None = None
        self.divergence: str | None = None

    def header_line(self) -> str:
        """The trace's first line: the scenario, its file and the seed (secrets masked)."""
        return json.dumps(redact_obj({"type": "header", "v": TRACE_VERSION, "architecture": "soar",
                                      "scenario": self.scenario.name, "scenario_path": str(self.scenario.path),
                                      "seed": self.seed}), sort_keys=True)

    @classmethod
    def start(cls, scenario: str | Path | SoarScenario, seed: int | None = None,
              trace: IO[str] | None = None) -> "SoarRun":
        sc = scenario if isinstance(scenario, SoarScenario) else load_soar_scenario(Path(scenario))
        return cls(sc, seed, trace)

    def close(self) -> None:
        self.arch.close()

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def decision(self) -> int:
        return len(self.records)

    @property
    def finished(self) -> bool:
        return self.arch.finished

    def step_phase(self) -> dict[str, Any]:
        """One phase; the decision's record is made when its last phase ran (or the agent
        halted): `record` in what is returned. The candidates are read just before the
        decision phase, the operator selected just after it."""
        arch = self.arch
        phase = arch.next_phase
        if phase == "decision":
            self._pending = {"candidates": [c.to_dict() for c in arch.candidates()]}
            wanted = self.selects.get(len(self.records) + 1)
            if wanted is not None and not any(at >= self._at[-1] for at, _ in arch.forces):
                arch.force(wanted)
        out = arch.step_phase()
        if phase == "decision" and self._pending is not None:
            sel = self._pending["selected"] = out.get("selected")
            for c in self._pending["candidates"]:
                c["chosen"] = sel is not None and c["id"] == sel["id"]
        if self._pending is not None and (arch.next_phase == "input" or arch.finished):
            out["record"] = self._finish(self._pending)
            self._pending = None
        return out

    def _finish(self, pending: dict[str, Any]) -> dict[str, Any]:
        rec: dict[str, Any] = {"type": "decision", "decision": len(self.records) + 1,
                               "selected": pending.get("selected"), "candidates": pending["candidates"],
                               "stack": [list(x) for x in self.arch.stack()], "halted": self.arch.finished}
        forced = [(at, oid) for at, oid in self.arch.forces if self._at[-1] <= at]
        if forced:
            rec["forced"] = forced[-1][1]
        self.records.append(rec)
        self._at.append(self.arch.phases_run)
        if self.expected is not None and self.divergence is None:
            self.divergence = _differs(rec, self.expected)
        if self.trace is not None or self.on_line is not None:
            line = json.dumps(redact_obj(rec), sort_keys=True)  # a sink: secrets masked
            if self.trace is not None:
                self.trace.write(line + "\n")
            if self.on_line is not None:
                self.on_line(rec["decision"], line, self.arch.phases_run, forced[-1][0] if forced else None)
        return rec

    def step(self) -> dict[str, Any] | None:
        """The rest of the decision in progress (or the next one), recorded; None once the
        agent halted."""
        if self.arch.finished:
            return None
        while True:
            out = self.step_phase()
            if "record" in out:
                return out["record"]
            if self.arch.finished:
                return None

    def run_to(self, stops: set[str], most: int) -> tuple[int, str]:
        """Phase by phase until the next phase is one of `stops` (after at least one phase),
        the agent halts, or `most` decisions were recorded: how many were, and why it stopped."""
        start = self.decision
        while self.decision - start < most:
            if self.arch.finished:
                return self.decision - start, "halted"
            self.step_phase()
            if self.arch.next_phase in stops and not self.arch.finished:
                return self.decision - start, f"before {self.arch.next_phase}"
        return most, f"{most} decisions run"

    def run_until(self, breaks: list[SoarBreak], most: int,
                  on_record: Callable[[dict[str, Any]], None] | None = None) -> tuple[int, str]:
        """Phase by phase until a break fires (breaks.py: after the decision phase that selected
        the operator or made the impasse; before the phase), the agent halts, or `most`
        decisions were recorded: how many were, and why it stopped (the break's words)."""
        start = self.decision
        stops = stop_phases(breaks)
        watch = [b for b in breaks if b.kind != "phase"]
        while self.decision - start < most:
            if self.arch.finished:
                return self.decision - start, "halted"
            phase = self.arch.next_phase
            before = self.arch.stack() if phase == "decision" and watch else []
            out = self.step_phase()
            if "record" in out and on_record is not None:
                on_record(out["record"])
            if self.arch.finished:
                return self.decision - start, "halted"
            if phase == "decision" and watch:
                hit = decision_hit(watch, out.get("selected"), before, self.arch.stack(), self.decision + 1)
                if hit is not None:
                    return self.decision - start, hit
            if self.arch.next_phase in stops:
                return self.decision - start, f"phase {self.arch.next_phase}: before it, in decision {self.decision + 1}"
        return most, f"{most} decisions run"

    def run(self, most: int, on_record: Callable[[dict[str, Any]], None] | None = None) -> tuple[int, str]:
        """Up to `most` decisions: how many ran and why it stopped."""
        for n in range(most):
            rec = self.step()
            if rec is None:
                return n, "halted"
            if on_record is not None:
                on_record(rec)
            if rec["halted"]:
                return n + 1, "halted"
        return most, f"{most} decisions run"

    def force(self, operator: str) -> None:
        """Select `operator` at the next decision (it must be proposed there): the agent is run
        up to that decision's decision phase first."""
        while self.arch.next_phase != "decision" and not self.arch.finished:
            self.step_phase()
        self.arch.force(operator)

    def rewind(self, decision: int) -> None:
        """Back to the end of `decision` (0: the start): later records are dropped, the forces
        given up to it are kept."""
        if not 0 <= decision <= len(self.records):
            raise InputError(f"no decision {decision} (recorded: 0..{len(self.records)})", field="decision")
        phases = self._at[decision]
        self.arch.restore(SoarSnapshot(phases, tuple(i for i in self.arch.inputs if i[0] < phases)))
        del self.records[decision:]
        del self._at[decision + 1:]
        self._pending = None

    def restore_to(self, records: list[dict[str, Any]], phases: list[int], forces: list[tuple[int, str]]) -> None:
        """Back at the end of `records` (the start, or a stored run's, with the phases run at
        the end of each and the selections given on the way): Soar's own restore (init-soar,
        the seed, the phases run again in its loop with each selection at its phase), the
        records taken as they are."""
        self.records = list(records)
        self._at = [0, *phases]
        self._pending = None
        self.arch.restore(SoarSnapshot(self._at[-1], tuple((at, "select", op) for at, op in forces)))

    def fork(self, decision: int, operator: str) -> None:
        """Rewind to `decision` and force `operator` at the next one."""
        self.rewind(decision)
        self.force(operator)

    # ---- what the workbench shows and asks (the adapter's, through the run) ----------------
    @property
    def next_phase(self) -> str:
        return self.arch.next_phase

    @property
    def phases(self) -> tuple[str, ...]:
        return self.arch.phases

    def candidates(self) -> list[dict[str, Any]]:
        return [c.to_dict() for c in self.arch.candidates()]

    def why_not(self, candidate: str) -> list[str]:
        """Live (the operators proposed now, a rule's matches); else from the last decision's
        record, for an operator it had (what the workbench shows after the halt)."""
        try:
            return self.arch.why_not(candidate)
        except InputError:
            rec = self.records[-1] if self.records else None
            mine = [c for c in rec["candidates"] if c["id"] == candidate] if rec is not None else []
            if not mine or rec is None:
                raise
            return recorded_why_not(rec, mine[0])

    def shown(self) -> dict[str, Any]:
        s = self.arch.shown()
        return {"memory": s.memory, "goals": s.goals, **s.extra}

    def rules(self) -> list[str]:
        """The names of the productions loaded (`print --all`)."""
        return [ln.split()[0] for ln in self.arch._cmd("print --all").splitlines() if ln.strip()]


def recorded_why_not(rec: dict[str, Any], cand: dict[str, Any]) -> list[str]:
    """Why a recorded decision did not select `cand`, from its record alone."""
    sel = rec["selected"] or {"id": "-", "label": "no operator"}
    head = f"decision {rec['decision']}: {cand['id']} ({cand['label']})"
    if cand["chosen"]:
        return [f"{head} was selected" + (" (forced by you)" if rec.get("forced") == cand["id"] else "")]
    rejected = [x for x in cand["sources"] if x.startswith("rejected by")]
    if rejected:
        return [f"{head} was {rejected[0]}"]
    chosen = next((c for c in rec["candidates"] if c["chosen"]), None)
    theirs = f" against {chosen['value']} ({(chosen['probability'] or 0):.0%})" if chosen is not None else ""
    return [f"{head} had value {cand['value']} ({(cand['probability'] or 0):.0%} chance){theirs}; "
            f"{sel['id']} ({sel['label']}) was selected"]


def _differs(rec: dict[str, Any], expected: list[dict[str, Any]]) -> str | None:
    """Where a replayed decision differs from the recorded one, in words (None: the same)."""
    n = rec["decision"]
    if n > len(expected):
        return None  # past the end of the recording: the run goes on, nothing to compare
    want = expected[n - 1]
    got_sel, want_sel = (rec["selected"] or {}).get("id"), (want.get("selected") or {}).get("id")
    if got_sel != want_sel:
        return f"decision {n}: the trace selected {want_sel}, the replay {got_sel}"
    if [c["id"] for c in rec["candidates"]] != [c.get("id") for c in want.get("candidates", [])]:
        return f"decision {n}: other operators were proposed than the trace's"
    return None


def read_soar_trace(path: Path) -> dict[str, Any] | None:
    """A Soar trace (run.py's JSON lines): its scenario, seed, the selections recorded and the
    decisions; None when the file is no Soar trace (the OODA reader says what it is)."""
    from ..errors import read_user_file

    try:
        with open(path, "rb") as fh:  # the first line only: an OODA trace may be large
            first = fh.readline(1 << 16)
    except OSError:
        return None  # the OODA reader says why it cannot be read
    try:
        head = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(head, dict) or head.get("type") != "header" or head.get("architecture") != "soar":
        return None
    lines = read_user_file(path, "trace file").splitlines()
    records = []
    for n, line in enumerate(lines[1:], start=2):
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", file=str(path), line=n) from None
        if not isinstance(rec, dict) or rec.get("type") != "decision" or rec.get("decision") != n - 1:
            raise InputError(f"expected decision {n - 1}'s record", file=str(path), line=n, field="decision")
        records.append(rec)
    sc_path = head.get("scenario_path")
    sc = None
    if isinstance(sc_path, str) and Path(sc_path).is_file():
        sc = load_soar_scenario(Path(sc_path))
    else:
        from .scenario import find_soar

        sc = find_soar(str(head.get("scenario", "")))
    if sc is None:
        raise InputError(f"the trace's Soar scenario {head.get('scenario')!r} is not found", file=str(path), line=1,
                         field="scenario")
    seed = head.get("seed")
    if not isinstance(seed, int):
        raise InputError("the header has no seed", file=str(path), line=1, field="seed")
    selects = {r["decision"]: r["forced"] for r in records if isinstance(r.get("forced"), str)}
    return {"scenario": sc, "seed": seed, "selects": selects, "records": records}


def replay_soar_trace(path: Path) -> "SoarRun | None":
    """A Soar trace replayed: its scenario run again with its seed, the person's selections given
    at their decisions, each decision checked against the recording (`divergence`)."""
    t = read_soar_trace(path)
    if t is None:
        return None
    run = SoarRun(t["scenario"], t["seed"])
    run.selects, run.expected = t["selects"], t["records"]
    return run

