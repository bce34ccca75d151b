"""The JSON Lines trace of SPEC §11: a run header, one record per cycle, events between."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Mapping

import orjson

from ..errors import InputError, read_user_file
from ..redaction import redact_obj, registered_in
from ..schemas import RECORD_VERSION, check_version

TRACE_VERSION = RECORD_VERSION
RECORD_TYPES = ("run", "cycle", "reflection", "psyche_edit", "goal_added", "consolidation", "decomposition", "fork", "backtrack")


# sort_keys is not used: key order is part of the record's readability and is already
# deterministic (dict insertion order). The bytes are those of json.dumps(ensure_ascii=False,
# separators=(",", ":")), made by orjson, which encodes a cycle record 3-4x quicker (encoding
# was the largest part of what recording a cycle costs). orjson writes some values otherwise:
# - floats in [1e-9, 1e-4): orjson writes 0.00001 and 1e-7 where Python writes 1e-05 and
#   1e-07; such a number in the output (or any text that looks like one) sends the value to
#   the standard encoder;
# - what it cannot or will not encode as json does (integers beyond 64 bits, lone surrogates,
#   subclasses of str/int/dict/list, dataclasses, datetimes) raises: the standard encoder then
#   writes it, or raises as before;
# - NaN and the infinities, which JSON does not have: orjson writes null, and so does the
#   standard path (`_finite`), so that a line is JSON whichever encoder wrote it.
# Strings are escaped alike (every code point checked), and keys keep their order.
# Keys that are not strings (json.dumps writes an int key as a string) are rare in what we
# write, and orjson's option for them made every dict slower (a third of encoding a cycle
# record): a value with one is encoded again with the option, as before.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False, allow_nan=False)
_STR_KEYS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_OPTIONS = orjson.OPT_NON_STR_KEYS | _STR_KEYS
_DIGITS = b"0123456789"


def dumps(obj: Any) -> str:
    """A value as one line of JSON, the same bytes whichever encoder made them."""
    try:
        out = orjson.dumps(obj, option=_STR_KEYS)
    except TypeError:  # (orjson.JSONEncodeError is one) a key that is not a string, or worse
        try:
            out = orjson.dumps(obj, option=_OPTIONS)
        except TypeError:
            return _standard(obj)
    if b"0.0000" in out or _short_exponent(out):
        return _standard(obj)
    return out.decode("utf-8")


def _short_exponent(out: bytes) -> bool:
    """Whether orjson wrote a number like 1e-7 or 2.5e-8 (Python writes 1e-07): a digit,
    "e-", one digit and no other. Each "e-" is looked at (a record has one or two, in words
    like "explore-first"): a regular expression over a 5 KB record took longer than orjson
    took to write it, and the old `e-[0-9](?![0-9])` search, run whenever a record held
    "e-", was a third of encoding one. Anything that is not a number's exponent may match
    too: that only sends the value to the standard encoder, which writes the same bytes."""
    digits, n = _DIGITS, len(out)
    i = out.find(b"e-")
    while i != -1:
        if (i > 0 and out[i - 1] in digits and i + 2 < n and out[i + 2] in digits
                and (i + 3 == n or out[i + 3] not in digits)):
            return True
        i = out.find(b"e-", i + 2)
    return False


def _standard(obj: Any) -> str:
    try:
        return _ENCODER.encode(obj)
    except ValueError:  # a NaN or an infinity: null, as orjson writes it
        return _ENCODER.encode(_finite(obj))


def _finite(obj: Any) -> Any:
    """`obj` with every non-finite float replaced by None (plain containers rebuilt)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def redact_line(text: str) -> str:
    """A record's JSON text with every registered secret (the API key) masked, still valid
    JSON in the same encoding; the same text when none appears, as nearly always: the check is
    a few substring searches, cheap enough for every line (the credential shapes are masked
    where foreign text enters, engine/redaction.py)."""
    if not registered_in(text):
        return text
    return dumps(redact_obj(json.loads(text)))


