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


def read_user_file(path, what: str) -> str:
    """Read a user's text file, or raise an InputError that says which file and why.

    Lines end at LF or CRLF (CRLF is read as LF); a lone CR is not a line break, so the line
    numbers of every later message are the ones an editor or `grep -n` shows.
    """
    from pathlib import Path

    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=str(p)) from None
    except IsADirectoryError:
        raise InputError(f"{what} is a folder, not a file", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=str(p)) from None
    except ValueError as exc:  # e.g. a NUL character in the path
        raise InputError(f"cannot read {what}: {exc}", file=str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text ({exc.reason} at byte {exc.start})",
            file=str(p), line=raw.count(b"\n", 0, exc.start) + 1,
        ) from None
    return text.replace("\r\n", "\n")


def parse_toml(text: str, file: str | None) -> dict:
    """tomllib.loads, with every way it can fail turned into an InputError naming the file."""
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise toml_error(exc, file, text) from None
    except RecursionError:
        raise InputError("invalid TOML: arrays or tables nested too deeply", file=file) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"invalid TOML: {exc}", file=file) from None


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
