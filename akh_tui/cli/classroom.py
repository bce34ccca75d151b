"""For the classroom and the lab: `sessions pin`, `check` (pinned behaviours), `serve` (the
workbench in a browser) and `sessions report`. Registered from cli.py and cli/sessions.py;
engine modules are imported inside the commands, so `akh-tui --help` loads none of them."""

from __future__ import annotations

import argparse

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator

if TYPE_CHECKING:
    from ..engine import Sessions, SoarRun

from rich.console import Console
from rich.text import Text

from .argtypes import Subcommands, positive

EXIT_CHANGED = 1
DEFAULT_MAX_TABS = 40  # `serve --max-tabs`: a class is dozens of students, a tab each


def add_session_parsers(ssub, common, export) -> None:
    """`sessions pin` and `sessions report`, and the OpenTelemetry formats of `sessions export`."""
    export.add_argument("--format", choices=("jsonl", "otlp", "otlp-json"), default="jsonl",
                        help="jsonl: the trace (default); otlp: send OpenTelemetry spans to --endpoint (OTLP/HTTP); "
                             "otlp-json: write them as OTLP JSON")
    export.add_argument("--endpoint", help="OTLP/HTTP traces URL for --format otlp, e.g. http://127.0.0.1:6006/v1/traces")
    export.add_argument("--header", action="append", default=[], metavar="KEY=VALUE",
                        help="an HTTP header for --format otlp (e.g. Authorization=Basic …); repeatable")
    export.add_argument("--start", metavar="TIME",
                        help="when cycle 1 starts in the exported spans (ISO 8601; default 2025-01-01T00:00:00Z: "
                             "span times come from cycle numbers, never the clock)")
    pin = ssub.add_parser("pin", parents=[common],
                          help="record what a run decided at chosen cycles, for `akh-tui check` to compare later")
    pin.add_argument("run", type=int, metavar="RUN")
    pin.add_argument("--cycle", dest="cycles", action="append", type=int, required=True, metavar="C",
                     help="a cycle to pin; repeatable")
    pin.add_argument("--branch", default="main", help="branch name (default: main)")
    pin.add_argument("-o", "--output", required=True, metavar="FILE", help="the pin file to write, e.g. demo.pin.json")


    rep = ssub.add_parser("report", parents=[common],
                          help="one self-contained HTML or Markdown file saying what a run did (plots inline)")
    rep.add_argument("run", type=int, metavar="RUN")
    rep.add_argument("--branch", default="main", help="branch name (default: main)")
    rep.add_argument("-o", "--output", required=True, metavar="FILE", help="report.html or report.md")
    rep.add_argument("--shot", dest="shots", action="append", type=int, default=[], metavar="C",
                     help="add the workbench as it draws cycle C (inline SVG); repeatable")


def add_parser(sub: Subcommands, common: argparse.ArgumentParser) -> None:
    """Top-level `check` and `serve`."""
    srv = sub.add_parser("serve", help="serve the workbench to web browsers (textual-serve: one app process per tab)")
    srv.set_defaults(handler=dispatch)
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    srv.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    srv.add_argument("--scenario", help="scenario name or path each tab opens (default: zoo)")
    srv.add_argument("--seed", type=int, help="override the scenario's seed")
    srv.add_argument("--decider", choices=("utility", "scripted", "llm", "local"), help="who decides (see `agent run --decider`)")
    srv.add_argument("--data-dir", dest="serve_data_dir", metavar="DIR",
                     help="where the tabs record their runs (default: $AKH_TUI_DATA or the platform's data dir)")
    srv.add_argument("--public-url", help="the URL browsers reach the server at, when it is not http://HOST:PORT "
                                          "(Host and Origin are checked against it and the served address)")
    srv.add_argument("--allow-remote", action="store_true",
                     help="allow listening on an address other machines can reach (with --public-url: whoever has "
                          "the printed URL, token included, gets a workbench on this machine)")
    srv.add_argument("--max-tabs", type=positive, metavar="N",
                     help=f"at most N tabs (app processes) at once; the next one is asked to wait "
                          f"(default: {DEFAULT_MAX_TABS}; with --world, one per agent and 5 more)")
    srv.add_argument("--world", metavar="FILE",
                     help="serve a class on a world (a bundled name or a .toml path): the printed URL is the "
                          "teacher's, whose tab hands out one join URL per agent; a student's tab approves or "
                          "chooses its agent's actions")
    srv.add_argument("--decision-timeout", type=float, default=60.0, metavar="SECONDS",
                     help="with --world: how long a decision waits for its seat's answer before the table's "
                          "choice is taken, recorded as by=timeout (default: 60)")
    srv.add_argument("--allow-dangerous", action="store_true",
                     help="let scenarios turn on file, network and process access in served sessions (off otherwise)")
    chk = sub.add_parser("check", help="rerun a pin file's scenario headless: exit 0 if every pinned cycle is the same, 1 if not")
    chk.set_defaults(handler=dispatch)
    chk.add_argument("file", help="a pin file from `akh-tui sessions pin`")
    chk.add_argument("--json", action="store_true", help="machine-readable output")


