"""Secrets never reach what a run records or prints (issue 23): an LLM server on 127.0.0.1
puts secret shapes (an `sk-…` key, `Bearer …`, URL userinfo, JSON `"api_key": "…"`, and the
request's own `Authorization` header, echoed) into its error bodies and its replies; none of
them is found in the trace, in any value of the session store (decompressed), on stdout or on
stderr. Fuzzed with hypothesis (derandomized, bounded), the run in-process so each example
takes a fraction of a second.

Also here: a trace the file refuses (`--trace /dev/full`) and a malformed URL, wherever a user
gives one, are refusals naming the file or field (exit 2), never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import tempfile
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akh_tui.cli.root import main
from akh_tui.engine.errors import InputError
from akh_tui.engine.llm.decider import LLMConfig, OpenAICompatibleProvider
from akh_tui.engine.store.codec import unpack
from akh_tui.engine.store.schema import TABLES
from akh_tui.engine.urls import check_url
from tests.engine.test_redact import _KEY_CHARS, secret_shape

PASSWORD = "hunter2-Pw-7731"  # in the [llm] base_url's userinfo


class StubLLM:
    """An OpenAI-compatible server on 127.0.0.1 whose answers a test scripts; each answer's
    text may hold `{auth}`, replaced by the request's Authorization header (a server echoing
    it, as the issue's did)."""

    def __init__(self) -> None:
        self.script: list[tuple[int, str]] = []
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with stub.lock:
                    status, body = stub.script.pop(0) if stub.script else (200, _reply("kg_query", "", "fine"))
                data = body.replace("{auth}", self.headers.get("Authorization", "")).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def _reply(tool: str, inp: str, rationale: str) -> str:
    content = json.dumps({"situation_assessment": f"assessing: {rationale}", "action_rationale": rationale,
                          "action": {"tool": tool, "input": inp}})
    return json.dumps({"choices": [{"message": {"content": content}}], "usage": {"total_tokens": 10}})


@pytest.fixture(scope="module")
def stub() -> Iterator[StubLLM]:
    s = StubLLM()
    yield s
    s.stop()


def store_text(db: Path) -> str:
    """Every value of the session store file, compressed ones decompressed, as one text."""
    con = sqlite3.connect(db)
    try:
        zdicts = {k.removeprefix("zdict."): (v if isinstance(v, bytes) else v.encode("utf-8"))[-32768:]
                  for k, v in con.execute("SELECT key, value FROM meta WHERE key LIKE 'zdict.%'")}
        out: list[str] = []
        for table in TABLES:
            for row in con.execute(f"SELECT * FROM {table}"):
                for v in row:
                    # a value's own checksum: this reads every value, whatever column holds its sum
                    out.append(unpack(v, zlib.crc32(v), zdicts) if isinstance(v, bytes) else str(v))
        return "\n".join(out)
    finally:
        con.close()


