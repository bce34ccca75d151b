"""A sweep's folder: one SQLite file with a row per run and every run's compressed trace.

Results are written as they come back, each in its own transaction, keyed by run id with
INSERT OR IGNORE: a result that arrives twice (a task re-run after a worker died) counts
once, and an interrupted sweep keeps every row it wrote. A folder holds one sweep; running
a different sweep file into it is refused rather than mixing two sweeps' rows.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from pathlib import Path

from ..errors import InputError

DB_NAME = "sweep.db"
# The outcomes a report summarises (each a number, or NULL for a failed run).
OUTCOMES = ("goals_completed", "goals_failed", "mean_cycles_to_complete", "vetoes", "biases", "individuation", "cycles_run")
# A sweep over a world summarises these instead (its rows hold no per-run psyche figures); they
# live in the row's JSON, the table's outcome columns hold the two both kinds share.
WORLD_OUTCOMES = ("goals_completed", "goals_failed", "minted", "mints_won", "max_balance", "min_balance", "refused",
                  "failed_steps", "rounds_run")


def outcomes_of(meta: dict) -> tuple[str, ...]:
    """The outcomes a report of this sweep summarises."""
    return WORLD_OUTCOMES if meta.get("kind") == "world" else OUTCOMES

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, idx INTEGER NOT NULL, scenario TEXT NOT NULL, seed INTEGER NOT NULL,
    status TEXT NOT NULL, error TEXT, {", ".join(f"{o} REAL" for o in OUTCOMES)},
    wall_time REAL, row TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS traces (run_id TEXT PRIMARY KEY, trace BLOB NOT NULL);
"""


def fingerprint(sweep) -> str:
    """What makes two sweep files the same sweep: the set of runs they make."""
    ids = sorted(t.run_id for t in sweep.tasks())
    return hashlib.sha256(json.dumps([sweep.name, ids]).encode()).hexdigest()[:16]


class SweepStore:
    def __init__(self, folder: str | Path, sweep=None, create: bool = True) -> None:
        self.folder = Path(folder)
        path = self.folder / DB_NAME
        if not create and not path.is_file():
            raise InputError(f"no sweep here (no {DB_NAME}; run `akh-tui sweep run` first)", file=str(self.folder), field="DIR")
        try:
            if create:
                self.folder.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a committed row survives the process being killed (Ctrl-C, a crash);
            # only a power cut may lose the last ones, and re-running the sweep redoes them
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except (OSError, ValueError, sqlite3.Error) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise InputError(f"cannot use the sweep folder: {reason}", file=str(self.folder), field="--out") from None
        if sweep is not None:
            self._claim(sweep)

    def _claim(self, sweep) -> None:
        fp = fingerprint(sweep)
        meta = self.meta()
        if meta and meta.get("fingerprint") != fp:
            raise InputError(
                f"this folder holds another sweep ({meta.get('name')!r} from {meta.get('file')}); "
                "give a new --out folder, or the same sweep file to finish it", file=str(self.folder), field="--out")
        if not meta:
            values = {"name": sweep.name, "file": str(sweep.path), "fingerprint": fp, "text": sweep.text,
                      "axes": json.dumps(sweep.axis_names()), "run_count": str(sweep.run_count),
                      "max_cycles": str(sweep.max_cycles)}
            if sweep.world:
                values["kind"] = "world"
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                self.db.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", sorted(values.items()))

    def meta(self) -> dict:
        m = dict(self.db.execute("SELECT key, value FROM meta"))
        if "axes" in m:
            m["axes"] = json.loads(m["axes"])
        for k in ("run_count", "max_cycles"):
            if k in m:
                m[k] = int(m[k])
        return m

    def done_ids(self) -> set[str]:
        return {r for (r,) in self.db.execute("SELECT run_id FROM runs")}

    def count(self) -> tuple[int, int]:
        """(runs stored, of which failed)."""
        n, failed = self.db.execute("SELECT COUNT(*), COALESCE(SUM(status = 'failed'), 0) FROM runs").fetchone()
        return n, failed

    def add(self, result: dict) -> bool:
        """Store one run_task result; False when that run was already stored."""
        row = result["row"]
        data = {k: v for k, v in row.items() if k != "wall_time"}
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            cur = self.db.execute(
                f"INSERT OR IGNORE INTO runs (run_id, idx, scenario, seed, status, error, {', '.join(OUTCOMES)}, wall_time, row) "
                f"VALUES ({', '.join('?' * (8 + len(OUTCOMES)))})",
                (row["run_id"], row["idx"], row["scenario"], row["seed"], row["status"], row["error"],
                 *(row.get(o) for o in OUTCOMES), row.get("wall_time"), json.dumps(data, sort_keys=True)),
            )
            if cur.rowcount == 0:
                return False
            self.db.execute("INSERT OR IGNORE INTO traces VALUES (?, ?)", (row["run_id"], result["trace"]))
        return True

    def rows(self) -> list[dict]:
        """Every stored row (wall_time included), in the sweep's order."""
        return [json.loads(r) | {"wall_time": w} for r, w in self.db.execute("SELECT row, wall_time FROM runs ORDER BY idx, run_id")]

    def find(self, prefix: str) -> str:
        """The run id a (unique) prefix or a listing index (#12) names."""
        if prefix.startswith("#") and prefix[1:].isdigit():
            hit = self.db.execute("SELECT run_id FROM runs WHERE idx = ?", (int(prefix[1:]),)).fetchone()
            if hit:
                return hit[0]
            raise InputError(f"no run with index {prefix}", field="RUN")
        like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        hits = [r for (r,) in self.db.execute("SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY run_id LIMIT 3", (like,))]
        if not prefix or not hits:
            raise InputError(f"no run {prefix!r} in this sweep", file=str(self.folder), field="RUN")
        if len(hits) > 1:
            raise InputError(f"{prefix!r} names more than one run ({', '.join(hits[:2])}, ...): give more of the id", field="RUN")
        return hits[0]

    def trace_text(self, run_id: str) -> str:
        (blob,) = self.db.execute("SELECT trace FROM traces WHERE run_id = ?", (run_id,)).fetchone()
        return zlib.decompress(blob).decode("utf-8")

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.glob(DB_NAME + "*"))

    def close(self) -> None:
        self.db.close()
