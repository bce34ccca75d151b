"""Line numbers of TOML keys, for error messages (tomllib and tomlkit give none for values)."""

from .psyche import _Locator as TomlLocator  # noqa: F401

__all__ = ["TomlLocator"]
