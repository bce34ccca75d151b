"""What Orient saw, why a goal is not done, and the persona's voice (issue 13 §1, §2, §5):
through the door, headless, on the bundled solar run the issue names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akh_tui.engine.cycle.agent import ACTIVATION_BUDGET
from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import Locations
from akh_tui.engine import Run
from akh_tui.engine.tools.builtins import run_kg_query


@pytest.fixture(scope="module")
def solar(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("solar")
    r = Run.start(Locations(tmp, tmp / "config.toml"), "solar", store=":memory:")
    r.run_cycles(60)
    yield r
    r.close()


# -- §2 why is this goal not done --------------------------------------------------------------

def test_an_explanation_reads_only_its_goals_cycles_and_says_the_same(solar):
    from akh_tui.engine.explain.goal import explain_goal

    whole = solar.records()  # what it read before: every record of the branch
    for gid in sorted(solar.agent.goals):
        kids = solar.agent.goals[gid].children
        picked = list(solar.store.goal_records(solar.store.current(), [gid, *kids]))
        assert [r["cycle"] for r in picked] == [r["cycle"] for r in whole if r["goal"]["id"] in (gid, *kids)]
        assert solar.explain_goal(gid) == explain_goal(solar.agent, whole, gid, list(solar.scenario.kg))


def test_the_moons_of_mars_say_what_the_issue_says(solar):
    info = solar.explain_goal(2)
    text = "\n".join(info["lines"])
    assert info["goal"]["status"] == "failed"
    phobos = next(c for c in info["criteria"] if c["criterion"] == "(phobos is-a moon)")
    assert phobos["found"] is False
    assert phobos["in_graph"]["cycle"] == 6 and phobos["in_graph"]["kind"] == "inferred"
    assert phobos["in_graph"]["by"] == "moon-of-planet"
    assert phobos["would_return"] == {"tool": "kg_query", "input": "phobos"}
    assert "  (phobos is-a moon): missing" in text
    assert "    no tool call for goal #2 returned it (nor for sub-goal #6)" in text
    assert ("    the graph holds it since cycle 6: (phobos is-a moon), inferred by rule moon-of-planet "
            "from (phobos orbits mars), (mars is-a planet)") in text
    assert "    kg_query(phobos) would have returned it (kg_query ran on mars only)" in text


def test_the_explanation_is_true(solar):
    a = solar.agent
    goal = a.goals[2]
    assert goal.found_patterns == []  # nothing its calls returned matched
    assert {r["decide"]["input"] for r in solar.records() if r["goal"]["id"] == 2 and r["decide"]["tool"] == "kg_query"} \
        == {"mars"}
    ctx = a.orient_goal(goal, [])
    result = run_kg_query(a, ctx, a.kg.lookup("phobos"))
    assert "phobos is-a moon" in [a.kg.text(t) for t in result.triples]  # kg_query(phobos) would have
    t = a.kg.get(a.kg.lookup("phobos"), a.kg.lookup("is-a"), a.kg.lookup("moon"))
    assert t.cycle == 6 and t.provenance == "inferred:moon-of-planet"


def test_a_found_criterion_names_cycle_tool_and_evidence(solar):
    info = solar.explain_goal(8)
    mercury = next(c for c in info["criteria"] if c["criterion"] == "mercury")
    at = mercury["found_at"]
    rec = solar.record(at["cycle"])
    assert rec["goal"]["id"] == 8 and rec["decide"]["tool"] == at["tool"] and "mercury" in at["evidence"]
    assert "mercury" not in rec["act"]["missing"]


def test_an_asserted_triple_names_its_file_and_line(solar):
    info = solar.explain_goal(3)
    venus = next(c for c in info["criteria"] if c["criterion"] == "venu")  # the keyword, normalised
    origin = venus["in_graph"]
    assert origin["kind"] == "asserted" and origin["file"].endswith("solar.tsv")
    line = Path(origin["file"]).read_text().splitlines()[origin["line"] - 1]
    assert line.split("\t")[:3] == origin["triple"].split(" ")


def test_unknown_goal_is_an_input_error(solar):
    with pytest.raises(InputError) as err:
        solar.explain_goal(99)
    assert err.value.field == "--goal"


def test_agent_explain_headless(cli, tmp_path):
    cli("agent", "run", "--scenario", "solar", "--fresh", "--max-cycles", "60")
    out = cli("agent", "explain", "--goal", "2").stdout
    assert "kg_query(phobos) would have returned it" in out
    assert "inferred by rule moon-of-planet" in out and "no tool call for goal #2 returned it" in out
    data = json.loads(cli("agent", "explain", "--goal", "2", "--json").stdout)
    assert data["criteria"][0]["would_return"] == {"tool": "kg_query", "input": "phobos"}
    bad = cli("agent", "explain", "--goal", "x", check_rc=2)
    assert "--goal" in bad.stderr
    why = json.loads(cli("agent", "why", "--cycle", "1", "--tool", "kg_query", "--json").stdout)
    assert why["lines"][0].startswith("kg_query lost to ")
    assert cli("agent", "why", "--cycle", "1", "--tool", "kg_query").stdout.splitlines()[0] == why["lines"][0]
    cli("agent", "why", "--cycle", "999", check_rc=2)
    terse = cli("agent", "synthesize", "--goal", "8", "--grammar", "terse").stdout
    assert "mercury is-a planet" in terse.splitlines()


# -- §1 what Orient saw -------------------------------------------------------------------------

def test_orient_view_is_what_orient_computed(solar):
    a = solar.agent
    view = solar.orient(2)
    goal = a.goals[2]
    ctx = a.orient_goal(goal, [])
    assert view["symbols"] == [a.kg.label(s) for s in ctx.symbols]
    assert len(view["adjacent"]) == ctx.adjacent and view["K"] == ctx.K
    nodes = [n for n in view["activation"]["nodes"] if not n["seed"]]
    assert [(n["symbol"], n["activation"]) for n in nodes] == [(a.kg.label(s), ctx.activation[s]) for s in ctx.order]
    for n in nodes:  # each activated node says which edge raised it, one or two hops out
        assert n["hop"] in (1, 2) and n["via"]["triple"]
    assert view["activation"]["edges_read"] <= ACTIVATION_BUDGET


def test_orient_view_of_a_recorded_focus_matches_the_record(tmp_path):
    r = Run.start(Locations(tmp_path, tmp_path / "c.toml"), "solar", store=":memory:")
    try:
        for _ in range(6):
            rec = r.step()
        # cycle 6 ran infer_rules: its additions are listed, marked by rule
        view = r.orient(rec["goal"]["id"])
        top = [n for n in view["activation"]["nodes"] if not n["seed"]][:5]
        added = view["added"]
        assert rec["decide"]["tool"] == "infer_rules" and added
        assert all(t["cycle"] == 6 for t in added)
        kinds = {t["provenance_kind"] for t in added}
        assert "inferred" in kinds
        moon = next(t for t in added if t["text"] == "phobos is-a moon")
        assert moon["provenance_by"] == "moon-of-planet"
        assert top and all(0.1 <= n["activation"] <= 0.5 for n in top)
    finally:
        r.close()


def test_orient_view_top_activation_equals_the_records():
    """On cycles whose tool adds nothing to the graph, the view of the focus goal (taken after
    the cycle) must show the very activations the cycle record holds."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        r = Run.start(Locations(Path(tmp), Path(tmp) / "c.toml"), "zoo", store=":memory:")
        try:
            compared = 0
            for _ in range(25):
                rec = r.step()
                if rec is None:
                    break
                if rec["decide"]["tool"] in ("kg_query", "reason", "gap_analysis", "similarity_search", "memory_recall"):
                    view = r.orient(rec["goal"]["id"])
                    nodes = [n for n in view["activation"]["nodes"] if not n["seed"]][:5]
                    assert [(n["symbol"], n["activation"]) for n in nodes] == \
                        [(x["symbol"], x["activation"]) for x in rec["orient"]["activated"]]
                    assert len(view["adjacent"]) == rec["orient"]["adjacent"][str(rec["goal"]["id"])]
                    compared += 1
            assert compared >= 5
        finally:
            r.close()


