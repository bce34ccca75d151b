"""Tool and decider plugins (issue 12): the example package `examples/akh-tui-tides` loaded
from a scenario (nothing installed) and as an installed entry point (a temporary dist-info on
sys.path), treated like a built-in; and each kind of bad plugin named while the run goes on."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from akh_tui.engine.tools import registry, trust
from akh_tui.engine.paths import Locations
from akh_tui.engine.explain.decision import why_not
from akh_tui.engine import InputError, Run, parse_breakpoint, why_chosen, why_not_text

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "akh-tui-tides"
PKG = EXAMPLE / "akh_tides"


@pytest.fixture(autouse=True)
def _fresh_plugins():
    registry.refresh()
    # the user agreed to these scenarios' own modules, as `--allow-plugins` does (issue 23:
    # without it nothing beside a scenario is imported; tests/test_attacks.py proves that)
    with trust.agreed(trust.Consent(any_once=True)):
        yield
    registry.refresh()
    for m in [m for m in sys.modules if m.startswith(("akh_tides", "tidetool", "badtool", "mydecider"))]:
        del sys.modules[m]


def locs(tmp: Path) -> Locations:
    return Locations(tmp / "data", tmp / "config.toml")


def harbour(tmp: Path, tools: list[str] | None = None, extra: str = "", goal: str = "Find the tide times at kestrel",
            criteria: str = "highwater") -> Path:
    """The example's harbour scenario in `tmp`, with the tool module beside it."""
    d = tmp / "sc"
    d.mkdir(exist_ok=True)
    shutil.copy(PKG / "scenarios" / "harbour.tsv", d)
    shutil.copy(PKG / "tool.py", d / "tidetool.py")
    refs = json.dumps(tools if tools is not None else ["tidetool:make_tool"])
    (d / "harbour.toml").write_text(textwrap.dedent(f"""\
        name = "harbour"
        seed = 3
        kg = ["harbour.tsv"]
        tools = {refs}
        {extra}
        [[goals]]
        description = "{goal}"
        criteria = "{criteria}"
        """))
    return d / "harbour.toml"


def test_a_scenario_named_tool_is_offered_scored_chosen_explained_and_traced(tmp_path):
    trace = tmp_path / "t.jsonl"
    run = Run.start(locs(tmp_path), str(harbour(tmp_path)), trace=trace)
    assert "tide_table" in run.tool_names() and run.warnings == []
    rec = run.step()
    row = next(c for c in rec["decide"]["candidates"] if c["tool"] == "tide_table")
    assert row["offered"] and row["base"] == 0.9 and row["input"] == "kestrel"
    assert rec["decide"]["tool"] == "tide_table"
    assert rec["act"]["output"] == "high water at kestrel: 00:42 and 13:07"
    assert rec["act"]["progress"] == "completed"  # only the plugin could meet "highwater"
    assert any("tide_table" in line for line in why_chosen(rec))
    assert any("kg_query" in line for line in why_not_text(rec, "kg_query"))
    assert run.step() is None  # the scenario's goal is done
    run.close()
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    cycle = next(x for x in lines if x["type"] == "cycle")
    assert cycle["decide"]["tool"] == "tide_table"
    # breakpoints and search know the plugin like a built-in
    run = Run.resume(locs(tmp_path))
    run.check_breakpoints([parse_breakpoint("tool=tide_table", tools=None)])
    with pytest.raises(InputError, match="unknown tool 'tidex'"):
        run.check_breakpoints([parse_breakpoint("tool=tidex", tools=None)])
    assert [r["cycle"] for r in run.search("tool=tide_table")] == [1]
    run.close()


def test_without_the_plugin_the_goal_cannot_complete(tmp_path):
    run = Run.start(locs(tmp_path), str(harbour(tmp_path, tools=[])))
    run.run_cycles(6)
    assert run.cycle == 6
    assert all(run.record(c)["decide"]["tool"] != "tide_table" for c in range(1, 7))
    assert run.agent.goals[1].status != "completed"
    run.close()


