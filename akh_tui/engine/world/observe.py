"""What one agent observes of the world at its turn (SPEC §13; issue 30): the round and the
clock, its balance and the others', the artifacts (id, owner, price, version, whether it can
read them now), its pending bid, the rounds to the next mint and its rate headroom. A decider
that is not our OODA loop — a Soar agent's input link (soar/decider.py) — is handed this, as
plain numbers and strings: world text (an artifact's id, an agent's id) is data, never code.

Read only: nothing here changes the world (the rate windows are counted, not pruned), so a
world with an observer records the same bytes as one without."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .clock import seconds

if TYPE_CHECKING:
    from .world import World

MOST_ARTIFACTS = 64  # the first this many by id; `artifacts-left` counts the rest


def observation(world: "World", aid: str) -> dict[str, Any]:
    """`aid`'s observation now: JSON-able (numbers, strings, tables and lists of tables)."""
    balance = world.ledger.balance(aid)
    read = world.read_versions.get(aid, {})
    arts = sorted(world.artifacts, key=lambda a: a.id)
    shown = [{"id": a.id, "owner": a.owner, "price": a.price, "version": a.version,
              "mine": a.owner == aid, "read": read.get(a.id) == a.version,
              # what read_artifact needs: not read at this version, and its own or affordable
              "can-read": read.get(a.id) != a.version and (a.owner == aid or balance >= a.price)}
             for a in arts[:MOST_ARTIFACTS]]
    every = world.mint_every
    to_mint = (every - world.round % every) % every if every else -1
    return {"round": world.round, "clock": seconds(world.clock), "balance": balance,
            "other": [{"id": o, "balance": world.ledger.balance(o)} for o in world.ids if o != aid],
            "artifact": shown, "artifacts-left": max(0, len(arts) - MOST_ARTIFACTS),
            "bid-pending": any(b.agent == aid for b in world.bids), "rounds-to-mint": to_mint,
            "headroom": headroom(world, aid)}


def headroom(world: "World", aid: str) -> dict[str, int]:
    """Per configured resource, the uses left in the window now (none configured: empty)."""
    lim = world.limits.limits
    edge = world.clock - lim.window_ms
    uses = world.limits.uses.get(aid, {})
    return {res: cap - sum(n for t, n in uses.get(res, ()) if t > edge) for res, cap in lim.caps}
