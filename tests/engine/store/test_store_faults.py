"""The session store on a bad day (issue 17, items 7-10): two writers, a failed commit (disk
full), the write-ahead log deleted mid-run, a flipped bit, a cut or empty file, a read-only
file system, and a store written by the previous version (schema 2)."""

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from akh_tui.engine.store import session as session_mod
from akh_tui.engine.store.schema import SCHEMA_VERSION
from akh_tui.engine.paths import Locations
from akh_tui.engine.runs.sessions import Sessions
from akh_tui.engine import Run, StoreBusy, StoreDamaged, StoreLost, StoreWriteError
from akh_tui.engine.store.trace import read_trace
from tests.helpers import run_on_read_only

DATA = Path(__file__).resolve().parents[2] / "data"
GOAL = "Explore the ocean and find plankton"


def _locations(tmp_path: Path) -> Locations:
    return Locations(tmp_path / "data", tmp_path / "config.toml")


def _holder(tmp_path: Path) -> subprocess.Popen:
    """Another process writing run 1 of the data dir: started, then waiting on its stdin."""
    code = (
        "import sys; from pathlib import Path; from akh_tui.engine import Run, Locations\n"
        f"loc = Locations(Path({str(tmp_path / 'data')!r}), Path({str(tmp_path / 'config.toml')!r}))\n"
        f"r = Run.start(loc, 'zoo', goals=[{GOAL!r}]); r.run_cycles(5)\n"
        "print('ready', flush=True); sys.stdin.readline(); r.run_cycles(3); r.close()\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, "holder-marker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _release(proc: subprocess.Popen) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0


# ---- item 7: one writer per run ------------------------------------------------------------
def test_a_second_cli_writer_is_refused_naming_the_holder_and_readers_work(cli, tmp_path):
    proc = _holder(tmp_path)
    try:
        refused = cli("agent", "resume", "--max-cycles", "3", check_rc=2)
        assert "Traceback" not in refused.stderr
        assert f"pid {proc.pid}" in refused.stderr and "holder-marker" in refused.stderr
        assert "one writer per run" in refused.stderr
        # `agent run` of the same settings would continue run 1: refused the same way
        again = cli("agent", "run", "--goals", GOAL, "--max-cycles", "3", check_rc=2)
        assert f"pid {proc.pid}" in again.stderr
        # readers always work, while it writes
        listed = json.loads(cli("sessions", "list", "--json").stdout)
        assert listed[0]["branches"][0]["last_cycle"] == 5
        cli("sessions", "show", "1")
        assert cli("sessions", "export", "1").stdout.count('"type":"cycle"') == 5
        # a new run of its own is not the holder's business
        cli("agent", "run", "--fresh", "--goals", GOAL, "--max-cycles", "2")
    finally:
        _release(proc)
    # the holder finished its cycles on its own: nothing of the other writer mixed in
    exported = cli("sessions", "export", "1").stdout
    cycles = [json.loads(line)["cycle"] for line in exported.splitlines() if '"type":"cycle"' in line]
    assert cycles == list(range(1, 9))
    cli("agent", "resume", "--max-cycles", "1")  # the lock went with its holder


def test_cli_refused_while_the_workbench_holds_the_run(workbench, cli_process, tmp_path):
    cli = cli_process  # the lock is the workbench process's: the CLI must be another process
    app = workbench()
    app.ctl.step()
    try:
        refused = cli("agent", "resume", "--max-cycles", "2", check_rc=2)
        assert f"pid {os.getpid()}" in refused.stderr
        assert json.loads(cli("sessions", "list", "--json").stdout)[0]["branches"][0]["last_cycle"] == 1
    finally:
        app.ctl.close()
    cli("agent", "resume", "--max-cycles", "2")


def test_a_lock_left_by_a_killed_writer_blocks_nobody(cli, tmp_path):
    proc = _holder(tmp_path)
    proc.kill()
    proc.wait(timeout=30)
    cli("agent", "resume", "--max-cycles", "2")


def test_deleting_a_run_someone_writes_is_refused(cli, tmp_path):
    proc = _holder(tmp_path)
    try:
        refused = cli("sessions", "delete", "1", check_rc=2)
        assert f"pid {proc.pid}" in refused.stderr
    finally:
        _release(proc)


# ---- item 8: a failed commit ---------------------------------------------------------------
class _FullDisk:
    """The store's connection, with every commit failing as on a full disk while `full` is set:
    COMMIT, and a write outside a transaction (a cycle that writes only its record is one
    INSERT, committed by SQLite itself)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.full = True
        self.failed = 0

    def execute(self, sql, *args):
        autocommit = not self._db.in_transaction and sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
        if self.full and (sql == "COMMIT" or autocommit):
            self.failed += 1
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._db, name)


def _reference(tmp_path: Path, cycles: int) -> list[dict]:
    r = Run.start(Locations(tmp_path / "ref", tmp_path / "config.toml"), "zoo", goals=[GOAL])
    try:
        r.run_cycles(cycles)
        return r.records()
    finally:
        r.close()


def test_a_failed_commit_keeps_engine_and_store_together_and_continuing_works(tmp_path):
    expected = _reference(tmp_path, 40)
    r = Run.start(_locations(tmp_path), "zoo", goals=[GOAL])
    seen: list[int] = []
    r.subscribe(lambda item: item.get("type") == "cycle" and seen.append(item["cycle"]))
    r.run_cycles(12)
    disk = _FullDisk(r.store.db)
    r.store.db = disk  # type: ignore[assignment]
    for _ in range(3):  # Continue, again and again, while the disk is full
        with pytest.raises(StoreWriteError) as err:
            r.step()
        assert "cycle 13 could not be recorded" in str(err.value) and "disk is full" in str(err.value)
        assert "paused at cycle 12" in str(err.value)
        assert r.cycle == 12 and r.store.last_cycle(r.store.current()) == 12
    # a user action between cycles that cannot be recorded is not kept either
    goals_before = len(r.goals())
    with pytest.raises(StoreWriteError):
        r.add_goal("Find the whale")
    assert len(r.goals()) == goals_before
    assert seen == list(range(1, 13))  # the unrecorded cycle never reached the screen
    disk.full = False  # space freed
    r.run_cycles(28)
    assert r.records() == expected  # as if the disk had never been full
    r.close()
    again = Run.resume(_locations(tmp_path))
    assert again.cycle == expected[-1]["cycle"] > 13
    again.add_goal("Find the whale")
    again.run_cycles(1)  # resumable and rewindable
    again.rewind(20)
    again.close()


def test_cli_stops_with_exit_2_when_the_disk_fills_and_continues_after(tmp_path):
    """A real small file system (tmpfs in a user namespace) that fills up mid-run."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("no user namespaces here to mount a small file system")
    mnt = tmp_path / "small"
    mnt.mkdir()
    script = f"""
set -u
mount -t tmpfs -o size=4m tmpfs {mnt} || exit 99
export AKH_TUI_DATA={mnt}/data
P="{sys.executable} -m akh_tui.cli"
$P agent run --goals "{GOAL}" --max-cycles 5 >/dev/null || exit 98
dd if=/dev/zero of={mnt}/pad bs=1k count=256 2>/dev/null
dd if=/dev/zero of={mnt}/filler bs=1k 2>/dev/null  # until the disk is full
rm {mnt}/pad  # 256 KB left: the run fills them up
$P agent resume --max-cycles 100000 > {tmp_path}/out1 2> {tmp_path}/err1; echo $? > {tmp_path}/rc1
$P sessions list --json > {tmp_path}/list1 2>&1
rm {mnt}/filler
$P agent resume --max-cycles 5 --json > {tmp_path}/out2 2> {tmp_path}/err2; echo $? > {tmp_path}/rc2
$P sessions export 1 > {tmp_path}/export 2>&1
"""
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    if proc.returncode == 99:
        pytest.skip("tmpfs cannot be mounted here")
    assert proc.returncode == 0, proc.stderr
    err1 = (tmp_path / "err1").read_text()
    assert (tmp_path / "rc1").read_text().strip() == "2", err1
    assert "Traceback" not in err1 and "could not be recorded" in err1
    last = json.loads((tmp_path / "list1").read_text())[0]["branches"][0]["last_cycle"]
    assert last >= 5
    assert (tmp_path / "rc2").read_text().strip() == "0", (tmp_path / "err2").read_text()
    out2 = json.loads((tmp_path / "out2").read_text())
    assert [c["cycle"] for c in out2["cycles"]] == list(range(last + 1, last + 6))
    exported = [json.loads(x) for x in (tmp_path / "export").read_text().splitlines()]
    assert [x["cycle"] for x in exported if x["type"] == "cycle"] == list(range(1, last + 6))


def test_the_workbench_shows_a_failed_commit_pauses_and_continues_after(workbench):
    import asyncio

    from akh_tui.tui.dialogs import ErrorScreen

    app = workbench()

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            await pilot.press("space")
            assert app.ctl.cycle == 1
            disk = _FullDisk(app.ctl.store.db)
            app.ctl.store.db = disk
            await pilot.press("space")
            await pilot.pause()
            assert isinstance(app.screen, ErrorScreen) and not app.running
            assert "could not record" in app.screen._title and "disk is full" in app.screen._detail
            assert app.ctl.cycle == 1 and app.ctl.store.last_cycle(app.ctl.store.current()) == 1
            await pilot.press("escape")
            disk.full = False
            await pilot.press("space")
            assert app.ctl.cycle == 2 and app.ctl.store.last_cycle(app.ctl.store.current()) == 2

    asyncio.run(main())
    app.ctl.close()


# ---- item 9: the write-ahead log deleted mid-run --------------------------------------------
def test_deleting_the_wal_mid_run_is_said_and_every_reported_cycle_is_durable(tmp_path):
    loc = _locations(tmp_path)
    r = Run.start(loc, "zoo", goals=[GOAL])
    reported: list[int] = []
    r.subscribe(lambda item: item.get("type") == "cycle" and reported.append(item["cycle"]))
    r.run_cycles(30)
    (loc.session_db.parent / "session.db-wal").unlink()
    with pytest.raises(StoreLost) as err:
        r.run_cycles(30)
    assert "write-ahead log session.db-wal was deleted" in str(err.value)
    with pytest.raises(StoreWriteError):  # no more writes into a log nobody can find
        r.step()
    r.close()
    s = Sessions(loc)
    try:
        assert s.store.last_cycle(1) == reported[-1] == 31
        assert [x["cycle"] for x in s.store.records(1)] == reported
    finally:
        s.close()
    again = Run.resume(loc)
    assert again.cycle == 31
    again.run_cycles(2)
    again.close()


# ---- item 10: damage ------------------------------------------------------------------------
def _stored_blob(db: Path, cycle: int) -> bytes:
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return con.execute("SELECT record FROM cycles WHERE branch=1 AND cycle=?", (cycle,)).fetchone()[0]
    finally:
        con.close()


def test_a_flipped_bit_in_a_record_is_reported_with_run_branch_and_cycle(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "30")
    db = tmp_path / "data" / "session.db"
    blob = _stored_blob(db, 17)
    raw = bytearray(db.read_bytes())
    at = raw.find(blob)
    assert at > 0 and raw.find(blob, at + 1) < 0
    raw[at + len(blob) // 2] ^= 0x04  # one bit, in the middle of cycle 17's record
    db.write_bytes(bytes(raw))
    before = db.read_bytes()
    exported = cli("sessions", "export", "1", "-o", "out.jsonl", check_rc=2)
    assert "Traceback" not in exported.stderr
    assert "cycle 17 of run 1, branch 'main'" in exported.stderr and "checksum" in exported.stderr
    checked = cli("sessions", "check", check_rc=2)
    assert "run 1, branch 'main': cycle records: cycle(s) 17" in checked.stderr
    shown = cli("sessions", "search", "1", "ocean", check_rc=2)  # words: every record is read
    assert "cycle 17" in shown.stderr
    assert db.read_bytes() == before  # read-only commands wrote nothing


def test_an_empty_store_is_reported_and_left_empty(cli, tmp_path):
    db = tmp_path / "data" / "session.db"
    db.parent.mkdir(parents=True)
    db.write_bytes(b"")
    for argv in (("sessions", "list"), ("sessions", "show", "1"), ("agent", "run", "--max-cycles", "2"),
                 ("agent", "resume")):
        proc = cli(*argv, check_rc=2)
        assert "Traceback" not in proc.stderr
        assert "empty (0 bytes)" in proc.stderr or "no session" in proc.stderr, proc.stderr
    assert db.stat().st_size == 0
    assert sorted(p.name for p in db.parent.iterdir()) == ["session.db"]


def test_a_store_cut_by_one_byte_is_said_clearly(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "10")
    db = tmp_path / "data" / "session.db"
    os.truncate(db, db.stat().st_size - 1)
    for argv in (("agent", "resume", "--max-cycles", "2"), ("agent", "run", "--goals", GOAL), ("sessions", "list")):
        proc = cli(*argv, check_rc=2)
        assert "Traceback" not in proc.stderr
        assert "cut short" in proc.stderr and "left untouched" in proc.stderr


def test_read_only_commands_write_nothing(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "8")
    data = tmp_path / "data"
    files = sorted(p.name for p in data.iterdir())
    before = (data / "session.db").read_bytes()
    cli("sessions", "list")
    cli("sessions", "show", "1")
    cli("sessions", "export", "1", "-o", str(tmp_path / "t.jsonl"))
    cli("sessions", "search", "1", "veto")
    assert (data / "session.db").read_bytes() == before
    assert sorted(p.name for p in data.iterdir()) == files  # not even a -wal or -shm


def test_sessions_commands_work_on_a_read_only_file_system(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "8")
    proc = run_on_read_only(tmp_path / "data", f"""
$P sessions list --json || exit 1
$P sessions show 1 >/dev/null || exit 2
$P sessions export 1 -o {tmp_path}/ro.jsonl || exit 3
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])[0]["branches"][0]["last_cycle"] == 8
    assert len(read_trace(tmp_path / "ro.jsonl").cycles) == 8


def test_opening_runs_no_full_integrity_scan(tmp_path, monkeypatch):
    """`sessions list` on a million cycles took minutes: a quick_check on every open."""
    r = Run.start(_locations(tmp_path), "zoo", goals=[GOAL])
    r.run_cycles(3)
    r.close()
    statements: list[str] = []
    real = sqlite3.connect

    def traced(*args, **kw):
        con = real(*args, **kw)
        con.set_trace_callback(statements.append)
        return con

    monkeypatch.setattr(session_mod.sqlite3, "connect", traced)
    s = Sessions(_locations(tmp_path))
    s.runs()
    s.close()
    assert statements and not [x for x in statements if "check" in x.lower()]


def test_export_reads_records_a_page_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(session_mod.SessionStore, "PAGE", 7)
    r = Run.start(_locations(tmp_path), "zoo", goals=[GOAL])
    r.run_cycles(30)
    r.close()
    s = Sessions(_locations(tmp_path))
    fetched: list[int] = []
    real = s.store._query
    s.store._query = lambda sql, args=(): (lambda rows: (fetched.append(len(rows)), rows)[1])(real(sql, args))
    out = tmp_path / "t.jsonl"
    assert s.export(1, "main", out) == 30
    s.close()
    assert max(fetched) <= 7 + 1  # pages of records (plus small lookups), never the whole branch
    assert [c["cycle"] for c in read_trace(out).cycles] == list(range(1, 31))


# ---- the store of an existing user (schema 2) ----------------------------------------------
def test_a_schema_2_store_is_read_as_it_is_and_migrated_on_write(cli, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    db = data / "session.db"
    db.write_bytes(gzip.decompress((DATA / "schema2_session.db.gz").read_bytes()))
    old_main = gzip.decompress((DATA / "schema2_main.jsonl.gz").read_bytes()).decode()
    old_bold = gzip.decompress((DATA / "schema2_bold.jsonl.gz").read_bytes()).decode()
    before = db.read_bytes()
    # read-only commands read it without migrating (or writing) anything
    assert cli("sessions", "export", "1").stdout == old_main
    hits = json.loads(cli("sessions", "search", "1", "veto", "--json").stdout)
    assert [h["cycle"] for h in hits] and all(h["vetoed"] for h in hits)
    assert db.read_bytes() == before
    # a writer migrates it in place; the old history reads the same, the run goes on
    cli("agent", "resume", "--max-cycles", "3")
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0] == SCHEMA_VERSION
    con.close()
    assert cli("sessions", "export", "1").stdout == old_main
    bold = cli("sessions", "export", "1", "--branch", "bold").stdout
    old_cycles = [line for line in old_bold.splitlines() if '"type":"cycle"' in line]
    new_cycles = [line for line in bold.splitlines() if '"type":"cycle"' in line]
    assert new_cycles[:len(old_cycles)] == old_cycles and len(new_cycles) == len(old_cycles) + 3
    assert json.loads(cli("sessions", "search", "1", "veto", "--json").stdout) == hits
    checked = cli("sessions", "check")
    assert "written before checksums" in checked.stdout


def test_a_run_of_a_bundled_scenario_opens_after_the_package_moved(tmp_path):
    """A stored run names its scenario by the path it was started from; a bundled scenario's
    path goes with each install (a new venv, a moved checkout). Gone, it reads as today's
    bundled file of that name; any other scenario file that is gone is named as missing."""
    from akh_tui.engine.errors import InputError
    from akh_tui.engine.runs.scenario import load_recorded_scenario

    moved = "/gone/site-packages/akh_tui/data/scenarios/solar.toml"
    assert load_recorded_scenario(moved).name == "solar"
    with pytest.raises(InputError) as err:
        load_recorded_scenario(str(tmp_path / "mine" / "solar.toml"))
    assert "scenario file not found" in str(err.value) and "mine" in str(err.value.file)
