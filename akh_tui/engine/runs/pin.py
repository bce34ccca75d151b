"""Pinned behaviours: what a run decided at chosen cycles, kept in a file, and checked again
by rerunning the scenario headless: a demo (or a designer's CI) fails loudly when the agent's
behaviour changes.

A pin file (JSON, `"akh_pin": 1`) holds, for each pinned cycle, the tool, its input, the
breakdown and the chosen tool's factors, the outcome and the goals' statuses; and what a
rerun needs: the scenario (a bundled name, or a path relative to the pin file, beside or below
it: checking a pin someone handed out opens only what they handed out), seed, goals,
decider, the user inputs recorded before the last pinned cycle (goals added, psyche and fork
edits: data, replayed as rewind replays them), and the trail of (tool, input, progress) of
every cycle up to the last pinned one, so a check can say where the run first parted.

The door's `run.rerun()` builds and steps the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

from ..errors import InputError
from ..cycle.scoring import FACTORS

PIN_VERSION = 1
REPLAYABLE = ("goal", "psyche", "edits", "reflect", "consolidate", "plan", "reload_rules", "reload_triples",
              "reload_goals", "reload_plugin")  # from_input kinds: a reload holds what it read
DECIDERS = ("utility", "scripted")  # deterministic offline: a rerun asks no model
EPS = 1e-9  # factors are compared exactly but for float noise


# ---- making a pin ---------------------------------------------------------------------------
def pinned_cycle(rec: dict) -> dict:
    """What a cycle decided, as a pin keeps it."""
    decide, act = rec["decide"], rec["act"]
    cand: dict = next((c for c in decide.get("candidates") or [] if c["tool"] == decide["tool"]), {})
    return {
        "cycle": rec["cycle"],
        "goal": {"id": rec["goal"]["id"], "description": rec["goal"]["description"]},
        "tool": decide["tool"],
        "input": decide["input"],
        "breakdown": decide["breakdown"],
        "factors": {f: cand[f] for f in ("score",) + FACTORS if f in cand},
        "outcome": {k: act.get(k) for k in ("success", "vetoed", "veto", "progress", "coverage")},
        "goals": [{"id": g["id"], "description": g["description"], "status": g["status"]} for g in rec["goals"]],
    }


def _scenario_ref(path: str, pin_dir: Path) -> str:
    """A bundled scenario by name; any other by a path relative to the pin file when it can
    be (a teacher hands out the folder), else absolute."""
    from ..paths import bundled_data_dir

    p = Path(path).resolve()
    bundled = (bundled_data_dir() / "scenarios").resolve()
    if p.parent == bundled:
        return p.stem
    try:
        return os.path.relpath(p, pin_dir.resolve())
    except ValueError:  # another drive
        return str(p)


def make_pin(store, run: int, branch_name: str, cycles: list[int], pin_path: Path) -> dict:
    """The pin of `cycles` of a stored branch (a SessionStore, read through its public methods);
    refuses a run a headless rerun cannot reproduce."""
    meta = store.run_meta(run)
    branch = store.find_branch(run, branch_name)
    decider = meta.get("decider", "utility")
    if meta.get("imported_from"):
        raise InputError(f"run {run} was imported from a trace: it has no scenario state to rerun", field="run")
    if decider not in DECIDERS:
        raise InputError(f"run {run} was decided by {decider!r}: a pin is checked by rerunning headless and offline, "
                         f"which only the {' and '.join(DECIDERS)} deciders can do the same way", field="run")
    last = store.last_cycle(branch)
    bad = [c for c in cycles if not 1 <= c <= last]
    if not cycles or bad:
        raise InputError(f"cycle {bad[0] if bad else '?'} is not recorded (run {run} branch {branch_name} has cycles 1..{last})",
                         field="--cycle")
    cycles = sorted(set(cycles))
    upto = cycles[-1]
    inputs = []
    for c, items in sorted(store.inputs(branch, 0, upto).items()):
        for kind, payload in items:
            if kind not in REPLAYABLE:
                raise InputError(f"after cycle {c} the run took a user input of kind {kind!r}, which a headless rerun "
                                 f"cannot replay: pin cycles up to {c} only", field="--cycle")
            inputs.append({"after_cycle": c, "kind": kind, "payload": payload})
    trail, pinned = [], []
    for rec in store.records(branch, 1, upto):
        trail.append([rec["decide"]["tool"], rec["decide"]["input"], rec["act"]["progress"]])
        if rec["cycle"] in cycles:
            pinned.append(pinned_cycle(rec))
    ref = _scenario_ref(meta["scenario"], pin_path.parent)
    why = _scenario_refused(ref, pin_path)
    if why is not None:  # `check` would refuse it: say so now, and write nothing
        raise InputError(f"the run's scenario {meta['scenario']} is not beside or below the pin file, and a pin may "
                         "name only such a scenario or a bundled one: write the pin into the scenario's folder (or a "
                         "folder above it)", file=str(pin_path), field="-o")
    return {
        "akh_pin": PIN_VERSION,
        "scenario": ref,
        "scenario_name": meta.get("name"),
        "seed": meta["seed"],
        "goals": meta.get("goals"),
        "decider": decider,
        "from": {"run": run, "branch": branch_name},
        "inputs": inputs,
        "trail": trail,
        "cycles": pinned,
    }


def dump_pin(pin: dict) -> str:
    """The pin as indented JSON (one key a line, so errors can name lines, and a pin under
    version control diffs by field), its trail one cycle a line."""
    body = dict(pin, trail="\0TRAIL\0")
    text = json.dumps(body, indent=1, ensure_ascii=False)
    rows = ",\n".join("  " + json.dumps(t, ensure_ascii=False) for t in pin["trail"])
    text = text.replace('"\\u0000TRAIL\\u0000"', "[\n" + rows + "\n ]" if rows else "[]", 1)
    if json.loads(text) != pin:  # the placeholder was not where it was put: write it plainly
        text = json.dumps(pin, indent=1, ensure_ascii=False)
    return text + "\n"


# ---- reading a pin --------------------------------------------------------------------------
def _line_of(text: str, field: str) -> int | None:
    """The line of a field like `cycles[1].tool` in a pin written indented (one key a line):
    the (i+1)-th `"tool"` key after the `"cycles"` key; a top-level field's own line."""
    import re

    m = re.fullmatch(r"(\w+)\[(\d+)\]\.(\w+).*", field)
    head = re.match(r"\w+", field)
    top, nth, key = (m.group(1), int(m.group(2)), m.group(3)) if m else (head.group(0) if head else field, 0, None)
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if f'"{top}":' in ln), None)
    if start is None or key is None:
        return None if start is None else start + 1
    seen = 0
    for i in range(start + 1, len(lines)):
        if f'"{key}":' in lines[i]:
            if seen == nth:
                return i + 1
            seen += 1
    return start + 1


