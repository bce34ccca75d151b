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
                  "cli": sorted(m for m in sys.modules if m.startswith("akh_tui.cli.")),
                  "modules": sorted(sys.modules), "out": out.getvalue()}))
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


# ---- issue 29: what each quick command imports (its CPU aim is printed by `akh-tui bench`) ----

from akh_tui.cli import root  # noqa: E402

PSYCHE = str(bundled_data_dir() / "psyche" / "default.toml")


@pytest.mark.parametrize("args, cli_modules, never", [
    # no plugin declared here: importlib.metadata stays out (engine/tools/entrypoints.py); the
    # user config is read without tomlkit or the breakpoint grammar
    (("tools",), ["akh_tui.cli.argtypes", "akh_tui.cli.catalog", "akh_tui.cli.root", "akh_tui.cli.trust"],
     {"importlib.metadata", "tomlkit", "akh_tui.engine.runs.breakpoints", "hashlib"}),
    (("psyche", "check", PSYCHE), ["akh_tui.cli.argtypes", "akh_tui.cli.catalog", "akh_tui.cli.root", "akh_tui.cli.trust"],
     {"importlib.metadata", "akh_tui.engine.tools.registry", "rich.table", "hashlib"}),
], ids=["tools", "psyche-check"])
def test_a_quick_command_imports_only_its_own_command_module(tmp_path, args, cli_modules, never):
    got = run_in_fresh_interpreter(tmp_path, *args)
    assert got["rc"] == 0
    assert got["cli"] == cli_modules, "the other commands' modules are imported only when dispatched (cli/root.py)"
    assert not never & set(got["modules"]), sorted(never & set(got["modules"]))


def test_help_still_lists_every_command(tmp_path):
    got = run_in_fresh_interpreter(tmp_path, "--help")
    listed = got["out"].split("positional arguments:")[1]
    for _module, commands in root.COMMANDS:
        for command in commands:
            assert f"\n    {command} " in listed, command
    assert len(got["cli"]) > 4  # every module loaded for it


def test_the_command_table_is_what_each_module_adds():
    import argparse
    import importlib

    for name, commands in root.COMMANDS:
        p = argparse.ArgumentParser(prog="akh-tui")
        sub = p.add_subparsers(dest="command")
        importlib.import_module(f"akh_tui.cli.{name}").add_parser(sub, argparse.ArgumentParser(add_help=False))
        assert tuple(sub.choices) == commands, name
    full = next(a for a in root.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(full.choices) == tuple(c for _, cs in root.COMMANDS for c in cs)


@pytest.mark.parametrize("argv, wanted", [
    ([], None), (["--resume"], None), (["--seed", "3", "--scenario=tools"], None),
    (["tools"], "catalog"), (["--seed", "3", "tools", "--json"], "catalog"), (["psyche", "check", "x"], "catalog"),
    (["--data-dir", "d", "agent", "run", "--scenario", "tools"], "agent"), (["serve"], "classroom"),
    (["--help"], root.EVERY), (["-h", "tools"], root.EVERY), (["tols"], root.EVERY),
    (["--scen", "zoo", "tools"], root.EVERY),  # an abbreviation: the full parser reads it
])
def test_the_module_a_command_line_needs(argv, wanted):
    assert root.wanted_module(argv) == wanted


@pytest.mark.parametrize("argv", [
    [], ["--resume"], ["tools"], ["tools", "--json"], ["--seed", "3", "tools"], ["psyche", "check", "f.toml"],
    ["--data-dir=/x", "agent", "run", "--max-cycles", "3"], ["sessions", "list", "--json"], ["world", "check", "w"],
    ["--scenario", "agent", "tools"],  # the value read as the command at first: the full parser decides
    ["--scen", "agent", "tools"], ["trust", "list"],
])
def test_parsing_with_one_module_gives_what_the_full_parser_gives(argv):
    assert vars(root.parse(argv)) == vars(root.build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [
    ["tools", "--bogus"], ["--scenario", "agent", "tools", "--bogus"], ["agent", "run", "--nope"], ["tols"],
    ["psyche"], ["--seed", "x", "tools"],
])
def test_an_error_reads_as_with_every_module_loaded(argv, capsys):
    with pytest.raises(SystemExit) as lazy:
        root.parse(argv)
    lazy_err = capsys.readouterr().err
    with pytest.raises(SystemExit) as full:
        root.build_parser().parse_args(argv)
    assert lazy.value.code == full.value.code == 2
    assert lazy_err == capsys.readouterr().err
