"""Which folders' Python code a run may import: the user's agreement, asked before any import.

A scenario (or a sweep, a pin's scenario) may name plugins as `module:attr`; a module found
outside the installed packages (the scenario's folder, the current directory, any other
folder on the path) is code the user may never have read, and importing it runs it. So the
registry asks `Consent.admit(folder)` first, and imports only when the answer is yes:

- the folder is in the trusted-folders list (`Locations.trust_file`, in the config folder),
  remembered with a content hash over every file Python could import from it (`*.py`,
  packages, `.pth`, native extensions, compiled `.pyc`): a changed, added or removed file
  means "not trusted any more", and the user is asked again;
- or the user agreed for this run only (`--allow-plugins`, the workbench's "allow once");
- or the user agreed and asked to remember it (`--trust`, the workbench's "trust").

A served tab (config.served_process) never imports scenario-local plugins, trusted or not: it
is driven by whoever holds the browser page. A damaged list is reported and trusts nothing;
it is never silently replaced.

`modulefind.locate` says where a module would come from without running it.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ..errors import InputError
from .modulefind import Origin, locate, resolved_path

__all__ = ["Origin", "locate", "NotTrusted", "TrustList", "Consent", "PluginNeed", "current", "set_consent", "agreed",
           "agree", "allow_once", "needs", "scenario_needs", "declared_decider", "folder_digests", "combined"]

TRUST_VERSION = 1
MAX_FILES = 10_000  # a folder with more importable files than this is too broad to trust whole
MAX_DIRS = 5_000  # likewise sub-folders a dotted name could reach (a home folder is no plugin folder)
SHOW_FILES = 8  # files named in a message before "and N more"
# what Python could load from a folder: sources, compiled files, native extensions, and .pth
# files (which a site folder executes); the platform's own extension suffixes come first
IMPORTABLE = tuple(dict.fromkeys((*importlib.machinery.all_suffixes(), ".py", ".pyw", ".pyc", ".pyd", ".so", ".pth")))
HOW = ("agree with --allow-plugins (this run only) or --trust (remember the folder), "
       "or answer the workbench's prompt")


class NotTrusted(Exception):
    """A module that was not imported because its folder is not trusted for this run."""


# ---- a folder's content hash -------------------------------------------------------------------

def importable_files(folder: Path) -> list[Path]:
    """Every file Python could import from `folder` (it as a path entry): files with an
    importable suffix there, and in every sub-folder a dotted name could reach (an identifier:
    a package or a namespace package, __pycache__ included), symlinks followed once."""
    folder = resolved_path(folder)
    if folder.is_file():  # a zip or egg on the path: the one file
        return [folder]
    out: list[Path] = []
    seen: set[Path] = set()
    for here, dirs, files in os.walk(folder, followlinks=True):
        real = resolved_path(here)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        if len(seen) > MAX_DIRS:
            raise NotTrusted(f"{folder} holds more than {MAX_DIRS:,} folders Python could import from: too many to "
                             "trust as one folder (put the plugins in a folder of their own)")
        dirs[:] = sorted(d for d in dirs if d.isidentifier())
        for f in sorted(files):
            if f.endswith(IMPORTABLE):
                out.append(Path(here) / f)
                if len(out) > MAX_FILES:
                    raise NotTrusted(f"{folder} holds more than {MAX_FILES:,} files Python could import: too many to "
                                     "trust as one folder (put the plugins in a folder of their own)")
    return out


def folder_digests(folder: Path) -> dict[str, str]:
    """sha256 of each importable file, by its path relative to the folder (posix)."""
    from hashlib import sha256  # here: every command sets a consent, few hash a folder (start-up)

    folder = resolved_path(folder)
    out: dict[str, str] = {}
    for p in importable_files(folder):
        try:
            digest = sha256(p.read_bytes()).hexdigest()
        except OSError as exc:  # unreadable now: it cannot match what was trusted
            digest = f"unreadable: {exc.strerror or exc}"
        rel = p.name if p == folder else p.relative_to(folder).as_posix()
        out[rel] = digest
    return out


def combined(digests: dict[str, str]) -> str:
    from hashlib import sha256

    return sha256("".join(f"{k}\0{v}\n" for k, v in sorted(digests.items())).encode()).hexdigest()


def _names(files: list[str] | tuple[str, ...]) -> str:
    files = sorted(files)
    shown = ", ".join(files[:SHOW_FILES])
    return shown + (f" and {len(files) - SHOW_FILES} more" if len(files) > SHOW_FILES else "") if files else "no files"


# ---- the trusted-folders list -------------------------------------------------------------------

AGREED_KEPT = 100  # sha256s of earlier trusted texts a folder's entry keeps per file (oldest dropped)


@dataclass
class TrustedFolder:
    folder: str
    hash: str
    files: dict[str, str]
    # by file (relative, as `files`), the sha256 of every text of it the user trusted before its
    # current state: a recorded plugin reload (hotload.py) runs again only as a text the user
    # agreed to for that very file, never one a handed-over store merely attributes to it
    agreed: dict[str, list[str]] = field(default_factory=dict)

    def agreed_text(self, rel: str, digest: str) -> bool:
        return self.files.get(rel) == digest or digest in self.agreed.get(rel, ())


class TrustList:
    """The trusted-folders list in one JSON file; `error` says why a damaged one trusts nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, TrustedFolder] = {}
        self.error: InputError | None = None
        self._read()

    def _read(self) -> None:
        file = str(self.path)
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            self.error = InputError(f"cannot read the trusted-folders list: {getattr(exc, 'strerror', None) or exc}; "
                                    "nothing in it is trusted", file=file)
            return
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            self.error = InputError(f"the trusted-folders list is damaged ({exc.msg}); nothing in it is trusted: fix or "
                                    "remove the file", file=file, line=exc.lineno)
            return
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(data, dict) or data.get("akh_trust") != TRUST_VERSION or not isinstance(folders, list):
            self.error = InputError(f"not a trusted-folders list of version {TRUST_VERSION}; nothing in it is trusted: "
                                    "fix or remove the file", file=file, field="akh_trust")
            return
        for i, e in enumerate(folders):
            ok = (isinstance(e, dict) and isinstance(e.get("folder"), str) and isinstance(e.get("hash"), str)
                  and isinstance(e.get("files"), dict) and all(isinstance(v, str) for v in e["files"].values())
                  and isinstance(e.get("agreed", {}), dict)
                  and all(isinstance(v, list) and all(isinstance(d, str) for d in v) for v in e.get("agreed", {}).values()))
            if not ok:
                self.error = InputError("must be an object with folder, hash and files; nothing in the list is trusted: "
                                        "fix or remove the file", file=file, field=f"folders[{i}]")
                self.entries = {}
                return
            self.entries[e["folder"]] = TrustedFolder(e["folder"], e["hash"], dict(e["files"]),
                                                      {k: list(v) for k, v in e.get("agreed", {}).items()})

    def _writable(self) -> None:
        if self.error is not None:
            raise InputError(f"{self.error.message.split(';')[0]}: not changed (it would be overwritten)",
                             file=self.error.file, line=self.error.line, field=self.error.field)

    def save(self) -> None:
        """Written whole to a temporary file beside it, then moved over it (atomic)."""
        self._writable()
        body = {"akh_trust": TRUST_VERSION, "folders": [
            {"folder": e.folder, "hash": e.hash, "files": dict(sorted(e.files.items())),
             **({"agreed": dict(sorted(e.agreed.items()))} if e.agreed else {})}
            for e in sorted(self.entries.values(), key=lambda e: e.folder)]}
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(body, indent=1) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise InputError(f"cannot save the trusted-folders list: {getattr(exc, 'strerror', None) or exc}",
                             file=str(self.path)) from None

    def add(self, folder: Path) -> TrustedFolder:
        """Trust `folder` as it is now (its hash), and save."""
        self._writable()
        folder = resolved_path(folder)
        if not folder.exists():
            raise InputError("no such folder", file=str(folder), field="folder")
        try:
            digests = folder_digests(folder)
        except NotTrusted as exc:
            raise InputError(str(exc), file=str(folder), field="folder") from None
        old = self.entries.get(str(folder))
        agreed: dict[str, list[str]] = {}
        if old is not None:  # what was trusted before stays agreed (a recorded reload of it replays)
            for rel in sorted({*old.agreed, *old.files}):
                kept = [d for d in dict.fromkeys([*old.agreed.get(rel, []), *([old.files[rel]] if rel in old.files else [])])
                        if d != digests.get(rel)]
                if kept:
                    agreed[rel] = kept[-AGREED_KEPT:]
        entry = TrustedFolder(str(folder), combined(digests), digests, agreed)
        self.entries[entry.folder] = entry
        self.save()
        return entry

    def remove(self, folder: Path) -> bool:
        self._writable()
        key = str(resolved_path(folder))
        if key not in self.entries:
            key = str(folder)  # a folder that is gone (or moved) by the name it was kept under
        if key not in self.entries:
            return False
        del self.entries[key]
        self.save()
        return True

    def check(self, folder: Path, digests: dict[str, str] | None = None) -> str | None:
        """None when `folder` is trusted as it is now; else why not, in words."""
        if self.error is not None:
            return f"{self.error}"
        folder = resolved_path(folder)
        entry = self.entries.get(str(folder))
        now = digests if digests is not None else folder_digests(folder)
        if entry is None:
            return f"{folder} is not a trusted folder (it holds {_names(tuple(now))})"
        if combined(now) == entry.hash:
            return None
        changed = [f for f in now if f in entry.files and entry.files[f] != now[f]]
        added = [f for f in now if f not in entry.files]
        removed = [f for f in entry.files if f not in now]
        parts = [f"{w}: {_names(fs)}" for w, fs in (("changed", changed), ("added", added), ("removed", removed)) if fs]
        return f"{folder} changed since it was trusted ({'; '.join(parts) or 'its files differ'})"


