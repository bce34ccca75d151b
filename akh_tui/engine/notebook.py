"""The Python API for notebooks: open, step and fork runs and worlds through their doors, and
read cycles and the ledger as rows (flat dicts, one per cycle or ledger entry: what
`pandas.DataFrame(rows)` or a csv writer takes as they are). docs/python-api.md shows it.

- `open_run(scenario, data_dir=None, seed=None)`: a new single run (`Run`), recorded in the
  data dir (a temporary one when None: a notebook's scratch run).
- `open_world(file, data_dir=None, seed=None)`: a new world run (`WorldRun`).
- `cycle_rows(records)`: §11 cycle records (a run's `records()`, a world's `records(agent)`,
  or a world's steps) as rows; `world_cycle_rows(world)` every agent's, in step order;
  `ledger_rows(world)`: every ledger entry of a world's branch, in order.

The objects returned are the doors themselves, so everything a front end can do (step, fork,
rewind, close) a notebook can; nothing here holds state of its own.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

from .paths import Locations
from .runs.run import Run
from .world.worldrun import WorldRun

ROW_KEYS = ("agent", "round", "clock", "cycle", "goal", "tool", "input", "progress", "success", "vetoed", "score",
            "state")


def _locations(data_dir: str | Path | None) -> Locations:
    if data_dir is None:
        folder = Path(tempfile.mkdtemp(prefix="akh-notebook-"))
        return Locations(folder / "data", folder / "config.toml")
    return Locations(Path(data_dir), Path(data_dir) / "config.toml")


def open_run(scenario: str = "zoo", data_dir: str | Path | None = None, seed: int | None = None) -> Run:
    """A new run of `scenario` (a bundled name or a path), recorded in `data_dir`."""
    return Run.start(_locations(data_dir), scenario, seed)


def open_world(file: str, data_dir: str | Path | None = None, seed: int | None = None) -> WorldRun:
    """A new world run of `file` (a bundled name or a path), recorded in `data_dir`."""
    return WorldRun.start(_locations(data_dir), file, seed)


def cycle_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """One cycle record as a flat row: who (agent, round, clock: None outside a world), which
    cycle and goal, the tool chosen and its input, the outcome and the winning score."""
    decide, act = record["decide"], record["act"]
    chosen = next((c for c in decide.get("candidates", []) if c.get("tool") == decide["tool"]), None)
    return {"agent": record.get("agent"), "round": record.get("round"), "clock": record.get("clock"),
            "cycle": record["cycle"], "goal": record["goal"]["id"], "tool": decide["tool"], "input": decide.get("input"),
            "progress": act.get("progress"), "success": act.get("success"), "vetoed": bool(act.get("vetoed")),
            "score": chosen.get("score") if chosen else None, "state": record.get("state")}


def cycle_rows(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [cycle_row(r) for r in records]


def world_cycle_rows(world: WorldRun) -> list[dict[str, Any]]:
    """Every agent's cycle records on the world's branch, in step order, as rows (with `step`)."""
    out = []
    for row in world.steps():
        for line in row.lines:
            if line.startswith('{"type":"cycle"'):
                out.append({"step": row.step, **cycle_row(json.loads(line))})
    return out


def ledger_rows(world: WorldRun) -> list[dict[str, Any]]:
    """Every ledger entry on the world's branch, in order: step, round, clock, agent (whose turn;
    None for the mint), from, to, amount, why."""
    out = []
    for row in world.steps():
        for line in row.lines:
            if line.startswith('{"type":"ledger"'):
                e = json.loads(line)
                out.append({"step": row.step, **{k: e[k] for k in ("round", "clock", "agent", "from", "to", "amount",
                                                                    "why")}})
    return out
