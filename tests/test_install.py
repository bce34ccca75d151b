"""A normal install works (issue 11, item 5): `pip wheel .` gives a wheel that, installed into a
fresh virtual environment and run from another directory, runs the demo, lists the tools, checks
the bundled psyche and opens the workbench.

Offline and quick (`tests.helpers.venv_with`): the environment borrows this interpreter's
site-packages for the dependencies only, so `akh_tui` can only come from the wheel.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from akh_tui.bench.startup import first_frame
from tests.helpers import build_wheel, run, venv_with

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the venv's bin folder, the environment to run it in, a working folder outside the checkout)."""
    tmp = tmp_path_factory.mktemp("install")
    # build from a copy: a build in the checkout leaves build/ behind, whose stale files a
    # later build would pack
    src = tmp / "src"
    shutil.copytree(ROOT / "akh_tui", src / "akh_tui", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    wheel = build_wheel(src, tmp / "wheels", "akh_tui-*.whl")
    venv = tmp / "venv"
    py, site = venv_with(wheel, venv)

    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "AKH_TUI_BUNDLED")}
    env.update(PYTHONNOUSERSITE="1", AKH_TUI_DATA=str(tmp / "data"), AKH_TUI_CONFIG=str(tmp / "config.toml"),
               HOME=str(tmp / "home"), XDG_DATA_HOME=str(tmp / "home" / "data"), XDG_CONFIG_HOME=str(tmp / "home" / "config"),
               COLUMNS="200", TERM="xterm-256color")
    where = run([str(py), "-c", "import akh_tui; print(akh_tui.__file__)"], env=env, cwd=elsewhere).stdout.strip()
    assert Path(where).is_relative_to(venv), f"akh_tui came from {where}, not from the wheel"
    return venv / "bin", env, elsewhere, site


def test_the_wheel_carries_the_package_data(installed):
    _bin, _env, _cwd, site = installed
    pkg = site / "akh_tui"
    for rel in ("data/scenarios/zoo.toml", "data/scenarios/solar.toml", "data/scenarios/shadow.toml",
                "data/kg/zoo.tsv", "data/rules/biology.toml", "data/psyche/default.toml",
                "themes/akh-dark.toml", "themes/akh-light.toml", "tui/workbench.tcss",
                "data/scenarios/water-jug.toml", "data/soar/water-jug.soar", "data/soar/blocks-world.soar",
                "data/soar/trader.soar", "data/kg/water-jug.tsv"):
        assert (pkg / rel).is_file(), f"{rel} is missing from the installed package"


def test_the_installed_cli_runs_from_another_directory(installed):
    bin_dir, env, cwd, site = installed
    akh = str(bin_dir / "akh-tui")
    demo = json.loads(run([akh, "agent", "run", "--scenario", "zoo", "--max-cycles", "30", "--json"], env=env, cwd=cwd).stdout)
    assert [g["description"] for g in demo["goals"]] == ["Find mammals", "Classify whales", "Find animals similar to dolphin"]
    assert all(g["status"] == "completed" for g in demo["goals"])

    tools = json.loads(run([akh, "tools", "--json"], env=env, cwd=cwd).stdout)
    assert len(tools) == 11 and {"kg_query", "shell_exec"} <= {t["tool"] for t in tools}

    psyche = site / "akh_tui" / "data" / "psyche" / "default.toml"
    check = run([akh, "psyche", "check", str(psyche)], env=env, cwd=cwd).stdout
    assert "ok" in check and "destructive_action" in check
    assert not list(cwd.iterdir()), "the installed commands wrote into the working folder"


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal (POSIX)")
def test_the_installed_workbench_opens(installed):
    bin_dir, env, cwd, _site = installed
    # the status line of the zoo demo, and the panes (their layout comes from workbench.tcss)
    seen = ("zoo", "seed 7", "paused", "Goals", "Score breakdown", "Working memory")
    frame = first_frame([str(bin_dir / "akh-tui")], env=env, cwd=cwd, timeout=60, markers=tuple(s.encode() for s in seen))
    text = frame.output.decode(errors="replace")
    assert frame.seconds is not None, f"not all of {seen} were drawn; the terminal showed:\n" + text[-1500:]


def test_akh_tui_bundled_points_the_installed_cli_at_another_folder(installed, tmp_path):
    bin_dir, env, cwd, site = installed
    other = tmp_path / "bundled"
    shutil.copytree(site / "akh_tui" / "data", other)
    (other / "scenarios" / "zoo.toml").rename(other / "scenarios" / "menagerie.toml")
    env = dict(env, AKH_TUI_BUNDLED=str(other), AKH_TUI_DATA=str(tmp_path / "data"))
    akh = str(bin_dir / "akh-tui")
    out = json.loads(run([akh, "agent", "run", "--scenario", "menagerie", "--max-cycles", "2", "--json"], env=env, cwd=cwd).stdout)
    assert out["cycles_run"] == 2
    gone = subprocess.run([akh, "agent", "run", "--scenario", "zoo", "--max-cycles", "1"], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert gone.returncode == 2 and "unknown scenario 'zoo'" in gone.stderr and "menagerie" in gone.stderr
