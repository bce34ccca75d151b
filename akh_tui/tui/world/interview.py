"""The interview, in the world workbench (`i`): ask the shown agent, in words, why it did what
it did at the step shown (its newest step at or before it). The record and its explainer
answer; with ctrl+o its model too, on a copy of its state then (a model agent). Each question
and answer is kept on the step's interview branch (engine/world/interview.py); the history is
every interview of that step on this branch, oldest first. The answers are the engine's; this
screen only asks and shows them. An error (a utility agent asked for its model, a world file
changed since the step was recorded) is shown in the history, never raised."""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ...engine import InputError, interview_lines
from .dialogs import DIALOG_CSS

Ask = Callable[[str, bool], dict[str, Any]]
History = Callable[[], list[dict[str, Any]]]


def _answer_text(answer: dict[str, Any]) -> Text:
    """One interview: the question (bold), the answer, where it is kept (dim)."""
    lines = interview_lines(answer)
    out = Text()
    out.append("you: " + answer["question"] + ("   (its model too)" if answer.get("source") == "model" else ""),
               style="bold")
    for line in lines[1:]:
        out.append("\n")
        kept = line.startswith("(kept as interview")
        out.append(line, style="dim" if kept else ("italic" if line.startswith("  scripted:") else ""))
    return out


class InterviewScreen(ModalScreen[None]):
    """Ask the agent of one step; enter asks, ctrl+o switches its model on and off."""

    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="world.interview.close"),
                Binding("ctrl+o", "toggle_model", "Its model", id="world.interview.model",
                        tooltip="ask the agent's model too, on a copy of its state then (a model agent)")]
    DEFAULT_CSS = DIALOG_CSS.format(name="InterviewScreen") + """
InterviewScreen > Vertical { width: 110; height: 90%; }
InterviewScreen #interview-history { height: 1fr; }
InterviewScreen .interview-answer { padding: 0 0 1 0; }
"""

    def __init__(self, agent: str, where: str, ask: Ask, history: History, sync: bool = False) -> None:
        super().__init__()
        self.agent = agent
        self.where = where
        self._ask = ask
        self._history = history
        self.sync = sync
        self.model = False
        self.asking = False
        self.answers: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title(), id="interview-title")
            yield VerticalScroll(id="interview-history")
            yield Input(placeholder=f"ask {self.agent} about this step: why? why not bid? what did you see? who moved you?",
                        id="interview-question")
            yield Static(Text("enter: ask   ctrl+o: its model too   esc: close", style="dim"), id="interview-help")

    def _title(self) -> Text:
        t = Text(f"Interview {self.agent} at {self.where}", style="bold")
        t.append(f"   model: {'on' if self.model else 'off'}", style="bold green" if self.model else "dim")
        return t

    def on_mount(self) -> None:
        try:
            self.answers = list(self._history())
        except InputError as exc:
            self._show(Text(str(exc), style="red"))
        else:
            self._show()
        self.query_one(Input).focus()

    def _show(self, extra: Text | None = None) -> None:
        """The history, one block per interview; the newest's question at the top of the view
        (a long answer is read from its start, the older ones above it)."""
        parts = [_answer_text(a) for a in self.answers]
        if extra is not None:
            parts.append(extra)
        if not parts:
            parts = [Text(f"no interview of {self.agent} at this step yet: ask below", style="dim")]
        history = self.query_one("#interview-history", VerticalScroll)
        history.remove_children()
        blocks = [Static(p, classes="interview-answer") for p in parts]
        history.mount_all(blocks)
        self.call_after_refresh(history.scroll_to_widget, blocks[-1], top=True, animate=False)

    def history_text(self) -> str:
        """The history as the screen shows it (plain text, blocks apart by a blank line)."""
        return "\n\n".join(str(w.render()) for w in self.query(".interview-answer"))

    def action_toggle_model(self) -> None:
        self.model = not self.model
        self.query_one("#interview-title", Static).update(self._title())

    @on(Input.Submitted, "#interview-question")
    def _submitted(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question or self.asking:
            return
        event.input.value = ""
        self.asking = True
        self._show(Text(f"you: {question}\n{self.agent} is thinking…", style="dim"))
        if self.sync:
            self._answered(*self._answer(question, self.model))
        else:
            self._ask_in_thread(question, self.model)

    def _answer(self, question: str, model: bool) -> tuple[str, dict[str, Any] | None, str | None]:
        try:
            return question, self._ask(question, model), None
        except InputError as exc:
            return question, None, str(exc)

    @work(thread=True, exclusive=True)
    def _ask_in_thread(self, question: str, model: bool) -> None:
        # a model may take seconds to answer: the screen stays live meanwhile
        got = self._answer(question, model)
        self.app.call_from_thread(self._answered, *got)

    def _answered(self, question: str, answer: dict[str, Any] | None, error: str | None) -> None:
        self.asking = False
        if answer is not None:
            self.answers.append(answer)
            self._show()
        else:
            self._show(Text(f"you: {question}\n", style="bold") + Text(str(error), style="red"))


def interview_screen(world: Any, agent: str, cursor: int | None, sync: bool = False) -> InterviewScreen | str:
    """The interview of `agent` at its newest step at or before lane step `cursor` (None: the
    newest) of the open world (a WorldWatch), or what to say when it has taken none."""
    from ...engine import interview, interviews_of

    steps = world.steps[: cursor + 1] if cursor is not None else world.steps
    shown = next((s for s in reversed(steps) if s.agent == agent), None)
    if shown is None:
        return f"{agent} has taken no step yet" + (" at or before the step shown" if cursor is not None else "")
    run = world.run

    def ask(question: str, model: bool) -> dict[str, Any]:
        with world.lock:  # the engine thread waits: the answer reads the branch and rewinds a copy
            return interview(run, shown.step, question, model=model)

    def history() -> list[dict[str, Any]]:
        with world.lock:
            return list(interviews_of(run, shown.step, agent))

    where = f"{shown.round}:{agent} (step {shown.index + 1}, {shown.tool or 'refused'})"
    return InterviewScreen(agent, where, ask, history, sync=sync)
