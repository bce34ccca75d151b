"""A `.soar` file is untrusted input, like a scenario: it is read here, command by command, and
never handed to Soar's own `source` (which would run whatever it holds). Each command's first
word must be one a production file needs (`sp`, `gp`, `echo`, settings of the decision
procedure, ...) or `source` of another file, which is read the same way. Commands that load
native code (`load library`), write or read files outside the run (`output log`, `save`,
`load percepts`, `smem`/`epmem` databases), change folders or rename commands (`alias`, which
could give `load library` another name) are refused unless the folder is trusted, and so is a
production whose action runs a command line (the RHS function `(cmd …)`)
(engine/tools/trust.py: the remembered list, --allow-plugins, --trust)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, read_user_file
from ..tools import trust
from ..tools.modulefind import Origin

# what a production file of ours (and the classic ones) needs, and nothing that reaches the host
SAFE = frozenset({"sp", "gp", "echo", "srand", "decide", "indifferent-selection", "rl", "chunk", "learn",
                  "watch", "trace", "soar", "multi-attributes", "excise", "production", "print", "p",
                  "preferences", "wm", "stats", "matches", "max-elaborations", "waitsnc", "set-stop-phase",
                  "timers", "source"})
MAX_DEPTH = 16  # `source` nesting: a file that sources itself is refused, not looped on


@dataclass(frozen=True)
class Command:
    """One top-level command of a `.soar` file, with where it starts."""

    text: str
    file: str
    line: int

    @property
    def word(self) -> str:
        return self.text.split(None, 1)[0]


def split_commands(text: str, file: str) -> list[Command]:
    """Top-level commands: a command ends at a newline or `;` outside braces and quotes; `#`
    starts a comment where a command could start; `|...|` inside braces is a Soar string (a
    brace in it does not count). An unclosed brace or quote is an InputError at its line."""
    out: list[Command] = []
    i, n, line = 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
            continue
        if ch in " \t\r;":
            i += 1
            continue
        if ch == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        start, start_line, depth = i, line, 0
        while i < n:
            ch = text[i]
            if ch == "\n":
                if depth == 0:
                    break
                line += 1
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth < 0:
                    raise InputError("'}' closes no '{'", file=file, line=line, field="soar")
            elif ch == ";" and depth == 0:
                break
            elif ch == "\\" and i + 1 < n:
                if text[i + 1] == "\n":
                    line += 1
                i += 1
            elif ch == '"' or (ch == "|" and depth > 0):
                quote, opened = ch, line
                i += 1
                while i < n and text[i] != quote:
                    if text[i] == "\n":
                        line += 1
                    elif text[i] == "\\" and quote == '"':
                        i += 1
                    i += 1
                if i >= n:
                    raise InputError(f"unclosed {quote}", file=file, line=opened, field="soar")
            i += 1
        if depth > 0:
            raise InputError("unclosed '{'", file=file, line=start_line, field="soar")
        out.append(Command(text[start:i].strip(), file, start_line))
    return out


def _inside(p: Path, folder: Path) -> bool:
    try:
        return p.resolve().is_relative_to(folder)
    except (OSError, RuntimeError, ValueError):
        return False


def trusted(folder: Path, file: str) -> str | None:
    """None when this process may run a `.soar` folder's host-reaching commands; else why not."""
    try:
        trust.current().admit(Origin(f"{file} (Soar)", (folder,), ()))
    except trust.NotTrusted as exc:
        return str(exc)
    return None


def read_soar(path: Path, depth: int = 0, seen: tuple[Path, ...] = ()) -> list[Command]:
    """Every command `path` runs, `source`d files read in place, each checked: a refused one is
    an InputError naming its file, line and command, and nothing of the file is loaded."""
    file = str(path)
    real = path.resolve()
    if real in seen or depth > MAX_DEPTH:
        raise InputError(f"`source` loops back to {path.name} (or nests deeper than {MAX_DEPTH})", file=file,
                         field="source")
    text = read_user_file(path, "Soar file")
    out: list[Command] = []
    why_not: str | None | bool = False  # asked once per file, when a command needs it
    for cmd in split_commands(text, file):
        word = cmd.word
        if word == "source":
            parts = cmd.text.split()
            if len(parts) != 2:
                raise InputError("`source` takes one file name", file=file, line=cmd.line, field="source")
            target = path.parent / parts[1].strip('"{}')
            top = seen[0].parent if seen else real.parent
            if not _inside(target, top):
                if why_not is False:
                    why_not = trusted(path.parent, path.name)
                if why_not is not None:
                    raise InputError(f"`source {parts[1]}` refused: outside the folder of {seen[0].name if seen else path.name} "
                                     f"({why_not})", file=file, line=cmd.line, field="source")
            out += read_soar(target, depth + 1, (*seen, real))
            continue
        if word in SAFE and not (word in ("production", "rl", "chunk", "decide") and _writes(cmd.text)) \
                and not (word in ("sp", "gp") and _runs_commands(cmd.text)):
            out.append(cmd)
            continue
        if why_not is False:
            why_not = trusted(path.parent, path.name)
        if why_not is not None:
            raise InputError(f"`{cmd.text.splitlines()[0][:60]}` refused: a Soar file may load native code, run "
                             f"programs or touch files only from a trusted folder ({why_not})", file=file,
                             line=cmd.line, field=word)
        out.append(cmd)
    return out


_STRINGS = re.compile(r'\|[^|]*\||"(?:[^"\\]|\\.)*"')
_RHS_CMD = re.compile(r"\(\s*cmd\b")


def _runs_commands(text: str) -> bool:
    """A production whose action runs a Soar command line when it fires (the RHS function
    `(cmd …)`, measured: `(cmd |output log FILE|)` writes the file): the top-level check of
    every command would mean nothing without this one. Soar strings (|…|) are not looked in."""
    return bool(_RHS_CMD.search(_STRINGS.sub(" ", text)))


def _writes(text: str) -> bool:
    """A sub-command of an otherwise safe command that reaches the file system."""
    words = text.split()
    return any(w in ("--save", "-s", "--load", "--output", "--log", "save", "load") for w in words[1:3]) \
        or "--set" in words and any(w in ("path", "database", "filename") for w in words)
