"""Sweeps: the sweep file, runs as Dask tasks (local cluster, external scheduler and workers),
faults (a killed worker, Ctrl-C, resume), determinism, the report and opening a run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from akh_tui.engine.sweep.cluster import run_sweep
from akh_tui.engine.errors import InputError
from akh_tui.engine.runs.scenario import build_agent, bundled_data_dir, load_scenario
from akh_tui.engine.sweep.file import load_sweep, run_task
from akh_tui.engine.sweep.store import SweepStore
from akh_tui.engine.store.trace import read_trace

ROOT = Path(__file__).resolve().parents[3]
DASK = Path(sys.executable).with_name("dask")

GRID = """
name = "zoo grid"
scenarios = ["zoo"]
seeds = { start = 0, stop = 3 }
max_cycles = 8
[axes]
archetypes.explorer = [0.5, 0.9]
archetypes.sage = [0.3, 0.5, 0.7]
"""


@pytest.fixture
def akh(capsys, monkeypatch, tmp_path):
    """`akh-tui ...` in this process (a subprocess costs seconds on a loaded machine):
    returns (exit code, stdout, stderr)."""
    from akh_tui.cli.root import main

    monkeypatch.setenv("AKH_TUI_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(list(args))
        out = capsys.readouterr()
        return rc, out.out, out.err

    return run


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def plain(rows: list[dict]) -> list[dict]:
    """Rows without wall time: what must be identical however the sweep ran."""
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in rows]


def stored(folder: Path) -> tuple[list[dict], dict[str, str]]:
    st = SweepStore(folder, create=False)
    try:
        rows = st.rows()
        return rows, {r["run_id"]: st.trace_text(r["run_id"]) for r in rows}
    finally:
        st.close()


def sequential(sweep) -> tuple[list[dict], dict[str, str]]:
    import zlib

    results = [run_task(t) for t in sweep.tasks()]
    return ([r["row"] for r in results], {r["row"]["run_id"]: zlib.decompress(r["trace"]).decode() for r in results})


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """The 2×3 grid × 3 seeds, and its rows and traces run one after another in this process."""
    d = tmp_path_factory.mktemp("grid")
    sweep = load_sweep(write(d, GRID))
    return sweep, *sequential(sweep)


# ---- the sweep file ---------------------------------------------------------------------------

BAD = [
    ('scenarios = ["zoo"]\nseeds = [1, 2, 1]\n', 2, "seeds[2]", "listed twice"),
    ('scenarios = ["nope"]\nseeds = [1]\n', 1, "scenarios[0]", "unknown scenario"),
    ('scenarios = ["zoo"]\nseeds = [1]\n[axes]\narchetypes.explorer = [0.5, 1.5]\n', 4, "axes.archetypes.explorer[1]", "[0, 1]"),
    ('scenarios = ["zoo"]\nseeds = [1]\n[axes]\narchetypes.wizard = [0.5]\n', 4, "axes.archetypes.wizard", "unknown archetype"),
    ('scenarios = ["zoo"]\nseeds = [1]\n[axes]\nshadow.nosuch = [true, false]\n', 4, "axes.shadow.nosuch", "no shadow pattern"),
    ('scenarios = ["zoo"]\nseeds = [1]\n[axes]\n\nconfig.stall_threshold = [3, -1]\n', 5, "axes.config.stall_threshold[1]", "non-negative"),
    ('scenarios = ["zoo"]\nseeds = [1]\n[axes]\nconfig.nosuch = [1]\n', 4, "axes.config.nosuch", "unknown config key"),
    ('scenarios = ["zoo"]\nseeds = { start = 0 }\n', 2, "seeds", "stop"),
    ('scenarios = ["zoo"]\nseeds = [0]\nmax_cycles = 0\n', 3, "max_cycles", "integer"),
    ('scenarios = ["zoo"]\nseeds = [0]\n[axes]\ndecider = ["llm"]\n', 4, "axes.decider[0]", "unknown decider"),
    ('scenarios = ["zoo"]\nseeds = [0]\n[axes]\npsyche = ["missing.toml"]\n', 4, "axes.psyche[0]", "not found"),
    ('scenarios = ["zoo"]\nseeds = [0]\n[axes]\narchetypes.sage = { min = 0.1, max = 0.9 }\n', 4, "axes.archetypes.sage", "samples"),
    ('scenarios = ["zoo"]\nseeds = [0]\nmax_cycle = 3\n', 3, "max_cycle", "unknown key"),
    ('scenarios = ["zoo"]\nseeds = [0]\n[axes]\nmood = [1]\n', 4, "axes.mood", "unknown axis"),
]


@pytest.mark.parametrize("text, line, field, words", BAD, ids=[b[2] for b in BAD])
def test_a_bad_sweep_file_names_its_file_line_and_field(tmp_path, text, line, field, words):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        load_sweep(path)
    e = err.value
    assert (e.file, e.line, e.field) == (str(path), line, field), str(e)
    assert words in e.message


def test_the_cli_refuses_a_bad_file_with_exit_2_and_counts_the_runs_of_a_good_one(tmp_path, akh):
    bad = write(tmp_path, BAD[2][0], "bad.toml")
    rc, out, err = akh("sweep", "run", str(bad))
    assert rc == 2 and f"{bad}:4: field 'axes.archetypes.explorer[1]'" in err.replace("\n", "")
    assert not (tmp_path / "bad").exists()  # nothing was created
    good = write(tmp_path, GRID, "good.toml")
    rc, out, err = akh("sweep", "run", str(good), "--check")
    assert rc == 0 and "18 run(s)" in out and "6 point(s) × 3 seed(s)" in out
    rc, out, err = akh("sweep", "run", str(good), "--scheduler", "tcp://127.0.0.1:9")  # nothing listens there
    assert rc == 2 and "--scheduler" in err and "cannot reach" in err
    rc, out, err = akh("sweep", "run", str(good), "--scheduler", "tcp://127.0.0.1", "--check")
    assert rc == 2 and "expected tcp://HOST:PORT" in err.replace("\n", " ")


@pytest.mark.parametrize("address, words", [
    ("http://127.0.0.1:8786", "must start with tcp:// or tls:// or ws:// or wss://"),
    ("tls://127.0.0.1", "names no port"),
    ("ws://127.0.0.1:99999", "Port out of range"),
    ("tcp://127.0.0.1:8786/status", "no user, path or query"),
    ("tcp://admin:hunter2@127.0.0.1:8786", "no user, path or query"),
    ("tcp://127.0.0.1 :8786", "whitespace"),
])
def test_a_malformed_scheduler_address_is_refused_before_anything_runs(tmp_path, akh, address, words):
    good = write(tmp_path, GRID, "good.toml")
    rc, out, err = akh("sweep", "run", str(good), "--scheduler", address, "--check")
    err = err.replace("\n", "")
    assert rc == 2 and "field '--scheduler'" in err and words in err, err
    assert "hunter2" not in err and "Traceback" not in err
    assert not (tmp_path / "good").exists()


def test_a_bare_host_and_port_is_a_tcp_scheduler_address(tmp_path, akh):
    good = write(tmp_path, GRID, "good.toml")
    assert akh("sweep", "run", str(good), "--scheduler", "127.0.0.1:8786", "--check")[0] == 0
    rc, _, err = akh("sweep", "run", str(good), "--scheduler", "tls://127.0.0.1:9")  # checked, then not reachable
    assert rc == 2 and "cannot reach the scheduler" in err


def test_random_samples_are_drawn_with_their_own_seed_and_ids_follow_the_settings(tmp_path):
    text = ('scenarios = ["zoo"]\nseeds = [0, 1]\nsamples = 4\nsample_seed = 9\n'
            '[axes]\narchetypes.sage = { min = 0.1, max = 0.9 }\ndecider = ["utility", "scripted"]\n')
    a = load_sweep(write(tmp_path, text)).tasks()
    b = load_sweep(write(tmp_path, text.replace("seeds = [0, 1]", "seeds = [1, 0]"), "b.toml")).tasks()
    assert len(a) == 8 and len({t.run_id for t in a}) == 8
    assert {t.run_id for t in a} == {t.run_id for t in b}  # a run's id is its settings, not its place
    assert all(0.1 <= t.setting("archetypes.sage") <= 0.9 for t in a)
    c = load_sweep(write(tmp_path, text.replace("sample_seed = 9", "sample_seed = 10"), "c.toml")).tasks()
    assert {t.settings for t in c} != {t.settings for t in a}


def test_axes_reach_the_run(tmp_path):
    """Each axis changes what the agent starts from: a turned-off veto no longer fires."""
    text = ('scenario = "shadow"\nseeds = [3]\nmax_cycles = 6\n[axes]\nshadow.destructive_action = [true, false]\n'
            'config.stall_threshold = [5]\narchetypes.explorer = [0.9]\n')
    on, off = (run_task(t)["row"] for t in load_sweep(write(tmp_path, text)).tasks())
    assert on["status"] == off["status"] == "ok"
    assert on["veto_counts"].get("destructive_action", 0) >= 1
    assert off["veto_counts"] == {} and off["tool_counts"].get("shell_exec", 0) >= 1
    header = json.loads(read_trace_text(run_task(load_sweep(write(tmp_path, text)).tasks()[0])).splitlines()[0])
    assert header["psyche"]["archetypes"]["explorer"] == 0.9


def read_trace_text(result: dict) -> str:
    import zlib

    return zlib.decompress(result["trace"]).decode()


# ---- what a worker sends back: bytes the client decodes and checks --------------------------------

def test_a_result_travels_as_bytes_and_decodes_to_the_same_row_and_trace(grid):
    from akh_tui.engine.sweep.wire import decode_result, worker_task

    sweep, rows, traces = grid
    task = sweep.tasks()[4]
    blob = worker_task(task)
    assert isinstance(blob, bytes)
    got = decode_result(task, blob)
    row = next(r for r in rows if r["run_id"] == task.run_id)
    assert plain([got["row"]]) == plain([row]) and read_trace_text(got) == traces[task.run_id]


def test_what_escapes_a_run_on_the_worker_comes_back_as_text_in_a_failed_row(grid, monkeypatch):
    """Not an exception object for the client to unpickle: its type and message, as text."""
    from akh_tui.engine.sweep import wire as sweepwire

    task = grid[0].tasks()[0]

    def leaves(task, bundles=None):
        raise SystemExit("a scenario's code called sys.exit")

    monkeypatch.setattr(sweepwire, "run_task", leaves)
    row = sweepwire.decode_result(task, sweepwire.worker_task(task))["row"]
    assert (row["status"], row["error"], row["run_id"]) == ("failed", "SystemExit: a scenario's code called sys.exit", task.run_id)


def _forged(blob: bytes, edit) -> bytes:
    """The worker's genuine result with its row edited (as a hostile worker could)."""
    import struct

    from akh_tui.engine.sweep.wire import MAGIC, encode_result

    head = len(MAGIC) + 8
    (n,) = struct.unpack(">Q", blob[len(MAGIC):head])
    row = json.loads(blob[head:head + n])
    edit(row)
    return encode_result({"row": row, "trace": blob[head + n:]})


