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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from .errors import InputError, parse_toml, read_user_file
from .tomlpos import TomlLocator
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
    return Rule(name, lists["if"], lists["then"])


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


# ---- forward chaining ------------------------------------------------------------------

# A candidate conclusion: subject, predicate, object (ids, or labels for a rule's constants,
# which kg.add creates on first use), confidence, rule name, premise keys.
_Candidate = tuple[int | str, int | str, int | str, float, str, tuple[tuple[int, int, int], ...]]


class RuleEngine:
    """Incremental forward chaining over a KnowledgeGraph.

    ``cursor`` indexes ``kg.log``: triples before it have been joined, the rest are the
    agenda. When ``max_new_per_call`` stops a run in the middle of an agenda triple, the
    cursor stays on that triple and its suspended join resumes in the next call, so a
    bounded run derives exactly what an unbounded one would, in the same order. (An engine
    rebuilt from a persisted cursor re-joins that one triple from its start instead, which
    only repeats derivations kg.add already knows.)
    """

    def __init__(self, kg: KnowledgeGraph, ruleset: RuleSet, max_new_per_call: int = 5000) -> None:
        if max_new_per_call < 1:
            raise ValueError("max_new_per_call must be at least 1")
        self.kg = kg
        self.ruleset = ruleset
        self.max_new_per_call = max_new_per_call
        self._cursor = 0
        self._active: Iterator[_Candidate] | None = None
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

    def pending(self) -> int:
        return len(self.kg.log) - self._cursor

    def run(self, cycle: int) -> list[Triple]:
        kg = self.kg
        log = kg.log
        new: list[Triple] = []
        limit = self.max_new_per_call
        self.joined = 0
        self.probed = 0
        while True:
            if self._active is None:
                if self._cursor >= len(log):
                    break
                t = log[self._cursor]
                self.joined += 1
                if kg.is_meta_triple(t):
                    self._cursor += 1
                    continue
                if kg.symbol_version != self._version:
                    self._resolve()
                self._active = self._consequences(t)
            else:
                self.joined += 1
            for s, p, o, conf, name, premises in self._active:
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

    def _consequences(self, t: Triple) -> Iterator[_Candidate]:
        """Every conclusion the agenda triple t takes part in, in the fixed rule order."""
        kg = self.kg
        sy = kg.symbols
        s, p, o = t.subject, t.predicate, t.object
        tc = t.confidence
        if p in self._transitive:
            for c in list(kg.objects(o, p)):  # t as the left premise: (s p o), (o p c)
                self.probed += 1
                if c == s or sy[c].meta:
                    continue
                right = kg.get(o, p, c)
                yield s, p, c, min(tc, right.confidence), "transitive", (t.key, right.key)
            for a in list(kg.subjects(p, s)):  # t as the right premise: (a p s), (s p o)
                self.probed += 1
                if a == o or sy[a].meta:
                    continue
                left = kg.get(a, p, s)
                yield a, p, o, min(tc, left.confidence), "transitive", (left.key, t.key)
        if p in self._symmetric and s != o:
            yield o, p, s, tc, "symmetric", (t.key,)
        is_a = self._is_a
        if is_a is not None:
            if p == is_a:  # t = (s is-a o): s inherits o's inherited properties
                for q in self._inherit:
                    for c in list(kg.objects(o, q)):
                        self.probed += 1
                        if sy[c].meta:
                            continue
                        prop = kg.get(o, q, c)
                        yield s, q, c, min(tc, prop.confidence), "inherit", (t.key, prop.key)
            if p in self._inherit:  # t = (s p o): every (a is-a s) inherits it
                for a in list(kg.subjects(is_a, s)):
                    self.probed += 1
                    if sy[a].meta:
                        continue
                    isa = kg.get(a, is_a, s)
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
        return self._ids.get(term, -1)  # -1: a label not in the graph matches no triple

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

    def _join(self, rule: Rule, binding: dict[str, int], chosen: list, rest: list[int]) -> Iterator[_Candidate]:
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
        pid = self._ids.get(pat[1])
        if pid is None:
            return
        s = self._term(pat[0], binding)
        o = self._term(pat[2], binding)
        if s == -1 or o == -1:
            return
        kg = self.kg
        sy = kg.symbols
        if s is not None and o is not None:
            self.probed += 1
            found = kg.get(s, pid, o)
            candidates = [found] if found is not None else []
        elif s is not None:
            candidates = [kg.get(s, pid, x) for x in list(kg.objects(s, pid))]
        elif o is not None:
            candidates = [kg.get(x, pid, o) for x in list(kg.subjects(pid, o))]
        else:
            candidates = [kg.get(a, pid, b) for a, b in list(kg.by_predicate(pid))]
        remaining = [i for i in rest if i != k]
        for tr in candidates:
            self.probed += 1
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
