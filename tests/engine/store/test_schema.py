"""The published record schema (data/schemas/v1/trace.schema.json, JSON Schema draft 2020-12):
every line of every bundled scenario's and world's trace is valid against it, a record that
breaks a rule SPEC §11 or §13 states is not, and a record of a newer version is refused by
name by every reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema")

from akh_tui.engine.errors import InputError  # noqa: E402
from akh_tui.engine.paths import bundled_data_dir  # noqa: E402
from akh_tui.engine.schemas import FIRST_VERSION, RECORD_VERSION, check_version, load_schema, schema_dir  # noqa: E402
from akh_tui.engine.store.trace import read_trace  # noqa: E402
from akh_tui.engine.world.file import list_worlds  # noqa: E402
from akh_tui.engine.world.tracefile import world_trace_records  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


@pytest.fixture(scope="module")
def validator():
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)  # the schema itself is a valid 2020-12 schema
    return jsonschema.Draft202012Validator(schema)


def problems(validator, path: Path) -> list[str]:
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for e in validator.iter_errors(json.loads(line)):
            out.append(f"{path.name}:{n}: {list(e.absolute_path)}: {e.message[:160]}")
    return out


def kinds(path: Path) -> set[str]:
    return {json.loads(line)["type"] for line in path.read_text(encoding="utf-8").splitlines()}


def test_every_bundled_scenario_and_world_traces_valid_records(cli, tmp_path, validator):
    seen: set[str] = set()
    # a fork with edits (run 1), and the scripted decider (decide.llm): their records too
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "5")
    cli("agent", "fork", "--at", "3", "--name", "bold", "--set", "explorer=0.9")
    cli("agent", "resume", "--max-cycles", "2")
    cli("sessions", "export", "1", "--branch", "bold", "-o", "bold.jsonl")
    from akh_tui.engine.soar.scenario import is_soar

    # a Soar scenario's trace holds Soar's decisions, not §11's records (docs/soar.md): not in this schema
    for sc in sorted(p.stem for p in (bundled_data_dir() / "scenarios").glob("*.toml") if not is_soar(p)):
        cli("agent", "run", "--scenario", sc, "--max-cycles", "25", "--trace", f"{sc}.jsonl")
        assert problems(validator, tmp_path / f"{sc}.jsonl") == []
        seen |= kinds(tmp_path / f"{sc}.jsonl")
    cli("agent", "run", "--scenario", "zoo", "--decider", "scripted", "--max-cycles", "3", "--trace", "scripted.jsonl")
    for name in ("bold.jsonl", "scripted.jsonl"):
        assert problems(validator, tmp_path / name) == []
        seen |= kinds(tmp_path / name)
    for world in list_worlds():
        cli("world", "run", world, "--trace", f"w-{world}.jsonl")
        assert problems(validator, tmp_path / f"w-{world}.jsonl") == []
        seen |= kinds(tmp_path / f"w-{world}.jsonl")
    # a world that is rate limited and fails: rate_limited, sleeping states and pivots
    (tmp_path / "tight.toml").write_text(
        '[world]\nname = "tight"\nrounds = 12\n[world.limits]\nactions = 1\nwindow_s = 3\n'
        '[[agents]]\nid = "a"\nscenario = "shadow"\n[[agents]]\nid = "b"\nscenario = "zoo"\n', encoding="utf-8")
    cli("world", "run", "tight.toml", "--trace", "tight.jsonl")
    assert problems(validator, tmp_path / "tight.jsonl") == []
    seen |= kinds(tmp_path / "tight.jsonl")
    assert seen >= {"run", "cycle", "reflection", "consolidation", "decomposition", "backtrack", "fork",
                    "world", "round", "ledger", "mint", "state", "artifact", "evaluation",
                    "rate_limited"}, seen


def test_golden_traces_recorded_by_earlier_versions_are_valid(validator):
    """The traces the golden tests keep were written by earlier builds of version 1: they open."""
    files = sorted(GOLDEN.glob("*.jsonl"))
    assert files
    for f in files:
        assert problems(validator, f) == []
        assert read_trace(f).cycles


@pytest.mark.parametrize("kind, edit, where", [
    ("cycle", lambda r: r["act"].update(progress="maybe"), ["act", "progress"]),
    ("cycle", lambda r: r.pop("decide"), []),
    ("cycle", lambda r: r.update(mood="calm"), []),  # a field no version defines
    ("cycle", lambda r: r["goals"][0].update(status="done"), ["goals", 0, "status"]),
    ("ledger", lambda r: r.update(amount=0), ["amount"]),
    ("mint", lambda r: r.update(score=101), ["score"]),
    ("round", lambda r: r.update(order=["Not An Id"]), ["order", 0]),
    ("world", lambda r: r.update(v=2), ["v"]),
])
def test_a_record_that_breaks_a_rule_is_invalid(cli, tmp_path, validator, kind, edit, where):
    cli("world", "run", "market", "--rounds", "5", "--trace", "m.jsonl")
    rec = next(json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines() if json.loads(x)["type"] == kind)
    assert list(validator.iter_errors(rec)) == []
    edit(rec)
    errors = list(validator.iter_errors(rec))
    assert errors and any(list(e.absolute_path) == where for e in errors), [(list(e.absolute_path), e.message) for e in errors]


def test_every_version_this_akh_tui_reads_has_its_schema_and_a_newer_one_is_refused_by_name(cli, tmp_path):
    for v in range(FIRST_VERSION, RECORD_VERSION + 1):
        assert check_version(v) == v
        assert (schema_dir(v) / "trace.schema.json").is_file()
        assert load_schema(v)["$defs"]["cycle"]["properties"]["v"] == {"const": v, "description": load_schema(v)[
            "$defs"]["cycle"]["properties"]["v"]["description"]}
    newer = RECORD_VERSION + 1
    with pytest.raises(InputError, match=f"record version {newer} is newer than this akh-tui reads"):
        check_version(newer)
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "3", "--trace", "z.jsonl")
    lines = (tmp_path / "z.jsonl").read_text().splitlines()
    (tmp_path / "newer.jsonl").write_text("\n".join([lines[0], lines[1].replace('"v":1', f'"v":{newer}', 1),
                                                    *lines[2:]]) + "\n")
    with pytest.raises(InputError) as exc:
        read_trace(tmp_path / "newer.jsonl")
    assert exc.value.line == 2 and exc.value.field == "v" and f"version {newer} is newer" in exc.value.message
    proc = cli("sessions", "import", "newer.jsonl", check_rc=2)
    assert f"record version {newer} is newer" in proc.stderr and "newer.jsonl:2" in proc.stderr
    cli("world", "run", "market", "--rounds", "2", "--trace", "m.jsonl")
    wl = (tmp_path / "m.jsonl").read_text().splitlines()
    (tmp_path / "wnewer.jsonl").write_text("\n".join([wl[0].replace('"v":1', f'"v":{newer}', 1), *wl[1:]]) + "\n")
    with pytest.raises(InputError, match=f"record version {newer} is newer"):
        list(world_trace_records(tmp_path / "wnewer.jsonl"))
