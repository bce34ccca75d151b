"""The search box's query turned into `history.search` filters. Plain data in, plain data out."""

from __future__ import annotations

from ..tools.specs import TOOL_NAMES, unknown_tool

PROGRESS = ("completed", "advanced", "no_change", "failed")


def parse_search(text: str, tools: tuple[str, ...] | list[str] = TOOL_NAMES) -> dict:
    """The search box's words as `history.search` keywords:

        tool=NAME   veto | veto=NAME   goal=INT   progress=completed|advanced|no_change|failed

    and every other word, joined by spaces, as text to find in the action's output. `tools`
    are the names tool= accepts (a run's: its plugins' too).
    Raises ValueError naming the word it cannot read."""
    filters: dict = {}
    words: list[str] = []

    def put(key: str, value) -> None:
        if key in filters:
            raise ValueError(f"{key} is given twice: {text.strip()!r}")
        filters[key] = value

    for word in text.split():
        key, eq, value = word.partition("=")
        key = key.lower()
        if key == "veto" and not eq:
            put("veto", True)
        elif not eq or key not in ("tool", "veto", "goal", "progress"):
            words.append(word)
        elif not value:
            raise ValueError(f"{key}= needs a value: {word!r}")
        elif key == "tool":
            problem = unknown_tool(value, tools)
            if problem:
                raise ValueError(f"{problem} in {word!r}")
            put("tool", value)
        elif key == "veto":
            put("veto", value)
        elif key == "goal":
            if not value.isdigit():
                raise ValueError(f"goal= needs a goal number, got {value!r}")
            put("goal", int(value))
        else:
            if value not in PROGRESS:
                raise ValueError(f"unknown progress {value!r}: one of {', '.join(PROGRESS)}")
            put("progress", value)
    if words:
        filters["text"] = " ".join(words)
    return filters
