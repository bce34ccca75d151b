"""What the engine offers, readable without starting it: the tools' declarations and default
gates, and the check of a psyche file. The CLI's `tools` and `psyche check` read this (and the
door re-exports it); it loads neither numpy nor networkx, so those commands start at once."""

from __future__ import annotations

from pathlib import Path

from .config import DEFAULT_CAPABILITIES


def tool_rows(config_file: Path | None = None) -> list[dict]:
    """Each tool as `akh-tui tools` lists it: archetype, capabilities, danger, input, whether
    it is on by default (and which gates keep it off), what it does. shell_exec's row also says
    how it is contained here and which programs it refuses for it (the user config at
    `config_file`, default the user's own, may let some run: [shell] unconfined)."""
    from .tools.specs import SPECS

    rows: list[dict] = []
    for s in SPECS:
        gated = [c for c in s.capabilities if not DEFAULT_CAPABILITIES[c]]
        rows.append({
            "tool": s.name, "archetype": s.archetype, "capabilities": list(s.capabilities), "danger": s.danger,
            "input": s.input_schema, "default": "off: " + ", ".join(gated) if gated else "on", "does": s.does,
            "from": "built-in",
        })
    # installed plugins, from their entry point metadata alone: listing imports none of them
    # (nor their dependencies); a run loads them, and its score table shows the details
    from .tools.registry import entry_point_rows

    for ep in entry_point_rows():
        if ep["kind"] == "tool":
            rows.append({"tool": ep["name"], "archetype": "-", "capabilities": [], "danger": "-", "input": "-",
                         "default": "-", "does": "(plugin: loaded when a run starts)", "from": ep["origin"]})
    # which containment shell_exec gets on this machine (bubblewrap, or the subreaper fallback)
    from .confine.sandbox import protection

    mechanism, why = protection()
    next(r for r in rows if r["tool"] == "shell_exec")["protection"] = {
        "mechanism": mechanism, "detail": why, **_unconfined(mechanism, config_file)}
    return rows


def _unconfined(mechanism: str, config_file: Path | None) -> dict:
    """Which programs shell_exec refuses on this machine for running others or writing files
    (none under bubblewrap, which keeps them in the workspace), and which the user's config lets
    run anyway: the table and the check are confine.py's, the setting userconfig.py's."""
    from .confine.process import RISKY_PROGRAMS, UNCONFINED_SETTING
    from .confine.sandbox import BUBBLEWRAP
    from .runs.userconfig import UserConfig

    cfg = UserConfig.load(config_file)
    allowed = sorted(set(cfg.shell_unconfined))
    refused = [] if mechanism == BUBBLEWRAP else sorted(set(RISKY_PROGRAMS) - set(allowed))
    return {"refused": refused, "unconfined": allowed, "setting": UNCONFINED_SETTING, "config": str(cfg.path),
            "config_error": cfg.error}


def scenario_tool_rows(scenario: str) -> tuple[list[dict], list[str]]:
    """The plugin tools a scenario names (its `tools`), declared as a run of it has them (its
    gates), and the problems loading any (a plugin left out is named, never raised). Loading
    the scenario imports its plugins: only `akh-tui tools --scenario` asks for this."""
    from .runs.scenario import load_scenario

    sc = load_scenario(scenario)
    reg = sc.registry if sc.registry is not None else sc.tool_registry()
    caps = sc.config.capabilities
    rows = []
    for e in reg.plugins():
        if not e.origin.startswith("scenario"):
            continue  # installed ones: listed with every scenario's
        s = e.spec
        gated = [c for c in s.capabilities if not caps.get(c, False)]
        rows.append({
            "tool": s.name, "archetype": s.archetype, "capabilities": list(s.capabilities), "danger": s.danger,
            "input": s.input_schema, "default": "off: " + ", ".join(gated) if gated else "on", "does": s.does,
            "from": e.origin,
        })
    return rows, list(reg.problems)


def decider_rows() -> list[dict]:
    """The deciders: the built-in ones and installed plugins (metadata only)."""
    from .tools.registry import entry_point_rows

    rows = [{"decider": d, "from": "built-in"} for d in ("utility", "scripted", "llm", "local")]
    rows += [{"decider": ep["name"], "from": ep["origin"]} for ep in entry_point_rows() if ep["kind"] == "decider"]
    return rows


def check_psyche(file: str | Path) -> dict:
    """A psyche file validated (InputError names line and field), summarised."""
    from .psyche.model import Psyche

    p = Psyche.load(file)
    return {"ok": True, "file": str(file), **p.snapshot(), "grammar": p.persona.grammar_preference,
            "vetoes": [v.name for v in p.shadow.veto_patterns], "biases": [b.name for b in p.shadow.bias_patterns]}
