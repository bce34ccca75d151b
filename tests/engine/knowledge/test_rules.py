"""Rule files and incremental forward chaining (SPEC §5, infer_rules)."""

from __future__ import annotations

import textwrap

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.knowledge.kg import KnowledgeGraph
from akh_tui.engine.knowledge.rules import Rule, RuleEngine, RuleSet, load_rules, parse_rules

RULES = textwrap.dedent(
    """\
    transitive = ["located-in", "part-of"]
    symmetric  = ["borders"]
    inherit    = ["has-property"]

    [[rule]]
    name = "milk-means-mammal"
    if   = [["?x", "has-property", "gives-milk"]]
    then = [["?x", "is-a", "mammal"]]

    [[rule]]
    name = "grandparent"
    if   = [["?x", "parent-of", "?y"], ["?y", "parent-of", "?z"]]
    then = [["?x", "grandparent-of", "?z"]]
    """
)


def engine(kg: KnowledgeGraph, text: str = RULES, **kw) -> RuleEngine:
    return RuleEngine(kg, parse_rules(text), **kw)


def labels(kg: KnowledgeGraph, triples) -> list[tuple[str, str, str]]:
    return [(kg.label(t.subject), kg.label(t.predicate), kg.label(t.object)) for t in triples]


def key(kg: KnowledgeGraph, s: str, p: str, o: str):
    return (kg.lookup(s), kg.lookup(p), kg.lookup(o))


def drain(eng: RuleEngine, cycle: int = 1) -> list:
    out = []
    while eng.pending():
        out.extend(eng.run(cycle))
    return out


# ---- built-in rules ---------------------------------------------------------------------

def test_transitive_chain_derives_all_closures_with_provenance_and_min_confidence():
    kg = KnowledgeGraph()
    kg.add("a", "located-in", "b", 0.9)
    kg.add("b", "located-in", "c", 0.8)
    kg.add("c", "located-in", "d", 0.7)
    new = engine(kg).run(cycle=3)
    assert sorted(labels(kg, new)) == [
        ("a", "located-in", "c"), ("a", "located-in", "d"), ("b", "located-in", "d"),
    ]
    got = {(kg.label(t.subject), kg.label(t.object)): t for t in new}
    assert got[("a", "c")].confidence == pytest.approx(0.8)
    assert got[("b", "d")].confidence == pytest.approx(0.7)
    assert got[("a", "d")].confidence == pytest.approx(0.7)
    assert all(t.provenance == "inferred:transitive" and t.cycle == 3 for t in new)
    assert all(kg.get(*t.key) is t for t in new)


def test_transitive_skips_self_loops():
    kg = KnowledgeGraph()
    kg.add("a", "part-of", "b")
    kg.add("b", "part-of", "a")
    new = engine(kg).run(1)
    assert new == []


def test_symmetric():
    kg = KnowledgeGraph()
    kg.add("france", "borders", "spain", 0.6)
    new = engine(kg).run(1)
    assert labels(kg, new) == [("spain", "borders", "france")]
    assert new[0].provenance == "inferred:symmetric"
    assert new[0].confidence == pytest.approx(0.6)
    assert kg.derivations[new[0].key] == ("symmetric", (key(kg, "france", "borders", "spain"),))


def test_symmetric_and_transitive_together_do_not_make_self_loops():
    kg = KnowledgeGraph()
    kg.add("a", "near", "b")
    kg.add("b", "near", "c")
    new = engine(kg, 'transitive = ["near"]\nsymmetric = ["near"]\n').run(1)
    got = set(labels(kg, new))
    assert got == {("b", "near", "a"), ("c", "near", "b"), ("a", "near", "c"), ("c", "near", "a")}


@pytest.mark.parametrize("isa_first", [True, False])
def test_inherit_from_either_trigger_direction(isa_first):
    kg = KnowledgeGraph()
    eng = engine(kg)
    if isa_first:
        kg.add("whale", "is-a", "mammal", 0.9)
        assert eng.run(1) == []
        kg.add("mammal", "has-property", "warm-blooded", 0.8)
    else:
        kg.add("mammal", "has-property", "warm-blooded", 0.8)
        assert eng.run(1) == []
        kg.add("whale", "is-a", "mammal", 0.9)
    new = eng.run(2)
    assert labels(kg, new) == [("whale", "has-property", "warm-blooded")]
    assert new[0].provenance == "inferred:inherit"
    assert new[0].confidence == pytest.approx(0.8)
    assert kg.derivations[new[0].key] == (
        "inherit",
        (key(kg, "whale", "is-a", "mammal"), key(kg, "mammal", "has-property", "warm-blooded")),
    )


