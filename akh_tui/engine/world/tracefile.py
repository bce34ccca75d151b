"""Reading a world trace file (SPEC §13) a line at a time: for exports that stream it (OTLP)
and never hold the whole world. Each line must be a JSON object with a string `type`, the
first one the `world` header; a record's version (`"v"`, on the header, cycle records and §11
events) must be one this akh-tui reads (engine/schemas.py). Errors name the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from ..errors import InputError, user_file_lines
from ..schemas import check_version

MAX_TRACE_BYTES = 1 << 40  # no real cap: the file is streamed, never held
MAX_TRACE_LINES = 1 << 40


def world_trace_records(path: str | Path, at: list[int] | None = None) -> Iterator[dict[str, Any]]:
    """The records of a world trace file, in order, checked as they are read; `at[0]` is the
    line of the record last yielded (for a reader's own errors about it)."""
    file = str(path)
    n = 0
    first = True
    for n, line in enumerate(user_file_lines(path, "trace file", MAX_TRACE_BYTES, MAX_TRACE_LINES), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "nested too deeply"
            raise InputError(f"not JSON: {why}", file=file, line=n) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise InputError("each line must be a JSON object with a string 'type'", file=file, line=n, field="type")
        if first and obj["type"] != "world":
            what = "a single run's trace (use `sessions export`)" if obj["type"] == "run" else f"a {obj['type']!r} record"
            raise InputError(f"not a world trace: the first record must be the world header, not {what}",
                             file=file, line=n, field="type")
        if "v" in obj or obj["type"] in ("world", "cycle"):
            check_version(obj.get("v"), file, n)
        first = False
        if at is not None:
            at[0] = n
        yield obj
    if first:
        raise InputError("empty trace: no world header", file=file)


__all__ = ["world_trace_records"]
