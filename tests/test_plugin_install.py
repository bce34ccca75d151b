"""The example plugin package installed for real (issue 12): `pip wheel` of
examples/akh-tui-tides, installed with pip into a fresh virtual environment (never the shared
one) that borrows this interpreter's site-packages and this checkout through a .pth file. The
installed entry point is listed by `akh-tui tools`, and its scenario completes headless with
the plugin tool chosen, scored and traced like a built-in."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "akh-tui-tides"


def run(argv, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180, **kw)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugin")
    src = tmp / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info"))
    wheels = tmp / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(wheels), str(src)])
    (wheel,) = wheels.glob("akh_tui_tides-*.whl")
    env_dir = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)])
    py = env_dir / "bin" / "python"
    site = Path(run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    # this checkout's akh_tui first, then the shared environment's dependencies
    deps = dict.fromkeys([str(ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz-borrowed.pth").write_text("".join(f"{d}\n" for d in deps), encoding="utf-8")
    run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(PYTHONNOUSERSITE="1", AKH_TUI_DATA=str(tmp / "data"), AKH_TUI_CONFIG=str(tmp / "config.toml"),
               HOME=str(tmp / "home"), COLUMNS="200")
    return py, env, site, tmp


def test_the_installed_plugin_is_listed_with_where_it_came_from(venv):
    py, env, _site, tmp = venv
    rows = json.loads(run([str(py), "-m", "akh_tui.cli", "tools", "--json"], env=env, cwd=tmp).stdout)
    row = next(r for r in rows if r["tool"] == "tide_table")
    assert row["from"] == "entry point tide_table (akh-tui-tides 0.1.0): akh_tides.tool:make_tool"
    assert [r["from"] for r in rows[:11]] == ["built-in"] * 11


def test_the_installed_plugin_completes_its_scenario(venv):
    py, env, site, tmp = venv
    scenario = site / "akh_tides" / "scenarios" / "harbour.toml"
    trace = tmp / "harbour.jsonl"
    out = json.loads(run([str(py), "-m", "akh_tui.cli", "agent", "run", "--scenario", str(scenario), "--fresh",
                          "--json", "--trace", str(trace), "--break", "tool=tide_table"], env=env, cwd=tmp).stdout)
    assert [g["status"] for g in out["goals"]] == ["completed"]
    cycles = [json.loads(x) for x in trace.read_text().splitlines() if '"type": "cycle"' in x or '"type":"cycle"' in x]
    assert cycles and cycles[0]["decide"]["tool"] == "tide_table"
    row = next(c for c in cycles[0]["decide"]["candidates"] if c["tool"] == "tide_table")
    assert row["offered"] and row["base"] == 0.9
