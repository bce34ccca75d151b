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
from akh_tui.engine.store.schema import SCHEMA_VERSION, SEARCH_NAMES, migration_steps, row_crc
from akh_tui.engine.store.session import SessionStore
from akh_tui.engine.store.trace import TraceWriter
from akh_tui.engine.store.worldstore import WorldStore
from akh_tui.engine.paths import Locations
from akh_tui.engine.world import load_world
from akh_tui.engine.world.worldrun import WorldRun

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
    assert _rows(db, "SELECT value FROM meta WHERE key='schema'") == [(SCHEMA_VERSION,)] == [("6",)]
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


def _schema5_world(tmp_path: Path) -> Path:
    """The schema-5 store of a market world (main: 6 rounds; `calm`: forked at 3:bold, bold
    without `reason`, run 2 rounds more), its world file named where this checkout has it."""
    data = tmp_path / "data"
    data.mkdir()
    db = data / "session.db"
    db.write_bytes(gzip.decompress((DATA / "schema5_world.db.gz").read_bytes()))
    con = sqlite3.connect(db)
    try:
        meta = json.loads(con.execute("SELECT meta FROM worlds WHERE id=1").fetchone()[0])
        meta["file"] = str(load_world("market").path)
        text = json.dumps(meta, sort_keys=True)
        con.execute("UPDATE worlds SET meta=?, crc=? WHERE id=1", (text, row_crc(1, text)))
        con.commit()
    finally:
        con.close()
    return db


def test_a_schema_5_world_reads_as_it_was_and_its_writer_packs_the_steps_it_adds(cli, tmp_path, monkeypatch):
    db = _schema5_world(tmp_path)
    old_main = gzip.decompress((DATA / "schema5_world_main.jsonl.gz").read_bytes()).decode()
    old_calm = gzip.decompress((DATA / "schema5_world_calm.jsonl.gz").read_bytes()).decode()
    before = db.read_bytes()
    assert cli("sessions", "export", "w1", "--branch", "main").stdout == old_main
    assert cli("sessions", "export", "w1", "--branch", "calm").stdout == old_calm
    assert "the store is whole" in cli("sessions", "check").stdout
    assert db.read_bytes() == before  # read-only commands migrate nothing
    # calm ends at step 8 (round 4, each trader 4 cycles in): its next steps are packed, those
    # of cycle 6 on against a steady step's lines
    monkeypatch.setattr(WorldStore, "STEADY_CYCLE", 6)
    cli("world", "run", "market", "--rounds", "3", "--trace", str(tmp_path / "calm.jsonl"))
    assert _rows(db, "SELECT value FROM meta WHERE key='schema'") == [(SCHEMA_VERSION,)] == [("6",)]
    rows = _rows(db, "SELECT step, typeof(lines), substr(lines, 1, 1) FROM world_steps WHERE branch=2 ORDER BY step")
    assert [s for s, kind, _ in rows if kind == "text"] == [6, 7, 8]  # written before: as they were
    tags = {s: tag for s, kind, tag in rows if kind == "blob"}
    assert sorted(tags) == list(range(9, 15)) and set(tags.values()) == {b"\x05", b"\x06"}
    steady = min(s for s, tag in tags.items() if tag == b"\x06")
    assert all((tag == b"\x06") == (s >= steady) for s, tag in tags.items())
    calm = cli("sessions", "export", "w1", "--branch", "calm").stdout
    assert calm.startswith(old_calm) and calm == (tmp_path / "calm.jsonl").read_text(encoding="utf-8")
    assert len(calm.splitlines()) > len(old_calm.splitlines())
    assert cli("sessions", "export", "w1", "--branch", "main").stdout == old_main
    # a fork among the packed steps rewinds through text and packed rows alike (each replayed
    # step is checked against its record), and shares calm's lines up to it
    reader = WorldRun.open_readonly(Locations(tmp_path / "data", tmp_path / "config.toml"), branch="calm")
    try:
        at = next(reader.steps(10, 10)).name
        upto = 1 + sum(len(row.lines) for row in reader.steps(1, 10))  # the header and steps 1-10
    finally:
        reader.close()
    cli("world", "fork", "--at", at, "--agent", "cautious", "--disable", "bid", "--name", "late")
    cli("world", "run", "market", "--rounds", "1")
    late = cli("sessions", "export", "w1", "--branch", "late").stdout.splitlines()
    assert late[:upto] == calm.splitlines()[:upto] and len(late) > upto
    assert "the store is whole" in cli("sessions", "check").stdout


