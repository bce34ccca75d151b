"""The gate's dialog: a gated agent's turn has stopped after decide (engine/world/gate.py) and
the world waits for the person at the workbench.

It shows the proposal (round, agent, the tool and input), the decider's reason, and the
offered tools best first with their utility and input. `a` approves, `r` rejects (the reason
typed in the box, if any; enter in the box rejects with it), a number or enter on a
highlighted tool chooses it (the proposed one: approve). Escape is "not now": the turn is
dropped, nothing recorded, the world paused (step again to be asked again). `p` pauses or
resumes the run (this answer is still wanted), `q` quits (the turn is dropped, as escape).
A refused answer is shown in the dialog, which stays open.
"""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ...engine import Answer, InputError, Proposal

GATE_CSS = """
GateScreen { align: center middle; }
GateScreen > Vertical { width: 96; max-width: 100%; height: auto; max-height: 100%; border: thick $warning;
                        background: $surface; padding: 0 1; }
GateScreen #gate-offered { height: auto; max-height: 10; }
GateScreen .error { color: $text-error; }
GateScreen #gate-keys { color: $text-muted; }
"""

KEYS = "a approve · r reject · 1–9 or enter: choose that tool · esc not now · p pause · q quit"


class GateScreen(ModalScreen[None]):
    """The proposal and the answers; `answer` hands one to the world (InputError: refused, shown)."""

    BINDINGS = [
        Binding("a", "approve", "Approve", id="world.gate.approve", tooltip="approve: the proposed tool runs"),
        Binding("r", "reject", "Reject", id="world.gate.reject",
                tooltip="reject: a veto by the user (the reason in the box, if any); the step fails"),
        *[Binding(str(i), f"choose({i})", f"Choose {i}", id=f"world.gate.choose{i}", show=False,
                  tooltip=f"choose the offered tool numbered {i}") for i in range(1, 10)],
        Binding("escape", "not_now", "Not now", id="world.gate.not_now",
                tooltip="not now: the turn is dropped (nothing recorded) and the world pauses"),
        Binding("p", "pause", "Pause", id="world.gate.pause", tooltip="pause or resume the run (this answer is still wanted)"),
        Binding("q", "quit_world", "Quit", id="world.gate.quit", tooltip="quit the workbench (the turn is dropped)"),
    ]
    DEFAULT_CSS = GATE_CSS

    def __init__(self, proposal: Proposal, answer: Callable[[Answer], None], not_now: Callable[[], None],
                 pause: Callable[[], str], quit: Callable[[], None]) -> None:
        super().__init__()
        self.proposal = proposal
        self._answer = answer
        self._not_now = not_now
        self._pause = pause
        self._quit = quit

    def compose(self) -> ComposeResult:
        p = self.proposal
        call = f"{p.tool}({p.input})" if p.input else p.tool
        with Vertical():
            title = Text(f"Round {p.round} · {p.agent} proposes ", style="bold")
            title.append(call, style="bold yellow")
            yield Static(title, id="gate-title")
            yield Static(Text(f"why: {p.why}"), id="gate-why")
            yield Static(Text("offered, best first:", style="dim"))
            yield OptionList(*[Option(self._row(n, c), id=str(n)) for n, c in enumerate(p.candidates, start=1)],
                             id="gate-offered")
            yield Input(placeholder="a reason (optional): enter rejects with it", id="gate-why-text")
            yield Static("", id="gate-error", classes="error")
            yield Static(Text(KEYS), id="gate-keys")

    def _row(self, n: int, c: dict) -> Text:
        proposed = c["tool"] == self.proposal.tool
        t = Text(f"{n}{'*' if proposed else ' '} ", style="bold" if proposed else "")
        t.append(f"{c['tool']:<16}", style="bold" if proposed else "")
        t.append(f" {c['utility']:.2f}  ")
        t.append(str(c["input"] or ""), style="dim")
        return t

    def on_mount(self) -> None:
        offered = self.query_one("#gate-offered", OptionList)
        offered.focus()
        index = next((i for i, c in enumerate(self.proposal.candidates) if c["tool"] == self.proposal.tool), 0)
        if offered.option_count:
            offered.highlighted = index

    def _give(self, answer: Answer) -> None:
        try:
            self._answer(answer)
        except InputError as exc:
            self.query_one("#gate-error", Static).update(Text(str(exc)))
            return
        self.dismiss(None)

    def _why(self) -> str:
        return self.query_one("#gate-why-text", Input).value.strip()

    def action_approve(self) -> None:
        self._give(Answer("approve", why=self._why()))

    def action_reject(self) -> None:
        self._give(Answer("reject", why=self._why()))

    def action_choose(self, n: int) -> None:
        cands = self.proposal.candidates
        if not 1 <= n <= len(cands):
            self.query_one("#gate-error", Static).update(Text(f"choose 1 to {len(cands)}"))
            return
        tool = cands[n - 1]["tool"]
        if tool == self.proposal.tool:
            self.action_approve()
        else:
            self._give(Answer("choose", tool=tool, why=self._why()))

    @on(OptionList.OptionSelected, "#gate-offered")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.action_choose(int(event.option.id or 0))

    @on(Input.Submitted, "#gate-why-text")
    def _submitted(self, event: Input.Submitted) -> None:
        self.action_reject()

    def action_not_now(self) -> None:
        self._not_now()
        self.dismiss(None)

    def action_pause(self) -> None:
        self.query_one("#gate-error", Static).update(Text(self._pause(), style="dim"))

    def action_quit_world(self) -> None:
        self._quit()
