"""akh-tui: a terminal workbench for a cognitive agent's OODA loop."""

__version__ = "0.1.0"
