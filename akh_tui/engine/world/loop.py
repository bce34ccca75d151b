"""One agent's loop in a world (seed 002, SPEC §13): its state, backoff after failures, its
failure history and last actions, and the self-evaluation every third acting turn."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

STARTING, RUNNING, SLEEPING, PAUSED, STOPPED = "STARTING", "RUNNING", "SLEEPING", "PAUSED", "STOPPED"
FIRST_DELAY_MS = 100
MAX_DELAY_MS = 10_000
ERROR_LIMIT = 5
FAILURES_KEPT = 5
ACTIONS_KEPT = 15
EVALUATE_EVERY = 3


@dataclass
class AgentLoop:
    id: str
    state: str = STARTING
    errors: int = 0
    delay_ms: int = FIRST_DELAY_MS
    wake_at: int | None = None  # ms; for SLEEPING
    crash_reason: str | None = None
    failures: deque[str] = field(default_factory=lambda: deque(maxlen=FAILURES_KEPT))
    actions: deque[tuple[str, bool]] = field(default_factory=lambda: deque(maxlen=ACTIONS_KEPT))  # (tool, success)
    turns: int = 0  # acting turns
    scrip_at_evaluation: int = 0

    @property
    def eligible(self) -> bool:
        return self.state not in (SLEEPING, STOPPED)

    def change(self, to: str, why: str, wake_at: int | None = None) -> dict[str, Any] | None:
        """The state event for a change (None when the state stays); round, clock and agent
        are the world's to fill in."""
        if to == self.state and wake_at == self.wake_at:
            return None
        before, self.state = self.state, to
        self.wake_at = wake_at if to == SLEEPING else None
        return {"type": "state", "from": before, "to": to, "why": why,
                "wake_at": None if self.wake_at is None else self.wake_at / 1000}

    def after_turn(self, success: bool, tool: str, output: str, clock_ms: int, step_ms: int) -> list[dict[str, Any]]:
        """Backoff (SPEC §13): a failure doubles the delay (from 0.1 s, at most 10 s) and puts
        the agent to sleep until the turn's end plus the delay; the fifth error in a row
        pauses it instead. A success resets both."""
        self.turns += 1
        self.actions.append((tool, success))
        if success:
            self.errors, self.delay_ms = 0, FIRST_DELAY_MS
            ev = self.change(RUNNING, "turn succeeded")
            return [ev] if ev else []
        self.errors += 1
        self.delay_ms = min(2 * self.delay_ms, MAX_DELAY_MS)
        last = f"{tool}: {output[:160]}"
        self.failures.append(last)
        if self.errors >= ERROR_LIMIT:
            self.crash_reason = f"error_limit: {last}"
            ev = self.change(PAUSED, self.crash_reason)
        else:
            ev = self.change(SLEEPING, f"failed ({self.errors} error(s) in a row): backoff {self.delay_ms / 1000:g} s",
                             clock_ms + step_ms + self.delay_ms)
        return [ev] if ev else []

    def success_ratio(self) -> float:
        return sum(1 for _, ok in self.actions if ok) / len(self.actions) if self.actions else 0.0

    def pivot_tool(self) -> str | None:
        """The tool of the last three turns when all three failed with it, else None."""
        last = list(self.actions)[-3:]
        if len(last) == 3 and not any(ok for _, ok in last) and len({t for t, _ in last}) == 1:
            return last[0][0]
        return None
