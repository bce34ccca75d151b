"""A sweep run's result as it travels from a Dask worker to the sweep's client: bytes that the
worker's task encodes and the client decodes and checks itself, never a Python object.

A worker is another machine: what it sends back is untrusted input. Dask's `gather` would
unpickle whatever a worker returned (a pickled object runs code as it is loaded), so the task
returns `bytes` (Dask carries them as msgpack, which builds only plain values) and the client
turns them into a row here: exactly the fields a row has, each of its type, the run's identity
equal to the task the client sent. Anything else becomes a failed row naming what was wrong.

The format: MAGIC, the row's JSON length (8 bytes, big-endian), the row as JSON, then the
run's trace as zlib-compressed JSONL (what the store keeps).

No dask here: workers import this module to run the task.
"""

from __future__ import annotations

import json
import math
import struct
import time
import zlib
from typing import Any, Callable

from .file import RunTask, base_row, run_task

MAGIC = b"akh-sweep-result/1\n"
_LENGTH = struct.Struct(">Q")


class MalformedResult(ValueError):
    """What a worker sent is not a result of the task: the message says what was wrong."""


def worker_task(task: RunTask, bundles: dict | None = None) -> bytes:
    """The task a worker runs: the run, its result encoded as bytes. Never raises: whatever
    escapes the run (or its encoding) comes back as text in a failed row, never as an
    exception object for the client to unpickle."""
    t0 = time.perf_counter()
    try:
        return encode_result(run_task(task, bundles))
    except (Exception, SystemExit) as exc:  # SystemExit: a scenario's code calling sys.exit
        row = dict(base_row(task), status="failed", error=f"{type(exc).__name__}: {exc}",
                   wall_time=time.perf_counter() - t0)
        return encode_result({"row": row, "trace": zlib.compress(b"")})


def worker_batch(tasks: list[RunTask], bundles: dict | None = None) -> list[bytes]:
    """Several tasks run in turn by one Dask task (cluster.py batches short runs): each run's
    result as `worker_task` encodes it, in the tasks' order. Never raises either."""
    return [worker_task(task, bundles) for task in tasks]


