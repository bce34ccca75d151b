"""A class around one world (`akh-tui serve --world FILE`, issue 26): the owner's side.

One process owns the world (the store keeps one writer per run) and steps it in a thread of
its own; each browser tab is a client of it over the channel (cli/class_channel.py). A
**seat** is one agent's place in the class: a join key (in the join URL the teacher hands
out), a name (`seat:AGENT`, `seat:AGENT#2` after a reassignment: what the record's
`decide.user.by` says), and whether a student has taken it.

- An agent whose seat is taken stops at the world gate (gate.py) each turn: its proposal goes
  to the seat's tab, which approves it, rejects it or chooses another offered tool. An
  absent student cannot stall the world: after `timeout_s` the table's choice (the offered
  tool the utility table rates best) is taken, recorded with `by = "timeout"`.
- A seat stays taken when its tab closes: the same join URL takes it again (the newest tab
  holding a seat is the one whose answers count; an older one is told).
- The teacher pauses and runs the world, steps an agent or a round, releases an agent (its
  decider decides alone again; the same URL may take it again) or reassigns it (a new join
  URL; the old one no longer takes it).

Everything a tab is shown comes from `snapshot`, a JSON-able dict read from a cache that the
stepping thread refreshes after each step (only what the step changed): a tab never waits for a
decision under way.
"""

from __future__ import annotations

import heapq
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from ..errors import InputError
from ..redaction import redact, register_secret
from .gate import Answer, GateClosed, Proposal
from ..psyche.model import Psyche
from .edits import SetPsyche
from .ledger import MINT
from .watch import WorldWatch

KEY_BYTES = 16  # a seat's join key: token_urlsafe(16), 22 characters in the URL
DEFAULT_TIMEOUT_S = 60.0
SPEEDS = (0.5, 1.0, 2.0, 5.0, 10.0)  # steps per second while running
DEFAULT_SPEED = 2
LOG_KEEP = 40  # decisions kept for the tabs' log
SEEN_S = 5.0  # a tab that asked within this long is connected
# a seat's live psyche edits: each applied one is a fork, so a tab may queue one at most every
# PSYCHE_EVERY_S (an edit sent while its seat's last one still waits replaces that one instead)
PSYCHE_EVERY_S = 5.0
# sessions: a tab joins on every page load, so the class keeps, per key, only the newest few
# (a seat's newest tab drives it; the one before is told why it no longer does) and drops a
# session no tab asked with for SESSION_IDLE_S (a live tab asks at least every 20 s)
SESSIONS_PER_KEY = 4
SESSION_IDLE_S = 600.0
GONE_KEEP = 256  # why a dropped session was dropped, for the tab that asks with it next
NOTE_MAX = 200  # an exception's words in the note every tab shows: cut
Role = Literal["teacher", "student"]
# how `serve --world` tells each tab's process where the owner is: the channel's Unix socket and
# token (the same for every tab), and the tab's own join key (the teacher's or a seat's)
CHANNEL_ENV = "AKH_TUI_CLASS_CHANNEL"
TOKEN_ENV = "AKH_TUI_CLASS_TOKEN"
KEY_ENV = "AKH_TUI_CLASS_KEY"


class ClassRefusal(InputError):
    """A tab's request the class refuses (a stale session, an answer to no proposal...)."""


@dataclass
class Seat:
    agent: str
    key: str
    number: int = 1  # how many times the seat was given out: reassigning makes a new one
    taken: bool = False
    session: str | None = None  # the newest tab holding it
    seen: float = 0.0  # when that tab last asked (monotonic)
    psyche_at: float = float("-inf")  # when its last live psyche edit was queued (monotonic)

    @property
    def name(self) -> str:
        return f"seat:{self.agent}" if self.number == 1 else f"seat:{self.agent}#{self.number}"


@dataclass
class Pending:
    """A decision waiting at the gate."""

    number: int
    proposal: Proposal
    seat: str
    deadline: float  # monotonic
    answer: Answer | None = None


@dataclass
class Session:
    role: Role
    agent: str | None  # a student's agent
    key: str
    seen: float = field(default=0.0)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def _key_bytes(key: str) -> bytes:
    """A join key as bytes for a constant-time compare (compare_digest takes only ASCII str): a
    key from a URL may be any text, a lone surrogate included."""
    return key.encode("utf-8", "surrogatepass")


