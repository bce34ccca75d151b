"""Goals, their success criteria and evaluation (SPEC §7, §8)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Iterable

from ..errors import InputError
from ..knowledge.kg import KnowledgeGraph, Triple
from ..text import default_criteria, is_keyword, normalised_words

STATUSES = ("active", "suspended", "completed", "failed")
# A goal's description and criteria are sentences. The cap keeps what every cycle records
# (the goal travels in each record) and what the goal-text tools scan each cycle small: a
# 1 MB goal once stored 2 MB per cycle.
MAX_GOAL_TEXT = 4000  # characters, for each of description and criteria
_PATTERN = re.compile(r"\(([^()]*)\)")


@dataclass(frozen=True, slots=True)
class TriplePattern:
    subject: str
    predicate: str
    object: str

    def __str__(self) -> str:
        return f"({self.subject} {self.predicate} {self.object})"

    def matches(self, kg: KnowledgeGraph, t: Triple) -> bool:
        bound: dict[str, str] = {}
        for term, sid in ((self.subject, t.subject), (self.predicate, t.predicate), (self.object, t.object)):
            label = kg.label(sid).lower()
            if term.startswith("?"):
                if bound.setdefault(term, label) != label:
                    return False
            elif term.lower() != label:
                return False
        return True


@dataclass(frozen=True, slots=True)
class Criteria:
    text: str
    keywords: tuple[str, ...]
    patterns: tuple[TriplePattern, ...]

    @property
    def total(self) -> int:
        return len(self.keywords) + len(self.patterns)


def parse_criteria(text: str, field_name: str = "criteria") -> Criteria:
    """Words become keywords (SPEC §8); `(s p o)` groups become triple patterns."""
    patterns = []
    for m in _PATTERN.finditer(text):
        terms = m.group(1).split()
        if len(terms) != 3:
            raise InputError(
                f"triple pattern {m.group(0)!r} needs exactly 3 terms (subject predicate object)",
                field=field_name,
            )
        patterns.append(TriplePattern(*terms))
    rest = _PATTERN.sub(" ", text)
    if "(" in rest or ")" in rest:
        raise InputError(f"unbalanced parenthesis in {text!r}", field=field_name)
    keywords = tuple(dict.fromkeys(w for w in normalised_words(rest) if is_keyword(w)))
    return Criteria(text, keywords, tuple(dict.fromkeys(patterns)))


_CONTAINERS = (list, dict)


@dataclass
class Goal:
    id: int
    description: str
    criteria: str
    priority: int = 128
    status: str = "active"
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    cycles_worked: int = 0
    last_progress_cycle: int = 0
    stall_threshold: int = 5
    attempt: int = 0  # failed plans so far; the current plan's attempt number
    created_cycle: int = 0
    origin: str = "user"  # user | decomposition
    child_mode: str | None = None  # parts (all needed) | alternatives (any one suffices)
    since_progress: int = 0
    coverage: float = 0.0
    found: list[str] = field(default_factory=list)
    found_patterns: list[int] = field(default_factory=list)
    tool_uses: dict[str, int] = field(default_factory=dict)
    history: list[str] = field(default_factory=list)  # tools of the last 3 cycles worked, oldest first
    queried: list[int] = field(default_factory=list)  # symbols kg_query has queried for this goal
    seen: set[int] = field(default_factory=set)  # symbols tool calls have returned for this goal
    progressed_since_reflection: bool = False
    fail_reason: str | None = None
    symbol: int | None = None  # the goal:N metadata symbol
    _criteria: Criteria | None = field(default=None, repr=False, compare=False)

    @property
    def parsed(self) -> Criteria:
        if self._criteria is None:
            self._criteria = parse_criteria(self.criteria)
        return self._criteria

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def recency_penalty(self, tool: str) -> float:
        """0.4 / 0.2 / 0.1 when the tool ran 1 / 2 / 3 cycles ago on this goal; the largest applies."""
        for back, penalty in ((1, 0.4), (2, 0.2), (3, 0.1)):
            if len(self.history) >= back and self.history[-back] == tool:
                return penalty
        return 0.0

    def record_use(self, tool: str) -> None:
        self.tool_uses[tool] = self.tool_uses.get(tool, 0) + 1
        self.history.append(tool)
        del self.history[:-3]

    def evaluate(
        self,
        kg: KnowledgeGraph,
        triples: Iterable[Triple],
        output: str,
        completion_threshold: float,
    ) -> tuple[bool, list[int]]:
        """Add this cycle's evidence. Returns (coverage rose, symbols this goal had not seen)."""
        c = self.parsed
        words: set[str] = set(normalised_words(output))
        new_symbols: list[int] = []
        found_patterns = set(self.found_patterns)
        for t in triples:
            if kg.is_meta_triple(t) or t.provenance == "tool:synthesize_triple":
                continue  # a hypothesis is not evidence (SPEC §8), nor a found symbol
            for sid in (t.subject, t.object):
                if sid not in self.seen:
                    self.seen.add(sid)
                    new_symbols.append(sid)
            sy = kg.symbols
            for sid in (t.subject, t.predicate, t.object):
                # a symbol's key is its label's normalised words joined by spaces (tokenised
                # once, when the symbol was made; the words hold no spaces)
                words.update(sy[sid].key.split())
            for i, pat in enumerate(c.patterns):
                if i not in found_patterns and pat.matches(kg, t):
                    found_patterns.add(i)
        before = self.coverage
        found = set(self.found)
        self.found.extend(k for k in c.keywords if k not in found and k in words)
        self.found_patterns = sorted(found_patterns)
        self.coverage = (len(self.found) + len(self.found_patterns)) / c.total if c.total else 0.0
        return self.coverage > before, new_symbols

    def is_complete(self, threshold: float) -> bool:
        return self.parsed.total > 0 and self.coverage >= threshold - 1e-12

    def missing(self) -> list[str]:
        c = self.parsed
        found = set(self.found)
        out = [k for k in c.keywords if k not in found]
        out.extend(str(p) for i, p in enumerate(c.patterns) if i not in self.found_patterns)
        return out

    def summary(self) -> dict:
        return {
            "id": self.id,
            "description": self.description,
            "status": self.status,
            "priority": self.priority,
            "parent": self.parent,
            "coverage": self.coverage,
        }

    def to_dict(self, seen: bool = True) -> dict:
        """`seen=False` leaves the seen symbols out (None): the session store packs them itself."""
        # copies, never the live lists: a snapshot must not change as the goal goes on. The
        # fields are copied as they are and the containers' copied in place (their method, not
        # copy.copy's dispatch): a world saves every goal of every agent that took a turn, and
        # a comprehension over the fields was a fifth of saving an agent
        # (its containers are plain lists and dicts: the fields' factories, from_dict's copies)
        d = {k: (v.copy() if type(v) in _CONTAINERS else v) for k, v in self.__dict__.items()}
        del d["_criteria"]  # the one private field: the parsed criteria, made again when asked for
        d["seen"] = sorted(self.seen) if seen else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Goal":
        d = {k: (copy.copy(v) if isinstance(v, (list, dict)) else v) for k, v in d.items()}
        d["seen"] = set(d["seen"])
        return cls(**d)


