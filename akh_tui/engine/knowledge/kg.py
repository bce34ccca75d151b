"""The knowledge graph (SPEC §2): symbols, triples, and the indexes that keep lookups O(1).

The store is its own, plain dicts and lists: one Triple (a named tuple) per (s, p, o), kept
under its (subject, predicate) key, and the indexes the hot path needs: label → id, normalised
label → ids, normalised token → ids, (predicate, object) → subjects, predicate → triples, and
the triples out of and into each symbol. Nothing on the per-cycle path iterates over all
triples or all symbols. (It was a networkx MultiDiGraph beside these indexes: half of a
million-triple load and a gigabyte of memory for a neighbour test, now a set built for the
few symbols that are asked about.) Pair keys are packed into one int (``a << 32 | b``), about
half a tuple's size: a million-triple graph holds a million of them per index.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence, overload

from ..errors import InputError, open_user_file, user_file_lines
from ..text import normalised_words

METADATA_PREFIXES = (
    "goal:", "agent:", "episode:", "desc:", "status:", "priority:", "criteria:", "summary:", "tag:",
)
KINDS = ("entity", "relation", "goal", "episode", "meta")


_EMPTY: list = []
_SHIFT = 32  # pair keys: (a << _SHIFT) | b; symbol ids stay far below 2**32


# The id indexes (label key, token, (s,p) and (p,o) -> ids) hold a bare int while a key has one
# id, and a list from the second on: most keys of a big graph have one (an entity's (s, p)),
# and a one-element list costs 72 bytes more than the int it holds.
def _push(index: dict, key, value: int) -> None:
    cur = index.get(key)
    if cur is None:
        index[key] = value
    elif cur.__class__ is list:
        cur.append(value)
    else:
        index[key] = [cur, value]


# (s, p) -> its triples, the store itself (there is no separate table of all triples): one
# Triple while (s, p) has one object, a list up to _SMALL, then a dict object -> Triple
# (insertion-ordered, so objects keep the order they were added in).
_SMALL = 8


def _find(cur: Any, o: int) -> "Triple | None":
    """The triple of `cur` (an _sp value) whose object is o, or None."""
    cls = cur.__class__
    if cls is Triple:
        return cur if cur[2] == o else None
    if cls is list:
        for t in cur:
            if t[2] == o:
                return t
        return None
    return cur.get(o)


def _pop(index: dict, key, value: int) -> None:
    """Undo the last `_push(index, key, value)`: value is the newest id of key."""
    cur = index[key]
    if cur.__class__ is list:
        if cur[-1] != value:
            raise ValueError(f"index out of order: {value} is not the newest id of {key!r}")
        cur.pop()
        if len(cur) == 1:
            index[key] = cur[0]
    elif cur == value:
        del index[key]
    else:
        raise ValueError(f"index out of order: {value} is not the newest id of {key!r}")


def _ids(value: Any) -> list[int]:
    if value is None:
        return _EMPTY
    return value if value.__class__ is list else [value]


def _copy_ids(index: dict) -> dict:
    """A copy of an id index (see _push): the ints shared, each list copied."""
    out = index.copy()
    for k, v in out.items():
        if v.__class__ is list:
            out[k] = v.copy()
    return out


def _copy_lists(index: list) -> list:
    """A copy of a per-symbol index (a list of None or a list of Triples), each list copied."""
    out = index.copy()
    for i, v in enumerate(out):
        if v is not None:
            out[i] = v.copy()
    return out


def is_metadata_label(label: str) -> bool:
    return label.startswith(METADATA_PREFIXES)


@dataclass(slots=True)
class Symbol:
    id: int
    label: str
    kind: str
    meta: bool
    key: str  # normalised label (SPEC §8), used to match goal words


class Triple(NamedTuple):
    """An immutable triple. A named tuple rather than a frozen dataclass: making one is five
    times cheaper (a frozen dataclass sets each field through object.__setattr__), which is
    a fifth of a million-triple load, and fields read as fast. Equality and hashing cover the
    first six fields, not `seq` (as the dataclass's compare=False did)."""

    subject: int
    predicate: int
    object: int
    confidence: float = 1.0
    provenance: str = "asserted"  # asserted | inferred:<rule> | tool:<name> | user
    cycle: int = 0
    # position in KnowledgeGraph.log; not part of equality (two graphs built alike hold equal
    # triples). infer_rules bounds a join to the log as it was when the join began.
    seq: int = -1

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.subject, self.predicate, self.object)

    def __eq__(self, other: Any) -> bool:  # (`object` is a field's name in here)
        if other.__class__ is not Triple:
            return NotImplemented
        return self[:6] == other[:6]

    def __ne__(self, other: Any) -> bool:
        if other.__class__ is not Triple:
            return NotImplemented
        return self[:6] != other[:6]

    def __hash__(self) -> int:
        return hash(self[:6])


