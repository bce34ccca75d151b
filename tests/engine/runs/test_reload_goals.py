"""Hot reload of the scenario's goals (issue 28 §2): editing the file's [[goals]] and reloading
adds the new goals, abandons the removed ones, updates a changed priority or criteria, in force
from the next cycle; the goals' content is the recorded input, so rewind, fork, resume and a pin
reproduce the run without the file; an invalid file is refused with its file, line and field."""

from __future__ import annotations

import pytest

from akh_tui.engine import InputError, Locations, Run
from akh_tui.engine.store.session import SessionStore
from tests.engine.runs.test_reload import scenario  # noqa: F401 (the fixture)

NEW_GOAL = '\n[[goals]]\ndescription = "Find animals that live in the ocean"\ncriteria = "(orca hunts seal)"\npriority = 250\n'


def goals(run: Run, cycle: int | None = None) -> dict[str, tuple[str, int]]:
    view = run.view() if cycle is None else run.rewind(cycle)
    return {g["description"]: (g["status"], g["priority"]) for g in view["goals"] if g["parent"] is None}


def edit(path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_added_removed_and_reprioritised_goals_apply_at_the_next_cycle(tmp_path, scenario):  # noqa: F811
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7)
    try:
        run.step()
        before = run.record(1)
        scenario.write_text(scenario.read_text(encoding="utf-8") + NEW_GOAL, encoding="utf-8")
        edit(scenario, 'description = "Find animals similar to dolphin"\ncriteria = "orca porpoise"',
             'description = "Find animals similar to dolphin"\ncriteria = "orca porpoise"\npriority = 200')
        edit(scenario, '[[goals]]\ndescription = "Find mammals"\n', "")
        words = run.reload()
        assert words == ["goals reloaded from zoo.toml: goal #1 abandoned: no longer in zoo.toml; goal #3 priority "
                         "200; goal #4 added: in force from cycle 2"]
        now = goals(run)
        assert now["Find mammals"] == ("failed", 128)
        assert now["Find animals similar to dolphin"] == ("active", 200)
        assert now["Find animals that live in the ocean"] == ("active", 250)
        g1 = next(g for g in run.view()["goals"] if g["id"] == 1)
        assert "removed from zoo.toml" in g1["fail_reason"]
        rec = run.step()
        assert rec["goal"]["id"] == 4  # the new goal, of the highest priority, is worked on next
        assert before["goal"]["id"] != 4
        # reloading the same file again changes nothing
        assert run.reload()[0].startswith("nothing to reload")
    finally:
        run.close()


def test_changed_criteria_count_again_and_reopen_a_completed_goal(tmp_path, scenario):  # noqa: F811
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7)
    try:
        run.run_cycles(40, should_stop=lambda rec: goals(run)["Classify whales"][0] == "completed")
        assert goals(run)["Classify whales"][0] == "completed"
        edit(scenario, 'criteria = "(whale is-a mammal)"', 'criteria = "(whale lives-in ocean)"')
        assert run.reload() == [f"goals reloaded from zoo.toml: goal #2 criteria '(whale lives-in ocean)': in force "
                                f"from cycle {run.cycle + 1}"]
        g2 = next(g for g in run.view()["goals"] if g["id"] == 2)
        assert (g2["status"], g2["coverage"]) == ("active", 0.0)
    finally:
        run.close()


def test_a_rewind_fork_and_resume_replay_the_reload_without_the_file(tmp_path, scenario):  # noqa: F811
    loc = Locations.resolve(data_dir=tmp_path / "data")
    store = tmp_path / "snappy.db"
    run = Run.start(loc, str(scenario), 7, store=SessionStore(store, every=4))
    original = scenario.read_text(encoding="utf-8")
    for _ in range(3):
        run.step()
    scenario.write_text(original + NEW_GOAL, encoding="utf-8")
    run.reload()
    run.run_cycles(5)
    lived = goals(run)
    assert "Find animals that live in the ocean" in lived
    scenario.write_text(original, encoding="utf-8")  # the file back as it was: the run keeps what it reloaded
    assert "Find animals that live in the ocean" not in goals(run, 3)  # before the reload
    assert goals(run, 8) == lived
    run.close()
    again = Run.resume(loc, store=store)
    try:
        assert goals(again) == lived
        # the file lacks the goal now: a reload abandons it (the run's goals, not the file's, were in force)
        assert again.reload() == ["goals reloaded from zoo.toml: goal #4 abandoned: no longer in zoo.toml: in force "
                                  "from cycle 9"]
        again.fork(5, "from-5")  # after the first reload, before the second: the goal is there, active
        assert goals(again)["Find animals that live in the ocean"][0] == "active"
        again.step()
        again.fork(2, "from-2")  # before any reload: the scenario's three goals only
        assert "Find animals that live in the ocean" not in goals(again)
    finally:
        again.close()


def test_an_invalid_goal_is_refused_with_file_line_and_field_and_nothing_changes(tmp_path, scenario):  # noqa: F811
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7)
    try:
        run.step()
        before = goals(run)
        scenario.write_text(scenario.read_text(encoding="utf-8") + NEW_GOAL.replace("250", "300"), encoding="utf-8")
        with pytest.raises(InputError) as exc:
            run.reload()
        assert exc.value.file == str(scenario) and exc.value.field == "goals[3].priority"
        assert exc.value.line == scenario.read_text(encoding="utf-8").count("\n")  # the last line
        assert goals(run) == before
        scenario.write_text(scenario.read_text(encoding="utf-8").replace("300", "250") +
                            '\n[[goals]]\ndescription = "Find mammals"\n', encoding="utf-8")
        with pytest.raises(InputError) as exc:
            run.reload()
        assert exc.value.field == "goals[4].description" and "same description as goals[0]" in exc.value.message
        assert goals(run) == before
    finally:
        run.close()


def test_a_run_given_its_goals_does_not_take_the_files(tmp_path, scenario):  # noqa: F811
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7, goals=["Find mammals"])
    try:
        scenario.write_text(scenario.read_text(encoding="utf-8") + NEW_GOAL, encoding="utf-8")
        assert run.reload()[0].startswith("nothing to reload")
        assert list(goals(run)) == ["Find mammals"]
    finally:
        run.close()
