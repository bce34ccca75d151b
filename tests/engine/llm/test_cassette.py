"""Model calls recorded and replayed (issue 27): a run decided by a model re-runs from its
recordings with no model and writes the same trace bytes; a prompt the recordings lack is a
divergence naming the cycle, never a silent replay."""

from __future__ import annotations

import gzip
import json

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.llm.cassette import CASSETTE_NAME, Cassette, prompt_hash
from akh_tui.engine.llm.decider import LLMDecider
from akh_tui.engine.llm.scripted import ScriptedProvider
from tests.engine.llm.test_llm import context
from tests.engine.llm.test_secrets import StubLLM

SAMPLING = {"temperature": 0.0, "seed": 0, "max_tokens": 400}


def _contexts() -> list[dict]:
    return [context(cycle=c, offered=offered) for c, offered in
            ((1, ("kg_query", "gap_analysis")), (2, ("gap_analysis",)), (3, ("kg_query", "reason")))]


def test_offline_replays_every_recorded_decision(tmp_path):
    path = tmp_path / "calls.jsonl.gz"
    live = LLMDecider(ScriptedProvider.for_tools(rotate=True), cassette=Cassette(path), sampling=SAMPLING)
    first = [live.decide(c) for c in _contexts()]
    assert [live.calls[c]["replayed"] for c in (1, 2, 3)] == [False, False, False]
    # one gzip member per call, each a JSON line with the prompt's hash, request, reply and tokens
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    assert len(lines) == 3
    call = json.loads(lines[0])
    assert call["cycle"] == 1 and len(call["prompt_hash"]) == 64 and call["tokens"] > 0
    assert call["sampling"] == SAMPLING and "wall_latency_s" in call
    assert call["request"]["schema"]["properties"]["action"]["properties"]["tool"]["enum"] == ["kg_query", "gap_analysis"]

    offline = LLMDecider(None, cassette=Cassette(path), sampling=SAMPLING)
    again = [offline.decide(c) for c in _contexts()]
    assert [a["intent"] for a in again] == [f["intent"] for f in first]
    assert [a["tokens_used"] for a in again] == [f["tokens_used"] for f in first]
    assert [offline.calls[c]["replayed"] for c in (1, 2, 3)] == [True, True, True]


def test_a_changed_prompt_is_a_divergence_naming_the_cycle(tmp_path):
    path = tmp_path / "calls.jsonl.gz"
    LLMDecider(ScriptedProvider.for_tools(), cassette=Cassette(path), sampling=SAMPLING).decide(context(cycle=4))
    offline = LLMDecider(None, cassette=Cassette(path), sampling=SAMPLING)
    out = offline.decide(context(cycle=4, last_result="something else happened"))
    assert out["intent"] is None
    assert out["error"].startswith("cycle 4: this prompt is not in the recorded model calls")
    assert "diverged" in out["error"] and "prompt hash" in out["error"]
    # the sampling is part of the key: another seed is another prompt
    other = LLMDecider(None, cassette=Cassette(path), sampling=SAMPLING | {"seed": 1})
    assert other.decide(context(cycle=4))["error"] is not None


def test_prompt_hash_is_stable_and_covers_schema_and_sampling():
    msgs = [{"role": "user", "content": "hi"}]
    h = prompt_hash(msgs, {"enum": ["a"]}, SAMPLING)
    assert h == prompt_hash([dict(m) for m in msgs], {"enum": ["a"]}, dict(SAMPLING))
    assert h != prompt_hash(msgs, {"enum": ["b"]}, SAMPLING) != prompt_hash(msgs, {"enum": ["a"]}, {})


def test_a_cut_cassette_keeps_its_calls_and_garbage_is_refused(tmp_path):
    path = tmp_path / "calls.jsonl.gz"
    live = LLMDecider(ScriptedProvider.for_tools(), cassette=Cassette(path), sampling=SAMPLING)
    for c in _contexts():
        live.decide(c)
    data = path.read_bytes()
    path.write_bytes(data[:-60])  # killed while appending the last call
    assert len(Cassette(path).calls) == 2
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip at all")
    with pytest.raises(InputError) as exc:
        Cassette(bad)
    assert str(bad) in str(exc.value)


