"""The same question, two architectures (issue 30): a Soar run and an OODA run of the same puzzle
side by side, aligned by move and by the state each move left, naming where their choices part
and why each chose as it did, in its own terms (Soar: the operator's value and chance and the
rules that proposed it; OODA: the tool's score and the runner-up).

Both runs are made here, headless and in memory (nothing is written to the session store), from
their scenarios and seeds: the same inputs give the same comparison. The water-jug pair's moves
are translated by the puzzle's own module (tools/waterjug.py); other pairs are aligned by step
with each side's choice in its own words."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import InputError
from ..paths import Locations
from ..tools import waterjug
from .run import SoarRun
from .scenario import find_soar


def soar_steps(name: str, seed: int | None, most: int) -> tuple[str, list[dict[str, Any]]]:
    """A Soar scenario's moves: each step's choice, its words and the candidates it passed over."""
    sc = find_soar(name)
    assert sc is not None
    run = SoarRun.start(sc, seed)
    try:
        run.run(min(most, sc.max_decisions))
    finally:
        run.close()
    return sc.name, soar_record_steps(sc.name, run.records)


def soar_record_steps(name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Soar decision records as moves (a run's, or a stored run's)."""
    steps = []
    for rec in records:
        sel = rec["selected"]
        if sel is None:
            continue
        move = waterjug.soar_move(sel["label"]) if name.startswith("water-jug") else sel["label"]
        if move is None:
            continue
        me = next((c for c in rec["candidates"] if c["chosen"]), None)
        others = [f"{c['label']} {_chance(c)}" for c in rec["candidates"] if not c["chosen"]]
        why = (f"Soar decision {rec['decision']}: {sel['id']} {sel['label']}"
               + (f", value {me['value']} ({(me['probability'] or 0):.0%} chance)" if me else "")
               + (f", over {', '.join(others)}" if others else "")
               + (" (forced)" if rec.get("forced") else ""))
        steps.append({"move": move, "why": why})
    return steps


