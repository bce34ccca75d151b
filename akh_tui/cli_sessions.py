"""`akh-tui sessions list|show|export|import|delete`: the runs and branches in a data dir's
session store, and JSONL traces (SPEC §11) in and out of it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from . import cli_classroom  # argparse and rich only: no engine import at --help
from .engine.errors import InputError
from .engine.history import compare_branches
from .engine.replay import parse_search
from .engine.session import SessionStore
from .engine.trace import TraceWriter, read_trace


def add_parser(sub, common) -> None:
    p = sub.add_parser("sessions", help="runs and branches in the session store; export and import JSONL traces")
    ssub = p.add_subparsers(dest="sessions_command", required=True)
    ssub.add_parser("list", parents=[common], help="every run: scenario, seed, branches, cycles")
    show = ssub.add_parser("show", parents=[common], help="one run: its branches (parent, fork cycle, edits) and goals")
    show.add_argument("run", type=int, metavar="RUN", help="run id (see `sessions list`)")
    exp = ssub.add_parser("export", parents=[common], help="write a branch of a run as a JSONL trace")
    exp.add_argument("run", type=int, metavar="RUN")
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
    cmp.add_argument("a", metavar="RUN[:BRANCH]", help="e.g. 1 (its main branch) or 1:bold")
    cmp.add_argument("b", metavar="RUN[:BRANCH]")
    dele = ssub.add_parser("delete", parents=[common], help="delete a run and all its branches")
    dele.add_argument("run", type=int, metavar="RUN")


def open_store(args) -> SessionStore:
    from .cli import data_dir

    folder = data_dir(args.data_dir)
    path = folder / "session.db"
    if not path.exists():
        raise InputError(f"no session store in {folder} (runs are stored by `akh-tui agent run` and the workbench)",
                         field="--data-dir")
    return SessionStore(path)


def dispatch(args, out: Console, err: Console) -> int:
    if cli_classroom.handles(args):
        return cli_classroom.dispatch_sessions(args, out, err)
    store = open_store(args)
    try:
        return {"list": cmd_list, "show": cmd_show, "export": cmd_export, "import": cmd_import,
                "search": cmd_search, "compare": cmd_compare, "delete": cmd_delete}[args.sessions_command](store, args, out, err)
    finally:
        store.close()


def _goals_done(store: SessionStore, branch: dict) -> tuple[int, int]:
    rec = store.record(branch["id"], branch["last_cycle"]) if branch["last_cycle"] else None
    if rec is None:
        return 0, 0
    top = [g for g in rec["goals"] if g["parent"] is None]
    return sum(g["status"] == "completed" for g in top), len(top)


def cmd_list(store: SessionStore, args, out: Console, err: Console) -> int:
    runs = store.runs()
    if args.json:
        print(json.dumps([{k: r.get(k) for k in ("id", "name", "scenario", "seed", "decider", "imported_from")}
                          | {"branches": [{k: b[k] for k in ("name", "parent", "fork_cycle", "last_cycle", "current")}
                                          for b in r["branches"]]} for r in runs]))
        return 0
    if not runs:
        out.print(Text("no runs in this store"))
        return 0
    t = Table(title=f"Runs in {store.where}")
    for col in ("run", "scenario", "seed", "decider", "branches", "cycles (main)", "goals done", ""):
        t.add_column(col)
    for r in runs:
        main = r["branches"][0]
        done, top = _goals_done(store, main)
        current = any(b["current"] for b in r["branches"])
        note = "current" if current else ""
        if r.get("imported_from"):
            note = f"imported from {r['imported_from']} (replay only)"
        t.add_row(str(r["id"]), Text(str(r.get("name"))), str(r.get("seed")), Text(str(r.get("decider", ""))),
                  Text(", ".join(b["name"] for b in r["branches"])), str(main["last_cycle"]), f"{done}/{top}",
                  Text(note, style="bold" if current else "dim"))
    out.print(t)
    return 0


def cmd_show(store: SessionStore, args, out: Console, err: Console) -> int:
    meta = store.run_meta(args.run)
    branches = store.branches(args.run)
    rows = []
    for b in branches:
        rec = store.record(b["id"], b["last_cycle"]) if b["last_cycle"] else None
        rows.append(b | {"goals": rec["goals"] if rec else []})
    if args.json:
        print(json.dumps({"run": {k: v for k, v in meta.items() if k not in ("config", "psyche")}, "branches": rows}))
        return 0
    out.print(Text(f"run {meta['id']}: {meta.get('name')} (seed {meta.get('seed')}, decider {meta.get('decider')})", style="bold"))
    if meta.get("imported_from"):
        out.print(Text(f"imported from {meta['imported_from']}: replay only", style="dim"))
    t = Table(title="Branches")
    for col in ("branch", "from", "edits", "cycles", "goals completed", ""):
        t.add_column(col)
    for b in rows:
        origin = f"{b['parent']} @ cycle {b['fork_cycle']}" if b["parent"] else "start"
        done = [g["description"] for g in b["goals"] if g["status"] == "completed"]
        t.add_row(Text(b["name"]), Text(origin), Text(", ".join(b["edits"]) or "—"), str(b["last_cycle"]),
                  Text(", ".join(done) or "none"), Text("current" if b["current"] else "", style="bold"))
    out.print(t)
    return 0


def cmd_export(store: SessionStore, args, out: Console, err: Console) -> int:
    meta = store.run_meta(args.run)
    branch = store.find_branch(args.run, args.branch)
    target = sys.stdout if args.output == "-" else args.output
    writer = TraceWriter(target)
    n = 0
    try:
        writer.header(meta.get("name") or "", meta.get("seed"), meta.get("config") or {}, meta.get("psyche") or {},
                      run=args.run, branch=args.branch)
        for item in store.trace_items(branch):
            writer.write(item)
            n += item.get("type") == "cycle"
    finally:
        writer.close()
    if args.output != "-":
        err.print(Text(f"wrote {n} cycle(s) of run {args.run} branch {args.branch} to {args.output}"))
    return 0


def cmd_import(store: SessionStore, args, out: Console, err: Console) -> int:
    trace = read_trace(args.file)  # validated line by line before anything is written
    run = store.import_trace(trace, str(Path(args.file).name))
    if args.json:
        print(json.dumps({"run": run, "cycles": len(trace.cycles), "events": len(trace.events)}))
    else:
        out.print(Text(f"imported {len(trace.cycles)} cycle(s) and {len(trace.events)} event(s) as run {run} (replay only)"))
    return 0


def cmd_search(store: SessionStore, args, out: Console, err: Console) -> int:
    try:
        filters = parse_search(args.query)
    except ValueError as exc:
        raise InputError(str(exc), field="query") from None
    store.run_meta(args.run)
    rows = store.search(store.find_branch(args.run, args.branch), **filters)
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


def _branch_ref(store: SessionStore, ref: str) -> tuple[int, str]:
    run, _, name = ref.partition(":")
    try:
        run_id = int(run)
    except ValueError:
        raise InputError(f"expected RUN or RUN:BRANCH, e.g. 1:main, got {ref!r}", field="compare") from None
    store.run_meta(run_id)
    name = name or "main"
    return store.find_branch(run_id, name), f"{run_id}:{name}"


def cmd_compare(store: SessionStore, args, out: Console, err: Console) -> int:
    (a, name_a), (b, name_b) = _branch_ref(store, args.a), _branch_ref(store, args.b)
    result = compare_branches(store, a, b)
    if args.json:
        print(json.dumps(result | {"a_name": name_a, "b_name": name_b}))
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


def cmd_delete(store: SessionStore, args, out: Console, err: Console) -> int:
    gone = store.delete_run(args.run)
    if args.json:
        print(json.dumps({"deleted": args.run, "branches": gone["branches"]}))
    else:
        out.print(Text(f"deleted run {args.run} ({gone.get('name')}, {gone['branches']} branch(es))"))
    return 0
