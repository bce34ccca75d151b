"""Every URL a user gives (an LLM server, an OTLP endpoint, a served page's public address, a
Dask scheduler, a tool's fetch) is checked here: a malformed one is a refusal naming the field,
never a raw `ValueError` from the parser.

`check_url` returns the parts; the messages never repeat the URL's userinfo (a password typed
into `https://user:pw@host` must not reach stderr).
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from .errors import InputError
from .redaction import redact


def check_url(text: str, field: str, schemes: tuple[str, ...] = ("http", "https"),
              file: str | None = None, line: int | None = None) -> SplitResult:
    """The parts of `text`, a URL with one of `schemes` and a host; InputError otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("must be a URL, got nothing", field=field, file=file, line=line)
    shown = redact(text)
    if any(ch.isspace() or ord(ch) < 32 for ch in text):
        raise InputError(f"{shown!r} is not a URL: it holds whitespace or control characters",
                         field=field, file=file, line=line)
    try:
        parts = urlsplit(text)
        host = parts.hostname
        parts.port  # raises ValueError for a port out of range or not a number
    except ValueError as exc:
        raise InputError(f"{shown!r} is not a URL: {exc}", field=field, file=file, line=line) from None
    if parts.scheme not in schemes:
        raise InputError(f"{shown!r} must start with {' or '.join(s + '://' for s in schemes)}",
                         field=field, file=file, line=line)
    if not host:
        raise InputError(f"{shown!r} names no host", field=field, file=file, line=line)
    return parts
