"""Plain-English explanations of one Decide phase (SPEC §6), read from a cycle record (SPEC §11).

Pure and deterministic: it only reads `record["decide"]` (and `record["act"]` for a veto), so it
works the same on a live record and on one replayed from a trace file.

- `runner_up(record)`: the best offered candidate other than the chosen one.
- `why_chosen(record)`: the chosen tool's breakdown, then how it beat the runner-up, factor by
  factor, largest contribution to the margin first.
- `why_not(record, tool)` / `why_not_text(record, tool)`: why a candidate lost, and which single
  factor change ("closer") would have made it win.

Tie rule (SPEC §6): ties go to the earlier tool in the candidates' order, so a candidate that
comes after the chosen one must beat it strictly (by `TIE_EPS`), an earlier one only match it.
Archetype weights are recovered from the stored bonus, `weight = 0.5 + bonus / 0.15`: these are
the weights the choice was made with (`record["psyche"]` holds the end-of-cycle state, which a
reflection may have evolved since).
"""

from __future__ import annotations

from .scoring import FACTORS
from .toolspecs import SPEC_BY_NAME

TIE_EPS = 1e-9  # how much a later tool must exceed the chosen score to win the tie rule
TOL = 1e-12  # float slack for comparisons against limits
ARCHETYPE_SCALE = 0.15  # bonus = (weight - 0.5) * 0.15
WEIGHT_MIN, WEIGHT_MAX = 0.1, 0.95  # SPEC §9 evolve clamp
BASE_MAX = 1.0
MINUS = "\u2212"  # typographic minus, as in the breakdown explanations

# Fixed bonuses: value and the condition under which a tool earns them.
BONUSES = {
    "novelty": (0.15, "{tool} never used on this goal"),
    "episodic": (0.2, "a recalled episode naming {tool}"),
    "pressure": (0.2, "memory pressure above 0.7"),
    "plan": (0.10, "{tool} as the current plan step"),
}
RECENCY_PHRASE = {0.4: "last cycle", 0.2: "two cycles ago", 0.1: "three cycles ago"}


# -- small helpers -----------------------------------------------------------------------


def _signed(x: float, nd: int = 2) -> str:
    """'+0.15' / '−0.015'; zero (and negative zero) shows as '+0.00'."""
    s = f"{abs(x):.{nd}f}"
    if x < 0 and float(s) != 0.0:
        return MINUS + s
    return "+" + s


def _penalty(x: float) -> str:
    return f"{MINUS}{x:.2f}"


def _amount(x: float) -> str:
    """A margin: two decimals, more when that would round a real gap to 0.00."""
    if x <= 0:
        return "0.00"
    if x >= 0.005:
        return f"{x:.2f}"
    if x >= 0.0005:
        return f"{x:.3f}"
    return "less than 0.001"


def _candidates(record: dict) -> list[dict]:
    return list(record["decide"]["candidates"])


def _chosen_index(record: dict) -> int:
    name = record["decide"]["tool"]
    for i, c in enumerate(_candidates(record)):
        if c["tool"] == name:
            return i
    raise KeyError(f"chosen tool {name!r} is not among the record's candidates")


def _index_of(record: dict, tool: str) -> int:
    for i, c in enumerate(_candidates(record)):
        if c["tool"] == tool:
            return i
    names = ", ".join(c["tool"] for c in _candidates(record))
    raise KeyError(f"no candidate {tool!r} in this cycle (candidates: {names})")


def _raw(c: dict) -> float:
    """The unclamped total, summed in the same order as scoring.Candidate.raw_total."""
    return (c["base"] - c["recency"] + c["novelty"] + c["episodic"] + c["pressure"]
            + c["archetype"] + c["plan"])


def _effective_raw(c: dict) -> float:
    """The total to close the gap from: the stored score when positive (so the gap is exactly
    the margin), else the unclamped sum (a clamped-at-0 score hides how far below 0 it is)."""
    score = c["score"]
    return score if score > 0 else min(0.0, _raw(c))


def _archetype_of(tool: str) -> str:
    spec = SPEC_BY_NAME.get(tool)
    return spec.archetype if spec is not None else "archetype"


def _weight(bonus: float) -> float:
    return 0.5 + bonus / ARCHETYPE_SCALE


def _base_reason(c: dict) -> str:
    tool, base = c["tool"], c["base"]
    if tool == "kg_query":
        return "few known triples around the goal" if base >= 0.8 - TOL else "the goal already has ≥ 3 known triples"
    if tool == "synthesize_triple":
        return "fixed base when triples and activated symbols are known"
    if tool == "reason":
        return "fixed base when triples are known"
    if tool == "memory_recall":
        return "fixed base when episodes were recalled"
    if tool == "similarity_search":
        return "fixed base when activation found symbols"
    if tool in ("infer_rules", "gap_analysis"):
        return "from how similar the goal is to the tool"
    if tool in ("user_interact", "file_io", "http_fetch", "shell_exec"):
        return "0.75 × goal/tool similarity"
    return "state-dependent base"