def table_choice(p: Proposal, by: str, why: str) -> Answer:
    """The utility table's choice (the best offered candidate): approve when the agent proposes
    it, else choose it."""
    best = p.candidates[0]["tool"] if p.candidates else p.tool
    if best == p.tool:
        return Answer("approve", None, by=by, why=why)
    return Answer("choose", best, by=by, why=why)


class ClassRoom:
    """The owner of a served world: seats, the gate's answers, the stepping thread, and the
    snapshot each tab reads. Thread-safe: the channel calls in from its event loop."""

    def __init__(self, watch: WorldWatch, timeout_s: float = DEFAULT_TIMEOUT_S,
                 join_url: Callable[[str, str], str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`join_url(kind, key)` makes the URL a tab opens (kind "seat" or "teacher")."""
        self.watch = watch
        self.timeout_s = timeout_s
        self.join_url = join_url or (lambda kind, key: f"?{kind}={key}")
        self.clock = clock
        self.cond = threading.Condition()
        self.teacher_key = secrets.token_urlsafe(KEY_BYTES)
        self.seats = {aid: Seat(aid, secrets.token_urlsafe(KEY_BYTES)) for aid in watch.ids}
        for key in (self.teacher_key, *(s.key for s in self.seats.values())):
            register_secret(key)  # what `serve` logs (request paths) never shows a key
        self.sessions: dict[str, Session] = {}  # oldest first (pruned on join and reassignment)
        self._gone: dict[str, tuple[str, str]] = {}  # a dropped session -> (why, the refusal's field)
        self.running = False
        self.speed = DEFAULT_SPEED
        # the stepping thread's jobs, in order: ("agent" | "round", None), the teacher's steps, or
        # ("psyche", SetPsyche), a student's live psyche edit (a fork, applied between turns)
        self.requests: list[tuple[str, Any]] = []
        self.pending: Pending | None = None
        self.proposals = 0
        self.decisions: list[dict[str, Any]] = []
        self.note = "paused: the teacher runs or steps the world"
        self.version = 0
        self.listeners: list[Callable[[], None]] = []
        self.closing = False
        self._stopped_at_rounds = False
        self._cache: dict[str, Any] = {}
        self._marks: tuple[object, int, int, int, int] | None = None  # where the cache read the watch's logs to
        self._drops: list[tuple[float, str]] = []  # (world ms, agent): when an agent's headroom changes by itself
        self._gated: set[str] = set()  # the gate's agents as the cache has them
        self._index = {aid: i for i, aid in enumerate(watch.ids)}  # an agent's roster row
        self._psyches: dict[str, str] = {}
        self._refresh(psyches=True)
        self._thread: threading.Thread | None = None

    # ---- the stepping thread ----------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="class-world", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop stepping (a decision waiting is not taken: its step is not recorded) and close
        the world (the door saves its state)."""
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self.watch.lock:
            self.watch.close()

    def _loop(self) -> None:
        next_at = 0.0
        while True:
            with self.cond:
                while not self.closing:
                    if self.requests:
                        job, arg = self.requests.pop(0)
                        break
                    if self.running:
                        left = next_at - self.clock()
                        if left <= 0:
                            job, arg = "run", None
                            break
                        self.cond.wait(left)
                    else:
                        self.cond.wait()
                else:
                    return
            if job == "psyche":
                self._edit_psyche(arg)
                continue
            next_at = self.clock() + 1 / SPEEDS[self.speed]
            self._step(job)

    def _edit_psyche(self, edit: SetPsyche) -> None:
        """A student's live psyche edit: a fork here (as the workbench's `e`), so that rewind and
        resume replay it; it takes effect at the agent's next turn."""
        try:
            branch = self.watch.replace_psyche(edit.agent, Psyche.from_toml(edit.toml), source=edit.source)
            note = f"{edit.source} edited {edit.agent}'s psyche (branch {branch}): it takes effect at its next turn"
        except Exception as exc:  # said on every tab; the world goes on as it was
            note = f"{edit.source}'s psyche edit was not applied: {self._said(exc)}"
        with self.cond:
            self.note = note
        self._refresh(psyches=True)

    def _said(self, exc: BaseException) -> str:
        """An exception as the note every tab (a remote student's too) shows: its first line,
        secrets masked, the owner's data dir not named, cut short."""
        text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        data_dir = str(self.watch.run.locations.data_dir)
        if data_dir:
            text = text.replace(data_dir, "<data dir>")
        text = redact(text)
        return text if len(text) <= NOTE_MAX else text[:NOTE_MAX - 1] + "…"

    def _step(self, job: str) -> None:
        w = self.watch
        try:
            stepped = self._turn()
            while job == "round" and stepped and w.world.order is not None and not self.closing:
                stepped = self._turn()
        except GateClosed:  # the class is closing while a decision waited: that turn is not taken
            return
        except Exception as exc:  # an engine bug is said on every tab, never a dead owner
            with self.cond:
                self.running = False
                self.note = f"the engine raised {self._said(exc)}; the world is paused"
            self._refresh()
            return
        with self.cond:
            if w.broken is not None:
                self.running, self.note = False, f"stopped: {w.broken}"
            elif not stepped or w.over:
                self.running, self.note = False, "every agent is STOPPED: the world is over"
            elif self.running and w.rounds_done and not self._stopped_at_rounds:
                self._stopped_at_rounds = True
                self.running = False
                self.note = f"the world file's {w.spec.rounds} rounds are done (run or step to go on)"
        self._refresh()

    def _turn(self) -> bool:
        """One agent's turn, the gate set from the seats as they are now (here, in the stepping
        thread: the door is not touched while a turn is under way)."""
        with self.cond:
            gated = [a for a, s in self.seats.items() if s.taken]
        self.watch.run.gate(gated)
        return self.watch.step_agent(answer=self._answer) is not None

    # ---- the gate's answerer (the stepping thread) ------------------------------------------
    def _answer(self, p: Proposal) -> Answer:
        with self.cond:
            seat = self.seats.get(p.agent)
            if seat is None or not seat.taken:  # released between the gate's choice and now
                return table_choice(p, "auto", "the seat was released: the table's choice")
            self.proposals += 1
            pend = Pending(self.proposals, p, seat.name, self.clock() + self.timeout_s)
            self.pending = pend
            self._changed()
            try:
                while pend.answer is None:
                    if self.closing:
                        raise GateClosed(f"the class closed while {pend.seat} was deciding")
                    left = pend.deadline - self.clock()
                    if left <= 0:
                        pend.answer = table_choice(p, "timeout", f"no answer from {pend.seat} within "
                                                                 f"{self.timeout_s:g} s: the table's choice")
                        break
                    self.cond.wait(left)
                answer = pend.answer
                self.decisions.append({"round": p.round, "agent": p.agent, "seat": pend.seat,
                                       "proposed": p.tool, "decision": answer.decision,
                                       "tool": answer.tool, "by": answer.by})
                del self.decisions[:-LOG_KEEP]
                return answer
            finally:
                self.pending = None
                self._changed()

    # ---- what changed -----------------------------------------------------------------------
    def _changed(self) -> None:
        """Call with `cond` held."""
        self.version += 1
        self.cond.notify_all()
        for listen in list(self.listeners):
            listen()

    def _refresh(self, psyches: bool = False) -> None:
        """The world's part of the snapshot, read after a step (never while a turn waits);
        `psyches`: the agents' psyche texts too (they change only by an edit, not by a turn).
        After a step only what the step changed is read again (`_update`); after an edit (a
        fork: another world) or anything the marks cannot follow, everything (`_rebuild`)."""
        w = self.watch
        with w.lock:
            marks = self._marks_now()
            before = self._marks
            if psyches or before is None or before[0] is not marks[0] or any(
                    now < then for now, then in zip(marks[1:], before[1:])):
                cache = self._rebuild()
                self._drops, self._gated = [], set(w.run.gated)
                for aid in w.ids:
                    self._watch_drops(aid)
            else:
                cache = self._update(before)
            self._marks = marks
            texts = {aid: w.psyche_text(aid) for aid in w.ids} if psyches else None
        with self.cond:
            self._cache = cache
            if texts is not None:
                self._psyches = texts
            self._changed()

    def _marks_now(self) -> tuple[object, int, int, int, int]:
        """Where the watch's logs end (with the world they are of): what a step added is past
        them. Call with the watch's lock held."""
        w = self.watch
        return w.world, len(w.steps), len(w.ledger_log), len(w.artifact_log), len(w.state_log)

    def _head(self) -> dict[str, Any]:
        w = self.watch
        return {"world": w.name, "round": w.round, "clock": w.clock, "steps": len(w.steps),
                "over": w.over, "next": w.next_agent(), "rounds": w.spec.rounds, "minted": w.minted()}

    @staticmethod
    def _artifact_row(a: Any, written: dict[tuple[str, int], dict[str, Any]]) -> dict[str, Any]:
        last = written.get((a.id, a.version))
        return {"id": a.id, "owner": a.owner, "version": a.version, "price": a.price,
                "by": last["agent"] if last is not None else "(world file)",
                "at_round": last["round"] if last is not None else 0, "size": a.size}

    def _watch_drops(self, aid: str) -> None:
        """Note when `aid`'s headroom next changes by itself (the clock passing its oldest use)."""
        at = self.watch.headroom_changes_at(aid)
        if at is not None:
            heapq.heappush(self._drops, (at, aid))

    def _rebuild(self) -> dict[str, Any]:
        """The world's part of the snapshot, all of it. Call with the watch's lock held."""
        w = self.watch
        written = {(e["id"], e["version"]): e for e in w.artifact_log}
        return {**self._head(), "roster": w.roster(),
                "artifacts": [self._artifact_row(a, written) for a in w.world.artifacts],
                "balances": w.balances()}

    def _update(self, before: tuple[object, int, int, int, int]) -> dict[str, Any]:
        """The snapshot after a step, from the one before it: the rows of the agents the step
        named (its turn, its state changes, its ledger entries), the artifacts it wrote and the
        balances it moved are read again; and the rows whose rate headroom changed by itself
        (the clock passed an agent's oldest use: `_drops`) or whose gate flag changed (a seat
        taken or left). New containers throughout: a tab may be serialising the old snapshot.
        Call with the watch's lock held."""
        w = self.watch
        old = self._cache
        _, steps, ledger, artifacts, states = before
        moves = w.ledger_log[ledger:]
        named = {st.agent for st in w.steps[steps:]} | {r["agent"] for r in w.state_log[states:]}
        named |= {acct for e in moves for acct in (e["from"], e["to"], e.get("agent"))}
        gated = set(w.run.gated)
        named |= gated ^ self._gated
        self._gated = gated
        now = w.world.clock
        while self._drops and self._drops[0][0] <= now:  # an old entry only costs a row read again
            named.add(heapq.heappop(self._drops)[1])
        rows = w.roster(named) if named & self._index.keys() else []
        roster = list(old["roster"])
        for row in rows:
            roster[self._index[row["id"]]] = row
            self._watch_drops(row["id"])
        wrote = w.artifact_log[artifacts:]
        rows = old["artifacts"]
        if wrote:
            written = {(e["id"], e["version"]): e for e in wrote}
            by_id = {row["id"]: row for row in rows}
            for aid in {e["id"] for e in wrote}:
                a = w.world.artifacts.get(aid)
                if a is not None:
                    by_id[aid] = self._artifact_row(a, written)
            rows = [by_id[k] for k in sorted(by_id)] if len(by_id) != len(rows) else [by_id[r["id"]] for r in rows]
        balances = old["balances"]
        if moves:
            accounts = {acct for e in moves for acct in (e["from"], e["to"])}
            if accounts <= balances.keys() | {MINT}:
                balances = {**balances, **{acct: w.world.ledger.balance(acct) for acct in accounts if acct != MINT}}
            else:  # an account the snapshot did not have: all of them, in the ledger's order
                balances = w.balances()
        return {**self._head(), "roster": roster, "artifacts": rows, "balances": balances}

    # ---- tabs -------------------------------------------------------------------------------
    def role_of(self, key: str) -> tuple[Role, str | None] | None:
        """What a join key opens: the teacher's tab, a seat's (its agent), or None (unknown, or
        a seat's key from before a reassignment)."""
        if not key:
            return None
        given = _key_bytes(key)
        if secrets.compare_digest(given, _key_bytes(self.teacher_key)):
            return "teacher", None
        for seat in self.seats.values():
            if secrets.compare_digest(given, _key_bytes(seat.key)):
                return "student", seat.agent
        return None

    def join(self, key: str) -> dict[str, Any]:
        """A tab opening with `key`: its session. A seat's tab takes the seat (the newest tab
        holding it is the one that answers; its agent's turns stop at the gate from now on)."""
        with self.cond:
            role = self.role_of(key)
            if role is None:
                raise ClassRefusal("this join URL is not (or no longer) one of this class's: ask the teacher for "
                                   "the current one", field="key")
            session = secrets.token_urlsafe(KEY_BYTES)
            kind, agent = role
            self._prune(key)
            self.sessions[session] = Session(kind, agent, key, self.clock())
            if agent is not None:
                seat = self.seats[agent]
                seat.taken, seat.session, seat.seen = True, session, self.clock()
            self._changed()
            return {"session": session, "role": kind, "agent": agent}

    def _drop(self, session: str, why: str, field: str) -> None:
        """Call with `cond` held: the session no longer reads or does anything; its tab is told
        `why` (field "session": the tab joins again with its key; "seat": it does not, since
        that would take the seat back from the newer tab)."""
        del self.sessions[session]
        self._gone[session] = (why, field)
        while len(self._gone) > GONE_KEEP:
            del self._gone[next(iter(self._gone))]

    def _prune(self, key: str) -> None:
        """Call with `cond` held, before a new session of `key`: sessions nobody asked with for
        SESSION_IDLE_S go, and so do `key`'s oldest beyond SESSIONS_PER_KEY - 1."""
        now = self.clock()
        for sid, s in list(self.sessions.items()):
            if now - s.seen > SESSION_IDLE_S:
                self._drop(sid, "this tab was idle too long: reload the page", "session")
        same = [sid for sid, s in self.sessions.items() if s.key == key]
        for sid in same[:max(0, len(same) - (SESSIONS_PER_KEY - 1))]:
            s = self.sessions[sid]
            if s.agent is not None and self.seats[s.agent].session != sid:
                self._drop(sid, "this seat was taken in another tab (the newest tab with the join URL drives it): "
                                "reload the page to take it back", "seat")
            else:
                self._drop(sid, "this tab's session was replaced by a newer tab's: reload the page", "session")

    def _session(self, session: str) -> Session:
        s = self.sessions.get(session)
        if s is None:
            why, field = self._gone.get(session, (
                "this tab's session is unknown (the class was restarted?): reload the page", "session"))
            raise ClassRefusal(why, field=field)
        return s

    def seen(self, session: str) -> None:
        with self.cond:
            s = self.sessions.get(session)
            if s is not None:
                s.seen = self.clock()
                if s.agent is not None and self.seats[s.agent].session == session:
                    self.seats[s.agent].seen = s.seen

    def snapshot(self, session: str) -> dict[str, Any]:
        """What the tab of `session` shows now (JSON-able)."""
        with self.cond:
            s = self._session(session)
            now = self.clock()
            out = dict(self._cache)
            out["version"] = self.version
            out["running"], out["speed"], out["note"] = self.running, SPEEDS[self.speed], self.note
            out["timeout_s"] = self.timeout_s
            out["decisions"] = list(self.decisions[-12:])
            seats = {a: {"name": st.name, "taken": st.taken, "connected": st.taken and now - st.seen < SEEN_S}
                     for a, st in self.seats.items()}
            out["seats"] = seats
            pend = self.pending
            out["waiting"] = None if pend is None else {
                "agent": pend.proposal.agent, "seat": pend.seat, "left_s": max(0.0, pend.deadline - now)}
            me: dict[str, Any] = {"role": s.role, "agent": s.agent}
            if s.role == "teacher":
                out["join"] = {a: self.join_url("seat", st.key) for a, st in self.seats.items()}
            else:
                assert s.agent is not None
                seat = self.seats[s.agent]
                me["seat"] = seat.name
                me["holds"] = seat.session == session  # a reassigned seat's old sessions are dropped
                me["why_not"] = None if me["holds"] else (
                    "this seat was taken in another tab (the newest tab with the join URL drives it)"
                    if seat.taken else "the teacher released this seat: reload the page to take it again")
                me["proposal"] = None
                if pend is not None and pend.proposal.agent == s.agent and me["holds"]:
                    p = pend.proposal
                    me["proposal"] = {"number": pend.number, "round": p.round, "tool": p.tool, "input": p.input,
                                      "candidates": [dict(c) for c in p.candidates], "why": p.why,
                                      "left_s": max(0.0, pend.deadline - now)}
            out["you"] = me
            return out

    def wait(self, since: int, timeout: float) -> int:
        """Block until the version passes `since` or `timeout` elapses (threads; the channel
        waits on its event loop instead)."""
        end = self.clock() + timeout
        with self.cond:
            while self.version <= since and not self.closing:
                left = end - self.clock()
                if left <= 0:
                    break
                self.cond.wait(left)
            return self.version

    # ---- a student's answer -----------------------------------------------------------------
    def answer(self, session: str, number: int, decision: str, tool: str | None = None) -> dict[str, Any]:
        """A student's answer to proposal `number` of its agent: approve, reject, or choose an
        offered tool. ClassRefusal when the tab does not hold the seat, the proposal is no longer
        waiting, or the tool was not offered."""
        with self.cond:
            s = self._session(session)
            if s.role != "student" or s.agent is None:
                raise ClassRefusal("only a seat's tab answers for its agent", field="session")
            seat = self.seats[s.agent]
            if seat.session != session or seat.key != s.key:
                raise ClassRefusal(f"this tab no longer holds {seat.name}", field="session")
            pend = self.pending
            if pend is None or pend.proposal.agent != s.agent or pend.number != number:
                raise ClassRefusal(f"proposal {number} is no longer waiting (the timeout took it, or it was answered)",
                                   field="proposal")
            if decision not in ("approve", "reject", "choose"):
                raise ClassRefusal(f"a decision is approve, reject or choose, not {decision!r}", field="decision")
            if decision == "choose":
                offered = [c["tool"] for c in pend.proposal.candidates]
                if tool not in offered:
                    raise ClassRefusal(f"{tool!r} was not offered (offered: {', '.join(offered)})", field="tool")
            pend.answer = Answer(decision, tool if decision == "choose" else None, by=seat.name)  # type: ignore[arg-type]
            self.cond.notify_all()
            return {"ok": True, "by": seat.name}

    # ---- a student's psyche ---------------------------------------------------------------
    def _holder(self, session: str) -> Seat:
        s = self._session(session)
        if s.role != "student" or s.agent is None:
            raise ClassRefusal("only a seat's tab edits its agent's psyche", field="session")
        seat = self.seats[s.agent]
        if seat.session != session or seat.key != s.key:
            raise ClassRefusal(f"this tab no longer holds {seat.name}", field="session")
        return seat

    def psyche_path(self, agent: str) -> Path:
        """Where a seat's psyche saves go: the data dir's served-only folder (runs outside
        `serve` never read it), one file per world and agent."""
        loc = self.watch.run.locations
        return loc.served_dir / "psyche" / f"world-{_safe(self.watch.name)}" / f"{_safe(agent)}.toml"

    def psyche_name(self, agent: str) -> str:
        """`psyche_path` as a tab is told it: relative to the data dir, whose place on the
        owner's machine a remote student has no business knowing."""
        loc = self.watch.run.locations
        return "<data dir>/" + self.psyche_path(agent).relative_to(loc.data_dir).as_posix()

    def psyche(self, session: str) -> dict[str, Any]:
        """The seat's agent's psyche as TOML (as of the last step), and where ctrl+w saves it."""
        with self.cond:
            seat = self._holder(session)
            return {"agent": seat.agent, "toml": self._psyches.get(seat.agent, ""),
                    "save_to": self.psyche_name(seat.agent)}

    def set_psyche(self, session: str, toml: str) -> dict[str, Any]:
        """A live edit of the seat's agent's psyche (checked here: a bad text is refused with
        its line and field), applied by the stepping thread between turns. Each applied edit is
        a fork, so: a psyche the same as the agent's now changes nothing (and drops the seat's
        edit still waiting, if any); an edit while the seat's last one still waits replaces
        it; otherwise a seat queues one edit at most every PSYCHE_EVERY_S."""
        with self.cond:
            seat = self._holder(session)
            psyche = Psyche.from_toml(toml, file=f"{seat.name}'s psyche")  # InputError: the tab shows it
            waiting = next((i for i, (job, arg) in enumerate(self.requests)
                            if job == "psyche" and arg.agent == seat.agent), None)
            now_text = self._psyches.get(seat.agent)
            if now_text is not None and psyche == Psyche.from_toml(now_text):
                if waiting is not None:
                    del self.requests[waiting]
                return {"ok": True, "applied": False,
                        "note": f"{seat.agent}'s psyche is already this one: nothing to apply"}
            edit = SetPsyche(seat.agent, toml, source=seat.name)
            if waiting is not None:  # not applied yet: this text takes its place (and its turn)
                self.requests[waiting] = ("psyche", edit)
                return {"ok": True, "applied": True, "note": "replaces your edit not yet applied"}
            left = seat.psyche_at + PSYCHE_EVERY_S - self.clock()
            if left > 0:
                raise ClassRefusal(f"a seat applies one psyche edit at most every {PSYCHE_EVERY_S:g} s (each is a "
                                   f"fork of the world): apply again in {left:.1f} s", field="psyche")
            seat.psyche_at = self.clock()
            self.requests.append(("psyche", edit))
            self.cond.notify_all()
            return {"ok": True, "applied": True}

    def save_psyche(self, session: str, toml: str) -> dict[str, Any]:
        """The seat's psyche text saved (checked first) to its served-only file, replaced whole."""
        with self.cond:
            seat = self._holder(session)
            Psyche.from_toml(toml, file=f"{seat.name}'s psyche")
            path = self.psyche_path(seat.agent)
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.part")
        part.write_text(toml, encoding="utf-8")
        os.replace(part, path)
        return {"ok": True, "path": self.psyche_name(seat.agent)}

    # ---- the teacher's controls -------------------------------------------------------------
    def command(self, session: str, what: str, agent: str | None = None) -> dict[str, Any]:
        """The teacher's: run, pause, agent (step one turn), round, faster, slower, table (the
        decision waiting takes the table's choice now, by "teacher"), release AGENT, reassign
        AGENT (a new join URL, which the reply carries)."""
        with self.cond:
            s = self._session(session)
            if s.role != "teacher":
                raise ClassRefusal("only the teacher's tab runs the class", field="session")
            out: dict[str, Any] = {"ok": True}
            if what == "run":
                self.running, self.note = True, ""
            elif what == "pause":
                self.running, self.note = False, "paused by the teacher"
            elif what in ("agent", "round"):
                self.requests.append((what, None))
            elif what == "table":
                if self.pending is None:
                    raise ClassRefusal("no decision is waiting", field="command")
                self.pending.answer = table_choice(self.pending.proposal, "teacher",
                                                   f"the teacher took the table's choice for {self.pending.seat}")
            elif what in ("faster", "slower"):
                self.speed = max(0, min(len(SPEEDS) - 1, self.speed + (1 if what == "faster" else -1)))
            elif what in ("release", "reassign"):
                if agent not in self.seats:
                    raise ClassRefusal(f"no agent {agent!r} in this class (agents: {', '.join(self.seats)})",
                                       field="agent")
                seat = self.seats[agent]
                seat.taken, seat.session = False, None
                if what == "reassign":
                    old = seat.key
                    for sid, sess in list(self.sessions.items()):
                        if sess.key == old:  # the old join URL's tabs lose the seat and the class
                            self._drop(sid, f"the teacher reassigned {seat.name}: this join URL no longer takes it "
                                            "(ask the teacher for the new one)", "session")
                    seat.key, seat.number = secrets.token_urlsafe(KEY_BYTES), seat.number + 1
                    register_secret(seat.key)
                    out["join"] = self.join_url("seat", seat.key)
                    self.note = f"{agent} reassigned: its new join URL is {seat.name}'s"
                else:
                    self.note = f"{agent} released: its decider decides alone until its join URL is opened again"
                if self.pending is not None and self.pending.proposal.agent == agent:
                    self.pending.answer = table_choice(self.pending.proposal, "auto",
                                                       f"{what}d by the teacher while waiting: the table's choice")
            else:
                raise ClassRefusal(f"unknown command {what!r}", field="command")
            self._changed()
            return out


__all__ = ["CHANNEL_ENV", "TOKEN_ENV", "KEY_ENV", "ClassRoom", "ClassRefusal", "Seat", "table_choice", "DEFAULT_TIMEOUT_S"]
