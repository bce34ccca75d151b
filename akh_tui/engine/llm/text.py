"""Short text helpers of the model exchange: a token estimate, a message as one line, and a
server's (or model's) text made safe to show."""

from __future__ import annotations

import math

from ..redaction import redact


def estimate_tokens(text: str) -> int:
    """The usual rough estimate: four characters a token (never 0 for non-empty text)."""
    return math.ceil(len(text) / 4)


def messages_text(messages: list[dict]) -> str:
    """The chat messages' contents as one text (for token estimates and prompt hashes)."""
    return "\n".join(str(m.get("content", "")) for m in messages)


def one_line(text: object, limit: int = 200) -> str:
    """`text` on one line of at most `limit` characters."""
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def foreign(text: object, limit: int) -> str:
    """A server's text as a message shows it: one line of at most `limit` characters, secrets
    masked before the cut (a token cut short is no longer a shape redact knows); only the
    head of a large body is scanned."""
    return one_line(redact(str(text)[: limit * 16]), limit)
