"""ThinkLoop: a discrete-time PI feedback controller over a pluggable oracle (issue 5).

The setpoint is a natural-language goal, the plant is an :class:`Oracle` (the bundled
:class:`GraphOracle` answers from the knowledge graph), and each step k runs the control law::

    e(k) = 1 - Jaccard(tokens(query(k)), tokens(observation(k)))    error
    I(k) = clamp(I(k-1) + e(k), 0, 100)                             integral (anti-windup), I(0) = 0
    K(k) = clamp(Kp + Ki * I(k), 0.1, 10)                           gain schedule
    r(k) = max(0, (1 - e(k)) * K(k))                                reward

tokens(text) is the *set* of ``[a-z0-9]+`` runs of the lower-cased text; two empty sets have
error 0, exactly one empty set error 1.

Stop rules, checked in this order after each step: ``e(k) < threshold`` -> "converged";
``stall_patience`` consecutive strictly falling rewards -> "stalled" (an equal or higher reward
resets the count); ``k == max_iterations`` -> "max_iterations".

Memory: every non-empty observation is pushed with its reward and step onto a FIFO hot store
(capacity ``hot_capacity``, the oldest entry is dropped when full). When the loop stops, the hot
entries with reward >= ``promotion_threshold`` move (oldest first) to the unbounded cold store.

Queries: step 1 asks the goal itself. Later steps ask the goal's words, then the first 8 words
of each of the 3 hot entries sharing the most words with the goal (ties: newest first),
duplicates dropped case-insensitively, at most 12 words, joined by single spaces. A "word" is a
run of ASCII letters/digits, case kept (so a query's tokens are exactly its lower-cased words).

Deterministic: no clocks, no randomness, no I/O. Headless: never imports textual.
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from .errors import InputError
from .text import normalise_word, normalised_words

if TYPE_CHECKING:  # pragma: no cover
    from .knowledge.kg import KnowledgeGraph, Triple

__all__ = [
    "DEFAULT_HOT_CAPACITY", "DEFAULT_KI", "DEFAULT_KP", "DEFAULT_MAX_ITERATIONS",
    "DEFAULT_PROMOTION_THRESHOLD", "DEFAULT_STALL_PATIENCE", "DEFAULT_THRESHOLD",
    "GraphOracle", "Oracle", "ThinkConfig", "ThinkLoop", "ThinkResult", "ThinkStep",
    "formulate_query", "jaccard_error", "tokens", "words",
]

# Defaults of seed 003 (lmm_agent ThinkLoopBuilder::new / ThinkLoop::new); hot capacity 16 is
# also fixed by issue 5.
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_THRESHOLD = 0.25
DEFAULT_KP = 1.0
DEFAULT_KI = 0.05
DEFAULT_STALL_PATIENCE = 3
DEFAULT_PROMOTION_THRESHOLD = 0.5
DEFAULT_HOT_CAPACITY = 16

INTEGRAL_MIN, INTEGRAL_MAX = 0.0, 100.0
GAIN_MIN, GAIN_MAX = 0.1, 10.0
QUERY_ENTRIES = 3       # hot entries mined for the next query
QUERY_ENTRY_WORDS = 8   # words taken from each of them
QUERY_MAX_WORDS = 12
ORACLE_TRIPLES = 5

STOP_REASONS = ("converged", "stalled", "max_iterations")

_TOKEN = re.compile(r"[a-z0-9]+")
_WORD = re.compile(r"[A-Za-z0-9]+")


# ---- text -------------------------------------------------------------------------------------
def tokens(text: str) -> set[str]:
    """The set of lower-cased alphanumeric words: ``[a-z0-9]+`` on the lower-cased text."""
    return set(_TOKEN.findall(text.lower()))


def words(text: str) -> list[str]:
    """The words of a text in order, case kept (runs of ASCII letters and digits)."""
    return _WORD.findall(text)


def jaccard_error(a: str, b: str) -> float:
    """1 - |A ∩ B| / |A ∪ B| over the token sets; both empty -> 0.0, exactly one empty -> 1.0."""
    ta, tb = tokens(a), tokens(b)
    if not ta and not tb:
        return 0.0
    if not ta or not tb:
        return 1.0
    return 1.0 - len(ta & tb) / len(ta | tb)


def _clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


# ---- configuration ----------------------------------------------------------------------------
def _check_int(name: str, v, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int):
        raise InputError(f"must be an integer, got {v!r}", field=name)
    if v < lo:
        raise InputError(f"must be ≥ {lo}, got {v}", field=name)


def _check_float(name: str, v, lo: float | None = None, hi: float | None = None) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"must be a number, got {v!r}", field=name)
    if not math.isfinite(v):
        raise InputError(f"must be a finite number, got {v!r}", field=name)
    if lo is not None and hi is not None and not lo <= v <= hi:
        raise InputError(f"must be in [{lo:g}, {hi:g}], got {v!r}", field=name)


@dataclass(frozen=True)
class ThinkConfig:
    """Controller settings; invalid values raise InputError naming the field."""

    max_iterations: int = DEFAULT_MAX_ITERATIONS
    threshold: float = DEFAULT_THRESHOLD
    kp: float = DEFAULT_KP
    ki: float = DEFAULT_KI
    stall_patience: int = DEFAULT_STALL_PATIENCE
    promotion_threshold: float = DEFAULT_PROMOTION_THRESHOLD
    hot_capacity: int = DEFAULT_HOT_CAPACITY

    def __post_init__(self) -> None:
        _check_int("max_iterations", self.max_iterations, 1)
        _check_float("threshold", self.threshold, 0.0, 1.0)
        _check_float("kp", self.kp)
        _check_float("ki", self.ki)
        _check_int("stall_patience", self.stall_patience, 1)
        _check_float("promotion_threshold", self.promotion_threshold, 0.0, 1.0)
        _check_int("hot_capacity", self.hot_capacity, 1)
        # store floats as floats (an int Kp of 1 and 1.0 must give the same JSON)
        for name in ("threshold", "kp", "ki", "promotion_threshold"):
            object.__setattr__(self, name, float(getattr(self, name)))


# ---- oracles ----------------------------------------------------------------------------------
@runtime_checkable
class Oracle(Protocol):
    """The plant: answers a query with an observation (plain text)."""

    def observe(self, query: str) -> str: ...


class GraphOracle:
    """Offline, deterministic oracle over a KnowledgeGraph.

    ``observe(query)`` returns the texts (``subject predicate object``, labels) of the first 5
    non-metadata triples, in graph order (``kg.log``), of which some label (subject, predicate
    or object) has a word in ``tokens(query)`` -- a label's words being ``tokens(label)`` --
    joined by ``"; "`` ("" when none qualifies).

    Per query it never scans the graph: candidate symbols come from the graph's token index
    (``kg.by_token(normalise_word(w))``), each is checked against the exact word rule, and since
    every triple touching a matching symbol qualifies and the adjacency lists are in log order,
    only the first 5 triples of each matching symbol's out/in/predicate lists are considered.
    Positions in ``kg.log`` come from a key -> index map built once and extended incrementally
    if the graph grows (``kg.log`` is append-only).
    """

    def __init__(self, kg: KnowledgeGraph, limit: int = ORACLE_TRIPLES) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InputError(f"must be an integer ≥ 1, got {limit!r}", field="limit")
        self.kg = kg
        self.limit = limit
        self._pos: dict[tuple[int, int, int], int] = {}
        self._n_log = 0
        # label words that the graph's token index does not reach through normalise_word (a
        # label word inside a run holding other punctuation, e.g. "o'brien" is indexed as
        # "obrien"): exact word -> symbol ids. Empty for the bundled graphs.
        self._extra: dict[str, list[int]] = {}
        self._n_sym = 0
        self._sync()

    @classmethod
    def from_scenario(cls, name_or_path: str = "zoo") -> GraphOracle:
        from .runs.scenario import build_kg, load_scenario

        return cls(build_kg(load_scenario(name_or_path)))

    def _sync(self) -> None:
        log = self.kg.log
        for i in range(self._n_log, len(log)):
            self._pos[log[i].key] = i
        self._n_log = len(log)
        symbols = self.kg.symbols
        for sym in symbols[self._n_sym:]:
            if sym.meta:
                continue
            indexed = set(normalised_words(sym.label))
            for w in tokens(sym.label):
                if normalise_word(w) not in indexed:
                    self._extra.setdefault(w, []).append(sym.id)
        self._n_sym = len(symbols)

    def matching_symbols(self, query_tokens: set[str]) -> list[int]:
        """Ids of non-metadata symbols with a label word in `query_tokens` (ascending)."""
        self._sync()
        kg = self.kg
        found: set[int] = set()
        for w in query_tokens:
            for sid in kg.by_token(normalise_word(w)):
                if sid not in found and tokens(kg.symbols[sid].label) & query_tokens:
                    found.add(sid)
            for sid in self._extra.get(w, ()):
                found.add(sid)
        return sorted(found)

    def triples(self, query: str) -> list[Triple]:
        """The first `limit` qualifying triples, in graph order."""
        qt = tokens(query)
        if not qt:
            return []
        kg, limit = self.kg, self.limit
        cand: dict[tuple[int, int, int], Triple] = {}
        for sid in self.matching_symbols(qt):
            for t in kg.facts_out(sid)[:limit]:
                cand[t.key] = t
            for t in kg.facts_in(sid)[:limit]:
                cand[t.key] = t
            n = 0
            for s, o in kg.by_predicate(sid):  # in log order; metadata triples skipped
                if n >= limit:
                    break
                found = kg.get(s, sid, o)
                if found is not None and not kg.is_meta_triple(found):
                    cand[found.key] = found
                    n += 1
        pos = self._pos
        return heapq.nsmallest(limit, cand.values(), key=lambda t: pos[t.key])

    def observe(self, query: str) -> str:
        kg = self.kg
        return "; ".join(kg.text(t) for t in self.triples(query))


# ---- results ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ThinkStep:
    step: int  # 1-based
    query: str
    observation: str
    error: float
    integral: float
    gain: float
    reward: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MemoryEntry:
    observation: str
    reward: float
    step: int

    def to_dict(self) -> dict:
        return {"observation": self.observation, "reward": self.reward, "step": self.step}


@dataclass
class ThinkResult:
    converged: bool
    stop_reason: str  # "converged" | "stalled" | "max_iterations"
    steps: list[ThinkStep] = field(default_factory=list)
    hot: list[dict] = field(default_factory=list)
    cold: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "converged": self.converged,
            "stop_reason": self.stop_reason,
            "steps": [s.to_dict() for s in self.steps],
            "hot": [dict(e) for e in self.hot],
            "cold": [dict(e) for e in self.cold],
        }


# ---- query formulation ------------------------------------------------------------------------
def formulate_query(goal: str, hot: list[MemoryEntry] | list[dict]) -> str:
    """The goal's words, then the first 8 words of each of the 3 hot entries (oldest first in
    `hot`) sharing the most words with the goal, ties newest first; duplicates removed
    case-insensitively (first spelling kept); at most 12 words."""
    goal_words = words(goal)
    goal_set = {w.lower() for w in goal_words}
    ranked = []
    for i, e in enumerate(hot):
        obs = e["observation"] if isinstance(e, dict) else getattr(e, "observation")
        ranked.append((-len(tokens(obs) & goal_set), -i, obs))
    ranked.sort()
    out: list[str] = []
    seen: set[str] = set()

    def add(ws: list[str]) -> None:
        for w in ws:
            if len(out) >= QUERY_MAX_WORDS:
                return
            k = w.lower()
            if k not in seen:
                seen.add(k)
                out.append(w)

    add(goal_words)
    for _ov, _i, obs in ranked[:QUERY_ENTRIES]:
        add(words(obs)[:QUERY_ENTRY_WORDS])
    return " ".join(out)


# ---- the loop ---------------------------------------------------------------------------------
class ThinkLoop:
    """Drive with ``step()`` (one ThinkStep, None once stopped) or ``run()``."""

    def __init__(self, goal: str, oracle: Oracle, config: ThinkConfig | None = None) -> None:
        if not isinstance(goal, str) or not tokens(goal):
            raise InputError(f"must contain at least one letter or digit, got {goal!r}", field="goal")
        if not callable(getattr(oracle, "observe", None)):
            raise TypeError("oracle must have an observe(query) -> str method")
        self.goal = goal
        self.oracle = oracle
        self.config = config if config is not None else ThinkConfig()
        self.steps: list[ThinkStep] = []
        self.hot: list[MemoryEntry] = []
        self.cold: list[MemoryEntry] = []
        self.integral = 0.0
        self.stop_reason: str | None = None
        self._prev_reward = -math.inf
        self._falling = 0

    @property
    def stopped(self) -> bool:
        return self.stop_reason is not None

    @property
    def converged(self) -> bool:
        return self.stop_reason == "converged"

    def next_query(self) -> str:
        if not self.steps:
            return self.goal
        return formulate_query(self.goal, self.hot)

    def step(self) -> ThinkStep | None:
        if self.stopped:
            return None
        cfg = self.config
        k = len(self.steps) + 1
        query = self.next_query()
        observation = self.oracle.observe(query)
        if not isinstance(observation, str):
            raise TypeError(f"oracle returned {type(observation).__name__}, expected str")
        error = jaccard_error(query, observation)
        self.integral = _clamp(self.integral + error, INTEGRAL_MIN, INTEGRAL_MAX)
        gain = _clamp(cfg.kp + cfg.ki * self.integral, GAIN_MIN, GAIN_MAX)
        reward = max(0.0, (1.0 - error) * gain)
        st = ThinkStep(k, query, observation, error, self.integral, gain, reward)
        self.steps.append(st)
        if observation:
            self.hot.append(MemoryEntry(observation, reward, k))
            if len(self.hot) > cfg.hot_capacity:
                del self.hot[0]
        if error < cfg.threshold:
            self._stop("converged")
        else:
            if reward < self._prev_reward:
                self._falling += 1
            else:
                self._falling = 0
            self._prev_reward = reward
            if self._falling >= cfg.stall_patience:
                self._stop("stalled")
            elif k >= cfg.max_iterations:
                self._stop("max_iterations")
        return st

    def _stop(self, reason: str) -> None:
        self.stop_reason = reason
        thr = self.config.promotion_threshold
        self.cold.extend(e for e in self.hot if e.reward >= thr)
        self.hot = [e for e in self.hot if e.reward < thr]

    def run(self) -> ThinkResult:
        while self.step() is not None:
            pass
        return self.result()

    def result(self) -> ThinkResult:
        """The outcome; only once stopped (``run()`` or ``step()`` until it returns None)."""
        if self.stop_reason is None:
            raise RuntimeError("the loop has not stopped yet: call step() until it returns None, or run()")
        return ThinkResult(
            converged=self.converged,
            stop_reason=self.stop_reason,
            steps=list(self.steps),
            hot=[e.to_dict() for e in self.hot],
            cold=[e.to_dict() for e in self.cold],
        )
