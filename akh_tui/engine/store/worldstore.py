"""Worlds in the session store (SPEC §13): a world run, its branches, its steps and its saved
states, in tables of their own beside a single run's (a store without a world has none of
them; a single run's rows and records are untouched, so its traces stay byte-identical).

- `worlds`: one row per world run: its meta (the world file, seed, the trace's header line).
- `world_branches`: `main` and forks; a fork names its parent and the step it follows
  (`fork_step`) and the edits made there.
- `world_steps`: one row per step (`ROUND:AGENT`), numbered from 1 along the branch's lineage:
  the step's trace lines, exactly as the trace file gets them (so `sessions export` of a world
  is the §13 trace, byte for byte). Since schema 6 they are packed (store/codec.py): deflated
  against the store's first step's lines, then, from the first step whose agent is
  STEADY_CYCLE cycles in, against that step's (a row ~7 KB of JSON -> ~0.7 KB; inserting the
  row was the largest cost a world step had over a single run's cycle). Its checksum covers
  the key and the packed bytes (`step_crc`). A row written before is text, read as it is.
- `world_states`: saved states for rewinds, in parts: `world` (clock, ledger, artifacts,
  escrow, loops, every agent's read versions and rate windows: world/state.py; and
  `agent_parts`, the step of each agent's newest part) and one part per agent, written only
  for the agents that took a turn since the branch's last saved state; its last cycle record
  is named by the step whose lines hold it (`{"step": n}`). Beside it, `kg:AGENT`, what the
  agent only appends to (its graph additions, provenance entries, episodes and the evidence of
  its goals): all of it, or what came since its `kg:` part `prev` (step, symbols, triples) on
  the same branch, at most KG_CHAIN (worldrun.py) in a chain. A state at step s is the newest
  `world` part at or before s, with each agent's newest part at or before that (named by
  `agent_parts`; searched for in a part saved before it). Parts saved before these (the
  agent's provenance, episodes, evidence and last record in its part, or its whole graph)
  still read.
- `world_current`: the data dir's current world branch.

A step and the state saved after it are one transaction (the SessionStore's), so a kill loses
no committed step. A branch's own rows start after its fork step, except its states: a fork
saves a whole state at its fork step (the edits applied), which a rewind prefers to the
parent's.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from dataclasses import dataclass
from typing import Any, Iterator

import orjson

from ..config import served_process
from ..errors import InputError, StoreDamaged
from .codec import STEADY_CYCLE, inflate, pack
from .session import SessionStore, row_crc
from .trace import dumps, redact_line

WORLD_SCHEMA = """
CREATE TABLE IF NOT EXISTS worlds (id INTEGER PRIMARY KEY, meta TEXT NOT NULL, crc INTEGER);
CREATE TABLE IF NOT EXISTS world_branches (id INTEGER PRIMARY KEY, world INTEGER NOT NULL, name TEXT NOT NULL,
  parent INTEGER, fork_step INTEGER, edits TEXT NOT NULL, crc INTEGER);
CREATE TABLE IF NOT EXISTS world_steps (branch INTEGER NOT NULL, step INTEGER NOT NULL, round INTEGER NOT NULL,
  agent TEXT, lines TEXT NOT NULL, crc INTEGER, PRIMARY KEY (branch, step));
CREATE TABLE IF NOT EXISTS world_states (branch INTEGER NOT NULL, step INTEGER NOT NULL, part TEXT NOT NULL,
  payload TEXT NOT NULL, crc INTEGER, PRIMARY KEY (branch, step, part));