def _install_entry_point(site: Path) -> None:
    """akh-tui-tides 'installed': its package and a dist-info with its entry point."""
    shutil.copytree(PKG, site / "akh_tides")
    info = site / "akh_tui_tides-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: akh-tui-tides\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[akh_tui.tools]\ntide_table = akh_tides.tool:make_tool\n")


def test_an_installed_entry_point_tool_is_listed_and_runs_its_scenario(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    _install_entry_point(site)
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    # listed from metadata alone: nothing imported
    from akh_tui.engine.catalog import tool_rows

    row = next(r for r in tool_rows() if r["tool"] == "tide_table")
    assert "entry point tide_table (akh-tui-tides 0.1.0): akh_tides.tool:make_tool" == row["from"]
    assert "akh_tides" not in sys.modules
    # the package's own scenario (no `tools` key) completes with the installed tool
    run = Run.start(locs(tmp_path), str(site / "akh_tides" / "scenarios" / "harbour.toml"))
    entry = run.agent.tools.entries["tide_table"]
    assert entry.plugin and entry.origin.startswith("entry point tide_table")
    rec = run.step()
    assert rec["decide"]["tool"] == "tide_table" and rec["act"]["progress"] == "completed"
    run.close()


# ---- bad plugins: named, and the run goes on ------------------------------------------------------

BAD = '''
from akh_tui.engine.tools.api import Offer, Tool, ToolResult
from akh_tui.engine.tools.specs import ToolSpec
import time

def spec(name):
    return ToolSpec(name, "explorer", ("read_kg",), "safe", "none", ("tide", "water", "high"), "bad", base_values=(2.0,))

class Base(Tool):
    def __init__(self, name="bad_tool"):
        self.spec = spec(name)
    def offer(self, tc, ctx):
        return Offer(True, 2.0, "x")
    def run(self, tc, ctx, arg):
        return ToolResult("fine")

class RaisesInOffer(Base):
    def offer(self, tc, ctx):
        raise RuntimeError("offer on fire")

class RaisesInRun(Base):
    def run(self, tc, ctx, arg):
        raise RuntimeError("run on fire")

class WrongRun(Base):
    def run(self, tc, ctx, arg):
        return "just a string"

class WrongOffer(Base):
    def offer(self, tc, ctx):
        return 0.9

class Slow(Base):
    def run(self, tc, ctx, arg):
        time.sleep(0.3)
        return ToolResult("late")

COUNT = [0]

class Moody(Base):
    def run(self, tc, ctx, arg):
        COUNT[0] += 1
        return ToolResult(f"call {COUNT[0]}")

class PlainTriples(Base):
    # what a new plugin author writes first (issue 28): labels, not the graph's triples
    def run(self, tc, ctx, arg):
        return ToolResult("weather in oslo: snow", [("oslo", "has-weather", "snow")])

class OddTriple(Base):
    def run(self, tc, ctx, arg):
        return ToolResult("weather in oslo: snow", [("oslo", "has-weather", "snow"), ("oslo", 7)])

class MadeUpTriple(Base):
    def run(self, tc, ctx, arg):
        from akh_tui.engine.knowledge.kg import Triple
        return ToolResult("made up", [Triple(10**6, 10**6 + 1, 10**6 + 2)])

class Fixed(Base):
    # declares the one base its rule gives: the why-not must not propose another
    def __init__(self):
        self.spec = ToolSpec("fixed_tool", "explorer", ("read_kg",), "safe", "none", ("tide", "water", "high"),
                             "fixed", base_values=(0.3,), base_rule="0.3 always")
    def offer(self, tc, ctx):
        return Offer(True, 0.3, "x")

def fixed(): return Fixed()
def plain_triples(): return PlainTriples()
def odd_triple(): return OddTriple()
def made_up_triple(): return MadeUpTriple()
def raising_offer(): return RaisesInOffer()
def raising_run(): return RaisesInRun()
def wrong_run(): return WrongRun()
def wrong_offer(): return WrongOffer()
def slow(): return Slow()
def moody(): return Moody()
def clash(): return Base("kg_query")
def not_a_tool(): return 42
'''


def bad_run(tmp_path: Path, ref: str) -> Run:
    sc = harbour(tmp_path, tools=[ref, "tidetool:make_tool"], goal="Find the tide times at nowhere", criteria="unicorn")
    (sc.parent / "badtool.py").write_text(BAD)
    return Run.start(locs(tmp_path), str(sc))


@pytest.mark.parametrize("ref, words", [
    ("nosuchmodule:make", "plugin scenario harbour.toml: nosuchmodule:make: cannot import nosuchmodule: ModuleNotFoundError"),
    ("badtool:clash", "tool name 'kg_query' clashes with the tool from built-in; left out"),
    ("badtool:not_a_tool", "badtool:not_a_tool: returned a int, not a Tool"),
    ("badtool:nothing_here", "badtool has no attribute 'nothing_here'"),
])
def test_a_plugin_that_cannot_be_used_is_named_and_left_out(tmp_path, ref, words):
    run = bad_run(tmp_path, ref)
    assert any(words in w for w in run.warnings), run.warnings
    assert "tide_table" in run.tool_names()  # the good plugin beside it still loads
    for _ in range(3):
        assert run.step() is not None  # the run goes on
    run.close()


def test_a_raising_offer_is_not_offered_with_the_reason(tmp_path):
    run = bad_run(tmp_path, "badtool:raising_offer")
    rec = run.step()
    row = next(c for c in rec["decide"]["candidates"] if c["tool"] == "bad_tool")
    assert not row["offered"]
    assert "plugin tool bad_tool (scenario harbour.toml: badtool:raising_offer) raised in offer: RuntimeError: offer on fire" in row["why_not"]
    assert run.step() is not None
    run.close()


def test_a_wrong_offer_type_is_not_offered(tmp_path):
    run = bad_run(tmp_path, "badtool:wrong_offer")
    row = next(c for c in run.step()["decide"]["candidates"] if c["tool"] == "bad_tool")
    assert not row["offered"] and "returned a float from offer, not an Offer" in row["why_not"]
    run.close()


@pytest.mark.parametrize("ref, words", [
    ("badtool:raising_run", "error: plugin tool bad_tool (scenario harbour.toml: badtool:raising_run) raised in run: RuntimeError: run on fire"),
    ("badtool:wrong_run", "returned a str from run, not a ToolResult"),
])
def test_a_raising_or_wrong_run_is_a_failed_cycle(tmp_path, ref, words):
    run = bad_run(tmp_path, ref)
    rec = run.step()
    assert rec["decide"]["tool"] == "bad_tool"  # base 2.0: it wins
    assert not rec["act"]["success"] and rec["act"]["progress"] == "failed"
    assert words in rec["act"]["output"]
    assert run.step() is not None
    run.close()


def test_a_plugin_returning_plain_triples_adds_them_and_meets_the_goal(tmp_path):
    # issue 28: ("oslo", "has-weather", "snow") crashed phase_act ('tuple' has no 'subject')
    sc = harbour(tmp_path, tools=["badtool:plain_triples"], goal="Find the weather in oslo", criteria="snow")
    (sc.parent / "badtool.py").write_text(BAD)
    run = Run.start(locs(tmp_path), str(sc))
    rec = run.step()
    assert rec["decide"]["tool"] == "bad_tool"
    assert rec["act"]["success"] and rec["act"]["progress"] == "completed", rec["act"]
    kg = run.agent.kg
    t = kg.get(kg.lookup("oslo"), kg.lookup("has-weather"), kg.lookup("snow"))
    assert t is not None and t.provenance == "tool:bad_tool" and t.cycle == 1
    run.close()


def test_a_plain_triple_already_known_counts_for_the_goal(tmp_path):
    sc = harbour(tmp_path, tools=["badtool:plain_triples"], goal="Find the weather in oslo", criteria="(oslo has-weather snow)")
    (sc.parent / "harbour.tsv").write_text((sc.parent / "harbour.tsv").read_text() + "oslo\thas-weather\tsnow\n")
    (sc.parent / "badtool.py").write_text(BAD)
    run = Run.start(locs(tmp_path), str(sc))
    rec = run.step()
    assert rec["act"]["progress"] == "completed", rec["act"]
    kg = run.agent.kg
    assert kg.get(kg.lookup("oslo"), kg.lookup("has-weather"), kg.lookup("snow")).provenance == "asserted"
    run.close()


@pytest.mark.parametrize("ref, words", [
    ("badtool:odd_triple", "plugin tool bad_tool (scenario harbour.toml: badtool:odd_triple) returned a ToolResult whose "
                           "triples[1] is a tuple ('oslo', 7), not a Triple from tc.kg.add"),
    ("badtool:made_up_triple", "triples[0] is a Triple the graph does not hold"),
])
def test_a_result_the_agent_cannot_use_is_a_failed_cycle_naming_plugin_and_field(tmp_path, ref, words):
    run = bad_run(tmp_path, ref)
    rec = run.step()
    assert rec["decide"]["tool"] == "bad_tool"
    assert not rec["act"]["success"] and rec["act"]["progress"] == "failed"
    assert words in rec["act"]["output"], rec["act"]["output"]
    kg = run.agent.kg
    assert kg.lookup("has-weather") is None  # taken whole or not at all: the good triple was not added
    assert run.step() is not None
    run.close()


def test_the_cli_runs_a_plain_triple_plugin_without_a_traceback(tmp_path, cli):
    sc = harbour(tmp_path, tools=["badtool:odd_triple"], goal="Find the weather in oslo", criteria="snow")
    (sc.parent / "badtool.py").write_text(BAD)
    proc = cli("agent", "run", "--scenario", str(sc), "--max-cycles", "2", "--allow-plugins", check_rc=None)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "bad_tool" in proc.stdout + proc.stderr


def test_the_why_not_proposes_only_a_base_the_plugin_declares(tmp_path):
    # issue 28: explain read the built-ins' table only, so a plugin of base_values=(0.3,) got
    # "base 0.93 (now 0.30) would do it", possible
    sc = harbour(tmp_path, tools=["badtool:fixed"], goal="Find the tide times at nowhere", criteria="unicorn")
    (sc.parent / "badtool.py").write_text(BAD)
    run = Run.start(locs(tmp_path), str(sc))
    rec = run.step()
    assert rec["decide"]["tool"] != "fixed_tool"
    info = why_not(rec, "fixed_tool")
    base = [x for x in info["closers"] if x["factor"] == "base"]
    assert base and not any(x["possible"] for x in base), base
    assert "its rule gives only 0.30 (0.3 always)" in base[0]["text"], base
    assert not any(line.strip().startswith("base:") and "would do it" in line
                   for line in why_not_text(rec, "fixed_tool")[:3])
    run.close()


def test_a_slow_plugin_is_turned_off_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "CALL_BUDGET", 0.05)
    run = bad_run(tmp_path, "badtool:slow")
    rec = run.step()
    assert rec["decide"]["tool"] == "bad_tool" and not rec["act"]["success"]
    assert "took longer than its 0.05 s budget in run; off for the rest of this run" in rec["act"]["output"]
    rec = run.step()
    row = next(c for c in rec["decide"]["candidates"] if c["tool"] == "bad_tool")
    assert not row["offered"] and "off for the rest of this run" in row["why_not"]
    assert any("took longer" in w for w in run.warnings)
    run.close()


