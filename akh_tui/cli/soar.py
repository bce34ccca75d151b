"""`akh-tui agent run --scenario water-jug`: a Soar scenario run headless, decision by decision
(engine/soar through the face): each decision's operator, its candidates with value, chance
and proposing rule, until the agent halts or --max-cycles decisions ran."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import engine
from ..engine import InputError


def refuse_ooda_flags(args: argparse.Namespace) -> None:
    """Flags that steer the OODA loop mean nothing to a Soar agent: said, not ignored."""
    for flag, value in (("--goals", args.goals), ("--decider", args.decider),
                        ("--approve", args.approve), ("--auto-approve", args.auto_approve),
                        ("--auto-reject", args.auto_reject), ("--ask", args.ask)):
        # (--select and --break are the Soar run's own: soar/breaks.py)
        if value:
            raise InputError("a Soar scenario takes its goal and its choices from its productions", field=flag)


def parse_selects(specs: list[str]) -> dict[int, str]:
    """--select DECISION=OPERATOR, each checked before anything runs."""
    out: dict[int, str] = {}
    for spec in specs:
        at, _, op = spec.partition("=")
        if not at.strip().isdigit() or int(at) < 1 or not op.strip():
            raise InputError(f"{spec!r}: expected DECISION=OPERATOR, e.g. 3=O4", field="--select")
        if int(at) in out:
            raise InputError(f"decision {int(at)} is selected twice", field="--select")
        out[int(at)] = op.strip()
    return out


def cmd_run_soar(args: argparse.Namespace, scenario: Any, out: Console, err: Console) -> int:
    refuse_ooda_flags(args)
    selects = parse_selects(args.select)
    breaks = [engine.parse_soar_break(b) for b in args.breaks]  # before anything runs or is written
    engine.check_soar_breaks(breaks, scenario)
    most = args.max_cycles if args.max_cycles != 100 else scenario.max_decisions  # 100: the OODA default
    trace = open(args.trace, "w", encoding="utf-8") if args.trace else None
    rows: list[dict[str, Any]] = []
    try:
        # recorded in the data dir's session store like an OODA run (`sessions list`, `agent resume`)
        stored = engine.StoredSoarRun.start(engine.Locations.resolve(args.data_dir), scenario, args.seed, trace)
        run = stored.run
        try:
            def on_record(rec: dict[str, Any]) -> None:
                rows.append(rec)
                if not args.json:
                    _print_decision(out, rec)

            def advance(n: int) -> str:
                return run.run_until(breaks, n, on_record)[1] if breaks else run.run(n, on_record)[1]

            why = ""
            for at in sorted(selects):  # Soar's own picks up to each selection, then the person's
                if at > most:
                    break
                why = advance(at - 1 - run.decision)
                if why == "halted" or fired(why):
                    break
                try:
                    run.force(selects[at])
                except InputError as exc:
                    raise InputError(f"decision {at}: {exc.message}", field="--select") from None
            if why != "halted" and not fired(why):
                why = advance(most - run.decision)
                why = why if why == "halted" or fired(why) else f"{most} decisions run"
            n = run.decision
            # stopped by a break inside a decision: where it is (the decision is recorded when whole)
            where: dict[str, Any] | None = None
            if fired(why):
                where = {"decision": n + 1, "next_phase": run.next_phase, "selected": run.arch.selected(),
                         "stack": [list(x) for x in run.arch.stack()]}
        finally:
            stored.close()
    finally:
        if trace is not None:
            trace.close()
    if args.json:
        print(json.dumps(engine.redact_obj({"scenario": scenario.name, "architecture": "soar", "seed": run.seed,
                                            "run": stored.run_id, "branch": stored.branch_name,
                                            "decisions_run": n, "stop": why, "decisions": rows,
                                            **({"at": where} if where is not None else {})}), sort_keys=True))
        return 0
    if where is not None:
        goals = " > ".join(f"{i} {w}".strip() for kind, i, w in where["stack"] if kind == "state")
        out.print(Text(engine.redact(f"stopped in decision {where['decision']} before its {where['next_phase']} phase; "
                                     f"goal stack: {goals}"), style="yellow"))
    out.print(Text(f"{n} decision(s) run, stopped: {why} (run {stored.run_id}, branch {stored.branch_name}: "
                   f"`akh-tui sessions show {stored.run_id}`)"))
    return 0


def fired(why: str) -> bool:
    """A stop by a break (breaks.py's words), not the halt or the decision count."""
    return why.startswith(("operator ", "impasse:", "phase "))


def _print_decision(out: Console, rec: dict[str, Any]) -> None:
    sel = rec["selected"] or {"id": "-", "label": "(no operator: state no-change)"}
    line = Text(f"{rec['decision']:>4}  ")
    line.append(f"{sel['id']} {sel['label']}", style="bold")
    others = [c for c in rec["candidates"] if not c["chosen"]]
    if others:
        shown = ", ".join(f"{c['label']} {_chance(c)}" for c in others[:4])
        line.append(f"   over {shown}", style="dim")
    if rec.get("forced"):
        line.append("  (forced)", style="yellow")
    out.print(Text(engine.redact(line.plain)) if engine.redact(line.plain) != line.plain else line)


def _chance(c: dict[str, Any]) -> str:
    if c["probability"] is None:
        return ""
    return "rejected" if c["probability"] == 0 else f"{c['probability']:.0%}"


def add_compare(asub: Any, common: argparse.ArgumentParser) -> None:
    """`akh-tui agent compare A B`: two scenarios (Soar or OODA) side by side."""
    cmp = asub.add_parser("compare", parents=[common],
                          help="two scenarios' runs side by side (a Soar and an OODA agent on one puzzle): where "
                               "their choices part, and why each chose as it did")
    cmp.add_argument("a", metavar="SCENARIO", help="e.g. water-jug (Soar)")
    cmp.add_argument("b", metavar="SCENARIO", help="e.g. water-jug-ooda (OODA)")
    cmp.add_argument("--seed-a", type=int, help="override the first scenario's seed")
    cmp.add_argument("--seed-b", type=int, help="override the second scenario's seed")
    cmp.add_argument("--max-cycles", type=int, default=200, help="at most this many decisions or cycles a side")
    cmp.set_defaults(agent_command="compare")


def cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    engine.check_compare_names(args.a, args.b)
    res = engine.compare_architectures(args.a, args.b, args.seed_a, args.seed_b, args.max_cycles)
    return print_compare(res, args.json, out)


def print_compare(res: dict[str, Any], as_json: bool, out: Console) -> int:
    """Two architectures' moves side by side (agent compare, sessions compare of a Soar run)."""
    if as_json:
        print(json.dumps(engine.redact_obj(res), sort_keys=True))
        return 0
    a, b = res["a"], res["b"]
    first = res["first_part"]
    if first is None:
        out.print(Text(f"{a} and {b} made the same moves", style="green"))
    else:
        out.print(Text(f"their choices part at move {first['step']}", style="bold yellow"))
        for name, side in ((a, first["a"]), (b, first["b"])):
            out.print(Text(engine.redact(f"  {name:<16} " + (f"{side['move']}: {side['why']}" if side else
                                                             "(no move: done)"))))
    if res["common_states"]:
        shown = "; ".join(f"{c['state']} (move {c['step_a']} / {c['step_b']})" for c in res["common_states"][:6])
        out.print(Text(f"states both reached: {shown}", style="dim"))
    for name, n in res["moves"].items():
        out.print(Text(f"{name}: {n} moves"))
    for row in res["steps"]:
        if row["a"] is None or row["b"] is None:
            continue
        mark = "=" if row["same"] else "≠"
        line = f"{row['step']:>4} {mark} {row['a']['move']:<12} {row['b']['move']:<12}"
        if "state_a" in row:
            line += f"  [{row['state_a']}] [{row['state_b']}]"
        out.print(Text(engine.redact(line), style="" if row["same"] else "yellow"))
    return 0


def cmd_resume_soar(args: argparse.Namespace, out: Console, err: Console) -> int:
    """`agent resume` on a Soar run: its decisions replayed (each checked), then on from there."""
    for flag, value in (("--approve", args.approve), ("--auto-approve", args.auto_approve),
                        ("--auto-reject", args.auto_reject), ("--ask", args.ask)):
        if value:
            raise InputError("a Soar run takes its choices from its productions (fork with --select to force one)",
                             field=flag)
    breaks = [engine.parse_soar_break(b) for b in args.breaks]
    trace = open(args.trace, "w", encoding="utf-8") if args.trace else None
    rows: list[dict[str, Any]] = []
    try:
        stored = engine.StoredSoarRun.resume(engine.Locations.resolve(args.data_dir), args.branch, trace)
        run = stored.run
        try:
            engine.check_soar_breaks(breaks, run.scenario)
            start = run.decision
            if not args.json:
                err.print(Text(f"resuming {run.name} (run {stored.run_id}, branch {stored.branch_name}) at decision "
                               f"{start}", style="yellow"))

            def on_record(rec: dict[str, Any]) -> None:
                rows.append(rec)
                if not args.json:
                    _print_decision(out, rec)

            if run.finished or (run.records and run.records[-1]["halted"]):
                n, why = 0, "halted"
            elif breaks and args.max_cycles > 0:
                # the first decision runs whole (a break that stopped the last command inside it
                # would stop this one there again), then the breaks hold
                n, why = run.run(1, on_record)
                if why != "halted":
                    more, why = run.run_until(breaks, args.max_cycles - 1, on_record)
                    n += more
                    why = why if why == "halted" or fired(why) else f"{args.max_cycles} decisions run"
            else:
                n, why = run.run(args.max_cycles, on_record)
        finally:
            stored.close()
    finally:
        if trace is not None:
            trace.close()
    if args.json:
        print(json.dumps(engine.redact_obj({"scenario": run.name, "architecture": "soar", "seed": run.seed,
                                            "run": stored.run_id, "branch": stored.branch_name, "decisions_run": n,
                                            "decision": run.decision, "stop": why, "decisions": rows}),
                         sort_keys=True))
        return 0
    out.print(Text(f"{n} decision(s) run, stopped: {why} (decision {run.decision})"))
    return 0


def cmd_fork_soar(args: argparse.Namespace, out: Console, err: Console) -> int:
    """`agent fork --at N --select O12 --name B` on a Soar run: a branch after decision N whose
    next decision selects O12; the decisions before it replay as recorded."""
    for flag, value in (("--set", args.archetypes), ("--disable", args.disable), ("--goal", args.fork_goals),
                        ("--psyche", args.psyche)):
        if value:
            raise InputError("edits an OODA agent; a Soar run's fork forces an operator (--select)", field=flag)
    if not args.select:
        raise InputError("a Soar run's fork selects an operator at the decision after --at, e.g. --select O12",
                         field="--select")
    stored = engine.StoredSoarRun.resume(engine.Locations.resolve(args.data_dir), upto=args.at)
    try:
        event = stored.fork(args.at, args.name, args.select)
    finally:
        stored.close()
    if args.json:
        print(json.dumps(engine.redact_obj(event), sort_keys=True))
        return 0
    rec = event["record"]
    out.print(Text(engine.redact(f"forked branch {event['branch']} of run {event['run']} after decision {args.at}: "
                                 f"decision {args.at + 1} selects {args.select}"), style="bold"))
    if rec is not None:
        _print_decision(out, rec)
    out.print(Text("it is now the current branch: `akh-tui agent resume` continues it"))
    return 0