def test_inherit_applies_through_is_a_chains():
    kg = KnowledgeGraph()
    kg.add("whale", "is-a", "mammal")
    kg.add("mammal", "is-a", "animal")
    kg.add("animal", "has-property", "alive")
    new = engine(kg).run(1)
    assert set(labels(kg, new)) == {("mammal", "has-property", "alive"), ("whale", "has-property", "alive")}


# ---- [[rule]]s --------------------------------------------------------------------------

def test_custom_rule_milk_means_mammal():
    kg = KnowledgeGraph()
    kg.add("whale", "has-property", "gives-milk", 0.7)
    kg.add("shark", "has-property", "has-fins")
    new = engine(kg).run(4)
    assert labels(kg, new) == [("whale", "is-a", "mammal")]
    assert new[0].provenance == "inferred:milk-means-mammal"
    assert new[0].confidence == pytest.approx(0.7)
    assert new[0].cycle == 4
    assert kg.derivations[new[0].key] == (
        "milk-means-mammal", (key(kg, "whale", "has-property", "gives-milk"),)
    )


def test_custom_rule_output_feeds_the_builtin_rules():
    kg = KnowledgeGraph()
    kg.add("mammal", "has-property", "warm-blooded")
    kg.add("whale", "has-property", "gives-milk")
    new = engine(kg).run(1)
    assert labels(kg, new) == [
        ("whale", "is-a", "mammal"), ("whale", "has-property", "warm-blooded"),
    ]
    inherited = kg.derivations[new[1].key]
    assert inherited[0] == "inherit" and new[0].key in inherited[1]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_two_premise_rule_joins_whichever_premise_arrives_last(order):
    kg = KnowledgeGraph()
    eng = engine(kg)
    facts = [("ann", "parent-of", "bob", 0.9), ("bob", "parent-of", "cid", 0.6)]
    kg.add(*facts[order[0]])
    assert eng.run(1) == []
    kg.add(*facts[order[1]])
    new = eng.run(2)
    assert labels(kg, new) == [("ann", "grandparent-of", "cid")]
    assert new[0].confidence == pytest.approx(0.6)
    # premise keys are in the rule's premise order, whichever triple triggered the join
    assert kg.derivations[new[0].key] == (
        "grandparent",
        (key(kg, "ann", "parent-of", "bob"), key(kg, "bob", "parent-of", "cid")),
    )


def test_rule_with_constants_repeated_vars_and_several_conclusions():
    text = textwrap.dedent(
        """\
        [[rule]]
        name = "european"
        if   = [["?x", "lives-in", "?c"], ["?c", "part-of", "europe"]]
        then = [["?x", "is-a", "european"], ["?c", "has-resident", "?x"]]

        [[rule]]
        name = "self-aware"
        if   = [["?x", "knows", "?x"]]
        then = [["?x", "is-a", "self-aware"]]
        """
    )
    kg = KnowledgeGraph()
    kg.add("ana", "lives-in", "lisbon")
    kg.add("li", "lives-in", "beijing")
    kg.add("beijing", "part-of", "asia")
    kg.add("lisbon", "part-of", "europe")
    kg.add("ana", "knows", "li")
    kg.add("li", "knows", "li")
    new = engine(kg, text).run(1)
    assert labels(kg, new) == [
        ("ana", "is-a", "european"), ("lisbon", "has-resident", "ana"), ("li", "is-a", "self-aware"),
    ]


# ---- incremental behaviour --------------------------------------------------------------

def test_second_run_does_no_work_and_a_new_triple_derives_only_its_consequences():
    kg = KnowledgeGraph()
    for i in range(20):
        kg.add(f"town{i}", "located-in", f"region{i}")
        kg.add(f"region{i}", "located-in", f"country{i}")
    eng = engine(kg)
    first = eng.run(1)
    assert len(first) == 20
    assert eng.cursor == len(kg.log) and eng.pending() == 0

    assert eng.run(2) == []
    assert eng.joined == 0 and eng.probed == 0
    assert eng.cursor == len(kg.log)

    kg.add("country3", "located-in", "continent")
    new = eng.run(3)
    assert set(labels(kg, new)) == {
        ("region3", "located-in", "continent"), ("town3", "located-in", "continent"),
    }
    assert eng.joined == 1 + len(new)
    assert eng.cursor == len(kg.log)


