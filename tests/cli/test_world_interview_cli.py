"""`akh-tui world interview [wN[:BRANCH]] --at ROUND:AGENT "question" [--model] [--json]` and
`--list` (issue 26): the engine's answer (engine/world/interview.py) in words and as JSON, kept on
an interview branch that `sessions list` and `world show` list, the branch asked on unchanged."""

from __future__ import annotations

import json


def test_an_interview_answers_from_the_record_and_is_kept_on_a_side_branch(cli):
    cli("world", "run", "market", "--rounds", "6")
    before = cli("sessions", "export", "w1").stdout
    out = cli("world", "interview", "--at", "6:bold", "why did you choose that?").stdout.splitlines()
    assert out[0] == "6:bold: bold (its cycle 6), asked: why did you choose that?"
    assert out[1] == "I chose read_artifact(cautious-g2@1), utility 0.47; the runner-up was kg_query at 0.42."
    assert out[-1] == "(kept as interview 1 on branch interview-1)"
    # the world first, then the words after the options: the same world, the same interview branch
    got = json.loads(cli("world", "interview", "w1:main", "--at", "6:bold", "who", "moved", "you?", "--json").stdout)
    assert got["question"] == "who moved you?" and got["claims"]["movers"] == ["5:cautious"]
    assert got["interview"] == {"branch": "interview-1", "n": 2}
    assert cli("sessions", "export", "w1").stdout == before
    show = cli("world", "show").stdout
    assert "interview-1 (11 steps, forked after step 11, edits: an interview of bold at 6:bold)" in show
    assert "current" not in json.dumps([b for b in json.loads(cli("world", "show", "--json").stdout)["branches"]
                                        if b["name"] == "interview-1" and b.get("current")])
    listed = [x for x in json.loads(cli("sessions", "list", "--json").stdout) if x.get("kind") == "world"]
    assert [b["name"] for b in listed[0]["branches"]] == ["main", "interview-1"]
    assert cli("sessions", "export", "w1", "--branch", "interview-1").stdout == \
        "".join(before.splitlines(keepends=True)[:len(cli("sessions", "export", "w1", "--branch", "interview-1").stdout.splitlines())])


def test_listing_past_interviews(cli):
    cli("world", "run", "market", "--rounds", "6")
    assert cli("world", "interview", "--list").stdout.strip() == "no interviews in world w1"
    cli("world", "interview", "--at", "6:bold", "why not bid?")
    cli("world", "interview", "--at", "5:cautious", "what happened?")
    text = cli("world", "interview", "--list").stdout
    assert "w1:interview-1 #1  6:bold asked on main" in text and "  6:bold: bold (its cycle 6), asked: why not bid?" in text
    assert "w1:interview-2 #1  5:cautious asked on main" in text
    got = json.loads(cli("world", "interview", "w1", "--list", "--at", "5:cautious", "--json").stdout)
    assert [(x["branch"], x["question"]) for x in got["interviews"]] == [("interview-2", "what happened?")]


def test_bad_interviews_are_refused_with_the_field(cli):
    cli("world", "run", "market", "--rounds", "2")
    assert "--at" in cli("world", "interview", "why?", check_rc=2).stderr
    assert "QUESTION" in cli("world", "interview", "--at", "2:bold", check_rc=2).stderr
    proc = cli("world", "interview", "--at", "2:bold", "why?", "--model", check_rc=2)
    assert "--model" in proc.stderr and "no model to ask" in proc.stderr
    assert "no step 9:bold" in cli("world", "interview", "--at", "9:bold", "why?", check_rc=2).stderr
    assert "unrecognized arguments: --bogus" in cli("world", "interview", "w1", "--at", "2:bold", "why", "--bogus",
                                                    check_rc=2).stderr


def test_an_interview_is_asked_while_another_holds_the_world(cli, tmp_path):
    from akh_tui.engine import Locations, WorldRun

    cli("world", "run", "market", "--rounds", "3")
    driving = WorldRun.resume(Locations(tmp_path / "data", tmp_path / "config.toml"))  # the writer's lock held
    try:
        assert "(kept as interview 1 on branch interview-1)" in cli("world", "interview", "--at", "3:bold", "why?").stdout
        driving.step()  # the world goes on, on its branch
        assert driving.branch_name == "main"
    finally:
        driving.close()
    assert json.loads(cli("world", "show", "--json").stdout)["step"] == 7


def test_sessions_check_checks_the_interviews_and_a_damaged_one_is_reported_and_refused(cli, tmp_path):
    import sqlite3

    cli("world", "run", "market", "--rounds", "3")
    cli("world", "interview", "--at", "3:bold", "why?")
    assert json.loads(cli("sessions", "check", "--json").stdout)["ok"]
    with sqlite3.connect(tmp_path / "data" / "session.db") as db:
        db.execute("UPDATE world_interviews SET payload = replace(payload, 'I chose', 'I stole')")
    got = json.loads(cli("sessions", "check", "--json", check_rc=2).stdout)
    assert got["damaged"] == {"world w1 branch 'interview-1': interviews": [1]}
    assert "damaged" in cli("world", "interview", "--list", check_rc=2).stderr
