"""Time travel over a run: replay, rewind and fork, never mixed up.

- **replay** shows recorded cycles (their records) and makes no engine calls;
- **rewind** restores the exact engine state right after a past cycle: the nearest earlier
  snapshot, then the recorded user inputs and cycles up to it replayed (the engine is
  deterministic, so the result is the same state);
- **fork** rewinds, applies edits (psyche, archetype weights, goals, disabled tools) and goes on
  as a new branch, which records a `fork` event naming its parent and cycle.

Snapshots are taken every `every` cycles, so restoring any cycle replays at most `every - 1`
cycles, and history costs one snapshot per `every` cycles plus the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .agent import Agent
from .psyche import ARCHETYPES, Psyche
from .scoring import FACTORS
from .state import restore, snapshot
from .tools import TOOL_NAMES


@dataclass
class Timeline:
    rebuild: Callable[[], Agent]  # a fresh agent of the run's scenario, no goals added
    every: int = 25
    name: str = "main"
    parent: tuple[str, int] | None = None  # (branch, cycle) this one was forked from
    records: dict[int, dict] = field(default_factory=dict)
    snapshots: dict[int, dict] = field(default_factory=dict)
    inputs: dict[int, list[tuple[str, Any]]] = field(default_factory=dict)  # applied after cycle c

    # ---- recording ---------------------------------------------------------------------------
    def start(self, agent: Agent) -> None:
        self.snapshots[agent.cycle] = snapshot(agent)

    def cycle(self, agent: Agent, record: dict) -> None:
        self.records[record["cycle"]] = record
        if record["cycle"] % self.every == 0:
            self.snapshots[record["cycle"]] = snapshot(agent)

    def user_input(self, cycle: int, kind: str, payload: Any) -> None:
        """A user action taken after `cycle` (and before the next): replayed on rewind."""
        self.inputs.setdefault(cycle, []).append((kind, payload))

    @property
    def last_cycle(self) -> int:
        return max(self.records, default=min(self.snapshots, default=0))

    # ---- replay ------------------------------------------------------------------------------
    def record(self, cycle: int) -> dict:
        """The recorded cycle, as it was: no engine call."""
        if cycle not in self.records:
            raise KeyError(f"cycle {cycle} is not recorded (recorded: 1..{self.last_cycle})")
        return self.records[cycle]

    # ---- rewind ------------------------------------------------------------------------------
    def rewind(self, cycle: int) -> Agent:
        """A new agent in the exact state right after `cycle` (before later user inputs)."""
        if cycle < 0 or cycle > self.last_cycle:
            raise KeyError(f"cycle {cycle} is outside the run (0..{self.last_cycle})")
        base = max(c for c in self.snapshots if c <= cycle)
        agent = restore(self.rebuild(), self.snapshots[base])
        for c in range(base, cycle):
            apply_inputs(agent, self.inputs.get(c, []))
            agent.step()
        agent.drain_events()
        return agent

    # ---- fork --------------------------------------------------------------------------------
    def fork(self, cycle: int, name: str, edits: dict | None = None) -> tuple[Agent, "Timeline", dict]:
        """Rewind to `cycle`, apply `edits`, and start branch `name` from there.

        edits: {"archetypes": {"explorer": 0.9}, "psyche": Psyche | TOML text,
                "goals": ["description", ...], "disable_tools": ["kg_query", ...]}"""
        agent = self.rewind(cycle)
        edits = edits or {}
        applied = apply_edits(agent, edits)
        branch = Timeline(self.rebuild, self.every, name, (self.name, cycle))
        branch.records = {c: r for c, r in self.records.items() if c <= cycle}
        branch.snapshots = {c: s for c, s in self.snapshots.items() if c <= cycle}
        branch.inputs = {c: list(v) for c, v in self.inputs.items() if c < cycle}
        if applied:
            branch.user_input(cycle, "edits", edits)
        event = {"type": "fork", "v": 1, "cycle": cycle, "branch": name, "parent": self.name, "edits": applied}
        return agent, branch, event


def apply_inputs(agent: Agent, inputs: list[tuple[str, Any]]) -> None:
    for kind, payload in inputs:
        if kind == "goal":
            agent.add_goal(*payload)
        elif kind == "psyche":
            agent.replace_psyche(Psyche.from_toml(payload))
        elif kind == "edits":
            apply_edits(agent, payload)


def apply_edits(agent: Agent, edits: dict) -> list[str]:
    """Apply a fork's edits; returns what changed, in words, for the fork event."""
    done: list[str] = []
    if "psyche" in edits:
        p = edits["psyche"]
        agent.psyche = Psyche.from_toml(p) if isinstance(p, str) else p.copy()
        done.append("psyche replaced")
    for name, weight in (edits.get("archetypes") or {}).items():
        if name not in ARCHETYPES or not isinstance(weight, (int, float)) or not 0 <= weight <= 1:
            raise ValueError(f"archetype {name}={weight!r}: name one of {ARCHETYPES}, weight in [0, 1]")
        agent.psyche.archetypes[name] = float(weight)
        done.append(f"{name} weight {weight}")
    for desc in edits.get("goals") or []:
        g = agent.add_goal(desc, emit=False)
        done.append(f"goal #{g.id} added")
    for tool in edits.get("disable_tools") or []:
        if tool not in TOOL_NAMES:
            raise ValueError(f"unknown tool {tool!r}")
        if tool not in agent.config.disabled_tools:
            agent.config.disabled_tools = [*agent.config.disabled_tools, tool]
        done.append(f"{tool} disabled")
    agent.drain_events()
    return done


def compare(a: list[dict], b: list[dict]) -> dict:
    """Where two runs first differ (the tool each chose and the factors that differ), then the
    outcomes: goals completed and cycles taken."""
    first = None
    for ra, rb in zip(a, b):
        da, db = ra["decide"], rb["decide"]
        same_choice = (da["tool"], da["input"], ra["act"]["progress"]) == (db["tool"], db["input"], rb["act"]["progress"])
        if not same_choice or da["candidates"] != db["candidates"]:
            ca = {c["tool"]: c for c in da["candidates"]}
            cb = {c["tool"]: c for c in db["candidates"]}
            factors = {}
            for tool in dict.fromkeys([da["tool"], db["tool"]]):
                diff = {f: (ca[tool][f], cb[tool][f]) for f in FACTORS + ("score",) if ca[tool][f] != cb[tool][f]}
                if diff:
                    factors[tool] = diff
            first = {"cycle": ra["cycle"], "a": {"tool": da["tool"], "input": da["input"], "progress": ra["act"]["progress"]},
                     "b": {"tool": db["tool"], "input": db["input"], "progress": rb["act"]["progress"]},
                     "factors": factors}
            break

    def outcome(recs: list[dict]) -> dict:
        if not recs:
            return {"cycles": 0, "completed": [], "failed": []}
        goals = recs[-1]["goals"]
        return {"cycles": recs[-1]["cycle"],
                "completed": [g["description"] for g in goals if g["status"] == "completed"],
                "failed": [g["description"] for g in goals if g["status"] == "failed"]}

    return {"first_divergence": first, "a": outcome(a), "b": outcome(b)}


def search(records: list[dict], tool: str | None = None, veto: str | bool | None = None, goal: int | None = None,
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
