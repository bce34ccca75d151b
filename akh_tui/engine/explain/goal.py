"""Why is this goal not done? (issue 13 §2)

For each of a goal's criteria (keyword or triple pattern): found or missing. When found: the
cycle, tool, input and the evidence line, from the recorded cycles of the branch. When
missing: whether the graph already holds it (since which cycle, from which rule, tool, user
or file and line), and which tool with which input would return it.

"No tool call for the goal returned it" is exact, not a guess: a goal's evaluation (SPEC §8)
marks a criterion found as soon as any of its tool calls returns a matching triple or word
(hypotheses excepted), so a missing criterion was returned by none of them.

Reads the records (`Run.records()`) and the live graph, only around the criterion's symbols:
bounded by `SCAN_CAP` triples per criterion, never the whole graph.
"""

from __future__ import annotations

from pathlib import Path
from array import array
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..goals.goal import Goal, TriplePattern
from .orient import provenance_kind
from ..text import label_key, normalised_words

if TYPE_CHECKING:
    from ..cycle.agent import Agent
    from ..knowledge.kg import KnowledgeGraph, Triple

SCAN_CAP = 10_000  # triples read per criterion when looking for a match in the graph
EVIDENCE_CHARS = 160


def _ids(kg: "KnowledgeGraph", term: str) -> list[int]:
    """Symbols a pattern term can match (labels compare case-insensitively)."""
    out: list[int] = []
    for cand in (kg.lookup(term), kg.lookup(term.lower())):
        if cand is not None and cand not in out:
            out.append(cand)
    for sid in kg.by_key(label_key(term)):
        if sid not in out and kg.label(sid).lower() == term.lower():
            out.append(sid)
    return out


def _pattern_matches(kg: "KnowledgeGraph", pat: TriplePattern) -> list["Triple"]:
    """Triples in the graph matching `pat`, oldest first, reading at most SCAN_CAP triples."""
    pool: list["Triple"] = []
    if not pat.subject.startswith("?"):
        for s in _ids(kg, pat.subject):
            pool += kg.facts_out(s)[:SCAN_CAP]
    elif not pat.object.startswith("?"):
        for o in _ids(kg, pat.object):
            pool += kg.facts_in(o)[:SCAN_CAP]
    elif not pat.predicate.startswith("?"):
        for p in _ids(kg, pat.predicate):
            for s, o in kg.by_predicate(p)[:SCAN_CAP]:
                t = kg.get(s, p, o)
                if t is not None:
                    pool.append(t)
    found = [t for t in pool[:SCAN_CAP] if pat.matches(kg, t)]
    return sorted(found, key=lambda t: t.seq)


def _file_line(files: Iterable[Path], kg: "KnowledgeGraph", t: "Triple") -> tuple[str, int] | None:
    """Where an asserted triple is written: the first scenario triple file and line holding it."""
    want = (kg.label(t.subject), kg.label(t.predicate), kg.label(t.object))
    for f in files:
        try:
            with open(f, encoding="utf-8", newline="") as fh:
                for n, line in enumerate(fh, start=1):
                    parts = line.rstrip("\r\n").split("\t")
                    if len(parts) >= 3 and tuple(p.strip() for p in parts[:3]) == want:
                        return str(f), n
        except (OSError, UnicodeDecodeError):
            continue
    return None


def _origin(kg: "KnowledgeGraph", t: "Triple", files: list[Path]) -> dict[str, Any]:
    """Since when and from where a triple is in the graph."""
    kind = provenance_kind(t.provenance)
    out: dict[str, Any] = {"triple": kg.text(t), "cycle": t.cycle, "provenance": t.provenance, "kind": kind["kind"],
                           "by": kind["by"]}
    d = kg.derivations.get(t.key)
    if d is not None:
        out["premises"] = [kg.text(p) for p in (kg.get(*k) for k in d[1]) if p is not None]
    if kind["kind"] == "asserted":
        where = _file_line(files, kg, t)
        if where is not None:
            out["file"], out["line"] = where
    return out


