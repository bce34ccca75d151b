"""A Soar agent as a world agent's decider (issue 30, SPEC §13): the world keeps the agent's
shell (its ledger account, its six actions, its trace) and asks the decider each cycle which
offered action to take; here Soar answers. Its input link carries the observation — the cycle,
the goal, every offered action with its input and the world's score, and what it sees of the
world (`world/observe.py`: round, clock, balances, artifacts, pending bid, rounds to the mint,
rate headroom) with its last action's result — and its output link the action it takes
(`soar/world_agent.py`). The decisions of its turn (operators, values, chances, proposing
rules) are kept in `last` for the world's cycle record (`decide["soar"]`), which `agent why
--agent` explains in Soar's terms (explain/soar.py). A world file names it as the agent's decider:
`decider = "akh_tui.engine.soar.decider:trader"` (an installed module: nothing local imported).

A command naming no offered action is an error the world turns into a failed step (its
WorldDecider), never a crashed world."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..paths import bundled_data_dir
from ..tools.registry import PluginError
from ..world.observe import observation
from .adapter import SoarArchitecture, SoarSnapshot
from .source import read_soar
from .world_agent import SoarWorldAgent


class SoarDecider:
    kind = "soar"

    def __init__(self, productions: Path, seed: int = 1) -> None:
        self.arch = SoarArchitecture(read_soar(productions), seed, "world")
        self.world_agent: SoarWorldAgent | None = None
        self.last: dict[str, Any] | None = None  # this turn's decisions, for the world's cycle record
        self.last_result: dict[str, Any] | None = None  # what its last action did (learn)

    def choose(self, agent: Any, focus: Any, ctx: Any, candidates: list[Any], utility: Any) -> tuple[Any, None]:
        offered = [c for c in candidates if c.offered]
        if self.world_agent is None:  # the world's tools, known at the first choice
            self.world_agent = SoarWorldAgent(self.arch, [c.tool for c in candidates])
        obs = {"cycle": int(agent.cycle), "goal": str(focus.description),
               "offer": [{"action": c.tool, "input": str(c.input) or "none", "score": round(float(c.score), 4)}
                         for c in offered]}
        obs.update(_world_view(agent))
        if self.last_result is not None:
            obs["last"] = self.last_result
        self.last = None
        cmd = self.world_agent.turn(obs)
        self.last = {"decisions": self.world_agent.decisions}
        if cmd is None:
            raise PluginError(f"the Soar agent gave no action in {self.world_agent.most} decisions")
        for c in offered:
            if c.tool == cmd["name"] and (str(c.input) or "none") == cmd.get("input", "none"):
                return c, None
        raise PluginError(f"the Soar agent asked for {cmd['name']}({cmd.get('input')}), which is not offered")

    def state(self) -> dict[str, Any]:
        """What a world's saved state keeps of this agent (world/state.py): Soar's memory cannot
        be saved whole, so the phases run and every input given (observations, selections);
        load_state replays them after init-soar with the same seed (adapter.restore)."""
        snap = self.arch.snapshot()
        return {"phases": snap.phases, "inputs": [[at, kind, payload] for at, kind, payload in snap.inputs],
                "last_result": self.last_result,
                "actions": list(self.world_agent.actions) if self.world_agent is not None else None}

    def load_state(self, state: dict[str, Any]) -> None:
        self.arch.restore(SoarSnapshot(int(state["phases"]), tuple((int(at), str(kind), payload)
                                                                   for at, kind, payload in state["inputs"])))
        self.last_result = state.get("last_result")
        actions = state.get("actions")
        self.world_agent = SoarWorldAgent(self.arch, actions) if actions is not None else None

    def learn(self, agent: Any, focus: Any, tool: str, act: dict[str, Any]) -> None:
        self.last_result = {"action": tool, "success": bool(act.get("success")),
                            "progress": str(act.get("progress", ""))}

    def model_memory(self, limit: int) -> str | None:
        return None


def _world_view(agent: Any) -> dict[str, Any]:
    """What the agent sees of its world, found through its world actions (each holds the world
    and its agent's id); {} for an agent in no world (a test's stand-in)."""
    entries = getattr(getattr(agent, "tools", None), "entries", {})
    action = getattr(entries.get("noop"), "tool", None)
    world, aid = getattr(action, "world", None), getattr(action, "agent_id", None)
    if world is None or aid is None:
        return {}
    return observation(world, aid)


def trader() -> SoarDecider:
    """The bundled world agent (data/soar/world-trader.soar)."""
    return SoarDecider(bundled_data_dir() / "soar" / "world-trader.soar", seed=1)
