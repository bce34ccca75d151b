"""Soar runs in the session store (issue 30): a Soar run is a row of `runs` like any run (its
meta says `"architecture": "soar"` and keeps the trace's header line) with branches in
`branches` (a fork names its parent and the decision it follows, `fork_cycle`, and the
operator it forces, its `edits`), and its decisions in a table of their own:

- `soar_decisions`: one row per decision of a branch, numbered from 1 along the branch's
  lineage: the decision's trace line exactly as `agent run --trace` writes it (so `sessions
  export` of a Soar run is that trace, byte for byte), the phases Soar had run at its end and
  the phase the person's selection was given at (none: Soar's own pick), which let a resume
  restore in Soar's own loop (adapter.py) rather than record every decision again; a CRC-32
  over the row.

Nothing else is kept: Soar's memory cannot be saved whole, so a rewind or a resume is the
scenario run again with the run's seed and the selections the person made (each decision's
record says `"forced"`), as a trace replay is (soar/run.py). A store without a Soar run has
no `soar_decisions` table and its rows are untouched, so its bytes stay what they were; the
OODA readers skip a Soar run's branches (they have no cycles, no head).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterator

from ..errors import InputError, StoreDamaged
from .session import SessionStore, row_crc

SOAR_SCHEMA = """
CREATE TABLE IF NOT EXISTS soar_decisions (branch INTEGER NOT NULL, decision INTEGER NOT NULL, line TEXT NOT NULL,
  phases INTEGER NOT NULL, force_at INTEGER, crc INTEGER NOT NULL, PRIMARY KEY (branch, decision))
"""
ARCHITECTURE = "soar"


def is_soar_meta(meta: dict[str, Any] | None) -> bool:
    """A run's meta is a Soar run's."""
    return meta is not None and meta.get("architecture") == ARCHITECTURE


class SoarStore:
    """The Soar rows of one SessionStore (its connection, transactions and read-only mode)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.db: sqlite3.Connection = store.db
        self._has_table: bool | None = None

    def _table(self) -> bool:
        if self._has_table is None:
            self._has_table = bool(self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='soar_decisions'").fetchone())
        return self._has_table

    def _ensure(self) -> None:
        if not self._table():
            with self.store._tx():
                self.db.execute(SOAR_SCHEMA)
            self._has_table = True

    # ---- runs and branches -----------------------------------------------------------------
    def start(self, meta: dict[str, Any]) -> int:
        """A new Soar run with its `main` branch, made the store's current branch; returns it."""
        self._ensure()
        with self.store._tx():
            run = self.store._insert_run({**meta, "architecture": ARCHITECTURE})
            branch = self.store._insert_branch(run, "main")
            self.store._set_current(branch)
        return branch

    def fork(self, parent: int, decision: int, name: str, edits: list[dict[str, Any]]) -> int:
        """A branch of `parent`'s run after `decision`, made current; its own decisions start
        at `decision + 1`."""
        info = self.store.branch_info(parent)
        if not name.strip():
            raise InputError("a branch needs a name", field="--name")
        if any(b["name"] == name for b in self.store.branches(info["run"])):
            raise InputError(f"run {info['run']} already has a branch {name!r}", field="--name")
        last = self.last_decision(parent)
        if not 0 <= decision <= last:
            raise InputError(f"no decision {decision} to fork after (recorded: 0..{last})", field="--at")
        with self.store._tx():
            # fork_sizes: the OODA lineage reads it (a Soar run has no graph of ours: nothing taken)
            b = self.store._insert_branch(info["run"], name, parent, decision, "[0, 0, 0]",
                                          json.dumps(edits, sort_keys=True))
            self.store._set_current(b)
        return b

    def run_of(self, branch: int) -> dict[str, Any]:
        return self.store.run_meta(self.store.branch_info(branch)["run"])

    # ---- decisions -------------------------------------------------------------------------
    def put(self, branch: int, decision: int, line: str, phases: int, force_at: int | None) -> None:
        """A decision's row (one transaction: a kill loses no committed decision)."""
        with self.store._tx():
            self.db.execute("INSERT OR REPLACE INTO soar_decisions (branch, decision, line, phases, force_at, crc) "
                            "VALUES (?, ?, ?, ?, ?, ?)",
                            (branch, decision, line, phases, force_at, row_crc(branch, decision, line, phases, force_at)))

    def _chain(self, branch: int) -> list[tuple[int, int, int]]:
        """Root first: (branch, first decision, last decision) of each segment of the lineage."""
        chain: list[tuple[int, int | None]] = []
        b: int | None = branch
        seen: set[int] = set()
        while b is not None:
            if b in seen:
                raise StoreDamaged("the session store's branch parents loop", file=self.store.where)
            seen.add(b)
            info = self.store.branch_info(b)
            chain.append((b, info["fork_cycle"]))
            parent = info["parent"]
            b = self.store.find_branch(info["run"], parent) if parent is not None else None
        out: list[tuple[int, int, int]] = []
        hi = 1 << 62
        for i, (bid, fork) in enumerate(chain):  # leaf first: each bounded by its child's fork point
            lo = (fork + 1) if fork is not None else 1
            out.append((bid, lo, hi))
            hi = lo - 1
        return out[::-1]

    def rows(self, branch: int) -> Iterator[tuple[str, int, int | None]]:
        """The branch's decisions, in order, each checked: (trace line, phases run at its end,
        the phase its selection was given at)."""
        if not self._table():
            return
        for seg, lo, hi in self._chain(branch):
            for n, line, phases, force_at, crc in self.db.execute(
                    "SELECT decision, line, phases, force_at, crc FROM soar_decisions WHERE branch=? AND decision "
                    "BETWEEN ? AND ? ORDER BY decision", (seg, lo, hi)):
                if not isinstance(line, str) or row_crc(seg, n, line, phases, force_at) != crc:
                    raise StoreDamaged(f"the session store's Soar decision {n} is damaged (its checksum does not "
                                       f"match); restore the store from a copy", file=self.store.where)
                yield line, phases, force_at

    def lines(self, branch: int) -> Iterator[str]:
        """The branch's decisions' trace lines, in order, each checked."""
        return (line for line, _p, _f in self.rows(branch))

    def records(self, branch: int) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines(branch)]

    def last_decision(self, branch: int) -> int:
        if not self._table():
            return 0
        last = 0
        for seg, lo, hi in self._chain(branch):
            row = self.db.execute("SELECT MAX(decision) FROM soar_decisions WHERE branch=? AND decision BETWEEN ? AND ?",
                                  (seg, lo, hi)).fetchone()
            if row and row[0] is not None:
                last = max(last, int(row[0]))
            elif lo > 1:
                last = max(last, lo - 1)
        return last

    def check(self) -> tuple[int, dict[int, list[int]]]:
        """Every Soar decision's checksum (`sessions check`): how many were checked, and the
        damaged ones' decisions by branch."""
        if not self._table():
            return 0, {}
        checked, damaged = 0, {}  # type: tuple[int, dict[int, list[int]]]
        for b, n, line, phases, force_at, crc in self.db.execute(
                "SELECT branch, decision, line, phases, force_at, crc FROM soar_decisions ORDER BY branch, decision"):
            checked += 1
            if not isinstance(line, str) or row_crc(b, n, line, phases, force_at) != crc:
                damaged.setdefault(b, []).append(n)
        return checked, damaged
