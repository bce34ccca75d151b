"""Issue 23, row 4: every store read is checksummed (the runs metadata, branches, the
dictionary, the graph rows and inputs as well as the records); a damaged record is reported by
run, branch and cycle with exit 2; `agent resume` / `agent run` verify the snapshot and the
records after it and refuse to append to a damaged branch, or to one `sessions check` marked
damaged, and say how to go on (fork before the damage). The fuzz at the end flips bits in a
real store and runs every reading command in-process."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import random
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from akh_tui.cli import root as cli_mod
from akh_tui.engine.store import session as session_mod
from akh_tui.engine.store.schema import SCHEMA_VERSION
from akh_tui.engine.paths import Locations
from akh_tui.engine import Run

DATA = Path(__file__).resolve().parents[2] / "data"
GOAL = "Explore the ocean and find plankton"


def _db(tmp_path: Path) -> Path:
    return tmp_path / "data" / "session.db"


def _flip_in(db: Path, blob: bytes | str, bit: int = 0x04) -> None:
    """Flip one bit in the middle of a stored value (found by its bytes in the file)."""
    raw = bytearray(db.read_bytes())
    needle = blob.encode() if isinstance(blob, str) else blob
    at = raw.find(needle)
    assert at > 0 and raw.find(needle, at + 1) < 0
    raw[at + len(needle) // 2] ^= bit
    db.write_bytes(bytes(raw))


def _value(db: Path, sql: str, args: tuple = ()):
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return con.execute(sql, args).fetchone()[0]
    finally:
        con.close()


def _cycles(db: Path, branch: int = 1) -> int:
    return _value(db, "SELECT COUNT(*) FROM cycles WHERE branch=?", (branch,))


def _one_line_damage(proc, *words: str) -> None:
    assert "Traceback" not in proc.stderr
    text = " ".join(proc.stderr.split())  # rich wraps a long line at the terminal's width
    assert text.startswith("error: ") and text.count("error: ") == 1, proc.stderr
    for w in words:
        assert w in text, (w, text)


# ---- the rows beside the records ------------------------------------------------------------
def test_damaged_run_metadata_is_reported_by_run_never_a_traceback(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "5")
    db = _db(tmp_path)
    meta = _value(db, "SELECT meta FROM runs WHERE id=1")
    _flip_in(db, meta[:40], bit=0x40)  # a key's letter turned into another: still a string, JSON broken or changed
    before = db.read_bytes()
    for argv in (("sessions", "list"), ("sessions", "show", "1"), ("sessions", "export", "1"),
                 ("agent", "resume", "--max-cycles", "2"), ("agent", "run", "--goals", GOAL, "--max-cycles", "2")):
        proc = cli(*argv, check_rc=2)
        _one_line_damage(proc, "metadata of run 1")
    checked = cli("sessions", "check", check_rc=2)
    assert "run 1: run metadata" in checked.stderr
    # damage no branch owns: once check found it, not even a new run is written into the store
    _one_line_damage(cli("agent", "run", "--fresh", "--goals", GOAL, "--max-cycles", "2", check_rc=2),
                     "found this store damaged")
    assert db.read_bytes() == before  # reported, never replaced or appended to


def test_a_dictionary_of_another_type_is_damage_not_a_traceback(cli, tmp_path):
    """What a flipped serial type does to the meta row: an integer where the text was."""
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "5")
    db = _db(tmp_path)
    con = sqlite3.connect(db)
    con.execute("UPDATE meta SET value=12345 WHERE key='zdict.cycle'")
    con.commit()
    con.close()
    for argv in (("sessions", "export", "1"), ("agent", "resume", "--max-cycles", "2")):
        _one_line_damage(cli(*argv, check_rc=2), "store metadata 'zdict.cycle'")
    assert _cycles(db) == 5


def test_a_damaged_branch_row_or_graph_row_or_input_is_named(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "30")
    cli("agent", "fork", "--at", "12", "--name", "bold", "--set", "explorer=0.9")
    cli("agent", "resume", "--max-cycles", "3")
    db = _db(tmp_path)
    work = tmp_path / "work"
    shutil.copytree(tmp_path / "data", work)
    # the fork point of branch bold, a number in its row: still valid JSON once changed
    con = sqlite3.connect(work / "session.db")
    con.execute("UPDATE branches SET fork_sizes = replace(fork_sizes, '[', '[1') WHERE name='bold'")
    con.commit()
    con.close()
    proc = cli("sessions", "export", "1", "--branch", "bold", data_dir=work, check_rc=2)
    _one_line_damage(proc, "branch row 2", "branch 'bold'")
    # an input (the fork's edits) of branch bold: replayed on every rewind
    shutil.rmtree(work)
    shutil.copytree(tmp_path / "data", work)
    con = sqlite3.connect(work / "session.db")
    con.execute("UPDATE inputs SET payload = replace(payload, '0.9', '0.8')")
    con.commit()
    con.close()
    checked = cli("sessions", "check", data_dir=work, check_rc=2)
    assert "run 1, branch 'bold': user inputs: cycle(s) 12" in checked.stderr
    assert _cycles(db, 2) == 3


# ---- resume verifies what it restores from -------------------------------------------------
def test_resume_and_run_refuse_a_record_damaged_after_the_snapshot_and_say_how_to_fork(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "30")  # snapshots at 0 and 25; head at 30
    db = _db(tmp_path)
    _flip_in(db, _value(db, "SELECT record FROM cycles WHERE branch=1 AND cycle=27"))
    before = db.read_bytes()
    for argv in (("agent", "resume", "--max-cycles", "3"), ("agent", "run", "--goals", GOAL, "--max-cycles", "3")):
        proc = cli(*argv, check_rc=2)
        _one_line_damage(proc, "run 1, branch 'main' is damaged", "cycle 27", "Nothing was appended",
                         "fork before the damage: `akh-tui agent fork --at 26 --name NAME`")
    assert db.read_bytes() == before
    # the advice works: a branch forked before the damage goes on; main is left as it was
    cli("agent", "fork", "--at", "26", "--name", "safe")
    cli("agent", "resume", "--max-cycles", "2")
    listed = json.loads(cli("sessions", "list", "--json").stdout)[0]["branches"]
    assert {b["name"]: b["last_cycle"] for b in listed} == {"main": 30, "safe": 28}


def test_a_damaged_head_is_refused_and_the_fork_advice_names_its_cycle(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "12")
    db = _db(tmp_path)
    _flip_in(db, _value(db, "SELECT payload FROM heads WHERE branch=1"))
    proc = cli("agent", "resume", "--max-cycles", "3", check_rc=2)
    _one_line_damage(proc, "head state at cycle 12", "`akh-tui agent fork --at 12 --name NAME`")
    cli("agent", "fork", "--at", "12", "--name", "again")
    cli("agent", "resume", "--max-cycles", "1")
    assert _cycles(db, 1) == 12 and _cycles(db, 2) == 1


def test_damage_that_sessions_check_found_is_refused_by_writers_until_check_passes(cli, tmp_path):
    """Cycle 5 is before the snapshot resume starts from (25): resume does not read it (its
    cost must not grow with the run), but once `sessions check` found it, no writer appends."""
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "30")
    db = _db(tmp_path)
    blob = _value(db, "SELECT record FROM cycles WHERE branch=1 AND cycle=5")
    pristine = db.read_bytes()
    _flip_in(db, blob)
    checked = cli("sessions", "check", check_rc=2)
    assert "run 1, branch 'main': cycle records: cycle(s) 5" in checked.stderr
    assert "writers refuse the damaged branches" in " ".join(checked.stderr.split())
    before = db.read_bytes()
    for argv in (("agent", "resume", "--max-cycles", "3"), ("agent", "run", "--goals", GOAL, "--max-cycles", "3"),
                 ("agent", "fork", "--at", "10", "--name", "late")):
        _one_line_damage(cli(*argv, check_rc=2), "run 1, branch 'main' is damaged", "sessions check",
                         "`akh-tui agent fork --at 4 --name NAME`")
    assert db.read_bytes() == before
    cli("agent", "fork", "--at", "4", "--name", "early")  # before the damage: allowed, main untouched
    cli("agent", "resume", "--max-cycles", "2")
    assert _cycles(db, 1) == 30 and _value(db, "SELECT MAX(cycle) FROM cycles WHERE branch=2") == 6
    # the store restored from a copy: check clears the mark, main goes on
    shutil.copy(tmp_path / "data" / "session.db", tmp_path / "damaged.db")
    db.write_bytes(pristine)
    cli("sessions", "check")
    assert not (tmp_path / "data" / "session.db.damaged.json").exists()
    cli("agent", "resume", "--max-cycles", "2")
    assert _cycles(db, 1) == 32


def test_explain_reports_damage_in_one_line(cli, tmp_path):
    cli("agent", "run", "--goals", GOAL, "--max-cycles", "30")
    db = _db(tmp_path)
    _flip_in(db, _value(db, "SELECT record FROM cycles WHERE branch=1 AND cycle=28"))
    _one_line_damage(cli("agent", "explain", "--goal", "1", check_rc=2), "cycle 28 of run 1, branch 'main'")


def test_the_workbench_resume_reports_a_damaged_branch_and_writes_nothing(tmp_path, monkeypatch):
    from akh_tui.tui.app import Workbench, run as run_workbench

    def opened(self, *a, **kw):
        raise AssertionError("the workbench went on with a damaged branch")

    monkeypatch.setattr(Workbench, "run", opened)

    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = Run.start(loc, "zoo", goals=[GOAL])
    r.run_cycles(30)
    r.close()
    db = _db(tmp_path)
    _flip_in(db, _value(db, "SELECT record FROM cycles WHERE branch=1 AND cycle=29"))
    before = db.read_bytes()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run_workbench(locations=loc, resume=True) == 2
    assert "cycle 29" in out.getvalue() and "agent fork --at 28" in out.getvalue()
    assert db.read_bytes() == before


# ---- the previous schema ---------------------------------------------------------------------
def test_a_schema_3_store_is_read_as_it_is_and_migrated_on_write(cli, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    db = data / "session.db"
    db.write_bytes(gzip.decompress((DATA / "schema3_session.db.gz").read_bytes()))
    old_main = gzip.decompress((DATA / "schema3_main.jsonl.gz").read_bytes()).decode()
    old_bold = gzip.decompress((DATA / "schema3_bold.jsonl.gz").read_bytes()).decode()
    before = db.read_bytes()
    assert cli("sessions", "export", "1").stdout == old_main
    assert "not checked" in cli("sessions", "check").stdout  # its runs, branches, graph rows: no checksum yet
    assert db.read_bytes() == before
    cli("agent", "resume", "--max-cycles", "3")  # the current branch, bold
    assert _value(db, "SELECT value FROM meta WHERE key='schema'") == SCHEMA_VERSION
    assert _value(db, "SELECT COUNT(*) FROM runs WHERE crc IS NULL") == 0
    assert _value(db, "SELECT COUNT(*) FROM triples WHERE crc IS NULL") == 0
    assert cli("sessions", "export", "1").stdout == old_main
    bold = [x for x in cli("sessions", "export", "1", "--branch", "bold").stdout.splitlines() if '"type":"cycle"' in x]
    old = [x for x in old_bold.splitlines() if '"type":"cycle"' in x]
    assert bold[:len(old)] == old and len(bold) == len(old) + 3
    checked = cli("sessions", "check")
    assert "not checked" not in checked.stdout and "the store is whole" in checked.stdout


# ---- the fuzz: bit flips in a real store, every reading command in-process --------------------
COMMANDS = (
    ("sessions", "list"), ("sessions", "show", "1"), ("sessions", "export", "1", "-o", "{tmp}/out.jsonl"),
    ("sessions", "search", "1", "ocean"), ("agent", "explain", "--goal", "1"), ("sessions", "check"),
    ("agent", "resume", "--max-cycles", "2"), ("agent", "run", "--goals", GOAL, "--max-cycles", "2"),
)
DAMAGE_WORDS = ("damaged", "cannot be read", "malformed", "could not record", "not an akh-tui session store",
                "another version")


def _main(argv: list[str], data: Path) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = cli_mod.main([*argv, "--data-dir", str(data)])
    return rc, err.getvalue()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("fuzzstore")
    r = Run.start(Locations(tmp / "data", tmp / "config.toml"), "zoo", goals=[GOAL])
    r.run_cycles(30)
    r.close()
    return tmp / "data"


def test_bit_flips_give_named_damage_reports_never_a_traceback_nor_an_append(pristine, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    rng = random.Random(23)
    size = (pristine / "session.db").stat().st_size
    deadline = time.monotonic() + 60  # a bound, not a sleep: each trial is a fraction of a second
    trials = refused = 0
    for trial in range(10):
        data = tmp_path / f"t{trial}"
        shutil.copytree(pristine, data)
        db = data / "session.db"
        raw = bytearray(db.read_bytes())
        for _ in range(rng.choice((1, 2, 5, 10, 100))):
            at = rng.randrange(100, size)  # past the file header: its damage is test_store_faults's
            raw[at] ^= 1 << rng.randrange(8)
        db.write_bytes(bytes(raw))
        whole = None
        for argv in COMMANDS:
            before = db.read_bytes() if argv[0] == "agent" and whole is False else None
            argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
            rc, err = _main(argv, data)  # any exception but a reported error fails the test here
            assert rc in (0, 2), (trial, argv, rc, err)
            if rc == 2:
                assert any(w in err for w in DAMAGE_WORDS), (trial, argv, err)
            if argv[:2] == ["sessions", "check"]:
                whole = rc == 0
            if before is not None:  # check found damage: no writer may have appended
                refused += 1
                assert rc == 2, (trial, argv, err)
                wal = db.with_name(db.name + "-wal")
                assert db.read_bytes() == before and (not wal.exists() or wal.stat().st_size == 0)
        trials += 1
        assert time.monotonic() < deadline
    assert trials == 10 and refused > 0


def test_the_workbench_shows_a_damaged_branch_and_stays_up(workbench, tmp_path):
    from tests.helpers import drive

    app = workbench()

    async def script(app, pilot):
        app.ctl.run_cycles(30)  # until zoo's goals are done
        last = app.ctl.cycle
        assert last > 5
        app.ctl.fork(3, "b")
        con = sqlite3.connect(_db(tmp_path))  # another connection damages main's last record (WAL: the app sees it)
        con.execute("UPDATE cycles SET record = substr(record, 1, 40) || x'00' || substr(record, 42) "
                    "WHERE branch = 1 AND cycle = ?", (last,))
        con.commit()
        con.close()
        await pilot.press("b")  # the branches; the cursor is on b, the current one
        await pilot.press("up", "enter")  # switch to main
        await pilot.pause()
        assert type(app.screen).__name__ == "BranchesScreen"  # a refusal is shown in the dialog, which stays
        shown = " ".join(" ".join(str(w.render()).split()) for w in app.screen.query("Static"))
        assert "damaged" in shown and f"cycle {last}" in shown and f"agent fork --at {last - 1}" in shown
        await pilot.press("escape")
        assert app.ctl.branch_name == "b" and app.ctl.cycle == 3  # still on b; it goes on
        app.ctl.run_cycles(1)
        assert app.ctl.cycle == 4
        app.main_last = last

    drive(app, script)
    assert _value(_db(tmp_path), "SELECT MAX(cycle) FROM cycles WHERE branch=1") == app.main_last
