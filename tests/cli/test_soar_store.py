"""A Soar run recorded in the session store like an OODA run (issue 30): listed, shown,
exported as the very bytes `--trace` writes, resumed and forked (an operator forced), each
decision before the fork replayed as recorded."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("soar_sml", reason="soar-sml is in the test extra: pip install -e '.[test]'")

DATA = Path(__file__).parents[1] / "data"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_a_soar_run_is_listed_shown_and_exported_as_its_trace(cli, tmp_path) -> None:
    trace = tmp_path / "t.jsonl"
    out = cli("agent", "run", "--scenario", "water-jug", "--trace", str(trace)).stdout
    assert "(run 1, branch main" in out
    runs = json.loads(cli("sessions", "list", "--json").stdout)
    assert [(r["id"], r["name"], r["architecture"]) for r in runs] == [(1, "water-jug", "soar")]
    decisions = len(_lines(trace)) - 1
    assert runs[0]["branches"][0]["last_cycle"] == decisions and runs[0]["branches"][0]["current"]
    assert "soar" in cli("sessions", "list").stdout
    assert "a Soar agent" in cli("sessions", "show", "1").stdout
    cli("sessions", "export", "1", "-o", str(tmp_path / "e.jsonl"))
    assert (tmp_path / "e.jsonl").read_bytes() == trace.read_bytes()


def test_resume_continues_a_soar_run_to_the_same_decisions(cli, tmp_path) -> None:
    cli("agent", "run", "--scenario", "water-jug", "--trace", str(tmp_path / "whole.jsonl"))
    cli("agent", "run", "--scenario", "water-jug", "--max-cycles", "5")
    res = cli("agent", "resume", "--max-cycles", "3")
    assert "at decision 5" in res.stderr and "(decision 8)" in res.stdout
    data = json.loads(cli("agent", "resume", "--json").stdout)
    assert data["run"] == 2 and data["stop"] == "halted" and data["decisions"][0]["decision"] == 9
    cli("sessions", "export", "2", "-o", str(tmp_path / "resumed.jsonl"))
    assert (tmp_path / "resumed.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert "0 decision(s) run, stopped: halted" in cli("agent", "resume").stdout  # nothing after the halt


def test_a_fork_forcing_an_operator_replays_up_to_it_and_matches_a_headless_select(cli, tmp_path) -> None:
    cli("agent", "run", "--scenario", "water-jug")
    main = json.loads(cli("sessions", "export", "1", "-o", "-").stdout.splitlines()[4])  # decision 4
    other = next(c["id"] for c in main["candidates"] if not c["chosen"])
    bad = cli("agent", "fork", "--at", "3", "--name", "alt", "--select", "O999", check_rc=2)
    assert "decision 4" in bad.stderr and "O999" in bad.stderr
    assert [b["name"] for b in json.loads(cli("sessions", "list", "--json").stdout)[0]["branches"]] == ["main"]
    ev = json.loads(cli("agent", "fork", "--at", "3", "--name", "alt", "--select", other, "--json").stdout)
    assert ev["record"]["forced"] == other and ev["record"]["selected"]["id"] == other
    cli("agent", "resume")
    cli("sessions", "export", "1", "--branch", "alt", "-o", str(tmp_path / "alt.jsonl"))
    cli("sessions", "export", "1", "-o", str(tmp_path / "main.jsonl"))
    alt, whole = _lines(tmp_path / "alt.jsonl"), _lines(tmp_path / "main.jsonl")
    assert alt[:4] == whole[:4] and alt[4] != whole[4]
    cli("agent", "run", "--scenario", "water-jug", "--select", f"4={other}", "--trace", str(tmp_path / "sel.jsonl"))
    assert _lines(tmp_path / "sel.jsonl") == alt  # the fork is the headless --select, decision for decision
    shown = cli("sessions", "show", "1").stdout
    assert f"select {other} at" in shown and "main @ cycle 3" in shown


def test_ooda_commands_on_a_current_soar_run_say_so(cli) -> None:
    cli("agent", "run", "--scenario", "water-jug", "--max-cycles", "2")
    err = cli("agent", "why", "--cycle", "1", check_rc=2).stderr
    assert "Soar run" in err
    assert "Soar run" in cli("sessions", "search", "1", "tool=reason", check_rc=2).stderr
    refused = cli("agent", "fork", "--at", "1", "--name", "b", "--set", "explorer=0.9", check_rc=2).stderr
    assert "--set" in refused


def test_a_changed_soar_file_is_said_on_resume(cli, tmp_path) -> None:
    from akh_tui.engine.soar.scenario import find_soar

    sc = find_soar("water-jug")
    assert sc is not None
    prods = tmp_path / "wj.soar"
    prods.write_text(sc.productions.read_text(encoding="utf-8"), encoding="utf-8")
    mine = tmp_path / "wj.toml"
    mine.write_text('name = "wj"\narchitecture = "soar"\nproductions = "wj.soar"\nseed = 7\n', encoding="utf-8")
    cli("agent", "run", "--scenario", str(mine), "--max-cycles", "6")
    assert "(decision 6)" in cli("agent", "resume", "--max-cycles", "0").stdout  # unchanged: replays as recorded
    text = prods.read_text(encoding="utf-8")
    assert "^operator <o> = 0.6)" in text
    prods.write_text(text.replace("^operator <o> = 0.6)", "^operator <o> = 0.01)"), encoding="utf-8")
    err = cli("agent", "resume", check_rc=2).stderr
    assert "does not replay as recorded" in err


def test_a_store_without_soar_runs_gets_no_soar_table_and_an_old_store_takes_one(cli, tmp_path) -> None:
    data = tmp_path / "data"
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "2")
    names = {r[0] for r in sqlite3.connect(data / "session.db").execute("SELECT name FROM sqlite_master")}
    assert not any("soar" in n for n in names)
    old = tmp_path / "old"
    old.mkdir()
    (old / "session.db").write_bytes(gzip.decompress((DATA / "schema4_session.db.gz").read_bytes()))
    before = json.loads(cli("sessions", "list", "--json", data_dir=old).stdout)
    cli("agent", "run", "--scenario", "water-jug", data_dir=old)
    after = json.loads(cli("sessions", "list", "--json", data_dir=old).stdout)
    def bare(runs: list[dict]) -> list[dict]:  # the current branch moved to the new run
        return [r | {"branches": [{k: v for k, v in b.items() if k != "current"} for b in r["branches"]]} for r in runs]

    assert bare(after[:-1]) == bare(before) and after[-1]["architecture"] == "soar"
    cli("sessions", "delete", str(after[-1]["id"]), data_dir=old)
    left = sqlite3.connect(old / "session.db").execute("SELECT COUNT(*) FROM soar_decisions").fetchone()
    assert left == (0,)


def test_sessions_compare_aligns_a_soar_run_and_an_ooda_run_as_agent_compare_does(cli) -> None:
    cli("agent", "run", "--scenario", "water-jug")
    cli("agent", "run", "--scenario", "water-jug-ooda", "--max-cycles", "20")
    stored = json.loads(cli("sessions", "compare", "1", "2", "--json").stdout)
    fresh = json.loads(cli("agent", "compare", "water-jug", "water-jug-ooda", "--json").stdout)
    assert stored["a"] == "1:main (water-jug, soar)" and stored["b"] == "2:main (water-jug-ooda, ooda)"
    assert stored["first_part"] == fresh["first_part"] and stored["steps"] == fresh["steps"]
    assert stored["common_states"] and stored["common_states"] == fresh["common_states"]
    words = cli("sessions", "compare", "1", "2").stdout
    assert "their choices part at move 1" in words and "Soar decision" in words and "OODA cycle" in words


def test_sessions_compare_names_where_a_soar_fork_parts_from_its_main(cli) -> None:
    cli("agent", "run", "--scenario", "water-jug")
    main = json.loads(cli("sessions", "export", "1", "-o", "-").stdout.splitlines()[4])
    other = next(c["id"] for c in main["candidates"] if not c["chosen"])
    cli("agent", "fork", "--at", "3", "--name", "alt", "--select", other)
    cli("agent", "resume")
    res = json.loads(cli("sessions", "compare", "1:main", "1:alt", "--json").stdout)
    assert res["first_part"] is not None and "(forced)" in res["first_part"]["b"]["why"]
    assert all(r["same"] for r in res["steps"][:res["first_part"]["step"] - 1])


def test_a_soar_run_is_pinned_checked_and_reported(cli, tmp_path) -> None:
    cli("agent", "run", "--scenario", "water-jug")
    pin = tmp_path / "wj.pin.jsonl"
    cli("sessions", "pin", "1", "--cycle", "3", "--cycle", "6", "-o", str(pin))
    lines = _lines(pin)
    assert json.loads(lines[0])["architecture"] == "soar" and len(lines) == 1 + 6
    assert "all 6 decisions as recorded" in cli("check", str(pin)).stdout
    assert "decision 99" in cli("sessions", "pin", "1", "--cycle", "99", "-o", str(pin), check_rc=2).stderr
    changed = [json.loads(x) for x in lines]
    changed[4]["selected"]["id"] = "O999"  # decision 4 said to have selected another operator
    pin.write_text("".join(json.dumps(x, sort_keys=True) + "\n" for x in changed), encoding="utf-8")
    assert "decision 4" in cli("check", str(pin), check_rc=1).stdout

    md, html = tmp_path / "r.md", tmp_path / "r.html"
    cli("sessions", "report", "1", "-o", str(md))
    cli("sessions", "report", "1", "-o", str(html))
    text = md.read_text(encoding="utf-8")
    assert "A Soar agent (seed 7)" in text and "halted" in text and "fill volume 3" in text
    import xml.dom.minidom

    doc = xml.dom.minidom.parse(str(html))  # well-formed, as an OODA run's report
    decisions = json.loads(cli("sessions", "list", "--json").stdout)[0]["branches"][0]["last_cycle"]
    assert len(doc.getElementsByTagName("tr")) == 1 + decisions  # a heading row and one a decision
    cli("sessions", "report", "1", "-o", str(tmp_path / "again.md"))
    assert (tmp_path / "again.md").read_bytes() == md.read_bytes()
    assert "--shot" in cli("sessions", "report", "1", "--shot", "2", "-o", str(md), check_rc=2).stderr


def test_a_damaged_soar_decision_is_named_not_a_traceback(cli, tmp_path) -> None:
    cli("agent", "run", "--scenario", "water-jug", "--max-cycles", "4")
    db = sqlite3.connect(tmp_path / "data" / "session.db")
    db.execute("UPDATE soar_decisions SET line = replace(line, 'fill', 'FILL') WHERE decision = 2")
    db.commit()
    db.close()
    err = cli("sessions", "export", "1", "-o", "-", check_rc=2).stderr
    assert "Soar decision 2 is damaged" in err and "Traceback" not in err
    assert "Soar decision 2 is damaged" in cli("agent", "resume", check_rc=2).stderr
    res = cli("sessions", "check", "--json", check_rc=None)
    assert res.returncode != 0 and json.loads(res.stdout)["damaged"] == {"run 1, branch 'main': Soar decisions": [2]}


def test_one_writer_a_soar_run(cli, tmp_path) -> None:
    import fcntl
    import os

    cli("agent", "run", "--scenario", "water-jug", "--max-cycles", "3")
    lock = tmp_path / "data" / "session.db.run-1.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)  # another writer's hold on run 1 (its own open file)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        err = cli("agent", "resume", check_rc=None)
        assert err.returncode != 0 and "one writer per run" in err.stderr
    finally:
        os.close(fd)
    assert "(decision 4)" in cli("agent", "resume", "--max-cycles", "1").stdout  # free again: it goes on