def _origin_text(o: dict[str, Any]) -> str:
    k = o["kind"]
    if k == "inferred":
        prem = ", ".join(f"({p})" for p in o.get("premises", []))
        return (f"the graph holds it since cycle {o['cycle']}: ({o['triple']}), inferred by rule {o['by']}"
                + (f" from {prem}" if prem else ""))
    if k == "asserted":
        where = f" ({o['file']}, line {o['line']})" if "file" in o else ""
        return f"the graph holds it since the start: ({o['triple']}), asserted in the scenario's triple file{where}"
    if k == "hypothesis":
        return (f"the graph holds it only as a hypothesis since cycle {o['cycle']}: ({o['triple']}), by "
                f"synthesize_triple; a hypothesis is not evidence")
    if k == "user":
        return f"the graph holds it since cycle {o['cycle']}: ({o['triple']}), from the user"
    return f"the graph holds it since cycle {o['cycle']}: ({o['triple']}), added by tool {o['by']}"


def _kg_query_input(agent: "Agent", t: "Triple") -> str | None:
    """A kg_query input whose answer (the symbol's first `query_limit` triples) holds t."""
    kg = agent.kg
    for sid in (t.subject, t.object):
        if any(x.key == t.key for x in kg.adjacent(sid, limit=agent.config.query_limit)):
            return kg.label(sid)
    return None


def _evidence(output: str, needles: list[str]) -> str:
    """The part of a tool's output that holds the criterion (else its beginning)."""
    parts = [p.strip() for chunk in output.split("\n") for p in chunk.split("; ")]
    for p in parts:
        low = p.lower()
        if all(n.lower() in low for n in needles):
            return p[:EVIDENCE_CHARS]
    for p in parts:
        words = set(normalised_words(p))
        if all(set(normalised_words(n)) <= words for n in needles):
            return p[:EVIDENCE_CHARS]
    return output[:EVIDENCE_CHARS]


SPAN_LIST = 20  # up to this many cycles are listed one by one; more are written as spans
SPANS_SHOWN = 8  # spans written out of a long history: the first ones, then the last


def _span(cycles: Sequence[int]) -> str:
    """A goal's worked cycles as text: 'cycle 4', 'cycles 3–9', 'cycles 2, 5, 8', and for a
    long history its spans ('cycles 1–40, 42–90, … 9,990–10,000 (131 spans)'), so a line
    stays short however long the run."""
    if not cycles:
        return "never"
    if cycles[-1] - cycles[0] + 1 == len(cycles):  # ascending and distinct: contiguous
        return f"cycle {cycles[0]}" if len(cycles) == 1 else f"cycles {cycles[0]}–{cycles[-1]}"
    if len(cycles) <= SPAN_LIST:
        return "cycles " + ", ".join(str(c) for c in cycles)
    return "cycles " + _spans_text(cycles)


def _runs(cycles: Iterable[int]) -> Iterable[tuple[int, int]]:
    """Ascending cycles as (first, last) of each run of consecutive ones."""
    lo = prev = -1
    for c in cycles:
        if c == prev + 1 and lo >= 0:
            prev = c
            continue
        if lo >= 0:
            yield lo, prev
        lo = prev = c
    if lo >= 0:
        yield lo, prev


def _spans_text(cycles: Sequence[int]) -> str:
    """The first SPANS_SHOWN runs, the last one and how many there are (one pass, no list)."""
    count, last = 0, (0, 0)
    head: list[tuple[int, int]] = []
    for run in _runs(cycles):
        count += 1
        last = run
        if len(head) < SPANS_SHOWN:
            head.append(run)
    text = ", ".join(f"{a}–{b}" if a != b else str(a) for a, b in head)
    if count > len(head):
        text += ", … " + (f"{last[0]}–{last[1]}" if last[0] != last[1] else str(last[0])) + f" ({count} spans)"
    return text


