"""`sessions export --format otlp|otlp-json`: a stored run as OpenTelemetry spans, sent to a real
OTLP/HTTP receiver (started here on 127.0.0.1, decoding the protobuf it gets) and written as
OTLP JSON; the same ids and bytes every time."""

from __future__ import annotations

import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from akh_tui.engine.store.trace import read_trace

pytest.importorskip("opentelemetry.proto")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


class Receiver:
    """A minimal OTLP/HTTP traces endpoint: POST /v1/traces, protobuf in, spans kept."""

    def __init__(self) -> None:
        self.requests: list[ExportTraceServiceRequest] = []
        self.headers: list = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                outer.requests.append(req)
                outer.headers.append(self.headers)  # case-insensitive lookups
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def spans(self) -> list:
        return [s for r in self.requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


@pytest.fixture
def receiver():
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()
    r.thread.join(timeout=5)


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        v = kv.value
        out[kv.key] = getattr(v, v.WhichOneof("value")) if v.WhichOneof("value") != "array_value" else [
            getattr(x, x.WhichOneof("value")) for x in v.array_value.values]
    return out


def test_every_cycle_arrives_at_an_otlp_receiver_with_its_attributes(cli, tmp_path, receiver):
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "6", "--trace", "run.jsonl")
    records = read_trace(tmp_path / "run.jsonl").cycles
    proc = cli("sessions", "export", "1", "--format", "otlp", "--endpoint", receiver.url,
               "--header", "Authorization=Basic dGVzdDp0ZXN0")
    assert "exported 6 cycle(s)" in proc.stderr
    assert receiver.headers[0]["Authorization"] == "Basic dGVzdDp0ZXN0"
    spans = receiver.spans()
    assert len({s.trace_id for s in spans}) == 1  # one trace per run
    by_id = {s.span_id: s for s in spans}
    root = [s for s in spans if not s.parent_span_id]
    assert len(root) == 1 and root[0].name == "invoke_agent shadow"
    assert _attrs(root[0])["gen_ai.operation.name"] == "invoke_agent"
    cycles = sorted((s for s in spans if s.name.startswith("cycle ")), key=lambda s: _attrs(s)["akh.cycle"])
    assert [_attrs(s)["akh.cycle"] for s in cycles] == [r["cycle"] for r in records] == [1, 2, 3, 4, 5, 6]
    for span, rec in zip(cycles, records):
        a = _attrs(span)
        assert span.parent_span_id == root[0].span_id
        assert a["akh.tool"] == rec["decide"]["tool"] and a["akh.breakdown"] == rec["decide"]["breakdown"]
        chosen = next(c for c in rec["decide"]["candidates"] if c["tool"] == rec["decide"]["tool"])
        assert a["akh.score"] == pytest.approx(chosen["score"])
        for f in ("base", "recency", "novelty", "episodic", "pressure", "archetype", "plan"):
            assert a[f"akh.factor.{f}"] == pytest.approx(chosen[f])
        assert a["akh.vetoed"] == rec["act"]["vetoed"] and a["akh.coverage"] == pytest.approx(rec["act"]["coverage"])
        assert a["akh.goal.id"] == rec["goal"]["id"] and a["akh.bias"] == pytest.approx(rec["act"]["bias"])
        children = [s for s in spans if s.parent_span_id == span.span_id]
        assert [c.name for c in children] == ["observe", "orient", "decide", "act", "learn"]
        act = children[3]
        (tool,) = [s for s in spans if s.parent_span_id == act.span_id]
        t = _attrs(tool)
        assert tool.name == f"execute_tool {rec['decide']['tool']}"
        assert t["gen_ai.operation.name"] == "execute_tool" and t["gen_ai.tool.name"] == rec["decide"]["tool"]
        assert json.loads(t["gen_ai.tool.call.arguments"]) == {"input": rec["decide"]["input"]}
        assert t["gen_ai.tool.call.result"] == rec["act"]["output"][:4096]
        # times from the cycle number: cycle c is the c-th second after the start
        assert span.start_time_unix_nano == 1_735_689_600_000_000_000 + (rec["cycle"] - 1) * 1_000_000_000
        assert all(by_id[c.span_id].start_time_unix_nano >= span.start_time_unix_nano for c in children)
    vetoed = [s for s in cycles if _attrs(s)["akh.vetoed"]]
    assert [_attrs(s)["akh.cycle"] for s in vetoed] == [r["cycle"] for r in records if r["act"]["vetoed"]] == [4]
    assert _attrs(vetoed[0])["akh.veto"] and vetoed[0].status.code == 2  # STATUS_CODE_ERROR
    # exporting again sends the very same ids
    first = sorted((s.trace_id, s.span_id) for s in spans)
    receiver.requests.clear()
    cli("sessions", "export", "1", "--format", "otlp", "--endpoint", receiver.url)
    assert sorted((s.trace_id, s.span_id) for s in receiver.spans()) == first


