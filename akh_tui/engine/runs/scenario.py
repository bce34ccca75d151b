"""Scenario files (TOML): which graph, rules, goals, psyche and config a run starts from.

Keys (kept stable; tools outside the project use them): name, seed, kg, rules, [[goals]]
(description, criteria, priority), [psyche] file, [config]. Also: [answers], the headless
replies of user_interact, keyed by goal description or "*". Paths are relative to the file.
`tools = ["pkg.module:make_tool"]` adds plugin tools (a module beside the file may be named by
its stem, and is imported only from a folder the user trusts: trust.py) and `decider = "name"` or `"pkg.module:make"` picks the decider (registry.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..cycle.agent import Agent
from ..config import DEFAULT_CAPABILITIES, AgentConfig, served_config
from ..errors import InputError, parse_toml, read_user_file
from ..paths import bundled_data_dir
from ..goals.goal import make_goal
from ..knowledge.kg import KnowledgeGraph
from ..knowledge.vsa import VSA, SymbolVectors
from ..psyche.model import Psyche
from ..tools.registry import ToolRegistry
from ..knowledge.rules import RuleSet, load_rules
from ..tomlpos import TomlLocator
from ..tools.builtins import check_goal_url

TOP_KEYS = ("name", "seed", "kg", "rules", "goals", "psyche", "config", "answers", "description", "tools", "decider")
GOAL_KEYS = ("description", "criteria", "priority")


@dataclass
class GoalSpec:
    description: str
    criteria: str | None = None
    priority: int = 128


@dataclass
class Scenario:
    name: str
    path: Path
    seed: int = 0
    kg: list[Path] = field(default_factory=list)
    rules: list[Path] = field(default_factory=list)
    goals: list[GoalSpec] = field(default_factory=list)
    psyche_file: Path | None = None
    config: AgentConfig = field(default_factory=AgentConfig)
    answers: dict[str, list[str]] = field(default_factory=dict)
    description: str = ""
    tools: list[str] = field(default_factory=list)  # plugin references the scenario names
    decider: str | None = None
    registry: ToolRegistry | None = None  # built-ins, installed plugins and `tools`

    def tool_registry(self) -> ToolRegistry:
        """A fresh registry of the scenario's tools (each run owns its own: a plugin turned
        off in one run stays on in the next)."""
        return ToolRegistry.default(self.tools, self.path.parent, f"scenario {self.path.name}")


def list_scenarios() -> list[str]:
    d = bundled_data_dir() / "scenarios"
    return sorted(p.stem for p in d.glob("*.toml"))


def _is_file(p: Path) -> bool:
    """Path.is_file, but False for a path the OS cannot even look up (NUL, name too long)."""
    try:
        return p.is_file()
    except (OSError, ValueError):
        return False


def _exists(p: Path) -> bool:
    try:
        return p.exists()
    except (OSError, ValueError):
        return False


def _user_path(base: Path, rel: str) -> Path | None:
    """``base / rel`` made absolute, or None when it is no usable path at all."""
    try:
        return (base / rel).resolve()
    except (OSError, ValueError, RuntimeError):
        return None


def resolve(name_or_path: str) -> Path:
    if not name_or_path.strip():
        raise InputError("empty scenario name (give a bundled name or a path to a .toml file)", field="--scenario")
    p = Path(name_or_path)
    if p.suffix == ".toml" or os.sep in name_or_path or _exists(p):
        if not _is_file(p):
            raise InputError("scenario file not found", file=str(p))
        return p
    candidate = bundled_data_dir() / "scenarios" / f"{name_or_path}.toml"
    if not _is_file(candidate):
        known = ", ".join(list_scenarios()) or "none"
        raise InputError(f"unknown scenario '{name_or_path}' (bundled: {known}; or give a path to a .toml file)", field="--scenario")
    return candidate


def load_recorded_scenario(path: str) -> Scenario:
    """The scenario a stored run names (`path`, absolute, as it was started). A bundled
    scenario is named by where the package was installed then: after a reinstall, a new
    virtualenv or a moved checkout that file is gone, and the run would not open. So a path
    that is gone and was a bundled scenario's (…/akh_tui/data/scenarios/NAME.toml) is read as
    today's bundled NAME; a rewind that then replays differently says so (replay_divergence)."""
    p = Path(path)
    if not _is_file(p) and p.suffix == ".toml" and p.parent.parts[-3:] == ("akh_tui", "data", "scenarios"):
        bundled = bundled_data_dir() / "scenarios" / p.name
        if _is_file(bundled):
            return load_scenario(str(bundled))
    return load_scenario(path)


