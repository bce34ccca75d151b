"""Matching every shadow pattern of a list at once (issue 17: 10,000 veto patterns cost 83 ms
a cycle when each was tried in turn, against 2 ms with none).

A pattern fires when one of its triggers is a case-insensitive substring of the action
description, or when its capability/danger clause holds (psyche.ShadowPattern.matches). The
triggers of all patterns go into one Aho–Corasick automaton, so one pass over the description
finds every trigger that occurs, whatever the number of patterns; the clause depends only on
the tool (its capabilities and danger), so its answer is kept per tool. The results are those
of trying the patterns one by one, in list order: the first pattern that fires is the same.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, Protocol, Sequence, TypeVar


class Pattern(Protocol):
    """What matching reads of a shadow pattern (psyche.ShadowPattern is one): typed here, so
    this module needs nothing of the psyche's and the two make no circle."""

    @property
    def triggers(self) -> list[str]: ...
    @property
    def capability_triggers(self) -> list[str]: ...
    @property
    def danger_level_threshold(self) -> str | None: ...


P = TypeVar("P", bound=Pattern)

_NONE = 1 << 62  # "no pattern": larger than any index
MEMO_SIZE = 4096  # answers kept per index (PatternIndex): emptied when full


class TriggerAutomaton:
    """Aho–Corasick over lowercased triggers; outputs are pattern indexes."""

    def __init__(self, triggers: Sequence[Sequence[str]]) -> None:
        goto: list[dict[str, int]] = [{}]
        own: list[list[int]] = [[]]
        for i, trigs in enumerate(triggers):
            for trig in trigs:
                node = 0
                for ch in trig.lower():
                    nxt = goto[node].get(ch)
                    if nxt is None:
                        nxt = len(goto)
                        goto[node][ch] = nxt
                        goto.append({})
                        own.append([])
                    node = nxt
                if not own[node] or own[node][-1] != i:
                    own[node].append(i)
        n = len(goto)
        fail = [0] * n
        # first[v]: the smallest pattern index among the triggers that end at v's text
        # position (v's own and its suffixes'); link[v]: the nearest proper suffix with own
        # outputs, to list them all
        first = [min(own[v], default=_NONE) for v in range(n)]
        link = [0] * n
        queue = deque(goto[0].values())
        while queue:
            v = queue.popleft()
            for ch, u in goto[v].items():
                f = fail[v]
                while f and ch not in goto[f]:
                    f = fail[f]
                g = goto[f].get(ch, 0)
                fail[u] = g if g != u else 0
                link[u] = fail[u] if own[fail[u]] else link[fail[u]]
                first[u] = min(first[u], first[fail[u]])
                queue.append(u)
        self._goto, self._fail, self._own, self._first, self._link = goto, fail, own, first, link
        # an empty trigger is a substring of everything (the validator refuses it; a pattern
        # built in code may still hold one)
        self._always = own[0]

    def _walk(self, text: str):
        goto, fail = self._goto, self._fail
        node = 0
        for ch in text.lower():
            while node and ch not in goto[node]:
                node = fail[node]
            node = goto[node].get(ch, 0)
            yield node

    def first(self, text: str) -> int:
        """The smallest index of a pattern with a trigger in text (or a huge number)."""
        first = self._first
        best = first[0]
        for node in self._walk(text):
            if first[node] < best:
                best = first[node]
        return best

    def all(self, text: str) -> set[int]:
        """The indexes of every pattern with a trigger in text."""
        own, link = self._own, self._link
        hits = set(self._always)
        for node in self._walk(text):
            v = node if own[node] else link[node]
            while v:
                hits.update(own[v])
                v = link[v]
        return hits


def clause_holds(p: Pattern, caps: tuple[str, ...], danger: str) -> bool:
    """The part of ShadowPattern.matches that does not look at the description."""
    from ..tools.specs import danger_index as _danger_index

    if p.capability_triggers:
        have = set(caps)
        if not any(c in have for c in p.capability_triggers):
            return False
    elif p.danger_level_threshold is None:
        # Neither a capability nor a danger condition: the clause would hold for every tool,
        # which would turn an empty pattern into "veto everything".
        return False
    if p.danger_level_threshold is None:
        return True
    return _danger_index(danger) >= _danger_index(p.danger_level_threshold)


def list_key(patterns: list) -> tuple[int, int, int, int]:
    """What tells an index it no longer fits its list, in O(1) (a key over all 10,000 ids
    cost more than the matching): the list itself, its length and its ends. Patterns are
    values once loaded (edits build a new psyche); what is appended, removed or replaced as
    a whole list is noticed, an element replaced in the middle of the same list is not."""
    if not patterns:
        return (id(patterns), 0, 0, 0)
    return (id(patterns), len(patterns), id(patterns[0]), id(patterns[-1]))


class PatternIndex(Generic[P]):
    """One list of shadow patterns, matched together."""

    def __init__(self, patterns: list[P]) -> None:
        self.source = patterns  # held, with its ends: the ids in `key` cannot be reused meanwhile
        self.patterns = list(patterns)
        self.key = list_key(patterns)
        self.automaton = TriggerAutomaton([p.triggers for p in self.patterns])
        self._clauses: dict[tuple[tuple[str, ...], str], list[int]] = {}
        # Answers by (description, capabilities, danger): a cycle checks its chosen action
        # (and, anticipating, every offered one) and the descriptions repeat ("tool=reason
        # input=ocean" cycle after cycle), so most checks are one dict lookup instead of a walk
        # of the automaton character by character. The answer is a function of the key alone
        # (the patterns are this index's own copy); bounded, as inputs may vary without end.
        self._first: dict[tuple[str, tuple[str, ...], str], P | None] = {}
        self._every: dict[tuple[str, tuple[str, ...], str], tuple[P, ...]] = {}

    def clauses(self, caps: tuple[str, ...], danger: str) -> list[int]:
        got = self._clauses.get((caps, danger))
        if got is None:
            got = [i for i, p in enumerate(self.patterns) if clause_holds(p, caps, danger)]
            self._clauses[(caps, danger)] = got
        return got

    def first(self, desc: str, caps: tuple[str, ...], danger: str) -> P | None:
        key = (desc, caps, danger)
        try:
            return self._first[key]
        except KeyError:
            pass
        clauses = self.clauses(caps, danger)
        i = min(self.automaton.first(desc), clauses[0] if clauses else _NONE)
        got = self.patterns[i] if i < len(self.patterns) else None
        if len(self._first) >= MEMO_SIZE:
            self._first.clear()
        self._first[key] = got
        return got

    def every(self, desc: str, caps: tuple[str, ...], danger: str) -> list[P]:
        key = (desc, caps, danger)
        got = self._every.get(key)
        if got is None:
            hits = self.automaton.all(desc)
            hits.update(self.clauses(caps, danger))
            got = tuple(self.patterns[i] for i in sorted(hits))
            if len(self._every) >= MEMO_SIZE:
                self._every.clear()
            self._every[key] = got
        return list(got)
