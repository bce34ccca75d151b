"""`RateTracker`: a sliding window of calls and tokens; says whether a call may go now and
how long to wait otherwise. The clock is injectable so tests are deterministic."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable


class RateTracker:
    """Sliding-window budget: at most `calls_per_window` calls and `tokens_per_window` tokens
    in any `window` seconds. Entries are (time, tokens); an entry leaves the window exactly
    `window` seconds after it was recorded.

    A single call whose estimate exceeds the whole token budget is let through once the window
    is empty (otherwise it could never run).
    """

    def __init__(self, calls_per_window: int, tokens_per_window: int, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if calls_per_window < 1 or tokens_per_window < 1 or window <= 0:
            raise ValueError("rate budgets and window must be positive")
        self.calls_per_window = calls_per_window
        self.tokens_per_window = tokens_per_window
        self.window = window
        self.clock = clock
        self._entries: deque[tuple[float, int]] = deque()
        self._lock = threading.Lock()

    def _prune(self, now: float) -> None:
        while self._entries and self._entries[0][0] + self.window <= now:
            self._entries.popleft()

    def _fits(self, calls: int, tokens: int, estimate: int) -> bool:
        if calls == 0:
            return True
        return calls < self.calls_per_window and tokens + estimate <= self.tokens_per_window

    def usage(self) -> tuple[int, int]:
        """(calls, tokens) inside the window now."""
        with self._lock:
            self._prune(self.clock())
            return len(self._entries), sum(t for _, t in self._entries)

    def can_consume(self, tokens_estimate: int = 0) -> bool:
        with self._lock:
            self._prune(self.clock())
            return self._fits(len(self._entries), sum(t for _, t in self._entries), max(0, tokens_estimate))

    def wait_time(self, tokens_estimate: int = 0) -> float:
        """Seconds until a call of this estimate fits (0.0 if it fits now)."""
        with self._lock:
            now = self.clock()
            self._prune(now)
            est = max(0, tokens_estimate)
            calls = len(self._entries)
            tokens = sum(t for _, t in self._entries)
            if self._fits(calls, tokens, est):
                return 0.0
            for t, n in self._entries:  # oldest first: when it expires, does the call fit?
                calls -= 1
                tokens -= n
                if self._fits(calls, tokens, est):
                    return max(0.0, t + self.window - now)
            return 0.0  # unreachable: an empty window always fits

    def record(self, tokens: int) -> None:
        with self._lock:
            now = self.clock()
            self._prune(now)
            self._entries.append((now, max(0, int(tokens))))
