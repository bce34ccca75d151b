"""A Soar agent in the workbench's panes (issue 30), compared with golden SVGs in snapshots/.
Sync tests (snap_compare needs a plain def); the Soar run is stepped on the UI thread, so the
picture depends only on the keys pressed."""

from __future__ import annotations

import pytest

pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")


def _app(name: str = "water-jug"):
    from akh_tui.engine import find_soar
    from akh_tui.tui.soar_app import SoarWorkbench

    return SoarWorkbench(find_soar(name))


def test_water_jug_before_its_third_decision(snap_compare) -> None:
    # two decisions, then input and propose: the operators proposed, one rejected, the bar at decision
    assert snap_compare(_app(), press=["space", "space", "p", "p"], terminal_size=(120, 36))


def test_water_jug_at_80x24_why_the_goal_test_has_not_fired(snap_compare) -> None:
    assert snap_compare(_app(), press=["space"] * 4 + ["m"], terminal_size=(80, 24))


def test_blocks_world_solved(snap_compare) -> None:
    assert snap_compare(_app("blocks-world"), press=["r"], terminal_size=(120, 36))


def test_rule_browser_with_partial_matches(snap_compare) -> None:
    # after three decisions: which rules match now, and where each of the others fails
    assert snap_compare(_app(), press=["space"] * 3 + ["b", "down", "down"], terminal_size=(120, 36))