# ---- the user's agreement for this process ----------------------------------------------------------

@dataclass
class Consent:
    """What this process may import. `trust_file`: the remembered list; `once`: folders agreed
    for this run (a folder -> the hash it was shown with, or None for "as it is");
    `any_once`: --allow-plugins; `remember`: --trust; `served`: never; `checking`: `--check`
    and `check PIN` (the list only, and the words say "would need")."""

    trust_file: Path | None = None
    once: dict[Path, str | None] = field(default_factory=dict)
    any_once: bool = False
    remember: bool = False
    served: bool = False
    checking: bool = False
    remembered: list[Path] = field(default_factory=list)  # folders --trust added, for the front end to say
    texts: set[tuple[str, str]] = field(default_factory=set)  # (file, sha256) of plugin texts run live (hotload.py)

    def agreed_text(self, folder: Path, file: Path, digest: str, now: str | None) -> bool:
        """Whether a recorded text of plugin `file` (its sha256) is one the user agreed to: the
        file as it is now (`now`), a text of it this process ran live, or one the
        trusted-folders list kept for that file. Not whether the folder is agreed: `admit` says."""
        if digest == now or (str(resolved_path(file)), digest) in self.texts:
            return True
        if self.trust_file is None:
            return False
        folder = resolved_path(folder)
        entry = TrustList(self.trust_file).entries.get(str(folder))
        try:
            rel = resolved_path(file).relative_to(folder).as_posix()
        except ValueError:  # a file outside the folder it names: nothing of the list agrees to it
            return False
        return entry is not None and entry.agreed_text(rel, digest)

    def admit(self, origin: Origin) -> None:
        """Return when every folder `origin` would load from is agreed; else NotTrusted with
        words naming the folder, its files and how to agree."""
        for folder in origin.folders:
            self._admit_folder(folder, origin)

    def _admit_folder(self, folder: Path, origin: Origin) -> None:
        if self.served:
            raise NotTrusted(f"not imported: a served session never imports scenario-local plugins "
                             f"({folder}: {_names(tuple(str(p.relative_to(folder)) if p.is_relative_to(folder) else p.name for p in origin.files))})")
        if self.any_once and not self.checking:
            return
        digests = folder_digests(folder)
        if folder in self.once and self.once[folder] in (None, combined(digests)):
            return
        if folder in self.once:
            raise NotTrusted(f"not imported: {folder} changed since it was shown to you; {HOW}")
        trusted = TrustList(self.trust_file) if self.trust_file is not None else None
        why = trusted.check(folder, digests) if trusted is not None else f"{folder} is not a trusted folder"
        if why is None:
            return
        if self.remember and trusted is not None:
            trusted.add(folder)  # a damaged list raises InputError here: never silently replaced
            self.remembered.append(folder)
            return
        if self.checking:
            raise NotTrusted(f"would need plugins from {folder}: not trusted ({why}); nothing was imported; "
                             f"trust it with `akh-tui trust add {folder}`")
        raise NotTrusted(f"not imported: {why}; {HOW}")


