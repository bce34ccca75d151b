"""Vector symbolic architecture (SPEC §3) on packed binary hypervectors.

A hypervector is D bits packed into D/8 bytes (bit 1 stands for +1, bit 0 for -1), so
binding is XOR, similarity is 1 - Hamming/D, and a bundle is a bitwise majority. Vectors
are derived from a SHAKE-256 digest of (run seed, label): stable across processes (no
salted ``hash()``), different per seed.
"""

from __future__ import annotations

import hashlib
import weakref
from collections import OrderedDict
from typing import Iterable, Sequence

import numpy as np

from .kg import KnowledgeGraph, Triple

DEFAULT_DIM = 4096

# (seed, dimension, lower-cased words) -> keyword_vector: a pure function of them
_KEYWORD_VECTORS: dict[tuple[int, int, tuple[str, ...]], np.ndarray] = {}


class VSA:
    def __init__(self, seed: int = 0, dim: int = DEFAULT_DIM, cache_size: int = 16384) -> None:
        if dim % 8 or dim <= 0:
            raise ValueError("dimension must be a positive multiple of 8")
        self.seed = seed
        self.dim = dim
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._texts: OrderedDict[str, np.ndarray] = OrderedDict()
        # Ties in bundles of an even number of vectors other than texts are broken by this
        # fixed random vector, so such bundles stay unbiased (ties-to-+1 would make two
        # unrelated even bundles look similar, ~0.6 instead of 0.5).
        self.tiebreak = self._derive("\x00tiebreak")

    def _derive(self, label: str) -> np.ndarray:
        digest = hashlib.shake_256(f"{self.seed}\x1f{label}".encode()).digest(self.dim // 8)
        return np.frombuffer(digest, dtype=np.uint8)

    def vector(self, label: str) -> np.ndarray:
        """The random hypervector of a label (or word)."""
        v = self._cache.get(label)
        if v is not None:
            self._cache.move_to_end(label)
            return v
        v = self._derive(label)
        self._cache[label] = v
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return v

    @staticmethod
    def bind(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.bitwise_xor(a, b)

    def counts(self, vectors: Sequence[np.ndarray]) -> np.ndarray:
        """Per-bit count of +1 over vectors (int32, length D)."""
        if not vectors:
            return np.zeros(self.dim, dtype=np.int32)
        bits = np.unpackbits(np.stack(vectors), axis=1)
        return bits.sum(axis=0, dtype=np.int32)

    def majority(self, counts: np.ndarray, n: int, tiebreak: np.ndarray | None = None) -> np.ndarray:
        """Packed majority of n vectors given their bit counts; ties to +1 unless a tiebreak vector is given."""
        twice = counts * 2
        bits = twice > n
        if n % 2 == 0:
            tie = twice == n
            if tiebreak is None:
                bits |= tie
            else:
                bits |= tie & np.unpackbits(tiebreak).astype(bool)
        return np.packbits(bits)

    def bundle(self, vectors: Sequence[np.ndarray], tiebreak: np.ndarray | None = None) -> np.ndarray:
        return self.majority(self.counts(vectors), len(vectors), tiebreak)

    def text_vector(self, text: str) -> np.ndarray:
        """Bundle of the text's lower-cased word vectors, ties to +1 (SPEC §3).

        Kept for the texts asked recently: a goal's description is bundled again by every
        plan it gets (strategy flags) and every tool profile it is compared with."""
        v = self._texts.get(text)
        if v is not None:
            self._texts.move_to_end(text)
            return v
        words = text.lower().split()
        v = self.vector("") if not words else self.bundle([self.vector(w) for w in words])
        self._texts[text] = v
        if len(self._texts) > 256:
            self._texts.popitem(last=False)
        return v

    def keyword_vector(self, words: Iterable[str]) -> np.ndarray:
        """Bundle of keyword vectors for profiles; ties broken by the fixed tiebreak vector.

        Kept process-wide (read-only): every agent bundles the same tool profiles and
        strategy keywords when it is made, and a rewind makes one (they were most of it)."""
        ws = tuple(w.lower() for w in words)
        key = (self.seed, self.dim, ws)
        v = _KEYWORD_VECTORS.get(key)
        if v is None:
            v = self.bundle([self.vector(w) for w in ws], tiebreak=self.tiebreak)
            v.flags.writeable = False
            if len(_KEYWORD_VECTORS) >= 4096:  # bounded: seeds of a sweep come and go
                _KEYWORD_VECTORS.clear()
            _KEYWORD_VECTORS[key] = v
        return v

    def similarity(self, a: np.ndarray, b: np.ndarray) -> float:
        """1.0 for identical, about 0.5 for unrelated, 0.0 for opposite."""
        diff = int(np.bitwise_count(np.bitwise_xor(a, b)).sum())
        return 1.0 - diff / self.dim

    def similarities(self, query: np.ndarray, vectors: Sequence[np.ndarray]) -> list[float]:
        """`similarity(query, v)` for each v, in one pass over a stacked array (the same
        integer Hamming counts, so the same floats, as one call per vector)."""
        if not vectors:
            return []
        # one concatenation (np.stack checks shapes and dispatches: it was half of this), and
        # the bytes read as 64-bit words when they make whole words: 8x fewer elements to count
        # and add up; a popcount of the same bits, so the same integers either way
        m = np.concatenate(vectors)
        if query.nbytes % 8 == 0:
            m, query = m.view(np.uint64), query.view(np.uint64)
        diffs = np.add.reduce(np.bitwise_count(np.bitwise_xor(m.reshape(len(vectors), -1), query)), axis=1,
                              dtype=np.int64)
        dim = self.dim
        return [1.0 - d / dim for d in diffs.tolist()]


class SymbolVectors:
    """A symbol's vector bundles its label vector with bind(predicate, object) of its
    out-triples. Counts are kept for recently used symbols and updated as triples arrive,
    so a vector is never rebuilt from scratch while it stays cached (bounded LRU)."""

    def __init__(self, kg: KnowledgeGraph, vsa: VSA, cache_size: int = 1024) -> None:
        # weak: the graph holds our listener, and a listener holding the graph back made a
        # dropped graph wait for the cyclic collector's full pass (tests/engine/cycle/test_freed.py)
        self._kg = weakref.ref(kg)
        self.vsa = vsa
        self._cache: OrderedDict[int, list] = OrderedDict()  # sid -> [counts, n, packed|None]
        self._cache_size = cache_size
        # bumped whenever a symbol's vector may have changed (a triple added, the graph cut back)
        self.version = 0
        self._compared: tuple[tuple, list[float]] | None = None  # the last `similarities` asked
        self.listen()

    @property
    def kg(self) -> KnowledgeGraph:
        kg = self._kg()
        assert kg is not None, "the graph of these vectors was dropped"
        return kg

    def listen(self) -> None:
        """Keep cached counts up to date as triples are added (a new agent's cache, or one
        carried over to the next agent of the same graph: basegraph.py)."""
        self.kg.listeners.append(self._on_triple)

    def forget(self, removed: list[Triple], n_symbols: int) -> None:
        """The graph was truncated (kg.truncate): drop the vectors it changed, those of the
        removed triples' subjects and of the removed symbols. The rest are still exact."""
        self.version += 1
        cache = self._cache
        for t in removed:
            cache.pop(t.subject, None)
        for sid in [sid for sid in cache if sid >= n_symbols]:
            del cache[sid]

    def _bound(self, t: Triple) -> np.ndarray:
        kg, vsa = self.kg, self.vsa
        return vsa.bind(vsa.vector(kg.label(t.predicate)), vsa.vector(kg.label(t.object)))

    def _on_triple(self, t: Triple) -> None:
        self.version += 1
        entry = self._cache.get(t.subject)
        if entry is None or self.kg.is_meta_triple(t):
            return
        entry[0] += np.unpackbits(self._bound(t)).astype(np.int32)
        entry[1] += 1
        entry[2] = None

    def vector(self, sid: int) -> np.ndarray:
        entry = self._cache.get(sid)
        if entry is None:
            kg, vsa = self.kg, self.vsa
            parts = [vsa.vector(kg.label(sid))]
            parts.extend(self._bound(t) for t in kg.facts_out(sid))
            entry = [vsa.counts(parts), len(parts), None]
            self._cache[sid] = entry
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(sid)
        if entry[2] is None:
            entry[2] = self.vsa.majority(entry[0], entry[1], self.vsa.tiebreak)
        return entry[2]

    def similarities(self, seeds: Sequence[int], others: Sequence[int]) -> list[float]:
        """How similar each of `others` is to the seeds (one seed's vector, or the bundle of
        several), as `VSA.similarities`. The last answer is kept: similarity_search asks the same
        question cycle after cycle while the graph stands still (orient's activation is kept
        too), and the vectors are the same until a triple is added or the graph is cut back."""
        kg = self.kg
        key = (tuple(seeds), tuple(others), self.version, len(kg.log), kg.symbol_version)
        if self._compared is not None and self._compared[0] == key:
            return list(self._compared[1])
        vsa = self.vsa
        query = self.vector(seeds[0]) if len(seeds) == 1 else vsa.bundle([self.vector(s) for s in seeds],
                                                                           tiebreak=vsa.tiebreak)
        sims = vsa.similarities(query, [self.vector(s) for s in others])
        self._compared = (key, sims)
        return list(sims)
