"""`akh-tui sessions list|show|export|import|delete`: the runs and branches in a data dir's
session store, and JSONL traces (SPEC §11) in and out of it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import classroom as cli_classroom  # argparse and rich only: no engine import at --help
from .argtypes import Subcommands

if TYPE_CHECKING:
    from ..engine import Sessions


def run_or_world(text: str) -> "int | str":
    """A run id, or `wN` for a world run (`sessions list` shows both)."""
    t = text.strip()
    if t.isdigit():
        return int(t)
    if t[:1] in ("w", "W") and t[1:].isdigit():
        return t.lower()
    raise argparse.ArgumentTypeError(f"expected a run id (like 3) or a world (like w1), got {text!r}")


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("sessions", help="runs and branches in the session store; export and import JSONL traces")
    p.set_defaults(handler=dispatch)  # pin, report and export's OpenTelemetry formats go on to classroom.py
    ssub = p.add_subparsers(dest="sessions_command", required=True)
    ssub.add_parser("list", parents=[common], help="every run (scenario, seed, branches, cycles) and world (wN)")
    show = ssub.add_parser("show", parents=[common],
                           help="one run: its branches (parent, fork cycle, edits) and goals; or a world (wN)")
    show.add_argument("run", type=run_or_world, metavar="RUN", help="a run id, or wN for world N (`sessions list`)")
    exp = ssub.add_parser("export", parents=[common], help="write a branch of a run (or a world: wN) as a JSONL trace")
    exp.add_argument("run", type=run_or_world, metavar="RUN", help="a run id, or wN for world N (`sessions list`)")
    exp.add_argument("--branch", default="main", help="branch name (default: main)")
    exp.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    cli_classroom.add_session_parsers(ssub, common, export=exp)  # export --format otlp…, pin, report
    imp = ssub.add_parser("import", parents=[common], help="add a JSONL trace as a run (replay only: it has no engine state)")
    imp.add_argument("file")
    find = ssub.add_parser("search", parents=[common], help="cycles of a branch by tool, veto, goal, progress or words in the output")
    find.add_argument("run", type=int, metavar="RUN")
    find.add_argument("query", help="e.g. 'tool=kg_query', 'veto', 'progress=failed goal=2', 'planet'")
    find.add_argument("--branch", default="main", help="branch name (default: main)")
    cmp = ssub.add_parser("compare", parents=[common],
                          help="two runs or branches side by side: the first cycle they chose differently, and why")
    cmp.add_argument("a", metavar="RUN[:BRANCH]", help="e.g. 1 (its main branch) or 1:bold; a world: w1 or w1:calm")
    cmp.add_argument("b", metavar="RUN[:BRANCH]")
    ssub.add_parser("check", parents=[common],
                    help="full integrity check of the store: SQLite's own, then every record's checksum (reads it all)")
    dele = ssub.add_parser("delete", parents=[common], help="delete a run (or a world: wN) and all its branches")
    dele.add_argument("run", type=run_or_world, metavar="RUN", help="a run id, or wN for world N (`sessions list`)")


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    if cli_classroom.handles(args):
        return cli_classroom.dispatch_sessions(args, out, err)
    from ..engine import Locations
    from ..engine import Sessions

    if args.sessions_command in ("show", "delete") and isinstance(args.run, str):  # a world (wN)
        return {"show": _show_world, "delete": _delete_world}[args.sessions_command](args, out)

    # only import and delete write: every other command opens the store read-only
    sessions = Sessions(Locations.resolve(args.data_dir), write=args.sessions_command in ("import", "delete"))
    try:
        return {"list": cmd_list, "show": cmd_show, "export": cmd_export, "import": cmd_import,
                "search": cmd_search, "compare": cmd_compare, "delete": cmd_delete, "check": cmd_check}[args.sessions_command](sessions, args, out, err)
    finally:
        sessions.close()


def cmd_list(sessions: Sessions, args, out: Console, err: Console) -> int:
    from ..engine import Locations, list_worlds

    runs = sessions.runs()
    worlds = list_worlds(Locations.resolve(args.data_dir))
    if worlds and not args.json:
        _print_worlds(out, worlds)
    if args.json:
        print(json.dumps([{k: r.get(k) for k in ("id", "name", "scenario", "seed", "decider", "imported_from",
                                                  "goals_done", "goals_top")}
                          | {"architecture": r.get("architecture", "ooda")}
                          | {"branches": [{k: b[k] for k in ("name", "parent", "fork_cycle", "last_cycle", "current")}
                                          for b in r["branches"]]} for r in runs] + [_world_row(w) for w in worlds]))
        return 0
    if not runs:
        if not worlds:
            out.print(Text("no runs in this store"))
        return 0
    t = Table(title=f"Runs in {sessions.where}")
    for col in ("run", "scenario", "seed", "decider", "branches", "cycles (main)", "goals done", "note"):
        t.add_column(col)
    for r in runs:
        main = r["branches"][0]
        current = any(b["current"] for b in r["branches"])
        note = "current" if current else ""
        if r.get("imported_from"):
            note = f"imported from {r['imported_from']} (replay only)"
        soar = r.get("architecture") == "soar"  # its decisions are its cycles; no goals of ours
        if soar:
            note = "Soar" + (", current" if current else "")
        t.add_row(str(r["id"]), Text(str(r.get("name"))), str(r.get("seed")),
                  Text("soar" if soar else str(r.get("decider", ""))),
                  Text(", ".join(b["name"] for b in r["branches"])), str(main["last_cycle"]),
                  f"{r['goals_done']}/{r['goals_top']}", Text(note, style="bold" if current else "dim"))
    out.print(t)
    return 0


def _world_row(w: dict) -> dict:
    """A world in `sessions list --json`: after the runs, its id as the commands take it (`wN`),
    `kind` "world", and each branch's parent by name and fork step, as a run's are."""
    names = {b["id"]: b["name"] for b in w["branches"]}
    return {"id": f"w{w['id']}", "kind": "world", "name": w["name"], "file": w["file"], "seed": w["seed"],
            "branches": [{"name": b["name"], "parent": names.get(b["parent"]), "fork_step": b["fork_step"],
                          "steps": b["steps"], "edits": b["edits"], "current": b["current"]} for b in w["branches"]]}


def _print_worlds(out: Console, worlds: list[dict]) -> None:
    t = Table(title="Worlds (sessions export wN, sessions compare wN:A wN:B)")
    for col in ("world", "name", "seed", "branches", "steps (main)", "note"):
        t.add_column(col)
    for w in worlds:
        current = any(b["current"] for b in w["branches"])
        t.add_row(f"w{w['id']}", Text(str(w["name"])), str(w["seed"]), Text(", ".join(b["name"] for b in w["branches"])),
                  str(w["branches"][0]["steps"]), Text("current" if current else "", style="bold"))
    out.print(t)


def cmd_show(sessions: Sessions, args, out: Console, err: Console) -> int:
    shown = sessions.show(args.run)
    meta, rows = shown["run"], shown["branches"]
    if args.json:
        print(json.dumps({"run": {k: v for k, v in meta.items() if k not in ("config", "psyche")}, "branches": rows}))
        return 0
    if meta.get("architecture") == "soar":
        out.print(Text(f"run {meta['id']}: {meta.get('name')} (seed {meta.get('seed')}, a Soar agent: "
                       f"its decisions are its cycles)", style="bold"))
    else:
        out.print(Text(f"run {meta['id']}: {meta.get('name')} (seed {meta.get('seed')}, decider {meta.get('decider')})",
                       style="bold"))
    if meta.get("imported_from"):
        out.print(Text(f"imported from {meta['imported_from']}: replay only", style="dim"))
    t = Table(title="Branches")
    for col in ("branch", "from", "edits", "cycles", "goals completed", ""):
        t.add_column(col)
    for b in rows:
        origin = f"{b['parent']} @ cycle {b['fork_cycle']}" if b["parent"] else "start"
        edits = [e if isinstance(e, str) else f"select {e.get('select')} at decision {e.get('decision')}"
                 for e in b["edits"]]  # a Soar fork's edit is the operator it forces
        done = [g["description"] for g in b["goals"] if g["status"] == "completed"]
        t.add_row(Text(b["name"]), Text(origin), Text(", ".join(edits) or "—"), str(b["last_cycle"]),
                  Text(", ".join(done) or "none"), Text("current" if b["current"] else "", style="bold"))
    out.print(t)
    return 0


def _show_world(args, out: Console) -> int:
    from ..engine import Locations, show_world

    w = show_world(Locations.resolve(args.data_dir), args.run)
    names = {b["id"]: b["name"] for b in w["branches"]}
    branches = [{"name": b["name"], "parent": names.get(b["parent"]), "fork_step": b["fork_step"], "steps": b["steps"],
                 "edits": b["edits"], "current": b["current"]} for b in w["branches"]]
    if args.json:
        print(json.dumps({k: w[k] for k in ("name", "file", "seed", "agents", "config")} | {"id": args.run,
                                                                                           "branches": branches}))
        return 0
    out.print(Text(f"world {args.run}: {w['name']} (seed {w['seed']}, {w['file']})", style="bold"))
    t = Table(title="Agents")
    for col in ("agent", "scenario", "decider", "seed"):
        t.add_column(col)
    for a in w["agents"]:
        t.add_row(Text(str(a.get("id"))), Text(str(a.get("scenario"))), Text(str(a.get("decider"))), str(a.get("seed")))
    out.print(t)
    t = Table(title="Branches")
    for col in ("branch", "from", "edits", "steps", ""):
        t.add_column(col)
    for b in branches:
        origin = f"{b['parent']} @ step {b['fork_step']}" if b["parent"] else "start"
        edits = ", ".join(json.dumps(e) if not isinstance(e, str) else e for e in b["edits"])
        t.add_row(Text(b["name"]), Text(origin), Text(edits or "—"), str(b["steps"]),
                  Text("current" if b["current"] else "", style="bold"))
    out.print(t)
    return 0


def _delete_world(args, out: Console) -> int:
    from ..engine import Locations, delete_world

    gone = delete_world(Locations.resolve(args.data_dir), args.run)
    if args.json:
        print(json.dumps({"deleted": args.run, "branches": gone["branches"]}))
    else:
        out.print(Text(f"deleted world {args.run} ({gone.get('name')}, {gone['branches']} branch(es))"))
    return 0


def cmd_export(sessions: Sessions, args, out: Console, err: Console) -> int:
    target = sys.stdout if args.output == "-" else args.output
    if isinstance(args.run, str):  # a world: its §13 trace
        from ..engine import Locations, export_world

        ref = f"{args.run}:{args.branch}"
        n = export_world(Locations.resolve(args.data_dir), ref, target)
        if args.json and args.output != "-":
            print(json.dumps({"world": args.run, "branch": args.branch, "steps": n, "file": args.output}))
        elif args.output != "-":
            err.print(Text(f"wrote {n} step(s) of world {args.run} branch {args.branch} to {args.output}"))
        return 0
    n = sessions.export(args.run, args.branch, target)
    if args.json and args.output != "-":  # on standard output the trace itself is the JSON
        print(json.dumps({"run": args.run, "branch": args.branch, "cycles": n, "file": args.output}))
    elif args.output != "-":
        err.print(Text(f"wrote {n} cycle(s) of run {args.run} branch {args.branch} to {args.output}"))
    return 0


def cmd_import(sessions: Sessions, args, out: Console, err: Console) -> int:
    info = sessions.import_trace(args.file)
    if args.json:
        print(json.dumps(info))
    else:
        out.print(Text(f"imported {info['cycles']} cycle(s) and {info['events']} event(s) as run {info['run']} (replay only)"))
    return 0


def cmd_search(sessions: Sessions, args, out: Console, err: Console) -> int:
    rows = sessions.search(args.run, args.branch, args.query)
    if args.json:
        print(json.dumps(rows))
        return 0
    t = Table(title=f"run {args.run} branch {args.branch}: {len(rows)} cycle(s) match {args.query!r}")
    for col in ("cycle", "tool", "progress", "vetoed", "output"):
        t.add_column(col)
    for r in rows:
        t.add_row(str(r["cycle"]), Text(r["tool"]), Text(r["progress"]), "yes" if r["vetoed"] else "",
                  Text(r["output"][:100]))
    out.print(t)
    return 0


def cmd_compare(sessions: Sessions, args, out: Console, err: Console) -> int:
    from ..engine import is_world_ref

    if is_world_ref(args.a) or is_world_ref(args.b):
        return _compare_worlds(args, out)
    if sessions.any_soar(args.a, args.b):  # another architecture: aligned by move and state (cli/soar.py)
        from ..engine import Locations, compare_stored
        from .soar import print_compare

        return print_compare(compare_stored(Locations.resolve(args.data_dir), args.a, args.b), args.json, out)
    result = sessions.compare(args.a, args.b)
    name_a, name_b = result["a_name"], result["b_name"]
    if args.json:
        print(json.dumps(result))
        return 0
    first, early = result["first_divergence"], result["first_difference"]
    if first is None:
        out.print(Text(f"{name_a} and {name_b} chose the same in every common cycle", style="green"))
    else:
        out.print(Text(f"first divergence at cycle {first['cycle']}", style="bold yellow"))
        for name, side in ((name_a, first["a"]), (name_b, first["b"])):
            out.print(Text(f"  {name:<14} {side['tool']}({side['input']}) -> {side['progress']}"))
        for tool, diff in first["factors"].items():
            out.print(Text(f"  {tool}: " + ", ".join(f"{f} {va:.3f} vs {vb:.3f}" for f, (va, vb) in diff.items())))
    if early is not None and early["same_choice"]:
        out.print(Text(f"the scores first differed at cycle {early['cycle']}, with the same choice", style="dim"))
    for name, o in ((name_a, result["a"]), (name_b, result["b"])):
        out.print(Text(f"{name}: {o['cycles']} cycles, completed: {', '.join(o['completed']) or 'none'}"
                       + (f"; failed: {', '.join(o['failed'])}" if o["failed"] else "")))
    return 0


def _compare_worlds(args, out: Console) -> int:
    from ..engine import Locations, compare_worlds

    result = compare_worlds(Locations.resolve(args.data_dir), args.a, args.b)
    if args.json:
        print(json.dumps(result))
        return 0
    name_a, name_b, first = result["a_name"], result["b_name"], result["first_divergence"]
    if first is None:
        out.print(Text(f"{name_a} and {name_b} are the same in every common step", style="green"))
    else:
        a, b = first["a"], first["b"]
        where = a["name"] if a["name"] == b["name"] else f"{a['name']} vs {b['name']}"
        out.print(Text(f"first divergence at step {first['step']} ({where}), agent "
                       f"{a['agent'] if a['agent'] == b['agent'] else a['agent'] + ' vs ' + str(b['agent'])}",
                       style="bold yellow"))
        for name, side in ((name_a, a), (name_b, b)):
            out.print(Text(f"  {name:<14} {side['name']:<14} {side['tool']}({side['input'] or ''}) -> {side['progress']}"))
        out.print(Text(f"  differs in: {', '.join(first['differs_in'])}"))
    out.print(Text(f"{name_a}: {result['a']['steps']} steps; {name_b}: {result['b']['steps']} steps"))
    return 0


def cmd_delete(sessions: Sessions, args, out: Console, err: Console) -> int:
    gone = sessions.delete(args.run)
    if args.json:
        print(json.dumps({"deleted": args.run, "branches": gone["branches"]}))
    else:
        out.print(Text(f"deleted run {args.run} ({gone.get('name')}, {gone['branches']} branch(es))"))
    return 0


def cmd_check(sessions: Sessions, args, out: Console, err: Console) -> int:
    """Exit 0 when the store is whole, 2 when something is damaged (listed by run, branch and cycles)."""
    result = sessions.check()
    if args.json:
        print(json.dumps(result))
        return 0 if result["ok"] else 2
    out.print(Text(f"SQLite integrity check: {result['sqlite']}"))
    out.print(Text(f"{result['checked']:,} record(s) checked"
                   + (f", {result['unchecked']:,} written before checksums (not checked)" if result["unchecked"] else "")))
    for where, cycles in result["damaged"].items():
        shown = ", ".join(str(c) for c in cycles[:20]) + (f" … ({len(cycles)} in all)" if len(cycles) > 20 else "")
        unit = "row(s)" if where.endswith("(numbered)") else "step(s)" if where.startswith("world ") else "cycle(s)"
        err.print(Text(f"damaged: {where}" + (f": {unit} {shown}" if cycles else ""), style="bold red"))
    if result.get("mark"):
        err.print(Text(result["mark"], style="yellow"))
    elif not result["ok"] and not result["marks"]:  # a world's rows only
        err.print(Text("every command that reads a damaged world row refuses it; restore the store from a copy"))
    elif not result["ok"]:
        err.print(Text("writers refuse the damaged branches from now on (`akh-tui agent resume` says how to fork "
                       "before the damage); run `akh-tui sessions check` again once the store is whole"))
    if result["ok"]:
        out.print(Text("the store is whole", style="green"))
        return 0
    return 2
