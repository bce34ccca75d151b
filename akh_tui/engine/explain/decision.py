"""Plain-English explanations of one Decide phase (SPEC §6), read from a cycle record (SPEC §11).

Pure and deterministic: it only reads `record["decide"]` (and `record["act"]` for a veto), so it
works the same on a live record and on one replayed from a trace file.

- `runner_up(record)`: the best offered candidate other than the chosen one.
- `why_chosen(record)`: the chosen tool's breakdown, then how it beat the runner-up, factor by
  factor, largest contribution to the margin first.
- `why_not(record, tool)` / `why_not_text(record, tool)`: why a candidate lost, which single
  factor change ("closer") would have made it win (only changes the tool's declared rules can
  produce), and when none can, the smallest pair of changes that would.
- `wins(record, tool, changes)`: SPEC §6's choice replayed with changed factors.

Tie rule (SPEC §6): ties go to the earlier tool in the candidates' order, so a candidate that
comes after the chosen one must beat it strictly (by `TIE_EPS`), an earlier one only match it.
Archetype weights are recovered from the stored bonus, `weight = 0.5 + bonus / 0.15`: these are
the weights the choice was made with (`record["psyche"]` holds the end-of-cycle state, which a
reflection may have evolved since).
"""

from __future__ import annotations

from ..cycle.scoring import FACTORS
from ..tools.specs import SPEC_BY_NAME

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


def _spec_of(tool: str):
    """A built-in's declaration, else a plugin's this process loaded, else a world action's
    (registry.py)."""
    spec = SPEC_BY_NAME.get(tool)
    if spec is None:
        from ..tools.registry import declared_spec

        spec = declared_spec(tool)
    return spec


def _archetype_of(tool: str) -> str:
    spec = _spec_of(tool)
    return spec.archetype if spec is not None else "archetype"


def _weight(bonus: float) -> float:
    return 0.5 + bonus / ARCHETYPE_SCALE


def _base_reason(c: dict) -> str:
    """The words for a tool's base: the tool's own (Tool.explain_base), a built-in's or a
    plugin's alike."""
    from ..tools.registry import base_words

    return base_words(c["tool"], c["base"])


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


def answered_by(by: object) -> str:
    """Who answered a world gate (`decide.user.by`), in words: "user" is the person at the
    terminal or the workbench, "auto" --auto-approve/--auto-reject, "timeout" the deadline's
    answer, anything else a class's seat (its name as recorded)."""
    by = str(by or "user")
    return {"user": "the user", "auto": "the auto-answer", "timeout": "the deadline"}.get(by, by)


def gate_answer(record: dict) -> dict | None:
    """The world gate's recorded answer of the cycle (`decide.user`), or None (no gate fired)."""
    user = (record.get("decide") or {}).get("user")
    return user if isinstance(user, dict) else None


def chooser(record: dict) -> str:
    """Who chose against the table, from the record's own marks (SPEC §13: a world's gate
    answer, a model's assessment, a workflow step, Soar's selection)."""
    decide = record["decide"]
    user = gate_answer(record)
    if user is not None and user.get("decision") == "choose":
        return answered_by(user.get("by"))
    if decide.get("llm"):
        return "the model"
    if decide.get("workflow"):
        return "its workflow"
    if decide.get("soar"):
        return "Soar"
    return "its decider"


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
        elif margin == 0 and _chosen_index(record) < _index_of(record, other["tool"]):
            lines.append(f"{chosen['tool']} tied {other['tool']} at {chosen['score']:.2f} and won the tie"
                         f" (earlier in the tool order):")
        else:
            # a model, a workflow, Soar or a person chose against the table: never say it won
            gap = (f"{other['tool']} scored {_amount(-margin)} more ({other['score']:.2f} vs {chosen['score']:.2f})"
                   if margin < 0 else f"{other['tool']} tied it at {chosen['score']:.2f} and comes first in the tool order")
            lines.append(f"{chosen['tool']} was not the utility table's choice: {gap}; "
                         f"{chooser(record)} chose {chosen['tool']}. Where they differ:")
        diffs = [(f, _contribution(f, chosen, other)) for f in FACTORS if abs(chosen[f] - other[f]) > TOL]
        diffs.sort(key=lambda fc: (-fc[1], FACTORS.index(fc[0])))
        if diffs:
            lines.extend(_factor_line(f, chosen, other) for f, _ in diffs)
        else:
            lines.append("  every factor is equal")
    act = record.get("act") or {}
    user = gate_answer(record)
    if act.get("vetoed") and act.get("veto") == "user" and user is not None:
        lines.append(f"rejected by {answered_by(user.get('by'))} before act: {chosen['tool']} was proposed but did not run")
    elif act.get("vetoed") and act.get("veto") == "user" and "approval" in act:
        lines.append(f"rejected by the user before act: {chosen['tool']} was chosen but did not run")
    elif act.get("vetoed"):
        lines.append(f"vetoed by shadow pattern '{act.get('veto')}': {chosen['tool']} was chosen but did not run")
    return lines