def load_scenario(name_or_path: str) -> Scenario:
    path = resolve(name_or_path)
    file = str(path)
    text = read_user_file(path, "scenario file")
    data = parse_toml(text, file)
    where = TomlLocator(text)

    def err(msg: str, fld: str) -> InputError:
        return InputError(msg, file=file, line=where.line(fld), field=fld)

    if data.get("architecture") == "soar":  # engine/soar/scenario.py reads these
        raise InputError("a Soar scenario: run it with `akh-tui agent run --scenario` (the OODA engine cannot open it)",
                         file=file, line=where.line("architecture"), field="architecture")
    for key in data:
        if key not in TOP_KEYS:
            raise err(f"unknown key '{key}' (known: {', '.join(TOP_KEYS)})", key)
    for req in ("name", "kg", "goals"):
        if req not in data:
            raise InputError(f"missing required key '{req}'", file=file, field=req)
    if not isinstance(data["name"], str) or not data["name"].strip():
        raise err("must be a non-empty string", "name")
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise err(f"must be a non-negative integer, got {seed!r}", "seed")
    base = path.parent

    def paths(key: str) -> list[Path]:
        v = data.get(key, [])
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise err("must be a list of file paths", key)
        out = []
        for i, rel in enumerate(v):
            p = _user_path(base, rel)
            if p is None or not _is_file(p):
                raise err(f"file not found: {rel!r} (looked at {p or base / rel})", f"{key}[{i}]")
            out.append(p)
        return out

    kg_files, rule_files = paths("kg"), paths("rules")
    goals = parse_goals(data["goals"], err)
    psyche_file = None
    ps = data.get("psyche", {})
    if not isinstance(ps, dict):
        raise err("must be a table with 'file'", "psyche")
    for k in ps:
        if k != "file":
            raise err(f"unknown key '{k}' (known: file)", f"psyche.{k}")
    if "file" in ps:
        if not isinstance(ps["file"], str):
            raise err("must be a path string", "psyche.file")
        psyche_file = _user_path(base, ps["file"])
        if psyche_file is None or not _is_file(psyche_file):
            raise err(f"file not found: {ps['file']!r}", "psyche.file")
    refs = data.get("tools", [])
    if not isinstance(refs, list) or not all(isinstance(r, str) and ":" in r for r in refs):
        raise err("must be a list of plugin references 'module:attr'", "tools")
    decider = data.get("decider")
    if decider is not None and (not isinstance(decider, str) or not decider.strip()):
        raise err("must be a decider name or a plugin reference 'module:attr'", "decider")
    # plugins load here: their tools' names and capabilities are known to [config]
    registry = ToolRegistry.default(refs, base, f"scenario {path.name}")
    cfg_raw = data.get("config", {})
    if not isinstance(cfg_raw, dict):
        raise err("must be a table", "config")
    try:
        config = served_config(AgentConfig.from_dict(
            cfg_raw, file=file, locate=lambda k: where.line(f"config.{k}"),
            plugin_capabilities=registry.new_capabilities(DEFAULT_CAPABILITIES),
            tool_names=registry.names))
    except InputError as exc:
        if not registry.refused:
            raise
        # a tool or capability only a plugin declares: say why that plugin is not known
        raise InputError(f"{exc.message} (a plugin of the scenario was left out: {registry.refused[0]})", file=exc.file,
                         line=exc.line, field=exc.field) from None
    answers: dict[str, list[str]] = {}
    ans = data.get("answers", {})
    if not isinstance(ans, dict):
        raise err("must be a table of goal description = answer(s)", "answers")
    for k, v in ans.items():
        vals = [v] if isinstance(v, str) else v
        if not isinstance(vals, list) or not all(isinstance(x, str) for x in vals):
            raise err("must be a string or a list of strings ('subject predicate object')", f"answers.{k}")
        answers[k] = vals
    desc = data.get("description", "")
    if not isinstance(desc, str):
        raise err("must be a string", "description")
    return Scenario(data["name"].strip(), path, seed, kg_files, rule_files, goals, psyche_file, config, answers, str(desc),
                    list(refs), decider, registry)


