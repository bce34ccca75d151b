"""Interview an agent of a recorded world (issue 26): ask it, in words, why it did what it did at
one of its steps, and keep the question and the answer on a side branch of the world.

Two who can answer:
- **the record and its explainer** (always): the step's cycle record read by the explainers a
  single run has (explain/decision.py: the choice, its utility, the runner-up and the margin,
  why not another tool), the world's own (moved.py: the read-set, who moved the decision) and
  the agent's state right before the step (the door's rewind: its working memory then). Each
  answer carries its `claims` (the tool, its input and utility, the runner-up, the movers...),
  the values as the record holds them, and its words are made from those values alone. A
  question none of these can answer gets the list of what they can, never a guess.
- **its model** (`model=True`, a model agent only: a model decider, or a workflow whose step
  then asked a model): the model asked the question on a copy of its state right before the step
  (the rewound world's decider: its structured memory then) with the step's record, through
  the decider's cassette (llm/cassette.py; the data dir's for the scripted model): asked once,
  the same question at the same step is answered from the recording, with no model. Its words
  are its own and are shown as such, followed by the record's answer, so the two can be read
  side by side.

Nothing of the branch asked on changes: the interview is kept on its interview branch
(store/interviews.py: a branch forked after the step, with no step of its own), and the branch
asked on is not made current. A step of a round no agent could act in, or one that is not on
the branch, is an InputError naming `--at`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import InputError
from ..explain import soar
from ..explain.decision import answered_by, chooser, gate_answer, model_lines, runner_up, why_chosen, why_not, why_not_text
from ..redaction import redact
from ..store import interviews as kept
from ..store.session import SessionStore
from ..store.worldstore import WorldStore
from ..tools.specs import TOOL_NAMES
from .actions import ACTION_NAMES
from .moved import moved_lines, read_set, who_moved

if TYPE_CHECKING:
    from ..llm.decider import LLMDecider
    from ..paths import Locations
    from .world import World
    from .worldrun import WorldRun

QUESTION_MAX = 2000  # characters of a question kept
REPLY_MAX = 4000  # characters of a model's reply kept
WM_SHOWN = 10  # working memory entries an answer lists

# What each topic answers, in the words of "what I can answer" (the order answers are given in).
TOPICS: dict[str, str] = {
    "choice": "why I chose my action (its utility, the runner-up and the margin)",
    "why_not": "why not another tool (name it)",
    "scores": "the utility of every tool offered, and why the others were not",
    "saw": "what I saw: my goals, the working memory I observed, what I read of the shared world",
    "movers": "who moved my decision: other agents' actions since my last step that changed what I read",
    "goals": "my goals then",
    "memory": "my working memory then",
    "plan": "my plan then",
    "result": "what happened when I acted",
    "psyche": "my psyche then (archetypes, persona, a veto)",
}
_WORDS: dict[str, set[str]] = {
    "choice": {"chose", "choose", "chosen", "choice", "pick", "picked", "decide", "decided", "decision", "action",
               "runner", "second", "beat", "win", "won", "prefer", "preferred"},
    "scores": {"score", "scores", "scored", "utility", "utilities", "candidate", "candidates", "option", "options",
               "alternative", "alternatives", "rank", "ranking", "factor", "factors", "breakdown"},
    "saw": {"see", "saw", "seen", "observe", "observed", "notice", "noticed", "read", "look", "looked", "know",
            "knew", "perceive", "perceived"},
    "movers": {"who", "moved", "influence", "influenced", "influences", "affected", "affect", "others"},
    "goals": {"goal", "goals", "trying", "aim", "aims", "want", "wanted", "objective", "objectives", "purpose"},
    "memory": {"memory", "memories", "remember", "remembered", "recall", "wm"},
    "plan": {"plan", "plans", "planned", "strategy"},
    "result": {"result", "results", "happen", "happened", "outcome", "succeed", "succeeded", "success",
               "successful", "fail", "failed", "failure", "output", "progress", "went", "work", "worked"},
    "psyche": {"psyche", "personality", "archetype", "archetypes", "feel", "feeling", "shadow", "veto", "vetoed",
               "persona", "temperament", "character", "individuation"},
}
# (in this order: a "why" that is part of "why not" asks about the other tool, not the choice)
_PHRASES = {"working memory": " memory ", "other agent": " who ", "next best": " runner ", "why didn't": " not ",
            "why did not": " not ", "why not": " not ", "did not": " not ", "didn't": " not "}


@dataclass(frozen=True)
class Asked:
    """What a question asks: its topics, in TOPICS' order, and the tools it names."""
    topics: tuple[str, ...]
    tools: tuple[str, ...]


