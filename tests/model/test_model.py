"""The real local model end to end (`make test-model`, issue 27): SmolLM2-135M in this process,
one thread. Its choices are weak, so these tests assert structure, never which tool it picks:
every reply is valid (a rejection may only be the goal refusing the input, never malformed
output), and a run re-runs from its recordings with no model, same trace bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from akh_tui.engine.llm import local

pytestmark = pytest.mark.skipif(not local.installed(), reason="the local model is not installed: make local")

DATA = Path(local.__file__).resolve().parents[2] / "data" / "worlds"
MALFORMED = ("reply is not JSON", "missing key", "empty reply", "must be a string", "must be an object",
             "unknown tool", "is not offered")


def _decisions(trace: Path) -> list[dict]:
    recs = [json.loads(line) for line in trace.read_text().splitlines()]
    return [r["decide"]["llm"] for r in recs if isinstance(r.get("decide"), dict) and r["decide"].get("llm")]


def _valid(llm: dict) -> None:
    assert llm["status"] in ("accepted", "intent_rejected"), llm
    if llm["status"] == "intent_rejected":
        assert not any(m in (llm["reason"] or "") for m in MALFORMED), llm["reason"]


def test_zoo_run_every_reply_valid_and_replayable_without_the_model(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--decider", "local", "--max-cycles", "5", "--fresh",
        "--trace", str(tmp_path / "live.jsonl"))
    decisions = _decisions(tmp_path / "live.jsonl")
    assert decisions
    for llm in decisions:
        _valid(llm)
    (tmp_path / "config.toml").write_text("[llm]\noffline = true\n")
    cli("agent", "run", "--scenario", "zoo", "--decider", "local", "--max-cycles", "5", "--fresh",
        "--trace", str(tmp_path / "replayed.jsonl"))
    assert (tmp_path / "live.jsonl").read_bytes() == (tmp_path / "replayed.jsonl").read_bytes()


def test_a_world_of_two_model_agents(cli, tmp_path):
    shutil.copytree(DATA / "harbour", tmp_path / "harbour")
    (tmp_path / "two.toml").write_text(
        '[world]\nname = "two"\nseed = 0\nrounds = 2\nschedule = "round-robin"\nstep_s = 1.0\nstarting_scrip = 20\n\n'
        '[[agents]]\nid = "pilot"\nscenario = "harbour/pilot.toml"\ndecider = "local"\n\n'
        '[[agents]]\nid = "fisher"\nscenario = "harbour/fisher.toml"\ndecider = "local"\n')
    cli("world", "run", str(tmp_path / "two.toml"), "--trace", str(tmp_path / "world.jsonl"))
    decisions = _decisions(tmp_path / "world.jsonl")
    assert len(decisions) >= 2
    for llm in decisions:
        _valid(llm)
