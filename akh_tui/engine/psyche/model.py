"""The Jungian psyche (SPEC §9, seed 004): persona, shadow, archetype weights, individuation.

The psyche is user-edited TOML. Loading validates everything up front and reports the first
problem as an InputError naming the line and dotted field, so a bad edit changes nothing.
Saving writes the current values back into the document the user wrote (tomlkit), so their
comments, key order and layout survive an evolve-and-save cycle.
"""

from __future__ import annotations

import copy as _copy
import functools
import json
import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import tomlkit
from tomlkit.items import AoT, Comment, Null, Table, Whitespace

from ..errors import InputError, parse_toml, read_user_file, toml_error
from ..tomlpos import TomlLocator
from ..tools.specs import DANGER_LEVELS
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
_ROUND = 6

# Kept byte-identical to akh_tui/data/psyche/default.toml (a test compares them): the engine must
# start with a psyche even when the data folder is not shipped alongside the package.
DEFAULT_TOML = '''\
# The agent's psyche (SPEC §9, seed 004): how it presents itself, what it refuses to do,
# what it leans towards, and how far it has grown.
# Edits take effect at the next cycle. An invalid file changes nothing; the workbench names
# the line and field that is wrong. Every section and key may be left out, in which case
# the value shown here is used.

[persona]
# Only shapes how findings are written up; it never changes which tool is chosen.
name = "Scholar"
grammar_preference = "narrative"   # "narrative", "formal", "terse", or a path to a grammar TOML
traits = ["precise", "curious", "thorough"]
tone = ["clear", "methodical"]

[shadow]
# A pattern fires when any trigger is a case-insensitive substring of the action
# description "tool=<name> input=<input>", or when its capability clause holds.
# Leaving out veto_patterns or bias_patterns keeps the ones below; write
# `veto_patterns = []` to run without any.
# By default a tool a veto blocks is still offered: chosen, vetoed, chosen again once its
# recency wears off. `anticipate = true` here makes Decide leave it out instead.

# A veto stops the tool before it runs and counts as a shadow encounter, which is what
# drives individuation.
[[shadow.veto_patterns]]
name = "destructive_action"
triggers = ["delete all", "drop table", "rm -rf"]
# Also blocks any tool that can run programs at the highest danger, whatever its input
# says, because a harmless-looking input proves nothing about what the program does.
capability_triggers = ["process_exec"]
danger_level_threshold = "critical"   # safe < cautious < dangerous < critical
severity = 1.0
explanation = "Destructive actions require explicit user confirmation."

# A bias lets the action run; its severity (summed over every bias that fires) is only
# recorded, so it shows where the agent acts against its own grain.
[[shadow.bias_patterns]]
name = "prefer_internal_reasoning"
triggers = ["shell_exec", "http_fetch"]
severity = 0.2
explanation = "Prefer KG-based reasoning over external tool calls."

[archetypes]
# Each weight w in [0, 1] adds (w - 0.5) * 0.15 to the score of its tools, so 0.5 is
# neutral. Reflection moves a weight by 0.02 at a time within [0.1, 0.95].
sage = 0.7       # kg_query, infer_rules, reason, synthesize_triple
healer = 0.5     # gap_analysis, user_interact
explorer = 0.5   # file_io, http_fetch, shell_exec
guardian = 0.4   # memory_recall, similarity_search

[self_integration]
# Reflection writes these back; edit them only to reset or replay a session.
individuation_level = 0.1   # in [0, 1]; grows by 0.01 * min(shadow_encounters, 5) per reflection
last_evolution_cycle = 0
shadow_encounters = 0
rebalance_count = 0
# Recomputed from [archetypes] on load (ties go sage, healer, explorer, guardian), so
# editing it alone changes nothing.
dominant_archetype = "sage"
'''

_DEFAULT_DATA: dict[str, Any] = tomllib.loads(DEFAULT_TOML)

_SECTIONS = ("persona", "shadow", "archetypes", "self_integration")
_PERSONA_KEYS = ("name", "grammar_preference", "traits", "tone")
_SHADOW_KEYS = ("veto_patterns", "bias_patterns")
_PATTERN_KEYS = (
    "name", "triggers", "capability_triggers", "danger_level_threshold", "severity", "explanation",
)
# None means "absent": TOML has no null, so an unset threshold is simply not written.
_PATTERN_DEFAULTS: dict[str, Any] = {
    "triggers": [], "capability_triggers": [], "danger_level_threshold": None,
    "severity": 1.0, "explanation": "",
}
_SI_INTS = ("last_evolution_cycle", "shadow_encounters", "rebalance_count")
_SI_KEYS = ("individuation_level", *_SI_INTS, "dominant_archetype")


