"""`world export TRACE --format otlp|otlp-json`: a world run as OpenTelemetry spans (one trace,
a span per round and per agent step), sent to an OTLP/HTTP receiver started here on 127.0.0.1
(decoding the protobuf it gets) and written as OTLP JSON; streamed, the same bytes every time."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("opentelemetry.proto")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from akh_tui.engine.export.otel_world import stream_world_spans  # noqa: E402

START = 1_735_689_600_000_000_000


class Collector:
    """An OTLP/HTTP traces endpoint: POST /v1/traces, protobuf in, spans and headers kept."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.headers: list[Any] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                outer.requests.append(req)
                outer.headers.append(self.headers)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def spans(self) -> list:
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    c.thread.start()
    yield c
    c.server.shutdown()
    c.server.server_close()
    c.thread.join(timeout=5)


def _attrs(span: Any) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        which = v.WhichOneof("value")
        out[kv.key] = [getattr(x, x.WhichOneof("value")) for x in v.array_value.values] if which == "array_value" \
            else getattr(v, which)
    return out


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_world_arrives_as_one_trace_with_a_span_per_round_and_per_agent_step(cli, tmp_path, collector):
    cli("world", "run", "market", "--rounds", "10", "--trace", "m.jsonl")
    recs = _records(tmp_path / "m.jsonl")
    proc = cli("world", "export", "m.jsonl", "--format", "otlp", "--endpoint", collector.url,
               "--header", "Authorization=Basic dGVzdDp0ZXN0")
    steps = [r for r in recs if r["type"] in ("cycle", "rate_limited")]
    assert f"exported {len(steps)} step(s) of world market" in proc.stderr
    assert collector.headers[0]["Authorization"] == "Basic dGVzdDp0ZXN0"
    spans = collector.spans()
    assert len({s.trace_id for s in spans}) == 1  # one trace per world run
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "world market" and _attrs(root)["akh.rounds"] == 10
    rounds = {_attrs(s)["akh.round"]: s for s in spans if s.name.startswith("round ")}
    assert sorted(rounds) == list(range(1, 11))
    assert all(s.parent_span_id == root.span_id for s in rounds.values())
    # who did what, in which order: a step span per turn, in its round, named by the agent
    got = [s for s in spans if s.name.startswith("invoke_agent ")]
    assert [(_attrs(s)["akh.round"], _attrs(s)["gen_ai.agent.id"]) for s in got] == \
        [(r["round"], r["agent"]) for r in steps]
    balances = {"bold": 50, "cautious": 50, "world": 0, "escrow": 0}
    by_step = {(_attrs(s)["akh.round"], _attrs(s)["akh.agent"]): s for s in got}
    pending: Any = None
    for r in recs + [{"type": "end"}]:
        if r["type"] in ("cycle", "rate_limited", "mint", "round", "end") and pending is not None:
            a = _attrs(by_step[(pending["round"], pending["agent"])])
            assert a["akh.balance"] == balances[pending["agent"]]  # after the step's ledger entries
            pending = None
        if r["type"] == "ledger":
            if r["from"] != "mint":
                balances[r["from"]] -= r["amount"]
            balances[r["to"]] += r["amount"]
        if r["type"] in ("cycle", "rate_limited"):
            pending = r
    assert _attrs(root)["akh.balances"] == [f"{k} {v}" for k, v in balances.items()]
    for rec in (r for r in steps if r["type"] == "cycle"):
        span = by_step[(rec["round"], rec["agent"])]
        a = _attrs(span)
        assert span.name == f"invoke_agent {rec['agent']}" and a["gen_ai.operation.name"] == "invoke_agent"
        assert a["gen_ai.agent.name"] == rec["agent"] and span.parent_span_id == rounds[rec["round"]].span_id
        assert a["akh.action"] == rec["decide"]["tool"] and a["akh.result"] == rec["act"]["progress"]
        # the virtual clock gives the times: a step lasts step_s (1 s in the market)
        assert span.start_time_unix_nano == START + round(rec["clock"] * 1000) * 1_000_000
        assert span.end_time_unix_nano - span.start_time_unix_nano == 1_000_000_000
        (tool,) = [s for s in spans if s.parent_span_id == span.span_id]
        assert tool.name == f"execute_tool {rec['decide']['tool']}"
        assert _attrs(tool)["gen_ai.tool.name"] == rec["decide"]["tool"]
    mints = [r for r in recs if r["type"] == "mint"]
    mint_spans = [s for s in spans if s.name == "mint"]
    assert [_attrs(s)["akh.round"] for s in mint_spans] == [m["round"] for m in mints] == [5, 10]
    for s, m in zip(mint_spans, mints):
        assert s.parent_span_id == rounds[m["round"]].span_id
        assert _attrs(s).get("akh.mint.winner") == m["agent"] and _attrs(s)["akh.mint.minted"] == m["minted"]
    # a step's world events ride on its span: a read_artifact step carries its ledger entry
    read = next(r for r in steps if r["type"] == "cycle" and r["decide"]["tool"] == "read_artifact"
                and r["act"]["success"] and r["decide"]["input"] and "ledger" in r["decide"]["input"]
                and not r["decide"]["input"].startswith(r["agent"]))
    assert "ledger" in [e.name for e in by_step[(read["round"], read["agent"])].events]
    # exporting again sends the very same ids
    first = sorted((s.trace_id, s.span_id) for s in spans)
    collector.requests.clear()
    cli("world", "export", "m.jsonl", "--format", "otlp", "--endpoint", collector.url)
    assert sorted((s.trace_id, s.span_id) for s in collector.spans()) == first


