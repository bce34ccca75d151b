"""The persisted sessions: runs, their branches, cycle records and state snapshots, in SQLite
(WAL), one transaction per cycle.

A run is one start of a scenario; each run has a `main` branch, and every fork adds a branch
that names its parent and the cycle it was forked at. A branch shares its parent's history up
to the fork point (structural sharing): its reads walk the lineage, so a fork copies nothing.
Each branch keeps
- its cycle records and events (what replay shows, what export writes),
- the graph additions and episodes (appended; a state names how many of them it has),
- the user inputs between cycles (goals added, psyche edits, fork edits: replayed on rewind),
- a snapshot of the core state every `every` cycles and after a cycle that added
  SNAPSHOT_AFTER_TRIPLES triples or more (what rewind starts from), and its head
  (the core state when the process last stopped cleanly, or forked).

Resuming loads the head when nothing was recorded after it, and otherwise rewinds to the last
recorded cycle (snapshot + replay) and applies the inputs that followed it: so a cycle writes
only its record, graph additions, episodes and events, and a killed process loses at most the
cycle in flight. A store that cannot be read is reported
and left untouched, never replaced.

Schema 3 keeps every cycle record, snapshot and head as zlib-compressed JSON
with a CRC-32 of the stored bytes beside it, checked on every read: a flipped bit is reported
with its run, branch and cycle instead of being replayed. Schema 4 adds a CRC-32
to every other row a reader trusts (ROW_COLUMNS: the runs' metadata, branches, meta with its
dictionaries, the graph additions, episodes, user inputs), over its key and its values. A
writer about to continue a branch checks the snapshot it would restore from and the records
after it (`verify_tail`) and refuses a branch damaged there or marked by `sessions check`
(`refuse_marked`: the mark is a file beside the store, which is never written while damaged).
Schema 5 (this version) deflates cycle records against a steady-state record once a run is
well in (codec.py); schema.py keeps the tables and each number's migration. The fields
`sessions search` and the timeline filter on have columns of their own (schema.py,
SEARCH_COLUMNS). A snapshot leaves
out what those rows hold (the provenance of recent cycles, the last record: read back on a
restore) and packs each goal's seen symbol ids (base64 gaps); older snapshots, which hold
them in full, read as before. A store of an older schema
is migrated in place when it is opened for writing (a schema-2 store's old records keep no
checksum; schema-3 rows get theirs from what they hold then); read-only
commands read it as it is. Opening checks only the header and the file's length (a whole
number of pages): `check()` is the full integrity scan, for an explicit command.

Failed writes (disk full, the write-ahead log deleted under us) raise StoreWriteError after
the transaction was rolled back, so the store holds exactly the cycles it reported.
"""

from __future__ import annotations

import json
import os
import sqlite3
from operator import attrgetter
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, NoReturn

from ..cycle.agent import Agent
from ..config import served_process
from ..errors import BranchDamaged, InputError, StoreDamaged, StoreLost, StoreWriteError
from ..knowledge.memory import Episode, EpisodicMemory
from ..cycle.state import apply_kg_additions, core_state, restore, triple_row
from ..redaction import redact, registered_in
from .codec import STEADY_CYCLE, TAG_KIND, WINDOW, SeenPacker, loads_rows, pack, store_json, unpack, unpack_ids
from . import marks
from .lineage import INF, Segment, fork_bounds, segments
from .schema import (BRANCH_TABLES, READABLE_SCHEMAS, ROW_COLUMNS, ROW_CRC_FUNCTION, SCHEMA, SCHEMA_VERSION,
                     SEARCH_LIST, SEARCH_NAMES, SEARCH_PATHS, TABLES, migration_steps, row_crc, search_columns)
from .trace import Trace, redact_line

SNAPSHOT_EVERY = 25  # rewinding replays at most this many cycles minus one (plus a fork's lead-in)
# A cycle that added this many triples (an infer_rules run deriving thousands) gets a snapshot
# of its own, so that no rewind replays it: replaying it, and undoing it for the next rewind
# (basegraph.py), cost a rewind to a cycle before the next regular snapshot 40-90 ms on a
# 100,000-triple scenario. Such cycles are rare (rules reach their fixpoint), so the store
# grows by a snapshot now and then; the other rewinds are unchanged.
SNAPSHOT_AFTER_TRIPLES = 1000
DERIVED_PROVENANCE = ("AgentDecision", "ShadowVeto")  # provenance kinds a cycle row holds
_KIND = attrgetter("kind")