_consent: Consent | None = None


def default_consent() -> Consent:
    """The remembered list only (and nothing in a served tab): what a process uses until its
    front end says the user agreed to more."""
    from ..config import served_process
    from ..paths import Locations

    return Consent(trust_file=Locations.resolve().trust_file, served=served_process())


def current() -> Consent:
    """This process's consent (re-read from the environment each time until one is set)."""
    from ..config import served_process

    c = _consent if _consent is not None else default_consent()
    if served_process():  # whatever a front end set: a served tab never imports local plugins
        c.served = True
    return c


def held() -> Consent | None:
    """The consent a front end set (None: the remembered list only, default_consent)."""
    return _consent


def set_consent(consent: Consent | None) -> None:
    global _consent
    _consent = consent


def allow_once(needs: list["PluginNeed"], trust_file: Path | None = None) -> Consent:
    """The workbench's "allow once": these folders, as they were shown (a file changed since
    is refused), for this process only."""
    base = _consent if _consent is not None else default_consent()
    consent = Consent(trust_file=trust_file or base.trust_file, once={n.folder: n.digest for n in needs})
    set_consent(consent)
    return consent


@contextlib.contextmanager
def agreed(consent: Consent) -> Iterator[Consent]:
    """`consent` for the calls inside (tests, a check); the earlier one after."""
    global _consent
    before = _consent
    _consent = consent
    try:
        yield consent
    finally:
        _consent = before


