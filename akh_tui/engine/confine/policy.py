"""Confinement for the dangerous tools (SPEC §5: file_io, http_fetch, shell_exec): the limits a
session sets (`Confinement`) and the one way a check says no (`Refused`).

These checks are the security boundary: they hold whatever the caller, the agent or a goal
text asks for. Every refusal is a ``Refused`` whose message is one line fit to show a user. Each
tool's checks live beside it: `files.py`, `http.py`, `process.py` (and `sandbox.py`, `reaper.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


FIXED_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_REDIRECTS = 3
CHUNK = 65_536


class Refused(Exception):
    """The request was refused by confinement; str(exc) is a clear one-line reason for the user."""


@dataclass(frozen=True)
class Confinement:
    workspace: Path  # session workspace folder; file access only inside it
    max_file_bytes: int = 1_000_000
    http_allow_hosts: tuple[str, ...] = ()  # exact host names (case-insensitive), optionally "host:port"
    http_timeout: float = 5.0
    http_max_bytes: int = 1_000_000
    shell_allow: tuple[str, ...] = ()  # program names allowed (basename, e.g. "echo", "ls")
    shell_timeout: float = 5.0
    shell_max_output: int = 65_536
    # RISKY_PROGRAMS the user's own config lets run where bubblewrap is not in force
    # ([shell] unconfined); never a scenario's to give, since a scenario is someone else's file
    shell_unconfined: tuple[str, ...] = ()
    served: bool = False  # a served tab (akh-tui serve): shell_unconfined is never honoured there


def secs(t: float) -> str:
    return f"{t:g}s"


def one_line(text: object) -> str:
    return " ".join(str(text).split())
