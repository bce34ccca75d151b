"""`akh-tui` and its sub-commands: `main` is the entry point; each sub-command module adds its parser and
handler."""

from .root import main

__all__ = ["main"]
