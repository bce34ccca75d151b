"""The one door to a run. The CLI and the workbench reach every run through this module and
nothing else in the engine (an import contract, tests/test_contracts.py, says so).

A `Run` owns one run of a scenario, recorded in a data dir's session store:
- starting it (scenario, seed, goals, decider), resuming it (after a clean stop or a kill),
  replaying an imported trace, resetting it (a new run of the same scenario);
- its time travel: recorded cycles for replay, rewind, fork with edits, branch switch;
- its workspace folder (made under the data dir) and its decider (one protocol: utility,
  scripted, llm);
- user input as command objects (`commands.py`), applied and recorded so a rewind replays
  them; the psyche the user saves, and where;
- the one `view()` the workbench draws, for the live cycle and for a recorded one alike.

This module opens, holds and closes a run; the rest of `Run` is in its parts, each a class this
one puts together, typed against the state in `base.py`: `view.py` (what a run shows),
`phases.py` (the cycle in phases, approval, questions), `driving.py` (cycles and commands),
`psyche_file.py` (the psyche on disk), `travel.py` (branches, fork, rewind, compare).

The store's list of runs, for commands that do not drive one, has its own door:
`sessions.py` (`Sessions`).

Calls are safe from two threads (the workbench's engine thread and its UI thread): one lock
guards the agent and the store's connection.
"""

from __future__ import annotations

import gc
import inspect
import threading
import weakref
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping, Sequence, cast

from . import history, pin
from ..tools import trust
from ..store import writelock
from .basegraph import BaseGraph
from ..knowledge.kg import KnowledgeGraph
from .commands import from_input
from ..cycle.agent import Agent, Cycle
from .approval import Rule
from .breakpoints import Breakpoint, parse_breakpoint
from ..confine.files import check_workspace
from ..errors import InputError, StoreLost, StoreWriteError, read_user_file
from ..goals.goal import make_goal
from ..paths import Locations
from ..psyche.model import Psyche
from ..records import CycleRecord
from ..knowledge.rules import RuleSet
from .scenario import Scenario, build_agent, built_from, changed_since_start, build_kg, build_rules, load_psyche, load_recorded_scenario, load_scenario
from ..store.session import SessionStore
from ..tools.registry import BUILTIN_DECIDERS, PluginError, load_decider
from ..tools.builtins import check_goal_url
from ..store.trace import Trace, TraceWriter, read_trace
from .userconfig import UserConfig
from .driving import Driving
from .phases import PhaseStepping
from .psyche_file import PsycheOnDisk
from .travel import TimeTravel
from .view import Viewing
from .console import Inspecting
from .base import Listener

__all__ = ["Run", "check_goal", "rerun", "plugin_needs", "scenario_decider", "check_pin"]

def check_goal(text: str, field: str) -> None:
    """A goal given on a command line or in a dialog, checked before any run is opened."""
    try:
        make_goal(0, text)
    except InputError as exc:
        raise InputError(exc.message, field=field) from None
    check_goal_url(text, field)


def _decider(kind: str, config: UserConfig | None, base: Path | None = None, data_dir: Path | None = None):
    """The run's decider; the llm one reads its endpoint from the user config. Other names are
    plugins (entry point group akh_tui.deciders, or 'module:attr', a module beside the
    scenario file allowed): one that cannot be loaded is an InputError naming it."""
    from ..llm.decider import make_decider

    if kind not in BUILTIN_DECIDERS:
        try:
            return load_decider(kind, base)
        except PluginError as exc:
            raise InputError(str(exc), field="decider") from None
    if kind not in ("llm", "local"):
        return make_decider(kind)
    cfg = config or UserConfig.load()
    if cfg.error:
        raise InputError(cfg.error.removeprefix("config ignored: "), field="llm")
    return make_decider(kind, cfg.llm, file=str(cfg.path), data_dir=data_dir)


def _psyche_header(psyche: Psyche) -> dict:
    """The psyche as the trace header and a run's meta hold it: its snapshot and the names of
    its configured patterns (so a replay can say how many were configured)."""
    return psyche.snapshot() | {"vetoes": [p.name for p in psyche.shadow.veto_patterns],
                                "biases": [p.name for p in psyche.shadow.bias_patterns]}


