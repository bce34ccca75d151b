"""Issue 29: every record, event and stored state is encoded by orjson (quicker) with the
standard library's bytes: the values where the two differ go to the standard encoder, and a
NaN or an infinity is null whichever encoder writes it (a trace line is always JSON)."""

from __future__ import annotations

import enum
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from akh_tui.engine.store.trace import dumps


def _json(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class Mood(str, enum.Enum):
    calm = "calm"


class Level(enum.IntEnum):
    high = 3


def test_the_values_where_orjson_writes_otherwise_get_the_standard_bytes():
    values = [1e-05, -3.4e-05, 1e-07, 8.2e-09, 0.0001, 1e-10, 5e-324, 1e16, 1.5e+16, 0.1 + 0.2, -0.0,
              2 ** 63, 2 ** 64, -(2 ** 70), "0.00001 e-5", "\x00\x1f\x7f\u2028\u00e9\U0001f600\"\\",
              {1: "int key", True: "bool key", None: "none key", 2.5: "float key"}, (1, 2), [Mood.calm, Level.high],
              {"nested": [{"score": 6.7e-05, "tool": "kg_query"}], "k": [None, True, False]}]
    for v in values:
        assert dumps(v) == _json(v), v
    assert dumps({"a": [1e-05]}) == '{"a":[1e-05]}'  # what json writes, not orjson's 0.00001
    assert dumps(2 ** 64) == "18446744073709551616"  # beyond orjson's 64 bits


def test_exponents_are_told_from_words_and_int_keys_still_take_orjson(monkeypatch):
    from akh_tui.engine.store import trace

    tricky = [{"strategy": "explore-first", "x": 2.5e-08}, ["e-1", "1e-7x", 3e-07], {"w": "type-5"}, "0e-1", 1e-07,
              {"s": "explore-first", "score": 0.25}, {"e-": 7.1e-06}, {1: 4e-08, "a": "re-do"}]
    for v in tricky:
        assert dumps(v) == _json(v), v
    # an ordinary record (words with "e-", int keys) is orjson's alone: the standard encoder
    # is not called for it
    monkeypatch.setattr(trace, "_standard", lambda obj: (_ for _ in ()).throw(AssertionError("standard path")))
    for v in ({"strategy": "explore-first", "score": 0.5675, "rates": {"reason": 0.75}}, {3: "goal", 12: [1.5, "e-mail"]}):
        assert dumps(v) == _json(v)


def test_a_nan_or_an_infinity_is_null_from_either_encoder():
    assert dumps({"x": math.nan, "y": [math.inf, -math.inf], "z": 1.0}) == '{"x":null,"y":[null,null],"z":1.0}'
    # the standard path (a value orjson refuses sits beside the NaN) writes the same
    assert dumps({"x": math.nan, "big": 2 ** 64}) == '{"x":null,"big":18446744073709551616}'
    assert dumps({"x": math.nan, "small": 1e-05}) == '{"x":null,"small":1e-05}'


def test_what_json_refused_is_still_refused():
    for bad in (object(), {"s": {1, 2}}, b"bytes"):
        try:
            dumps(bad)
        except TypeError:
            continue
        raise AssertionError(f"{bad!r} was encoded")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 80), max_value=2 ** 80)
    | st.floats(allow_nan=False, allow_infinity=False) | st.floats(min_value=1e-12, max_value=1e-3)
    | st.text(),
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=8), kids, max_size=5)
    | st.dictionaries(st.integers(min_value=-9, max_value=9), kids, max_size=3),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_any_json_value_gets_the_standard_bytes(value):
    try:
        expected = _json(value)
    except UnicodeEncodeError:  # (lone surrogates: neither encoder's output is text)
        return
    assert dumps(value) == expected


def test_a_packed_value_is_deflate_that_zlib_reads_and_values_packed_by_zlib_still_unpack():
    """Values are deflated by ISA-L (issue 29) in zlib's format: zlib alone reads what is
    written now, and what zlib wrote (every store before) unpacks as before."""
    import zlib

    from akh_tui.engine.store.codec import DICT_TAG, pack, unpack

    zdict = dumps({"type": "cycle", "decide": {"tool": "kg_query", "candidates": [{"score": 0.5}] * 3}}).encode()
    text = dumps({"type": "cycle", "decide": {"tool": "reason", "candidates": [{"score": 0.25, "input": "é"}] * 3}})
    blob, crc = pack(text, zdict, "cycle.steady")
    assert blob[0] == DICT_TAG["cycle.steady"] and crc == zlib.crc32(blob)
    d = zlib.decompressobj(-15, zdict=zdict)
    assert (d.decompress(blob[1:]) + d.flush()).decode() == text
    assert unpack(blob, crc, {"cycle.steady": zdict}) == text
    plain, plain_crc = pack(text)
    assert zlib.decompress(plain).decode() == text == unpack(plain, plain_crc)
    c = zlib.compressobj(1, zlib.DEFLATED, -15, zdict=zdict)  # as a store of 0.3 packed it
    old = bytes([DICT_TAG["cycle.steady"]]) + c.compress(text.encode()) + c.flush()
    assert unpack(old, zlib.crc32(old), {"cycle.steady": zdict}) == text
    z = zlib.compress(text.encode(), 1)
    assert unpack(z, zlib.crc32(z)) == text


def test_without_isal_zlib_writes_what_every_reader_reads(monkeypatch):
    """No isal wheel for a platform: the store still writes (zlib's fastest level, not its
    level 0, which would store uncompressed) and reads back the same text."""
    import builtins

    from akh_tui.engine.store import codec

    real = builtins.__import__

    def no_isal(name, *a, **k):
        if name.startswith("isal"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_isal)
    deflate, level = codec._fast_deflate()
    assert deflate.__name__ == "zlib" and level == 1
    monkeypatch.setattr(codec, "_deflate", deflate)
    monkeypatch.setattr(codec, "LEVEL", level)
    text = '{"type": "cycle", "cycle": 1, "note": "' + "the same words again " * 20 + '"}'
    for zdict in (None, b"the same words again"):
        blob, crc = codec.pack(text, zdict)
        assert len(blob) < len(text) // 3  # compressed, not stored
        assert codec.unpack(blob, crc, {"cycle": zdict}) == text
