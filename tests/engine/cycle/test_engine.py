"""The headless OODA engine (SPEC §3-§11): what a user watching the trace would see.

Every test builds a small graph in code (or the bundled zoo), runs real cycles with
`Agent.step()` and checks the cycle records, events and state against the rules and numbers
of SPEC.md. Engine behaviour that contradicts SPEC is marked xfail(strict=True) with the clause.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from akh_tui.engine.cycle.agent import Agent
from akh_tui.engine.config import AgentConfig
from akh_tui.engine.goals.goal import make_goal, parse_criteria, split_criteria
from akh_tui.engine.knowledge.kg import KnowledgeGraph, Triple
from akh_tui.engine.knowledge.memory import EpisodicMemory, WorkingMemory, consolidate
from akh_tui.engine.cycle.plan import make_plan
from akh_tui.engine.psyche.model import Psyche
from akh_tui.engine.knowledge.rules import RuleSet, load_rules, parse_rules
from akh_tui.engine.cycle.scoring import Candidate, choose
from akh_tui.engine.cycle.state import restore, snapshot
from akh_tui.engine.text import default_criteria, normalise_word, normalised_words
from akh_tui.engine.tools.builtins import TOOL_ARCHETYPES, TOOL_NAMES, TOOLS, Tool
from akh_tui.engine.knowledge.vsa import VSA

ROOT = Path(__file__).resolve().parents[3]
ZOO_KG = ROOT / "akh_tui" / "data" / "kg" / "zoo.tsv"
BIOLOGY_RULES = ROOT / "akh_tui" / "data" / "rules" / "biology.toml"

# SPEC §5's table, in order (also the tie order of §6).
SPEC_TOOLS = (
    "kg_query", "infer_rules", "reason", "synthesize_triple", "gap_analysis", "user_interact",
    "file_io", "http_fetch", "shell_exec", "memory_recall", "similarity_search",
)
SPEC_ARCHETYPE = {
    "kg_query": "sage", "infer_rules": "sage", "reason": "sage", "synthesize_triple": "sage",
    "gap_analysis": "healer", "user_interact": "healer",
    "file_io": "explorer", "http_fetch": "explorer", "shell_exec": "explorer",
    "memory_recall": "guardian", "similarity_search": "guardian",
}
FACTORS = ("base", "recency", "novelty", "episodic", "pressure", "archetype", "plan")

BREAKDOWN_RE = re.compile(
    r"^\[score=(\d+\.\d{2}): base=(\d+\.\d{2}) recency=-(\d+\.\d{2}) novelty=\+(\d+\.\d{2})"
    r" episodic=\+(\d+\.\d{2}) pressure=\+(\d+\.\d{2}) archetype=([+-]\d+\.\d{3}) plan=\+(\d+\.\d{2})\]$"
)

MILK_RULE = textwrap.dedent("""\
    transitive = ["is-a"]
    [[rule]]
    name = "milk-means-mammal"
    if   = [["?x", "has-property", "gives-milk"]]
    then = [["?x", "is-a", "mammal"]]
""")

# whale is adjacent to cetacean; ocean is 2 hops away and not adjacent: K and I both hold.
K_AND_I = [("whale", "is-a", "cetacean"), ("cetacean", "lives-in", "ocean")]


# ---- helpers ---------------------------------------------------------------------------------

def make_agent(triples=(), rules: str = "", psyche: Psyche | None = None, seed: int = 0, **cfg) -> Agent:
    kg = KnowledgeGraph()
    for t in triples:
        kg.add(*t)
    ruleset = parse_rules(rules) if rules else RuleSet.empty()
    return Agent(kg, ruleset, psyche or Psyche.default(), AgentConfig(**cfg), seed)


def psyche_from(text: str) -> Psyche:
    return Psyche.from_toml(textwrap.dedent(text))


def by_tool(record: dict) -> dict[str, dict]:
    return {c["tool"]: c for c in record["decide"]["candidates"]}


def chosen(record: dict) -> dict:
    return by_tool(record)[record["decide"]["tool"]]


def run(agent: Agent, max_cycles: int) -> list[dict]:
    out = []
    for _ in range(max_cycles):
        r = agent.step()
        if r is None:
            break
        out.append(r)
    return out


def goal_status(record: dict, gid: int) -> str:
    return next(g["status"] for g in record["goals"] if g["id"] == gid)


def events(agent: Agent, kind: str) -> list[dict]:
    return [e for e in agent.pending_events if e["type"] == kind]


def zoo_agent(seed: int = 7, goals: bool = True) -> Agent:
    kg = KnowledgeGraph()
    kg.load_files([ZOO_KG])
    agent = Agent(kg, load_rules(BIOLOGY_RULES), Psyche.default(), AgentConfig(), seed)
    if goals:
        agent.add_goal("Find mammals")
        agent.add_goal("Classify whales", "(whale is-a mammal)")
        agent.add_goal("Find animals similar to dolphin", "orca porpoise")
        # unreachable: keeps the run going through stalls, decomposition and failures
        agent.add_goal("Explain what whales eat", "(whale eats squid), (squid lives-in ocean)")
    return agent


VETO_KG_QUERY = """
    [[shadow.veto_patterns]]
    name = "no_lookup"
    triggers = ["tool=kg_query"]
    severity = 1.0
    explanation = "Lookups are forbidden here."