_new_triple = tuple.__new__  # _new_triple(Triple, fields): Triple(...) without the keyword handling


@dataclass(frozen=True, slots=True)
class ParsedTriple:
    subject: str
    predicate: str
    object: str
    confidence: float
    file: str
    line: int


def iter_triple_lines(lines: Iterable[str], file: str) -> Iterator[tuple[str, str, str, float, int]]:
    """(subject, predicate, object, confidence, line number) of each triple line, in order.

    Raises InputError naming the file and line of the first malformed line."""
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) not in (3, 4):
            raise InputError(
                f"expected 3 or 4 tab-separated fields (subject, predicate, object[, confidence]),"
                f" found {len(parts)}: {line[:60]!r}",
                file=file, line=n,
            )
        s, p, o = parts[0].strip(), parts[1].strip(), parts[2].strip()
        if not (s and p and o):
            for name, value in zip(("subject", "predicate", "object"), (s, p, o)):
                if not value:
                    raise InputError("is empty", file=file, line=n, field=name)
        conf = 1.0
        if len(parts) == 4:
            try:
                conf = float(parts[3])
            except ValueError:
                raise InputError(
                    f"not a number: {parts[3]!r}", file=file, line=n, field="confidence"
                ) from None
            if not 0.0 <= conf <= 1.0:
                raise InputError(
                    f"must be in [0, 1], got {conf}", file=file, line=n, field="confidence"
                )
        yield s, p, o, conf, n


def parse_triple_lines(lines: Iterable[str], file: str) -> list[ParsedTriple]:
    """Parse `subject<TAB>predicate<TAB>object[<TAB>confidence]` lines; `#` starts a comment.

    Raises InputError naming the file and line of the first malformed line.
    """
    return [ParsedTriple(s, p, o, conf, file, n) for s, p, o, conf, n in iter_triple_lines(lines, file)]


# A triple file is parsed whole before anything is added (all or nothing), so its size is
# capped: a 1M-line file once took 2.8 GB. The bench's large graph has 100,000 triples.
MAX_TRIPLE_LINES = 200_000
MAX_TRIPLE_BYTES = 32 * 1024 * 1024


def read_triple_file(path: Path, used: list[int] | None = None) -> list[ParsedTriple]:
    """Parse a triple file. `used` ([lines, bytes]) carries the caps across the files of one
    load (read_triple_files): they cover those files together."""
    # read a line at a time, never the whole text: peak memory is the parsed triples.
    # "\n" only: splitlines() would also break at \x0c, \x1c, \u2028 ... inside a label,
    # and number the lines differently from an editor.
    note = " (the triple files of a scenario together)" if used is not None else ""
    lines = user_file_lines(path, "triple file", MAX_TRIPLE_BYTES, MAX_TRIPLE_LINES, used, note)
    return parse_triple_lines(lines, str(path))


def read_triple_files(paths: Iterable[Path]) -> list[ParsedTriple]:
    """Every file parsed before anything is added (all or nothing), under one pair of caps."""
    parsed: list[ParsedTriple] = []
    used = [0, 0]
    for p in paths:
        parsed.extend(read_triple_file(Path(p), used))
    return parsed


def _whole_file_lines(path, used: list[int], max_lines: int, max_bytes: int) -> Iterator[str] | None:
    """The lines of a triple file read whole (a third of the cost of reading it a line at a
    time), when it is within the caps and UTF-8; None otherwise, so that `user_file_lines`
    reads it again and refuses it at the line where it goes wrong, as it always has. The same
    lines either way: split at "\n" only, a CR before it dropped. Updates `used` as that does."""
    with open_user_file(path, "triple file") as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if used[1] + size > max_bytes:
                return None
            raw = fh.read(size + 1)
        except OSError:
            return None
    if len(raw) != size:  # it changed while read (or is not a plain file): read it by lines
        return None
    n_lines = raw.count(b"\n") + (0 if raw.endswith(b"\n") or not raw else 1)
    if used[1] + len(raw) > max_bytes or used[0] + n_lines > max_lines:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    used[0] += n_lines
    used[1] += len(raw)
    del raw
    return _split_lines(text)


