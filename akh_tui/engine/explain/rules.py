"""The rule browser (`akh-tui agent rules`, the workbench's `R`): each rule's premises with
the bindings left after joining the ones before it (as Soar's `matches` counts them), why a
rule did not fire for a chosen symbol (the first premise that failed, or, when every premise
holds, whether its conclusion is in the graph already or still waits on infer_rules' agenda),
and the agenda: what `infer_rules` would add if it ran now.

The built-in relations are rules too, written out as infer_rules applies them:
transitive p is (?a p ?b) (?b p ?c) ⇒ (?a p ?c); symmetric p is (?a p ?b) ⇒ (?b p ?a);
inherit q is (?a is-a ?b) (?b q ?c) ⇒ (?a q ?c). The agenda is infer_rules itself run on a
copy of the graph from the engine's own cursor, so it is what the next call adds, in its
order and within its per-call bounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..knowledge.rules import IS_A, Rule, RuleEngine, RuleSet
from .orient import provenance_kind
from .patterns import Pattern, is_var, join, pattern_text, substitute

if TYPE_CHECKING:
    from ..cycle.agent import Agent

AGENDA_SHOWN = 50  # agenda triples listed (all are counted)


def all_rules(rs: RuleSet) -> list[Rule]:
    """The rule file's rules, then the built-in relations as rules (named transitive(p), ...)."""
    out = list(rs.rules)
    out += [Rule(f"transitive({p})", (("?a", p, "?b"), ("?b", p, "?c")), (("?a", p, "?c"),)) for p in rs.transitive]
    out += [Rule(f"symmetric({p})", (("?a", p, "?b"),), (("?b", p, "?a"),)) for p in rs.symmetric]
    out += [Rule(f"inherit({q})", (("?a", IS_A, "?b"), ("?b", q, "?c")), (("?a", q, "?c"),)) for q in rs.inherit]
    return out


def provenance_name(rule: Rule) -> str:
    """The name infer_rules writes in provenance (`inferred:<name>`): a built-in's kind."""
    return rule.name.split("(", 1)[0]


def _focus_var(rule: Rule) -> str | None:
    """The variable a chosen symbol stands for: the conclusion's subject (what the user
    expected the rule to say something about), else the first premise's first variable."""
    for c in rule.conclusions:
        if is_var(c[0]):
            return c[0]
    for p in rule.premises:
        for t in p:
            if is_var(t) and t != "?":
                return t
    return None


def _find(rs: RuleSet, name: str) -> Rule:
    rules = all_rules(rs)
    for r in rules:
        if r.name == name:
            return r
    raise InputError(f"no rule {name!r}; the rules: {', '.join(r.name for r in rules) or 'none'}", field="rule")


def matches(agent: "Agent", rule: Rule, symbol: str | None = None) -> dict[str, Any]:
    """{"rule", "premises": [{"pattern", "bindings" (left after it), "capped"}], "conclusions",
    "fires" (complete bindings), "symbol", "var", "why_not" (lines), "new"/"known" (its
    conclusions for those bindings: not in the graph yet / in it, with provenance)}."""
    kg = agent.kg
    start: dict[str, int] = {}
    var = None
    if symbol is not None:
        sid = kg.lookup(symbol)
        if sid is None:
            raise InputError(f"no symbol {symbol!r} in the graph", field="symbol")
        var = _focus_var(rule)
        if var is None:
            raise InputError(f"rule {rule.name} has no variable to put {symbol} in", field="symbol")
        start = {var: sid}
    steps = join(kg, rule.premises, start)
    premises = [{"pattern": pattern_text(p), "bindings": steps[i].count if i < len(steps) else None,
                 "capped": steps[i].capped if i < len(steps) else False}
                for i, p in enumerate(rule.premises)]
    complete = steps[-1].bindings if len(steps) == len(rule.premises) else []
    new: list[str] = []
    known: list[dict[str, str]] = []
    for b, _used in complete:
        for c in rule.conclusions:
            cs, cp, co = (b[x] if is_var(x) else kg.lookup(x) for x in c)
            if cs is not None and cs == co and provenance_name(rule) in ("transitive", "symmetric"):
                continue  # infer_rules never concludes (a p a)
            text = " ".join(kg.label(x) if x is not None else term for x, term in zip((cs, cp, co), c))
            t = kg.get(cs, cp, co) if cs is not None and cp is not None and co is not None else None
            if t is None:
                new.append(text)
            else:
                known.append({"triple": text, "source": provenance_kind(t.provenance)["text"]})
    new = list(dict.fromkeys(new))
    out: dict[str, Any] = {"rule": rule.name, "premises": premises,
                           "conclusions": [pattern_text(c) for c in rule.conclusions],
                           "fires": len(complete), "symbol": symbol, "var": var, "new": new, "known": known}
    out["why_not"] = _why_not(agent, rule, symbol, var, start, steps, new, known) if symbol is not None else []
    return out