def read_question(question: str, candidates: list[str], chosen: str) -> Asked:
    """The topics a question asks about, by its words (deterministic: no model reads it). A
    tool it names is the choice when it is the chosen one, else a why-not; a "why" (not a "why
    not") asks for the choice too; nothing recognised is no topic at all (the answer says what
    can be answered)."""
    text = " " + question.lower() + " "
    names = sorted({*candidates, *TOOL_NAMES, *ACTION_NAMES}, key=lambda n: -len(n))
    found: list[tuple[int, str]] = []
    for name in names:
        for form in {name, name.replace("_", " ")}:
            for m in re.finditer(r"(?<![a-z_])" + re.escape(form) + r"(?![a-z_])", text):
                found.append((m.start(), name))
                text = text[:m.start()] + " " * len(form) + text[m.end():]  # a tool's words are not topics
    tools = tuple(dict.fromkeys(n for _, n in sorted(found)))
    for phrase, word in _PHRASES.items():
        text = text.replace(phrase, word)
    words = set(re.findall(r"[a-z']+", text))
    topics = {t for t, ws in _WORDS.items() if words & ws}
    if chosen in tools:
        topics.add("choice")
    if any(t != chosen for t in tools):
        topics.add("why_not")
    if "why" in words:
        topics.add("choice")
    return Asked(tuple(t for t in TOPICS if t in topics), tools)


# ---- the step asked about --------------------------------------------------------------------

@dataclass
class _Step:
    run: "WorldRun"
    step: int
    name: str
    agent: str
    record: dict[str, Any] | None  # its cycle record (None: a turn the rate limits refused)
    refused: dict[str, Any] | None
    _before: "World | None" = None

    def before(self) -> "World":
        """The world right before the step (a rewind of the branch: nothing is written)."""
        if self._before is None:
            self._before = self.run.world_at(self.step - 1)
        return self._before


def _the_step(run: "WorldRun", at: str | int) -> _Step:
    step = at if isinstance(at, int) else run.step_number(at)
    row = next(iter(run.steps(step, step)), None)
    if row is None:
        raise InputError(f"step {step} is not on this branch", field="--at")
    if row.agent is None:
        raise InputError(f"step {row.name} is a round no agent could act in: nobody to interview there", field="--at")
    record = refused = None
    for line in row.lines:
        if line.startswith('{"type":"cycle"'):
            record = json.loads(line)
            break
        if line.startswith('{"type":"rate_limited"'):
            refused = json.loads(line)
            break
    if record is None and refused is None:
        raise InputError(f"step {row.name}: {row.agent} had no active goal and took no turn: nothing to ask about",
                         field="--at")
    return _Step(run, step, row.name, row.agent, record, refused)


# ---- the record's answers, topic by topic ----------------------------------------------------

def _tool_words(c: dict[str, Any]) -> str:
    inp = c.get("input")
    return c["tool"] + (f"({inp})" if inp else "")


