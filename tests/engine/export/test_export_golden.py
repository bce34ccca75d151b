"""Streaming changed how exports and reports are made, not what they say: a short run's OTLP JSON
and HTML report are byte for byte what the whole-run-in-memory code wrote (recorded in
tests/golden/export/ before the change, from an import of the first 8 cycles of the shadow golden
trace), and its Markdown report differs only where user text is now escaped.

Regenerate only when the format is meant to change (and say so in the commit): import
shadow8.jsonl as run 2 of a store whose run 1 is `agent run --scenario zoo --max-cycles 1`, then
`sessions export 2 --format otlp-json` and `sessions report 2 -o …`.
"""

from __future__ import annotations

from pathlib import Path

from akh_tui import __version__

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "export"
RECORDED_VERSION = "0.1.0"  # the package version the golden files were written by


def _imported(cli) -> None:
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "1")
    assert "as run 2" in cli("sessions", "import", str(GOLDEN / "shadow8.jsonl")).stdout


def _same_version(text: str) -> str:
    return text.replace(f'"{__version__}"', f'"{RECORDED_VERSION}"')


def test_otlp_json_is_the_bytes_the_in_memory_export_wrote(cli, tmp_path):
    _imported(cli)
    proc = cli("sessions", "export", "2", "--format", "otlp-json", "-o", "out.json")
    assert "exported 8 cycle(s) of run 2 branch main as 57 span(s)" in proc.stderr
    assert _same_version((tmp_path / "out.json").read_text()) == (GOLDEN / "shadow8.otlp.json").read_text()
    # on standard output too
    assert _same_version(cli("sessions", "export", "2", "--format", "otlp-json").stdout) == \
        (GOLDEN / "shadow8.otlp.json").read_text()


def test_reports_are_the_bytes_the_in_memory_report_wrote(cli, tmp_path):
    _imported(cli)
    cli("sessions", "report", "2", "-o", "r.html")
    assert (tmp_path / "r.html").read_text() == (GOLDEN / "shadow8.report.html").read_text()
    cli("sessions", "report", "2", "-o", "r.md")
    old = (GOLDEN / "shadow8.report.md").read_text()
    # the one change: the goal's backticks are text now, not a code span
    assert "`echo plankton`" in old
    assert (tmp_path / "r.md").read_text() == old.replace("`echo plankton`", "\\`echo plankton\\`")