# --------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------


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
        return round(total, _ROUND), names


@dataclass
class SelfIntegration:
    individuation_level: float
    last_evolution_cycle: int
    shadow_encounters: int
    rebalance_count: int
    dominant_archetype: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _SI_KEYS}


def _dominant(weights: Mapping[str, float]) -> str:
    best = ARCHETYPES[0]
    for a in ARCHETYPES[1:]:
        if weights[a] > weights[best]:  # strict: earlier archetypes win ties
            best = a
    return best


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

    # -- construction ------------------------------------------------------------------

    @classmethod
    def default(cls) -> "Psyche":
        # from_toml(DEFAULT_TOML) without parsing it again: the text is ours, parsed once at
        # import, and tomlkit's stricter check is settled by the tests (every start of the
        # workbench and of `agent run` builds the default psyche; tomlkit took ~20 ms of it)
        psyche = _Validator(DEFAULT_TOML, None).build(_copy.deepcopy(_DEFAULT_DATA))
        psyche.source = None
        psyche._document = DEFAULT_TOML
        return psyche

    @classmethod
    def from_toml(cls, text: str, file: str | None = None) -> "Psyche":
        data = parse_toml(text, file)
        try:
            tomlkit.parse(text)  # occasionally stricter than tomllib; saving needs it to parse
        except Exception as exc:
            raise toml_error(exc, file, text) from None
        psyche = _Validator(text, file).build(data)
        psyche.source = file
        psyche._document = text
        return psyche

    @classmethod
    def from_dict(cls, data: dict, document: str | None = None) -> "Psyche":
        """The inverse of to_dict (validated the same way); `document` is the TOML text whose
        comments and layout a later save keeps. Saved states use this: no TOML parsing."""
        psyche = _Validator(document or "", None).build(data)
        psyche._document = document
        return psyche

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
        doc = tomlkit.parse(self._document if self._document is not None else DEFAULT_TOML)
        _write_into(doc, self)
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
        self.source = str(p)

    # -- behaviour ---------------------------------------------------------------------

    def dominant(self) -> str:
        return _dominant(self.archetypes)

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
            new = round(min(EVOLVE_MAX, max(EVOLVE_MIN, old + step)), _ROUND)
            if new != old:
                self.archetypes[archetype] = new
                weight_changed = True
                changes.append({
                    "kind": "archetype", "archetype": archetype, "tool": tool,
                    "rate": round(rate, _ROUND), "old": old, "new": new,
                })

        si = self.self_integration
        old_ind = si.individuation_level
        new_ind = round(min(1.0, old_ind + 0.01 * min(si.shadow_encounters, 5)), _ROUND)
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


# --------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------


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


