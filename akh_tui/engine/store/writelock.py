"""One writer per run: a lock file per run next to the session store, held with flock(2)
for as long as a process records into the run.

The kernel drops a flock when its holder exits, even on kill -9, so a lock file left behind
never blocks anyone: liveness is the kernel's, not a pid we would have to guess about. The
file holds the holder's pid and command line, so a refused writer can say who holds it.
Readers (`sessions list/show/export`, the workbench's replay) take no lock.

Within one process a lock is shared (counted): two `Run`s of one process on one run are the
program's own business (tests, the workbench's reset), not a second writer.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from ..errors import StoreBusy

_held: dict[str, list] = {}  # lock path -> [fd, count] for this process


def lock_path(store_path: Path, run: int, kind: str = "run") -> Path:
    """`kind`: "run" (a single run) or "world" (a world run: their ids are counted apart)."""
    return store_path.with_name(f"{store_path.name}.{kind}-{run}.lock")


def _command_line() -> str:
    try:
        raw = Path("/proc/self/cmdline").read_bytes()
        return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return " ".join(sys.argv)


def holder(path: Path) -> str:
    """Who holds the lock, as its file says: "pid 123 (akh-tui agent run)"."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "another process"
    pid, _, cmd = text.partition(" ")
    return f"pid {pid} ({cmd})" if pid.isdigit() else "another process"


def acquire(store_path: Path, run: int, kind: str = "run") -> Path | None:
    """Hold the writer's lock of `run`, or raise StoreBusy naming its holder. None when the
    store's folder takes no lock file (read-only): then nothing can be written anyway."""
    path = lock_path(store_path, run, kind)
    key = str(path)
    if key in _held:
        _held[key][1] += 1
        return path
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreBusy(f"run {run} is being written by {holder(path)}: one writer per run. Close it first, "
                        f"start a new run (`agent run --fresh`), or read it with `akh-tui sessions show {run}`",
                        file=str(store_path)) from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {_command_line()}\n".encode("utf-8", "replace"))
    except OSError:
        pass  # a full disk: the lock holds all the same, only its holder's name is missing
    _held[key] = [fd, 1]
    return path


def release(path: Path | None) -> None:
    if path is None:
        return
    entry = _held.get(str(path))
    if entry is None:
        return
    entry[1] -= 1
    if entry[1] <= 0:
        del _held[str(path)]
        try:
            os.ftruncate(entry[0], 0)  # the holder's name goes with the lock
        except OSError:
            pass
        os.close(entry[0])  # closing drops the flock
