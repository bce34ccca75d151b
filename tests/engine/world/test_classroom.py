"""The owner of a served world (engine/world/classroom.py, issue 26's class in the browser): a
taken seat's agent stops at the world gate and its student's answer is recorded with the seat's
name; an absent student's decision times out to the table's choice, recorded as such; a closed
tab's seat is retaken with the same key; reassigning makes a new key; a served world never
becomes the current world."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from akh_tui.engine import SERVED_ENV, ClassRefusal, ClassRoom, InputError, Locations, WorldWatch
from akh_tui.engine.world.classroom import table_choice

DEADLINE_S = 60.0


@pytest.fixture
def locations(tmp_path):
    return Locations(tmp_path / "data", tmp_path / "config.toml")


@pytest.fixture
def room(locations):
    made: list[ClassRoom] = []

    def make(timeout_s: float = 30.0) -> ClassRoom:
        r = ClassRoom(WorldWatch.open("market", locations), timeout_s)
        r.start()
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def wait_for(what, why: str, timeout: float = DEADLINE_S) -> Any:
    """Poll `what()` until it is truthy (a condition with a deadline, never a fixed sleep)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {why}")


def changed(toml: str, guardian: str = "0.9") -> str:
    """A psyche text with another guardian weight: a real edit."""
    return re.sub(r"^guardian = [0-9.]+", f"guardian = {guardian}", toml, count=1, flags=re.M)


def proposal(room: ClassRoom, session: str) -> dict[str, Any] | None:
    return room.snapshot(session)["you"]["proposal"]


def recorded_users(room: ClassRoom) -> list[tuple[str, dict[str, Any] | None]]:
    """Every recorded cycle's (agent, decide.user) on the branch, from the store."""
    with room.watch.lock:
        rows = list(room.watch.run.steps())
    out = []
    for row in rows:
        for line in row.lines:
            rec = json.loads(line)
            if rec["type"] == "cycle":
                out.append((rec["agent"], rec["decide"].get("user")))
    return out


def test_a_students_answer_is_recorded_with_its_seat(room):
    r = room()
    teacher = r.join(r.teacher_key)["session"]
    joined = r.join(r.seats["bold"].key)
    assert joined["role"] == "student" and joined["agent"] == "bold"
    bold = joined["session"]
    r.command(teacher, "round")  # both agents act in round 1; bold's turn waits for its seat
    p = wait_for(lambda: proposal(r, bold), "bold's proposal")
    offered = [c["tool"] for c in p["candidates"]]
    assert p["tool"] in offered and p["why"]
    other = next(t for t in offered if t != p["tool"])
    with pytest.raises(ClassRefusal, match="was not offered"):
        r.answer(bold, p["number"], "choose", "no_such_tool")
    assert r.answer(bold, p["number"], "choose", other) == {"ok": True, "by": "seat:bold"}
    wait_for(lambda: r.snapshot(teacher)["steps"] >= 2, "round 1")
    users = dict(recorded_users(r))
    assert users["bold"] == {"decision": "choose", "tool": other, "by": "seat:bold", "why": "", "proposed": p["tool"]}
    assert users["cautious"] is None  # an open seat: its decider decided alone, nothing asked
    log = r.snapshot(teacher)["decisions"]
    assert log[-1]["agent"] == "bold" and log[-1]["by"] == "seat:bold" and log[-1]["tool"] == other
    with pytest.raises(ClassRefusal, match="no longer waiting"):  # answered already
        r.answer(bold, p["number"], "approve")


def test_an_absent_student_times_out_to_the_tables_choice(room):
    r = room(timeout_s=0.3)
    teacher = r.join(r.teacher_key)["session"]
    r.join(r.seats["cautious"].key)  # a student joined, then went quiet
    r.command(teacher, "round")
    wait_for(lambda: r.snapshot(teacher)["steps"] >= 2, "round 1 without an answer")
    users = dict(recorded_users(r))
    user = users["cautious"]
    assert user is not None and user["by"] == "timeout" and user["decision"] in ("approve", "choose")
    assert "the table's choice" in user["why"]
    assert r.snapshot(teacher)["decisions"][-1]["by"] == "timeout"


