"""A stored run as OpenTelemetry spans: what observability tools (Arize Phoenix, Langfuse, Jaeger,
any OTLP collector) show for the agent.

One trace per exported branch of a run, rooted in an `invoke_agent` span (GenAI semantic
conventions); under it a span per cycle, under each cycle a span per phase (observe, orient,
decide, act, learn) and, under act, the tool call as an `execute_tool` span carrying
`gen_ai.tool.name` and the call's arguments and result. Our own attributes are under `akh.*`:
the score and every factor of the chosen tool, the breakdown string, veto, bias, coverage and
the focus goal.

Deterministic, like the trace it comes from: trace and span ids are hashes of (scenario, seed,
run, branch, cycle, phase), so exporting twice gives the same ids (a collector de-duplicates
or overwrites instead of growing), and timestamps are derived from the cycle number from a
fixed start (each cycle one second, each phase a fifth of it), never the wall clock.

The SDK and exporter are imported lazily (only `sessions export --format otlp…` needs them),
and the spans are built as ReadableSpans with explicit contexts rather than through a
tracer, which would take ids from a random generator and times from the clock.

A run is streamed, never held: the trace items are consumed as an iterator, the spans come
out a cycle at a time and are encoded, sent or written BATCH at a time, so memory does not
grow with the run's length (a 200,000-cycle run once took 5.4 GB here). What the root span
says about the whole run (its end, the number of cycles) comes from the store's index
beforehand (`Extent`). Every attribute string passes through `redact`, and nothing the
exporter would read from OTEL_* environment variables reaches an endpoint the user named.
"""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import islice
from typing import IO, Any, Iterable, Iterator, NamedTuple

from ... import __version__
from ..redaction import redact
from ..store.trace import records_with_events

# 2025-01-01T00:00:00Z: where cycle 1 starts unless --start says otherwise
DEFAULT_START_NS = 1_735_689_600 * 1_000_000_000
CYCLE_NS = 1_000_000_000
PHASES = ("observe", "orient", "decide", "act", "learn")
PHASE_NS = CYCLE_NS // len(PHASES)
FACTORS = ("base", "recency", "novelty", "episodic", "pressure", "archetype", "plan")
MAX_TEXT = 4096  # attribute strings past this are cut (backends cap attribute sizes too)
BATCH = 512  # spans per OTLP request: far below the exporter's request-size cap


def parse_start(text: str | None) -> int:
    """--start (ISO 8601; UTC when no offset is given) in Unix nanoseconds."""
    if text is None:
        return DEFAULT_START_NS
    from ..errors import InputError

    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"not an ISO 8601 time: {text!r} (e.g. 2026-01-31T09:00:00Z)", field="--start") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    # integer arithmetic: a float timestamp would round the nanoseconds differently per platform
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    if ns < 0:
        raise InputError(f"must not be before 1970: {text!r}", field="--start")
    return ns


def _id(key: str, nbytes: int) -> int:
    """A non-zero id from a key (sha256: the same on every machine and run, unlike hash())."""
    v = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:nbytes], "big")
    return v or 1


class Extent(NamedTuple):
    """What the root span says of the whole branch before its first cycle is read: the first
    and last cycle recorded and how many records there are (SessionStore.cycle_extent)."""

    first: int
    last: int
    cycles: int


def check_endpoint(text: str) -> str:
    """--endpoint as given, when it is an http(s) URL with a host: a malformed one is an
    InputError naming the field (its userinfo never repeated), not a ValueError."""
    from ..urls import check_url

    check_url(text, "--endpoint")
    return text


def _text(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    s = redact(s)  # every string a collector keeps: goal text, tool output, persona
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT] + "…"


