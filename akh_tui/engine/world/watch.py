"""A world held open for the workbench (issue 26): stepped one agent's turn or one round at a
time, its records kept so any step can be shown again read-only, and what the workbench's
panes draw (the roster, the swimlanes, artifacts, the ledger, the mint, rate windows) read
from it under one lock (the engine thread steps while the UI thread reads).

It holds the door's `WorldRun`: every step is recorded in the data dir's session store (as
`world run` records it), a fork (`fork`, a live psyche edit) is a branch there and the
workbench reads the new branch's steps back; the cycle records the panes draw are also kept
here, compressed (10,000 steps of a two-agent world hold about 15 MB).

World breakpoints (`parse_world_break`) stop a running world after the turn whose records
match; they are checked against the records the turn wrote, never by re-running anything.
"""

from __future__ import annotations

import io
import json
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..errors import InputError
from ..knowledge.memory import KIND_RELEVANCE
from ..psyche.model import Psyche
from ..records import CycleRecord, View
from ..runs.breakpoints import Breakpoint, first_hit, parse_breakpoint
from .artifacts import Version
from .file import WorldSpec, load_world
from .ledger import ESCROW, WORLD, InvariantViolation
from .loop import PAUSED, SLEEPING, STOPPED
from ..paths import Locations
from .world import World
from .edits import DisableTool, SetDecider, SetOrder, SetPsyche, WorldEdit, parse_goal_edit, parse_limit_edit
from .gate import Answer, Answerer, GateClosed, Proposal, check_answer
from .worldrun import WorldRun, compare_worlds

if TYPE_CHECKING:
    from .gate import Answerer

# one glyph per step on a swimlane, and what an agent's lane shows where another agent acts
LANE_GLYPHS = {"act": "●", "fail": "✗", "veto": "!", "limited": "⊘"}
STATE_LETTER = {"STARTING": "s", "RUNNING": "R", SLEEPING: "Z", PAUSED: "P", STOPPED: "X"}
LANE_STATE = {"s": " ", "R": " ", "Z": "z", "P": "P", "X": "·"}  # by STATE_LETTER
RESOURCES = ("actions", "llm_calls", "llm_tokens", "writes")


@dataclass(frozen=True)
class LaneStep:
    """One turn as the swimlanes and the replay see it. `index` counts from 0 in the world's
    order of turns; `states` holds every agent's state letter after the turn (file order)."""

    index: int
    round: int
    clock: float
    agent: str
    tool: str | None  # None: a turn refused by the rate limits
    kind: str  # a key of LANE_GLYPHS
    result: str
    states: str
    cycle: int | None  # the agent's cycle number (None for a refused turn)
    step: int = 0  # the door's step number on the branch (SPEC §13's ROUND:AGENT, counted)


@dataclass
class WorldBreak:
    """A world breakpoint: `text` as typed, and what it matches."""

    text: str
    kind: str  # transfer | write | mint | backoff | paused | agent | cycle
    agent: str | None = None
    name: str | None = None  # an artifact id, or a tool for `agent:X:TOOL`
    amount: int = 0
    cycle_break: Breakpoint | None = None


WORLD_BREAK_HELP = ("transfer>N (a ledger move above N scrip) · write or write:ARTIFACT · mint · backoff or "
                    "backoff:AGENT · paused or paused:AGENT · agent:X or agent:X:TOOL · any single-run breakpoint "
                    "(tool=, veto, goal, score < 0.3 ...) on every agent's cycle")


def parse_world_break(text: str, agents: list[str], field_name: str = "breakpoint") -> WorldBreak:
    """A world breakpoint from its text; InputError naming what is wrong (an unknown agent, a
    bad amount, a condition the cycle record cannot hold)."""
    spec = text.strip()
    head, _, rest = spec.partition(":")
    if spec.startswith("transfer"):
        num = spec[len("transfer"):].strip().removeprefix(">").strip()
        if not spec[len("transfer"):].strip().startswith(">") or not num.isdigit():
            raise InputError(f"{spec!r}: write transfer>N with N a whole number of scrip", field=field_name)
        return WorldBreak(spec, "transfer", amount=int(num))
    if head in ("write", "mint", "backoff", "paused", "agent"):
        if head == "mint":
            if rest:
                raise InputError(f"{spec!r}: mint takes nothing after it", field=field_name)
            return WorldBreak(spec, "mint")
        if head == "write":
            return WorldBreak(spec, "write", name=rest.strip() or None)
        who, _, tool = rest.partition(":")
        who = who.strip()
        if head == "agent" and not who:
            raise InputError(f"{spec!r}: write agent:ID (the agents: {', '.join(agents)})", field=field_name)
        if who and who not in agents:
            raise InputError(f"{spec!r}: no agent {who!r} in this world (the agents: {', '.join(agents)})",
                             field=field_name)
        if tool and head != "agent":
            raise InputError(f"{spec!r}: only agent:X takes a tool after it", field=field_name)
        return WorldBreak(spec, head, agent=who or None, name=tool.strip() or None)
    return WorldBreak(spec, "cycle", cycle_break=parse_breakpoint(spec, field=field_name, tools=None))


