"""The psyche's parts (SPEC §9, seed 004): persona, shadow patterns, self-integration, the
archetypes, and the shipped default they fall back to.

`validate.py` builds these from user TOML, `document.py` writes them back into it, and `model.py`
holds them together as a `Psyche`.
"""

from __future__ import annotations

import copy as _copy
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .triggers import PatternIndex, clause_holds, list_key

ARCHETYPES = ("sage", "healer", "explorer", "guardian")  # also the tie order for dominant
CAPABILITIES = (
    "read_kg", "write_kg", "ask_user", "read_fs", "write_fs", "network", "process_exec",
    "read_memory",
)

# Evolution constants (SPEC §9). Weights are rounded so that repeated ±0.02 steps give the
# same decimal strings in every trace instead of accumulating binary float noise.
EVOLVE_STEP = 0.02
EVOLVE_MIN, EVOLVE_MAX = 0.1, 0.95
SUCCESS_ABOVE, FAILURE_BELOW = 0.7, 0.3
MIN_USES = 2
ROUND = 6

# Kept byte-identical to akh_tui/data/psyche/default.toml (a test compares them): the engine must
# start with a psyche even when the data folder is not shipped alongside the package.

# The shipped default psyche, package data (akh_tui/data/psyche/default.toml): every key a user
# leaves out takes its value from here, and a run without a psyche file starts with it. Read from
# the package, not from AKH_TUI_BUNDLED, so the engine's defaults cannot be swapped by a folder.
DEFAULT_TOML = (Path(__file__).resolve().parents[2] / "data" / "psyche" / "default.toml").read_text(encoding="utf-8")
DEFAULT_DATA: dict[str, Any] = tomllib.loads(DEFAULT_TOML)

SECTIONS = ("persona", "shadow", "archetypes", "self_integration")
PERSONA_KEYS = ("name", "grammar_preference", "traits", "tone")
SHADOW_KEYS = ("veto_patterns", "bias_patterns")
PATTERN_KEYS = (
    "name", "triggers", "capability_triggers", "danger_level_threshold", "severity", "explanation",
)
# None means "absent": TOML has no null, so an unset threshold is simply not written.
PATTERN_DEFAULTS: dict[str, Any] = {
    "triggers": [], "capability_triggers": [], "danger_level_threshold": None,
    "severity": 1.0, "explanation": "",
}
SI_INTS = ("last_evolution_cycle", "shadow_encounters", "rebalance_count")
SI_KEYS = ("individuation_level", *SI_INTS, "dominant_archetype")


@dataclass
class Persona:
    name: str
    grammar_preference: str
    traits: list[str]
    tone: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "grammar_preference": self.grammar_preference,
            "traits": list(self.traits), "tone": list(self.tone),
        }


@dataclass
class ShadowPattern:
    name: str
    triggers: list[str] = field(default_factory=list)
    capability_triggers: list[str] = field(default_factory=list)
    danger_level_threshold: str | None = None
    severity: float = 1.0
    explanation: str = ""

    def matches(self, action_desc: str, capabilities: Iterable[str], danger: str) -> bool:
        desc = action_desc.lower()
        if any(t.lower() in desc for t in self.triggers):
            return True
        return clause_holds(self, tuple(capabilities), danger)

    def to_dict(self) -> dict[str, Any]:
        """The pattern as written in TOML; absent optional fields are left out."""
        d: dict[str, Any] = {"name": self.name, "triggers": list(self.triggers)}
        if self.capability_triggers:
            d["capability_triggers"] = list(self.capability_triggers)
        if self.danger_level_threshold is not None:
            d["danger_level_threshold"] = self.danger_level_threshold
        d["severity"] = self.severity
        d["explanation"] = self.explanation
        return d


@dataclass
class Shadow:
    veto_patterns: list[ShadowPattern]
    bias_patterns: list[ShadowPattern]
    # SPEC §9: Decide leaves out a tool a veto would block (default: it is offered, chosen and
    # vetoed at act, SPEC §4, which is what the veto demo shows)
    anticipate: bool = False

    # Both checks match a whole list at once (triggers.PatternIndex), with the results of
    # trying each pattern in turn: 10,000 vetoes cost 83 ms a cycle one by one.
    def _index(self, patterns: list[ShadowPattern]) -> PatternIndex[ShadowPattern]:
        cache = self.__dict__.setdefault("_indexes", {})
        which = "veto" if patterns is self.veto_patterns else "bias"
        index = cache.get(which)
        if index is None or index.key != list_key(patterns):
            index = cache[which] = PatternIndex(patterns)
        return index

    def __deepcopy__(self, memo) -> "Shadow":  # the indexes are rebuilt, not copied
        return Shadow(_copy.deepcopy(self.veto_patterns, memo), _copy.deepcopy(self.bias_patterns, memo),
                      self.anticipate)

    def check_veto(
        self, action_desc: str, capabilities: Iterable[str], danger: str
    ) -> ShadowPattern | None:
        return self._index(self.veto_patterns).first(action_desc, tuple(capabilities), danger)

    def check_bias(
        self, action_desc: str, capabilities: Iterable[str], danger: str
    ) -> tuple[float, list[str]]:
        total = 0.0
        names: list[str] = []
        for p in self._index(self.bias_patterns).every(action_desc, tuple(capabilities), danger):
            total += p.severity
            names.append(p.name)
        return round(total, ROUND), names


@dataclass
class SelfIntegration:
    individuation_level: float
    last_evolution_cycle: int
    shadow_encounters: int
    rebalance_count: int
    dominant_archetype: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in SI_KEYS}


def dominant_of(weights: Mapping[str, float]) -> str:
    best = ARCHETYPES[0]
    for a in ARCHETYPES[1:]:
        if weights[a] > weights[best]:  # strict: earlier archetypes win ties
            best = a
    return best
