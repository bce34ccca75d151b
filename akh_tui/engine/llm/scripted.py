"""`ScriptedProvider`: a deterministic, offline stand-in for a model (demos and tests)."""

from __future__ import annotations

import json
import re
from collections import deque
from typing import Any, Callable

from .interview import is_interview, scripted_interview_reply
from .text import estimate_tokens, messages_text


DEFAULT_PREFERENCE: tuple[str, ...] = (
    "kg_query", "infer_rules", "reason", "gap_analysis", "similarity_search", "memory_recall",
    "synthesize_triple", "user_interact", "file_io", "http_fetch", "shell_exec",
)

_OFFERED_LINE = re.compile(r"^offered: (.*)$", re.M)
_TOOL_INPUT_LINE = re.compile(r"^- (\w+): offered; input: (\".*\")$", re.M)


class ScriptedProvider:
    """Deterministic offline provider: returns `replies` in turn, cycling. Tokens = len/4 of
    prompt plus reply. `calls` and `schemas` keep the last KEPT messages lists and reply schemas
    it was given (a long scripted world asks thousands of times: all of them would grow without
    limit)."""

    KEPT = 64

    def __init__(self, replies: list[str] | None = None,
                 responder: Callable[[list[dict]], str] | None = None) -> None:
        if responder is None and not replies:
            raise ValueError("ScriptedProvider needs at least one reply")
        self.replies = list(replies or [])
        self._responder = responder
        self._i = 0
        self.rotation: dict[str, str | None] | None = None  # for_tools(rotate=True)'s last pick (a world saves it)
        self.calls: deque[list[dict]] = deque(maxlen=self.KEPT)
        self.schemas: deque[dict[str, Any] | None] = deque(maxlen=self.KEPT)  # the reply schema of each

    def complete(self, messages: list[dict], schema: dict[str, Any] | None = None) -> tuple[str, int]:
        self.calls.append(messages)
        self.schemas.append(schema)
        if self._responder is not None:
            text = self._responder(messages)
        else:
            text = self.replies[self._i % len(self.replies)]
            self._i += 1
        return text, estimate_tokens(messages_text(messages)) + estimate_tokens(text)

    @staticmethod
    def offered_in(messages: list[dict]) -> tuple[list[str], dict[str, str]]:
        """The offered tools (in prompt order) and their inputs, read from the last user message."""
        user = next((m.get("content", "") for m in reversed(messages) if m.get("role") == "user"), "")
        m = _OFFERED_LINE.search(user)
        names = [] if not m or m.group(1) == "(none)" else [n.strip() for n in m.group(1).split(",") if n.strip()]
        inputs: dict[str, str] = {}
        for tm in _TOOL_INPUT_LINE.finditer(user):
            try:
                inputs[tm.group(1)] = json.loads(tm.group(2))
            except ValueError:
                inputs[tm.group(1)] = ""
        return names, inputs

    @classmethod
    def for_tools(cls, preference: tuple[str, ...] | list[str] = DEFAULT_PREFERENCE, *,
                  rotate: bool = False) -> "ScriptedProvider":
        """A provider that answers with the first offered tool in `preference` order, with the
        offered input. With rotate=True the search starts after the tool picked last time
        (so a demo visits several tools); still fully deterministic."""
        pref = tuple(preference)
        state: dict[str, str | None] = {"last": None}

        def respond(messages: list[dict]) -> str:
            if is_interview(messages):  # asked why, not what next: the rotation is not moved
                return scripted_interview_reply(messages)
            names, inputs = cls.offered_in(messages)
            order = pref
            if rotate and state["last"] in pref:
                i = pref.index(state["last"]) + 1
                order = pref[i:] + pref[:i]
            tool = next((t for t in order if t in names), None)
            if tool is None:  # nothing we know is offered: name the first offered (or first preferred)
                tool = names[0] if names else pref[0]
            state["last"] = tool
            return json.dumps({
                "situation_assessment": f"scripted: {len(names)} tools offered",
                "action_rationale": f"{tool} is the first offered tool in the scripted preference order",
                "action": {"tool": tool, "input": inputs.get(tool, "")},
            })

        provider = cls(responder=respond)
        provider.rotation = state
        return provider
