"""A run report to hand out: one self-contained file (HTML or Markdown; no network, plots inline
as SVG) saying what a stored branch of a run did: the scenario and psyche, the goals and their
outcomes, a row per cycle (tool, input, outcome, breakdown, the runner-up where the margin was
small, veto, forks and reflections), and plots of the archetype weights and goal coverage.

Built from the trace items a SessionStore gives (records and events, in trace order): the
same run gives the same bytes. The HTML is well-formed XML too (only XML's five escapes), so a
test, or any XML tool, can parse it.
"""

from __future__ import annotations

from html import escape
from typing import Iterable

from .explain import runner_up, why_not_text

SMALL_MARGIN = 0.05  # a runner-up this close is worth a line on why it lost
PALETTE = ("#e07b00", "#2a9d8f", "#3a6ea5", "#8e44ad", "#c0392b", "#7f8c8d", "#27ae60", "#d35400")
CSS = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #1d232a; max-width: 1400px; }
h1 { margin-bottom: 0.2em; } .dim { color: #6b7785; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #cfd6dd; padding: 0.25em 0.5em; vertical-align: top; text-align: left; }
th { background: #eef2f5; } tr.vetoed td { background: #fdecea; } tr.completed td { background: #eaf7ee; }
code, .mono { font-family: ui-monospace, monospace; font-size: 0.92em; }
.plots { display: flex; flex-wrap: wrap; gap: 2em; } .note { margin: 0.1em 0; }
"""


def _e(text) -> str:
    return escape(str(text), quote=True)


def _svg_body(svg: str) -> str:
    """An SVG document as an inline element (its XML declaration, if any, dropped)."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


def _series_svg(title: str, xs: list[int], series: dict[str, list[float | None]], lo: float = 0.0, hi: float = 1.0,
                width: int = 560, height: int = 240) -> str:
    """A line plot of named series over cycles, as inline SVG (no script, no fonts fetched)."""
    left, right, top, bottom = 44, 210, 26, 30
    pw, ph = width - left - right, height - top - bottom
    x0, x1 = (xs[0], xs[-1]) if xs else (0, 1)
    span = max(1, x1 - x0)

    def px(x: float) -> float:
        return left + (x - x0) / span * pw

    def py(y: float) -> float:
        return top + (1 - (min(max(y, lo), hi) - lo) / (hi - lo or 1)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">',
           f'<text x="{left}" y="16" font-size="13" font-weight="bold">{_e(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#cfd6dd"/>']
    for frac in (0.0, 0.5, 1.0):
        y = lo + frac * (hi - lo)
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" font-size="10" text-anchor="end">{y:.2f}</text>')
    for x in sorted({x0, x1, x0 + span // 2}):
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 14}" font-size="10" text-anchor="middle">{x}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 2}" font-size="10" text-anchor="middle">cycle</text>')
    for i, (name, ys) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys) if y is not None)
        if pts:
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
        out.append(f'<rect x="{left + pw + 10}" y="{top + i * 16}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{left + pw + 24}" y="{top + i * 16 + 9}" font-size="11">{_e(name if len(name) <= 30 else name[:29] + "…")}</text>')
    out.append("</svg>")
    return "".join(out)


def _collect(items: Iterable[dict]) -> tuple[list[dict], dict[int, list[dict]]]:
    records: list[dict] = []
    events: dict[int, list[dict]] = {}
    for it in items:
        if it.get("type") == "cycle":
            records.append(it)
        elif it.get("type") != "run":
            events.setdefault(int(it.get("cycle", 0) or 0), []).append(it)
    return records, events


def _event_text(ev: dict) -> str:
    kind = ev.get("type")
    if kind == "fork":
        return f"fork: branch {ev.get('branch')} from {ev.get('parent')} ({', '.join(ev.get('edits') or []) or 'no edits'})"
    if kind == "reflection":
        parts = [f"{a.get('kind')} goal #{a.get('goal')} {a.get('old')}→{a.get('new')}" for a in ev.get("adjustments") or []]
        parts += [f"{p.get('archetype')} {p.get('old')}→{p.get('new')}" for p in ev.get("psyche_changes") or []
                  if p.get("kind") == "archetype"]
        return "reflection: " + ("; ".join(parts) or "no change")
    if kind == "goal_added":
        return f"goal added: #{ev.get('goal', ev.get('id'))} {ev.get('description', '')}".rstrip()
    if kind == "decomposition":
        return f"goal #{ev.get('goal')} decomposed ({ev.get('mode')})"
    if kind == "backtrack":
        return f"backtrack on goal #{ev.get('goal')}"
    if kind == "psyche_edit":
        return f"psyche edited ({ev.get('source')})"
    if kind == "consolidation":
        return "working memory consolidated"
    return str(kind)


def report_data(items: Iterable[dict], meta: dict, run: int, branch: str) -> dict:
    """What the report says, format-free."""
    records, events = _collect(items)
    rows = []
    for rec in records:
        decide, act = rec["decide"], rec["act"]
        other = runner_up(rec) if decide.get("candidates") else None
        chosen = next((c for c in decide.get("candidates") or [] if c["tool"] == decide["tool"]), None)
        close = None
        if other is not None and chosen is not None and chosen["score"] - other["score"] <= SMALL_MARGIN:
            lines = why_not_text(rec, other["tool"])
            # the margin, and the first single change that would have turned it
            close = lines[0] + (f"; {lines[2].strip()}" if len(lines) > 2 and lines[1].startswith("any one") else "")
        rows.append({
            "cycle": rec["cycle"], "goal": rec["goal"]["id"], "tool": decide["tool"], "input": decide["input"],
            "progress": act.get("progress"), "coverage": act.get("coverage"), "breakdown": decide.get("breakdown", ""),
            "vetoed": bool(act.get("vetoed")), "veto": act.get("veto"), "close": close,
            "notes": [_event_text(ev) for ev in events.get(rec["cycle"], [])],
        })
    xs = [r["cycle"] for r in records]
    names = list((records[0]["psyche"]["archetypes"] if records else (meta.get("psyche") or {}).get("archetypes", {})))
    weights: dict[str, list[float | None]] = {a: [r["psyche"]["archetypes"].get(a) for r in records] for a in names}
    top = [g for g in (records[-1]["goals"] if records else []) if g.get("parent") is None]
    coverage: dict[str, list[float | None]] = {}
    for g in top:
        by_id = [next((h for h in r["goals"] if h["id"] == g["id"]), None) for r in records]
        coverage[f"#{g['id']} {g['description']}"] = [h["coverage"] if h else None for h in by_id]
    goals = []
    for g in records[-1]["goals"] if records else []:
        done = next((r["cycle"] for r in records
                     for h in r["goals"] if h["id"] == g["id"] and h["status"] == "completed"), None)
        last_focus = next((r for r in reversed(records) if r["goal"]["id"] == g["id"]), None)
        missing = (last_focus or {}).get("act", {}).get("missing") or []
        if g["status"] == "completed":
            why = f"completed at cycle {done}"
        elif g["status"] == "failed":
            why = g.get("fail_reason") or "failed"
        elif last_focus is None:
            why = "never in focus"
        else:
            why = f"still missing: {', '.join(missing)}" if missing else f"last worked on at cycle {last_focus['cycle']}"
        goals.append({"id": g["id"], "description": g["description"], "status": g["status"],
                      "coverage": g.get("coverage", 0.0), "parent": g.get("parent"), "why": why})
    psyche = meta.get("psyche") or {}
    return {
        "title": f"{meta.get('name')}: run {run}, branch {branch}",
        "scenario": {"name": meta.get("name"), "path": meta.get("scenario"), "seed": meta.get("seed"),
                     "decider": meta.get("decider"), "imported_from": meta.get("imported_from")},
        "psyche": {"persona": psyche.get("persona"), "dominant": psyche.get("dominant"),
                   "start": psyche.get("archetypes") or {},
                   "end": records[-1]["psyche"]["archetypes"] if records else {}},
        "goals": goals, "rows": rows, "before": [_event_text(ev) for ev in events.get(0, [])],
        "plots": [_series_svg("archetype weights", xs, weights),
                  _series_svg("goal coverage", xs, coverage)] if records else [],
    }


def to_html(d: dict) -> str:
    sc, ps = d["scenario"], d["psyche"]
    out = ['<!DOCTYPE html>', '<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>',
           f"<title>{_e(d['title'])}</title><style>{CSS}</style></head><body>",
           f"<h1>{_e(d['title'])}</h1>",
           f"<p class=\"dim\">scenario <code>{_e(sc['path'])}</code> · seed {_e(sc['seed'])} · decider {_e(sc['decider'])}"
           + (f" · imported from {_e(sc['imported_from'])}" if sc.get("imported_from") else "") + "</p>",
           "<h2>Psyche</h2>",
           f"<p>persona {_e(ps['persona'])}, dominant {_e(ps['dominant'])}</p>",
           "<table><tr><th>archetype</th><th>at the start</th><th>at the end</th></tr>"]
    for a in ps["start"] or ps["end"]:
        out.append(f"<tr><td>{_e(a)}</td><td>{ps['start'].get(a, 0):.2f}</td><td>{ps['end'].get(a, 0):.2f}</td></tr>")
    out.append("</table><h2>Goals</h2><table><tr><th>goal</th><th>status</th><th>coverage</th><th>why</th></tr>")
    for g in d["goals"]:
        sub = f" (sub-goal of #{g['parent']})" if g["parent"] is not None else ""
        out.append(f"<tr><td>#{g['id']} {_e(g['description'])}{_e(sub)}</td><td>{_e(g['status'])}</td>"
                   f"<td>{g['coverage']:.2f}</td><td>{_e(g['why'])}</td></tr>")
    out.append("</table><h2>Over the cycles</h2><div class=\"plots\">")
    out.extend(f"<div>{svg}</div>" for svg in d["plots"])
    out.append("</div>")
    for c, svg in sorted((d.get("shots") or {}).items()):
        out.append(f"<h2>The workbench at cycle {c}</h2><div class=\"shot\" data-shot=\"{c}\">{_svg_body(svg)}</div>")
    if d["before"]:
        out.append("<p>" + "; ".join(_e(n) for n in d["before"]) + "</p>")
    out.append(f"<h2>Cycles ({len(d['rows'])})</h2><table id=\"cycles\"><tr><th>cycle</th><th>goal</th><th>tool</th>"
               "<th>input</th><th>outcome</th><th>breakdown</th><th>notes</th></tr>")
    for r in d["rows"]:
        cls = "vetoed" if r["vetoed"] else ("completed" if r["progress"] == "completed" else "")
        notes = []
        if r["vetoed"]:
            notes.append(f"vetoed by {r['veto']}")
        if r["close"]:
            notes.append(r["close"])
        notes.extend(r["notes"])
        outcome = f"{r['progress']} ({r['coverage']:.2f})" if isinstance(r["coverage"], (int, float)) else str(r["progress"])
        note_html = "".join('<p class="note">' + _e(n) + "</p>" for n in notes)
        out.append(f"<tr class=\"{cls}\" data-cycle=\"{r['cycle']}\"><td>{r['cycle']}</td><td>#{r['goal']}</td>"
                   f"<td><code>{_e(r['tool'])}</code></td><td>{_e(r['input'])}</td><td>{_e(outcome)}</td>"
                   f"<td class=\"mono\">{_e(r['breakdown'])}</td>"
                   f"<td>{note_html}</td></tr>")
    out.append("</table><p class=\"dim\">made by akh-tui sessions report</p></body></html>\n")
    return "\n".join(out)


def _md_cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(d: dict) -> str:
    sc, ps = d["scenario"], d["psyche"]
    out = [f"# {d['title']}", "",
           f"scenario `{sc['path']}` · seed {sc['seed']} · decider {sc['decider']}", "",
           "## Psyche", "", f"persona {ps['persona']}, dominant {ps['dominant']}", "",
           "| archetype | at the start | at the end |", "|---|---|---|"]
    for a in ps["start"] or ps["end"]:
        out.append(f"| {a} | {ps['start'].get(a, 0):.2f} | {ps['end'].get(a, 0):.2f} |")
    out += ["", "## Goals", "", "| goal | status | coverage | why |", "|---|---|---|---|"]
    for g in d["goals"]:
        out.append(f"| #{g['id']} {_md_cell(g['description'])} | {g['status']} | {g['coverage']:.2f} | {_md_cell(g['why'])} |")
    out += ["", "## Over the cycles", ""]
    out += [svg + "\n" for svg in d["plots"]]
    for c, svg in sorted((d.get("shots") or {}).items()):
        out += [f"## The workbench at cycle {c}", "", _svg_body(svg), ""]
    out += [f"## Cycles ({len(d['rows'])})", "",
            "| cycle | goal | tool | input | outcome | breakdown | notes |", "|---|---|---|---|---|---|---|"]
    for r in d["rows"]:
        notes = ([f"vetoed by {r['veto']}"] if r["vetoed"] else []) + ([r["close"]] if r["close"] else []) + r["notes"]
        outcome = f"{r['progress']} ({r['coverage']:.2f})" if isinstance(r["coverage"], (int, float)) else str(r["progress"])
        out.append(f"| {r['cycle']} | #{r['goal']} | `{r['tool']}` | {_md_cell(r['input'])} | {outcome} | "
                   f"`{r['breakdown']}` | {_md_cell('; '.join(notes))} |")
    return "\n".join(out) + "\n"
