"""Sweeps over worlds (SPEC §13): a sweep file that names a `world` instead of scenarios; each
cell of the grid runs that world with the cell's settings, and its row says what became of
each agent (balances, mints, goals).

    name = "market: how many bold traders?"
    world = "../worlds/market.toml"   # a bundled world name, or a path from this file
    seeds = [0, 1, 2]                 # world seeds (as `world run --seed`)
    rounds = 30                       # default: the world file's [world].rounds
    template = "bold"                 # the agent agents.count clones (default: the first)

    [axes]
    agents.count = [1, 2, 3]          # the template as N agents bold-1, bold-2, ...
    agents.cautious.psyche = ["../worlds/market/cautious.toml", "default"]
    agents.cautious.decider = ["utility", "scripted"]
    limits.actions = [4, 8]           # any [world.limits] key
    world.mint_every = [5, 10]        # schedule, mint_every, starting_scrip, step_s

Cloning: `agents.count = N` replaces the template by N agents `<id>-1` … `<id>-N` (its
scenario, psyche, decider and workflow; seeds as the world file gives defaults: the world seed
plus the agent's index, or the template's own seed plus k - 1), and every artifact the
template owns by N artifacts `<artifact>-<k>` owned by `<id>-<k>`. Agent axes name the world
file's ids; they apply to the template before it is cloned.

No dask here: workers import this module to run a cell.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError, read_user_file
from ..paths import bundled_data_dir
from ..psyche.model import Psyche
from ..world.file import AGENT_ID, ARTIFACT_ID, RESOURCES, ArtifactSpec, Limits, WorldSpec, load_world, ms

GROUPS = ("agents", "limits", "world")
WORLD_AXES = ("schedule", "mint_every", "starting_scrip", "step_s")
LIMIT_AXES = ("window_s", *RESOURCES, "policy")
AGENT_AXES = ("psyche", "decider")
DECIDERS = ("utility", "scripted")  # the llm decider needs a network and is not deterministic
MAX_AGENTS = 1000  # agents.count: a typo like 1e6 is refused before a world is built

Err = Callable[[str, str], InputError]
Values = Callable[[Any, str], list[Any]]


def _is_path(name: str) -> bool:
    return name.endswith(".toml") or "/" in name or os.sep in name


def _int(v: Any, lo: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _num(v: Any, lo: float, hi: float) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and lo <= v <= hi


def parse_axes(raw: dict[str, Any], spec: WorldSpec, base: Path, template: str | None, err: Err,
               values: Values) -> tuple[list[tuple[str, list[Any], str]], dict[str, str]]:
    """The world axes of a sweep file's [axes]: ([(axis name, values, field)], psyche axis
    value -> that psyche file's TOML). Every value is checked against the world, so a sweep
    that loads makes only worlds that load."""
    ids = [a.id for a in spec.agents]
    out: list[tuple[str, list[Any], str]] = []
    psyche_texts: dict[str, str] = {}
    for group, body in raw.items():
        gfld = f"axes.{group}"
        if group not in GROUPS:
            raise err(f"unknown axis '{group}' in a world sweep (known: {', '.join(GROUPS)})", gfld)
        if not isinstance(body, dict) or not body:
            raise err(f"must be a table of {group} axes", gfld)
        for key, vbody in body.items():
            fld = f"{gfld}.{key}"
            if group == "agents" and key == "count":
                vals = values(vbody, fld)
                tid = template or ids[0]
                others = set(ids) - {tid}
                for i, n in enumerate(vals):
                    if not _int(n, 1) or n > MAX_AGENTS:
                        raise err(f"must be a number of agents, 1 to {MAX_AGENTS}, got {n!r}", f"{fld}[{i}]")
                    clash = next((f"{tid}-{k}" for k in range(1, n + 1) if f"{tid}-{k}" in others), None)
                    if clash is not None:
                        raise err(f"the clone {clash!r} would have the id of another agent of the world", f"{fld}[{i}]")
                    if not AGENT_ID.fullmatch(f"{tid}-{n}"):
                        raise err(f"the clone id {tid}-{n!r} is not a valid agent id ([a-z0-9_-]{{1,32}})", f"{fld}[{i}]")
                    for x in spec.artifacts:
                        if x.owner == tid and not ARTIFACT_ID.fullmatch(f"{x.id}-{n}"):
                            raise err(f"the cloned artifact id {x.id}-{n} is not valid ([a-z0-9_.-]{{1,64}})", f"{fld}[{i}]")
                        if x.owner == tid and any(y.id == f"{x.id}-{k}" for y in spec.artifacts for k in range(1, n + 1)):
                            raise err(f"a cloned artifact would have the id of another artifact ({x.id}-…)", f"{fld}[{i}]")
                out.append(("agents.count", vals, fld))
                continue
            if group == "agents":
                if key not in ids:
                    raise err(f"no agent {key!r} in the world (agents: {', '.join(ids)}; or agents.count)", fld)
                if not isinstance(vbody, dict) or not vbody:
                    raise err(f"must be a table: agents.{key}.psyche or agents.{key}.decider", fld)
                for akey, abody in vbody.items():
                    afld = f"{fld}.{akey}"
                    if akey not in AGENT_AXES:
                        raise err(f"unknown agent axis '{akey}' (known: {', '.join(AGENT_AXES)})", afld)
                    vals = values(abody, afld)
                    for i, v in enumerate(vals):
                        if not isinstance(v, str) or not v.strip():
                            raise err(f"must be a {akey} name, got {v!r}", f"{afld}[{i}]")
                        if akey == "decider" and v not in DECIDERS:
                            raise err(f"unknown decider {v!r} (known: {', '.join(DECIDERS)})", f"{afld}[{i}]")
                        if akey == "psyche":
                            psyche_texts[v] = _psyche_text(v, base, err, f"{afld}[{i}]")
                    out.append((f"agents.{key}.{akey}", vals, afld))
                continue
            known = WORLD_AXES if group == "world" else LIMIT_AXES
            if key not in known:
                raise err(f"unknown {group} axis '{key}' (known: {', '.join(known)})", fld)
            vals = values(vbody, fld)
            for i, v in enumerate(vals):
                why = _scalar_problem(group, key, v)
                if why is not None:
                    raise err(why, f"{fld}[{i}]")
            out.append((f"{group}.{key}", vals, fld))
    if template is not None and not any(name == "agents.count" for name, _, _ in out):
        raise err("'template' names the agent that an agents.count axis clones: add that axis, or drop template",
                  "template")
    return out, psyche_texts


def _scalar_problem(group: str, key: str, v: Any) -> str | None:
    if key == "schedule":
        return None if v in ("round-robin", "shuffle") else f"must be \"round-robin\" or \"shuffle\", got {v!r}"
    if key == "policy":
        return None if v in ("skip", "block") else f"must be \"skip\" or \"block\", got {v!r}"
    if key == "step_s":
        return None if _num(v, 0.001, 86_400) else f"must be a number of seconds, 0.001 to 86400, got {v!r}"
    if key == "window_s":
        return None if _num(v, 0.001, 10_000_000) else f"must be a number of seconds, 0.001 to 10000000, got {v!r}"
    return None if _int(v) else f"must be an integer >= 0, got {v!r}"


def _psyche_text(value: str, base: Path, err: Err, fld: str) -> str:
    p = base / value if _is_path(value) else bundled_data_dir() / "psyche" / f"{value}.toml"
    try:
        text = read_user_file(p, "psyche file")
        Psyche.from_toml(text, file=str(p))
    except InputError as exc:
        raise err(f"psyche {value!r}: {exc}", fld) from None
    return text


def world_bundle(spec: WorldSpec) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The world file and every file it names, as (their common folder, ((path relative to it,
    text), ...)), the world file first: what a worker on another machine needs to load it."""
    files = [spec.path.resolve()]
    for a in spec.agents:
        if _is_path(a.scenario_name):
            sc = a.scenario
            files += [Path(f).resolve() for f in [sc.path, *sc.kg, *sc.rules, *([sc.psyche_file] if sc.psyche_file else [])]]
        if a.psyche_name is not None and _is_path(a.psyche_name):
            files.append((spec.path.parent / a.psyche_name).resolve())
    files += [(spec.path.parent / x.triples_name).resolve() for x in spec.artifacts if x.triples_name]
    files = list(dict.fromkeys(files))
    root = Path(os.path.commonpath([str(f.parent) for f in files]))
    return str(root), tuple((f.relative_to(root).as_posix(), read_user_file(f, "world file")) for f in files)