class TraceWriter:
    """The JSONL trace: every line passes `redact_line` (a registered secret never reaches the
    file), and a write the file refuses (disk full, `/dev/full`, a file system gone read-only)
    is an InputError naming the file, never an OSError's traceback. The session store is
    written before the trace, so what it recorded is kept whatever became of the trace."""

    def __init__(self, target: str | Path | IO[str]) -> None:
        if isinstance(target, (str, Path)):
            self.name = str(target)
            try:
                self._fh: IO[str] = open(target, "w", encoding="utf-8")
            except (OSError, ValueError) as exc:
                reason = getattr(exc, "strerror", None) or exc
                raise InputError(f"cannot write the trace: {reason}", file=str(target), field="--trace") from None
            self._own = True
        else:
            self.name = str(getattr(target, "name", "the trace"))
            self._fh, self._own = target, False
        self.failed: InputError | None = None  # the first write the file refused

    def _refused(self, exc: OSError | ValueError) -> InputError:
        reason = getattr(exc, "strerror", None) or exc
        self.failed = InputError(f"cannot write the trace: {reason}; the session store keeps every recorded "
                                 f"cycle (export it with `akh-tui sessions export`)", file=self.name, field="--trace")
        return self.failed

    def header(self, scenario: str, seed: int | None, config: dict, psyche: dict, **extra) -> None:
        self.write({"type": "run", "v": TRACE_VERSION, "scenario": scenario, "seed": seed, "config": config, "psyche": psyche, **extra})

    def write(self, obj: Mapping[str, Any]) -> None:
        self.write_line(dumps(obj))

    def write_line(self, text: str) -> None:
        """A record already encoded with `dumps` (the store got the same text)."""
        if self.failed is not None:  # a trace with a hole in it is not a trace: say so each time
            raise self.failed
        try:
            self._fh.write(redact_line(text))
            self._fh.write("\n")
        except BrokenPipeError:
            raise  # the reader went away (`sessions export | head`): the CLI ends quietly
        except (OSError, ValueError) as exc:  # ValueError: written after the file was closed
            raise self._refused(exc) from None

    def write_all(self, objs: Iterable[Mapping[str, Any]]) -> None:
        for o in objs:
            self.write(o)

    def flush(self) -> None:
        if self.failed is not None:
            raise self.failed
        try:
            self._fh.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise self._refused(exc) from None

    def close(self) -> None:
        """Flush and close; the first refusal is raised here if no write saw it yet. A trace
        that already failed is closed quietly (its error was given)."""
        failed = self.failed
        try:
            if self._own:
                self._fh.close()
            else:
                self._fh.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            if failed is None:
                raise self._refused(exc) from None
        finally:
            if self._own and not self._fh.closed:
                try:
                    self._fh.close()  # close() flushed and failed: the descriptor is still ours
                except (OSError, ValueError):
                    pass


@dataclass
class Trace:
    header: dict
    cycles: list[dict] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)


def read_trace(path: str | Path) -> Trace:
    """Load a trace for replay; a bad line is an error naming the file and line."""
    file = str(path)
    trace: Trace | None = None
    for n, line in enumerate(read_user_file(path, "trace file").split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg} (column {exc.colno})", file=file, line=n) from None
        except RecursionError:
            raise InputError("not JSON this reader accepts: nested too deeply", file=file, line=n) from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise InputError(f"not JSON this reader accepts: {exc}", file=file, line=n) from None
        if not isinstance(obj, dict):
            raise InputError("each line must be a JSON object", file=file, line=n)
        kind = obj.get("type")
        if kind == "header" and obj.get("architecture") == "soar":  # engine/soar/run.py writes these
            raise InputError(f"a Soar run's trace (scenario {obj.get('scenario')!r}, seed {obj.get('seed')!r}): this "
                             "reader replays OODA traces; run it again with `akh-tui agent run --scenario "
                             f"{obj.get('scenario')} --seed {obj.get('seed')}` (the same decisions)", file=file, line=n,
                             field="architecture")
        if kind not in RECORD_TYPES:
            raise InputError(f"unknown record type {kind!r}", file=file, line=n, field="type")
        check_version(obj.get("v"), file, n)  # a newer record is refused by its version (engine/schemas.py)
        if trace is None:
            if kind != "run":
                raise InputError("the first record must be the run header (type 'run')", file=file, line=n, field="type")
            trace = Trace(obj)
        elif kind == "cycle":
            if not isinstance(obj.get("cycle"), int):
                raise InputError("missing or non-integer cycle number", file=file, line=n, field="cycle")
            for key in ("decide", "act", "goals"):
                if not isinstance(obj.get(key), (dict, list)):
                    raise InputError(f"missing '{key}'", file=file, line=n, field=key)
            trace.cycles.append(obj)
        else:
            trace.events.append(obj)
    if trace is None:
        raise InputError("empty trace: no run header", file=file)
    return trace


def records_with_events(items: Iterable[dict]) -> Iterator[tuple[dict | None, list[dict]]]:
    """A branch's trace items as (record, the events after it), the first pair's record None
    (the events before the first cycle). Trace order (SPEC §11, SessionStore.trace_lines) puts a
    cycle's events right after its record and those of cycle 0 before every record, so a reader
    that streams (an export, a report) holds nothing but one cycle."""
    rec: dict | None = None
    events: list[dict] = []
    for it in items:
        kind = it.get("type")
        if kind == "cycle":
            yield rec, events
            rec, events = it, []
        elif kind != "run":
            events.append(it)
    yield rec, events