def test_a_closed_tabs_seat_is_retaken_and_a_reassigned_one_is_not(room):
    r = room()
    teacher = r.join(r.teacher_key)["session"]
    key = r.seats["bold"].key
    first = r.join(key)["session"]
    assert r.snapshot(teacher)["seats"]["bold"]["taken"]
    second = r.join(key)["session"]  # the tab closed and the same URL opened again
    assert r.snapshot(second)["you"]["holds"] and not r.snapshot(first)["you"]["holds"]
    assert "another tab" in r.snapshot(first)["you"]["why_not"]
    r.command(teacher, "agent")
    r.command(teacher, "agent")
    p = wait_for(lambda: proposal(r, second), "bold's proposal")
    assert proposal(r, first) is None
    with pytest.raises(ClassRefusal, match="no longer holds seat:bold"):
        r.answer(first, p["number"], "approve")
    r.answer(second, p["number"], "approve")
    wait_for(lambda: dict(recorded_users(r)).get("bold"), "bold's recorded answer")
    assert dict(recorded_users(r))["bold"]["by"] == "seat:bold"
    # reassigned: a new key (the old one takes nothing), a new seat name in the record
    got = r.command(teacher, "reassign", "bold")
    new = r.seats["bold"].key
    assert new != key and got["join"].endswith(new) and r.role_of(key) is None
    with pytest.raises(ClassRefusal, match="reassigned seat:bold: this join URL no longer") as gone:
        r.snapshot(second)  # the old URL's tabs lose the class, not only the seat
    assert gone.value.field == "session"
    with pytest.raises(ClassRefusal, match="not \\(or no longer\\)"):
        r.join(key)
    assert r.join(new)["agent"] == "bold" and r.seats["bold"].name == "seat:bold#2"
    # released: the agent's decider decides alone; the same key takes it again
    r.command(teacher, "release", "bold")
    assert not r.snapshot(teacher)["seats"]["bold"]["taken"]
    again = r.join(new)
    assert again["agent"] == "bold"
    with pytest.raises(ClassRefusal, match="only the teacher"):
        r.command(again["session"], "run")


def test_the_teacher_takes_the_tables_choice_for_a_waiting_seat(room):
    r = room()
    teacher = r.join(r.teacher_key)["session"]
    with pytest.raises(ClassRefusal, match="no decision is waiting"):
        r.command(teacher, "table")
    r.join(r.seats["bold"].key)
    r.join(r.seats["cautious"].key)
    r.command(teacher, "agent")
    wait_for(lambda: r.snapshot(teacher)["waiting"], "a proposal")
    r.command(teacher, "table")
    wait_for(lambda: r.snapshot(teacher)["steps"] == 1, "the step")
    (agent, user), = recorded_users(r)
    assert user is not None and user["by"] == "teacher" and "took the table's choice" in user["why"]


def test_teacher_commands_are_checked(room):
    r = room()
    teacher = r.join(r.teacher_key)["session"]
    with pytest.raises(ClassRefusal, match="no agent 'nobody'"):
        r.command(teacher, "release", "nobody")
    with pytest.raises(ClassRefusal, match="unknown command"):
        r.command(teacher, "explode")
    with pytest.raises(ClassRefusal, match="session is unknown"):
        r.snapshot("forged")
    assert r.role_of("") is None and r.role_of("guess") is None


def test_a_served_world_never_becomes_the_current_one(locations, monkeypatch):
    from akh_tui.engine import WorldRun

    WorldRun.start(locations, "market").close()  # the user's own world: current
    monkeypatch.setenv(SERVED_ENV, "1")
    served = WorldWatch.open("market", locations)
    served.step_agent()
    served_id = served.run.world_id
    served.close()
    monkeypatch.delenv(SERVED_ENV)
    again = WorldRun.resume(locations)
    try:
        assert again.world_id != served_id and again.world_id == 1
    finally:
        again.close()
    watch = WorldWatch.open("market", locations)
    try:
        with pytest.raises(InputError):  # a ClassRefusal is an InputError: a tab shows its words
            ClassRoom(watch).join("nope")
    finally:
        watch.close()


def test_a_students_psyche_edit_is_live_and_its_save_goes_to_the_served_place(room, locations):
    r = room()
    teacher = r.join(r.teacher_key)["session"]
    bold = r.join(r.seats["bold"].key)["session"]
    cautious = r.join(r.seats["cautious"].key)["session"]
    got = r.psyche(bold)
    assert got["agent"] == "bold" and "[" in got["toml"]
    assert got["save_to"] == "<data dir>/served/psyche/world-market/bold.toml"  # never the owner's own path
    assert str(locations.data_dir) not in json.dumps(got)
    with pytest.raises(InputError):  # a bad text is refused with what is wrong, nothing queued
        r.set_psyche(bold, "this is = = not toml")
    saved = r.save_psyche(bold, got["toml"])
    assert saved["path"] == got["save_to"] and (locations.served_dir / "psyche" / "world-market" / "bold.toml").is_file()
    assert str(locations.data_dir) not in json.dumps(saved)
    assert not locations.psyche_dir.exists()  # the owner's own psyche folder is untouched
    bolder = changed(got["toml"])
    assert bolder != got["toml"]
    r.set_psyche(bold, bolder)
    wait_for(lambda: "edited bold's psyche" in r.snapshot(teacher)["note"], "the live edit")
    assert r.watch.run.branch_name == "bold-psyche-1"
    with pytest.raises(ClassRefusal, match="only a seat's tab"):
        r.psyche(teacher)
    r.join(r.seats["cautious"].key)  # cautious's first tab no longer holds its seat
    with pytest.raises(ClassRefusal, match="no longer holds"):
        r.save_psyche(cautious, got["toml"])


