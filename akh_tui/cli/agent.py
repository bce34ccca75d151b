"""`akh-tui agent …`: headless runs on the persisted session."""

from __future__ import annotations

import argparse
import json
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from .. import engine  # the face: each name loads on first use, so `--help` (which builds this parser) loads none
from ..engine import InputError
from .argtypes import Subcommands
from .soar import add_compare, cmd_compare

PROGRESS_FROM = 50  # runs at least this long show a progress bar (on a terminal)


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """`akh-tui agent …`: its sub-commands, each opening a scenario (a new run's or the stored one's)."""
    from .argtypes import non_negative, positive
    from .trust import add_flags

    agent = sub.add_parser("agent", help="run the agent headless")
    agent.set_defaults(handler=dispatch)
    asub = agent.add_subparsers(dest="agent_command", required=True)

    run = asub.add_parser("run", parents=[common], help="run cycles on a scenario (continues an unfinished session of the same run)")
    run.add_argument("--scenario", default="zoo", help="bundled scenario name or path to a .toml file (default: zoo)")
    run.add_argument("--goals", help='comma-separated goal descriptions replacing the scenario\'s, e.g. "Find mammals,Classify whales"')
    run.add_argument("--max-cycles", type=non_negative, default=100)
    run.add_argument("--seed", type=non_negative, help="override the scenario's seed")
    run.add_argument("--trace", help="write the JSONL trace (SPEC §11) to this file")
    run.add_argument("--fresh", action="store_true", help="start over, ignoring the persisted session")
    run.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                     help="stop when it fires: tool=NAME, veto[=NAME], goal, phase=NAME (stop before it), or '<path> <op> <value>' "
                          "(e.g. 'score < 0.3', 'wm.size > 90', 'decide.tool == reason'); a Soar scenario: operator=NAME, "
                          "impasse[=KIND], phase=NAME; repeatable")
    run.add_argument("--decider", metavar="DECIDER",
                     help="who decides: utility (the table; default, or the scenario's decider), scripted (an offline model), "
                          "llm (the model of the user config's [llm] table), local (a model in this process: pip install 'akh-tui[local]'), or a plugin: an akh_tui.deciders entry point "
                          "name or 'module:attr'")
    run.add_argument("--watch", dest="watches", action="append", default=[], metavar="QUERY",
                     help="a query (as agent query takes it) whose answer count is printed after every cycle; repeatable")
    run.add_argument("--break-watch", dest="break_watches", action="append", default=[], metavar="QUERY",
                     help="a watch that stops the run at the cycle its answer count changes; repeatable")
    _person_flags(run)
    run.add_argument("--select", action="append", default=[], metavar="DECISION=OPERATOR",
                     help="a Soar scenario: select OPERATOR (its id, e.g. O4) at that decision instead of Soar's "
                          "own pick (`decide select`); repeatable")
    add_compare(asub, common)  # a Soar and an OODA agent on one puzzle (cli/soar.py)

    cyc = asub.add_parser("cycle", parents=[common], help="run one cycle, adding the goal if it is new")
    cyc.add_argument("--goal", required=True)
    cyc.add_argument("--scenario", default=None, help="scenario for a new session (default: zoo)")
    cyc.add_argument("--trace")

    res = asub.add_parser("resume", parents=[common], help="continue the persisted session")
    res.add_argument("--max-cycles", type=non_negative, default=100)
    res.add_argument("--trace")
    res.add_argument("--break", dest="breaks", action="append", default=[], metavar="SPEC",
                     help="stop when it fires (see `agent run --help`); repeatable")
    res.add_argument("--branch", help="continue this branch of the current run (it becomes the current one)")
    _person_flags(res)

    fork = asub.add_parser("fork", parents=[common], help="rewind the current branch to a cycle and start a new branch there, with edits")
    fork.add_argument("--at", type=non_negative, required=True, metavar="CYCLE", help="the cycle to fork after")
    fork.add_argument("--name", required=True, help="the new branch's name")
    fork.add_argument("--set", dest="archetypes", action="append", default=[], metavar="ARCHETYPE=WEIGHT",
                      help="an archetype weight in [0, 1], e.g. explorer=0.9; repeatable")
    fork.add_argument("--disable", action="append", default=[], metavar="TOOL", help="a tool the branch may not use; repeatable")
    fork.add_argument("--goal", dest="fork_goals", action="append", default=[], metavar="DESCRIPTION", help="a goal to add; repeatable")
    fork.add_argument("--psyche", metavar="FILE", help="a psyche TOML file replacing the branch's psyche")
    fork.add_argument("--select", metavar="OPERATOR",
                      help="a Soar run: select OPERATOR (its id, e.g. O12) at the decision after --at instead of "
                           "Soar's own pick")

    plan = asub.add_parser("plan", parents=[common], help="show (and make, if needed) the plan of a goal")
    plan.add_argument("--goal", required=True)
    plan.add_argument("--scenario", default=None)

    asub.add_parser("reflect", parents=[common], help="reflect now: priorities, tool rates, psyche evolution")
    asub.add_parser("consolidate", parents=[common], help="consolidate working memory into episodes now")
    rel = asub.add_parser("reload", parents=[common],
                          help="read the scenario's goals, rule and triple files and plugin modules again (and with "
                               "--psyche its psyche file): in force from the next cycle, recorded so a rewind replays "
                               "it; a plugin's new code only from a trusted folder (--allow-plugins, --trust)")
    rel.add_argument("--psyche", action="store_true",
                     help="take the psyche file too (replaces what reflection has evolved since)")
    rec = asub.add_parser("recall", parents=[common], help="recall episodes by the symbols of a query")
    rec.add_argument("--query", required=True)
    rec.add_argument("--top-k", type=positive, default=5)

    exp = asub.add_parser("explain", parents=[common], help="why a goal is not done: each criterion found or missing, "
                                                           "and what would find it")
    exp.add_argument("--goal", required=True, metavar="N", help="the goal's number")
    exp.add_argument("--agent", metavar="ID", help="an agent of the data dir's current world (`world run`), not the current run")
    why = asub.add_parser("why", parents=[common], help="why a cycle's tool was chosen, or why another was not "
                                                       "(from the record)")
    why.add_argument("--cycle", type=positive, required=True)
    why.add_argument("--tool", help="explain why this tool was not chosen, and what change could have made it win")
    why.add_argument("--agent", metavar="ID", help="an agent of the data dir's current world (`world run`); --cycle is "
                                                   "its own cycle number")
    syn = asub.add_parser("synthesize", parents=[common], help="a goal's findings in the persona's grammar")
    syn.add_argument("--goal", required=True, metavar="N", help="the goal's number")
    syn.add_argument("--grammar", help="narrative, formal, terse, or a grammar TOML file (default: the persona's "
                                       "grammar_preference)")

    edt = asub.add_parser("edit", parents=[common], help="edit the agent's state: add a triple, change a goal's status, "
                                                        "priority or criteria, edit or drop a working-memory entry; "
                                                        "now (recorded), or --at a cycle as a new branch")
    edt.add_argument("edits", nargs="+", metavar="EDIT",
                     help='triple S P O [CONF] · goal N status=active priority=200 criteria="(s p o)" · '
                          "memory N drop · memory N = TEXT")
    edt.add_argument("--at", type=positive, metavar="CYCLE", help="fork from this recorded cycle with the edits")
    edt.add_argument("--name", help="the new branch's name (with --at; default edit-at-CYCLE)")
    qry = asub.add_parser("query", parents=[common], help="ask the graph, the working memory or the goals at a cycle: "
                                                         "(?x lives-in ocean), joins, about SYMBOL, memory, goals")
    qry.add_argument("text", metavar="QUERY", help="(?x is-a mammal) (?x lives-in ?where) · about krill · "
                                                   "memory [words] · goals [words]")
    qry.add_argument("--cycle", type=positive, help="as the run stood right after this recorded cycle (default: now)")
    qry.add_argument("--limit", type=positive, default=50, help="rows shown (all are counted; default 50)")
    rul = asub.add_parser("rules", parents=[common], help="the rules with the bindings left after each premise, why a "
                                                         "rule did not fire for a symbol, and what infer_rules would add now")
    rul.add_argument("--rule", metavar="NAME", help="only this rule (a built-in is transitive(is-a), inherit(lives-in), ...)")
    rul.add_argument("--why-not", metavar="SYMBOL", dest="why_not",
                     help="put SYMBOL in the rule's conclusion subject: the first premise that fails for it")
    rul.add_argument("--cycle", type=positive, help="as the run stood right after this recorded cycle (default: now)")

    for name, sp in asub.choices.items():  # every agent command opens a scenario (a new run's, or the stored run's)
        add_flags(sp)