def explain_goal(agent: "Agent", records: Iterable[Mapping[str, Any]], goal_id: int, kg_files: list[Path] | None = None) -> dict[str, Any]:
    """Why goal `goal_id` is (not) done. Returns {"goal": {id, description, criteria, status,
    coverage, fail_reason, parent}, "cycles": [worked cycles], "subgoals": [{id, status, cycles,
    criteria}], "tools": [{tool, input, cycles}], "criteria": [{criterion, kind, found,
    found_at: {cycle, tool, input, evidence} | None, found_by_subgoal, in_graph: origin | None,
    would_return: {tool, input} | None, lines}], "lines": [the explanation as text]}.
    Raises KeyError for an unknown goal.

    `records` is read once, oldest first, and no record is kept (`_History`): a goal worked on
    for a million cycles is explained in the memory of one record and its cycle numbers."""
    g = agent.goals.get(goal_id)
    if g is None:
        raise KeyError(f"no goal #{goal_id}")
    files = list(kg_files or [])
    kids = [agent.goals[c] for c in g.children]
    h = _History(g, [k.id for k in kids])
    for r in records:
        h.add(r)
    cycles = list(h.cycles)
    calls = {k: list(v) for k, v in h.calls.items()}
    worked = {k: list(v) for k, v in h.worked.items()}
    queried = [inp for (tool, inp) in calls if tool == "kg_query" and inp]

    c = g.parsed
    entries: list[dict[str, Any]] = []
    for i, kw in enumerate(c.keywords):
        entries.append(_criterion(agent, g, h, kids, kw, None, kw in g.found, files, queried))
    for i, pat in enumerate(c.patterns):
        entries.append(_criterion(agent, g, h, kids, str(pat), pat, i in g.found_patterns, files, queried))

    found = sum(e["found"] for e in entries)
    status = g.status + (f" ({g.fail_reason})" if g.fail_reason else "")
    done_kids = [k for k in kids if k.status == "completed"]
    if g.status == "completed" and done_kids:
        status += " (through sub-goal" + ("s " if len(done_kids) > 1 else " ") + \
            ", ".join(f"#{k.id}" for k in done_kids) + ")"
    lines = [f"goal #{g.id} {g.description!r}: {status}; coverage {g.coverage:.2f} ({found} of {len(entries)} "
             f"criteria found)"]
    if not entries:
        lines.append("  it has no criteria: nothing can complete it")
    lines.append(f"worked on at {_span(cycles)}" + (f" ({len(cycles)} cycles)" if len(cycles) > 1 else "")
                 if cycles else "never worked on")
    if calls:
        lines.append("tool calls: " + ", ".join(f"{t}({inp})" + (f" ×{len(cs)}" if len(cs) > 1 else "")
                                                for (t, inp), cs in calls.items()))
    if kids:
        lines.append("sub-goals: " + "; ".join(
            f"#{k.id} {k.status}, " + (f"worked on at {_span(worked[k.id])}" if worked[k.id] else "never worked on")
            for k in kids))
    for e in entries:
        lines += e["lines"]
    return {
        "goal": {"id": g.id, "description": g.description, "criteria": g.criteria, "status": g.status,
                 "coverage": g.coverage, "fail_reason": g.fail_reason, "parent": g.parent},
        "cycles": cycles,
        "subgoals": [{"id": k.id, "description": k.description, "status": k.status, "cycles": worked[k.id],
                      "criteria": k.criteria} for k in kids],
        "tools": [{"tool": t, "input": inp, "cycles": cs} for (t, inp), cs in calls.items()],
        "criteria": entries,
        "lines": lines,
    }


def _as_written(criteria: str, keyword: str) -> str:
    """A keyword as the criteria spell it ("venus" for the normalised "venu")."""
    for w in criteria.replace("(", " ").replace(")", " ").replace(",", " ").split():
        if normalised_words(w) == [keyword]:
            return w
    return keyword


def _has(goal: Goal, criterion: str) -> bool | None:
    """Whether `goal` found `criterion` (None: it is not one of its criteria)."""
    c = goal.parsed
    if criterion in c.keywords:
        return criterion in goal.found
    for i, p in enumerate(c.patterns):
        if str(p) == criterion:
            return i in goal.found_patterns
    return None