def test_symbol_inspector_shows_provenance_and_the_derivation_chain(solar):
    info = solar.symbol("phobos")
    rows = {t["text"]: t for t in info["triples"]}
    assert rows["phobos orbits mars"]["provenance_kind"] == "asserted"
    moon = rows["phobos is-a moon"]
    assert moon["derivation"]["rule"] == "moon-of-planet"
    assert [p["triple"] for p in moon["derivation"]["premises"]] == ["phobos orbits mars", "mars is-a planet"]
    with pytest.raises(InputError):
        solar.symbol("no-such-symbol")


def test_orient_reads_only_the_neighbourhood_of_a_hub():
    from akh_tui.bench.main import generated_agent

    agent = generated_agent(20_000)
    from akh_tui.engine.explain.orient import orient

    hub = max(range(len(agent.kg.symbols)), key=agent.kg.adjacent_count)
    view = orient(agent, symbol=agent.kg.label(hub))
    assert view["activation"]["edges_read"] <= ACTIVATION_BUDGET
    assert len(view["adjacent"]) <= 64


# -- §5 the persona's voice ---------------------------------------------------------------------

def test_three_grammars_from_the_same_findings(solar):
    out = {g: solar.synthesize(8, g) for g in ("narrative", "formal", "terse")}
    facts = out["terse"]["facts"]
    assert facts and all(f["provenance"] != "tool:synthesize_triple" for f in facts)  # no hypothesis
    assert out["terse"]["text"].splitlines() == [f"{f['subject']} {f['predicate']} {f['object']}" for f in facts]
    formal = out["formal"]["text"]
    assert formal.startswith("# Findings: ") and "\n## mercury\n" in formal and "\n- mercury is-a planet" in formal
    narrative = out["narrative"]["text"]
    assert "Mercury is a planet." in narrative and "Moreover, " in narrative and "\n- " not in narrative
    assert solar.synthesize(8, "narrative") == out["narrative"]  # deterministic


