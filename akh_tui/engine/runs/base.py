"""What every part of `Run` holds (run.py's constructor sets it): typed once here, so each part
(view.py, phases.py, driving.py, psyche_file.py, travel.py) is checked against the same state
without importing the door, and the door is the one class that puts the parts together."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..cycle.agent import Agent, Cycle
    from ..knowledge.kg import KnowledgeGraph
    from ..paths import Locations
    from ..psyche.model import Psyche
    from ..records import CycleRecord, Event, View
    from ..store.session import SessionStore
    from ..store.trace import TraceWriter
    from .approval import Rule
    from .basegraph import BaseGraph
    from .breakpoints import Breakpoint
    from .commands import Command
    from .scenario import Scenario
    from .userconfig import UserConfig

Listener = Callable[[Any], None]  # gets each CycleRecord and Event


class RunBase:
    """The state of one run (see Run.__init__ for what each means)."""

    locations: Locations
    store: SessionStore
    scenario: Scenario | None
    agent: Agent | None
    meta: dict
    trace: TraceWriter | None
    user_config: UserConfig | None
    note: str
    lock: threading.RLock
    latest: CycleRecord | None
    _listeners: list[Listener]
    _psyche_disk: dict[Path, str | None]
    _plugin_disk: dict[str, str]
    start_changed: list[str]
    _psyche_file: Path | None
    _patterns: list[tuple[int, int, int]]
    _vetoes_fired: int
    _previous_branch: int | None
    _veto_tally: dict[tuple[int, int, int], tuple[int, dict[str, int]]]
    _lock_file: Path | None
    _frozen: int | None
    _cycle: Cycle | None
    _cycle_inputs: list[tuple[str, Any]]
    waiting: dict | None
    stop_before: set[str]
    approve_rules: list[Rule]
    approver: Callable[[dict], dict] | None
    ask_user: bool
    asker: Callable[[dict], list[str] | None] | None
    _unconfined: tuple[str, ...] | None
    replay_divergence: str | None = None  # what the last rewind found replaying differently

    if TYPE_CHECKING:  # what one part calls of another (each defined once, in the module named)
        # run.py
        @classmethod
        def start(cls, locations: Locations, scenario: str | Scenario = "zoo", seed: int | None = None,
                  goals: list[str] | None = None, decider: str | None = None,
                  trace: str | Path | IO[str] | None = None, store: str | Path | SessionStore | None = None,
                  config: UserConfig | None = None, workbench: bool = False, note: str = "",
                  psyche: Psyche | None = None, breaks: Sequence[Breakpoint] = ()) -> RunBase: ...
        def _rebuild(self, kg: KnowledgeGraph | None = None) -> Agent: ...
        def _emit(self, events: list[dict], persist: bool = True, inputs: list | None = None) -> None: ...
        def _base_graph(self) -> BaseGraph | None: ...
        def _adopt(self, agent: Agent) -> None: ...
        def _after_open(self) -> None: ...
        def _live_decider(self) -> Any: ...
        def _record(self, record: Mapping[str, Any] | None, events: list[dict], inputs: list | tuple = (),
                    input_events: bool = False, text: str | None = None, inputs_before: bool = False) -> None: ...
        # view.py
        def _engine(self) -> Agent: ...
        @property
        def run_id(self) -> int: ...
        def tool_names(self) -> tuple[str, ...]: ...
        def _live_view(self, wm_rows: int) -> View: ...
        def last_cycle(self) -> int: ...
        def finished(self) -> bool: ...
        # phases.py
        def drop_cycle(self) -> bool: ...
        def step_phase(self) -> dict | None: ...
        def _gated(self) -> bool: ...
        def _ask_headless(self) -> None: ...
        # driving.py
        def apply(self, command: Command) -> list[Event]: ...
        def _recorded(self, record: dict, events: list[dict], inputs: list | None = None) -> CycleRecord: ...