def _recency_reason(c: dict) -> str:
    pen = c["recency"]
    for value, phrase in RECENCY_PHRASE.items():
        if abs(pen - value) < 1e-9:
            return f"{c['tool']} ran {phrase} on this goal"
    return f"{c['tool']} ran recently on this goal"


# -- runner-up and why_chosen ----------------------------------------------------------------


def runner_up(record: dict) -> dict | None:
    """The best offered candidate other than the chosen one; ties go to the earlier in the list."""
    chosen = record["decide"]["tool"]
    best: dict | None = None
    for c in _candidates(record):
        if c["tool"] == chosen or not c["offered"]:
            continue
        if best is None or c["score"] > best["score"]:
            best = c
    return dict(best) if best is not None else None


def _contribution(factor: str, a: dict, b: dict) -> float:
    """How much `factor` adds to a's lead over b (recency is a penalty, so it counts negatively)."""
    if factor == "recency":
        return b["recency"] - a["recency"]
    return a[factor] - b[factor]


def _factor_line(factor: str, a: dict, b: dict) -> str:
    ta, tb = a["tool"], b["tool"]
    if factor == "base":
        ra, rb = _base_reason(a), _base_reason(b)
        return f"  base {a['base']:.2f} vs {b['base']:.2f} ({ta}: {ra}; {tb}: {rb})"
    if factor == "recency":
        reasons = [_recency_reason(c) for c in (a, b) if c["recency"] > 0]
        return f"  recency {_penalty(a['recency'])} vs {_penalty(b['recency'])} ({', '.join(reasons)})"
    if factor == "archetype":
        xa, xb = _archetype_of(ta), _archetype_of(tb)
        wa, wb = _weight(a["archetype"]), _weight(b["archetype"])
        return (f"  archetype {_signed(a['archetype'], 3)} vs {_signed(b['archetype'], 3)}"
                f" ({xa} {wa:.2f} vs {xb} {wb:.2f})")
    # a fixed bonus: name whoever has it
    holders = [c["tool"] for c in (a, b) if c[factor] > 0]
    if factor == "novelty":
        why = " and ".join(holders) + " never used on this goal"
    elif factor == "episodic":
        why = "a recalled episode names " + " and ".join(holders)
    elif factor == "pressure":
        why = "memory pressure above 0.7 favours " + " and ".join(holders)
    else:  # plan
        why = " and ".join(holders) + " is the current plan step"
    return f"  {factor} {_signed(a[factor])} vs {_signed(b[factor])} ({why})"


def why_chosen(record: dict) -> list[str]:
    """Plain lines: the breakdown, how the chosen tool beat the runner-up, and a veto if any."""
    decide = record["decide"]
    chosen = _candidates(record)[_chosen_index(record)]
    lines = [decide.get("breakdown") or chosen_breakdown(chosen)]
    other = runner_up(record)
    if other is None:
        lines.append(f"{chosen['tool']} was the only tool offered")
    else:
        margin = chosen["score"] - other["score"]
        if margin > 0:
            lines.append(f"{chosen['tool']} beat {other['tool']} by {_amount(margin)}:")
        else:
            lines.append(f"{chosen['tool']} tied {other['tool']} at {chosen['score']:.2f} and won the tie"
                         f" (earlier in the tool order):")
        diffs = [(f, _contribution(f, chosen, other)) for f in FACTORS if abs(chosen[f] - other[f]) > TOL]
        diffs.sort(key=lambda fc: (-fc[1], FACTORS.index(fc[0])))
        if diffs:
            lines.extend(_factor_line(f, chosen, other) for f, _ in diffs)
        else:
            lines.append("  every factor is equal")
    act = record.get("act") or {}
    if act.get("vetoed") and act.get("veto") == "user" and "approval" in act:
        lines.append(f"rejected by the user before act: {chosen['tool']} was chosen but did not run")
    elif act.get("vetoed"):
        lines.append(f"vetoed by shadow pattern '{act.get('veto')}': {chosen['tool']} was chosen but did not run")
    return lines


def chosen_breakdown(c: dict) -> str:
    """SPEC §6's breakdown string for a candidate dict (used when a record lacks one)."""
    from .scoring import Candidate

    return Candidate(c["tool"], c["offered"], c.get("why_not"), *(c[f] for f in FACTORS)).breakdown()


# -- why_not -------------------------------------------------------------------------------


def _rise_text(what: str, need: float, now: float) -> str:
    if f"{need:.2f}" == f"{now:.2f}":  # a hair's rise: "0.50 (now 0.50)" would read as nonsense
        return f"the smallest rise in {what} (now {now:.2f}) would do it"
    return f"{what} {need:.2f} (now {now:.2f}) would do it"


def _closer(factor: str, needed: float | None, possible: bool, text: str) -> dict:
    return {"factor": factor, "needed": needed, "possible": possible, "text": text}


