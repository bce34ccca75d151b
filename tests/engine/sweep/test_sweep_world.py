"""Sweeps over worlds (SPEC §13): a sweep file naming a world varies its agents' psyches,
deciders and count (clones of a template agent), its limits and world keys; each cell runs the
world and its row holds each world's balances, mints and goals, checked like every row."""

from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import bundled_data_dir
from akh_tui.engine.sweep.file import load_sweep, run_task
from akh_tui.engine.sweep.wire import MalformedResult, decode_result, encode_result

WORLDS = bundled_data_dir() / "worlds"

SWEEP = """
name = "market crowd"
world = "d/worlds/market.toml"
seeds = [0, 1]
rounds = 6
template = "bold"
[axes]
agents.count = [1, 3]
agents.cautious.psyche = ["d/worlds/market/cautious.toml", "d/worlds/market/bold.toml"]
agents.cautious.decider = ["utility", "scripted"]
limits.actions = [2]
world.mint_every = [3]
"""


@pytest.fixture
def world_dir(tmp_path: Path) -> Path:
    shutil.copytree(bundled_data_dir(), tmp_path / "d")  # the market's trader reads ../../kg/zoo.tsv
    return tmp_path / "d"


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.toml"
    p.write_text(text, encoding="utf-8")
    return p


def lines(result: dict) -> list[dict]:
    return [json.loads(x) for x in zlib.decompress(result["trace"]).decode().splitlines()]


def test_each_cell_runs_its_world_with_the_axes_applied_and_the_files_travel_with_the_sweep(tmp_path, world_dir):
    sweep = load_sweep(write(tmp_path, SWEEP))
    assert sweep.run_count == 2 * 2 * 2 * 2 and sweep.axis_names() == [
        "agents.count", "agents.cautious.psyche", "agents.cautious.decider", "limits.actions", "world.mint_every"]
    shutil.rmtree(world_dir)  # the workers read nothing of the world from disk: it travels with the sweep
    tasks = sweep.tasks()
    task = next(t for t in tasks if dict(t.settings)["agents.count"] == 3 and t.seed == 1
                and dict(t.settings)["agents.cautious.decider"] == "scripted"
                and dict(t.settings)["agents.cautious.psyche"] == "d/worlds/market/bold.toml")
    result = run_task(task, sweep.bundles)
    row = result["row"]
    assert row["status"] == "ok", row["error"]
    head = lines(result)[0]
    # the template cloned: ids name-1.., its artifact once per clone, default seeds as a world file gives them
    assert [a["id"] for a in head["agents"]] == ["bold-1", "bold-2", "bold-3", "cautious"]
    assert [a["seed"] for a in head["agents"]] == [1, 2, 3, 4]
    assert [(x["id"], x["owner"]) for x in head["config"]["artifacts"]] == [
        ("bold-ledger-1", "bold-1"), ("bold-ledger-2", "bold-2"), ("bold-ledger-3", "bold-3"),
        ("cautious-ledger", "cautious")]
    cautious = head["config"]["agents"][3]
    assert cautious["decider"] == "scripted" and cautious["psyche"] == "d/worlds/market/bold.toml"
    assert head["config"]["world"]["limits"]["actions"] == 2 and head["config"]["world"]["mint_every"] == 3
    cycles = [r for r in lines(result) if r["type"] == "cycle" and r["agent"] == "cautious"]
    assert cycles[0]["psyche"]["archetypes"]["guardian"] > 0.5  # the bold psyche, not the cautious one's 0.1
    # the row: each world's balances, mints and goals, which add up
    assert set(row["balances"]) == {"bold-1", "bold-2", "bold-3", "cautious", "world", "escrow"}
    assert sum(row["balances"].values()) == 4 * 50 + row["minted"]
    mints = [r for r in lines(result) if r["type"] == "mint"]
    assert row["mints_held"] == len(mints) == 2 and row["rounds_run"] == 6
    assert row["mints_won"] == sum(m["agent"] is not None for m in mints)
    assert set(row["goals"]) == {"bold-1", "bold-2", "bold-3", "cautious"}
    assert row["goals_completed"] == sum(g["completed"] for g in row["goals"].values())
    assert row["refused"] == sum(r["type"] == "rate_limited" for r in lines(result)) > 0  # actions = 2 per 60 s
    # the same cell twice: the same row and trace bytes (the run id names the cell)
    again = run_task(task, sweep.bundles)
    assert again["trace"] == result["trace"] and {**again["row"], "wall_time": 0} == {**row, "wall_time": 0}
    assert len({t.run_id for t in tasks}) == len(tasks)


