"""Pilot tests: `p` steps one phase, the status line names it, the panes show what it
produced, and half a cycle is never recorded; approval before act and user_interact's
question in the workbench; a snapshot of the phase diagram."""

from __future__ import annotations

from pathlib import Path

from akh_tui.engine import PHASES
from akh_tui.tui.phases import ApprovalScreen, PhaseBar, PhaseDiagram, QuestionScreen
from akh_tui.tui.panes import ScoreTable

from tests.helpers import SIZE, drive, text_of
ASK_GOAL = "Ask user: tell me about whale answer question"


def recorded(app) -> int:
    st = app.ctl.store
    return st.last_cycle(st.current())


def ask_scenario(tmp_path: Path) -> Path:
    import akh_tui

    data = Path(akh_tui.__file__).parent / "data"
    p = tmp_path / "ask.toml"
    p.write_text(f'name = "ask"\nseed = 7\nkg = ["{data}/kg/zoo.tsv"]\nrules = ["{data}/rules/biology.toml"]\n'
                 f'[[goals]]\ndescription = "{ASK_GOAL}"\n', encoding="utf-8")
    return p


def test_p_steps_phase_by_phase_and_records_only_the_whole_cycle(workbench):
    async def script(app, pilot):
        bar = app.query_one(PhaseBar)
        assert not bar.has_class("-shown")  # a workbench that never steps phases looks as before
        seen = []
        for phase in PHASES[:-1]:
            await pilot.press("p")
            status = text_of(app.query_one("#status"))
            nxt = PHASES[PHASES.index(phase) + 1]
            assert f"cycle 1 phase  {nxt}  next" in status, status
            result = text_of(app.query_one("#phase-result"))
            assert result.startswith(f"{phase}:"), result
            seen.append(result)
            assert recorded(app) == 0 and app.ctl.latest is None  # half a cycle is never recorded
            if phase == "decide":  # the score table shows the pending choice
                assert str(app.query_one(ScoreTable).get_cell("synthesize_triple", "tool")).startswith("▶")
                assert "pending synthesize_triple(mammal related-to bird)" in result
        assert bar.has_class("-shown")
        assert "3 active goal(s)" in seen[0] and "activated" in seen[1] and "hypothesis added" in seen[3]
        diagram = app.query_one(PhaseDiagram)
        assert diagram.next_phase == "learn"
        await pilot.press("p")
        assert recorded(app) == 1 and app.ctl.latest["cycle"] == 1
        assert text_of(app.query_one("#phase-result")).startswith("learn: no_change")
        assert "phase" not in text_of(app.query_one("#status")).split("goals")[1]  # between cycles
        await pilot.press("space")  # a whole cycle again
        assert recorded(app) == 2

    drive(workbench("zoo"), script)


def test_clicking_a_phase_stops_following_cycles_before_it(workbench):
    async def script(app, pilot):
        await pilot.press("p")  # shows the diagram
        diagram = app.query_one(PhaseDiagram)
        lo, hi, _ = next(s for s in diagram._spans() if s[2] == "act")
        await pilot.click(PhaseDiagram, offset=(lo + 1, 0))
        assert app.ctl.stop_before == {"act"}
        await pilot.press("space")  # the rest of cycle 1 goes up to act
        assert app.ctl.in_cycle and app.ctl.next_phase == "act" and recorded(app) == 0
        assert "stopped before act" in text_of(app.query_one("#status"))
        await pilot.press("space")
        assert recorded(app) == 1
        await pilot.press("space")  # cycle 2 stops before act again
        assert app.ctl.next_phase == "act" and recorded(app) == 1
        diagram.focus()
        await pilot.press("left", "left", "enter")  # keys: from act two to the left, orient added
        assert app.ctl.stop_before == {"act", "orient"}

    drive(workbench("zoo"), script)


def test_quitting_mid_cycle_keeps_the_last_whole_cycle(workbench, tmp_path):
    async def script(app, pilot):
        await pilot.press("space", "p", "p", "p", "p")
        assert app.ctl.in_cycle

    app = drive(workbench("zoo"), script)
    from akh_tui.engine import Locations, Run

    again = Run.resume(Locations(tmp_path / "data", tmp_path / "config.toml"))
    assert again.cycle == 1 and not again.in_cycle
    assert again.step()["cycle"] == 2
    again.close()


def _approval_config(tmp_path: Path) -> Path:
    p = tmp_path / "approve.toml"
    p.write_text('[approve]\nwhen = ["tool=shell_exec"]\n', encoding="utf-8")
    return p


def test_approval_stops_before_act_and_reject_is_the_users_veto(workbench, tmp_path):
    async def script(app, pilot):
        await pilot.press("space", "space", "space")
        assert recorded(app) == 3
        await pilot.press("space")  # cycle 4 chooses shell_exec: the dialog opens before act
        assert isinstance(app.screen, ApprovalScreen)
        assert "shell_exec(echo plankton)" in text_of(app.screen.query_one("#approval-action"))
        assert "WAITING for you" in text_of(app.query_one("#status"))
        assert recorded(app) == 3
        await pilot.click("#reject")
        assert not isinstance(app.screen, ApprovalScreen)
        await pilot.press("space")
        rec = app.ctl.latest
        assert rec["cycle"] == 4 and rec["act"]["veto"] == "user" and rec["act"]["output"].startswith("VETOED by the user")
        assert app.marks.get(4) == "!"

    drive(workbench("shadow", config_path=_approval_config(tmp_path)), script)


