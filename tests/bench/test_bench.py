"""`akh-tui bench --engine`'s pieces, small: the generated triple file, one load, one table."""

from __future__ import annotations

from rich.console import Console

from akh_tui.bench.main import engine_part, engine_table, generated_tsv
from akh_tui.engine.knowledge.kg import read_triple_file


def test_generated_file_has_the_asked_number_of_distinct_triples(tmp_path):
    path = tmp_path / "g.tsv"
    generated_tsv(path, 3000)
    rows = read_triple_file(path)
    assert len(rows) == 3000
    assert len({(r.subject, r.predicate, r.object) for r in rows}) == 3000
    assert {r.predicate for r in rows} == {"is-a", "has-property", "lives-in", "eats"}


def test_load_part_loads_the_file_and_the_table_shows_figures_against_aims(tmp_path):
    generated_tsv(tmp_path / "million.tsv", 2000)
    (tmp_path / "million.toml").write_text('name = "m"\nkg = ["million.tsv"]\n[[goals]]\ndescription = "Find whale properties"\n')
    load = engine_part("load", str(tmp_path))
    assert load["load_triples"] == 2000 and load["load_cpu_s"] > 0 and load["load_rss_mb"] > 0
    demo = engine_part("demo", "20")
    samples = {k: [v] * 3 for k, v in (load | demo).items()}
    res = {"quick": True, "runs": 3, "big_triples": 100_000, "load_triples": 2000, "samples": samples}
    console = Console(record=True, width=160)
    console.print(engine_table(res))
    text = console.export_text()
    assert "demo graph: median cycle" in text and "≤ 0.5 ms" in text
    assert "load 2,000 triples: peak RSS" in text and "≤ 600 MB" in text


def test_soar_rows_measure_bare_adapter_recorded_and_rewind() -> None:
    """Issue 30's bench rows: each figure measured, the adapter within half of bare Soar."""
    import pytest

    pytest.importorskip("soar_sml", reason="soar-sml is in the test extra")
    from akh_tui.bench.soar import soar_figures, soar_rows

    res = soar_figures(quick=True)
    assert res is not None and res["bare_per_cpu_s"] > 0 and set(res["rewind_ms"]) == {"1000", "10000"}
    assert res["adapter_per_cpu_s"] >= 0.5 * res["bare_per_cpu_s"] * 0.6  # aim 0.5×; a busy machine's slack
    labels = [r[0] for r in soar_rows(res)]
    assert any("through the adapter" in x for x in labels) and any("10,000 decisions" in x for x in labels)
    assert res["stored_per_cpu_s"] > 0 and res["resume_ms"] > 0  # a Soar run in the session store
    assert any("session store" in x for x in labels) and any("resumed" in x for x in labels)


def test_the_recording_rows_measure_each_way_against_the_engine_alone_in_the_same_round(tmp_path):
    from akh_tui.bench import recording
    from akh_tui.bench.main import demo_agent, generated_agent

    res = recording.figures(True, tmp_path, demo_agent, generated_agent, rounds=2, cycles=40, big_triples=2000)
    assert len(list((tmp_path).glob("store-*.db"))) == 2  # recorded into a store on disk, one per round
    for way in ("store", "store_trace"):
        # each round's ratio is there, taken against that round's engine alone (how large it is,
        # over 40 cycles on a busy machine, is noise: the bench prints it, a test cannot hold it)
        r = res["ratio"][way]
        assert 0 < r["min"] <= r["median"] <= r["max"]
    assert 100 < res["record_bytes"]["median"] < 2000
    rows = list(recording.rows(res))
    assert [r[2] for r in rows if "÷ the engine alone" in r[0]] == ["≤ 1.3", ""]
    assert any("2,000 triples" in r[0] and r[2] == "≤ 3 ms" for r in rows)


def test_the_world_rows_measure_each_figure_on_small_worlds(tmp_path):
    """Issue 25's bench rows on a 2- and a 4-agent world: every figure measured and shown."""
    from akh_tui.bench.main import ENDLESS, demo_agent, rss_mb
    from akh_tui.bench.world import world_figures, world_rows

    f = world_figures(True, tmp_path, demo_agent, ENDLESS, rss_mb, sizes=(2, 4, 40, 2, 10))
    assert f["world_agents"] == [2, 4] and f["world100_steps"] == 40
    assert f["single_cycle_ms"] > 0 and f["world10_step_ms"] > 0 and f["world100_step_ms"] > 0
    lo, mid, hi = f["ratio10_blocks"]
    assert 0 < lo <= mid <= hi
    assert 0 < f["rewind_ms_min"] <= f["rewind_ms_median"] <= f["rewind_ms_max"]
    assert 0 < f["rewind_loaded_ms_min"] <= f["rewind_loaded_ms_median"] <= f["rewind_loaded_ms_max"]
    assert f["world10_step_mean_ms"] > 0 and f["single_cycle_mean_ms"] > 0 and f["world100_step_mean_ms"] > 0
    assert f["mb_per_agent_built"] < 30  # nothing held but the worlds
    text = "\n".join(" | ".join(r) for r in world_rows(f))
    assert "world, 2 agents on the demo graph" in text and "≤ 1.2×" in text
    assert "world, 2 agents: the same, mean CPU" in text and "world, 4 agents: recorded step, mean" in text
    assert "world, 4 agents: rewind of a 40-step world, min / median / max" in text and "≤ 100 ms" in text
    assert "world, 4 agents: the same rewind with every agent loaded" in text
