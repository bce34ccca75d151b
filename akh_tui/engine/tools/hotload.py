"""A scenario's plugin module made again from its source text: the hot reload of a plugin
(issue 28 §2).

A reload reads the module's file (`read_source`) and records the text with its sha256; the
tools are made from that recorded TEXT (`make_tools`), never from the file, so a rewind, a
fork or a resume re-creates the code the user reloaded whatever the file holds by then. The
text is run only when the folder it was read from is agreed now (trust.py: the trusted list,
"allow once", --allow-plugins) and, replayed, the text is one the user agreed to (the file as
it is now, one this process ran live, or one the trusted-folders list kept for the folder: a
store is data, and may attribute any text to a trusted folder); otherwise `PluginNotTrusted`
names the folder and how to trust it, and nothing runs. A pin's check (`check PIN`, consent.checking) runs a recorded text only
when it is byte for byte the trusted folder's file: a pin is someone else's file, and its text
is not what the user trusted.

A scenario's decider (`decider = "module:attr"`) is made again the same way (`make_decider`).
Only a module's own `.py` file is read again (a module beside the scenario, or a package's
module in a folder outside the installed packages); an installed plugin is not reloaded. Made
tools and deciders are kept per process by (reference, folder, hash): tools hold no per-run
state, a run's decider is one object for all its rewinds (as the decider it opened with is),
and a rewind past a reload does not run the module's top level again.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from dataclasses import dataclass
from hashlib import sha256
from pathlib import Path
from typing import Any

from ..errors import InputError, read_user_file
from . import trust
from .modulefind import Origin, installed_roots, resolved_path
from .registry import PluginError, _check_spec, _tools_from, decider_from


class PluginNotTrusted(InputError):
    """A plugin's code not run: its folder is not agreed now. `folder` names it."""

    folder: Path


