"""The Orient neighbourhood as a picture (issue 28 §2): one symbol in a box, the triples of
the activation walk that touch it drawn as arrows, `subject ─predicate─▶` joining the box from
the left when the symbol is the object, `─predicate─▶ object` leaving it on the right when it is
the subject. Each neighbour carries its activation; an arrow is coloured by its triple's
provenance (as the Orient view's lists are). Pure text (a rich Text), sized to the box it is
drawn in: at 80×24 the rows that do not fit are counted ("… 3 more"), never cut silently."""

from __future__ import annotations

from rich.text import Text

# provenance (as the activation edges carry it) -> style: the lists' colours (orient_view.py)
EDGE_STYLE = {"asserted": "", "user": "green"}
MIN_SIDE = 12  # narrower than this, a side shows its arrows' count only


def _edge_style(provenance: str) -> str:
    if provenance.startswith("inferred:"):
        return "magenta"
    if provenance == "tool:synthesize_triple":
        return "yellow"
    if provenance.startswith("tool:"):
        return "cyan"
    return EDGE_STYLE.get(provenance, "")


# (up, down, left, right) -> the box-drawing character joining those sides
_JOIN = {
    (False, False, True, True): "─", (True, True, False, False): "│",
    (False, True, False, True): "┌", (False, True, True, False): "┐",
    (True, False, False, True): "└", (True, False, True, False): "┘",
    (True, True, False, True): "├", (True, True, True, False): "┤",
    (False, True, True, True): "┬", (True, False, True, True): "┴",
    (True, True, True, True): "┼", (False, False, True, False): "─", (False, False, False, True): "─",
}


def _join(up: bool, down: bool, left: bool, right: bool) -> str:
    return _JOIN.get((up, down, left, right), " ")


def _fit(text: str, width: int, left: bool) -> str:
    """`text` in `width` cells: cut with an ellipsis on the side away from the box."""
    if len(text) <= width:
        return text.rjust(width) if left else text.ljust(width)
    if width <= 1:
        return "…"[:width]
    return "…" + text[-(width - 1):] if left else text[:width - 1] + "…"


def edges_of(o: dict, focus: str) -> tuple[list[dict], list[dict]]:
    """The activation walk's triples into `focus` (it is the object) and out of it (the
    subject), each once, in the walk's order."""
    ins: list[dict] = []
    outs: list[dict] = []
    seen: set[str] = set()
    for e in o.get("activation", {}).get("edges", []):
        triple = e["triple"]
        if triple in seen or focus not in (e["from"], e["to"]):
            continue
        seen.add(triple)
        other = e["to"] if e["from"] == focus else e["from"]
        words = triple.split(" ")
        # a triple's text is "subject predicate object"; labels may hold spaces, the
        # neighbour's label and the focus's are known, so the predicate is what is between
        if triple.startswith(focus + " ") and triple.endswith(" " + other):
            outs.append({"other": other, "predicate": triple[len(focus) + 1:-(len(other) + 1)], **_kept(e)})
        elif triple.startswith(other + " ") and triple.endswith(" " + focus):
            ins.append({"other": other, "predicate": triple[len(other) + 1:-(len(focus) + 1)], **_kept(e)})
        elif len(words) == 3:  # a label that is a prefix of another: fall back on the words
            (outs if words[0] == focus else ins).append({"other": other, "predicate": words[1], **_kept(e)})
    return ins, outs


def _kept(e: dict) -> dict:
    return {"provenance": e.get("provenance", "asserted"), "confidence": e.get("confidence", 1.0)}


