"""Start-up: the quick commands load neither numpy, networkx nor textual (issue 11, item 6).

Each command runs in a fresh interpreter, through the same `main` the `akh-tui` script
calls; afterwards the driver reports which heavy modules were imported. Timing is left to
`akh-tui bench` (no wall-clock asserts here): what users notice is the import of the engine's
and the workbench's dependencies, which this checks exactly.
"""

import json
import os
import subprocess
import sys

import pytest

from akh_tui.engine.paths import bundled_data_dir

HEAVY = ("numpy", "networkx", "textual")

DRIVER = """
import contextlib, io, json, sys
from akh_tui.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        rc = main(sys.argv[1:])
    except SystemExit as exc:  # --help exits from argparse
        rc = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
print(json.dumps({"rc": rc, "heavy": heavy, "engine": sorted(m for m in sys.modules if m.startswith("akh_tui.engine")),
                  "out": out.getvalue()}))
""" % (HEAVY,)


def run_in_fresh_interpreter(tmp_path, *args: str) -> dict:
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), AKH_TUI_CONFIG=str(tmp_path / "config.toml"),
               COLUMNS="200")
    proc = subprocess.run([sys.executable, "-c", DRIVER, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args, shows", [
    (("--help",), "agent"),
    (("tools",), "shell_exec"),
    (("psyche", "check", str(bundled_data_dir() / "psyche" / "default.toml")), "destructive_action"),
], ids=["help", "tools", "psyche-check"])
def test_quick_commands_load_no_heavy_module(tmp_path, args, shows):
    got = run_in_fresh_interpreter(tmp_path, *args)
    assert got["rc"] == 0
    assert shows in got["out"]  # the command did its job
    assert got["heavy"] == [], f"`akh-tui {' '.join(args)}` imported {got['heavy']}"
    # nor the agent or the session store, which would bring them back on the next change
    assert not {"akh_tui.engine.cycle.agent", "akh_tui.engine.store.session", "akh_tui.engine.tools.builtins"} & set(got["engine"])


def test_the_engine_package_is_light_until_used(tmp_path):
    # importing the package or a light module of it (errors, the tool table, paths, the
    # catalog) must not load the agent
    code = ("import sys, akh_tui.engine, akh_tui.engine.errors, akh_tui.engine.tools.specs, akh_tui.engine.paths\n"
            "import akh_tui.engine.catalog\n"
            "assert 'akh_tui.engine.cycle.agent' not in sys.modules and 'numpy' not in sys.modules\n"
            "import akh_tui.engine.tools.builtins as t, akh_tui.engine.tools.specs as s\n"
            "assert t.SPECS is s.SPECS and len(t.TOOL_NAMES) == 11\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