def _closers(c: dict, gap: float) -> list[dict]:
    """One entry per factor: the value that factor alone would need for c to win, and whether
    it can reach it. `gap` is how much c's total must rise (tie rule included)."""
    tool = c["tool"]
    out: list[dict] = []

    need = c["base"] + gap
    if need > BASE_MAX + TOL:
        out.append(_closer("base", need, False, f"base would need {need:.2f}; base is at most 1.0"))
    else:
        out.append(_closer("base", need, True, _rise_text("base", need, c["base"])))

    pen = c["recency"]
    need = pen - gap
    if pen <= 0:
        out.append(_closer("recency", need, False, f"no recency penalty to remove (now {_penalty(pen)})"))
    elif need < -TOL:
        out.append(_closer("recency", need, False,
                           f"even no recency penalty (now {_penalty(pen)}) would leave it {_amount(-need)} short"))
    else:
        need = max(0.0, need)
        if need < 0.1:
            when = "it had not run in the last three cycles"
        elif need < 0.2:
            when = "it had last run three cycles ago"
        else:
            when = "it had last run two cycles ago"
        if f"{need:.2f}" == f"{pen:.2f}":
            text = f"the smallest cut in the recency penalty (now {_penalty(pen)}) would do it"
        else:
            text = f"recency would need to be {_penalty(need)} instead of {_penalty(pen)}"
        out.append(_closer("recency", need, True, f"{text} (e.g. if {when})"))

    for factor, (value, condition) in BONUSES.items():
        if factor == "pressure" and tool != "memory_recall":
            continue  # only memory_recall can earn it
        cond = condition.format(tool=tool)
        have = c[factor]
        if have > 0:
            out.append(_closer(factor, have + gap, False,
                               f"already has the {factor} bonus ({_signed(have)})"))
            continue
        need = have + gap
        if value >= need - TOL:
            out.append(_closer(factor, need, True, f"the {factor} bonus ({_signed(value)}) would close it: {cond}"))
        else:
            out.append(_closer(factor, need, False,
                               f"the {factor} bonus ({_signed(value)}) would not be enough:"
                               f" it would need {_signed(need)}"))

    arch = _archetype_of(tool)
    now = _weight(c["archetype"])
    need = _weight(c["archetype"] + gap)
    if need > WEIGHT_MAX + TOL:
        out.append(_closer("archetype", need, False,
                           f"{arch} weight would need {need:.2f}; the cap is {WEIGHT_MAX:.2f}"))
    else:
        out.append(_closer("archetype", need, True, _rise_text(f"{arch} weight", need, now)))
    return out


def why_not(record: dict, tool: str) -> dict:
    """Why `tool` was not chosen: its margin behind the chosen tool and, if it was offered, the
    single-factor changes (`closers`) that would have made it win. Raises KeyError for a tool
    that is not among the candidates."""
    cands = _candidates(record)
    i = _index_of(record, tool)
    ci = _chosen_index(record)
    c, chosen = cands[i], cands[ci]
    result = {
        "tool": tool,
        "offered": bool(c["offered"]),
        "why_not": c.get("why_not"),
        "margin": max(0.0, chosen["score"] - c["score"]),
        "closers": [],
        "chosen": chosen["tool"],
        "score": c["score"],
        "chosen_score": chosen["score"],
    }
    if i == ci:
        result["why_not"] = "it was chosen"
        return result
    if not c["offered"]:
        if not result["why_not"]:
            result["why_not"] = "not offered"
        return result
    eps = TIE_EPS if i > ci else 0.0
    gap = chosen["score"] + eps - _effective_raw(c)
    result["closers"] = _closers(c, gap)
    return result


def why_not_text(record: dict, tool: str) -> list[str]:
    """`why_not` as plain lines."""
    info = why_not(record, tool)
    chosen = info["chosen"]
    if tool == chosen:
        return [f"{tool} was chosen"]
    if not info["offered"]:
        reason = info["why_not"] or "not offered"
        prefix = "not offered"
        if reason.startswith(prefix):
            rest = reason[len(prefix):].lstrip(": ").strip()
            return [f"{tool} was not offered: {rest}" if rest else f"{tool} was not offered"]
        return [f"{tool} was not offered: {reason}"]
    if info["margin"] > 0:
        lines = [f"{tool} lost to {chosen} by {_amount(info['margin'])}"
                 f" ({info['score']:.2f} vs {info['chosen_score']:.2f})"]
    else:
        lines = [f"{tool} tied {chosen} at {info['score']:.2f}; {chosen} comes first in the tool order"]
    can = [x for x in info["closers"] if x["possible"]]
    cannot = [x for x in info["closers"] if not x["possible"]]
    if can:
        lines.append("any one of these would have made it win:")
        lines.extend(f"  {x['factor']}: {x['text']}" for x in can)
    else:
        lines.append("no single factor change could have made it win")
    if cannot:
        lines.append("not enough alone:")
        lines.extend(f"  {x['factor']}: {x['text']}" for x in cannot)
    return lines
