"""The cycle in phases in the workbench: the phase diagram (which phase runs next, which ones
the following cycles stop before), what the phase just run produced, and the two questions a
person in the loop is asked before act: approve the chosen action, answer user_interact.

The diagram is hidden until the user steps a phase (`p`), sets a stop, or a cycle waits for
them: a workbench that never steps phases looks as it always did.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Static, TextArea

from ..engine.records import CycleRecord, PendingAct, PendingCycle
from ..engine import DEFAULT_RULES, PHASES, InputError, stop_phases
from .dialogs import guarded, mark_short

if TYPE_CHECKING:
    from textual.app import App

    from ..engine import Breakpoint, Run, UserConfig

    # the mixin is only ever mixed into the workbench, an App: the checker sees App's methods
    # (screen, push_screen, call_from_thread) on it; at run time it stays a plain class
    _Host = App[None]
else:
    _Host = object

ARROW = " → "


def phase_summary(phase: str | None, result: dict | None, waiting: dict | None = None) -> Text:
    """One line for what a phase produced (the panes show the detail)."""
    t = Text()
    if phase is None or result is None:
        return t
    t.append(f"{phase}: ", style="bold")
    if phase == "observe":
        t.append(f"{len(result['goals'])} active goal(s), {result['wm_size']} in working memory, "
                 f"{len(result['episodes'])} episode(s) recalled")
        if result["recent"]:
            t.append(f"; newest: {result['recent'][-1]['content'][:60]}", style="dim")
    elif phase == "orient":
        adj = ", ".join(f"#{g} {n}" for g, n in result["adjacent"].items())
        top = ", ".join(f"{a['symbol']} {a['activation']:.2f}" for a in result["activated"][:4])
        t.append(f"adjacent triples {adj or 'none'}; activated {top or 'none'}; K={result['K']:.2f}")
    elif phase == "decide":
        t.append(f"pending {result['tool']}({result['input']}) {result['breakdown']}")
    elif phase == "act":
        t.append(("ok " if result["success"] else "FAILED ") + result["output"][:90])
    elif phase == "learn":
        t.append(f"{result['progress']}, coverage {result['coverage']:.2f}"
                 + (f"; {', '.join(result['events'])}" if result["events"] else ""))
    if waiting is not None:
        what = "approval" if waiting["kind"] == "approve" else "your answer"
        t.append(f" · waits for {what} before act", style="bold yellow")
    return t


class PhaseDiagram(Widget, can_focus=False):
    """observe → orient → decide → act → learn, the next phase marked; a phase chosen (click,
    or ←/→ and enter while focused: tab reaches it once shown) is one the following cycles stop
    before (■). Not focusable while hidden, so the workbench's focus is what it always was."""

    DEFAULT_CSS = """
    PhaseDiagram { height: 1; width: 1fr; }
    PhaseDiagram:focus { background: $boost; }
    """
    BINDINGS = [
        Binding("left", "move(-1)", "Prev phase", show=False),
        Binding("right", "move(1)", "Next phase", show=False),
        Binding("enter", "toggle_stop", "Stop before", show=False),
    ]

    class StopsChanged(Message):
        def __init__(self, stops: set[str]) -> None:
            super().__init__()
            self.stops = stops

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.next_phase = "observe"
        self.stops: set[str] = set()
        self.cursor = 0
        self.cycle: int | None = None

    def show(self, next_phase: str, stops: set[str], cycle: int | None) -> None:
        self.next_phase, self.stops, self.cycle = next_phase, set(stops), cycle
        self.refresh()

    def _spans(self) -> list[tuple[int, int, str]]:
        """(start, end, phase) columns of each phase's label."""
        x = len(self._prefix())
        out = []
        for name in PHASES:
            label = self._label(name)
            out.append((x, x + len(label), name))
            x += len(label) + len(ARROW)
        return out

    def _prefix(self) -> str:
        return f"cycle {self.cycle}: " if self.cycle is not None else "next cycle: "

    def _label(self, name: str) -> str:
        return ("■ " if name in self.stops else "") + name

    def render(self) -> Text:
        t = Text(self._prefix(), style="dim")
        for i, name in enumerate(PHASES):
            style = "bold reverse green" if name == self.next_phase else ""
            if name in self.stops:
                style += " red"
            if self.has_focus and i == self.cursor:
                style += " underline"
            t.append(self._label(name), style=style.strip() or None)
            if i < len(PHASES) - 1:
                t.append(ARROW, style="dim")
        t.append("   (p: one phase · click a phase: stop before it)", style="dim")
        return t

    def toggle(self, name: str) -> None:
        self.stops ^= {name}
        self.refresh()
        self.post_message(self.StopsChanged(set(self.stops)))

    def on_click(self, event: events.Click) -> None:
        for lo, hi, name in self._spans():
            if lo <= event.x < hi:
                self.cursor = PHASES.index(name)
                self.toggle(name)
                return

    def action_move(self, d: int) -> None:
        self.cursor = (self.cursor + d) % len(PHASES)
        self.refresh()

    def action_toggle_stop(self) -> None:  # not `toggle`: that is DOMNode's action_toggle(attribute)
        self.toggle(PHASES[self.cursor])