def _split_lines(text: str) -> Iterator[str]:
    start, find = 0, text.find
    while True:
        end = find("\n", start)
        if end < 0:
            if start < len(text):
                yield text[start:]
            return
        yield text[start:end - 1] if end > start and text[end - 1] == "\r" else text[start:end]
        start = end + 1


class PairsView(Sequence[tuple[int, int]]):
    """(subject, object) of each triple of a list, read on demand."""

    __slots__ = ("_triples",)

    def __init__(self, triples: list[Triple]) -> None:
        self._triples = triples

    def __len__(self) -> int:
        return len(self._triples)

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [(t[0], t[2]) for t in self._triples[i]]
        t = self._triples[i]
        return (t[0], t[2])

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for t in self._triples:
            yield (t[0], t[2])


class KnowledgeGraph:
    def __init__(self) -> None:
        self.symbols: list[Symbol] = []
        self._by_label: dict[str, int] = {}
        # these hold an int or a list of ints (see _push; Any: a class test tells them apart)
        self._by_key: dict[str, Any] = {}
        self._by_token: dict[str, Any] = {}
        # (s << 32 | p) -> Triple | list[Triple] | dict[object, Triple] (see _find): the store
        self._sp: dict[int, Any] = {}
        self._count = 0
        self._po: dict[int, Any] = {}  # (p << 32 | o) -> subjects, insertion order
        # indexed by symbol id (None: no triple yet), lists being cheaper than dicts to look
        # up and to hold when nearly every symbol has an entry
        self._by_p: list[list[Triple] | None] = []
        # non-metadata triples out of / into each symbol, insertion order: what the hot path
        # reads (adjacency, activation, K); metadata triples are kept apart (few, rarely read)
        self._out: list[list[Triple] | None] = []
        self._in: list[list[Triple] | None] = []
        self._meta_out: dict[int, list[Triple]] = {}
        self._meta_ids: set[int] = set()  # metadata symbols (few): what makes a triple metadata
        self._meta_in: dict[int, list[Triple]] = {}
        # Copy-on-write (see `copy`): after a copy, the two graphs share the lists of _out and
        # _in and the list or dict values of _sp, and each writes only into a container it
        # made or copied itself, marked here. None: every container is this graph's own.
        self._own_out: bytearray | None = None  # by symbol id: 1 = _out[sid] is our own
        self._own_in: bytearray | None = None
        self._own_sp: set[int] | None = None  # _sp keys whose list or dict is our own
        # neighbour sets (either direction, metadata included), built for a symbol the first
        # time is_neighbour asks about it and kept up to date after: a set for every symbol of
        # a big graph would cost more than the rest of the graph
        self._nbrs: dict[int, set[int]] = {}
        # every triple in insertion order: the agenda of infer_rules and the log of additions
        self.log: list[Triple] = []
        # derivations of inferred triples: key -> (rule name, premise keys)
        self.derivations: dict[tuple[int, int, int], tuple[str, tuple[tuple[int, int, int], ...]]] = {}
        self.listeners: list[Callable[[Triple], None]] = []
        self.symbol_version = 0  # bumps when a symbol is added (invalidates goal-symbol caches)
        self.non_meta_count = 0

    # ---- symbols -------------------------------------------------------------------------
    def symbol(self, label: str, kind: str | None = None) -> int:
        """Id of the symbol with this label, created if new."""
        sid = self._by_label.get(label)
        if sid is not None:
            return sid
        meta = is_metadata_label(label)
        if kind is None:
            kind = "meta" if meta else "entity"
        sid = len(self.symbols)
        words = normalised_words(label)
        key = " ".join(words)  # label_key(label), without splitting the label twice
        self.symbols.append(Symbol(sid, label, kind, meta, key))
        self._by_label[label] = sid
        self._out.append(None)
        self._in.append(None)
        self._by_p.append(None)
        if self._own_out is not None:
            self._own_out.append(1)  # its lists, when it gets any, are made here
            self._own_in.append(1)  # type: ignore[union-attr]  # set together
        if meta:
            self._meta_ids.add(sid)
        else:
            if kind == "entity":
                _push(self._by_key, key, sid)
            for tok in (dict.fromkeys(words) if len(words) > 1 else words):
                _push(self._by_token, tok, sid)
        self.symbol_version += 1
        return sid

    def lookup(self, label: str) -> int | None:
        return self._by_label.get(label)

    def label(self, sid: int) -> str:
        return self.symbols[sid].label

    def by_key(self, key: str) -> list[int]:
        """Entity symbols whose normalised label equals `key`."""
        return _ids(self._by_key.get(key))

    def by_token(self, token: str) -> list[int]:
        return _ids(self._by_token.get(token))

    def __len__(self) -> int:
        return self._count

    # ---- triples -------------------------------------------------------------------------
    def add(
        self,
        subject: str | int,
        predicate: str | int,
        obj: str | int,
        confidence: float = 1.0,
        provenance: str = "asserted",
        cycle: int = 0,
    ) -> Triple | None:
        """Add a triple; returns it, or None if (s, p, o) was already known."""
        s = subject if isinstance(subject, int) else self.symbol(subject)
        p = predicate if isinstance(predicate, int) else self.symbol(predicate, "relation")
        o = obj if isinstance(obj, int) else self.symbol(obj)
        k = (s << _SHIFT) | p
        cur = self._sp.get(k)
        if cur is not None and _find(cur, o) is not None:
            return None
        t = _new_triple(Triple, (s, p, o, float(confidence), provenance, cycle, len(self.log)))
        self._store(k, cur, t)
        self._index(t)
        for fn in self.listeners:
            fn(t)
        return t

    def _store(self, k: int, cur, t: Triple) -> None:
        """Put a new triple under its (s, p) key k, whose value was cur (`load_rows` inlines this)."""
        self._count += 1
        if cur is None:
            self._sp[k] = t
        elif cur.__class__ is Triple:
            self._sp[k] = [cur, t]
            if self._own_sp is not None:
                self._own_sp.add(k)
        elif cur.__class__ is list:
            if len(cur) < _SMALL:
                self._own_sp_value(k, cur).append(t)
            else:
                d = {x[2]: x for x in cur}
                d[t[2]] = t
                self._sp[k] = d
                if self._own_sp is not None:
                    self._own_sp.add(k)
        else:
            self._own_sp_value(k, cur)[t[2]] = t

    def _own_sp_value(self, k: int, cur: Any) -> Any:
        """cur, the list or dict at _sp[k], as a container this graph may write into: a copy
        of it put in its place when it may be shared with a graph copied to or from."""
        own = self._own_sp
        if own is None or k in own:
            return cur
        cur = self._sp[k] = cur.copy()
        own.add(k)
        return cur

    def _index(self, t: Triple) -> None:
        """Enter a new, stored triple in every other index (`load_rows` inlines the same steps)."""
        s, p, o = t.subject, t.predicate, t.object
        _push(self._po, (p << _SHIFT) | o, s)
        lst = self._by_p[p]
        if lst is None:
            self._by_p[p] = [t]
        else:
            lst.append(t)
        self.log.append(t)
        meta = self._meta_ids
        if meta and (s in meta or p in meta or o in meta):
            self._meta_out.setdefault(s, []).append(t)
            self._meta_in.setdefault(o, []).append(t)
        else:
            self.non_meta_count += 1
            own = self._own_out
            lst = self._out[s]
            if lst is None:
                self._out[s] = [t]
                if own is not None:
                    own[s] = 1
            elif own is None or own[s]:
                lst.append(t)
            else:  # shared with a copy: ours is a new list
                self._out[s] = lst + [t]
                own[s] = 1
            own = self._own_in
            lst = self._in[o]
            if lst is None:
                self._in[o] = [t]
                if own is not None:
                    own[o] = 1
            elif own is None or own[o]:
                lst.append(t)
            else:
                self._in[o] = lst + [t]
                own[o] = 1
        if self._nbrs:
            nb = self._nbrs.get(s)
            if nb is not None:
                nb.add(o)
            nb = self._nbrs.get(o)
            if nb is not None:
                nb.add(s)

    # ---- copy ----------------------------------------------------------------------------
    def copy(self) -> "KnowledgeGraph":
        """A graph that answers every query as this one does, and that either can change
        without the other seeing it. The immutable Symbols and Triples are shared. So are,
        copy-on-write, the biggest part of the store: the triples out of and into each symbol
        and the (s, p) lists, which each graph copies the first time it writes into one
        (`_own_out`, `_own_in`, `_own_sp`). Every other index is copied. Building a
        100,000-triple graph again from its files (every label normalised, every index
        filled) takes half a second; copying every list took 30-40 ms in a long run's heap
        (a pointer chase through scattered triples); this takes about 12. A run's first
        rewind starts from a copy of the live graph (basegraph.py). No listeners; the
        neighbour-set cache starts empty (rebuilt when asked)."""
        new = KnowledgeGraph()
        new.symbols = self.symbols.copy()
        new._by_label = self._by_label.copy()
        new._by_key = _copy_ids(self._by_key)
        new._by_token = _copy_ids(self._by_token)
        new._sp = self._sp.copy()
        new._count = self._count
        new._po = _copy_ids(self._po)
        new._by_p = _copy_lists(self._by_p)
        new._out = self._out.copy()
        new._in = self._in.copy()
        n = len(self.symbols)
        for g in (self, new):  # neither may write into a container the other holds now
            g._own_out, g._own_in, g._own_sp = bytearray(n), bytearray(n), set()
        new._meta_out = {k: v.copy() for k, v in self._meta_out.items()}
        new._meta_ids = self._meta_ids.copy()
        new._meta_in = {k: v.copy() for k, v in self._meta_in.items()}
        new.log = self.log.copy()
        new.derivations = self.derivations.copy()  # values are tuples of tuples
        new.symbol_version = self.symbol_version
        new.non_meta_count = self.non_meta_count
        return new

    def _unshare(self) -> None:
        """Make every container this graph may share with a copy its own (see `copy`)."""
        own_out, own_in, own_sp = self._own_out, self._own_in, self._own_sp
        if own_out is None or own_in is None or own_sp is None:
            return
        self._out = [v if v is None or own_out[i] else v.copy() for i, v in enumerate(self._out)]
        self._in = [v if v is None or own_in[i] else v.copy() for i, v in enumerate(self._in)]
        sp = self._sp
        for k, v in sp.items():
            if v.__class__ is not Triple and k not in own_sp:
                sp[k] = v.copy()
        self._own_out = self._own_in = self._own_sp = None

    # ---- undo ----------------------------------------------------------------------------
    def truncate(self, n_symbols: int, n_triples: int) -> list[Triple]:
        """Undo every addition after the first `n_symbols` symbols and `n_triples` triples,
        newest first, leaving each index exactly as a graph that never had them (the same
        representations: an int, a Triple, a short list). A rewind restores the scenario's
        base graph this way instead of loading it again (history.py). Derivations of the
        removed triples go with them; neighbour sets they touched are dropped (rebuilt when
        asked). Listeners are not told. Returns the removed triples, oldest first."""
        if not 0 <= n_symbols <= len(self.symbols) or not 0 <= n_triples <= len(self.log):
            raise ValueError(f"cannot truncate {len(self.symbols)} symbols and {len(self.log)} triples "
                             f"to {n_symbols} and {n_triples}")
        removed = self.log[n_triples:]
        for t in reversed(removed):
            self._unindex(t)
        del self.log[n_triples:]
        for sid in range(len(self.symbols) - 1, n_symbols - 1, -1):
            self._unsymbol(sid)
        if removed or len(self.symbols) != n_symbols:
            self.symbol_version += 1  # never back: a goal-symbol cache of the longer graph is stale
        return removed

    def _unindex(self, t: Triple) -> None:
        """Undo `_store` and `_index` of t, the newest triple."""
        s, p, o = t[0], t[1], t[2]
        k = (s << _SHIFT) | p
        cur = self._sp[k]
        cls = cur.__class__
        if cls is Triple:
            del self._sp[k]
        elif cls is list:
            if len(cur) == 2:
                self._sp[k] = cur[0]
            else:
                self._own_sp_value(k, cur).pop()
        elif len(cur) == _SMALL + 1:  # it became a dict when the (_SMALL + 1)th object came
            self._sp[k] = [x for x in cur.values() if x[2] != o]
        else:
            del self._own_sp_value(k, cur)[o]
        self._count -= 1
        _pop(self._po, (p << _SHIFT) | o, s)
        lst = self._by_p[p]
        lst.pop()  # type: ignore[union-attr]
        if not lst:
            self._by_p[p] = None
        meta = self._meta_ids
        if meta and (s in meta or p in meta or o in meta):
            for index, sid in ((self._meta_out, s), (self._meta_in, o)):
                lst = index[sid]
                lst.pop()
                if not lst:
                    del index[sid]
        else:
            self.non_meta_count -= 1
            for index2, own, sid in ((self._out, self._own_out, s), (self._in, self._own_in, o)):
                lst = index2[sid]
                assert lst is not None
                if len(lst) == 1:
                    index2[sid] = None
                elif own is None or own[sid]:
                    lst.pop()
                else:  # shared with a copy: ours is a new list
                    index2[sid] = lst[:-1]
                    own[sid] = 1
        self._nbrs.pop(s, None)
        self._nbrs.pop(o, None)
        self.derivations.pop((s, p, o), None)

    def _unsymbol(self, sid: int) -> None:
        """Undo `symbol` of sid, the newest symbol (its triples removed already)."""
        if self._out[sid] or self._in[sid] or self._by_p[sid] or sid in self._meta_out or sid in self._meta_in:
            raise ValueError(f"symbol {sid} still has triples: the sizes do not match the graph's history")
        sym = self.symbols.pop()
        del self._by_label[sym.label]
        self._out.pop()
        self._in.pop()
        self._by_p.pop()
        if self._own_out is not None:
            self._own_out.pop()
            self._own_in.pop()  # type: ignore[union-attr]  # set together
        self._nbrs.pop(sid, None)
        if sym.meta:
            self._meta_ids.discard(sid)
            return
        if sym.kind == "entity":
            _pop(self._by_key, sym.key, sid)
        words = normalised_words(sym.label)
        for tok in (dict.fromkeys(words) if len(words) > 1 else words):
            _pop(self._by_token, tok, sid)

    def get(self, s: int, p: int, o: int) -> Triple | None:
        cur = self._sp.get((s << _SHIFT) | p)
        return None if cur is None else _find(cur, o)

    def objects(self, s: int, p: int) -> list[int]:
        """Objects of (s, p, ·), insertion order (do not mutate)."""
        cur = self._sp.get((s << _SHIFT) | p)
        if cur is None:
            return _EMPTY
        cls = cur.__class__
        if cls is Triple:
            return [cur[2]]
        if cls is list:
            return [t[2] for t in cur]
        return list(cur)

    def subjects(self, p: int, o: int) -> list[int]:
        """Subjects of (·, p, o), insertion order (do not mutate)."""
        return _ids(self._po.get((p << _SHIFT) | o))

    def by_predicate(self, p: int) -> "PairsView":
        """(subject, object) pairs of every triple with predicate p, in insertion order: a live
        view of the predicate's triples (grows as they are added; do not mutate), so no pair
        is made until it is read and a caller that stops early pays for what it read."""
        return PairsView(self.triples_by_predicate(p))

    def triples_by_predicate(self, p: int) -> list[Triple]:
        """Every triple with predicate p, in insertion order (do not mutate)."""
        return self._by_p[p] or _EMPTY

    def is_meta_triple(self, t: Triple) -> bool:
        sy = self.symbols
        return sy[t.subject].meta or sy[t.predicate].meta or sy[t.object].meta

    def out_triples(self, s: int) -> Iterator[Triple]:
        """Every triple out of s, metadata included."""
        yield from self._out[s] or _EMPTY
        yield from self._meta_out.get(s, _EMPTY)

    def in_triples(self, o: int) -> Iterator[Triple]:
        """Every triple into o, metadata included."""
        yield from self._in[o] or _EMPTY
        yield from self._meta_in.get(o, _EMPTY)

    def facts_out(self, sid: int) -> list[Triple]:
        """Non-metadata triples out of a symbol (do not mutate)."""
        return self._out[sid] or _EMPTY

    def facts_in(self, sid: int) -> list[Triple]:
        return self._in[sid] or _EMPTY

    def adjacent(self, sid: int, limit: int | None = None) -> list[Triple]:
        """Non-metadata triples out of and into a symbol, out first, insertion order."""
        out = self._out[sid] or _EMPTY
        inn = self._in[sid] or _EMPTY
        if limit is None:
            return out + inn
        if len(out) >= limit:
            return out[:limit]
        return out + inn[: limit - len(out)]

    def adjacent_count(self, sid: int) -> int:
        out, inn = self._out[sid], self._in[sid]
        return (len(out) if out else 0) + (len(inn) if inn else 0)

    def neighbours(self, sid: int) -> set[int]:
        """Symbols one triple away from sid, either direction, metadata included (do not mutate)."""
        nb = self._nbrs.get(sid)
        if nb is None:
            nb = {t.object for t in self.out_triples(sid)}
            nb.update(t.subject for t in self.in_triples(sid))
            self._nbrs[sid] = nb
        return nb

    def is_neighbour(self, a: int, b: int) -> bool:
        return b in self.neighbours(a)

    def text(self, t: Triple) -> str:
        sy = self.symbols
        return f"{sy[t.subject].label} {sy[t.predicate].label} {sy[t.object].label}"

    def load_parsed(self, parsed: Iterable[ParsedTriple], provenance: str = "asserted", cycle: int = 0) -> int:
        n = 0
        for pt in parsed:
            if self.add(pt.subject, pt.predicate, pt.object, pt.confidence, provenance, cycle):
                n += 1
        return n

    def load_rows(self, rows: Iterable[tuple[str, str, str, float, int]]) -> int:
        """Add asserted triples from `iter_triple_lines` rows; the number that were new.

        `add` and `_index` inlined with their lookups hoisted out of the loop: this is a
        million-triple load's loop (tests/engine/knowledge/test_kg.py checks both build the same indexes).
        `len()` and `non_meta_count` catch up when the load ends (listeners see them lag)."""
        self._unshare()  # the loop below writes into the symbols' lists itself
        n = 0
        by_label, symbol = self._by_label, self.symbol
        sp, po, by_p, log = self._sp, self._po, self._by_p, self.log
        log_append = log.append
        listeners, nbrs, shift, store = self.listeners, self._nbrs, _SHIFT, self._store
        out, inn, meta = self._out, self._in, self._meta_ids
        fresh = non_meta = 0  # counted here, added to the graph's counts at the end
        try:
            for s_label, p_label, o_label, conf, _line in rows:
                s = by_label.get(s_label)
                if s is None:
                    s = symbol(s_label)
                p = by_label.get(p_label)
                if p is None:
                    p = symbol(p_label, "relation")
                o = by_label.get(o_label)
                if o is None:
                    o = symbol(o_label)
                k = (s << shift) | p
                cur = sp.get(k)
                if cur is None:
                    t = sp[k] = _new_triple(Triple, (s, p, o, conf, "asserted", 0, len(log)))
                    fresh += 1
                else:
                    if _find(cur, o) is not None:
                        continue
                    t = _new_triple(Triple, (s, p, o, conf, "asserted", 0, len(log)))
                    store(k, cur, t)
                k = (p << shift) | o
                cur = po.get(k)
                if cur is None:
                    po[k] = s
                elif cur.__class__ is list:
                    cur.append(s)
                else:
                    po[k] = [cur, s]
                lst = by_p[p]
                if lst is None:
                    by_p[p] = [t]
                else:
                    lst.append(t)
                log_append(t)
                if meta and (s in meta or p in meta or o in meta):
                    self._meta_out.setdefault(s, []).append(t)
                    self._meta_in.setdefault(o, []).append(t)
                else:
                    non_meta += 1
                    lst = out[s]
                    if lst is None:
                        out[s] = [t]
                    else:
                        lst.append(t)
                    lst = inn[o]
                    if lst is None:
                        inn[o] = [t]
                    else:
                        lst.append(t)
                if nbrs:
                    for a, b in ((s, o), (o, s)):
                        nb = nbrs.get(a)
                        if nb is not None:
                            nb.add(b)
                if listeners:
                    for fn in listeners:
                        fn(t)
                n += 1
        finally:
            self._count += fresh
            self.non_meta_count += non_meta
        return n

    def add_saved(self, rows: Iterable[Sequence[Any]]) -> int:
        """Add saved triples, as `cycle/state.triple_row` writes them: (subject, predicate,
        object ids, confidence, provenance, cycle, derivation or None), in order: what a restore
        adds back (`add` of each, its derivation set when it was new). The number that were new.

        `add`, `_store` and `_index` inlined, copy-on-write kept (a world's agents restore into
        copies of one base graph, kg.copy): a rewind of a world adds back every agent it loads
        (tests/engine/knowledge/test_kg.py checks it builds what `add` builds)."""
        n = 0
        sp, po, by_p, log, derivations = self._sp, self._po, self._by_p, self.log, self.derivations
        out, inn, meta, nbrs, listeners = self._out, self._in, self._meta_ids, self._nbrs, self.listeners
        own_out, own_in, own_sp = self._own_out, self._own_in, self._own_sp
        shift, small, store = _SHIFT, _SMALL, self._store
        for s, p, o, conf, prov, cyc, deriv in rows:
            k = (s << shift) | p
            cur = sp.get(k)
            if cur is None:
                t = sp[k] = _new_triple(Triple, (s, p, o, float(conf), prov, cyc, len(log)))
                self._count += 1
            else:
                if _find(cur, o) is not None:
                    continue
                t = _new_triple(Triple, (s, p, o, float(conf), prov, cyc, len(log)))
                if cur.__class__ is list and len(cur) < small and (own_sp is None or k in own_sp):
                    cur.append(t)  # (the common case of `_store`, a list of its own)
                    self._count += 1
                else:
                    store(k, cur, t)
            pk = (p << shift) | o
            ids = po.get(pk)
            if ids is None:
                po[pk] = s
            elif ids.__class__ is list:
                ids.append(s)
            else:
                po[pk] = [ids, s]
            lst = by_p[p]
            if lst is None:
                by_p[p] = [t]
            else:
                lst.append(t)
            log.append(t)
            if meta and (s in meta or p in meta or o in meta):
                self._meta_out.setdefault(s, []).append(t)
                self._meta_in.setdefault(o, []).append(t)
            else:
                self.non_meta_count += 1
                lst = out[s]
                if lst is None:
                    out[s] = [t]
                    if own_out is not None:
                        own_out[s] = 1
                elif own_out is None or own_out[s]:
                    lst.append(t)
                else:  # shared with a copy: ours is a new list
                    out[s] = lst + [t]
                    own_out[s] = 1
                lst = inn[o]
                if lst is None:
                    inn[o] = [t]
                    if own_in is not None:
                        own_in[o] = 1
                elif own_in is None or own_in[o]:
                    lst.append(t)
                else:
                    inn[o] = lst + [t]
                    own_in[o] = 1
            if nbrs:
                nb = nbrs.get(s)
                if nb is not None:
                    nb.add(o)
                nb = nbrs.get(o)
                if nb is not None:
                    nb.add(s)
            for fn in listeners:
                fn(t)
            if deriv:
                derivations[(s, p, o)] = (deriv[0], tuple(tuple(x) for x in deriv[1]))
            n += 1
        return n

    def load_files(self, paths: Iterable[Path]) -> int:
        """Load triple files all-or-nothing: every file is parsed before any triple is added."""
        return self.load_parsed(read_triple_files(paths))

    @classmethod
    def from_files(cls, paths: Iterable[Path], max_lines: int = MAX_TRIPLE_LINES,
                   max_bytes: int = MAX_TRIPLE_BYTES) -> "KnowledgeGraph":
        """A new graph of the triple files (under one pair of caps, as read_triple_files),
        added as each line is read and parsed: a bad line raises and the half-built graph is
        dropped, so it is all-or-nothing like `load_files` without holding every parsed line
        (a million lines fit in under 500 MB this way: the caps could be raised for it)."""
        kg = cls()
        # Millions of new tuples and lists, none of them in a cycle: the collector would walk
        # the whole growing graph again and again (a third of the load) and free nothing.
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            used = [0, 0]
            for p in paths:
                lines = _whole_file_lines(p, used, max_lines, max_bytes)
                if lines is None:  # over a cap or not UTF-8: the line reader says where
                    lines = user_file_lines(p, "triple file", max_bytes, max_lines, used,
                                            " (the triple files of a scenario together)")
                kg.load_rows(iter_triple_lines(lines, str(p)))
        finally:
            if was_enabled:
                gc.enable()
        return kg
