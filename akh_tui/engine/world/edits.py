"""A world fork's edits (SPEC §13: "a fork's edits may change any agent's psyche, decider,
disabled tools or goals, the limits, and the order of the rest of the round it starts in"),
as typed objects like commands.py's for a single run. Each is checked against the world it is
applied to and a bad one is an InputError naming the field; applied, each says what it did.
The edits are state of the branch: the fork saves the whole state after them (worldstore.py),
so they hold after resume and rewind.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Union

from ..errors import InputError
from ..goals.goal import parse_criteria
from ..psyche.model import Psyche
from ..runs.commands import AddGoal, EditGoal
from ..tools.registry import BUILTIN_DECIDERS
from .file import RESOURCES, Limits

if TYPE_CHECKING:
    from .file import WorldSpec
    from .world import World


def _agent(w: "World", aid: str, field: str) -> None:
    if aid not in w.agents:
        raise InputError(f"no agent {aid!r} in this world (it has: {', '.join(w.ids)})", field=field)


@dataclass(frozen=True)
class SetPsyche:
    """Agent `agent`'s psyche becomes this one (a psyche TOML text, validated here)."""
    agent: str
    toml: str
    source: str = "fork"

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        psyche = Psyche.from_toml(self.toml, file=self.source)
        psyche.source = self.source
        w.agents[self.agent].psyche = psyche
        return {"edit": "psyche", "agent": self.agent, "source": self.source}


@dataclass(frozen=True)
class DisableTool:
    """Agent `agent` may not use `tool` (one of its tools or the world's actions)."""
    agent: str
    tool: str

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        agent = w.agents[self.agent]
        if self.tool not in agent.tool_names:
            raise InputError(f"agent {self.agent} has no tool {self.tool!r} (it has: {', '.join(agent.tool_names)})",
                             field="--disable")
        if self.tool not in agent.config.disabled_tools:
            agent.config.disabled_tools = [*agent.config.disabled_tools, self.tool]
        return {"edit": "disable", "agent": self.agent, "tool": self.tool}


@dataclass(frozen=True)
class SetOrder:
    """The order of the rest of the round under way (the agents still to take their turn in it),
    or, between rounds, of nothing: such a fork is refused (the next round's order is the
    schedule's)."""
    order: tuple[str, ...]

    def apply(self, w: "World") -> dict[str, Any]:
        if w.order is None:
            raise InputError("the fork follows the last step of a round: there is no rest of a round to reorder "
                             "(fork at an earlier step of the round)", field="--order")
        rest = w.order[w.pos:]
        if sorted(self.order) != sorted(rest):
            raise InputError(f"the rest of round {w.round} is {','.join(rest) or '(nobody)'}: --order must name "
                             f"exactly those agents, got {','.join(self.order)}", field="--order")
        w.order = [*w.order[:w.pos], *self.order]
        return {"edit": "order", "round": w.round, "order": list(self.order)}


class _NoopOnce:
    """Agent's decider for its next acting turn only: it chooses `noop` and puts the agent's
    own decider back (which then learns from the turn as from any other)."""

    def __init__(self, inner: Any, why: str) -> None:
        self.inner = inner
        self.why = why

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def choose(self, agent: Any, focus: Any, ctx: Any, candidates: list[Any], utility: Any) -> tuple[Any, None]:
        from dataclasses import replace

        agent.decider = self.inner
        noop = next(c for c in candidates if c.tool == "noop")
        return replace(noop, offered=True, input=self.why), None


@dataclass(frozen=True)
class NoopTurn:
    """Agent `agent`'s next acting turn runs `noop` instead of what its decider would choose
    (who-moved's proof, moved.py: the world without that agent's action). Held by the live
    world only, for the replay it is made for: it is not part of a saved state, so it is not
    offered to `world fork`, whose branch is saved and resumed."""
    agent: str

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        agent = w.agents[self.agent]
        if not isinstance(agent.decider, _NoopOnce):
            agent.decider = _NoopOnce(agent.decider, "fork edit: noop in place of the recorded action")
        return {"edit": "noop", "agent": self.agent}


# ---- edits of the world file's own settings (decider, limits) -------------------------------
# An agent's decider and the limits are built from the world file whenever a World is (a
# rewind, a resume): a saved state does not hold them. So these edits change the World's spec
# and are recorded in the branch's `applied` edits with all a rebuild needs; `spec_with` folds
# a lineage's recorded edits into the file's spec (worldrun.py), so a branch rebuilt from its
# saved states has its edited decider and limits again.

