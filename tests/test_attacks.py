"""The attack catalogue (issue 17): one case per attack a hostile goal text, scenario or program
could try on the confined tools, each with an id. Every case attacks the real thing (files on
disk, an HTTP server on 127.0.0.1 started and stopped here, real child processes) and asserts
the attack held: nothing read, written, reached or left running that should not be.

Shell cases run under each containment the machine offers (sandbox.py): `bubblewrap` where bwrap
works, and always the `subreaper` fallback. Cases marked BWRAP confine files and network, which
only bubblewrap does; without it they are skipped, and config load warns about such programs.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from akh_tui.engine.confine import policy as confine, sandbox
from akh_tui.engine.confine import process as confine_process
from akh_tui.engine.config import AgentConfig
from akh_tui.engine.confine.policy import Confinement, Refused
from akh_tui.engine.confine.http import http_get
from akh_tui.engine.confine.files import read_file, write_file
from akh_tui.engine.confine.process import run_program
from akh_tui.engine.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-attack-4711-do-not-leak"
BWRAP_OK = sandbox._probe()[0] == sandbox.BUBBLEWRAP
MECHANISMS = [
    pytest.param(sandbox.BUBBLEWRAP, marks=pytest.mark.skipif(not BWRAP_OK, reason="bubblewrap cannot run here")),
    sandbox.SUBREAPER,
]


@pytest.fixture
def mechanism(request, monkeypatch) -> str:
    monkeypatch.setattr(sandbox, "_chosen", request.param)
    monkeypatch.setattr(sandbox, "_why", "chosen by the test")
    return request.param


# --------------------------------------------------------------------------- the rig


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        port = self.server.server_address[1]
        routes = {
            "/ok": (200, {}, b"hello ok"),
            "/big": (200, {}, b"b" * 5_000),
            "/to-localhost": (302, {"Location": f"http://localhost:{port}/ok"}, b""),
            "/to-file": (302, {"Location": "file:///etc/passwd"}, b""),
            "/to-other-port": (302, {"Location": f"http://127.0.0.1:{port + 1}/ok"}, b""),
            "/loop": (302, {"Location": "/loop"}, b""),
        }
        try:
            if self.path == "/drip":
                self.send_response(200)
                self.send_header("Content-Length", "400")
                self.end_headers()
                for _ in range(400):
                    if self.server.stopping.is_set():  # type: ignore[attr-defined]
                        return
                    self.wfile.write(b"d")
                    self.wfile.flush()
                    time.sleep(0.02)
                return
            code, headers, body = routes.get(self.path, (404, {}, b"nope"))
            self.send_response(code)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


class Rig:
    """A workspace, a folder outside it holding a secret, and a loopback server."""

    def __init__(self, tmp_path: Path, server) -> None:
        self.tmp = tmp_path
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        self.outside = tmp_path / "outside"
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("TOP SECRET")
        self.server = server
        self.port = server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def files(self, **kw) -> Confinement:
        return Confinement(workspace=self.ws, max_file_bytes=kw.pop("max_file_bytes", 1000), **kw)

    def http(self, **kw) -> Confinement:
        kw.setdefault("http_allow_hosts", (f"127.0.0.1:{self.port}",))
        kw.setdefault("http_timeout", 0.5)
        kw.setdefault("http_max_bytes", 1000)
        return Confinement(workspace=self.ws, **kw)

    def shell(self, *allow: str, **kw) -> Confinement:
        kw.setdefault("shell_timeout", 3.0)
        # the containment cases run what a user's config let run without bubblewrap; the
        # refusal when it does not is issue 23's block at the end
        kw.setdefault("shell_unconfined", allow)
        return Confinement(workspace=self.ws, shell_allow=allow, **kw)

    def outside_untouched(self) -> None:
        assert sorted(p.name for p in self.outside.iterdir()) == ["secret.txt"]
        assert (self.outside / "secret.txt").read_text() == "TOP SECRET"


@pytest.fixture
def rig(tmp_path: Path):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.hits = []  # type: ignore[attr-defined]
    srv.stopping = threading.Event()  # type: ignore[attr-defined]
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    try:
        yield Rig(tmp_path, srv)
    finally:
        srv.stopping.set()  # type: ignore[attr-defined]
        srv.shutdown()
        srv.server_close()


def refused(fn: Callable, *args, match: str | None = None) -> str:
    with pytest.raises(Refused, match=match) as info:
        fn(*args)
    return str(info.value)


def running(marker: str) -> list[int]:
    """Pids of live processes whose command line has the argument `marker`."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in args:
            pids.append(int(name))
    return pids


_n = [0]


def marker() -> str:
    """A sleep duration no other process uses, to find what an attack left running."""
    _n[0] += 1
    return f"47.{os.getpid()}{_n[0]:03d}"


# --------------------------------------------------------------------------- files


def a_dotdot(r: Rig) -> None:
    for rel in ("../outside/secret.txt", "a/../../outside/secret.txt", ".."):
        refused(read_file, r.files(), rel, match=r"'\.\.'")
        refused(write_file, r.files(), rel, "pwned")
    r.outside_untouched()


def a_absolute(r: Rig) -> None:
    refused(read_file, r.files(), str(r.outside / "secret.txt"), match="absolute")
    refused(write_file, r.files(), str(r.outside / "new.txt"), "x", match="absolute")
    r.outside_untouched()


def a_symlink_file(r: Rig) -> None:
    (r.ws / "link.txt").symlink_to(r.outside / "secret.txt")
    refused(read_file, r.files(), "link.txt", match="outside the workspace")
    refused(write_file, r.files(), "link.txt", "pwned")
    r.outside_untouched()


def a_symlink_dir(r: Rig) -> None:
    (r.ws / "d").symlink_to(r.outside, target_is_directory=True)
    refused(read_file, r.files(), "d/secret.txt", match="outside the workspace")
    refused(write_file, r.files(), "d/new.txt", "pwned", match="outside the workspace")
    r.outside_untouched()


def a_proc_environ(r: Rig) -> None:
    refused(read_file, r.files(), "/proc/self/environ", match="absolute")
    (r.ws / "env").symlink_to("/proc/self/environ")
    refused(read_file, r.files(), "env", match="outside the workspace")
    (r.ws / "proc").symlink_to("/proc", target_is_directory=True)
    refused(read_file, r.files(), "proc/self/environ", match="outside the workspace")


def a_fifo(r: Rig) -> None:
    os.mkfifo(r.ws / "pipe")
    start = time.monotonic()
    refused(read_file, r.files(), "pipe", match="not a regular file")
    refused(write_file, r.files(), "pipe", "x", match="not a regular file")
    assert time.monotonic() - start < 5  # never blocks on the open


def a_device(r: Rig) -> None:
    (r.ws / "zero").symlink_to("/dev/zero")
    refused(read_file, r.files(), "zero", match="outside the workspace")
    refused(read_file, r.files(), "/dev/zero", match="absolute")


def a_hardlink(r: Rig) -> None:
    # issue 17.5: a hard link has no path to check; the file also lives outside.
    os.link(r.outside / "secret.txt", r.ws / "innocent.txt")
    msg = refused(read_file, r.files(), "innocent.txt", match="hard links")
    assert "TOP SECRET" not in msg
    refused(write_file, r.files(), "innocent.txt", "pwned", match="hard links")
    r.outside_untouched()


def a_file_size_cap(r: Rig) -> None:
    (r.ws / "big.txt").write_bytes(b"x" * 1001)
    refused(read_file, r.files(), "big.txt", match="1000-byte limit")
    refused(write_file, r.files(), "new.txt", "y" * 1001, match="1000-byte limit")
    assert not (r.ws / "new.txt").exists()


# --------------------------------------------------------------------------- http


def _spelling_refused(r: Rig, url: str) -> None:
    refused(http_get, r.http(), url, match="allow-list|user names|invalid port|no host")
    assert r.server.hits == []


HOST_SPELLINGS = {
    "http-host-localhost": "http://localhost:{port}/ok",
    "http-host-short-ipv4": "http://127.1:{port}/ok",
    "http-host-decimal": "http://2130706433:{port}/ok",
    "http-host-hex": "http://0x7f000001:{port}/ok",
    "http-host-trailing-dot": "http://127.0.0.1.:{port}/ok",
    "http-host-ipv4-mapped-v6": "http://[::ffff:127.0.0.1]:{port}/ok",
    "http-host-userinfo": "http://127.0.0.1:{port}@evil.example/ok",
    "http-host-fragment": "http://evil.example#@127.0.0.1:{port}/ok",
    "http-host-other-port": "http://127.0.0.1:{other}/ok",
}


def a_http_redirect_other_host(r: Rig) -> None:
    refused(http_get, r.http(), f"{r.base}/to-localhost", match="redirect to host 'localhost' refused")
    refused(http_get, r.http(), f"{r.base}/to-other-port", match="redirect to host")
    assert r.server.hits == ["/to-localhost", "/to-other-port"]


def a_http_redirect_file(r: Rig) -> None:
    refused(http_get, r.http(), f"{r.base}/to-file", match="only http and https")


def a_http_redirect_loop(r: Rig) -> None:
    refused(http_get, r.http(), f"{r.base}/loop", match="too many redirects")
    assert len(r.server.hits) == confine.MAX_REDIRECTS + 1


def a_http_size_cap(r: Rig) -> None:
    refused(http_get, r.http(), f"{r.base}/big", match="1000-byte limit")


def a_http_drip(r: Rig) -> None:
    # issue 17.1: one byte every 0.02 s; each read is quick, the reply takes 8 s.
    start = time.monotonic()
    refused(http_get, r.http(http_max_bytes=10_000), f"{r.base}/drip", match=r"^timed out after 0\.5s$")
    assert time.monotonic() - start < 2.5


def a_http_env_proxy(r: Rig) -> None:
    old = {k: os.environ.get(k) for k in ("http_proxy", "HTTP_PROXY")}
    os.environ.update(http_proxy="http://127.0.0.1:1", HTTP_PROXY="http://127.0.0.1:1")
    try:
        assert http_get(r.http(), f"{r.base}/ok") == (200, "hello ok")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def a_http_malformed_port_entry(r: Rig) -> None:
    # issue 17.3: "127.0.0.1:80x" once meant "127.0.0.1, any port".
    for entry in ("127.0.0.1:80x", "127.0.0.1: 80", "127.0.0.1:+80", f"127.0.0.1:{r.port}x"):
        refused(http_get, r.http(http_allow_hosts=(entry,)), f"{r.base}/ok", match="allow-list")
        with pytest.raises(InputError) as info:
            AgentConfig.from_dict({"http_allow_hosts": [entry]}, file="s.toml", locate=lambda k: 4)
        assert info.value.field == "config.http_allow_hosts[0]" and info.value.line == 4
    assert r.server.hits == []


FILE_AND_HTTP: dict[str, Callable[[Rig], None]] = {
    "path-dotdot": a_dotdot,
    "path-absolute": a_absolute,
    "symlink-file-outside": a_symlink_file,
    "symlink-dir-outside": a_symlink_dir,
    "proc-environ-via-file": a_proc_environ,
    "fifo": a_fifo,
    "device": a_device,
    "hardlink-outside": a_hardlink,
    "file-size-cap": a_file_size_cap,
    "http-redirect-other-host": a_http_redirect_other_host,
    "http-redirect-file-scheme": a_http_redirect_file,
    "http-redirect-loop": a_http_redirect_loop,
    "http-size-cap": a_http_size_cap,
    "http-drip-whole-fetch-deadline": a_http_drip,
    "http-env-proxy": a_http_env_proxy,
    "http-allow-malformed-port": a_http_malformed_port_entry,
}


@pytest.mark.parametrize("attack", list(FILE_AND_HTTP), ids=list(FILE_AND_HTTP))
def test_file_and_http_attack_held(rig: Rig, attack: str) -> None:
    FILE_AND_HTTP[attack](rig)


@pytest.mark.parametrize("attack", list(HOST_SPELLINGS), ids=list(HOST_SPELLINGS))
def test_host_spelling_refused_before_connecting(rig: Rig, attack: str) -> None:
    url = HOST_SPELLINGS[attack].format(port=rig.port, other=rig.port + 1)
    _spelling_refused(rig, url)


# --------------------------------------------------------------------------- shell: descendants


def s_setsid_outlives(r: Rig) -> None:
    # issue 17.2: `setsid -f` leaves the process group the tool used to kill.
    m = marker()
    code, out = run_program(r.shell("sh", "setsid"), ["sh", "-c", f"setsid -f sleep {m}; echo started"])
    assert (code, out) == (0, "started\n")
    assert running(m) == []


def s_setsid_after_timeout(r: Rig) -> None:
    m = marker()
    refused(run_program, r.shell("sh", "setsid", shell_timeout=0.5),
            ["sh", "-c", f"setsid -f sleep {m}; sleep 30"], match="timed out")
    assert running(m) == []


def s_setsid_after_output_cap(r: Rig) -> None:
    m = marker()
    code, out = run_program(r.shell("sh", "setsid", "yes", shell_max_output=100),
                            ["sh", "-c", f"setsid -f sleep {m}; yes"])
    # stopped, not finished: killed by the cap (a signal, code < 0), or `yes` met the closed pipe
    # first and sh reported SIGPIPE (141); which comes first is the scheduler's, on a busy machine
    assert out.endswith("[output truncated at 100 bytes]") and (code < 0 or code == 128 + 13)
    assert running(m) == []


def s_detached_writer(r: Rig) -> None:
    # issue 17.2: a detached sh wrote a file outside the workspace after the tool returned.
    target = r.outside / "late.txt"
    run_program(r.shell("sh", "setsid"),
                ["sh", "-c", f"setsid -f sh -c 'trap \"\" HUP TERM; sleep 0.3; echo pwned > {target}'"])
    time.sleep(0.8)
    r.outside_untouched()


def s_nohup_daemon(r: Rig) -> None:
    m = marker()
    run_program(r.shell("sh", "nohup"), ["sh", "-c", f"nohup sleep {m} >/dev/null 2>&1 &"])
    assert running(m) == []


SHELL_DESCENDANTS: dict[str, Callable[[Rig], None]] = {
    "shell-setsid-outlives-tool": s_setsid_outlives,
    "shell-setsid-outlives-timeout": s_setsid_after_timeout,
    "shell-setsid-outlives-output-cap": s_setsid_after_output_cap,
    "shell-detached-writer": s_detached_writer,
    "shell-nohup-background": s_nohup_daemon,
}


@pytest.mark.parametrize("mechanism", MECHANISMS, indirect=True)
@pytest.mark.parametrize("attack", list(SHELL_DESCENDANTS), ids=list(SHELL_DESCENDANTS))
def test_shell_descendants_gone_when_tool_returns(rig: Rig, mechanism: str, attack: str) -> None:
    SHELL_DESCENDANTS[attack](rig)


# --------------------------------------------------------------------------- shell: the API key
#
# The engine holds the key in its environment from its start, so /proc/<pid>/environ shows it
# whatever os.environ says later; each case runs an engine process started with the key.

_ENGINE = """
import json, os, sys
from akh_tui.engine.confine import policy as confine, process as confine_process, sandbox
sandbox._chosen, sandbox._why = sys.argv[1], "test"
results = {}
for attack, argv in json.loads(sys.argv[2]).items():
    argv = [a.replace("{pid}", str(os.getpid())) for a in argv]
    conf = confine.Confinement(workspace=sys.argv[3], shell_allow=(argv[0],), shell_unconfined=(argv[0],),
                               shell_timeout=20)
    try:
        code, out = confine_process.run_program(conf, argv)
    except confine.Refused as exc:
        code, out = None, str(exc)
    results[attack] = {"code": code, "out": out}
print(json.dumps(results))
"""