def ooda_record_steps(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OODA cycle records as moves: the tool (a water-jug tool's move in the puzzle's words),
    its score and the other offers."""
    steps = []
    for rec in records:
        d = rec["decide"]
        move = waterjug.ooda_move(d["tool"], d["input"]) or f"{d['tool']}({d['input']})"
        offered = sorted((c for c in d["candidates"] if c["offered"]), key=lambda c: -c["score"])
        mine = next((c["score"] for c in offered if c["tool"] == d["tool"]), None)
        others = [f"{c['tool']} {c['score']:.2f}" for c in offered if c["tool"] != d["tool"]]
        why = (f"OODA cycle {rec['cycle']}: {d['tool']}({d['input']})"
               + (f", score {mine:.2f}" if mine is not None else "")
               + (f", over {', '.join(others)}" if others else ""))
        steps.append({"move": move, "why": why})
    return steps


def ooda_steps(name: str, seed: int | None, most: int) -> tuple[str, list[dict[str, Any]]]:
    """An OODA scenario's moves, from a run in memory (its own data dir: nothing of the user's)."""
    from ..runs.run import Run

    with tempfile.TemporaryDirectory(prefix="akh-compare-") as tmp:
        run = Run.start(Locations(Path(tmp), Path(tmp) / "config.toml"), name, seed, store=":memory:")
        records: list[Mapping[str, Any]] = []
        try:
            for _ in range(most):
                rec = run.step()
                if rec is None:
                    break
                records.append(rec)
        finally:
            name = run.name
            run.close()
    return name, ooda_record_steps(records)


def compare_architectures(a: str, b: str, seed_a: int | None = None, seed_b: int | None = None, most: int = 200) -> dict[str, Any]:
    """Scenarios `a` and `b` (each Soar or OODA) run and aligned: {"a", "b", "steps": [{step, a,
    b, state_a, state_b, same}], "first_part": the first step whose moves differ (or None),
    "meet_again": the first later step after which both states agree (or None)}."""
    sides = []
    for name, seed in ((a, seed_a), (b, seed_b)):
        sides.append(soar_steps(name, seed, most) if find_soar(name) is not None else ooda_steps(name, seed, most))
    (name_a, sa), (name_b, sb) = sides
    return align(name_a, sa, name_b, sb, name_a.startswith("water-jug") and name_b.startswith("water-jug"))


def align(name_a: str, sa: list[dict[str, Any]], name_b: str, sb: list[dict[str, Any]], jugs: bool) -> dict[str, Any]:
    """Two sides' moves aligned by step (and, `jugs`, by the water-jug state each move left)."""
    state_a = state_b = {"jug5": 0, "jug3": 0}
    rows: list[dict[str, Any]] = []
    first: dict[str, Any] | None = None
    meet: dict[str, Any] | None = None
    for i in range(max(len(sa), len(sb))):
        x, y = (sa[i] if i < len(sa) else None), (sb[i] if i < len(sb) else None)
        if jugs:
            state_a = waterjug.after(state_a, x["move"]) if x else state_a
            state_b = waterjug.after(state_b, y["move"]) if y else state_b
        same = x is not None and y is not None and x["move"] == y["move"]
        row = {"step": i + 1, "a": x, "b": y, "same": same,
               **({"state_a": _jugs(state_a), "state_b": _jugs(state_b)} if jugs else {})}
        rows.append(row)
        if first is None and not same:
            first = row
        elif first is not None and meet is None and jugs and state_a == state_b:
            meet = row
    common: list[dict[str, Any]] = []  # the states both reached, each at the first step each reached it
    if jugs:
        seen_a = _first_steps([r["state_a"] for r in rows[:len(sa)]])
        seen_b = _first_steps([r["state_b"] for r in rows[:len(sb)]])
        common = [{"state": st, "step_a": seen_a[st], "step_b": seen_b[st]} for st in seen_a if st in seen_b]
    return {"a": name_a, "b": name_b, "steps": rows, "first_part": first, "meet_again": meet,
            "common_states": common, "moves": {name_a: len(sa), name_b: len(sb)}}


def _first_steps(states: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, st in enumerate(states):
        out.setdefault(st, i + 1)
    return out


def _chance(c: dict[str, Any]) -> str:
    return "rejected" if c["probability"] == 0 else f"{(c['probability'] or 0):.0%}"


def _jugs(j: dict[str, int]) -> str:
    return f"5-gal {j['jug5']}, 3-gal {j['jug3']}"


def check_compare_names(*names: str) -> None:
    """Two scenarios to compare, known before anything runs."""
    from ..runs.scenario import resolve

    for n in names:
        if find_soar(n) is None:
            resolve(n)  # raises InputError naming the unknown scenario



def compare_stored(locations: Locations, a: str, b: str) -> dict[str, Any]:
    """`sessions compare A B` where a side is a Soar run: both branches' stored records aligned
    by move and by the state each left (as `compare_architectures`, which runs the scenarios
    afresh), each side named RUN:BRANCH with its scenario."""
    from ..runs.sessions import Sessions

    sessions = Sessions(locations)
    try:
        sides: list[tuple[str, str, list[dict[str, Any]]]] = []
        for ref in (a, b):
            bid, label = sessions.branch_ref(ref)
            run = int(label.split(":")[0])
            meta = sessions.store.run_meta(run)
            scenario = str(meta.get("name") or "")
            if sessions.is_soar(run):
                steps = soar_record_steps(scenario, sessions.soar.records(bid))
                arch = "soar"
            else:
                steps = ooda_record_steps(sessions.store.records(bid))
                arch = "ooda"
            sides.append((f"{label} ({scenario}, {arch})", scenario, steps))
    finally:
        sessions.close()
    (la, sa_name, sa), (lb, sb_name, sb) = sides
    if la == lb:
        raise InputError(f"{a} and {b} are the same branch", field="compare")
    return align(la, sa, lb, sb, sa_name.startswith("water-jug") and sb_name.startswith("water-jug"))
