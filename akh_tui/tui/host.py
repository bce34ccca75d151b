"""What the workbench's parts share, declared once for the checker.

The workbench (tui/app.py) is one Textual App put together from parts, one idea each: the
engine thread and its typed jobs (driver.py), drawing the frames (frames.py), the timeline of
replay, fork and branches (timeline.py), the live run's edits (edits.py), the views opened on
a goal or the run (views.py), the keys, help and palette (keys.py) and the cycle in phases
(phases.py). Each part is a mixin of `WorkbenchHost`: to the checker that is the App with the
state tui/app.py sets up and the methods one part calls on another; at run time it is a plain
class, so the App's message handlers and bindings are the Workbench's own.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from textual.widgets import Static

    from ..engine import Breakpoint, Locations, Run, UserConfig
    from ..engine.records import CycleRecord, Event, ForkEvent, PendingCycle, View
    from .jobs import CycleNews, EngineJob
    from .panes import GoalsPane, MemoryPane, PlanPane, PsychePane, ScoreTable, WhyPane
    from .phases import PhaseStepping
    from .state_edit import Staged
    from .travel import Scrubber
    from .watches import Watch, WatchStrip

    class WorkbenchHost(PhaseStepping):
        """(checker only) the workbench's state and the methods its parts call on each other."""

        # the run and the user's settings
        ctl: Run
        sync: bool
        user_config: UserConfig
        locations: Locations
        trace_file: Path | None
        scenario_name: str
        # what is shown: a replayed cycle (None: live), the timeline's marks, the status note
        replay: int | None
        marks: dict[int, str]
        last_event: str
        deltas: dict[str, float]
        psyche_draft: str | None
        staged_edits: list[Staged]
        edit_draft: str
        watches: list[Watch]
        watch_strip: WatchStrip
        # running, its speed, its stops
        running: bool
        speed_index: int
        until_change: tuple[tuple[int, str], ...] | None
        config_breaks: list[str]
        breakpoint_specs: list[str]
        _breaks: list[Breakpoint]
        breakpoint_hit: str | None
        keymap_refusals: list[str]
        # between the engine thread and the UI thread
        _inbox: list[CycleNews | Event]
        _inbox_record: CycleRecord | None
        _inbox_lock: threading.Lock
        _commands: queue.Queue[EngineJob | None]
        _stop: threading.Event
        _frame_drawn: threading.Event
        # frames
        _dirty: bool
        _ticks: int
        _frame: tuple[float, float, float, bool]
        _last_frame: tuple[float, float]
        _last_full: tuple[float, float | None]
        _status_view: View | None
        _status_lines: int
        cycles_drawn: int
        drawn: tuple[int, bool] | None
        _cursor_row: int | None
        _asking_why_not: bool
        _why_followed: tuple[int | None, str | None] | None
        # the main screen's panes (set on mount)
        goals_pane: GoalsPane
        plan_pane: PlanPane
        score_table: ScoreTable
        why_pane: WhyPane
        psyche_pane: PsychePane
        memory_pane: MemoryPane
        status_bar: Static
        scrubber: Scrubber

        @property
        def live(self) -> bool: ...

        # driver.py
        def _submit(self, cmd: EngineJob | Callable[[], None]) -> None: ...
        def _execute(self, cmd: EngineJob) -> None: ...
        def _on_engine_output(self, item: CycleRecord | Event) -> None: ...
        def _post_note(self, text: str) -> None: ...
        @staticmethod
        def _statuses(rec: CycleRecord) -> tuple[tuple[int, str], ...]: ...

        # frames.py
        def _drain(self) -> None: ...
        def _render_all(self, record: CycleRecord | None) -> None: ...
        def shown_record(self) -> CycleRecord | None: ...
        def last_cycle(self) -> int: ...
        def _replayed_errors(self, cycle: int) -> dict[int, list[float]]: ...
        def _vetoes(self, record: CycleRecord | PendingCycle | None) -> dict[str, int] | None: ...
        def _model_call(self, record: CycleRecord | PendingCycle | None) -> dict | None: ...

        # timeline.py
        def _seek(self, cycle: int | None) -> None: ...
        def _read_only(self) -> bool: ...
        def action_replay_forward(self, n: int = 1) -> None: ...
        def _after_branch_change(self) -> None: ...
        def fork(self, cycle: int, name: str, edits: dict) -> ForkEvent: ...

        # views.py
        def action_orient(self, goal_id: int | None = None) -> None: ...
        def open_findings(self, goal_id: int) -> None: ...

        # keys.py
        def _apply_keymap(self) -> None: ...
else:
    class WorkbenchHost:
        """(at run time) a plain base: each part's methods become the Workbench's."""