FORGERIES = [
    ("another run's id", lambda r: r.update(run_id="000000000000"), "field 'run_id' is '000000000000', not this run's"),
    ("another seed", lambda r: r.update(seed=r["seed"] + 1), "field 'seed'"),
    ("a setting true for 1", lambda r: r["settings"].update({"archetypes.explorer": True}), "field 'settings'"),
    ("an unknown field", lambda r: r.update(note="hi"), "unknown field 'note'"),
    ("a missing outcome", lambda r: r.pop("cycles_run"), "field 'cycles_run' is missing"),
    ("a count as a bool", lambda r: r.update(vetoes=True), "field 'vetoes' must be a count"),
    ("a negative count", lambda r: r.update(goals_completed=-1), "field 'goals_completed' must be a count"),
    ("a table of strings", lambda r: r.update(tool_counts={"x": "1"}), "field 'tool_counts' must be a table"),
    ("an unknown status", lambda r: r.update(status="maybe"), "field 'status' is 'maybe'"),
    ("an error on a run that succeeded", lambda r: r.update(error="x"), "field 'error' must be null"),
    ("a failed run with its outcomes", lambda r: r.update(status="failed", error="x"), "unknown field"),
    ("a nested list for a number", lambda r: r.update(individuation=[[1]]), "field 'individuation' must be a finite number"),
]