def cli(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """`akh-tui argv` in this process, with `env` set for the call: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    env = {"COLUMNS": "400", **env}  # one line per message
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, out.getvalue(), err.getvalue()


def _error(status: int, text: str) -> tuple[int, str]:
    return status, json.dumps({"error": {"message": f"rejected: {text}; you sent Authorization: {{auth}}"}})


@settings(max_examples=20, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(shape=secret_shape(), key=st.text(_KEY_CHARS, min_size=24, max_size=40), json_mode=st.booleans())
def test_no_secret_from_the_llm_server_reaches_the_trace_the_store_or_the_terminal(
        stub: StubLLM, shape: tuple[str, str], key: str, json_mode: bool) -> None:
    text, value = shape
    api_key = f"sk-live-{key}"
    secrets = {value, api_key, PASSWORD}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        config = d / "config.toml"
        config.write_text(f'[llm]\nbase_url = "http://akh:{PASSWORD}@127.0.0.1:{stub.port}/v1"\nmodel = "m"\n'
                          'api_key_env = "AKH_SECRET_KEY"\nmax_retries = 1\nbackoff_base = 0.0\n')
        with stub.lock:
            stub.script[:] = [
                _error(401, text),  # cycle 1: not retried; the body names the secret and echoes the header
                (200, _reply("kg_query", text, f"because {text}")),  # 2: in the input and the rationale
                (200, _reply(text, "", "a tool named after the secret")),  # 3: quoted as an unknown tool
                _error(500, text), _error(503, f"still {text}"),  # 4: retried, then given up
                (200, json.dumps({"choices": [{"message": {"content": f"no JSON here, {text}"}}]})),  # 5
            ]
        env = {"AKH_TUI_CONFIG": str(config), "AKH_TUI_DATA": str(d / "data"), "AKH_SECRET_KEY": api_key}
        argv = ["agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "6",
                "--trace", str(d / "t.jsonl"), *(["--json"] if json_mode else [])]
        code, out, err = cli(argv, env)
        assert code == 0, err
        trace = (d / "t.jsonl").read_text()
        stored = store_text(d / "data" / "session.db")
        # the run did meet every case: the model's words were recorded, masked
        decided = [json.loads(line)["decide"]["llm"] for line in trace.splitlines() if '"type":"cycle"' in line]
        assert [x["status"] for x in decided[:5]] == ["llm_error", "intent_rejected", "intent_rejected",
                                                      "llm_error", "intent_rejected"]
        assert "[redacted]" in decided[0]["reason"] and "[redacted]" in decided[1]["reason"]
        # a second command fails on the same secret in the config: the refusal is on stderr
        config.write_text(f'[llm]\nbase_url = "http://127.0.0.1:{stub.port}/v1"\nmodel = "m"\n'
                          f'api_key_env = {json.dumps(text)}\n')
        code2, out2, err2 = cli(["agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1",
                                 "--fresh"], env)
        assert code2 == 2 and "api_key_env" in err2
        for where, got in (("trace", trace), ("store", stored), ("stdout", out + out2), ("stderr", err + err2)):
            for secret in secrets:
                assert secret not in got, f"{secret!r} reached the {where}"


def test_the_store_check_reads_every_value(tmp_path: Path) -> None:
    """The helper above finds a value the store holds compressed (else the test proves nothing)."""
    code, _, err = cli(["agent", "run", "--scenario", "zoo", "--goals", "Find mammals zebra-4711",
                        "--max-cycles", "1"], {"AKH_TUI_DATA": str(tmp_path / "data")})
    assert code == 0, err
    assert store_text(tmp_path / "data" / "session.db").count("zebra-4711") > 1


# ---- a trace that cannot be written -----------------------------------------------------------

def test_a_trace_on_a_full_disk_is_an_error_naming_it_and_the_store_keeps_the_cycles(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out, err = cli(["agent", "run", "--scenario", "zoo", "--max-cycles", "40", "--trace", "/dev/full"],
                         {"AKH_TUI_DATA": str(data)})
    assert code == 2
    assert "Traceback" not in err and "/dev/full" in err and "No space left on device" in err
    assert "session store keeps every recorded cycle" in err
    # the cycles recorded before the trace failed are in the store, whole, and the run resumes
    code, out, err = cli(["sessions", "export", "1", "-o", str(tmp_path / "kept.jsonl")], {"AKH_TUI_DATA": str(data)})
    assert code == 0, err
    kept = [json.loads(line) for line in (tmp_path / "kept.jsonl").read_text().splitlines()]
    cycles = [r["cycle"] for r in kept if r["type"] == "cycle"]
    assert cycles and cycles == list(range(1, len(cycles) + 1))
    code, out, err = cli(["agent", "resume", "--max-cycles", "1"], {"AKH_TUI_DATA": str(data)})
    assert code == 0, err


@pytest.mark.parametrize("target", ["folder", "read-only"])
def test_a_trace_that_cannot_be_opened_is_refused_before_anything_runs(tmp_path: Path, target: str) -> None:
    if target == "folder":
        path = tmp_path / "adir"
        path.mkdir()
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes read-only files")
        path = tmp_path / "ro.jsonl"
        path.write_text("")
        path.chmod(0o444)
    code, out, err = cli(["agent", "run", "--scenario", "zoo", "--max-cycles", "3", "--trace", str(path)],
                         {"AKH_TUI_DATA": str(tmp_path / "data")})
    assert code == 2 and str(path) in err and "Traceback" not in err
    assert not (tmp_path / "data" / "session.db").exists() or "cycle" not in out


# ---- malformed URLs -----------------------------------------------------------------------------

MALFORMED = ["http://[::1/", "http://h:99999", "http://user:pw@[", "", "   ", "http://h:port/", "http://",
             "ftp://h/", "http://h/\nx", "//h/x", "http://[::1]:65536/"]


@pytest.mark.parametrize("url", MALFORMED)
def test_check_url_refuses_each_malformed_url_naming_the_field(url: str) -> None:
    with pytest.raises(InputError) as e:
        check_url(url, "llm.base_url", file="config.toml", line=3)
    assert e.value.field == "llm.base_url" and e.value.file == "config.toml" and e.value.line == 3
    assert "pw@" not in str(e.value)


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_llm_base_url_is_refused_with_its_line(tmp_path: Path, url: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'theme = "dark"\n\n[llm]\nmodel = "m"\nbase_url = {json.dumps(url)}\n')
    code, out, err = cli(["agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1"],
                         {"AKH_TUI_CONFIG": str(config), "AKH_TUI_DATA": str(tmp_path / "data")})
    assert code == 2, err
    assert f"{config}:5: field 'llm.base_url'" in err.replace("\n", "") and "Traceback" not in err
    assert "pw@" not in err
    with pytest.raises(InputError):
        LLMConfig.from_dict({"base_url": url, "model": "m"})
    with pytest.raises(Exception) as e:  # a config built in code is refused by the client too
        OpenAICompatibleProvider(LLMConfig(base_url=url, model="m"))
    assert not isinstance(e.value, ValueError)


@pytest.mark.parametrize("url", ["http://[::1/", "http://h:99999/x", "http://user:pw@[/", "http://h:port/x"])
def test_a_goal_naming_a_malformed_url_is_refused(tmp_path: Path, url: str) -> None:
    code, out, err = cli(["agent", "run", "--scenario", "zoo", "--goals", f"Fetch {url} now", "--max-cycles", "1"],
                         {"AKH_TUI_DATA": str(tmp_path / "data")})
    assert code == 2 and "field '--goals'" in err and "is not a URL" in err and "Traceback" not in err
    assert "pw@" not in err
    scenario = tmp_path / "s.toml"
    scenario.write_text(f'name = "s"\nkg = []\n\n[[goals]]\ndescription = {json.dumps("Fetch " + url)}\n')
    code, out, err = cli(["agent", "run", "--scenario", str(scenario), "--max-cycles", "1"],
                         {"AKH_TUI_DATA": str(tmp_path / "data")})
    assert code == 2 and f"{scenario}:5: field 'goals[0].description'" in err.replace("\n", ""), err


def test_a_key_typed_where_its_variable_name_goes_is_not_echoed(tmp_path: Path) -> None:
    """`api_key_env = "<the key itself>"`: refused naming the field and line, the value not shown
    (a raw key has no shape redact could know)."""
    raw = "q8Zt3mW9xL2vB7nK4pR6sT1yU5"
    config = tmp_path / "config.toml"
    config.write_text(f'[llm]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\napi_key_env = "{raw}!"\n')
    code, out, err = cli(["agent", "run", "--scenario", "zoo", "--decider", "llm", "--max-cycles", "1"],
                         {"AKH_TUI_CONFIG": str(config), "AKH_TUI_DATA": str(tmp_path / "data")})
    assert code == 2 and f"{config}:4: field 'llm.api_key_env'" in err
    assert raw not in err + out


def test_the_key_itself_is_masked_wherever_it_appears(stub: StubLLM, tmp_path: Path) -> None:
    """A key with no credential shape, quoted in a goal by mistake: the writers mask the value
    the LLM client registered, in the records, the events and the state the store keeps."""
    key = "Kq7Lw2Zp9Xr4Tn6Vb1Mc8Hd3"
    with stub.lock:
        stub.script[:] = []
    config = tmp_path / "config.toml"
    config.write_text(f'[llm]\nbase_url = "http://127.0.0.1:{stub.port}/v1"\nmodel = "m"\napi_key_env = "AKH_K"\n')
    code, out, err = cli(["agent", "run", "--scenario", "zoo", "--goals", f"Find mammals {key}", "--decider", "llm",
                          "--max-cycles", "3", "--trace", str(tmp_path / "t.jsonl"), "--json"],
                         {"AKH_TUI_CONFIG": str(config), "AKH_TUI_DATA": str(tmp_path / "data"), "AKH_K": key})
    assert code == 0, err
    trace, stored = (tmp_path / "t.jsonl").read_text(), store_text(tmp_path / "data" / "session.db")
    assert "Find mammals [redacted]" in trace
    for where, got in (("trace", trace), ("store", stored), ("stdout", out), ("stderr", err)):
        assert key not in got, where