def test_otlp_json_is_the_same_bytes_twice_and_names_its_ids_in_hex(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "5")
    cli("agent", "fork", "--at", "2", "--name", "bold", "--set", "explorer=0.9")
    cli("agent", "resume", "--max-cycles", "2")
    cli("sessions", "export", "1", "--format", "otlp-json", "-o", "a.json")
    cli("sessions", "export", "1", "--format", "otlp-json", "-o", "b.json")
    cli("sessions", "export", "1", "--branch", "bold", "--format", "otlp-json", "-o", "bold.json")
    a = (tmp_path / "a.json").read_bytes()
    assert a == (tmp_path / "b.json").read_bytes()
    doc = json.loads(a)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert len(spans) == 1 + 5 * 7  # root, and per cycle: the cycle, five phases, the tool call
    assert all(len(s["traceId"]) == 32 and len(s["spanId"]) == 16 for s in spans)
    bold = json.loads((tmp_path / "bold.json").read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert bold[0]["traceId"] != spans[0]["traceId"]  # another branch, another trace
    assert len([s for s in bold if s["name"].startswith("cycle ")]) == 4


def test_export_refuses_what_it_cannot_do(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "2")
    for argv, words in [
        (("--format", "otlp"), "--endpoint"),
        (("--format", "otlp", "--endpoint", "ftp://x"), "must start with http:// or https://"),
        # malformed: a refusal naming the field, never a ValueError's traceback
        (("--format", "otlp", "--endpoint", "http://[::1/"), "field '--endpoint': 'http://[::1/' is not a URL"),
        (("--format", "otlp", "--endpoint", "http://127.0.0.1:99999/v1/traces"), "is not a URL"),
        (("--format", "otlp", "--endpoint", "http:///v1/traces"), "names no host"),
        (("--format", "otlp", "--endpoint", "http://127.0.0.1:9/v1/traces", "--header", "novalue"), "KEY=VALUE"),
        (("--format", "otlp-json", "--start", "yesterday"), "ISO 8601"),
        (("--endpoint", "http://127.0.0.1:9/v1/traces"), "go with --format"),
        (("--format", "otlp", "--endpoint", "http://127.0.0.1:9/v1/traces", "-o", "x.json"), "-o goes with"),
    ]:
        proc = cli("sessions", "export", "1", *argv, check_rc=2)
        assert words in proc.stderr, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr


# ---- issue 23: what an export sends and shows -------------------------------------------------

def test_only_the_headers_the_user_passed_reach_the_endpoint(cli, tmp_path, receiver, monkeypatch):
    # credentials for the user's usual collector, in the environment the SDK exporter reads
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-leak=env-secret-4711,authorization=Bearer envtoken4711abcd")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-leak-traces=env-secret-4712")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "2")
    cli("sessions", "export", "1", "--format", "otlp", "--endpoint", receiver.url, "--header", "X-Mine=my-value-1")
    assert receiver.requests
    for got in receiver.headers:
        names = {k.lower() for k in got.keys()}
        assert got["X-Mine"] == "my-value-1"
        assert names <= {"host", "user-agent", "accept-encoding", "accept", "connection", "content-length",
                         "content-type", "x-mine"}, names
        assert "env-secret" not in str(got) and "envtoken" not in str(got)
    # and none at all when none is passed
    receiver.headers.clear()
    cli("sessions", "export", "1", "--format", "otlp", "--endpoint", receiver.url)
    assert all("authorization" not in {k.lower() for k in got.keys()} and "x-leak" not in str(got).lower()
               for got in receiver.headers)


