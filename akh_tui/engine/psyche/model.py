"""The Jungian psyche (SPEC §9, seed 004) as one value: its parts (`parts.py`) and the TOML text
they came from, so saving keeps the user's comments and layout.

The psyche is user-edited TOML. Loading validates everything up front (`validate.py`) and reports
the first problem as an InputError naming the line and dotted field, so a bad edit changes
nothing. Saving writes the current values back into the document the user wrote (`document.py`).
"""

from __future__ import annotations

import copy as _copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import tomlkit

from ..errors import parse_toml, read_user_file, toml_error
from .document import write_into
from .parts import (
    ARCHETYPES, DEFAULT_DATA, DEFAULT_TOML, EVOLVE_MAX, EVOLVE_MIN, EVOLVE_STEP, FAILURE_BELOW, MIN_USES, ROUND,
    SUCCESS_ABOVE, Persona, SelfIntegration, Shadow, ShadowPattern, dominant_of,
)
from .validate import Parts, Validator


class Psyche:
    """The whole psyche plus the text it came from (so saving can keep the user's layout)."""

    def __init__(
        self,
        persona: Persona,
        shadow: Shadow,
        archetypes: dict[str, float],
        self_integration: SelfIntegration,
        source: str | None = None,
        document: str | None = None,
    ) -> None:
        self.persona = persona
        self.shadow = shadow
        self.archetypes = archetypes
        self.self_integration = self_integration
        self.source = source
        # The TOML text values are written back into. Kept as text rather than a live
        # tomlkit document so copies are cheap and cannot share mutable tomlkit state.
        self._document = document
        # The tomlkit parse of `_document` that from_toml made anyway (its stricter check), used
        # by the first to_toml instead of parsing the text again: the editor's apply parses the
        # user's text once (text -> Psyche -> text, then the run takes the Psyche as it is).
        # Never copied, dropped once used or once `_document` changes.
        self._parsed: tomlkit.TOMLDocument | None = None

    @classmethod
    def _of(cls, parts: Parts, source: str | None, document: str | None) -> "Psyche":
        return cls(parts.persona, parts.shadow, parts.archetypes, parts.self_integration, source, document)

    # -- construction ------------------------------------------------------------------

    @classmethod
    def default(cls) -> "Psyche":
        # from_toml(DEFAULT_TOML) without parsing it again: the text is ours, parsed once at
        # import, and tomlkit's stricter check is settled by the tests (every start of the
        # workbench and of `agent run` builds the default psyche; tomlkit took ~20 ms of it)
        return cls._of(Validator(DEFAULT_TOML, None).build(_copy.deepcopy(DEFAULT_DATA)), None, DEFAULT_TOML)

    @classmethod
    def from_toml(cls, text: str, file: str | None = None) -> "Psyche":
        data = parse_toml(text, file)
        try:
            parsed = tomlkit.parse(text)  # occasionally stricter than tomllib; saving needs it to parse
        except Exception as exc:
            raise toml_error(exc, file, text) from None
        psyche = cls._of(Validator(text, file).build(data), file, text)
        psyche._parsed = parsed
        return psyche

    @classmethod
    def from_dict(cls, data: dict, document: str | None = None) -> "Psyche":
        """The inverse of to_dict (validated the same way); `document` is the TOML text whose
        comments and layout a later save keeps. Saved states use this: no TOML parsing."""
        return cls._of(Validator(document or "", None).build(data), None, document)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Psyche":
        return cls.from_toml(read_user_file(path, "psyche file"), file=str(Path(path)))

    # -- persistence -------------------------------------------------------------------

    def to_toml(self) -> str:
        # the session store saves the psyche every cycle and tomlkit takes milliseconds, while
        # the psyche changes only at reflections and edits: reuse the text while its values
        # and document are the same
        key = (self._document, json.dumps(self.to_dict(), sort_keys=True))
        cached = getattr(self, "_toml_cache", None)
        if cached is not None and cached[0] == key:
            return cached[1]
        doc, self._parsed = self._parsed, None
        if doc is None:
            doc = tomlkit.parse(self._document if self._document is not None else DEFAULT_TOML)
        write_into(doc, self.to_dict())
        text = doc.as_string()
        self._toml_cache = (key, text)
        return text

    def save(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        text = self.to_toml()
        # Refuse to write a file that would not load again (e.g. a weight set to 1.5 in
        # code): the user would only find out at the next start.
        Psyche.from_toml(text, file=str(p))
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self._document = text
        self._parsed = None
        self.source = str(p)

    # -- behaviour ---------------------------------------------------------------------

    def dominant(self) -> str:
        return dominant_of(self.archetypes)

    def archetype_bonus(self, archetype: str) -> float:
        return (self.archetypes[archetype] - 0.5) * 0.15

    def record_shadow_encounter(self) -> None:
        self.self_integration.shadow_encounters += 1

    def evolve(
        self,
        tool_stats: Mapping[str, tuple[int, int]],
        tool_archetypes: Mapping[str, str],
        cycle: int,
    ) -> list[dict]:
        """Reflection-time growth (SPEC §9). ``tool_stats[tool] = (uses, successes)``.

        Tools missing from ``tool_archetypes`` are skipped. Returns one dict per real change.
        """
        changes: list[dict] = []
        weight_changed = False
        for tool in sorted(tool_stats):
            uses, successes = tool_stats[tool]
            if uses < 0 or successes < 0 or successes > uses:
                raise ValueError(
                    f"tool_stats[{tool!r}] must be (uses, successes) with 0 <= successes <= uses,"
                    f" got {(uses, successes)!r}"
                )
            if uses < MIN_USES or tool not in tool_archetypes:
                continue
            archetype = tool_archetypes[tool]
            if archetype not in self.archetypes:
                raise ValueError(f"tool {tool!r} has unknown archetype {archetype!r}")
            rate = successes / uses
            if rate > SUCCESS_ABOVE:
                step = EVOLVE_STEP
            elif rate < FAILURE_BELOW:
                step = -EVOLVE_STEP
            else:
                continue
            old = self.archetypes[archetype]
            new = round(min(EVOLVE_MAX, max(EVOLVE_MIN, old + step)), ROUND)
            if new != old:
                self.archetypes[archetype] = new
                weight_changed = True
                changes.append({
                    "kind": "archetype", "archetype": archetype, "tool": tool,
                    "rate": round(rate, ROUND), "old": old, "new": new,
                })

        si = self.self_integration
        old_ind = si.individuation_level
        new_ind = round(min(1.0, old_ind + 0.01 * min(si.shadow_encounters, 5)), ROUND)
        if new_ind != old_ind:
            si.individuation_level = new_ind
            changes.append({"kind": "individuation", "old": old_ind, "new": new_ind})

        old_dom, new_dom = si.dominant_archetype, self.dominant()
        if new_dom != old_dom:
            si.dominant_archetype = new_dom
            changes.append({"kind": "dominant", "old": old_dom, "new": new_dom})

        if weight_changed:
            si.rebalance_count += 1
        si.last_evolution_cycle = cycle
        return changes

    def without_veto_for_tool(self, tool: str) -> "Psyche":
        """The psyche less the veto `with_veto_for_tool` added for `tool` (the same if none)."""
        result = self.copy()
        result.shadow.veto_patterns = [p for p in result.shadow.veto_patterns if p.name != f"no_{tool}"]
        return result

    def with_veto_for_tool(self, tool: str) -> "Psyche":
        result = self.copy()
        name = f"no_{tool}"
        if any(p.name == name for p in result.shadow.veto_patterns):
            return result
        result.shadow.veto_patterns.append(ShadowPattern(
            name=name,
            # The trailing space anchors the tool name: the action description continues
            # with " input=", so "tool=kg_query " never matches "tool=kg_query_x".
            triggers=[f"tool={tool} "],
            severity=1.0,
            explanation=f"Vetoed {tool} from the workbench.",
        ))
        return result

    def snapshot(self) -> dict:
        return {
            "archetypes": {a: self.archetypes[a] for a in ARCHETYPES},
            "individuation": self.self_integration.individuation_level,
            "shadow_encounters": self.self_integration.shadow_encounters,
            "dominant": self.dominant(),
            "persona": self.persona.name,
        }

    def copy(self) -> "Psyche":
        return Psyche(
            _copy.deepcopy(self.persona),
            _copy.deepcopy(self.shadow),
            dict(self.archetypes),
            _copy.deepcopy(self.self_integration),
            source=self.source,
            document=self._document,
        )

    def written_as(self, text: str) -> "Psyche":
        """A copy whose document is `text`, the TOML `to_toml` wrote these values to: the psyche
        `from_toml(text)` would build, without parsing `text` again (a recorded edit carries both
        the text, which a rewind parses, and this, which the live run takes)."""
        psyche = self.copy()
        psyche.source = None
        psyche._document = text
        return psyche

    def to_dict(self) -> dict[str, Any]:
        """Every value, as plain data (what to_toml writes)."""
        si = self.self_integration.to_dict()
        si["dominant_archetype"] = self.dominant()
        return {
            "persona": self.persona.to_dict(),
            "shadow": {
                "veto_patterns": [p.to_dict() for p in self.shadow.veto_patterns],
                "bias_patterns": [p.to_dict() for p in self.shadow.bias_patterns],
                # only when set: a default psyche's saved state and trace keep their bytes
                **({"anticipate": True} if self.shadow.anticipate else {}),
            },
            "archetypes": {a: self.archetypes[a] for a in ARCHETYPES},
            "self_integration": si,
        }

    def __eq__(self, other: object) -> bool:
        # Compares values only (dominant derived from the weights), not source or layout.
        if not isinstance(other, Psyche):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Psyche({self.snapshot()!r}, source={self.source!r})"
