"""engine/tools/trust.py on its own (issue 23): where a module would come from, found without running
it; which files a folder's hash covers; the remembered list's damage and atomic saves. The
command paths are in tests/test_attacks.py's issue 23 block."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from akh_tui.engine.tools import trust
from akh_tui.engine.errors import InputError

RUNS = "from pathlib import Path\nPath(__file__).resolve().parents[{up}].joinpath('MARKER').write_text('ran')\n"


def test_installed_modules_pass_and_a_folder_module_is_local() -> None:
    for name in ("json", "sys", "textual", "akh_tui.engine.tools.builtins", "numpy"):
        assert not trust.locate(name).local, name
    assert not trust.locate("no_such_module_at_all").found


def test_a_dotted_name_is_located_without_importing_its_package(tmp_path: Path) -> None:
    pkg = tmp_path / "evilpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(RUNS.format(up=1))
    (pkg / "sub.py").write_text(RUNS.format(up=1))
    origin = trust.locate("evilpkg.sub", tmp_path)
    assert origin.local and origin.folders == (tmp_path.resolve(),)
    assert not (tmp_path / "MARKER").exists() and "evilpkg" not in sys.modules


def test_a_module_found_earlier_on_the_path_than_an_installed_one_is_local(tmp_path: Path) -> None:
    (tmp_path / "colorsys.py").write_text(RUNS.format(up=0))  # stdlib's name, in the scenario's folder
    sys.modules.pop("colorsys", None)
    origin = trust.locate("colorsys", tmp_path)
    assert origin.local and origin.files == ((tmp_path / "colorsys.py").resolve(),)


def test_the_hash_covers_every_file_python_could_import(tmp_path: Path) -> None:
    files = ["a.py", "b.pth", "pkg/__init__.py", "pkg/deep/x.py", "ns/y.py", "__pycache__/a.cpython-311.pyc",
             "ext.cpython-311-x86_64-linux-gnu.so", "win.pyd", "old.pyc"]
    ignored = ["notes.txt", "data.tsv", ".hidden/z.py", "not-a-name/z.py", "scenario.toml"]
    for f in files + ignored:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text(f)
    assert sorted(trust.folder_digests(tmp_path)) == sorted(files)
    before = trust.combined(trust.folder_digests(tmp_path))
    (tmp_path / "notes.txt").write_text("changed")  # Python cannot import it: the hash stays
    assert trust.combined(trust.folder_digests(tmp_path)) == before
    (tmp_path / "pkg" / "deep" / "x.py").write_text("changed")
    assert trust.combined(trust.folder_digests(tmp_path)) != before


def test_a_trusted_folder_asks_again_when_a_file_changes_is_added_or_removed(tmp_path: Path) -> None:
    d = tmp_path / "plugins"
    d.mkdir()
    (d / "a.py").write_text("A = 1\n")
    (d / "b.py").write_text("B = 1\n")
    lst = trust.TrustList(tmp_path / "cfg" / "trusted-folders.json")
    lst.add(d)
    again = trust.TrustList(lst.path)  # read back from the file
    assert again.check(d) is None
    (d / "a.py").write_text("A = 2\n")
    (d / "c.py").write_text("")
    (d / "b.py").unlink()
    why = again.check(d)
    assert why == f"{d.resolve()} changed since it was trusted (changed: a.py; added: c.py; removed: b.py)"
    assert not list(lst.path.parent.glob("*.tmp"))  # the atomic save left no temporary file


def test_a_damaged_list_trusts_nothing_names_the_file_and_is_not_overwritten(tmp_path: Path) -> None:
    d = tmp_path / "plugins"
    d.mkdir()
    path = tmp_path / "trusted-folders.json"
    path.write_text(json.dumps({"akh_trust": 1, "folders": [{"folder": str(d.resolve()), "hash": 3}]}))
    lst = trust.TrustList(path)
    assert lst.error is not None and lst.error.field == "folders[0]" and lst.error.file == str(path)
    assert lst.check(d) is not None
    with pytest.raises(InputError, match="not changed"):
        lst.add(d)
    with pytest.raises(InputError, match="not changed"):
        trust.agree(path, trust=True)
    assert json.loads(path.read_text())["folders"][0]["hash"] == 3
    trust.set_consent(None)


def test_a_folder_too_broad_to_trust_is_refused_in_words(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(trust, "MAX_FILES", 3)
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("")
    with pytest.raises(InputError, match="too many to trust as one folder"):
        trust.TrustList(tmp_path / "t.json").add(tmp_path)