def test_the_persona_chooses_the_grammar(tmp_path):
    r = Run.start(Locations(tmp_path, tmp_path / "c.toml"), "solar", store=":memory:")
    try:
        r.run_cycles(60)
        assert r.synthesize(8)["grammar"] == "narrative"  # the bundled persona's preference
        p = r.current_psyche()
        p.persona.grammar_preference = "terse"
        r.edit_psyche(p)
        assert r.synthesize(8)["grammar"] == "terse"  # an edit shows at once
    finally:
        r.close()


def test_a_grammar_file(solar, tmp_path):
    g = tmp_path / "mine.toml"
    g.write_text('[grammar]\nopening = "About {goal}:"\nclosing = "({count} facts)"\nbullet = "* "\n'
                 '[facts]\ndefault = "{subject} / {predicate} / {object}"\n"is-a" = "{subject} is one of the {object}s"\n')
    text = solar.synthesize(8, str(g))["text"]
    assert text.startswith("About Query knowledge about: mercury venus earth mars:")
    assert "* mercury is one of the planets" in text and "* mercury / orbits / sun" in text
    assert text.rstrip().endswith("facts)")


@pytest.mark.parametrize("body, line, field", [
    ('[grammar]\nopening = "x"\n[facts]\n"is-a" = "{subjct} is a {object}"\n', 4, "facts.is-a"),
    ('[grammar]\nopenning = "x"\n', 2, "grammar.openning"),
    ('[grammar]\nconnectives = "and"\n', 2, "grammar.connectives"),
    ('[voice]\nx = 1\n', 1, "voice"),
])
def test_a_bad_grammar_file_names_line_and_field(solar, tmp_path, body, line, field):
    g = tmp_path / "bad.toml"
    g.write_text(body)
    with pytest.raises(InputError) as err:
        solar.synthesize(8, str(g))
    assert err.value.file == str(g) and err.value.line == line and err.value.field == field


def test_an_unknown_grammar_is_refused(solar):
    with pytest.raises(InputError) as err:
        solar.synthesize(8, "shakespearean")
    assert "narrative, formal, terse" in err.value.message


def test_narrative_findings_read_as_english():
    # issue 28: "dog is a animal", "dog has-property gives-milk"
    from akh_tui.engine.explain.findings import NARRATIVE, render

    text = render(NARRATIVE, "Find mammals", [
        ("dog", "is-a", "animal"), ("dog", "is-a", "mammal"), ("dog", "has-property", "gives-milk"),
        ("dog", "has-property", "warm-blooded"), ("dog", "has-property", "can-fly"), ("dog", "lives-in", "dry-land"),
        ("dog", "likes-to-chase", "unicorn"), ("horse", "is-a", "unicorn")])
    assert "Dog is an animal." in text and "dog is a mammal." in text
    assert "dog gives milk." in text and "dog can fly." in text
    assert "dog has the property “warm blooded”." in text
    assert "dog lives in dry land." in text and "dog likes to chase unicorn." in text
    assert "Horse is a unicorn." in text
    assert "has-property" not in text and "is a animal" not in text
