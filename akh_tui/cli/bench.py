"""`akh-tui bench`: the speed and size figures (the figures themselves are in akh_tui/bench/)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from .argtypes import Subcommands


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    bench = sub.add_parser("bench", help="print SPEC §12's speed and size figures")
    bench.add_argument("--quick", action="store_true", help="smaller runs (a smoke test of the benchmark itself)")
    bench.add_argument("--json", action="store_true")
    bench.add_argument("--ui", action="store_true",
                       help="(kept for scripts: the workbench's figures are in every bench now)")
    bench.add_argument("--soak", action="store_true",
                       help="also the long soaks (minutes): 200,000 cycles into a store (RSS after 50,000 and "
                            "200,000), `agent explain` at 100,000 cycles, the streamed export and report figures "
                            "on 10,000- and 100,000-cycle branches")
    bench.add_argument("--engine", action="store_true",
                       help="only the engine's own figures: cycles without recording, and a 1,000,000-triple load")
    bench.set_defaults(handler=cmd_bench)


def cmd_bench(args: argparse.Namespace, out: Console, err: Console) -> int:
    from ..bench.main import engine_main, main as bench_main

    # its own console: written to a file, its tables keep a readable width (bench._console)
    if args.engine:
        return engine_main(quick=args.quick, as_json=args.json)
    return bench_main(quick=args.quick, as_json=args.json, soak=args.soak)
