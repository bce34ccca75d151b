"""Start-up figures for `akh-tui bench` (its "startup" rows): the CPU time the quick commands
take from process start to exit, and the workbench from process start to its first frame, each
against `python -c pass` in the same rounds (issue 29's aims: `tools`, `psyche check` ≤ 0.2 s,
the first frame ≤ 1.0 s).

Each figure starts a fresh interpreter, as a user's shell does; nothing is warm but the OS's
file cache and the byte code (an installed copy has its `.pyc` files). The workbench runs in a pseudo-terminal (120×36, a private data dir and config)
and its first frame is the moment the status line's "paused" reaches the terminal.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from rich.table import Table

from .rows import Figure, figure_table, register

# what the `akh-tui` console script does (python -m would import akh_tui.cli twice)
ENTRY = "import sys; from akh_tui.cli import main; sys.exit(main())"
# the first frame: the status line of a new run ("... cycle 0 · ■ paused · ...") and the
# bottom pane's title, drawn in the same frame
FIRST_FRAME = (b"paused", b"Working memory")


def akh_tui_argv(*args: str, python: str | None = None) -> list[str]:
    return [python or sys.executable, "-c", ENTRY, *args]


def private_env(folder: Path) -> dict[str, str]:
    """The environment of a measured run: its own data dir and config, a colour terminal."""
    return dict(os.environ, AKH_TUI_DATA=str(folder / "data"), AKH_TUI_CONFIG=str(folder / "config.toml"),
                TERM="xterm-256color", COLUMNS="120", LINES="36")


def children_cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command_seconds(argv: list[str], env: dict[str, str] | None = None,
                    cwd: str | Path | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds from starting the command to its exit (output thrown away)."""
    cpu0, t0 = children_cpu_seconds(), time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=120)
    took, cpu = time.perf_counter() - t0, children_cpu_seconds() - cpu0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-500:]}")
    return took, cpu


class Frame(NamedTuple):
    seconds: float | None  # wall, from start to the frame; None: it never came
    cpu_seconds: float | None  # the program's user + system time by then (Linux; else None)
    output: bytes  # everything it wrote to the terminal


def process_cpu_seconds(pid: int) -> float | None:
    """User + system seconds of a running process, all its threads (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def first_frame(argv: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None,
                markers: tuple[bytes, ...] = FIRST_FRAME, timeout: float = 60.0,
                size: tuple[int, int] = (120, 36)) -> Frame:
    """Start a full-screen program in a pseudo-terminal and wait until every one of `markers`
    has appeared in what it draws. Returns the wall and CPU seconds from start to then (None
    on timeout or exit) and everything it wrote. The program is then asked to quit with `q` and killed if it
    does not. POSIX only."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    cols, rows = size
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True)
    os.close(slave)
    out = bytearray()
    took = cpu = None
    try:
        while time.perf_counter() - t0 < timeout:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the program exited and closed the terminal
                break
            if not chunk:
                break
            out += chunk
            if all(m in out for m in markers):
                took = time.perf_counter() - t0
                cpu = process_cpu_seconds(proc.pid)
                break
    finally:
        try:
            os.write(master, b"q")
        except OSError:
            pass
        deadline = time.monotonic() + 10
        while proc.poll() is None and time.monotonic() < deadline:
            # keep reading: a program blocked on a full terminal cannot quit
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    if not os.read(master, 65536):
                        break
                except OSError:
                    break
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    return Frame(took, cpu, bytes(out))


# the commands measured, by label: `--help` and the two quick commands (issue 29: each ≤ 0.2 s
# of CPU), against `python -c pass` in the same rounds
PASS = "python -c pass"
FIRST_FRAME_LABEL = "workbench first frame (zoo demo)"
AIMS = {"tools": "≤ 0.2 s", "psyche check": "≤ 0.2 s", FIRST_FRAME_LABEL: "≤ 1.0 s"}


def measured_env(folder: Path, pycache: Path) -> dict[str, str]:
    """`private_env` with the byte code cached in `pycache`: an installed copy has its `.pyc`
    files, so a measured command must not compile its modules on every start (as it would
    under PYTHONDONTWRITEBYTECODE). A prefix of our own leaves the user's folders untouched."""
    env = private_env(folder)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def cpu_figures(rounds: int, python: str | None = None, frame: bool = True) -> list[Figure]:
    """CPU seconds (user + system) of each quick command in a fresh interpreter, from start to
    exit, and of the workbench from start to its first frame on the demo, against `python -c
    pass`: `rounds` interleaved rounds, each running every one once after a warm-up of each."""
    from ..engine.paths import bundled_data_dir

    python = python or sys.executable
    psyche = str(bundled_data_dir() / "psyche" / "default.toml")
    argvs = {PASS: [python, "-c", "pass"], "--help": akh_tui_argv("--help", python=python),
             "tools": akh_tui_argv("tools", python=python),
             "psyche check": akh_tui_argv("psyche", "check", psyche, python=python)}
    figs = {label: Figure(label, unit="s", baseline=None if label == PASS else PASS, aim=AIMS.get(label, ""))
            for label in (*argvs, *((FIRST_FRAME_LABEL,) if frame else ()))}
    with tempfile.TemporaryDirectory() as tmp:
        folder, pycache = Path(tmp), Path(tmp) / "pycache"
        env = measured_env(folder, pycache)

        def frame_cpu(i: int) -> float | None:
            # a fresh data dir each time: the first run of a new user, not a growing store
            got = first_frame(akh_tui_argv(python=python), measured_env(folder / f"wb{i}", pycache), tmp)
            if got.seconds is None:
                raise RuntimeError("the workbench drew no first frame: " + got.output[-400:].decode(errors="replace"))
            return got.cpu_seconds

        for argv in argvs.values():  # warm-up: the byte code written, the file cache filled
            command_seconds(argv, env, tmp)
        if frame:
            frame_cpu(0)
        for r in range(rounds):
            for label, argv in argvs.items():
                figs[label].samples.append(command_seconds(argv, env, tmp)[1])
            cpu = frame_cpu(r + 1) if frame else None
            if cpu is not None:  # None off Linux (no /proc): the row then says so
                figs[FIRST_FRAME_LABEL].samples.append(cpu)
    if frame and not figs[FIRST_FRAME_LABEL].samples:
        figs[FIRST_FRAME_LABEL].note = "no CPU figure on this system (/proc)"
    return list(figs.values())


def startup_table(quick: bool) -> Table:
    rounds = 3 if quick else 9
    return figure_table(f"start-up: CPU seconds in a fresh process (byte code cached), {rounds} interleaved rounds"
                        + (" (quick)" if quick else ""), cpu_figures(rounds), fmt=".3f",
                        ratio_label=f"÷ {PASS} (min–max)")


register("startup", startup_table)
