"""`akh-tui bench`'s workbench rows (issue 29): the workbench at full speed against headless with
its pauses, and the plots screen on a long branch, each measured on a small size here (shape,
not speed: the machine running the tests is busy)."""

from __future__ import annotations

from akh_tui.bench import plots_screen
from akh_tui.bench.main import ui_figures


def test_the_workbench_rows_measure_rounds_of_cycles_and_pauses():
    res = ui_figures(per_round=60, rounds=2, warmup=20)
    assert res["rounds"] == 2 and res["per_round"] == 60
    for key in ("ui_cycles_per_cpu_s", "headless_cycles_per_cpu_s", "ratio_cpu", "pause_ms_max", "paused_frame_ms_max"):
        d = res[key]
        assert 0 <= d["min"] <= d["median"] <= d["max"], key
    assert res["ui_cycles_per_cpu_s"]["min"] > 0 and res["ratio_cpu_pooled"] > 0
    assert res["paused_frame_ms_max"]["min"] > 0  # a paused frame was drawn after every pause


def test_the_plots_rows_open_the_screen_on_a_long_branch_and_time_its_stalls_and_keys(monkeypatch):
    from akh_tui.tui import plots

    monkeypatch.setattr(plots, "SAMPLES", 100)  # a 400-cycle branch is sampled, as a long one is
    monkeypatch.setattr(plots, "PAGE", 50)
    figs = {f.label.split(",")[0].split(":")[0].strip(): f for f in plots_screen.figures(cycles=400, rounds=1)}
    fill = figs["open until every plot is drawn"]
    assert len(fill.samples) == 1 and fill.samples[0] > 0
    stall = figs["longest event-loop stall while it fills"]
    assert stall.samples[0] > 0 and stall.aim == "≤ 250 ms"
    # it read the samples (at most 100) and the grid's pages around the cursor, not the branch
    read = figs["cycles the screen read (the plots' samples and the grid's pages)"].samples[0]
    assert 100 < read < 400
