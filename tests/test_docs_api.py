"""docs/python-api.md's example runs as written (in a data dir of the test's own)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def test_the_python_api_example_runs(tmp_path, capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    exec(compile(blocks[0], str(DOC), "exec"), {"DATA": tmp_path / "data"})
    out = capsys.readouterr().out
    assert "agent steps;" in out and "'bold'" in out
    assert (tmp_path / "data" / "session.db").is_file()
