"""`akh-tui tools` and `akh-tui psyche check`: what the engine offers, read without starting it
(neither loads numpy, networkx nor textual: tests/test_startup.py)."""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Any

from rich.console import Console
from rich.text import Text

from ..engine import InputWarning
from .argtypes import Subcommands


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    from .trust import add_flags

    tools = sub.add_parser("tools", help="list the tools: the built-ins and installed plugins, their gates and danger")
    tools.add_argument("--json", action="store_true")
    tools.add_argument("--scenario", help="also the plugin tools this scenario names (its `tools`); loads them, "
                                          "so its own Python plugins need --allow-plugins or --trust like a run")
    add_flags(tools)
    tools.set_defaults(handler=cmd_tools)

    psyche = sub.add_parser("psyche", help="psyche files")
    psub = psyche.add_subparsers(dest="psyche_command", required=True)
    chk = psub.add_parser("check", help="validate a psyche TOML file")
    chk.add_argument("file")
    chk.add_argument("--json", action="store_true")
    chk.set_defaults(handler=cmd_psyche_check)


TOOLS_TABLE_WIDTH = 140  # narrower than this, `tools` lists a block per tool instead of a table


def cmd_tools(args: argparse.Namespace, out: Console, err: Console) -> int:
    from ..engine import tool_rows
    from ..engine import Locations

    rows = tool_rows(Locations.resolve().config_file)
    shell = next(r for r in rows if r["tool"] == "shell_exec")["protection"]
    mechanism, why = shell["mechanism"], shell["detail"]
    if args.scenario:
        from ..engine import scenario_tool_rows

        more, problems = scenario_tool_rows(args.scenario)
        rows += more
        for p in problems:  # a plugin left out: said on stderr, as a run's warnings are
            warnings.warn(p, InputWarning, stacklevel=1)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    cols = ("tool", "archetype", "capabilities", "danger", "input", "default", "does", "from")
    cell = {r["tool"]: {c: ", ".join(r[c]) if isinstance(r[c], list) else str(r[c]) for c in cols} for r in rows}
    if out.width >= TOOLS_TABLE_WIDTH:
        from rich.table import Table  # only here: the narrow listing needs none of it (start-up)

        t = Table(title="Tools (SPEC §5)")
        for col in cols:
            t.add_column(col)
        for r in rows:
            t.add_row(*(Text(cell[r["tool"]][c]) for c in cols))
        out.print(t)
    else:
        # narrower (80 columns, or a pipe): a table squeezed every column to ~7 characters;
        # a block per tool reads whole at any width
        out.print(Text("Tools (SPEC §5)", style="bold"))
        for r in rows:
            c = cell[r["tool"]]
            out.print(Text(f"{c['tool']}  ({c['archetype']}, {c['danger']}, {c['default']})", style="bold"))
            for col in ("does", "input", "capabilities", "from"):
                out.print(Text(f"  {col}: {c[col] or '-'}"))
    out.print(Text(f"shell_exec protection: {mechanism} ({why})"))
    setting, config = shell["setting"], shell["config"]
    if shell["refused"]:
        out.print(Text(f"without bubblewrap, shell_exec refuses the programs that run others or write files "
                       f"(their versioned names too, e.g. python3): {', '.join(shell['refused'])}; to run one "
                       f"anyway, list it in {setting} of {config}"))
    else:
        out.print(Text("shell_exec refuses no program here for running others or writing files: bubblewrap keeps "
                       "them in the workspace"))
    if shell["unconfined"]:
        out.print(Text(f"{setting} in {config} lets these run without bubblewrap: {', '.join(shell['unconfined'])}"))
    if shell["config_error"]:
        out.print(Text(shell["config_error"], style="yellow"))
    from ..engine import decider_rows

    out.print(Text("deciders: " + "; ".join(f"{d['decider']} ({d['from']})" for d in decider_rows())))
    return 0


def cmd_psyche_check(args: argparse.Namespace, out: Console, err: Console) -> int:
    from ..engine import check_psyche

    p = check_psyche(args.file)
    if args.json:
        print(json.dumps({k: v for k, v in p.items() if k != "grammar"}))
        return 0
    out.print(Text(f"{args.file}: ok", style="green"))
    out.print(Text(f"persona {p['persona']} ({p['grammar']}); dominant {p['dominant']}; "
                   f"archetypes " + ", ".join(f"{k} {v:.2f}" for k, v in p["archetypes"].items())))
    out.print(Text("vetoes: " + (", ".join(p["vetoes"]) or "none") + "; biases: " + (", ".join(p["biases"]) or "none")))
    return 0
