"""The published record schema: which versions of the trace records (SPEC §11, §13) this
akh-tui reads, and the JSON Schema (draft 2020-12) that describes each version, shipped as
package data: `data/schemas/v<N>/trace.schema.json` (docs/schema.md).

A record carries its version as `"v"` (a run or world header, a cycle record, a §11 event).
Every version from the first to RECORD_VERSION opens; a newer one is refused by name, before
anything of it is used, so an older akh-tui never misreads what a newer one wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import InputError
from .paths import bundled_data_dir

RECORD_VERSION = 1  # the newest record version this akh-tui writes and reads
FIRST_VERSION = 1  # the oldest it still reads
SCHEMA_FILE = "trace.schema.json"  # one per version: every record kind, each also alone as #/$defs/<type>


def check_version(v: Any, file: str | None = None, line: int | None = None) -> int:
    """A record's `v` when this akh-tui reads it; an InputError naming the version otherwise."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"missing or non-integer record version {v!r} (expected {FIRST_VERSION} to {RECORD_VERSION})",
                         file=file, line=line, field="v")
    if v > RECORD_VERSION:
        raise InputError(f"record version {v} is newer than this akh-tui reads (up to {RECORD_VERSION}): "
                         f"open it with a newer akh-tui", file=file, line=line, field="v")
    if v < FIRST_VERSION:
        raise InputError(f"record version {v} is not one akh-tui ever wrote (the first is {FIRST_VERSION})",
                         file=file, line=line, field="v")
    return v


def schema_dir(version: int = RECORD_VERSION) -> Path:
    return bundled_data_dir() / "schemas" / f"v{version}"


def load_schema(version: int = RECORD_VERSION) -> dict[str, Any]:
    """The published schema of one record version (JSON Schema draft 2020-12) as a mapping."""
    check_version(version)
    doc: dict[str, Any] = json.loads((schema_dir(version) / SCHEMA_FILE).read_text(encoding="utf-8"))
    return doc


__all__ = ["RECORD_VERSION", "FIRST_VERSION", "SCHEMA_FILE", "check_version", "schema_dir", "load_schema"]
