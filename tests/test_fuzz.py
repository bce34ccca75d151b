"""Fuzzed input handling (issue 6): psyche TOML, scenario TOML, rule files, triple files,
trace files and CLI arguments never end in a traceback.

Properties, for every kind of input:
- parsing either succeeds or raises InputError, nothing else (no KeyError, TypeError,
  ValueError, IndexError, RecursionError, UnicodeError, OSError ...);
- the InputError's message names the file; when the TOML/JSON is syntactically valid but
  semantically wrong its ``field`` is set; its ``line``, when set, is within the file;
- valid psyche files round-trip through load and save with their values and comments kept.

Each kind has two strategies: (a) garbage (arbitrary text or bytes) and mutations of a valid
file (delete / duplicate / replace / swap a line, flip a character, change a value's type,
unknown keys, NUL bytes, very long lines, deep nesting, unicode), and (b) documents built
from the schema with random values, some in range and some out of range.

A trace line that is JSON but not an object, and an empty trace, have no field to name:
the field property applies to traces whose lines are all JSON objects.

Scenarios that load are built into an agent that runs three cycles (with no network and no
program but echo/true, whatever the config says). CLI argument lists always hold a
sub-command (the workbench is never started), cap --max-cycles at 3, and write only into a
temporary folder (cwd, --data-dir, --trace, $HOME, $AKH_TUI_DATA, $AKH_TUI_CONFIG).
What fuzzing found is pinned at the end as plain examples (test_found_*).

Profiles: "ci" (100 examples per test, deterministic; the default) and "fuzz" (1,000 per
test, random, with a summary of how many inputs each kind tried and how many were invalid;
AKH_TUI_FUZZ_STATS=FILE also writes the counts as JSON). Run the fuzz profile by hand:

    AKH_TUI_FUZZ=1 .venv/bin/pytest tests/test_fuzz.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import string
import tempfile
import tomllib
from collections import Counter
from pathlib import Path

import pytest
import tomlkit
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from akh_tui.cli import root as cli
from akh_tui.engine.config import DEFAULT_CAPABILITIES, AgentConfig
from akh_tui.engine.errors import InputError
from akh_tui.engine.knowledge.kg import KnowledgeGraph, parse_triple_lines
from akh_tui.engine.psyche.model import Psyche
from akh_tui.engine.psyche.parts import ARCHETYPES, CAPABILITIES, DEFAULT_TOML
from akh_tui.engine.tools.specs import DANGER_LEVELS
from akh_tui.engine.knowledge.rules import RuleEngine, parse_rules
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from akh_tui.engine.tools.builtins import TOOL_NAMES
from akh_tui.engine.store.trace import RECORD_TYPES, read_trace

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "akh_tui" / "data"

_HEALTH = [
    HealthCheck.too_slow,
    HealthCheck.data_too_large,
    HealthCheck.filter_too_much,
    HealthCheck.large_base_example,
]
settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, database=None,
    suppress_health_check=_HEALTH,
)
settings.register_profile("fuzz", max_examples=1000, deadline=None, suppress_health_check=_HEALTH)
FUZZ = os.environ.get("AKH_TUI_FUZZ") == "1"
settings.load_profile("fuzz" if FUZZ else "ci")

# kind -> Counter(tried=..., invalid=...): printed at the end of a fuzz run
STATS: dict[str, Counter] = {}


def count(kind: str, invalid: bool) -> None:
    c = STATS.setdefault(kind, Counter())
    c["tried"] += 1
    c["invalid"] += int(invalid)


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if not STATS:
        return
    lines = ["", "fuzz inputs per kind (tried / invalid):"]
    for kind in sorted(STATS):
        c = STATS[kind]
        extra = "".join(f"  {v:>6} {k}" for k, v in c.items() if k not in ("tried", "invalid"))
        lines.append(f"  {kind:<10} {c['tried']:>6} tried  {c['invalid']:>6} invalid{extra}")
    out = "\n".join(lines)
    path = os.environ.get("AKH_TUI_FUZZ_STATS")
    if path:
        Path(path).write_text(json.dumps({k: dict(v) for k, v in STATS.items()}), encoding="utf-8")
    if FUZZ:
        capman = request.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            print(out)


# ---------------------------------------------------------------------------------------
# The world the inputs refer to: real triple, rule and psyche files, a real trace, a session
# ---------------------------------------------------------------------------------------

SMALL_TSV = """\
# A small real graph.
dog\tis-a\tmammal
cat\tis-a\tmammal
mammal\tis-a\tanimal
whale\thas-property\tgives-milk
whale\tlives-in\tocean\t0.9
shark\tlives-in\tocean
mammal\thas-property\twarm-blooded\t0.75
"""

BAD_TSV = "dog\tis-a\tmammal\nthis line has no tabs\n"

FULL_SCENARIO = """\
# Every key a scenario may have.
name = "full"
description = "all keys"
seed = 5
kg = ["../kg/small.tsv", "../kg/zoo.tsv"]
rules = ["../rules/biology.toml"]

[[goals]]
description = "Find mammals"
priority = 200

[[goals]]
description = "Classify whales"
criteria = "(whale is-a mammal), ocean"

[psyche]
file = "../psyche/default.toml"

[config]
wm_capacity = 20
stall_threshold = 2
reflection_interval = 2
vsa_dim = 512
completion_threshold = 0.5
http_timeout = 1.5
shell_allow = ["echo"]

[config.capabilities]
read_fs = true
write_fs = true

[answers]
"*" = ["whale is-a mammal"]
"Find mammals" = "dog is-a mammal"
"""

RICH_RULES = """\
# transitive / symmetric / inherit, and two rules
transitive = ["is-a", "part-of"]
symmetric = ["near"]
inherit = ["lives-in"]

[[rule]]
name = "milk"
if = [["?x", "has-property", "gives-milk"]]
then = [["?x", "is-a", "mammal"]]

[[rule]]
if = [["?a", "lives-in", "?b"], ["?c", "lives-in", "?b"]]
then = [["?a", "near", "?c"]]
"""

INLINE_PSYCHE = """\
# Patterns as inline tables, sections partly left out.
[persona]
name = 'Plain'   # literal string
traits = []

[shadow]
veto_patterns = [{name = "x", triggers = ["drop \\"all\\""], severity = 0.5}]
bias_patterns = []

