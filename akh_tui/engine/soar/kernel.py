"""soar-sml, imported only when a Soar scenario is opened: where it is missing the user is told
how to install it (an InputError: the CLI exits 2), never a traceback."""

from __future__ import annotations

from types import ModuleType

from ..errors import InputError

INSTALL = "pip install 'akh-tui[soar]'"


def sml(file: str | None = None) -> ModuleType:
    """The soar_sml module (the bindings and libSoar in one wheel)."""
    try:
        import soar_sml
    except ImportError:
        raise InputError(f"a Soar scenario, and soar-sml is not installed: {INSTALL}",
                         file=file, field="architecture") from None
    return soar_sml
