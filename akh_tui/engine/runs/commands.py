"""User input as command objects: what a person (or a script) does to a run between cycles.

The door (`run.py`) applies a command to the agent and records it in the session store as
`(kind, payload)`; rewinding a branch turns each stored input back into the same command and
applies it again, so a replayed history is the one the user made. A fork's edits are a command
too: they are the branch's state, restored on resume, switch and rewind like any other input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Union

from ..errors import InputError
from ..goals.goal import STATUSES, make_goal, parse_criteria
from ..knowledge.kg import is_metadata_label
from ..knowledge.rules import RuleSet, parse_rule_files
from ..psyche.model import Psyche
from ..psyche.parts import ARCHETYPES
from ..tools.builtins import TOOL_NAMES
from ..tools.hotload import PluginSource, make_decider, make_tools
from ..tools.registry import PluginError
from ..text import default_criteria

if TYPE_CHECKING:
    from ..cycle.agent import Agent


@dataclass(frozen=True)
class AddGoal:
    description: str
    criteria: str | None = None
    priority: int = 128
    kind: ClassVar[str] = "goal"

    def payload(self) -> Any:
        return [self.description, self.criteria, self.priority]

    def apply(self, agent: "Agent") -> list[str]:
        g = agent.add_goal(self.description, self.criteria, self.priority)
        return [f"goal #{g.id} added"]


@dataclass(frozen=True)
class EditPsyche:
    """Replace the psyche at the next cycle (SPEC §9). `toml` was validated by the caller."""

    toml: str
    source: str = "user"
    # The psyche `toml` describes, when the caller has it (the editor validated it a moment ago):
    # taken as it is, so an apply parses the user's text once. A rewind has only the text.
    psyche: Psyche | None = field(default=None, compare=False, repr=False)
    kind: ClassVar[str] = "psyche"

    def payload(self) -> Any:
        return self.toml

    def apply(self, agent: "Agent") -> list[str]:
        psyche = self.psyche.written_as(self.toml) if self.psyche is not None else Psyche.from_toml(self.toml)
        agent.replace_psyche(psyche, self.source)
        return ["psyche edited"]


@dataclass(frozen=True)
class ReloadRules:
    """The scenario's rule files read again (issue 28 §2), in force from the next cycle. The
    files' TEXT is the recorded input: a rewind, a resume or an export replays the rules the
    user reloaded, never the file as it is on disk by then."""

    files: tuple[tuple[str, str], ...]  # (file, text) in the scenario's order
    kind: ClassVar[str] = "reload_rules"

    def payload(self) -> Any:
        return [[name, text] for name, text in self.files]

    def ruleset(self) -> RuleSet:
        """The rules the files hold; an InputError names the file, line and field of a bad one."""
        return parse_rule_files([list(f) for f in self.files])

    def apply(self, agent: "Agent") -> list[str]:
        rs = self.ruleset()  # a broken file raises here: the running rules stay
        agent.reload_rules(rs, self.payload())
        n = len(rs.rules) + len(rs.transitive) + len(rs.symmetric) + len(rs.inherit)
        names = ", ".join(Path(name).name for name, _ in self.files) or "no rule file"
        return [f"rules reloaded from {names} ({n} rule(s)): in force from cycle {agent.cycle + 1}"]


@dataclass(frozen=True)
class ReloadTriples:
    """Facts a reload found in the scenario's triple files that the graph does not hold, added
    now (provenance `asserted`, at this cycle: the next cycle is the first to see them). The
    triples themselves are the recorded input, so a replay never reads the files. A reload only
    adds: a line deleted from a file leaves its fact in the graph (a state edit cannot remove
    facts either)."""

    triples: tuple[tuple[str, str, str, float], ...]
    kind: ClassVar[str] = "reload_triples"

    def payload(self) -> Any:
        return [[s, p, o, c] for s, p, o, c in self.triples]

    def apply(self, agent: "Agent") -> list[str]:
        added = sum(agent.kg.add(s, p, o, float(c), "asserted", agent.cycle) is not None for s, p, o, c in self.triples)
        return [f"{added} new triple(s) from the triple files"]


@dataclass(frozen=True)
class ReloadGoals:
    """The scenario file's [[goals]] read again (issue 28 §2), in force from the next cycle.
    The goals' content (description, criteria, priority) is the recorded input; what changes
    is worked out against the run's own goals when it is applied, so a rewind, a fork or an
    export replays it without the file. A reload tells goals apart by their description, and
    manages only the goals the scenario gave (agent.scenario_goals), never one the user added:
    - a description the run does not have: a new goal;
    - one gone from the file: abandoned (failed, "removed from the scenario file"), with its
      sub-goals; a goal already completed or failed stays as it is;
    - a priority changed in the file: the goal's, and its open sub-goals' (what reflection
      or an edit made of it since is replaced; a priority the file did not change is kept);
    - criteria changed in the file: the goal's, its evidence counted again from nothing (a
      completed or failed goal is active again); a goal split into sub-goals by the old
      criteria is abandoned with them and a new goal of the file's text added.
    Changes are against the file as the run last took it (agent.scenario_goals)."""

    file: str
    goals: tuple[tuple[str, str | None, int], ...]  # (description, criteria, priority) in file order
    kind: ClassVar[str] = "reload_goals"

    def payload(self) -> Any:
        return {"file": self.file, "goals": [[d, c, p] for d, c, p in self.goals]}

    def changes(self, agent: "Agent") -> bool:
        """Whether the file's goals differ from those it had when the run last took it."""
        known = agent.scenario_goals
        if known is None:
            return False
        return {d: (c, p) for d, c, p in self.goals} != {d: (c, p) for d, (_, c, p) in known.items()}

    def apply(self, agent: "Agent") -> list[str]:
        known = agent.scenario_goals
        if known is None:
            raise InputError("this run's goals were given when it started (--goals), not taken from the scenario "
                             "file: its goals are not reloaded", field="goals")
        for d, c, p in self.goals:  # a recorded payload is checked as the file was
            make_goal(0, d, c, p)
        name = Path(self.file).name
        words: list[str] = []
        now: dict[str, tuple[int, str | None, int]] = {}
        wanted = {d for d, _, _ in self.goals}
        for d, (gid, _, _) in known.items():
            g = agent.goals.get(gid)
            if d not in wanted and g is not None:
                if g.status in ("active", "suspended"):
                    agent.abandon_goal(g, f"abandoned: removed from {name} (goals reloaded after cycle {agent.cycle})")
                    words.append(f"goal #{g.id} abandoned: no longer in {name}")
                else:
                    words.append(f"goal #{g.id} ({g.status}) no longer in {name}: kept as it is")
        for d, c, p in self.goals:
            g = agent.goals.get(known[d][0]) if d in known else None
            was_c, was_p = known[d][1:] if d in known else (c, p)
            crit = c if c is not None else default_criteria(d)
            if g is not None and c != was_c and g.children:
                agent.abandon_goal(g, f"abandoned: its criteria changed in {name} after it was split into sub-goals")
                words.append(f"goal #{g.id} abandoned: its criteria changed in {name} and it had been split")
                g = None
            if g is None:
                g = agent.add_goal(d, c, p)
                words.append(f"goal #{g.id} added")
                now[d] = (g.id, c, p)
                continue
            if c != was_c:  # the file's criteria changed (an edit of the goal's since is overridden)
                g.criteria, g._criteria = crit, None
                g.found, g.found_patterns, g.coverage, g.since_progress = [], [], 0.0, 0
                if g.status in ("completed", "failed"):
                    g.fail_reason = None
                    agent.set_goal_status(g, "active")
                words.append(f"goal #{g.id} criteria {crit!r}")
            if p != was_p:  # the file's priority changed (reflection's changes since are replaced)
                g.priority = p
                todo = list(g.children)
                while todo:  # its open sub-goals were made with its priority: they follow it
                    k = agent.goals[todo.pop()]
                    if k.status in ("active", "suspended"):
                        k.priority = p
                    todo.extend(k.children)
                words.append(f"goal #{g.id} priority {p}")
            now[d] = (g.id, c, p)
        agent.scenario_goals = now
        agent.goals_reloaded = True
        return words


