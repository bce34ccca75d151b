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
    for flag, value in (("--goals", args.goals), ("--decider", args.decider), ("--break", args.breaks),
                        ("--approve", args.approve), ("--auto-approve", args.auto_approve),
                        ("--auto-reject", args.auto_reject), ("--ask", args.ask)):
        if value:
            raise InputError("a Soar scenario takes its goal and its choices from its productions", field=flag)


def cmd_run_soar(args: argparse.Namespace, scenario: Any, out: Console, err: Console) -> int:
    refuse_ooda_flags(args)
    most = args.max_cycles if args.max_cycles != 100 else scenario.max_decisions  # 100: the OODA default
    trace = open(args.trace, "w", encoding="utf-8") if args.trace else None
    rows: list[dict[str, Any]] = []
    try:
        run = engine.SoarRun.start(scenario, args.seed, trace)
        try:
            def on_record(rec: dict[str, Any]) -> None:
                rows.append(rec)
                if not args.json:
                    _print_decision(out, rec)

            n, why = run.run(most, on_record)
        finally:
            run.close()
    finally:
        if trace is not None:
            trace.close()
    if args.json:
        print(json.dumps({"scenario": scenario.name, "architecture": "soar", "seed": run.seed, "decisions_run": n,
                          "stop": why, "decisions": rows}, sort_keys=True))
        return 0
    out.print(Text(f"{n} decision(s) run, stopped: {why}"))
    return 0


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
    out.print(line)


def _chance(c: dict[str, Any]) -> str:
    if c["probability"] is None:
        return ""
    return "rejected" if c["probability"] == 0 else f"{c['probability']:.0%}"
