"""Decide explanations (SPEC §6, §11): runner-up, why chosen, why not and what would close the gap."""

from __future__ import annotations

import copy
import re

import pytest

from akh_tui.engine.explain.decision import TIE_EPS, runner_up, why_chosen, why_not, why_not_text
from akh_tui.engine.runs.scenario import build_agent, load_scenario
from akh_tui.engine.cycle.scoring import FACTORS, Candidate, choose
from akh_tui.engine.tools.specs import SPEC_BY_NAME
from tests.engine.cycle.test_engine import run

ORDER = ("kg_query", "infer_rules", "reason", "synthesize_triple", "gap_analysis", "user_interact",
         "file_io", "http_fetch", "shell_exec", "memory_recall", "similarity_search")
SAGE, HEALER, GUARDIAN = 0.03, 0.0, -0.015  # archetype bonuses for weights 0.7, 0.5, 0.4


def cand(tool, base=0.0, recency=0.0, novelty=0.0, episodic=0.0, pressure=0.0, archetype=0.0, plan=0.0,
         offered=True, why_not=None):
    c = Candidate(tool, offered, why_not, base, recency, novelty, episodic, pressure, archetype, plan)
    return c.to_dict()


def record(chosen, *cands, vetoed=None):
    cands = sorted(cands, key=lambda c: ORDER.index(c["tool"]))
    best = next(c for c in cands if c["tool"] == chosen)
    bd = Candidate(best["tool"], True, None, *(best[f] for f in FACTORS)).breakdown()
    return {
        "type": "cycle", "v": 1, "cycle": 1,
        "decide": {"tool": chosen, "input": best["input"], "breakdown": bd, "candidates": cands},
        "act": {"success": vetoed is None, "vetoed": vetoed is not None, "veto": vetoed},
        "psyche": {"archetypes": {"sage": 0.7, "healer": 0.5, "explorer": 0.5, "guardian": 0.4}},
    }


def kg98():
    return cand("kg_query", base=0.8, novelty=0.15, archetype=SAGE)  # 0.98


def base_record(vetoed=None):
    return record(
        "kg_query",
        kg98(),
        cand("synthesize_triple", base=0.7, recency=0.4, novelty=0.0, archetype=SAGE, plan=0.1),  # 0.43
        cand("gap_analysis", base=0.6, recency=0.2, archetype=HEALER),  # 0.40
        cand("user_interact", offered=False, why_not="not offered: goal not similar to the tool (sim 0.41 ≤ 0.55)",
             novelty=0.15),
        cand("similarity_search", base=0.55, novelty=0.15, archetype=GUARDIAN, plan=0.1),  # 0.785
        vetoed=vetoed,
    )


def closer(info, factor):
    (c,) = [x for x in info["closers"] if x["factor"] == factor]
    return c


def wins(rec, tool, factor, value):
    """Does `tool` win SPEC §6's choice once `factor` alone is set to `value`?"""
    cands = []
    for c in rec["decide"]["candidates"]:
        vals = {f: c[f] for f in FACTORS}
        if c["tool"] == tool:
            vals[factor] = value
        cands.append(Candidate(c["tool"], c["offered"], c["why_not"], **vals))
    return choose(cands).tool == tool


# -- hand-built records --------------------------------------------------------------------


def test_runner_up_is_best_offered_other_than_chosen():
    rec = base_record()
    assert runner_up(rec)["tool"] == "similarity_search"
    assert runner_up(rec)["score"] == pytest.approx(0.785)


def test_margin_is_exact():
    info = why_not(base_record(), "similarity_search")
    assert info["offered"] is True and info["why_not"] is None
    assert info["margin"] == pytest.approx(0.195, abs=1e-12)
    assert why_not(base_record(), "gap_analysis")["margin"] == pytest.approx(0.58, abs=1e-12)


def test_archetype_needed_weight_above_cap():
    info = why_not(base_record(), "similarity_search")
    a = closer(info, "archetype")
    # needed bonus = -0.015 + 0.195 (+eps, it comes after kg_query) = 0.18 -> weight 0.5 + 0.18/0.15 = 1.70
    assert a["needed"] == pytest.approx(1.70, abs=1e-6)
    assert a["possible"] is False
    assert a["text"] == "guardian weight would need 1.70; the cap is 0.95"


