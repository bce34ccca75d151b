"""Before the workbench opens a scenario whose own Python plugins come from a folder the user
has not trusted: a dialog names the folder, its files and the references that need them, and
asks. Nothing of theirs is imported before the answer (engine/tools/trust.py); the run is opened
only after it, so the workbench itself is never half-built around a refused plugin.

A served tab never asks (whoever holds the browser page is not the user who owns the files):
its scenario opens without them, and the workbench says so.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from ..engine import Locations, plugin_needs, scenario_decider, served_process, trust

TRUST, ONCE, WITHOUT = "trust", "once", "without"


class TrustScreen(ModalScreen["str | None"]):
    """The folders, their files, and four answers: trust and remember, allow once, open
    without them, quit (escape)."""

    BINDINGS = [Binding("escape", "quit_prompt", "Quit", id="trust.quit")]
    DEFAULT_CSS = """
    TrustScreen { align: center middle; }
    TrustScreen > Vertical { width: 100; max-width: 100%; height: auto; max-height: 90%; border: thick $warning;
                             background: $surface; padding: 1 2; }
    TrustScreen VerticalScroll { height: auto; max-height: 16; }
    TrustScreen Horizontal { height: auto; margin-top: 1; }
    TrustScreen Button { margin-right: 1; }
    """

    def __init__(self, needs: list[trust.PluginNeed], reloading: bool = False) -> None:
        super().__init__()
        self.needs = needs
        self.reloading = reloading  # asked by f5 (a plugin's new code), not before opening the run

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text("A plugin's new code, from a folder not trusted as it is now" if self.reloading
                             else "This scenario runs Python code from a folder you have not trusted", style="bold"))
            body = Text()
            for n in self.needs:
                body.append(f"\n{n.folder}\n", style="bold")
                body.append(f"  needed by: {', '.join(n.refs)}\n")
                body.append(f"  files: {', '.join(n.files) or 'none'}\n")
                if n.why:  # the reason alone (not trusted, or what changed): the buttons are how to agree
                    body.append(f"  {n.why.removeprefix('not imported: ').removesuffix('; ' + trust.HOW)}\n", style="dim")
            body.append(("\nReloading imports their new code" if self.reloading else "\nOpening it imports these files")
                        + ": they run as you, with your files and network. Nothing has been imported yet.")
            with VerticalScroll():
                yield Static(body, id="trust-folders")
            with Horizontal():
                yield Button("Trust and remember", id=TRUST, variant="warning")
                yield Button("Allow once", id=ONCE)
                yield Button("Reload without them" if self.reloading else "Open without them", id=WITHOUT,
                             variant="primary")
                yield Button("Quit", id="quit")

    def on_mount(self) -> None:
        self.query_one(f"#{WITHOUT}", Button).focus()  # enter never runs code by accident

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id if event.button.id in (TRUST, ONCE, WITHOUT) else None)

    def action_quit_prompt(self) -> None:
        self.dismiss(None)


class TrustPrompt(App["str | None"]):
    """The dialog on its own, before the workbench: its return value is the answer."""

    TITLE = "akh-tui"

    def __init__(self, needs: list[trust.PluginNeed]) -> None:
        super().__init__()
        self.needs = needs

    def on_mount(self) -> None:
        self.push_screen(TrustScreen(self.needs), callback=self.exit)


def untrusted(locations: Locations, scenario: str | None, decider: str | None, resume: bool) -> list[trust.PluginNeed]:
    """The folders that would need the user's agreement (none in a served tab: it never asks)."""
    if served_process():
        return []
    return [n for n in plugin_needs(locations, scenario, decider, resume) if not n.trusted]


def apply(answer: str | None, needs: list[trust.PluginNeed], locations: Locations,
          decider: str | None) -> tuple[bool, str | None]:
    """Act on the answer: (open the workbench?, the decider to open it with). `decider`: the one
    the run would use (given, else the scenario's). Trust: the folders are remembered as they
    are now; once: agreed for this process as they were shown; without: nothing of theirs is
    imported, and a decider from one of them is replaced by the utility table."""
    if answer is None:
        return False, decider
    if answer == TRUST:
        lst = trust.TrustList(locations.trust_file)
        for n in needs:
            lst.add(n.folder)  # a damaged list raises InputError: reported, never overwritten
        return True, decider
    if answer == ONCE:
        trust.allow_once(needs, locations.trust_file)
        return True, decider
    refs = {r for n in needs for r in n.refs}
    return True, "utility" if decider in refs else decider


def ask(locations: Locations, scenario: str | None, decider: str | None, resume: bool) -> tuple[bool, str | None]:
    """Before the workbench opens: ask when the scenario needs code from a folder not agreed.
    (open?, the decider to open with)."""
    needs = untrusted(locations, scenario, decider, resume)
    if not needs:
        return True, decider
    answer = TrustPrompt(needs).run()
    return apply(answer, needs, locations, decider or (None if resume else scenario_decider(scenario)))