def handles(args) -> bool:
    """Whether a `sessions …` command is one of ours (pin, report, export to OpenTelemetry)."""
    cmd = args.sessions_command
    return cmd in ("pin", "report") or (cmd == "export" and (args.format != "jsonl" or args.endpoint or args.header
                                                            or args.start))


def dispatch_sessions(args, out: Console, err: Console) -> int:
    from ..engine import Locations
    from ..engine import Sessions

    sessions = Sessions(Locations.resolve(args.data_dir))  # read-only: pin, report and export write no byte of it
    try:
        return {"pin": cmd_pin, "report": cmd_report, "export": cmd_export_otel}[args.sessions_command](
            sessions, args, out, err)
    finally:
        sessions.close()


def _headers(pairs: list[str]) -> dict[str, str]:
    """--header KEY=VALUE pairs: the only headers an OTLP export sends. Their values are
    registered as secrets, so no error line, log or span repeats them."""
    from ..engine import register_secret
    from ..engine import InputError

    out = {}
    for pair in pairs:
        k, sep, v = pair.partition("=")
        if not sep or not k.strip():
            raise InputError(f"expected KEY=VALUE, got {_redacted(pair)!r}", field="--header")
        register_secret(v)
        out[k.strip()] = v
    return out


def _redacted(text: str) -> str:
    """`text` as it may be printed: userinfo, header values and credentials masked."""
    from ..engine import redact

    return redact(text)


@contextmanager
def _replacing(path: Path) -> Iterator[IO[str]]:
    """`path` open for writing text, replaced only once the whole file is written: a failed
    export or report leaves what was there before. What is not a regular file (/dev/null, a
    pipe) is written in place."""
    if path.exists() and not path.is_file():
        with open(path, "w", encoding="utf-8") as fh:
            yield fh
        return
    part = path.with_name(f".{path.name}.part")
    try:
        with open(part, "w", encoding="utf-8") as fh:
            yield fh
        os.replace(part, path)
    finally:
        if part.exists():
            part.unlink()


def otlp_flags(args: argparse.Namespace) -> tuple[dict[str, str], int]:
    """The span exports' flags checked together (runs' and worlds' alike): the headers and the
    start time, or an InputError naming the flag that does not go with --format."""
    from ..engine import InputError, otel

    if args.format == "otlp" and not args.endpoint:
        raise InputError("--format otlp needs --endpoint URL (e.g. http://127.0.0.1:6006/v1/traces)", field="--endpoint")
    if args.format == "otlp" and args.output != "-":
        raise InputError("--format otlp sends to --endpoint; -o goes with --format otlp-json", field="-o")
    if args.format == "otlp-json" and (args.endpoint or args.header):
        raise InputError("--endpoint and --header go with --format otlp; otlp-json writes to -o", field="--format")
    headers = _headers(args.header)
    if args.endpoint:
        otel.check_endpoint(args.endpoint)
    return headers, otel.parse_start(args.start)


def deliver_spans(spans: Iterable[Any], args: argparse.Namespace, headers: dict[str, str],
                  err: Console) -> tuple[int, str] | None:
    """Send spans to `--endpoint` (`--format otlp`) or write them as OTLP JSON to `-o` (stdout
    by default, a file replaced only when whole): (spans, where they went), or None when the
    endpoint could not be reached (said on `err`). Runs' and worlds' exports share it."""
    import sys

    from ..engine import InputError, otel

    if args.format == "otlp":
        try:
            n = otel.send_otlp(spans, args.endpoint, headers)
        except OSError as exc:
            err.print(Text(_redacted(f"error: {exc}"), style="bold red"))
            return None
        return n, _redacted(args.endpoint)
    if args.output == "-":
        return otel.write_otlp_json(spans, sys.stdout), "-"
    try:
        with _replacing(Path(args.output)) as fh:
            n = otel.write_otlp_json(spans, fh)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot write: {getattr(exc, 'strerror', None) or exc}", file=args.output) from None
    return n, args.output


