"""Model calls recorded and replayed (issue 27): a cassette keyed by prompt hash.

Every model call of a run with a cassette is appended to it: the prompt's hash, the whole
request, the reply, the tokens and the wall-clock latency (`wall_latency_s`, never in a trace).
A call whose prompt hash is in the cassette is answered from it (replayed) instead of asking
the model; with `offline` the model is never asked, so a run re-runs from its recordings with
no model installed and writes the same trace bytes. A prompt the cassette does not hold is
then a divergence: the decision is an `llm_error` naming the cycle and the hash, and the
utility table's choice runs (never a silent replay of another prompt's reply).

The hash covers what decides the reply: the messages, the reply schema and the sampling
(temperature, seed, max_tokens), not how the model was reached (a recording made through a
server replays in-process and back). The file is gzip JSON lines, one gzip member per call
(appended, so a run killed mid-way keeps every call made before).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
import zlib
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError

CASSETTE_NAME = "model-calls.jsonl.gz"  # in the data dir, unless [llm] cassette names a file


def prompt_hash(messages: list[dict], schema: Mapping[str, Any] | None, sampling: Mapping[str, Any]) -> str:
    """The key of a call: SHA-256 of its messages, schema and sampling, as canonical JSON."""
    canon = json.dumps({"messages": messages, "schema": schema, "sampling": dict(sampling)},
                       sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def _checked(line: str, n: int, file: str) -> dict[str, Any]:
    """One recorded call, or an InputError naming the file, line and field: a cassette is a
    file a user may have edited or been sent, and a replayed reply must be text."""
    try:
        call = json.loads(line)
    except (ValueError, RecursionError):
        raise InputError(f"line {n} is not JSON", file=file, line=n) from None
    if not isinstance(call, dict):
        raise InputError(f"line {n} is not a recorded model call", file=file, line=n)
    for key, kind, ok in (("prompt_hash", "a 64-digit hex hash", lambda v: isinstance(v, str) and len(v) == 64),
                          ("reply", "text", lambda v: isinstance(v, str)),
                          ("tokens", "a whole number ≥ 0", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0)):
        if not ok(call.get(key)):
            raise InputError(f"must be {kind}", file=file, line=n, field=key)
    return call


class Cassette:
    """The recorded calls of one file, by prompt hash (the latest recording of a hash wins)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        if path.is_file():
            self._load()

    def _load(self) -> None:
        try:
            with gzip.open(self.path, "rt", encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    if not line.endswith("\n"):
                        break  # the last call was cut (a run killed while appending it)
                    call = _checked(line, n, str(self.path))
                    self.calls[call["prompt_hash"]] = call
        except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
            if self.calls:  # a run killed while appending: the calls before the cut are kept
                return
            raise InputError(f"not a cassette of model calls (gzip JSON lines): {exc}", file=str(self.path)) from None

    def get(self, key: str) -> dict[str, Any] | None:
        return self.calls.get(key)

    def add(self, call: dict[str, Any]) -> None:
        """Keep `call` and append it to the file as its own gzip member."""
        line = json.dumps(call, sort_keys=True, ensure_ascii=False) + "\n"
        with self._lock:
            self.calls[str(call["prompt_hash"])] = call
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "ab") as f:
                f.write(gzip.compress(line.encode("utf-8"), mtime=0))

    def size_bytes(self) -> int:
        return self.path.stat().st_size if self.path.is_file() else 0
