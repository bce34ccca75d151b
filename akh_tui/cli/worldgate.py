"""`world run --approve AGENT[,AGENT]`, `--auto-approve`, `--auto-reject`: the world gate
(engine/world/gate.py) headless.

`--approve` gates the named agents and asks on the terminal before each of their actions:
approve, reject (a veto by the user, with a reason if one is typed after it) or choose another
offered tool by its number. It needs a terminal: with stdin not one, it is an error (exit 2)
that says to use `--auto-approve`/`--auto-reject`, before the world is opened. End of input at
the question stops the world there (nothing of that step is committed; `world run FILE`
continues it). `--auto-approve`/`--auto-reject` answer for scripts, recorded with by="auto":
the agents they name, else the world file's `approve = true` ones, else every agent. With no
flag, the world file's `approve = true` agents are asked on the terminal (or, without one, the
same exit 2).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Callable

from rich.console import Console
from rich.text import Text

if TYPE_CHECKING:  # the engine is loaded by the commands, not by building the parser (`--help`)
    from ..engine import Answer, Proposal

FLAGS = ("--approve", "--auto-approve", "--auto-reject")


def add_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--approve", metavar="AGENT[,AGENT]",
                   help="ask on the terminal before each action of these agents: approve, reject, or choose "
                        "another offered tool (recorded; needs a terminal)")
    g.add_argument("--auto-approve", nargs="?", const="", metavar="AGENT[,AGENT]",
                   help="approve every action of these agents (default: the world file's approve = true ones, "
                        "else every agent); recorded with by=auto, for scripts")
    g.add_argument("--auto-reject", nargs="?", const="", metavar="AGENT[,AGENT]",
                   help="reject every action of these agents (a veto by the user; default as --auto-approve); "
                        "recorded with by=auto, for scripts")


def _ids(text: str, flag: str, known: list[str], name: str) -> list[str]:
    from ..engine import InputError

    ids = [x.strip() for x in text.split(",") if x.strip()]
    if not ids:
        raise InputError(f"names no agent (one or more of: {', '.join(known)}, comma-separated)", field=flag)
    for x in ids:
        if x not in known:
            raise InputError(f"no agent {x!r} in world {name} (it has: {', '.join(known)})", field=flag)
    return list(dict.fromkeys(ids))


def plan(args: argparse.Namespace, spec: Any, err: Console,
         stdin_is_tty: Callable[[], bool] | None = None) -> tuple[list[str] | None, Callable[[Proposal], Answer] | None]:
    """(the agents to gate, None: the world file's; the answerer, None: none needed) for
    `world run`'s flags; InputError (exit 2) for an unknown agent or --approve with no terminal."""
    from ..engine import Answer, InputError

    known = [a.id for a in spec.agents]
    in_file = [a.id for a in spec.agents if a.approve]
    tty = (stdin_is_tty or _stdin_is_tty)()
    for flag, auto in (("--auto-approve", "approve"), ("--auto-reject", "reject")):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None:
            ids = _ids(value, flag, known, spec.name) if value.strip() else (in_file or known)
            return ids, _auto(Answer("reject", by="auto", why=f"rejected by {flag}") if auto == "reject"
                              else Answer("approve", by="auto"))
    asked = _ids(args.approve, "--approve", known, spec.name) if args.approve is not None else None
    if asked is None and not in_file:
        return None, None
    if not tty:
        who = ", ".join(asked or in_file)
        where = "--approve" if asked is not None else f"approve = true in {spec.path.name}"
        raise InputError(f"{who} must be answered on a terminal ({where}), and stdin is not one: "
                         f"use --auto-approve or --auto-reject in scripts", field="--approve")
    return asked, lambda p: ask(p, err)


def _auto(answer: Answer) -> Callable[[Proposal], Answer]:
    def answerer(p: Proposal) -> Answer:
        return answer
    return answerer


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):  # closed
        return False


def proposal_lines(p: Proposal) -> list[str]:
    """The question's words: the proposal, its reason, the offered tools numbered."""
    from ..engine import redact

    call = f"{p.tool}({p.input})" if p.input else p.tool
    out = [f"round {p.round}: {p.agent} proposes {call}", f"  why: {p.why}"]
    for n, c in enumerate(p.candidates, start=1):
        mark = "*" if c["tool"] == p.tool else " "
        out.append(f"  {n}{mark} {c['tool']:<16} {c['utility']:.2f}  {c['input'] or ''}".rstrip())
    return [redact(x) for x in out]


def parse(p: Proposal, text: str) -> Answer | str:
    """A typed answer: `a`, `r [WHY]`, or a number (`c N` too); else what to type instead."""
    from ..engine import Answer

    t = text.strip()
    word, _, rest = t.partition(" ")
    w = word.lower()
    if w in ("a", "approve"):
        return Answer("approve")
    if w in ("r", "reject"):
        return Answer("reject", why=rest.strip())
    if w in ("c", "choose"):
        t = rest.strip()
    if t.isdigit():
        n = int(t)
        if not 1 <= n <= len(p.candidates):
            return f"choose 1 to {len(p.candidates)}" if p.candidates else "no tool is offered to choose"
        tool = p.candidates[n - 1]["tool"]
        return Answer("approve") if tool == p.tool else Answer("choose", tool=tool)
    return "answer a (approve), r [why] (reject) or the number of a tool to choose it"


def ask(p: Proposal, err: Console) -> Answer:
    """The question on the terminal (stderr), until an answer is read; end of input closes the gate."""
    from ..engine import Answer, GateClosed

    lines = proposal_lines(p)
    err.print(Text(lines[0], style="bold yellow"))
    for line in lines[1:]:
        err.print(Text(line))
    while True:
        err.print(Text("[a]pprove, [r]eject (r WHY), or a number to choose that tool? "), end="")
        try:
            got = input()
        except EOFError:
            raise GateClosed(f"no answer for {p.agent} in round {p.round} (end of input)") from None
        ans = parse(p, got)
        if isinstance(ans, Answer):
            return ans
        err.print(Text(ans, style="yellow"))
