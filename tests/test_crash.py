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
    zoo = __import__("akh_tui.engine.scenario", fromlist=["x"]).bundled_data_dir()
    scenario.write_text(
        f'name = "endless"\nkg = ["{zoo}/kg/zoo.tsv"]\nrules = ["{zoo}/rules/biology.toml"]\n'
        '[[goals]]\ndescription = "Explore the ocean and find plankton"\ncriteria = "plankton"\n'
        "[config]\nstall_threshold = 1000000\n"
    )
    env = dict(os.environ, AKH_TUI_DATA=str(data))
    proc = subprocess.Popen(
        [sys.executable, "-m", "akh_tui.cli", "agent", "run", "--scenario", str(scenario), "--max-cycles", "100000", "--json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    db = data / "session.db"
    deadline = time.monotonic() + 60
    committed = 0
    while time.monotonic() < deadline and committed < 40:
        time.sleep(0.2)
        if db.exists():
            try:
                con = sqlite3.connect(db)
                committed = con.execute("SELECT COALESCE(MAX(cycle), 0) FROM cycles").fetchone()[0]
                con.close()
            except sqlite3.Error:
                pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert committed >= 40, proc.stderr.read().decode()
    con = sqlite3.connect(db)
    last = con.execute("SELECT MAX(cycle) FROM cycles").fetchone()[0]
    state_cycle = json.loads(con.execute("SELECT payload FROM state").fetchone()[0])["cycle"]
    con.close()
    assert state_cycle == last  # the state and the cycle record were committed together
    out = subprocess.run(
        [sys.executable, "-m", "akh_tui.cli", "agent", "resume", "--max-cycles", "3", "--json"],
        env=env, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    resumed = json.loads(out.stdout)
    assert [c["cycle"] for c in resumed["cycles"]] == [last + 1, last + 2, last + 3]
