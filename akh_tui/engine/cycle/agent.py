"""The agent and its OODA cycle (SPEC §4): observe, orient, decide, act; then evaluate,
update the plan, detect stalls, reflect and consolidate.

`Agent.step()` runs one cycle and returns its CycleRecord (a plain dict, the trace record of
SPEC §11). Events that happen inside a cycle (decomposition, reflection, consolidation) are
collected in `pending_events` for the trace writer. Nothing here reads the clock or iterates
a set in an order that reaches a decision.
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..confine import policy as confine
from ..config import DEFAULT_CAPABILITIES, AgentConfig, served_process
from ..goals.context import GoalContext
from .deciders import Decider, UtilityDecider
from ..goals.goal import Goal, make_goal, split_criteria
from ..knowledge.kg import KnowledgeGraph
from ..knowledge.memory import EpisodicMemory, WorkingMemory, consolidate
from .plan import Plan, make_plan
from ..psyche.model import Psyche
from ..redaction import redact
from ..knowledge.rules import RuleEngine, RuleSet
from .scoring import Candidate, choose
from ..text import STOP_WORDS, STRATEGY_KEYWORDS, normalised_words
from ..tools.registry import PluginError, ToolRegistry, safe_env
from ..tools.api import ToolContext, ToolResult
from ..knowledge.vsa import VSA, SymbolVectors

ACTIVATION_DECAY = 0.5
ACTIVATION_FLOOR = 0.1
ACTIVATION_BUDGET = 512  # edge reads per goal per orient: bounds a cycle on hub-heavy graphs
ADJACENT_CAP = 64  # K and "fewer than 3 known triples" only need a count up to a small cap
PROVENANCE_KEEP = 1000  # provenance records kept in memory (the trace has them all)


@dataclass(frozen=True, slots=True)
class ProvenanceRecord:
    kind: str  # AgentDecision | ShadowVeto
    cycle: int
    goal: int
    tool: str
    detail: str


class Agent:
    def __init__(
        self,
        kg: KnowledgeGraph,
        rules: RuleSet,
        psyche: Psyche,
        config: AgentConfig | None = None,
        seed: int = 0,
        workspace: Path | None = None,
        answers: dict[str, list[str]] | None = None,
        decider=None,
        tools: ToolRegistry | None = None,
        vsa: VSA | None = None,
        symbol_vectors: SymbolVectors | None = None,
    ) -> None:
        # each agent owns its config: forks edit theirs (disabled tools) without touching others
        self.config = copy.deepcopy(config) if config is not None else AgentConfig()
        self.seed = seed
        self.kg = kg
        # `vsa`, `symbol_vectors`: caches kept across a run's rewinds (basegraph.py); a VSA
        # is a pure function of (seed, dimension, label), a symbol's vector of the graph
        if vsa is not None and (vsa.seed, vsa.dim) != (seed, self.config.vsa_dim):
            raise ValueError("the VSA given is not of this agent's seed and dimension")
        self.vsa = vsa if vsa is not None else VSA(seed, self.config.vsa_dim)
        if symbol_vectors is not None and (symbol_vectors.kg is not kg or symbol_vectors.vsa is not self.vsa):
            raise ValueError("the symbol vectors given are not of this agent's graph and VSA")
        if symbol_vectors is not None:
            symbol_vectors.listen()
            self.symbol_vectors = symbol_vectors
        else:
            self.symbol_vectors = SymbolVectors(kg, self.vsa)
        self.rules = RuleEngine(kg, rules)
        self.scenario_rules = rules  # what the agent was built with: a rewind's fresh agents start from it
        # rules reloaded from their files (issue 28 §2): (ruleset, [[file, text], ...]) taking
        # effect at the next cycle, and the files' text in force since (None: the scenario's)
        self.pending_rules: tuple[RuleSet, list[list[str]]] | None = None
        self.rules_files: list[list[str]] | None = None
        # the scenario file's goals a reload manages (issue 28 §2): description -> (goal id,
        # criteria, priority) as the file had them when the run last took it (None: the run's
        # goals were given instead, --goals); `goals_reloaded` once a reload changed it (a
        # snapshot then holds it, else a restore takes the run's first one)
        self.scenario_goals: dict[str, tuple[int, str | None, int]] | None = None
        self.goals_reloaded = False
        # plugin modules reloaded from their recorded source (tools/hotload.py): ref -> the
        # source's payload in force, and those taking effect at the next cycle (ref -> (tools, payload))
        self.plugin_sources: dict[str, dict] = {}
        self.pending_plugins: dict[str, tuple[list[Any], dict]] = {}
        # the scenario's decider module reloaded: its recorded source's payload in force (None:
        # the decider the run opened with), and the one taking effect at the next cycle
        self.decider_source: dict | None = None
        self.pending_decider: tuple[Any, dict] | None = None
        self.psyche = psyche
        self.workspace = workspace
        # programs shell_exec may run without bubblewrap: the user's config says (the run sets it)
        self.shell_unconfined: tuple[str, ...] = ()
        self.answers = answers or {}
        # The run's tools (registry.py): the built-ins, installed plugins and the scenario's.
        # Tools see the agent only through `tool_context` (toolapi.py).
        self.tools = tools if tools is not None else ToolRegistry.default()
        self.tool_names = self.tools.names
        self.tool_context = ToolContext(self)
        self._add_plugin_gates()
        # The utility table decides by default (SPEC §6); a model decider (engine/llm/decider.py) asks
        # a language model instead, and the table is still computed, shown and traced beside it.
        self.decider: Decider = decider if decider is not None else UtilityDecider()
        self.last_output = ""
        self.recent_failures: deque[str] = deque(maxlen=5)
        self.wm = WorkingMemory(self.config.wm_capacity)
        self.episodic = EpisodicMemory(self.config.episodic_capacity)
        self.goals: dict[int, Goal] = {}
        self.plans: dict[int, Plan] = {}
        self.next_goal_id = 1
        self.cycle = 0
        self.tool_stats: dict[str, list[int]] = {}  # tool -> [uses, successes] over the session
        self.provenance: deque[ProvenanceRecord] = deque(maxlen=PROVENANCE_KEEP)
        self.pending_events: list[dict] = []
        self.last_record: dict | None = None
        self.replay_divergence: str | None = None  # set by history.rewind when a cycle replays differently
        self.pending_psyche: Psyche | None = None
        self.base_symbols = len(kg.symbols)  # what the scenario loaded; later additions persist
        self.base_triples = len(kg.log)
        # (branch, symbols, triples): the first symbols and triples of `kg` are what a restore
        # of that branch builds (the base and the branch's stored additions), as the session
        # store knows from reading or writing them; None: not known. A rewind starts from a
        # copy of the live graph cut there instead of from the scenario's files (basegraph.py).
        self.kg_stored: tuple[int, int, int] | None = None
        self._profiles = {name: self.vsa.keyword_vector(e.spec.profile) for name, e in self.tools.entries.items()}
        self._strategy_vectors = {
            name: self.vsa.keyword_vector((name, *words)) for name, words in STRATEGY_KEYWORDS.items()
        }
        self._sims: dict[tuple[int, str], float] = {}
        self._plan_roles = self.tools.plan_roles()
        self._goal_symbols: dict[int, tuple[int, list[int]]] = {}
        self._goal_symbol_sets: dict[int, tuple[list[int], frozenset[int]]] = {}  # by the list they were made of
        # what the config leaves out, by the config's capabilities and disabled tools (see _closed_tools)
        self._gates: tuple[tuple, dict[str, str]] | None = None
        self._orient_cache: dict[int, tuple[int, GoalContext]] = {}
        # a person's decisions for a coming cycle, keyed by its number (recorded inputs:
        # commands.Verdict and commands.Answer put them here, the cycle's act phase takes them)
        self.verdicts: dict[int, dict] = {}
        self.asked: dict[int, list[str]] = {}

    def _add_plugin_gates(self) -> None:
        """Capabilities only plugins declare get a gate like the built-ins' (SPEC §5): on for
        safe and cautious tools, off for dangerous and critical ones until the config enables
        them (and off in a served session whatever the config says)."""
        caps = self.config.capabilities
        served = safe_env()
        for cap, on in self.tools.new_capabilities(DEFAULT_CAPABILITIES).items():
            caps.setdefault(cap, on)
            if served and not on:  # a dangerous plugin's own gate (served_config's rule)
                caps[cap] = False

    # ---- goals -----------------------------------------------------------------------------
    def add_goal(
        self,
        description: str,
        criteria: str | None = None,
        priority: int = 128,
        parent: int | None = None,
        origin: str = "user",
        emit: bool = True,
    ) -> Goal:
        g = make_goal(
            self.next_goal_id, description, criteria, priority, self.cycle,
            self.config.stall_threshold, parent=parent, origin=origin,
        )
        self.next_goal_id += 1
        g.symbol = self.kg.symbol(f"goal:{g.id}", "goal")
        self.kg.add(g.symbol, "agent:description", f"desc:{g.description}", provenance="user" if origin == "user" else "tool:decompose", cycle=self.cycle)
        if parent is not None:
            parent_symbol = self.goals[parent].symbol
            assert parent_symbol is not None  # every goal gets its symbol when it is added
            self.kg.add(g.symbol, "agent:parent_goal", parent_symbol, cycle=self.cycle)
        self.goals[g.id] = g
        if emit and origin == "user":
            self.pending_events.append({
                "type": "goal_added", "v": 1, "cycle": self.cycle, "goal": g.summary(),
                "criteria": g.criteria,
            })
        return g

    def active_goals(self) -> list[Goal]:
        return sorted((g for g in self.goals.values() if g.status == "active"), key=lambda g: (-g.priority, g.id))

    def focus_goal(self) -> Goal | None:
        """The highest-priority active leaf goal (ties: older first)."""
        for g in self.active_goals():
            if g.is_leaf:
                return g
        return None

    def goal_symbols(self, g: Goal) -> list[int]:
        """Entity symbols whose normalised label equals a normalised word of the goal (SPEC §4)."""
        cached = self._goal_symbols.get(g.id)
        if cached is not None and cached[0] == self.kg.symbol_version:
            return cached[1]
        words = [w for w in normalised_words(g.description + " " + g.criteria.replace("(", " ").replace(")", " ")) if w not in STOP_WORDS]
        out: list[int] = []
        for w in dict.fromkeys(words):
            for sid in self.kg.by_key(w):
                if sid not in out:
                    out.append(sid)
        out.sort()
        self._goal_symbols[g.id] = (self.kg.symbol_version, out)
        return out

    def _goal_symbol_set(self, g: Goal) -> frozenset[int]:
        """goal_symbols(g) as a set, made again only when they change."""
        syms = self.goal_symbols(g)
        cached = self._goal_symbol_sets.get(g.id)
        if cached is None or cached[0] is not syms:
            cached = self._goal_symbol_sets[g.id] = (syms, frozenset(syms))
        return cached[1]

    def profile_similarity(self, g: Goal, tool: str) -> float:
        key = (g.id, tool)
        sim = self._sims.get(key)
        if sim is None:
            sim = self.vsa.similarity(self.vsa.text_vector(g.description), self._profiles[tool])
            self._sims[key] = sim
        return sim

    def ensure_plan(self, g: Goal) -> Plan:
        """The goal's plan, made now if it has none."""
        plan = self.plans.get(g.id)
        if plan is None:
            plan = self.plans[g.id] = make_plan(g.id, g.description, self.strategy_flags(g), g.attempt, roles=self._plan_roles)
        return plan

    def strategy_flags(self, g: Goal) -> dict[str, bool]:
        text = g.description + " " + g.criteria
        words = set(w.strip(".,;:!?()") for w in text.lower().split())
        tv = self.vsa.text_vector(text)
        flags = {}
        for name, kws in STRATEGY_KEYWORDS.items():
            flags[name] = bool(words.intersection(kws)) or self.vsa.similarity(tv, self._strategy_vectors[name]) > 0.55
        return flags

    # ---- orient ----------------------------------------------------------------------------
    def orient_goal(self, g: Goal, episodes) -> GoalContext:
        version = len(self.kg.log)
        cached = self._orient_cache.get(g.id)
        symbols = self.goal_symbols(g)
        if cached is not None and cached[0] == version:
            ctx = cached[1]
            ctx.episodes = episodes
            return ctx
        kg = self.kg
        # distinct triples: one linking two goal symbols counts once
        seen: set[tuple[int, int, int]] = set()
        for s in symbols:
            for t in kg.adjacent(s, limit=ADJACENT_CAP):
                seen.add(t.key)
            if len(seen) >= ADJACENT_CAP:
                break
        adjacent = min(ADJACENT_CAP, len(seen))
        activation = self.spread(symbols)
        order = [s for _, s in sorted([(-v, s) for s, v in activation.items()])]  # (−activation, id)
        ctx = GoalContext(g, symbols, adjacent, activation, order, episodes)
        self._orient_cache[g.id] = (version, ctx)
        return ctx

    def spread(self, seeds: list[int], walked: list | None = None) -> dict[int, float]:
        """Spreading activation (SPEC §4): max over paths, ≤ 2 hops, decay 0.5, floor 0.1.

        At most `activation_fanout` edges per node and ACTIVATION_BUDGET edges in all are read,
        nearest and strongest first, so hubs cannot make a cycle's cost grow with the graph.
        `walked`, when given, receives (hop, from, triple, value, raised) for every edge read:
        the orient view shows the walk exactly as this computed it."""
        adjacent = self.kg.adjacent
        act: dict[int, float] = {s: 1.0 for s in seeds}
        frontier = list(seeds)
        budget = ACTIVATION_BUDGET
        fanout = self.config.activation_fanout
        for _hop in range(2):
            nxt: dict[int, float] = {}
            for node in frontier:
                if budget <= 0:
                    break
                parent = act[node]
                edges = adjacent(node, limit=fanout if fanout < budget else budget)
                budget -= len(edges)
                for t in edges:
                    other = t.object if t.subject == node else t.subject
                    value = parent * t.confidence * ACTIVATION_DECAY
                    raised = value >= ACTIVATION_FLOOR and value > act.get(other, 0.0)
                    if raised:
                        act[other] = value
                        nxt[other] = value
                    if walked is not None:
                        walked.append((_hop + 1, node, t, value, raised))
            # strongest first, then by id; nxt[s] == act[s] here (both are set together), so
            # sorting (−value, id) pairs gives the order of sorting by (−act[s], s)
            frontier = [s for _, s in sorted([(-v, s) for s, v in nxt.items()])]
        for s in seeds:
            act.pop(s, None)
        # no metadata symbol is left to drop: adjacency reads non-metadata triples only, whose
        # three symbols are none of them metadata, and the seeds are gone
        return act

    def __del__(self) -> None:
        # The agent is in no reference cycle, so this runs when its last reference goes. Its
        # rule engine's suspended join is one (a paused generator holding the engine): parked,
        # the graph is freed here too instead of waiting for the cyclic collector's full
        # pass over the heap (tests/engine/cycle/test_freed.py).
        rules = self.__dict__.get("rules")  # absent if __init__ raised before making it
        if rules is not None:
            rules.park()

    # ---- the cycle -------------------------------------------------------------------------
    def step(self) -> dict | None:
        """Run one OODA cycle; None (and no cycle) when no goal is active. The cycle is its
        phases run in order (`begin_cycle`): one cycle, one record, whoever steps it."""
        cycle = self.begin_cycle()
        if cycle is None:
            return None
        for _ in PHASES:  # a new cycle has all of them to run, in order
            cycle.run_phase()
        return cycle.finish()

    def begin_cycle(self) -> "Cycle | None":
        """A cycle in progress, its first phase (observe) not yet run; None when no goal is
        active. The cycle number is taken here: a cycle dropped half-way must be undone by the
        caller (the door rewinds to the last recorded state)."""
        if self.pending_psyche is not None:
            self.psyche, self.pending_psyche = self.pending_psyche, None
        if self.pending_rules is not None:
            ruleset, files = self.pending_rules
            self.pending_rules = None
            self.use_rules(ruleset, files)
        if self.pending_decider is not None:
            (self.decider, self.decider_source), self.pending_decider = self.pending_decider, None
        if self.pending_plugins:
            pending, self.pending_plugins = self.pending_plugins, {}
            for ref, (tools, source) in pending.items():
                self.use_plugin(ref, tools, source)
        focus = self.focus_goal()
        if focus is None:
            return None
        self.cycle += 1
        self.wm.evicted.clear()
        return Cycle(self, focus)

    def phase_observe(self, c: "Cycle") -> dict:
        """Observe: the active goals, the newest working memory, the episodes they recall."""
        wm, focus = self.wm, c.focus
        active = self.active_goals()
        recent = wm.recent(5)
        all_symbols: list[int] = []
        for g in active:
            all_symbols.extend(self.goal_symbols(g))
        episodes = self.episodic.recall(all_symbols, self.config.recall_top_k)
        observe = {
            "goals": [g.id for g in active],
            "wm_size": len(wm),
            "recent": [{"id": e.id, "kind": e.kind, "content": e.content[:120]} for e in recent],
            "episodes": [ep.id for ep in episodes],
        }
        wm.push(
            f"Observe: {len(active)} active goal(s); focus #{focus.id} {focus.description!r}; {len(episodes)} episode(s) recalled",
            "observation", c.number, self.goal_symbols(focus)[:20], focus.id,
        )
        c.active, c.episodes = active, episodes
        return observe

    def phase_orient(self, c: "Cycle") -> dict:
        """Orient: each active goal's adjacent triples and spreading activation."""
        wm, kg, focus, episodes = self.wm, self.kg, c.focus, c.episodes
        contexts = {}
        for g in c.active:
            mine = self._goal_symbol_set(g)  # an episode is the goal's when it learned one of its symbols
            contexts[g.id] = self.orient_goal(g, [ep for ep in episodes if not mine.isdisjoint(ep.learnings)])
        ctx = contexts[focus.id]
        learnings = _first_distinct((ep.learnings for ep in ctx.episodes), 10)
        pressure = wm.pressure
        top = ctx.top
        orient = {
            "adjacent": {str(gid): c.adjacent for gid, c in contexts.items()},
            "activated": [{"symbol": kg.label(s), "activation": a} for s, a in top],
            "learnings": [kg.label(s) for s in learnings],
            "pressure": pressure,
            "K": ctx.K, "I": ctx.I, "E": ctx.E,
        }
        if ctx.adjacent or top or learnings:
            act_text = ", ".join(f"{kg.label(s)} {a:.2f}" for s, a in top)
            wm.push(
                f"Orient: {ctx.adjacent} adjacent triple(s) for #{focus.id}; activated: {act_text or 'none'}",
                "inference", c.number, [s for s, _ in top], focus.id,
            )
        c.ctx, c.pressure = ctx, pressure
        return orient

    def phase_decide(self, c: "Cycle") -> dict:
        """Decide: the score table, the plan's step, the decider's choice (pending until act)."""
        wm, focus, ctx = self.wm, c.focus, c.ctx
        plan = self.ensure_plan(focus)
        candidates = self.score(ctx, plan, c.pressure)
        self._skip_unoffered_steps(plan, candidates)
        chosen = choose(candidates)
        chosen, llm = self.decider.choose(self, focus, ctx, candidates, chosen)
        for e in wm.recent(5):
            e.reference_count += 1
        breakdown = chosen.breakdown()
        wm.push(f"Decide: {chosen.tool}({chosen.input}) {breakdown}", "decision", c.number, ctx.symbols[:20], focus.id, chosen.tool)
        step = plan.current
        decide: dict[str, Any] = {
            "tool": chosen.tool,
            "input": chosen.input,
            "breakdown": breakdown,
            "plan_step": step.tool if step else None,
            "candidates": [c.to_dict() for c in candidates],
        }
        if llm is not None:
            decide["decider"] = "llm"
            decide["llm"] = llm
        c.chosen = chosen
        c.candidates = candidates  # a world's gate offers these to the person (world/gate.py)
        return decide

    def phase_act(self, c: "Cycle") -> dict:
        """Act: the user's verdict (if one was recorded for this cycle), the shadow's veto
        check, the chosen tool run; its output goes to working memory."""
        focus, ctx, chosen = c.focus, c.ctx, c.chosen
        cycle = c.number
        verdict = self.verdicts.pop(cycle, None)
        if verdict is not None and verdict.get("decision") == "edit":
            from .deciders import back_intent  # the model decider's rule: the goal bounds the input

            edited, why = back_intent(self, chosen, str(verdict.get("input", "")))
            if edited is None:
                raise ValueError(f"edited input refused: {why}")
            c.chosen = chosen = edited
            c.results["decide"]["input"] = chosen.input
        entry = self.tools.entries[chosen.tool]
        spec = entry.spec
        desc = f"tool={chosen.tool} input={chosen.input}"
        shadow = self.psyche.shadow
        user_veto = verdict is not None and verdict.get("decision") == "reject"
        veto = None if user_veto else shadow.check_veto(desc, spec.capabilities, spec.danger)
        bias, bias_names = shadow.check_bias(desc, spec.capabilities, spec.danger)
        result: ToolResult | None = None
        failed = False
        if user_veto:
            output = f"VETOED by the user: {verdict.get('why') or 'rejected before act'}"  # type: ignore[union-attr]
            failed = True
            self.provenance.append(ProvenanceRecord("UserVeto", cycle, focus.id, chosen.tool, "user"))
        elif veto is not None:
            output = f"VETOED by shadow pattern '{veto.name}': {veto.explanation}"
            failed = True
            self.psyche.record_shadow_encounter()
            self.provenance.append(ProvenanceRecord("ShadowVeto", cycle, focus.id, chosen.tool, veto.name))
        else:
            try:
                if entry.plugin:
                    result = self.tools.guarded_run(entry, self.tool_context, ctx, chosen.arg)
                else:
                    result = entry.tool.run(self.tool_context, ctx, chosen.arg)
                output = result.output
            except confine.Refused as exc:
                failed, output = True, f"refused: {exc}"
            except PluginError as exc:
                failed, output = True, f"error: {exc}"
            except Exception as exc:  # a tool bug is a failed action, never a crashed agent
                failed, output = True, f"error: {type(exc).__name__}: {exc}"
        if failed or entry.plugin:
            # a plugin's text and an error's are foreign (the built-in tools that read the
            # outside mask their own, tools.py): masked before anything keeps it, and before
            # the cut, which could leave a token too short to recognise
            output = redact(output)
        output = output[: self.config.output_chars]
        focus.record_use(chosen.tool)
        stats = self.tool_stats.setdefault(chosen.tool, [0, 0])
        stats[0] += 1
        stats[1] += 0 if failed else 1
        returned_symbols = []
        if result is not None:
            returned_symbols = list(dict.fromkeys([s for t in result.triples for s in (t.subject, t.object)] + result.symbols))[:20]
        self.wm.push(f"Act: {chosen.tool} -> {output[:200]}", "action", cycle, returned_symbols, focus.id, chosen.tool, not failed)
        c.result, c.failed = result, failed
        act: dict[str, Any] = {
            "success": not failed,
            "vetoed": veto is not None or user_veto,
            "veto": "user" if user_veto else veto.name if veto is not None else None,
            "bias": bias,
            "bias_patterns": bias_names,
            "output": output,
        }
        if verdict is not None:
            act["approval"] = {k: verdict[k] for k in sorted(verdict) if k != "cycle"}
        return act

    def phase_learn(self, c: "Cycle") -> dict:
        """Learn: evaluation (SPEC §8), plan update and backtracking (§7), stall and
        decomposition (§7), reflection (§10), consolidation; then the decider learns."""
        focus, chosen, kg, cycle = c.focus, c.chosen, self.kg, c.number
        failed, result = c.failed, c.result
        events_before = len(self.pending_events)
        # Evaluate (SPEC §8)
        focus.cycles_worked += 1
        if failed or result is None:
            progress = "failed"
        else:
            rose, new_syms = focus.evaluate(kg, result.triples, result.evidence, self.config.completion_threshold)
            new_syms += [s for s in result.symbols if s not in focus.seen]
            focus.seen.update(result.symbols)
            if focus.is_complete(self.config.completion_threshold):
                progress = "completed"
            elif rose or new_syms:
                progress = "advanced"
            else:
                progress = "no_change"
        if progress in ("completed", "advanced"):
            focus.since_progress = 0
            focus.last_progress_cycle = cycle
            focus.progressed_since_reflection = True
        else:
            focus.since_progress += 1
        self.provenance.append(ProvenanceRecord("AgentDecision", cycle, focus.id, chosen.tool, progress))

        # Plan (SPEC §7)
        plan = self.plans[focus.id]
        if plan.status == "active":
            plan.on_result(chosen.tool, failed)
        if progress == "completed":
            self._set_status(focus, "completed")
            if plan.status == "active":
                plan.status = "completed"
                credited = False
                for st in plan.steps:  # the goal is met: the step of the tool that met it is
                    if st.status in ("pending", "active"):  # done, the others were not needed
                        if st.tool == chosen.tool and not credited:
                            st.status, credited = "done", True
                        else:
                            st.status = "skipped"
        elif plan.status == "failed":
            focus.attempt += 1
            if focus.attempt >= self.config.max_backtrack_attempts:
                self._fail(focus, f"{focus.attempt} plans failed (max_backtrack_attempts)")
            else:
                self.plans[focus.id] = make_plan(focus.id, focus.description, self.strategy_flags(focus), focus.attempt, failed_tool=chosen.tool, roles=self._plan_roles)
                self.pending_events.append({"type": "backtrack", "v": 1, "cycle": cycle, "goal": focus.id, "attempt": focus.attempt, "failed_tool": chosen.tool, "strategy": self.plans[focus.id].strategy})

        # Stall (SPEC §7)
        if focus.status == "active" and focus.since_progress >= focus.stall_threshold:
            if focus.origin == "decomposition":
                self._fail(focus, f"stalled for {focus.since_progress} cycles (sub-goals are not decomposed again)")
            else:
                self.decompose(focus)

        # Reflection (SPEC §10) and consolidation
        consolidated: list[int] = []
        if cycle % self.config.reflection_interval == 0:
            consolidated += self.reflect()
        if self.config.auto_consolidate and self.wm.pressure > self.config.consolidation_pressure:
            consolidated += self.consolidate(reason="pressure")
        act = c.results["act"]
        act_full = {**act, "progress": progress, "coverage": focus.coverage, "missing": focus.missing()}
        self.last_output = act["output"]
        if failed:
            self.recent_failures.append(f"cycle {cycle}: {chosen.tool}: {act['output'][:160]}")
        self.decider.learn(self, focus, chosen.tool, act_full)
        c.consolidated = consolidated
        return {
            "progress": progress, "coverage": focus.coverage, "missing": focus.missing(),
            "consolidated": consolidated,
            "events": [e.get("type") for e in self.pending_events[events_before:]],
        }

    def finish_cycle(self, c: "Cycle") -> dict:
        """The cycle's record (SPEC §11), built once every phase has run."""
        focus, wm = c.focus, self.wm
        r = c.results
        act = dict(r["act"])
        approval = act.pop("approval", None)
        act.update(progress=r["learn"]["progress"], coverage=r["learn"]["coverage"], missing=r["learn"]["missing"])
        if approval is not None:  # only a cycle the user decided has it: other records keep their bytes
            act["approval"] = approval
        self.last_record = record = {
            "type": "cycle", "v": 1, "cycle": c.number,
            "goal": {"id": focus.id, "description": focus.description},
            "observe": r["observe"], "orient": r["orient"], "decide": r["decide"], "act": act,
            "goals": [g.summary() for g in sorted(self.goals.values(), key=lambda g: g.id)],
            "plan": self.plans[focus.id].to_dict() if focus.id in self.plans else None,
            "wm": {"size": len(wm), "capacity": wm.capacity, "evicted": list(wm.evicted), "consolidated": c.consolidated},
            "psyche": self.psyche.snapshot(),
        }
        return record

    def score(self, ctx: GoalContext, plan: Plan, pressure: float) -> list[Candidate]:
        g = ctx.goal
        caps = self.config.capabilities
        step = plan.current if plan.status == "active" else None
        named = {t for ep in ctx.episodes for t in ep.tags}
        out = []
        tc = self.tool_context
        registry = self.tools
        closed = self._closed_tools(caps)
        # the recency penalty of every tool at once (Goal.recency_penalty's rule: 0.4 / 0.2 /
        # 0.1 for 1 / 2 / 3 cycles ago, the largest applying: the most recent is set last)
        recency: dict[str, float] = {}
        history = g.history
        for back, penalty in ((3, 0.1), (2, 0.2), (1, 0.4)):
            if len(history) >= back:
                recency[history[-back]] = penalty
        uses = g.tool_uses
        psyche = self.psyche
        bonuses: dict[str, float] = {}
        for name, entry in registry.entries.items():
            spec = entry.spec
            why: str | None = closed.get(name)
            if why is not None:
                offer_ok, base, text, arg = False, 0.0, "", None
            else:
                # a plugin's offer is guarded: raising, a wrong type or a slow call = not offered
                o = registry.guarded_offer(entry, tc, ctx) if entry.plugin else entry.tool.offer(tc, ctx)
                offer_ok, base, text, arg = o.offered, o.base, o.input, o.arg
                why = None if o.offered else f"not offered: {o.why_not}"
            archetype = bonuses.get(spec.archetype)
            if archetype is None:
                archetype = bonuses[spec.archetype] = psyche.archetype_bonus(spec.archetype)
            out.append(Candidate(
                name, offer_ok, why, base,
                recency.get(name, 0.0),
                0.15 if uses.get(name, 0) == 0 else 0.0,
                0.2 if name in named else 0.0,
                0.2 if name == "memory_recall" and pressure > 0.7 else 0.0,
                archetype,
                0.10 if step is not None and step.tool == name else 0.0,
                text,
                arg,
            ))
        if self.psyche.shadow.anticipate:
            self._anticipate_vetoes(out)
        return out

    def _closed_tools(self, caps: dict[str, bool]) -> dict[str, str]:
        """Why each tool the config leaves out is not offered (disabled for the run, or a
        capability switched off), by tool; made again only when the capabilities or the
        disabled tools change (a fork's edits, a test's), not every cycle."""
        disabled = self.config.disabled_tools
        key = (tuple(caps.items()), tuple(disabled), tuple([e.spec for e in self.tools.entries.values()]))
        if self._gates is not None and self._gates[0] == key:
            return self._gates[1]
        closed: dict[str, str] = {}
        for name, entry in self.tools.entries.items():
            gated = [c for c in entry.spec.capabilities if not caps.get(c, False)]
            if name in disabled:
                closed[name] = "not offered: disabled for this run"
            elif gated:
                closed[name] = f"not offered: capability {', '.join(gated)} disabled"
        self._gates = (key, closed)
        return closed

    def _anticipate_vetoes(self, candidates: list[Candidate]) -> None:
        """`[shadow] anticipate` (SPEC §9): a tool a veto pattern would block at act is not
        offered, so the agent stops choosing what it will not be let do. When every offered tool
        would be vetoed they stay offered (a cycle needs a choice) and act vetoes as SPEC §4."""
        shadow, entries = self.psyche.shadow, self.tools.entries
        blocked = []
        for c in candidates:
            if c.offered:
                spec = entries[c.tool].spec
                veto = shadow.check_veto(f"tool={c.tool} input={c.input}", spec.capabilities, spec.danger)
                if veto is not None:
                    blocked.append((c, veto.name))
        if len(blocked) == sum(1 for c in candidates if c.offered):
            return
        for c, name in blocked:
            c.offered, c.why_not = False, f"not offered: the shadow would veto it ({name})"

    @staticmethod
    def _skip_unoffered_steps(plan: Plan, candidates: list[Candidate]) -> None:
        """A step whose tool is not offered this cycle is skipped ('-'), so a plan never waits
        forever on a tool it cannot use; the plan factor follows the step that is current."""
        offered = {c.tool: c.offered for c in candidates}
        step = plan.current if plan.status == "active" else None
        moved = False
        while step is not None and not offered[step.tool]:
            plan.skip_current()
            step = plan.current
            moved = True
        if moved:
            for c in candidates:
                c.plan = 0.10 if step is not None and c.tool == step.tool else 0.0

    # ---- goal status -----------------------------------------------------------------------
    def set_goal_status(self, g: Goal, status: str) -> None:
        """A status set by the user (a state edit, runs/commands.py EditGoal): as the cycle
        sets one, the parent settled, a failure carried to the sub-goals."""
        if status == "failed":
            self._fail(g, "set failed by the user")
        else:
            self._set_status(g, status)

    def _set_status(self, g: Goal, status: str) -> None:
        g.status = status
        if g.parent is not None:
            self._settle_parent(self.goals[g.parent], g)

    def _fail(self, g: Goal, reason: str) -> None:
        g.fail_reason = reason
        self._set_status(g, "failed")
        self._fail_descendants(g)

    def _fail_descendants(self, g: Goal) -> None:
        """Sub-goals of a failed goal have nothing left to serve."""
        for cid in g.children:
            c = self.goals[cid]
            if c.status in ("active", "suspended"):
                c.status = "failed"
                c.fail_reason = f"parent #{g.id} failed"
                self._fail_descendants(c)

    def _settle_parent(self, parent: Goal, child: Goal) -> None:
        kids = [self.goals[c] for c in parent.children]
        if parent.status not in ("suspended", "active"):
            return
        if child.status == "completed" and parent.child_mode == "alternatives":
            # alternatives share the parent's criteria: one that meets them meets them for all
            for k in kids:
                if k.status == "active":
                    k.status = "completed"
                    k.fail_reason = None
        if all(k.status == "completed" for k in kids):
            self._set_status(parent, "completed")
        elif child.status == "failed":
            if parent.child_mode == "parts" or all(k.status == "failed" for k in kids):
                self._fail(parent, f"sub-goal #{child.id} failed and no sibling path remains")

    def decompose(self, g: Goal) -> list[Goal]:
        parts = split_criteria(g.criteria)
        if len(parts) >= 2:
            mode = "parts"
            specs = [(f"{g.description}: {p}", p) for p in parts]
        else:
            mode = "alternatives"
            specs = [(f"Query knowledge about: {g.criteria}", g.criteria), (f"Reason about: {g.criteria}", g.criteria)]
        g.status = "suspended"
        g.child_mode = mode
        children = []
        for desc, crit in specs:
            c = self.add_goal(desc, crit, g.priority, parent=g.id, origin="decomposition", emit=False)
            g.children.append(c.id)
            children.append(c)
        self.pending_events.append({
            "type": "decomposition", "v": 1, "cycle": self.cycle, "goal": g.id, "mode": mode,
            "reason": f"no progress for {g.since_progress} cycles (stall_threshold {g.stall_threshold})",
            "children": [c.summary() | {"criteria": c.criteria} for c in children],
        })
        return children

    # ---- reflection and memory -------------------------------------------------------------
    def reflect(self) -> list[int]:
        """SPEC §10: adjust priorities, rate tools, consolidate under pressure, evolve the psyche."""
        adjustments: list[dict] = []
        for g in self.active_goals():
            if g.progressed_since_reflection:
                new = min(255, g.priority + 20)
                if new != g.priority:
                    adjustments.append({"kind": "boost_priority", "goal": g.id, "old": g.priority, "new": new})
                g.priority = new
            elif g.since_progress >= self.config.stagnant_cycles:
                new = max(0, g.priority - 30)
                adjustments.append({"kind": "demote_priority", "goal": g.id, "old": g.priority, "new": new})
                adjustments.append({"kind": "suggest_decomposition", "goal": g.id, "stagnant": g.since_progress})
                g.priority = new
        for g in self.goals.values():
            g.progressed_since_reflection = False
        rates = {t: s[1] / s[0] for t, s in sorted(self.tool_stats.items()) if s[0]}
        consolidated: list[int] = []
        if self.wm.pressure > self.config.consolidation_pressure:
            adjustments.append({"kind": "trigger_consolidation", "pressure": self.wm.pressure})
            consolidated = self.consolidate(reason="reflection")
        changes = self.psyche.evolve({t: (s[0], s[1]) for t, s in self.tool_stats.items()}, self.tools.archetypes(), self.cycle)
        self.pending_events.append({
            "type": "reflection", "v": 1, "cycle": self.cycle, "adjustments": adjustments,
            "tool_rates": rates, "psyche_changes": changes, "psyche": self.psyche.snapshot(),
        })
        return consolidated

    def consolidate(self, reason: str = "demand") -> list[int]:
        goal_syms = {g.id: frozenset(self.goal_symbols(g)) for g in self.active_goals()}
        res = consolidate(self.wm, self.episodic, self.cycle, goal_syms, self.config.consolidation_threshold)
        self.pending_events.append({
            "type": "consolidation", "v": 1, "cycle": self.cycle, "reason": reason,
            "episodes": [{"id": e.id, "goal": e.goal, "summary": e.summary, "tags": list(e.tags)} for e in res.episodes],
            "removed": res.removed, "wm_size": len(self.wm),
        })
        return res.removed

    # ---- psyche and tools' world -----------------------------------------------------------
    def replace_psyche(self, psyche: Psyche, source: str = "user") -> None:
        """Takes effect at the next cycle (SPEC §9); the edit is a trace event."""
        self.pending_psyche = psyche
        self.pending_events.append({"type": "psyche_edit", "v": 1, "cycle": self.cycle, "source": source, "psyche": psyche.snapshot(),
                                    "vetoes": [p.name for p in psyche.shadow.veto_patterns], "biases": [p.name for p in psyche.shadow.bias_patterns]})

    def reload_rules(self, ruleset: RuleSet, files: list[list[str]]) -> None:
        """Rules read again from their files (`files`: [[file, text], ...]); they take effect
        at the next cycle, as a psyche edit does."""
        self.pending_rules = (ruleset, [list(f) for f in files])

    def use_rules(self, ruleset: RuleSet, files: list[list[str]]) -> None:
        """These rules from now on. The new engine's agenda starts at the graph's first triple:
        a rule added by the reload joins every fact known, not only those added after it
        (conclusions already in the graph are not added again)."""
        self.rules.park()
        self.rules = RuleEngine(self.kg, ruleset)
        self.rules_files = [list(f) for f in files]

    def reload_plugin(self, ref: str, tools: list[Any], source: dict) -> None:
        """A plugin module's tools made again from its recorded source (`source`: the
        recorded payload, tools/hotload.py); they take the place of the reference's tools at
        the next cycle."""
        self.pending_plugins[ref] = (list(tools), dict(source))

    def use_plugin(self, ref: str, tools: list[Any], source: dict) -> None:
        """These tools for the reference `ref` from now on (PluginError when they clash with
        another tool's name: nothing changed). What the agent derived from its tools (names,
        profiles, plan roles, capability gates) is derived again."""
        self.tools.replace_reference(ref, tools)
        self.plugin_sources[ref] = dict(source)
        self.tool_names = self.tools.names
        self._profiles = {name: self.vsa.keyword_vector(e.spec.profile) for name, e in self.tools.entries.items()}
        self._plan_roles = self.tools.plan_roles()
        self._sims.clear()
        self._add_plugin_gates()

    def abandon_goal(self, g: Goal, reason: str) -> None:
        """A goal no longer wanted (a reload found it gone from the scenario's file): failed
        with `reason`, its sub-goals with it; its history stays."""
        self._fail(g, reason)

    def confinement(self) -> confine.Confinement:
        if self.workspace is None:
            raise confine.Refused("no workspace folder is configured for this session")
        c = self.config
        return confine.Confinement(
            Path(self.workspace), c.max_file_bytes, tuple(c.http_allow_hosts), c.http_timeout,
            c.http_max_bytes, tuple(c.shell_allow), c.shell_timeout, c.shell_max_output,
            shell_unconfined=self.shell_unconfined, served=served_process(),
        )

    def answer_for(self, g: Goal) -> list[str]:
        """The person's answer recorded for this cycle (workbench dialog, `--ask`), else the
        scenario's headless answers."""
        if self.cycle in self.asked:
            return list(self.asked[self.cycle])
        for key in (g.description, "*"):
            if key in self.answers:
                return self.answers[key]
        return []

    def drain_events(self) -> list[dict]:
        ev, self.pending_events = self.pending_events, []
        return ev


