"""The world file (SPEC §13): its keys, their defaults, and every error with file, line and field.

A world file names other files (agents' scenarios and psyches, artifacts' triples); `load_world`
reads and checks them all, so a world that loads is a world that runs. Names are resolved once,
here: a name with a `.toml` suffix or a path separator is a path from the world file's folder,
otherwise a bundled name (data/scenarios, data/psyche, data/worlds). Triple files are always
paths from the world file's folder (a bundled triple file has no name of its own).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError, parse_toml, read_user_file
from ..knowledge.kg import read_triple_file
from ..paths import bundled_data_dir
from ..psyche.model import Psyche
from ..redaction import redact, redact_obj
from ..runs.scenario import Scenario, load_scenario
from ..tomlpos import TomlLocator
from ..tools.specs import TOOL_NAMES
from .actions import ACTION_NAMES
from .workflow import MODEL_STEPS, ON_ERROR, Step, Transition, WorkflowSpec

WORLD_KEYS = ("name", "seed", "rounds", "schedule", "step_s", "mint_every", "starting_scrip", "limits")
LIMIT_KEYS = ("window_s", "actions", "llm_calls", "llm_tokens", "writes", "policy")
RESOURCES = ("actions", "llm_calls", "llm_tokens", "writes")  # SPEC §13's order of checking
AGENT_KEYS = ("id", "scenario", "psyche", "decider", "seed", "workflow", "approve")
STEP_KEYS = ("name", "action", "tool", "llm", "on_error", "max_retries", "input")
TRANSITION_KEYS = ("on", "match", "to")
ARTIFACT_KEYS = ("id", "owner", "triples", "text", "price", "tool")
RESERVED_IDS = ("world", "escrow", "mint")
AGENT_ID = re.compile(r"[a-z0-9_-]{1,32}")
ARTIFACT_ID = re.compile(r"[a-z0-9_.-]{1,64}")


@dataclass(frozen=True)
class Limits:
    window_ms: int = 60_000
    caps: tuple[tuple[str, int], ...] = ()  # (resource, limit) in RESOURCES order, configured ones only
    policy: str = "skip"


@dataclass
class AgentSpec:
    id: str
    scenario_name: str  # as written
    scenario: Scenario
    psyche_name: str | None
    psyche: Psyche | None  # None: the scenario's
    decider: str  # as written, else the scenario's, else utility
    seed: int
    seed_given: bool
    workflow: WorkflowSpec | None = None
    approve: bool = False  # its turns stop at the gate for a person's answer (world/gate.py)


@dataclass(frozen=True)
class ArtifactSpec:
    id: str
    owner: str
    triples_name: str | None
    triples: tuple[tuple[str, str, str], ...]
    text: str | None
    price: int
    tool: str | None


@dataclass
class WorldSpec:
    path: Path
    name: str
    seed: int
    rounds: int
    schedule: str
    step_ms: int
    mint_every: int
    starting_scrip: int
    limits: Limits
    agents: list[AgentSpec]
    artifacts: list[ArtifactSpec]
    raw_limits: dict[str, Any] = field(default_factory=dict)

    def with_seed(self, seed: int) -> "WorldSpec":
        """`--seed` replaces the world seed and so every default agent seed (SPEC §13)."""
        agents = [AgentSpec(a.id, a.scenario_name, a.scenario, a.psyche_name, a.psyche, a.decider,
                            a.seed if a.seed_given else seed + i, a.seed_given, a.workflow, a.approve)
                  for i, a in enumerate(self.agents)]
        return WorldSpec(self.path, self.name, seed, self.rounds, self.schedule, self.step_ms, self.mint_every,
                         self.starting_scrip, self.limits, agents, self.artifacts, self.raw_limits)

    def config(self) -> dict[str, Any]:
        """The parsed world file with defaults filled, paths as written (the trace header's)."""
        limits: dict[str, Any] = {"window_s": self.limits.window_ms / 1000, "policy": self.limits.policy}
        limits.update(dict(self.limits.caps))
        return {
            "world": {"name": self.name, "seed": self.seed, "rounds": self.rounds, "schedule": self.schedule,
                      "step_s": self.step_ms / 1000, "mint_every": self.mint_every,
                      "starting_scrip": self.starting_scrip, "limits": limits},
            "agents": [{"id": a.id, "scenario": a.scenario_name, "psyche": a.psyche_name, "decider": a.decider,
                        "seed": a.seed} | ({"workflow": _workflow_dict(a.workflow)} if a.workflow else {})
                       | ({"approve": True} if a.approve else {})
                       for a in self.agents],
            "artifacts": [{"id": x.id, "owner": x.owner, "triples": x.triples_name, "text": x.text, "price": x.price,
                           "tool": x.tool} for x in self.artifacts],
        }


def ms(seconds: float) -> int:
    """Seconds as the clock's integer milliseconds: round(x * 1000) (SPEC §13)."""
    return round(seconds * 1000)


def list_worlds() -> list[str]:
    return sorted(p.stem for p in (bundled_data_dir() / "worlds").glob("*.toml"))


def _is_path(name: str) -> bool:
    return name.endswith(".toml") or os.sep in name or "/" in name


def resolve_world(name_or_path: str) -> Path:
    if not name_or_path.strip():
        raise InputError("empty world name (give a bundled name or a path to a .toml file)", field="FILE")
    if _is_path(name_or_path) or Path(name_or_path).is_file():
        p = Path(name_or_path)
        if not p.is_file():
            raise InputError("world file not found", file=str(p))
        return p
    p = bundled_data_dir() / "worlds" / f"{name_or_path}.toml"
    if not p.is_file():
        known = ", ".join(list_worlds()) or "none"
        raise InputError(f"unknown world '{name_or_path}' (bundled: {known}; or give a path to a .toml file)", field="FILE")
    return p


def _int(value: Any, lo: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= lo


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def load_world(name_or_path: str) -> WorldSpec:
    """The world file and every file it names, checked; InputError (file, line, field) otherwise."""
    path = resolve_world(name_or_path)
    file = str(path)
    text = read_user_file(path, "world file")
    # foreign text is masked where it enters (engine/redaction.py): every string of the world
    # file (names, paths as written, artifact text, workflow steps), so the world's writer
    # need only look for registered secrets in each record, as a single run's does. An id
    # that looked like a credential is masked too, and then refused by its pattern below.
    data = redact_obj(parse_toml(text, file))
    where = TomlLocator(text)
    base = path.parent

    def err(msg: str, fld: str) -> InputError:
        return InputError(msg, file=file, line=where.line(fld), field=fld)

    def unknown(table: dict, known: tuple[str, ...], prefix: str) -> None:
        for k in table:
            if k not in known:
                raise err(f"unknown key '{k}' (known: {', '.join(known)})", f"{prefix}{k}")

    unknown(data, ("world", "agents", "artifacts"), "")
    w = data.get("world")
    if not isinstance(w, dict):
        raise InputError("missing [world] table (it needs at least name)", file=file, field="world")
    unknown(w, WORLD_KEYS, "world.")
    name = w.get("name")
    if not isinstance(name, str) or not name.strip():
        raise err("must be a non-empty string" if "name" in w else "missing required key 'name'", "world.name")
    seed = w.get("seed", 0)
    if not _int(seed):
        raise err(f"must be a non-negative integer, got {seed!r}", "world.seed")
    rounds = w.get("rounds", 40)
    if not _int(rounds, 1):
        raise err(f"must be an integer >= 1, got {rounds!r}", "world.rounds")
    schedule = w.get("schedule", "round-robin")
    if schedule not in ("round-robin", "shuffle"):
        raise err(f"must be \"round-robin\" or \"shuffle\", got {schedule!r}", "world.schedule")
    step = _number(w.get("step_s", 1.0))
    if step is None or step < 0.001 or step > 86_400:
        raise err(f"must be a number of seconds, 0.001 to 86400, got {w.get('step_s')!r}", "world.step_s")
    mint_every = w.get("mint_every", 10)
    if not _int(mint_every):
        raise err(f"must be a non-negative integer (0 = no mint), got {mint_every!r}", "world.mint_every")
    scrip = w.get("starting_scrip", 100)
    if not _int(scrip):
        raise err(f"must be a non-negative integer, got {scrip!r}", "world.starting_scrip")
    limits = _limits(w.get("limits", {}), err, unknown)

    agents_raw = data.get("agents")
    if not isinstance(agents_raw, list) or not agents_raw:
        raise InputError("missing [[agents]]: a world needs at least one agent (id and scenario)", file=file,
                         line=where.line("agents"), field="agents")
    agents: list[AgentSpec] = []
    for i, a in enumerate(agents_raw):
        pre = f"agents[{i}]"
        if not isinstance(a, dict):
            raise err("must be a table with id and scenario", pre)
        unknown(a, AGENT_KEYS, f"{pre}.")
        aid = a.get("id")
        if not isinstance(aid, str) or not AGENT_ID.fullmatch(aid):
            raise err(f"must match [a-z0-9_-]{{1,32}}, got {aid!r}" if "id" in a else "missing required key 'id'", f"{pre}.id")
        if aid in RESERVED_IDS:
            raise err(f"{aid!r} is reserved (world, escrow and mint are ledger accounts)", f"{pre}.id")
        if any(x.id == aid for x in agents):
            raise err(f"duplicate agent id {aid!r}", f"{pre}.id")
        sc_name = a.get("scenario")
        if not isinstance(sc_name, str) or not sc_name.strip():
            raise err("must be a scenario name or a path" if "scenario" in a else "missing required key 'scenario'",
                      f"{pre}.scenario")
        sc_ref = str(base / sc_name) if _is_path(sc_name) else sc_name
        try:
            scenario = load_scenario(sc_ref)
        except InputError as exc:
            if exc.file is None:  # the name itself is wrong: say where it was written
                raise err(exc.message, f"{pre}.scenario") from None
            raise
        psyche_name = a.get("psyche")
        psyche = None
        if psyche_name is not None:
            if not isinstance(psyche_name, str) or not psyche_name.strip():
                raise err("must be a psyche name or a path to a .toml file", f"{pre}.psyche")
            pp = base / psyche_name if _is_path(psyche_name) else bundled_data_dir() / "psyche" / f"{psyche_name}.toml"
            if not pp.is_file():
                raise err(f"psyche file not found: {psyche_name!r} (looked at {pp})", f"{pre}.psyche")
            psyche = Psyche.load(pp)  # its own errors name the psyche file, line and field
        decider = a.get("decider", scenario.decider or "utility")
        if not isinstance(decider, str) or not decider.strip():
            raise err("must be a decider name (utility, scripted, llm) or a plugin reference 'module:attr'",
                      f"{pre}.decider")
        workflow = None
        if decider == "workflow":
            if "workflow" not in a:
                raise err("decider = \"workflow\" needs [[agents.workflow.steps]]", f"{pre}.decider")
            workflow = _workflow(a["workflow"], f"{pre}.workflow", scenario, err, unknown)
        elif "workflow" in a:
            raise err("a workflow needs decider = \"workflow\"", f"{pre}.workflow")
        aseed = a.get("seed")
        if aseed is not None and not _int(aseed):
            raise err(f"must be a non-negative integer, got {aseed!r}", f"{pre}.seed")
        approve = a.get("approve", False)
        if not isinstance(approve, bool):
            raise err(f"must be true or false, got {approve!r}", f"{pre}.approve")
        agents.append(AgentSpec(aid, sc_name, scenario, psyche_name, psyche, decider,
                                aseed if aseed is not None else seed + i, aseed is not None, workflow, approve))

    artifacts: list[ArtifactSpec] = []
    arts_raw = data.get("artifacts", [])
    if not isinstance(arts_raw, list):
        raise err("must be an array of [[artifacts]] tables", "artifacts")
    ids = {a.id for a in agents}
    for i, x in enumerate(arts_raw):
        pre = f"artifacts[{i}]"
        if not isinstance(x, dict):
            raise err("must be a table with id and triples or text", pre)
        unknown(x, ARTIFACT_KEYS, f"{pre}.")
        xid = x.get("id")
        if not isinstance(xid, str) or not ARTIFACT_ID.fullmatch(xid):
            raise err(f"must match [a-z0-9_.-]{{1,64}}, got {xid!r}" if "id" in x else "missing required key 'id'", f"{pre}.id")
        if any(y.id == xid for y in artifacts):
            raise err(f"duplicate artifact id {xid!r}", f"{pre}.id")
        owner = x.get("owner", "world")
        if owner != "world" and owner not in ids:
            raise err(f"must be \"world\" or an agent id ({', '.join(sorted(ids))}), got {owner!r}", f"{pre}.owner")
        if ("triples" in x) == ("text" in x):
            raise err("give exactly one of triples (a triple file) or text", f"{pre}.triples" if "triples" in x else pre)
        triples: tuple[tuple[str, str, str], ...] = ()
        tname = x.get("triples")
        if tname is not None:
            if not isinstance(tname, str) or not tname.strip():
                raise err("must be a path to a triple file", f"{pre}.triples")
            tp = base / tname
            if not tp.is_file():
                raise err(f"file not found: {tname!r} (looked at {tp})", f"{pre}.triples")
            triples = tuple((redact(t.subject), redact(t.predicate), redact(t.object)) for t in read_triple_file(tp))
        body = x.get("text")
        if body is not None and not isinstance(body, str):
            raise err("must be a string", f"{pre}.text")
        price = x.get("price", 0)
        if not _int(price):
            raise err(f"must be an integer >= 0, got {price!r}", f"{pre}.price")
        tool = x.get("tool")
        if tool is not None and tool not in TOOL_NAMES:
            raise err(f"must be a built-in tool ({', '.join(TOOL_NAMES)}), got {tool!r}", f"{pre}.tool")
        artifacts.append(ArtifactSpec(xid, owner, tname, triples, body, price, tool))
    return WorldSpec(path, name.strip(), seed, rounds, schedule, ms(step), mint_every, scrip, limits, agents,
                     artifacts, dict(w.get("limits", {})))


def _limits(raw: Any, err: Callable[[str, str], InputError], unknown: Callable[[dict, tuple[str, ...], str], None]) -> Limits:
    if not isinstance(raw, dict):
        raise err("must be a table", "world.limits")
    unknown(raw, LIMIT_KEYS, "world.limits.")
    window = _number(raw.get("window_s", 60))
    if window is None or window < 0.001 or window > 10_000_000:
        raise err(f"must be a number of seconds, 0.001 to 10000000, got {raw.get('window_s')!r}", "world.limits.window_s")
    policy = raw.get("policy", "skip")
    if policy not in ("skip", "block"):
        raise err(f"must be \"skip\" or \"block\", got {policy!r}", "world.limits.policy")
    caps = []
    for r in RESOURCES:
        if r in raw:
            if not _int(raw[r]):
                raise err(f"must be an integer >= 0, got {raw[r]!r}", f"world.limits.{r}")
            caps.append((r, raw[r]))
    return Limits(ms(window), tuple(caps), policy)


def _workflow(raw: Any, pre: str, scenario: Scenario, err: Callable[[str, str], InputError],
              unknown: Callable[[dict, tuple[str, ...], str], None]) -> WorkflowSpec:
    """`[agents.workflow]`: `[[agents.workflow.steps]]` and `[agents.workflow.transitions]`
    (step name = array of {on = "success" | "failure" | match = "pattern", to = "step"})."""
    if not isinstance(raw, dict):
        raise err("must be a table with steps (and optional transitions)", pre)
    unknown(raw, ("steps", "transitions"), f"{pre}.")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise err("needs at least one [[agents.workflow.steps]]", f"{pre}.steps")
    tools = scenario.registry.names if scenario.registry is not None else TOOL_NAMES
    parsed: list[dict[str, Any]] = []
    for i, st in enumerate(steps_raw):
        sp = f"{pre}.steps[{i}]"
        if not isinstance(st, dict):
            raise err("must be a table with name and one of action, tool, llm", sp)
        unknown(st, STEP_KEYS, f"{sp}.")
        name = st.get("name")
        if not isinstance(name, str) or not name.strip():
            raise err("missing or empty step name", f"{sp}.name")
        if any(p["name"] == name for p in parsed):
            raise err(f"duplicate step name {name!r}", f"{sp}.name")
        kinds = [k for k in ("action", "tool", "llm") if k in st]
        if len(kinds) != 1:
            raise err("give exactly one of action, tool or llm", f"{sp}.{kinds[1]}" if len(kinds) > 1 else sp)
        kind = kinds[0]
        target = st[kind]
        allowed = {"action": ACTION_NAMES, "tool": tools, "llm": MODEL_STEPS}[kind]
        if target not in allowed:
            raise err(f"must be one of {', '.join(allowed)}, got {target!r}", f"{sp}.{kind}")
        on_error = st.get("on_error", "retry")
        if on_error not in ON_ERROR:
            raise err(f"must be one of {', '.join(ON_ERROR)}, got {on_error!r}", f"{sp}.on_error")
        retries = st.get("max_retries", 3)
        if not _int(retries):
            raise err(f"must be an integer >= 0, got {retries!r}", f"{sp}.max_retries")
        text = st.get("input")
        if text is not None and (not isinstance(text, str) or target not in ("transfer", "bid")):
            raise err("only transfer (\"to amount\") and bid (\"amount\") steps take an input string", f"{sp}.input")
        parsed.append({"name": name, "kind": kind, "target": target, "on_error": on_error, "max_retries": retries,
                       "input": text})
    index = {p["name"]: i for i, p in enumerate(parsed)}
    trans_raw = raw.get("transitions", {})
    if not isinstance(trans_raw, dict):
        raise err("must be a table: step name = array of {on | match, to}", f"{pre}.transitions")
    transitions: dict[str, list[Transition]] = {}
    for sname, rules in trans_raw.items():
        tp = f"{pre}.transitions.{sname}"
        if sname not in index:
            raise err(f"no step named {sname!r} (steps: {', '.join(index)})", tp)
        if not isinstance(rules, list):
            raise err("must be an array of {on = \"success\" | \"failure\" | match = \"pattern\", to = \"step\"}", tp)
        out = []
        for j, r in enumerate(rules):
            rp = f"{tp}[{j}]"
            if not isinstance(r, dict):
                raise err("must be a table {on | match, to}", rp)
            unknown(r, TRANSITION_KEYS, f"{rp}.")
            if ("on" in r) == ("match" in r):
                raise err("give exactly one of on (success | failure) or match (a pattern)", rp)
            to = r.get("to")
            if to not in index:
                raise err(f"must name a step ({', '.join(index)}), got {to!r}", f"{rp}.to")
            if "on" in r:
                if r["on"] not in ("success", "failure"):
                    raise err(f"must be \"success\" or \"failure\", got {r['on']!r}", f"{rp}.on")
                out.append(Transition(index[to], on=r["on"]))
            else:
                if not isinstance(r["match"], str):
                    raise err("must be a pattern string", f"{rp}.match")
                try:
                    out.append(Transition(index[to], match=re.compile(r["match"])))
                except re.error as exc:
                    raise err(f"not a valid pattern: {exc}", f"{rp}.match") from None
        transitions[sname] = out
    return WorkflowSpec(tuple(Step(p["name"], p["kind"], p["target"], p["on_error"], p["max_retries"], p["input"],
                                   tuple(transitions.get(p["name"], ()))) for p in parsed))


def _workflow_dict(w: WorkflowSpec) -> dict[str, Any]:
    """The workflow as the trace header's config writes it."""
    names = [s.name for s in w.steps]
    return {
        "steps": [{"name": s.name, s.kind: s.target, "on_error": s.on_error, "max_retries": s.max_retries}
                  | ({"input": s.input} if s.input is not None else {}) for s in w.steps],
        "transitions": {s.name: [({"on": t.on} if t.on else {"match": t.match.pattern if t.match else ""})
                                 | {"to": names[t.to]} for t in s.transitions] for s in w.steps if s.transitions},
    }