def test_approval_edit_refused_outside_the_goal_then_approve(workbench, tmp_path):
    async def script(app, pilot):
        await pilot.press("space", "space", "space", "space")
        assert isinstance(app.screen, ApprovalScreen)
        inp = app.screen.query_one("#approval-input")
        inp.value = "rm -rf /"
        await pilot.click("#edit")
        assert isinstance(app.screen, ApprovalScreen)  # refused: still waiting, the reason shown
        assert "must be the one the goal names" in text_of(app.screen.query_one("#approval-error"))
        await pilot.click("#approve")
        await pilot.press("p", "p")  # act, learn
        rec = app.ctl.latest
        assert rec["cycle"] == 4 and rec["act"]["approval"] == {"decision": "approve"}
        assert rec["act"]["veto"] == "destructive_action"  # approval never overrides the shadow

    drive(workbench("shadow", config_path=_approval_config(tmp_path)), script)


def test_a_toggles_approval(workbench):
    async def script(app, pilot):
        assert app.ctl.approve_rules == []
        await pilot.press("a")
        assert [r.spec for r in app.ctl.approve_rules] == ["danger>=dangerous"]
        assert "approve: danger>=dangerous" in text_of(app.query_one("#status"))
        await pilot.press("a")
        assert app.ctl.approve_rules == []

    drive(workbench("zoo"), script)


def test_user_interact_asks_and_the_answer_becomes_triples(workbench, tmp_path):
    async def script(app, pilot):
        for _ in range(6):
            await pilot.press("space")
        assert isinstance(app.screen, QuestionScreen)
        assert ASK_GOAL in text_of(app.screen.query_one("#question-text"))
        app.screen.query_one("#question-answer").text = "whale eats krill\n"
        await pilot.click("#answer")
        await pilot.press("space")
        rec = app.ctl.latest
        assert rec["decide"]["tool"] == "user_interact" and "answer: whale eats krill" in rec["act"]["output"]
        assert app.ctl.agent.kg.lookup("krill") is not None

    drive(workbench(str(ask_scenario(tmp_path))), script)


def test_user_interact_skip_is_no_answer(workbench, tmp_path):
    async def script(app, pilot):
        for _ in range(6):
            await pilot.press("space")
        await pilot.click("#skip")
        await pilot.press("space")
        assert app.ctl.latest["act"]["output"].endswith("; no answer")

    drive(workbench(str(ask_scenario(tmp_path))), script)


def test_phase_diagram_snapshot(snap_compare, workbench):
    # "stop before learn" chosen; cycle 1 stops before learn, space finishes it, then p steps
    # cycle 2 through observe, orient and decide: the diagram marks act as next and learn as a
    # stop, the status line names the phase, the score table shows the pending choice
    def setup(pilot):
        pilot.app.query_one(PhaseDiagram).toggle("learn")

    assert snap_compare(workbench("zoo"), press=["space", "space", "p", "p", "p"], run_before=setup,
                        terminal_size=SIZE)


def test_stop_before_observe_pauses_a_running_workbench_after_each_cycle(workbench):
    async def script(app, pilot):
        app.query_one(PhaseBar).show("observe", set(), None, (None, None), None)
        app.query_one(PhaseDiagram).toggle("observe")
        await pilot.press("r")  # sync workbench: runs one cycle per command
        assert not app.running and recorded(app) == 1
        assert "stopped before observe" in text_of(app.query_one("#status"))

    drive(workbench("zoo"), script)


def test_escape_leaves_the_action_waiting_and_space_asks_again(workbench, tmp_path):
    async def script(app, pilot):
        await pilot.press("space", "space", "space", "space")
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, ApprovalScreen) and app.ctl.waiting is not None
        await pilot.press("space")  # nothing runs unapproved: the dialog comes back
        assert isinstance(app.screen, ApprovalScreen) and recorded(app) == 3
        await pilot.click("#approve")
        await pilot.press("space")
        assert recorded(app) == 4

    drive(workbench("shadow", config_path=_approval_config(tmp_path)), script)


# ---- dialogs fit an 80×24 terminal (issue 28: wider than the screen, the fork's last field and tool list off the bottom)

def _fits(app, selectors: list[str], size=(80, 24)) -> None:
    from textual.geometry import Region

    screen = Region(0, 0, *size)
    box = app.screen.query_one("Vertical")  # the dialog's frame
    assert screen.contains_region(box.region), (box.region, size)
    for sel in selectors:
        w = app.screen.query_one(sel)
        assert w.region.height > 0 and box.region.contains_region(w.region), (sel, w.region, box.region)


def test_the_approval_dialog_fits_80x24(workbench, tmp_path):
    async def script(app, pilot):
        await pilot.press("space", "space", "space", "space")
        assert isinstance(app.screen, ApprovalScreen)
        await pilot.pause()
        _fits(app, ["#approval-action", "#approval-input", "#approve", "#reject", "#edit"])

    drive(workbench("shadow", config_path=_approval_config(tmp_path)), script, size=(80, 24))


def test_the_question_dialog_fits_80x24(workbench, tmp_path):
    async def script(app, pilot):
        for _ in range(6):
            await pilot.press("space")
        assert isinstance(app.screen, QuestionScreen)
        await pilot.pause()
        _fits(app, ["#question-text", "#question-answer", "#answer", "#skip"])

    drive(workbench(str(ask_scenario(tmp_path))), script, size=(80, 24))


def test_the_fork_dialog_fits_80x24(workbench):
    from akh_tui.tui.travel import ForkScreen

    async def script(app, pilot):
        for _ in range(3):
            await pilot.press("space")
        await pilot.press("f")
        assert isinstance(app.screen, ForkScreen)
        await pilot.pause()
        _fits(app, ["#fork-name", "#fork-arch-guardian", "#fork-tools", "#fork-goal", ".travel-hint"])

    drive(workbench("zoo"), script, size=(80, 24))
