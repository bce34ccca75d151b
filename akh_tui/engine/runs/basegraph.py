"""A run's base graph, made once and lent to its rewinds (issue 16).

A rewind restores a past state into a fresh agent of the run's scenario: the scenario's base
graph, then the run's additions up to the snapshot read from the session store. Building that
graph again for every rewind (every label normalised, every index filled) cost seconds on a
100,000-triple scenario, and reading all the additions again grows with the run. So the graph
of a rewound agent that is done with (the door's `rewind` only draws a view of it) comes back
here and is lent to the next rewind, undone (kg.truncate, exact) to what that rewind can keep:

- on the same branch, the additions that both restores read from the store: a branch's stored
  additions are only ever appended to, so the first n are the same rows for every restore of
  it (the cycles replayed after the snapshot are undone: they were not read from the store);
- on any other branch, the scenario's base alone.

When no graph is waiting (a run's first rewind), the live agent's graph is copied
(kg.copy, copy-on-write: about 12 ms for 100,000 triples, where building it from the files
took more than half a second) and held as far as the session store knows it is the
branch's: what it read or wrote of it (`Agent.kg_stored`); the rest (cycles replayed by a
resume or a fork, a cycle in progress) is undone like a rewound agent's replayed cycles. A
run with no live agent yet (a resume's own restore) builds the graph from the scenario's
files.

Only a graph whose agent is finished comes back: a forked, resumed or switched-to agent keeps
its graph until the run leaves it (a later fork or switch: `take_over`, undone to the base);
so nothing of one rewound state (a fork's edits, a later cycle's triples) reaches another.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..cycle.agent import Agent
from ..knowledge.kg import KnowledgeGraph
from ..knowledge.vsa import VSA, SymbolVectors

# a graph lent or given back: (graph, branch, its (symbols, triples) read from that branch's
# rows, the symbol-vector cache kept with it)
_Held = tuple[KnowledgeGraph, "int | None", tuple[int, int], "SymbolVectors | None"]


class BaseGraph:
    """Lends a run's graph to its rewinds: the one given back, else a copy of the live agent's
    graph (`live`, cut to what of it is known stored: `Agent.kg_stored`), else a new one from
    `build`. With it go the caches that stay exact: one VSA (a pure function of seed,
    dimension and label) and the graph's symbol vectors, those the undone additions changed
    dropped."""

    def __init__(self, build: Callable[[], KnowledgeGraph], live: "Callable[[], Agent | None] | None" = None) -> None:
        self._build = build
        self._live = live
        self.base: tuple[int, int] | None = None  # (symbols, triples) of the scenario's graph
        self._spare: _Held | None = None
        self._lent: _Held | None = None
        self._vsa: VSA | None = None

    def lend(self, branch: int | None = None, size: Sequence[int] | None = None) -> KnowledgeGraph:
        """A graph for an agent of `branch` whose restore needs `size` (symbols, triples): the
        scenario's base plus the first of that branch's additions (none unless the graph it
        comes from held them), no listeners. The caller owns it; `len(kg.symbols)` and
        `len(kg.log)` say where its restore goes on reading the branch's additions."""
        held, self._spare = self._spare, None
        if held is None:
            held = self._copy_live()
        kg: KnowledgeGraph | None = None
        vectors = None
        if held is not None:
            kg, held_branch, held_size, vectors = held
            assert self.base is not None
            keep = self.base
            if branch is not None and size is not None and held_branch == branch:
                keep = (min(held_size[0], size[0]), min(held_size[1], size[1]))
            try:
                removed = kg.truncate(*keep)
            except ValueError:  # not a point of the graph's history: a new one
                kg, vectors, self.base = None, None, None
            else:
                if vectors is not None:
                    vectors.forget(removed, keep[0])
        if kg is None:
            kg = self._build()
            if self.base is None:
                self.base = (len(kg.symbols), len(kg.log))
            keep = self.base
        self._lent = (kg, branch, (int(size[0]), int(size[1])) if size is not None else keep, vectors)
        return kg

    def _copy_live(self) -> _Held | None:
        """The live agent's graph copied (kg.copy: a fraction of building it from the files),
        held as far as the session store knows it stored: the first rewind of a run, or of a
        branch switched to, restores from it as from a graph given back (nothing is read from
        the store twice; what the live agent replayed or has not saved yet is undone)."""
        agent = self._live() if self._live is not None else None
        if agent is None:
            return None
        base = (agent.base_symbols, agent.base_triples)
        if self.base is not None and self.base != base:
            return None  # another scenario graph (a reset over changed files): build it
        self.base = base
        known = agent.kg_stored
        kg = agent.kg
        if known is None or known[1] > len(kg.symbols) or known[2] > len(kg.log):
            return (kg.copy(), None, base, None)
        return (kg.copy(), known[0], (known[1], known[2]), None)

    def caches(self, kg: KnowledgeGraph, seed: int, dim: int) -> tuple[VSA, SymbolVectors | None]:
        """For an agent of `seed` over `kg` (lent last): the run's VSA of (seed, dim), and the
        symbol vectors kept with the graph when they are over that VSA."""
        if self._vsa is None or (self._vsa.seed, self._vsa.dim) != (seed, dim):
            self._vsa = VSA(seed, dim)
        lent = self._lent
        vectors = lent[3] if lent is not None and lent[0] is kg else None
        return self._vsa, vectors if vectors is not None and vectors.vsa is self._vsa else None

    def take_over(self, agent: Agent) -> None:
        """`agent`, whose graph was not lent here (the run's live agent, left by a fork or a
        switch), will not be used again: its graph, undone to the base, is the next one lent
        (when no other is waiting). Nothing it added is kept: none of it is checked against
        the stored rows."""
        if self._spare is not None or self.base is None or (agent.base_symbols, agent.base_triples) != self.base:
            return
        kg = agent.kg
        kg.listeners.clear()
        try:
            kg.truncate(*self.base)
        except ValueError:
            return
        self._spare = (kg, None, self.base, None)

    def give_back(self, agent: Agent) -> None:
        """`agent`, restored over a graph lent here, will not be used again: its graph is the
        next one lent (what it added after its restore is undone then)."""
        lent, self._lent = self._lent, None
        if lent is None or lent[0] is not agent.kg:
            return  # not the graph lent last: dropped
        agent.kg.listeners.clear()  # the finished agent's vector cache: kept, it listens again when lent
        self._spare = (lent[0], lent[1], lent[2], agent.symbol_vectors if agent.symbol_vectors.kg is agent.kg else None)
