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

import json
import re
from typing import Any

MASK = "[redacted]"

# A registered secret shorter than this is not masked by value (it would mask ordinary words);
# shapes still catch it where it appears as a credential.
MIN_SECRET_LEN = 6

_secrets: set[str] = set()
_secret_re: re.Pattern[str] | None = None

# A credential's field or header name: `Authorization`, `x-api-key`, `OPENAI_API_KEY`,
# `client_secret`, `db_password`, `access_token` (matched from the name's last part: whatever
# precedes it stays, as the name does).
_NAME_WORDS = ("authorization", "api_key", "api-key", "apikey", "token", "secret", "password", "passwd", "cookie",
               "credential", "session_id", "session-id", "sessionid")
_NAMES = (r"(?i)(authorization|api[-_]?key|apikey|token|secret|password|passwd|cookie|credentials?|"
          r"session[-_]?id)")
_SEP = r"([\"']?\s*[:=]\s*)"

# (anchors, pattern, replacement): a pattern runs only when one of its anchors occurs in the
# lower-cased text. Python's regular expressions try every position, so seven of them over a
# 5 kB record cost twenty times its encoding; the substring searches cost next to nothing, and
# ordinary text holds none of the anchors.
_SHAPES: tuple[tuple[tuple[str, ...], re.Pattern[str], str], ...] = (
    # scheme://user:password@host: keep the scheme and the host. Greedy to the authority's last
    # `@` (as urlsplit reads it), so a password holding `@` is masked whole.
    (("://",), re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)(?!\[redacted\]@)[^/\s?#\"'<>\\]+@"), r"\1" + MASK + "@"),
    # a quoted value of such a field: `"api_key": "v v"`, `password='v'` (to the closing quote)
    (_NAME_WORDS, re.compile(_NAMES + _SEP + r"([\"'])(?!\[redacted\]\3)(?:\\.|(?!\3)[^\\\n])+\3"),
     r"\1\2\3" + MASK + r"\3"),
    # a bare value: `Authorization: Basic v`, `x-api-key: v`, `password=v` (the scheme word, if
    # any, goes with the value)
    (_NAME_WORDS, re.compile(_NAMES + _SEP + r"(?![\"']|\[redacted\])(?:(?:bearer|basic|token|digest)\s+)?"
                             r"[^\s\"',;}&]+"), r"\1\2" + MASK),
    # a bearer token anywhere else (a server's error body echoing the request's header)
    (("bearer",), re.compile(r"(?i)\b(bearer)(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=\-]{8,}"), r"\1\2" + MASK),
    # `Basic <base64>` elsewhere; "the Basic idea" stays: the value must look encoded (a digit,
    # `+`, `/`, `=` or a lower-upper turn)
    (("basic",), re.compile(r"\b(Basic)(\s+)(?=[A-Za-z0-9+/]*(?:[0-9+/=]|[a-z][A-Z]))[A-Za-z0-9+/]{8,}={0,2}"),
     r"\1\2" + MASK),
    # provider keys by their prefixes (sk-..., sk-proj-..., sk-ant-..., pk-..., rk-...): eight
    # characters with a digit, or sixteen ("sk-learn" stays)
    (("sk-", "pk-", "rk-"), re.compile(r"\b(?:sk|pk|rk)-(?:(?=[A-Za-z_\-]*\d)[A-Za-z0-9_\-]{8,}|[A-Za-z0-9_\-]{16,})"),
     MASK),
    # other well-known token shapes: GitHub, Slack, AWS access key ids
    (("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_", "xox", "akia"), re.compile(r"\b(?:(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
                                       r"xox[abposr]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16})\b"), MASK),
)


def register_secret(value: str | None) -> None:
    """Mask `value` wherever it appears from now on, in this process (an API key read from the
    environment, an OTLP header's value)."""
    global _secret_re
    if not value or len(value) < MIN_SECRET_LEN or value in _secrets or value in MASK:
        return
    _secrets.add(value)
    # as a JSON text spells it too (a quote, a backslash, a control character escaped), so the
    # writers' check on an encoded record finds it
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    if escaped != value:
        _secrets.add(escaped)
    # longest first, so a secret that contains another is masked whole
    _secret_re = re.compile("|".join(re.escape(s) for s in sorted(_secrets, key=len, reverse=True)))


def registered_in(text: str) -> bool:
    """Whether a registered secret appears in `text`: the per-cycle check of the writers (the
    store, the trace), a few substring searches, where running every shape over each record
    would cost more than the cycle. The shapes are masked where foreign text enters instead
    (the model's replies and errors, tool outputs, plugin messages)."""
    return bool(_secrets) and any(s in text for s in _secrets)


def redact(text: str) -> str:
    """`text` with every secret masked (see the module's docstring)."""
    if not text:
        return text
    out = text
    if _secret_re is not None:
        out = _secret_re.sub(MASK, out)
    low = out.lower()
    for anchors, pattern, repl in _SHAPES:
        if any(a in low for a in anchors):
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
