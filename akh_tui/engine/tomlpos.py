"""Line numbers of TOML keys, for error messages.

Neither tomllib nor tomlkit reports where a key sits, so the (already successfully parsed)
text is scanned once to map every dotted field path, e.g. "shadow.veto_patterns[1].triggers[0]",
to the line it starts on.
"""

from __future__ import annotations

import re
import tomllib

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_PARENT = re.compile(r"(\[\d+\]|\.[^.\[\]]+)$")
# Numbers, booleans and dates: nothing in them matters here, only where they end.
_SCALAR = re.compile(r"[^,\]}#\n]*")


class TomlLocator:
    """Maps every dotted field path of a TOML text (e.g. "goals[1].priority") to its line."""

    def __init__(self, text: str) -> None:
        self.lines: dict[str, int] = {}
        self.s = text
        self.i = 0
        self._line = 1
        try:
            self._document()
        except (IndexError, ValueError, tomllib.TOMLDecodeError):
            # Only ever fed text that already parsed; should an odd construct still trip
            # the scanner, the fields found so far are kept and others get no line.
            pass

    def line(self, fld: str) -> int | None:
        """The line of ``fld``, else of its nearest enclosing field that was found."""
        f = fld
        while f:
            if f in self.lines:
                return self.lines[f]
            m = _PARENT.search(f)
            if not m:
                break
            f = f[: m.start()]
        return None

    # -- low-level ---------------------------------------------------------------------

    def _peek(self, n: int = 1) -> str:
        return self.s[self.i : self.i + n]

    def _record(self, path: str) -> None:
        self.lines.setdefault(path, self._line)

    def _advance(self, n: int) -> None:
        self._line += self.s.count("\n", self.i, self.i + n)
        self.i += n

    def _ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def _to_eol(self) -> None:
        j = self.s.find("\n", self.i)
        self.i = len(self.s) if j < 0 else j

    def _ws_nl_comments(self) -> None:
        while self.i < len(self.s):
            c = self.s[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\n":
                self._advance(1)
            elif c == "#":
                self._to_eol()
            else:
                break

    def _string(self) -> str:
        """Consume a string token at the cursor and return its raw text."""
        start = self.i
        s = self.s
        for delim in ('"""', "'''"):
            if s.startswith(delim, self.i):
                j = self.i + 3
                while True:
                    if delim == '"""' and s[j] == "\\":
                        j += 2
                        continue
                    if s.startswith(delim, j):
                        j += 3
                        # Up to two quotes may sit right before the closing delimiter.
                        extra = 0
                        while extra < 2 and j < len(s) and s[j] == delim[0]:
                            j += 1
                            extra += 1
                        break
                    j += 1
                self._advance(j - self.i)
                return s[start:j]
        q = s[self.i]
        j = self.i + 1
        while s[j] != q:
            j += 2 if (q == '"' and s[j] == "\\") else 1
        self.i = j + 1
        return s[start : self.i]

    def _key_parts(self) -> list[str]:
        parts: list[str] = []
        while True:
            self._ws()
            c = self.s[self.i]
            if c in "\"'":
                raw = self._string()
                parts.append(tomllib.loads(f"k = {raw}")["k"])
            else:
                m = _BARE_KEY.match(self.s, self.i)
                if not m:
                    raise ValueError("not a key")
                parts.append(m.group())
                self.i = m.end()
            self._ws()
            if self._peek() == ".":
                self.i += 1
                continue
            return parts

    # -- grammar -----------------------------------------------------------------------

    def _document(self) -> None:
        prefix = ""
        aot_counts: dict[str, int] = {}
        while True:
            self._ws_nl_comments()
            if self.i >= len(self.s):
                return
            if self._peek() == "[":
                is_aot = self._peek(2) == "[["
                self.i += 2 if is_aot else 1
                parts = self._key_parts()
                self.i += 2 if is_aot else 1
                path = ""
                for n, part in enumerate(parts):
                    path = f"{path}.{part}" if path else part
                    last = n == len(parts) - 1
                    if is_aot and last:
                        self._record(path)
                        idx = aot_counts.get(path, 0)
                        aot_counts[path] = idx + 1
                        path = f"{path}[{idx}]"
                    elif path in aot_counts:
                        # A sub-table header inside an array of tables belongs to its
                        # latest element.
                        path = f"{path}[{aot_counts[path] - 1}]"
                    self._record(path)
                prefix = path
            else:
                self._key_value(prefix)
            self._ws()
            if self._peek() == "#":
                self._to_eol()

    def _key_value(self, prefix: str) -> None:
        path = prefix
        for part in self._key_parts():
            path = f"{path}.{part}" if path else part
            self._record(path)
        self._ws()
        self.i += 1  # "="
        self._ws()
        self._value(path)

    def _value(self, path: str) -> None:
        c = self._peek()
        if c in "\"'":
            self._string()
        elif c == "[":
            self.i += 1
            n = 0
            while True:
                self._ws_nl_comments()
                if self._peek() == "]":
                    self.i += 1
                    return
                item = f"{path}[{n}]"
                self._record(item)
                self._value(item)
                n += 1
                self._ws_nl_comments()
                if self._peek() == ",":
                    self.i += 1
        elif c == "{":
            self.i += 1
            while True:
                self._ws()
                if self._peek() == "}":
                    self.i += 1
                    return
                self._key_value(path)
                self._ws()
                if self._peek() == ",":
                    self.i += 1
        else:
            m = _SCALAR.match(self.s, self.i)
            assert m is not None
            self.i = m.end()
