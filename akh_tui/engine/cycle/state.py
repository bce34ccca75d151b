"""Snapshot and restore an agent's full state as plain JSON-able data.

The scenario's own files are not copied: a snapshot holds what the run added on top of them
(symbols, triples, derivations) plus everything mutable (goals, plans, memories, psyche,
counters). Restoring rebuilds the scenario's agent and replays the additions in order, so
symbol ids come out the same.
"""

from __future__ import annotations

from .agent import Agent, ProvenanceRecord
from ..errors import InputError
from ..goals.goal import Goal
from ..knowledge.memory import EpisodicMemory, WorkingMemory
from .plan import Plan
from ..psyche.model import Psyche
from ..knowledge.rules import parse_rule_files
from ..tools.hotload import PluginSource, make_decider, make_tools

STATE_VERSION = 2


def triple_row(kg, t) -> list:
    """One added triple as stored in snapshots and the session store: ids, confidence,
    provenance, cycle, and its derivation (rule, premise keys) if it was inferred."""
    d = kg.derivations.get(t.key)
    return [t.subject, t.predicate, t.object, t.confidence, t.provenance, t.cycle,
            [d[0], [list(k) for k in d[1]]] if d else None]


def kg_additions(agent: Agent, symbols_from: int | None = None, triples_from: int | None = None) -> dict:
    kg = agent.kg
    s0 = agent.base_symbols if symbols_from is None else symbols_from
    t0 = agent.base_triples if triples_from is None else triples_from
    return {
        "symbols": [[s.label, s.kind] for s in kg.symbols[s0:]],
        "triples": [triple_row(kg, t) for t in kg.log[t0:]],
    }


def apply_kg_additions(agent: Agent, add: dict) -> None:
    kg = agent.kg
    for label, kind in add["symbols"]:
        kg.symbol(label, kind)
    for s, p, o, conf, prov, cyc, deriv in add["triples"]:
        t = kg.add(s, p, o, conf, prov, cyc)
        if t is not None and deriv:
            kg.derivations[t.key] = (deriv[0], tuple(tuple(k) for k in deriv[1]))


def core_state(agent: Agent, provenance: bool = True, goal_seen: bool = True) -> dict:
    """Everything but the graph additions and episodes (those the session store appends).
    `provenance=False` leaves the provenance list out (None), `goal_seen=False` each goal's
    seen symbols (None): a caller that stores them another way need not build them."""
    return {
        "v": STATE_VERSION,
        "cycle": agent.cycle,
        "seed": agent.seed,
        "next_goal_id": agent.next_goal_id,
        "goals": [g.to_dict(seen=goal_seen) for g in agent.goals.values()],
        "plans": {str(k): p.to_dict() for k, p in agent.plans.items()},
        "wm": agent.wm.to_dict(),
        "tool_stats": {k: list(v) for k, v in agent.tool_stats.items()},
        # plain values, not TOML: tomlkit would cost milliseconds on every saved cycle
        "psyche": _psyche_state(agent.psyche),
        "pending_psyche": _psyche_state(agent.pending_psyche) if agent.pending_psyche else None,
        "rules_cursor": agent.rules.cursor,
        # a fork's disabled tools are the branch's state: a resumed branch keeps them
        "disabled_tools": list(agent.config.disabled_tools),
        "rules_join": agent.rules.suspended(),  # a join cut by its work budget resumes exactly
        "provenance": [[r.kind, r.cycle, r.goal, r.tool, r.detail] for r in agent.provenance] if provenance else None,
        "kg_size": [len(agent.kg.symbols), len(agent.kg.log)],
        "episodes_next_id": agent.episodic.next_id,
        "last_record": agent.last_record,
    } | _with_reloaded_rules({}, agent)


def _with_reloaded_rules(state: dict, agent: Agent) -> dict:
    """The reloaded rules' text, the goals a reload manages and the reloaded plugins' source
    (issue 28 §2), only when there are some: a snapshot of a run that never reloaded keeps its
    bytes."""
    if agent.rules_files is not None:
        state["rules_files"] = agent.rules_files
    if agent.pending_rules is not None:
        state["pending_rules"] = agent.pending_rules[1]
    if agent.goals_reloaded and agent.scenario_goals is not None:
        state["scenario_goals"] = [[d, gid, c, p] for d, (gid, c, p) in agent.scenario_goals.items()]
    if agent.plugin_sources:
        state["plugin_sources"] = list(agent.plugin_sources.values())
    if agent.pending_plugins:
        state["pending_plugins"] = [source for _, source in agent.pending_plugins.values()]
    if agent.decider_source is not None:
        state["decider_source"] = agent.decider_source
    if agent.pending_decider is not None:
        state["pending_decider"] = agent.pending_decider[1]
    return state


