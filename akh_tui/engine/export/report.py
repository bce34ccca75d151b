"""A run report to hand out: one self-contained file (HTML or Markdown; no network, plots inline
as SVG) saying what a stored branch of a run did: the scenario and psyche, the goals and their
outcomes, a row per cycle (tool, input, outcome, breakdown, the runner-up where the margin was
small, veto, forks and reflections), and plots of the archetype weights and goal coverage.

Built from the trace items a SessionStore gives (records and events, in trace order), consumed
as an iterator: each cycle's row is written as it is read (to a spool, since the summary comes
first in the file), and what the summary says is gathered in state that grows with the goals
and archetypes, not the cycles (a plot keeps at most a few points per pixel column). A
200,000-cycle report once took 5.6 GB; now its memory does not depend on the run's length.

The same run gives the same bytes. The HTML is well-formed XML too (only XML's five escapes),
so a test, or any XML tool, can parse it. The Markdown escapes every piece of user text
(scenario and goal names, persona, labels, tool names) so that CommonMark shows it as text:
no raw HTML, link or image can be injected. Every text passes through `redact`.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from html import escape
from typing import IO, Callable, Iterable, Iterator

from ..explain.decision import runner_up, why_not_text
from ..explain.events import event_words
from ..redaction import redact
from ..store.trace import records_with_events

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
    return escape(redact(str(text)), quote=True)


def _svg_body(svg: str) -> str:
    """An SVG document as an inline element (its XML declaration, if any, dropped)."""
    start = svg.find("<svg")
    return svg[start:] if start >= 0 else svg


class _Plot:
    """A line plot of named series over cycles x0..x1, fed a cycle at a time, drawn as inline
    SVG (no script, no fonts fetched).

    Each series keeps its points as the polyline draws them. Points that fall in the same
    pixel column (only when the run is longer than the plot is wide, about 300 cycles) are
    kept as that column's first, lowest, highest and last: the same line on the page, and
    memory bounded by the plot's width, not the run's length."""

    left, right, top, bottom = 44, 210, 26, 30

    def __init__(self, title: str, x0: int, x1: int, lo: float = 0.0, hi: float = 1.0,
                 width: int = 560, height: int = 240) -> None:
        self.title, self.x0, self.x1, self.lo, self.hi = title, x0, x1, lo, hi
        self.width, self.height = width, height
        self.pw, self.ph = width - self.left - self.right, height - self.top - self.bottom
        self.span = max(1, x1 - x0)
        # per series: the points of its finished pixel columns as polyline text, and the open
        # column as (column, [first, lowest, highest, last]), a point as (y, order, x text)
        self.drawn: dict[object, list[str]] = {}
        self.open: dict[object, tuple[int, list[tuple[float, int, str]]] | None] = {}
        self._n = 0

    def px(self, x: float) -> float:
        return self.left + (x - self.x0) / self.span * self.pw

    def py(self, y: float) -> float:
        return self.top + (1 - (min(max(y, self.lo), self.hi) - self.lo) / (self.hi - self.lo or 1)) * self.ph

    def add(self, key: object, x: int, y: float | None) -> None:
        """The point (x, y) of series `key` (registered even when y is None: a legend entry)."""
        drawn = self.drawn.setdefault(key, [])
        current = self.open.setdefault(key, None)
        if y is None:
            return
        self._n += 1
        x_px = self.px(x)
        point = (self.py(y), self._n, f"{x_px:.1f}")
        col = int(x_px)
        if current is not None and current[0] == col:
            first, low, high, _last = current[1]
            self.open[key] = (col, [first, min(low, point), max(high, point), point])
            return
        if current is not None:
            drawn.append(self._column(current[1]))
        self.open[key] = (col, [point] * 4)

    @staticmethod
    def _column(kept: list[tuple[float, int, str]]) -> str:
        """A column's kept points (each once) in the order they came, as polyline text."""
        return " ".join(f"{xt},{yv:.1f}" for _order, (yv, _, xt) in sorted({p[1]: p for p in kept}.items()))

    def _points(self, key: object) -> str:
        current = self.open.get(key)
        return " ".join(self.drawn.get(key, []) + ([self._column(current[1])] if current is not None else []))

    def svg(self, legend: list[tuple[object, str]]) -> str:
        """The plot with `legend`'s series, in its order: (key, label)."""
        left, top, pw, ph, width, height = self.left, self.top, self.pw, self.ph, self.width, self.height
        x0, x1, span = self.x0, self.x1, self.span
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
               f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(self.title)}">',
               f'<text x="{left}" y="16" font-size="13" font-weight="bold">{_e(self.title)}</text>',
               f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#cfd6dd"/>']
        for frac in (0.0, 0.5, 1.0):
            y = self.lo + frac * (self.hi - self.lo)
            out.append(f'<text x="{left - 6}" y="{self.py(y) + 4:.1f}" font-size="10" text-anchor="end">{y:.2f}</text>')
        for x in sorted({x0, x1, x0 + span // 2}):
            out.append(f'<text x="{self.px(x):.1f}" y="{top + ph + 14}" font-size="10" text-anchor="middle">{x}</text>')
        out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 2}" font-size="10" text-anchor="middle">cycle</text>')
        for i, (key, name) in enumerate(legend):
            colour = PALETTE[i % len(PALETTE)]
            pts = self._points(key)
            if pts:
                out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}"/>')
            out.append(f'<rect x="{left + pw + 10}" y="{top + i * 16}" width="10" height="10" fill="{colour}"/>')
            out.append(f'<text x="{left + pw + 24}" y="{top + i * 16 + 9}" font-size="11">{_e(name if len(name) <= 30 else name[:29] + "…")}</text>')
        out.append("</svg>")
        return "".join(out)


