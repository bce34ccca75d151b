"""Our themes live as TOML files in akh_tui/themes/ (package data); they are registered when the app starts."""

from __future__ import annotations

from pathlib import Path

from textual.theme import Theme

from ..engine import bundled_themes_dir
from ..engine import InputError, parse_toml, read_user_file

THEME_KEYS = ("name", "dark", "primary", "secondary", "accent", "foreground", "background",
              "surface", "panel", "boost", "success", "warning", "error")


def themes_dir() -> Path:
    return bundled_themes_dir()


def load_theme(path: Path) -> Theme:
    data = parse_toml(read_user_file(path, "theme file"), str(path))
    for key in data:
        if key not in THEME_KEYS:
            raise InputError(f"unknown theme key '{key}' (known: {', '.join(THEME_KEYS)})", file=str(path), field=key)
    if "name" not in data or "primary" not in data:
        raise InputError("a theme needs 'name' and 'primary'", file=str(path))
    return Theme(**data)


def load_themes(folder: Path | None = None) -> list[Theme]:
    folder = folder or themes_dir()
    return [load_theme(p) for p in sorted(folder.glob("*.toml"))]
