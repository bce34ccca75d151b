"""The plugin's own tests: the tool alone, then a headless run of its scenario."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout, installed or not

from akh_tides import SCENARIO  # noqa: E402
from akh_tides.tool import TideTable, make_tool  # noqa: E402

from akh_tui.engine.tools.api import Tool  # noqa: E402


def test_the_factory_makes_a_tool():
    t = make_tool()
    assert isinstance(t, Tool) and t.spec.name == "tide_table" and t.spec.base_can_be(0.9)


def test_the_scenario_completes_with_the_tool():
    from akh_tui.engine.cycle.agent import Agent
    from akh_tui.engine.tools.registry import ToolRegistry
    from akh_tui.engine.runs.scenario import build_kg, build_rules, load_psyche, load_scenario

    sc = load_scenario(str(SCENARIO))
    reg = ToolRegistry.builtin()  # the built-ins plus this tool, installed or not
    reg.add_tools([TideTable()], "test")
    agent = Agent(build_kg(sc), build_rules(sc), load_psyche(sc), sc.config, sc.seed, tools=reg)
    for g in sc.goals:
        agent.add_goal(g.description, g.criteria, g.priority, emit=False)
    rec = agent.step()
    assert rec["decide"]["tool"] == "tide_table"
    assert rec["act"]["output"] == "high water at kestrel: 00:42 and 13:07"
    assert rec["act"]["progress"] == "completed"