def _row(rec: dict, events: list[dict]) -> dict:
    """What the report says of one cycle."""
    decide, act = rec["decide"], rec["act"]
    other = runner_up(rec) if decide.get("candidates") else None
    chosen = next((c for c in decide.get("candidates") or [] if c["tool"] == decide["tool"]), None)
    close = None
    if other is not None and chosen is not None and chosen["score"] - other["score"] <= SMALL_MARGIN:
        lines = why_not_text(rec, other["tool"])
        # the margin, and the first single change that would have turned it
        close = lines[0] + (f"; {lines[2].strip()}" if len(lines) > 2 and lines[1].startswith("any one") else "")
    return {
        "cycle": rec["cycle"], "goal": rec["goal"]["id"], "tool": decide["tool"], "input": decide["input"],
        "progress": act.get("progress"), "coverage": act.get("coverage"), "breakdown": decide.get("breakdown", ""),
        "vetoed": bool(act.get("vetoed")), "veto": act.get("veto"), "close": close,
        "notes": [event_words(ev, detail=True, dated=False) for ev in events if int(ev.get("cycle", 0) or 0) == rec["cycle"]],
    }


class _Summary:
    """What the report's head says, gathered a record at a time: per goal and archetype, never
    per cycle (the plots keep a bounded number of points)."""

    def __init__(self, meta: dict, extent: tuple[int, int, int]) -> None:
        first, last, self.cycles = extent
        self.meta = meta
        self.weights = _Plot("archetype weights", first, last)
        self.coverage = _Plot("goal coverage", first, last)
        self.names: list[str] | None = None  # the archetypes of the first record
        self.done: dict[object, int] = {}  # goal id -> the first cycle it was completed at
        self.focus: dict[object, tuple[int, list]] = {}  # goal id -> (last cycle in focus, what it still missed)
        self.last: dict | None = None  # the newest record's goals and archetypes
        self.rows = 0

    def add(self, rec: dict) -> None:
        c = rec["cycle"]
        weights = rec["psyche"]["archetypes"]
        if self.names is None:
            self.names = list(weights)
        for a in self.names:
            self.weights.add(a, c, weights.get(a))
        seen = set()
        for h in rec["goals"]:
            if h["id"] in seen:  # the first of a repeated id, as a lookup by id finds
                continue
            seen.add(h["id"])
            if h.get("parent") is None:
                self.coverage.add(h["id"], c, h["coverage"])
            if h["status"] == "completed":
                self.done.setdefault(h["id"], c)
        self.focus[rec["goal"]["id"]] = (c, (rec.get("act") or {}).get("missing") or [])
        self.last = {"goals": rec["goals"], "archetypes": weights}
        self.rows += 1

    def head(self, run: int, branch: str, before: list[str]) -> dict:
        meta = self.meta
        goals = []
        last_goals = self.last["goals"] if self.last else []
        for g in last_goals:
            focus = self.focus.get(g["id"])
            missing = focus[1] if focus else []
            if g["status"] == "completed":
                why = f"completed at cycle {self.done.get(g['id'])}"
            elif g["status"] == "failed":
                why = g.get("fail_reason") or "failed"
            elif focus is None:
                why = "never in focus"
            else:
                why = f"still missing: {', '.join(missing)}" if missing else f"last worked on at cycle {focus[0]}"
            goals.append({"id": g["id"], "description": g["description"], "status": g["status"],
                          "coverage": g.get("coverage", 0.0), "parent": g.get("parent"), "why": why})
        psyche = meta.get("psyche") or {}
        top = [g for g in last_goals if g.get("parent") is None]
        return {
            "title": f"{meta.get('name')}: run {run}, branch {branch}",
            "scenario": {"name": meta.get("name"), "path": meta.get("scenario"), "seed": meta.get("seed"),
                         "decider": meta.get("decider"), "imported_from": meta.get("imported_from")},
            "psyche": {"persona": psyche.get("persona"), "dominant": psyche.get("dominant"),
                       "start": psyche.get("archetypes") or {},
                       "end": self.last["archetypes"] if self.last else {}},
            "goals": goals, "rows": self.rows, "before": before,
            "plots": [self.weights.svg([(a, a) for a in self.names or []]),
                      self.coverage.svg([(g["id"], f"#{g['id']} {g['description']}") for g in top])]
            if self.last else [],
        }