def load_pin(path: str | Path) -> dict:
    """A pin file, validated: a bad one raises InputError naming the file, line and field."""
    from ..errors import read_user_file

    file = str(path)
    text = read_user_file(Path(path), "pin file")
    try:
        pin = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", file=file, line=exc.lineno) from None

    def err(msg: str, fld: str, key: str | None = None) -> InputError:
        return InputError(msg, file=file, line=_line_of(text, fld), field=fld)

    if not isinstance(pin, dict) or "akh_pin" not in pin:
        raise InputError("not an akh-tui pin file (no \"akh_pin\" version; make one with `akh-tui sessions pin`)",
                         file=file, field="akh_pin")
    if pin["akh_pin"] != PIN_VERSION:
        raise err(f"pin version {pin['akh_pin']!r}; this akh-tui reads version {PIN_VERSION}", "akh_pin")

    def need(obj: dict, key: str, types, where: str, what: str):
        if key not in obj:
            raise err(f"missing (expected {what})", f"{where}{key}", key)
        v = obj[key]
        if not isinstance(v, types) or (isinstance(v, bool) and types is int):
            raise err(f"must be {what}, got {v!r}"[:200], f"{where}{key}", key)
        return v

    need(pin, "scenario", str, "", "a bundled scenario name or a path")
    why = _scenario_refused(pin["scenario"], Path(path))
    if why is not None:
        raise err(why, "scenario")
    seed = need(pin, "seed", int, "", "a non-negative integer")
    if seed < 0:
        raise err(f"must be a non-negative integer, got {seed}", "seed")
    goals = pin.get("goals")
    if goals is not None and (not isinstance(goals, list) or not all(isinstance(g, str) for g in goals)):
        raise err("must be null or a list of goal descriptions", "goals")
    decider = need(pin, "decider", str, "", "a decider name")
    if decider not in DECIDERS:
        raise err(f"decider {decider!r} cannot be rerun headless (known: {', '.join(DECIDERS)})", "decider")
    inputs = need(pin, "inputs", list, "", "a list of user inputs")
    for i, it in enumerate(inputs):
        where = f"inputs[{i}]."
        if not isinstance(it, dict):
            raise err("must be an object with after_cycle, kind and payload", f"inputs[{i}]", "inputs")
        c = need(it, "after_cycle", int, where, "a cycle number")
        if c < 0:
            raise err(f"must be ≥ 0, got {c}", f"{where}after_cycle", "after_cycle")
        kind = need(it, "kind", str, where, "an input kind")
        if kind not in REPLAYABLE:
            raise err(f"unknown input kind {kind!r} (known: {', '.join(REPLAYABLE)})", f"{where}kind", "kind")
        if "payload" not in it:
            raise err("missing (expected the input's payload)", f"{where}payload", "payload")
    trail = need(pin, "trail", list, "", "a list of [tool, input, progress]")
    for i, t in enumerate(trail):
        if not (isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) for x in t)):
            raise err("must be [tool, input, progress] strings", f"trail[{i}]", "trail")
    cycles = need(pin, "cycles", list, "", "a non-empty list of pinned cycles")
    if not cycles:
        raise err("must pin at least one cycle", "cycles")
    for i, cy in enumerate(cycles):
        where = f"cycles[{i}]."
        if not isinstance(cy, dict):
            raise err("must be an object (cycle, tool, input, breakdown, factors, outcome, goals)", f"cycles[{i}]", "cycles")
        c = need(cy, "cycle", int, where, "a cycle number ≥ 1")
        if not 1 <= c <= len(trail):
            raise err(f"cycle {c} is outside the pinned trail (1..{len(trail)})", f"{where}cycle", "cycle")
        need(cy, "tool", str, where, "a tool name")
        need(cy, "input", str, where, "the tool's input")
        need(cy, "breakdown", str, where, "the breakdown string")
        factors = need(cy, "factors", dict, where, "the chosen tool's factors")
        for k, v in factors.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise err(f"factor {k} must be a number, got {v!r}", f"{where}factors.{k}", k)
        need(cy, "outcome", dict, where, "the outcome (success, vetoed, veto, progress, coverage)")
        gl = need(cy, "goals", list, where, "the goals' statuses")
        for j, g in enumerate(gl):
            if not (isinstance(g, dict) and isinstance(g.get("id"), int) and isinstance(g.get("status"), str)):
                raise err("must be an object with id and status", f"{where}goals[{j}]", "goals")
    return pin


