"""Time travel over a run: replay, rewind and fork, never mixed up.

- **replay** shows recorded cycles (their records) and makes no engine calls;
- **rewind** restores the exact engine state right after a past cycle: the nearest earlier
  snapshot, then the recorded user inputs and cycles up to it replayed (the engine is
  deterministic, so the result is the same state);
- **fork** rewinds, applies edits (psyche, archetype weights, goals, disabled tools) and goes on
  as a new branch, which records a `fork` event naming its parent and cycle.

History lives in the session store (`store/session.py`): snapshots every `every` cycles, so
restoring a cycle replays at most `every - 1` cycles (a fork's first cycles may add the
distance back to its parent's snapshot), and a branch shares its parent's history.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ..cycle.agent import Agent
from .basegraph import BaseGraph
from .commands import ForkEditError, ForkEdits, replay
from ..errors import BranchDamaged, StoreDamaged
from ..cycle.scoring import FACTORS
from ..store.session import SessionStore

Rebuild = Callable[[], Agent]  # a fresh agent of the run's scenario, no goals added


def rewind(store: SessionStore, branch: int, cycle: int, rebuild: Rebuild, graphs: BaseGraph | None = None) -> Agent:
    """A new agent in the exact state right after `cycle` of `branch` (before the user inputs
    that followed it): the nearest earlier snapshot, then the recorded inputs and cycles
    replayed (the engine is deterministic, so the state is the same). A model decider is not
    asked again: its recorded answers are replayed. `graphs`: the run's base graph to restore
    over (basegraph.py; `rebuild` then takes the graph it lends), else `rebuild()` builds one."""
    base_cycle, state = store.snapshot_before(branch, cycle)
    if graphs is None:
        fresh = rebuild()
    else:
        fresh = rebuild(graphs.lend(branch, state["kg_size"]))  # type: ignore[call-arg]
    agent = store.restore(branch, state, fresh)
    inputs = store.inputs(branch, base_cycle, cycle)
    live = agent.decider
    stored = {r["cycle"]: r for r in store.records(branch, base_cycle + 1, cycle)} if cycle > base_cycle else {}
    if live.kind != "utility" and cycle > base_cycle:
        from ..llm.decider import RecordedDecider

        recorded = RecordedDecider(stored)
        recorded.kind = live.kind
        agent.decider = recorded
    agent.replay_divergence = None
    try:
        for c in range(base_cycle, cycle):
            replay(agent, inputs.get(c, []))
            rec = agent.step()
            if agent.replay_divergence is None and rec is not None:
                agent.replay_divergence = divergence(stored.get(rec["cycle"]), rec)
    finally:
        agent.decider = live
    agent.drain_events()
    agent.episodic.new.clear()  # the replayed cycles' episodes are stored already
    return agent


def divergence(stored: dict | None, replayed: dict) -> str | None:
    """Words for a replayed cycle that acted differently from its record (a tool, a plugin's
    most likely, that is not deterministic), or None. Compares what the act produced: the
    tool, its output and the progress it made."""
    if stored is None:
        return None
    s, r = stored["act"], replayed["act"]
    tool = replayed["decide"]["tool"]
    if stored["decide"]["tool"] != tool:
        return (f"cycle {replayed['cycle']} replayed differently: {tool} was chosen, the record has "
                f"{stored['decide']['tool']} (a tool's offer is not deterministic)")
    if s["output"] != r["output"] or s["progress"] != r["progress"]:
        return (f"cycle {replayed['cycle']} replayed differently: tool {tool}'s output differed from its record "
                f"(recorded {s['output'][:80]!r} -> {s['progress']}, replayed {r['output'][:80]!r} -> {r['progress']}); "
                "a tool must be deterministic for replay")
    return None


def resume(store: SessionStore, rebuild: Rebuild, branch: int | None = None) -> Agent:
    """The newest state of a branch (default: the current one), which becomes current: its
    head if nothing was recorded after it, else the last recorded cycle rewound and the inputs
    that followed it applied (the process was killed)."""
    branch = store.current() if branch is None else branch
    store.branch_info(branch)
    try:
        head = store.head(branch)
        # what it restores from is checked before anything is appended: the snapshot and the
        # records after it (verify_tail), the head or the rewind as they are read; a writer
        # also refuses a branch `sessions check` marked damaged
        store.verify_tail(branch)
        if not store.readonly:
            store.refuse_marked(branch)
        if head is not None:
            agent = store.restore(branch, head[1], rebuild())
        else:
            last = store.last_cycle(branch)
            agent = rewind(store, branch, last, rebuild)
            replay(agent, store.inputs(branch, last, last + 1).get(last, []))
            agent.drain_events()
    except BranchDamaged:
        raise
    except StoreDamaged as exc:
        if store.readonly:
            raise
        raise store.refusal(branch, exc) from None
    store.adopt(branch, agent)
    return agent


def fork(store: SessionStore, branch: int, cycle: int, name: str, edits: dict | None,
         rebuild: Rebuild, graphs: BaseGraph | None = None) -> tuple[Agent, dict]:
    """Rewind `branch` to `cycle`, apply the edits and start branch `name` from there (it
    becomes the store's current branch). Returns the new branch's agent and its fork event
    (the agent keeps the graph `graphs` lent it: see `rewind`)."""
    name = name.strip()
    if not name:
        raise ForkEditError("name", "a branch needs a name")
    command = ForkEdits({k: v for k, v in (edits or {}).items() if v})
    agent = rewind(store, branch, cycle, rebuild, graphs)
    command.check(agent.tool_names, agent)  # a bad edit is refused before anything is written (plugin tools known)
    sizes = [len(agent.kg.symbols), len(agent.kg.log), agent.episodic.next_id]
    applied = command.apply(agent)
    parent = store.branch_info(branch)["name"]
    event = {"type": "fork", "v": 1, "cycle": cycle, "branch": name, "parent": parent, "edits": applied}
    store.fork(branch, cycle, name, agent, sizes, command.edits, applied, event)
    return agent, event


class Timeline:
    """One branch of a run in the session store, seen through the three modes."""

    def __init__(self, store: SessionStore, branch: int, rebuild: Rebuild) -> None:
        self.store = store
        self.branch = branch
        self.rebuild = rebuild

    @property
    def name(self) -> str:
        return self.store.branch_info(self.branch)["name"]

    @property
    def last_cycle(self) -> int:
        return self.store.last_cycle(self.branch)

    def record(self, cycle: int) -> dict:
        """The recorded cycle, as it was: no engine call."""
        rec = self.store.record(self.branch, cycle)
        if rec is None:
            raise KeyError(f"cycle {cycle} is not recorded (recorded: 1..{self.last_cycle})")
        return rec

    def records(self, start: int = 1, end: int | None = None) -> Iterator[dict]:
        return self.store.records(self.branch, start, end if end is not None else self.last_cycle)

    def rewind(self, cycle: int) -> Agent:
        return rewind(self.store, self.branch, cycle, self.rebuild)

    def fork(self, cycle: int, name: str, edits: dict | None = None) -> tuple[Agent, "Timeline", dict]:
        agent, event = fork(self.store, self.branch, cycle, name, edits, self.rebuild)
        return agent, Timeline(self.store, self.store.current(), self.rebuild), event


def _factor_diff(ca: dict, cb: dict, tools) -> dict:
    out = {}
    for tool in tools:
        diff = {f: (ca[tool][f], cb[tool][f]) for f in FACTORS + ("score",) if ca[tool][f] != cb[tool][f]}
        if diff:
            out[tool] = diff
    return out


def compare(a: Iterable[dict], b: Iterable[dict], a_last: dict | None = None, b_last: dict | None = None) -> dict:
    """Where two runs first chose differently (the tool each chose and the factors that
    differ for those tools), where their numbers first differed (possibly earlier, with the
    same choice), then the outcomes: goals completed and cycles taken. `a`, `b` are record
    streams, oldest first; give their last records to stop reading at the divergence."""
    first = None
    first_difference = None
    ia, ib = iter(a), iter(b)
    seen_a = seen_b = None
    for ra, rb in zip(ia, ib):
        seen_a, seen_b = ra, rb
        da, db = ra["decide"], rb["decide"]
        same_choice = (da["tool"], da["input"], ra["act"]["progress"]) == (db["tool"], db["input"], rb["act"]["progress"])
        if first_difference is None and (not same_choice or da["candidates"] != db["candidates"]):
            ca = {c["tool"]: c for c in da["candidates"]}
            cb = {c["tool"]: c for c in db["candidates"]}
            # the chosen tools first, then the others that were offered on either side
            tools = dict.fromkeys([da["tool"], db["tool"]] + [t for t in ca if ca[t]["offered"] or cb[t]["offered"]])
            first_difference = {"cycle": ra["cycle"], "same_choice": same_choice, "factors": _factor_diff(ca, cb, tools)}
        if not same_choice:
            ca = {c["tool"]: c for c in da["candidates"]}
            cb = {c["tool"]: c for c in db["candidates"]}
            first = {"cycle": ra["cycle"], "a": {"tool": da["tool"], "input": da["input"], "progress": ra["act"]["progress"]},
                     "b": {"tool": db["tool"], "input": db["input"], "progress": rb["act"]["progress"]},
                     "factors": _factor_diff(ca, cb, dict.fromkeys([da["tool"], db["tool"]]))}
            break
    if a_last is None:
        for seen_a in ia:
            pass
    if b_last is None:
        for seen_b in ib:
            pass

    def outcome(last: dict | None) -> dict:
        if last is None:
            return {"cycles": 0, "completed": [], "failed": []}
        goals = last["goals"]
        return {"cycles": last["cycle"],
                "completed": [g["description"] for g in goals if g["status"] == "completed"],
                "failed": [g["description"] for g in goals if g["status"] == "failed"]}

    return {"first_divergence": first, "first_difference": first_difference,
            "a": outcome(a_last or seen_a), "b": outcome(b_last or seen_b)}


def compare_branches(store: SessionStore, a: int, b: int) -> dict:
    """compare() of two stored branches (of one run or two), reading from where their
    histories part: their common ancestry is the same rows."""
    start = store.shared_cycles(a, b)
    return compare(store.records(a, start), store.records(b, start),
                   store.record(a, store.last_cycle(a)), store.record(b, store.last_cycle(b)))


def search(records: Iterable[dict], tool: str | None = None, veto: str | bool | None = None, goal: int | None = None,
           progress: str | None = None, text: str | None = None) -> list[int]:
    """Cycles matching every given filter: chosen tool, veto (True for any, or its name), focus
    goal id, progress, or text (case-insensitive) in the action's output."""
    out = []
    needle = text.lower() if text else None
    for r in records:
        act = r["act"]
        if tool is not None and r["decide"]["tool"] != tool:
            continue
        if veto is not None and not (act["vetoed"] and (veto is True or act["veto"] == veto)):
            continue
        if goal is not None and r["goal"]["id"] != goal:
            continue
        if progress is not None and act["progress"] != progress:
            continue
        if needle is not None and needle not in act["output"].lower():
            continue
        out.append(r["cycle"])
    return out

