"""The scrip ledger (SPEC §13): integer balances, one record per change, and the invariant
`agents + world + escrow = opening total + minted` kept incrementally.

Every balance change goes through `_change`, which keeps `held` (the sum of the accounts the
invariant covers) up to date; `move` is two changes, and scrip leaving the `mint` account is
what `minted` counts. So `check` compares two numbers instead of summing every account, and a
one-sided change (a bug in an action) shows as `held != opening + minted`. A step's changes are
a transaction: `rollback` puts back every balance it touched and drops its records, so a step
that breaks the invariant commits nothing.
"""

from __future__ import annotations

from typing import Any

MINT = "mint"
ESCROW = "escrow"
WORLD = "world"


class Refusal(Exception):
    """A payment that cannot be made: the action fails and changes nothing (SPEC §13)."""


class InvariantViolation(Exception):
    """The ledger invariant broke: the world stops (exit 1) and the step is not committed."""


class Ledger:
    def __init__(self, agents: list[str], starting: int) -> None:
        self.balances: dict[str, int] = {a: starting for a in agents}
        self.balances[WORLD] = 0
        self.balances[ESCROW] = 0
        self.opening_total = starting * len(agents)
        self.held = self.opening_total
        self.minted = 0
        self.pending: list[dict[str, Any]] = []  # this step's records, written when it commits
        self._touched: dict[str, int] = {}  # account -> balance before this step
        self._mark = (self.held, self.minted)

    def balance(self, account: str) -> int:
        return self.balances[account]

    def _change(self, account: str, delta: int) -> None:
        if account == MINT:
            return  # the source of minted scrip holds no balance; `minted` counts what left it
        self._touched.setdefault(account, self.balances[account])
        self.balances[account] += delta
        self.held += delta

    def move(self, frm: str, to: str, amount: int, why: str, rnd: int, clock: float, agent: str | None) -> dict[str, Any]:
        """One ledger record: `amount` (an integer >= 1) from one account to another. Refusal
        when it cannot be paid; the world account never spends (it only receives prices)."""
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
            raise Refusal(f"amount must be an integer >= 1, got {amount!r}")
        if frm == to:
            raise Refusal(f"{frm} cannot pay itself")
        for acct in (frm, to):
            if acct != MINT and acct not in self.balances:
                raise Refusal(f"no account {acct!r}")
        if frm == WORLD:
            raise Refusal("the world account never spends")
        if frm != MINT and self.balances[frm] < amount:
            raise Refusal(f"{frm} has {self.balances[frm]} scrip, {amount} needed")
        self._change(frm, -amount)
        self._change(to, amount)
        if frm == MINT:
            self.minted += amount
        entry = {"type": "ledger", "round": rnd, "clock": clock, "agent": agent, "from": frm, "to": to,
                 "amount": amount, "why": why}
        self.pending.append(entry)
        return entry

    # ---- a step as a transaction ---------------------------------------------------------
    def begin(self) -> None:
        self.pending = []
        self._touched = {}
        self._mark = (self.held, self.minted)

    def check(self, agent: str | None, action: str) -> None:
        """The invariant after a step or a mint; InvariantViolation naming the agent, the
        action and the numbers. Only the accounts the step touched are looked at."""
        expected = self.opening_total + self.minted
        if self.held != expected:
            raise InvariantViolation(
                f"ledger invariant broken by {agent or 'the mint'} ({action}): agents + world + escrow = {self.held}, "
                f"opening total {self.opening_total} + minted {self.minted} = {expected}")
        for acct in sorted(self._touched):
            if self.balances[acct] < 0:
                raise InvariantViolation(
                    f"ledger invariant broken by {agent or 'the mint'} ({action}): {acct} would hold "
                    f"{self.balances[acct]} scrip (was {self._touched[acct]}); no balance is ever negative")

    def commit(self) -> list[dict[str, Any]]:
        done, self.pending, self._touched = self.pending, [], {}
        self._mark = (self.held, self.minted)
        return done

    def rollback(self) -> None:
        for acct, before in self._touched.items():
            self.balances[acct] = before
        self.held, self.minted = self._mark
        self.pending, self._touched = [], {}

    def snapshot(self) -> dict[str, int]:
        """Every balance, agents first in sorted order, then world and escrow."""
        agents = sorted(a for a in self.balances if a not in (WORLD, ESCROW))
        return {a: self.balances[a] for a in [*agents, WORLD, ESCROW]}
