"""What a snapshot leaves out (the last record, which is its cycle's own row) and packs (a
goal's seen symbols) comes back exactly on a rewind, a fork and a resume, and a snapshot does
not hold a second copy of the record."""

import json
import random

import pytest

from akh_tui.engine.store import codec as codec_mod
from akh_tui.engine.runs.history import Timeline, resume
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from akh_tui.engine.store.codec import SeenPacker, pack_ids, unpack_ids
from akh_tui.engine.store.session import SessionStore
from akh_tui.engine.cycle.state import core_state

SOLAR = load_scenario("solar")
SOLAR.config.stall_threshold = 10**6  # keep the run going


def fresh():
    return build_agent(SOLAR, add_goals=False)


def plain(agent) -> dict:
    """The agent's core state as JSON gives it back (what a restore compares with)."""
    return json.loads(json.dumps(core_state(agent)))


def recorded(tmp_path, n: int, every: int = 5):
    from akh_tui.engine import Locations, Run

    ctl = Run.start(Locations(tmp_path, tmp_path / "config.toml"), SOLAR,
                    store=SessionStore(tmp_path / "s.db", every=every))
    states = {}
    for _ in range(n):
        rec = ctl.step()
        states[rec["cycle"]] = plain(ctl.agent)
    return ctl, states


@pytest.mark.parametrize("packed_from", [0, 256])  # 0: every goal's seen ids are packed
def test_rewinds_to_and_between_snapshots_restore_the_state_exactly(tmp_path, monkeypatch, packed_from):
    monkeypatch.setattr(codec_mod, "PACKED_IDS", packed_from)
    ctl, states = recorded(tmp_path, 32)
    st = ctl.store
    tl = Timeline(st, st.current(), fresh)
    for c in (5, 10, 11, 14, 25, 30, 32):
        assert plain(tl.rewind(c)) == states[c], c
    # the stored snapshot names its cycle's record instead of holding it
    cycle, snap = st.snapshot_before(st.current(), 30)
    assert cycle == 30 and snap["last_record"] == {"derived": 30}
    if packed_from == 0:
        assert any(isinstance(g["seen"], dict) for g in snap["goals"])
        assert all(isinstance(g["seen"], dict) for g in snap["goals"] if g["seen"])
    ctl.close()


def test_a_fork_from_a_snapshot_cycle_and_a_resume_after_a_kill_restore_exactly(tmp_path, monkeypatch):
    monkeypatch.setattr(codec_mod, "PACKED_IDS", 0)
    ctl, states = recorded(tmp_path, 20)
    st = ctl.store
    main = st.current()
    ctl.fork(10, "other")
    fork_tl = Timeline(st, st.current(), fresh)
    assert plain(fork_tl.rewind(10)) == states[10]
    st.use(main)
    # a killed process leaves no head for its last cycles: resume rewinds to the last cycle
    agent = resume(st, fresh, main)
    assert plain(agent) == states[20]
    ctl.close()


def test_a_snapshot_is_smaller_than_one_that_copied_the_last_record(tmp_path):
    ctl, _ = recorded(tmp_path, 10)
    st = ctl.store
    _, snap = st.snapshot_before(st.current(), 10)
    full = core_state(ctl.agent)
    assert len(json.dumps(snap)) < len(json.dumps(full)) - len(json.dumps(full["last_record"])) // 2
    ctl.close()


def test_packed_ids_match_a_sorted_list_whatever_happens_to_the_set():
    rng = random.Random(7)
    packer = SeenPacker()
    ids = set(rng.sample(range(100_000), 400))
    for _ in range(300):
        op = rng.random()
        if op < 0.4:
            ids.update(rng.sample(range(100_000), rng.randint(0, 20)))  # grows (the usual case)
        elif op < 0.5:
            ids.discard(min(ids))  # shrinks: packed afresh
        elif op < 0.55:
            ids = set(rng.sample(range(200_000), rng.randint(100, 600)))  # another set (a rewind)
        packed = packer.pack(1, ids)
        got = unpack_ids(packed) if isinstance(packed, dict) else packed
        assert got == sorted(ids)
        assert packed == pack_ids(ids)
    assert isinstance(pack_ids(set(range(0, 30_000_000, 100_000))), dict)  # gaps over 16 bits
    assert pack_ids({3, 1, 2}) == [1, 2, 3]  # small sets stay lists


@pytest.mark.parametrize("bad", [{"gaps": "<i8", "b64": ""}, {"gaps": "<u2", "b64": "!!"}, {"gaps": "<u2", "b64": "AA=="}])
def test_malformed_packed_ids_are_an_error(bad):
    with pytest.raises(ValueError):
        unpack_ids(bad)