def _person_flags(p) -> None:
    """A person in the loop, headless: approval before act and user_interact's questions."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--approve", action="store_true",
                   help="ask on the terminal before an action the user config's [approve] when rules match "
                        "(default rule: danger>=dangerous): approve, reject or edit its input")
    g.add_argument("--auto-approve", action="store_true", help="approve every matching action (scripts); recorded")
    g.add_argument("--auto-reject", action="store_true",
                   help="reject every matching action (a veto by the user; scripts); recorded")
    p.add_argument("--ask", action="store_true",
                   help="user_interact asks on the terminal instead of using the scenario's [answers]")


def locations(args: argparse.Namespace) -> engine.Locations:
    return engine.Locations.resolve(getattr(args, "data_dir", None))


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    fn = {
        "run": cmd_run, "cycle": cmd_cycle, "resume": cmd_resume, "plan": cmd_plan,
        "reflect": cmd_reflect, "consolidate": cmd_consolidate, "reload": cmd_reload, "recall": cmd_recall, "fork": cmd_fork,
        "explain": cmd_explain, "why": cmd_why, "synthesize": cmd_synthesize, "compare": cmd_compare,
        "query": cmd_query, "rules": cmd_rules, "edit": cmd_edit,
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


# ---- run / resume / cycle -----------------------------------------------------------------

def _person(run: engine.Run, args, err: Console) -> None:
    """--approve / --auto-approve / --auto-reject and --ask: the door's headless callbacks."""
    if args.approve or args.auto_approve or args.auto_reject:
        cfg = engine.UserConfig.load()
        if cfg.error:
            err.print(Text(engine.redact(cfg.error), style="yellow"))
        run.set_approval(cfg.approve or list(engine.DEFAULT_RULES))
        if args.auto_approve:
            run.approver = lambda w: {"decision": "approve"}
        elif args.auto_reject:
            run.approver = lambda w: {"decision": "reject", "why": "rejected by --auto-reject"}
        else:
            run.approver = lambda w: _ask_verdict(run, w, err)
    if args.ask:
        run.ask_user = True
        run.asker = lambda w: _ask_answer(w, err)