_READ_MEMORY = (
    "import re\n"
    "found = False\n"
    "maps = open('/proc/{pid}/maps').read().splitlines()\n"
    "mem = open('/proc/{pid}/mem', 'rb')\n"
    "for line in maps:\n"
    "    span, perms = line.split()[:2]\n"
    "    if 'r' not in perms: continue\n"
    "    a, b = (int(x, 16) for x in span.split('-'))\n"
    "    try:\n"
    "        mem.seek(a); found = found or b'" + SECRET + "' in mem.read(b - a)\n"
    "    except (OSError, ValueError, OverflowError): pass\n"
    "print('FOUND' if found else 'not found')\n"
)

KEY_ATTACKS: dict[str, list[str]] = {
    "key-env-program": ["env"],
    "key-cat-proc-pid-environ": ["cat", "/proc/{pid}/environ"],
    "key-sh-parent-environ": ["sh", "-c", "cat /proc/$PPID/environ; cat /proc/1/environ; cat /proc/{pid}/environ"],
    "key-python3-c-environ": ["python3", "-c", "print(open('/proc/{pid}/environ').read())"],
    "key-python3-c-memory": ["python3", "-c", _READ_MEMORY],
    "key-cat-every-proc-environ": ["sh", "-c", "cat /proc/*/environ 2>/dev/null"],
}
_key_results: dict[str, dict] = {}  # mechanism -> attack -> result: one engine per mechanism


@pytest.mark.parametrize("mechanism", MECHANISMS, indirect=True)
@pytest.mark.parametrize("attack", list(KEY_ATTACKS), ids=list(KEY_ATTACKS))
def test_api_key_out_of_every_childs_reach(tmp_path: Path, mechanism: str, attack: str) -> None:
    if mechanism not in _key_results:
        ws = tmp_path / "ws"
        ws.mkdir()
        env = dict(os.environ, OPENAI_API_KEY=SECRET, PYTHONPATH=str(ROOT))
        proc = subprocess.run(
            [sys.executable, "-c", _ENGINE, mechanism, json.dumps(KEY_ATTACKS), str(ws)],
            env=env, capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        _key_results[mechanism] = json.loads(proc.stdout)
    result = _key_results[mechanism][attack]
    assert SECRET not in result["out"] and "FOUND" not in result["out"], result


# --------------------------------------------------------------------------- shell: per program
#
# issue 17.6: the allow-list names programs, but env, find -exec, python3 -c and sort -o run or
# write what they are told. With bubblewrap, whatever they run stays in the sandbox: the
# workspace is the one writable folder. Without it, config load warns (test below).

PROGRAM_ESCAPES: dict[str, tuple[str, list[str]]] = {
    "allow-env-runs-sh": ("env", ["env", "sh", "-c", "echo pwned > {out}/env.txt"]),
    "allow-find-exec": ("find", ["find", ".", "-maxdepth", "0", "-exec", "sh", "-c", "echo pwned > {out}/find.txt", ";"]),
    "allow-python3-c": ("python3", ["python3", "-c", "open('{out}/py.txt', 'w').write('pwned')"]),
    "allow-sort-o": ("sort", ["sort", "-o", "{out}/sort.txt", "/etc/passwd"]),
    "allow-tee": ("tee", ["tee", "{out}/tee.txt"]),
    "allow-sed-w": ("sed", ["sed", "-n", "w {out}/sed.txt", "/etc/passwd"]),
}


@pytest.mark.skipif(not BWRAP_OK, reason="only bubblewrap confines files; without it config load warns")
@pytest.mark.parametrize("attack", list(PROGRAM_ESCAPES), ids=list(PROGRAM_ESCAPES))
def test_allow_listed_program_cannot_write_outside(rig: Rig, monkeypatch, attack: str) -> None:
    monkeypatch.setattr(sandbox, "_chosen", sandbox.BUBBLEWRAP)
    name, argv = PROGRAM_ESCAPES[attack]
    argv = [a.replace("{out}", str(rig.outside)) for a in argv]
    try:
        run_program(rig.shell(name), argv)
    except Refused:
        pass  # a non-zero exit or refusal is fine; what matters is nothing landed outside
    rig.outside_untouched()


@pytest.mark.skipif(not BWRAP_OK, reason="only bubblewrap takes the network away")
def test_allow_listed_program_has_no_network(rig: Rig, monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "_chosen", sandbox.BUBBLEWRAP)
    code = (f"import urllib.request\ntry:\n    print(urllib.request.urlopen('{rig.base}/ok', timeout=2).read())\n"
            "except Exception as e:\n    print('no network', type(e).__name__)")
    _, out = run_program(rig.shell("python3"), ["python3", "-c", code])
    assert "no network" in out
    assert rig.server.hits == []


@pytest.mark.parametrize("attack", list(PROGRAM_ESCAPES), ids=list(PROGRAM_ESCAPES))
def test_config_load_warns_about_the_program(attack: str) -> None:
    name = PROGRAM_ESCAPES[attack][0]
    cfg = AgentConfig.from_dict({"shell_allow": ["echo", name, "ls"]}, file="s.toml", locate=lambda k: 9)
    assert len(cfg.warnings) == 1
    assert cfg.warnings[0].startswith("s.toml:9: field 'config.shell_allow': '" + name + "' ")


# ---- issue 23, shell_exec without bubblewrap ----
#
# Without bubblewrap nothing keeps a program in the workspace: the programs the load warning
# names (confine_process.RISKY_PROGRAMS) are refused when shell_exec runs them, unless the user's own
# config lists them under [shell] unconfined; `akh-tui tools` says which. "No bwrap" is made the
# way test_confine's fallback test makes it: the probe finds no `bwrap` program.

import shutil  # noqa: E402  (this block's own imports: the lead merges blocks appended here)

from akh_tui.engine.config import SERVED_ENV  # noqa: E402
from akh_tui.engine.paths import bundled_data_dir  # noqa: E402
from akh_tui.engine import Locations, Run  # noqa: E402
from akh_tui.engine.runs.userconfig import UserConfig  # noqa: E402

# the issue's four rows, then two more programs of the same table
NO_BWRAP_ROWS = ["allow-env-runs-sh", "allow-find-exec", "allow-python3-c", "allow-sort-o", "allow-tee", "allow-sed-w"]
_LANDS = {"allow-env-runs-sh": "env.txt", "allow-find-exec": "find.txt", "allow-python3-c": "py.txt",
          "allow-sort-o": "sort.txt", "allow-tee": "tee.txt", "allow-sed-w": "sed.txt"}


@pytest.fixture
def no_bwrap(monkeypatch) -> None:
    which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name, path=None: None if name == "bwrap" else which(name, path=path))
    monkeypatch.setattr(sandbox, "_chosen", None)
    assert sandbox.protection()[0] == sandbox.SUBREAPER


def _argv(rig: Rig, attack: str) -> tuple[str, list[str]]:
    name, argv = PROGRAM_ESCAPES[attack]
    return name, [a.replace("{out}", str(rig.outside)) for a in argv]


@pytest.mark.parametrize("attack", NO_BWRAP_ROWS, ids=NO_BWRAP_ROWS)
def test_no_bwrap_risky_program_refused(rig: Rig, no_bwrap, attack: str) -> None:
    name, argv = _argv(rig, attack)
    with pytest.raises(Refused) as exc:
        run_program(rig.shell(name, shell_unconfined=()), argv)
    msg = str(exc.value)
    # the program, why (the warning's own words), and the setting that would allow it
    assert msg.startswith(f"program '{name}' refused: it {confine_process.risky_programs([name])[0][1]}")
    assert "bubblewrap is not in force" in msg
    assert f'[shell] unconfined = ["{name}"]' in msg
    rig.outside_untouched()


@pytest.mark.parametrize("attack", NO_BWRAP_ROWS, ids=NO_BWRAP_ROWS)
def test_no_bwrap_risky_program_runs_only_when_the_user_config_lists_it(rig: Rig, no_bwrap, attack: str) -> None:
    name, argv = _argv(rig, attack)
    with pytest.raises(Refused, match="bubblewrap is not in force"):  # another program listed is not this one
        run_program(rig.shell(name, shell_unconfined=("echo", name + "x")), argv)
    rig.outside_untouched()
    run_program(rig.shell(name, shell_unconfined=(name,)), argv)
    # what the user accepted: without bubblewrap it does what the warning says it can
    assert (rig.outside / _LANDS[attack]).exists()


def test_no_bwrap_plain_program_still_runs(rig: Rig, no_bwrap) -> None:
    (rig.ws / "a.txt").write_text("in the workspace\n")
    assert run_program(rig.shell("cat", shell_unconfined=()), ["cat", "a.txt"]) == (0, "in the workspace\n")


def test_no_bwrap_versioned_name_refused_as_its_family(rig: Rig, no_bwrap) -> None:
    with pytest.raises(Refused, match=r"program 'python3' refused: it runs any code"):
        run_program(rig.shell("python3", shell_unconfined=("python",)), ["python3", "-c", "print(1)"])


@pytest.mark.skipif(not BWRAP_OK, reason="bubblewrap cannot run here")
def test_with_bwrap_risky_program_needs_no_setting(rig: Rig, monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "_chosen", sandbox.BUBBLEWRAP)
    assert run_program(rig.shell("python3", shell_unconfined=()), ["python3", "-c", "print(6 * 7)"]) == (0, "42\n")


def test_config_load_warning_names_the_setting() -> None:
    cfg = AgentConfig.from_dict({"shell_allow": ["sort"]}, file="s.toml", locate=lambda k: 4)
    assert cfg.warnings == ["s.toml:4: field 'config.shell_allow': 'sort' writes any file with -o; without bubblewrap "
                            "shell_exec refuses it unless your user config's [shell] unconfined lists it"]


def _python3_run(tmp_path: Path, config: str | None) -> Run:
    """A run of the shadow scenario with python3 allow-listed, the user config holding `config`."""
    data = bundled_data_dir()
    sc = tmp_path / "py.toml"
    sc.write_text((data / "scenarios" / "shadow.toml").read_text()
                  .replace('"../kg/zoo.tsv"', json.dumps(str(data / "kg" / "zoo.tsv")))
                  .replace('"../rules/biology.toml"', json.dumps(str(data / "rules" / "biology.toml")))
                  .replace('shell_allow = ["echo"]', 'shell_allow = ["echo", "python3"]'))
    cfg_file = tmp_path / "config.toml"
    if config is not None:
        cfg_file.write_text(config)
    return Run.start(Locations(tmp_path / "data", cfg_file), str(sc), store=":memory:")


@pytest.mark.parametrize("config", [None, 'theme = "akh-dark"\n', '[shell]\nunconfined = ["sort"]\n'])
def test_no_bwrap_run_refuses_without_the_user_setting(tmp_path: Path, no_bwrap, config: str | None) -> None:
    run = _python3_run(tmp_path, config)
    try:
        with pytest.raises(Refused, match=r"program 'python3' refused: .*\[shell\] unconfined"):
            run_program(run.agent.confinement(), ["python3", "-c", "print(6 * 7)"])  # what shell_exec calls
    finally:
        run.close(checkpoint=False)


def test_no_bwrap_run_honours_the_user_setting(tmp_path: Path, no_bwrap, monkeypatch) -> None:
    run = _python3_run(tmp_path, '# mine\n[shell]\nunconfined = ["python3"]\n')
    try:
        assert run_program(run.agent.confinement(), ["python3", "-c", "print(6 * 7)"]) == (0, "42\n")
        # a served tab is driven by whoever holds the page: never unconfined there
        monkeypatch.setenv(SERVED_ENV, "1")
        with pytest.raises(Refused, match="a served tab"):
            run_program(run.agent.confinement(), ["python3", "-c", "print(6 * 7)"])
    finally:
        run.close(checkpoint=False)


@pytest.mark.parametrize(("text", "where"), [
    ('[shell]\nunconfined = "python3"\n', ":2: field 'shell.unconfined': must be a list"),
    ('theme = "x"\n[shell]\nunconfined = ["sort", "/usr/bin/python3"]\n',
     ":3: field 'shell.unconfined[1]': entry '/usr/bin/python3' is not a program name"),
    ('[shell]\nallow = ["sort"]\n', ":1: field 'shell': must be a table with unconfined"),
    ('shell = ["sort"]\n', ":1: field 'shell': must be a table with unconfined"),
])
def test_user_config_shell_setting_errors_name_file_line_field(tmp_path: Path, text: str, where: str) -> None:
    f = tmp_path / "config.toml"
    f.write_text(text)
    cfg = UserConfig.load(f)
    assert cfg.error is not None and f"{f}{where}" in cfg.error
    assert cfg.shell_unconfined == []  # a config that cannot be read allows nothing
    assert f.read_text() == text  # the user's file is kept as written