def _scenario_values(doc: dict) -> list[str]:
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return [a["value"]["stringValue"] for s in spans for a in s["attributes"] if a["key"] == "akh.scenario"]


def test_spans_name_the_scenario_without_an_absolute_path(cli, tmp_path):
    bundled = Path(__file__).resolve().parents[3] / "akh_tui" / "data"
    elsewhere = tmp_path / "mine" / "secret-project"
    elsewhere.mkdir(parents=True)
    (elsewhere / "mine.toml").write_text((bundled / "scenarios" / "shadow.toml").read_text()
                                         .replace("../kg/", f"{bundled}/kg/").replace("../rules/", f"{bundled}/rules/"))
    inside = tmp_path / "data" / "scenarios"
    inside.mkdir(parents=True)
    (inside / "ours.toml").write_text((elsewhere / "mine.toml").read_text())
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "1")
    cli("agent", "run", "--scenario", str(elsewhere / "mine.toml"), "--max-cycles", "1")
    cli("agent", "run", "--scenario", str(inside / "ours.toml"), "--max-cycles", "1")
    for run, want in (("1", "bundled:shadow"), ("2", "mine.toml"), ("3", "scenarios/ours.toml")):
        text = cli("sessions", "export", run, "--format", "otlp-json").stdout
        assert _scenario_values(json.loads(text)) == [want], run
        assert str(tmp_path) not in text and str(bundled) not in text
        cli("sessions", "report", run, "-o", f"r{run}.html")
        cli("sessions", "report", run, "-o", f"r{run}.md")
        for ext in ("html", "md"):
            shown = (tmp_path / f"r{run}.{ext}").read_text()
            assert want in shown and str(tmp_path) not in shown and str(bundled) not in shown


def test_an_endpoints_password_is_never_printed(cli, tmp_path, receiver):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "1")
    port = receiver.server.server_address[1]
    # a path the receiver refuses (404): the export fails and says so
    proc = cli("sessions", "export", "1", "--format", "otlp", "--endpoint",
               f"http://alice:hunter2-pw@127.0.0.1:{port}/refused", check_rc=1)
    assert "did not accept the spans" in proc.stderr and "127.0.0.1" in proc.stderr
    assert "hunter2-pw" not in proc.stderr + proc.stdout
    # accepted: the line saying where it went masks it too
    proc = cli("sessions", "export", "1", "--format", "otlp", "--endpoint", f"http://alice:hunter2-pw@127.0.0.1:{port}/v1/traces")
    assert "exported 1 cycle(s)" in proc.stderr and "hunter2-pw" not in proc.stderr + proc.stdout
    # malformed, with a password in it: refused (exit 2) without repeating it
    proc = cli("sessions", "export", "1", "--format", "otlp", "--endpoint", "http://alice:hunter2-pw@[::1/", check_rc=2)
    assert "field '--endpoint'" in proc.stderr and "hunter2-pw" not in proc.stderr + proc.stdout
    proc = cli("sessions", "export", "1", "--format", "otlp", "--endpoint", receiver.url,
               "--header", "bad header without equals", check_rc=2)
    assert "KEY=VALUE" in proc.stderr and "Traceback" not in proc.stderr


def test_a_header_value_quoted_in_the_run_is_masked_in_the_spans(cli, tmp_path, receiver):
    token = "tok-4711-abcdef-secret"
    cli("agent", "run", "--scenario", "zoo", "--goals", f"Find mammals with {token}", "--max-cycles", "2")
    cli("sessions", "export", "1", "--format", "otlp", "--endpoint", receiver.url, "--header", f"X-Api-Token={token}")
    assert receiver.headers[0]["X-Api-Token"] == token  # sent where the user said
    sent = b"".join(r.SerializeToString() for r in receiver.requests)
    assert b"Find mammals with [redacted]" in sent and token.encode() not in sent