def model_lines(record: dict, call: dict | None = None) -> list[str]:
    """What a model decider said about the cycle and where it and the utility table disagree,
    from the record (`decide.llm`); `call` (the decider's note of the call, kept outside the
    record: replayed or live, latency) adds how the answer was got. [] for a table decision."""
    llm = (record.get("decide") or {}).get("llm")
    if not llm:
        return []
    how = ""
    if call is not None:
        how = " (replayed from the recorded calls)" if call.get("replayed") else \
            f" (asked live, {call.get('wall_latency_s', 0.0):.2f} s)"
    table = llm.get("utility_tool")
    if llm["status"] == "accepted":
        agree = (f"the model and the utility table agree on {table}" if llm["tool"] == table else
                 f"the model chose {llm['tool']}; the utility table preferred {table}")
        lines = [f"model: accepted{how}: {agree}"]
    else:
        said = f" (it named {llm['tool']})" if llm.get("tool") else ""
        lines = [f"model: {llm['status']}{how}{said}: {llm.get('reason')}; the utility table's {table} ran"]
    if llm.get("situation_assessment"):
        lines.append(f"  assessment: {llm['situation_assessment']}")
    if llm.get("action_rationale"):
        lines.append(f"  rationale: {llm['action_rationale']}")
    return lines


def chosen_breakdown(c: dict) -> str:
    """SPEC §6's breakdown string for a candidate dict (used when a record lacks one)."""
    from ..cycle.scoring import Candidate

    return Candidate(c["tool"], c["offered"], c.get("why_not"), *(c[f] for f in FACTORS)).breakdown()


# -- why_not -------------------------------------------------------------------------------
#
# Honest advice (issue 13 §3): a change is proposed only if it could happen. A base only where
# the tool's declared base rule can produce it (ToolSpec.base_values / base_range), a recency
# penalty only at a value the rule gives (0.4, 0.2, 0.1, none), an archetype weight only inside
# the evolve clamp and never when a tool of the same archetype stands in the way (the weight
# lifts both alike), the novelty bonus only when the tool has not run recently on the goal.
# Every change is checked by `wins`, which applies it to the recorded factors (a weight to every
# tool of its archetype) and replays SPEC §6's choice. When no single change wins, the smallest
# pair that does is given.

RECENCY_VALUES = (0.4, 0.2, 0.1, 0.0)
CHANGE_MIN = 1e-9  # a proposed change must move its factor by more than float noise


def _rise_text(what: str, need: float, now: float) -> str:
    if f"{need:.2f}" == f"{now:.2f}":  # a hair's rise: "0.50 (now 0.50)" would read as nonsense
        return f"the smallest rise in {what} (now {now:.2f}) would do it"
    return f"{what} {need:.2f} (now {now:.2f}) would do it"


def _closer(factor: str, needed: float | None, possible: bool, text: str) -> dict:
    return {"factor": factor, "needed": needed, "possible": possible, "text": text}
RECENCY_WHEN = {0.0: "it had not run in the last three cycles", 0.1: "it had last run three cycles ago",
                0.2: "it had last run two cycles ago"}


def _offered_scores(record: dict) -> list[tuple[int, dict, float]]:
    return [(j, c, _effective_raw(c)) for j, c in enumerate(_candidates(record)) if c["offered"]]


def wins(record: dict, tool: str, changes: dict[str, float]) -> bool:
    """Would `tool` win SPEC §6's choice with `changes` applied to the recorded factors?
    `changes` maps a factor to its new value; "archetype" is a weight, applied to every tool of
    the tool's archetype (bonus = (weight − 0.5) × 0.15). Totals are summed as
    scoring.Candidate sums them; ties go to the earlier tool."""
    i = _index_of(record, tool)
    if not _candidates(record)[i]["offered"]:
        return False
    arch = _archetype_of(tool)
    bonus = (changes["archetype"] - 0.5) * ARCHETYPE_SCALE if "archetype" in changes else None
    best, best_j = -1.0, -1
    for j, c in enumerate(_candidates(record)):
        if not c["offered"]:
            continue
        if j == i or (bonus is not None and _archetype_of(c["tool"]) == arch):
            d = dict(c)
            if j == i:
                d.update({f: v for f, v in changes.items() if f != "archetype"})
            if bonus is not None:
                d["archetype"] = bonus
            score = max(0.0, _raw(d))
        else:
            score = c["score"]
        if score > best:
            best, best_j = score, j
    return best_j == i