def test_archetype_needed_weight_within_cap():
    rec = record("kg_query", kg98(), cand("similarity_search", base=0.8, novelty=0.15, archetype=GUARDIAN))  # 0.935
    a = closer(why_not(rec, "similarity_search"), "archetype")
    # needed bonus -0.015 + 0.045 = 0.03 -> weight 0.70
    assert a["possible"] is True
    assert a["needed"] == pytest.approx(0.70, abs=1e-6)
    assert a["text"] == "guardian weight 0.70 (now 0.40) would do it"
    assert wins(rec, "similarity_search", "archetype", (a["needed"] - 0.5) * 0.15)


def test_base_closer_possible_and_impossible():
    rec = base_record()
    b = closer(why_not(rec, "similarity_search"), "base")
    # similarity_search's base is fixed at 0.55 (its declared rule): a base of 0.75 cannot happen
    assert b["possible"] is False and b["needed"] == pytest.approx(0.745 + TIE_EPS, abs=1e-12)
    assert b["text"] == ("base would need 0.75; its rule gives only 0.55 "
                         "(0.55 when spreading activation found symbols (I))")
    assert wins(rec, "similarity_search", "base", b["needed"])  # it would win, but no rule gives it
    assert not wins(rec, "similarity_search", "base", 0.745)  # a tie goes to kg_query, which comes first

    g = closer(why_not(rec, "gap_analysis"), "base")
    assert g["possible"] is False
    assert g["needed"] == pytest.approx(1.18, abs=1e-6)
    assert g["text"] == ("base would need 1.18; its rule gives at most 0.75 "
                         "(clamp(0.7·sim + 0.1 if kg_query was used twice on this goal, 0.3, 0.75))")


def test_recency_closer():
    rec = base_record()
    r = closer(why_not(rec, "gap_analysis"), "recency")  # penalty 0.2, margin 0.58
    assert r["possible"] is False and r["needed"] < 0
    assert "even no recency penalty (now −0.20) would leave it 0.38 short" == r["text"]

    rec = record("reason", cand("reason", base=0.5, novelty=0.15, archetype=SAGE),  # 0.68
                 cand("synthesize_triple", base=0.7, recency=0.4, archetype=SAGE, plan=0.1))  # 0.43
    r = closer(why_not(rec, "synthesize_triple"), "recency")
    assert r["possible"] is True
    # the penalty is 0.4, 0.2, 0.1 or none: −0.15 cannot happen, −0.10 (ran three cycles ago) can
    assert r["needed"] == pytest.approx(0.1, abs=1e-12)
    assert r["text"] == "recency would need to be −0.10 instead of −0.40 (if it had last run three cycles ago)"
    assert wins(rec, "synthesize_triple", "recency", r["needed"])
    assert not wins(rec, "synthesize_triple", "recency", 0.15)  # exactly the margin only ties


def test_fixed_bonus_closers():
    info = why_not(base_record(), "similarity_search")  # margin 0.195
    e = closer(info, "episodic")
    assert e["possible"] is True
    assert e["text"] == "the episodic bonus (+0.20) would close it: a recalled episode naming similarity_search"
    assert closer(info, "novelty")["possible"] is False
    assert closer(info, "novelty")["text"] == "already has the novelty bonus (+0.15)"
    assert closer(info, "plan")["text"] == "already has the plan bonus (+0.10)"
    assert not [x for x in info["closers"] if x["factor"] == "pressure"]  # only memory_recall earns it

    info = why_not(base_record(), "gap_analysis")  # margin 0.58
    assert closer(info, "episodic")["possible"] is False
    assert closer(info, "episodic")["text"].startswith("the episodic bonus (+0.20) would not be enough")
    assert closer(info, "plan")["possible"] is False


def test_pressure_closer_for_memory_recall():
    rec = record("kg_query", kg98(), cand("memory_recall", base=0.55, novelty=0.15, archetype=GUARDIAN,
                                          episodic=0.2))  # 0.885
    p = closer(why_not(rec, "memory_recall"), "pressure")
    assert p["possible"] is True
    assert p["text"] == "the pressure bonus (+0.20) would close it: memory pressure above 0.7"


