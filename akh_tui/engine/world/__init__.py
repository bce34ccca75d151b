"""Worlds (SPEC §13): several agents in one deterministic world. The package's face: front
ends (cli/world.py) reach worlds through these names only."""

from __future__ import annotations

from .file import WorldSpec, list_worlds, load_world
from .ledger import InvariantViolation
from .world import World

__all__ = ["World", "WorldSpec", "InvariantViolation", "load_world", "list_worlds"]
