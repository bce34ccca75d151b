"""`akh-tui world fork --decider KIND | --goal EDIT | --limit KEY=VALUE` (SPEC §13: a fork's
edits may change an agent's decider or goals and the limits; they are state of the branch)."""

from __future__ import annotations

import json
from pathlib import Path

from akh_tui.engine.paths import Locations, bundled_data_dir
from akh_tui.engine.world.worldrun import WorldRun


def _reopen(tmp: Path) -> WorldRun:
    return WorldRun.open_readonly(Locations(tmp / "data", tmp / "config.toml"))


def test_fork_with_a_decider_replays_main_up_to_it_and_diverges_after(cli, tmp_path):
    cli("world", "run", "market", "--rounds", "6")
    out = cli("world", "fork", "--at", "3:bold", "--agent", "bold", "--decider", "scripted", "--name", "scripted").stdout
    assert "branch scripted" in out
    cli("world", "run", "market", "--rounds", "3")  # continues the fork, its decider rebuilt on resume
    r = _reopen(tmp_path)
    try:
        assert r.branch_name == "scripted" and r.world.agents["bold"].decider.kind == "scripted"
        fork_step = next(b["fork_step"] for b in r.branches() if b["name"] == "scripted")
    finally:
        r.close()
    got = json.loads(cli("sessions", "compare", "w1:main", "w1:scripted", "--json").stdout)
    first = got["first_divergence"]
    assert first is not None and first["step"] > fork_step and "bold" in (first["a"]["agent"], first["b"]["agent"])
    shown = cli("world", "show").stdout
    assert "bold decides with scripted (was utility)" in " ".join(shown.split())


def test_fork_with_a_limit_and_goals_holds_them_on_the_branch(cli, tmp_path):
    cli("world", "run", "market", "--rounds", "4")
    cli("world", "fork", "--at", "3:bold", "--limit", "actions=0", "--limit", "window_s=2.5", "--agent", "cautious",
        "--goal", 'new "learn what bold sells" priority=200', "--goal", "1 priority=9 status=suspended", "--name", "slow")
    cli("world", "run", "market", "--rounds", "2")
    r = _reopen(tmp_path)
    try:
        assert dict(r.spec.limits.caps)["actions"] == 0 and r.spec.limits.window_ms == 2500
        goals = r.world.agents["cautious"].goals
        assert goals[1].priority == 9 and goals[1].status == "suspended"
        assert [g.priority for g in goals.values() if g.description == "learn what bold sells"] == [200]
        fork_step = next(b["fork_step"] for b in r.branches() if b["name"] == "slow")
        after = [x for row in r.steps(fork_step + 1) for x in row.lines]
    finally:
        r.close()
    assert after and not any(x.startswith('{"type":"cycle"') for x in after)  # no agent has capacity to act
    got = json.loads(cli("sessions", "compare", "w1:main", "w1:slow", "--json").stdout)
    assert got["first_divergence"] is not None and got["first_divergence"]["step"] == fork_step + 1
    shown = " ".join(cli("world", "show").stdout.split())
    assert "limit actions = 0" in shown and "cautious gets goal #" in shown


def test_bad_fork_edits_are_refused_naming_the_field_and_fork_nothing(cli, tmp_path):
    cli("world", "run", "market", "--rounds", "2")
    for argv, field in [
        (("--decider", "scripted"), "--agent"),
        (("--agent", "bold", "--decider", "nope"), "--decider"),
        (("--limit", "actions=-1"), "--limit actions"),
        (("--limit", "actions=lots"), "--limit actions"),
        (("--limit", "speed=3"), "--limit"),
        (("--limit", "actions"), "--limit"),
        (("--agent", "bold", "--goal", "1 status=sleeping"), "--goal status"),
        (("--agent", "bold", "--goal", "77 status=done"), "--goal goal"),
        (("--agent", "bold", "--goal", "first do this"), "--goal"),
        (("--agent", "bold", "--goal", 'new "unclosed'), "--goal"),
    ]:
        err = json.loads(cli("world", "fork", "--at", "1:bold", *argv, "--json", check_rc=2).stderr)
        assert err["field"] == field, (argv, err)
    shown = json.loads(cli("world", "show", "--json").stdout)
    assert [b["name"] for b in shown["branches"]] == ["main"]


def test_a_plugin_decider_is_imported_only_from_a_folder_the_user_agreed_to(cli, tmp_path):
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "w.toml").write_text(
        f'[world]\nname = "w"\nrounds = 4\n[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\n'
        f'[[agents]]\nid = "b"\nscenario = "{market}/trader.toml"\n', encoding="utf-8")
    marker = tmp_path / "imported"
    (folder / "mydec.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('ran')\n"
        "from akh_tui.engine.cycle.deciders import UtilityDecider\n"
        "def make():\n    return UtilityDecider()\n", encoding="utf-8")
    cli("world", "run", str(folder / "w.toml"), "--rounds", "2")
    p = cli("world", "fork", "--at", "1:a", "--agent", "a", "--decider", "mydec:make", check_rc=2)
    assert "--decider" in p.stderr and not marker.exists()  # refused before any import: nothing ran
    assert [b["name"] for b in json.loads(cli("world", "show", "--json").stdout)["branches"]] == ["main"]
    cli("world", "fork", "--at", "1:a", "--agent", "a", "--decider", "mydec:make", "--allow-plugins", "--name", "p")
    assert marker.exists()


def test_a_goal_edit_alone_replays_main_up_to_the_fork_and_diverges_after(cli, tmp_path):
    cli("world", "run", "market", "--rounds", "4")
    cli("world", "fork", "--at", "2:bold", "--agent", "bold", "--goal", "1 status=suspended", "--name", "idle")
    cli("world", "run", "market", "--rounds", "2")
    r = _reopen(tmp_path)
    try:
        fork_step = next(b["fork_step"] for b in r.branches() if b["name"] == "idle")
    finally:
        r.close()
    first = json.loads(cli("sessions", "compare", "w1:main", "w1:idle", "--json").stdout)["first_divergence"]
    assert first is not None and first["step"] > fork_step and "goals" in first["differs_in"]
