"""`akh-tui world check FILE` and `akh-tui world run FILE`: worlds of several agents (SPEC §13).

`run` prints one line per agent step (round, agent, action, result, balance) and a summary
(balances, artifacts, mints, each agent's goals). Exit 0 when the world ends by its rounds or
with every agent STOPPED, 1 when the ledger invariant breaks (the step is not committed, the
error names the agent, the action and the numbers), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.text import Text

from ..engine import InputError
from . import worldgate
from .argtypes import Subcommands

EXIT_INVARIANT = 1


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add the `world` commands to the main CLI's subparsers."""
    p = sub.add_parser("world", help="worlds: several agents in one deterministic world (SPEC §13)")
    p.set_defaults(handler=dispatch)
    wsub = p.add_subparsers(dest="world_command", required=True)
    chk = wsub.add_parser("check", help="validate a world file and every file it names")
    chk.add_argument("file", metavar="FILE", help="a bundled world name or a path to a .toml file")
    chk.add_argument("--json", action="store_true")
    run = wsub.add_parser("run", parents=[common], help="run a world headless, recorded in the data dir: one line per "
                                                        "agent step, then a summary (continues an unfinished world)")
    run.add_argument("file", metavar="FILE", help="a bundled world name or a path to a .toml file")
    run.add_argument("--rounds", metavar="N", help="rounds to run, >= 1 (default: the file's [world].rounds; N more "
                                                   "on a continued world)")
    run.add_argument("--seed", metavar="N", help="replaces the world seed and every default agent seed")
    run.add_argument("--trace", metavar="PATH", help="write the world trace (JSON Lines) here")

    # --json (one JSON object per step, then the summary) comes with `common`
    run.add_argument("--fresh", action="store_true", help="start a new world even if the current one can continue")
    worldgate.add_flags(run)
    exp = wsub.add_parser("export", help="a world trace as OpenTelemetry spans: a span per round and per agent step")
    exp.add_argument("trace", metavar="TRACE", help="a world trace file (from `world run --trace`)")
    exp.add_argument("--format", choices=("otlp", "otlp-json"), default="otlp-json",
                     help="otlp: send the spans to --endpoint (OTLP/HTTP); otlp-json: write them as OTLP JSON (default)")
    exp.add_argument("--endpoint", help="OTLP/HTTP traces URL for --format otlp, e.g. http://127.0.0.1:6006/v1/traces")
    exp.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                     help="an HTTP header for --format otlp (e.g. Authorization=Basic …); repeatable")
    exp.add_argument("--start", metavar="TIME",
                     help="when the world's clock 0 is in the exported spans (ISO 8601; default 2025-01-01T00:00:00Z)")
    exp.add_argument("-o", "--output", default="-", metavar="FILE", help="where --format otlp-json writes (default: stdout)")
    exp.add_argument("--json", action="store_true", help="machine-readable summary line")

    for name, what in (("show", "the recorded world: round, clock, balances, agents, branches"),
                       ("ledger", "the recorded world's ledger entries, in order"),
                       ("artifacts", "the recorded world's artifacts and their versions")):
        r = wsub.add_parser(name, parents=[common], help=what)
        r.add_argument("world", nargs="?", metavar="WORLD",
                       help="a recorded world: wN or wN:BRANCH (see `sessions list`; default: the current world)")
        r.add_argument("--branch", metavar="NAME", help="a branch of the world (default: its current one, or main)")
        r.add_argument("--at", metavar="ROUND:AGENT", help="as it was right after this step (a rewind; nothing changes)")
        if name == "ledger":
            r.add_argument("--agent", metavar="ID", help="only entries from or to this account")
    moved = wsub.add_parser("why-moved", parents=[common], help="which other agents' actions since an agent's last step "
                                                                "changed what its step read (its read-set); --prove "
                                                                "replays each with that action a noop")
    moved.add_argument("--at", metavar="ROUND:AGENT", required=True, help="the agent's step")
    moved.add_argument("--branch", metavar="NAME", help="a branch of the current world (default: the current one)")
    moved.add_argument("--prove", action="store_true", help="for each mover, replay the world with its action replaced "
                                                            "by noop (in memory: nothing is written) and say whether "
                                                            "the decision changed")
    ask = wsub.add_parser("interview", parents=[common],
                          help="ask an agent of a recorded world why it did what it did at a step (its record and "
                               "explainer answer, or its model with --model); kept on a side branch")
    ask.add_argument("words", nargs="*", metavar="[WORLD] QUESTION",
                     help="the question (quote it); first, optionally, the world: wN or wN:BRANCH (default: the "
                          "current world, its current branch)")
    ask.add_argument("--at", metavar="ROUND:AGENT", help="the agent's step to ask about")
    ask.add_argument("--branch", metavar="NAME", help="a branch of the world (default: its current one, or main)")
    ask.add_argument("--model", action="store_true", help="ask the agent's model too, on a copy of its state then "
                                                          "(a model agent; answered from the recorded calls if asked before)")
    ask.set_defaults(more_words="words")
    ask.add_argument("--list", action="store_true", help="list the world's past interviews (with --at: of that step)")
    fork = wsub.add_parser("fork", parents=[common], help="a new branch of the current world after a step, with edits; "
                                                          "`world run FILE` continues it")
    fork.add_argument("--at", metavar="ROUND:AGENT", required=True, help="the step the branch follows")
    fork.add_argument("--agent", metavar="ID", help="the agent --psyche, --disable, --decider and --goal edit")
    fork.add_argument("--psyche", metavar="FILE", help="the agent's psyche from this TOML file")
    fork.add_argument("--disable", metavar="TOOL", action="append", default=[], help="disable a tool for the agent (repeatable)")
    fork.add_argument("--decider", metavar="KIND", help="the agent's decider: utility, scripted, llm, local, workflow (its "
                                                        "[agents.workflow] in the world file) or a plugin 'module:attr'")
    fork.add_argument("--goal", metavar="EDIT", action="append", default=[],
                      help="a goal of the agent (repeatable): 'new DESCRIPTION [priority=N] [criteria=TEXT]' adds one, "
                           "'N status=S priority=P criteria=TEXT' (any of them) changes goal #N; quote values with spaces")
    fork.add_argument("--limit", metavar="KEY=VALUE", action="append", default=[],
                      help="a [world.limits] value for the whole world (repeatable): actions, llm_calls, llm_tokens or "
                           "writes = an integer >= 0, window_s = seconds")
    fork.add_argument("--order", metavar="A,B,C", help="the order of the rest of the round (the agents still to act in it)")
    fork.add_argument("--branch", metavar="NAME", help="fork this branch (default: the current one)")
    fork.add_argument("--name", metavar="NAME", help="the new branch's name (default: fork-N)")
    from .trust import add_flags as add_trust_flags

    add_trust_flags(fork)  # a plugin decider is the world's folder's code: agreed to as for a run


