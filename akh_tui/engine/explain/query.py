"""The query console's language (`akh-tui agent query`, the workbench's `Q`): ask the graph,
the working memory and the goals of a run at the cycle on show.

    (?x lives-in ocean)                    every ?x; the triples that matched, with provenance
    (?x is-a mammal) (?x lives-in ?where)  a join: the variables shared between patterns agree
    about krill                            everything about a symbol: its triples out and in
    memory [WORDS]                         working-memory entries (holding all the words)
    goals [WORDS]                          the goals, their status, priority and criteria

A term is a label, a variable `?name`, or `?` (anything, bound to nothing); a label with a
space is quoted ("sea lion"). An inferred triple carries its rule and the premises it was
derived from (the graph's own derivation record), so "where did this come from" is answered
from what infer_rules wrote, never recomputed.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .orient import provenance_kind
from .patterns import Pattern, is_var, join

if TYPE_CHECKING:
    from ..cycle.agent import Agent
    from ..knowledge.kg import KnowledgeGraph, Triple

LIMIT = 50  # rows a query shows by default (the total is always counted)
HELP = ("(?x lives-in ocean) · (?x is-a mammal) (?x lives-in ?w) · about krill · memory [words] · goals [words]")


def parse_patterns(text: str) -> tuple[Pattern, ...]:
    """`(s p o) (s p o) ...` as patterns; InputError (field "query") saying which pattern and
    what is wrong."""
    pats: list[Pattern] = []
    rest = text.strip()
    n = 0
    while rest:
        n += 1
        if not rest.startswith("("):
            raise InputError(f"pattern {n}: expected '(' to open a pattern like (?x lives-in ocean), got {rest[:20]!r}",
                             field="query")
        end = rest.find(")")
        if end < 0:
            raise InputError(f"pattern {n}: no ')' closes {rest[:30]!r}", field="query")
        try:
            terms = shlex.split(rest[1:end])
        except ValueError as exc:
            raise InputError(f"pattern {n}: {exc}", field="query") from None
        if len(terms) != 3:
            raise InputError(f"pattern {n} {rest[:end + 1]!r}: a pattern has 3 terms (subject predicate object), "
                             f"got {len(terms)}", field="query")
        pats.append((terms[0], terms[1], terms[2]))
        rest = rest[end + 1:].strip()
    if not pats:
        raise InputError(f"an empty query: try {HELP}", field="query")
    return tuple(pats)


def triple_row(kg: "KnowledgeGraph", t: "Triple") -> dict[str, Any]:
    """One triple as the console lists it: text, confidence, provenance (and, inferred, the rule
    and the premises it was derived from)."""
    row: dict[str, Any] = {"triple": kg.text(t), "confidence": round(t.confidence, 3), "provenance": t.provenance,
                           "cycle": t.cycle, "source": provenance_kind(t.provenance)["text"]}
    d = kg.derivations.get(t.key)
    if d is not None:
        row["rule"] = d[0]
        row["premises"] = [" ".join(kg.label(x) for x in key) for key in d[1]]
    return row


def _triple_line(r: dict[str, Any]) -> str:
    line = f"{r['triple']}  [{r['source']}, cycle {r['cycle']}]"
    if "premises" in r:
        line += " from " + "; ".join(r["premises"])
    return line


def query(agent: "Agent", text: str, limit: int = LIMIT) -> dict[str, Any]:
    """{"query", "kind" (patterns, about, memory, goals), "columns", "rows" (each {"values",
    "triples"} for patterns; else the items), "total", "shown", "capped", "cycle", "lines"}."""
    words = text.strip().split(None, 1)
    if not words:
        raise InputError(f"an empty query: try {HELP}", field="query")
    head, tail = words[0].lower(), (words[1] if len(words) > 1 else "")
    if head == "about":
        return _about(agent, tail.strip().strip('"'), text, limit)
    if head in ("memory", "goals"):
        return _memory(agent, tail, text, limit) if head == "memory" else _goals(agent, tail, text, limit)
    if not text.strip().startswith("("):
        raise InputError(f"unknown query {words[0]!r}: try {HELP}", field="query")
    return _patterns(agent, parse_patterns(text), text, limit)


def _patterns(agent: "Agent", pats: tuple[Pattern, ...], text: str, limit: int) -> dict[str, Any]:
    kg = agent.kg
    steps = join(kg, pats)
    columns = list(dict.fromkeys(t for p in pats for t in p if is_var(t) and t != "?"))
    last = steps[-1] if len(steps) == len(pats) else None
    found = last.bindings if last is not None else []
    rows: list[dict[str, Any]] = [{"values": {v: kg.label(b[v]) for v in columns},
             "triples": [triple_row(kg, t) for t in used]} for b, used in found[:limit]]
    lines: list[str] = []
    cut = len(steps) < len(pats) and steps[-1].capped
    if cut:
        lines.append(f"cut short: the join examined its budget of triples and stopped after pattern {len(steps)} "
                     f"(at least {steps[-1].count} binding(s) there): name a label in a pattern to narrow it")
    elif last is None or not found:
        failed = steps[-1]
        at = len(steps)
        before = steps[-2].count if len(steps) > 1 else None
        lines.append(f"no match: pattern {at} {' '.join(failed.pattern)!r} matched nothing"
                     + (f" among the {before} binding(s) of the patterns before it" if before is not None else ""))
    for r in rows:
        vals = ", ".join(f"{k}={v}" for k, v in r["values"].items())
        lines.append(vals or "yes")
        lines += ["  " + _triple_line(t) for t in r["triples"]]
    total = len(found)
    capped = bool(last is not None and last.capped) or cut
    if total > len(rows):
        lines.append(f"… {len(rows)} of {'at least ' if capped else ''}{total} shown")
    return {"query": text, "kind": "patterns", "cycle": agent.cycle, "columns": columns, "rows": rows,
            "total": total, "shown": len(rows), "capped": capped,
            "counts": [s.count for s in steps], "lines": lines}


def _about(agent: "Agent", label: str, text: str, limit: int) -> dict[str, Any]:
    kg = agent.kg
    sid = kg.lookup(label) if label else None
    if sid is None:
        raise InputError(f"no symbol {label!r} in the graph" if label else "about what? e.g. about krill",
                         field="query")
    triples = [t for t in kg.adjacent(sid) if not kg.is_meta_triple(t)]
    rows = [triple_row(kg, t) for t in triples[:limit]]
    lines = [_triple_line(r) for r in rows]
    if len(triples) > len(rows):
        lines.append(f"… {len(rows)} of {len(triples)} shown")
    if not triples:
        lines.append(f"{label}: no triple (only the agent's bookkeeping mentions it)")
    return {"query": text, "kind": "about", "cycle": agent.cycle, "columns": ["triple", "source"], "rows": rows,
            "total": len(triples), "shown": len(rows), "capped": False, "lines": lines}


def _memory(agent: "Agent", words: str, text: str, limit: int) -> dict[str, Any]:
    want = words.lower().split()
    entries = [e for e in agent.wm.recent(len(agent.wm)) if all(w in e.content.lower() for w in want)]
    rows = [{"id": e.id, "cycle": e.cycle, "kind": e.kind, "relevance": round(e.relevance, 3),
             "content": e.content} for e in entries[:limit]]
    lines = [f"#{r['id']} cycle {r['cycle']} {r['kind']} ({r['relevance']:.2f}): {r['content']}" for r in rows]
    if not entries:
        lines.append("no working-memory entry" + (f" holds {words.strip()!r}" if want else ""))
    elif len(entries) > len(rows):
        lines.append(f"… {len(rows)} of {len(entries)} shown")
    return {"query": text, "kind": "memory", "cycle": agent.cycle, "columns": ["id", "cycle", "kind", "content"],
            "rows": rows, "total": len(entries), "shown": len(rows), "capped": False, "lines": lines}


def _goals(agent: "Agent", words: str, text: str, limit: int) -> dict[str, Any]:
    want = words.lower().split()
    goals = [g for g in sorted(agent.goals.values(), key=lambda g: g.id)
             if all(w in g.description.lower() for w in want)]
    rows = [{"id": g.id, "description": g.description, "status": g.status, "priority": g.priority,
             "criteria": g.criteria, "coverage": round(g.coverage, 3), "parent": g.parent} for g in goals[:limit]]
    lines = [f"#{r['id']} {r['status']} p{r['priority']} {r['coverage']:.0%}: {r['description']}"
             + (f"  (criteria: {r['criteria']})" if r["criteria"] else "") for r in rows]
    if not goals:
        lines.append("no goal" + (f" mentions {words.strip()!r}" if want else ""))
    return {"query": text, "kind": "goals", "cycle": agent.cycle, "columns": ["id", "status", "priority", "description"],
            "rows": rows, "total": len(goals), "shown": len(rows), "capped": False, "lines": lines}