"""


# ---- §8 text normalisation --------------------------------------------------------------------

@pytest.mark.parametrize("word, expected", [
    ("whales", "whale"),
    ("Whales,", "whale"),       # lower-cased, punctuation stripped
    ("planets", "planet"),
    ("berries", "berry"),       # trailing ies -> y
    ("species", "specy"),       # the ies rule comes first, literally (SPEC §8)
    ("planes", "plane"),        # > 4 chars, ends in s but not ss: stripped
    ("class", "class"),         # ends in ss: kept
    ("glass", "glass"),
    ("gas", "gas"),             # 4 characters or shorter: kept
    ("bats", "bats"),
    ("birds", "bird"),
    ("Mammal.", "mammal"),
])
def test_normalise_word_plural_rule(word, expected):
    assert normalise_word(word) == expected


def test_labels_split_on_dash_and_underscore():
    assert normalised_words("gives-milk lives_in Oceans") == ["give", "milk", "live", "in", "ocean"]


def test_plural_goal_word_finds_singular_symbol():
    agent = make_agent([("whale", "eats", "krill")])
    agent.add_goal("Tell me about whales", "whales krill")
    r = agent.step()
    assert r["decide"]["tool"] == "kg_query"
    assert r["decide"]["input"] == "whale"


# ---- §6 scoring factors, each in isolation ----------------------------------------------------

@pytest.mark.parametrize("n, expected", [(1, 0.8), (2, 0.8), (3, 0.4), (5, 0.4)])
def test_kg_query_base_depends_on_adjacent_triple_count(n, expected):
    agent = make_agent([("whale", f"p{i}", f"o{i}") for i in range(n)])
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    assert by_tool(r)["kg_query"]["base"] == pytest.approx(expected)


def test_kg_query_base_counts_each_adjacent_triple_once():
    """SPEC §6: a triple joining two goal symbols is one known triple, not two."""
    agent = make_agent([("whale", "is-a", "cetacean"), ("cetacean", "is-a", "mammal")])
    agent.add_goal("whale cetacean mammal", "unicorn")
    r = agent.step()
    assert by_tool(r)["kg_query"]["base"] == pytest.approx(0.8)


GATED = None  # not offered


@pytest.mark.parametrize("triples, expected", [
    # no K (the goal symbol exists but touches no triple), no I
    ([("cetacean", "lives-in", "ocean")],
     {"synthesize_triple": GATED, "reason": GATED, "similarity_search": GATED, "infer_rules": GATED}),
    # K but not I: the only edge is too weak to pass activation (1.0 * 0.1 * 0.5 < 0.1)
    ([("whale", "is-a", "cetacean", 0.1)],
     {"synthesize_triple": GATED, "reason": 0.5, "similarity_search": GATED}),
    # K and I
    (K_AND_I, {"synthesize_triple": 0.7, "reason": 0.5, "similarity_search": 0.55}),
], ids=["no-K", "K-not-I", "K-and-I"])
def test_state_dependent_bases(triples, expected):
    agent = make_agent(triples)
    agent.kg.symbol("whale")
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    c = by_tool(r)
    for tool, base in expected.items():
        if base is GATED:
            assert c[tool]["offered"] is False, tool
            assert c[tool]["why_not"].startswith("not offered"), tool
        else:
            assert c[tool]["offered"] is True, tool
            assert c[tool]["base"] == pytest.approx(base), tool
    if expected["synthesize_triple"] is not GATED:
        assert c["synthesize_triple"]["input"] == "whale related-to ocean"


@pytest.mark.parametrize("with_episode", [False, True])
def test_memory_recall_offered_only_with_recalled_episode(with_episode):
    agent = make_agent(K_AND_I)
    if with_episode:
        agent.episodic.add(0, None, "earlier work on whales", [agent.kg.lookup("whale")], ["kind:action"])
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    c = by_tool(r)["memory_recall"]
    assert r["orient"]["E"] is with_episode
    assert c["offered"] is with_episode
    if with_episode:
        assert c["base"] == pytest.approx(0.55)
    else:
        assert c["why_not"].startswith("not offered")


@pytest.mark.parametrize("sim, used_before, expected", [
    (0.0, False, 0.35),   # 0.1 clamped up
    (0.5, False, 0.45),
    (1.0, False, 0.75),   # 0.8 clamped down
    (0.5, True, 0.35),
    (0.9, True, 0.63),
])
def test_infer_rules_base_clamp(monkeypatch, sim, used_before, expected):
    agent = make_agent(K_AND_I)
    g = agent.add_goal("whale", "whale unicorn")
    monkeypatch.setattr(agent, "profile_similarity", lambda goal, tool: sim)
    if used_before:
        g.tool_uses["infer_rules"] = 1
    r = agent.step()
    assert by_tool(r)["infer_rules"]["base"] == pytest.approx(expected)


@pytest.mark.parametrize("sim, kg_uses, expected", [
    (0.0, 0, 0.3),    # clamped up
    (0.5, 0, 0.35),
    (0.5, 1, 0.35),   # bonus needs kg_query used at least twice
    (0.5, 2, 0.45),
    (1.0, 2, 0.75),   # 0.8 clamped down
])
def test_gap_analysis_base_clamp(monkeypatch, sim, kg_uses, expected):
    agent = make_agent(K_AND_I)
    g = agent.add_goal("whale", "whale unicorn")
    monkeypatch.setattr(agent, "profile_similarity", lambda goal, tool: sim)
    if kg_uses:
        g.tool_uses["kg_query"] = kg_uses
    r = agent.step()
    assert by_tool(r)["gap_analysis"]["base"] == pytest.approx(expected)


def test_infer_rules_base_uses_vsa_similarity_to_its_profile():
    # a goal text made of exactly the tool's profile words has similarity 1.0 -> 0.8 -> 0.75
    agent = make_agent([("logic", "is-a", "field")])
    agent.add_goal("infer deduce derive rules classify conclude logic", "logic unicorn")
    r = agent.step()
    assert by_tool(r)["infer_rules"]["base"] == pytest.approx(0.75)


@pytest.mark.parametrize("history, tool, expected", [
    ([], "kg_query", 0.0),
    (["kg_query"], "kg_query", 0.4),
    (["kg_query", "reason"], "kg_query", 0.2),
    (["kg_query", "reason", "gap_analysis"], "kg_query", 0.1),
    (["kg_query", "reason", "kg_query"], "kg_query", 0.4),   # largest applicable, not 0.5
    (["kg_query", "kg_query", "reason"], "kg_query", 0.2),   # not 0.3
    (["kg_query", "reason", "reason", "reason"], "kg_query", 0.0),  # 4 cycles ago: none
])
def test_recency_penalty_is_largest_applicable(history, tool, expected):
    g = make_goal(1, "whale")
    for t in history:
        g.record_use(t)
    assert g.recency_penalty(tool) == pytest.approx(expected)


def test_recency_and_novelty_follow_this_goals_own_history():
    agent = make_agent([("whale", "eats", "krill"), ("dolphin", "eats", "krill")])
    agent.add_goal("whale", "whale eats", priority=200)
    agent.add_goal("dolphin", "dolphin unicorn", priority=100)
    r1 = agent.step()
    assert (r1["goal"]["id"], r1["decide"]["tool"], r1["act"]["progress"]) == (1, "kg_query", "completed")
    r2 = agent.step()
    assert r2["goal"]["id"] == 2
    c = by_tool(r2)["kg_query"]
    assert (c["recency"], c["novelty"]) == (0.0, pytest.approx(0.15))  # used on goal 1 only
    used = r2["decide"]["tool"]
    r3 = agent.step()
    c3 = by_tool(r3)
    assert c3[used]["recency"] == pytest.approx(0.4)
    assert c3[used]["novelty"] == 0.0
    for tool, cand in c3.items():
        if tool != used:
            assert cand["novelty"] == pytest.approx(0.15), tool


def test_episodic_bonus_for_tools_named_by_a_recalled_episode():
    agent = make_agent(K_AND_I)
    whale = agent.kg.lookup("whale")
    agent.episodic.add(0, None, "reasoning helped", [whale], ["reason", "kind:action"])
    agent.episodic.add(0, None, "unrelated", [agent.kg.symbol("zebra")], ["gap_analysis"])
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    for tool, c in by_tool(r).items():
        assert c["episodic"] == pytest.approx(0.2 if tool == "reason" else 0.0), tool


@pytest.mark.parametrize("prefill, expected_pressure, bonus", [(7, 0.8, 0.2), (6, 0.7, 0.0)])
def test_pressure_bonus_only_for_memory_recall_above_0_7(prefill, expected_pressure, bonus):
    agent = make_agent(K_AND_I, wm_capacity=10)
    for i in range(prefill):
        agent.wm.push(f"note {i}", "reflection", 0)
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    assert r["orient"]["pressure"] == pytest.approx(expected_pressure)  # the Observe entry counts
    for tool, c in by_tool(r).items():
        assert c["pressure"] == pytest.approx(bonus if tool == "memory_recall" else 0.0), tool


@pytest.mark.parametrize("tool", SPEC_TOOLS)
def test_archetype_bonus_from_default_weights(tool):
    weights = {"sage": 0.7, "healer": 0.5, "explorer": 0.5, "guardian": 0.4}
    agent = make_agent(K_AND_I)
    agent.add_goal("whale", "whale unicorn")
    c = by_tool(agent.step())[tool]
    assert c["archetype"] == pytest.approx((weights[SPEC_ARCHETYPE[tool]] - 0.5) * 0.15)


def test_archetype_bonus_follows_edited_weights():
    agent = make_agent(K_AND_I, psyche=psyche_from("[archetypes]\nguardian = 0.9\nsage = 0.5\n"))
    agent.add_goal("whale", "whale unicorn")
    c = by_tool(agent.step())
    assert c["similarity_search"]["archetype"] == pytest.approx(0.06)
    assert c["kg_query"]["archetype"] == pytest.approx(0.0)


def test_plan_bonus_only_for_the_current_plan_step():
    # "similar" sets the similarity flag: explore-first plan is kg_query, similarity_search
    agent = make_agent(K_AND_I)
    agent.add_goal("Find whales similar to dolphins", "whale unicorn")
    r1 = agent.step()
    assert [s["tool"] for s in r1["plan"]["steps"]][:2] == ["kg_query", "similarity_search"]
    assert r1["decide"]["plan_step"] == "kg_query"
    assert {t: c["plan"] for t, c in by_tool(r1).items() if c["plan"]} == {"kg_query": pytest.approx(0.1)}
    assert r1["decide"]["tool"] == "kg_query"
    r2 = agent.step()
    assert r2["decide"]["plan_step"] == "similarity_search"
    assert {t: c["plan"] for t, c in by_tool(r2).items() if c["plan"]} == {"similarity_search": pytest.approx(0.1)}


def test_total_is_sum_of_factors_floored_at_zero():
    c = Candidate("kg_query", True, None, 0.8, 0.2, 0.15, 0.2, 0.0, 0.03, 0.1)
    assert c.score == pytest.approx(0.8 - 0.2 + 0.15 + 0.2 + 0.0 + 0.03 + 0.1)
    low = Candidate("gap_analysis", True, None, 0.3, 0.4, 0.0, 0.0, 0.0, -0.015, 0.0)
    assert low.score == 0.0
    assert low.breakdown().startswith("[score=0.00: base=0.30 recency=-0.40")


# ---- §6 breakdown string and the choice in a real run ----------------------------------------

def test_breakdown_string_format_exact():
    c = Candidate("similarity_search", True, None, 0.55, 0.1, 0.15, 0.2, 0.2, -0.012, 0.1)
    assert c.breakdown() == (
        "[score=1.09: base=0.55 recency=-0.10 novelty=+0.15 episodic=+0.20 pressure=+0.20"
        " archetype=-0.012 plan=+0.10]"
    )
    zero = Candidate("gap_analysis", True, None, 0.35, 0.0, 0.15, 0.0, 0.0, 0.0, 0.0)
    assert zero.breakdown() == (
        "[score=0.50: base=0.35 recency=-0.00 novelty=+0.15 episodic=+0.00 pressure=+0.00"
        " archetype=+0.000 plan=+0.00]"
    )


def test_breakdown_of_a_real_guardian_choice_has_negative_archetype():
    agent = make_agent(K_AND_I)
    agent.add_goal("whale", "whale unicorn")
    records = run(agent, 10)
    guardian = [r for r in records if SPEC_ARCHETYPE[r["decide"]["tool"]] == "guardian"]
    assert guardian, [r["decide"]["tool"] for r in records]
    r = guardian[0]
    m = BREAKDOWN_RE.match(r["decide"]["breakdown"])
    assert m, r["decide"]["breakdown"]
    assert m.group(7) == "-0.015"
    c = chosen(r)
    assert float(m.group(1)) == pytest.approx(c["score"], abs=0.005)
    for i, f in enumerate(FACTORS, start=2):
        shown = float(m.group(i))  # recency is shown as the penalty after its "-" sign
        assert shown == pytest.approx(c[f], abs=0.0051 if f != "archetype" else 0.00051), f


def test_every_choice_in_a_zoo_run_is_the_best_scored_sum_of_its_factors():
    agent = zoo_agent()
    records = run(agent, 40)
    assert len(records) >= 20
    for r in records:
        cands = r["decide"]["candidates"]
        assert [c["tool"] for c in cands] == list(SPEC_TOOLS)
        for c in cands:
            assert set(FACTORS) | {"tool", "offered", "why_not", "score"} <= set(c)
            assert c["recency"] in (0.0, 0.1, 0.2, 0.4)
        c = chosen(r)
        assert c["offered"]
        total = c["base"] - c["recency"] + c["novelty"] + c["episodic"] + c["pressure"] + c["archetype"] + c["plan"]
        assert c["score"] == pytest.approx(max(0.0, total), abs=1e-12)
        assert BREAKDOWN_RE.match(r["decide"]["breakdown"]), r["decide"]["breakdown"]
        best = max(x["score"] for x in cands if x["offered"])
        assert c["score"] == best
        first_best = next(x["tool"] for x in cands if x["offered"] and x["score"] == best)
        assert r["decide"]["tool"] == first_best


# ---- §6 ties ----------------------------------------------------------------------------------

def _cand(tool: str, score: float, offered: bool = True) -> Candidate:
    return Candidate(tool, offered, None if offered else "not offered: test", score, 0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("tied", [
    ("kg_query", "similarity_search"),
    ("reason", "memory_recall"),
    ("infer_rules", "reason", "synthesize_triple"),
    ("gap_analysis", "user_interact", "file_io"),
    ("memory_recall", "similarity_search"),
])
def test_ties_go_to_the_earlier_tool_in_table_order(tied):
    cands = [_cand(t, 0.6 if t in tied else 0.2) for t in TOOL_NAMES]
    assert choose(cands).tool == tied[0]


def test_tie_skips_tools_that_are_not_offered():
    cands = [_cand(t, 0.6, offered=(t != "kg_query")) for t in TOOL_NAMES]
    assert choose(cands).tool == "infer_rules"


def test_tool_table_order_matches_spec():
    assert TOOL_NAMES == SPEC_TOOLS
    assert TOOL_ARCHETYPES == SPEC_ARCHETYPE


# ---- §5 capability gates ------------------------------------------------------------------------

def test_external_tools_are_gated_off_by_default():
    agent = make_agent(K_AND_I)
    agent.add_goal("whale: read file notes.txt, fetch http://example.org, run shell command ls", "whale unicorn")
    c = by_tool(agent.step())
    for tool in ("file_io", "http_fetch", "shell_exec"):
        assert c[tool]["offered"] is False
        assert c[tool]["why_not"].startswith("not offered: capability"), c[tool]["why_not"]
        assert c[tool]["score"] == 0.0


@pytest.mark.parametrize("capability, tools", [
    ("write_kg", ("infer_rules", "synthesize_triple")),
    ("read_memory", ("memory_recall",)),
    ("read_kg", ("kg_query", "infer_rules", "reason", "gap_analysis", "similarity_search")),
])
def test_disabled_capability_means_not_offered(capability, tools):
    caps = dict(AgentConfig().capabilities)
    caps[capability] = False
    agent = make_agent(K_AND_I, capabilities=caps)
    agent.episodic.add(0, None, "earlier", [agent.kg.lookup("whale")], ["reason"])
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    c = by_tool(r)
    for tool in tools:
        assert c[tool]["offered"] is False, tool
        assert c[tool]["why_not"].startswith("not offered: capability"), c[tool]["why_not"]
        assert capability in c[tool]["why_not"]
    assert r["decide"]["tool"] not in tools


# ---- §9 shadow: veto and bias --------------------------------------------------------------------

def test_veto_blocks_the_tool_and_the_agent_adapts_next_cycle():
    agent = make_agent(K_AND_I, psyche=psyche_from(VETO_KG_QUERY))
    agent.add_goal("whale", "whale unicorn")
    triples_before = len(agent.kg)
    r1 = agent.step()
    # the shadow is not consulted while scoring: the vetoed tool is offered and chosen
    assert r1["decide"]["tool"] == "kg_query"
    assert by_tool(r1)["kg_query"]["offered"] is True
    act = r1["act"]
    assert act["vetoed"] is True and act["success"] is False
    assert act["veto"] == "no_lookup"
    assert act["output"].startswith("VETOED by shadow pattern 'no_lookup':")
    assert act["output"] == "VETOED by shadow pattern 'no_lookup': Lookups are forbidden here."
    assert act["progress"] == "failed"
    assert r1["psyche"]["shadow_encounters"] == 1
    assert [p.kind for p in agent.provenance if p.kind == "ShadowVeto"] == ["ShadowVeto"]
    assert len(agent.kg) == triples_before  # nothing ran
    r2 = agent.step()
    assert r2["decide"]["tool"] != "kg_query"
    kq = by_tool(r2)["kg_query"]
    assert kq["recency"] == pytest.approx(0.4) and kq["novelty"] == 0.0  # a vetoed tool counts as used
    assert r2["act"]["vetoed"] is False and r2["act"]["success"] is True
    assert r2["psyche"]["shadow_encounters"] == 1


def test_bias_records_cumulative_severity_and_the_action_runs():
    psyche = psyche_from("""
        [[shadow.bias_patterns]]
        name = "lookup_habit"
        triggers = ["tool=kg_query"]
        severity = 0.3
        explanation = "Leans on lookups."

        [[shadow.bias_patterns]]
        name = "whale_fixation"
        triggers = ["input=whale"]
        severity = 0.25
        explanation = "Always whales."
    """)
    agent = make_agent([("whale", "eats", "krill")], psyche=psyche)
    agent.add_goal("whale", "krill")
    r = agent.step()
    assert r["decide"]["tool"] == "kg_query"
    act = r["act"]
    assert act["bias"] == pytest.approx(0.55)
    assert act["bias_patterns"] == ["lookup_habit", "whale_fixation"]
    assert act["vetoed"] is False and act["success"] is True
    assert not act["output"].startswith("VETOED")
    assert act["progress"] == "completed"
    assert r["psyche"]["shadow_encounters"] == 0


def test_tool_exception_is_a_failed_cycle_not_a_crash(monkeypatch):
    def boom(agent, ctx, arg):
        raise RuntimeError("index on fire")

    original = TOOLS["kg_query"]
    monkeypatch.setitem(TOOLS, "kg_query", Tool(original.spec, original.offer, boom))
    agent = make_agent(K_AND_I)
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    assert r["decide"]["tool"] == "kg_query"
    assert r["act"]["success"] is False and r["act"]["vetoed"] is False
    assert r["act"]["progress"] == "failed"
    assert "index on fire" in r["act"]["output"]
    assert goal_status(r, 1) == "active"
    assert r["plan"]["attempt"] == 1  # the failure backtracked the plan


# ---- §10 working memory ----------------------------------------------------------------------------

def test_wm_evicts_lowest_relevance_then_oldest():
    wm = WorkingMemory(3)
    wm.push("o", "observation", 1)   # id 1, 0.6
    wm.push("i", "inference", 1)     # id 2, 0.5
    wm.push("d", "decision", 1)      # id 3, 0.7
    wm.push("a", "action", 1)        # id 4, 0.6 -> evicts 2 (lowest)
    assert wm.evicted == [2]
    wm.push("r", "reflection", 1)    # id 5, 0.8 -> evicts 1 (0.6, older than 4)
    assert wm.evicted == [2, 1]
    wm.push("o2", "observation", 1)  # id 6 -> evicts 4 (0.6; 3 is 0.7, 5 is 0.8)
    assert wm.evicted == [2, 1, 4]
    assert list(wm.entries) == [3, 5, 6]


def test_default_relevance_per_kind():
    wm = WorkingMemory(10)
    kinds = {"observation": 0.6, "inference": 0.5, "decision": 0.7, "action": 0.6, "reflection": 0.8}
    for kind, rel in kinds.items():
        assert wm.push(kind, kind, 0).relevance == rel


def test_evictions_during_a_cycle_are_in_the_record():
    agent = make_agent(K_AND_I, wm_capacity=10, auto_consolidate=False)
    agent.add_goal("whale", "whale unicorn")
    r1, r2 = agent.step(), agent.step()
    assert r1["wm"]["evicted"] == [] and r2["wm"]["evicted"] == []
    assert r2["wm"]["size"] == 8
    before = list(agent.wm.entries.values())
    r3 = agent.step()
    evicted = r3["wm"]["evicted"]
    assert len(evicted) == 2 and r3["wm"]["size"] == 10
    expected = [e.id for e in sorted(before, key=lambda e: (e.relevance, e.id))[:2]]
    assert evicted == expected
    kinds = {e.id: e.kind for e in before}
    assert [kinds[i] for i in evicted] == ["inference", "inference"]  # relevance 0.5, oldest first
    assert not set(evicted) & set(agent.wm.entries)


# ---- §10 consolidation and episodic recall ------------------------------------------------------

def test_consolidation_makes_one_episode_per_goal_and_sweeps_wm():
    wm = WorkingMemory(100)
    em = EpisodicMemory()
    e1 = wm.push("Observe whale", "observation", 1, [10], goal=1)
    e2 = wm.push("Act: kg_query -> ...", "action", 1, [11], goal=1, tool="kg_query", success=True)
    e3 = wm.push("Orient dolphin", "inference", 1, [20], goal=2)
    e4 = wm.push("irrelevant", "observation", 1, [99])             # 0.3 < 0.5
    e5 = wm.push("irrelevant but used", "observation", 1, [98])    # 0.3 + 0.3·1 = 0.6
    e5.reference_count = 4
    e6 = wm.push("this cycle", "decision", 2, [10], goal=1)        # current cycle: stays
    res = consolidate(wm, em, 2, {1: frozenset({10}), 2: frozenset({20})}, 0.5)
    assert res.scores[e1.id] == pytest.approx(0.7)
    assert res.scores[e4.id] == pytest.approx(0.3)
    assert res.scores[e5.id] == pytest.approx(0.6)
    by_goal = {ep.goal: ep for ep in res.episodes}
    assert sorted(by_goal, key=str) == sorted([1, 2, None], key=str)
    assert by_goal[1].learnings == (10, 11)
    assert "kg_query" in by_goal[1].tags
    assert by_goal[2].learnings == (20,)
    assert by_goal[None].learnings == (98,)
    assert sorted(res.removed) == [e1.id, e2.id, e3.id, e4.id, e5.id]
    assert list(wm.entries) == [e6.id]
    assert len(em) == 3


def test_consolidation_novelty_uses_what_episodes_already_know():
    wm = WorkingMemory(100)
    em = EpisodicMemory()
    em.add(0, 1, "known", [10], [])
    e = wm.push("again whale", "observation", 1, [10], goal=1)   # 0.4 + 0 + 0 < 0.5
    res = consolidate(wm, em, 2, {1: frozenset({10})}, 0.5)
    assert res.scores[e.id] == pytest.approx(0.4)
    assert res.episodes == []
    assert len(wm) == 0


def test_recall_by_symbol_overlap_newest_first():
    em = EpisodicMemory()
    a = em.add(1, 1, "a", [1, 2], [])
    b = em.add(2, 1, "b", [1], [])
    c = em.add(3, 1, "c", [1], [])
    em.add(4, 1, "d", [7], [])
    assert [e.id for e in em.recall([1], 5)] == [c.id, b.id, a.id]
    assert [e.id for e in em.recall([1, 2], 5)] == [a.id, c.id, b.id]  # more overlap first
    assert [e.id for e in em.recall([1], 2)] == [c.id, b.id]
    assert em.recall([42], 5) == []


def test_auto_consolidation_fires_when_pressure_exceeds_0_8():
    agent = make_agent(K_AND_I + [("whale", "eats", "krill")], wm_capacity=10)
    agent.add_goal("whale", "whale unicorn")
    r1, r2 = agent.step(), agent.step()
    # 4 and 8 entries of 10: pressure 0.4 and exactly 0.8, not above
    assert (r1["wm"]["size"], r2["wm"]["size"]) == (4, 8)
    assert events(agent, "consolidation") == []
    assert len(agent.episodic) == 0
    r3 = agent.step()
    cons = events(agent, "consolidation")
    assert len(cons) == 1 and cons[0]["reason"] == "pressure" and cons[0]["cycle"] == 3
    assert r3["wm"]["consolidated"] == cons[0]["removed"] != []
    assert not set(cons[0]["removed"]) & set(agent.wm.entries)
    assert r3["wm"]["size"] <= 8
    assert [ep["goal"] for ep in cons[0]["episodes"]] == [1]
    assert "kg_query" in cons[0]["episodes"][0]["tags"]
    assert len(agent.episodic) == 1


def test_no_consolidation_while_memory_is_roomy():
    agent = make_agent(K_AND_I)
    agent.add_goal("whale", "whale unicorn")
    run(agent, 4)
    assert events(agent, "consolidation") == []


# ---- §8 goal evaluation ----------------------------------------------------------------------------

def _triple(kg: KnowledgeGraph, s, p, o, prov="asserted") -> Triple:
    return kg.add(s, p, o, 1.0, prov) or kg.get(kg.lookup(s), kg.lookup(p), kg.lookup(o))


def test_triple_pattern_needs_a_matching_triple_not_just_the_words():
    kg = KnowledgeGraph()
    g = make_goal(1, "Classify whales", "(whale is-a mammal)")
    near = [_triple(kg, "whale", "is-a", "cetacean"), _triple(kg, "dolphin", "is-a", "mammal")]
    g.evaluate(kg, near, "whale is-a mammal", 1.0)
    assert g.coverage == 0.0 and not g.is_complete(1.0)
    assert g.missing() == ["(whale is-a mammal)"]
    g.evaluate(kg, [_triple(kg, "whale", "is-a", "mammal", "inferred:milk")], "", 1.0)
    assert g.coverage == 1.0 and g.is_complete(1.0)


def test_pattern_variables_bind_consistently():
    kg = KnowledgeGraph()
    g = make_goal(1, "x", "(?x located-in ?x)")
    g.evaluate(kg, [_triple(kg, "paris", "located-in", "france")], "", 1.0)
    assert g.coverage == 0.0
    g.evaluate(kg, [_triple(kg, "loop", "located-in", "loop")], "", 1.0)
    assert g.coverage == 1.0


def test_keywords_and_patterns_each_count_once():
    c = parse_criteria("orca porpoise (whale is-a mammal) cat")
    assert c.keywords == ("orca", "porpoise")  # "cat" is 3 characters
    assert c.total == 3


def test_synthesized_triples_are_not_evidence():
    kg = KnowledgeGraph()
    g = make_goal(1, "link whale", "(whale related-to ocean) ocean")
    hyp = _triple(kg, "whale", "related-to", "ocean", "tool:synthesize_triple")
    g.evaluate(kg, [hyp], "", 1.0)
    assert g.coverage == 0.0


def test_synthesize_triple_never_completes_a_goal_in_a_run():
    agent = make_agent(K_AND_I)
    agent.add_goal("whale", "(whale related-to ?y)")  # the hypothesis would match it
    records = run(agent, 8)
    synth = [r for r in records if r["decide"]["tool"] == "synthesize_triple"]
    assert synth and synth[0]["act"]["success"]
    assert agent.kg.get(*[agent.kg.lookup(x) for x in ("whale", "related-to", "ocean")]) is not None
    assert all(r["act"]["coverage"] == 0.0 for r in records)
    assert all(goal_status(r, 1) != "completed" for r in records)


@pytest.mark.parametrize("description, expected", [
    ("Find mammals", "mammals"),
    ("Find which mammals live there", "mammals live"),
    ("Classify whales, infer why they swim", "whales swim"),
    ("Search for animals similar to dolphin", "animals dolphin"),
])
def test_default_criteria_drop_stop_words_and_strategy_keywords(description, expected):
    assert default_criteria(description) == expected
    agent = make_agent()
    assert agent.add_goal(description).criteria == expected


# ---- §7 stall and decomposition ----------------------------------------------------------------

def test_stall_splits_parts_into_children_with_parent_priority():
    agent = make_agent([("whale", "is-a", "cetacean")], stall_threshold=2)
    agent.add_goal("Find unicorns", "unicorn, dragon", priority=200)
    r1, r2 = agent.step(), agent.step()
    assert r1["act"]["progress"] == r2["act"]["progress"] == "no_change"
    assert goal_status(r1, 1) == "active"
    goals = {g["id"]: g for g in r2["goals"]}
    assert goals[1]["status"] == "suspended"
    assert [(g["description"], g["priority"], g["parent"], g["status"]) for g in r2["goals"][1:]] == [
        ("Find unicorns: unicorn", 200, 1, "active"),
        ("Find unicorns: dragon", 200, 1, "active"),
    ]
    dec = events(agent, "decomposition")
    assert len(dec) == 1 and dec[0]["mode"] == "parts" and dec[0]["goal"] == 1
    assert [c["criteria"] for c in dec[0]["children"]] == ["unicorn", "dragon"]


def test_stall_without_separator_makes_query_and_reason_children():
    agent = make_agent([("whale", "is-a", "cetacean")], stall_threshold=2)
    agent.add_goal("Find unicorns", "unicorn")
    run(agent, 2)
    kids = [agent.goals[i] for i in agent.goals[1].children]
    assert [(k.description, k.criteria, k.priority) for k in kids] == [
        ("Query knowledge about: unicorn", "unicorn", 128),
        ("Reason about: unicorn", "unicorn", 128),
    ]
    assert agent.goals[1].status == "suspended"


@pytest.mark.parametrize("criteria, expected", [
    ("unicorn, dragon", ["unicorn", "dragon"]),
    ("krill and ocean", ["krill", "ocean"]),
    ("a, b and c", ["a", "b", "c"]),
    ("(whale eats squid), (squid lives-in ocean)", ["(whale eats squid)", "(squid lives-in ocean)"]),
    ("unicorn", ["unicorn"]),
])
def test_split_criteria(criteria, expected):
    assert split_criteria(criteria) == expected


def test_stalled_part_fails_without_redecomposing_and_fails_the_parent():
    agent = make_agent([("whale", "is-a", "cetacean")], stall_threshold=2)
    agent.add_goal("Find unicorns", "unicorn, dragon")
    records = run(agent, 4)
    last = records[-1]
    assert goal_status(last, 2) == "failed"
    assert "stalled" in agent.goals[2].fail_reason
    assert goal_status(last, 1) == "failed"  # a failed part leaves no path
    assert agent.goals[1].fail_reason
    assert len(agent.goals) == 3  # the stalled child was not decomposed again
    assert len(events(agent, "decomposition")) == 1


def test_alternative_children_fail_the_parent_only_when_all_failed():
    agent = make_agent([("whale", "is-a", "cetacean")], stall_threshold=2)
    agent.add_goal("Find unicorns", "unicorn")
    records = run(agent, 20)
    r4 = records[3]
    assert (goal_status(r4, 2), goal_status(r4, 3), goal_status(r4, 1)) == ("failed", "active", "suspended")
    last = records[-1]
    assert [goal_status(last, i) for i in (1, 2, 3)] == ["failed", "failed", "failed"]
    assert len(agent.goals) == 3
    assert agent.step() is None  # no active goal: no cycle runs
    assert agent.cycle == len(records)


def test_parent_completes_when_all_parts_complete():
    agent = make_agent([("whale", "is-a", "cetacean")], stall_threshold=2)
    agent.add_goal("Find unicorns", "krill, ocean", priority=200)
    run(agent, 2)
    assert agent.goals[1].status == "suspended"
    agent.kg.add("krill", "lives-in", "ocean", provenance="user")  # the user teaches the agent
    records = run(agent, 10)
    r_done = next(r for r in records if goal_status(r, 1) == "completed")
    assert goal_status(r_done, 2) == goal_status(r_done, 3) == "completed"
    assert all(goal_status(r, 1) == "suspended" for r in records if r is not r_done and r["cycle"] < r_done["cycle"])
    assert agent.step() is None


# ---- §7 plans and backtracking -----------------------------------------------------------------

def test_veto_on_the_plan_step_fails_the_plan_and_backtracks():
    agent = make_agent(K_AND_I, psyche=psyche_from(VETO_KG_QUERY))
    agent.add_goal("whale", "whale unicorn")
    r1 = agent.step()
    assert r1["decide"]["plan_step"] == "kg_query" and r1["act"]["vetoed"]
    plan = r1["plan"]
    assert plan["attempt"] == 1
    assert plan["strategy"].startswith("reason-first")
    assert plan["steps"][0]["tool"] == "memory_recall" and plan["steps"][0]["marker"] == ">"
    bt = events(agent, "backtrack")
    assert bt and bt[0]["failed_tool"] == "kg_query" and bt[0]["attempt"] == 1


def test_backtracking_alternates_strategy_and_skips_a_repeated_failed_first_step():
    agent = make_agent(K_AND_I, psyche=psyche_from(VETO_KG_QUERY), stall_threshold=50)
    agent.add_goal("whale", "whale unicorn")
    records = run(agent, 12)
    prev = {"attempt": 0, "strategy": "explore-first", "status": "active"}
    skipped_seen = 0
    for r in records:
        failed_plan = not r["act"]["success"] and prev["status"] == "active"
        plan = r["plan"]
        if failed_plan:
            assert plan["attempt"] == prev["attempt"] + 1
            was_explore = prev["strategy"].startswith("explore-first")
            assert plan["strategy"].startswith("reason-first" if was_explore else "explore-first")
            first = plan["steps"][0]
            repeats = first["tool"] == r["decide"]["tool"]
            assert (first["marker"] == "-") is repeats
            skipped_seen += repeats
        else:
            assert plan["attempt"] == prev["attempt"]
        prev = plan
    assert skipped_seen >= 1
    assert max(r["plan"]["attempt"] for r in records) == 2


def test_goal_fails_after_max_backtrack_attempts():
    veto_all = VETO_KG_QUERY.replace('"tool=kg_query"', '"tool="')
    agent = make_agent(K_AND_I, psyche=psyche_from(veto_all))
    agent.add_goal("whale", "whale unicorn")
    records = run(agent, 10)
    assert len(records) == 3
    assert [r["plan"]["attempt"] for r in records] == [1, 2, 2]
    assert goal_status(records[-1], 1) == "failed"
    assert "max_backtrack_attempts" in agent.goals[1].fail_reason
    assert records[-1]["plan"]["status"] == "failed"
    assert records[-1]["plan"]["steps"][0]["marker"] == "✗"
    assert records[-1]["psyche"]["shadow_encounters"] == 3


@pytest.mark.parametrize("flags, attempt, expected", [
    ({}, 0, ["kg_query"]),
    ({"similarity": True}, 0, ["kg_query", "similarity_search"]),
    ({"reasoning": True, "creation": True}, 0, ["kg_query", "reason", "infer_rules", "synthesize_triple"]),
    ({}, 1, ["memory_recall", "reason", "infer_rules", "kg_query"]),
    ({"knowledge": True}, 1, ["memory_recall", "reason", "infer_rules", "kg_query"]),
    ({}, 2, ["kg_query"]),
    ({}, 3, ["memory_recall", "reason", "infer_rules", "kg_query"]),
])
def test_plan_meta_strategy_by_attempt_parity(flags, attempt, expected):
    p = make_plan(1, "x", flags, attempt)
    assert [s.tool for s in p.steps] == expected
    assert p.strategy.startswith("explore-first" if attempt % 2 == 0 else "reason-first")
    assert p.attempt == attempt
    assert p.steps[0].marker == ">" and all(s.marker == "." for s in p.steps[1:])


@pytest.mark.parametrize("text, tool", [
    ("read the file notes.txt", "file_io"),
    ("fetch http://example.org/page", "http_fetch"),
    ("run the shell command ls", "shell_exec"),
])
def test_external_flag_appends_matching_external_tool(text, tool):
    p = make_plan(1, text, {"external": True}, 0)
    assert p.steps[-1].tool == tool
    assert [s.tool for s in p.steps].count(tool) == 1


def test_plan_markers_through_step_results():
    p = make_plan(1, "x", {"similarity": True, "reasoning": True}, 0)
    marks = lambda: "".join(s.marker for s in p.steps)  # noqa: E731
    assert marks() == ">..."
    p.on_result("gap_analysis", failed=False)  # another tool ran: the step stays active
    assert marks() == ">..."
    p.on_result("kg_query", failed=False)
    assert marks() == "✓>.."
    p.on_result("reason", failed=True)  # any failure fails the active step and the plan
    assert marks() == "✓✗.."
    assert p.status == "failed"


def test_new_plan_skips_first_step_repeating_the_failed_tool():
    p = make_plan(1, "x", {}, 2, failed_tool="kg_query")
    assert p.steps[0].tool == "kg_query" and p.steps[0].marker == "-"
    q = make_plan(1, "x", {"similarity": True}, 2, failed_tool="kg_query")
    assert "".join(s.marker for s in q.steps) == "->"
    assert q.current.tool == "similarity_search"
    r = make_plan(1, "x", {}, 1, failed_tool="kg_query")
    assert r.steps[0].marker == ">"  # memory_recall does not repeat the failed tool


# ---- §10 reflection and §9 evolution ------------------------------------------------------------

@pytest.mark.parametrize("priority, boosted", [(128, 148), (245, 255)])
def test_reflection_boosts_goals_that_progressed(priority, boosted):
    agent = make_agent(K_AND_I + [("whale", "eats", "krill")], reflection_interval=2)
    agent.add_goal("whale", "whale unicorn", priority=priority)
    agent.add_goal("unicorn", "unicorn", priority=0)  # never worked on: no boost
    r1 = agent.step()
    assert r1["act"]["progress"] == "advanced"
    assert events(agent, "reflection") == []
    r2 = agent.step()
    refl = events(agent, "reflection")
    assert len(refl) == 1 and refl[0]["cycle"] == 2
    boosts = [a for a in refl[0]["adjustments"] if a["kind"] == "boost_priority"]
    assert boosts == [{"kind": "boost_priority", "goal": 1, "old": priority, "new": boosted}]
    assert {g["id"]: g["priority"] for g in r2["goals"]} == {1: boosted, 2: 0}


def test_reflection_demotes_stagnant_goal_and_suggests_decomposition():
    agent = make_agent([("whale", "is-a", "cetacean")], stall_threshold=100)
    agent.add_goal("Find unicorns", "unicorn", priority=40)
    records = run(agent, 10)
    refl = events(agent, "reflection")
    assert [e["cycle"] for e in refl] == [5, 10]
    assert refl[0]["adjustments"] == []  # 5 stagnant cycles < 8
    kinds = [(a["kind"], a["goal"]) for a in refl[1]["adjustments"]]
    assert kinds == [("demote_priority", 1), ("suggest_decomposition", 1)]
    assert refl[1]["adjustments"][0]["new"] == 10
    assert records[-1]["goals"][0]["priority"] == 10


@pytest.mark.parametrize("archetypes, stats, expected", [
    ({}, {"kg_query": (2, 2)}, {"sage": 0.72}),
    ({}, {"kg_query": (1, 1)}, {"sage": 0.7}),            # fewer than 2 uses
    ({}, {"memory_recall": (3, 0)}, {"guardian": 0.38}),
    ({}, {"kg_query": (10, 7)}, {"sage": 0.7}),           # 0.7 is not > 0.7
    ({}, {"gap_analysis": (10, 3)}, {"healer": 0.5}),     # 0.3 is not < 0.3
    ({}, {"kg_query": (4, 4), "reason": (4, 4)}, {"sage": 0.74}),  # per tool
    ({}, {"kg_query": (4, 4), "reason": (4, 0)}, {"sage": 0.7}),
    ({"sage": 0.94}, {"kg_query": (2, 2)}, {"sage": 0.95}),
    ({"sage": 0.95}, {"kg_query": (2, 2)}, {"sage": 0.95}),
    ({"guardian": 0.11}, {"similarity_search": (2, 0)}, {"guardian": 0.1}),
    ({"guardian": 0.1}, {"similarity_search": (2, 0)}, {"guardian": 0.1}),
])
def test_evolve_archetype_weights(archetypes, stats, expected):
    body = "[archetypes]\n" + "".join(f"{k} = {v}\n" for k, v in archetypes.items())
    p = Psyche.from_toml(body)
    p.evolve(stats, TOOL_ARCHETYPES, 5)
    for a, w in expected.items():
        assert p.archetypes[a] == pytest.approx(w)


@pytest.mark.parametrize("level, encounters, expected", [
    (0.1, 0, 0.1), (0.1, 3, 0.13), (0.1, 7, 0.15), (0.995, 5, 1.0),
])
def test_evolve_individuation(level, encounters, expected):
    p = Psyche.from_toml(
        f"[self_integration]\nindividuation_level = {level}\nshadow_encounters = {encounters}\n")
    p.evolve({}, TOOL_ARCHETYPES, 5)
    assert p.self_integration.individuation_level == pytest.approx(expected)


def test_reflection_in_a_run_evolves_the_psyche():
    agent = make_agent(K_AND_I, psyche=psyche_from(VETO_KG_QUERY), reflection_interval=5, stall_threshold=50)
    agent.add_goal("whale", "whale unicorn")
    records = run(agent, 5)
    refl = events(agent, "reflection")
    assert len(refl) == 1
    enc = records[-1]["psyche"]["shadow_encounters"]
    assert enc >= 1
    assert refl[0]["psyche"]["individuation"] == pytest.approx(0.1 + 0.01 * min(enc, 5))
    stats = agent.tool_stats
    sage_delta = 0.0
    for tool, (uses, ok) in stats.items():
        if uses >= 2 and SPEC_ARCHETYPE[tool] == "sage":
            sage_delta += 0.02 if ok / uses > 0.7 else -0.02 if ok / uses < 0.3 else 0.0
    assert records[-1]["psyche"]["archetypes"]["sage"] == pytest.approx(0.7 + sage_delta)
    assert refl[0]["tool_rates"]["kg_query"] == 0.0  # every kg_query was vetoed


# ---- §4 spreading activation -------------------------------------------------------------------

def test_spreading_activation_decay_hops_floor_and_order():
    agent = make_agent([
        ("whale", "r", "zeta"), ("whale", "r", "alpha"), ("whale", "r", "b1"),
        ("b1", "r", "c1"), ("c1", "r", "d1"),             # d1 is 3 hops away
        ("whale", "r", "e", 0.3), ("e", "r", "f"),        # e 0.15; f 0.075 < 0.1
        ("whale", "r", "g", 0.1),                         # 0.05 < 0.1
        ("whale", "r", "h", 0.2),                         # exactly 0.1: kept
        ("x", "r", "whale"),                              # in-edges spread too
        ("b1", "r", "k", 0.4),                            # 0.5 * 0.4 * 0.5 = 0.1: kept
    ])
    g = agent.add_goal("whale", "whale unicorn")
    act = {agent.kg.label(s): v for s, v in agent.spread(agent.goal_symbols(g)).items()}
    assert act == pytest.approx({
        "zeta": 0.5, "alpha": 0.5, "b1": 0.5, "x": 0.5, "c1": 0.25, "e": 0.15, "h": 0.1, "k": 0.1,
    })
    r = agent.step()
    # top 5 by activation, ties by symbol id (creation order), not by label
    assert [(a["symbol"], a["activation"]) for a in r["orient"]["activated"]] == [
        ("zeta", 0.5), ("alpha", 0.5), ("b1", 0.5), ("x", 0.5), ("c1", 0.25),
    ]
    assert r["orient"]["I"] is True


def test_spreading_activation_takes_the_strongest_path():
    agent = make_agent([("whale", "r", "a", 0.4), ("whale", "r", "b"), ("b", "r", "a")])
    g = agent.add_goal("whale", "whale unicorn")
    act = {agent.kg.label(s): v for s, v in agent.spread(agent.goal_symbols(g)).items()}
    assert act["a"] == pytest.approx(0.25)  # max(0.2 direct, 0.25 via b)
    assert "whale" not in act


# ---- §3 VSA -------------------------------------------------------------------------------------

def test_vsa_vectors_are_seeded_and_stable():
    a, b = VSA(3, 4096), VSA(3, 4096)
    assert np.array_equal(a.vector("whale"), b.vector("whale"))
    c = VSA(4, 4096)
    assert not np.array_equal(a.vector("whale"), c.vector("whale"))
    assert a.similarity(a.vector("whale"), b.vector("whale")) == 1.0
    for x, y in [("whale", "dolphin"), ("ocean", "krill"), ("kg_query", "reason")]:
        assert 0.45 <= a.similarity(a.vector(x), a.vector(y)) <= 0.55
    assert a.similarity(a.vector("whale"), c.vector("whale")) == pytest.approx(0.5, abs=0.05)


def test_vsa_text_vector_ignores_case_and_bundles_words():
    v = VSA(0, 4096)
    # majority of two vectors with ties to +1 (bit 1) is their bitwise OR
    assert np.array_equal(v.text_vector("whale krill"), np.bitwise_or(v.vector("whale"), v.vector("krill")))
    assert np.array_equal(v.text_vector("Whale Krill"), v.text_vector("whale krill"))
    t = v.text_vector("whale krill ocean")
    assert v.similarity(t, v.vector("whale")) > 0.7
    assert 0.45 <= v.similarity(t, v.vector("zebra")) <= 0.55


@pytest.mark.parametrize("dim", [4096, 72, 64])  # whole 64-bit words, and bytes that make none
def test_vsa_similarities_in_one_pass_equal_one_call_per_vector(dim):
    v = VSA(5, dim)
    q = v.vector("ocean")
    vectors = [v.vector(w) for w in ("whale", "ocean", "krill", "dolphin", "zebra")]
    assert v.similarities(q, vectors) == [v.similarity(q, x) for x in vectors]
    assert v.similarities(q, vectors)[1] == 1.0 and v.similarities(q, []) == []


# ---- §5 infer_rules through the agent ------------------------------------------------------------

def test_milk_rule_derives_whale_is_mammal_and_completes_the_goal():
    agent = make_agent([
        ("whale", "has-property", "gives-milk"), ("whale", "is-a", "cetacean"), ("cetacean", "lives-in", "ocean"),
    ], rules=MILK_RULE)
    agent.add_goal("Classify whales", "(whale is-a mammal)")
    records = run(agent, 10)
    last = records[-1]
    assert goal_status(last, 1) == "completed"
    assert last["decide"]["tool"] == "infer_rules"
    assert last["act"]["progress"] == "completed" and last["act"]["coverage"] == 1.0
    assert all(r["act"]["coverage"] == 0.0 for r in records[:-1])
    kg = agent.kg
    t = kg.get(kg.lookup("whale"), kg.lookup("is-a"), kg.lookup("mammal"))
    assert t is not None and t.provenance == "inferred:milk-means-mammal"
    assert "whale is-a mammal" in last["act"]["output"]
    assert agent.step() is None


def test_zoo_scenario_classifies_whales_by_inference():
    agent = zoo_agent()
    records = run(agent, 40)
    done = next(r for r in records if r["goal"]["id"] == 2 and r["act"]["progress"] == "completed")
    assert done["decide"]["tool"] == "infer_rules"
    assert [agent.goals[i].status for i in (1, 2, 3)] == ["completed"] * 3


# ---- snapshot / restore and determinism ----------------------------------------------------------

def test_snapshot_restore_continues_identically():
    original = zoo_agent()
    run(original, 6)
    state = json.loads(json.dumps(snapshot(original)))  # survives JSON
    restored = restore(zoo_agent(goals=False), state)
    a = [json.dumps(original.step()) for _ in range(10)]
    b = [json.dumps(restored.step()) for _ in range(10)]
    assert a == b
    assert all(x != "null" for x in a)


def test_same_inputs_give_identical_records():
    a, b = zoo_agent(seed=7), zoo_agent(seed=7)
    ra, rb = run(a, 30), run(b, 30)
    assert len(ra) >= 20
    assert json.dumps(ra) == json.dumps(rb)
    assert json.dumps(a.drain_events()) == json.dumps(b.drain_events())


def test_different_seed_gives_different_similarity():
    a, b = zoo_agent(seed=7), zoo_agent(seed=8)
    assert a.profile_similarity(a.goals[2], "infer_rules") != b.profile_similarity(b.goals[2], "infer_rules")
    assert json.dumps(run(a, 30)) != json.dumps(run(b, 30))


_HASHSEED_SCRIPT = textwrap.dedent("""
    import hashlib, json, sys
    sys.path.insert(0, sys.argv[1])
    from tests.engine.cycle.test_engine import run, zoo_agent
    agent = zoo_agent()
    records = run(agent, 30)
    print(hashlib.sha256(json.dumps([records, agent.drain_events()]).encode()).hexdigest())
