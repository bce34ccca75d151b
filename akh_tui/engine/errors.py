"""User-facing input errors: every one names where the problem is (file, line, field)."""

from __future__ import annotations


class InputError(Exception):
    """Bad input from a user-written file or flag.

    The message always says what was wrong and where; callers catch it, show it, and keep
    whatever state they had (nothing is half-applied).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = str(self.file)
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        elif self.line is not None:
            where = f"line {self.line}: "
        field = f"field '{self.field}': " if self.field else ""
        return f"{where}{field}{self.message}"

    def to_dict(self) -> dict:
        return {"error": self.message, "file": self.file, "line": self.line, "field": self.field}


class InputWarning(UserWarning):
    """Input that loads but will behave badly (say, a rule whose premises form a cross product).

    Raised through ``warnings.warn`` so a library caller decides what to do with it; the CLI
    prints it as ``warning: <file>:<line>: field '...': ...`` on stderr.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.where = InputError(message, file=file, line=line, field=field)
        super().__init__(str(self.where))


def warn_input(message: str, *, file: str | None = None, line: int | None = None, field: str | None = None) -> None:
    import warnings

    warnings.warn(InputWarning(message, file=file, line=line, field=field), stacklevel=3)


def open_user_file(path, what: str):
    """Open a user's file for reading bytes, or raise an InputError that says which file and why."""
    from pathlib import Path

    p = Path(path)
    try:
        return open(p, "rb")
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=str(p)) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a folder, not a file", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=str(p)) from None
    except ValueError as exc:  # e.g. a NUL character in the path
        raise InputError(f"cannot read {what}: {exc}", file=str(p)) from None


def read_user_file(path, what: str) -> str:
    """Read a user's text file, or raise an InputError that says which file and why.

    Lines end at LF or CRLF (CRLF is read as LF); a lone CR is not a line break, so the line
    numbers of every later message are the ones an editor or `grep -n` shows.
    """
    p = str(path)
    with open_user_file(path, what) as fh:
        try:
            raw = fh.read()
        except OSError as exc:
            raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=p) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            file=p, line=raw.count(b"\n", 0, exc.start) + 1,
        ) from None
    return text.replace("\r\n", "\n")


def user_file_lines(path, what: str, max_bytes: int, max_lines: int, used: list[int] | None = None,
                    cap_note: str = ""):
    """The lines of a user's text file one at a time (no "\n"; a CR before it dropped, as
    read_user_file does), so a large file is never held whole; past either cap, an
    InputError naming the file, the line and the cap.

    `used` ([lines, bytes], updated as lines are read) lets several files share the caps;
    `cap_note` then says so in the message."""
    p = str(path)
    used = used if used is not None else [0, 0]
    with open_user_file(path, what) as fh:
        n = 0
        offset = 0
        while True:
            try:
                raw = fh.readline(max_bytes - used[1] + 1)
            except OSError as exc:
                raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=p, line=n + 1) from None
            if not raw:
                return
            n += 1
            if used[0] + 1 > max_lines:
                raise InputError(f"too large: more than {max_lines:,} lines; a {what} may have at most"
                                 f" {max_lines:,}{cap_note}", file=p, line=n)
            if used[1] + len(raw) > max_bytes:
                raise InputError(f"too large: more than {max_bytes:,} bytes; a {what} may have at most"
                                 f" {max_bytes:,}{cap_note}", file=p, line=n)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not UTF-8 text ({exc.reason} at byte {offset + exc.start})", file=p, line=n) from None
            offset += len(raw)
            used[0] += 1
            used[1] += len(raw)
            if line.endswith("\n"):
                line = line[:-2] if line.endswith("\r\n") else line[:-1]
            yield line


# Every TOML input (scenario, rules, psyche, theme, user config) is hand-written: none comes
# near these. Past them tomllib recurses out of stack (RecursionError) or, for a dotted key of
# 100,000 parts, builds quadratic memory; what reads the result (tomlkit, deepcopy) recurses too.
MAX_TOML_CHARS = 4 * 1024 * 1024
MAX_TOML_NESTING = 32  # levels of tables and arrays in what a file says
# Refused before parsing: open brackets and braces inside each other, or parts of one dotted
# key or header. tomllib spends at least two frames a level, so it cannot parse this deep
# anyway (RecursionError, caught below) unless the recursion limit was raised past 4,000; a
# dotted key of 100,000 parts, though, it parses into quadratic memory (killed).
TOML_PARSE_NESTING = 2000

_TOML_TOKEN = None


