"""entrypoints.groups_named: the look that spares `tools` and every run's start importing
importlib.metadata when no installed distribution declares an akh-tui plugin (issue 29)."""

from __future__ import annotations

import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from akh_tui.engine.tools import registry
from akh_tui.engine.tools.entrypoints import groups_named

GROUPS = ("akh_tui.tools", "akh_tui.deciders")


def dist(site: Path, name: str, entry_points: str | None) -> Path:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    return info


def test_distributions_without_our_groups_name_none(tmp_path):
    dist(tmp_path, "other", "[console_scripts]\nother = other:main\n")
    dist(tmp_path, "plain", None)
    (tmp_path / "legacy.egg-info").write_text("Metadata-Version: 1.0\nName: legacy\n")  # a file, not a folder
    assert groups_named(GROUPS, [str(tmp_path), str(tmp_path / "missing.zip")]) == set()


@pytest.mark.parametrize("text, named", [
    ("[akh_tui.tools]\ntide = tides:make\n", {"akh_tui.tools"}),
    ("[akh_tui.deciders]\nmine = mine:Decider\n", {"akh_tui.deciders"}),
    ("[akh_tui.tools]\na = a:b\n[akh_tui.deciders]\nc = c:d\n", set(GROUPS)),
])
def test_a_distribution_naming_a_group_names_it(tmp_path, text, named):
    dist(tmp_path / "a", "other", "[console_scripts]\nx = y:z\n")
    dist(tmp_path / "b", "plugin", text)
    assert groups_named(GROUPS, [str(tmp_path / "a"), str(tmp_path / "b")]) == named


def test_the_empty_path_entry_is_the_current_folder(tmp_path, monkeypatch):
    dist(tmp_path, "here", "[akh_tui.tools]\nt = here:t\n")
    monkeypatch.chdir(tmp_path)
    assert groups_named(GROUPS, [""]) == {"akh_tui.tools"}


def test_what_it_cannot_read_is_left_to_importlib_metadata(tmp_path, monkeypatch):
    # a zip on the path, a legacy egg: both groups, so the registry asks importlib.metadata
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("z-1.0.dist-info/entry_points.txt", "[akh_tui.tools]\nz = z:t\n")
    assert groups_named(GROUPS, [str(archive)]) == set(GROUPS)
    (tmp_path / "old-1.0.egg").mkdir()
    assert groups_named(GROUPS, [str(tmp_path / "old-1.0.egg")]) == set(GROUPS)
    # and another finder of distributions on sys.meta_path

    class Finder:
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert groups_named(GROUPS, [str(tmp_path / "nothing-here")]) == set(GROUPS)


def test_what_importlib_metadata_finds_is_always_named(tmp_path, monkeypatch):
    # the look is a superset of importlib.metadata's answer, here on this very interpreter's path
    dist(tmp_path, "akh-tui-tides", "[akh_tui.tools]\ntide_table = akh_tides.tool:make_tool\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = {g for g in GROUPS if metadata.entry_points(group=g)}
    assert found == {"akh_tui.tools"}
    assert found <= groups_named(GROUPS)


def test_the_registry_lists_nothing_without_importing_importlib_metadata_when_none_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    registry.refresh()
    monkeypatch.setattr(metadata, "entry_points", lambda **kw: pytest.fail("importlib.metadata was asked"))
    try:
        assert registry.entry_point_rows() == []
    finally:
        registry.refresh()


def test_the_registry_lists_what_a_distribution_declares(tmp_path, monkeypatch):
    dist(tmp_path, "akh-tui-mine", "[akh_tui.deciders]\nmine = mine:Decider\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.refresh()
    try:
        rows = registry.entry_point_rows()
    finally:
        registry.refresh()
    assert [(r["kind"], r["name"], r["origin"]) for r in rows] == [
        ("decider", "mine", "entry point mine (akh-tui-mine 1.0): mine:Decider")]


def test_the_importlib_metadata_backports_path_finder_is_the_same_look(tmp_path, monkeypatch):
    """OpenTelemetry and Dask import the importlib_metadata backport, which puts its own path
    finder on sys.meta_path: it reads the same folders, so the plain look still answers (the
    suite found every answer turned into "all groups" once an export had run in the process)."""
    import sys

    importlib_metadata = pytest.importorskip("importlib_metadata")
    dist(tmp_path, "other", "[console_scripts]\nother = other:main\n")
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, importlib_metadata.MetadataPathFinder()])
    assert groups_named(GROUPS, [str(tmp_path)]) == set()

    class Elsewhere:  # a finder of distributions this look cannot read
        def find_distributions(self, *args, **kwargs):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Elsewhere()])
    assert groups_named(GROUPS, [str(tmp_path)]) == set(GROUPS)
