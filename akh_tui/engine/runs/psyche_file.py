"""The psyche the user saves (ctrl+w), and where: the data dir's psyche folder, a served tab's own,
never a bundled file: a part of `Run` (run.py), the one door to a run."""

from __future__ import annotations

from pathlib import Path

from ..config import served_process
from ..errors import InputError
from ..paths import Locations
from ..psyche.model import Psyche
from .base import RunBase


class PsycheFileChanged(InputError):
    """The psyche file changed on disk since this run loaded or saved it: saving again would
    overwrite someone's edits, so the caller must ask first (and pass force=True)."""


class PsycheOnDisk(RunBase):
    """The psyche the user saves (ctrl+w), and where."""

    def psyche_file(self) -> Path | None:
        """Where the workbench saves this run's psyche: under the data dir, per scenario (the
        next run of the scenario starts from it); in a served tab, under the data dir's served/
        folder (`Locations.saved_psyche`). A bundled scenario's own file is never written."""
        if self.scenario is None:
            return None
        return self._psyche_file or self.locations.saved_psyche(self.scenario.name)

    def save_psyche(self, psyche: Psyche | str, path: Path | None = None, force: bool = False) -> Path:
        """Write the psyche (keeping the user's comments), creating folders. A file that changed
        on disk since this run read or wrote it is not overwritten unless `force`."""
        p = Psyche.from_toml(psyche) if isinstance(psyche, str) else psyche
        target = Path(path) if path is not None else self.psyche_file()
        if target is None:
            raise InputError("a replayed trace has no psyche file to save to")
        served = self.locations.served_dir.resolve()
        if served_process() and served not in (target.resolve(), *target.resolve().parents):
            raise InputError(f"a served tab saves only under {served}, which runs outside `akh-tui serve` never "
                             f"read", file=str(target))
        known = self._psyche_disk.get(target)
        try:
            now = target.read_text(encoding="utf-8") if target.exists() else None
        except (OSError, UnicodeDecodeError):
            now = "\0unreadable"
        if now is not None and now != known and not force:
            raise PsycheFileChanged(
                "the file changed on disk since this run read or saved it: saving would overwrite it "
                "(save again to overwrite; your text is kept)", file=str(target))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            p.save(target)
        except OSError as exc:
            raise InputError(f"not saved: {exc.strerror or exc}", file=str(target)) from None
        self._psyche_disk[target] = target.read_text(encoding="utf-8")
        self._psyche_file = target
        return target
