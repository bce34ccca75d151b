"""Checking a psyche the user wrote: every problem an InputError naming the line and the dotted
field (`shadow.veto_patterns[1].triggers[0]`), so a bad edit changes nothing."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from ..errors import InputError
from ..tomlpos import TomlLocator
from ..tools.specs import DANGER_LEVELS
from .parts import (
    ARCHETYPES, CAPABILITIES, DEFAULT_DATA, PATTERN_DEFAULTS, PATTERN_KEYS, PERSONA_KEYS, SECTIONS,
    SHADOW_KEYS, SI_KEYS, Persona, SelfIntegration, Shadow, ShadowPattern, dominant_of,
)


class Parts(NamedTuple):
    """What a valid psyche is made of (`model.Psyche` holds them with their text)."""

    persona: Persona
    shadow: Shadow
    archetypes: dict[str, float]
    self_integration: SelfIntegration


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a table"
    return f"a {type(v).__name__}"  # dates and times


class Validator:
    def __init__(self, text: str, file: str | None) -> None:
        self.file = file
        self.text = text

    @functools.cached_property
    def locator(self) -> TomlLocator:
        # line numbers are looked up only for an error: a valid psyche is not scanned twice
        return TomlLocator(self.text)

    def fail(self, message: str, fld: str) -> InputError:
        return InputError(message, file=self.file, line=self.locator.line(fld), field=fld)

    def check_keys(self, table: dict, allowed: tuple[str, ...], prefix: str) -> None:
        for k in table:
            if k not in allowed:
                fld = f"{prefix}.{k}" if prefix else k
                raise self.fail(
                    f"unknown key {k!r} (expected one of: {', '.join(allowed)})", fld
                )

    def table(self, data: dict, key: str, prefix: str = "") -> dict:
        fld = f"{prefix}.{key}" if prefix else key
        v = data.get(key, {})
        if not isinstance(v, dict):
            raise self.fail(f"must be a table, got {_type_name(v)}", fld)
        return v

    def string(self, v: Any, fld: str, *, non_empty: bool = False) -> str:
        if not isinstance(v, str):
            raise self.fail(f"must be a string, got {_type_name(v)}", fld)
        if non_empty and not v.strip():
            raise self.fail("must not be empty", fld)
        return v

    def strings(self, v: Any, fld: str, *, choices: tuple[str, ...] | None = None,
                what: str = "string") -> list[str]:
        if not isinstance(v, list):
            raise self.fail(f"must be a list of {what}s, got {_type_name(v)}", fld)
        out = []
        for i, item in enumerate(v):
            ifld = f"{fld}[{i}]"
            self.string(item, ifld)
            if choices is not None and item not in choices:
                raise self.fail(
                    f"unknown {what} {item!r} (expected one of: {', '.join(choices)})", ifld
                )
            out.append(item)
        return out

    def unit(self, v: Any, fld: str) -> float:
        if not _is_number(v):
            raise self.fail(f"must be a number in [0, 1], got {_type_name(v)}", fld)
        if not 0.0 <= v <= 1.0:
            raise self.fail(f"must be in [0, 1], got {v}", fld)
        return float(v)

    def count(self, v: Any, fld: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.fail(f"must be a non-negative integer, got {_type_name(v)}", fld)
        if v < 0:
            raise self.fail(f"must be a non-negative integer, got {v}", fld)
        return v

    def choice(self, v: Any, fld: str, choices: tuple[str, ...], what: str) -> str:
        self.string(v, fld)
        if v not in choices:
            raise self.fail(f"unknown {what} {v!r} (expected one of: {', '.join(choices)})", fld)
        return v

    # -- sections ----------------------------------------------------------------------

    def build(self, data: dict) -> Parts:
        self.check_keys(data, SECTIONS, "")
        persona = self.persona(data)
        shadow = self.shadow(data)
        archetypes = self.archetypes(data)
        si = self.self_integration(data)
        # The stored dominant archetype is derived data; trusting a stale one would make
        # the trace disagree with the weights it sits next to.
        si.dominant_archetype = dominant_of(archetypes)
        return Parts(persona, shadow, archetypes, si)

    def persona(self, data: dict) -> Persona:
        t = self.table(data, "persona")
        self.check_keys(t, PERSONA_KEYS, "persona")
        d = DEFAULT_DATA["persona"]
        get = lambda k: t.get(k, d[k])  # noqa: E731
        return Persona(
            name=self.string(get("name"), "persona.name", non_empty=True),
            grammar_preference=self.string(
                get("grammar_preference"), "persona.grammar_preference", non_empty=True
            ),
            traits=self.strings(get("traits"), "persona.traits"),
            tone=self.strings(get("tone"), "persona.tone"),
        )

    def shadow(self, data: dict) -> Shadow:
        t = self.table(data, "shadow")
        self.check_keys(t, (*SHADOW_KEYS, "anticipate"), "shadow")
        anticipate = t.get("anticipate", False)
        if not isinstance(anticipate, bool):
            raise self.fail(f"must be true or false, got {_type_name(anticipate)}", "shadow.anticipate")
        lists = {}
        for key in SHADOW_KEYS:
            fld = f"shadow.{key}"
            raw = t.get(key, DEFAULT_DATA["shadow"][key])
            if not isinstance(raw, list):
                raise self.fail(f"must be a list of tables ([[{fld}]]), got {_type_name(raw)}", fld)
            patterns: list[ShadowPattern] = []
            seen: dict[str, int] = {}
            for i, entry in enumerate(raw):
                pfld = f"{fld}[{i}]"
                p = self.pattern(entry, pfld)
                if p.name in seen:
                    raise self.fail(
                        f"duplicate pattern name {p.name!r} (first used by {fld}[{seen[p.name]}])",
                        f"{pfld}.name",
                    )
                seen[p.name] = i
                patterns.append(p)
            lists[key] = patterns
        return Shadow(lists["veto_patterns"], lists["bias_patterns"], anticipate)

    def pattern(self, entry: Any, pfld: str) -> ShadowPattern:
        if not isinstance(entry, dict):
            raise self.fail(f"must be a table, got {_type_name(entry)}", pfld)
        self.check_keys(entry, PATTERN_KEYS, pfld)
        if "name" not in entry:
            raise self.fail("missing required key 'name'", f"{pfld}.name")
        name = self.string(entry["name"], f"{pfld}.name", non_empty=True)
        triggers = self.strings(entry.get("triggers", []), f"{pfld}.triggers")
        for i, trig in enumerate(triggers):
            if not trig.strip():
                # "" is a substring of every action description: it would fire on everything.
                raise self.fail("trigger must not be blank (it would match every action)",
                                f"{pfld}.triggers[{i}]")
        caps = self.strings(entry.get("capability_triggers", []), f"{pfld}.capability_triggers",
                            choices=CAPABILITIES, what="capability")
        threshold = entry.get("danger_level_threshold")
        if threshold is not None:
            threshold = self.choice(threshold, f"{pfld}.danger_level_threshold",
                                    DANGER_LEVELS, "danger level")
        severity = self.unit(entry.get("severity", PATTERN_DEFAULTS["severity"]),
                             f"{pfld}.severity")
        explanation = self.string(entry.get("explanation", ""), f"{pfld}.explanation")
        if not triggers and not caps and threshold is None:
            # Such a pattern silently never fires; almost always a typo'd or emptied list.
            raise self.fail(
                "pattern can never fire: give it triggers, capability_triggers or "
                "danger_level_threshold", pfld,
            )
        return ShadowPattern(name, triggers, caps, threshold, severity, explanation)

    def archetypes(self, data: dict) -> dict[str, float]:
        t = self.table(data, "archetypes")
        self.check_keys(t, ARCHETYPES, "archetypes")
        d = DEFAULT_DATA["archetypes"]
        return {a: self.unit(t.get(a, d[a]), f"archetypes.{a}") for a in ARCHETYPES}

    def self_integration(self, data: dict) -> SelfIntegration:
        t = self.table(data, "self_integration")
        self.check_keys(t, SI_KEYS, "self_integration")
        d = DEFAULT_DATA["self_integration"]
        get = lambda k: t.get(k, d[k])  # noqa: E731
        return SelfIntegration(
            individuation_level=self.unit(
                get("individuation_level"), "self_integration.individuation_level"
            ),
            last_evolution_cycle=self.count(
                get("last_evolution_cycle"), "self_integration.last_evolution_cycle"
            ),
            shadow_encounters=self.count(
                get("shadow_encounters"), "self_integration.shadow_encounters"
            ),
            rebalance_count=self.count(get("rebalance_count"), "self_integration.rebalance_count"),
            dominant_archetype=self.choice(
                get("dominant_archetype"), "self_integration.dominant_archetype",
                ARCHETYPES, "archetype",
            ),
        )
