"""The world's six actions as tools of the tool interface (SPEC §13, toolapi.py): noop,
read_artifact, write_artifact, invoke_artifact, transfer and bid. They are scored by §6 like
any tool, with the declarations below, and are offered only in a world.

Unlike a plugin's tools (which hold no run state), an action object is made per agent and per
world: it acts on the shared world (ledger, artifacts, bids) on behalf of its agent, so it
holds both. It still sees the agent only through the ToolContext and the world's narrow
`WorldPort` below.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from ..knowledge.kg import is_metadata_label
from ..text import STOP_WORDS, normalised_words
from ..tools.api import Offer, Tool, ToolContext, ToolResult
from ..tools.registry import declare
from ..tools.specs import ToolSpec
from .artifacts import Artifact, Artifacts
from .ledger import Ledger, Refusal
from .mint import Bid

if TYPE_CHECKING:
    from ..cycle.agent import Agent
    from ..goals.context import GoalContext
    from ..goals.goal import Goal


ACTION_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("noop", "guardian", (), "safe", "none", ("wait", "nothing", "idle", "pause", "rest"),
             "does nothing this turn", base_values=(0.05,), base_rule="0.05, always offered"),
    ToolSpec("read_artifact", "explorer", ("world_read", "scrip"), "safe", "artifact id",
             ("read", "artifact", "buy", "learn", "document"),
             "pays an artifact's price to its owner; its triples enter the graph",
             base_values=(0.6,), base_rule="0.6 when an affordable artifact not yet read shares a word with the goal"),
    ToolSpec("write_artifact", "sage", ("world_write",), "cautious", "<agent>-g<goal>",
             ("write", "publish", "share", "artifact", "record"),
             "publishes the goal's evidence triples as an artifact (price 1)",
             base_values=(0.3,), base_rule="0.3 when the goal has evidence triples in no artifact of the agent's"),
    ToolSpec("invoke_artifact", "explorer", ("world_read", "scrip"), "cautious", "artifact id, goal symbols",
             ("invoke", "use", "artifact", "tool", "borrow"),
             "runs an artifact's tool for the agent; paid only if it runs",
             base_values=(0.5,), base_rule="0.5 when an affordable artifact declares a tool the agent lacks"),
    ToolSpec("transfer", "healer", ("scrip",), "cautious", "to, amount >= 1",
             ("transfer", "pay", "give", "scrip", "send"),
             "pays scrip to another agent",
             base_rule="never offered by the table (a model, workflow or plugin may choose it)"),
    ToolSpec("bid", "guardian", ("scrip",), "cautious", "amount on an own artifact",
             ("bid", "mint", "auction", "offer", "scrip"),
             "bids scrip (to escrow) in the next mint auction with an own artifact",
             base_values=(0.2,), base_rule="0.2 when a mint is coming, the agent owns an artifact and has no pending bid"),
)
ACTION_NAMES = tuple(s.name for s in ACTION_SPECS)
declare(ACTION_SPECS)  # so a recorded world cycle's why-not knows their archetypes and bases


class WorldPort(Protocol):
    """What actions may read and change in the world (world.py's World implements it)."""

    ledger: Ledger
    artifacts: Artifacts
    mint_every: int
    read_versions: dict[str, dict[str, int]]  # agent -> artifact -> the version it read
    evidence: dict[str, dict[int, dict[tuple[str, str, str], None]]]  # agent -> goal -> its evidence triples
    bids: list[Bid]

    def agent(self, agent_id: str) -> "Agent": ...

    def pay(self, frm: str, to: str, amount: int, why: str) -> None: ...

    def published(self, artifact: Artifact) -> None: ...


class DeciderFailed:
    """The input a failed decider leaves for the turn: `noop` raises it, so the turn is a failed
    step (SPEC §13) recorded like any other, never a crashed world."""

    def __init__(self, why: str) -> None:
        self.why = why


def _pair(arg: object) -> tuple[str, int]:
    """An offer's resolved input (artifact id, version or amount), checked: a decider may
    hand run() an input the offer did not make."""
    if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[0], str) and isinstance(arg[1], int):
        return arg[0], arg[1]
    raise Refusal(f"expected an artifact and a number, got {arg!r}")


def goal_words(g: "Goal") -> frozenset[str]:
    return _goal_words(g.description, g.criteria)


@lru_cache(maxsize=1024)
def _goal_words(description: str, criteria: str) -> frozenset[str]:
    """(Kept: read_artifact's offer asks for the focus goal's words every turn of every agent.)"""
    text = description + " " + criteria.replace("(", " ").replace(")", " ")
    return frozenset(w for w in normalised_words(text) if w not in STOP_WORDS)


