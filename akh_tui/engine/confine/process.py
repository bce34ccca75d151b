"""shell_exec's confinement: an allow-list of programs, the programs that would defeat it, and
running one contained (its own process group, a fixed PATH, the workspace as its folder, the sandbox
where bubblewrap is present), timed out and capped."""

from __future__ import annotations

import json
import os
import re
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from typing import Sequence

from . import sandbox
from .policy import CHUNK, Confinement, FIXED_PATH, Refused, secs
from .files import workspace_real


# Allow-listed programs that defeat the allow-list or the workspace: they run any program or
# code they are given, or write any file they are told to. Listed at config load (warnings),
# because the allow-list is per program, not per argument: `find . -exec sh -c ...` is `find`.
# With bubblewrap they stay in its sandbox; without it they are refused at run time unless the
# user's config names them (unconfined_refusal): the one table for the warning and the refusal.
_RUNS_ANY = "runs any program given in its arguments, so allowing it allows every program"
_RUNS_CODE = "runs any code given in its arguments (-c, -e, system()), so allowing it allows every program"
_SHELL = "is a shell: it runs any command line"
_WRITES = "writes or deletes any file named in its arguments (outside the workspace too where bubblewrap is not in force)"
_NETWORK = "reaches the network without the http allow-list"
RISKY_PROGRAMS: dict[str, str] = {
    "env": _RUNS_ANY, "xargs": _RUNS_ANY, "nice": _RUNS_ANY, "nohup": _RUNS_ANY,
    "setsid": _RUNS_ANY, "stdbuf": _RUNS_ANY, "timeout": _RUNS_ANY, "time": _RUNS_ANY,
    "watch": _RUNS_ANY, "flock": _RUNS_ANY, "chroot": _RUNS_ANY, "unshare": _RUNS_ANY,
    "nsenter": _RUNS_ANY, "sudo": _RUNS_ANY, "su": _RUNS_ANY, "doas": _RUNS_ANY,
    "strace": _RUNS_ANY, "ltrace": _RUNS_ANY, "gdb": _RUNS_ANY, "busybox": _RUNS_ANY,
    "parallel": _RUNS_ANY, "script": _RUNS_ANY, "ionice": _RUNS_ANY, "taskset": _RUNS_ANY,
    "find": "runs any program with -exec/-execdir/-ok and deletes or writes files with -delete/-fprint",
    "sh": _SHELL, "bash": _SHELL, "dash": _SHELL, "zsh": _SHELL, "ksh": _SHELL, "csh": _SHELL,
    "tcsh": _SHELL, "fish": _SHELL, "rbash": _SHELL, "mksh": _SHELL,
    "python": _RUNS_CODE, "perl": _RUNS_CODE, "ruby": _RUNS_CODE, "node": _RUNS_CODE,
    "nodejs": _RUNS_CODE, "php": _RUNS_CODE, "lua": _RUNS_CODE, "tclsh": _RUNS_CODE,
    "awk": _RUNS_CODE, "gawk": _RUNS_CODE, "mawk": _RUNS_CODE, "nawk": _RUNS_CODE,
    "sed": "edits any file in place with -i, writes any file with its w command and runs commands with e",
    "sort": "writes any file with -o",
    "tee": _WRITES, "cp": _WRITES, "mv": _WRITES, "rm": _WRITES, "dd": _WRITES, "install": _WRITES,
    "ln": _WRITES, "truncate": _WRITES, "touch": _WRITES, "mkdir": _WRITES, "rmdir": _WRITES,
    "chmod": _WRITES, "chown": _WRITES, "shred": _WRITES, "rsync": _WRITES, "split": _WRITES,
    "tar": "writes any file and runs programs (--to-command, --use-compress-program)",
    "zip": "writes any file and runs programs (-TT)", "unzip": _WRITES,
    "git": "runs programs (hooks, -c core.pager, aliases) and writes files",
    "make": "runs any command its makefile (or --eval) names",
    "vi": "runs commands (:!) and writes files", "vim": "runs commands (:!) and writes files",
    "ed": "runs commands (!) and writes files", "ex": "runs commands (:!) and writes files",
    "less": "runs commands (!) and writes files (s, -o)", "more": "runs commands (!)",
    "man": "runs commands (-P pager, -H browser)",
    "curl": _NETWORK + " and writes any file with -o", "wget": _NETWORK + " and writes any file with -O",
    "nc": _NETWORK, "ncat": _NETWORK, "socat": _NETWORK + " and runs programs (EXEC:)",
    "ssh": _NETWORK + " and runs commands", "scp": _NETWORK + " and writes files",
}
# Versioned names (python3, python3.11, perl5.36) share the reason of their family.
_VERSIONED = re.compile(r"(python|perl|ruby|lua|php|node|tclsh)[0-9.]*")
# The user config's setting that lets one of them run without bubblewrap (userconfig.py reads it).
UNCONFINED_SETTING = "[shell] unconfined"


