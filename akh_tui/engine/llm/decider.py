"""The LLM decider (project issue 5): instead of the utility table (SPEC §6), a run may ask a
language model for the next action.

* `LLMDecider`: one `decide(context)` call = prompt, provider, parse; it never raises for a
  provider or network problem, it returns it. `submit(context)` runs `decide` on a daemon
  thread and returns a Future, so a UI never waits on the network.
* `make_decider(kind, llm)`: the decide strategy a run names (utility, scripted, llm).
* `RecordedDecider`: the model's answers as the cycle records hold them, for replays.

The model's side is in pieces beside this module: `config` (the `[llm]` table), `rate`,
`memory` (structured working memory), `prompt`, `reply` (the reply form and its checks),
`transport` (providers over HTTP), `scripted` (the offline stand-in), `text`.

The agent (not this module) records an `intent_rejected` / `llm_error` outcome and falls back
to the utility choice when `decide` returns no intent.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ..cycle.deciders import Decider, ModelDecider, UtilityDecider
from ..errors import InputError
from ..redaction import redact, redact_obj
from .cassette import CASSETTE_NAME, Cassette, prompt_hash
from .config import LLMConfig
from .dialect import TEXT_REPLY
from .memory import StructuredMemory
from .prompt import PROMPT_FAILURES, build_prompt
from .reply import IntentRejected, parse_reply, reply_schema
from .scripted import ScriptedProvider
from .text import estimate_tokens, foreign, messages_text
from .transport import LLMError, OpenAICompatibleProvider, Provider

__all__ = [
    "LLMDecider", "make_decider", "RecordedDecider", "DECIDERS",
    # re-exported: the names callers used when all of this was one module
    "LLMConfig", "StructuredMemory", "build_prompt", "IntentRejected", "parse_reply", "LLMError",
    "Provider", "OpenAICompatibleProvider", "ScriptedProvider", "estimate_tokens",
]

FAILURE_HISTORY = 5
CALLS_KEPT = 1000


class LLMDecider(ModelDecider):
    """Asks the provider for the next action. `decide(context)` returns
    {"intent": Intent dict | None, "rejected": reason | None, "error": message | None,
     "messages_tokens": estimated prompt tokens, "tokens_used": provider's count (0 on error),
     "reply": raw reply text | None, "messages": the prompt sent}.
    Exactly one of intent / rejected / error is set. Provider and network errors are returned,
    never raised. The decider keeps its own failure history (last 5 rejections and errors) and
    shows it to the model alongside the context's failures."""

    def __init__(self, provider: Provider | None, memory: StructuredMemory | None = None, *,
                 cassette: Cassette | None = None, sampling: Mapping[str, Any] | None = None,
                 offered_inputs: bool = False) -> None:
        """`provider` None: offline, every reply from `cassette` (a prompt it lacks is a divergence).
        `sampling`: what besides the prompt decides the reply (temperature, seed, max_tokens),
        part of the cassette's key."""
        self.provider = provider
        self.memory = memory if memory is not None else StructuredMemory()
        self.failures: deque[str] = deque(maxlen=FAILURE_HISTORY)
        self._lock = threading.Lock()
        self.cassette = cassette
        self.sampling = dict(sampling or {})
        self.offered_inputs = offered_inputs  # the schema pins each tool's input to the offered one
        # cycle -> how its model call went (replayed or live, latency, prompt hash): outside the
        # record, so the trace's bytes do not depend on it; the latest CALLS_KEPT cycles
        self.calls: dict[int, dict[str, Any]] = {}
        self.last_call: dict[str, Any] = {}  # the latest call's note, whatever its cycle

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
                                  "messages_tokens": estimate_tokens(messages_text(messages)),
                                  "tokens_used": 0, "reply": None, "messages": messages}
        cycle = context.get("cycle")
        tag = f"cycle {cycle}: " if cycle is not None else ""
        offered_names = [str(t.get("name")) for t in (context.get("tools") or []) if t.get("offered")]
        try:
            inputs = {str(t.get("name")): str(t.get("input") or "") for t in (context.get("tools") or [])
                      if t.get("offered")} if self.offered_inputs else None
            text, tokens = self._ask(messages, reply_schema(offered_names, inputs), cycle)
        except LLMError as exc:
            msg = redact(exc.message)  # it may name the endpoint with its userinfo
            result["error"] = msg
            self.failures.append(f"{tag}llm_error: {msg}")
            return result
        except Exception as exc:  # a provider bug must not take the agent down either
            msg = f"{type(exc).__name__}: {foreign(exc, 200)}"
            result["error"] = msg
            self.failures.append(f"{tag}llm_error: {msg}")
            return result
        result["tokens_used"] = int(tokens or 0)
        result["reply"] = text
        try:
            intent = parse_reply(text, set(offered_names))
        except IntentRejected as exc:
            reason = redact(exc.reason)  # it may quote the reply
            result["rejected"] = reason
            self.failures.append(f"{tag}intent_rejected: {reason}")
            return result
        result["intent"] = intent.to_dict()
        return result

    def _ask(self, messages: list[dict], schema: dict[str, Any], cycle: Any) -> tuple[str, int]:
        """The reply to `messages`: from the cassette when it holds this prompt, else the model's
        (recorded in the cassette, if there is one)."""
        key = prompt_hash(messages, schema, self.sampling) if self.cassette is not None else None
        call: dict[str, Any] = {"cycle": cycle, "prompt_hash": key, "replayed": False, "wall_latency_s": 0.0}
        recorded = self.cassette.get(key) if self.cassette is not None and key is not None else None
        if recorded is not None:
            call.update(replayed=True, tokens=recorded.get("tokens", 0))
            self._keep(cycle, call)
            return str(recorded["reply"]), int(recorded.get("tokens") or 0)
        if self.provider is None:
            self._keep(cycle, call | {"divergence": True})
            where = self.cassette.path if self.cassette is not None else "no cassette"
            raise LLMError(f"cycle {cycle}: this prompt is not in the recorded model calls ({where}; prompt hash "
                           f"{(key or '')[:12]}): the run diverged from the recording, so the table's choice runs")
        t0 = time.perf_counter()
        text, tokens = self.provider.complete(messages, schema=schema)
        call.update(wall_latency_s=round(time.perf_counter() - t0, 4), tokens=int(tokens or 0))
        self._keep(cycle, call)
        if self.cassette is not None and key is not None:
            request = getattr(self.provider, "last_request", None) or {"messages": messages, "schema": schema}
            self.cassette.add(redact_obj({"prompt_hash": key, "cycle": cycle, "request": request, "reply": text,
                                          "tokens": int(tokens or 0), "sampling": self.sampling,
                                          "wall_latency_s": call["wall_latency_s"]}))
        return text, tokens

    def ask(self, messages: list[dict], key: str) -> tuple[str, dict[str, Any]]:
        """A free-text question to this decider's model (an interview, world/interview.py),
        through its cassette as a decision is: a prompt the cassette holds is answered from
        it, the model is never asked then. Returns the reply and how it was got (replayed or
        live, prompt hash, tokens). LLMError when the model cannot be reached (offline and the
        cassette lacks the prompt, a network error)."""
        with self._lock:
            self.last_call = {}
            text, _tokens = self._ask(messages, TEXT_REPLY, key)
            return text, dict(self.last_call)

    def _keep(self, cycle: Any, call: dict[str, Any]) -> None:
        self.last_call = call
        if isinstance(cycle, int):
            self.calls[cycle] = call
            while len(self.calls) > CALLS_KEPT:
                del self.calls[next(iter(self.calls))]

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