def digest(bundle: tuple[str, tuple[tuple[str, str], ...]]) -> str:
    return hashlib.sha256(json.dumps(bundle[1], separators=(",", ":")).encode()).hexdigest()


def cell_spec(spec: WorldSpec, seed: int, settings: tuple[tuple[str, object], ...],
              psyches: dict[str, str], template: str | None = None) -> WorldSpec:
    """The world of one cell: the seed, then every axis value (agent axes on the template
    before agents.count clones it)."""
    spec = copy.copy(spec.with_seed(seed))
    spec.agents = list(spec.agents)
    limits = spec.limits
    count: int | None = None
    for axis, value in settings:
        group, _, key = axis.partition(".")
        if axis == "agents.count":
            count = int(value)  # type: ignore[call-overload]  # checked as an integer at load
        elif group == "agents":
            aid, _, akey = key.partition(".")
            i = next(i for i, a in enumerate(spec.agents) if a.id == aid)
            if akey == "psyche":
                name = str(value)
                spec.agents[i] = replace(spec.agents[i], psyche_name=name,
                                         psyche=Psyche.from_toml(psyches[name], file=name))
            else:
                spec.agents[i] = replace(spec.agents[i], decider=str(value), workflow=None)
        elif group == "world":
            if key == "step_s":
                spec.step_ms = ms(float(value))  # type: ignore[arg-type]
            else:
                setattr(spec, key, value)
        elif key == "window_s":
            limits = replace(limits, window_ms=ms(float(value)))  # type: ignore[arg-type]
        elif key == "policy":
            limits = replace(limits, policy=str(value))
        else:
            caps = dict(limits.caps) | {key: int(value)}  # type: ignore[call-overload]
            limits = replace(limits, caps=tuple((r, caps[r]) for r in RESOURCES if r in caps))
    spec.limits = limits
    if count is not None:
        spec = _clone(spec, count, template)
    return spec


