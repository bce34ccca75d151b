"""`agent why --agent ID --tool T` on a world's own actions: the why-not must use the
actions' declarations (world/actions.py), as it does a built-in's or a plugin's. Before, a
world action was unknown to the explainer: read_artifact's fixed base of 0.6 was said to
"do it" at 0.93, and every world action was called "a archetype tool"."""

from __future__ import annotations

import json


def _why_not(cli, tool: str) -> dict:
    return json.loads(cli("agent", "why", "--agent", "pilot", "--cycle", "1", "--tool", tool, "--json").stdout)["why_not"]


def test_a_world_actions_fixed_base_is_never_advice(cli):
    cli("world", "run", "harbour", "--rounds", "1")
    got = _why_not(cli, "read_artifact")
    base = next(c for c in got["closers"] if c["factor"] == "base")
    assert base["possible"] is False
    assert "its rule gives only 0.60" in base["text"] and "shares a word with the goal" in base["text"]
    arch = next(c for c in got["closers"] if c["factor"] == "archetype")
    assert arch["text"].startswith("explorer weight would need")


def test_a_world_actions_archetype_is_its_own(cli):
    cli("world", "run", "harbour", "--rounds", "1")
    text = cli("agent", "why", "--agent", "pilot", "--cycle", "1", "--tool", "noop").stdout
    assert "a archetype" not in text
    assert "is a guardian tool too: a guardian weight lifts both alike" in text  # noop is guardian
    assert "its rule gives only 0.05 (0.05, always offered)" in text
