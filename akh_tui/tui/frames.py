"""Drawing the workbench: the inbox the engine thread fills is drained at most DRAIN_HZ
times a second into the panes, the status line and the timeline; at full speed the frames
are rationed so the engine keeps the core (below); the Why pane follows the score table's
cursor.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widgets import DataTable

from ..engine import event_words
from ..engine.records import CycleRecord, PendingCycle, View
from .dialogs import guarded, show_error
from .driver import SPEEDS, FRAME_WAIT
from .host import WorkbenchHost
from .panes import ERROR_WIDTH

DRAIN_HZ = 30  # at most this many redraws a second
# At full speed the frames share one core with the engine (the GIL): every CPU-millisecond the
# UI thread spends drawing is a millisecond the engine does not run. A frame of every pane costs
# tens of milliseconds of CPU (the panes, then Textual's compositor, measured once the screen is
# refreshed), most of it in Textual; the status line and the timeline cost about a tenth of that.
# So at full speed a frame is due at most every 6th tick (5 times a second): a full frame once the
# process has spent at least (the last full frame's cost / FRAME_SHARE) of CPU since it began,
# else a ticker frame of the status line and the timeline only, so the cycle counter keeps
# moving, once the process has spent (the last ticker frame's cost / FRAME_SHARE) since the last
# frame of either kind: each kind takes at most FRAME_SHARE of the CPU. CPU, not wall time: on a
# busy machine the process gets a fraction of a core, and frames paced by the wall clock took
# that fraction from the engine (the workbench ran at 0.54 of headless on a busy machine, 0.8 on
# a quiet one); paced by the process's CPU they keep their share whatever the load, and a busy
# machine sees fewer frames a second instead of a slower engine. The engine thread waits while
# either is drawn (at most FRAME_WAIT). Paused or stepping, every tick draws what changed, and a
# pause draws the newest cycle as soon as the engine stops.
FAST_FRAME_EVERY = 6
FRAME_SHARE = 0.025  # of the process's CPU, for each kind of frame
MAX_MARKS = 2000  # veto and fork marks kept for the timeline (it has about a hundred cells)
# the events the status line announces (a backtrack or a consolidation shows in its pane instead)
NEWS = ("fork", "reflection", "decomposition", "psyche_edit", "goal_added")
NARROW = 100  # under this many columns: the narrow layout (workbench.tcss `.-narrow`)


class Frames(WorkbenchHost):
    """The workbench's drawing: frames, the status line, the Why pane following the cursor."""

    def _measure_frame(self) -> None:
        """On the tick after a full-speed frame: what a full frame cost so far (it is measured
        again once Textual has drawn it, compositor included: `_frame_finished`)."""
        start_thread, start_cpu, start_wall, full = self._frame
        if full and self._last_full[1] is None:
            self._last_full = (start_cpu, time.thread_time() - start_thread)
        if not self._frame_drawn.is_set() and time.perf_counter() - start_wall > FRAME_WAIT:
            self._frame_drawn.set()  # the refresh callback never came: the engine must not wait on

    def _frame_finished(self) -> None:
        """(after the screen refresh of a full-speed frame) the frame's whole cost on the UI
        thread; the engine goes on."""
        start_thread, start_cpu, _, full = self._frame
        cost = time.thread_time() - start_thread
        if full:
            self._last_full = (start_cpu, cost)
            self._last_frame = (start_cpu, self._last_frame[1])  # a ticker frame waits from here
        else:
            self._last_frame = (start_cpu, cost)
        self._frame_drawn.set()

    def _frame_due(self) -> bool | None:
        """At full speed: None when no frame is due this tick, else whether a full frame is
        (False: a ticker frame; see FRAME_SHARE)."""
        if self._ticks % FAST_FRAME_EVERY:
            return None
        cpu = time.process_time()
        last_full, full_cost = self._last_full
        full = full_cost is not None and cpu - last_full >= full_cost / FRAME_SHARE
        last, cost = self._last_frame
        if not full and cpu - last < cost / FRAME_SHARE:
            return None  # the engine has not yet run long enough to pay for a frame
        self._frame = (time.thread_time(), cpu, time.perf_counter(), full)
        if full:
            self._last_full = (cpu, None)
        return full

    @guarded
    def _drain(self) -> None:
        self._ticks += 1
        self._measure_frame()
        full_speed = self.running and SPEEDS[self.speed_index] == 0
        full = self._frame_due() if full_speed else True
        if full is None:
            return
        if full_speed and not self.sync:
            # the engine thread waits until Textual has drawn this frame: taking turns at the GIL
            # every 5 ms made both sides slower (each switch costs its caches)
            self._frame_drawn.clear()
            if not self.call_after_refresh(self._frame_finished):  # closing: nothing will be drawn
                self._frame_drawn.set()
        with self._inbox_lock:
            items, self._inbox = self._inbox, []
            record, self._inbox_record = self._inbox_record, None
        if not items and not self._dirty:
            return
        if full:
            self._dirty = False
        for it in items:
            if isinstance(it, tuple):  # a cycle's news
                cycle, vetoed, signal = it
                self.cycles_drawn += 1
                self.goals_pane.add_signal(signal)
                if vetoed:
                    self.marks[cycle] = "!"
                    if len(self.marks) > MAX_MARKS:  # bounded: a long run must not grow the UI's memory
                        del self.marks[min(self.marks)]
            else:  # an event: one line in the status bar, worded where the CLI and reports word it
                if it["type"] == "reflection":
                    deltas: dict[str, float] = {}
                    for ch in it["psyche_changes"]:
                        if ch["kind"] == "archetype":
                            deltas[ch["archetype"]] = deltas.get(ch["archetype"], 0.0) + ch["new"] - ch["old"]
                    self.deltas = deltas
                if it["type"] in NEWS:
                    self.last_event = event_words(it)
        if self.breakpoint_hit is not None:
            self.notify(self.breakpoint_hit, title="Breakpoint", severity="warning", timeout=6, markup=False)
            self.breakpoint_hit = None
        if full:
            self._render_all(record)
        else:
            self._render_ticker()

    def shown_record(self) -> CycleRecord | None:
        """The record the panes show: the replayed one, or the newest."""
        if self.replay is not None:
            return self.ctl.record(self.replay)
        return self.ctl.latest

    def last_cycle(self) -> int:
        return self.ctl.last_cycle()

    def _render_all(self, record: CycleRecord | None) -> None:
        try:
            errors = None
            if self.replay is not None:
                record = self.shown_record()
                view = self.ctl.view(self.replay)
                last = self.last_cycle()
                deltas: dict[str, float] = {}
                errors = self._replayed_errors(self.replay)
            else:
                view = self.ctl.view(wm_rows=100)  # the memory list scrolls back over all of it
                # read right after the view: at full speed the engine thread runs on while a
                # frame is drawn, and the panes should all show the one cycle of the view
                latest, last = self.ctl.latest, self.last_cycle()
                record = latest if latest is not None else record
                deltas = self.deltas
            self._render_phases()
            pending = self._phase_record() if self.replay is None else None  # a cycle part-way: its decide
            self.screen_class()
            self.goals_pane.show(view, errors)
            self.plan_pane.show(view)
            self.score_table.show(pending or record)
            self.why_pane.show(pending or record, self.score_table.selected_tool(), self._vetoes(pending or record),
                               self._model_call(pending or record))
            self._follow_why(pending or record)
            pp = self.psyche_pane
            pp.deltas = deltas
            pp.show(view)
            mem = self.memory_pane
            mem.show(view, record, max(1, mem.size.height - 1) if mem.size.height else 8)
            self.scrubber.show(1 if last else 0, last, self.replay, self.marks)
            self.watch_strip.show(self.watches, self.replay is not None)
            self._render_status(view)
            self._status_view = view if self.replay is None else None
            self.drawn = (view["cycle"], self.running) if self.replay is None else None
            hook = getattr(self.screen, "on_workbench_update", None)
            if hook is not None:  # a view over the run (the findings) follows it
                hook()
        except Exception as exc:
            show_error(self, f"Drawing failed: {type(exc).__name__}", exc)

    def _render_ticker(self) -> None:
        """A ticker frame at full speed: the status line's cycle and the timeline move; the
        panes keep the last full frame's cycle until the next full frame."""
        if self._status_view is None or self.replay is not None:
            return
        last = self.last_cycle()
        self.scrubber.show(1 if last else 0, last, None, self.marks)
        self._render_status({**self._status_view, "cycle": last})

    def _replayed_errors(self, cycle: int) -> dict[int, list[float]]:
        """The goals' error sparklines as they stood at a replayed cycle (from its records)."""
        errors: dict[int, list[float]] = {}
        first = max(1, cycle - ERROR_WIDTH + 1)
        for rec in self.ctl.records(first, cycle):
            self.goals_pane.record(rec, errors)
        return errors

    def screen_class(self) -> None:
        # every pane's border turns to the warning colour while a past cycle is shown
        main = self.goals_pane.screen
        main.set_class(self.replay is not None, "-replay")

    def _render_status(self, view: View) -> None:
        t = self._status_text(view)
        note = self.last_event
        if note and note == self._phase_note[1] and self._phase_note[0] != (self.ctl.phase_state() or {}).get("cycle"):
            note = self.last_event = ""  # "act done, learn next" of a cycle that has finished
        width = self.status_bar.content_region.width
        wide = self.replay is None and self.size.width >= NARROW and width > 0
        if note and self.replay is None:  # the live run's news, not the replayed cycle's
            if not wide:
                t.append(f" · {note}", style="dim")  # narrow: a second row rather than lose it
            else:  # one row (a second took a row from the panes at 120 columns): the note before seed and speed
                if t.cell_len + 3 + len(note) > width:
                    t = self._status_text(view, compact=True)
                room = width - t.cell_len - 3
                if room >= 12:
                    t.append(" · " + (note if len(note) <= room else note[: room - 1] + "…"), style="dim")
        if wide:
            t.truncate(width, overflow="ellipsis")
        # a layout pass (a reflow of the whole screen: most of a ticker frame's cost) only when
        # the line's height can change: it wraps to a second line when it is wider than the bar
        lines = 1 if t.cell_len <= width and "\n" not in t.plain else 2
        relayout = lines != self._status_lines
        self._status_lines = lines
        self.status_bar.update(t, layout=relayout)

    def _status_text(self, view: View, compact: bool = False) -> Text:
        """The status line before its note; `compact` leaves out the seed, the speed and the
        breakpoint count (the note is worth more when both do not fit)."""
        done = sum(1 for g in view["goals"] if g["status"] == "completed" and g["parent"] is None)
        top = sum(1 for g in view["goals"] if g["parent"] is None)
        speed = SPEEDS[self.speed_index]
        t = Text()
        t.append(f" {self.scenario_name} ", style="bold reverse")
        if self.live:
            t.append(f" {self.ctl.branch_name}", style="bold magenta")
        t.append(" · cycle " if compact else f" · seed {view['seed']} · cycle ")
        if self.replay is not None:
            t.append(f" {self.replay} ", style="bold reverse yellow")
            t.append(f" of {self.last_cycle()} · ")
            t.append("REPLAY (read-only)", style="bold yellow")
            hint = "l live · f fork here" if self.live else "no engine: a trace file"
            # the hint goes whole to the second line when it does not fit (not "f fork" / "here")
            fits = t.cell_len + 3 + len(hint) <= self.status_bar.content_region.width
            t.append((" · " if fits else "\n ") + hint, style="dim")
        else:
            t.append(str(view["cycle"]), style="bold")
            t.append(" · ")
            t.append("▶ running" if self.running else "■ paused", style="bold green" if self.running else "bold yellow")
            t.append(f" · goals {done}/{top} done" if compact else f" · {'max' if speed == 0 else speed}/s · goals {done}/{top} done")
            if self.breakpoint_specs and not compact:
                t.append(f" · {len(self.breakpoint_specs)} breakpoint(s)")
            self._phase_status(t)
        return t

    def _model_call(self, record: CycleRecord | PendingCycle | None) -> dict | None:
        """How the model's answer for the record's cycle was got (replayed or live; the Why pane)."""
        cycle = record.get("cycle") if record is not None else None
        return self.ctl.model_call(cycle) if isinstance(cycle, int) else None

    def _vetoes(self, record: CycleRecord | PendingCycle | None) -> dict[str, int] | None:
        """How often each tool was vetoed on the record's goal up to its cycle (the Why pane)."""
        goal = record.get("goal") if record is not None else None
        if record is None or not isinstance(goal, dict):  # a cycle part-way is not recorded yet
            return None
        return self.ctl.vetoes_on_goal(goal["id"], record["cycle"])

    @guarded
    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # the table's own first highlight (row 0 on mount) is not a question the user asked
        last, self._cursor_row = self._cursor_row, event.cursor_row
        self._asking_why_not = self._asking_why_not or (last is not None and last != event.cursor_row)
        record = self.shown_record()
        self.why_pane.show(record, self.score_table.selected_tool(), self._vetoes(record), self._model_call(record))
        self._follow_why(record)

    def _follow_why(self, record: CycleRecord | PendingCycle | None) -> None:
        """Once the user has moved the score table's cursor, scroll the Why pane to the why-not
        of the tool under it (to its top for the chosen one) when the tool or the cycle changes,
        not every frame: the user's own scrolling stays where it is."""
        if not self._asking_why_not:
            return
        key = (record.get("cycle") if record else None, self.score_table.selected_tool())
        if key == self._why_followed:
            return
        self._why_followed = key
        box, line = self.query_one("#why-box"), self.why_pane.question_at
        self.call_after_refresh(lambda: box.scroll_to(y=line, animate=False))
