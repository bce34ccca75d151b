"""A branch's lineage: which branch holds which keys of its history. A fork copies nothing:
it names its parent and the cycle it was forked at, and its reads walk the lineage, root first,
each ancestor giving at most what its child took from it."""

from __future__ import annotations

from dataclasses import dataclass

INF = 1 << 62


@dataclass(frozen=True)
class Segment:
    """The part of a lineage one branch contributes: keys in [lo, hi) of each dimension."""

    branch: int
    lo: dict[str, int]
    hi: dict[str, int]


def fork_bounds(cycle: int, sizes: list[int]) -> dict[str, int]:
    """What a branch forked after `cycle` takes from its parent (exclusive upper bounds): the
    records and snapshots up to that cycle, the user inputs before it (those after it were the
    parent's own), and the graph and episodes as they were then."""
    n_sym, n_tri, next_episode = sizes
    return {"cycles": cycle + 1, "snapshots": cycle + 1, "inputs": cycle, "symbols": n_sym,
            "triples": n_tri, "episodes": next_episode, "events": cycle}


DIMS = ("cycles", "snapshots", "inputs", "symbols", "triples", "episodes", "events")


def segments(chain: "list[tuple[int, dict[str, int] | None]]") -> list[Segment]:
    """The lineage of the first branch of `chain`: (branch, the fork bounds its parent gives
    it, or None at the root), from the branch up to its root. Root first."""
    out: list[Segment] = []
    hi = {d: INF for d in DIMS}
    for bid, bounds in chain:  # child first; an ancestor gives at most what its child took
        out.append(Segment(bid, {}, dict(hi)))
        if bounds is not None:
            hi = {d: min(hi[d], bounds[d]) for d in DIMS}
    out.reverse()
    lo = {d: 0 for d in DIMS}
    lineage = []
    for seg in out:
        lineage.append(Segment(seg.branch, dict(lo), seg.hi))
        lo = dict(seg.hi)
    return lineage
