"""The live run's edits from the main screen's keys: add a goal, edit the psyche, veto the
tool selected in the score table or lift that veto. Each is refused while a past cycle is
shown (fork from it instead)."""

from __future__ import annotations

from ..engine import AddGoal, Psyche
from .dialogs import AddGoalScreen, guarded
from .host import WorkbenchHost


class LiveEdits(WorkbenchHost):
    """The workbench's edits to the live run."""

    @guarded
    def action_add_goal(self) -> None:
        if self._read_only():
            return
        def add(desc: str, crit: str | None, prio: int) -> None:
            self.ctl.apply(AddGoal(desc, crit, prio))
            self._dirty = True

        self.push_screen(AddGoalScreen(add))

    @guarded
    def action_edit_psyche(self) -> None:
        if self._read_only():
            return
        from .psyche_editor import PsycheEditorScreen

        live = self.ctl.psyche_toml()
        screen = PsycheEditorScreen(self.psyche_draft or live, self.ctl.psyche_file(), self.apply_psyche,
                                    live_text=live, save=self.ctl.save_psyche)
        # an unapplied draft comes back on close and is reopened next time: nothing typed is lost
        self.push_screen(screen, callback=lambda draft: setattr(self, "psyche_draft", draft))

    def apply_psyche(self, psyche: Psyche, source: str = "editor") -> None:
        self.ctl.edit_psyche(psyche, source=source)
        self.psyche_draft = None
        self._dirty = True

    @guarded
    def action_veto_selected(self) -> None:
        if self._read_only():
            return
        tool = self.score_table.selected_tool()
        if tool is None:
            return
        if self.ctl.veto_tool(tool):
            self._dirty = True
            self.notify(f"Veto added for {tool}: it fires if {tool} is chosen from the next cycle on", markup=False)
        else:
            self.notify(f"{tool} is vetoed already: nothing changed", markup=False)

    @guarded
    def action_lift_veto_selected(self) -> None:
        if self._read_only():
            return
        tool = self.score_table.selected_tool()
        if tool is None:
            return
        if self.ctl.lift_veto(tool):
            self._dirty = True
            self.notify(f"Veto of {tool} lifted: it runs when chosen from the next cycle on", markup=False)
        else:
            self.notify(f"No veto added with v for {tool}: a psyche pattern is changed in the editor (e)",
                        markup=False)
