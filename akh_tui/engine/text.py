"""Word normalisation and keywords (SPEC §8); shared by goals, evaluation and the planner."""

from __future__ import annotations

import re
from functools import lru_cache

# SPEC §8's list plus common English function words; a keyword must also be > 3 chars.
STOP_WORDS = frozenset(
    """
    where what which that with from about into have does there these those this when will
    would could should their them they your the and for are was were been being has had
    its than then also very just only some such each other more most many much any all
    both either neither not nor but yet how who whom whose why our ours you yours his her
    hers him she he it we us me my mine a an of to in on at by or as is be do did
    """.split()
)

# SPEC §7's strategy keywords: removed from a description to form default criteria.
STRATEGY_KEYWORDS: dict[str, tuple[str, ...]] = {
    "knowledge": ("find", "query", "search", "discover", "explore", "list", "identify"),
    "reasoning": ("reason", "infer", "deduce", "classify", "analyze", "why"),
    "creation": ("create", "add", "build", "connect", "link", "store", "write"),
    "external": ("file", "http", "command", "shell", "fetch", "download"),
    "similarity": ("similar", "like", "related", "compare", "cluster"),
}
ALL_STRATEGY_WORDS = frozenset(w for ws in STRATEGY_KEYWORDS.values() for w in ws)

_PUNCT = re.compile(r"[^0-9a-z]+")


@lru_cache(maxsize=8192)  # a cycle normalises the same goal and label words again and again
def normalise_word(word: str) -> str:
    """Lower-case, strip punctuation, then the plural rule of SPEC §8."""
    w = word.lower()
    if not (w.isascii() and w.isalnum()):  # already [0-9a-z]+ (most words): nothing to strip
        w = _PUNCT.sub("", w)
    if w.endswith("ies") and len(w) > 3:
        return w[:-3] + "y"
    if w.endswith("s") and not w.endswith("ss") and len(w) > 4:
        return w[:-1]
    return w


def raw_words(text: str) -> list[str]:
    """Lower-cased words split on whitespace, '-' and '_' (punctuation kept for callers)."""
    # str.split() splits at the same characters as the regex's \s (Python's own whitespace
    # test, checked over every code point in tests/engine/knowledge/test_kg.py) and drops empty words; a third
    # of the cost of the regex split, and every new symbol's label passes here
    return text.lower().replace("-", " ").replace("_", " ").split()


def normalised_words(text: str) -> list[str]:
    """Normalised words of a text or label, in order, empty ones dropped."""
    out = []
    for w in raw_words(text):
        n = normalise_word(w)
        if n:
            out.append(n)
    return out


def label_key(label: str) -> str:
    """A label's normalised form: its normalised words joined by one space."""
    return " ".join(normalised_words(label))


def content_words(text: str) -> list[str]:
    """Normalised words that are not stop words, unique, in first-seen order."""
    seen: dict[str, None] = {}
    for w in normalised_words(text):
        if w not in STOP_WORDS:
            seen.setdefault(w, None)
    return list(seen)


def is_keyword(word: str) -> bool:
    return len(word) > 3 and word not in STOP_WORDS


def default_criteria(description: str) -> str:
    """SPEC §7: the description without stop words and without strategy keywords."""
    kept = []
    for w in description.split():
        bare = _PUNCT.sub("", w.lower())
        if not bare or bare in STOP_WORDS or bare in ALL_STRATEGY_WORDS:
            continue
        kept.append(w.strip(".,;:!?"))
    return " ".join(kept)