@pytest.mark.parametrize("edit, words", [f[1:] for f in FORGERIES], ids=[f[0] for f in FORGERIES])
def test_a_forged_row_is_refused_naming_what_was_wrong(grid, edit, words):
    from akh_tui.engine.sweep.wire import MalformedResult, decode_result, worker_task

    task = grid[0].tasks()[1]
    with pytest.raises(MalformedResult) as err:
        decode_result(task, _forged(worker_task(task), edit))
    assert words in str(err.value)


def test_bytes_that_are_no_result_are_refused(grid):
    import struct
    import zlib

    from akh_tui.engine.sweep.wire import MAGIC, MalformedResult, decode_result, worker_task

    task = grid[0].tasks()[2]
    good = worker_task(task)
    head = len(MAGIC) + 8
    (n,) = struct.unpack(">Q", good[len(MAGIC):head])
    cases = {
        "expected bytes, got dict": {"row": {}, "trace": b""},
        "not a sweep result": b"\x80\x04\x95 a pickle",
        "truncated before the row": MAGIC + b"\0\0",
        "runs past the end": good[:head + n - 1],
        "the row is not JSON": MAGIC + struct.pack(">Q", 3) + b"\xff\xfe{" + good[head + n:],
        "is not a number a run produces": _forged(good, lambda r: r.update(individuation=0.5)).replace(b'"individuation":0.5', b'"individuation":NaN'),
        "the trace is not zlib-compressed": good[:head + n] + b"plain text",
        "the trace is not UTF-8": good[:head + n] + zlib.compress(b"\xff\xfe"),
        "truncated or has bytes after its end": good + b"x",
    }
    for words, blob in cases.items():
        with pytest.raises(MalformedResult) as err:
            decode_result(task, blob)
        assert words in str(err.value), (words, str(err.value))