def risky_programs(allow: Sequence[str]) -> list[tuple[str, str]]:
    """(program, why) for each allow-listed program known to run or write arbitrary things,
    in the allow-list's order."""
    out: list[tuple[str, str]] = []
    for name in dict.fromkeys(allow):
        why = RISKY_PROGRAMS.get(name)
        if why is None and (m := _VERSIONED.fullmatch(name)):
            why = RISKY_PROGRAMS.get(m.group(1))
        if why is not None:
            out.append((name, why))
    return out


def unconfined_refusal(conf: Confinement, name: str) -> str | None:
    """Why `name` may not run here, or None. Without bubblewrap nothing keeps a program in the
    workspace, so one of RISKY_PROGRAMS (the table config load warns from) would undo the
    allow-list or the workspace: it runs only where the user's config names it."""
    if sandbox.protection()[0] == sandbox.BUBBLEWRAP:
        return None
    risky = risky_programs([name])
    if not risky:
        return None
    why = risky[0][1]
    if conf.served:
        return (f"program '{name}' refused: it {why}, and bubblewrap is not in force here to keep it in the "
                f"workspace; a served tab (akh-tui serve) never runs such a program without bubblewrap")
    if name in conf.shell_unconfined:
        return None
    return (f"program '{name}' refused: it {why}, and bubblewrap is not in force here to keep it in the "
            f"workspace; to run it anyway, list it in your user config: {UNCONFINED_SETTING} = [\"{name}\"]")


def split_command(text: str) -> list[str]:
    """POSIX shell-style word splitting only; nothing is ever interpreted by a shell."""
    if not isinstance(text, str):
        # shlex.split(None) would read stdin.
        raise Refused("command must be text")
    try:
        return shlex.split(text, posix=True)
    except ValueError as exc:
        raise Refused(f"cannot parse command: {exc}") from None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# How long stopping a contained program may take before the engine kills what it can reach.
_STOP_GRACE = 5.0