def test_a_worlds_steps_are_stored_packed_smaller_and_read_back_as_the_trace_wrote_them(tmp_path, monkeypatch):
    monkeypatch.setattr(WorldStore, "STEADY_CYCLE", 12)
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = WorldRun.start(loc, "market", trace=tmp_path / "t.jsonl")
    r.run(24)  # two traders: cycles 12 on (steps 23 on) against the steady step
    r.close()
    rows = _rows(loc.session_db, "SELECT step, length(lines), substr(lines, 1, 1) FROM world_steps ORDER BY step")
    reader = WorldRun.open_readonly(loc)
    try:
        text = {row.step: len("\n".join(row.lines).encode()) for row in reader.steps()}
        assert list(reader.trace_lines()) == (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    finally:
        reader.close()
    assert {tag for _, _, tag in rows} == {b"\x05", b"\x06"} and len(rows) == len(text) >= 46
    early = [size / text[s] for s, size, tag in rows if tag == b"\x05" and s > 1]
    late = [size / text[s] for s, size, tag in rows if tag == b"\x06"]
    assert max(early) < 0.3 and sum(late) / len(late) < 0.9 * sum(early) / len(early), (early, late)
    assert _rows(loc.session_db, "SELECT key FROM meta WHERE key LIKE 'zdict.world.%' ORDER BY key") == [
        ("zdict.world.step",), ("zdict.world.step.steady",)]


def test_two_writers_of_one_store_share_its_step_dictionaries_and_never_replace_one(tmp_path, monkeypatch):
    """Two processes may drive two worlds of one store at once (each world has its own lock):
    the first to need a dictionary sets it, the other packs against that one, and a reader that
    looked for one before it was set finds it when a row needs it."""
    monkeypatch.setattr(WorldStore, "STEADY_CYCLE", 3)
    a, b, c = (SessionStore(tmp_path / "s.db") for _ in range(3))
    wa, wb, wc = WorldStore(a), WorldStore(b), WorldStore(c)
    ba, bb = wa.start({"name": "a"}), wb.start({"name": "b"})

    def lines(who: str, cycle: int) -> list[str]:
        return [json.dumps({"type": "cycle", "cycle": cycle, "agent": who, "note": f"{who} turn {cycle} " * 20})]

    written: dict[int, list[list[str]]] = {ba: [], bb: []}

    def add(ws: WorldStore, branch: int, cycle: int) -> None:
        written[branch].append(lines(str(branch), cycle))
        ws.add_step(branch, len(written[branch]), cycle, "x", written[branch][-1], None, cycle)

    add(wa, ba, 1)  # a sets the first dictionary
    add(wb, bb, 1)  # b packs against a's
    add(wa, ba, 2)  # a looks for the steady one: none yet
    assert c._zdict("world.step.steady") is None  # so does the reader
    add(wb, bb, 3)  # b sets it
    add(wa, ba, 4)  # a packs against b's, never setting its own
    add(wb, bb, 5)
    assert [json.loads(v)["agent"] for v, in _rows(tmp_path / "s.db", "SELECT value FROM meta WHERE key LIKE "
                                                  "'zdict.world.step%' ORDER BY key")] == [str(ba), str(bb)]
    for ws in (wa, wb, wc):
        for branch in (ba, bb):
            assert [row.lines for row in ws.steps(branch)] == written[branch]
    tags = [t for t, in _rows(tmp_path / "s.db", "SELECT substr(lines, 1, 1) FROM world_steps ORDER BY branch, step")]
    assert tags == [b"\x05", b"\x05", b"\x06", b"\x05", b"\x06", b"\x06"]
    for s in (a, b, c):
        s.close()


def test_two_writers_of_one_store_never_replace_a_cycle_dictionary(tmp_path, monkeypatch):
    """Two processes may record two runs of one store at once (each run has its own writer
    lock): a cycle dictionary, first or steady, is set once by whichever needs it first; the
    other packs against that one. Replacing it would leave the first writer's records unreadable."""
    from akh_tui.engine.store.codec import unpack

    monkeypatch.setattr(SessionStore, "STEADY_CYCLE", 3)
    a, b, c = (SessionStore(tmp_path / "s.db") for _ in range(3))

    def rec(who: str, cycle: int) -> str:
        return json.dumps({"type": "cycle", "cycle": cycle, "run": who, "note": f"{who} cycle {cycle} " * 20})

    assert a._zdict("cycle") is None and a._zdict("cycle.steady") is None  # a looked before anyone set them
    packed = [(rec("b", 1), b._pack_cycle(rec("b", 1), 1)), (rec("a", 1), a._pack_cycle(rec("a", 1), 1)),
              (rec("a", 3), a._pack_cycle(rec("a", 3), 3)), (rec("b", 4), b._pack_cycle(rec("b", 4), 4))]
    keys = dict(_rows(tmp_path / "s.db", "SELECT key, value FROM meta WHERE key LIKE 'zdict.cycle%'"))
    assert json.loads(keys["zdict.cycle"])["run"] == "b" and json.loads(keys["zdict.cycle.steady"])["run"] == "a"
    for text, (blob, crc) in packed:
        for reader in (a, b, c):
            assert unpack(blob, crc, reader._dicts(blob)) == text
    for s in (a, b, c):
        s.close()
