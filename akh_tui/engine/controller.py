"""The one controller that owns an agent: the API the CLI and the workbench drive.

User intent comes in as calls (step, run, add a goal, replace the psyche, snapshot, restore);
what happened goes out as immutable cycle records and events, written to the trace and the
session store in order. A lock makes the calls safe from a worker thread and the UI thread.
"""

from __future__ import annotations

import threading
from typing import Callable

from .agent import Agent
from .errors import InputError
from .goals import Goal
from .history import Timeline, apply_inputs, compare_branches
from .psyche import Psyche
from .session import SessionStore
from .state import restore as restore_state
from .state import snapshot as snapshot_state
from .trace import TraceWriter


class Controller:
    def __init__(
        self,
        agent: Agent,
        scenario: str,
        trace: TraceWriter | None = None,
        store: SessionStore | None = None,
        rebuild: Callable[[], Agent] | None = None,
    ) -> None:
        self.agent = agent
        self.scenario = scenario
        self.trace = trace
        self.store = store
        self._rebuild = rebuild  # builds a fresh agent of the same scenario (for restore)
        self.lock = threading.RLock()
        self.latest: dict | None = agent.last_record
        self.listeners: list[Callable[[dict], None]] = []  # called with each record and event
        if trace is not None:
            trace.header(scenario, agent.seed, agent.config.to_dict(), agent.psyche.snapshot(), start_cycle=agent.cycle)
            self._emit(agent.drain_events(), persist=False)

    # ---- reading ---------------------------------------------------------------------------
    @property
    def cycle(self) -> int:
        return self.agent.cycle

    def latest_record(self) -> dict | None:
        return self.latest

    def view(self, wm_rows: int = 40) -> dict:
        """What the workbench shows beyond the cycle record: the live state, read under the
        lock, as plain data (the UI never holds engine objects)."""
        with self.lock:
            a = self.agent
            focus = a.focus_goal()
            wm = a.wm
            return {
                "cycle": a.cycle,
                "seed": a.seed,
                "focus": focus.id if focus else None,
                "goals": [
                    g.summary() | {"children": list(g.children), "fail_reason": g.fail_reason,
                                   "attempt": g.attempt, "criteria": g.criteria, "missing": g.missing()}
                    for g in sorted(a.goals.values(), key=lambda g: g.id)
                ],
                "plans": {gid: p.to_dict() for gid, p in a.plans.items()},
                "wm": {
                    "capacity": wm.capacity,
                    "size": len(wm),
                    "pressure": wm.pressure,
                    "entries": [
                        {"id": e.id, "cycle": e.cycle, "kind": e.kind, "relevance": e.relevance,
                         "refs": e.reference_count, "content": e.content}
                        for e in wm.recent(wm_rows)
                    ],
                },
                "episodes": len(a.episodic),
                # the llm decider's structured working memory, as injected into its prompt
                "model_memory": a.decider.memory.render(600) if a.decider is not None else None,
                "psyche": a.psyche.snapshot() | {
                    "vetoes": [p.name for p in a.psyche.shadow.veto_patterns],
                    "biases": [p.name for p in a.psyche.shadow.bias_patterns],
                    "pending": a.pending_psyche is not None,
                },
            }

    def goal_words(self, goal_id: int | None) -> str:
        """The labels of a goal's symbols: a query the graph can answer word for word."""
        with self.lock:
            g = self.agent.goals.get(goal_id) if goal_id is not None else None
            if g is None:
                return ""
            return " ".join(self.agent.kg.label(s) for s in self.agent.goal_symbols(g)) or g.description

    def psyche_toml(self) -> str:
        with self.lock:
            p = self.agent.pending_psyche or self.agent.psyche
            return p.to_toml()

    def current_psyche(self):
        with self.lock:
            return (self.agent.pending_psyche or self.agent.psyche).copy()

    def finished(self) -> bool:
        return self.agent.focus_goal() is None

    # ---- driving ---------------------------------------------------------------------------
    def step(self) -> dict | None:
        """One cycle; None when no goal is active (and nothing ran)."""
        with self.lock:
            record = self.agent.step()
            events = self.agent.drain_events()
            if record is None:
                self._emit(events)
                return None
            self.latest = record
            if self.trace is not None:
                self.trace.write(record)
            self._emit(events, persist=False)
            if self.store is not None:
                self.store.save(self.agent, record, events)
            for fn in self.listeners:
                fn(record)
            return record

    def run(
        self,
        max_cycles: int,
        on_record: Callable[[dict], None] | None = None,
        should_stop: Callable[[dict], bool] | None = None,
    ) -> tuple[int, str]:
        """Up to max_cycles cycles. Returns (cycles run, why it stopped)."""
        n = 0
        while n < max_cycles:
            rec = self.step()
            if rec is None:
                return n, "no active goal"
            n += 1
            if on_record is not None:
                on_record(rec)
            if should_stop is not None and should_stop(rec):
                return n, "stopped"
        if self.trace is not None:
            self.trace.flush()
        return n, "max cycles" if not self.finished() else "no active goal"

    def add_goal(self, description: str, criteria: str | None = None, priority: int = 128) -> Goal:
        with self.lock:
            g = self.agent.add_goal(description, criteria, priority)
            self._emit(self.agent.drain_events(), inputs=[("goal", [description, criteria, priority])])
            return g

    def replace_psyche(self, psyche: Psyche | str, source: str = "user") -> Psyche:
        """Validate first (an InputError changes nothing), apply at the next cycle."""
        if isinstance(psyche, str):
            psyche = Psyche.from_toml(psyche)
        with self.lock:
            self.agent.replace_psyche(psyche, source)
            self._emit(self.agent.drain_events(), inputs=[("psyche", psyche.to_toml())])
        return psyche

    def reflect(self) -> list[dict]:
        with self.lock:
            self.agent.reflect()
            events = self.agent.drain_events()
            self._emit(events, inputs=[("reflect", None)])
            return events

    def consolidate(self) -> dict:
        with self.lock:
            self.agent.consolidate(reason="demand")
            events = self.agent.drain_events()
            self._emit(events, inputs=[("consolidate", None)])
            return events[-1]

    # ---- time travel (needs the session store) ---------------------------------------------
    def timeline(self, branch: int | None = None) -> Timeline:
        if self.store is None or self._rebuild is None:
            raise RuntimeError("time travel needs a session store and a way to rebuild the scenario")
        return Timeline(self.store, self.store.branch if branch is None else branch, self._rebuild)

    def record_at(self, cycle: int) -> dict | None:
        """Replay: the recorded cycle of the current branch (no engine call)."""
        with self.lock:
            return self.store.record(self.store.branch, cycle) if self.store is not None else None

    def branches(self) -> list[dict]:
        with self.lock:
            return self.store.branches(self.store.current_run())

    def fork(self, cycle: int, name: str, edits: dict | None = None) -> dict:
        """Rewind to `cycle`, apply the edits and continue as branch `name` (now current)."""
        with self.lock:
            agent, _, event = self.timeline().fork(cycle, name, edits)
            self._switch_agent(agent)
            self._emit([event], persist=False)
            return event

    def switch(self, branch: int) -> None:
        """Continue from another branch's newest state."""
        with self.lock:
            self.store.checkpoint(self.agent)  # the branch left is resumed from here
            self._switch_agent(self.store.resume(self._rebuild, apply_inputs, branch))

    def _switch_agent(self, agent: Agent) -> None:
        agent.decider = self.agent.decider
        self.agent = agent
        self.latest = agent.last_record

    def compare(self, a: int, b: int) -> dict:
        """history.compare of two branches of this run, read from the store."""
        with self.lock:
            st = self.store
            return compare_branches(st, a, b) | {"a_name": st.branch_info(a)["name"], "b_name": st.branch_info(b)["name"]}

    def search(self, **filters) -> list[dict]:
        """Cycles of the current branch matching history.search's filters, as table rows."""
        with self.lock:
            return self.store.search(self.store.branch, **filters) if self.store else []

    def snapshot(self) -> dict:
        with self.lock:
            return snapshot_state(self.agent)

    def restore(self, state: dict) -> None:
        if self._rebuild is None:
            raise RuntimeError("this controller was made without a way to rebuild its scenario")
        with self.lock:
            fresh = restore_state(self._rebuild(), state)
            self.agent = fresh
            self.latest = fresh.last_record

    def close(self) -> None:
        with self.lock:
            if self.trace is not None:
                self.trace.close()
            if self.store is not None:
                self.store.checkpoint(self.agent)
                self.store.close()

    def _emit(self, events: list[dict], persist: bool = True, inputs: list | None = None) -> None:
        """Events to the trace, the store and the listeners. `inputs` marks a user action
        between cycles: it is stored with them so that rewind can replay it."""
        if persist and self.store is not None and (events or inputs):
            self.store.save(self.agent, None, events, inputs or (), input_events=inputs is not None)
        if not events:
            return
        if self.trace is not None:
            self.trace.write_all(events)
        for e in events:
            for fn in self.listeners:
                fn(e)


__all__ = ["Controller", "InputError"]
