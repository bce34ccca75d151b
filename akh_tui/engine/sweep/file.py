"""Sweep files (TOML): many headless runs over scenarios, seeds and psyche/engine settings.

A sweep file names the scenario(s), the seeds, max_cycles and the axes to vary; the runs are
the grid of every axis value (or `samples` random points drawn with `sample_seed`) crossed
with every scenario and seed. Each run is a `RunTask`: plain, picklable data with a run id
derived from its settings only, so the same run has the same id on every machine and in
every re-run of the sweep. `run_task` is the one place a sweep builds and drives a run.

    name = "explorer against sage"
    scenarios = ["zoo"]                 # bundled names, or paths relative to this file
    seeds = { start = 0, stop = 20 }    # or a list: [1, 2, 3]
    max_cycles = 30
    # samples = 50                      # N random points instead of the grid ...
    # sample_seed = 1                   # ... drawn with this seed

    [axes]
    archetypes.explorer = [0.5, 0.7, 0.9]   # or { min = 0.1, max = 0.9 } (random samples only)
    archetypes.sage = [0.3, 0.7]
    psyche = ["calm.toml", "bold.toml"]     # whole psyche files (archetype axes apply on top)
    shadow.destructive_action = [true, false]   # a shadow pattern on or off
    config.stall_threshold = [3, 5]         # any scalar [config] key
    decider = ["utility", "scripted"]

No dask here: this module is imported by workers and by the client alike.
"""

from __future__ import annotations

import atexit
import copy
import hashlib
import itertools
import json
import math
import os
import random
import shutil
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import AgentConfig
from ..errors import InputError, parse_toml, read_user_file
from ..psyche.model import Psyche
from ..psyche.parts import ARCHETYPES
from ..paths import bundled_data_dir
from ..runs.scenario import resolve
from ..tomlpos import TomlLocator
from ..tools.specs import TOOL_NAMES

TOP_KEYS = ("name", "description", "scenarios", "scenario", "seeds", "max_cycles", "samples", "sample_seed", "axes",
            "world", "rounds", "template")
WORLD_ONLY = ("rounds", "template")  # keys of a sweep over a world (engine/sweep/world.py)
AXIS_GROUPS = ("archetypes", "psyche", "shadow", "config", "decider")
DECIDERS = ("utility", "scripted")  # the llm decider needs a network and is not deterministic
MAX_RUNS = 1_000_000  # a typo like seeds = {stop = 1e9} is refused before anything is built
MAX_CYCLES = 100_000
# Capabilities that need a folder: such runs get a fresh, empty one each (deleted after).


@dataclass(frozen=True)
class RunTask:
    """One run: everything a worker on another machine needs (psyche files travel as text)."""

    run_id: str
    index: int  # position in the sweep's order (for stable listings)
    scenario: str  # as written in the sweep file (bundled name) or an absolute path
    seed: int
    max_cycles: int
    settings: tuple[tuple[str, object], ...]  # (axis, value) in the sweep's axis order
    psyche_text: str | None = None  # the psyche axis file's TOML, when that axis is set
    psyche_file: str | None = None
    world: bool = False  # `scenario` names a world file (a sweep over a world): max_cycles is its rounds
    template: str | None = None  # the agent an agents.count axis clones
    psyches: tuple[tuple[str, str], ...] = ()  # a world's agents.<id>.psyche values -> their TOML

    def setting(self, axis: str, default=None):
        return dict(self.settings).get(axis, default)


@dataclass
class Axis:
    name: str  # "archetypes.explorer", "psyche", "shadow.<pattern>", "config.<key>", "decider"
    values: list  # grid values (or random choices)
    span: tuple[float, float] | None = None  # {min, max}: uniform random floats
    line: int | None = None