def test_a_run_re_runs_from_its_recordings_with_no_model_same_bytes(cli, tmp_path):
    stub = StubLLM()
    config = tmp_path / "config.toml"
    try:
        config.write_text(f'[llm]\nbase_url = "http://127.0.0.1:{stub.port}/v1"\nmodel = "m"\napi_key_env = "NO_KEY"\n')
        cli("agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "6", "--fresh",
            "--trace", str(tmp_path / "live.jsonl"))
    finally:
        stub.stop()  # no model from here on
    assert (tmp_path / "data" / CASSETTE_NAME).is_file()
    config.write_text('[llm]\noffline = true\nmodel = "m"\n')
    cli("agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "6", "--fresh",
        "--trace", str(tmp_path / "replayed.jsonl"))
    live, replayed = (tmp_path / "live.jsonl").read_bytes(), (tmp_path / "replayed.jsonl").read_bytes()
    assert live == replayed and b'"llm"' in live
    # another model is asked, never replayed: offline, it is a divergence
    config.write_text('[llm]\noffline = true\nmodel = "other"\n')
    cli("agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1", "--fresh",
        "--trace", str(tmp_path / "other-model.jsonl"))
    rec = [json.loads(x) for x in (tmp_path / "other-model.jsonl").read_text().splitlines() if '"cycle"' in x][-1]
    assert rec["decide"]["llm"]["status"] == "llm_error"
    config.write_text('[llm]\noffline = true\nmodel = "m"\n')
    # another goal is another prompt: a divergence the record names, and the table's choice runs
    proc = cli("agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1", "--fresh",
               "--goals", "Find reptiles", "--trace", str(tmp_path / "other.jsonl"))
    rec = [json.loads(x) for x in (tmp_path / "other.jsonl").read_text().splitlines() if '"cycle"' in x][-1]
    llm = rec["decide"]["llm"]
    assert llm["status"] == "llm_error" and llm["reason"].startswith("cycle 1: this prompt is not in the recorded")
    assert "llm_error" in proc.stdout


def test_offline_with_no_recordings_is_a_clear_error(cli, tmp_path):
    (tmp_path / "config.toml").write_text('[llm]\noffline = true\n')
    proc = cli("agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1", "--fresh", check_rc=2)
    assert "offline needs recorded model calls" in proc.stdout + proc.stderr


@pytest.mark.parametrize("call,field", [
    ({"prompt_hash": "ab", "reply": "x", "tokens": 1}, "prompt_hash"),
    ({"prompt_hash": "a" * 64, "reply": {"tool": "shell_exec"}, "tokens": 1}, "reply"),
    ({"prompt_hash": "a" * 64, "reply": "x", "tokens": "lots"}, "tokens"),
    ({"prompt_hash": "a" * 64, "reply": "x", "tokens": -5}, "tokens"),
])
def test_a_tampered_cassette_is_refused_naming_line_and_field(tmp_path, call, field):
    path = tmp_path / "calls.jsonl.gz"
    good = {"prompt_hash": "b" * 64, "reply": "{}", "tokens": 3}
    path.write_bytes(gzip.compress((json.dumps(good) + "\n" + json.dumps(call) + "\n").encode()))
    with pytest.raises(InputError) as exc:
        Cassette(path)
    assert exc.value.field == field and exc.value.line == 2 and str(path) in str(exc.value)


def test_a_world_of_model_agents_records_its_calls_and_re_runs_with_no_model_same_bytes(cli, tmp_path):
    """A world's model agents record their calls in the data dir's cassette like a single run's:
    the same world re-run offline, with the server gone, writes the same trace bytes."""
    import shutil

    from akh_tui.engine.paths import bundled_data_dir

    worlds = bundled_data_dir() / "worlds"
    (tmp_path / "w").mkdir()
    shutil.copytree(worlds / "harbour", tmp_path / "w" / "harbour")
    text = (worlds / "harbour.toml").read_text(encoding="utf-8")
    for agent in ("pilot", "fisher"):
        text = text.replace(f'id = "{agent}"\n', f'id = "{agent}"\ndecider = "llm"\n', 1)
    world = tmp_path / "w" / "harbour.toml"
    world.write_text(text, encoding="utf-8")
    stub = StubLLM()
    config = tmp_path / "config.toml"
    try:
        config.write_text(f'[llm]\nbase_url = "http://127.0.0.1:{stub.port}/v1"\nmodel = "m"\napi_key_env = "NO_KEY"\n')
        cli("world", "run", str(world), "--rounds", "3", "--trace", str(tmp_path / "live.jsonl"))
    finally:
        stub.stop()  # no model from here on
    cassette = tmp_path / "data" / CASSETTE_NAME
    assert cassette.is_file()
    with gzip.open(cassette, "rt", encoding="utf-8") as fh:
        assert len([line for line in fh if line.strip()]) == 6  # two model agents, three rounds
    config.write_text('[llm]\noffline = true\nmodel = "m"\n')
    cli("world", "run", str(world), "--rounds", "3", "--fresh", "--trace", str(tmp_path / "replayed.jsonl"))
    live, replayed = (tmp_path / "live.jsonl").read_bytes(), (tmp_path / "replayed.jsonl").read_bytes()
    assert live == replayed
    recs = [json.loads(x) for x in live.decode().splitlines()]
    asked = [r for r in recs if r.get("type") == "cycle" and r["agent"] in ("pilot", "fisher")]
    assert asked and all(r["decide"]["llm"]["status"] in ("accepted", "intent_rejected") for r in asked)
