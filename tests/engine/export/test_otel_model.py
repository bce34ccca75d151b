"""OpenTelemetry export of a model-decided run (issue 27): every span has an OpenInference kind
(Phoenix shows "unknown" otherwise), the decide span is a RERANKER whose documents are the
candidates ranked by score with the table's and the model's choice side by side, and a model
decision adds a GenAI `chat` span under decide with its tokens; what the model said is exported
only when the user opts in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.sdk")


def _spans(cli, tmp_path) -> list[dict]:
    cli("sessions", "export", "1", "--format", "otlp-json", "-o", "out.json")
    doc = json.loads((tmp_path / "out.json").read_text())
    spans = [s for rs in doc["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    for s in spans:
        s["attrs"] = {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]}
    return spans


def test_model_run_spans_have_kinds_reranker_documents_and_chat(cli, tmp_path, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    cli("agent", "run", "--scenario", "solar", "--decider", "scripted", "--max-cycles", "4", "--fresh")
    spans = _spans(cli, tmp_path)
    assert all("openinference.span.kind" in s["attrs"] for s in spans)
    by_id = {s["spanId"]: s for s in spans}
    decides = [s for s in spans if s["name"] == "decide"]
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert len(decides) == len(chats) == 4
    for d in decides:
        a = d["attrs"]
        assert a["openinference.span.kind"] == "RERANKER"
        n = int(a["reranker.top_k"])
        scores = [float(a[f"reranker.output_documents.{i}.document.score"]) for i in range(n)]
        assert n >= 1 and scores == sorted(scores, reverse=True)
        assert a["akh.decide.table_choice"] and "akh.decide.model_status" in a
    for c in chats:
        a = c["attrs"]
        assert by_id[c["parentSpanId"]]["name"] == "decide"
        assert a["openinference.span.kind"] == "LLM" and a["gen_ai.operation.name"] == "chat"
        assert int(a["llm.token_count.total"]) > 0 and c["kind"] == 3  # SPAN_KIND_CLIENT
        assert "output.value" not in a and "gen_ai.output.messages" not in a  # content is opt-in
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    said = [json.loads(s["attrs"]["output.value"]) for s in _spans(cli, tmp_path) if s["name"].startswith("chat ")]
    assert len(said) == 4 and all(x["situation_assessment"].startswith("scripted:") for x in said)


def test_a_table_run_has_no_chat_span(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "2", "--fresh")
    spans = _spans(cli, tmp_path)
    assert not [s for s in spans if s["name"].startswith("chat ")]
    assert all(s["attrs"].get("akh.decide.model_status") is None for s in spans if s["name"] == "decide")
