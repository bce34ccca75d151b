"""Interview an agent of a recorded world (issue 26, world/interview.py): each answer's claims are
the recorded cycle's (the tool, its utility, the runner-up, why not another, the movers), a
question nothing can answer says what can be, a model agent's model is asked through the
cassette (asked again: replayed, no model), and every interview is kept on an interview branch
while the branch asked on keeps its bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from akh_tui.engine.errors import InputError
from akh_tui.engine.paths import Locations, bundled_data_dir
from akh_tui.engine.world.interview import TOPICS, interview, interview_lines, list_interviews, read_question
from akh_tui.engine.world.moved import read_set
from akh_tui.engine.world.worldrun import WorldRun, delete_world, export_world, list_worlds


def locs(tmp: Path) -> Locations:
    return Locations(tmp / "data", tmp / "config.toml")


@pytest.fixture(scope="module")
def market(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("interview")
    r = WorldRun.start(locs(tmp), "market")
    r.run(8)
    yield r
    r.close()


def _cycle(row) -> dict | None:
    for line in row.lines:
        if line.startswith('{"type":"cycle"'):
            return json.loads(line)
    return None


def _runner_up(rec: dict) -> dict | None:
    """The best offered tool but the chosen one, read here from the record (ties: the earlier)."""
    best = None
    for c in rec["decide"]["candidates"]:
        if c["offered"] and c["tool"] != rec["decide"]["tool"] and (best is None or c["score"] > best["score"]):
            best = c
    return best


def test_every_answer_claims_what_the_recorded_cycle_holds(market):
    checked = why_nots = 0
    for row in market.steps():
        rec = _cycle(row)
        if rec is None:
            continue
        got = interview(market, row.name, "why did you choose that, and what were the scores?", keep=False)
        c, d = got["claims"], rec["decide"]
        chosen = next(x for x in d["candidates"] if x["tool"] == d["tool"])
        assert (c["tool"], c["input"], c["utility"]) == (d["tool"], d["input"], chosen["score"])
        ru = _runner_up(rec)
        assert c["runner_up"] == ({"tool": ru["tool"], "utility": ru["score"]} if ru else None)
        text = "\n".join(got["lines"])
        assert f"I chose {d['tool']}" in text and f"utility {chosen['score']:.2f}" in text
        if ru is not None:
            assert c["margin"] == chosen["score"] - ru["score"]
            assert f"{ru['tool']} at {ru['score']:.2f}" in text or f"{ru['tool']} scored higher, at {ru['score']:.2f}" in text
        offered = sorted((x for x in d["candidates"] if x["offered"]), key=lambda x: -x["score"])
        assert c["offered"] == [{"tool": x["tool"], "utility": x["score"]} for x in offered]
        for other in offered:
            if other["tool"] == d["tool"]:
                continue
            w = interview(market, row.name, f"why not {other['tool']}?", keep=False)
            assert w["topics"] == ["why_not"]
            claim = w["claims"]["why_not"][other["tool"]]
            assert claim["utility"] == other["score"] and claim["margin"] == max(0.0, chosen["score"] - other["score"])
            assert w["lines"][0].startswith(f"{other['tool']} lost to {d['tool']}") or \
                w["lines"][0].startswith(f"{other['tool']} tied {d['tool']}")
            why_nots += 1
        checked += 1
    assert checked >= 14 and why_nots >= 20


def test_the_movers_claimed_are_the_other_steps_since_whose_effects_the_step_read(market):
    rows = list(market.steps())
    movers_seen = 0
    for row in rows:
        if _cycle(row) is None:
            continue
        got = interview(market, row.name, "who moved you?", keep=False)
        seen = read_set(market, row.step).keys()
        prev = max((x.step for x in rows if x.step < row.step and x.agent == row.agent), default=0)
        expected = []
        for x in rows:
            if not (prev < x.step < row.step) or x.agent in (None, row.agent):
                continue
            touched = set()
            for line in x.lines:
                r = json.loads(line)
                if r.get("agent") != x.agent:
                    continue
                if r["type"] == "ledger":
                    touched |= {("balance", r["from"]), ("balance", r["to"])}
                elif r["type"] == "artifact":
                    touched.add(("artifact", r["id"]))
            if touched & seen:
                expected.append(x.name)
        assert got["claims"]["movers"] == expected and got["claims"]["since_step"] == prev
        for name in expected:
            assert any(line.startswith(f"mover {name} ") for line in got["lines"])
        movers_seen += len(expected)
    assert movers_seen >= 3


def test_what_it_saw_its_goals_and_memory_are_the_records_and_the_rewound_agents(market):
    row = next(x for x in market.steps() if x.name == "6:bold")
    rec = _cycle(row)
    got = interview(market, row.name, "what did you see, what were your goals and your working memory?", keep=False)
    assert got["topics"] == ["saw", "goals", "memory"]
    c = got["claims"]
    assert c["saw"]["goals"] == rec["observe"]["goals"] and c["saw"]["wm_size"] == rec["observe"]["wm_size"]
    assert c["saw"]["read_set"] == read_set(market, row.step).as_dict()
    assert c["goals"]["focus"] == rec["goal"]["id"]
    assert c["goals"]["after"] == {str(g["id"]): g["status"] for g in rec["goals"]}
    before = market.world_at(row.step - 1).agents["bold"].wm
    assert c["memory"]["size"] == len(before) == rec["observe"]["wm_size"]
    assert c["memory"]["recent"][-5:] == [e["id"] for e in rec["observe"]["recent"]]


def test_a_question_nothing_can_answer_says_what_can_be_and_claims_nothing(market):
    got = interview(market, "6:bold", "what is the weather like on the quay?", keep=False)
    assert got["topics"] == [] and got["claims"] == {}
    assert got["lines"][0] == "I cannot answer that from my record, and I will not guess. I can answer:"
    assert [x.strip() for x in got["lines"][1:]] == list(TOPICS.values())
    tools = {c["tool"] for c in _cycle(next(x for x in market.steps() if x.name == "6:bold"))["decide"]["candidates"]}
    assert not any(t in line for line in got["lines"] for t in tools)  # no tool named: nothing invented


def test_reading_a_question():
    tools, chosen = ["kg_query", "read_artifact", "bid", "noop"], "read_artifact"
    assert read_question("Why?", tools, chosen).topics == ("choice",)
    assert read_question("why didn't you bid?", tools, chosen) .topics == ("why_not",)
    asked = read_question("why read artifact and not kg_query?", tools, chosen)
    assert asked.topics == ("choice", "why_not") and asked.tools == ("read_artifact", "kg_query")
    assert read_question("what was in your working memory?", tools, chosen).topics == ("memory",)
    assert read_question("who moved you? did it work?", tools, chosen).topics == ("movers", "result")
    assert read_question("tell me a joke", tools, chosen).topics == ()
    assert read_question("Why? And why not bid?", tools, chosen).topics == ("choice", "why_not")
    assert read_question("why did you not pick bid", tools, chosen).topics == ("choice", "why_not")


def test_an_interview_is_kept_on_its_own_branch_and_the_branch_asked_on_keeps_its_bytes(tmp_path):
    r = WorldRun.start(locs(tmp_path), "market")
    r.run(6)
    r.close()
    before = tmp_path / "before.jsonl"
    export_world(locs(tmp_path), "w1:main", before)
    r = WorldRun.open_readonly(locs(tmp_path))
    a = interview(r, "6:bold", "why?")
    b = interview(r, "6:bold", "why not kg_query?")
    c = interview(r, "5:cautious", "what happened?")
    step = r.step_number("6:bold")
    r.close()
    assert a["interview"] == {"branch": "interview-1", "n": 1} and b["interview"] == {"branch": "interview-1", "n": 2}
    assert c["interview"] == {"branch": "interview-2", "n": 1}
    after = tmp_path / "after.jsonl"
    export_world(locs(tmp_path), "w1:main", after)
    assert after.read_bytes() == before.read_bytes()
    [w] = list_worlds(locs(tmp_path))
    branches = {x["name"]: x for x in w["branches"]}
    assert branches["main"]["current"] and not branches["interview-1"]["current"]
    iv = branches["interview-1"]
    assert iv["parent"] == branches["main"]["id"] and iv["fork_step"] == step == iv["steps"]
    assert iv["edits"] == [{"edit": "interview", "agent": "bold", "at": "6:bold"}]
    # its trace is the branch asked on up to the step asked about
    side = tmp_path / "side.jsonl"
    export_world(locs(tmp_path), "w1:interview-1", side)
    lines = before.read_text().splitlines()
    assert side.read_text().splitlines() == lines[:len(side.read_text().splitlines())]
    assert json.loads(side.read_text().splitlines()[-1])["round"] == 6
    got = list_interviews(locs(tmp_path))["interviews"]
    assert [(x["branch"], x["n"], x["at"], x["question"], x["parent"]) for x in got] == [
        ("interview-1", 1, "6:bold", "why?", "main"), ("interview-1", 2, "6:bold", "why not kg_query?", "main"),
        ("interview-2", 1, "5:cautious", "what happened?", "main")]
    assert got[0]["lines"] == a["lines"] and got[0]["claims"] == a["claims"]
    assert [x["at"] for x in list_interviews(locs(tmp_path), at="5:cautious")["interviews"]] == ["5:cautious"]
    assert interview_lines(got[1])[-1] == "(kept as interview 2 on branch interview-1)"
    # the world resumes where it was, on main: the interview branch is not current
    r = WorldRun.resume(locs(tmp_path))
    assert r.branch_name == "main"
    r.run(1)
    r.close()
    delete_world(locs(tmp_path), "w1")
    with pytest.raises(InputError):
        list_interviews(locs(tmp_path), world=1)


def test_a_step_nobody_decided_at_is_refused_or_answered_as_refused(tmp_path):
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    p = tmp_path / "w.toml"
    p.write_text(f'[world]\nname = "m"\nrounds = 3\n[world.limits]\nwindow_s = 100\nactions = 1\n'
                 f'[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\n', encoding="utf-8")
    r = WorldRun.start(locs(tmp_path), str(p))
    r.run(3)
    got = interview(r, "2:a", "why did you do nothing?")
    assert got["claims"] == {"tool": None, "refused": "actions"}
    assert "the rate limits refused my turn" in got["lines"][0]
    with pytest.raises(InputError, match="no step 9:a"):
        interview(r, "9:a", "why?")
    with pytest.raises(InputError, match="ask a question"):
        interview(r, "1:a", "   ")
    r.close()


def _model_world(tmp: Path) -> Path:
    market = (bundled_data_dir() / "worlds" / "market").as_posix()
    p = tmp / "w.toml"
    p.write_text(f'[world]\nname = "m"\nrounds = 6\nmint_every = 5\nstarting_scrip = 50\n'
                 f'[[agents]]\nid = "a"\nscenario = "{market}/trader.toml"\ndecider = "scripted"\n'
                 f'[[agents]]\nid = "u"\nscenario = "{market}/trader.toml"\n', encoding="utf-8")
    return p


def test_a_model_agents_model_is_asked_on_a_copy_of_its_state_and_asked_again_is_replayed(tmp_path, monkeypatch):
    from akh_tui.engine.llm.cassette import CASSETTE_NAME, Cassette
    from akh_tui.engine.llm import scripted

    r = WorldRun.start(locs(tmp_path), str(_model_world(tmp_path)))
    r.run(4)
    r.close()
    r = WorldRun.open_readonly(locs(tmp_path))
    rec = _cycle(next(x for x in r.steps() if x.name == "3:a"))
    got = interview(r, "3:a", "why did you choose that?", model=True)
    m = got["model"]
    assert m["asked"] and not m["replayed"]
    assert m["reply"] == (f"scripted: you asked 'why did you choose that?'. I chose {rec['decide']['tool']} (input "
                          f"{json.dumps(rec['decide']['input'])}). My reason then: {rec['decide']['llm']['action_rationale']}")
    assert got["lines"][0].startswith("my model says (asked now, and recorded") and got["lines"][1] == "  " + m["reply"]
    assert "what my record says:" in got["lines"]
    assert got["claims"]["tool"] == rec["decide"]["tool"]  # the record's part is the record's
    assert Cassette(locs(tmp_path).data_dir / CASSETTE_NAME).get(m["prompt_hash"])["reply"] == m["reply"]

    def no_model(messages):
        raise RuntimeError("the model was asked again")

    # the scripted model still decides (a rewind replays its turns by asking it), but cannot be interviewed
    monkeypatch.setattr(scripted, "scripted_interview_reply", no_model)
    again = interview(r, "3:a", "why did you choose that?", model=True)
    assert again["model"]["replayed"] and again["model"]["reply"] == m["reply"]
    assert again["lines"][0].startswith("my model says (replayed from the recorded model calls")
    # a question it was never asked needs the model, which cannot answer now: said, not raised
    other = interview(r, "3:a", "what did you see?", model=True)
    assert other["model"]["asked"] is False
    assert other["lines"][0] == "my model could not be asked: RuntimeError: the model was asked again"
    with pytest.raises(InputError, match="no model to ask") as err:
        interview(r, "3:u", "why?", model=True)
    assert err.value.field == "--model"
    r.close()
    # the live world was not moved by any of it: it resumes and replays as recorded
    r = WorldRun.resume(locs(tmp_path))
    r.world_at(r.last_step)
    r.close()


def test_an_interview_asks_a_server_for_free_text_not_a_json_decision():
    from akh_tui.engine.llm.config import LLMConfig
    from akh_tui.engine.llm.dialect import TEXT_REPLY, request_body
    from akh_tui.engine.llm.interview import build_interview_prompt
    from akh_tui.engine.llm.reply import reply_schema

    cfg = LLMConfig.from_dict({"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "NONE"})
    msgs = [{"role": "user", "content": "why?"}]
    assert "response_format" not in request_body(cfg, msgs, TEXT_REPLY)
    assert "response_format" in request_body(cfg, msgs, reply_schema(["noop"], None))  # a decision still is JSON
    rec = {"cycle": 3, "round": 2, "clock": 1.0, "goal": {"id": 1, "description": "Find whales"},
           "goals": [{"id": 1, "status": "active", "description": "Find whales"}],
           "observe": {"recent": [{"content": "Observe: 1 active goal(s)"}]},
           "decide": {"tool": "noop", "input": "", "candidates": [{"tool": "noop", "offered": True, "score": 0.05,
                                                                   "input": ""}]},
           "act": {"success": True, "progress": "no_change", "vetoed": False, "output": "nothing"}}
    prompt = build_interview_prompt("a", "m", "2:a", rec, None, "why noop?")
    assert "never invent a fact" in prompt[0]["content"]
    assert prompt[1]["content"].splitlines()[-2:] == ["## Question", "why noop?"]


# ---- a gated step (world/gate.py): the agent proposed, and whoever answered the gate decided ----

# by round: (decision, by); a choose takes the best offered tool that is not the proposal
_GATE_PLAN = {1: ("approve", "user"), 2: ("reject", "auto"), 3: ("choose", "seat:bold"), 4: ("approve", "auto"),
              5: ("choose", "user"), 6: ("reject", "seat:bold"), 7: ("choose", "auto"), 8: ("reject", "user")}
_BY = {"user": "the user", "auto": "the auto-answer", "seat:bold": "seat:bold"}


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory):
    from akh_tui.engine import Answer, Proposal

    def answer(p: Proposal) -> Answer:
        decision, by = _GATE_PLAN[p.round]
        other = next((c["tool"] for c in p.candidates if c["tool"] != p.tool), None)
        if decision == "choose" and other is not None:
            return Answer("choose", other, by=by, why="not that one")
        return Answer("reject" if decision == "reject" else "approve", by=by)

    tmp = tmp_path_factory.mktemp("gated")
    r = WorldRun.start(locs(tmp), "market")
    r.gate(["bold"])
    r.run(8, answer=answer)
    yield r
    r.close()


def test_a_gated_steps_answer_tells_who_decided_as_decide_user_records_it(gated):
    from akh_tui.engine.world.moved import moved_lines, who_moved

    seen: set[tuple[str, str]] = set()
    for row in gated.steps():
        rec = _cycle(row)
        if rec is None:
            continue
        got = interview(gated, row.name, "why did you choose that, what happened, and your psyche?", keep=False)
        text, claims, d = "\n".join(got["lines"]), got["claims"], rec["decide"]
        user = d.get("user")
        if user is None:  # an ungated agent chose itself
            assert row.agent == "cautious" and "user" not in claims and got["lines"][0].startswith("I chose ")
            continue
        seen.add((user["decision"], user["by"]))
        by = _BY[user["by"]]
        proposed = user.get("proposed", d["tool"])
        assert claims["user"] == user and claims["proposed"] == proposed and claims["tool"] == d["tool"]
        head = got["lines"][0]
        assert head.startswith(f"I proposed {proposed}") and not head.startswith("I chose")
        first = moved_lines(who_moved(gated, row.name))[0]
        assert f": bold proposed {proposed}" in first
        if user["decision"] == "choose":
            assert proposed != d["tool"] and f"; {by} chose {d['tool']}" in head and f"{by} chose" in first
            assert f"({by} said: not that one)" in head
        elif user["decision"] == "reject":
            assert f"; {by} rejected it, so it did not run" in head and f"{by} rejected it" in first
            assert f"did not run: {by} rejected it at the gate" in text
            assert "my shadow vetoed" not in text and f"my shadow did not veto it: {by} rejected {d['tool']}" in text
            assert f"rejected by {by} before act: {d['tool']} was proposed but did not run" in text  # the explainer's
        else:
            assert f"; {by} approved it" in head and f"{by} approved it" in first
    assert {d for d, _ in seen} == {"approve", "reject", "choose"}
    assert {b for _, b in seen} == {"user", "auto", "seat:bold"}
    assert ("choose", "seat:bold") in seen and ("reject", "user") in seen


def test_why_not_the_proposal_a_seat_chose_against_names_the_seat_not_a_tie(gated):
    row = next(r for r in gated.steps() if r.name == "3:bold")
    user = _cycle(row)["decide"]["user"]
    assert user["decision"] == "choose"
    got = interview(gated, row.name, f"why not {user['proposed']}? and the scores?", keep=False)
    text = "\n".join(got["lines"])
    assert got["lines"][0] == f"I proposed {user['proposed']}; seat:bold chose {user['tool']} instead"
    assert f"it was the utility table's better choice; seat:bold chose {user['tool']}" in text and " tied " not in text
    assert "(chosen by seat:bold)" in text and "(proposed)" in text


def test_a_model_interviewed_about_a_gated_step_is_told_the_gates_answer_and_the_scripted_one_says_it():
    from akh_tui.engine.llm.interview import build_interview_prompt, scripted_interview_reply

    def rec(user: dict) -> dict:
        return {"cycle": 3, "round": 2, "clock": 1.0, "goal": {"id": 1, "description": "Find whales"},
                "goals": [{"id": 1, "status": "active", "description": "Find whales"}],
                "observe": {"recent": []},
                "decide": {"tool": "noop", "input": "", "user": user,
                           "candidates": [{"tool": "noop", "offered": True, "score": 0.05, "input": ""},
                                          {"tool": "kg_query", "offered": True, "score": 0.5, "input": "whale"}]},
                "act": {"success": True, "progress": "no_change", "vetoed": False, "output": "nothing"}}

    chose = build_interview_prompt("a", "m", "2:a", rec({"decision": "choose", "tool": "noop", "by": "seat:a",
                                                         "why": "wait", "proposed": "kg_query"}), None, "why?")
    assert "at the gate, seat:a chose noop in place of your proposal kg_query (wait)" in chose[1]["content"].splitlines()
    reply = scripted_interview_reply(chose)
    assert "I chose" not in reply and "At the gate, seat:a chose noop in place of my proposal kg_query (wait)." in reply
    rejected = build_interview_prompt("a", "m", "2:a", rec({"decision": "reject", "tool": "noop", "by": "user",
                                                            "why": ""}), None, "why?")
    assert "at the gate, user rejected your proposal" in rejected[1]["content"].splitlines()
