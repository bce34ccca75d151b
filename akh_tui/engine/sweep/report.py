"""A sweep's results summarised: per axis value the mean and 95% interval of each outcome,
a heatmap of one outcome over two axes, and the runs at the extremes. Printed with rich, or
written as one self-contained HTML file (inline SVG, no script, nothing fetched)."""

from __future__ import annotations

import html
import math

from rich.console import Console
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ..errors import InputError
from .store import OUTCOMES, WORLD_OUTCOMES, outcomes_of

# Two-sided 95% Student t quantiles by degrees of freedom (beyond 30: the normal 1.96).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
        20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048,
        29: 2.045, 30: 2.042}
EXTREMES = 3
# A heatmap axis with more values than this (seeds, random points) shows only its first ones.
HEAT_MAX = 40


# What each outcome can be: its interval is clipped to this (a count's lower bound of -0.4 read
# as nonsense). Counts and cycles are at least 0; individuation lies in [0, 1].
BOUNDS: dict[str, tuple[float, float | None]] = {o: (0.0, None) for o in OUTCOMES + WORLD_OUTCOMES} | {"individuation": (0.0, 1.0)}
# a sweep over a world lists each cell's world (balances, mints, goals); past this many cells
# the terminal shows the first ones (the HTML report and --json hold them all)
WORLDS_SHOWN = 40


def interval(values: list[float], bounds: tuple[float, float | None] = (-math.inf, None)) -> dict:
    """Mean and 95% confidence interval of the mean (Student t), clipped to what the outcome can
    be (`bounds`: lowest, highest or None); one value has no interval."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "lo": None, "hi": None}
    mean = math.fsum(values) / n
    if n < 2:
        return {"n": 1, "mean": mean, "lo": None, "hi": None}
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = _T95.get(n - 1, 1.96) * sd / math.sqrt(n)
    lo, hi = max(bounds[0], mean - half), mean + half
    return {"n": n, "mean": mean, "lo": lo, "hi": hi if bounds[1] is None else min(bounds[1], hi)}


def _value_key(v):
    return (type(v).__name__, v)


def axis_value(row: dict, axis: str):
    if axis in ("seed", "scenario"):
        return row[axis]
    return row["settings"].get(axis)


def build(meta: dict, rows: list[dict], outcome: str = "goals_completed", x: str | None = None, y: str | None = None) -> dict:
    outs = outcomes_of(meta)  # a sweep over a world has outcomes of its own
    if outcome not in outs:
        raise InputError(f"unknown outcome {outcome!r} (known: {', '.join(outs)})", field="--outcome")
    axes = list(meta.get("axes", []))
    if len({r["scenario"] for r in rows}) > 1:
        axes.insert(0, "scenario")
    known = axes + ["seed"]
    for flag, a in (("--x", x), ("--y", y)):
        if a is not None and a not in known:
            raise InputError(f"unknown axis {a!r} (known: {', '.join(known)})", field=flag)
    ok = [r for r in rows if r["status"] == "ok"]
    per_axis = []
    for a in axes:
        groups: dict = {}
        for r in ok:
            groups.setdefault(axis_value(r, a), []).append(r)
        values = []
        for v in sorted(groups, key=_value_key):
            values.append({"value": v, "n": len(groups[v]),
                           "outcomes": {o: interval([r[o] for r in groups[v] if r.get(o) is not None], BOUNDS[o])
                                        for o in outs}})
        per_axis.append({"axis": a, "values": values})
    hx = x or (axes[0] if axes else "seed")
    hy = y or next((a for a in known if a != hx), "seed")
    heat = None
    if hx != hy:
        xs_all = sorted({axis_value(r, hx) for r in ok}, key=_value_key)
        ys_all = sorted({axis_value(r, hy) for r in ok}, key=_value_key)
        xs, ys = xs_all[:HEAT_MAX], ys_all[:HEAT_MAX]
        cells: dict = {}
        for r in ok:
            if r.get(outcome) is not None:
                cells.setdefault((axis_value(r, hy), axis_value(r, hx)), []).append(r[outcome])
        grid = [[interval(cells.get((yv, xv), []))["mean"] for xv in xs] for yv in ys]
        heat = {"outcome": outcome, "x": hx, "y": hy, "xs": xs, "ys": ys, "cells": grid,
                "cut": {"x": len(xs_all), "y": len(ys_all)} if (len(xs_all), len(ys_all)) != (len(xs), len(ys)) else None}
    scored = sorted((r for r in ok if r.get(outcome) is not None), key=lambda r: (r[outcome], r["run_id"]))

    def brief(r: dict) -> dict:
        return {"run_id": r["run_id"], "idx": r["idx"], "scenario": r["scenario"], "seed": r["seed"],
                "settings": r["settings"], outcome: r[outcome]}

    failed = [r for r in rows if r["status"] != "ok"]
    return {
        "name": meta.get("name"), "runs": meta.get("run_count"), "stored": len(rows), "failed": len(failed),
        "axes": axes, "outcomes": list(outs), "per_axis": per_axis, "heatmap": heat,
        "extremes": {"outcome": outcome, "lowest": [brief(r) for r in scored[:EXTREMES]],
                     "highest": [brief(r) for r in scored[::-1][:EXTREMES]]},
        "errors": [{"run_id": r["run_id"], "error": r["error"]} for r in failed[:10]],
        "worlds": [world_brief(r) for r in ok] if meta.get("kind") == "world" else None,
    }


def world_brief(r: dict) -> dict:
    """One cell of a sweep over a world: what became of each agent."""
    return {"run_id": r["run_id"], "idx": r["idx"], "seed": r["seed"], "settings": r["settings"],
            "balances": r["balances"], "minted": r["minted"], "mint_winners": r["mint_winners"],
            "mints_held": r["mints_held"], "goals": r["goals"], "stop": r["stop"]}


def _world_cells(w: dict) -> tuple[str, str, str, str]:
    """(settings, balances, mints, goals) of a world's cell as text."""
    settings = ", ".join(f"{k}={_fmt(v)}" for k, v in w["settings"].items()) or "—"
    balances = ", ".join(f"{k} {v}" for k, v in w["balances"].items())
    mints = f"{w['minted']} minted in {w['mints_held']}" + "".join(
        f"; {a} won {n}" for a, n in w["mint_winners"].items())
    goals = ", ".join(f"{a} {g['completed']}/{g['total']}" + (f" ({g['failed']} failed)" if g["failed"] else "")
                      for a, g in w["goals"].items())
    return settings, balances, mints, goals


