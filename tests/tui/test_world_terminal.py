"""The world workbench in a real terminal (issue 26's Done-when), as a person walks it: a bundled
world stepped agent by agent and round by round, an agent switched to, a breakpoint on a
transfer firing, one agent's veto edited live and taking effect at its next step, a fork with a
changed order, the two branches compared. tmux runs it; every wait is for what the screen shows
(no fixed delay), with deadlines generous enough for a busy machine."""

from __future__ import annotations

import re
import sys
import time

import pytest

from tests.tui.test_terminal import Tmux, pytestmark  # noqa: F401  (tmux or skip, as there)


def typed(t: Tmux, text: str) -> None:
    """Type `text` literally (tmux reads `;` and key names otherwise), then wait until it shows."""
    t.run("send-keys", "-t", "t", "-l", text)
    t.wait_for(text, timeout=60)


def status(screen: str) -> str:
    """The status line: its two rows joined (a note may wrap onto the second)."""
    rows = screen.splitlines()
    second = rows[1] if len(rows) > 1 and not rows[1].startswith("╭") else ""
    return (rows[0].rstrip() + " " + second.strip()).strip()


def lane(screen: str, agent: str) -> str:
    """An agent's swimlane: the row of the lanes box that starts with its id."""
    return next(row for row in screen.splitlines() if re.match(rf"│ {agent}\s", row) and "│" in row[2:])


EDGES = " │─▎▏▊▁▂▃▄▅▆▇█╮╯"  # what may follow a toast's row: the pane's border, its scrollbar


def toast(screen: str) -> str:
    """A notification's text, its wrapped rows joined (each row starts after the toast's edge
    and ends where the pane behind it shows its border)."""
    rows = (row.rsplit("▌", 1)[1].rstrip(EDGES).strip() for row in screen.splitlines() if "▌" in row)
    return " ".join(r for r in rows if r)


def wait_until(t: Tmux, check, what: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    screen = t.screen()
    while not check(screen):
        if time.monotonic() > deadline:
            raise AssertionError(f"the screen never showed {what}:\n{screen}")
        time.sleep(0.1)
        screen = t.screen()
    return screen


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_the_world_workbench_walked_in_a_terminal(tmp_path, size):
    env = {"AKH_TUI_CONFIG": str(tmp_path / "config.toml"), "AKH_TUI_DATA": str(tmp_path / "data")}
    t = Tmux([sys.executable, "-m", "akh_tui.cli", "--world", "harbour-crew"], env, size=size)
    try:
        screen = t.wait_for("0 steps", timeout=120)
        assert "harbour-crew" in screen and "STARTING" in screen and "deckhand" in screen

        # one agent's turn: the pilot's, first of round 1 (round-robin)
        t.keys("Space")
        screen = t.wait_for("1 steps")
        assert "next harbourmaster" in status(screen) and "●" in lane(screen, "pilot")

        # a breakpoint on a transfer above 3 scrip (every price is 3 or less): run, and it stops
        # at the deckhand's tip, the third turn
        t.keys("k")
        t.settled("World breakpoints")
        typed(t, "transfer>3")
        t.keys("Enter", "Escape")
        wait_until(t, lambda s: "World breakpoints" not in s and "break" in status(s), "the breakpoint set")
        t.keys("r")
        screen = t.wait_for("deckhand → pilot 4 scrip")
        line = status(screen)
        assert "breakpoint transfer>3: deckhand → pilot 4 scrip (transfer from deckhand)" in line
        assert "3 steps" in line and "paused" in line and "●" in lane(screen, "deckhand")

        # switch the agent shown: a number key, then the fuzzy search
        t.keys("2")
        screen = wait_until(t, lambda s: "harbourmaster (following)" in status(s), "harbourmaster followed")
        assert "Goals · harbourmaster" in screen and "Score breakdown · harbourmaster" in screen
        t.keys("/")
        t.settled("Show an agent")
        typed(t, "dck")
        t.keys("Enter")
        wait_until(t, lambda s: "deckhand (following)" in status(s), "the search's deckhand followed")
        t.keys("2")
        wait_until(t, lambda s: "harbourmaster (following)" in status(s), "harbourmaster followed again")

        # edit harbourmaster's veto live: a pattern that stops any tool, applied at its next turn
        t.keys("e")
        screen = t.settled("Psyche of harbourmaster")
        t.keys("C-End")  # to the end of the text: a new veto pattern goes there
        t.wait_for("dominant_archetype")
        t.keys("Enter")
        typed(t, '[[shadow.veto_patterns]]')
        t.keys("Enter")
        typed(t, 'name = "hold_still"')
        t.keys("Enter")
        typed(t, 'triggers = ["tool="]')
        t.wait_for("valid — ctrl+s applies at harbourmaster's next turn")
        t.keys("C-s")
        wait_until(t, lambda s: "Psyche applied: takes effect at harbourmaster's next turn" in toast(s), "applied")
        t.run("send-keys", "-t", "t", "Escape")
        screen = wait_until(t, lambda s: "Psyche of harbourmaster" not in s, "the editor closed")
        screen = wait_until(t, lambda s: "harbourmaster's psyche edited: in effect at its next turn" in status(s),
                            "the edit pending")
        assert "!" not in lane(screen, "harbourmaster")

        # a round: pilot, harbourmaster (vetoed: "!" in its lane), deckhand
        t.keys("n")
        screen = t.wait_for("6 steps")
        assert "!" in lane(screen, "harbourmaster") and "!" not in lane(screen, "pilot")
        assert "psyche edited" not in status(screen)  # in effect now: no longer pending
        if size[0] >= 100:
            assert re.search(r"harbourmaster\s+SLEEPING\s+\S+\s+vetoed", screen)

        # fork after the pilot's step of round 2 with the rest of the round reordered
        t.keys(",", ",", ",")
        screen = wait_until(t, lambda s: "step 4 of 6" in status(s), "step 4 replayed")
        assert "REPLAY" in status(screen)
        t.keys("F")
        screen = t.settled("Fork the world after step 4 (round 2, pilot)")
        assert "still to act in round 2: harbourmaster, deckhand" in screen
        typed(t, "order=deckhand,harbourmaster")
        t.keys("Enter")
        screen = wait_until(t, lambda s: "forked fork-" in status(s), "the fork")
        assert "after step 4" in status(screen) and "next deckhand" in status(screen)
        fork = re.search(r"forked (fork-\d+)", status(screen)).group(1)

        # the new branch: the deckhand acts before the harbourmaster
        t.keys("Space")
        screen = t.wait_for("5 steps")
        assert "next harbourmaster" in status(screen)

        # compare it with the branch it left: the first divergent step, and each side's agent
        t.keys("b")
        screen = wait_until(t, lambda s: "Branches compared" in s and "steps 6 and 5" in toast(s), "the compare")
        said = toast(screen)
        assert f"w1:harbourmaster-psyche-1 and w1:{fork} first differ at step 5" in said
        assert "2:harbourmaster read_artifact vs 2:deckhand read_artifact" in said

        t.run("send-keys", "-t", "t", "q")
        wait_until(t, lambda s: not t.alive() or "harbour-crew" not in s, "the workbench gone", timeout=30)
    finally:
        t.kill()
