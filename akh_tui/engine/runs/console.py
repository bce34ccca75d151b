"""The designer's console over a run: the query console and the rule browser, asked of the
live agent or of the agent as it stood right after a recorded cycle (rewound from the store,
as fork rewinds; the live run is not changed): a part of `Run` (run.py), the one door.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from . import history
from ..errors import InputError
from .base import RunBase

if TYPE_CHECKING:
    from ..cycle.agent import Agent


class Inspecting(RunBase):
    """Query and rules at a cycle."""

    @contextmanager
    def _agent_at(self, cycle: int | None) -> Iterator["Agent"]:
        """The live agent (cycle None, or the live one's cycle), else the agent rewound to right
        after recorded `cycle`; InputError for a trace (no agent) or an unrecorded cycle."""
        with self.lock:
            live = self._engine()
            if cycle is None or (cycle == live.cycle and self._cycle is None):
                yield live
                return
            if not 1 <= cycle <= self.last_cycle():
                raise InputError(f"cycle {cycle} is not recorded (recorded: 1..{self.last_cycle()})", field="--cycle")
            graphs = self._base_graph()
            collecting = gc.isenabled()
            gc.disable()  # as travel.rewind: nothing of a rewound agent is in a reference cycle
            try:
                agent = history.rewind(self.store, self.store.current(), cycle, self._rebuild, graphs)
                try:
                    yield agent
                finally:
                    if graphs is not None:
                        graphs.give_back(agent)
            finally:
                if collecting:
                    gc.enable()

    def query(self, text: str, cycle: int | None = None, limit: int = 50) -> dict[str, Any]:
        """The query console (engine/explain/query.py) at `cycle` (None: now). InputError
        (field "query") for a query it cannot read."""
        from ..explain.query import query

        with self._agent_at(cycle) as agent:
            return query(agent, text, limit)

    def rules(self, rule: str | None = None, symbol: str | None = None, cycle: int | None = None) -> dict[str, Any]:
        """The rule browser (engine/explain/rules.py) at `cycle` (None: now): each rule's
        premises with the bindings left after each, why `rule` did not fire for `symbol`, and
        infer_rules' agenda."""
        from ..explain.rules import browse

        with self._agent_at(cycle) as agent:
            return browse(agent, rule, symbol)
