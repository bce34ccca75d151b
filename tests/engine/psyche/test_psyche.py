"""The psyche (SPEC §9, seed 004): defaults, shadow gating, archetype bonus, evolution,
validation messages a user can act on, and saving that keeps the user's comments."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from akh_tui.engine.errors import InputError
from akh_tui.engine.psyche.model import Psyche
from akh_tui.engine.psyche.parts import ARCHETYPES, DEFAULT_TOML, Shadow, ShadowPattern

DATA_DEFAULT = Path(__file__).resolve().parents[3] / "akh_tui" / "data" / "psyche" / "default.toml"


def desc(tool: str, inp: str = "x") -> str:
    return f"tool={tool} input={inp}"


def load_error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        Psyche.from_toml(textwrap.dedent(text), file="psyche.toml")
    return info.value


# -- defaults ---------------------------------------------------------------------------


def test_default_values_match_spec():
    p = Psyche.default()
    assert p.persona.name == "Scholar"
    assert p.persona.grammar_preference == "narrative"
    assert p.archetypes == {"sage": 0.7, "healer": 0.5, "explorer": 0.5, "guardian": 0.4}
    si = p.self_integration
    assert (si.individuation_level, si.last_evolution_cycle, si.shadow_encounters,
            si.rebalance_count, si.dominant_archetype) == (0.1, 0, 0, 0, "sage")
    veto = p.shadow.veto_patterns[0]
    assert veto.name == "destructive_action"
    assert veto.triggers == ["delete all", "drop table", "rm -rf"]
    assert veto.capability_triggers == ["process_exec"]
    assert veto.danger_level_threshold == "critical"
    assert veto.severity == 1.0
    assert len(p.shadow.bias_patterns) == 1
    assert p.source is None


def test_shipped_default_file_parses_to_the_builtin_default():
    from_file = Psyche.load(DATA_DEFAULT)
    assert from_file == Psyche.default()
    assert from_file.to_dict() == Psyche.default().to_dict()
    assert from_file.source == str(DATA_DEFAULT)


def test_default_bias_fires_on_an_action_description():
    severity, names = Psyche.default().shadow.check_bias(
        desc("http_fetch", "https://example.org"), ["network"], "dangerous"
    )
    assert severity > 0 and names == [Psyche.default().shadow.bias_patterns[0].name]


def test_default_vetoes_shell_exec_by_capability_but_not_kg_query():
    shadow = Psyche.default().shadow
    assert shadow.check_veto(desc("shell_exec", "ls"), ["process_exec"], "critical").name == (
        "destructive_action"
    )
    assert shadow.check_veto(desc("kg_query", "dog"), ["read_kg"], "safe") is None


# -- shadow -----------------------------------------------------------------------------


def test_veto_trigger_is_case_insensitive_substring():
    shadow = Psyche.default().shadow
    hit = shadow.check_veto(desc("file_io", "please DELETE ALL files"), ["read_fs"], "dangerous")
    assert hit is not None and hit.name == "destructive_action"
    assert shadow.check_veto(desc("file_io", "delete one"), ["read_fs"], "dangerous") is None


def test_capability_clause_needs_capability_and_danger_threshold():
    p = ShadowPattern("net", [], ["network"], "dangerous", 1.0, "")
    assert p.matches(desc("http_fetch"), ["network"], "dangerous")
    assert p.matches(desc("http_fetch"), ["network"], "critical")
    assert not p.matches(desc("http_fetch"), ["network"], "cautious")  # below threshold
    assert not p.matches(desc("file_io"), ["read_fs"], "critical")  # wrong capability


def test_threshold_without_capabilities_applies_to_every_tool():
    p = ShadowPattern("risky", [], [], "dangerous", 1.0, "")
    assert p.matches(desc("file_io"), ["read_fs"], "dangerous")
    assert not p.matches(desc("kg_query"), ["read_kg"], "safe")


def test_capabilities_without_threshold_fire_at_any_danger():
    p = ShadowPattern("asks", [], ["ask_user"], None, 1.0, "")
    assert p.matches(desc("user_interact"), ["ask_user"], "safe")


def test_pattern_without_triggers_or_clause_never_fires():
    p = ShadowPattern("empty", [], [], None, 1.0, "")
    assert not p.matches(desc("shell_exec", "rm -rf /"), ["process_exec"], "critical")


def test_first_matching_veto_in_file_order_wins():
    shadow = Shadow(
        veto_patterns=[
            ShadowPattern("first", ["kg_"], [], None, 1.0, "a"),
            ShadowPattern("second", ["kg_query"], [], None, 1.0, "b"),
        ],
        bias_patterns=[],
    )
    assert shadow.check_veto(desc("kg_query"), ["read_kg"], "safe").name == "first"


def test_bias_severities_add_up_and_name_every_fired_pattern():
    shadow = Shadow(
        veto_patterns=[],
        bias_patterns=[
            ShadowPattern("a", ["fetch"], [], None, 0.2, ""),
            ShadowPattern("b", [], ["network"], None, 0.1, ""),
            ShadowPattern("c", ["never"], [], None, 0.5, ""),
        ],
    )
    assert shadow.check_bias(desc("http_fetch"), ["network"], "dangerous") == (0.3, ["a", "b"])
    assert shadow.check_bias(desc("kg_query"), ["read_kg"], "safe") == (0.0, [])


def test_workbench_veto_is_anchored_to_the_exact_tool():
    p = Psyche.default().with_veto_for_tool("kg_query")
    veto = p.shadow.veto_patterns[-1]
    assert (veto.name, veto.triggers, veto.severity) == ("no_kg_query", ["tool=kg_query "], 1.0)
    assert veto.explanation == "Vetoed kg_query from the workbench."
    assert p.shadow.check_veto(desc("kg_query", "dog"), ["read_kg"], "safe") is veto
    assert p.shadow.check_veto(desc("kg_query_x", "dog"), ["read_kg"], "safe") is None


def test_workbench_veto_leaves_original_alone_and_is_not_added_twice():
    base = Psyche.default()
    once = base.with_veto_for_tool("reason")
    twice = once.with_veto_for_tool("reason")
    assert len(base.shadow.veto_patterns) == 1
    assert [v.name for v in twice.shadow.veto_patterns] == ["destructive_action", "no_reason"]
    assert twice is not once


# -- archetypes -------------------------------------------------------------------------


def test_archetype_bonus_examples_from_seed():
    p = Psyche.default()
    assert p.archetype_bonus("sage") == pytest.approx(0.030)
    assert p.archetype_bonus("healer") == pytest.approx(0.0)
    assert p.archetype_bonus("guardian") == pytest.approx(-0.015)


def test_dominant_breaks_ties_in_archetype_order():
    p = Psyche.default()
    p.archetypes.update(sage=0.5, healer=0.8, explorer=0.8, guardian=0.8)
    assert p.dominant() == "healer"
    p.archetypes.update(sage=0.8)
    assert p.dominant() == "sage"


# -- evolve -----------------------------------------------------------------------------

TOOLS = {"kg_query": "sage", "reason": "sage", "gap_analysis": "healer",
         "file_io": "explorer", "memory_recall": "guardian"}


def test_evolve_raises_successful_and_lowers_failing_archetypes():
    p = Psyche.default()
    changes = p.evolve({"kg_query": (10, 9), "memory_recall": (4, 1)}, TOOLS, cycle=5)
    assert p.archetypes["sage"] == 0.72
    assert p.archetypes["guardian"] == 0.38
    assert {"kind": "archetype", "archetype": "sage", "tool": "kg_query", "rate": 0.9,
            "old": 0.7, "new": 0.72} in changes
    assert p.self_integration.rebalance_count == 1
    assert p.self_integration.last_evolution_cycle == 5


def test_evolve_leaves_rates_exactly_at_the_bounds_and_tools_with_one_use():
    p = Psyche.default()
    changes = p.evolve(
        {"kg_query": (10, 7), "gap_analysis": (10, 3), "file_io": (1, 1)}, TOOLS, cycle=5
    )
    assert p.archetypes == Psyche.default().archetypes
    assert changes == []
    assert p.self_integration.rebalance_count == 0
    assert p.self_integration.last_evolution_cycle == 5


def test_evolve_clamps_weights_and_reports_only_real_changes():
    p = Psyche.default()
    p.archetypes.update(sage=0.94, guardian=0.11)
    p.evolve({"kg_query": (5, 5), "memory_recall": (5, 0)}, TOOLS, cycle=1)
    assert (p.archetypes["sage"], p.archetypes["guardian"]) == (0.95, 0.1)
    changes = p.evolve({"kg_query": (5, 5), "memory_recall": (5, 0)}, TOOLS, cycle=2)
    assert (p.archetypes["sage"], p.archetypes["guardian"]) == (0.95, 0.1)
    assert [c for c in changes if c["kind"] == "archetype"] == []
    assert p.self_integration.rebalance_count == 1


def test_every_tool_of_an_archetype_counts_and_weights_stay_round():
    p = Psyche.default()
    for cycle in range(1, 6):
        p.evolve({"kg_query": (4, 4), "reason": (2, 2)}, TOOLS, cycle=cycle)
    assert p.archetypes["sage"] == 0.9  # 0.7 + 5 * 2 * 0.02, no float noise


def test_individuation_growth_is_capped_by_five_encounters():
    p = Psyche.default()
    for _ in range(3):
        p.record_shadow_encounter()
    changes = p.evolve({}, TOOLS, cycle=5)
    assert p.self_integration.individuation_level == 0.13
    assert changes == [{"kind": "individuation", "old": 0.1, "new": 0.13}]
    for _ in range(7):
        p.record_shadow_encounter()
    p.evolve({}, TOOLS, cycle=10)
    assert p.self_integration.shadow_encounters == 10
    assert p.self_integration.individuation_level == 0.18  # +0.05, not +0.10


def test_individuation_never_exceeds_one_and_no_encounters_means_no_growth():
    p = Psyche.default()
    assert p.evolve({}, TOOLS, cycle=1) == []
    p.self_integration.individuation_level = 0.99
    p.self_integration.shadow_encounters = 5
    p.evolve({}, TOOLS, cycle=2)
    assert p.self_integration.individuation_level == 1.0


def test_evolve_recomputes_dominant_with_tie_order():
    p = Psyche.default()
    p.archetypes.update(sage=0.6, healer=0.58)
    changes = p.evolve({"gap_analysis": (3, 3)}, TOOLS, cycle=5)
    assert p.archetypes["healer"] == 0.6
    assert p.self_integration.dominant_archetype == "sage"  # tie goes to sage
    p.evolve({"gap_analysis": (3, 3)}, TOOLS, cycle=10)
    assert p.self_integration.dominant_archetype == "healer"
    assert p.snapshot()["dominant"] == "healer"
    assert not any(c["kind"] == "dominant" for c in changes)


def test_evolve_is_independent_of_stats_order():
    a, b = Psyche.default(), Psyche.default()
    stats = {"reason": (3, 3), "kg_query": (3, 0), "file_io": (2, 2)}
    ca = a.evolve(stats, TOOLS, cycle=5)
    cb = b.evolve(dict(reversed(list(stats.items()))), TOOLS, cycle=5)
    assert ca == cb and a == b
    assert [c["tool"] for c in ca if c["kind"] == "archetype"] == ["file_io", "kg_query", "reason"]


def test_snapshot_lists_what_the_trace_shows():
    p = Psyche.default()
    p.record_shadow_encounter()
    assert p.snapshot() == {
        "archetypes": {"sage": 0.7, "healer": 0.5, "explorer": 0.5, "guardian": 0.4},
        "individuation": 0.1, "shadow_encounters": 1, "dominant": "sage", "persona": "Scholar",
    }
    assert list(p.snapshot()["archetypes"]) == list(ARCHETYPES)


def test_copy_is_independent():
    p = Psyche.default()
    q = p.copy()
    q.archetypes["sage"] = 0.9
    q.shadow.veto_patterns[0].triggers.append("format c:")
    q.persona.traits.append("bold")
    assert p == Psyche.default()


# -- validation -------------------------------------------------------------------------


def test_missing_sections_and_keys_take_defaults():
    p = Psyche.from_toml("[archetypes]\nexplorer = 0.9\n")
    assert p.archetypes == {"sage": 0.7, "healer": 0.5, "explorer": 0.9, "guardian": 0.4}
    assert p.persona.name == "Scholar"
    assert p.shadow == Psyche.default().shadow
    assert Psyche.from_toml("") == Psyche.default()


def test_empty_veto_list_disables_the_default_veto():
    p = Psyche.from_toml("[shadow]\nveto_patterns = []\n")
    assert p.shadow.veto_patterns == []
    assert p.shadow.bias_patterns == Psyche.default().shadow.bias_patterns


def test_stored_dominant_is_recomputed_from_weights():
    p = Psyche.from_toml(
        "[archetypes]\nguardian = 0.9\n[self_integration]\ndominant_archetype = \"sage\"\n"
    )
    assert p.self_integration.dominant_archetype == "guardian"


def test_toml_syntax_error_names_the_line():
    err = load_error("""\
        [persona]
        name = "Scholar"
        traits = ["a", "b"
        tone = ["c"]
        """)
    assert err.file == "psyche.toml"
    assert err.line == 4
    assert "invalid TOML" in err.message


def test_toml_syntax_error_on_a_later_line():
    err = load_error("""\
        [archetypes]
        sage = 0.7
        healer = = 0.5
        """)
    assert err.line == 3


def test_unknown_top_level_key_is_named():
    err = load_error("""\
        # my psyche
        [persona]
        name = "Mentor"

        [colour]
        hue = 1
        """)
    assert (err.line, err.field) == (5, "colour")
    assert "unknown key 'colour'" in err.message
    assert str(err).startswith("psyche.toml:5: field 'colour'")


def test_unknown_key_inside_a_pattern_is_named_with_its_line():
    err = load_error("""\
        [[shadow.veto_patterns]]
        name = "a"
        triggers = ["x"]

        [[shadow.veto_patterns]]
        name = "b"
        trigers = ["y"]
        """)
    assert (err.line, err.field) == (7, "shadow.veto_patterns[1].trigers")
    assert "unknown key 'trigers'" in err.message


def test_severity_out_of_range_names_pattern_index_and_line():
    err = load_error("""\
        [persona]
        name = "Scholar"

        [shadow]

        [[shadow.veto_patterns]]
        name = "destructive_action"
        triggers = ["rm -rf"]
        severity = 1.0

        [[shadow.veto_patterns]]
        name = "no_network"
        triggers = ["http_fetch"]
        severity = 1.5
        explanation = "offline"
        """)
    assert (err.line, err.field) == (14, "shadow.veto_patterns[1].severity")
    assert "[0, 1]" in err.message


def test_archetype_weight_of_wrong_type():
    err = load_error("""\
        [archetypes]
        sage = 0.7
        healer = "high"
        """)
    assert (err.line, err.field) == (3, "archetypes.healer")
    assert "number" in err.message


def test_wrong_type_in_a_multiline_trigger_list_points_at_the_element():
    err = load_error("""\
        [[shadow.bias_patterns]]
        name = "b"
        triggers = [
            "one",
            2,
        ]
        """)
    assert (err.line, err.field) == (5, "shadow.bias_patterns[0].triggers[1]")
    assert "string" in err.message


def test_counter_must_be_a_non_negative_integer():
    err = load_error("""\
        [self_integration]
        individuation_level = 0.2
        shadow_encounters = 1.5
        """)
    assert (err.line, err.field) == (3, "self_integration.shadow_encounters")


def test_unknown_danger_level():
    err = load_error("""\
        [[shadow.veto_patterns]]
        name = "net"
        capability_triggers = ["network"]
        danger_level_threshold = "extreme"
        """)
    assert (err.line, err.field) == (4, "shadow.veto_patterns[0].danger_level_threshold")
    assert "extreme" in err.message and "critical" in err.message


def test_unknown_capability():
    err = load_error("""\
        [[shadow.veto_patterns]]
        name = "net"
        capability_triggers = ["network", "teleport"]
        """)
    assert (err.line, err.field) == (3, "shadow.veto_patterns[0].capability_triggers[1]")


def test_duplicate_pattern_name():
    err = load_error("""\
        [[shadow.bias_patterns]]
        name = "slow"
        triggers = ["a"]

        [[shadow.bias_patterns]]
        # same name again
        name = "slow"
        triggers = ["b"]
        """)
    assert (err.line, err.field) == (7, "shadow.bias_patterns[1].name")
    assert "duplicate" in err.message and "'slow'" in err.message


def test_same_name_in_veto_and_bias_lists_is_allowed():
    p = Psyche.from_toml(textwrap.dedent("""\
        [[shadow.veto_patterns]]
        name = "x"
        triggers = ["a"]
        [[shadow.bias_patterns]]
        name = "x"
        triggers = ["b"]
        """))
    assert p.shadow.veto_patterns[0].name == p.shadow.bias_patterns[0].name == "x"


def test_pattern_without_name_points_at_its_header():
    err = load_error("""\
        [archetypes]
        sage = 0.7

        [[shadow.veto_patterns]]
        triggers = ["a"]
        """)
    assert (err.line, err.field) == (4, "shadow.veto_patterns[0].name")


def test_blank_trigger_is_rejected_because_it_matches_everything():
    err = load_error("""\
        [[shadow.veto_patterns]]
        name = "oops"
        triggers = [""]
        """)
    assert err.field == "shadow.veto_patterns[0].triggers[0]"


def test_load_reports_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        Psyche.load(tmp_path / "nope.toml")
    assert info.value.file == str(tmp_path / "nope.toml")


# -- saving -----------------------------------------------------------------------------

USER_FILE = textwrap.dedent("""\
    # My tuned psyche -- keep these notes!
    [persona]
    name = "Mentor"   # renamed for the demo
    grammar_preference = "formal"

    # Never touch the filesystem destructively.
    [[shadow.veto_patterns]]
    name = "destructive_action"
    triggers = ["delete all", "rm -rf"]   # the classics
    severity = 1.0
    explanation = "Ask first."

    # Soft nudges only.
    [[shadow.bias_patterns]]
    name = "prefer_internal_reasoning"
    triggers = ["http_fetch"]
    severity = 0.2
    explanation = "Think before fetching."

    [archetypes]
    # tuned by hand on day one
    sage = 0.6       # curious
    healer = 0.5
    explorer = 0.5
    guardian = 0.4

    # end of file
    """)


def test_round_trip_keeps_comments_and_applies_changes(tmp_path):
    path = tmp_path / "psyche.toml"
    path.write_text(USER_FILE, encoding="utf-8")
    p = Psyche.load(path)
    p.archetypes["sage"] = 0.62
    p = p.with_veto_for_tool("http_fetch")
    text = p.to_toml()

    lines = text.splitlines()
    for line in USER_FILE.splitlines():
        if line.lstrip().startswith("#"):
            assert line in lines
    assert 'name = "Mentor"   # renamed for the demo' in lines
    assert "sage = 0.62       # curious" in lines
    assert lines[-1] == "# end of file"
    # The new veto sits with the other vetoes, above the bias section's comment.
    assert text.index('name = "no_http_fetch"') < text.index("# Soft nudges only.")

    back = Psyche.from_toml(text)
    assert back == p
    assert back.archetypes["sage"] == 0.62
    assert [v.name for v in back.shadow.veto_patterns] == ["destructive_action", "no_http_fetch"]
    assert back.shadow.check_veto(desc("http_fetch", "u"), ["network"], "dangerous").name == (
        "no_http_fetch"
    )


def test_unchanged_psyche_writes_the_file_back_byte_for_byte():
    assert Psyche.from_toml(USER_FILE).to_toml() == USER_FILE
    assert Psyche.default().to_toml() == DEFAULT_TOML


def test_removed_pattern_disappears_and_missing_sections_are_added():
    p = Psyche.from_toml("# only weights\n[archetypes]\nsage = 0.6\n")
    p.shadow.bias_patterns.clear()
    p.persona.name = "Explorer"
    p.self_integration.shadow_encounters = 2
    text = p.to_toml()
    assert text.startswith("# only weights\n[archetypes]\nsage = 0.6\n")
    back = Psyche.from_toml(text)
    assert back == p
    assert back.shadow.bias_patterns == []
    assert back.shadow.veto_patterns == Psyche.default().shadow.veto_patterns


def test_edited_pattern_fields_are_updated_in_place():
    p = Psyche.from_toml(USER_FILE)
    veto = p.shadow.veto_patterns[0]
    veto.capability_triggers = ["process_exec"]
    veto.danger_level_threshold = "critical"
    p.shadow.bias_patterns[0].severity = 0.35
    text = p.to_toml()
    assert 'triggers = ["delete all", "rm -rf"]   # the classics' in text.splitlines()
    assert Psyche.from_toml(text) == p


def test_save_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "psyche.toml"
    path.write_text(USER_FILE, encoding="utf-8")
    p = Psyche.load(path)
    p.evolve({"kg_query": (3, 3)}, {"kg_query": "sage"}, cycle=5)
    p.save(path)
    assert os.listdir(tmp_path) == ["psyche.toml"]
    text = path.read_text(encoding="utf-8")
    assert text == p.to_toml()
    assert text.endswith("# end of file\n")
    assert Psyche.load(path) == p


def test_save_refuses_invalid_values_and_keeps_the_old_file(tmp_path):
    path = tmp_path / "psyche.toml"
    path.write_text(USER_FILE, encoding="utf-8")
    p = Psyche.load(path)
    p.archetypes["sage"] = 1.5
    with pytest.raises(InputError) as info:
        p.save(path)
    assert info.value.field == "archetypes.sage"
    assert path.read_text(encoding="utf-8") == USER_FILE
    assert os.listdir(tmp_path) == ["psyche.toml"]


unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(weights=st.tuples(unit, unit, unit, unit), severity=unit, individuation=unit,
       encounters=st.integers(min_value=0, max_value=10_000))
def test_random_values_round_trip_through_toml(weights, severity, individuation, encounters):
    p = Psyche.from_toml(USER_FILE)
    p.archetypes.update(zip(ARCHETYPES, weights))
    p.shadow.bias_patterns[0].severity = severity
    p.self_integration.individuation_level = individuation
    p.self_integration.shadow_encounters = encounters
    back = Psyche.from_toml(p.to_toml())
    assert back == p
    assert back.archetypes == dict(zip(ARCHETYPES, weights))
    assert back.shadow.bias_patterns[0].severity == severity


# ---- [shadow] anticipate (issue 28: a vetoed tool was chosen again and again) -------------------

def _solar_with_veto(tmp_path, anticipate: bool):
    from akh_tui.engine.paths import Locations
    from akh_tui.engine import Run

    run = Run.start(Locations(tmp_path / "data", tmp_path / "config.toml"), "solar")
    assert run.veto_tool("synthesize_triple")
    if anticipate:
        p = run.current_psyche().copy()
        p = Psyche.from_toml(p.to_toml().replace("[shadow]\n", "[shadow]\nanticipate = true\n", 1))
        assert p.shadow.anticipate
        run.edit_psyche(p)
    return run


def test_without_anticipate_a_vetoed_tool_is_chosen_again_and_again(tmp_path):
    # SPEC §4 unchanged by default: the shadow is not consulted while scoring
    run = _solar_with_veto(tmp_path, anticipate=False)
    recs = [run.step() for _ in range(37)]
    vetoed = [r["cycle"] for r in recs if r and r["act"]["vetoed"]]
    assert len(vetoed) > 3
    counts: dict[int, int] = {}
    for r in recs:
        if r and r["act"]["vetoed"]:
            counts[r["goal"]["id"]] = counts.get(r["goal"]["id"], 0) + 1
    for goal, n in counts.items():  # what the Why pane shows, counted from the records
        assert run.vetoes_on_goal(goal, run.last_cycle()) == {"synthesize_triple": n}
    goal, n = next(iter(counts.items()))
    first = next(r["cycle"] for r in recs if r and r["act"]["vetoed"] and r["goal"]["id"] == goal)
    assert run.vetoes_on_goal(goal, first) == {"synthesize_triple": 1}  # a replayed cycle: so far
    assert run.vetoes_on_goal(goal, run.last_cycle()) == {"synthesize_triple": n}
    run.close()


def test_with_anticipate_decide_does_not_offer_what_the_shadow_would_veto(tmp_path):
    run = _solar_with_veto(tmp_path, anticipate=True)
    recs = [r for _ in range(37) if (r := run.step()) is not None]
    assert not any(r["act"]["vetoed"] for r in recs)
    row = next(c for c in recs[0]["decide"]["candidates"] if c["tool"] == "synthesize_triple")
    assert not row["offered"] and row["why_not"] == "not offered: the shadow would veto it (no_synthesize_triple)"
    assert run.agent.goals[1].status == "completed"
    # lifting the veto from the UI's command brings the tool back next cycle
    assert run.lift_veto("synthesize_triple") and not run.lift_veto("synthesize_triple")
    run.close()


def test_anticipate_is_validated_and_saved_where_the_user_wrote_it():
    with pytest.raises(InputError, match="shadow.anticipate") as err:
        Psyche.from_toml("[shadow]\nanticipate = \"yes\"\n")
    assert err.value.line == 2
    p = Psyche.from_toml("# mine\n[shadow]\nanticipate = false  # later\n")
    assert not p.shadow.anticipate and "anticipate" not in p.to_dict()["shadow"]
    p.shadow.anticipate = True
    text = p.to_toml()
    assert "anticipate = true  # later" in text and text.startswith("# mine")
    assert Psyche.from_toml(text).shadow.anticipate
    d = Psyche.default()
    import tomllib

    assert "anticipate" not in tomllib.loads(d.to_toml())["shadow"]  # only its comment says it exists
    assert d.to_dict() == Psyche.from_dict(d.to_dict()).to_dict()
    d.shadow.anticipate = True
    again = Psyche.from_toml(d.to_toml())
    assert again.shadow.anticipate and again.to_dict() == d.to_dict()
    assert Psyche.from_dict(d.to_dict()).shadow.anticipate
    assert d.copy().shadow.anticipate


def test_the_veto_tally_counts_live_cycles_without_reading_them_back(tmp_path, monkeypatch):
    # issue 29: the workbench asks for its goal's vetoes every frame; the cycles run since are
    # counted as they are recorded, not decoded again from the store
    run = _solar_with_veto(tmp_path, anticipate=False)
    recs = [run.step() for _ in range(5)]
    goals = {r["goal"]["id"] for r in recs if r}
    for goal in goals:
        run.vetoes_on_goal(goal, run.last_cycle())  # as a frame does: the tally starts here
    later = [run.step() for _ in range(32)]

    def no_reads(*a, **kw):
        raise AssertionError("the tally read the store")

    monkeypatch.setattr(run.store, "records", no_reads)
    monkeypatch.setattr(run.store, "goal_records", no_reads)
    counted = {goal: run.vetoes_on_goal(goal, run.last_cycle()) for goal in goals}
    monkeypatch.undo()
    expected: dict[int, dict[str, int]] = {goal: {} for goal in goals}
    for r in recs + later:
        if r and r["act"]["vetoed"] and r["goal"]["id"] in goals:
            by_tool = expected[r["goal"]["id"]]
            by_tool[r["decide"]["tool"]] = by_tool.get(r["decide"]["tool"], 0) + 1
    assert counted == expected and any(expected.values())
    run.close()


# -- a repeated check is one lookup (issue 29) --------------------------------------------------

def test_a_repeated_check_walks_the_trigger_automaton_once_and_answers_alike(monkeypatch):
    shadow = Psyche.default().shadow
    vetoes, biases = shadow._index(shadow.veto_patterns), shadow._index(shadow.bias_patterns)
    walks: list[str] = []
    for index, method in ((vetoes, "first"), (biases, "all")):
        real = getattr(index.automaton, method)
        monkeypatch.setattr(index.automaton, method, lambda text, real=real: walks.append(text) or real(text))
    cases = [(desc("shell_exec", "rm -rf /"), ("process_exec",), "critical"),
             (desc("kg_query", "dog"), ("read_kg",), "safe"), (desc("reason", "ocean"), ("read_kg",), "safe")]
    first = [(shadow.check_veto(*c), shadow.check_bias(*c)) for c in cases]
    assert len(walks) == 2 * len(cases)
    again = [(shadow.check_veto(*c), shadow.check_bias(*c)) for c in cases * 3]
    assert len(walks) == 2 * len(cases)  # each answer was kept: no walk for the same description
    assert again == first * 3
    fresh = Psyche.default().shadow  # a fresh index (no memo) answers the same
    assert [(fresh.check_veto(*c), fresh.check_bias(*c)) for c in cases] == first
    assert first[0][0] is not None and first[1][0] is None  # the cases do tell vetoes apart


def test_the_answers_kept_are_bounded(monkeypatch):
    from akh_tui.engine.psyche import triggers

    monkeypatch.setattr(triggers, "MEMO_SIZE", 8)
    shadow = Psyche.default().shadow
    for i in range(50):
        shadow.check_veto(desc("kg_query", f"word{i}"), ("read_kg",), "safe")
        shadow.check_bias(desc("kg_query", f"word{i}"), ("read_kg",), "safe")
    assert len(shadow._index(shadow.veto_patterns)._first) <= 8
    assert len(shadow._index(shadow.bias_patterns)._every) <= 8
    # still right after the memo was emptied
    assert shadow.check_veto(desc("shell_exec", "ls"), ("process_exec",), "critical") is not None