def cmd_export_otel(sessions: "Sessions", args, out: Console, err: Console) -> int:
    """`sessions export --format otlp|otlp-json`: the branch as OpenTelemetry spans
    (engine/export/otel.py), sent to an OTLP/HTTP endpoint or written as OTLP JSON, streamed from the
    store a batch at a time."""
    from ..engine import InputError

    if args.format == "jsonl":
        raise InputError("--endpoint, --header and --start go with --format otlp or otlp-json", field="--format")
    headers, start = otlp_flags(args)
    if isinstance(args.run, str):  # a world (wN): its §13 records as otel_world's spans
        from ..engine import Locations, otel_world, parse_world_ref, show_world, world_items

        loc, ref = Locations.resolve(args.data_dir), f"{args.run}:{args.branch}"
        world, _ = parse_world_ref(ref)
        shown = show_world(loc, args.run)
        steps = next((b["steps"] for b in shown["branches"] if b["name"] == args.branch), None)
        if steps is None:
            raise InputError(f"world {args.run} has no branch {args.branch!r} (it has: "
                             f"{', '.join(b['name'] for b in shown['branches'])})", field="--branch")
        spans = otel_world.stream_world_spans(world_items(loc, ref), run=world, branch=args.branch, start_ns=start)
        count, unit, key = steps, "step(s)", "steps"
    else:
        extent = sessions.extent(args.run, args.branch)
        spans = sessions.spans(args.run, args.branch, start)
        count, unit, key = extent.cycles, "cycle(s)", "cycles"
    sent = deliver_spans(spans, args, headers, err)
    if sent is None:
        return 1
    n, where = sent
    if args.json and where != "-":
        print(json.dumps({"run": args.run, "branch": args.branch, key: count, "spans": n, "to": where}))
    elif where != "-":
        what = f"world {args.run}" if isinstance(args.run, str) else f"run {args.run}"
        err.print(Text(f"exported {count} {unit} of {what} branch {args.branch} as {n} span(s) to {where}"))
    return 0


