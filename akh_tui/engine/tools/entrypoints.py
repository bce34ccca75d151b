"""Whether any installed distribution may declare an entry point of our groups, told without
importing `importlib.metadata`.

Importing `importlib.metadata` (it brings the `email` package for distribution metadata) and
scanning every installed distribution with it cost `akh-tui tools` and every run's start about
25 ms of CPU, while most installations declare no akh-tui plugin at all. So the registry asks
here first: a plain look at the folders `importlib.metadata` would search (each `sys.path`
entry's `*.dist-info` and `*.egg-info`, their `entry_points.txt`). Only when some file names
one of the groups, or where this look cannot see all that `importlib.metadata` would (a zip or
egg on the path, another finder of distributions), does the registry use `importlib.metadata`,
which then decides what is listed. The answer here is a superset, never a verdict: a group's
name anywhere in an `entry_points.txt` counts.
"""

from __future__ import annotations

import os
import sys
from typing import Iterable

INFO_SUFFIXES = (".dist-info", ".egg-info")  # what importlib.metadata's path lookup reads


def groups_named(groups: Iterable[str], path: list[str] | None = None) -> set[str]:
    """The groups of `groups` some entry_points.txt on `path` (default sys.path) names, all of
    them where this cannot be told without importlib.metadata."""
    wanted = set(groups)
    if _other_finders():
        return wanted
    named: set[str] = set()
    for entry in sys.path if path is None else path:
        root = entry or "."  # "" is the current folder, as importlib.metadata reads it
        if os.path.basename(root).lower().endswith(".egg"):
            return wanted  # a legacy egg: its EGG-INFO is importlib.metadata's to read
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):
                return wanted  # a zip (or a file this look cannot read): importlib.metadata's
            continue  # a path entry that is not there (python311.zip, a path hook's name)
        for child in children:
            if not child.lower().endswith(INFO_SUFFIXES):
                continue
            try:
                with open(os.path.join(root, child, "entry_points.txt"), "rb") as f:
                    text = f.read()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
                continue  # what importlib.metadata reads as "no entry points" too
            except OSError:
                return wanted  # unreadable here: let importlib.metadata say what it makes of it
            named.update(g for g in wanted if g.encode() in text)
            if named == wanted:
                return named
    return named


def _other_finders() -> bool:
    """A finder of distributions on sys.meta_path besides the path finder (whose folders the
    look above reads): its distributions are only importlib.metadata's to find."""
    from importlib.machinery import PathFinder

    return any(hasattr(f, "find_distributions") and f is not PathFinder and not _reads_sys_path(f)
               for f in sys.meta_path)


def _reads_sys_path(finder: object) -> bool:
    """The importlib_metadata backport's finder, which a process has once OpenTelemetry or Dask
    imported it: it reads the same sys.path folders as the standard path finder, the look above."""
    cls = finder if isinstance(finder, type) else type(finder)
    return cls.__module__ == "importlib_metadata" and cls.__name__ == "MetadataPathFinder"
