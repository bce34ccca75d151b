"""The door to a data dir's list of runs, for commands that do not drive one (`akh-tui
sessions`: list, show, export (JSONL or OpenTelemetry), import, search, compare, delete, check,
pin, report). It opens the session store read-only unless it must write, and never makes an
agent: a run is driven only through `run.py`."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any, Iterator

from . import history, pin
from ..export import otel, report, soar_report
from ..store import writelock
from ..errors import InputError
from ..paths import Locations, shown_scenario
from .search import parse_search
from ..store.session import SessionStore
from ..store.soarstore import SoarStore, is_soar_meta
from ..store.worldstore import WorldStore
from ..store.trace import TraceWriter, read_trace


class Sessions:
    """The runs kept in a data dir's session store, for commands that do not drive a run."""

    def __init__(self, locations: Locations, write: bool = False) -> None:
        """Read-only unless `write` (import, delete): listing, showing and exporting never
        write a byte, so they work on a read-only file system and on a damaged store."""
        db = locations.session_db
        if not db.is_file():
            raise InputError(f"no session store in {locations.data_dir} (runs are stored by `akh-tui agent run` "
                             f"and the workbench)", field="--data-dir")
        self.locations = locations
        self.store = SessionStore(db, readonly=not write)
        self.soar = SoarStore(self.store)  # a Soar run's decisions (issue 30)

    def close(self) -> None:
        self.store.close()

    @property
    def where(self) -> str:
        return self.store.where

    def _goals(self, branch: dict) -> list[dict]:
        """A branch's goals at its newest cycle, or as the run started (no cycle yet)."""
        st = self.store
        rec = st.record(branch["id"], branch["last_cycle"]) if branch["last_cycle"] else None
        if rec is not None:
            return rec["goals"]
        head = st.head_state(branch["id"])
        if head is None:
            return []
        return [{"id": g["id"], "description": g["description"], "status": g["status"], "priority": g["priority"],
                 "parent": g.get("parent")} for g in head.get("goals", [])]

    def _soar_branches(self, branches: list[dict]) -> list[dict]:
        """A Soar run's branches with their decisions counted as its cycles (it has no goals)."""
        out = []
        for b in branches:
            n = self.soar.last_decision(b["id"])
            out.append(b | {"last_cycle": n, "head_cycle": n, "replay_only": False, "goals": []})
        return out

    def _ooda(self, run: int, what: str) -> dict:
        """The run's meta, refused for a Soar run where `what` reads OODA cycles only."""
        meta = self.store.run_meta(run)
        if is_soar_meta(meta):
            raise InputError(f"run {run} is a Soar run: {what} reads an OODA run's cycles (a Soar run has "
                             f"`sessions show`, `export`, `compare`)", field="run")
        return meta

    def is_soar(self, run: int) -> bool:
        return is_soar_meta(self.store.run_meta(run))

    def any_soar(self, *refs: str) -> bool:
        """One of the RUN[:BRANCH] refs is a Soar run's (compared by move, not by cycle)."""
        return any(self.is_soar(int(self.branch_ref(r)[1].split(":")[0])) for r in refs)

    def runs(self) -> list[dict]:
        out = []
        for r in self.store.runs():
            if is_soar_meta(r):
                out.append(r | {"branches": self._soar_branches(r["branches"]), "goals_done": 0, "goals_top": 0})
                continue
            main = r["branches"][0] if r["branches"] else None
            goals = self._goals(main) if main is not None else []
            top = [g for g in goals if g["parent"] is None]
            out.append(r | {"goals_done": sum(g["status"] == "completed" for g in top), "goals_top": len(top)})
        return out

    def show(self, run: int) -> dict:
        meta = self.store.run_meta(run)
        if is_soar_meta(meta):
            return {"run": meta, "branches": self._soar_branches(self.store.branches(run))}
        return {"run": meta, "branches": [b | {"goals": self._goals(b)} for b in self.store.branches(run)]}

    def export(self, run: int, branch: str, target: str | Path | IO[str]) -> int:
        """Write a branch as a SPEC §11 trace; returns the number of cycles written."""
        st = self.store
        meta = st.run_meta(run)
        bid = st.find_branch(run, branch)
        if is_soar_meta(meta):
            return self._export_soar(meta, bid, target)
        writer = TraceWriter(target)
        n = 0
        try:
            writer.header(meta.get("name") or "", meta.get("seed") or 0, meta.get("config") or {}, meta.get("psyche") or {},
                          run=run, branch=branch)
            for line in st.trace_lines(bid):
                writer.write_line(line)
                n += line.startswith('{"type":"cycle"')
        finally:
            writer.close()
        return n

    def _export_soar(self, meta: dict, branch: int, target: str | Path | IO[str]) -> int:
        """A Soar run's branch as the trace `agent run --trace` wrote, byte for byte."""
        fh: IO[str]
        if isinstance(target, (str, Path)):
            try:
                fh = open(target, "w", encoding="utf-8")
            except OSError as exc:
                raise InputError(f"cannot write the trace: {exc.strerror}", file=str(target), field="--output") from None
        else:
            fh = target
        n = 0
        try:
            fh.write(meta["header"] + "\n")
            for line in self.soar.lines(branch):
                fh.write(line + "\n")
                n += 1
        finally:
            if fh is not target:
                fh.close()
        return n

    def soar_pin(self, run: int, branch: str, decisions: list[int]) -> tuple[str, int]:
        """A Soar run's pin: its trace up to the last of `decisions` (`akh-tui check` reruns
        each decision up to it and compares); the text and the decisions it holds."""
        meta = self.store.run_meta(run)
        lines = list(self.soar.lines(self.store.find_branch(run, branch)))
        bad = [d for d in decisions if not 1 <= d <= len(lines)]
        if bad:
            raise InputError(f"decision {bad[0]} is not recorded (run {run} branch {branch} has decisions "
                             f"1..{len(lines)})", field="--cycle")
        upto = max(decisions)
        return "".join(x + "\n" for x in [meta["header"], *lines[:upto]]), upto

    def soar_records(self, run: int, branch: str) -> list[dict]:
        """A Soar run's branch's decision records."""
        return self.soar.records(self.store.find_branch(run, branch))

    def import_trace(self, file: str | Path) -> dict:
        trace = read_trace(file)  # validated line by line before anything is written
        if not trace.cycles:
            raise InputError("the trace has no cycle to import", file=str(file))
        run = self.store.import_trace(trace, str(Path(file).name))
        return {"run": run, "cycles": len(trace.cycles), "events": len(trace.events)}

    def search(self, run: int, branch: str, query: str) -> list[dict]:
        try:
            filters = parse_search(query)
        except ValueError as exc:
            raise InputError(str(exc), field="query") from None
        self._ooda(run, "search")
        return self.store.search(self.store.find_branch(run, branch), **filters)

    def branch_ref(self, ref: str) -> tuple[int, str]:
        run, _, name = ref.partition(":")
        try:
            run_id = int(run)
        except ValueError:
            raise InputError(f"expected RUN or RUN:BRANCH, e.g. 1:main, got {ref!r}", field="compare") from None
        self.store.run_meta(run_id)
        name = name or "main"
        return self.store.find_branch(run_id, name), f"{run_id}:{name}"

    def compare(self, a: str, b: str) -> dict:
        (ia, name_a), (ib, name_b) = self.branch_ref(a), self.branch_ref(b)
        return history.compare_branches(self.store, ia, ib) | {"a_name": name_a, "b_name": name_b}

    def delete(self, run: int) -> dict:
        lock = writelock.acquire(self.store.path, run) if self.store.path is not None else None
        try:
            return self.store.delete_run(run)
        finally:
            writelock.release(lock)

    def check(self) -> dict:
        """The full integrity scan (SQLite's and every record's checksum). Its verdict is kept
        beside the store for writers (`agent resume` refuses a branch found damaged), cleared
        when the store is whole; `mark` says why it could not be kept, if so."""
        result = self.store.check()
        checked, soar_damaged = self.soar.check()  # a Soar run's decisions (store/soarstore.py)
        if checked:
            result["checked"] += checked
            for b, decisions in soar_damaged.items():
                info = self.store.branch_info(b)
                result["damaged"][f"run {info['run']}, branch {info['name']!r}: Soar decisions"] = decisions
                result["marks"].append({"branch": b, "what": "soar_decisions", "cycle": decisions[0]})
            result["ok"] = result["ok"] and not soar_damaged
        # the world tables' rows too (store/worldstore.py): reported, and refused by every
        # reader when it comes to one, but not marked for a single run's writers (a world's
        # branch ids are its own)
        worlds = WorldStore(self.store).check()
        result["checked"] += worlds["checked"]
        result["unchecked"] += worlds["unchecked"]
        result["damaged"] |= worlds["damaged"]
        result["ok"] = result["ok"] and not worlds["damaged"]
        return result | {"mark": self.store.record_check(result)}

    # ---- what is handed out: streamed, a record at a time ------------------------------------
    def shown_meta(self, run: int) -> dict:
        """The run's metadata with its scenario named as it may leave the machine (never an
        absolute path: paths.shown_scenario)."""
        meta = self.store.run_meta(run)
        return dict(meta, scenario=shown_scenario(meta.get("scenario"), self.locations.data_dir))

    def extent(self, run: int, branch: str) -> otel.Extent:
        """(first, last, number) of the branch's recorded cycles, from the index alone."""
        self._ooda(run, "this")
        return otel.Extent(*self.store.cycle_extent(self.store.find_branch(run, branch)))

    def items(self, run: int, branch: str) -> Iterator[dict]:
        """The branch's trace items (records and events, SPEC §11 order), one at a time."""
        self._ooda(run, "this")
        return self.store.trace_items(self.store.find_branch(run, branch))

    def spans(self, run: int, branch: str, start_ns: int = otel.DEFAULT_START_NS) -> Iterator[Any]:
        """The branch as OpenTelemetry spans, a cycle's at a time (otel.stream_spans)."""
        meta, extent = self.shown_meta(run), self.extent(run, branch)
        return otel.stream_spans(self.items(run, branch), meta, run, branch, extent, start_ns)

    def write_report(self, run: int, branch: str, out: IO[str], markdown: bool = False,
                     shots: dict[int, str] | None = None) -> int:
        """The branch's report (HTML, or Markdown) written to `out`; returns its cycles."""
        if self.is_soar(run):  # its decisions (export/soar_report.py); no workbench shots of it
            if shots:
                raise InputError("a Soar run's report has no workbench shots", field="--shot")
            return soar_report.write_soar_report(self.soar_records(run, branch), self.shown_meta(run), run, branch,
                                                 out, markdown=markdown)
        meta, extent = self.shown_meta(run), self.extent(run, branch)
        return report.write_report(self.items(run, branch), meta, run, branch, extent, out, markdown=markdown,
                                   shots=shots)

    def pin(self, run: int, branch: str, cycles: list[int], pin_path: Path) -> dict:
        """The pin of `cycles` of the branch, for `akh-tui check` (pin.make_pin)."""
        self._ooda(run, "a pin")
        return pin.make_pin(self.store, run, branch, cycles, pin_path)


