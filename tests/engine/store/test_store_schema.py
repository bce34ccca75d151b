"""Issue 24/29: the store's schema in one module (tables, numbered migrations, the one
declaration of the search columns), and schema 5's steady-state dictionary for cycle records:
a schema-4 store reads as it was and is migrated by the first writer, whose later records are
packed against a record from well into the run (smaller), the exported trace unchanged."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
from pathlib import Path

from akh_tui.bench.main import demo_agent
from akh_tui.engine.runs.run import Run
from akh_tui.engine.store.schema import SCHEMA_VERSION, SEARCH_NAMES, migration_steps
from akh_tui.engine.store.session import SessionStore
from akh_tui.engine.store.trace import TraceWriter

DATA = Path(__file__).resolve().parents[2] / "data"


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_schema_4_store_reads_as_it_was_and_its_writer_packs_against_a_steady_record(cli, tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    db = data / "session.db"
    db.write_bytes(gzip.decompress((DATA / "schema4_session.db.gz").read_bytes()))
    old_main = gzip.decompress((DATA / "schema4_main.jsonl.gz").read_bytes()).decode()
    old_bold = gzip.decompress((DATA / "schema4_bold.jsonl.gz").read_bytes()).decode()
    before = db.read_bytes()
    assert cli("sessions", "export", "1").stdout == old_main
    assert cli("sessions", "export", "1", "--branch", "bold").stdout == old_bold
    assert db.read_bytes() == before  # read-only commands migrate nothing
    # the bold branch ends at cycle 17: cycles 18-22 are written now, 19 on against the new dictionary
    monkeypatch.setattr(SessionStore, "STEADY_CYCLE", 19)
    cli("agent", "resume", "--max-cycles", "5")
    assert _rows(db, "SELECT value FROM meta WHERE key='schema'") == [(SCHEMA_VERSION,)] == [("5",)]
    tags = dict(_rows(db, "SELECT cycle, substr(record, 1, 1) FROM cycles WHERE branch=2 AND cycle > 12"))
    assert sorted(tags) == list(range(13, 23))
    assert {c for c, tag in tags.items() if tag == b"\x04"} == set(range(19, 23))  # the steady dictionary's
    assert _rows(db, "SELECT length(value) > 1000 FROM meta WHERE key='zdict.cycle.steady'") == [(1,)]
    assert cli("sessions", "export", "1").stdout == old_main
    bold = [x for x in cli("sessions", "export", "1", "--branch", "bold").stdout.splitlines() if '"type":"cycle"' in x]
    old = [x for x in old_bold.splitlines() if '"type":"cycle"' in x]
    assert bold[:len(old)] == old and [json.loads(x)["cycle"] for x in bold[len(old):]] == list(range(18, 23))
    # the new records read back: resumed again, forked among them, searched, checked whole
    cli("agent", "resume", "--max-cycles", "2")
    assert json.loads(cli("sessions", "search", "1", "goal=3", "--branch", "bold", "--json").stdout)[-1]["cycle"] == 24
    cli("agent", "fork", "--at", "21", "--name", "late")
    late = [x for x in cli("sessions", "export", "1", "--branch", "late").stdout.splitlines() if '"type":"cycle"' in x]
    assert late == bold[:21]
    assert "the store is whole" in cli("sessions", "check").stdout


def test_records_after_the_steady_cycle_are_stored_smaller_and_export_as_the_trace_wrote_them(tmp_path):
    trace = tmp_path / "trace.jsonl"
    run = Run.over(demo_agent(), "bench", store=SessionStore(tmp_path / "s.db"), trace=TraceWriter(trace))
    for _ in range(SessionStore.STEADY_CYCLE + 40):
        run.step()
    run.close()
    sizes = dict(_rows(tmp_path / "s.db", "SELECT cycle, length(record) FROM cycles"))
    early = [sizes[c] for c in range(60, SessionStore.STEADY_CYCLE)]
    late = [sizes[c] for c in range(SessionStore.STEADY_CYCLE + 1, SessionStore.STEADY_CYCLE + 40)]
    assert sum(late) / len(late) < 0.7 * sum(early) / len(early)
    store = SessionStore(tmp_path / "s.db", readonly=True)
    try:
        exported = [line for line in store.trace_lines(store.current()) if '"type":"cycle"' in line]
    finally:
        store.close()
    written = [line for line in trace.read_text(encoding="utf-8").splitlines() if '"type":"cycle"' in line]
    assert exported == written and len(written) == SessionStore.STEADY_CYCLE + 40


def test_the_search_columns_are_declared_once(tmp_path):
    store = SessionStore(tmp_path / "s.db")
    store.close()
    cols = [r[1] for r in _rows(tmp_path / "s.db", "PRAGMA table_info(cycles)")]
    assert cols[cols.index("crc") + 1:] == list(SEARCH_NAMES)
    # the migration that added them (schema 3) names the same columns, and each number's steps run in order
    added = [s.split("ADD COLUMN ")[1].split()[0] for s in migration_steps("2") if "ALTER TABLE cycles" in s]
    assert added == ["crc", *SEARCH_NAMES]
    assert migration_steps("4") == [] and migration_steps(SCHEMA_VERSION) == []
    assert os.path.exists(tmp_path / "s.db")


def test_a_cycle_that_writes_only_its_record_is_one_statement_and_any_other_one_transaction(tmp_path):
    run = Run.over(demo_agent(), "bench", store=SessionStore(tmp_path / "s.db"))
    for _ in range(30):
        run.step()
    statements: list[str] = []
    run.store.db.set_trace_callback(statements.append)
    kinds = []
    for _ in range(60):
        statements.clear()
        tri, sym, cycle = len(run.agent.kg.log), len(run.agent.kg.symbols), run.cycle + 1
        run.step()
        writes = [s for s in statements if s.split()[0].upper() in ("INSERT", "UPDATE", "DELETE")]
        only_record = len(writes) == 1 and writes[0].startswith("INSERT OR REPLACE INTO cycles")
        kinds.append(only_record)
        assert ("BEGIN IMMEDIATE" in statements) == (not only_record), statements
        assert only_record == (len(run.agent.kg.log) == tri and len(run.agent.kg.symbols) == sym and cycle % 25 != 0
                               and not writes[1:]), statements
    run.store.db.set_trace_callback(None)
    assert any(kinds) and not all(kinds)  # both kinds happened
    last = run.cycle
    run.close()
    store = SessionStore(tmp_path / "s.db", readonly=True)
    assert store.last_cycle(store.current()) == last  # every cycle recorded, whichever way
    store.close()
