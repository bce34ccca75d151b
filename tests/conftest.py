import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cli(tmp_path):
    """Run `akh-tui` in a subprocess with its own data dir; returns CompletedProcess."""

    def run(*args: str, data_dir: Path | None = None, cwd: Path | None = None, check_rc: int | None = 0):
        env = dict(os.environ)
        env["AKH_TUI_DATA"] = str(data_dir or tmp_path / "data")
        env["COLUMNS"] = "200"
        proc = subprocess.run(
            [sys.executable, "-m", "akh_tui.cli", *args],
            cwd=cwd or tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )
        if check_rc is not None:
            assert proc.returncode == check_rc, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return proc

    return run
