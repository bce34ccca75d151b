"""Structured output in each server's dialect (issue 27): the reply's JSON Schema, its tool an
enum of the tools offered this cycle, reaches a loopback stub that reads it the way that server
does. The stub answers like a constrained sampler when it finds the schema where its server
looks (the first tool of the enum, valid JSON) and like an unconstrained small model otherwise
(prose cut off at max_tokens), so a preset sending the schema the wrong way is seen."""

from __future__ import annotations

import json

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.llm.config import LLMConfig
from akh_tui.engine.llm.decider import LLMDecider
from akh_tui.engine.llm.rate import RateTracker
from akh_tui.engine.llm.transport import OpenAICompatibleProvider
from tests.engine.llm.test_llm import Reply, ScriptedServer, completion, context


def _schema_where(server: str, body: dict) -> dict | None:
    """Where each server family reads the reply's schema in a chat-completions request."""
    rf = body.get("response_format") or {}
    if server == "llama.cpp":  # llama-server: a top-level json_schema, and never with a grammar
        if "grammar" in body:
            return None
        return body.get("json_schema")
    if server == "llama-cpp-python":  # JSON Schema mode: json_object with a schema
        return rf.get("schema") if rf.get("type") == "json_object" else None
    # Ollama's OpenAI layer and OpenAI: structured outputs
    return (rf.get("json_schema") or {}).get("schema") if rf.get("type") == "json_schema" else None


def _constrained(schema: dict) -> str:
    tool = schema["properties"]["action"]["properties"]["tool"]["enum"][0]
    return json.dumps({"situation_assessment": "constrained", "action_rationale": "the schema's first tool",
                       "action": {"tool": tool, "input": ""}})


RAMBLE = 'Sure! Here is what I think: {"situation_assessment": "the agent wants to know about dogs and'


@pytest.fixture
def stub():
    s = ScriptedServer()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def _decide(stub: ScriptedServer, server: str, preset: str) -> dict:
    """One decision against a stub of `server` by a client configured with `preset`."""
    cfg = LLMConfig.from_dict({"preset": preset, "base_url": stub.base_url, "model": "m"})
    provider = OpenAICompatibleProvider(cfg, RateTracker(1000, 10_000_000), sleep=lambda s: None, env={})
    # the stub reads the request the client is about to send, then answers in kind
    orig = provider._attempt

    def attempt(body: bytes, headers: dict[str, str]):
        schema = _schema_where(server, json.loads(body))
        stub.script(Reply(200, {}, completion(_constrained(schema) if schema else RAMBLE)))
        return orig(body, headers)

    provider._attempt = attempt  # type: ignore[method-assign]
    return LLMDecider(provider).decide(context(offered=("gap_analysis", "kg_query")))


@pytest.mark.parametrize("server", ["openai", "ollama", "llama.cpp", "llama-cpp-python"])
def test_each_preset_is_constrained_by_its_server(stub, server):
    out = _decide(stub, server, server)
    assert out["rejected"] is None and out["error"] is None
    # the enum is the offered tools in the prompt's order: kg_query comes before gap_analysis there
    assert out["intent"]["tool"] == "kg_query"
    body = stub.bodies()[0]
    assert body["temperature"] == 0.0 and body["seed"] == 0


@pytest.mark.parametrize("server,preset", [("llama.cpp", "openai"), ("llama-cpp-python", "llama.cpp"),
                                           ("ollama", "llama-cpp-python")])
def test_a_preset_in_the_wrong_dialect_is_not_constrained(stub, server, preset):
    out = _decide(stub, server, preset)
    assert out["intent"] is None and out["rejected"].startswith("reply is not JSON")


def test_presets_give_the_loopback_address_of_their_server():
    assert LLMConfig.from_dict({"preset": "ollama", "model": "smollm2:135m"}).endpoint == \
        "http://127.0.0.1:11434/v1/chat/completions"
    cfg = LLMConfig.from_dict({"preset": "llama.cpp"})
    assert cfg.endpoint == "http://127.0.0.1:8080/v1/chat/completions" and cfg.model == "local"
    assert LLMConfig.from_dict({"preset": "llama-cpp-python"}).base_url == "http://127.0.0.1:8000/v1"


@pytest.mark.parametrize("table,field,words", [
    ({"preset": "vllm"}, "llm.preset", "must be one of openai, ollama, llama.cpp, llama-cpp-python"),
    ({"model": "m"}, "llm.base_url", "is required"),
    ({"preset": "ollama"}, "llm.model", "is required"),
    ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "seed": -1}, "llm.seed", "must be an integer"),
    ({"base_url": "http://127.0.0.1:1/v1", "model": "m", "structured": "yes"}, "llm.structured", "true or false"),
    ({"provider": "cloud"}, "llm.provider", "must be one of http, local"),
])
def test_bad_llm_tables_name_the_field(table, field, words):
    with pytest.raises(InputError) as exc:
        LLMConfig.from_dict(table)
    assert exc.value.field == field and words in str(exc.value)


def test_structured_false_sends_the_plain_json_mode(stub):
    cfg = LLMConfig.from_dict({"base_url": stub.base_url, "model": "m", "structured": False, "seed": 42})
    provider = OpenAICompatibleProvider(cfg, RateTracker(1000, 10_000_000), sleep=lambda s: None, env={})
    stub.script(Reply(200, {}, completion(RAMBLE)))
    LLMDecider(provider).decide(context())
    body = stub.bodies()[0]
    assert body["response_format"] == {"type": "json_object"} and body["seed"] == 42


def test_offered_inputs_pin_each_tools_input_in_the_schema():
    from akh_tui.engine.llm.reply import reply_schema

    free = reply_schema(["kg_query", "reason"])
    assert free["properties"]["action"]["properties"]["input"] == {"type": "string", "maxLength": 2000}
    pinned = reply_schema(["kg_query", "reason"], {"kg_query": "dog", "reason": ""})["properties"]["action"]["anyOf"]
    assert [(a["properties"]["tool"]["const"], a["properties"]["input"]["enum"]) for a in pinned] == \
        [("kg_query", ["", "dog"]), ("reason", [""])]
    # the local model pins them by default; a server's model chooses its input unless told to
    assert LLMConfig.from_dict({"provider": "local"}).offered_inputs is True
    assert LLMConfig.from_dict({"provider": "local", "offered_inputs": False}).offered_inputs is False
    assert LLMConfig.from_dict({"preset": "llama.cpp"}).offered_inputs is False