@dataclass(frozen=True)
class ReloadPlugin:
    """A scenario's plugin module read again (issue 28 §2): its source text and sha256 are the
    recorded input, and its tools are made from that text (tools/hotload.py), in force from the
    next cycle. Made again on a rewind, fork or resume only while its folder is trusted."""

    source: PluginSource
    kind: ClassVar[str] = "reload_plugin"

    def payload(self) -> Any:
        return self.source.payload()

    def apply(self, agent: "Agent", replaying: bool = True) -> list[str]:
        tools = make_tools(self.source, replaying)
        try:
            agent.tools.check_replacement(self.source.ref, tools)
        except PluginError as exc:
            raise InputError(f"plugin {self.source.ref} not reloaded: {exc}; the run keeps its old code",
                             file=self.source.file, field="tools") from None
        agent.reload_plugin(self.source.ref, tools, self.payload())
        names = ", ".join(t.spec.name for t in tools) or "none"
        return [f"plugin {Path(self.source.file).name} reloaded (tools: {names}): in force from cycle {agent.cycle + 1}"]


@dataclass(frozen=True)
class ReloadDecider:
    """The scenario's decider module read again (`decider = "module:attr"`), as ReloadPlugin:
    its source text and sha256 recorded, the decider made from the text, in force from the
    next cycle; made again on a rewind, fork or resume only while its folder is trusted."""

    source: PluginSource
    kind: ClassVar[str] = "reload_decider"

    def payload(self) -> Any:
        return self.source.payload()

    def apply(self, agent: "Agent", replaying: bool = True) -> list[str]:
        agent.pending_decider = (make_decider(self.source, replaying), self.payload())
        return [f"decider {Path(self.source.file).name} reloaded: in force from cycle {agent.cycle + 1}"]


