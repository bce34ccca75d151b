"""Confinement for the dangerous tools (SPEC §5: file_io, http_fetch, shell_exec).

These checks are the security boundary: they hold whatever the caller, the agent or a goal
text asks for. Every refusal is a ``Refused`` whose message is one line fit to show a user.
"""

from __future__ import annotations

import errno
import http.client
import ipaddress
import json
import os
import re
import secrets
import selectors
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import sandbox

FIXED_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_REDIRECTS = 3
_CHUNK = 65_536


class Refused(Exception):
    """The request was refused by confinement; str(exc) is a clear one-line reason for the user."""


@dataclass(frozen=True)
class Confinement:
    workspace: Path  # session workspace folder; file access only inside it
    max_file_bytes: int = 1_000_000
    http_allow_hosts: tuple[str, ...] = ()  # exact host names (case-insensitive), optionally "host:port"
    http_timeout: float = 5.0
    http_max_bytes: int = 1_000_000
    shell_allow: tuple[str, ...] = ()  # program names allowed (basename, e.g. "echo", "ls")
    shell_timeout: float = 5.0
    shell_max_output: int = 65_536
    # RISKY_PROGRAMS the user's own config lets run where bubblewrap is not in force
    # ([shell] unconfined); never a scenario's to give, since a scenario is someone else's file
    shell_unconfined: tuple[str, ...] = ()
    served: bool = False  # a served tab (akh-tui serve): shell_unconfined is never honoured there


def _secs(t: float) -> str:
    return f"{t:g}s"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- files

# Never a workspace: a file tool or a program working there could change the system, or read
# everything below. The trees are refused with every folder inside them too.
SYSTEM_ROOTS = (
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
    "/media", "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr",
    "/var", "/var/tmp",
)
SYSTEM_TREES = (
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/sbin",
    "/sys", "/usr",
)


def check_workspace(
    workspace: Path,
    protected: Mapping[str, Path],
    *,
    home: Path | None = None,
    file: str | None = None,
    line: int | None = None,
) -> None:
    """Refuse (InputError, field config.workspace) a workspace that is, contains or lies inside
    a protected folder (`protected` maps a name shown to the user, e.g. "data dir", to a path),
    or is a system root, a system folder or the home folder itself.

    Paths are compared after resolving symlinks and `..`, and need not exist yet. A protected
    path may be a file (e.g. the store's session.db): then a workspace holding it is refused,
    while a sibling folder is not.
    """
    from ..errors import InputError  # late: confine is also used without the engine's errors

    def refuse(why: str) -> None:
        raise InputError(f"workspace '{workspace}' {why}", file=file, line=line, field="config.workspace")

    ws = Path(os.path.realpath(os.fspath(workspace)))
    home = Path(os.path.realpath(home if home is not None else Path.home()))
    for root in SYSTEM_ROOTS:
        if ws == Path(os.path.realpath(root)) or ws == Path(root):
            refuse(f"is the system folder {root}")
    for tree in SYSTEM_TREES:
        real = Path(os.path.realpath(tree))
        if ws.is_relative_to(real) or ws.is_relative_to(tree):
            refuse(f"lies inside the system folder {tree}")
    if ws == home:
        refuse("is your home folder: choose a folder of its own for the agent")
    for name, path in protected.items():
        prot = Path(os.path.realpath(os.fspath(path)))
        if ws == prot:
            refuse(f"is the {name} ({path}): the agent could overwrite its own files")
        if prot.is_relative_to(ws):
            refuse(f"contains the {name} ({path}): the agent could overwrite its own files")
        if ws.is_relative_to(prot):
            refuse(f"lies inside the {name} ({path})")


# Walking with dir_fd + O_NOFOLLOW closes the gap between "checked the path" and "opened it":
# a symlink swapped in after resolve_in_workspace makes the open fail instead of escaping.
_HAVE_DIR_FD = (
    hasattr(os, "O_NOFOLLOW")
    and hasattr(os, "O_DIRECTORY")
    # os.replace is os.rename's overwriting twin; only rename is listed in supports_dir_fd.
    and {os.open, os.mkdir, os.stat, os.rename, os.unlink} <= os.supports_dir_fd
)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _workspace_real(conf: Confinement) -> Path:
    ws = Path(os.path.realpath(conf.workspace))
    if not ws.is_dir():
        raise Refused("the workspace folder does not exist or is not a folder")  # no path: traces must not depend on where it is
    return ws


