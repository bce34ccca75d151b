"""The headless OODA engine. Never imports textual (a test checks it).

The names below are loaded on first use (PEP 562): importing one light module of the engine
(errors, toolspecs, psyche) must not pull the agent, numpy and networkx, or every CLI command
would pay their start-up cost."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "Agent": "agent", "AgentConfig": "config", "Controller": "controller", "InputError": "errors",
    "Psyche": "psyche", "Scenario": "scenario", "build_agent": "scenario", "load_scenario": "scenario",
}

__all__ = ["Agent", "AgentConfig", "Controller", "InputError", "Psyche", "Scenario", "build_agent", "load_scenario"]

if TYPE_CHECKING:
    from .agent import Agent
    from .config import AgentConfig
    from .controller import Controller
    from .errors import InputError
    from .psyche import Psyche
    from .scenario import Scenario, build_agent, load_scenario


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
