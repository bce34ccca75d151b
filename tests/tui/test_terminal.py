"""The workbench in a real terminal: tmux runs it, keys go in, the captured screen comes out."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import pytest

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None and not os.environ.get("CI"), reason="tmux is not installed"
)


class Tmux:
    def __init__(self, cmd: list[str], env: dict[str, str], size=(120, 36)) -> None:
        self.sock = f"akh-test-{uuid.uuid4().hex[:8]}"
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        line = f"env -u COLUMNS -u LINES {envs} TERM=xterm-256color TEXTUAL_ANIMATIONS=none {shlex.join(cmd)}"
        self.run("new-session", "-d", "-s", "t", "-x", str(size[0]), "-y", str(size[1]), line)

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, timeout=20).stdout

    def screen(self, colours: bool = False) -> str:
        return self.run("capture-pane", "-t", "t", "-p", *(["-e"] if colours else []))

    def keys(self, *keys: str, timeout: float = 60) -> None:
        """Send each key once the screen shows the last one's effect (with colours: a focus move
        changes only a border's colour). No fixed delay: a busy machine only makes it wait longer."""
        for k in keys:
            before = self.screen(colours=True)
            self.run("send-keys", "-t", "t", k)
            deadline = time.monotonic() + timeout
            while self.screen(colours=True) == before:
                if time.monotonic() > deadline:
                    raise AssertionError(f"key {k!r} changed nothing on the screen:\n{self.screen()}")
                time.sleep(0.02)

    def settled(self, text: str, timeout: float = 60) -> str:
        """Wait for `text`, then until two captures in a row are the same (a dialog that has
        appeared may still be moving its focus)."""
        self.wait_for(text, timeout)
        deadline = time.monotonic() + timeout
        last = self.screen(colours=True)
        while time.monotonic() < deadline:
            time.sleep(0.1)
            now = self.screen(colours=True)
            if now == last:
                return self.screen()
            last = now
        raise AssertionError(f"the screen never settled after {text!r}:\n{self.screen()}")

    def wait_for(self, text: str, timeout: float = 90) -> str:
        """Wait until `text` is on the screen: the timeout is a ceiling for a machine busy enough
        to start Python slowly, never a delay the test spends."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared (the program is {'running' if self.alive() else 'gone'}); "
                             f"screen:\n{screen}")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.sock, "has-session", "-t", "t"], capture_output=True).returncode == 0

    def kill(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


def test_workbench_in_tmux_steps_shows_a_veto_and_quits(tmp_path):
    env = {"AKH_TUI_CONFIG": str(tmp_path / "config.toml"), "AKH_TUI_DATA": str(tmp_path / "data")}
    t = Tmux([sys.executable, "-m", "akh_tui.cli", "--scenario", "shadow"], env)
    try:
        t.wait_for("cycle 0")
        t.keys("Space", "Space", "Space", "Space")
        screen = t.wait_for("cycle 4")
        assert "VETOED" in screen and "shell_exec" in screen
        assert "Score breakdown" in screen and "Working memory" in screen and "Psyche" in screen
        t.keys("r")
        t.wait_for("running")
        t.keys("r")
        t.wait_for("paused")
        t.keys("q")
        deadline = time.monotonic() + 10
        while t.alive() and "$" not in t.screen() and time.monotonic() < deadline:
            time.sleep(0.1)
        # the app is gone: the pane shows the shell or the session ended
        assert not t.alive() or "Score breakdown" not in t.screen()
    finally:
        t.kill()


def test_workbench_killed_mid_branch_resumes_where_it_was(tmp_path):
    """kill -9 the workbench on a forked branch; `akh-tui --resume` opens that branch at the
    last cycle it recorded, and it goes on."""
    env = {"AKH_TUI_CONFIG": str(tmp_path / "config.toml"), "AKH_TUI_DATA": str(tmp_path / "data")}
    t = Tmux([sys.executable, "-m", "akh_tui.cli", "--scenario", "solar"], env)
    try:
        t.wait_for("cycle 0")
        t.keys(*["Space"] * 6)
        t.wait_for("cycle 6")
        t.keys(",", "f")
        t.settled("Fork at cycle 5")
        t.keys("Tab", "Tab", "Tab", *["BSpace"] * 4, "0.95", "Enter")
        t.wait_for("fork-5")
        t.keys("Space", "Space", "Space")
        t.wait_for("cycle 8")
        pid = int(t.run("display", "-p", "-t", "t", "#{pane_pid}").strip())
        os.kill(pid, 9)
    finally:
        t.kill()
    t = Tmux([sys.executable, "-m", "akh_tui.cli", "--resume"], env)
    try:
        screen = t.wait_for("cycle 8")
        assert "fork-5" in screen and "★ explorer" in screen  # the branch, with its edit
        t.keys("Space")
        t.wait_for("cycle 9")
    finally:
        t.kill()
