"""The water-jug puzzle for the OODA engine (issue 30: the same question, two architectures):
three tools, fill_jug, empty_jug and pour_jug, over a 5- and a 3-gallon jug, so the bundled
`water-jug-ooda` scenario asks our agent what the Soar agent of `water-jug` solves.

The jugs' state lives in the graph: each move adds `move-N jug5-holds A` and `move-N jug3-holds
B` (the scenario's graph starts them at 0), so a rewind, a fork and a replay see the state the
recorded moves left, and the goal `(?m jug5-holds 4)` is met by the move that leaves 4 in the
5-gallon jug. Each tool offers the one move of its kind that is legal and does not undo the last
move (as the Soar agent's rejects); its base says how much it is worth (pouring most, as the Soar
agent's numeric preferences), so the utility table picks as a person would explain it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .api import Offer, PlanRole, Tool, ToolContext, ToolResult
from .specs import ToolSpec

if TYPE_CHECKING:
    from ..goals.context import GoalContext

VOLUME = {"jug5": 5, "jug3": 3}
OTHER = {"jug5": "jug3", "jug3": "jug5"}


def state(tc: ToolContext) -> tuple[dict[str, int], str]:
    """The jugs' contents after the last move, and that move's name ("" before the first)."""
    out, last = {}, ""
    for jug in VOLUME:
        p = tc.kg.lookup(f"{jug}-holds")
        ts = tc.kg.triples_by_predicate(p) if p is not None else []
        out[jug] = int(tc.kg.label(ts[-1].object)) if ts else 0
    p = tc.kg.lookup("did")
    ts = tc.kg.triples_by_predicate(p) if p is not None else []
    if ts:
        last = tc.kg.label(ts[-1].object)
    return out, last


def _moves(tc: ToolContext) -> int:
    p = tc.kg.lookup("jug5-holds")
    return len(tc.kg.triples_by_predicate(p)) if p is not None else 0


def _result(tc: ToolContext, name: str, move: str, jugs: dict[str, int]) -> ToolResult:
    m = f"move-{_moves(tc)}"
    triples = [(m, "jug5-holds", str(jugs["jug5"])), (m, "jug3-holds", str(jugs["jug3"])), (m, "did", move)]
    return ToolResult(output=f"{move}: the 5-gallon jug holds {jugs['jug5']}, the 3-gallon {jugs['jug3']}",
                      triples=triples, evidence="")  # type: ignore[arg-type]


class _JugTool(Tool):
    plan_role = None

    def _about(self, ctx: GoalContext) -> bool:
        return "gallon" in ctx.goal.description.lower()


class FillJug(_JugTool):
    spec = ToolSpec("fill_jug", "explorer", ("read_kg", "write_kg"), "safe", "jug name (jug5, jug3)",
                    ("fill", "jug", "gallon", "water"), "fill a jug from the tap",
                    base_values=(0.3,), base_rule="0.3: filling only adds water to pour later")

    def offer(self, tc: ToolContext, ctx: GoalContext) -> Offer:
        if not self._about(ctx):
            return Offer(False, why_not="the goal is not about gallons")
        jugs, last = state(tc)
        for jug in ("jug5", "jug3"):
            if jugs[jug] < VOLUME[jug] and last != f"empty {jug}":
                return Offer(True, 0.3, jug, arg=jug)
        return Offer(False, why_not="both jugs are full (or filling would undo the last move)")

    def run(self, tc: ToolContext, ctx: GoalContext, arg: object) -> ToolResult:
        jugs, _ = state(tc)
        jug = str(arg)
        jugs[jug] = VOLUME[jug]
        return _result(tc, self.spec.name, f"fill {jug}", jugs)


class EmptyJug(_JugTool):
    spec = ToolSpec("empty_jug", "guardian", ("read_kg", "write_kg"), "safe", "jug name (jug5, jug3)",
                    ("empty", "jug", "gallon", "water"), "empty a jug onto the ground",
                    base_values=(0.1,), base_rule="0.1: emptying throws water away")

    def offer(self, tc: ToolContext, ctx: GoalContext) -> Offer:
        if not self._about(ctx):
            return Offer(False, why_not="the goal is not about gallons")
        jugs, last = state(tc)
        for jug in ("jug3", "jug5"):
            if jugs[jug] > 0 and last != f"fill {jug}":
                return Offer(True, 0.1, jug, arg=jug)
        return Offer(False, why_not="both jugs are empty (or emptying would undo the last move)")

    def run(self, tc: ToolContext, ctx: GoalContext, arg: object) -> ToolResult:
        jugs, _ = state(tc)
        jugs[str(arg)] = 0
        return _result(tc, self.spec.name, f"empty {arg}", jugs)


class PourJug(_JugTool):
    spec = ToolSpec("pour_jug", "sage", ("read_kg", "write_kg"), "safe", "from jug (jug5, jug3)",
                    ("pour", "jug", "gallon", "water"), "pour one jug into the other until it is empty or the other full",
                    base_values=(0.6,), base_rule="0.6: pouring moves water between the jugs")

    def offer(self, tc: ToolContext, ctx: GoalContext) -> Offer:
        if not self._about(ctx):
            return Offer(False, why_not="the goal is not about gallons")
        jugs, last = state(tc)
        for src in ("jug5", "jug3"):
            dst = OTHER[src]
            if jugs[src] > 0 and jugs[dst] < VOLUME[dst] and last != f"pour {dst}":
                return Offer(True, 0.6, src, arg=src)
        return Offer(False, why_not="nothing to pour (or pouring back would undo the last move)")

    def run(self, tc: ToolContext, ctx: GoalContext, arg: object) -> ToolResult:
        jugs, _ = state(tc)
        src = str(arg)
        dst = OTHER[src]
        amount = min(jugs[src], VOLUME[dst] - jugs[dst])
        jugs[src] -= amount
        jugs[dst] += amount
        return _result(tc, self.spec.name, f"pour {src}", jugs)


def make_tools() -> list[Tool]:
    return [FillJug(), EmptyJug(), PourJug()]


# ---- the same moves in both architectures' words (soar/compare.py) --------------------------

def soar_move(label: str) -> str | None:
    """A Soar water-jug operator's label as a move (`fill volume 5` -> `fill jug5`, `pour
    from-volume 3 to-volume 5` -> `pour jug3`); None for one that is no move (initialize)."""
    words = label.split()
    if not words or words[0] not in ("fill", "empty", "pour"):
        return None
    volume = words[2] if len(words) > 2 else "?"
    return f"{words[0]} jug{volume}"


def ooda_move(tool: str, input: str) -> str | None:
    """An OODA water-jug cycle's choice as a move (`pour_jug(jug5)` -> `pour jug5`)."""
    verb = tool.removesuffix("_jug")
    return f"{verb} {input}" if verb in ("fill", "empty", "pour") else None


def after(jugs: dict[str, int], move: str) -> dict[str, int]:
    """The jugs after `move` (the puzzle's own rules, as both agents apply them)."""
    verb, jug = move.split()
    out = dict(jugs)
    if verb == "fill":
        out[jug] = VOLUME[jug]
    elif verb == "empty":
        out[jug] = 0
    else:
        dst = OTHER[jug]
        amount = min(out[jug], VOLUME[dst] - out[dst])
        out[jug] -= amount
        out[dst] += amount
    return out
