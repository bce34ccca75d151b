"""Pilot tests of the time-travel screens and the timeline scrubber, each in a tiny host app:
what a user sees and what each screen hands back. Plus replay's record-to-view and the search
box's query parser."""

from __future__ import annotations

import io

import json

import pytest
from rich.console import Console
from textual.app import App
from textual.widgets import DataTable, Input, Static

from akh_tui.engine.errors import InputError
from akh_tui.engine.runs.history import compare, search
from akh_tui.engine.runs.search import parse_search
from akh_tui.engine import Run
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from akh_tui.engine.tools.builtins import TOOL_NAMES
from akh_tui.tui.panes import GoalsPane, MemoryPane, PlanPane, PsychePane
from akh_tui.tui.travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, Scrubber, SearchScreen
from tests.engine.cycle.test_engine import run  # one cycle loop for the suite
from tests.helpers import SIZE, drive


class Host(App):
    def __init__(self, *widgets) -> None:
        super().__init__()
        self._widgets = widgets
        self.seeks: list[int] = []

    def compose(self):
        yield from self._widgets

    def on_scrubber_seek(self, event: Scrubber.Seek) -> None:
        self.seeks.append(event.cycle)


def shown(screen) -> str:
    """Every Static of the screen as the user reads it (a rich Table included)."""
    console = Console(width=SIZE[0], record=True, file=io.StringIO())
    for w in screen.query(Static):
        if w.content:
            console.print(w.content)
    return console.export_text()


def rows(table: DataTable) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def run_records(n: int, disable: tuple[str, ...] = ()) -> list[dict]:
    agent = build_agent(load_scenario("zoo"))
    agent.config.disabled_tools = list(disable)
    return run(agent, n)


async def open_screen(app: App, pilot, screen):
    app.push_screen(screen)
    await pilot.pause()
    return screen


# ---- fork ----------------------------------------------------------------------------------------
def fork_screen(calls: list, existing=("main", "fork-7"), on_fork=None) -> ForkScreen:
    return ForkScreen(7, {"sage": 0.7, "healer": 0.5, "explorer": 0.5, "guardian": 0.4}, list(TOOL_NAMES),
                      list(existing), on_fork or (lambda name, edits: calls.append((name, edits))))


def test_fork_refuses_a_weight_outside_0_1_naming_the_field_and_keeping_the_text():
    calls: list = []

    async def script(app, pilot):
        screen = await open_screen(app, pilot, fork_screen(calls))
        assert screen.query_one("#fork-name", Input).value == "fork-7-2"  # fork-7 exists
        assert screen.query_one("#fork-arch-sage", Input).value == "0.70"
        field = screen.query_one("#fork-arch-explorer", Input)
        field.value = "1.5"
        field.focus()
        await pilot.press("enter")
        assert calls == []
        assert app.screen is screen
        text = shown(screen)
        assert "explorer" in text and "1.5" in text and "[0, 1]" in text
        assert field.value == "1.5"
        assert screen.focused is field

    drive(Host(), script)


