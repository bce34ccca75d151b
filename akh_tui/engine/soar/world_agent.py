"""A Soar agent as a world's agent (SPEC §13; issue 30): each turn its input link carries what it
observes of the world and its output link one of the world's actions. The world loop asks
`turn(observation)` and gets the action (its name, its parameters) or None.

A turn: the observation replaces the last one on the input link; decisions run (Soar's own
loop) until the agent puts a command on its output link, at most `most` decisions; the
command is marked `^status complete` for the agent, and checked against the world's action
names (a name the world does not know is refused with what the agent asked). Everything given
is recorded (adapter.py's inputs), so init-soar, the same seed and the same observations at the
same points replay the agent's turns exactly. Each decision of the turn is kept with its
operators (value, chance, proposing rule) in `decisions`, for the world's record.

This module knows nothing of engine/world (the world names its actions when it makes the
agent): the world may import it without an import circle."""

from __future__ import annotations

from typing import Any, Sequence

from ..errors import InputError
from .adapter import SoarArchitecture


class SoarWorldAgent:
    def __init__(self, arch: SoarArchitecture, actions: Sequence[str], most: int = 10) -> None:
        self.arch = arch
        self.actions = tuple(actions)
        self.most = most
        self.decisions: list[dict[str, Any]] = []  # the last turn's decisions, as step_decision records them

    def turn(self, observation: dict[str, Any]) -> dict[str, str] | None:
        """The agent's action this turn, or None when it gave none in `most` decisions."""
        self.arch.observe(observation)
        self.decisions = []
        for _ in range(self.most):
            rec = self.arch.step_decision()
            if rec is None:
                return None
            self.decisions.append(rec)
            cmds = self.arch.commands()
            if cmds:
                cmd = cmds[0]
                if cmd["name"] not in self.actions:
                    raise InputError(f"the Soar agent asked for {cmd['name']!r}, no action of this world (its "
                                     f"actions: {', '.join(self.actions)})", field="output-link")
                return cmd
        return None
