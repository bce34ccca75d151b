"""Triple patterns joined over the graph, one premise after another: what the query console
asks and what the rule browser counts (Soar's `matches`: the bindings left after each
condition, in the order they are written).

A pattern is three terms: a label, or a variable `?name` (`?` alone matches anything and
binds nothing). The join walks the graph through its indexes (subject-predicate,
predicate-object, by predicate), never triples whose subject or object is the agent's own
bookkeeping (goal:N, wm:N, ...), as infer_rules never joins them. A variable predicate scans
the log: fine for a console, and rule files refuse it.

Bindings are capped (`cap`): a pattern with two free ends on a big graph is cut there and the
count says "at least". The work is bounded too (`budget` triples examined in all): a join of
free patterns (`(?a ? ?b) (?b ? ?c)`) stops there, marked capped, instead of holding the
workbench while it walks the graph once per binding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from ..knowledge.kg import KnowledgeGraph, Triple

Pattern = tuple[str, str, str]
Binding = dict[str, int]
CAP = 10_000  # bindings kept after a premise (the count past it is "at least")
BUDGET = 200_000  # triples a join examines at most (about 0.2 s of CPU)


def is_var(term: str) -> bool:
    return term.startswith("?")


@dataclass
class Step:
    """One premise joined: the bindings left after it (`capped`: there were more)."""

    pattern: Pattern
    bindings: list[tuple[Binding, tuple["Triple", ...]]]
    capped: bool

    @property
    def count(self) -> int:
        return len(self.bindings)


def _term(kg: "KnowledgeGraph", term: str, b: Binding) -> int | None | bool:
    """The id a term stands for; None: free (a variable not bound yet); False: a label the
    graph does not know (nothing matches it)."""
    if is_var(term):
        return None if term == "?" else b.get(term)
    sid = kg.lookup(term)
    return False if sid is None else sid


def matching(kg: "KnowledgeGraph", pat: Pattern, b: Binding,
             spend: "_Budget | None" = None) -> Iterator[tuple[Binding, "Triple"]]:
    """Each triple matching `pat` under binding `b`, with the binding extended by it; each
    triple examined is taken from `spend` (the walk stops when it is spent)."""
    s, p, o = (_term(kg, t, b) for t in pat)
    if s is False or p is False or o is False:
        return
    if p is None:  # a variable predicate: the log (a console's question, never a rule's), each one spent
        cands: Iterator[Triple] = iter(kg.log)
    elif s is not None and o is not None:
        got = kg.get(s, p, o)
        cands = iter([got] if got is not None else [])
    elif s is not None:
        cands = (t for t in (kg.get(s, p, x) for x in kg.objects(s, p)) if t is not None)
    elif o is not None:
        cands = (t for t in (kg.get(x, p, o) for x in kg.subjects(p, o)) if t is not None)
    else:
        cands = iter(kg.triples_by_predicate(p))
    for t in cands:
        if spend is not None:
            spend.left -= 1
            if spend.left < 0:
                return
        if p is None and ((s is not None and t.subject != s) or (o is not None and t.object != o)):
            continue
        if kg.is_meta_triple(t):
            continue
        nb = b
        ok = True
        for term, value in zip(pat, (t.subject, t.predicate, t.object)):
            if not is_var(term) or term == "?":
                continue
            have = nb.get(term)
            if have is None:
                if nb is b:
                    nb = dict(b)
                nb[term] = value
            elif have != value:
                ok = False
                break
        if ok:
            yield nb, t


class _Budget:
    """Triples left to examine in a join (shared by its steps)."""

    def __init__(self, n: int) -> None:
        self.left = n


def join(kg: "KnowledgeGraph", patterns: tuple[Pattern, ...], start: Binding | None = None,
         cap: int = CAP, budget: int = BUDGET) -> list[Step]:
    """The patterns joined in order: after each, the bindings left (each with the triples that
    made it). A step with no binding ends the join (the steps after it are not listed)."""
    rows: list[tuple[Binding, tuple[Triple, ...]]] = [(dict(start or {}), ())]
    steps: list[Step] = []
    spend = _Budget(budget)
    for pat in patterns:
        nxt: list[tuple[Binding, tuple[Triple, ...]]] = []
        capped = False
        for b, used in rows:
            for nb, t in matching(kg, pat, b, spend):
                if len(nxt) >= cap:
                    capped = True
                    break
                nxt.append((nb, used + (t,)))
            if capped or spend.left <= 0:
                capped = True
                break
        steps.append(Step(pat, nxt, capped))
        rows = nxt
        if not rows or spend.left <= 0:  # nothing to join on, or the work budget spent: the join ends
            break
    return steps


def substitute(kg: "KnowledgeGraph", pat: Pattern, b: Binding) -> str:
    """The pattern with what `b` binds written in: '(cow has-property ?p)'."""
    return "(" + " ".join(kg.label(b[t]) if is_var(t) and t in b else t for t in pat) + ")"


def pattern_text(pat: Pattern) -> str:
    return "(" + " ".join(pat) + ")"