""")


def test_records_do_not_depend_on_python_hash_seed():
    procs = []
    for hs in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hs)
        procs.append(subprocess.Popen(
            [sys.executable, "-c", _HASHSEED_SCRIPT, str(ROOT)], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(out.strip())
    in_process = hashlib.sha256(json.dumps([run(a := zoo_agent(), 30), a.drain_events()]).encode()).hexdigest()
    assert outs[0] == outs[1] == in_process


# ---- §4 / §11 cycle record shape -----------------------------------------------------------------

def test_cycle_record_has_the_spec_keys():
    agent = make_agent(K_AND_I)
    agent.add_goal("whale", "whale unicorn")
    r = agent.step()
    assert r["type"] == "cycle" and r["v"] == 1 and r["cycle"] == 1
    assert r["goal"] == {"id": 1, "description": "whale"}
    for key in ("observe", "orient", "decide", "act", "goals", "plan", "wm", "psyche"):
        assert key in r
    assert {"tool", "input", "breakdown", "candidates"} <= set(r["decide"])
    assert {"success", "vetoed", "veto", "bias", "output", "progress", "coverage"} <= set(r["act"])
    assert len(r["goals"]) == 1
    assert {"id": 1, "description": "whale", "status": "active", "priority": 128, "parent": None}.items() <= r["goals"][0].items()
    assert {"size", "evicted"} <= set(r["wm"])
    assert {"archetypes", "individuation", "shadow_encounters", "dominant"} <= set(r["psyche"])
    assert all(set(s) >= {"tool", "marker"} for s in r["plan"]["steps"])


def test_observe_orders_active_goals_by_priority_then_age():
    agent = make_agent(K_AND_I)
    agent.add_goal("whale a", "unicorn", priority=100)
    agent.add_goal("whale b", "unicorn", priority=200)
    agent.add_goal("whale c", "unicorn", priority=100)
    r = agent.step()
    assert r["observe"]["goals"] == [2, 1, 3]
    assert r["goal"]["id"] == 2


def test_a_config_changed_in_place_between_cycles_changes_the_next_offers():
    """What the config leaves out is kept between cycles (issue 29), and made again as soon as
    the capabilities or the disabled tools change, even edited in place."""
    agent = make_agent([("whale", "is-a", "mammal"), ("whale", "lives-in", "ocean")])
    agent.add_goal("Explore whale", "plankton")
    first = by_tool(agent.step())
    assert first["reason"]["offered"] and first["file_io"]["why_not"] == "not offered: capability read_fs, write_fs disabled"
    agent.config.disabled_tools.append("reason")
    agent.config.capabilities["read_fs"] = True
    second = by_tool(agent.step())
    assert second["reason"]["why_not"] == "not offered: disabled for this run"
    assert second["file_io"]["why_not"] == "not offered: capability write_fs disabled"
    agent.config.disabled_tools.remove("reason")
    assert by_tool(agent.step())["reason"]["offered"]


def test_symbol_similarities_are_kept_while_the_graph_stands_still(monkeypatch):
    from akh_tui.engine.knowledge.vsa import SymbolVectors

    kg = KnowledgeGraph()
    for s, p, o in [("whale", "is-a", "mammal"), ("dolphin", "is-a", "mammal"), ("shark", "lives-in", "ocean")]:
        kg.add(s, p, o)
    vsa = VSA(1, 4096)
    sv = SymbolVectors(kg, vsa)
    ids = [kg.lookup(w) for w in ("whale", "dolphin", "shark", "mammal")]
    passes: list[int] = []
    real = vsa.similarities
    monkeypatch.setattr(vsa, "similarities", lambda q, vs: passes.append(len(vs)) or real(q, vs))
    first = sv.similarities(ids[:1], ids[1:])
    assert sv.similarities(ids[:1], ids[1:]) == first and len(passes) == 1  # kept: no second pass
    assert first == real(sv.vector(ids[0]), [sv.vector(s) for s in ids[1:]])
    kg.add("whale", "eats", "krill")  # the whale's vector changes: asked again, answered anew
    again = sv.similarities(ids[:1], ids[1:])
    assert len(passes) == 2 and again != first
    fresh = SymbolVectors(kg, VSA(1, 4096))
    assert again == fresh.similarities(ids[:1], ids[1:])
    assert sv.similarities(ids[:2], ids[2:]) == fresh.similarities(ids[:2], ids[2:])  # two seeds: their bundle


def test_first_distinct_learnings_are_those_of_the_whole_list_cut():
    from akh_tui.engine.cycle.agent import _first_distinct

    groups = [(5, 3, 5), (), (3, 9, 1, 2), (7, 8, 6, 4, 0, 11, 12)]
    for n in (1, 3, 10, 50):
        assert _first_distinct(groups, n) == list(dict.fromkeys(s for g in groups for s in g))[:n]
