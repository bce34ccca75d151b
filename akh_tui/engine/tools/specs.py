"""The eleven tools' declarations (SPEC §5): name, archetype, capabilities, danger, input,
VSA profile. Kept apart from tools.py (which needs networkx and the graph) so that listing
the tools, the CLI's parsers and the trace readers import nothing heavy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

DANGER_LEVELS = ("safe", "cautious", "dangerous", "critical")  # ordered


def danger_index(level: str) -> int:
    """A danger level's rank (safe 0 .. critical 3); ValueError naming the levels otherwise."""
    try:
        return DANGER_LEVELS.index(level)
    except ValueError:
        raise ValueError(f"unknown danger level {level!r}; expected one of {DANGER_LEVELS}") from None


@dataclass(frozen=True)
class ToolSpec:
    name: str
    archetype: str
    capabilities: tuple[str, ...]
    danger: str
    input_schema: str
    profile: tuple[str, ...]  # keywords bundled into the tool's VSA profile (odd count: unbiased bundle)
    does: str
    # What the tool's base rule (SPEC §6) can produce, so an explanation only proposes a base
    # the tool could actually get: a set of values, or a closed range [lo, hi]; and the rule in words.
    base_values: tuple[float, ...] = ()
    base_range: tuple[float, float] | None = None
    base_rule: str = ""

    def base_can_be(self, value: float, eps: float = 1e-9) -> bool:
        """Whether the base rule can produce `value`."""
        if any(abs(value - v) <= eps for v in self.base_values):
            return True
        return self.base_range is not None and self.base_range[0] - eps <= value <= self.base_range[1] + eps


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("kg_query", "sage", ("read_kg",), "safe", "symbol label",
             ("query", "find", "search", "list", "knowledge", "facts", "lookup"),
             "triples from/to a symbol",
             base_values=(0.4, 0.8), base_rule="0.8 if the goal has fewer than 3 known adjacent triples, else 0.4"),
    ToolSpec("infer_rules", "sage", ("read_kg", "write_kg"), "safe", "none (the agenda of new triples)",
             ("infer", "deduce", "derive", "rules", "classify", "conclude", "logic"),
             "forward-chains the rule file over new triples",
             base_range=(0.35, 0.75), base_rule="clamp(0.7·sim + 0.1 if never used on this goal, 0.35, 0.75)"),
    ToolSpec("reason", "sage", ("read_kg",), "safe", "goal symbols",
             ("reason", "explain", "why", "path", "connect", "how", "relation"),
             "shortest labelled paths between goal symbols, derivation chains",
             base_values=(0.5,), base_rule="0.5 when triples are known (K)"),
    ToolSpec("synthesize_triple", "sage", ("write_kg",), "cautious", "subject, related-to, object",
             ("synthesize", "create", "link", "connect", "hypothesis", "add", "relate"),
             "adds a related-to hypothesis (confidence 0.7)",
             base_values=(0.7,), base_rule="0.7 when K and I"),
    ToolSpec("gap_analysis", "healer", ("read_kg",), "safe", "goal symbols",
             ("gap", "missing", "lack", "incomplete", "analyze", "properties", "compare"),
             "dead ends and properties siblings have that the symbol lacks",
             base_range=(0.3, 0.75), base_rule="clamp(0.7·sim + 0.1 if kg_query was used twice on this goal, 0.3, 0.75)"),
    ToolSpec("user_interact", "healer", ("ask_user",), "safe", "question text",
             ("ask", "user", "question", "clarify", "answer", "human", "tell"),
             "asks the user; 's p o' answers become triples",
             base_range=(0.4125, 0.75), base_rule="0.75·sim when sim > 0.55"),
    ToolSpec("file_io", "explorer", ("read_fs", "write_fs"), "dangerous", "workspace path",
             ("file", "read", "write", "path", "save", "load", "document"),
             "reads or writes a file inside the workspace",
             base_range=(0.4125, 0.75), base_rule="0.75·sim when sim > 0.55"),
    ToolSpec("http_fetch", "explorer", ("network",), "dangerous", "URL",
             ("http", "fetch", "download", "url", "web", "page", "online"),
             "GET a URL on the allow-list",
             base_range=(0.4125, 0.75), base_rule="0.75·sim when sim > 0.55"),
    ToolSpec("shell_exec", "explorer", ("process_exec",), "critical", "argv",
             ("shell", "command", "run", "execute", "program", "process", "terminal"),
             "runs an allow-listed program, no shell",
             base_range=(0.4125, 0.75), base_rule="0.75·sim when sim > 0.55"),
    ToolSpec("memory_recall", "guardian", ("read_memory",), "safe", "goal symbols",
             ("remember", "recall", "memory", "episode", "past", "history", "before"),
             "episodic recall into working memory",
             base_values=(0.55,), base_rule="0.55 when episodes are recalled (E)"),
    ToolSpec("similarity_search", "guardian", ("read_kg",), "safe", "goal symbols",
             ("similar", "like", "related", "resemble", "cluster", "compare", "neighbours"),
             "VSA nearest neighbours of the goal's symbols",
             base_values=(0.55,), base_rule="0.55 when spreading activation found symbols (I)"),
)
TOOL_NAMES = tuple(s.name for s in SPECS)
SPEC_BY_NAME = {s.name: s for s in SPECS}
TOOL_ARCHETYPES = {s.name: s.archetype for s in SPECS}


def unknown_tool(name: str, tools: "Sequence[str]" = TOOL_NAMES) -> str | None:
    """None for one of `tools` (a run's registry; the eleven built-ins by default), else the
    message every reader of a tool name gives (breakpoints, the search box, sessions search)."""
    if name in tools:
        return None
    return f"unknown tool {name!r}: one of {', '.join(tools)}"
