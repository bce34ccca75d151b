"""`akh-tui world why-moved --at ROUND:AGENT [--prove]` (issue 26): the answer of
engine/world/moved.py, in words and as JSON, read-only."""

from __future__ import annotations

import json


def test_why_moved_names_the_mover_and_the_proof_says_it_moved_the_decision(cli):
    cli("world", "run", "market", "--rounds", "6")
    before = cli("world", "show", "--json").stdout
    out = cli("world", "why-moved", "--at", "6:bold", "--prove").stdout
    assert out.splitlines() == [
        "6:bold (step 11): bold chose read_artifact(cautious-g2@1)",
        "read: balance bold, bold-g2@1, bold-ledger@1, cautious-g2@1",
        "mover 5:cautious write_artifact: changed artifact cautious-g2: wrote cautious-g2@1",
        "  proof: without 5:cautious's action, 6:bold chooses kg_query(cetacean) instead of "
        "read_artifact(cautious-g2@1): it moved the decision",
        "1 mover(s) of 1 other step(s) since its step 9",
    ]
    got = json.loads(cli("world", "why-moved", "--at", "6:bold", "--prove", "--json").stdout)
    assert got["movers"] == ["5:cautious"] and got["actions"][0]["proof"]["changed"] is True
    assert cli("world", "show", "--json").stdout == before  # nothing written, no branch made


def test_why_moved_without_prove_and_a_non_mover(cli):
    cli("world", "run", "market", "--rounds", "5")
    out = cli("world", "why-moved", "--at", "4:bold").stdout
    assert "not a mover 3:cautious kg_query: changed nothing shared" in out and "proof" not in out
    assert out.rstrip().endswith("0 mover(s) of 1 other step(s) since its step 5")


def test_why_moved_refuses_a_step_not_on_the_branch(cli):
    cli("world", "run", "market", "--rounds", "2")
    proc = cli("world", "why-moved", "--at", "9:bold", check_rc=2)
    assert "--at" in proc.stderr and "no step 9:bold" in proc.stderr
    proc = cli("world", "why-moved", "--at", "bold", check_rc=2)
    assert "ROUND:AGENT" in proc.stderr