@dataclass
class Sweep:
    name: str
    path: Path
    scenarios: list[str]
    seeds: list[int]
    max_cycles: int
    axes: list[Axis]
    samples: int | None = None
    sample_seed: int = 0
    description: str = ""
    text: str = ""
    psyche_texts: dict[str, str] = field(default_factory=dict)  # psyche axis value -> TOML
    # a scenario given by path -> its files as text, so that workers need no shared disk
    bundles: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = field(default_factory=dict)
    contents: dict[str, str] = field(default_factory=dict)  # scenario -> digest of its files' text
    world: bool = False  # scenarios[0] is a world (engine/sweep/world.py); max_cycles its rounds
    template: str | None = None

    @property
    def points(self) -> int:
        if self.samples is not None:
            return self.samples
        return math.prod(len(a.values) for a in self.axes) if self.axes else 1

    @property
    def run_count(self) -> int:
        return len(self.scenarios) * len(self.seeds) * self.points

    def settings(self) -> list[tuple[tuple[str, object], ...]]:
        """Every point of the axes, in a fixed order (grid: the last axis varies fastest)."""
        if self.samples is None:
            return [tuple(zip([a.name for a in self.axes], combo)) for combo in itertools.product(*(a.values for a in self.axes))]
        rng = random.Random(self.sample_seed)  # its own seed: the points never depend on the run seeds
        out: list[tuple[tuple[str, object], ...]] = []
        for _ in range(self.samples):
            point: list[tuple[str, object]] = []
            for a in self.axes:
                if a.span is not None:
                    point.append((a.name, round(rng.uniform(*a.span), 4)))
                else:
                    point.append((a.name, a.values[rng.randrange(len(a.values))]))
            out.append(tuple(point))
        return out

    def tasks(self) -> list[RunTask]:
        if self.world:
            return self._world_tasks()
        tasks: list[RunTask] = []
        for scenario in self.scenarios:
            for point in self.settings():
                psv = dict(point).get("psyche")
                ps = psv if isinstance(psv, str) else None
                ptext = self.psyche_texts.get(ps) if ps is not None else None
                # what the run reads: an edited scenario or psyche file makes new runs, never
                # rows mixed from before and after the edit
                content = _digest([self.contents.get(scenario, ""), ptext or ""])
                for seed in self.seeds:
                    tasks.append(RunTask(
                        run_id(scenario, seed, self.max_cycles, point, content), len(tasks), scenario, seed,
                        self.max_cycles, point, ptext, ps,
                    ))
        return tasks

    def _world_tasks(self) -> list[RunTask]:
        tasks: list[RunTask] = []
        world = self.scenarios[0]
        for point in self.settings():
            psyches = tuple((str(v), self.psyche_texts[str(v)]) for k, v in point if k.endswith(".psyche"))
            content = _digest([self.contents.get(world, ""), [list(p) for p in psyches], self.template or "", "world"])
            for seed in self.seeds:
                tasks.append(RunTask(run_id(world, seed, self.max_cycles, point, content), len(tasks), world, seed,
                                     self.max_cycles, point, world=True, template=self.template, psyches=psyches))
        return tasks

    def axis_names(self) -> list[str]:
        return [a.name for a in self.axes]


def scenario_label(scenario: str) -> str:
    """The scenario as a stable name: a bundled scenario by its name, another by its file name."""
    return Path(scenario).stem if scenario.endswith(".toml") else scenario


