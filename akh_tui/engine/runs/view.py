"""What a run shows: the view the workbench draws (live or recorded), records, goals, plans, and a
closer look (Orient, a symbol, why a tool, why a goal is not done, findings): a part of `Run`
(run.py), the one door to a run."""

from __future__ import annotations

from typing import Any, cast

from ..cycle.agent import Agent
from .breakpoints import parse_breakpoint
from .commands import MakePlan
from ..errors import InputError
from ..explain.decision import why_chosen, why_not_text
from ..psyche.model import Psyche
from ..records import CycleRecord, CycleSummary, View
from ..text import normalised_words
from ..tools.builtins import TOOL_NAMES
from ..knowledge.memory import KIND_RELEVANCE
from .base import Listener, RunBase


class Viewing(RunBase):
    """What a run shows."""

    @property
    def warnings(self) -> list[str]:
        """What the user should know about the run's settings before it runs (an allow-listed
        program known to run or write arbitrary things, ...), each naming file, line and field."""
        if self.scenario is None:
            return []
        out = list(self.scenario.config.warnings)
        off = self.scenario.config.served_off
        if off and self.agent is not None:  # said on the page: `serve` printed it only in its own terminal
            tools = [n for n in self.agent.tools.names if set(self.agent.tools.entries[n].spec.capabilities) & set(off)]
            verb, them = ("stays", "it") if len(off) == 1 else ("stay", "them")
            out.append(f"served in a browser tab: {', '.join(off)} {verb} off though the scenario turns {them} on, so "
                       f"{', '.join(tools)} are never offered (the shadow scenario's veto demo needs shell_exec); "
                       f"`akh-tui serve --allow-dangerous` lets a scenario turn {them} on")
        if self.start_changed:
            out.append(f"{', '.join(self.start_changed)} changed since this run started: its start is rebuilt from "
                       "the files as they are now (what a reload recorded replays as it was read), so its cycles may "
                       "replay differently from the record")
        if self.replay_divergence:
            out.append(self.replay_divergence)
        # bad plugins (left out, turned off, a decider that failed): named, the run goes on
        if self.agent is not None:
            out += self.agent.tools.problems
            out += getattr(self.agent.decider, "problems", [])
        elif self.scenario.registry is not None:
            out += self.scenario.registry.problems
        return out

    @property
    def live(self) -> bool:
        """False for a replay-only run (an imported trace): no engine to step or fork."""
        return self.agent is not None

    @property
    def cycle(self) -> int:
        return self.agent.cycle if self.agent is not None else self.last_cycle()

    @property
    def seed(self) -> int | None:
        return self.meta.get("seed")

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or "")

    @property
    def run_id(self) -> int:
        return int(self.meta["id"])

    def last_cycle(self) -> int:
        with self.lock:
            if self.agent is not None:  # a cycle part-way through its phases is not recorded yet
                return self.agent.cycle - (1 if self._cycle is not None else 0)
            return self.store.last_cycle(self.store.current())

    def finished(self) -> bool:
        return self.agent is None or self.agent.focus_goal() is None

    def subscribe(self, fn: Listener) -> None:
        """`fn` gets every cycle record and event as it happens (from the engine's thread)."""
        self._listeners.append(fn)

    def model_call(self, cycle: int) -> dict | None:
        """How this process's model decider got cycle `cycle`'s answer (replayed from the
        recorded calls or asked live, its latency), or None (another process decided it, or no
        model did). Kept by the decider, outside the record, so the trace's bytes never hold it."""
        calls = getattr(self.agent.decider, "calls", None) if self.agent is not None else None
        call = calls.get(cycle) if isinstance(calls, dict) else None
        return dict(call) if isinstance(call, dict) else None

    def record(self, cycle: int) -> CycleRecord | None:
        """A recorded cycle of the branch shown (no engine call)."""
        with self.lock:
            return cast("CycleRecord | None", self.store.record(self.store.current(), cycle))

    def records(self, start: int = 1, end: int | None = None) -> list[CycleRecord]:
        with self.lock:
            return cast("list[CycleRecord]",
                        list(self.store.records(self.store.current(), start, end if end is not None else self.last_cycle())))

    def summaries(self, start: int = 1, end: int | None = None) -> list[CycleSummary]:
        """The plots' figures of cycles [start, end] of the branch shown (session.summaries):
        a page of a long branch, read without decoding whole records."""
        with self.lock:
            last = end if end is not None else self.last_cycle()
            return cast("list[CycleSummary]", list(self.store.summaries(self.store.current(), start, last)))

    def branch_events(self, kinds: tuple[str, ...] = ("reflection", "consolidation")) -> list[tuple[int, str]]:
        """(cycle, type) of the branch's events of these kinds, in order (the plots mark them)."""
        with self.lock:
            return [(c, str(e.get("type"))) for c, e in self.store.events(self.store.current()) if e.get("type") in kinds]

    def marks(self) -> dict[int, str]:
        with self.lock:
            return self.store.marks(self.store.current())

    def view(self, cycle: int | None = None, wm_rows: int = 40) -> View:
        """What the workbench draws: the live state (cycle None), or recorded cycle `cycle` as
        it was. One producer for both, so a pane cannot show live and replayed data differently."""
        with self.lock:
            if cycle is None and self.agent is not None:
                return self._live_view(wm_rows)
            c = cycle if cycle is not None else self.last_cycle()
            rec = self.store.record(self.store.current(), c)
            if rec is None:
                raise InputError(f"cycle {c} is not recorded (recorded: 1..{self.last_cycle()})", field="cycle")
            return self._recorded_view(rec)

    def _psyche_view(self, psyche: dict, cycle: int, vetoes: list[str] | None, biases: list[str] | None,
                     pending: bool, fired: int) -> dict:
        configured = next(((v, b) for c, v, b in reversed(self._patterns) if c <= cycle), (0, 0))
        return dict(psyche) | {
            "vetoes": vetoes, "biases": biases,  # names where known (live), else None
            "vetoes_configured": len(vetoes) if vetoes is not None else configured[0],
            "biases_configured": len(biases) if biases is not None else configured[1],
            "vetoes_fired": fired, "pending": pending,
        }

    def _live_view(self, wm_rows: int) -> View:
        a = self.agent
        assert a is not None
        focus = a.focus_goal()
        wm = a.wm
        ps = a.psyche
        return {
            "cycle": a.cycle,
            "seed": a.seed,
            "focus": focus.id if focus else None,
            "goals": [
                g.summary() | {"children": list(g.children), "fail_reason": g.fail_reason,
                               "attempt": g.attempt, "criteria": g.criteria, "missing": g.missing()}
                for g in sorted(a.goals.values(), key=lambda g: g.id)
            ],
            "plans": {gid: p.to_dict() for gid, p in a.plans.items()},
            "wm": {
                "capacity": wm.capacity, "size": len(wm), "pressure": wm.pressure,
                "entries": [{"id": e.id, "cycle": e.cycle, "kind": e.kind, "relevance": e.relevance,
                             "refs": e.reference_count, "content": e.content} for e in wm.recent(wm_rows)],
            },
            "episodes": len(a.episodic),
            # the model decider's structured working memory, as injected into its prompt
            "model_memory": a.decider.model_memory(600),
            "psyche": self._psyche_view(ps.snapshot(), a.cycle, [p.name for p in ps.shadow.veto_patterns],
                                        [p.name for p in ps.shadow.bias_patterns], a.pending_psyche is not None,
                                        self._vetoes_fired),
            "replay": False,
        }

    def _recorded_view(self, record: dict) -> View:
        """The view of a recorded cycle, from its record alone. What the record does not hold
        is left empty rather than guessed: criteria "", missing [] (but the focus goal's, which
        the record keeps), no fail reason, episodes 0, working memory limited to the entries
        the cycle observed, pattern names unknown (their counts come from the run's psyche
        edits)."""
        focus = record["goal"]["id"]
        plan = record.get("plan")
        children: dict[int, list[int]] = {}
        for g in record["goals"]:
            if g["parent"] is not None:
                children.setdefault(g["parent"], []).append(g["id"])
        goals = [
            dict(g) | {
                "children": sorted(children.get(g["id"], [])),
                "fail_reason": None,
                "attempt": plan["attempt"] if plan is not None and plan["goal"] == g["id"] else 0,
                "criteria": "",
                "missing": list(record["act"].get("missing", [])) if g["id"] == focus else [],
            }
            for g in sorted(record["goals"], key=lambda g: g["id"])
        ]
        size, capacity = record["wm"]["size"], record["wm"]["capacity"]
        fired = self.store.count_vetoes(self.store.current(), record["cycle"])
        return {
            "cycle": record["cycle"],
            "seed": self.meta.get("seed"),
            "focus": focus,
            "goals": goals,
            "plans": {plan["goal"]: plan} if plan is not None else {},
            "wm": {"capacity": capacity, "size": size, "pressure": size / capacity if capacity else 0.0,
                   "entries": _observed_entries(record)},
            "episodes": 0,
            "model_memory": None,
            "psyche": self._psyche_view(record["psyche"], record["cycle"], None, None, False, fired),
            "replay": True,
        }

    def goals(self) -> list[dict]:
        """The goals now, with coverage, criteria and why a failed one failed."""
        with self.lock:
            if self.agent is None:
                return []
            return [{**g.summary(), "coverage": g.coverage, "criteria": g.criteria, "fail_reason": g.fail_reason}
                    for g in sorted(self.agent.goals.values(), key=lambda g: g.id)]

    def find_goal(self, text: str) -> dict | None:
        """A goal by id or (newest first) by description."""
        with self.lock:
            a = self.agent
            if a is None:
                return None
            if text.isdigit() and int(text) in a.goals:
                return a.goals[int(text)].summary()
            for g in sorted(a.goals.values(), key=lambda g: -g.id):
                if g.description.lower() == text.strip().lower():
                    return g.summary()
            return None

    def goal_words(self, goal_id: int | None) -> str:
        """The labels of a goal's symbols: a query the graph can answer word for word."""
        with self.lock:
            a = self.agent
            g = a.goals.get(goal_id) if a is not None and goal_id is not None else None
            if g is None:
                return ""
            return " ".join(a.kg.label(s) for s in a.goal_symbols(g)) or g.description  # type: ignore[union-attr]

    def plan(self, goal_id: int) -> dict:
        """The goal's plan, made now (and recorded) if it has none."""
        with self.lock:
            a = self._engine()
            g = a.goals[goal_id]
            if goal_id not in a.plans:
                self.apply(MakePlan(goal_id))
            return {"goal": g.summary(), "flags": a.strategy_flags(g), "plan": a.plans[goal_id].to_dict(),
                    "steps": [{"marker": st.marker, "index": st.index, "tool": st.tool, "rationale": st.rationale}
                              for st in a.plans[goal_id].steps]}

    def recall(self, query: str, top_k: int) -> dict:
        with self.lock:
            a = self._engine()
            symbols = [sid for w in normalised_words(query) for sid in a.kg.by_key(w)]
            eps = a.episodic.recall(symbols, top_k)
            return {"query": query, "symbols": [a.kg.label(x) for x in symbols],
                    "episodes": [e.to_dict() | {"learnings": [a.kg.label(x) for x in e.learnings]} for e in eps]}

    def psyche_toml(self) -> str:
        with self.lock:
            a = self._engine()
            return (a.pending_psyche or a.psyche).to_toml()

    def current_psyche(self) -> Psyche:
        """A copy of the psyche the next cycle runs with (a pending edit included)."""
        with self.lock:
            a = self._engine()
            return (a.pending_psyche or a.psyche).copy()

    def check_breakpoints(self, breaks: list, field: str = "--break") -> list:
        """The breakpoints again through the one validator, with this run's tools (its plugins
        included): a tool name no tool of the run has is refused. Returns them."""
        names = self.tool_names()
        return [parse_breakpoint(bp.spec, field=field, tools=names) for bp in breaks]

    def tool_names(self) -> tuple[str, ...]:
        """The run's tools in score-table order: built-ins, then plugins."""
        if self.agent is not None:
            return self.agent.tool_names
        rec = self.latest
        if rec is not None:  # a replay: the tools its records scored
            return tuple(c["tool"] for c in rec["decide"]["candidates"])
        return TOOL_NAMES

    def orient(self, goal_id: int | None = None, symbol: str | None = None) -> dict:
        """What Orient saw, now: for goal `goal_id` (default the focus goal) or from `symbol`.
        {"cycle", "goal", "symbols", "activation": {"nodes", "edges", "edges_read"}, "K",
        "adjacent", "added"} (engine/explain/orient.py). Only the neighbourhood is read.
        InputError for an unknown goal or symbol, or a replayed trace (no graph)."""
        from ..explain import orient as orient_view

        with self.lock:
            a = self._engine()
            try:
                return orient_view.orient(a, goal_id, symbol)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="symbol" if symbol is not None else "goal") from None

    def symbol(self, label: str) -> dict:
        """A symbol inspector: {"symbol", "kind", "triples" (each with provenance and, when
        inferred, its "derivation" tree), "total", "shown"} (engine/explain/orient.py)."""
        from ..explain import orient as orient_view

        with self.lock:
            a = self._engine()
            try:
                return orient_view.symbol_info(a, label)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="symbol") from None

    def why(self, cycle: int, tool: str | None = None) -> dict:
        """A recorded cycle's Decide explained from its record alone: {"cycle", "chosen",
        "why_chosen": lines, "tool", "why_not": engine/explain.why_not's dict or None,
        "lines": what to print (why_not_text for `tool`, else why_chosen)}. InputError for an
        unrecorded cycle or a tool that is not a candidate."""
        from ..explain.decision import why_not

        rec = self.record(cycle)
        if rec is None:
            raise InputError(f"cycle {cycle} is not recorded (recorded: 1..{self.last_cycle()})", field="--cycle")
        from ..explain.decision import model_lines

        chosen = rec["decide"]["tool"]
        out: dict[str, Any] = {"cycle": cycle, "chosen": chosen, "tool": tool, "why_not": None,
                               "why_chosen": why_chosen(dict(rec)) + model_lines(dict(rec), self.model_call(cycle))}
        if tool is None:
            out["lines"] = out["why_chosen"]
            return out
        try:
            out["why_not"] = why_not(dict(rec), tool)
        except KeyError as exc:
            raise InputError(str(exc.args[0]), field="--tool") from None
        out["lines"] = why_not_text(dict(rec), tool)
        return out

    def explain_goal(self, goal_id: int) -> dict:
        """Why goal `goal_id` is (not) done: each criterion found (cycle, tool, evidence) or
        missing (in the graph since when and from where; which tool and input would return it),
        and "lines", the explanation as text (engine/explain/goal.py)."""
        from ..explain.goal import explain_goal

        with self.lock:
            a = self._engine()
            files = list(self.scenario.kg) if self.scenario is not None else []
            g = a.goals.get(goal_id)
            # only the cycles of this goal and its sub-goals are read (a long run's others never
            # are), streamed a page at a time: the explanation keeps no record
            records = self.store.goal_records(self.store.current(), [goal_id, *g.children]) if g else iter(())
            try:
                return explain_goal(a, records, goal_id, files)
            except KeyError as exc:
                raise InputError(str(exc.args[0]), field="--goal") from None

    def synthesize(self, goal_id: int, grammar: str | None = None) -> dict:
        """A goal's findings (its evidence triples, never hypotheses) in a grammar: `narrative`,
        `formal`, `terse`, or a path to a grammar TOML; default the persona's
        `grammar_preference`. {"goal", "grammar", "facts", "text"} (engine/explain/findings.py).
        InputError names file, line and field of a bad grammar file."""
        from ..explain.findings import synthesize

        with self.lock:
            a = self._engine()
            if goal_id not in a.goals:
                raise InputError(f"no goal #{goal_id}", field="--goal")
            return synthesize(a, goal_id, grammar)

    def _engine(self) -> Agent:
        if self.agent is None:
            raise InputError("this run was imported from a trace: it can be replayed, not changed")
        return self.agent


def _observed_entries(record: dict) -> list[dict]:
    """The working-memory entries a recorded cycle observed, oldest first. Their cycle is not
    recorded; every cycle pushes exactly one "Observe:" entry first, so counting those back
    from the newest entry (pushed in the previous cycle) dates each one. Reference counts are
    not recorded: 0."""
    recent = record["observe"]["recent"]
    out = []
    cycle = record["cycle"] - 1
    for e in reversed(recent):
        out.append({"id": e["id"], "cycle": max(cycle, 0), "kind": e["kind"],
                    "relevance": KIND_RELEVANCE.get(e["kind"], 0.5), "refs": 0, "content": e["content"]})
        if e["kind"] == "observation" and e["content"].startswith("Observe:"):
            cycle -= 1
    out.reverse()
    return out
