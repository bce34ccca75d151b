"""A Soar run recorded in the session store (store/soarstore.py): started by `agent run
--scenario water-jug`, continued by `agent resume`, forked by `agent fork --at N --select O12`.

The store keeps each decision's trace line, the seed and the scenario; the person's
selections are in the records (`"forced"`). So opening a stored Soar run is the scenario run
again with its seed, each recorded selection given again at its decision and each decision
checked against the stored one (as a trace replay, run.py): a `.soar` file changed since is
said, never silently continued."""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from ..paths import Locations
from ..store import writelock
from ..store.session import SessionStore
from ..store.soarstore import SoarStore, is_soar_meta
from .run import SoarRun
from .scenario import SoarScenario, find_soar, load_soar_scenario


class StoredSoarRun:
    """A SoarRun whose decisions go to a branch of the session store as they are made."""

    def __init__(self, store: SessionStore, branch: int, run: SoarRun) -> None:
        self.store = store
        self.soar = SoarStore(store)
        self.branch = branch
        self.run = run
        info = store.branch_info(branch)
        self.run_id: int = info["run"]
        # one writer a run, as for an OODA run (writelock.py): the workbench and `agent resume`
        # on one Soar run at once would interleave its decisions; StoreBusy names the holder
        self._lock = writelock.acquire(store.path, self.run_id) if store.path is not None else None
        self.branch_name: str = info["name"]
        self._fork_at: int | None = None  # rewound before the branch's last decision: the next one forks
        run.on_line = self._put

    def _put(self, decision: int, line: str, phases: int, force_at: int | None) -> None:
        if self._fork_at is not None:  # what was recorded after the rewind point stays on its branch
            at, self._fork_at = self._fork_at, None
            rec = self.run.records[-1]
            edits = [{"decision": at + 1, "select": rec["forced"]}] if rec.get("forced") else []
            self.branch_name = self._free_name(f"rewound-{at}")
            self.branch = self.soar.fork(self.branch, at, self.branch_name, edits)
        self.soar.put(self.branch, decision, line, phases, force_at)

    def _free_name(self, base: str) -> str:
        taken = {b["name"] for b in self.store.branches(self.run_id)}
        n, name = 1, base
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        return name

    def rewind(self, decision: int) -> None:
        """The run back to the end of `decision` (SoarRun.rewind); the branch keeps what it
        recorded after it, and the next decision recorded starts a branch of its own there
        (`rewound-N`), as a fork does: nothing recorded is lost."""
        self.run.rewind(decision)
        if decision < self.soar.last_decision(self.branch):
            self._fork_at = decision

    def close(self) -> None:
        try:
            self.run.close()
        finally:
            writelock.release(self._lock)
            self.store.close()

    # ---- opening ---------------------------------------------------------------------------
    @classmethod
    def start(cls, locations: Locations, scenario: SoarScenario, seed: int | None = None,
              trace: IO[str] | None = None) -> "StoredSoarRun":
        """A new Soar run in the data dir's store (earlier runs stay), its current run."""
        run = SoarRun(scenario, seed, trace)
        try:
            locations.ensure_data_dir()
            st = SessionStore(locations.session_db)
        except BaseException:
            run.close()
            raise
        try:
            meta = {"scenario": str(scenario.path), "name": scenario.name, "seed": run.seed,
                    "header": run.header_line()}
            branch = SoarStore(st).start(meta)
            return cls(st, branch, run)
        except BaseException:
            st.close()
            run.close()
            raise

    @classmethod
    def resume(cls, locations: Locations, branch: str | None = None, trace: IO[str] | None = None,
               upto: int | None = None) -> "StoredSoarRun":
        """The store's current Soar run (its current branch, or `branch`) replayed to where it
        was left (or to decision `upto`, a fork's point), ready to go on."""
        if not locations.has_store():
            raise InputError(f"no session to resume in {locations.data_dir} (start one with `akh-tui agent run`)",
                             field="--data-dir")
        st = SessionStore(locations.session_db)
        try:
            meta = st.meta()
            if not is_soar_meta(meta):
                raise InputError("the current run is not a Soar run", file=st.where)
            assert meta is not None
            bid = st.find_branch(meta["id"], branch) if branch is not None else st.current()
            if branch is not None:
                st.use(bid)
            rows = list(SoarStore(st).rows(bid))
            if upto is not None:
                if not 0 <= upto <= len(rows):
                    raise InputError(f"no decision {upto} to fork after (recorded: 0..{len(rows)})", field="--at")
                rows = rows[:upto]
            # refused before anything is replayed when another process writes this run
            writelock.release(writelock.acquire(st.path, meta["id"]) if st.path is not None else None)
            run = SoarRun(stored_scenario(meta, st.where), meta["seed"], trace)
        except BaseException:
            st.close()
            raise
        try:
            if trace is None:
                restore(run, rows, st.where)
            else:  # the branch's whole trace is written: every decision recorded again
                replay(run, [json.loads(line) for line, _p, _f in rows], st.where)
            return cls(st, bid, run)
        except BaseException:
            run.close()
            st.close()
            raise

    def fork(self, at: int, name: str, operator: str) -> dict[str, Any]:
        """A new branch after decision `at` (this run was resumed up to it) where `operator` is
        selected at decision at+1 instead of Soar's own pick; that decision is run and recorded,
        and the branch is the current one. An operator not proposed there is refused before
        anything is written."""
        if self.run.decision != at:
            raise InputError(f"the run is at decision {self.run.decision}, not {at}", field="--at")
        try:
            self.run.force(operator)
        except InputError as exc:
            raise InputError(f"decision {at + 1}: {exc.message}", field="--select") from None
        parent = self.branch
        self.branch = self.soar.fork(parent, at, name, [{"decision": at + 1, "select": operator}])
        self.branch_name = name
        rec = self.run.step()
        return {"type": "fork", "architecture": "soar", "run": self.run_id, "parent": self.store.branch_info(parent)["name"],
                "branch": name, "at": at, "select": operator, "record": rec}


