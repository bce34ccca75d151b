"""A world (SPEC §13): several OODA agents taking turns in rounds on a virtual clock, sharing a
ledger, artifacts and a mint, and the trace that replays it.

Each agent is an ordinary agent built from its scenario (scenario.build_agent) with the
world's six actions added to its tools. A turn is one OODA cycle of one agent (its record is
the §11 cycle record plus agent, round, clock and state) or a turn refused by the rate limits.
A turn's changes to the ledger and artifacts are a transaction: the ledger invariant is
checked after it, and a turn that breaks it is rolled back and stops the world
(InvariantViolation), nothing of it written.

A gated agent's turn (`gated`; gate.py) stops after decide for an answerer's approve, reject
or choose, recorded as the cycle record's `decide.user`: one of the inputs below.

The world is a pure function of (world file, the files it names, seed, inputs): the clock is
virtual, the schedule's only randomness is `random.Random(f"{seed}:{round}")`, and records
hold no wall time and no path but the ones the world file wrote.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, cast

from ..cycle.agent import Agent, Cycle
from ..config import WORLD_CAPABILITIES
from ..errors import InputError
from ..llm.decider import make_decider
from ..redaction import redact, redact_obj, registered_in
from ..store.trace import dumps
from ..tools.registry import BUILTIN_DECIDERS, Entry, GuardedDecider, PluginError, load_decider
from ..runs.scenario import build_agent, build_kg, build_rules, load_psyche
from ..knowledge.kg import KnowledgeGraph
from ..knowledge.rules import RuleSet
from ..psyche.model import Psyche
from ..cycle.deciders import Decider
from ..cycle.scoring import Candidate
from .actions import DeciderFailed, make_actions
from .agents import Agents
from .artifacts import Artifact, Artifacts
from .clock import earliest_wake, round_order, seconds
from .file import WorldSpec
from . import gate
from .gate import Answerer, Recorded
from .ledger import ESCROW, MINT, InvariantViolation, Ledger
from .limits import RateWindows
from .loop import EVALUATE_EVERY, PAUSED, RUNNING, SLEEPING, STARTING, STOPPED, AgentLoop
from .mint import Bid, minted_for, refund_all, settle
from .workflow import WorkflowDecider

if TYPE_CHECKING:
    from ..goals.context import GoalContext
    from ..goals.goal import Goal

Sink = Callable[[dict[str, Any]], None]
Scorer = Callable[[Artifact, int], int]


class WorldDecider:
    """Any decider behind the world's rule: one that raises, or picks a tool that was not
    offered, makes a failed step (the turn runs `noop` with the error, which fails), never a
    crashed world. A plugin decider is unwrapped from the registry's guard, which would
    instead quietly run the utility choice."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner.inner if isinstance(inner, GuardedDecider) else inner
        self.origin = inner.origin if isinstance(inner, GuardedDecider) else type(inner).__name__
        self.problems: list[str] = []

    @property
    def kind(self) -> str:
        return str(getattr(self.inner, "kind", "plugin"))

    def choose(self, agent: Agent, focus: "Goal", ctx: "GoalContext", candidates: list[Candidate],
               utility: Candidate) -> tuple[Candidate, dict | None]:
        try:
            chosen, info = self.inner.choose(agent, focus, ctx, candidates, utility)
            may = getattr(self.inner, "may_choose_unoffered", ())
            tool = getattr(chosen, "tool", None)
            if tool not in may and not any(tool == c.tool and c.offered for c in candidates):
                raise PluginError(f"chose {getattr(chosen, 'tool', chosen)!r}, which is not an offered tool")
            return chosen, redact_obj(info) if isinstance(info, dict) else None  # a plugin's words: foreign text
        except Exception as exc:
            why = redact(f"decider {self.origin} failed: {type(exc).__name__}: {exc}")  # foreign text, masked as it enters
            self.problems.append(f"cycle {agent.cycle}: {why}")
            noop = next(c for c in candidates if c.tool == "noop")
            return replace(noop, offered=True, input="the decider failed", arg=DeciderFailed(why)), None

    def learn(self, agent: Agent, focus: "Goal", tool: str, act: dict) -> None:
        try:
            self.inner.learn(agent, focus, tool, act)
        except Exception as exc:
            self.problems.append(redact(f"decider {self.origin} failed in learn: {type(exc).__name__}: {exc}"))

    def model_memory(self, limit: int) -> str | None:
        try:
            got = self.inner.model_memory(limit)
        except Exception:
            return None
        return got if isinstance(got, str) else None