def encode_result(result: dict) -> bytes:
    """A run_task result as bytes; ValueError for a row JSON cannot carry exactly (NaN)."""
    row = json.dumps(result["row"], allow_nan=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return MAGIC + _LENGTH.pack(len(row)) + row + bytes(result["trace"])


def refused_result(task: RunTask, why: str) -> dict:
    """The failed row stored in place of a result the client refused (no trace: none came)."""
    row = dict(base_row(task), status="failed", error=f"the worker's result was refused: {why}", wall_time=None)
    return {"row": row, "trace": zlib.compress(b"")}


def decode_result(task: RunTask, blob: object) -> dict:
    """The result {"row", "trace"} a worker sent for `task`; MalformedResult otherwise."""
    if not isinstance(blob, bytes):
        raise MalformedResult(f"expected bytes, got {type(blob).__name__}")
    if not blob.startswith(MAGIC):
        raise MalformedResult("not a sweep result (is the worker's akh-tui the same version as this one?)")
    head = len(MAGIC) + _LENGTH.size
    if len(blob) < head:
        raise MalformedResult("truncated before the row")
    (n,) = _LENGTH.unpack_from(blob, len(MAGIC))
    if n > len(blob) - head:
        raise MalformedResult(f"the row's length ({n} bytes) runs past the end of the result")
    try:
        row = json.loads(blob[head:head + n].decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise MalformedResult(f"the row is not JSON: {exc}") from None
    check_row(task, row)
    trace = blob[head + n:]
    _check_trace(trace)
    return {"row": row, "trace": trace}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a run produces")


# ---- the row's schema -------------------------------------------------------------------------

Check = tuple[str, Callable[[Any], bool]]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _count(v: Any) -> bool:
    return _is_int(v) and v >= 0


def _optional(check: Check) -> Check:
    return f"{check[0]} or null", lambda v: v is None or check[1](v)


def _table(check: Check) -> Check:
    return (f"a table of names to {check[0]}s",
            lambda v: isinstance(v, dict) and all(check[1](x) for x in v.values()))


COUNT: Check = ("a count (an integer ≥ 0)", _count)
NUMBER: Check = ("a finite number", _is_num)
TEXT: Check = ("a string", lambda v: isinstance(v, str))
# What a finished run adds to its row (engine/sweep/file.py `outcomes`): exactly these, each of its type.
OUTCOME_FIELDS: dict[str, Check] = {
    "goals_total": COUNT, "goals_completed": COUNT, "goals_failed": COUNT,
    "goal_cycles": _table(_optional(COUNT)), "mean_cycles_to_complete": _optional(NUMBER),
    "vetoes": COUNT, "biases": COUNT, "veto_counts": _table(COUNT), "bias_counts": _table(COUNT),
    "tool_counts": _table(COUNT), "archetypes": _table(NUMBER), "individuation": NUMBER,
    "cycles_run": COUNT, "stop": TEXT,
}
# What a world's cell adds to its row (engine/sweep/world.py `outcomes`): exactly these.
BALANCE: Check = ("a balance (an integer ≥ 0)", _count)
WORLD_OUTCOME_FIELDS: dict[str, Check] = {
    "agents": COUNT, "balances": _table(BALANCE), "minted": COUNT, "mints_held": COUNT, "mints_won": COUNT,
    "mint_winners": _table(COUNT), "goals": _table(("a table of total, completed, failed counts",
                                                    lambda v: isinstance(v, dict) and set(v) == {"total", "completed", "failed"}
                                                    and all(_count(x) for x in v.values()))),
    "goals_total": COUNT, "goals_completed": COUNT, "goals_failed": COUNT, "max_balance": COUNT, "min_balance": COUNT,
    "artifacts": COUNT, "steps": COUNT, "refused": COUNT, "failed_steps": COUNT, "rounds_run": COUNT, "stop": TEXT,
}


def check_row(task: RunTask, row: object) -> None:
    """MalformedResult unless `row` is a row of `task`: its identity (run id, index, scenario,
    seed, settings) the task's own, then status ok with every outcome, or failed with an error."""
    if not isinstance(row, dict):
        raise MalformedResult(f"the row is not a table but {type(row).__name__}")
    base = base_row(task)
    for key in ("run_id", "idx", "scenario", "seed", "settings"):
        # compared as JSON, where true is not 1: a worker cannot file its row under another run
        if key not in row or _canon(row[key]) != _canon(base[key]):
            raise MalformedResult(f"field '{key}' is {_show(row.get(key))}, not this run's {_show(base[key])}")
    status = row.get("status")
    if status == "ok":
        fields = WORLD_OUTCOME_FIELDS if task.world else OUTCOME_FIELDS
        expected: dict[str, Check] = {"error": ("null for a run that succeeded", lambda v: v is None), **fields}
    elif status == "failed":
        expected = {"error": TEXT}
    else:
        raise MalformedResult(f"field 'status' is {_show(status)}, not 'ok' or 'failed'")
    expected["wall_time"] = ("a time in seconds (a number ≥ 0)", lambda v: _is_num(v) and v >= 0)
    known = set(base) | set(expected)
    extra = sorted(k for k in row if k not in known)
    if extra:
        raise MalformedResult(f"unknown field '{extra[0]}' in a row")
    for key, (what, ok) in expected.items():
        if key not in row:
            raise MalformedResult(f"field '{key}' is missing from a row with status {status!r}")
        if not ok(row[key]):
            raise MalformedResult(f"field '{key}' must be {what}, got {_show(row[key])}")


def _check_trace(trace: bytes) -> None:
    """The trace must be zlib-compressed UTF-8, as `sweep open` reads it: checked in pieces,
    so a small blob that inflates hugely costs time, never memory."""
    import codecs

    inflate = zlib.decompressobj()
    text = codecs.getincrementaldecoder("utf-8")()
    try:
        data = trace
        while True:
            piece = inflate.decompress(data, 1 << 20)
            text.decode(piece)
            data = inflate.unconsumed_tail
            if inflate.eof or not (data or piece):
                break
        text.decode(b"", final=True)
    except zlib.error as exc:
        raise MalformedResult(f"the trace is not zlib-compressed: {exc}") from None
    except UnicodeDecodeError as exc:
        raise MalformedResult(f"the trace is not UTF-8 text: {exc.reason}") from None
    if not inflate.eof or inflate.unused_data:
        raise MalformedResult("the trace is truncated or has bytes after its end")


def _canon(v: object) -> str:
    return json.dumps(v, sort_keys=True)


def _show(v: object) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


__all__ = ["worker_task", "worker_batch", "encode_result", "decode_result", "refused_result", "check_row", "MalformedResult", "MAGIC"]
