"""Driving a run: whole cycles, user input as command objects (applied and recorded so a rewind replays
them), vetoes from the score table: a part of `Run` (run.py), the one door to a run."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence, cast

from pathlib import Path

from .commands import (AddGoal, Command, Consolidate, EditPsyche, Reflect, ReloadDecider, ReloadGoals, ReloadPlugin,
                       ReloadRules, ReloadTriples, StateEdit, StateEditError)
from ..errors import InputError, StoreLost, read_user_file
from ..goals.goal import make_goal
from ..knowledge.kg import KnowledgeGraph, ParsedTriple, read_triple_files
from ..psyche.model import Psyche
from ..records import ConsolidationEvent, CycleRecord, Event
from ..tools.builtins import check_goal_url
from ..tools import trust
from ..tools.hotload import PluginSource, make_decider, make_tools, read_source
from ..tools.registry import PluginError
from .scenario import file_sha256, read_goals
from ..redaction import redact_obj, registered_in
from ..store.trace import dumps
from .base import RunBase


def _new_facts(kg: KnowledgeGraph, parsed: list[ParsedTriple]) -> list[tuple[str, str, str, float]]:
    """The parsed triples the graph does not hold, once each, in file order."""
    out: dict[tuple[str, str, str], float] = {}
    for t in parsed:
        s, p, o = kg.lookup(t.subject), kg.lookup(t.predicate), kg.lookup(t.object)
        if s is None or p is None or o is None or kg.get(s, p, o) is None:
            out.setdefault((t.subject, t.predicate, t.object), t.confidence)
    return [(s, p, o, c) for (s, p, o), c in out.items()]


class Driving(RunBase):
    """Driving a run."""

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
        self._tally_live(record)
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
        return self._applied(command)[1]

    def _applied(self, command: Command) -> tuple[list[str], list[Event]]:
        """`apply`, with what changed in words."""
        with self.lock:
            self.drop_cycle()  # a command between cycles: one in progress starts again after it
            a = self._engine()
            if isinstance(command, AddGoal):
                make_goal(0, command.description, command.criteria, command.priority)  # refuse before applying
                check_goal_url(command.description, "description")
            words = command.apply(a)
            events = a.drain_events()
            if isinstance(command, EditPsyche):
                self._patterns.append((a.cycle + 1, len(a.pending_psyche.shadow.veto_patterns),  # type: ignore[union-attr]
                                       len(a.pending_psyche.shadow.bias_patterns)))  # type: ignore[union-attr]
            self._emit(events, inputs=[(command.kind, command.payload())])
            return words, cast("list[Event]", events)

    def edit_state(self, edits: Sequence[StateEdit]) -> list[str]:
        """State edits between cycles (a triple, a goal, a working-memory entry): all checked
        against the agent first (StateEditError naming the field: nothing changed), then each
        applied and recorded as an input (rewind, resume and export replay it). What changed,
        in words."""
        with self.lock:
            self.drop_cycle()
            a = self._engine()
            for i, e in enumerate(edits, 1):
                try:
                    e.check(a)
                except StateEditError as exc:
                    exc.index = i
                    raise
            words: list[str] = []
            for e in edits:
                words += e.apply(a)
                self._emit(a.drain_events(), inputs=[(e.kind, e.payload())])
            return words

    def add_goal(self, description: str, criteria: str | None = None, priority: int = 128) -> dict:
        with self.lock:
            self.apply(AddGoal(description, criteria, priority))
            a = self._engine()
            return a.goals[a.next_goal_id - 1].summary()

    def edit_psyche(self, psyche: Psyche | str, source: str = "user") -> Psyche:
        """Validate first (an InputError changes nothing), apply at the next cycle."""
        p = Psyche.from_toml(psyche) if isinstance(psyche, str) else psyche
        self.apply(EditPsyche(p.to_toml(), source, p))
        return p

    def reload(self, rules_files: bool | None = None, psyche_file: bool | None = None,
               plugins: bool | None = None) -> list[str]:
        """Hot reload (issue 28 §2): the scenario's goals, rule files, triple files and plugin
        modules (its tools' and its decider's) and the run's psyche file read again, in force
        from the next cycle, each a recorded command holding what it read (a rewind replays it
        without the files). Every
        file is read and checked first, a plugin's new code imported and its tools checked: a
        broken one raises InputError naming its file, line and field (PluginNotTrusted naming
        the folder of a plugin not agreed now), and nothing changes (the running goals, rules,
        graph, psyche and plugin code stay). The rules are reloaded when they differ from
        those in force; triples the graph lacks are added (a reload never removes one); the
        goals when the file's differ from the run's (commands.ReloadGoals says how); the
        psyche when its file changed since this run read or wrote it (a psyche the run evolved
        is not reset by a reload that only meant the rules); a plugin module when its file
        differs from the code the run uses (the source it last reloaded, else the file as the run
        started: `built_from`). `rules_files`, `psyche_file`, `plugins`: True takes those files
        whatever they hold, False never, None when changed (a process that opened the run just
        now, `agent reload`, cannot know what the rules held before: a resumed run's scenario
        rules are read from the files as they are). What changed, in words."""
        with self.lock:
            sc = self.scenario
            if sc is None:
                raise InputError("this run has no scenario files to reload (a replayed trace)")
            a = self._engine()
            rules = ReloadRules(tuple((str(p), read_user_file(p, "rule file")) for p in sc.rules)
                                if rules_files is not False else ())
            new_rules = rules.ruleset()
            triples = ReloadTriples(tuple(_new_facts(a.kg, read_triple_files(sc.kg))))
            psyche_path = self._psyche_source()
            psyche: Psyche | None = None
            psyche_text = None
            if psyche_path is not None and psyche_file is not False:
                psyche_text = read_user_file(psyche_path, "psyche file")
                if psyche_file or psyche_text != self._psyche_disk.get(psyche_path):
                    psyche = Psyche.from_toml(psyche_text, file=str(psyche_path))
                    psyche.source = str(psyche_path)
            goals: ReloadGoals | None = None
            if a.scenario_goals is not None:
                _, specs = read_goals(sc.path)
                goals = ReloadGoals(str(sc.path), tuple((g.description, g.criteria, g.priority) for g in specs))
                if not goals.changes(a):
                    goals = None
            modules: list[ReloadPlugin] = []
            for ref in sc.tools if plugins is not False else ():
                src = read_source(ref, sc.path.parent)
                taken = a.pending_plugins[ref][1] if ref in a.pending_plugins else a.plugin_sources.get(ref)
                if src is None or not (plugins or self._plugin_changed(src, taken)):
                    continue
                made = make_tools(src)  # its folder agreed, its new code imported and its tools valid, or refused
                try:
                    a.tools.check_replacement(ref, made)
                except PluginError as exc:
                    raise InputError(f"plugin {ref} not reloaded: {exc}; the run keeps its old code", file=src.file,
                                     field="tools") from None
                modules.append(ReloadPlugin(src))
            decider: ReloadDecider | None = None
            ref = str(self.meta.get("decider") or "")
            if plugins is not False and ":" in ref:  # the run's decider is a scenario module's
                src = read_source(ref, sc.path.parent)
                taken = a.pending_decider[1] if a.pending_decider is not None else a.decider_source
                if src is not None and (plugins or self._plugin_changed(src, taken)):
                    make_decider(src)  # its folder agreed, its new code imported and a decider, or refused
                    decider = ReloadDecider(src)
            # all read and valid: now the changes, each recorded
            words: list[str] = []
            in_force = a.pending_rules[0] if a.pending_rules is not None else a.rules.ruleset
            if sc.rules and (rules_files or (rules_files is None and new_rules != in_force)):  # none: nothing to read
                self.apply(rules)
                words.append(f"rules reloaded from {', '.join(Path(n).name for n, _ in rules.files)}: "
                             f"in force from cycle {a.cycle + 1}")
            if triples.triples:
                self.apply(triples)
                words.append(f"{len(triples.triples)} new triple(s) from "
                             f"{', '.join(p.name for p in sc.kg)} added")
            if psyche is not None and psyche_path is not None:
                self.apply(EditPsyche(psyche.to_toml(), "reload", psyche))
                self._psyche_disk[psyche_path] = psyche_text
                words.append(f"psyche reloaded from {psyche_path.name}: in force from cycle {a.cycle + 1}")
            if goals is not None:
                changed, _ = self._applied(goals)
                words.append(f"goals reloaded from {sc.path.name}: {'; '.join(changed)}: "
                             f"in force from cycle {a.cycle + 1}")
            for cmd in modules:
                words += self._applied(cmd)[0]
            if decider is not None:
                words += self._applied(decider)[0]
            return words or ["nothing to reload: the scenario's goals and its rule, triple, psyche and plugin files "
                             "are as the run has them"]

    def reload_needs(self) -> list[trust.PluginNeed]:
        """The folders of the scenario's plugin modules this process may not run code from
        now (a reload refused with PluginNotTrusted: the workbench asks about them). None in a
        served tab: it never imports a scenario's own code, so it never asks."""
        if trust.current().served:
            return []
        sc = self.scenario
        decider = str(self.meta.get("decider") or "")
        refs = [*sc.tools, *([decider] if ":" in decider else [])] if sc is not None else []
        if sc is None or not refs:
            return []
        return [n for n in trust.needs(refs, sc.path.parent) if not n.trusted]

    def _plugin_changed(self, src: PluginSource, taken: dict | None) -> bool:
        """Whether the plugin module `src` was read from holds other code than this run uses:
        `taken`, the source it last reloaded (a recorded payload), else the file as the run
        started (its hash in the run's `built_from`), else as this process opened the run."""
        if taken is not None:
            return src.sha256 != taken["sha256"]
        started = dict(f for f in (self.meta.get("built_from") or {}).get("files") or () if len(f) == 2)
        if src.file in started:
            return file_sha256(src.file) != started[src.file]
        return src.sha256 != self._plugin_disk.get(src.ref)

    def _note_plugin_sources(self) -> None:
        """The scenario's plugin modules as this run opened them: f5 reloads one only when its
        file changed since."""
        sc = self.scenario
        decider = str(self.meta.get("decider") or "")
        for ref in [*sc.tools, *([decider] if ":" in decider else [])] if sc is not None else []:
            try:
                src = read_source(ref, sc.path.parent)  # type: ignore[union-attr]
            except InputError:
                continue  # unreadable now: a reload reads it then and says why
            if src is not None:
                self._plugin_disk.setdefault(ref, src.sha256)

    def reload_sources(self) -> list[Path]:
        """The files `reload` reads: the scenario file (its goals), its rule, triple and plugin
        files and the psyche's (none for a replayed trace). The workbench watches them to say
        when f5 has work."""
        sc = self.scenario
        if sc is None:
            return []
        psyche = self._psyche_source()
        modules: list[Path] = []
        decider = str(self.meta.get("decider") or "")
        for ref in [*sc.tools, *([decider] if ":" in decider else [])]:
            try:
                src = read_source(ref, sc.path.parent)
            except InputError:
                continue
            if src is not None:
                modules.append(Path(src.file))
        return [sc.path, *sc.rules, *sc.kg, *modules, *([psyche] if psyche is not None else [])]

    def _psyche_source(self) -> Path | None:
        """The file this run's psyche came from: the psyche saved for the scenario, else the
        scenario's own (None: the default psyche, no file)."""
        if self.meta.get("psyche_file"):
            return Path(self.meta["psyche_file"])
        return self.scenario.psyche_file if self.scenario is not None else None

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

    def _tally_live(self, record: dict) -> None:
        """Count a cycle just recorded into the veto tallies that end right before it (the
        workbench asks for its goal's every frame: at full speed, reading back the cycles since
        the last frame from the store cost the UI thread a tenth of the process's CPU)."""
        if not self._veto_tally:
            return
        cycle, branch = record["cycle"], self.store.current()
        vetoed = record["act"]["vetoed"]
        for (run, b, goal), (done, counts) in list(self._veto_tally.items()):
            if run == self.run_id and b == branch and done == cycle - 1:
                if vetoed and record["goal"]["id"] == goal:
                    tool = record["decide"]["tool"]
                    counts = dict(counts)
                    counts[tool] = counts.get(tool, 0) + 1
                self._veto_tally[(run, b, goal)] = (cycle, counts)

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
