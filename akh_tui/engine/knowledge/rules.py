"""Rule files and incremental forward chaining (SPEC §5, tool `infer_rules`).

A rule file is TOML: ``transitive``, ``symmetric`` and ``inherit`` list relation labels, and
each ``[[rule]]`` holds ``if`` / ``then`` triple patterns whose terms are labels or ``?vars``.

The engine is semi-naive: ``kg.log`` is the agenda, ``cursor`` says how far it has been
joined, and each agenda triple is joined once against what the graph holds through its
indexes. Every pair of premises is therefore considered when the later of the two is taken
from the agenda, so the closure is complete while a cycle's cost depends on the new triples
only, never on the size of the graph (SPEC §12).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence, TypeGuard

from ..errors import InputError, parse_toml, read_user_file, warn_input
from ..tomlpos import TomlLocator
from .kg import METADATA_PREFIXES, KnowledgeGraph, Triple, is_metadata_label

IS_A = "is-a"
BUILTIN_RULES = ("transitive", "symmetric", "inherit")
_TOP_KEYS = ("transitive", "symmetric", "inherit", "rule")
_RULE_KEYS = ("name", "if", "then")

Pattern = tuple[str, str, str]


@dataclass(frozen=True)
class Rule:
    name: str
    premises: tuple[Pattern, ...]
    conclusions: tuple[Pattern, ...]


def _dedupe(items):
    return list(dict.fromkeys(items))


@dataclass
class RuleSet:
    transitive: list[str] = field(default_factory=list)
    symmetric: list[str] = field(default_factory=list)
    inherit: list[str] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)

    @classmethod
    def empty(cls) -> RuleSet:
        return cls([], [], [], [])

    def merged(self, other: RuleSet) -> RuleSet:
        """Both rule sets, this one first; a relation or rule listed by both appears once."""
        return RuleSet(
            _dedupe(self.transitive + other.transitive),
            _dedupe(self.symmetric + other.symmetric),
            _dedupe(self.inherit + other.inherit),
            _dedupe(self.rules + other.rules),
        )

    def is_empty(self) -> bool:
        return not (self.transitive or self.symmetric or self.inherit or self.rules)


# ---- parsing ---------------------------------------------------------------------------

class _Layout:
    """Where rule-file keys sit, for error line numbers (a view over the shared TomlLocator)."""

    def __init__(self, text: str) -> None:
        self._at = TomlLocator(text)

    def top(self, key: str) -> int | None:
        return self._at.line(key)

    def top_element(self, key: str, index: int) -> int | None:
        return self._at.line(f"{key}[{index}]")

    def rule_line(self, i: int) -> int | None:
        return self._at.line(f"rule[{i}]")

    def rule_key(self, i: int, key: str, element: int | None = None) -> int | None:
        return self._at.line(f"rule[{i}].{key}" + ("" if element is None else f"[{element}]"))


def _type_name(v) -> str:
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
            list: "a list", dict: "a table"}.get(type(v), type(v).__name__)


def _label(value, file, line, fld) -> str:
    if not isinstance(value, str):
        raise InputError(f"must be a string, got {_type_name(value)}", file=file, line=line, field=fld)
    s = value.strip()
    if not s:
        raise InputError("must not be empty", file=file, line=line, field=fld)
    if is_metadata_label(s):
        raise InputError(
            f"{s!r} is a metadata label ({', '.join(METADATA_PREFIXES)}): the agent's bookkeeping"
            " never takes part in inference",
            file=file, line=line, field=fld,
        )
    return s


def _label_list(data: dict, key: str, file, where: _Layout) -> list[str]:
    value = data.get(key, [])
    line = where.top(key)
    if not isinstance(value, list):
        raise InputError(
            f"must be a list of relation labels, got {_type_name(value)}", file=file, line=line, field=key
        )
    return _dedupe(_label(v, file, line, f"{key}[{i}]") for i, v in enumerate(value))


def _pattern(value, file, line, fld) -> Pattern:
    if not isinstance(value, list) or len(value) != 3:
        got = f"{len(value)} items" if isinstance(value, list) else _type_name(value)
        raise InputError(
            f'a triple pattern must be a list of 3 strings ["subject", "predicate", "object"],'
            f" got {got}", file=file, line=line, field=fld,
        )
    terms = tuple(_label(v, file, line, f"{fld}[{k}]") for k, v in enumerate(value))
    for k, t in enumerate(terms):
        if t == "?" or (t.startswith("?") and not t[1:].strip()):
            raise InputError("a variable needs a name, e.g. ?x", file=file, line=line, field=f"{fld}[{k}]")
    if terms[1].startswith("?"):
        # Joins go through the (subject, predicate) and (predicate, object) indexes, so every
        # pattern must name its relation; a variable predicate would need a scan of the graph.
        raise InputError(
            f"variable predicate {terms[1]!r} is not supported: name the relation so the pattern"
            " can be joined through the graph's indexes",
            file=file, line=line, field=f"{fld}[1]",
        )
    return terms  # type: ignore[return-value]


def _rule(i: int, value, file, where: _Layout) -> Rule:
    fld = f"rule[{i}]"
    if not isinstance(value, dict):
        raise InputError(
            f"must be a table ([[rule]]), got {_type_name(value)}", file=file, line=where.rule_line(i), field=fld
        )
    for key in value:
        if key not in _RULE_KEYS:
            raise InputError(
                f"unknown key {key!r} in a rule (expected one of: {', '.join(_RULE_KEYS)})",
                file=file, line=where.rule_key(i, key), field=f"{fld}.{key}",
            )
    name = value.get("name", fld)
    if "name" in value:
        name = _label(name, file, where.rule_key(i, "name"), f"{fld}.name")
    if name in BUILTIN_RULES:
        raise InputError(
            f"{name!r} is the name of a built-in rule; choose another so provenance stays unambiguous",
            file=file, line=where.rule_key(i, "name"), field=f"{fld}.name",
        )
    lists: dict[str, tuple[Pattern, ...]] = {}
    for key in ("if", "then"):
        line = where.rule_key(i, key)
        if key not in value:
            raise InputError(
                f"missing: a rule needs at least one pattern in `{key}`", file=file, line=line, field=f"{fld}.{key}"
            )
        items = value[key]
        if not isinstance(items, list) or not items:
            raise InputError(
                f"must be a non-empty list of triple patterns, got "
                f"{'an empty list' if items == [] else _type_name(items)}",
                file=file, line=line, field=f"{fld}.{key}",
            )
        lists[key] = tuple(
            _pattern(p, file, where.rule_key(i, key, j), f"{fld}.{key}[{j}]") for j, p in enumerate(items)
        )
    bound = {t for pat in lists["if"] for t in pat if t.startswith("?")}
    for j, pat in enumerate(lists["then"]):
        for t in pat:
            if t.startswith("?") and t not in bound:
                raise InputError(
                    f"variable {t} does not appear in any premise (`if`), so it would have no value",
                    file=file, line=where.rule_key(i, "then", j), field=f"{fld}.then[{j}]",
                )
    groups = cross_product(lists["if"])
    if len(groups) > 1:
        parts = " × ".join("(" + ", ".join(" ".join(lists["if"][j]) for j in g) + ")" for g in groups)
        warn_input(
            f"rule {name!r}: its premises share no variable, so they join as a cross product {parts}:"
            " every pair of matching triples is tried (infer_rules spreads that work over cycles);"
            " link the premises through a shared variable",
            file=file, line=where.rule_key(i, "if"), field=f"{fld}.if",
        )
    return Rule(name, lists["if"], lists["then"])


def cross_product(premises: tuple[Pattern, ...]) -> list[list[int]]:
    """Premises grouped by shared variables (indexes, file order). More than one group means a
    cross product: no binding from one group narrows the lookups of another. A premise with
    no variable is a single lookup and joins nothing, so it is left out."""
    groups: list[tuple[set[str], list[int]]] = []
    for j, pat in enumerate(premises):
        vs = {t for t in (pat[0], pat[2]) if t.startswith("?")}
        if not vs:
            continue
        merged = [g for g in groups if g[0] & vs]
        for g in merged:
            groups.remove(g)
            vs |= g[0]
        groups.append((vs, sorted([j] + [k for g in merged for k in g[1]])))
    return sorted((g[1] for g in groups), key=lambda idx: idx[0])


def parse_rules(text: str, file: str | None = None) -> RuleSet:
    """Parse a rule file; raises InputError naming the line and field of the first problem."""
    data = parse_toml(text, file)
    where = _Layout(text)
    for key in data:
        if key not in _TOP_KEYS:
            raise InputError(
                f"unknown key {key!r} (expected one of: {', '.join(_TOP_KEYS)})",
                file=file, line=where.top(key), field=key,
            )
    transitive = _label_list(data, "transitive", file, where)
    symmetric = _label_list(data, "symmetric", file, where)
    inherit = _label_list(data, "inherit", file, where)
    raw_rules = data.get("rule", [])
    if not isinstance(raw_rules, list):
        raise InputError(
            f"must be an array of tables ([[rule]]), got {_type_name(raw_rules)}",
            file=file, line=where.top("rule"), field="rule",
        )
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for i, value in enumerate(raw_rules):
        r = _rule(i, value, file, where)
        if r.name in seen:
            raise InputError(
                f"duplicate rule name {r.name!r} (also rule[{seen[r.name]}])",
                file=file, line=where.rule_key(i, "name"), field=f"rule[{i}].name",
            )
        seen[r.name] = i
        rules.append(r)
    return RuleSet(transitive, symmetric, inherit, rules)


def load_rules(path) -> RuleSet:
    return parse_rules(read_user_file(path, "rule file"), str(Path(path)))


def parse_rule_files(files: list[list[str]]) -> RuleSet:
    """Rules from recorded [[file, text], ...] (a reload's, kept in the session store): the
    text is parsed and the file never read again; an InputError names the file and line."""
    return _parsed_files(tuple((name, text) for name, text in files))


@functools.lru_cache(maxsize=8)
def _parsed_files(files: tuple[tuple[str, str], ...]) -> RuleSet:
    # every restore of a state after a reload parses the same text: once is enough (an
    # agent never changes its RuleSet, so agents may share one; a refusal is not cached)
    rs = RuleSet.empty()
    for name, text in files:
        rs = rs.merged(parse_rules(text, name))
    return rs


# ---- forward chaining ------------------------------------------------------------------

# A candidate conclusion: subject, predicate, object (ids, or labels for a rule's constants,
# which kg.add creates on first use), confidence, rule name, premise keys.
_Candidate = tuple[int | str, int | str, int | str, float, str, tuple[tuple[int, int, int], ...]]


# Work one call may do: binding attempts (index entries examined) plus agenda triples taken
# up. The bundled scenarios need at most 190 a call (zoo, solar, shadow: their traces are the
# same with the bound as without); a rule whose premises form a cross product needs
# 2 x |facts|² over a run, so 2,000 facts once cost 67 s in a single call. 5,000 units take
# about 40 ms (`akh-tui bench`); the rest of the join is carried to the next call.
WORK_PER_CALL = 5_000

_PAUSE = None  # what a join yields when the call's work budget is spent (never a candidate)


class RuleEngine:
    """Incremental forward chaining over a KnowledgeGraph.

    ``cursor`` indexes ``kg.log``: triples before it have been joined, the rest are the
    agenda. A call stops when it has added ``max_new_per_call`` triples or done
    ``max_work_per_call`` units of work; the cursor then stays on the agenda triple whose
    join was cut and that join resumes in the next call, so a bounded run derives exactly
    what an unbounded one would, in the same order.

    A join sees the graph as it was when the join began (``kg.log[:bound]``): triples added
    meanwhile are joined when their own turn on the agenda comes. That makes a cut join
    reproducible: ``suspended()`` (bound, symbol count, work done) is persisted with the
    cursor, and an engine rebuilt from them (``resume``) re-walks the join's first part
    without charging it to the call, reaching the very state the original engine paused in.
    """

    def __init__(self, kg: KnowledgeGraph, ruleset: RuleSet, max_new_per_call: int = 5000,
                 max_work_per_call: int = WORK_PER_CALL) -> None:
        if max_new_per_call < 1:
            raise ValueError("max_new_per_call must be at least 1")
        if max_work_per_call < 1:
            raise ValueError("max_work_per_call must be at least 1")
        self.kg = kg
        self.ruleset = ruleset
        self.max_new_per_call = max_new_per_call
        self.max_work_per_call = max_work_per_call
        self._cursor = 0
        self._active: Iterator[_Candidate | None] | None = None
        self._bound = 0  # len(kg.log) when the active join began: it joins log[:bound] only
        self._sym_bound = 0  # len(kg.symbols) then: later symbols match nothing in that join
        self._join_work = 0  # work the active join has done, over every call
        self._resume: tuple[int, int, int] | None = None  # a persisted cut join to rebuild
        self._work = 0  # work charged to the current call
        self.joined = 0  # agenda triples taken up by the last run()
        self.probed = 0  # index entries examined by the last run(): its real cost
        self._version = -1
        self._ids: dict[str, int] = {}
        self._transitive: set[int] = set()
        self._symmetric: set[int] = set()
        self._inherit: list[int] = []
        self._is_a: int | None = None
        self._premise_index: dict[int, list[tuple[Rule, int]]] = {}
        self._labels = _dedupe(
            ruleset.transitive + ruleset.symmetric + ruleset.inherit + [IS_A]
            + [t for r in ruleset.rules for pat in r.premises for t in pat if not t.startswith("?")]
        )

    @property
    def cursor(self) -> int:
        return self._cursor

    @cursor.setter
    def cursor(self, value: int) -> None:
        if value < 0:
            raise ValueError("cursor must be >= 0")
        self._cursor = value
        self._active = None
        self._resume = None

    def suspended(self) -> list[int] | None:
        """The cut join at the cursor, as plain values to persist: [bound, symbols, work]."""
        if self._active is not None:
            return [self._bound, self._sym_bound, self._join_work]
        if self._resume is not None:
            return list(self._resume)
        return None

    def park(self) -> None:
        """Keep a suspended join as its persisted form (``suspended``) instead of the paused
        generator, whose frame holds this engine and so the graph: a reference cycle that
        left a dropped agent's graph to the cyclic collector. The next ``run`` rebuilds the
        join as a restored engine would, reaching the same state (an agent parks its engine
        when it is dropped: Agent.__del__)."""
        if self._active is not None:
            self._resume = (self._bound, self._sym_bound, self._join_work)
            self._active = None

    def resume(self, cursor: int, suspended: list[int] | None) -> None:
        """Restore a persisted cursor and cut join (see ``suspended``)."""
        self.cursor = cursor
        if suspended is not None:
            bound, sym_bound, work = (int(x) for x in suspended)
            self._resume = (bound, sym_bound, work)

    def pending(self) -> int:
        return len(self.kg.log) - self._cursor

    def run(self, cycle: int) -> list[Triple]:
        kg = self.kg
        log = kg.log
        new: list[Triple] = []
        limit = self.max_new_per_call
        budget = self.max_work_per_call
        self.joined = 0
        self.probed = 0
        self._work = 0
        while True:
            if self._active is None:
                if self._cursor >= len(log) or self._work >= budget:
                    break
                t = log[self._cursor]
                self.joined += 1
                self._work += 1
                if kg.is_meta_triple(t):
                    self._cursor += 1
                    continue
                if kg.symbol_version != self._version:
                    self._resolve()
                if self._resume is not None:
                    # rebuilt from a persisted cut: the work done before the cut is not this call's
                    self._bound, self._sym_bound, done = self._resume
                    self._resume = None
                    self._work -= done
                    self._join_work = 0
                else:
                    self._bound, self._sym_bound, self._join_work = len(log), len(kg.symbols), 0
                self._active = self._consequences(t)
            else:
                self.joined += 1
                self._work += 1
            for cand in self._active:
                if cand is _PAUSE:
                    return new  # the join stays suspended in self._active
                s, p, o, conf, name, premises = cand
                nt = kg.add(s, p, o, conf, f"inferred:{name}", cycle)
                if nt is None:
                    continue
                kg.derivations[nt.key] = (name, premises)
                new.append(nt)
                if len(new) >= limit:
                    return new  # the join stays suspended in self._active
            self._active = None
            self._cursor += 1
        return new

    def _probe(self) -> bool:
        """Count one binding attempt; True when the call's budget is spent (the join pauses)."""
        self.probed += 1
        self._join_work += 1
        self._work += 1
        return self._work >= self.max_work_per_call

    def _within(self, t: Triple | None) -> TypeGuard[Triple]:
        return t is not None and t.seq < self._bound

    # Rule labels are resolved to ids lazily and without creating symbols: a label the graph
    # has never seen cannot match anything yet, and the triple that introduces it will be in
    # the agenda, which re-resolves before it is joined.
    def _resolve(self) -> None:
        kg = self.kg
        rs = self.ruleset
        ids = {}
        for lab in self._labels:
            sid = kg.lookup(lab)
            if sid is not None:
                ids[lab] = sid
        self._ids = ids
        self._transitive = {ids[x] for x in rs.transitive if x in ids}
        self._symmetric = {ids[x] for x in rs.symmetric if x in ids}
        self._inherit = [ids[x] for x in rs.inherit if x in ids]
        self._is_a = ids.get(IS_A)
        index: dict[int, list[tuple[Rule, int]]] = {}
        for rule in rs.rules:
            for j, pat in enumerate(rule.premises):
                pid = ids.get(pat[1])
                if pid is not None:
                    index.setdefault(pid, []).append((rule, j))
        self._premise_index = index
        self._version = kg.symbol_version

    def _id(self, label: str) -> int | None:
        """A rule label's id, if the symbol existed when the active join began."""
        sid = self._ids.get(label)
        return sid if sid is not None and sid < self._sym_bound else None

    def _consequences(self, t: Triple) -> Iterator[_Candidate | None]:
        """Every conclusion the agenda triple t takes part in, in the fixed rule order.

        Index lists only grow, in log order, so a walk stops at the first entry past the
        join's bound; it goes by position because the lists may grow while it is paused."""
        kg = self.kg
        sy = kg.symbols
        s, p, o = t.subject, t.predicate, t.object
        tc = t.confidence
        within = self._within
        if p in self._transitive:
            objs = kg.objects(o, p)  # t as the left premise: (s p o), (o p c)
            i = 0
            while i < len(objs):
                c = objs[i]
                i += 1
                right = kg.get(o, p, c)
                if not within(right):
                    break
                if self._probe():
                    yield _PAUSE
                if c == s or sy[c].meta:
                    continue
                yield s, p, c, min(tc, right.confidence), "transitive", (t.key, right.key)
            subs = kg.subjects(p, s)  # t as the right premise: (a p s), (s p o)
            i = 0
            while i < len(subs):
                a = subs[i]
                i += 1
                left = kg.get(a, p, s)
                if not within(left):
                    break
                if self._probe():
                    yield _PAUSE
                if a == o or sy[a].meta:
                    continue
                yield a, p, o, min(tc, left.confidence), "transitive", (left.key, t.key)
        if p in self._symmetric and s != o:
            yield o, p, s, tc, "symmetric", (t.key,)
        is_a = self._is_a
        if is_a is not None and is_a < self._sym_bound:
            if p == is_a:  # t = (s is-a o): s inherits o's inherited properties
                for q in self._inherit:
                    if q >= self._sym_bound:
                        continue
                    objs = kg.objects(o, q)
                    i = 0
                    while i < len(objs):
                        c = objs[i]
                        i += 1
                        prop = kg.get(o, q, c)
                        if not within(prop):
                            break
                        if self._probe():
                            yield _PAUSE
                        if sy[c].meta:
                            continue
                        yield s, q, c, min(tc, prop.confidence), "inherit", (t.key, prop.key)
            if p in self._inherit:  # t = (s p o): every (a is-a s) inherits it
                subs = kg.subjects(is_a, s)
                i = 0
                while i < len(subs):
                    a = subs[i]
                    i += 1
                    isa = kg.get(a, is_a, s)
                    if not within(isa):
                        break
                    if self._probe():
                        yield _PAUSE
                    if sy[a].meta:
                        continue
                    yield a, p, o, min(tc, isa.confidence), "inherit", (isa.key, t.key)
        for rule, j in self._premise_index.get(p, ()):
            binding = self._match(rule.premises[j], t, {})
            if binding is None:
                continue
            chosen: list[Triple | None] = [None] * len(rule.premises)
            chosen[j] = t
            rest = [k for k in range(len(rule.premises)) if k != j]
            yield from self._join(rule, binding, chosen, rest)

    def _term(self, term: str, binding: dict[str, int]) -> int | None:
        """The id a term stands for; None if it is an unbound variable or an unknown label."""
        if term.startswith("?"):
            return binding.get(term)
        sid = self._id(term)
        return -1 if sid is None else sid  # -1: a label not in the graph matches no triple

    def _match(self, pat: Pattern, t: Triple, binding: dict[str, int]) -> dict[str, int] | None:
        b = binding
        for term, value in ((pat[0], t.subject), (pat[2], t.object)):
            if term.startswith("?"):
                have = b.get(term)
                if have is None:
                    if b is binding:
                        b = dict(binding)
                    b[term] = value
                elif have != value:
                    return None
            elif self._ids.get(term) != value:
                return None
        return b

    def _join(self, rule: Rule, binding: dict[str, int], chosen: list,
              rest: list[int]) -> Iterator[_Candidate | None]:
        if not rest:
            conf = min(x.confidence for x in chosen)
            keys = tuple(x.key for x in chosen)
            for cs, cp, co in rule.conclusions:
                yield (
                    binding[cs] if cs.startswith("?") else cs,
                    cp,
                    binding[co] if co.startswith("?") else co,
                    conf, rule.name, keys,
                )
            return
        # Most-bound premise first (ties: file order): a bound end turns the join into an
        # index lookup instead of a walk over every triple of the predicate.
        k = max(rest, key=lambda i: (self._bound_count(rule.premises[i], binding), -i))
        pat = rule.premises[k]
        pid = self._id(pat[1])
        if pid is None:
            return
        s = self._term(pat[0], binding)
        o = self._term(pat[2], binding)
        if s == -1 or o == -1:
            return
        kg = self.kg
        sy = kg.symbols
        remaining = [i for i in rest if i != k]
        if s is not None and o is not None:
            self.probed += 1  # the lookup itself (not charged: it is one step, like its candidate)
            found = kg.get(s, pid, o)
            entries: Sequence[Any] = [o] if self._within(found) else []
        elif s is not None:
            entries = kg.objects(s, pid)
        elif o is not None:
            entries = kg.subjects(pid, o)
        else:
            entries = kg.by_predicate(pid)
        i = 0
        while i < len(entries):
            e = entries[i]
            i += 1
            if s is not None:
                tr = kg.get(s, pid, e)
            elif o is not None:
                tr = kg.get(e, pid, o)
            else:
                tr = kg.get(e[0], pid, e[1])
            if not self._within(tr):
                break
            if self._probe():
                yield _PAUSE
            if sy[tr.subject].meta or sy[tr.object].meta:
                continue
            b = self._match(pat, tr, binding)
            if b is None:
                continue
            chosen[k] = tr
            yield from self._join(rule, b, chosen, remaining)
        chosen[k] = None

    def _bound_count(self, pat: Pattern, binding: dict[str, int]) -> int:
        return sum(1 for t in (pat[0], pat[2]) if not t.startswith("?") or t in binding)