def picture(o: dict, focus: str, width: int, height: int) -> Text:
    """The neighbourhood of `focus` drawn in `width` × `height` cells (at least 3 rows)."""
    nodes = {n["symbol"]: n for n in o.get("activation", {}).get("nodes", [])}
    ins, outs = edges_of(o, focus)
    t = Text(no_wrap=True, overflow="crop")
    me = nodes.get(focus)
    head = f"{focus}: {len(ins)} in, {len(outs)} out"
    if me is not None:
        head += f" · activation {me['activation']:.2f}, hop {me['hop']}"
        if me.get("via"):
            head += f" · reached by ({me['via']['triple']})"
    t.append(_fit(head, width, False).rstrip() + "\n", style="dim")
    rows = max(3, min(max(len(ins), len(outs)), height - 1))
    box_w = min(len(focus) + 4, max(6, width // 3))
    room = max(0, width - box_w - 2)
    # each side as wide as its longest arrow needs, the room shared in that proportion
    need_l = max((len(f"{e['other']} 0.00 ─{e['predicate']}─▶") for e in ins), default=0)
    need_r = max((len(f"─{e['predicate']}─▶ {e['other']} 0.00") for e in outs), default=0)
    if need_l + need_r <= room:
        side_l, side_r = need_l, need_r
    else:
        side_l = room * need_l // (need_l + need_r)
        side_r = room - side_l

    def lines(edges: list[dict], side: int, word: str) -> list[dict | str]:
        if not edges:
            return []
        if side < MIN_SIDE:  # too narrow for names: the count, once
            return [word]
        if len(edges) <= rows:
            return list(edges)
        return [*edges[:rows - 1], f"… {len(edges) - rows + 1} more"]

    left, right = lines(ins, side_l, f"{len(ins)} in ─▶"), lines(outs, side_r, f"─▶ {len(outs)} out")
    mid = (rows - 1) // 2
    lo_l, lo_r = max(0, mid - (len(left) - 1) // 2), max(0, mid - (len(right) - 1) // 2)
    lo_l, lo_r = min(lo_l, rows - len(left)), min(lo_r, rows - len(right))
    l_rows = {lo_l + i: e for i, e in enumerate(left)}
    r_rows = {lo_r + i: e for i, e in enumerate(right)}
    l_span = (min([*l_rows, mid]), max([*l_rows, mid])) if l_rows else None
    r_span = (min([*r_rows, mid]), max([*r_rows, mid])) if r_rows else None
    label = _fit(focus, box_w - 4, False).strip().center(box_w - 4)
    for row in range(rows):
        # the left side: "subject ─predicate─▶" ending at the bus
        e = l_rows.get(row)
        if isinstance(e, dict):
            n = nodes.get(e["other"])
            act = f" {n['activation']:.2f}" if n is not None else ""
            arrow = _fit(f" ─{e['predicate']}─▶", min(side_l, len(e["predicate"]) + 4), True)
            name = _fit(e["other"] + act, side_l - len(arrow), True)
            t.append(name, style="bold" if n is not None and n.get("seed") else "")
            t.append(arrow, style=_edge_style(e["provenance"]) or "dim")
        elif isinstance(e, str):
            t.append(_fit(e, side_l, True), style="dim")
        else:
            t.append(" " * side_l)
        if l_span is not None and l_span[0] <= row <= l_span[1]:
            t.append(_join(row > l_span[0], row < l_span[1], e is not None, row == mid), style="dim")
        elif side_l:
            t.append(" ")
        # the box
        if row == mid - 1:
            t.append("╭" + "─" * (box_w - 2) + "╮", style="yellow")
        elif row == mid:
            t.append("┤" if l_span else "│", style="yellow")
            t.append(f" {label} ", style="bold reverse")
            t.append("├" if r_span else "│", style="yellow")
        elif row == mid + 1:
            t.append("╰" + "─" * (box_w - 2) + "╯", style="yellow")
        else:
            t.append(" " * box_w)
        # the right side: the bus, then "─predicate─▶ object"
        r = r_rows.get(row)
        if r_span is not None and r_span[0] <= row <= r_span[1]:
            t.append(_join(row > r_span[0], row < r_span[1], row == mid, r is not None), style="dim")
        else:
            t.append(" ")
        if isinstance(r, dict):
            n = nodes.get(r["other"])
            act = f" {n['activation']:.2f}" if n is not None else ""
            shown = _fit(f"─{r['predicate']}─▶ ", min(side_r, len(r["predicate"]) + 4), False)
            t.append(shown, style=_edge_style(r["provenance"]) or "dim")
            t.append(_fit(r["other"] + act, side_r - len(shown), False).rstrip(),
                     style="bold" if n is not None and n.get("seed") else "")
        elif isinstance(r, str):
            t.append(_fit(r, side_r, False).rstrip(), style="dim")
        if row < rows - 1:
            t.append("\n")
    t.rstrip()
    return t
