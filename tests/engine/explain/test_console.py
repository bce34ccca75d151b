"""The query console and the rule browser (issue 28 §2): what they say is checked against the
graph itself (a brute-force walk of its log) and against what infer_rules then does."""

from __future__ import annotations

import itertools
import json

import pytest

from akh_tui.engine import InputError, Locations, Run
from akh_tui.engine.explain.patterns import is_var
from akh_tui.engine.explain.rules import all_rules


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    run = Run.start(Locations.resolve(data_dir=tmp_path_factory.mktemp("data")), "zoo", 7)
    for _ in range(12):
        run.step()
    yield run
    run.close()


def facts(kg):
    """Every non-bookkeeping triple of the graph, as labels: the ground truth."""
    return [(kg.label(t.subject), kg.label(t.predicate), kg.label(t.object), t) for t in kg.log
            if not kg.is_meta_triple(t)]


def brute(kg, patterns, start=None):
    """Every binding of the patterns joined, by trying every combination of triples."""
    out = []
    rows = facts(kg)
    for combo in itertools.product(rows, repeat=len(patterns)):
        b = dict(start or {})
        ok = True
        for pat, row in zip(patterns, combo):
            for term, value in zip(pat, row[:3]):
                if not is_var(term):
                    ok = ok and term == value
                elif term != "?":
                    ok = ok and b.setdefault(term, value) == value
        if ok:
            out.append(b)
    return out


def test_a_pattern_finds_what_the_graph_holds_with_provenance(zoo):
    kg = zoo.agent.kg
    got = zoo.query("(?x lives-in ocean)", limit=1000)
    assert sorted(r["values"]["?x"] for r in got["rows"]) == sorted(s for s, p, o, _ in facts(kg)
                                                                   if p == "lives-in" and o == "ocean")
    inferred = [r for r in got["rows"] if r["triples"][0]["provenance"].startswith("inferred:")]
    assert inferred, "the zoo infers whale lives-in ocean by inherit"
    for r in inferred:  # the rule and premises are the graph's own derivation record
        t = r["triples"][0]
        s, p, o = (kg.lookup(x) for x in t["triple"].split())
        rule, premises = kg.derivations[(s, p, o)]
        assert t["rule"] == rule and t["premises"] == [" ".join(kg.label(x) for x in k) for k in premises]


def test_a_join_agrees_with_every_combination_of_triples(zoo):
    kg = zoo.agent.kg
    pats = (("?x", "is-a", "mammal"), ("?x", "lives-in", "?w"))
    got = zoo.query("(?x is-a mammal) (?x lives-in ?w)", limit=1000)
    want = sorted((b["?x"], b["?w"]) for b in brute(kg, pats))
    assert sorted((r["values"]["?x"], r["values"]["?w"]) for r in got["rows"]) == want and want
    assert got["total"] == len(want)


def test_about_memory_goals_and_refusals(zoo):
    kg = zoo.agent.kg
    about = zoo.query("about krill")
    assert {r["triple"] for r in about["rows"]} == {f"{s} {p} {o}" for s, p, o, _ in facts(kg) if "krill" in (s, o)}
    goals = zoo.query("goals whale")
    assert [r["description"] for r in goals["rows"]] == [g.description for g in zoo.agent.goals.values()
                                                         if "whale" in g.description.lower()]
    memory = zoo.query("memory focus")
    assert memory["rows"] and all("focus" in r["content"].lower() for r in memory["rows"])
    for bad, words in (("(?x lives-in", "no '\\)'"), ("(?x ocean)", "3 terms"), ("about narwhal", "no symbol"),
                       ("hello", "unknown query")):
        with pytest.raises(InputError, match=words) as exc:
            zoo.query(bad)
        assert exc.value.field == "query"


def test_a_query_at_a_cycle_sees_the_graph_as_it_was(zoo):
    now = {r["values"]["?x"] for r in zoo.query("(?x lives-in ocean)")["rows"]}
    first = zoo.record(1)
    then = {r["values"]["?x"] for r in zoo.query("(?x lives-in ocean)", cycle=1)["rows"]}
    whale = zoo.query("about whale")["rows"]
    derived = min(r["cycle"] for r in whale if r["triple"] == "whale lives-in ocean")
    assert first is not None and derived > 1
    assert "whale" in now and "whale" not in then  # inferred after cycle 1
    with pytest.raises(InputError, match="not recorded"):
        zoo.query("goals", cycle=999)


