"""The psyche editor screen, driven through Pilot like a user would: edit, see the line and
field of a mistake, apply, save keeping comments, close keeping the draft."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events
from textual.app import App
from textual.widgets import Static
from textual.widgets.text_area import Selection

from akh_tui.engine.psyche.model import Psyche
from akh_tui.tui.psyche_editor import PsycheEditorScreen, PsycheTextArea

ORIGINAL = Psyche.default().to_toml()


class Host(App):
    """Pushes the editor; records what apply() got, notifications, and the dismiss result."""

    def __init__(self, path: Path | None, text: str = ORIGINAL, fail_apply: bool = False,
                 keymap: dict[str, str] | None = None):
        super().__init__()
        self.keymap = keymap or {}
        self.text, self.path, self.fail_apply = text, path, fail_apply
        self.applied: list[Psyche] = []
        self.notes: list[tuple[str, str]] = []
        self.closed: list[str | None] = []
        self.editor: PsycheEditorScreen | None = None

    def apply(self, psyche: Psyche) -> None:
        if self.fail_apply:
            raise RuntimeError("controller is gone")
        self.applied.append(psyche)

    def notify(self, message, *, title="", severity="information", timeout=None, markup=True):
        assert markup is False, "user-visible text must not be parsed as markup"
        self.notes.append((severity, message))
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def on_mount(self) -> None:
        self.set_keymap(self.keymap)
        self.editor = PsycheEditorScreen(self.text, self.path, self.apply)
        self.push_screen(self.editor, callback=self.closed.append)


def run(coro_fn, path: Path | None, **kw) -> Host:
    app = Host(path, **kw)

    async def main() -> None:
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause()
            await coro_fn(app, pilot)

    asyncio.run(main())
    return app


def locate(text: str, needle: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """(row, col) start and end of the first occurrence of a one-line ``needle``."""
    for row, line in enumerate(text.splitlines()):
        col = line.find(needle)
        if col >= 0:
            return (row, col), (row, col + len(needle))
    raise AssertionError(f"{needle!r} not in text")


async def retype(app: Host, pilot, old: str, new: str) -> None:
    """Turn one-line ``old`` into ``new`` like a user: select the part that differs and
    type over it key by key (only that part: each simulated key costs Pilot ~0.1 s)."""
    ta = app.editor.query_one(PsycheTextArea)
    (row, col), _ = locate(ta.text, old)
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    ta.selection = Selection((row, col + head), (row, col + len(old) - tail))
    typed = new[head:len(new) - tail]
    await pilot.press(*(["enter" if ch == "\n" else ch for ch in typed] or ["delete"]))
    assert new in ta.text


async def paste(app: Host, pilot, before: str, text: str) -> None:
    """Paste ``text`` (a terminal paste event) just before the first ``before``."""
    ta = app.editor.query_one(PsycheTextArea)
    start, _ = locate(ta.text, before)
    ta.selection = Selection.cursor(start)
    app.post_message(events.Paste(text))  # as the driver delivers it
    await pilot.pause()


def status_of(app: Host) -> str:
    return str(app.editor.query_one("#psyche-status", Static).render())


async def wait_status(app: Host, pilot, contains: str) -> str:
    """Let the debounced check run (bounded wait; returns as soon as it has)."""
    for _ in range(60):
        await pilot.pause(0.05)
        if contains in status_of(app):
            break
    return status_of(app)


def test_starts_valid(tmp_path):
    async def go(app, pilot):
        assert app.screen is app.editor
        assert "valid — ctrl+s applies at the next cycle" in status_of(app)
        assert app.editor.query_one("#psyche-status").has_class("-valid")

    run(go, tmp_path / "psyche.toml")


def test_invalid_edit_names_line_and_field_and_is_not_applied(tmp_path):
    line = locate(ORIGINAL, "severity = 1.0")[0][0] + 1

    async def go(app, pilot):
        await retype(app, pilot, "severity = 1.0", "severity = 7")
        status = await wait_status(app, pilot, "field")
        assert f"line {line}, field shadow.veto_patterns[0].severity:" in status
        assert "got 7" in status
        assert app.editor.query_one("#psyche-status").has_class("-invalid")
        assert app.editor.query_one(PsycheTextArea).error_line == line - 1

        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.applied == []
        assert app.notes[-1][0] == "error"
        assert "shadow.veto_patterns[0].severity" in app.notes[-1][1]
        ta = app.editor.query_one(PsycheTextArea)
        assert "severity = 7\n" in ta.text and "severity = 1.0" not in ta.text
        assert app.screen is app.editor

        await pilot.press("f8")  # go to error
        assert ta.cursor_location == (line - 1, 0)

    run(go, tmp_path / "psyche.toml")


def test_valid_edit_applies_and_stays_open(tmp_path):
    async def go(app, pilot):
        await retype(app, pilot, "sage = 0.7", "sage = 0.9")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert len(app.applied) == 1
        assert app.applied[0].archetypes["sage"] == 0.9
        assert app.notes[-1] == ("information", "Psyche applied: takes effect at the next cycle")
        assert app.screen is app.editor
        assert not app.editor.has_unapplied_changes

    run(go, tmp_path / "psyche.toml")


def test_added_veto_pattern_is_applied(tmp_path):
    block = '[[shadow.veto_patterns]]\nname = "no_http"\ntriggers = ["http_fetch"]\n\n'

    async def go(app, pilot):
        await paste(app, pilot, "# A bias lets", block)
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert len(app.applied) == 1
        vetoes = app.applied[0].shadow.veto_patterns
        assert [p.name for p in vetoes] == ["destructive_action", "no_http"]
        hit = app.applied[0].shadow.check_veto("tool=http_fetch input=x", (), "safe")
        assert hit is not None and hit.name == "no_http"

    run(go, tmp_path / "psyche.toml")


def test_save_keeps_comments_and_writes_new_value(tmp_path):
    path = tmp_path / "psyche.toml"
    path.write_text(ORIGINAL, encoding="utf-8")

    async def go(app, pilot):
        await retype(app, pilot, "sage = 0.7", "sage = 0.9")
        await pilot.press("ctrl+w")
        await pilot.pause()
        assert app.notes[-1][0] == "information"
        assert str(path) in app.notes[-1][1]
        # TextArea's own ctrl+w (delete word left) must not have run.
        assert "sage = 0.9" in app.editor.query_one(PsycheTextArea).text
        assert app.applied == []  # saving is not applying

    run(go, path)
    saved = path.read_text(encoding="utf-8")
    assert "sage = 0.9       # kg_query, infer_rules, reason, synthesize_triple" in saved
    assert saved.startswith("# The agent's psyche (SPEC §9, seed 004)")
    assert "# A veto stops the tool before it runs" in saved
    assert Psyche.load(path).archetypes["sage"] == 0.9


def test_save_refuses_invalid_text_and_keeps_file(tmp_path):
    path = tmp_path / "psyche.toml"
    path.write_text(ORIGINAL, encoding="utf-8")

    async def go(app, pilot):
        await retype(app, pilot, "sage = 0.7", "sage = 3")
        await pilot.press("ctrl+w")
        await pilot.pause()
        assert app.notes[-1][0] == "error"
        assert "archetypes.sage" in app.notes[-1][1]
        assert "sage = 3" in app.editor.query_one(PsycheTextArea).text

    run(go, path)
    assert path.read_text(encoding="utf-8") == ORIGINAL


def test_save_without_path_is_disabled_with_a_message(tmp_path):
    async def go(app, pilot):
        await pilot.press("ctrl+w")
        await pilot.pause()
        assert app.notes[-1][0] == "warning"
        assert "Save is disabled" in app.notes[-1][1]

    run(go, None)
    assert list(tmp_path.iterdir()) == []


def test_escape_closes_and_keeps_the_draft(tmp_path):
    async def go(app, pilot):
        await retype(app, pilot, "sage = 0.7", "sage = 0.8")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is not app.editor

    app = run(go, tmp_path / "psyche.toml")
    assert "sage = 0.8" in app.editor.draft
    assert app.closed == [app.editor.draft]
    assert app.applied == []


def test_escape_without_changes_leaves_no_draft(tmp_path):
    async def go(app, pilot):
        await pilot.press("escape")
        await pilot.pause()

    app = run(go, tmp_path / "psyche.toml")
    assert app.closed == [None]
    assert app.editor.draft == ORIGINAL


def test_toml_syntax_error_reports_its_line(tmp_path):
    async def go(app, pilot):
        await retype(app, pilot, '"thorough"]', '"thorough"')
        status = await wait_status(app, pilot, "invalid TOML")
        broken = locate(ORIGINAL, '"thorough"]')[0][0] + 1
        # tomllib notices an unclosed array on the line after it opens.
        assert f"line {broken + 1}:" in status
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.applied == []
        assert app.notes[-1][0] == "error"

    run(go, tmp_path / "psyche.toml")


def test_revert_restores_the_original_text(tmp_path):
    async def go(app, pilot):
        await retype(app, pilot, "sage = 0.7", "sage = 0.2")
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert app.editor.query_one(PsycheTextArea).text == ORIGINAL
        assert not app.editor.has_unapplied_changes

    run(go, tmp_path / "psyche.toml")


def test_apply_that_raises_is_shown_not_crashed(tmp_path):
    async def go(app, pilot):
        await retype(app, pilot, "sage = 0.7", "sage = 0.9")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.notes[-1][0] == "error"
        assert "controller is gone" in app.notes[-1][1]
        assert app.screen is app.editor
        assert app.editor.has_unapplied_changes

    run(go, tmp_path / "psyche.toml", fail_apply=True)


def test_reopened_draft_still_shows_its_error(tmp_path):
    draft = ORIGINAL.replace("severity = 1.0", "severity = 7")

    async def go(app, pilot):
        assert "shadow.veto_patterns[0].severity" in status_of(app)

    run(go, tmp_path / "psyche.toml", text=draft)


def test_bindings_can_be_remapped_by_id(tmp_path):
    async def go(app, pilot):
        assert "valid — f5 applies at the next cycle" in status_of(app)
        await retype(app, pilot, "sage = 0.7", "sage = 0.9")
        await pilot.press("ctrl+s")  # no longer bound: nothing applied
        await pilot.pause()
        assert app.applied == []
        await pilot.press("f5")
        await pilot.pause()
        assert [p.archetypes["sage"] for p in app.applied] == [0.9]

    run(go, tmp_path / "psyche.toml", keymap={"psyche.apply": "f5"})


def test_ctrl_end_and_ctrl_home_reach_the_ends_of_the_text(tmp_path):
    # a new veto pattern is written at the end of the file: TextArea has no key for it
    async def go(app, pilot):
        ta = app.editor.query_one(PsycheTextArea)
        await pilot.press("ctrl+end")
        assert ta.cursor_location == ta.document.end
        await pilot.press("ctrl+home")
        assert ta.cursor_location == (0, 0)

    run(go, tmp_path / "psyche.toml")
