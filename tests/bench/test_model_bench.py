"""`akh-tui bench`'s local-model rows (issue 27): decisions per second and the model's share of a
cycle, measured through the real run path (here with a stand-in for llama.cpp's binding: the
real model runs in `make test-model`), and a "not installed" row without the extra."""

from __future__ import annotations

from akh_tui.bench.model import model_figures, model_rows
from akh_tui.engine.llm import local
from tests.engine.llm.test_local import fake_binding  # noqa: F401 (the fixture)


def test_without_the_extra_the_row_says_not_installed(monkeypatch):
    monkeypatch.setattr(local, "installed", lambda: False)
    f = model_figures(quick=True)
    assert f == {"installed": False}
    assert "not installed" in model_rows(f)[0][1]


def test_figures_through_a_run_decided_by_the_local_model(fake_binding, monkeypatch):  # noqa: F811
    monkeypatch.setattr(local, "installed", lambda: True)
    monkeypatch.setattr(local, "default_model_path", lambda: fake_binding)
    f = model_figures(quick=True)
    assert f["installed"] and f["cycles"] == 3
    assert f["decisions_per_s"] > 0 and 0 < f["share"] <= 1
    assert sum(f["statuses"].values()) == 3 and set(f["statuses"]) <= {"accepted", "intent_rejected"}
    rows = model_rows(f)
    assert "decisions per CPU second" in rows[0][0] and rows[1][1].endswith("%")