class _Validator:
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

    def build(self, data: dict) -> Psyche:
        self.check_keys(data, _SECTIONS, "")
        persona = self.persona(data)
        shadow = self.shadow(data)
        archetypes = self.archetypes(data)
        si = self.self_integration(data)
        # The stored dominant archetype is derived data; trusting a stale one would make
        # the trace disagree with the weights it sits next to.
        si.dominant_archetype = _dominant(archetypes)
        return Psyche(persona, shadow, archetypes, si)

    def persona(self, data: dict) -> Persona:
        t = self.table(data, "persona")
        self.check_keys(t, _PERSONA_KEYS, "persona")
        d = _DEFAULT_DATA["persona"]
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
        self.check_keys(t, (*_SHADOW_KEYS, "anticipate"), "shadow")
        anticipate = t.get("anticipate", False)
        if not isinstance(anticipate, bool):
            raise self.fail(f"must be true or false, got {_type_name(anticipate)}", "shadow.anticipate")
        lists = {}
        for key in _SHADOW_KEYS:
            fld = f"shadow.{key}"
            raw = t.get(key, _DEFAULT_DATA["shadow"][key])
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
        self.check_keys(entry, _PATTERN_KEYS, pfld)
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
        severity = self.unit(entry.get("severity", _PATTERN_DEFAULTS["severity"]),
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
        d = _DEFAULT_DATA["archetypes"]
        return {a: self.unit(t.get(a, d[a]), f"archetypes.{a}") for a in ARCHETYPES}

    def self_integration(self, data: dict) -> SelfIntegration:
        t = self.table(data, "self_integration")
        self.check_keys(t, _SI_KEYS, "self_integration")
        d = _DEFAULT_DATA["self_integration"]
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


# --------------------------------------------------------------------------------------
# Line numbers. Neither tomllib nor tomlkit reports where a key sits, so the (already
# successfully parsed) text is scanned once to map every dotted field path, e.g.
# "shadow.veto_patterns[1].triggers[0]", to the line it starts on.
# --------------------------------------------------------------------------------------

def _plain(v: Any) -> Any:
    return v.unwrap() if hasattr(v, "unwrap") else v


def _same(a: Any, b: Any) -> bool:
    # 1 and 1.0 are the same weight; rewriting one as the other would be a needless edit.
    if _is_number(a) and _is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _body(container: Any) -> list:
    return container.value.body if isinstance(container, Table) else container.body


def _pop_tail(container: Any) -> list:
    """Detach the comments and blank lines that end ``container``'s text.

    In tomlkit they belong to the deepest last table, although they usually introduce
    whatever follows it in the file; anything appended after that table must go before
    them, or a "# Archetypes ..." comment ends up above a new shadow pattern.
    """
    if isinstance(container, AoT):
        return _pop_tail(container[-1]) if len(container) else []
    body = _body(container)
    end = len(body)
    while end > 0 and (body[end - 1][0] is None and isinstance(body[end - 1][1], Null)):
        end -= 1
    if end == 0:
        return []
    key, last = body[end - 1]
    if key is None and isinstance(last, (Whitespace, Comment)):
        start = end
        while start > 0 and body[start - 1][0] is None and isinstance(
            body[start - 1][1], (Whitespace, Comment, Null)
        ):
            start -= 1
        tail = [it for _, it in body[start:] if not isinstance(it, Null)]
        del body[start:]
        return tail
    if isinstance(last, Table):
        return _pop_tail(last)
    if isinstance(last, AoT) and len(last):
        return _pop_tail(last[-1])
    return []


def _push_tail(item: Any, tail: list) -> None:
    """Re-attach a tail detached by _pop_tail at the end of ``item``'s text."""
    if not tail:
        return
    while True:
        if isinstance(item, AoT):
            item = item[-1]
            continue
        body = _body(item)
        live = [it for k, it in body if not isinstance(it, Null)]
        if live and isinstance(live[-1], (Table, AoT)):
            item = live[-1]
            continue
        break
    _body(item).extend((None, it) for it in tail)


def _ends_with_blank_line(table: Table) -> bool:
    live = [it for _, it in table.value.body if not isinstance(it, Null)]
    return bool(live) and isinstance(live[-1], Whitespace) and "\n" in live[-1].s


def _blank_line_before(table: Table) -> None:
    # New headers get a blank line above them, like every header in a hand-written file.
    if "\n" not in table.trivia.indent:
        table.trivia.indent = "\n" + table.trivia.indent


def _add_key(table: Table, key: str, value: Any) -> None:
    """Add a plain key after the table's last key-value, before its trailing comments."""
    body = table.value.body
    if any(isinstance(it, (Table, AoT)) for _, it in body):
        # tomlkit itself puts a plain key above the sub-table headers, where it must be.
        item = tomlkit.item(value)
        item.trivia.trail = "\n\n"
        table.append(key, item)
        return
    keep = 0
    for n, (k, it) in enumerate(body):
        if k is not None:
            keep = n + 1
    if keep == 0:
        # No keys yet: leading comments describe the table, so the key goes after them.
        keep = len(body)
        while keep > 0 and isinstance(body[keep - 1][1], (Whitespace, Null)):
            keep -= 1
    tail = body[keep:]
    del body[keep:]
    table.append(key, value)
    body.extend(tail)


def _append_child(parent: Any, key: str, item: Any) -> None:
    """Append a table or array of tables at the end of ``parent``, keeping its tail last."""
    tail = _pop_tail(parent)
    parent.append(key, item)
    first = item[0] if isinstance(item, AoT) else item
    if isinstance(first, Table) and not first.is_super_table():
        _blank_line_before(first)
    _push_tail(item, tail)


def _sync_fields(target: Any, values: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """Bring ``target`` (a table) to ``values``; a missing key means its default, None absent."""
    for k, v in values.items():
        if k in target:
            if v is None:
                del target[k]
            elif not _same(_plain(target[k]), v):
                target[k] = v
        elif v is not None and not _same(v, defaults.get(k)):
            if isinstance(target, Table):
                _add_key(target, k, v)
            else:
                target[k] = v


def _new_section(values: Mapping[str, Any]) -> Table:
    t = tomlkit.table()
    for k, v in values.items():
        if v is not None:
            t.add(k, v)
    return t


def _write_into(doc: tomlkit.TOMLDocument, psyche: Psyche) -> None:
    wanted = psyche.to_dict()
    for section in ("persona", "archetypes", "self_integration"):
        values = wanted[section]
        if section in doc:
            _sync_fields(doc[section], values, _DEFAULT_DATA[section])
        elif values != _DEFAULT_DATA[section]:
            _append_child(doc, section, _new_section(values))
    for key in _SHADOW_KEYS:
        _sync_patterns(doc, key, wanted["shadow"][key])
    _sync_anticipate(doc, bool(wanted["shadow"].get("anticipate")))


def _sync_anticipate(doc: tomlkit.TOMLDocument, on: bool) -> None:
    """`[shadow] anticipate`: rewritten where the user wrote it, added only when turned on."""
    shadow: Any = doc.get("shadow")
    if shadow is not None and "anticipate" in shadow:
        if bool(shadow["anticipate"]) != on:
            shadow["anticipate"] = on
        return
    if not on:
        return
    if shadow is None:
        shadow = tomlkit.table()
        shadow.append("anticipate", True)
        _append_child(doc, "shadow", shadow)
    else:
        _add_key(shadow, "anticipate", True)


def _pattern_fields(p: Mapping[str, Any]) -> dict[str, Any]:
    return {k: p.get(k) for k in _PATTERN_KEYS}


def _sync_patterns(doc: tomlkit.TOMLDocument, key: str, patterns: list[dict]) -> None:
    shadow: Any = doc.get("shadow")  # a tomlkit Table (or a proxy of one); tomlkit types it loosely
    current = shadow.get(key) if shadow is not None else None
    if current is None:
        if patterns == _DEFAULT_DATA["shadow"][key]:
            return  # still implied by the missing key
        if patterns:
            value: Any = tomlkit.aot()
            for p in patterns:
                value.append(_new_section(_pattern_fields(p)))
        else:
            value = tomlkit.array()
        if shadow is None:
            # Filled before it is attached, so the document's trailing comments stay last.
            shadow = tomlkit.table(is_super_table=bool(patterns))
            shadow.append(key, value)
            _append_child(doc, "shadow", shadow)
        elif patterns:
            _append_child(shadow, key, value)
        else:
            _add_key(shadow, key, value)
        return

    if not patterns:
        if not isinstance(current, AoT) and not len(current):
            return  # already `key = []`: rewriting it would drop its comments
        # An explicit empty list: a missing key would bring the defaults back.
        tail = _pop_tail(current) if isinstance(current, AoT) else []
        live = [it for _, it in _body(shadow) if not isinstance(it, Null)]
        was_last = bool(live) and live[-1] is current
        del shadow[key]
        empty = tomlkit.array()
        _add_key(shadow, key, empty)
        if tail and was_last and any(isinstance(it, (Table, AoT)) for _, it in _body(shadow)):
            _push_tail(shadow, tail)
        elif tail:
            # The comments introduced what followed the array; keep them right after the
            # key that replaced it (a trail, because body indices are tomlkit's own).
            item = shadow.value.item(key) if isinstance(shadow, Table) else shadow.item(key)
            item.trivia.trail = "\n" + "".join(it.as_string() for it in tail)  # type: ignore[union-attr]
        return

    elements = list(current)
    used: set[int] = set()
    ordered: list[Any] = []
    for p in patterns:
        found = None
        for n, el in enumerate(elements):
            if n not in used and _plain(el.get("name")) == p["name"]:
                found = n
                break
        if found is not None:
            used.add(found)
            _sync_fields(elements[found], _pattern_fields(p), _PATTERN_DEFAULTS)
            ordered.append(elements[found])
        elif isinstance(current, AoT):
            ordered.append(_new_section(_pattern_fields(p)))
        else:
            it = tomlkit.inline_table()
            for k, v in _pattern_fields(p).items():
                if v is not None:
                    it[k] = v
            ordered.append(it)
    if [id(e) for e in ordered] == [id(e) for e in elements]:
        return
    if isinstance(current, AoT):
        # The old last element's tail introduces whatever follows the array; it stays at
        # the array's end, whichever element now ends it.
        tail = _pop_tail(elements[-1])
        while len(current):
            del current[-1]
        for n, el in enumerate(ordered):
            if n and not _ends_with_blank_line(ordered[n - 1]):
                _blank_line_before(el)
            current.append(el)
        _push_tail(ordered[-1], tail)
    else:
        while len(current):
            del current[-1]
        for el in ordered:
            current.append(el)
