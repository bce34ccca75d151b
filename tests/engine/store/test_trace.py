"""Trace files (SPEC §11) load back for replay; a bad line is named by file and line."""


import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.store.trace import read_trace


def test_a_written_trace_loads_back(cli, tmp_path):
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "12", "--trace", "t.jsonl")
    trace = read_trace(tmp_path / "t.jsonl")
    assert trace.header["scenario"] == "shadow" and trace.header["v"] == 1
    assert [c["cycle"] for c in trace.cycles] == list(range(1, 13))
    assert {e["type"] for e in trace.events} >= {"reflection", "backtrack"}


@pytest.mark.parametrize(
    "lines, line, field",
    [
        (['{"type":"run","v":1}', "not json"], 2, None),
        (['{"type":"cycle","v":1,"cycle":1}'], 1, "type"),
        (['{"type":"run","v":1}', '{"type":"cycle","v":2,"cycle":1}'], 2, "v"),
        (['{"type":"run","v":1}', '{"type":"teleport","v":1}'], 2, "type"),
        (['{"type":"run","v":1}', '{"type":"cycle","v":1,"cycle":"one"}'], 2, "cycle"),
        (['{"type":"run","v":1}', "[1, 2]"], 2, None),
    ],
)
def test_bad_trace_lines_are_named(tmp_path, lines, line, field):
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_trace(p)
    assert err.value.line == line and err.value.field == field
    assert "bad.jsonl" in str(err.value)


def test_empty_trace_is_an_error(tmp_path):
    p = tmp_path / "empty.jsonl"
    p.write_text("")
    with pytest.raises(InputError, match="no run header"):
        read_trace(p)
