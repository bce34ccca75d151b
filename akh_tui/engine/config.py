"""Engine configuration: every capacity, threshold, tool gate and allow-list in one place.

A scenario's `[config]` table sets these by name (flat keys); an unknown key is an error
that names it, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from .errors import InputError

# Capabilities that touch the world outside the graph are off unless a scenario or user
# turns them on; the psyche cannot turn them on (gates come before the shadow, SPEC §5).
DEFAULT_CAPABILITIES = {
    "read_kg": True,
    "write_kg": True,
    "ask_user": True,
    "read_memory": True,
    "read_fs": False,
    "write_fs": False,
    "network": False,
    "process_exec": False,
}
# A world's actions (SPEC §13) are gated by these; on in a world, and a scenario's config may
# turn them off. They are not in DEFAULT_CAPABILITIES: a single run has no world to reach.
WORLD_CAPABILITIES = {"world_read": True, "world_write": True, "scrip": True}
# What a served session (`akh-tui serve`, a browser tab a stranger may hold) keeps off whatever
# its scenario says: the capabilities that reach past the graph into files, the network and
# processes. `serve` sets SAFE_ENV for the app processes it starts unless --allow-dangerous.
DANGEROUS_CAPABILITIES = ("read_fs", "write_fs", "network", "process_exec")
SAFE_ENV = "AKH_TUI_SAFE"
# Set by `akh-tui serve` for the app processes it starts (one per browser tab): such a process
# is driven by whoever holds the page, so it imports no scenario-local plugin, saves only to a
# served-only place, and never moves the current run that `agent resume` / `--resume` follow.
SERVED_ENV = "AKH_TUI_SERVED"
# kg_query is the one tool offered in every cycle, and it needs read_kg: without it a cycle
# can find no tool at all to run (scoring.choose), so a scenario may not turn it off.
ALWAYS_ON = ("read_kg",)

# Ranges beyond "non-negative": a vector of vsa_dim bits is made for every symbol, and the
# timeouts go to the OS, which rejects values past its clock's range.
RANGES: dict[str, tuple[float, float | None]] = {
    "wm_capacity": (1, None),
    "reflection_interval": (1, None),
    "vsa_dim": (64, 65_536),
    "http_timeout": (0, 86_400),
    "shell_timeout": (0, 86_400),
}


@dataclass
class AgentConfig:
    wm_capacity: int = 100
    stall_threshold: int = 5
    completion_threshold: float = 1.0
    max_backtrack_attempts: int = 3
    reflection_interval: int = 5
    stagnant_cycles: int = 8
    auto_consolidate: bool = True
    consolidation_pressure: float = 0.8
    consolidation_threshold: float = 0.5
    episodic_capacity: int = 1000  # episodes kept in memory; older ones live in the session store
    recall_top_k: int = 3
    vsa_dim: int = 4096
    # Spreading activation reads at most this many edges per node, so a hub with 10,000
    # neighbours costs the same as one with 256 (SPEC §12: cycle cost must not grow with the graph).
    activation_fanout: int = 256
    query_limit: int = 50  # triples kg_query returns per call
    output_chars: int = 4096
    capabilities: dict[str, bool] = field(default_factory=lambda: dict(DEFAULT_CAPABILITIES))
    workspace: str = "workspace"  # relative to the data dir (session) or an absolute path
    http_allow_hosts: list[str] = field(default_factory=list)
    http_timeout: float = 5.0
    http_max_bytes: int = 1_000_000
    shell_allow: list[str] = field(default_factory=list)
    disabled_tools: list[str] = field(default_factory=list)  # not offered in this run (a fork's edit)
    shell_timeout: float = 5.0
    shell_max_output: int = 65_536
    max_file_bytes: int = 1_000_000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def warnings(self) -> list[str]:
        """Cautions that do not stop a run, one line each, for the CLI and the workbench to
        show: allow-listed programs known to run or write arbitrary things (shell_exec's
        allow-list is per program, not per argument). Not a config key, not in to_dict."""
        from .confine.process import UNCONFINED_SETTING, risky_programs  # late: config stays light to import

        file, line = self.__dict__.get("_origin", (None, None))
        # the same table shell_exec refuses from where bubblewrap is not in force (confine.py)
        return [
            str(InputError(f"'{name}' {why}; without bubblewrap shell_exec refuses it unless your user config's "
                           f"{UNCONFINED_SETTING} lists it", file=file, line=line, field="config.shell_allow"))
            for name, why in risky_programs(self.shell_allow)
        ]

    @property
    def served_off(self) -> list[str]:
        """The capabilities the scenario turns on that a served tab keeps off (served_config);
        the run names the tools they leave out (Run.warnings). Not a config key."""
        return list(self.__dict__.get("_served_off") or [])

    @classmethod
    def from_dict(cls, data: dict[str, Any], file: str | None = None, locate=None,
                  plugin_capabilities: dict[str, bool] | None = None, tool_names: tuple[str, ...] = ()) -> "AgentConfig":
        """Build from a `[config]` table; `locate(key)` may give the key's line for messages.
        `plugin_capabilities` (capability -> default gate) are what the scenario's plugins add
        to the known ones, `tool_names` every tool the run has, built-ins and plugins (the
        caller's registry knows them: config sits below the tools and names none itself)."""
        cfg = cls()
        known_caps = dict(DEFAULT_CAPABILITIES) | WORLD_CAPABILITIES | dict(plugin_capabilities or {})
        known = {f.name: f for f in fields(cls)}
        for key, value in data.items():
            line = locate(key) if locate else None
            if key not in known:
                raise InputError(
                    f"unknown config key '{key}' (known: {', '.join(sorted(known))})",
                    file=file, line=line, field=f"config.{key}",
                )
            default = getattr(cfg, key)
            if key == "capabilities":
                if not isinstance(value, dict):
                    raise InputError("must be a table of capability = true|false", file=file, line=line, field="config.capabilities")
                caps = dict(DEFAULT_CAPABILITIES)
                for cap, on in value.items():
                    if cap not in known_caps:
                        raise InputError(
                            f"unknown capability '{cap}' (known: {', '.join(known_caps)})",
                            file=file, line=locate(f"capabilities.{cap}") if locate else line, field=f"config.capabilities.{cap}",
                        )
                    if not isinstance(on, bool):
                        raise InputError("must be true or false", file=file, line=locate(f"capabilities.{cap}") if locate else line, field=f"config.capabilities.{cap}")
                    if cap in ALWAYS_ON and not on:
                        raise InputError(
                            f"{cap} cannot be turned off: kg_query needs it, and it is the one tool every cycle can run",
                            file=file, line=locate(f"capabilities.{cap}") if locate else line, field=f"config.capabilities.{cap}",
                        )
                    caps[cap] = on
                value = caps
            elif isinstance(default, bool):
                if not isinstance(value, bool):
                    raise InputError("must be true or false", file=file, line=line, field=f"config.{key}")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise InputError(f"must be a non-negative integer, got {value!r}", file=file, line=line, field=f"config.{key}")
            elif isinstance(default, float):
                try:
                    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
                except OverflowError:  # an integer past any float
                    number = None
                if number is None or not math.isfinite(number) or number < 0:
                    raise InputError(f"must be a finite non-negative number, got {value!r}", file=file, line=line, field=f"config.{key}")
                value = number
            elif isinstance(default, list):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise InputError("must be a list of strings", file=file, line=line, field=f"config.{key}")
            elif isinstance(default, str):
                if not isinstance(value, str):
                    raise InputError("must be a string", file=file, line=line, field=f"config.{key}")
            if key == "http_allow_hosts":
                from .confine.http import parse_allow_entry  # late: config stays light to import

                for i, entry in enumerate(value):
                    try:
                        parse_allow_entry(entry)
                    except ValueError as exc:
                        raise InputError(
                            f"entry {entry!r} {exc}; write HOST or HOST:PORT (PORT 1..65535, digits only)",
                            file=file, line=line, field=f"config.http_allow_hosts[{i}]",
                        ) from None
            if key == "disabled_tools":
                unknown = [t for t in value if t not in tool_names]
                if unknown:
                    raise InputError(f"unknown tool(s) {', '.join(unknown)} (known: {', '.join(tool_names)})",
                                     file=file, line=line, field=f"config.{key}")
            if key in RANGES:
                lo, hi = RANGES[key]
                if value < lo or (hi is not None and value > hi):
                    span = f"at least {lo:g}" if hi is None else f"in {lo:g}..{hi:g}"
                    raise InputError(f"must be {span}, got {value!r}", file=file, line=line, field=f"config.{key}")
            if key == "vsa_dim" and value % 8:
                raise InputError(f"must be a multiple of 8, got {value!r}", file=file, line=line, field="config.vsa_dim")
            setattr(cfg, key, value)
            if key == "shell_allow":
                cfg.__dict__["_origin"] = (file, line)  # where warnings point (not a field)
        return cfg


def without_dangerous(cfg: AgentConfig) -> AgentConfig:
    """A copy of `cfg` with the dangerous capability gates off (the rest unchanged)."""
    caps = dict(cfg.capabilities)
    for cap in DANGEROUS_CAPABILITIES:
        caps[cap] = False
    return replace(cfg, capabilities=caps)


def served_process() -> bool:
    """Whether this process is a served tab (SERVED_ENV, set by `akh-tui serve`)."""
    return os.environ.get(SERVED_ENV) == "1"


def served_config(cfg: AgentConfig) -> AgentConfig:
    """The one place the served-session override is read: with AKH_TUI_SAFE=1 in the
    environment (set by `akh-tui serve` for its app processes), every scenario loads with the
    dangerous capabilities off."""
    if os.environ.get(SAFE_ENV) != "1":
        return cfg
    safe = without_dangerous(cfg)
    if "_origin" in cfg.__dict__:
        safe.__dict__["_origin"] = cfg.__dict__["_origin"]
    off = [c for c in DANGEROUS_CAPABILITIES if cfg.capabilities.get(c)]
    if off:  # what the scenario asked for and does not get: its warnings say so (not a field)
        safe.__dict__["_served_off"] = off
    return safe