# ---- checking -------------------------------------------------------------------------------
def _is_path(ref: str) -> bool:
    return os.sep in ref or "/" in ref or "\\" in ref or ref.endswith(".toml")


def _scenario_refused(ref: str, pin_path: Path) -> str | None:
    """Why a pin's scenario may not be opened, or None. A pin is a file someone hands out, and
    checking it opens its scenario: it may name only a scenario beside or below it (the folder
    that is handed out), or a bundled one by name, never `../x.toml` or a path elsewhere."""
    from ..paths import bundled_data_dir

    if not _is_path(ref):
        if (bundled_data_dir() / "scenarios" / f"{ref}.toml").is_file():
            return None
        from .scenario import list_scenarios

        return f"unknown scenario {ref!r} (bundled: {', '.join(list_scenarios()) or 'none'})"
    try:
        home = pin_path.resolve().parent
        target = (Path(ref) if Path(ref).is_absolute() else pin_path.parent / ref).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        return f"not a usable path {ref!r}: {exc}"
    if target == home or not target.is_relative_to(home):
        return (f"{ref!r} is outside the pin's folder ({home}): a pin may name only a scenario beside or below "
                "it, or a bundled one by name")
    return None


def resolve_scenario(pin: dict, pin_path: Path) -> str:
    """The scenario file a (validated) pin reruns: beside or below it, or a bundled one's."""
    from ..paths import bundled_data_dir

    ref = pin["scenario"]
    if _is_path(ref):
        p = Path(ref)
        return str(p if p.is_absolute() else pin_path.parent / p)
    return str(bundled_data_dir() / "scenarios" / f"{ref}.toml")


