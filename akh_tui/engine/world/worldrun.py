"""The door to a world run (SPEC §13), as run.py is to a single run: a world opens, steps, runs,
rewinds, forks and resumes here, recorded in the data dir's session store (store/worldstore.py).

API (what front ends use; all through `akh_tui.engine`):
- `WorldRun.start(locations, file, seed=None, trace=None, store=None, config=None)`: a new
  world run of a world file (a bundled name or a path), recorded in `locations`' store.
- `WorldRun.resume(locations, branch=None, trace=None, config=None)`: the current world
  where it was left (also after a kill: every committed step is kept, and the world goes on at
  the next agent in the recorded order of the round under way).
- `WorldRun.continue_or_start(locations, file, seed=None, fresh=False, ...)`: `world run`.
- `WorldRun.open_readonly(locations, branch=None)`: read a recorded world (nothing written).
- `run.step() -> WorldStep | None`: one agent's turn (None: the world is over);
  `run.step_round()`; `run.run(rounds, on_step)`: N rounds or until every agent is STOPPED.
- `run.gate(agent_ids)`: whose turns stop after decide for an answer (None: nobody; at the
  start, the world file's `approve = true` agents); `step`/`step_round`/`run` take `answer`,
  the `gate.Answerer` asked (gate.py). A rewind, fork or resume replays recorded answers.
- `run.world`: the live `World` (ledger, artifacts, loops, agents; `summary()`).
- `run.steps()`: the recorded steps (`StepRow`: step, round, agent, lines) of the branch;
  `run.trace_lines()`: the §13 trace of the branch, as `world run --trace` writes it.
- `run.world_at(step)`: a World in the state right after that step of the branch (a
  rewind: nothing changes in the store); `run.step_number("ROUND:AGENT")`.
- `run.fork(at, edits, name=None)`: a new branch after step `at` with `WorldEdit`s
  applied (an agent's psyche, a disabled tool, the order of the rest of the round); it is
  current and live from then on.
- `run.close()`: saves the live state (a resume starts there) and closes the store.

A step and its state are one transaction; the ledger invariant is checked after every step
(world.py) and a step that breaks it commits nothing: the door goes back to the state the store
holds and raises InvariantViolation. A replayed step (resume, rewind) must give the records it
gave when recorded: a world file changed since is an error, never a silently different world.
"""

from __future__ import annotations

import gc
import json
import threading
import weakref
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import IO, Any, Callable, Collection, Iterator, Mapping, cast

from ..errors import InputError
from ..paths import Locations
from ..store import writelock
from ..store.session import SessionStore
from ..store.trace import TraceWriter
from ..store.worldstore import AGENT_PARTS, GRAPH_PART, RECORD_AT, WORLD_PART, StepRow, WorldStore
from .file import WorldSpec, load_world
from .gate import Answerer, Recorded
from .ledger import InvariantViolation
from .state import Appended, agent_appends, agent_state, appended, load_world_state, world_state
from .world import World
from .workflow import WorkflowDecider
from ..llm.decider import LLMDecider, ScriptedProvider
from ..runs.run import _open_store
from ..runs.userconfig import UserConfig

__all__ = ["WorldRun", "WorldStep", "parse_step_name", "parse_world_ref", "is_world_ref", "list_worlds", "export_world",
           "compare_worlds", "show_world", "delete_world", "world_items"]

SAVE_EVERY = 32  # steps between saved states: a rewind replays at most this many
KG_CHAIN = 16  # an agent's saved states holding only what it appended (graph, provenance, episodes, evidence)
# since the one before, at most, before one holds all of it again: a rewind reads at most this many more rows
# per agent it loads


@dataclass(frozen=True)
class WorldStep:
    """One recorded step: its number on the branch, its name's parts, and the summary of the
    agent's turn (round, clock, agent, action, result, balance, state; None when the agent had
    no active goal, or no agent was eligible)."""
    step: int
    round: int
    agent: str | None
    summary: dict[str, Any] | None

    @property
    def name(self) -> str:
        return f"{self.round}:{self.agent if self.agent is not None else '-'}"


def parse_step_name(text: str, field: str = "--at") -> tuple[int, str | None]:
    """`ROUND:AGENT` (SPEC §13's name of a step; `ROUND:-` for a round no agent could act in)."""
    rnd, sep, agent = str(text).strip().partition(":")
    if not sep or not rnd.isdigit() or int(rnd) < 1 or not agent:
        raise InputError(f"a step is ROUND:AGENT (like 3:alice), got {text!r}", field=field)
    return int(rnd), None if agent == "-" else agent


