"""Rewinds restore the scenario's base graph by undoing what a run added (kg.truncate),
not by loading it again: the undone graph is the base graph exactly (every index, in the same
form), a rewound agent goes on exactly as the original run did, and nothing one rewound
state added (a fork's edits, a later cycle's triples) is seen by the next rewind."""

from akh_tui.engine.kg import KnowledgeGraph


def fingerprint(kg: KnowledgeGraph) -> dict:
    """Every index of the graph as plain data (the caches and listeners aside): two graphs
    with equal fingerprints answer every query alike, in the same order."""
    skip = {"listeners", "_nbrs", "symbol_version"}
    out = {k: v for k, v in vars(kg).items() if k not in skip}
    out["symbols"] = [(s.id, s.label, s.kind, s.meta, s.key) for s in kg.symbols]
    out["log"] = [tuple(t) for t in kg.log]  # seq included (Triple equality leaves it out)
    out["_sp"] = {k: (tuple(v), "T") if v.__class__.__name__ == "Triple" else (type(v).__name__, repr(v))
                  for k, v in kg._sp.items()}
    return out


def base_graph() -> KnowledgeGraph:
    kg = KnowledgeGraph()
    for i in range(12):
        kg.add("whale", "is-a", f"class-{i}")  # a (s, p) key that becomes a dict
    kg.add("orca", "is-a", "class-1")
    kg.add("orca", "lives-in", "ocean")
    kg.add("goal:1", "agent:description", "desc:find whales")  # metadata
    kg.add("blue whale", "eats", "krill")
    return kg


def test_truncate_undoes_every_addition_to_the_same_indexes():
    kg = base_graph()
    before = fingerprint(kg)
    n_sym, n_tri = len(kg.symbols), len(kg.log)
    kg.neighbours(kg.lookup("whale"))  # a neighbour set that the additions touch
    # additions of every kind: new symbols and tokens, a short list becoming longer, a list
    # becoming a dict, a dict growing, metadata triples, a derivation, (p, o) lists
    t = kg.add("orca", "is-a", "mammal", 0.9, "inferred:transitive", 3)
    kg.derivations[t.key] = ("transitive", ((1, 2, 3),))
    for i in range(12, 20):
        kg.add("whale", "is-a", f"class-{i}", cycle=4)
    for i in range(6):
        kg.add("krill", "is-a", f"class-{i}", cycle=5)  # 'krill is-a' list grows past one
    kg.add("goal:2", "agent:description", "desc:whale krill", cycle=5)
    kg.add("blue whale", "lives-in", "ocean", cycle=6)  # (lives-in, ocean) gets a second subject
    kg.symbol("humpback whale")  # shares the token 'whale'
    assert fingerprint(kg) != before
    removed = kg.truncate(n_sym, n_tri)
    assert [x.key for x in removed][:1] == [t.key] and len(removed) == 1 + 8 + 6 + 1 + 1
    assert fingerprint(kg) == before
    assert fingerprint(kg) == fingerprint(base_graph())  # the same as a graph built afresh
    whale = kg.lookup("whale")
    assert kg.neighbours(whale) == {kg.lookup(f"class-{i}") for i in range(12)}
    assert kg.by_token("whale") == [whale, kg.lookup("blue whale")]
    assert kg.derivations == {}


def test_truncate_refuses_sizes_that_are_not_a_point_of_its_history():
    kg = base_graph()
    n_sym = len(kg.symbols)
    kg.add("narwhal", "is-a", "whale")
    try:
        kg.truncate(n_sym, len(kg.log))  # the symbols go, their triple would stay
    except ValueError as exc:
        assert "still has triples" in str(exc)
    else:
        raise AssertionError("truncate kept a triple of a removed symbol")
