"""Artifacts (SPEC §13): versioned bundles of triples or text that agents read, write, invoke
and bid with. A version never changes once written; a write makes the next version.

`holders` indexes, per triple, the artifacts whose current version holds it, so the mint's
default score ("triples no other artifact's current version holds") costs the scored
version's size, not the world's. `by_word`, `by_owner` and `with_tool` do the same for the
actions' offers (the artifacts sharing a goal's words, an agent's own, those declaring a tool):
an agent's turn never walks every artifact of the world.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..knowledge.kg import is_metadata_label
from ..text import STOP_WORDS, normalised_words

Triple = tuple[str, str, str]


@dataclass(frozen=True)
class Version:
    number: int  # from 1
    triples: tuple[Triple, ...]
    text: str | None
    words: frozenset[str] = frozenset()  # §8 words of its labels (metadata excluded) and text, stop words out


def version_words(triples: tuple[Triple, ...], text: str | None) -> frozenset[str]:
    words: set[str] = set()
    for t in triples:
        for label in t:
            if not is_metadata_label(label):
                words.update(normalised_words(label))
    if text is not None:
        words.update(normalised_words(text))
    return frozenset(w for w in words if w not in STOP_WORDS)


@dataclass
class Artifact:
    id: str
    owner: str  # "world" or an agent id
    price: int
    tool: str | None
    versions: list[Version] = field(default_factory=list)

    @property
    def version(self) -> int:
        return len(self.versions)

    @property
    def current(self) -> Version:
        return self.versions[-1]

    @property
    def kind(self) -> str:
        return "text" if self.current.text is not None else "triples"

    @property
    def size(self) -> int:
        """Triples in the current version, or characters of its text."""
        v = self.current
        return len(v.text) if v.text is not None else len(v.triples)


class Artifacts:
    def __init__(self) -> None:
        self.by_id: dict[str, Artifact] = {}
        self.holders: dict[Triple, set[str]] = {}
        self.by_word: dict[str, set[str]] = {}  # a word of a current version -> artifact ids
        self.by_owner: dict[str, set[str]] = {}
        self.with_tool: set[str] = set()
        self._undo: list[tuple[str, int]] = []  # (id, version count before) for this step

    def __iter__(self):
        return iter(sorted(self.by_id.values(), key=lambda a: a.id))

    def get(self, aid: str) -> Artifact | None:
        return self.by_id.get(aid)

    def owned_by(self, owner: str) -> list[Artifact]:
        """The owner's artifacts, by id."""
        return [self.by_id[i] for i in sorted(self.by_owner.get(owner, ()))]

    def sharing(self, words: "set[str] | frozenset[str]") -> dict[str, int]:
        """Artifact id -> how many of `words` its current version holds (only those holding one)."""
        counts: dict[str, int] = {}
        for w in words:
            for aid in self.by_word.get(w, ()):
                counts[aid] = counts.get(aid, 0) + 1
        return counts

    def add(self, a: Artifact) -> None:
        """An artifact made elsewhere (a saved state's), with its versions: entered in every index."""
        self.by_id[a.id] = a
        self.by_owner.setdefault(a.owner, set()).add(a.id)
        if a.tool is not None:
            self.with_tool.add(a.id)
        self._index(a)

    def clear(self) -> None:
        self.by_id.clear()
        self.holders.clear()
        self.by_word.clear()
        self.by_owner.clear()
        self.with_tool.clear()

    def write(self, aid: str, owner: str, triples: tuple[Triple, ...], text: str | None, price: int,
              tool: str | None = None) -> Artifact:
        """A new artifact owned by `owner`, or the next version of one it owns; ValueError
        when another owns it."""
        a = self.by_id.get(aid)
        if a is not None and a.owner != owner:
            raise ValueError(f"artifact {aid!r} belongs to {a.owner}: only its owner writes new versions")
        if a is None:
            a = self.by_id[aid] = Artifact(aid, owner, price, tool)
            self.by_owner.setdefault(owner, set()).add(aid)
            if tool is not None:
                self.with_tool.add(aid)
            self._undo.append((aid, 0))
        else:
            self._undo.append((aid, a.version))
            self._unindex(a)
        a.versions.append(Version(a.version + 1, tuple(triples), text, version_words(tuple(triples), text)))
        self._index(a)
        return a

    def _index(self, a: Artifact) -> None:
        for t in a.current.triples:
            self.holders.setdefault(t, set()).add(a.id)
        for w in a.current.words:
            self.by_word.setdefault(w, set()).add(a.id)

    def _unindex(self, a: Artifact) -> None:
        for t in a.current.triples:
            s = self.holders.get(t)
            if s is not None:
                s.discard(a.id)
                if not s:
                    del self.holders[t]
        for w in a.current.words:
            ids = self.by_word.get(w)
            if ids is not None:
                ids.discard(a.id)
                if not ids:
                    del self.by_word[w]

    def unique_triples(self, aid: str, version: int) -> int:
        """Triples of that version that the current version of no other artifact holds."""
        a = self.by_id[aid]
        v = a.versions[version - 1]
        return sum(1 for t in dict.fromkeys(v.triples) if not (self.holders.get(t, set()) - {aid}))

    # ---- a step as a transaction (ledger.py's rule) ---------------------------------------
    def begin(self) -> None:
        self._undo = []

    def commit(self) -> None:
        self._undo = []

    def rollback(self) -> None:
        for aid, before in reversed(self._undo):
            a = self.by_id[aid]
            self._unindex(a)
            del a.versions[before:]
            if before == 0:
                del self.by_id[aid]
                self.by_owner[a.owner].discard(aid)
                self.with_tool.discard(aid)
            else:
                self._index(a)
        self._undo = []