def write_report(items: Iterable[dict], meta: dict, run: int, branch: str, extent: tuple[int, int, int],
                 out: IO[str], markdown: bool = False, shots: dict[int, str] | None = None) -> int:
    """Write the report of a branch's trace items (records and events, in trace order) to
    `out`, as HTML or Markdown; returns the number of cycles. `extent` is the branch's (first
    cycle, last cycle, records): SessionStore.cycle_extent. Rows are spooled to a temporary
    file while the summary is gathered, then copied after it."""
    summary = _Summary(meta, extent)
    render: Callable[[dict], str] = _md_row if markdown else _html_row
    pairs = records_with_events(items)
    _, leading = next(pairs)
    before = [event_words(ev, detail=True, dated=False) for ev in leading if int(ev.get("cycle", 0) or 0) == 0]
    with tempfile.TemporaryFile("w+", encoding="utf-8", prefix="akh-report-") as spool:
        for rec, following in pairs:
            assert rec is not None  # only the first pair has none
            summary.add(rec)
            spool.write("\n" + render(_row(rec, following)))
        d = summary.head(run, branch, before) | {"shots": shots or {}}
        out.write(_md_head(d) if markdown else _html_head(d))
        spool.seek(0)
        shutil.copyfileobj(spool, out, 1 << 16)
    out.write("\n" if markdown else "\n</table><p class=\"dim\">made by akh-tui sessions report</p></body></html>\n")
    return summary.rows


def _html_head(d: dict) -> str:
    """Everything before the first cycle row (rows follow, each on a line of its own)."""
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
        out.append(f"<tr><td>#{_e(g['id'])} {_e(g['description'])}{_e(sub)}</td><td>{_e(g['status'])}</td>"
                   f"<td>{g['coverage']:.2f}</td><td>{_e(g['why'])}</td></tr>")
    out.append("</table><h2>Over the cycles</h2><div class=\"plots\">")
    out.extend(f"<div>{svg}</div>" for svg in d["plots"])
    out.append("</div>")
    for c, svg in sorted((d.get("shots") or {}).items()):
        out.append(f"<h2>The workbench at cycle {c}</h2><div class=\"shot\" data-shot=\"{c}\">{_svg_body(redact(svg))}</div>")
    if d["before"]:
        out.append("<p>" + "; ".join(_e(n) for n in d["before"]) + "</p>")
    out.append(f"<h2>Cycles ({d['rows']})</h2><table id=\"cycles\"><tr><th>cycle</th><th>goal</th><th>tool</th>"
               "<th>input</th><th>outcome</th><th>breakdown</th><th>notes</th></tr>")
    return "\n".join(out)


