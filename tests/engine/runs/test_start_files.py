"""What a run's start was built from is recorded (issue 28's noticed defect): a resume rebuilds
the start from the scenario's files as they are then, so when one holds something else than when
the run started, the run's warnings say which."""

from __future__ import annotations

from akh_tui.engine import Locations, Run
from akh_tui.engine.runs.scenario import changed_since_start, load_scenario
from tests.engine.runs.test_reload import SWIM, scenario  # noqa: F401 (the fixture)

SAID = "changed since this run started"


def test_a_resume_says_which_start_files_changed(tmp_path, scenario):  # noqa: F811
    loc = Locations.resolve(data_dir=tmp_path / "data")
    run = Run.start(loc, str(scenario), 7)
    files = dict(run.meta["built_from"]["files"])
    assert set(files) == {str(scenario), *(str(p) for p in load_scenario(str(scenario)).kg),
                          *(str(p) for p in load_scenario(str(scenario)).rules)}
    run.run_cycles(2)
    assert not any(SAID in w for w in run.warnings)
    run.close()
    again = Run.resume(loc)
    assert not any(SAID in w for w in again.warnings)  # nothing changed: nothing said
    again.close()
    rules_file = scenario.parent.parent / "rules" / "biology.toml"
    rules_file.write_text(rules_file.read_text(encoding="utf-8") + SWIM, encoding="utf-8")
    scenario.write_text(scenario.read_text(encoding="utf-8") + "\n# a comment\n", encoding="utf-8")
    again = Run.resume(loc)
    try:
        [said] = [w for w in again.warnings if SAID in w]
        assert said.startswith("zoo.toml, biology.toml changed since this run started")
        readonly = Run.open_readonly(loc)
        assert any(SAID in w for w in readonly.warnings)
        readonly.close(checkpoint=False)
    finally:
        again.close()


def test_a_run_that_recorded_nothing_says_nothing(tmp_path, scenario):  # noqa: F811
    sc = load_scenario(str(scenario))
    assert changed_since_start(sc, None) == []
    assert changed_since_start(sc, [[str(scenario), "0" * 64], ["/gone/for/good.tsv", "1" * 64]]) == [
        "zoo.toml", "good.tsv"]