def _asks_a_live_model(w: World) -> bool:
    """Whether an agent's decider (or a workflow's model step) is a model other than the
    scripted one, whose answers a replay could not count on."""
    for a in w.spec.agents:
        if a.decider in ("utility", "scripted"):
            continue  # (a rewound world builds an agent when first asked for: only those that may ask one)
        inner = getattr(w.agents.built(a.id).decider, "inner", None)  # (its saved state need not be loaded)
        models = list(inner.models.values()) if isinstance(inner, WorkflowDecider) else [inner]
        if any(isinstance(m, LLMDecider) and not isinstance(m.provider, ScriptedProvider) for m in models):
            return True
    return False


def _llm_config(spec: WorldSpec, config: UserConfig | None) -> Mapping[str, Any] | None:
    """The user's [llm] table when an agent's decider (or a workflow step) asks a model."""
    if not any(a.decider == "llm" or (a.workflow and any(s.target == "llm" for s in a.workflow.steps if s.kind == "llm"))
               for a in spec.agents):
        return None
    cfg = config or UserConfig.load()
    if cfg.error:
        raise InputError(cfg.error.removeprefix("config ignored: "), field="llm")
    return cfg.llm


class WorldRun:
    def __init__(self, locations: Locations, store: SessionStore, spec: WorldSpec, branch: int,
                 trace: TraceWriter | None = None, config: UserConfig | None = None, world: World | None = None) -> None:
        """Over `world` (a new world's, built already) or, when None, the branch's state at its
        last recorded step (resume, read)."""
        self.locations = locations
        self.store = store
        self.ws = WorldStore(store)
        self.file_spec = spec  # the world file's; `spec` is the branch's, its forks' decider and limit edits made
        self.branch = branch
        self.spec = self._spec_at(None)
        self.trace = trace
        self.user_config = config
        self.lock = threading.RLock()
        self.world_id: int = self.ws.branch_info(branch)["world"]
        self.meta: dict[str, Any] = self.ws.world_meta(self.world_id)
        self.last_step = 0
        self._llm = _llm_config(self.spec, config)
        self._lines: list[str] = []
        self._dirty: set[str] = set()  # agents that took a turn since the branch's last saved state
        self._since_save = 0
        # per agent, what its newest saved state on this branch holds of what it only appends
        # to (graph, provenance, episodes, evidence), and how many states since one that held all of it:
        # the next holds only what was added since
        self._kg_saved: dict[str, tuple[Appended, int]] = {}
        # per agent, the step of its newest saved part on this branch's lineage: each world part
        # names them all (worldstore.AGENT_PARTS), so a rewind finds them without a search
        self._part_at: dict[str, int] = {}
        # the Worlds this run handed out (the live one, rewinds) whose agents may still be read
        # from the store on first touch (agents.py): read before the store closes
        self._lazy: "weakref.WeakSet[World]" = weakref.WeakSet()
        # per agent, the step whose lines hold its last cycle record, and that record: a saved
        # part names the step instead of holding a second copy of it (worldstore.RECORD_AT)
        self._record_at: dict[str, tuple[int, Any]] = {}
        self._lock_file: Path | None = None
        self.save_every = SAVE_EVERY
        self._gated = frozenset(a.id for a in self.spec.agents if a.approve)  # gate(): whose turns stop for an answer
        if world is not None:
            self.world = world
            world.lines = self._lines.append
            world.gated = set(self._gated)
        else:
            self._goto(self.ws.last_step(branch))
        if _asks_a_live_model(self.world):
            # a live model is not asked again to replay a turn (it may answer otherwise, and a
            # call costs): its world saves a state after every step, so resume and rewind
            # replay nothing
            self.save_every = 1

    def _new_world(self, restoring: bool = False, step: int | None = None) -> World:
        return World(self._spec_at(step), llm=self._llm, restoring=restoring, data_dir=self.locations.data_dir)

    def _spec_at(self, step: int | None) -> WorldSpec:
        """The world file's spec with the decider and limit edits of the forks on this branch's
        lineage made at or before `step` (None: all of them): those edits are state of the
        branch, and a World rebuilt there (rewind, resume) must decide and count with them
        (edits.spec_with)."""
        from .edits import spec_with

        applied: list[dict[str, Any]] = []
        for seg in self.ws.lineage(self.branch):
            # a fork's edits are in its saved states from its fork step on: none on this lineage
            # when a later branch of it forked at or before that step (its states end before it)
            if seg.state_lo > min(seg.state_hi, step if step is not None else seg.state_hi):
                continue
            info = self.ws.branch_info(seg.branch)
            if info["fork_step"] is not None:
                applied += info["edits"]
        return spec_with(self.file_spec, applied)

    # ---- opening -------------------------------------------------------------------------------
    @classmethod
    def start(cls, locations: Locations, file: str | WorldSpec, seed: int | None = None,
              trace: str | Path | IO[str] | None = None, store: "str | Path | SessionStore | None" = None,
              config: UserConfig | None = None) -> "WorldRun":
        """A new world run (earlier runs stay in the store); it is the data dir's current world."""
        spec = load_world(file) if isinstance(file, str) else file
        if seed is not None:
            spec = spec.with_seed(seed)
        header: list[str] = []
        # bad deciders fail before the store
        probe = World(spec, lines=header.append, llm=_llm_config(spec, config), data_dir=locations.data_dir)
        writer = TraceWriter(trace) if trace is not None else None
        st = _open_store(locations, store)
        try:
            ws = WorldStore(st)
            branch = ws.start({"file": str(spec.path), "name": spec.name, "seed": spec.seed, "header": header[0]})
            r = cls(locations, st, spec, branch, writer, config, world=probe)
            r._hold()
            r._save_states(0, full=True)
            r._write_trace_lines(header)
            return r
        except BaseException:
            st.close()
            raise

    @classmethod
    def resume(cls, locations: Locations, branch: str | None = None, trace: str | Path | IO[str] | None = None,
               store: "str | Path | SessionStore | None" = None, config: UserConfig | None = None) -> "WorldRun":
        """The current world (its current branch, or `branch`) where it was left."""
        if store is None and not locations.has_store():
            raise InputError(f"no world to resume in {locations.data_dir} (start one with `akh-tui world run FILE`)",
                             field="--data-dir")
        st = _open_store(locations, store)
        try:
            r = cls._open(locations, st, branch, config)
            r._hold()
            if trace is not None:
                r.trace = TraceWriter(trace)
                r._write_trace_lines(list(r.trace_lines()))
            return r
        except BaseException:
            st.close()
            raise

    @classmethod
    def open_readonly(cls, locations: Locations, branch: str | None = None,
                      config: UserConfig | None = None, world: int | None = None) -> "WorldRun":
        """The current world (or world `world`: its current branch if the data dir's current
        is one of its, else main) to read, not to drive (the store opened read-only, no lock)."""
        if not locations.has_store():
            raise InputError(f"no world in {locations.data_dir} (start one with `akh-tui world run FILE`)",
                             field="--data-dir")
        st = SessionStore(locations.session_db, readonly=True)
        try:
            return cls._open(locations, st, branch, config, world)
        except BaseException:
            st.close()
            raise

    @classmethod
    def _open(cls, locations: Locations, st: SessionStore, branch: str | None, config: UserConfig | None,
              world: int | None = None) -> "WorldRun":
        ws = WorldStore(st)
        b = ws.current()
        if world is not None:
            meta = ws.world_meta(world)  # InputError: no world N
            if b is None or ws.branch_info(b)["world"] != world:
                b = ws.find_branch(world, "main")
        elif b is None:
            raise InputError(f"no world in {locations.data_dir} (start one with `akh-tui world run FILE`)",
                             field="--data-dir")
        meta = ws.world_meta(ws.branch_info(b)["world"])
        if branch is not None:
            b = ws.find_branch(meta["id"], branch)
        spec = load_world(meta["file"])
        if spec.seed != meta["seed"]:
            spec = spec.with_seed(meta["seed"])
        return cls(locations, st, spec, b, None, config)

    @classmethod
    def continue_or_start(cls, locations: Locations, file: str, seed: int | None = None, fresh: bool = False,
                          trace: str | Path | IO[str] | None = None, config: UserConfig | None = None) -> "WorldRun":
        """`world run`: the current world when it is this file and seed and not over; else
        (or `fresh`) a new one. `note` says which."""
        spec = load_world(file)
        if seed is not None:
            spec = spec.with_seed(seed)
        if not fresh and locations.has_store():
            st = _open_store(locations)
            try:
                ws = WorldStore(st)
                b = ws.current()
                meta = ws.world_meta(ws.branch_info(b)["world"]) if b is not None else None
            finally:
                st.close()
            if meta is not None and meta["file"] == str(spec.path) and meta["seed"] == spec.seed:
                r = cls.resume(locations, trace=trace, config=config)
                if not (r.world.over and r.world.order is None):
                    r.note = f"continuing world {r.world_id} at round {r.world.round} (use --fresh to start over)"
                    return r
                r.close()
        return cls.start(locations, spec, trace=trace, config=config)

    note = ""

    def _hold(self) -> None:
        """This process is the world's one writer from now on (StoreBusy names the other)."""
        if self.store.path is None or self.store.readonly:
            return
        self._lock_file = writelock.acquire(self.store.path, self.world_id, kind="world")

    # ---- state -------------------------------------------------------------------------------
    def _save_states(self, step: int, full: bool = False) -> None:
        self.ws.save_states(self.branch, step, self._states(step, full))

    def _states(self, step: int, full: bool) -> dict[str, dict[str, Any]]:
        """The world's state and the changed agents' (`full`: every agent's, each with its
        whole graph) to save at `step` of the branch."""
        w = self.world
        out: dict[str, dict[str, Any]] = {WORLD_PART: world_state(w, agents=False)}
        if full:
            self._kg_saved.clear()
        for aid in (w.ids if full else [a for a in w.ids if a in self._dirty]):
            self._part_at[aid] = step
            prev = self._kg_saved.get(aid)
            out[aid] = part = agent_state(w, aid, graph=False)
            at = self._record_at.get(aid)
            if at is not None and at[1] is part["agent"]["last_record"]:
                part["agent"]["last_record"] = {RECORD_AT: at[0]}
            add = None
            if prev is not None and prev[0].step < step and prev[1] < KG_CHAIN:
                add = agent_appends(w, aid, prev[0])  # (None: it cannot follow on from that part)
            chain = prev[1] + 1 if add is not None and prev is not None else 0
            out[GRAPH_PART + aid] = add if add is not None else cast(dict[str, Any], agent_appends(w, aid))
            self._kg_saved[aid] = (appended(w, aid, step), chain)
            # the episodes the session store would append (store/session.py) are in that part:
            # a world's agents never go through it, and the list grew without end
            w.agents[aid].episodic.new.clear()
        out[WORLD_PART][AGENT_PARTS] = {aid: self._part_at[aid] for aid in w.ids}
        self._dirty.clear()
        self._since_save = 0
        return out

    def world_at(self, step: int) -> World:
        """A World in the exact state right after `step` of the branch (0: the start): the
        newest saved state before it, and the recorded steps after that replayed. Its agents
        that the replay did not touch are read from the store when first touched (agents.py)."""
        return self._world_at(step)[0]

    def _world_at(self, step: int) -> tuple[World, dict[str, int], set[str]]:
        """world_at's World, where each agent's newest saved part is (its step), and the
        agents that took a turn in the steps replayed."""
        last = self.ws.last_step(self.branch)
        if not 0 <= step <= last:
            raise InputError(f"step {step} is outside the branch (0..{last})", field="--at")
        # a rewind makes a whole world of objects and frees none: the collector's passes over
        # them, with nothing to collect, were a third of its time (runs/travel.py does the same)
        collecting = gc.isenabled()
        gc.disable()
        try:
            at, wstate, refs = self.ws.state_refs(self.branch, step)
            w = self._new_world(restoring=True, step=at)
            load_world_state(w, wstate, lazy={aid: partial(self._fetch, b, s, aid) for aid, (b, s) in refs.items()})
            if w.agents.pending:
                self._lazy.add(w)
            replayed: set[str] = set()
            for row in self.ws.steps(self.branch, at + 1, step):
                got: list[str] = []
                w.lines = got.append
                name = w.step(answer=Recorded.from_rows([row]))
                self._check_replay(row, name, got)
                if row.agent is not None:
                    replayed.add(row.agent)
            w.lines = None
            return w, {aid: s for aid, (_, s) in refs.items()}, replayed
        finally:
            if collecting:
                gc.enable()

    def _fetch(self, branch: int, step: int, aid: str) -> dict[str, Any]:
        """Agent `aid`'s saved part, read when a rewound World first touches it (agents.py)."""
        with self.lock:
            return self.ws.agent_part(branch, step, aid)

    def _check_replay(self, row: StepRow, name: tuple[int, str | None] | None, got: list[str]) -> None:
        if name != (row.round, row.agent) or got != row.lines:
            raise InputError(f"step {row.step} ({row.name}) replayed differently from its record: the world file or a "
                             f"file it names changed since it was recorded", file=str(self.spec.path))

    def _goto(self, step: int) -> None:
        """The live world is the branch's state after `step` (resume, after a failed write)."""
        self.world, self._part_at, self._dirty = self._world_at(step)  # the replayed are saved at the next save
        self.world.lines = self._lines.append
        self.world.gated = set(self._gated)
        self.last_step = step
        self._kg_saved.clear()  # (whole, each: the states this branch saved last may be ahead of `step`)
        self._record_at.clear()  # (their records are saved whole until each one's next turn)
        self._since_save = self.save_every - 1 if step else 0

    def step_number(self, name: str) -> int:
        """The number of step `ROUND:AGENT` on the branch."""
        rnd, agent = parse_step_name(name)
        return self.ws.find_step(self.branch, rnd, agent)

    # ---- driving -----------------------------------------------------------------------------
    def gate(self, agent_ids: "Collection[str] | None") -> list[str]:
        """Whose turns stop at the gate from the next step on (None or none: nobody); an id
        not in the world is refused naming it, and nothing changes. Returns the gated ids in
        the world's order."""
        ids = list(agent_ids or [])
        for aid in ids:
            self._agent_id(aid)
        with self.lock:
            self._gated = frozenset(ids)
            self.world.gated = set(ids)
        return self.gated

    @property
    def gated(self) -> list[str]:
        """The agents whose turns stop at the gate, in the world's order."""
        return [a for a in self.world.ids if a in self._gated]

    def step(self, on_step: Callable[[dict[str, Any]], None] | None = None,
             answer: Answerer | None = None) -> WorldStep | None:
        """One agent's turn, recorded; None when the world is over. A gated agent's turn asks
        `answer` (gate.py); with none it is an error. InvariantViolation, a refused answer, or
        anything the answerer raises (GateClosed): the step is not recorded and the world is
        back at the last recorded step."""
        with self.lock:
            w = self.world
            self._lines.clear()
            summaries: list[dict[str, Any]] = []
            try:
                name = w.step(summaries.append, answer)
            except BaseException:
                # the turn may have stopped anywhere (at the gate: after decide): nothing of
                # it is kept, and the live world is the store's again
                self._lines.clear()
                self._goto(self.last_step)
                raise
            if name is None:
                return None
            rnd, agent = name
            n = self.last_step + 1
            cycle: int | None = None  # of the cycle record in this step's lines
            if agent is not None:
                self._dirty.add(agent)
                rec = w.agents[agent].last_record
                # (a turn the limits refused has no cycle record: the agent's last is an older step's)
                if (rec is not None and self._record_at.get(agent, (0, None))[1] is not rec
                        and any(x.startswith('{"type":"cycle"') for x in self._lines)):
                    self._record_at[agent] = (n, rec)  # its turn's cycle record: in this step's lines
                    cycle = rec.get("cycle")
            self._since_save += 1
            lines = list(self._lines)
            self._lines.clear()
            if self._since_save >= self.save_every:
                self._add_saving(n, rnd, agent, lines, cycle)
            else:
                self.ws.add_step(self.branch, n, rnd, agent, lines, None, cycle)
            self.last_step = n
            self._write_trace_lines(lines)
            summary = summaries[0] if summaries else None
            if summary is not None and on_step is not None:
                on_step(summary)
            return WorldStep(n, rnd, agent, summary)

    def _add_saving(self, n: int, rnd: int, agent: str | None, lines: list[str], cycle: int | None) -> None:
        """Step `n` recorded with the state saved after it. The collector is off meanwhile: a
        saved state is a tree of new dicts and lists (every agent that took a turn since the
        last save: ten of them on a ten-agent world), freed by their reference counts once
        written; the collector's passes while they were built found nothing to free, and
        promoting them to its older generations brought on its passes over the whole world
        (on the bench's ten agents, ~70% of the collections and most of their time)."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.ws.add_step(self.branch, n, rnd, agent, lines, self._states(n, False), cycle)
        finally:
            if collecting:
                gc.enable()

    def step_round(self, on_step: Callable[[dict[str, Any]], None] | None = None,
                   answer: Answerer | None = None) -> list[WorldStep]:
        """The rest of the round under way, or a whole new round."""
        out: list[WorldStep] = []
        s = self.step(on_step, answer)
        while s is not None:
            out.append(s)
            if self.world.order is None:
                break
            s = self.step(on_step, answer)
        return out

    def run(self, rounds: int | None = None, on_step: Callable[[dict[str, Any]], None] | None = None,
            answer: Answerer | None = None) -> str:
        """`rounds` rounds (default: the world file's), a round under way finished first and
        counted, or until every agent is STOPPED; why it ended."""
        w = self.world
        target = w.rounds_done + (rounds if rounds is not None else self.spec.rounds)
        while w.order is not None or w.round < target:
            if self.step(on_step, answer) is None:
                break
            w = self.world
        return "every agent is STOPPED" if w.over and w.order is None else f"{w.round} rounds"

    # ---- time travel -------------------------------------------------------------------------
    def fork(self, at: int, edits: "list[Any]", name: str | None = None) -> int:
        """A new branch after step `at` of this one, the edits applied there (each a WorldEdit,
        edits.py); it is current and live from now on. Returns the branch."""
        from .edits import SetDecider, apply_edits, spec_with

        with self.lock:
            w = self.world_at(at)
            # a decider edit to a model needs the user's [llm] table, which a world without a
            # model agent never read
            made = [{"edit": "decider", "agent": e.agent, "decider": e.kind} for e in edits if isinstance(e, SetDecider)]
            llm = _llm_config(spec_with(w.spec, made), self.user_config) if made else self._llm
            w.llm = llm
            applied = apply_edits(w, edits, w.spec)
            if name is None:
                name = f"fork-{len(self.ws.branches(self.world_id))}"
            self.world = w
            try:
                states = self._states(at, True)
                b = self.ws.fork(self.branch, at, name, applied, states)
            except BaseException:
                # (a name taken, a failed write): the live world is the branch's last step
                # again, and what `_states` noted of saves that never happened is dropped
                self._goto(self.last_step)
                raise
            self.branch = b
            self.last_step = at
            self.spec, self._llm = w.spec, llm
            if _asks_a_live_model(w):
                self.save_every = 1
            w.lines = self._lines.append
            w.gated = set(self._gated)
            return b

    # ---- reading -----------------------------------------------------------------------------
    def steps(self, start: int = 1, end: int | None = None) -> Iterator[StepRow]:
        return self.ws.steps(self.branch, start, end if end is not None else 1 << 62)

    def trace_lines(self) -> Iterator[str]:
        """The branch's §13 trace: the header, then every step's records."""
        yield self.meta["header"]
        for row in self.steps():
            yield from row.lines

    def records(self, agent: str, end: int | None = None) -> Iterator[dict[str, Any]]:
        """`agent`'s cycle records on the branch (up to step `end`), in order."""
        self._agent_id(agent)
        for row in self.steps(1, end):
            if row.agent != agent:
                continue
            for line in row.lines:
                if line.startswith('{"type":"cycle"'):
                    yield json.loads(line)

    def _agent_id(self, agent: str) -> None:
        if agent not in self.world.agents:
            raise InputError(f"no agent {agent!r} in world {self.world_id} (it has: {', '.join(self.world.ids)})",
                             field="--agent")

    def why(self, agent: str, cycle: int, tool: str | None = None) -> dict[str, Any]:
        """`agent why` for one agent of the world: its cycle's Decide explained from the
        record (as a single run's `Run.why`), `cycle` being the agent's own cycle number."""
        from ..explain import soar
        from ..explain.decision import why_chosen, why_not, why_not_text

        rec = next((r for r in self.records(agent) if r["cycle"] == cycle), None)
        if rec is None:
            raise InputError(f"agent {agent} has no recorded cycle {cycle} on this branch", field="--cycle")
        if soar.is_soar(rec):  # a Soar agent's turn: its operators and preferences (explain/soar.py)
            why_chosen, why_not, why_not_text = soar.why_chosen, soar.why_not, soar.why_not_text
        out: dict[str, Any] = {"agent": agent, "cycle": cycle, "round": rec["round"], "chosen": rec["decide"]["tool"],
                               "why_chosen": why_chosen(rec), "tool": tool, "why_not": None}
        if tool is None:
            out["lines"] = out["why_chosen"]
            return out
        try:
            out["why_not"] = why_not(rec, tool)
        except KeyError as exc:
            raise InputError(str(exc.args[0]), field="--tool") from None
        out["lines"] = why_not_text(rec, tool)
        return out

    def explain_goal(self, agent: str, goal_id: int) -> dict[str, Any]:
        """`agent explain` for one agent of the world: why its goal is (not) done."""
        from ..explain.goal import explain_goal

        self._agent_id(agent)
        a = self.world.agents[agent]
        g = a.goals.get(goal_id)
        wanted = {goal_id, *(g.children if g else [])}
        records = [r for r in self.records(agent) if r.get("goal", {}).get("id") in wanted]
        spec = next(x for x in self.spec.agents if x.id == agent)
        try:
            return explain_goal(a, records, goal_id, list(spec.scenario.kg))
        except KeyError as exc:
            raise InputError(str(exc.args[0]), field="--goal") from None

    def branches(self) -> list[dict[str, Any]]:
        return self.ws.branches(self.world_id)

    @property
    def branch_name(self) -> str:
        return str(self.ws.branch_info(self.branch)["name"])

    def _write_trace_lines(self, lines: list[str]) -> None:
        if self.trace is not None:
            for line in lines:
                self.trace.write_line(line)

    # ---- closing -----------------------------------------------------------------------------
    def close(self) -> None:
        """Save the live state (a resume starts there without replaying) and close."""
        with self.lock:
            try:
                if self.trace is not None:
                    self.trace.close()
                if not self.store.readonly and (self._dirty or self._since_save):
                    self._save_states(self.last_step)
            finally:
                try:
                    for w in list(self._lazy):  # what is still to read of them, read while the store is open
                        w.agents.detach()
                finally:
                    self.store.close()
                writelock.release(self._lock_file)
                self._lock_file = None



# ---- the store's worlds, read without building one (sessions list/export/compare) ------------

def parse_world_ref(text: str, field: str = "RUN") -> tuple[int, str]:
    """`wN` or `wN:BRANCH` (a world run of `sessions list`; its main branch by default)."""
    ref, _, branch = str(text).partition(":")
    if not (ref[:1] in ("w", "W") and ref[1:].isdigit()):
        raise InputError(f"a world is wN or wN:BRANCH (like w1:main), got {text!r}", field=field)
    return int(ref[1:]), branch or "main"


def is_world_ref(text: object) -> bool:
    return isinstance(text, str) and text[:1] in ("w", "W") and text[1:].partition(":")[0].isdigit()


class _Reading:
    """A read-only store's world tables, for the functions below."""

    def __init__(self, locations: Locations) -> None:
        if not locations.has_store():
            raise InputError(f"no session store in {locations.data_dir}", field="--data-dir")
        self.store = SessionStore(locations.session_db, readonly=True)
        self.ws = WorldStore(self.store)

    def branch(self, world: int, name: str) -> int:
        self.ws.world_meta(world)
        return self.ws.find_branch(world, name)

    def __enter__(self) -> "_Reading":
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()


def list_worlds(locations: Locations) -> list[dict[str, Any]]:
    """Every world run of the store: id, name, file, seed, its branches (name, steps, fork
    step, edits) and whether one is current."""
    if not locations.has_store():
        return []
    with _Reading(locations) as rd:
        current = rd.ws.current()
        return [{"id": w["id"], "name": w["name"], "file": w["file"], "seed": w["seed"],
                 "branches": [b | {"current": b["id"] == current} for b in rd.ws.branches(w["id"])]}
                for w in rd.ws.worlds()]


def show_world(locations: Locations, ref: str) -> dict[str, Any]:
    """World `ref` (`wN`) as `sessions show wN` gives it: its id, name, file, seed, agents
    (id, scenario, decider, seed: the trace header's), the world file's settings and its
    branches (as list_worlds')."""
    world, _ = parse_world_ref(ref)
    with _Reading(locations) as rd:
        meta = rd.ws.world_meta(world)
        current = rd.ws.current()
        header = json.loads(meta["header"])
        return {"id": world, "name": meta["name"], "file": meta["file"], "seed": meta["seed"],
                "agents": header.get("agents", []), "config": header.get("config", {}),
                "branches": [b | {"current": b["id"] == current} for b in rd.ws.branches(world)]}


def delete_world(locations: Locations, ref: str) -> dict[str, Any]:
    """Delete world `ref` (`wN`) and all its branches; StoreBusy while a process drives it."""
    world, _ = parse_world_ref(ref)
    if not locations.has_store():
        raise InputError(f"no session store in {locations.data_dir}", field="--data-dir")
    st = _open_store(locations)
    lock: Path | None = None
    try:
        ws = WorldStore(st)
        ws.world_meta(world)  # it exists (before taking its lock file)
        if st.path is not None:
            lock = writelock.acquire(st.path, world, kind="world")
        return ws.delete(world)
    finally:
        writelock.release(lock)
        st.close()


def world_items(locations: Locations, ref: str) -> Iterator[dict[str, Any]]:
    """World `ref`'s (`wN[:BRANCH]`) §13 trace as records, the header first, read a step at a
    time (for `sessions export wN --format otlp…`: otel_world.stream_world_spans)."""
    world, name = parse_world_ref(ref)
    with _Reading(locations) as rd:
        b = rd.branch(world, name)
        yield json.loads(rd.ws.world_meta(world)["header"])
        for row in rd.ws.steps(b):
            for line in row.lines:
                yield json.loads(line)


def export_world(locations: Locations, ref: str, target: "str | Path | IO[str]") -> int:
    """Write world `ref`'s (`wN[:BRANCH]`) §13 trace; returns the steps written."""
    world, name = parse_world_ref(ref)
    with _Reading(locations) as rd:
        b = rd.branch(world, name)
        writer = TraceWriter(target)
        n = 0
        try:
            writer.write_line(rd.ws.world_meta(world)["header"])
            for row in rd.ws.steps(b):
                for line in row.lines:
                    writer.write_line(line)
                n += 1
        finally:
            writer.close()
        return n


def compare_worlds(locations: Locations, a: str, b: str) -> dict[str, Any]:
    """Two world branches step by step: the first step they differ at (its number, each
    side's `ROUND:AGENT` and what that agent chose), and each side's step count."""
    (wa, na), (wb, nb) = parse_world_ref(a, "A"), parse_world_ref(b, "B")
    with _Reading(locations) as rd:
        ba, bb = rd.branch(wa, na), rd.branch(wb, nb)
        first: dict[str, Any] | None = None
        count_a = count_b = 0
        for ra, rb in _zip_longest(rd.ws.steps(ba), rd.ws.steps(bb)):
            count_a += ra is not None
            count_b += rb is not None
            if first is None and ra is not None and rb is not None and (ra.name != rb.name or ra.lines != rb.lines):
                first = {"step": ra.step, "a": _side(ra), "b": _side(rb), "differs_in": _differs_in(ra, rb)}
        return {"a_name": f"w{wa}:{na}", "b_name": f"w{wb}:{nb}", "first_divergence": first,
                "a": {"steps": count_a}, "b": {"steps": count_b}}


def _zip_longest(xs: Iterator[StepRow], ys: Iterator[StepRow]) -> Iterator[tuple[StepRow | None, StepRow | None]]:
    from itertools import zip_longest

    return zip_longest(xs, ys)


def _differs_in(a: StepRow, b: StepRow) -> list[str]:
    """Which parts of the step differ: the keys of its cycle records (psyche, decide, act...),
    or the kinds of its other records (ledger, state...)."""
    def parts(row: StepRow) -> dict[str, Any]:
        # a cycle record's keys and the other records' kinds share names (its `round` and
        # `state` fields, the `round` record and `state` events): kept apart, then merged
        out: dict[str, Any] = {}
        kinds: dict[str, list[dict[str, Any]]] = {}
        for line in row.lines:
            rec = json.loads(line)
            if rec.get("type") == "cycle":
                out.update((k, v) for k, v in rec.items())
            else:
                kinds.setdefault(str(rec.get("type")), []).append(rec)
        for kind, recs in kinds.items():
            out[kind if kind not in out else f"{kind} events"] = recs
        return out
    pa, pb = parts(a), parts(b)
    return [k for k in dict.fromkeys([*pa, *pb]) if pa.get(k) != pb.get(k)]


def _side(row: StepRow) -> dict[str, Any]:
    """A step as compare shows it: its name, and the cycle record's choice if the agent acted."""
    out: dict[str, Any] = {"name": row.name, "round": row.round, "agent": row.agent, "tool": None, "input": None,
                           "progress": None}
    for line in row.lines:
        if line.startswith('{"type":"cycle"'):
            rec = json.loads(line)
            out.update(tool=rec["decide"]["tool"], input=rec["decide"].get("input"), progress=rec["act"].get("progress"))
            break
        if line.startswith('{"type":"rate_limited"'):
            out.update(tool="rate_limited", progress="refused")
    return out
