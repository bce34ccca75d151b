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
from ..export import otel, report
from ..tools import trust
from ..store import writelock
from .basegraph import BaseGraph
from ..knowledge.kg import KnowledgeGraph
from .commands import from_input
from ..config import DANGEROUS_CAPABILITIES, SAFE_ENV, SERVED_ENV, served_process
from ..cycle.agent import PHASES, Agent, Cycle
from .approval import DEFAULT_RULES, Rule, answer_lines, check_decision, first_match, parse_rules
from .breakpoints import Breakpoint, first_hit
from .breakpoints import parse as parse_breakpoint
from .breakpoints import stop_phases
from ..confine.policy import check_workspace
from .commands import AddGoal, Answer, Command, Consolidate, EditPsyche, ForkEditError, MakePlan, Reflect, Verdict
from ..errors import (BranchDamaged, InputError, StoreBusy, StoreDamaged, StoreLost, StoreWriteError, parse_toml,
                      read_user_file, toml_error)
from ..explain.decision import why_chosen, why_not_text
from ..goals.goal import make_goal
from ..knowledge.memory import KIND_RELEVANCE
from ..paths import Locations
from ..psyche.model import Psyche
from ..records import ConsolidationEvent, CycleRecord, CycleSummary, Event, ForkEvent, View
from .search import parse_search
from ..knowledge.rules import RuleSet
from .scenario import (Scenario, build_agent, build_kg, build_rules, list_scenarios, load_psyche,
                       load_recorded_scenario, load_scenario)
from ..store.session import SessionStore
from ..text import normalised_words
from ..tools.registry import BUILTIN_DECIDERS, PluginError, load_decider
from ..tools.builtins import SPECS, TOOL_NAMES, check_goal_url
from ..redaction import redact, redact_obj, registered_in
from ..store.trace import Trace, TraceWriter, dumps, read_trace
from .userconfig import UserConfig
# what `akh-tui serve` (cli/classroom.py, cli/serve_guard.py) needs: the served-tab mark, its URL check, its token masked
from ..config import SERVED_ENV, served_process
from ..redaction import redact, register_secret
from ..urls import check_url

__all__ = [
    "Run", "ForkEditError", "Locations", "InputError", "UserConfig", "Psyche", "AddGoal", "EditPsyche", "Reflect",
    "Consolidate", "MakePlan", "parse_breakpoint", "first_hit", "parse_search", "why_chosen", "why_not_text",
    "TOOL_NAMES", "SPECS", "check_goal", "list_scenarios", "PsycheFileChanged", "read_user_file", "toml_error", "parse_toml",
    "CycleRecord", "CycleSummary", "Event", "View", "otel", "pin", "report", "load_scenario",
    "TraceWriter", "DANGEROUS_CAPABILITIES", "SAFE_ENV", "rerun", "check_pin", "StoreWriteError", "StoreBusy",
    "StoreDamaged", "BranchDamaged", "StoreLost",
    "Breakpoint",
    "PHASES", "Verdict", "Answer", "parse_rules", "answer_lines", "DEFAULT_RULES", "stop_phases", "trust",
    "SERVED_ENV", "served_process", "plugin_needs", "scenario_decider", "redact", "redact_obj",
]
__all__ += ["register_secret", "check_url"]

Listener = Callable[[Any], None]  # gets each CycleRecord and Event


class PsycheFileChanged(InputError):
    """The psyche file changed on disk since this run loaded or saved it: saving again would
    overwrite someone's edits, so the caller must ask first (and pass force=True)."""


def check_goal(text: str, field: str) -> None:
    """A goal given on a command line or in a dialog, checked before any run is opened."""
    try:
        make_goal(0, text)
    except InputError as exc:
        raise InputError(exc.message, field=field) from None
    check_goal_url(text, field)


def _decider(kind: str, config: UserConfig | None, base: Path | None = None):
    """The run's decider; the llm one reads its endpoint from the user config. Other names are
    plugins (entry point group akh_tui.deciders, or 'module:attr', a module beside the
    scenario file allowed): one that cannot be loaded is an InputError naming it."""
    from ..llm.decider import make_decider

    if kind not in BUILTIN_DECIDERS:
        try:
            return load_decider(kind, base)
        except PluginError as exc:
            raise InputError(str(exc), field="decider") from None
    if kind != "llm":
        return make_decider(kind)
    cfg = config or UserConfig.load()
    if cfg.error:
        raise InputError(cfg.error.removeprefix("config ignored: "), field="llm")
    return make_decider(kind, cfg.llm, file=str(cfg.path))


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
    if meta is None or not st.has_session():
        raise InputError(f"{missing} in {locations.data_dir} (start one with `akh-tui agent run` or `akh-tui`)",
                         field="--data-dir")
    if meta.get("imported_from"):
        raise InputError(f"the current run was imported from {meta['imported_from']}: replay it with "
                         f"`akh-tui open`", file=st.where)
    return meta


