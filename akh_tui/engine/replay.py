"""Replay without the engine: a past cycle's record turned into the workbench's view, and the
search box's query turned into `history.search` filters. Plain data in, plain data out."""

from __future__ import annotations

from .memory import KIND_RELEVANCE
from .toolspecs import TOOL_NAMES

PROGRESS = ("completed", "advanced", "no_change", "failed")


def view_from_record(record: dict, seed: int | None = None) -> dict:
    """What `Controller.view()` would have shown for this cycle, from its record alone.

    The record does not hold everything the live view does; what it lacks is filled so the
    panes render and nothing claims more than was recorded: criteria "", missing [] (but the
    focus goal's, which the record keeps), no fail reason, no vetoes or biases named,
    episodes 0, and working memory limited to the entries the cycle observed."""
    focus = record["goal"]["id"]
    plan = record.get("plan")
    children: dict[int, list[int]] = {}
    for g in record["goals"]:
        if g["parent"] is not None:
            children.setdefault(g["parent"], []).append(g["id"])
    goals = [
        dict(g) | {
            "children": sorted(children.get(g["id"], [])),
            "fail_reason": None,
            "attempt": plan["attempt"] if plan is not None and plan["goal"] == g["id"] else 0,
            "criteria": "",
            "missing": list(record["act"].get("missing", [])) if g["id"] == focus else [],
        }
        for g in sorted(record["goals"], key=lambda g: g["id"])
    ]
    size, capacity = record["wm"]["size"], record["wm"]["capacity"]
    return {
        "cycle": record["cycle"],
        "seed": seed,
        "focus": focus,
        "goals": goals,
        "plans": {plan["goal"]: plan} if plan is not None else {},
        "wm": {
            "capacity": capacity,
            "size": size,
            "pressure": size / capacity if capacity else 0.0,
            "entries": _entries(record),
        },
        "episodes": 0,
        "model_memory": None,
        "psyche": dict(record["psyche"]) | {"vetoes": [], "biases": [], "pending": False},
    }


def _entries(record: dict) -> list[dict]:
    """The working-memory entries the cycle observed, oldest first. Their cycle is not
    recorded; every cycle pushes exactly one "Observe:" entry first, so counting those back
    from the newest entry (pushed in the previous cycle) dates each one. Reference counts are
    not recorded: 0."""
    recent = record["observe"]["recent"]
    out = []
    cycle = record["cycle"] - 1
    for e in reversed(recent):
        out.append({"id": e["id"], "cycle": max(cycle, 0), "kind": e["kind"],
                    "relevance": KIND_RELEVANCE.get(e["kind"], 0.5), "refs": 0, "content": e["content"]})
        if e["kind"] == "observation" and e["content"].startswith("Observe:"):
            cycle -= 1
    out.reverse()
    return out


def parse_search(text: str) -> dict:
    """The search box's words as `history.search` keywords:

        tool=NAME   veto | veto=NAME   goal=INT   progress=completed|advanced|no_change|failed

    and every other word, joined by spaces, as text to find in the action's output.
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
            if value not in TOOL_NAMES:
                raise ValueError(f"unknown tool {value!r} in {word!r}: one of {', '.join(TOOL_NAMES)}")
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