class PhaseBar(Vertical):
    """The diagram and what the phase just run produced, under the status line."""

    DEFAULT_CSS = """
    PhaseBar { height: 2; display: none; }
    PhaseBar.-shown { display: block; }
    PhaseBar #phase-result { height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield PhaseDiagram(id="phase-diagram")
        yield Static("", id="phase-result")

    def show(self, next_phase: str, stops: set[str], cycle: int | None, last: tuple[str | None, dict | None],
             waiting: dict | None) -> None:
        diagram = self.query_one(PhaseDiagram)
        diagram.can_focus = True
        diagram.show(next_phase, stops, cycle)
        self.query_one("#phase-result", Static).update(phase_summary(last[0], last[1], waiting))


class ApprovalScreen(ModalScreen[None]):
    """The pending action, its score and why: approve, reject, or edit its input (only to an
    input the tool could take from the goal: a refused edit is shown and the action waits)."""

    BINDINGS = [Binding("escape", "dismiss", "Later", id="approval.later")]
    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical { width: 90; max-width: 100%; height: auto; max-height: 100%; border: thick $warning;
                                background: $surface; padding: 1 2; }
    ApprovalScreen #approval-why-box { height: auto; max-height: 12; }
    ApprovalScreen #approval-error { color: $error; height: auto; }
    ApprovalScreen Horizontal { height: auto; }
    ApprovalScreen.-short > Vertical { padding: 0 1; }
    ApprovalScreen.-short #approval-why-box { max-height: 7; }
    """

    def __init__(self, waiting: dict, decide: Callable[[str, str | None], None]) -> None:
        super().__init__()
        self.waiting = waiting
        self._decide = decide

    def compose(self) -> ComposeResult:
        w = self.waiting
        with Vertical():
            yield Label(Text(f"Cycle {w['cycle']}: approve before act?", style="bold"))
            yield Static(Text(f"{w['tool']}({w['input']})  score {w['score']:.2f}  · rule {w['rule']}\n"
                              f"goal: {w['goal']}"), id="approval-action")
            with VerticalScroll(id="approval-why-box"):  # a long why scrolls; the buttons stay on screen
                yield Static(Text("\n".join(w["why"]), style="dim"), id="approval-why")
            yield Input(value=str(w["input"]), placeholder="edited input (only one the goal names)", id="approval-input")
            with Horizontal():
                yield Button("Approve", id="approve", variant="success")
                yield Button("Reject", id="reject", variant="error")
                yield Button("Edit input", id="edit", variant="primary")
            yield Static("", id="approval-error")

    def on_mount(self) -> None:
        mark_short(self)

    def on_resize(self) -> None:
        mark_short(self)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        decision = event.button.id or ""
        text = self.query_one("#approval-input", Input).value if decision == "edit" else None
        try:
            self._decide(decision, text)
        except InputError as exc:
            self.query_one("#approval-error", Static).update(Text(str(exc)))
            return
        self.dismiss(None)