def _clone(spec: WorldSpec, n: int, template: str | None) -> WorldSpec:
    tid = template or spec.agents[0].id
    i = next(i for i, a in enumerate(spec.agents) if a.id == tid)
    t = spec.agents[i]
    clones = [replace(t, id=f"{tid}-{k}", seed=t.seed + k - 1 if t.seed_given else 0,
                      psyche=t.psyche.copy() if t.psyche is not None else None) for k in range(1, n + 1)]
    agents = spec.agents[:i] + clones + spec.agents[i + 1:]
    # default seeds as the world file gives them: the world seed plus the agent's index
    spec.agents = [a if a.seed_given else replace(a, seed=spec.seed + j) for j, a in enumerate(agents)]
    arts: list[ArtifactSpec] = []
    for x in spec.artifacts:
        if x.owner == tid:
            arts += [replace(x, id=f"{x.id}-{k}", owner=f"{tid}-{k}") for k in range(1, n + 1)]
        else:
            arts.append(x)
    spec.artifacts = arts
    return spec


def run_cell(world: str, template: str | None, seed: int, rounds: int | None,
             settings: tuple[tuple[str, object], ...], psyches: dict[str, str],
             line: Callable[[str], None]) -> dict[str, Any]:
    """Run one cell's world headless, its trace lines to `line`; the row's outcomes."""
    from ..world.world import World

    spec = cell_spec(load_world(world), seed, settings, psyches, template)
    w = World(spec, lines=line)
    w.gated = set()  # a sweep asks nobody: an agent's `approve = true` is a session's gate, not the world's
    steps = refused = failed = 0

    def count(step: dict[str, Any]) -> None:
        nonlocal steps, refused, failed
        steps += 1
        refused += step["result"] == "refused"
        failed += step["result"] == "failed"

    ended = w.run(rounds, on_step=count)
    return outcomes(w, ended, steps, refused, failed)


def outcomes(world: Any, ended: str, steps: int, refused: int, failed: int) -> dict[str, Any]:
    """What a world's row holds: each account's balance, the mints, each agent's goals, and the
    totals a report summarises per axis value."""
    s = world.summary()
    agents = world.ids
    balances = {k: int(v) for k, v in s["balances"].items()}
    goals: dict[str, dict[str, int]] = {}
    for aid in agents:
        user = [g for g in world.agents[aid].goals.values() if g.origin == "user"]
        goals[aid] = {"total": len(user), "completed": sum(g.status == "completed" for g in user),
                      "failed": sum(g.status == "failed" for g in user)}
    won: dict[str, int] = {}
    for m in s["mints"]:
        if m["winner"] is not None:
            won[m["winner"]] = won.get(m["winner"], 0) + 1
    mine = [balances[a] for a in agents]
    return {
        "agents": len(agents),
        "balances": balances,
        "minted": int(s["minted"]),
        "mints_held": len(s["mints"]),
        "mints_won": sum(won.values()),
        "mint_winners": dict(sorted(won.items())),
        "goals": goals,
        "goals_total": sum(g["total"] for g in goals.values()),
        "goals_completed": sum(g["completed"] for g in goals.values()),
        "goals_failed": sum(g["failed"] for g in goals.values()),
        "max_balance": max(mine), "min_balance": min(mine),
        "artifacts": len(s["artifacts"]),
        "steps": steps, "refused": refused, "failed_steps": failed,
        "rounds_run": int(s["round"]),
        "stop": ended,
    }


__all__ = ["parse_axes", "world_bundle", "cell_spec", "run_cell", "outcomes", "digest"]