def _open_store(locations: Locations, store: "str | Path | SessionStore | None" = None) -> SessionStore:
    if isinstance(store, SessionStore):
        return store
    if store is not None and str(store) == ":memory:":
        return SessionStore(":memory:")
    locations.ensure_data_dir()
    try:
        return SessionStore(Path(store) if store is not None else locations.session_db)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(f"cannot use the data dir: {reason}", file=str(locations.data_dir), field="--data-dir") from None


def _drivable_meta(st: SessionStore, locations: Locations, missing: str) -> dict[str, Any]:
    """The current run's header, when there is one the engine can rebuild: an imported
    trace has no scenario to run, so it is sent to replay."""
    meta = st.meta()
    if meta is not None and meta.get("architecture") == "soar":  # store/soarstore.py: no OODA engine to rebuild
        raise InputError(f"the current run (run {meta['id']}) is a Soar run: `akh-tui agent resume` continues it, "
                         f"`akh-tui agent fork --at N --select O12` forks it", file=st.where)
    if meta is None or not st.has_session():
        raise InputError(f"{missing} in {locations.data_dir} (start one with `akh-tui agent run` or `akh-tui`)",
                         field="--data-dir")
    if meta.get("imported_from"):
        raise InputError(f"the current run was imported from {meta['imported_from']}: replay it with "
                         f"`akh-tui open`", file=st.where)
    return meta