def test_fork_passes_only_what_changed_then_closes():
    calls: list = []

    async def script(app, pilot):
        screen = await open_screen(app, pilot, fork_screen(calls))
        screen.query_one("#fork-name", Input).value = "bold explorer"
        screen.query_one("#fork-arch-explorer", Input).value = "0.9"
        screen.query_one("#fork-tools", Input).value = "kg_query, reason"
        screen.query_one("#fork-goal", Input).value = "Find birds"
        screen.query_one("#fork-goal", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is not screen

    drive(Host(), script)
    assert calls == [("bold explorer", {"archetypes": {"explorer": 0.9}, "disable_tools": ["kg_query", "reason"],
                                        "goals": ["Find birds"]})]


def test_fork_with_nothing_changed_passes_no_edits():
    calls: list = []

    async def script(app, pilot):
        await open_screen(app, pilot, fork_screen(calls, existing=["main"]))
        await pilot.press("enter")

    drive(Host(), script)
    assert calls == [("fork-7", {})]


def test_fork_refuses_unknown_tools_and_a_taken_name():
    calls: list = []

    async def script(app, pilot):
        screen = await open_screen(app, pilot, fork_screen(calls))
        screen.query_one("#fork-tools", Input).value = "kg_query, teleport"
        await pilot.press("enter")
        assert "disable tools" in shown(screen) and "teleport" in shown(screen)
        screen.query_one("#fork-tools", Input).value = ""
        screen.query_one("#fork-name", Input).value = "main"
        await pilot.press("enter")
        assert "branch name" in shown(screen) and "'main' exists" in shown(screen)
        screen.query_one("#fork-name", Input).value = "   "
        await pilot.press("enter")
        assert "needs a name" in shown(screen)
        assert calls == [] and app.screen is screen

    drive(Host(), script)


def test_fork_shows_the_engines_refusal_and_stays_open():
    def refuse(name, edits):
        raise InputError("cycle 7 is not recorded", field="cycle")

    async def script(app, pilot):
        screen = await open_screen(app, pilot, fork_screen([], on_fork=refuse))
        await pilot.press("enter")
        assert "cycle 7 is not recorded" in shown(screen)
        assert app.screen is screen
        await pilot.press("escape")
        assert app.screen is not screen

    drive(Host(), script)


# ---- branches ------------------------------------------------------------------------------------
BRANCHES = [
    {"name": "main", "parent": None, "fork_cycle": None, "head_cycle": 40, "edits": [], "current": True},
    {"name": "[red]bold", "parent": "main", "fork_cycle": 12, "head_cycle": 30, "edits": ["explorer weight 0.9"],
     "current": False},
]


def test_branches_lists_marks_the_current_one_and_compares_the_highlighted():
    switched: list = []
    compared: list = []

    async def script(app, pilot):
        screen = await open_screen(app, pilot, BranchesScreen(BRANCHES, switched.append,
                                                              lambda a, b: compared.append((a, b))))
        table = screen.query_one(DataTable)
        assert rows(table)[0][:2] == ["●", "main"]
        assert rows(table)[1][1] == "[red]bold"  # shown as written, not as markup
        await pilot.press("c")
        assert "current branch" in shown(screen) and compared == []
        await pilot.press("down", "c")
        assert compared == [("main", "[red]bold")]
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is not screen

    drive(Host(), script)
    assert switched == ["[red]bold"]


# ---- compare -------------------------------------------------------------------------------------
def test_compare_shows_the_divergence_cycle_both_tools_and_the_factors():
    a, b = run_records(12), run_records(12, disable=("synthesize_triple",))
    result = compare(a, b)
    first = result["first_divergence"]
    assert first is not None and first["a"]["tool"] != first["b"]["tool"], "disabling the first choice changes it"

    async def script(app, pilot):
        screen = await open_screen(app, pilot, CompareScreen("main", "no-synth", result))
        text = shown(screen)
        assert f"first divergence at cycle {first['cycle']}" in text
        assert first["a"]["tool"] in text and first["b"]["tool"] in text
        assert "base" in text and "0.700" in text  # the disabled tool's base score, 0.70 in main
        assert f"main: {result['a']['cycles']} cycles" in text

    drive(Host(), script)


def test_compare_without_divergence_says_so():
    same = run_records(5)
    result = compare(same, same)

    async def script(app, pilot):
        screen = await open_screen(app, pilot, CompareScreen("main", "copy", result))
        assert "no divergence in the 5 common cycles" in shown(screen)

    drive(Host(), script)


# ---- breakpoints ---------------------------------------------------------------------------------
def test_breakpoints_refuse_a_bad_spec_keep_the_text_and_add_a_good_one():
    changes: list = []

    async def script(app, pilot):
        screen = await open_screen(app, pilot, BreakpointsScreen(["veto"], changes.append, config_specs=["veto"]))
        table = screen.query_one(DataTable)
        assert rows(table) == [["veto", "(config)"]]
        assert "score < 0.3" in shown(screen)  # the syntax hint
        await pilot.press(*"score < abc", "enter")
        assert "< needs a number" in shown(screen)
        assert screen.query_one(Input).value == "score < abc"
        assert changes == []
        screen.query_one(Input).value = "tool=shell_exec"
        await pilot.press("enter")
        assert changes == [["veto", "tool=shell_exec"]]
        assert rows(table)[1] == ["tool=shell_exec", ""]
        assert screen.query_one(Input).value == ""

    drive(Host(), script)


def test_breakpoints_delete_removes_the_highlighted_one():
    changes: list = []

    async def script(app, pilot):
        screen = await open_screen(app, pilot, BreakpointsScreen(["veto", "goal", "score < 0.3"], changes.append))
        table = screen.query_one(DataTable)
        table.focus()
        await pilot.press("down", "delete")
        assert changes == [["veto", "score < 0.3"]]
        assert [r[0] for r in rows(table)] == ["veto", "score < 0.3"]

    drive(Host(), script)


# ---- search --------------------------------------------------------------------------------------
def test_search_shows_the_hits_and_enter_jumps_to_one():
    records = run_records(12)
    by_cycle = {r["cycle"]: r for r in records}
    jumps: list = []

    def run_search(text: str) -> list[dict]:
        hits = search(records, **parse_search(text))
        return [{"cycle": c, "tool": by_cycle[c]["decide"]["tool"], "progress": by_cycle[c]["act"]["progress"],
                 "vetoed": by_cycle[c]["act"]["vetoed"], "output": by_cycle[c]["act"]["output"]} for c in hits]

    expected = search(records, tool="kg_query")
    assert expected

    async def script(app, pilot):
        screen = await open_screen(app, pilot, SearchScreen(run_search, jumps.append))
        await pilot.press(*"tool=teleport", "enter")
        assert "unknown tool 'teleport'" in shown(screen)
        screen.query_one(Input).value = "tool=kg_query"
        screen.query_one(Input).focus()
        await pilot.press("enter")
        table = screen.query_one(DataTable)
        assert [int(r[0]) for r in rows(table)] == expected
        n = len(expected)
        assert (f"{n} cycles match" if n > 1 else "1 cycle matches") in shown(screen)
        assert "unknown tool" not in shown(screen)
        await pilot.press("enter")  # the table has the focus after a search with hits
        await pilot.pause()
        assert app.screen is not screen

    drive(Host(), script)
    assert jumps == [expected[0]]


# ---- the scrubber --------------------------------------------------------------------------------
def test_scrubber_shows_replay_or_live_and_seeks_on_click():
    scrubber = Scrubber()

    async def script(app, pilot):
        scrubber.show(1, 40, 12, {20: "!", 30: "◆"})
        await pilot.pause()
        line = str(scrubber.render())
        assert "REPLAY" in line and "cycle 12 / 40" in line
        assert "!" in line and "◆" in line and "●" in line
        assert len(line) == SIZE[0]
        assert line.index("●") < line.index("!") < line.index("◆")
        await pilot.click(Scrubber, offset=(SIZE[0] - 2, 0))  # the track's last cell
        await pilot.click(Scrubber, offset=(1, 0))  # on the label: nothing
        assert app.seeks == [40]
        scrubber.show(1, 40, None)
        await pilot.pause()
        line = str(scrubber.render())
        assert "LIVE" in line and "REPLAY" not in line and "cycle 40 / 40" in line

    drive(Host(scrubber), script)


# ---- replay: a past cycle through the live panes ------------------------------------------------
def replayed_view(tmp_path, records: list[dict], seed: int = 7) -> dict:
    """The view of the last record as `akh-tui open` shows it: a trace file, no engine."""
    f = tmp_path / "t.jsonl"
    header = {"type": "run", "v": 1, "scenario": "zoo", "seed": seed, "config": {}, "psyche": {}}
    f.write_text("\n".join(json.dumps(r) for r in [header, *records]) + "\n")
    return Run.replay_trace(f).view(records[-1]["cycle"])


def test_view_from_record_renders_through_every_pane(tmp_path):
    records = run_records(6)
    rec = records[-1]
    view = replayed_view(tmp_path, records)
    assert view["focus"] == rec["goal"]["id"] and view["cycle"] == rec["cycle"] and view["seed"] == 7
    assert view["plans"] == {rec["plan"]["goal"]: rec["plan"]}
    assert [e["id"] for e in view["wm"]["entries"]] == [e["id"] for e in rec["observe"]["recent"]]
    assert all(e["cycle"] < rec["cycle"] for e in view["wm"]["entries"])
    goals, plan, psyche, memory = GoalsPane(), PlanPane(), PsychePane(), MemoryPane()

    async def script(app, pilot):
        goals.show(view)
        plan.show(view)
        psyche.show(view)
        memory.show(view, rec, 10)
        await pilot.pause()
        assert f"goal #{rec['plan']['goal']}" in str(plan.render())
        assert rec["psyche"]["persona"] in str(psyche.render())
        assert f"WM {rec['wm']['size']}/{rec['wm']['capacity']}" in str(memory.render())
        labels = [str(n.label) for n in goals.root.children]
        assert any(f"#{rec['goal']['id']}" in lb and "▶" in lb for lb in labels)

    drive(Host(goals, plan, psyche, memory), script)


def test_view_from_record_links_sub_goals_to_their_parents(tmp_path):
    rec = run_records(1)[0]
    rec = rec | {"goals": rec["goals"] + [dict(rec["goals"][0], id=9, parent=rec["goals"][0]["id"])], "plan": None}
    view = replayed_view(tmp_path, [rec])
    assert view["goals"][0]["children"] == [9]
    assert view["plans"] == {}


# ---- the search box's words ---------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("", {}),
    ("tool=kg_query veto progress=failed goal=2 any words", {"tool": "kg_query", "veto": True, "progress": "failed",
                                                              "goal": 2, "text": "any words"}),
    ("veto=no-shell", {"veto": "no-shell"}),
    ("mammal  bird", {"text": "mammal bird"}),
    ("x=1", {"text": "x=1"}),
])
def test_parse_search(text, expected):
    assert parse_search(text) == expected


@pytest.mark.parametrize("text, message", [
    ("tool=teleport", "teleport"),
    ("goal=two", "goal"),
    ("progress=great", "great"),
    ("tool=kg_query tool=reason", "twice"),
    ("tool=", "needs a value"),
])
def test_parse_search_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        parse_search(text)

