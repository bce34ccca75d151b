"""`akh-tui agent …`: headless runs on the persisted session."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from .cli import data_dir
from .engine.agent import Agent
from .engine.breakpoints import first_hit
from .engine.breakpoints import parse as parse_breakpoint
from .engine.controller import Controller
from .engine.errors import InputError
from .engine.goals import make_goal
from .engine.history import apply_inputs
from .engine.scenario import Scenario, build_agent, load_scenario
from .engine.session import SessionStore
from .engine.text import normalised_words
from .engine.trace import TraceWriter

PROGRESS_FROM = 50  # runs at least this long show a progress bar (on a terminal)


def make_run_decider(kind: str):
    """The run's decide strategy; the llm one reads its endpoint from the user config."""
    from .engine.llm import make_decider

    if kind != "llm":
        return make_decider(kind)
    from .tui.userconfig import UserConfig  # plain TOML reading: no textual

    cfg = UserConfig.load()
    if cfg.error:
        raise InputError(cfg.error.removeprefix("config ignored: "), field="llm")
    return make_decider(kind, cfg.llm, file=str(cfg.path))


class Session:
    """The persisted session of a data dir: its store, scenario and agent."""

    def __init__(self, args) -> None:
        self.dir = data_dir(args.data_dir)
        try:
            self.store = SessionStore(self.dir / "session.db")
        except (OSError, ValueError) as exc:  # not a folder, cannot be created, NUL in the path
            reason = getattr(exc, "strerror", None) or exc
            raise InputError(f"cannot use the data dir: {reason}", file=str(self.dir), field="--data-dir") from None
        self.meta = self.store.meta() if self.store.has_session() else None

    def workspace(self, scenario: Scenario) -> Path:
        ws = Path(scenario.config.workspace)
        return ws if ws.is_absolute() else self.dir / ws

    def new(self, scenario: Scenario, seed: int | None, goals: list[str] | None, decider: str = "utility") -> Agent:
        agent = build_agent(scenario, seed, goals, self.workspace(scenario), decider=make_run_decider(decider))
        self.meta = {"scenario": str(scenario.path), "name": scenario.name, "seed": agent.seed, "goals": goals,
                     "decider": decider, "config": agent.config.to_dict(), "psyche": agent.psyche.snapshot()}
        self.store.start(agent, self.meta)
        return agent

    def resume(self, branch: str | None = None) -> tuple[Scenario, Agent]:
        if self.meta is None:
            raise InputError(f"no session to resume in {self.dir} (start one with `akh-tui agent run`)", field="--data-dir")
        scenario = load_scenario(self.meta["scenario"])
        bid = self.store.find_branch(self.meta["id"], branch) if branch is not None else None
        return scenario, self.store.resume(self.rebuild(scenario), apply_inputs, bid)

    def rebuild(self, scenario: Scenario):
        """A fresh agent of the current run's scenario (no goals): what restores start from."""
        decider = make_run_decider(self.meta.get("decider", "utility"))
        return lambda: build_agent(scenario, self.meta["seed"], None, self.workspace(scenario), add_goals=False,
                                   decider=decider)

    def open_or_new(self, scenario_arg: str | None) -> tuple[Scenario, Agent]:
        if self.meta is not None and scenario_arg is None:
            return self.resume()
        scenario = load_scenario(scenario_arg or "zoo")
        if self.meta is not None and self.meta["scenario"] == str(scenario.path):
            return self.resume()
        return scenario, self.new(scenario, None, [])

    def controller(self, scenario: Scenario, agent: Agent, trace: str | None) -> Controller:
        writer = TraceWriter(trace) if trace else None
        return Controller(agent, scenario.name, writer, self.store, rebuild=self.rebuild(scenario))


def dispatch(args, out: Console, err: Console) -> int:
    fn = {
        "run": cmd_run, "cycle": cmd_cycle, "resume": cmd_resume, "plan": cmd_plan,
        "reflect": cmd_reflect, "consolidate": cmd_consolidate, "recall": cmd_recall, "fork": cmd_fork,
    }[args.agent_command]
    return fn(args, out, err)


