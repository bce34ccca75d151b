"""`akh-tui` entry point. Headless commands live under `agent`; errors in user input exit 2
with a message naming the file, line and field, and change nothing."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import warnings
from typing import Callable, Sequence

from rich.console import Console
from rich.text import Text

from .argtypes import non_negative
from ..engine import InputError, InputWarning
from ..engine import redact, redact_obj

# Start-up: `--help`, `tools` and `psyche check` must not load numpy, networkx or textual
# (tests/test_startup.py). Sub-command modules are imported when dispatched, and the engine
# modules behind them inside the functions that need them.

# what every sub-command's handler is: (its arguments, stdout, stderr) -> exit status
Handler = Callable[[argparse.Namespace, Console, Console], int]

EXIT_INPUT = 2
EXIT_BROKEN_PIPE = 1  # what rich's Console exits with on a broken pipe: every command ends alike


# The sub-commands, in the order `--help` lists them, by the module that adds them (its
# `add_parser(sub, common)`). Only the module of the command being run is imported: the others
# get a stand-in parser of the same name, so usage lines and errors read as with all loaded.
# tests/test_startup.py checks this table against what each module adds.
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("workbench", ("open",)),
    ("agent", ("agent",)),
    ("sessions", ("sessions",)),
    ("catalog", ("tools", "psyche")),
    ("bench", ("bench",)),
    ("think", ("think",)),
    ("classroom", ("serve", "check")),
    ("sweep", ("sweep",)),
    ("trust", ("trust",)),
    ("world", ("world",)),
)
# the main parser's options that take a value (the rest, `--resume`, take none): what
# `wanted_module` steps over to find the sub-command
ROOT_VALUE_OPTIONS = ("--scenario", "--seed", "--decider", "--data-dir", "--world")
ROOT_FLAGS = ("--resume",)
EVERY = "*"  # `wanted_module`'s answer when every module must be loaded (`--help`, a typo)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The `akh-tui` parser. Given `argv`, only what parsing it needs is imported (the one
    command module it names; none for the workbench); without, every command module."""
    p = argparse.ArgumentParser(prog="akh-tui", description="A workbench for a cognitive agent's OODA loop.")
    p.add_argument("--scenario", help="scenario name or path for the workbench (default: zoo)")
    p.add_argument("--seed", type=non_negative, help="override the scenario's seed")
    p.add_argument("--decider", metavar="DECIDER",
                   help="who decides in the workbench (see `agent run --decider`)")
    p.add_argument("--data-dir", help="where the workbench records its runs (default: $AKH_TUI_DATA or the platform's data dir)")
    p.add_argument("--world", metavar="FILE",
                   help="open a world (a bundled name or a .toml path) in the world workbench: roster, swimlanes, shared world")
    p.add_argument("--resume", action="store_true",
                   help="open the workbench on the data dir's current run and branch, where it was left (also after a crash)")
    sub = p.add_subparsers(dest="command")
    common = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: given before the sub-command (`akh-tui --data-dir X agent run`), the main
    # parser's value must not be overwritten by this one's default
    common.add_argument("--data-dir", default=argparse.SUPPRESS,
                        help="session folder (default: $AKH_TUI_DATA or the platform's data dir)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    # One registration pattern: each command module adds its parsers and sets its handler
    # (`set_defaults(handler=...)`); the modules load no engine module (start-up stays light).
    wanted = EVERY if argv is None else wanted_module(argv)
    for name, commands in COMMANDS:
        if wanted in (EVERY, name):
            importlib.import_module(f"{__package__}.{name}").add_parser(sub, common)
        else:
            for command in commands:
                # a stand-in: never run (`parse` reparses with the real one), it takes whatever follows
                sub.add_parser(command, add_help=False).set_defaults(handler=None, stand_in=True)
    return p


def command_modules() -> tuple:
    """The modules that add sub-commands, in the order `--help` lists them (imports them all)."""
    return tuple(importlib.import_module(f"{__package__}.{name}") for name, _ in COMMANDS)


def wanted_module(argv: Sequence[str]) -> str | None:
    """Which command module parsing `argv` needs: the one adding its sub-command, None for the
    workbench (no sub-command), EVERY for `--help`, an unknown command or anything before the
    command this does not read exactly (an abbreviated option): those get the full parser."""
    owner = {command: name for name, commands in COMMANDS for command in commands}
    args = iter(argv)
    for arg in args:
        if arg in ROOT_VALUE_OPTIONS:
            next(args, None)
        elif arg in ROOT_FLAGS or (arg.startswith("--") and arg.split("=", 1)[0] in ROOT_VALUE_OPTIONS and "=" in arg):
            continue
        elif arg.startswith("-"):
            return EVERY
        else:
            return owner.get(arg, EVERY)
    return None


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """`argv` parsed as by the full parser, importing only the command module it needs."""
    p = build_parser(argv)
    args, extra = p.parse_known_args(argv)
    if getattr(args, "stand_in", False):
        # the sub-command was not the one expected (an option's value read as the command):
        # parse again with every module loaded
        return build_parser().parse_args(argv)
    more = getattr(args, "more_words", None)
    if extra and more:
        # words after an option (`world interview w1 --at 3:a "why?"`): argparse takes a
        # positional's words from one run of them only; the command takes the rest as well
        setattr(args, more, [*getattr(args, more), *(x for x in extra if not x.startswith("-"))])
        extra = [x for x in extra if x.startswith("-")]
    if extra:  # what parse_args says
        p.error("unrecognized arguments: %s" % " ".join(extra))
    return args


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
    args = parse(argv)
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
            from .workbench import start_workbench

            return start_workbench(args, out, err)
        handler: Handler = args.handler
        return handler(args, out, err)
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


if __name__ == "__main__":
    sys.exit(main())