def _criterion(agent: "Agent", g: Goal, h: "_History", kids: list[Goal], text: str, pat: TriplePattern | None,
               found: bool, files: list[Path], queried: list[str]) -> dict[str, Any]:
    kg = agent.kg
    e: dict[str, Any] = {"criterion": text, "kind": "pattern" if pat is not None else "keyword", "found": found,
                         "found_at": None, "found_by_subgoal": None, "in_graph": None, "would_return": None}
    shown = text if pat is not None else _as_written(g.criteria, text)
    e["word"] = shown
    lines = [f"  {shown}: {'found' if found else 'missing'}"]
    if found:
        at = h.found_at.get(text)
        if at is not None:
            e["found_at"] = at
            lines.append(f"    at cycle {at['cycle']} by {at['tool']}({at['input']}): {at['evidence']}")
        e["lines"] = lines
        return e
    who = f"goal #{g.id}"
    sharing = [k for k in kids if _has(k, text) is not None]
    by_kid = next((k for k in sharing if _has(k, text)), None)
    if by_kid is not None:
        e["found_by_subgoal"] = by_kid.id
        lines.append(f"    sub-goal #{by_kid.id} found it")
    if not h.cycles and not any(True for k in sharing):
        lines.append(f"    no tool has run for {who} yet")
    else:
        others = [k for k in sharing if k.id != (by_kid.id if by_kid else None)]
        nor = f" (nor for sub-goal{'s' if len(others) > 1 else ''} " + ", ".join(f"#{k.id}" for k in others) + ")" \
            if others else ""
        lines.append(f"    no tool call for {who} returned it{nor}")
    if pat is not None:
        matches = _pattern_matches(kg, pat)
        evidence = [t for t in matches if t.provenance != "tool:synthesize_triple"]
        t = (evidence or matches)[0] if (evidence or matches) else None
        if t is None:
            lines.append("    the graph does not hold it")
        else:
            e["in_graph"] = _origin(kg, t, files)
            lines.append("    " + _origin_text(e["in_graph"]))
            if evidence:
                inp = _kg_query_input(agent, t)
                if inp is not None:
                    e["would_return"] = {"tool": "kg_query", "input": inp}
                    ran = f" (kg_query ran on {', '.join(dict.fromkeys(queried))} only)" if queried and inp not in queried else ""
                    lines.append(f"    kg_query({inp}) would have returned it{ran}")
                else:
                    lines.append(f"    no kg_query input returns it within its first {agent.config.query_limit} triples")
    else:
        holders = [s for s in kg.by_token(text)[:64] if kg.adjacent_count(s)]
        if not holders:
            lines.append(f"    the graph holds no symbol with the word {text!r} in a triple")
        else:
            sid = holders[0]
            first = min(kg.adjacent(sid, limit=64), key=lambda t: t.seq)
            e["in_graph"] = _origin(kg, first, files) | {"symbol": kg.label(sid)}
            lines.append(f"    the graph holds {kg.label(sid)!r}: " + _origin_text(e["in_graph"]).removeprefix("the graph holds it "))
            e["would_return"] = {"tool": "kg_query", "input": kg.label(sid)}
            ran = f" (kg_query ran on {', '.join(dict.fromkeys(queried))} only)" if queried and kg.label(sid) not in queried else ""
            lines.append(f"    kg_query({kg.label(sid)}) would have returned it{ran}")
    e["lines"] = lines
    return e


class _History:
    """What the explanation needs of a goal's recorded cycles, gathered in one pass: the cycles
    that worked on it and on each sub-goal, its tool calls and their cycles, and for each
    criterion the first of its cycles whose tool call returned it (cycle, tool, input and the
    evidence line). Cycle numbers are kept as machine integers (8 bytes each); records are not
    kept at all."""

    def __init__(self, goal: Goal, kids: list[int]) -> None:
        self.goal = goal.id
        self.cycles = array("l")
        self.calls: dict[tuple[str, str], array[int]] = {}
        self.worked: dict[int, array[int]] = {k: array("l") for k in kids}
        c = goal.parsed
        # criterion text -> the words the evidence line must hold
        self.pending: dict[str, list[str]] = {kw: [kw] for kw in c.keywords}
        for pat in c.patterns:
            self.pending[str(pat)] = [n for n in (pat.subject, pat.predicate, pat.object) if not n.startswith("?")]
        self.found_at: dict[str, dict[str, Any]] = {}

    def add(self, r: Mapping[str, Any]) -> None:
        gid, cycle = r["goal"]["id"], r["cycle"]
        if gid != self.goal:
            kid = self.worked.get(gid)
            if kid is not None:
                kid.append(cycle)
            return
        self.cycles.append(cycle)
        tool, inp = r["decide"]["tool"], r["decide"]["input"]
        self.calls.setdefault((tool, inp), array("l")).append(cycle)
        if self.pending:
            act = r["act"]
            missing = act.get("missing", [])
            for text in [t for t in self.pending if t not in missing]:
                needles = self.pending.pop(text)
                self.found_at[text] = {"cycle": cycle, "tool": tool, "input": inp,
                                       "evidence": _evidence(act.get("output", ""), needles)}
