"""`akh-tui serve`: the workbench in a real browser (Playwright driving the system's Chromium;
Playwright cannot download a browser here), loopback by default, dangerous capabilities off in
served sessions."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# textual-serve draws the terminal on a canvas (xterm.js): its text is not in the DOM. This
# keeps the page's terminal object when it is made, so the test reads the rows it shows.
KEEP_TERMINAL = """
Object.defineProperty(Object.prototype, 'fitAddon', {
  configurable: true,
  set(v) {
    window.__akhTerminal = this;
    Object.defineProperty(this, 'fitAddon', {value: v, writable: true, configurable: true, enumerable: true});
  },
});
"""
SCREEN_TEXT = """() => {
  const t = window.__akhTerminal && window.__akhTerminal.terminal;
  if (!t) return '';
  const b = t.buffer.active, rows = [];
  for (let i = 0; i < b.length; i++) { const l = b.getLine(i); if (l) rows.push(l.translateToString(true)); }
  return rows.join('\\n');
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """`akh-tui serve` in a session of its own (its app processes are its children), its stdout
    read as it comes: `url` is the URL it printed, token included."""

    def __init__(self, tmp_path: Path, *args: str, env: dict | None = None) -> None:
        self.port = _free_port()
        self.data = tmp_path / "data"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "akh_tui.cli", "serve", "--port", str(self.port), "--data-dir", str(self.data), *args],
            cwd=tmp_path, env=env or dict(os.environ, COLUMNS="160", LINES="45"), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[str] = []  # stdout and stderr, as they come (read, so neither pipe fills)
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()
        self.url = self._printed_url()
        self.base = f"http://127.0.0.1:{self.port}"
        self.token = self.url.rsplit("token=", 1)[1]

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line)

    def _printed_url(self, timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                m = re.search(r"http://\S+\?token=[A-Za-z0-9_-]+", line)
                if m:
                    return m.group(0)
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}: {''.join(self.lines)}")
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"serve printed no URL with a token within {timeout} s: {''.join(self.lines)!r}")

    def app_processes(self) -> list:
        import psutil  # dask[distributed], a dependency, brings it

        return psutil.Process(self.proc.pid).children(recursive=True)

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


