"""The knowledge graph's own store and indexes (no networkx): what `add` builds, the bulk loader
builds too; neighbour tests agree with the triples; a bad triple file still loads nothing. And
the hot path's rewritten small pieces (label words, a candidate's dict) against the originals."""

from __future__ import annotations

import subprocess
import sys

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.knowledge.kg import KnowledgeGraph, Triple, iter_triple_lines

ROWS = [
    # a hub (s, p) with more objects than the short list holds, a duplicate, a self-loop,
    # metadata triples (meta subject, meta predicate, meta object), confidences
    *[("zoo", "has", f"animal-{i}", 1.0) for i in range(20)],
    ("zoo", "has", "animal-3", 0.5),  # duplicate: ignored, the first stays
    ("whale", "is-a", "mammal", 0.9),
    ("whale", "eats", "krill", 1.0),
    ("whale", "likes", "whale", 0.7),
    ("goal:1", "agent:description", "desc:find whales", 1.0),
    ("whale", "agent:tag", "dolphin", 1.0),
    ("dolphin", "is-a", "mammal", 1.0),
    ("animal-4", "eats", "whale", 0.3),
]


def by_add() -> KnowledgeGraph:
    kg = KnowledgeGraph()
    for s, p, o, c in ROWS:
        kg.add(s, p, o, c)
    return kg


def by_rows() -> KnowledgeGraph:
    kg = KnowledgeGraph()
    kg.load_rows((s, p, o, c, n) for n, (s, p, o, c) in enumerate(ROWS, 1))
    return kg


def state(kg: KnowledgeGraph) -> dict:
    """Everything a caller can read, through the public methods only."""
    ids = range(len(kg.symbols))
    return {
        "symbols": [(y.id, y.label, y.kind, y.meta, y.key) for y in kg.symbols],
        "log": list(kg.log), "len": len(kg), "non_meta": kg.non_meta_count,
        "objects": {(s, p): kg.objects(s, p) for s in ids for p in ids if kg.objects(s, p)},
        "subjects": {(p, o): kg.subjects(p, o) for p in ids for o in ids if kg.subjects(p, o)},
        "by_predicate": {p: list(kg.by_predicate(p)) for p in ids},
        "out": {s: (kg.facts_out(s), list(kg.out_triples(s))) for s in ids},
        "in": {s: (kg.facts_in(s), list(kg.in_triples(s))) for s in ids},
        "tokens": {w: kg.by_token(w) for w in ("zoo", "animal", "3", "whale")},
    }


def test_bulk_loader_builds_what_add_builds():
    a, b = by_add(), by_rows()
    assert state(a) == state(b)
    assert len(a) == len(ROWS) - 1  # the duplicate is not a second triple


def test_lookups_keep_insertion_order_past_the_short_list():
    kg = by_add()
    zoo, has = kg.lookup("zoo"), kg.lookup("has")
    assert [kg.label(o) for o in kg.objects(zoo, has)] == [f"animal-{i}" for i in range(20)]
    t = kg.get(zoo, has, kg.lookup("animal-3"))
    assert t is not None and t.confidence == 1.0  # the duplicate did not replace it
    assert kg.get(zoo, has, kg.lookup("whale")) is None
    assert all(kg.get(*t.key) is t for t in kg.log)  # the stored object, not a copy
    assert kg.add("zoo", "has", "animal-19") is None and len(kg) == len(ROWS) - 1


def test_is_neighbour_agrees_with_the_triples_also_after_additions():
    kg = by_add()
    n = len(kg.symbols)

    def brute(a: int, b: int) -> bool:
        return any((t.subject, t.object) in ((a, b), (b, a)) for t in kg.log)

    whale = kg.lookup("whale")
    assert kg.is_neighbour(whale, whale)  # the self-loop
    assert kg.is_neighbour(whale, kg.lookup("dolphin"))  # through a metadata predicate
    for a in range(n):
        for b in range(n):
            assert kg.is_neighbour(a, b) == brute(a, b), (kg.label(a), kg.label(b))
    # neighbour sets built above are kept up to date by later additions
    kg.add("krill", "lives-in", "ocean")
    kg.add("ocean", "near", "whale")
    for a in range(len(kg.symbols)):
        for b in range(len(kg.symbols)):
            assert kg.is_neighbour(a, b) == brute(a, b)