# ---- terminal -----------------------------------------------------------------------------

def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


def _ci(s: dict) -> str:
    if s["mean"] is None:
        return "—"
    if s["lo"] is None:
        return _fmt(s["mean"])
    return f"{_fmt(s['mean'])} [{_fmt(s['lo'])}, {_fmt(s['hi'])}]"


def _pm(s: dict) -> str:
    """Compact for the terminal: mean ± half the interval."""
    if s["mean"] is None:
        return "—"
    if s["lo"] is None:
        return _fmt(s["mean"])
    return f"{_fmt(s['mean'])} ±{_fmt((s['hi'] - s['lo']) / 2)}"


def _shade(v, lo, hi) -> tuple[int, int, int]:
    """Blue (low) to red (high) through a dark middle, readable with white text."""
    t = 0.5 if v is None or hi <= lo else (v - lo) / (hi - lo)
    return int(40 + 180 * t), 50, int(40 + 180 * (1 - t))


def print_report(rep: dict, out: Console, folder: str) -> None:
    out.print(Text(f"sweep {rep['name']!r} in {folder}: {rep['stored']} of {rep['runs']} runs stored, {rep['failed']} failed",
                   style="bold"))
    for pa in rep["per_axis"]:
        t = Table(title=f"by {pa['axis']} (mean ± half its 95% interval)", title_justify="left")
        t.add_column(pa["axis"])
        t.add_column("runs", justify="right")
        for o in rep["outcomes"]:
            t.add_column(o.replace("_", " "), justify="right")
        for v in pa["values"]:
            t.add_row(Text(_fmt(v["value"])), str(v["n"]), *(_pm(v["outcomes"][o]) for o in rep["outcomes"]))
        out.print(t)
    h = rep["heatmap"]
    if h:
        vals = [c for row in h["cells"] for c in row if c is not None]
        lo, hi = (min(vals), max(vals)) if vals else (0, 0)
        t = Table(title=f"{h['outcome']} (mean) by {h['y']} × {h['x']}", title_justify="left")
        t.add_column(f"{h['y']} \\ {h['x']}")
        for xv in h["xs"]:
            t.add_column(_fmt(xv), justify="center")
        for yv, row in zip(h["ys"], h["cells"]):
            cells = []
            for c in row:
                r, g, b = _shade(c, lo, hi)
                cells.append(Text(f" {_fmt(c)} ", style=Style(color="white", bgcolor=f"rgb({r},{g},{b})")))
            t.add_row(Text(_fmt(yv)), *cells)
        out.print(t)
        if h["cut"]:
            out.print(Text(f"(the first {len(h['xs'])} of {h['cut']['x']} {h['x']} values × the first {len(h['ys'])} of "
                           f"{h['cut']['y']} {h['y']} values; --x and --y choose the axes)", style="dim"))
    ex = rep["extremes"]
    t = Table(title=f"runs at the extremes of {ex['outcome']}", title_justify="left")
    for col in ("", "run", "#", "scenario", "seed", "settings", ex["outcome"]):
        t.add_column(col)
    for label, rows in (("highest", ex["highest"]), ("lowest", ex["lowest"])):
        for r in rows:
            t.add_row(label, r["run_id"], str(r["idx"]), r["scenario"], str(r["seed"]),
                      Text(", ".join(f"{k}={_fmt(v)}" for k, v in r["settings"].items())), _fmt(r[ex["outcome"]]))
    out.print(t)
    if rep.get("worlds"):
        worlds = rep["worlds"]
        t = Table(title="each world: balances, mints and goals (completed/total per agent)", title_justify="left")
        for col in ("run", "seed", "settings", "balances", "mints", "goals"):
            t.add_column(col)
        for w in worlds[:WORLDS_SHOWN]:
            t.add_row(w["run_id"], str(w["seed"]), *(Text(c) for c in _world_cells(w)))
        out.print(t)
        if len(worlds) > WORLDS_SHOWN:
            out.print(Text(f"(the first {WORLDS_SHOWN} of {len(worlds)} worlds; --html or --json lists them all)",
                           style="dim"))
    for e in rep["errors"]:
        out.print(Text(f"failed {e['run_id']}: {e['error']}", style="red"))
    out.print(Text("open a run: akh-tui sweep open " + folder + " RUN", style="dim"))