def _num_diff(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) > EPS
    return a != b


def diff_cycle(want: dict, rec: dict) -> list[str]:
    """What changed in a pinned cycle against the rerun's record of it, in words (empty when
    it is the same). Factors are those of the pinned tool, as the rerun scored it."""
    got = pinned_cycle(rec)
    out = []
    if (want["tool"], want["input"]) != (got["tool"], got["input"]):
        out.append(f"chose {got['tool']}({got['input']}) instead of {want['tool']}({want['input']})")
    now: dict = next((c for c in rec["decide"].get("candidates") or [] if c["tool"] == want["tool"]), {})
    wf = want["factors"]
    moved = [f"{f} {wf[f]:+.3f} → {now.get(f, 0.0):+.3f} ({now.get(f, 0.0) - wf[f]:+.3f})"
             for f in wf if _num_diff(wf[f], now.get(f, 0.0))]
    if moved:
        out.append(f"factors of {want['tool']} moved: " + ", ".join(moved))
    if want["tool"] != got["tool"] and "score" in got["factors"]:
        why = f" ({now['why_not']})" if now.get("why_not") else ""
        out.append(f"{got['tool']} scored {got['factors']['score']:.3f}, {want['tool']} {now.get('score', 0.0):.3f}{why}")
    if not moved and want["tool"] == got["tool"] and want["breakdown"] != got["breakdown"]:
        out.append(f"breakdown {want['breakdown']} → {got['breakdown']}")
    for k, v in want["outcome"].items():
        if _num_diff(v, got["outcome"].get(k)):
            out.append(f"outcome {k}: {v!r} → {got['outcome'].get(k)!r}")
    goals_now = {g["id"]: g for g in got["goals"]}
    for g in want["goals"]:
        h = goals_now.get(g["id"])
        if h is None:
            out.append(f"goal #{g['id']} {g.get('description', '')!r} is gone")
        elif h["status"] != g["status"]:
            out.append(f"goal #{g['id']} {g.get('description', '')!r}: {g['status']} → {h['status']}")
    return out


Rerun = Callable[[str, int, "list[str] | None", str, "dict[int, list[tuple[str, Any]]]", int], Iterator[dict]]


def check_pin(pin: dict, pin_path: Path, rerun: Rerun) -> dict:
    """Rerun a (validated) pin: per pinned cycle "same" or the changes, and the first cycle
    where the rerun parted from the pinned trail. `rerun(scenario, seed, goals, decider,
    inputs, until)` is the door's (`run.rerun`): the records of cycles 1..until."""
    inputs: dict[int, list[tuple[str, Any]]] = {}
    for it in pin["inputs"]:
        inputs.setdefault(it["after_cycle"], []).append((it["kind"], it["payload"]))
    upto = max(c["cycle"] for c in pin["cycles"])
    try:
        records = list(rerun(resolve_scenario(pin, pin_path), pin["seed"], pin["goals"], pin["decider"], inputs, upto))
    except (ValueError, KeyError, IndexError) as exc:  # an input that no longer applies (e.g. a psyche edit)
        raise InputError(f"the recorded user inputs cannot be replayed on this scenario: {exc}", file=str(pin_path),
                         field="inputs") from None
    parted = None
    for i, (tool, inp, progress) in enumerate(pin["trail"][:upto]):
        if i >= len(records):
            parted = {"cycle": i + 1, "pinned": f"{tool}({inp}) -> {progress}", "now": "no cycle (no goal left active)"}
            break
        d, a = records[i]["decide"], records[i]["act"]
        if [d["tool"], d["input"], a["progress"]] != [tool, inp, progress]:
            parted = {"cycle": i + 1, "pinned": f"{tool}({inp}) -> {progress}",
                      "now": f"{d['tool']}({d['input']}) -> {a['progress']}"}
            break
    results = []
    for want in sorted(pin["cycles"], key=lambda c: c["cycle"]):
        c = want["cycle"]
        if c > len(records):
            results.append({"cycle": c, "same": False,
                            "changes": [f"the rerun stopped after cycle {len(records)}: no goal was left active"]})
            continue
        changes = diff_cycle(want, records[c - 1])
        results.append({"cycle": c, "same": not changes, "changes": changes})
    return {"same": all(r["same"] for r in results) and parted is None, "cycles": results, "parted": parted,
            "rerun_cycles": len(records)}