def test_by_predicate_before_and_after_additions():
    kg = by_add()
    has, eats = kg.lookup("has"), kg.lookup("eats")
    assert [kg.label(o) for _s, o in kg.by_predicate(has)] == [f"animal-{i}" for i in range(20)]
    kg.add("orca", "eats", "seal")
    assert [(kg.label(s), kg.label(o)) for s, o in kg.by_predicate(eats)] == [
        ("whale", "krill"), ("animal-4", "whale"), ("orca", "seal")]
    assert kg.triples_by_predicate(kg.lookup("orca")) == []


def test_adjacency_reads_non_metadata_triples_out_first():
    kg = by_add()
    whale = kg.lookup("whale")
    got = [kg.text(t) for t in kg.adjacent(whale)]
    assert got == ["whale is-a mammal", "whale eats krill", "whale likes whale", "whale likes whale", "animal-4 eats whale"]
    assert kg.adjacent(whale, limit=2) == kg.facts_out(whale)[:2]
    assert kg.adjacent_count(whale) == 5


def test_from_files_refuses_a_bad_line_naming_file_and_line(tmp_path):
    good = tmp_path / "good.tsv"
    good.write_text("whale\tis-a\tmammal\n# a comment\n\ndolphin\tis-a\tmammal\t0.8\n")
    bad = tmp_path / "bad.tsv"
    bad.write_text("orca\tis-a\tmammal\norca\tis-a\n")
    kg = KnowledgeGraph.from_files([good])
    ref = KnowledgeGraph()
    ref.load_files([good])
    assert state(kg) == state(ref) and len(kg) == 2
    with pytest.raises(InputError) as err:
        KnowledgeGraph.from_files([good, bad])
    assert err.value.file == str(bad) and err.value.line == 2


def test_triple_lines_split_at_newline_only():
    rows = list(iter_triple_lines(["a\x0cb\tp\to", "", "x\tp\ty\t0.5\r"], "f"))
    assert rows == [("a\x0cb", "p", "o", 1.0, 1), ("x", "p", "y", 0.5, 3)]


def test_triples_are_immutable():
    t = Triple(1, 2, 3)
    with pytest.raises(AttributeError):
        t.confidence = 0.5  # type: ignore[misc]
    assert t.key == (1, 2, 3) and t == Triple(1, 2, 3, 1.0, "asserted", 0)


def test_the_graph_does_not_load_networkx():
    code = "import sys, akh_tui.engine.knowledge.kg, akh_tui.engine.cycle.agent; print('networkx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_label_words_split_as_the_regex_did():
    import random
    import re

    from akh_tui.engine.text import raw_words

    split = re.compile(r"[\s\-_]+")
    spaces = [chr(c) for c in range(0x110000) if re.fullmatch(r"\s", chr(c))]
    alphabet = ["a", "B", "é", "-", "_", "--", ".", "İ", "ß", "9", *spaces]
    rng = random.Random(7)
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert raw_words(text) == [w for w in split.split(text.lower()) if w], repr(text)


def test_candidate_dict_lists_every_factor_in_order():
    from akh_tui.engine.cycle.scoring import FACTORS, Candidate

    c = Candidate("reason", True, None, 0.5, 0.4, 0.15, 0.2, 0.0, 0.03, 0.1, input="x")
    d = c.to_dict()
    assert list(d) == ["tool", "offered", "why_not", "score", *FACTORS, "input"]
    assert [d[f] for f in FACTORS] == [getattr(c, f) for f in FACTORS]