def _read(prompt: str, err: Console) -> str | None:
    err.print(Text(prompt), end="")
    try:
        return input()
    except EOFError:
        return None


def _ask_verdict(run: engine.Run, w: dict, err: Console) -> dict:
    """Approve, reject or edit on the terminal; end of input rejects (nothing runs unasked)."""
    err.print(Text(f"cycle {w['cycle']}: {w['tool']}({w['input']}) waits for approval "
                   f"(rule {w['rule']}; score {w['score']:.2f}; goal {w['goal']!r})", style="bold yellow"))
    for line in w["why"]:
        err.print(Text(f"  {line}"))
    while True:
        ans = _read("[a]pprove, [r]eject or [e]dit the input? ", err)
        if ans is None:
            err.print(Text("no answer (end of input): rejected", style="yellow"))
            return {"decision": "reject", "why": "no answer on the terminal"}
        ans = ans.strip().lower()
        if ans in ("a", "approve"):
            return {"decision": "approve"}
        if ans in ("r", "reject"):
            return {"decision": "reject"}
        if ans in ("e", "edit"):
            text = _read("new input: ", err)
            if text is None:
                return {"decision": "reject", "why": "no answer on the terminal"}
            try:
                run.decide_pending("edit", text)
            except InputError as exc:
                err.print(Text(engine.redact(str(exc)), style="red"))
                continue
            return {"decision": "edited"}  # given above: nothing left to decide
        err.print(Text("answer a, r or e", style="yellow"))


def _ask_answer(w: dict, err: Console) -> list[str]:
    """user_interact's question on the terminal: 's p o' lines, an empty line ends (none: skip)."""
    err.print(Text(f"cycle {w['cycle']}: the agent asks: {w['question']}", style="bold yellow"))
    lines: list[str] = []
    while True:
        ln = _read("answer (subject predicate object; empty line ends): ", err)
        if ln is None or not ln.strip():
            return lines
        try:
            lines += engine.answer_lines(ln)
        except InputError as exc:
            err.print(Text(engine.redact(str(exc)), style="red"))

def cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    _check_trace_path(args.trace)
    soar = engine.find_soar(args.scenario)  # a Soar agent's scenario: its own loop (cli/soar.py)
    if soar is not None:
        from .soar import cmd_run_soar

        return cmd_run_soar(args, soar, out, err)
    if args.select:
        raise InputError("selects an operator of a Soar scenario; an OODA run is steered with --approve "
                         "(reject is the user's veto)", field="--select")
    breaks = [engine.parse_breakpoint(b, tools=None) for b in args.breaks]  # before anything runs or is written
    goals = None
    if args.goals is not None:
        goals = [g.strip() for g in args.goals.split(",") if g.strip()]
        if not goals:
            raise InputError("no goal descriptions given", field="--goals")
        for g in goals:
            engine.check_goal(g, "--goals")
    run = engine.Run.continue_or_start(locations(args), args.scenario, args.seed, goals, args.decider, args.fresh, args.trace,
                                breaks=breaks)  # tool=NAME: one of the run's tools, checked before a run is made
    breaks = run.check_breakpoints(breaks)
    if run.note and not args.json:
        err.print(Text(engine.redact(run.note), style="yellow"))
    _person(run, args, err)
    watches = _watches(run, args.watches, args.break_watches)
    return _drive(run, args.max_cycles, args.json, out, err, breaks=breaks, watches=watches)


@dataclass
class _Watch:
    """A --watch / --break-watch: its query, whether it stops the run, its answer count."""

    query: str
    stops: bool
    count: int


def _watches(run: engine.Run, plain: list[str], stopping: list[str]) -> list[_Watch]:
    """Each --watch and --break-watch, asked once before any cycle runs, so a bad query is
    refused naming its flag (the run is closed)."""
    out: list[_Watch] = []
    for flag, queries, stop in (("--watch", plain, False), ("--break-watch", stopping, True)):
        for q in queries:
            try:
                out.append(_Watch(q, stop, run.query(q, limit=1)["total"]))
            except InputError as exc:
                run.close()
                raise InputError(exc.message, field=flag) from None
    return out


def cmd_resume(args: argparse.Namespace, out: Console, err: Console) -> int:
    _check_trace_path(args.trace)
    if _current_is_soar(args):
        from .soar import cmd_resume_soar

        return cmd_resume_soar(args, out, err)
    breaks = [engine.parse_breakpoint(b, tools=None) for b in args.breaks]
    run = engine.Run.resume(locations(args), args.branch, args.trace)
    breaks = run.check_breakpoints(breaks)
    if not args.json:
        err.print(Text(f"resuming {run.name} (run {run.run_id}, branch {run.branch_name}) at cycle {run.cycle}",
                       style="yellow"))
    _person(run, args, err)
    return _drive(run, args.max_cycles, args.json, out, err, breaks=breaks)


def _current_is_soar(args: argparse.Namespace) -> bool:
    """The data dir's current run is a Soar run (resume and fork go to cli/soar.py)."""
    return engine.current_architecture(locations(args)) == "soar"


def cmd_cycle(args: argparse.Namespace, out: Console, err: Console) -> int:
    _check_trace_path(args.trace)
    engine.check_goal(args.goal, "--goal")
    run = engine.Run.open_or_new(locations(args), args.scenario, args.trace)
    goal = run.find_goal(args.goal)
    if goal is None or goal["status"] not in ("active", "suspended"):
        run.add_goal(args.goal)
    return _drive(run, 1, args.json, out, err)


