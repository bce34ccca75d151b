"""Who moved this decision (issue 26): for one agent's step, the other agents' actions since its
last step whose effects are in what the step read, and on request the proof that one of them
moved it.

The read-set of a step is what its turn looked at in the shared world: the artifacts it read
(their owner, price, version and triples: an offer, a read, an invoke or a bid looks each up
by id) and the balances it read (its own for affordability, any other account an action
checks). It is not a field of the §13 trace (a trace's bytes stay those of SPEC §13): it is
taken from the step itself, replayed from the branch's saved state with the world's ledger and
artifact table watched, and the replay is checked against the recorded lines first, so the
read-set is the recorded step's (a replay that differs is an error, as for any rewind).

A step's effects are its own records: the ledger entries its agent made (from and to
accounts) and the artifact versions it wrote. The mint's entries (agent null) are the
world's, never an agent's, and are not movers.

The proof: the world rebuilt right before the mover's step, the `NoopTurn` fork edit applied
to the mover, and the steps up to the moved agent's replayed in memory (nothing is written to
the store): the decision (the chosen tool and its input) is compared with the recorded one.
In a gated world the noop turn asks nobody, and each step's recorded gate answer is given
only to the proposal it was given to (gate.Counterfactual): a step whose proposal is another
one there (the mover changed it) has it approved as proposed, and the proof's words say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

from ..errors import InputError
from ..explain.decision import answered_by, gate_answer
from .edits import NoopTurn, apply_edits
from .gate import Answerer, Counterfactual, Recorded

if TYPE_CHECKING:
    from ..store.worldstore import StepRow
    from .world import World
    from .worldrun import WorldRun

Effect = tuple[str, str]
_WINDOW = 64  # steps read at a time looking back for the agent's previous step  # ("balance", account) or ("artifact", id)


@dataclass
class ReadSet:
    """What a step's turn read of the shared world."""
    balances: set[str] = field(default_factory=set)
    artifacts: dict[str, int] = field(default_factory=dict)  # id -> the version it saw (first look)
    words: set[str] = field(default_factory=set)  # looked up in the artifacts' word index (read_artifact's offer)

    def keys(self) -> set[Effect]:
        return {("balance", a) for a in self.balances} | {("artifact", a) for a in self.artifacts}

    def as_dict(self) -> dict[str, Any]:
        return {"balances": sorted(self.balances),
                "artifacts": [{"id": k, "version": v} for k, v in sorted(self.artifacts.items())],
                "words": sorted(self.words)}


class _SeenIds(dict[str, Any]):  # the artifact table, noting which ids the turn looked up
    def __init__(self, base: dict[str, Any], seen: ReadSet) -> None:
        super().__init__(base)
        self.seen = seen

    def __getitem__(self, key: str) -> Any:
        got = super().__getitem__(key)
        self.seen.artifacts.setdefault(key, got.version)
        return got

    def get(self, key: str, default: Any = None) -> Any:
        got = super().get(key, default)
        if got is not None:
            self.seen.artifacts.setdefault(key, got.version)
        return got


def _decision(row: "StepRow") -> dict[str, Any] | None:
    """The step's decision: its cycle record's tool and input (None: it did not decide)."""
    for line in row.lines:
        if line.startswith('{"type":"cycle"'):
            rec = json.loads(line)
            return {"tool": rec["decide"]["tool"], "input": rec["decide"].get("input", "")}
        if line.startswith('{"type":"rate_limited"'):
            return None
    return None


def _user(row: "StepRow") -> dict[str, Any] | None:
    """The step's recorded gate answer (`decide.user`), or None (no gate fired)."""
    for line in row.lines:
        if line.startswith('{"type":"cycle"') and '"user":{"decision":' in line:
            return gate_answer(json.loads(line))
    return None


def effects(row: "StepRow") -> dict[Effect, list[str]]:
    """What the step's own agent changed in the shared world, each with the words of its record."""
    out: dict[Effect, list[str]] = {}
    for line in row.lines:
        if not (line.startswith('{"type":"ledger"') or line.startswith('{"type":"artifact"')):
            continue
        rec = json.loads(line)
        if rec.get("agent") != row.agent or row.agent is None:
            continue  # the mint's (or another's) entries
        if rec["type"] == "ledger":
            words = f"{rec['from']} -> {rec['to']} {rec['amount']} ({rec['why']})"
            for acct in (rec["from"], rec["to"]):
                out.setdefault(("balance", acct), []).append(words)
        else:
            out.setdefault(("artifact", rec["id"]), []).append(f"wrote {rec['id']}@{rec['version']}")
    return out


