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

from . import confine
from .config import AgentConfig
from .context import GoalContext
from .deciders import Decider, UtilityDecider
from .goals import Goal, make_goal, split_criteria
from .kg import KnowledgeGraph
from .memory import EpisodicMemory, WorkingMemory, consolidate
from .plan import Plan, make_plan
from .psyche import Psyche
from .rules import RuleEngine, RuleSet
from .scoring import Candidate, choose
from .text import STOP_WORDS, STRATEGY_KEYWORDS, normalised_words
from .tools import SPEC_BY_NAME, TOOL_ARCHETYPES, TOOL_NAMES, TOOLS, ToolResult
from .vsa import VSA, SymbolVectors

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
    ) -> None:
        # each agent owns its config: forks edit theirs (disabled tools) without touching others
        self.config = copy.deepcopy(config) if config is not None else AgentConfig()
        self.seed = seed
        self.kg = kg
        self.vsa = VSA(seed, self.config.vsa_dim)
        self.symbol_vectors = SymbolVectors(kg, self.vsa)
        self.rules = RuleEngine(kg, rules)
        self.psyche = psyche
        self.workspace = workspace
        self.answers = answers or {}
        # The utility table decides by default (SPEC §6); a model decider (engine/llm.py) asks
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
        self.pending_psyche: Psyche | None = None
        self.base_symbols = len(kg.symbols)  # what the scenario loaded; later additions persist
        self.base_triples = len(kg.log)
        self._profiles = {name: self.vsa.keyword_vector(spec.profile) for name, spec in SPEC_BY_NAME.items()}
        self._strategy_vectors = {
            name: self.vsa.keyword_vector((name, *words)) for name, words in STRATEGY_KEYWORDS.items()
        }
        self._sims: dict[tuple[int, str], float] = {}
        self._goal_symbols: dict[int, tuple[int, list[int]]] = {}
        self._orient_cache: dict[int, tuple[int, GoalContext]] = {}

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
            self.kg.add(g.symbol, "agent:parent_goal", self.goals[parent].symbol, cycle=self.cycle)
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
            plan = self.plans[g.id] = make_plan(g.id, g.description, self.strategy_flags(g), g.attempt)
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
        order = sorted(activation, key=lambda s: (-activation[s], s))
        ctx = GoalContext(g, symbols, adjacent, activation, order, episodes)
        self._orient_cache[g.id] = (version, ctx)
        return ctx

    def spread(self, seeds: list[int], walked: list | None = None) -> dict[int, float]:
        """Spreading activation (SPEC §4): max over paths, ≤ 2 hops, decay 0.5, floor 0.1.

        At most `activation_fanout` edges per node and ACTIVATION_BUDGET edges in all are read,
        nearest and strongest first, so hubs cannot make a cycle's cost grow with the graph.
        `walked`, when given, receives (hop, from, triple, value, raised) for every edge read:
        the orient view shows the walk exactly as this computed it."""
        kg = self.kg
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
                edges = kg.adjacent(node, limit=min(fanout, budget))
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
            frontier = sorted(nxt, key=lambda s: (-act[s], s))
        for s in seeds:
            act.pop(s, None)
        return {s: v for s, v in act.items() if not kg.symbols[s].meta}

    # ---- the cycle -------------------------------------------------------------------------
    def step(self) -> dict | None:
        """Run one OODA cycle; None (and no cycle) when no goal is active."""
        if self.pending_psyche is not None:
            self.psyche, self.pending_psyche = self.pending_psyche, None
        focus = self.focus_goal()
        if focus is None:
            return None
        self.cycle += 1
        cycle = self.cycle
        wm = self.wm
        wm.evicted.clear()
        kg = self.kg

        # Observe
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
            "observation", cycle, self.goal_symbols(focus)[:20], focus.id,
        )

        # Orient
        contexts = {g.id: self.orient_goal(g, [ep for ep in episodes if set(ep.learnings).intersection(self.goal_symbols(g))]) for g in active}
        ctx = contexts[focus.id]
        learnings = list(dict.fromkeys(s for ep in ctx.episodes for s in ep.learnings))[:10]
        pressure = wm.pressure
        orient = {
            "adjacent": {str(gid): c.adjacent for gid, c in contexts.items()},
            "activated": [{"symbol": kg.label(s), "activation": a} for s, a in ctx.top],
            "learnings": [kg.label(s) for s in learnings],
            "pressure": pressure,
            "K": ctx.K, "I": ctx.I, "E": ctx.E,
        }
        if ctx.adjacent or ctx.top or learnings:
            act_text = ", ".join(f"{kg.label(s)} {a:.2f}" for s, a in ctx.top)
            wm.push(
                f"Orient: {ctx.adjacent} adjacent triple(s) for #{focus.id}; activated: {act_text or 'none'}",
                "inference", cycle, [s for s, _ in ctx.top], focus.id,
            )

        # Decide
        plan = self.ensure_plan(focus)
        candidates = self.score(ctx, plan, pressure)
        self._skip_unoffered_steps(plan, candidates)
        chosen = choose(candidates)
        chosen, llm = self.decider.choose(self, focus, ctx, candidates, chosen)
        for e in wm.recent(5):
            e.reference_count += 1
        breakdown = chosen.breakdown()
        wm.push(f"Decide: {chosen.tool}({chosen.input}) {breakdown}", "decision", cycle, ctx.symbols[:20], focus.id, chosen.tool)
        step = plan.current
        decide = {
            "tool": chosen.tool,
            "input": chosen.input,
            "breakdown": breakdown,
            "plan_step": step.tool if step else None,
            "candidates": [c.to_dict() for c in candidates],
        }
        if llm is not None:
            decide["decider"] = "llm"
            decide["llm"] = llm

        # Act
        act = self.act(focus, ctx, chosen)
        self.last_output = act["output"]
        if not act["success"]:
            self.recent_failures.append(f"cycle {cycle}: {chosen.tool}: {act['output'][:160]}")
        self.decider.learn(self, focus, chosen.tool, act)
        self.last_record = record = {
            "type": "cycle", "v": 1, "cycle": cycle,
            "goal": {"id": focus.id, "description": focus.description},
            "observe": observe, "orient": orient, "decide": decide, "act": act,
            "goals": [g.summary() for g in sorted(self.goals.values(), key=lambda g: g.id)],
            "plan": self.plans[focus.id].to_dict() if focus.id in self.plans else None,
            "wm": {"size": len(wm), "capacity": wm.capacity, "evicted": list(wm.evicted), "consolidated": act.pop("_consolidated", [])},
            "psyche": self.psyche.snapshot(),
        }
        return record

    def score(self, ctx: GoalContext, plan: Plan, pressure: float) -> list[Candidate]:
        g = ctx.goal
        caps = self.config.capabilities
        step = plan.current if plan.status == "active" else None
        named = {t for ep in ctx.episodes for t in ep.tags}
        out = []
        for name in TOOL_NAMES:
            spec = SPEC_BY_NAME[name]
            gated = [c for c in spec.capabilities if not caps.get(c, False)]
            if name in self.config.disabled_tools:
                offer_ok, base, text, why, arg = False, 0.0, "", "not offered: disabled for this run", None
            elif gated:
                offer_ok, base, text, why, arg = False, 0.0, "", f"not offered: capability {', '.join(gated)} disabled", None
            else:
                o = TOOLS[name].offer(self, ctx)
                offer_ok, base, text, arg = o.offered, o.base, o.input, o.arg
                why = None if o.offered else f"not offered: {o.why_not}"
            c = Candidate(
                name, offer_ok, why, base,
                recency=g.recency_penalty(name),
                novelty=0.15 if g.tool_uses.get(name, 0) == 0 else 0.0,
                episodic=0.2 if name in named else 0.0,
                pressure=0.2 if name == "memory_recall" and pressure > 0.7 else 0.0,
                archetype=self.psyche.archetype_bonus(spec.archetype),
                plan=0.10 if step is not None and step.tool == name else 0.0,
                input=text,
                arg=arg,
            )
            out.append(c)
        return out

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

    def act(self, focus: Goal, ctx: GoalContext, chosen: Candidate) -> dict:
        cycle, kg = self.cycle, self.kg
        spec = SPEC_BY_NAME[chosen.tool]
        desc = f"tool={chosen.tool} input={chosen.input}"
        shadow = self.psyche.shadow
        veto = shadow.check_veto(desc, spec.capabilities, spec.danger)
        bias, bias_names = shadow.check_bias(desc, spec.capabilities, spec.danger)
        result: ToolResult | None = None
        failed = False
        if veto is not None:
            output = f"VETOED by shadow pattern '{veto.name}': {veto.explanation}"
            failed = True
            self.psyche.record_shadow_encounter()
            self.provenance.append(ProvenanceRecord("ShadowVeto", cycle, focus.id, chosen.tool, veto.name))
        else:
            try:
                result = TOOLS[chosen.tool].run(self, ctx, chosen.arg)
                output = result.output
            except confine.Refused as exc:
                failed, output = True, f"refused: {exc}"
            except Exception as exc:  # a tool bug is a failed action, never a crashed agent
                failed, output = True, f"error: {type(exc).__name__}: {exc}"
        output = output[: self.config.output_chars]
        focus.record_use(chosen.tool)
        stats = self.tool_stats.setdefault(chosen.tool, [0, 0])
        stats[0] += 1
        stats[1] += 0 if failed else 1
        returned_symbols = []
        if result is not None:
            returned_symbols = list(dict.fromkeys([s for t in result.triples for s in (t.subject, t.object)] + result.symbols))[:20]
        self.wm.push(f"Act: {chosen.tool} -> {output[:200]}", "action", cycle, returned_symbols, focus.id, chosen.tool, not failed)

        # Evaluate (SPEC §8)
        focus.cycles_worked += 1
        if failed:
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
                self.plans[focus.id] = make_plan(focus.id, focus.description, self.strategy_flags(focus), focus.attempt, failed_tool=chosen.tool)
                self.pending_events.append({"type": "backtrack", "v": 1, "cycle": cycle, "goal": focus.id, "attempt": focus.attempt, "failed_tool": chosen.tool, "strategy": self.plans[focus.id].strategy})

        # Stall (SPEC §7)
        if focus.status == "active" and focus.since_progress >= focus.stall_threshold:
            if focus.origin == "decomposition":
                self._fail(focus, f"stalled for {focus.since_progress} cycles (sub-goals are not decomposed again)")
            else:
                self.decompose(focus)

        consolidated: list[int] = []
        if cycle % self.config.reflection_interval == 0:
            consolidated += self.reflect()
        if self.config.auto_consolidate and self.wm.pressure > self.config.consolidation_pressure:
            consolidated += self.consolidate(reason="pressure")
        return {
            "success": not failed,
            "vetoed": veto is not None,
            "veto": veto.name if veto is not None else None,
            "bias": bias,
            "bias_patterns": bias_names,
            "output": output,
            "progress": progress,
            "coverage": focus.coverage,
            "missing": focus.missing(),
            "_consolidated": consolidated,
        }

    # ---- goal status -----------------------------------------------------------------------
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
        changes = self.psyche.evolve({t: (s[0], s[1]) for t, s in self.tool_stats.items()}, TOOL_ARCHETYPES, self.cycle)
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

    def confinement(self) -> confine.Confinement:
        if self.workspace is None:
            raise confine.Refused("no workspace folder is configured for this session")
        c = self.config
        return confine.Confinement(
            Path(self.workspace), c.max_file_bytes, tuple(c.http_allow_hosts), c.http_timeout,
            c.http_max_bytes, tuple(c.shell_allow), c.shell_timeout, c.shell_max_output,
        )

    def answer_for(self, g: Goal) -> list[str]:
        for key in (g.description, "*"):
            if key in self.answers:
                return self.answers[key]
        return []

    def drain_events(self) -> list[dict]:
        ev, self.pending_events = self.pending_events, []
        return ev