def test_tie_order_earlier_tool_needs_only_the_margin():
    # reason (index 2) chose with 0.68; kg_query (earlier) and gap_analysis (later) both at 0.58
    rec = record("reason",
                 cand("kg_query", base=0.4, novelty=0.15, archetype=SAGE),
                 cand("reason", base=0.5, novelty=0.15, archetype=SAGE),
                 cand("gap_analysis", base=0.43, novelty=0.15, archetype=HEALER))
    early, late = why_not(rec, "kg_query"), why_not(rec, "gap_analysis")
    assert early["margin"] == pytest.approx(0.1, abs=1e-12) and late["margin"] == pytest.approx(0.1, abs=1e-12)
    # the plan bonus (exactly +0.10) ties: enough for the earlier tool, not for the later one
    assert closer(early, "plan")["possible"] is True
    assert closer(late, "plan")["possible"] is False
    assert closer(early, "base")["needed"] == pytest.approx(0.8, abs=1e-12)  # kg_query's base is 0.4 or 0.8
    assert closer(late, "base")["needed"] == pytest.approx(0.53 + TIE_EPS, abs=1e-12)
    assert wins(rec, "kg_query", "plan", 0.1)
    assert not wins(rec, "gap_analysis", "plan", 0.1)


def test_runner_up_ties_go_to_list_order():
    rec = record("kg_query", kg98(),
                 cand("reason", base=0.5, novelty=0.15, archetype=SAGE),  # 0.68
                 cand("synthesize_triple", base=0.5, novelty=0.15, archetype=SAGE))  # 0.68
    assert runner_up(rec)["tool"] == "reason"


def test_chosen_wins_a_tie():
    rec = record("kg_query", cand("kg_query", base=0.4, novelty=0.15, archetype=SAGE, plan=0.1),
                 cand("reason", base=0.5, novelty=0.15, archetype=SAGE))
    lines = why_chosen(rec)
    assert lines[1] == "kg_query tied reason at 0.68 and won the tie (earlier in the tool order):"
    text = why_not_text(rec, "reason")
    assert text[0] == "reason tied kg_query at 0.68; kg_query comes first in the tool order"
    assert "  base: base would need to rise above 0.50; its rule gives only 0.50 (0.5 when triples are known (K))" in text


def test_not_offered():
    info = why_not(base_record(), "user_interact")
    assert info["offered"] is False
    assert info["closers"] == []
    assert info["margin"] == pytest.approx(0.98)
    assert info["why_not"].startswith("not offered: goal not similar")
    assert why_not_text(base_record(), "user_interact") == [
        "user_interact was not offered: goal not similar to the tool (sim 0.41 ≤ 0.55)"]


def test_why_chosen_lines():
    lines = why_chosen(base_record())
    assert lines == [
        "[score=0.98: base=0.80 recency=-0.00 novelty=+0.15 episodic=+0.00 pressure=+0.00 archetype=+0.030 plan=+0.00]",
        "kg_query beat similarity_search by 0.20:",
        "  base 0.80 vs 0.55 (kg_query: few known triples around the goal;"
        " similarity_search: fixed base when activation found symbols)",
        "  archetype +0.030 vs −0.015 (sage 0.70 vs guardian 0.40)",
        "  plan +0.00 vs +0.10 (similarity_search is the current plan step)",
    ]


def test_why_chosen_recency_and_novelty_reasons():
    rec = record("kg_query", kg98(), cand("synthesize_triple", base=0.8, recency=0.4, novelty=0.0, archetype=SAGE))
    lines = why_chosen(rec)
    assert lines[1] == "kg_query beat synthesize_triple by 0.55:"
    assert lines[2] == "  recency −0.00 vs −0.40 (synthesize_triple ran last cycle on this goal)"
    assert lines[3] == "  novelty +0.15 vs +0.00 (kg_query never used on this goal)"
    assert len(lines) == 4  # base and archetype are equal: no line


