"""The views the workbench opens over the run: a goal's detail (from the goals tree), a
working-memory entry, Orient's neighbourhood, the findings, the plots, the ThinkLoop, the
query console, the rule browser and the flow (goal tree and plans).
Each is loaded when first asked for (plotext with the plots)."""

from __future__ import annotations

from textual.widgets import OptionList, Tree

from .dialogs import guarded
from .host import WorkbenchHost
from .panes import MemoryList


class Views(WorkbenchHost):
    """The workbench's views over one goal or the whole run."""

    @guarded
    def on_tree_node_selected(self, event: Tree.NodeSelected[int]) -> None:
        if event.node.data is not None:
            self.open_goal(int(event.node.data))

    @guarded
    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if isinstance(event.option_list, MemoryList):
            from .dialogs import EntryScreen

            self.push_screen(EntryScreen(event.option_list.entries[event.option_index]))

    def open_goal(self, goal_id: int) -> None:
        from .goal_detail import GoalDetailScreen

        view = self.ctl.view(self.replay) if self.replay is not None else self.ctl.view()
        goal = next((g for g in view["goals"] if g["id"] == goal_id), None)
        if goal is None:
            return
        errors = (self._replayed_errors(self.replay) if self.replay is not None else self.goals_pane.errors).get(goal_id)
        self.push_screen(GoalDetailScreen(self.ctl, goal, view["plans"].get(goal_id), errors,
                                          lambda gid: self.action_orient(gid), self.open_findings))

    @guarded
    def action_orient(self, goal_id: int | None = None) -> None:
        if not self.live:
            self.notify("a trace file has no graph to show", markup=False)
            return
        from .orient_view import OrientScreen

        self.push_screen(OrientScreen(self.ctl, goal_id))

    def open_findings(self, goal_id: int) -> None:
        if not self.live:
            self.notify("a trace file has no graph to synthesise from", markup=False)
            return
        from .findings import FindingsScreen

        self.push_screen(FindingsScreen(self.ctl, goal_id))

    @guarded
    def action_plots(self) -> None:
        if self.last_cycle() == 0:
            self.notify("nothing recorded yet: step first", markup=False)
            return
        from .plots import PlotsScreen  # plotext is loaded when the plots are first asked for

        cursor = self.replay if self.replay is not None else self.last_cycle()
        self.push_screen(PlotsScreen(self.ctl, cursor, self._seek, sync=self.sync))

    @guarded
    def action_think(self) -> None:
        if self._read_only():
            return
        from .think_screen import ThinkScreen

        # the focus goal's symbols: the graph oracle matches label words exactly
        goal = self.ctl.goal_words(self.ctl.view()["focus"]) or "whale mammal"
        scenario = self.ctl.scenario
        if scenario is None:  # live runs have one; this guards the checker's view of it
            return
        self.push_screen(ThinkScreen(str(scenario.path), goal))

    @guarded
    def action_query(self) -> None:
        if not self.live:
            self.notify("a trace file has no graph to ask", markup=False)
            return
        from .query_screen import QueryScreen

        self.push_screen(QueryScreen(self.ctl, self.replay, watches=self.watches),
                         callback=lambda _: setattr(self, "_dirty", True))

    @guarded
    def action_rules(self) -> None:
        if not self.live:
            self.notify("a trace file has no rules to browse", markup=False)
            return
        from .rules_screen import RulesScreen

        self.push_screen(RulesScreen(self.ctl, self.replay))

    @guarded
    def action_flow(self) -> None:
        from .flow_screen import FlowScreen

        if self.replay is not None:
            self.push_screen(FlowScreen(self.ctl.view(self.replay), True, None))
        else:
            self.push_screen(FlowScreen(self.ctl.view(), False, self.ctl.view if self.live else None))
