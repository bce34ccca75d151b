"""The mint auction (SPEC §13) as arithmetic: who wins, what they pay, who gets the price,
what is refunded and what is minted. `settle` is a pure function of the bids, the agents and
the score; the world turns its answer into ledger moves and a `mint` record."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Bid:
    agent: str
    amount: int
    artifact: str
    version: int


@dataclass
class Settlement:
    winner: Bid | None
    price: int
    # (from, to, amount, why) in the order they are recorded; zero amounts never appear
    moves: list[tuple[str, str, int, str]] = field(default_factory=list)


def winner_of(bids: list[Bid]) -> tuple[Bid | None, int]:
    """The highest bid (ties: the earlier bid) and the price it pays: the second-highest
    amount, or its own when it is alone."""
    if not bids:
        return None, 0
    best = bids[0]
    for b in bids[1:]:
        if b.amount > best.amount:
            best = b
    rest = [b.amount for b in bids if b is not best]
    return best, (max(rest) if rest else best.amount)


def shares(price: int, others: list[str]) -> list[tuple[str, int]]:
    """`price` shared equally among `others` in sorted-id order, the remainder of the integer
    division one each from the first; shares of 0 are left out."""
    names = sorted(others)
    if not names:
        return []
    each, extra = divmod(price, len(names))
    out = [(n, each + (1 if i < extra else 0)) for i, n in enumerate(names)]
    return [(n, s) for n, s in out if s > 0]


def settle(bids: list[Bid], agents: list[str], escrow: str = "escrow") -> Settlement:
    """Everything but the minting: the price to the other agents (STOPPED ones included),
    the winner's change, the losers' refunds. Bids are in the order they were placed."""
    win, price = winner_of(bids)
    if win is None:
        return Settlement(None, 0)
    moves: list[tuple[str, str, int, str]] = []
    others = [a for a in agents if a != win.agent]
    if others:
        for name, amount in shares(price, others):
            moves.append((escrow, name, amount, f"mint price share ({win.agent} won with {win.artifact}@{win.version})"))
        change = win.amount - price
    else:
        change = win.amount  # no one to share with: the price comes back
    if change > 0:
        moves.append((escrow, win.agent, change, "mint: winning bid above the price refunded"))
    for b in bids:
        if b is not win:
            moves.append((escrow, b.agent, b.amount, "mint: losing bid refunded"))
    return Settlement(win, price, moves)


def refund_all(bids: list[Bid], escrow: str = "escrow") -> list[tuple[str, str, int, str]]:
    """A scorer that failed: every bid goes back, nothing is minted."""
    return [(escrow, b.agent, b.amount, "mint: the scorer failed, bid refunded") for b in bids]


def minted_for(score: int) -> int:
    return score // 10