class WorldAction(Tool):
    def __init__(self, spec: ToolSpec, world: WorldPort, agent_id: str) -> None:
        self.spec = spec
        self.world = world
        self.agent_id = agent_id

    def affordable(self, a: Artifact) -> bool:
        return a.owner == self.agent_id or self.world.ledger.balance(self.agent_id) >= a.price


class Noop(WorldAction):
    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        return Offer(True, 0.05, "")

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        if isinstance(arg, DeciderFailed):
            raise RuntimeError(arg.why)
        return ToolResult("nothing done this turn")


class ReadArtifact(WorldAction):
    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        words = goal_words(ctx.goal)
        best: tuple[int, str] | None = None
        read = self.world.read_versions.get(self.agent_id, {})
        counts = self.world.artifacts.sharing(words)  # only the artifacts sharing a word: no walk over all
        for aid in sorted(counts):
            a = self.world.artifacts.by_id[aid]
            if read.get(a.id) == a.version or not self.affordable(a):
                continue
            shared = counts[aid]
            if best is None or shared > best[0]:
                best = (shared, a.id)  # by id: the first of the most shared wins
        if best is None:
            return Offer(False, why_not="no affordable artifact, unread at its version, shares a word with the goal")
        a = self.world.artifacts.by_id[best[1]]
        return Offer(True, 0.6, f"{a.id}@{a.version}", arg=(a.id, a.version))

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        aid, version = _pair(arg)
        a = self.world.artifacts.get(aid)
        if a is None or a.version != version:
            raise Refusal(f"artifact {aid}@{version} is not the current version")
        price = 0 if a.owner == self.agent_id else a.price
        if price:
            self.world.pay(self.agent_id, a.owner, price, f"read {aid}@{version}")
        self.world.read_versions.setdefault(self.agent_id, {})[aid] = version
        kg, prov = tc.kg, f"artifact:{aid}@{version}"
        triples, dropped, new = [], 0, 0
        for s, p, o in a.current.triples:
            if is_metadata_label(s) or is_metadata_label(p) or is_metadata_label(o):
                dropped += 1  # an artifact may not write the reader's bookkeeping
                continue
            t = kg.add(s, p, o, provenance=prov, cycle=tc.cycle)
            if t is None:
                t = kg.get(kg.symbol(s), kg.symbol(p, "relation"), kg.symbol(o))
            else:
                new += 1
            if t is not None:
                triples.append(t)
        text = a.current.text or ""
        out = (f"read {aid}@{version} from {a.owner} for {price}: {len(triples)} triple(s), {new} new"
               + (f", {dropped} metadata triple(s) dropped" if dropped else "") + (f"; text: {text[:200]}" if text else ""))
        return ToolResult(out, triples=triples, evidence=text)


class WriteArtifact(WorldAction):
    def unpublished(self, g: "Goal") -> tuple[tuple[str, str, str], ...]:
        ev = self.world.evidence.get(self.agent_id, {}).get(g.id, {})
        held = self._held()
        return tuple(t for t in ev if t not in held)

    def _held(self) -> set[tuple[str, str, str]]:
        held: set[tuple[str, str, str]] = set()
        for a in self.world.artifacts.owned_by(self.agent_id):
            held.update(a.current.triples)
        return held

    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        ev = self.world.evidence.get(self.agent_id, {}).get(ctx.goal.id)
        if not ev or ev.keys() <= self._held():  # (any unpublished: a set test, not a walk in Python)
            return Offer(False, why_not="the goal has no evidence triples outside the agent's artifacts")
        aid = f"{self.agent_id}-g{ctx.goal.id}"
        return Offer(True, 0.3, aid, arg=aid)

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        aid = str(arg)
        triples = tuple(self.world.evidence.get(self.agent_id, {}).get(ctx.goal.id, {}))
        try:
            a = self.world.artifacts.write(aid, self.agent_id, triples, None, 1)
        except ValueError as exc:
            raise Refusal(str(exc)) from None
        self.world.published(a)
        return ToolResult(f"wrote {aid}@{a.version}: {len(triples)} triple(s), price {a.price}")


_NO_TOOL = "no affordable artifact declares a tool the agent lacks"


