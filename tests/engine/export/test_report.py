"""`sessions report`: one self-contained file (HTML or Markdown) saying what a run did: it parses,
holds every cycle, draws its plots inline, and opens in Chromium."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from akh_tui.engine.store.trace import read_trace

X = "{http://www.w3.org/1999/xhtml}"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def test_an_html_report_holds_every_cycle_and_opens_in_chromium(cli, tmp_path):
    cli("agent", "run", "--scenario", "shadow", "--max-cycles", "12", "--trace", "run.jsonl")
    records = read_trace(tmp_path / "run.jsonl").cycles
    proc = cli("sessions", "report", "1", "-o", "report.html", "--shot", "4")
    assert "(12 cycle(s))" in proc.stdout
    text = (tmp_path / "report.html").read_text()
    root = ET.fromstring(text.split("\n", 1)[1])  # well-formed (after the doctype line)
    rows = [tr for tr in root.iter(f"{X}tr") if tr.get("data-cycle")]
    assert [int(tr.get("data-cycle")) for tr in rows] == [r["cycle"] for r in records]
    for tr, rec in zip(rows, records):
        cells = ["".join(td.itertext()) for td in tr.findall(f"{X}td")]
        assert cells[2] == rec["decide"]["tool"] and cells[3] == rec["decide"]["input"]
        assert cells[5] == rec["decide"]["breakdown"] and cells[4].startswith(rec["act"]["progress"])
    vetoed = [tr for tr in rows if tr.get("class") == "vetoed"]
    assert [int(tr.get("data-cycle")) for tr in vetoed] == [r["cycle"] for r in records if r["act"]["vetoed"]]
    assert "vetoed by destructive_action" in "".join(vetoed[0].itertext())
    assert "reflection:" in text  # the reflection every 5 cycles
    svgs = [s for s in root.iter("{http://www.w3.org/2000/svg}svg") if s.get("aria-label")]
    assert [s.get("aria-label") for s in svgs] == ["archetype weights", "goal coverage"]
    assert all(s.find("{http://www.w3.org/2000/svg}polyline") is not None for s in svgs)
    # --shot 4: the workbench as it drew cycle 4 (the veto), inline
    (shot,) = [d for d in root.iter(f"{X}div") if d.get("data-shot")]
    drawn = "".join(shot.itertext()).replace("\xa0", " ")
    assert shot.get("data-shot") == "4" and "cycle 4" in drawn and "Score breakdown" in drawn
    assert "http://" not in text.replace("http://www.w3.org/", "") and "https://" not in text  # nothing fetched
    # the same run gives the same bytes
    cli("sessions", "report", "1", "-o", "again.html", "--shot", "4")
    assert (tmp_path / "again.html").read_text() == text
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto((tmp_path / "report.html").as_uri())
            assert page.locator("tr[data-cycle]").count() == len(records)
            assert page.locator("svg polyline").count() >= 2
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            keep = os.environ.get("AKH_TUI_SHOTS")
            if keep:
                Path(keep).mkdir(parents=True, exist_ok=True)
                Path(keep, shot.name).write_bytes(shot.read_bytes())
        finally:
            browser.close()


def test_a_markdown_report_of_a_branch_and_bad_output_names(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "6")
    cli("agent", "fork", "--at", "2", "--name", "bold", "--set", "explorer=0.9")
    cli("agent", "resume", "--max-cycles", "3")
    out = json.loads(cli("sessions", "report", "1", "--branch", "bold", "-o", "bold.md", "--json").stdout)
    assert out == {"file": "bold.md", "cycles": 5}
    md = (tmp_path / "bold.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and ln.split("|")[1].strip().isdigit()]
    assert [int(r.split("|")[1]) for r in rows] == [1, 2, 3, 4, 5]
    assert "branch bold forked from main after cycle 2 (explorer weight 0.9)" in md  # worded as everywhere (explain/events.py)
    assert "| explorer | 0.50 | 0.90 |" in md and md.count("<svg") == 2
    assert "Find mammals | completed" in md
    assert ".html or .md" in cli("sessions", "report", "1", "-o", "report.pdf", check_rc=2).stderr
    assert "cycle 9 is not recorded" in cli("sessions", "report", "1", "-o", "r.md", "--shot", "9", check_rc=2).stderr
    assert "no branch 'nope'" in cli("sessions", "report", "1", "--branch", "nope", "-o", "r.md", check_rc=2).stderr


# ---- issue 23: user text in a report is text --------------------------------------------------

HOSTILE_NAME = "<script>window.pwned='name'</script>[n](javascript:window.pwned='nlink')"
HOSTILE_GOAL = ("Find <img src=x onerror=\"window.pwned='img'\"> ![i](javascript:window.pwned='image') "
                "[click](javascript:window.pwned='link') <https://example.invalid/auto> *em* &lt;b&gt; x|y")
HOSTILE_PERSONA = "<script>window.pwned='persona'</script>"


def _hostile_run(cli, tmp_path: Path) -> None:
    data = Path(__file__).resolve().parents[3] / "akh_tui" / "data"
    (tmp_path / "psyche.toml").write_text(f'[persona]\nname = {json.dumps(HOSTILE_PERSONA)}\n')
    (tmp_path / "evil.toml").write_text(
        f"name = {json.dumps(HOSTILE_NAME)}\nseed = 3\nkg = [{json.dumps(str(data / 'kg' / 'zoo.tsv'))}]\n"
        f"[psyche]\nfile = \"psyche.toml\"\n"
        f"[[goals]]\ndescription = {json.dumps(HOSTILE_GOAL)}\ncriteria = \"plankton\"\n")
    cli("agent", "run", "--scenario", str(tmp_path / "evil.toml"), "--max-cycles", "3")


def test_user_text_in_a_markdown_report_renders_as_text(cli, tmp_path):
    _hostile_run(cli, tmp_path)
    cli("sessions", "report", "1", "-o", "r.md")
    md = (tmp_path / "r.md").read_text()
    markdown_it = pytest.importorskip("markdown_it")
    # CommonMark with raw HTML on (as the spec has it) and GFM tables
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    body = html.split("<h2>Over the cycles</h2>")[0] + html.split("<h2>Cycles")[1]  # the plots are ours (SVG)
    assert "<script" not in body and "<img" not in body and "<a " not in body, body
    assert "javascript:" not in " ".join(re.findall(r'(?:href|src)="[^"]*"', body))
    # what the user wrote, shown as written (HTML-escaped by the renderer)
    assert "&lt;script&gt;window.pwned='name'&lt;/script&gt;[n](javascript:window.pwned='nlink')" in body
    assert "![i](javascript:window.pwned='image') [click](javascript:window.pwned='link')" in body
    assert "*em* &amp;lt;b&amp;gt; x|y" in body  # an entity stays text; the pipe stays in its cell
    assert "&lt;script&gt;window.pwned='persona'&lt;/script&gt;" in body
    (tmp_path / "r.md.html").write_text(html)
    _inert_in_chromium(tmp_path / "r.md.html")


def test_user_text_in_an_html_report_is_inert(cli, tmp_path):
    """The HTML report escaped user text before issue 23 too: this keeps it so."""
    _hostile_run(cli, tmp_path)
    cli("sessions", "report", "1", "-o", "r.html")
    html = (tmp_path / "r.html").read_text()
    ET.fromstring(html.split("\n", 1)[1])  # still well-formed
    assert "<script" not in html and "<img" not in html and "<a " not in html
    _inert_in_chromium(tmp_path / "r.html")


def _inert_in_chromium(page_file: Path) -> None:
    """Chromium opens the page: nothing the user wrote ran or became an element, and it is on
    the page as the text it was."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page()
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(page_file.as_uri())
            page.wait_for_load_state("load")
            assert page.evaluate("window.pwned === undefined") and not dialogs
            assert [page.locator(tag).count() for tag in ("script", "img", "a")] == [0, 0, 0]
            text = page.inner_text("body")
            assert HOSTILE_NAME in text and HOSTILE_PERSONA in text
            assert "![i](javascript:window.pwned='image') [click](javascript:window.pwned='link')" in text
        finally:
            browser.close()
