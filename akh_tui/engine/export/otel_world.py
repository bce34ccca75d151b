"""A world run (SPEC §13) as OpenTelemetry spans: who did what, in which order, for what scrip.

One trace per world run. Its root is the world (`world <name>`); under it a span per round
(`round N`, its order, every balance at its end), under each round a span per agent step
(`invoke_agent <agent>`, GenAI semantic conventions: `gen_ai.agent.id` and
`gen_ai.agent.name` are the agent's id) with the action, its result, the agent's balance and
the balances the step moved, and under an acting step the action as an `execute_tool` span;
a mint is a `mint` span in its round. A step's world events (ledger entries, artifact
writes, state changes, evaluations, pivots, the cycle's §11 events) are span events. A
refused turn (rate limits) is a step span with result `refused` and no tool call.

Deterministic like the trace: ids are hashes of (world, seed, run, branch, step name
`ROUND:AGENT`), times come from the world's virtual clock from a fixed start (a step lasts
`step_s`), never the wall clock.

Streamed: the records come as an iterable (a trace file's lines, or a stored branch), and
a span leaves as soon as it is whole. A step span is yielded when the next step begins; a
round span when its round ends (it must know its end); the root last. Their parents' ids are
derived, not looked up, so a child can leave before its parent is built. What is held is one
step's events and the balances (one number per account), whatever the world's length.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from ... import __version__
from ..explain.decision import answered_by
from ..redaction import redact
from .otel import DEFAULT_START_NS, _Builder, _id, cycle_attributes

MS_NS = 1_000_000
# a mint takes no virtual time; its span gets a sliver so that viewers draw it
MINT_NS = 10 * MS_NS
UNITS = ("cycle", "rate_limited", "mint")  # the records a span is made of; the rest are their events


def _ns(start_ns: int, clock: Any) -> int:
    """A record's clock (seconds, ms-exact) as Unix nanoseconds from the export's start."""
    return start_ns + round(float(clock or 0) * 1000) * MS_NS


def _event(ev: dict[str, Any]) -> dict[str, Any]:
    return {f"akh.{k}": v for k, v in ev.items() if k not in ("v", "type")}


def _balances(balances: dict[str, int], only: Iterable[str] | None = None) -> list[str]:
    keys = list(balances) if only is None else list(dict.fromkeys(k for k in only if k in balances))
    return [f"{k} {balances[k]}" for k in keys]


class _Round:
    """The round being streamed: what its span says once it ends."""

    def __init__(self, rec: dict[str, Any], start: int) -> None:
        self.number = int(rec.get("round") or 0)
        self.order = [str(a) for a in rec.get("order") or []]
        self.start = start
        self.end = start
        self.events: list[dict[str, Any]] = []
        self.steps = 0


def stream_world_spans(items: Iterable[dict[str, Any]], run: int | None = None, branch: str = "main",
                       start_ns: int = DEFAULT_START_NS) -> Iterator[Any]:
    """The spans of a world run's records in trace order (the `world` header first), each
    yielded once it is whole: steps as they end, a round after its steps, the root last.
    `run` and `branch` name a stored run (None: a trace file) and enter the trace's id."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanKind

    from ..errors import InputError
    from ..tools.builtins import SPEC_BY_NAME

    it = iter(items)
    header = next(it, None)
    if header is None or header.get("type") != "world":
        raise InputError("not a world trace: its first record must be the world header (type 'world')", field="type")
    name = redact(str(header.get("name") or "world"))
    seed = header.get("seed")
    cfg = (header.get("config") or {}).get("world") or {}
    step_ns = round(float(cfg.get("step_s", 1.0)) * 1000) * MS_NS
    agents = header.get("agents") or []
    scenario_of = {str(a.get("id")): a.get("scenario") for a in agents}
    decider_of = {str(a.get("id")): a.get("decider") for a in agents}
    opening = int(cfg.get("starting_scrip", 100))
    balances: dict[str, int] = {aid: opening for aid in scenario_of} | {"world": 0, "escrow": 0}
    key = f"world|{name}|{seed}|" + ("trace" if run is None else f"run {run}|{redact(branch)}")
    resource = Resource({"service.name": "akh-tui", "service.version": __version__, "service.instance.id": key,
                         "telemetry.sdk.language": "python", "telemetry.sdk.name": "opentelemetry",
                         "akh.world": name, "akh.seed": seed if seed is not None else -1})
    b = _Builder(key, resource, InstrumentationScope("akh_tui.engine.otel_world", __version__))
    root = b._ctx(_id(f"span|{key}|root", 8))  # derived: children leave before the root is built
    minted = 0
    steps = 0
    rounds = 0
    end = start_ns

    def round_ctx(r: int) -> Any:
        return b._ctx(_id(f"span|{key}|round {r}", 8))

    def close_round(rd: _Round) -> Iterator[Any]:
        b.span(f"round {rd.number}", f"round {rd.number}", root, rd.start, max(rd.end, rd.start + 1), {
            "openinference.span.kind": "CHAIN", "akh.round": rd.number, "akh.order": rd.order or None,
            "akh.steps": rd.steps, "akh.balances": _balances(balances),
        }, events=[(ev.get("type", "event"), rd.start, _event(ev)) for ev in rd.events])
        yield from b.take()

    def emit(unit: dict[str, Any], events: list[dict[str, Any]], rd: _Round) -> None:
        """The spans of one step or mint, its events applied to the balances."""
        nonlocal minted, steps
        kind = unit.get("type")
        t = _ns(start_ns, unit.get("clock"))
        moved: list[str] = []
        for ev in events:
            if ev.get("type") == "ledger":
                amount = int(ev.get("amount") or 0)
                frm, to = str(ev.get("from")), str(ev.get("to"))
                if frm == "mint":
                    minted += amount
                else:
                    balances[frm] = balances.get(frm, 0) - amount
                balances[to] = balances.get(to, 0) + amount
                moved += [frm, to]
        span_events = [(ev.get("type", "event"), t, _event(ev)) for ev in events]
        parent = round_ctx(rd.number)
        if kind == "mint":
            e = t + MINT_NS
            b.span(f"mint {rd.number}", "mint", parent, t, e, {
                "openinference.span.kind": "CHAIN", "akh.round": rd.number, "akh.clock": unit.get("clock"),
                "akh.mint.winner": unit.get("agent"), "akh.mint.artifact": unit.get("artifact"),
                "akh.mint.version": unit.get("version"), "akh.mint.price": unit.get("price"),
                "akh.mint.score": unit.get("score"), "akh.mint.minted": unit.get("minted"),
                "akh.mint.bids": [f"{a} {n}" for a, n in unit.get("bids") or []] or None,
                "akh.balances": _balances(balances, moved) or None,
            }, events=span_events)
            rd.end = max(rd.end, e)
            return
        steps += 1
        rd.steps += 1
        aid = str(unit.get("agent"))
        path = f"step {rd.number}:{aid}"
        e = t + step_ns
        common = {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "akh-tui",
            "openinference.span.kind": "AGENT",
            "gen_ai.agent.id": aid, "gen_ai.agent.name": aid, "gen_ai.conversation.id": key,
            "akh.agent": aid, "akh.step": f"{rd.number}:{aid}", "akh.round": rd.number, "akh.clock": unit.get("clock"),
            "akh.scenario": scenario_of.get(aid), "akh.decider": decider_of.get(aid),
            "akh.balance": balances.get(aid), "akh.balances": _balances(balances, moved) or None,
            "akh.events": [ev.get("type", "event") for ev in events] or None,
        }
        if kind == "rate_limited":
            b.span(path, f"invoke_agent {aid}", parent, t, e, common | {
                "akh.action": f"rate_limited({unit.get('resource')})", "akh.result": "refused",
                "akh.resource": unit.get("resource"),
            }, kind=SpanKind.INTERNAL, events=span_events)
            rd.end = max(rd.end, e)
            return
        decide, act = unit.get("decide") or {}, unit.get("act") or {}
        tool = redact(str(decide.get("tool") or "none"))
        user = decide.get("user") if isinstance(decide.get("user"), dict) else None
        if act.get("vetoed") and act.get("veto") == "user" and user is not None:
            failed: str | None = f"rejected at the gate by {redact(answered_by(user.get('by')))}"
        elif act.get("vetoed"):
            failed = f"vetoed by {act.get('veto') or 'the shadow'}"
        else:
            failed = None if act.get("success", True) else f"{tool} failed"
        ctx = b.span(path, f"invoke_agent {aid}", parent, t, e, cycle_attributes(unit) | common | {
            "akh.action": tool, "akh.result": act.get("progress"), "akh.state": unit.get("state"),
            "input.value": (unit.get("goal") or {}).get("description"), "output.value": act.get("output"),
        }, events=span_events, error=failed)
        spec = SPEC_BY_NAME.get(tool)
        b.span(f"{path}/tool", f"execute_tool {tool}", ctx, t + step_ns // 10, e - step_ns // 10, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.type": "function",
            "gen_ai.tool.call.id": f"{key}|{rd.number}:{aid}",
            "gen_ai.tool.description": spec.does if spec else None,
            "gen_ai.tool.call.arguments": {"input": decide.get("input", "")},
            "gen_ai.tool.call.result": act.get("output"),
            "error.type": "vetoed" if act.get("vetoed") else (None if act.get("success", True) else "tool_failed"),
            "openinference.span.kind": "TOOL", "tool.name": tool, "akh.agent": aid,
        }, error=failed)
        rd.end = max(rd.end, e)

    rd: _Round | None = None
    unit: dict[str, Any] | None = None
    events: list[dict[str, Any]] = []
    for rec in it:
        kind = rec.get("type")
        if kind in UNITS or kind == "round":
            if unit is not None and rd is not None:
                emit(unit, events, rd)
                yield from b.take()
            elif rd is not None:
                rd.events += events
            unit, events = None, []
        if kind == "round":
            if rd is not None:
                end = max(end, rd.end)
                yield from close_round(rd)
            rd = _Round(rec, _ns(start_ns, rec.get("clock")))
            rounds += 1
        elif kind in UNITS:
            if rd is None:
                raise InputError(f"a {kind} record before the first round record", field="type")
            unit = rec
        else:
            events.append(rec)
    if rd is not None:
        if unit is not None:
            emit(unit, events, rd)
            yield from b.take()
        else:
            rd.events += events
        end = max(end, rd.end)
        yield from close_round(rd)
    b.span("root", f"world {name}", None, start_ns, max(end, start_ns + 1), {
        "openinference.span.kind": "CHAIN", "gen_ai.conversation.id": key,
        "akh.world": name, "akh.seed": seed, "akh.run": run, "akh.branch": branch if run is not None else None,
        "akh.agents": [f"{a.get('id')} ({a.get('scenario')}, {a.get('decider')})" for a in agents] or None,
        "akh.rounds": rounds, "akh.steps": steps, "akh.minted": minted, "akh.balances": _balances(balances),
    }, kind=SpanKind.INTERNAL)
    yield from b.take()


__all__ = ["stream_world_spans"]