class InvokeArtifact(WorldAction):
    def lacks(self, tool: str) -> bool:
        agent = self.world.agent(self.agent_id)
        return tool not in agent.tools.entries or tool in agent.config.disabled_tools

    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        arts = self.world.artifacts
        if not arts.with_tool:
            return Offer(False, why_not=_NO_TOOL)
        from ..tools.builtins import TOOLS

        caps = tc.config.capabilities
        for a in (arts.by_id[i] for i in sorted(arts.with_tool)):
            if a.tool is None or not self.lacks(a.tool) or not self.affordable(a):
                continue
            # an artifact is no way around a gate: its tool's capabilities must be on for the invoker
            if not all(caps.get(c, False) for c in TOOLS[a.tool].spec.capabilities):
                continue
            symbols = ", ".join(tc.kg.label(s) for s in ctx.symbols[:5])
            return Offer(True, 0.5, f"{a.id}@{a.version} ({a.tool}): {symbols}", arg=(a.id, a.version))
        return Offer(False, why_not=_NO_TOOL)

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        from ..tools.builtins import TOOLS

        aid, version = _pair(arg)
        a = self.world.artifacts.get(aid)
        if a is None or a.version != version:
            raise Refusal(f"artifact {aid}@{version} is not the current version")
        if a.tool is None:
            raise Refusal(f"artifact {aid} declares no tool")
        tool = TOOLS[a.tool]
        o = tool.offer(tc, ctx)
        if not o.offered:
            raise Refusal(f"{a.tool} has nothing to do for this goal: {o.why_not}")
        result = tool.run(tc, ctx, o.arg)  # raises: a failed turn, and nothing paid
        price = 0 if a.owner == self.agent_id else a.price
        if price:
            self.world.pay(self.agent_id, a.owner, price, f"invoke {aid}@{version} ({a.tool})")
        result.output = f"invoked {aid}@{version} ({a.tool}) for {price}: {result.output}"
        return result


class Transfer(WorldAction):
    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        return Offer(False, why_not="never offered by the utility table (a model, workflow or plugin may choose it)")

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        to, amount = parse_transfer(arg)
        if to == self.agent_id:
            raise Refusal("an agent cannot transfer to itself")
        self.world.agent(to)  # an agent id, never an account such as escrow
        self.world.pay(self.agent_id, to, amount, f"transfer from {self.agent_id}")
        return ToolResult(f"transferred {amount} to {to}")


def parse_transfer(arg: Any) -> tuple[str, int]:
    """`(to, amount)` or the text "to amount"."""
    if isinstance(arg, str):
        parts = arg.split()
        if len(parts) == 2 and parts[1].isdigit():
            return parts[0], int(parts[1])
        raise Refusal(f"transfer input must be 'to amount', got {arg!r}")
    if isinstance(arg, tuple) and len(arg) == 2 and isinstance(arg[0], str) and isinstance(arg[1], int):
        return arg[0], arg[1]
    raise Refusal(f"transfer input must be 'to amount', got {arg!r}")


class PlaceBid(WorldAction):
    def offer(self, tc: ToolContext, ctx: "GoalContext") -> Offer:
        w = self.world
        if w.mint_every <= 0:
            return Offer(False, why_not="this world has no mint")
        own = w.artifacts.owned_by(self.agent_id)
        if not own:
            return Offer(False, why_not="the agent owns no artifact to bid with")
        if any(b.agent == self.agent_id for b in w.bids):
            return Offer(False, why_not="a bid of the agent's is pending")
        if w.ledger.balance(self.agent_id) < 1:
            return Offer(False, why_not="no scrip to bid")
        # the own artifact the default scorer would rate highest, then the lowest id
        a = min(own, key=lambda x: (-w.artifacts.unique_triples(x.id, x.version), x.id))
        return Offer(True, 0.2, f"1 on {a.id}@{a.version}", arg=(a.id, 1))

    def run(self, tc: ToolContext, ctx: "GoalContext", arg: object) -> ToolResult:
        aid, amount = _pair(arg)
        w = self.world
        a = w.artifacts.get(aid)
        if a is None or a.owner != self.agent_id:
            raise Refusal(f"a bid needs an artifact of the agent's own, not {aid!r}")
        if not isinstance(amount, int) or amount < 1:
            raise Refusal(f"a bid is an integer >= 1, got {amount!r}")
        old = next((b for b in w.bids if b.agent == self.agent_id), None)
        if old is not None:  # a new bid replaces the pending one, which is refunded
            w.pay("escrow", self.agent_id, old.amount, "bid replaced: the old one refunded")
            w.bids.remove(old)
        w.pay(self.agent_id, "escrow", amount, f"bid on {aid}@{a.version}")
        w.bids.append(Bid(self.agent_id, amount, aid, a.version))
        return ToolResult(f"bid {amount} on {aid}@{a.version}")


_CLASSES: dict[str, type[WorldAction]] = {
    "noop": Noop, "read_artifact": ReadArtifact, "write_artifact": WriteArtifact,
    "invoke_artifact": InvokeArtifact, "transfer": Transfer, "bid": PlaceBid,
}


def make_actions(world: WorldPort, agent_id: str) -> list[WorldAction]:
    """The six actions bound to one agent of one world, in the table's order."""
    return [_CLASSES[s.name](s, world, agent_id) for s in ACTION_SPECS]
