"""Confinement is a security boundary: every test here exercises the real filesystem, a real
HTTP server on loopback, and real child processes."""

from __future__ import annotations

import http.server
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from akh_tui.engine.confine import policy as confine
from akh_tui.engine.confine import files as confine_files
from akh_tui.engine.confine import http as confine_http
from akh_tui.engine.confine.policy import Confinement, Refused
from akh_tui.engine.confine.http import http_get
from akh_tui.engine.confine.files import read_file, resolve_in_workspace, write_file
from akh_tui.engine.confine.process import run_program, split_command


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("TOP SECRET")
    return o


@pytest.fixture
def conf(ws: Path) -> Confinement:
    return Confinement(workspace=ws, max_file_bytes=100)


# --------------------------------------------------------------------------- files


def test_read_write_inside_workspace(conf: Confinement, ws: Path) -> None:
    assert write_file(conf, "notes/a.txt", "héllo") == len("héllo".encode())
    assert (ws / "notes" / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert read_file(conf, "notes/a.txt") == "héllo"
    assert resolve_in_workspace(conf, "notes/a.txt") == ws.resolve() / "notes" / "a.txt"


def test_read_replaces_invalid_utf8(conf: Confinement, ws: Path) -> None:
    (ws / "bin.dat").write_bytes(b"ok\xff\xfe")
    assert read_file(conf, "bin.dat") == "ok\ufffd\ufffd"


@pytest.mark.parametrize("rel", ["../outside/secret.txt", "a/../../x", "..", "a/.."])
def test_dotdot_refused(conf: Confinement, rel: str) -> None:
    with pytest.raises(Refused, match=r"'\.\.'"):
        read_file(conf, rel)
    with pytest.raises(Refused):
        write_file(conf, rel, "x")


def test_absolute_empty_and_nul_refused(conf: Confinement, outside: Path) -> None:
    with pytest.raises(Refused, match="absolute"):
        read_file(conf, str(outside / "secret.txt"))
    with pytest.raises(Refused, match="absolute"):
        write_file(conf, "/tmp/x.txt", "x")
    with pytest.raises(Refused, match="empty"):
        resolve_in_workspace(conf, "")
    with pytest.raises(Refused, match="NUL"):
        resolve_in_workspace(conf, "a\x00b")


def test_symlink_file_pointing_outside_refused(conf: Confinement, ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(Refused, match="outside the workspace"):
        read_file(conf, "link.txt")


def test_symlinked_dir_pointing_outside_refused(
    conf: Confinement, ws: Path, outside: Path
) -> None:
    (ws / "d").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Refused, match="outside the workspace"):
        read_file(conf, "d/secret.txt")
    with pytest.raises(Refused, match="outside the workspace"):
        write_file(conf, "d/new.txt", "pwned")
    with pytest.raises(Refused, match="outside the workspace"):
        write_file(conf, "d/sub/new.txt", "pwned")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.skipif(not confine_files._HAVE_DIR_FD, reason="needs dir_fd + O_NOFOLLOW")
def test_symlink_swapped_in_after_check_is_refused(
    conf: Confinement, ws: Path, outside: Path, monkeypatch
) -> None:
    # Simulate a race: the path checked clean, then links appeared before the open.
    (ws / "d").symlink_to(outside, target_is_directory=True)
    (ws / "f.txt").symlink_to(outside / "secret.txt")
    monkeypatch.setattr(confine_files, "resolve_in_workspace", lambda c, rel: ws.resolve() / rel)
    for rel in ("d/secret.txt", "f.txt"):
        with pytest.raises(Refused, match="link"):
            read_file(conf, rel)
    with pytest.raises(Refused, match="link"):
        write_file(conf, "d/new.txt", "pwned")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_symlink_inside_workspace_is_followed(conf: Confinement, ws: Path) -> None:
    (ws / "real.txt").write_text("inside")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert read_file(conf, "alias.txt") == "inside"


def test_fifo_refused_without_hanging(conf: Confinement, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(Refused, match="not a regular file"):
        resolve_in_workspace(conf, "pipe")
    with pytest.raises(Refused, match="not a regular file"):
        read_file(conf, "pipe")
    with pytest.raises(Refused, match="not a regular file"):
        write_file(conf, "pipe", "x")


def test_folder_is_not_a_file(conf: Confinement, ws: Path) -> None:
    (ws / "sub").mkdir()
    with pytest.raises(Refused, match="folder"):
        read_file(conf, "sub")
    with pytest.raises(Refused, match="folder"):
        read_file(conf, ".")


def test_oversize_refused(conf: Confinement, ws: Path) -> None:
    (ws / "big.txt").write_bytes(b"x" * 101)
    with pytest.raises(Refused, match="100-byte limit"):
        read_file(conf, "big.txt")
    with pytest.raises(Refused, match="100-byte limit"):
        write_file(conf, "new.txt", "y" * 101)
    assert not (ws / "new.txt").exists()
    (ws / "edge.txt").write_bytes(b"x" * 100)
    assert read_file(conf, "edge.txt") == "x" * 100


def test_write_is_atomic_replace(conf: Confinement, ws: Path) -> None:
    target = ws / "f.txt"
    target.write_text("old content that is longer than the new one")
    before = os.stat(target).st_ino
    assert write_file(conf, "f.txt", "new") == 3
    assert target.read_text() == "new"
    # A new inode means the old file was swapped whole, never truncated in place.
    assert os.stat(target).st_ino != before
    assert sorted(p.name for p in ws.iterdir()) == ["f.txt"]


def test_write_over_symlink_refused(conf: Confinement, ws: Path, outside: Path) -> None:
    (ws / "inner.txt").write_text("keep")
    (ws / "to_inner").symlink_to(ws / "inner.txt")
    (ws / "to_outer").symlink_to(outside / "secret.txt")
    with pytest.raises(Refused, match="symbolic link"):
        write_file(conf, "to_inner", "x")
    with pytest.raises(Refused):
        write_file(conf, "to_outer", "x")
    assert (ws / "inner.txt").read_text() == "keep"
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert (ws / "to_inner").is_symlink()


# --------------------------------------------------------------------------- http

BIG = 2_000
CAP = 1_000


class _Handler(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    def _send(self, code: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        port = self.server.server_address[1]
        try:
            if self.path == "/ok":
                self._send(200, b"hello ok")
            elif self.path == "/big":
                self._send(200, b"b" * BIG)
            elif self.path == "/slow":
                time.sleep(1.5)
                self._send(200, b"late")
            elif self.path == "/redirect-same":
                self._send(302, headers={"Location": "/ok"})
            elif self.path == "/redirect-other":
                self._send(302, headers={"Location": f"http://localhost:{port}/ok"})
            elif self.path == "/loop":
                self._send(302, headers={"Location": "/loop"})
            elif self.path in ("/drip", "/drip-headers"):
                # One byte every 0.05 s: each read is quick, the whole reply takes 10 s.
                if self.path == "/drip":
                    self.send_response(200)
                    self.send_header("Content-Length", "200")
                    self.end_headers()
                    self.wfile.flush()
                    data = b"d" * 200
                else:
                    data = b"HTTP/1.0 200 OK\r\nX-Slow: " + b"s" * 200
                for i in range(len(data)):
                    if self.server.stopping.is_set():  # type: ignore[attr-defined]
                        break
                    self.wfile.write(data[i:i + 1])
                    self.wfile.flush()
                    time.sleep(0.05)
            else:
                self._send(404, b"nope")
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.hits = []  # type: ignore[attr-defined]
    srv.stopping = threading.Event()  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.stopping.set()  # type: ignore[attr-defined]
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def hconf(ws: Path, server) -> Confinement:
    port = server.server_address[1]
    return Confinement(
        workspace=ws,
        http_allow_hosts=(f"127.0.0.1:{port}",),
        http_timeout=0.5,
        http_max_bytes=CAP,
    )


def _base(server) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_host_not_allowed_refused_before_connecting(ws: Path, server) -> None:
    port = server.server_address[1]
    for allow in ((), ("example.org",), ("127.0.0.1:1",), ("localhost",)):
        c = Confinement(workspace=ws, http_allow_hosts=allow, http_timeout=0.5)
        with pytest.raises(Refused, match="is not on the http allow-list"):
            http_get(c, f"{_base(server)}/ok")
    assert server.hits == []
    # A bare host entry allows any port; names compare case-insensitively.
    c = Confinement(workspace=ws, http_allow_hosts=("LOCALHOST",), http_timeout=2)
    assert http_get(c, f"http://localhost:{port}/ok") == (200, "hello ok")


def test_ok(hconf: Confinement, server) -> None:
    assert http_get(hconf, f"{_base(server)}/ok") == (200, "hello ok")
    status, body = http_get(hconf, f"{_base(server)}/missing")
    assert (status, body) == (404, "nope")


def test_big_refused(hconf: Confinement, server) -> None:
    with pytest.raises(Refused, match=f"larger than the {CAP}-byte limit"):
        http_get(hconf, f"{_base(server)}/big")


def test_slow_times_out(hconf: Confinement, server) -> None:
    start = time.monotonic()
    with pytest.raises(Refused, match=r"^timed out after 0\.5s$"):
        http_get(hconf, f"{_base(server)}/slow")
    assert time.monotonic() - start < 1.4


@pytest.mark.parametrize("path", ["/drip", "/drip-headers"])
def test_dripping_server_cannot_stretch_the_fetch(hconf: Confinement, server, path: str) -> None:
    # issue 17.1: the timeout bounded each read, so a byte every 0.05 s kept a 0.5 s fetch
    # alive for the whole 10 s reply.
    start = time.monotonic()
    with pytest.raises(Refused, match=r"^timed out after 0\.5s$"):
        http_get(hconf, f"{_base(server)}{path}")
    assert time.monotonic() - start < 2.5


def test_same_host_redirect_followed(hconf: Confinement, server) -> None:
    assert http_get(hconf, f"{_base(server)}/redirect-same") == (200, "hello ok")
    assert server.hits == ["/redirect-same", "/ok"]


def test_other_host_redirect_refused(hconf: Confinement, server) -> None:
    with pytest.raises(Refused, match="redirect to host 'localhost' refused"):
        http_get(hconf, f"{_base(server)}/redirect-other")
    assert server.hits == ["/redirect-other"]


def test_redirect_loop_stops(hconf: Confinement, server) -> None:
    with pytest.raises(Refused, match="too many redirects"):
        http_get(hconf, f"{_base(server)}/loop")
    assert server.hits == ["/loop"] * 4


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/x", "file:///etc/passwd", "/etc/passwd"])
def test_non_http_schemes_refused(hconf: Confinement, url: str) -> None:
    c = Confinement(workspace=hconf.workspace, http_allow_hosts=("127.0.0.1", ""))
    with pytest.raises(Refused, match="only http and https"):
        http_get(c, url)


def test_connection_error_refused(ws: Path) -> None:
    # Grab a free port, then close it so nothing listens there.
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    c = Confinement(workspace=ws, http_allow_hosts=("127.0.0.1",), http_timeout=1)
    with pytest.raises(Refused, match="connection failed"):
        http_get(c, f"http://127.0.0.1:{port}/")


def test_env_proxy_ignored(hconf: Confinement, server, monkeypatch) -> None:
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:1")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:1")
    assert http_get(hconf, f"{_base(server)}/ok") == (200, "hello ok")


# --------------------------------------------------------------------------- shell


def _sconf(ws: Path, *allow: str, **kw) -> Confinement:
    return Confinement(workspace=ws, shell_allow=allow, **kw)


def test_program_not_allowed_refused(ws: Path) -> None:
    with pytest.raises(Refused, match="'rm' is not on the shell allow-list"):
        run_program(_sconf(ws, "echo"), ["rm", "-rf", "x"])
    with pytest.raises(Refused, match="empty"):
        run_program(_sconf(ws, "echo"), [])


def test_names_with_slash_refused(ws: Path) -> None:
    for name in ("/bin/echo", "./echo", "bin/echo"):
        with pytest.raises(Refused, match="bare program name"):
            run_program(_sconf(ws, "echo", name), [name, "hi"])


def test_shell_metacharacters_are_literal(ws: Path) -> None:
    args = ["a;", "b", "|", "$(id)", "`x`"]
    code, out = run_program(_sconf(ws, "echo"), ["echo", *args])
    assert code == 0
    assert out == "a; b | $(id) `x`\n"


def test_split_command_never_makes_a_shell(ws: Path) -> None:
    argv = split_command("echo hi; rm -rf /")
    assert argv == ["echo", "hi;", "rm", "-rf", "/"]
    code, out = run_program(_sconf(ws, "echo"), argv)
    assert (code, out) == (0, "hi; rm -rf /\n")
    with pytest.raises(Refused, match="cannot parse"):
        split_command("echo 'unterminated")


def test_timeout_kills_quickly(ws: Path) -> None:
    start = time.monotonic()
    with pytest.raises(Refused, match=r"^timed out after 0\.5s$"):
        run_program(_sconf(ws, "sleep", shell_timeout=0.5), ["sleep", "5"])
    assert time.monotonic() - start < 3


def test_output_cap_truncates(ws: Path) -> None:
    start = time.monotonic()
    code, out = run_program(_sconf(ws, "yes", shell_max_output=1000), ["yes"])
    assert time.monotonic() - start < 3
    assert out.endswith("[output truncated at 1000 bytes]")
    body = out[: -len("[output truncated at 1000 bytes]")]
    assert len(body.encode()) <= 1001  # the cap plus the newline before the note
    assert body.startswith("y\ny\n")


def test_environment_has_no_inherited_secrets(ws: Path, monkeypatch) -> None:
    monkeypatch.setenv("AKH_SECRET", "hunter2")
    # env is one of the programs refused without bubblewrap unless the user's config names it
    code, out = run_program(_sconf(ws, "env", shell_unconfined=("env",)), ["env"])
    assert code == 0
    assert "AKH_SECRET" not in out and "hunter2" not in out
    lines = set(out.splitlines())
    assert "PATH=/usr/local/bin:/usr/bin:/bin" in lines
    assert f"HOME={ws.resolve()}" in lines


def test_runs_in_workspace(ws: Path) -> None:
    (ws / "marker.txt").write_text("m")
    code, out = run_program(_sconf(ws, "ls"), ["ls"])
    assert (code, out) == (0, "marker.txt\n")


# --------------------------------------------------------------------------- issue 17


def test_hardlink_refused_both_ways(conf: Confinement, ws: Path, outside: Path) -> None:
    os.link(outside / "secret.txt", ws / "h.txt")
    with pytest.raises(Refused, match="'h.txt' has 2 hard links"):
        read_file(conf, "h.txt")
    with pytest.raises(Refused, match="hard links"):
        write_file(conf, "h.txt", "x")
    assert (outside / "secret.txt").read_text() == "TOP SECRET"


@pytest.mark.parametrize("entry", ["127.0.0.1:80x", ": 80", "+80", "127.0.0.1:", "127.0.0.1:0",
                                   "127.0.0.1:65536", "a b", "[::1", "[::1]80", "x:1:2", ""])
def test_malformed_allow_entry_refused_at_load(entry: str) -> None:
    from akh_tui.engine.config import AgentConfig
    from akh_tui.engine.errors import InputError

    with pytest.raises(InputError) as info:
        AgentConfig.from_dict({"http_allow_hosts": ["example.org", entry]}, file="s.toml", locate=lambda k: 12)
    assert (info.value.file, info.value.line, info.value.field) == ("s.toml", 12, "config.http_allow_hosts[1]")
    assert repr(entry) in info.value.message
    # and one built without config.py allows nothing, never "any port"
    with pytest.raises(ValueError):
        confine_http.parse_allow_entry(entry)


def test_malformed_allow_entry_in_a_scenario_names_file_and_line(tmp_path: Path) -> None:
    from akh_tui.engine.errors import InputError
    from akh_tui.engine.runs.scenario import bundled_data_dir, load_scenario

    path = tmp_path / "s.toml"
    path.write_text(f'name = "x"\nkg = ["{bundled_data_dir() / "kg" / "zoo.tsv"}"]\n[[goals]]\ndescription = "d"\n'
                    '[config]\nhttp_allow_hosts = ["127.0.0.1:80x"]\n')
    with pytest.raises(InputError) as info:
        load_scenario(str(path))
    assert str(info.value).startswith(f"{path}:6: field 'config.http_allow_hosts[0]': entry '127.0.0.1:80x'")


def test_good_allow_entries_accepted() -> None:
    from akh_tui.engine.config import AgentConfig

    entries = ["example.org", "Example.ORG:8080", "127.0.0.1:80", "[::1]:8443", "::1", "a-b.c_d.example"]
    assert AgentConfig.from_dict({"http_allow_hosts": entries}).http_allow_hosts == entries
    assert confine_http.parse_allow_entry("[::1]:8443") == ("::1", 8443)


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    d = {"data dir": tmp_path / "data", "config dir": tmp_path / "cfg"}
    for p in d.values():
        p.mkdir()
    return d


@pytest.mark.parametrize("where, why", [
    ("data", "is the data dir"),
    ("cfg", "is the config dir"),
    (".", "contains the data dir"),
    ("data/ws", "lies inside the data dir"),
    ("cfg/sub/ws", "lies inside the config dir"),
    ("home", "is your home folder"),
    ("link-to-data", "is the data dir"),
    ("/", "is the system folder /"),
    ("/usr", "is the system folder /usr"),
    ("/etc", "is the system folder /etc"),
    ("/tmp", "is the system folder /tmp"),
    ("/usr/share/akh", "lies inside the system folder /usr"),
    ("/proc/self", "lies inside the system folder /proc"),
])
def test_check_workspace_refuses(tmp_path: Path, dirs, where: str, why: str) -> None:
    from akh_tui.engine.errors import InputError

    (tmp_path / "home").mkdir()
    (tmp_path / "link-to-data").symlink_to(dirs["data dir"], target_is_directory=True)
    ws = Path(where) if where.startswith("/") else tmp_path / where
    with pytest.raises(InputError, match=why) as info:
        confine_files.check_workspace(ws, dirs, home=tmp_path / "home", file="s.toml", line=3)
    assert info.value.field == "config.workspace" and info.value.line == 3


def test_check_workspace_accepts_a_folder_of_its_own(tmp_path: Path, dirs, monkeypatch) -> None:
    confine_files.check_workspace(tmp_path / "ws", dirs, home=tmp_path / "home")
    confine_files.check_workspace(tmp_path / "home" / "work", dirs, home=tmp_path / "home")
    # a protected file (the store) refuses the folder holding it, not a sibling folder
    store = {"store": dirs["data dir"] / "session.db"}
    confine_files.check_workspace(dirs["data dir"] / "workspace", store, home=tmp_path / "home")
    monkeypatch.chdir(dirs["data dir"])
    from akh_tui.engine.errors import InputError

    with pytest.raises(InputError, match="contains the store"):
        confine_files.check_workspace(Path("."), store, home=tmp_path / "home")


def test_shell_falls_back_to_the_subreaper_without_bwrap(ws: Path, monkeypatch) -> None:
    from akh_tui.engine.confine import sandbox

    which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, path=None: None if name == "bwrap" else which(name, path=path))
    mech, why = sandbox._probe()
    assert mech == sandbox.SUBREAPER and "bwrap not found" in why
    monkeypatch.setattr(sandbox, "_chosen", None)
    assert sandbox.protection()[0] == sandbox.SUBREAPER
    assert run_program(_sconf(ws, "echo"), ["echo", "still works"]) == (0, "still works\n")


def test_tools_command_names_the_protection(cli) -> None:
    import json

    from akh_tui.engine.confine import sandbox

    rows = json.loads(cli("tools", "--json").stdout)
    shell = next(r for r in rows if r["tool"] == "shell_exec")
    assert shell["protection"]["mechanism"] == sandbox._probe()[0]
    assert f"shell_exec protection: {sandbox._probe()[0]}" in cli("tools").stdout
