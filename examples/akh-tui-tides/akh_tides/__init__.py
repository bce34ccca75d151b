"""akh-tui-tides: an example tool plugin for akh-tui (see docs/plugins.md in akh-tui)."""

from pathlib import Path

SCENARIO = Path(__file__).parent / "scenarios" / "harbour.toml"
