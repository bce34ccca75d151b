"""Hot reload (issue 28 §2): the scenario's rule files and psyche file read again, in force from
the next cycle, recorded with the text read, so rewind and resume replay the reload without the
files; a broken file changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from akh_tui.engine import InputError, Locations, Run
from akh_tui.engine.store.session import SessionStore

DATA = Path(__file__).resolve().parents[3] / "akh_tui" / "data"
SWIM = '\n[[rule]]\nname = "sea-swimmer"\nif = [["?x", "lives-in", "ocean"]]\nthen = [["?x", "is-a", "swimmer"]]\n'


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    """The zoo scenario copied where a test may edit its files."""
    for folder in ("scenarios", "kg", "rules", "psyche"):
        shutil.copytree(DATA / folder, tmp_path / "files" / folder)
    sc = tmp_path / "files" / "scenarios" / "zoo.toml"
    sc.write_text(sc.read_text(encoding="utf-8") + '\n[psyche]\nfile = "../psyche/default.toml"\n', encoding="utf-8")
    return sc


def rule_names(run: Run, cycle: int | None = None) -> list[str]:
    return [r["rule"] for r in run.rules(cycle=cycle)["rules"]]


def test_a_reload_takes_effect_at_the_next_cycle(tmp_path, scenario):
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7)
    try:
        for _ in range(3):
            run.step()
        assert "sea-swimmer" not in rule_names(run)
        assert run.reload() == ["nothing to reload: the scenario's goals and its rule, triple, psyche and plugin files are as the run has them"]
        rules_file = scenario.parent.parent / "rules" / "biology.toml"
        rules_file.write_text(rules_file.read_text(encoding="utf-8") + SWIM, encoding="utf-8")
        assert run.reload() == ["rules reloaded from biology.toml: in force from cycle 4"]
        assert "sea-swimmer" not in rule_names(run)  # cycle 3 ended with the old rules
        run.step()
        assert "sea-swimmer" in rule_names(run)
        # the reloaded rules join every known fact, not only those added after the reload
        for _ in range(12):
            run.step()
            if run.query("(whale is-a swimmer)")["total"]:
                break
        assert run.query("(whale is-a swimmer)")["total"] == 1
    finally:
        run.close()


def test_a_rewind_across_a_reload_replays_it_without_the_file(tmp_path, scenario):
    loc = Locations.resolve(data_dir=tmp_path / "data")
    store = tmp_path / "snappy.db"
    # a snapshot every 4 cycles: restores start after the reload, from a snapshot that must hold it
    run = Run.start(loc, str(scenario), 7, store=SessionStore(store, every=4))
    rules_file = scenario.parent.parent / "rules" / "biology.toml"
    original = rules_file.read_text(encoding="utf-8")
    for _ in range(3):
        run.step()
    rules_file.write_text(original + SWIM, encoding="utf-8")
    run.reload()
    for _ in range(5):
        run.step()
    live = rule_names(run)
    lived = run.view()
    # the file changes again (here: back to what it was); the run keeps what it reloaded
    rules_file.write_text(original, encoding="utf-8")
    assert "sea-swimmer" in rule_names(run, cycle=5) and "sea-swimmer" in rule_names(run, cycle=8)
    assert "sea-swimmer" not in rule_names(run, cycle=3)  # before the reload: the old rules
    assert run.rewind(7)["goals"] == run.rewind(7)["goals"]
    assert run.rewind(8)["goals"] == lived["goals"]
    run.close()
    again = Run.resume(loc, store=store)  # resumed: the recorded rules, not the file on disk
    try:
        assert rule_names(again) == live
    finally:
        again.close()


def test_a_broken_file_changes_nothing_and_says_where(tmp_path, scenario):
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7)
    try:
        for _ in range(2):
            run.step()
        before = rule_names(run)
        rules_file = scenario.parent.parent / "rules" / "biology.toml"
        rules_file.write_text(rules_file.read_text(encoding="utf-8") + '\n[[rule]]\nname = "half"\nif = [["?x"]]\n',
                              encoding="utf-8")
        psyche_file = scenario.parent.parent / "psyche" / "default.toml"
        psyche_file.write_text(psyche_file.read_text(encoding="utf-8").replace("0.7", "0.2", 1), encoding="utf-8")
        with pytest.raises(InputError) as exc:
            run.reload()
        assert exc.value.file is not None and exc.value.file.endswith("biology.toml")
        assert exc.value.line is not None and exc.value.line > 10
        run.step()
        assert rule_names(run) == before
        assert run.view()["psyche"] == run.rewind(1)["psyche"]  # the psyche was not taken either
    finally:
        run.close()


def test_a_changed_psyche_file_is_reloaded_a_same_one_is_not(tmp_path, scenario):
    run = Run.start(Locations.resolve(data_dir=tmp_path / "data"), str(scenario), 7)
    try:
        run.step()
        psyche_file = scenario.parent.parent / "psyche" / "default.toml"
        text = psyche_file.read_text(encoding="utf-8")
        psyche_file.write_text(text.replace("explorer = 0.5", "explorer = 0.95"), encoding="utf-8")
        assert run.reload() == ["psyche reloaded from default.toml: in force from cycle 2"]
        assert run.reload() == ["nothing to reload: the scenario's goals and its rule, triple, psyche and plugin files are as the run has them"]
        run.step()
        assert run.view()["psyche"]["archetypes"]["explorer"] == 0.95
    finally:
        run.close()


def test_new_lines_of_a_triple_file_are_added_and_replayed(tmp_path, scenario):
    loc = Locations.resolve(data_dir=tmp_path / "data")
    run = Run.start(loc, str(scenario), 7)
    try:
        run.step()
        kg_file = scenario.parent.parent / "kg" / "zoo.tsv"
        original = kg_file.read_text(encoding="utf-8")
        kg_file.write_text(original + "dog\tis-a\tmammal\norca\tlives-in\tocean\t0.9\n", encoding="utf-8")
        assert run.reload() == ["1 new triple(s) from zoo.tsv added"]
        row = run.query("(orca lives-in ?x)")["rows"][0]["triples"][0]
        assert (row["provenance"], row["cycle"], row["confidence"]) == ("asserted", 1, 0.9)
        run.step()
        kg_file.write_text(original + "orca\tlives-in\n", encoding="utf-8")  # broken: one field short
        with pytest.raises(InputError) as exc:
            run.reload()
        assert exc.value.file is not None and exc.value.file.endswith("zoo.tsv")
        assert exc.value.line == original.count("\n") + 1
        kg_file.write_text(original, encoding="utf-8")  # gone from the file: the run keeps what it took
        run.step()
        assert run.query("(orca lives-in ocean)", cycle=2)["total"] == 1
        assert run.query("(orca lives-in ocean)", cycle=1)["total"] == 0  # the state before the reload
    finally:
        run.close()