class QuestionScreen(ModalScreen[None]):
    """user_interact's question: each `subject predicate object` line becomes a triple; skip
    answers nothing ("no answer")."""

    BINDINGS = [Binding("escape", "dismiss", "Later", id="question.later")]
    DEFAULT_CSS = """
    QuestionScreen { align: center middle; }
    QuestionScreen > Vertical { width: 90; max-width: 100%; height: auto; max-height: 100%; border: thick $primary;
                                background: $surface; padding: 1 2; }
    QuestionScreen TextArea { height: 6; }
    QuestionScreen.-short > Vertical { padding: 0 1; }
    QuestionScreen.-short TextArea { height: 4; }
    QuestionScreen #question-error { color: $error; height: auto; }
    QuestionScreen Horizontal { height: auto; }
    """

    def __init__(self, waiting: dict, answer: Callable[[str | None], None]) -> None:
        super().__init__()
        self.waiting = waiting
        self._answer = answer

    def compose(self) -> ComposeResult:
        w = self.waiting
        with Vertical():
            yield Label(Text(f"Cycle {w['cycle']}: the agent asks", style="bold"))
            yield Static(Text(w["question"]), id="question-text")
            yield Label("Your answer, one 'subject predicate object' per line:")
            yield TextArea(id="question-answer")
            with Horizontal():
                yield Button("Answer", id="answer", variant="success")
                yield Button("Skip (no answer)", id="skip")
            yield Static("", id="question-error")

    def on_mount(self) -> None:
        mark_short(self)

    def on_resize(self) -> None:
        mark_short(self)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        text = self.query_one("#question-answer", TextArea).text if event.button.id == "answer" else None
        try:
            self._answer(text)
        except InputError as exc:
            self.query_one("#question-error", Static).update(Text(str(exc)))
            return
        self.dismiss(None)