@dataclass(frozen=True)
class Reflect:
    kind: ClassVar[str] = "reflect"

    def payload(self) -> Any:
        return None

    def apply(self, agent: "Agent") -> list[str]:
        agent.reflect()
        return ["reflected"]


@dataclass(frozen=True)
class Consolidate:
    kind: ClassVar[str] = "consolidate"

    def payload(self) -> Any:
        return None

    def apply(self, agent: "Agent") -> list[str]:
        agent.consolidate(reason="demand")
        return ["consolidated"]


@dataclass(frozen=True)
class MakePlan:
    goal: int
    kind: ClassVar[str] = "plan"

    def payload(self) -> Any:
        return self.goal

    def apply(self, agent: "Agent") -> list[str]:
        agent.ensure_plan(agent.goals[self.goal])
        return [f"plan for goal #{self.goal}"]


# ---- edits of the agent's state (issue 28 §2): a triple, a goal, a working-memory entry ------
# Each checks itself against the agent before anything changes (StateEditError naming the field
# that is wrong), is recorded like any input (rewind, resume and export replay it) and can be a
# fork's edit (ForkEdits "state").


class StateEditError(InputError):
    """A state edit refused; `field` names what was wrong: triple, goal, status, priority,
    criteria, memory or content (a front end points at its own input for it); `index` which
    edit of several (1-based; None: the only one)."""

    index: int | None = None


@dataclass(frozen=True)
class AddTriple:
    """A triple the user asserts (provenance `user`); labels are made symbols on first use."""

    subject: str
    predicate: str
    object: str
    confidence: float = 1.0
    kind: ClassVar[str] = "triple"

    def payload(self) -> Any:
        return [self.subject, self.predicate, self.object, self.confidence]

    def check(self, agent: "Agent") -> None:
        for term in (self.subject, self.predicate, self.object):
            if not isinstance(term, str) or not term.strip():
                raise StateEditError("a triple needs a subject, a predicate and an object, e.g. orca eats seal",
                                     field="triple")
            if is_metadata_label(term.strip()):
                raise StateEditError(f"{term!r} is the agent's bookkeeping (a metadata label): not a fact to add",
                                     field="triple")
        c = self.confidence
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0 < c <= 1:
            raise StateEditError(f"confidence must be in (0, 1], got {c!r}", field="triple")

    def apply(self, agent: "Agent") -> list[str]:
        self.check(agent)
        s, p, o = self.subject.strip(), self.predicate.strip(), self.object.strip()
        added = agent.kg.add(s, p, o, float(self.confidence), "user", agent.cycle)
        return [f"triple ({s} {p} {o}) " + ("added" if added is not None else "known already: nothing changed")]