FORK_EDIT_HELP = ("order=AGENT,AGENT · disable=AGENT:TOOL · decider=AGENT:KIND · goal=AGENT:EDIT · limit=KEY=VALUE "
                  "(several separated by ;)")
# the fork dialog's help: each edit and what it takes, one a line within its box (68 columns)
FORK_EDIT_LINES = "\n".join((
    "order=AGENT,AGENT      the rest of the round's order",
    'disable=AGENT:TOOL     a tool the agent may not use',
    'decider=AGENT:KIND     utility scripted llm local workflow mod:attr',
    'goal=AGENT:new TEXT    adds a goal (then priority=N criteria=C)',
    'goal=AGENT:N status=S  changes goal #N (or priority=P criteria=C)',
    'limit=KEY=VALUE        actions llm_calls llm_tokens writes window_s',
    'several edits separated by ;  ·  quote values with spaces',
))
FORK_EDIT_KEYS = ("order", "disable", "decider", "goal", "limit")


def parse_world_edits(text: str, agents: list[str]) -> list[WorldEdit]:
    """A fork's edits as typed: `order=a,b` (the rest of the round's order), `disable=agent:tool`,
    `decider=agent:kind`, `goal=agent:EDIT` (edits.parse_goal_edit's), `limit=key=value`,
    separated by `;`. InputError naming the edit that is wrong; the world checks the rest when
    the fork applies them (an order must name exactly the agents still to act)."""
    out: list[WorldEdit] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        key, eq, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or key not in FORK_EDIT_KEYS:
            raise InputError(f"{part!r}: write {FORK_EDIT_HELP}", field="fork edit")
        if key == "order":
            names = tuple(n.strip() for n in value.split(",") if n.strip())
            unknown = [n for n in names if n not in agents]
            if not names or unknown:
                raise InputError(f"{part!r}: name agents of this world ({', '.join(agents)})", field="fork edit")
            out.append(SetOrder(names))
        elif key == "limit":
            out.append(parse_limit_edit(value, field="fork edit"))
        else:
            who, colon, what = value.partition(":")
            shape = {"disable": "disable=AGENT:TOOL", "decider": "decider=AGENT:KIND", "goal": "goal=AGENT:EDIT"}[key]
            if not colon or who.strip() not in agents or not what.strip():
                raise InputError(f"{part!r}: write {shape} (agents: {', '.join(agents)})", field="fork edit")
            if key == "disable":
                out.append(DisableTool(who.strip(), what.strip()))
            elif key == "decider":
                out.append(SetDecider(who.strip(), what.strip()))
            else:
                out.append(parse_goal_edit(who.strip(), what.strip(), field="fork edit"))
    if not out:
        raise InputError(f"no edit given: write {FORK_EDIT_HELP}", field="fork edit")
    return out


