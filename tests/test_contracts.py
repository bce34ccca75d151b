"""The dependency rules written down in pyproject.toml ([tool.importlinter]) hold, and the
package type-checks: both run here so a change that breaks them fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_import_contracts_hold():
    proc = subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout and "BROKEN" not in proc.stdout


def _lint_copy(tmp_path: Path, plant: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """lint-imports over a copy of the package with `plant` (path in the package -> text
    appended to it) added: each contract shown able to fail."""
    import shutil

    copy = tmp_path / "akh_tui"
    shutil.copytree(ROOT / "akh_tui", copy, ignore=shutil.ignore_patterns("__pycache__", "data", "themes"))
    for rel, text in plant.items():
        f = copy / rel
        f.parent.mkdir(exist_ok=True)
        f.write_text((f.read_text() if f.exists() else "") + text)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return subprocess.run([str(BIN / "lint-imports"), "--no-cache"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(tmp_path), "PATH": str(BIN)})


def test_a_front_end_reaching_past_the_face_breaks_the_contract(tmp_path):
    """A front end in any package, new ones too, reaches only the face: a workbench module that
    imports the store directly, and a new front-end package, both break it."""
    proc = _lint_copy(tmp_path, {
        "tui/sneaky.py": "from ..engine.store.session import SessionStore  # past the face\n",
        "web/__init__.py": "from ..engine.runs.run import Run  # a new front end, listed nowhere\n",
    })
    assert proc.returncode != 0, proc.stdout
    assert "akh_tui.tui.sneaky -> akh_tui.engine.store.session" in proc.stdout, proc.stdout
    assert "akh_tui.web -> akh_tui.engine.runs.run" in proc.stdout, proc.stdout


def test_a_type_only_circle_breaks_the_contract(tmp_path):
    """Circles behind `if TYPE_CHECKING` count: the knowledge graph naming the agent that uses it."""
    proc = _lint_copy(tmp_path, {
        "engine/knowledge/kg.py": "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from ..cycle.agent import Agent  # noqa: F401\n",
    })
    assert proc.returncode != 0 and "No cycles are allowed in akh_tui.engine" in proc.stdout, proc.stdout


def test_the_package_type_checks():
    """The whole package, front ends included: their reads of records, views and events are
    checked against engine/records.py."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "akh_tui"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr


def test_no_action_of_the_workbench_shadows_one_of_textuals():
    """A widget's or screen's `action_x` that Textual also defines replaces Textual's for every
    caller: PhaseDiagram's `toggle` took DOMNode's toggle(attribute), the workbench's `back`
    (one replayed cycle back) took App's back (pop the screen)."""
    import importlib
    import inspect
    import pkgutil

    import akh_tui.tui
    from textual.dom import DOMNode

    clashes = set()
    for info in pkgutil.iter_modules(akh_tui.tui.__path__):
        module = importlib.import_module(f"akh_tui.tui.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, DOMNode) or not cls.__module__.startswith("akh_tui."):
                continue
            for name in cls.__dict__:
                if name.startswith("action_") and any(name in base.__dict__ for base in cls.__mro__[1:]
                                                      if base.__module__.startswith("textual")):
                    clashes.add(f"{cls.__name__}.{name}")
    assert not clashes, sorted(clashes)


def test_the_face_loads_nothing_until_asked_and_every_name_it_offers():
    """`import akh_tui.engine` loads none of the engine (start-up stays light); each name of its
    `__all__` then loads from the module that owns it, and the checker's `__init__.pyi` names
    the same ones."""
    code = ("import sys, akh_tui.engine as e\n"
            "print(sorted(m for m in sys.modules if m.startswith('akh_tui.engine.')))\n"
            "missing = [n for n in e.__all__ if getattr(e, n, None) is None]\n"
            "print(missing)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    loaded, missing = proc.stdout.splitlines()
    assert loaded == "[]" and missing == "[]", proc.stdout + proc.stderr
    import akh_tui.engine as face

    stub = (ROOT / "akh_tui" / "engine" / "__init__.pyi").read_text()
    assert sorted(n for n in face.__all__ if f" as {n}\n" not in stub) == []