def _drive(run: engine.Run, max_cycles: int, as_json: bool, out: Console, err: Console,
           breaks: list[engine.Breakpoint] | None = None, watches: list[_Watch] | None = None) -> int:
    for w in run.warnings:  # a plugin's or a config's words: masked like every other sink's
        err.print(Text(engine.redact(f"warning: {w}"), style="yellow"))
    # not live: only the last 20 rows are printed, so only they are kept (a million-cycle run
    # in flat memory); --json prints every row, as it always did
    rows: list[dict] | deque[dict] = [] if as_json else deque(maxlen=20)
    shown = [0]  # cycles summarised in all
    fired: list[str] = []
    previous = [run.latest]
    # phase=NAME: stop before that phase of a following cycle; the first cycle of this command
    # runs whole, so a resume (which drops the unrecorded cycle) still moves on
    phases = engine.stop_phases(breaks or [])

    def should_stop(rec: engine.CycleRecord) -> bool:
        hit = engine.first_hit(breaks, rec, previous[0]) if breaks else None
        previous[0] = rec
        for w in watches or []:  # read after every cycle: the first break watch whose count changed
            now = run.query(w.query, limit=1)["total"]
            if hit is None and w.stops and now != w.count:
                hit = f"watch {w.query} changed: {w.count} → {now}"
            w.count = now
        if hit:
            fired.append(f"cycle {rec['cycle']}: {hit}")
        return hit is not None

    def summarise(rec: engine.CycleRecord) -> dict:
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

    def on_record(rec: engine.CycleRecord) -> None:
        run.stop_before = phases
        row = summarise(rec)
        if watches:
            row["watches"] = {w.query: run.query(w.query, limit=1)["total"] for w in watches}
        shown[0] += 1
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
                n, why = run.run_cycles(max_cycles, on_record, should_stop)
        else:
            n, why = run.run_cycles(max_cycles, on_record, should_stop)
        if fired:
            why = fired[0]
        # stopped part-way (phase=NAME): what the cycle had produced; closing drops it, and a
        # resume runs it again from its start
        partial = run.phase_state()
    finally:
        run.close()
    goals = engine.redact_obj(run.goals())  # the live goals: one may quote a registered key
    if as_json:
        print(json.dumps({"scenario": run.name, "seed": run.seed, "cycles_run": n, "stop": why,
                          "cycle": run.cycle, "goals": goals, "cycles": list(rows),
                          **({"partial": partial} if partial is not None else {})}))
        return 0
    if partial is not None and "decide" in partial["results"]:
        d = partial["results"]["decide"]
        out.print(Text(f"cycle {partial['cycle']} (not recorded) was about to run {d['tool']}({d['input']}) "
                       f"{d['breakdown']}", style="yellow"))
    if not live:
        for row in rows:
            _print_row(out, row)
        if shown[0] > len(rows):
            out.print(Text(f"… {shown[0] - len(rows)} earlier cycles in the session store (and the trace, if written)",
                           style="dim"))
    out.print(Text(f"{n} cycle(s) run, stopped: {why}; session at cycle {run.cycle}"))
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
        t.append("  VETOED by the user" if row['veto'] == 'user' else f"  VETOED by '{row['veto']}'", style="bold red")
    for q, n in (row.get("watches") or {}).items():
        t.append(f"  {q} = {n}", style="cyan")
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


# ---- plan / reflect / consolidate / recall --------------------------------------------------

def cmd_plan(args: argparse.Namespace, out: Console, err: Console) -> int:
    engine.check_goal(args.goal, "--goal")
    run = engine.Run.open_or_new(locations(args), args.scenario)
    for w in run.warnings:  # a plugin left out (not trusted, failed to load): said before the plan
        err.print(Text(f"warning: {w}", style="yellow"))
    try:
        goal = run.find_goal(args.goal) or run.add_goal(args.goal)
        p = run.plan(goal["id"])
    finally:
        run.close()
    if args.json:
        print(json.dumps({"goal": p["goal"], "flags": p["flags"], "plan": p["plan"]}))
        return 0
    plan = p["plan"]
    out.print(Text(f"goal #{goal['id']} {goal['description']!r}: attempt {plan['attempt']}, {plan['strategy']}, {plan['status']}"))
    for st in p["steps"]:
        out.print(Text(f"  {st['marker']} {st['index'] + 1}. {st['tool']:<18} {st['rationale']}"))
    return 0


def cmd_reflect(args: argparse.Namespace, out: Console, err: Console) -> int:
    run = engine.Run.resume(locations(args))
    try:
        events = run.reflect()
    finally:
        run.close()
    ev = next(e for e in events if e["type"] == "reflection")
    if args.json:
        print(json.dumps(ev))
        return 0
    out.print(Text(engine.event_words(ev)))
    for a in ev["adjustments"] or [{"kind": "no adjustment"}]:
        out.print(Text("  " + ", ".join(f"{k}={v}" for k, v in a.items())))
    out.print(Text("  tool success rates: " + (", ".join(f"{t} {r:.2f}" for t, r in ev["tool_rates"].items()) or "none yet")))
    for c in ev["psyche_changes"]:
        out.print(Text("  psyche: " + ", ".join(f"{k}={v}" for k, v in c.items())))
    return 0