def stored_scenario(meta: dict[str, Any], where: str) -> SoarScenario:
    """The Soar scenario a stored run was made from: its file, else the bundled one of its name."""
    path = meta.get("scenario")
    if isinstance(path, str) and Path(path).is_file():
        return load_soar_scenario(Path(path))
    sc = find_soar(str(meta.get("name", "")))
    if sc is None:
        raise InputError(f"the run's Soar scenario {meta.get('name')!r} is not found (was {path})", file=where,
                         field="scenario")
    return sc


def restore(run: SoarRun, rows: list[tuple[str, int, int | None]], where: str) -> None:
    """The stored decisions restored in Soar's own loop up to the one before the last (the
    adapter's rewind: init-soar, the seed, each selection at its phase), then the last one run
    and checked against its record: a `.soar` file changed since shows as a difference there
    (the operators proposed and their ids follow from all that came before)."""
    if len(rows) < 2:
        replay(run, [json.loads(line) for line, _p, _f in rows], where)
        return
    records = [json.loads(line) for line, _p, _f in rows]
    forces = [(f, r["forced"]) for (_l, _p, f), r in zip(rows[:-1], records) if f is not None and r.get("forced")]
    run.restore_to(records[:-1], [p for _l, p, _f in rows[:-1]], forces)
    run.expected = records
    last = records[-1]
    run.selects = {last["decision"]: last["forced"]} if isinstance(last.get("forced"), str) else {}
    on_line, run.on_line = run.on_line, None
    try:
        rec = run.step()
    finally:
        run.on_line = on_line
    if run.divergence is not None or rec is None:
        why = run.divergence or f"the agent halted after {len(records) - 1} of {len(records)} decisions"
        raise InputError(f"the stored Soar run does not replay as recorded: {why} (its .soar file changed since?)",
                         file=where, field="decisions")
    run.expected = None


def replay(run: SoarRun, records: list[dict[str, Any]], where: str) -> None:
    """Run `records`' decisions again (their selections given again), each checked: one that
    differs is an error naming it (the `.soar` file changed since, say)."""
    run.selects = {r["decision"]: r["forced"] for r in records if isinstance(r.get("forced"), str)}
    run.expected = records
    on_line, run.on_line = run.on_line, None
    try:
        n, _why = run.run(len(records))
    finally:
        run.on_line = on_line
    if run.divergence is not None or n < len(records):
        why = run.divergence or f"the agent halted after {n} of {len(records)} decisions"
        raise InputError(f"the stored Soar run does not replay as recorded: {why} (its .soar file changed since?)",
                         file=where, field="decisions")
    run.expected = None


def current_architecture(locations: Locations) -> str | None:
    """The architecture of the data dir's current run ("soar", "ooda"), None when there is
    none or the store cannot be read (the OODA door then says why)."""
    if not locations.has_store():
        return None
    try:
        st = SessionStore(locations.session_db, readonly=True)
    except (InputError, OSError):
        return None
    try:
        meta = st.meta()
    except InputError:
        return None
    finally:
        st.close()
    if meta is None:
        return None
    return "soar" if is_soar_meta(meta) else "ooda"