CREATE TABLE IF NOT EXISTS world_current (key INTEGER PRIMARY KEY CHECK (key = 0), branch INTEGER NOT NULL);
"""
WORLD_PART = "world"
GRAPH_PART = "kg:"  # + an agent id (which has no colon): its graph additions
AGENT_PARTS = "agent_parts"  # in a world part: the step of each agent's newest part (state_refs)
RECORD_AT = "step"  # an agent part's last record {RECORD_AT: n}: its cycle record in step n's lines
WORLD_KEYS = ("agent", "round", "clock", "state")  # what a world's cycle record adds to the agent's (world.py)
INF = 1 << 62
STEP_KIND = "world.step"  # the codec's dictionary kinds for steps' lines: the store's first step's,
STEADY_STEP_KIND = "world.step.steady"  # then a steady-state step's (schema 6)
PACKED = "\x00deflated"  # in a packed step's checksum in place of the text: a text row whose type
# was flipped to blob (the same bytes) does not match it


def step_crc(branch: int, step: int, rnd: int, agent: str | None, lines: str | bytes) -> int:
    """A step row's checksum: over its key and its text (a row written before schema 6), or
    over its key and its packed bytes (zlib's running CRC, without copying them)."""
    if isinstance(lines, str):
        return row_crc(branch, step, rnd, agent, lines)
    return zlib.crc32(lines, row_crc(branch, step, rnd, agent, PACKED))


# a step row as read: its text or packed bytes as bytes (`typeof` says which), so that a
# damaged text (a flipped byte: not UTF-8) is named by its step instead of failing the fetch
STEP_COLUMNS = "branch, step, round, agent, typeof(lines) = 'text', CAST(lines AS BLOB), crc"


@dataclass(frozen=True)
class WorldSegment:
    """Steps `lo..hi` (inclusive) of a lineage are `branch`'s rows; states from `state_lo`."""
    branch: int
    lo: int
    hi: int
    state_lo: int
    state_hi: int


@dataclass(frozen=True)
class StepRow:
    step: int
    round: int
    agent: str | None
    lines: list[str]

    @property
    def name(self) -> str:
        return f"{self.round}:{self.agent if self.agent is not None else '-'}"


class WorldStore:
    """The world tables of one SessionStore (its connection, transactions and read-only mode)."""

    STEADY_CYCLE = STEADY_CYCLE  # the first step whose record is this far in becomes the steady dictionary

    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self.db: sqlite3.Connection = store.db
        self._has_tables: bool | None = None
        self._lineages: dict[int, list[WorldSegment]] = {}

    # ---- tables ----------------------------------------------------------------------------
    def _tables(self) -> bool:
        if self._has_tables is None:
            names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            self._has_tables = "world_steps" in names
        return self._has_tables

    def _ensure(self) -> None:
        if not self._tables():
            with self.store._tx():
                for stmt in [x for x in WORLD_SCHEMA.split(";") if x.strip()]:
                    self.db.execute(stmt)
            self._has_tables = True

    def _bad(self, what: str) -> StoreDamaged:
        return StoreDamaged(f"the session store's {what} is damaged (its checksum does not match); "
                            f"restore the store from a copy", file=self.store.where)

    # ---- worlds and branches -----------------------------------------------------------------
    def start(self, meta: dict[str, Any]) -> int:
        """A new world run with its `main` branch, made current; returns the branch."""
        self._ensure()
        with self.store._tx():
            text = redact_line(json.dumps(meta, sort_keys=True))
            wid = self.db.execute("INSERT INTO worlds (meta) VALUES (?)", (text,)).lastrowid
            assert wid is not None
            self.db.execute("UPDATE worlds SET crc=? WHERE id=?", (row_crc(wid, text), wid))
            branch = self._insert_branch(wid, "main", None, None, [])
            self._set_current(branch)
        return branch

    def _insert_branch(self, world: int, name: str, parent: int | None, fork_step: int | None,
                       edits: list[dict[str, Any]]) -> int:
        text = json.dumps(edits, sort_keys=True)
        b = self.db.execute("INSERT INTO world_branches (world, name, parent, fork_step, edits) VALUES (?, ?, ?, ?, ?)",
                            (world, name, parent, fork_step, text)).lastrowid
        assert b is not None
        self.db.execute("UPDATE world_branches SET crc=? WHERE id=?", (row_crc(b, world, name, parent, fork_step, text), b))
        return b

    def _set_current(self, branch: int) -> None:
        # a served world (`serve --world`: its owner is a served process) never becomes the
        # world that `world run` continues, as a served tab's run never becomes the current run
        if not served_process():
            self.db.execute("INSERT OR REPLACE INTO world_current (key, branch) VALUES (0, ?)", (branch,))

    def use(self, branch: int) -> None:
        self.branch_info(branch)  # it exists
        with self.store._tx():
            self._set_current(branch)

    def current(self) -> int | None:
        """The data dir's current world branch, None when it has no world."""
        if not self._tables():
            return None
        row = self.db.execute("SELECT branch FROM world_current WHERE key=0").fetchone()
        return int(row[0]) if row else None

    def worlds(self) -> list[dict[str, Any]]:
        if not self._tables():
            return []
        return [self._world_row(*r) for r in self.db.execute("SELECT id, meta, crc FROM worlds ORDER BY id")]

    def _world_row(self, wid: int, text: str, crc: int | None) -> dict[str, Any]:
        if crc is not None and row_crc(wid, text) != crc:
            raise self._bad(f"world {wid} header")
        return {"id": wid, **json.loads(text)}

    def world_meta(self, world: int) -> dict[str, Any]:
        row = self.db.execute("SELECT id, meta, crc FROM worlds WHERE id=?", (world,)).fetchone()
        if row is None:
            raise InputError(f"no world {world} in this store", file=self.store.where)
        return self._world_row(*row)

    def branch_info(self, branch: int) -> dict[str, Any]:
        row = self.db.execute("SELECT id, world, name, parent, fork_step, edits, crc FROM world_branches WHERE id=?",
                              (branch,)).fetchone() if self._tables() else None
        if row is None:
            raise InputError(f"no world branch {branch} in this store", file=self.store.where)
        b, world, name, parent, fork_step, edits, crc = row
        if crc is not None and row_crc(b, world, name, parent, fork_step, edits) != crc:
            raise self._bad(f"world branch {name!r}")
        return {"id": b, "world": world, "name": name, "parent": parent, "fork_step": fork_step,
                "edits": json.loads(edits)}

    def branches(self, world: int) -> list[dict[str, Any]]:
        ids = [r[0] for r in self.db.execute("SELECT id FROM world_branches WHERE world=? ORDER BY id", (world,))]
        return [self.branch_info(b) | {"steps": self.last_step(b)} for b in ids]

    def find_branch(self, world: int, name: str) -> int:
        row = self.db.execute("SELECT id FROM world_branches WHERE world=? AND name=?", (world, name)).fetchone()
        if row is None:
            names = ", ".join(b["name"] for b in self.branches(world))
            raise InputError(f"world {world} has no branch {name!r} (it has: {names})", field="--branch")
        return int(row[0])

    def fork(self, parent: int, step: int, name: str, edits: list[dict[str, Any]],
             states: dict[str, dict[str, Any]]) -> int:
        """Branch `name` off `parent` after `step`, with `edits` made there and the whole state
        after them (`states`: part -> state); the new branch is current."""
        info = self.branch_info(parent)
        if self.db.execute("SELECT 1 FROM world_branches WHERE world=? AND name=?", (info["world"], name)).fetchone():
            raise InputError(f"world {info['world']} already has a branch {name!r}", field="--name")
        with self.store._tx():
            b = self._insert_branch(info["world"], name, parent, step, edits)
            self._put_states(b, step, states)
            self._set_current(b)
        self._lineages.clear()
        return b

    def check(self) -> dict[str, Any]:
        """Every world row's checksum (`sessions check`): how many were checked, how many were
        written without one, and the damaged, by world and branch, with their steps. Nothing is
        repaired or replaced: the readers refuse a damaged row when they come to it."""
        damaged: dict[str, list[int]] = {}
        checked = unchecked = 0
        if not self._tables():
            return {"checked": 0, "unchecked": 0, "damaged": damaged}
        names: dict[int, str] = {}
        try:
            for b, world, name in self.db.execute("SELECT id, world, name FROM world_branches"):
                names[b] = f"world w{world} branch {name!r}"
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            damaged[f"world_branches: unreadable ({exc})"] = []
        checks: list[tuple[str, str, Any]] = [
            ("worlds", "SELECT id, meta, crc FROM worlds",
             lambda r: (f"world w{r[0]}: its header", None)),
            ("world_branches", "SELECT id, world, name, parent, fork_step, edits, crc FROM world_branches",
             lambda r: (f"world w{r[1]}: branch row {r[0]} ({r[2]!r})", None)),
            ("world_steps", f"SELECT {STEP_COLUMNS} FROM world_steps",
             lambda r: (f"{names.get(r[0], f'world branch {r[0]}')}: steps", r[1])),
            ("world_states", "SELECT branch, step, part, payload, crc FROM world_states",
             lambda r: (f"{names.get(r[0], f'world branch {r[0]}')}: saved states", r[1])),
        ]
        if self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='world_interviews'").fetchone():
            checks.append(("world_interviews", "SELECT branch, n, payload, crc FROM world_interviews",
                           lambda r: (f"{names.get(r[0], f'world branch {r[0]}')}: interviews", r[1])))
        for table, sql, label in checks:
            try:
                for row in self.db.execute(sql):
                    if row[-1] is None:
                        unchecked += 1
                        continue
                    checked += 1
                    if not (_step_whole(row) if table == "world_steps" else row_crc(*row[:-1]) == row[-1]):
                        where, step = label(row)
                        damaged.setdefault(where, [])
                        if step is not None and step not in damaged[where]:
                            damaged[where].append(step)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
                damaged[f"{table}: unreadable ({exc})"] = []
        return {"checked": checked, "unchecked": unchecked, "damaged": damaged}

    def delete(self, world: int) -> dict[str, Any]:
        """World `world`, all its branches, steps and saved states, gone in one transaction;
        the data dir then has no current world if it was this one. Returns its meta and how
        many branches it had."""
        meta = self.world_meta(world)
        ids = [r[0] for r in self.db.execute("SELECT id FROM world_branches WHERE world=?", (world,))]
        with self.store._tx():
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            # interviews (store/interviews.py) are on branches of their own: they go with the world
            for table in ("world_steps", "world_states", *(["world_interviews"] if "world_interviews" in tables else [])):
                self.db.execute(f"DELETE FROM {table} WHERE branch IN (SELECT id FROM world_branches WHERE world=?)",
                                (world,))
            cur = self.current()
            if cur in ids:
                self.db.execute("DELETE FROM world_current WHERE key=0")
            self.db.execute("DELETE FROM world_branches WHERE world=?", (world,))
            self.db.execute("DELETE FROM worlds WHERE id=?", (world,))
        self._lineages.clear()
        return meta | {"branches": len(ids)}

    # ---- lineage -----------------------------------------------------------------------------
    def lineage(self, branch: int) -> list[WorldSegment]:
        """The branch's steps and states as segments of its ancestors', oldest first."""
        got = self._lineages.get(branch)
        if got is not None:
            return got
        chain: list[dict[str, Any]] = []
        b: int | None = branch
        while b is not None:
            info = self.branch_info(b)
            chain.append(info)
            b = info["parent"]
        chain.reverse()
        out: list[WorldSegment] = []
        for i, info in enumerate(chain):
            lo = 1 if info["fork_step"] is None else info["fork_step"] + 1
            state_lo = 0 if info["fork_step"] is None else info["fork_step"]
            # (every later fork, not only the next: a fork of a fork may follow an earlier step
            # than its parent's fork step, and then none of that parent's own rows are on it)
            nxt = min((c["fork_step"] for c in chain[i + 1:]), default=None)
            hi = INF if nxt is None else nxt
            state_hi = INF if nxt is None else nxt - 1
            out.append(WorldSegment(info["id"], lo, hi, state_lo, state_hi))
        self._lineages[branch] = out
        return out

    # ---- steps -------------------------------------------------------------------------------
    def add_step(self, branch: int, step: int, rnd: int, agent: str | None, lines: list[str],
                 states: dict[str, dict[str, Any]] | None = None, cycle: int | None = None) -> None:
        """One step, and the state saved after it if any: one transaction. `cycle`: the cycle
        of the agent's record in `lines` (None: it holds none), which says whether the step
        is steady enough to become the store's dictionary for steps (see _pack_step)."""
        text = "\n".join(redact_line(x) for x in lines)  # masked already by the world's writer: a substring check
        # a step that writes no state and no dictionary is one statement, its own transaction
        # (BEGIN and COMMIT were two more statements on every step)
        with self.store._tx(single=not states and self._dictionary_kept(cycle)):
            blob = self._pack_step(text, cycle)
            self.db.execute("INSERT INTO world_steps (branch, step, round, agent, lines, crc) VALUES (?, ?, ?, ?, ?, ?)",
                            (branch, step, rnd, agent, blob, step_crc(branch, step, rnd, agent, blob)))
            if states:
                self._put_states(branch, step, states)

    def _pack_step(self, text: str, cycle: int | None) -> bytes:
        """A step's lines packed against the store's steady-state step once it has one: the
        first step whose agent's record is STEADY_CYCLE cycles in or more (a first turn holds
        little: empty working memory, no history; later steps took ~1.1 KB against the first
        step, ~0.7 KB against the 100th turn's); before that, against the store's first step."""
        st = self.store
        steady = st._zdict(STEADY_STEP_KIND)
        if steady is None and cycle is not None and cycle >= self.STEADY_CYCLE:
            steady = self._set_dictionary(STEADY_STEP_KIND, text)
        if steady is not None:
            return pack(text, steady, STEADY_STEP_KIND)[0]
        first = st._zdict(STEP_KIND)
        if first is None:
            first = self._set_dictionary(STEP_KIND, text)
        return pack(text, first, STEP_KIND)[0]

    def _set_dictionary(self, kind: str, text: str) -> bytes:
        """The store's dictionary of `kind`, `text` made it unless another process (driving
        another world of this store) set one first (SessionStore._set_zdict: set once, never
        replaced), inside this write transaction (see _dictionary_kept)."""
        return self.store._set_zdict(kind, text)

    def _dictionary_kept(self, cycle: int | None) -> bool:
        """Whether packing a step of `cycle` writes no dictionary into meta (see _pack_step)."""
        st = self.store
        if st._zdict(STEADY_STEP_KIND) is not None:
            return True
        return (cycle is None or cycle < self.STEADY_CYCLE) and st._zdict(STEP_KIND) is not None

    def _lines(self, b: int, step: int, is_text: int, raw: bytes) -> str:
        """A step row's lines (its checksum verified by the caller)."""
        try:
            return raw.decode("utf-8") if is_text else inflate(raw, self.store._dicts(raw))
        except (UnicodeDecodeError, ValueError) as exc:
            raise StoreDamaged(f"the session store's step {step} of world branch {b} cannot be read ({exc}); "
                               f"restore the store from a copy", file=self.store.where) from None

    def save_states(self, branch: int, step: int, states: dict[str, dict[str, Any]]) -> None:
        with self.store._tx():
            self._put_states(branch, step, states)

    def _put_states(self, branch: int, step: int, states: dict[str, dict[str, Any]]) -> None:
        rows = []
        for part, state in states.items():
            # a registered secret never reaches the store (the steps' lines were masked by the
            # world's writer; a state holds the artifacts' and agents' text as well)
            text = redact_line(dumps(state))
            rows.append((branch, step, part, text, row_crc(branch, step, part, text)))
        self.db.executemany("INSERT OR REPLACE INTO world_states (branch, step, part, payload, crc) VALUES (?, ?, ?, ?, ?)",
                            rows)

    def last_step(self, branch: int) -> int:
        """The branch's last step along its lineage (0: none yet)."""
        for seg in reversed(self.lineage(branch)):
            row = self.db.execute("SELECT MAX(step) FROM world_steps WHERE branch=? AND step>=? AND step<=?",
                                  (seg.branch, seg.lo, seg.hi)).fetchone()
            if row[0] is not None:
                return int(row[0])
            if seg.lo > 1:
                return seg.lo - 1  # a fork with no step of its own yet: its parent's up to the fork
        return 0

    def steps(self, branch: int, start: int = 1, end: int = INF) -> Iterator[StepRow]:
        """Steps start..end (inclusive) of the branch's lineage, in order, each checked."""
        for seg in self.lineage(branch):
            lo, hi = max(start, seg.lo), min(end, seg.hi)
            if lo > hi:
                continue
            for row in self.db.execute(
                    f"SELECT {STEP_COLUMNS} FROM world_steps WHERE branch=? AND step>=? AND step<=? ORDER BY step",
                    (seg.branch, lo, hi)):
                b, step, rnd, agent, is_text, raw, crc = row
                if crc is not None and not _step_whole(row):
                    raise self._bad(f"step {step} of world branch {b}")
                text = self._lines(b, step, is_text, raw)
                yield StepRow(step, rnd, agent, text.split("\n") if text else [])

    def find_step(self, branch: int, rnd: int, agent: str | None) -> int:
        """The number of step ROUND:AGENT on the branch's lineage."""
        for seg in self.lineage(branch):
            row = self.db.execute("SELECT step FROM world_steps WHERE branch=? AND step>=? AND step<=? AND round=? AND "
                                  "agent IS ?", (seg.branch, seg.lo, seg.hi, rnd, agent)).fetchone()
            if row is not None:
                return int(row[0])
        raise InputError(f"no step {rnd}:{agent if agent is not None else '-'} on this branch", field="--at")

    # ---- states ------------------------------------------------------------------------------
    def state_at(self, branch: int, step: int) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]]:
        """The newest saved state at or before `step`: (its step, the world part, each agent's part)."""
        at, world, refs = self.state_refs(branch, step)
        return at, world, {aid: self.agent_part(b, s, aid) for aid, (b, s) in refs.items()}

    def state_refs(self, branch: int, step: int) -> tuple[int, dict[str, Any], dict[str, tuple[int, int]]]:
        """The newest saved state at or before `step`: (its step, the world part, and where
        each agent's part is: (branch, step), for `agent_part`). A world part saved with
        `agent_parts` (the step of each agent's newest part) names them; one saved before is
        followed by a search of the parts."""
        found: tuple[int, int] | None = None  # (segment branch, step)
        lineage = self.lineage(branch)
        for seg in reversed(lineage):
            hi = min(seg.state_hi, step)
            if hi < seg.state_lo:
                continue
            row = self.db.execute("SELECT MAX(step) FROM world_states WHERE branch=? AND part=? AND step>=? AND step<=?",
                                  (seg.branch, WORLD_PART, seg.state_lo, hi)).fetchone()
            if row[0] is not None:
                found = (seg.branch, int(row[0]))
                break
        if found is None:
            raise InputError("this world branch has no saved state to rewind to", file=self.store.where)
        at = found[1]
        world = self._state(found[0], at, WORLD_PART)
        named = world.pop(AGENT_PARTS, None)
        if isinstance(named, dict):
            refs: dict[str, tuple[int, int]] = {}
            for aid, s in named.items():
                holder = next((g for g in lineage if g.state_lo <= s <= min(g.state_hi, at)), None)
                if holder is None:
                    raise self._bad(f"saved state of step {at} (it names a part of {aid!r} at step {s})")
                refs[aid] = (holder.branch, s)
            return at, world, refs
        refs = {}
        for seg in reversed(lineage):
            hi = min(seg.state_hi, at)
            if hi < seg.state_lo:
                continue
            for part, s in self.db.execute(
                    "SELECT part, MAX(step) FROM world_states WHERE branch=? AND part<>? AND part NOT LIKE 'kg:%' "
                    "AND step>=? AND step<=? GROUP BY part", (seg.branch, WORLD_PART, seg.state_lo, hi)).fetchall():
                if part not in refs:
                    refs[part] = (seg.branch, int(s))
        return at, world, refs

    def agent_part(self, branch: int, step: int, aid: str) -> dict[str, Any]:
        """Agent `aid`'s part saved at `step` of `branch`, with its whole graph (see state_refs)."""
        d = self._agent_state(branch, step, aid)
        last = d["agent"].get("last_record")
        if isinstance(last, dict) and "type" not in last and RECORD_AT in last:
            d["agent"]["last_record"] = self._last_record(branch, int(last[RECORD_AT]), aid, d["agent"]["cycle"])
        return d

    def _last_record(self, branch: int, step: int, aid: str, cycle: int) -> dict[str, Any]:
        """Agent `aid`'s cycle record `cycle` as its agent held it: the record in step `step`'s
        lines (on `branch`'s lineage) without what the world added to it."""
        row = next(self.steps(branch, step, step), None)
        line = None if row is None or row.agent != aid else next(
            (x for x in row.lines if x.startswith('{"type":"cycle"')), None)
        rec: dict[str, Any] | None = orjson.loads(line) if line is not None else None
        if rec is None or rec.get("cycle") != cycle or rec.get("agent") != aid:
            raise StoreDamaged(f"the session store's record of {aid!r}'s cycle {cycle} (step {step}) is missing; "
                               f"restore the store from a copy", file=self.store.where)
        return {k: v for k, v in rec.items() if k not in WORLD_KEYS}

    def _agent_state(self, branch: int, step: int, part: str) -> dict[str, Any]:
        """An agent's saved state with its whole graph, provenance and episodes: its `kg:` parts
        joined, newest first back to the one that holds all of them (worldrun.py saves them so;
        an agent part whose provenance is None has them there, one saved before in itself)."""
        d = self._state(branch, step, part)
        if "kg_additions" in d["agent"]:
            return d  # saved before the graph had parts of its own
        chain: list[dict[str, Any]] = []
        want: int | None = step
        # one query: the parts are read newest first only until the chain's first
        for s, text, crc in self.db.execute(
                "SELECT step, payload, crc FROM world_states WHERE branch=? AND part=? AND step<=? ORDER BY step DESC",
                (branch, GRAPH_PART + part, step)):
            if s != want:
                continue
            if crc is not None and row_crc(branch, s, GRAPH_PART + part, text) != crc:
                raise self._bad(f"saved graph of {part!r} at step {s}")
            g = orjson.loads(text)
            chain.append(g)
            want = g["prev"][0] if g["prev"] is not None else None
            if want is None:
                break
        if want is not None:
            raise StoreDamaged(f"the session store's saved graph of {part!r} at step {want} is missing "
                               f"(step {step}'s state builds on it); restore the store from a copy", file=self.store.where)
        whole = chain.pop()
        symbols: list[Any] = list(whole["symbols"])
        triples: list[Any] = list(whole["triples"])
        base_s = base_t = 0
        if chain:
            base_s, base_t = chain[-1]["prev"][1] - len(symbols), chain[-1]["prev"][2] - len(triples)  # the scenario's
        for g in reversed(chain):
            if g["prev"][1] - base_s != len(symbols) or g["prev"][2] - base_t != len(triples):
                raise self._bad(f"saved graph of {part!r} at step {g['prev'][0]}")
            symbols += g["symbols"]
            triples += g["triples"]
        agent = d["agent"]
        agent["kg_additions"] = {"symbols": symbols, "triples": triples}
        if agent.get("provenance", []) is None:  # the provenance and episodes are in the chain too
            if "provenance" not in whole or any("provenance" not in g for g in chain):
                raise self._bad(f"saved state of {part!r} at step {step} (its provenance and episodes are not saved)")
            # the agent keeps the newest PROVENANCE_KEEP entries and `capacity` episodes: the
            # restore drops the older ones as it did when they were added
            agent["provenance"] = [*whole["provenance"], *(r for g in reversed(chain) for r in g["provenance"])]
            episodes = [*whole["episodes"]["episodes"], *(e for g in reversed(chain) for e in g["episodes"])]
            if any(b["id"] != a["id"] + 1 for a, b in zip(episodes, episodes[1:])):
                raise self._bad(f"saved episodes of {part!r} (at step {step})")
            agent["episodes"] = {"capacity": whole["episodes"]["capacity"], "next_id": agent["episodes_next_id"],
                                 "episodes": episodes}
        if d.get("evidence", []) is None:  # the world's evidence of its goals is in the chain too
            if "evidence" not in whole or any("evidence" not in g for g in chain):
                raise self._bad(f"saved state of {part!r} at step {step} (its evidence is not saved)")
            evidence: dict[Any, list[Any]] = {}
            for g in [whole, *reversed(chain)]:
                for goal, triples in g["evidence"]:
                    evidence.setdefault(goal, []).extend(triples)  # (a goal's first part holds it first)
            d["evidence"] = [[goal, triples] for goal, triples in evidence.items()]
        return d

    def _state(self, branch: int, step: int, part: str) -> dict[str, Any]:
        row = self.db.execute("SELECT payload, crc FROM world_states WHERE branch=? AND step=? AND part=?",
                              (branch, step, part)).fetchone()
        if row is None:
            raise self._bad(f"saved state of step {step}")
        text, crc = row
        if crc is not None and row_crc(branch, step, part, text) != crc:
            raise self._bad(f"saved state {part!r} of step {step}")
        try:
            # orjson reads a saved state 2-3x quicker than json (it is most of a rewind's
            # reading); what it refuses (an integer beyond 64 bits) json reads as before
            out: dict[str, Any] = orjson.loads(text)
        except orjson.JSONDecodeError:
            out = json.loads(text)
        return out


def _step_whole(row: tuple[Any, ...]) -> bool:
    """Whether a step row as STEP_COLUMNS reads it matches its checksum."""
    b, step, rnd, agent, is_text, raw, crc = row
    if not is_text:
        return bool(step_crc(b, step, rnd, agent, raw) == crc)
    try:
        return bool(step_crc(b, step, rnd, agent, raw.decode("utf-8")) == crc)
    except UnicodeDecodeError:
        return False
