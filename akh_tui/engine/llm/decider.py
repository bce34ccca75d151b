"""The language-model side of the LLM decider (project issue 5).

Instead of the utility table (SPEC §6), a run may ask a language model for the next action.
This module holds everything on the model's side of that exchange and nothing of the agent:

* `LLMConfig`: endpoint, model, the *name* of the environment variable holding the key,
  timeouts, retry and rate budgets (`from_dict` validates a user's `[llm]` table).
* `RateTracker`: sliding 60 s window of calls and tokens; says whether a call may go now and
  how long to wait otherwise. The clock is injectable so tests are deterministic.
* `StructuredMemory`: the structured working memory (current goal, stage, completed, next
  steps, lessons), size-capped, rendered into the prompt.
* `build_prompt(context, memory)`: chat messages (system: tools and the answer format; user:
  goals, recent WM, last result, recent failures, structured memory, this cycle's offers).
* `parse_reply(text, offered)`: validates `{situation_assessment, action_rationale,
  action: {tool, input}}`, raising `IntentRejected(reason)`.
* Providers: `OpenAICompatibleProvider` (POST {base_url}/chat/completions with the standard
  library's http.client, never an environment proxy, retries 429/5xx/timeouts/resets with
  capped exponential backoff) and `ScriptedProvider` (deterministic, offline, for demos/tests).
* `LLMDecider`: one `decide(context)` call = prompt, provider, parse; it never raises for a
  provider or network problem, it returns it. `submit(context)` runs `decide` on a daemon
  thread and returns a Future, so a UI never waits on the network.

The agent (not this module) records an `intent_rejected` / `llm_error` outcome and falls back
to the utility choice when `decide` returns no intent.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import re
import socket
import ssl
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field, fields
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Mapping, Protocol, Sequence
from urllib.parse import urlsplit

from ..cycle.deciders import Decider, ModelDecider, UtilityDecider
from ..errors import InputError
from ..redaction import redact, register_secret
from ..tools.specs import SPECS, TOOL_NAMES
from ..urls import check_url

__all__ = [
    "LLMConfig", "RateTracker", "StructuredMemory", "build_prompt", "Intent", "IntentRejected",
    "parse_reply", "LLMError", "Provider", "OpenAICompatibleProvider", "ScriptedProvider",
    "LLMDecider", "estimate_tokens", "DEFAULT_PREFERENCE",
]

# Prompt bounds: what the user message carries at most, so a long run never bloats it.
PROMPT_WM_LINES = 10
PROMPT_LINE_CHARS = 300
PROMPT_RESULT_CHARS = 1500
PROMPT_FAILURES = 5
PROMPT_GOALS = 20
MEMORY_MAX_BYTES = 2000
INPUT_MAX_CHARS = 2000  # an action input longer than this is rejected
REPLY_MAX_BYTES = 4_000_000  # response bodies above this are refused
FAILURE_HISTORY = 5


def estimate_tokens(text: str) -> int:
    """The usual rough estimate: four characters a token (never 0 for non-empty text)."""
    return math.ceil(len(text) / 4)


def _messages_text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


def _one_line(text: object, limit: int = 200) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


# ---- configuration ------------------------------------------------------------------------

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class LLMConfig:
    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"  # the NAME of the variable; the key itself is never stored
    timeout: float = 20.0  # seconds, per socket operation (connect, send, each read)
    max_retries: int = 4  # retries after the first attempt, for 429 / 5xx / timeouts / resets
    backoff_base: float = 0.5
    backoff_cap: float = 8.0  # also caps a server's Retry-After
    calls_per_minute: int = 20
    tokens_per_minute: int = 40000
    max_tokens: int = 400
    temperature: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], file: str | None = None) -> "LLMConfig":
        """Build from a user's `[llm]` table; every problem is an InputError naming the field."""
        if not isinstance(d, Mapping):
            raise InputError("must be a table", file=file, field="llm")
        known = {f.name for f in fields(cls)}
        for key in d:
            if key not in known:
                raise InputError(f"unknown key '{key}' (known: {', '.join(sorted(known))})",
                                 file=file, field=f"llm.{key}")
        for key in ("base_url", "model"):
            if key not in d:
                raise InputError("is required", file=file, field=f"llm.{key}")

        def err(key: str, msg: str) -> InputError:
            return InputError(f"{msg}, got {redact(repr(d[key]))}", file=file, line=_config_line(file, f"llm.{key}"),
                              field=f"llm.{key}")

        def text(key: str) -> str:
            v = d[key]
            if not isinstance(v, str) or not v.strip():
                raise err(key, "must be a non-empty string")
            return v.strip()

        def number(key: str, lo: float, hi: float | None = None, *, lo_open: bool = False) -> float:
            v = d[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise err(key, "must be a number")
            if (v <= lo if lo_open else v < lo) or (hi is not None and v > hi):
                rng = f"{'>' if lo_open else '≥'} {lo:g}" + (f" and ≤ {hi:g}" if hi is not None else "")
                raise err(key, f"must be {rng}")
            return float(v)

        def integer(key: str, lo: int) -> int:
            v = d[key]
            if isinstance(v, bool) or not isinstance(v, int):
                raise err(key, "must be an integer")
            if v < lo:
                raise err(key, f"must be at least {lo}")
            return v

        kw: dict[str, Any] = {}
        base_url = text("base_url")
        parts = check_url(base_url, "llm.base_url", file=file, line=_config_line(file, "llm.base_url"))
        if parts.query or parts.fragment:
            raise err("base_url", "must not carry a query or fragment")
        kw["base_url"] = base_url
        kw["model"] = text("model")
        if "api_key_env" in d:
            name = text("api_key_env")
            if not _ENV_NAME.match(name):
                # the value is not shown: what was typed here may be the key itself
                raise InputError("must be an environment variable name (letters, digits, _), not the key",
                                 file=file, line=_config_line(file, "llm.api_key_env"), field="llm.api_key_env")
            kw["api_key_env"] = name
        for key, lo, hi, lo_open in (("timeout", 0.0, 600.0, True), ("backoff_base", 0.0, None, False),
                                     ("backoff_cap", 0.0, None, False), ("temperature", 0.0, 2.0, False)):
            if key in d:
                kw[key] = number(key, lo, hi, lo_open=lo_open)
        for key, lo in (("max_retries", 0), ("calls_per_minute", 1), ("tokens_per_minute", 1), ("max_tokens", 1)):
            if key in d:
                kw[key] = integer(key, lo)
        return cls(**kw)


def _config_line(file: str | None, fld: str) -> int | None:
    """The line of `fld` in the user's config file, for an error message (read only then)."""
    if not file:
        return None
    from pathlib import Path

    from ..tomlpos import TomlLocator

    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return TomlLocator(text).line(fld)


# ---- rate tracking ------------------------------------------------------------------------

class RateTracker:
    """Sliding-window budget: at most `calls_per_window` calls and `tokens_per_window` tokens
    in any `window` seconds. Entries are (time, tokens); an entry leaves the window exactly
    `window` seconds after it was recorded.

    A single call whose estimate exceeds the whole token budget is let through once the window
    is empty (otherwise it could never run).
    """

    def __init__(self, calls_per_window: int, tokens_per_window: int, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if calls_per_window < 1 or tokens_per_window < 1 or window <= 0:
            raise ValueError("rate budgets and window must be positive")
        self.calls_per_window = calls_per_window
        self.tokens_per_window = tokens_per_window
        self.window = window
        self.clock = clock
        self._entries: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        while self._entries and self._entries[0][0] + self.window <= now:
            self._entries.popleft()

    def _fits(self, calls: int, tokens: int, estimate: int) -> bool:
        if calls == 0:
            return True
        return calls < self.calls_per_window and tokens + estimate <= self.tokens_per_window

    def usage(self) -> tuple[int, int]:
        """(calls, tokens) inside the window now."""
        with self._lock:
            self._prune(self.clock())
            return len(self._entries), sum(t for _, t in self._entries)

    def can_consume(self, tokens_estimate: int = 0) -> bool:
        with self._lock:
            self._prune(self.clock())
            return self._fits(len(self._entries), sum(t for _, t in self._entries), max(0, tokens_estimate))

    def wait_time(self, tokens_estimate: int = 0) -> float:
        """Seconds until a call of this estimate fits (0.0 if it fits now)."""
        with self._lock:
            now = self.clock()
            self._prune(now)
            est = max(0, tokens_estimate)
            calls = len(self._entries)
            tokens = sum(t for _, t in self._entries)
            if self._fits(calls, tokens, est):
                return 0.0
            for t, n in self._entries:  # oldest first: when it expires, does the call fit?
                calls -= 1
                tokens -= n
                if self._fits(calls, tokens, est):
                    return max(0.0, t + self.window - now)
            return 0.0  # unreachable: an empty window always fits

    def record(self, tokens: int) -> None:
        with self._lock:
            now = self.clock()
            self._prune(now)
            self._entries.append((now, max(0, int(tokens))))


# ---- structured working memory ------------------------------------------------------------

class StructuredMemory:
    """Goal persistence across cycles: current goal, stage, completed, next steps, lessons.

    Stored size is capped (`max_items` per list, `max_chars` per string; the oldest list items
    go first). `render(max_bytes)` caps the prompt text: it drops list items, oldest first
    (for next_steps, the furthest step: the first step is the most immediate), and only then
    shortens the goal and stage.
    """

    LISTS = ("completed", "next_steps", "lessons")

    def __init__(self, current_goal: str = "", stage: str = "", completed: list[str] | None = None,
                 next_steps: list[str] | None = None, lessons: list[str] | None = None,
                 *, max_items: int = 20, max_chars: int = 300) -> None:
        self.max_items = max_items
        self.max_chars = max_chars
        self.current_goal = ""
        self.stage = ""
        self.completed: list[str] = []
        self.next_steps: list[str] = []
        self.lessons: list[str] = []
        self.update(current_goal=current_goal, stage=stage, completed=completed or [],
                    next_steps=next_steps or [], lessons=lessons or [])

    def _clip(self, s: Any) -> str:
        s = " ".join(str(s).split())
        return s if len(s) <= self.max_chars else s[: self.max_chars - 1] + "…"

    def _cap(self, items: list[str], keep_front: bool = False) -> list[str]:
        items = [c for c in (self._clip(i) for i in items) if c]
        if len(items) > self.max_items:
            items = items[: self.max_items] if keep_front else items[-self.max_items:]
        return items

    def update(self, current_goal: str | None = None, stage: str | None = None,
               completed: list[str] | None = None, next_steps: list[str] | None = None,
               lessons: list[str] | None = None) -> None:
        """Replace whichever fields are given (None leaves a field as it is)."""
        if current_goal is not None:
            self.current_goal = self._clip(current_goal)
        if stage is not None:
            self.stage = self._clip(stage)
        if completed is not None:
            self.completed = self._cap(list(completed))
        if next_steps is not None:
            self.next_steps = self._cap(list(next_steps), keep_front=True)
        if lessons is not None:
            self.lessons = self._cap(list(lessons))

    def add_completed(self, item: str) -> None:
        """Append a completed step; a step that was the first next step leaves next_steps."""
        item = self._clip(item)
        if not item:
            return
        if self.next_steps and self.next_steps[0] == item:
            self.next_steps.pop(0)
        self.completed = self._cap(self.completed + [item])

    def add_lesson(self, item: str) -> None:
        item = self._clip(item)
        if item and item not in self.lessons:
            self.lessons = self._cap(self.lessons + [item])

    def is_empty(self) -> bool:
        return not (self.current_goal or self.stage or self.completed or self.next_steps or self.lessons)

    def to_dict(self) -> dict[str, Any]:
        return {"current_goal": self.current_goal, "stage": self.stage, "completed": list(self.completed),
                "next_steps": list(self.next_steps), "lessons": list(self.lessons)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], file: str | None = None) -> "StructuredMemory":
        """Accept the flat form (to_dict) or the nested one (`progress: {stage, completed,
        next_steps}`); unknown keys are ignored, wrong types are InputErrors naming the field."""
        if not isinstance(d, Mapping):
            raise InputError("must be a table", file=file, field="working_memory")
        flat: dict[str, Any] = {k: d[k] for k in ("current_goal", "stage", *cls.LISTS) if k in d}
        progress = d.get("progress")
        if progress is not None:
            if not isinstance(progress, Mapping):
                raise InputError("must be a table", file=file, field="working_memory.progress")
            for k in ("stage", "completed", "next_steps"):
                if k in progress and k not in flat:
                    flat[k] = progress[k]
        for k in ("current_goal", "stage"):
            if k in flat and not isinstance(flat[k], str):
                raise InputError(f"must be a string, got {flat[k]!r}", file=file, field=f"working_memory.{k}")
        for k in cls.LISTS:
            if k in flat and (not isinstance(flat[k], list) or not all(isinstance(i, str) for i in flat[k])):
                raise InputError("must be a list of strings", file=file, field=f"working_memory.{k}")
        return cls(**flat)

    def _text(self, goal: str, stage: str, lists: dict[str, list[str]], omitted: dict[str, int]) -> str:
        out = [f"current goal: {goal or '(none)'}", f"stage: {stage or '(none)'}"]
        for name, title in (("completed", "completed"), ("next_steps", "next steps"), ("lessons", "lessons")):
            items = lists[name]
            if not items and not omitted[name]:
                continue
            more = f" ({omitted[name]} older omitted)" if omitted[name] and name != "next_steps" else (
                f" ({omitted[name]} later omitted)" if omitted[name] else "")
            out.append(f"{title}:{more}")
            out.extend(f"- {i}" for i in items)
        return "\n".join(out)

    def render(self, max_bytes: int = MEMORY_MAX_BYTES) -> str:
        lists = {k: list(getattr(self, k)) for k in self.LISTS}
        omitted = dict.fromkeys(self.LISTS, 0)
        goal, stage = self.current_goal, self.stage
        text = self._text(goal, stage, lists, omitted)
        while len(text.encode("utf-8")) > max_bytes and any(lists.values()):
            # drop from the longest list (ties: completed, lessons, next_steps)
            name = max(("completed", "lessons", "next_steps"), key=lambda k: len(lists[k]))
            if name == "next_steps":
                lists[name].pop()
            else:
                lists[name].pop(0)
            omitted[name] += 1
            text = self._text(goal, stage, lists, omitted)
        if len(text.encode("utf-8")) > max_bytes:
            # lists are empty: shorten the goal and stage, then cut hard on a character boundary
            half = max(0, max_bytes // 2 - 20)
            goal = goal.encode("utf-8")[:half].decode("utf-8", "ignore")
            stage = stage.encode("utf-8")[:half].decode("utf-8", "ignore")
            text = self._text(goal, stage, lists, omitted)
            text = text.encode("utf-8")[: max(0, max_bytes)].decode("utf-8", "ignore")
        return text


# ---- prompt ---------------------------------------------------------------------------------

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


def _known_tool(tool: str) -> bool:
    if tool in TOOL_NAMES:
        return True
    from ..tools.registry import seen_entry

    return seen_entry(tool) is not None


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
    return f"- {g.get('id', '?')} [{g.get('status', '?')}, priority {pri_s}] {_one_line(g.get('description', ''), PROMPT_LINE_CHARS)}"


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
        u.append(f"Focus goal: {focus.get('id', '?')}: {_one_line(focus.get('description', ''), PROMPT_LINE_CHARS)}")
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
        u.extend(f"- {_one_line(x, PROMPT_LINE_CHARS)}" for x in wm)
    else:
        u.append("(empty)")
    u += ["", "## Last result"]
    if last:
        u.append(last if len(last) <= PROMPT_RESULT_CHARS else last[: PROMPT_RESULT_CHARS - 1] + "…")
    else:
        u.append("(none)")
    u += ["", "## Recent failures"]
    if failures:
        u.extend(f"- {_one_line(x, PROMPT_LINE_CHARS)}" for x in failures)
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
            u.append(f"- {name}: not offered: {_one_line(t.get('why_not') or 'not offered', PROMPT_LINE_CHARS)}")
    u += ["", "Choose the next action. Reply with the JSON object only."]
    names = [str(t.get("name")) for t in tools]
    return [{"role": "system", "content": _system_message(names)}, {"role": "user", "content": "\n".join(u)}]


# ---- reply parsing ------------------------------------------------------------------------

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
        raise IntentRejected(f"unknown tool '{_foreign(tool, 60)}' (known: {', '.join(TOOL_NAMES)})")
    if tool not in offered:
        shown = ", ".join([t for t in TOOL_NAMES if t in offered] + sorted(t for t in offered if t not in TOOL_NAMES)) or "none"
        raise IntentRejected(f"tool '{tool}' is not offered this cycle (offered: {shown})")
    inp = action["input"]
    if not isinstance(inp, str):
        raise IntentRejected(f"'action.input' must be a string, got {type(inp).__name__}")
    if len(inp) > INPUT_MAX_CHARS:
        raise IntentRejected(f"'action.input' is too long ({len(inp)} > {INPUT_MAX_CHARS} characters)")
    return Intent(obj["situation_assessment"], obj["action_rationale"], tool, inp, text)


# ---- providers ----------------------------------------------------------------------------

class LLMError(Exception):
    """A provider failure (network, HTTP status, bad envelope, retries exhausted); one line."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


class Provider(Protocol):
    def complete(self, messages: list[dict]) -> tuple[str, int]:
        """Return (reply text, tokens used)."""
        ...


class _Transient(Exception):
    """A retryable failure of one attempt; `retry_after` is the server's hint in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.message = message
        self.retry_after = retry_after
        super().__init__(message)


def _retry_after(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    if not value:
        return None
    v = value.strip()
    try:
        secs = float(v)
    except ValueError:
        try:
            dt = parsedate_to_datetime(v)
        except (TypeError, ValueError, IndexError):
            return None
        if dt is None:
            return None
        secs = dt.timestamp() - now()
    if not math.isfinite(secs):
        return None
    return max(0.0, secs)


def _foreign(text: object, limit: int) -> str:
    """A server's text as a message shows it: one line of at most `limit` characters, secrets
    masked before the cut (a token cut short is no longer a shape redact knows); only the
    head of a large body is scanned."""
    return _one_line(redact(str(text)[: limit * 16]), limit)


def _error_detail(body: bytes) -> str:
    """The server's own error message if the body is the usual {"error": {"message": ...}},
    secrets masked before it is cut to one line (a server may echo the request's
    `Authorization` header, or the key, in it)."""
    try:
        obj = json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return _foreign(body.decode("utf-8", "replace"), 160)
    if isinstance(obj, dict):
        err = obj.get("error")
        if isinstance(err, dict) and err.get("message"):
            return _foreign(err["message"], 160)
        if isinstance(err, str):
            return _foreign(err, 160)
        if obj.get("message"):
            return _foreign(obj["message"], 160)
    return _foreign(json.dumps(obj, ensure_ascii=False), 160)


class OpenAICompatibleProvider:
    """Chat completions over plain HTTP(S) with http.client: no environment proxies, no
    redirects followed (a redirect is an error, so the key never goes to another host)."""

    def __init__(self, config: LLMConfig, rate: RateTracker | None = None,
                 sleep: Callable[[float], None] = time.sleep, env: Mapping[str, str] = os.environ) -> None:
        try:
            check_url(config.base_url, "llm.base_url")
        except InputError as exc:
            raise LLMError(f"LLM {exc}") from None
        self.config = config
        self.rate = rate if rate is not None else RateTracker(config.calls_per_minute, config.tokens_per_minute)
        self.sleep = sleep
        self.env = env
        # the key is masked in everything this process records or prints from now on
        register_secret(env.get(config.api_key_env) if config.api_key_env else None)
        self._parts = urlsplit(config.endpoint)
        self.attempts = 0  # HTTP attempts made (all calls), for display

    # one HTTP attempt -------------------------------------------------------------------
    def _attempt(self, body: bytes, headers: dict[str, str]) -> tuple[int, Mapping[str, str], bytes]:
        p = self._parts
        cls = http.client.HTTPSConnection if p.scheme == "https" else http.client.HTTPConnection
        conn = cls(p.hostname or "", p.port, timeout=self.config.timeout)
        try:
            path = p.path or "/"
            conn.request("POST", path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read(REPLY_MAX_BYTES + 1)
            if len(data) > REPLY_MAX_BYTES:
                raise LLMError(f"LLM reply from {self.config.endpoint} is larger than {REPLY_MAX_BYTES} bytes")
            return resp.status, dict(resp.headers.items()), data
        finally:
            conn.close()

    def _classify(self, exc: BaseException) -> _Transient | LLMError:
        where = f"{self._parts.hostname}:{self._parts.port or (443 if self._parts.scheme == 'https' else 80)}"
        if isinstance(exc, (TimeoutError, socket.timeout)):
            return _Transient(f"timed out after {self.config.timeout:g} s")
        if isinstance(exc, ConnectionRefusedError):
            return LLMError(f"LLM connection refused by {where} (is the server running?)")
        if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return _Transient(f"connection reset by {where}")
        if isinstance(exc, http.client.HTTPException):
            return _Transient(f"bad HTTP response from {where} ({type(exc).__name__})")
        if isinstance(exc, socket.gaierror):
            return LLMError(f"LLM host {self._parts.hostname!r} cannot be resolved")
        if isinstance(exc, ssl.SSLError):
            return LLMError(f"LLM TLS error with {where}: {_one_line(exc, 120)}")
        if isinstance(exc, OSError):
            return LLMError(f"LLM network error with {where}: {_one_line(exc.strerror or exc, 120)}")
        return LLMError(f"LLM request failed: {type(exc).__name__}: {_one_line(exc, 120)}")

    def _parse_envelope(self, data: bytes, messages_text: str) -> tuple[str, int]:
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise LLMError(f"LLM reply from {self.config.endpoint} is not a JSON envelope: "
                           f"{_foreign(data.decode('utf-8', 'replace'), 80)!r}") from None
        try:
            content = obj["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError("LLM reply has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise LLMError(f"LLM reply content is {type(content).__name__}, not text")
        usage = obj.get("usage") if isinstance(obj, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            total = estimate_tokens(messages_text) + estimate_tokens(content)
        return content, total

    def complete(self, messages: list[dict]) -> tuple[str, int]:
        cfg = self.config
        payload = {
            "model": cfg.model,
            "messages": messages,
            "max_tokens": cfg.max_tokens,
            "temperature": cfg.temperature,
            "response_format": {"type": "json_object"},
        }
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "akh-tui"}
        key = self.env.get(cfg.api_key_env) if cfg.api_key_env else None
        register_secret(key)  # the environment may have changed since the provider was made
        if key:
            headers["Authorization"] = f"Bearer {key}"
        mtext = _messages_text(messages)
        estimate = estimate_tokens(mtext) + cfg.max_tokens
        attempts = cfg.max_retries + 1
        last = ""
        for attempt in range(attempts):
            wait = self.rate.wait_time(estimate)
            if wait > 0:
                self.sleep(wait)
            self.attempts += 1
            try:
                try:
                    status, resp_headers, data = self._attempt(body, headers)
                except LLMError:
                    self.rate.record(0)
                    raise
                except Exception as exc:  # network level: classify (transient or final)
                    self.rate.record(0)
                    raise self._classify(exc) from None
                if 200 <= status < 300:
                    content, tokens = self._parse_envelope(data, mtext)
                    self.rate.record(tokens)
                    return content, tokens
                self.rate.record(0)
                detail = _error_detail(data)
                msg = f"HTTP {status}" + (f": {detail}" if detail else "")
                if status in (408, 429) or 500 <= status <= 599:
                    raise _Transient(msg, _retry_after(resp_headers.get("Retry-After")))
                raise LLMError(f"LLM request to {cfg.endpoint} failed: {msg}")
            except _Transient as t:
                last = t.message
                if attempt + 1 >= attempts:
                    break
                delay = min(cfg.backoff_cap, cfg.backoff_base * (2 ** attempt))
                if t.retry_after is not None:
                    delay = min(cfg.backoff_cap, t.retry_after)
                if delay > 0:
                    self.sleep(delay)
        raise LLMError(f"LLM request to {cfg.endpoint} failed after {attempts} attempt"
                       f"{'s' if attempts != 1 else ''}: {last}")


DEFAULT_PREFERENCE: tuple[str, ...] = (
    "kg_query", "infer_rules", "reason", "gap_analysis", "similarity_search", "memory_recall",
    "synthesize_triple", "user_interact", "file_io", "http_fetch", "shell_exec",
)

_OFFERED_LINE = re.compile(r"^offered: (.*)$", re.M)
_TOOL_INPUT_LINE = re.compile(r"^- (\w+): offered; input: (\".*\")$", re.M)


class ScriptedProvider:
    """Deterministic offline provider: returns `replies` in turn, cycling. Tokens = len/4 of
    prompt plus reply. `calls` keeps every messages list it was given."""

    def __init__(self, replies: list[str] | None = None,
                 responder: Callable[[list[dict]], str] | None = None) -> None:
        if responder is None and not replies:
            raise ValueError("ScriptedProvider needs at least one reply")
        self.replies = list(replies or [])
        self._responder = responder
        self._i = 0
        self.rotation: dict[str, str | None] | None = None  # for_tools(rotate=True)'s last pick (a world saves it)
        self.calls: list[list[dict]] = []

    def complete(self, messages: list[dict]) -> tuple[str, int]:
        self.calls.append(messages)
        if self._responder is not None:
            text = self._responder(messages)
        else:
            text = self.replies[self._i % len(self.replies)]
            self._i += 1
        return text, estimate_tokens(_messages_text(messages)) + estimate_tokens(text)

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


# ---- the decider --------------------------------------------------------------------------

class LLMDecider(ModelDecider):
    """Asks the provider for the next action. `decide(context)` returns
    {"intent": Intent dict | None, "rejected": reason | None, "error": message | None,
     "messages_tokens": estimated prompt tokens, "tokens_used": provider's count (0 on error),
     "reply": raw reply text | None, "messages": the prompt sent}.
    Exactly one of intent / rejected / error is set. Provider and network errors are returned,
    never raised. The decider keeps its own failure history (last 5 rejections and errors) and
    shows it to the model alongside the context's failures."""

    def __init__(self, provider: Provider, memory: StructuredMemory | None = None) -> None:
        self.provider = provider
        self.memory = memory if memory is not None else StructuredMemory()
        self.failures: deque[str] = deque(maxlen=FAILURE_HISTORY)
        self._lock = threading.Lock()

    def decide(self, context: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            return self._decide(context)

    def state(self) -> dict[str, Any]:
        """What a world's saved state holds of this decider, for a rewind to replay its turns
        exactly: the structured memory and failure history (both in the next prompt) and a
        scripted provider's position in its replies and rotation."""
        out: dict[str, Any] = {"memory": self.memory.to_dict(), "failures": list(self.failures)}
        p = self.provider
        if isinstance(p, ScriptedProvider):
            out["scripted"] = {"i": p._i, "rotation": dict(p.rotation) if p.rotation is not None else None}
        return out

    def load_state(self, d: Mapping[str, Any]) -> None:
        self.memory = StructuredMemory.from_dict(d["memory"])
        self.failures = deque(d["failures"], maxlen=FAILURE_HISTORY)
        p, sc = self.provider, d.get("scripted")
        if isinstance(p, ScriptedProvider) and sc is not None:
            p._i = sc["i"]
            if p.rotation is not None and sc["rotation"] is not None:
                p.rotation.clear()
                p.rotation.update(sc["rotation"])

    def _decide(self, context: Mapping[str, Any]) -> dict[str, Any]:
        focus = context.get("focus") or {}
        if focus.get("description") and focus.get("description") != self.memory.current_goal:
            self.memory.update(current_goal=str(focus["description"]))
        own = [f"your answer: {f}" for f in self.failures]
        ctx = dict(context)
        ctx["failures"] = (list(context.get("failures") or []) + own)[-PROMPT_FAILURES:]
        messages = build_prompt(ctx, self.memory)
        result: dict[str, Any] = {"intent": None, "rejected": None, "error": None,
                                  "messages_tokens": estimate_tokens(_messages_text(messages)),
                                  "tokens_used": 0, "reply": None, "messages": messages}
        cycle = context.get("cycle")
        tag = f"cycle {cycle}: " if cycle is not None else ""
        try:
            text, tokens = self.provider.complete(messages)
        except LLMError as exc:
            msg = redact(exc.message)  # it may name the endpoint with its userinfo
            result["error"] = msg
            self.failures.append(f"{tag}llm_error: {msg}")
            return result
        except Exception as exc:  # a provider bug must not take the agent down either
            msg = f"{type(exc).__name__}: {_foreign(exc, 200)}"
            result["error"] = msg
            self.failures.append(f"{tag}llm_error: {msg}")
            return result
        result["tokens_used"] = int(tokens or 0)
        result["reply"] = text
        offered = {str(t.get("name")) for t in (context.get("tools") or []) if t.get("offered")}
        try:
            intent = parse_reply(text, offered)
        except IntentRejected as exc:
            reason = redact(exc.reason)  # it may quote the reply
            result["rejected"] = reason
            self.failures.append(f"{tag}intent_rejected: {reason}")
            return result
        result["intent"] = intent.to_dict()
        return result

    def submit(self, context: Mapping[str, Any]) -> "Future[dict[str, Any]]":
        """Run decide() on a daemon thread; the caller polls the Future (never blocks a UI)."""
        fut: Future = Future()
        ctx = dict(context)

        def run() -> None:
            if not fut.set_running_or_notify_cancel():
                return
            try:
                fut.set_result(self.decide(ctx))
            except BaseException as exc:  # decide() returns errors; this is a last resort
                fut.set_exception(exc)

        threading.Thread(target=run, name="llm-decide", daemon=True).start()
        return fut


DECIDERS = ("utility", "scripted", "llm")


def make_decider(kind: str, llm: Mapping[str, Any] | None = None, file: str | None = None) -> Decider:
    """The decide strategy of a run: the utility table, a scripted offline model
    (deterministic: demos and tests), or a real OpenAI-compatible endpoint from the user's
    `[llm]` config (base_url, model, api_key_env, ...)."""
    if kind == "utility":
        return UtilityDecider()
    if kind == "scripted":
        d = LLMDecider(ScriptedProvider.for_tools(rotate=True))
        d.kind = "scripted"
        return d
    if kind == "llm":
        if not llm:
            raise InputError("the llm decider needs an [llm] table (base_url, model, api_key_env) in the user config",
                             file=file, field="llm")
        return LLMDecider(OpenAICompatibleProvider(LLMConfig.from_dict(llm, file=file)))
    raise InputError(f"unknown decider {kind!r} (known: {', '.join(DECIDERS)})", field="decider")


class RecordedDecider(ModelDecider):
    """The model's answers as the cycle records hold them, for replaying recorded cycles
    (rewind, fork, resume after a kill): no network call, and the same choices as the run.
    An intent the agent rejected is rejected again the same way."""

    def __init__(self, records: Mapping[int, dict]) -> None:
        self.records = records
        self.memory = StructuredMemory()
        self.failures: deque[str] = deque(maxlen=FAILURE_HISTORY)

    def decide(self, context: Mapping[str, Any]) -> dict[str, Any]:
        cycle = context.get("cycle")
        rec = self.records.get(cycle) if isinstance(cycle, int) else None
        llm = (rec or {}).get("decide", {}).get("llm")
        result: dict[str, Any] = {"intent": None, "rejected": None, "error": None, "tokens_used": 0}
        if llm is None:
            result["error"] = f"no recorded model answer for cycle {context.get('cycle')}"
        elif llm["status"] == "llm_error":
            result["error"] = llm["reason"]
        elif llm["tool"] is None:
            result["rejected"] = llm["reason"]
        else:
            result["tokens_used"] = llm.get("tokens", 0)
            result["intent"] = {"tool": llm["tool"], "input": llm["input"],
                                "situation_assessment": llm["situation_assessment"],
                                "action_rationale": llm["action_rationale"]}
        return result
