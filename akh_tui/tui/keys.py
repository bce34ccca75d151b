"""The workbench's keys: the user's keymap applied to the bindings, every binding with an id
(for the keymap check), the help (f1) and the command palette (ctrl+p), both read from each
binding's own tooltip."""

from __future__ import annotations

from typing import Callable, Iterable

from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.markup import escape as escape_markup
from textual.screen import Screen

from .dialogs import AddGoalScreen, HelpScreen, guarded
from .host import WorkbenchHost
from .panes import GoalsPane


class Keys(WorkbenchHost):
    """The workbench's keymap, help and palette."""

    def _apply_keymap(self) -> None:
        """The user's keymap, checked first (an unknown id, or a key that another binding of
        the same screen uses, is refused with the reason and shown on start). The main
        screen's bindings are rebuilt in their own order with the new keys, so a remapped key
        keeps its place on the footer (Textual's keymap appends it at the end, past the edge);
        the dialogs' ids go through Textual's keymap."""
        from textual.binding import BindingsMap

        defaults = {b.id: b.key for b in self.all_bindings() if b.id}
        self.keymap_refusals = self.user_config.check_keymap(defaults)
        keymap = self.user_config.keymap
        own = [b for b in self.BINDINGS if isinstance(b, Binding)]  # all of them (Textual also takes tuples)
        mine = {b.id for b in own}
        self._bindings = BindingsMap([b.with_key(keymap[b.id], key_display=None) if b.id in keymap else b
                                      for b in own])
        self.set_keymap({k: v for k, v in keymap.items() if k not in mine})

    @classmethod
    def all_bindings(cls) -> list[Binding]:
        """Every binding with an id: the main screen's, then each dialog's and view's."""
        from .dialogs import AddGoalScreen, EntryScreen, ErrorScreen, HelpScreen
        from .findings import FindingsScreen
        from .goal_detail import GoalDetailScreen
        from .orient_view import OrientScreen
        from .psyche_editor import PsycheEditorScreen
        from .flow_screen import FlowScreen
        from .query_screen import QueryScreen
        from .rules_screen import RulesScreen
        from .state_edit import StateEditScreen
        from .think_screen import ThinkScreen
        from .travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, SearchScreen

        out = list(cls.BINDINGS) + list(GoalsPane.BINDINGS)
        for screen in (GoalDetailScreen, OrientScreen, FindingsScreen, PsycheEditorScreen, ThinkScreen, AddGoalScreen,
                       QueryScreen, RulesScreen, StateEditScreen, FlowScreen,
                       ForkScreen, BranchesScreen, CompareScreen, BreakpointsScreen, SearchScreen, EntryScreen,
                       HelpScreen, ErrorScreen):
            out += [b for b in screen.BINDINGS if isinstance(b, Binding)]
        from .plots import PlotsScreen, ToolGrid  # loads plotext: only with a keymap, or for the help

        out += list(PlotsScreen.BINDINGS) + list(ToolGrid.BINDINGS)
        return [b for b in out if isinstance(b, Binding) and b.id]

    @guarded
    def action_help(self) -> None:
        from .findings import FindingsScreen
        from .goal_detail import GoalDetailScreen
        from .orient_view import OrientScreen
        from .plots import PlotsScreen, ToolGrid
        from .psyche_editor import PsycheEditorScreen
        from .flow_screen import FlowScreen
        from .query_screen import QueryScreen
        from .rules_screen import RulesScreen
        from .state_edit import StateEditScreen
        from .think_screen import ThinkScreen
        from .travel import BranchesScreen, BreakpointsScreen, CompareScreen, ForkScreen, SearchScreen

        keymap = self.user_config.keymap

        def rows(bindings: Iterable[BindingType]) -> list[tuple[str, str, str]]:
            out = []
            for b in bindings:
                if not isinstance(b, Binding):
                    continue
                keys = keymap.get(b.id, b.key) if b.id else b.key
                out.append((key_label(keys), b.tooltip or b.description, b.id or ""))
            return out

        ids = {b.id: b for b in self.BINDINGS if isinstance(b, Binding) and b.id}

        def key(bid: str) -> str:
            """The key that opens a view, as bound now (the headings said `p` for the plots' `P`)."""
            return key_label(keymap.get(bid, ids[bid].key))

        sections = [
            ("in the goals pane (tab or a click focuses it)", rows(GoalsPane.BINDINGS)),
            ("in the working-memory list", [("enter", "open the highlighted entry in full", "")]),
            ("in a goal's detail", rows(GoalDetailScreen.BINDINGS)),
            (f"in the Orient view ({key('orient')})", rows(OrientScreen.BINDINGS) + [("↑ / ↓", "move between nodes", "")]),
            ("in the findings", rows(FindingsScreen.BINDINGS)),
            (f"in the plots ({key('plots')})", rows(list(ToolGrid.BINDINGS) + list(PlotsScreen.BINDINGS))),
            (f"in the ThinkLoop view ({key('think')})", rows(ThinkScreen.BINDINGS)),
            (f"in the state editor ({key('edit_state')})", rows(StateEditScreen.BINDINGS)
             + [("enter", "stage the edit typed (checked; ctrl+z takes it back)", "")]),
            (f"in the flow ({key('flow')})", rows(FlowScreen.BINDINGS)),
            (f"in the query console ({key('query')})", rows(QueryScreen.BINDINGS) + [("enter", "ask the query typed", "")]),
            (f"in the rule browser ({key('rules')})", rows(RulesScreen.BINDINGS)
             + [("↑ / ↓", "move between rules", ""), ("enter", "(in the symbol box) why not for that symbol", "")]),
            (f"in the add-goal dialog ({key('add_goal')})", rows(AddGoalScreen.BINDINGS) + [("enter", "add the goal", "")]),
            (f"in the fork dialog ({key('fork')})", rows(ForkScreen.BINDINGS)),
            (f"in the branches list ({key('branches')})", rows(BranchesScreen.BINDINGS)),
            ("in the comparison", rows(CompareScreen.BINDINGS)),
            (f"in the breakpoints ({key('breakpoints')})", rows(BreakpointsScreen.BINDINGS) + [("enter", "add the breakpoint typed", "")]),
            (f"in the search ({key('search')})", rows(SearchScreen.BINDINGS) + [("enter", "jump to the highlighted hit", "")]),
        ]
        self.push_screen(HelpScreen(rows(self.BINDINGS),
                                    f"Remap any key in {self.user_config.path} under [keymap], e.g. step = \"n\".",
                                    rows(PsycheEditorScreen.BINDINGS), sections))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for b in self.BINDINGS:
            if not isinstance(b, Binding) or b.id in ("quit",):
                continue
            desc = b.tooltip or b.description
            # the palette reads a title as markup: "[approve]" was dropped as a style tag
            yield SystemCommand(escape_markup(desc[0].upper() + desc[1:]), f"key: {b.key}", self._runner(b.action))

    def _runner(self, action: str) -> Callable[[], object]:
        return lambda: self.call_later(self.run_action, action)


KEY_NAMES = {"equals_sign": "=", "plus": "+", "minus": "-", "comma": ",", "full_stop": ".", "less_than_sign": "<",
             "greater_than_sign": ">", "slash": "/"}


def key_label(keys: str) -> str:
    return ",".join(KEY_NAMES.get(k, k) for k in keys.split(","))
