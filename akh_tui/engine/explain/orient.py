"""What Orient saw (issue 13 §1), and a symbol inspector.

For a goal (or one symbol): its symbols, the two-hop walk spreading activation made with each
node's activation exactly as Orient computed it (`Agent.spread` reports its own walk), the
adjacent triples that made K, and the triples added this cycle, each marked by provenance.

Only the neighbourhood is read: the walk is bounded by Orient's own budget
(ACTIVATION_BUDGET edges, `activation_fanout` per node), K by ADJACENT_CAP, the cycle's
additions by `ADDED_CAP` read back from the end of the graph's log, a symbol's triples by
`SYMBOL_TRIPLES`. Nothing here iterates the graph, so the cost does not grow with it.

Plain JSON-able dicts; deterministic (lists in the order the engine produced them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cycle.agent import ADJACENT_CAP

if TYPE_CHECKING:
    from ..cycle.agent import Agent
    from ..knowledge.kg import KnowledgeGraph, Triple

ADDED_CAP = 200  # triples added this cycle that the view lists (newest last)
SYMBOL_TRIPLES = 200  # triples a symbol inspector lists
CHAIN_DEPTH = 6  # derivation chain depth shown
CHAIN_NODES = 64  # derivation chain nodes shown in all


def provenance_kind(provenance: str) -> dict[str, str]:
    """A triple's provenance as a kind and a phrase: asserted, inferred (by which rule),
    hypothesis (synthesize_triple), tool (by which tool), user."""
    if provenance.startswith("inferred:"):
        rule = provenance.split(":", 1)[1]
        return {"kind": "inferred", "by": rule, "text": f"inferred by rule {rule}"}
    if provenance == "tool:synthesize_triple":
        return {"kind": "hypothesis", "by": "synthesize_triple", "text": "hypothesis (synthesize_triple)"}
    if provenance.startswith("tool:"):
        tool = provenance.split(":", 1)[1]
        return {"kind": "tool", "by": tool, "text": f"added by tool {tool}"}
    if provenance == "user":
        return {"kind": "user", "by": "user", "text": "from the user"}
    return {"kind": "asserted", "by": "", "text": "asserted (scenario file)"}


def triple_dict(kg: "KnowledgeGraph", t: "Triple") -> dict[str, Any]:
    """One triple with its labels, confidence, cycle and provenance."""
    sy = kg.symbols
    return {"subject": sy[t.subject].label, "predicate": sy[t.predicate].label, "object": sy[t.object].label,
            "text": kg.text(t), "confidence": t.confidence, "cycle": t.cycle, "provenance": t.provenance,
            **{f"provenance_{k}": v for k, v in provenance_kind(t.provenance).items()}}


def _walk(agent: "Agent", seeds: list[int]) -> dict[str, Any]:
    kg = agent.kg
    walked: list = []
    activation = agent.spread(seeds, walked)
    order = sorted(activation, key=lambda s: (-activation[s], s))
    nodes = [{"symbol": kg.label(s), "activation": 1.0, "hop": 0, "seed": True} for s in seeds]
    hop_of: dict[int, int] = {}
    via: dict[int, dict] = {}
    edges = []
    for hop, node, t, value, raised in walked:
        other = t.object if t.subject == node else t.subject
        edges.append({"hop": hop, "from": kg.label(node), "to": kg.label(other), "triple": kg.text(t),
                      "provenance": t.provenance, "confidence": t.confidence, "value": value, "raised": raised})
        if raised:
            hop_of[other] = hop
            via[other] = {"from": kg.label(node), "triple": kg.text(t)}
    nodes += [{"symbol": kg.label(s), "activation": activation[s], "hop": hop_of.get(s, 0), "seed": False,
               "via": via.get(s)} for s in order]
    return {"nodes": nodes, "edges": edges, "edges_read": len(walked)}


def _adjacent(kg: "KnowledgeGraph", symbols: list[int]) -> list["Triple"]:
    """The triples Orient counted for K, as it counts them (distinct, up to ADJACENT_CAP)."""
    seen: dict[tuple[int, int, int], "Triple"] = {}
    for s in symbols:
        for t in kg.adjacent(s, limit=ADJACENT_CAP):
            seen.setdefault(t.key, t)
        if len(seen) >= ADJACENT_CAP:
            break
    return list(seen.values())[:ADJACENT_CAP]


def added_this_cycle(kg: "KnowledgeGraph", cycle: int, cap: int = ADDED_CAP) -> list["Triple"]:
    """Non-metadata triples added at `cycle`, read back from the end of the log (additions are
    appended in cycle order), at most `cap` of them."""
    out: list["Triple"] = []
    for t in reversed(kg.log):
        if t.cycle < cycle:
            break
        if t.cycle == cycle and not kg.is_meta_triple(t):
            out.append(t)
            if len(out) >= cap:
                break
    out.reverse()
    return out


def orient(agent: "Agent", goal_id: int | None = None, symbol: str | None = None) -> dict[str, Any]:
    """What Orient saw for a goal (default: the focus goal), or from one symbol.

    Returns {"cycle", "goal" ({id, description} or None), "symbols" (labels), "activation"
    ({nodes: [{symbol, activation, hop, seed, via}], edges: [{hop, from, to, triple,
    provenance, confidence, value, raised}], edges_read}), "K" (bool), "adjacent" (triple
    dicts that made K), "added" (triple dicts added this cycle, with provenance)}.
    Raises KeyError naming an unknown goal or symbol."""
    kg = agent.kg
    goal = None
    if symbol is not None:
        sid = kg.lookup(symbol)
        if sid is None:
            raise KeyError(f"no symbol {symbol!r} in the graph")
        seeds = [sid]
    else:
        g = agent.goals.get(goal_id) if goal_id is not None else agent.focus_goal()
        if g is None:
            raise KeyError(f"no goal #{goal_id}" if goal_id is not None else "no focus goal")
        goal = {"id": g.id, "description": g.description, "status": g.status}
        seeds = agent.goal_symbols(g)
    adjacent = _adjacent(kg, seeds)
    return {
        "cycle": agent.cycle,
        "goal": goal,
        "symbols": [kg.label(s) for s in seeds],
        "activation": _walk(agent, seeds),
        "K": bool(adjacent),
        "adjacent": [triple_dict(kg, t) for t in adjacent],
        "added": [triple_dict(kg, t) for t in added_this_cycle(kg, agent.cycle)],
    }


def derivation(kg: "KnowledgeGraph", key: tuple[int, int, int], depth: int = 0,
               budget: list[int] | None = None) -> dict[str, Any]:
    """The derivation tree of a triple: {"triple", "provenance", "cycle", "rule",
    "premises": [...]}; asserted/tool/user triples are leaves. Bounded in depth and size."""
    budget = budget if budget is not None else [CHAIN_NODES]
    budget[0] -= 1
    t = kg.get(*key)
    node: dict[str, Any] = {"triple": kg.text(t) if t is not None else "?",
                            "provenance": t.provenance if t is not None else "",
                            "cycle": t.cycle if t is not None else None, "rule": None, "premises": []}
    d = kg.derivations.get(key)
    if d is None:
        return node
    node["rule"] = d[0]
    if depth >= CHAIN_DEPTH or budget[0] <= 0:
        node["truncated"] = True
        return node
    node["premises"] = [derivation(kg, p, depth + 1, budget) for p in d[1]]
    return node


def chain_lines(tree: dict[str, Any], indent: int = 0) -> list[str]:
    """A derivation tree as indented lines: 'phobos is-a moon  [moon-of-planet, cycle 6]'."""
    pad = "  " * indent
    if tree["rule"] is not None:
        head = f"{pad}{tree['triple']}  [rule {tree['rule']}, cycle {tree['cycle']}]"
    else:
        head = f"{pad}{tree['triple']}  [{provenance_kind(tree['provenance'])['text']}]"
    out = [head]
    for p in tree["premises"]:
        out += chain_lines(p, indent + 1)
    if tree.get("truncated"):
        out.append(pad + "  …")
    return out


def symbol_info(agent: "Agent", label: str) -> dict[str, Any]:
    """A symbol inspector: {"symbol", "kind", "triples" (out then in, each with provenance and,
    for an inferred one, its "derivation" tree), "total" (how many it has), "shown"}.
    Raises KeyError for an unknown label."""
    kg = agent.kg
    sid = kg.lookup(label)
    if sid is None:
        raise KeyError(f"no symbol {label!r} in the graph")
    triples = kg.adjacent(sid, limit=SYMBOL_TRIPLES)
    rows = []
    for t in triples:
        row = triple_dict(kg, t)
        row["direction"] = "out" if t.subject == sid else "in"
        if t.key in kg.derivations:
            row["derivation"] = derivation(kg, t.key)
        rows.append(row)
    sym = kg.symbols[sid]
    return {"symbol": sym.label, "kind": sym.kind, "triples": rows, "total": kg.adjacent_count(sid),
            "shown": len(rows)}
