"""file_io's confinement: every path resolved inside the session's workspace folder, walked a
folder at a time with no symbolic link followed, reads and writes capped."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Mapping

from .policy import CHUNK, Confinement, Refused


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


def workspace_real(conf: Confinement) -> Path:
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
    ws = workspace_real(conf)
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
    ws = workspace_real(conf)
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
            chunk = os.read(fd, min(CHUNK, conf.max_file_bytes + 1 - total))
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
    ws = workspace_real(conf)
    # os.replace would swap out the link itself, but a link here means someone expects the
    # write to land elsewhere: refuse rather than guess.
    if os.path.islink(ws / rel):
        raise Refused(f"refusing to write '{rel}': it is a symbolic link")
    real = resolve_in_workspace(conf, rel)
    parts = real.relative_to(ws).parts
    if not parts:
        raise Refused(f"path '{rel}' is the workspace folder, not a file")
    name = parts[-1]
    from secrets import token_hex  # here: `akh-tui tools` reads this module's tables only (start-up)

    tmp_name = f".{name[:100]}.{token_hex(6)}.tmp"
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
