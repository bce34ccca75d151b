"""A run's tools and its decider: the built-ins, installed plugins and the scenario's own.

Tools come from three places, in this order (the score table's order):
1. the eleven built-ins (tools.py);
2. installed packages' entry points, group `akh_tui.tools`, by entry point name;
3. the scenario's `tools = ["pkg.module:make_tool"]` (a module beside the scenario file may be
   named by its file's stem). A module from outside the installed packages is imported only
   from a folder the user agreed to (trust.py); otherwise it is left out, nothing imported.

A reference names a `Tool`, a list of them, or a callable returning either. A bad plugin never
stops a run: one that fails to import, returns something that is not a tool, declares an
invalid spec or clashes with a tool's name is left out and named in `problems` (plugin,
entry point or module, the error). Calls into a plugin are guarded (`guarded_offer`,
`guarded_run`): a raising offer means "not offered" with the reason, a raising run a failed
cycle, a wrong return type either of those, and a call over its time budget turns the tool off
for the rest of the run. A run's result is checked field by field before the agent reads it:
plain `(subject, predicate, object)` labels are added to the graph as the tool's, anything else
the agent cannot use is a failed cycle naming the plugin and the field. The clock is read only to enforce the budget, never recorded.

Listing (`entry_point_rows`) reads entry point metadata only: no plugin is imported.
"""

from __future__ import annotations

import importlib
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from ..knowledge.kg import Triple
from .api import Offer, Tool, ToolResult, is_tool
from .specs import DANGER_LEVELS, ToolSpec, danger_index

if TYPE_CHECKING:
    from importlib import metadata

    from ..goals.context import GoalContext
    from .api import ToolContext

TOOL_GROUP = "akh_tui.tools"
DECIDER_GROUP = "akh_tui.deciders"
ARCHETYPES = ("sage", "healer", "explorer", "guardian")
BUILTIN = "built-in"
CALL_BUDGET = 5.0  # seconds one offer or run of a plugin may take before the tool is turned off


class PluginError(Exception):
    """A plugin that cannot be used, with words naming it."""


class NotAgreed(PluginError):
    """A plugin from a folder the user has not agreed to run code from: nothing was imported."""


@dataclass
class Entry:
    tool: Any  # a Tool (or an object shaped like one)
    spec: ToolSpec
    origin: str  # "built-in", "entry point <dist>: <module:attr>", "scenario <file>: <module:attr>"
    plugin: bool
    ref: str | None = None  # the scenario's `module:attr` it came from (what a hot reload replaces)

    @property
    def name(self) -> str:
        return self.spec.name


def _check_spec(spec: Any) -> str | None:
    """What is wrong with a plugin's declaration, or None."""
    if not isinstance(spec, ToolSpec):
        return f"its spec is a {type(spec).__name__}, not a ToolSpec"
    if not isinstance(spec.name, str) or not spec.name.isidentifier():
        return f"tool name {spec.name!r} is not an identifier"
    if spec.archetype not in ARCHETYPES:
        return f"archetype {spec.archetype!r} is not one of {', '.join(ARCHETYPES)}"
    if spec.danger not in DANGER_LEVELS:
        return f"danger {spec.danger!r} is not one of {', '.join(DANGER_LEVELS)}"
    if not isinstance(spec.capabilities, tuple) or not all(isinstance(c, str) and c.isidentifier() for c in spec.capabilities):
        return "capabilities must be a tuple of identifiers"
    if not isinstance(spec.profile, tuple) or not spec.profile or not all(isinstance(w, str) and w for w in spec.profile):
        return "profile must be a non-empty tuple of keywords"
    return None


