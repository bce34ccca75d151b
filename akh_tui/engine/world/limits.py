"""Rate limits (SPEC §13): per agent and resource over a sliding window of the virtual clock.
A use stamped t counts while t > now − window. Uses older than the window are dropped as the
clock passes them, so what is kept is bounded by the window, not by the run's length."""

from __future__ import annotations

from collections import deque

from .file import Limits


class RateWindows:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.uses: dict[str, dict[str, deque[tuple[int, int]]]] = {}  # agent -> resource -> (stamp, amount)

    def _live(self, agent: str, resource: str, now: int) -> deque[tuple[int, int]]:
        q = self.uses.setdefault(agent, {}).setdefault(resource, deque())
        edge = now - self.limits.window_ms
        while q and q[0][0] <= edge:
            q.popleft()
        return q

    def used(self, agent: str, resource: str, now: int) -> int:
        return sum(n for _, n in self._live(agent, resource, now))

    def limited(self, agent: str, now: int) -> str | None:
        """The first configured resource (actions, llm_calls, llm_tokens, writes) with no
        capacity left at `now`, else None."""
        for resource, limit in self.limits.caps:
            if limit - self.used(agent, resource, now) < 1:
                return resource
        return None

    def use(self, agent: str, resource: str, now: int, amount: int = 1) -> None:
        if amount > 0 and any(r == resource for r, _ in self.limits.caps):
            self._live(agent, resource, now).append((now, amount))

    def next_drop(self, agent: str, now: int) -> int | None:
        """When (virtual ms) the agent's oldest use in a window leaves it, so that what it has
        used changes without a new use; None when it holds no use."""
        edges = [q[0][0] + self.limits.window_ms for r, _ in self.limits.caps if (q := self._live(agent, r, now))]
        return min(edges) if edges else None

    def capacity_at(self, agent: str, resource: str, now: int) -> int | None:
        """The first time >= now at which `resource` has capacity 1 again; None when it never
        will (a limit of 0)."""
        limit = dict(self.limits.caps)[resource]
        if limit < 1:
            return None
        q = self._live(agent, resource, now)
        used = sum(n for _, n in q)
        for stamp, n in q:  # oldest first: each leaves the window at stamp + window
            if limit - used >= 1:
                break
            used -= n
            when = stamp + self.limits.window_ms
            if limit - used >= 1:
                return max(now, when)
        return now
