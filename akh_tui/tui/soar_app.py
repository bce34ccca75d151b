"""A Soar agent in the workbench's panes (issue 30): the same layout and theme as the OODA
workbench, filled from the Soar run (engine.SoarRun through the face):

- the phase bar: input → propose → decision → apply → output, the next phase marked;
- the goal stack (states, and the operator selected in each; a substate is an impasse);
- the operators as the score table: id, operator, value, chance, proposing rule, note
  (chosen, rejected by …, forced);
- why not the highlighted operator (its preferences), or why a rule has not fired
  (`production matches`, the first failing condition marked >>>>);
- working memory (`print --depth 3` of the bottom state).

Keys: space a decision, p a phase, r to the halt, s select the highlighted operator (`decide
select`: the person's veto of Soar's own pick), left rewind one decision (init-soar and the
same seed and forces replayed), m why a rule has not fired (the goal test), b the rule
browser, 1-5 stop before that phase (space and r then stop there), o break when an operator
of the highlighted one's name is selected, i break on an impasse (space and r then stop right
after that decision phase, before the apply: soar/breaks.py), q quit. An error
is shown in the status line; the run goes on."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static, Tree

from .. import engine
from ..engine import InputError
from .themes import load_themes

CSS = """
Screen { layout: vertical; }
#status { height: 1; background: $panel; padding: 0 1; }
#phases { height: 1; padding: 0 1; }
#top { height: 1fr; min-height: 5; }
#middle { height: 2fr; min-height: 8; }
#bottom { height: 1fr; min-height: 4; }
.box { border: round $primary 50%; border-title-color: $accent; border-title-style: bold; padding: 0 1; }
.box:focus-within { border: round $accent; }
#stack-box { width: 1fr; }
#decision-box { width: 1fr; }
#ops-box { width: 1fr; padding: 0; }
#why-box { width: 40; }
.-narrow #why-box { width: 28; }
.-narrow #decision-box { display: none; }
DataTable { height: 1fr; }
#memory { text-wrap: nowrap; text-overflow: ellipsis; }
#why { text-wrap: wrap; }
"""

RUN_KEYS = {"decision", "phase", "run", "select", "rewind", "matches", "rules", "quit", "stop", "break_operator",
            "break_impasse"}  # the main screen's
GOAL_RULE_HINT = "*detect*goal"  # the bundled agents name their goal test so


class SoarWorkbench(App[None]):
    CSS = CSS
    TITLE = "akh-tui"
    BINDINGS = [
        # priority: the operator table has the focus, and these keys are the run's, not its
        Binding("space", "decision", "Decision", priority=True),
        Binding("p", "phase", "Phase", priority=True),
        Binding("r", "run", "Run", priority=True),
        Binding("s", "select", "Select", priority=True),
        Binding("left", "rewind", "Rewind", priority=True),
        Binding("m", "matches", "Goal test", priority=True),
        Binding("b", "rules", "Rules", priority=True),
        *[Binding(str(i + 1), f"stop({i})", "Stop at" if i == 0 else "", show=i == 0, priority=True,
                  key_display="1-5" if i == 0 else None)
          for i in range(5)],
        Binding("q", "quit", "Quit", priority=True),
        # after Quit, shown as one (the footer is full at 120 columns): o on an operator, i on an impasse
        Binding("o", "break_operator", "Break", priority=True, key_display="o/i"),
        Binding("i", "break_impasse", "", show=False, priority=True),
    ]

    def __init__(self, scenario: Any, seed: int | None = None, run: Any = None, replay_of: str | None = None,
                 stored: Any = None) -> None:
        super().__init__()
        self.scenario = scenario
        # stored: an engine.StoredSoarRun, its decisions written to the session store as they
        # are made (a rewind then a decision starts a branch there); else a run in the process
        self.stored = stored
        self.run_: Any = stored.run if stored is not None else run if run is not None else \
            engine.SoarRun.start(scenario, seed)
        self.replay_of = replay_of  # a trace replayed: its decisions are checked as they come
        self.message = ""
        self.last_phase: dict[str, Any] | None = None
        self.stops: set[str] = set()  # phases space and r stop before (1-5 toggle them)
        self.breaks: list[engine.SoarBreak] = []  # operator and impasse breaks (o and i toggle them)

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="phases")
        with Horizontal(id="top"):
            with Vertical(id="stack-box", classes="box") as v:
                v.border_title = "Goal stack"
                yield Tree("states", id="stack")
            with Vertical(id="decision-box", classes="box") as v:
                v.border_title = "Decision"
                yield Static(id="decision")
        with Horizontal(id="middle"):
            with Vertical(id="ops-box", classes="box") as v:
                v.border_title = "Operators"
                yield DataTable(id="ops", cursor_type="row", zebra_stripes=False)
            with Vertical(id="why-box", classes="box") as v:
                v.border_title = "Why not"
                yield Static(id="why")
        with Vertical(id="bottom", classes="box") as v:
            v.border_title = "Working memory"
            yield Static(id="memory")
        yield Footer()

    def on_mount(self) -> None:
        for theme in load_themes():
            self.register_theme(theme)
        self.theme = "akh-dark" if "akh-dark" in self.available_themes else self.theme
        table = self.query_one("#ops", DataTable)
        for col in ("id", "operator", "value", "chance", "note", "proposed by"):
            table.add_column(col, key=col)
        stack = self.query_one("#stack", Tree)
        stack.show_root, stack.can_focus = False, False  # shown, not browsed: the table keeps the keys
        table.focus()
        self._narrow()
        self.refresh_panes()

    def on_resize(self) -> None:
        self._narrow()

    def _narrow(self) -> None:
        self.set_class(self.size.width < 100, "-narrow")

    def on_unmount(self) -> None:
        (self.stored or self.run_).close()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # the run's keys are for the main screen: under the rule browser they are its own
        if isinstance(self.screen, RulesScreen) and action in RUN_KEYS:
            return False
        return True

    # ---- actions -------------------------------------------------------------------------------
    def _guard(self, fn: Any) -> None:
        try:
            fn()
        except InputError as exc:
            self.message = f"error: {exc}"
        self.refresh_panes()

    def _all_breaks(self) -> list[engine.SoarBreak]:
        return self.breaks + [engine.parse_soar_break(f"phase={p}") for p in sorted(self.stops)]

    def action_decision(self) -> None:
        def go() -> None:
            if self.breaks:
                _, why = self.run_.run_until(self._all_breaks(), 1)
                self.message = "halted: the agent reached its goal" if why == "halted" else why
                return
            if self.stops:
                _, why = self.run_.run_to(self.stops, 1)
                self.message = "halted: the agent reached its goal" if why == "halted" else why
                return
            rec = self.run_.step()
            self.message = "halted: the agent reached its goal" if rec is None or rec["halted"] else ""
        self._guard(go)

    def action_stop(self, i: int) -> None:
        phase = self.run_.phases[i]
        self.stops ^= {phase}
        self.message = (f"space and r stop before {phase}" if phase in self.stops else f"no stop before {phase}")
        self.refresh_panes()

    def _toggle(self, brk: engine.SoarBreak) -> None:
        had = [b for b in self.breaks if b.text == brk.text]
        self.breaks = [b for b in self.breaks if b.text != brk.text] if had else [*self.breaks, brk]
        self.message = f"no break at {brk.text}" if had else f"space and r break at {brk.text}"

    def action_break_operator(self) -> None:
        def go() -> None:
            table = self.query_one("#ops", DataTable)
            if table.row_count == 0:
                raise InputError("no operator highlighted: step to a decision's operators first", field="break")
            label = str(table.get_row_at(table.cursor_row)[1])
            self._toggle(engine.parse_soar_break(f"operator={label.split()[0]}", field="break"))
        self._guard(go)

    def action_break_impasse(self) -> None:
        self._guard(lambda: self._toggle(engine.parse_soar_break("impasse", field="break")))

    def action_phase(self) -> None:
        def go() -> None:
            if self.run_.finished:
                raise InputError("the agent halted: the run is over", field="step")
            self.last_phase = self.run_.step_phase()
            self.message = ""
        self._guard(go)

    def action_run(self) -> None:
        def go() -> None:
            most = self.scenario.max_decisions
            if self.breaks:
                n, why = self.run_.run_until(self._all_breaks(), most)
            else:
                n, why = self.run_.run_to(self.stops, most) if self.stops else self.run_.run(most)
            self.message = f"{n} decision(s) run, stopped: {why}"
        self._guard(go)

    def action_select(self) -> None:
        def go() -> None:
            table = self.query_one("#ops", DataTable)
            if table.row_count == 0:
                raise InputError("no operator proposed yet: step a phase first", field="select")
            oid = str(table.get_row_at(table.cursor_row)[0])
            self.run_.force(oid)
            self.message = f"{oid} selected for decision {self.run_.decision + 1} (decide select)"
        self._guard(go)

    def action_rewind(self) -> None:
        def go() -> None:
            back = max(0, self.run_.decision - 1)
            (self.stored or self.run_).rewind(back)
            self.message = f"rewound to decision {back} (init-soar, the same seed and forces replayed)"
        self._guard(go)

    def action_matches(self) -> None:
        def go() -> None:
            rules = [n for n in self.run_.rules() if n.endswith(GOAL_RULE_HINT.lstrip("*"))]
            if not rules:
                raise InputError("no goal-test rule (*detect*goal) in this agent", field="matches")
            self._show_why(self.run_.why_not(rules[0]), "why the goal test has not fired")
        try:
            go()
        except InputError as exc:
            self.message = f"error: {exc}"
            self.refresh_panes()

    def action_rules(self) -> None:
        self.push_screen(RulesScreen(self.run_))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "ops":
            return
        if event.row_key is None or event.row_key.value is None:
            return
        try:
            self._show_why(self.run_.why_not(event.row_key.value), "")
        except InputError as exc:
            self._show_why([str(exc)], "")

    # ---- panes ---------------------------------------------------------------------------------
    def _show_why(self, lines: list[str], title: str) -> None:
        t = Text()
        if title:
            t.append(title + "\n", style="bold")
        failing = [ln for ln in lines if ln.startswith(">>>>")]
        if failing:  # first, so a small terminal shows it
            t.append("fails at " + failing[0].removeprefix(">>>>").strip() + "\n", style="bold red")
        for ln in lines:
            t.append(ln + "\n", style="bold red" if ln.startswith(">>>>") else "")
        self.query_one("#why", Static).update(t)

    def refresh_panes(self) -> None:
        r = self.run_
        shown = r.shown()
        status = Text()
        status.append(f" {self.scenario.name} ", style="reverse bold")
        status.append(f" soar · seed {r.seed} · decision ")
        status.append(str(r.decision), style="bold")
        status.append(" · halted" if r.finished else " · paused", style="green" if r.finished else "yellow")
        if self.stored is not None:
            status.append(f" · run {self.stored.run_id} {self.stored.branch_name}", style="bold")
        if self.replay_of is not None:
            div = r.divergence
            status.append(f" · replay of {self.replay_of}", style="bold")
            status.append(f" · {div}" if div else f" · as recorded ({len(r.expected or [])} decisions)",
                          style="red" if div else "green")
        if self.message:
            status.append(f" · {self.message}", style="red" if self.message.startswith("error") else "dim")
        self.query_one("#status", Static).update(status)
        bar = Text("phase  ")
        for i, ph in enumerate(r.phases):
            if i:
                bar.append(" → ", style="dim")
            if ph in self.stops:
                bar.append("● ", style="bold red")
            bar.append(f"{i + 1} {ph}", style="bold reverse" if ph == r.next_phase and not r.finished else "")
        if self.last_phase is not None:
            bar.append(f"   ran {self.last_phase['phase']}", style="dim")
        if self.breaks:
            bar.append("   break: " + ", ".join(b.text for b in self.breaks), style="bold red")
        self.query_one("#phases", Static).update(bar)
        self._stack(shown["goals"])
        self._decision()
        self._operators()
        self.query_one("#memory", Static).update(Text("\n".join(shown["memory"])))

    def _stack(self, goals: list[str]) -> None:
        tree = self.query_one("#stack", Tree)
        tree.clear()
        node = tree.root
        for line in goals:
            if line.startswith("  operator"):
                node.add_leaf(Text(line.strip(), style="yellow"))
            else:
                node = node.add(Text(line, style="bold"), expand=True)
        tree.root.expand_all()

    def _decision(self) -> None:
        t = Text()
        recs = self.run_.records
        for rec in recs[-6:]:
            sel = rec["selected"] or {"id": "-", "label": "no operator (impasse)"}
            t.append(f"{rec['decision']:>3} ", style="dim")
            t.append(f"{sel['id']} {sel['label']}", style="bold" if rec is recs[-1] else "")
            if rec.get("forced"):
                t.append(" (selected by you)", style="yellow")
            t.append("\n")
        self.query_one("#decision", Static).update(t or Text("no decision yet: space steps one", style="dim"))

    def _operators(self) -> None:
        table = self.query_one("#ops", DataTable)
        cands = self.run_.candidates()
        recs = self.run_.records
        if recs and (self.run_.finished or not cands and self.run_.next_phase == "input"):
            cands = recs[-1]["candidates"]  # between decisions: the last decision's choices
        table.clear()
        for c in cands:
            proposed = next((s.removeprefix("proposed by ") for s in c["sources"] if s.startswith("proposed by")), "")
            rejected = [s for s in c["sources"] if s.startswith("rejected by")]
            note = "chosen" if c["chosen"] else (rejected[0] if rejected else "")
            style = "bold" if c["chosen"] else ("dim" if rejected else "")
            table.add_row(Text(c["id"], style=style), Text(c["label"], style=style),
                          "—" if c["value"] is None else f"{c['value']:.2f}",
                          "—" if c["probability"] is None else f"{c['probability']:.0%}",
                          note, proposed, key=c["id"])


def matches_summary(lines: list[str]) -> str:
    """`production matches` in a few words: how many complete matches, else where it fails."""
    failing = [ln for ln in lines if ln.startswith(">>>>")]
    done = next((ln for ln in lines if ln.endswith("complete matches.")), "")
    if done and not done.startswith("0 "):
        return done.removesuffix(".")
    return "fails at " + failing[0].removeprefix(">>>>").strip() if failing else done.removesuffix(".")


class RulesScreen(ModalScreen[None]):
    """Every production with its partial matches now: how many complete matches, or the first
    condition that fails; the highlighted rule's whole `production matches` beside."""

    DEFAULT_CSS = """
    RulesScreen { align: center middle; }
    #rules-frame { width: 96%; height: 90%; border: round $accent; border-title-color: $accent;
                   background: $surface; }
    #rules { width: 3fr; }
    #rule-matches { width: 2fr; padding: 0 1; }
    """
    BINDINGS = [Binding("escape,b,q", "dismiss", "Close")]

    def __init__(self, run: Any) -> None:
        super().__init__()
        self.run_ = run
        self.lines: dict[str, list[str]] = {name: run.why_not(name) for name in sorted(run.rules())}

    def compose(self) -> ComposeResult:
        with Horizontal(id="rules-frame") as h:
            h.border_title = f"Rules at decision {self.run_.decision} (phase {self.run_.next_phase})"
            yield DataTable(id="rules", cursor_type="row")
            with VerticalScroll(id="rule-matches"):
                yield Static(id="rule-text")

    def on_mount(self) -> None:
        table = self.query_one("#rules", DataTable)
        table.add_columns("rule", "matches now")
        for name, lines in self.lines.items():
            summary = matches_summary(lines)
            table.add_row(name, Text(summary, style="green" if not summary.startswith(("fails", "0")) else "dim"),
                          key=name)
        table.focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key is not None else None
        if name is None:
            return
        t = Text()
        for ln in self.lines.get(name, []):
            t.append(ln + "\n", style="bold red" if ln.startswith(">>>>") else "")
        self.query_one("#rule-text", Static).update(t)


def run_soar(scenario: Any, seed: int | None = None, run: Any = None, replay_of: str | None = None,
             stored: Any = None) -> int:
    """The Soar workbench on a Soar scenario, or replaying a Soar trace (`run`, made by
    engine.replay_soar_trace), or on a run of the session store (`stored`); exit 2 with the
    error on bad input."""
    try:
        app = SoarWorkbench(scenario, seed, run, replay_of, stored)
    except InputError as exc:
        if stored is not None:
            stored.close()
        print(f"error: {exc}")
        return 2
    app.run()
    return 0
