"""Providers: what sends a prompt and returns (reply text, tokens). `OpenAICompatibleProvider`
POSTs {base_url}/chat/completions with the standard library's http.client (never an
environment proxy, no redirects), retrying 429/5xx/timeouts/resets with capped exponential
backoff under a `RateTracker`."""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import ssl
import time
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Mapping, Protocol
from urllib.parse import urlsplit

from ..errors import InputError
from ..redaction import register_secret
from ..urls import check_url
from .config import LLMConfig
from .dialect import request_body
from .rate import RateTracker
from .text import estimate_tokens, foreign, messages_text, one_line

REPLY_MAX_BYTES = 4_000_000  # response bodies above this are refused


class LLMError(Exception):
    """A provider failure (network, HTTP status, bad envelope, retries exhausted); one line."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class Provider(Protocol):
    def complete(self, messages: list[dict], schema: dict[str, Any] | None = None) -> tuple[str, int]:
        """Return (reply text, tokens used). `schema`: the reply's JSON Schema this cycle, for a
        provider that can constrain its output to it (others ignore it)."""
        ...


class _Transient(Exception):
    """A retryable failure of one attempt; `retry_after` is the server's hint in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.message = message
        self.retry_after = retry_after
        super().__init__(message)


def _retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    if not value:
        return None
    v = value.strip()
    try:
        secs = float(v)
    except ValueError:
        try:
            dt = parsedate_to_datetime(v)
        except (TypeError, ValueError, IndexError):
            return None
        if dt is None:
            return None
        secs = dt.timestamp() - now()
    if not math.isfinite(secs):
        return None
    return max(0.0, secs)


def _error_detail(body: bytes) -> str:
    """The server's own error message if the body is the usual {"error": {"message": ...}},
    secrets masked before it is cut to one line (a server may echo the request's
    `Authorization` header, or the key, in it)."""
    try:
        obj = json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return foreign(body.decode("utf-8", "replace"), 160)
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and err.get("message"):
            return foreign(err["message"], 160)
        if isinstance(err, str):
            return foreign(err, 160)
        if obj.get("message"):
            return foreign(obj["message"], 160)
    return foreign(json.dumps(obj, ensure_ascii=False), 160)


class OpenAICompatibleProvider:
    """Chat completions over plain HTTP(S) with http.client: no environment proxies, no
    redirects followed (a redirect is an error, so the key never goes to another host)."""

    def __init__(self, config: LLMConfig, rate: RateTracker | None = None,
                 sleep: Callable[[float], None] = time.sleep, env: Mapping[str, str] = os.environ) -> None:
        try:
            check_url(config.base_url, "llm.base_url")
        except InputError as exc:
            raise LLMError(f"LLM {exc}") from None
        self.config = config
        self.rate = rate if rate is not None else RateTracker(config.calls_per_minute, config.tokens_per_minute)
        self.sleep = sleep
        self.env = env
        # the key is masked in everything this process records or prints from now on
        register_secret(env.get(config.api_key_env) if config.api_key_env else None)
        self._parts = urlsplit(config.endpoint)
        self.attempts = 0  # HTTP attempts made (all calls), for display
        self.last_request: dict[str, Any] | None = None  # the body of the latest call, for its record

    # one HTTP attempt -------------------------------------------------------------------
    def _attempt(self, body: bytes, headers: dict[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        p = self._parts
        cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = cls(p.hostname or "", p.port, timeout=self.config.timeout)
        try:
            path = p.path or "/"
            conn.request("POST", path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read(REPLY_MAX_BYTES + 1)
            if len(data) > REPLY_MAX_BYTES:
                raise LLMError(f"LLM reply from {self.config.endpoint} is larger than {REPLY_MAX_BYTES} bytes")
            return resp.status, dict(resp.headers.items()), data
        finally:
            conn.close()

    def _classify(self, exc: BaseException) -> _Transient | LLMError:
        where = f"{self._parts.hostname}:{self._parts.port or (443 if self._parts.scheme == 'https' else 80)}"
        if isinstance(exc, (TimeoutError, socket.timeout)):
            return _Transient(f"timed out after {self.config.timeout:g} s")
        if isinstance(exc, ConnectionRefusedError):
            # the URL the user wrote (redacted where it is recorded): the one thing to check
            return LLMError(f"LLM connection refused by {where}: no server at {self.config.endpoint} "
                            f"(is it running?); the utility table's choice runs")
        if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return _Transient(f"connection reset by {where}")
        if isinstance(exc, http.client.HTTPException):
            return _Transient(f"bad HTTP response from {where} ({type(exc).__name__})")
        if isinstance(exc, socket.gaierror):
            return LLMError(f"LLM host {self._parts.hostname!r} cannot be resolved")
        if isinstance(exc, ssl.SSLError):
            return LLMError(f"LLM TLS error with {where}: {one_line(exc, 120)}")
        if isinstance(exc, OSError):
            return LLMError(f"LLM network error with {where}: {one_line(exc.strerror or exc, 120)}")
        return LLMError(f"LLM request failed: {type(exc).__name__}: {one_line(exc, 120)}")

    def _parse_envelope(self, data: bytes, messages_text: str) -> tuple[str, int]:
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise LLMError(f"LLM reply from {self.config.endpoint} is not a JSON envelope: "
                           f"{foreign(data.decode('utf-8', 'replace'), 80)!r}") from None
        try:
            content = obj["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError("LLM reply has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise LLMError(f"LLM reply content is {type(content).__name__}, not text")
        usage = obj.get("usage") if isinstance(obj, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            total = estimate_tokens(messages_text) + estimate_tokens(content)
        return content, total

    def complete(self, messages: list[dict], schema: dict[str, Any] | None = None) -> tuple[str, int]:
        cfg = self.config
        payload = request_body(cfg, messages, schema)
        self.last_request = payload
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "akh-tui"}
        key = self.env.get(cfg.api_key_env) if cfg.api_key_env else None
        register_secret(key)  # the environment may have changed since the provider was made
        if key:
            headers["Authorization"] = f"Bearer {key}"
        mtext = messages_text(messages)
        estimate = estimate_tokens(mtext) + cfg.max_tokens
        attempts = cfg.max_retries + 1
        last = ""
        for attempt in range(attempts):
            wait = self.rate.wait_time(estimate)
            if wait > 0:
                self.sleep(wait)
            self.attempts += 1
            try:
                try:
                    status, resp_headers, data = self._attempt(body, headers)
                except LLMError:
                    self.rate.record(0)
                    raise
                except Exception as exc:  # network level: classify (transient or final)
                    self.rate.record(0)
                    raise self._classify(exc) from None
                if 200 <= status < 300:
                    content, tokens = self._parse_envelope(data, mtext)
                    self.rate.record(tokens)
                    return content, tokens
                self.rate.record(0)
                detail = _error_detail(data)
                msg = f"HTTP {status}" + (f": {detail}" if detail else "")
                if status in (408, 429) or 500 <= status <= 599:
                    raise _Transient(msg, _retry_after(resp_headers.get("Retry-After")))
                raise LLMError(f"LLM request to {cfg.endpoint} failed: {msg}")
            except _Transient as t:
                last = t.message
                if attempt + 1 >= attempts:
                    break
                delay = min(cfg.backoff_cap, cfg.backoff_base * (2 ** attempt))
                if t.retry_after is not None:
                    delay = min(cfg.backoff_cap, t.retry_after)
                if delay > 0:
                    self.sleep(delay)
        raise LLMError(f"LLM request to {cfg.endpoint} failed after {attempts} attempt"
                       f"{'s' if attempts != 1 else ''}: {last}")