def test_only_tool_offered_and_veto():
    rec = record("kg_query", kg98(), cand("reason", offered=False, why_not="not offered: K is false"),
                 vetoed="destructive_action")
    lines = why_chosen(rec)
    assert lines[1] == "kg_query was the only tool offered"
    assert runner_up(rec) is None
    assert lines[-1] == "vetoed by shadow pattern 'destructive_action': kg_query was chosen but did not run"
    assert not any("vetoed" in line for line in why_chosen(base_record()))


def test_why_not_of_chosen_and_unknown_tool():
    assert why_not(base_record(), "kg_query")["closers"] == []
    assert why_not_text(base_record(), "kg_query") == ["kg_query was chosen"]
    with pytest.raises(KeyError):
        why_not(base_record(), "no_such_tool")


def test_why_not_text_layout():
    text = why_not_text(base_record(), "similarity_search")
    assert text[0] == "similarity_search lost to kg_query by 0.20 (0.79 vs 0.98)"
    assert text[1] == "any one of these would have made it win:"
    assert "  archetype: guardian weight would need 1.70; the cap is 0.95" in text
    assert text.index("not enough alone:") < text.index(
        "  base: base would need 0.75; its rule gives only 0.55 (0.55 when spreading activation found symbols (I))")


def test_record_is_not_mutated_and_output_deterministic():
    rec = base_record()
    before = copy.deepcopy(rec)
    out = (why_chosen(rec), why_not(rec, "gap_analysis"), why_not_text(rec, "similarity_search"), runner_up(rec))
    assert rec == before
    assert out == (why_chosen(rec), why_not(rec, "gap_analysis"), why_not_text(rec, "similarity_search"),
                   runner_up(rec))


# -- real records ------------------------------------------------------------------------

LINE = re.compile(r"^  (\w+) ([+−]?\d+\.\d+) vs ([+−]?\d+\.\d+) \(.+\)$")


def fmt(factor, x):
    if factor == "base":
        return f"{x:.2f}"
    if factor == "recency":
        return f"−{x:.2f}"
    nd = 3 if factor == "archetype" else 2
    s = f"{abs(x):.{nd}f}"
    return ("−" if x < 0 and float(s) else "+") + s


def real_records(name, n):
    return run(build_agent(load_scenario(name)), n)


@pytest.fixture(scope="module")
def zoo_records():
    recs = real_records("zoo", 12)
    assert recs
    return recs


def test_zoo_why_chosen_consistent_with_candidates(zoo_records):
    for rec in zoo_records:
        cands = {c["tool"]: c for c in rec["decide"]["candidates"]}
        chosen = cands[rec["decide"]["tool"]]
        other = runner_up(rec)
        offered_others = [c for c in rec["decide"]["candidates"] if c["offered"] and c is not chosen]
        assert other == max(offered_others, key=lambda c: c["score"])  # max keeps the first of equals
        lines = why_chosen(rec)
        assert lines[0] == rec["decide"]["breakdown"]
        margin = chosen["score"] - other["score"]
        assert margin >= 0
        if margin > 0:
            shown = f"{margin:.2f}" if margin >= 0.005 else f"{margin:.3f}"
            assert lines[1] == f"{chosen['tool']} beat {other['tool']} by {shown}:"
        else:
            assert lines[1].startswith(f"{chosen['tool']} tied {other['tool']} at ")
        factor_lines = [ln for ln in lines[2:] if ln.startswith("  ")]
        seen, contribs = [], []
        for ln in factor_lines:
            m = LINE.match(ln)
            assert m, ln
            factor, a, b = m.groups()
            assert a == fmt(factor, chosen[factor]) and b == fmt(factor, other[factor]), ln
            seen.append(factor)
            contribs.append(other[factor] - chosen[factor] if factor == "recency" else chosen[factor] - other[factor])
        assert set(seen) == {f for f in FACTORS if abs(chosen[f] - other[f]) > 1e-12}
        assert contribs == sorted(contribs, reverse=True)
        assert sum(contribs) == pytest.approx(
            sum(chosen[f] for f in FACTORS) - 2 * chosen["recency"] - sum(other[f] for f in FACTORS) + 2 * other["recency"])