@dataclass(frozen=True)
class EditGoal:
    """A goal's status, priority or criteria changed (None: kept)."""

    goal: int
    status: str | None = None
    priority: int | None = None
    criteria: str | None = None
    kind: ClassVar[str] = "goal_edit"

    def payload(self) -> Any:
        return {"goal": self.goal, "status": self.status, "priority": self.priority, "criteria": self.criteria}

    def check(self, agent: "Agent") -> None:
        if self.goal not in agent.goals:
            raise StateEditError(f"no goal #{self.goal} (goals: {', '.join(f'#{g}' for g in sorted(agent.goals))})",
                                 field="goal")
        if self.status is None and self.priority is None and self.criteria is None:
            raise StateEditError(f"nothing to change in goal #{self.goal}: give a status, a priority or criteria",
                                 field="goal")
        if self.status is not None and self.status not in STATUSES:
            raise StateEditError(f"status {self.status!r}: one of {', '.join(STATUSES)}", field="status")
        p = self.priority
        if p is not None and (isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 255):
            raise StateEditError(f"priority must be an integer 0..255, got {p!r}", field="priority")
        if self.criteria is not None:
            if not self.criteria.strip():
                raise StateEditError("criteria must not be empty", field="criteria")
            try:
                parse_criteria(self.criteria)
            except InputError as exc:
                raise StateEditError(exc.message, field="criteria") from None

    def apply(self, agent: "Agent") -> list[str]:
        self.check(agent)
        g = agent.goals[self.goal]
        done: list[str] = []
        if self.criteria is not None:
            g.criteria = self.criteria
            g._criteria = None  # parsed again from the new text
            done.append(f"goal #{g.id} criteria {self.criteria!r}")
        if self.priority is not None:
            g.priority = self.priority
            done.append(f"goal #{g.id} priority {self.priority}")
        if self.status is not None:
            if self.status == "active":
                g.fail_reason = None
                g.since_progress = 0  # a goal set going again is not stalled at once
            agent.set_goal_status(g, self.status)
            done.append(f"goal #{g.id} {self.status}")
        return done


@dataclass(frozen=True)
class EditMemory:
    """A working-memory entry's content replaced, or (`content` None) the entry dropped."""

    entry: int
    content: str | None = None
    kind: ClassVar[str] = "wm_edit"

    def payload(self) -> Any:
        return {"entry": self.entry, "content": self.content}

    def check(self, agent: "Agent") -> None:
        if self.entry not in agent.wm.entries:
            ids = list(agent.wm.entries)
            near = f"ids {ids[0]}..{ids[-1]}" if ids else "it is empty"
            raise StateEditError(f"no working-memory entry #{self.entry} ({near})", field="memory")
        if self.content is not None and not self.content.strip():
            raise StateEditError("the new content is empty: drop the entry instead", field="content")

    def apply(self, agent: "Agent") -> list[str]:
        self.check(agent)
        if self.content is None:
            agent.wm.remove([self.entry])
            return [f"memory #{self.entry} dropped"]
        agent.wm.entries[self.entry].content = self.content
        return [f"memory #{self.entry} edited"]


StateEdit = Union[AddTriple, EditGoal, EditMemory]
STATE_KINDS = ("triple", "goal_edit", "wm_edit")
STATE_EDIT_HELP = ('triple S P O [CONFIDENCE] · goal N status=active priority=200 criteria="(whale is-a mammal)" · '
                   "memory N drop · memory N = TEXT")