def test_a_rewind_names_the_tool_whose_output_differed(tmp_path):
    run = bad_run(tmp_path, "badtool:moody")
    for _ in range(3):
        run.step()
    assert run.replay_divergence is None
    run.rewind(2)
    assert run.replay_divergence is not None
    assert "tool bad_tool's output differed from its record" in run.replay_divergence
    assert any("bad_tool" in w for w in run.warnings)
    run.close()


def test_a_deterministic_plugin_rewinds_silently(tmp_path):
    run = Run.start(locs(tmp_path), str(harbour(tmp_path, goal="Find the tide times at kestrel", criteria="unicorn")))
    for _ in range(3):
        run.step()
    run.rewind(2)
    assert run.replay_divergence is None
    run.close()


# ---- deciders ----------------------------------------------------------------------------------

DECIDER = '''
class Last:
    """Chooses the last offered tool in the table (a plugin: tide_table)."""
    kind = "last-offered"
    def choose(self, agent, focus, ctx, candidates, utility):
        return [c for c in candidates if c.offered][-1], None
    def learn(self, agent, focus, tool, act):
        pass
    def model_memory(self, limit):
        return None

class Broken(Last):
    def choose(self, agent, focus, ctx, candidates, utility):
        raise RuntimeError("decider on fire")

def make(): return Last()
def broken(): return Broken()
'''


