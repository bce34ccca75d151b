"""The persisted session: SQLite (WAL), one transaction per cycle.

A killed process loses at most the cycle in flight: each cycle's record, its events, the
graph additions, new episodes and the agent's mutable state are committed together. A store
that cannot be read is reported and left untouched, never replaced.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from .agent import Agent
from .errors import InputError
from .memory import Episode, EpisodicMemory
from .state import apply_kg_additions, core_state, restore, triple_row

SCHEMA_VERSION = "1"
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS symbols (id INTEGER PRIMARY KEY, label TEXT NOT NULL, kind TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS triples (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (id INTEGER PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cycles (cycle INTEGER PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, cycle INTEGER NOT NULL, event TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS state (id INTEGER PRIMARY KEY CHECK (id = 1), payload TEXT NOT NULL);
"""
TABLES = ("meta", "symbols", "triples", "episodes", "cycles", "events", "state")


def _dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


class SessionStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            if existed:
                self._check()
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            if not existed:
                self.db.executescript(SCHEMA)
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        except sqlite3.DatabaseError as exc:
            self._corrupt(str(exc))
        self._saved_symbols = 0
        self._saved_triples = 0

    def _corrupt(self, why: str):
        try:
            self.db.close()
        except Exception:
            pass
        raise InputError(
            f"the session store cannot be read ({why}); it was left untouched. "
            f"Move it aside, or use --data-dir for a new one.",
            file=str(self.path),
        )

    def _check(self) -> None:
        try:
            names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            missing = [t for t in TABLES if t not in names]
            if missing:
                self._corrupt(f"not an akh-tui session: missing tables {', '.join(missing)}")
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or row[0] != SCHEMA_VERSION:
                self._corrupt(f"unknown schema version {row[0] if row else None!r}")
            ok = self.db.execute("PRAGMA quick_check").fetchone()
            if ok is None or ok[0] != "ok":
                self._corrupt(f"integrity check failed: {ok[0] if ok else 'no answer'}")
        except sqlite3.DatabaseError as exc:
            self._corrupt(str(exc))

    def close(self) -> None:
        self.db.close()

    # ---- meta ------------------------------------------------------------------------------
    def meta(self) -> dict | None:
        row = self.db.execute("SELECT value FROM meta WHERE key='session'").fetchone()
        return json.loads(row[0]) if row else None

    def has_session(self) -> bool:
        return self.meta() is not None and self.db.execute("SELECT 1 FROM state").fetchone() is not None

    def start(self, agent: Agent, meta: dict) -> None:
        """A new session: clears the previous one and saves the agent's starting state."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for t in ("symbols", "triples", "episodes", "cycles", "events", "state"):
                db.execute(f"DELETE FROM {t}")
            db.execute("INSERT OR REPLACE INTO meta VALUES ('session', ?)", (_dump(meta),))
            self._saved_symbols = agent.base_symbols
            self._saved_triples = agent.base_triples
            self._write(agent, None, agent.drain_events())
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    # ---- per cycle -------------------------------------------------------------------------
    def save(self, agent: Agent, record: dict | None, events: list[dict]) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            self._write(agent, record, events)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _write(self, agent: Agent, record: dict | None, events: list[dict]) -> None:
        db, kg = self.db, agent.kg
        if len(kg.symbols) > self._saved_symbols:
            db.executemany(
                "INSERT OR REPLACE INTO symbols VALUES (?, ?, ?)",
                [(s.id, s.label, s.kind) for s in kg.symbols[self._saved_symbols:]],
            )
        if len(kg.log) > self._saved_triples:
            rows = [(i, _dump(triple_row(kg, t)))
                    for i, t in enumerate(kg.log[self._saved_triples:], start=self._saved_triples)]
            db.executemany("INSERT OR REPLACE INTO triples VALUES (?, ?)", rows)
        if agent.episodic.new:
            db.executemany("INSERT OR REPLACE INTO episodes VALUES (?, ?)", [(e.id, _dump(e.to_dict())) for e in agent.episodic.new])
            agent.episodic.new.clear()
        if record is not None:
            db.execute("INSERT OR REPLACE INTO cycles VALUES (?, ?)", (record["cycle"], _dump(record)))
        if events:
            db.executemany("INSERT INTO events (cycle, event) VALUES (?, ?)", [(e.get("cycle", agent.cycle), _dump(e)) for e in events])
        db.execute("INSERT OR REPLACE INTO state VALUES (1, ?)", (_dump(core_state(agent)),))
        self._saved_symbols = len(kg.symbols)
        self._saved_triples = len(kg.log)

    # ---- resume ----------------------------------------------------------------------------
    def load_into(self, agent: Agent) -> Agent:
        """Restore the persisted session into a fresh agent built from its scenario."""
        try:
            row = self.db.execute("SELECT payload FROM state WHERE id=1").fetchone()
            if row is None:
                raise InputError("no session to resume in this store", file=str(self.path))
            state = json.loads(row[0])
            n_sym, n_tri = state["kg_size"]
            symbols = [[r[0], r[1]] for r in self.db.execute(
                "SELECT label, kind FROM symbols WHERE id >= ? AND id < ? ORDER BY id", (agent.base_symbols, n_sym))]
            triples = [json.loads(r[0]) for r in self.db.execute(
                "SELECT payload FROM triples WHERE seq >= ? AND seq < ? ORDER BY seq", (agent.base_triples, n_tri))]
            em = EpisodicMemory(agent.config.episodic_capacity)
            rows = self.db.execute(
                "SELECT payload FROM episodes WHERE id < ? ORDER BY id DESC LIMIT ?",
                (state["episodes_next_id"], agent.config.episodic_capacity)).fetchall()
            for (payload,) in reversed(rows):
                em._insert(Episode.from_dict(json.loads(payload)))
        except sqlite3.DatabaseError as exc:
            self._corrupt(str(exc))
        except (KeyError, ValueError, TypeError) as exc:
            self._corrupt(f"state is malformed: {exc}")
        apply_kg_additions(agent, {"symbols": symbols, "triples": triples})
        state.pop("kg_additions", None)  # applied above from their tables
        restore(agent, state, episodes=em)
        self._saved_symbols = len(agent.kg.symbols)
        self._saved_triples = len(agent.kg.log)
        return agent
