"""Where a top-level module would be imported from, found without running it: the way the
import system looks (built-in and frozen modules, installed finders, then the path), and whether
that place is an installed package or a folder of someone's files (trust.py asks about those).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import site
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Origin:
    """Where a top-level module would be loaded from: `folders` empty for an installed one
    (stdlib, site-packages, akh_tui itself, an installed import hook); else the path entries
    it would come from, and its file(s)."""

    module: str
    folders: tuple[Path, ...] = ()
    files: tuple[Path, ...] = ()
    found: bool = True

    @property
    def local(self) -> bool:
        return bool(self.folders)


def resolved_path(p: str | Path) -> Path:
    try:
        return Path(p).resolve()
    except (OSError, RuntimeError, ValueError):
        return Path(os.path.abspath(p))


def installed_roots() -> tuple[Path, ...]:
    """The folders whose modules count as installed: the standard library, site-packages (the
    environment's, the interpreter's, the user's) and akh_tui's own package."""
    roots = [sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    with contextlib.suppress(AttributeError):  # virtualenv's old site.py has no getsitepackages
        roots += site.getsitepackages()
    if site.ENABLE_USER_SITE:
        roots.append(site.getusersitepackages())
    roots.append(str(Path(__file__).resolve().parents[1]))  # akh_tui (bundled scenarios included)
    return tuple(dict.fromkeys(resolved_path(r) for r in roots if r))


def _under(p: Path, roots: tuple[Path, ...]) -> bool:
    return any(p == r or p.is_relative_to(r) for r in roots)


def _classify(name: str, spec: importlib.machinery.ModuleSpec | None, by_path: bool) -> Origin:
    if spec is None:
        return Origin(name, found=False)
    if not by_path:  # built-in, frozen, or an import hook an installed package put in place
        return Origin(name)
    if spec.submodule_search_locations:  # a package (or namespace package): its folders
        places = [resolved_path(p) for p in spec.submodule_search_locations]
        entries = [p.parent for p in places]
    elif spec.origin and spec.has_location:
        places = [resolved_path(spec.origin)]
        entries = [places[0].parent]
    else:
        return Origin(name)
    roots = installed_roots()
    local = [(e, p) for e, p in zip(entries, places) if not _under(p, roots)]
    if not local:
        return Origin(name)
    return Origin(name, tuple(dict.fromkeys(e for e, _ in local)), tuple(dict.fromkeys(p for _, p in local)))


def _find(finder: object, top: str, search: list[str]) -> importlib.machinery.ModuleSpec | None:
    """One finder's spec for a top-level name (the path finder over `search`), or None."""
    try:
        if finder is importlib.machinery.PathFinder:
            return importlib.machinery.PathFinder.find_spec(top, search)
        find = getattr(finder, "find_spec", None)
        return find(top, None) if find is not None else None
    except (ImportError, ValueError, OSError):
        return None


def locate(module: str, base: Path | None = None) -> Origin:
    """Where the top-level module of `module` would be imported from, `base` first on the
    path: nothing is imported (a dotted name's parents would be, so only its first part is
    looked up; its submodules come from the same folder)."""
    top = module.partition(".")[0]
    loaded = sys.modules.get(top)
    if loaded is not None:  # imported already: its submodules would come from where it did
        if getattr(loaded, "__spec__", None) is None:  # made in memory: no file to load
            return Origin(top)
        hooked = any(_find(f, top, []) is not None for f in sys.meta_path
                     if f is not importlib.machinery.PathFinder)
        return _classify(top, getattr(loaded, "__spec__", None), by_path=not hooked)
    search = ([str(base)] if base is not None else []) + sys.path
    for finder in sys.meta_path:
        spec = _find(finder, top, search)
        if spec is not None:
            return _classify(top, spec, by_path=finder is importlib.machinery.PathFinder)
    return Origin(top, found=False)