def test_a_scenario_named_decider_decides(tmp_path):
    sc = harbour(tmp_path, extra='decider = "mydecider:make"', criteria="unicorn")
    (sc.parent / "mydecider.py").write_text(DECIDER)
    run = Run.start(locs(tmp_path), str(sc))
    assert run.agent.decider.kind == "last-offered"
    assert run.step()["decide"]["tool"] == "tide_table"
    run.close()


def test_a_raising_decider_falls_back_to_the_table_and_is_named(tmp_path):
    sc = harbour(tmp_path, extra='decider = "mydecider:broken"', criteria="unicorn")
    (sc.parent / "mydecider.py").write_text(DECIDER)
    run = Run.start(locs(tmp_path), str(sc))
    rec = run.step()
    assert rec is not None and run.step() is not None
    assert any("decider mydecider:broken failed at cycle 1: RuntimeError: decider on fire" in w for w in run.warnings)
    run.close()


def test_an_unknown_decider_is_an_input_error(tmp_path):
    sc = harbour(tmp_path, extra='decider = "nosuch"')
    with pytest.raises(InputError, match="no decider named 'nosuch'"):
        Run.start(locs(tmp_path), str(sc))


# ---- the workbench shows a plugin like a built-in ---------------------------------------------------

def test_the_workbench_score_table_and_why_pane_show_a_plugin_tool(tmp_path, workbench):
    import asyncio

    from akh_tui.tui.panes import ScoreTable, WhyPane

    def text_of(widget) -> str:
        return str(widget.render())

    def drive(app, script) -> None:
        async def main() -> None:
            async with app.run_test(size=(160, 50)) as pilot:
                await pilot.pause()
                await script(app, pilot)

        asyncio.run(main())

    sc = harbour(tmp_path, criteria="highwater")

    async def script(app, pilot):
        await pilot.press("space")
        assert app.ctl.latest["decide"]["tool"] == "tide_table"
        table = app.query_one(ScoreTable)
        assert table.row_count == 12  # eleven built-ins and the plugin
        assert "tide_table" in text_of(app.query_one(WhyPane))
        table.move_cursor(row=11)
        await pilot.pause()
        assert table.selected_tool() == "tide_table"

    drive(workbench(str(sc)), script)