def wins_weight(rec, tool, weight):
    """Does `tool` win once its archetype's weight is `weight`? The weight lifts every tool of
    that archetype (bonus = (weight - 0.5) * 0.15), as a real psyche would."""
    arch = SPEC_BY_NAME[tool].archetype
    cands = []
    for c in rec["decide"]["candidates"]:
        vals = {f: c[f] for f in FACTORS}
        if SPEC_BY_NAME[c["tool"]].archetype == arch:
            vals["archetype"] = (weight - 0.5) * 0.15
        cands.append(Candidate(c["tool"], c["offered"], c["why_not"], **vals))
    return choose(cands).tool == tool


def base_limit(tool):
    spec = SPEC_BY_NAME[tool]
    return spec.base_range[1] if spec.base_range else max(spec.base_values)


@pytest.mark.parametrize("scenario", ["zoo", "shadow", "solar"])
def test_real_closers_really_close_the_gap(scenario):
    for rec in real_records(scenario, 10):
        chosen = rec["decide"]["tool"]
        order = [c["tool"] for c in rec["decide"]["candidates"]]
        for c in rec["decide"]["candidates"]:
            if c["tool"] == chosen:
                continue
            info = why_not(rec, c["tool"])
            assert info["margin"] == pytest.approx(max(0.0, why_not(rec, chosen)["chosen_score"] - c["score"]))
            if not c["offered"]:
                assert info["closers"] == [] and info["why_not"]
                continue
            earlier = order.index(c["tool"]) < order.index(chosen)
            slack = 1e-12 if earlier else 0.0  # an exact tie is a float coin-flip; nudge it our way
            limits = {"base": base_limit(c["tool"]), "recency": 0.0, "archetype": 0.95}
            for x in info["closers"]:
                f = x["factor"]
                if x["possible"]:
                    v = x["needed"] - slack if f == "recency" else x["needed"] + slack
                    if f == "archetype":
                        assert wins_weight(rec, c["tool"], v), (c["tool"], x)
                    else:
                        assert wins(rec, c["tool"], f, v), (c["tool"], x)
                elif f == "archetype":  # even the cap is not enough
                    assert not wins_weight(rec, c["tool"], 0.95), (c["tool"], x)
                elif f in limits:  # even the factor's limit (its rule's largest base) is not enough
                    if not (f == "recency" and c["recency"] == 0):
                        assert not wins(rec, c["tool"], f, limits[f]), (c["tool"], x)
                elif f == "novelty" and c["recency"] > 0:  # it ran recently: "never used" cannot hold
                    assert "never used on this goal, but" in x["text"]
                elif c[f] == 0:  # a fixed bonus it lacks, and gaining it is not enough
                    assert not wins(rec, c["tool"], f, {"novelty": 0.15, "plan": 0.1}.get(f, 0.2)), (c["tool"], x)
            assert why_not_text(rec, c["tool"])


def test_a_choice_against_the_table_is_never_said_to_have_won():
    """A model (or workflow, Soar, a person) may choose a tool the table scored lower: the Why
    says so and who chose, instead of 'tied … and won the tie'."""
    rec = record("kg_query", cand("kg_query", base=0.4, novelty=0.15, archetype=SAGE),  # 0.58
                 cand("reason", base=0.5, novelty=0.15, archetype=SAGE))  # 0.68
    rec["decide"]["llm"] = {"tool": "kg_query", "utility_tool": "reason"}
    lines = why_chosen(rec)
    assert lines[1] == ("kg_query was not the utility table's choice: reason scored 0.10 more (0.68 vs 0.58); "
                        "the model chose kg_query. Where they differ:")
    assert not any("won" in line or "beat" in line for line in lines)
    tie = record("reason", cand("kg_query", base=0.5, novelty=0.15, archetype=SAGE),
                 cand("reason", base=0.5, novelty=0.15, archetype=SAGE))
    tie["decide"]["workflow"] = {"step": 1}
    assert why_chosen(tie)[1] == ("reason was not the utility table's choice: kg_query tied it at 0.68 and comes "
                                  "first in the tool order; its workflow chose reason. Where they differ:")