def read_set(run: "WorldRun", step: int) -> ReadSet:
    """The read-set of step `step` of the run's branch (its recorded lines checked)."""
    row = _row(run, step)
    w = run.world_at(step - 1)
    seen = ReadSet()
    ledger, arts = w.ledger, w.artifacts
    plain_balance = ledger.balance

    def balance(account: str) -> int:
        seen.balances.add(account)
        return plain_balance(account)

    plain_sharing = arts.sharing

    def sharing(words: "set[str] | frozenset[str]") -> dict[str, int]:
        seen.words.update(words)
        return plain_sharing(words)

    plain_turn = w.turn

    def turn(aid: str, answer: "Answerer | None" = None) -> dict[str, Any] | None:
        # only the turn's own reads: a new round's wake-ups and the mint after the round's last
        # turn are the world's, read in the same step
        base = arts.by_id
        arts.by_id = _SeenIds(base, seen)
        ledger.balance = balance  # type: ignore[method-assign]
        arts.sharing = sharing  # type: ignore[method-assign]
        try:
            return plain_turn(aid, answer)
        finally:
            base.clear()
            base.update(dict(arts.by_id))
            arts.by_id = base
            del ledger.balance, arts.sharing
    w.turn = turn  # type: ignore[method-assign]
    got: list[str] = []
    w.lines = got.append
    name = w.step(answer=Recorded.from_rows([row]))
    run._check_replay(row, name, got)
    return seen


def _row(run: "WorldRun", step: int) -> "StepRow":
    row = next(iter(run.steps(step, step)), None)
    if row is None:
        raise InputError(f"step {step} is not on this branch", field="--at")
    return row


def _previous(run: "WorldRun", row: "StepRow") -> int:
    """The step number of the agent's previous step on the branch (0: none)."""
    # backwards a window at a time: the previous step is usually a round back, and a long
    # world's steps are not all read for it
    end = row.step - 1
    while end >= 1:
        start = max(1, end - _WINDOW + 1)
        found = [r.step for r in run.steps(start, end) if r.agent == row.agent]
        if found:
            return found[-1]
        end = start - 1
    return 0


def who_moved(run: "WorldRun", at: str | int, prove: bool = False) -> dict[str, Any]:
    """`world why-moved --at ROUND:AGENT [--prove]` (`at` a step's name, or its number on the
    branch): the step's read-set, every other agent's step since the agent's last one with the
    effects it had (and whether they are in the read-set: a mover), and with `prove`, each
    mover's proof."""
    step = at if isinstance(at, int) else run.step_number(at)
    row = _row(run, step)
    if row.agent is None:
        raise InputError(f"step {row.name} is a round no agent could act in: nobody decided there", field="--at")
    decision = _decision(row)
    if decision is None:
        raise InputError(f"step {row.name} made no decision (the agent was rate limited or had no active goal)", field="--at")
    seen = read_set(run, step)
    keys = seen.keys()
    since = _previous(run, row)
    others: list[dict[str, Any]] = []
    for r in run.steps(since + 1, step - 1):
        if r.agent is None or r.agent == row.agent:
            continue
        eff = effects(r)
        hit = sorted(k for k in eff if k in keys or _hid(run, k, eff[k], seen.words))
        others.append({"step": r.step, "name": r.name, "agent": r.agent, "action": (_decision(r) or {}).get("tool"),
                       "effects": [f"{k[0]} {k[1]}" for k in sorted(eff)],
                       "seen": [f"{k[0]} {k[1]}" for k in hit],
                       "why": [w for k in hit for w in eff[k]],
                       "mover": bool(hit)})
    user = _user(row)
    if user is not None:
        decision = {**decision, "user": user}  # a gated step: the agent proposed, the gate's answer decided
    out: dict[str, Any] = {"at": row.name, "step": step, "agent": row.agent, "decision": decision,
                           "since_step": since, "read_set": seen.as_dict(), "actions": others,
                           "movers": [a["name"] for a in others if a["mover"]]}
    if prove:
        for a in others:
            if a["mover"]:
                a["proof"] = prove_mover(run, a["step"], row)
    return out


def _hid(run: "WorldRun", key: Effect, words: list[str], asked: set[str]) -> bool:
    """Whether a write took out of the word index a word the step looked up: the version before
    it held the word, the one written does not, so the step did not see (and so did not look
    up) an artifact it would have seen."""
    if key[0] != "artifact" or not asked:
        return False
    a = run.world.artifacts.get(key[1])  # versions never change once written: any later world holds them
    if a is None:
        return False
    for w in words:
        version = int(w.rpartition("@")[2])
        if version >= 2:
            before, now = a.versions[version - 2].words, a.versions[version - 1].words
            if (before - now) & asked:
                return True
    return False


def _replay_to(w: "World", target: "StepRow", answers: Recorded) -> Iterator[tuple[tuple[int, str | None], list[str]]]:
    """Steps of `w` (a rewound world) until the target's round is over or its agent has taken
    its turn in it; a step the branch recorded a gate's answer for is given that answer."""
    while True:
        got: list[str] = []
        w.lines = got.append
        name = w.step(answer=answers)
        if name is None:
            return
        yield name, got
        if name == (target.round, target.agent) or name[0] > target.round:
            return