def parse_state_edit(text: str) -> StateEdit:
    """One state edit as a person types it (the CLI's `agent edit`, the workbench's edit
    dialog): see STATE_EDIT_HELP. StateEditError names the field that is wrong."""
    import shlex

    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise StateEditError(f"{exc} in {text!r}", field="edit") from None
    if not words:
        raise StateEditError(f"an empty edit: {STATE_EDIT_HELP}", field="edit")
    head, rest = words[0].lower(), words[1:]
    if head in ("triple", "+"):
        if len(rest) not in (3, 4):
            raise StateEditError(f"a triple is S P O [CONFIDENCE], got {len(rest)} term(s) in {text!r}", field="triple")
        conf = 1.0
        if len(rest) == 4:
            try:
                conf = float(rest[3])
            except ValueError:
                raise StateEditError(f"confidence must be a number in (0, 1], got {rest[3]!r}", field="triple") from None
        return AddTriple(rest[0], rest[1], rest[2], conf)
    if head in ("goal", "memory"):
        if not rest or not rest[0].lstrip("#").isdigit():
            raise StateEditError(f"{head} needs its number first, e.g. {head} 2 ...", field=head)
        n = int(rest[0].lstrip("#"))
        if head == "memory":
            if rest[1:] == ["drop"]:
                return EditMemory(n)
            if len(rest) >= 3 and rest[1] == "=":
                return EditMemory(n, text.split("=", 1)[1].strip())
            raise StateEditError(f"memory {n} drop, or memory {n} = NEW TEXT; got {text!r}", field="memory")
        fields: dict[str, str] = {}
        for w in rest[1:]:
            key, sep, value = w.partition("=")
            if not sep or key not in ("status", "priority", "criteria"):
                raise StateEditError(f"goal {n}: expected status=, priority= or criteria=, got {w!r}", field="goal")
            fields[key] = value
        prio: int | None = None
        if "priority" in fields:
            if not fields["priority"].lstrip("-").isdigit():
                raise StateEditError(f"priority must be an integer 0..255, got {fields['priority']!r}", field="priority")
            prio = int(fields["priority"])
        return EditGoal(n, fields.get("status"), prio, fields.get("criteria"))
    raise StateEditError(f"unknown edit {words[0]!r}: {STATE_EDIT_HELP}", field="edit")


ForkEditName = Literal["name", "archetypes", "disable_tools", "goals", "psyche", "state"]


class ForkEditError(ValueError):
    """A fork edit that is refused, naming which one (`edit`), so a front end can point at the
    field the user filled in (the CLI's flag, the fork dialog's input) without reading the words."""

    def __init__(self, edit: ForkEditName, message: str) -> None:
        self.edit: ForkEditName = edit
        super().__init__(message)


