"""Secrets never reach a record, a log or a report: the one function every sink calls.

Every place that writes text a person or a file will keep (the session store, the JSONL trace,
stderr, OpenTelemetry export, reports) passes that text through `redact` first. It masks:
- the values registered with `register_secret` (the API key the LLM client read from its
  environment variable, the values of OTLP headers): whatever shape they have;
- credentials by shape: `Bearer …` / `Basic …` / `Token …`, `sk-…`-style keys, the value of an
  `Authorization` / `X-Api-Key` / `Cookie` / `api_key=` header or field;
- the userinfo of a URL (`https://user:password@host` -> `https://[redacted]@host`).

Masking is idempotent (`redact(redact(t)) == redact(t)`), so a sink need not know whether an
earlier one already masked the text. Text with no secret in it comes back as the same object.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "[redacted]"

# A registered secret shorter than this is not masked by value (it would mask ordinary words);
# shapes still catch it where it appears as a credential.
MIN_SECRET_LEN = 6

_secrets: set[str] = set()
_secret_re: re.Pattern[str] | None = None

_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host: keep the scheme and the host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)(?!\[redacted\]@)[^/\s@?#]+@"), r"\1" + MASK + "@"),
    # header or field names whose value is a credential: `Authorization: Basic v`, `x-api-key: v`,
    # `"api_key": "v"`, `password=v` (the scheme word, if any, goes with the value)
    (re.compile(r"(?i)\b(authorization|proxy-authorization|x-api-key|api[-_]?key|access[-_]?token|"
                r"secret|password|passwd|cookie|set-cookie)(\"?'?\s*[:=]\s*\"?'?)(?!\[redacted\])"
                r"(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;}&]+"), r"\1\2" + MASK),
    # a bearer token anywhere else (a server's error body echoing the request's header)
    (re.compile(r"(?i)\b(bearer)(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=\-]{8,}"), r"\1\2" + MASK),
    # provider keys by their prefixes (sk-..., sk-proj-..., sk-ant-..., pk-..., rk-...)
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"), MASK),
)

# Each shape above needs one of these to match; text holding none (nearly all of a run's text)
# skips the shapes: one scan instead of four, as every span attribute and report cell is redacted
_HINT = re.compile(r"(?i)://|authorization|api[-_]?key|access[-_]?token|secret|passw|cookie|bearer|\b[spr]k-")


def register_secret(value: str | None) -> None:
    """Mask `value` wherever it appears from now on, in this process (an API key read from the
    environment, an OTLP header's value)."""
    global _secret_re
    if not value or len(value) < MIN_SECRET_LEN or value in _secrets:
        return
    _secrets.add(value)
    # longest first, so a secret that contains another is masked whole
    _secret_re = re.compile("|".join(re.escape(s) for s in sorted(_secrets, key=len, reverse=True)))


def redact(text: str) -> str:
    """`text` with every secret masked (see the module's docstring)."""
    if not text:
        return text
    out = text
    if _secret_re is not None:
        out = _secret_re.sub(MASK, out)
    if _HINT.search(out):
        for pattern, repl in _SHAPES:
            out = pattern.sub(repl, out)
    return text if out == text else out


def redact_obj(obj: Any) -> Any:
    """A JSON-shaped value (dicts, lists, strings, numbers) with every string redacted; keys too.
    Containers with nothing to mask come back as the same objects."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        items = [(redact(k) if isinstance(k, str) else k, redact_obj(v)) for k, v in obj.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, obj.items())):
            return obj
        return dict(items)
    if isinstance(obj, (list, tuple)):
        got = [redact_obj(v) for v in obj]
        if all(a is b for a, b in zip(got, obj)):
            return obj
        return type(obj)(got) if isinstance(obj, tuple) else got
    return obj
