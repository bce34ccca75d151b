"""The user's config file (where: engine/paths.py): remapped keys, the chosen theme, the llm endpoint
and breakpoints (`[breakpoints] stop = ["veto", "score < 0.3"]`, checked as the workbench runs),
and which chosen actions wait for approval in the workbench (`[approve] when = ["danger>=dangerous"]`),
and which programs shell_exec may run where bubblewrap is not in force although they run others or
write files (`[shell] unconfined = ["python3"]`, confine.py's RISKY_PROGRAMS).

Read with parse_toml (tomllib behind the size and nesting guards every TOML input has);
written with tomlkit so the user's own comments and layout survive when the workbench records
a theme change."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ..config import served_process
from ..errors import InputError, parse_toml
from ..paths import default_config_file as config_path

# tomlkit, the breakpoint and approval grammars and the line finder are imported where they are
# used: `akh-tui tools` reads this file at every start (tests/test_startup.py)


@dataclass
class UserConfig:
    path: Path
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    llm: dict = field(default_factory=dict)  # the llm decider's endpoint: base_url, model, api_key_env, ...
    breakpoints: list[str] = field(default_factory=list)  # specs of engine/runs/breakpoints.py
    approve: list[str] = field(default_factory=list)  # [approve] when: rules of engine/runs/approval.py
    shell_unconfined: list[str] = field(default_factory=list)  # [shell] unconfined: confine.unconfined_refusal
    error: str | None = None  # a config that cannot be read is reported, and defaults are used

    @classmethod
    def load(cls, path: Path | None = None) -> "UserConfig":
        path = path or config_path()
        cfg = cls(path)
        if not path.exists():
            return cfg
        try:
            # parse_toml: a config nested too deeply is refused with its line (tomllib raised
            # RecursionError, and the workbench did not start at all)
            data = parse_toml(path.read_text(encoding="utf-8"), str(path))
            for key in data:
                if key not in ("theme", "keymap", "llm", "breakpoints", "approve", "shell"):
                    raise InputError(f"unknown key '{key}' (known: theme, keymap, llm, breakpoints, approve, shell)",
                                     file=str(path), field=key)
            theme = data.get("theme")
            if theme is not None and not isinstance(theme, str):
                raise InputError("must be a theme name", file=str(path), field="theme")
            keymap = data.get("keymap", {})
            if not isinstance(keymap, dict) or not all(isinstance(v, str) for v in keymap.values()):
                raise InputError("must be a table of binding-id = \"keys\"", file=str(path), field="keymap")
            llm = data.get("llm", {})
            if not isinstance(llm, dict):
                raise InputError("must be a table: base_url, model, api_key_env, ...", file=str(path), field="llm")
            bp = data.get("breakpoints", {})
            stop = bp.get("stop", []) if isinstance(bp, dict) else None
            if not isinstance(stop, list) or not all(isinstance(x, str) for x in stop) or set(bp) - {"stop"}:
                raise InputError('must be a table with stop = ["veto", "tool=shell_exec", ...]', file=str(path),
                                 field="breakpoints")
            if stop:
                from .breakpoints import parse_breakpoint
            for spec in stop:
                try:
                    parse_breakpoint(spec)
                except InputError as exc:
                    raise InputError(exc.message, file=str(path), field="breakpoints.stop") from None
            ap = data.get("approve", {})
            when = ap.get("when", []) if isinstance(ap, dict) else None
            if not isinstance(when, list) or not all(isinstance(x, str) for x in when) or set(ap) - {"when"}:
                raise InputError('must be a table with when = ["danger>=dangerous", "tool=shell_exec", ...]',
                                 file=str(path), field="approve")
            if when:
                from .approval import parse_rule
            for spec in when:
                try:
                    parse_rule(spec)
                except InputError as exc:
                    raise InputError(exc.message, file=str(path), field="approve.when") from None
            cfg.shell_unconfined = _shell_unconfined(data, path)
            cfg.approve = list(when)
            cfg.theme, cfg.keymap, cfg.llm, cfg.breakpoints = theme, dict(keymap), dict(llm), list(stop)
        except (InputError, OSError, UnicodeDecodeError) as exc:
            cfg.error = f"config ignored: {exc}"
        return cfg

    def check_keymap(self, defaults: dict[str, str]) -> list[str]:
        """Refuse the keymap entries a front end cannot honour, with the reason, and drop them
        (the others still apply): an id no binding has, and a key another binding of the same
        screen already uses (`step = "q"` would take q from quit). `defaults`: binding id ->
        its keys; an id's screen is the part before a dot (none: the main screen)."""
        def scope(bid: str) -> str:
            return bid.split(".", 1)[0] if "." in bid else ""

        refusals: list[str] = []
        for bid in sorted(set(self.keymap) - set(defaults)):
            near = sorted(k for k in defaults if scope(k) == scope(bid))
            refusals.append(f"{self.path}: keymap.{bid}: no binding has this id (known: {', '.join(near)})")
            del self.keymap[bid]
        effective = {bid: self.keymap.get(bid, keys) for bid, keys in defaults.items()}
        for bid in sorted(self.keymap):
            mine = {k.strip() for k in self.keymap[bid].split(",") if k.strip()}
            if not mine:
                refusals.append(f"{self.path}: keymap.{bid}: no key given")
                del self.keymap[bid]
                continue
            taken = sorted((k, other) for other, keys in effective.items()
                           if other != bid and scope(other) == scope(bid)
                           for k in (x.strip() for x in keys.split(",")) if k in mine)
            if taken:
                k, other = taken[0]
                refusals.append(f"{self.path}: keymap.{bid} = {self.keymap[bid]!r}: {k} is {other}'s key "
                                f"(remap {other} too, or choose another key)")
                del self.keymap[bid]
                effective[bid] = defaults[bid]
        return refusals

    def save_theme(self, theme: str) -> None:
        """Record the theme, keeping whatever else the file says."""
        if self.error:
            return  # never overwrite a file we could not read
        self.theme = theme
        if served_process():
            return  # a served tab keeps its choice to itself: the owner's config is not its to write
        import tomlkit

        doc = tomlkit.parse(self.path.read_text(encoding="utf-8")) if self.path.exists() else tomlkit.document()
        doc["theme"] = theme
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".toml.tmp")
        tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
        os.replace(tmp, self.path)


def _shell_unconfined(data: dict, path: Path) -> list[str]:
    """`[shell] unconfined`: bare program names (as the scenario's shell_allow names them)."""
    shell = data.get("shell", {})
    if not isinstance(shell, dict) or set(shell) - {"unconfined"}:
        raise InputError('must be a table with unconfined = ["python3", ...] (the programs shell_exec may run '
                         'without bubblewrap although they run others or write files)', file=str(path),
                         line=_line(path, "shell"), field="shell")
    names = shell.get("unconfined", [])
    if not isinstance(names, list):
        raise InputError('must be a list of program names, e.g. ["python3"]', file=str(path),
                         line=_line(path, "shell.unconfined"), field="shell.unconfined")
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise InputError(f"entry {name!r} is not a program name: give its bare name, e.g. \"python3\"",
                             file=str(path), line=_line(path, f"shell.unconfined[{i}]"), field=f"shell.unconfined[{i}]")
    return list(names)


def _line(path: Path, fld: str) -> int | None:
    # only on the way to an error: the file already parsed, so it reads again
    from ..tomlpos import TomlLocator

    return TomlLocator(path.read_text(encoding="utf-8")).line(fld)
