import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path, monkeypatch):
    """No test reads or writes the user's own data dir or config file."""
    monkeypatch.setenv("AKH_TUI_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "config.toml"))


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """Run `akh-tui` in this process (`cli.main(argv)`) with its own data dir, cwd and captured
    output; returns a CompletedProcess. In-process because a fresh interpreter costs ~0.8 s of
    CPU, mostly imports, and 180-odd tests call the CLI: where the process itself matters
    (kills, locks held by another process, start-up, the terminal) use `cli_process`."""

    def run(*args: str, data_dir: Path | None = None, cwd: Path | None = None, check_rc: int | None = 0):
        from akh_tui.cli.root import main

        monkeypatch.setenv("AKH_TUI_DATA", str(data_dir or tmp_path / "data"))
        monkeypatch.setenv("COLUMNS", "200")
        monkeypatch.chdir(cwd or tmp_path)
        capsys.readouterr()  # what the test printed before is not the command's
        environ = dict(os.environ)  # a command may set its process's environment (serve: SERVED_ENV)
        try:
            rc = main(list(args))
        except SystemExit as exc:  # argparse's usage errors (exit 2) and --help (exit 0)
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            os.environ.clear()
            os.environ.update(environ)
        got = capsys.readouterr()
        proc = subprocess.CompletedProcess(["akh-tui", *args], rc, got.out, got.err)
        if check_rc is not None:
            assert proc.returncode == check_rc, f"rc={proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return proc

    return run


@pytest.fixture
def cli_process(tmp_path):
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


# Golden SVGs live in the top-level snapshots/ folder (where reviewers look for them), not in
# syrupy's default tests/__snapshots__/.
import pytest_textual_snapshot as _pts  # noqa: E402


class _TopLevelSVG(_pts.SVGImageExtension):
    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(ROOT / "snapshots")


_pts.SVGImageExtension = _TopLevelSVG


@pytest.fixture
def workbench(tmp_path, monkeypatch):
    """A deterministic workbench: engine commands run on the UI thread, a private config
    file, the dark theme, and a data dir (session store, workspaces, saved psyches) in
    tmp_path."""
    from akh_tui.engine import Locations, UserConfig
    from akh_tui.tui.app import Workbench

    monkeypatch.setenv("AKH_TUI_CONFIG", str(tmp_path / "config.toml"))

    def make(scenario: str = "zoo", config_path: Path | None = None, data_dir: Path | None = None, **kw) -> Workbench:
        # config_path: a fixed path where a picture shows it (help screen); never written there
        config = UserConfig.load(config_path or tmp_path / "config.toml")
        kw.setdefault("locations", Locations(data_dir or tmp_path / "data", config_path or tmp_path / "config.toml"))
        return Workbench(scenario, sync=True, config=config, **kw)

    return make
