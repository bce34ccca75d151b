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
from .adapter import SoarArchitecture, SoarSnapshot
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
        self.trace = trace
        if trace is not None:
            trace.write(json.dumps({"type": "header", "v": TRACE_VERSION, "architecture": "soar",
                                    "scenario": scenario.name, "seed": self.seed}, sort_keys=True) + "\n")

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

    def step(self) -> dict[str, Any] | None:
        """The next decision, recorded; None once the agent halted."""
        rec = self.arch.step_decision()
        if rec is None:
            return None
        rec["decision"] = len(self.records) + 1
        forced = [oid for at, oid in self.arch.forces if self._at[-1] <= at]
        if forced:
            rec["forced"] = forced[-1]
        self.records.append(rec)
        self._at.append(self.arch.phases_run)
        if self.trace is not None:
            self.trace.write(json.dumps(rec, sort_keys=True) + "\n")
        return rec

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
        arch = self.arch
        if arch.next_phase != "decision":
            arch.run_phases(arch._phases_to("decision"))
        arch.force(operator)

    def rewind(self, decision: int) -> None:
        """Back to the end of `decision` (0: the start): later records are dropped, the forces
        given up to it are kept."""
        if not 0 <= decision <= len(self.records):
            raise InputError(f"no decision {decision} (recorded: 0..{len(self.records)})", field="decision")
        phases = self._at[decision]
        self.arch.restore(SoarSnapshot(phases, tuple(f for f in self.arch.forces if f[0] < phases)))
        del self.records[decision:]
        del self._at[decision + 1:]

    def fork(self, decision: int, operator: str) -> None:
        """Rewind to `decision` and force `operator` at the next one."""
        self.rewind(decision)
        self.force(operator)
