"""The intermediate process of shell_exec when bubblewrap is not available (see sandbox.py).

Run as a script (`python -I -S reaper.py PARENT_PID EXE ARGV0 ARGS...`), standard library only.
It makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so every process the program
leaves behind — also one that left the process group with `setsid` — is re-parented to it
rather than to init; when the program exits, or when the engine sends SIGTERM (timeout, output
cap) or dies, it SIGKILLs and reaps every descendant before it exits itself. Its exit status is
the program's (a program killed by a signal makes the reaper die of the same signal).

When run as root, the program gets no capabilities (bounding set emptied, no_new_privs): it
cannot read another process's memory or environment (/proc/<pid>/environ of a non-dumpable
engine), load modules or remount anything.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
_CAP_VERSION_3 = 0x20080522


class _Stop(Exception):
    """Raised from the signal handler to leave the wait for the program."""


_stopping = False


def _on_stop(signum, frame):
    # Only once: a second signal must not interrupt the cleanup that the first one started.
    global _stopping
    if not _stopping:
        _stopping = True
        raise _Stop()


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _drop_capabilities(libc) -> None:
    # Emptying the bounding set means exec grants a uid-0 program no capabilities.
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = Header(_CAP_VERSION_3, 0)
    data = (Data * 2)()
    libc.capset(ctypes.byref(header), data)


def _children() -> list[int]:
    me = os.getpid()
    kids: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{tid}/children") as f:
                kids.extend(int(p) for p in f.read().split())
        return kids
    except OSError:
        pass
    # Kernels without CONFIG_PROC_CHILDREN: look for our pid as the parent in every stat.
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(me):
            kids.append(int(name))
    return kids


def _kill_all() -> None:
    """SIGKILL and reap every descendant. A child's own children are re-parented to us before
    the child can be reaped, so when no child is left, no descendant is left."""
    while True:
        for pid in _children():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def _cleanup() -> None:
    global _stopping
    _stopping = True
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    _kill_all()


def main(argv: list[str]) -> int:
    parent, exe, args = int(argv[1]), argv[2], argv[3:]
    libc = _libc()
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.stderr.write("reaper: cannot become a child subreaper\n")
        return 125
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _on_stop)
    status = None
    try:
        if os.getppid() != parent:  # the engine died before PDEATHSIG was set
            return 125
        pid = os.fork()
        if pid == 0:
            try:
                for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                    signal.signal(sig, signal.SIG_DFL)
                if os.geteuid() == 0:
                    _drop_capabilities(libc)
                os.execve(exe, args, dict(os.environ))
            finally:
                os._exit(127)
        while status is None:
            wpid, st = os.waitpid(-1, 0)  # also reaps orphans handed to us meanwhile
            if wpid == pid:
                status = st
    except _Stop:
        pass
    finally:
        while True:  # a stop signal landing in here restarts the cleanup, never skips it
            try:
                _cleanup()
                break
            except _Stop:
                continue
    if status is None:
        return 124
    if os.WIFSIGNALED(status):
        termsig = os.WTERMSIG(status)
        signal.signal(termsig, signal.SIG_DFL)
        os.kill(os.getpid(), termsig)
    return os.waitstatus_to_exitcode(status) if status is not None else 124


if __name__ == "__main__":
    sys.exit(main(sys.argv))
