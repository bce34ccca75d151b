"""Golden traces: the bundled scenarios' JSONL traces, recorded before the engine's hot path was
rewritten (its own adjacency indexes instead of networkx, caches), must come out byte for byte
the same. A trace holds every decision, score factor, activation and tool output of a cycle,
so any change in what the agent does (or in the order it does it) shows up here.

Regenerate (only when a trace format change is intended, and say so in the commit):
    PYTHONPATH=$PWD python -m tests.engine.store.test_golden_traces
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
ROOT = GOLDEN.parents[1]

# name -> (scenario, cycles); "generated" is a hub-heavy graph written by `generated_tsv`
CASES = {
    "zoo": ("zoo", 60),
    "solar": ("solar", 60),
    "shadow": ("shadow", 60),
    "zoo_long": (str(GOLDEN / "zoo_long.toml"), 200),
    "generated": (None, 120),
}


def generated_tsv(n_triples: int = 6000) -> str:
    """A zoo-like graph big enough that hubs exceed the activation fan-out and budget (classes
    with hundreds of members), from a fixed linear congruential generator (no library RNG whose
    stream could change under us)."""
    state = 12345

    def rnd(n: int) -> int:
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        return (state >> 33) % n

    lines, seen = [], set()

    def add(s: str, p: str, o: str, conf: str = "") -> None:
        if (s, p, o) not in seen and len(lines) < n_triples:
            seen.add((s, p, o))
            lines.append(f"{s}\t{p}\t{o}" + (f"\t{conf}" if conf else ""))

    n_classes = 12
    for c in range(1, n_classes):
        add(f"class-{c}", "is-a", f"class-{rnd(c)}")
    add("whale", "is-a", "class-1")
    add("whale", "has-property", "property-1")
    add("whale", "eats", "krill")
    i = 0
    while len(lines) < n_triples:
        e = f"entity-{i}"
        add(e, "is-a", f"class-{rnd(n_classes)}")
        add(e, "has-property", f"property-{rnd(40)}", f"0.{5 + rnd(5)}")
        add(e, "lives-in", f"place-{rnd(20)}")
        if i:
            add(e, "eats", f"entity-{rnd(i)}", "0.8")
        i += 1
    return "\n".join(lines) + "\n"


def generated_scenario(folder: Path) -> Path:
    (folder / "gen.tsv").write_text(generated_tsv())
    sc = folder / "generated.toml"
    sc.write_text(
        'name = "generated"\nseed = 5\nkg = ["gen.tsv"]\n'
        f'rules = ["{ROOT / "akh_tui" / "data" / "rules" / "biology.toml"}"]\n'
        '[[goals]]\ndescription = "Find whale properties"\ncriteria = "whale plankton"\n'
        '[[goals]]\ndescription = "Classify entity-3"\ncriteria = "entity-3 plankton"\n'
        '[[goals]]\ndescription = "Find animals similar to entity-7"\ncriteria = "entity-12 plankton"\n'
        "[config]\nstall_threshold = 1000000000\n"
    )
    return sc


def record(name: str, folder: Path) -> bytes:
    scenario, cycles = CASES[name]
    folder.mkdir(parents=True, exist_ok=True)
    if scenario is None:
        scenario = str(generated_scenario(folder))
    trace = folder / f"{name}.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    proc = subprocess.run(
        [sys.executable, "-m", "akh_tui.cli", "agent", "run", "--scenario", scenario,
         "--max-cycles", str(cycles), "--fresh", "--trace", str(trace), "--data-dir", str(folder / "data")],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return trace.read_bytes()


@pytest.mark.parametrize("name", list(CASES))
def test_trace_is_byte_identical_to_the_golden_one(name, tmp_path):
    want = (GOLDEN / f"{name}.jsonl").read_bytes()
    got = record(name, tmp_path)
    if got != want:
        diff = difflib.unified_diff(want.decode().splitlines(), got.decode().splitlines(), "golden", "now", n=0, lineterm="")
        first = "\n".join(line[:400] for line in list(diff)[:8])
        pytest.fail(f"{name}: the trace differs from tests/golden/{name}.jsonl\n{first}")
    assert want.count(b'"type":"cycle"') >= min(CASES[name][1], 8)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            data = record(case, Path(tmp) / case)
            (GOLDEN / f"{case}.jsonl").write_bytes(data)
            print(case, len(data), "bytes")
