"""The persisted sessions: runs, their branches, cycle records and state snapshots, in SQLite
(WAL), one transaction per cycle.

A run is one start of a scenario; each run has a `main` branch, and every fork adds a branch
that names its parent and the cycle it was forked at. A branch shares its parent's history up
to the fork point (structural sharing): its reads walk the lineage, so a fork copies nothing.
Each branch keeps
- its cycle records and events (what replay shows, what export writes),
- the graph additions and episodes (appended; a state names how many of them it has),
- the user inputs between cycles (goals added, psyche edits, fork edits: replayed on rewind),
- a snapshot of the core state every `every` cycles (what rewind starts from), and its head
  (the core state when the process last stopped cleanly, or forked).

Resuming loads the head when nothing was recorded after it, and otherwise rewinds to the last
recorded cycle (snapshot + replay) and applies the inputs that followed it: so a cycle writes
only its record, graph additions, episodes and events, and a killed process loses at most the
cycle in flight. A store that cannot be read is reported
and left untouched, never replaced.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, NoReturn

from .agent import Agent
from .errors import InputError
from .memory import Episode, EpisodicMemory
from .state import apply_kg_additions, core_state, restore, triple_row
from .trace import Trace

SCHEMA_VERSION = "2"
SNAPSHOT_EVERY = 25  # rewinding replays at most this many cycles minus one (plus a fork's lead-in)
SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, meta TEXT NOT NULL);
CREATE TABLE branches (id INTEGER PRIMARY KEY, run INTEGER NOT NULL, name TEXT NOT NULL, parent INTEGER,
    fork_cycle INTEGER, fork_sizes TEXT, edits TEXT NOT NULL DEFAULT '[]', UNIQUE (run, name));
CREATE TABLE symbols (branch INTEGER NOT NULL, id INTEGER NOT NULL, label TEXT NOT NULL, kind TEXT NOT NULL,
    PRIMARY KEY (branch, id));
CREATE TABLE triples (branch INTEGER NOT NULL, seq INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (branch, seq));
CREATE TABLE episodes (branch INTEGER NOT NULL, id INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (branch, id));
CREATE TABLE cycles (branch INTEGER NOT NULL, cycle INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY (branch, cycle));
CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, branch INTEGER NOT NULL, cycle INTEGER NOT NULL,
    input INTEGER NOT NULL, event TEXT NOT NULL);
CREATE INDEX events_by_branch ON events (branch, cycle);
CREATE TABLE inputs (seq INTEGER PRIMARY KEY AUTOINCREMENT, branch INTEGER NOT NULL, cycle INTEGER NOT NULL,
    kind TEXT NOT NULL, payload TEXT NOT NULL);
CREATE INDEX inputs_by_branch ON inputs (branch, cycle);
CREATE TABLE snapshots (branch INTEGER NOT NULL, cycle INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (branch, cycle));
CREATE TABLE heads (branch INTEGER PRIMARY KEY, cycle INTEGER NOT NULL, inputs_seq INTEGER NOT NULL, payload TEXT NOT NULL);
"""
TABLES = ("meta", "runs", "branches", "symbols", "triples", "episodes", "cycles", "events", "inputs", "snapshots", "heads")
BRANCH_TABLES = ("symbols", "triples", "episodes", "cycles", "events", "inputs", "snapshots", "heads")
INF = 1 << 62


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Segment:
    """The part of a lineage one branch contributes: keys in [lo, hi) of each dimension."""

    branch: int
    lo: dict[str, int]
    hi: dict[str, int]


def fork_bounds(cycle: int, sizes: list[int]) -> dict[str, int]:
    """What a branch forked after `cycle` takes from its parent (exclusive upper bounds): the
    records and snapshots up to that cycle, the user inputs before it (those after it were the
    parent's own), and the graph and episodes as they were then."""
    n_sym, n_tri, next_episode = sizes
    return {"cycles": cycle + 1, "snapshots": cycle + 1, "inputs": cycle, "symbols": n_sym,
            "triples": n_tri, "episodes": next_episode, "events": cycle}


DIMS = ("cycles", "snapshots", "inputs", "symbols", "triples", "episodes", "events")


