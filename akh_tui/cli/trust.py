"""The user's agreement to run a scenario's own Python code, on the command line: the
`--allow-plugins` / `--trust` flags of the commands that open scenarios, and `akh-tui trust
list|add|remove` for the remembered trusted-folders list (engine/tools/trust.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from .argtypes import Subcommands


def add_flags(p: argparse.ArgumentParser, sub: bool = True) -> None:
    """The two flags; `sub`: a sub-command's, which must not overwrite the main parser's value
    given before it (`akh-tui --trust agent run`)."""
    default = argparse.SUPPRESS if sub else False
    p.add_argument("--allow-plugins", action="store_true", default=default,
                   help="import the scenario's own Python plugins (modules in its folder or another folder outside "
                        "the installed packages) for this run only")
    p.add_argument("--trust", action="store_true", default=default,
                   help="import them and remember their folder as trusted (by a hash of its Python files: a changed "
                        "or added file asks again); see `akh-tui trust list`")


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    tr = sub.add_parser("trust", help="folders whose Python plugins scenarios may import (the trusted-folders list)")
    tr.set_defaults(handler=dispatch)
    tsub = tr.add_subparsers(dest="trust_command", required=True)
    ls = tsub.add_parser("list", help="the trusted folders, and whether each is unchanged since it was trusted")
    ls.add_argument("--json", action="store_true")
    add = tsub.add_parser("add", help="trust a folder as it is now (a scenario's folder, or the .toml file itself)")
    add.add_argument("folder")
    rm = tsub.add_parser("remove", help="forget a trusted folder")
    rm.add_argument("folder")


def _trust_file() -> Path:
    from ..engine import Locations

    return Locations.resolve().trust_file


def apply(args: argparse.Namespace):
    """This process's consent from the flags (none given: the trusted list only)."""
    from ..engine import trust

    return trust.agree(_trust_file(), bool(getattr(args, "allow_plugins", False)), bool(getattr(args, "trust", False)))


def held():
    """The agreement this process holds now, if a caller set one (None: the remembered list)."""
    from ..engine import trust

    return trust.held()


def restore(consent) -> None:
    """Back to the agreement held before this command read its flags."""
    from ..engine import trust

    trust.set_consent(consent)


def checking():
    """`--check` and `check PIN`: the trusted list only, whatever the flags say; a plugin from
    any other folder is named as what the run "would need", never imported."""
    from ..engine import trust

    consent = trust.Consent(trust_file=_trust_file(), checking=True)
    trust.set_consent(consent)
    return consent


def untrusted_lines(scenarios: list[str]) -> list[str]:
    """For each scenario file among `scenarios` (bundled names have no local plugins): the
    folders of Python code it would import that this process may not, in words."""
    from ..engine import trust

    out = []
    for s in scenarios:
        p = Path(s)
        if not p.is_file():
            continue
        for need in trust.scenario_needs(p):
            if not need.trusted:
                out.append(f"{s}: would need plugins from {need.folder} ({', '.join(need.refs)}): not trusted; "
                           f"nothing was imported ({need.why})")
    return out


def say_remembered(consent, err: Console) -> None:
    for folder in consent.remembered:
        err.print(Text(f"trusted {folder} (remembered in {consent.trust_file}; a changed Python file there asks again)",
                       style="yellow"))


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    from ..engine import trust
    from ..engine import InputError

    lst = trust.TrustList(_trust_file())
    if args.trust_command == "list":
        if lst.error is not None:
            raise lst.error
        rows: list[dict[str, Any]] = []
        for e in sorted(lst.entries.values(), key=lambda e: e.folder):
            try:
                why = lst.check(Path(e.folder))
            except trust.NotTrusted as exc:
                why = str(exc)
            rows.append({"folder": e.folder, "files": sorted(e.files), "unchanged": why is None, "why": why})
        if getattr(args, "json", False):
            print(json.dumps({"file": str(lst.path), "folders": rows}))
            return 0
        if not rows:
            out.print(Text(f"no trusted folders ({lst.path})"))
        for r in rows:
            state = Text("trusted", style="green") if r["unchanged"] else Text("changed: asks again", style="yellow")
            out.print(Text.assemble(f"{r['folder']}  ", state, f"  ({len(r['files'])} Python file(s))"))
            if r["why"]:
                out.print(Text(f"  {r['why']}", style="dim"))
        return 0
    folder = Path(args.folder)
    if args.trust_command == "add":
        if folder.is_file():  # a scenario file: its folder
            folder = folder.parent
        if not folder.is_dir():
            raise InputError("not a folder", file=str(folder), field="folder")
        entry = lst.add(folder)
        out.print(Text(f"trusted {entry.folder} ({len(entry.files)} Python file(s): "
                       f"{', '.join(sorted(entry.files)[:8]) or 'none yet'}); a changed or added file asks again"))
        return 0
    if not lst.remove(folder):
        raise InputError(f"not in the trusted-folders list ({lst.path})", file=str(folder), field="folder")
    out.print(Text(f"forgot {folder}: its plugins ask again"))
    return 0