class _Contained:
    """One started program and the way to end it and everything it started (sandbox.py)."""

    def __init__(self, proc: subprocess.Popen, start: "sandbox.Launch") -> None:
        self.proc = proc
        self.mechanism = start.mechanism
        self.stopped = False  # ended by us (timeout, output cap), not by itself
        # bwrap's pid 1 of the sandbox, held by a pidfd so the pid cannot be mistaken for a
        # later process. bwrap outside reports the exit as soon as its pid 1 says it, which
        # can be before the kernel has killed the rest of the namespace: we wait for pid 1
        # itself, whose exit comes only after every other process in it is gone.
        self.pidfd: int | None = None
        self.sandbox_pid: int | None = None
        if start.info_fd is not None:
            self._open_sandbox(start.info_fd)

    def _open_sandbox(self, fd: int) -> None:
        data = b""
        sel = selectors.DefaultSelector()
        try:
            sel.register(fd, selectors.EVENT_READ)
            end = time.monotonic() + 5.0  # bwrap writes it within milliseconds of starting
            while time.monotonic() < end and sel.select(timeout=end - time.monotonic()):
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                data += chunk
        finally:
            sel.close()
            os.close(fd)
        try:
            pid = json.loads(data.decode("utf-8", "replace")).get("child-pid")
        except (ValueError, AttributeError):
            return
        if not isinstance(pid, int) or pid <= 1:
            return
        self.sandbox_pid = pid
        if hasattr(os, "pidfd_open"):
            try:
                self.pidfd = os.pidfd_open(pid)
            except ProcessLookupError:
                self.sandbox_pid = None  # already gone, and with it the whole namespace
            except OSError:
                pass

    def _kill_sandbox(self) -> None:
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            elif self.sandbox_pid is not None:
                os.kill(self.sandbox_pid, signal.SIGKILL)
            else:
                _kill_group(self.proc)  # bwrap's --die-with-parent ends the sandbox after it
        except (ProcessLookupError, PermissionError):
            pass

    def _sandbox_gone(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        if self.pidfd is not None:
            sel = selectors.DefaultSelector()
            try:
                sel.register(self.pidfd, selectors.EVENT_READ)  # readable once it has exited
                sel.select(timeout=timeout)
            finally:
                sel.close()
            return
        while self.sandbox_pid is not None and time.monotonic() < end:
            try:
                with open(f"/proc/{self.sandbox_pid}/stat", "rb") as f:
                    state = f.read().rsplit(b")", 1)[-1].split()[:1]
            except OSError:
                return
            if state in ([b"Z"], [b"X"]):
                return
            time.sleep(0.005)

    def stop(self) -> None:
        """End the program and all its descendants, and reap the starter (bwrap or reaper)."""
        if self.proc.poll() is None:
            self.stopped = True
            if self.mechanism == sandbox.BUBBLEWRAP:
                # Killing a PID namespace's pid 1 kills every process in it.
                self._kill_sandbox()
            else:
                try:
                    self.proc.send_signal(signal.SIGTERM)  # the reaper kills and reaps them all
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=_STOP_GRACE)
            except subprocess.TimeoutExpired:
                pass
        if self.mechanism == sandbox.BUBBLEWRAP:
            self._sandbox_gone(_STOP_GRACE)
        _kill_group(self.proc)  # a starter that failed to stop: kill what its group holds
        self.proc.wait()
        self.close()

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def run_program(conf: Confinement, argv: list[str]) -> tuple[int, str]:
    """Run an allow-listed program without a shell: (exit code, stdout+stderr text).

    The program runs contained (sandbox.py): when this returns, it and every process it
    started are gone. The exit code is negative when the process was killed by a signal
    (e.g. -9 after the output cap was hit).
    """
    if not isinstance(argv, (list, tuple)) or not argv:
        raise Refused("empty command")
    if not all(isinstance(a, str) for a in argv):
        raise Refused("command arguments must be text")
    if any("\x00" in a for a in argv):
        raise Refused("command contains a NUL byte")
    name = argv[0]
    if "/" in name:
        raise Refused(f"program '{name}' refused: give a bare program name, not a path")
    allowed = {a for a in conf.shell_allow if a and "/" not in a}
    if name not in allowed:
        raise Refused(f"program '{name}' is not on the shell allow-list")
    refusal = unconfined_refusal(conf, name)
    if refusal is not None:
        raise Refused(refusal)
    exe = shutil.which(name, path=FIXED_PATH)
    if exe is None:
        raise Refused(f"program '{name}' was not found in {FIXED_PATH}")
    ws = workspace_real(conf)
    env = {"PATH": FIXED_PATH, "LANG": "C.UTF-8", "HOME": str(ws)}
    start = sandbox.launch(exe, list(argv), str(ws), env)
    try:
        proc = subprocess.Popen(
            start.argv,
            executable=start.executable,
            shell=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=ws,
            env=env,
            close_fds=True,
            pass_fds=start.pass_fds,
            start_new_session=True,
        )
    except OSError as exc:
        if start.info_fd is not None:
            os.close(start.info_fd)
        raise Refused(f"cannot start '{name}': {exc.strerror or exc}") from None
    finally:
        for fd in start.pass_fds:
            os.close(fd)
    box = _Contained(proc, start)

    cap = conf.shell_max_output
    deadline = time.monotonic() + conf.shell_timeout
    out = bytearray()
    truncated = False
    timed_out = False
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            if not sel.select(timeout=min(remaining, 0.05)):
                continue
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            room = cap - len(out)
            if len(chunk) > room:
                out += chunk[: max(room, 0)]
                truncated = True
                break
            out += chunk
        if not (timed_out or truncated):
            # EOF can come before the exit (a program closing its output early).
            while proc.poll() is None:
                if time.monotonic() >= deadline:
                    timed_out = True
                    break
                time.sleep(0.01)
    except BaseException:
        box.stop()
        raise
    finally:
        sel.close()
        proc.stdout.close()
    # The starter ends only once every process of the program is gone (PID namespace or
    # reaper), so after stop() nothing the program started is left running.
    box.stop()
    # Ended by us: the program was killed (by SIGKILL), whatever its starter reports.
    code = -signal.SIGKILL if box.stopped else proc.returncode
    if timed_out:
        raise Refused(f"timed out after {secs(conf.shell_timeout)}")
    text = bytes(out).decode("utf-8", errors="replace")
    if truncated:
        if text and not text.endswith("\n"):
            text += "\n"
        text += f"[output truncated at {cap} bytes]"
    return code, text