def test_the_workbench_names_the_plugin_whose_result_was_bad(tmp_path, workbench):
    # issue 28: "The engine raised AttributeError", the plugin not named
    from akh_tui.tui.dialogs import ErrorScreen
    from akh_tui.tui.panes import WhyPane
    from tests.helpers import drive, text_of

    sc = harbour(tmp_path, tools=["badtool:odd_triple"], goal="Find the weather in oslo", criteria="snow")
    (sc.parent / "badtool.py").write_text(BAD)

    async def script(app, pilot):
        await pilot.press("space")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        assert app.ctl.latest["decide"]["tool"] == "bad_tool" and not app.ctl.latest["act"]["success"]
        why = text_of(app.query_one(WhyPane)).replace("\n", " ")
        assert "error: plugin tool bad_tool (scenario harbour.toml: badtool:odd_triple)" in why, why
        await pilot.press("space")  # the run goes on
        assert app.ctl.latest["cycle"] == 2

    drive(workbench(str(sc)), script, size=(200, 50))


# ---- capabilities a plugin declares are gated like the built-ins' ---------------------------------

NET = '''
from akh_tui.engine.tools.api import Offer, Tool, ToolResult
from akh_tui.engine.tools.specs import ToolSpec

class Sonar(Tool):
    spec = ToolSpec("sonar", "explorer", ("sea_net",), "dangerous", "none", ("tide", "water", "high"), "pings", base_values=(2.0,))
    def offer(self, tc, ctx):
        return Offer(True, 2.0, "ping")
    def run(self, tc, ctx, arg):
        return ToolResult("pong")

def make(): return Sonar()
'''


