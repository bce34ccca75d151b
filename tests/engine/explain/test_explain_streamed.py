"""`agent explain --goal N` in constant memory (issue 29): the goal's records are read once, a
page at a time, and none is kept; a long history is written as spans."""

from __future__ import annotations

import gc
import weakref

import pytest

from akh_tui.engine import Run
from akh_tui.engine.explain import goal as explain
from akh_tui.engine.paths import Locations
from akh_tui.engine.store.session import SessionStore


@pytest.fixture(scope="module")
def solar(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("solar")
    r = Run.start(Locations(tmp, tmp / "config.toml"), "solar", store=":memory:")
    r.run_cycles(60)
    yield r
    r.close()


class Rec(dict):
    """A record that can be watched for being let go (a plain dict cannot be weakly referenced)."""


def test_the_explanation_reads_the_records_once_and_keeps_none(solar):
    whole = solar.records()
    for gid in sorted(solar.agent.goals):
        want = explain.explain_goal(solar.agent, whole, gid, list(solar.scenario.kg))
        refs: list[weakref.ref] = []
        alive_at_end: list[int] = []

        def once():
            for r in whole:
                rec = Rec(r)
                refs.append(weakref.ref(rec))
                yield rec
                del rec
                gc.collect()
                alive_at_end.append(sum(ref() is not None for ref in refs))

        got = explain.explain_goal(solar.agent, once(), gid, list(solar.scenario.kg))
        assert got == want
        # when the reader asks for the next record it holds at most the one it just read
        assert max(alive_at_end) <= 1


def test_goal_records_are_read_a_page_at_a_time_and_say_the_same(solar, monkeypatch):
    branch = solar.store.current()
    gid = min(solar.agent.goals)
    whole = [r["cycle"] for r in solar.store.goal_records(branch, [gid])]
    assert len(whole) > 5
    queries: list[str] = []
    real = SessionStore._query

    def counted(self, sql, args=()):
        queries.append(sql)
        return real(self, sql, args)

    monkeypatch.setattr(SessionStore, "PAGE", 2)
    monkeypatch.setattr(SessionStore, "_query", counted)
    paged = [r["cycle"] for r in solar.store.goal_records(branch, [gid])]
    assert paged == whole
    assert len([q for q in queries if "LIMIT 2" in q]) >= len(whole) // 2


def test_a_long_history_is_written_as_spans_that_stay_short():
    assert explain._span([]) == "never"
    assert explain._span([4]) == "cycle 4"
    assert explain._span([3, 4, 5]) == "cycles 3–5"
    assert explain._span([2, 5, 8]) == "cycles 2, 5, 8"
    long = [c for c in range(1, 100_001) if c % 3]  # 1, 2, 4, 5, 7, 8, ...: 33,334 spans
    text = explain._span(long)
    assert text.startswith("cycles 1–2, 4–5, 7–8") and text.endswith(", … 100000 (33334 spans)")
    assert len(text) < 120