def _check_trace_path(path: str | None) -> None:
    """Refuse an unusable --trace before anything runs (the file is only created later)."""
    if not path:
        return
    try:
        p = Path(path)
        if p.is_dir():
            raise InputError("is a folder, not a file", file=path, field="--trace")
        if not p.resolve().parent.is_dir():
            raise InputError("the trace file's folder does not exist", file=path, field="--trace")
    except (OSError, ValueError, RuntimeError) as exc:  # name too long, NUL, symlink loop
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(f"not a usable path: {reason}", file=path, field="--trace") from None


def _check_goal(text: str, flag: str) -> None:
    """A goal given on the command line is checked before any session is opened."""
    try:
        make_goal(0, text)
    except InputError as exc:
        raise InputError(exc.message, field=flag) from None


# ---- run / resume / cycle -----------------------------------------------------------------

def cmd_run(args, out: Console, err: Console) -> int:
    _check_trace_path(args.trace)
    breaks = [parse_breakpoint(b) for b in args.breaks]  # before anything runs or is written
    scenario = load_scenario(args.scenario)
    goals = None
    if args.goals is not None:
        goals = [g.strip() for g in args.goals.split(",") if g.strip()]
        if not goals:
            raise InputError("no goal descriptions given", field="--goals")
        for g in goals:
            _check_goal(g, "--goals")
    s = Session(args)
    seed = scenario.seed if args.seed is None else args.seed
    meta = s.meta
    same = (
        meta is not None and meta["scenario"] == str(scenario.path) and meta["seed"] == seed and meta["goals"] == goals
        and meta.get("decider", "utility") == args.decider
    )
    agent = None
    if same and not args.fresh:
        _, candidate = s.resume()
        if candidate.focus_goal() is not None:
            agent = candidate
            if not args.json:
                err.print(Text(f"continuing the session at cycle {agent.cycle} (use --fresh to start over)", style="yellow"))
    if agent is None:
        agent = s.new(scenario, seed, goals, args.decider)
    return _drive(s, scenario, agent, args.max_cycles, args.trace, args.json, out, err, breaks=breaks)


def cmd_resume(args, out: Console, err: Console) -> int:
    _check_trace_path(args.trace)
    breaks = [parse_breakpoint(b) for b in args.breaks]
    s = Session(args)
    scenario, agent = s.resume(args.branch)
    if not args.json:
        name = s.store.branch_info(s.store.branch)["name"]
        err.print(Text(f"resuming {scenario.name} (run {s.meta['id']}, branch {name}) at cycle {agent.cycle}", style="yellow"))
    return _drive(s, scenario, agent, args.max_cycles, args.trace, args.json, out, err, breaks=breaks)


def cmd_cycle(args, out: Console, err: Console) -> int:
    _check_trace_path(args.trace)
    _check_goal(args.goal, "--goal")
    s = Session(args)
    scenario, agent = s.open_or_new(args.scenario)
    ctl = s.controller(scenario, agent, args.trace)
    goal = _find_goal(agent, args.goal)
    if goal is None or goal.status not in ("active", "suspended"):
        goal = ctl.add_goal(args.goal)
    return _drive(s, scenario, agent, 1, None, args.json, out, err, ctl=ctl)


