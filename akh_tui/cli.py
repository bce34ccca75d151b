"""`akh-tui` entry point. Headless commands live under `agent`; errors in user input exit 2
with a message naming the file, line and field, and change nothing."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import cli_sessions, cli_sweep, cli_think
from .engine.errors import InputError

EXIT_INPUT = 2


def data_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    env = os.environ.get("AKH_TUI_DATA")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("akh-tui", appauthor=False))


def non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {v}")
    return v


def positive(text: str) -> int:
    v = non_negative(text)
    if v == 0:
        raise argparse.ArgumentTypeError("must be ≥ 1")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="akh-tui", description="A workbench for a cognitive agent's OODA loop.")
    p.add_argument("--scenario", help="scenario name or path for the workbench (default: zoo)")
    p.add_argument("--seed", type=non_negative, help="override the scenario's seed")
    p.add_argument("--decider", choices=("utility", "scripted", "llm"), default="utility",
                   help="who decides in the workbench (see `agent run --decider`)")
    p.add_argument("--data-dir", help="where the workbench records its runs (default: $AKH_TUI_DATA or the platform's data dir)")
    p.add_argument("--resume", action="store_true",
                   help="open the workbench on the data dir's current run and branch, where it was left (also after a crash)")
    sub = p.add_subparsers(dest="command")
    op = sub.add_parser("open", help="replay a JSONL trace file in the workbench (read-only, no engine)")
    op.add_argument("file")

    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: given before the sub-command (`akh-tui --data-dir X agent run`), the main
    # parser's value must not be overwritten by this one's default
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help="session folder (default: $AKH_TUI_DATA or the platform's data dir)")
    common.add_argument("--json", action="store_true", help="machine-readable output")

    agent = sub.add_parser("agent", help="run the agent headless")
    asub = agent.add_subparsers(dest="agent_command", required=True)

    run = asub.add_parser("run", parents=[common], help="run cycles on a scenario (continues an unfinished session of the same run)")
    run.add_argument("--scenario", default="zoo", help="bundled scenario name or path to a .toml file (default: zoo)")
    run.add_argument("--goals", help='comma-separated goal descriptions replacing the scenario\'s, e.g. "Find mammals,Classify whales"')
    run.add_argument("--max-cycles", type=non_negative, default=100)
    run.add_argument("--seed", type=non_negative, help="override the scenario's seed")
    run.add_argument("--trace", help="write the JSONL trace (SPEC §11) to this file")
    run.add_argument("--fresh", action="store_true", help="start over, ignoring the persisted session")
    run.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                     help="stop when it fires: tool=NAME, veto[=NAME], goal, or '<path> <op> <value>' "
                          "(e.g. 'score < 0.3', 'wm.size > 90', 'decide.tool == reason'); repeatable")
    run.add_argument("--decider", choices=("utility", "scripted", "llm"), default="utility",
                     help="who decides: the utility table (default), a scripted offline model, or the model of the user config's [llm] table")

    cyc = asub.add_parser("cycle", parents=[common], help="run one cycle, adding the goal if it is new")
    cyc.add_argument("--goal", required=True)
    cyc.add_argument("--scenario", default=None, help="scenario for a new session (default: zoo)")
    cyc.add_argument("--trace")

    res = asub.add_parser("resume", parents=[common], help="continue the persisted session")
    res.add_argument("--max-cycles", type=non_negative, default=100)
    res.add_argument("--trace")
    res.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                     help="stop when it fires (see `agent run --help`); repeatable")
    res.add_argument("--branch", help="continue this branch of the current run (it becomes the current one)")

    fork = asub.add_parser("fork", parents=[common], help="rewind the current branch to a cycle and start a new branch there, with edits")
    fork.add_argument("--at", type=non_negative, required=True, metavar="CYCLE", help="the cycle to fork after")
    fork.add_argument("--name", required=True, help="the new branch's name")
    fork.add_argument("--set", dest="archetypes", action="append", default=[], metavar="ARCHETYPE=WEIGHT",
                      help="an archetype weight in [0, 1], e.g. explorer=0.9; repeatable")
    fork.add_argument("--disable", action="append", default=[], metavar="TOOL", help="a tool the branch may not use; repeatable")
    fork.add_argument("--goal", dest="fork_goals", action="append", default=[], metavar="DESCRIPTION", help="a goal to add; repeatable")
    fork.add_argument("--psyche", metavar="FILE", help="a psyche TOML file replacing the branch's psyche")

    plan = asub.add_parser("plan", parents=[common], help="show (and make, if needed) the plan of a goal")
    plan.add_argument("--goal", required=True)
    plan.add_argument("--scenario", default=None)

    asub.add_parser("reflect", parents=[common], help="reflect now: priorities, tool rates, psyche evolution")
    asub.add_parser("consolidate", parents=[common], help="consolidate working memory into episodes now")
    rec = asub.add_parser("recall", parents=[common], help="recall episodes by the symbols of a query")
    rec.add_argument("--query", required=True)
    rec.add_argument("--top-k", type=positive, default=5)

    cli_sessions.add_parser(sub, common)

    tools = sub.add_parser("tools", help="list the eleven tools")
    tools.add_argument("--json", action="store_true")

    psyche = sub.add_parser("psyche", help="psyche files")
    psub = psyche.add_subparsers(dest="psyche_command", required=True)
    chk = psub.add_parser("check", help="validate a psyche TOML file")
    chk.add_argument("file")
    chk.add_argument("--json", action="store_true")

    bench = sub.add_parser("bench", help="print SPEC §12's speed and size figures")
    bench.add_argument("--quick", action="store_true", help="smaller runs (a smoke test of the benchmark itself)")
    bench.add_argument("--json", action="store_true")
    cli_think.add_parser(sub)
    cli_sweep.add_parser(sub)
    bench.add_argument("--ui", action="store_true", help="also measure the workbench: cycles/s against headless, pause latency")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Console(soft_wrap=True, highlight=False)
    err = Console(stderr=True, highlight=False)
    try:
        if args.command is None:
            return start_workbench(args, out)
        if args.command == "agent":
            from . import cli_agent

            return cli_agent.dispatch(args, out, err)
        if args.command == "open":
            return open_trace(args, out)
        if args.command == "sessions":
            return cli_sessions.dispatch(args, out, err)
        if args.command == "tools":
            return cmd_tools(args, out)
        if args.command == "psyche":
            return cmd_psyche_check(args, out)
        if args.command == "sweep":
            return cli_sweep.dispatch(args, out, err)
        if args.command == "think":
            return cli_think.cmd_think(args, out)
        if args.command == "bench":
            from .bench import main as bench_main

            return bench_main(quick=args.quick, as_json=args.json, console=out, ui=args.ui)
    except InputError as exc:
        if getattr(args, "json", False):
            print(json.dumps(exc.to_dict()), file=sys.stderr)
        else:
            err.print(Text(f"error: {exc}", style="bold red"))
        return EXIT_INPUT
    except KeyboardInterrupt:
        err.print("interrupted; the session keeps every completed cycle")
        return 130
    return 0


def start_workbench(args, out: Console) -> int:
    from .tui.app import run

    folder = data_dir(getattr(args, "data_dir", None))
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot use the data dir: {exc.strerror or exc}", file=str(folder), field="--data-dir") from None
    if args.resume and (args.scenario or args.seed is not None):
        raise InputError("--resume continues the stored run: it takes no --scenario or --seed", field="--resume")
    return run(args.scenario or "zoo", args.seed, args.decider, store=folder / "session.db", resume=args.resume)


def open_trace(args, out: Console) -> int:
    from .tui.app import run

    return run(trace_file=args.file)


def cmd_tools(args, out: Console) -> int:
    from .engine.config import DEFAULT_CAPABILITIES
    from .engine.tools import SPECS

    rows = []
    for s in SPECS:
        gated = [c for c in s.capabilities if not DEFAULT_CAPABILITIES[c]]
        rows.append({
            "tool": s.name, "archetype": s.archetype, "capabilities": list(s.capabilities), "danger": s.danger,
            "input": s.input_schema, "default": "off: " + ", ".join(gated) if gated else "on", "does": s.does,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    t = Table(title="Tools (SPEC §5)")
    for col in ("tool", "archetype", "capabilities", "danger", "input", "default", "does"):
        t.add_column(col)
    for r in rows:
        t.add_row(*(Text(", ".join(v) if isinstance(v, list) else str(v)) for v in r.values()))
    out.print(t)
    return 0


def cmd_psyche_check(args, out: Console) -> int:
    from .engine.psyche import Psyche

    p = Psyche.load(args.file)
    if args.json:
        print(json.dumps({"ok": True, "file": args.file, **p.snapshot(),
                          "vetoes": [v.name for v in p.shadow.veto_patterns],
                          "biases": [b.name for b in p.shadow.bias_patterns]}))
        return 0
    out.print(Text(f"{args.file}: ok", style="green"))
    out.print(Text(f"persona {p.persona.name} ({p.persona.grammar_preference}); dominant {p.dominant()}; "
                   f"archetypes " + ", ".join(f"{k} {v:.2f}" for k, v in p.archetypes.items())))
    out.print(Text("vetoes: " + (", ".join(v.name for v in p.shadow.veto_patterns) or "none")
                   + "; biases: " + (", ".join(b.name for b in p.shadow.bias_patterns) or "none")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