def agree(trust_file: Path, allow_plugins: bool = False, trust: bool = False) -> Consent:
    """The headless flags as this process's consent: --allow-plugins (this run only), --trust
    (remember each folder a run needs, by its hash). A damaged list with --trust is refused
    before anything runs."""
    consent = Consent(trust_file=trust_file, any_once=allow_plugins, remember=trust)
    if trust:
        TrustList(trust_file)._writable()
    set_consent(consent)
    return consent


# ---- what a scenario would need, without importing -----------------------------------------------

@dataclass(frozen=True)
class PluginNeed:
    """A folder of Python code a scenario's references would import, and whether it is agreed."""

    folder: Path
    files: tuple[str, ...]  # every importable file in it (what trusting it covers)
    refs: tuple[str, ...]  # the scenario's references that load from it
    why: str | None  # None: trusted (or agreed) already; else why not
    digest: str = ""  # the folder's content hash when it was looked at (what "allow once" agrees to)

    @property
    def trusted(self) -> bool:
        return self.why is None


def _scenario_table(path: Path) -> dict:
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data


def declared_decider(path: Path) -> str | None:
    """The scenario file's `decider`, read without loading it."""
    dec = _scenario_table(path).get("decider")
    return dec if isinstance(dec, str) else None


def references(path: Path) -> list[str]:
    """The `module:attr` references a scenario file names (tools, decider), read without
    loading it; a file that cannot be read or parsed names none (loading it says why)."""
    data = _scenario_table(path)
    refs = data.get("tools", [])
    out = [r for r in refs if isinstance(r, str) and ":" in r] if isinstance(refs, list) else []
    dec = declared_decider(path)
    if dec is not None and ":" in dec:
        out.append(dec)
    return out


def needs(refs: list[str], base: Path | None, consent: Consent | None = None) -> list[PluginNeed]:
    """The local folders `refs` (relative to `base`) would import from, each with its files and
    whether `consent` (this process's by default) admits it: nothing is imported."""
    consent = consent or current()
    by_folder: dict[Path, list[str]] = {}
    for ref in refs:
        origin = locate(ref.partition(":")[0].strip(), base)
        for folder in origin.folders:
            by_folder.setdefault(folder, []).append(ref)
    out = []
    for folder, rs in by_folder.items():
        try:
            digests = folder_digests(folder)
        except NotTrusted as exc:
            out.append(PluginNeed(folder, (), tuple(rs), str(exc)))
            continue
        probe = Consent(consent.trust_file, dict(consent.once), consent.any_once, False, consent.served, consent.checking)
        try:
            probe.admit(Origin(rs[0], (folder,), ()))
            why = None
        except NotTrusted as exc:
            why = str(exc)
        out.append(PluginNeed(folder, tuple(digests), tuple(rs), why, combined(digests)))
    return out


def scenario_needs(path: Path, extra: list[str] | None = None, consent: Consent | None = None) -> list[PluginNeed]:
    """What the scenario file at `path` (and `extra` references, e.g. a --decider) would
    import from outside the installed packages."""
    return needs(references(path) + list(extra or []), resolved_path(path).parent, consent)