def _attrs(pairs: dict[str, Any]) -> dict[str, Any]:
    """OTel attribute values are str/bool/int/float or lists of one of them: None is dropped,
    anything else becomes JSON text."""
    out: dict[str, Any] = {}
    for k, v in pairs.items():
        if v is None:
            continue
        if isinstance(v, (bool, int, float)):
            out[k] = v
        elif isinstance(v, str):
            out[k] = _text(v)
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, str) for x in v):
            out[k] = [_text(x) for x in v]
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            out[k] = list(v)
        else:
            out[k] = _text(v)
    return out


def chosen_candidate(decide: dict) -> dict:
    """The scoring row of the tool the cycle chose (empty when the decider left none)."""
    for c in decide.get("candidates") or []:
        if c.get("tool") == decide.get("tool") and c.get("offered", True):
            return c
    return {}


def cycle_attributes(rec: dict) -> dict[str, Any]:
    """The `akh.*` attributes of one cycle record: score, factors, breakdown, veto, bias,
    coverage, goal, progress."""
    decide, act = rec.get("decide") or {}, rec.get("act") or {}
    goal = rec.get("goal") or {}
    cand = chosen_candidate(decide)
    out: dict[str, Any] = {
        "akh.cycle": rec.get("cycle"),
        "akh.goal.id": goal.get("id"),
        "akh.goal.description": goal.get("description"),
        "akh.tool": decide.get("tool"),
        "akh.input": decide.get("input"),
        "akh.breakdown": decide.get("breakdown"),
        "akh.score": cand.get("score"),
    }
    for f in FACTORS:
        out[f"akh.factor.{f}"] = cand.get(f)
    out |= {
        "akh.vetoed": bool(act.get("vetoed")),
        "akh.veto": act.get("veto"),
        "akh.bias": act.get("bias"),
        "akh.bias_patterns": act.get("bias_patterns") or None,
        "akh.success": act.get("success"),
        "akh.progress": act.get("progress"),
        "akh.coverage": act.get("coverage"),
        "akh.missing": act.get("missing") or None,
        "akh.plan_step": decide.get("plan_step"),
    }
    return _attrs(out)