class Run(Viewing, PhaseStepping, Driving, PsycheOnDisk, TimeTravel, Inspecting):
    """One run of a scenario in a session store. Build with `start`, `resume`,
    `continue_or_start`, `open_or_new` or `replay_trace`; drive with `step`, `run_cycles`
    and `apply`; look with `view`, `record`, `records`."""

    def __init__(self, locations: Locations, store: SessionStore, scenario: Scenario | None, agent: Agent | None,
                 meta: dict, trace: TraceWriter | None = None, config: UserConfig | None = None,
                 note: str = "") -> None:
        self.locations = locations
        self.store = store
        self.scenario = scenario
        self.agent = agent  # None: a replay-only run (an imported trace)
        self.meta = meta
        self.trace = trace
        self.user_config = config
        self.note = note  # what the front end should say on opening (continued, saved psyche used)
        self.lock = threading.RLock()
        self.latest: CycleRecord | None = cast("CycleRecord | None", agent.last_record) if agent is not None else None
        self._listeners: list[Listener] = []
        self._psyche_disk: dict[Path, str | None] = {}  # a file's text when this run last read or wrote it
        self._plugin_disk: dict[str, str] = {}  # a scenario plugin's file (sha256) as this run opened it
        self._psyche_file: Path | None = None
        self._patterns: list[tuple[int, int, int]] = []  # (from cycle, vetoes, biases) configured
        self._vetoes_fired = 0
        # (run, branch, goal) -> (cycle counted up to, vetoes per tool): a branch's records are
        # only appended to, so the Why pane's count reads each cycle once, not every frame
        self._previous_branch: int | None = None  # the store's current branch before Run.start
        self._veto_tally: dict[tuple[int, int, int], tuple[int, dict[str, int]]] = {}
        self._lock_file: Path | None = None  # the writer's lock of this run (writelock.py)
        self._frozen: int | None = None  # a branch opened only to fork it (resume(fork_at=...)): never checkpointed
        # the cycle in phases (a person in the loop): the cycle in progress, the inputs given
        # during it (recorded with its record), and what it waits for before act
        self._cycle: Cycle | None = None
        self._cycle_inputs: list[tuple[str, Any]] = []
        self.waiting: dict | None = None
        self.stop_before: set[str] = set()  # phases the following cycles stop before (step())
        # off until a front end turns them on (the workbench from the config's [approve],
        # `agent run --approve`): a script or a pinned rerun never waits for a person
        self.approve_rules: list[Rule] = []
        self.approver: Callable[[dict], dict] | None = None  # headless: asks and returns a verdict
        self.ask_user = False  # user_interact asks the person (workbench, --ask)
        self.asker: Callable[[dict], list[str] | None] | None = None  # headless --ask
        self._unconfined: tuple[str, ...] | None = None  # shell_unconfined, read once
        if agent is not None:
            self._decider_cache = agent.decider  # the decider it opened with (_live_decider)
        # files the run's start was built from that hold something else now (a resume rebuilds
        # the start from them as they are: the warnings say so)
        self.start_changed: list[str] = []
        self._note_psyche_source()
        self._note_plugin_sources()
        self._after_open()

    def _note_psyche_source(self) -> None:
        """The scenario's psyche file as this run opened it: a hot reload (`reload`) takes the
        psyche again only when the file changed since."""
        sc = self.scenario
        if sc is None or sc.psyche_file is None or self.meta.get("psyche_file"):
            return
        try:
            self._psyche_disk.setdefault(sc.psyche_file, read_user_file(sc.psyche_file, "psyche file"))
        except InputError:
            pass  # unreadable now: a reload reads it then and says why

    # ---- opening ---------------------------------------------------------------------------
    @classmethod
    def start(cls, locations: Locations, scenario: str | Scenario = "zoo", seed: int | None = None,
              goals: list[str] | None = None, decider: str | None = None, trace: str | Path | IO[str] | None = None,
              store: "str | Path | SessionStore | None" = None, config: UserConfig | None = None, workbench: bool = False,
              note: str = "", psyche: Psyche | None = None, breaks: "Sequence[Breakpoint]" = ()) -> "Run":
        """A new run of the scenario (earlier runs stay in the store). `goals` (descriptions)
        replace the scenario's. Its psyche is the one last saved for this scenario in the data
        dir, if any (the note says so), else the scenario's; `psyche` (a sweep's point) overrides both.
        `breaks` are checked against the run's tools (its plugins included) before the store is
        opened: a breakpoint that could never fire leaves no run behind."""
        sc = load_scenario(scenario) if isinstance(scenario, str) else scenario
        for g in goals or []:
            check_goal(g, "--goals")
        decider = decider or sc.decider or "utility"  # the caller's, else the scenario's
        dec = _decider(decider, config, sc.path.parent, locations.data_dir)
        writer = TraceWriter(trace) if trace is not None else None  # an unusable --trace fails first
        saved = locations.psyche_to_load(sc.name)
        disk = None
        if psyche is None and saved.is_file():
            try:
                disk = saved.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read the saved psyche: {exc}", file=str(saved)) from None
            psyche = Psyche.from_toml(disk, file=str(saved))
            psyche.source = str(saved)
            note = (note + "; " if note else "") + f"psyche from {saved} (saved earlier for {sc.name})"
        agent = build_agent(sc, seed, goals, None, psyche=psyche, decider=dec)
        for bp in breaks:
            parse_breakpoint(bp.spec, tools=agent.tool_names)
        st = _open_store(locations, store)
        meta = {"scenario": str(sc.path), "name": sc.name, "seed": agent.seed, "goals": goals, "decider": decider,
                "config": agent.config.to_dict(), "psyche": _psyche_header(agent.psyche), "built_from": built_from(sc)}
        if workbench:
            meta["workbench"] = True
        if disk is not None:
            meta["psyche_file"] = str(saved)
        previous = st.branch  # the branch a resume continued before this run
        run_id = st.start(agent, meta)
        meta = st.run_meta(run_id)
        r = cls(locations, st, sc, agent, meta, writer, config, note)
        r._previous_branch = previous
        r._hold()
        if disk is not None:
            r._psyche_disk[saved] = disk
        return r

    @classmethod
    def resume(cls, locations: Locations, branch: str | None = None, trace: str | Path | IO[str] | None = None,
               store: str | Path | None = None, config: UserConfig | None = None, fork_at: int | None = None) -> "Run":
        """The store's current run where it was left (its current branch, or `branch`).
        `fork_at`: only to fork the branch after that cycle (`agent fork`): it is rewound there
        rather than resumed, so a branch damaged later on can still be forked before the damage;
        it is never checkpointed (nothing is appended to it)."""
        if store is None and not locations.has_store():
            # nothing to resume: say so, and leave no empty store behind
            raise InputError(f"no session to resume in {locations.data_dir} (start one with `akh-tui agent run` "
                             f"or `akh-tui`)", field="--data-dir")
        st = _open_store(locations, store)
        try:
            meta = _drivable_meta(st, locations, "no session to resume")
            sc = load_recorded_scenario(meta["scenario"])
            lock = writelock.acquire(st.path, meta["id"]) if st.path is not None else None  # before any write
            try:
                writer = TraceWriter(trace) if trace is not None else None
                r = cls(locations, st, sc, None, meta, writer, config)
                r._lock_file = lock
                r.start_changed = changed_since_start(sc, (meta.get("built_from") or {}).get("files"))
                bid = st.find_branch(meta["id"], branch) if branch is not None else None
                if fork_at is None:
                    r._adopt(history.resume(st, r._rebuild, bid))
                else:
                    b = st.current() if bid is None else bid
                    st.refuse_marked(b, upto=fork_at)
                    r._adopt(history.rewind(st, b, fork_at, r._rebuild))
                    st.adopt(b, r._engine())
                    r._frozen = b
            except BaseException:
                writelock.release(lock)
                raise
            return r
        except BaseException:
            st.close()
            raise

    @classmethod
    def open_readonly(cls, locations: Locations, branch: str | None = None, config: UserConfig | None = None) -> "Run":
        """The store's current run (its current branch, or `branch`) to read, not to drive:
        the store is opened read-only and no writer's lock is taken, so it works while the
        workbench or `agent run` writes the run, and on a read-only file system. The engine's
        state is rebuilt in memory (the head, or the last snapshot and the cycles after it
        replayed); nothing is written, not even the workspace folder. Close it with
        `close(checkpoint=False)`; stepping it is refused by the store."""
        if not locations.has_store():
            raise InputError(f"no session in {locations.data_dir} (start one with `akh-tui agent run` or `akh-tui`)",
                             field="--data-dir")
        st = SessionStore(locations.session_db, readonly=True)
        try:
            meta = _drivable_meta(st, locations, "no session")
            r = cls(locations, st, load_recorded_scenario(meta["scenario"]), None, meta, None, config)
            r.start_changed = changed_since_start(r.scenario, (meta.get("built_from") or {}).get("files"))  # type: ignore[arg-type]
            if branch is not None:  # current for this reader only: the store's own choice is not written
                st.branch = st.find_branch(meta["id"], branch)
                r._after_open()
            agent = history.resume(st, r._rebuild, st.branch)
            agent.workspace = r.workspace  # named, never made: a reader creates nothing
            r.agent, r.latest = agent, cast("CycleRecord | None", agent.last_record)
            return r
        except BaseException:
            st.close()
            raise

    @classmethod
    def continue_or_start(cls, locations: Locations, scenario: str = "zoo", seed: int | None = None,
                          goals: list[str] | None = None, decider: str | None = None, fresh: bool = False,
                          trace: str | Path | IO[str] | None = None, config: UserConfig | None = None,
                          breaks: "Sequence[Breakpoint]" = ()) -> "Run":
        """`agent run`: continue the store's current run when it is this scenario, seed, goals
        and decider and still has an active goal; otherwise (or `fresh`) start a new one
        (`breaks` are checked before it is made: see `start`)."""
        sc = load_scenario(scenario)
        decider = decider or sc.decider or "utility"
        for g in goals or []:
            check_goal(g, "--goals")
        if not fresh and locations.has_store():
            st = _open_store(locations)
            meta = st.meta() if st.has_session() else None
            st.close()
            want_seed = sc.seed if seed is None else seed
            if meta is not None and meta["scenario"] == str(sc.path) and meta["seed"] == want_seed \
                    and meta["goals"] == goals and meta.get("decider", "utility") == decider:
                r = cls.resume(locations, trace=trace, config=config)
                if r.agent is not None and r.agent.focus_goal() is not None:
                    r.note = f"continuing the session at cycle {r.cycle} (use --fresh to start over)"
                    return r
                if r.trace is not None:
                    r.trace.close()
                r.store.close()
        return cls.start(locations, sc, seed, goals, decider, trace, config=config, breaks=breaks)

    @classmethod
    def open_or_new(cls, locations: Locations, scenario: str | None = None,
                    trace: str | Path | IO[str] | None = None) -> "Run":
        """`agent cycle` / `agent plan`: the current run, or a new one of `scenario` (zoo)."""
        if locations.has_store():
            st = _open_store(locations)
            meta = st.meta() if st.has_session() else None
            st.close()
            if meta is not None and not meta.get("imported_from"):
                if scenario is None:
                    return cls.resume(locations, trace=trace)
                if meta["scenario"] == str(load_scenario(scenario).path):
                    return cls.resume(locations, trace=trace)
        return cls.start(locations, scenario or "zoo", trace=trace, goals=[])  # only the goal asked for

    @classmethod
    def replay_trace(cls, trace_file: str | Path, locations: Locations | None = None) -> "Run":
        """A trace file, read-only: its records in a store of its own (no engine)."""
        trace: Trace = read_trace(trace_file)  # validated line by line before anything is kept
        if not trace.cycles:
            raise InputError("the trace has no cycle to replay", file=str(trace_file))
        st = SessionStore(":memory:")
        run_id = st.import_trace(trace, Path(trace_file).name)
        st.use(st.branches(run_id)[0]["id"])
        return cls(locations or Locations.resolve(), st, None, None, st.run_meta(run_id))

    @classmethod
    def over(cls, agent: Agent, name: str, store: SessionStore | None = None, trace: TraceWriter | None = None,
             rebuild: Callable[..., Agent] | None = None) -> "Run":
        """A run of an agent built elsewhere (the benchmark's generated graphs, tests),
        recorded like any other; `rebuild` makes a fresh one for rewinds. A `rebuild` that
        takes a `kg` argument (None: build one) is lent the run's base graph by the door's
        rewinds (basegraph.py), as a scenario's run is."""
        st = store or SessionStore(":memory:")
        run_id = st.start(agent, {"name": name, "seed": agent.seed, "goals": None, "decider": agent.decider.kind,
                                  "config": agent.config.to_dict(), "psyche": _psyche_header(agent.psyche)})
        r = cls(Locations.resolve(), st, None, None, st.run_meta(run_id), trace)
        r._custom_rebuild = rebuild
        r._custom_lends = rebuild is not None and "kg" in inspect.signature(rebuild).parameters
        r.agent, r.latest = agent, cast("CycleRecord | None", agent.last_record)
        r._after_open()
        return r

    def timeline(self) -> history.Timeline:
        """The branch shown, through history's three modes (replay, rewind, fork)."""
        return history.Timeline(self.store, self.store.current(), self._rebuild)

    # ---- internals ---------------------------------------------------------------------------
    _custom_rebuild: Callable[..., Agent] | None = None
    _custom_lends = False  # the custom rebuild takes a lent graph (`kg`)
    _rules: RuleSet | None = None  # the scenario's rules, shared by the agents rewinds make
    _graphs: BaseGraph | None = None  # the base graph lent to rewinds (basegraph.py)
    _psyche_base: Psyche | None = None

    def _rebuild(self, kg: KnowledgeGraph | None = None) -> Agent:
        """A fresh agent of this run's scenario (no goals): what restores start from. `kg`:
        a graph lent by `_base_graph()` (the base, maybe with the first of a branch's additions)."""
        if self._custom_rebuild is not None and kg is None:
            return self._custom_rebuild()
        if self.scenario is None and self._custom_rebuild is None:
            raise InputError("this run has no scenario to rebuild from: it can be replayed, not rewound")
        graphs = self._base_graph()
        assert graphs is not None  # a scenario's run, or a custom rebuild that is lent graphs
        if self._custom_rebuild is not None:
            agent = self._custom_rebuild(kg=kg)
        else:
            sc = self.scenario
            assert sc is not None
            kg = kg if kg is not None else graphs.lend()
            seed = sc.seed if self.meta["seed"] is None else self.meta["seed"]
            agent = build_agent(sc, seed, None, None, psyche=self._psyche_base.copy(),  # type: ignore[union-attr]
                                add_goals=False, decider=self._live_decider(), rules=self._rules, kg=kg,
                                caches=graphs.caches(kg, seed, sc.config.vsa_dim))
            agent.workspace = self.workspace
            agent.shell_unconfined = self.shell_unconfined
            agent.scenario_goals = self._first_scenario_goals()
        assert graphs.base is not None  # set by the first graph lent
        agent.base_symbols, agent.base_triples = graphs.base  # the scenario's, not the lent graph's size
        return agent

    def _first_scenario_goals(self) -> dict[str, tuple[int, str | None, int]] | None:
        """The goals the run took from its scenario file when it started, by description -> id
        (what a goals reload manages until one changes it; None: goals given with --goals). The
        goals recorded at the start, else (a run started before they were) the file's."""
        if self.meta.get("goals") is not None:
            return None
        first = (self.meta.get("built_from") or {}).get("goals")
        if isinstance(first, list):
            return {d: (i, c, p) for i, (d, c, p) in enumerate(first, 1)}
        if self.scenario is None:
            return None
        return {g.description: (i, g.criteria, g.priority) for i, g in enumerate(self.scenario.goals, 1)}

    def _base_graph(self) -> BaseGraph | None:
        """The scenario's parsed files and base graph, kept for the run's rewinds (None for a
        run over an agent built elsewhere whose rebuild takes no graph, or of no scenario)."""
        if self._custom_rebuild is not None:
            if self._custom_lends and self._graphs is None:
                custom = self._custom_rebuild
                self._graphs = BaseGraph(lambda: _bare(custom().kg))
            return self._graphs
        if self.scenario is None:
            return None  # a replayed trace: `_rebuild` says it cannot be rewound
        if self._graphs is None:  # once per run: a rewind does not read the scenario's files again
            sc = self.scenario
            # the live agent's graph is copied (basegraph.py) and its rules shared (an agent
            # never changes its RuleSet); with no live agent yet (a resume's own restore) the
            # scenario's files are read, once
            self._rules = self.agent.scenario_rules if self.agent is not None else build_rules(sc)
            me = weakref.ref(self)  # the run holds its base graph: a getter holding the run back was a cycle

            def live() -> Agent | None:
                run = me()
                return run.agent if run is not None else None

            self._graphs = BaseGraph(lambda: build_kg(sc), live)
            self._psyche_base = self._base_psyche()
        return self._graphs

    def _base_psyche(self) -> Psyche:
        # a restore overwrites the psyche with the saved state's: this one only has to load
        return Psyche.default() if self.meta.get("psyche_file") else load_psyche(self.scenario)  # type: ignore[arg-type]

    def _live_decider(self):
        """The decider the run opened with: one object for all its rewinds (a state whose
        decider was reloaded gets the reloaded one when it is restored, cycle/state.py)."""
        if getattr(self, "_decider_cache", None) is None:
            base = self.scenario.path.parent if self.scenario is not None else None
            self._decider_cache = _decider(self.meta.get("decider", "utility"), self.user_config, base,
                                           self.locations.data_dir)
        return self._decider_cache

    def _hold(self) -> None:
        """This process is the run's one writer from now on (StoreBusy names the other one)."""
        if self.store.path is None or self.store.readonly:
            return
        lock = writelock.acquire(self.store.path, self.run_id)
        writelock.release(self._lock_file)
        self._lock_file = lock

    def _record(self, record: Mapping[str, Any] | None, events: list[dict], inputs: "list | tuple" = (),
                input_events: bool = False, text: str | None = None, inputs_before: bool = False) -> None:
        """Save to the store; when that fails, put the engine back to what the store holds
        (engine and store never diverge) and raise StoreWriteError saying so."""
        a = self._engine()
        try:
            self.store.save(a, record, events, inputs, input_events=input_events, text=text, inputs_before=inputs_before)
        except StoreLost:
            raise  # committed and durable: the engine agrees with the store; no more writes
        except StoreWriteError as exc:
            what = f"cycle {record['cycle']}" if record is not None else "your last action"
            try:
                self._adopt(history.resume(self.store, self._rebuild, self.store.current()))
            except Exception as again:  # the store cannot even be read back: refuse to go on
                self.agent = None
                raise StoreWriteError(f"{what} could not be recorded ({exc.message}), and the recorded state could "
                                      f"not be read back ({again}): the run is closed; resume it when the store "
                                      f"is usable again", file=exc.file) from None
            reason = exc.message.rstrip(".")
            raise StoreWriteError(f"{what} could not be recorded: {reason}. The run is paused at cycle "
                                  f"{self.agent.cycle}, the last one recorded (nothing recorded is lost: the engine "  # type: ignore[union-attr]
                                  f"went back to it). Free the space and continue.", file=exc.file) from None

    def _adopt(self, agent: Agent) -> None:
        """`agent` is the run's live state from now on (after resume, fork, switch)."""
        old = self.agent
        if old is not None and agent.decider_source is None:  # a reloaded decider is the state's own
            agent.decider = self._live_decider()
        agent.workspace = self.workspace
        self.agent = agent
        if old is not None and old is not agent and self._graphs is not None:
            self._graphs.take_over(old)  # the agent left is done with: its graph, undone, serves the next rewind
        self.latest = cast("CycleRecord | None", agent.last_record)
        self._after_open()

    def _after_open(self) -> None:
        """Facts of the branch shown: configured patterns over time, vetoes fired."""
        b = self.store.branch
        if b is None:
            return
        run_id = self.store.current_run()
        self.meta = self.store.run_meta(run_id) if run_id is not None else self.meta
        self.branch_name = self.store.branch_info(b)["name"]
        ps = self.meta.get("psyche") or {}
        self._patterns = [(0, len(ps.get("vetoes", [])), len(ps.get("biases", [])))]
        for cycle, ev in self.store.events(b, "psyche_edit"):  # not every event: a million-cycle branch resumes fast
            if ev.get("type") == "psyche_edit":
                self._patterns.append((cycle + 1, len(ev.get("vetoes", [])), len(ev.get("biases", []))))
        self._vetoes_fired = self.store.count_vetoes(b, self.store.last_cycle(b))
        if self.agent is not None:
            self._workspace_dir()
            if self.trace is not None and not getattr(self, "_header_written", False):
                self._header_written = True
                a = self.agent
                self.trace.header(self.name, a.seed, a.config.to_dict(), _psyche_header(a.psyche), start_cycle=a.cycle)
                self.trace.write_all(a.drain_events())

    @property
    def workspace(self) -> Path | None:
        if self.scenario is None:
            return None
        return self.locations.workspace(self.meta["id"], self.scenario.config.workspace)

    def _workspace_dir(self) -> None:
        """The run's workspace exists before its first cycle (the tools that need it are still
        gated by capabilities, allow-lists and the psyche)."""
        ws, sc = self.workspace, self.scenario
        if ws is None or sc is None:
            return
        if ws != self.locations.workspace(self.meta["id"]):  # the run's own folder is safe by construction
            # a folder the scenario names may not hold (or be inside) what the agent must not
            # overwrite: the session store, the saved psyches, the config
            loc = self.locations
            check_workspace(ws, {"session store": loc.session_db, "saved psyches": loc.psyche_dir,
                                 "config dir": loc.config_file.parent}, file=str(sc.path))
        try:
            ws.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the run's workspace: {exc.strerror or exc}", file=str(ws),
                             field="workspace") from None
        if self.agent is not None:
            self.agent.workspace = ws
            self.agent.shell_unconfined = self.shell_unconfined

    @property
    def shell_unconfined(self) -> tuple[str, ...]:
        """The programs the user's config lets shell_exec run where bubblewrap is not in force
        ([shell] unconfined): from the config the front end gave, else the one this run's
        locations name (a CLI run reads the user's own config too). Read once per run."""
        if self._unconfined is None:
            cfg = self.user_config or UserConfig.load(self.locations.config_file)
            self._unconfined = tuple(cfg.shell_unconfined)
        return self._unconfined


    # ---- closing -----------------------------------------------------------------------------
    def close(self, checkpoint: bool = True) -> None:
        """Checkpoint the branch (a later resume starts here) and close the store and trace.
        `checkpoint=False` after a command that only read the run: nothing is written."""
        with self.lock:
            trace_error: InputError | None = None
            try:
                if self.trace is not None:
                    try:
                        self.trace.close()
                    except InputError as exc:  # the trace's file refused: the store still closes cleanly
                        trace_error = exc
                if self.agent is not None and checkpoint and self.store.branch != self._frozen:
                    self.drop_cycle()  # quitting mid-cycle: a resume starts at the cycle's start
                if self.agent is not None and checkpoint and self._untouched():
                    self._forget()
                elif self.agent is not None and checkpoint:
                    try:
                        self.store.checkpoint(self.agent)
                    except StoreWriteError:
                        pass  # no head: a resume rewinds to the last recorded cycle (nothing is lost)
            finally:
                self.store.close()
                writelock.release(self._lock_file)
                self._lock_file = None
            if trace_error is not None:
                raise trace_error

    def _untouched(self) -> bool:
        """A workbench run opened and quit with nothing done: no cycle, no branch, nothing the
        user gave (a goal, a psyche edit) recorded. Kept, it was a 0-cycle run in every list."""
        if not self.meta.get("workbench") or self.last_cycle() > 0:
            return False
        st = self.store
        return len(st.branches(self.run_id)) == 1 and next(iter(st.events(st.current())), None) is None

    def _forget(self) -> None:
        """Delete the untouched run; the branch that was current before it is current again."""
        st = self.store
        st.delete_run(self.run_id)
        if self._previous_branch is not None:
            try:
                st.use(self._previous_branch)
            except InputError:
                pass  # deleted meanwhile (another process): no current branch, as after a delete

    def _emit(self, events: list[dict], persist: bool = True, inputs: list | None = None) -> None:
        """Events to the trace, the store and the listeners. `inputs` marks a user action
        between cycles: it is stored with them so that rewind can replay it."""
        if persist and (events or inputs):
            self._record(None, events, inputs or (), input_events=inputs is not None)
        if not events:
            return
        if self.trace is not None:
            self.trace.write_all(events)
        for e in events:
            for fn in self._listeners:
                fn(e)