def make_goal(
    gid: int,
    description: str,
    criteria: str | None = None,
    priority: int = 128,
    cycle: int = 0,
    stall_threshold: int = 5,
    **kw,
) -> Goal:
    description = description.strip()
    if not description:
        raise InputError("goal description is empty", field="description")
    for name, text in (("description", description), ("criteria", criteria)):
        if text is not None and len(text) > MAX_GOAL_TEXT:
            raise InputError(
                f"too long: {len(text):,} characters; a goal's {name} may have at most {MAX_GOAL_TEXT:,}",
                field=name,
            )
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 255:
        raise InputError(f"priority must be an integer 0..255, got {priority!r}", field="priority")
    crit = criteria if criteria is not None else default_criteria(description)
    # Validate now, so a bad pattern is reported when the goal is added; criteria derived
    # from the description are the description's fault.
    parse_criteria(crit, "criteria" if criteria is not None else "description")
    return Goal(gid, description, crit, priority, created_cycle=cycle, stall_threshold=stall_threshold, **kw)


def split_criteria(criteria: str) -> list[str]:
    """SPEC §7 decomposition: split on commas and ' and ' (outside triple patterns)."""
    parts: list[str] = []
    depth = 0
    buf = ""
    i = 0
    while i < len(criteria):
        ch = criteria[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if depth == 0 and ch == ",":
            parts.append(buf)
            buf = ""
        elif depth == 0 and criteria[i : i + 5].lower() == " and ":
            parts.append(buf)
            buf = ""
            i += 5
            continue
        else:
            buf += ch
        i += 1
    parts.append(buf)
    return [p.strip() for p in parts if p.strip()]