def _psyche_state(p: Psyche) -> dict:
    return {"values": p.to_dict(), "document": p._document, "source": p.source}


def _psyche_from(d: dict) -> Psyche:
    p = Psyche.from_dict(d["values"], d["document"])
    p.source = d["source"]
    return p


def snapshot(agent: Agent) -> dict:
    state = core_state(agent)
    state["kg_additions"] = kg_additions(agent)
    state["episodes"] = agent.episodic.to_dict()
    return state


def restore(agent: Agent, state: dict, episodes: EpisodicMemory | None = None) -> Agent:
    """Load `state` into `agent`, a fresh agent built from the same scenario (no goals added)."""
    if state.get("v") != STATE_VERSION:
        raise InputError(f"unsupported state version {state.get('v')!r} (expected {STATE_VERSION})", field="v")
    if "kg_additions" in state:
        if len(agent.kg.symbols) != agent.base_symbols or len(agent.kg.log) != agent.base_triples:
            raise ValueError("restore needs a fresh agent built from the scenario")
        apply_kg_additions(agent, state["kg_additions"])
    n_sym, n_tri = state["kg_size"]
    if len(agent.kg.symbols) != n_sym or len(agent.kg.log) != n_tri:
        raise InputError(
            f"the scenario's graph files changed since this session was saved "
            f"(expected {n_sym} symbols and {n_tri} triples, rebuilt {len(agent.kg.symbols)} and {len(agent.kg.log)})",
            field="kg",
        )
    agent.cycle = state["cycle"]
    agent.next_goal_id = state["next_goal_id"]
    agent.goals = {d["id"]: Goal.from_dict(d) for d in state["goals"]}
    agent.plans = {int(k): Plan.from_dict(v) for k, v in state["plans"].items()}
    agent.wm = WorkingMemory.from_dict(state["wm"])
    agent.tool_stats = {k: list(v) for k, v in state["tool_stats"].items()}
    agent.psyche = _psyche_from(state["psyche"])
    agent.pending_psyche = _psyche_from(state["pending_psyche"]) if state.get("pending_psyche") else None
    if state.get("rules_files") is not None:  # rules reloaded before this state: their recorded text
        agent.use_rules(parse_rule_files(state["rules_files"]), state["rules_files"])
    if state.get("pending_rules") is not None:
        agent.reload_rules(parse_rule_files(state["pending_rules"]), state["pending_rules"])
    agent.rules.resume(state["rules_cursor"], state.get("rules_join"))
    if state.get("scenario_goals") is not None:  # goals reloaded before this state
        agent.scenario_goals = {d: (gid, c, p) for d, gid, c, p in state["scenario_goals"]}
        agent.goals_reloaded = True
    for source in state.get("plugin_sources") or ():  # made again from the recorded text, if still trusted
        src = PluginSource.from_payload(source)
        agent.use_plugin(src.ref, make_tools(src, replaying=True), source)
    for source in state.get("pending_plugins") or ():
        src = PluginSource.from_payload(source)
        agent.reload_plugin(src.ref, make_tools(src, replaying=True), source)
    if state.get("decider_source") is not None:  # the decider reloaded before this state
        agent.decider = make_decider(PluginSource.from_payload(state["decider_source"]), replaying=True)
        agent.decider_source = state["decider_source"]
    if state.get("pending_decider") is not None:
        src = PluginSource.from_payload(state["pending_decider"])
        agent.pending_decider = (make_decider(src, replaying=True), state["pending_decider"])
    if "disabled_tools" in state:  # states saved before 0.2 hold none: the scenario's list stays
        agent.config.disabled_tools = list(state["disabled_tools"])
    agent.provenance.clear()
    agent.provenance.extend(ProvenanceRecord(*r) for r in state["provenance"])
    if episodes is not None:
        agent.episodic = episodes
    elif "episodes" in state:
        agent.episodic = EpisodicMemory.from_dict(state["episodes"])
    agent.episodic.next_id = state["episodes_next_id"]
    agent.last_record = state.get("last_record")
    agent._orient_cache.clear()
    agent._goal_symbols.clear()
    return agent
