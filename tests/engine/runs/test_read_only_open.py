"""Reading a run through the door without writing it (`Run.open_readonly`): `agent explain`,
`why`, `synthesize` and `recall` only read the run, so they work while another process (the
workbench, `agent run`) holds the run's writer's lock, write nothing, and work on a read-only
file system."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from akh_tui.engine.paths import Locations
from akh_tui.engine import Run, StoreWriteError
from tests.helpers import run_on_read_only


def _files(data: Path) -> dict[str, str]:
    """Every file under the data dir with the sha256 of its bytes (the store, its log, lock
    files, workspaces), except SQLite's -shm: that is the log's shared-memory index, where
    every reader of a live store marks what it reads (`sessions list` too). Read in another
    process: closing a file of the store here would drop this process's SQLite locks on it
    (POSIX record locks belong to the process), and the holder's log could then be lost."""
    code = ("import hashlib, json, sys; from pathlib import Path; d = Path(sys.argv[1]); "
            "print(json.dumps({str(p.relative_to(d)): '' if p.name.endswith('-shm') else "
            "hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob('*')) if p.is_file()}))")
    return json.loads(subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True, text=True,
                                     check=True, timeout=60).stdout)


def test_read_only_commands_work_while_another_process_holds_the_run(cli_process, tmp_path):
    cli = cli_process  # the writer's lock is held by another process: record locks belong to the process
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    holder = Run.start(loc, "solar")  # holds the writer's lock of run 1, as the workbench does
    try:
        holder.run_cycles(60)  # no head after cycle 0: a reader replays from the last snapshot
        last = holder.last_cycle()
        before = _files(loc.data_dir)
        assert "session.db-wal" in before  # the holder's cycles are in its log, read through it
        out = cli("agent", "explain", "--goal", "2").stdout
        assert "kg_query(phobos) would have returned it" in out
        # the state rebuilt in memory is the holder's live state
        assert json.loads(cli("agent", "explain", "--goal", "2", "--json").stdout) == \
            json.loads(json.dumps(holder.explain_goal(2)))
        why = json.loads(cli("agent", "why", "--cycle", str(last), "--json").stdout)
        assert why["chosen"] == holder.record(last)["decide"]["tool"]
        assert "mercury is-a planet" in cli("agent", "synthesize", "--goal", "8", "--grammar", "terse").stdout
        assert json.loads(cli("agent", "recall", "--query", "mars", "--top-k", "3", "--json").stdout) == \
            json.loads(json.dumps(holder.recall("mars", 3)))
        assert _files(loc.data_dir) == before  # not a byte written, no lock taken or renamed
        # a writer is still refused, naming this process: the readers changed nothing of that
        refused = cli("agent", "resume", "--max-cycles", "1", check_rc=2)
        assert "one writer per run" in " ".join(refused.stderr.split())  # wrapped: this test's command line is long
        holder.add_goal("Find the moons of jupiter")  # the holder goes on undisturbed
        holder.run_cycles(2)
        assert holder.last_cycle() == last + 2
    finally:
        holder.close()


def test_open_readonly_reads_a_branch_without_making_it_current(tmp_path):
    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = Run.start(loc, "zoo")
    r.run_cycles(8)
    r.fork(4, "bold", {"archetypes": {"explorer": 0.9}})
    r.run_cycles(3)
    r.switch("main")
    r.close()
    before = _files(loc.data_dir)
    ro = Run.open_readonly(loc, branch="bold")
    try:
        assert (ro.branch_name, ro.cycle) == ("bold", 7)
        assert ro.agent is not None and ro.agent.psyche.archetypes["explorer"] == pytest.approx(0.9)
        with pytest.raises(StoreWriteError):
            ro.step()  # to read, not to drive: the store refuses
    finally:
        ro.close(checkpoint=False)
    main = Run.open_readonly(loc)
    try:
        assert (main.branch_name, main.cycle) == ("main", 8)  # the store's current branch is untouched
    finally:
        main.close()  # even a checkpointing close writes nothing on a read-only store
    assert _files(loc.data_dir) == before


def test_explain_works_on_a_read_only_file_system(cli, tmp_path):
    cli("agent", "run", "--scenario", "solar", "--fresh", "--max-cycles", "30")
    proc = run_on_read_only(tmp_path / "data", """
$P agent explain --goal 2 || exit 1
$P agent why --cycle 3 >/dev/null || exit 2
$P agent recall --query mars --top-k 2 >/dev/null || exit 3
""")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "kg_query(phobos) would have returned it" in proc.stdout