class Run:
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
        self._after_open()

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
        dec = _decider(decider, config, sc.path.parent)
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
                "config": agent.config.to_dict(), "psyche": _psyche_header(agent.psyche)}
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
    replay_divergence: str | None = None  # what the last rewind found replaying differently
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
        assert graphs.base is not None  # set by the first graph lent
        agent.base_symbols, agent.base_triples = graphs.base  # the scenario's, not the lent graph's size
        return agent

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
            self._rules = self.agent.rules.ruleset if self.agent is not None else build_rules(sc)
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
        if self.agent is not None:
            return self.agent.decider
        if not hasattr(self, "_decider_cache"):
            base = self.scenario.path.parent if self.scenario is not None else None
            self._decider_cache = _decider(self.meta.get("decider", "utility"), self.user_config, base)
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
        if old is not None:
            agent.decider = old.decider
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

    # ---- reading -----------------------------------------------------------------------------
    @property
    def warnings(self) -> list[str]:
        """What the user should know about the run's settings before it runs (an allow-listed
        program known to run or write arbitrary things, ...), each naming file, line and field."""
        if self.scenario is None:
            return []
        out = list(self.scenario.config.warnings)
        off = self.scenario.config.served_off
        if off and self.agent is not None:  # said on the page: `serve` printed it only in its own terminal
            tools = [n for n in self.agent.tools.names if set(self.agent.tools.entries[n].spec.capabilities) & set(off)]
            verb, them = ("stays", "it") if len(off) == 1 else ("stay", "them")
            out.append(f"served in a browser tab: {', '.join(off)} {verb} off though the scenario turns {them} on, so "
                       f"{', '.join(tools)} are never offered (the shadow scenario's veto demo needs shell_exec); "
                       f"`akh-tui serve --allow-dangerous` lets a scenario turn {them} on")
        if self.replay_divergence:
            out.append(self.replay_divergence)
        # bad plugins (left out, turned off, a decider that failed): named, the run goes on
        if self.agent is not None:
            out += self.agent.tools.problems
            out += getattr(self.agent.decider, "problems", [])
        elif self.scenario.registry is not None:
            out += self.scenario.registry.problems
        return out

    @property
    def live(self) -> bool:
        """False for a replay-only run (an imported trace): no engine to step or fork."""
        return self.agent is not None

    @property
    def cycle(self) -> int:
        return self.agent.cycle if self.agent is not None else self.last_cycle()

    @property
    def seed(self) -> int | None:
        return self.meta.get("seed")

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or "")

    @property
    def run_id(self) -> int:
        return int(self.meta["id"])

    def last_cycle(self) -> int:
        with self.lock:
            if self.agent is not None:  # a cycle part-way through its phases is not recorded yet
                return self.agent.cycle - (1 if self._cycle is not None else 0)
            return self.store.last_cycle(self.store.current())

    def finished(self) -> bool:
        return self.agent is None or self.agent.focus_goal() is None

    def subscribe(self, fn: Listener) -> None:
        """`fn` gets every cycle record and event as it happens (from the engine's thread)."""
        self._listeners.append(fn)

    def record(self, cycle: int) -> CycleRecord | None:
        """A recorded cycle of the branch shown (no engine call)."""
        with self.lock:
            return cast("CycleRecord | None", self.store.record(self.store.current(), cycle))

    def records(self, start: int = 1, end: int | None = None) -> list[CycleRecord]:
        with self.lock:
            return cast("list[CycleRecord]",
                        list(self.store.records(self.store.current(), start, end if end is not None else self.last_cycle())))

    def summaries(self, start: int = 1, end: int | None = None) -> list[CycleSummary]:
        """The plots' figures of cycles [start, end] of the branch shown (session.summaries):
        a page of a long branch, read without decoding whole records."""
        with self.lock:
            last = end if end is not None else self.last_cycle()
            return cast("list[CycleSummary]", list(self.store.summaries(self.store.current(), start, last)))

    def branch_events(self, kinds: tuple[str, ...] = ("reflection", "consolidation")) -> list[tuple[int, str]]:
        """(cycle, type) of the branch's events of these kinds, in order (the plots mark them)."""
        with self.lock:
            return [(c, str(e.get("type"))) for c, e in self.store.events(self.store.current()) if e.get("type") in kinds]

    def marks(self) -> dict[int, str]:
        with self.lock:
            return self.store.marks(self.store.current())

    def view(self, cycle: int | None = None, wm_rows: int = 40) -> View:
        """What the workbench draws: the live state (cycle None), or recorded cycle `cycle` as
        it was. One producer for both, so a pane cannot show live and replayed data differently."""
        with self.lock:
            if cycle is None and self.agent is not None:
                return self._live_view(wm_rows)
            c = cycle if cycle is not None else self.last_cycle()
            rec = self.store.record(self.store.current(), c)
            if rec is None:
                raise InputError(f"cycle {c} is not recorded (recorded: 1..{self.last_cycle()})", field="cycle")
            return self._recorded_view(rec)

    def _psyche_view(self, psyche: dict, cycle: int, vetoes: list[str] | None, biases: list[str] | None,
                     pending: bool, fired: int) -> dict:
        configured = next(((v, b) for c, v, b in reversed(self._patterns) if c <= cycle), (0, 0))
        return dict(psyche) | {
            "vetoes": vetoes, "biases": biases,  # names where known (live), else None
            "vetoes_configured": len(vetoes) if vetoes is not None else configured[0],
            "biases_configured": len(biases) if biases is not None else configured[1],
            "vetoes_fired": fired, "pending": pending,
        }

    def _live_view(self, wm_rows: int) -> View:
        a = self.agent
        assert a is not None
        focus = a.focus_goal()
        wm = a.wm
        ps = a.psyche
        return {
            "cycle": a.cycle,
            "seed": a.seed,
            "focus": focus.id if focus else None,
            "goals": [
                g.summary() | {"children": list(g.children), "fail_reason": g.fail_reason,
                               "attempt": g.attempt, "criteria": g.criteria, "missing": g.missing()}
                for g in sorted(a.goals.values(), key=lambda g: g.id)
            ],
            "plans": {gid: p.to_dict() for gid, p in a.plans.items()},
            "wm": {
                "capacity": wm.capacity, "size": len(wm), "pressure": wm.pressure,
                "entries": [{"id": e.id, "cycle": e.cycle, "kind": e.kind, "relevance": e.relevance,
                             "refs": e.reference_count, "content": e.content} for e in wm.recent(wm_rows)],
            },
            "episodes": len(a.episodic),
            # the model decider's structured working memory, as injected into its prompt
            "model_memory": a.decider.model_memory(600),
            "psyche": self._psyche_view(ps.snapshot(), a.cycle, [p.name for p in ps.shadow.veto_patterns],
                                        [p.name for p in ps.shadow.bias_patterns], a.pending_psyche is not None,
                                        self._vetoes_fired),
            "replay": False,
        }

    def _recorded_view(self, record: dict) -> View:
        """The view of a recorded cycle, from its record alone. What the record does not hold
        is left empty rather than guessed: criteria "", missing [] (but the focus goal's, which
        the record keeps), no fail reason, episodes 0, working memory limited to the entries
        the cycle observed, pattern names unknown (their counts come from the run's psyche
        edits)."""
        focus = record["goal"]["id"]
        plan = record.get("plan")
        children: dict[int, list[int]] = {}
        for g in record["goals"]:
            if g["parent"] is not None:
                children.setdefault(g["parent"], []).append(g["id"])
        goals = [
            dict(g) | {
                "children": sorted(children.get(g["id"], [])),
                "fail_reason": None,
                "attempt": plan["attempt"] if plan is not None and plan["goal"] == g["id"] else 0,
                "criteria": "",
                "missing": list(record["act"].get("missing", [])) if g["id"] == focus else [],
            }
            for g in sorted(record["goals"], key=lambda g: g["id"])
        ]
        size, capacity = record["wm"]["size"], record["wm"]["capacity"]
        fired = self.store.count_vetoes(self.store.current(), record["cycle"])
        return {
            "cycle": record["cycle"],
            "seed": self.meta.get("seed"),
            "focus": focus,
            "goals": goals,
            "plans": {plan["goal"]: plan} if plan is not None else {},
            "wm": {"capacity": capacity, "size": size, "pressure": size / capacity if capacity else 0.0,
                   "entries": _observed_entries(record)},
            "episodes": 0,
            "model_memory": None,
            "psyche": self._psyche_view(record["psyche"], record["cycle"], None, None, False, fired),
            "replay": True,
        }

    def goals(self) -> list[dict]:
        """The goals now, with coverage, criteria and why a failed one failed."""
        with self.lock:
            if self.agent is None:
                return []
            return [{**g.summary(), "coverage": g.coverage, "criteria": g.criteria, "fail_reason": g.fail_reason}
                    for g in sorted(self.agent.goals.values(), key=lambda g: g.id)]

    def find_goal(self, text: str) -> dict | None:
        """A goal by id or (newest first) by description."""
        with self.lock:
            a = self.agent
            if a is None:
                return None
            if text.isdigit() and int(text) in a.goals:
                return a.goals[int(text)].summary()
            for g in sorted(a.goals.values(), key=lambda g: -g.id):
                if g.description.lower() == text.strip().lower():
                    return g.summary()
            return None

    def goal_words(self, goal_id: int | None) -> str:
        """The labels of a goal's symbols: a query the graph can answer word for word."""
        with self.lock:
            a = self.agent
            g = a.goals.get(goal_id) if a is not None and goal_id is not None else None
            if g is None:
                return ""
            return " ".join(a.kg.label(s) for s in a.goal_symbols(g)) or g.description  # type: ignore[union-attr]

    def plan(self, goal_id: int) -> dict:
        """The goal's plan, made now (and recorded) if it has none."""
        with self.lock:
            a = self._engine()
            g = a.goals[goal_id]
            if goal_id not in a.plans:
                self.apply(MakePlan(goal_id))
            return {"goal": g.summary(), "flags": a.strategy_flags(g), "plan": a.plans[goal_id].to_dict(),
                    "steps": [{"marker": st.marker, "index": st.index, "tool": st.tool, "rationale": st.rationale}
                              for st in a.plans[goal_id].steps]}

    def recall(self, query: str, top_k: int) -> dict:
        with self.lock:
            a = self._engine()
            symbols = [sid for w in normalised_words(query) for sid in a.kg.by_key(w)]
            eps = a.episodic.recall(symbols, top_k)
            return {"query": query, "symbols": [a.kg.label(x) for x in symbols],
                    "episodes": [e.to_dict() | {"learnings": [a.kg.label(x) for x in e.learnings]} for e in eps]}

    def psyche_toml(self) -> str:
        with self.lock:
            a = self._engine()
            return (a.pending_psyche or a.psyche).to_toml()

    def current_psyche(self) -> Psyche:
        """A copy of the psyche the next cycle runs with (a pending edit included)."""
        with self.lock:
            a = self._engine()
            return (a.pending_psyche or a.psyche).copy()

    def check_breakpoints(self, breaks: list, field: str = "--break") -> list:
        """The breakpoints again through the one validator, with this run's tools (its plugins
        included): a tool name no tool of the run has is refused. Returns them."""
        names = self.tool_names()
        return [parse_breakpoint(bp.spec, field=field, tools=names) for bp in breaks]

    def tool_names(self) -> tuple[str, ...]:
        """The run's tools in score-table order: built-ins, then plugins."""
        if self.agent is not None:
            return self.agent.tool_names
        rec = self.latest
        if rec is not None:  # a replay: the tools its records scored
            return tuple(c["tool"] for c in rec["decide"]["candidates"])
        return TOOL_NAMES

    # ---- looking closer (issue 13) ---------------------------------------------------------
    def orient(self, goal_id: int | None = None, symbol: str | None = None) -> dict:
        """What Orient saw, now: for goal `goal_id` (default the focus goal) or from `symbol`.
        {"cycle", "goal", "symbols", "activation": {"nodes", "edges", "edges_read"}, "K",
        "adjacent", "added"} (engine/explain/orient.py). Only the neighbourhood is read.
        InputError for an unknown goal or symbol, or a replayed trace (no graph)."""
        from ..explain import orient as orient_view

        with self.lock:
            a = self._engine()
            try:
                return orient_view.orient(a, goal_id, symbol)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="symbol" if symbol is not None else "goal") from None

    def symbol(self, label: str) -> dict:
        """A symbol inspector: {"symbol", "kind", "triples" (each with provenance and, when
        inferred, its "derivation" tree), "total", "shown"} (engine/explain/orient.py)."""
        from ..explain import orient as orient_view

        with self.lock:
            a = self._engine()
            try:
                return orient_view.symbol_info(a, label)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="symbol") from None

    def why(self, cycle: int, tool: str | None = None) -> dict:
        """A recorded cycle's Decide explained from its record alone: {"cycle", "chosen",
        "why_chosen": lines, "tool", "why_not": engine/explain.why_not's dict or None,
        "lines": what to print (why_not_text for `tool`, else why_chosen)}. InputError for an
        unrecorded cycle or a tool that is not a candidate."""
        from ..explain.decision import why_not

        rec = self.record(cycle)
        if rec is None:
            raise InputError(f"cycle {cycle} is not recorded (recorded: 1..{self.last_cycle()})", field="--cycle")
        chosen = rec["decide"]["tool"]
        out: dict[str, Any] = {"cycle": cycle, "chosen": chosen, "why_chosen": why_chosen(dict(rec)), "tool": tool,
                               "why_not": None}
        if tool is None:
            out["lines"] = out["why_chosen"]
            return out
        try:
            out["why_not"] = why_not(dict(rec), tool)
        except KeyError as exc:
            raise InputError(str(exc.args[0]), field="--tool") from None
        out["lines"] = why_not_text(dict(rec), tool)
        return out

    def explain_goal(self, goal_id: int) -> dict:
        """Why goal `goal_id` is (not) done: each criterion found (cycle, tool, evidence) or
        missing (in the graph since when and from where; which tool and input would return it),
        and "lines", the explanation as text (engine/explain/goal.py)."""
        from ..explain.goal import explain_goal

        with self.lock:
            a = self._engine()
            files = list(self.scenario.kg) if self.scenario is not None else []
            g = a.goals.get(goal_id)
            # only the cycles of this goal and its sub-goals are read: a long run's others never are
            records = list(self.store.goal_records(self.store.current(), [goal_id, *g.children])) if g else []
            try:
                return explain_goal(a, records, goal_id, files)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="--goal") from None

    def synthesize(self, goal_id: int, grammar: str | None = None) -> dict:
        """A goal's findings (its evidence triples, never hypotheses) in a grammar: `narrative`,
        `formal`, `terse`, or a path to a grammar TOML; default the persona's
        `grammar_preference`. {"goal", "grammar", "facts", "text"} (engine/explain/findings.py).
        InputError names file, line and field of a bad grammar file."""
        from ..explain.findings import synthesize

        with self.lock:
            a = self._engine()
            if goal_id not in a.goals:
                raise InputError(f"no goal #{goal_id}", field="--goal")
            return synthesize(a, goal_id, grammar)

    def _engine(self) -> Agent:
        if self.agent is None:
            raise InputError("this run was imported from a trace: it can be replayed, not changed")
        return self.agent

    # ---- driving -----------------------------------------------------------------------------
    def step(self) -> CycleRecord | None:
        """One cycle (or the rest of the one in progress); None when no goal is active (and
        nothing ran), or when the cycle stopped part-way: before a phase of `stop_before`, or
        before act waiting for the user's decision (`in_cycle` and `waiting` say which)."""
        with self.lock:
            a = self._engine()
            if self._cycle is None and not self._gated() and not self.stop_before:
                record = a.step()  # the whole cycle at once: the same phases, one call
                events = a.drain_events()
                if record is None:
                    self._emit(events)
                    return None
                return self._recorded(record, events)
            ran = 0
            while True:
                if self._cycle is not None and ran and self._cycle.next_phase in self.stop_before:
                    return None
                if self.waiting is not None:  # still waiting for the user: nothing runs
                    self._ask_headless()
                    if self.waiting is not None:
                        return None
                out = self.step_phase()
                if out is None:
                    return None
                ran += 1
                if out["record"] is not None:
                    return out["record"]
                if out["waiting"] is not None:
                    return None

    @property
    def in_cycle(self) -> bool:
        """A cycle is part-way through its phases (not recorded yet)."""
        return self._cycle is not None

    @property
    def next_phase(self) -> str:
        """The phase the next step_phase runs (observe between cycles)."""
        c = self._cycle
        return c.next_phase or "observe" if c is not None else "observe"

    def phase_state(self) -> dict | None:
        """The cycle in progress: its number, the phases run and what each produced, the next
        phase, and what it waits for (None between cycles)."""
        with self.lock:
            c = self._cycle
            if c is None:
                return None
            return {"cycle": c.number, "results": dict(c.results), "next": c.next_phase, "waiting": self.waiting}

    def _gated(self) -> bool:
        return bool(self.approve_rules) or self.ask_user

    def _gate(self, c: Cycle) -> dict | None:
        """What the cycle must wait for before act, or None."""
        a = self._engine()
        decide = c.results["decide"]
        tool = decide["tool"]
        if c.number in a.verdicts or c.number in a.asked:
            return None
        rule = first_match(self.approve_rules, tool)
        if rule is not None:
            cand: dict = next((x for x in decide["candidates"] if x["tool"] == tool), {})
            return {"kind": "approve", "cycle": c.number, "tool": tool, "input": decide["input"],
                    "score": cand.get("score"), "rule": rule.spec, "goal": c.focus.description,
                    "why": why_chosen({"decide": decide})}
        if tool == "user_interact" and self.ask_user:
            return {"kind": "ask", "cycle": c.number, "tool": tool, "question": decide["input"],
                    "goal": c.focus.description}
        return None

    def step_phase(self) -> dict | None:
        """Run one phase of the cycle (a new one starts at observe) and return what it
        produced: {"cycle", "phase", "result", "next", "waiting", "record"}. `record` is set
        when the phase ended the cycle: only then are the store, the trace and the listeners
        told. Before act, an action the approval rules match (or a question for the person)
        waits: `waiting` says for what, and `decide_pending`/`answer_pending` (or the headless
        `approver`/`asker`) give it. None when no goal is active."""
        with self.lock:
            a = self._engine()
            if self._cycle is None:
                c = a.begin_cycle()
                if c is None:
                    self._emit(a.drain_events())
                    return None
                self._cycle, self._cycle_inputs, self.waiting = c, [], None
            c = self._cycle
            if c.next_phase == "act" and self.waiting is not None:
                self._ask_headless()
                if self.waiting is not None:
                    raise InputError(f"cycle {c.number} waits for your decision before act "
                                     f"({self.waiting['kind']} {self.waiting['tool']})", field="approval")
            phase = c.next_phase
            result = c.run_phase()
            out: dict = {"cycle": c.number, "phase": phase, "result": result, "next": c.next_phase,
                         "waiting": None, "record": None}
            if phase == "decide" and self._gated():
                self.waiting = self._gate(c)
                self._ask_headless()
                out["waiting"] = self.waiting
            if c.next_phase is None:
                record = c.finish()
                self._cycle = None
                out["record"] = self._recorded(record, a.drain_events(), self._cycle_inputs)
                self._cycle_inputs = []
            return out

    def _ask_headless(self) -> None:
        """A waiting cycle asks the headless callbacks, when the front end gave them."""
        w = self.waiting
        if w is None:
            return
        if w["kind"] == "approve" and self.approver is not None:
            v = self.approver(w)
            if self.waiting is not None:  # an approver may have decided itself (an accepted edit)
                self.decide_pending(v["decision"], v.get("input"), v.get("why"))
        elif w["kind"] == "ask" and self.asker is not None:
            self.answer_pending(self.asker(w))

    def decide_pending(self, decision: str, input: str | None = None, why: str | None = None) -> None:
        """The user's verdict on the action waiting for approval: approve, reject (a veto by the
        user) or edit (`input`: only one the tool could take from the goal; refused otherwise,
        and the action keeps waiting). Recorded with the cycle: replay and rewind reproduce it."""
        with self.lock:
            a, c, w = self._engine(), self._cycle, self.waiting
            if c is None or w is None or w["kind"] != "approve":
                raise InputError("no action is waiting for approval", field="approval")
            check_decision(decision)
            if decision == "edit":
                from ..cycle.deciders import back_intent

                text = (input or "").strip()
                edited, reason = back_intent(a, c.chosen, text)
                if edited is None:
                    raise InputError(f"edit refused: {reason}", field="input")
                if text and edited.input != text:  # back_intent lets these tools find their own input
                    raise InputError(f"edit refused: {c.chosen.tool} takes its input from the goal itself "
                                     f"({c.chosen.input!r}); it cannot be edited", field="input")
                input = edited.input
            verdict = Verdict(c.number, decision, input if decision == "edit" else None,
                              why or ("rejected by the user" if decision == "reject" else None))
            verdict.apply(a)
            self._cycle_inputs.append((verdict.kind, verdict.payload()))
            self.waiting = None

    def answer_pending(self, lines: list[str] | str | None) -> None:
        """The person's answer to the waiting `user_interact` question: `s p o` lines become
        triples; None or nothing is a skip ("no answer"). Recorded with the cycle."""
        with self.lock:
            a, c, w = self._engine(), self._cycle, self.waiting
            if c is None or w is None or w["kind"] != "ask":
                raise InputError("no question is waiting for an answer", field="answer")
            got = answer_lines(lines) if isinstance(lines, str) else list(lines or [])
            if isinstance(lines, list):
                answer_lines("\n".join(got))
            cmd = Answer(c.number, tuple(got))
            cmd.apply(a)
            self._cycle_inputs.append((cmd.kind, cmd.payload()))
            self.waiting = None

    def set_approval(self, specs: list[str] | None) -> list[str]:
        """Approval rules for the following cycles (None or []: off; a bad rule raises
        InputError and changes nothing). Returns the rules in force."""
        rules = parse_rules(specs or [], field="approve")
        with self.lock:
            self.approve_rules = rules
        return [r.spec for r in rules]

    def drop_cycle(self) -> bool:
        """Drop the cycle in progress: the agent is back at the last recorded state (what the
        store holds, so resume, fork and switch start from the cycle's start). False when no
        cycle was in progress."""
        with self.lock:
            if self._cycle is None:
                return False
            self._cycle, self._cycle_inputs, self.waiting = None, [], None
            st = self.store
            b, last = st.current(), st.last_cycle(st.current())
            agent = history.rewind(st, b, last, self._rebuild)
            from .commands import replay as replay_inputs

            replay_inputs(agent, st.inputs(b, last, last + 1).get(last, []))
            agent.drain_events()
            st.adopt(b, agent)
            self._adopt(agent)
            return True

    def _recorded(self, record: dict, events: list[dict], inputs: list | None = None) -> CycleRecord:
        """A whole cycle: to the store first (with the inputs given during it; a cycle that
        cannot be recorded is not kept in the engine either), then the trace and the listeners.
        The record is encoded once, for both sinks."""
        text = dumps(record)
        if registered_in(text):  # the API key in a record (a goal that quotes it): masked for every sink
            record = redact_obj(record)
            self._engine().last_record = record  # the snapshot names the record it holds
            text = dumps(record)
        lost: StoreLost | None = None
        try:
            self._record(record, events, inputs or (), text=text, inputs_before=True)
        except StoreLost as exc:
            lost = exc  # this cycle is durable: report it, then say writing stopped
        self.latest = cast(CycleRecord, record)
        if record["act"]["vetoed"]:
            self._vetoes_fired += 1
        if self.trace is not None:
            self.trace.write_line(text)
        self._emit(events, persist=False)
        for fn in self._listeners:
            fn(record)
        if lost is not None:
            raise lost
        return cast(CycleRecord, record)

    def run_cycles(self, max_cycles: int, on_record: Callable[[Any], None] | None = None,
                   should_stop: Callable[[Any], bool] | None = None) -> tuple[int, str]:
        """Up to max_cycles cycles. Returns (cycles run, why it stopped)."""
        n = 0
        while n < max_cycles:
            rec = self.step()
            if rec is None and self._cycle is not None:  # part-way: stopped before a phase
                if self.trace is not None:
                    self.trace.flush()
                why = f"waiting for a decision before act in cycle {self._cycle.number}" if self.waiting \
                    else f"stopped before {self._cycle.next_phase} in cycle {self._cycle.number}"
                return n, why
            if rec is None:
                return n, "no active goal"
            n += 1
            if on_record is not None:
                on_record(rec)
            if should_stop is not None and should_stop(rec):
                return n, "stopped"
        if self.trace is not None:
            self.trace.flush()
        return n, "max cycles" if not self.finished() else "no active goal"

    def apply(self, command: Command) -> list[Event]:
        """Apply a user's command between cycles and record it (rewind replays it). An
        InputError or ValueError changes nothing."""
        with self.lock:
            self.drop_cycle()  # a command between cycles: one in progress starts again after it
            a = self._engine()
            if isinstance(command, AddGoal):
                make_goal(0, command.description, command.criteria, command.priority)  # refuse before applying
                check_goal_url(command.description, "description")
            command.apply(a)
            events = a.drain_events()
            if isinstance(command, EditPsyche):
                self._patterns.append((a.cycle + 1, len(a.pending_psyche.shadow.veto_patterns),  # type: ignore[union-attr]
                                       len(a.pending_psyche.shadow.bias_patterns)))  # type: ignore[union-attr]
            self._emit(events, inputs=[(command.kind, command.payload())])
            return cast("list[Event]", events)

    def add_goal(self, description: str, criteria: str | None = None, priority: int = 128) -> dict:
        with self.lock:
            self.apply(AddGoal(description, criteria, priority))
            a = self._engine()
            return a.goals[a.next_goal_id - 1].summary()

    def edit_psyche(self, psyche: Psyche | str, source: str = "user") -> Psyche:
        """Validate first (an InputError changes nothing), apply at the next cycle."""
        p = Psyche.from_toml(psyche) if isinstance(psyche, str) else psyche
        self.apply(EditPsyche(p.to_toml(), source))
        return p

    def veto_tool(self, tool: str) -> bool:
        """Add a veto pattern for `tool` (applies at the next cycle). False, and nothing
        recorded, when the psyche already vetoes it."""
        with self.lock:
            a = self._engine()
            current = (a.pending_psyche or a.psyche).copy()
            updated = current.with_veto_for_tool(tool)
            if updated.to_toml() == current.to_toml():
                return False
            self.edit_psyche(updated, source=f"veto {tool} from the score table")
            return True

    def lift_veto(self, tool: str) -> bool:
        """Remove the veto `veto_tool` added for `tool` (applies at the next cycle). False, and
        nothing recorded, when the psyche has none (a veto of the psyche file is the editor's)."""
        with self.lock:
            a = self._engine()
            current = (a.pending_psyche or a.psyche).copy()
            updated = current.without_veto_for_tool(tool)
            if updated.to_toml() == current.to_toml():
                return False
            self.edit_psyche(updated, source=f"lift the veto of {tool} from the score table")
            return True

    def vetoes_on_goal(self, goal: int, upto: int) -> dict[str, int]:
        """How often each tool was chosen and vetoed (by the shadow or the user) on `goal` in
        cycles 1..upto of the branch shown."""
        with self.lock:
            upto = min(upto, self.last_cycle())  # a cycle not recorded yet is counted once it is
            branch = self.store.current()
            key = (self.run_id, branch, goal)
            done, counts = self._veto_tally.get(key, (0, {}))
            keep = upto >= done  # a replayed cycle before the counted ones is counted apart
            if done == 0 or not keep:  # from the start: only this goal's cycles are read
                done, counts = 0, {}
                recs: Iterator[dict] = self.store.goal_records(branch, [goal])
            else:  # the cycles since the last count (a frame's worth while the run goes on)
                counts = dict(counts)
                recs = iter(self.store.records(branch, done + 1, upto)) if upto > done else iter(())
            for rec in recs:
                if rec["cycle"] > upto:
                    break
                if rec["goal"]["id"] == goal and rec["act"]["vetoed"]:
                    tool = rec["decide"]["tool"]
                    counts[tool] = counts.get(tool, 0) + 1
            if keep:
                self._veto_tally[key] = (max(done, upto), counts)
            return counts

    def reflect(self) -> list[Event]:
        return self.apply(Reflect())

    def consolidate(self) -> ConsolidationEvent:
        event = self.apply(Consolidate())[-1]
        assert event["type"] == "consolidation"  # the command's own event comes last
        return event

    # ---- the psyche on disk ------------------------------------------------------------------
    def psyche_file(self) -> Path | None:
        """Where the workbench saves this run's psyche: under the data dir, per scenario (the
        next run of the scenario starts from it); in a served tab, under the data dir's served/
        folder (`Locations.saved_psyche`). A bundled scenario's own file is never written."""
        if self.scenario is None:
            return None
        return self._psyche_file or self.locations.saved_psyche(self.scenario.name)

    def save_psyche(self, psyche: Psyche | str, path: Path | None = None, force: bool = False) -> Path:
        """Write the psyche (keeping the user's comments), creating folders. A file that changed
        on disk since this run read or wrote it is not overwritten unless `force`."""
        p = Psyche.from_toml(psyche) if isinstance(psyche, str) else psyche
        target = Path(path) if path is not None else self.psyche_file()
        if target is None:
            raise InputError("a replayed trace has no psyche file to save to")
        served = self.locations.served_dir.resolve()
        if served_process() and served not in (target.resolve(), *target.resolve().parents):
            raise InputError(f"a served tab saves only under {served}, which runs outside `akh-tui serve` never "
                             f"read", file=str(target))
        known = self._psyche_disk.get(target)
        try:
            now = target.read_text(encoding="utf-8") if target.exists() else None
        except (OSError, UnicodeDecodeError):
            now = "\0unreadable"
        if now is not None and now != known and not force:
            raise PsycheFileChanged(
                "the file changed on disk since this run read or saved it: saving would overwrite it "
                "(save again to overwrite; your text is kept)", file=str(target))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            p.save(target)
        except OSError as exc:
            raise InputError(f"not saved: {exc.strerror or exc}", file=str(target)) from None
        self._psyche_disk[target] = target.read_text(encoding="utf-8")
        self._psyche_file = target
        return target

    # ---- time travel -------------------------------------------------------------------------
    def branches(self) -> list[dict]:
        with self.lock:
            return self.store.branches(self.run_id)

    def fork(self, cycle: int, name: str, edits: dict | None = None) -> ForkEvent:
        """Rewind to `cycle`, apply the edits and continue as branch `name` (now current)."""
        with self.lock:
            self._engine()
            self.drop_cycle()
            self.store.refuse_marked(self.store.current(), upto=cycle)  # never build on damage `sessions check` found
            agent, event = history.fork(self.store, self.store.current(), cycle, name, edits, self._rebuild,
                                        self._base_graph())
            self._adopt(agent)
            self._emit([event], persist=False)
            return cast(ForkEvent, event)

    def switch(self, branch: str | int) -> None:
        """Continue from another branch's newest state (the one left is checkpointed)."""
        with self.lock:
            self._engine()
            self.drop_cycle()  # the branch left keeps its last whole cycle
            a = self._engine()
            bid = branch if isinstance(branch, int) else self.store.find_branch(self.run_id, branch)
            self.store.checkpoint(a)
            self._adopt(history.resume(self.store, self._rebuild, bid))

    def rewind(self, cycle: int) -> View:
        """The engine state right after recorded `cycle` of the branch shown, as a view (the
        live run is not changed: fork continues from a rewound state)."""
        with self.lock:
            self._engine()
            # A rewind makes a whole agent and drops it, and nothing of it is in a reference
            # cycle (tests/engine/cycle/test_freed.py): reference counting frees it all. So the collector
            # is paused meanwhile: its passes over the heap, with nothing of the rewind's to
            # free, were the slowest rewinds (a full pass 20 ms on the demo).
            collecting = gc.isenabled()
            gc.disable()
            try:
                return self._rewound_view(cycle)
            finally:
                if collecting:
                    gc.enable()

    def _rewound_view(self, cycle: int) -> View:
        graphs = self._base_graph()
        agent = history.rewind(self.store, self.store.current(), cycle, self._rebuild, graphs)
        # a cycle that replayed differently from its record is named, never silent
        self.replay_divergence = agent.replay_divergence
        saved, self.agent = self.agent, agent
        try:
            return self._live_view(40)
        finally:
            self.agent = saved
            if graphs is not None:
                graphs.give_back(agent)  # only its view is kept: the next rewind reuses its graph

    def reset(self) -> None:
        """A new run of the same scenario, seed and decider in the same store."""
        with self.lock:
            self._engine()
            self.drop_cycle()
            a = self._engine()
            self.store.checkpoint(a)
            fresh = Run.start(self.locations, self.scenario, self.meta["seed"], self.meta.get("goals"),  # type: ignore[arg-type]
                              self.meta.get("decider", "utility"), store=self.store,
                              config=self.user_config, workbench=bool(self.meta.get("workbench")))
            fresh.agent.decider = a.decider  # type: ignore[union-attr]
            writelock.release(self._lock_file)
            self._lock_file, fresh._lock_file = fresh._lock_file, None
            self.meta, self.agent, self.latest = fresh.meta, fresh.agent, fresh.latest
            self._psyche_disk.update(fresh._psyche_disk)
            self.note = fresh.note
            self._after_open()

    def compare(self, a: str | int, b: str | int) -> dict:
        """history.compare of two branches of this run."""
        with self.lock:
            st = self.store
            ia = a if isinstance(a, int) else st.find_branch(self.run_id, a)
            ib = b if isinstance(b, int) else st.find_branch(self.run_id, b)
            return history.compare_branches(st, ia, ib) | {"a_name": st.branch_info(ia)["name"],
                                                           "b_name": st.branch_info(ib)["name"]}

    def search(self, query: str) -> list[dict]:
        """Cycles of the branch shown matching the search box's words (a bad word raises
        ValueError naming it)."""
        filters = parse_search(query, self.tool_names())
        with self.lock:
            return self.store.search(self.store.current(), **filters)

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


def _observed_entries(record: dict) -> list[dict]:
    """The working-memory entries a recorded cycle observed, oldest first. Their cycle is not
    recorded; every cycle pushes exactly one "Observe:" entry first, so counting those back
    from the newest entry (pushed in the previous cycle) dates each one. Reference counts are
    not recorded: 0."""
    recent = record["observe"]["recent"]
    out = []
    cycle = record["cycle"] - 1
    for e in reversed(recent):
        out.append({"id": e["id"], "cycle": max(cycle, 0), "kind": e["kind"],
                    "relevance": KIND_RELEVANCE.get(e["kind"], 0.5), "refs": 0, "content": e["content"]})
        if e["kind"] == "observation" and e["content"].startswith("Observe:"):
            cycle -= 1
    out.reverse()
    return out


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
