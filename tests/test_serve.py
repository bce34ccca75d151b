"""`akh-tui serve`: the workbench in a real browser (Playwright driving the system's Chromium;
Playwright cannot download a browser here), loopback by default, dangerous capabilities off in
served sessions."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
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


def _wait_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"nothing answered at {url} within {timeout} s")


def test_the_workbench_steps_in_a_real_browser(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    port = _free_port()
    env = dict(os.environ, COLUMNS="160", LINES="45")
    # a session of its own (its app processes are its children): stopped as one group below
    server = subprocess.Popen(
        [sys.executable, "-m", "akh_tui.cli", "serve", "--port", str(port), "--data-dir", str(tmp_path / "data"),
         "--scenario", "zoo"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_http(url, server)
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
                # another tab is another workbench (its own process and run): untouched by those keys
                other = browser.new_page(viewport={"width": 1400, "height": 900})
                other.add_init_script(KEEP_TERMINAL)
                other.goto(url)
                other.wait_for_function(f"({SCREEN_TEXT})().includes('cycle')", timeout=60_000)
                assert "cycle 2" not in other.evaluate(SCREEN_TEXT)
                shot = tmp_path / "served-workbench.png"
                page.screenshot(path=str(shot))
                assert shot.stat().st_size > 10_000  # a drawn page, not a blank one
                keep = os.environ.get("AKH_TUI_SHOTS")  # where a reviewer wants to look at it
                if keep:
                    Path(keep).mkdir(parents=True, exist_ok=True)
                    Path(keep, shot.name).write_bytes(shot.read_bytes())
            finally:
                browser.close()
        listed = subprocess.run([sys.executable, "-m", "akh_tui.cli", "sessions", "list", "--json",
                                 "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, timeout=60)
        runs = json.loads(listed.stdout)
        # one run per tab, in the data dir; the tab that never stepped leaves none (issue 28: no 0-cycle runs)
        assert len(runs) == 1 and runs[0]["name"] == "zoo"
        assert runs[0]["branches"][0]["last_cycle"] == 2
    finally:
        try:
            os.killpg(server.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=5)


def test_a_non_loopback_address_needs_allow_remote(cli):
    for host in ("0.0.0.0", "192.168.1.20", "::", "example.org"):
        proc = cli("serve", "--host", host, check_rc=2)
        assert "not a loopback address" in proc.stderr and "--allow-remote" in proc.stderr, proc.stderr
    # with the flag it says what that exposes (a bad scenario then stops it before listening)
    proc = cli("serve", "--host", "0.0.0.0", "--allow-remote", "--scenario", "nowhere", check_rc=2)
    assert "no authentication" in proc.stderr.replace("\n", " ") and "unknown scenario" in proc.stderr
    assert "keep read_fs, write_fs, network, process_exec off" in proc.stderr.replace("\n", " ")
    # a port someone else holds is named, not a traceback
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        proc = cli("serve", "--port", str(held.getsockname()[1]), check_rc=2)
    assert "cannot listen on 127.0.0.1:" in proc.stderr and "Traceback" not in proc.stderr


def test_served_sessions_keep_dangerous_capabilities_off(monkeypatch):
    from akh_tui.cli_classroom import is_loopback
    from akh_tui.engine.config import DANGEROUS_CAPABILITIES, SAFE_ENV, without_dangerous
    from akh_tui.engine.scenario import load_scenario

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
    from akh_tui.engine.scenario import build_agent

    agent = build_agent(served)
    for _ in range(6):
        rec = agent.step()
        assert rec["decide"]["tool"] != "shell_exec"


def test_a_served_tab_says_on_the_page_what_the_scenario_loses(monkeypatch, workbench):
    # issue 28: `serve --scenario shadow` silently lost the veto demo (said only in the terminal)
    from akh_tui.engine.config import SAFE_ENV
    from akh_tui.engine.scenario import load_scenario
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
