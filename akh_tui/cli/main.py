"""`akh-tui` entry point. Headless commands live under `agent`; errors in user input exit 2
with a message naming the file, line and field, and change nothing."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Sequence

from rich.console import Console
from rich.text import Text

from .argtypes import non_negative, positive
from ..engine import InputError, InputWarning
from ..engine import redact, redact_obj

# Start-up: `--help`, `tools` and `psyche check` must not load numpy, networkx or textual
# (tests/test_startup.py). Sub-command modules are imported when dispatched, and the engine
# modules behind them inside the functions that need them.

EXIT_INPUT = 2
EXIT_BROKEN_PIPE = 1  # what rich's Console exits with on a broken pipe: every command ends alike


def _person_flags(p) -> None:
    """A person in the loop, headless: approval before act and user_interact's questions."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--approve", action="store_true",
                   help="ask on the terminal before an action the user config's [approve] when rules match "
                        "(default rule: danger>=dangerous): approve, reject or edit its input")
    g.add_argument("--auto-approve", action="store_true", help="approve every matching action (scripts); recorded")
    g.add_argument("--auto-reject", action="store_true",
                   help="reject every matching action (a veto by the user; scripts); recorded")
    p.add_argument("--ask", action="store_true",
                   help="user_interact asks on the terminal instead of using the scenario's [answers]")


def build_parser() -> argparse.ArgumentParser:
    # their add_parser functions load no engine
    from . import (classroom as cli_classroom, sessions as cli_sessions, sweep as cli_sweep, think as cli_think,
                   trust as cli_trust, world as cli_world)

    p = argparse.ArgumentParser(prog="akh-tui", description="A workbench for a cognitive agent's OODA loop.")
    p.add_argument("--scenario", help="scenario name or path for the workbench (default: zoo)")
    p.add_argument("--seed", type=non_negative, help="override the scenario's seed")
    p.add_argument("--decider", metavar="DECIDER",
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
                     help="stop when it fires: tool=NAME, veto[=NAME], goal, phase=NAME (stop before it), or '<path> <op> <value>' "
                          "(e.g. 'score < 0.3', 'wm.size > 90', 'decide.tool == reason'); repeatable")
    run.add_argument("--decider", metavar="DECIDER",
                     help="who decides: utility (the table; default, or the scenario's decider), scripted (an offline model), "
                          "llm (the model of the user config's [llm] table), or a plugin: an akh_tui.deciders entry point "
                          "name or 'module:attr'")
    _person_flags(run)

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
    _person_flags(res)

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

    exp = asub.add_parser("explain", parents=[common], help="why a goal is not done: each criterion found or missing, "
                                                           "and what would find it")
    exp.add_argument("--goal", required=True, metavar="N", help="the goal's number")
    why = asub.add_parser("why", parents=[common], help="why a cycle's tool was chosen, or why another was not "
                                                       "(from the record)")
    why.add_argument("--cycle", type=positive, required=True)
    why.add_argument("--tool", help="explain why this tool was not chosen, and what change could have made it win")
    syn = asub.add_parser("synthesize", parents=[common], help="a goal's findings in the persona's grammar")
    syn.add_argument("--goal", required=True, metavar="N", help="the goal's number")
    syn.add_argument("--grammar", help="narrative, formal, terse, or a grammar TOML file (default: the persona's "
                                       "grammar_preference)")

    for name, sp in asub.choices.items():  # every agent command opens a scenario (a new run's, or the stored run's)
        cli_trust.add_flags(sp)
    cli_sessions.add_parser(sub, common)

    tools = sub.add_parser("tools", help="list the tools: the built-ins and installed plugins, their gates and danger")
    tools.add_argument("--json", action="store_true")
    tools.add_argument("--scenario", help="also the plugin tools this scenario names (its `tools`); loads them, "
                                          "so its own Python plugins need --allow-plugins or --trust like a run")
    cli_trust.add_flags(tools)

    psyche = sub.add_parser("psyche", help="psyche files")
    psub = psyche.add_subparsers(dest="psyche_command", required=True)
    chk = psub.add_parser("check", help="validate a psyche TOML file")
    chk.add_argument("file")
    chk.add_argument("--json", action="store_true")

    bench = sub.add_parser("bench", help="print SPEC §12's speed and size figures")
    bench.add_argument("--quick", action="store_true", help="smaller runs (a smoke test of the benchmark itself)")
    bench.add_argument("--json", action="store_true")
    cli_think.add_parser(sub)
    cli_classroom.add_parsers(sub, common)
    cli_sweep.add_parser(sub)
    cli_trust.add_parser(sub)
    cli_world.add_parser(sub)
    bench.add_argument("--ui", action="store_true", help="also measure the workbench: cycles/s against headless, pause latency")
    bench.add_argument("--soak", action="store_true",
                       help="also the streamed export and report figures on a 100,000-cycle branch (minutes)")
    bench.add_argument("--engine", action="store_true",
                       help="only the engine's own figures: cycles without recording, and a 1,000,000-triple load")
    return p


