"""soar-sml, imported only when a Soar scenario is opened: where it is missing the user is told
how to install it (an InputError: the CLI exits 2), never a traceback."""

from __future__ import annotations

import atexit
from types import ModuleType
from typing import Any

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


_kernel: Any = None
_made = 0


def shared_kernel(file: str | None = None) -> Any:
    """The process's one Soar kernel (made on first use, listening on no port: no other
    process can drive it), shut down when the process exits. Two kernels in one process
    crash it on exit (measured: a segmentation fault), so every Soar agent here is an agent
    of this one kernel, as issue 30's "one kernel runs several agents" has it."""
    global _kernel
    if _kernel is None:
        mod = sml(file)
        k = mod.Kernel.CreateKernelInCurrentThread(True, mod.Kernel.kSuppressListener)
        if k.HadError():
            raise InputError(f"Soar's kernel did not start: {k.GetLastErrorDescription()}", file=file,
                             field="architecture")
        _kernel = k
        atexit.register(_shutdown)
    return _kernel


def agent_name(name: str) -> str:
    """A name no other agent of the kernel has."""
    global _made
    _made += 1
    return f"{name}-{_made}"


def _shutdown() -> None:
    global _kernel
    if _kernel is not None:
        _kernel.Shutdown()
        _kernel = None
