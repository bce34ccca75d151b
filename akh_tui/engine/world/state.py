"""A world's whole state as plain JSON-able data, and loading it back (SPEC §13's time travel:
every agent, the ledger, the artifacts, escrow, rate windows, wake times and the clock are
restored exactly).

`world_state` is what a snapshot in the session store holds; `load_world_state` puts it into a
World freshly built from the same world file (its agents fresh from their scenarios, as a single
run's restore starts from a fresh agent: cycle/state.py). The world file itself is not copied:
the state holds what the run changed on top of it. Agents are saved one by one (`agent_state`),
so a store can keep an agent's state only when it changed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..cycle.state import core_state, kg_additions, restore, snapshot
from ..llm.decider import LLMDecider
from .artifacts import Artifact, Version, version_words
from .loop import ACTIONS_KEPT, FAILURES_KEPT, AgentLoop
from .mint import Bid
from .workflow import WorkflowDecider

if TYPE_CHECKING:
    from .world import World

WORLD_STATE_VERSION = 1


def world_state(w: "World", agents: bool = True) -> dict[str, Any]:
    """Everything of `w` a rewind needs; `agents=False` leaves the agents' own states out
    (`agent_state` gives each)."""
    out: dict[str, Any] = {
        "v": WORLD_STATE_VERSION,
        "clock": w.clock, "round": w.round, "order": w.order, "pos": w.pos,
        "ledger": {"balances": w.ledger.balances, "held": w.ledger.held, "minted": w.ledger.minted},
        "artifacts": [{"id": a.id, "owner": a.owner, "price": a.price, "tool": a.tool,
                       "versions": [[[list(t) for t in v.triples], v.text] for v in a.versions]}
                      for a in w.artifacts.by_id.values()],
        "bids": [[b.agent, b.amount, b.artifact, b.version] for b in w.bids],
        "loops": {aid: _loop_state(w.loops[aid]) for aid in w.ids},
        "mints": w.mints,
        # the world's bookkeeping of every agent that another agent's turn or the workbench
        # reads (who read which artifact, the rate windows): here, so that a rewind may load
        # each agent's own state on first touch (agents.py) and still show these for all
        # (in the world file's order, whatever order the agents came to them in)
        "book": {"read_versions": {aid: w.read_versions[aid] for aid in w.ids if w.read_versions.get(aid)},
                 "limits": {aid: q for aid, q in ((aid, _limits(w, aid)) for aid in w.ids) if q}},
    }
    if agents:
        out["agents"] = {aid: agent_state(w, aid) for aid in w.ids}
    return out


def agent_state(w: "World", aid: str, graph: bool = True) -> dict[str, Any]:
    """One agent's own state: its cycle state (graph additions, episodes, goals, psyche...) and
    its decider's (a workflow's step). `graph=False`: without what the agent only appends to
    (its graph additions, provenance entries, episodes and evidence: `None` for the provenance
    and the evidence), which the session store keeps apart (`agent_appends`)."""
    agent = w.agents[aid]
    snap = snapshot(agent) if graph else core_state(agent, provenance=False)
    # the cycle state, and what a model's next prompt reads that it does not hold (a single
    # run replays a model's turns from its records instead; a world replays them live)
    out: dict[str, Any] = {"agent": snap, "last_output": agent.last_output,
                           "recent_failures": list(agent.recent_failures),
                           # the world's bookkeeping that only this agent's turns change
                           "read_versions": w.read_versions.get(aid, {}),
                           "evidence": _evidence(w, aid) if graph else None,
                           "limits": _limits(w, aid)}
    inner = getattr(agent.decider, "inner", None)
    if isinstance(inner, WorkflowDecider):
        out["workflow"] = {"index": inner.index, "retries": inner.retries, "last": inner.last,
                           "models": {k: m.state() for k, m in inner.models.items() if isinstance(m, LLMDecider)}}
    elif isinstance(inner, LLMDecider):
        out["model"] = inner.state()  # its memory and a scripted provider's position: the next prompt's
    elif inner is not None and getattr(inner, "kind", None) == "soar":
        out["soar"] = inner.state()  # its inputs, replayed after init-soar (soar/decider.py)
    return out


def _limits(w: "World", aid: str) -> list[list[Any]]:
    return [[res, [list(u) for u in q]] for res, q in w.limits.uses.get(aid, {}).items() if q]


@dataclass(frozen=True)
class Appended:
    """How much of what an agent only appends to a saved part held (`agent_appends`): the
    next part may hold only what came after."""
    step: int
    symbols: int
    triples: int
    provenance: object | None  # the newest provenance entry then (the entry itself), None: none yet
    episodes: int  # the episodic memory's next id then
    evidence: dict[int, int]  # each goal's evidence triples then, how many


def appended(w: "World", aid: str, step: int) -> Appended:
    """What agent `aid` has appended to now, saved at `step`."""
    agent = w.agents[aid]
    return Appended(step, len(agent.kg.symbols), len(agent.kg.log), agent.provenance[-1] if agent.provenance else None,
                    agent.episodic.next_id, {goal: len(ev) for goal, ev in w.evidence.get(aid, {}).items()})


def agent_appends(w: "World", aid: str, since: Appended | None = None) -> dict[str, Any] | None:
    """What an agent only appends to, as the session store keeps it apart from the rest of
    its state: its graph additions, its provenance entries (the last PROVENANCE_KEEP are kept),
    its episodes (the newest `capacity`) and the world's evidence of its goals (each goal's
    triples, in the order learnt). All of them; or (`since`: what the agent's part
    saved before on the same branch held) only those added since, with `prev` naming that part
    (its step, symbols and triples). None when what was saved then cannot be found now (the
    provenance entry `since` names has left the kept ones): the caller saves all of them.
    An agent's graph, provenance and episodes only grow: saving them whole every time made a
    long world's steps dearer the longer it ran (the store joins a chain when it reads it,
    worldstore.py)."""
    agent = w.agents[aid]
    prov = agent.provenance
    em = agent.episodic
    if since is None:
        return {"prev": None} | kg_additions(agent) | {
            "provenance": [_provenance_row(r) for r in prov],
            "episodes": {"capacity": em.capacity, "episodes": [e.to_dict() for e in em.episodes.values()]},
            "evidence": _evidence(w, aid)}
    new_prov: list[list[Any]] = []
    if since.provenance is not None or prov:
        i = len(prov)
        while i > 0 and prov[i - 1] is not since.provenance:  # from the newest back: as many as were added
            i -= 1
        if since.provenance is not None and i == 0:
            return None
        new_prov = [_provenance_row(prov[j]) for j in range(i, len(prov))]
    new_eps: list[dict[str, Any]] = []
    for e in reversed(em.episodes.values()):  # the newest first, back to those saved
        if e.id < since.episodes:
            break
        new_eps.append(e.to_dict())
    new_eps.reverse()
    new_ev = [[goal, [list(t) for t in islice(ev, since.evidence.get(goal, 0), None)]]
              for goal, ev in w.evidence.get(aid, {}).items() if len(ev) != since.evidence.get(goal, -1)]
    return ({"prev": [since.step, since.symbols, since.triples]} | kg_additions(agent, since.symbols, since.triples)
            | {"provenance": new_prov, "episodes": new_eps, "evidence": new_ev})


def _evidence(w: "World", aid: str) -> list[list[Any]]:
    return [[goal, [list(t) for t in triples]] for goal, triples in w.evidence.get(aid, {}).items()]


def _provenance_row(r: Any) -> list[Any]:
    return [r.kind, r.cycle, r.goal, r.tool, r.detail]  # (as cycle/state.core_state writes it)


def _loop_state(loop: AgentLoop) -> dict[str, Any]:
    return {"state": loop.state, "errors": loop.errors, "delay_ms": loop.delay_ms, "wake_at": loop.wake_at,
            "crash_reason": loop.crash_reason, "failures": list(loop.failures),
            "actions": [list(a) for a in loop.actions], "turns": loop.turns,
            "scrip_at_evaluation": loop.scrip_at_evaluation}


def load_world_state(w: "World", state: dict[str, Any], agents: Mapping[str, dict[str, Any]] | None = None,
                     lazy: Mapping[str, Callable[[], dict[str, Any]]] | None = None) -> None:
    """Load `state` into `w`, a World just built from the same world file (nothing run yet).
    `agents`: each agent's state when `state` does not hold them; or `lazy`: for each agent,
    what reads its state, read and loaded when the agent is first touched (agents.py) if
    `state` holds the world's bookkeeping of every agent (saved since it has a `book`), else
    read and loaded now."""
    if state.get("v") != WORLD_STATE_VERSION:
        raise ValueError(f"unsupported world state version {state.get('v')!r} (expected {WORLD_STATE_VERSION})")
    w.clock, w.round, w.pos = state["clock"], state["round"], state["pos"]
    w.order = list(state["order"]) if state["order"] is not None else None
    led = state["ledger"]
    w.ledger.balances = dict(led["balances"])
    w.ledger.held, w.ledger.minted = led["held"], led["minted"]
    w.ledger.commit()
    arts = w.artifacts
    arts.clear()
    for d in state["artifacts"]:
        a = Artifact(d["id"], d["owner"], d["price"], d["tool"])
        for i, (triples, text) in enumerate(d["versions"], start=1):
            tt = tuple(tuple(t) for t in triples)
            a.versions.append(Version(i, tt, text, version_words(tt, text)))
        arts.add(a)
    arts.commit()
    w.bids = [Bid(*b) for b in state["bids"]]
    w.read_versions, w.evidence, w.limits.uses = {}, {}, {}  # each agent's, from its own state below
    for aid, d in state["loops"].items():
        loop = w.loops[aid]
        loop.state, loop.errors, loop.delay_ms, loop.wake_at = d["state"], d["errors"], d["delay_ms"], d["wake_at"]
        loop.crash_reason, loop.turns, loop.scrip_at_evaluation = d["crash_reason"], d["turns"], d["scrip_at_evaluation"]
        loop.failures = deque(d["failures"], maxlen=FAILURES_KEPT)
        loop.actions = deque(((t, ok) for t, ok in d["actions"]), maxlen=ACTIONS_KEPT)
    w.mints = list(state["mints"])
    book = state.get("book")
    if book is not None:
        for aid, read in book["read_versions"].items():
            w.read_versions[aid] = dict(read)
        for aid, q in book["limits"].items():
            _load_limits(w, aid, q)
    if lazy is not None:
        for aid, fetch in lazy.items():
            if book is None:  # a state saved before: the bookkeeping is in the agents' own states
                load_agent_state(w, aid, fetch())
            else:
                w.agents.defer(aid, fetch, partial(load_agent_state, w, aid, book=False))
        return
    for aid, d in (agents if agents is not None else state["agents"]).items():
        load_agent_state(w, aid, d, book=book is None)


def _load_limits(w: "World", aid: str, q: list[list[Any]]) -> None:
    if q:
        w.limits.uses[aid] = {res: deque((u[0], u[1]) for u in uses) for res, uses in q}


def load_agent_state(w: "World", aid: str, d: dict[str, Any], book: bool = True) -> None:
    """One agent's state (`agent_state`) into its fresh agent in `w`; `book=False`: its
    read versions and rate windows came with the world's state (`world_state`'s book)."""
    agent = w.agents.built(aid)  # (not w.agents[aid]: this is a lazy agent's loader, agents.py)
    state = d["agent"]
    add = state.get("kg_additions")
    if add is not None:  # added here in bulk (kg.add_saved), as restore would one by one
        kg = agent.kg
        if len(kg.symbols) != agent.base_symbols or len(kg.log) != agent.base_triples:
            raise ValueError("restore needs a fresh agent built from the scenario")
        for label, kind in add["symbols"]:
            kg.symbol(label, kind)
        kg.add_saved(add["triples"])
        state = {k: v for k, v in state.items() if k != "kg_additions"}
    restore(agent, state)  # (which checks the graph's size against the state's)
    if book and d["read_versions"]:
        w.read_versions[aid] = dict(d["read_versions"])
    if d["evidence"]:
        w.evidence[aid] = {goal: {(t[0], t[1], t[2]): None for t in triples} for goal, triples in d["evidence"]}
    if book:
        _load_limits(w, aid, d["limits"])
    agent.last_output = d["last_output"]
    agent.recent_failures.clear()
    agent.recent_failures.extend(d["recent_failures"])
    inner = getattr(agent.decider, "inner", None)
    wf = d.get("workflow")
    if isinstance(inner, WorkflowDecider) and wf is not None:
        inner.index, inner.retries, inner.last = wf["index"], wf["retries"], wf["last"]
        for k, m in wf.get("models", {}).items():
            model = inner.models.get(k)
            if isinstance(model, LLMDecider):
                model.load_state(m)
    elif isinstance(inner, LLMDecider) and d.get("model") is not None:
        inner.load_state(d["model"])
    elif inner is not None and getattr(inner, "kind", None) == "soar" and d.get("soar") is not None:
        inner.load_state(d["soar"])
