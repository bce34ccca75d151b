"""The timeline: replay of recorded cycles (read-only: no engine call), the scrubber, fork
from the cycle shown, the branches (switch, compare), breakpoints and the history search.
`akh-tui open FILE` replays a trace file the same way, with no engine at all.
"""

from __future__ import annotations

from ..engine import parse_breakpoint
from ..engine.records import ForkEvent
from .dialogs import guarded
from .host import WorkbenchHost
from .jobs import WAKE
from .travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, Scrubber, SearchScreen


class Timeline(WorkbenchHost):
    """The workbench's time travel: replay, seek, fork, branches, breakpoints, search."""

    @guarded
    def on_scrubber_seek(self, event: Scrubber.Seek) -> None:
        self._seek(event.cycle)

    def _seek(self, cycle: int | None) -> None:
        """Show recorded cycle `cycle` read-only (None, or the newest cycle when live: live)."""
        last = self.last_cycle()
        if cycle is not None:
            if last == 0:
                self.notify("nothing recorded yet: step first", markup=False)
                return
            cycle = min(max(cycle, 1), last)
            if cycle == last and self.live and self.replay is not None and cycle >= self.replay:
                cycle = None  # moving forward past the newest cycle: back to live
        if cycle is not None and self.running:
            self.running = False
            self._commands.put(WAKE)
        self.replay = cycle
        self._dirty = True
        if self.sync:
            self._drain()

    @guarded
    def action_replay_back(self, n: int = 1) -> None:  # not `back`: App's action_back pops a screen
        start = self.replay if self.replay is not None else self.last_cycle()  # live shows the newest
        self._seek(start - n)

    @guarded
    def action_replay_forward(self, n: int = 1) -> None:
        if self.replay is None:
            self.notify("live already: , goes back", markup=False)
            return
        self._seek(self.replay + n)

    @guarded
    def action_live(self) -> None:
        if not self.live:
            self.notify("a trace file has no live run", markup=False)
            return
        self._seek(None)

    def _read_only(self) -> bool:
        """True (and says so) when a past cycle is shown: the engine is not touched."""
        if self.replay is None:
            return False
        if self.trace_file is not None:  # not live: a trace file replayed
            self.notify(f"{self.trace_file.name} is a recorded trace: replay only", markup=False)
        else:
            self.notify(f"replaying cycle {self.replay} (read-only): l goes back to live, f forks a branch here",
                        markup=False)
        return True

    @guarded
    def action_fork(self) -> None:
        if not self.live:
            self.notify("a trace file has no engine state to fork from", markup=False)
            return
        cycle = self.replay if self.replay is not None else self.ctl.cycle
        rec = self.shown_record()
        archetypes = rec["psyche"]["archetypes"] if rec is not None and self.replay is not None \
            else self.ctl.view()["psyche"]["archetypes"]
        names = [b["name"] for b in self.ctl.branches()]
        self.push_screen(ForkScreen(cycle, archetypes, list(self.ctl.tool_names()), names,
                                    lambda name, edits: self.fork(cycle, name, edits)))

    def fork(self, cycle: int, name: str, edits: dict) -> ForkEvent:
        """Rewind to `cycle`, apply the edits, continue live on the new branch."""
        self.running = False
        event = self.ctl.fork(cycle, name, edits)  # a refusal (ValueError, InputError) reaches the dialog
        self._after_branch_change()
        return event

    def _after_branch_change(self) -> None:
        self.replay = None
        self.goals_pane.errors.clear()
        self.deltas = {}
        self.marks = self.ctl.marks()
        self._dirty = True
        if self.sync:
            self._drain()

    @guarded
    def action_branches(self) -> None:
        if not self.live:
            self.notify("a trace file has one branch", markup=False)
            return
        branches = self.ctl.branches()
        ids = {b["name"]: b["id"] for b in branches}

        def switch(name: str) -> None:
            self.running = False
            self.ctl.switch(ids[name])
            self.last_event = f"switched to branch {name} at cycle {self.ctl.cycle}"
            self._after_branch_change()

        def compare(a: str, b: str) -> None:
            self.push_screen(CompareScreen(a, b, self.ctl.compare(ids[a], ids[b])))

        self.push_screen(BranchesScreen(branches, switch, compare))

    @guarded
    def action_breakpoints(self) -> None:
        def change(specs: list[str]) -> None:
            parsed = [parse_breakpoint(b, field="breakpoint", tools=self.ctl.tool_names()) for b in specs]  # refuses a bad one
            self.breakpoint_specs, self._breaks = list(specs), parsed
            if self.live:
                self._apply_stops()  # phase=NAME breakpoints stop before that phase
            self._dirty = True

        self.push_screen(BreakpointsScreen(list(self.breakpoint_specs), change, self.config_breaks))

    @guarded
    def action_search(self) -> None:
        self.push_screen(SearchScreen(self.ctl.search, self._seek))