class _Builder:
    """Collects ReadableSpans of one trace with explicit, derived contexts; the caller takes
    them (`take`) a cycle at a time."""

    def __init__(self, key: str, resource, scope) -> None:
        from opentelemetry.trace import SpanContext, TraceFlags

        self.key = key
        self.trace_id = _id(f"trace|{key}", 16)
        self.resource, self.scope = resource, scope
        self._ctx = lambda sid: SpanContext(self.trace_id, sid, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        self.spans: list = []

    def span(self, path: str, name: str, parent, start: int, end: int, attributes: dict, *,
             kind=None, error: str | None = None, events: Iterable[tuple[str, int, dict]] = ()):
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.trace import SpanKind, Status, StatusCode

        ctx = self._ctx(_id(f"span|{self.key}|{path}", 8))
        status = Status(StatusCode.ERROR, redact(error)) if error else Status(StatusCode.UNSET)
        sp = ReadableSpan(
            redact(name), context=ctx, parent=parent, resource=self.resource, attributes=_attrs(attributes),
            events=[Event(n, _attrs(a), timestamp=t) for n, t, a in events],
            kind=kind if kind is not None else SpanKind.INTERNAL, status=status,
            start_time=start, end_time=end, instrumentation_scope=self.scope,
        )
        self.spans.append(sp)
        return ctx

    def take(self) -> list:
        """The spans built since the last call, parents first."""
        out, self.spans = self.spans, []
        return out


def _event_attrs(ev: dict) -> dict[str, Any]:
    return {f"akh.{k}": v for k, v in ev.items() if k not in ("v",)}


def build_spans(items: Iterable[dict], meta: dict, run: int, branch: str, start_ns: int = DEFAULT_START_NS) -> list:
    """All the spans of a branch's trace items held in memory (a short run, a test); a stored
    branch is streamed with `stream_spans` instead."""
    items = list(items)
    cycles = [int(it["cycle"]) for it in items if it.get("type") == "cycle"]
    extent = Extent(cycles[0], cycles[-1], len(cycles)) if cycles else Extent(0, 0, 0)
    return list(stream_spans(items, meta, run, branch, extent, start_ns))


def stream_spans(items: Iterable[dict], meta: dict, run: int, branch: str, extent: Extent,
                 start_ns: int = DEFAULT_START_NS) -> Iterator:
    """The spans of a branch's trace items (records and events, in trace order), each parent
    before its children (the root `invoke_agent` span first), a cycle's spans at a time.
    `extent` is the branch's (SessionStore.cycle_extent); meta["scenario"] is shown as given
    (paths.shown_scenario makes it fit to leave the machine)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanKind

    from ..tools.builtins import SPEC_BY_NAME

    name = redact(meta.get("name") or "akh-tui")
    seed = meta.get("seed")
    key = f"{name}|{seed}|run {run}|{redact(branch)}"
    # Resource(), not Resource.create(): create() adds a random service.instance.id and reads
    # the environment, and the same run must export the same bytes anywhere
    resource = Resource({"service.name": "akh-tui", "service.version": __version__, "service.instance.id": key,
                         "telemetry.sdk.language": "python", "telemetry.sdk.name": "opentelemetry",
                         "akh.scenario": name, "akh.seed": seed if seed is not None else -1})
    b = _Builder(key, resource, InstrumentationScope("akh_tui.engine.otel", __version__))
    pairs = records_with_events(items)
    _, leading = next(pairs)

    def t0(cycle: int) -> int:
        return start_ns + (cycle - 1) * CYCLE_NS

    first = extent.first if extent.cycles else 1
    last = extent.last if extent.cycles else 1
    psyche = meta.get("psyche") or {}
    root_start, root_end = t0(first), t0(last) + CYCLE_NS
    root_events = [(ev.get("type", "event"), root_start, _event_attrs(ev)) for ev in leading
                   if int(ev.get("cycle", 0) or 0) == 0]
    root = b.span("root", f"invoke_agent {name}", None, root_start, root_end, {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "akh-tui",
        "openinference.span.kind": "AGENT",  # how Arize Phoenix groups spans (it reads gen_ai.* too)
        "gen_ai.agent.name": name,
        "gen_ai.agent.id": key,
        "gen_ai.conversation.id": key,
        "akh.run": run, "akh.branch": branch, "akh.seed": seed, "akh.scenario": meta.get("scenario"),
        "akh.decider": meta.get("decider"), "akh.cycles": extent.cycles,
        "akh.psyche.persona": psyche.get("persona"), "akh.psyche.dominant": psyche.get("dominant"),
        "akh.psyche.archetypes": psyche.get("archetypes"),
    }, kind=SpanKind.INTERNAL, events=root_events)
    yield from b.take()

    for rec, following in pairs:
        assert rec is not None  # only the first pair has none
        c = int(rec["cycle"])
        mine = [ev for ev in following if int(ev.get("cycle", 0) or 0) == c]
        start = t0(c)
        decide, act = rec.get("decide") or {}, rec.get("act") or {}
        tool = redact(decide.get("tool") or "none")
        attrs = cycle_attributes(rec)
        goals = rec.get("goals") or []
        goal_status = [f"#{g.get('id')} {g.get('status')} {g.get('coverage', 0):.2f} {g.get('description')}" for g in goals]
        evs = [(ev.get("type", "event"), start + CYCLE_NS - 1, _event_attrs(ev)) for ev in mine]
        failed: str | None
        if act.get("vetoed"):
            failed = f"vetoed by {act.get('veto') or 'the shadow'}"
        else:
            failed = None if act.get("success", True) else f"{tool} failed"
        cyc = b.span(f"cycle {c}", f"cycle {c} {tool}", root, start, start + CYCLE_NS,
                     dict(attrs) | {"akh.goals": goal_status or None, "openinference.span.kind": "CHAIN",
                                    "input.value": (rec.get("goal") or {}).get("description"),
                                    "output.value": act.get("output")}, events=evs, error=failed)

        def phase(i: int) -> tuple[int, int]:
            return start + i * PHASE_NS, start + (i + 1) * PHASE_NS

        obs, ori = rec.get("observe") or {}, rec.get("orient") or {}
        s, e = phase(0)
        b.span(f"cycle {c}/observe", "observe", cyc, s, e, {
            "openinference.span.kind": "CHAIN", "akh.cycle": c, "akh.observe.goals": obs.get("goals") or None, "akh.observe.wm_size": obs.get("wm_size"),
            "akh.observe.recent": [r.get("content", "") for r in obs.get("recent") or []] or None,
            "akh.observe.episodes": len(obs.get("episodes") or []),
        })
        s, e = phase(1)
        b.span(f"cycle {c}/orient", "orient", cyc, s, e, {
            "openinference.span.kind": "CHAIN", "akh.cycle": c, "akh.orient.pressure": ori.get("pressure"),
            "akh.orient.K": ori.get("K"), "akh.orient.I": ori.get("I"), "akh.orient.E": ori.get("E"),
            "akh.orient.activated": [f"{a.get('symbol')} {a.get('activation')}" for a in ori.get("activated") or []] or None,
            "akh.orient.learnings": ori.get("learnings") or None,
        })
        s, e = phase(2)
        offered = [cd for cd in decide.get("candidates") or [] if cd.get("offered")]
        dec_ctx = b.span(f"cycle {c}/decide", "decide", cyc, s, e, attrs | {
            "akh.decide.candidates": [f"{cd.get('tool')} {cd.get('score', 0):.3f}" for cd in offered] or None,
            "akh.decide.not_offered": [f"{cd.get('tool')}: {cd.get('why_not')}" for cd in decide.get("candidates") or []
                                       if not cd.get("offered")] or None,
        } | decide_attributes(rec))
        chat = chat_attributes(rec, meta, capture_content())
        if chat is not None:  # the model's call, inside decide
            b.span(f"cycle {c}/decide/chat", f"chat {chat['gen_ai.request.model']}", dec_ctx,
                   s + PHASE_NS // 10, e - PHASE_NS // 10, chat, kind=SpanKind.CLIENT,
                   error=None if chat["akh.llm.status"] == "accepted" else chat["akh.llm.status"])
        s, e = phase(3)
        act_ctx = b.span(f"cycle {c}/act", "act", cyc, s, e, {
            "openinference.span.kind": "CHAIN", "akh.cycle": c, "akh.tool": tool, "akh.vetoed": bool(act.get("vetoed")), "akh.veto": act.get("veto"),
            "akh.bias": act.get("bias"), "akh.progress": act.get("progress"), "akh.coverage": act.get("coverage"),
        }, error=failed)
        spec = SPEC_BY_NAME.get(tool)
        if spec is None:  # a plugin tool this process loaded
            from ..tools.registry import seen_entry

            entry = seen_entry(tool)
            spec = entry.spec if entry is not None else None
        # the call sits inside act; a vetoed call did not run, and says so as its error
        b.span(f"cycle {c}/act/tool", f"execute_tool {tool}", act_ctx, s + PHASE_NS // 10, e - PHASE_NS // 10, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": f"{key}|{c}",
            "gen_ai.tool.description": spec.does if spec else None,
            "gen_ai.tool.call.arguments": json.dumps({"input": decide.get("input", "")}, ensure_ascii=False),
            "gen_ai.tool.call.result": act.get("output"),
            "error.type": "vetoed" if act.get("vetoed") else (None if act.get("success", True) else "tool_failed"),
            "openinference.span.kind": "TOOL", "tool.name": tool,
            "input.value": decide.get("input", ""), "output.value": act.get("output"),
            "akh.cycle": c,
        }, error=failed)
        s, e = phase(4)
        plan = rec.get("plan") or {}
        wm = rec.get("wm") or {}
        ps = rec.get("psyche") or {}
        b.span(f"cycle {c}/learn", "learn", cyc, s, e, {
            "openinference.span.kind": "CHAIN", "akh.cycle": c, "akh.goals": goal_status or None,
            "akh.plan.strategy": plan.get("strategy"), "akh.plan.status": plan.get("status"),
            "akh.wm.size": wm.get("size"), "akh.wm.evicted": len(wm.get("evicted") or []),
            "akh.wm.consolidated": len(wm.get("consolidated") or []),
            "akh.psyche.archetypes": ps.get("archetypes"), "akh.psyche.dominant": ps.get("dominant"),
            "akh.events": [ev.get("type", "event") for ev in mine] or None,
        })
        yield from b.take()


# ---- decide and the model's call (issue 27) ---------------------------------------------------
# The decide span is OpenInference's RERANKER (Phoenix draws its documents as a ranked, scored
# list): the query is the focus goal, the input documents the candidates in tool order, the
# output documents the offered ones by score; the table's and the model's choice side by side.
# A model decision adds a GenAI `chat` span (OpenInference LLM) under decide with its tokens;
# what the model said goes in only when the user opts in, as the GenAI conventions ask
# (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def capture_content() -> bool:
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def decide_attributes(rec: dict) -> dict[str, Any]:
    """The decide span's RERANKER attributes and the two choices."""
    decide = rec.get("decide") or {}
    cands = list(decide.get("candidates") or [])
    out: dict[str, Any] = {"openinference.span.kind": "RERANKER", "reranker.model_name": "akh utility table",
                           "reranker.query": (rec.get("goal") or {}).get("description")}

    def doc(prefix: str, i: int, cd: dict) -> None:
        out[f"{prefix}.{i}.document.id"] = cd.get("tool")
        out[f"{prefix}.{i}.document.score"] = float(cd.get("score") or 0.0)
        out[f"{prefix}.{i}.document.content"] = cd.get("input") if cd.get("offered") else f"not offered: {cd.get('why_not')}"

    for i, cd in enumerate(cands):
        doc("reranker.input_documents", i, cd)
    ranked = sorted((cd for cd in cands if cd.get("offered")), key=lambda cd: -float(cd.get("score") or 0.0))
    for i, cd in enumerate(ranked):
        doc("reranker.output_documents", i, cd)
    out["reranker.top_k"] = len(ranked)
    llm = decide.get("llm")
    out["akh.decide.table_choice"] = (llm or {}).get("utility_tool") or decide.get("tool")
    out["akh.decide.model_choice"] = (llm or {}).get("tool")
    out["akh.decide.model_status"] = (llm or {}).get("status")
    return out


def chat_attributes(rec: dict, meta: dict, content: bool) -> dict[str, Any] | None:
    """The GenAI `chat` span of a model decision (None when the table decided alone)."""
    llm = (rec.get("decide") or {}).get("llm")
    if not llm:
        return None
    model = str(meta.get("decider") or "llm")
    out: dict[str, Any] = {
        "openinference.span.kind": "LLM", "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
        "gen_ai.provider.name": model, "llm.model_name": model,
        "llm.token_count.total": int(llm.get("tokens") or 0), "akh.llm.tokens": int(llm.get("tokens") or 0),
        "akh.llm.status": llm.get("status"), "akh.cycle": rec.get("cycle"),
        "akh.decide.table_choice": llm.get("utility_tool"), "akh.decide.model_choice": llm.get("tool"),
        "error.type": None if llm.get("status") == "accepted" else llm.get("status"),
    }
    if content:
        said = {"situation_assessment": llm.get("situation_assessment"), "action_rationale": llm.get("action_rationale"),
                "action": {"tool": llm.get("tool"), "input": llm.get("input")}}
        out["gen_ai.output.messages"] = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": json.dumps(said)}]}])
        out["output.value"] = json.dumps(said, ensure_ascii=False)
        out["akh.llm.reason"] = llm.get("reason")
    return out


def _batches(spans: Iterable) -> Iterator[list]:
    it = iter(spans)
    while batch := list(islice(it, BATCH)):
        yield batch


def _span_dicts(batch: list) -> dict:
    """The OTLP/JSON mapping of one batch (an ExportTraceServiceRequest as a dict): ids in hex,
    as the OTLP JSON mapping wants, not protobuf JSON's base64."""
    import base64
    import importlib

    # protobuf ships no type stubs: imported by name so the engine's type check needs none
    MessageToDict = importlib.import_module("google.protobuf.json_format").MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(batch), use_integers_for_enums=True)

    def hexify(node):
        if isinstance(node, dict):
            for k, v in node.items():
                if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                    node[k] = base64.b64decode(v).hex()
                else:
                    hexify(v)
        elif isinstance(node, list):
            for v in node:
                hexify(v)

    hexify(doc)
    return doc


