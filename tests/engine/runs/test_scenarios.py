"""The bundled scenarios behave as the README promises, through the headless CLI."""

import json
import re
from pathlib import Path

import pytest

from akh_tui.engine.runs.scenario import build_agent, load_scenario

BREAKDOWN = re.compile(
    r"^\[score=(\d+\.\d{2}): base=(\d+\.\d{2}) recency=-(\d+\.\d{2}) novelty=\+(\d+\.\d{2})"
    r" episodic=\+(\d+\.\d{2}) pressure=\+(\d+\.\d{2}) archetype=([+-]\d+\.\d{3}) plan=\+(\d+\.\d{2})\]$"
)
FACTORS = ("base", "recency", "novelty", "episodic", "pressure", "archetype", "plan")


def read_trace(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_zoo_run_completes_every_goal_with_exact_breakdowns(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "60", "--trace", "t.jsonl")
    lines = read_trace(tmp_path / "t.jsonl")
    assert lines[0]["type"] == "run" and lines[0]["v"] == 1 and lines[0]["scenario"] == "zoo"
    cycles = [r for r in lines if r["type"] == "cycle"]
    assert cycles, "no cycle ran"
    final = {g["description"]: g["status"] for g in cycles[-1]["goals"] if g["parent"] is None}
    assert final == {
        "Find mammals": "completed",
        "Classify whales": "completed",
        "Find animals similar to dolphin": "completed",
    }
    for rec in cycles:
        chosen = next(c for c in rec["decide"]["candidates"] if c["tool"] == rec["decide"]["tool"])
        total = chosen["base"] - chosen["recency"] + chosen["novelty"] + chosen["episodic"] + chosen["pressure"] + chosen["archetype"] + chosen["plan"]
        assert chosen["score"] == pytest.approx(max(0.0, total), abs=1e-12)
        m = BREAKDOWN.match(rec["decide"]["breakdown"])
        assert m, rec["decide"]["breakdown"]
        assert float(m.group(1)) == pytest.approx(chosen["score"], abs=0.005)
        assert len(rec["decide"]["candidates"]) == 11
        assert all(set(FACTORS) <= set(c) for c in rec["decide"]["candidates"])


def test_classify_whales_completes_only_after_infer_rules():
    agent = build_agent(load_scenario("zoo"))
    whales = next(g for g in agent.goals.values() if g.description == "Classify whales")
    tools_before_completion = []
    while whales.status == "active":
        rec = agent.step()
        assert rec is not None
        if rec["goal"]["id"] == whales.id:
            tools_before_completion.append(rec["decide"]["tool"])
    assert whales.status == "completed"
    assert "infer_rules" in tools_before_completion
    whale, mammal, isa = (agent.kg.lookup(x) for x in ("whale", "mammal", "is-a"))
    fact = agent.kg.get(whale, isa, mammal)
    assert fact is not None and fact.provenance.startswith("inferred:")


def test_same_run_twice_gives_byte_identical_traces(cli, tmp_path):
    cli("agent", "run", "--scenario", "solar", "--max-cycles", "40", "--trace", "a.jsonl", "--fresh")
    cli("agent", "run", "--scenario", "solar", "--max-cycles", "40", "--trace", "b.jsonl", "--fresh",
        data_dir=tmp_path / "other")
    a, b = (tmp_path / "a.jsonl").read_bytes(), (tmp_path / "b.jsonl").read_bytes()
    assert a == b and len(a) > 1000


def test_different_seed_changes_similarity_values(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "10", "--trace", "a.jsonl", "--seed", "1")
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "10", "--trace", "b.jsonl", "--seed", "2", data_dir=tmp_path / "d2")
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "b.jsonl").read_bytes()


def test_shadow_scenario_shows_a_veto_then_the_agent_adapts(cli, tmp_path):
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "40", "--trace", "s.jsonl")
    cycles = [r for r in read_trace(tmp_path / "s.jsonl") if r["type"] == "cycle"]
    vetoed = [i for i, r in enumerate(cycles) if r["act"]["vetoed"]]
    assert vetoed, "the shadow scenario never showed a veto"
    i = vetoed[0]
    rec = cycles[i]
    assert rec["decide"]["tool"] == "shell_exec"
    assert rec["act"]["veto"] == "destructive_action"
    assert rec["act"]["output"].startswith("VETOED by shadow pattern 'destructive_action':")
    assert rec["psyche"]["shadow_encounters"] == 1
    nxt = cycles[i + 1]
    assert nxt["decide"]["tool"] != "shell_exec"
    vetoed_row = next(c for c in nxt["decide"]["candidates"] if c["tool"] == "shell_exec")
    assert vetoed_row["recency"] == 0.4 and vetoed_row["novelty"] == 0.0
    assert nxt["plan"]["attempt"] == 1  # the failed plan was replaced


@pytest.mark.parametrize("name", ["zoo", "solar", "shadow"])
def test_bundled_scenarios_load(name):
    sc = load_scenario(name)
    assert sc.name == name and sc.goals and sc.kg
