"""A Soar run's report (issue 30): the same self-contained HTML or Markdown file as an OODA
run's (report.py: its CSS, escaping and redaction), saying what a stored branch of a Soar run
did: the scenario and seed, how it ended, and a row per decision — the operator selected
(forced by the person, or Soar's own pick), its value and chance, the operators passed over
(each with its chance, or the rule that rejected it) and the goal stack (a substate is an
impasse). The same records give the same bytes."""

from __future__ import annotations

from typing import IO, Any, Iterable

from .report import CSS, _e, _md, _md_code


def _chance(c: dict[str, Any]) -> str:
    if c.get("probability") is None:
        return ""
    if c["probability"] == 0:
        rejected = [s for s in c.get("sources", []) if s.startswith("rejected by")]
        return rejected[0] if rejected else "rejected"
    return f"{c['probability']:.0%}"


def _row(rec: dict[str, Any]) -> dict[str, str]:
    sel = rec.get("selected") or {"id": "-", "label": "no operator (state no-change)"}
    me = next((c for c in rec.get("candidates", []) if c.get("chosen")), None)
    others = [f"{c['id']} {c['label']} {_chance(c)}".rstrip() for c in rec.get("candidates", []) if not c.get("chosen")]
    return {"decision": str(rec["decision"]), "operator": f"{sel['id']} {sel['label']}",
            "value": "" if me is None or me.get("value") is None else f"{me['value']}",
            "chance": "" if me is None else _chance(me),
            "how": "forced by you" if rec.get("forced") else "Soar's pick",
            "over": "; ".join(others), "stack": " > ".join(" ".join(str(x) for x in s if x) for s in rec.get("stack", []))}


def write_soar_report(records: Iterable[dict[str, Any]], meta: dict[str, Any], run: int, branch: str, out: IO[str],
                      markdown: bool = False) -> int:
    """The branch's report written to `out`; returns its decisions."""
    last = list(records)
    rows = [_row(r) for r in last]
    halted = bool(last) and bool(last[-1].get("halted"))
    forced = sum(r["how"] == "forced by you" for r in rows)
    title = f"{meta.get('name')}: run {run}, branch {branch}"
    summary = (f"A Soar agent (seed {meta.get('seed')}): {len(rows)} decision(s), "
               + ("halted" if halted else "not halted (it can be resumed)")
               + (f"; {forced} operator(s) forced by you" if forced else ""))
    cols = ("decision", "operator", "value", "chance", "how", "over", "stack")
    if markdown:
        out.write(f"# {_md(title)}\n\n{_md(summary)}\n\n")
        out.write("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n")
        for r in rows:
            out.write("| " + " | ".join(_md_code(r[c]) if r[c] and c in ("operator", "over", "stack") else _md(r[c])
                                        for c in cols) + " |\n")
        return len(rows)
    out.write(f'<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/><title>{_e(title)}</title>'
              f"<style>{CSS}</style></head><body>\n<h1>{_e(title)}</h1>\n<p class=\"dim\">{_e(summary)}</p>\n")
    out.write("<table><tr>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>\n")
    for r in rows:
        cls = ' class="vetoed"' if r["how"] == "forced by you" else ""
        out.write(f"<tr{cls}>" + "".join(f"<td>{_e(r[c])}</td>" for c in cols) + "</tr>\n")
    out.write("</table>\n</body></html>\n")
    return len(rows)
