"""Start-up figures for `akh-tui bench`: how long the quick commands take from process start to
exit, and how long the workbench takes from process start to its first frame.

Each figure starts a fresh interpreter, as a user's shell does; nothing is warm but the OS's
file cache. The workbench runs in a pseudo-terminal (120×36, a private data dir and config)
and its first frame is the moment the status line's "paused" reaches the terminal.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

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


def spread(walls: list[float], cpus: list[float]) -> dict[str, float | None]:
    """min/median/max wall seconds, and the median CPU seconds: on a busy machine the wall
    time mostly measures the other processes, the CPU time stays put."""
    return {"min": min(walls), "median": statistics.median(walls), "max": max(walls), "runs": len(walls),
            "cpu_median": statistics.median(cpus) if cpus else None}


def figures(runs: int = 5, python: str | None = None) -> dict[str, dict[str, float | None]]:
    """min/median/max wall seconds (and the median CPU seconds) over `runs` fresh processes:
    `--help`, `tools`, `psyche check` of the bundled default psyche, and the workbench's first
    frame on the zoo demo."""
    from ..engine.paths import bundled_data_dir

    psyche = str(bundled_data_dir() / "psyche" / "default.toml")
    commands = {"--help": ("--help",), "tools": ("tools",), "psyche check": ("psyche", "check", psyche)}
    result: dict[str, dict[str, float | None]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = private_env(Path(tmp))
        for label, args in commands.items():
            argv = akh_tui_argv(*args, python=python)
            command_seconds(argv, env, tmp)  # warm-up: byte-code and file cache, as for a user's second call
            timed = [command_seconds(argv, env, tmp) for _ in range(runs)]
            result[label] = spread([wall for wall, _ in timed], [cpu for _, cpu in timed])
        frames: list[float] = []
        cpus: list[float] = []
        for i in range(runs + 1):
            # a fresh data dir each time: the first run of a new user, not a growing store
            run_env = private_env(Path(tmp) / f"wb{i}")
            frame = first_frame(akh_tui_argv(python=python), run_env, tmp)
            if frame.seconds is None:
                raise RuntimeError("the workbench drew no first frame: " + frame.output[-400:].decode(errors="replace"))
            if i:  # the first one is the warm-up
                frames.append(frame.seconds)
                if frame.cpu_seconds is not None:
                    cpus.append(frame.cpu_seconds)
        result["workbench first frame"] = spread(frames, cpus)
    return result
