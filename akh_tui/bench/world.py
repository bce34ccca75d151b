"""Worlds' figures (issue 25): a recorded agent step against a single run's recorded cycle, the
per-step cost and memory as agents are added, and rewinding a long world.

Every agent works on the demo graph (the zoo scenario) with main.py's endless goal and stall
threshold, so none stops; the world records into a session store on disk and traces to
/dev/null, as `world run` does; the single run is main.py's demo agent through the door, the
same way. Times are CPU (process_time) per step, the two measured in alternating blocks in one
process so a busy machine slows both alike.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from ..engine.cycle.agent import Agent
from ..engine.paths import Locations, bundled_data_dir
from ..engine.runs.run import Run
from ..engine.store.session import SessionStore
from ..engine.store.trace import TraceWriter
from ..engine.world.worldrun import WorldRun


def world_file(folder: Path, agents: int, endless: str, rounds: int = 1_000_000) -> Path:
    """A world of `agents` OODA agents on the demo graph, each with the endless goal."""
    folder.mkdir(parents=True, exist_ok=True)
    zoo = bundled_data_dir() / "scenarios" / "zoo.toml"
    text = zoo.read_text(encoding="utf-8")
    text = text.replace('kg = ["../kg/', f'kg = ["{(zoo.parent.parent / "kg").as_posix()}/')
    text = text.replace('rules = ["../rules/', f'rules = ["{(zoo.parent.parent / "rules").as_posix()}/')
    text += f'\n[[goals]]\ndescription = "{endless}"\ncriteria = "plankton"\npriority = 100\n' \
            "\n[config]\nstall_threshold = 1000000000\n"
    (folder / "zoo-endless.toml").write_text(text, encoding="utf-8")
    w = f'[world]\nname = "bench"\nrounds = {rounds}\nmint_every = 10\nstarting_scrip = 100\n'
    for i in range(agents):
        w += f'[[agents]]\nid = "a{i}"\nscenario = "zoo-endless.toml"\n'
    p = folder / f"world-{agents}.toml"
    p.write_text(w, encoding="utf-8")
    return p


def _world(folder: Path, agents: int, endless: str) -> WorldRun:
    loc = Locations(folder / f"data-{agents}", folder / "config.toml")
    return WorldRun.start(loc, str(world_file(folder, agents, endless)), trace=os.devnull)


def _steps_ms(step: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.process_time()
        if step() is None:
            raise RuntimeError("the bench world ran out of steps")
        out.append((time.process_time() - t0) * 1000)
    return out


def world_figures(quick: bool, folder: Path, demo_agent: Callable[[], Agent], endless: str,
                  rss_mb: Callable[[], float], sizes: tuple[int, int, int, int, int] | None = None) -> dict[str, Any]:
    """main.py's demo agent (the single run), its endless goal and its RSS reader are passed
    in: main.py registers these figures, so this module does not import it. `sizes`: (the
    small world's agents, the big world's, the big world's steps, blocks, steps per block);
    by default the issue's 10 and 100 agents and 10,000 steps (2,000 when `quick`)."""
    small, big, n_long, blocks, per_block = sizes or ((10, 100, 2_000, 3, 100) if quick else (10, 100, 10_000, 5, 400))
    warm = min(50, per_block)
    # 1. ten agents against a single run, alternating blocks
    single = Run.over(demo_agent(), "bench", store=SessionStore(folder / "single.db"), trace=TraceWriter(os.devnull))
    ten = _world(folder, small, endless)
    _steps_ms(single.step, warm)
    _steps_ms(ten.step, warm)  # warm: the first steps of a run cost more (caches, first writes)
    single_ms: list[float] = []
    world_ms: list[float] = []
    block_ratios: list[float] = []  # each block's median world step / the single run's block beside it
    for _ in range(blocks):
        one, many = _steps_ms(single.step, per_block), _steps_ms(ten.step, per_block)
        single_ms += one
        world_ms += many
        block_ratios.append(statistics.median(many) / statistics.median(one))
    single.close()
    ten_median = statistics.median(world_ms)
    # 2. a hundred agents: per-step cost (in blocks alternating with the ten-agent world's, so
    # the two are compared side by side) and memory per agent
    gc.collect()
    before = rss_mb()
    hundred = _world(folder, big, endless)
    gc.collect()
    built = rss_mb()
    hundred_ms: list[float] = []
    ten_again: list[float] = []
    for _ in range(10):
        hundred_ms += _steps_ms(hundred.step, n_long // 10)
        ten_again += _steps_ms(ten.step, per_block // 2)
    ten.close()
    gc.collect()
    after = rss_mb()
    # 3. rewinds of the long world: to steps spread over it, and to its last step, forwards
    # then backwards (a rewind reuses nothing of the one before: the order should not matter).
    # A rewound world loads an agent when first touched (world/agents.py): the rewind, then
    # the same with every agent loaded (what a summary of the whole world reads). The garbage
    # of the rewind before is collected first, untimed: it is not this rewind's cost.
    last = hundred.last_step
    targets = [last * k // 8 for k in range(1, 9)]
    rewind_ms, loaded_ms = [], []
    for s in targets + targets[::-1]:
        gc.collect()
        t0 = time.process_time()
        w = hundred.world_at(s)
        t1 = time.process_time()
        w.agents.load_all()
        rewind_ms.append((t1 - t0) * 1000)
        loaded_ms.append((time.process_time() - t0) * 1000)
        del w
    hundred.close()
    return {
        "single_cycle_ms": statistics.median(single_ms), "world10_step_ms": ten_median,
        "ratio10": ten_median / statistics.median(single_ms),
        # every step's CPU, the saved states' included (a median leaves the steps that save out)
        "single_cycle_mean_ms": statistics.mean(single_ms), "world10_step_mean_ms": statistics.mean(world_ms),
        "ratio10_mean": statistics.mean(world_ms) / statistics.mean(single_ms),
        "world100_step_mean_ms": statistics.mean(hundred_ms), "world10_step_mean_ms_beside_100": statistics.mean(ten_again),
        "ratio10_blocks": [min(block_ratios), statistics.median(block_ratios), max(block_ratios)],
        "world100_step_ms": statistics.median(hundred_ms[-n_long // 2:]),
        "world100_first_half_ms": statistics.median(hundred_ms[: n_long // 2]),
        "world10_step_ms_beside_100": statistics.median(ten_again),
        "ratio100_10": statistics.median(hundred_ms) / statistics.median(ten_again),
        "mb_per_agent_built": (built - before) / big, "mb_per_agent_after": (after - before) / big,
        "world100_steps": last, "rewind_ms_min": min(rewind_ms), "rewind_ms_median": statistics.median(rewind_ms),
        "rewind_ms_max": max(rewind_ms), "world_agents": [small, big],
        "rewind_loaded_ms_min": min(loaded_ms), "rewind_loaded_ms_median": statistics.median(loaded_ms),
        "rewind_loaded_ms_max": max(loaded_ms),
    }


def world_rows(f: dict[str, Any]) -> list[tuple[str, str, str]]:
    small, big = f["world_agents"]
    return [
        (f"world, {small} agents on the demo graph: recorded agent step / a single run's recorded cycle (median CPU; "
         "min / median / max of the blocks' ratios)",
         f"{f['world10_step_ms']:.3f} / {f['single_cycle_ms']:.3f} ms = {f['ratio10']:.2f}× "
         f"({' / '.join(f'{x:.2f}' for x in f['ratio10_blocks'])})", "≤ 1.2×"),
        (f"world, {small} agents: the same, mean CPU (the steps and cycles that save a state included)",
         f"{f['world10_step_mean_ms']:.3f} / {f['single_cycle_mean_ms']:.3f} ms = {f['ratio10_mean']:.2f}×", "≤ 1.2×"),
        (f"world, {big} agents: recorded step, median (first / second half; / the 10-agent step beside it)",
         f"{f['world100_first_half_ms']:.3f} / {f['world100_step_ms']:.3f} ms "
         f"(/ {f['world10_step_ms_beside_100']:.3f} ms = {f['ratio100_10']:.2f}×)", "independent of the agent count"),
        (f"world, {big} agents: recorded step, mean (saved states included; / the 10-agent step's mean beside it)",
         f"{f['world100_step_mean_ms']:.3f} ms (/ {f['world10_step_mean_ms_beside_100']:.3f} ms = "
         f"{f['world100_step_mean_ms'] / f['world10_step_mean_ms_beside_100']:.2f}×)", "independent of the agent count"),
        (f"world, {big} agents: memory per agent (built / after the steps)",
         f"{f['mb_per_agent_built']:.2f} / {f['mb_per_agent_after']:.2f} MB", "≤ 30 MB"),
        (f"world, {big} agents: rewind of a {f['world100_steps']:,}-step world, min / median / max (its agents "
         "loaded when first touched)",
         f"{f['rewind_ms_min']:.0f} / {f['rewind_ms_median']:.0f} / {f['rewind_ms_max']:.0f} ms", "≤ 100 ms"),
        (f"world, {big} agents: the same rewind with every agent loaded, min / median / max",
         f"{f['rewind_loaded_ms_min']:.0f} / {f['rewind_loaded_ms_median']:.0f} / {f['rewind_loaded_ms_max']:.0f} ms",
         "(what a whole-world summary reads)"),
    ]
