"""The Soar workbench's keys (issue 30): select the highlighted operator (decide select, the
person's veto of Soar's pick), rewind one decision, and an error shown, never raised."""

from __future__ import annotations

import pytest

from tests.helpers import drive, text_of

pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")


def _app():
    from akh_tui.engine import find_soar
    from akh_tui.tui.soar_app import SoarWorkbench

    return SoarWorkbench(find_soar("water-jug"))


def test_select_forces_the_highlighted_operator_and_rewind_goes_back_before_it() -> None:
    from akh_tui.engine import SoarRun, find_soar

    alone = SoarRun.start(find_soar("water-jug"))  # Soar's own third pick, before the app seeds its agent
    alone.run(3)
    own = alone.records[2]["selected"]["id"]
    alone.close()
    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("space", "space", "p", "p")  # decision 3's operators proposed
        run = app.run_
        table = app.query_one("#ops")
        ids = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        other = next(c["id"] for c in run.candidates() if c["id"] != own and c["probability"])
        table.move_cursor(row=ids.index(other))
        await pilot.press("s", "space")
        seen["forced"] = (other, run.records[-1]["selected"]["id"], run.records[-1].get("forced"))
        seen["status"] = text_of(app.query_one("#status"))
        await pilot.press("space", "left", "left")
        seen["after_rewind"] = run.decision
        await pilot.press("space")
        seen["replayed"] = run.records[-1]["selected"]["id"]

    drive(_app(), script)
    other, selected, forced = seen["forced"]
    assert selected == other == forced  # Soar took the person's choice, and the record says so
    assert "decision 3" in seen["status"]
    assert seen["after_rewind"] == 2
    assert seen["replayed"] == own  # back before the choice: Soar picks again, as it did alone


def test_a_refused_key_is_shown_in_the_status_line() -> None:
    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("r", "p")  # halted: no phase left to step
        seen["status"] = text_of(app.query_one("#status"))

    drive(_app(), script)
    assert "error:" in seen["status"] and "halted" in seen["status"]


def test_the_rule_browser_keeps_the_keys_and_closes_with_b() -> None:
    from akh_tui.tui.soar_app import RulesScreen

    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("space", "b")
        seen["open"] = isinstance(app.screen, RulesScreen)
        await pilot.press("space", "space")  # not the run's step under the browser
        seen["decision"] = app.run_.decision
        await pilot.press("b")
        seen["closed"] = not isinstance(app.screen, RulesScreen)

    drive(_app(), script)
    assert seen == {"open": True, "decision": 1, "closed": True}


def test_a_stop_before_a_phase_holds_space_and_r_there() -> None:
    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("3")  # stop before decision
        await pilot.press("space")
        seen["first"] = (app.run_.next_phase, app.run_.decision, text_of(app.query_one("#phases")))
        await pilot.press("r")
        seen["second"] = (app.run_.next_phase, app.run_.decision, text_of(app.query_one("#status")))
        await pilot.press("3", "r")
        seen["off"] = app.run_.finished

    drive(_app(), script)
    assert seen["first"][:2] == ("decision", 0) and "● 3 decision" in seen["first"][2]
    assert seen["second"][:2] == ("decision", 1) and "stopped: before decision" in seen["second"][2]
    assert seen["off"]  # the stop taken off: r runs to the halt


def test_open_of_a_soar_trace_replays_it_and_says_it_is_as_recorded(tmp_path) -> None:
    from akh_tui.engine import SoarRun, find_soar, replay_soar_trace
    from akh_tui.tui.soar_app import SoarWorkbench

    trace = tmp_path / "wj.jsonl"
    with open(trace, "w", encoding="utf-8") as fh:
        run = SoarRun.start(find_soar("water-jug"), trace=fh)
        run.run(200)
        run.close()
    replay = replay_soar_trace(trace)
    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("r")
        seen["status"] = text_of(app.query_one("#status"))

    drive(SoarWorkbench(replay.scenario, replay.seed, replay, replay_of="wj.jsonl"), script)
    assert "replay of wj.jsonl" in seen["status"] and "as recorded (15 decisions)" in seen["status"]


def test_a_break_on_the_highlighted_operator_stops_right_after_it_is_selected() -> None:
    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("space", "space", "p", "p")  # decision 3's operators shown
        table = app.query_one("#ops")
        labels = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        table.move_cursor(row=next(i for i, x in enumerate(labels) if x.startswith("pour")))
        await pilot.press("o")
        seen["bar"] = text_of(app.query_one("#phases"))
        await pilot.press("r")
        run = app.run_
        seen["at"] = (run.next_phase, run.arch.selected()["name"], run.decision)
        seen["status"] = text_of(app.query_one("#status"))
        labels = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        table.move_cursor(row=next(i for i, x in enumerate(labels) if x.startswith("pour")))
        await pilot.press("o", "r")  # o on a pour again takes the break off: r runs to the halt
        seen["off"] = run.finished

    drive(_app(), script)
    assert "break: operator=pour" in seen["bar"]
    next_phase, name, recorded = seen["at"]
    assert (next_phase, name) == ("apply", "pour")  # selected, not yet applied
    assert f"decision {recorded + 1} selected" in seen["status"] and "operator pour" in seen["status"]
    assert seen["off"]


def test_a_break_on_an_impasse_stops_at_the_decision_that_made_it(tmp_path) -> None:
    from akh_tui.engine.soar.scenario import load_soar_scenario
    from akh_tui.tui.soar_app import SoarWorkbench

    (tmp_path / "tie.soar").write_text(
        "sp {t*init (state <s> ^superstate nil -^ready) --> (<s> ^operator <o> + !) (<o> ^name init)}\n"
        "sp {t*apply*init (state <s> ^operator.name init) --> (<s> ^ready yes)}\n"
        "sp {t*propose*a (state <s> ^ready yes) --> (<s> ^operator <o> +) (<o> ^name a)}\n"
        "sp {t*propose*b (state <s> ^ready yes) --> (<s> ^operator <o> +) (<o> ^name b)}\n", encoding="utf-8")
    (tmp_path / "tie.toml").write_text('name = "tie"\narchitecture = "soar"\nproductions = "tie.soar"\nseed = 1\n'
                                       'max_decisions = 20\n', encoding="utf-8")
    seen: dict = {}

    async def script(app, pilot) -> None:
        await pilot.press("i", "r")
        run = app.run_
        seen["at"] = (run.decision, run.next_phase, [g.strip() for g in run.shown()["goals"]])
        seen["status"] = text_of(app.query_one("#status"))

    drive(SoarWorkbench(load_soar_scenario(tmp_path / "tie.toml")), script)
    decision, next_phase, goals = seen["at"]
    assert decision == 1 and next_phase == "apply"  # decision 2 made the tie: stopped right after its decision phase
    assert "S2 operator tie" in goals
    assert "impasse: decision 2 made S2 (operator tie)" in seen["status"]
