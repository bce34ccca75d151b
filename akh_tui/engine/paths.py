"""Every path a run uses, resolved once: the data dir, the user config file, the session store,
each run's workspace folder and the saved psyches.

The CLI, the workbench and the engine ask a `Locations` for a path and never build one
themselves, so `--data-dir`, `$AKH_TUI_DATA` and `$AKH_TUI_CONFIG` mean the same thing
everywhere. Importing this module loads nothing heavy (platformdirs only when a default is
needed), so `akh-tui --help` stays fast.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import InputError

DATA_ENV = "AKH_TUI_DATA"
CONFIG_ENV = "AKH_TUI_CONFIG"
APP = "akh-tui"
DEFAULT_WORKSPACE = "workspace"  # AgentConfig.workspace's default: one folder per run, made by the door


def bundled_data_dir() -> Path:
    """The bundled data (scenarios, graphs, rules, the default psyche): package data in
    akh_tui/data/, so an installed wheel finds it wherever it runs. AKH_TUI_BUNDLED names
    another folder of the same shape."""
    env = os.environ.get("AKH_TUI_BUNDLED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "data"


def bundled_themes_dir() -> Path:
    """The workbench's own themes (TOML), package data in akh_tui/themes/."""
    return Path(__file__).resolve().parents[1] / "themes"


def default_data_dir() -> Path:
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir(APP, appauthor=False))


def default_config_file() -> Path:
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_config_dir(APP, appauthor=False)) / "config.toml"


def _safe_name(name: str) -> str:
    """A scenario name as a file name: letters, digits, dot, dash, underscore."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "scenario"


def shown_scenario(scenario: str | None, data_dir: Path) -> str | None:
    """How a run's scenario is named in what leaves the machine (OTLP spans, reports): a bundled
    one as `bundled:<name>`, one under the data dir by its path relative to it, any other by its
    file name. Never the absolute path, which says whose home folder the run came from. A bare
    name (an imported trace's header) is kept as it is."""
    if not scenario or not scenario.endswith(".toml") and "/" not in scenario and os.sep not in scenario:
        return scenario
    p = Path(scenario)
    try:
        p = p.resolve()
        if p.parent == (bundled_data_dir() / "scenarios").resolve():
            return f"bundled:{p.stem}"
        return p.relative_to(data_dir.resolve()).as_posix()
    except (OSError, ValueError, RuntimeError):  # not under the data dir (or unresolvable)
        return p.name


@dataclass(frozen=True)
class Locations:
    """Where one data dir keeps things. Build with `Locations.resolve`."""

    data_dir: Path
    config_file: Path

    @classmethod
    def resolve(cls, data_dir: str | Path | None = None, config_file: str | Path | None = None) -> "Locations":
        """`data_dir` (the --data-dir flag) wins over $AKH_TUI_DATA, which wins over the
        platform's user data dir; likewise $AKH_TUI_CONFIG for the config file."""
        d = Path(data_dir) if data_dir else default_data_dir()
        c = Path(config_file) if config_file else default_config_file()
        return cls(d, c)

    def ensure_data_dir(self) -> Path:
        """The data dir, created; an unusable one is an InputError naming it."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if not self.data_dir.is_dir():
                raise NotADirectoryError(20, "not a folder")
        except (OSError, ValueError) as exc:  # not a folder, cannot be created, NUL in the path
            reason = getattr(exc, "strerror", None) or exc
            raise InputError(f"cannot use the data dir: {reason}", file=str(self.data_dir), field="--data-dir") from None
        return self.data_dir

    @property
    def trust_file(self) -> Path:
        """The trusted-folders list (trust.py): beside the user config file, so it is the
        user's whatever data dir a run records into."""
        return self.config_file.parent / "trusted-folders.json"

    @property
    def session_db(self) -> Path:
        return self.data_dir / "session.db"

    def has_store(self) -> bool:
        try:
            return self.session_db.is_file() and self.session_db.stat().st_size > 0
        except (OSError, ValueError):
            return False

    def workspace(self, run_id: int, configured: str = DEFAULT_WORKSPACE) -> Path:
        """The run's workspace folder: the scenario's `workspace` when it names one (absolute,
        or relative to the data dir), else a folder of its own under the data dir, so two runs
        never share files by accident."""
        if configured and configured != DEFAULT_WORKSPACE:
            p = Path(configured)
            return p if p.is_absolute() else self.data_dir / p
        return self.data_dir / "workspaces" / f"run-{run_id}"

    @property
    def psyche_dir(self) -> Path:
        return self.data_dir / "psyche"

    @property
    def served_dir(self) -> Path:
        """What served tabs (`akh-tui serve`, a browser tab whoever holds the page drives) save
        besides their runs: a folder that runs outside `serve` never read."""
        return self.data_dir / "served"

    def saved_psyche(self, scenario_name: str) -> Path:
        """Where the workbench saves a scenario's edited psyche, and where the next run of that
        scenario looks for it. In a served tab's process it is under `served_dir`: a browser
        tab's save never changes what the owner's next plain run loads."""
        from .config import served_process  # late: this module stays light to import

        folder = self.served_dir / "psyche" if served_process() else self.psyche_dir
        return folder / f"{_safe_name(scenario_name)}.toml"

    def psyche_to_load(self, scenario_name: str) -> Path:
        """The saved psyche a new run of the scenario starts from, if the file exists: the one
        `saved_psyche` names; a served tab that has saved none yet starts from the owner's (read
        only: its saves still go to `saved_psyche`)."""
        mine = self.saved_psyche(scenario_name)
        owners = self.psyche_dir / mine.name
        return owners if mine != owners and not mine.is_file() else mine