# ---- determinism against plain runs -------------------------------------------------------------

def test_a_row_equals_a_plain_run_of_the_same_settings(grid, tmp_path, akh):
    """The run the sweep made is the run `agent run` makes (same cycles), and its outcomes are
    those of stepping an agent built by hand with the same psyche."""
    sweep, rows, traces = grid
    task = next(t for t in sweep.tasks() if dict(t.settings) == {"archetypes.explorer": 0.5, "archetypes.sage": 0.7})
    row = next(r for r in rows if r["run_id"] == task.run_id)
    trace = tmp_path / "t.jsonl"
    rc, _, err = akh("agent", "run", "--scenario", "zoo", "--seed", str(task.seed), "--max-cycles", "8", "--trace", str(trace))
    assert rc == 0, err
    cycles = [json.loads(line) for line in trace.read_text().splitlines() if '"type":"cycle"' in line]
    ours = [json.loads(line) for line in traces[task.run_id].splitlines() if '"type":"cycle"' in line]
    assert ours == cycles and row["cycles_run"] == len(cycles)

    scenario = load_scenario("zoo")
    from akh_tui.engine.runs.scenario import load_psyche

    for t in sweep.tasks()[:6]:
        psyche = load_psyche(scenario)
        for k, v in t.settings:
            psyche.archetypes[k.split(".")[1]] = v
        agent = build_agent(scenario, seed=t.seed, psyche=psyche)
        n = 0
        while n < 8 and agent.step() is not None:
            n += 1
        r = next(r for r in rows if r["run_id"] == t.run_id)
        user = [g for g in agent.goals.values() if g.origin == "user"]
        assert r["cycles_run"] == n
        assert r["goals_completed"] == sum(g.status == "completed" for g in user)
        assert r["tool_counts"] == {k: s[0] for k, s in sorted(agent.tool_stats.items())}
        assert r["archetypes"] == agent.psyche.archetypes