def toml_nesting(text: str, limit: int = MAX_TOML_NESTING) -> tuple[int, str] | None:
    """Where the text nests deeper than `limit` (line, dotted key), else None: one pass,
    before parsing.

    Counts open brackets and braces, and the dots of the key being read, outside strings and
    comments. It only has to keep tomllib out of trouble; what tomllib then builds is measured
    exactly by `data_depth`."""
    import re

    global _TOML_TOKEN
    if _TOML_TOKEN is None:
        _TOML_TOKEN = re.compile(r'"""|\'\'\'|["\'#\[\]{}=,.\n]')
    depth = dots = 0
    line = 1
    pos = line_start = 0
    header = None  # where a [table] header began, while it is read
    table = key = ""
    n = len(text)

    def where() -> tuple[int, str]:
        name = key if header is not None or not table else f"{table}.{key}" if key else table
        return line, (name if len(name) <= 60 else name[:57] + "...") or "(top level)"

    while True:
        m = _TOML_TOKEN.search(text, pos)
        if m is None:
            return None
        tok, pos = m.group(), m.end()
        if tok == "\n":
            line += 1
            line_start = pos
            dots = 0
            if depth == 0:
                key = ""
        elif tok == "#":
            pos = text.find("\n", pos)
            if pos < 0:
                return None
        elif tok in ('"""', "'''"):
            start = pos
            while True:
                j = text.find(tok, pos)
                if j < 0:
                    return None  # unterminated: tomllib says so
                k = j
                while tok == '"""' and k > start and text[k - 1] == "\\":
                    k -= 1
                pos = j + 3
                if (j - k) % 2 == 0:
                    break
                pos = j + 1  # an escaped quote
            while pos < n and text[pos] == tok[0] and pos - j < 5:
                pos += 1  # up to two quotes may end the string's content
            line += text.count("\n", start, pos)
            line_start = text.rfind("\n", 0, pos) + 1
        elif tok in ('"', "'"):
            while True:
                j = text.find(tok, pos)
                nl = text.find("\n", pos)
                if j < 0 or (0 <= nl < j):
                    pos = nl if nl >= 0 else n  # unterminated on its line: tomllib says so
                    break
                k = j
                while tok == '"' and k > pos and text[k - 1] == "\\":
                    k -= 1
                pos = j + 1
                if (j - k) % 2 == 0:
                    break
        elif tok in "[{":
            if depth == 0 and tok == "[" and header is None and not text[line_start:m.start()].strip():
                header = m.start()
            depth += 1
            dots = 0
            if depth > limit:
                return where()
        elif tok in "]}":
            depth = max(0, depth - 1)
            if depth == 0 and header is not None:
                table = text[header:pos].strip("[] \t")
                header = None
        elif tok == ".":
            dots += 1
            if dots > limit:
                if header is not None:
                    key = text[header:m.start()].strip("[ \t")
                elif depth == 0:
                    key = text[line_start:m.start()].strip()
                return where()
        else:  # = ,
            if tok == "=" and depth == 0:
                key = text[line_start:m.start()].strip()
            dots = 0


def data_depth(value) -> int:
    """How deep lists and dicts nest in parsed data (iteratively: no recursion to overflow)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        elif not isinstance(v, list):
            continue
        d += 1
        deepest = max(deepest, d)
        stack.extend((x, d) for x in v if isinstance(x, (dict, list)))
    return deepest


def parse_toml(text: str, file: str | None) -> dict:
    """tomllib.loads, with every way it can fail turned into an InputError naming the file;
    refuses, before parsing, input too large or nested too deeply to parse safely."""
    import tomllib

    if len(text) > MAX_TOML_CHARS:
        raise InputError(f"too large: {len(text):,} characters; a TOML file may have at most {MAX_TOML_CHARS:,}",
                         file=file)
    deep = toml_nesting(text, TOML_PARSE_NESTING)
    if deep is not None:
        raise InputError(f"invalid TOML: arrays, tables or dotted keys nested too deeply (more than"
                         f" {TOML_PARSE_NESTING} levels)", file=file, line=deep[0])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(exc, file, text) from None
    except RecursionError:
        raise InputError("invalid TOML: arrays or tables nested too deeply", file=file) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"invalid TOML: {exc}", file=file) from None
    if data_depth(data) > MAX_TOML_NESTING:
        # valid TOML, but what reads it (tomlkit, deepcopy) recurses: refused with its place
        at = toml_nesting(text, MAX_TOML_NESTING)
        line, fld = at if at is not None else (None, max(data, key=lambda k: data_depth(data[k])))
        raise InputError(f"tables and arrays nested too deeply (more than {MAX_TOML_NESTING} levels)",
                         file=file, line=line, field=fld)
    return data


def toml_error(exc: Exception, file: str | None, text: str | None = None) -> InputError:
    """Turn a tomllib/tomlkit parse error into an InputError with the line number."""
    line = getattr(exc, "line", None)
    msg = str(exc)
    if line is None:
        # tomllib puts "(at line N, column M)" in the message
        import re

        m = re.search(r"at line (\d+)", msg)
        if m:
            line = int(m.group(1))
        elif text is not None and "end of document" in msg:
            # An unterminated value runs to the last line (lines end at "\n" only).
            line = text.count("\n", 0, len(text.rstrip("\n"))) + 1
    return InputError(f"invalid TOML: {msg}", file=file, line=line)


class StoreWriteError(InputError):
    """The session store could not record something (disk full, the file gone or read-only,
    its write-ahead log deleted). The run that raised it has put its engine back to the last
    recorded state, so engine and store agree: free the space and continue."""


class StoreLost(StoreWriteError):
    """What was just committed is safe (checked from a fresh connection), but the store can
    take no more writes from this process (its write-ahead log was deleted under it): close
    the run and resume it."""


class StoreBusy(InputError):
    """Another process is writing this run (the message names it: pid and command line)."""


class StoreDamaged(InputError):
    """The session store holds damaged data (a checksum does not match, a page is missing);
    the message names the run, branch and cycles. Nothing was written. `run`, `branch` (its
    name) and `cycle` say where, when the damage is in one branch's rows (None otherwise)."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, field: str | None = None,
                 run: int | None = None, branch: str | None = None, cycle: int | None = None) -> None:
        self.run, self.branch, self.cycle = run, branch, cycle
        super().__init__(message, file=file, line=line, field=field)

    def to_dict(self) -> dict:
        return super().to_dict() | {"run": self.run, "branch": self.branch, "cycle": self.cycle}


class BranchDamaged(StoreDamaged):
    """A branch that a writer was about to continue is damaged where it would resume from (or
    `sessions check` marked it damaged): nothing is appended to it; the message says how to go
    on (fork before the damage)."""
