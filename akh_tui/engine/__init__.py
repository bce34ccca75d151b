"""The headless OODA engine. Never imports textual (a test checks it)."""

from .agent import Agent
from .config import AgentConfig
from .controller import Controller
from .errors import InputError
from .psyche import Psyche
from .scenario import Scenario, build_agent, load_scenario

__all__ = ["Agent", "AgentConfig", "Controller", "InputError", "Psyche", "Scenario", "build_agent", "load_scenario"]