def _check_rel(rel: object) -> str:
    if isinstance(rel, os.PathLike):
        rel = os.fspath(rel)
    if not isinstance(rel, str):
        raise Refused("path must be text")
    if rel == "" or rel.strip() == "":
        raise Refused("empty path")
    if "\x00" in rel:
        raise Refused("path contains a NUL byte")
    if rel.startswith("/") or os.path.isabs(rel):
        raise Refused(f"absolute path '{rel}' refused: paths are relative to the workspace")
    if ".." in rel.split("/") or ".." in Path(rel).parts:
        raise Refused(f"path '{rel}' refused: '..' is not allowed")
    return rel


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def resolve_in_workspace(conf: Confinement, rel: str) -> Path:
    """The real path of ``rel`` inside the workspace, or Refused.

    Symlinks (final or parent) are followed before the containment check, so a link that
    points outside is refused even when its name looks harmless.
    """
    rel = _check_rel(rel)
    ws = _workspace_real(conf)
    real = Path(os.path.realpath(ws / rel))
    if not _inside(real, ws):
        raise Refused(f"path '{rel}' resolves outside the workspace")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise Refused(f"path '{rel}': {exc.strerror or exc}") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise Refused(f"path '{rel}' is not a regular file or folder (device, fifo or socket)")
    return real