def write_otlp_json(spans: Iterable, out: IO[str]) -> int:
    """Write the spans as one OTLP/JSON ExportTraceServiceRequest (as an OTLP/HTTP JSON body or
    the OpenTelemetry Collector's file receiver reads it), a batch at a time; returns how many.

    The spans of one trace share one resource and scope, so the document is one envelope
    around one list: its text is written around the list, and each batch's spans go into the
    list as they are encoded. The bytes are json.dumps of the whole document's."""
    n = 0
    suffix = ""
    for batch in _batches(spans):
        doc = _span_dicts(batch)
        scope = doc["resourceSpans"][0]["scopeSpans"][0]
        got = scope["spans"]
        if n == 0:
            mark = "\0SPANS\0"
            scope["spans"] = mark
            envelope = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
            prefix, suffix = envelope.split(json.dumps(mark, ensure_ascii=False))
            out.write(prefix + "[")
        else:
            out.write(",")
        out.write(",".join(json.dumps(sp, ensure_ascii=False, separators=(",", ":")) for sp in got))
        n += len(got)
    out.write("]" + suffix + "\n")
    return n


def to_otlp_json(spans: Iterable) -> str:
    """write_otlp_json's text, for spans of a short run."""
    import io

    buf = io.StringIO()
    write_otlp_json(spans, buf)
    return buf.getvalue()


