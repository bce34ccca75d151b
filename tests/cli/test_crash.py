"""A killed run loses at most the cycle in flight; resume continues from the last commit."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time


def test_kill_9_mid_run_then_resume(tmp_path):
    data = tmp_path / "data"
    scenario = tmp_path / "endless.toml"
    zoo = __import__("akh_tui.engine.runs.scenario", fromlist=["x"]).bundled_data_dir()
    scenario.write_text(
        f'name = "endless"\nkg = ["{zoo}/kg/zoo.tsv"]\nrules = ["{zoo}/rules/biology.toml"]\n'
        '[[goals]]\ndescription = "Explore the ocean and find plankton"\ncriteria = "plankton"\n'
        "[config]\nstall_threshold = 1000000\n"
    )
    env = dict(os.environ, AKH_TUI_DATA=str(data))

    def cli(*argv, timeout=120):
        out = subprocess.run([sys.executable, "-m", "akh_tui.cli", *argv], env=env, capture_output=True, text=True,
                             timeout=timeout)
        assert out.returncode == 0, out.stderr
        return out.stdout

    # main runs 400 cycles; a branch forked after cycle 10 with no edits must reproduce them
    cli("agent", "run", "--scenario", str(scenario), "--max-cycles", "400", "--json")
    cli("agent", "fork", "--at", "10", "--name", "again")
    proc = subprocess.Popen(
        [sys.executable, "-m", "akh_tui.cli", "agent", "resume", "--max-cycles", "100000", "--json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    db = data / "session.db"
    deadline = time.monotonic() + 60
    committed = 0
    while time.monotonic() < deadline and committed < 40:
        time.sleep(0.1)
        try:
            con = sqlite3.connect(db)
            committed = con.execute("SELECT COALESCE(MAX(cycle), 0) FROM cycles WHERE branch=2").fetchone()[0]
            con.close()
        except sqlite3.Error:
            pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 40 <= committed, proc.stderr.read().decode()
    con = sqlite3.connect(db)
    last = con.execute("SELECT MAX(cycle) FROM cycles WHERE branch=2").fetchone()[0]
    head = con.execute("SELECT cycle FROM heads WHERE branch=2").fetchone()[0]
    assert head == 10  # written at the fork; the killed process never checkpointed: resume replays
    assert last < 397, "the run finished before it was killed: nothing was tested"
    out = cli("agent", "resume", "--max-cycles", "3", "--json", timeout=60)
    resumed = json.loads(out)
    assert [c["cycle"] for c in resumed["cycles"]] == [last + 1, last + 2, last + 3]
    # ... and the branch, killed and resumed, is still the original run cycle for cycle
    con.close()
    # (compared as records: the bytes differ where a branch was deflated against the store's
    # steady-state dictionary and the other was written before there was one)
    from akh_tui.engine.store.session import SessionStore

    store = SessionStore(db, readonly=True)
    try:
        rows = lambda b: [store.record(b, c) for c in range(11, last + 4)]
        assert rows(2) == rows(1) and all(r is not None for r in rows(2))
    finally:
        store.close()