def _walk_dirs(ws: Path, parts: tuple[str, ...], rel: str, create: bool) -> int:
    """fd of the folder ws/parts, opened one component at a time without following links."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY | _O_CLOEXEC)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nfd = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=fd
                )
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise Refused(
                        f"path '{rel}': '{part}' is not a plain folder (symlink changed?)"
                    ) from None
                raise
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _check_links(st: os.stat_result, rel: str) -> None:
    # A hard link has no "real path" to check: the same file may also have a name outside
    # the workspace (a secret linked in before the run), so only single-link files are ours.
    if st.st_nlink > 1:
        raise Refused(
            f"file '{rel}' has {st.st_nlink} hard links: it may also be a file outside the workspace"
        )


def read_file(conf: Confinement, rel: str) -> str:
    """Text of a regular file inside the workspace (utf-8, undecodable bytes replaced)."""
    real = resolve_in_workspace(conf, rel)
    ws = _workspace_real(conf)
    parts = real.relative_to(ws).parts
    if not parts:
        raise Refused(f"path '{rel}' is the workspace folder, not a file")
    # O_NONBLOCK: a fifo swapped in after the check must not hang the open.
    flags = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC
    try:
        if _HAVE_DIR_FD:
            dfd = _walk_dirs(ws, parts[:-1], rel, create=False)
            try:
                fd = os.open(parts[-1], flags, dir_fd=dfd)
            finally:
                os.close(dfd)
        else:
            fd = os.open(real, flags)
    except Refused:
        raise
    except FileNotFoundError:
        raise Refused(f"file '{rel}' does not exist") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"file '{rel}' is a symbolic link (changed while opening)") from None
        raise Refused(f"cannot read '{rel}': {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise Refused(f"path '{rel}' is a folder, not a file")
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"path '{rel}' is not a regular file")
        _check_links(st, rel)
        if st.st_size > conf.max_file_bytes:
            raise Refused(
                f"file '{rel}' is {st.st_size} bytes, over the {conf.max_file_bytes}-byte limit"
            )
        # The file may grow after fstat; never read more than the cap allows.
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_CHUNK, conf.max_file_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > conf.max_file_bytes:
                raise Refused(f"file '{rel}' is over the {conf.max_file_bytes}-byte limit")
    except OSError as exc:
        raise Refused(f"cannot read '{rel}': {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors="replace")


def write_file(conf: Confinement, rel: str, text: str) -> int:
    """Atomically replace (or create) a file inside the workspace; returns bytes written."""
    rel = _check_rel(rel)
    if not isinstance(text, str):
        raise Refused("file content must be text")
    data = text.encode("utf-8")
    if len(data) > conf.max_file_bytes:
        raise Refused(
            f"content is {len(data)} bytes, over the {conf.max_file_bytes}-byte limit"
        )
    # The workspace path comes from trusted config, so creating it is not an escape.
    try:
        os.makedirs(conf.workspace, exist_ok=True)
    except OSError as exc:
        raise Refused(f"cannot create the workspace folder: {exc.strerror or exc}") from None
    ws = _workspace_real(conf)
    # os.replace would swap out the link itself, but a link here means someone expects the
    # write to land elsewhere: refuse rather than guess.
    if os.path.islink(ws / rel):
        raise Refused(f"refusing to write '{rel}': it is a symbolic link")
    real = resolve_in_workspace(conf, rel)
    parts = real.relative_to(ws).parts
    if not parts:
        raise Refused(f"path '{rel}' is the workspace folder, not a file")
    name = parts[-1]
    tmp_name = f".{name[:100]}.{secrets.token_hex(6)}.tmp"
    try:
        if _HAVE_DIR_FD:
            dfd = _walk_dirs(ws, parts[:-1], rel, create=True)
            try:
                _write_at(dfd, name, tmp_name, data, rel)
            finally:
                os.close(dfd)
        else:
            real.parent.mkdir(parents=True, exist_ok=True)
            # Re-check: mkdir may have run through a link created after resolve.
            if not _inside(Path(os.path.realpath(real.parent)), ws):
                raise Refused(f"path '{rel}' resolves outside the workspace")
            _write_at(None, str(real), str(real.parent / tmp_name), data, rel)
    except Refused:
        raise
    except OSError as exc:
        raise Refused(f"cannot write '{rel}': {exc.strerror or exc}") from None
    return len(data)


def _write_at(dfd: int | None, name: str, tmp_name: str, data: bytes, rel: str) -> None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise Refused(f"refusing to write '{rel}': it is a symbolic link")
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"refusing to write '{rel}': it is not a regular file")
        _check_links(st, rel)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC
    fd = os.open(tmp_name, flags, 0o666, dir_fd=dfd)
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp_name, dir_fd=dfd)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- http


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # Returning None makes urllib raise HTTPError for the 3xx, so every hop is checked here.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401
        return None


_REDIRECT_CODES = (301, 302, 303, 307, 308)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


_HOST_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?")
_PORT = re.compile(r"[0-9]{1,5}")


def parse_allow_entry(entry: object) -> tuple[str, int | None]:
    """(host, port or None for any port) of one http_allow_hosts entry, or ValueError saying
    what is wrong. Strict: anything but `host`, `host:port`, `[ipv6]` or `[ipv6]:port` is an
    error, never "any port" (a port of `80x`, ` 80` or `+80` once allowed every port)."""
    if not isinstance(entry, str):
        raise ValueError("must be a string")
    if entry == "":
        raise ValueError("is empty")
    if any(c.isspace() or not c.isprintable() for c in entry):
        raise ValueError("contains a space or control character")
    text = entry.lower()
    port_text: str | None = None
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep:
            raise ValueError("has '[' without ']'")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"has '{rest}' after ']' (expected ':PORT')")
            port_text = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"'[{host}]' is not an IPv6 address") from None
    elif text.count(":") > 1:
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            raise ValueError("has more than one ':' (write an IPv6 address as [ADDRESS]:PORT)") from None
        host = text
    else:
        host, sep, port = text.partition(":")
        port_text = port if sep else None
        if not host:
            raise ValueError("has no host before ':'")
        if len(host) > 253 or not _HOST_NAME.fullmatch(host):
            raise ValueError(f"'{host}' is not a host name or IP address")
    if port_text is None:
        return host, None
    if not _PORT.fullmatch(port_text):
        raise ValueError(f"port '{port_text}' is not a number (digits only)")
    number = int(port_text)
    if not 1 <= number <= 65535:
        raise ValueError(f"port {number} is not in 1..65535")
    return host, number


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def _check_url(conf: Confinement, url: str) -> tuple[str, str, int]:
    """(url, host, port) when allowed, else Refused. Called before any connection."""
    if not isinstance(url, str) or not url.strip():
        raise Refused("empty URL")
    if any(c in url for c in "\x00\r\n") or any(c.isspace() for c in url.strip()):
        raise Refused("URL contains whitespace or control characters")
    url = url.strip()
    m = _SCHEME.match(url)  # as urlsplit reads a scheme, before it may refuse the rest
    scheme = m.group(1).lower() if m else ""
    if scheme not in ("http", "https"):
        raise Refused(f"scheme '{scheme or '(none)'}' refused: only http and https are allowed")
    from ..errors import InputError  # late, as check_workspace's
    from ..urls import check_url

    try:
        parts = check_url(url, "URL")  # a malformed one (`http://[::1/`, port 99999) is refused, not a ValueError
    except InputError as exc:
        raise Refused(exc.message) from None
    if parts.username is not None or parts.password is not None:
        raise Refused("URLs with user names or passwords are refused")
    host = (parts.hostname or "").lower()
    if not host:
        raise Refused(f"URL '{url}' has no host")
    try:
        port = parts.port or _default_port(scheme)
    except ValueError:
        raise Refused(f"URL '{url}' has an invalid port") from None
    for entry in conf.http_allow_hosts:
        try:
            a_host, a_port = parse_allow_entry(entry)
        except ValueError:
            continue  # a malformed entry allows nothing (config.py refuses it at load)
        if a_host == host and (a_port is None or a_port == port):
            return url, host, port
    shown = host if parts.port is None else f"{host}:{port}"
    raise Refused(f"host '{shown}' is not on the http allow-list")


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return True
    reason = getattr(exc, "reason", None)
    return isinstance(reason, (socket.timeout, TimeoutError))


class _Deadline:
    """One deadline for a whole fetch. A socket timeout bounds each read, not the sum of them:
    a server sending one byte a second would keep a fetch alive for as long as it likes. When
    the deadline passes, every socket of the fetch is shut down, so any read blocked on it
    returns at once, and `fired` tells the fetch the end of data it saw was the deadline."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for s in socks:
            _shutdown(s)

    def add(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._socks.append(sock)
            fired = self.fired
        if fired:
            _shutdown(sock)
        return sock

    def cancel(self) -> None:
        self._timer.cancel()

    def connection(self, base: type) -> "Callable[..., http.client.HTTPConnection]":
        """A factory for urllib's do_open whose connections register their socket here before
        anything (TLS handshake, headers, body) is read from it."""

        def make(*args, **kwargs):
            conn = base(*args, **kwargs)
            create = conn._create_connection
            conn._create_connection = lambda *a, **k: self.add(create(*a, **k))
            return conn

        return make


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req):
        return self.do_open(self._deadline.connection(http.client.HTTPConnection), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req):
        return self.do_open(self._deadline.connection(http.client.HTTPSConnection), req,
                            context=self._context)