DECIDER_KINDS = ("workflow", *BUILTIN_DECIDERS)


@dataclass(frozen=True)
class SetDecider:
    """Agent `agent`'s decider becomes `kind`: a built-in one (utility, scripted, llm, local),
    `workflow` (the agent's own [agents.workflow] from the world file: a workflow is written
    there, with its steps), or a plugin 'module:attr' / entry point name, which is untrusted
    input exactly as in the world file (its folder must be agreed to, tools/trust.py). The new
    decider starts fresh (no memory of the old one's)."""
    agent: str
    kind: str

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        kind = self.kind.strip()
        index = w.ids.index(self.agent)
        a = w.spec.agents[index]
        if not kind:
            raise InputError(f"must be a decider: {', '.join(DECIDER_KINDS)} or a plugin reference 'module:attr'",
                             field="--decider")
        if kind == "workflow" and a.workflow is None:
            raise InputError(f"agent {self.agent} has no [agents.workflow] in the world file: a workflow decider needs "
                             "its steps (write them there)", field="--decider")
        spec = spec_with(w.spec, [{"edit": "decider", "agent": self.agent, "decider": kind}])
        dec = w.make_decider(spec, index, field="--decider")  # InputError (plugin refused, not found): nothing changed
        w.spec = spec
        w.set_decider(self.agent, dec)
        return {"edit": "decider", "agent": self.agent, "decider": kind, "was": a.decider}


@dataclass(frozen=True)
class SetLimit:
    """A `[world.limits]` value for the whole world (the file has no per-agent limits):
    `actions`, `llm_calls`, `llm_tokens` or `writes` an integer >= 0, or `window_s` a number of
    seconds (0.001 to 10000000). The windows' uses so far are kept: the new limit counts them."""
    key: str
    value: int | float

    def apply(self, w: "World") -> dict[str, Any]:
        field = f"--limit {self.key}"
        v = self.value
        if self.key in RESOURCES:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InputError(f"must be an integer >= 0, got {v!r}", field=field)
        elif self.key == "window_s":
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.001 <= v <= 10_000_000:
                raise InputError(f"must be a number of seconds, 0.001 to 10000000, got {v!r}", field=field)
        else:
            raise InputError(f"no limit {self.key!r} (limits: {', '.join((*RESOURCES, 'window_s'))})", field="--limit")
        spec = spec_with(w.spec, [{"edit": "limit", "key": self.key, "value": v}])
        w.spec = spec
        w.limits.limits = spec.limits
        return {"edit": "limit", "key": self.key, "value": v}


def _set_limit(limits: Limits, key: str, value: int | float) -> Limits:
    if key == "window_s":
        return replace(limits, window_ms=round(value * 1000))
    caps = dict(limits.caps)
    caps[key] = int(value)
    return replace(limits, caps=tuple((r, caps[r]) for r in RESOURCES if r in caps))


def spec_with(spec: "WorldSpec", applied: Iterable[dict[str, Any]]) -> "WorldSpec":
    """`spec` with the recorded decider and limit edits among `applied` (a fork's `applied`
    list, in order); the other edits are held by the saved state and change nothing here."""
    agents, limits, raw = list(spec.agents), spec.limits, dict(spec.raw_limits)
    for e in applied:
        if e.get("edit") == "decider":
            i = next((i for i, a in enumerate(agents) if a.id == e["agent"]), None)
            if i is None:  # (an edit not checked yet: SetDecider.apply refuses it)
                continue
            agents[i] = replace(agents[i], decider=e["decider"])
        elif e.get("edit") == "limit":
            limits = _set_limit(limits, e["key"], e["value"])
            raw[e["key"]] = e["value"]
        else:
            continue
    if agents == spec.agents and limits == spec.limits:
        return spec
    return replace(spec, agents=agents, limits=limits, raw_limits=raw)


# ---- goals ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AddAgentGoal:
    """Agent `agent` gets a new goal (as a single run's AddGoal): its description, criteria
    (None: the default from the description) and priority 0..255. Held by the agent's saved state."""
    agent: str
    description: str
    criteria: str | None = None
    priority: int = 128

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        if not self.description.strip():
            raise InputError("a goal needs a description", field="--goal")
        p = self.priority
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 255:
            raise InputError(f"priority must be an integer 0..255, got {p!r}", field="--goal priority")
        if self.criteria is not None:
            if not self.criteria.strip():
                raise InputError("criteria must not be empty", field="--goal criteria")
            try:
                parse_criteria(self.criteria)
            except InputError as exc:
                raise InputError(exc.message, field="--goal criteria") from None
        agent = w.agents[self.agent]
        before = set(agent.goals)
        try:
            AddGoal(self.description, self.criteria, self.priority).apply(agent)
        except InputError as exc:
            raise InputError(exc.message, field="--goal criteria") from None
        new = next(g for g in agent.goals if g not in before)
        return {"edit": "goal", "agent": self.agent, "goal": new, "description": self.description,
                "criteria": agent.goals[new].criteria, "priority": self.priority}