# ---- on a local cluster ---------------------------------------------------------------------------

def test_a_sweep_on_a_local_cluster_of_two_workers_matches_the_plain_loop_and_a_failed_run_is_kept(grid, tmp_path):
    sweep, rows, traces = grid
    # a second scenario, given by path (its files travel with the sweep: the workers read
    # nothing of it from disk), whose graph has a bad line: its runs raise in the worker
    own = tmp_path / "own"
    shutil.copytree(bundled_data_dir(), own)
    with open(own / "kg" / "solar.tsv", "a") as f:
        f.write("a line without tabs\n")
    text = GRID.replace('scenarios = ["zoo"]', f'scenarios = ["zoo", "{own}/scenarios/solar.toml"]')
    both = load_sweep(write(tmp_path, text))
    shutil.rmtree(own)
    summary = run_sweep(both, tmp_path / "out", workers=2)
    assert summary | {"folder": None} == {"total": 36, "skipped": 0, "ran": 36, "lost": 0, "interrupted": False,
                                           "stored": 36, "failed": 18, "folder": None}
    got, got_traces = stored(tmp_path / "out")
    zoo = [r for r in got if r["scenario"] == "zoo"]
    assert plain(zoo) == plain(rows)
    assert {k: got_traces[k] for k in traces} == traces
    solar = [r for r in got if r["scenario"] == "solar"]
    assert len(solar) == 18
    assert all(r["status"] == "failed" and f"{own}/kg/solar.tsv:" in r["error"] for r in solar), solar[0]["error"]
    assert len({r["error"] for r in solar}) == 1


def test_a_folder_refuses_another_sweep(grid, tmp_path):
    sweep = grid[0]
    SweepStore(tmp_path / "out", sweep).close()
    other = load_sweep(write(tmp_path, GRID.replace("stop = 3", "stop = 4")))
    with pytest.raises(InputError) as err:
        SweepStore(tmp_path / "out", other)
    assert err.value.field == "--out" and "another sweep" in err.value.message