def _required(record: dict, i: int, skip_arch: str | None = None) -> float:
    """The total tool i must reach to win against every other offered tool (tie rule), leaving
    out the tools of archetype `skip_arch` (they would rise with it)."""
    need = 0.0
    for j, other, _raw_j in _offered_scores(record):
        if j == i or (skip_arch is not None and _archetype_of(other["tool"]) == skip_arch):
            continue
        need = max(need, other["score"] + (TIE_EPS if j < i else 0.0))
    return need


def _settle(record: dict, tool: str, changes: dict[str, float], factor: str, value: float, up: bool = True) -> float:
    """`value` nudged by float steps (at most a few) until the change wins."""
    import math

    for _ in range(8):
        if wins(record, tool, changes | {factor: value}):
            return value
        value = math.nextafter(value, math.inf if up else -math.inf)
    return value


def _base_options(c: dict) -> tuple[list[float], tuple[float, float] | None]:
    # a plugin's own declaration bounds it as a built-in's does; one that declares nothing (or
    # a recorded plugin this process has not loaded) may reach any base
    spec = _spec_of(c["tool"])
    if spec is None or (not spec.base_values and spec.base_range is None):
        return [], (c["base"], BASE_MAX)
    values = sorted(v for v in spec.base_values if v > c["base"] + TOL)
    rng = spec.base_range
    return values, (rng if rng is not None and rng[1] > c["base"] + TOL else None)


def _base_rule(tool: str) -> str:
    spec = _spec_of(tool)
    return spec.base_rule if spec is not None and spec.base_rule else "its base rule"


def _base_limits_text(c: dict) -> str:
    spec = _spec_of(c["tool"])
    if spec is None or (not spec.base_values and spec.base_range is None):
        return f"base is at most {BASE_MAX:.1f}"
    if spec.base_range is not None:
        return f"its rule gives at most {spec.base_range[1]:.2f} ({spec.base_rule})"
    vals = " or ".join(f"{v:.2f}" for v in spec.base_values)
    return f"its rule gives only {vals} ({spec.base_rule})"


def _options(record: dict, c: dict, factor: str) -> list[tuple[float | None, str]]:
    """Discrete new values for `factor` that could happen ((None, ...) marks a continuous factor
    solved per case), each with the condition that would give it."""
    tool = c["tool"]
    if factor == "base":
        values, rng = _base_options(c)
        out: list[tuple[float | None, str]] = [(v, _base_rule(tool)) for v in values]
        if rng is not None:
            out.append((None, _base_rule(tool)))
        return out
    if factor == "recency":
        return [(v, RECENCY_WHEN[v]) for v in RECENCY_VALUES if v < c["recency"] - TOL]
    if factor == "archetype":
        return [(None, "weights stay within [0.10, 0.95]")]
    value, condition = BONUSES[factor]
    if factor == "pressure" and tool != "memory_recall":
        return []
    if c[factor] > 0:
        return []
    return [(value, condition.format(tool=tool))]


def _solve(record: dict, c: dict, factor: str, rest: dict[str, float]) -> float | None:
    """The smallest value of continuous `factor` (base in its range, or the archetype weight)
    that wins together with the changes `rest`; None if none within the limits."""
    tool = c["tool"]
    i = _index_of(record, tool)
    others = 0.0
    for f, v in rest.items():
        others += (c["recency"] - v) if f == "recency" else (v - c[f])
    if factor == "base":
        _values, rng = _base_options(c)
        if rng is None:
            return None
        need = max(rng[0], c["base"] + _required(record, i) - _effective_raw(c) - others)
        if need <= c["base"] + CHANGE_MIN or need > rng[1] + TOL:
            return None
        need = _settle(record, tool, rest, "base", need)
        return need if need <= rng[1] + TOL and wins(record, tool, rest | {"base": need}) else None
    arch = _archetype_of(tool)
    bonus = c["archetype"] + _required(record, i, skip_arch=arch) - _effective_raw(c) - others
    now = _weight(c["archetype"])
    need = max(now, _weight(bonus))
    if need <= now + CHANGE_MIN:
        return None  # no rise: not a change (the other changes win alone)
    if need > WEIGHT_MAX + TOL:
        return None
    need = _settle(record, tool, rest, "archetype", max(WEIGHT_MIN, need))
    return need if need <= WEIGHT_MAX + TOL and wins(record, tool, rest | {"archetype": need}) else None