PHASES = ("observe", "orient", "decide", "act", "learn")
PHASE_METHODS = {p: f"phase_{p}" for p in PHASES}  # the Agent method that runs each


def _first_distinct(groups: Iterable[Iterable[int]], n: int) -> list[int]:
    """The first `n` distinct ids of the groups, in order: what list(dict.fromkeys(all))[:n]
    gives, without walking the rest once `n` are found."""
    out: dict[int, None] = {}
    for group in groups:
        for s in group:
            if s not in out:
                out[s] = None
                if len(out) == n:
                    return list(out)
    return list(out)


class Cycle:
    """One cycle in progress: its phases run one at a time (`run_phase`), each leaving its
    partial result in `results`; `finish()` returns the CycleRecord once all have run."""

    ctx: GoalContext  # orient's, for decide and act
    chosen: Candidate  # decide's (an edit by the user replaces it before act)

    def __init__(self, agent: Agent, focus: Goal) -> None:
        self.agent = agent
        self.focus = focus
        self.number = agent.cycle
        self.results: dict[str, dict] = {}
        # what one phase hands the next (ctx from orient, chosen from decide: set before use)
        self.active: list[Goal] = []
        self.episodes: list = []
        self.pressure = 0.0
        self.candidates: list[Candidate] = []  # decide's score table (a world's gate offers from it)
        self.result: ToolResult | None = None
        self.failed = False
        self.consolidated: list[int] = []

    @property
    def next_phase(self) -> str | None:
        n = len(self.results)
        return PHASES[n] if n < len(PHASES) else None

    def run_phase(self) -> dict:
        phase = self.next_phase
        if phase is None:
            raise RuntimeError("every phase of this cycle has run: finish() it")
        out = getattr(self.agent, PHASE_METHODS[phase])(self)
        self.results[phase] = out
        return out

    def finish(self) -> dict:
        if self.next_phase is not None:
            raise RuntimeError(f"the cycle is not over: {self.next_phase} has not run")
        return self.agent.finish_cycle(self)
