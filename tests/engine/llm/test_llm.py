"""The LLM decider's model side (akh_tui/engine/llm/decider.py).

HTTP tests talk to a real ThreadingHTTPServer on 127.0.0.1 started here, whose handler pops
scripted responses (status, headers, body, delay) from a queue: the HTTP client is never
mocked. Sleeps are injected and recorded, except the real socket timeout test (0.3 s).
"""

from __future__ import annotations

import json
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.llm.config import LLMConfig
from akh_tui.engine.llm.decider import LLMDecider
from akh_tui.engine.llm.memory import StructuredMemory
from akh_tui.engine.llm.prompt import build_prompt
from akh_tui.engine.llm.rate import RateTracker
from akh_tui.engine.llm.reply import Intent, IntentRejected, parse_reply
from akh_tui.engine.llm.scripted import DEFAULT_PREFERENCE, ScriptedProvider
from akh_tui.engine.llm.transport import LLMError, OpenAICompatibleProvider
from akh_tui.engine.tools.builtins import TOOL_NAMES

# ---- the scripted server --------------------------------------------------------------------


@dataclass
class Reply:
    status: int = 200
    headers: dict = field(default_factory=dict)
    body: bytes | str | dict = b""
    delay: float = 0.0


class ScriptedServer:
    def __init__(self) -> None:
        self.replies: queue.Queue[Reply] = queue.Queue()
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": raw})
                try:
                    r = outer.replies.get_nowait()
                except queue.Empty:
                    r = Reply(599, {}, b'{"error": {"message": "no scripted reply left"}}')
                if r.delay:
                    time.sleep(r.delay)
                body = r.body
                if isinstance(body, dict):
                    body = json.dumps(body)
                if isinstance(body, str):
                    body = body.encode()
                try:
                    self.send_response(r.status)
                    for k, v in r.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up (timeout test)
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):  # a timed-out client is expected
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def script(self, *replies: Reply) -> None:
        for r in replies:
            self.replies.put(r)

    def bodies(self) -> list[dict]:
        return [json.loads(r["body"]) for r in self.requests]


@pytest.fixture
def server():
    s = ScriptedServer()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def completion(content: str, total_tokens: int | None = 123) -> dict:
    out = {"id": "x", "object": "chat.completion",
           "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
    if total_tokens is not None:
        out["usage"] = {"prompt_tokens": 100, "completion_tokens": 23, "total_tokens": total_tokens}
    return out


def answer(tool: str = "kg_query", inp: str = "dog") -> str:
    return json.dumps({"situation_assessment": "little is known about dogs",
                       "action_rationale": "query the graph first", "action": {"tool": tool, "input": inp}})


class FakeClock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, d: float) -> None:
        self.t += d


def make_provider(server, *, env=None, rate=None, **cfg):
    sleeps: list[float] = []
    config = LLMConfig(base_url=server.base_url, model="test-model", **{"backoff_base": 0.5, "backoff_cap": 8.0, **cfg})
    p = OpenAICompatibleProvider(config, rate or RateTracker(1000, 10_000_000), sleep=sleeps.append, env=env or {})
    return p, sleeps


def context(offered=("kg_query", "gap_analysis"), **over) -> dict:
    tools = []
    for name in TOOL_NAMES:
        if name in offered:
            tools.append({"name": name, "offered": True, "why_not": None, "input": "dog" if name == "kg_query" else "dog, cat"})
        else:
            tools.append({"name": name, "offered": False, "why_not": f"{name} gate is off", "input": ""})
    ctx = {
        "cycle": 7,
        "goals": [{"id": "g1", "description": "find what a dog is", "status": "active", "priority": 0.9},
                  {"id": "g2", "description": "learn about cats", "status": "suspended", "priority": 0.4}],
        "focus": {"id": "g1", "description": "find what a dog is", "status": "active", "priority": 0.9},
        "wm": ["Observation: 2 active goals", "Inference: 3 triples about dog", "Decision: kg_query"],
        "last_result": "3 triples about dog: dog is-a mammal; dog has-property barks; dog eats meat",
        "failures": ["cycle 5: shell_exec refused: ls is not allow-listed"],
        "tools": tools,
    }
    ctx.update(over)
    return ctx