@dataclass(frozen=True)
class EditAgentGoal:
    """Agent `agent`'s goal #`goal` gets a new status, priority or criteria (None: kept), as a
    single run's EditGoal checks and does it."""
    agent: str
    goal: int
    status: str | None = None
    priority: int | None = None
    criteria: str | None = None

    def apply(self, w: "World") -> dict[str, Any]:
        _agent(w, self.agent, "--agent")
        edit = EditGoal(self.goal, self.status, self.priority, self.criteria)
        agent = w.agents[self.agent]
        try:
            edit.check(agent)
        except InputError as exc:
            raise InputError(f"agent {self.agent}: {exc.message}", field=f"--goal {exc.field}") from None
        done = edit.apply(agent)
        return {"edit": "goal_edit", "agent": self.agent, "goal": self.goal, "status": self.status,
                "priority": self.priority, "criteria": self.criteria, "done": done}


WorldEdit = Union[SetPsyche, DisableTool, SetOrder, NoopTurn, SetDecider, SetLimit, AddAgentGoal, EditAgentGoal]

GOAL_EDIT_HELP = ("new DESCRIPTION [priority=N] [criteria=TEXT] adds a goal; "
                  "N [status=S] [priority=P] [criteria=TEXT] changes goal #N (quote values with spaces)")


def parse_goal_edit(agent: str, text: str, field: str = "--goal") -> "AddAgentGoal | EditAgentGoal":
    """`new DESCRIPTION [priority=N] [criteria=TEXT]` or `N [status=S] [priority=P]
    [criteria=TEXT]`, words split as a shell would (quotes keep spaces). InputError naming `field`."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise InputError(f"{text!r}: {exc}", field=field) from None
    if not words:
        raise InputError(f"no goal edit given: {GOAL_EDIT_HELP}", field=field)
    head, rest = words[0], words[1:]
    pairs: dict[str, str] = {}
    plain: list[str] = []
    for w in rest:
        key, eq, value = w.partition("=")
        if eq and key in ("status", "priority", "criteria"):
            if key in pairs:
                raise InputError(f"{text!r}: {key} given twice", field=field)
            pairs[key] = value
        else:
            plain.append(w)
    priority: int | None = None
    if "priority" in pairs:
        try:
            priority = int(pairs["priority"])
        except ValueError:
            raise InputError(f"{text!r}: priority must be an integer 0..255, got {pairs['priority']!r}",
                             field=field) from None
    if head == "new":
        if "status" in pairs:
            raise InputError(f"{text!r}: a new goal is active (status is for an existing goal #N)", field=field)
        return AddAgentGoal(agent, " ".join(plain), pairs.get("criteria"), 128 if priority is None else priority)
    if not head.lstrip("#").isdigit():
        raise InputError(f"{text!r}: {GOAL_EDIT_HELP}", field=field)
    if plain:
        raise InputError(f"{text!r}: after the goal's number give status=, priority= or criteria= "
                         f"(not {plain[0]!r})", field=field)
    return EditAgentGoal(agent, int(head.lstrip("#")), pairs.get("status"), priority, pairs.get("criteria"))


def parse_limit_edit(text: str, field: str = "--limit") -> SetLimit:
    """`KEY=VALUE`: a limit and its new value (an integer; window_s may be a decimal)."""
    key, eq, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if not eq or not key:
        raise InputError(f"{text!r}: write KEY=VALUE ({', '.join((*RESOURCES, 'window_s'))})", field=field)
    try:
        number: int | float = int(value)
    except ValueError:
        try:
            number = float(value) if key == "window_s" else int(value)
        except ValueError:
            raise InputError(f"{text!r}: {key} must be a number, got {value!r}", field=f"{field} {key}") from None
    return SetLimit(key, number)


def apply_edits(w: "World", edits: "list[WorldEdit]", spec: "WorldSpec") -> list[dict[str, Any]]:
    """Apply every edit (all are checked: the first bad one raises before the world is used)."""
    return [e.apply(w) for e in edits]