@pytest.mark.parametrize("extra, offered", [("", False), ("[config.capabilities]\nsea_net = true\n", True)])
def test_a_dangerous_plugin_capability_is_off_until_enabled(tmp_path, extra, offered, monkeypatch):
    sc = harbour(tmp_path, tools=["sonar:make"], criteria="unicorn")
    text = sc.read_text()
    sc.write_text(text.replace("[[goals]]", extra + "\n[[goals]]") if extra else text)
    (sc.parent / "sonar.py").write_text(NET)
    run = Run.start(locs(tmp_path), str(sc))
    row = next(c for c in run.step()["decide"]["candidates"] if c["tool"] == "sonar")
    assert row["offered"] is offered
    if not offered:
        assert row["why_not"] == "not offered: capability sea_net disabled"
    run.close()
    if offered:  # a served session keeps it off whatever the scenario says
        registry.refresh()
        monkeypatch.setenv("AKH_TUI_SAFE", "1")
        run = Run.start(locs(tmp_path), str(sc))
        row = next(c for c in run.step()["decide"]["candidates"] if c["tool"] == "sonar")
        assert not row["offered"]
        run.close()


def test_an_unknown_capability_in_the_config_is_still_refused(tmp_path):
    sc = harbour(tmp_path, extra="[config.capabilities]\nwarp_drive = true\n")
    with pytest.raises(InputError, match="unknown capability 'warp_drive'"):
        Run.start(locs(tmp_path), str(sc))


# ---- docs/plugins.md's complete tool, run as written (issue 28) ----------------------------------

DOC = Path(__file__).resolve().parents[3] / "docs" / "plugins.md"


def _doc_block(first_line: str) -> str:
    """The fenced block of docs/plugins.md whose first line is `first_line`."""
    import re

    for m in re.finditer(r"```[a-z]*\n(.*?)```", DOC.read_text(), re.S):
        if m.group(1).splitlines()[0].startswith(first_line):
            return m.group(1)
    raise AssertionError(f"docs/plugins.md has no block starting {first_line!r}")


@pytest.mark.parametrize("known", [False, True])
def test_the_docs_complete_tool_runs_as_written(tmp_path, monkeypatch, known):
    # the module on Python's path (installed-like), the scenario and its facts where the user keeps them
    site = tmp_path / "site"
    site.mkdir()
    (site / "weather.py").write_text(_doc_block("# weather.py: a complete tool plugin"))
    monkeypatch.syspath_prepend(str(site))
    sc = tmp_path / "sc"
    sc.mkdir()
    # known: the graph holds the answer, and kg_query (which would find it first) is off, so
    # the doc's `None when already known` branch answers
    (sc / "weather.toml").write_text(_doc_block("# weather.toml") + ('\n[config]\ndisabled_tools = ["kg_query"]\n' if known else ""))
    facts = "".join(line + "\n" for line in _doc_block("# weather.tsv").splitlines()[1:])
    assert facts == "oslo\tis-a\tcity\n"  # tabs survive in the doc
    (sc / "weather.tsv").write_text(_doc_block("# weather.tsv") + ("oslo\thas-weather\tsnow\n" if known else ""))
    run = Run.start(locs(tmp_path), str(sc / "weather.toml"))
    assert run.warnings == [] and "weather_lookup" in run.tool_names()
    recs = []
    while (rec := run.step()) is not None and len(recs) < 10:  # until the goal is done
        recs.append(rec)
    rec = next(r for r in recs if r["decide"]["tool"] == "weather_lookup")
    assert rec["decide"]["input"] == "oslo" and rec["act"]["output"] == "weather in oslo: snow"
    assert rec["act"]["progress"] == "completed", rec["act"]  # the word and the (s p o) pattern
    assert rec is recs[-1] and run.agent.goals[1].status == "completed"
    kg = run.agent.kg
    t = kg.get(kg.lookup("oslo"), kg.lookup("has-weather"), kg.lookup("snow"))
    assert t.provenance == ("asserted" if known else "tool:weather_lookup")
    # the declared base is what the why-not reasons with: the row says 0.85
    row = next(c for c in rec["decide"]["candidates"] if c["tool"] == "weather_lookup")
    assert row["base"] == 0.85
    run.close()