def _read_capped(resp, conf: Confinement, deadline: float, guard: _Deadline) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        if time.monotonic() > deadline or guard.fired:
            raise Refused(f"timed out after {_secs(conf.http_timeout)}")
        chunk = resp.read(min(_CHUNK, conf.http_max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > conf.http_max_bytes:
            raise Refused(f"response is larger than the {conf.http_max_bytes}-byte limit")
    if guard.fired:  # the end of data was the deadline shutting the socket, not the server
        raise Refused(f"timed out after {_secs(conf.http_timeout)}")
    return b"".join(chunks)


def _decode(body: bytes, headers) -> str:
    charset = None
    if headers is not None:
        try:
            charset = headers.get_content_charset()
        except Exception:
            charset = None
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def http_get(conf: Confinement, url: str) -> tuple[int, str]:
    """GET an allow-listed URL: (status, body text). Non-2xx replies are returned, not refused."""
    url, _, _ = _check_url(conf, url)
    # One deadline for the whole fetch: a server dripping bytes cannot stretch it.
    deadline = time.monotonic() + conf.http_timeout
    guard = _Deadline(conf.http_timeout)
    try:
        return _fetch(conf, url, deadline, guard)
    finally:
        guard.cancel()


def _fetch(conf: Confinement, url: str, deadline: float, guard: _Deadline) -> tuple[int, str]:
    # ProxyHandler({}) so HTTP(S)_PROXY from the environment cannot reroute the request.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), _NoRedirect(), _HTTPHandler(guard), _HTTPSHandler(guard)
    )
    hops = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or guard.fired:
            raise Refused(f"timed out after {_secs(conf.http_timeout)}")
        req = urllib.request.Request(url, method="GET", headers={"User-Agent": "akh-tui"})
        resp = None
        try:
            try:
                resp = opener.open(req, timeout=remaining)
            except urllib.error.HTTPError as err:
                resp = err  # an HTTPError is also the response object
            raw = getattr(resp, "status", None)
            status = raw if isinstance(raw, int) else int(getattr(resp, "code", 0) or 0)
            if status in _REDIRECT_CODES:
                location = resp.headers.get("Location") if resp.headers else None
                if not location:
                    raise Refused(f"redirect ({status}) without a Location header")
                target = urllib.parse.urljoin(url, location.strip())
                t_host = (urllib.parse.urlsplit(target).hostname or "").lower()
                try:
                    target, _, _ = _check_url(conf, target)
                except Refused as exc:
                    raise Refused(
                        f"redirect to host '{t_host or target}' refused: {exc}"
                    ) from None
                hops += 1
                if hops > MAX_REDIRECTS:
                    raise Refused(f"too many redirects (more than {MAX_REDIRECTS})")
                url = target
                continue
            body = _read_capped(resp, conf, deadline, guard)
            return status, _decode(body, resp.headers)
        except Refused:
            raise
        except Exception as exc:
            if guard.fired or _is_timeout(exc):
                raise Refused(f"timed out after {_secs(conf.http_timeout)}") from None
            if isinstance(exc, urllib.error.URLError):
                reason = exc.reason
            elif isinstance(exc, (http.client.HTTPException, OSError, ValueError)):
                reason = exc
            else:
                raise
            text = _one_line(getattr(reason, "strerror", None) or reason) or type(exc).__name__
            raise Refused(f"connection failed: {text}") from None
        finally:
            if resp is not None:
                try:
                    resp.close()
                except Exception:
                    pass


# --------------------------------------------------------------------------- processes


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
    ws = _workspace_real(conf)
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
            chunk = os.read(fd, _CHUNK)
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
        raise Refused(f"timed out after {_secs(conf.shell_timeout)}")
    text = bytes(out).decode("utf-8", errors="replace")
    if truncated:
        if text and not text.endswith("\n"):
            text += "\n"
        text += f"[output truncated at {cap} bytes]"
    return code, text
