"""`akh-tui bench`'s start-up rows (bench/startup.py): CPU of each quick command in a fresh
process against `python -c pass` in the same rounds, with the byte code cached."""

from __future__ import annotations

from rich.console import Console

from akh_tui.bench import rows, startup


def test_a_measured_command_caches_its_byte_code_outside_the_users_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = startup.measured_env(tmp_path / "run", tmp_path / "pyc")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pyc")
    assert env["AKH_TUI_DATA"] == str(tmp_path / "run" / "data")


def test_each_command_is_measured_in_every_round_against_python_pass():
    figs = startup.cpu_figures(2, frame=False)
    assert [f.label for f in figs] == [startup.PASS, "--help", "tools", "psyche check"]
    assert all(len(f.samples) == 2 and all(s > 0 for s in f.samples) for f in figs)
    assert all(f.baseline == startup.PASS for f in figs[1:])
    console = Console(record=True, width=200)
    console.print(rows.figure_table("t", figs, fmt=".3f"))
    line = next(ln for ln in console.export_text().splitlines() if "tools" in ln)
    assert "≤ 0.2 s" in line and " s " in line


def test_the_startup_table_is_registered():
    assert "startup" in [name for name, _ in rows.registered()]