def parse_goals(goals_raw: object, err: Callable[[str, str], InputError]) -> list[GoalSpec]:
    """The scenario's [[goals]], each checked as adding it will check it; `err(message,
    field)` makes the InputError naming the file, line and field."""
    if not isinstance(goals_raw, list) or not goals_raw:
        raise err("must be a non-empty array of [[goals]] tables", "goals")
    goals = []
    for i, g in enumerate(goals_raw):
        gf = f"goals[{i}]"
        if not isinstance(g, dict):
            raise err("must be a table with description (and optional criteria, priority)", gf)
        for k in g:
            if k not in GOAL_KEYS:
                raise err(f"unknown key '{k}' (known: {', '.join(GOAL_KEYS)})", f"{gf}.{k}")
        desc = g.get("description")
        if not isinstance(desc, str) or not desc.strip():
            raise err("missing or empty description", f"{gf}.description")
        crit = g.get("criteria")
        if crit is not None and not isinstance(crit, str):
            raise err("must be a string", f"{gf}.criteria")
        prio = g.get("priority", 128)
        if not isinstance(prio, int) or isinstance(prio, bool) or not 0 <= prio <= 255:
            raise err(f"must be an integer 0..255, got {prio!r}", f"{gf}.priority")
        try:
            make_goal(0, desc, crit, prio)  # exactly what adding the goal will check
            check_goal_url(desc, "description")  # http_fetch's URL: a malformed one is refused here
        except InputError as exc:
            raise err(exc.message, f"{gf}.{exc.field or 'criteria'}") from None
        goals.append(GoalSpec(desc.strip(), crit, prio))
    return goals


def read_goals(path: Path) -> tuple[str, list[GoalSpec]]:
    """The scenario file's text and its [[goals]] read again (a hot reload, issue 28 §2): only
    the goals are read, so nothing else the file names (plugins, graph files) is loaded. A
    reload tells goals apart by their description, so two goals of one description are
    refused here; InputError names the file, line and field."""
    file = str(path)
    text = read_user_file(path, "scenario file")
    data = parse_toml(text, file)
    where = TomlLocator(text)

    def err(msg: str, fld: str) -> InputError:
        return InputError(msg, file=file, line=where.line(fld), field=fld)

    if "goals" not in data:
        raise InputError("missing required key 'goals'", file=file, field="goals")
    goals = parse_goals(data["goals"], err)
    seen: dict[str, int] = {}
    for i, g in enumerate(goals):
        if g.description in seen:
            raise err(f"the same description as goals[{seen[g.description]}]: a reload tells goals apart by their "
                      "description", f"goals[{i}].description")
        seen[g.description] = i
    return text, goals


def built_from(scenario: Scenario) -> dict:
    """What a run's start is built from, recorded with the run: the scenario's goals (a goals
    reload tells the run's first goals by them, whatever the file holds by then) and the
    sha256 of each file a resume builds the start from again (`start_files`)."""
    return {"goals": [[g.description, g.criteria, g.priority] for g in scenario.goals],
            "files": [[str(p), digest] for p, digest in start_files(scenario).items()]}


