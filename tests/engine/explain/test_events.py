"""An event reads the same wherever it is shown (explain/events.py): the CLI, the workbench's
status line and a report take their words from one place."""

from __future__ import annotations

import json

from akh_tui.engine import event_words


def test_a_fork_is_worded_alike_in_the_cli_and_the_report(cli, tmp_path):
    cli("agent", "run", "--scenario", "zoo", "--max-cycles", "3")
    said = cli("agent", "fork", "--at", "2", "--name", "bold", "--set", "explorer=0.9").stdout
    event = json.loads(cli("sessions", "show", "1", "--json").stdout)
    assert "branch bold forked from main after cycle 2 (explorer weight 0.9)" in said.replace("\n", " ")
    cli("sessions", "report", "1", "--branch", "bold", "-o", "r.md")
    assert event_words({"type": "fork", "branch": "bold", "parent": "main", "cycle": 2,
                        "edits": ["explorer weight 0.9"]}, detail=True, dated=False) in (tmp_path / "r.md").read_text()
    assert [b["name"] for b in event["branches"]] == ["main", "bold"]


def test_each_kind_has_its_words_and_an_unknown_one_its_name():
    words = {k: event_words({"type": k, "cycle": 4, "goal": 2, "mode": "sub-goals", "source": "user",
                             "adjustments": [], "psyche_changes": []})
             for k in ("reflection", "decomposition", "psyche_edit", "backtrack", "consolidation", "mystery")}
    assert words == {
        "reflection": "reflection at cycle 4", "decomposition": "goal #2 decomposed (sub-goals) at cycle 4",
        "psyche_edit": "psyche edited (user): applies at cycle 5", "backtrack": "backtrack on goal #2 at cycle 4",
        "consolidation": "working memory consolidated at cycle 4", "mystery": "mystery",
    }
    assert event_words({"type": "reflection", "cycle": 4, "adjustments": [], "psyche_changes": []},
                       detail=True, dated=False) == "reflection: no change"