DECIDERS = ("utility", "scripted", "llm", "local")
# what `--decider local` takes of the user's [llm] table (its endpoint keys are for `llm`)
LOCAL_KEYS = ("model_path", "threads", "context", "seed", "temperature", "max_tokens", "cassette", "offline",
              "offered_inputs")


def make_decider(kind: str, llm: Mapping[str, Any] | None = None, file: str | None = None,
                 data_dir: Path | None = None) -> Decider:
    """The decide strategy of a run: the utility table, a scripted offline model
    (deterministic: demos and tests), a real OpenAI-compatible endpoint from the user's
    `[llm]` config (base_url, model, api_key_env, ...; `provider = "local"` runs the local
    model instead), or the local model in this process (`local`: llm/local.py). A model decider
    of a run with a data dir records its calls in the data dir's cassette (`[llm] cassette`
    names another file; `offline = true` answers from it alone: llm/cassette.py)."""
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
        cfg = LLMConfig.from_dict(llm, file=file)
        if cfg.provider == "local":
            return _local(cfg, file, data_dir)
        return _model(None if cfg.offline else OpenAICompatibleProvider(cfg), cfg, file, data_dir)
    if kind == "local":
        table = {k: v for k, v in (llm or {}).items() if k in LOCAL_KEYS}
        return _local(LLMConfig.from_dict({**table, "provider": "local"}, file=file), file, data_dir)
    raise InputError(f"unknown decider {kind!r} (known: {', '.join(DECIDERS)})", field="decider")


def _local(cfg: LLMConfig, file: str | None, data_dir: Path | None) -> LLMDecider:
    from .local import model_name  # the optional extra itself is looked for only when the model runs

    cfg = replace(cfg, model=model_name(cfg))  # the file's name: which model answered, part of the key
    if cfg.offline:  # no model needed (nor loaded): every reply comes from the recordings
        d = _model(None, cfg, file, data_dir)
    else:
        from .local import LocalProvider

        d = _model(LocalProvider(cfg, file), cfg, file, data_dir)
    d.kind = "local"
    return d


def _model(provider: Provider | None, cfg: LLMConfig, file: str | None, data_dir: Path | None) -> LLMDecider:
    """A model decider with its cassette: `[llm] cassette` (relative to the config file), else
    the data dir's; offline without either is an error (there is nothing to answer from)."""
    path: Path | None = None
    if cfg.cassette:
        path = Path(cfg.cassette).expanduser()
        if file and not path.is_absolute():
            path = Path(file).parent / path
    elif data_dir is not None:
        path = Path(data_dir) / CASSETTE_NAME
    if provider is None and (path is None or not path.is_file()):
        raise InputError(f"offline needs recorded model calls, and there are none at {path or 'no cassette'}",
                         file=file, field="llm.offline")
    cassette = Cassette(path) if path is not None else None
    # the model is part of the key: another model in the same data dir is asked, never replayed
    sampling = {"model": cfg.model, "temperature": cfg.temperature, "seed": cfg.seed, "max_tokens": cfg.max_tokens}
    return LLMDecider(provider, cassette=cassette, sampling=sampling, offered_inputs=cfg.offered_inputs)


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
