"""f5 in the workbench (issue 28 §2): the scenario's files read again, in force from the next
cycle; a broken file is shown with its file, line and field, and nothing changes."""

from __future__ import annotations

from textual.widgets import Static

from akh_tui.tui.dialogs import ErrorScreen
from tests.engine.runs.test_reload import SWIM, scenario  # noqa: F401 (the fixture)
from tests.helpers import drive, text_of


def test_f5_reloads_the_rules_and_a_broken_file_is_shown_not_applied(workbench, scenario):  # noqa: F811
    rules_file = scenario.parent.parent / "rules" / "biology.toml"
    original = rules_file.read_text(encoding="utf-8")

    def names(app) -> list[str]:
        return [r["rule"] for r in app.ctl.rules()["rules"]]

    async def script(app, pilot):
        await pilot.press("space")
        rules_file.write_text(original + '\n[[rule]]\nname = "half"\nif = [["?x"]]\n', encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        shown = " ".join(text_of(w) for w in app.screen.query(Static))
        assert "Reload refused" in shown and "biology.toml:14" in shown and "rule[1].if[0]" in shown
        await pilot.press("escape")
        rules_file.write_text(original + SWIM, encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen)
        assert app.last_event == "rules reloaded from biology.toml: in force from cycle 2"
        assert "sea-swimmer" not in names(app)
        await pilot.press("space")
        assert "sea-swimmer" in names(app)

    drive(workbench(str(scenario)), script)


def test_a_changed_file_is_named_once_and_f5_offered(workbench, scenario):  # noqa: F811
    import os

    rules_file = scenario.parent.parent / "rules" / "biology.toml"

    def said(app) -> list[str]:
        return [str(n.message) for n in app._notifications if "changed on disk" in str(n.message)]

    async def script(app, pilot):
        app._watch_files()
        await pilot.pause()
        assert said(app) == []  # nothing changed since the workbench opened
        later = rules_file.stat().st_mtime_ns + 5_000_000_000
        os.utime(rules_file, ns=(later, later))
        app._watch_files()
        app._watch_files()  # said once per change
        await pilot.pause()
        assert said(app) == ["biology.toml changed on disk: f5 reloads (in force from the next cycle)"]

    drive(workbench(str(scenario)), script)


def test_f5_takes_the_scenarios_goals(workbench, scenario):  # noqa: F811
    text = scenario.read_text(encoding="utf-8")

    async def script(app, pilot):
        await pilot.press("space")
        scenario.write_text(text + '\n[[goals]]\ndescription = "Find penguins"\npriority = 300\n', encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen)
        shown = " ".join(text_of(w) for w in app.screen.query(Static))
        assert "zoo.toml:" in shown and "goals[3].priority" in shown and "goals" in shown
        await pilot.press("escape")
        scenario.write_text(text.replace('[[goals]]\ndescription = "Find mammals"\n', "") +
                            '\n[[goals]]\ndescription = "Find penguins"\npriority = 250\n', encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        said = [str(n.message) for n in app._notifications]
        assert ("goals reloaded from zoo.toml: goal #1 abandoned: no longer in zoo.toml; goal #4 added: in force "
                "from cycle 2") in said
        await pilot.press("space")
        assert app.ctl.latest["goal"]["id"] == 4

    drive(workbench(str(scenario)), script)


def test_f5_asks_before_a_plugins_new_code_from_a_changed_folder(workbench, tmp_path):
    import sys

    from akh_tui.engine import trust
    from akh_tui.engine.tools import hotload, registry
    from akh_tui.tui.trust_prompt import TrustScreen
    from tests.engine.tools.test_plugins import harbour

    registry.refresh()
    hotload.forget()
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    trust_file = tmp_path / "cfg" / "trusted-folders.json"
    trust.TrustList(trust_file).add(sc.parent)

    def base(app) -> float:
        return next(c for c in app.ctl.latest["decide"]["candidates"] if c["tool"] == "tide_table")["base"]

    async def script(app, pilot):
        await pilot.press("space")
        assert base(app) == 0.9
        tool.write_text(tool.read_text(encoding="utf-8").replace("Offer(True, 0.9,", "Offer(True, 0.6,"),
                        encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        assert isinstance(app.screen, TrustScreen)  # changed since it was trusted: asked, nothing imported yet
        shown = text_of(app.screen.query_one("#trust-folders"))
        assert str(sc.parent.resolve()) in shown and "tidetool.py" in shown and "Reloading imports" in shown
        assert str(app.screen.query_one("#without").label) == "Reload without them"
        await pilot.click("#once")
        await pilot.pause()
        assert not isinstance(app.screen, (TrustScreen, ErrorScreen))
        said = [str(n.message) for n in app._notifications]
        assert "plugin tidetool.py reloaded (tools: tide_table): in force from cycle 2" in said
        await pilot.press("space")
        assert base(app) == 0.6

    try:
        with trust.agreed(trust.Consent(trust_file=trust_file)):
            drive(workbench(str(sc)), script)
    finally:
        registry.refresh()
        hotload.forget()
        sys.modules.pop("tidetool", None)


def _reload_prompt():
    """The trust dialog as f5 shows it for a plugin whose folder changed since it was trusted
    (a fixed folder, so the picture does not depend on the test's temporary one)."""
    from pathlib import Path

    from textual.app import App

    from akh_tui.engine import trust
    from akh_tui.tui.trust_prompt import TrustScreen

    folder = Path("/home/you/harbour")
    need = trust.PluginNeed(folder, ("tidetool.py",), ("tidetool:make_tool",),
                            f"not imported: {folder} changed since it was trusted (changed: tidetool.py); {trust.HOW}")

    class Prompt(App[None]):
        TITLE = "akh-tui"

        def on_mount(self) -> None:
            self.push_screen(TrustScreen([need], reloading=True))

    return Prompt()


def test_the_reload_trust_dialog_at_120x36(snap_compare):
    assert snap_compare(_reload_prompt(), terminal_size=(120, 36))


def test_the_reload_trust_dialog_at_80x24(snap_compare):
    assert snap_compare(_reload_prompt(), terminal_size=(80, 24))


def test_a_served_tab_never_asks_to_trust_a_plugins_new_code(workbench, tmp_path, monkeypatch):
    import sys

    from akh_tui.engine import SERVED_ENV, trust
    from akh_tui.engine.tools import hotload, registry
    from akh_tui.tui.trust_prompt import TrustScreen
    from tests.engine.tools.test_plugins import harbour

    registry.refresh()
    hotload.forget()
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    trust_file = tmp_path / "cfg" / "trusted-folders.json"

    async def script(app, pilot):
        await pilot.press("space")
        tool.write_text(tool.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        assert isinstance(app.screen, ErrorScreen) and not isinstance(app.screen, TrustScreen)
        shown = " ".join(text_of(w) for w in app.screen.query(Static))
        assert "a served session never imports" in shown
        assert not trust_file.exists()  # nothing was trusted from the tab

    try:
        with trust.agreed(trust.Consent(trust_file=trust_file)):
            monkeypatch.setenv(SERVED_ENV, "1")
            drive(workbench(str(sc)), script)
    finally:
        registry.refresh()
        hotload.forget()
        sys.modules.pop("tidetool", None)