def _why_not(agent: "Agent", rule: Rule, symbol: str | None, var: str | None, start: dict[str, int],
             steps: list, new: list[str], known: list[dict[str, str]]) -> list[str]:
    kg = agent.kg
    head = f"{rule.name} with {var}={symbol}"
    for i, st in enumerate(steps):
        if st.count == 0:
            before = steps[i - 1].bindings if i else [(start, ())]
            shown = sorted({substitute(kg, st.pattern, b) for b, _ in before[:5]})
            more = f" (and {len(before) - 5} more bindings)" if len(before) > 5 else ""
            why = [f"{head}: premise {i + 1} {pattern_text(st.pattern)} failed: no triple "
                   + " or ".join(shown) + more]
            if i:
                held = "premise 1 held" if i == 1 else f"premises 1..{i} held"
                why.append(f"  {held} with {len(before)} binding(s)")
            return why
    if new:
        return [f"{head}: every premise holds; {len(new)} conclusion(s) not in the graph yet: "
                + "; ".join(new[:5]) + f" (infer_rules adds them when it runs: {agent.rules.pending()} triple(s) "
                "on its agenda)"]
    return [f"{head}: every premise holds and its conclusions are in the graph: "
            + "; ".join(f"{k['triple']} ({k['source']})" for k in known[:5])]


def agenda(agent: "Agent", shown: int = AGENDA_SHOWN) -> dict[str, Any]:
    """What infer_rules would add now: the engine run on a copy of the graph from its own
    cursor (the agent is not changed). {"pending" (agenda triples not joined yet), "adds"
    [{"triple", "rule", "premises"}], "total"}."""
    kg = agent.kg.copy()
    eng = agent.rules
    twin = RuleEngine(kg, eng.ruleset, eng.max_new_per_call, eng.max_work_per_call)
    twin.resume(eng.cursor, eng.suspended())
    new = twin.run(agent.cycle + 1)
    adds = []
    for t in new[:shown]:
        d = kg.derivations.get(t.key)
        adds.append({"triple": kg.text(t), "rule": d[0] if d else t.provenance,
                     "premises": [" ".join(kg.label(x) for x in k) for k in d[1]] if d else []})
    return {"pending": eng.pending(), "adds": adds, "total": len(new)}


def browse(agent: "Agent", rule: str | None = None, symbol: str | None = None) -> dict[str, Any]:
    """The rule browser: every rule's matches (or one rule's), why not for `symbol`, the agenda,
    and "lines" to print."""
    rs = agent.rules.ruleset
    rules = [_find(rs, rule)] if rule is not None else all_rules(rs)
    if symbol is not None and agent.kg.lookup(symbol) is None:
        raise InputError(f"no symbol {symbol!r} in the graph", field="symbol")
    found = [matches(agent, r, symbol) for r in rules]
    ag = agenda(agent)
    lines: list[str] = []
    for m in found:
        lines.append(f"{m['rule']}: {' '.join(m['premises'][i]['pattern'] for i in range(len(m['premises'])))}"
                     f" ⇒ {' '.join(m['conclusions'])}")
        for i, p in enumerate(m["premises"]):
            n = "-" if p["bindings"] is None else (f"≥{p['bindings']}" if p["capped"] else str(p["bindings"]))
            lines.append(f"  {i + 1}. {p['pattern']:<40} {n} binding(s)")
        lines += ["  " + w for w in m["why_not"]]
    lines.append(f"agenda: {ag['pending']} triple(s) not joined yet; infer_rules would add {ag['total']} now")
    lines += [f"  + {a['triple']}  [{a['rule']}" + (f" from {'; '.join(a['premises'])}" if a["premises"] else "") + "]"
              for a in ag["adds"]]
    return {"cycle": agent.cycle, "rules": found, "agenda": ag, "lines": lines}