def cmd_reload(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Hot reload of the current run's files (Run.reload): a broken file is an InputError
    naming its file, line and field (exit 2) and nothing changes. The rule files are recorded
    whatever they hold (this process cannot know what the run had); a plugin module when it
    differs from the code the run uses (its start's recorded hash says)."""
    run = engine.Run.resume(locations(args))
    try:
        words = run.reload(rules_files=True, psyche_file=bool(args.psyche))
    finally:
        run.close()
    if args.json:
        print(json.dumps({"changed": words}))
        return 0
    for w in words:
        out.print(Text(w))
    return 0


def cmd_consolidate(args: argparse.Namespace, out: Console, err: Console) -> int:
    run = engine.Run.resume(locations(args))
    try:
        ev = run.consolidate()
    finally:
        run.close()
    if args.json:
        print(json.dumps(ev))
        return 0
    out.print(Text(f"consolidated {len(ev['removed'])} working-memory entries into {len(ev['episodes'])} episode(s); WM now {ev['wm_size']}"))
    for e in ev["episodes"]:
        out.print(Text(f"  episode {e['id']} (goal {e['goal']}): {e['summary']}"))
    return 0


T = TypeVar("T")


def _only_read(args: argparse.Namespace, ask: Callable[[engine.Run], T]) -> T:
    """`ask(run)` on the current run, which is only read: opened read-only with no writer's
    lock (it works while the workbench or `agent run` writes the run, and on a read-only file
    system) and closed without a checkpoint."""
    run = engine.Run.open_readonly(locations(args))
    try:
        return ask(run)
    finally:
        run.close(checkpoint=False)


def cmd_recall(args: argparse.Namespace, out: Console, err: Console) -> int:
    found = _only_read(args, lambda run: run.recall(args.query, args.top_k))
    if args.json:
        print(json.dumps(found))
        return 0
    if not found["symbols"]:
        out.print(Text(f"no symbol in the graph matches {args.query!r}"))
    if not found["episodes"]:
        out.print(Text("no episode recalled"))
    for e in found["episodes"]:
        out.print(Text(f"episode {e['id']} (cycle {e['cycle']}, goal {e['goal']}): {e['summary']}"))
        out.print(Text("  learned: " + ", ".join(e["learnings"][:15]), style="dim"))
    return 0


# which flag of `agent fork` fills which fork edit (engine.ForkEditError.edit names the edit refused)
FORK_FLAGS = {"archetypes": "--set", "disable_tools": "--disable", "goals": "--goal", "psyche": "--psyche",
              "name": "--name"}


def cmd_fork(args: argparse.Namespace, out: Console, err: Console) -> int:
    from ..engine import Psyche

    if _current_is_soar(args):
        from .soar import cmd_fork_soar

        return cmd_fork_soar(args, out, err)
    if args.select:
        raise InputError("selects an operator of a Soar run; the current run is an OODA run", field="--select")
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
        engine.check_goal(g, "--goal")
    if args.fork_goals:
        edits["goals"] = args.fork_goals
    if args.psyche:
        edits["psyche"] = Psyche.load(args.psyche).to_toml()
    run = engine.Run.resume(locations(args), fork_at=args.at)  # rewound there: a branch damaged later can still be forked
    try:
        event = run.fork(args.at, args.name, edits)
    except engine.ForkEditError as exc:  # a weight out of range, an unknown tool or archetype, no name
        raise InputError(str(exc), field=FORK_FLAGS[exc.edit]) from None
    finally:
        run.close()
    if args.json:
        print(json.dumps(event))
        return 0
    out.print(Text(f"{engine.event_words(event)}; it is now the current branch: `akh-tui agent resume` continues it"))
    return 0


# ---- explanations (issue 13) ----------------------------------------------------------------

def _goal_id(text: str) -> int:
    t = text.strip().lstrip("#")
    if not t.isdigit():
        raise InputError(f"expected a goal number, e.g. 2, got {text!r}", field="--goal")
    return int(t)


def _print_lines(out: Console, lines: list[str]) -> None:
    for line in lines:
        out.print(Text(line), soft_wrap=True)


def _world_read(args: argparse.Namespace, ask: Callable[[engine.WorldRun], T]) -> T:
    """`ask(world)` on the data dir's current world, opened read-only."""
    w = engine.WorldRun.open_readonly(locations(args))
    try:
        return ask(w)
    finally:
        w.close()


def cmd_explain(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Why a goal is (not) done, per criterion."""
    gid = _goal_id(args.goal)
    if args.agent:
        info = _world_read(args, lambda w: w.explain_goal(args.agent, gid))
    else:
        info = _only_read(args, lambda run: run.explain_goal(gid))
    if args.json:
        print(json.dumps(info))
    else:
        _print_lines(out, info["lines"])
    return 0


def cmd_why(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Why the cycle's tool was chosen, or why --tool was not: from the record alone."""
    if args.agent:
        info = _world_read(args, lambda w: w.why(args.agent, args.cycle, args.tool))
    else:
        info = _only_read(args, lambda run: run.why(args.cycle, args.tool))
    if args.json:
        print(json.dumps(info))
    else:
        _print_lines(out, info["lines"])
    return 0


def cmd_synthesize(args: argparse.Namespace, out: Console, err: Console) -> int:
    """A goal's findings in the persona's grammar (or --grammar)."""
    gid = _goal_id(args.goal)
    info = _only_read(args, lambda run: run.synthesize(gid, args.grammar))
    if args.json:
        print(json.dumps(info))
    else:
        out.print(Text(info["text"]), soft_wrap=True)
    return 0


# ---- the designer's console (issue 28 §2) -----------------------------------------------------

# the console's fields (engine/explain) as the flags that fill them
CONSOLE_FLAGS = {"query": "QUERY", "rule": "--rule", "symbol": "--why-not"}


def _flagged(ask: Callable[[], T]) -> T:
    """`ask()`, a refusal naming the flag the user typed rather than the engine's field."""
    try:
        return ask()
    except InputError as exc:
        if exc.field in CONSOLE_FLAGS:
            raise InputError(exc.message, field=CONSOLE_FLAGS[exc.field]) from None
        raise


def cmd_query(args: argparse.Namespace, out: Console, err: Console) -> int:
    """The query console: the graph, the working memory or the goals at a cycle."""
    info = _flagged(lambda: _only_read(args, lambda run: run.query(args.text, args.cycle, args.limit)))
    if args.json:
        print(json.dumps(info))
    else:
        _print_lines(out, info["lines"])
    return 0


def cmd_rules(args: argparse.Namespace, out: Console, err: Console) -> int:
    """The rule browser: matches per premise, why not for a symbol, the agenda."""
    info = _flagged(lambda: _only_read(args, lambda run: run.rules(args.rule, args.why_not, args.cycle)))
    if args.json:
        print(json.dumps(info))
    else:
        _print_lines(out, info["lines"])
    return 0


def cmd_edit(args: argparse.Namespace, out: Console, err: Console) -> int:
    """State edits: applied to the run now (each recorded, as every input is), or with --at
    the edits of a new branch forked from that cycle. All are parsed before anything changes."""
    edits = []
    for i, text in enumerate(args.edits, 1):
        try:
            edits.append(engine.parse_state_edit(text))
        except engine.StateEditError as exc:
            raise InputError(exc.message, field=f"EDIT {i} ({exc.field})") from None
    if args.name and args.at is None:
        raise InputError("a branch name goes with --at CYCLE (the cycle to fork from)", field="--name")
    if args.at is not None:
        run = engine.Run.resume(locations(args), fork_at=args.at)
        try:
            event = run.fork(args.at, args.name or f"edit-at-{args.at}", {"state": [[e.kind, e.payload()] for e in edits]})
        except engine.StateEditError as exc:
            raise InputError(exc.message, field=f"EDIT ({exc.field})") from None
        finally:
            run.close()
        if args.json:
            print(json.dumps(event))
        else:
            out.print(Text(f"{engine.event_words(event)}; it is now the current branch: `akh-tui agent resume` "
                           "continues it"))
        return 0
    run = engine.Run.resume(locations(args))
    try:
        try:
            done = run.edit_state(edits)  # all checked before the first is applied
        except engine.StateEditError as exc:
            raise InputError(exc.message, field=f"EDIT {exc.index or 1} ({exc.field})") from None
        cycle = run.cycle
    finally:
        run.close()
    if args.json:
        print(json.dumps({"cycle": cycle, "edits": [[e.kind, e.payload()] for e in edits], "done": done}))
    else:
        _print_lines(out, [f"after cycle {cycle}: {d}" for d in done])
        out.print(Text("recorded: the next cycle (`akh-tui agent run`, `resume`) starts from the edited state"))
    return 0