def _drive(s: Session, scenario: Scenario, agent: Agent, max_cycles: int, trace, as_json: bool,
           out: Console, err: Console, ctl: Controller | None = None, breaks: list | None = None) -> int:
    ctl = ctl or s.controller(scenario, agent, trace)
    rows: list[dict] = []
    fired: list[str] = []
    previous = [agent.last_record]

    def should_stop(rec: dict) -> bool:
        hit = first_hit(breaks, rec, previous[0]) if breaks else None
        previous[0] = rec
        if hit:
            fired.append(f"cycle {rec['cycle']}: {hit}")
        return hit is not None

    def summarise(rec: dict) -> dict:
        a = rec["act"]
        return {
            "cycle": rec["cycle"], "goal": rec["goal"]["id"], "tool": rec["decide"]["tool"],
            "input": rec["decide"]["input"], "progress": a["progress"], "coverage": a["coverage"],
            "vetoed": a["vetoed"], "veto": a["veto"], "breakdown": rec["decide"]["breakdown"],
            **({"llm": rec["decide"]["llm"]} if "llm" in rec["decide"] else {}),
        }

    live = not as_json and max_cycles < PROGRESS_FROM
    progress = None
    if not as_json and max_cycles >= PROGRESS_FROM and err.is_terminal:
        progress = Progress(TextColumn("cycles"), BarColumn(), MofNCompleteColumn(), console=err, transient=True)

    def on_record(rec: dict) -> None:
        row = summarise(rec)
        if as_json or not live:
            rows.append(row)
        else:
            _print_row(out, row)
        if progress is not None:
            progress.advance(task)

    try:
        if progress is not None:
            with progress:
                task = progress.add_task("run", total=max_cycles)
                n, why = ctl.run(max_cycles, on_record, should_stop)
        else:
            n, why = ctl.run(max_cycles, on_record, should_stop)
        if fired:
            why = fired[0]
    finally:
        ctl.close()
    goals = [
        {**g.summary(), "coverage": g.coverage, "criteria": g.criteria, "fail_reason": g.fail_reason}
        for g in sorted(agent.goals.values(), key=lambda g: g.id)
    ]
    if as_json:
        print(json.dumps({"scenario": scenario.name, "seed": agent.seed, "cycles_run": n, "stop": why,
                          "cycle": agent.cycle, "goals": goals, "cycles": rows}))
        return 0
    if not live:
        for row in rows[-20:] if len(rows) > 20 else rows:
            _print_row(out, row)
        if len(rows) > 20:
            out.print(Text(f"… {len(rows) - 20} earlier cycles in the session store (and the trace, if written)", style="dim"))
    out.print(Text(f"{n} cycle(s) run, stopped: {why}; session at cycle {agent.cycle}"))
    _print_goals(out, goals)
    return 0


def _print_row(out: Console, row: dict) -> None:
    style = "red" if row["vetoed"] else {"completed": "green", "advanced": "cyan", "failed": "red"}.get(row["progress"], "")
    t = Text()
    t.append(f"{row['cycle']:>4} ", style="bold")
    t.append(f"goal #{row['goal']:<3} ")
    t.append(f"{row['tool']:<18}", style="magenta")
    inp = row["input"] if len(row["input"]) <= 24 else row["input"][:23] + "…"
    t.append(f"{inp:<25}")
    t.append(f"{row['progress']:<10}", style=style)
    t.append(f"cov {row['coverage']:.2f} ")
    t.append(row["breakdown"], style="dim")
    if row["vetoed"]:
        t.append(f"  VETOED by '{row['veto']}'", style="bold red")
    llm = row.get("llm")
    if llm is not None:
        t.append(f"  model: {llm['status']}", style="yellow" if llm["status"] != "accepted" else "dim")
        if llm["status"] != "accepted":
            t.append(f" ({llm['reason']}; utility choice used)", style="yellow")
    out.print(t)


def _print_goals(out: Console, goals: list[dict]) -> None:
    t = Table(title="Goals")
    for col in ("id", "goal", "status", "priority", "coverage", "parent", "note"):
        t.add_column(col)
    colour = {"completed": "green", "failed": "red", "suspended": "yellow", "active": "cyan"}
    for g in goals:
        t.add_row(str(g["id"]), Text(g["description"]), Text(g["status"], style=colour[g["status"]]), str(g["priority"]),
                  f"{g['coverage']:.2f}", "" if g["parent"] is None else f"#{g['parent']}", Text(g["fail_reason"] or ""))
    out.print(t)


def _find_goal(agent: Agent, text: str):
    if text.isdigit() and int(text) in agent.goals:
        return agent.goals[int(text)]
    for g in sorted(agent.goals.values(), key=lambda g: -g.id):
        if g.description.lower() == text.strip().lower():
            return g
    return None


# ---- plan / reflect / consolidate / recall --------------------------------------------------

def cmd_plan(args, out: Console, err: Console) -> int:
    _check_goal(args.goal, "--goal")
    s = Session(args)
    scenario, agent = s.open_or_new(args.scenario)
    ctl = s.controller(scenario, agent, None)
    goal = _find_goal(agent, args.goal)
    if goal is None:
        goal = ctl.add_goal(args.goal)
    if goal.id not in agent.plans:
        agent.ensure_plan(goal)
        s.store.save(agent, None, [], inputs=[("plan", goal.id)])
    plan = agent.plans[goal.id]
    ctl.close()
    if args.json:
        print(json.dumps({"goal": goal.summary(), "flags": agent.strategy_flags(goal), "plan": plan.to_dict()}))
        return 0
    out.print(Text(f"goal #{goal.id} {goal.description!r}: attempt {plan.attempt}, {plan.strategy}, {plan.status}"))
    for st in plan.steps:
        out.print(Text(f"  {st.marker} {st.index + 1}. {st.tool:<18} {st.rationale}"))
    return 0