def cmd_pin(sessions: "Sessions", args, out: Console, err: Console) -> int:
    from ..engine import InputError
    from ..engine import pins

    path = Path(args.output)
    if sessions.is_soar(args.run):  # a Soar run's trace is its pin (`akh-tui check` reruns it)
        text, upto = sessions.soar_pin(args.run, args.branch, args.cycles)
        try:
            path.write_text(text, encoding="utf-8")
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot write the pin file: {getattr(exc, 'strerror', None) or exc}",
                             file=str(path)) from None
        if args.json:
            print(json.dumps({"file": str(path), "decisions": upto, "architecture": "soar"}))
        else:
            out.print(Text(f"pinned decisions 1..{upto} of Soar run {args.run} branch {args.branch} to {path}"))
            out.print(Text(f"check it with: akh-tui check {path}", style="dim"))
        return 0
    pin = sessions.pin(args.run, args.branch, args.cycles, path)
    try:
        path.write_text(pins.dump_pin(pin), encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot write the pin file: {getattr(exc, 'strerror', None) or exc}", file=str(path)) from None
    if args.json:
        print(json.dumps({"file": str(path), "cycles": [c["cycle"] for c in pin["cycles"]]}))
    else:
        cycles = ", ".join(str(c["cycle"]) for c in pin["cycles"])
        out.print(Text(f"pinned cycle(s) {cycles} of run {args.run} branch {args.branch} "
                       f"({pin['scenario_name']}, seed {pin['seed']}) to {path}"))
        out.print(Text(f"check it with: akh-tui check {path}", style="dim"))
    return 0


def cmd_report(sessions: "Sessions", args, out: Console, err: Console) -> int:
    from ..engine import InputError

    path = Path(args.output)
    kind = path.suffix.lower()
    if kind not in (".html", ".htm", ".md"):
        raise InputError(f"the report is written as .html or .md, not {kind or 'a file without a suffix'}", field="-o")
    soar = sessions.is_soar(args.run)  # a Soar run: its decisions (export/soar_report.py)
    last: int = len(sessions.soar_records(args.run, args.branch)) if soar else sessions.extent(args.run, args.branch).last
    if soar and args.shots:
        raise InputError("a Soar run's report has no workbench shots (its workbench is another app)", field="--shot")
    bad = [c for c in args.shots if not 1 <= c <= last]
    if bad:
        raise InputError(f"cycle {bad[0]} is not recorded (run {args.run} branch {args.branch} has cycles 1..{last})",
                         field="--shot")
    shots = workbench_shots(sessions, args.run, args.branch, sorted(set(args.shots))) if args.shots else None
    try:
        with _replacing(path) as fh:
            n = sessions.write_report(args.run, args.branch, fh, markdown=kind == ".md", shots=shots)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot write the report: {getattr(exc, 'strerror', None) or exc}", file=str(path)) from None
    if args.json:
        print(json.dumps({"file": str(path), "cycles": n}))
    else:
        out.print(Text(f"wrote the report of run {args.run} branch {args.branch} ({n} cycle(s)) to {path}"))
    return 0


def workbench_shots(sessions: "Sessions", run: int, branch_name: str, cycles: list[int]) -> dict[int, str]:
    """The workbench replaying the branch (read-only, from its exported trace), as it draws
    each of `cycles`: SVG, with web fonts dropped so the report fetches nothing."""
    import asyncio
    import re
    import tempfile

    from ..engine import TraceWriter
    from ..tui.app import Workbench  # the workbench itself: only this option loads textual

    meta = sessions.shown_meta(run)

    async def shoot(trace: Path) -> dict[int, str]:
        app = Workbench(trace_file=trace, sync=True)
        out = {}
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            for c in cycles:
                app.action_replay_back((app.replay or c) - c)  # a replay opens on the newest cycle
                await pilot.pause()
                svg = app.export_screenshot(title=f"{meta.get('name')} run {run} {branch_name}: cycle {c}")
                svg = re.sub(r',?\s*url\("https?://[^"]*"\)\s*format\("[^"]*"\)', "", svg)  # web fonts
                out[c] = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
        return out

    with tempfile.TemporaryDirectory(prefix="akh-report-") as tmp:
        trace = Path(tmp) / "branch.jsonl"
        writer = TraceWriter(trace)
        try:
            writer.header(meta.get("name") or "", meta.get("seed"), meta.get("config") or {}, meta.get("psyche") or {},
                          run=run, branch=branch_name)
            for item in sessions.items(run, branch_name):
                writer.write(item)
        finally:
            writer.close()
        return asyncio.run(shoot(trace))


def _check_soar(run: "SoarRun", args, out: Console) -> int:
    """A Soar trace checked: its scenario rerun with its seed and selections, each decision
    compared with the recorded one; exit 0 when all are the same, EXIT_CHANGED when not."""
    n = len(run.expected or [])
    try:
        while run.decision < n and run.divergence is None and run.step() is not None:
            pass
    finally:
        run.close()
    short = run.divergence is None and run.decision < n
    why = run.divergence or (f"the rerun halted after {run.decision} of {n} decisions" if short else None)
    if args.json:
        print(json.dumps({"architecture": "soar", "decisions": n, "same": why is None, "changed": why}))
    elif why is None:
        out.print(Text(f"all {n} decisions as recorded", style="green"))
    else:
        out.print(Text(f"changed: {why}", style="bold red"))
    return 0 if why is None else EXIT_CHANGED


def cmd_check(args, out: Console, err: Console) -> int:
    from .trust import checking
    from ..engine import check_pin
    from ..engine import pins

    checking()  # a pin is a file someone handed out: only folders trusted already may run code
    path = Path(args.file)
    from ..engine import replay_soar_trace

    soar = replay_soar_trace(path)  # a Soar run's trace is its pin: every decision rerun and compared
    if soar is not None:
        return _check_soar(soar, args, out)
    pin = pins.load_pin(path)
    result = check_pin(pin, path)
    if args.json:
        print(json.dumps(result))
        return 0 if result["same"] else EXIT_CHANGED
    for r in result["cycles"]:
        if r["same"]:
            out.print(Text(f"cycle {r['cycle']}: same", style="green"))
        else:
            out.print(Text(f"cycle {r['cycle']}: changed", style="bold red"))
            for change in r["changes"]:
                out.print(Text(f"  {change}"))
    parted = result["parted"]
    if parted is not None:
        out.print(Text(f"the run parted at cycle {parted['cycle']}: pinned {parted['pinned']}, now {parted['now']}",
                       style="bold yellow"))
    elif not result["same"]:
        out.print(Text("the run made the same choices up to the last pinned cycle; only the numbers above moved",
                       style="yellow"))
    out.print(Text(f"{path}: " + ("same" if result["same"] else "behaviour changed"),
                   style="bold green" if result["same"] else "bold red"))
    return 0 if result["same"] else EXIT_CHANGED


def serve_command(args) -> str:
    """The shell command textual-serve starts for each tab: this akh-tui's workbench (the same
    interpreter, so the same installation) with the serve options passed on."""
    import shlex
    import sys

    argv = [sys.executable, "-m", "akh_tui.cli"]
    data = args.serve_data_dir or getattr(args, "data_dir", None)  # `akh-tui --data-dir D serve` too
    if data:
        argv += ["--data-dir", str(Path(data).resolve())]
    if args.scenario:
        scenario = Path(args.scenario)
        argv += ["--scenario", str(scenario.resolve()) if scenario.exists() else args.scenario]
    if args.seed is not None:
        argv += ["--seed", str(args.seed)]
    if args.decider:
        argv += ["--decider", args.decider]
    return shlex.join(argv)


def cmd_serve(args, out: Console, err: Console) -> int:
    import os

    from ..engine import DANGEROUS_CAPABILITIES, SAFE_ENV, SERVED_ENV, InputError, check_url, load_scenario, trust

    if args.seed is not None and args.seed < 0:
        raise InputError(f"must be ≥ 0, got {args.seed}", field="--seed")
    if not 0 < args.port < 65536:
        raise InputError(f"must be a port number 1..65535, got {args.port}", field="--port")
    try:
        from .serve_guard import Admission, GuardedServer, is_loopback
    except ImportError:
        raise InputError("serving needs the textual-serve package: pip install textual-serve", field="serve") from None
    if not is_loopback(args.host) and not args.allow_remote:
        raise InputError(f"{args.host} is not a loopback address: anyone who can reach it could try to get a workbench "
                         f"on this machine. Add --allow-remote (and --public-url) if that is what you want, or serve "
                         f"on 127.0.0.1", field="--host")
    public = None
    if args.public_url is not None:
        public = check_url(args.public_url, "--public-url")
        if public.query or public.fragment or public.username is not None or public.password is not None:
            raise InputError("must be the address browsers open, scheme://host[:port][/path], with no user, query "
                             "or fragment", field="--public-url")
    elif not is_loopback(args.host):
        raise InputError(f"serving on {args.host} needs --public-url: the address browsers open (http://NAME:PORT), "
                         f"which every request's Host and Origin are checked against", field="--public-url")
    os.environ[SERVED_ENV] = "1"  # every tab's process inherits it (config.served_process)
    if args.allow_dangerous:
        os.environ.pop(SAFE_ENV, None)
    else:
        os.environ[SAFE_ENV] = "1"  # read by engine/config.served_config in every tab's process
    if args.world:
        from .class_serve import serve_world

        if args.allow_dangerous:
            raise InputError("a served world keeps the dangerous capabilities off (its agents run in this "
                             "process, for whoever holds a join URL)", field="--allow-dangerous")
        if not is_loopback(args.host):
            err.print(Text(f"warning: serving a class on {args.host}:{args.port}: every machine that can reach it "
                           f"and has the teacher's URL runs the class; a join URL drives its agent.",
                           style="bold yellow"))
        return serve_world(args, public, err)
    dangerous = ", ".join(DANGEROUS_CAPABILITIES)
    if not is_loopback(args.host):
        err.print(Text(f"warning: serving on {args.host}:{args.port}: every machine that can reach it and has the "
                       f"printed URL (its token) gets a workbench (one akh-tui process per tab, on this machine, "
                       f"recording into the data dir).", style="bold yellow"))
    if args.allow_dangerous:
        err.print(Text(f"warning: --allow-dangerous: scenarios may turn on {dangerous} in served sessions: the browser "
                       f"user can read and write files, fetch URLs and run allow-listed commands as you.",
                       style="bold yellow"))
    else:
        err.print(Text(f"served sessions keep {dangerous} off, whatever the scenario says (--allow-dangerous to allow)",
                       style="dim"))
    sc = load_scenario(args.scenario or "zoo")  # a bad scenario is refused here, not in every tab
    for need in trust.scenario_needs(sc.path):  # SERVED_ENV is set above: no tab imports them (trust.py)
        err.print(Text(f"warning: served sessions never import a scenario's own Python plugins: {need.folder} "
                       f"({', '.join(need.refs)}) is left out of every tab", style="yellow"))
    admission = Admission.for_address(args.host, args.port, public, args.max_tabs or DEFAULT_MAX_TABS)
    server = GuardedServer(serve_command(args), admission, host=args.host, port=args.port, title="akh-tui",
                           public_url=args.public_url)
    try:
        server.serve()
    except OSError as exc:
        raise InputError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", field="--port") from None
    return 0


def dispatch(args, out: Console, err: Console) -> int:
    return {"check": cmd_check, "serve": cmd_serve}[args.command](args, out, err)