def test_whole_file_reading_gives_the_line_readers_lines(tmp_path):
    from akh_tui.engine.errors import user_file_lines
    from akh_tui.engine.knowledge.kg import _whole_file_lines

    cases = [b"", b"a\tb\tc", b"a\tb\tc\n", b"a\tb\tc\r\n\r\nx\ty\tz\r", b"\n\n", b"a\rb\tp\to\r\n", "é\tp\to\n".encode()]
    for i, data in enumerate(cases):
        path = tmp_path / f"{i}.tsv"
        path.write_bytes(data)
        used_a, used_b = [0, 0], [0, 0]
        fast = _whole_file_lines(path, used_a, 100, 10_000)
        assert fast is not None
        assert list(fast) == list(user_file_lines(path, "triple file", 10_000, 100, used_b)), data
        assert used_a == used_b, data


def test_caps_and_bad_bytes_are_refused_where_the_line_reader_refuses_them(tmp_path):
    many = tmp_path / "many.tsv"
    many.write_text("".join(f"s{i}\tp\to\n" for i in range(30)))
    with pytest.raises(InputError) as err:
        KnowledgeGraph.from_files([many], max_lines=25)
    assert err.value.line == 26 and "more than 25 lines" in str(err.value)
    with pytest.raises(InputError) as err:
        KnowledgeGraph.from_files([many], max_bytes=100)
    assert "more than 100 bytes" in str(err.value)
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"a\tb\tc\nd\t\xff\tf\n")
    with pytest.raises(InputError) as err:
        KnowledgeGraph.from_files([bad])
    assert err.value.line == 2 and "not UTF-8" in str(err.value)
    assert len(KnowledgeGraph.from_files([many])) == 30


def test_by_predicate_is_a_live_sequence():
    kg = by_add()
    eats = kg.lookup("eats")
    pairs = kg.by_predicate(eats)
    assert len(pairs) == 2 and pairs[0] == (kg.lookup("whale"), kg.lookup("krill"))
    assert pairs[-1:] == [(kg.lookup("animal-4"), kg.lookup("whale"))]
    kg.add("orca", "eats", "seal")
    assert len(pairs) == 3 and pairs[2] == (kg.lookup("orca"), kg.lookup("seal"))


def test_adding_saved_triples_in_bulk_builds_what_add_builds_also_into_a_copy():
    """kg.add_saved (a world's rewind adds each agent's saved triples back with it) against
    `add` of each: into a fresh graph, and into a copy of a graph sharing its lists (copy on
    write), which the original must not see; duplicates skipped, derivations kept."""
    from akh_tui.engine.cycle.state import triple_row

    src = by_add()
    src.add("orca", "eats", "whale", 0.8, "inferred:hunts", 3)
    src.derivations[src.log[-1].key] = ("hunts", ((1, 2, 3),))
    rows = [triple_row(src, t) for t in src.log[5:]] + [triple_row(src, src.log[7])]  # (the last: a duplicate)
    base = KnowledgeGraph()
    for s, p, o, c in ROWS[:5]:
        base.add(s, p, o, c)
    before = state(base)
    one, two = base.copy(), base.copy()
    for sym in src.symbols[len(base.symbols):]:
        one.symbol(sym.label, sym.kind)
        two.symbol(sym.label, sym.kind)
    seen: list = []
    two.listeners.append(seen.append)
    for s, p, o, conf, prov, cyc, deriv in rows:
        t = one.add(s, p, o, conf, prov, cyc)
        if t is not None and deriv:
            one.derivations[t.key] = (deriv[0], tuple(tuple(k) for k in deriv[1]))
    assert two.add_saved(rows) == len(rows) - 1
    assert state(two) == state(one) and two.derivations == one.derivations
    assert [t.seq for t in two.log] == list(range(len(two.log))) and seen == two.log[5:]
    assert state(base) == before  # the graph copied from saw nothing
    two.add("zoo", "has", "animal-99")  # and the copy goes on as its own
    assert state(base) == before and len(two) == len(one) + 1
