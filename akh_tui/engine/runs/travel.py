"""Time travel over a run: its branches, fork with edits, switch, rewind, reset, compare and search: a
part of `Run` (run.py), the one door to a run."""

from __future__ import annotations

import gc
from typing import cast

from . import history
from ..store import writelock
from ..records import ForkEvent, View
from .search import parse_search
from .base import RunBase


class TimeTravel(RunBase):
    """Time travel over a run."""

    def branches(self) -> list[dict]:
        with self.lock:
            return self.store.branches(self.run_id)

    def fork(self, cycle: int, name: str, edits: dict | None = None) -> ForkEvent:
        """Rewind to `cycle`, apply the edits and continue as branch `name` (now current)."""
        with self.lock:
            self._engine()
            self.drop_cycle()
            self.store.refuse_marked(self.store.current(), upto=cycle)  # never build on damage `sessions check` found
            agent, event = history.fork(self.store, self.store.current(), cycle, name, edits, self._rebuild,
                                        self._base_graph())
            self._adopt(agent)
            self._emit([event], persist=False)
            return cast(ForkEvent, event)

    def switch(self, branch: str | int) -> None:
        """Continue from another branch's newest state (the one left is checkpointed)."""
        with self.lock:
            self._engine()
            self.drop_cycle()  # the branch left keeps its last whole cycle
            a = self._engine()
            bid = branch if isinstance(branch, int) else self.store.find_branch(self.run_id, branch)
            self.store.checkpoint(a)
            self._adopt(history.resume(self.store, self._rebuild, bid))

    def rewind(self, cycle: int) -> View:
        """The engine state right after recorded `cycle` of the branch shown, as a view (the
        live run is not changed: fork continues from a rewound state)."""
        with self.lock:
            self._engine()
            # A rewind makes a whole agent and drops it, and nothing of it is in a reference
            # cycle (tests/engine/cycle/test_freed.py): reference counting frees it all. So the collector
            # is paused meanwhile: its passes over the heap, with nothing of the rewind's to
            # free, were the slowest rewinds (a full pass 20 ms on the demo).
            collecting = gc.isenabled()
            gc.disable()
            try:
                return self._rewound_view(cycle)
            finally:
                if collecting:
                    gc.enable()

    def _rewound_view(self, cycle: int) -> View:
        graphs = self._base_graph()
        agent = history.rewind(self.store, self.store.current(), cycle, self._rebuild, graphs)
        # a cycle that replayed differently from its record is named, never silent
        self.replay_divergence = agent.replay_divergence
        saved, self.agent = self.agent, agent
        try:
            return self._live_view(40)
        finally:
            self.agent = saved
            if graphs is not None:
                graphs.give_back(agent)  # only its view is kept: the next rewind reuses its graph

    def reset(self) -> None:
        """A new run of the same scenario, seed and decider in the same store."""
        with self.lock:
            self._engine()
            self.drop_cycle()
            a = self._engine()
            self.store.checkpoint(a)
            fresh = type(self).start(self.locations, self.scenario, self.meta["seed"], self.meta.get("goals"),  # type: ignore[arg-type]
                                     self.meta.get("decider", "utility"), store=self.store,
                                     config=self.user_config, workbench=bool(self.meta.get("workbench")))
            fresh.agent.decider = self._live_decider()  # type: ignore[union-attr]  # the one it opened with
            writelock.release(self._lock_file)
            self._lock_file, fresh._lock_file = fresh._lock_file, None
            self.meta, self.agent, self.latest = fresh.meta, fresh.agent, fresh.latest
            self._psyche_disk.update(fresh._psyche_disk)
            self.note = fresh.note
            self._after_open()

    def compare(self, a: str | int, b: str | int) -> dict:
        """history.compare of two branches of this run."""
        with self.lock:
            st = self.store
            ia = a if isinstance(a, int) else st.find_branch(self.run_id, a)
            ib = b if isinstance(b, int) else st.find_branch(self.run_id, b)
            return history.compare_branches(st, ia, ib) | {"a_name": st.branch_info(ia)["name"],
                                                           "b_name": st.branch_info(ib)["name"]}

    def search(self, query: str) -> list[dict]:
        """Cycles of the branch shown matching the search box's words (a bad word raises
        ValueError naming it)."""
        filters = parse_search(query, self.tool_names())
        with self.lock:
            return self.store.search(self.store.current(), **filters)