def _rise(c: dict, factor: str, value: float) -> float:
    """How much a change raises the tool's total."""
    if factor == "recency":
        return c["recency"] - value
    if factor == "archetype":
        return (value - 0.5) * ARCHETYPE_SCALE - c["archetype"]
    return value - c[factor]


def _valid(c: dict, changes: dict[str, float]) -> bool:
    """Changes that can hold together: the novelty bonus means the tool never ran on the goal,
    so it cannot keep a recency penalty."""
    if "novelty" in changes and changes.get("recency", c["recency"]) > 0:
        return False
    return True


def _change_text(c: dict, factor: str, value: float, why: str, part: bool = False) -> str:
    """A change in words; `part`: one of a pair (it does not win alone)."""
    tool = c["tool"]
    if part:
        if factor == "base":
            return f"base {value:.2f} (now {c['base']:.2f}): {why}"
        if factor == "recency":
            return f"recency {_penalty(value)} instead of {_penalty(c['recency'])} (if {why})"
        if factor == "archetype":
            return f"{_archetype_of(tool)} weight {value:.2f} (now {_weight(c['archetype']):.2f})"
        return f"the {factor} bonus ({_signed(BONUSES[factor][0])}): {why}"
    if factor == "base":
        return f"base {value:.2f} (now {c['base']:.2f}) would do it: {why}"
    if factor == "recency":
        pen = c["recency"]
        if value <= 0:
            return f"no recency penalty (now {_penalty(pen)}) would do it (if {why})"
        return f"recency would need to be {_penalty(value)} instead of {_penalty(pen)} (if {why})"
    if factor == "archetype":
        return _rise_text(f"{_archetype_of(tool)} weight", value, _weight(c["archetype"]))
    bonus = BONUSES[factor][0]
    return f"the {factor} bonus ({_signed(bonus)}) would close it: {why}"


def _closers(record: dict, c: dict, gap: float) -> list[dict]:
    """One entry per factor: the change to that factor alone that would make c win, or why
    none could. `gap` is how much c's total must rise against the best other tool (tie rule
    included)."""
    tool = c["tool"]
    i = _index_of(record, tool)
    out: list[dict] = []

    # base
    best: tuple[float, str] | None = None
    for v, why in _options(record, c, "base"):
        value = v if v is not None else _solve(record, c, "base", {})
        if value is not None and wins(record, tool, {"base": value}):
            best = (value, why)
            break
    need = c["base"] + gap
    if best is not None:
        out.append(_closer("base", best[0], True, _change_text(c, "base", best[0], best[1])))
    else:
        short = (f"base would need to rise above {c['base']:.2f}" if f"{need:.2f}" == f"{c['base']:.2f}"
                 else f"base would need {need:.2f}")
        out.append(_closer("base", need, False, f"{short}; {_base_limits_text(c)}"))

    # recency
    pen = c["recency"]
    need = pen - gap
    if pen <= 0:
        out.append(_closer("recency", need, False, f"no recency penalty to remove (now {_penalty(pen)})"))
    else:
        hit = next(((v, why) for v, why in _options(record, c, "recency")
                    if v is not None and wins(record, tool, {"recency": v})), None)
        if hit is not None:
            out.append(_closer("recency", hit[0], True, _change_text(c, "recency", hit[0], hit[1])))
        else:
            out.append(_closer("recency", need, False,
                               f"even no recency penalty (now {_penalty(pen)}) would leave it {_amount(-need)} short"))

    # fixed bonuses
    for factor, (value, condition) in BONUSES.items():
        if factor == "pressure" and tool != "memory_recall":
            continue  # only memory_recall can earn it
        have = c[factor]
        if have > 0:
            out.append(_closer(factor, have + gap, False, f"already has the {factor} bonus ({_signed(have)})"))
            continue
        need = have + gap
        if factor == "novelty" and pen > 0:
            out.append(_closer(factor, need, False,
                               f"the novelty bonus needs {tool} never used on this goal, but {_recency_reason(c)}"))
        elif wins(record, tool, {factor: value}):
            out.append(_closer(factor, value, True, _change_text(c, factor, value, condition.format(tool=tool))))
        else:
            more = (f"just over {_signed(need)} (ties go to the earlier tool)" if f"{need:.2f}" == f"{value:.2f}"
                    else _signed(need))
            out.append(_closer(factor, need, False,
                               f"the {factor} bonus ({_signed(value)}) would not be enough: it would need {more}"))

    # archetype weight
    arch = _archetype_of(tool)
    blockers = [o["tool"] for j, o, raw in _offered_scores(record) if j != i and _archetype_of(o["tool"]) == arch
                and (o["score"] > max(0.0, _effective_raw(c)) or (o["score"] == max(0.0, _effective_raw(c)) and j < i))]
    value = _solve(record, c, "archetype", {})
    if value is not None:
        out.append(_closer("archetype", value, True, _change_text(c, "archetype", value, "")))
    elif blockers:
        out.append(_closer("archetype", None, False,
                           f"{blockers[0]} is a {arch} tool too: a {arch} weight lifts both alike"))
    else:
        need = _weight(c["archetype"] + _required(record, i, skip_arch=arch) - _effective_raw(c))
        out.append(_closer("archetype", need, False,
                           f"{arch} weight would need {need:.2f}; the cap is {WEIGHT_MAX:.2f}"))
    return out


