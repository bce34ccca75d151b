"""How a value is stored: JSON (the trace's encoder, a registered secret masked), deflated
against the store's preset dictionary for its kind, with a CRC-32 of the stored bytes; and a
goal's seen symbol ids packed for snapshots."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from types import ModuleType
from typing import Any, Iterable

import numpy as np

from .trace import dumps, redact_line


def _fast_deflate() -> tuple[ModuleType, int]:
    """ISA-L's deflate at its fastest level; zlib at its fastest (its 0 stores uncompressed)
    where no isal wheel installs: the same format, about 4x slower."""
    try:
        from isal import isal_zlib
    except ImportError:
        return zlib, 1
    return isal_zlib, 0


_deflate, LEVEL = _fast_deflate()

def store_json(obj: Any) -> str:
    """The trace's encoder (a stored record is the trace's line, byte for byte), a registered
    secret masked: every JSON value the store writes passes here."""
    return redact_line(dumps(obj))


def loads_rows(rows: Iterable[tuple]) -> list:
    """The JSON payloads of (payload,) rows, decoded in one call: a restore reads thousands
    of small rows, and one parse of them joined costs about half of one parse each."""
    return json.loads("[" + ",".join([r[0] for r in rows]) + "]")




# How a value is stored. Records of one store look alike (same keys, the same eleven tools
# scored), so each kind is deflated against a preset dictionary: the store's first value of
# that kind, kept in its meta table (a store always decodes with its own dictionary, whatever
# a later version would pick). A record shrinks from ~5.4 KB of JSON to ~0.9 KB (plain zlib:
# ~1.7 KB). The first byte says which: 0x78 plain zlib, DICT_TAG[kind] raw deflate + dictionary.
# Schema 5 adds a second dictionary for cycle records (tag 4): a steady-state record, taken
# once the store's runs are STEADY_CYCLE cycles in. The first record of a run holds little (an
# empty working memory, no history): later records deflated against it took ~950 B on the demo,
# against the 100th ~400 B, and the smaller output is quicker to make (deflate's time follows
# what it emits as well as what it reads).
DICT_TAG = {"cycle": 1, "state": 2, "event": 3, "cycle.steady": 4}
STEADY_CYCLE = 100
TAG_KIND = {v: k for k, v in DICT_TAG.items()}
WINDOW = 32768  # deflate sees at most the dictionary's last 32 KB


# Written with ISA-L's deflate (python-isal) at its level 0, read back with zlib: the same
# format (a raw deflate stream against the same preset dictionary, or a zlib stream), so a
# store written before reads as ever and one written now reads with zlib alone. On a demo
# record it took 5 µs where zlib's level 1 took 19 µs (zlib was a fifth of recording a cycle),
# for ~470 bytes instead of ~380.
def pack(text: str, zdict: bytes | None = None, kind: str = "cycle") -> tuple[bytes, int]:
    """A JSON text as stored (deflated by ISA-L: a few microseconds) and the CRC-32 of the
    stored bytes."""
    raw = text.encode("utf-8")
    if zdict is None:
        blob = _deflate.compress(raw, LEVEL)
    else:
        c = _deflate.compressobj(LEVEL, zlib.DEFLATED, -15, zdict=zdict)
        blob = bytes([DICT_TAG[kind]]) + c.compress(raw) + c.flush()
    return blob, zlib.crc32(blob)


def unpack(stored: bytes | str, crc: int | None, zdicts: "dict[str, bytes | None] | None" = None) -> str:
    """The JSON text of a stored value; ValueError when its checksum or compression is off.
    A schema-2 row (text, no checksum) is taken as it is (read as bytes: see `_v`)."""
    if isinstance(stored, bytes) and crc is None:
        try:
            stored = stored.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"undecodable ({exc})") from None
    if isinstance(stored, str):
        if crc is not None and zlib.crc32(stored.encode("utf-8")) != crc:
            raise ValueError("checksum mismatch")
        return stored
    if crc is not None and zlib.crc32(stored) != crc:
        raise ValueError("checksum mismatch")
    try:
        kind = TAG_KIND.get(stored[0]) if stored else None
        if kind is None:
            return zlib.decompress(stored).decode("utf-8")
        zdict = (zdicts or {}).get(kind)
        if zdict is None:
            raise ValueError(f"its {kind} dictionary is missing from the store")
        d = zlib.decompressobj(-15, zdict=zdict)
        out = d.decompress(stored[1:]) + d.flush()
        if not d.eof:
            raise ValueError("truncated")
        return out.decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"undecodable ({exc})") from None


PACKED_IDS = 256  # a goal's seen symbols beyond this many are packed in snapshots


def pack_ids(ids: "set[int]") -> "list[int] | dict":
    """A set of symbol ids as a snapshot holds it: a sorted list when small; else packed, the
    gaps between the sorted ids as little-endian 16- or 32-bit integers in base64. On a
    100,000-triple graph a goal sees thousands of symbols, and sorting and writing them as
    JSON numbers was most of a snapshot's cost."""
    if len(ids) <= PACKED_IDS:
        return sorted(ids)
    arr = np.fromiter(ids, dtype=np.int64, count=len(ids))
    arr.sort()
    return _packed(arr)


