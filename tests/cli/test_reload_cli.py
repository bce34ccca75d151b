"""`agent reload` (issue 28 §2): hot reload of the current run's files, headless."""

from __future__ import annotations

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
