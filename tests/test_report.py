"""`sessions report`: one self-contained file (HTML or Markdown) saying what a run did: it parses,
holds every cycle, draws its plots inline, and opens in Chromium."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from akh_tui.engine.trace import read_trace

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
    assert "fork: branch bold from main (explorer weight 0.9)" in md
    assert "| explorer | 0.50 | 0.90 |" in md and md.count("<svg") == 2
    assert "Find mammals | completed" in md
    assert ".html or .md" in cli("sessions", "report", "1", "-o", "report.pdf", check_rc=2).stderr
    assert "cycle 9 is not recorded" in cli("sessions", "report", "1", "-o", "r.md", "--shot", "9", check_rc=2).stderr
    assert "no branch 'nope'" in cli("sessions", "report", "1", "--branch", "nope", "-o", "r.md", check_rc=2).stderr
