"""The request body of one chat-completions call, in the dialect of the server behind it.

Every server speaks OpenAI-compatible chat completions; they differ in how they are told the
reply's JSON Schema (constrained sampling: the reply is valid JSON naming an offered tool):

* `openai` and `ollama`: `response_format: {"type": "json_schema", "json_schema": {...}}`
  (OpenAI's structured outputs; Ollama 0.5+ turns it into its own `format`),
* `llama.cpp` (llama-server): the top-level `json_schema` field (it refuses a request naming
  both a schema and a grammar, so nothing else is sent),
* `llama-cpp-python` (its server): `response_format: {"type": "json_object", "schema": {...}}`.

Temperature and seed are always sent (default 0 and 0), so a call repeats and the record says
what was asked.
"""

from __future__ import annotations

from typing import Any

from .config import LLMConfig

SCHEMA_NAME = "decision"
# the "schema" of a free-text answer (an interview, llm/interview.py): no reply format is asked for,
# and it is part of the prompt's hash as any schema is
TEXT_REPLY: dict[str, Any] = {"reply": "text"}


def structured_fields(preset: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The request fields that carry `schema` for a server of this preset."""
    if preset == "llama.cpp":
        return {"json_schema": schema}
    if preset == "llama-cpp-python":
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {"response_format": {"type": "json_schema",
                                "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema}}}


def request_body(config: LLMConfig, messages: list[dict], schema: dict[str, Any] | None) -> dict[str, Any]:
    """The whole request of one call (the same dict is sent, hashed and recorded)."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "max_tokens": config.max_tokens,
        "temperature": config.temperature,
        "seed": config.seed,
    }
    if schema == TEXT_REPLY:
        pass
    elif schema is not None and config.structured:
        body.update(structured_fields(config.preset, schema))
    else:
        body["response_format"] = {"type": "json_object"}
    return body