@dataclass(frozen=True)
class ForkEdits:
    """A fork's edits: {"archetypes": {"explorer": 0.9}, "psyche": TOML text,
    "goals": ["description", ...], "disable_tools": ["kg_query", ...], "state": [[kind,
    payload], ...] (state edits: a triple, a goal, a working-memory entry)}."""

    edits: dict = field(default_factory=dict)
    kind: ClassVar[str] = "edits"

    def payload(self) -> Any:
        return self.edits

    def state(self) -> list[StateEdit]:
        """The state edits, typed (ForkEditError for one that is not)."""
        out: list[StateEdit] = []
        for item in self.edits.get("state") or []:
            if not isinstance(item, (list, tuple)) or len(item) != 2 or item[0] not in STATE_KINDS:
                raise ForkEditError("state", f"a state edit is [kind, payload] with kind one of {STATE_KINDS}, "
                                             f"got {item!r}")
            out.append(from_state_payload(item[0], item[1]))
        return out

    def check(self, tools: tuple[str, ...] | None = None, agent: "Agent | None" = None) -> None:
        """Refuse a bad edit before anything changes (ValueError naming it; a state edit's
        StateEditError names its field); `tools` are the run's tool names (default the
        built-ins); `agent` the state the edits apply to (state edits are checked against it)."""
        for cmd in self.state():
            if agent is not None:
                cmd.check(agent)
        for name, weight in (self.edits.get("archetypes") or {}).items():
            if name not in ARCHETYPES or isinstance(weight, bool) or not isinstance(weight, (int, float)) \
                    or not 0 <= weight <= 1:
                raise ForkEditError("archetypes", f"archetype {name}={weight!r}: name one of {ARCHETYPES}, weight in [0, 1]")
        for tool in self.edits.get("disable_tools") or []:
            if tool not in (tools if tools is not None else TOOL_NAMES):
                raise ForkEditError("disable_tools", f"unknown tool {tool!r}")
        if "psyche" in self.edits and isinstance(self.edits["psyche"], str):
            Psyche.from_toml(self.edits["psyche"])

    def apply(self, agent: "Agent") -> list[str]:
        """What changed, in words, for the fork event."""
        self.check(agent.tool_names)
        e = self.edits
        done: list[str] = []
        if "psyche" in e:
            p = e["psyche"]
            agent.psyche = Psyche.from_toml(p) if isinstance(p, str) else p.copy()
            done.append("psyche replaced")
        for name, weight in (e.get("archetypes") or {}).items():
            agent.psyche.archetypes[name] = float(weight)
            done.append(f"{name} weight {weight}")
        for desc in e.get("goals") or []:
            g = agent.add_goal(desc, emit=False)
            done.append(f"goal #{g.id} added")
        for tool in e.get("disable_tools") or []:
            if tool not in agent.config.disabled_tools:
                agent.config.disabled_tools = [*agent.config.disabled_tools, tool]
            done.append(f"{tool} disabled")
        for cmd in self.state():
            done += cmd.apply(agent)
        agent.drain_events()
        return done


@dataclass(frozen=True)
class Verdict:
    """The user's decision on the action chosen in cycle `cycle`, given before its act phase:
    approve, reject (a veto by the user) or edit (the input; only one the tool could take from
    the goal). Recorded just before that cycle, so a rewind hands it to the cycle again."""

    cycle: int
    decision: str
    input: str | None = None
    why: str | None = None
    kind: ClassVar[str] = "verdict"

    def payload(self) -> Any:
        return {"cycle": self.cycle, "decision": self.decision, "input": self.input, "why": self.why}

    def apply(self, agent: "Agent") -> list[str]:
        agent.verdicts[self.cycle] = {k: v for k, v in self.payload().items() if v is not None}
        return [f"{self.decision} for cycle {self.cycle}"]


@dataclass(frozen=True)
class Answer:
    """The person's answer to `user_interact` in cycle `cycle`: `s p o` lines (none: skipped,
    "no answer"). Recorded just before that cycle, like a verdict."""

    cycle: int
    lines: tuple[str, ...] = ()
    kind: ClassVar[str] = "answer"

    def payload(self) -> Any:
        return {"cycle": self.cycle, "lines": list(self.lines)}

    def apply(self, agent: "Agent") -> list[str]:
        agent.asked[self.cycle] = list(self.lines)
        return [f"answer for cycle {self.cycle}"]


Command = Union[AddGoal, EditPsyche, ReloadRules, ReloadTriples, ReloadGoals, ReloadPlugin, ReloadDecider, Reflect,
                Consolidate, MakePlan, ForkEdits, Verdict, Answer, AddTriple, EditGoal, EditMemory]


