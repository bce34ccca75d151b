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
from .argtypes import Subcommands

EXIT_INVARIANT = 1


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Add `world check` and `world run` to the main CLI's subparsers."""
    p = sub.add_parser("world", help="worlds: several agents in one deterministic world (SPEC §13)")
    p.set_defaults(handler=dispatch)
    wsub = p.add_subparsers(dest="world_command", required=True)
    chk = wsub.add_parser("check", help="validate a world file and every file it names")
    chk.add_argument("file", metavar="FILE", help="a bundled world name or a path to a .toml file")
    chk.add_argument("--json", action="store_true")
    run = wsub.add_parser("run", help="run a world headless: one line per agent step, then a summary")
    run.add_argument("file", metavar="FILE", help="a bundled world name or a path to a .toml file")
    run.add_argument("--rounds", metavar="N", help="rounds to run, >= 1 (default: the file's [world].rounds)")
    run.add_argument("--seed", metavar="N", help="replaces the world seed and every default agent seed")
    run.add_argument("--trace", metavar="PATH", help="write the world trace (JSON Lines) here")
    run.add_argument("--json", action="store_true", help="machine-readable output: one JSON object per step, then the summary")
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
    """Run `world check` or `world run`; InputError goes up to the main CLI (exit 2)."""
    from ..engine import InvariantViolation, World, load_world

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
    rounds = _count(args.rounds, "--rounds", 1)
    seed = _count(args.seed, "--seed", 0)
    spec = load_world(args.file)
    if seed is not None:
        spec = spec.with_seed(seed)
    writer = None
    if args.trace is not None:
        from ..engine import TraceWriter

        writer = TraceWriter(args.trace)
    as_json = bool(args.json)
    llm = None
    if any(a.decider == "llm" or (a.workflow and any(st.target == "llm" for st in a.workflow.steps if st.kind == "llm"))
           for a in spec.agents):
        from ..engine import UserConfig  # the llm decider's endpoint is the user's, as for a run

        cfg = UserConfig.load()
        if cfg.error:
            raise InputError(cfg.error.removeprefix("config ignored: "), field="llm")
        llm = cfg.llm

    def line(step: dict[str, Any]) -> None:
        if as_json:
            print(json.dumps({"type": "step", **step}), file=out.file)
        else:
            out.print(Text(f"r{step['round']:<3} {step['agent']:<12} {step['action']:<22} {step['result']:<10} "
                           f"balance {step['balance']}"))

    try:
        world = World(spec, lines=writer.write_line if writer is not None else None, llm=llm)
        try:
            ended = world.run(rounds, on_step=line)
        except InvariantViolation as exc:
            if as_json:
                print(json.dumps({"error": str(exc), "round": world.round}), file=err.file)
            else:
                err.print(Text(f"error: round {world.round}: {exc}; nothing of that step was committed", style="bold red"))
            return EXIT_INVARIANT
    finally:
        if writer is not None:
            writer.close()
    summary = world.summary() | {"ended": ended}
    if as_json:
        print(json.dumps({"type": "summary", **summary}), file=out.file)
        return 0
    _print_summary(out, summary)
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
    import sys
    from pathlib import Path

    from ..engine import otel, otel_world, world_trace_records
    from .classroom import _headers, _redacted, _replacing

    if args.format == "otlp" and not args.endpoint:
        raise InputError("--format otlp needs --endpoint URL (e.g. http://127.0.0.1:6006/v1/traces)", field="--endpoint")
    if args.format == "otlp" and args.output != "-":
        raise InputError("--format otlp sends to --endpoint; -o goes with --format otlp-json", field="-o")
    if args.format == "otlp-json" and (args.endpoint or args.header):
        raise InputError("--endpoint and --header go with --format otlp; otlp-json writes to -o", field="--format")
    headers = _headers(args.header)
    if args.endpoint:
        otel.check_endpoint(args.endpoint)
    start = otel.parse_start(args.start)
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
    if args.format == "otlp":
        try:
            n = otel.send_otlp(spans, args.endpoint, headers)
        except OSError as exc:
            err.print(Text(_redacted(f"error: {exc}"), style="bold red"))
            return 1
        where = _redacted(args.endpoint)
    elif args.output == "-":
        n = otel.write_otlp_json(spans, sys.stdout)
        where = "-"
    else:
        try:
            with _replacing(Path(args.output)) as fh:
                n = otel.write_otlp_json(spans, fh)
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot write: {getattr(exc, 'strerror', None) or exc}", file=args.output) from None
        where = args.output
    if args.json and where != "-":
        print(json.dumps({"world": first.get("name"), "steps": counted["steps"], "spans": n, "to": where}), file=out.file)
    elif where != "-":
        err.print(Text(f"exported {counted['steps']} step(s) of world {first.get('name')} as {n} span(s) to {where}"))
    return 0
