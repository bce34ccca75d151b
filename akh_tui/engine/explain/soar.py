"""`agent why --agent ID` for a Soar world agent (issue 30), in Soar's terms, from the world's
cycle record alone: its `decide["soar"]` holds the turn's decisions as the Soar adapter records
them (each operator's id, label, summed numeric value, selection chance and the rules that
proposed, scored or rejected it). The decision that chose the action is the turn's last (the
turn ends at the first command on the output link).

Nothing here imports Soar: a record is read where soar-sml is not installed."""

from __future__ import annotations

from typing import Any


def is_soar(record: dict[str, Any]) -> bool:
    return isinstance(record.get("decide", {}).get("soar"), dict)


def action_of(op: dict[str, Any]) -> str:
    """The world action an `act` operator stands for (its label: `act action bid cycle 3 …`)."""
    words = str(op.get("label", "")).split()
    return words[words.index("action") + 1] if "action" in words[:-1] else str(op.get("label", ""))


def _choosing(record: dict[str, Any]) -> dict[str, Any] | None:
    decisions = record["decide"]["soar"].get("decisions") or []
    return decisions[-1] if decisions else None


def _chance(op: dict[str, Any]) -> str:
    p = op.get("probability")
    return "no chance given (a symbolic preference)" if p is None else f"{p:.0%} chance"


def _value(op: dict[str, Any]) -> str:
    v = op.get("value")
    return "no numeric value" if v is None else f"value {v:g}"


def _rules(op: dict[str, Any], kind: str) -> list[str]:
    return [s.split(" by ", 1)[1] for s in op.get("sources", []) if s.startswith(f"{kind} by ")]


def _op_line(op: dict[str, Any]) -> str:
    rejected = _rules(op, "rejected")
    head = f"{op['id']} {action_of(op)}"
    if rejected:
        return f"{head}: rejected by {', '.join(rejected)}"
    scored = _rules(op, "scored")
    by = f", scored by {', '.join(dict.fromkeys(scored))}" if scored else ""
    if op.get("value") is None and op.get("probability") is None:
        return f"{head}: a symbolic preference only (best or worst), proposed by {', '.join(_rules(op, 'proposed')) or 'no rule'}"
    return f"{head}: {_value(op)} ({_chance(op)}), proposed by {', '.join(_rules(op, 'proposed')) or 'no rule'}{by}"


def why_chosen(record: dict[str, Any]) -> list[str]:
    d = _choosing(record)
    tool = record["decide"]["tool"]
    if d is None:
        return [f"the Soar agent made no decision this turn; the world ran {tool}"]
    sel = d.get("selected") or {}
    chosen = [c for c in d["candidates"] if c.get("chosen")]
    lines = [f"the Soar agent's decision {d['decision']} selected {sel.get('id', '?')} ({action_of(sel)}): "
             f"the world ran {tool}({record['decide']['input']})"]
    lines += [f"  chosen  {_op_line(c)}" for c in chosen]
    others = [c for c in d["candidates"] if not c.get("chosen")]
    if others:
        lines.append("  passed over (Soar picks at random weighted by value; srand seeds it):")
        lines += [f"    {_op_line(c)}" for c in others]
    return lines


def why_not(record: dict[str, Any], tool: str) -> dict[str, Any]:
    """Why the Soar agent did not take `tool`: its operators for that action in the choosing
    decision. KeyError when it had none (the world did not offer it, or no rule proposed it)."""
    d = _choosing(record)
    ops = [c for c in (d or {}).get("candidates", []) if action_of(c) == tool]
    if d is None or not ops:
        offered = sorted({action_of(c) for c in (d or {}).get("candidates", [])})
        raise KeyError(f"the Soar agent had no operator for {tool!r} in this turn's decision (its operators: "
                       f"{', '.join(offered) or 'none'}): the world did not offer it, or no rule proposed it")
    chosen = next((c for c in d["candidates"] if c.get("chosen")), None)
    return {"architecture": "soar", "decision": d["decision"], "tool": tool, "operators": ops, "chosen": chosen}


def why_not_text(record: dict[str, Any], tool: str) -> list[str]:
    info = why_not(record, tool)
    chosen = info["chosen"]
    lines = [f"the Soar agent's decision {info['decision']}: why not {tool}"]
    for op in info["operators"]:
        lines.append(f"  {_op_line(op)}")
        if op.get("chosen"):
            lines.append("    it was chosen")
        elif not _rules(op, "rejected") and chosen is not None:
            lines.append(f"    against {_op_line(chosen)}: a weighted draw picked that one")
    return lines


def soar_why(record: dict[str, Any], tool: str | None = None) -> list[str] | None:
    """For a front end's Why pane: a Soar world agent's turn in its own terms (why_chosen, then
    why not `tool` — or what it had instead); None when the record is no Soar agent's."""
    if not is_soar(record):
        return None
    lines = why_chosen(record)
    if tool and tool != record["decide"]["tool"]:
        try:
            lines += ["", *why_not_text(record, tool)]
        except KeyError as exc:
            lines += ["", str(exc.args[0])]
    return lines