def _count(value: str | None, flag: str, lo: int) -> int | None:
    if value is None:
        return None
    text = str(value).strip()
    if not text.lstrip("-").isdigit():
        raise InputError(f"not an integer: {value!r}", field=flag)
    n = int(text)
    if n < lo:
        raise InputError(f"must be >= {lo}, got {n}", field=flag)
    return n


def dispatch(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Run a `world` command; InputError goes up to the main CLI (exit 2)."""
    from ..engine import load_world

    if args.world_command == "export":
        return cmd_export(args, out, err)
    if args.world_command == "check":
        spec = load_world(args.file)
        if args.json:
            print(json.dumps({"ok": True, "name": spec.name, "agents": [a.id for a in spec.agents],
                              "artifacts": [x.id for x in spec.artifacts]}), file=out.file)
        else:
            out.print(Text(f"{args.file}: ok", style="green"))
            out.print(Text(f"world {spec.name}: {len(spec.agents)} agent(s) ({', '.join(a.id for a in spec.agents)}), "
                           f"{len(spec.artifacts)} artifact(s), {spec.rounds} rounds"))
        return 0
    if args.world_command == "run":
        return _run(args, out, err)
    if args.world_command == "fork":
        return _fork(args, out)
    if args.world_command == "why-moved":
        return _why_moved(args, out)
    if args.world_command == "interview":
        return _interview(args, out)
    return _read(args, out)


def _why_moved(args: argparse.Namespace, out: Console) -> int:
    """`world why-moved --at ROUND:AGENT [--prove]` (engine/world/moved.py)."""
    from ..engine import WorldRun, moved_lines, who_moved

    r = WorldRun.open_readonly(_locations(args), branch=args.branch)
    try:
        got = who_moved(r, args.at, prove=bool(args.prove))
    finally:
        r.close()
    if args.json:
        print(json.dumps(got), file=out.file)
        return 0
    for line in moved_lines(got):
        out.print(Text(line))
    return 0


def _interview(args: argparse.Namespace, out: Console) -> int:
    """`world interview [WORLD] --at ROUND:AGENT "question" [--model]` and `--list`
    (engine/world/interview.py)."""
    from ..engine import WorldRun, interview, interview_lines, is_world_ref, list_interviews, parse_world_ref

    words = list(args.words)
    # the first word is the world when it reads wN[:BRANCH] and something follows (or --list)
    ref = words.pop(0) if words and is_world_ref(words[0]) and (len(words) > 1 or args.list) else None
    world, branch = None, args.branch
    if ref is not None:
        world, named = parse_world_ref(ref, field="WORLD")
        if ":" in ref:
            if branch is not None and branch != named:
                raise InputError(f"{ref} names branch {named!r} and --branch {branch!r}", field="--branch")
            branch = named
    if args.list:
        if words:
            raise InputError("--list takes no question", field="QUESTION")
        got = list_interviews(_locations(args), world, args.at)
        rows = [x for x in got["interviews"] if branch is None or x["parent"] == branch]
        if args.json:
            print(json.dumps({"world": f"w{got['world']}", "interviews": rows}), file=out.file)
            return 0
        for x in rows:
            out.print(Text(f"w{got['world']}:{x['branch']} #{x['n']}  {x['at']} asked on {x['parent']}"
                           + (" (its model too)" if x["source"] == "model" else ""), style="bold"))
            for line in interview_lines(x)[:-1]:
                out.print(Text("  " + line))
        if not rows:
            out.print(Text(f"no interviews in world w{got['world']}" + (f" at {args.at}" if args.at else "")))
        return 0
    if not args.at:
        raise InputError("name the agent's step: --at ROUND:AGENT (like 3:alice)", field="--at")
    if not words:
        raise InputError('ask a question, like: akh-tui world interview --at 3:alice "why did you choose that?"',
                         field="QUESTION")
    r = WorldRun.open_readonly(_locations(args), branch=branch, world=world)
    try:
        got = interview(r, args.at, " ".join(words), model=bool(args.model))
    finally:
        r.close()
    if args.json:
        print(json.dumps(got), file=out.file)
        return 0
    for line in interview_lines(got):
        out.print(Text(line))
    return 0


def _locations(args: argparse.Namespace) -> Any:
    from ..engine import Locations

    return Locations.resolve(getattr(args, "data_dir", None))


def _run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from ..engine import GateClosed, InvariantViolation, WorldRun, load_world

    rounds = _count(args.rounds, "--rounds", 1)
    seed = _count(args.seed, "--seed", 0)
    as_json = bool(args.json)
    # the gate's flags are checked (agents named, a terminal to ask on) before the world opens
    spec = load_world(args.file)
    gated, answer = worldgate.plan(args, spec, err)
    width = max([12, *(len(a.id) for a in spec.agents)])  # the agent column fits the longest id

    def line(step: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps({"type": "step", **step}), file=out.file)
        else:
            user = step.get("user")
            said = "" if user is None else f"  ({user['decision']}" + (
                f" {user['tool']}" if user["decision"] == "choose" else "") + f" by {user['by']})"
            out.print(Text(f"r{step['round']:<3} {step['agent']:<{width}} {step['action']:<22} {step['result']:<10} "
                           f"balance {step['balance']}{said}"))

    r = WorldRun.continue_or_start(_locations(args), args.file, seed, fresh=bool(args.fresh), trace=args.trace)
    try:
        if r.note and not as_json:
            err.print(Text(r.note, style="dim"))
        if gated is not None:
            r.gate(gated)
        try:
            ended = r.run(rounds, on_step=line, answer=answer)
        except GateClosed as exc:
            err.print(Text(f"stopped at the gate: {exc}; nothing of that step was committed "
                           f"(`akh-tui world run {args.file}` goes on from there)", style="yellow"))
            return 0
        except InvariantViolation as exc:
            if as_json:
                print(json.dumps({"error": str(exc), "round": r.world.round}), file=err.file)
            else:
                err.print(Text(f"error: round {r.world.round}: {exc}; nothing of that step was committed", style="bold red"))
            return EXIT_INVARIANT
        summary = r.world.summary() | {"ended": ended, "world": r.world_id, "branch": r.branch_name, "step": r.last_step}
    finally:
        r.close()
    if as_json:
        print(json.dumps({"type": "summary", **summary}), file=out.file)
        return 0
    _print_summary(out, summary)
    return 0


def _open_at(args: argparse.Namespace) -> tuple[Any, Any]:
    """The recorded world (read-only) and the World at `--at` (or its last step)."""
    from ..engine import InputError, WorldRun, parse_world_ref

    world, branch = None, args.branch
    if args.world is not None:
        world, named = parse_world_ref(args.world, field="WORLD")
        if ":" in args.world:
            if branch is not None and branch != named:
                raise InputError(f"{args.world} names branch {named!r} and --branch {branch!r}", field="--branch")
            branch = named
    r = WorldRun.open_readonly(_locations(args), branch=branch, world=world)
    try:
        return r, (r.world_at(r.step_number(args.at)) if args.at else r.world)
    except BaseException:
        r.close()
        raise


def _read(args: argparse.Namespace, out: Console) -> int:
    """`world show`, `world ledger`, `world artifacts`."""
    r, w = _open_at(args)
    try:
        if args.world_command == "show":
            s = w.summary() | {"world": r.world_id, "name": r.spec.name, "file": r.meta["file"], "seed": r.meta["seed"],
                               "branch": r.branch_name, "branches": r.branches(),
                               "step": r.step_number(args.at) if args.at else r.last_step}
            if args.json:
                print(json.dumps(s), file=out.file)
                return 0
            out.print(Text(f"world {s['world']}: {s['name']} ({s['file']}, seed {s['seed']}), branch {s['branch']}, "
                           f"step {s['step']}", style="bold"))
            out.print(Text("branches: " + ", ".join(
                f"{b['name']} ({b['steps']} steps" + (f", forked after step {b['fork_step']}" if b["fork_step"] is not None else "")
                + (f", edits: {'; '.join(_edit_words(e) for e in b['edits'])}" if b["edits"] else "") + ")"
                for b in s["branches"])))
            _print_summary(out, s | {"ended": "round under way" if w.order is not None else
                                     ("every agent is STOPPED" if w.over else f"{w.round} rounds")})
            return 0
        if args.world_command == "artifacts":
            rows = [{"id": a.id, "owner": a.owner, "price": a.price, "tool": a.tool, "version": a.version,
                     "kind": a.kind, "size": a.size} for a in w.artifacts]
            if args.json:
                print(json.dumps(rows), file=out.file)
            else:
                for a in rows:
                    out.print(Text(f"{a['id']}@{a['version']}  owner {a['owner']}  price {a['price']}  "
                                   f"{a['size']} {'chars' if a['kind'] == 'text' else 'triples'}"
                                   + (f"  tool {a['tool']}" if a["tool"] else "")))
                if not rows:
                    out.print(Text("no artifacts"))
            return 0
        end = r.step_number(args.at) if args.at else None
        entries = [json.loads(x) for row in r.steps(1, end) for x in row.lines if x.startswith('{"type":"ledger"')]
        if args.agent:
            entries = [e for e in entries if args.agent in (e["from"], e["to"])]
        if args.json:
            for e in entries:
                print(json.dumps(e), file=out.file)
        else:
            for e in entries:
                out.print(Text(f"r{e['round']:<3} {e['clock']:>8g}s  {e['from']:>10} -> {e['to']:<10} {e['amount']:>4}  "
                               f"{e['why']}"))
            out.print(Text(f"{len(entries)} entries; balances: "
                           + ", ".join(f"{k} {v}" for k, v in w.ledger.snapshot().items()) + f"; minted {w.ledger.minted}"))
        return 0
    finally:
        r.close()


def _edit_words(e: dict[str, Any]) -> str:
    if e["edit"] == "interview":
        return f"an interview of {e['agent']} at {e['at']}"
    if e["edit"] == "psyche":
        return f"{e['agent']}'s psyche from {e['source']}"
    if e["edit"] == "disable":
        return f"{e['agent']} without {e['tool']}"
    if e["edit"] == "decider":
        return f"{e['agent']} decides with {e['decider']} (was {e['was']})"
    if e["edit"] == "limit":
        return f"limit {e['key']} = {e['value']:g}"
    if e["edit"] == "goal":
        return f"{e['agent']} gets goal #{e['goal']} {e['description']!r} (priority {e['priority']})"
    if e["edit"] == "goal_edit":
        return f"{e['agent']}'s " + ", ".join(e["done"])
    return f"round {e['round']} order {','.join(e['order'])}"


def _fork(args: argparse.Namespace, out: Console) -> int:
    from ..engine import (DisableTool, SetDecider, SetOrder, SetPsyche, WorldRun, parse_goal_edit, parse_limit_edit,
                          read_user_file)

    edits: list[Any] = []
    if (args.psyche or args.disable or args.decider is not None or args.goal) and not args.agent:
        raise InputError("--psyche, --disable, --decider and --goal edit one agent: name it with --agent", field="--agent")
    if args.psyche:
        edits.append(SetPsyche(args.agent, read_user_file(args.psyche, "--psyche"), source=args.psyche))
    edits += [DisableTool(args.agent, t) for t in args.disable]
    if args.decider is not None:
        edits.append(SetDecider(args.agent, args.decider))
    edits += [parse_goal_edit(args.agent, g) for g in args.goal]
    edits += [parse_limit_edit(x) for x in args.limit]
    if args.order:
        edits.append(SetOrder(tuple(x.strip() for x in args.order.split(",") if x.strip())))
    if not edits:
        raise InputError("a fork needs an edit: --psyche, --disable, --decider, --goal, --limit or --order", field="--at")
    r = WorldRun.resume(_locations(args), branch=args.branch)
    try:
        at = r.step_number(args.at)
        r.fork(at, edits, args.name)
        info = {"world": r.world_id, "branch": r.branch_name, "after_step": at, "at": args.at}
    finally:
        r.close()
    if args.json:
        print(json.dumps(info), file=out.file)
    else:
        out.print(Text(f"branch {info['branch']} of world {info['world']}: after step {at} ({args.at}), edits applied; "
                       f"it is current: `akh-tui world run FILE` continues it"))
    return 0


def _print_summary(out: Console, s: dict[str, Any]) -> None:
    out.print(Text(f"ended: {s['ended']} (round {s['round']}, clock {s['clock']:g} s)", style="bold"))
    out.print(Text("balances: " + ", ".join(f"{k} {v}" for k, v in s["balances"].items())
                   + f"; minted {s['minted']}"))
    arts = s["artifacts"]
    out.print(Text("artifacts: " + (", ".join(f"{a['id']}@{a['version']} ({a['owner']}, price {a['price']}, "
                                              f"{a['size']} {'chars' if a['kind'] == 'text' else 'triples'})"
                                              for a in arts) or "none")))
    mints = [m for m in s["mints"] if m["winner"] is not None]
    out.print(Text(f"mints: {len(s['mints'])} held, {len(mints)} won"
                   + "".join(f"; r{m['round']} {m['winner']} with {m['artifact']} (price {m['price']}, "
                             f"score {m['score']}, minted {m['minted']})" for m in mints)))
    for aid, a in s["agents"].items():
        goals = "; ".join(f"#{g['id']} {g['description']} [{g['status']}]" for g in a["goals"])
        extra = f" ({a['crash_reason']})" if a["crash_reason"] else ""
        out.print(Text(f"{aid}: {a['state']}{extra}: {goals}"))


def cmd_export(args: argparse.Namespace, out: Console, err: Console) -> int:
    """`world export TRACE`: the world run as OpenTelemetry spans (engine/export/otel_world.py),
    streamed from the trace file a step at a time, sent to an OTLP/HTTP endpoint or written as
    OTLP JSON; the same checks of the flags as `sessions export --format otlp…`."""
    from ..engine import otel_world, world_trace_records
    from .classroom import deliver_spans, otlp_flags

    headers, start = otlp_flags(args)
    # the header is read (and checked) before anything is sent or written
    at = [0]
    records = world_trace_records(args.trace, at)
    first = next(records)
    counted = {"steps": 0}

    def items() -> Any:
        yield first
        for rec in records:
            if rec.get("type") in ("cycle", "rate_limited"):
                counted["steps"] += 1
            yield rec

    def spans_of() -> Any:
        try:
            yield from otel_world.stream_world_spans(items(), start_ns=start)
        except InputError as exc:
            if exc.file is not None:
                raise
            # the exporter's own refusal is about the record just read: name where it is
            raise InputError(exc.message, file=args.trace, line=at[0], field=exc.field) from None

    spans = spans_of()
    sent = deliver_spans(spans, args, headers, err)
    if sent is None:
        return 1
    n, where = sent
    if args.json and where != "-":
        print(json.dumps({"world": first.get("name"), "steps": counted["steps"], "spans": n, "to": where}), file=out.file)
    elif where != "-":
        err.print(Text(f"exported {counted['steps']} step(s) of world {first.get('name')} as {n} span(s) to {where}"))
    return 0
