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
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from akh_tui.engine import confine, sandbox
from akh_tui.engine.config import AgentConfig
from akh_tui.engine.confine import Confinement, Refused, http_get, read_file, run_program, write_file
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
    assert out.endswith("[output truncated at 100 bytes]") and code < 0
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
from akh_tui.engine import confine, sandbox
sandbox._chosen, sandbox._why = sys.argv[1], "test"
results = {}
for attack, argv in json.loads(sys.argv[2]).items():
    argv = [a.replace("{pid}", str(os.getpid())) for a in argv]
    conf = confine.Confinement(workspace=sys.argv[3], shell_allow=(argv[0],), shell_timeout=20)
    try:
        code, out = confine.run_program(conf, argv)
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


# ---- issue 23, a plugin tool's hostile ToolResult (issue 28: checked at the boundary) ----
def _hostile_results() -> dict[str, Callable[[], object]]:
    from akh_tui.engine.kg import Triple
    from akh_tui.engine.toolapi import ToolResult

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
    from akh_tui.engine.run import Run
    from akh_tui.engine.toolapi import Offer, Tool
    from akh_tui.engine.toolspecs import ToolSpec

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
