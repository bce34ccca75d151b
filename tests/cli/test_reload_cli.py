"""`agent reload` (issue 28 §2): hot reload of the current run's files, headless."""

from __future__ import annotations

import json
import sys

from tests.engine.runs.test_reload import SWIM, scenario  # noqa: F401 (the fixture)


def test_agent_reload_headless(cli, tmp_path, scenario):
    cli("agent", "run", "--scenario", str(scenario), "--max-cycles", "3")
    rules_file = scenario.parent.parent / "rules" / "biology.toml"
    original = rules_file.read_text(encoding="utf-8")
    rules_file.write_text(original + '\n[[rule]]\nname = "half"\nif = [["?x"]]\n', encoding="utf-8")
    bad = cli("agent", "reload", check_rc=2)
    assert "biology.toml:14" in bad.stderr and "rule[1].if[0]" in bad.stderr and "Traceback" not in bad.stderr
    rules_file.write_text(original + SWIM, encoding="utf-8")
    psyche_file = scenario.parent.parent / "psyche" / "default.toml"
    psyche_file.write_text(psyche_file.read_text(encoding="utf-8").replace("explorer = 0.5", "explorer = 0.95"),
                           encoding="utf-8")
    out = cli("agent", "reload").stdout
    assert out.splitlines() == ["rules reloaded from biology.toml: in force from cycle 4"]  # the psyche: --psyche
    out = cli("agent", "reload", "--psyche").stdout
    assert out.splitlines() == ["rules reloaded from biology.toml: in force from cycle 4",
                                "psyche reloaded from default.toml: in force from cycle 4"]
    rules_file.write_text(original, encoding="utf-8")  # the file changes back: the run keeps what it reloaded
    cli("agent", "resume", "--max-cycles", "1")
    assert "sea-swimmer" in cli("agent", "rules").stdout


def test_a_pin_past_a_reload_checks_same_without_the_changed_file(cli, tmp_path, scenario):
    cli("agent", "run", "--scenario", str(scenario), "--max-cycles", "2")
    rules_file = scenario.parent.parent / "rules" / "biology.toml"
    rules = rules_file.read_text(encoding="utf-8")
    rules_file.write_text(rules + SWIM, encoding="utf-8")
    assert cli("agent", "reload").stdout.splitlines() == ["rules reloaded from biology.toml: in force from cycle 3"]
    cli("agent", "resume", "--max-cycles", "4")
    pin_file = scenario.parent / "reloaded.pin.json"
    cli("sessions", "pin", "1", "--cycle", "6", "-o", str(pin_file))
    rules_file.write_text(rules, encoding="utf-8")  # the file as it was: the pin holds what was reloaded
    out = cli("check", str(pin_file)).stdout
    assert "cycle 6: same" in out


def test_agent_reload_takes_the_scenarios_goals(cli, tmp_path, scenario):  # noqa: F811
    cli("agent", "run", "--scenario", str(scenario), "--max-cycles", "2")
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(text + '\n[[goals]]\ndescription = "Find penguins"\npriority = 300\n', encoding="utf-8")
    bad = cli("agent", "reload", check_rc=2)
    assert f"{scenario.name}:{text.count(chr(10)) + 4}" in bad.stderr and "goals[3].priority" in bad.stderr
    assert "Traceback" not in bad.stderr
    scenario.write_text(text + '\n[[goals]]\ndescription = "Find penguins"\npriority = 250\n', encoding="utf-8")
    out = cli("agent", "reload").stdout
    assert "goals reloaded from zoo.toml: goal #4 added: in force from cycle 3" in out.splitlines()
    scenario.write_text(text, encoding="utf-8")  # the file as it was: the run keeps the goal it took
    summary = json.loads(cli("agent", "resume", "--max-cycles", "1", "--json").stdout)
    assert {"id": 4, "description": "Find penguins", "priority": 250} in [
        {k: g[k] for k in ("id", "description", "priority")} for g in summary["goals"]]