@pytest.mark.parametrize("symbol", ["whale", "dog", "shark", "krill", "mammal"])
def test_why_not_names_a_premise_that_truly_fails(zoo, symbol):
    """Each rule's counts are the brute-force join's, and a failed premise has no triple for
    any binding the premises before it left."""
    kg = zoo.agent.kg
    info = zoo.rules(symbol=symbol)
    rules = {r.name: r for r in all_rules(zoo.agent.rules.ruleset)}
    assert [m["rule"] for m in info["rules"]] == list(rules)
    for m in info["rules"]:
        rule = rules[m["rule"]]
        start = {m["var"]: symbol}
        for i, p in enumerate(m["premises"]):
            if p["bindings"] is None:
                break
            assert p["bindings"] == len(brute(kg, rule.premises[:i + 1], start)), (m["rule"], i)
        failed = [i for i, p in enumerate(m["premises"]) if p["bindings"] == 0]
        if failed:
            i = failed[0]
            assert f"premise {i + 1} " in m["why_not"][0] and "failed" in m["why_not"][0]
            assert brute(kg, rule.premises[:i + 1], start) == []
            assert not m["new"] and not m["known"]
        else:
            whole = brute(kg, rule.premises, start)
            assert m["fires"] == len(whole) > 0
            in_graph = {f"{s} {p} {o}" for s, p, o, _ in facts(kg)}
            assert all(n not in in_graph for n in m["new"]) and all(k["triple"] in in_graph for k in m["known"])
            assert ("not in the graph yet" in m["why_not"][0]) == bool(m["new"])


def test_the_agenda_is_what_infer_rules_adds_next(tmp_path):
    run = Run.start(Locations.resolve(data_dir=tmp_path), "zoo", 7)
    try:
        run.step()
        run.step()
        agent = run.agent
        info = run.rules()
        assert info["agenda"]["pending"] == agent.rules.pending() > 0
        added = [agent.kg.text(t) for t in agent.rules.run(agent.cycle + 1)]  # what infer_rules does now
        assert [a["triple"] for a in info["agenda"]["adds"]] == added[:len(info["agenda"]["adds"])]
        assert info["agenda"]["total"] == len(added) > 0
    finally:
        run.close()


def test_cli_query_and_rules(cli):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "12")
    out = cli("agent", "query", "(?x lives-in ocean)").stdout
    assert "whale lives-in ocean  [inferred by rule inherit" in out and "from whale is-a cetacean" in out
    got = json.loads(cli("agent", "query", "(?x is-a mammal) (?x lives-in ?w)", "--json").stdout)
    assert {"?x", "?w"} == set(got["columns"]) and got["total"] == len(got["rows"])
    out = cli("agent", "rules", "--why-not", "dog", "--rule", "inherit(lives-in)").stdout
    assert "premise 2 (?b lives-in ?c) failed: no triple" in out and "(mammal lives-in ?c)" in out
    assert "agenda:" in out
    bad = cli("agent", "rules", "--rule", "nope", check_rc=2)
    assert "--rule" in bad.stderr and "milk-means-mammal" in bad.stderr
    bad = cli("agent", "query", "(?x lives-in", check_rc=2)
    assert "QUERY" in bad.stderr and "no ')'" in bad.stderr
    bad = cli("agent", "rules", "--why-not", "unicorn", check_rc=2)
    assert "--why-not" in bad.stderr


def test_cli_watches_print_every_cycle_and_a_break_watch_stops_at_the_change(cli):
    out = json.loads(cli("agent", "run", "--scenario", "zoo", "--max-cycles", "20", "--json", "--watch", "goals",
                         "--break-watch", "(?x lives-in ocean)").stdout)
    rows = out["cycles"]
    assert all(r["watches"]["goals"] == 3 for r in rows)
    counts = [r["watches"]["(?x lives-in ocean)"] for r in rows]
    assert counts[:-1] == [4] * (len(rows) - 1) and counts[-1] > 4  # stopped at the first change
    assert out["stop"] == f"cycle {rows[-1]['cycle']}: watch (?x lives-in ocean) changed: 4 → {counts[-1]}"
    bad = cli("agent", "run", "--max-cycles", "1", "--break-watch", "(?x lives", check_rc=2)
    assert "--break-watch" in bad.stderr and "no ')'" in bad.stderr


def test_a_join_stops_at_its_work_budget_and_says_so(zoo):
    from akh_tui.engine.explain.patterns import join

    kg = zoo.agent.kg
    pats = (("?a", "?", "?b"), ("?b", "?", "?c"), ("?c", "?", "?d"))
    whole = join(kg, pats)
    assert not any(s.capped for s in whole)
    cut = join(kg, pats, budget=500)
    assert cut[-1].capped and len(cut) < len(pats)  # the join ended where the budget ran out
    out = zoo.query("(?a ? ?b) (?b ? ?c) (?c ? ?d)")  # within the default budget: complete
    assert not out["capped"] and out["total"] == whole[-1].count
