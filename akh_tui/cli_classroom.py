"""For the classroom and the lab: `sessions pin`, `check` (pinned behaviours), `serve` (the
workbench in a browser) and `sessions report`. Registered from cli.py and cli_sessions.py;
engine modules are imported inside the commands, so `akh-tui --help` loads none of them."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.text import Text

EXIT_CHANGED = 1


def add_session_parsers(ssub, common) -> None:
    """`sessions pin` (and `sessions report`), under `akh-tui sessions`."""
    pin = ssub.add_parser("pin", parents=[common],
                          help="record what a run decided at chosen cycles, for `akh-tui check` to compare later")
    pin.add_argument("run", type=int, metavar="RUN")
    pin.add_argument("--cycle", dest="cycles", action="append", type=int, required=True, metavar="C",
                     help="a cycle to pin; repeatable")
    pin.add_argument("--branch", default="main", help="branch name (default: main)")
    pin.add_argument("-o", "--output", required=True, metavar="FILE", help="the pin file to write, e.g. demo.pin.json")


def add_parsers(sub, common) -> None:
    """Top-level `check` (and `serve`)."""
    chk = sub.add_parser("check", help="rerun a pin file's scenario headless: exit 0 if every pinned cycle is the same, 1 if not")
    chk.add_argument("file", help="a pin file from `akh-tui sessions pin`")
    chk.add_argument("--json", action="store_true", help="machine-readable output")


def cmd_pin(store, args, out: Console, err: Console) -> int:
    from .engine.errors import InputError
    from .engine.pin import make_pin

    path = Path(args.output)
    pin = make_pin(store, args.run, args.branch, args.cycles, path)
    try:
        path.write_text(json.dumps(pin, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot write the pin file: {getattr(exc, 'strerror', None) or exc}", file=str(path)) from None
    if args.json:
        print(json.dumps({"file": str(path), "cycles": [c["cycle"] for c in pin["cycles"]]}))
    else:
        cycles = ", ".join(str(c["cycle"]) for c in pin["cycles"])
        out.print(Text(f"pinned cycle(s) {cycles} of run {args.run} branch {args.branch} "
                       f"({pin['scenario_name']}, seed {pin['seed']}) to {path}"))
        out.print(Text(f"check it with: akh-tui check {path}", style="dim"))
    return 0


def cmd_check(args, out: Console, err: Console) -> int:
    from .engine.pin import check_pin, load_pin

    path = Path(args.file)
    pin = load_pin(path)
    result = check_pin(pin, path)
    if args.json:
        print(json.dumps(result))
        return 0 if result["same"] else EXIT_CHANGED
    for r in result["cycles"]:
        if r["same"]:
            out.print(Text(f"cycle {r['cycle']}: same", style="green"))
        else:
            out.print(Text(f"cycle {r['cycle']}: changed", style="bold red"))
            for change in r["changes"]:
                out.print(Text(f"  {change}"))
    parted = result["parted"]
    if parted is not None:
        out.print(Text(f"the run parted at cycle {parted['cycle']}: pinned {parted['pinned']}, now {parted['now']}",
                       style="bold yellow"))
    elif not result["same"]:
        out.print(Text("the run made the same choices up to the last pinned cycle; only the numbers above moved",
                       style="yellow"))
    out.print(Text(f"{path}: " + ("same" if result["same"] else "behaviour changed"),
                   style="bold green" if result["same"] else "bold red"))
    return 0 if result["same"] else EXIT_CHANGED


def dispatch(args, out: Console, err: Console) -> int:
    return {"check": cmd_check}[args.command](args, out, err)
