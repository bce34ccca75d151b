"""Hot reload of a scenario's plugin module (issue 28 §2): the module's new code is in force from
the next cycle; the record holds its source text and sha256, so a rewind, fork or resume makes
the tools again from the recorded text (never from the file), and only while the folder it came
from is trusted; a plugin that fails to import or to validate is named with its error and the
run goes on with its old code."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from akh_tui.engine import InputError, Run
from akh_tui.engine.tools import hotload, registry, trust
from tests.engine.tools.test_plugins import harbour, locs

LOWER = "Offer(True, 0.9,"


@pytest.fixture(autouse=True)
def _fresh_plugins():
    registry.refresh()
    hotload.forget()
    yield
    registry.refresh()
    hotload.forget()
    for m in [m for m in sys.modules if m.startswith("tidetool")]:
        del sys.modules[m]


def forget_code() -> None:
    """As a new process: nothing of the plugin imported or made."""
    registry.refresh()
    hotload.forget()
    sys.modules.pop("tidetool", None)


def base_of(rec: dict, tool: str = "tide_table") -> float:
    return next(c for c in rec["decide"]["candidates"] if c["tool"] == tool)["base"]


def rewrite(tool: Path, base: str, marker: Path | None = None) -> str:
    """The plugin with another base (and a top-level line that leaves `marker` when it runs)."""
    text = tool.read_text(encoding="utf-8").replace(LOWER, f"Offer(True, {base},")
    if marker is not None:
        text += f"\nfrom pathlib import Path as _P\n_P({str(marker)!r}).write_text('ran')\n"
    tool.write_text(text, encoding="utf-8")
    return text


def reload_inputs(run: Run) -> list[dict]:
    b = run.store.current()
    return [p for items in run.store.inputs(b, 0, run.cycle + 1).values() for k, p in items if k == "reload_plugin"]


def test_the_new_code_runs_from_the_next_cycle_and_the_record_holds_its_source(tmp_path):
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    original = tool.read_text(encoding="utf-8")
    with trust.agreed(trust.Consent(any_once=True)):
        run = Run.start(locs(tmp_path), str(sc))
        try:
            assert base_of(run.step()) == 0.9
            assert run.reload()[0].startswith("nothing to reload")  # the file is the code in force
            text = rewrite(tool, "0.6")
            assert run.reload() == ["plugin tidetool.py reloaded (tools: tide_table): in force from cycle 2"]
            [payload] = reload_inputs(run)
            assert payload["source"] == text and payload["sha256"] == hashlib.sha256(text.encode()).hexdigest()
            assert payload["ref"] == "tidetool:make_tool" and payload["file"] == str(tool.resolve())
            assert base_of(run.step()) == 0.6
            run.run_cycles(3)
            lived = [base_of(run.record(c)) for c in range(1, 6)]
        finally:
            run.close()
        # the file back as it was, and nothing of the plugin left in this process: the recorded text is used
        tool.write_text(original, encoding="utf-8")
        forget_code()
        again = Run.resume(locs(tmp_path))
        try:
            assert base_of(again.step()) == 0.6
            again.rewind(3)
            again.fork(1, "before-the-reload")
            assert base_of(again.step()) == 0.9  # before the reload: the code the run opened with
            again.switch("main")
            assert [base_of(again.record(c)) for c in range(1, 6)] == lived
        finally:
            again.close()


def test_a_plugin_that_does_not_import_or_validate_is_named_and_the_old_code_stays(tmp_path):
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    original = tool.read_text(encoding="utf-8")
    with trust.agreed(trust.Consent(any_once=True)):
        run = Run.start(locs(tmp_path), str(sc))
        try:
            run.step()
            tool.write_text(original.replace("def make_tool() -> Tool:", "def make_tool() -> Tool\n"), encoding="utf-8")
            with pytest.raises(InputError) as exc:
                run.reload()
            assert exc.value.file == str(tool.resolve()) and exc.value.line == original[:original.index("def make_tool")].count("\n") + 1
            assert "plugin tidetool:make_tool not reloaded: SyntaxError" in exc.value.message
            assert "keeps its old code" in exc.value.message
            tool.write_text(original.replace("return TideTable()", "return 42"), encoding="utf-8")
            with pytest.raises(InputError, match="returned a int, not a Tool"):
                run.reload()
            tool.write_text(original.replace('"tide_table", "explorer"', '"kg_query", "explorer"'), encoding="utf-8")
            with pytest.raises(InputError, match="'kg_query' clashes with the tool from built-in"):
                run.reload()
            tool.write_text(original.replace('"tide_table", "explorer"', '"tide_table", "wizard"'), encoding="utf-8")
            with pytest.raises(InputError, match="archetype 'wizard' is not one of"):
                run.reload()
            assert reload_inputs(run) == []  # nothing recorded
            assert base_of(run.step()) == 0.9  # the old code goes on
        finally:
            run.close()


def test_only_a_trusted_folder_gives_new_code_and_a_replay_needs_it_trusted_still(tmp_path):
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    folder = sc.parent.resolve()
    trust_file = tmp_path / "cfg" / "trusted-folders.json"
    trust.TrustList(trust_file).add(folder)
    marker = tmp_path / "MARKER"
    with trust.agreed(trust.Consent(trust_file=trust_file)):
        run = Run.start(locs(tmp_path), str(sc))
        try:
            run.step()
            rewrite(tool, "0.6", marker)  # the folder changed since it was trusted
            with pytest.raises(hotload.PluginNotTrusted) as exc:
                run.reload()
            assert exc.value.folder == folder and f"akh-tui trust add {folder}" in exc.value.message
            assert not marker.exists()  # nothing of the new code ran
            assert base_of(run.step()) == 0.9
            trust.TrustList(trust_file).add(folder)  # the user trusts the folder as it is now
            assert run.reload() == ["plugin tidetool.py reloaded (tools: tide_table): in force from cycle 3"]
            assert marker.exists()
            assert base_of(run.step()) == 0.6
        finally:
            run.close()
        marker.unlink()
        # changed again, not trusted: the recorded source is not run either
        tool.write_text(tool.read_text(encoding="utf-8").replace("Offer(True, 0.6,", "Offer(True, 0.7,"), encoding="utf-8")
        forget_code()
        with pytest.raises(InputError) as exc:
            Run.resume(locs(tmp_path))
        assert f"akh-tui trust add {folder}" in exc.value.message and "recorded source" in exc.value.message
        assert not marker.exists()


def test_a_reload_reads_the_scenarios_own_module_not_one_of_that_name_imported_before(tmp_path):
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first, second = harbour(tmp_path / "one"), harbour(tmp_path / "two")
    with trust.agreed(trust.Consent(any_once=True)):
        Run.start(locs(tmp_path / "one"), str(first)).close()  # tidetool imported from the first folder
        src = hotload.read_source("tidetool:make_tool", second.parent)
    assert src is not None and src.folder == str(second.parent.resolve())
    assert src.file == str((second.parent / "tidetool.py").resolve())
    # an installed module is not reloaded (reinstalling it is how it changes)
    assert hotload.read_source("json:loads", second.parent) is None
    assert hotload.read_source("akh_tui.engine.tools.waterjug:make", second.parent) is None


def test_a_reloaded_decider_decides_from_the_next_cycle_and_is_made_again_from_its_text(tmp_path):
    from tests.engine.tools.test_plugins import DECIDER

    sc = harbour(tmp_path, extra='decider = "mydecider:make"', criteria="unicorn")
    module = sc.parent / "mydecider.py"
    module.write_text(DECIDER, encoding="utf-8")
    first = DECIDER.replace("if c.offered][-1]", "if c.offered][0]")
    with trust.agreed(trust.Consent(any_once=True)):
        run = Run.start(locs(tmp_path), str(sc))
        try:
            assert run.step()["decide"]["tool"] == "tide_table"  # the last offered
            module.write_text(first, encoding="utf-8")
            assert run.reload() == ["decider mydecider.py reloaded: in force from cycle 2"]
            firsts = run.step()["decide"]
            assert firsts["tool"] == next(c["tool"] for c in firsts["candidates"] if c["offered"])
            assert firsts["tool"] != "tide_table"
            module.write_text(DECIDER.replace("return [c for", "return 42 or [c for").replace("def make(): return Last()",
                                                                                             "def make(): return 42"),
                              encoding="utf-8")
            with pytest.raises(InputError, match="without choose"):
                run.reload()  # not a decider: refused, the reloaded one goes on
            run.run_cycles(2)
        finally:
            run.close()
        module.write_text(DECIDER, encoding="utf-8")  # the file as it was: the run keeps the code it reloaded
        forget_code()
        sys.modules.pop("mydecider", None)
        again = Run.resume(locs(tmp_path))
        try:
            rec = again.step()
            assert rec["decide"]["tool"] == next(c["tool"] for c in rec["decide"]["candidates"] if c["offered"])
            again.fork(1, "before-the-reload")  # the decider the run opened with
            assert again.step()["decide"]["tool"] == "tide_table"
        finally:
            again.close()
    sys.modules.pop("mydecider", None)


def test_a_stores_plugin_text_runs_again_only_as_a_text_the_user_agreed_to(tmp_path):
    """A store is data: a handed-over data dir may attribute any text to a folder this user
    trusts. The recorded text runs again only if this user once trusted exactly that text in
    that folder (the trusted-folders list keeps earlier texts when a folder is trusted again),
    or it is the folder's file now."""
    sc = harbour(tmp_path, criteria="highwater neverfound")
    tool = sc.parent / "tidetool.py"
    folder = sc.parent.resolve()
    author = tmp_path / "author" / "trusted-folders.json"
    trust.TrustList(author).add(folder)
    marker = tmp_path / "MARKER"
    with trust.agreed(trust.Consent(trust_file=author)):
        run = Run.start(locs(tmp_path), str(sc))
        try:
            run.step()
            rewrite(tool, "0.6", marker)
            trust.TrustList(author).add(folder)
            run.reload()
            assert base_of(run.step()) == 0.6
        finally:
            run.close()
    marker.unlink()
    text = tool.read_text(encoding="utf-8")
    plain = text.split("\nfrom pathlib import Path as _P")[0] + "\n"  # no marker: only the reloaded text leaves it
    tool.write_text(plain.replace("Offer(True, 0.6,", "Offer(True, 0.7,"), encoding="utf-8")
    # the author edits on and trusts the folder again: the text the run reloaded stays agreed
    trust.TrustList(author).add(folder)
    assert hashlib.sha256(text.encode()).hexdigest() in trust.TrustList(author).entries[str(folder)].agreed["tidetool.py"]
    forget_code()
    with trust.agreed(trust.Consent(trust_file=author)):
        run = Run.resume(locs(tmp_path))
        run.close()
    assert marker.exists()  # the author's own reload replays
    marker.unlink()
    # another user trusts the same folder as it is now, and is handed the data dir: the
    # reloaded text is none they agreed to, so it is not run
    reader = tmp_path / "reader" / "trusted-folders.json"
    trust.TrustList(reader).add(folder)
    forget_code()
    with trust.agreed(trust.Consent(trust_file=reader)):
        with pytest.raises(InputError) as exc:
            Run.resume(locs(tmp_path))
    assert "nor a text of it you trusted before" in exc.value.message and f"akh-tui trust add {folder}" in exc.value.message
    assert not marker.exists()


def test_a_stores_text_agreed_for_another_file_of_the_folder_is_not_this_modules(tmp_path):
    """Agreement is per file: a text the user trusted as the folder's other module is not
    agreed as this module's source."""
    sc = harbour(tmp_path, criteria="highwater neverfound")
    folder = sc.parent.resolve()
    other = sc.parent / "othermod.py"
    other.write_text("X = 1\n", encoding="utf-8")
    trust_file = tmp_path / "cfg" / "trusted-folders.json"
    trust.TrustList(trust_file).add(folder)
    consent = trust.Consent(trust_file=trust_file)
    digest = hashlib.sha256(b"X = 1\n").hexdigest()
    tool = sc.parent / "tidetool.py"
    now = hashlib.sha256(tool.read_bytes()).hexdigest()
    assert consent.agreed_text(folder, other, digest, None)
    assert not consent.agreed_text(folder, tool, digest, now)
    assert consent.agreed_text(folder, tool, now, now)