def test_metadata_triples_never_take_part():
    kg = KnowledgeGraph()
    kg.add("a", "located-in", "b")
    kg.add("b", "located-in", "tag:remote")
    kg.add("goal:1", "located-in", "a")
    kg.add("agent:self", "borders", "x")
    kg.add("status:active", "is-a", "mammal")
    kg.add("mammal", "has-property", "warm-blooded")
    kg.add("mammal", "has-property", "desc:furry")
    kg.add("summary:s", "has-property", "gives-milk")
    new = engine(kg).run(1)
    assert new == []


def test_max_new_per_call_stops_and_resumes_to_the_same_result():
    def build():
        kg = KnowledgeGraph()
        for i in range(25):
            kg.add(f"n{i}", "part-of", f"n{i + 1}", 1.0 - i / 100)
        kg.add("n0", "borders", "m0")
        kg.add("n0", "parent-of", "n1")
        kg.add("n1", "parent-of", "n2")
        return kg

    kg_full = build()
    full = engine(kg_full).run(1)
    assert len(full) == 25 * 24 // 2 + 2

    kg = build()
    eng = engine(kg, max_new_per_call=7)
    calls = []
    while True:
        got = eng.run(1)
        if not got:
            break
        assert len(got) <= 7
        calls.append(got)
    assert len(calls) > 1 and all(len(c) == 7 for c in calls[:-1])
    assert eng.pending() == 0
    bounded = [t for c in calls for t in c]
    assert bounded == full  # Triples hold ids, and both graphs were built identically
    assert kg.derivations == kg_full.derivations


def test_persisted_cursor_resumes_in_a_new_engine():
    kg = KnowledgeGraph()
    for i in range(10):
        kg.add(f"n{i}", "part-of", f"n{i + 1}")
    eng = engine(kg, max_new_per_call=5)
    first = eng.run(1)
    assert len(first) == 5 and eng.pending() > 0
    again = engine(kg)
    again.cursor = eng.cursor
    rest = again.run(1)
    expected = {(f"n{i}", "part-of", f"n{j}") for i in range(11) for j in range(i + 2, 11)}
    assert set(labels(kg, first + rest)) == expected


def test_derivations_chain_back_to_asserted_triples():
    kg = KnowledgeGraph()
    kg.add("paris", "located-in", "france")
    kg.add("france", "located-in", "europe")
    kg.add("europe", "located-in", "earth")
    engine(kg).run(1)
    top = key(kg, "paris", "located-in", "earth")
    seen, stack = [], [top]
    while stack:
        k = stack.pop()
        t = kg.get(*k)
        if t.provenance == "asserted":
            seen.append(k)
            assert k not in kg.derivations
            continue
        name, premises = kg.derivations[k]
        assert name == "transitive" and len(premises) == 2
        stack.extend(premises)
    assert sorted(seen) == sorted(t.key for t in kg.log if t.provenance == "asserted")


def test_derivation_order_is_deterministic():
    def once():
        kg = KnowledgeGraph()
        for s, p, o in [
            ("whale", "has-property", "gives-milk"), ("mammal", "has-property", "warm-blooded"),
            ("mammal", "is-a", "animal"), ("animal", "has-property", "alive"),
            ("paris", "located-in", "france"), ("france", "located-in", "europe"),
            ("france", "borders", "spain"), ("ann", "parent-of", "bob"), ("bob", "parent-of", "cid"),
        ]:
            kg.add(s, p, o)
        return labels(kg, engine(kg).run(1)), dict(kg.derivations)

    (a, da), (b, db) = once(), once()
    assert a == [
        ("whale", "is-a", "mammal"), ("whale", "has-property", "warm-blooded"),
        ("mammal", "has-property", "alive"), ("paris", "located-in", "europe"),
        ("spain", "borders", "france"), ("ann", "grandparent-of", "cid"),
        ("whale", "has-property", "alive"),  # joins later: its premise was derived above
    ]
    assert a == b
    assert da == db


