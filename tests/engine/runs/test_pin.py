"""Pinned behaviours: `sessions pin` keeps what a run decided at chosen cycles, `check` reruns the
scenario headless and says "same" (exit 0), what changed (exit 1), or what is wrong with the
pin file (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _own_zoo(tmp_path: Path) -> Path:
    """The zoo scenario in a folder of its own, with its own psyche file (to edit later)."""
    d = tmp_path / "lesson"
    d.mkdir()
    shutil.copy(ROOT / "akh_tui/data/psyche/default.toml", d / "psyche.toml")
    text = (ROOT / "akh_tui/data/scenarios/zoo.toml").read_text()
    text = text.replace('"../kg/zoo.tsv"', json.dumps(str(ROOT / "akh_tui/data/kg/zoo.tsv")))
    text = text.replace('"../rules/biology.toml"', json.dumps(str(ROOT / "akh_tui/data/rules/biology.toml")))
    (d / "zoo.toml").write_text(text + '\n[psyche]\nfile = "psyche.toml"\n')
    return d


def test_a_pin_of_an_unchanged_scenario_checks_same(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "8")
    proc = cli("sessions", "pin", "1", "--cycle", "3", "--cycle", "6", "-o", "demo.pin.json")
    assert "pinned cycle(s) 3, 6" in proc.stdout
    pin = json.loads((tmp_path / "demo.pin.json").read_text())
    assert pin["akh_pin"] == 1 and pin["scenario"] == "zoo" and pin["seed"] == 7
    assert [c["cycle"] for c in pin["cycles"]] == [3, 6] and len(pin["trail"]) == 6
    c3 = pin["cycles"][0]
    assert c3["tool"] == "kg_query" and c3["outcome"]["progress"] == "completed"
    assert c3["factors"]["plan"] == 0.1 and c3["breakdown"].startswith("[score=")
    assert {g["id"]: g["status"] for g in c3["goals"]}[1] == "completed"
    proc = cli("check", "demo.pin.json")
    assert proc.stdout.count(": same") == 2 + 1 and "cycle 3: same" in proc.stdout
    # a forked branch: its edits are user inputs, replayed by the check
    cli("agent", "fork", "--at", "2", "--name", "bold", "--set", "explorer=0.95", "--goal", "Find birds")
    cli("agent", "resume", "--max-cycles", "4")
    cli("sessions", "pin", "1", "--branch", "bold", "--cycle", "5", "-o", "bold.pin.json")
    bold = json.loads((tmp_path / "bold.pin.json").read_text())
    assert [(i["after_cycle"], i["kind"]) for i in bold["inputs"]] == [(2, "edits")]
    out = json.loads(cli("check", "bold.pin.json", "--json").stdout)
    assert out["same"] and out["parted"] is None and out["cycles"][0]["same"]


def test_a_changed_weight_fails_the_check_and_says_which_factor_moved(cli, tmp_path):
    lesson = _own_zoo(tmp_path)
    cli("agent", "run", "--scenario", str(lesson / "zoo.toml"), "--max-cycles", "6")
    cli("sessions", "pin", "1", "--cycle", "1", "--cycle", "5", "-o", str(lesson / "demo.pin.json"))
    pin = json.loads((lesson / "demo.pin.json").read_text())
    assert pin["scenario"] == "zoo.toml"  # beside the pin: the folder can be handed out
    assert cli("check", str(lesson / "demo.pin.json")).returncode == 0
    psyche = lesson / "psyche.toml"
    psyche.write_text(psyche.read_text().replace("sage = 0.7", "sage = 0.2"))
    proc = cli("check", str(lesson / "demo.pin.json"), check_rc=1)
    assert "cycle 1: changed" in proc.stdout
    assert "archetype +0.030 → " in proc.stdout  # the sage bonus of the chosen tool moved
    assert "behaviour changed" in proc.stdout
    out = json.loads(cli("check", str(lesson / "demo.pin.json"), "--json", check_rc=1).stdout)
    first = out["cycles"][0]
    assert not first["same"] and any(c.startswith("factors of ") for c in first["changes"])
    assert out["parted"] is None  # the numbers moved, the choices did not
    # a weaker guardian: similarity_search loses cycle 2, and the run takes another road
    psyche.write_text(psyche.read_text().replace("sage = 0.2", "sage = 0.7").replace("guardian = 0.4", "guardian = 0.2"))
    proc = cli("check", str(lesson / "demo.pin.json"), check_rc=1)
    assert "the run parted at cycle 2: pinned similarity_search(mammal) -> advanced, now " in proc.stdout
    assert "cycle 5: changed" in proc.stdout


def test_a_bad_pin_file_exits_2_naming_the_field(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "4")
    cli("sessions", "pin", "1", "--cycle", "2", "-o", "good.pin.json")
    good = (tmp_path / "good.pin.json").read_text()
    cases = [
        ("{not json", "not JSON"),
        ('{"cycles": []}', "akh_pin"),
        (good.replace('"akh_pin": 1', '"akh_pin": 9'), "version 9"),
        (good.replace('"seed": 7', '"seed": "seven"'), "field 'seed'"),
        (good.replace('"decider": "utility"', '"decider": "llm"'), "cannot be rerun headless"),
        (good.replace('"tool": "similarity_search"', '"tool": 3'), "field 'cycles[0].tool'"),
        (good.replace('"cycle": 2', '"cycle": 40'), "outside the pinned trail"),
        (good.replace('"scenario": "zoo"', '"scenario": "nowhere"'), "unknown scenario"),
    ]
    for i, (text, words) in enumerate(cases):
        (tmp_path / f"bad{i}.pin.json").write_text(text)
        proc = cli("check", f"bad{i}.pin.json", check_rc=2)
        assert words in proc.stderr, (i, proc.stderr)
        assert f"bad{i}.pin.json" in proc.stderr or "scenario" in proc.stderr
    # the field's line is named
    assert "bad5.pin.json:" in cli("check", "bad5.pin.json", check_rc=2).stderr.replace("\n", "")
    # what a pin cannot be made from
    for argv, words in [
        (("--cycle", "9"), "cycle 9 is not recorded"),
        (("--cycle", "0"), "cycle 0 is not recorded"),
    ]:
        proc = cli("sessions", "pin", "1", *argv, "-o", "x.pin.json", check_rc=2)
        assert words in proc.stderr
    # an imported trace has no scenario state: it can be replayed, not rerun
    cli("sessions", "export", "1", "-o", "run.jsonl")
    cli("sessions", "import", "run.jsonl")
    proc = cli("sessions", "pin", "2", "--cycle", "1", "-o", "x.pin.json", check_rc=2)
    assert "imported from a trace" in proc.stderr
    assert not (tmp_path / "x.pin.json").exists()
