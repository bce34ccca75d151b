"""Interviews of a world's agents in the session store (world/interview.py): each on a side
branch of the world, beside its steps, never in them.

An interview branch is a row of `world_branches` like a fork's (so `sessions list` and `world
show` list it), forked after the step asked about, with one edit `{"edit": "interview", "agent",
"at"}` and no step or saved state of its own: its trace is its parent's up to that step, byte
for byte, and the branch it was asked on is not touched (nor made current). Every question
asked about that agent's step on that branch goes to the same interview branch, one row each
in `world_interviews` (its question and answer as JSON, masked like every row, with a
checksum). A store with no interview has no such table.
"""

from __future__ import annotations

import json
from typing import Any

from .session import row_crc
from .trace import redact_line
from .worldstore import WorldStore

INTERVIEW_SCHEMA = ("CREATE TABLE IF NOT EXISTS world_interviews (branch INTEGER NOT NULL, n INTEGER NOT NULL, "
                    "payload TEXT NOT NULL, crc INTEGER, PRIMARY KEY (branch, n))")
EDIT = "interview"
PREFIX = "interview-"


def _has_table(ws: WorldStore) -> bool:
    return ws.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='world_interviews'").fetchone() is not None


def find_branch(ws: WorldStore, parent: int, step: int, agent: str) -> int | None:
    """The interview branch of `agent`'s step `step` on branch `parent`, if one was made."""
    world = ws.branch_info(parent)["world"]
    for b in ws.branches(world):
        if b["parent"] == parent and b["fork_step"] == step and any(
                e.get("edit") == EDIT and e.get("agent") == agent for e in b["edits"]):
            return int(b["id"])
    return None


def add(ws: WorldStore, parent: int, step: int, agent: str, at: str, payload: dict[str, Any]) -> tuple[str, int]:
    """Keep one question and its answer on the interview branch of `agent`'s step (made now if
    it is the first): one transaction. Returns the branch's name and the interview's number."""
    ws._ensure()
    db = ws.db
    with ws.store._tx():
        db.execute(INTERVIEW_SCHEMA)
        branch = find_branch(ws, parent, step, agent)
        if branch is None:
            world = ws.branch_info(parent)["world"]
            taken = {b["name"] for b in ws.branches(world)}
            k = 1 + sum(1 for name in taken if name.startswith(PREFIX))
            while f"{PREFIX}{k}" in taken:
                k += 1
            branch = ws._insert_branch(world, f"{PREFIX}{k}", parent, step, [{"edit": EDIT, "agent": agent, "at": at}])
        row = db.execute("SELECT MAX(n) FROM world_interviews WHERE branch=?", (branch,)).fetchone()
        n = int(row[0] or 0) + 1
        # a question is typed text and an answer may quote a model: masked as every row is
        text = redact_line(json.dumps(payload, sort_keys=True, ensure_ascii=False))
        db.execute("INSERT INTO world_interviews (branch, n, payload, crc) VALUES (?, ?, ?, ?)",
                   (branch, n, text, row_crc(branch, n, text)))
    ws._lineages.clear()
    return str(ws.branch_info(branch)["name"]), n


def rows(ws: WorldStore, world: int) -> list[dict[str, Any]]:
    """Every interview of the world, oldest first: its payload plus `branch` (the interview
    branch's name), `n` and `parent` (the name of the branch it was asked on)."""
    if not ws._tables() or not _has_table(ws):
        return []
    names = {b["id"]: b["name"] for b in ws.branches(world)}
    out: list[dict[str, Any]] = []
    for branch, n, text, crc in ws.db.execute(
            "SELECT i.branch, i.n, i.payload, i.crc FROM world_interviews i JOIN world_branches b ON b.id = i.branch "
            "WHERE b.world=? ORDER BY i.branch, i.n", (world,)):
        if crc is not None and row_crc(branch, n, text) != crc:
            raise ws._bad(f"interview {n} of branch {names.get(branch, branch)!r}")
        info = ws.branch_info(branch)
        out.append(json.loads(text) | {"branch": names[branch], "n": n, "parent": names.get(info["parent"])})
    return out