def _packed(arr: np.ndarray) -> "list[int] | dict":
    """pack_ids of ids already sorted (unique) in an array."""
    if arr[0] < 0 or arr[-1] >= 1 << 32:
        return arr.tolist()  # ids no graph makes: left as a list
    gaps = np.diff(arr, prepend=0)
    dtype = "<u2" if gaps.max() < 1 << 16 else "<u4"
    return {"gaps": dtype, "b64": base64.b64encode(gaps.astype(dtype).tobytes()).decode("ascii")}


class SeenPacker:
    """pack_ids for the goals of one run, snapshot after snapshot. A goal's seen symbols only
    grow, and most snapshots find them as they were, so each goal's last packing is kept with
    a copy of the ids it packed: unchanged, it is reused (one set comparison); grown, only the
    new ids are merged into the sorted array. Whatever happened to the set, the packing is of
    exactly its ids: the new ids plus the copy must make up the whole set, else it is packed
    afresh."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[set[int], np.ndarray, "list[int] | dict"]] = {}

    def pack(self, goal_id: int, ids: "set[int]") -> "list[int] | dict":
        if len(ids) <= PACKED_IDS:
            self._last.pop(goal_id, None)
            return sorted(ids)
        last = self._last.get(goal_id)
        if last is not None:
            copy, arr, packed = last
            if len(ids) == len(copy) and ids == copy:
                return packed
            new = ids - copy
            if len(new) + len(copy) == len(ids):  # it grew: the copy is a subset
                add = np.fromiter(new, dtype=np.int64, count=len(new))
                add.sort()
                arr = np.insert(arr, np.searchsorted(arr, add), add)
                packed = _packed(arr)
                copy |= new
                self._last[goal_id] = (copy, arr, packed)
                return packed
        arr = np.fromiter(ids, dtype=np.int64, count=len(ids))
        arr.sort()
        packed = _packed(arr)
        self._last[goal_id] = (set(ids), arr, packed)
        return packed

    def keep_only(self, goal_ids: "Iterable[int]") -> None:
        """Forget goals that are gone (a rewind, another branch)."""
        keep = set(goal_ids)
        for gid in [g for g in self._last if g not in keep]:
            del self._last[gid]


def unpack_ids(packed: dict) -> list[int]:
    """pack_ids's packed form back to the sorted ids; ValueError when it is malformed."""
    if packed.get("gaps") not in ("<u2", "<u4"):
        raise ValueError(f"unknown packed ids {packed.get('gaps')!r}")
    try:
        gaps = np.frombuffer(base64.b64decode(packed["b64"], validate=True), dtype=packed["gaps"])
    except (binascii.Error, TypeError) as exc:
        raise ValueError(f"packed ids unreadable ({exc})") from None
    return np.cumsum(gaps, dtype=np.int64).tolist()

