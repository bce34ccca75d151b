"""tide_table: when is high water at a harbour? (an akh-tui tool plugin)

The graph knows each harbour's tidal lag (`kestrel tidal-lag 42`: minutes after midnight of
the first high water); the semidiurnal tide comes back every 12 h 25 min. The tool reads the
lag through the tool context, computes the day's high waters and adds them to the graph.
Deterministic (no clock): the same graph gives the same times, so a run replays exactly.
"""

from __future__ import annotations

from akh_tui.engine.tools.api import Offer, PlanRole, Tool, ToolContext, ToolResult
from akh_tui.engine.tools.specs import ToolSpec

LAG = "tidal-lag"
PERIOD = 12 * 60 + 25  # minutes between high waters (the M2 tide)
WORDS = ("tide", "tides", "tidal", "high", "water")


class TideTable(Tool):
    """High water times of a harbour the goal names."""

    spec = ToolSpec(
        "tide_table", "explorer", ("read_kg", "write_kg"), "safe", "harbour symbol",
        ("tide", "harbour", "water", "high", "sea", "time", "port"),
        "high water times of a harbour from its tidal lag",
        base_values=(0.9,), base_rule="0.9 when the goal asks about tides at a harbour with a known tidal lag",
    )
    # a plan whose goal mentions tides takes the tool in, whatever its strategy
    plan_role = PlanRole("external", ("tide",), rationale="look up the harbour's high water")

    def offer(self, tc: ToolContext, ctx) -> Offer:
        text = (ctx.goal.description + " " + ctx.goal.criteria).lower()
        if not any(w in text.split() for w in WORDS):
            return Offer(False, why_not="the goal does not ask about tides")
        lag = tc.kg.lookup(LAG)
        if lag is None:
            return Offer(False, why_not=f"the graph has no {LAG} facts")
        for s in ctx.ranked():
            if tc.kg.objects(s, lag):
                return Offer(True, 0.9, tc.kg.label(s), arg=s)
        return Offer(False, why_not="no harbour with a tidal lag among the goal's symbols")

    def run(self, tc: ToolContext, ctx, arg) -> ToolResult:
        kg = tc.kg
        harbour = int(arg)  # type: ignore[call-overload]
        lag_label = kg.label(kg.objects(harbour, kg.lookup(LAG))[0])
        try:
            lag = int(lag_label)
        except ValueError:
            raise ValueError(f"{kg.label(harbour)}'s tidal lag {lag_label!r} is not a number of minutes") from None
        times = [f"{(m // 60) % 24:02d}:{m % 60:02d}" for m in (lag, lag + PERIOD) if m < 24 * 60]
        added = []
        for t in times:
            triple = kg.add(harbour, "highwater", "hw-" + t.replace(":", ""), 1.0, "tool:tide_table", tc.cycle)
            if triple is not None:
                added.append(triple)
        return ToolResult(f"high water at {kg.label(harbour)}: {' and '.join(times)}", added,
                          evidence="highwater " + " ".join(times))


def make_tool() -> Tool:
    """The entry point (and the scenario reference `akh_tides.tool:make_tool`)."""
    return TideTable()
