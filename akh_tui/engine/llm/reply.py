"""`parse_reply(text, offered)`: the model's answer checked against the reply form
`{situation_assessment, action_rationale, action: {tool, input}}` and this cycle's offers;
anything wrong raises `IntentRejected(reason)`."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from ..tools.specs import TOOL_NAMES
from .text import foreign

INPUT_MAX_CHARS = 2000  # an action input longer than this is rejected


def _known_tool(tool: str) -> bool:
    if tool in TOOL_NAMES:
        return True
    from ..tools.registry import seen_entry

    return seen_entry(tool) is not None


class IntentRejected(Exception):
    """The model's answer is not a valid action for this cycle (recorded as intent_rejected)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class Intent:
    situation_assessment: str
    action_rationale: str
    tool: str
    input: str
    raw: str = field(repr=False, default="")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.S)


def _load_json(text: str) -> Any:
    s = text.strip()
    if not s:
        raise IntentRejected("empty reply")
    try:
        return json.loads(s)
    except RecursionError:  # a hostile reply: nesting deeper than the stack
        raise IntentRejected("reply is not JSON this reader accepts: nested too deeply") from None
    except json.JSONDecodeError as exc:
        first_error = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except ValueError as exc:  # an integer of more than 4,300 digits
        first_error = str(exc)
    m = _FENCE.search(s)
    if m:
        try:
            return json.loads(m.group(1).strip())
        except RecursionError:
            raise IntentRejected("reply is not JSON this reader accepts: nested too deeply") from None
        except json.JSONDecodeError as exc:
            raise IntentRejected(f"reply is not JSON (inside the ``` fence: {exc.msg} at line {exc.lineno} column {exc.colno})") from None
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise IntentRejected(f"reply is not JSON this reader accepts (inside the ``` fence: {exc})") from None
    raise IntentRejected(f"reply is not JSON ({first_error})")


def parse_reply(text: str, offered: set[str] | frozenset[str]) -> Intent:
    """Validate the model's answer; raise IntentRejected(reason) on anything wrong."""
    if not isinstance(text, str):
        raise IntentRejected(f"reply is not text ({type(text).__name__})")
    obj = _load_json(text)
    if not isinstance(obj, dict):
        raise IntentRejected(f"reply is a JSON {type(obj).__name__}, not an object")
    for key in ("situation_assessment", "action_rationale", "action"):
        if key not in obj:
            raise IntentRejected(f"missing key '{key}'")
    for key in ("situation_assessment", "action_rationale"):
        if not isinstance(obj[key], str):
            raise IntentRejected(f"'{key}' must be a string, got {type(obj[key]).__name__}")
    action = obj["action"]
    if not isinstance(action, dict):
        raise IntentRejected(f"'action' must be an object, got {type(action).__name__}")
    for key in ("tool", "input"):
        if key not in action:
            raise IntentRejected(f"missing key 'action.{key}'")
    tool = action["tool"]
    if not isinstance(tool, str):
        raise IntentRejected(f"'action.tool' must be a string, got {type(tool).__name__}")
    if not _known_tool(tool):
        # masked before the cut: a token cut short is no longer a shape redact knows
        raise IntentRejected(f"unknown tool '{foreign(tool, 60)}' (known: {', '.join(TOOL_NAMES)})")
    if tool not in offered:
        shown = ", ".join([t for t in TOOL_NAMES if t in offered] + sorted(t for t in offered if t not in TOOL_NAMES)) or "none"
        raise IntentRejected(f"tool '{tool}' is not offered this cycle (offered: {shown})")
    inp = action["input"]
    if not isinstance(inp, str):
        raise IntentRejected(f"'action.input' must be a string, got {type(inp).__name__}")
    if len(inp) > INPUT_MAX_CHARS:
        raise IntentRejected(f"'action.input' is too long ({len(inp)} > {INPUT_MAX_CHARS} characters)")
    return Intent(obj["situation_assessment"], obj["action_rationale"], tool, inp, text)


# What a structured-output server is told the reply must be: the same form parse_reply checks,
# with the tool an enum of the tools offered this cycle (a constrained sampler cannot name any
# other) and each text bounded, so a small model cannot ramble to max_tokens.
ASSESSMENT_MAX_CHARS = 300


def reply_schema(offered: Sequence[str], inputs: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON Schema of a valid reply this cycle; `offered` in the prompt's order. With no
    tool offered the enum is empty (nothing valid can be said: the table's choice runs).
    `inputs` (tool -> the input offered with it): the input is then that one or "" (the same),
    for a small model that would otherwise fill it with text the goal cannot back."""
    text = {"type": "string", "maxLength": ASSESSMENT_MAX_CHARS}
    if inputs is not None:
        action: dict[str, Any] = {"anyOf": [{
            "type": "object",
            "properties": {"tool": {"const": t}, "input": {"enum": list(dict.fromkeys(["", str(inputs.get(t) or "")]))}},
            "required": ["tool", "input"], "additionalProperties": False} for t in offered]}
        return {"type": "object",
                "properties": {"situation_assessment": text, "action_rationale": text, "action": action},
                "required": ["situation_assessment", "action_rationale", "action"], "additionalProperties": False}
    return {
        "type": "object",
        "properties": {
            "situation_assessment": text,
            "action_rationale": text,
            "action": {
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "enum": list(offered)},
                    "input": {"type": "string", "maxLength": INPUT_MAX_CHARS},
                },
                "required": ["tool", "input"],
                "additionalProperties": False,
            },
        },
        "required": ["situation_assessment", "action_rationale", "action"],
        "additionalProperties": False,
    }