def test_empty_ruleset_only_advances_the_cursor():
    kg = KnowledgeGraph()
    kg.add("a", "located-in", "b")
    kg.add("b", "located-in", "c")
    eng = RuleEngine(kg, RuleSet.empty())
    assert eng.run(1) == [] and eng.cursor == 2 and eng.pending() == 0


def test_cost_of_one_new_triple_does_not_depend_on_graph_size():
    kg = KnowledgeGraph()
    preds = ["located-in", "borders", "has-property", "is-a", "parent-of", "likes"]
    for i in range(50_000):
        kg.add(f"e{i}", preds[i % len(preds)], f"f{i}")
    eng = engine(kg)
    derived = drain(eng)
    assert len(derived) == 50_000 // 6 + 1  # the reversed `borders` triples
    assert eng.pending() == 0
    assert eng.run(2) == [] and eng.joined == 0

    kg.add("f0", "located-in", "g")  # extends e0 located-in f0
    new = eng.run(3)
    assert labels(kg, new) == [("e0", "located-in", "g")]
    assert eng.joined == 2  # the new triple and its one consequence
    assert eng.probed <= 5


# ---- RuleSet ----------------------------------------------------------------------------

def test_merged_keeps_order_and_drops_duplicates():
    a = parse_rules(RULES)
    b = parse_rules('transitive = ["part-of", "inside"]\nsymmetric = ["near"]\n')
    m = a.merged(b)
    assert m.transitive == ["located-in", "part-of", "inside"]
    assert m.symmetric == ["borders", "near"]
    assert [r.name for r in m.rules] == ["milk-means-mammal", "grandparent"]
    assert a.merged(a).rules == a.rules
    assert RuleSet.empty().merged(b) == b


def test_parse_structure():
    rs = parse_rules(RULES)
    assert rs.transitive == ["located-in", "part-of"]
    assert rs.inherit == ["has-property"]
    assert rs.rules[0] == Rule(
        "milk-means-mammal", (("?x", "has-property", "gives-milk"),), (("?x", "is-a", "mammal"),)
    )
    assert parse_rules("") == RuleSet.empty()
    assert parse_rules("# nothing\n").is_empty()


def test_load_rules(tmp_path):
    p = tmp_path / "r.toml"
    p.write_text(RULES, encoding="utf-8")
    assert load_rules(p) == parse_rules(RULES)
    with pytest.raises(InputError) as e:
        load_rules(tmp_path / "missing.toml")
    assert e.value.file == str(tmp_path / "missing.toml")


# ---- parse errors -----------------------------------------------------------------------

def err(text: str, file: str | None = "rules.toml") -> InputError:
    with pytest.raises(InputError) as e:
        parse_rules(textwrap.dedent(text), file)
    return e.value


def test_unknown_top_level_key_names_it_with_its_line():
    e = err(
        """\
        # rules
        transitive = ["part-of"]

        transitiv = ["located-in"]
        """
    )
    assert e.line == 4 and e.field == "transitiv" and "transitiv" in e.message
    assert str(e).startswith("rules.toml:4: ")


def test_unknown_table_is_an_unknown_key():
    e = err(
        """\
        symmetric = ["borders"]
        [extra]
        x = 1
        """
    )
    assert e.line == 2 and e.field == "extra"


def test_unknown_key_inside_a_rule_names_it_with_its_line():
    e = err(
        """\
        [[rule]]
        name = "a"
        if = [["?x", "p", "?y"]]
        then = [["?y", "p", "?x"]]

        [[rule]]
        name = "b"
        if = [
            ["?x", "p", "?y"],
            ["?y", "p", "?z"],
        ]
        then = [["?x", "q", "?z"]]
        when = "always"
        """
    )
    assert e.line == 13 and e.field == "rule[1].when" and "when" in e.message


def test_unknown_key_in_an_inline_rule_points_at_that_rule():
    e = err(
        """\
        rule = [
          {name = "a", if = [["?x", "p", "?y"]], then = [["?y", "p", "?x"]]},
          {name = "b", iff = [["?x", "p", "?y"]], then = [["?y", "p", "?x"]]},
        ]
        """
    )
    assert e.line == 3 and e.field == "rule[1].iff"