def test_otlp_json_of_a_world_is_the_same_bytes_twice(cli, tmp_path):
    cli("world", "run", "harbour", "--rounds", "4", "--trace", "h.jsonl")
    cli("world", "export", "h.jsonl", "-o", "a.json")
    cli("world", "export", "h.jsonl", "-o", "b.json", "--start", "2025-01-01T00:00:00Z")
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes()
    spans = json.loads(a)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    names = [s["name"] for s in spans]
    assert names.count("world harbour") == 1 and [n for n in names if n.startswith("round ")] == \
        [f"round {r}" for r in range(1, 5)]
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)


def test_the_spans_are_streamed_while_the_records_are_read(tmp_path):
    """A step's spans leave before the next records are read: memory does not grow with the world."""
    from akh_tui.engine.world import World, load_world

    recs: list[dict] = []
    World(load_world("market"), sink=recs.append).run(10)
    read = [0]

    def items() -> Iterator[dict]:
        for r in recs:
            read[0] += 1
            yield r

    spans = stream_world_spans(items())
    first = next(spans)
    assert first.name.startswith("invoke_agent ") and read[0] < 10  # the first step, not the whole world
    rest = list(spans)
    assert read[0] == len(recs) and rest[-1].name == "world market"


def test_what_world_export_refuses(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "2", "--trace", "single.jsonl")
    proc = cli("world", "export", "single.jsonl", check_rc=2)
    assert "not a world trace" in proc.stderr and "single.jsonl:1:" in proc.stderr
    cli("world", "run", "market", "--rounds", "2", "--trace", "m.jsonl")
    lines = (tmp_path / "m.jsonl").read_text().splitlines()
    newer = [lines[0].replace('"v":1', '"v":2', 1), *lines[1:]]
    (tmp_path / "newer.jsonl").write_text("\n".join(newer) + "\n")
    proc = cli("world", "export", "newer.jsonl", "-o", "x.json", check_rc=2)
    assert "record version 2 is newer" in proc.stderr and not (tmp_path / "x.json").exists()
    proc = cli("world", "export", "m.jsonl", "--format", "otlp", check_rc=2)
    assert "--endpoint" in proc.stderr
    bad = [*lines[:3], "{not json", *lines[3:]]
    (tmp_path / "bad.jsonl").write_text("\n".join(bad) + "\n")
    proc = cli("world", "export", "bad.jsonl", "-o", "y.json", check_rc=2)
    assert "bad.jsonl:4:" in proc.stderr and not (tmp_path / "y.json").exists()


def test_a_step_rejected_at_the_gate_says_who_rejected_it(cli, tmp_path):
    """A person's (or a script's, or a seat's) reject at the world gate is not the shadow's veto:
    the span's status names who rejected it."""
    cli("world", "run", "market", "--rounds", "2", "--auto-reject", "bold", "--trace", "m.jsonl")
    cli("world", "export", "m.jsonl", "-o", "m.json")
    spans = json.loads((tmp_path / "m.json").read_bytes())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    bold = [s for s in spans if s["name"] == "invoke_agent bold"]
    assert bold and all(s["status"].get("message") == "rejected at the gate by the auto-answer" for s in bold)
    assert not any("vetoed by user" in json.dumps(s) for s in spans)