def _outcome(r: dict) -> str:
    return f"{r['progress']} ({r['coverage']:.2f})" if isinstance(r["coverage"], (int, float)) else str(r["progress"])


def _notes(r: dict) -> list[str]:
    return ([f"vetoed by {r['veto']}"] if r["vetoed"] else []) + ([r["close"]] if r["close"] else []) + r["notes"]


def _html_row(r: dict) -> str:
    cls = "vetoed" if r["vetoed"] else ("completed" if r["progress"] == "completed" else "")
    note_html = "".join('<p class="note">' + _e(n) + "</p>" for n in _notes(r))
    return (f"<tr class=\"{cls}\" data-cycle=\"{_e(r['cycle'])}\"><td>{_e(r['cycle'])}</td><td>#{_e(r['goal'])}</td>"
            f"<td><code>{_e(r['tool'])}</code></td><td>{_e(r['input'])}</td><td>{_e(_outcome(r))}</td>"
            f"<td class=\"mono\">{_e(r['breakdown'])}</td>"
            f"<td>{note_html}</td></tr>")


# CommonMark reads these in running text: backslash escapes (\), code spans (`), emphasis (*, and
# _ at a word's edge), links and images ([ ]), raw HTML and autolinks (<), entities (&), GFM
# strikethrough (~) and table cells (|). Each is backslash-escaped, so it shows as itself.
_MD_SPECIAL = re.compile(r"[\\`*\[\]<&~|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def _md(text: object) -> str:
    """User text (a name, goal, persona, label, tool output) as Markdown that renders as that
    text: on one line, every character CommonMark would read as markup escaped."""
    s = re.sub(r"[\r\n]+", " ", redact(str(text)))
    return _MD_SPECIAL.sub(lambda m: "\\" + m.group(0), s)


def _md_code(text: object, cell: bool = True) -> str:
    """Text as a code span (shown literally): fenced by more backticks than it holds in a row,
    padded where it starts or ends with one; `|` escaped in a table cell (GFM reads cells
    before code spans)."""
    s = re.sub(r"[\r\n]+", " ", redact(str(text)))
    fence = "`" * (max((len(run) for run in re.findall(r"`+", s)), default=0) + 1)
    pad = " " if s[:1] == "`" or s[-1:] == "`" else ""
    if cell:
        s = s.replace("|", "\\|")
    return f"{fence}{pad}{s}{pad}{fence}"


def _md_head(d: dict) -> str:
    sc, ps = d["scenario"], d["psyche"]
    out = [f"# {_md(d['title'])}", "",
           f"scenario {_md_code(sc['path'], cell=False)} · seed {_md(sc['seed'])} · decider {_md(sc['decider'])}", "",
           "## Psyche", "", f"persona {_md(ps['persona'])}, dominant {_md(ps['dominant'])}", "",
           "| archetype | at the start | at the end |", "|---|---|---|"]
    for a in ps["start"] or ps["end"]:
        out.append(f"| {_md(a)} | {ps['start'].get(a, 0):.2f} | {ps['end'].get(a, 0):.2f} |")
    out += ["", "## Goals", "", "| goal | status | coverage | why |", "|---|---|---|---|"]
    for g in d["goals"]:
        out.append(f"| #{_md(g['id'])} {_md(g['description'])} | {_md(g['status'])} | {g['coverage']:.2f} | {_md(g['why'])} |")
    out += ["", "## Over the cycles", ""]
    out += [svg + "\n" for svg in d["plots"]]
    for c, svg in sorted((d.get("shots") or {}).items()):
        out += [f"## The workbench at cycle {c}", "", _svg_body(redact(svg)), ""]
    out += [f"## Cycles ({d['rows']})", "",
            "| cycle | goal | tool | input | outcome | breakdown | notes |", "|---|---|---|---|---|---|---|"]
    return "\n".join(out)


def _md_row(r: dict) -> str:
    return (f"| {_md(r['cycle'])} | #{_md(r['goal'])} | {_md_code(r['tool'])} | {_md(r['input'])} | {_md(_outcome(r))} | "
            f"{_md_code(r['breakdown'])} | {_md('; '.join(_notes(r)))} |")