class SessionStore:
    def __init__(self, path: Path | str, every: int = SNAPSHOT_EVERY, readonly: bool = False) -> None:
        """`readonly` opens an existing store without writing a byte (not even a schema
        migration or the WAL switch): what `sessions list/show/export` use."""
        self.path = Path(path) if str(path) != ":memory:" else None
        self.every = every
        self.readonly = readonly
        self.schema = SCHEMA_VERSION
        self.broken: str | None = None  # why writes are refused from now on (the WAL was lost)
        self._wal_ino: int | None = None
        self._wal_path: str | None = None
        self._seen = SeenPacker()  # snapshots' goal ids, packed incrementally
        self._zdicts: dict[str, bytes | None] = {}  # per kind, from meta (None: none yet)
        self._saved_symbols = 0
        self._saved_triples = 0
        self._lineages: dict[int, list[Segment]] = {}
        existed = False
        if self.path is not None:
            if readonly:
                self._check_file()
                existed = True
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                existed = self.path.exists()
                if existed:  # a 0-byte file is reported, never re-initialised: it was a store
                    self._check_file()
        self.db: sqlite3.Connection = None  # type: ignore[assignment]  # set below; _corrupt may run first
        try:
            # one connection, shared by the workbench's engine and UI threads under the
            # controller's lock
            if readonly:
                self.db = self._connect_readonly()
            else:
                self.db = sqlite3.connect(str(self.path or ":memory:"), isolation_level=None, check_same_thread=False)
                self.db.create_function(ROW_CRC_FUNCTION, -1, row_crc, deterministic=True)  # for migration 4
            if existed:
                self._check()
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                if not existed:
                    self.db.executescript(SCHEMA)
                    self._set_meta("schema", SCHEMA_VERSION)
                elif self.schema != SCHEMA_VERSION:
                    self._migrate()
            self.branch: int | None = self._current()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a flipped byte in a text can fail to decode
            self._corrupt(str(exc))

    def _connect_readonly(self) -> sqlite3.Connection:
        """mode=ro sees a live writer's WAL; on a read-only file system (no -shm can be made)
        the file is opened immutable: nobody can be writing it there."""
        uri = Path(self.path).resolve().as_uri()  # type: ignore[arg-type]
        if not self.path.with_name(self.path.name + "-wal").exists():  # type: ignore[union-attr]
            # no log: nobody has it open for writing, so read the file as it is, creating
            # nothing (mode=ro would leave a -wal and a -shm behind)
            return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)
        try:
            db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)

    def _check_file(self) -> None:
        """What can be told without reading the database: empty, not SQLite, or cut short (a
        WAL database file is always a whole number of pages)."""
        assert self.path is not None
        try:
            size = self.path.stat().st_size
            with open(self.path, "rb") as fh:
                header = fh.read(100)
        except FileNotFoundError:
            raise InputError("no session store here", file=str(self.path)) from None
        except OSError as exc:
            raise InputError(f"the session store cannot be read: {exc.strerror or exc}", file=str(self.path)) from None
        if size == 0:
            raise StoreDamaged("the session store cannot be read: it is empty (0 bytes); it was left untouched. "
                               "Move it aside, or use --data-dir for a new one.", file=str(self.path))
        if not header.startswith(b"SQLite format 3\0") or len(header) < 100:
            raise StoreDamaged("the session store cannot be read: not an SQLite file; it was left untouched. "
                               "Move it aside, or use --data-dir for a new one.",
                               file=str(self.path))
        page = int.from_bytes(header[16:18], "big")
        page = 65536 if page == 1 else page
        if page and size % page:
            raise StoreDamaged(f"the session store cannot be read: it is cut short: {size:,} bytes is not a whole number of "
                               f"{page}-byte pages (the end of the file is missing); it was left untouched. "
                               f"Restore it from a copy, or use --data-dir for a new one.", file=str(self.path))

    def _migrate(self) -> None:
        """Schema 2 -> 3 -> 4 in place, in one transaction (a failure leaves it as it was)."""
        old = self.schema
        try:
            self.db.execute("BEGIN IMMEDIATE")
            for stmt in migration_steps(old):
                self.db.execute(stmt)
            self._set_meta("schema", SCHEMA_VERSION)
            self.db.execute("COMMIT")
            self.schema = SCHEMA_VERSION
        except sqlite3.Error as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise StoreWriteError(f"the schema-{old} store could not be brought to schema {SCHEMA_VERSION} ({exc}); "
                                  f"it was left as it was", file=self.where) from None

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value, crc) VALUES (?, ?, ?)", (key, value, row_crc(key, value)))

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else ":memory:"

    def _corrupt(self, why: str) -> NoReturn:
        why = why.split(" with text '")[0][:200]  # SQLite quotes the undecodable text itself: not for a terminal
        try:
            if self.db is not None:
                self.db.close()
        except Exception:
            pass
        raise StoreDamaged(
            f"the session store cannot be read ({why}); it was left untouched. "
            f"Move it aside, or use --data-dir for a new one.",
            file=self.where,
        )

    def _check(self) -> None:
        try:
            names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            row = None
            if "meta" in names:
                checked = "crc" in {r[1] for r in self.db.execute("PRAGMA table_info(meta)")}
                row = self.db.execute(f"SELECT value, {'crc' if checked else 'NULL'} FROM meta WHERE key='schema'").fetchone()
                if row is not None:
                    self._verify_row(row[1], ("schema", row[0]), "the store's schema version")
            if row is not None and row[0] not in READABLE_SCHEMAS:
                self._corrupt(f"it was written by another version of akh-tui (schema {row[0]}, this one reads "
                              f"{', '.join(READABLE_SCHEMAS)})")
            missing = [t for t in TABLES if t not in names]
            if missing or row is None:
                self._corrupt(f"not an akh-tui session store: missing {', '.join(missing) or 'its schema version'}")
            self.schema = row[0]
            # no PRAGMA quick_check here: it reads the whole file (minutes on a million cycles);
            # records carry checksums, and check() is the full scan for an explicit command
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a flipped byte in a text can fail to decode
            self._corrupt(str(exc))

    def close(self) -> None:
        self.db.close()

    def _tx(self, single: bool = False) -> "_Transaction":
        """A write transaction; `single`: the caller writes one statement, its own transaction."""
        return _Transaction(self, single)

    def _check_wal(self) -> None:
        """After a commit: the write-ahead log we wrote into must still be the one at its path.
        If it was deleted (or replaced), what we committed lives only in our open handle:
        copy it into the database file now, check it is there, and refuse further writes."""
        if self.path is None:
            return
        if self._wal_path is None:  # the path is fixed: built once, a stat per commit after that
            self._wal_path = str(self.path.with_name(self.path.name + "-wal"))
        try:
            ino = os.stat(self._wal_path).st_ino
        except FileNotFoundError:
            ino = None
        if self._wal_ino is None and ino is not None:
            self._wal_ino = ino
            return
        if ino == self._wal_ino:
            return
        wal = Path(self._wal_path)
        self.broken = f"its write-ahead log {wal.name} was deleted or replaced while this process wrote to it"
        try:
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # our handle still reads the deleted log
            self.db.execute("PRAGMA journal_mode=DELETE")  # nothing more goes into an unlinked file
        except sqlite3.Error:
            pass
        durable = self.durable_cycle()
        raise StoreLost(f"{self.broken}. The committed cycles were copied into {self.path.name}: it holds this "
                        f"branch up to cycle {durable} (checked from a new connection). Writing stopped here: "
                        f"resume the run to continue.", file=self.where)

    def durable_cycle(self) -> int | None:
        """The current branch's last cycle as a fresh connection sees the file: what would
        survive this process."""
        if self.path is None or self.branch is None:
            return None
        try:
            fresh = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            try:
                row = fresh.execute("SELECT MAX(cycle) FROM cycles WHERE branch=?", (self.branch,)).fetchone()
                return int(row[0] or 0)
            finally:
                fresh.close()
        except sqlite3.Error:
            return None

    def current(self) -> int:
        """The current branch (saves go there); an error when no run was started."""
        if self.branch is None:
            raise InputError("no session in this store (start one with `akh-tui agent run` or `akh-tui`)",
                             file=self.where)
        return self.branch

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.db.execute(sql, args).fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a flipped byte in a text can fail to decode
            self._corrupt(str(exc))

    # ---- checked rows (schema 4) -----------------------------------------------------------
    def _row_crc_col(self) -> str:
        """The row checksum column of ROW_COLUMNS's tables, or NULL before schema 4."""
        return "crc" if self.schema not in ("2", "3") else "NULL"

    def _verify_row(self, crc: Any, values: tuple, what: str, run: int | None = None, branch: str | None = None,
                    cycle: int | None = None) -> None:
        """A row as read against its checksum (None: written before schema 4, taken as it is)."""
        if crc is not None and row_crc(*values) != crc:
            self._bad_row(what, run, branch, cycle)

    def _bad_row(self, what: str, run: int | None = None, branch: str | None = None, cycle: int | None = None,
                 why: str = "checksum mismatch") -> NoReturn:
        raise StoreDamaged(f"damaged {what}: {why}. Nothing was changed; `akh-tui sessions check` lists every "
                           f"damaged record.", file=self.where, run=run, branch=branch, cycle=cycle)

    def _meta_value(self, key: str) -> str | None:
        """A checked value of the meta table (the current branch, a dictionary)."""
        row = self._query(f"SELECT value, {self._row_crc_col()} FROM meta WHERE key=?", (key,))
        if not row:
            return None
        value, crc = row[0]
        self._verify_row(crc, (key, value), f"store metadata {key!r}")
        if not isinstance(value, str):
            self._bad_row(f"store metadata {key!r}", why=f"a {type(value).__name__} where text belongs")
        return value

    def _run_row(self, run: int, meta: Any, crc: Any) -> dict:
        self._verify_row(crc, (run, meta), f"metadata of run {run}", run=run)
        try:
            out = json.loads(meta) if isinstance(meta, str) else None
        except ValueError:
            out = None
        if not isinstance(out, dict):
            self._bad_row(f"metadata of run {run}", run=run, why="not a JSON object")
        return out

    _BRANCH_SQL = "SELECT id, run, name, parent, fork_cycle, fork_sizes, edits, {crc} FROM branches"

    def _branch_rows(self, where: str, args: tuple) -> list[tuple]:
        """Rows (id, run, name, parent, fork_cycle, fork_sizes, edits) of branches, checked."""
        out = []
        for row in self._query(self._BRANCH_SQL.format(crc=self._row_crc_col()) + " WHERE " + where + " ORDER BY id", args):
            bid, run, name = row[0], row[1], row[2]
            label = f"branch row {bid} (read as run {run}, branch {name!r})"
            self._verify_row(row[7], row[:7], label, run=run if isinstance(run, int) else None,
                             branch=name if isinstance(name, str) else None)
            if not (isinstance(run, int) and isinstance(name, str) and isinstance(row[6], str)):
                self._bad_row(label, why="a value of the wrong type")
            out.append(row[:7])
        return out

    # ---- runs and branches -----------------------------------------------------------------
    def _current(self) -> int | None:
        value = self._meta_value("current")
        if value is None:
            return None
        if not value.isdigit():
            self._bad_row("store metadata 'current'", why=f"not a branch id ({value[:20]!r})")
        return int(value)

    def _set_current(self, branch: int) -> None:
        # A served tab's run (`akh-tui serve`) is current for its own process only: the pointer
        # that `agent resume` and `akh-tui --resume` follow stays where the owner left it.
        if not served_process():
            self._set_meta("current", str(branch))
        self.branch = branch

    def runs(self) -> list[dict]:
        out = []
        for rid, meta, crc in self._query(f"SELECT id, meta, {self._row_crc_col()} FROM runs ORDER BY id"):
            out.append({"id": rid, **self._run_row(rid, meta, crc), "branches": self.branches(rid)})
        return out

    def run_meta(self, run: int) -> dict:
        row = self._query(f"SELECT meta, {self._row_crc_col()} FROM runs WHERE id=?", (run,))
        if not row:
            raise InputError(f"no run {run} in this store (see `akh-tui sessions list`)", file=self.where, field="run")
        return {"id": run, **self._run_row(run, row[0][0], row[0][1])}

    def branches(self, run: int) -> list[dict]:
        rows = self._branch_rows("run=?", (run,))
        names = {r[0]: r[2] for r in rows}
        heads = {b for (b,) in self._query("SELECT h.branch FROM heads h JOIN branches b ON b.id = h.branch WHERE b.run=?",
                                           (run,))}
        out = []
        for bid, _run, name, parent, fork_cycle, _sizes, edits in rows:
            last = self.last_cycle(bid)
            try:
                applied = json.loads(edits)
            except ValueError:
                self._bad_row(f"edits of run {run}, branch {name!r}", run=run, branch=name, why="not JSON")
            out.append({"id": bid, "run": run, "name": name, "parent": names.get(parent), "fork_cycle": fork_cycle,
                        "edits": applied, "head_cycle": last, "last_cycle": last,
                        "replay_only": bid not in heads, "current": bid == self.branch})
        return out

    def branch_info(self, branch: int) -> dict:
        row = self._branch_rows("id=?", (branch,))
        if not row:
            raise InputError(f"no branch {branch} in this store", file=self.where, field="branch")
        return next(b for b in self.branches(row[0][1]) if b["id"] == branch)

    def find_branch(self, run: int, name: str) -> int:
        # all the run's rows, checked: a damaged name is reported as damage, not as "no such branch"
        rows = self._branch_rows("run=?", (run,))
        for row in rows:
            if row[2] == name:
                return row[0]
        names = ", ".join(r[2] for r in rows)
        raise InputError(f"run {run} has no branch {name!r} (it has: {names})", file=self.where, field="--branch")

    def current_run(self) -> int | None:
        if self.branch is None:
            return None
        row = self._branch_rows("id=?", (self.branch,))
        return row[0][1] if row else None

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
            if meta.get("architecture") == "soar":  # its decisions' table (soarstore.py)
                self.db.executemany("DELETE FROM soar_decisions WHERE branch=?", [(b,) for b in ids])
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
        chain: list[tuple[int, dict[str, int] | None]] = []  # (branch, the bounds its parent gives it), upward
        b = branch
        seen: set[int] = set()
        while b is not None:
            seen.add(b)
            row = self._branch_rows("id=?", (b,))
            if not row:
                raise InputError(f"no branch {b} in this store", file=self.where, field="branch")
            _id, run, name, parent, fork_cycle, sizes, _edits = row[0]
            bounds = None
            if parent is not None:
                try:
                    bounds = fork_bounds(int(fork_cycle), [int(x) for x in json.loads(sizes)])
                except (TypeError, ValueError):
                    self._bad_row(f"fork point of run {run}, branch {name!r}", run=run, branch=name, why="malformed")
                if parent in seen:  # a flipped parent id must not loop forever
                    self._bad_row(f"parent of run {run}, branch {name!r}", run=run, branch=name, why="a loop")
            chain.append((b, bounds))
            b = parent
        out = segments(chain)
        self._lineages[branch] = out
        return out

    def _ranged(self, branch: int, dim: str, sql: str, lo: int, hi: int) -> Iterator[tuple]:
        """Rows of `sql` (with `branch`, lower and upper key placeholders) over the lineage."""
        for seg in self.lineage(branch):
            a, b = max(lo, seg.lo[dim]), min(hi, seg.hi[dim])
            if a < b:
                yield from self._query(sql, (seg.branch, a, b))

    # ---- replay ----------------------------------------------------------------------------
    def _crc_col(self) -> str:
        return "crc" if self.schema != "2" else "NULL"

    def _v(self, col: str) -> str:
        """A stored value's column as its bytes: a value whose type byte was flipped to text
        would fail to decode as UTF-8 inside the fetch, before its row could be named; as
        bytes it reaches its checksum (schema 2 stored text, read as it is)."""
        return f"CAST({col} AS BLOB)" if self.schema != "2" else col

    def _decode(self, seg_branch: int, what: str, key: int, stored, crc) -> Any:
        """A stored JSON value, its checksum verified: damage names run, branch and cycle."""
        try:
            return json.loads(unpack(stored, crc, self._dicts(stored)))
        except ValueError as exc:
            self._damaged(seg_branch, what, key, exc)

    def _text(self, seg_branch: int, what: str, key: int, stored, crc) -> str:
        """A stored value's JSON text (what the trace line is), its checksum verified."""
        try:
            return unpack(stored, crc, self._dicts(stored))
        except ValueError as exc:
            self._damaged(seg_branch, what, key, exc)

    def _damaged(self, seg_branch: int, what: str, key: int, exc: Exception) -> NoReturn:
        run, name = self._branch_where(seg_branch)
        raise StoreDamaged(f"damaged {what} at cycle {key} of {self._branch_label(seg_branch)}: {exc}. "
                           f"Nothing was changed; `akh-tui sessions check` lists every damaged record.",
                           file=self.where, run=run, branch=name, cycle=key) from None

    def _dicts(self, stored) -> dict[str, bytes | None]:
        """The store's dictionaries, read from meta when a value needs one."""
        if isinstance(stored, bytes) and stored and stored[0] in TAG_KIND:
            kind = TAG_KIND[stored[0]]
            if kind in self._zdicts and self._zdicts[kind] is None:
                del self._zdicts[kind]  # a value packed against it: another process set it since we looked
            self._zdict(kind)
        return self._zdicts

    def _zdict(self, kind: str) -> bytes | None:
        """A dictionary, read once (a writer finding none sets it through _set_zdict, which
        reads again: the per-cycle path asks here and must not query meta every cycle)."""
        if kind not in self._zdicts:
            value = self._meta_value(f"zdict.{kind}")
            self._zdicts[kind] = value.encode("utf-8")[-WINDOW:] if value is not None else None
        return self._zdicts[kind]

    def _set_zdict(self, kind: str, text: str) -> bytes:
        """Make `text` the store's dictionary for `kind` unless another writer (a process
        recording another run in this store) set one first: a dictionary is set once, never
        replaced, or the values packed against the first would no longer read. Returns the
        dictionary in force."""
        key = f"zdict.{kind}"
        self.db.execute("INSERT OR IGNORE INTO meta (key, value, crc) VALUES (?, ?, ?)", (key, text, row_crc(key, text)))
        self._zdicts.pop(kind, None)
        got = self._zdict(kind)
        assert got is not None  # just written, or another's
        return got

    def _pack_cycle(self, text: str, cycle: int) -> tuple[bytes, int]:
        """Pack a cycle record: against the steady-state dictionary once the store has one,
        which the first record of STEADY_CYCLE or later becomes (schema 5); before that,
        against the first record's, as schema 4 did."""
        if self.schema != SCHEMA_VERSION:  # a read-only store never packs; a writer was migrated
            return self._pack(text, "cycle")
        text = redact_line(text)
        steady = self._zdict("cycle.steady")
        if steady is None and cycle >= self.STEADY_CYCLE:
            steady = self._set_zdict("cycle.steady", text)
        if steady is not None:
            return pack(text, steady, "cycle.steady")
        return self._pack(text, "cycle")

    def _pack(self, text: str, kind: str) -> tuple[bytes, int]:
        """Pack for writing (inside a transaction): the first value of a kind becomes the
        store's dictionary for it. A registered secret (the API key) is masked first, in
        whatever the text holds: a record, an event, the agent's state."""
        text = redact_line(text)
        zdict = self._zdict(kind)
        if zdict is None:
            zdict = self._set_zdict(kind, text)
        return pack(text, zdict, kind)

    def _branch_label(self, branch: int) -> str:
        run, name = self._branch_where(branch)
        return f"run {run}, branch {name!r}" if run is not None else f"branch id {branch}"

    def _branch_where(self, branch: int) -> tuple[int | None, str | None]:
        """(run, name) of a branch for a damage report: read as it is (never raising: the
        report is being made), None when the row is missing or damaged."""
        try:
            row = self.db.execute(f"SELECT run, name, parent, fork_cycle, fork_sizes, edits, {self._row_crc_col()} "
                                  f"FROM branches WHERE id=?", (branch,)).fetchone()
        except sqlite3.Error:
            return None, None
        if row is None or (row[6] is not None and row_crc(branch, *row[:6]) != row[6]):
            return None, None
        return row[0], row[1]

    def record(self, branch: int, cycle: int) -> dict | None:
        sql = f"SELECT branch, cycle, {self._v('record')}, {self._crc_col()} FROM cycles WHERE branch=? AND cycle>=? AND cycle<?"
        for b, c, rec, crc in self._ranged(branch, "cycles", sql, cycle, cycle + 1):
            return self._decode(b, "cycle record", c, rec, crc)
        return None

    STEADY_CYCLE = STEADY_CYCLE  # the first record this far in becomes the steady-state dictionary
    PAGE = 500  # records read per query: export and compare stream in constant memory

    def records(self, branch: int, start: int = 1, end: int = INF) -> Iterator[dict]:
        """The branch's cycle records in [start, end], oldest first, read a page at a time."""
        for _cycle, text in self.record_texts(branch, start, end):
            yield json.loads(text)

    def record_texts(self, branch: int, start: int = 1, end: int = INF) -> Iterator[tuple[int, str]]:
        """(cycle, the record's JSON text as the trace writes it), oldest first."""
        sql = (f"SELECT branch, cycle, {self._v('record')}, {self._crc_col()} FROM cycles WHERE branch=? AND cycle>=? AND cycle<? "
               f"ORDER BY cycle LIMIT {self.PAGE}")
        stop = min(end, INF - 1) + 1
        for seg in self.lineage(branch):
            a, b = max(start, seg.lo["cycles"]), min(stop, seg.hi["cycles"])
            while a < b:
                rows = self._query(sql, (seg.branch, a, b))
                if not rows:
                    break
                for sb, c, rec, crc in rows:
                    # (the key, outside the checksum, is compared with the record's own cycle by
                    # check() and by a writer's verify_tail, not here: export writes the text)
                    yield c, self._text(sb, "cycle record", c, rec, crc)
                a = rows[-1][1] + 1

    def summaries(self, branch: int, start: int = 1, end: int = INF) -> Iterator[dict]:
        """The few figures of each cycle in [start, end] that the plots draw (oldest first): the
        tool chosen, the veto, each tool's score (None when not offered), the archetype weights,
        working-memory size and consolidations, each goal's coverage. Records are stored
        compressed and checksummed, so each is read through `records` (checked) and picked here."""
        for rec in self.records(branch, start, end):
            act, decide, wm = rec["act"], rec["decide"], rec["wm"]
            yield {"cycle": rec["cycle"], "tool": decide["tool"], "vetoed": bool(act["vetoed"]), "veto": act.get("veto"),
                   "goal": rec["goal"]["id"], "archetypes": rec["psyche"]["archetypes"], "wm_size": wm["size"],
                   "wm_capacity": wm["capacity"], "consolidated": len(wm.get("consolidated") or []),
                   "scores": {c["tool"]: (c["score"] if c["offered"] else None) for c in decide["candidates"]},
                   "coverage": {g["id"]: g["coverage"] for g in rec["goals"]}}

    def goal_records(self, branch: int, goals: "list[int]") -> Iterator[dict]:
        """The branch's records of the cycles that worked on these goals, oldest first: picked
        by the goal column, so a long branch's other cycles are neither read nor decoded."""
        if not goals:
            return
        sql = (f"SELECT cycle, {self._v('record')}, {self._crc_col()} FROM cycles WHERE branch=? AND cycle>=? AND cycle<? "
               f"AND {self._col('goal')} IN ({', '.join('?' * len(goals))}) ORDER BY cycle LIMIT {self.PAGE}")
        for seg in self.lineage(branch):
            a, b = seg.lo["cycles"], seg.hi["cycles"]
            while a < b:  # a page at a time (as record_texts): a goal's million cycles never sit in memory together
                rows = self._query(sql, (seg.branch, a, b, *goals))
                for c, rec, crc in rows:
                    yield self._decode(seg.branch, "cycle record", c, rec, crc)
                if len(rows) < self.PAGE:
                    break
                a = rows[-1][0] + 1

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

    def cycle_extent(self, branch: int) -> tuple[int, int, int]:
        """(first cycle, last cycle, number of records) of the branch, from the index alone:
        what a streamed export or report must say before its first record (0, 0, 0 when empty)."""
        first = last = count = 0
        for seg in self.lineage(branch):
            row = self._query("SELECT MIN(cycle), MAX(cycle), COUNT(*) FROM cycles WHERE branch=? AND cycle>=? AND cycle<?",
                              (seg.branch, max(1, seg.lo["cycles"]), seg.hi["cycles"]))  # as record_texts reads
            if row and row[0][2]:
                first = first or row[0][0]
                last, count = row[0][1], count + row[0][2]
        return first, last, count

    def search(self, branch: int, tool: str | None = None, veto: str | bool | None = None, goal: int | None = None,
               progress: str | None = None, text: str | None = None) -> list[dict]:
        """history.search's filters, run inside SQLite (a 10,000-cycle branch in a fraction of a
        second): rows of cycle, tool, progress, vetoed, output. Text matches case-insensitively
        for ASCII letters (SQLite's LIKE)."""
        col = self._col
        where: list[str] = []
        args: list[Any] = []
        if tool is not None:
            where.append(f"{col('tool')} = ?")
            args.append(tool)
        if veto is not None:
            where.append(col("vetoed"))
            if veto is not True:
                where.append(f"{col('veto')} = ?")
                args.append(veto)
        if goal is not None:
            where.append(f"{col('goal')} = ?")
            args.append(goal)
        if progress is not None:
            where.append(f"{col('progress')} = ?")
            args.append(progress)
        cond = "".join(f" AND {w}" for w in where)
        needle = text.lower() if text else None
        out: list[dict] = []
        for seg in self.lineage(branch):
            rows = self._query(
                f"SELECT cycle, {col('tool')}, {col('progress')}, {col('vetoed')}, {self._v('record')}, {self._crc_col()} FROM cycles "
                f"WHERE branch=? AND cycle>=? AND cycle<?{cond} ORDER BY cycle",
                (seg.branch, seg.lo["cycles"], seg.hi["cycles"], *args))
            for c, t, p, v, rec, crc in rows:
                o = self._decode(seg.branch, "cycle record", c, rec, crc)["act"]["output"]
                # the words match case-insensitively for ASCII letters, as SQLite's LIKE did
                if needle is not None and needle not in _ascii_lower(o if isinstance(o, str) else json.dumps(o)):
                    continue
                out.append({"cycle": c, "tool": t, "progress": p, "vetoed": bool(v), "output": o})
        return out


    def _col(self, name: str) -> str:
        """A searched field: its own column (schema 3), or json_extract over a schema-2 record."""
        return name if self.schema != "2" else f"json_extract(record, '{SEARCH_PATHS[name]}')"

    def marks(self, branch: int, limit: int = 2000) -> dict[int, str]:
        """Cycles worth a mark on the timeline: the newest `limit` vetoes (!) and the lineage's
        fork points (◆)."""
        sql = f"SELECT cycle FROM cycles WHERE branch=? AND cycle>=? AND cycle<? AND {self._col('vetoed')}"
        vetoes = [c for (c,) in self._ranged(branch, "cycles", sql, 0, INF)]
        out = {c: "!" for c in vetoes[-limit:]}
        for seg in self.lineage(branch)[:-1]:
            out[seg.hi["snapshots"] - 1] = "◆"
        return out

    def count_vetoes(self, branch: int, upto: int) -> int:
        """Cycles of the branch up to `upto` whose action was vetoed."""
        sql = f"SELECT COUNT(*) FROM cycles WHERE branch=? AND cycle>=? AND cycle<? AND {self._col('vetoed')}"
        return sum(r[0] for r in self._ranged(branch, "cycles", sql, 0, upto + 1))

    def head_state(self, branch: int) -> dict | None:
        """The core state a branch's head holds (whatever was recorded after it), or None."""
        row = self._query(f"SELECT cycle, {self._v('payload')}, {self._crc_col()} FROM heads WHERE branch=?", (branch,))
        return self._decode(branch, "head state", row[0][0], row[0][1], row[0][2]) if row else None

    def events(self, branch: int, kind: str | None = None) -> Iterator[tuple[int, dict]]:
        for cyc, text in self.event_texts(branch, kind):
            yield cyc, json.loads(text)

    def event_texts(self, branch: int, kind: str | None = None) -> Iterator[tuple[int, str]]:
        """(cycle, event) in the order they happened (only events of type `kind` if given),
        read a page at a time. A parent's events at the fork cycle are the branch's too,
        except those from user inputs after that cycle (the parent's own)."""
        segs = self.lineage(branch)
        typed = ""
        if kind is not None:
            typed = " AND type=?" if self.schema != "2" else " AND json_extract(event, '$.type')=?"
        crc = self._crc_col()
        bound: tuple[int, ...]  # the segment's last seq (all events), or nothing (one type)
        for i, seg in enumerate(segs):
            lo, hi = seg.lo["events"], seg.hi["events"]
            fork = i < len(segs) - 1
            args = (seg.branch, lo, hi) + ((hi,) if fork else ()) + ((kind,) if kind else ())
            at_fork = " OR (cycle=? AND input=0)" if fork else ""
            if kind is None:
                # every event of the segment, paged along seq itself, the table's own order. Through
                # the (branch, cycle) index every page sorted all the branch's later events again
                # (an export's time grew with the square of its events); the unary + keeps the
                # planner off that index. The range is the segment's first and last event.
                first, last = self._query(f"SELECT MIN(seq), MAX(seq) FROM events WHERE branch=? "
                                          f"AND ((cycle>=? AND cycle<?){at_fork})", args)[0]
                if first is None:
                    continue
                sql = (f"SELECT seq, cycle, {self._v('event')}, {crc} FROM events WHERE seq>? AND seq<=? AND +branch=? "
                       f"AND ((+cycle>=? AND +cycle<?){' OR (+cycle=? AND input=0)' if fork else ''}) "
                       f"ORDER BY seq LIMIT {self.PAGE}")
                after, bound = first - 1, (last,)
            else:  # a few events of one type (resume reads the psyche edits): its own index
                sql = (f"SELECT seq, cycle, {self._v('event')}, {crc} FROM events WHERE seq>? AND branch=? "
                       f"AND ((cycle>=? AND cycle<?){at_fork}){typed} ORDER BY seq LIMIT {self.PAGE}")
                after, bound = -1, ()
            while True:
                rows = self._query(sql, (after, *bound, *args))
                for _seq, cyc, ev, c in rows:
                    yield cyc, self._text(seg.branch, "event", cyc, ev, c)
                if len(rows) < self.PAGE:
                    break
                after = rows[-1][0]

    def inputs(self, branch: int, start: int, end: int) -> dict[int, list[tuple[str, Any]]]:
        """User inputs after each cycle in [start, end), as replayed on rewind."""
        out: dict[int, list[tuple[str, Any]]] = {}
        sql = (f"SELECT branch, cycle, kind, payload, {self._row_crc_col()} FROM inputs WHERE branch=? AND cycle>=? "
               f"AND cycle<? ORDER BY seq")
        for b, cyc, kind, payload, crc in self._ranged(branch, "inputs", sql, start, end):
            try:
                if crc is not None and row_crc(b, cyc, kind, payload) != crc:
                    raise ValueError("checksum mismatch")
                out.setdefault(cyc, []).append((kind, json.loads(payload)))
            except (ValueError, TypeError) as exc:
                self._damaged(b, "user input", cyc, exc)
        return out

    # ---- recording -------------------------------------------------------------------------
    def start(self, agent: Agent, meta: dict) -> int:
        """A new run with its `main` branch, made current; saves the agent's starting state.
        Earlier runs are kept (see `akh-tui sessions`)."""
        whole = [m for m in self._marks() if m.get("branch") is None]
        if whole:  # damage no branch owns (SQLite's own pages, the store's metadata): nothing new goes in
            raise StoreDamaged(f"`akh-tui sessions check` found this store damaged ({whole[0].get('what')}); no new run is "
                               f"written into it. Restore it from a copy, or use --data-dir for a new one; a check that "
                               f"finds it whole clears this.", file=self.where)
        with self._tx():
            run = self._insert_run(meta)
            branch = self._insert_branch(run, "main")
            self._set_current(branch)
            self._saved_symbols = agent.base_symbols
            self._saved_triples = agent.base_triples
            agent.kg_stored = (branch, agent.base_symbols, agent.base_triples)  # the base: _write goes on from it
            agent.episodic.new.clear()
            self._write(agent, None, agent.drain_events(), input_events=False)
            self._snapshot(agent)
            self._head(agent)
        return run

    def save(self, agent: Agent, record: Mapping[str, Any] | None, events: list[dict], inputs: "list[tuple[str, Any]] | tuple[()]" = (),
             input_events: bool = False, text: str | None = None, inputs_before: bool = False) -> None:
        """One cycle (record) or one user action (inputs), with its events: one transaction.
        `text` is the record's JSON when the caller has it already (the trace's line).
        `inputs_before`: the inputs were given during the cycle (a verdict, an answer) and are
        stored as following the cycle before it, so a rewind applies them before the cycle runs."""
        at = agent.cycle - 1 if inputs_before else agent.cycle
        added = len(agent.kg.log) - self._saved_triples
        snapshot = record is not None and (record["cycle"] % self.every == 0 or added >= SNAPSHOT_AFTER_TRIPLES)
        # Most cycles write their record and nothing else (on the demo three in four): that one
        # INSERT is a transaction of its own, without BEGIN and COMMIT around it (a third of
        # what the transaction cost), and as atomic.
        single = (record is not None and not snapshot and not events and not inputs and not agent.episodic.new
                  and added == 0 and len(agent.kg.symbols) == self._saved_symbols
                  and self._cycle_dictionary_kept(record["cycle"]))
        with self._tx(single):
            self._write(agent, record, events, input_events, text)
            for kind, payload in inputs:
                self._put_input(self.current(), at, kind, payload)
            if snapshot:
                self._snapshot(agent, record)

    def _cycle_dictionary_kept(self, cycle: int) -> bool:
        """Whether packing the record of `cycle` writes no dictionary into meta (see _pack_cycle)."""
        if self._zdict("cycle.steady") is not None:
            return True
        return cycle < self.STEADY_CYCLE and self._zdict("cycle") is not None

    def _snapshot(self, agent: Agent, record: Mapping[str, Any] | None = None) -> None:
        self.db.execute("INSERT OR REPLACE INTO snapshots (branch, cycle, payload, crc) VALUES (?, ?, ?, ?)",
                        (self.branch, agent.cycle, *self._pack(store_json(self._lean_state(agent, record)), "state")))

    def _lean_state(self, agent: Agent, record: Mapping[str, Any] | None = None) -> dict:
        """A snapshot's core state without what the cycle rows hold already: the provenance
        list (three quarters of a snapshot) is the decisions and vetoes of the last cycles,
        which `_provenance` reads back from the rows' own columns. Only when every entry is of
        those two kinds and matches its row (checked on the newest) is it left out. The last
        record (a fifth of what is left) is the row `record` just written in this transaction:
        when it is that very object, the snapshot names it instead of holding a second copy."""
        prov = agent.provenance
        # the kinds are checked on the live records, so the list is not built only to be dropped
        lean = bool(prov) and self.schema != "2" and set(map(_KIND, prov)).issubset(DERIVED_PROVENANCE)
        state = core_state(agent, provenance=not lean, goal_seen=self.schema == "2")
        if lean:
            state["provenance"] = {"derived": len(prov)}
        if self.schema != "2":
            self._seen.keep_only(agent.goals)
            for d, g in zip(state["goals"], agent.goals.values()):
                d["seen"] = self._seen.pack(g.id, g.seen)
        if (record is not None and self.schema != "2" and record["cycle"] == agent.cycle
                and agent.last_record is record):
            state["last_record"] = {"derived": agent.cycle}
        return state

    def _provenance(self, branch: int, cycle: int, count: int) -> list[list]:
        """The newest `count` provenance entries up to `cycle`, from the cycle rows: a vetoed
        cycle gave ShadowVeto then AgentDecision, any other cycle AgentDecision."""
        sql = f"SELECT cycle, {SEARCH_LIST} FROM cycles WHERE branch=? AND cycle>=? AND cycle<? ORDER BY cycle"
        rows = list(self._ranged(branch, "cycles", sql, max(0, cycle - count), cycle + 1))
        out: list[list] = []
        for c, *cols in rows:
            row = dict(zip(SEARCH_NAMES, cols))
            goal, tool, vetoed, veto, progress = row["goal"], row["tool"], row["vetoed"], row["veto"], row["progress"]
            if vetoed:
                out.append(["ShadowVeto", c, goal, tool, veto])
            out.append(["AgentDecision", c, goal, tool, progress])
        return out[-count:] if count else []

    def _write(self, agent: Agent, record: Mapping[str, Any] | None, events: list[dict], input_events: bool,
               text: str | None = None) -> None:
        if self.branch is None:
            raise RuntimeError("no current branch: start a run first")
        db, kg, b = self.db, agent.kg, self.branch
        if len(kg.symbols) > self._saved_symbols:
            labels = [(s, redact(s.label) if registered_in(s.label) else s.label)
                      for s in kg.symbols[self._saved_symbols:]]
            db.executemany("INSERT OR REPLACE INTO symbols VALUES (?, ?, ?, ?, ?)",
                           [(b, s.id, label, s.kind, row_crc(b, s.id, label, s.kind)) for s, label in labels])
        if len(kg.log) > self._saved_triples:
            rows = [(b, i, text, row_crc(b, i, text)) for i, text in
                    enumerate([store_json(triple_row(kg, t)) for t in kg.log[self._saved_triples:]], start=self._saved_triples)]
            db.executemany("INSERT OR REPLACE INTO triples VALUES (?, ?, ?, ?)", rows)
        if agent.episodic.new:
            db.executemany("INSERT OR REPLACE INTO episodes VALUES (?, ?, ?, ?)",
                           [(b, e.id, text, row_crc(b, e.id, text))
                            for e, text in [(e, store_json(e.to_dict())) for e in agent.episodic.new]])
            agent.episodic.new.clear()
        if record is not None:
            self._put_cycle(b, record, text)
        if events:
            db.executemany("INSERT INTO events (branch, cycle, input, event, crc, type) VALUES (?, ?, ?, ?, ?, ?)",
                           [(b, e.get("cycle", agent.cycle), int(input_events), *self._pack(store_json(e), "event"),
                             e.get("type")) for e in events])
        if agent.kg_stored == (b, self._saved_symbols, self._saved_triples):
            agent.kg_stored = (b, len(kg.symbols), len(kg.log))  # what was known stored, and now what follows it
        self._saved_symbols = len(kg.symbols)
        self._saved_triples = len(kg.log)

    def _put_cycle(self, branch: int, record: Mapping[str, Any], text: str | None = None) -> None:
        blob, crc = self._pack_cycle(text if text is not None else store_json(record), record["cycle"])
        self.db.execute(self._INSERT_CYCLE, (branch, record["cycle"], blob, crc, *search_columns(record)))

    _INSERT_CYCLE = (f"INSERT OR REPLACE INTO cycles (branch, cycle, record, crc, {SEARCH_LIST}) "
                     f"VALUES (?, ?, ?, ?{', ?' * len(SEARCH_NAMES)})")

    def _insert_run(self, meta: Mapping[str, Any]) -> int:
        text = store_json(meta)
        run = _rowid(self.db.execute("INSERT INTO runs (meta) VALUES (?)", (text,)))
        self.db.execute("UPDATE runs SET crc=? WHERE id=?", (row_crc(run, text), run))
        return run

    def _insert_branch(self, run: int, name: str, parent: int | None = None, fork_cycle: int | None = None,
                       fork_sizes: str | None = None, edits: str = "[]") -> int:
        b = _rowid(self.db.execute("INSERT INTO branches (run, name, parent, fork_cycle, fork_sizes, edits) "
                                   "VALUES (?, ?, ?, ?, ?, ?)", (run, name, parent, fork_cycle, fork_sizes, edits)))
        self.db.execute("UPDATE branches SET crc=? WHERE id=?",
                        (row_crc(b, run, name, parent, fork_cycle, fork_sizes, edits), b))
        return b

    def _put_input(self, branch: int, cycle: int, kind: str, payload: Any) -> None:
        text = store_json(payload)
        self.db.execute("INSERT INTO inputs (branch, cycle, kind, payload, crc) VALUES (?, ?, ?, ?, ?)",
                        (branch, cycle, kind, text, row_crc(branch, cycle, kind, text)))

    def checkpoint(self, agent: Agent) -> None:
        """Save the agent's state as its branch's head (on a clean stop): resume loads it
        instead of replaying from the last snapshot."""
        if self.branch is not None:
            with self._tx():
                self._head(agent)

    def _head(self, agent: Agent) -> None:
        self.db.execute("INSERT OR REPLACE INTO heads (branch, cycle, inputs_seq, payload, crc) VALUES (?, ?, ?, ?, ?)",
                        (self.branch, agent.cycle, self._inputs_seq(self.current()),
                         *self._pack(store_json(core_state(agent)), "state")))

    def _inputs_seq(self, branch: int) -> int:
        return self._query("SELECT COALESCE(MAX(seq), 0) FROM inputs WHERE branch=?", (branch,))[0][0]

    def fork(self, parent: int, cycle: int, name: str, agent: Agent, sizes: list[int], edits: dict,
             applied: list[str], event: dict) -> int:
        """Branch `name` off `parent` after `cycle`; `agent` is the rewound agent with the edits
        applied, `sizes` its graph and episode counts before them. The new branch is current."""
        run = self._branch_rows("id=?", (parent,))[0][1]
        if self._query("SELECT 1 FROM branches WHERE run=? AND name=?", (run, name)):
            raise InputError(f"run {run} already has a branch {name!r}", file=self.where, field="name")
        with self._tx():
            branch = self._insert_branch(run, name, parent, cycle, store_json(sizes), store_json(applied))
            self._set_current(branch)
            self._saved_symbols, self._saved_triples = sizes[0], sizes[1]
            known = agent.kg_stored
            if known is not None and known[0] == parent and known[1] <= sizes[0] and known[2] <= sizes[1]:
                agent.kg_stored = (branch, known[1], known[2])  # the parent's rows up to `sizes` are the branch's
            self._write(agent, None, [event], input_events=True)
            if edits:
                self._put_input(branch, cycle, "edits", edits)
            self._head(agent)
        return branch

    # ---- restoring -------------------------------------------------------------------------
    def _restore(self, branch: int, state: dict, agent: Agent) -> Agent:
        """Load a core state of `branch` into a fresh agent of its scenario. Its graph holds
        the scenario's base, or that and the first of the branch's additions (a rewind's
        graph, basegraph.py): the additions are read from where the graph ends."""
        try:
            n_sym, n_tri = state["kg_size"]
            crc = self._row_crc_col()
            symbols = [[r[2], r[3]] for r in self._checked(branch, "symbols", "graph symbol", self._ranged(
                branch, "symbols", f"SELECT branch, id, label, kind, {crc} FROM symbols WHERE branch=? AND id>=? AND id<? "
                f"ORDER BY id", len(agent.kg.symbols), n_sym), n_sym)]
            triples = loads_rows([(r[2],) for r in self._checked(branch, "triples", "graph triple", self._ranged(
                branch, "triples", f"SELECT branch, seq, payload, {crc} FROM triples WHERE branch=? AND seq>=? AND seq<? "
                f"ORDER BY seq", len(agent.kg.log), n_tri), n_tri)])
            cap = agent.config.episodic_capacity
            nxt = state["episodes_next_id"]
            em = EpisodicMemory(cap)
            for d in loads_rows([(r[2],) for r in self._checked(branch, "episodes", "episode", self._ranged(
                    branch, "episodes", f"SELECT branch, id, payload, {crc} FROM episodes WHERE branch=? AND id>=? AND id<? "
                    f"ORDER BY id", max(0, nxt - cap), nxt))]):
                em._insert(Episode.from_dict(d))
            apply_kg_additions(agent, {"symbols": symbols, "triples": triples})
            state = dict(state)
            state.pop("kg_additions", None)  # applied above from their tables
            if isinstance(state.get("provenance"), dict):  # a lean snapshot: from the cycle rows
                state["provenance"] = self._provenance(branch, state["cycle"], state["provenance"]["derived"])
            if any(isinstance(g.get("seen"), dict) for g in state["goals"]):  # packed ids
                state["goals"] = [dict(g, seen=unpack_ids(g["seen"])) if isinstance(g.get("seen"), dict) else g
                                  for g in state["goals"]]
            last = state.get("last_record")
            if isinstance(last, dict) and "type" not in last and "derived" in last:  # its cycle's own row
                state["last_record"] = self.record(branch, last["derived"])
                if state["last_record"] is None:
                    raise ValueError(f"the record of cycle {last['derived']} is missing")
            agent = restore(agent, state, episodes=em)  # (which checks the graph's size)
            agent.kg_stored = (branch, n_sym, n_tri)
            return agent
        except (KeyError, ValueError, TypeError) as exc:
            self._corrupt(f"a saved state is malformed: {exc}")

    def _checked(self, branch: int, table: str, what: str, rows: Iterable[tuple], end: int | None = None) -> list[tuple]:
        """Rows of a ROW_COLUMNS table (its columns, then the checksum), each checked; a
        damaged one is reported with the branch that holds it and its number. Numbered rows
        (`end`: the count the state names) must follow one another up to it: a gap or a
        short end is rows lost from the store. Rows missing at the start are left to the
        restore, which says the scenario's graph changed (the base the rows follow)."""
        out: list[tuple] = []
        for row in rows:
            if row[-1] is not None and row_crc(*row[:-1]) != row[-1]:
                run, name = self._branch_where(row[0])
                self._bad_row(f"{what} #{row[1]} of {self._branch_label(row[0])}", run=run, branch=name)
            if end is not None and out and row[1] != out[-1][1] + 1:
                run, name = self._branch_where(row[0])
                self._bad_row(f"{what}s of {self._branch_label(branch)}", run=run, branch=name,
                              why=f"#{out[-1][1] + 1} to #{row[1] - 1} are missing")
            out.append(row)
        if end is not None and out and out[-1][1] != end - 1:
            run, name = self._branch_where(branch)
            self._bad_row(f"{what}s of {self._branch_label(branch)}", run=run, branch=name,
                          why=f"#{out[-1][1] + 1} to #{end - 1} are missing")
        return out

    def head(self, branch: int) -> tuple[int, dict] | None:
        """The branch's head (cycle, core state) when nothing was recorded after it, else None
        (the process stopped without a checkpoint: the caller rewinds to the last cycle)."""
        row = self._query(f"SELECT cycle, inputs_seq, {self._v('payload')}, {self._crc_col()} FROM heads WHERE branch=?", (branch,))
        if not row:
            raise InputError("this branch was imported from a trace: it can be replayed, not resumed", file=self.where)
        head_cycle, head_seq, payload, crc = row[0]
        if head_cycle == self.last_cycle(branch) and head_seq == self._inputs_seq(branch):
            return head_cycle, self._decode(branch, "head state", head_cycle, payload, crc)
        return None

    def snapshot_before(self, branch: int, cycle: int) -> tuple[int, dict]:
        """The newest snapshot of the branch's lineage at or before `cycle`: (its cycle, state)."""
        last = self.last_cycle(branch)
        if cycle < 0 or cycle > last:
            raise InputError(f"cycle {cycle} is outside the branch (0..{last})", field="cycle")
        sql = (f"SELECT cycle, {self._v('payload')}, {self._crc_col()} FROM snapshots WHERE branch=? AND cycle>=? AND cycle<? "
               f"ORDER BY cycle DESC LIMIT 1")
        for seg in reversed(self.lineage(branch)):
            lo, hi = seg.lo["snapshots"], min(seg.hi["snapshots"], cycle + 1)
            if lo < hi:
                row = self._query(sql, (seg.branch, lo, hi))
                if row:
                    return row[0][0], self._decode(seg.branch, "snapshot", row[0][0], row[0][1], row[0][2])
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
        for text in self.trace_lines(branch):
            yield json.loads(text)

    def trace_lines(self, branch: int) -> Iterator[str]:
        """trace_items as the JSON lines the trace holds (the stored text: export neither
        decodes nor re-encodes a record)."""
        # both streams come oldest first (a branch's events are written in cycle order), so
        # they merge in constant memory: a million-cycle export holds one page at a time
        events = self.event_texts(branch)
        pending = next(events, None)
        while pending is not None and pending[0] <= 0:
            yield pending[1]
            pending = next(events, None)
        for cycle, text in self.record_texts(branch):
            yield text
            while pending is not None and pending[0] <= cycle:
                yield pending[1]
                pending = next(events, None)
        while pending is not None:  # after the last record (e.g. a goal added at the end)
            yield pending[1]
            pending = next(events, None)

    # ---- integrity -------------------------------------------------------------------------
    def check(self) -> dict:
        """The full scan an explicit command asks for (`sessions check`): SQLite's own
        integrity check, then every checksum. Damaged records by run and branch, with their
        cycles; rows written before checksums (schema 2) are counted as unchecked."""
        try:
            rows = self.db.execute("PRAGMA integrity_check").fetchall()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a flipped byte in a text can fail to decode
            rows = [(str(exc),)]
        sqlite_ok = [r[0] for r in rows] == ["ok"]
        damaged: dict[str, list[int]] = {}
        marks: list[dict] = []  # what a writer refuses to continue (damage_marks)
        checked = unchecked = 0

        def found(label: str, key: int | None, branch: int | None = None, what: str = "", cycle: bool = True) -> None:
            damaged.setdefault(label, [])
            if key is not None:
                damaged[label].append(key)
            marks.append({"branch": branch, "what": what, "cycle": key if cycle else None})

        crc = self._crc_col()
        for table, key, col in (("cycles", "cycle", "record"), ("snapshots", "cycle", "payload"),
                                ("heads", "cycle", "payload"), ("events", "cycle", "event")):
            what = {"cycles": "cycle records", "snapshots": "snapshots", "heads": "head states", "events": "events"}[table]
            try:
                cur = self.db.execute(f"SELECT branch, {key}, {self._v(col)}, {crc} FROM {table} ORDER BY branch, {key}")
                for b, k, stored, c in cur:
                    if c is None:
                        unchecked += 1
                        continue
                    checked += 1
                    try:
                        text = self._text(b, table, k, stored, c)
                        # the key is outside the checksum: it must name the cycle the value holds
                        if table != "events" and json.loads(text).get("cycle") != k:
                            raise StoreDamaged("key mismatch")
                    except (StoreDamaged, ValueError, AttributeError):
                        found(f"{self._branch_label(b)}: {what}", k, b, table)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a flipped byte in a text can fail to decode
                found(f"{table}: unreadable ({exc})", None, None, table)
        # the rows beside the records (schema 4): keyed by branch, or the store's own (meta, runs)
        rcrc = self._row_crc_col()
        for table, cols in ROW_COLUMNS.items():
            what = {"meta": "store metadata", "runs": "run metadata", "branches": "branch rows", "symbols": "graph symbols",
                    "triples": "graph triples", "episodes": "episodes", "inputs": "user inputs"}[table]
            try:
                for row in self.db.execute(f"SELECT {', '.join(cols)}, {rcrc} FROM {table}"):
                    if row[-1] is None:
                        unchecked += 1
                        continue
                    checked += 1
                    if row_crc(*row[:-1]) == row[-1]:
                        continue
                    if table == "meta":
                        found(f"{what}: {row[0]!r}", None, None, table)
                    elif table == "runs":
                        found(f"run {row[0]}: {what}", None, None, table)
                    elif table == "branches":
                        found(f"branch row {row[0]} (read as run {row[1]}, branch {row[2]!r})", None, row[0], table)
                    elif table == "inputs":  # keyed by the cycle they followed
                        found(f"{self._branch_label(row[0])}: {what}", row[1], row[0], table)
                    else:
                        found(f"{self._branch_label(row[0])}: {what} (numbered)", row[1], row[0], table, cycle=False)
            except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # a flipped byte in a text can fail to decode
                found(f"{table}: unreadable ({exc})", None, None, table)
        if not sqlite_ok:
            marks.append({"branch": None, "what": "sqlite", "cycle": None})
        return {"sqlite": "ok" if sqlite_ok else "; ".join(r[0] for r in rows[:10]), "checked": checked,
                "unchecked": unchecked, "damaged": damaged, "ok": sqlite_ok and not damaged, "marks": marks}

    # ---- damage a writer refuses (the mark file and its reading: marks.py) ------------------
    @property
    def mark_path(self) -> Path | None:
        """Where `sessions check` leaves its verdict for writers (marks.mark_path)."""
        return marks.mark_path(self.path) if self.path is not None else None

    def record_check(self, result: dict) -> str | None:
        """Keep `check()`'s verdict for later writers: the damage found, or nothing once the
        store is whole. None, or why it could not be kept (a read-only file system)."""
        mark = self.mark_path
        return marks.record(mark, result) if mark is not None else None

    def _marks(self) -> list[dict]:
        """The damage `sessions check` marked (marks.read)."""
        mark = self.mark_path
        return marks.read(mark) if mark is not None else []

    def verify_tail(self, branch: int) -> None:
        """What a writer checks before it continues `branch` (StoreDamaged naming the first
        damage): the newest snapshot at or before the branch's last cycle, every cycle record
        after it (checksum, and the columns search and provenance read against the record)
        and the user inputs after it. One snapshot and at most `every` records (plus a fork's
        lead-in), whatever the run's length: the head or rewind reads these anyway."""
        last = self.last_cycle(branch)
        base, _state = self.snapshot_before(branch, last)
        sql = (f"SELECT branch, cycle, {self._v('record')}, {self._crc_col()}, {SEARCH_LIST} FROM cycles "
               f"WHERE branch=? AND cycle>=? AND cycle<? ORDER BY cycle")
        for b, c, stored, crc, *cols in self._ranged(branch, "cycles", sql, base + 1, last + 1):
            rec = self._decode(b, "cycle record", c, stored, crc)
            if not isinstance(rec, dict) or rec.get("cycle") != c:
                self._damaged(b, "cycle row", c, ValueError("its key is not its record's cycle"))
            if self.schema != "2":
                try:
                    ok = list(search_columns(rec)) == cols
                except (KeyError, TypeError):
                    ok = False
                if not ok:
                    self._damaged(b, "cycle row", c, ValueError("its columns do not match its record"))
        self.inputs(branch, base, last + 1)

    def refuse_marked(self, branch: int, upto: int | None = None) -> None:
        """BranchDamaged when `sessions check` marked damage that continuing `branch` (or
        forking it after cycle `upto`) would build on (marks.first_hit)."""
        found = self._marks()
        if not found:
            return
        hit = marks.first_hit(found, {seg.branch: seg for seg in self.lineage(branch)}, branch, upto)
        if hit is not None:
            raise self.refusal(branch, None, hit)

    def refusal(self, branch: int, exc: "StoreDamaged | None", mark: dict | None = None) -> BranchDamaged:
        """Why a writer will not continue `branch`, and how to go on: fork before the damage."""
        run, name = self._branch_where(branch)
        return marks.refusal(self.where, branch, run, name, exc, mark)

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
            run = self._insert_run(meta)
            b = self._insert_branch(run, "main")
            cycle = 0
            for it in items:
                if it.get("type") == "cycle":
                    cycle = it["cycle"]
                    self._put_cycle(b, it)
                elif it.get("type") != "run":
                    self.db.execute("INSERT INTO events (branch, cycle, input, event, crc, type) VALUES (?, ?, 0, ?, ?, ?)",
                                    (b, it.get("cycle", cycle), *self._pack(store_json(it), "event"), it.get("type")))
        return run


