"""The psyche editor (SPEC §9): edit the live psyche's TOML, see what is wrong as you type,
apply it to the next cycle, save it keeping comments, or close and keep the draft.

The screen never touches the engine: it hands a validated ``Psyche`` to the ``apply``
callback the app gives it, and the controller decides when it takes effect.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, ClassVar

from rich.segment import Segment
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.strip import Strip
from textual.timer import Timer
from textual.widgets import Footer, Static, TextArea
from textual.widgets.text_area import LanguageDoesNotExist

from ..engine import InputError, Psyche, PsycheFileChanged

VALID_HINT = "valid — {key} applies at the next cycle"


def describe_error(err: InputError) -> str:
    """``line 14, field shadow.veto_patterns[1].severity: must be ...`` (no file: the
    editor's text is not the file until it is saved)."""
    where = []
    if err.line is not None:
        where.append(f"line {err.line}")
    if err.field:
        where.append(f"field {err.field}")
    return f"{', '.join(where)}: {err.message}" if where else err.message


class PsycheTextArea(TextArea):
    """A TOML TextArea whose line-number gutter marks the line the last error names.

    Marking the gutter rather than selecting the line: a selection under the cursor would
    be replaced by the user's next keystroke.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = TextArea.COMPONENT_CLASSES | {
        "psyche-editor--error-gutter"
    }
    DEFAULT_CSS = """
    PsycheTextArea > .psyche-editor--error-gutter {
        background: $error;
        color: $text;
        text-style: bold;
    }
    """

    error_line: int | None = None
    """0-based document line to mark, or None."""

    def set_error_line(self, line: int | None) -> None:
        if line != self.error_line:
            self.error_line = line
            self.refresh()

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        # soft_wrap is off in this editor, so a screen row is exactly one document line.
        if (
            self.error_line is None
            or self.soft_wrap
            or not self.show_line_numbers
            or self.scroll_offset.y + y != self.error_line
        ):
            return strip
        width = self.gutter_width
        style = self.get_component_rich_style("psyche-editor--error-gutter")
        gutter = strip.crop(0, width)
        marked = Strip(Segment.apply_style(list(gutter), post_style=style), gutter.cell_length)
        return Strip.join([marked, strip.crop(width, strip.cell_length)])


def _make_text_area(text: str) -> PsycheTextArea:
    def make(language: str | None) -> PsycheTextArea:
        return PsycheTextArea(text, language=language, theme="css", soft_wrap=False, show_line_numbers=True,
                              tab_behavior="indent", id="psyche-text")

    try:
        return make("toml")
    except LanguageDoesNotExist:
        # tree-sitter without the TOML grammar: plain text still edits and validates.
        return make(None)


class PsycheEditorScreen(Screen[str | None]):
    """Full-screen TOML editor for the psyche.

    Dismisses with the draft text when closed with unapplied changes (else None); the same
    text stays readable as ``draft`` so the app can reopen the editor with it.
    """

    # Priority bindings: TextArea binds ctrl+w (delete word left) and eats escape when tab
    # indents, and the editor always has focus here.
    BINDINGS = [
        Binding("ctrl+s", "apply", "Apply", id="psyche.apply", priority=True),
        Binding("ctrl+w", "save", "Save", id="psyche.save", priority=True),
        Binding("ctrl+r", "revert", "Revert", id="psyche.revert", priority=True),
        Binding("f8", "goto_error", "Go to error", id="psyche.goto_error", priority=True),
        Binding("escape", "close", "Close", id="psyche.close", priority=True),
        # TextArea has no document start and end keys; an editor of a 60-line file needs them
        # (a new veto pattern is written at the end)
        Binding("ctrl+home", "text_edge(True)", "Start of text", id="psyche.start", show=False),
        Binding("ctrl+end", "text_edge(False)", "End of text", id="psyche.end", show=False),
    ]

    DEFAULT_CSS = """
    PsycheEditorScreen { layout: vertical; }
    PsycheEditorScreen #psyche-title { height: 1; padding: 0 1; background: $panel; color: $text; }
    PsycheEditorScreen #psyche-text { height: 1fr; }
    PsycheEditorScreen #psyche-status { height: auto; min-height: 1; padding: 0 1; }
    PsycheEditorScreen #psyche-status.-valid { color: $text-success; }
    PsycheEditorScreen #psyche-status.-invalid { color: $text-error; }
    """

    VALIDATE_DELAY = 0.3
    """Seconds of quiet typing before the text is checked (a check takes a few ms)."""

    def __init__(
        self,
        text: str,
        path: Path | None,
        apply: Callable[[Psyche], None],
        *,
        live_text: str | None = None,
        save: Callable[..., Path] | None = None,
        name: str | None = None,
        id: str | None = None,
        owner: str | None = None,
    ) -> None:
        """
        Args:
            text: the TOML to edit: the live psyche's, or a draft kept from last time.
            path: where ctrl+w saves; None disables saving (the message says why).
            apply: called on the UI thread with a validated psyche; it should queue it
                for the next cycle. Whatever it raises is shown, never propagated.
            live_text: the live psyche's TOML when ``text`` is a draft; ctrl+r reverts to
                it and a draft only counts as unapplied if it differs. Defaults to ``text``.
            save: writes the psyche to ``path`` (the run's door: creates folders, and refuses
                with PsycheFileChanged when the file changed on disk since the run read or
                wrote it unless called with ``force=True``). Defaults to ``Psyche.save``.
            owner: whose psyche it is, where several agents have one (a world's): the title
                names it, and the edit applies at its next turn rather than "the next cycle".
        """
        super().__init__(name=name, id=id)
        self.path = Path(path) if path is not None else None
        self._apply = apply
        self.live_text: str = text if live_text is None else live_text
        """What ctrl+r reverts to: the live psyche's text as this screen knows it (updated
        by each successful apply)."""
        self.draft: str = text
        """The editor's current text, kept after the screen closes."""
        self.error: InputError | None = None
        """The problem with the text as last checked, or None when it was valid."""
        self._timer: Timer | None = None
        self._text_area = _make_text_area(text)
        self._save = save
        self._overwrite_asked = False  # the file changed on disk: the next ctrl+w overwrites it
        self.owner = owner
        self.applies_at = f"{owner}'s next turn" if owner else "the next cycle"

    # -- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="psyche-title", markup=False)
        yield self._text_area
        yield Static("", id="psyche-status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self._text_area.focus()
        self.validate()

    @property
    def has_unapplied_changes(self) -> bool:
        return self.draft != self.live_text

    def _title_text(self) -> Text:
        where = str(self.path) if self.path is not None else "no file: save disabled"
        title = f"Psyche of {self.owner} — {where}" if self.owner else f"Psyche — {where}"
        if self.has_unapplied_changes:
            title += "  (modified, not applied)"
        return Text(title)

    def _key_for(self, binding_id: str, default: str) -> str:
        # The hint names the key the user actually has, keymap included.
        try:
            for key, active in self.active_bindings.items():
                if active.binding.id == binding_id:
                    return key
        except Exception:
            pass
        return default

    # -- validation --------------------------------------------------------------------

    @on(TextArea.Changed, "#psyche-text")
    def _text_changed(self, event: TextArea.Changed) -> None:
        self.draft = event.text_area.text
        self.query_one("#psyche-title", Static).update(self._title_text())
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(self.VALIDATE_DELAY, self.validate)

    def validate(self) -> Psyche | None:
        """Check the editor's text now; update the status line and error mark.

        Returns the psyche it describes, or None (``self.error`` says why).
        """
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.draft = self._text_area.text
        psyche: Psyche | None = None
        try:
            psyche = Psyche.from_toml(
                self.draft, file=str(self.path) if self.path is not None else None
            )
            self.error = None
        except InputError as err:
            self.error = err
        except Exception as exc:  # a validator bug must not take the workbench down
            self.error = InputError(f"could not check the psyche: {exc!r}")
        self._show_status()
        return psyche

    def _show_status(self) -> None:
        try:
            status = self.query_one("#psyche-status", Static)
        except NoMatches:  # not composed yet; on_mount checks again
            return
        if self.error is None:
            hint = VALID_HINT.format(key=self._key_for("psyche.apply", "ctrl+s"))
            status.update(Text(hint.replace("the next cycle", self.applies_at)))
            status.set_class(True, "-valid")
            status.set_class(False, "-invalid")
            self._text_area.set_error_line(None)
        else:
            key = self._key_for("psyche.goto_error", "f8")
            hint = f"   ({key}: go to line)" if self.error.line is not None else ""
            status.update(Text(describe_error(self.error) + hint))
            status.set_class(False, "-valid")
            status.set_class(True, "-invalid")
            line = self.error.line
            if line is not None:
                line = min(max(line - 1, 0), self._text_area.document.line_count - 1)
            self._text_area.set_error_line(line)

    # -- actions -----------------------------------------------------------------------

    def _say(self, message: str, severity: str = "information") -> None:
        self.notify(message, severity=severity, markup=False)  # type: ignore[arg-type]

    def action_apply(self) -> None:
        psyche = self.validate()
        if psyche is None:
            assert self.error is not None
            self._say(f"Psyche not applied (your text is kept): {describe_error(self.error)}",
                      "error")
            return
        text = self.draft
        try:
            self._apply(psyche)
        except Exception as exc:
            self._say(f"Psyche not applied (your text is kept): {_explain(exc)}", "error")
            return
        self.live_text = text
        self.query_one("#psyche-title", Static).update(self._title_text())
        self._say(f"Psyche applied: takes effect at {self.applies_at}")

    def action_save(self) -> None:
        if self.path is None:
            self._say(
                "Save is disabled: the workbench was started without a psyche file. "
                "Your text is kept; ctrl+s still applies it to this session.",
                "warning",
            )
            return
        psyche = self.validate()
        if psyche is None:
            assert self.error is not None
            self._say(f"Not saved (file unchanged, your text is kept): "
                      f"{describe_error(self.error)}", "error")
            return
        try:
            # Writes into the user's own text, so comments and layout survive; atomic.
            if self._save is not None:
                self._save(psyche, self.path, force=self._overwrite_asked)
            else:
                psyche.save(self.path)
        except InputError as err:
            if isinstance(err, PsycheFileChanged):
                self._overwrite_asked = True
                key = self._key_for("psyche.save", "ctrl+w")
                self._say(f"Not saved: {self.path} changed on disk since it was loaded. "
                          f"Press {key} again to overwrite it; your text is kept.", "warning")
                return
            self._say(f"Not saved (file unchanged, your text is kept): {err}", "error")
            return
        except OSError as exc:
            self._say(f"Not saved (file unchanged, your text is kept): {self.path}: "
                      f"{exc.strerror or exc}", "error")
            return
        except Exception as exc:
            self._say(f"Not saved (your text is kept): {_explain(exc)}", "error")
            return
        self._overwrite_asked = False
        note = "" if not self.has_unapplied_changes else " (not applied yet: ctrl+s applies)"
        self._say(f"Psyche saved to {self.path}{note}")

    def action_revert(self) -> None:
        ta = self._text_area
        if ta.text == self.live_text:
            self._say("Nothing to revert: the editor shows the live psyche.")
            return
        # replace() rather than load_text(): ctrl+z can bring the discarded edits back.
        ta.replace(self.live_text, (0, 0), ta.document.end)
        ta.move_cursor((0, 0))
        self.validate()
        self._say("Reverted to the live psyche (ctrl+z undoes the revert).")

    def action_text_edge(self, start: bool) -> None:
        ta = self._text_area
        ta.move_cursor((0, 0) if start else ta.document.end)

    def action_goto_error(self) -> None:
        if self.error is None or self.error.line is None:
            return
        row = min(max(self.error.line - 1, 0), self._text_area.document.line_count - 1)
        self._text_area.move_cursor((row, 0), center=True)
        self._text_area.focus()

    def action_close(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.draft = self._text_area.text
        if self.has_unapplied_changes:
            self._say("Psyche editor closed: your draft is kept, not applied. "
                      "Reopen the editor to continue.")
            self.dismiss(self.draft)
        else:
            self.dismiss(None)


def _explain(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__
