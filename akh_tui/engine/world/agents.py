"""A world's agents by id, each restored from the session store on first touch (a rewind).

A rewind of a world of many agents needs few of them: the steps it replays after the saved
state touch only the agents that take those turns, and what is shown of the step (a summary,
one agent's pane) reads the rest when it reads them. So a rewound World's agents are built
fresh from the world file as ever, and each saved agent's state is read, joined and loaded
into its agent the first time anything asks for that agent (`agents[aid]`, iterating the
values). Asking whether an id is an agent, or for the ids, loads nothing.

A loader runs in two stages: `fetch` reads and decodes the agent's saved state (the store
must be open), `load` puts it into the agent. `detach()` fetches every agent still pending,
so the World stays whole after its run closes the store (WorldRun.close).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

if TYPE_CHECKING:
    from ..cycle.agent import Agent

Fetch = Callable[[], Any]  # reads an agent's saved state (the store open)
Load = Callable[[Any], None]  # puts what `fetch` read into the agent


class Agents(Mapping[str, "Agent"]):
    """The world's agents by id, in the world file's order; some may be pending (see above)."""

    __slots__ = ("_built", "_pending", "_fetched")

    def __init__(self) -> None:
        self._built: dict[str, Agent] = {}
        self._pending: dict[str, tuple[Fetch, Load]] = {}
        self._fetched: dict[str, Any] = {}  # a pending agent's state, read before its store closed

    def put(self, aid: str, agent: "Agent") -> None:
        self._built[aid] = agent

    def defer(self, aid: str, fetch: Fetch, load: Load) -> None:
        """Agent `aid` (built already) gets its state from `fetch` and `load` when first touched."""
        self._pending[aid] = (fetch, load)

    def __getitem__(self, aid: str) -> "Agent":
        if self._pending and aid in self._pending:
            self._load(aid)
        return self._built[aid]

    def _load(self, aid: str) -> None:
        fetch, load = self._pending[aid]
        got = self._fetched.pop(aid) if aid in self._fetched else fetch()
        # pending until loaded: a loader that raises (a damaged store) raises again next time,
        # never hands out an agent left half restored as if it were whole
        load(got)
        del self._pending[aid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._built)

    def __len__(self) -> int:
        return len(self._built)

    def __contains__(self, aid: object) -> bool:
        return aid in self._built

    def unloaded(self) -> Mapping[str, "Agent"]:
        """Every agent as built, pending ones not loaded: for what their construction decides
        (each one's decider), never their state."""
        return self._built

    @property
    def pending(self) -> list[str]:
        return list(self._pending)

    def load_all(self) -> None:
        for aid in list(self._pending):
            self._load(aid)

    def detach(self) -> None:
        """Read every pending agent's saved state now (not loaded into it yet), so nothing is
        left to read from a store about to close."""
        for aid, (fetch, _) in self._pending.items():
            if aid not in self._fetched:
                self._fetched[aid] = fetch()