# ---- HTTP provider ----------------------------------------------------------------------------


def test_valid_reply_and_request_body(server):
    server.script(Reply(200, {}, completion(answer())))
    p, sleeps = make_provider(server)
    d = LLMDecider(p)
    out = d.decide(context())
    assert out["error"] is None and out["rejected"] is None
    assert out["intent"]["tool"] == "kg_query" and out["intent"]["input"] == "dog"
    assert out["intent"]["action_rationale"] == "query the graph first"
    assert out["tokens_used"] == 123 and out["messages_tokens"] > 0
    assert len(server.requests) == 1 and sleeps == []
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions"
    body = json.loads(req["body"])
    assert body["model"] == "test-model"
    # the reply's schema travels (OpenAI's structured outputs by default): the tool is one offered
    schema = body["response_format"]["json_schema"]["schema"]
    assert body["response_format"]["type"] == "json_schema"
    assert schema["properties"]["action"]["properties"]["tool"]["enum"] == ["kg_query", "gap_analysis"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["max_tokens"] == 400 and body["temperature"] == 0.0 and body["seed"] == 0
    assert "Authorization" not in req["headers"]  # env var not set


def test_authorization_header_from_named_env_var(server):
    server.script(Reply(200, {}, completion(answer())))
    p, _ = make_provider(server, env={"MY_LLM_KEY": "sk-test-123"}, api_key_env="MY_LLM_KEY")
    p.complete([{"role": "user", "content": "hi"}])
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-test-123"


def test_fenced_json_reply_accepted(server):
    server.script(Reply(200, {}, completion("Here you go:\n```json\n" + answer("gap_analysis", "") + "\n```\n")))
    p, _ = make_provider(server)
    out = LLMDecider(p).decide(context())
    assert out["intent"]["tool"] == "gap_analysis" and out["intent"]["input"] == ""


def test_malformed_json_is_rejected_not_raised(server):
    server.script(Reply(200, {}, completion('{"situation_assessment": "x", "action": ')))
    p, _ = make_provider(server)
    d = LLMDecider(p)
    out = d.decide(context())
    assert out["intent"] is None and out["error"] is None
    assert out["rejected"].startswith("reply is not JSON")
    assert list(d.failures) == [f"cycle 7: intent_rejected: {out['rejected']}"]


@pytest.mark.parametrize("tool,reason", [
    ("teleport", "unknown tool 'teleport'"),
    ("shell_exec", "tool 'shell_exec' is not offered this cycle (offered: kg_query, gap_analysis)"),
])
def test_unknown_and_not_offered_tools_rejected(server, tool, reason):
    server.script(Reply(200, {}, completion(answer(tool, "ls"))))
    p, _ = make_provider(server)
    out = LLMDecider(p).decide(context())
    assert out["intent"] is None and out["rejected"].startswith(reason)


def test_429_with_retry_after_then_success(server):
    server.script(Reply(429, {"Retry-After": "3"}, {"error": {"message": "rate limited"}}),
                  Reply(200, {}, completion(answer())))
    p, sleeps = make_provider(server)
    text, tokens = p.complete([{"role": "user", "content": "hi"}])
    assert json.loads(text)["action"]["tool"] == "kg_query" and tokens == 123
    assert len(server.requests) == 2
    assert sleeps == [3.0]


def test_retry_after_is_capped(server):
    server.script(Reply(429, {"Retry-After": "120"}, b""), Reply(200, {}, completion(answer())))
    p, sleeps = make_provider(server, backoff_cap=5.0)
    p.complete([{"role": "user", "content": "hi"}])
    assert sleeps == [5.0]


def test_500_twice_then_success_with_exponential_backoff(server):
    server.script(Reply(500, {}, b"boom"), Reply(503, {}, b"busy"), Reply(200, {}, completion(answer())))
    p, sleeps = make_provider(server, backoff_base=0.5)
    text, _ = p.complete([{"role": "user", "content": "hi"}])
    assert json.loads(text)["action"]["input"] == "dog"
    assert len(server.requests) == 3
    assert sleeps == [0.5, 1.0]


def test_real_timeout_then_success(server):
    server.script(Reply(200, {}, completion(answer()), delay=1.0), Reply(200, {}, completion(answer("gap_analysis", ""))))
    p, sleeps = make_provider(server, timeout=0.3, backoff_base=0.25)
    t0 = time.monotonic()
    out = LLMDecider(p).decide(context())
    assert time.monotonic() - t0 < 0.95  # gave up on the slow reply, did not wait for it
    assert out["error"] is None and out["intent"]["tool"] == "gap_analysis"
    assert len(server.requests) == 2 and sleeps == [0.25]


def test_exhausted_retries_are_returned_not_raised(server):
    server.script(*[Reply(502, {}, {"error": {"message": "bad gateway"}})] * 3)
    p, sleeps = make_provider(server, max_retries=2, backoff_base=1.0, backoff_cap=1.5)
    d = LLMDecider(p)
    out = d.decide(context())
    assert out["intent"] is None and out["rejected"] is None
    assert "failed after 3 attempts" in out["error"] and "HTTP 502: bad gateway" in out["error"]
    assert "\n" not in out["error"]
    assert len(server.requests) == 3 and sleeps == [1.0, 1.5]
    assert d.failures[-1].startswith("cycle 7: llm_error:")
    # the next prompt shows the model its own failure
    server.script(Reply(200, {}, completion(answer())))
    d.decide(context(cycle=8))
    user = json.loads(server.requests[-1]["body"])["messages"][1]["content"]
    assert "your answer: cycle 7: llm_error:" in user


def test_non_retryable_4xx_fails_at_once(server):
    server.script(Reply(401, {}, {"error": {"message": "Incorrect API key provided"}}))
    p, sleeps = make_provider(server)
    with pytest.raises(LLMError) as e:
        p.complete([{"role": "user", "content": "hi"}])
    assert "HTTP 401: Incorrect API key provided" in e.value.message
    assert len(server.requests) == 1 and sleeps == []


def test_bad_envelope_and_missing_usage(server):
    server.script(Reply(200, {}, b"<html>proxy error</html>"), Reply(200, {}, completion("{}", total_tokens=None)))
    p, _ = make_provider(server)
    with pytest.raises(LLMError, match="not a JSON envelope"):
        p.complete([{"role": "user", "content": "x" * 400}])
    text, tokens = p.complete([{"role": "user", "content": "x" * 400}])
    assert text == "{}" and tokens == 100 + 1  # estimated: 400/4 for the prompt, 2/4 for the reply


def test_connection_refused_is_an_error_result():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    sleeps: list[float] = []
    p = OpenAICompatibleProvider(LLMConfig(f"http://127.0.0.1:{port}/v1", "m"), sleep=sleeps.append, env={})
    out = LLMDecider(p).decide(context())
    assert out["intent"] is None and "connection refused" in out["error"]
    assert f"no server at http://127.0.0.1:{port}/v1/chat/completions" in out["error"]


def test_rate_tracker_gates_provider_calls(server):
    clock = FakeClock()
    rate = RateTracker(1, 10_000_000, clock=clock)
    server.script(Reply(200, {}, completion(answer())), Reply(200, {}, completion(answer())))
    sleeps: list[float] = []

    def sleep(d: float) -> None:
        sleeps.append(d)
        clock.advance(d)

    p = OpenAICompatibleProvider(LLMConfig(server.base_url, "m"), rate, sleep=sleep, env={})
    p.complete([{"role": "user", "content": "a"}])
    clock.advance(10)
    p.complete([{"role": "user", "content": "b"}])
    assert sleeps == [50.0] and len(server.requests) == 2


def test_submit_runs_in_background(server):
    server.script(Reply(200, {}, completion(answer()), delay=0.2))
    p, _ = make_provider(server)
    t0 = time.monotonic()
    fut = LLMDecider(p).submit(context())
    assert time.monotonic() - t0 < 0.15 and not fut.done()
    assert fut.result(timeout=5)["intent"]["tool"] == "kg_query"


# ---- rate tracker -----------------------------------------------------------------------------


def test_rate_tracker_call_budget_slides():
    clock = FakeClock()
    r = RateTracker(3, 1_000_000, clock=clock)
    for _ in range(3):
        assert r.can_consume(10)
        r.record(10)
        clock.advance(5)
    # t0=1000, 1005, 1010 recorded; now 1015
    assert not r.can_consume(10)
    assert r.wait_time(10) == pytest.approx(45.0)
    clock.advance(44.9)
    assert not r.can_consume(10)
    clock.advance(0.1)  # the first call leaves the window exactly 60 s after it was made
    assert r.can_consume(10) and r.wait_time(10) == 0.0
    assert r.usage() == (2, 20)


def test_rate_tracker_token_budget():
    clock = FakeClock()
    r = RateTracker(100, 1000, clock=clock)
    r.record(600)
    clock.advance(10)
    r.record(300)
    assert r.can_consume(100) and not r.can_consume(101)
    assert r.wait_time(101) == pytest.approx(50.0)  # when the 600 leaves
    assert r.wait_time(800) == pytest.approx(60.0)  # needs both entries gone
    clock.advance(50)
    assert r.can_consume(700) and not r.can_consume(701)
    clock.advance(10)
    assert r.usage() == (0, 0)
    assert r.can_consume(5000)  # a call bigger than the whole budget runs on an empty window


# ---- structured memory -------------------------------------------------------------------------


def test_structured_memory_render_caps_bytes_and_keeps_newest():
    m = StructuredMemory("Build price oracle", "Implementation",
                         completed=[f"completed step number {i:02d}" for i in range(20)],
                         next_steps=["core logic", "tests", "docs"],
                         lessons=[f"lesson {i:02d}: escrow needs ownership transfer first" for i in range(20)])
    full = m.render(100_000)
    assert "completed step number 00" in full and "lesson 00" in full
    assert len(full.encode()) < 2000 and m.render(2000) == full
    for cap in (1500, 600, 300):
        text = m.render(cap)
        assert len(text.encode("utf-8")) <= cap
        assert "Build price oracle" in text and "Implementation" in text
        assert "completed step number 19" in text and "lesson 19" in text  # newest kept
        assert "completed step number 00" not in text and "lesson 00" not in text  # oldest dropped
        assert "older omitted" in text
    assert "core logic" in m.render(300)  # the most immediate next step stays
    tiny = m.render(40)
    assert len(tiny.encode()) <= 40
    m2 = StructuredMemory("ü" * 300)
    assert len(m2.render(101).encode()) <= 101


def test_structured_memory_roundtrip_update_and_caps():
    m = StructuredMemory(max_items=3)
    m.update(current_goal="g", stage="s", next_steps=["a", "b"])
    m.add_completed("a")
    for i in range(5):
        m.add_lesson(f"l{i}")
    m.add_lesson("l4")  # no duplicate
    assert m.to_dict() == {"current_goal": "g", "stage": "s", "completed": ["a"], "next_steps": ["b"],
                           "lessons": ["l2", "l3", "l4"]}
    assert StructuredMemory.from_dict(m.to_dict()).to_dict() == {**m.to_dict(), "lessons": ["l2", "l3", "l4"]}
    nested = StructuredMemory.from_dict({"current_goal": "Build price oracle",
                                         "progress": {"stage": "Implementation", "completed": ["interface design"],
                                                      "next_steps": ["core logic", "tests"]},
                                         "lessons": ["escrow needs ownership transfer first"]})
    assert nested.stage == "Implementation" and nested.next_steps == ["core logic", "tests"]
    with pytest.raises(InputError) as e:
        StructuredMemory.from_dict({"lessons": "not a list"})
    assert e.value.field == "working_memory.lessons"


# ---- prompt, parsing, scripted provider ----------------------------------------------------------


def test_prompt_carries_goals_wm_failures_memory_and_tools():
    mem = StructuredMemory("find what a dog is", "querying", completed=["asked kg about dog"],
                           next_steps=["compare with cat"], lessons=["shell is disabled here"])
    msgs = build_prompt(context(), mem)
    system, user = msgs[0]["content"], msgs[1]["content"]
    for name in TOOL_NAMES:
        assert name in system
    assert "sage" in system and "triples from/to a symbol" in system and "Input: symbol label" in system
    assert '"situation_assessment"' in system and '"action"' in system
    for text in ("find what a dog is", "learn about cats", "g2", "suspended", "priority 0.90",
                 "Inference: 3 triples about dog", "dog is-a mammal",
                 "shell_exec refused: ls is not allow-listed",
                 "compare with cat", "shell is disabled here", "stage: querying",
                 "offered: kg_query, gap_analysis", '- kg_query: offered; input: "dog"',
                 "- shell_exec: not offered: shell_exec gate is off", "Cycle 7."):
        assert text in user, text


def test_prompt_is_bounded():
    ctx = context(wm=[f"entry {i} " + "x" * 1000 for i in range(50)], last_result="r" * 10_000,
                  failures=[f"failure {i}" for i in range(30)])
    user = build_prompt(ctx, StructuredMemory(lessons=["l" * 250] * 20))[1]["content"]
    assert "entry 49" in user and "entry 39" not in user
    assert "failure 29" in user and "failure 24" not in user
    assert len(user) < 10_000


def test_parse_reply_validation():
    offered = {"kg_query", "reason"}
    ok = parse_reply(answer("reason", "dog, cat"), offered)
    assert isinstance(ok, Intent) and ok.tool == "reason" and ok.raw == answer("reason", "dog, cat")
    assert parse_reply("```\n" + answer() + "\n```", offered).tool == "kg_query"
    cases = {
        "": "empty reply",
        "not json": "reply is not JSON",
        "[1, 2]": "reply is a JSON list",
        json.dumps({"action_rationale": "r", "action": {"tool": "kg_query", "input": ""}}): "missing key 'situation_assessment'",
        json.dumps({"situation_assessment": 1, "action_rationale": "r", "action": {}}): "'situation_assessment' must be a string",
        json.dumps({"situation_assessment": "s", "action_rationale": "r", "action": "kg_query"}): "'action' must be an object",
        json.dumps({"situation_assessment": "s", "action_rationale": "r", "action": {"tool": "kg_query"}}): "missing key 'action.input'",
        json.dumps({"situation_assessment": "s", "action_rationale": "r", "action": {"tool": 3, "input": ""}}): "'action.tool' must be a string",
        answer("kg_query", None): "'action.input' must be a string",
        answer("rm_rf", "/"): "unknown tool 'rm_rf'",
        answer("gap_analysis", ""): "tool 'gap_analysis' is not offered",
        "```json\n{oops}\n```": "reply is not JSON (inside the ``` fence",
    }
    for text, reason in cases.items():
        with pytest.raises(IntentRejected) as e:
            parse_reply(text, offered)
        assert e.value.reason.startswith(reason), (text, e.value.reason)


def test_scripted_provider_for_tools_picks_an_offered_tool():
    p = ScriptedProvider.for_tools()
    d = LLMDecider(p)
    out = d.decide(context(offered=("gap_analysis", "similarity_search")))
    assert out["intent"]["tool"] == "gap_analysis" and out["intent"]["input"] == "dog, cat"
    out = d.decide(context(offered=("shell_exec", "kg_query")))
    assert out["intent"]["tool"] == "kg_query" and out["intent"]["input"] == "dog"
    # custom order, rotation visits the next offered tool each call, deterministically
    r = LLMDecider(ScriptedProvider.for_tools(("reason", "kg_query", "gap_analysis"), rotate=True))
    ctx = context(offered=("kg_query", "gap_analysis", "reason"))
    assert [r.decide(ctx)["intent"]["tool"] for _ in range(4)] == ["reason", "kg_query", "gap_analysis", "reason"]
    assert set(DEFAULT_PREFERENCE) == set(TOOL_NAMES)


def test_scripted_replies_cycle_and_decider_tracks_failures():
    p = ScriptedProvider(["nope", answer()])
    d = LLMDecider(p)
    results = [d.decide(context(cycle=c)) for c in range(1, 8)]
    assert [r["rejected"] is not None for r in results] == [True, False, True, False, True, False, True]
    assert len(d.failures) == 4 and d.failures[0].startswith("cycle 1: intent_rejected")
    for c in (9, 11, 13, 15):
        d.decide(context(cycle=c))  # rejections at 11 and 15; the history keeps the last 5
    assert [f.split(":")[0] for f in d.failures] == ["cycle 3", "cycle 5", "cycle 7", "cycle 11", "cycle 15"]
    assert d.memory.current_goal == "find what a dog is"


def test_provider_exception_is_returned():
    class Broken:
        def complete(self, messages, schema=None):
            raise RuntimeError("kaput")

    out = LLMDecider(Broken()).decide(context())
    assert out["error"] == "RuntimeError: kaput" and out["intent"] is None


# ---- config -------------------------------------------------------------------------------------


def test_config_from_dict():
    c = LLMConfig.from_dict({"base_url": "http://localhost:11434/v1", "model": "llama3", "api_key_env": "OLLAMA_KEY",
                             "timeout": 5, "max_retries": 0, "calls_per_minute": 2, "temperature": 0.2})
    assert c.endpoint == "http://localhost:11434/v1/chat/completions"
    assert c.timeout == 5.0 and c.max_retries == 0 and c.tokens_per_minute == 40000
    bad = [
        ({"model": "m"}, "llm.base_url"),
        ({"base_url": "ftp://x", "model": "m"}, "llm.base_url"),
        ({"base_url": "http://x", "model": ""}, "llm.model"),
        ({"base_url": "http://x", "model": "m", "api_key_env": "sk-abc def"}, "llm.api_key_env"),
        ({"base_url": "http://x", "model": "m", "timeout": 0}, "llm.timeout"),
        ({"base_url": "http://x", "model": "m", "max_retries": -1}, "llm.max_retries"),
        ({"base_url": "http://x", "model": "m", "calls_per_minute": True}, "llm.calls_per_minute"),
        ({"base_url": "http://x", "model": "m", "temperature": "hot"}, "llm.temperature"),
        ({"base_url": "http://x", "model": "m", "modle": "m"}, "llm.modle"),
    ]
    for d, fld in bad:
        with pytest.raises(InputError) as e:
            LLMConfig.from_dict(d, file="config.toml")
        assert e.value.field == fld and e.value.file == "config.toml", (d, e.value)


def test_a_scripted_model_keeps_only_its_last_calls():
    """A long scripted world asks thousands of times: the provider keeps the last KEPT
    prompts (what a test inspects), not every one."""
    p = ScriptedProvider(["a", "b"])
    for i in range(ScriptedProvider.KEPT * 3):
        assert p.complete([{"role": "user", "content": f"q{i}"}])[0] == "ab"[i % 2]
    assert len(p.calls) == ScriptedProvider.KEPT == len(p.schemas)
    assert p.calls[-1][0]["content"] == f"q{ScriptedProvider.KEPT * 3 - 1}"
