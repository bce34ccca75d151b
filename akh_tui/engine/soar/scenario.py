"""Soar scenarios: a TOML file with `architecture = "soar"` naming the productions to load.

Keys: name, architecture ("soar"), productions (a `.soar` file, relative to the scenario),
seed (Soar's `srand`), description, max_decisions (where a headless run stops if the agent
never halts; default 1000). The productions are untrusted input (source.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, parse_toml, read_user_file
from ..tomlpos import TomlLocator

KEYS = ("name", "architecture", "productions", "seed", "description", "max_decisions")


@dataclass(frozen=True)
class SoarScenario:
    name: str
    path: Path
    productions: Path
    seed: int = 0
    description: str = ""
    max_decisions: int = 1000


def is_soar(path: Path) -> bool:
    """The file declares `architecture = "soar"` (read without loading it; an unreadable file
    is not one: loading it as a scenario says why)."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return data.get("architecture") == "soar"


def load_soar_scenario(path: Path) -> SoarScenario:
    file = str(path)
    text = read_user_file(path, "scenario file")
    data = parse_toml(text, file)
    where = TomlLocator(text)

    def err(msg: str, fld: str) -> InputError:
        return InputError(msg, file=file, line=where.line(fld), field=fld)

    for key in data:
        if key not in KEYS:
            raise err(f"unknown key '{key}' in a Soar scenario (known: {', '.join(KEYS)})", key)
    for req in ("name", "productions"):
        if req not in data:
            raise InputError(f"missing required key '{req}'", file=file, field=req)
    name, prods = data["name"], data["productions"]
    if not isinstance(name, str) or not name.strip():
        raise err("must be a non-empty string", "name")
    if not isinstance(prods, str) or not prods.strip():
        raise err("must be the path of a .soar file", "productions")
    try:
        prod_path = (path.parent / prods).resolve()
        found = prod_path.is_file()
    except (OSError, ValueError):
        found = False
    if not found:
        raise err(f"file not found: {prods!r}", "productions")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
        raise err(f"must be an integer 0..2147483647, got {seed!r}", "seed")
    most = data.get("max_decisions", 1000)
    if not isinstance(most, int) or isinstance(most, bool) or most < 1:
        raise err(f"must be a positive integer, got {most!r}", "max_decisions")
    desc = data.get("description", "")
    if not isinstance(desc, str):
        raise err("must be a string", "description")
    return SoarScenario(name.strip(), path, prod_path, seed, desc, most)


def find_soar(name_or_path: str) -> SoarScenario | None:
    """The Soar scenario `name_or_path` names (a bundled name or a .toml path), loaded; None
    when it names no Soar scenario (an OODA one, or nothing: the OODA loader says why)."""
    from ..paths import bundled_data_dir

    if not name_or_path.strip():
        return None
    p = Path(name_or_path)
    try:
        if not p.is_file():
            p = bundled_data_dir() / "scenarios" / f"{name_or_path}.toml"
            if not p.is_file():
                return None
    except (OSError, ValueError):
        return None
    return load_soar_scenario(p) if is_soar(p) else None
