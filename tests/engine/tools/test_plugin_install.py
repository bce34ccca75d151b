"""The example plugin package installed for real (issue 12): `pip wheel` of
examples/akh-tui-tides, installed with pip into a fresh virtual environment (never the shared
one) that borrows this checkout and this interpreter's site-packages (`tests.helpers.venv_with`). The
installed entry point is listed by `akh-tui tools`, and its scenario completes headless with
the plugin tool chosen, scored and traced like a built-in."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import build_wheel, run, venv_with

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "akh-tui-tides"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plugin")
    src = tmp / "src"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info"))
    wheel = build_wheel(src, tmp / "wheels", "akh_tui_tides-*.whl")
    # this checkout's akh_tui first, then the shared environment's dependencies
    py, site = venv_with(wheel, tmp / "venv", first=[str(ROOT)])
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