def test_a_real_sigint_stops_a_one_worker_sweep_with_exit_130_and_keeps_its_rows(tmp_path):
    path = write(tmp_path, GRID.replace("stop = 3", "stop = 40"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    proc = subprocess.Popen([sys.executable, "-m", "akh_tui.cli", "sweep", "run", str(path), "--workers", "1"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = tmp_path / "s" / "sweep.db"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if db.exists():
                try:
                    with sqlite3.connect(db) as c:
                        if c.execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 3:
                            break
                except sqlite3.OperationalError:
                    pass
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out + err
    assert "interrupted" in out and "run the same command again" in out
    got, got_traces = stored(tmp_path / "s")
    assert 3 <= len(got) < 240
    # what one worker stored is what the plain loop makes for the same runs
    by_id = {t.run_id: t for t in load_sweep(path).tasks()}
    results = [run_task(by_id[r["run_id"]]) for r in got]
    assert plain(got) == plain([r["row"] for r in results])
    assert [got_traces[r["run_id"]] for r in got] == [read_trace_text(r) for r in results]


# ---- an external scheduler and workers ------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`dask scheduler` and two `dask worker`s as separate processes on 127.0.0.1."""
    d = tmp_path_factory.mktemp("cluster")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = []

    def start(*args):
        p = subprocess.Popen([str(DASK), *args], cwd=d, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    try:
        sched_file = d / "scheduler.json"
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file", str(sched_file))
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        for _ in range(2):
            # no nanny: a killed worker stays dead (the other must do its runs), and stops fast
            start("worker", address, "--host", "127.0.0.1", "--nworkers", "1", "--nthreads", "1", "--no-dashboard", "--no-nanny")
        from dask.distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs[::-1]:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def test_a_sweep_through_an_external_scheduler_gives_identical_rows(grid, cluster, tmp_path, akh):
    sweep, rows, traces = grid
    path = write(tmp_path, GRID)
    rc, out, err = akh("sweep", "run", str(path), "--scheduler", cluster, "--out", str(tmp_path / "out"), "--json")
    assert rc == 0, err
    summary = json.loads(out)
    assert (summary["stored"], summary["ran"], summary["failed"], summary["lost"]) == (18, 18, 0, 0)
    got, got_traces = stored(tmp_path / "out")
    assert plain(got) == plain(rows) and got_traces == traces


def test_ctrl_c_keeps_what_finished_and_a_second_run_does_only_the_rest(grid, cluster, tmp_path):
    sweep, rows, traces = grid
    seen = []

    def interrupt(result, client):
        seen.append(result["row"]["run_id"])
        if len(seen) == 5:
            raise KeyboardInterrupt

    first = run_sweep(sweep, tmp_path / "out", scheduler=cluster, on_result=interrupt)
    assert first["interrupted"] and first["stored"] == 5
    assert sorted(r["run_id"] for r in stored(tmp_path / "out")[0]) == sorted(seen)
    second = run_sweep(sweep, tmp_path / "out", scheduler=cluster)
    assert (second["skipped"], second["ran"], second["stored"], second["interrupted"]) == (5, 13, 18, False)
    got, got_traces = stored(tmp_path / "out")
    assert plain(got) == plain(rows) and got_traces == traces
    third = run_sweep(sweep, tmp_path / "out", scheduler="tcp://127.0.0.1:9")  # nothing missing: not even connected
    assert (third["skipped"], third["ran"]) == (18, 0)


def test_a_worker_killed_mid_sweep_has_its_runs_done_elsewhere_and_counted_once(grid, cluster, tmp_path):
    sweep, rows, traces = grid
    killed = []

    def kill_one(result, client):
        if not killed:
            pids = client.run(os.getpid)  # {worker address: pid}
            victim = sorted(pids.items())[0][1]
            os.kill(victim, signal.SIGKILL)
            killed.append(victim)

    summary = run_sweep(sweep, tmp_path / "out", scheduler=cluster, on_result=kill_one)
    assert killed and len(client_pids(cluster)) == 1  # one worker left: it did the dead one's runs
    assert (summary["stored"], summary["ran"], summary["lost"], summary["failed"]) == (18, 18, 0, 0)
    got, got_traces = stored(tmp_path / "out")
    assert len({r["run_id"] for r in got}) == len(got) == 18
    assert plain(got) == plain(rows) and got_traces == traces


def client_pids(address: str) -> dict:
    from dask.distributed import Client

    with Client(address, timeout="30s") as c:
        return c.run(os.getpid)


# ---- report and open ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(grid, tmp_path_factory):
    """A sweep folder filled without a cluster (the store is what report and open read)."""
    import zlib

    sweep, rows, traces = grid
    d = tmp_path_factory.mktemp("folder") / "out"
    st = SweepStore(d, sweep)
    for r in rows:
        st.add({"row": r, "trace": zlib.compress(traces[r["run_id"]].encode())})
    st.close()
    return d


def test_the_report_gives_means_intervals_a_heatmap_and_extremes(folder, grid, tmp_path, akh):
    rows = grid[1]
    html = tmp_path / "r.html"
    rc, out, _ = akh("sweep", "report", str(folder), "--json", "--outcome", "cycles_run", "--html", str(html))
    rep = json.loads(out)
    assert rep["stored"] == 18 and rep["axes"] == ["archetypes.explorer", "archetypes.sage"]
    sage = next(a for a in rep["per_axis"] if a["axis"] == "archetypes.sage")
    assert [v["value"] for v in sage["values"]] == [0.3, 0.5, 0.7]
    want = [r["cycles_run"] for r in rows if r["settings"]["archetypes.sage"] == 0.7]
    got = sage["values"][2]["outcomes"]["cycles_run"]
    assert got["n"] == 6 and got["mean"] == pytest.approx(sum(want) / 6)
    assert got["lo"] <= got["mean"] <= got["hi"]
    h = rep["heatmap"]
    assert (h["x"], h["y"], h["xs"], h["ys"]) == ("archetypes.explorer", "archetypes.sage", [0.5, 0.9], [0.3, 0.5, 0.7])
    assert h["cells"][2][0] == pytest.approx(sum(r["cycles_run"] for r in rows if r["settings"] == {"archetypes.explorer": 0.5, "archetypes.sage": 0.7}) / 3)
    top = max(r["cycles_run"] for r in rows)
    assert rep["extremes"]["highest"][0]["cycles_run"] == top
    page = html.read_text()
    assert page.startswith("<!doctype html>") and page.count("<svg") >= 2 * 7 + 1
    assert "http://" not in page and "https://" not in page and "<script" not in page and "src=" not in page
    rc, text, _ = akh("sweep", "report", str(folder))
    assert rc == 0 and "by archetypes.sage" in text
    assert "goals_completed (mean) by archetypes.sage × archetypes.explorer" in text
    rc, _, err = akh("sweep", "report", str(folder), "--x", "mood")
    assert rc == 2 and "unknown axis 'mood'" in err


def test_every_run_opens_for_replay(folder, grid, tmp_path, akh):
    from akh_tui.tui.app import Workbench
    from akh_tui.engine.runs.userconfig import UserConfig
    from tests.helpers import drive

    sweep, rows, traces = grid
    rid = rows[4]["run_id"]
    text = akh("sweep", "open", str(folder), rid[:6], "--print")[1]
    assert text == traces[rid]
    assert akh("sweep", "open", str(folder), "#4", "--print")[1] == text
    rc, _, err = akh("sweep", "open", str(folder), "zzz")
    assert rc == 2 and "no run 'zzz'" in err
    config = UserConfig.load(tmp_path / "c.toml")
    st = SweepStore(folder, create=False)
    try:
        for r in rows:  # every run's stored history is a trace the workbench replays
            path = tmp_path / f"{r['run_id']}.jsonl"
            path.write_text(st.trace_text(r["run_id"]))
            assert len(read_trace(path).cycles) == r["cycles_run"]
            Workbench(trace_file=path, sync=True, config=config)
    finally:
        st.close()
    last = json.loads([line for line in text.splitlines() if '"type":"cycle"' in line][-1])

    async def script(app, pilot):
        assert not app.ctl.live and app.replay == last["cycle"] == rows[4]["cycles_run"]

    drive(Workbench(trace_file=tmp_path / f"{rid}.jsonl", sync=True, config=config), script)


def test_the_cli_imports_no_dask_until_a_sweep_runs():
    code = "import sys, akh_tui.cli.root as c; c.build_parser(); print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == "[]", out.stderr


def test_the_sweep_browser_sorts_draws_the_heatmap_and_enter_picks_a_run(folder, grid):
    import asyncio

    from akh_tui.tui.sweep_screen import SweepBrowser

    rows = grid[1]
    app = SweepBrowser(folder)
    picked = {}

    async def main() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            assert app.ordered_ids() == [r["run_id"] for r in rows]  # the sweep's order
            assert app.heat["x"] == "archetypes.explorer" and app.heat["y"] == "archetypes.sage"
            app.sort_column, app.sort_reverse = "cycles_run", True
            app._sort()
            want = [r["run_id"] for r in sorted(rows, key=lambda r: (r["cycles_run"], r["run_id"]), reverse=True)]
            assert app.ordered_ids() == want
            await pilot.press("r")  # lowest first now
            assert app.ordered_ids() == want[::-1]
            await pilot.press("o")
            assert app.heat["outcome"] == "goals_failed"
            await pilot.press("down", "enter")
            picked["id"] = want[::-1][1]

    asyncio.run(main())
    assert app.return_value == picked["id"]


def test_an_edited_psyche_or_scenario_file_makes_new_run_ids(tmp_path):
    (tmp_path / "p.toml").write_text("[archetypes]\nsage = 0.6\n")
    shutil.copytree(bundled_data_dir(), tmp_path / "d")
    text = 'scenarios = ["zoo", "d/scenarios/solar.toml"]\nseeds = [0]\n[axes]\npsyche = ["p.toml"]\n'
    before = [t.run_id for t in load_sweep(write(tmp_path, text)).tasks()]
    assert before == [t.run_id for t in load_sweep(write(tmp_path, text)).tasks()]  # stable
    (tmp_path / "p.toml").write_text("[archetypes]\nsage = 0.61\n")
    after = [t.run_id for t in load_sweep(write(tmp_path, text)).tasks()]
    assert not set(before) & set(after)
    with open(tmp_path / "d" / "kg" / "solar.tsv", "a") as f:
        f.write("pluto\tis-a\tdwarf_planet\n")
    again = [t.run_id for t in load_sweep(write(tmp_path, text)).tasks()]
    assert again[0] == after[0] and again[1] != after[1]


def test_a_count_never_gets_a_negative_lower_bound_and_the_page_fits_a_window():
    # issue 28: goals_failed [0, 0, 0, 1] gave a lower bound of -0.55; the page was wider than 1300 px
    import re

    from akh_tui.engine.sweep.report import BOUNDS, build, interval, to_html

    assert interval([0, 0, 0, 1])["lo"] < 0  # unclipped, the t interval goes below 0
    got = interval([0, 0, 0, 1], BOUNDS["goals_failed"])
    assert got["lo"] == 0.0 and got["hi"] > 0.25 and got["mean"] == 0.25
    assert interval([0.9, 1.0, 1.0], BOUNDS["individuation"])["hi"] <= 1.0
    rows = [{"run_id": f"r{i}", "idx": i, "scenario": "zoo", "seed": i, "status": "ok", "error": None,
             "settings": {"archetypes.sage": 0.3 + 0.1 * (i % 2), "archetypes.explorer": 0.5},
             **{o: (1.0 if i == 3 else 0.0) for o in BOUNDS}} for i in range(8)]
    rep = build({"name": "t", "axes": ["archetypes.sage", "archetypes.explorer"]}, rows, "goals_failed")
    rep.update(name="t", stored=8, runs=8, failed=0, errors=[])
    for pa in rep["per_axis"]:
        for v in pa["values"]:
            for o, s in v["outcomes"].items():
                assert s["lo"] is None or s["lo"] >= 0, (pa["axis"], o, s)
    page = to_html(rep)
    # one per-axis row: the value and run cells and 7 interval plots, well under a 1300-px window
    widths = [int(w) for w in re.findall(r"<svg width=\"(\d+)\" height=\"16\"", page)]
    assert widths and 150 + 7 * (max(widths) + 20) < 1300
    # every table and the heatmap in a box that scrolls: the page itself never outgrows the window
    assert page.count("<div class='wide'>") == page.count("<table") + (1 if rep["heatmap"] else 0)
