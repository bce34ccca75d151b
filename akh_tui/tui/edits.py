"""The live run's edits from the main screen's keys: add a goal, edit the psyche, veto the
tool selected in the score table or lift that veto (each refused while a past cycle is shown:
fork from it instead), and edit the agent's state (`x`): live, applied before the next cycle;
at a replayed cycle, a fork from there with the edits."""

from __future__ import annotations

from pathlib import Path

from ..engine import AddGoal, InputError, PluginNotTrusted, Psyche, from_state_payload
from .dialogs import AddGoalScreen, ErrorScreen, guarded
from .host import WorkbenchHost
from .state_edit import Staged


WATCH_S = 1.0  # how often the workbench looks at the files a reload reads
REFUSED = "Reload refused: the running goals, rules, graph, psyche and plugin code are kept"


class LiveEdits(WorkbenchHost):
    """The workbench's edits to the live run."""

    _file_mtimes: dict[Path, int]

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
    def action_reload(self) -> None:
        """Hot reload (f5): the files the designer edits, in force from the next cycle and
        recorded; a broken file is shown with its file, line and field, and nothing changes.
        A plugin's new code from a folder not agreed now: the trust dialog asks first (trust,
        allow once, or reload the rest without it), as when the run was opened."""
        if self._read_only():
            return
        self._reload(None)

    def _reload(self, plugins: bool | None) -> None:
        try:
            words = self.ctl.reload(plugins=plugins)
        except PluginNotTrusted as exc:
            needs = self.ctl.reload_needs() if plugins is not False else []
            if not needs:
                self.push_screen(ErrorScreen(REFUSED, str(exc)))
                return
            from .trust_prompt import WITHOUT, TrustScreen, apply

            def answered(answer: str | None) -> None:
                if answer is None:
                    return  # quit the dialog: nothing reloaded
                try:
                    apply(answer, needs, self.locations, None)
                except InputError as err:
                    self.push_screen(ErrorScreen(REFUSED, str(err)))
                    return
                self._reload(False if answer == WITHOUT else None)

            self.push_screen(TrustScreen(needs, reloading=True), callback=answered)
            return
        except InputError as exc:
            self.push_screen(ErrorScreen(REFUSED, str(exc)))
            return
        self._dirty = True
        self.last_event = "; ".join(words)
        self.notify("\n".join(words), markup=False)

    def _watch_files(self) -> None:
        """Every WATCH_S: a file `reload` reads changed on disk since the last look (its
        modification time): say so once, and that f5 takes it. Nothing is applied unasked: a
        file half-way through its edits would be refused, and a reload is the user's input."""
        mtimes: dict[Path, int] | None = getattr(self, "_file_mtimes", None)
        first = mtimes is None
        if mtimes is None:
            mtimes = self._file_mtimes = {}
        changed: list[str] = []
        for p in self.ctl.reload_sources():
            try:
                m = p.stat().st_mtime_ns
            except OSError:
                continue  # gone for now: reload names it when asked
            if not first and mtimes.get(p) != m:
                changed.append(p.name)
            mtimes[p] = m
        if changed:
            self.notify(f"{', '.join(changed)} changed on disk: f5 reloads (in force from the next cycle)",
                        title="Files changed", timeout=8, markup=False)

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

    @guarded
    def action_edit_state(self) -> None:
        if not self.live:
            self.notify("a trace file has no engine state to edit", markup=False)
            return
        from .state_edit import StateEditScreen

        cycle = self.replay if self.replay is not None else self.ctl.cycle
        at = self.replay
        lines = ["goals (goal N status=… priority=… criteria=…):"]
        lines += ["  " + x for x in self.ctl.query("goals", at)["lines"]]
        lines += ["working memory, newest last (memory N drop · memory N = TEXT):"]
        lines += ["  " + x for x in self.ctl.query("memory", at, limit=500)["lines"][-12:]]

        def apply(staged: list[Staged], name: str) -> str:
            edits = [from_state_payload(kind, payload) for _line, kind, payload in staged]
            if at is None:
                done = self.ctl.edit_state(edits)
                self._dirty = True
                if self.sync:
                    self._drain()
                return "; ".join(done)
            event = self.fork(at, name, {"state": [[e.kind, e.payload()] for e in edits]})
            return f"branch {event['branch']} forked after cycle {at}: " + "; ".join(event["edits"])

        screen = StateEditScreen(cycle, at is not None, lines, self.staged_edits, apply, self.edit_draft)
        self.push_screen(screen, callback=lambda draft: setattr(self, "edit_draft", draft or ""))
