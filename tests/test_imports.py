"""The engine is headless: importing it (and running a cycle) must not load textual."""

import subprocess
import sys


def test_engine_does_not_import_textual():
    code = (
        "import sys, akh_tui.engine, akh_tui.engine.runs.scenario as s, akh_tui.cli.agent, akh_tui.bench\n"
        "a = s.build_agent(s.load_scenario('zoo')); a.step()\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