def run_id(scenario: str, seed: int, max_cycles: int, point, content: str = "") -> str:
    """A short stable id from the run's settings and the digest of the files it reads (sha256:
    no salted hash, the same on every machine)."""
    key = json.dumps({"scenario": scenario_label(scenario), "seed": seed, "max_cycles": max_cycles,
                      "settings": [[k, v] for k, v in point], "content": content},
                     sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def _digest(parts) -> str:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


# ---- parsing ------------------------------------------------------------------------------

def load_sweep(path: str | Path) -> Sweep:
    file = str(path)
    text = read_user_file(path, "sweep file")
    return parse_sweep(text, file)


def parse_sweep(text: str, file: str) -> Sweep:
    data = parse_toml(text, file)
    where = TomlLocator(text)
    base = Path(file).resolve().parent

    def err(msg: str, fld: str) -> InputError:
        return InputError(msg, file=file, line=where.line(fld), field=fld)

    def integer(v, fld: str, lo: int = 0, hi: int | None = None) -> int:
        if not isinstance(v, int) or isinstance(v, bool) or v < lo or (hi is not None and v > hi):
            span = f"≥ {lo}" if hi is None else f"in {lo}..{hi}"
            raise err(f"must be an integer {span}, got {v!r}", fld)
        return v

    for key in data:
        if key not in TOP_KEYS:
            raise err(f"unknown key '{key}' (known: {', '.join(TOP_KEYS)})", key)
    name = data.get("name", Path(file).stem)
    if not isinstance(name, str) or not name.strip():
        raise err("must be a non-empty string", "name")
    desc = data.get("description", "")
    if not isinstance(desc, str):
        raise err("must be a string", "description")

    if "world" in data:
        return _parse_world_sweep(data, text, file, name.strip(), desc, where, err, integer)
    for key in WORLD_ONLY:
        if key in data:
            raise err(f"'{key}' belongs to a sweep over a world (world = \"...\"); a scenario sweep has max_cycles",
                      key)

    # scenarios
    if "scenario" in data and "scenarios" in data:
        raise err("give either 'scenario' or 'scenarios', not both", "scenario")
    if "scenario" in data:
        raw: Any
        raw, sfld = [data["scenario"]], "scenario"
        if not isinstance(data["scenario"], str):
            raise err("must be a scenario name or path", "scenario")
    else:
        raw, sfld = data.get("scenarios"), "scenarios"
        if raw is None:
            raise InputError("missing required key 'scenarios' (a list of scenario names or paths)", file=file, field="scenarios")
        if not isinstance(raw, list) or not raw or not all(isinstance(s, str) for s in raw):
            raise err("must be a non-empty list of scenario names or paths", "scenarios")
    scenarios: list[str] = []
    for i, s in enumerate(raw):
        fld = sfld if sfld == "scenario" else f"scenarios[{i}]"
        scenarios.append(_scenario(s, base, fld, err))
    if len(set(scenarios)) != len(scenarios):
        raise err("a scenario is listed twice", sfld)
    labels = [scenario_label(s) for s in scenarios]
    if len(set(labels)) != len(labels):
        raise err("two scenarios have the same file name (run ids would collide)", sfld)

    seeds = _seeds(data, file, err, integer)

    max_cycles = integer(data.get("max_cycles", 100), "max_cycles", 1, MAX_CYCLES)

    samples, sample_seed = _sampling(data, err, integer)

    # axes
    axes_raw = data.get("axes", {})
    if not isinstance(axes_raw, dict):
        raise err("must be a table of axes", "axes")
    axes: list[Axis] = []
    psyche_texts: dict[str, str] = {}
    psyches: list[Psyche] = []
    for group, body in axes_raw.items():
        gfld = f"axes.{group}"
        if group not in AXIS_GROUPS:
            raise err(f"unknown axis '{group}' (known: {', '.join(AXIS_GROUPS)})", gfld)
        if group in ("psyche", "decider"):
            vals = _values(body, gfld, err, samples is not None, numeric=False)
            for i, v in enumerate(vals.values):
                if not isinstance(v, str):
                    raise err("must be a string", f"{gfld}[{i}]")
                if group == "decider" and v not in DECIDERS:
                    raise err(f"unknown decider {v!r} (known: {', '.join(DECIDERS)})", f"{gfld}[{i}]")
                if group == "psyche":
                    p = base / v
                    try:
                        ptext = read_user_file(p, "psyche file")
                        psyches.append(Psyche.from_toml(ptext, file=str(p)))
                    except InputError as exc:
                        raise err(f"psyche file {v!r}: {exc}", f"{gfld}[{i}]") from None
                    psyche_texts[v] = ptext
            vals.name, vals.line = group, where.line(gfld)
            axes.append(vals)
            continue
        if not isinstance(body, dict) or not body:
            raise err(f"must be a table of {group} names = values", gfld)
        for key, vbody in body.items():
            fld = f"{gfld}.{key}"
            vals = _values(vbody, fld, err, samples is not None, numeric=group != "shadow")
            vals.name, vals.line = f"{group}.{key}", where.line(fld)
            if group == "archetypes":
                if key not in ARCHETYPES:
                    raise err(f"unknown archetype '{key}' (known: {', '.join(ARCHETYPES)})", fld)
                for i, v in enumerate(vals.values):
                    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                        raise err(f"must be a weight in [0, 1], got {v!r}", f"{fld}[{i}]")
                vals.values = [float(v) for v in vals.values]
                if vals.span is not None and not (0 <= vals.span[0] <= vals.span[1] <= 1):
                    raise err("min and max must be weights in [0, 1], min ≤ max", fld)
            elif group == "shadow":
                if vals.span is not None:
                    raise err("a shadow pattern is on or off: give [true, false]", fld)
                for i, v in enumerate(vals.values):
                    if not isinstance(v, bool):
                        raise err(f"must be true (pattern on) or false (off), got {v!r}", f"{fld}[{i}]")
            else:  # config
                default = getattr(AgentConfig(), key, None)
                if key not in {f for f in AgentConfig.__dataclass_fields__}:
                    raise err(f"unknown config key '{key}'", fld)
                if not isinstance(default, (int, float)):  # bool is an int
                    raise err("only scalar config values (numbers, true/false) can be an axis", fld)
                for i, v in enumerate(vals.values):
                    try:
                        AgentConfig.from_dict({key: v}, tool_names=TOOL_NAMES)
                    except InputError as exc:
                        raise err(exc.message, f"{fld}[{i}]") from None
                if vals.span is not None and isinstance(default, (bool, int)) and not isinstance(default, float):
                    raise err("a {min, max} span draws decimals: give a list of values for this integer key", fld)
            axes.append(vals)
    # a shadow pattern must exist in every psyche a run may start from
    shadow_axes = [a for a in axes if a.name.startswith("shadow.")]
    if shadow_axes:
        from ..runs.scenario import load_psyche, load_scenario

        bases = psyches if psyches else [load_psyche(load_scenario(s)) for s in scenarios]
        for a in shadow_axes:
            pname = a.name.split(".", 1)[1]
            for psy in bases:
                names = [x.name for x in psy.shadow.veto_patterns + psy.shadow.bias_patterns]
                if pname not in names:
                    raise err(f"no shadow pattern '{pname}' in the psyche {psy.source or '(scenario default)'} "
                              f"(it has: {', '.join(names) or 'none'})", f"axes.{a.name}")
    read = {s: scenario_bundle(s) for s in scenarios}
    bundles = {s: b for s, b in read.items() if Path(s).is_absolute()}  # bundled names: every install has them
    contents = {s: _digest(b[1]) for s, b in read.items()}
    sweep = Sweep(name.strip(), Path(file), scenarios, seeds, max_cycles, axes, samples, sample_seed, desc, text,
                  psyche_texts, bundles, contents)
    if sweep.run_count > MAX_RUNS:
        raise InputError(f"the sweep would make {sweep.run_count:,} runs (at most {MAX_RUNS:,})", file=file, field="axes")
    return sweep


def _sampling(data: dict, err: Any, integer: Any) -> tuple[int | None, int]:
    """`samples` (random points instead of the grid; None: the whole grid) and `sample_seed`,
    which only goes with it: scenario and world sweeps read them alike."""
    samples = None
    if "samples" in data:
        samples = integer(data["samples"], "samples", 1, MAX_RUNS)
    sample_seed = integer(data.get("sample_seed", 0), "sample_seed")
    if "sample_seed" in data and samples is None:
        raise err("sample_seed only applies with 'samples' (random points instead of the grid)", "sample_seed")
    return samples, sample_seed


def _seeds(data: dict, file: str, err, integer) -> list[int]:
    seeds_raw = data.get("seeds")
    if seeds_raw is None:
        raise InputError("missing required key 'seeds' (a list, or { start = 0, stop = 20 })", file=file, field="seeds")
    if isinstance(seeds_raw, dict):
        for k in seeds_raw:
            if k not in ("start", "stop"):
                raise err(f"unknown key '{k}' (known: start, stop)", f"seeds.{k}")
        if "stop" not in seeds_raw:
            raise err("a seed range needs 'stop' (exclusive), e.g. { start = 0, stop = 20 }", "seeds")
        start = integer(seeds_raw.get("start", 0), "seeds.start")
        stop = integer(seeds_raw["stop"], "seeds.stop")
        if stop <= start:
            raise err(f"stop ({stop}) must be greater than start ({start})", "seeds.stop")
        if stop - start > MAX_RUNS:
            raise err(f"at most {MAX_RUNS} seeds", "seeds.stop")
        return list(range(start, stop))
    if isinstance(seeds_raw, list) and seeds_raw:
        seeds = [integer(s, f"seeds[{i}]") for i, s in enumerate(seeds_raw)]
        if len(set(seeds)) != len(seeds):
            dup = next(s for s in seeds if seeds.count(s) > 1)
            raise err(f"seed {dup} is listed twice", f"seeds[{len(seeds) - 1 - seeds[::-1].index(dup)}]")
        return seeds
    raise err("must be a non-empty list of seeds or { start = 0, stop = 20 }", "seeds")


def _parse_world_sweep(data: dict, text: str, file: str, name: str, desc: str, where: TomlLocator, err,
                       integer) -> Sweep:
    """A sweep over a world (engine/sweep/world.py): `world` instead of scenarios, `rounds`
    instead of max_cycles, axes over agents, limits and world keys."""
    from ..world.file import load_world
    from . import world as world_sweep

    for key in ("scenario", "scenarios", "max_cycles"):
        if key in data:
            what = "rounds" if key == "max_cycles" else "world"
            raise err(f"a sweep over a world gives '{what}', not '{key}'", key)
    raw = data["world"]
    if not isinstance(raw, str) or not raw.strip():
        raise err("must be a bundled world name or a path to a world file", "world")
    base = Path(file).resolve().parent
    ref = str((base / raw).resolve()) if world_sweep._is_path(raw) else raw
    try:
        spec = load_world(ref)
    except InputError as exc:
        if exc.file is None or exc.line is None:  # the name itself is wrong: say where it was written
            raise err(f"{exc.message}: {raw!r}" + (f" (looked at {exc.file})" if exc.file else ""), "world") from None
        raise
    seeds = _seeds(data, file, err, integer)
    rounds = integer(data.get("rounds", spec.rounds), "rounds", 1, MAX_CYCLES)
    template = data.get("template")
    if template is not None and template not in [a.id for a in spec.agents]:
        raise err(f"no agent {template!r} in the world (agents: {', '.join(a.id for a in spec.agents)})", "template")
    samples, sample_seed = _sampling(data, err, integer)
    axes_raw = data.get("axes", {})
    if not isinstance(axes_raw, dict):
        raise err("must be a table of axes", "axes")

    def values(body, fld: str) -> list:
        if isinstance(body, dict):
            raise err("must be a list of values (a world axis has no { min, max } span)", fld)
        return _values(body, fld, err, samples is not None, numeric=False).values

    parsed, psyche_texts = world_sweep.parse_axes(axes_raw, spec, base, template, err, values)
    axes = [Axis(n, v, None, where.line(f)) for n, v, f in parsed]
    bundle = world_sweep.world_bundle(spec)
    sweep = Sweep(name, Path(file), [ref], seeds, rounds, axes, samples, sample_seed, desc, text, psyche_texts,
                  {ref: bundle} if Path(ref).is_absolute() else {}, {ref: world_sweep.digest(bundle)},
                  world=True, template=template)
    if sweep.run_count > MAX_RUNS:
        raise InputError(f"the sweep would make {sweep.run_count:,} runs (at most {MAX_RUNS:,})", file=file, field="axes")
    return sweep


def _scenario(s: str, base: Path, fld: str, err) -> str:
    """A bundled name stays a name (workers find it in their own install); a path becomes absolute."""
    if not s.strip():
        raise err("empty scenario name", fld)
    looks_like_path = s.endswith(".toml") or "/" in s or "\\" in s
    try:
        if looks_like_path:
            p = (base / s).resolve()
            if not p.is_file():
                raise err(f"scenario file not found: {s!r} (looked at {p})", fld)
            return str(p)
        resolve(s)
    except InputError as exc:
        if exc.file is not None and exc.line is not None:
            raise
        raise err(exc.message, fld) from None
    except (OSError, ValueError):
        raise err(f"not a usable path: {s!r}", fld) from None
    return s


def scenario_bundle(path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A scenario file and the files it names: (their common folder, ((path relative to it,
    text), ...)), the scenario file first. Files it names by absolute path are read there."""
    from ..runs.scenario import load_scenario

    sc = load_scenario(path)
    files = list(dict.fromkeys(f.resolve() for f in [Path(sc.path), *sc.kg, *sc.rules, *([sc.psyche_file] if sc.psyche_file else [])]))
    root = Path(os.path.commonpath([str(f.parent) for f in files]))
    return str(root), tuple((f.relative_to(root).as_posix(), read_user_file(f, "scenario file")) for f in files)


_UNPACKED: dict[str, Path] = {}  # bundle digest -> folder, once per worker process


def unpack(bundle: tuple[str, tuple[tuple[str, str], ...]]) -> tuple[Path, Path]:
    """The bundle's files written to a private folder (kept for the process's life): (the
    folder, its scenario file)."""
    root, files = bundle
    digest = hashlib.sha256(json.dumps(files).encode()).hexdigest()
    folder = _UNPACKED.get(digest)
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="akh-sweep-scenario-"))
        atexit.register(shutil.rmtree, folder, True)
        for rel, text in files:
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        _UNPACKED[digest] = folder
    return folder, folder / files[0][0]


def _values(body, fld: str, err, random_mode: bool, numeric: bool) -> Axis:
    if isinstance(body, dict):
        if not numeric:
            raise err("must be a list of values", fld)
        for k in body:
            if k not in ("min", "max"):
                raise err(f"unknown key '{k}' (known: min, max)", f"{fld}.{k}")
        if not random_mode:
            raise err("a { min, max } span needs random points: set 'samples' (or give a list of values for the grid)", fld)
        lo, hi = body.get("min"), body.get("max")
        for k, v in (("min", lo), ("max", hi)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise err(f"must be a number, got {v!r}", f"{fld}.{k}")
        assert isinstance(lo, (int, float)) and isinstance(hi, (int, float))  # checked just above
        if lo > hi:
            raise err(f"min ({lo}) is above max ({hi})", fld)
        return Axis("", [float(lo), float(hi)], (float(lo), float(hi)))
    if not isinstance(body, list) or not body:
        raise err("must be a non-empty list of values", fld)
    keys = [json.dumps(v) for v in body]
    if len(set(keys)) != len(keys):
        dup = next(i for i, k in enumerate(keys) if keys.index(k) != i)
        raise err(f"value {body[dup]!r} is listed twice", f"{fld}[{dup}]")
    return Axis("", list(body))


# ---- one run ------------------------------------------------------------------------------

def build_run(task: RunTask, data_dir: Path, trace, bundles: dict | None = None):
    """The run of one task (scenario, seed and every axis value applied), opened through the
    door in `data_dir` (its store in memory, its workspace there) and tracing to `trace`;
    `bundles` (Sweep.bundles) carries the files of scenarios given by path."""
    from ..paths import Locations
    from ..runs.run import Run
    from ..runs.scenario import load_psyche, load_scenario

    bundle = (bundles or {}).get(task.scenario)
    scenario = load_scenario(str(unpack(bundle)[1]) if bundle is not None else task.scenario)
    psyche = Psyche.from_toml(task.psyche_text, file=task.psyche_file) if task.psyche_text is not None else load_psyche(scenario)
    config = copy.deepcopy(scenario.config)
    decider = "utility"
    for axis, value in task.settings:
        group, _, key = axis.partition(".")
        if group == "archetypes":
            psyche.archetypes[key] = float(value)  # type: ignore[arg-type]  # validated as a number at load
        elif group == "shadow" and not value:
            psyche.shadow.veto_patterns = [p for p in psyche.shadow.veto_patterns if p.name != key]
            psyche.shadow.bias_patterns = [p for p in psyche.shadow.bias_patterns if p.name != key]
        elif group == "config":
            setattr(config, key, getattr(AgentConfig.from_dict({key: value}, tool_names=TOOL_NAMES), key))
        elif group == "decider":
            decider = str(value)
    scenario.config = config
    return Run.start(Locations(data_dir, data_dir / "config.toml"), scenario, task.seed, decider=decider, trace=trace,
                     store=":memory:", psyche=psyche)


def run_task(task: RunTask, bundles: dict | None = None) -> dict:
    """Run one task headless: {"row": outcomes, "trace": the JSONL trace, zlib-compressed}.

    Never raises for a run's own failure: an exception is the row's `error` (status failed),
    with whatever trace was written up to it. Everything but wall_time is deterministic."""
    import io

    t0 = time.perf_counter()
    buf = io.StringIO()
    row = base_row(task)
    # a data dir fresh and empty for every run: runs cannot see each other's files
    tmp = tempfile.TemporaryDirectory(prefix="akh-sweep-")
    try:
        if task.world:
            from .world import run_cell

            bundle = (bundles or {}).get(task.scenario)
            where = str(unpack(bundle)[1]) if bundle is not None else task.scenario
            def line(text: str) -> None:
                buf.write(text + "\n")

            row.update(run_cell(where, task.template, task.seed, task.max_cycles, task.settings, dict(task.psyches), line))
        else:
            run = build_run(task, Path(tmp.name), buf, bundles)
            records: list[dict] = []
            try:
                n, why = run.run_cycles(task.max_cycles, on_record=records.append)
            finally:
                run.close()
            row.update(outcomes(run.agent, records, n, why))
    except Exception as exc:  # the sweep goes on; the row says what went wrong
        error = f"{type(exc).__name__}: {exc}"
        bundle = (bundles or {}).get(task.scenario)
        if bundle is not None:  # name the user's files, not this worker's copy of them
            error = error.replace(str(unpack(bundle)[0]), bundle[0])
        row.update(status="failed", error=error)
    finally:
        tmp.cleanup()
    row["wall_time"] = time.perf_counter() - t0
    return {"row": row, "trace": zlib.compress(buf.getvalue().encode("utf-8"), 6)}


def base_row(task: RunTask) -> dict:
    return {"run_id": task.run_id, "idx": task.index, "scenario": scenario_label(task.scenario), "seed": task.seed,
            "settings": dict(task.settings), "status": "ok", "error": None}


def outcomes(agent, records: list[dict], cycles_run: int, stop: str) -> dict:
    """The row's outcomes, read from the finished agent and its cycle records."""
    completed_at: dict[str, int | None] = {}
    vetoes: dict[str, int] = {}
    biases: dict[str, int] = {}
    for rec in records:
        act = rec["act"]
        if act.get("veto"):
            vetoes[act["veto"]] = vetoes.get(act["veto"], 0) + 1
        for b in act.get("bias_patterns") or ():
            biases[b] = biases.get(b, 0) + 1
        for g in rec["goals"]:
            if g["status"] == "completed" and str(g["id"]) not in completed_at:
                completed_at[str(g["id"])] = rec["cycle"]
    user_goals = sorted((g for g in agent.goals.values() if g.origin == "user"), key=lambda g: g.id)
    goal_cycles = {str(g.id): completed_at.get(str(g.id)) if g.status == "completed" else None for g in user_goals}
    done = [c for c in goal_cycles.values() if c is not None]
    ps = agent.psyche
    return {
        "goals_total": len(user_goals),
        "goals_completed": sum(g.status == "completed" for g in user_goals),
        "goals_failed": sum(g.status == "failed" for g in user_goals),
        "goal_cycles": goal_cycles,
        "mean_cycles_to_complete": sum(done) / len(done) if done else None,
        "vetoes": sum(vetoes.values()),
        "biases": sum(biases.values()),
        "veto_counts": dict(sorted(vetoes.items())),
        "bias_counts": dict(sorted(biases.items())),
        "tool_counts": {t: s[0] for t, s in sorted(agent.tool_stats.items())},
        "archetypes": {a: ps.archetypes[a] for a in ARCHETYPES},
        "individuation": ps.self_integration.individuation_level,
        "cycles_run": cycles_run,
        "stop": stop,
    }


__all__ = ["Sweep", "RunTask", "Axis", "load_sweep", "parse_sweep", "run_task", "build_run", "run_id", "bundled_data_dir"]
