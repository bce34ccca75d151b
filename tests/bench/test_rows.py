"""`akh-tui bench`'s registered rows (bench/rows.py) and the anchors (bench/anchors.py)."""

from __future__ import annotations

from rich.console import Console

from akh_tui.bench import anchors, rows
from akh_tui.bench.rows import Figure, figure_table, register, table_json


def _text(table) -> str:
    console = Console(record=True, width=200)
    console.print(table)
    return console.export_text()


def test_a_row_is_min_median_max_and_its_ratio_to_the_baseline_round_by_round():
    base = Figure("engine", [100.0, 200.0, 300.0], "/s")
    other = Figure("tree", [50.0, 300.0, 150.0], "/s", baseline="engine", aim="≤ 0.67")
    text = _text(figure_table("t", [base, other]))
    line = next(ln for ln in text.splitlines() if "tree" in ln)
    assert "50 /s" in line and "150 /s" in line and "300 /s" in line
    # per round: 0.5, 1.5, 0.5 -> median 0.5, min 0.5, max 1.5 (not 150 / 200 = 0.75)
    assert "0.50 (0.50–1.50)" in line and "≤ 0.67" in line


def test_a_figure_without_samples_prints_its_note():
    text = _text(figure_table("t", [Figure("engine", [1.0]), Figure("soar", note="not installed (soar-sml)")]))
    assert "not installed (soar-sml)" in text


def test_registering_a_name_twice_keeps_one_row_and_tables_pass_soak(monkeypatch):
    monkeypatch.setattr(rows, "_REGISTERED", [])
    monkeypatch.setattr(rows, "MODULES", ())
    seen = []

    def plain(quick):
        seen.append(("plain", quick))
        return figure_table("plain", [Figure("x", [1.0])])

    def long(quick, soak=False):
        seen.append(("long", soak))
        return figure_table("long", [Figure("y", [2.0])])

    register("a", plain)
    register("b", long)
    register("a", plain)
    tables = list(rows.tables(True, soak=True))
    assert [t.title for t in tables] == ["plain", "long"]
    assert seen == [("plain", True), ("long", True)]
    assert table_json(tables[1])["rows"][0]["figure"] == "y"


def test_the_anchor_module_is_registered():
    names = [name for name, _ in rows.registered()]
    assert {"anchors", "explain", "startup", "plots", "sweeps"} <= set(names)


def test_the_clock_times_each_part_and_prints_the_total(monkeypatch):
    from akh_tui.bench import clock as clock_mod

    cpu = [10.0]
    monkeypatch.setattr(clock_mod, "cpu_seconds", lambda: cpu[0])
    clock = clock_mod.Clock()
    with clock.part("first"):
        cpu[0] += 2.5
    with clock.part("second"):
        cpu[0] += 1.0
    assert [(n, c) for n, _, c in clock.parts] == [("first", 2.5), ("second", 1.0)]
    text = _text(clock.table())
    assert "first" in text and "2.5" in text and "total" in text and "3.5" in text
    assert "minutes of CPU" in text


def test_registered_tables_are_timed_under_their_names(monkeypatch):
    from akh_tui.bench.clock import Clock

    monkeypatch.setattr(rows, "_REGISTERED", [])
    monkeypatch.setattr(rows, "MODULES", ())
    register("a", lambda quick: figure_table("a", [Figure("x", [1.0])]))
    clock = Clock()
    assert [t.title for t in rows.tables(True, clock=clock)] == ["a"]
    assert [n for n, _, _ in clock.parts] == ["a"]


def test_anchors_measure_every_row_or_say_not_installed(monkeypatch):
    monkeypatch.setattr(anchors, "_installed", lambda module: False)
    monkeypatch.setattr(anchors, "anchor_rounds", lambda quick: (2, 30))
    figs = {f.label: f for f in anchors.anchor_figures(True)}
    assert len(figs[anchors.ENGINE].samples) == 2 and min(figs[anchors.ENGINE].samples) > 0
    missing = [f for f in figs.values() if not f.samples]
    assert len(missing) == 3 and all("not installed" in f.note for f in missing)
    text = _text(anchors.anchor_table(True))
    assert "not installed" in text and "÷ engine alone" in text


def test_the_anchor_libraries_tick_when_installed():
    import pytest

    pytest.importorskip("py_trees")
    step = anchors.py_trees_stepper(True)
    assert all(str(step()) == "Status.SUCCESS" for _ in range(22))
    pytest.importorskip("soar_sml")
    run, close = anchors.soar_runner()
    run(50)
    close()


def test_explain_rows_measure_the_command_at_each_length_in_a_process_of_its_own():
    from akh_tui.bench import explain

    figs = explain.explain_figures(True)
    labels = [f.label for f in figs]
    assert "200-cycle run: peak RSS" in labels[0] and "2,000-cycle run: peak RSS" in labels[2]
    peaks = [f.samples[0] for f in figs[::2]]
    assert all(20 < p < explain.AIM_MB for p in peaks)  # a real child's peak, under the aim
    assert figs[2].baseline == figs[0].label
    assert all(f.samples[0] > 0 for f in figs[1::2]) and figs[3].baseline == figs[1].label != figs[3].label  # the child's CPU
