"""The knowledge graph (SPEC §2): symbols, triples, and the indexes that keep lookups O(1).

The canonical triple store is a networkx MultiDiGraph (edge s→o, key = predicate id, attribute
``t`` = the Triple). Beside it sit the indexes the hot path needs: label → id, normalised label
→ ids, normalised token → ids, (subject, predicate) → objects and (predicate, object) →
subjects. Nothing on the per-cycle path iterates over all triples or all symbols.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import networkx as nx

from .errors import InputError, user_file_lines
from .text import label_key, normalised_words

METADATA_PREFIXES = (
    "goal:", "agent:", "episode:", "desc:", "status:", "priority:", "criteria:", "summary:", "tag:",
)
KINDS = ("entity", "relation", "goal", "episode", "meta")


_EMPTY: list = []


def is_metadata_label(label: str) -> bool:
    return label.startswith(METADATA_PREFIXES)


@dataclass(slots=True)
class Symbol:
    id: int
    label: str
    kind: str
    meta: bool
    key: str  # normalised label (SPEC §8), used to match goal words


@dataclass(frozen=True, slots=True)
class Triple:
    subject: int
    predicate: int
    object: int
    confidence: float = 1.0
    provenance: str = "asserted"  # asserted | inferred:<rule> | tool:<name> | user
    cycle: int = 0
    # position in KnowledgeGraph.log; not part of equality (two graphs built alike hold equal
    # triples). infer_rules bounds a join to the log as it was when the join began.
    seq: int = field(default=-1, compare=False)

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.subject, self.predicate, self.object)


@dataclass(frozen=True, slots=True)
class ParsedTriple:
    subject: str
    predicate: str
    object: str
    confidence: float
    file: str
    line: int


def parse_triple_lines(lines: Iterable[str], file: str) -> list[ParsedTriple]:
    """Parse `subject<TAB>predicate<TAB>object[<TAB>confidence]` lines; `#` starts a comment.

    Raises InputError naming the file and line of the first malformed line.
    """
    out: list[ParsedTriple] = []
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
        names = ("subject", "predicate", "object")
        for name, value in zip(names, parts[:3]):
            if not value.strip():
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
        out.append(ParsedTriple(parts[0].strip(), parts[1].strip(), parts[2].strip(), conf, file, n))
    return out


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


class KnowledgeGraph:
    def __init__(self) -> None:
        self.graph = nx.MultiDiGraph()
        self.symbols: list[Symbol] = []
        self._by_label: dict[str, int] = {}
        self._by_key: dict[str, list[int]] = {}
        self._by_token: dict[str, list[int]] = {}
        self._sp: dict[tuple[int, int], list[int]] = {}
        self._po: dict[tuple[int, int], list[int]] = {}
        self._by_p: dict[int, list[tuple[int, int]]] = {}
        # non-metadata triples out of / into each symbol, insertion order: the hot path reads
        # these plain lists rather than networkx's adjacency views (about 10x faster)
        self._out: dict[int, list[Triple]] = {}
        self._in: dict[int, list[Triple]] = {}
        self._triples: dict[tuple[int, int, int], Triple] = {}
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
        key = label_key(label)
        self.symbols.append(Symbol(sid, label, kind, meta, key))
        self._by_label[label] = sid
        self.graph.add_node(sid)
        if not meta:
            if kind == "entity":
                self._by_key.setdefault(key, []).append(sid)
            for tok in dict.fromkeys(normalised_words(label)):
                self._by_token.setdefault(tok, []).append(sid)
        self.symbol_version += 1
        return sid

    def lookup(self, label: str) -> int | None:
        return self._by_label.get(label)

    def label(self, sid: int) -> str:
        return self.symbols[sid].label

    def by_key(self, key: str) -> list[int]:
        """Entity symbols whose normalised label equals `key`."""
        return self._by_key.get(key, [])

    def by_token(self, token: str) -> list[int]:
        return self._by_token.get(token, [])

    def __len__(self) -> int:
        return len(self._triples)

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
        key = (s, p, o)
        if key in self._triples:
            return None
        t = Triple(s, p, o, float(confidence), provenance, cycle, len(self.log))
        self._triples[key] = t
        self.graph.add_edge(s, o, key=p, t=t)
        self._sp.setdefault((s, p), []).append(o)
        self._po.setdefault((p, o), []).append(s)
        self._by_p.setdefault(p, []).append((s, o))
        self.log.append(t)
        if not self.is_meta_triple(t):
            self.non_meta_count += 1
            self._out.setdefault(s, []).append(t)
            self._in.setdefault(o, []).append(t)
        for fn in self.listeners:
            fn(t)
        return t

    def get(self, s: int, p: int, o: int) -> Triple | None:
        return self._triples.get((s, p, o))

    def objects(self, s: int, p: int) -> list[int]:
        return self._sp.get((s, p), [])

    def subjects(self, p: int, o: int) -> list[int]:
        return self._po.get((p, o), [])

    def by_predicate(self, p: int) -> list[tuple[int, int]]:
        """(subject, object) pairs of every triple with predicate p, in insertion order."""
        return self._by_p.get(p, [])

    def is_meta_triple(self, t: Triple) -> bool:
        sy = self.symbols
        return sy[t.subject].meta or sy[t.predicate].meta or sy[t.object].meta

    def out_triples(self, s: int) -> Iterator[Triple]:
        """Every triple out of s, metadata included."""
        for _o, by_p in self.graph.succ[s].items():
            for data in by_p.values():
                yield data["t"]

    def in_triples(self, o: int) -> Iterator[Triple]:
        """Every triple into o, metadata included."""
        for _s, by_p in self.graph.pred[o].items():
            for data in by_p.values():
                yield data["t"]

    def facts_out(self, sid: int) -> list[Triple]:
        """Non-metadata triples out of a symbol (do not mutate)."""
        return self._out.get(sid, _EMPTY)

    def facts_in(self, sid: int) -> list[Triple]:
        return self._in.get(sid, _EMPTY)

    def adjacent(self, sid: int, limit: int | None = None) -> list[Triple]:
        """Non-metadata triples out of and into a symbol, out first, insertion order."""
        out = self._out.get(sid, _EMPTY)
        inn = self._in.get(sid, _EMPTY)
        if limit is None:
            return out + inn
        if len(out) >= limit:
            return out[:limit]
        return out + inn[: limit - len(out)]

    def adjacent_count(self, sid: int) -> int:
        return len(self._out.get(sid, _EMPTY)) + len(self._in.get(sid, _EMPTY))

    def is_neighbour(self, a: int, b: int) -> bool:
        g = self.graph
        return b in g.succ[a] or b in g.pred[a]

    def text(self, t: Triple) -> str:
        sy = self.symbols
        return f"{sy[t.subject].label} {sy[t.predicate].label} {sy[t.object].label}"

    def load_parsed(self, parsed: Iterable[ParsedTriple], provenance: str = "asserted", cycle: int = 0) -> int:
        n = 0
        for pt in parsed:
            if self.add(pt.subject, pt.predicate, pt.object, pt.confidence, provenance, cycle):
                n += 1
        return n

    def load_files(self, paths: Iterable[Path]) -> int:
        """Load triple files all-or-nothing: every file is parsed before any triple is added."""
        return self.load_parsed(read_triple_files(paths))
