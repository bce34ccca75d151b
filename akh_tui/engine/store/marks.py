"""The damage `sessions check` found, kept for writers: a file beside the store (never in it:
a damaged store is not written to), which `agent resume`, `agent run` and a fork read before
they append to a branch; and what a writer says when it refuses (fork before the damage)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import BranchDamaged, StoreDamaged
from .lineage import Segment
from .schema import BRANCH_TABLES


def mark_path(store: Path) -> Path:
    """Where the verdict for the store at `store` is kept."""
    return store.with_name(store.name + ".damaged.json")


def record(mark: Path, result: dict) -> str | None:
    """Keep a check's verdict: its marks, or nothing once the store is whole. None, or why it
    could not be kept (a read-only file system)."""
    try:
        if result["ok"]:
            mark.unlink(missing_ok=True)
        else:
            tmp = mark.with_name(mark.name + ".tmp")
            tmp.write_text(json.dumps({"v": 1, "marks": result["marks"]}), encoding="utf-8")
            os.replace(tmp, mark)
    except OSError as exc:
        return f"the damage could not be marked for writers ({exc.strerror or exc}): {mark}"
    return None


def read(mark: Path) -> list[dict]:
    """The marks kept; an unreadable mark file counts as the whole store."""
    if not mark.exists():
        return []
    try:
        marks = json.loads(mark.read_text(encoding="utf-8"))["marks"]
        if isinstance(marks, list) and all(isinstance(m, dict) for m in marks):
            return marks
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return [{"branch": None, "what": "mark", "cycle": None}]


def first_hit(marks: list[dict], segs: dict[int, Segment], branch: int, upto: int | None) -> dict | None:
    """The mark that continuing `branch` (or forking it after cycle `upto`) would build on, the
    earliest: in the rows of its lineage (`segs`, by branch) up to there, or anywhere SQLite's
    own check failed; None when the branch is clear."""
    hit: dict | None = None
    for m in marks:
        b, c = m.get("branch"), m.get("cycle")
        if b is None:
            if m.get("what") in ("sqlite", "mark", "meta", "runs") or m.get("what") in BRANCH_TABLES:
                return m  # somewhere in the store: no branch is known whole
            continue
        seg = segs.get(b)
        if seg is None:
            continue
        if m.get("what") == "heads" and b != branch:
            continue  # another branch's head: not read by this one
        if isinstance(c, int) and not (seg.lo["cycles"] <= c < seg.hi["cycles"]) and m.get("what") in (
                "cycles", "snapshots", "events", "inputs"):
            continue  # its parent's rows after the fork point: not this branch's
        if upto is not None and isinstance(c, int) and c > upto and m.get("what") in ("cycles", "snapshots", "events",
                                                                                       "inputs", "heads"):
            continue  # after the fork point asked for
        if hit is None or (isinstance(c, int) and (not isinstance(hit.get("cycle"), int) or c < hit["cycle"])):
            hit = m
    return hit


def refusal(where_file: str, branch: int, run: int | None, name: str | None, exc: StoreDamaged | None,
            mark: dict | None = None) -> BranchDamaged:
    """Why a writer will not continue `branch` (run `run`, named `name`: None when its row
    cannot be read), from the damage it met (`exc`) or a mark, and how to go on."""
    where = f"run {run}, branch {name!r}" if run is not None else f"branch id {branch}"
    if exc is not None:
        cycle, what = exc.cycle, "heads" if "head state" in exc.message else "cycles"
        why = exc.message.split(". Nothing was changed")[0]
    else:
        assert mark is not None
        cycle, what = mark.get("cycle"), str(mark.get("what"))
        why = (f"`akh-tui sessions check` found damage ({what}" + (f" at cycle {cycle}" if isinstance(cycle, int) else "")
               + ")")
    if isinstance(cycle, int) and what in ("cycles", "snapshots", "events", "inputs", "heads") and \
            (mark is None or mark.get("branch") is not None):
        at = cycle if what == "heads" else max(0, cycle - 1)
        how = (f"fork before the damage: `akh-tui agent fork --at {at} --name NAME` (it starts a new branch there; "
               f"`akh-tui agent resume` then continues it)")
    else:
        how = ("restore the store from a copy, or use --data-dir for a new one; `akh-tui sessions export` writes "
               "out what still reads, and `akh-tui sessions check` clears this mark once the store is whole")
    return BranchDamaged(f"{where} is damaged: {why}. Nothing was appended to it; to go on, {how}.",
                         file=where_file, run=run, branch=name, cycle=cycle if isinstance(cycle, int) else None)