[archetypes]
sage = 1
guardian = 0.0
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A copy of the data layout (kg/, rules/, psyche/, scenarios/) plus fixtures."""
    w = tmp_path_factory.mktemp("world")
    for sub in ("kg", "rules", "psyche", "scenarios"):
        shutil.copytree(DATA / sub, w / sub)
    (w / "kg" / "small.tsv").write_text(SMALL_TSV, encoding="utf-8")
    (w / "kg" / "bad.tsv").write_text(BAD_TSV, encoding="utf-8")
    (w / "rules" / "rich.toml").write_text(RICH_RULES, encoding="utf-8")
    (w / "rules" / "bad.toml").write_text("[[rule]]\nname = 3\n", encoding="utf-8")
    (w / "psyche" / "inline.toml").write_text(INLINE_PSYCHE, encoding="utf-8")
    (w / "psyche" / "bad.toml").write_text("[archetypes]\nsage = 2\n", encoding="utf-8")
    (w / "scenarios" / "full.toml").write_text(FULL_SCENARIO, encoding="utf-8")
    (w / "scenarios" / "broken.toml").write_text("name = \n", encoding="utf-8")
    (w / "binary.bin").write_bytes(b"\xff\xfe\x00garbage\x80")
    (w / "work").mkdir()
    # a real trace: header, cycles and events
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        rc = cli.main(["agent", "run", "--scenario", str(w / "scenarios" / "full.toml"), "--max-cycles", "6",
                       "--data-dir", str(w / "session"), "--trace", str(w / "trace.jsonl"), "--json"])
    assert rc == 0
    (w / "corrupt-session").mkdir()
    (w / "corrupt-session" / "session.db").write_bytes(b"SQLite format 3\x00" + b"\x07" * 500)
    return w


def world_texts(world, *rel: str) -> list[str]:
    return [(world / r).read_text(encoding="utf-8") for r in rel]


# ---------------------------------------------------------------------------------------
# Shared strategies: garbage, mutations, out-of-range values
# ---------------------------------------------------------------------------------------

ODD_CHARS = "\x00\t\r\n\x0b\x0c\x1c\x1e\x7f\x85\xa0\u00e9\u0301\u200b\u200f\u2028\u2029\ufeff\uffff日本🦀\"'\\#=[]{},.-_?:"
# Any character a UTF-8 file can hold (lone surrogates cannot be written to one)
any_char = st.characters(codec="utf-8")
odd_text = st.text(alphabet=st.one_of(any_char, st.sampled_from(ODD_CHARS)), max_size=40)
long_text = st.builds(lambda c, n: c * n, st.sampled_from(["x", "é", "日", "\\", "\"", "[", " "]),
                      st.integers(1000, 30_000))

# TOML values of every type, in and out of every field's range
TOML_VALUES = [
    '"text"', '""', '" "', "0", "-1", "1", "2", "255", "256", "64", "7", "1.5", "-0.5", "0.5", "1e400",
    "nan", "inf", "-inf", "true", "false", "[]", "{}", '["a", 1]', '["a"]', "[[1]]", "[{}]",
    "1979-05-27T07:32:00Z", "1979-05-27", "07:32:00", '"\\u0000"', "9223372036854775807",
    "-9223372036854775808", '"é日本🦀"', "{a = 1}", '"goal:1"', '"?x"', '"?"', '["?x", "is-a", "?y"]',
    '[["?x", "is-a", "?y"]]', '"critical"', '"sage"', '"process_exec"', "1" * 400, "1" * 5000,
    '"""multi\nline"""', "'literal'", '"../kg/zoo.tsv"', '"/etc"', '"\\\\"',
]


def toml_value_change(line: str, value: str) -> str | None:
    m = re.match(r"^(\s*[^=#\[\s][^=]*=\s*)", line)
    return m.group(1) + value if m else None


@st.composite
def mutated(draw, seeds: list[str], fmt: str):
    """A valid file with 1-4 edits. fmt: 'toml', 'tsv' or 'json' (chooses value edits)."""
    text = draw(st.sampled_from(seeds))
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from([
            "delete", "duplicate", "replace", "swap", "flip", "value", "value", "unknown", "nul",
            "long", "unicode", "deep", "truncate", "crlf", "insert",
        ]))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if not lines:
            lines = [""]
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "replace":
            lines[i] = draw(odd_text)
        elif op == "insert":
            lines.insert(i, draw(odd_text))
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "flip" and lines[i]:
            k = draw(st.integers(0, len(lines[i]) - 1))
            c = draw(st.one_of(any_char, st.sampled_from(ODD_CHARS)))
            lines[i] = lines[i][:k] + c + lines[i][k + 1:]
        elif op == "value":
            lines[i] = _change_value(draw, lines[i], fmt)
        elif op == "unknown":
            lines.insert(i, draw(st.sampled_from({
                "toml": ["unknown_key = 1", "[unknown]", "[[unknown]]", 'a.b.c = "x"', "[persona.extra]",
                         "[config.capabilities]\nteleport = true", "[[goals]]\nmood = 1", "[[rule]]\nwhen = []"],
                "tsv": ["a\tb\tc\td\te", "a\tb", "unknown"],
                "json": ['{"type": "unknown", "v": 1}', '{"v": 1}', '{"type": "cycle", "v": 1, "extra": 1}',
                         '{"type": "run"}', "[]", "1", '"x"', "null"],
            }[fmt])))
        elif op == "nul":
            k = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:k] + "\x00" + lines[i][k:]
        elif op == "long":
            lines.insert(i, draw(st.sampled_from(["", "k = \"", "# ", "a\tb\t", '{"type": "'])) + draw(long_text))
        elif op == "unicode":
            k = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:k] + draw(st.text(alphabet=st.sampled_from(ODD_CHARS), min_size=1, max_size=5)) + lines[i][k:]
        elif op == "deep":
            n = draw(st.sampled_from([50, 600, 2000, 20_000]))
            lines.insert(i, {"toml": "deep = " + "[" * n + "]" * n, "tsv": "[" * n,
                             "json": '{"type": ' + "[" * n + "]" * n + "}"}[fmt])
        elif op == "truncate":
            lines = lines[: i + 1]
            if lines[-1]:
                lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
        elif op == "crlf":
            lines[i] = lines[i] + "\r"
    return "\n".join(lines)


def _change_value(draw, line: str, fmt: str) -> str:
    if fmt == "toml":
        return toml_value_change(line, draw(st.sampled_from(TOML_VALUES))) or line
    if fmt == "tsv":
        parts = line.split("\t")
        k = draw(st.integers(0, len(parts)))
        value = draw(st.one_of(st.sampled_from(["", " ", "nan", "1e999", "-0.1", "1.5", "0.3", "abc", "goal:1", "１"]),
                               odd_text))
        if k == len(parts):
            parts.append(value)
        else:
            parts[k] = value
        return "\t".join(parts)
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return line
    if not isinstance(obj, dict) or not obj:
        return line
    key = draw(st.sampled_from(sorted(obj)))
    if draw(st.booleans()):
        del obj[key]
    else:
        obj[key] = draw(json_values)
    return json.dumps(obj, ensure_ascii=draw(st.booleans()))


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10),
              st.sampled_from(list(RECORD_TYPES) + [1, 1.0, True])),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=12,
)

# Any TOML-representable value: a wrong type (or an out-of-range number) for almost any field
toml_leaf = st.one_of(
    st.booleans(), st.integers(-(2**63), 2**63 - 1), st.floats(), st.text(max_size=12), odd_text,
    st.dates(), st.times(), st.datetimes(),
    st.sampled_from([-1, 0, 1, 2, 256, 2**40, -0.001, 1.0000001, 1.5, float("nan"), float("inf"), "", " "]),
)
toml_any = st.recursive(
    toml_leaf,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=8), kids, max_size=3)),
    max_leaves=8,
)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@st.composite
def corrupted(draw, doc, bad=toml_any):
    """0-2 corruptions of a schema-valid document: a wrong value, a deleted or unknown key."""
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 1, 2]))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        op = draw(st.sampled_from(["value", "value", "delete", "unknown"]))
        if op == "value":
            parent[path[-1]] = draw(bad)
        elif op == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["unknown", "Name", "extra_key", "é"]))] = draw(bad)
    return doc


def render_toml(doc: dict) -> str:
    try:
        return tomlkit.dumps(doc)
    except Exception:  # tomlkit cannot write some values (e.g. a time with a timezone)
        assume(False)
        raise


def n_lines(text: str) -> int:
    return text.count("\n") + 1


def check_error(exc: InputError, file: str, text: str, syntactically_valid: bool) -> None:
    assert file in str(exc), f"message does not name the file {file!r}: {exc}"
    if exc.line is not None:
        assert 1 <= exc.line <= n_lines(text), f"line {exc.line} outside 1..{n_lines(text)}: {exc}"
    if syntactically_valid:
        assert exc.field, f"semantic error without a field: {exc}"


def toml_valid(text: str, tomlkit_too: bool = False) -> bool:
    try:
        tomllib.loads(text)
        if tomlkit_too:
            tomlkit.parse(text)
    except Exception:
        return False
    return True


# ---------------------------------------------------------------------------------------
# Psyche TOML
# ---------------------------------------------------------------------------------------

PSYCHE_FILE = "psyche.toml"


def check_psyche(text: str) -> None:
    try:
        p = Psyche.from_toml(text, file=PSYCHE_FILE)
    except InputError as exc:
        count("psyche", True)
        check_error(exc, PSYCHE_FILE, text, toml_valid(text, tomlkit_too=True))
        return
    count("psyche", False)
    # whatever loads saves and loads again to the same values
    assert Psyche.from_toml(p.to_toml(), file=PSYCHE_FILE) == p


psyche_seeds = [DEFAULT_TOML, INLINE_PSYCHE, "", "[persona]\nname = \"x\"\n"]


@given(st.one_of(st.text(), odd_text, mutated(psyche_seeds, "toml")))
def test_psyche_garbage_and_mutations(text):
    check_psyche(text)


unit = st.floats(0.0, 1.0)
safe_text = st.text(alphabet=any_char, min_size=1, max_size=20).filter(str.strip)


@st.composite
def psyche_doc(draw):
    def pattern(name):
        p = {"name": name}
        if draw(st.booleans()):
            p["triggers"] = draw(st.lists(safe_text, max_size=3))
        if draw(st.booleans()):
            p["capability_triggers"] = draw(st.lists(st.sampled_from(CAPABILITIES), max_size=2, unique=True))
        if draw(st.booleans()):
            p["danger_level_threshold"] = draw(st.sampled_from(DANGER_LEVELS))
        if draw(st.booleans()):
            p["severity"] = draw(unit)
        if draw(st.booleans()):
            p["explanation"] = draw(st.text(max_size=20))
        return p

    doc = {}
    if draw(st.booleans()):
        doc["persona"] = {"name": draw(safe_text), "grammar_preference": draw(safe_text),
                          "traits": draw(st.lists(st.text(max_size=8), max_size=3)),
                          "tone": draw(st.lists(st.text(max_size=8), max_size=3))}
    if draw(st.booleans()):
        names = draw(st.lists(safe_text, max_size=4, unique=True))
        k = draw(st.integers(0, len(names)))
        doc["shadow"] = {"veto_patterns": [pattern(n) for n in names[:k]],
                         "bias_patterns": [pattern(n) for n in names[k:]]}
    if draw(st.booleans()):
        doc["archetypes"] = {a: draw(unit) for a in ARCHETYPES if draw(st.booleans())}
    if draw(st.booleans()):
        doc["self_integration"] = {
            "individuation_level": draw(unit),
            "last_evolution_cycle": draw(st.integers(0, 2**63 - 1)),
            "shadow_encounters": draw(st.integers(0, 10**6)),
            "rebalance_count": draw(st.integers(0, 10**6)),
            "dominant_archetype": draw(st.sampled_from(ARCHETYPES)),
        }
    return render_toml(draw(corrupted(doc)))


@given(psyche_doc())
def test_psyche_structured(text):
    check_psyche(text)


# -- valid psyche: load, change through the API, save, load: values and comments kept ----

SAFE_ALPHABET = string.ascii_letters + string.digits + " _-.,:;!?'\"\\/()[]{}#=é日本🦀ßΩ\t"
safe_str = st.text(alphabet=SAFE_ALPHABET, min_size=1, max_size=16).filter(lambda s: s.strip())
comment = st.text(alphabet=SAFE_ALPHABET.replace("\t", ""), max_size=30).map(lambda s: "# " + s)


def toml_str(s: str, literal: bool) -> str:
    """A TOML string: a literal one when asked and possible, else a basic one with escapes."""
    if literal and "'" not in s and "\t" not in s:
        return f"'{s}'"
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_float(x: float, as_int: bool) -> str:
    return str(int(x)) if as_int and x in (0.0, 1.0) else repr(x)


@st.composite
def commented_psyche(draw):
    """(text, comment lines, inline comments) of a valid, hand-written-looking psyche file."""
    full, inline = [], []

    def toml_str_(v):
        return toml_str(v, draw(st.booleans()))

    def toml_float_(v):
        return toml_float(v, draw(st.booleans()))

    def c():
        line = draw(comment)
        full.append(line)
        return line

    def tail():
        if draw(st.booleans()):
            t = draw(comment)
            inline.append(t)
            return "   " + t
        return ""

    out = [c(), c()]
    if draw(st.booleans()):
        out += ["", "[persona]", c(), f"name = {toml_str_(draw(safe_str))}{tail()}",
                f"grammar_preference = {toml_str_(draw(safe_str))}",
                "traits = [" + ", ".join(toml_str_(t) for t in draw(st.lists(safe_str, max_size=3))) + "]" + tail()]
    names = draw(st.lists(safe_str, max_size=5, unique=True))
    k = draw(st.integers(0, len(names)))
    if names or draw(st.booleans()):
        out += ["", "[shadow]", c()]
        groups = (("veto_patterns", names[:k]), ("bias_patterns", names[k:]))
        for key, group in groups:  # plain keys before the [[shadow.x]] tables
            if not group and draw(st.booleans()):
                out.append(f"{key} = []{tail()}")
        for key, group in groups:
            for name in group:
                out += ["", c(), f"[[shadow.{key}]]", f"name = {toml_str_(name)}{tail()}",
                        "triggers = [" + ", ".join(toml_str_(t) for t in draw(st.lists(safe_str, min_size=1, max_size=3))) + "]",
                        f"severity = {toml_float_(draw(unit))}{tail()}"]
                if draw(st.booleans()):
                    out.append(f"danger_level_threshold = {toml_str_(draw(st.sampled_from(DANGER_LEVELS)))}")
                if draw(st.booleans()):
                    out.append(f"explanation = {toml_str_(draw(safe_str))}")
    if draw(st.booleans()):
        out += ["", "[archetypes]", c()]
        for a in ARCHETYPES:
            if draw(st.booleans()):
                out.append(f"{a} = {toml_float_(draw(unit))}{tail()}")
    if draw(st.booleans()):
        out += ["", "[self_integration]", c(),
                f"individuation_level = {toml_float_(draw(unit))}{tail()}",
                f"shadow_encounters = {draw(st.integers(0, 2**31))}", c()]
    out.append(c())
    return "\n".join(out) + "\n", full, inline


@given(commented_psyche(), st.sampled_from(ARCHETYPES), unit,
       st.one_of(st.sampled_from(TOOL_NAMES), safe_str), st.booleans())
def test_valid_psyche_round_trips_with_comments(doc, archetype, weight, tool, evolve):
    text, comment_lines, inline_comments = doc
    p = Psyche.from_toml(text, file=PSYCHE_FILE)
    count("psyche", False)
    p.archetypes[archetype] = weight
    p = p.with_veto_for_tool(tool)
    if evolve:
        p.record_shadow_encounter()
        p.evolve({"kg_query": (3, 3), "shell_exec": (4, 0)},
                 {"kg_query": "sage", "shell_exec": "explorer"}, cycle=7)
    saved = p.to_toml()
    back = Psyche.from_toml(saved, file=PSYCHE_FILE)
    assert back == p
    assert back.to_dict() == p.to_dict()
    saved_lines = {ln.strip() for ln in saved.split("\n")}
    for line in comment_lines:
        assert line.strip() in saved_lines, f"comment lost: {line!r}"
    for tail in inline_comments:
        assert tail in saved, f"inline comment lost: {tail!r}"
    # and saving again changes nothing
    assert back.to_toml() == saved


# ---------------------------------------------------------------------------------------
# Scenario TOML (load, then build an agent and run three cycles)
# ---------------------------------------------------------------------------------------

def decoded(data) -> tuple[str, bool]:
    """(text, whether it is UTF-8) of generated str or bytes."""
    if isinstance(data, str):
        return data, True
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", errors="replace"), False


def write(path: Path, data) -> None:
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8", newline="")
    else:
        path.write_bytes(data)


def check_scenario(world, data) -> None:
    text, utf8 = decoded(data)
    path = world / "scenarios" / "fuzz.toml"  # beside the bundled ones: "../kg/zoo.tsv" resolves
    write(path, data)
    try:
        sc = load_scenario(str(path))
    except InputError as exc:
        count("scenario", True)
        check_error(exc, str(path), text, utf8 and toml_valid(text))
        return
    count("scenario", False)
    cfg = sc.config
    assert 64 <= cfg.vsa_dim <= 65536, f"accepted vsa_dim {cfg.vsa_dim}"
    # keep the run inside the test: no network, and only a harmless program may run
    cfg.http_allow_hosts = []
    cfg.shell_allow = [x for x in cfg.shell_allow if x in ("echo", "true")]
    try:
        agent = build_agent(sc, workspace=world / "work")
    except InputError as exc:  # a referenced file (triples, rules, psyche) is bad
        assert exc.file, f"error without a file: {exc}"
        return
    for _ in range(3):
        agent.step()
    STATS["scenario"]["agents run"] += 1


scenario_seed_names = ["zoo.toml", "solar.toml", "shadow.toml", "full.toml"]


@given(data=st.data())
def test_scenario_garbage_and_mutations(world, data):
    seeds = world_texts(world, *(f"scenarios/{n}" for n in scenario_seed_names))
    doc = data.draw(st.one_of(st.text(), st.binary(), mutated(seeds, "toml")))
    check_scenario(world, doc)


PATH_VALUES = ["../kg/small.tsv", "../kg/zoo.tsv", "../kg/bad.tsv", "../kg/missing.tsv", "", ".", "../kg",
               "../kg/small.tsv\x00", "x" * 300, "../" * 40 + "etc/hostname", "../binary.bin"]
good_desc = st.one_of(st.sampled_from(["Find mammals", "Classify whales", "Find animals similar to dolphin",
                                       "Run `echo hi`", "Store what lives in the ocean", "Fetch http://x"]),
                      safe_str)
good_criteria = st.one_of(st.sampled_from(["mammal", "(whale is-a mammal)", "(?x lives-in ocean), seal",
                                           "orca and porpoise", "", "(a b)", "((x y z))", "(x"]),
                          st.text(max_size=30))


def _config_values():
    out = {}
    for f, default in AgentConfig().to_dict().items():
        if f == "capabilities":
            out[f] = st.dictionaries(st.sampled_from(list(DEFAULT_CAPABILITIES)), st.booleans())
        elif f == "vsa_dim":
            out[f] = st.sampled_from([64, 128, 512, 1024, 4096])
        elif isinstance(default, bool):
            out[f] = st.booleans()
        elif isinstance(default, int):
            out[f] = st.integers(0, 300)
        elif isinstance(default, float):
            out[f] = st.floats(0, 10)
        elif isinstance(default, list):
            out[f] = st.lists(st.sampled_from(["echo", "true", "example.invalid"]), max_size=2)
        else:
            out[f] = st.sampled_from(["workspace", "w/x", ""])
    return out


CONFIG_VALUES = _config_values()


@st.composite
def scenario_doc(draw):
    doc = {"name": draw(safe_str), "seed": draw(st.integers(0, 2**63 - 1)),
           "kg": draw(st.lists(st.sampled_from(PATH_VALUES[:2]), min_size=1, max_size=2))}
    if draw(st.booleans()):
        doc["rules"] = draw(st.lists(st.sampled_from(["../rules/biology.toml", "../rules/rich.toml",
                                                      "../rules/astronomy.toml"]), max_size=2))
    if draw(st.booleans()):
        doc["description"] = draw(st.text(max_size=20))
    goals = []
    for _ in range(draw(st.integers(1, 3))):
        g = {"description": draw(good_desc)}
        if draw(st.booleans()):
            g["criteria"] = draw(good_criteria)
        if draw(st.booleans()):
            g["priority"] = draw(st.integers(0, 255))
        goals.append(g)
    doc["goals"] = goals
    if draw(st.booleans()):
        doc["psyche"] = {"file": draw(st.sampled_from(["../psyche/default.toml", "../psyche/inline.toml",
                                                       "../psyche/bad.toml"]))}
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(sorted(CONFIG_VALUES)), max_size=6, unique=True))
        doc["config"] = {k: draw(CONFIG_VALUES[k]) for k in keys}
    if draw(st.booleans()):
        doc["answers"] = draw(st.dictionaries(st.sampled_from(["*", "Find mammals"]),
                                              st.one_of(st.text(max_size=20), st.lists(st.text(max_size=20), max_size=2)),
                                              max_size=2))
    bad = st.one_of(toml_any, st.sampled_from(PATH_VALUES), st.lists(st.sampled_from(PATH_VALUES), max_size=2),
                    st.sampled_from([0, 7, 63, 65, -8, 2**40, 2**62, 10**9 * 8, 10**400, float("nan"), float("inf"),
                                     1e300]))
    return render_toml(draw(corrupted(doc, bad)))


@given(world_doc=scenario_doc())
def test_scenario_structured(world, world_doc):
    check_scenario(world, world_doc)


# ---------------------------------------------------------------------------------------
# Rule files (parse, then run forward chaining on a small graph)
# ---------------------------------------------------------------------------------------

RULES_FILE = "rules.toml"


def check_rules(text: str) -> None:
    try:
        rs = parse_rules(text, RULES_FILE)
    except InputError as exc:
        count("rules", True)
        check_error(exc, RULES_FILE, text, toml_valid(text))
        return
    count("rules", False)
    kg = KnowledgeGraph()
    kg.load_parsed(parse_triple_lines(SMALL_TSV.split("\n"), "small.tsv"))
    RuleEngine(kg, rs, max_new_per_call=500).run(1)


@given(data=st.data())
def test_rules_garbage_and_mutations(world, data):
    seeds = world_texts(world, "rules/biology.toml", "rules/astronomy.toml", "rules/rich.toml")
    check_rules(data.draw(st.one_of(st.text(), odd_text, mutated(seeds, "toml"))))


TERMS = ["?x", "?y", "?z", "?", "? ", "is-a", "mammal", "lives-in", "ocean", "has-property", "near",
         "goal:1", "desc:x", "", " ", "?x?", "日本"]
term = st.one_of(st.sampled_from(TERMS), st.text(max_size=6))
triple_pattern = st.lists(term, min_size=3, max_size=3)


@st.composite
def rules_doc(draw):
    doc = {}
    for key in ("transitive", "symmetric", "inherit"):
        if draw(st.booleans()):
            doc[key] = draw(st.lists(st.sampled_from(["is-a", "part-of", "near", "lives-in", "has-property"]),
                                     max_size=3))
    rules = []
    for i in range(draw(st.integers(0, 3))):
        r = {"if": draw(st.lists(triple_pattern, min_size=1, max_size=3)),
             "then": draw(st.lists(triple_pattern, min_size=1, max_size=2))}
        if draw(st.booleans()):
            r["name"] = draw(st.one_of(st.sampled_from(["r", "r2", "transitive", "inherit"]), st.text(max_size=6)))
        rules.append(r)
    if rules:
        doc["rule"] = rules
    return render_toml(draw(corrupted(doc)))


@given(rules_doc())
def test_rules_structured(text):
    check_rules(text)


# ---------------------------------------------------------------------------------------
# Triple files (parse_triple_lines and KnowledgeGraph.load_files)
# ---------------------------------------------------------------------------------------

TSV_FILE = "fuzz.tsv"


def check_triples(world, data) -> None:
    text, _ = decoded(data)
    try:
        parsed = parse_triple_lines(text.split("\n"), TSV_FILE)
    except InputError as exc:
        check_error(exc, TSV_FILE, text, False)
    else:
        KnowledgeGraph().load_parsed(parsed)
    path = world / "work" / TSV_FILE
    write(path, data)
    kg = KnowledgeGraph()
    try:
        kg.load_files([world / "kg" / "small.tsv", path])
    except InputError as exc:
        count("triples", True)
        check_error(exc, str(path), text, False)
        assert len(kg) == 0, "a bad file half-loaded the graph"
    else:
        count("triples", False)


@given(data=st.data())
def test_triples_garbage_and_mutations(world, data):
    seeds = world_texts(world, "kg/zoo.tsv", "kg/solar.tsv", "kg/small.tsv")
    check_triples(world, data.draw(st.one_of(st.text(), st.binary(), odd_text, mutated(seeds, "tsv"))))


label = st.one_of(st.sampled_from(["dog", "is-a", "mammal", "whale", "gives-milk", "goal:1", "desc:x", "", " ",
                                   "日本", "a b", "x" * 500]), st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\t\n"),
                                                                      max_size=10))
confidence = st.one_of(st.floats(0, 1).map(repr), st.floats().map(repr), st.integers(-2, 2).map(str),
                       st.sampled_from(["", " ", "nan", "inf", "1e-400", "0x1", "1_0", "٠.٥", "abc"]))


@st.composite
def triple_doc(draw):
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["triple", "triple", "triple", "conf", "comment", "blank", "fields"]))
        if kind == "comment":
            lines.append(draw(st.sampled_from(["#", "  # x", "#\tt\tt"])))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", "\t", "\r"])))
        elif kind == "fields":
            lines.append("\t".join(draw(st.lists(label, max_size=6))))
        else:
            parts = [draw(label), draw(label), draw(label)] + ([draw(confidence)] if kind == "conf" else [])
            lines.append("\t".join(parts))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    return eol.join(lines) + draw(st.sampled_from(["", eol]))


@given(world_doc=triple_doc())
def test_triples_structured(world, world_doc):
    check_triples(world, world_doc)


# ---------------------------------------------------------------------------------------
# Trace files
# ---------------------------------------------------------------------------------------

def check_trace(world, data) -> None:
    text, utf8 = decoded(data)
    path = world / "work" / "trace.jsonl"
    write(path, data)
    try:
        read_trace(path)
    except InputError as exc:
        count("trace", True)
        check_error(exc, str(path), text, utf8 and _json_lines_valid(text))
    else:
        count("trace", False)


def _json_lines_valid(text: str) -> bool:
    """Records to name a field in: at least one line, and every line a JSON object.

    (A line that is JSON but not an object has no field; neither has an empty file.)
    """
    records = 0
    for line in text.split("\n"):
        if line.strip():
            try:
                if not isinstance(json.loads(line), dict):
                    return False
            except (ValueError, RecursionError):
                return False
            records += 1
    return records > 0


@given(data=st.data())
def test_trace_garbage_and_mutations(world, data):
    seeds = world_texts(world, "trace.jsonl")
    check_trace(world, data.draw(st.one_of(st.text(), st.binary(), mutated(seeds, "json"))))


@st.composite
def trace_doc(draw):
    records = []
    if draw(st.integers(0, 9)):
        records.append({"type": "run", "v": 1, "scenario": draw(st.text(max_size=8)), "seed": draw(st.integers()),
                        "config": {}, "psyche": {}})
    for n in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(RECORD_TYPES))
        rec = {"type": kind, "v": 1, "cycle": n + 1}
        if kind == "cycle":
            rec.update(decide={"tool": "kg_query"}, act={"progress": "advanced"}, goals=[])
        records.append(rec)
    records = draw(corrupted(records, json_values))
    lines = [json.dumps(r, ensure_ascii=draw(st.booleans())) for r in records]
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", "  ", "\r"])))
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@given(world_doc=trace_doc())
def test_trace_structured(world, world_doc):
    check_trace(world, world_doc)


# ---------------------------------------------------------------------------------------
# CLI arguments (in process; every write goes to a temporary directory)
# ---------------------------------------------------------------------------------------

SUBCOMMANDS = {
    ("agent", "run"): ["--scenario", "--goals", "--max-cycles", "--seed", "--trace", "--fresh", "--json", "--data-dir"],
    ("agent", "cycle"): ["--goal", "--scenario", "--trace", "--json", "--data-dir"],
    ("agent", "resume"): ["--max-cycles", "--trace", "--json", "--data-dir", "--branch"],
    ("agent", "fork"): ["--at", "--name", "--set", "--disable", "--goal", "--psyche", "--json", "--data-dir"],
    ("sessions", "list"): ["--json", "--data-dir"],
    ("sessions", "show"): ["--json", "--data-dir"],
    ("sessions", "export"): ["--branch", "--output", "--json", "--data-dir"],
    ("sessions", "import"): ["--json", "--data-dir"],
    ("sessions", "search"): ["--branch", "--json", "--data-dir"],
    ("sessions", "delete"): ["--json", "--data-dir"],
    ("sessions", "compare"): ["--json", "--data-dir"],
    ("sessions",): [],
    ("agent", "plan"): ["--goal", "--scenario", "--json", "--data-dir"],
    ("agent", "reflect"): ["--json", "--data-dir"],
    ("agent", "consolidate"): ["--json", "--data-dir"],
    ("agent", "recall"): ["--query", "--top-k", "--json", "--data-dir"],
    ("agent",): [],
    ("tools",): ["--json"],
    ("psyche", "check"): ["--json"],
    ("psyche",): [],
}
REQUIRED = {("agent", "cycle"): "--goal", ("agent", "plan"): "--goal", ("agent", "recall"): "--query",
            ("agent", "fork"): "--at"}
# positional arguments, by the kind of value each takes
POSITIONAL = {("sessions", "show"): ["run"], ("sessions", "export"): ["run"], ("sessions", "delete"): ["run"],
              ("sessions", "search"): ["run", "query"], ("sessions", "import"): ["trace-file"],
              ("sessions", "compare"): ["ref", "ref"]}
EXTRA_FLAGS = ["--help", "-h", "--bogus", "-x", "--", "-", "--json=1", "--max", "--d", "--tr", "--seed=-1"]
ALL_FLAGS = sorted({f for fl in SUBCOMMANDS.values() for f in fl} | set(EXTRA_FLAGS))
MAX_CYCLES = 3  # generated --max-cycles values are capped so a run stays short

int_text = st.one_of(st.integers(-3, 3).map(str), st.integers().map(str), st.integers(0, 10**40).map(str),
                     st.sampled_from(["", "1.5", "x", " 2", "٣", "1_0", "-0", "0x10", "1e3"]))
free_text = st.one_of(st.sampled_from(["Find mammals", "Classify whales", "1", "whale", ",", " , ", "(x", "a (b c d)",
                                       "goal:1", "", " "]), odd_text)


def cli_values(tmp: Path, world: Path):
    names = st.text(max_size=12)
    return {
        "--scenario": st.one_of(st.sampled_from(["zoo", "solar", "shadow", "nope", "", "/", "x" * 300,
                                                 "x" * 300 + ".toml", "zoo\x00", str(world / "scenarios" / "full.toml"),
                                                 str(world / "scenarios" / "broken.toml"), str(world / "binary.bin"),
                                                 str(world / "scenarios")]), names),
        "--goals": free_text, "--goal": free_text, "--query": free_text,
        "--max-cycles": int_text, "--seed": int_text, "--top-k": int_text,
        "--trace": st.one_of(st.sampled_from([str(tmp / "t.jsonl"), str(tmp), str(tmp / "missing" / "t.jsonl"),
                                              "", "t.jsonl", "t\x00.jsonl", "x" * 300]),
                             names.map(lambda s: str(tmp / s))),
        "--data-dir": st.one_of(st.sampled_from([str(tmp / "d"), "SESSION", "CORRUPT", str(tmp / "file.txt"), "",
                                                 "d\x00", "x" * 300, str(tmp / "file.txt" / "sub")]),
                                names.map(lambda s: str(tmp / s))),
        "--at": int_text, "--name": free_text, "--branch": st.one_of(st.sampled_from(["main", "b"]), free_text),
        "--set": st.one_of(st.sampled_from(["explorer=0.9", "sage=2", "hero=0.5", "explorer", "=", "guardian=nan"]),
                           free_text),
        "--disable": st.one_of(st.sampled_from(["kg_query", "teleport", ""]), free_text),
        "--output": st.sampled_from([str(tmp / "out.jsonl"), "out.jsonl", str(tmp), str(tmp / "no" / "o.jsonl"), ""]),
        "run": int_text, "query": st.one_of(st.sampled_from(["tool=kg_query", "veto", "tool=x", "goal=x",
                                                            "progress=sideways", "planet", "%_"]), free_text),
        "trace-file": st.sampled_from([str(world / "trace.jsonl"), str(world / "binary.bin"), str(world / "psyche"),
                                       "missing.jsonl", ""]),
        "ref": st.one_of(st.sampled_from(["1", "1:main", "1:b", "2", "x", ":", "1:"]), free_text),
        "psyche-file": st.one_of(st.sampled_from([str(world / "psyche" / "default.toml"), str(world / "psyche" / "bad.toml"),
                                                  str(world / "psyche" / "inline.toml"), str(world / "binary.bin"),
                                                  str(world / "psyche"), "missing.toml", "", "x" * 300, "a\x00b"]),
                                 names),
    }


def _flag_for(token: str) -> str | None:
    """The long option a token stands for (argparse accepts unambiguous prefixes)."""
    name = token.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return None
    for target in ("--trace", "--data-dir", "--max-cycles", "--output"):
        if target.startswith(name):
            return target
    return None


def safe_path(value: str, tmp: Path) -> str:
    """Keep a written path inside tmp: absolute ones must be under it, relative ones stay in cwd."""
    if value.startswith(str(tmp)) and ".." not in Path(value).parts:
        return value
    v = value.replace("/", "_")
    return "_" + v if v in (".", "..") else v


def sanitize(argv: list[str], tmp: Path) -> list[str]:
    out = list(argv)
    for i, tok in enumerate(out):
        target = _flag_for(tok)
        if target is None:
            continue
        if "=" in tok:
            name, value = tok.split("=", 1)
            j = None
        elif i + 1 < len(out) and _flag_for(out[i + 1]) is None and out[i + 1] not in ALL_FLAGS:
            value, j = out[i + 1], i + 1
        else:
            continue
        if target == "--max-cycles":
            try:
                value = str(min(int(value), MAX_CYCLES))
            except ValueError:
                pass
        else:
            value = safe_path(value, tmp)
        if j is None:
            out[i] = f"{name}={value}"
        else:
            out[j] = value
    return out


def clean_cli_values(tmp: Path, world: Path):
    """Values each flag accepts: a clean command line runs, so the commands themselves get fuzzed."""
    text = st.one_of(st.sampled_from(["Find mammals", "Classify whales", "whale", "Find birds, Classify whales"]),
                     safe_str)
    return {
        "--scenario": st.sampled_from(["zoo", "solar", "shadow", str(world / "scenarios" / "full.toml")]),
        "--goals": text, "--goal": text, "--query": text,
        "--max-cycles": st.integers(0, MAX_CYCLES).map(str), "--seed": st.integers(0, 10**30).map(str),
        "--top-k": st.integers(1, 10).map(str),
        "--trace": st.sampled_from([str(tmp / "t.jsonl"), "t.jsonl"]),
        "--data-dir": st.sampled_from([str(tmp / "d"), "SESSION", "SESSION"]),
        "psyche-file": st.sampled_from([str(world / "psyche" / "default.toml"), str(world / "psyche" / "inline.toml")]),
        "--at": st.integers(0, 3).map(str), "--name": st.sampled_from(["b", "c"]), "--branch": st.sampled_from(["main"]),
        "--set": st.sampled_from(["explorer=0.9", "sage=0.1"]), "--disable": st.sampled_from(["kg_query", "reason"]),
        "--output": st.sampled_from([str(tmp / "out.jsonl")]), "run": st.sampled_from(["1"]),
        "query": st.sampled_from(["tool=kg_query", "veto", "planet"]),
        "trace-file": st.sampled_from([str(world / "trace.jsonl")]),
        "ref": st.sampled_from(["1", "1:main"]),
    }


@st.composite
def argv_for(draw, tmp: Path, world: Path):
    clean = draw(st.booleans())
    values = (clean_cli_values if clean else cli_values)(tmp, world)

    def value_for(flag):
        return draw(values.get(flag, free_text))

    sub = draw(st.sampled_from(sorted(k for k in SUBCOMMANDS if not clean or len(k) == 2 or k == ("tools",))))
    argv: list[str] = []
    if not clean and draw(st.integers(0, 5)) == 0:  # a top-level option before the sub-command
        flag = draw(st.sampled_from(["--seed", "--scenario"]))
        argv += [flag, value_for(flag)]
    argv += list(sub)
    if sub == ("psyche", "check") and (clean or draw(st.integers(0, 9))):
        argv.append(value_for("psyche-file"))
    if sub in REQUIRED and (clean or draw(st.integers(0, 9))):
        argv += [REQUIRED[sub], value_for(REQUIRED[sub])]
    if sub == ("agent", "fork") and (clean or draw(st.integers(0, 9))):
        argv += ["--name", value_for("--name")]
    for kind in POSITIONAL.get(sub, []):
        if clean or draw(st.integers(0, 9)):
            argv.append(value_for(kind))
    own = SUBCOMMANDS[sub]
    for _ in range(draw(st.integers(0, 4))):
        kind = "own" if clean else draw(st.sampled_from(["own", "own", "own", "any", "garbage"]))
        if kind == "garbage":
            argv.append(draw(odd_text))
            continue
        flag = draw(st.sampled_from(own if kind == "own" and own else ALL_FLAGS))
        argv.append(flag)
        if flag.startswith("--") and "=" not in flag and flag not in ("--json", "--fresh", "--help", "--") \
                and (clean or draw(st.integers(0, 9))):
            argv.append(value_for(flag))
    if sub in (("agent", "run"), ("agent", "resume")):
        # the default is 100 cycles: a later occurrence wins, an earlier bad one still fails
        argv += ["--max-cycles", str(draw(st.integers(0, MAX_CYCLES)))]
    return argv


def _listing(p: Path) -> list[str]:
    return sorted(str(x.relative_to(p)) for x in p.rglob("*"))


@given(data=st.data())
def test_cli_arguments(world, data):
    data_before = _listing(DATA)
    with tempfile.TemporaryDirectory() as outer, pytest.MonkeyPatch.context() as mp:
        tmp = Path(outer) / "in"
        tmp.mkdir()
        (tmp / "file.txt").write_text("not a folder", encoding="utf-8")
        for var in ("AKH_TUI_DATA", "AKH_TUI_CONFIG", "HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            mp.setenv(var, str(tmp / "env" / var))
        mp.chdir(tmp)
        mp.setattr("akh_tui.cli.workbench.start_workbench", lambda *a: pytest.fail("the workbench was started"))
        argv = sanitize(data.draw(argv_for(tmp, world)), tmp)
        for i, a in enumerate(argv):
            if a in ("SESSION", "CORRUPT"):
                src = world / ("session" if a == "SESSION" else "corrupt-session")
                shutil.copytree(src, tmp / a.lower(), dirs_exist_ok=True)
                argv[i] = str(tmp / a.lower())
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(argv)
            except SystemExit as exc:
                rc = exc.code
        assert rc in (0, 2), f"exit {rc} for {argv!r}: {err.getvalue()[-500:]}"
        if rc == 2:
            assert err.getvalue().strip(), f"exit 2 without a message for {argv!r}"
        count("cli", rc != 0)
        assert os.listdir(outer) == ["in"], "something was written outside the temporary folder"
    assert _listing(DATA) == data_before, "the bundled data folder changed"


# ---------------------------------------------------------------------------------------
# What fuzzing found, pinned as plain examples (fast, and independent of the profile)
# ---------------------------------------------------------------------------------------

DEEP = "[" * 3000 + "]" * 3000


def test_found_psyche_empty_pattern_list_keeps_its_comments():
    text = "[shadow]\n# about biases\nbias_patterns = []   # none, on purpose\n# trailing\n"
    p = Psyche.from_toml(text)
    assert p.to_toml() == text
    saved = p.with_veto_for_tool("kg_query").to_toml()
    assert "bias_patterns = []   # none, on purpose\n" in saved
    assert Psyche.from_toml(saved).to_toml() == saved


@pytest.mark.parametrize("body, field", [
    (f'name = "x"\nkg = ["../kg/small.tsv"]\nseed = {"1" * 5000}\n[[goals]]\ndescription = "d"\n', None),
    (f'name = "x"\nkg = ["../kg/small.tsv"]\ndeep = {DEEP}\n[[goals]]\ndescription = "d"\n', None),
    ('name = "x"\nkg = ["../kg/small.tsv\\u0000"]\n[[goals]]\ndescription = "d"\n', "kg[0]"),
    (f'name = "x"\nkg = ["{"x" * 300}"]\n[[goals]]\ndescription = "d"\n', "kg[0]"),
    ('name = "x"\nkg = ["../kg/small.tsv"]\n[[goals]]\ndescription = "Find (whale"\n', "goals[0].description"),
    ('name = "x"\nkg = ["../kg/small.tsv"]\ndescription = 3\n[[goals]]\ndescription = "d"\n', "description"),
    ('name = "x"\nkg = ["../kg/small.tsv"]\n[[goals]]\ndescription = "d"\n[config]\nhttp_timeout = nan\n',
     "config.http_timeout"),
    (f'name = "x"\nkg = ["../kg/small.tsv"]\n[[goals]]\ndescription = "d"\n[config]\nshell_timeout = {10**400}\n',
     "config.shell_timeout"),
    ('name = "x"\nkg = ["../kg/small.tsv"]\n[[goals]]\ndescription = "d"\n[config]\nvsa_dim = 1099511627776\n',
     "config.vsa_dim"),
    ('name = "x"\nkg = ["../kg/small.tsv"]\n[[goals]]\ndescription = "d"\n[config.capabilities]\nread_kg = false\n',
     "config.capabilities.read_kg"),
])
def test_found_scenario_inputs(world, body, field):
    path = world / "scenarios" / "found.toml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_scenario(str(path))
    check_error(info.value, str(path), body, field is not None)
    assert info.value.field == field
    if field:
        assert info.value.line == next(n for n, ln in enumerate(body.split("\n"), 1)
                                       if ln.startswith(field.split(".")[-1].split("[")[0]))


def test_found_rules_and_psyche_deep_nesting():
    with pytest.raises(InputError, match="nested too deeply"):
        parse_rules(f"transitive = {DEEP}\n", RULES_FILE)
    with pytest.raises(InputError):
        Psyche.from_toml(f"x = {DEEP}\n", file=PSYCHE_FILE)


def test_found_triple_lines_break_at_newline_only(world):
    path = world / "work" / "sep.tsv"
    path.write_text("a\u2028b\tis-a\tc\x0cd\n\nx\ty\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        KnowledgeGraph().load_files([path])
    assert info.value.line == 3  # not 5: U+2028 and form feed are not line breaks
    path.write_text("a\u2028b\tis-a\tc\x0cd\r\n", encoding="utf-8")
    kg = KnowledgeGraph()
    kg.load_files([path])
    assert kg.lookup("a\u2028b") is not None and kg.lookup("c\x0cd") is not None


@pytest.mark.parametrize("data, line", [
    (b'{"type":"run","v":1}\n\x80\n', 2),
    (('{"type":"run","v":1}\n' + DEEP + "\n").encode(), 2),
    (('{"type":"run","v":1}\n{"type":"cycle","v":1,"cycle":' + "1" * 5000 + "}\n").encode(), 2),
])
def test_found_trace_inputs(world, data, line):
    path = world / "work" / "found.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        read_trace(path)
    assert info.value.line == line and str(path) in str(info.value)


@pytest.mark.parametrize("args, flag", [
    (["agent", "run", "--max-cycles", "1", "--data-dir", "{tmp}/file.txt"], "--data-dir"),
    (["agent", "run", "--max-cycles", "1", "--data-dir", "{tmp}/file.txt/sub"], "--data-dir"),
    (["agent", "reflect", "--data-dir", "d\x00"], "--data-dir"),
    (["agent", "reflect", "--data-dir", "x" * 300], "--data-dir"),
    (["agent", "run", "--max-cycles", "1", "--trace", "{tmp}"], "--trace"),
    (["agent", "run", "--max-cycles", "1", "--trace", "x" * 300], "--trace"),
    (["agent", "run", "--max-cycles", "1", "--trace", "t\x00.jsonl"], "--trace"),
    (["agent", "run", "--max-cycles", "1", "--scenario", "x" * 300], "--scenario"),
    (["agent", "run", "--max-cycles", "1", "--scenario", ""], "--scenario"),
    (["agent", "run", "--max-cycles", "1", "--goals", "Find (whale"], "--goals"),
    (["agent", "cycle", "--goal", "  "], "--goal"),
])
def test_found_cli_arguments(tmp_path, monkeypatch, args, flag):
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AKH_TUI_DATA", str(tmp_path / "data"))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = cli.main([a.replace("{tmp}", str(tmp_path)) for a in args] + ["--json"])
    assert rc == 2
    assert json.loads(err.getvalue().strip().splitlines()[-1])["field"] == flag
    assert not (tmp_path / "data").exists(), "a session was started before the input was checked"