class PhaseStepping(_Host):
    """The cycle in phases and a person in the loop (issue 12): a mixin of the workbench's
    phase stepping, the phase diagram, approval before act and user_interact's question."""

    phase_stops: set[str]
    last_phase: tuple[str | None, dict | None]
    approval_specs: list[str]
    # what the workbench provides (tui/app.py): its run, settings and state, and the methods below
    ctl: Run
    user_config: UserConfig
    sync: bool
    running: bool
    until_change: tuple[tuple[int, str], ...] | None
    _dirty: bool
    _breaks: list[Breakpoint]
    phase_bar: PhaseBar

    if TYPE_CHECKING:
        @property
        def live(self) -> bool: ...

        def _read_only(self) -> bool: ...

        def _submit(self, cmd: Callable[[], None]) -> None: ...  # (the app's takes more)

        def _post_note(self, text: str) -> None: ...
    _phase_note: tuple[int | None, str]

    def _person_in_the_loop(self) -> None:
        self.phase_stops = set()
        self.last_phase = (None, None)
        self.approval_specs = list(self.user_config.approve)
        self.ctl.set_approval(self.approval_specs)
        self.ctl.ask_user = True  # user_interact asks the person at the keyboard
        self._apply_stops()

    def _apply_stops(self) -> None:
        self.ctl.stop_before = set(self.phase_stops) | stop_phases(self._breaks)

    @guarded
    def action_step_phase(self) -> None:
        if self._read_only():
            return
        self.running = False
        self._submit(self._phase_step)

    def _phase_step(self) -> None:
        """(engine thread) One phase; a gate before act opens its dialog."""
        if self.ctl.waiting is not None and self.ctl.next_phase == "act":
            self._call_ui(self._open_gate)
            return
        out = self.ctl.step_phase()
        if out is None:
            self._post_note("no active goal: the run is finished (g adds a goal, ctrl+r resets)")
            return
        self.last_phase = (out["phase"], out["result"])
        if out["record"] is not None:
            self._post_note(f"cycle {out['cycle']} recorded")
        elif out["waiting"] is not None:
            self._call_ui(self._open_gate)
        else:
            note = f"cycle {out['cycle']}: {out['phase']} done, {out['next']} next"
            self._phase_note = (out["cycle"], note)  # true only while that cycle is in progress
            self._post_note(note)

    def _stopped_mid_cycle(self) -> None:
        self.running = False
        self.until_change = None
        state = self.ctl.phase_state() or {}
        results = state.get("results") or {}
        if results:
            last = list(results)[-1]
            self.last_phase = (last, results[last])
        if self.ctl.waiting is not None:
            self._call_ui(self._open_gate)
        else:
            self._post_note(f"cycle {state.get('cycle')}: stopped before {self.ctl.next_phase}")

    def _stopped_between_cycles(self, rec: CycleRecord) -> None:
        self.running = False
        self.until_change = None
        self._post_note(f"cycle {rec['cycle']} recorded: stopped before observe")

    def _call_ui(self, fn: Callable[[], None]) -> None:
        if self.sync or threading.current_thread() is threading.main_thread():
            fn()
        else:
            self.call_from_thread(fn)

    def _open_gate(self) -> None:
        w = self.ctl.waiting
        if w is None or isinstance(self.screen, (ApprovalScreen, QuestionScreen)):
            return
        self._dirty = True
        if w["kind"] == "approve":
            self._post_note(f"cycle {w['cycle']}: {w['tool']} waits for your approval before act")
            self.push_screen(ApprovalScreen(w, self._decided))
        else:
            self._post_note(f"cycle {w['cycle']}: the agent asks you a question")
            self.push_screen(QuestionScreen(w, self._answered))

    def _decided(self, decision: str, text: str | None) -> None:
        self.ctl.decide_pending(decision, text)  # a refused edit raises InputError: the dialog shows it
        self._post_note(f"{decision} recorded: p steps on to act, space finishes the cycle")
        self._dirty = True

    def _answered(self, text: str | None) -> None:
        self.ctl.answer_pending(text)
        self._post_note(("answer" if text and text.strip() else "no answer") +
                        " recorded: p steps on to act, space finishes the cycle")
        self._dirty = True

    @guarded
    def action_toggle_approval(self) -> None:
        if self._read_only():
            return
        if self.ctl.approve_rules:
            self.ctl.set_approval([])
            self._post_note("approval before act: off")
        else:
            rules = self.ctl.set_approval(self.approval_specs or list(DEFAULT_RULES))
            self._post_note(f"approval before act: {', '.join(rules)}")
        self._dirty = True

    @guarded
    def on_phase_diagram_stops_changed(self, event: PhaseDiagram.StopsChanged) -> None:
        self.phase_stops = set(event.stops)
        self._apply_stops()
        self._post_note("stop before: " + (", ".join(p for p in PHASES if p in self.phase_stops) or "none"))
        self._dirty = True

    def _phase_record(self) -> PendingCycle | None:
        """A cycle in progress as far as the panes can show it: its decide (the score table
        with the pending choice) and, once run, its act."""
        if not self.live:
            return None
        state = self.ctl.phase_state()
        if state is None or "decide" not in state["results"]:
            return None
        r = state["results"]
        act: PendingAct = {"vetoed": False, "veto": None, "success": True, "bias": 0.0, "bias_patterns": [],
               "output": "(pending: act has not run)", **(r.get("act") or {}),
               "progress": "pending (learn has not run)"}
        return {"cycle": state["cycle"], "decide": r["decide"], "act": act, "pending": True}

    def _render_phases(self) -> None:
        if not self.live or not hasattr(self, "phase_stops"):
            return
        state = self.ctl.phase_state()
        shown = state is not None or bool(self.ctl.stop_before) or self.last_phase[0] is not None
        self.phase_bar.set_class(shown, "-shown")
        if not shown:
            return
        last = self.last_phase
        latest = self.ctl.latest
        if state is None and latest is not None:  # between cycles: what the last one learned
            a = latest["act"]
            last = ("learn", {"progress": a["progress"], "coverage": a["coverage"], "events": []})
        self.phase_bar.show(self.ctl.next_phase, self.phase_stops, state["cycle"] if state else None,
                            last, self.ctl.waiting)

    def _phase_status(self, t: Text) -> None:
        if not self.live:
            return
        if self.ctl.in_cycle:
            state = self.ctl.phase_state() or {}
            t.append(f" · cycle {state.get('cycle')} phase ", style="")
            t.append(f" {self.ctl.next_phase} ", style="bold reverse cyan")
            t.append(" next")
            if self.ctl.waiting is not None:
                t.append(" · WAITING for you", style="bold yellow")
        if self.ctl.approve_rules:
            t.append(" · approve: " + ", ".join(r.spec for r in self.ctl.approve_rules), style="dim")
