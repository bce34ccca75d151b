"""`akh-tui` with no sub-command (the workbench on a scenario, or `--resume`) and `akh-tui open
TRACE` (a JSONL trace replayed in the workbench, read-only)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from .. import engine
from ..engine import InputError
from .argtypes import Subcommands


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    op = sub.add_parser("open", help="replay a JSONL trace file in the workbench (read-only, no engine)")
    op.add_argument("file")
    op.set_defaults(handler=open_trace)


def start_workbench(args: argparse.Namespace, out: Console, err: Console) -> int:
    if getattr(args, "world", None):
        if args.resume or args.scenario or args.decider:
            raise InputError("--world opens a world file: it takes no --scenario, --decider or --resume", field="--world")
        from ..engine import Locations
        from ..tui.world.app import run_world

        locations = Locations.resolve(getattr(args, "data_dir", None))
        locations.ensure_data_dir()
        return run_world(args.world, args.seed, locations)
    from ..engine import Locations
    from ..tui.app import run

    if args.resume and (args.scenario or args.seed is not None):
        raise InputError("--resume continues the stored run: it takes no --scenario or --seed", field="--resume")
    soar = engine.find_soar(args.scenario) if args.scenario and not args.resume else None
    locations = Locations.resolve(getattr(args, "data_dir", None))
    if soar is not None:  # a Soar agent: its own panes (tui/soar_app.py), recorded in the store
        from ..tui.soar_app import run_soar

        stored = engine.StoredSoarRun.start(locations, soar, args.seed)
        return run_soar(soar, stored=stored)
    if args.resume and engine.current_architecture(locations) == "soar":  # reopened with its history
        from ..tui.soar_app import run_soar

        stored = engine.StoredSoarRun.resume(locations)
        return run_soar(stored.run.scenario, stored=stored)
    if not args.resume:
        locations.ensure_data_dir()
    return run(args.scenario or "zoo", args.seed, args.decider, locations=locations, resume=args.resume)


def open_trace(args: argparse.Namespace, out: Console, err: Console) -> int:
    from pathlib import Path

    from ..tui.app import run

    soar = engine.replay_soar_trace(Path(args.file))  # a Soar run's trace: run again and checked
    if soar is not None:
        from ..tui.soar_app import run_soar

        return run_soar(soar.scenario, soar.seed, soar, replay_of=Path(args.file).name)

    return run(trace_file=args.file)
