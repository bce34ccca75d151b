"""The engine's one face: what the front ends (the CLI, the workbench, any new one) may use.

Front ends import names from this package and the record types from `akh_tui.engine.records`, and nothing
else of the engine (an import contract, tests/test_contracts.py). Names load lazily, on first use, from the
module that owns them: `import akh_tui.engine` loads nothing, so `akh-tui --help` starts without numpy or
networkx (tests/test_startup.py). `__init__.pyi` says the same to the type checker.

Where things are (one concept a folder): `cycle/` the agent and its phases' parts; `knowledge/` the graph and
rules; `psyche/`; `tools/` the interface, built-ins, registry and trust; `confine/` the dangerous tools'
containment; `llm/` language-model deciders; `store/` the session store and trace; `explain/` why and why
not; `export/` reports and OpenTelemetry; `runs/` the door to a run; `sweep/` many runs.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the module that owns it ("module:" + name for a module the front ends use whole)
_FACE: dict[str, str] = {
    'AddGoal': 'akh_tui.engine.runs.commands',
    'AddTriple': 'akh_tui.engine.runs.commands',
    'EditGoal': 'akh_tui.engine.runs.commands',
    'EditMemory': 'akh_tui.engine.runs.commands',
    'StateEditError': 'akh_tui.engine.runs.commands',
    'parse_state_edit': 'akh_tui.engine.runs.commands',
    'from_state_payload': 'akh_tui.engine.runs.commands',
    'STATE_EDIT_HELP': 'akh_tui.engine.runs.commands',
    'answer_lines': 'akh_tui.engine.runs.approval',
    'Breakpoint': 'akh_tui.engine.runs.breakpoints',
    'bundled_themes_dir': 'akh_tui.engine.paths',
    'check_goal': 'akh_tui.engine.runs.run',
    'check_pin': 'akh_tui.engine.runs.run',
    'check_psyche': 'akh_tui.engine.catalog',
    'check_scheduler': 'akh_tui.engine.sweep.cluster',
    'check_url': 'akh_tui.engine.urls',
    'CycleRecord': 'akh_tui.engine.records',
    'DANGEROUS_CAPABILITIES': 'akh_tui.engine.config',
    'decider_rows': 'akh_tui.engine.catalog',
    'DEFAULT_KI': 'akh_tui.engine.thinkloop',
    'DEFAULT_KP': 'akh_tui.engine.thinkloop',
    'DEFAULT_MAX_ITERATIONS': 'akh_tui.engine.thinkloop',
    'DEFAULT_PROMOTION_THRESHOLD': 'akh_tui.engine.thinkloop',
    'DEFAULT_RULES': 'akh_tui.engine.runs.approval',
    'DEFAULT_STALL_PATIENCE': 'akh_tui.engine.thinkloop',
    'DEFAULT_THRESHOLD': 'akh_tui.engine.thinkloop',
    'event_words': 'akh_tui.engine.explain.events',
    'first_hit': 'akh_tui.engine.runs.breakpoints',
    'ForkEditError': 'akh_tui.engine.runs.commands',
    'GraphOracle': 'akh_tui.engine.thinkloop',
    'InputError': 'akh_tui.engine.errors',
    'InputWarning': 'akh_tui.engine.errors',
    'InvariantViolation': 'akh_tui.engine.world.ledger',
    'load_scenario': 'akh_tui.engine.runs.scenario',
    'load_sweep': 'akh_tui.engine.sweep.file',
    'load_world': 'akh_tui.engine.world.file',
    'Locations': 'akh_tui.engine.paths',
    'otel': 'module:akh_tui.engine.export.otel',
    'otel_world': 'module:akh_tui.engine.export.otel_world',
    'OUTCOMES': 'akh_tui.engine.sweep.store',
    'parse_breakpoint': 'akh_tui.engine.runs.breakpoints',
    'parse_rules': 'akh_tui.engine.runs.approval',
    'parse_search': 'akh_tui.engine.runs.search',
    'parse_toml': 'akh_tui.engine.errors',
    'PHASES': 'akh_tui.engine.cycle.agent',
    'pins': 'module:akh_tui.engine.runs.pin',
    'plugin_needs': 'akh_tui.engine.runs.run',
    'PluginNotTrusted': 'akh_tui.engine.tools.hotload',
    'Psyche': 'akh_tui.engine.psyche.model',
    'PsycheFileChanged': 'akh_tui.engine.runs.psyche_file',
    'read_user_file': 'akh_tui.engine.errors',
    'redact': 'akh_tui.engine.redaction',
    'redact_obj': 'akh_tui.engine.redaction',
    'register_secret': 'akh_tui.engine.redaction',
    'rerun': 'akh_tui.engine.runs.run',
    'Run': 'akh_tui.engine.runs.run',
    'run_sweep': 'akh_tui.engine.sweep.cluster',
    'SAFE_ENV': 'akh_tui.engine.config',
    'scenario_decider': 'akh_tui.engine.runs.run',
    'scenario_tool_rows': 'akh_tui.engine.catalog',
    'SERVED_ENV': 'akh_tui.engine.config',
    'served_process': 'akh_tui.engine.config',
    'Sessions': 'akh_tui.engine.runs.sessions',
    'find_soar': 'akh_tui.engine.soar.scenario',
    'parse_soar_break': 'akh_tui.engine.soar.breaks',
    'SoarBreak': 'akh_tui.engine.soar.breaks',
    'check_soar_breaks': 'akh_tui.engine.soar.breaks',
    'soar_why': 'akh_tui.engine.explain.soar',
    'compare_architectures': 'akh_tui.engine.soar.compare',
    'check_compare_names': 'akh_tui.engine.soar.compare',
    'compare_stored': 'akh_tui.engine.soar.compare',
    'SoarRun': 'akh_tui.engine.soar.run',
    'replay_soar_trace': 'akh_tui.engine.soar.run',
    'StoredSoarRun': 'akh_tui.engine.soar.recorded',
    'current_architecture': 'akh_tui.engine.soar.recorded',
    'stop_phases': 'akh_tui.engine.runs.breakpoints',
    'StoreBusy': 'akh_tui.engine.errors',
    'StoreDamaged': 'akh_tui.engine.errors',
    'StoreLost': 'akh_tui.engine.errors',
    'StoreWriteError': 'akh_tui.engine.errors',
    'sweep_report': 'module:akh_tui.engine.sweep.report',
    'SweepStore': 'akh_tui.engine.sweep.store',
    'ThinkConfig': 'akh_tui.engine.thinkloop',
    'ThinkLoop': 'akh_tui.engine.thinkloop',
    'tokens': 'akh_tui.engine.thinkloop',
    'TOOL_NAMES': 'akh_tui.engine.tools.builtins',
    'tool_rows': 'akh_tui.engine.catalog',
    'TraceWriter': 'akh_tui.engine.store.trace',
    'trust': 'module:akh_tui.engine.tools.trust',
    'UserConfig': 'akh_tui.engine.runs.userconfig',
    'why_chosen': 'akh_tui.engine.explain.decision',
    'why_not_text': 'akh_tui.engine.explain.decision',
    'World': 'akh_tui.engine.world.world',
    'world_trace_records': 'akh_tui.engine.world.tracefile',

    'WorldRun': 'akh_tui.engine.world.worldrun',
    'WorldStep': 'akh_tui.engine.world.worldrun',
    'parse_step_name': 'akh_tui.engine.world.worldrun',
    'open_run': 'akh_tui.engine.notebook',
    'open_world': 'akh_tui.engine.notebook',
    'cycle_row': 'akh_tui.engine.notebook',
    'cycle_rows': 'akh_tui.engine.notebook',
    'world_cycle_rows': 'akh_tui.engine.notebook',
    'ledger_rows': 'akh_tui.engine.notebook',
    'is_world_ref': 'akh_tui.engine.world.worldrun',
    'list_worlds': 'akh_tui.engine.world.worldrun',
    'export_world': 'akh_tui.engine.world.worldrun',
    'show_world': 'akh_tui.engine.world.worldrun',
    'world_items': 'akh_tui.engine.world.worldrun',
    'parse_world_ref': 'akh_tui.engine.world.worldrun',
    'delete_world': 'akh_tui.engine.world.worldrun',
    'compare_worlds': 'akh_tui.engine.world.worldrun',
    'SetPsyche': 'akh_tui.engine.world.edits',
    'DisableTool': 'akh_tui.engine.world.edits',
    'SetOrder': 'akh_tui.engine.world.edits',
    'NoopTurn': 'akh_tui.engine.world.edits',
    'SetDecider': 'akh_tui.engine.world.edits',
    'SetLimit': 'akh_tui.engine.world.edits',
    'AddAgentGoal': 'akh_tui.engine.world.edits',
    'EditAgentGoal': 'akh_tui.engine.world.edits',
    'parse_goal_edit': 'akh_tui.engine.world.edits',
    'parse_limit_edit': 'akh_tui.engine.world.edits',
    'who_moved': 'akh_tui.engine.world.moved',
    'moved_lines': 'akh_tui.engine.world.moved',
    'interview': 'akh_tui.engine.world.interview',
    'interview_lines': 'akh_tui.engine.world.interview',
    'interviews_of': 'akh_tui.engine.world.interview',
    'list_interviews': 'akh_tui.engine.world.interview',
    'WorldWatch': 'akh_tui.engine.world.watch',
    'LaneStep': 'akh_tui.engine.world.watch',
    'parse_world_break': 'akh_tui.engine.world.watch',
    'WORLD_BREAK_HELP': 'akh_tui.engine.world.watch',
    'LANE_GLYPHS': 'akh_tui.engine.world.watch',
    'LANE_STATE': 'akh_tui.engine.world.watch',
    'parse_world_edits': 'akh_tui.engine.world.watch',
    'ClassRoom': 'akh_tui.engine.world.classroom',
    'ClassRefusal': 'akh_tui.engine.world.classroom',
    'CHANNEL_ENV': 'akh_tui.engine.world.classroom',
    'TOKEN_ENV': 'akh_tui.engine.world.classroom',
    'KEY_ENV': 'akh_tui.engine.world.classroom',
    'ClassClient': 'akh_tui.engine.world.class_client',
    'FORK_EDIT_HELP': 'akh_tui.engine.world.watch',
    'FORK_EDIT_LINES': 'akh_tui.engine.world.watch',
    'Proposal': 'akh_tui.engine.world.gate',
    'Answer': 'akh_tui.engine.world.gate',
    'Answerer': 'akh_tui.engine.world.gate',
    'GateClosed': 'akh_tui.engine.world.gate',
}

__all__ = sorted(_FACE)


def __getattr__(name: str) -> Any:
    where = _FACE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if where.startswith("module:"):
        value: Any = importlib.import_module(where[len("module:"):])
    else:
        value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # the next use is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_FACE])
