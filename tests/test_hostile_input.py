"""Hostile input (issue 17, items 11-14): work and sizes stay bounded, bad bytes and deep
nesting are refused with exit 2 or a clear message, never a traceback or a hang."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import textwrap
import time
import tracemalloc
import warnings
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError, InputWarning, parse_toml
from akh_tui.engine.goals.goal import MAX_GOAL_TEXT, make_goal
from akh_tui.engine.knowledge import kg as kg_module
from akh_tui.engine.knowledge.kg import MAX_TRIPLE_BYTES, MAX_TRIPLE_LINES, KnowledgeGraph, read_triple_file
from akh_tui.engine.psyche.model import Psyche
from akh_tui.engine.psyche.parts import CAPABILITIES, Shadow, ShadowPattern
from akh_tui.engine.tools.specs import DANGER_LEVELS
from akh_tui.engine.knowledge.rules import WORK_PER_CALL, RuleEngine, load_rules, parse_rules
from akh_tui.engine.tools.builtins import find_path, find_program

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
    # 2,000 facts: today's single call examines 8M pairs (67 s in the run); bounded,
    # each call does at most WORK_PER_CALL and the run stays responsive
    kg = rel_graph(2000)
    eng = RuleEngine(kg, quiet_rules(CROSS))
    t0 = time.perf_counter()
    assert eng.run(1) == []  # every conclusion is already known
    assert eng.probed + eng.joined <= WORK_PER_CALL
    assert time.perf_counter() - t0 < 5  # generous: the budget is tens of milliseconds
    left = eng.pending()
    for c in range(2, 6):
        eng.run(c)
        assert eng.probed + eng.joined <= WORK_PER_CALL and 0 < eng.pending() <= left  # carried on
        left = eng.pending()
    # and it ends: every pair is tried, over about |facts|² / budget calls
    small = rel_graph(300)
    eng = RuleEngine(small, quiet_rules(CROSS))
    calls = 0
    while eng.pending():
        eng.run(1)
        assert eng.probed + eng.joined <= WORK_PER_CALL
        calls += 1
    assert calls >= 2 * 300 * 300 // WORK_PER_CALL  # nothing was skipped to make it fast


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
        for bundled in (ROOT / "akh_tui" / "data" / "rules").glob("*.toml"):
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


# ---- 12: goal text: linear-time extraction, capped length -----------------------------------

# the path rule as it was (a backtracking regex): find_path must find exactly what it found
OLD_PATH = re.compile(r"(?<![\w/.:])((?:[\w.-]+/)*[\w-]+\.[A-Za-z][\w]{0,5}|(?:[\w.-]+/)+[\w.-]+)(?![\w/])")


def old_find_path(text: str) -> str | None:
    m = OLD_PATH.search(text.replace("`", " "))
    return m.group(1) if m else None


def test_find_path_finds_what_the_old_regex_found():
    rng = random.Random(17)
    alphabet = ["a", "b", "x", "1", "_", ".", ".", "-", "-", "/", "/", ":", " ", "`", "é", "txt", "py",
                "abcdefg", "Z", "notes/", "data.tsv", "http://"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert find_path(text) == old_find_path(text), repr(text)
    for text in ("Read notes/today.md please", "write `out/report.txt`", "see ./a/b-c/", "a-b.tsv:3",
                 "http://x.org/a.html", "v1.2.3", "data/zoo.tsv, then data/solar.tsv"):
        assert find_path(text) == old_find_path(text)


def test_path_and_program_extraction_are_linear_time():
    hostile = "-." * 50_000  # 100 KB: about 15 s with the backtracking regex (quadratic)
    t0 = time.perf_counter()
    assert find_path(hostile) is None
    assert find_path("a/" * 50_000 + "b.txt") == "a/" * 50_000 + "b.txt"
    # shlex on a 1 MB backquoted command took 20 s: a command line that long is not split
    assert find_program(["ls"])("`ls " + "x" * 1_000_000 + "` and `ls -l`") == ["ls", "-l"]
    assert time.perf_counter() - t0 < 5  # generous: linear is well under a second


def test_goal_text_is_capped_with_an_error_naming_the_field():
    make_goal(0, "Find " + "x" * (MAX_GOAL_TEXT - 5))  # at the cap: fine
    with pytest.raises(InputError) as info:
        make_goal(0, "Find " + "x" * MAX_GOAL_TEXT)
    assert info.value.field == "description" and f"at most {MAX_GOAL_TEXT:,}" in str(info.value)
    with pytest.raises(InputError) as info:
        make_goal(0, "Find whales", "whale " * 1000)
    assert info.value.field == "criteria"


def test_a_long_goal_is_refused_by_the_cli_and_in_a_scenario_file(tmp_path):
    proc = run_cli(["agent", "run", "--goals", "Find " + "x" * 5000, "--max-cycles", "1"], tmp_path)
    assert proc.returncode == 2 and b"field '--goals'" in proc.stderr and b"too long" in proc.stderr
    proc = run_cli(["agent", "cycle", "--goal", "Find " + "x" * 5000], tmp_path)
    assert proc.returncode == 2 and b"field '--goal'" in proc.stderr
    (tmp_path / "facts.tsv").write_text("a\trel\tb\n")
    (tmp_path / "s.toml").write_text(
        'name = "s"\nkg = ["facts.tsv"]\n\n[[goals]]\ndescription = "' + "y" * 5000 + '"\n'
    )
    proc = run_cli(["agent", "run", "--scenario", str(tmp_path / "s.toml"), "--max-cycles", "1"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert b"s.toml:5: field 'goals[0].description': too long: 5,000 characters" in proc.stderr


def test_the_workbench_add_goal_dialog_refuses_a_long_goal(workbench):
    from akh_tui.tui.app import Workbench  # noqa: F401  (the fixture builds one)
    from tests.helpers import drive

    async def script(app, pilot):
        before = len(app.ctl.view()["goals"])
        await pilot.press("g")
        app.screen.query_one("#goal-description").value = "Find " + "x" * 5000
        await pilot.press("enter")
        await pilot.pause()
        shown = str(app.screen.query_one("#goal-error").render())
        assert "description" in shown and "too long" in shown  # kept open, nothing added
        assert len(app.ctl.view()["goals"]) == before

    drive(workbench("zoo"), script)


# ---- 13: size caps: veto patterns matched together, triple files ----------------------------

def test_ten_thousand_vetoes_are_matched_together_with_the_same_first_veto():
    pats = [ShadowPattern(f"v{i}", [f"never-{i} "]) for i in range(10_000)]
    pats.insert(7_000, ShadowPattern("late", ["input=whale"]))
    pats.append(ShadowPattern("by-danger", [], [], "critical"))
    shadow = Shadow(pats, [])
    desc = "tool=kg_query input=whale"
    assert shadow.check_veto(desc, ("read_kg",), "safe").name == "late"
    assert shadow.check_veto("tool=shell_exec input=ls", ("process_exec",), "critical").name == "by-danger"
    assert shadow.check_veto("tool=kg_query input=orca", ("read_kg",), "safe") is None
    t0 = time.perf_counter()
    for _ in range(100):
        shadow.check_veto(desc, ("read_kg",), "safe")
    per_check = (time.perf_counter() - t0) / 100
    # one by one: ~10 ms a check here (83 ms a cycle in the run); together: ~0.05 ms
    assert per_check < 0.002, f"{per_check * 1000:.2f} ms per check"


def test_matching_together_gives_what_one_by_one_gives():
    rng = random.Random(13)
    words = ["rm", "-rf", "drop", "tool=", "kg_query", "ÉTÉ", "ß", "ss", "İ", "a", "ab", "ba", " "]
    for _ in range(1500):
        pats = []
        for i in range(rng.randint(0, 10)):
            trig = ["".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 3))]
            caps = rng.sample(CAPABILITIES, rng.randint(0, 2))
            thr = rng.choice([None, None, *DANGER_LEVELS])
            pats.append(ShadowPattern(f"p{i}", trig or ["zz"], caps, thr, round(rng.random(), 2)))
        shadow = Shadow(pats, list(pats))
        desc = "tool=" + rng.choice(["kg_query", "shell_exec"]) + " input=" + "".join(
            rng.choice(words) for _ in range(rng.randint(0, 6)))
        caps = tuple(rng.sample(CAPABILITIES, rng.randint(0, 3)))
        danger = rng.choice(DANGER_LEVELS)
        firing = [p for p in pats if p.matches(desc, caps, danger)]
        assert shadow.check_veto(desc, caps, danger) is (firing[0] if firing else None)
        total = 0.0
        for p in firing:
            total += p.severity
        assert shadow.check_bias(desc, caps, danger) == (round(total, 6), [p.name for p in firing])


def test_an_edited_pattern_list_is_matched_as_it_now_is():
    p = Psyche.default()
    assert p.shadow.check_veto("tool=kg_query input=x", ("read_kg",), "safe") is None
    vetoed = p.with_veto_for_tool("kg_query")  # a copy with one more pattern
    assert vetoed.shadow.check_veto("tool=kg_query input=x", ("read_kg",), "safe").name == "no_kg_query"
    assert p.shadow.check_veto("tool=kg_query input=x", ("read_kg",), "safe") is None
    p.shadow.veto_patterns = [ShadowPattern("new", ["input=x"])]
    assert p.shadow.check_veto("tool=kg_query input=x", ("read_kg",), "safe").name == "new"


def test_a_triple_file_past_the_cap_is_refused_naming_file_and_line(tmp_path, monkeypatch):
    assert MAX_TRIPLE_LINES == 200_000 and MAX_TRIPLE_BYTES == 32 * 2**20  # a 1M-line file took 2.8 GB
    monkeypatch.setattr(kg_module, "MAX_TRIPLE_LINES", 20_000)  # the same code, a tenth of the time
    monkeypatch.setattr(kg_module, "MAX_TRIPLE_BYTES", 2**20)
    big = tmp_path / "big.tsv"
    big.write_text("".join(f"e{i}\tr\to\n" for i in range(25_000)))
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as info:
            KnowledgeGraph().load_files([big])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert info.value.file == str(big) and info.value.line == 20_001
    assert "at most 20,000" in str(info.value)
    assert peak < 12 * 2**20  # a line at a time: the parsed triples, not the text on top of them
    # the caps cover the files of one load together
    half = tmp_path / "half.tsv"
    half.write_text("".join(f"h{i}\tr\to\n" for i in range(10_001)))
    with pytest.raises(InputError) as info:
        KnowledgeGraph().load_files([half, half])
    assert "together" in str(info.value) and (info.value.file, info.value.line) == (str(half), 10_000)
    # bytes: one endless line (a device, or a file with no newline) stops at the byte cap
    with pytest.raises(InputError, match="more than 1,048,576 bytes"):
        read_triple_file(Path("/dev/zero"))


# ---- 14: a deeply nested user config: the workbench starts and says why it was ignored ------

def test_nesting_is_refused_before_it_reaches_tomllib():
    with pytest.raises(InputError) as info:
        parse_toml("a" + ".a" * 100_000 + " = 1\n", "f.toml")  # tomllib: quadratic memory, killed
    assert info.value.line == 1
    with pytest.raises(InputError) as info:
        parse_toml("x = 1\n[t]\nk = " + "[" * 50 + "]" * 50 + "\n", "f.toml")
    assert (info.value.line, info.value.field) == (3, "t.k") and "nested too deeply" in str(info.value)
    brackets = "[" * 44  # inside a string or a comment they open nothing
    assert parse_toml(f's = "{brackets}"  # {brackets}\n', "f.toml") == {"s": brackets}


def test_a_deeply_nested_user_config_is_ignored_and_the_workbench_says_why(tmp_path, monkeypatch):
    from tests.helpers import drive
    from akh_tui.tui.app import Workbench
    from akh_tui.engine.runs.userconfig import UserConfig

    cfg = tmp_path / "config.toml"
    cfg.write_text('theme = "akh-light"\n[llm]\nx = ' + "[" * 5000 + "]" * 5000 + "\n")
    monkeypatch.setenv("AKH_TUI_CONFIG", str(cfg))
    loaded = UserConfig.load()
    assert loaded.error and loaded.error.startswith(f"config ignored: {cfg}:3:")
    assert "nested too deeply" in loaded.error and loaded.theme is None
    app = Workbench("zoo", sync=True)  # reads the config itself, as `akh-tui` does
    notes = []
    app.notify = lambda message, **kw: notes.append(message)

    async def script(app, pilot):
        await pilot.press("space")  # it runs
        await pilot.pause()
        assert app.ctl.cycle == 1

    drive(app, script)
    assert any(n.startswith("config ignored:") and "nested too deeply" in n for n in notes)
    assert cfg.read_text().startswith('theme = "akh-light"\n')  # never overwritten


def test_a_model_reply_nested_too_deeply_is_rejected_not_a_traceback():
    from akh_tui.engine.llm.decider import IntentRejected, parse_reply

    for reply in ("[" * 100_000, "```json\n" + "{\"a\": " * 100_000 + "\n```"):
        with pytest.raises(IntentRejected, match="nested too deeply"):
            parse_reply(reply, frozenset({"kg_query"}))


def test_a_goal_at_the_cap_keeps_cycle_records_small():
    import json

    from akh_tui.engine.runs.scenario import build_agent, load_scenario

    agent = build_agent(load_scenario("zoo"), goals=[])
    agent.add_goal("Find " + "whale " * ((MAX_GOAL_TEXT - 5) // 6), "mammal " * (MAX_GOAL_TEXT // 7), emit=False)
    record = agent.step()
    # the goal travels in each record (a 1 MB goal stored 2 MB a cycle); at the cap, a few KB
    assert len(json.dumps(record)) < 32 * 1024
