"""A run with the LLM decider against a real loopback server: it completes a zoo goal and
survives a 429 and a malformed reply (the utility choice stands in for a rejected intent)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from akh_tui.engine.llm.decider import LLMDecider, ScriptedProvider
from akh_tui.engine.runs.scenario import build_agent, load_scenario


def reply(tool: str, text_input: str = "") -> dict:
    content = json.dumps({
        "situation_assessment": f"the goal needs {tool}",
        "action_rationale": f"{tool} fits the goal",
        "action": {"tool": tool, "input": text_input},
    })
    return {"choices": [{"message": {"content": content}}], "usage": {"total_tokens": 42}}


@pytest.fixture
def model_server():
    script = [
        (429, {"Retry-After": "0"}, {"error": {"message": "slow down"}}),
        (200, {}, {"choices": [{"message": {"content": "I think kg_query, probably"}}]}),  # not JSON
        (200, {}, reply("kg_query", "mammal")),
    ]
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            status, headers, payload = script.pop(0) if script else (200, {}, reply("kg_query"))
            data = json.dumps(payload).encode()
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_llm_run_completes_a_zoo_goal_through_a_429_and_a_malformed_reply(cli, tmp_path, model_server, monkeypatch):
    base_url, seen = model_server
    config = tmp_path / "config.toml"
    config.write_text(f'[llm]\nbase_url = "{base_url}"\nmodel = "test-model"\napi_key_env = "AKH_TEST_KEY"\n'
                      'backoff_base = 0.01\n')
    monkeypatch.setenv("AKH_TUI_CONFIG", str(config))
    monkeypatch.setenv("AKH_TEST_KEY", "sk-test")
    out = json.loads(cli("agent", "run", "--scenario", "zoo", "--goals", "Find mammals", "--decider", "llm",
                         "--max-cycles", "10", "--json", "--trace", "t.jsonl").stdout)
    assert out["goals"][0]["status"] == "completed"
    cycles = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines() if '"type":"cycle"' in line]
    first, second = cycles[0]["decide"], cycles[1]["decide"]
    # cycle 1: 429, retried, then a reply that is not JSON: rejected, the utility choice ran
    assert first["llm"]["status"] == "intent_rejected" and first["tool"] == first["llm"]["utility_tool"]
    # cycle 2: the model's kg_query(mammal) is accepted and completes the goal
    assert second["llm"]["status"] == "accepted" and second["tool"] == "kg_query" and second["input"] == "mammal"
    assert second["llm"]["action_rationale"] == "kg_query fits the goal"
    assert cycles[1]["act"]["progress"] == "completed"
    # the utility table is still computed and traced beside the model's choice
    assert len(second["candidates"]) == 11 and second["breakdown"].startswith("[score=")
    assert len(seen) == 3 and seen[0]["path"] == "/v1/chat/completions"
    assert seen[0]["auth"] == "Bearer sk-test" and seen[1]["body"]["model"] == "test-model"


def test_an_intent_the_tool_cannot_back_is_rejected():
    agent = build_agent(load_scenario("shadow"))
    # the model asks for a shell command the goal never named: refused, whatever the model says
    agent.decider = LLMDecider(ScriptedProvider([json.dumps({
        "situation_assessment": "x", "action_rationale": "y",
        "action": {"tool": "kg_query", "input": "no-such-symbol"}})]))
    rec = agent.step()
    assert rec["decide"]["llm"]["status"] == "intent_rejected"
    assert "not a symbol" in rec["decide"]["llm"]["reason"]
    assert rec["decide"]["tool"] == rec["decide"]["llm"]["utility_tool"]


def test_scripted_decider_is_deterministic():
    def run() -> list[str]:
        agent = build_agent(load_scenario("solar"))
        agent.decider = LLMDecider(ScriptedProvider.for_tools(rotate=True))
        return [json.dumps(agent.step()) for _ in range(12)]

    assert run() == run()


def test_rewinding_an_llm_run_replays_the_recorded_answers_without_asking_the_model(tmp_path):
    from akh_tui.engine.runs.history import rewind
    from akh_tui.engine import Locations, Run
    from akh_tui.engine.store.session import SessionStore

    ctl = Run.start(Locations(tmp_path, tmp_path / "config.toml"), "solar", decider="scripted",
                    store=SessionStore(":memory:", every=5))
    decider = ctl.agent.decider
    for _ in range(12):
        ctl.step()
    assert {ctl.record(c)["decide"]["llm"]["status"] for c in range(1, 13)} == {"accepted"}

    def no_calls(*_a, **_k):
        raise AssertionError("the model was asked during a replay")

    decider.provider.complete = no_calls
    rewound = rewind(ctl.store, ctl.store.branch, 9, ctl._rebuild)  # snapshot at 5, cycles 6..9 replayed
    assert json.dumps(rewound.last_record, sort_keys=True) == json.dumps(ctl.record(9), sort_keys=True)
    assert rewound.decider is decider  # the live model decides what comes next
