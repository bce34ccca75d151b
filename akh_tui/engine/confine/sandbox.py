"""How shell_exec's program is contained, so nothing it starts outlives the tool (SPEC §5).

Two mechanisms, the strongest the machine allows, chosen once per process:

* ``bubblewrap`` (Debian package `bubblewrap`, command `bwrap`): a PID namespace (every process
  of the program dies with it, also one that called `setsid`), a private /proc (the engine's
  environment and memory are not there to read), no network, an empty environment but PATH,
  LANG and HOME, no capabilities, the system folders read-only, a private /tmp, and the
  workspace the one writable folder.
* ``subreaper``: where bwrap is missing or cannot make namespaces (user namespaces off, a
  container without the privilege), a small intermediate process (reaper.py) that is a child
  subreaper kills and reaps every descendant when the program ends or the tool stops it; the
  engine makes itself non-dumpable and the program gets no capabilities, so the program cannot
  read the engine's /proc/<pid>/environ or memory. Files and network are not confined here:
  only the allow-list and the workspace as the working folder.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BUBBLEWRAP = "bubblewrap"
SUBREAPER = "subreaper"
REAPER = str(Path(__file__).with_name("reaper.py"))

# Read-only in the sandbox; a missing one is skipped, a symlink (merged /usr) is recreated.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what programs need from /etc: the loader's cache, names of users and groups, time zone,
# Debian's alternatives (awk -> mawk). Never /etc as a whole (shadow, ssh keys, credentials).
ETC_FILES = (
    "/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
    "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone",
)

_chosen: str | None = None
_why: str = ""


@dataclass(frozen=True)
class Launch:
    mechanism: str
    argv: list[str]
    executable: str
    pass_fds: tuple[int, ...]
    info_fd: int | None  # our end of bwrap's --info-fd pipe (the sandbox's pid 1)


def _bwrap_args(workspace: str | None, env: dict[str, str]) -> list[str]:
    args = [
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
    ]
    for key, value in env.items():
        args += ["--setenv", key, value]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for f in ETC_FILES:
        args += ["--ro-bind-try", f, f]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if workspace is not None:
        args += ["--bind", workspace, workspace, "--chdir", workspace]
    return args


def _probe() -> tuple[str, str]:
    exe = shutil.which("bwrap")
    if exe is None:
        return SUBREAPER, "bwrap not found (install the Debian package bubblewrap)"
    true = shutil.which("true", path="/usr/bin:/bin")
    if true is None:
        return SUBREAPER, "no 'true' program to test bwrap with"
    try:
        res = subprocess.run(
            [exe, *_bwrap_args(None, {"PATH": "/usr/bin:/bin"}), "--", true],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env={"PATH": "/usr/bin:/bin"}, timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return SUBREAPER, f"bwrap cannot run: {exc}"
    if res.returncode != 0:
        text = " ".join(res.stdout.decode("utf-8", "replace").split())[:200]
        return SUBREAPER, f"bwrap cannot make a sandbox here: {text or f'exit {res.returncode}'}"
    return BUBBLEWRAP, f"{exe}: PID namespace, private /proc, no network, cleared environment"


def protection() -> tuple[str, str]:
    """(mechanism, one-line reason) in force for shell_exec in this process; probed once."""
    global _chosen, _why
    if _chosen is None:
        _chosen, _why = _probe()
        if _chosen == SUBREAPER:
            _why += ("; a subreaper ends every process the program starts and keeps the engine's"
                     " environment unreadable, but files and network are not confined")
    return _chosen, _why


def _make_non_dumpable() -> None:
    # A non-dumpable process's /proc/<pid>/environ, mem and fds need CAP_SYS_PTRACE to read,
    # which the reaper takes from the program: the API key in our environment stays ours.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def launch(exe: str, argv: list[str], workspace: str, env: dict[str, str]) -> Launch:
    """The command that runs `argv` (program at `exe`) contained by the mechanism in force."""
    mechanism, _ = protection()
    if mechanism == BUBBLEWRAP:
        r, w = os.pipe()
        os.set_inheritable(w, True)
        bwrap = shutil.which("bwrap") or "bwrap"
        # argv[0] becomes the full path inside (bwrap 0.8 has no --argv0); programs see the same
        # name they would under /usr/bin.
        cmd = [bwrap, *_bwrap_args(workspace, env), "--info-fd", str(w), "--", exe, *argv[1:]]
        return Launch(BUBBLEWRAP, cmd, bwrap, (w,), r)
    _make_non_dumpable()
    cmd = [sys.executable, "-I", "-S", REAPER, str(os.getpid()), exe, *argv]
    return Launch(SUBREAPER, cmd, sys.executable, (), None)
