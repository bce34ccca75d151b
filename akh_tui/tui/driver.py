"""The engine thread and what drives it: the typed job queue (jobs.py), the cycles it runs
and where a run stops (a breakpoint, a goal's status changed, a phase stop), what it leaves
for the UI (an inbox drained by frames.py), and the keys that step, run, pause, change the
speed and reset.

Data flows one way: the engine thread runs cycles and leaves their records in the inbox;
user intent goes to it as jobs. `sync=True` runs jobs on the UI thread instead, which makes
snapshot tests deterministic.
"""

from __future__ import annotations

import queue
from typing import Callable

from textual import work
from textual.message import Message

from ..engine import StoreWriteError, first_hit
from ..engine.records import CycleRecord, Event
from .dialogs import guarded, show_error
from .host import WorkbenchHost
from .jobs import CYCLE, STEP, WAKE, Call, Cycle, CycleNews, EngineJob, Step, Wake
from .panes import GoalsPane
from .watches import update as update_watches

SPEEDS = (1, 2, 5, 10, 20, 50, 100, 0)  # cycles per second; 0 = as fast as the engine goes
FRAME_WAIT = 0.2  # seconds the engine waits at most for a frame to be drawn (never stuck on one)


class EngineDriver(WorkbenchHost):
    """The workbench's engine thread, its job queue and the run-control keys."""

    @work(thread=True, exclusive=True, group="engine")
    def _engine_loop(self) -> None:
        while not self._stop.is_set():
            speed = SPEEDS[self.speed_index]
            timeout = None if not self.running else (0 if speed == 0 else 1 / speed)
            try:
                cmd = self._commands.get(timeout=timeout) if timeout != 0 else self._commands.get_nowait()
            except queue.Empty:
                cmd = CYCLE if self.running else None
            if cmd is None:
                continue
            if isinstance(cmd, Cycle) and speed == 0:
                # a frame is being drawn: let it have the core (see frames.FRAME_SHARE)
                self._frame_drawn.wait(FRAME_WAIT)
            self._execute(cmd)

    class DrawNow(Message):
        """The engine thread has stopped (a pause reached it after its last cycle): draw the
        newest cycle now rather than at the next tick."""

    def on_engine_driver_draw_now(self, message: DrawNow) -> None:
        self._drain()

    def _execute(self, cmd: EngineJob) -> None:
        if isinstance(cmd, Wake):  # only interrupts the wait between cycles
            self._dirty = True
            if not self.running and not self.sync:
                self.post_message(self.DrawNow())  # thread-safe
            return
        try:
            if isinstance(cmd, Call):
                cmd.fn()
            else:  # Step or Cycle
                if isinstance(cmd, Cycle) and not self.running:
                    return
                previous = self.ctl.latest
                rec = self.ctl.step()
                hit = first_hit(self._breaks, rec, previous) if rec is not None and self._breaks else None
                if rec is None and self.ctl.in_cycle:  # part-way: before a chosen phase, or waiting
                    self._stopped_mid_cycle()
                elif rec is None:
                    self.running = False
                    self._post_note("no active goal: the run is finished (g adds a goal, ctrl+r resets)")
                elif hit is not None:
                    self.running = False
                    self.until_change = None
                    self.breakpoint_hit = f"cycle {rec['cycle']}: {hit}"
                    self._post_note(f"paused at {self.breakpoint_hit}")
                elif "observe" in self.ctl.stop_before:  # "stop before observe": after every cycle
                    self._stopped_between_cycles(rec)
                elif self.until_change is not None and self._statuses(rec) != self.until_change:
                    self.running = False
                    self.until_change = None
                    self._post_note(f"paused at cycle {rec['cycle']}: a goal's status changed")
                if rec is not None and self.watches:
                    changed = update_watches(self.ctl, self.watches, rec["cycle"])
                    if changed is not None and self.breakpoint_hit is None:
                        self.running = False
                        self.until_change = None
                        self.breakpoint_hit = f"cycle {rec['cycle']}: {changed}"
                        self._post_note(f"paused at {self.breakpoint_hit}")
        except Exception as exc:  # an engine bug is shown, never a crash
            self.running = False  # at once: the engine thread must not try the next cycle
            title = f"The engine raised {type(exc).__name__}; the run is paused."
            if isinstance(exc, StoreWriteError):  # disk full...: the engine went back to the last recorded cycle
                title = "The session store could not record the cycle; the run is paused (nothing recorded is lost)."
            if self.sync:
                show_error(self, title, exc)
            else:
                self.call_from_thread(show_error, self, title, exc)
        self._dirty = True

    def _submit(self, cmd: EngineJob | Callable[[], None]) -> None:
        """Run a job on the engine thread (a function is wrapped in a Call); `sync` runs it
        here and draws at once."""
        if not isinstance(cmd, (Step, Cycle, Wake, Call)):
            cmd = Call(cmd)
        if self.sync:
            self._execute(cmd)
            self._drain()
        else:
            self._commands.put(cmd)

    def _on_engine_output(self, item: CycleRecord | Event) -> None:
        if item["type"] == "cycle":
            news = self._cycle_news(item)
            with self._inbox_lock:
                self._inbox.append(news)
                self._inbox_record = item
        else:
            with self._inbox_lock:
                self._inbox.append(item)

    @staticmethod
    def _cycle_news(rec: CycleRecord) -> CycleNews:
        """What the UI keeps of a cycle record it does not draw: (cycle, vetoed, the goals'
        error signal)."""
        return rec["cycle"], bool(rec["act"]["vetoed"]), GoalsPane.signal(rec)

    def _post_note(self, text: str) -> None:
        self.last_event = text

    @staticmethod
    def _statuses(rec: CycleRecord) -> tuple[tuple[int, str], ...]:
        return tuple((g["id"], g["status"]) for g in rec["goals"])

    # ---- run control: step, run, pause, speed, reset ----------------------------------------
    @guarded
    def action_step(self) -> None:
        if self.replay is not None:  # stepping a replay moves through the recorded cycles
            self.action_replay_forward(1)
            return
        if self.running:
            self.running = False
            self._dirty = True
            return
        self._submit(STEP)

    @guarded
    def action_toggle_run(self) -> None:
        if self._read_only():
            return
        self.running = not self.running
        self.until_change = None
        self._dirty = True
        if self.running:
            self._submit(CYCLE)
        else:
            self._commands.put(WAKE)  # interrupts the inter-cycle wait at once

    @guarded
    def action_faster(self) -> None:
        self.speed_index = min(len(SPEEDS) - 1, self.speed_index + 1)
        self._dirty = True

    @guarded
    def action_slower(self) -> None:
        self.speed_index = max(0, self.speed_index - 1)
        self._dirty = True

    @guarded
    def action_run_until_change(self) -> None:
        if self._read_only():
            return
        rec = self.ctl.latest
        self.until_change = self._statuses(rec) if rec else tuple((g["id"], g["status"]) for g in self.ctl.view()["goals"])
        self.running = True
        self._submit(CYCLE)

    @guarded
    def action_reset(self) -> None:
        if not self.live:
            self.notify("a trace file has no engine to reset", markup=False)
            return

        def reset() -> None:
            self.ctl.reset()  # a new run in the same store
            self.marks = self.ctl.marks()
            self.deltas = {}
            self.replay = None
            self.last_event = "scenario reset (a new run)"

        self.running = False
        self.goals_pane.errors.clear()
        self._submit(reset)
