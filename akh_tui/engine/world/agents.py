"""A world's agents by id, each built and restored from the session store on first touch (a
rewind).

A rewind of a world of many agents needs few of them: the steps it replays after the saved
state touch only the agents that take those turns, and what is shown of the step (a summary,
one agent's pane) reads the rest when it reads them. So a rewound World's agents are built
fresh from the world file, and each one's saved state read, joined and loaded into it, the
first time anything asks for that agent (`agents[aid]`, iterating the values). Asking whether
an id is an agent, or for the ids, builds and loads nothing.

A loader runs in two stages: `fetch` reads and decodes the agent's saved state (the store
must be open), `load` puts it into the agent. `detach()` fetches every agent still pending,
so the World stays whole after its run closes the store (WorldRun.close).
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

if TYPE_CHECKING:
    from ..cycle.agent import Agent

Fetch = Callable[[], Any]  # reads an agent's saved state (the store open)
Load = Callable[[Any], None]  # puts what `fetch` read into the agent


class Agents(Mapping[str, "Agent"]):
    """The world's agents by id, in the world file's order; some may be made or loaded later
    (see above)."""

    __slots__ = ("_ids", "_built", "_make", "_pending", "_fetched")

    def __init__(self) -> None:
        self._ids: dict[str, None] = {}  # every agent's id, in order
        self._built: dict[str, Agent] = {}
        self._make: dict[str, Callable[[], Agent]] = {}  # agents not built yet: what builds each
        self._pending: dict[str, tuple[Fetch, Load]] = {}
        self._fetched: dict[str, Any] = {}  # a pending agent's state, read before its store closed

    def put(self, aid: str, agent: "Agent") -> None:
        self._ids[aid] = None
        self._built[aid] = agent

    def put_later(self, aid: str, make: Callable[[], "Agent"]) -> None:
        """Agent `aid`, built by `make` when first asked for (a rewind's agents: World)."""
        self._ids[aid] = None
        self._make[aid] = make

    def defer(self, aid: str, fetch: Fetch, load: Load) -> None:
        """Agent `aid` gets its state from `fetch` and `load` when first touched."""
        self._pending[aid] = (fetch, load)

    def __getitem__(self, aid: str) -> "Agent":
        if self._pending and aid in self._pending:
            self._load(aid)
        got = self._built.get(aid)
        return got if got is not None else self.built(aid)

    def built(self, aid: str) -> "Agent":
        """Agent `aid` as built, its saved state loaded or not: for what its construction
        decides (its decider), and for the loader itself."""
        got = self._built.get(aid)
        if got is None:
            got = self._built[aid] = self._make.pop(aid)()  # KeyError: no such agent, as a dict's
        return got

    def _load(self, aid: str) -> None:
        # loading makes a graph's worth of objects and frees none: the collector's passes over
        # them (and over the whole heap, as it grows) found nothing and were half its time
        collecting = gc.isenabled()
        gc.disable()
        try:
            fetch, load = self._pending[aid]
            got = self._fetched.pop(aid) if aid in self._fetched else fetch()
            # pending until loaded: a loader that raises (a damaged store) raises again when the
            # agent is next asked for, never hands it out as if it were whole
            load(got)
            del self._pending[aid]
        finally:
            if collecting:
                gc.enable()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, aid: object) -> bool:
        return aid in self._ids

    @property
    def pending(self) -> list[str]:
        """The agents whose saved state is not loaded yet."""
        return list(self._pending)

    def load_all(self) -> None:
        collecting = gc.isenabled()
        gc.disable()  # (once for them all: see _load)
        try:
            for aid in list(self._pending):
                self._load(aid)
        finally:
            if collecting:
                gc.enable()

    def detach(self) -> None:
        """Read every pending agent's saved state now (not loaded into it yet), so nothing is
        left to read from a store about to close."""
        for aid, (fetch, _) in self._pending.items():
            if aid not in self._fetched:
                self._fetched[aid] = fetch()