def _rowid(cursor: sqlite3.Cursor) -> int:
    assert cursor.lastrowid is not None  # an INSERT always sets it
    return cursor.lastrowid


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


class _Transaction:
    """One write transaction. A failure (disk full, read-only file, I/O error) rolls it back,
    puts the store's own counters back and raises StoreWriteError: the store then holds
    exactly what it held before."""

    def __init__(self, store: "SessionStore", single: bool = False) -> None:
        self.store = store
        self.db = store.db
        self.single = single  # one statement: SQLite's autocommit makes it a transaction

    def __enter__(self):
        st = self.store
        if st.broken is not None:
            raise StoreWriteError(f"the session store refuses writes: {st.broken}. Resume the run to continue.",
                                  file=st.where)
        if st.readonly:
            raise StoreWriteError("the session store was opened read-only", file=st.where)
        self.saved = (st.branch, st._saved_symbols, st._saved_triples)
        if self.single:
            return self
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreWriteError(f"cannot write the session store: {exc}", file=st.where) from None
        return self

    def __exit__(self, exc_type, exc, tb):
        st = self.store
        if exc_type is None and self.single:
            st._check_wal()
            return False
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error as err:
                exc = err
            else:
                st._check_wal()
                return False
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        st.branch, st._saved_symbols, st._saved_triples = self.saved
        st._lineages.clear()
        st._zdicts.clear()  # a dictionary set in the rolled-back transaction is gone
        if isinstance(exc, (sqlite3.Error, OSError)):
            raise StoreWriteError(f"the session store could not record this ({exc}); nothing of it was kept",
                                  file=st.where) from None
        return False