def from_input(kind: str, payload: Any) -> Command:
    """The command a stored input records."""
    if kind == "goal":
        return AddGoal(*payload)
    if kind == "psyche":
        return EditPsyche(payload)
    if kind == "edits":
        return ForkEdits(payload)
    if kind == "reload_rules":
        if not isinstance(payload, list) or not all(
                isinstance(f, list) and len(f) == 2 and all(isinstance(x, str) for x in f) for f in payload):
            raise InputError(f"a recorded rules reload is malformed: {str(payload)[:80]!r}", field="reload_rules")
        return ReloadRules(tuple((f[0], f[1]) for f in payload))
    if kind == "reload_triples":
        if not isinstance(payload, list) or not all(
                isinstance(t, list) and len(t) == 4 and all(isinstance(x, str) for x in t[:3])
                and isinstance(t[3], (int, float)) and not isinstance(t[3], bool) for t in payload):
            raise InputError(f"a recorded triples reload is malformed: {str(payload)[:80]!r}", field="reload_triples")
        return ReloadTriples(tuple((t[0], t[1], t[2], float(t[3])) for t in payload))
    if kind == "reload_goals":
        goals = payload.get("goals") if isinstance(payload, dict) else None
        if not isinstance(payload, dict) or not isinstance(payload.get("file"), str) or not isinstance(goals, list) \
                or not all(isinstance(g, list) and len(g) == 3 and isinstance(g[0], str)
                           and (g[1] is None or isinstance(g[1], str))
                           and isinstance(g[2], int) and not isinstance(g[2], bool) for g in goals):
            raise InputError(f"a recorded goals reload is malformed: {str(payload)[:80]!r}", field="reload_goals")
        return ReloadGoals(payload["file"], tuple((g[0], g[1], g[2]) for g in goals))
    if kind == "reload_plugin":
        return ReloadPlugin(PluginSource.from_payload(payload))
    if kind == "reload_decider":
        return ReloadDecider(PluginSource.from_payload(payload))
    if kind == "reflect":
        return Reflect()
    if kind == "consolidate":
        return Consolidate()
    if kind == "plan":
        return MakePlan(payload)
    if kind == "verdict":
        return Verdict(int(payload["cycle"]), payload["decision"], payload.get("input"), payload.get("why"))
    if kind == "answer":
        return Answer(int(payload["cycle"]), tuple(payload.get("lines") or ()))
    if kind in STATE_KINDS:
        return _state_from_payload(kind, payload)
    raise ValueError(f"unknown user input {kind!r} in the history")


def _state_from_payload(kind: str, payload: Any) -> StateEdit:
    """A recorded state edit (from a store or a fork's edits, so possibly damaged or hostile):
    its shape checked here (StateEditError naming the edit), its values when it is applied."""
    bad = StateEditError(f"a recorded {kind} edit is malformed: {str(payload)[:80]!r}", field="edit")
    if kind == "triple":
        if not isinstance(payload, list) or len(payload) not in (3, 4) \
                or not all(isinstance(x, str) for x in payload[:3]):
            raise bad
        conf = payload[3] if len(payload) == 4 else 1.0
        if isinstance(conf, bool) or not isinstance(conf, (int, float)):
            raise bad
        return AddTriple(payload[0], payload[1], payload[2], float(conf))
    if not isinstance(payload, dict) or isinstance(payload.get("goal" if kind == "goal_edit" else "entry"), bool) \
            or not isinstance(payload.get("goal" if kind == "goal_edit" else "entry"), int):
        raise bad
    if kind == "goal_edit":
        status, prio, crit = payload.get("status"), payload.get("priority"), payload.get("criteria")
        if not (status is None or isinstance(status, str)) or not (crit is None or isinstance(crit, str)) \
                or not (prio is None or (isinstance(prio, int) and not isinstance(prio, bool))):
            raise bad
        return EditGoal(payload["goal"], status, prio, crit)
    content = payload.get("content")
    if not (content is None or isinstance(content, str)):
        raise bad
    return EditMemory(payload["entry"], content)


def from_state_payload(kind: str, payload: Any) -> StateEdit:
    """The state edit a (kind, payload) pair stands for (a staged or recorded edit)."""
    cmd = from_input(kind, payload)
    if not isinstance(cmd, (AddTriple, EditGoal, EditMemory)):
        raise StateEditError(f"{kind!r} is not a state edit (one of {', '.join(STATE_KINDS)})", field="edit")
    return cmd


def replay(agent: "Agent", inputs: list[tuple[str, Any]]) -> None:
    """Apply stored inputs again, in order (rewind, resume after a kill)."""
    for kind, payload in inputs:
        from_input(kind, payload).apply(agent)