def test_bad_pattern_names_rule_premise_and_line():
    e = err(
        """\
        [[rule]]
        name = "a"
        if = [["?x", "p", "?y"]]
        then = [["?y", "p", "?x"]]

        [[rule]]
        name = "b"
        if = [["?x", "p", "?y"]]
        then = [["?y", "p", "?x"]]

        [[rule]]
        name = "c"
        if = [
            ["?x", "p"],
        ]
        then = [["?x", "p", "?x"]]
        """
    )
    assert e.field == "rule[2].if[0]" and e.line == 14
    assert "3" in e.message


@pytest.mark.parametrize(
    "body, field, line",
    [
        ('transitive = "part-of"\n', "transitive", 1),
        ('\nsymmetric = ["a", 3]\n', "symmetric[1]", 2),
        ('inherit = [""]\n', "inherit[0]", 1),
        ('[rule]\nname = "x"\n', "rule", 1),
        ('[[rule]]\nname = 5\nif = [["?x","p","?y"]]\nthen = [["?x","q","?y"]]\n', "rule[0].name", 2),
        ('[[rule]]\nname = "x"\nthen = [["?x","q","?y"]]\n', "rule[0].if", 1),
        ('[[rule]]\nname = "x"\nif = []\nthen = [["?x","q","?y"]]\n', "rule[0].if", 3),
        ('[[rule]]\nname = "x"\nif = [["?x","p",3]]\nthen = [["?x","q","?x"]]\n', "rule[0].if[0][2]", 3),
        ('[[rule]]\nname = "x"\nif = "?x p ?y"\nthen = [["?x","q","?y"]]\n', "rule[0].if", 3),
        ('[[rule]]\nname = "transitive"\nif = [["?x","p","?y"]]\nthen = [["?x","q","?y"]]\n',
         "rule[0].name", 2),
        ('[[rule]]\nname = "x"\nif = [["?x","p","goal:1"]]\nthen = [["?x","q","?x"]]\n',
         "rule[0].if[0][2]", 3),
        ('[[rule]]\nname = "x"\nif = [["?","p","?y"]]\nthen = [["?y","q","?y"]]\n', "rule[0].if[0][0]", 3),
    ],
)
def test_wrong_types_name_field_and_line(body, field, line):
    e = err(body)
    assert (e.field, e.line) == (field, line), str(e)


def test_variable_predicate_is_refused():
    e = err(
        """\
        [[rule]]
        name = "any-relation"
        if   = [["?x", "?p", "?y"]]
        then = [["?y", "related-to", "?x"]]
        """
    )
    assert e.field == "rule[0].if[0][1]" and e.line == 3 and "variable predicate" in e.message
    e = err(
        """\
        [[rule]]
        name = "any-relation"
        if   = [["?x", "p", "?y"]]
        then = [["?y", "?x", "?x"]]
        """
    )
    assert e.field == "rule[0].then[0][1]" and e.line == 4


def test_unbound_conclusion_variable_is_refused():
    e = err(
        """\
        [[rule]]
        name = "bad"
        if   = [["?x", "has-property", "gives-milk"]]
        then = [["?x", "is-a", "mammal"],
                ["?y", "is-a", "animal"]]
        """
    )
    assert e.field == "rule[0].then[1]" and e.line == 5 and "?y" in e.message


def test_duplicate_rule_names_are_refused():
    e = err(
        """\
        [[rule]]
        name = "r"
        if = [["?x", "p", "?y"]]
        then = [["?y", "p", "?x"]]
        [[rule]]
        name = "r"
        if = [["?x", "q", "?y"]]
        then = [["?y", "q", "?x"]]
        """
    )
    assert e.field == "rule[1].name" and e.line == 6


def test_syntax_error_carries_the_toml_line():
    e = err(
        """\
        transitive = ["part-of"]
        symmetric = ["borders"
        inherit = 
        """
    )
    assert e.line in (2, 3) and e.file == "rules.toml" and "TOML" in e.message
    e = err('transitive = ["a"]\n\n\n[[rule]\nname = "x"\n')
    assert e.line == 4


def test_engine_rejects_a_zero_budget():
    with pytest.raises(ValueError):
        RuleEngine(KnowledgeGraph(), RuleSet.empty(), max_new_per_call=0)