class SessionStore:
    def __init__(self, path: Path | str, every: int = SNAPSHOT_EVERY) -> None:
        self.path = Path(path) if str(path) != ":memory:" else None
        self.every = every
        existed = False
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            # one connection, shared by the workbench's engine and UI threads under the
            # controller's lock
            self.db = sqlite3.connect(str(self.path or ":memory:"), isolation_level=None, check_same_thread=False)
            if existed:
                self._check()
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            if not existed:
                self.db.executescript(SCHEMA)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        except sqlite3.DatabaseError as exc:
            self._corrupt(str(exc))
        self.branch: int | None = self._current()
        self._saved_symbols = 0
        self._saved_triples = 0
        self._lineages: dict[int, list[Segment]] = {}

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else ":memory:"

    def _corrupt(self, why: str) -> NoReturn:
        try:
            self.db.close()
        except Exception:
            pass
        raise InputError(
            f"the session store cannot be read ({why}); it was left untouched. "
            f"Move it aside, or use --data-dir for a new one.",
            file=self.where,
        )

    def _check(self) -> None:
        try:
            names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() if "meta" in names else None
            if row is not None and row[0] != SCHEMA_VERSION:
                self._corrupt(f"it was written by another version of akh-tui (schema {row[0]}, this one reads {SCHEMA_VERSION})")
            missing = [t for t in TABLES if t not in names]
            if missing or row is None:
                self._corrupt(f"not an akh-tui session store: missing {', '.join(missing) or 'its schema version'}")
            ok = self.db.execute("PRAGMA quick_check").fetchone()
            if ok is None or ok[0] != "ok":
                self._corrupt(f"integrity check failed: {ok[0] if ok else 'no answer'}")
        except sqlite3.DatabaseError as exc:
            self._corrupt(str(exc))

    def close(self) -> None:
        self.db.close()

    def _tx(self):
        return _Transaction(self.db)

    def current(self) -> int:
        """The current branch (saves go there); an error when no run was started."""
        if self.branch is None:
            raise InputError("no session in this store (start one with `akh-tui agent run` or `akh-tui`)",
                             file=self.where)
        return self.branch

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            self._corrupt(str(exc))

    # ---- runs and branches -----------------------------------------------------------------
    def _current(self) -> int | None:
        row = self._query("SELECT value FROM meta WHERE key='current'")
        return int(row[0][0]) if row else None

    def _set_current(self, branch: int) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('current', ?)", (str(branch),))
        self.branch = branch

    def runs(self) -> list[dict]:
        out = []
        for rid, meta in self._query("SELECT id, meta FROM runs ORDER BY id"):
            out.append({"id": rid, **json.loads(meta), "branches": self.branches(rid)})
        return out

    def run_meta(self, run: int) -> dict:
        row = self._query("SELECT meta FROM runs WHERE id=?", (run,))
        if not row:
            raise InputError(f"no run {run} in this store (see `akh-tui sessions list`)", file=self.where, field="run")
        return {"id": run, **json.loads(row[0][0])}

    def branches(self, run: int) -> list[dict]:
        rows = self._query(
            "SELECT b.id, b.name, b.parent, b.fork_cycle, b.edits, p.name, h.cycle FROM branches b "
            "LEFT JOIN branches p ON p.id = b.parent LEFT JOIN heads h ON h.branch = b.id WHERE b.run=? ORDER BY b.id", (run,))
        out = []
        for bid, name, parent, fork_cycle, edits, pname, head in rows:
            last = self.last_cycle(bid)
            out.append({"id": bid, "run": run, "name": name, "parent": pname, "fork_cycle": fork_cycle,
                        "edits": json.loads(edits), "head_cycle": last, "last_cycle": last,
                        "replay_only": head is None, "current": bid == self.branch})
        return out

    def branch_info(self, branch: int) -> dict:
        row = self._query("SELECT run FROM branches WHERE id=?", (branch,))
        if not row:
            raise InputError(f"no branch {branch} in this store", file=self.where, field="branch")
        return next(b for b in self.branches(row[0][0]) if b["id"] == branch)

    def find_branch(self, run: int, name: str) -> int:
        row = self._query("SELECT id FROM branches WHERE run=? AND name=?", (run, name))
        if not row:
            names = ", ".join(b["name"] for b in self.branches(run))
            raise InputError(f"run {run} has no branch {name!r} (it has: {names})", file=self.where, field="--branch")
        return row[0][0]

    def current_run(self) -> int | None:
        if self.branch is None:
            return None
        row = self._query("SELECT run FROM branches WHERE id=?", (self.branch,))
        return row[0][0] if row else None

    def meta(self) -> dict | None:
        """The current run's meta (scenario, seed, goals, decider), or None."""
        run = self.current_run()
        return self.run_meta(run) if run is not None else None

    def has_session(self) -> bool:
        return self.branch is not None and bool(self._query("SELECT 1 FROM heads WHERE branch=?", (self.branch,)))

    def delete_run(self, run: int) -> dict:
        meta = self.run_meta(run)
        ids = [b for (b,) in self._query("SELECT id FROM branches WHERE run=?", (run,))]
        with self._tx():
            for t in BRANCH_TABLES:
                self.db.executemany(f"DELETE FROM {t} WHERE branch=?", [(b,) for b in ids])
            self.db.execute("DELETE FROM branches WHERE run=?", (run,))
            self.db.execute("DELETE FROM runs WHERE id=?", (run,))
            if self.branch in ids:
                self.db.execute("DELETE FROM meta WHERE key='current'")
                self.branch = None
        self._lineages.clear()
        return meta | {"branches": len(ids)}

    def use(self, branch: int) -> None:
        """Make `branch` the one resume continues and saves go to."""
        self.branch_info(branch)
        with self._tx():
            self._set_current(branch)

    # ---- lineage ---------------------------------------------------------------------------
    def lineage(self, branch: int) -> list[Segment]:
        """Root first: which branch holds which keys of `branch`'s history."""
        if branch in self._lineages:
            return self._lineages[branch]
        chain = []  # (branch id, bounds its parent contributes) from `branch` upward
        b = branch
        while b is not None:
            row = self._query("SELECT parent, fork_cycle, fork_sizes FROM branches WHERE id=?", (b,))
            if not row:
                raise InputError(f"no branch {b} in this store", file=self.where, field="branch")
            parent, fork_cycle, sizes = row[0]
            chain.append((b, parent, fork_bounds(fork_cycle, json.loads(sizes)) if parent is not None else None))
            b = parent
        segments: list[Segment] = []
        hi = {d: INF for d in DIMS}
        for bid, _parent, bounds in chain:  # child first; an ancestor gives at most what its child took
            segments.append(Segment(bid, {}, dict(hi)))
            if bounds is not None:
                hi = {d: min(hi[d], bounds[d]) for d in DIMS}
        segments.reverse()
        lo = {d: 0 for d in DIMS}
        out = []
        for seg in segments:
            out.append(Segment(seg.branch, dict(lo), seg.hi))
            lo = dict(seg.hi)
        self._lineages[branch] = out
        return out

    def _ranged(self, branch: int, dim: str, sql: str, lo: int, hi: int) -> Iterator[tuple]:
        """Rows of `sql` (with `branch`, lower and upper key placeholders) over the lineage."""
        for seg in self.lineage(branch):
            a, b = max(lo, seg.lo[dim]), min(hi, seg.hi[dim])
            if a < b:
                yield from self._query(sql, (seg.branch, a, b))

    # ---- replay ----------------------------------------------------------------------------
    def record(self, branch: int, cycle: int) -> dict | None:
        for row in self._ranged(branch, "cycles", "SELECT record FROM cycles WHERE branch=? AND cycle>=? AND cycle<?",
                                cycle, cycle + 1):
            return json.loads(row[0])
        return None

    def records(self, branch: int, start: int = 1, end: int = INF) -> Iterator[dict]:
        """The branch's cycle records in [start, end], oldest first."""
        sql = "SELECT record FROM cycles WHERE branch=? AND cycle>=? AND cycle<? ORDER BY cycle"
        for (rec,) in self._ranged(branch, "cycles", sql, start, min(end, INF - 1) + 1):
            yield json.loads(rec)

    def summaries(self, branch: int, start: int = 1, end: int = INF) -> Iterator[dict]:
        """The few figures of each cycle in [start, end] that the plots draw (oldest first): the
        tool chosen, the veto, each tool's score (None when not offered), the archetype weights,
        working-memory size and consolidations, each goal's coverage. SQLite's json_extract picks
        them out, so Python decodes about a third of each record (a 10,000-cycle branch is read
        in a second, not two)."""
        sql = ("SELECT cycle, json_extract(record, '$.decide.tool'), json_extract(record, '$.act.vetoed'), "
               "json_extract(record, '$.act.veto'), json_extract(record, '$.goal.id'), "
               "json_extract(record, '$.psyche.archetypes'), json_extract(record, '$.wm.size'), "
               "json_extract(record, '$.wm.capacity'), json_array_length(record, '$.wm.consolidated'), "
               "json_extract(record, '$.decide.candidates'), json_extract(record, '$.goals') "
               "FROM cycles WHERE branch=? AND cycle>=? AND cycle<? ORDER BY cycle")
        decode = json.JSONDecoder().decode
        for (cycle, tool, vetoed, veto, goal, arch, size, cap, cons, cands,
             goals) in self._ranged(branch, "cycles", sql, start, min(end, INF - 1) + 1):
            yield {"cycle": cycle, "tool": tool, "vetoed": bool(vetoed), "veto": veto, "goal": goal,
                   "archetypes": decode(arch), "wm_size": size, "wm_capacity": cap, "consolidated": cons or 0,
                   "scores": {c["tool"]: (c["score"] if c["offered"] else None) for c in decode(cands)},
                   "coverage": {g["id"]: g["coverage"] for g in decode(goals)}}

    def shared_cycles(self, a: int, b: int) -> int:
        """The first cycle whose record two branches may not share: below it both read the very
        same rows (their common ancestry), so a comparison can start there."""
        shared = 1
        for sa, sb in zip(self.lineage(a), self.lineage(b)):
            if sa.branch != sb.branch:
                break
            shared = min(sa.hi["cycles"], sb.hi["cycles"])
            if sa.hi["cycles"] != sb.hi["cycles"]:
                break
        return max(1, min(shared, INF - 1))

    def last_cycle(self, branch: int) -> int:
        for seg in reversed(self.lineage(branch)):
            row = self._query("SELECT MAX(cycle) FROM cycles WHERE branch=? AND cycle>=? AND cycle<?",
                              (seg.branch, seg.lo["cycles"], seg.hi["cycles"]))
            if row and row[0][0] is not None:
                return row[0][0]
        return 0

    def search(self, branch: int, tool: str | None = None, veto: str | bool | None = None, goal: int | None = None,
               progress: str | None = None, text: str | None = None) -> list[dict]:
        """history.search's filters, run inside SQLite (a 10,000-cycle branch in a fraction of a
        second): rows of cycle, tool, progress, vetoed, output. Text matches case-insensitively
        for ASCII letters (SQLite's LIKE)."""
        where: list[str] = []
        args: list[Any] = []
        if tool is not None:
            where.append("json_extract(record, '$.decide.tool') = ?")
            args.append(tool)
        if veto is not None:
            where.append("json_extract(record, '$.act.vetoed')")
            if veto is not True:
                where.append("json_extract(record, '$.act.veto') = ?")
                args.append(veto)
        if goal is not None:
            where.append("json_extract(record, '$.goal.id') = ?")
            args.append(goal)
        if progress is not None:
            where.append("json_extract(record, '$.act.progress') = ?")
            args.append(progress)
        if text:
            where.append("json_extract(record, '$.act.output') LIKE ? ESCAPE '\\'")
            args.append("%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        cond = "".join(f" AND {w}" for w in where)
        out: list[dict] = []
        for seg in self.lineage(branch):
            rows = self._query(
                "SELECT cycle, json_extract(record, '$.decide.tool'), json_extract(record, '$.act.progress'), "
                "json_extract(record, '$.act.vetoed'), json_extract(record, '$.act.output') FROM cycles "
                f"WHERE branch=? AND cycle>=? AND cycle<?{cond} ORDER BY cycle",
                (seg.branch, seg.lo["cycles"], seg.hi["cycles"], *args))
            out.extend({"cycle": c, "tool": t, "progress": p, "vetoed": bool(v), "output": o} for c, t, p, v, o in rows)
        return out

    def marks(self, branch: int, limit: int = 2000) -> dict[int, str]:
        """Cycles worth a mark on the timeline: the newest `limit` vetoes (!) and the lineage's
        fork points (◆)."""
        sql = ("SELECT cycle FROM cycles WHERE branch=? AND cycle>=? AND cycle<? "
               "AND json_extract(record, '$.act.vetoed')")
        vetoes = [c for (c,) in self._ranged(branch, "cycles", sql, 0, INF)]
        out = {c: "!" for c in vetoes[-limit:]}
        for seg in self.lineage(branch)[:-1]:
            out[seg.hi["snapshots"] - 1] = "◆"
        return out

    def count_vetoes(self, branch: int, upto: int) -> int:
        """Cycles of the branch up to `upto` whose action was vetoed."""
        sql = ("SELECT COUNT(*) FROM cycles WHERE branch=? AND cycle>=? AND cycle<? "
               "AND json_extract(record, '$.act.vetoed')")
        return sum(r[0] for r in self._ranged(branch, "cycles", sql, 0, upto + 1))

    def head_state(self, branch: int) -> dict | None:
        """The core state a branch's head holds (whatever was recorded after it), or None."""
        row = self._query("SELECT payload FROM heads WHERE branch=?", (branch,))
        return json.loads(row[0][0]) if row else None

    def events(self, branch: int) -> Iterator[tuple[int, dict]]:
        """(cycle, event) in the order they happened. A parent's events at the fork cycle are
        the branch's too, except those from user inputs after that cycle (the parent's own)."""
        segs = self.lineage(branch)
        for i, seg in enumerate(segs):
            lo, hi = seg.lo["events"], seg.hi["events"]
            at_fork = "OR (cycle=? AND input=0)" if i < len(segs) - 1 else ""
            args = (seg.branch, lo, hi) + ((hi,) if at_fork else ())
            sql = f"SELECT cycle, event FROM events WHERE branch=? AND ((cycle>=? AND cycle<?) {at_fork}) ORDER BY seq"
            for cyc, ev in self._query(sql, args):
                yield cyc, json.loads(ev)

    def inputs(self, branch: int, start: int, end: int) -> dict[int, list[tuple[str, Any]]]:
        """User inputs after each cycle in [start, end), as replayed on rewind."""
        out: dict[int, list[tuple[str, Any]]] = {}
        sql = "SELECT cycle, kind, payload FROM inputs WHERE branch=? AND cycle>=? AND cycle<? ORDER BY seq"
        for cyc, kind, payload in self._ranged(branch, "inputs", sql, start, end):
            out.setdefault(cyc, []).append((kind, json.loads(payload)))
        return out

    # ---- recording -------------------------------------------------------------------------
    def start(self, agent: Agent, meta: dict) -> int:
        """A new run with its `main` branch, made current; saves the agent's starting state.
        Earlier runs are kept (see `akh-tui sessions`)."""
        with self._tx():
            run = _rowid(self.db.execute("INSERT INTO runs (meta) VALUES (?)", (_dump(meta),)))
            branch = _rowid(self.db.execute("INSERT INTO branches (run, name) VALUES (?, 'main')", (run,)))
            self._set_current(branch)
            self._saved_symbols = agent.base_symbols
            self._saved_triples = agent.base_triples
            agent.episodic.new.clear()
            self._write(agent, None, agent.drain_events(), input_events=False)
            self._snapshot(agent)
            self._head(agent)
        return run

    def save(self, agent: Agent, record: dict | None, events: list[dict], inputs: "list[tuple[str, Any]] | tuple[()]" = (),
             input_events: bool = False) -> None:
        """One cycle (record) or one user action (inputs), with its events: one transaction."""
        with self._tx():
            self._write(agent, record, events, input_events)
            for kind, payload in inputs:
                self.db.execute("INSERT INTO inputs (branch, cycle, kind, payload) VALUES (?, ?, ?, ?)",
                                (self.branch, agent.cycle, kind, _dump(payload)))
            if record is not None and record["cycle"] % self.every == 0:
                self._snapshot(agent)

    def _snapshot(self, agent: Agent) -> None:
        self.db.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?, ?)", (self.branch, agent.cycle, _dump(core_state(agent))))

    def _write(self, agent: Agent, record: dict | None, events: list[dict], input_events: bool) -> None:
        if self.branch is None:
            raise RuntimeError("no current branch: start a run first")
        db, kg, b = self.db, agent.kg, self.branch
        if len(kg.symbols) > self._saved_symbols:
            db.executemany("INSERT OR REPLACE INTO symbols VALUES (?, ?, ?, ?)",
                           [(b, s.id, s.label, s.kind) for s in kg.symbols[self._saved_symbols:]])
        if len(kg.log) > self._saved_triples:
            rows = [(b, i, _dump(triple_row(kg, t)))
                    for i, t in enumerate(kg.log[self._saved_triples:], start=self._saved_triples)]
            db.executemany("INSERT OR REPLACE INTO triples VALUES (?, ?, ?)", rows)
        if agent.episodic.new:
            db.executemany("INSERT OR REPLACE INTO episodes VALUES (?, ?, ?)",
                           [(b, e.id, _dump(e.to_dict())) for e in agent.episodic.new])
            agent.episodic.new.clear()
        if record is not None:
            db.execute("INSERT OR REPLACE INTO cycles VALUES (?, ?, ?)", (b, record["cycle"], _dump(record)))
        if events:
            db.executemany("INSERT INTO events (branch, cycle, input, event) VALUES (?, ?, ?, ?)",
                           [(b, e.get("cycle", agent.cycle), int(input_events), _dump(e)) for e in events])
        self._saved_symbols = len(kg.symbols)
        self._saved_triples = len(kg.log)

    def checkpoint(self, agent: Agent) -> None:
        """Save the agent's state as its branch's head (on a clean stop): resume loads it
        instead of replaying from the last snapshot."""
        if self.branch is not None:
            with self._tx():
                self._head(agent)

    def _head(self, agent: Agent) -> None:
        self.db.execute("INSERT OR REPLACE INTO heads VALUES (?, ?, ?, ?)",
                        (self.branch, agent.cycle, self._inputs_seq(self.current()), _dump(core_state(agent))))

    def _inputs_seq(self, branch: int) -> int:
        return self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM inputs WHERE branch=?", (branch,)).fetchone()[0]

    def fork(self, parent: int, cycle: int, name: str, agent: Agent, sizes: list[int], edits: dict,
             applied: list[str], event: dict) -> int:
        """Branch `name` off `parent` after `cycle`; `agent` is the rewound agent with the edits
        applied, `sizes` its graph and episode counts before them. The new branch is current."""
        run = self._query("SELECT run FROM branches WHERE id=?", (parent,))[0][0]
        if self._query("SELECT 1 FROM branches WHERE run=? AND name=?", (run, name)):
            raise InputError(f"run {run} already has a branch {name!r}", file=self.where, field="name")
        with self._tx():
            branch = _rowid(self.db.execute(
                "INSERT INTO branches (run, name, parent, fork_cycle, fork_sizes, edits) VALUES (?, ?, ?, ?, ?, ?)",
                (run, name, parent, cycle, _dump(sizes), _dump(applied))))
            self._set_current(branch)
            self._saved_symbols, self._saved_triples = sizes[0], sizes[1]
            self._write(agent, None, [event], input_events=True)
            if edits:
                self.db.execute("INSERT INTO inputs (branch, cycle, kind, payload) VALUES (?, ?, 'edits', ?)",
                                (branch, cycle, _dump(edits)))
            self._head(agent)
        return branch

    # ---- restoring -------------------------------------------------------------------------
    def _restore(self, branch: int, state: dict, agent: Agent) -> Agent:
        """Load a core state of `branch` into a fresh agent of its scenario."""
        try:
            n_sym, n_tri = state["kg_size"]
            symbols = [[r[0], r[1]] for r in self._ranged(
                branch, "symbols", "SELECT label, kind FROM symbols WHERE branch=? AND id>=? AND id<? ORDER BY id",
                agent.base_symbols, n_sym)]
            triples = [json.loads(r[0]) for r in self._ranged(
                branch, "triples", "SELECT payload FROM triples WHERE branch=? AND seq>=? AND seq<? ORDER BY seq",
                agent.base_triples, n_tri)]
            cap = agent.config.episodic_capacity
            nxt = state["episodes_next_id"]
            em = EpisodicMemory(cap)
            rows = list(self._ranged(branch, "episodes", "SELECT payload FROM episodes WHERE branch=? AND id>=? AND id<? ORDER BY id",
                                     max(0, nxt - cap), nxt))
            for (payload,) in rows:
                em._insert(Episode.from_dict(json.loads(payload)))
            apply_kg_additions(agent, {"symbols": symbols, "triples": triples})
            state = dict(state)
            state.pop("kg_additions", None)  # applied above from their tables
            return restore(agent, state, episodes=em)
        except (KeyError, ValueError, TypeError) as exc:
            self._corrupt(f"a saved state is malformed: {exc}")

    def head(self, branch: int) -> tuple[int, dict] | None:
        """The branch's head (cycle, core state) when nothing was recorded after it, else None
        (the process stopped without a checkpoint: the caller rewinds to the last cycle)."""
        row = self._query("SELECT cycle, inputs_seq, payload FROM heads WHERE branch=?", (branch,))
        if not row:
            raise InputError("this branch was imported from a trace: it can be replayed, not resumed", file=self.where)
        head_cycle, head_seq, payload = row[0]
        if head_cycle == self.last_cycle(branch) and head_seq == self._inputs_seq(branch):
            return head_cycle, json.loads(payload)
        return None

    def snapshot_before(self, branch: int, cycle: int) -> tuple[int, dict]:
        """The newest snapshot of the branch's lineage at or before `cycle`: (its cycle, state)."""
        last = self.last_cycle(branch)
        if cycle < 0 or cycle > last:
            raise InputError(f"cycle {cycle} is outside the branch (0..{last})", field="cycle")
        sql = "SELECT cycle, payload FROM snapshots WHERE branch=? AND cycle>=? AND cycle<? ORDER BY cycle DESC LIMIT 1"
        for seg in reversed(self.lineage(branch)):
            lo, hi = seg.lo["snapshots"], min(seg.hi["snapshots"], cycle + 1)
            if lo < hi:
                row = self._query(sql, (seg.branch, lo, hi))
                if row:
                    return row[0][0], json.loads(row[0][1])
        raise InputError("this branch has no saved state (imported from a trace): it can be replayed, not rewound",
                         file=self.where)

    def restore(self, branch: int, state: dict, fresh: Agent) -> Agent:
        """A core state of `branch` loaded into `fresh`, an agent of its scenario with no goals."""
        return self._restore(branch, state, fresh)

    def adopt(self, branch: int, agent: Agent) -> None:
        """`agent` is now the branch's live state: saves go there from its current size on."""
        if branch != self.branch:
            self.use(branch)
        self._saved_symbols = len(agent.kg.symbols)
        self._saved_triples = len(agent.kg.log)
        agent.episodic.new.clear()

    def trace_items(self, branch: int) -> Iterator[dict]:
        """The branch's records and events in trace order (SPEC §11): each cycle's record,
        then the events that followed it."""
        by_cycle: dict[int, list[dict]] = {}
        for cyc, ev in self.events(branch):
            by_cycle.setdefault(cyc, []).append(ev)
        yield from by_cycle.pop(0, [])
        for rec in self.records(branch):
            yield rec
            yield from by_cycle.pop(rec["cycle"], [])
        for cyc in sorted(by_cycle):  # after the last record (e.g. a goal added at the end)
            yield from by_cycle[cyc]

    # ---- import ----------------------------------------------------------------------------
    def import_trace(self, trace: Trace, source: str) -> int:
        """A run holding a trace's records and events: replayed, never resumed (no state).
        Each cycle's events follow its record, as in the trace."""
        header = trace.header
        items = sorted(trace.cycles + trace.events, key=lambda it: (it.get("cycle", 0), it.get("type") != "cycle"))
        meta = {"scenario": header.get("scenario"), "name": header.get("scenario"), "seed": header.get("seed"),
                "goals": None, "decider": "imported", "imported_from": source,
                "config": header.get("config"), "psyche": header.get("psyche")}
        with self._tx():
            run = _rowid(self.db.execute("INSERT INTO runs (meta) VALUES (?)", (_dump(meta),)))
            b = _rowid(self.db.execute("INSERT INTO branches (run, name) VALUES (?, 'main')", (run,)))
            cycle = 0
            for it in items:
                if it.get("type") == "cycle":
                    cycle = it["cycle"]
                    self.db.execute("INSERT OR REPLACE INTO cycles VALUES (?, ?, ?)", (b, cycle, _dump(it)))
                elif it.get("type") != "run":
                    self.db.execute("INSERT INTO events (branch, cycle, input, event) VALUES (?, ?, 0, ?)",
                                    (b, it.get("cycle", cycle), _dump(it)))
        return run


def _rowid(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None  # an INSERT always sets it
    return cursor.lastrowid


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
        return False
