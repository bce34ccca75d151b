"""The rule browser (`R`): each rule with the bindings left after each of its premises (as
Soar's `matches` counts them), why the rule did not fire for a symbol typed in (enter; then
↑/↓ go through the rules, ctrl+w back to the symbol), and what
infer_rules would add now (its agenda), at the cycle on show (`Run.rules`,
engine/explain/rules.py), as `akh-tui agent rules --why-not SYMBOL` does headless."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from ..engine import InputError, Run


def rule_text(m: dict) -> Text:
    """One rule: its premises with their counts (the first that left nothing marked), its
    conclusion, and the why-not."""
    t = Text()
    t.append(m["rule"], style="bold")
    t.append("  ⇒ " + " ".join(m["conclusions"]) + "\n", style="dim")
    for i, p in enumerate(m["premises"]):
        n = p["bindings"]
        shown = "-" if n is None else (f"≥{n}" if p["capped"] else str(n))
        style = "red" if n == 0 else ("dim" if n is None else "")
        t.append(f" {i + 1}. {p['pattern']}", style=style)
        t.append(f"  {shown} binding(s)\n", style="bold " + style if style else "bold")
    if m["why_not"]:
        t.append(" " + "\n ".join(m["why_not"]) + "\n", style="yellow" if "failed" in m["why_not"][0] else "green")
    elif m["fires"]:
        t.append(f" holds for {m['fires']} binding(s); new: {len(m['new'])}\n", style="green")
    return t


def agenda_text(ag: dict) -> Text:
    t = Text()
    t.append("Agenda ", style="bold")
    t.append(f"{ag['pending']} triple(s) not joined yet; infer_rules would add {ag['total']} now\n", style="dim")
    for a in ag["adds"]:
        t.append(f" + {a['triple']}")
        t.append(f"  [{a['rule']}" + (f" from {'; '.join(a['premises'])}" if a["premises"] else "") + "]\n",
                 style="dim")
    return t


class RulesScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "close", "Close", id="rules.close"),
        Binding("ctrl+w", "focus_symbol", "Why not…", id="rules.why_not"),
    ]
    DEFAULT_CSS = """
    RulesScreen #rules-title { height: auto; background: $panel; padding: 0 1; }
    RulesScreen #rules-list { width: 38; border: round $primary 50%; }
    RulesScreen.-narrow #rules-list { width: 31; }
    RulesScreen #rules-detail { border: round $primary 50%; padding: 0 1; }
    """

    def __init__(self, ctl: Run, cycle: int | None, symbol: str = "") -> None:
        super().__init__()
        self.ctl = ctl
        self.cycle = cycle  # the replayed cycle shown (None: live)
        self.symbol = symbol
        self.info: dict | None = None
        self.selected = 0

    def compose(self) -> ComposeResult:
        yield Static(id="rules-title")
        yield Input(placeholder="why not for symbol… (e.g. dog), enter", id="rules-symbol")
        with Horizontal():
            yield OptionList(id="rules-list")
            with VerticalScroll(id="rules-detail"):
                yield Static(id="rules-text")
        yield Footer()

    def on_mount(self) -> None:
        self.set_class(self.app.size.width < 100, "-narrow")
        self.query_one(Input).value = self.symbol
        self.refresh_rules()
        self.query_one(Input).focus()  # a symbol first (the why-not); tab reaches the rules

    def on_resize(self) -> None:
        self.set_class(self.app.size.width < 100, "-narrow")

    def refresh_rules(self) -> None:
        t = Text()
        t.append(" Rules ", style="bold reverse")
        t.append(f" at cycle {self.cycle} (replay)" if self.cycle is not None else f" live, cycle {self.ctl.cycle}")
        try:
            self.info = self.ctl.rules(symbol=self.symbol or None, cycle=self.cycle)
        except InputError as exc:
            t.append(f" · {exc}", style="red")
            self.query_one("#rules-title", Static).update(t)
            return
        t.append(f" · why not for {self.symbol}" if self.symbol else " · type a symbol above for why-not", style="dim")
        self.query_one("#rules-title", Static).update(t)
        ol = self.query_one(OptionList)
        ol.clear_options()
        for m in self.info["rules"]:
            counts = "→".join("-" if p["bindings"] is None else str(p["bindings"]) for p in m["premises"])
            mark = "✗" if any(p["bindings"] == 0 for p in m["premises"]) else "✓"
            ol.add_option(Option(Text.assemble((mark + " ", "red" if mark == "✗" else "green"), m["rule"],
                                               (f" {counts}", "dim"))))
        self.selected = min(self.selected, max(0, len(self.info["rules"]) - 1))
        ol.highlighted = self.selected
        self._show()

    def _show(self) -> None:
        if self.info is None or not self.info["rules"]:
            return
        body = rule_text(self.info["rules"][self.selected])
        body.append("\n")
        body.append_text(agenda_text(self.info["agenda"]))
        self.query_one("#rules-text", Static).update(body)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option_index is not None and event.option_index != self.selected:
            self.selected = event.option_index
            self._show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.symbol = event.value.strip()
        self.refresh_rules()
        if self.info is not None:
            self.query_one(OptionList).focus()  # ↑/↓ now go through the rules, each with its why-not

    def action_focus_symbol(self) -> None:
        self.query_one(Input).focus()

    def on_workbench_update(self) -> None:
        """Live, the browser follows the run: asked again when the cycle has moved (not every
        frame: the agenda runs infer_rules on a copy of the graph)."""
        if self.cycle is None and self.info is not None and self.info["cycle"] != self.ctl.cycle:
            self.refresh_rules()

    def action_close(self) -> None:
        self.app.pop_screen()
