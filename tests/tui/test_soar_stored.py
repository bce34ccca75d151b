"""The Soar workbench on a run of the session store (issue 30): what it steps is recorded, a
rewind then a decision starts a branch (nothing recorded is lost), and the run reopened shows
its history."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")


def _drive(stored, keys: list[str]):
    from akh_tui.tui.soar_app import SoarWorkbench

    app = SoarWorkbench(stored.run.scenario, stored=stored)
    seen: dict[str, str] = {}

    async def main() -> None:
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause()
            for k in keys:
                await pilot.press(k)
            await pilot.pause()
            seen["status"] = str(app.query_one("#status").render())
            seen["decisions"] = str(app.query_one("#decision").render())

    asyncio.run(main())
    return seen


def test_the_workbench_records_reopens_and_branches_on_a_rewind(tmp_path: Path) -> None:
    from akh_tui.engine import Locations, Sessions, StoredSoarRun, find_soar

    loc = Locations(tmp_path / "data", tmp_path / "c.toml")
    sc = find_soar("water-jug")
    seen = _drive(StoredSoarRun.start(loc, sc), ["space"] * 5)
    assert "run 1 main" in seen["status"] and "decision 5" in seen["status"]
    s = Sessions(loc)
    try:
        assert s.show(1)["branches"][0]["last_cycle"] == 5
    finally:
        s.close()

    again = _drive(StoredSoarRun.resume(loc), ["left", "left", "space"])  # reopened: decisions 1-5 shown
    assert "run 1 rewound-3" in again["status"] and "decision 4" in again["status"]
    s = Sessions(loc)
    try:
        rows = {b["name"]: b for b in s.show(1)["branches"]}
        assert rows["main"]["last_cycle"] == 5  # what was recorded after the rewind point is kept
        assert rows["rewound-3"]["parent"] == "main" and rows["rewound-3"]["fork_cycle"] == 3
        main, branch = s.soar_records(1, "main"), s.soar_records(1, "rewound-3")
        assert branch[:3] == main[:3] and len(branch) == 4
        assert json.dumps(branch[3], sort_keys=True) == json.dumps(main[3], sort_keys=True)  # same seed, same pick
    finally:
        s.close()


def test_reopened_the_decisions_pane_shows_the_stored_history(tmp_path: Path) -> None:
    from akh_tui.engine import Locations, StoredSoarRun, find_soar

    loc = Locations(tmp_path / "data", tmp_path / "c.toml")
    first = _drive(StoredSoarRun.start(loc, find_soar("water-jug")), ["space"] * 4)
    reopened = _drive(StoredSoarRun.resume(loc), [])
    assert reopened["decisions"] == first["decisions"] and "fill volume" in reopened["decisions"]
