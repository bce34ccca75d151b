"""`akh-tui think GOAL`: run the ThinkLoop feedback controller (issue 5) on a scenario's graph.

Numeric flags are parsed here, not by argparse, so a bad value raises InputError naming the
flag (the main CLI prints it, as JSON with --json, and exits 2).
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..engine import InputError
from ..engine import (DEFAULT_KI, DEFAULT_KP, DEFAULT_MAX_ITERATIONS, DEFAULT_PROMOTION_THRESHOLD,
                      DEFAULT_STALL_PATIENCE, DEFAULT_THRESHOLD, GraphOracle, ThinkConfig, ThinkLoop, tokens)
from .argtypes import Subcommands

# argparse dest -> (flag, ThinkConfig field, parser)
_OPTIONS = {
    "max_iterations": ("--max-iterations", "max_iterations", int),
    "threshold": ("--threshold", "threshold", float),
    "kp": ("--kp", "kp", float),
    "ki": ("--ki", "ki", float),
    "stall_patience": ("--stall-patience", "stall_patience", int),
    "promotion_threshold": ("--promotion-threshold", "promotion_threshold", float),
}


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add the `think` sub-command to the main CLI's subparsers."""
    p = sub.add_parser("think", help="run the ThinkLoop PI controller: query the scenario's graph until the answer matches")
    p.set_defaults(handler=dispatch)
    p.add_argument("goal", metavar="GOAL", help='the goal, also the first query, e.g. "whale mammal"')
    p.add_argument("--scenario", default="zoo", help="bundled scenario name or path to a .toml file (default: zoo)")
    p.add_argument("--max-iterations", metavar="N", help=f"iteration cap, ≥ 1 (default: {DEFAULT_MAX_ITERATIONS})")
    p.add_argument("--threshold", metavar="T", help=f"converged when the error is below T, in [0, 1] (default: {DEFAULT_THRESHOLD})")
    p.add_argument("--kp", metavar="KP", help=f"proportional gain (default: {DEFAULT_KP})")
    p.add_argument("--ki", metavar="KI", help=f"integral gain (default: {DEFAULT_KI})")
    p.add_argument("--stall-patience", metavar="N", help=f"stop after N strictly falling rewards, ≥ 1 (default: {DEFAULT_STALL_PATIENCE})")
    p.add_argument("--promotion-threshold", metavar="R", help=f"reward promoting a hot entry to cold, in [0, 1] (default: {DEFAULT_PROMOTION_THRESHOLD})")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _parse(value, flag: str, kind: type):
    """A flag's value (a string from argparse, or already a number) as int/float."""
    if isinstance(value, bool):
        raise InputError(f"not a number: {value!r}", field=flag)
    if isinstance(value, (int, float)):
        v = value
    else:
        text = str(value).strip()
        try:
            v = int(text) if kind is int else float(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise InputError(f"not {what}: {value!r}", field=flag) from None
    if kind is int and (isinstance(v, float) and not v.is_integer()):
        raise InputError(f"not an integer: {value!r}", field=flag)
    if kind is float and not math.isfinite(v):
        raise InputError(f"must be a finite number, got {value!r}", field=flag)
    return kind(v)


def config_from_args(args: argparse.Namespace) -> ThinkConfig:
    kwargs = {}
    for dest, (flag, fld, kind) in _OPTIONS.items():
        value = getattr(args, dest, None)
        if value is not None:
            kwargs[fld] = (flag, _parse(value, flag, kind))
    try:
        return ThinkConfig(**{k: v for k, (_f, v) in kwargs.items()})
    except InputError as exc:
        # name the flag the user typed rather than the dataclass field
        named = kwargs[exc.field][0] if exc.field in kwargs else exc.field
        raise InputError(exc.message, field=named) from None


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    return cmd_think(args, out)


def cmd_think(args: argparse.Namespace, out: Console) -> int:
    goal = getattr(args, "goal", None)
    if not isinstance(goal, str) or not tokens(goal):
        raise InputError(f"must contain at least one letter or digit, got {goal!r}", field="GOAL")
    config = config_from_args(args)
    oracle = GraphOracle.from_scenario(getattr(args, "scenario", None) or "zoo")
    result = ThinkLoop(goal, oracle, config).run()
    if getattr(args, "json", False):
        print(json.dumps(result.to_dict()), file=out.file)
        return 0
    t = Table(title=f"ThinkLoop: {goal}")
    for col in ("step", "error", "integral", "gain", "reward"):
        t.add_column(col, justify="right")
    t.add_column("query")
    for s in result.steps:
        t.add_row(
            str(s.step), f"{s.error:.4f}", f"{s.integral:.4f}", f"{s.gain:.4f}", f"{s.reward:.4f}",
            Text(s.query),
        )
    out.print(t)
    style = "green" if result.converged else "yellow"
    out.print(Text(f"stopped: {result.stop_reason} after {len(result.steps)} step(s)", style=style))
    out.print(Text(f"memory: {len(result.hot)} hot, {len(result.cold)} cold "
                   f"(promotion threshold {config.promotion_threshold:g})"))
    return 0