def undecodable_argument(argv: Sequence[str]) -> InputError | None:
    """The first argument that is not UTF-8, as the error to show.

    Python hands such bytes over as lone surrogates ("\udcff"), which every later step (the
    store, a file name, printing) would fail on with a traceback; naming the flag here, once,
    covers --goal, --goals, --branch, sessions search/import/compare and any flag added later."""
    for i, arg in enumerate(argv):
        try:
            arg.encode("utf-8")
            continue
        except UnicodeEncodeError as exc:
            raw = arg.encode("utf-8", "surrogateescape")
            bad = raw[len(arg[:exc.start].encode("utf-8", "surrogateescape"))]
        if arg.startswith("--") and "=" in arg:
            name = arg.split("=", 1)[0]
        elif i > 0 and argv[i - 1].startswith("-") and "=" not in argv[i - 1]:
            name = argv[i - 1]
        elif arg.startswith("-"):
            name = "option " + arg.encode("ascii", "backslashreplace").decode()
        else:
            name = f"argument {i + 1}"
        return InputError(f"not UTF-8 text (byte 0x{bad:02x}): arguments must be UTF-8", field=name)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    err = Console(stderr=True, highlight=False)
    bad = undecodable_argument(argv)
    if bad is not None:
        if "--json" in argv:
            print(json.dumps(redact_obj(bad.to_dict())), file=sys.stderr)
        else:
            err.print(Text(redact(f"error: {bad}"), style="bold red"))
        return EXIT_INPUT
    args = build_parser().parse_args(argv)
    out = Console(soft_wrap=True, highlight=False)

    def show(message, category, filename, lineno, file=None, line=None):
        # what reaches stderr passes redact first (a warning may quote a config value or a URL)
        if issubclass(category, InputWarning):
            err.print(Text(redact(f"warning: {message}"), style="yellow"))
        else:
            shown(redact(str(message)), category, filename, lineno, file, line)

    with warnings.catch_warnings():
        # an input warning (e.g. a rule that joins as a cross product) is said once, plainly
        warnings.simplefilter("default", InputWarning)
        shown = warnings.showwarning
        warnings.showwarning = show
        try:
            return dispatch(args, out, err)
        except BrokenPipeError:
            # the reader went away (`sessions export | head`): what was written stays, the run
            # was closed on the way out; stdout goes to /dev/null so the exit flush is quiet
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    from . import trust as cli_trust

    consent = None
    before = cli_trust.held()
    try:
        # the user's agreement to import scenario-local plugins, before anything opens a scenario
        consent = cli_trust.apply(args)
        if args.command is None:
            return start_workbench(args, out)
        if args.command == "agent":
            from . import agent as cli_agent

            return cli_agent.dispatch(args, out, err)
        if args.command == "open":
            return open_trace(args, out)
        if args.command == "sessions":
            from . import sessions as cli_sessions

            return cli_sessions.dispatch(args, out, err)
        if args.command == "tools":
            return cmd_tools(args, out)
        if args.command == "psyche":
            return cmd_psyche_check(args, out)
        if args.command in ("check", "serve"):
            from . import classroom as cli_classroom

            return cli_classroom.dispatch(args, out, err)
        if args.command == "sweep":
            from . import sweep as cli_sweep

            return cli_sweep.dispatch(args, out, err)
        if args.command == "world":
            from . import world as cli_world

            return cli_world.dispatch(args, out, err)
        if args.command == "think":
            from . import think as cli_think

            return cli_think.cmd_think(args, out)
        if args.command == "bench":
            from ..bench.main import engine_main, main as bench_main

            # its own console: written to a file, its tables keep a readable width (bench._console)
            if args.engine:
                return engine_main(quick=args.quick, as_json=args.json)
            return bench_main(quick=args.quick, as_json=args.json, ui=args.ui, soak=args.soak)
        if args.command == "trust":
            return cli_trust.dispatch(args, out, err)
    except InputError as exc:
        if getattr(args, "json", False):
            print(json.dumps(redact_obj(exc.to_dict())), file=sys.stderr)
        else:
            err.print(Text(redact(f"error: {exc}"), style="bold red"))
        return EXIT_INPUT
    except KeyboardInterrupt:
        err.print("interrupted; the session keeps every completed cycle")
        return 130
    finally:
        if consent is not None:
            cli_trust.say_remembered(consent, err)
        cli_trust.restore(before)  # the agreement was this command's: a later `main` starts from what was
    return 0


def start_workbench(args: argparse.Namespace, out: Console) -> int:
    from ..engine import Locations
    from ..tui.app import run

    if args.resume and (args.scenario or args.seed is not None):
        raise InputError("--resume continues the stored run: it takes no --scenario or --seed", field="--resume")
    locations = Locations.resolve(getattr(args, "data_dir", None))
    if not args.resume:
        locations.ensure_data_dir()
    return run(args.scenario or "zoo", args.seed, args.decider, locations=locations, resume=args.resume)


def open_trace(args: argparse.Namespace, out: Console) -> int:
    from ..tui.app import run

    return run(trace_file=args.file)


TOOLS_TABLE_WIDTH = 140  # narrower than this, `tools` lists a block per tool instead of a table


def cmd_tools(args: argparse.Namespace, out: Console) -> int:
    from rich.table import Table

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


def cmd_psyche_check(args: argparse.Namespace, out: Console) -> int:
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


if __name__ == "__main__":
    sys.exit(main())