def cmd_reflect(args, out: Console, err: Console) -> int:
    s = Session(args)
    scenario, agent = s.resume()
    ctl = s.controller(scenario, agent, None)
    events = ctl.reflect()
    ctl.close()
    ev = next(e for e in events if e["type"] == "reflection")
    if args.json:
        print(json.dumps(ev))
        return 0
    out.print(Text(f"reflection at cycle {ev['cycle']}"))
    for a in ev["adjustments"] or [{"kind": "no adjustment"}]:
        out.print(Text("  " + ", ".join(f"{k}={v}" for k, v in a.items())))
    out.print(Text("  tool success rates: " + (", ".join(f"{t} {r:.2f}" for t, r in ev["tool_rates"].items()) or "none yet")))
    for c in ev["psyche_changes"]:
        out.print(Text("  psyche: " + ", ".join(f"{k}={v}" for k, v in c.items())))
    return 0


def cmd_consolidate(args, out: Console, err: Console) -> int:
    s = Session(args)
    scenario, agent = s.resume()
    ctl = s.controller(scenario, agent, None)
    ev = ctl.consolidate()
    ctl.close()
    if args.json:
        print(json.dumps(ev))
        return 0
    out.print(Text(f"consolidated {len(ev['removed'])} working-memory entries into {len(ev['episodes'])} episode(s); WM now {ev['wm_size']}"))
    for e in ev["episodes"]:
        out.print(Text(f"  episode {e['id']} (goal {e['goal']}): {e['summary']}"))
    return 0


def cmd_recall(args, out: Console, err: Console) -> int:
    s = Session(args)
    _, agent = s.resume()
    s.store.close()
    symbols = [sid for w in normalised_words(args.query) for sid in agent.kg.by_key(w)]
    eps = agent.episodic.recall(symbols, args.top_k)
    if args.json:
        print(json.dumps({"query": args.query, "symbols": [agent.kg.label(x) for x in symbols],
                          "episodes": [e.to_dict() | {"learnings": [agent.kg.label(x) for x in e.learnings]} for e in eps]}))
        return 0
    if not symbols:
        out.print(Text(f"no symbol in the graph matches {args.query!r}"))
    if not eps:
        out.print(Text("no episode recalled"))
    for e in eps:
        out.print(Text(f"episode {e.id} (cycle {e.cycle}, goal {e.goal}): {e.summary}"))
        out.print(Text("  learned: " + ", ".join(agent.kg.label(x) for x in e.learnings[:15]), style="dim"))
    return 0


def cmd_fork(args, out: Console, err: Console) -> int:
    from .engine.psyche import Psyche

    edits: dict = {}
    for item in args.archetypes:
        name, sep, value = item.partition("=")
        try:
            edits.setdefault("archetypes", {})[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"expected ARCHETYPE=WEIGHT, e.g. explorer=0.9, got {item!r}", field="--set") from None
        if not sep:
            raise InputError(f"expected ARCHETYPE=WEIGHT, e.g. explorer=0.9, got {item!r}", field="--set")
    if args.disable:
        edits["disable_tools"] = args.disable
    for g in args.fork_goals:
        _check_goal(g, "--goal")
    if args.fork_goals:
        edits["goals"] = args.fork_goals
    if args.psyche:
        edits["psyche"] = Psyche.load(args.psyche).to_toml()
    s = Session(args)
    scenario, agent = s.resume()
    ctl = s.controller(scenario, agent, None)
    try:
        event = ctl.fork(args.at, args.name, edits)
    except ValueError as exc:  # a weight out of range, an unknown tool or archetype, no name
        msg = str(exc)
        field = "--set" if "archetype" in msg else "--disable" if "tool" in msg else "--name"
        raise InputError(msg, field=field) from None
    finally:
        ctl.close()
    if args.json:
        print(json.dumps(event))
        return 0
    out.print(Text(f"branch {event['branch']} forked from {event['parent']} after cycle {event['cycle']}"
                   f" ({', '.join(event['edits']) or 'no edits'}); it is now the current branch: "
                   f"`akh-tui agent resume` continues it"))
    return 0