def _import(ref: str, base: Path | None) -> Any:
    """The object `module:attr` names; a module beside the scenario (`base`) is found first.

    Before anything is imported, where the module would come from is looked up (trust.py):
    an installed one is imported as any package is; one from a folder outside the installed
    packages (the scenario's, the current directory, any other) only when the user agreed for
    that folder, else PluginError says which folder, which files, and how to agree. The
    scenario's folder is on the path only while its own agreed module is imported, so an
    installed plugin's imports never pick a file up from it."""
    from . import trust

    if ":" not in ref:
        raise PluginError(f"{ref!r} is not of the form 'module:attr'")
    mod_name, _, attr = ref.partition(":")
    if not all(part.isidentifier() for part in mod_name.split(".")):
        raise PluginError(f"{mod_name!r} is not a module name (dotted identifiers, e.g. mytools.tide)")
    origin = trust.locate(mod_name, base)
    try:
        trust.current().admit(origin)
    except trust.NotTrusted as exc:
        raise NotAgreed(str(exc)) from None
    added = False
    if base is not None and origin.local and base.resolve() in origin.folders and str(base) not in sys.path:
        sys.path.insert(0, str(base))
        added = True
    try:
        module = importlib.import_module(mod_name)
    except Exception as exc:  # ImportError, SyntaxError, whatever its top level raises
        raise PluginError(f"cannot import {mod_name}: {type(exc).__name__}: {exc}") from None
    finally:
        if added:
            sys.path.remove(str(base))
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise PluginError(f"{mod_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def _tools_from(obj: Any) -> list[Any]:
    """A Tool, a list of them, or a callable returning either -> the tools."""
    if not is_tool(obj) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise PluginError(f"its factory raised {type(exc).__name__}: {exc}") from None
    items = list(obj) if isinstance(obj, (list, tuple)) else [obj]
    for it in items:
        if not is_tool(it):
            raise PluginError(f"returned a {type(it).__name__}, not a Tool (a spec and offer and run methods)")
    return items


# Loaded plugins by reference, once per process: a plugin module is imported once whatever
# number of runs use it (tools hold no per-run state: a run's state is in the context).
_loaded: dict[tuple[str, str], list[Any] | str] = {}


def _load(ref: str, base: Path | None) -> list[Any]:
    key = (ref, str(base))
    got = _loaded.get(key)
    if got is None:
        try:
            got = _tools_from(_import(ref, base))
        except NotAgreed:
            raise  # not kept: once the user agrees, the next run of this process loads it
        except PluginError as exc:
            got = str(exc)
        _loaded[key] = got
    if isinstance(got, str):
        raise PluginError(got)
    return got


_eps: dict[str, list[metadata.EntryPoint]] = {}


_named: set[str] | None = None  # the groups some installed distribution may declare (entrypoints.py)


def entry_points(group: str) -> list[metadata.EntryPoint]:
    """The installed entry points of a group, by name then value (deterministic order); read
    once per process (every agent asks: scanning the installed distributions takes ms).
    importlib.metadata is imported only if some distribution names one of our groups at all."""
    global _named
    got = _eps.get(group)
    if got is None:
        if _named is None:
            from .entrypoints import groups_named

            _named = groups_named((TOOL_GROUP, DECIDER_GROUP))
        if group in _named or group not in (TOOL_GROUP, DECIDER_GROUP):
            from importlib import metadata

            got = sorted(metadata.entry_points(group=group), key=lambda ep: (ep.name, ep.value))
        else:
            got = []
        _eps[group] = got
    return got


def _dist_name(ep: metadata.EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "?"


# Plugin tools this process has loaded, by name: what explains a recorded cycle's plugin row
# (its archetype, the words for its base) and the LLM prompt's tool list read.
_seen: dict[str, Entry] = {}


def seen_entry(name: str) -> Entry | None:
    return _seen.get(name)


# Tools declared by another wing of the engine, offered only where it builds them (a world's
# six actions, world/actions.py): explaining a recorded world cycle needs their declarations
# (archetype, base values, base rule) without building a world.
_declared: dict[str, ToolSpec] = {}


def declare(specs: Iterable[ToolSpec]) -> None:
    for spec in specs:
        _declared[spec.name] = spec


def declared_spec(name: str) -> ToolSpec | None:
    """A plugin's declaration this process loaded, else one another wing declared."""
    e = _seen.get(name)
    return e.spec if e is not None else _declared.get(name)


def base_words(name: str, base: float) -> str:
    """What the why-not explanation says about a tool's base, in the tool's own words: a
    built-in's, else a plugin's this process loaded."""
    from .builtins import TOOLS

    tool = TOOLS.get(name)
    if tool is None:
        e = _seen.get(name)
        tool = e.tool if e is not None else None
    if tool is None:
        spec = _declared.get(name)
        return spec.base_rule if spec is not None and spec.base_rule else "state-dependent base"
    try:
        text = tool.explain_base(base) if hasattr(tool, "explain_base") else tool.spec.base_rule
    except Exception:  # a plugin's words must not break an explanation
        text = tool.spec.base_rule
    return text if isinstance(text, str) and text else "state-dependent base"


def refresh() -> None:
    """Forget discovered and loaded plugins (tests install and remove them)."""
    global _named
    _named = None
    _loaded.clear()
    _eps.clear()
    _seen.clear()


class ToolRegistry:
    """The tools of one run, in score-table order, and what went wrong loading plugins."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.problems: list[str] = []
        self.off: dict[str, str] = {}  # plugin tools turned off during the run, with why
        self.budget = CALL_BUDGET
        self.refs: list[str] = []  # the scenario's references (what a rebuild loads again)
        self.refused: list[str] = []  # references left out unimported: their folder is not agreed

    # ---- building --------------------------------------------------------------------------
    @classmethod
    def builtin(cls) -> "ToolRegistry":
        from .builtins import TOOLS

        reg = cls()
        for name, tool in TOOLS.items():
            reg.entries[name] = Entry(tool, tool.spec, BUILTIN, False)
        return reg

    @classmethod
    def default(cls, refs: Iterable[str] = (), base: Path | None = None, origin: str = "scenario") -> "ToolRegistry":
        """Built-ins, installed entry points, then `refs` (a scenario's, relative to `base`)."""
        reg = cls.builtin()
        reg.add_entry_points()
        for ref in refs:
            reg.add_reference(ref, base, f"{origin}: {ref}")
        return reg

    def add_tools(self, tools: list[Any], origin: str) -> None:
        """Tool objects made in code (a plugin's own tests), checked like loaded ones."""
        self._add(tools, origin)

    def _add(self, tools: list[Any], origin: str, ref: str | None = None) -> None:
        for t in tools:
            why = _check_spec(getattr(t, "spec", None))
            if why is not None:
                self.problems.append(f"plugin {origin}: {why}; left out")
                continue
            name = t.spec.name
            if name in self.entries:
                self.problems.append(f"plugin {origin}: tool name {name!r} clashes with the tool from "
                                     f"{self.entries[name].origin}; left out")
                continue
            self.entries[name] = Entry(t, t.spec, origin, True, ref)
            _seen.setdefault(name, self.entries[name])

    def add_reference(self, ref: str, base: Path | None, origin: str) -> None:
        self.refs.append(ref)
        try:
            tools = _load(ref, base)
        except NotAgreed as exc:
            self.refused.append(f"{origin}: {exc}")
            self.problems.append(f"plugin {origin}: {exc}; left out")
            return
        except PluginError as exc:
            self.problems.append(f"plugin {origin}: {exc}; left out")
            return
        self._add(tools, origin, ref)

    def replace_reference(self, ref: str, tools: list[Any]) -> None:
        """The tools of the scenario's reference `ref` replaced by `tools` (its module reloaded,
        tools/hotload.py), in the place the old ones had in the table (at the end when it had
        none: it had been left out). PluginError, and nothing changed, when a tool's spec is
        invalid or its name clashes with another tool's. A tool turned off for its time budget
        gets another chance with its new code."""
        old = self.check_replacement(ref, tools)
        origin = self.entries[old[0]].origin if old else f"scenario: {ref}"
        new = {t.spec.name: Entry(t, t.spec, origin, True, ref) for t in tools}
        out: dict[str, Entry] = {}
        for n, e in self.entries.items():
            if e.ref == ref:
                if n == old[0]:
                    out.update(new)
                continue
            out[n] = e
        if not old:
            out.update(new)
        self.entries = out
        for n in old:
            self.off.pop(n, None)
        if ref not in self.refs:
            self.refs.append(ref)

    def check_replacement(self, ref: str, tools: list[Any]) -> list[str]:
        """PluginError when `tools` cannot take the place of `ref`'s (an invalid spec, a name
        another tool has); else the names of the tools they replace."""
        old = [n for n, e in self.entries.items() if e.ref == ref]
        names: list[str] = []
        for t in tools:
            why = _check_spec(getattr(t, "spec", None))
            if why is not None:
                raise PluginError(why)
            name = t.spec.name
            if name in names or (name in self.entries and name not in old):
                other = self.entries[name].origin if name in self.entries else ref
                raise PluginError(f"tool name {name!r} clashes with the tool from {other}")
            names.append(name)
        return old

    def add_entry_points(self) -> None:
        for ep in entry_points(TOOL_GROUP):
            origin = f"entry point {ep.name} ({_dist_name(ep)}): {ep.value}"
            key = ("ep:" + ep.value, "")
            got = _loaded.get(key)
            if got is None:
                try:
                    got = _tools_from(ep.load())
                except PluginError as exc:
                    got = str(exc)
                except Exception as exc:
                    got = f"cannot load {ep.value}: {type(exc).__name__}: {exc}"
                _loaded[key] = got
            if isinstance(got, str):
                self.problems.append(f"plugin {origin}: {got}; left out")
            else:
                self._add(got, origin)

    # ---- reading ---------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def spec(self, name: str) -> ToolSpec | None:
        e = self.entries.get(name)
        return e.spec if e is not None else None

    def archetypes(self) -> dict[str, str]:
        return {n: e.spec.archetype for n, e in self.entries.items()}

    def plugins(self) -> list[Entry]:
        return [e for e in self.entries.values() if e.plugin]

    def plan_roles(self) -> list[tuple[str, Any]]:
        """(tool, PlanRole) of every tool that joins plans by role, in table order."""
        return [(n, e.tool.plan_role) for n, e in self.entries.items() if getattr(e.tool, "plan_role", None) is not None]

    def new_capabilities(self, known: Iterable[str]) -> dict[str, bool]:
        """Capabilities only plugins declare, with their default gate: on unless a tool that
        needs it is dangerous or critical (those stay off until the config enables them)."""
        known = set(known)
        out: dict[str, bool] = {}
        for e in self.plugins():
            for cap in e.spec.capabilities:
                if cap in known:
                    continue
                safe = danger_index(e.spec.danger) < danger_index("dangerous")
                out[cap] = out.get(cap, True) and safe
        return out

    # ---- guarded calls into plugins -----------------------------------------------------------
    def _over_budget(self, e: Entry, what: str) -> str:
        why = f"plugin tool {e.name} ({e.origin}) took longer than its {self.budget:g} s budget in {what}; off for the rest of this run"
        self.off[e.name] = why
        self.problems.append(why)
        return why

    def guarded_offer(self, e: Entry, tc: "ToolContext", ctx: "GoalContext") -> Offer:
        if e.name in self.off:
            return Offer(False, why_not=self.off[e.name])
        t0 = time.monotonic()
        try:
            o = e.tool.offer(tc, ctx)
        except Exception as exc:
            return Offer(False, why_not=f"plugin tool {e.name} ({e.origin}) raised in offer: {type(exc).__name__}: {exc}")
        if time.monotonic() - t0 > self.budget:
            return Offer(False, why_not=self._over_budget(e, "offer"))
        if not isinstance(o, Offer):
            return Offer(False, why_not=f"plugin tool {e.name} ({e.origin}) returned a {type(o).__name__} from offer, not an Offer")
        if o.offered and (not isinstance(o.base, (int, float)) or isinstance(o.base, bool) or not math.isfinite(o.base)
                          or not isinstance(o.input, str)):
            return Offer(False, why_not=f"plugin tool {e.name} ({e.origin}) offered a non-numeric base or a non-string input")
        return o

    def guarded_run(self, e: Entry, tc: "ToolContext", ctx: "GoalContext", arg: object) -> ToolResult:
        """The plugin's result; PluginError (a failed cycle) when it raised, returned the
        wrong type or took too long. confine.Refused passes through as a refusal."""
        from ..confine.policy import Refused

        t0 = time.monotonic()
        try:
            r = e.tool.run(tc, ctx, arg)
        except Refused:
            raise
        except Exception as exc:
            raise PluginError(f"plugin tool {e.name} ({e.origin}) raised in run: {type(exc).__name__}: {exc}") from None
        if time.monotonic() - t0 > self.budget:
            raise PluginError(self._over_budget(e, "run"))
        if not isinstance(r, ToolResult):
            raise PluginError(f"plugin tool {e.name} ({e.origin}) returned a {type(r).__name__} from run, "
                              "not a ToolResult (output and evidence strings, lists of triples and symbol ids)")
        try:  # reading a hostile result (a property that raises) is the plugin's failure too
            why = _bad_result_field(r, tc)
            if why is None:
                return _with_plain_triples(r, tc, e.name)
        except Exception as exc:
            why = f"fields could not be read: {type(exc).__name__}: {exc}"
        raise PluginError(f"plugin tool {e.name} ({e.origin}) returned a ToolResult whose {why}")


def _is_plain_triple(t: object) -> bool:
    """A (subject, predicate, object) of non-empty labels, as a plugin author first writes one."""
    return (isinstance(t, (tuple, list)) and not isinstance(t, Triple) and len(t) == 3
            and all(isinstance(x, str) and x.strip() for x in t))


def _bad_result_field(r: ToolResult, tc: "ToolContext") -> str | None:
    """Which field of a plugin's result the agent cannot use, in words, or None. Checked before
    anything is added to the graph: a result is taken whole or not at all."""
    if not isinstance(r.output, str):
        return f"output is a {type(r.output).__name__}, not a string"
    if not isinstance(r.evidence, str):
        return f"evidence is a {type(r.evidence).__name__}, not a string"
    if not isinstance(r.triples, (list, tuple)):
        return f"triples is a {type(r.triples).__name__}, not a list"
    if not isinstance(r.symbols, (list, tuple)):
        return f"symbols is a {type(r.symbols).__name__}, not a list"
    kg = tc.kg
    n = len(kg.symbols)
    for i, t in enumerate(r.triples):
        if isinstance(t, Triple):
            # Learn reads each symbol's words: a triple of made-up ids would break it a phase later
            if not all(isinstance(x, int) and 0 <= x < n for x in t[:3]) or kg.get(t[0], t[1], t[2]) is None:
                return (f"triples[{i}] is a Triple the graph does not hold: return what tc.kg.add gave, "
                        "or a plain (subject, predicate, object) of strings")
        elif not _is_plain_triple(t):
            return (f"triples[{i}] is {_shown(t)}, not a Triple from tc.kg.add "
                    "nor a (subject, predicate, object) of non-empty strings")
    for i, s in enumerate(r.symbols):
        if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < n:
            return f"symbols[{i}] is {_shown(s)}, not a symbol id of the graph"
    return None


def _shown(x: object) -> str:
    text = repr(x)
    return f"a {type(x).__name__} {text[:60] + '...' if len(text) > 60 else text}"


def _with_plain_triples(r: ToolResult, tc: "ToolContext", tool: str) -> ToolResult:
    """The result with its plain (s, p, o) labels added to the graph (provenance 'tool:<name>',
    confidence 1) and returned as the graph's triples. One already known is returned as the
    graph holds it: the tool found it this cycle, so it counts for the goal as a new one would."""
    kg = tc.kg
    triples: list[Triple] = []
    for t in r.triples:
        if isinstance(t, Triple):
            # the graph's own: a copy with a forged provenance or confidence would count as it claims
            t = kg.get(t[0], t[1], t[2])  # type: ignore[assignment]  # held: checked above
        else:
            s, p, o = (x.strip() for x in t)
            got = kg.add(s, p, o, 1.0, f"tool:{tool}", tc.cycle)
            if got is None:
                got = kg.get(kg.symbol(s), kg.symbol(p, "relation"), kg.symbol(o))
            assert got is not None  # just added, or known
            t = got
        triples.append(t)
    if triples == r.triples and type(r.triples) is list and type(r.symbols) is list:
        return r
    return ToolResult(r.output, triples, list(r.symbols), r.evidence)


# ---- listing without importing --------------------------------------------------------------------

def entry_point_rows() -> list[dict]:
    """Installed tool and decider plugins from their metadata alone (nothing imported)."""
    rows = []
    for group, kind in ((TOOL_GROUP, "tool"), (DECIDER_GROUP, "decider")):
        for ep in entry_points(group):
            rows.append({"kind": kind, "name": ep.name, "value": ep.value, "dist": _dist_name(ep),
                         "origin": f"entry point {ep.name} ({_dist_name(ep)}): {ep.value}"})
    return rows


# ---- deciders -----------------------------------------------------------------------------------

BUILTIN_DECIDERS = ("utility", "scripted", "llm", "local")


@dataclass
class GuardedDecider:
    """A plugin decider behind the protocol: if it raises or answers with something that is
    not an offered candidate, the utility table's choice runs and the problem is noted."""

    inner: Any
    origin: str
    problems: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(getattr(self.inner, "kind", "plugin"))

    def choose(self, agent, focus, ctx, candidates, utility):
        try:
            got = self.inner.choose(agent, focus, ctx, candidates, utility)
            chosen, info = got
            if not any(chosen is c for c in candidates) and not any(
                    getattr(chosen, "tool", None) == c.tool and c.offered for c in candidates):
                raise PluginError(f"chose {getattr(chosen, 'tool', chosen)!r}, not an offered candidate")
            if info is not None and not isinstance(info, dict):
                info = None
            return chosen, info
        except Exception as exc:
            self.problems.append(f"decider {self.origin} failed at cycle {agent.cycle}: {type(exc).__name__}: {exc}; "
                                 "the utility choice ran")
            return utility, None

    def learn(self, agent, focus, tool, act) -> None:
        try:
            self.inner.learn(agent, focus, tool, act)
        except Exception as exc:
            self.problems.append(f"decider {self.origin} failed in learn: {type(exc).__name__}: {exc}")

    def model_memory(self, limit: int):
        try:
            got = self.inner.model_memory(limit)
        except Exception:
            return None
        return got if isinstance(got, str) else None


def load_decider(ref: str, base: Path | None = None) -> GuardedDecider:
    """A plugin decider by entry point name (group akh_tui.deciders) or 'module:attr' (a
    module beside the scenario allowed). PluginError names what went wrong."""
    if ":" in ref:
        obj, origin = _import(ref, base), f"{ref}"
    else:
        eps = [ep for ep in entry_points(DECIDER_GROUP) if ep.name == ref]
        if not eps:
            known = ", ".join(BUILTIN_DECIDERS + tuple(ep.name for ep in entry_points(DECIDER_GROUP)))
            raise PluginError(f"no decider named {ref!r} (known: {known})")
        origin = f"entry point {ref} ({_dist_name(eps[0])}): {eps[0].value}"
        try:
            obj = eps[0].load()
        except Exception as exc:
            raise PluginError(f"cannot load {eps[0].value}: {type(exc).__name__}: {exc}") from None
    return decider_from(obj, origin)


def decider_from(obj: Any, origin: str) -> GuardedDecider:
    """The decider `obj` names (a Decider, or a factory making one), guarded; PluginError
    when it is not one."""
    if not hasattr(obj, "choose") and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            raise PluginError(f"decider {origin}: its factory raised {type(exc).__name__}: {exc}") from None
    for attr in ("choose", "learn", "model_memory"):
        if not callable(getattr(obj, attr, None)):
            raise PluginError(f"decider {origin}: returned a {type(obj).__name__} without {attr}() (the Decider protocol)")
    return GuardedDecider(obj, origin)


def safe_env() -> bool:
    """A served session keeps dangerous plugin capabilities off too (config.served_config)."""
    return os.environ.get("AKH_TUI_SAFE") == "1"