def _bare(kg: KnowledgeGraph) -> KnowledgeGraph:
    """A graph taken from an agent built only for it: without that agent's listeners."""
    kg.listeners.clear()
    return kg


def rerun(scenario: str, seed: int, goals: list[str] | None, decider: str, inputs: dict[int, list[tuple[str, Any]]],
          until: int) -> Iterator[dict]:
    """A run replayed headless from its settings and recorded user inputs (a pin's check): the
    records of cycles 1..until (fewer when no goal is left active), each input applied after
    the cycle it followed. In a data dir of its own, so no saved psyche, store or workspace of
    the user's takes part."""
    import json
    import tempfile

    with tempfile.TemporaryDirectory(prefix="akh-rerun-") as tmp:
        r = Run.start(Locations(Path(tmp), Path(tmp) / "config.toml"), scenario, seed, goals, decider, store=":memory:")
        try:
            for c in range(until):
                for kind, payload in inputs.get(c, []):
                    r.apply(from_input(kind, payload))
                rec = r.step()
                if rec is None:
                    return
                yield json.loads(json.dumps(rec))  # as the store gave the pinned one: like with like
        finally:
            r.close()


def plugin_needs(locations: Locations, scenario: str | None = None, decider: str | None = None,
                 resume: bool = False) -> list[trust.PluginNeed]:
    """The folders of Python code opening `scenario` (or, `resume`, the store's current run)
    would import from outside the installed packages, each with whether this process may:
    read from the files alone, nothing imported (the workbench asks before it opens a run)."""
    from .scenario import resolve

    if resume:
        if not locations.has_store():
            return []
        st = SessionStore(locations.session_db, readonly=True)
        try:
            meta = st.meta() or {}
        finally:
            st.close()
        if not meta.get("scenario"):
            return []
        path, decider = Path(meta["scenario"]), meta.get("decider")
    else:
        path = resolve(scenario or "zoo")
    return trust.scenario_needs(path, [decider] if decider and ":" in decider else [])


def scenario_decider(scenario: str | None) -> str | None:
    """The decider a scenario file declares, read without loading it (nor its plugins)."""
    from .scenario import resolve

    return trust.declared_decider(resolve(scenario or "zoo"))


def check_pin(pin_data: dict, path: Path) -> dict:
    """A pin file's cycles rerun through the door: "same" or what changed (engine/runs/pin.py).
    A scenario whose plugins come from a folder this process may not import from is refused
    before anything runs (a rerun without them would only report a changed behaviour)."""
    scenario = Path(pin.resolve_scenario(pin_data, path))
    for need in trust.scenario_needs(scenario):
        if not need.trusted:
            raise InputError(f"the scenario would need plugins from {need.folder} ({', '.join(need.refs)}): not "
                             f"trusted, so nothing was imported or run ({need.why})", file=str(path), field="scenario")
    return pin.check_pin(pin_data, path, rerun)