def _observed_entries(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The working-memory entries a recorded cycle observed (what runs/view.py shows of a
    replayed cycle: the record holds no more)."""
    out = []
    cycle = int(record["cycle"]) - 1
    for e in reversed(record["observe"]["recent"]):
        out.append({"id": e["id"], "cycle": max(cycle, 0), "kind": e["kind"],
                    "relevance": KIND_RELEVANCE.get(e["kind"], 0.5), "refs": 0, "content": e["content"]})
        if e["kind"] == "observation" and e["content"].startswith("Observe:"):
            cycle -= 1
    out.reverse()
    return out


class _Feed(io.TextIOBase):
    """The door's trace stream, read as it is written: each line the door records (the step's
    records, redacted, as the store holds them) is handed to the watch."""

    def __init__(self, take: Callable[[str], None]) -> None:
        super().__init__()
        self._take = take

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text != "\n":
            self._take(text)
        return len(text)


class WorldWatch:
    """A world open in the workbench, over the door (WorldRun: every step recorded in the data
    dir's session store). Every method takes the lock: the engine thread steps, the UI thread
    reads."""

    def __init__(self, run: WorldRun) -> None:
        self.lock = threading.RLock()
        self.run = run
        self.spec = run.spec
        self.ids = [a.id for a in self.spec.agents]
        self.steps: list[LaneStep] = []
        self._cycle_lines: dict[tuple[str, int], bytes] = {}  # (agent, cycle) -> its record, compressed
        self._last_cycle: dict[str, int] = {}
        self.ledger_log: list[dict[str, Any]] = []
        self.artifact_log: list[dict[str, Any]] = []
        self.mints: list[dict[str, Any]] = []
        self.state_log: list[dict[str, Any]] = []
        self.balances_by_round: list[tuple[int, dict[str, int]]] = []
        self.vetoes_fired: dict[str, int] = {a: 0 for a in self.ids}
        self.last: dict[str, LaneStep] = {}
        self.breaks: list[WorldBreak] = []
        self.hit: str | None = None
        self.broken: str | None = None  # the invariant a turn broke: the world takes no more steps
        self._records: list[dict[str, Any]] = []  # what the step under way wrote
        self._prev_record: dict[str, CycleRecord] = {}
        self._state_letters: dict[str, str] = {}
        self._balances: dict[str, int] = {}
        # per agent, (from door step, vetoes, biases) configured: a replayed step's psyche pane
        # counts the patterns in force then (a record names only the one that fired)
        self._patterns: dict[str, list[tuple[int, int, int]]] = {aid: [(0, *self._counts(aid))] for aid in self.ids}
        # the gate (gate.py): the proposal the engine thread waits on, and the UI's answer to it.
        # The wait lets go of the lock (every level of it: a Condition over the RLock), so the UI
        # thread draws and answers while the engine thread is parked mid-turn
        self.waiting: Proposal | None = None
        self._gate = threading.Condition(self.lock)
        self._answer: Answer | None = None
        self._closed: str | None = None
        self._left = threading.Event()  # set once the engine thread has the lock again after a wait
        self._left.set()
        self.ask: Answerer = self._wait_for_answer  # a front end that cannot wait (tests on one thread) replaces it
        self.answers: dict[str, dict[str, Any] | None] = {}  # per agent, its last turn's recorded answer
        self._reset()

    @classmethod
    def open(cls, file: str | Path | WorldSpec, locations: Locations, seed: int | None = None,
             store: str | Path | None = None) -> "WorldWatch":
        """A new world run of `file` (a bundled name, a path, or a loaded spec), recorded in
        `locations`' session store (or `store`)."""
        holder: list[WorldWatch] = []
        feed: IO[str] = _Feed(lambda line: holder[0]._line(line) if holder else None)  # type: ignore[assignment]
        run = WorldRun.start(locations, file if isinstance(file, WorldSpec) else str(file), seed, trace=feed,
                             store=store)
        watch = cls(run)
        holder.append(watch)
        return watch

    def close(self) -> None:
        with self.lock:
            self.run.close()

    @property
    def world(self) -> World:
        return self.run.world  # a fork or a rewind replaces it

    # ---- what the world writes -------------------------------------------------------------
    def _line(self, line: str) -> None:
        rec = json.loads(line)
        self._records.append(rec)
        if rec["type"] == "cycle":
            self._cycle_lines[(rec["agent"], rec["cycle"])] = zlib.compress(line.encode(), 1)

    # ---- stepping ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def round(self) -> int:
        return self.world.round

    @property
    def clock(self) -> float:
        return self.world.clock / 1000

    @property
    def over(self) -> bool:
        return self.world.over and self.world.order is None

    @property
    def rounds_done(self) -> bool:
        """The world file's rounds are run (stepping goes on past them, as `world run --rounds`)."""
        return self.world.rounds_done >= self.spec.rounds

    def next_agent(self) -> str | None:
        """Whose turn comes next, when the round has begun (None: a new round begins first)."""
        with self.lock:
            w = self.world
            if w.order is None:
                return None
            rest = [a for a in w.order[w.pos:] if w.loops[a].state != PAUSED]
            return rest[0] if rest else None

    def rest_of_round(self, at_step: int | None = None) -> list[str]:
        """The agents still to act in the round of lane step `at_step` (None: the newest) after
        it: the steps recorded after it in that round, then, if that round is the one under way,
        those still to come. Empty after a round's last step (a fork's `order=` needs some)."""
        with self.lock:
            i = len(self.steps) - 1 if at_step is None else at_step
            if not 0 <= i < len(self.steps):
                return []
            r = self.steps[i].round
            rest = [s.agent for s in self.steps[i + 1:] if s.round == r]
            w = self.world
            if w.round == r and w.order is not None and i + len(rest) == len(self.steps) - 1:
                rest += [a for a in w.order[w.pos:] if w.loops[a].state != PAUSED]
            return rest

    def step_agent(self, answer: "Answerer | None" = None) -> LaneStep | None:
        """The next agent's turn, recorded (a round begun, or ended with its mint, on the way);
        None when every agent is STOPPED or a turn broke the invariant. `answer`: the world
        gate's answerer, for a turn that stops at the gate (gate.py)."""
        with self.lock:
            for _ in range(8):  # steps in which no agent acted (all stopped, none eligible): on to the next
                if self.broken is not None:
                    return None
                self._records = []
                try:
                    done = self.run.step(answer=answer if answer is not None else self.ask)
                except InvariantViolation as exc:
                    self.broken = f"round {self.world.round}: {exc}; nothing of that step was committed"
                    self.hit = f"invariant: {self.broken}"
                    self._records = []
                    return None
                if done is None:
                    return None
                records, self._records = self._records, []
                step = self._took_turn(done.agent, done.summary, records, done.step)
                if step is not None:
                    return step
            return None

    def step_round(self) -> list[LaneStep]:
        """The rest of the round under way, or one whole round."""
        with self.lock:
            out: list[LaneStep] = []
            first = True
            while first or self.world.order is not None:
                first = False
                step = self.step_agent()
                if step is None:
                    break
                out.append(step)
            return out

    def _took_turn(self, aid: str | None, summary: dict[str, Any] | None, records: list[dict[str, Any]],
                   door_step: int, check: bool = True) -> LaneStep | None:
        """Take in one recorded step's records (live, or read back from the store); its LaneStep,
        or None when no agent took a turn in it."""
        self._absorb(records)
        turn = next((r for r in records if r["type"] in ("cycle", "rate_limited") and r.get("agent") == aid), None)
        if aid is None or turn is None:  # no agent eligible, or one with no active goal (STOPPED)
            if check:
                self._check_breaks(None, records)  # a mint may still have come with it
            return None
        if turn["type"] == "rate_limited":
            kind, tool, result, number = "limited", None, f"rate_limited({turn['resource']})", None
        else:
            act = turn["act"]
            kind = "veto" if act["vetoed"] else ("act" if act["success"] else "fail")
            # a veto's progress is "failed": the roster says which failure it was, as its lane's "!" does
            tool, number = turn["decide"]["tool"], int(turn["cycle"])
            result = "vetoed" if act["vetoed"] else str(act["progress"])
            self.answers[aid] = turn["decide"].get("user")
            if act["vetoed"]:
                self.vetoes_fired[aid] += 1
            self._last_cycle[aid] = number
        states = "".join(self._state_letters[a] for a in self.ids)
        step = LaneStep(len(self.steps), int(turn["round"]), float(turn["clock"]), aid, tool, kind, result,
                        states, number, door_step)
        self.steps.append(step)
        self.last[aid] = step
        if check:
            self._check_breaks(aid, records)
        elif turn["type"] == "cycle":
            self._prev_record[aid] = turn  # type: ignore[assignment]
        return step

    def _absorb(self, records: list[dict[str, Any]]) -> None:
        for r in records:
            t = r["type"]
            if t == "ledger":
                self.ledger_log.append(r)
                for acct, delta in ((r["from"], -r["amount"]), (r["to"], r["amount"])):
                    if acct in self._balances:
                        self._balances[acct] += delta
            elif t == "round" and r["round"] > 1:
                self.balances_by_round.append((r["round"] - 1, dict(self._balances)))
            elif t == "artifact":
                self.artifact_log.append(r)
            elif t == "mint":
                self.mints.append({**r, "shares": []})
            elif t == "state":
                self.state_log.append(r)
                self._state_letters[r["agent"]] = STATE_LETTER[r["to"]]
        # a mint's ledger entries follow it: the price's shares are its UBI split
        if self.mints and any(r["type"] == "mint" for r in records):
            m = self.mints[-1]
            m["shares"] = [[e["to"], e["amount"]] for e in records
                           if e["type"] == "ledger" and e["why"].startswith("mint price share")]

    def _reset(self) -> None:
        """Everything read from the records, emptied (a fork or a rewind reads them again)."""
        self.steps.clear()  # the lanes hold this list: cleared in place
        self._cycle_lines.clear()
        self._last_cycle.clear()
        self.ledger_log, self.artifact_log, self.mints, self.state_log = [], [], [], []
        self.vetoes_fired = {a: 0 for a in self.ids}
        self.last = {}
        self.answers = {}
        self._prev_record = {}
        self._state_letters = {a: STATE_LETTER["STARTING"] for a in self.ids}
        self._balances = {**{a: self.spec.starting_scrip for a in self.ids}, WORLD: 0, ESCROW: 0}
        self.balances_by_round = [(0, dict(self._balances))]

    def _reload(self) -> None:
        """The branch's recorded steps read back from the store (after a fork)."""
        self._reset()
        for row in self.run.steps():
            records = [json.loads(line) for line in row.lines]
            for rec, line in zip(records, row.lines):
                if rec["type"] == "cycle":
                    self._cycle_lines[(rec["agent"], rec["cycle"])] = zlib.compress(line.encode(), 1)
            self._took_turn(row.agent, None, records, row.step, check=False)

    # ---- forks -------------------------------------------------------------------------------
    def compare_with_parent(self) -> dict[str, Any]:
        """This branch against the one it forked from (compare_worlds: the first step they
        differ at, each side's choice there, each side's step count)."""
        with self.lock:
            info = {b["id"]: b for b in self.run.branches()}
            me = info[self.run.branch]
            if me["parent"] is None:
                raise InputError("this is the world's first branch: fork first (F), then compare", field="branch")
            world = self.run.world_id
            return compare_worlds(self.run.locations, f"w{world}:{info[me['parent']]['name']}", f"w{world}:{me['name']}")


    def fork(self, at_step: int | None, edits: list[Any], name: str | None = None) -> str:
        """A new branch after lane step `at_step` (None: the newest) with the edits (SetPsyche,
        DisableTool, SetOrder); it is current and live from then on. Returns its name."""
        with self.lock:
            self._not_at_gate("fork")
            at = self.run.last_step if at_step is None else self.steps[at_step].step
            self.run.fork(at, edits, name)
            self.spec = self.run.spec  # (a limit edit: the branch's limits are shown from now on)
            for aid, history in self._patterns.items():
                history[:] = [h for h in history if h[0] <= at]  # the abandoned steps' edits are not this branch's
                if any(isinstance(e, SetPsyche) and e.agent == aid for e in edits):
                    history.append((at + 1, *self._counts(aid)))
            self._reload()
            self.broken = None
            return self.run.branch_name

    # ---- breakpoints -------------------------------------------------------------------------
    def set_breaks(self, texts: list[str]) -> list[WorldBreak]:
        """Replace the world breakpoints (all parsed first: one bad text changes nothing)."""
        parsed = [parse_world_break(t, self.ids, field_name=f"breakpoint {t!r}") for t in texts]
        with self.lock:
            self.breaks = parsed
        return parsed

    def _check_breaks(self, aid: str | None, records: list[dict[str, Any]]) -> None:
        cycle = next((r for r in records if r["type"] == "cycle"), None)
        for b in self.breaks:
            why = self._matches(b, aid, records, cycle)
            if why is not None:
                self.hit = f"{b.text}: {why}"
                break
        if cycle is not None and aid is not None:
            self._prev_record[aid] = cycle  # type: ignore[assignment]

    def _matches(self, b: WorldBreak, aid: str | None, records: list[dict[str, Any]], cycle: dict[str, Any] | None) -> str | None:
        if b.kind == "transfer":
            for r in records:
                if r["type"] == "ledger" and r["amount"] > b.amount:
                    return f"{r['from']} → {r['to']} {r['amount']} scrip ({r['why']})"
        elif b.kind == "write":
            for r in records:
                if r["type"] == "artifact" and (b.name is None or r["id"] == b.name):
                    return f"{r['agent']} wrote {r['id']}@{r['version']}"
        elif b.kind == "mint":
            for r in records:
                if r["type"] == "mint":
                    return f"round {r['round']}: " + (f"{r['agent']} won with {r['artifact']}" if r["agent"] else "no winner")
        elif b.kind in ("backoff", "paused"):
            to = SLEEPING if b.kind == "backoff" else PAUSED
            for r in records:
                if (r["type"] == "state" and r["to"] == to and (b.agent is None or r["agent"] == b.agent)
                        and (b.kind == "paused" or str(r["why"]).startswith("failed"))):
                    return f"{r['agent']}: {r['why']}"
        elif b.kind == "agent":
            if aid == b.agent and cycle is not None and (b.name is None or cycle["decide"]["tool"] == b.name):
                return f"{aid} chose {cycle['decide']['tool']}"
        elif b.kind == "cycle" and cycle is not None and aid is not None and b.cycle_break is not None:
            hit = first_hit([b.cycle_break], cycle, self._prev_record.get(aid))  # type: ignore[arg-type]
            if hit is not None:
                return f"{aid}: {hit}"
        return None

    def take_hit(self) -> str | None:
        with self.lock:
            hit, self.hit = self.hit, None
            return hit

    # ---- what the panes draw -----------------------------------------------------------------
    def record(self, aid: str, step: int | None = None) -> CycleRecord | None:
        """The agent's cycle record at step `step` (its newest at or before it), or its newest."""
        with self.lock:
            number = self._last_cycle.get(aid) if step is None else self._cycle_at(aid, step)
            if number is None:
                return None
            blob = self._cycle_lines.get((aid, number))
        return json.loads(zlib.decompress(blob)) if blob is not None else None

    def _cycle_at(self, aid: str, step: int) -> int | None:
        for s in reversed(self.steps[: step + 1]):
            if s.agent == aid and s.cycle is not None:
                return s.cycle
        return None

    def view(self, aid: str, step: int | None = None, wm_rows: int = 100) -> View:
        """What the panes draw for one agent: live, or as it was at step `step` (read-only,
        from its record alone, as a replayed single run shows)."""
        with self.lock:
            if step is None:
                return self._live_view(aid, wm_rows)
            rec = self.record(aid, step)
            door = self.steps[step].step if 0 <= step < len(self.steps) else self.run.last_step
            counts = next((v, b) for s, v, b in reversed(self._patterns[aid]) if s <= door)
        if rec is None:
            with self.lock:
                view = self._live_view(aid, wm_rows)
                view["replay"] = True  # nothing of it recorded yet: the agent as it is
                return view
        view = self._recorded_view(aid, rec)
        view["psyche"]["vetoes_configured"], view["psyche"]["biases_configured"] = counts
        return view

    def _psyche(self, aid: str, psyche: Mapping[str, Any], vetoes: list[str] | None, biases: list[str] | None,
                pending: bool) -> dict[str, Any]:
        return dict(psyche) | {"vetoes": vetoes, "biases": biases,
                               "vetoes_configured": len(vetoes) if vetoes is not None else 0,
                               "biases_configured": len(biases) if biases is not None else 0,
                               "vetoes_fired": self.vetoes_fired[aid], "pending": pending}

    def _counts(self, aid: str) -> tuple[int, int]:
        shadow = self.world.agents[aid].psyche.shadow
        return len(shadow.veto_patterns), len(shadow.bias_patterns)

    def _live_view(self, aid: str, wm_rows: int) -> View:
        a = self.world.agents[aid]
        focus = a.focus_goal()
        wm, ps = a.wm, a.pending_psyche or a.psyche
        return {
            "cycle": a.cycle,
            "seed": a.seed,
            "focus": focus.id if focus else None,
            "goals": [g.summary() | {"children": list(g.children), "fail_reason": g.fail_reason,
                                     "attempt": g.attempt, "criteria": g.criteria, "missing": g.missing()}
                      for g in sorted(a.goals.values(), key=lambda g: g.id)],
            "plans": {gid: p.to_dict() for gid, p in a.plans.items()},
            "wm": {"capacity": wm.capacity, "size": len(wm), "pressure": wm.pressure,
                   "entries": [{"id": e.id, "cycle": e.cycle, "kind": e.kind, "relevance": e.relevance,
                                "refs": e.reference_count, "content": e.content} for e in wm.recent(wm_rows)]},
            "episodes": len(a.episodic),
            "model_memory": a.decider.model_memory(600),
            "psyche": self._psyche(aid, ps.snapshot(), [p.name for p in ps.shadow.veto_patterns],
                                   [p.name for p in ps.shadow.bias_patterns], a.pending_psyche is not None),
            "replay": False,
        }

    def _recorded_view(self, aid: str, record: Mapping[str, Any]) -> View:
        focus = record["goal"]["id"]
        plan = record.get("plan")
        children: dict[int, list[int]] = {}
        for g in record["goals"]:
            if g["parent"] is not None:
                children.setdefault(g["parent"], []).append(g["id"])
        goals = [dict(g) | {"children": sorted(children.get(g["id"], [])), "fail_reason": None,
                            "attempt": plan["attempt"] if plan is not None and plan["goal"] == g["id"] else 0,
                            "criteria": "",
                            "missing": list(record["act"].get("missing", [])) if g["id"] == focus else []}
                 for g in sorted(record["goals"], key=lambda g: g["id"])]
        size, capacity = record["wm"]["size"], record["wm"]["capacity"]
        return {
            "cycle": record["cycle"], "seed": self.world.agents[aid].seed, "focus": focus, "goals": goals,
            "plans": {plan["goal"]: plan} if plan is not None else {},
            "wm": {"capacity": capacity, "size": size, "pressure": size / capacity if capacity else 0.0,
                   "entries": _observed_entries(record)},
            "episodes": 0, "model_memory": None,
            "psyche": self._psyche(aid, record["psyche"], None, None, False),
            "replay": True,
        }

    def headroom(self, aid: str) -> tuple[str, int] | None:
        """The least left now of the agent's limited resources (resource, left); None with no
        limits. It changes as the world clock moves, whoever took the turn."""
        with self.lock:
            now = self.world.clock
            headroom = None
            for resource, limit in self.spec.limits.caps:
                left = limit - self.world.limits.used(aid, resource, now)
                if headroom is None or left < headroom[1]:
                    headroom = (resource, left)
            return headroom

    def headroom_changes_at(self, aid: str) -> float | None:
        """The world clock (ms) at which the agent's headroom next changes if it uses nothing
        more (its oldest use leaves the window); None when it holds none."""
        with self.lock:
            return self.world.limits.next_drop(aid, self.world.clock)

    def roster(self, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """One row per agent (of `ids`, default all, in the world's order): state, last action
        and result, errors and backoff, scrip, rate headroom (the least left of its limited
        resources, None with no limits), goals done, whether it is gated and the gate's answer
        on its last turn."""
        with self.lock:
            out = []
            gated = set(self.run.gated)
            wanted = None if ids is None else set(ids)
            for aid in self.ids:
                if wanted is not None and aid not in wanted:
                    continue
                loop, agent = self.world.loops[aid], self.world.agents[aid]
                last = self.last.get(aid)
                top = [g for g in agent.goals.values() if g.parent is None]
                headroom = self.headroom(aid)
                out.append({
                    "id": aid, "state": loop.state,
                    "action": (last.tool or "(refused)") if last else "",
                    "result": last.result if last else "",
                    "errors": loop.errors,
                    "backoff": loop.delay_ms / 1000 if loop.errors else None,
                    "wake_at": loop.wake_at / 1000 if loop.wake_at is not None else None,
                    "scrip": self.world.ledger.balance(aid),
                    "headroom": headroom,
                    "goals_done": sum(1 for g in top if g.status == "completed"), "goals": len(top),
                    "crash_reason": loop.crash_reason,
                    "gated": aid in gated,
                    "answer": self.answers.get(aid),  # the gate's answer on its last turn (None: no gate fired)
                })
            return out

    def artifacts(self) -> list[dict[str, Any]]:
        """Every artifact now: owner, version, price, tool, its readers (and the version each
        last read), and each version's writer, round and clock (the world file's at round 0)."""
        with self.lock:
            written: dict[tuple[str, int], dict[str, Any]] = {(e["id"], e["version"]): e for e in self.artifact_log}
            out = []
            for a in self.world.artifacts:
                readers = {who: read[a.id] for who, read in self.world.read_versions.items() if a.id in read}
                out.append({
                    "id": a.id, "owner": a.owner, "version": a.version, "price": a.price, "tool": a.tool,
                    "kind": a.kind, "size": a.size, "readers": dict(sorted(readers.items())),
                    "versions": [{"version": v.number,
                                  "by": written[(a.id, v.number)]["agent"] if (a.id, v.number) in written else "(world file)",
                                  "round": written[(a.id, v.number)]["round"] if (a.id, v.number) in written else 0,
                                  "clock": written[(a.id, v.number)]["clock"] if (a.id, v.number) in written else 0.0,
                                  "size": len(v.text) if v.text is not None else len(v.triples)}
                                 for v in a.versions],
                })
            return out

    def artifact_content(self, aid: str, version: int) -> list[str]:
        """A version's content: its triples as `s p o`, or its text line by line."""
        with self.lock:
            v = self._version(aid, version)
        return v.text.splitlines() if v.text is not None else [" ".join(t) for t in v.triples]

    def _version(self, aid: str, n: int) -> Version:
        a = self.world.artifacts.get(aid)
        if a is None:
            raise InputError(f"no artifact {aid!r}", field="artifact")
        if not 1 <= n <= a.version:
            raise InputError(f"{aid} has versions 1..{a.version}, not {n}", field="version")
        return a.versions[n - 1]

    def artifact_diff(self, aid: str, old: int, new: int) -> list[str]:
        """What changed from version `old` to `new` of an artifact: '+ ' and '- ' lines (triples
        as `s p o`, text line by line), removed first."""
        la, lb = self.artifact_content(aid, old), self.artifact_content(aid, new)
        sa, sb = set(la), set(lb)
        return [f"- {x}" for x in la if x not in sb] + [f"+ {x}" for x in lb if x not in sa]

    def balances(self) -> dict[str, int]:
        with self.lock:
            return self.world.ledger.snapshot()

    def minted(self) -> int:
        with self.lock:
            return self.world.ledger.minted

    def balance_history(self) -> tuple[list[int], dict[str, list[int]]]:
        """(rounds, account -> its balance at the end of each of those rounds; round 0 the opening)."""
        with self.lock:
            snaps = [*self.balances_by_round, (self.world.round, dict(self._balances))]
            if len(snaps) > 1 and snaps[-2][0] == snaps[-1][0]:
                snaps.pop(-2)
            rounds = [r for r, _ in snaps]
            return rounds, {acct: [snap.get(acct, 0) for _, snap in snaps] for acct in self._balances}

    def pending_bids(self) -> list[tuple[str, int, str, int]]:
        with self.lock:
            return [(b.agent, b.amount, b.artifact, b.version) for b in self.world.bids]

    def rate_windows(self) -> list[dict[str, Any]]:
        """Per agent and configured resource: used in the window now, the limit, and the window."""
        with self.lock:
            now = self.world.clock
            caps = list(self.spec.limits.caps)
            return [{"agent": aid, "resource": r, "used": self.world.limits.used(aid, r, now), "limit": limit}
                    for aid in self.ids for r, limit in caps]

    @property
    def limits_text(self) -> str:
        lim = self.spec.limits
        if not lim.caps:
            return "no rate limits"
        return (f"window {lim.window_ms / 1000:g} s, policy {lim.policy}: "
                + ", ".join(f"{r} {n}" for r, n in lim.caps))

    # ---- steering ----------------------------------------------------------------------------
    def psyche_text(self, aid: str) -> str:
        with self.lock:
            a = self.world.agents[aid]
            return (a.pending_psyche or a.psyche).to_toml()

    def replace_psyche(self, aid: str, psyche: Psyche, source: str = "workbench") -> str:
        """The agent's new psyche, taking effect at its next turn: a fork here with the edit (the
        door records a psyche edit as state of a new branch, so rewind and resume replay it)."""
        with self.lock:
            if aid not in self.world.agents:
                raise InputError(f"no agent {aid!r} in this world", field="agent")
            self._not_at_gate("edit a psyche")
            n = sum(1 for b in self.run.branches() if str(b.get("name", "")).startswith(f"{aid}-psyche"))
            return self.fork(None, [SetPsyche(aid, psyche.to_toml(), source=source)], name=f"{aid}-psyche-{n + 1}")

    # ---- the gate ----------------------------------------------------------------------------
    @property
    def gated(self) -> list[str]:
        """The agents whose turns stop for an answer, in the world's order."""
        return self.run.gated

    def gate(self, aid: str, on: bool) -> list[str]:
        """Gate `aid` (its next turns stop after decide for an answer) or not; the gated ids."""
        with self.lock:
            self._not_at_gate("change who is gated")
            ids = set(self.run.gated)
            if on:
                ids.add(aid)
            else:
                ids.discard(aid)
            return self.run.gate([a for a in self.ids if a in ids])

    def _not_at_gate(self, what: str) -> None:
        if self.waiting is not None:
            raise InputError(f"{self.waiting.agent}'s proposal waits for an answer: answer it before you {what}",
                             field="gate")

    def _wait_for_answer(self, p: Proposal) -> Answer:
        """The engine thread's side of the gate: `p` is shown (`waiting`) until the UI answers
        (`answer_gate`) or closes it (`close_gate`: GateClosed, and the door drops the turn)."""
        with self._gate:
            self.waiting, self._answer, self._closed = p, None, None
            self._left.clear()
            try:
                while self._answer is None and self._closed is None:
                    self._gate.wait(0.5)
                if self._answer is None:
                    raise GateClosed(self._closed or "closed")
                return self._answer
            finally:
                self.waiting = None
                self._left.set()

    def answer_gate(self, answer: Answer) -> None:
        """The UI's answer to the waiting proposal; InputError (the proposal still waits) for
        one the gate would refuse, or when nothing waits."""
        with self._gate:
            p = self.waiting
            if p is None or self._answer is not None or self._closed is not None:
                raise InputError("no proposal is waiting for an answer", field="answer")
            check_answer(p, answer)
            self._answer = answer
            self._gate.notify_all()

    def close_gate(self, why: str, wait: float = 0.0) -> bool:
        """Close the waiting proposal unanswered (the person quit or said not now): the turn is
        dropped, nothing of it recorded. False when nothing waited. `wait`: seconds to wait for
        the engine thread to take the lock back (quitting closes the store next, which must not
        race it for the lock)."""
        with self._gate:
            if self.waiting is None or self._answer is not None:
                return False
            self._closed = why
            self._gate.notify_all()
        if wait:
            self._left.wait(wait)
        return True


__all__ = ["parse_world_edits", "FORK_EDIT_HELP", "FORK_EDIT_LINES", "WorldWatch", "LaneStep", "WorldBreak", "parse_world_break", "LANE_GLYPHS", "LANE_STATE", "STATE_LETTER", "WORLD",
           "ESCROW", "RESOURCES", "WORLD_BREAK_HELP"]
