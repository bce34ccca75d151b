"""The Orient view (`o`, or from a goal's detail): what Orient saw.

For the focus goal (or a goal or symbol picked): its symbols, the 2-hop neighbourhood that
spreading activation walked with each node's activation, the adjacent triples that made K, and
the triples added this cycle marked by provenance. Up/down move between nodes; the inspector on
the right lists the highlighted symbol's triples with provenance and the derivation chain of an
inferred one; enter re-centres the view on that symbol. Everything comes from `Run.orient` and
`Run.symbol`, which read only the neighbourhood (instant on a 100,000-triple graph)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ..engine import InputError, Run
from .orient_picture import picture
from .panes import bar

PROVENANCE_STYLE = {"asserted": "", "inferred": "magenta", "hypothesis": "yellow", "tool": "cyan", "user": "green"}
MAX_TRIPLES = 40  # an inspector lists this many of a symbol's triples (the total is said)


def node_prompt(n: dict) -> Text:
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{n['hop']} ", style="dim")
    t.append(bar(n["activation"], 6), style="yellow" if n.get("seed") else "cyan")
    t.append(f" {n['activation']:.2f} ", style="dim")
    t.append(n["symbol"], style="bold" if n.get("seed") else "")
    return t


def derivation_lines(d: dict, depth: int = 0, out: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    out = [] if out is None else out
    by = f" ← rule {d['rule']}" if d.get("rule") else f" ({d.get('provenance', '')})"
    out.append(("  " * depth + f"({d['triple']}){by}, cycle {d.get('cycle', 0)}", "magenta" if d.get("rule") else "dim"))
    for p in d.get("premises", []):
        derivation_lines(p, depth + 1, out)
    return out


def inspector_text(info: dict) -> Text:
    t = Text()
    t.append(f"{info['symbol']}", style="bold")
    t.append(f" · {info.get('kind', '')} · {info.get('total', len(info['triples']))} triple(s)\n\n", style="dim")
    for tr in info["triples"][:MAX_TRIPLES]:
        kind = tr.get("provenance_kind", "asserted")
        t.append(f"({tr['text']})", style="bold" if tr.get("direction") == "out" else "")
        t.append(f"  {tr.get('provenance_text', tr.get('provenance', ''))}", style=PROVENANCE_STYLE.get(kind, "dim"))
        t.append(f", cycle {tr.get('cycle', 0)}\n" if tr.get("cycle") else "\n", style="dim")
        if tr.get("derivation") and tr["derivation"].get("premises"):
            for line, style in derivation_lines(tr["derivation"], 2)[1:]:
                t.append(line + "\n", style=style)
    if len(info["triples"]) > MAX_TRIPLES:
        t.append(f"… {len(info['triples']) - MAX_TRIPLES} more\n", style="dim")
    return t


def summary_text(o: dict) -> Text:
    t = Text()
    g = o.get("goal")
    if g:
        t.append(f"goal #{g['id']} ", style="bold")
        t.append(f"{g['description']}\n")
    t.append(f"cycle {o['cycle']} · symbols: {', '.join(o['symbols']) or '—'} · K ", style="dim")
    t.append("true" if o.get("K") else "false: no known triples", style="green" if o.get("K") else "red")
    act = o["activation"]
    t.append(f" · {len(act['nodes'])} nodes, {act.get('edges_read', len(act['edges']))} edges read\n", style="dim")
    adjacent = o.get("adjacent") or []
    t.append(f"\nadjacent triples (K): {len(adjacent)}\n", style="bold")
    for tr in adjacent[:12]:
        kind = tr.get("provenance_kind", "asserted")
        t.append(f"  ({tr['text']}) ", style="")
        t.append(tr.get("provenance_text", ""), style=PROVENANCE_STYLE.get(kind, "dim"))
        t.append("\n")
    if len(adjacent) > 12:
        t.append(f"  … {len(adjacent) - 12} more\n", style="dim")
    added = o.get("added") or []
    t.append(f"\nadded this cycle: {len(added)}\n", style="bold")
    for tr in added[:12]:
        kind = tr.get("provenance_kind", "asserted")
        t.append(f"  + ({tr['text']}) ", style="green")
        t.append(tr.get("provenance_text", ""), style=PROVENANCE_STYLE.get(kind, "dim"))
        t.append("\n")
    return t


class OrientScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="orient.close"),
        Binding("enter", "centre", "Centre on symbol", id="orient.centre"),
        Binding("p", "picture", "Picture / lists", id="orient.picture"),
    ]
    DEFAULT_CSS = """
    OrientScreen #orient-title { height: 1; background: $panel; padding: 0 1; }
    OrientScreen .box { border: round $primary 50%; border-title-color: $accent; padding: 0 1; }
    OrientScreen .box:focus-within { border: round $accent; }
    OrientScreen #orient-nodes-box { width: 40; }
    OrientScreen #orient-nodes { height: 1fr; border: none; padding: 0; }
    OrientScreen #orient-summary-box { height: 2fr; }
    OrientScreen #orient-inspector-box { height: 3fr; }
    """

    def __init__(self, ctl: Run, goal_id: int | None = None, symbol: str | None = None) -> None:
        super().__init__()
        self.ctl = ctl
        self.goal_id, self.symbol = goal_id, symbol
        self.data: dict | None = None
        self.show_picture = False  # p: the highlighted node's neighbourhood drawn, instead of the lists
        self.highlighted: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="orient-title")
        with Horizontal():
            with Vertical(id="orient-nodes-box", classes="box") as b:
                b.border_title = "Neighbourhood (hop, activation)"
                yield OptionList(id="orient-nodes")
            with Vertical():
                with VerticalScroll(id="orient-summary-box", classes="box") as b:
                    b.border_title = "What Orient saw"
                    yield Static(id="orient-summary")
                with VerticalScroll(id="orient-inspector-box", classes="box") as b:
                    b.border_title = "Symbol"
                    yield Static(id="orient-inspector")
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    def load(self) -> None:
        title = Text()
        title.append(" Orient ", style="bold reverse")
        try:
            self.data = self.ctl.orient(self.goal_id, self.symbol)
        except InputError as exc:
            title.append(f" {exc}", style="red")
            self.query_one("#orient-title", Static).update(title)
            return
        o = self.data
        where = f" from symbol {self.symbol}" if self.symbol else (f" for goal #{o['goal']['id']}" if o.get("goal") else "")
        title.append(f"{where} · ↑/↓ move between nodes, enter centres on one, escape closes", style="dim")
        self.query_one("#orient-title", Static).update(title)
        self.draw_summary()
        nodes = self.query_one("#orient-nodes", OptionList)
        nodes.clear_options()
        nodes.add_options([Option(node_prompt(n), id=n["symbol"]) for n in o["activation"]["nodes"]])
        nodes.focus()
        if o["activation"]["nodes"]:
            nodes.highlighted = 0
            self.inspect(o["activation"]["nodes"][0]["symbol"])

    def draw_summary(self) -> None:
        """The top box: what Orient saw as lists, or (p) the highlighted symbol drawn with its
        neighbours, sized to the box."""
        if self.data is None:
            return
        box = self.query_one("#orient-summary-box", VerticalScroll)
        focus = self.highlighted or next((n["symbol"] for n in self.data["activation"]["nodes"]), None)
        if not self.show_picture or focus is None:
            box.border_title = "What Orient saw"
            self.query_one("#orient-summary", Static).update(summary_text(self.data))
            return
        box.border_title = f"Neighbourhood of {focus} (p: the lists)"
        size = box.content_size
        self.query_one("#orient-summary", Static).update(
            picture(self.data, focus, max(20, size.width - 1), max(4, size.height)))

    def on_resize(self) -> None:
        if self.show_picture:
            self.draw_summary()

    def action_picture(self) -> None:
        self.show_picture = not self.show_picture
        self.draw_summary()

    def inspect(self, label: str) -> None:
        self.highlighted = label
        if self.show_picture:
            self.draw_summary()
        try:
            info = self.ctl.symbol(label)
        except InputError as exc:
            self.query_one("#orient-inspector", Static).update(Text(str(exc), style="red"))
            return
        node = next((n for n in (self.data or {}).get("activation", {}).get("nodes", []) if n["symbol"] == label), None)
        t = Text()
        if node is not None and node.get("via"):
            t.append(f"reached from {node['via']['from']} by ({node['via']['triple']})\n", style="dim")
        t.append_text(inspector_text(info))
        self.query_one("#orient-inspector", Static).update(t)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id is not None:
            self.inspect(event.option.id)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.goal_id, self.symbol = None, event.option.id
            self.load()

    def action_centre(self) -> None:
        nodes = self.query_one("#orient-nodes", OptionList)
        if nodes.highlighted is not None:
            opt = nodes.get_option_at_index(nodes.highlighted)
            if opt.id is not None:
                self.goal_id, self.symbol = None, opt.id
                self.load()

    def action_close(self) -> None:
        self.app.pop_screen()