def test_closing_the_class_while_a_decision_waits_records_nothing_of_that_turn(locations):
    r = ClassRoom(WorldWatch.open("market", locations), 300)
    r.start()
    teacher = r.join(r.teacher_key)["session"]
    bold = r.join(r.seats["bold"].key)["session"]
    cautious = r.join(r.seats["cautious"].key)["session"]
    r.command(teacher, "agent")
    first = wait_for(lambda: proposal(r, bold) or proposal(r, cautious), "the first proposal")
    asker = bold if proposal(r, bold) else cautious
    r.answer(asker, first["number"], "approve")
    wait_for(lambda: r.snapshot(teacher)["steps"] == 1, "the first step")
    r.command(teacher, "agent")
    wait_for(lambda: r.snapshot(teacher)["waiting"], "the second proposal")
    world = r.watch.run.world_id
    r.close()  # the second turn waits for its student: dropped, nothing of it recorded
    from akh_tui.engine import WorldRun

    again = WorldRun.open_readonly(locations, world=world)
    try:
        assert [s.step for s in again.steps()] == [1]
    finally:
        again.close()


# ---- review fixes --------------------------------------------------------------------------------

class Clock:
    """A clock the test moves (the class's rate limit and idle pruning read it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def still(locations):
    """A class whose stepping thread is not started: what it queues stays queued."""
    made: list[ClassRoom] = []

    def make() -> tuple[ClassRoom, Clock]:
        clock = Clock()
        r = ClassRoom(WorldWatch.open("market", locations), 30.0, clock=clock)
        made.append(r)
        return r, clock

    yield make
    for r in made:
        r.close()


@pytest.mark.parametrize("key", ["é", "\udcff", "a" * 22 + "é", "\x00"])
def test_a_join_key_of_any_text_opens_nothing_and_raises_no_type_error(still, key):
    r, _ = still()
    assert r.role_of(key) is None  # compare_digest on such a str raised TypeError
    with pytest.raises(ClassRefusal, match="not \\(or no longer\\)") as refused:
        r.join(key)
    assert refused.value.field == "key" and r.sessions == {}


def test_a_seats_psyche_edits_are_bounded_one_waiting_and_one_per_interval(still):
    r, clock = still()
    bold = r.join(r.seats["bold"].key)["session"]
    text = r.psyche(bold)["toml"]
    got = r.set_psyche(bold, text)  # the same psyche: no fork to make
    assert got["applied"] is False and "nothing to apply" in got["note"] and r.requests == []
    assert r.set_psyche(bold, changed(text, "0.9"))["applied"] is True
    for n in range(50):  # a flood while it waits: each replaces it, none is added
        got = r.set_psyche(bold, changed(text, f"0.{n % 9 + 1}1"))
        assert got["applied"] is True and "replaces" in got["note"]
    psyche_jobs = [arg for job, arg in r.requests if job == "psyche"]
    assert len(psyche_jobs) == 1 and psyche_jobs[0].toml == changed(text, f"0.{49 % 9 + 1}1")  # the last
    assert r.set_psyche(bold, text)["applied"] is False and r.requests == []  # back to the psyche now: dropped
    with pytest.raises(ClassRefusal, match="one psyche edit at most every 5 s") as refused:
        r.set_psyche(bold, changed(text, "0.8"))
    assert refused.value.field == "psyche" and r.requests == []
    clock.now += 5.1
    r.set_psyche(bold, changed(text, "0.8"))
    teacher = r.join(r.teacher_key)["session"]
    r.command(teacher, "agent")  # the teacher's step waits behind one edit per seat, never a flood
    assert [job for job, _ in r.requests] == ["psyche", "agent"]
    r.start()
    wait_for(lambda: r.snapshot(teacher)["steps"] == 1, "the teacher's step")
    assert r.watch.run.branch_name == "bold-psyche-1"  # one fork, with the last text
    assert "guardian = 0.8" in r.psyche(bold)["toml"]


def test_sessions_are_pruned_and_a_reassigned_keys_sessions_lose_the_class(still):
    from akh_tui.engine.world.classroom import SESSION_IDLE_S, SESSIONS_PER_KEY

    r, clock = still()
    teacher = r.join(r.teacher_key)["session"]
    key = r.seats["bold"].key
    tabs = [r.join(key)["session"] for _ in range(30)]  # reloads
    kept = [sid for sid, s in r.sessions.items() if s.key == key]
    assert kept == tabs[-SESSIONS_PER_KEY:] and len(r.sessions) == SESSIONS_PER_KEY + 1
    assert "another tab" in r.snapshot(tabs[-2])["you"]["why_not"]  # the one before is told, as before
    with pytest.raises(ClassRefusal, match="taken in another tab") as old:
        r.snapshot(tabs[0])
    assert old.value.field == "seat"  # the old tab does not join again (it would take the seat back)
    # a session nobody asked with for a while goes at the next join; one that asked stays
    clock.now += SESSION_IDLE_S - 1
    r.seen(teacher)
    clock.now += 2
    r.join(r.seats["cautious"].key)
    assert teacher in r.sessions and not any(s in r.sessions for s in tabs)
    with pytest.raises(ClassRefusal, match="idle too long"):
        r.snapshot(tabs[-1])
    # reassigned: every session of the old key is gone, whatever it was doing
    held = r.join(key)["session"]
    r.command(teacher, "reassign", "bold")
    assert not any(s.key == key for s in r.sessions.values())
    for call in (lambda: r.snapshot(held), lambda: r.psyche(held), lambda: r.answer(held, 1, "approve")):
        with pytest.raises(ClassRefusal, match="reassigned seat:bold"):
            call()


def test_a_failed_psyche_edits_note_is_masked_short_and_names_no_owner_path(still, locations, monkeypatch):
    from akh_tui.engine import register_secret
    from akh_tui.engine.world.classroom import NOTE_MAX
    from akh_tui.engine.world.edits import SetPsyche

    r, _ = still()
    secret = "sk-classnote-" + "q" * 30
    register_secret(secret)

    def broken(*_: object, **__: object) -> str:
        raise OSError(f"cannot write {locations.data_dir}/sessions.db with {secret}: " + "x" * 500 + "\nline two")

    monkeypatch.setattr(r.watch, "replace_psyche", broken)
    teacher = r.join(r.teacher_key)["session"]
    r._edit_psyche(SetPsyche("bold", r._psyches["bold"], source="seat:bold"))
    note = r.snapshot(teacher)["note"]
    assert note.startswith("seat:bold's psyche edit was not applied: OSError: cannot write <data dir>/sessions.db")
    assert secret not in note and str(locations.data_dir) not in note and "line two" not in note
    assert len(note) <= len("seat:bold's psyche edit was not applied: ") + NOTE_MAX


def test_after_a_step_only_what_it_changed_is_read_again_and_the_snapshot_is_the_same(still, monkeypatch):
    """The stepping path's refresh (`_update`) reads the rows of the agents a step named, the
    artifacts it wrote and the balances it moved, never the whole roster or every artifact, and
    gives the snapshot a full read gives, step after step (rate headroom moving with the clock, a
    seat taken and left, a mint paying every agent included)."""
    r, _ = still()
    w = r.watch
    asked: list[set[str] | None] = []
    roster = w.roster

    def counted(ids: Any = None) -> list[dict[str, Any]]:
        asked.append(None if ids is None else set(ids))
        return roster(ids)

    monkeypatch.setattr(w, "roster", counted)
    monkeypatch.setattr(w, "artifacts", lambda: pytest.fail("the class read every artifact after a step"))
    for n in range(60):
        if n == 10:
            w.run.gate(["bold"])  # a seat taken: the gate's flag moves without a turn of bold's
            w.ask = lambda p: table_choice(p, "auto", "test")
        if n == 30:
            w.run.gate([])
        asked.clear()
        stepped = w.step_agent()
        r._refresh()
        assert stepped is not None
        with w.lock:
            assert json.dumps(r._cache, sort_keys=True) == json.dumps(r._rebuild(), sort_keys=True), n
        assert None not in asked[:1], n  # never the whole roster
        if stepped.agent is not None:
            assert asked and stepped.agent in asked[0]
    assert r._cache["steps"] == 60 and any(row["headroom"] for row in r._cache["roster"])