def prove_mover(run: "WorldRun", mover_step: int, target: "StepRow") -> dict[str, Any]:
    """The proof for one mover: the world right before its step, its action replaced by `noop`,
    replayed to the target's step; whether the target's decision changed."""
    mover = _row(run, mover_step)
    assert mover.agent is not None
    w = run.world_at(mover_step - 1)
    apply_edits(w, [NoopTurn(mover.agent)], run.spec)
    recorded = _decision(target)
    fork_decision: dict[str, Any] | None = None
    replaced: dict[str, Any] | None = None
    took = False
    # the branch's answers, each given only to the proposal it was given to; the noop turn is
    # asked nothing (nobody answered a noop)
    answers = Counterfactual.of_rows(run.steps(mover_step, target.step), ungated=[(mover.round, mover.agent)])
    for name, lines in _replay_to(w, target, answers):
        from ..store.worldstore import StepRow as Row

        got = Row(0, name[0], name[1], lines)
        if replaced is None and name[1] == mover.agent:
            replaced = _decision(got)
        if name == (target.round, target.agent):
            took = True
            fork_decision = _decision(got)
    changed = fork_decision != recorded
    if not took:
        words = f"without {mover.name}'s action, {target.agent} takes no step in round {target.round}"
    elif changed:
        words = (f"without {mover.name}'s action, {target.name} chooses "
                 f"{_words(fork_decision)} instead of {_words(recorded)}: it moved the decision")
    else:
        words = f"without {mover.name}'s action, {target.name} still chooses {_words(recorded)}: it did not move the decision"
    unreplayed = [{"step": f"{u['round']}:{u['agent']}", **{k: v for k, v in u.items() if k not in ("round", "agent")}}
                  for u in answers.unreplayed]
    if unreplayed:
        words += "; " + "; ".join(_unreplayed_words(u) for u in unreplayed)
    return {"mover": mover.name, "replaced_with": (replaced or {}).get("tool"), "recorded": recorded,
            "fork": fork_decision, "took_step": took, "changed": changed, "unreplayed": unreplayed, "words": words}


def _unreplayed_words(u: dict[str, Any]) -> str:
    """Why a recorded gate answer was not given in the proof, and what was done instead."""
    what = f"chose {u['recorded_tool']} over" if u["recorded"] == "choose" else \
        {"approve": "approved", "reject": "rejected"}[u["recorded"]]
    head = f"{u['step']}'s gate answer ({u['by']} {what} {u['recorded_proposal'] or 'a proposal not recorded'}) was not given"
    if u["why"] == "not offered":
        return f"{head}: {u['recorded_tool']} is not offered there, so the proof approves {u['proposal']} as proposed"
    return f"{head}: the proposal there is {u['proposal']}, which nobody was asked about, so the proof approves it as proposed"


def _words(d: dict[str, Any] | None) -> str:
    if d is None:
        return "nothing (no decision)"
    return d["tool"] + (f"({d['input']})" if d.get("input") else "")


def _told(agent: str, d: dict[str, Any]) -> str:
    """Who decided the step, in words: the agent, or at a gate the agent's proposal and the answer."""
    tool = _words(d)
    user = d.get("user")
    if user is None:
        return f"{agent} chose {tool}"
    by = answered_by(user.get("by"))
    if user.get("decision") == "choose":
        return f"{agent} proposed {user.get('proposed')}; {by} chose {tool} instead"
    return f"{agent} proposed {tool}; {by} {'rejected' if user.get('decision') == 'reject' else 'approved'} it"


def moved_lines(got: dict[str, Any]) -> list[str]:
    """who_moved's answer as lines (the CLI's and the workbench's words)."""
    d = got["decision"]
    rs = got["read_set"]
    since = f"since its step {got['since_step']}" if got["since_step"] else "since the world began"
    lines = [f"{got['at']} (step {got['step']}): {_told(got['agent'], d)}",
             "read: " + ", ".join([f"balance {b}" for b in rs["balances"]]
                                  + [f"{a['id']}@{a['version']}" for a in rs["artifacts"]]) if rs["balances"] or rs["artifacts"]
             else "read: nothing of the shared world"]
    if not got["actions"]:
        lines.append(f"no other agent acted {since}")
    for a in got["actions"]:
        if a["mover"]:
            lines.append(f"mover {a['name']} {a['action']}: changed {', '.join(a['seen'])}: {'; '.join(a['why'])}")
            if "proof" in a:
                lines.append(f"  proof: {a['proof']['words']}")
        else:
            lines.append(f"not a mover {a['name']} {a['action'] or '-'}: "
                         + (f"changed {', '.join(a['effects'])}, none of it read" if a["effects"] else "changed nothing shared"))
    n = len(got["movers"])
    lines.append(f"{n} mover(s) of {len(got['actions'])} other step(s) {since}")
    return lines
