"""`build_prompt(context, memory)`: the chat messages of one Decide call (system: the tools
and the answer format; user: goals, recent WM, last result, recent failures, structured
memory, this cycle's offers). Everything in it is bounded so a long run never bloats it."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from ..tools.specs import SPECS, TOOL_NAMES
from .memory import MEMORY_MAX_BYTES, StructuredMemory
from .text import one_line

# Prompt bounds: what the user message carries at most.
PROMPT_WM_LINES = 10
PROMPT_LINE_CHARS = 300
PROMPT_RESULT_CHARS = 1500
PROMPT_FAILURES = 5
PROMPT_GOALS = 20


ANSWER_FORMAT = (
    '{"situation_assessment": "<what the state is, briefly>", '
    '"action_rationale": "<one or two sentences: why this tool now>", '
    '"action": {"tool": "<one of the offered tools>", "input": "<string; empty = the offered input>"}}'
)


def _plugin_specs(names: Sequence[str]) -> list:
    """The declarations of the plugin tools among `names` (a plugin is listed like a built-in)."""
    from ..tools.registry import seen_entry

    out = []
    for n in names:
        if n not in TOOL_NAMES:
            e = seen_entry(n)
            if e is not None:
                out.append(e.spec)
    return out


def _system_message(names: Sequence[str] = ()) -> str:
    lines = [
        "You are the Decide phase of a cognitive agent's OODA loop (observe, orient, decide, act).",
        "Each cycle you choose exactly one tool to run for the focus goal. The tools:",
    ]
    for s in (*SPECS, *_plugin_specs(names)):
        lines.append(f"- {s.name} [{s.archetype}, {s.danger}]: {s.does}. Input: {s.input_schema}.")
    lines += [
        "",
        "Only tools listed as offered this cycle may be chosen; the others are shown with why not.",
        "The input is a string; an empty string means the input shown with the offered tool.",
        "Avoid repeating a tool that just found nothing or failed; learn from the recent failures.",
        "Answer with one JSON object and nothing else, in exactly this form:",
        ANSWER_FORMAT,
    ]
    return "\n".join(lines)


def _goal_line(g: Mapping[str, Any]) -> str:
    pri = g.get("priority")
    pri_s = f"{pri:.2f}" if isinstance(pri, (int, float)) and not isinstance(pri, bool) else str(pri)
    return f"- {g.get('id', '?')} [{g.get('status', '?')}, priority {pri_s}] {one_line(g.get('description', ''), PROMPT_LINE_CHARS)}"


def build_prompt(context: Mapping[str, Any], memory: StructuredMemory | None) -> list[dict]:
    """Chat messages for one Decide call. `context` keys (all optional): cycle, goals, focus,
    wm (recent WM lines, oldest first), last_result, failures, tools ({name, offered, why_not,
    input}). Everything is bounded (PROMPT_* constants, memory ≤ MEMORY_MAX_BYTES)."""
    cycle = context.get("cycle")
    focus = context.get("focus") or {}
    goals = list(context.get("goals") or [])
    wm = [str(x) for x in (context.get("wm") or [])][-PROMPT_WM_LINES:]
    failures = [str(x) for x in (context.get("failures") or [])][-PROMPT_FAILURES:]
    last = str(context.get("last_result") or "").strip()
    tools = list(context.get("tools") or [])

    u: list[str] = [f"Cycle {cycle}." if cycle is not None else "Next cycle."]
    if focus:
        u.append(f"Focus goal: {focus.get('id', '?')}: {one_line(focus.get('description', ''), PROMPT_LINE_CHARS)}")
    u.append("")
    u.append("## Goals")
    if goals:
        u.extend(_goal_line(g) for g in goals[:PROMPT_GOALS])
        if len(goals) > PROMPT_GOALS:
            u.append(f"- … {len(goals) - PROMPT_GOALS} more")
    else:
        u.append("(none)")
    u += ["", "## Recent working memory (oldest first)"]
    if wm:
        u.extend(f"- {one_line(x, PROMPT_LINE_CHARS)}" for x in wm)
    else:
        u.append("(empty)")
    u += ["", "## Last result"]
    if last:
        u.append(last if len(last) <= PROMPT_RESULT_CHARS else last[: PROMPT_RESULT_CHARS - 1] + "…")
    else:
        u.append("(none)")
    u += ["", "## Recent failures"]
    if failures:
        u.extend(f"- {one_line(x, PROMPT_LINE_CHARS)}" for x in failures)
    else:
        u.append("(none)")
    u += ["", "## Structured working memory"]
    u.append(memory.render(MEMORY_MAX_BYTES) if memory is not None and not memory.is_empty() else "(empty)")
    u += ["", "## Tools this cycle"]
    offered = [str(t.get("name")) for t in tools if t.get("offered")]
    u.append("offered: " + (", ".join(offered) if offered else "(none)"))
    for t in tools:
        name = str(t.get("name"))
        if t.get("offered"):
            u.append(f"- {name}: offered; input: {json.dumps(str(t.get('input') or ''), ensure_ascii=False)}")
        else:
            u.append(f"- {name}: not offered: {one_line(t.get('why_not') or 'not offered', PROMPT_LINE_CHARS)}")
    u += ["", "Choose the next action. Reply with the JSON object only."]
    names = [str(t.get("name")) for t in tools]
    return [{"role": "system", "content": _system_message(names)}, {"role": "user", "content": "\n".join(u)}]