# ---- HTML ---------------------------------------------------------------------------------

def _e(v) -> str:
    return html.escape(_fmt(v) if not isinstance(v, str) else v)


def _interval_svg(s: dict, lo: float, hi: float, width: int = 110) -> str:
    """A dot at the mean and a bar over the interval, on the outcome's range across values."""
    if s["mean"] is None:
        return ""
    span = hi - lo

    def px(v: float) -> float:
        if span <= 0:  # every value the same: the middle, not the left edge
            return width / 2
        return 6 + (width - 12) * (min(max(v, lo), hi) - lo) / span

    bar = ""
    if s["lo"] is not None:
        bar = f'<line x1="{px(s["lo"]):.1f}" y1="8" x2="{px(s["hi"]):.1f}" y2="8" stroke="#888" stroke-width="3"/>'
    return (f'<svg width="{width}" height="16" role="img" aria-label="{_e(_ci(s))}">'
            f'<line x1="6" y1="8" x2="{width - 6}" y2="8" stroke="#ddd"/>{bar}'
            f'<circle cx="{px(s["mean"]):.1f}" cy="8" r="4" fill="#c0392b"/></svg>')


def to_html(rep: dict) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>sweep {_e(rep['name'] or '')}</title>",
        "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:right}th{background:#f4f4f4}"
        "td.l,th.l{text-align:left}.ci{color:#555;font-size:11px}"
        # the page is never wider than the window: a wide table or heatmap scrolls in its own box
        ".wide{max-width:100%;overflow-x:auto}</style></head><body>",
        f"<h1>Sweep {_e(rep['name'] or '')}</h1>",
        f"<p>{rep['stored']} of {rep['runs']} runs stored, {rep['failed']} failed. Means with 95% intervals (Student t), clipped to what each outcome can be (a count is never below 0).</p>",
    ]
    for pa in rep["per_axis"]:
        parts.append(f"<h2>By {_e(pa['axis'])}</h2><div class='wide'><table><tr><th class='l'>{_e(pa['axis'])}</th><th>runs</th>")
        parts += [f"<th>{_e(o.replace('_', ' '))}</th>" for o in rep["outcomes"]]
        parts.append("</tr>")
        ranges = {}
        for o in rep["outcomes"]:
            pts = [x for v in pa["values"] for x in (v["outcomes"][o]["lo"], v["outcomes"][o]["hi"], v["outcomes"][o]["mean"]) if x is not None]
            ranges[o] = (min(pts), max(pts)) if pts else (0.0, 1.0)
        for v in pa["values"]:
            parts.append(f"<tr><td class='l'>{_e(v['value'])}</td><td>{v['n']}</td>")
            for o in rep["outcomes"]:
                s = v["outcomes"][o]
                parts.append(f"<td>{_interval_svg(s, *ranges[o])}<br><span class='ci'>{_e(_ci(s))}</span></td>")
            parts.append("</tr>")
        parts.append("</table></div>")
    h = rep["heatmap"]
    if h:
        vals = [c for row in h["cells"] for c in row if c is not None]
        lo, hi = (min(vals), max(vals)) if vals else (0, 0)
        cw, ch, left, top = 70, 28, 110, 40
        w, hgt = left + cw * len(h["xs"]) + 10, top + ch * len(h["ys"]) + 10
        svg = [f'<svg width="{w}" height="{hgt}" role="img" aria-label="heatmap" font-size="12" font-family="sans-serif">',
               f'<text x="{left}" y="14">{_e(h["x"])} →</text><text x="4" y="{top - 6}">{_e(h["y"])} ↓</text>']
        for i, xv in enumerate(h["xs"]):
            svg.append(f'<text x="{left + cw * i + cw / 2}" y="{top - 6}" text-anchor="middle">{_e(xv)}</text>')
        for j, (yv, row) in enumerate(zip(h["ys"], h["cells"])):
            y0 = top + ch * j
            svg.append(f'<text x="{left - 6}" y="{y0 + ch / 2 + 4}" text-anchor="end">{_e(yv)}</text>')
            for i, c in enumerate(row):
                r, g, b = _shade(c, lo, hi)
                fill = "#eee" if c is None else f"rgb({r},{g},{b})"
                svg.append(f'<rect x="{left + cw * i}" y="{y0}" width="{cw - 2}" height="{ch - 2}" fill="{fill}"/>'
                           f'<text x="{left + cw * i + cw / 2 - 1}" y="{y0 + ch / 2 + 3}" text-anchor="middle" fill="white">{_e(c)}</text>')
        svg.append("</svg>")
        parts.append(f"<h2>{_e(h['outcome'])} (mean) by {_e(h['y'])} × {_e(h['x'])}</h2><div class='wide'>"
                     + "".join(svg) + "</div>")
        if h["cut"]:
            parts.append(f"<p>The first {len(h['xs'])} of {h['cut']['x']} {_e(h['x'])} values × the first "
                         f"{len(h['ys'])} of {h['cut']['y']} {_e(h['y'])} values.</p>")
    ex = rep["extremes"]
    parts.append(f"<h2>Runs at the extremes of {_e(ex['outcome'])}</h2><div class='wide'><table><tr><th></th><th class='l'>run</th>"
                 f"<th>#</th><th class='l'>scenario</th><th>seed</th><th class='l'>settings</th><th>{_e(ex['outcome'])}</th></tr>")
    for label, rows in (("highest", ex["highest"]), ("lowest", ex["lowest"])):
        for r in rows:
            settings = ", ".join(f"{k}={_fmt(v)}" for k, v in r["settings"].items())
            parts.append(f"<tr><td>{label}</td><td class='l'><code>{_e(r['run_id'])}</code></td><td>{r['idx']}</td>"
                         f"<td class='l'>{_e(r['scenario'])}</td><td>{r['seed']}</td><td class='l'>{_e(settings)}</td>"
                         f"<td>{_e(r[ex['outcome']])}</td></tr>")
    parts.append("</table></div>")
    if rep.get("worlds"):
        parts.append("<h2>Each world: balances, mints and goals</h2><div class='wide'><table><tr><th class='l'>run</th>"
                     "<th>seed</th><th class='l'>settings</th><th class='l'>balances</th><th class='l'>mints</th>"
                     "<th class='l'>goals (completed/total)</th></tr>")
        for w in rep["worlds"]:
            cells = "".join(f"<td class='l'>{_e(c)}</td>" for c in _world_cells(w))
            parts.append(f"<tr><td class='l'><code>{_e(w['run_id'])}</code></td><td>{w['seed']}</td>{cells}</tr>")
        parts.append("</table></div>")
    for e in rep["errors"]:
        parts.append(f"<p style='color:#c0392b'>failed <code>{_e(e['run_id'])}</code>: {_e(e['error'] or '')}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)