def _tools(tmp_path: Path, config: str | None, *args: str, bwrap: bool = False) -> subprocess.CompletedProcess:
    cfg_file = tmp_path / "config.toml"
    if config is not None:
        cfg_file.write_text(config)
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), AKH_TUI_CONFIG=str(cfg_file), COLUMNS="200")
    if not bwrap:
        env["PATH"] = str(tmp_path / "empty-bin")  # a machine without bwrap: the probe finds none
    proc = subprocess.run([sys.executable, "-m", "akh_tui.cli", "tools", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_no_bwrap_tools_command_says_which_programs_are_refused(tmp_path: Path) -> None:
    shell = next(r for r in json.loads(_tools(tmp_path, None, "--json").stdout) if r["tool"] == "shell_exec")
    prot = shell["protection"]
    assert prot["mechanism"] == sandbox.SUBREAPER
    assert prot["refused"] == sorted(confine_process.RISKY_PROGRAMS) and prot["unconfined"] == []
    assert {"env", "find", "python", "sort"} <= set(prot["refused"])
    text = _tools(tmp_path, None).stdout
    assert "without bubblewrap, shell_exec refuses" in text and ", sort," in text
    assert f"list it in [shell] unconfined of {tmp_path / 'config.toml'}" in " ".join(text.split())


def test_no_bwrap_tools_command_shows_the_user_setting(tmp_path: Path) -> None:
    config = '[shell]\nunconfined = ["sort", "python3"]\n'
    prot = next(r for r in json.loads(_tools(tmp_path, config, "--json").stdout)
                if r["tool"] == "shell_exec")["protection"]
    assert prot["unconfined"] == ["python3", "sort"]
    assert "sort" not in prot["refused"] and "env" in prot["refused"]
    text = " ".join(_tools(tmp_path, config).stdout.split())
    assert "lets these run without bubblewrap: python3, sort" in text


@pytest.mark.skipif(not BWRAP_OK, reason="bubblewrap cannot run here")
def test_with_bwrap_tools_command_refuses_none(tmp_path: Path) -> None:
    prot = next(r for r in json.loads(_tools(tmp_path, None, "--json", bwrap=True).stdout)
                if r["tool"] == "shell_exec")["protection"]
    assert prot["mechanism"] == sandbox.BUBBLEWRAP and prot["refused"] == []
    assert "refuses no program here" in _tools(tmp_path, None, bwrap=True).stdout

# ---- issue 23, serve admits only its owner ----
#
# `akh-tui serve` admitted anyone who could reach the port, from any page: a WebSocket with a
# foreign Origin and Host stepped the workbench; through its psyche editor such a client saved
# `veto_patterns = []` where the owner's next plain `agent run --scenario zoo` loaded it; every
# connection got an app process. The request rows run against one real `serve` on 127.0.0.1
# (raw HTTP, so Host and Origin are what the attacker chooses); none may be admitted, and none
# may start an app process. The rows after them attack what a served tab writes.

from tests.cli.test_serve import Served  # noqa: E402

WS_HANDSHAKE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
SERVE_ATTACKS: dict[str, dict] = {
    "page-without-token": {"path": "/"},
    "page-guessed-token": {"path": "/?token=guess"},
    "page-token-and-more": {"path": "/?token={token}x"},
    "static-guessed-token": {"path": "/guess/static/js/textual.js"},
    "page-dns-rebinding-host": {"path": "/?token={token}", "host": "evil.example:{port}"},
    "page-fetched-by-another-site": {"path": "/?token={token}", "origin": "http://evil.example"},
    "static-without-token": {"path": "/static/js/textual.js"},
    "download-without-token": {"path": "/download/some-key"},
    "ws-without-token": {"path": "/ws", "ws": True},
    "ws-guessed-token": {"path": "/guess/ws?width=80&height=24", "ws": True},
    "ws-from-another-site": {"path": "/{token}/ws", "ws": True, "origin": "http://evil.example"},
    "ws-from-another-local-port": {"path": "/{token}/ws", "ws": True, "origin": "http://127.0.0.1:1"},
    "ws-from-a-sandboxed-frame": {"path": "/{token}/ws", "ws": True, "origin": "null"},
    "ws-without-origin": {"path": "/{token}/ws", "ws": True, "origin": None},
    "ws-dns-rebinding-host": {"path": "/{token}/ws", "ws": True, "host": "evil.example:{port}",
                              "origin": "http://evil.example:{port}"},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Served:
    server = Served(tmp_path_factory.mktemp("served"))
    yield server
    server.stop()


def _request(served: Served, path: str, host: str | None = None, origin: str | None = "",
             ws: bool = False) -> tuple[int, str]:
    """One GET to the server with the Host and Origin given ("" origin: the server's own)."""
    import http.client

    def fill(text: str) -> str:
        return text.replace("{token}", served.token).replace("{port}", str(served.port))

    headers = {"Host": fill(host or f"127.0.0.1:{served.port}")}
    if origin is not None:
        headers["Origin"] = fill(origin or f"http://127.0.0.1:{served.port}")
    if ws:
        headers |= WS_HANDSHAKE
    conn = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    try:
        conn.request("GET", fill(path), headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_serve_admits_the_printed_url(served: Served) -> None:
    """The control for the rows below: the page at the printed URL opens, from 127.0.0.1 and
    localhost alike."""
    assert _request(served, f"/?token={served.token}")[0] == 200
    status, page = _request(served, f"/?token={served.token}", host=f"localhost:{served.port}",
                            origin=f"http://localhost:{served.port}")
    assert status == 200 and f"/{served.token}/ws" in page  # the page's WebSocket URL carries the token


@pytest.mark.parametrize("attack", list(SERVE_ATTACKS), ids=list(SERVE_ATTACKS))
def test_serve_refuses(served: Served, attack: str) -> None:
    status, page = _request(served, **SERVE_ATTACKS[attack])
    assert status == 403, (status, page[:300])
    assert "the URL that `akh-tui serve` printed" in page
    assert served.app_processes() == []  # refused before any app process started


def test_serve_keeps_its_token_and_its_store_to_itself(served: Served) -> None:
    assert _request(served, f"/?token={served.token}")[0] == 200
    deadline = time.monotonic() + 30
    while not any("/?token=[redacted]" in line for line in served.lines):  # its request log
        assert time.monotonic() < deadline, "".join(served.lines)
        time.sleep(0.1)
    # the printed URL is the one line that shows the token: the request log masks it
    assert [line for line in served.lines if served.token in line] == [f"akh-tui serving the workbench: open {served.url}\n"]
    assert not served.data.joinpath("session.db").exists()  # no request here got a workbench


@pytest.fixture
def served_tab(monkeypatch) -> Callable[[bool], None]:
    """Switch this process between a served tab's (SERVED_ENV, as `serve` sets it for every tab)
    and a plain run's."""
    from akh_tui.engine.config import SERVED_ENV

    def be(on: bool) -> None:
        if on:
            monkeypatch.setenv(SERVED_ENV, "1")
        else:
            monkeypatch.delenv(SERVED_ENV, raising=False)

    return be


def test_served_save_never_reaches_a_plain_run(tmp_path: Path, served_tab) -> None:
    from akh_tui.engine.paths import Locations
    from akh_tui.engine import Run

    loc = Locations.resolve(tmp_path / "data")
    served_tab(True)
    tab = Run.start(loc, "zoo", workbench=True)
    try:
        where = tab.save_psyche("[shadow]\nveto_patterns = []\n")  # what the editor's ctrl+w does
        assert where == tab.psyche_file() and loc.served_dir in where.parents
        # a path of the tab's choosing outside the served folder is refused, and nothing is written
        with pytest.raises(InputError, match="a served tab saves only under"):
            tab.save_psyche("[shadow]\nveto_patterns = []\n", path=loc.psyche_dir / "zoo.toml")
        assert not loc.psyche_dir.exists()
    finally:
        tab.close()
    served_tab(False)  # the owner's next plain `agent run --scenario zoo`
    plain = Run.continue_or_start(loc, "zoo", fresh=True)
    try:
        assert [p.name for p in plain.current_psyche().shadow.veto_patterns] == ["destructive_action"]
        assert "psyche from" not in plain.note
    finally:
        plain.close()
    served_tab(True)  # the next served tab starts from the served save
    again = Run.start(loc, "zoo", workbench=True)
    try:
        assert again.current_psyche().shadow.veto_patterns == [] and str(loc.served_dir) in again.note
    finally:
        again.close()


def test_served_run_never_moves_the_current_run(tmp_path: Path, served_tab) -> None:
    from akh_tui.engine.paths import Locations
    from akh_tui.engine import Run

    loc = Locations.resolve(tmp_path / "data")
    served_tab(False)
    owner = Run.start(loc, "zoo")
    owners_run = owner.run_id
    owner.run_cycles(3)
    owner.close()
    served_tab(True)
    tab = Run.start(loc, "zoo", workbench=True)
    try:
        assert tab.run_id != owners_run
        tab.run_cycles(2)
        tab.fork(1, "tab-branch")  # a new branch of its own run is current for the tab only
        tab.run_cycles(1)
        assert tab.record(2) is not None
    finally:
        tab.close()
    served_tab(False)  # `agent resume` and `akh-tui --resume` open what Run.resume opens
    resumed = Run.resume(loc)
    try:
        assert resumed.run_id == owners_run and resumed.cycle == 3
        assert [b["name"] for b in resumed.branches() if b["current"]] == ["main"]
    finally:
        resumed.close()


def test_served_theme_never_reaches_the_owners_config(tmp_path: Path, served_tab) -> None:
    from akh_tui.engine.runs.userconfig import UserConfig

    config = tmp_path / "config.toml"
    config.write_text('theme = "textual-dark"\n', encoding="utf-8")
    served_tab(True)
    tab = UserConfig.load(config)
    tab.save_theme("nord")
    assert tab.theme == "nord"  # the tab keeps its choice for itself
    assert config.read_text(encoding="utf-8") == 'theme = "textual-dark"\n'

# ---- issue 23, opening a scenario (or pin, or sweep) runs no code the user did not agree to ----
# A folder holding `evil.toml` and `evilmod.py`: importing evilmod writes MARKER beside it, so a
# marker that does not exist proves nothing of the folder was imported. Every command path the
# issue lists runs for real (a child `akh-tui` process, with `python -m`, so the current
# directory is on its path too) in the test's own data dir and config folder.

import asyncio  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402

ZOO_KG = ROOT / "akh_tui" / "data" / "kg" / "zoo.tsv"
EVIL_MODULE = """\
from pathlib import Path
Path(__file__).with_name("MARKER").write_text("evilmod ran")


class Decider:
    kind = "evil"

    def choose(self, agent, focus, ctx, candidates, utility):
        return utility, None

    def learn(self, agent, focus, tool, act):
        pass

    def model_memory(self, limit):
        return None


def make():
    return []


def make_decider():
    return Decider()
"""


def _evil_folder(tmp_path: Path, line: str = 'tools = ["evilmod:make"]', name: str = "evil") -> Path:
    d = tmp_path / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "evilmod.py").write_text(EVIL_MODULE)
    (d / "evil.toml").write_text(f'name = "evil"\nseed = 1\nkg = [{json.dumps(str(ZOO_KG))}]\n{line}\n'
                                 '[[goals]]\ndescription = "Find mammals"\n')
    return d


def _akh(tmp_path: Path, *args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 180):
    """`akh-tui ARGS` in this process (a fresh interpreter costs ~0.8 s of CPU; these tests run 33
    commands), with its own environment, folder and captured output, as a CompletedProcess.

    Every module imported from under tmp_path is dropped afterwards: each test's plugin is a
    module named `evilmod`, and one left in sys.modules would let the next test's wrong import
    pass without running it (and writing its MARKER)."""
    from contextlib import redirect_stderr, redirect_stdout
    import io

    from akh_tui.cli.root import main

    e = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), AKH_TUI_CONFIG=str(tmp_path / "cfg" / "config.toml"),
             COLUMNS="250")
    e.pop("AKH_TUI_SERVED", None)
    e.update(env or {})
    saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
    before = set(sys.modules)
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(e)
    os.chdir(cwd or tmp_path)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = main(list(args))
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.path[:] = saved_path
        root = str(tmp_path)
        for name in set(sys.modules) - before:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(root):
                del sys.modules[name]
    return subprocess.CompletedProcess(["akh-tui", *args], rc, out.getvalue(), err.getvalue())


def _akh_process(tmp_path: Path, *args: str, env: dict | None = None, cwd: Path | None = None, timeout: int = 180):
    """`akh-tui ARGS` in a process of its own, where a test runs several commands that must each
    start fresh, as a user's do (the engine imports a trusted plugin once per process)."""
    e = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), AKH_TUI_CONFIG=str(tmp_path / "cfg" / "config.toml"),
             COLUMNS="250")
    e.pop("AKH_TUI_SERVED", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "akh_tui.cli", *args], cwd=cwd or tmp_path, env=e,
                          capture_output=True, text=True, timeout=timeout)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_agent_run_imports_no_untrusted_plugin_and_says_how_to_agree(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1")
    assert p.returncode == 0, p.stderr
    assert not (d / "MARKER").exists()
    err = _flat(p.stderr)
    assert f"{d} is not a trusted folder (it holds evilmod.py)" in err
    assert "--allow-plugins" in err and "--trust" in err and "left out" in err
    # the user agrees for this run: now (and only now) it runs
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1", "--fresh",
             "--allow-plugins")
    assert p.returncode == 0, p.stderr
    assert (d / "MARKER").exists()


def test_a_scenario_decider_from_an_untrusted_folder_is_refused_before_import(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path, 'decider = "evilmod:make_decider"')
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1")
    assert p.returncode == 2, p.stderr
    assert not (d / "MARKER").exists()
    assert "field 'decider'" in _flat(p.stderr) and str(d) in _flat(p.stderr)
    assert "Traceback" not in p.stderr
    # --decider from the command line is a reference like any other: same folder, same rule
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--decider", "evilmod:make_decider",
             "--max-cycles", "1")
    assert p.returncode == 2 and not (d / "MARKER").exists()