def start_files(scenario: Scenario) -> dict[Path, str]:
    """The files a run's start is built from, each with the sha256 of what it holds now: the
    scenario file (its config, answers), its graph and rule files and its plugin modules, the
    decider's included (the
    psyche is in every saved state, so not its file). A file that cannot be read is left out."""
    from ..tools.hotload import read_source

    files = [scenario.path, *scenario.kg, *scenario.rules]
    for ref in [*scenario.tools, *([scenario.decider] if scenario.decider and ":" in scenario.decider else [])]:
        try:
            src = read_source(ref, scenario.path.parent)
        except InputError:
            continue
        if src is not None:
            files.append(Path(src.file))
    out: dict[Path, str] = {}
    for p in files:
        digest = file_sha256(p)
        if digest is not None:
            out[p] = digest
    return out


def file_sha256(path: Path | str) -> str | None:
    """The sha256 of a file's bytes, read in blocks (a graph file may be large); None when it
    cannot be read."""
    from hashlib import sha256

    h = sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def changed_since_start(scenario: Scenario, recorded: object) -> list[str]:
    """The files of `recorded` (a run's `built_from.files`) that hold something else now or are
    gone, by name; [] when none is, or nothing was recorded (a run started before they were)."""
    if not isinstance(recorded, list):
        return []
    now = {str(p): d for p, d in start_files(scenario).items()}
    return [Path(f).name for f, d in (r for r in recorded if isinstance(r, list) and len(r) == 2) if now.get(f) != d]


def load_psyche(scenario: Scenario) -> Psyche:
    if scenario.psyche_file is not None:
        return Psyche.load(scenario.psyche_file)
    return Psyche.default()


def build_kg(scenario: Scenario) -> KnowledgeGraph:
    """A bad line loads nothing: the graph is new, and dropped when a line is refused. The
    files stream into the graph (a million triples in well under a gigabyte)."""
    return KnowledgeGraph.from_files(scenario.kg)


def build_rules(scenario: Scenario) -> RuleSet:
    rs = RuleSet.empty()
    for p in scenario.rules:
        rs = rs.merged(load_rules(p))
    return rs


def build_agent(
    scenario: Scenario,
    seed: int | None = None,
    goals: list[str] | None = None,
    workspace: Path | None = None,
    psyche: Psyche | None = None,
    add_goals: bool = True,
    decider=None,
    rules: RuleSet | None = None,
    kg: KnowledgeGraph | None = None,
    caches: "tuple[VSA, SymbolVectors | None] | None" = None,
    tools: ToolRegistry | None = None,
) -> Agent:
    """A fresh agent for the scenario; `goals` (descriptions) replace the scenario's goals.
    `rules`: its rules loaded already (a RuleSet is never changed by an agent: each wraps it
    in its own engine); `kg`: its base graph made already (a rewind's, basegraph.py), and
    `caches` its vector caches; `tools`: its registry made already (a world adds its actions)."""
    if kg is None:
        kg = build_kg(scenario)
    agent = Agent(
        kg, rules if rules is not None else build_rules(scenario),
        psyche if psyche is not None else load_psyche(scenario), scenario.config,
        scenario.seed if seed is None else seed, workspace, scenario.answers, decider,
        tools=tools if tools is not None else scenario.tool_registry() if scenario.tools else None,
        vsa=caches[0] if caches is not None else None, symbol_vectors=caches[1] if caches is not None else None,
    )
    if goals is None:  # the scenario's goals, ids 1..N in file order: a reload manages them by description
        agent.scenario_goals = {gs.description: (i, gs.criteria, gs.priority) for i, gs in enumerate(scenario.goals, 1)}
    if add_goals:
        specs = [GoalSpec(d) for d in goals] if goals is not None else scenario.goals
        for gs in specs:
            agent.add_goal(gs.description, gs.criteria, gs.priority, emit=False)
    return agent
