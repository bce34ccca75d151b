"""argparse types shared by the sub-commands' parsers."""

from __future__ import annotations

from typing import TypeAlias

import argparse


def non_negative(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be ≥ 0, got {v}")
    return v


def positive(text: str) -> int:
    v = non_negative(text)
    if v == 0:
        raise argparse.ArgumentTypeError("must be ≥ 1")
    return v


# what each command module's add_parser(sub, common) adds its parsers to (argparse names no public type)
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