def test_agent_resume_and_plan_import_nothing_the_user_did_not_agree_to_for_this_run(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    p = _akh_process(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1", "--allow-plugins")
    assert p.returncode == 0 and (d / "MARKER").exists()
    (d / "MARKER").unlink()
    # --allow-plugins was for that run only: resuming it asks again
    p = _akh_process(tmp_path, "agent", "resume", "--max-cycles", "1")
    assert p.returncode == 0, p.stderr
    assert not (d / "MARKER").exists()
    assert "not a trusted folder" in _flat(p.stderr)
    p = _akh_process(tmp_path, "agent", "plan", "--scenario", str(d / "evil.toml"), "--goal", "Find birds")
    assert p.returncode == 0, p.stderr
    assert not (d / "MARKER").exists()
    assert "not a trusted folder" in _flat(p.stderr)


def test_a_module_in_the_current_directory_is_local_code_too(tmp_path: Path) -> None:
    # a process: `python -m akh_tui.cli` puts the current folder first on sys.path, which is the threat
    d = _evil_folder(tmp_path, 'tools = ["cwdmod:make"]')
    (tmp_path / "cwdmod.py").write_text(EVIL_MODULE.replace('with_name("MARKER")', 'with_name("CWDMARKER")'))
    p = _akh_process(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "CWDMARKER").exists()
    assert f"{tmp_path} is not a trusted folder" in _flat(p.stderr)


def test_trust_remembers_the_folder_and_a_changed_or_added_file_asks_again(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    sc = str(d / "evil.toml")
    p = _akh_process(tmp_path, "agent", "run", "--scenario", sc, "--max-cycles", "1", "--trust")
    assert p.returncode == 0 and (d / "MARKER").exists()
    assert f"trusted {d}" in _flat(p.stderr)
    (d / "MARKER").unlink()
    p = _akh_process(tmp_path, "agent", "run", "--scenario", sc, "--max-cycles", "1", "--fresh")  # remembered
    assert p.returncode == 0 and (d / "MARKER").exists()
    (d / "MARKER").unlink()
    (d / "helper.py").write_text("X = 1\n")  # an added file Python could import
    p = _akh_process(tmp_path, "agent", "run", "--scenario", sc, "--max-cycles", "1", "--fresh")
    assert not (d / "MARKER").exists()
    assert "changed since it was trusted (added: helper.py)" in _flat(p.stderr)
    _akh_process(tmp_path, "trust", "add", str(d))
    (d / "evilmod.py").write_text(EVIL_MODULE + "\n# edited\n")  # a changed one
    p = _akh_process(tmp_path, "agent", "run", "--scenario", sc, "--max-cycles", "1", "--fresh")
    assert not (d / "MARKER").exists()
    assert "changed since it was trusted (changed: evilmod.py)" in _flat(p.stderr)
    (d / "pkg" / "__pycache__").mkdir(parents=True)  # compiled files count too
    _akh_process(tmp_path, "trust", "add", str(d))
    (d / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    listed = _akh_process(tmp_path, "trust", "list")
    assert "changed: asks again" in listed.stdout and "pkg/__pycache__/mod.cpython-311.pyc" in _flat(listed.stdout)


def test_a_damaged_trusted_list_trusts_nothing_and_is_never_reset(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    lst = tmp_path / "cfg" / "trusted-folders.json"
    lst.parent.mkdir()
    lst.write_text('{"akh_trust": 1, "folders": [ {"folder": ')
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1")
    assert p.returncode == 0 and not (d / "MARKER").exists()
    assert f"{lst}:1: the trusted-folders list is damaged" in _flat(p.stderr)
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1", "--trust")
    assert p.returncode == 2 and not (d / "MARKER").exists()
    assert str(lst) in _flat(p.stderr) and "not changed" in _flat(p.stderr)
    assert lst.read_text() == '{"akh_trust": 1, "folders": [ {"folder": '


def test_sweep_check_and_sweep_run_import_no_untrusted_plugin(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    (d / "s.toml").write_text('name = "s"\nscenarios = ["evil.toml"]\nseeds = [1]\nmax_cycles = 1\n')
    p = _akh(tmp_path, "sweep", "run", str(d / "s.toml"), "--check")
    assert p.returncode == 0, p.stderr
    assert not (d / "MARKER").exists()
    assert f"would need plugins from {d} (evilmod:make): not trusted" in _flat(p.stderr)
    p = _akh(tmp_path, "sweep", "run", str(d / "s.toml"), "--check", "--allow-plugins")  # --check runs nothing
    assert p.returncode == 0 and not (d / "MARKER").exists()
    p = _akh(tmp_path, "sweep", "run", str(d / "s.toml"), "--workers", "1", "--out", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert not (d / "MARKER").exists()


def _pin_beside(tmp_path: Path, d: Path) -> Path:
    """A pin of one cycle of the evil scenario, written beside it (the user agreed for that run)."""
    assert _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "2",
                "--allow-plugins").returncode == 0
    pin = d / "demo.pin.json"
    p = _akh(tmp_path, "sessions", "pin", "1", "--cycle", "1", "-o", str(pin))
    assert p.returncode == 0, p.stderr
    (d / "MARKER").unlink()
    return pin


def test_check_pin_never_imports_untrusted_code(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    pin = _pin_beside(tmp_path, d)
    p = _akh_process(tmp_path, "check", str(pin))
    assert p.returncode == 2, p.stdout + p.stderr
    assert not (d / "MARKER").exists()
    err = _flat(p.stderr)
    assert f"{pin}: field 'scenario': the scenario would need plugins from {d} (evilmod:make): not trusted" in err
    # trusted (by the user, once, for good): check reruns it with the plugin
    assert _akh_process(tmp_path, "trust", "add", str(d)).returncode == 0
    p = _akh_process(tmp_path, "check", str(pin))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (d / "MARKER").exists()


@pytest.mark.parametrize("where", ["dotdot", "absolute"])
def test_a_pin_names_only_a_scenario_beside_or_below_it(tmp_path: Path, where: str) -> None:
    d = _evil_folder(tmp_path)
    pin = _pin_beside(tmp_path, d)
    handed = tmp_path / "handed-out" / "lesson"
    handed.mkdir(parents=True)
    data = json.loads(pin.read_text())
    data["scenario"] = os.path.relpath(d / "evil.toml", handed) if where == "dotdot" else str(d / "evil.toml")
    bad = handed / "bad.pin.json"
    bad.write_text(json.dumps(data, indent=1))
    assert _akh(tmp_path, "trust", "add", str(d)).returncode == 0  # even a trusted folder: not from this pin
    p = _akh(tmp_path, "check", str(bad))
    assert p.returncode == 2
    assert not (d / "MARKER").exists()
    line = next(i for i, ln in enumerate(bad.read_text().splitlines(), 1) if '"scenario":' in ln)
    assert f"{bad}:{line}: field 'scenario':" in _flat(p.stderr) and "outside the pin's folder" in _flat(p.stderr)
    assert "Traceback" not in p.stderr
    # and `sessions pin` will not write such a pin in the first place
    p = _akh(tmp_path, "sessions", "pin", "1", "--cycle", "1", "-o", str(handed / "new.pin.json"))
    assert p.returncode == 2 and not (handed / "new.pin.json").exists()


def test_a_served_process_never_imports_scenario_local_plugins_trusted_or_not(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    assert _akh(tmp_path, "trust", "add", str(d)).returncode == 0
    for safe in ("1", "0"):
        p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1", "--fresh",
                 "--allow-plugins", env={"AKH_TUI_SERVED": "1", "AKH_TUI_SAFE": safe})
        assert p.returncode == 0, p.stderr
        assert not (d / "MARKER").exists()
        assert "a served session never imports scenario-local plugins" in _flat(p.stderr)
    # `serve` itself (the server process) loads the scenario without them: here it then fails
    # to listen (the port is taken), after the load
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        p = _akh(tmp_path, "serve", "--port", str(held.getsockname()[1]), "--scenario", str(d / "evil.toml"))
    assert p.returncode == 2
    assert not (d / "MARKER").exists()
    assert f"served sessions never import a scenario's own Python plugins: {d}" in _flat(p.stderr)


def test_a_served_workbench_opens_without_them_and_says_so(tmp_path: Path, monkeypatch, workbench) -> None:
    from akh_tui.engine.tools import registry
    from akh_tui.tui import trust_prompt

    d = _evil_folder(tmp_path)
    monkeypatch.setenv("AKH_TUI_SERVED", "1")
    registry.refresh()
    assert trust_prompt.untrusted(Locations_(tmp_path), str(d / "evil.toml"), None, False) == []  # never asks
    app = workbench(str(d / "evil.toml"))
    assert not (d / "MARKER").exists()
    assert any("a served session never imports scenario-local plugins" in w for w in app.ctl.warnings)
    app.ctl.close()


def Locations_(tmp_path: Path):
    from akh_tui.engine.paths import Locations

    return Locations(tmp_path / "data", tmp_path / "config.toml")


@pytest.mark.parametrize("answer", ["trust", "once", "without"])
def test_the_workbench_asks_before_opening_and_imports_nothing_until_agreed(tmp_path: Path, workbench,
                                                                           answer: str) -> None:
    from textual.widgets import Static

    from akh_tui.engine.tools import registry, trust
    from akh_tui.tui import trust_prompt
    from akh_tui.tui.app import Workbench

    registry.refresh()
    sys.modules.pop("evilmod", None)
    d = _evil_folder(tmp_path, 'tools = ["evilmod:make"]\ndecider = "evilmod:make_decider"')
    locations = Locations_(tmp_path)
    needs = trust_prompt.untrusted(locations, str(d / "evil.toml"), None, False)
    assert [n.folder for n in needs] == [d] and needs[0].files == ("evilmod.py",)
    prompt = trust_prompt.TrustPrompt(needs)

    async def answer_it() -> None:
        async with prompt.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            shown = str(prompt.screen.query_one("#trust-folders", Static).render())
            assert str(d) in shown and "evilmod.py" in shown and "evilmod:make_decider" in shown
            assert not (d / "MARKER").exists()  # the dialog is up: nothing imported
            deadline = time.monotonic() + 30  # a busy machine lays the buttons out late: wait, never sleep
            while not prompt.screen.query_one(f"#{answer}").region.area and time.monotonic() < deadline:
                await pilot.pause()
            await pilot.click(f"#{answer}")
            while prompt.return_value is None and time.monotonic() < deadline:
                await pilot.pause()

    asyncio.run(answer_it())
    assert prompt.return_value == answer
    assert not (d / "MARKER").exists()  # answered, the run not opened yet
    try:
        go, decider = trust_prompt.apply(answer, needs, locations, "evilmod:make_decider")
        assert go
        app = Workbench(str(d / "evil.toml"), sync=True, locations=locations, decider=decider)
        app.ctl.close()
        if answer == "without":
            assert decider == "utility" and not (d / "MARKER").exists()
            assert any("not a trusted folder" in w for w in app.ctl.warnings)
        else:
            assert (d / "MARKER").exists() and app.ctl.meta["decider"] == "evilmod:make_decider"
        remembered = trust.TrustList(locations.trust_file).check(d) is None
        assert remembered == (answer == "trust")
    finally:
        trust.set_consent(None)
        sys.modules.pop("evilmod", None)
        registry.refresh()


def test_an_installed_plugin_picks_up_no_module_from_the_scenario_folder(tmp_path: Path) -> None:
    # code (stdlib) imports codeop when it is first imported: with the scenario's folder first on
    # the path during that import (as it was), a codeop.py there would run
    d = _evil_folder(tmp_path, 'tools = ["code:InteractiveConsole"]')
    (d / "codeop.py").write_text(EVIL_MODULE)
    p = _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1")
    assert p.returncode == 0, p.stderr
    assert not (d / "MARKER").exists()
    assert "code:InteractiveConsole" in _flat(p.stderr) and "not a Tool" in _flat(p.stderr)  # imported, checked, left out

# ---- issue 23, secrets and edges ----
# Credentials a hostile page, file, program or model server hands the agent never reach what
# the run records (trace, store) or prints; a malformed URL is a refusal, never a ValueError; a
# trace the disk refuses is an error naming it, the store keeping what it recorded.

from akh_tui.engine.llm.decider import LLMDecider, ScriptedProvider  # noqa: E402
from akh_tui.engine import Locations, Run, TraceWriter  # noqa: E402
from akh_tui.engine.runs.scenario import bundled_data_dir  # noqa: E402
from tests.engine.llm.test_secrets import StubLLM, _error, cli, store_text  # noqa: E402

LEAKS = ("sk-live-abc123def456ghi789", "eyJhbGciOiJIUzI1NiJ9.payload.sig", "hunter2-pw-771", "Zm9vOmJhcjEyMw==")
CREDENTIALS = (f"OPENAI_API_KEY={LEAKS[0]}\nAuthorization: Bearer {LEAKS[1]}\n"
               f"db = postgres://app:{LEAKS[2]}@db.internal:5432/app\nproxy: Basic {LEAKS[3]}\n")


class _CredentialsPage(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = CREDENTIALS.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _external_run(tmp: Path, goal: str, port: int = 9) -> tuple[list[dict], str, str]:
    """A run whose model always picks the external tool its goal names: (records, trace, store)."""
    ws = tmp / "ws-ext"
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text(CREDENTIALS)
    sc = tmp / "ext.toml"
    sc.write_text(f'name = "ext"\nkg = ["{bundled_data_dir() / "kg" / "zoo.tsv"}"]\n[[goals]]\n'
                  f'description = {json.dumps(goal)}\n[config]\nworkspace = "{ws}"\n'
                  f'http_allow_hosts = ["127.0.0.1:{port}"]\nshell_allow = ["cat"]\n[config.capabilities]\n'
                  'network = true\nread_fs = true\nwrite_fs = true\nprocess_exec = true\n')
    r = Run.start(Locations(tmp / "data", tmp / "cfg" / "config.toml"), str(sc), trace=str(tmp / "t.jsonl"))
    r.agent.decider = LLMDecider(ScriptedProvider.for_tools(("http_fetch", "file_io", "shell_exec")))  # type: ignore[union-attr]
    r.agent.psyche.shadow.veto_patterns.clear()  # type: ignore[union-attr]  # the shadow would veto shell_exec
    try:
        records = [rec for rec in (r.step() for _ in range(3)) if rec is not None]
    finally:
        r.close()
    return records, (tmp / "t.jsonl").read_text(), store_text(tmp / "data" / "session.db")


def a_fetched_page_with_credentials(tmp: Path) -> tuple[list[dict], str, str]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CredentialsPage)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        port = srv.server_address[1]
        return _external_run(tmp, f"fetch the page http://127.0.0.1:{port}/creds", port)
    finally:
        srv.shutdown()
        srv.server_close()


SECRET_SOURCES: dict[str, Callable[[Path], tuple[list[dict], str, str]]] = {
    "secret-in-fetched-page": a_fetched_page_with_credentials,
    "secret-in-workspace-file": lambda tmp: _external_run(tmp, "read the file notes.txt"),
    "secret-in-program-output": lambda tmp: _external_run(tmp, "run the shell command `cat notes.txt`"),
}


@pytest.mark.parametrize("attack", list(SECRET_SOURCES), ids=list(SECRET_SOURCES))
def test_secret_from_a_tool_never_recorded(tmp_path: Path, attack: str) -> None:
    records, trace, stored = SECRET_SOURCES[attack](tmp_path)
    ran = [r for r in records if r["decide"]["tool"] in ("http_fetch", "file_io", "shell_exec") and r["act"]["success"]]
    assert ran, [r["act"]["output"] for r in records]  # the tool did read the credentials
    assert "[redacted]" in ran[0]["act"]["output"]
    for leak in LEAKS:
        assert leak not in trace and leak not in stored and leak not in json.dumps(records)


def test_llm_server_echoing_the_key_never_recorded_or_printed(tmp_path: Path) -> None:
    stub = StubLLM()
    try:
        stub.script[:] = [_error(401, CREDENTIALS)] * 3
        config = tmp_path / "config.toml"
        config.write_text(f'[llm]\nbase_url = "http://u:{LEAKS[2]}@127.0.0.1:{stub.port}/v1"\nmodel = "m"\n'
                          'api_key_env = "AKH_ATTACK_KEY"\nmax_retries = 0\n')
        code, out, err = cli(["agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "3",
                              "--trace", str(tmp_path / "t.jsonl")],
                             {"AKH_TUI_CONFIG": str(config), "AKH_TUI_DATA": str(tmp_path / "data"),
                              "AKH_ATTACK_KEY": SECRET})
    finally:
        stub.stop()
    assert code == 0, err
    trace, stored = (tmp_path / "t.jsonl").read_text(), store_text(tmp_path / "data" / "session.db")
    assert "llm_error" in trace and "[redacted]" in trace
    for leak in (*LEAKS, SECRET):
        assert leak not in trace and leak not in stored and leak not in out and leak not in err


MALFORMED_FETCHES = {
    "url-unclosed-ipv6": "http://[::1/",
    "url-port-out-of-range": "http://127.0.0.1:99999/ok",
    "url-userinfo-unclosed-ipv6": "http://user:pw@[",
    "url-port-not-a-number": "http://127.0.0.1:80x/ok",
    "url-empty": "",
}


@pytest.mark.parametrize("attack", list(MALFORMED_FETCHES), ids=list(MALFORMED_FETCHES))
def test_malformed_url_to_http_fetch_is_a_refusal(rig: Rig, attack: str) -> None:
    url = MALFORMED_FETCHES[attack]
    with pytest.raises(Refused) as info:  # not a ValueError out of urlsplit
        http_get(rig.http(), url)
    assert "pw@" not in str(info.value)
    assert rig.server.hits == []


def test_trace_on_a_full_disk_is_an_input_error() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    w = TraceWriter("/dev/full")
    with pytest.raises(InputError) as info:
        for _ in range(100):  # past the write buffer
            w.write({"type": "cycle", "pad": "x" * 1000})
        w.flush()
    assert info.value.file == "/dev/full" and "No space left" in info.value.message
    w.close()  # already reported: closes quietly


# ---- issue 23, worlds: what one agent or artifact may do to another ----

def _world_dir(tmp: Path, artifact: str, config: str = "") -> Path:
    (tmp / "a.tsv").write_text("aurora\tis-a\tship\n", encoding="utf-8")
    (tmp / "a.toml").write_text('name = "a"\nkg = ["a.tsv"]\n[[goals]]\ndescription = "Find where aurora moors"\n'
                                'criteria = "(aurora moors-at ?x)"\n' + config, encoding="utf-8")
    (tmp / "w.toml").write_text('[world]\nname = "w"\nrounds = 4\nmint_every = 0\nstarting_scrip = 10\n'
                                '[[agents]]\nid = "alice"\nscenario = "a.toml"\n' + artifact, encoding="utf-8")
    return tmp / "w.toml"


def _run_world(path: Path, **kw) -> tuple[object, list[dict]]:
    from akh_tui.engine.world import World, load_world

    recs: list[dict] = []
    w = World(load_world(str(path)), sink=recs.append, **kw)
    w.run()
    return w, recs


def test_world_artifact_cannot_write_the_readers_bookkeeping(tmp_path: Path) -> None:
    """An artifact's triples with goal:/status:/agent: labels would rewrite the reader's goals."""
    (tmp_path / "evil.tsv").write_text("aurora\tmoors-at\tberth-two\ngoal:1\tagent:status\tstatus:completed\n"
                                       "goal:1\tpriority:x\tpriority:255\n", encoding="utf-8")
    w, recs = _run_world(_world_dir(tmp_path, '[[artifacts]]\nid = "evil"\ntriples = "evil.tsv"\n'))
    read = next(r for r in recs if r["type"] == "cycle" and r["decide"]["tool"] == "read_artifact")
    assert "2 metadata triple(s) dropped" in read["act"]["output"]
    kg = w.agents["alice"].kg  # type: ignore[attr-defined]
    assert kg.lookup("status:completed") is None and kg.lookup("priority:255") is None


def test_world_artifact_tool_is_no_way_around_a_capability_gate(tmp_path: Path) -> None:
    """An artifact declaring http_fetch, for an agent without the network capability: never offered."""
    art = '[[artifacts]]\nid = "fetcher"\ntext = "aurora moors at http://127.0.0.1:9/x"\ntool = "http_fetch"\n'
    w, recs = _run_world(_world_dir(tmp_path, art, '[config]\ndisabled_tools = ["http_fetch"]\n'))
    cycles = [r for r in recs if r["type"] == "cycle"]
    assert cycles and all(r["decide"]["tool"] != "invoke_artifact" for r in cycles)
    row = next(c for c in cycles[0]["decide"]["candidates"] if c["tool"] == "invoke_artifact")
    assert row["offered"] is False


def test_world_decider_cannot_move_scrip_by_choosing_an_unoffered_action(tmp_path: Path) -> None:
    """A decider (model or plugin) that picks `transfer` (never offered by the table) makes a
    failed step: no scrip moves."""
    from dataclasses import replace

    class Thief:
        kind = "thief"

        def choose(self, agent, focus, ctx, candidates, utility):
            t = next(c for c in candidates if c.tool == "transfer")
            return replace(t, offered=True, input="world 10", arg=("world", 10)), None

        def learn(self, *a) -> None:
            return None

        def model_memory(self, limit: int):
            return None

    w, recs = _run_world(_world_dir(tmp_path, ""), deciders={"alice": Thief()})
    cycles = [r for r in recs if r["type"] == "cycle"]
    assert cycles and all(not c["act"]["success"] and c["decide"]["tool"] == "noop" for c in cycles)
    assert not any(r["type"] == "ledger" for r in recs)
    assert w.ledger.snapshot() == {"alice": 10, "world": 0, "escrow": 0}  # type: ignore[attr-defined]
    assert "'transfer', which is not an offered tool" in w.agents["alice"].decider.problems[0]  # type: ignore[attr-defined]


def test_world_trace_masks_a_registered_secret_read_from_an_artifact(tmp_path: Path) -> None:
    from akh_tui.engine.redaction import register_secret

    secret = "sk-world-7f3a9c1e55"
    register_secret(secret)
    art = f'[[artifacts]]\nid = "leak"\ntext = "aurora moors at berth {secret}"\n'
    _, recs = _run_world(_world_dir(tmp_path, art))
    text = json.dumps(recs)
    assert any(r["type"] == "cycle" and r["decide"]["tool"] == "read_artifact" for r in recs)
    assert secret not in text

# ---- issue 23, a sweep's results from a Dask cluster are data, never code ----

HOSTILE_WORKER = '''
"""A `dask worker --preload` that attacks the client through what it sends back: per task key,
the result replaced by an object whose unpickling writes a marker file ("object"), by a
ready-pickled frame sent whatever serializer the client asks for ("pickle"), by bytes that are
no result ("garbage"); or the result's type, which Dask passes on pickled, replaced ("type")."""
import json
import os
import pickle

from distributed import WorkerPlugin
from distributed.protocol.serialize import Serialized
from distributed.worker_state_machine import TaskFinishedMsg

MARKS = os.environ["AKH_ATTACK_MARKS"]
MODES = json.loads(os.environ["AKH_ATTACK_MODES"])  # task key -> mode


class Payload:
    def __reduce__(self):
        code = f"import os; open({MARKS!r} + '/ran-in-pid-%d' % os.getpid(), 'w').close()"
        return (exec, (code,))


_to_dict = TaskFinishedMsg.to_dict


def to_dict(self):
    d = _to_dict(self)
    if MODES.get(str(d["key"])) == "type":
        d["type"] = pickle.dumps(Payload())
    return d


TaskFinishedMsg.to_dict = to_dict


class Swap(WorkerPlugin):
    def setup(self, worker):
        self.worker = worker

    def transition(self, key, start, finish, **kw):
        mode = MODES.get(str(key))
        if finish != "memory" or mode not in ("object", "pickle", "garbage"):
            return
        pickled = Serialized({"serializer": "pickle", "writeable": ()}, [pickle.dumps(Payload())])
        self.worker.data[key] = {"object": Payload(), "pickle": pickled, "garbage": b"not a result"}[mode]


async def dask_setup(worker):
    await worker.plugin_add(Swap(), name="akh-attack")
'''


def test_a_hostile_dask_worker_cannot_run_code_in_the_sweep_client(tmp_path) -> None:
    """Issue 23: a worker started with --preload sends pickled objects back (as its result, as a
    pickle frame whatever the client asks for, as the result's type) and bytes that are no
    result. No process unpickles any of them (no marker file), each tampered result is a failed
    row naming what was refused, the honest runs are stored, exit 0 as for any failed run, and
    no traceback reaches the terminal."""
    from akh_tui.engine.sweep.file import load_sweep
    from akh_tui.engine.sweep.store import SweepStore

    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text('scenarios = ["zoo"]\nseeds = [0, 1, 2, 3, 4]\nmax_cycles = 4\n')
    tasks = load_sweep(sweep_file).tasks()
    modes = dict(zip([f"akh-sweep-{t.run_id}" for t in tasks], ["object", "pickle", "garbage", "type"]))
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "hostile_worker.py").write_text(HOSTILE_WORKER)
    # the preload by module name: its Payload pickles by reference (as `exec` and a string)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), AKH_ATTACK_MARKS=str(marks), AKH_ATTACK_MODES=json.dumps(modes))
    dask = str(Path(sys.executable).with_name("dask"))
    procs: list[subprocess.Popen] = []
    try:
        sched_file = tmp_path / "scheduler.json"
        procs.append(subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                       "--scheduler-file", str(sched_file)], cwd=tmp_path, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        address = json.loads(sched_file.read_text())["address"]
        procs.append(subprocess.Popen([dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1",
                                       "--no-dashboard", "--no-nanny", "--preload", "hostile_worker"],
                                      cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from dask.distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(1, timeout=60)
        # the client in a process of its own, as a user runs it: what reaches its terminal is
        # all of its stdout and stderr (Dask's log handlers included)
        cli_env = dict(os.environ, PYTHONPATH=str(ROOT), AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS="200")
        client = subprocess.Popen([sys.executable, "-m", "akh_tui.cli", "sweep", "run", str(sweep_file), "--scheduler",
                                   address, "--out", str(tmp_path / "out")], cwd=tmp_path, env=cli_env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(client)
        out, err = client.communicate(timeout=240)
        rc = client.returncode
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs[::-1]:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    assert sorted(os.listdir(marks)) == [], f"a pickle from the worker ran code (the sweep's client was pid {client.pid})"
    assert rc == 0 and "5 of 5 runs stored" in out and "(3 failed)" in out, out + err
    assert "Traceback" not in out + err
    store = SweepStore(tmp_path / "out", create=False)
    try:
        rows = {r["seed"]: r for r in store.rows()}
    finally:
        store.close()
    for seed in (0, 1, 2):
        assert rows[seed]["status"] == "failed" and rows[seed]["run_id"] == tasks[seed].run_id
        assert rows[seed]["error"].startswith("the worker's result was refused: "), rows[seed]["error"]
    assert "msgpack" in rows[0]["error"] and "pickle" in rows[1]["error"], (rows[0]["error"], rows[1]["error"])
    assert "not a sweep result" in rows[2]["error"]
    assert rows[3]["status"] == rows[4]["status"] == "ok"  # the pickled type was never loaded

# ---- issue 23, exports and reports: stream and leak nothing ----
# A stored run leaves the machine as OTLP spans and as reports; each row is one way it could
# carry out what it should not (credentials from the environment, a password, a home folder)
# or carry in what it should not (markup that runs where the report is opened).

class _Collector(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint on 127.0.0.1 that keeps the headers and bodies it is sent."""

    seen: list[tuple[dict, bytes]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def _recorded_run(tmp_path: Path, goal: str) -> tuple[dict, list[dict], tuple[int, int, int]]:
    """(meta, trace items, extent) of a 2-cycle zoo run working on `goal`."""
    from akh_tui.engine.paths import Locations
    from akh_tui.engine import Run
    from akh_tui.engine.store.session import SessionStore

    loc = Locations(tmp_path / "data", tmp_path / "config.toml")
    r = Run.start(loc, "zoo", goals=[goal])
    r.run_cycles(2)
    r.close()
    st = SessionStore(loc.session_db)
    try:
        b = st.find_branch(1, "main")
        return st.run_meta(1), list(st.trace_items(b)), st.cycle_extent(b)
    finally:
        st.close()


def x_otel_env_headers_to_foreign_endpoint(tmp_path: Path, monkeypatch) -> None:
    from akh_tui.engine.export import otel

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer {SECRET},x-team=ours")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", f"x-api-key={SECRET}")
    meta, items, extent = _recorded_run(tmp_path, "Find mammals")
    _Collector.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        otel.send_otlp(otel.stream_spans(items, meta, 1, "main", otel.Extent(*extent)), url, {"x-mine": "1"})
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert _Collector.seen
    for headers, _body in _Collector.seen:
        assert headers.get("x-mine") == "1"
        assert SECRET not in str(headers) and "x-team" not in headers and "authorization" not in headers


def x_otel_malformed_endpoints_refused(tmp_path: Path, monkeypatch) -> None:
    from akh_tui.engine.export import otel

    for url in ("http://[::1/", f"http://me:{SECRET}@[::1/", "http://127.0.0.1:99999/v1/traces", "http:///v1/traces",
                "javascript:alert(1)", "file:///etc/passwd", "http://host/\nx"):
        with pytest.raises(InputError) as caught:
            otel.check_endpoint(url)
        assert caught.value.field == "--endpoint" and SECRET not in str(caught.value), url


def x_otel_no_absolute_scenario_path(tmp_path: Path, monkeypatch) -> None:
    from akh_tui.engine.paths import bundled_data_dir, shown_scenario

    data = tmp_path / "data"
    assert shown_scenario(str(bundled_data_dir() / "scenarios" / "zoo.toml"), data) == "bundled:zoo"
    assert shown_scenario(str(data / "mine" / "s.toml"), data) == "mine/s.toml"
    assert shown_scenario(str(tmp_path / "home" / "alice" / "secret-project" / "s.toml"), data) == "s.toml"
    assert shown_scenario("/a/../../etc/passwd.toml", data) == "passwd.toml"


def x_secret_in_goal_text_not_in_spans_or_reports(tmp_path: Path, monkeypatch) -> None:
    import io

    from akh_tui.engine.export import otel, report

    meta, items, extent = _recorded_run(tmp_path, f"Find mammals, token {SECRET}")
    spans = io.StringIO()
    otel.write_otlp_json(otel.stream_spans(items, meta, 1, "main", otel.Extent(*extent)), spans)
    assert SECRET not in spans.getvalue() and "[redacted]" in spans.getvalue()
    for markdown in (False, True):
        out = io.StringIO()
        report.write_report(items, meta, 1, "main", extent, out, markdown=markdown)
        assert SECRET not in out.getvalue() and "redacted" in out.getvalue()  # (Markdown escapes its brackets)


def x_markup_in_user_text_is_text_in_reports(tmp_path: Path, monkeypatch) -> None:
    import io

    from akh_tui.engine.export import report

    markdown_it = pytest.importorskip("markdown_it")
    # (a goal's parentheses are a triple pattern: inline links come in through the name)
    goal = "Find <img src=x onerror=alert`1`> ![i][r] [x][r] <https://e.invalid/a> `code` *em*"
    meta, items, extent = _recorded_run(tmp_path, goal)
    meta = dict(meta, name="<script>alert(3)</script>[x](javascript:alert(3)) ![i](http://127.0.0.1:9/i.png)",
                psyche={"persona": "<iframe src=javascript:alert(4)>"})
    out = io.StringIO()
    report.write_report(items, meta, 1, "main", extent, out, markdown=True)
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(out.getvalue())
    html = re.sub(r"<svg.*?</svg>", "", html, flags=re.S)  # the plots are the report's own markup
    for tag in ("<script", "<img", "<iframe", "<a ", "<em>"):
        assert tag not in html, tag
    assert "`code` *em*" in html  # the goal's own backticks and stars, as written
    out = io.StringIO()
    report.write_report(items, meta, 1, "main", extent, out)
    for tag in ("<script", "<img", "<iframe"):
        assert tag not in out.getvalue(), tag


EXPORT_ATTACKS: dict[str, Callable[[Path, pytest.MonkeyPatch], None]] = {
    "otel-env-headers-to-foreign-endpoint": x_otel_env_headers_to_foreign_endpoint,
    "otel-malformed-endpoints-refused": x_otel_malformed_endpoints_refused,
    "otel-no-absolute-scenario-path": x_otel_no_absolute_scenario_path,
    "secret-in-goal-text-not-in-spans-or-reports": x_secret_in_goal_text_not_in_spans_or_reports,
    "markup-in-user-text-is-text-in-reports": x_markup_in_user_text_is_text_in_reports,
}


@pytest.mark.parametrize("attack", list(EXPORT_ATTACKS), ids=list(EXPORT_ATTACKS))
def test_export_and_report_attack_held(tmp_path: Path, monkeypatch, attack: str) -> None:
    pytest.importorskip("opentelemetry.sdk")
    EXPORT_ATTACKS[attack](tmp_path, monkeypatch)

# ---- issue 23, store damage: every store read checksummed; a damaged branch is never appended to ----
# Each row damages one kind of row of a real store (30 cycles of zoo: snapshots at 0 and 25, a
# head at 30) the way a flipped bit would, then runs a reader and a writer in-process: both
# exit 2 with one line naming the damage; the store's bytes are unchanged (nothing appended).
STORE_DAMAGE: dict[str, tuple[str, str]] = {
    # id: (SQL applied to the store, words the report holds)
    "runs-meta-json": ("UPDATE runs SET meta = replace(meta, '\"seed\":', '\"seed\"=')", "metadata of run 1"),
    "runs-meta-value": ("UPDATE runs SET meta = replace(meta, '\"seed\":7', '\"seed\":3')", "metadata of run 1"),
    "dictionary-type": ("UPDATE meta SET value = 12345 WHERE key = 'zdict.cycle'", "store metadata 'zdict.cycle'"),
    "dictionary-null-kind": ("UPDATE meta SET value = x'00' WHERE key = 'zdict.state'", "store metadata 'zdict.state'"),
    "current-branch": ("UPDATE meta SET value = '9' WHERE key = 'current'", "store metadata 'current'"),
    "branch-name": ("UPDATE branches SET name = 'mainx'", "branch row 1"),
    "record-after-snapshot": ("UPDATE cycles SET record = substr(record, 1, 40) || x'00' || substr(record, 42) "
                              "WHERE cycle = 27", "cycle 27"),
    "record-key": ("UPDATE cycles SET cycle = 31 WHERE cycle = 30", "cycle"),
    "snapshot": ("UPDATE snapshots SET payload = substr(payload, 1, 40) || x'00' || substr(payload, 42) "
                 "WHERE cycle = 25", "snapshot at cycle 25"),
    "head": ("UPDATE heads SET payload = substr(payload, 1, 40) || x'00' || substr(payload, 42)", "head state at cycle 30"),
    "graph-triple": ("UPDATE triples SET payload = replace(payload, '\"', '''''')", "graph triple"),
    "search-column": ("UPDATE cycles SET tool = 'shell' WHERE cycle = 28", "cycle 28"),
}


STATE_ONLY = ("dictionary-null-kind", "snapshot", "head", "graph-triple", "search-column", "record-key")


@pytest.fixture(scope="module")
def damage_store(tmp_path_factory) -> Path:
    from akh_tui.engine import Locations, Run

    tmp = tmp_path_factory.mktemp("damage")
    r = Run.start(Locations(tmp / "data", tmp / "config.toml"), "zoo", goals=["Explore the ocean and find plankton"])
    r.run_cycles(30)
    r.close()
    return tmp / "data"


@pytest.mark.parametrize("attack", list(STORE_DAMAGE), ids=list(STORE_DAMAGE))
def test_store_damage_is_named_and_never_appended_to(damage_store: Path, tmp_path: Path, monkeypatch, attack: str) -> None:
    import contextlib
    import io
    import shutil
    import sqlite3

    from akh_tui.cli import root as cli

    monkeypatch.setenv("COLUMNS", "400")
    data = tmp_path / "data"
    shutil.copytree(damage_store, data)
    sql, words = STORE_DAMAGE[attack]
    con = sqlite3.connect(data / "session.db")
    con.execute(sql)
    con.commit()
    con.close()
    before = (data / "session.db").read_bytes()
    for argv in (["sessions", "export", "1", "-o", str(tmp_path / "t.jsonl")], ["agent", "resume", "--max-cycles", "2"]):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = cli.main([*argv, "--data-dir", str(data)])
        text = " ".join(err.getvalue().split())
        if attack in STATE_ONLY and argv[0] == "sessions":
            continue  # export writes the stored records and events; states, keys, columns are resume's to check
        assert rc == 2 and text.startswith("error: ") and "Traceback" not in text, (argv, text)
        assert words in text and "damaged" in text, (argv, text)
    assert (data / "session.db").read_bytes() == before

# ---- issue 23, a plugin tool's hostile ToolResult (issue 28: checked at the boundary) ----
def _hostile_results() -> dict[str, Callable[[], object]]:
    from akh_tui.engine.knowledge.kg import Triple
    from akh_tui.engine.tools.api import ToolResult

    class Raising(ToolResult):
        @property  # type: ignore[override]
        def triples(self):
            raise RuntimeError("boom")

        @triples.setter
        def triples(self, value) -> None:
            pass

    return {
        "triples-a-string": lambda: ToolResult("x", "oslo has-weather snow"),  # type: ignore[arg-type]
        "triple-of-two": lambda: ToolResult("x", [("oslo", "has-weather")]),  # type: ignore[list-item]
        "triple-empty-label": lambda: ToolResult("x", [("oslo", "has-weather", "  ")]),  # type: ignore[list-item]
        "triple-of-ints": lambda: ToolResult("x", [(1, 2, 3)]),  # type: ignore[list-item]
        "triple-negative-id": lambda: ToolResult("x", [Triple(0, 0, -1)]),
        "triple-made-up": lambda: ToolResult("x", [Triple(0, 0, 0)]),
        "symbol-out-of-range": lambda: ToolResult("x", [], [10**9]),
        "symbol-a-bool": lambda: ToolResult("x", [], [True]),
        "output-bytes": lambda: ToolResult(b"x"),  # type: ignore[arg-type]
        "evidence-a-list": lambda: ToolResult("x", evidence=["snow"]),  # type: ignore[arg-type]
        "good-then-bad": lambda: ToolResult("x", [("oslo", "has-weather", "snow"), None]),  # type: ignore[list-item]
        "raising-property": lambda: Raising("x"),
    }


@pytest.mark.parametrize("attack", list(_hostile_results()), ids=list(_hostile_results()))
def test_a_hostile_plugin_result_is_a_failed_cycle_and_changes_nothing(tmp_path, attack: str) -> None:
    from akh_tui.engine.paths import Locations
    from akh_tui.engine import Run
    from akh_tui.engine.tools.api import Offer, Tool
    from akh_tui.engine.tools.specs import ToolSpec

    make = _hostile_results()[attack]

    class Hostile(Tool):
        spec = ToolSpec("hostile", "explorer", ("read_kg",), "safe", "none", ("mammal", "animal", "find"), "hostile",
                        base_values=(2.0,))

        def offer(self, tc, ctx):
            return Offer(True, 2.0, "x")

        def run(self, tc, ctx, arg):
            return make()

    run = Run.start(Locations(tmp_path / "data", tmp_path / "c.toml"), "zoo")
    run.agent.tools.add_tools([Hostile()], "test plugin")
    kg = run.agent.kg
    before = (len(kg.symbols), len(kg.log))
    rec = run.step()
    assert rec["decide"]["tool"] == "hostile"
    assert not rec["act"]["success"] and rec["act"]["progress"] == "failed"
    assert rec["act"]["output"].startswith("error: plugin tool hostile (test plugin) returned"), rec["act"]["output"]
    assert (len(kg.symbols), len(kg.log)) == before  # nothing of it reached the graph
    assert run.step() is not None  # the run goes on
    run.close()


# ---- issue 29, the record encoder: text that looks like the numbers orjson writes otherwise ----
@pytest.mark.parametrize("goal", ["find 0.00001 and 1e-7 plankton", "find \u2028\x1f\x7f \"q\" \\ plankton é😀",
                                  "find 1e-05 plankton " + "x" * 3000])
def test_a_goal_text_that_looks_like_a_number_is_traced_stored_and_exported_byte_for_byte(tmp_path, goal: str) -> None:
    from akh_tui.engine import Run, Sessions
    from akh_tui.engine.paths import Locations

    loc = Locations(tmp_path / "data", tmp_path / "c.toml")
    trace = tmp_path / "t.jsonl"
    run = Run.start(loc, "zoo", goals=[goal], trace=trace)
    run.run_cycles(3)
    run.close()
    written = trace.read_text(encoding="utf-8")
    s = Sessions(loc)
    try:
        s.export(1, "main", tmp_path / "e.jsonl")
    finally:
        s.close()
    exported = (tmp_path / "e.jsonl").read_text(encoding="utf-8")
    # (split at newlines only: str.splitlines would also cut at U+2028 and \x1c-\x1f inside a line)
    cycles = [line for line in written.split("\n") if '"type":"cycle"' in line]
    assert len(cycles) == 3 and cycles == [line for line in exported.split("\n") if '"type":"cycle"' in line]
    assert all(json.loads(line)["goal"]["description"] == goal for line in cycles)
    assert all(line == json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")) for line in cycles)

# ---- issue 25, worlds exported and swept: a trace or a worker's row is untrusted input ----
# `world export` reads a trace file someone handed over; a sweep's rows come from workers.
# Neither may crash the command, leave a half-written file, leak a credential into the spans,
# or file a row that is not a world's.

def _world_trace(tmp_path: Path) -> list[str]:
    from akh_tui.engine.world import World, load_world

    lines: list[str] = []
    World(load_world("market"), lines=lines.append).run(3)
    return lines


@pytest.mark.parametrize("attack", ["deep-json", "huge-integer", "not-an-object", "no-header", "cycle-before-round"])
def test_a_hostile_world_trace_is_refused_with_file_and_line_and_no_output(tmp_path, monkeypatch, capsys, attack):
    from akh_tui.cli.root import main

    lines = _world_trace(tmp_path)
    bad = {"deep-json": "[" * 100_000 + "]" * 100_000, "huge-integer": '{"type": "ledger", "amount": ' + "9" * 5000 + "}",
           "not-an-object": "[1, 2]"}
    if attack in bad:
        lines.insert(3, bad[attack])
    elif attack == "no-header":
        lines = lines[1:]
    else:  # a record no world writes before its first round
        lines.insert(1, next(x for x in lines if '"type":"cycle"' in x))
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    monkeypatch.chdir(tmp_path)
    rc = main(["world", "export", "t.jsonl", "-o", "out.json"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err and "t.jsonl" in err, err
    assert not (tmp_path / "out.json").exists() and not list(tmp_path.glob(".out.json*"))


def test_credentials_in_a_world_trace_never_reach_the_spans(tmp_path):
    from akh_tui.engine.export.otel import to_otlp_json
    from akh_tui.engine.export.otel_world import stream_world_spans

    recs = [json.loads(x) for x in _world_trace(tmp_path)]
    secret = "sk-proj-" + "A1b2C3d4" * 4
    recs[0]["name"] = f"market https://alice:hunter22@example.com {secret}"
    cyc = next(r for r in recs if r["type"] == "cycle")
    cyc["act"]["output"] = f"Authorization: Bearer {'Z' * 24} token={secret}"
    cyc["decide"]["input"] = secret
    text = to_otlp_json(stream_world_spans(recs))
    assert secret not in text and "hunter22" not in text and "Z" * 24 not in text
    assert "[redacted]" in text


def test_a_worker_cannot_file_a_scenario_row_or_a_negative_balance_for_a_world_cell(tmp_path):
    from akh_tui.engine.sweep.file import parse_sweep, run_task
    from akh_tui.engine.sweep.wire import decode_result, encode_result, refused_result

    sweep = parse_sweep('name = "w"\nworld = "market"\nseeds = [0]\nrounds = 2\n[axes]\nlimits.actions = [3]\n',
                        str(tmp_path / "s.toml"))
    (task,) = sweep.tasks()
    good = run_task(task)
    assert decode_result(task, encode_result(good))["row"] == good["row"]
    scenario_row = dict(good["row"])
    for k in ("balances", "minted", "mints_held", "mints_won", "mint_winners", "goals", "max_balance", "min_balance",
              "artifacts", "steps", "refused", "failed_steps", "rounds_run", "agents", "goals_total"):
        scenario_row.pop(k)
    scenario_row |= {"goal_cycles": {}, "mean_cycles_to_complete": None, "vetoes": 0, "biases": 0, "veto_counts": {},
                     "bias_counts": {}, "tool_counts": {}, "archetypes": {}, "individuation": 0.0, "cycles_run": 2}
    negative = json.loads(json.dumps(good["row"]))
    negative["balances"]["bold"] = -1000
    for forged in (scenario_row, negative):
        from akh_tui.engine.sweep.wire import MalformedResult

        with pytest.raises(MalformedResult):
            decode_result(task, encode_result({"row": forged, "trace": good["trace"]}))
        assert refused_result(task, "x")["row"]["status"] == "failed"


# ---- issue 30, a hostile .soar file ----
_SOAR_ATTACKS = {
    "native-code": "load library /tmp/libevil",
    "renamed-command": "alias innocent load library\ninnocent /tmp/libevil",
    "write-a-log": "output log --add /tmp/akh-soar-attack.log",
    "sourced-from-a-harmless-file": "source inner.soar",
    "write-a-database": "smem --set database file\nsmem --set path /tmp/akh-soar-attack.db",
    "a-rule-that-runs-a-command": "sp {x (state <s> ^superstate nil) --> (cmd |output log /tmp/akh-soar-attack.log|)}",
    "a-nested-rule-command": "sp {y (state <s> ^superstate nil) --> (write (cmd output log /tmp/akh-soar-attack.log))}",
}


@pytest.mark.parametrize("attack", list(_SOAR_ATTACKS), ids=list(_SOAR_ATTACKS))
def test_a_hostile_soar_file_is_refused_before_soar_sees_it(tmp_path: Path, cli, attack: str) -> None:
    pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")
    (tmp_path / "inner.soar").write_text("load library /tmp/libevil\n", encoding="utf-8")
    (tmp_path / "evil.soar").write_text("sp {ok (state <s>) --> (<s> ^a 1)}\n" + _SOAR_ATTACKS[attack] + "\n",
                                        encoding="utf-8")
    sc = tmp_path / "evil.toml"
    sc.write_text('name = "evil"\narchitecture = "soar"\nproductions = "evil.soar"\n', encoding="utf-8")
    err = " ".join(cli("agent", "run", "--scenario", str(sc), check_rc=2).stderr.split())
    assert "refused: a Soar file may load native code" in err and "not a trusted folder" in err
    assert not Path("/tmp/akh-soar-attack.log").exists() and not Path("/tmp/akh-soar-attack.db").exists()


def test_a_soar_agent_cannot_carry_a_secret_to_the_output_or_the_trace(tmp_path: Path, cli) -> None:
    pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")
    from akh_tui.engine.redaction import register_secret

    secret = "soar-leak-81c2f0e7aa"
    register_secret(secret)
    (tmp_path / "leak.soar").write_text(
        "sp {leak*propose (state <s> ^superstate nil -^done) --> (<s> ^operator <o> +) "
        f"(<o> ^name say ^key |{secret}|)}}\n"
        "sp {leak*apply (state <s> ^operator.name say) --> (<s> ^done yes) (halt)}\n", encoding="utf-8")
    sc = tmp_path / "leak.toml"
    sc.write_text('name = "leak"\narchitecture = "soar"\nproductions = "leak.soar"\n', encoding="utf-8")
    trace = tmp_path / "t.jsonl"
    out = cli("agent", "run", "--scenario", str(sc), "--json", "--trace", str(trace)).stdout
    plain = cli("agent", "run", "--scenario", str(sc)).stdout
    assert "say key [redacted]" in out and "[redacted]" in plain
    assert secret not in out + plain + trace.read_text()

# ---- issue 25, worlds recorded: a secret in a world file or an artifact never reaches the store or the trace ----

def _every_value(db: Path) -> str:
    """Every value of every table of a session store file (world tables included), as text: a
    packed value (a world's step lines, schema 6) inflated with the store's own dictionaries."""
    import sqlite3

    from akh_tui.engine.store.codec import WINDOW, inflate

    con = sqlite3.connect(db)

    def text(v: object) -> str:
        if not isinstance(v, bytes):
            return str(v)
        try:
            return inflate(v, dicts)
        except ValueError:
            return v.decode("utf-8", "replace")

    try:
        dicts: dict[str, bytes | None] = {k[len("zdict."):]: v.encode("utf-8")[-WINDOW:] for k, v in
                                          con.execute("SELECT key, value FROM meta WHERE key LIKE 'zdict.%'")}
        out: list[str] = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            for row in con.execute(f"SELECT * FROM {table}"):
                out.extend(text(v) for v in row)
        return "\n".join(out)
    finally:
        con.close()


def _recorded_world(tmp_path: Path, art: str, register: str | None = None) -> tuple[str, str]:
    """The world run through the door with a trace: (the trace, every value of the store)."""
    from akh_tui.engine.paths import Locations
    from akh_tui.engine.redaction import register_secret
    from akh_tui.engine.world import load_world
    from akh_tui.engine.world.worldrun import WorldRun

    spec = load_world(str(_world_dir(tmp_path, art)))
    if register is not None:
        register_secret(register)  # after the world file was read: only the writers can mask it now
    r = WorldRun.start(Locations(tmp_path / "data", tmp_path / "c.toml"), spec, trace=tmp_path / "t.jsonl")
    r.run()
    r.close()
    trace = (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert '"read_artifact"' in trace
    return trace, _every_value(tmp_path / "data" / "session.db")


def test_world_credential_shapes_in_a_world_file_and_its_artifacts_never_reach_store_or_trace(tmp_path: Path) -> None:
    """Credential shapes in a world file's artifact text and in an artifact's triples are
    masked where they enter (at load): not in the steps, the saved states, the header or the trace."""
    shaped = "ghp_" + "Z9" * 15
    (tmp_path / "leak.tsv").write_text(f"aurora\tmoors-at\t{shaped}\n", encoding="utf-8")
    art = ('[[artifacts]]\nid = "notes"\ntext = "aurora moors at berth; api_key=sk-proj-abcdef123456"\n'
           '[[artifacts]]\nid = "leaky"\ntriples = "leak.tsv"\n')
    trace, store = _recorded_world(tmp_path, art)
    assert "[redacted]" in trace
    for where in (trace, store):
        assert shaped not in where and "sk-proj-abcdef123456" not in where


def test_world_a_secret_registered_after_the_world_file_was_read_never_reaches_store_or_trace(tmp_path: Path) -> None:
    later = "late-registered-4d1c8e"
    trace, store = _recorded_world(tmp_path, f'[[artifacts]]\nid = "notes"\ntext = "aurora moors at berth {later}"\n',
                                   register=later)
    assert "[redacted]" in trace
    assert later not in trace and later not in store


# ---- issue 28, the designer's console and state edits ----
def test_a_recorded_state_edit_that_is_malformed_is_refused_by_name_never_a_traceback():
    """A store or a fork's edits are data: a damaged or hostile state edit is refused naming
    itself (StateEditError, an InputError), never a TypeError or KeyError."""
    from akh_tui.engine import StateEditError, from_state_payload

    for kind, payload in (("triple", None), ("triple", ["a", "b"]), ("triple", [1, 2, 3]), ("triple", ["a", "b", "c", "x"]),
                          ("triple", {"s": 1}), ("goal_edit", ["goal", 1]), ("goal_edit", {"goal": "1"}),
                          ("goal_edit", {"goal": True}), ("goal_edit", {"goal": 1, "priority": "high"}),
                          ("goal_edit", {"goal": 1, "status": ["active"]}), ("wm_edit", {}),
                          ("wm_edit", {"entry": 3, "content": {"x": 1}}), ("wm_edit", "entry 3")):
        with pytest.raises(StateEditError) as exc:
            from_state_payload(kind, payload)
        assert exc.value.field == "edit" and "malformed" in exc.value.message, (kind, payload)


def test_a_query_of_free_patterns_is_bounded(tmp_path):
    """A query that would walk the graph once per binding stops at its budget, says so, and
    costs bounded CPU (the workbench's console runs it on the UI thread)."""
    import resource

    from akh_tui.engine import Locations, Run

    run = Run.start(Locations.resolve(data_dir=tmp_path), "zoo", 7)
    try:
        for _ in range(6):
            run.step()
        t0 = resource.getrusage(resource.RUSAGE_SELF)
        out = run.query("(?a ? ?b) (?c ? ?d) (?e ? ?f)")  # a cross product: 10^6 bindings
        t1 = resource.getrusage(resource.RUSAGE_SELF)
        text = "\n".join(out["lines"])
        assert out["capped"] and ("at least 10000" in text or text.startswith("cut short"))
        assert (t1.ru_utime + t1.ru_stime) - (t0.ru_utime + t0.ru_stime) < 5.0
    finally:
        run.close()


# ---- issue 26, the world workbench ----
def test_the_world_workbench_shows_no_credential_of_an_artifact_and_parses_what_is_typed_never_evals(tmp_path: Path) -> None:
    """An artifact's text with a credential shape shows masked in the shared world; a world
    breakpoint or a fork edit typed as code is refused by name, never run."""
    from akh_tui.engine import InputError, Locations, WorldWatch, parse_world_break, parse_world_edits

    art = '[[artifacts]]\nid = "notes"\ntext = "aurora moors at berth; api_key=sk-proj-abcdef123456"\n'
    watch = WorldWatch.open(str(_world_dir(tmp_path, art)), Locations(tmp_path / "data", tmp_path / "c.toml"))
    try:
        watch.step_round()
        shown = "\n".join(watch.artifact_content("notes", 1)) + repr(watch.artifacts()) + repr(watch.ledger_log)
        assert "sk-proj-abcdef123456" not in shown and "aurora" in shown
        for text in ("__import__('os').system('touch pwned')", "transfer>__import__('os')", "agent:$(id)"):
            with pytest.raises(InputError):
                parse_world_break(text, watch.ids)
        with pytest.raises(InputError):
            parse_world_edits("order=__import__('os').getcwd()", watch.ids)
        assert not (tmp_path / "pwned").exists()
    finally:
        watch.close()


# ---- issue 30, a Soar run in the session store: its report ----
def test_a_soar_run_report_shows_operator_names_from_a_soar_file_as_text(cli, tmp_path: Path) -> None:
    """Operator names come from a .soar file (untrusted): in a stored run's report they are
    text, never markup, script or a link (HTML escaped, Markdown escaped or in code spans)."""
    pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")
    name = "|<script>alert(1)</script>[x](http://evil.example) **b**|"
    (tmp_path / "evil.soar").write_text(
        "sp {evil*propose (state <s> ^superstate nil -^done yes) --> (<s> ^operator <o> +) (<o> ^name " + name + ")}\n"
        "sp {evil*apply (state <s> ^operator <o>) --> (<s> ^done yes) (halt)}\n", encoding="utf-8")
    (tmp_path / "evil.toml").write_text('name = "evil"\narchitecture = "soar"\nproductions = "evil.soar"\nseed = 1\n',
                                        encoding="utf-8")
    cli("agent", "run", "--scenario", str(tmp_path / "evil.toml"))
    cli("sessions", "report", "1", "-o", str(tmp_path / "r.html"))
    cli("sessions", "report", "1", "-o", str(tmp_path / "r.md"))
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;" in html
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    row = next(ln for ln in md.splitlines() if "script" in ln)
    assert "`" in row.split("|")[2]  # the operator's cell is a code span: shown literally

# ---- issue 27, recorded model calls: a tampered cassette, a reply outside the schema ----

def test_a_tampered_cassette_offline_is_exit_2_naming_file_and_line(cli, tmp_path) -> None:
    import gzip as _gzip
    import json as _json

    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    bad = {"prompt_hash": "c" * 64, "reply": ["not", "text"], "tokens": 1}
    (data / "model-calls.jsonl.gz").write_bytes(_gzip.compress((_json.dumps(bad) + "\n").encode()))
    (tmp_path / "config.toml").write_text("[llm]\noffline = true\n")
    proc = cli("agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1", "--fresh", check_rc=2)
    said = proc.stdout + proc.stderr
    assert "model-calls.jsonl.gz:1: field 'reply': must be text" in said and "Traceback" not in said


def test_a_recorded_reply_outside_the_schema_is_rejected_on_replay(tmp_path) -> None:
    """A cassette whose reply names a tool the schema never offered (a server that ignored it, or
    an edited file) is checked like a live reply: rejected, the table's choice runs."""
    import json as _json

    import gzip as _gzip

    from akh_tui.engine.llm.cassette import Cassette
    from akh_tui.engine.llm.decider import LLMDecider as _LLMDecider
    from akh_tui.engine.llm.scripted import ScriptedProvider as _Scripted
    from tests.engine.llm.test_llm import context

    ctx = context(cycle=3, offered=("kg_query",))
    sampling = {"temperature": 0.0, "seed": 0, "max_tokens": 400}
    path = tmp_path / "c.jsonl.gz"
    _LLMDecider(_Scripted.for_tools(), cassette=Cassette(path), sampling=sampling).decide(ctx)
    call = _json.loads(_gzip.decompress(path.read_bytes()))
    call["reply"] = _json.dumps({"situation_assessment": "x", "action_rationale": "y",
                                 "action": {"tool": "shell_exec", "input": "rm -rf ~"}})
    path.write_bytes(_gzip.compress((_json.dumps(call) + "\n").encode()))
    out = _LLMDecider(None, cassette=Cassette(path), sampling=sampling).decide(ctx)
    assert out["intent"] is None and "not offered this cycle" in out["rejected"]


# ---- issue 26, who moved this decision ----
def test_why_moved_answers_for_the_recorded_world_whatever_its_file_says_now(cli, tmp_path: Path) -> None:
    """The read-set is taken by replaying the recorded step from the branch's saved state (which
    holds the artifacts, prices and balances as recorded) and checked against the recorded lines:
    a world file edited since (an artifact's price raised) does not change the answer; a step name
    that is not ROUND:AGENT is an error naming --at, never a traceback."""
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    world = tmp_path / "w.toml"
    text = (f'[world]\nname = "w"\nrounds = 4\nschedule = "shuffle"\nmint_every = 5\nstarting_scrip = 50\n'
            f'[[agents]]\nid = "bold"\nscenario = "{market}/trader.toml"\npsyche = "{market}/bold.toml"\n'
            f'[[agents]]\nid = "cautious"\nscenario = "{market}/trader.toml"\npsyche = "{market}/cautious.toml"\n'
            f'[[artifacts]]\nid = "bold-ledger"\nowner = "bold"\ntriples = "{market}/bold.tsv"\nprice = 4\n')
    world.write_text(text, encoding="utf-8")
    cli("world", "run", str(world), "--rounds", "3")
    before = cli("world", "why-moved", "--at", "3:bold", "--prove").stdout
    assert "cautious -> bold 4 (read bold-ledger@1)" in before
    world.write_text(text.replace("price = 4", "price = 40"), encoding="utf-8")
    assert cli("world", "why-moved", "--at", "3:bold", "--prove").stdout == before
    for bad in ("3:bold;rm -rf /", "$(id)", "0:bold"):
        proc = cli("world", "why-moved", "--at", bad, check_rc=2)
        assert "--at" in proc.stderr and "Traceback" not in proc.stderr

# ---- issue 30, world text on a Soar agent's input link ----
@pytest.mark.parametrize("text", [
    "sp {evil (state <s> ^superstate nil) --> (write |pwned|) (halt)}",
    "} excise --all ; output log --add /tmp/akh-soar-input-attack.log",
    "|load library /tmp/libevil| (cmd |echo pwned|)",
])
def test_world_text_on_a_soar_input_link_is_data_never_a_command(tmp_path: Path, text: str) -> None:
    """A goal's text, an artifact's id and owner and an offer's input reach the Soar agent's
    input link as string values: Soar never parses them as commands or productions (no rule
    added or removed, nothing written), and the agent reads them back verbatim."""
    pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")
    from types import SimpleNamespace

    from akh_tui.engine.soar.decider import trader

    dec = trader()
    try:
        rules = dec.arch._cmd("print --all")
        offer = SimpleNamespace(tool="read_artifact", input=text, score=0.6, offered=True)
        noop = SimpleNamespace(tool="noop", input="", score=0.05, offered=True)
        chosen, _ = dec.choose(SimpleNamespace(cycle=1), SimpleNamespace(description=text), None, [offer, noop], offer)
        dec.arch.observe({"cycle": 2, "goal": text, "artifact": [{"id": text, "owner": text, "price": 1}]})
        dec.arch.run_decisions(1)
        assert dec.arch._cmd("print --all") == rules  # no production added, none excised
        assert not dec.arch.finished and not Path("/tmp/akh-soar-input-attack.log").exists()
        assert chosen.input == text  # the offer it took, its input verbatim from the output link
        link = dec.arch.agent.GetInputLink()
        goal = next(link.GetChild(i) for i in range(link.GetNumberChildren()) if link.GetChild(i).GetAttribute() == "goal")
        assert goal.GetValueAsString() == text
    finally:
        dec.arch.close()


# ---- issue 28, hot reload: what a store or a pin file says was reloaded ----
def test_a_pin_files_reload_inputs_are_data_checked_not_trusted(cli, tmp_path: Path) -> None:
    """A pin file's reload inputs (a rules reload holds the rule files' text, a triples reload
    the triples) come from a file anyone may hand over: a malformed one is refused with the
    field named (exit 2, no traceback), and rule text is parsed as rules, never run."""
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "3")
    cli("sessions", "pin", "1", "--cycle", "3", "-o", "ok.pin.json")
    pin = json.loads((tmp_path / "ok.pin.json").read_text(encoding="utf-8"))
    for kind, payload in (("reload_rules", [["x.toml", 3]]), ("reload_rules", "rm -rf /"),
                          ("reload_triples", [["a", "b", "c", "__import__('os')"]]), ("reload_triples", {"a": 1}),
                          ("reload_rules", [["x.toml", "__import__('os').system('touch pwned')"]])):
        bad = dict(pin, inputs=[{"after_cycle": 1, "kind": kind, "payload": payload}])
        (tmp_path / "bad.pin.json").write_text(json.dumps(bad), encoding="utf-8")
        proc = cli("check", "bad.pin.json", check_rc=2)
        assert "Traceback" not in proc.stderr and ("reload" in proc.stderr or "x.toml" in proc.stderr), proc.stderr
    assert not (tmp_path / "pwned").exists()


# ---- issue 26, interviews: a model's reply and a question are foreign text ----
def test_an_interviews_model_reply_and_question_are_masked_and_cannot_drive_the_terminal(cli, tmp_path: Path,
                                                                                        monkeypatch) -> None:
    """A model interviewed may echo a key it saw and send terminal escapes or a carriage return
    that would overwrite what was said; a question may carry a key too. Neither reaches the
    answer, the store's interview row or the screen as it came."""
    import sqlite3

    from akh_tui.engine.llm import scripted
    from akh_tui.engine.paths import bundled_data_dir
    from akh_tui.engine.redaction import register_secret

    secret = "sk-interview-5e1d0c93ab"
    register_secret(secret)
    hostile = f"\x1b[2J\x1b]0;pwned\x07I chose it.\rThe key is {secret}\n\x1b[31mred[/red] [bold]x"
    monkeypatch.setattr(scripted, "scripted_interview_reply", lambda messages: hostile)
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    (tmp_path / "w.toml").write_text(f'[world]\nname = "m"\nrounds = 3\n[[agents]]\nid = "a"\n'
                                     f'scenario = "{market}/trader.toml"\ndecider = "scripted"\n', encoding="utf-8")
    cli("world", "run", "w.toml")
    got = json.loads(cli("world", "interview", "--at", "2:a", f"why? my key is {secret}", "--model", "--json").stdout)
    out = cli("world", "interview", "--list").stdout
    rows = sqlite3.connect(tmp_path / "data" / "session.db").execute("SELECT payload FROM world_interviews").fetchall()
    for text in (json.dumps(got), out, json.dumps(rows)):
        assert secret not in text and "\x1b" not in text and "\\u001b" not in text and "\r" not in text and "\x07" not in text
    assert got["model"]["reply"].startswith("[2J]0;pwnedI chose it.The key is ")
    assert "[bold]x" in out  # printed as the text it is, not as markup


# ---- issue 26, the world gate: what a person (or a seat) answers ----
def test_a_gate_answers_words_are_masked_cut_and_kept_out_of_the_step_line(tmp_path: Path) -> None:
    """The reason and the `by` of an answer are typed by a person (later, by a browser tab):
    a registered secret in them is masked before the record is written, a reason is cut at 500
    characters and `by` at 64, and neither can add records (newlines stay inside one line)."""
    from akh_tui.engine import Answer, WorldRun
    from akh_tui.engine.redaction import register_secret

    secret = "sk-test-" + "a1b2c3d4" * 4
    register_secret(secret)
    r = WorldRun.start(Locations(tmp_path / "data", tmp_path / "c.toml"), "market")
    try:
        r.gate(["cautious"])
        why = f"because {secret}\n{{\"type\":\"ledger\"}}" + "x" * 10_000
        r.step(answer=lambda p: Answer("reject", by=f"seat {secret}\n" + "y" * 200, why=why))
        lines = list(r.trace_lines())
    finally:
        r.close()
    assert all(secret not in line for line in lines)
    user = next(json.loads(x) for x in lines if x.startswith('{"type":"cycle"'))["decide"]["user"]
    assert len(user["why"]) <= 500 and len(user["by"]) <= 64 and user["why"].startswith("because ")
    assert sum(1 for x in lines if x.startswith('{"type":"ledger"')) == 0  # the reason added no record


@pytest.mark.parametrize("user", [{"decision": "maybe", "tool": "noop", "by": "user", "why": ""},
                                  {"decision": "choose", "tool": ["x"], "by": "user", "why": ""},
                                  {"decision": "approve", "tool": None, "by": 3, "why": ""}])
def test_a_damaged_recorded_answer_is_reported_never_replayed_as_another(user: dict) -> None:
    from akh_tui.engine.world.gate import recorded_answer

    line = json.dumps({"type": "cycle", "decide": {"tool": "noop", "user": user}}, separators=(",", ":"))
    with pytest.raises(InputError, match="recorded gate answer") as e:
        recorded_answer([line])
    assert e.value.field == "decide.user"


# ---- issue 28, hot reload of a plugin: its code only from a folder the user trusts ----
# A plugin reload records the module's source; the tools are made from that text. Live, the
# new code runs only with the folder agreed as it is now; replayed (rewind, fork, resume, a
# pin's check), the recorded text runs only while the folder it names is trusted, and a pin's
# text only when it is the trusted folder's own file. PWNED marks hostile text that ran.

def _reload_payload(d: Path, source: str) -> dict:
    import hashlib

    return {"ref": "evilmod:make", "file": str(d / "evilmod.py"), "folder": str(d), "source": source,
            "sha256": hashlib.sha256(source.encode()).hexdigest()}


HOSTILE = EVIL_MODULE.replace('Path(__file__).with_name("MARKER")', 'Path(__file__).with_name("PWNED")')


def test_agent_reload_runs_no_new_plugin_code_from_a_folder_not_trusted_now(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    assert _akh(tmp_path, "agent", "run", "--scenario", str(d / "evil.toml"), "--max-cycles", "1",
                "--allow-plugins").returncode == 0
    (d / "MARKER").unlink()  # the run the user agreed to ran it; from here on, nothing may
    (d / "evilmod.py").write_text(HOSTILE)
    p = _akh(tmp_path, "agent", "reload")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    err = _flat(p.stderr)
    assert f"{d} is not a trusted folder" in err and f"akh-tui trust add {d}" in err and "not reloaded" in err
    (d / "evilmod.py").write_text(EVIL_MODULE)
    assert _akh(tmp_path, "trust", "add", str(d)).returncode == 0
    (d / "evilmod.py").write_text(HOSTILE)  # changed since it was trusted
    p = _akh(tmp_path, "agent", "reload")
    assert p.returncode == 2 and f"{d} changed since it was trusted" in _flat(p.stderr)
    assert not (d / "PWNED").exists() and not (d / "MARKER").exists()


def test_a_stored_plugin_reload_from_an_untrusted_folder_is_not_replayed(tmp_path: Path) -> None:
    """A store that says the run reloaded a plugin from a folder the user never trusted (a
    store handed over, or edited): a rewind past it refuses, naming the folder, runs nothing."""
    from akh_tui.engine import Locations, Run

    d = _evil_folder(tmp_path)
    assert _akh(tmp_path, "agent", "run", "--scenario", "zoo", "--max-cycles", "2").returncode == 0
    run = Run.resume(Locations(tmp_path / "data", tmp_path / "cfg" / "config.toml"))
    run._emit([], inputs=[("reload_plugin", _reload_payload(d, HOSTILE))])  # as the store would hold it
    run.close()
    assert _akh(tmp_path, "agent", "resume", "--max-cycles", "1").returncode == 0
    p = _akh(tmp_path, "agent", "fork", "--at", "3", "--name", "past-the-reload")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    err = _flat(p.stderr)
    assert f"the run reloaded plugin evilmod:make from {d}" in err and f"akh-tui trust add {d}" in err
    assert not (d / "PWNED").exists() and not (d / "MARKER").exists()


def test_a_pins_plugin_reload_runs_only_the_trusted_folders_own_file(tmp_path: Path) -> None:
    d = _evil_folder(tmp_path)
    pin = _pin_beside(tmp_path, d)
    assert _akh(tmp_path, "trust", "add", str(d)).returncode == 0
    data = json.loads(pin.read_text())
    for source in (HOSTILE, EVIL_MODULE + "\n"):  # hostile text, or text the folder does not hold
        data["inputs"] = [{"after_cycle": 0, "kind": "reload_plugin", "payload": _reload_payload(d, source)}]
        pin.write_text(json.dumps(data, indent=1))
        p = _akh(tmp_path, "check", str(pin))
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert "is not what" in _flat(p.stderr) and "trusted folder's own file" in _flat(p.stderr)
        assert not (d / "PWNED").exists()
    damaged = dict(_reload_payload(d, EVIL_MODULE), sha256="0" * 64)
    data["inputs"] = [{"after_cycle": 0, "kind": "reload_plugin", "payload": damaged}]
    pin.write_text(json.dumps(data, indent=1))
    p = _akh(tmp_path, "check", str(pin))
    assert p.returncode == 2 and "does not match its sha256" in _flat(p.stderr)
    data["inputs"] = [{"after_cycle": 0, "kind": "reload_plugin", "payload": _reload_payload(d, EVIL_MODULE)}]
    pin.write_text(json.dumps(data, indent=1))  # the folder's own file: rerun as the user trusted it
    p = _akh(tmp_path, "check", str(pin))
    assert p.returncode == 0, p.stderr


def test_a_pins_goals_or_plugin_reload_of_the_wrong_shape_is_refused_naming_the_field(cli, tmp_path: Path) -> None:
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "2")
    cli("sessions", "pin", "1", "--cycle", "2", "-o", "ok.pin.json")
    pin = json.loads((tmp_path / "ok.pin.json").read_text(encoding="utf-8"))
    for kind, payload, field in (
            ("reload_goals", {"file": "x.toml", "goals": [["Find mammals", None, "128"]]}, "reload_goals"),
            ("reload_goals", {"file": "x.toml", "goals": [["Find mammals", None, 999]]}, "priority"),
            ("reload_goals", ["__import__('os')"], "reload_goals"),
            ("reload_plugin", {"ref": "os:system", "file": "/etc/passwd"}, "reload_plugin"),
            ("reload_plugin", {"ref": "os;x:y", "file": "/a/b.py", "folder": "/a", "sha256": "", "source": ""},
             "reload_plugin.ref"),
            ("reload_plugin", {"ref": "m:make", "file": "/etc/m.py", "folder": "/tmp", "source": "x = 1",
                               "sha256": __import__("hashlib").sha256(b"x = 1").hexdigest()}, "reload_plugin.file")):
        bad = dict(pin, inputs=[{"after_cycle": 1, "kind": kind, "payload": payload}])
        (tmp_path / "bad.pin.json").write_text(json.dumps(bad), encoding="utf-8")
        proc = cli("check", "bad.pin.json", check_rc=2)
        assert "Traceback" not in proc.stderr and field in proc.stderr, (kind, proc.stderr)


# ---- issue 26, a class in the browser ----
def test_a_class_channel_admits_only_its_tabs_and_their_own_requests(tmp_path: Path) -> None:
    """The channel between a served world's owner and its tabs (`serve --world`): a request
    without the channel's token, with a guessed one, or from a web page (an Origin) gets a 403
    and changes nothing; a forged session, a student's teacher command, an unoffered tool, a
    malformed body are refused with what was wrong (no traceback, nothing recorded)."""
    import asyncio
    import threading

    from akh_tui.cli.class_channel import Channel
    from akh_tui.engine import ClassRoom, Locations, WorldWatch
    from akh_tui.engine.world.class_client import _UnixConnection

    watch = WorldWatch.open("market", Locations(tmp_path / "data", tmp_path / "config.toml"))
    room = ClassRoom(watch)
    channel = Channel(room, "tok-" + "x" * 40)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def call(path: str, body: object, headers: dict[str, str]) -> tuple[int, dict]:
        conn = _UnixConnection(str(channel.path), 10)
        try:
            raw = body if isinstance(body, bytes) else json.dumps(body).encode()
            conn.request("POST", path, body=raw, headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()

    good = {"Authorization": f"Bearer {channel.token}"}
    try:
        asyncio.run_coroutine_threadsafe(channel.start(), loop).result(timeout=30)
        for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer " + "x" * 44},
                        {"Authorization": channel.token}, {**good, "Origin": "http://127.0.0.1:8000"},
                        {**good, "Origin": "null"}):
            status, body = call("/join", {"key": room.teacher_key}, headers)
            assert status == 403 and body["field"] == "channel", (headers, body)
        assert room.sessions == {}
        student = call("/join", {"key": room.seats["bold"].key}, good)[1]["session"]
        for path, body, why in (("/state", {"session": "forged", "since": 0}, "unknown"),
                                ("/teacher", {"session": student, "command": "run"}, "only the teacher"),
                                ("/teacher", {"session": student, "command": "reassign", "agent": "bold"},
                                 "only the teacher"),
                                ("/answer", {"session": student, "proposal": 1, "decision": "choose",
                                             "tool": "shell_exec"}, "no longer waiting"),
                                ("/psyche", {"session": student, "toml": "[x", "then": "apply"}, "psyche"),
                                ("/psyche", {"session": student, "toml": "", "then": "rm -rf"}, "apply or save"),
                                ("/join", b"{not json", "malformed"), ("/join", [1, 2], "malformed"),
                                ("/state", {"session": student, "since": "soon"}, "malformed")):
            status, got = call(path, body, good)
            assert status in (400, 409) and why in got["error"], (path, body, got)
            assert "Traceback" not in got["error"]
        assert not room.running and room.requests == [] and watch.run.last_step == 0
        # a huge wait is cut to the channel's longest (the request returns; nothing hangs)
        status, got = call("/state", {"session": student, "since": -1, "wait_s": 1e12}, good)
        assert status == 200 and "join" not in got  # a student never sees the join URLs
        # a hostile agent id cannot lead a psyche save out of the served folder
        served = (watch.run.locations.served_dir / "psyche").resolve()
        assert served in room.psyche_path("../../../etc/passwd").resolve().parents
    finally:
        asyncio.run_coroutine_threadsafe(channel.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        room.close()


# ---- issue 26, the class: review fixes ----
def test_a_class_join_key_of_any_bytes_gets_a_403_never_a_traceback(tmp_path: Path) -> None:
    """A join key is whatever a URL carries: a non-ASCII one (`?seat=%C3%A9`, `/T/ws/%C3%A9`)
    or bytes that are not UTF-8 used to raise TypeError in compare_digest (an HTTP 500 and a
    logged traceback). Now: the class's 403 page, before any app process starts."""
    import asyncio

    import aiohttp

    from tests.cli.test_serve_world import ClassServed

    served = ClassServed(tmp_path, "--world", "market")
    token = served.page_token()

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            origin = {"Origin": f"http://127.0.0.1:{served.port}"}
            for key in ("%C3%A9", "%ED%B3%BF", "%FF%FE", "a%00b", "%E2%80%AE" * 30):
                for kind in ("seat", "teacher"):
                    async with session.get(f"{served.base}/?token={token}&{kind}={key}") as page:
                        assert page.status == 403 and "join URL" in await page.text(), (kind, key)
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(f"{served.base}/{token}/ws/{key}?width=80&height=24", headers=origin)
                assert refused.value.status == 403, key
            assert served.app_processes() == []

    try:
        asyncio.run(scenario())
    finally:
        served.stop()
    text = "".join(served.lines)
    assert "Traceback" not in text and "TypeError" not in text and " 500 " not in text, text


def test_a_class_student_cannot_flood_forks_learn_the_owners_paths_or_outlive_a_reassignment(tmp_path: Path) -> None:
    """Over the channel, as a tab's process would: a hundred psyche applies leave at most one
    edit waiting for the seat (the rest replace it, or are refused naming the field); the psyche
    a student reads or saves names no path of the owner's machine; a reassigned seat's old
    session is refused everything."""
    import asyncio
    import re as _re

    from akh_tui.cli.class_channel import Channel
    from akh_tui.engine import ClassClient, ClassRefusal, ClassRoom, Locations, WorldWatch

    locations = Locations(tmp_path / "data", tmp_path / "config.toml")
    watch = WorldWatch.open("market", locations)
    room = ClassRoom(watch)  # not started: what is queued stays queued
    channel = Channel(room, "tok-" + "y" * 40)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(channel.start(), loop).result(timeout=30)
        student = ClassClient(str(channel.path), channel.token, room.seats["bold"].key)
        student.join()
        got = student.psyche()
        assert str(locations.data_dir) not in json.dumps(got) and not got["save_to"].startswith("/")
        refused = 0
        for n in range(100):
            text = _re.sub(r"^guardian = [0-9.]+", f"guardian = 0.{n % 9 + 1}", got["toml"], count=1, flags=_re.M)
            try:
                student.set_psyche(text)
            except ClassRefusal as exc:
                assert exc.field == "psyche"
                refused += 1
        assert [job for job, _ in room.requests] == ["psyche"]  # one fork to make, whatever was sent
        saved = student.save_psyche(got["toml"])
        assert str(locations.data_dir) not in json.dumps(saved) and not saved["path"].startswith("/")
        teacher = ClassClient(str(channel.path), channel.token, room.teacher_key)
        teacher.join()
        teacher.command("reassign", "bold")
        for call in (lambda: student.state(-1, 0), student.psyche, lambda: student.set_psyche(got["toml"])):
            with pytest.raises(ClassRefusal, match="reassigned seat:bold"):
                call()
        with pytest.raises(ClassRefusal, match="no longer"):  # its key takes nothing either
            ClassClient(str(channel.path), channel.token, student.key).join()
    finally:
        asyncio.run_coroutine_threadsafe(channel.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        room.close()


# ---- issue 25, world fork edits: a plugin decider, goal and limit text ----

def test_a_world_forks_plugin_decider_from_an_untrusted_folder_runs_nothing_and_forks_nothing(tmp_path, monkeypatch):
    """A fork's `--decider module:attr` is the world folder's code: as in the world file, it is
    imported only from a folder the user agreed to; refused, nothing ran and no branch exists."""
    from akh_tui.engine import Locations, WorldRun
    from akh_tui.engine.paths import bundled_data_dir
    from akh_tui.engine.world.edits import SetDecider

    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "config.toml"))
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "w.toml").write_text(f'[world]\nname = "w"\nrounds = 3\n[[agents]]\nid = "a"\n'
                                   f'scenario = "{market}/trader.toml"\n', encoding="utf-8")
    marker = tmp_path / "pwned"
    (folder / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
                                    "def make():\n    raise SystemExit('never')\n", encoding="utf-8")
    r = WorldRun.start(Locations(tmp_path / "data", tmp_path / "config.toml"), str(folder / "w.toml"))
    try:
        r.run(1)
        for ref in ("evil:make", "evil", "os:system", "../evil:make"):
            with pytest.raises(InputError) as exc:
                r.fork(1, [SetDecider("a", ref)])
            assert exc.value.field == "--decider"
        assert not marker.exists() and [b["name"] for b in r.branches()] == ["main"]
    finally:
        r.close()


@pytest.mark.parametrize("text", ['new "$(touch pwned)" priority=1', "1 criteria='; rm -rf /'",
                                  'new x priority=99999999999999999999', "new " + "x" * 5000])
def test_fork_goal_and_limit_text_is_data_never_run_and_checked(cli, tmp_path, text):
    cli("world", "run", "market", "--rounds", "1")
    p = cli("world", "fork", "--at", "1:bold", "--agent", "bold", "--goal", text, "--limit", "writes=1", check_rc=None)
    assert p.returncode in (0, 2) and "Traceback" not in p.stderr
    assert not (tmp_path / "pwned").exists()
    p = cli("world", "fork", "--at", "1:bold", "--limit", "actions=1e400", check_rc=2)
    assert "--limit actions" in p.stderr
