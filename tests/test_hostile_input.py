"""Hostile input (issue 17, items 11-14): work and sizes stay bounded, bad bytes and deep
nesting are refused with exit 2 or a clear message, never a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError, InputWarning
from akh_tui.engine.kg import KnowledgeGraph
from akh_tui.engine.rules import WORK_PER_CALL, RuleEngine, load_rules, parse_rules

ROOT = Path(__file__).resolve().parents[1]

CROSS = textwrap.dedent(
    """\
    [[rule]]
    name = "cross"
    if   = [["?a", "rel", "?b"],
            ["?c", "rel", "?d"]]
    then = [["?a", "rel", "?b"]]
    """
)

# a cross product whose conclusions are new, so a cut join visibly loses or keeps work
LINK = textwrap.dedent(
    """\
    [[rule]]
    name = "link"
    if   = [["?a", "rel", "?b"], ["?c", "rel", "?d"]]
    then = [["?a", "linked", "?c"]]
    """
)


def quiet_rules(text: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        return parse_rules(text)


def rel_graph(n: int) -> KnowledgeGraph:
    kg = KnowledgeGraph()
    for i in range(n):
        kg.add(f"x{i}", "rel", f"y{i}")
    return kg


# ---- 11: the join work of one infer_rules call is bounded ------------------------------------

def test_a_cross_product_rule_does_bounded_work_per_call_and_finishes_over_calls():
    # 1,500 facts: today's single call examines 4.5M pairs (about 40 s); bounded, each call
    # does at most WORK_PER_CALL and the run stays responsive
    kg = rel_graph(1500)
    eng = RuleEngine(kg, quiet_rules(CROSS))
    t0 = time.perf_counter()
    assert eng.run(1) == []  # every conclusion is already known
    assert eng.probed + eng.joined <= WORK_PER_CALL
    assert eng.pending() > 0  # the rest is carried to the next call
    assert time.perf_counter() - t0 < 5  # generous: the budget is tens of milliseconds
    calls = 1
    while eng.pending():
        eng.run(1)
        assert eng.probed + eng.joined <= WORK_PER_CALL
        calls += 1
    assert calls >= 2 * 1500 * 1500 // WORK_PER_CALL  # nothing was skipped to make it fast


def test_a_budgeted_run_derives_exactly_what_an_unbounded_one_does_in_the_same_order():
    full_kg = rel_graph(30)
    full = RuleEngine(full_kg, quiet_rules(LINK), max_work_per_call=10**9).run(1)
    assert len(full) == 30 * 30

    kg = rel_graph(30)
    eng = RuleEngine(kg, quiet_rules(LINK), max_work_per_call=37)
    got = []
    calls = 0
    while eng.pending():
        got.extend(eng.run(1))
        calls += 1
    assert calls > 20
    assert got == full and kg.derivations == full_kg.derivations


def test_a_cut_join_persisted_and_restored_resumes_exactly():
    """What a session snapshot keeps (cursor + suspended()) rebuilds the very same engine:
    a rewound run replays the cycles it recorded."""
    rules = quiet_rules(LINK)
    kg = rel_graph(20)
    eng = RuleEngine(kg, rules, max_work_per_call=45)
    first = eng.run(1) + eng.run(2)
    cut = eng.suspended()
    assert cut is not None and eng.pending() > 0

    # a rebuilt graph: the same facts, then the same additions (as state.restore applies them)
    kg2 = rel_graph(20)
    for t in first:
        nt = kg2.add(kg.label(t.subject), kg.label(t.predicate), kg.label(t.object), t.confidence, t.provenance, t.cycle)
        kg2.derivations[nt.key] = kg.derivations[t.key]
    again = RuleEngine(kg2, rules, max_work_per_call=45)
    again.resume(eng.cursor, cut)

    naive = RuleEngine(rel_graph(20), rules, max_work_per_call=45)  # the cursor alone re-joins from the start
    for t in first:
        naive.kg.add(kg.label(t.subject), kg.label(t.predicate), kg.label(t.object), t.confidence, t.provenance, t.cycle)
    naive.cursor = eng.cursor
    naive_next = naive.run(3)

    expected = eng.run(3)
    assert naive_next != expected  # so the cut itself must be persisted ...
    assert again.run(3) == expected
    for c in range(4, 60):
        assert again.run(c) == eng.run(c)  # ... and with it, every later call is the same
    assert again.pending() == eng.pending() == 0
    assert kg2.derivations == kg.derivations


def test_rule_load_warns_about_premises_that_form_a_cross_product(tmp_path):
    f = tmp_path / "cross.toml"
    f.write_text("# two unrelated premises\n\n" + CROSS)
    with pytest.warns(InputWarning) as got:
        load_rules(f)
    (w,) = got
    assert str(w.message).startswith(f"{f}:5: field 'rule[0].if': rule 'cross':")
    assert "(?a rel ?b) × (?c rel ?d)" in str(w.message)
    # premises linked through a variable, or a ground premise beside a pattern, join fine
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        parse_rules(LINK.replace('["?c", "rel", "?d"]', '["?b", "rel", "?c"]'))
        parse_rules(LINK.replace('["?c", "rel", "?d"]', '["sun", "rel", "moon"]').replace('"?c"]]', '"?b"]]'))
        for bundled in (ROOT / "data" / "rules").glob("*.toml"):
            load_rules(bundled)


def test_the_cli_prints_the_cross_product_warning(tmp_path):
    (tmp_path / "cross.toml").write_text(CROSS)
    (tmp_path / "facts.tsv").write_text("a\trel\tb\nc\trel\td\n")
    (tmp_path / "s.toml").write_text(
        'name = "s"\nkg = ["facts.tsv"]\nrules = ["cross.toml"]\n[[goals]]\ndescription = "Find a"\n'
    )
    proc = run_cli(["agent", "run", "--scenario", str(tmp_path / "s.toml"), "--max-cycles", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"warning: " in proc.stderr and b"cross.toml:3: field 'rule[0].if': rule 'cross'" in proc.stderr
    assert proc.stderr.count(b"cross product") == 1


# ---- 14: bytes that are not UTF-8 in arguments: exit 2 naming the argument -------------------

def run_cli(args: list, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, AKH_TUI_DATA=str(tmp_path / "data"), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "akh_tui.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("args, named", [
    ([b"agent", b"run", b"--goals", b"Find \xffmammals", b"--max-cycles", b"1"], b"--goals"),
    ([b"agent", b"cycle", b"--goal=Find \xfe"], b"--goal"),
    ([b"agent", b"resume", b"--branch", b"\xff\xfe"], b"--branch"),
    ([b"sessions", b"search", b"1", b"whale\xff"], b"argument 4"),
    ([b"sessions", b"import", b"tr\xffce.jsonl"], b"argument 3"),
    ([b"sessions", b"compare", b"1:ma\xffn", b"1"], b"argument 3"),
])
def test_arguments_that_are_not_utf8_exit_2_naming_the_argument(tmp_path, args, named):
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"Traceback" not in proc.stderr
    assert b"field '" + named + b"'" in proc.stderr and b"not UTF-8" in proc.stderr
    assert not (tmp_path / "data" / "session.db").exists()  # refused before anything is opened