def default_scorer(artifacts: Artifacts) -> Scorer:
    """SPEC §13's default: the version's triples that no other artifact's current version holds, capped at 100."""
    def score(a: Artifact, version: int) -> int:
        return min(100, artifacts.unique_triples(a.id, version))
    return score


class World:
    def __init__(self, spec: WorldSpec, sink: Sink | None = None, llm: Mapping[str, Any] | None = None,
                 deciders: Mapping[str, Any] | None = None, scorer: Scorer | None = None,
                 lines: Callable[[str], None] | None = None, restoring: bool = False,
                 data_dir: Path | None = None) -> None:
        """`sink` receives every trace record in order, `lines` the same records encoded (a
        trace file's lines, encoded once); `llm` is the user config's [llm] table
        (for agents whose decider is llm); `deciders` replaces agents' deciders by id (tests,
        a plugin host); `scorer` replaces the mint's default score. `restoring`: the agents
        are built without their goals, for a saved state to be loaded (state.py). `data_dir`: where
        model agents record their calls (the data dir's cassette, llm/cassette.py), so a world
        decided by a model re-runs from its recordings as a single run does."""
        self.spec = spec
        self.data_dir = data_dir
        self.llm = llm  # (a fork's decider edit builds its decider with it: edits.py)
        self.sink = sink
        self.lines = lines
        self.ids = [a.id for a in spec.agents]
        self.mint_every = spec.mint_every
        self.step_ms = spec.step_ms
        self.ledger = Ledger(self.ids, spec.starting_scrip)
        self.artifacts = Artifacts()
        for x in spec.artifacts:
            self.artifacts.write(x.id, x.owner, x.triples, x.text, x.price, x.tool)
        self.artifacts.commit()
        # per agent: an agent's turn changes only its own, and a saved state keeps each agent's
        # with that agent (state.py)
        self.read_versions: dict[str, dict[str, int]] = {}
        self.evidence: dict[str, dict[int, dict[tuple[str, str, str], None]]] = {}
        self.bids: list[Bid] = []
        self.limits = RateWindows(spec.limits)
        self.scorer = scorer or default_scorer(self.artifacts)
        self.clock = 0
        self.round = 0
        self.order: list[str] | None = None  # the round under way's recorded order (None between rounds)
        self.pos = 0  # the next entry of `order` to take its turn
        self.mints: list[dict[str, Any]] = []
        self.loops = {aid: AgentLoop(aid, scrip_at_evaluation=spec.starting_scrip) for aid in self.ids}
        # the agents whose turns stop at the gate (gate.py): the world file's `approve = true`
        # ones until the door's `gate()` says otherwise; not part of the state (the answers are)
        self.gated: set[str] = {a.id for a in spec.agents if a.approve}
        self.agents = Agents()  # a rewound world's load on first touch (agents.py)
        self._turn_agent: str | None = None
        self._turn_events: list[dict[str, Any]] = []
        bases: dict[Any, tuple[KnowledgeGraph, RuleSet]] = {}
        psyches: dict[Any, Psyche] = {}

        def build(i: int) -> Agent:
            a = spec.agents[i]
            dec = (deciders or {}).get(a.id) or self._decider(a.decider, i, llm)
            registry = a.scenario.tool_registry()
            for action in make_actions(self, a.id):
                registry.entries[action.name] = Entry(action, action.spec, "world", False)
            if a.psyche is None and a.scenario.path not in psyches:
                psyches[a.scenario.path] = load_psyche(a.scenario)
            psyche = a.psyche if a.psyche is not None else psyches[a.scenario.path]
            if not restoring:  # a restore replaces the psyche with the saved one's own: no copy to make
                psyche = psyche.copy()
            # agents of one scenario share its parsed rules (an agent never changes its RuleSet)
            # and start from copies of one base graph: a world of many agents reads each
            # scenario's files once (kg.copy is copy-on-write)
            key = a.scenario.path
            if key not in bases:
                bases[key] = (build_kg(a.scenario), build_rules(a.scenario))
            kg, rules = bases[key]
            agent = build_agent(a.scenario, a.seed, psyche=psyche, decider=WorldDecider(dec), tools=registry,
                                add_goals=not restoring, kg=kg.copy(), rules=rules)
            for cap, on in WORLD_CAPABILITIES.items():
                agent.config.capabilities.setdefault(cap, on)  # a scenario's [config] may have turned one off
            return agent

        for i, a in enumerate(spec.agents):
            if restoring:
                # a rewind's: each built when first touched (agents.py), and most never are
                self.agents.put_later(a.id, partial(build, i))
            else:
                self.agents.put(a.id, build(i))
        self._write({"type": "world", "v": 1, "name": spec.name, "seed": spec.seed,
                     "agents": [{"id": a.id, "scenario": a.scenario_name, "decider": a.decider, "seed": a.seed}
                                for a in spec.agents], "config": spec.config()})

    def make_decider(self, spec: WorldSpec, index: int, field: str) -> Any:
        """Agent `index`'s decider as `spec` (a fork's edited one, edits.py) names it;
        an InputError (a plugin refused or not found) names `field`."""
        try:
            return self._decider(spec.agents[index].decider, index, self.llm, spec)
        except InputError as exc:
            raise InputError(exc.message, field=field) from None

    def set_decider(self, aid: str, decider: Any) -> None:
        """Agent `aid` decides with `decider` from its next turn (behind the world's rule)."""
        agent = self.agents[aid]
        agent.decider = cast(Decider, WorldDecider(decider))  # (as build_agent takes it: a Decider, duck-typed)

    def _decider(self, kind: str, index: int, llm: Mapping[str, Any] | None, spec: WorldSpec | None = None) -> Any:
        spec = spec or self.spec
        fld = f"agents[{index}].decider"
        workflow = spec.agents[index].workflow
        if kind == "workflow" and workflow is not None:
            models = {k: self._decider(k, index, llm, spec) for k in dict.fromkeys(s.target for s in workflow.steps if s.kind == "llm")}
            return WorkflowDecider(workflow, models)
        if kind in BUILTIN_DECIDERS:
            try:
                return make_decider(kind, llm, data_dir=self.data_dir)
            except InputError as exc:
                raise InputError(exc.message, file=str(spec.path), field=fld) from None
        try:
            return load_decider(kind, spec.path.parent)
        except PluginError as exc:
            raise InputError(str(exc), file=str(spec.path), field=fld) from None

    # ---- the WorldPort actions use -------------------------------------------------------------
    def agent(self, agent_id: str) -> Agent:
        if agent_id not in self.agents:
            raise InputError(f"no agent {agent_id!r} in this world")
        return self.agents[agent_id]

    def pay(self, frm: str, to: str, amount: int, why: str) -> None:
        self.ledger.move(frm, to, amount, why, self.round, seconds(self.clock), self._turn_agent)

    def published(self, a: Artifact) -> None:
        self._turn_events.append({"type": "artifact", "round": self.round, "clock": seconds(self.clock),
                                  "agent": self._turn_agent, "id": a.id, "version": a.version, "owner": a.owner,
                                  "price": a.price, "kind": a.kind, "size": a.size})

    # ---- records -------------------------------------------------------------------------------
    def _write(self, record: dict[str, Any]) -> None:
        if self.sink is None and self.lines is None:
            return
        # foreign text was masked where it entered (the world file and its artifacts at load,
        # tool outputs, model replies, a decider's error): what is left to look for in each
        # record is a registered secret, a few substring searches (as a single run's writer)
        line = dumps(record)
        if registered_in(line):
            record = redact_obj(record)
            line = dumps(record)
        if self.sink is not None:
            self.sink(record)
        if self.lines is not None:
            self.lines(line)

    def _event(self, kind: str, agent: str | None, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "round": self.round, "clock": seconds(self.clock), "agent": agent, **fields}

    def _state(self, loop: AgentLoop, to: str, why: str, wake_at: int | None = None) -> dict[str, Any] | None:
        ev = loop.change(to, why, wake_at)
        return None if ev is None else self._event("state", loop.id, **{k: v for k, v in ev.items() if k != "type"})

    # ---- running -------------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return all(self.loops[a].state == STOPPED for a in self.ids)

    def run(self, rounds: int | None = None, on_step: Callable[[dict[str, Any]], None] | None = None,
            answer: Answerer | None = None) -> str:
        """Run `rounds` rounds (default: the world file's) or until every agent is STOPPED;
        returns why it ended. A round under way (a world resumed mid-round) is finished first
        and counts as one of them. InvariantViolation stops it with the failed step uncommitted.
        `answer` answers the gated agents' proposals (gate.py)."""
        target = self.rounds_done + (rounds if rounds is not None else self.spec.rounds)
        while self.order is not None or self.round < target:
            if self.step(on_step, answer) is None:
                break
        return "every agent is STOPPED" if self.over and self.order is None else f"{self.round} rounds"

    @property
    def rounds_done(self) -> int:
        """Rounds finished: the one under way (its order not yet run out) does not count."""
        return self.round - 1 if self.order is not None else self.round

    def step_round(self, on_step: Callable[[dict[str, Any]], None] | None = None,
                   answer: Answerer | None = None) -> None:
        """The rest of the round under way, or a whole new one."""
        if self.step(on_step, answer) is None:
            return
        while self.order is not None:
            self.step(on_step, answer)

    def step(self, on_step: Callable[[dict[str, Any]], None] | None = None,
             answer: Answerer | None = None) -> tuple[int, str | None] | None:
        """One step (SPEC §13's `ROUND:AGENT`): the next agent's turn in the round's recorded
        order; a new round is begun first when none is under way (its `round` record and
        wake-ups belong to its first step), and the mint follows the round's last turn in the
        same step. Returns the step's name (round, agent; agent None for a round in which no
        agent was eligible), or None when the world is over and no step was taken. A gated
        agent's turn asks `answer` (a `gate.Recorded` replays the record's answers instead)."""
        if self.order is None:
            if self.over:
                return None
            self._begin_round()
        assert self.order is not None
        name: tuple[int, str | None] = (self.round, None)
        self._skip_paused()
        if self.pos < len(self.order):
            aid = self.order[self.pos]
            self.pos += 1
            name = (self.round, aid)
            summary = self.turn(aid, answer)
            if summary is not None and on_step is not None:
                on_step(summary)
            self._skip_paused()
        if self.pos >= len(self.order):
            if self.mint_every > 0 and self.round % self.mint_every == 0:
                self.mint()
            self.order, self.pos = None, 0
        return name

    def _skip_paused(self) -> None:
        """A PAUSED agent (its fifth error this round) is back next round, not later in this one."""
        assert self.order is not None
        while self.pos < len(self.order) and self.loops[self.order[self.pos]].state == PAUSED:
            self.pos += 1

    def _begin_round(self) -> None:
        self.round += 1
        events = self._wake()
        if not any(self.loops[a].eligible for a in self.ids):
            wake = earliest_wake([self.loops[a].wake_at for a in self.ids if self.loops[a].state == SLEEPING])
            if wake is not None and wake > self.clock:
                self.clock = wake  # nobody can act before then: time jumps (SPEC §13)
                events += self._wake()
        order = round_order(self.ids, [a for a in self.ids if self.loops[a].eligible], self.spec.schedule,
                            self.spec.seed, self.round)
        self._write({"type": "round", "round": self.round, "clock": seconds(self.clock), "order": order})
        for ev in events:
            self._write(ev)
        self.order, self.pos = order, 0

    def _wake(self) -> list[dict[str, Any]]:
        out = []
        for aid in self.ids:
            loop = self.loops[aid]
            ev = None
            if loop.state == PAUSED:
                ev = self._state(loop, RUNNING, "a new round after the error limit (errors and delay kept)")
            elif loop.state == SLEEPING and loop.wake_at is not None and loop.wake_at <= self.clock:
                ev = self._state(loop, RUNNING, "woke")
            if ev is not None:
                out.append(ev)
        return out

    def turn(self, aid: str, answer: Answerer | None = None) -> dict[str, Any] | None:
        """One turn of one agent at the current clock; the step's summary line, or None when
        the agent had no active goal (it is STOPPED, and no turn was taken). A gated agent's
        turn stops after decide for `answer` (gate.py); with no answerer it is an error before
        anything of the turn is done."""
        fires = answer.fires(self.round, aid) if isinstance(answer, Recorded) else aid in self.gated
        if fires and answer is None:
            raise InputError(f"agent {aid}'s turn stops at the gate, and nobody was given to answer it "
                             f"(approve it on the terminal, use --auto-approve/--auto-reject, or ungate it)",
                             field="approve")
        loop, agent, c = self.loops[aid], self.agents[aid], self.clock
        self._turn_agent, self._turn_events = aid, []
        self.ledger.begin()
        self.artifacts.begin()
        resource = self.limits.limited(aid, c)
        if resource is not None:
            self._write(self._event("rate_limited", aid, resource=resource))
            if self.spec.limits.policy == "block":
                wake = self.limits.capacity_at(aid, resource, c)
                ev = self._state(loop, SLEEPING, f"rate limit: {resource}", wake)
                if ev is not None:
                    self._write(ev)
            self.clock = c + self.step_ms
            return {"round": self.round, "clock": seconds(c), "agent": aid, "action": f"rate_limited({resource})",
                    "result": "refused", "balance": self.ledger.balance(aid), "state": loop.state}
        cycle = agent.begin_cycle()
        if cycle is None:
            ev = self._state(loop, STOPPED, "no active goal")
            if ev is not None:
                self._write(ev)
            return None
        state_events: list[dict[str, Any]] = []
        if loop.state == STARTING:
            ev = self._state(loop, RUNNING, "first turn")
            if ev is not None:
                state_events.append(ev)
        inner = getattr(agent.decider, "inner", None)
        user: dict[str, Any] | None = None
        while cycle.next_phase is not None:
            if fires and answer is not None and cycle.next_phase == "act":
                user = self._gate(aid, cycle, answer, inner)
            cycle.run_phase()
        record = cycle.finish()
        if isinstance(inner, WorkflowDecider) and inner.last is not None:
            record["decide"]["workflow"] = inner.last  # the step it ran, beside the table's choice
        elif getattr(inner, "kind", None) == "soar":
            soar = getattr(inner, "last", None)
            if isinstance(soar, dict):
                record["decide"]["soar"] = soar  # its decisions in its own terms: operators, values, rules
        if user is not None:  # only when a gate fired: every other record keeps its bytes
            record["decide"]["user"] = user
        tool, act = record["decide"]["tool"], record["act"]
        self._learn_evidence(aid, cycle)
        self.limits.use(aid, "actions", c)
        llm = record["decide"].get("llm")
        if isinstance(llm, dict):
            self.limits.use(aid, "llm_calls", c)
            self.limits.use(aid, "llm_tokens", c, int(llm.get("tokens") or 0))
        if tool == "write_artifact":
            self.limits.use(aid, "writes", c)
        if not act["success"]:
            agent.wm.push(f"Failure: {tool}: {act['output'][:200]}", "observation", agent.cycle, [], cycle.focus.id, tool, False)
        for ev in loop.after_turn(act["success"], tool, act["output"], c, self.step_ms):
            state_events.append(self._event("state", aid, **{k: v for k, v in ev.items() if k != "type"}))
        own_events = agent.drain_events()  # the cycle's §11 events; a pivot's decomposition follows the pivot
        after: list[dict[str, Any]] = []
        if loop.turns % EVALUATE_EVERY == 0:
            after += self._evaluate(loop, agent, cycle.focus)
            after += [{**ev, "agent": aid} for ev in agent.drain_events()]
        if agent.focus_goal() is None:
            ev = self._state(loop, STOPPED, "no active goal")
            if ev is not None:
                state_events.append(ev)
        try:
            self.ledger.check(aid, tool)
        except InvariantViolation:
            self.ledger.rollback()
            self.artifacts.rollback()
            raise
        entries = self.ledger.commit()
        self.artifacts.commit()
        out = {"type": "cycle", "v": 1, "cycle": record["cycle"], "agent": aid, "round": self.round,
               "clock": seconds(c), "state": loop.state}
        out.update((k, v) for k, v in record.items() if k not in out)
        self._write(out)
        for ev in own_events:
            self._write({**ev, "agent": aid})
        for rec in [*entries, *self._turn_events, *state_events, *after]:
            self._write(rec)
        self.clock = c + self.step_ms
        line = {"round": self.round, "clock": seconds(c), "agent": aid, "action": tool,
                "result": act["progress"], "balance": self.ledger.balance(aid), "state": loop.state}
        if user is not None:
            line["user"] = user  # the gate's answer, for the step's line (world run, the lanes)
        return line

    def _gate(self, aid: str, cycle: Cycle, answer: Answerer, inner: Any) -> dict[str, Any]:
        """Stop `aid`'s turn before act: its proposal asked, the answer checked and taken;
        what `decide.user` records. Anything raised (a bad answer, GateClosed) leaves the turn
        undone: the ledger and artifacts are rolled back, and the door goes back to its last
        committed step."""
        workflow = inner.last if isinstance(inner, WorkflowDecider) else None
        kind = str(getattr(inner, "kind", "plugin"))
        p = gate.proposal(self.round, aid, cycle, kind, workflow)
        try:
            got = gate.check_answer(p, answer(p))
        except BaseException:
            self.ledger.rollback()
            self.artifacts.rollback()
            raise
        return gate.apply(p, got, cycle)

    def _learn_evidence(self, aid: str, cycle: Cycle) -> None:
        """The triples a goal's tool calls returned (SPEC §8's evidence; hypotheses excluded):
        what write_artifact can publish for that goal."""
        result = cycle.result
        if result is None or cycle.failed:
            return
        kg = self.agents[aid].kg
        ev = self.evidence.setdefault(aid, {}).setdefault(cycle.focus.id, {})
        for t in result.triples:
            if kg.is_meta_triple(t) or t.provenance == "tool:synthesize_triple":
                continue
            ev[(kg.label(t.subject), kg.label(t.predicate), kg.label(t.object))] = None

    def _evaluate(self, loop: AgentLoop, agent: Agent, focus: "Goal") -> list[dict[str, Any]]:
        """Self-evaluation after every third acting turn, and a pivot when the last three
        turns failed with one tool: that goal stalls now (decomposed, or failed if it is a
        sub-goal already), as §7 would after stall_threshold cycles."""
        balance = self.ledger.balance(loop.id)
        out = [self._event("evaluation", loop.id, turns=loop.turns, success_ratio=loop.success_ratio(),
                           scrip_change=balance - loop.scrip_at_evaluation)]
        loop.scrip_at_evaluation = balance
        tool = loop.pivot_tool()
        if tool is not None:
            out.append(self._event("pivot", loop.id, tool=tool, goal=focus.id))
            if focus.status == "active" and focus.is_leaf:
                if focus.origin == "decomposition":
                    agent._fail(focus, f"pivot: the last 3 turns failed with {tool}")
                else:
                    agent.decompose(focus)
        return out

    # ---- the mint ------------------------------------------------------------------------------
    def mint(self) -> None:
        """The auction after every mint_every-th round (SPEC §13), recorded even with no bids."""
        self._turn_agent = None
        self.ledger.begin()
        bids, self.bids = self.bids, []
        win: Bid | None = None
        price = 0
        score: int | None = 0
        minted = 0
        try:
            score = None
            s = settle(bids, self.ids, ESCROW)
            win, price = s.winner, s.price
            if win is not None:
                score = int(self.scorer(self.artifacts.by_id[win.artifact], win.version))
                if not 0 <= score <= 100:
                    raise ValueError(f"score {score} is not in 0..100")
            else:
                score = 0
            moves = s.moves
        except Exception:
            win, price, score, moves = None, 0, None, refund_all(bids, ESCROW)
        for frm, to, amount, why in moves:
            self.pay(frm, to, amount, why)
        if win is not None and score is not None:
            minted = minted_for(score)
            if minted:
                self.pay(MINT, win.agent, minted, f"minted for {win.artifact}@{win.version} (score {score})")
        try:
            self.ledger.check(None, "mint")
        except InvariantViolation:
            self.ledger.rollback()
            self.bids = bids
            raise
        entries = self.ledger.commit()
        rec = self._event("mint", None, artifact=win.artifact if win else None, version=win.version if win else None,
                          bids=[[b.agent, b.amount] for b in bids], price=price, score=score, minted=minted)
        rec["agent"] = win.agent if win else None
        self.mints.append(rec)
        self._write(rec)
        for e in entries:
            self._write(e)

    # ---- the summary ---------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        return {
            "round": self.round, "clock": seconds(self.clock),
            "balances": self.ledger.snapshot(), "minted": self.ledger.minted,
            "artifacts": [{"id": a.id, "owner": a.owner, "version": a.version, "price": a.price, "kind": a.kind,
                           "size": a.size} for a in self.artifacts],
            "mints": [{"round": m["round"], "winner": m["agent"], "artifact": m["artifact"], "price": m["price"],
                       "score": m["score"], "minted": m["minted"]} for m in self.mints],
            "escrow_bids": [[b.agent, b.amount] for b in self.bids],
            "agents": {aid: {"state": self.loops[aid].state, "errors": self.loops[aid].errors,
                             "crash_reason": self.loops[aid].crash_reason,
                             "goals": [{"id": g.id, "description": g.description, "status": g.status}
                                       for g in sorted(self.agents[aid].goals.values(), key=lambda g: g.id)]}
                       for aid in self.ids},
        }