def test_agent_reload_of_a_plugin_needs_its_folder_trusted(cli, tmp_path):
    from akh_tui.engine.tools import hotload, registry, trust
    from tests.engine.tools.test_plugins import harbour

    registry.refresh()
    hotload.forget()
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    cli("agent", "run", "--scenario", str(sc), "--max-cycles", "1", "--allow-plugins")
    tool.write_text(tool.read_text(encoding="utf-8").replace("Offer(True, 0.9,", "Offer(True, 0.6,"), encoding="utf-8")
    refused = cli("agent", "reload", check_rc=2)
    said = " ".join(refused.stderr.split())  # as the terminal wraps it
    assert f"akh-tui trust add {sc.parent.resolve()}" in said and "not reloaded" in said and "Traceback" not in said
    out = cli("agent", "reload", "--allow-plugins").stdout
    assert "plugin tidetool.py reloaded (tools: tide_table): in force from cycle 2" in out.splitlines()
    cli("agent", "resume", "--max-cycles", "1", "--allow-plugins")
    from akh_tui.engine import Locations, Run

    with trust.agreed(trust.Consent(any_once=True)):
        run = Run.open_readonly(Locations.resolve(data_dir=tmp_path / "data"))
        try:
            rec = run.record(2)
        finally:
            run.close(checkpoint=False)
    assert next(c for c in rec["decide"]["candidates"] if c["tool"] == "tide_table")["base"] == 0.6
    registry.refresh()
    hotload.forget()
    sys.modules.pop("tidetool", None)


def test_a_pin_past_a_goals_reload_checks_same_without_the_changed_file(cli, tmp_path, scenario):  # noqa: F811
    cli("agent", "run", "--scenario", str(scenario), "--max-cycles", "2")
    text = scenario.read_text(encoding="utf-8")
    scenario.write_text(text.replace('criteria = "orca porpoise"', 'criteria = "orca porpoise"\npriority = 220') +
                        '\n[[goals]]\ndescription = "Find penguins"\n', encoding="utf-8")
    assert cli("agent", "reload").stdout.splitlines() == [  # (agent reload records the rule files whatever they hold)
        "rules reloaded from biology.toml: in force from cycle 3",
        "goals reloaded from zoo.toml: goal #3 priority 220; goal #4 added: in force from cycle 3"]
    cli("agent", "resume", "--max-cycles", "4")
    pin_file = scenario.parent / "goals.pin.json"
    cli("sessions", "pin", "1", "--cycle", "6", "-o", str(pin_file))
    scenario.write_text(text, encoding="utf-8")  # the file as it was: the pin holds the goals reloaded
    assert "cycle 6: same" in cli("check", str(pin_file)).stdout


def test_agent_resume_says_when_the_files_of_the_runs_start_changed(cli, tmp_path, scenario):  # noqa: F811
    cli("agent", "run", "--scenario", str(scenario), "--max-cycles", "1")
    assert "changed since this run started" not in cli("agent", "resume", "--max-cycles", "1").stderr
    kg_file = scenario.parent.parent / "kg" / "zoo.tsv"
    kg_file.write_text(kg_file.read_text(encoding="utf-8").replace("whale", "whales", 1), encoding="utf-8")
    said = " ".join(cli("agent", "resume", "--max-cycles", "1").stderr.split())
    assert "zoo.tsv changed since this run started: its start is rebuilt from the files as they are now" in said


def test_agent_reload_leaves_an_unchanged_plugin_of_an_untrusted_folder_alone(cli, tmp_path):
    """A run that goes without its scenario's plugin (its folder never trusted) still reloads
    what the designer edits: the plugin file is as the run started, so it is not read again."""
    from akh_tui.engine.tools import hotload, registry
    from tests.engine.tools.test_plugins import harbour

    registry.refresh()
    hotload.forget()
    sc = harbour(tmp_path, criteria="highwater neverfound")
    cli("agent", "run", "--scenario", str(sc), "--max-cycles", "1")
    sc.write_text(sc.read_text(encoding="utf-8") + '\n[[goals]]\ndescription = "Find the harbour of kestrel"\n',
                  encoding="utf-8")
    assert cli("agent", "reload").stdout.splitlines() == [
        "goals reloaded from harbour.toml: goal #2 added: in force from cycle 2"]
    assert "tidetool" not in sys.modules
