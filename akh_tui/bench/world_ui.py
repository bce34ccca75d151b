"""The world workbench at full speed against the headless world (issue 26's aim: the workbench
keeps ≥ 0.9 × the headless world's step rate).

Both sides step the same endless world (two traders of the zoo whose one goal no graph can
meet, a stall threshold too high to give it up): the workbench headless under Textual with
its engine thread and its frames, the bare WorldWatch in the same process right after, over
the same number of steps, in 3 interleaved rounds after an untimed one. The figure is steps per CPU-second of the
process (the engine and the frames share a core through the GIL; CPU time holds on a shared
machine), and their ratio per round.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ..engine.paths import Locations
from ..engine.world.file import load_world
from ..engine.world.watch import WorldWatch
from .stream import spread

ZOO = Path(__file__).resolve().parent.parent / "data" / "kg" / "zoo.tsv"


def endless_world(folder: Path, agents: int = 2) -> Path:
    """A world whose agents never run out of work: a goal no graph meets, never given up."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "endless.toml").write_text(
        f'name = "endless"\nkg = ["{ZOO.as_posix()}"]\n'
        '[[goals]]\ndescription = "Explore the ocean and find plankton"\ncriteria = "plankton"\n'
        '[config]\nstall_threshold = 1000000000\n', encoding="utf-8")
    text = '[world]\nname = "endless"\nrounds = 1000000\nmint_every = 10\nstarting_scrip = 50\n'
    for i in range(agents):
        text += f'[[agents]]\nid = "a{i}"\nscenario = "endless.toml"\n'
    path = folder / "world.toml"
    path.write_text(text, encoding="utf-8")
    return path


def figures(seconds: float = 3.0, per_round: int = 800) -> dict:
    """`per_round` steps a round (about a CPU-second), `seconds` the untimed warm-up."""
    import asyncio

    from ..tui.world.app import SPEEDS, WorldBench

    rounds: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        spec = load_world(str(endless_world(Path(tmp))))
        locations = Locations(Path(tmp) / "data", Path(tmp) / "config.toml")
        # both sides record every step in a session store on disk, as the workbench and `world run` do
        app = WorldBench(watch=WorldWatch.open(spec, locations, store=Path(tmp) / "ui.db"))

        async def drive() -> None:
            async with app.run_test(size=(120, 36)) as pilot:
                await pilot.pause()
                app.speed_index = len(SPEEDS) - 1
                headless = WorldWatch.open(spec, locations, store=Path(tmp) / "headless.db")
                app.action_toggle_run()  # untimed: the first frames of every pane, the engine thread's start
                await asyncio.sleep(seconds / 3)
                app.action_toggle_run()
                await asyncio.sleep(0.1)
                for _ in range(3):
                    start, c0 = len(app.world.steps), time.process_time()
                    app.action_toggle_run()
                    # a round lasts `per_round` steps (the machine's load changes how long that
                    # takes, not how much CPU), within a wall-clock ceiling
                    deadline = time.perf_counter() + 10 * seconds
                    while len(app.world.steps) - start < per_round and time.perf_counter() < deadline:
                        await asyncio.sleep(0.05)
                    app.action_toggle_run()
                    n = len(app.world.steps) - start
                    ui = n / (time.process_time() - c0)
                    await asyncio.sleep(0.1)  # the step in flight ends (the headless run waits for it)
                    while len(headless.steps) < start:  # the same steps as the workbench ran, timed
                        headless.step_agent()
                    c0 = time.process_time()
                    for _ in range(n):
                        headless.step_agent()
                    bare = n / (time.process_time() - c0)
                    rounds.append({"ui": ui, "headless": bare, "steps": n})
                headless.close()

        asyncio.run(drive())
    return {"ui_steps_per_cpu_s": spread([r["ui"] for r in rounds]),
            "headless_steps_per_cpu_s": spread([r["headless"] for r in rounds]),
            "ratio_cpu": spread([r["ui"] / r["headless"] for r in rounds]),
            "ratio_cpu_pooled": (sum(r["steps"] for r in rounds) / sum(r["steps"] / r["ui"] for r in rounds))
            / (sum(r["steps"] for r in rounds) / sum(r["steps"] / r["headless"] for r in rounds)),
            "steps": sum(r["steps"] for r in rounds)}


def rows(res: dict) -> list[tuple[str, str, str]]:
    """The table's rows: (figure, value, aim)."""
    def mmm(d: dict, fmt: str = ".0f") -> str:
        return f"{d['min']:{fmt}} / {d['median']:{fmt}} / {d['max']:{fmt}}"

    return [("world workbench at full speed: steps per CPU-second, min / median / max", mmm(res["ui_steps_per_cpu_s"]), ""),
            ("headless world, the same steps: steps per CPU-second", mmm(res["headless_steps_per_cpu_s"]), ""),
            ("ratio world workbench / headless (CPU), 3 interleaved rounds", mmm(res["ratio_cpu"], ".2f"), "≥ 0.9"),
            ("the same over all the rounds' steps together", f"{res['ratio_cpu_pooled']:.2f}", "≥ 0.9")]