def text_hash(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PluginSource:
    """A plugin module's source as a reload read it: the scenario's reference (`module:attr`),
    the file and the folder it came from, its text and the text's sha256."""

    ref: str
    file: str
    folder: str
    text: str
    sha256: str

    @property
    def module(self) -> str:
        return self.ref.partition(":")[0]

    def payload(self) -> dict:
        return {"ref": self.ref, "file": self.file, "folder": self.folder, "sha256": self.sha256, "source": self.text}

    @classmethod
    def from_payload(cls, payload: Any) -> "PluginSource":
        """A recorded reload (from a store or a pin: possibly damaged or hostile): its shape
        checked, and its text against its hash (InputError naming the field)."""
        keys = ("ref", "file", "folder", "sha256", "source")
        if not isinstance(payload, dict) or not all(isinstance(payload.get(k), str) for k in keys):
            raise InputError(f"a recorded plugin reload is malformed: {str(payload)[:80]!r}", field="reload_plugin")
        ref = payload["ref"]
        mod, sep, attr = ref.partition(":")
        if not sep or not attr or not all(p.isidentifier() for p in mod.split(".")):
            raise InputError(f"a recorded plugin reload names {ref[:80]!r}, not a 'module:attr' reference",
                             field="reload_plugin.ref")
        if text_hash(payload["source"]) != payload["sha256"]:
            raise InputError(f"a recorded reload of plugin {ref}: its source does not match its sha256 (damaged)",
                             field="reload_plugin.sha256")
        folder = resolved_path(payload["folder"])
        if not Path(payload["folder"]).is_absolute() or not resolved_path(payload["file"]).is_relative_to(folder):
            raise InputError(f"a recorded reload of plugin {ref}: its file {payload['file'][:80]!r} is not in its "
                             f"folder {payload['folder'][:80]!r}", field="reload_plugin.file")
        return cls(ref, payload["file"], str(folder), payload["source"], payload["sha256"])


def module_file(module: str, folder: Path) -> Path | None:
    """The `.py` file `module` (dotted) is read from in `folder`, if there is one."""
    rel = Path(*module.split("."))
    for p in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py"):
        if p.is_file():
            return p
    return None


def read_source(ref: str, base: Path | None) -> PluginSource | None:
    """The module of a scenario's reference `ref` as its file holds it now, or None when it is
    not one a reload reads (an installed module, or one without a `.py` file). Nothing is
    imported; a file that cannot be read is an InputError naming it."""
    mod = ref.partition(":")[0].strip()
    if not all(p.isidentifier() for p in mod.split(".")):
        return None
    # the scenario's folder first, as the import looks (a module of that name imported in this
    # process from another scenario's folder is not this scenario's file)
    folders = [resolved_path(base)] if base is not None else []
    folders += [f for f in trust.locate(mod, base).folders if f not in folders]
    roots = installed_roots()
    for folder in folders:
        file = module_file(mod, folder)
        if file is not None and not any(resolved_path(file).is_relative_to(r) for r in roots):
            text = read_user_file(file, "plugin module")
            return PluginSource(ref, str(resolved_path(file)), str(folder), text, text_hash(text))
    return None


def admit(src: PluginSource, replaying: bool) -> None:
    """Return when this process may run `src`'s text: its folder agreed now (and, in a pin's
    check, the text is the trusted folder's file as it is). Else PluginNotTrusted naming the
    folder and `akh-tui trust`. `replaying`: the text is a recorded one (a rewind, fork or
    resume), which the words say."""
    folder = Path(src.folder)
    consent = trust.current()
    why: str | None = None
    try:
        consent.admit(Origin(src.module.partition(".")[0], (folder,), (Path(src.file),)))
    except trust.NotTrusted as exc:
        why = str(exc).removeprefix("not imported: ").removesuffix("; " + trust.HOW)
    if why is None and (consent.checking or replaying):
        file = module_file(src.module, folder)
        try:
            now = text_hash(read_user_file(file, "plugin module")) if file is not None else None
        except InputError:
            now = None
        if consent.checking and now != src.sha256:
            why = (f"the recorded source of {src.ref} is not what {file or src.file} holds (a pin's source is "
                   "run only when it is the trusted folder's own file)")
        elif not consent.checking and (file is None or not consent.agreed_text(folder, file, src.sha256, now)):
            # a store is data: a text it attributes to a trusted folder runs only if the user once
            # agreed to exactly that text there (trust.TrustedFolder.agreed), or it is the file now
            why = (f"its recorded source is not {file or src.file} as it is now, nor a text of it you trusted "
                   "before (a store's text runs only as code you agreed to); to run it, put that text back in "
                   "the file, read it, and trust the folder as it is then")
    if why is None:
        if not replaying:
            consent.texts.add((str(resolved_path(Path(src.file))), src.sha256))
        return
    if replaying:
        words = (f"the run reloaded plugin {src.ref} from {folder}, and its recorded source is run again only "
                 f"from a folder you trust: {why}. Nothing of it was run; trust the folder with "
                 f"`akh-tui trust add {folder}` (or agree with --allow-plugins for this run only)")
    else:
        words = (f"plugin {src.ref} not reloaded: {why}. Nothing of it was run and the run keeps its old code; "
                 f"trust the folder with `akh-tui trust add {folder}` (or reload with --allow-plugins or --trust)")
    refused = PluginNotTrusted(words, file=src.file, field="tools")
    refused.folder = folder
    raise refused


# tools made from a recorded text, by (reference, folder, sha256): once per process
_made: dict[tuple[str, str, str], list[Any]] = {}


def make_tools(src: PluginSource, replaying: bool = False) -> list[Any]:
    """The tools `src`'s text makes, checked like loaded ones: PluginNotTrusted when its folder
    is not agreed (nothing run); an InputError naming the plugin, the file and line and the
    error when the text does not import or its tools are not valid."""
    admit(src, replaying)
    key = (src.ref, src.folder, src.sha256)
    got = _made.get(key)
    if got is None:
        got = _made[key] = _tools(src)
    return list(got)


def _fail(src: PluginSource, what: str, line: int | None = None) -> InputError:
    return InputError(f"plugin {src.ref} not reloaded: {what}; the run keeps its old code", file=src.file, line=line,
                      field="tools")


def make_decider(src: PluginSource, replaying: bool = False) -> Any:
    """The decider `src`'s text makes (a scenario's `decider = "module:attr"`), guarded as a
    loaded one is; refused as `make_tools` refuses. One object per text and process, as the
    run's decider is one object for all its rewinds."""
    admit(src, replaying)
    key = ("decider:" + src.ref, src.folder, src.sha256)
    got = _made.get(key)
    if got is None:
        try:
            got = _made[key] = [decider_from(_attribute(src), src.ref)]
        except PluginError as exc:
            raise _fail(src, str(exc)) from None
    return got[0]


def _tools(src: PluginSource) -> list[Any]:
    try:
        tools = _tools_from(_attribute(src))
    except PluginError as exc:
        raise _fail(src, str(exc)) from None
    for t in tools:
        why = _check_spec(getattr(t, "spec", None))
        if why is not None:
            raise _fail(src, why)
    return tools


def _attribute(src: PluginSource) -> Any:
    """What the reference names in a fresh module made from the text."""
    mod = src.module
    try:
        code = compile(src.text, src.file, "exec")
    except (SyntaxError, ValueError) as exc:
        raise _fail(src, f"{type(exc).__name__}: {getattr(exc, 'msg', exc)}", getattr(exc, "lineno", None)) from None
    spec = importlib.util.spec_from_loader(mod, loader=None, origin=src.file)
    assert spec is not None  # a name and no loader: always a spec
    module = importlib.util.module_from_spec(spec)
    module.__file__ = src.file
    package = Path(src.file).name == "__init__.py"
    module.__package__ = mod if package else mod.rpartition(".")[0]
    if package:
        module.__path__ = [str(Path(src.file).parent)]
    before = sys.modules.get(mod)
    sys.modules[mod] = module  # as an import has it while the top level runs (dataclasses look there)
    added = src.folder not in sys.path
    if added:
        sys.path.insert(0, src.folder)  # its own imports of sibling modules, as at its first import
    try:
        exec(code, module.__dict__)
    except Exception as exc:  # whatever its top level raises
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == src.file]
        raise _fail(src, f"{type(exc).__name__}: {exc}", frames[-1].lineno if frames else None) from None
    finally:
        if added:
            sys.path.remove(src.folder)
        if before is None:
            sys.modules.pop(mod, None)
        else:
            sys.modules[mod] = before  # other runs of this process keep the module they imported
    obj: Any = module
    for part in src.ref.partition(":")[2].split("."):
        if not hasattr(obj, part):
            raise _fail(src, f"{mod} has no attribute {src.ref.partition(':')[2]!r}")
        obj = getattr(obj, part)
    return obj


def forget() -> None:
    """Forget the tools made (tests)."""
    _made.clear()
