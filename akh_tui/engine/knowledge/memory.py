"""Working memory with eviction, and episodic memory with consolidation and recall (SPEC §10)."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Iterable

KIND_RELEVANCE = {
    "observation": 0.6,
    "inference": 0.5,
    "decision": 0.7,
    "action": 0.6,
    "reflection": 0.8,
}


@dataclass(slots=True)
class WorkingMemoryEntry:
    id: int
    content: str
    symbols: tuple[int, ...]
    kind: str
    cycle: int
    relevance: float
    reference_count: int = 0
    goal: int | None = None
    tool: str | None = None  # for action entries: which tool ran
    success: bool | None = None  # for action entries: whether it ran and made progress

    def to_dict(self) -> dict:
        # by hand: dataclasses.asdict deep-copies and is the slow part of saving a cycle
        return {"id": self.id, "content": self.content, "symbols": list(self.symbols), "kind": self.kind,
                "cycle": self.cycle, "relevance": self.relevance, "reference_count": self.reference_count,
                "goal": self.goal, "tool": self.tool, "success": self.success}

    @classmethod
    def from_dict(cls, d: dict) -> "WorkingMemoryEntry":
        d = dict(d)
        d["symbols"] = tuple(d["symbols"])
        return cls(**d)


class WorkingMemory:
    def __init__(self, capacity: int = 100) -> None:
        self.capacity = capacity
        self.entries: OrderedDict[int, WorkingMemoryEntry] = OrderedDict()
        self.next_id = 1
        self.evicted: list[int] = []  # ids evicted since the caller last cleared this list

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def pressure(self) -> float:
        return len(self.entries) / self.capacity

    def push(
        self,
        content: str,
        kind: str,
        cycle: int,
        symbols: Iterable[int] = (),
        goal: int | None = None,
        tool: str | None = None,
        success: bool | None = None,
    ) -> WorkingMemoryEntry:
        if len(self.entries) >= self.capacity:
            self._evict()
        e = WorkingMemoryEntry(
            self.next_id, content, tuple(symbols), kind, cycle, KIND_RELEVANCE[kind], 0, goal, tool, success
        )
        self.next_id += 1
        self.entries[e.id] = e
        return e

    def _evict(self) -> None:
        # lowest relevance first, oldest (smallest id) among equals; O(capacity), never the graph
        victim = min(self.entries.values(), key=lambda e: (e.relevance, e.id))
        del self.entries[victim.id]
        self.evicted.append(victim.id)

    def recent(self, n: int) -> list[WorkingMemoryEntry]:
        out = []
        for key in reversed(self.entries):
            out.append(self.entries[key])
            if len(out) == n:
                break
        out.reverse()
        return out

    def remove(self, ids: Iterable[int]) -> None:
        for i in ids:
            self.entries.pop(i, None)

    def to_dict(self) -> dict:
        return {
            "capacity": self.capacity,
            "next_id": self.next_id,
            "entries": [e.to_dict() for e in self.entries.values()],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "WorkingMemory":
        wm = cls(d["capacity"])
        wm.next_id = d["next_id"]
        for ed in d["entries"]:
            e = WorkingMemoryEntry.from_dict(ed)
            wm.entries[e.id] = e
        return wm


@dataclass(slots=True)
class Episode:
    id: int
    cycle: int
    goal: int | None
    summary: str
    learnings: tuple[int, ...]  # symbol ids found relevant
    tags: tuple[str, ...]  # tool names that worked, and entry kinds

    def to_dict(self) -> dict:
        # written out rather than dataclasses.asdict (which deep-copies field by field): a
        # world saves every agent's episodes, and asdict was most of that cost
        return {"id": self.id, "cycle": self.cycle, "goal": self.goal, "summary": self.summary,
                "learnings": list(self.learnings), "tags": list(self.tags)}

    @classmethod
    def from_dict(cls, d: dict) -> "Episode":
        d = dict(d)
        d["learnings"] = tuple(d["learnings"])
        d["tags"] = tuple(d["tags"])
        return cls(**d)


@dataclass
class ConsolidationResult:
    episodes: list[Episode] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    scores: dict[int, float] = field(default_factory=dict)


class EpisodicMemory:
    """Episodes, newest last. Only the newest `capacity` stay in memory (the session store
    keeps them all), and a symbol → episodes index makes recall independent of the count."""

    PER_SYMBOL = 64  # index entries kept per symbol: recall wants the newest few anyway

    def __init__(self, capacity: int = 1000) -> None:
        self.capacity = capacity
        self.episodes: OrderedDict[int, Episode] = OrderedDict()
        self._by_symbol: dict[int, deque[int]] = {}
        self.next_id = 1
        self.new: list[Episode] = []  # added since the session store last saved them

    def __len__(self) -> int:
        return len(self.episodes)

    def add(self, cycle: int, goal: int | None, summary: str, learnings: Iterable[int], tags: Iterable[str]) -> Episode:
        ep = Episode(self.next_id, cycle, goal, summary, tuple(learnings), tuple(tags))
        self.next_id += 1
        self._insert(ep)
        self.new.append(ep)
        return ep

    def _insert(self, ep: Episode) -> None:
        self.episodes[ep.id] = ep
        for s in ep.learnings:
            self._by_symbol.setdefault(s, deque(maxlen=self.PER_SYMBOL)).append(ep.id)
        while len(self.episodes) > self.capacity:
            old_id, old = self.episodes.popitem(last=False)
            for s in old.learnings:
                dq = self._by_symbol.get(s)
                if dq is not None:
                    try:
                        dq.remove(old_id)
                    except ValueError:
                        pass
                    if not dq:
                        del self._by_symbol[s]

    def knows(self, sid: int) -> bool:
        return sid in self._by_symbol

    def recall(self, symbols: Iterable[int], top_k: int) -> list[Episode]:
        """Episodes sharing symbols with the query: most shared first, then newest first."""
        overlap: dict[int, int] = {}
        for s in dict.fromkeys(symbols):
            for eid in self._by_symbol.get(s, ()):
                overlap[eid] = overlap.get(eid, 0) + 1
        ranked = sorted(overlap.items(), key=lambda kv: (-kv[1], -kv[0]))
        return [self.episodes[eid] for eid, _ in ranked[:top_k] if eid in self.episodes]

    def to_dict(self) -> dict:
        return {"capacity": self.capacity, "next_id": self.next_id, "episodes": [e.to_dict() for e in self.episodes.values()]}

    @classmethod
    def from_dict(cls, d: dict) -> "EpisodicMemory":
        em = cls(d["capacity"])
        em.next_id = d["next_id"]
        for ed in d["episodes"]:
            em._insert(Episode.from_dict(ed))
        return em


def consolidate(
    wm: WorkingMemory,
    episodic: EpisodicMemory,
    cycle: int,
    goal_symbols: dict[int, frozenset[int]],
    threshold: float,
) -> ConsolidationResult:
    """Sweep working memory: score every entry of earlier cycles, turn those ≥ threshold into
    one episode per goal, and let all swept entries leave WM.

    score = 0.4·goal relevance + 0.3·novelty + 0.3·utility (SPEC §10), where goal relevance is
    1 for an entry about an active goal (by goal id or shared symbols), 0.5 for one about a goal
    that is no longer active, 0 otherwise; novelty is the share of
    the entry's symbols no episode knows yet (0.5 for an entry without symbols), and utility is
    min(1, 0.25·reference_count).

    Entries of the current cycle stay: they are the context of the decision in progress. The
    swept entries that score below the threshold leave too; were they kept, memory would stay
    above the pressure threshold and consolidation would fire again every cycle.
    """
    result = ConsolidationResult()
    active_symbols = frozenset().union(*goal_symbols.values()) if goal_symbols else frozenset()
    chosen: dict[int | None, list[WorkingMemoryEntry]] = {}
    swept: list[int] = []
    for e in wm.entries.values():
        if e.cycle >= cycle:
            continue
        swept.append(e.id)
        if e.goal in goal_symbols or active_symbols.intersection(e.symbols):
            relevant = 1.0
        elif e.goal is not None:
            relevant = 0.5  # about a goal that is settled: its lesson may still serve
        else:
            relevant = 0.0
        if e.symbols:
            novelty = sum(1 for s in e.symbols if not episodic.knows(s)) / len(e.symbols)
        else:
            novelty = 0.5
        utility = min(1.0, 0.25 * e.reference_count)
        score = 0.4 * relevant + 0.3 * novelty + 0.3 * utility
        result.scores[e.id] = score
        if score >= threshold:
            chosen.setdefault(e.goal, []).append(e)
    for goal, entries in chosen.items():
        learnings = list(dict.fromkeys(s for e in entries for s in e.symbols))
        tools = [e.tool for e in entries if e.kind == "action" and e.tool and e.success]
        kinds = sorted({e.kind for e in entries})
        tags = list(dict.fromkeys(tools)) + [f"kind:{k}" for k in kinds]
        first, last = entries[0].cycle, entries[-1].cycle
        gist = "; ".join(e.content.split("\n", 1)[0][:80] for e in entries[-3:])
        summary = f"cycles {first}-{last}, {len(entries)} entries: {gist}"
        result.episodes.append(episodic.add(cycle, goal, summary, learnings, tags))
    result.removed = swept
    wm.remove(swept)
    return result