def test_a_world_row_travels_as_checked_data(tmp_path, world_dir):
    sweep = load_sweep(write(tmp_path, SWEEP))
    task = sweep.tasks()[0]
    result = run_task(task, sweep.bundles)
    back = decode_result(task, encode_result(result))
    assert back["row"] == result["row"]
    for edit, words in ((lambda r: r["balances"].update(bold=-3), "balances"),
                        (lambda r: r["goals"].update(cautious={"total": 1}), "goals"),
                        (lambda r: r.update(minted="lots"), "minted"),
                        (lambda r: r.pop("mint_winners"), "mint_winners"),
                        (lambda r: r.update(vetoes=1), "vetoes")):  # a scenario run's field is no world's
        forged = json.loads(json.dumps(result["row"]))
        edit(forged)
        with pytest.raises(MalformedResult, match=words):
            decode_result(task, encode_result({"row": forged, "trace": result["trace"]}))


@pytest.mark.parametrize("edit, field, words", [
    (('agents.count = [1, 3]', 'agents.count = [0]'), "axes.agents.count[0]", "number of agents"),
    (('agents.cautious.psyche', 'agents.nobody.psyche'), "axes.agents.nobody", "no agent 'nobody'"),
    (('agents.cautious.decider = ["utility", "scripted"]', 'agents.cautious.decider = ["llm"]'),
     "axes.agents.cautious.decider[0]", "unknown decider"),
    (('"d/worlds/market/bold.toml"]', '"d/worlds/market/none.toml"]'), "axes.agents.cautious.psyche[1]", "psyche"),
    (('limits.actions = [2]', 'limits.tokens = [2]'), "axes.limits.tokens", "unknown limits axis"),
    (('limits.actions = [2]', 'limits.policy = ["sometimes"]'), "axes.limits.policy[0]", "skip"),
    (('world.mint_every = [3]', 'world.mint_every = [-1]'), "axes.world.mint_every[0]", "integer >= 0"),
    (('world.mint_every = [3]', 'archetypes.sage = [0.5]'), "axes.archetypes", "unknown axis"),
    (('template = "bold"', 'template = "ghost"'), "template", "no agent 'ghost'"),
    (('rounds = 6', 'max_cycles = 6'), "max_cycles", "'rounds'"),
    (('world = "d/worlds/market.toml"', 'world = "d/worlds/nowhere.toml"'), "world", "not found"),
])
def test_a_bad_world_axis_names_its_file_line_and_field(tmp_path, world_dir, edit, field, words):
    text = SWEEP.replace(*edit)
    assert text != SWEEP
    path = write(tmp_path, text)
    with pytest.raises(InputError) as exc:
        load_sweep(path)
    e = exc.value
    assert e.file == str(path) and e.field == field and words in e.message, (e.field, e.message)
    key = field.split("[")[0].split(".")[-1]
    assert e.line is not None and key in text.splitlines()[e.line - 1], (e.line, text.splitlines()[e.line - 1])


def test_the_bundled_market_sweep_runs_and_its_report_gives_each_world(tmp_path, monkeypatch, capsys):
    from akh_tui.cli.root import main

    monkeypatch.setenv("AKH_TUI_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "200")
    src = bundled_data_dir() / "sweeps" / "market-traders.toml"
    small = tmp_path / "mt.toml"  # the bundled file with fewer seeds and rounds: a quick test
    small.write_text(src.read_text().replace("stop = 5", "stop = 1").replace("rounds = 20", "rounds = 5")
                     .replace('world = "market"', f'world = "{WORLDS / "market.toml"}"'))
    assert main(["sweep", "run", str(small), "--out", str(tmp_path / "out"), "--workers", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stored"] == 6
    assert main(["sweep", "report", str(tmp_path / "out"), "--json", "--outcome", "max_balance",
                 "--html", str(tmp_path / "r.html")]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["outcomes"][:4] == ["goals_completed", "goals_failed", "minted", "mints_won"]
    assert [pa["axis"] for pa in rep["per_axis"]] == ["agents.count", "limits.actions"]
    assert len(rep["worlds"]) == 6
    three = next(w for w in rep["worlds"] if w["settings"]["agents.count"] == 3)
    assert list(three["goals"]) == ["bold-1", "bold-2", "bold-3", "cautious"]
    page = (tmp_path / "r.html").read_text()
    assert "Each world: balances, mints and goals" in page and "bold-3" in page
    assert main(["sweep", "report", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    assert "each world: balances, mints and goals" in shown and "cautious 1/2" in shown
    rid = rep["worlds"][0]["run_id"]
    assert main(["sweep", "open", str(tmp_path / "out"), rid, "--print"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["type"] == "world"
    assert main(["sweep", "open", str(tmp_path / "out"), rid]) == 2  # no workbench replay of a world yet: said so
    assert "is a world's" in capsys.readouterr().err