PAIR_FACTORS = ("base", "recency", "novelty", "episodic", "pressure", "plan", "archetype")


def smallest_pair(record: dict, tool: str) -> list[dict] | None:
    """The pair of changes (to two factors) that makes `tool` win with the smallest total rise,
    each reachable by its rule; None when no pair can. Ties go to the earlier factors."""
    c = _candidates(record)[_index_of(record, tool)]
    best: tuple[float, list[dict]] | None = None
    for a_i, fa in enumerate(PAIR_FACTORS):
        for fb in PAIR_FACTORS[a_i + 1:]:
            for va, why_a in _options(record, c, fa):
                for vb, why_b in _options(record, c, fb):
                    if va is None and vb is None:
                        continue  # two continuous factors: one of them taken at a discrete value covers it
                    ch: dict[str, float]
                    if va is None and vb is not None:
                        got = _solve(record, c, fa, {fb: vb})
                        if got is None:
                            continue
                        ch = {fa: got, fb: vb}
                    elif vb is None and va is not None:
                        got = _solve(record, c, fb, {fa: va})
                        if got is None:
                            continue
                        ch = {fa: va, fb: got}
                    elif va is not None and vb is not None:
                        ch = {fa: va, fb: vb}
                    if (not _valid(c, ch) or min(_rise(c, f, v) for f, v in ch.items()) <= CHANGE_MIN
                            or wins(record, tool, {fa: ch[fa]}) or wins(record, tool, {fb: ch[fb]})
                            or not wins(record, tool, ch)):
                        continue
                    cost = _rise(c, fa, ch[fa]) + _rise(c, fb, ch[fb])
                    if best is None or cost < best[0] - TOL:
                        pair = [_closer(fa, ch[fa], True, _change_text(c, fa, ch[fa], why_a, part=True)),
                                _closer(fb, ch[fb], True, _change_text(c, fb, ch[fb], why_b, part=True))]
                        best = (cost, pair)
    return best[1] if best is not None else None


def why_not(record: dict, tool: str) -> dict:
    """Why `tool` was not chosen: its margin behind the chosen tool and, if it was offered, the
    single-factor changes (`closers`) that would have made it win (only changes its rules could
    produce), and, when none could, the smallest `pair` that would (else None). Raises KeyError
    for a tool that is not among the candidates."""
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
        "pair": None,
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
    gap = _required(record, i) - _effective_raw(c)
    result["closers"] = _closers(record, c, gap)
    if not any(x["possible"] for x in result["closers"]):
        result["pair"] = smallest_pair(record, tool)
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
    if info["score"] > info["chosen_score"]:
        # it did not lose on the table: whoever chose against the table chose the other
        return [f"{tool} scored more than {chosen} ({info['score']:.2f} vs {info['chosen_score']:.2f}): "
                f"it was the utility table's better choice; {chooser(record)} chose {chosen}"]
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
        if info["pair"]:
            lines.append("the smallest pair of changes that would, together:")
            lines.extend(f"  {x['factor']}: {x['text']}" for x in info["pair"])
        else:
            lines.append("nor could any pair of changes")
    if cannot:
        lines.append("not enough alone:")
        lines.extend(f"  {x['factor']}: {x['text']}" for x in cannot)
    return lines