def _choice(s: _Step, rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    d = rec["decide"]
    chosen = next((c for c in d["candidates"] if c["tool"] == d["tool"]), None)
    other = runner_up(rec) if chosen is not None else None
    claims.update(tool=d["tool"], input=d.get("input", ""),
                  utility=chosen["score"] if chosen is not None else None,
                  runner_up={"tool": other["tool"], "utility": other["score"]} if other is not None else None,
                  margin=(chosen["score"] - other["score"]) if chosen is not None and other is not None else None)
    user = gate_answer(rec)
    # a gated step: the agent proposed, and whoever answered the gate decided (decide.user)
    head = ""  # after the tool's words: its utility, against the runner-up
    # a model's, a workflow's or a gate's choice may score below another tool: then the table
    # did not choose it, and "it beat the runner-up" would be untrue
    below = chosen is not None and other is not None and other["score"] > chosen["score"]
    if chosen is not None:
        head = f", utility {chosen['score']:.2f}"
        if below and other is not None:
            head += f"; it was not the utility table's choice: {other['tool']} scored higher, at {other['score']:.2f}"
            if user is None or user.get("decision") != "choose":
                head += f"; {chooser(rec)} chose it"  # (a gate's chooser is named in the head)
            claims["table_choice"] = other["tool"]
        else:
            head += (f"; the runner-up was {other['tool']} at {other['score']:.2f}" if other is not None
                     else "; it was the only tool offered")
    if user is None:
        head = f"I chose {_tool_words(d)}{head}"
    else:
        by = answered_by(user.get("by"))
        proposed = user.get("proposed") if user.get("decision") == "choose" else d["tool"]
        claims["proposed"] = proposed
        if user.get("decision") == "choose":
            head = f"I proposed {proposed}; {by} chose {_tool_words(d)} instead{head}"
        elif user.get("decision") == "reject":
            head = f"I proposed {_tool_words(d)}{head}; {by} rejected it, so it did not run"
        else:
            head = f"I proposed {_tool_words(d)}{head}; {by} approved it"
        if user.get("why"):
            head += f" ({by} said: {user['why']})"
    lines = [head + "."]
    explain = soar.why_chosen if soar.is_soar(rec) else why_chosen
    lines += explain(rec)[:1] if below else explain(rec)
    lines += model_lines(rec)
    wf = d.get("workflow")
    if wf:
        lines.append(f"my workflow's step {wf['step']!r} chose it; the utility table's choice was {wf['utility_tool']}")
        claims["workflow"] = {"step": wf["step"], "utility_tool": wf["utility_tool"]}
    return lines


def _why_not(s: _Step, rec: dict[str, Any], tools: tuple[str, ...], claims: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    got: dict[str, Any] = {}
    cands = {c["tool"]: c for c in rec["decide"]["candidates"]}
    for tool in tools:
        if tool == rec["decide"]["tool"]:
            continue
        if tool not in cands:
            lines.append(f"{tool} was not one of my tools at this step (they were: {', '.join(cands)})")
            got[tool] = {"candidate": False}
            continue
        if soar.is_soar(rec):
            lines += soar.why_not_text(rec, tool)
            got[tool] = {"candidate": True, "offered": bool(cands[tool]["offered"])}
            continue
        info = why_not(rec, tool)
        got[tool] = {"candidate": True, "offered": info["offered"], "utility": info["score"],
                     "margin": info["margin"], "why_not": info["why_not"]}
        lines += why_not_text(rec, tool)
    claims["why_not"] = got
    user = gate_answer(rec)
    if user is not None and user.get("decision") == "choose" and user.get("proposed") in tools:
        lines.insert(0, f"I proposed {user['proposed']}; {answered_by(user.get('by'))} chose {rec['decide']['tool']} instead")
    return lines


def _scores(s: _Step, rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    cands = rec["decide"]["candidates"]
    offered = sorted((c for c in cands if c["offered"]), key=lambda c: -c["score"])
    claims["offered"] = [{"tool": c["tool"], "utility": c["score"]} for c in offered]
    lines = [f"the tools offered to me, best first ({len(offered)} of {len(cands)}):"]
    lines += [f"  {c['tool']:<18} {c['score']:.2f}" + _marks(rec, c["tool"]) for c in offered]
    off = [c for c in cands if not c["offered"]]
    if off:
        lines.append("not offered: " + "; ".join(f"{c['tool']} ({(c.get('why_not') or 'not offered').removeprefix('not offered: ')})"
                                                  for c in off))
    return lines


def _marks(rec: dict[str, Any], tool: str) -> str:
    """What a tool was at the step: chosen, or at a gate proposed, rejected or chosen by whom."""
    user = gate_answer(rec)
    if user is None:
        return "  (chosen)" if tool == rec["decide"]["tool"] else ""
    by = answered_by(user.get("by"))
    if user.get("decision") == "choose":
        return f"  (chosen by {by})" if tool == rec["decide"]["tool"] else "  (proposed)" if tool == user.get("proposed") else ""
    if tool != rec["decide"]["tool"]:
        return ""
    return f"  (proposed, rejected by {by})" if user.get("decision") == "reject" else f"  (proposed, approved by {by})"


def _saw(s: _Step, rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    ob, orient = rec["observe"], rec["orient"]
    seen = read_set(s.run, s.step)
    claims["saw"] = {"goals": list(ob["goals"]), "wm_size": ob["wm_size"],
                     "recent": [e["id"] for e in ob.get("recent", [])], "read_set": seen.as_dict()}
    lines = [f"my active goals: {', '.join(f'#{g}' for g in ob['goals']) or 'none'}; "
             f"my focus: #{rec['goal']['id']} {rec['goal']['description']!r}",
             f"my working memory held {ob['wm_size']} entries; the most recent I observed:"]
    lines += [f"  [{e['kind']}] {e['content']}" for e in ob.get("recent", [])] or ["  (none)"]
    act = orient.get("activated") or []
    if act:
        lines.append("what my graph brought to mind: " + ", ".join(f"{a['symbol']} {a['activation']:.2f}" for a in act))
    rs = seen.as_dict()
    shared = [f"balance {b}" for b in rs["balances"]] + [f"{a['id']}@{a['version']}" for a in rs["artifacts"]]
    lines.append("of the shared world I read: " + (", ".join(shared) if shared else "nothing"))
    return lines


def _movers(s: _Step, claims: dict[str, Any]) -> list[str]:
    got = who_moved(s.run, s.step)
    claims["movers"] = list(got["movers"])
    claims["since_step"] = got["since_step"]
    since = f"since my previous step, step {got['since_step']}" if got["since_step"] else "since the world began"
    # moved_lines' first two lines (the decision, the read-set) are the choice's and saw's answers
    return [f"who moved my decision: the other agents' steps {since}:"] + moved_lines(got)[2:]


def _goals(s: _Step, rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    active = set(rec["observe"]["goals"])
    claims["goals"] = {"focus": rec["goal"]["id"], "active": sorted(active),
                       "after": {str(g["id"]): g["status"] for g in rec["goals"]}}
    lines = [f"my focus was goal #{rec['goal']['id']}: {rec['goal']['description']!r}",
             "my goals (active when I began; their status after the step):"]
    for g in rec["goals"]:
        was = "active" if g["id"] in active else "not active"
        sub = f", a sub-goal of #{g['parent']}" if g.get("parent") is not None else ""
        lines.append(f"  #{g['id']} {g['description']!r}: {was}, then {g['status']}{sub}")
    return lines


def _memory(s: _Step, claims: dict[str, Any]) -> list[str]:
    a = s.before().agents[s.agent]
    wm = a.wm
    recent = wm.recent(WM_SHOWN)
    claims["memory"] = {"size": len(wm), "capacity": wm.capacity, "recent": [e.id for e in recent]}
    lines = [f"before the step my working memory held {len(wm)} of {wm.capacity} entries; the {len(recent)} most recent:"]
    lines += [f"  #{e.id} [{e.kind}, cycle {e.cycle}, relevance {e.relevance:.2f}] {e.content}" for e in recent] or ["  (none)"]
    model = a.decider.model_memory(600)
    if model:
        lines.append("my model's structured memory: " + " ".join(model.split()))
    return lines


def _plan(rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    plan = rec.get("plan")
    claims["plan"] = None if plan is None else {"goal": plan["goal"], "strategy": plan["strategy"],
                                                "steps": [st["tool"] for st in plan["steps"]]}
    if plan is None:
        return ["I had no plan at this step"]
    lines = [f"my plan for goal #{plan['goal']} ({plan['strategy']}, attempt {plan['attempt']}), after the step {plan['status']}:"]
    lines += [f"  {st.get('marker', '')} {st['tool']}: {st['rationale']} [{st['status']}]" for st in plan["steps"]]
    if rec["decide"].get("plan_step"):
        lines.append(f"the step I was on: {rec['decide']['plan_step']}")
    return lines


def _result(rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    act = rec["act"]
    claims["result"] = {"success": act["success"], "progress": act["progress"], "vetoed": act["vetoed"]}
    user = gate_answer(rec)
    if act["vetoed"] and act.get("veto") == "user" and user is not None:
        return [f"{rec['decide']['tool']} did not run: {answered_by(user.get('by'))} rejected it at the gate",
                f"progress {act['progress']}"]
    if act["vetoed"]:
        return [f"{rec['decide']['tool']} did not run: my shadow vetoed it ({act.get('veto')})", f"progress {act['progress']}"]
    lines = [f"{rec['decide']['tool']} {'succeeded' if act['success'] else 'failed'}: progress {act['progress']}",
             f"its output: {act.get('output', '')}"]
    if act.get("missing"):
        lines.append("still missing for my goal: " + ", ".join(act["missing"]))
    lines.append(f"I was {rec['state']} after it")
    return lines


def _psyche(rec: dict[str, Any], claims: dict[str, Any]) -> list[str]:
    p = rec["psyche"]
    claims["psyche"] = {"dominant": p.get("dominant"), "archetypes": dict(p.get("archetypes", {}))}
    lines = [f"my dominant archetype: {p.get('dominant')}" + (f", persona {p['persona']}" if p.get("persona") else ""),
             "archetype weights after the step: " + ", ".join(f"{k} {v:.2f}" for k, v in p.get("archetypes", {}).items())]
    act = rec["act"]
    user = gate_answer(rec)
    if act.get("vetoed") and act.get("veto") == "user":
        # a veto by the user (a world's gate, a run's approval) is not the psyche's
        who = answered_by(user.get("by")) if user is not None else "the user"
        lines.append(f"my shadow did not veto it: {who} rejected {rec['decide']['tool']}")
    elif act.get("vetoed"):
        lines.append(f"my shadow vetoed {rec['decide']['tool']} ({act.get('veto')})")
    return lines


def _refused_answer(s: _Step, claims: dict[str, Any]) -> list[str]:
    r = s.refused or {}
    claims.update(tool=None, refused=r.get("resource"))
    return [f"I took no decision at {s.name}: the rate limits refused my turn ({r.get('resource')} used up in the "
            f"window), so nothing ran and nothing was scored"]


def _cannot() -> list[str]:
    return ["I cannot answer that from my record, and I will not guess. I can answer:"] + \
           [f"  {words}" for words in TOPICS.values()]


def record_answer(s: _Step, asked: Asked) -> tuple[list[str], dict[str, Any]]:
    """The record's and its explainers' answer: lines, and the claims they are made from."""
    claims: dict[str, Any] = {}
    if s.record is None:
        return _refused_answer(s, claims), claims
    rec = s.record
    if not asked.topics:
        return _cannot(), claims
    lines: list[str] = []
    user = gate_answer(rec)
    if user is not None:
        claims["user"] = dict(user)  # a gated step: who answered, and how (decide.user as recorded)
    for topic in asked.topics:
        if topic == "choice":
            part = _choice(s, rec, claims)
        elif topic == "why_not":
            part = _why_not(s, rec, asked.tools, claims)
        elif topic == "scores":
            part = _scores(s, rec, claims)
        elif topic == "saw":
            part = _saw(s, rec, claims)
        elif topic == "movers":
            part = _movers(s, claims)
        elif topic == "goals":
            part = _goals(s, rec, claims)
        elif topic == "memory":
            part = _memory(s, claims)
        elif topic == "plan":
            part = _plan(rec, claims)
        elif topic == "result":
            part = _result(rec, claims)
        else:
            part = _psyche(rec, claims)
        lines += part
    return lines, claims


# ---- its model's answer ----------------------------------------------------------------------

def _model_of(s: _Step) -> "LLMDecider":
    """The model that decided the step, on the copy of the agent's state right before it."""
    from ..llm.decider import LLMDecider
    from .workflow import WorkflowDecider

    inner = getattr(s.before().agents[s.agent].decider, "inner", None)
    if isinstance(inner, WorkflowDecider):
        step = inner.step
        inner = inner.models.get(step.target) if step.kind == "llm" else None
        if inner is None:
            raise InputError(f"{s.agent}'s workflow step at {s.name} asked no model: there is no model to ask; "
                             f"ask without --model (the record answers)", field="--model")
    if not isinstance(inner, LLMDecider):
        raise InputError(f"{s.agent} decides by its {s.run.world.agents[s.agent].decider.kind} decider: there is no "
                         f"model to ask; ask without --model (the record answers)", field="--model")
    return inner


def model_answer(s: _Step, question: str) -> tuple[list[str], dict[str, Any]]:
    """The agent's model asked `question` on a copy of its state (through the cassette)."""
    from ..llm.cassette import CASSETTE_NAME, Cassette
    from ..llm.interview import build_interview_prompt
    from ..llm.text import foreign
    from ..llm.transport import LLMError

    if s.record is None:
        raise InputError(f"step {s.name} was refused by the rate limits: the model was not asked then, and there is "
                         f"nothing to ask it about", field="--at")
    model = _model_of(s)
    if model.cassette is None:
        # the scripted model keeps no recordings of its decisions (it needs none); an interview's
        # answer is recorded like a live model's, so asking again replays it
        model.cassette = Cassette(s.run.locations.data_dir / CASSETTE_NAME)
    messages = build_interview_prompt(s.agent, s.run.spec.name, s.name, s.record, model.memory, question)
    try:
        text, call = model.ask(messages, f"interview {s.name}")
    except LLMError as exc:
        why = redact(exc.message)
        return [f"my model could not be asked: {why}"], {"asked": False, "error": why}
    except Exception as exc:  # a provider's bug is said, as a decision's is (llm/decider.py), never raised
        why = f"{type(exc).__name__}: {foreign(exc, 200)}"
        return [f"my model could not be asked: {why}"], {"asked": False, "error": why}
    reply = _printable(redact(text))[:REPLY_MAX]
    how = "replayed from the recorded model calls" if call.get("replayed") else "asked now, and recorded"
    lines = [f"my model says ({how}; its own words, not checked against the record):"]
    lines += [f"  {x}" for x in reply.splitlines() if x.strip()] or ["  (an empty reply)"]
    return lines, {"asked": True, "replayed": bool(call.get("replayed")), "prompt_hash": call.get("prompt_hash"),
                   "tokens": call.get("tokens", 0), "reply": reply}


def _printable(text: str) -> str:
    """Foreign text (a model's reply, a question from a command line) as a terminal may show it:
    control characters (an escape sequence's ESC, a carriage return that would overwrite what
    was said) dropped, line breaks kept."""
    return "".join(ch for ch in text if ch == "\n" or ch.isprintable())


# ---- the interview ---------------------------------------------------------------------------

def interview(run: "WorldRun", at: str | int, question: str, model: bool = False, keep: bool = True) -> dict[str, Any]:
    """Ask the agent of step `at` (`ROUND:AGENT`, or its number on the run's branch) `question`
    about that step; with `model`, its model too. The answer: `lines` (the words), `claims`
    (what the record's part of them says, as the record's values), `topics`, `model` (its
    model's call, or None). With `keep` the interview is kept on the step's interview branch
    (`interview`: its branch and number); the run's own branch and its bytes are untouched."""
    text = " ".join(str(question).split())
    if not text:
        raise InputError("ask a question (like \"why did you choose that?\")", field="QUESTION")
    text = _printable(redact(text))[:QUESTION_MAX]
    s = _the_step(run, at)
    rec = s.record
    candidates = [c["tool"] for c in rec["decide"]["candidates"]] if rec is not None else []
    asked = read_question(text, candidates, rec["decide"]["tool"] if rec is not None else "")
    lines, claims = record_answer(s, asked)
    call: dict[str, Any] | None = None
    if model:
        said, call = model_answer(s, text)
        lines = said + ["what my record says:"] + [f"  {x}" for x in lines]
    out: dict[str, Any] = {"world": run.world_id, "asked_on": run.branch_name, "at": s.name, "step": s.step,
                           "agent": s.agent, "cycle": rec["cycle"] if rec is not None else None, "question": text,
                           "source": "model" if model else "record", "topics": list(asked.topics),
                           "tools": list(asked.tools), "lines": lines, "claims": claims, "model": call}
    if keep:
        name, n = _keep(run, s, out)
        out["interview"] = {"branch": name, "n": n}
    return out


def _keep(run: "WorldRun", s: _Step, answer: dict[str, Any]) -> tuple[str, int]:
    """The interview on its branch: through the run's own store when it may write, else (a run
    opened read-only, as `world interview` opens one) a writing connection of its own, for
    this one transaction (it writes no step of the world: no writer's lock is needed)."""
    payload = {k: answer[k] for k in ("at", "step", "agent", "cycle", "question", "source", "topics", "tools",
                                      "lines", "claims", "model")}
    if not run.store.readonly:
        return kept.add(run.ws, run.branch, s.step, s.agent, s.name, payload)
    if run.store.path is None:
        raise InputError("this store is read-only and in memory: an interview cannot be kept", field="--data-dir")
    st = SessionStore(run.store.path)
    try:
        return kept.add(WorldStore(st), run.branch, s.step, s.agent, s.name, payload)
    finally:
        st.close()


def list_interviews(locations: "Locations", world: int | None = None, at: str | None = None) -> dict[str, Any]:
    """The interviews of world `world` (default: the data dir's current world), oldest first,
    each with its interview branch, number and the branch it was asked on; `at` keeps those of
    one step name (`ROUND:AGENT`)."""
    if not locations.has_store():
        raise InputError(f"no world in {locations.data_dir} (start one with `akh-tui world run FILE`)", field="--data-dir")
    st = SessionStore(locations.session_db, readonly=True)
    try:
        ws = WorldStore(st)
        if world is None:
            b = ws.current()
            if b is None:
                raise InputError(f"no world in {locations.data_dir} (start one with `akh-tui world run FILE`)",
                                 field="--data-dir")
            world = int(ws.branch_info(b)["world"])
        ws.world_meta(world)
        rows = kept.rows(ws, world)
    finally:
        st.close()
    if at is not None:
        from .worldrun import parse_step_name

        rnd, agent = parse_step_name(at)
        rows = [r for r in rows if r["at"] == f"{rnd}:{agent if agent is not None else '-'}"]
    return {"world": world, "interviews": rows}


def interview_lines(answer: dict[str, Any]) -> list[str]:
    """An interview as lines: who was asked what, the answer, and where it is kept."""
    head = f"{answer['at']}: {answer['agent']}" + (f" (its cycle {answer['cycle']})" if answer.get("cycle") else "")
    out = [f"{head}, asked: {answer['question']}", *answer["lines"]]
    where = answer.get("interview") or ({"branch": answer["branch"], "n": answer["n"]} if "branch" in answer else None)
    if where is not None:
        out.append(f"(kept as interview {where['n']} on branch {where['branch']})")
    return out


def interviews_of(run: "WorldRun", step: int, agent: str) -> Iterator[dict[str, Any]]:
    """The interviews kept of `agent`'s step `step` on the run's branch, oldest first (the
    workbench's history)."""
    for row in kept.rows(run.ws, run.world_id):
        if row["step"] == step and row["agent"] == agent and row["parent"] == run.branch_name:
            yield row
