"""The chat messages of an interview (world/interview.py): a model agent asked, in free text, why
it did what it did at one of its steps, on a copy of its state then.

The prompt holds only what the record and the copy hold: the step's decision as recorded
(the tool, its input, what the model said then), what the agent saw (its goals and the working
memory entries it observed), the tools offered and their scores, what happened, and the
model's structured memory before the step. The model is told to answer from these alone and to
say when they do not hold the answer. Everything is bounded, so a long run never bloats it.

The scripted model (scripted.py) answers an interview too, from the prompt's own lines: it says
what it chose and the reason it gave then, which is what the scripted model did.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from .memory import MEMORY_MAX_BYTES, StructuredMemory
from .text import one_line

INTERVIEW_HEAD = "You are being interviewed about one step you took"  # how the scripted model knows one
LINE = 300
OUTPUT = 600
WM_LINES = 10

# the user message's lines the scripted model reads back
CHOSE = "chose: "
GATE = "at the gate, "
RATIONALE = "your rationale then: "
QUESTION = "## Question"


def _system(agent: str, world: str) -> str:
    return "\n".join([
        f"{INTERVIEW_HEAD}: you are agent {agent} of the world {world}.",
        "Answer the question in at most five sentences, in the first person, from the state below alone:",
        "your decision as it was recorded, what you saw, your goals and your memory then.",
        "When the state does not hold the answer, say that you cannot tell; never invent a fact.",
        "Answer in plain text, not JSON.",
    ])


def build_interview_prompt(agent: str, world: str, step: str, record: Mapping[str, Any],
                           memory: StructuredMemory | None, question: str) -> list[dict]:
    """The messages asking `agent`'s model `question` about its step `step` (`record`: the
    step's cycle record; `memory`: the model's structured memory before the step)."""
    d, act = record["decide"], record["act"]
    llm = d.get("llm") or {}
    u: list[str] = [f"Step {step} (your cycle {record['cycle']}), round {record['round']}, clock {record['clock']:g} s.",
                    "", "## Your focus goal then", f"{record['goal']['id']}: {one_line(record['goal']['description'], LINE)}",
                    "", "## Your goals after the step"]
    u.extend(f"- {g['id']} [{g['status']}] {one_line(g['description'], LINE)}" for g in record["goals"][:20])
    u += ["", "## What you saw: your most recent working memory entries (oldest first)"]
    recent = record["observe"].get("recent") or []
    u.extend(f"- {one_line(e['content'], LINE)}" for e in recent[-WM_LINES:])
    if not recent:
        u.append("(empty)")
    u += ["", "## Tools offered, with their utility scores"]
    for c in d["candidates"]:
        if c["offered"]:
            u.append(f"- {c['tool']}: {c['score']:.2f}; input: {json.dumps(str(c.get('input') or ''), ensure_ascii=False)}")
    u += ["", "## Your decision as recorded", f"{CHOSE}{d['tool']} (input {json.dumps(str(d.get('input') or ''), ensure_ascii=False)})"]
    user = d.get("user")
    if isinstance(user, dict):  # a world's gate: you proposed, and its answer decided
        by = str(user.get("by") or "user")
        said = f" ({one_line(str(user['why']), LINE)})" if user.get("why") else ""
        u.append(f"{GATE}{by} chose {d['tool']} in place of your proposal {user.get('proposed')}{said}"
                 if user.get("decision") == "choose" else
                 f"{GATE}{by} {'rejected' if user.get('decision') == 'reject' else 'approved'} your proposal{said}")
    if llm:
        u.append(f"your answer then: {llm.get('status')}" + (f" ({one_line(llm['reason'], LINE)})" if llm.get("reason") else ""))
        if llm.get("situation_assessment"):
            u.append(f"your assessment then: {one_line(llm['situation_assessment'], LINE)}")
        if llm.get("action_rationale"):
            u.append(f"{RATIONALE}{one_line(llm['action_rationale'], LINE)}")
    u += ["", "## What happened",
          f"success {str(bool(act['success'])).lower()}, progress {act['progress']}"
          + (f", vetoed by {act.get('veto')}" if act.get("vetoed") else ""),
          one_line(act.get("output") or "", OUTPUT),
          "", "## Your structured memory before the step",
          memory.render(MEMORY_MAX_BYTES) if memory is not None and not memory.is_empty() else "(empty)",
          "", QUESTION, one_line(question, LINE * 2)]
    return [{"role": "system", "content": _system(agent, world)}, {"role": "user", "content": "\n".join(u)}]


def is_interview(messages: list[dict]) -> bool:
    return bool(messages) and str(messages[0].get("content", "")).startswith(INTERVIEW_HEAD)


def scripted_interview_reply(messages: list[dict]) -> str:
    """The scripted model's answer: what it chose and the reason it gave then, read from the
    prompt (which is what the scripted model did: no more, no less)."""
    user = str(messages[-1].get("content", "")).split("\n")
    chose = next((x[len(CHOSE):] for x in user if x.startswith(CHOSE)), "nothing recorded")
    reason = next((x[len(RATIONALE):] for x in user if x.startswith(RATIONALE)), None)
    asked = user[user.index(QUESTION) + 1] if QUESTION in user and user.index(QUESTION) + 1 < len(user) else ""
    said = f" My reason then: {reason}" if reason else " I gave no reason then that was recorded."
    gate = next((x for x in user if x.startswith(GATE)), None)
    if gate is None:
        return f"scripted: you asked {asked!r}. I chose {chose}.{said}"
    # the gate's answer decided: say so, never "I chose" what a person chose
    told = "A" + gate[1:].replace(" your proposal", " my proposal")
    return f"scripted: you asked {asked!r}. The step's decision: {chose}. {told}.{said}"