def test_the_workbench_steps_in_a_real_browser(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    server = Served(tmp_path, "--scenario", "zoo")
    try:
        url = server.url  # the URL `serve` printed, its token included
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.add_init_script(KEEP_TERMINAL)
                page.goto(url)
                page.wait_for_selector("body.-first-byte", timeout=60_000)  # textual.js: the app's first output
                assert page.evaluate("!!(window.__akhTerminal && window.__akhTerminal.terminal)"), \
                    "textual-serve's page changed: its terminal object was not caught (see KEEP_TERMINAL)"
                # the workbench is up when its first cycle counter is drawn
                page.wait_for_function(f"({SCREEN_TEXT})().includes('cycle')", timeout=60_000)
                assert "cycle 2" not in page.evaluate(SCREEN_TEXT)
                page.locator("#terminal").click()
                page.keyboard.press("Space")
                page.wait_for_function(f"({SCREEN_TEXT})().includes('cycle 1')", timeout=30_000)
                page.keyboard.press("Space")
                page.wait_for_function(f"({SCREEN_TEXT})().includes('cycle 2')", timeout=30_000)
                text = page.evaluate(SCREEN_TEXT)
                assert "cycle 2" in text and "zoo" in text
                # the psyche editor's save (checked on disk below) goes where only served tabs look
                page.keyboard.press("e")
                page.wait_for_function(f"({SCREEN_TEXT})().includes('Psyche —')", timeout=30_000)
                page.keyboard.press("Control+w")
                page.wait_for_function(f"({SCREEN_TEXT})().includes('Psyche saved to')", timeout=30_000)
                page.keyboard.press("Escape")
                # another tab is another workbench (its own process and run): untouched by those keys;
                # opened as localhost, the other name of the loopback address it is served on
                other = browser.new_page(viewport={"width": 1400, "height": 900})
                other.add_init_script(KEEP_TERMINAL)
                other.goto(url.replace("127.0.0.1", "localhost"))
                other.wait_for_function(f"({SCREEN_TEXT})().includes('cycle')", timeout=60_000)
                assert "cycle 2" not in other.evaluate(SCREEN_TEXT)
                shot = tmp_path / "served-workbench.png"
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 10_000  # a drawn page, not a blank one
                keep = os.environ.get("AKH_TUI_SHOTS")  # where a reviewer wants to look at it
                if keep:
                    Path(keep).mkdir(parents=True, exist_ok=True)
                    Path(keep, shot.name).write_bytes(shot.read_bytes())
                # the address without the printed URL's token: a page saying to use that URL
                bare = browser.new_page()
                response = bare.goto(f"{server.base}/")
                assert response is not None and response.status == 403
                assert "the URL that `akh-tui serve` printed" in bare.inner_text("body")
            finally:
                browser.close()
        listed = subprocess.run([sys.executable, "-m", "akh_tui.cli", "sessions", "list", "--json",
                                 "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
        runs = json.loads(listed.stdout)
        # one run per tab, in the data dir; the tab that never stepped leaves none (issue 28: no 0-cycle runs)
        assert [(r["name"], r["branches"][0]["last_cycle"]) for r in runs] == [("zoo", 2)]
        # the tabs' runs never became the current run that `agent resume` / `--resume` follow
        assert not any(b["current"] for r in runs for b in r["branches"])
        assert (server.data / "served" / "psyche" / "zoo.toml").is_file() and not (server.data / "psyche").exists()
    finally:
        server.stop()


def test_a_non_loopback_address_needs_allow_remote(cli):
    for host in ("0.0.0.0", "192.168.1.20", "::", "example.org"):
        proc = cli("serve", "--host", host, check_rc=2)
        assert "not a loopback address" in proc.stderr and "--allow-remote" in proc.stderr, proc.stderr
    # with the flag it also needs the address browsers use: Host and Origin are checked against it
    proc = cli("serve", "--host", "0.0.0.0", "--allow-remote", check_rc=2)
    assert "field '--public-url'" in proc.stderr and "needs --public-url" in proc.stderr, proc.stderr
    # with both it says what that exposes (a bad scenario then stops it before listening)
    proc = cli("serve", "--host", "0.0.0.0", "--allow-remote", "--public-url", "http://lab.example:8000",
               "--scenario", "nowhere", check_rc=2)
    stderr = proc.stderr.replace("\n", " ")
    assert "has the printed URL (its token) gets a workbench" in stderr and "unknown scenario" in stderr, stderr
    assert "keep read_fs, write_fs, network, process_exec off" in stderr
    # a malformed public URL is named, its password never shown
    for bad, why in (("lab.example:8000", "must start with http:// or https://"), ("http://", "names no host"),
                     ("http://u:hunter22@lab.example/", "no user, query or fragment"),
                     ("http://lab.example/?x=1", "no user, query or fragment"), ("http://lab.example:99999", "not a URL")):
        proc = cli("serve", "--public-url", bad, check_rc=2)
        assert "field '--public-url'" in proc.stderr and why in proc.stderr.replace("\n", " "), (bad, proc.stderr)
        assert "hunter22" not in proc.stderr and "Traceback" not in proc.stderr
    for bad in ("0", "-3", "many"):
        proc = cli("serve", "--max-tabs", bad, check_rc=2)
        assert "--max-tabs" in proc.stderr, proc.stderr
    # a port someone else holds is named, not a traceback
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        proc = cli("serve", "--port", str(held.getsockname()[1]), check_rc=2)
    assert "cannot listen on 127.0.0.1:" in proc.stderr and "Traceback" not in proc.stderr


def test_served_sessions_keep_dangerous_capabilities_off(monkeypatch):
    from akh_tui.cli.serve_guard import is_loopback
    from akh_tui.engine.config import DANGEROUS_CAPABILITIES, SAFE_ENV, without_dangerous
    from akh_tui.engine.runs.scenario import load_scenario

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.2.3.4")
    monkeypatch.delenv(SAFE_ENV, raising=False)
    shadow = load_scenario("shadow")
    assert shadow.config.capabilities["process_exec"]  # the scenario turns shell_exec on
    safe = without_dangerous(shadow.config)
    assert not any(safe.capabilities[c] for c in DANGEROUS_CAPABILITIES)
    assert safe.capabilities["read_kg"] and safe.shell_allow == shadow.config.shell_allow
    assert shadow.config.capabilities["process_exec"]  # a copy: the original is untouched
    monkeypatch.setenv(SAFE_ENV, "1")  # what `serve` sets for its tabs unless --allow-dangerous
    served = load_scenario("shadow")
    assert not any(served.config.capabilities[c] for c in DANGEROUS_CAPABILITIES)
    from akh_tui.engine.runs.scenario import build_agent

    agent = build_agent(served)
    for _ in range(6):
        rec = agent.step()
        assert rec["decide"]["tool"] != "shell_exec"


async def _ws(session, served: Served, origin: str | None = None):
    """A tab's WebSocket, as the page's script opens it (the token in the path it was given)."""
    headers = {"Origin": origin or f"http://localhost:{served.port}"}
    return await session.ws_connect(f"{served.base}/{served.token}/ws?width=100&height=30", headers=headers)


def test_the_tab_cap_holds_and_a_closed_tab_frees_its_place(tmp_path):
    """`--max-tabs 1`: with one tab open the next page and the next WebSocket are told the cap is
    reached and no second app process starts; once the tab is closed and its process has ended,
    the page opens again."""
    import asyncio

    import aiohttp

    served = Served(tmp_path, "--max-tabs", "1")

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            first = await _ws(session, served)
            msg = await first.receive(timeout=90)  # the app's first output: its process is up
            assert msg.type == aiohttp.WSMsgType.BINARY, msg
            assert len(served.app_processes()) >= 1
            async with session.get(served.url) as page:
                text = await page.text()
                assert page.status == 503 and "cap of 1 open tab" in text and "--max-tabs" in text, text
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await _ws(session, served)
            assert refused.value.status == 503
            await first.close()
            deadline = time.monotonic() + 60
            while True:
                async with session.get(served.url) as page:
                    if page.status == 200:
                        break
                assert time.monotonic() < deadline, "closing the tab did not free its place"
                await asyncio.sleep(0.2)
            assert served.app_processes() == []  # counted by processes: the closed tab's has ended

    try:
        asyncio.run(scenario())
    finally:
        served.stop()
    # the refused tab started no run, and the one that opened and closed without a step left none
    # (issue 28: no 0-cycle runs)
    listed = subprocess.run([sys.executable, "-m", "akh_tui.cli", "sessions", "list", "--json",
                             "--data-dir", str(served.data)], capture_output=True, text=True, timeout=60)
    assert json.loads(listed.stdout or "[]") == [], listed.stderr

def test_a_served_tab_says_on_the_page_what_the_scenario_loses(monkeypatch, workbench):
    # issue 28: `serve --scenario shadow` silently lost the veto demo (said only in the terminal)
    from akh_tui.engine.config import SAFE_ENV
    from akh_tui.engine.runs.scenario import load_scenario
    from tests.helpers import drive

    monkeypatch.delenv(SAFE_ENV, raising=False)
    assert not any("served" in w for w in load_scenario("shadow").config.warnings)
    monkeypatch.setenv(SAFE_ENV, "1")
    assert not any("served" in w for w in load_scenario("zoo").config.warnings)  # it asks for nothing dangerous

    async def script(app, pilot):
        shown = [str(n.message) for n in app._notifications]
        assert any("served in a browser tab: process_exec stays off" in m and "shell_exec" in m
                   and "--allow-dangerous" in m for m in shown), shown

    drive(workbench("shadow"), script)
