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


def read_user_file(path, what: str) -> str:
    """Read a user's text file, or raise an InputError that says which file and why."""
    from pathlib import Path

    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=str(p)) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=str(p)) from None


def toml_error(exc: Exception, file: str | None) -> InputError:
    """Turn a tomllib/tomlkit parse error into an InputError with the line number."""
    line = getattr(exc, "line", None)
    msg = str(exc)
    if line is None:
        # tomllib puts "(at line N, column M)" in the message
        import re

        m = re.search(r"at line (\d+)", msg)
        if m:
            line = int(m.group(1))
    return InputError(f"invalid TOML: {msg}", file=file, line=line)