@contextmanager
def _no_otel_environment() -> Iterator[None]:
    """While the exporter is built, no OTEL_* variable is set: it would merge
    OTEL_EXPORTER_OTLP_HEADERS (credentials for the user's usual collector) into the headers
    sent to whatever --endpoint names, and take certificates, a credential-provider session or
    compression from there. Only what the command line says is used."""
    saved = {k: os.environ.pop(k) for k in list(os.environ) if k.upper().startswith("OTEL_")}
    try:
        yield
    finally:
        os.environ.update(saved)


def send_otlp(spans: Iterable, endpoint: str, headers: dict[str, str], timeout: float = 10.0) -> int:
    """POST the spans to an OTLP/HTTP (protobuf) endpoint, a batch at a time, with exactly
    `headers` (and the protocol's own); returns how many were sent. Raises OSError naming the
    endpoint (its userinfo masked) when one is not accepted."""
    import logging

    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    check_endpoint(endpoint)
    # the exporter logs its failures instead of raising: keep them to say why
    seen: list[str] = []

    class _Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    log = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    handler = _Keep(level=logging.WARNING)
    log.addHandler(handler)
    propagate, log.propagate = log.propagate, False
    with _no_otel_environment():
        exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(headers), timeout=timeout,
                                    compression=Compression.NoCompression)
    n = 0
    try:
        for batch in _batches(spans):
            if exporter.export(batch) is not SpanExportResult.SUCCESS:
                why = seen[-1] if seen else "no reason given"
                raise OSError(redact(f"the OTLP endpoint {endpoint} did not accept the spans ({why})"))
            n += len(batch)
    finally:
        exporter.shutdown()
        log.removeHandler(handler)
        log.propagate = propagate
    return n
